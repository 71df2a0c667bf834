#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the named test suites from build directory $1, each in a fresh
# temporary directory, and end with one summary line.
# usage: scripts/run-tests.sh BUILD_DIR SUITE...
set -u
build=$1
shift
FW_BIN=$(cd "$build" && pwd)/fencedwrite
FWT_FIXTURES=$(cd "$(dirname "$0")/../tests/fixtures" && pwd)
export FW_BIN FWT_FIXTURES
passed=0
failed=0
failures=""
for suite in "$@"; do
	dir=$(mktemp -d "${TMPDIR:-/tmp}/fwsuite.XXXXXX") || exit 5
	case $suite in
	*@noofd)
		set -- env LD_PRELOAD="$(cd "$build" && pwd)/tests/noofd.so" \
		    FWT_EXPECT_CLASSIC=1 "$build/tests/${suite%@noofd}" ;;
	*@huge)
		set -- env FWT_HUGE=1 "$build/tests/${suite%@huge}" ;;
	*@faults)
		set -- env LD_PRELOAD="$(cd "$build" && pwd)/tests/faults.so" \
		    "$build/tests/${suite%@faults}" ;;
	*)
		set -- "$build/tests/$suite" ;;
	esac
	if TMPDIR=$dir "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures="$failures $suite"
	fi
	rm -rf "$dir"
done
[ -z "$failures" ] || echo "failed suites ($build):$failures"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
