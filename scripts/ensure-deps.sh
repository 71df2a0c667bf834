#!/bin/sh
# SPDX-License-Identifier: MIT
# Make sure what the build or the tests need is installed.  As root, a
# missing Debian package is installed with apt-get; otherwise the script
# names the package and fails.
# usage: scripts/ensure-deps.sh NEED...
#   NEED: cmocka, mandoc, cppcheck, clang-tidy, shellcheck, valgrind, clang,
#         etcd, nfs, abigail, bash-completion
# nfs: qemu, socat and the host's NFS user-space tools (run inside the
# guests over a read-only share of /; no NFS daemon starts on this host), plus
# Debian's kernel and busybox-static downloaded and unpacked, not installed,
# into NFS_LAB_DIR (default build/nfs), where tests/nfs/lab.sh finds them.
set -eu

NFS_LAB_DIR=${NFS_LAB_DIR:-build/nfs}

have() {
	case $1 in
	cmocka) pkg-config --exists cmocka 2>/dev/null ||
	        [ -f /usr/include/cmocka.h ] ;;
	mandoc|cppcheck|clang-tidy|shellcheck|valgrind|clang)
		command -v "$1" >/dev/null 2>&1 ;;
	bash-completion) [ -f /usr/share/bash-completion/bash_completion ] ;;
	abigail) command -v abidw >/dev/null 2>&1 &&
	         command -v abidiff >/dev/null 2>&1 ;;
	etcd) command -v etcd >/dev/null 2>&1 &&
	      command -v etcdctl >/dev/null 2>&1 ;;
	nfs) command -v qemu-system-x86_64 >/dev/null 2>&1 &&
	     command -v rpc.nfsd >/dev/null 2>&1 &&
	     command -v mount.nfs >/dev/null 2>&1 &&
	     command -v depmod >/dev/null 2>&1 &&
	     command -v socat >/dev/null 2>&1 ;;
	*) echo "ensure-deps: unknown need '$1'" >&2; exit 2 ;;
	esac
}

package() {
	case $1 in
	cmocka) echo "libcmocka-dev pkg-config" ;;
	clang) echo clang ;;
	abigail) echo abigail-tools ;;
	etcd) echo etcd-server etcd-client ;;
	nfs) echo qemu-system-x86 nfs-kernel-server nfs-common kmod socat ;;
	*) echo "$1" ;;
	esac
}

# Debian's kernel and busybox-static, unpacked into $NFS_LAB_DIR: the
# guests boot that kernel, and this host's own kernel stays untouched.
nfs_unpacked() {
	ls "$NFS_LAB_DIR"/kernel/boot/vmlinuz-* >/dev/null 2>&1 &&
	    [ -x "$NFS_LAB_DIR/busybox/bin/busybox" ]
}

unpack_nfs() {
	nfs_unpacked && return 0
	command -v apt-get >/dev/null 2>&1 || return 1
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	    sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1)
	if [ -z "$kpkg" ]; then
		apt-get update -q >/dev/null 2>&1 || return 1
		kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		    sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' |
		    head -n 1)
	fi
	[ -n "$kpkg" ] || return 1
	mkdir -p "$NFS_LAB_DIR/debs" || return 1
	echo "ensure-deps: downloading $kpkg busybox-static into $NFS_LAB_DIR" >&2
	(cd "$NFS_LAB_DIR/debs" && apt-get download -q \
	    -o APT::Sandbox::User=root "$kpkg" busybox-static >/dev/null) ||
	    return 1
	rm -rf "$NFS_LAB_DIR/kernel" "$NFS_LAB_DIR/busybox"
	dpkg-deb -x "$NFS_LAB_DIR"/debs/linux-image-*.deb "$NFS_LAB_DIR/kernel" &&
	    dpkg-deb -x "$NFS_LAB_DIR"/debs/busybox-static_*.deb \
	        "$NFS_LAB_DIR/busybox" || return 1
	rm -rf "$NFS_LAB_DIR/debs"
	nfs_unpacked
}

missing=""
for need in "$@"; do
	have "$need" || missing="$missing $(package "$need")"
done
wants_nfs=false
norec=""
case " $* " in
*" nfs "*) wants_nfs=true norec=--no-install-recommends ;;
esac
finish() {
	$wants_nfs || exit 0
	unpack_nfs && exit 0
	echo "ensure-deps: could not download the guest kernel into $NFS_LAB_DIR" >&2
	exit 1
}
[ -n "$missing" ] || finish

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-deps: missing packages:$missing" >&2
	echo "ensure-deps: install them (e.g. sudo apt-get install$missing) and run again" >&2
	exit 1
fi
echo "ensure-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # word splitting of the package list is wanted
apt-get install -y -q $norec $missing >/dev/null 2>&1 || {
	apt-get update -q >/dev/null 2>&1
	apt-get install -y -q $norec $missing
}
finish
