#!/bin/bash
# SPDX-License-Identifier: MIT
# A three-machine NFS lab under qemu (software emulation): a server that
# exports a tmpfs over NFSv3 (lockd, statd) and NFSv4.2, and two clients,
# client1 and client2, that mount it as a fleet would.  The machines boot
# Debian's own kernel with a small initramfs built here; their root is this
# host's / shared read-only over 9p under a tmpfs overlay, so they run this
# host's NFS tools and this build by the same paths.  Their network is qemu
# datagrams over unix-domain sockets between the machines: no tap device,
# nothing on any interface of this host.
#
# usage:
#   lab.sh up DIR                  boot the lab in DIR (a new, short path)
#   lab.sh run DIR HOST CMD...     run CMD on HOST (server, client1, client2);
#                                  its stdout, stderr and exit status come back
#   lab.sh freeze|resume|kill DIR HOST
#                                  stop or continue HOST's whole machine, or
#                                  end it at once (qemu monitor stop/cont/quit)
#   lab.sh restart DIR HOST        boot a client again (after kill, or ending
#                                  it first) and mount the server again
#   lab.sh down DIR                end every machine and remove DIR's sockets
#
# Client mounts: /mnt/v3 (vers=3, lockd), /mnt/v4 (vers=4.2), /mnt/nolock
# (vers=3,nolock) and /mnt/locall (vers=3,local_lock=all); all show the
# same directory.  Environment: NFS_LAB_DIR (kernel, busybox and the cached
# initramfs; default build/nfs of this tree, filled by
# scripts/ensure-deps.sh nfs), LAB_TIMEOUT (seconds a command or the boot
# may take; default 600).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
assets=${NFS_LAB_DIR:-$top/build/nfs}
case $assets in /*) ;; *) assets=$top/$assets ;; esac
timeout_s=${LAB_TIMEOUT:-600}
hosts="server client1 client2"

die() { echo "lab: $*" >&2; exit 5; }

# The modules the guests need, in load order, with the parameters that keep
# the lab short: lockd's grace period of 10 s instead of 90.
MODULES="virtio_pci virtio_net virtio_console 9p 9pnet_virtio overlay nfsv3
nfsv4 nfsd"

kernel_version() {
	local m
	for m in "$assets"/kernel/lib/modules/*; do
		[ -f "$assets/kernel/boot/vmlinuz-${m##*/}" ] || continue
		echo "${m##*/}"
		return 0
	done
	return 1
}

