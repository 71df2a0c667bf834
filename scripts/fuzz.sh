#!/bin/sh
# SPDX-License-Identifier: MIT
# Run each libFuzzer target for SECONDS on its seed corpus; new inputs go to
# a scratch directory, never into the repository.  A crash, a leak or a
# sanitizer report fails the run; its input is kept in BUILD/crashes.
# usage: scripts/fuzz.sh BUILD SECONDS TARGET...
set -u
build=$1
seconds=$2
shift 2
passed=0
failed=0
mkdir -p "$build/crashes"
for target in "$@"; do
	name=${target#fuzz_}
	work=$(mktemp -d "${TMPDIR:-/tmp}/fwfuzz.XXXXXX") || exit 5
	if "$build/$target" -max_total_time="$seconds" -close_fd_mask=3 \
	    -artifact_prefix="$work/" -print_final_stats=1 \
	    "$work" "tests/fuzz/corpus/$name" >"$work/log" 2>&1; then
		passed=$((passed + 1))
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
		echo "fuzz $name: ${runs:-?} inputs in ${seconds}s, no findings"
	else
		failed=$((failed + 1))
		tail -n 30 "$work/log"
		cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* \
		    "$build/crashes/" 2>/dev/null
		echo "fuzz $name: FAILED (inputs kept in $build/crashes)"
	fi
	rm -rf "$work"
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
