# Debian package helpers for the tests (source after common.sh).
#
# deb_build [VERSION]: prints the path of node-agent_VERSION_*.deb (default:
# debian/changelog's version), built by scripts/build-deb into
# $B/deb-test/VERSION/ and reused while no source file is newer than it
# (the booted tests of Debian 12 and 13 share one build; an edit under
# tests/ or docs/ is not in the package and does not count). lintian is 053's
# business: not run here. Tests running side by side (run-integration JOBS)
# build it once: the others wait on $B/deb-test.lock and reuse it.
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
	deb=$(ls "$dir"/node-agent_"${v}"_*.deb 2>/dev/null | head -1)
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
	ls "$dir"/node-agent_"${v}"_*.deb
}

# deb_repack DEB VERSION OUTDIR: prints the path of a copy of DEB relabelled
# as VERSION (DEBIAN/control only; same files and maintainer scripts): the
# "previous version" an upgrade test starts from, without a second build.
deb_repack() {
	local deb=$1 v=$2 out=$3 tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/na-repack.XXXXXX")
	dpkg-deb -R "$deb" "$tmp/pkg" &&
		sed -i "s/^Version: .*/Version: $v/" "$tmp/pkg/DEBIAN/control" &&
		dpkg-deb --root-owner-group -Zxz -b "$tmp/pkg" "$out/node-agent_${v}_$(dpkg-deb -f "$deb" Architecture).deb" >/dev/null ||
		{ rm -rf "$tmp"; return 1; }
	rm -rf "$tmp"
	echo "$out/node-agent_${v}_$(dpkg-deb -f "$deb" Architecture).deb"
}
