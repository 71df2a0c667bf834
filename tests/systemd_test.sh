#!/bin/sh
# SPDX-License-Identifier: MIT
# The example systemd units (examples/systemd/) are what systemd accepts and
# what the wrapper accepts:
#  - systemd-analyze verify finds nothing to say about them: a misspelt
#    directive is only a warning to systemd (exit 0), so any message naming
#    a unit fails the test, not only verify's exit status;
#  - the manual pages their Documentation= names exist in man/;
#  - fencedwrite-etcd parses the service's ExecStart= arguments (run with no
#    etcdctl on PATH, it gets past its option checks and stops at exit 7).
# verify checks that ExecStart='s program exists, and the units name the
# installed /usr/bin/fencedwrite-etcd: they are verified as temporary copies
# whose ExecStart= names scripts/fencedwrite-etcd of this tree instead.
# systemd-analyze is installed with apt-get (package systemd) when root and
# missing; where it cannot be, the test is skipped (exit 0).
# usage: tests/systemd_test.sh BUILD_DIR   (from the top of the tree)
set -eu

units="fencedwrite-report.service fencedwrite-report.timer"
wrapper=/usr/bin/fencedwrite-etcd
fail() { echo "systemd: $*" >&2; echo "systemd: 0 passed, 1 failed"; exit 1; }

if ! command -v systemd-analyze >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "systemd: installing systemd (for systemd-analyze)" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q systemd >/dev/null 2>&1 ||
		    { apt-get update -q >/dev/null 2>&1 &&
		      DEBIAN_FRONTEND=noninteractive apt-get install -y -q systemd >/dev/null 2>&1; } || true
	fi
	command -v systemd-analyze >/dev/null 2>&1 ||
	    { echo "systemd: skipped: systemd-analyze missing (package systemd) and not installable here"; exit 0; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fwsystemd.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
here=$(pwd)
build=$(cd "${1:?usage: tests/systemd_test.sh BUILD_DIR}" && pwd)
for u in $units; do
	[ -f "examples/systemd/$u" ] || fail "examples/systemd/$u is missing"
	sed "s|^ExecStart=$wrapper |ExecStart=$here/scripts/fencedwrite-etcd |" \
	    "examples/systemd/$u" > "$tmp/$u"
done
grep -q "^ExecStart=$here/scripts/fencedwrite-etcd " "$tmp/fencedwrite-report.service" ||
    fail "the service's ExecStart= does not run $wrapper"

# --man=no: the manual pages are checked below, in this tree, not in the
# system's MANPATH, where they are only after an install.
rc=0
# shellcheck disable=SC2086 # the unit list is words
out=$(cd "$tmp" && systemd-analyze verify --man=no $units 2>&1) || rc=$?
if [ "$rc" -ne 0 ] || printf '%s\n' "$out" | grep -q 'fencedwrite-report'; then
	printf '%s\n' "$out" >&2
	fail "systemd-analyze verify (exit $rc) objects to the units"
fi

for u in $units; do
	# shellcheck disable=SC2013 # Documentation= is a list of words
	for page in $(sed -n 's/^Documentation=//p' "examples/systemd/$u"); do
		case $page in
		man:*\(*\)) f=${page#man:}; n=${f%%(*}; s=${f#*(}; s=${s%)}
			[ -f "man/$n.$s" ] || fail "$u: Documentation= names $page, there is no man/$n.$s" ;;
		*) fail "$u: Documentation= $page is not a manual page" ;;
		esac
	done
done

# The wrapper parses ExecStart='s arguments, and has the built fencedwrite
# check its own: exit 2 would mean a usage error; 7 is where it stops for
# want of etcdctl, before taking any lock.
mkdir "$tmp/bin"
ln -s "$(command -v dirname)" "$tmp/bin/dirname"
args=$(sed -n "s|^ExecStart=$here/scripts/fencedwrite-etcd ||p" "$tmp/fencedwrite-report.service")
rc=0
# shellcheck disable=SC2086 # ExecStart='s arguments are words (no quoting in the unit)
PATH=$tmp/bin FENCEDWRITE=$build/fencedwrite scripts/fencedwrite-etcd $args \
    2> "$tmp/err" || rc=$?
if [ "$rc" -ne 7 ] || ! grep -q 'etcdctl not found' "$tmp/err"; then
	fail "fencedwrite-etcd with the service's arguments: exit $rc, $(cat "$tmp/err")"
fi
echo "systemd: 1 passed, 0 failed"
