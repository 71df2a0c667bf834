#!/bin/sh
# SPDX-License-Identifier: MIT
# The commands run under etcdctl expand $ETCD_LOCK_REV themselves.
# shellcheck disable=SC2016
# End-to-end against a real etcd on 127.0.0.1 (started here, stopped at the
# end): tokens are real lock revisions, and the stale holder is a real
# etcdctl whose whole process group is stopped until its lease expires.
#
#   1. the seed's story, ROUNDS times: host A takes the lock, claims its
#      revision (the fence holds it while A produces) and starts
#      producing; A is stopped (SIGSTOP of its process group) until its
#      lease expires; B takes the lock with a higher revision and commits;
#      A is resumed and its commit is rejected (exit 1); the file holds B's
#      content and the fence B's revision;
#   2. the crontab line of the README, as written;
#   3. fencedwrite-etcd: exit codes passed through; etcd unreachable is 7;
#   4. HOSTS cron-style hosts run JOBS jobs each on one file while a chaos
#      loop stops random hosts past their lease; the history is checked by
#      tests/history.c (real-time order, justified rejections, final state).
#
# usage: tests/etcd_e2e.sh BUILD_DIR
# Prints "etcd: N passed, N failed"; exits non-zero if anything failed.
set -u

build=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
FW=$build/fencedwrite
WRAP=$top/scripts/fencedwrite-etcd
CHECK=$build/tests/history_check
ROUNDS=${FWT_ETCD_ROUNDS:-3}
HOSTS=${FWT_ETCD_HOSTS:-3}
JOBS=${FWT_ETCD_JOBS:-6}
FENCEDWRITE=$FW
export FW FENCEDWRITE

