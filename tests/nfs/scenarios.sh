#!/bin/bash
# SPDX-License-Identifier: MIT
# The command runs on a lab machine, which expands its own $$.
# shellcheck disable=SC2016
# fencedwrite against a real NFS server from two real client kernels (the
# lab of tests/nfs/lab.sh), each scenario on NFSv3 (lockd) and NFSv4.2:
#
#   seed        A on client1 runs `fencedwrite -t N FILE -- CMD`; CMD stops
#               itself mid-way; B on client2 commits N+1; A resumes and is
#               rejected with exit 1; FILE holds B's content, the fence N+1
#   freeze      the same, with client1's whole machine frozen (qemu stop)
#               while A holds its token, instead of A's process alone
#   contention  writers (fresh, equal and stale tokens) and readers on both
#               clients; the history is judged by tests/history_check on the
#               NFS server's clock (see tests/nfs/nfsload.c), with client2's
#               clock an hour ahead
#   control     the same load on the local_lock=all mount with local locks
#               allowed: the checker must find violations there
#   mounts      --doctor on the v3, v4.2, nolock and local_lock=all mounts,
#               and a write on the last two fails closed (exit 3) naming the
#               option; prints each mount's /proc/self/mountinfo line
#   large       8 MiB commits on client1 while client2 reads with cat;
#               counts ESTALE and leftover .nfs files (recorded, not judged)
#   read        the same writes while client2 reads with fencedwrite --read
#               (every other read with --token-file): no read fails, each
#               is one whole version (by checksum)
#   lease       A on client1 paused by tests/faults.so (FWT_PAUSE) just
#               before its rename, client1's machine frozen past the NFSv4
#               lease while B on client2 commits N+1 (-w): A must exit 8
#               (lock lost), never 0; on v3 lockd keeps A's lock, B exits 4
#   deadclient  client1's machine killed while A holds the lock mid-commit:
#               v4.2 B gets the lock when the lease ends; v3 B times out
#               (exit 4) until client1 boots again and notifies (statd);
#               --verify passes and the fence is B's token afterwards
#   restart     nfsd stopped and started on the server under writers on both
#               clients, v3 and v4.2 at once: the histories must pass
#   estale      FILE's directory or fence replaced on the server while
#               client1 has them cached: the commit lands in the new one,
#               or fails leaving FILE as it was (see estale_case)
#
# usage: tests/nfs/scenarios.sh BUILD_DIR [SCENARIO...]
# Default: seed freeze contention control mounts large read lease
# deadclient restart estale.  With
# FWT_NFS_LAB=DIR, an
# already running lab (lab.sh up DIR) is used and left running.
# FWT_NFS_WRITERS, FWT_NFS_OPS: contention writers per client and operations
# per writer (3 and 200).  Prints PASS/FAIL lines and "nfs: N passed, M failed".
set -u

build=$(cd "$1" && pwd) || exit 2
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=$here/lab.sh
FW=$build/fencedwrite
CHECK=$build/tests/history_check
LOAD=$build/tests/nfsload
WRITERS=${FWT_NFS_WRITERS:-3}
OPS=${FWT_NFS_OPS:-200}
scenarios=${*:-seed freeze contention control mounts large read lease deadclient restart estale}
passed=0
failed=0

for f in "$FW" "$CHECK" "$LOAD"; do
	[ -x "$f" ] || { echo "nfs: $f missing (make all-tests $LOAD)"; exit 2; }
done

if [ -n "${FWT_NFS_LAB:-}" ]; then
	lab=$FWT_NFS_LAB
	own_lab=false
else
	lab=$(mktemp -d /tmp/fwnfs.XXXXXX) || exit 5
	own_lab=true
