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
#   2. the crontab lines of fencedwrite-etcd(1) and README.md, run as cron
#      would run them, byte for byte;
#   3. fencedwrite-etcd: exit codes passed through; etcd unreachable is 7;
#      its fencedwrite options checked before the wait for the lock;
#      --lock-timeout against a second holder; no "Error: exit status"
#      from etcdctl in a stale run's messages; --version;
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

# Section 2, the documented crontab lines, run as printed.
# The crontab of fencedwrite-etcd(1)'s EXAMPLES (as mandoc prints it) and
# the crontab blocks of README.md's etcd section (their assignments apply
# to the lines after them, as in one crontab) are run the way cron runs
# them: an environment of cron's own (PATH=/usr/bin:/bin, SHELL, HOME,
# LOGNAME) plus the crontab's assignments, and the text after the five
# time fields through /bin/sh -c.  Not a byte of them is changed; instead
# the world they name is arranged, in a mount and network namespace of
# their own (see cron_namespace): etcd1 and etcd2 resolve to 127.0.0.1,
# where a private etcd listens on 2379; the job runs chrooted into a root
# that shares this machine's /usr and /etc, whose /usr/local/bin holds
# this build's fencedwrite and fencedwrite-etcd and a make-report that
# prints the revision it runs under, and whose /shared is a test
# directory.  Each job must exit 0 with nothing for cron to mail, leave
# make-report's output in /shared/report.txt, and leave the fence at the
# lock's revision: the one etcd's revision counter says the job created
# (its lock key, created at R and deleted at R + 1).
# An assignment, or a job: five time fields and the command.
cron_entry='^[A-Za-z_][A-Za-z0-9_]*=|^([0-9*/,-]+[[:space:]]+){5}[^[:space:]]'
crontab_lines() {
	mandoc -T ascii "$top/man/fencedwrite-etcd.1" | col -b |
	    sed -n '/^EXAMPLES$/,/^SEE ALSO$/p' | sed 's/^[[:space:]]*//' |
	    grep -E "$cron_entry" | sed 's/^/fencedwrite-etcd.1: /'
	sed -n '/^### With etcd/,/^##/p' "$top/README.md" |
	    awk '/^```/ { inside = !inside; next } inside' |
	    grep -E "$cron_entry" | sed 's/^/README.md: /'
}

cron_namespace() {
	work=$1
	ip link set lo up || return 1
	"$top/scripts/etcd-local.sh" start "$work/cronetcd" 2379 || return 1
	root=$work/cronroot
	mkdir -p "$root/usr" "$root/etc" "$root/dev" "$root/proc" "$root/tmp" \
	    "$root/shared" "$work/cronbin" || return 1
	for l in bin lib lib64 sbin; do
		[ ! -L "/$l" ] || ln -s "$(readlink "/$l")" "$root/$l"
	done
	cp "$FW" "$WRAP" "$work/cronbin/" || return 1
	printf '#!/bin/sh\necho "report at revision $ETCD_LOCK_REV"\n' \
	    >"$work/cronbin/make-report"
	chmod 755 "$work/cronbin/make-report"
	printf '127.0.0.1 localhost etcd1 etcd2\n' >"$work/hosts"
	mount --bind /usr "$root/usr" && mount --bind /etc "$root/etc" &&
	    mount --rbind /dev "$root/dev" && mount --rbind /proc "$root/proc" &&
	    mount --bind "$work/cronbin" "$root/usr/local/bin" &&
	    mount --bind "$work/hosts" "$root/etc/hosts" || return 1
	set --
	doc=
	while IFS= read -r entry; do
		# Each document is a crontab of its own.
		[ "${entry%%: *}" = "$doc" ] || set --
		doc=${entry%%: *} line=${entry#*: }
		case $line in
		[A-Za-z_]*=*)
			# Plain NAME=value only: anything cron would parse
			# further (quotes, blanks) is not run as printed here.
			case $line in *[\ \"\']*)
				echo "FAIL: $doc: crontab line '$line': quotes or blanks"
				continue ;;
			esac
			set -- "$@" "$line"
			continue ;;
		esac
		cmd=$(printf '%s\n' "$line" |
		    sed -E 's/^([0-9*\/,-]+[[:space:]]+){5}//')
		case $cmd in *%*)
			echo "FAIL: $doc: '$cmd' has a %, which cron turns into a newline"
			continue ;;
		esac
		rm -f "$root/shared/report.txt" "$root/shared/report.txt.fence"
		out=$(chroot "$root" /usr/bin/env -i SHELL=/bin/sh HOME=/ \
		    LOGNAME=root PATH=/usr/bin:/bin "$@" /bin/sh -c "$cmd" 2>&1)
		rc=$?
		rev=$(ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2379 \
		    endpoint status -w json | sed 's/.*"revision":\([0-9]*\).*/\1/')
		fence=$("$FW" --show "$root/shared/report.txt" 2>&1)
		content=$(cat "$root/shared/report.txt" 2>&1)
		if [ "$rc" -eq 0 ] && [ -z "$out" ] &&
		    [ "$fence" = $((rev - 1)) ] &&
		    [ "$content" = "report at revision $fence" ]; then
			echo "ok: $doc: '$line' run as printed (env: $*): exit 0, no output, report.txt '$content', fence $fence = the lock's revision"
		else
			echo "FAIL: $doc: '$line' (env: $*): exit $rc, output '$out', fence '$fence', content '$content', etcd revision $rev"
		fi
	done <"$work/crontab"
	"$top/scripts/etcd-local.sh" stop "$work/cronetcd"
}

