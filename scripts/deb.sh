#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the Debian packages (fencedwrite, libfencedwrite1, libfencedwrite-dev)
# with the distribution's own tools, from a copy of the source tree, into
# build/deb/, and check them with lintian (no error, no warning).
# usage: scripts/deb.sh             build and check        (from the top of the tree)
#        scripts/deb.sh --deps      only make sure the tools are installed
#        scripts/deb.sh --symbols   rewrite debian/libfencedwrite1.symbols
#                                   from the library as built now
# The tools (dpkg-dev, debhelper, lintian; pkg-config, with which
# tests/deb_test.sh builds against the packages) are installed with apt-get
# when run as root, as scripts/ensure-deps.sh does; otherwise they are named
# and the script exits 1.  Exits non-zero on any failure.
set -eu

out=build/deb
mode=build
case ${1:-} in
'') ;;
--deps) mode=deps ;;
--symbols) mode=symbols ;;
*) echo "usage: scripts/deb.sh [--deps | --symbols]" >&2; exit 2 ;;
esac
[ -f debian/control ] || { echo "deb: run from the top of the source tree" >&2; exit 2; }

# ---- the tools -------------------------------------------------------------

have_tools() {
	command -v dpkg-buildpackage >/dev/null 2>&1 &&
	    command -v dh >/dev/null 2>&1 &&
	    command -v lintian >/dev/null 2>&1 &&
	    command -v pkg-config >/dev/null 2>&1 &&
	    command -v cc >/dev/null 2>&1 && command -v make >/dev/null 2>&1
}
if ! have_tools; then
	pkgs="build-essential dpkg-dev debhelper lintian pkg-config"
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "deb: missing tools; install them (e.g. sudo apt-get install $pkgs) and run again" >&2
		exit 1
	fi
	echo "deb: installing $pkgs" >&2
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086 # word splitting of the package list is wanted
	apt-get install -y -q $pkgs >/dev/null 2>&1 || {
		apt-get update -q >/dev/null 2>&1
		apt-get install -y -q $pkgs
	} || exit 1
	have_tools || exit 1
fi
[ "$mode" = deps ] && exit 0

# ---- versions --------------------------------------------------------------

# The package's upstream version must be the one the build puts into
# fencedwrite --version, fw_version() and fencedwrite.pc.
debver=$(dpkg-parsechangelog -S Version)
upver=${debver%-*}
makever=$(sed -n 's/^#define FW_VERSION "\(.*\)"$/\1/p' src/fencedwrite.h)
if [ "$upver" != "$makever" ]; then
	echo "deb: debian/changelog is at $debver but src/fencedwrite.h says $makever;" \
	    "add a changelog entry (dch -v $makever-1)" >&2
	exit 1
fi

# ---- a copy of the source --------------------------------------------------

# The copy keeps debhelper's files (debian/tmp, debian/PACKAGE, stamps) out
# of the working tree.  In a git checkout it holds what git would commit:
# tracked files and new ones not ignored, so build outputs stay out and work
# not yet committed is packaged as it stands.
src=$out/src/fencedwrite-$upver
rm -rf "$out"
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard --deduplicate |
	    tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$src"
else
	tar --exclude='./build*' -cf - . | tar -xf - -C "$src"
fi

if [ "$mode" = symbols ]; then
	# The library exactly as the package builds it, minus packaging.
	(cd "$src" && DEB_BUILD_OPTIONS=nocheck debian/rules build >/dev/null)
	lib=$(find "$src/build" -name 'libfencedwrite.so.1.*' -type f)
	# The current file is the template: symbols keep the version they
	# first appeared in, and new ones get this one.
	dpkg-gensymbols -plibfencedwrite1 -v"$upver" -c0 -q -e"$lib" \
	    -O"$out/symbols"
	{
		echo "# SPDX-License-Identifier: MIT"
		sed -e '/^\* Build-Depends-Package:/d' -e '1a\
* Build-Depends-Package: libfencedwrite-dev' "$out/symbols"
	} > debian/libfencedwrite1.symbols.new
	mv debian/libfencedwrite1.symbols.new debian/libfencedwrite1.symbols
	git --no-pager diff --stat -- debian/libfencedwrite1.symbols 2>/dev/null || true
	echo "deb: wrote debian/libfencedwrite1.symbols; review the change before committing it"
	exit 0
fi

# ---- build and check -------------------------------------------------------

(cd "$src" && dpkg-buildpackage -us -uc -b -Jauto) > "$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed; whole log in $out/build.log" >&2
	exit 1
}
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
rm -rf "$out/src"

changes=$(ls "$out"/*.changes)
lintian --fail-on error,warning "$changes" > "$out/lintian.log" 2>&1 || {
	cat "$out/lintian.log" >&2
	echo "deb: lintian found errors or warnings" >&2
	exit 1
}
cat "$out/lintian.log"
ls "$out"/*.deb