fi
cleanup() {
	# The lab.sh runs still waiting end first (they wait in the background,
	# so that a signal reaches this trap at once, not after them).
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	if $own_lab; then
		"$LAB" down "$lab"
		rm -rf "$lab"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
on() { "$LAB" run "$lab" "$@" & wait $!; }
spool=$lab/spool
run=$$   # file names of their own when a running lab is reused

# Silly-renamed files (.nfsXXXX) in the exported directory, as client2 sees.
nfs_files() {
	on client2 sh -c 'ls -a "$1" | grep -c "^\.nfs"' sh /mnt/v3
}

# Wait (up to 120 s) for a file on the spool, which this host sees directly.
wait_spool() {
	local n=0
	while [ ! -e "$spool/$1" ]; do
		[ $n -ge 600 ] && return 1
		sleep 0.2
		n=$((n + 1))
	done
}

t_all=$(ms)
if $own_lab; then
	t0=$(ms)
	"$LAB" up "$lab" &
	if ! wait $!; then
		fail "lab: the machines did not come up"
		echo "nfs: $passed passed, $failed failed"
		exit 1
	fi
	echo "time: boot to ready $(( $(ms) - t0 )) ms"
fi

# What client2 then sees: FILE's content and the fence.
judge_seed() {
	local name=$1 f=$2 arc=$3 aerr=$4 brc=$5 content fence1 fence2
	content=$(on client2 cat "$f")
	fence1=$(on client1 "$FW" --show "$f")
	fence2=$(on client2 "$FW" --show "$f")
	if [ "$brc" -eq 0 ] && [ "$arc" -eq 1 ] &&
	    [ "$content" = "content by B" ] && [ "$fence1" = 12 ] &&
	    [ "$fence2" = 12 ] &&
	    grep -q "stale token 11 for $f: the fence holds 12" "$aerr"; then
		pass "$name: A (token 11) rejected with exit 1 after B (token 12) committed; FILE holds B's content, fence 12 on both clients"
	else
		fail "$name: A exit $arc, B exit $brc, content '$content', fence '$fence1'/'$fence2'"
		cat "$aerr"
	fi
}

seed() {
	local v=$1 f=/mnt/$1/seed-$1-$run.txt a brc arc t0
	t0=$(ms)
	rm -f "$spool/a.pid"
	on client1 sh -c "echo base | '$FW' -t 10 '$f'" || { fail "seed $v: setup"; return; }
	# A's producer announces its pid on the spool, then stops itself.
	on client1 "$FW" -t 11 "$f" -- sh -c \
	    'echo "content by A"; echo $$ > "$1/a.pid"; kill -STOP $$' sh "$spool" \
	    >"$lab/a.out" 2>"$lab/a.err" &
	a=$!
	wait_spool a.pid || { fail "seed $v: A never started"; kill "$a"; return; }
	on client2 sh -c "echo 'content by B' | '$FW' -t 12 '$f'"
	brc=$?
	on client1 sh -c 'kill -CONT "$1"' sh "$(cat "$spool/a.pid")"
	wait "$a"
	arc=$?
	judge_seed "seed $v" "$f" "$arc" "$lab/a.err" "$brc"
	echo "time: seed $v $(( $(ms) - t0 )) ms"
}

freeze() {
	local v=$1 f=/mnt/$1/freeze-$1-$run.txt a brc arc t0 frozen=no
	t0=$(ms)
	rm -f "$spool/a.ready" "$spool/a.go"
	on client1 sh -c "echo base | '$FW' -t 10 '$f'" || { fail "freeze $v: setup"; return; }
	on client1 "$FW" -t 11 "$f" -- sh -c \
	    'echo "content by A"; : > "$1/a.ready"; while [ ! -e "$1/a.go" ]; do sleep 0.1; done' \
	    sh "$spool" >"$lab/a.out" 2>"$lab/a.err" &
	a=$!
	wait_spool a.ready || { fail "freeze $v: A never started"; kill "$a"; return; }
	"$LAB" freeze "$lab" client1 && frozen=yes
	: >"$spool/a.go"
	on client2 sh -c "echo 'content by B' | '$FW' -t 12 '$f'"
	brc=$?
	"$LAB" resume "$lab" client1 || frozen=no
	wait "$a"
	arc=$?
	if [ $frozen = yes ]; then
		judge_seed "freeze $v (client1's machine stopped)" "$f" "$arc" "$lab/a.err" "$brc"
	else
		fail "freeze $v: could not stop or continue client1's machine"
	fi
	echo "time: freeze $v $(( $(ms) - t0 )) ms"
}

# Both clients' nfsload on FILE under MNT (extra environment in ENV for the
# machines); leaves the joined history in $spool/hist.TAG and the checker's
# verdict in $out, the readers' summaries in $lab/load[12].TAG.
load_both() {
	local tag=$1 mnt=$2 f=$3 w=$4 n=$5 env=$6 p1 rc1 rc2
	on client1 env "$env" "$LOAD" "$f" "$mnt" "$w" "$n" 1 1 \
	    >"$spool/hist1.$tag" 2>"$lab/load1.$tag" &
	p1=$!
	on client2 env "$env" "$LOAD" "$f" "$mnt" "$w" "$n" 1 2 \
	    >"$spool/hist2.$tag" 2>"$lab/load2.$tag"
	rc2=$?
	wait "$p1"
	rc1=$?
	cat "$spool/hist1.$tag" "$spool/hist2.$tag" >"$spool/hist.$tag"
	out=$(on client1 "$CHECK" "$spool/hist.$tag" "$f")
	[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] &&
	    [ "$(wc -l <"$spool/hist.$tag")" -eq $((2 * w * n)) ]
}

# One version's load and its judgement, as PASS/FAIL lines on standard
# output (it runs in a subshell beside the other version's).
contention_run() {
	local v=$1 f=/mnt/$1/contention-$1-$run.txt ok=yes
	load_both "$v" "/mnt/$v" "$f" "$WRITERS" "$OPS" NFSLOAD_RUN=1 || ok=no
	case $out in *" 0 violations") ;; *) ok=no ;; esac
	if [ $ok = yes ]; then
		echo "PASS: contention $v: 2 clients x $WRITERS writers x $OPS ops: $out; readers: client1 $(cat "$lab/load1.$v"); client2 $(cat "$lab/load2.$v")"
	else
		echo "FAIL: contention $v: $out; readers: $(cat "$lab/load1.$v" "$lab/load2.$v")"
	fi
}

