#!/bin/sh
# SPDX-License-Identifier: MIT
# make check's steps, in order, with the NFS lab running beside them: the
# lab spends much of its time waiting (boots, leases, grace periods) and
# the suites much of theirs in fsync, so the two overlap well on two
# cores.  The lab's output is printed when it ends; the first failing
# step stops everything (the lab is torn down by its own trap).
# usage: scripts/check.sh BUILD_DIR STEP...   (STEP: a make target)
set -u

build=$1
shift
make=${MAKE:-make}
log=$build/check-nfs.log

# A session of its own, so that stopping it reaches the lab's scripts and
# its virtual machines, not this script.
setsid "$make" --no-print-directory check-nfs >"$log" 2>&1 &
lab=$!

stop_lab() {
	kill -TERM -- "-$lab" 2>/dev/null
	wait "$lab"
	echo "---- the NFS lab (stopped) ----"
	cat "$log"
}
trap 'stop_lab; exit 130' INT TERM HUP

for step in "$@"; do
	if ! "$make" --no-print-directory "$step"; then
		echo "check: FAILED: make $step"
		stop_lab
		exit 1
	fi
done

wait "$lab"
rc=$?
echo "---- the NFS lab (make check-nfs, run beside the steps above) ----"
cat "$log"
if [ "$rc" -ne 0 ]; then
	echo "check: FAILED: make check-nfs"
	exit 1
fi
echo "check: every step passed"