# The crontab lines run inside a namespace: tests/etcd_e2e.sh BUILD_DIR
# --cron-namespace WORK (see section 2).
if [ "${2:-}" = --cron-namespace ]; then
	cron_namespace "$3"
	exit
fi

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

mkdir "$work/cron" && cd "$work/cron" || exit 5
crontab_lines >"$work/crontab"
ns=
[ "$(id -u)" -eq 0 ] || ns=--map-root-user
# shellcheck disable=SC2086 # $ns is one option or none
unshare $ns --mount --net --fork sh "$top/tests/etcd_e2e.sh" "$build" \
    --cron-namespace "$work" >"$work/cron.out" 2>&1
cat "$work/cron.out"
while IFS= read -r l; do
	case $l in
	ok:*) passed=$((passed + 1)) ;;
	FAIL:*) failed=$((failed + 1)) ;;
	esac
done <"$work/cron.out"
if grep -q '^ok: fencedwrite-etcd.1: ' "$work/cron.out" &&
    grep -q '^ok: README.md: ' "$work/cron.out"; then
	ok "crontab lines of fencedwrite-etcd(1) and README.md found and run"
else
	bad "no crontab line run from fencedwrite-etcd(1) or README.md; crontab read:"
	cat "$work/crontab"
fi

# ---- 3. the wrapper's exit codes and messages --------------------------------
"$WRAP" -e "$E" -l jobs/report -- report.txt -- sh -c 'exit 3' >/dev/null 2>&1
rc1=$?
"$WRAP" -e 127.0.0.1:1 -l jobs/report -- report.txt -- echo x >/dev/null 2>&1
rc2=$?
"$WRAP" -e "$E" -- report.txt -- echo x >/dev/null 2>&1
rc3=$?
if [ $rc1 -eq 6 ] && [ $rc2 -eq 7 ] && [ $rc3 -eq 2 ] && [ ! -e report.txt ]; then
	ok "fencedwrite-etcd: CMD failure 6, etcd unreachable 7, usage 2"
else
	bad "fencedwrite-etcd exit codes: $rc1 $rc2 $rc3 (want 6 7 2)"
fi

# A second holder keeps jobs/held until told to let go.
mkfifo held.gate
etcdctl --endpoints="$E" lock jobs/held -- \
    sh -c ': > held.ready; cat held.gate >/dev/null' &