# Both versions at once, on files of their own: each is bound by its own
# fence's lock, held for a few calls to the server, so the two overlap
# where one after the other they would wait in turn.
contention() {
	local t0 before v line
	t0=$(ms)
	before=$(nfs_files)
	# client2's clock an hour ahead: the history must not depend on the
	# clients' clocks (nfsload stamps with the server's).
	on client2 sh -c 'date -s "@$(( $(date +%s) + 3600 ))" >/dev/null'
	for v in v3 v4; do
		contention_run "$v" >"$lab/contention.$v" &
	done
	wait
	on client2 sh -c 'date -s "@$(( $(date +%s) - 3600 ))" >/dev/null'
	for v in v3 v4; do
		line=$(cat "$lab/contention.$v")
		case $line in
		"PASS: "*) pass "${line#PASS: }" ;;
		*) fail "${line#FAIL: }" ;;
		esac
	done
	echo "contention: new .nfs files: $(( $(nfs_files) - before ))"
	echo "time: contention (v3 and v4 at once) $(( $(ms) - t0 )) ms"
}

# The same load where locks exclude only each host's own processes
# (local_lock=all, allowed with FW_LOCAL_LOCKS_OK): what the missing
# exclusion lets through must show, as FILE going back to an older token
# under a reader or as a history violation, or the judges above prove
# nothing.  Writes that failed there (rename: "Text file busy", exit 5) are
# counted and left out of the history judged.
control() {
	local f=/mnt/locall/control-$run.txt t0 back errs
	t0=$(ms)
	load_both control /mnt/locall "$f" 3 60 NFSLOAD_LOCAL_LOCKS_OK=1
	awk '$4 == 0 || $4 == 1' "$spool/hist.control" >"$spool/hist.control.ok"
	errs=$(awk '$4 != 0 && $4 != 1' "$spool/hist.control" | wc -l)
	out=$(on client1 "$CHECK" "$spool/hist.control.ok" "$f")
	back=$(cat "$lab/load1.control" "$lab/load2.control" |
	    sed -n 's/.*backwards=\([0-9]*\).*/\1/p' | awk '{n += $1} END {print n + 0}')
	if case $out in
	    *" 0 violations") [ "$back" -gt 0 ] ;;
	    history:*) true ;;
	    *) false ;;
	    esac; then
		pass "control: without cross-host locks, readers saw FILE go back $back times; checker: $out; failed writes: $errs"
	else
		fail "control: no violation found without cross-host locks: $out; readers: $(cat "$lab/load1.control" "$lab/load2.control")"
	fi
	echo "time: control $(( $(ms) - t0 )) ms"
}

mounts() {
	local m want rc out t0 f
	t0=$(ms)
	for m in v3 v4 nolock locall; do
		echo "mountinfo: $(on client1 grep " /mnt/$m " /proc/self/mountinfo)"
	done
	for m in v3:0 v4:0 nolock:3 locall:3; do
		want=${m#*:}
		m=${m%%:*}
		out=$(on client1 "$FW" --doctor "/mnt/$m/doctor.txt" 2>&1)
		rc=$?
		if [ $rc -eq "$want" ]; then
			pass "doctor /mnt/$m: exit $rc, $(echo "$out" | grep '^verdict:')"
		else
			fail "doctor /mnt/$m: exit $rc, want $want: $out"
		fi
	done
	# What the client says of its locks: on v4.2 the lease the server
	# announced (rpc.nfsd -L 10 in guest.sh) and the client's
	# recover_lost_locks; neither on v3, whose locks are lockd's.
	want=$(on client1 cat /sys/module/nfs/parameters/recover_lost_locks)
	case $want in Y) want=true ;; N) want=false ;; *) want=null ;; esac
	out=$(on client1 "$FW" --doctor --json /mnt/v4/doctor.txt 2>&1)
	if case $out in *'"lease_seconds":10,"recover_lost_locks":'$want'}'*) true ;; *) false ;; esac; then
		pass "doctor /mnt/v4: lease 10 s and recover_lost_locks $want, as the server and the client say"
	else
		fail "doctor /mnt/v4: want lease_seconds 10, recover_lost_locks $want: $out"
	fi
	out=$(on client1 "$FW" --doctor --json /mnt/v3/doctor.txt 2>&1)
	if case $out in *'"lease_seconds":null,"recover_lost_locks":null}'*) true ;; *) false ;; esac; then
		pass "doctor /mnt/v3: no lease, no lost-lock recovery (lockd's locks)"
	else
		fail "doctor /mnt/v3: want null lease and recover_lost_locks: $out"
	fi
	for m in nolock:nolock locall:local_lock=all; do
		f=/mnt/${m%%:*}/refused.txt
		out=$(on client1 sh -c "echo x | '$FW' -t 1 '$f'" 2>&1)
		rc=$?
		if [ $rc -eq 3 ] && case $out in *"${m#*:}"*) true ;; *) false ;; esac &&
		    ! on client2 test -e "/mnt/v3/refused.txt"; then
			pass "write on /mnt/${m%%:*}: fails closed with exit 3: $out"
		else
			fail "write on /mnt/${m%%:*}: exit $rc: $out"
		fi
	done
	echo "time: mounts $(( $(ms) - t0 )) ms"
}

