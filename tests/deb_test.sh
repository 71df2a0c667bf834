#!/bin/sh
# SPDX-License-Identifier: MIT
# The Debian packages as a user gets them: build them (scripts/deb.sh),
# install them with dpkg, run the installed command (a real commit, a stale
# token refused), build a C program against the installed library through
# pkg-config and run it, look for the manual pages and the example units,
# then purge the packages and check that nothing is left.  Every path
# checked is the package's own (dpkg -S), so a copy installed by
# make install under /usr/local cannot make the test pass.
# Skipped (exit 0) when not root or when the tools cannot be installed.
# usage: tests/deb_test.sh        (from the top of the tree)
set -eu

PKGS="fencedwrite libfencedwrite1 libfencedwrite-dev"
passed=0
fail() { echo "deb: $*" >&2; echo "deb: $passed passed, 1 failed"; exit 1; }
ok() { passed=$((passed + 1)); }
skip() { echo "deb: skipped: $*"; exit 0; }

[ "$(id -u)" -eq 0 ] || skip "not root (dpkg -i needs it)"
command -v dpkg >/dev/null 2>&1 || skip "not a Debian system (no dpkg)"
scripts/deb.sh --deps >/dev/null 2>&1 ||
    skip "dpkg-dev, debhelper or lintian missing and not installable here"
for p in $PKGS; do
	# Never replace, and then purge, packages someone installed on purpose.
	if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.i'; then
		skip "$p is installed already; the test would remove it" \
		    "(dpkg -P $PKGS to run it)"
	fi
done

scripts/deb.sh >/dev/null || fail "scripts/deb.sh failed"
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$triplet

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fwdeb.XXXXXX")
installed=false
cleanup() {
	# shellcheck disable=SC2086 # the package list is words
	$installed && dpkg -P $PKGS >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

installed=true
debs=""
for p in $PKGS; do
	debs="$debs $(ls build/deb/"$p"_*.deb)"
done
# shellcheck disable=SC2086 # the file list is words
dpkg -i $debs > "$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i"; }
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) || st=
	[ "$st" = "ii " ] || fail "$p is not installed after dpkg -i (status '$st')"
done
ok

# Each file comes from the package that should hold it.
owns() {
	# "PACKAGE: PATH", or "PACKAGE:ARCH: PATH" for Multi-Arch: same
	owner=$(dpkg -S "$2" 2>/dev/null |
	    sed -n 's/^\([^:]*\)\(:[a-z0-9]*\)\{0,1\}: .*/\1/p')
	[ "$owner" = "$1" ] || fail "$2 belongs to '$owner', not to $1"
}
owns fencedwrite /usr/bin/fencedwrite
owns fencedwrite /usr/bin/fencedwrite-etcd
owns fencedwrite /usr/share/man/man1/fencedwrite.1.gz
owns fencedwrite /usr/share/man/man1/fencedwrite-etcd.1.gz
owns fencedwrite /usr/share/man/man5/fencedwrite-fence.5.gz
owns fencedwrite /usr/share/doc/fencedwrite/README.md.gz
owns fencedwrite /usr/share/doc/fencedwrite/DEPLOYMENT.md.gz
owns fencedwrite /usr/share/doc/fencedwrite/examples/systemd/fencedwrite-report.service
owns fencedwrite /usr/share/doc/fencedwrite/examples/systemd/fencedwrite-report.timer
owns libfencedwrite1 "$libdir/libfencedwrite.so.1"
owns libfencedwrite-dev "$libdir/libfencedwrite.so"
owns libfencedwrite-dev "$libdir/libfencedwrite.a"
owns libfencedwrite-dev "$libdir/pkgconfig/fencedwrite.pc"
owns libfencedwrite-dev /usr/include/fencedwrite.h
owns libfencedwrite-dev /usr/share/man/man3/libfencedwrite.3.gz
if command -v man >/dev/null 2>&1; then
	[ "$(man -w fencedwrite-fence)" = /usr/share/man/man5/fencedwrite-fence.5.gz ] ||
	    fail "man -w fencedwrite-fence finds '$(man -w fencedwrite-fence 2>&1)'"
fi
ok

