#!/bin/sh
# SPDX-License-Identifier: MIT
# Install into a temporary DESTDIR, build and run a C program against the
# staged shared library through pkg-config, then uninstall and check that
# nothing is left.  Prints one summary line; exits non-zero on failure.
# usage: scripts/test-install.sh        (from the top of the tree)
set -eu

stage=$(mktemp -d "${TMPDIR:-/tmp}/fwinstall.XXXXXX")
trap 'rm -rf "$stage"' EXIT
prefix=/opt/fw
fail() { echo "install: $*" >&2; echo "install: 0 passed, 1 failed"; exit 1; }

make -s install DESTDIR="$stage" PREFIX="$prefix" >/dev/null
root=$stage$prefix
for f in bin/fencedwrite bin/fencedwrite-etcd lib/libfencedwrite.a lib/libfencedwrite.so.1 \
         lib/libfencedwrite.so include/fencedwrite.h \
         lib/pkgconfig/fencedwrite.pc share/man/man1/fencedwrite.1 share/man/man1/fencedwrite-etcd.1 \
         share/man/man3/libfencedwrite.3 share/man/man5/fencedwrite-fence.5 \
         share/doc/fencedwrite/README.md share/doc/fencedwrite/LICENSE \
         share/doc/fencedwrite/DEPLOYMENT.md \
         share/doc/fencedwrite/examples/systemd/fencedwrite-report.service \
         share/doc/fencedwrite/examples/systemd/fencedwrite-report.timer \
         share/bash-completion/completions/fencedwrite \
         share/man/man3/fw_commit_buffer.3; do
	[ -e "$root/$f" ] || fail "missing $prefix/$f"
done
soname=$(readelf -d "$root/lib/libfencedwrite.so.1" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libfencedwrite.so.1 ] || fail "soname is '$soname'"

cat > "$stage/use.c" <<'C'
#include <fencedwrite.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	struct fw_result res;
	uint64_t t;

	if (argc != 4 || fw_parse_token(argv[2], &t) != FW_OK)
		return 2;
	return fw_commit_buffer(argv[1], t, argv[3], 5, NULL, &res);
}
C
flags=$(PKG_CONFIG_PATH=$root/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage \
        pkg-config --cflags --libs fencedwrite)
# shellcheck disable=SC2086 # the flags are words
${CC:-cc} -o "$stage/use" "$stage/use.c" $flags
LD_LIBRARY_PATH=$root/lib "$stage/use" "$stage/data" 5 hello || fail "commit through the shared library"
[ "$(cat "$stage/data")" = hello ] || fail "content"
if LD_LIBRARY_PATH=$root/lib "$stage/use" "$stage/data" 4 stale; then fail "stale token accepted"; fi
[ "$("$root/bin/fencedwrite" --show "$stage/data")" = 5 ] || fail "installed command"


make -s uninstall DESTDIR="$stage" PREFIX="$prefix" >/dev/null
left=$(find "$root" -type f -o -type l)
[ -z "$left" ] || fail "uninstall left: $left"

# Into the live system (root only, and only where no fencedwrite is
# installed already, which this test would overwrite and then remove): a
# program linked against the library must run without LD_LIBRARY_PATH,
# which takes the ldconfig that make install runs.
live=/usr/local
if [ "$(id -u)" -ne 0 ]; then
	echo "install: live install skipped: not root"
	echo "install: 1 passed, 0 failed"
	exit 0
fi
if ls $live/lib/libfencedwrite* $live/bin/fencedwrite >/dev/null 2>&1; then
	echo "install: live install skipped: $live already has fencedwrite"
	echo "install: 1 passed, 0 failed"
	exit 0
fi
make -s install PREFIX=$live >/dev/null
flags=$(PKG_CONFIG_PATH=$live/lib/pkgconfig pkg-config --cflags --libs fencedwrite)
# shellcheck disable=SC2086 # the flags are words
${CC:-cc} -o "$stage/use-live" "$stage/use.c" $flags
live_ok=true
env -u LD_LIBRARY_PATH "$stage/use-live" "$stage/live" 3 hello || live_ok=false
make -s uninstall PREFIX=$live >/dev/null
$live_ok || fail "a program linked against the installed library did not run without LD_LIBRARY_PATH (ldconfig)"
if ls $live/lib/libfencedwrite* >/dev/null 2>&1; then fail "live uninstall left files"; fi
# The uninstall's ldconfig forgot the library again.
if ldconfig -p | grep -q libfencedwrite.so.1; then fail "ldconfig still lists libfencedwrite.so.1 after uninstall"; fi
echo "install: 2 passed, 0 failed"