work=$(mktemp -d "${TMPDIR:-/tmp}/fwetcd.XXXXXX") || exit 5
passed=0
failed=0
cleanup() {
	# Resume and end anything still stopped, then the server.
	for f in "$work"/*.pgid; do
		[ -f "$f" ] || continue
		kill -s CONT -- "-$(cat "$f")" 2>/dev/null
		kill -s TERM -- "-$(cat "$f")" 2>/dev/null
	done
	"$top/scripts/etcd-local.sh" stop "$work/etcd"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# Wait (up to 20 s) for a file to appear.
wait_file() {
	i=0
	while [ ! -e "$1" ] && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$1" ]
}

now_ns() { date +%s%N; }

if ! "$top/scripts/etcd-local.sh" start "$work/etcd"; then
	echo "etcd: could not start a local etcd"
	echo "etcd: 0 passed, 1 failed"
	exit 1
fi
E=$(cat "$work/etcd/endpoint")
export E ETCDCTL_API=3

# ---- 1. the seed's story ---------------------------------------------------
seed_round() {
	r=$1
	d=$work/seed$r
	mkdir "$d" && cd "$d" || return 1
	mkfifo gate
	# Host A in a session of its own, so the whole host can be stopped.
	setsid "$WRAP" -e "$E" -l "jobs/seed$r" -T 2 -- report.txt -- \
	    sh -c 'echo "$ETCD_LOCK_REV" > a.rev; echo "content by A"; : > a.ready; cat gate >/dev/null' \
	    >a.out 2>&1 &
	apid=$!
	echo "$apid" >"$work/a$r.pgid"
	wait_file a.ready || { bad "seed $r: A never got the lock"; return; }
	kill -s STOP -- "-$apid"
	# A claimed its revision as soon as it held the lock, before its CMD.
	aclaim=$("$FW" --show report.txt 2>&1)
	# B waits for A's lease to expire, then commits (bounded, so a lease
	# that never expires fails the test instead of hanging it).
	timeout 60 "$WRAP" -e "$E" -l "jobs/seed$r" -T 2 -- report.txt -- \
	    sh -c 'echo "$ETCD_LOCK_REV" > b.rev; echo "content by B"' >b.out 2>&1
	brc=$?
	kill -s CONT -- "-$apid"
	echo go >gate
	wait "$apid"
	arc=$?
	rm -f "$work/a$r.pgid"
	arev=$(cat a.rev) brev=$(cat b.rev 2>/dev/null)
	fence=$("$FW" --show report.txt 2>&1)
	content=$(cat report.txt 2>&1)
	if [ "$brc" -eq 0 ] && [ "$arc" -eq 1 ] && [ "$arev" -lt "$brev" ] &&
	    [ "$aclaim" = "$arev" ] &&
	    [ "$fence" = "$brev" ] && [ "$content" = "content by B" ] &&
	    grep -q "stale token $arev for report.txt: the fence holds $brev" a.out; then
		ok "seed $r: A (rev $arev) claimed, stopped past its lease, B (rev $brev) committed, A rejected with exit 1"
	else
		bad "seed $r: A exit $arc rev $arev (fence while A ran: '$aclaim'), B exit $brc rev $brev, fence '$fence', content '$content'"
		cat a.out b.out
	fi
}
r=1
while [ $r -le "$ROUNDS" ]; do
	seed_round "$r"
	r=$((r + 1))
done

# ---- 2. the README's crontab line, as written --------------------------------
mkdir "$work/cron" && cd "$work/cron" || exit 5
if PATH=$build:$PATH etcdctl --endpoints="$E" lock --ttl 30 jobs/report -- \
    fencedwrite --token-env ETCD_LOCK_REV report.txt -- echo "daily report" &&
    [ "$(cat report.txt)" = "daily report" ] &&
    [ "$("$FW" --show report.txt)" -gt 0 ]; then
	ok "crontab line: committed under revision $("$FW" --show report.txt)"
else
	bad "crontab line"
fi

# ---- 3. the wrapper's exit codes ---------------------------------------------
"$WRAP" -e "$E" -l jobs/report -- report.txt -- sh -c 'exit 3' >/dev/null 2>&1
rc1=$?
"$WRAP" -e 127.0.0.1:1 -l jobs/report -- report.txt -- echo x >/dev/null 2>&1
rc2=$?
"$WRAP" -e "$E" -- report.txt -- echo x >/dev/null 2>&1
rc3=$?
if [ $rc1 -eq 6 ] && [ $rc2 -eq 7 ] && [ $rc3 -eq 2 ] &&
    [ "$(cat report.txt)" = "daily report" ]; then
	ok "fencedwrite-etcd: CMD failure 6, etcd unreachable 7, usage 2"
else
	bad "fencedwrite-etcd exit codes: $rc1 $rc2 $rc3 (want 6 7 2)"
fi

# ---- 4. cron-style hosts with random stalls --------------------------------
mkdir "$work/multi" && cd "$work/multi" || exit 5
rand() { echo $(( $(od -An -N2 -tu2 /dev/urandom) % $1 )); }
host() {
	h=$1
	j=1
	while [ "$j" -le "$JOBS" ]; do
		# Each job in its own session: the chaos loop stops it whole.
		setsid etcdctl --endpoints="$E" lock --ttl 1 jobs/multi -- sh -c '
			: > "holding.$1"
			start=$(date +%s%N)
			"$FW" -q --token-env ETCD_LOCK_REV shared.txt -- sh -c \
			    "sleep 0.$(( $(od -An -N1 -tu1 /dev/urandom) % 5 + 2 )); echo tok=\$ETCD_LOCK_REV"
			rc=$?
			echo "$start $(date +%s%N) $ETCD_LOCK_REV $rc" >> "history.$1"
			rm -f "holding.$1"
			exit 0' job "$h" 2>/dev/null &
		echo $! >"$work/host$h.pgid"
		wait $!
		rm -f "$work/host$h.pgid"
		j=$((j + 1))
	done
}
h=1
pids=
while [ $h -le "$HOSTS" ]; do
	host "$h" &
	pids="$pids $!"
	h=$((h + 1))
done
# Chaos: now and then, stop the host that holds the lock, mid-job, for
# longer than its lease (etcd 3.4 makes a lease last at least ~1.5 s).
stalls=0
alive=1
while [ $alive -eq 1 ]; do
	alive=0
	for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
	for held in holding.*; do
		if [ ! -e "$held" ] || [ "$(rand 3)" -ne 0 ]; then continue; fi
		pg=$(cat "$work/host${held#holding.}.pgid" 2>/dev/null) || continue
		kill -s STOP -- "-$pg" 2>/dev/null || continue
		stalls=$((stalls + 1))
		echo "stall host ${held#holding.} from $(now_ns)" >>"$work/stalls"
		sleep "3.$(rand 9)"     # the stall itself, past the lease
		kill -s CONT -- "-$pg" 2>/dev/null
		echo "stall host ${held#holding.} to $(now_ns)" >>"$work/stalls"
	done
	sleep 0.05
done
for p in $pids; do wait "$p"; done
cat history.* >history 2>/dev/null
[ -z "${FWT_ETCD_DEBUG:-}" ] || { sort -n history; cat "$work/stalls"; for f in history.*; do echo "$f: $(cut -d' ' -f3,4 "$f" | tr '\n' ' ')"; done; }
if out=$("$CHECK" history shared.txt); then
	ok "$HOSTS hosts x $JOBS jobs, $stalls stalls past the lease: $out"
else
	bad "$HOSTS hosts x $JOBS jobs, $stalls stalls: $out"
fi

echo "etcd: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
