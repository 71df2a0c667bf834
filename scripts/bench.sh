#!/bin/sh
# SPDX-License-Identifier: MIT
# make bench: run bench/fwbench's measurements side by side with their
# baselines and print one table of target against measured.
# usage: scripts/bench.sh BUILD DIR [table|csv|json]
#   DIR: a directory on the disk to measure (created; emptied after)
#   BENCH_LARGE_MB (default 1024), BENCH_ROUNDS (default 5) scale it.
set -eu

build=$(cd "$1" && pwd)
dir=$2
format=${3:-table}
large_mb=${BENCH_LARGE_MB:-1024}
rounds=${BENCH_ROUNDS:-5}
fwb=$build/bench/fwbench
fw=$build/fencedwrite
out=$(mktemp "${TMPDIR:-/tmp}/fwbench.XXXXXX")
tmpfs=
cleanup() {
	[ -z "$tmpfs" ] || umount "$tmpfs" 2>/dev/null || true
	[ -z "$tmpfs" ] || rmdir "$tmpfs" 2>/dev/null || true
	rm -rf "$dir" "$out"
}
trap cleanup EXIT
fresh() { rm -rf "$dir" && mkdir -p "$dir"; }

step() { echo "bench: $*" >&2; }

step "small commits on disk ($dir)"
fresh; "$fwb" small "$dir" "$rounds" 200 4096 >>"$out"
# a tmpfs of our own (root), else /dev/shm
if [ "$(id -u)" -eq 0 ] && tmpfs=$(mktemp -d) && mount -t tmpfs -o size=64m tmpfs "$tmpfs" 2>/dev/null; then
	:
else
	[ -z "$tmpfs" ] || rmdir "$tmpfs"
	tmpfs=
fi
tdir=${tmpfs:-/dev/shm}/fwbench.$$
step "small commits on tmpfs ($tdir)"
rm -rf "$tdir" && mkdir -p "$tdir"
"$fwb" small "$tdir" "$rounds" 1000 4096 | sed 's/^small_/tmpfs_/' >>"$out"
rm -rf "$tdir"
step "lock hold time, 4 KiB against $large_mb MiB"
fresh; "$fwb" hold "$dir" "$rounds" 4096 $((large_mb * 1048576)) >>"$out"
step "$large_mb MiB from a file and through a pipe, fresh and over a file as large, against cp + sync"
fresh; "$fwb" large "$dir" $((large_mb * 1048576)) "$rounds" "$fw" >>"$out"
step "contention: 8 processes against 1"
fresh; "$fwb" contention "$dir" 8 2 3 >>"$out"
step "start-up: the command against a C baseline, as processes"
fresh; "$fwb" startup "$dir" "$rounds" 40 "$fwb" "$fw" >>"$out"
if command -v valgrind >/dev/null 2>&1; then
	step "callgrind: instructions of one 4 KiB commit"
	fresh
	valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
	    --toggle-collect=fw_commit_buffer "$fwb" once "$dir" >/dev/null 2>&1
	ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$dir/cg.out")
	echo "callgrind_ir $((ir / 2)) instructions" >>"$out"   # two commits collected
fi

get() { awk -v k="$1" '$1 == k { print $2 }' "$out"; }
# row: name, target text, comparison (le|ge|none), limit, value, unit
rows() {
	printf '%s\n' \
	"small commit 4 KiB disk / baseline (a)|<= 1.5x|le|1.5|$(get small_ratio_a)|x" \
	"small commit 4 KiB tmpfs / baseline (b)|<= 3x|le|3|$(get tmpfs_ratio_b)|x" \
	"lock hold ${large_mb} MiB / 4 KiB|<= 1.2x|le|1.2|$(get hold_ratio)|x" \
	"${large_mb} MiB from a file / cp+sync|<= 1.1x|le|1.1|$(get large_file_ratio)|x" \
	"${large_mb} MiB through a pipe / cp+sync|<= 1.1x|le|1.1|$(get large_pipe_ratio)|x" \
	"${large_mb} MiB over as large a file / cp+sync|<= 1.1x|le|1.1|$(get replace_file_ratio)|x" \
	"peak RSS, file input|<= 4096 KiB|le|4096|$(get large_file_rss_kib)|KiB" \
	"peak RSS, pipe (whole pipeline)|<= 4096 KiB|le|4096|$(get large_pipe_rss_kib)|KiB" \
	"8 processes / 1, commits per second|>= 0.8x|ge|0.8|$(get contention_ratio)|x" \
	"CPU of blocked waiters / wall|<= 0.05|le|0.05|$(get waiting_cpu_blocking)|" \
	"CPU of waiters with -w / wall|(polls)|none|0|$(get waiting_cpu_timeout)|" \
	"command 1 byte / C baseline process|<= 1.2x|le|1.2|$(get startup_ratio)|x" \
	"instructions, one 4 KiB commit|recorded|none|0|$(get callgrind_ir)|"
}
verdict() {
	awk -v c="$1" -v l="$2" -v v="$3" 'BEGIN {
		if (v == "") print "n/a";
		else if (c == "le") print (v + 0 <= l + 0) ? "met" : "missed";
		else if (c == "ge") print (v + 0 >= l + 0) ? "met" : "missed";
		else print "-" }'
}

case $format in
csv)
	echo "measure,target,measured,unit,verdict"
	rows | while IFS='|' read -r n t c l v u; do
		echo "\"$n\",\"$t\",$v,$u,$(verdict "$c" "$l" "$v")"
	done
	;;
json)
	echo "["
	rows | while IFS='|' read -r n t c l v u; do
		echo "  {\"measure\": \"$n\", \"target\": \"$t\", \"measured\": ${v:-null}, \"unit\": \"$u\", \"verdict\": \"$(verdict "$c" "$l" "$v")\"},"
	done | sed '$ s/,$//'
	echo "]"
	;;
*)
	printf '%-44s %-14s %-12s %s\n' "measure" "target" "measured" "verdict"
	rows | while IFS='|' read -r n t c l v u; do
		printf '%-44s %-14s %-12s %s\n' "$n" "$t" "$v $u" "$(verdict "$c" "$l" "$v")"
	done
	echo
	echo "raw figures:"
	sed 's/^/  /' "$out"
	;;
esac
