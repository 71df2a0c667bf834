#!/bin/bash
# SPDX-License-Identifier: MIT
# The machine runs these commands and expands their variables itself.
# shellcheck disable=SC2016
# Commit latency of the fencedwrite command as a cron job on an NFS client
# sees it: N commits of 4 KiB on client1, on the guest's own tmpfs (the cost
# of emulation alone), NFSv3 (lockd) and NFSv4.2, one after another; then
# the same with client2 committing to the same file at the same time.
# Times are client1's own clock, whole process runs (exec included).
# Then the NFS calls per commit, fencedwrite against a bare durable replace
# (write a temporary file, fsync it, rename it over FILE: dd conv=fsync and
# mv) of the same 4 KiB on the same mount: the client's per-operation RPC
# counters (/proc/self/mountstats) before and after N of each, divided by N.
# Software emulation makes every figure several times slower than on real
# machines: compare the rows with each other, not with production.
#
# usage: tests/nfs/bench.sh BUILD_DIR [N]   (FWT_NFS_LAB=DIR: use a running lab)
set -u

build=$(cd "$1" && pwd) || exit 2
n=${2:-40}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=$here/lab.sh
FW=$build/fencedwrite
[ -x "$FW" ] || { echo "bench-nfs: $FW missing"; exit 2; }

if [ -n "${FWT_NFS_LAB:-}" ]; then
	lab=$FWT_NFS_LAB
	own_lab=false
else
	lab=$(mktemp -d /tmp/fwnfs.XXXXXX) || exit 5
	own_lab=true
fi
cleanup() {
	if $own_lab; then
		"$LAB" down "$lab"
		rm -rf "$lab"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
$own_lab && { "$LAB" up "$lab" || exit 5; }

# Prints one latency in microseconds per commit, tokens FIRST.. on FILE.
commits='
	head -c 4096 /dev/zero >/tmp/payload
	i=0
	while [ $i -lt "$3" ]; do
		s=$(date +%s%N)
		"$1" -q -t $(( $4 + i )) "$2" </tmp/payload
		rc=$?
		e=$(date +%s%N)
		[ $rc -le 1 ] || { echo "exit $rc" >&2; exit 1; }
		echo $(( (e - s) / 1000 ))
		i=$((i + 1))
	done'

stats() {
	sort -n | awk -v what="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { printf "%-28s no data\n", what; exit }
		printf "%-28s %5d %9.1f %9.1f %9.1f %9.1f\n", what, NR,
		    v[1] / 1000, v[int((NR + 1) / 2)] / 1000,
		    v[int(NR * 0.9 + 0.5)] / 1000, v[NR] / 1000 }'
}

printf "%-28s %5s %9s %9s %9s %9s\n" "client1 commits of 4 KiB" n "min ms" \
    "median ms" "p90 ms" "max ms"
run=$$
on() { "$LAB" run "$lab" "$@"; }
on client1 sh -c "$commits" sh "$FW" /tmp/bench.txt "$n" 1 | stats "guest tmpfs (no NFS)"
for v in v3 v4; do
	f=/mnt/$v/bench-$v-$run.txt
	on client1 sh -c "$commits" sh "$FW" "$f" "$n" 1 | stats "$v alone"
done
for v in v3 v4; do
	f=/mnt/$v/bench2-$v-$run.txt
	# client2's tokens run one above client1's: many are stale.
	on client2 sh -c "$commits" sh "$FW" "$f" "$n" 100001 >/dev/null &
	on client1 sh -c "$commits" sh "$FW" "$f" "$n" 100000 | stats "$v, client2 writing too"
	wait
done

# The mount's per-operation RPC counts, "OP COUNT" a line.
rpcs='awk -v m="$1" '"'"'$1 == "device" { on = ($5 == m) } on && /^[ \t]*[A-Z_0-9]+: [0-9]/ { sub(":", "", $1); print $1, $2 }'"'"' /proc/self/mountstats'

# N bare durable replaces (the baseline), timed like the commits above.
bare='
	head -c 4096 /dev/zero >/tmp/payload
	i=0
	while [ $i -lt "$3" ]; do
		s=$(date +%s%N)
		dd if=/tmp/payload of="$2.tmp" bs=4096 conv=fsync 2>/dev/null &&
		    mv "$2.tmp" "$2" || { echo "bare replace failed" >&2; exit 1; }
		e=$(date +%s%N)
		echo $(( (e - s) / 1000 ))
		i=$((i + 1))
	done'

# Calls per commit: CMD (commits or bare) N times on MOUNT/NAME; prints the
# median latency in ms, then "OP PER_COMMIT" for every operation used.
calls() {
	local what=$1 mnt=$2 name=$3
	on client1 sh -c "$rpcs" sh "$mnt" >"$tmp/before"
	on client1 sh -c "$what" sh "$FW" "$mnt/$name" "$n" 1 | sort -n |
	    awk '{ v[NR] = $1 } END { printf "%.1f\n", v[int((NR + 1) / 2)] / 1000 }'
	on client1 sh -c "$rpcs" sh "$mnt" >"$tmp/after"
	awk -v n="$n" 'NR == FNR { b[$1] = $2; next }
	    $2 - b[$1] > 0 { printf "%s %.2f\n", $1, ($2 - b[$1]) / n }' \
	    "$tmp/before" "$tmp/after"
}

tmp=$(mktemp -d) || exit 5
echo
echo "NFS calls per 4 KiB commit on client1 (N=$n each; fencedwrite / bare = write, fsync, rename)"
for v in v3 v4; do
	calls "$commits" "/mnt/$v" "calls-$run.txt" >"$tmp/fw"
	calls "$bare" "/mnt/$v" "bare-$run.txt" >"$tmp/bare"
	printf "%s: median ms fencedwrite %s, bare %s, ratio %s\n" "$v" \
	    "$(head -n 1 "$tmp/fw")" "$(head -n 1 "$tmp/bare")" \
	    "$(awk 'NR == FNR { if (FNR == 1) a = $1; next } FNR == 1 { printf "%.2f", a / $1 }' "$tmp/fw" "$tmp/bare")"
	# One row per operation either side used, with the difference.
	awk 'NR == FNR { if (FNR > 1) f[$1] = $2; next } FNR > 1 { b[$1] = $2 }
	    END { for (o in f) if (!(o in b)) b[o] = 0
	          for (o in b) printf "  %-12s %8.2f %8.2f %+8.2f\n", o, f[o], b[o], f[o] - b[o] }' \
	    "$tmp/fw" "$tmp/bare" | sort -k4,4nr
	awk 'NR == FNR { if (FNR > 1) f += $2; next } FNR > 1 { b += $2 }
	    END { printf "  %-12s %8.2f %8.2f %+8.2f\n", "total", f, b, f - b }' "$tmp/fw" "$tmp/bare"
done
rm -rf "$tmp"
