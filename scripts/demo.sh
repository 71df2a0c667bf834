#!/bin/sh
# Play the paused-holder story with the real command, narrating each step.
# usage: scripts/demo.sh [PATH-TO-fencedwrite]
set -eu

fw=${1:-fencedwrite}
case $fw in */*) fw=$(cd "$(dirname "$fw")" && pwd)/$(basename "$fw") ;; esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/fencedwrite-demo.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"

if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); else bold=; plain=; fi
say() { printf '\n%s%s%s\n' "$bold" "$*" "$plain"; }
# Show the command as a user would type it, then run it.
run() {
	shown=$*
	[ "$1" = "$fw" ] && shown="fencedwrite${shown#"$fw"}"
	printf '  $ %s\n' "$shown"
	"$@" 2>&1
}

# Wait until process $1 is stopped (state T in /proc/PID/stat).
wait_stopped() {
	while :; do
		state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
		[ "$state" = T ] && return 0
		[ -n "$state" ] || return 1
		sleep 0.05
	done
}

say "A cron job on host A holds the lease; the lease store gave it token 7."
say "A starts writing report.txt, then freezes mid-job (GC pause, SIGSTOP, slow disk)."
printf '  $ fencedwrite -t 7 report.txt -- sh -c "echo report by A; kill -STOP $$; echo (A, late)" &\n'
"$fw" -t 7 report.txt -- sh -c 'echo "report by A"; echo $$ > a.pid; kill -STOP $$; echo "(A, written late)"' &
a=$!
while [ ! -s a.pid ]; do sleep 0.05; done
wait_stopped "$(cat a.pid)"
echo "  ... A's producer is stopped; its lease expires."

say "The lease store hands the lease to host B with token 8. B writes the report."
echo "report by B" > b.out
printf '  $ echo "report by B" | fencedwrite -t 8 report.txt\n'
"$fw" -t 8 report.txt < b.out
run cat report.txt
run "$fw" --show report.txt

say "A wakes up, still believing it holds the lease, and tries to commit with token 7."
kill -CONT "$(cat a.pid)"
set +e
wait "$a" 2>&1
rc=$?
set -e
echo "  A's fencedwrite exited with status $rc (1 = stale token, nothing changed)."

say "The file still holds B's report, and the fence still says 8."
run cat report.txt
run "$fw" --show --json report.txt

say "The fence is a small text file anyone can read at 3 a.m.:"
run cut -c1-100 report.txt.fence

say "A newer holder (token 9) can still write; a stale one never can."
printf '  $ echo "report by C" | fencedwrite -t 9 report.txt\n'
echo "report by C" | "$fw" -t 9 report.txt
run cat report.txt
if [ "$rc" -ne 1 ] || [ "$(cat report.txt)" != "report by C" ]; then
	echo "demo: unexpected outcome" >&2
	exit 1
fi
say "Done: the stale holder was turned away at the resource itself."
