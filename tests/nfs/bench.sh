#!/bin/bash
# SPDX-License-Identifier: MIT
# The machine runs these commands and expands their variables itself.
# shellcheck disable=SC2016
# Commit latency of the fencedwrite command as a cron job on an NFS client
# sees it: N commits of 4 KiB on client1, on the guest's own tmpfs (the cost
# of emulation alone), NFSv3 (lockd) and NFSv4.2, one after another; then
# the same with client2 committing to the same file at the same time.
# Times are client1's own clock, whole process runs (exec included).
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