# 8 MiB commits on client1 while client2 reads FILE with plain cat (every
# version of FILE is "tok=NN" and 8 MiB of zeros: 8388615 bytes).  FILE
# exists and client2 has read it once before the loop: a name client2 has
# looked up and not found stays "not found" there for up to acdirmin (30 s).
large() {
	local v=$1 f=/mnt/$1/large-$1-$run.txt t0 r w before left
	t0=$(ms)
	rm -f "$spool/large.stop"
	before=$(nfs_files)
	on client1 sh -c 'dd if=/dev/zero of=/tmp/large bs=1M count=8 2>/dev/null &&
	    { echo "tok=10"; cat /tmp/large; } | "$1" -t 10 "$2"' sh "$FW" "$f" ||
	    { fail "large $v: first commit"; return; }
	on client2 cat "$f" >/dev/null
	on client2 sh -c '
		n=0 ok=0 stale=0 other=0
		while [ ! -e "$2" ]; do
			if cat "$1" >/tmp/copy 2>/tmp/cat.err &&
			    [ "$(wc -c </tmp/copy)" -eq 8388615 ]; then
				ok=$((ok + 1))
			elif grep -q "Stale file handle" /tmp/cat.err; then
				stale=$((stale + 1))
			else
				other=$((other + 1))
				echo "  cat exit $?, $(wc -c </tmp/copy) bytes, first line $(head -c 12 /tmp/copy | head -n 1): $(cat /tmp/cat.err)" >&2
			fi
			n=$((n + 1))
		done
		echo "reads=$n whole=$ok estale=$stale other=$other"' sh "$f" \
	    "$spool/large.stop" >"$lab/large.$v" 2>"$lab/large-err.$v" &
	r=$!
	on client1 sh -c '
		i=11 bad=0
		while [ $i -le 16 ]; do
			{ echo "tok=$i"; cat /tmp/large; } | "$1" -t "$i" "$2" || bad=$((bad + 1))
			i=$((i + 1))
		done
		echo "commits=$((i - 11 - bad)) failed=$bad"' sh "$FW" "$f" \
	    >"$lab/large-w.$v" 2>&1
	w=$?
	: >"$spool/large.stop"
	wait "$r"
	left=$(( $(nfs_files) - before ))
	if [ $w -eq 0 ] && grep -q "failed=0" "$lab/large-w.$v" &&
	    [ "$(on client2 head -n 1 "$f")" = "tok=16" ]; then
		pass "large $v: client1 $(cat "$lab/large-w.$v") of 8 MiB; client2 cat: $(cat "$lab/large.$v"); new .nfs files: $left"
	else
		fail "large $v: writer: $(cat "$lab/large-w.$v"); reader: $(cat "$lab/large.$v")"
	fi
	head -n 4 "$lab/large-err.$v"
	echo "time: large $v $(( $(ms) - t0 )) ms"
}

# A (token 11) on client1 paused by tests/faults.so just before its rename
# (the fence already holds 11, FILE not yet A's), on v3 and on v4.2 at
# once; client1's whole machine is then stopped while B (token 12) on
# client2 waits for each lock.  NFSv4: the server ends client1's lease
# (10 s) and gives B the lock; when client1 goes on, A's rename lands after
# B's commit, and A must say so (exit 8), never report success.  NFSv3:
# lockd has no lease, B gives up (exit 4) and A commits.  Prints what FILE
# and the fence hold afterwards.  The two versions share one freeze: their
# waits overlap instead of adding up.
lease() {
	local v t0 tb b3 frozen=no
	local -A apid bexit bwait
	t0=$(ms)
	rm -f "$spool"/lease.*
	for v in v3 v4; do
		on client1 sh -c "echo base | '$FW' -t 10 /mnt/$v/lease-$v-$run.txt" ||
		    { fail "lease $v: setup"; return; }
		on client1 sh -c 'echo "content by A" |
		    FWT_PAUSE="renameat:1:$1/lease.$5.ready:$1/lease.go" LD_PRELOAD="$2" \
		    "$3" -t 11 "$4"' sh "$spool" "$build/tests/faults.so" "$FW" \
		    "/mnt/$v/lease-$v-$run.txt" "$v" \
		    >"$lab/lease-a.$v.out" 2>"$lab/lease-a.$v.err" &
		apid[$v]=$!
	done
	if ! wait_spool lease.v3.ready || ! wait_spool lease.v4.ready; then
		fail "lease: A never reached its rename"
		kill "${apid[v3]}" "${apid[v4]}"
		return
	fi
	"$LAB" freeze "$lab" client1 && frozen=yes
	tb=$(ms)
	# v3's B gives up after 20 s; v4.2's may wait 60 s for the lease.
	on client2 sh -c "echo 'content by B' | '$FW' -t 12 -w 20 /mnt/v3/lease-v3-$run.txt" \
	    >/dev/null 2>"$lab/lease-b.v3.err" &
	b3=$!
	on client2 sh -c "echo 'content by B' | '$FW' -t 12 -w 60 /mnt/v4/lease-v4-$run.txt" \
	    >/dev/null 2>"$lab/lease-b.v4.err"
	bexit[v4]=$?
	bwait[v4]=$(( $(ms) - tb ))
	wait "$b3"
	bexit[v3]=$?
	bwait[v3]=$(( $(ms) - tb ))
	"$LAB" resume "$lab" client1 || frozen=no
	: >"$spool/lease.go"
	for v in v3 v4; do
		wait "${apid[$v]}"
		lease_judge "$v" "$frozen" "$?" "${bexit[$v]}" "${bwait[$v]}"
	done
	echo "time: lease $(( $(ms) - t0 )) ms"
}

