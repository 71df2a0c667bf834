#!/bin/sh
# SPDX-License-Identifier: MIT
# The commands run under etcdctl expand $ETCD_LOCK_REV themselves.
# shellcheck disable=SC2016
# The paused-holder story with real etcd leases, narrated: a private etcd on
# 127.0.0.1, two "hosts" taking the same lock, and the one that froze past
# its lease turned away by the file.
# usage: scripts/demo-etcd.sh [PATH-TO-fencedwrite]
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
fw=${1:-fencedwrite}
case $fw in */*) fw=$(cd "$(dirname "$fw")" && pwd)/$(basename "$fw") ;; esac
if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ]; then
		"$top/scripts/ensure-deps.sh" etcd
	else
		echo "demo-etcd: needs etcd and etcdctl (Debian: apt-get install etcd-server etcd-client)" >&2
		exit 1
	fi
fi
FENCEDWRITE=$fw
export FENCEDWRITE ETCDCTL_API=3
wrap=$top/scripts/fencedwrite-etcd

dir=$(mktemp -d "${TMPDIR:-/tmp}/fencedwrite-demo-etcd.XXXXXX")
a=
cleanup() {
	[ -z "$a" ] || kill -s CONT -- "-$a" 2>/dev/null || true
	"$top/scripts/etcd-local.sh" stop "$dir/etcd"
	rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); else bold=; plain=; fi
say() { printf '\n%s%s%s\n' "$bold" "$*" "$plain"; }

say "Starting a private etcd on 127.0.0.1 ..."
"$top/scripts/etcd-local.sh" start "$dir/etcd"
E=$(cat "$dir/etcd/endpoint")
echo "  etcd is at $E"

say "Host A takes the lock jobs/report (lease TTL 2 s) and starts its report."
echo '  $ fencedwrite-etcd -l jobs/report -T 2 -- report.txt -- make-report'
mkfifo gate
setsid "$wrap" -e "$E" -l jobs/report -T 2 -- report.txt -- \
    sh -c 'echo "$ETCD_LOCK_REV" > a.rev; echo "report by A"; : > a.ready; cat gate >/dev/null' \
    >a.out 2>&1 &
a=$!
while [ ! -e a.ready ]; do sleep 0.1; done
echo "  A holds the lock; its token is the lock's revision: $(cat a.rev)"

say "Host A freezes (SIGSTOP of the whole host: etcdctl and the job)."
kill -s STOP -- "-$a"
echo "  etcdctl on A can no longer renew the lease; etcd expires it."

say "Host B asks for the same lock, gets it once A's lease is gone, and writes."
start=$(date +%s)
"$wrap" -e "$E" -l jobs/report -T 2 -- report.txt -- \
    sh -c 'echo "$ETCD_LOCK_REV" > b.rev; echo "report by B"'
echo "  B waited $(( $(date +%s) - start )) s for the lock; its revision: $(cat b.rev)"
echo "  report.txt: $(cat report.txt)    fence: $("$fw" --show report.txt)"

say "Host A wakes up, still believing it holds the lock, and finishes its report."
kill -s CONT -- "-$a"
echo go >gate
set +e
wait "$a"
rc=$?
set -e
a=
sed 's/^/  /' a.out
echo "  A's job exited with status $rc (1 = stale token, nothing changed)."

say "The file still holds B's report; the fence holds B's revision."
echo "  report.txt: $(cat report.txt)    fence: $("$fw" --show report.txt)"
if [ "$rc" -ne 1 ] || [ "$(cat report.txt)" != "report by B" ]; then
	echo "demo-etcd: unexpected outcome" >&2
	exit 1
fi
say "Done: etcd told A nothing; the file itself turned the stale holder away."
