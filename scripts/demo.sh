#!/bin/sh
# SPDX-License-Identifier: MIT
# Play the paused-holder story with the real command, narrating each step.
# Every command shown is run exactly as printed, by eval in this shell, and
# keeps its state in the shell (a=$! for a job, wait $a for its status), so
# the printed lines, pasted in order into sh or bash in an empty directory
# with fencedwrite in PATH, do the same (tests/docs_test.sh replays them).
# usage: scripts/demo.sh [PATH-TO-fencedwrite]
# The shown commands are in single quotes on purpose: eval expands them.
# shellcheck disable=SC2016
set -eu

fw=${1:-fencedwrite}
case $fw in
*/*) fw=$(cd "$(dirname "$fw")" && pwd)/$(basename "$fw") ;;
*) fw=$(command -v "$fw") || { echo "demo: fencedwrite not found" >&2; exit 1; } ;;
esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/fencedwrite-demo.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# The commands are shown as a user types them: "fencedwrite", from PATH.
mkdir "$dir/bin" "$dir/work"
ln -s "$fw" "$dir/bin/fencedwrite"
PATH=$dir/bin:$PATH
cd "$dir/work"

if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); else bold=; plain=; fi
say() { printf '\n%s%s%s\n' "$bold" "$*" "$plain"; }
# Show the command line, then run that very line; its status is left in rc.
run() {
	printf '  $ %s\n' "$1"
	rc=0
	eval "$1" 2>&1 || rc=$?
}
unexpected() {
	echo "demo: unexpected outcome: $*" >&2
	exit 1
}

say "Yesterday's holder of the lease wrote report.txt under token 6."
run 'echo "report of yesterday" | fencedwrite -t 6 report.txt'

say "Host A's cron job gets the lease with token 7. It claims 7 before its producer starts."
echo "  (The producer then hangs: a GC pause, a slow disk. Here it waits on the FIFO a.gate.)"
run 'mkfifo a.gate b.gate'
run 'fencedwrite -t 7 report.txt -- sh -c "echo report by A; read go < a.gate" & a=$!'
echo "  (Wait until A's claim is in the fence:)"
run 'until [ "$(fencedwrite --show report.txt)" = 7 ]; do sleep 0.1; done'
run 'fencedwrite --show report.txt'

say "A's lease expires. Host B gets it with token 8, and claims 8 as it starts."
echo "  (B's producer takes a while too: it waits on b.gate.)"
run 'fencedwrite -t 8 report.txt -- sh -c "read go < b.gate; echo report by B" & b=$!'
run 'until [ "$(fencedwrite --show report.txt)" = 8 ]; do sleep 0.1; done'
run 'fencedwrite --show report.txt'

say "A wakes up, still believing it holds the lease. B has not finished, yet A is turned away:"
run 'echo go > a.gate'
run 'wait $a'
arc=$rc
echo "  A's fencedwrite exited with status $arc (1 = stale token, nothing changed)."
[ "$arc" -eq 1 ] || unexpected "A exited $arc"
run 'cat report.txt'

say "B's producer finishes; B commits under token 8."
run 'echo go > b.gate'
run 'wait $b'
brc=$rc
[ "$brc" -eq 0 ] || unexpected "B exited $brc"
run 'cat report.txt'
run 'fencedwrite --show --json report.txt'

say "The fence is a small text file anyone can read at 3 a.m.:"
run 'cut -c1-100 report.txt.fence'

say "--verify: is report.txt exactly what the fence committed? (A cron check for every host.)"
run 'fencedwrite --verify report.txt'
echo "  exit $rc: as committed."
[ "$rc" -eq 0 ] || unexpected "--verify exited $rc"

say "Someone edits the file by hand, behind the fence's back. --verify catches it:"
run 'echo "a line added by hand" >> report.txt'
run 'fencedwrite --verify report.txt'
echo "  exit $rc: failed closed."
[ "$rc" -eq 3 ] || unexpected "--verify after the edit exited $rc"

say "A newer holder (token 9) can still write; a stale one never can."
run 'echo "report by C" | fencedwrite -t 9 report.txt'
run 'fencedwrite --verify report.txt'
[ "$rc" -eq 0 ] || unexpected "--verify after C exited $rc"

say "--update: a counter incremented under the fence. The producer reads the current content on standard input."
run 'echo 41 | fencedwrite -t 10 count'
run "fencedwrite -t 11 --update count -- sh -c 'read n; echo \$((n + 1))'"
run 'cat count'
[ "$(cat count)" = 42 ] || unexpected "count is $(cat count)"

say "A stale holder's increment is refused, never written over a newer one:"
run "fencedwrite -t 10 --update count -- sh -c 'read n; echo \$((n + 1))'"
stale=$rc
echo "  exit $stale."
run 'cat count'
if [ "$stale" -ne 1 ] || [ "$(cat count)" != 42 ] ||
    [ "$(cat report.txt)" != "report by C" ]; then
	unexpected "stale update exited $stale"
fi
say "Done: stale holders were turned away at the resource itself, from the moment a newer one claimed it."
