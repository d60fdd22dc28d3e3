# Debian package helpers for the tests (source after common.sh).
#
# deb_build [VERSION]: prints the path of node-agent_VERSION_*.deb (default:
# debian/changelog's version), built by scripts/build-deb into
# $B/deb-test/VERSION/ and reused while no source file is newer than it
# (the booted tests of Debian 12 and 13 share one build). lintian is 053's
# business: not run here.
deb_build() {
	local top v dir deb newer
	top=$(cd "$TESTS_DIR/.." && pwd)
	v=${1:-$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)}
	dir=$B/deb-test/$v
	deb=$(ls "$dir"/node-agent_"${v}"_*.deb 2>/dev/null | head -1)
	if [ -n "$deb" ]; then
		newer=$(cd "$top" && git ls-files -co --exclude-standard 2>/dev/null |
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
