#!/bin/bash
# SPDX-License-Identifier: MIT
# The lab machines' side of tests/nfs/lab.sh; runs inside the guests only.
#   guest.sh boot ROLE SPOOL   process 1: network, NFS daemons, then serve
#                              the commands that lab.sh run sends
#   guest.sh mounts            (clients) mount the server four ways
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C LC_ALL=C
bb=/lab/busybox

log() { echo "guest: $*" >/dev/console 2>/dev/null; }

network() {
	local role=$1
	$bb hostname "$role"
	$bb ip link set lo up
	{
		echo "127.0.0.1 localhost"
		case $role in
		server) echo "10.77.1.2 client1"; echo "10.77.2.2 client2"
		        echo "10.77.1.1 server" ;;
		client1) echo "10.77.1.1 server"; echo "10.77.1.2 client1" ;;
		client2) echo "10.77.2.1 server"; echo "10.77.2.2 client2" ;;
		esac
	} >/etc/hosts
	case $role in
	server)
		$bb ip addr add 10.77.1.1/24 dev eth0
		$bb ip addr add 10.77.2.1/24 dev eth1
		$bb ip link set eth0 up
		$bb ip link set eth1 up ;;
	client1)
		$bb ip addr add 10.77.1.2/24 dev eth0
		$bb ip link set eth0 up ;;
	client2)
		$bb ip addr add 10.77.2.2/24 dev eth0
		$bb ip link set eth0 up ;;
	esac
}

rpc_daemons() {
	mkdir -p /run/rpcbind /var/lib/nfs/sm /var/lib/nfs/sm.bak
	rpcbind -w || log "rpcbind failed"
	rpc.statd --no-notify || log "rpc.statd failed"
}

server() {
	mkdir -p /export
	mount -t tmpfs -o size=200m,mode=1777 tmpfs /export
	# A v3 (NLM) lock on a file a v4 client holds a delegation for stalls
	# while the server recalls it: no leases, no delegations.
	echo 0 >/proc/sys/fs/leases-enable
	mount -t nfsd nfsd /proc/fs/nfsd
	rpc_daemons
	echo "/export 10.77.0.0/16(rw,sync,no_subtree_check,no_root_squash,insecure,fsid=0)" >/etc/exports
	exportfs -ra || log "exportfs failed"
	rpc.mountd || log "rpc.mountd failed"
	rpc.nfsd -G 10 -L 10 4 || log "rpc.nfsd failed"
	echo Y >/proc/fs/nfsd/v4_end_grace 2>/dev/null
	# lockd refuses new locks for its grace period (10 s, lab.sh's initramfs).
	sleep 11
}

mounts() {
	mkdir -p /mnt/v3 /mnt/v4 /mnt/nolock /mnt/locall || return 1
	# nosharecache: without it the nolock and local_lock=all mounts share
	# one superblock and both show the options of whichever came first.
	mount -t nfs -o vers=3 server:/export /mnt/v3 &&
	mount -t nfs4 -o vers=4.2 server:/ /mnt/v4 &&
	mount -t nfs -o vers=3,nolock,nosharecache server:/export /mnt/nolock &&
	mount -t nfs -o vers=3,local_lock=all,nosharecache server:/export \
	    /mnt/locall
}

job() {
	local spool=$1 id=$2 d
	d=$spool/jobs/$id
	[ -f "$d/cmd" ] || return
	(cd / && exec /bin/bash "$d/cmd" >"$d/out" 2>"$d/err" </dev/null)
	echo $? >"$d/rc.tmp"
	mv "$d/rc.tmp" "$d/rc"
}

boot() {
	local role=$1 spool=$2 port id
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	network "$role"
	case $role in
	server) server ;;
	*) rpc_daemons ;;
	esac
	for port in /dev/vport*p1; do break; done
	[ -c "$port" ] || { log "no virtio-serial port"; exec $bb sh; }
	: >"$spool/$role.ready"
	log "$role ready"
	# Block on the port: an idle machine costs no CPU.
	while :; do
		exec 3<"$port"
		while read -r id <&3; do
			job "$spool" "$id" &
		done
		exec 3<&-
		sleep 1
	done
}

case ${1:-} in
boot) boot "$2" "$3" ;;
mounts) mounts ;;
*) echo "usage: guest.sh boot ROLE SPOOL | mounts" >&2; exit 2 ;;
esac