lease_judge() {
	local v=$1 frozen=$2 arc=$3 brc=$4 waited=$5 f=/mnt/$1/lease-$1-$run.txt
	local want content fence
	content=$(on client2 cat "$f")
	fence=$(on client2 "$FW" --show "$f")
	echo "lease $v: B (token 12) exit $brc after $waited ms; A (token 11) exit $arc: $(cat "$lab/lease-a.$v.err")"
	echo "lease $v: afterwards FILE holds '$content', the fence $fence"
	if [ "$frozen" = no ]; then
		fail "lease $v: could not stop or continue client1's machine"
	elif [ "$v" = v3 ]; then
		if [ "$brc" -eq 4 ] && [ "$arc" -eq 0 ] &&
		    [ "$content" = "content by A" ] && [ "$fence" = 11 ]; then
			pass "lease $v: lockd kept A's lock through the freeze: B gave up (exit 4) after $waited ms, A committed (exit 0)"
		else
			fail "lease $v: B exit $brc, A exit $arc, content '$content', fence '$fence'"
			cat "$lab/lease-b.$v.err"
		fi
	else
		want=no
		if [ "$arc" -eq 8 ] && grep -q "may now hold this superseded content" "$lab/lease-a.$v.err"; then
			want=superseded
		elif [ "$arc" -eq 8 ] && grep -q "was not changed" "$lab/lease-a.$v.err"; then
			want=unchanged
		fi
		# B must have waited for the lease (10 s): had A's lock never
		# reached the server, B would have got it at once and A would
		# exit 8 all the same.
		if [ "$brc" -eq 0 ] && [ $want != no ] && [ "$fence" = 12 ] &&
		    [ "$waited" -ge 5000 ] &&
		    case $want:$content in
		    superseded:"content by A"|superseded:"content by B") true ;;
		    unchanged:"content by B") true ;;
		    *) false ;;
		    esac; then
			pass "lease $v: client1's lease expired during the freeze; B got the lock after $waited ms and committed 12; A exit 8 ($want); FILE holds '$content', fence 12"
		else
			fail "lease $v: B exit $brc after $waited ms, A exit $arc, content '$content', fence '$fence'"
			cat "$lab/lease-b.$v.err"
		fi
	fi
}

