# Debian package helpers for the tests (source after common.sh).
#
# deb_build [VERSION]: prints the path of kube-node-agent_VERSION_*.deb
# (default: debian/changelog's version), built by scripts/build-deb into
# $B/deb-test/VERSION/ (the transitional node-agent_VERSION_all.deb beside
# it: deb_transitional) and reused while no source file is newer than it
# (the booted tests of Debian 12 and 13 share one build; an edit under
# tests/ or docs/ is not in the package and does not count). lintian is 053's
# business: not run here. Tests running side by side (run-integration JOBS)
# build it once: the others wait on $B/deb-test.lock and reuse it.
DEB_PACKAGE=kube-node-agent
DEB_OLD_PACKAGE=node-agent
deb_build() {
	mkdir -p "$B/deb-test"
	(
		flock 9
		_deb_build "$@"
	) 9>"$B/deb-test.lock"
}
_deb_build() {
	local top v dir deb newer
	top=$(cd "$TESTS_DIR/.." && pwd)
	v=${1:-$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)}
	dir=$B/deb-test/$v
	deb=$(ls "$dir/${DEB_PACKAGE}_${v}"_*.deb 2>/dev/null | head -1)
	if [ -n "$deb" ]; then
		newer=$(cd "$top" && git ls-files -co --exclude-standard 2>/dev/null |
			grep -v -e '^tests/' -e '^docs/' |
			while IFS= read -r f; do [ "$f" -nt "$deb" ] && echo "$f"; done | head -1)
		[ -z "$newer" ] && { echo "$deb"; return 0; }
	fi
	rm -rf "$dir"
	if [ "$v" = "$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)" ]; then
		NO_LINTIAN=1 "$top/scripts/build-deb" "$dir" >&2 || return 1
	else
		DEB_VERSION=$v NO_LINTIAN=1 "$top/scripts/build-deb" "$dir" >&2 || return 1
	fi
	ls "$dir/${DEB_PACKAGE}_${v}"_*.deb
}

# deb_transitional DEB: prints the path of the transitional package built
# with DEB (node-agent_VERSION_all.deb beside it).
deb_transitional() {
	local deb=$1
	ls "$(dirname "$deb")/${DEB_OLD_PACKAGE}_$(dpkg-deb -f "$deb" Version)_all.deb"
}

# deb_repack DEB VERSION OUTDIR [NAME]: prints the path of a copy of DEB
# relabelled as VERSION (same files and maintainer scripts): the "previous
# version" an upgrade test starts from, without a second build. With NAME
# (the package's old name, node-agent), the copy is also renamed as the
# package was called up to 0.1.0: Package NAME, its doc directory and
# lintian overrides under NAME, no Breaks/Replaces of the old name.
deb_repack() {
	local deb=$1 v=$2 out=$3 name=${4:-} tmp pkg arch
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/na-repack.XXXXXX")
	pkg=${name:-$(dpkg-deb -f "$deb" Package)}
	arch=$(dpkg-deb -f "$deb" Architecture)
	dpkg-deb -R "$deb" "$tmp/pkg" &&
		sed -i "s/^Version: .*/Version: $v/" "$tmp/pkg/DEBIAN/control" || { rm -rf "$tmp"; return 1; }
	if [ -n "$name" ]; then
		local old
		old=$(dpkg-deb -f "$deb" Package)
		sed -i -e "s/^Package: .*/Package: $name/" -e '/^Breaks: /d' -e '/^Replaces: /d' "$tmp/pkg/DEBIAN/control" &&
			mv "$tmp/pkg/usr/share/doc/$old" "$tmp/pkg/usr/share/doc/$name" &&
			mv "$tmp/pkg/usr/share/lintian/overrides/$old" "$tmp/pkg/usr/share/lintian/overrides/$name" &&
			sed -i "s/^$old: /$name: /" "$tmp/pkg/usr/share/lintian/overrides/$name" &&
			(cd "$tmp/pkg" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum >DEBIAN/md5sums) ||
			{ rm -rf "$tmp"; return 1; }
	fi
	dpkg-deb --root-owner-group -Zxz -b "$tmp/pkg" "$out/${pkg}_${v}_$arch.deb" >/dev/null ||
		{ rm -rf "$tmp"; return 1; }
	rm -rf "$tmp"
	echo "$out/${pkg}_${v}_$arch.deb"
}