# The initramfs: busybox, the modules and an /init that mounts the shared
# root; built once per kernel and kept in the assets directory.
build_initramfs() {
	local kv=$1 out=$2 tmp m line mod
	[ -s "$out" ] && [ "$out" -nt "$here/lab.sh" ] && return 0
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/labinit.XXXXXX") || return 1
	mkdir -p "$tmp/bin" "$tmp/lib/modules" "$tmp/proc" "$tmp/sys" \
	    "$tmp/dev" "$tmp/lower" "$tmp/rw" "$tmp/newroot" || return 1
	cp "$assets/busybox/bin/busybox" "$tmp/bin/busybox" || return 1
	depmod -b "$assets/kernel" "$kv" || return 1
	: >"$tmp/modules.list"
	for m in $MODULES; do
		modprobe -d "$assets/kernel" -S "$kv" --show-depends "$m" ||
		    return 1
	done | while read -r line; do
		case $line in insmod\ *) ;; *) continue ;; esac
		mod=${line#insmod }
		mod=${mod%% *}
		grep -qxF "$(basename "$mod")" "$tmp/modules.list" && continue
		cp "$mod" "$tmp/lib/modules/" || exit 1
		basename "$mod" >>"$tmp/modules.list"
	done || return 1
	cat >"$tmp/init" <<-'EOF'
	#!/bin/busybox sh
	/bin/busybox --install -s /bin
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev
	while read -r m; do
		case $m in
		lockd.ko) insmod /lib/modules/$m nlm_grace_period=10 ;;
		*) insmod /lib/modules/$m ;;
		esac || echo "init: insmod $m failed"
	done </modules.list
	for w in $(cat /proc/cmdline); do
		case $w in lab.*=*) k=${w%%=*}; eval "${k#lab.}=\${w#*=}" ;; esac
	done
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /lower &&
	mount -t tmpfs -o size=128m tmpfs /rw &&
	mkdir /rw/upper /rw/work &&
	mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \
	    overlay /newroot &&
	mount -t tmpfs tmpfs /newroot/run &&
	mount -t tmpfs tmpfs /newroot/tmp &&
	case $top in
	/tmp/*|/run/*)   # the project, hidden by those: back by its path
		mkdir -p "/newroot$top" &&
		mount --bind "/lower$top" "/newroot$top" ;;
	esac &&
	mkdir -p "/newroot$spool" &&
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 spool \
	    "/newroot$spool" || { echo "init: no root"; exec sh; }
	mkdir -p /newroot/lab && cp /bin/busybox /newroot/lab/busybox
	mount --move /dev /newroot/dev
	mount --move /proc /newroot/proc
	mount --move /sys /newroot/sys
	exec switch_root /newroot /bin/bash "$init" boot "$role" "$spool"
	EOF
	chmod 755 "$tmp/init"
	(cd "$tmp" && find . | "$tmp/bin/busybox" cpio -o -H newc 2>/dev/null |
	    gzip -1 >"$out.tmp") && mv "$out.tmp" "$out"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

# QMP, the machine-readable qemu monitor, on the machine's unix socket:
# the commands in order, then qemu's answers.
qmp() {
	local sock=$1/$2/qmp.sock cmd
	shift 2
	[ -S "$sock" ] || return 1
	{
		echo '{"execute":"qmp_capabilities"}'
		for cmd in "$@"; do printf '{"execute":"%s"}\n' "$cmd"; done
	} | timeout 20 socat -t 10 - "UNIX-CONNECT:$sock" 2>/dev/null
}

host_dir() {
	case $2 in
	server|client1|client2) echo "$1/$2" ;;
	*) echo "lab: unknown host '$2'" >&2; exit 2 ;;
	esac
}

# Adds to net the qemu options for one end of a link: datagrams between
# unix sockets LOCAL and REMOTE in DIR/net.
nic() {
	local id=$1 here_end=$dir/net/$2 there=$dir/net/$3 mac=52:54:00:00:$4
	net+=(-netdev "dgram,id=$id,local.type=unix,local.path=$here_end,remote.type=unix,remote.path=$there"
	      -device "virtio-net-pci,netdev=$id,mac=$mac")
}

start_vm() {
	local dir=$1 role=$2 kv=$3 d=$1/$2 net
	mkdir -p "$d" || return 1
	[ -p "$d/cmd.in" ] || mkfifo "$d/cmd.in" || return 1
	[ -p "$d/cmd.out" ] || mkfifo "$d/cmd.out" || return 1
	# Point-to-point links: server eth0 <-> client1, server eth1 <-> client2.
	net=()
	case $role in
	server) nic n1 s1 c1 01:01; nic n2 s2 c2 02:01 ;;
	client1) nic n1 c1 s1 01:02 ;;
	client2) nic n1 c2 s2 02:02 ;;
	esac
	qemu-system-x86_64 -accel tcg -machine pc -cpu max -smp 1 -m 512 \
	    -nodefaults -no-user-config -display none -no-reboot \
	    -kernel "$assets/kernel/boot/vmlinuz-$kv" \
	    -initrd "$assets/initramfs-$kv.cpio.gz" \
	    -append "console=ttyS0 loglevel=4 panic=-1 mitigations=off lab.role=$role lab.spool=$dir/spool lab.init=$here/guest.sh lab.top=$top" \
	    -serial "file:$d/console.log" \
	    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	    -virtfs "local,path=$dir/spool,mount_tag=spool,security_model=none,multidevs=remap" \
	    -device virtio-serial-pci \
	    -chardev "pipe,id=cmd,path=$d/cmd" \
	    -device virtserialport,chardev=cmd,name=lab.cmd \
	    "${net[@]}" \
	    -qmp "unix:$d/qmp.sock,server=on,wait=off" \
	    -pidfile "$d/pid" -daemonize
}

# Wait for a file, up to the timeout; polls slowly so as not to steal CPU
# from the machines.
wait_file() {
	local f=$1 limit=$2 n=0
	while [ ! -e "$f" ]; do
		[ $n -ge $((limit * 5)) ] && return 1
		sleep 0.2
		n=$((n + 1))
	done
}

vm_alive() {
	local p
	p=$(cat "$1/$2/pid" 2>/dev/null) || return 1
	kill -0 "$p" 2>/dev/null
}

cmd_down() {
	local dir=$1 h p n
	for h in $hosts; do
		[ -d "$dir/$h" ] || continue
		qmp "$dir" "$h" quit >/dev/null 2>&1
	done
	for h in $hosts; do
		p=$(cat "$dir/$h/pid" 2>/dev/null) || continue
		n=0
		while kill -0 "$p" 2>/dev/null && [ $n -lt 50 ]; do
			sleep 0.1
			n=$((n + 1))
		done
		kill -KILL "$p" 2>/dev/null
		rm -f "$dir/$h/pid" "$dir/$h/qmp.sock" "$dir/$h/cmd.in" \
		    "$dir/$h/cmd.out"
	done
	rm -rf "$dir/net" "$dir/spool/jobs"
	return 0
}

cmd_up() {
	local dir=$1 kv t0 h
	case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
	[ ${#dir} -le 60 ] || die "DIR $dir: keep it under 60 characters (unix socket paths)"
	case $dir in *[!A-Za-z0-9/._-]*) die "DIR $dir: only [A-Za-z0-9/._-] please" ;; esac
	kv=$(kernel_version) || die "no kernel in $assets: run scripts/ensure-deps.sh nfs"
	if ! command -v qemu-system-x86_64 >/dev/null ||
	    ! command -v socat >/dev/null; then
		die "qemu-system-x86_64 or socat missing: run scripts/ensure-deps.sh nfs"
	fi
	mkdir -p "$dir/spool/jobs" "$dir/net" || die "mkdir $dir"
	build_initramfs "$kv" "$assets/initramfs-$kv.cpio.gz" ||
	    die "could not build the initramfs in $assets"
	# Whatever has started is ended if the boot fails or is interrupted.
	trap 'cmd_down "$dir"; exit 130' INT TERM HUP
	t0=$(date +%s%N)
	for h in $hosts; do
		rm -f "$dir/spool/$h.ready"
		start_vm "$dir" "$h" "$kv" || { cmd_down "$dir"; die "qemu for $h did not start"; }
	done
	for h in $hosts; do
		if ! wait_file "$dir/spool/$h.ready" "$timeout_s"; then
			echo "lab: $h not ready after $timeout_s s; its console:" >&2
			tail -n 30 "$dir/$h/console.log" >&2
			cmd_down "$dir"
			exit 5
		fi
	done
	for h in client1 client2; do
		if ! cmd_run "$dir" "$h" /bin/bash "$here/guest.sh" mounts; then
			cmd_down "$dir"
			die "$h could not mount the server"
		fi
	done
	trap - INT TERM HUP
	echo "lab: up in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

# A client booted again, as after a power cut: the old qemu ended if still
# there, its end of the network socket removed (the new qemu binds it
# again; the server's end stays), then ready and mounted as at lab.sh up.
cmd_restart() {
	local dir=$1 host=$2 kv p t0
	case $host in client1|client2) ;; *) die "restart: clients only" ;; esac
	kv=$(kernel_version) || die "no kernel in $assets"
	t0=$(date +%s%N)
	if p=$(cat "$dir/$host/pid" 2>/dev/null) && kill -0 "$p" 2>/dev/null; then
		qmp "$dir" "$host" quit >/dev/null
		wait_pid_gone "$p"
	fi
	rm -f "$dir/$host/pid" "$dir/$host/qmp.sock" "$dir/spool/$host.ready" \
	    "$dir/net/c${host#client}"
	start_vm "$dir" "$host" "$kv" || die "qemu for $host did not start"
	if ! wait_file "$dir/spool/$host.ready" "$timeout_s"; then
		tail -n 30 "$dir/$host/console.log" >&2
		die "$host not ready after $timeout_s s"
	fi
	cmd_run "$dir" "$host" /bin/bash "$here/guest.sh" mounts ||
	    die "$host could not mount the server"
	echo "lab: $host up again in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

# Waits (up to 5 s, polling) for process PID to end, then ends it.
wait_pid_gone() {
	local n=0
	while kill -0 "$1" 2>/dev/null && [ $n -lt 50 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	kill -KILL "$1" 2>/dev/null
}

# The command goes into a job directory on the spool; its name goes down
# the machine's virtio-serial port, where the machine's init blocks reading.
cmd_run() {
	local dir=$1 host=$2 d id job n=0 delay=0.02 rc
	shift 2
	d=$(host_dir "$dir" "$host") || exit 2
	if [ ! -p "$d/cmd.in" ] || ! vm_alive "$dir" "$host"; then
		die "$host is not running"
	fi
	id=$host.$$.$(date +%s%N)
	job=$dir/spool/jobs/$id
	mkdir -p "$job" || die "mkdir $job"
	printf 'exec' >"$job/cmd"
	printf ' %q' "$@" >>"$job/cmd"
	printf '\n' >>"$job/cmd"
	echo "$id" >"$d/cmd.in"
	# The done marker is renamed into place after out and err are closed.
	while [ ! -e "$job/rc" ]; do
		sleep "$delay"
		n=$((n + 1))
		case $n in 10) delay=0.05 ;; 40) delay=0.2 ;; esac
		if [ $n -gt $((timeout_s * 5 + 40)) ]; then
			echo "lab: $host: no answer after $timeout_s s: $*" >&2
			return 124
		fi
		if [ $((n % 25)) -eq 0 ] && ! vm_alive "$dir" "$host"; then
			echo "lab: $host stopped running during: $*" >&2
			return 5
		fi
	done
	cat "$job/out"
	cat "$job/err" >&2
	rc=$(cat "$job/rc")
	rm -rf "$job"
	return "$rc"
}

[ $# -ge 2 ] || { sed -n '/^# usage:/,/^# Client/p' "$0" >&2; exit 2; }
action=$1
dir=$2
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
shift 2
case $action in
up) cmd_up "$dir" ;;
restart)
	[ $# -eq 1 ] || { echo "usage: lab.sh restart DIR HOST" >&2; exit 2; }
	cmd_restart "$dir" "$1" ;;
down) cmd_down "$dir" ;;
run)
	[ $# -ge 2 ] || { echo "usage: lab.sh run DIR HOST CMD..." >&2; exit 2; }
	cmd_run "$dir" "$@" ;;
freeze|resume|kill)
	[ $# -eq 1 ] || { echo "usage: lab.sh $action DIR HOST" >&2; exit 2; }
	host_dir "$dir" "$1" >/dev/null || exit 2
	case $action in
	# Done only when qemu itself reports the machine paused or running.
	freeze) qmp "$dir" "$1" stop query-status | grep -q '"status": "paused"' ;;
	resume) qmp "$dir" "$1" cont query-status | grep -q '"status": "running"' ;;
	kill) p=$(cat "$dir/$1/pid" 2>/dev/null)
	      qmp "$dir" "$1" quit >/dev/null
	      [ -n "$p" ] && wait_pid_gone "$p"
	      rm -f "$dir/$1/pid"; true ;;
	esac ;;
*) echo "lab.sh: unknown action '$action'" >&2; exit 2 ;;
esac