# 8 MiB commits on client1 while client2 reads FILE with `fencedwrite
# --read` in a loop, every other read with --token-file.  Each version is
# "tok=NN", 8 MiB of random bytes and "end=NN": client1 records every
# version's checksum, client2 every read's; each read must be one of those
# versions whole, and a --token-file read's token must be its version's.
read_versions() {
	local v=$1 f=/mnt/$1/read-$1-$run.txt t0 r w bad reads fails
	t0=$(ms)
	rm -f "$spool/read.stop" "$spool/read-sums.$v" "$spool/read-seen.$v"
	on client1 sh -c '{ echo "tok=10"; head -c 8388608 /dev/urandom; echo "end=10"; } >/tmp/ver &&
	    md5sum </tmp/ver >>"$3" && "$1" -t 10 "$2" </tmp/ver' sh "$FW" "$f" \
	    "$spool/read-sums.$v" || { fail "read $v: first commit"; return; }
	on client2 cat "$f" >/dev/null
	on client2 sh -c '
		n=0 fails=0
		while [ ! -e "$3" ]; do
			if [ $((n % 2)) -eq 0 ]; then
				"$1" --read "$2" >/tmp/out 2>/tmp/read.err
				rc=$? tok=
			else
				rm -f /tmp/tok
				"$1" --read --token-file /tmp/tok "$2" >/tmp/out 2>/tmp/read.err
				rc=$? tok=$(cat /tmp/tok 2>/dev/null)
			fi
			n=$((n + 1))
			if [ $rc -ne 0 ]; then
				fails=$((fails + 1))
				echo "  --read exit $rc: $(cat /tmp/read.err)" >&2
				continue
			fi
			head=$(head -n 1 /tmp/out)
			if [ -n "$tok" ] && [ "$head" != "tok=$tok" ]; then
				fails=$((fails + 1))
				echo "  --token-file says $tok, the content begins $head" >&2
			fi
			echo "$(md5sum </tmp/out) $head" >>"$4"
		done
		echo "reads=$n failed=$fails"' sh "$FW" "$f" "$spool/read.stop" \
	    "$spool/read-seen.$v" >"$lab/read.$v" 2>"$lab/read-err.$v" &
	r=$!
	on client1 sh -c '
		i=11 bad=0
		while [ $i -le 16 ]; do
			{ echo "tok=$i"; head -c 8388608 /dev/urandom; echo "end=$i"; } >/tmp/ver
			md5sum </tmp/ver >>"$3"
			"$1" -t "$i" "$2" </tmp/ver || bad=$((bad + 1))
			i=$((i + 1))
		done
		echo "commits=$((i - 11 - bad)) failed=$bad"' sh "$FW" "$f" \
	    "$spool/read-sums.$v" >"$lab/read-w.$v" 2>&1
	w=$?
	: >"$spool/read.stop"
	wait "$r"
	# Every read's checksum must be one a version had.
	bad=$(awk 'NR == FNR { sum[$1] = 1; next } !($1 in sum)' \
	    "$spool/read-sums.$v" "$spool/read-seen.$v" | wc -l)
	reads=$(sed -n 's/.*reads=\([0-9]*\).*/\1/p' "$lab/read.$v")
	fails=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$lab/read.$v")
	if [ $w -eq 0 ] && grep -q "failed=0" "$lab/read-w.$v" &&
	    [ "${fails:-1}" -eq 0 ] && [ "$bad" -eq 0 ] && [ "${reads:-0}" -gt 0 ] &&
	    [ "$(on client2 head -n 1 "$f")" = "tok=16" ]; then
		pass "read $v: client1 $(cat "$lab/read-w.$v") of 8 MiB; client2 --read: $(cat "$lab/read.$v"), every read one whole version (reads per version:$(awk '{print $3}' "$spool/read-seen.$v" | sort | uniq -c | awk '{printf " %s x%s", $2, $1}'))"
	else
		fail "read $v: writer: $(cat "$lab/read-w.$v"); reader: $(cat "$lab/read.$v"); reads of no version: $bad"
	fi
	head -n 4 "$lab/read-err.$v"
	echo "time: read $v $(( $(ms) - t0 )) ms"
}

# A on client1 (token 11) paused by tests/faults.so just before its rename,
# on v3 and v4.2 at once, the fence already at 11; then client1's machine
# is killed (qemu ends: no unlock, no goodbye).  v4.2: B on client2 (token
# 12, -w 60) gets the lock once the server ends client1's lease.  v3:
# lockd keeps a dead client's lock until that client announces its reboot
# (statd): B with -w 15 gives up (exit 4).  client1 then boots again with
# the statd records it had (a real client keeps them on disk; the lab's
# root is a tmpfs, so they are carried over by hand) and sends SM_NOTIFY
# (sm-notify); a second B, already waiting, gets the v3 lock then.  On
# both, --verify on client2 must pass afterwards with the fence at 12.
deadclient() {
	local f3=/mnt/v3/dead-v3-$run.txt f4=/mnt/v4/dead-v4-$run.txt v t0
	local b3 b4 rc3 rc4 w3 w4 tk rc5 w5 tn ok v3ok=no v4ok=no
	t0=$(ms)
	rm -rf "$spool"/dead.* "$spool/client1.sm"
	for v in v3 v4; do
		on client1 sh -c "echo base | '$FW' -t 10 /mnt/$v/dead-$v-$run.txt" ||
		    { fail "deadclient $v: setup"; return; }
		on client1 sh -c 'echo "content by A" |
		    FWT_PAUSE="renameat:1:$1/dead.$5.ready:$1/dead.$5.go" LD_PRELOAD="$2" \
		    "$3" -t 11 "$4"' sh "$spool" "$build/tests/faults.so" "$FW" \
		    "/mnt/$v/dead-$v-$run.txt" "$v" >/dev/null 2>&1 &
	done
	if ! wait_spool dead.v3.ready || ! wait_spool dead.v4.ready; then
		fail "deadclient: A never reached its rename"
		return
	fi
	# client1's statd records (which servers to notify after a reboot).
	on client1 cp -a /var/lib/nfs/sm "$spool/client1.sm"
	"$LAB" kill "$lab" client1
	tk=$(ms)
	on client2 sh -c "echo 'content by B' | '$FW' -t 12 -w 60 '$f4'" \
	    >/dev/null 2>"$lab/dead-b4.err" &
	b4=$!
	on client2 sh -c "echo 'content by B' | '$FW' -t 12 -w 15 '$f3'" \
	    >/dev/null 2>"$lab/dead-b3.err" &
	b3=$!
	wait "$b4"; rc4=$?; w4=$(( $(ms) - tk ))
	wait "$b3"; rc3=$?; w3=$(( $(ms) - tk ))
	wait   # the lab.sh runs of the killed A
	echo "deadclient: client1 killed; v4.2 B exit $rc4 after $w4 ms; v3 B (-w 15) exit $rc3 after $w3 ms: $(cat "$lab/dead-b3.err")"
	"$LAB" restart "$lab" client1 || { fail "deadclient: client1 did not boot again"; return; }
	on client2 sh -c "echo 'content by B' | '$FW' -t 12 -w 60 '$f3'" \
	    >/dev/null 2>"$lab/dead-b5.err" &
	b3=$!
	tn=$(ms)
	on client1 sh -c 'cp -a "$1"/. /var/lib/nfs/sm/ && sm-notify -f' sh \
	    "$spool/client1.sm"
	wait "$b3"; rc5=$?; w5=$(( $(ms) - tn ))
	echo "deadclient: client1 booted again and ran sm-notify; v3 B (-w 60) exit $rc5, $w5 ms after the notify: $(cat "$lab/dead-b5.err")"
	for v in v3 v4; do
		f=/mnt/$v/dead-$v-$run.txt
		ok=$(on client2 sh -c '"$1" --verify -w 10 "$2" >/dev/null 2>&1 && echo "$("$1" --show -w 10 "$2") $(cat "$2")"' sh "$FW" "$f")
		echo "deadclient $v: afterwards fence and FILE: $ok"
		[ "$ok" = "12 content by B" ] && eval "${v}ok=yes"
	done
	# B waited for client1's lease to end: the dead client did hold the
	# lock at the server.
	if [ $rc4 -eq 0 ] && [ $v4ok = yes ] && [ "$w4" -ge 5000 ]; then
		pass "deadclient v4: client1 killed holding the lock; B got it after $w4 ms (lease 10 s) and committed; --verify passes, fence 12"
	else
		fail "deadclient v4: B exit $rc4 after $w4 ms; verify: $v4ok; $(cat "$lab/dead-b4.err")"
	fi
	if [ $rc3 -eq 4 ] && [ $rc5 -eq 0 ] && [ $v3ok = yes ]; then
		pass "deadclient v3: lockd kept the dead client's lock: B gave up (exit 4) after $w3 ms; once client1 booted again and notified, B got it $w5 ms later; --verify passes, fence 12"
	else
		fail "deadclient v3: B exit $rc3 after $w3 ms, then exit $rc5 after $w5 ms; verify: $v3ok"
	fi
	echo "time: deadclient $(( $(ms) - t0 )) ms"
}