# The command: its version is the package's, and a real commit.
debver=$(dpkg-query -W -f='${Version}' fencedwrite)
v=$(/usr/bin/fencedwrite --version | head -n 1) || fail "fencedwrite --version"
[ "$v" = "fencedwrite ${debver%-*}" ] || fail "fencedwrite --version says '$v', the package is $debver"
/usr/bin/fencedwrite -t 5 "$tmp/file" -- echo hi || fail "commit with token 5 exited $?"
printf 'hi\n' | cmp -s - "$tmp/file" || fail "FILE holds '$(od -c "$tmp/file")', not 'hi\\n'"
[ "$(/usr/bin/fencedwrite --show "$tmp/file")" = 5 ] || fail "--show does not say 5"
rc=0
/usr/bin/fencedwrite -q -t 4 "$tmp/file" -- echo stale || rc=$?
[ "$rc" -eq 1 ] || fail "stale token 4 exited $rc, not 1"
printf 'hi\n' | cmp -s - "$tmp/file" || fail "stale token changed FILE"
/usr/bin/fencedwrite-etcd --help >/dev/null || fail "fencedwrite-etcd --help"
ok

# The library, through pkg-config, as a program using the package builds it.
command -v pkg-config >/dev/null 2>&1 || fail "pkg-config not installed"
pcdir=$(pkg-config --variable=pcfiledir fencedwrite) || fail "pkg-config finds no fencedwrite"
[ "$pcdir" = "$libdir/pkgconfig" ] ||
    fail "pkg-config reads $pcdir/fencedwrite.pc, not the package's (a make install copy? make uninstall PREFIX=...)"
[ "$(pkg-config --modversion fencedwrite)" = "${debver%-*}" ] || fail "fencedwrite.pc's version"
cat > "$tmp/use.c" <<'C'
#include <fencedwrite.h>
#include <stdio.h>
#include <string.h>

/* Commit "fenced\n" under token 9 into argv[1], then check that token 8
 * is refused and that the file holds what was committed. */
int main(int argc, char **argv)
{
	struct fw_result res;
	char buf[16] = "";
	FILE *f;

	if (argc != 2)
		return 2;
	if (fw_commit_buffer(argv[1], 9, "fenced\n", 7, NULL, &res) != FW_OK) {
		fprintf(stderr, "commit: %s\n", res.message);
		return 10;
	}
	if (fw_commit_buffer(argv[1], 8, "stale\n", 6, NULL, &res) != FW_STALE)
		return 11;
	f = fopen(argv[1], "r");
	if (f == NULL || fgets(buf, sizeof buf, f) == NULL)
		return 12;
	fclose(f);
	return strcmp(buf, "fenced\n") == 0 ? 0 : 13;
}
C
# shellcheck disable=SC2046 # pkg-config's output is words
${CC:-cc} -o "$tmp/use" "$tmp/use.c" -MD -MF "$tmp/use.d" \
    $(pkg-config --cflags --libs fencedwrite) || fail "building against the package"
grep -q ' /usr/include/fencedwrite\.h' "$tmp/use.d" ||
    fail "the program was built with another fencedwrite.h: $(grep -o '[^ ]*fencedwrite\.h' "$tmp/use.d")"
lib=$(ldd "$tmp/use" | sed -n 's/.*libfencedwrite\.so\.1 => \([^ ]*\) .*/\1/p')
owns libfencedwrite1 "$(readlink -f "$lib")"
"$tmp/use" "$tmp/lib-file" || fail "the program exited $?"
[ "$(/usr/bin/fencedwrite --show "$tmp/lib-file")" = 9 ] || fail "the library's commit left no token 9"
ok

# The example units, with the installed wrapper as their ExecStart.
if command -v systemd-analyze >/dev/null 2>&1; then
	ex=/usr/share/doc/fencedwrite/examples/systemd
	out=$(systemd-analyze verify --man=no "$ex/fencedwrite-report.service" \
	    "$ex/fencedwrite-report.timer" 2>&1) || fail "systemd-analyze verify: $out"
	if printf '%s\n' "$out" | grep 'fencedwrite-report'; then
		fail "systemd-analyze verify complains about the installed units"
	fi
	ok
fi

# shellcheck disable=SC2086 # the package list is words
dpkg -P $PKGS > "$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -P"; }
installed=false
for p in $PKGS; do
	if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.i'; then
		fail "$p is still installed after dpkg -P"
	fi
done
for f in /usr/bin/fencedwrite /usr/bin/fencedwrite-etcd "$libdir/libfencedwrite.so.1" \
         "$libdir/libfencedwrite.so" /usr/include/fencedwrite.h /usr/share/doc/fencedwrite; do
	[ ! -e "$f" ] || fail "$f is left after dpkg -P"
done
ok
echo "deb: $passed passed, 0 failed"
