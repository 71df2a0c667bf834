#!/bin/sh
# SPDX-License-Identifier: MIT
# Run a private, single-member etcd on 127.0.0.1 for tests and demos.
#   scripts/etcd-local.sh start DIR [PORT]  start it; DIR/endpoint gets its URL
#   scripts/etcd-local.sh stop DIR           stop it and remove its data
# Every URL is given explicitly so nothing listens beyond loopback; the
# ports are picked among those not in use, with a retry if one is taken
# between the choice and the start.  PORT fixes the client port (2379 is
# what documented examples name), for a network namespace of its own
# where no other etcd can hold it.
set -eu

usage() {
	echo "usage: $0 start DIR [PORT] | stop DIR" >&2
	exit 2
}

free_port() {
	used=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://')
	while :; do
		port=$(( $(od -An -N2 -tu2 /dev/urandom) % 30000 + 20000 ))
		echo "$used" | grep -qx "$port" || { echo "$port"; return; }
	done
}

start() {
	dir=$1
	mkdir -p "$dir"
	for attempt in 1 2 3 4 5; do
		c=${2:-$(free_port)}; p=$(free_port); m=$(free_port)
		rm -rf "$dir/data"
		etcd --name fw-test --data-dir "$dir/data" \
		    --listen-client-urls "http://127.0.0.1:$c" \
		    --advertise-client-urls "http://127.0.0.1:$c" \
		    --listen-peer-urls "http://127.0.0.1:$p" \
		    --initial-advertise-peer-urls "http://127.0.0.1:$p" \
		    --initial-cluster "fw-test=http://127.0.0.1:$p" \
		    --listen-metrics-urls "http://127.0.0.1:$m" \
		    --log-level error >"$dir/etcd.log" 2>&1 &
		echo $! >"$dir/pid"
		# Up to 10 s for the member to answer.
		i=0
		while [ $i -lt 100 ]; do
			if ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$c" \
			    --dial-timeout=1s endpoint health >/dev/null 2>&1; then
				echo "127.0.0.1:$c" >"$dir/endpoint"
				return 0
			fi
			kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
			sleep 0.1
			i=$((i + 1))
		done
		kill "$(cat "$dir/pid")" 2>/dev/null || true
		wait "$(cat "$dir/pid")" 2>/dev/null || true
		echo "etcd-local: attempt $attempt failed:" >&2
		tail -n 3 "$dir/etcd.log" >&2
	done
	return 1
}

stop() {
	dir=$1
	if [ -f "$dir/pid" ]; then
		pid=$(cat "$dir/pid")
		kill "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir/data" "$dir/pid" "$dir/endpoint"
}

[ $# -ge 2 ] || usage
case $1 in
start) [ $# -le 3 ] || usage; start "$2" "${3:-}" ;;
stop) [ $# -eq 2 ] || usage; stop "$2" ;;
*) usage ;;
esac