# nfsd stopped and started again on the server (lockd with it) while both
# clients commit to a v3 and a v4.2 FILE: locks held then are reclaimed in
# the grace period that follows (10 s), new ones wait for its end.  Both
# histories must pass the checker: nothing committed is lost, no stale
# write lands.  The longest operation in each history is the grace wait as
# the writers saw it (server clock).
restart_server() {
	local t0 v p1 p2 p3 p4 tr n=0 ok=yes r out long
	t0=$(ms)
	on client1 "$LOAD" "/mnt/v3/restart-v3-$run.txt" /mnt/v3 2 40 0 1 \
	    >"$spool/hist1.restart-v3" 2>"$lab/load1.restart-v3" & p1=$!
	on client2 "$LOAD" "/mnt/v3/restart-v3-$run.txt" /mnt/v3 2 40 0 2 \
	    >"$spool/hist2.restart-v3" 2>"$lab/load2.restart-v3" & p2=$!
	on client1 "$LOAD" "/mnt/v4/restart-v4-$run.txt" /mnt/v4 2 40 0 3 \
	    >"$spool/hist1.restart-v4" 2>"$lab/load1.restart-v4" & p3=$!
	on client2 "$LOAD" "/mnt/v4/restart-v4-$run.txt" /mnt/v4 2 40 0 4 \
	    >"$spool/hist2.restart-v4" 2>"$lab/load2.restart-v4" & p4=$!
	# Polled: both FILEs committed at least once, as the server sees.
	until on server test -s "/export/restart-v3-$run.txt" -a \
	    -s "/export/restart-v4-$run.txt"; do
		n=$((n + 1))
		[ $n -lt 100 ] || { ok=no; break; }
	done
	tr=$(ms)
	on server sh -c 'rpc.nfsd 0 && rpc.nfsd -G 10 -L 10 4' || ok=no
	echo "restart: nfsd stopped and started again $(( tr - t0 )) ms into the writes"
	wait "$p1" || ok=no; wait "$p2" || ok=no
	wait "$p3" || ok=no; wait "$p4" || ok=no
	for v in v3 v4; do
		cat "$spool/hist1.restart-$v" "$spool/hist2.restart-$v" >"$spool/hist.restart-$v"
		out=$(on client1 "$CHECK" "$spool/hist.restart-$v" "/mnt/$v/restart-$v-$run.txt")
		long=$(awk '{ d = ($2 - $1) / 1e6; if (d > m) m = d } END { printf "%d", m }' "$spool/hist.restart-$v")
		r=$(awk '{ n[$4]++ } END { for (c in n) printf " exit %s x%d", c, n[c] }' "$spool/hist.restart-$v")
		# Some operation waited through the grace period (10 s): the
		# restart came while writes were going on, not after them.
		if [ $ok = yes ] && [ "$(wc -l <"$spool/hist.restart-$v")" -eq 160 ] &&
		    [ "$long" -ge 5000 ] &&
		    case $out in *" 0 violations") true ;; *) false ;; esac; then
			pass "restart $v: nfsd restarted under 2 clients x 2 writers x 40 ops: $out;$r; longest operation $long ms (grace 10 s)"
		else
			fail "restart $v: $out;$r; $(cat "$lab/load1.restart-$v" "$lab/load2.restart-$v")"
		fi
	done
	echo "time: restart $(( $(ms) - t0 )) ms"
}

