#!/bin/sh
# SPDX-License-Identifier: MIT
# Hold the built shared library to the recorded ABI baseline
# (tests/abi/libfencedwrite.so.1.abi): the exported functions, and the
# size and every field offset of each structure a caller allocates.
#   scripts/abi-check.sh LIB            compare; fail on any difference
#   scripts/abi-check.sh LIB --record   write the baseline anew
# A difference fails even when compatible (a function added): the
# baseline is then recorded again in the same change, so that the next
# comparison is against what was released.
set -eu
export LC_ALL=C   # comm and sort agree on the order

lib=$1
baseline=tests/abi/libfencedwrite.so.1.abi
[ -f "$lib" ] || { echo "abi-check: no $lib (make)" >&2; exit 2; }

# Only what the public header declares is ABI (internal.h beside it in
# src/ is not); no paths of the build machine go into the baseline.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/include"
cp src/fencedwrite.h "$work/include/"
dump() {
	abidw --headers-dir "$work/include" --drop-private-types \
	    --no-corpus-path --no-comp-dir-path --no-show-locs \
	    --out-file "$2" "$1"
}

# The header's constants are ABI too (codes, verdicts, scopes, flags), and
# abidw never sees them: functions take and return int.  Each enum member
# and FW_ macro but the version's, with its value, one per line.
constants() {
	{
		echo '#include <stdio.h>'
		echo '#include "fencedwrite.h"'
		echo 'int main(void) {'
		{
			# Every member of every enum (named or not, several to
			# a line or not), from the preprocessed header: no
			# comment can add or hide one.
			${CC:-cc} -E -P src/fencedwrite.h |
			    awk '/enum[^;{]*\{/ { e = 1; sub(/^.*\{/, "") }
			         e { t = $0; sub(/\}.*$/, "", t)
			             while (match(t, /FW_[A-Z0-9_]+/)) {
			                 print substr(t, RSTART, RLENGTH)
			                 t = substr(t, RSTART + RLENGTH) } }
			         e && /\}/ { e = 0 }' 
			${CC:-cc} -dM -E src/fencedwrite.h |
			    awk '$1 == "#define" && $2 ~ /^FW_/ &&
			         $2 !~ /^FW_VERSION/ { print $2 }'
		} | sort -u | while read -r name; do
			printf '\tprintf("%%s=%%lld\\n", "%s", (long long)(%s));\n' \
			    "$name" "$name"
		done
		echo '	return 0; }'
	} >"$work/constants.c"
	${CC:-cc} -Isrc -o "$work/constants" "$work/constants.c" &&
	    "$work/constants" >"$1"
}
consts=tests/abi/constants.txt

if [ "${2:-}" = --record ]; then
	mkdir -p "$(dirname "$baseline")"
	dump "$lib" "$baseline"
	constants "$consts"
	echo "abi-check: recorded $baseline and $consts from $lib"
	exit 0
fi

constants "$work/constants.txt"
# A constant gone or renumbered breaks every program that used it.
gone=$(comm -23 "$consts" "$work/constants.txt")
added=$(comm -13 "$consts" "$work/constants.txt")
if [ -n "$gone" ]; then
	echo "abi-check: FAIL: constants changed or removed (programs built against the older header send or expect the old values):" >&2
	echo "$gone" | sed 's/^/  was /' >&2
	[ -z "$added" ] || echo "$added" | sed 's/^/  now /' >&2
	exit 1
elif [ -n "$added" ]; then
	echo "abi-check: FAIL: constants added: record them (make abi-baseline):" >&2
	echo "$added" | sed 's/^/  /' >&2
	exit 1
fi

# Exported names: fw_ functions of version FENCEDWRITE_1... only.
bad=$(nm -D --defined-only "$lib" |
      awk '$2 != "A" && $3 !~ /^fw_[a-z0-9_]*@@FENCEDWRITE_1(\.[0-9]+)*$/ {print $3}')
if [ -n "$bad" ]; then
	echo "abi-check: FAIL: exported outside fw_*@FENCEDWRITE_1: $bad" >&2
	exit 1
fi

now=$work/now.abi
dump "$lib" "$now"
set +e
abidiff --no-added-syms "$baseline" "$now" >/dev/null 2>&1
compat=$?
abidiff "$baseline" "$now"
rc=$?
set -e
# abidiff's status is a bit set: 1 error, 2 usage, 4 change, 8 incompatible.
if [ $((rc & 3)) -ne 0 ]; then
	echo "abi-check: FAIL: abidiff could not compare (status $rc)" >&2
	exit 1
elif [ $((rc & 8)) -ne 0 ]; then
	echo "abi-check: FAIL: incompatible with the baseline: programs built against an older header would break" >&2
	exit 1
elif [ $rc -ne 0 ]; then
	if [ $compat -eq 0 ]; then
		echo "abi-check: FAIL: functions added; give them a version node of their release in src/libfencedwrite.map and record the baseline (make abi-baseline)" >&2
	else
		echo "abi-check: FAIL: the structures or functions changed (above): that breaks programs built against the older header unless it only takes reserved space as src/fencedwrite.h allows; if it does, record it (make abi-baseline)" >&2
	fi
	exit 1
fi
echo "abi-check: $lib matches $baseline"