holder=$!
if wait_file held.ready; then
	# A usage error in fencedwrite's options (here after FILE, where
	# fencedwrite takes options too): refused before the wait, so exit 2
	# with fencedwrite's message, not 4 when --lock-timeout expires.
	"$WRAP" -e "$E" -l jobs/held --lock-timeout 3 -- held.txt -q \
	    --no-such-option -- echo x >usage.out 2>&1
	rc=$?
	if [ $rc -eq 2 ] && [ ! -e held.txt ] &&
	    grep -q "^fencedwrite: unknown option '--no-such-option'" usage.out; then
		ok "a usage error in fencedwrite's options: exit 2 before waiting for the lock"
	else
		bad "a usage error in fencedwrite's options, lock held elsewhere: exit $rc (want 2 at once):"
		cat usage.out
	fi
	# A write without -- CMD would read etcdctl's /dev/null: refused at
	# once too, not after the wait.
	"$WRAP" -e "$E" -l jobs/held --lock-timeout 3 -- held.txt \
	    >nocmd.out 2>&1
	rc=$?
	if [ $rc -eq 2 ] && [ ! -e held.txt ] && grep -q "no '-- CMD' after FILE" nocmd.out; then
		ok "a write without -- CMD: exit 2 before waiting for the lock"
	else
		bad "a write without -- CMD, lock held elsewhere: exit $rc (want 2 at once):"
		cat nocmd.out
	fi
	# The lock stays held: the wait ends after 1 s with exit 4 and one line.
	"$WRAP" -e "$E" -l jobs/held --lock-timeout 1 -- held.txt -- \
	    echo x >timeout.out 2>&1
	rc=$?
	if [ $rc -eq 4 ] && [ ! -e held.txt ] && [ "$(wc -l <timeout.out)" -eq 1 ] &&
	    grep -q "^fencedwrite-etcd: etcd lock 'jobs/held' not acquired within 1 s" timeout.out; then
		ok "--lock-timeout 1 while another holder keeps the lock: exit 4, one line, nothing written"
	else
		bad "--lock-timeout 1 while the lock is held: exit $rc (want 4):"
		cat timeout.out
	fi
else
	bad "the second holder never got jobs/held"
fi
echo go >held.gate
wait "$holder"
# The timed-out waiter withdrew from the queue: the next one gets the lock
# at once, not after the 60 s lease of a waiter key left behind.
"$WRAP" -e "$E" -l jobs/held --lock-timeout 10 -- held.txt -- \
    sh -c 'echo "held by $ETCD_LOCK_REV"' >after.out 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(cat held.txt)" = "held by $("$FW" --show held.txt)" ]; then
	ok "after the holder let go, the next run took jobs/held and committed"
else
	bad "after the holder let go: exit $rc, held.txt '$(cat held.txt 2>&1)':"
	cat after.out
fi

# A stale run: fencedwrite's message is there, etcdctl's "Error: exit
# status 1" is not; a real etcd error still is.
"$FW" -q -t 1000000000 stale.txt -- echo "from the future"
"$WRAP" -e "$E" -l jobs/stale -- stale.txt -- echo stale >stale.out 2>&1
rc=$?
"$WRAP" -e "$E" -l jobs/stale -T 99999999999 -- stale.txt -- echo x >ttl.out 2>&1
rc2=$?
if [ $rc -eq 1 ] && grep -q '^fencedwrite: stale token [0-9]* for stale.txt: the fence holds 1000000000$' stale.out &&
    ! grep -q 'Error: exit status' stale.out &&
    [ "$(cat stale.txt)" = "from the future" ] &&
    [ $rc2 -eq 7 ] && grep -q '^Error: etcdserver: too large lease TTL$' ttl.out; then
	ok "stale run: exit 1, fencedwrite's message and no 'Error: exit status'; etcd's own error kept"
else
	bad "stale run exit $rc, too large TTL exit $rc2 (want 1, 7):"
	cat stale.out ttl.out
fi

# A token inherited from the caller's environment (a run under another
# lock, an exported variable) never stands in for the lock's own revision:
# etcdctl 3.4 lets the inherited ETCD_LOCK_REV win over its own.
ETCD_LOCK_REV=999999999 ETCD_LOCK_KEY=jobs/other/1 "$WRAP" -e "$E" \
    -l jobs/inherit -- inherit.txt -- sh -c 'echo "$ETCD_LOCK_REV"' \
    >inherit.out 2>&1
rc=$?
tok=$("$FW" --show inherit.txt 2>/dev/null)
if [ $rc -eq 0 ] && [ "$tok" = "$(cat inherit.txt)" ] && [ "$tok" -lt 999999999 ]; then
	ok "an inherited ETCD_LOCK_REV is not the token: the fence holds the lock's revision $tok"
else
	bad "inherited ETCD_LOCK_REV: exit $rc, fence '$tok', file '$(cat inherit.txt 2>&1)':"
	cat inherit.out
fi

# --version: the fencedwrite beside it tells the release.
fwv=$("$FW" --version | head -n 1)
want=$(printf 'fencedwrite-etcd %s\nLicense: MIT' "${fwv##* }")
out=$("$WRAP" --version 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = "$want" ]; then
	ok "--version: '$(echo "$out" | head -n 1)' and its license"
else
	bad "--version: exit $rc, '$out' (want '$want')"
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