# FILE's directory or its fence replaced on the server (as a restore from
# backup would) while client1 has them cached, having committed just
# before.  Four cases per version, each in a directory of its own:
#   fence   the fence replaced by a copy (its old file handle is gone):
#           the client's next open gets ESTALE, the kernel looks the name
#           up again, and the commit lands in the new fence (exit 0, 11)
#   gone    the directory replaced by a copy, the old one removed: the same,
#           one level up
#   midway  the same while A (token 11) is producing its content, FILE's
#           directory already open: A must fail, and the new directory's
#           FILE keep its content.  The command form claims 11 before CMD
#           runs, so the copy carries A's claim: the new fence holds 11
#           (ahead of FILE, never behind it)
#   moved   the directory replaced by a copy, the old one kept under
#           another name: its file handle is still valid, and the client
#           trusts its cached name for it until the parent's attributes
#           are due (acdirmin): the commit goes into the old directory.
#           Recorded and asserted as seen, so that a change shows.
estale_case() {
	local v=$1 c=$2 d=/mnt/$1/es-$2-$1-$run e=es-$2-$1-$run a rc nw old
	on client1 sh -c 'mkdir -p "$1" && echo old | "$2" -t 10 "$1/f.txt" &&
	    cat "$1/f.txt" "$1/f.txt.fence" >/dev/null' sh "$d" "$FW" ||
	    { echo "setup failed"; return; }
	case $c in
	midway)
		rm -f "$spool/es.ready" "$spool/es.go"
		on client1 "$FW" -t 11 "$d/f.txt" -- sh -c \
		    'echo new; : >"$1/es.ready"; while [ ! -e "$1/es.go" ]; do sleep 0.1; done' \
		    sh "$spool" >/dev/null 2>"$lab/es.err" &
		a=$!
		wait_spool es.ready || { kill "$a"; echo "A never started"; return; } ;;
	esac
	case $c in
	fence) on server sh -c 'cd "/export/$1" && cp -a f.txt.fence n && mv n f.txt.fence' sh "$e" ;;
	gone|midway) on server sh -c 'cd /export && mv "$1" "$1.old" && mkdir "$1" &&
	    cp -a "$1.old/f.txt" "$1.old/f.txt.fence" "$1" && rm -rf "$1.old"' sh "$e" ;;
	moved) on server sh -c 'cd /export && mv "$1" "$1.old" && mkdir "$1" &&
	    cp -a "$1.old/." "$1"' sh "$e" ;;
	esac
	if [ "$c" = midway ]; then
		: >"$spool/es.go"
		wait "$a"
		rc=$?
	else
		on client1 sh -c 'echo new | "$1" -t 11 "$2"' sh "$FW" "$d/f.txt" 2>"$lab/es.err"
		rc=$?
	fi
	nw=$(on server sh -c 'echo "$(cat "$2/f.txt")/$("$1" --show "$2/f.txt")"' sh "$FW" "/export/$e")
	old=$(on server sh -c '[ -d "$2.old" ] && echo "$(cat "$2.old/f.txt")/$("$1" --show "$2.old/f.txt")"' sh "$FW" "/export/$e")
	echo "exit $rc new ${nw:-?} old ${old:--} $(head -c 300 "$lab/es.err")"
}

estale() {
	local v c got want t0
	t0=$(ms)
	for v in v3 v4; do
		for c in fence gone midway moved; do
			got=$(estale_case "$v" "$c")
			# midway: A fails (v3: exit 5, fstat of the directory
			# ESTALE; v4.2: exit 3), FILE keeps its content; the
			# copied fence holds A's claim of 11.
			case $c in
			fence|gone) want="exit 0 new new/11 old - *" ;;
			midway) want="exit [35] new old/1[01] old - *removed or replaced*" ;;
			moved) want="exit 0 new old/10 old new/11 *" ;;
			esac
			# shellcheck disable=SC2254
			if case $got in $want) true ;; *) false ;; esac; then
				pass "estale $v $c: $got"
			else
				fail "estale $v $c: $got (want $want...)"
			fi
		done
	done
	echo "time: estale $(( $(ms) - t0 )) ms"
}

for s in $scenarios; do
	case $s in
	mounts|control|deadclient|estale|lease) "$s" ;;
	restart) restart_server ;;
	contention) contention ;;
	seed|freeze|large) "$s" v3; "$s" v4 ;;
	read) read_versions v3; read_versions v4 ;;
	*) fail "unknown scenario '$s'" ;;
	esac
done
echo "time: total $(( $(ms) - t_all )) ms"
echo "nfs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
