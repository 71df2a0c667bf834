# SPDX-License-Identifier: MIT
# NFS lab: real NFS (v3 with lockd/statd, v4.2) between three qemu machines
# that boot Debian's kernel; see tests/nfs/README.md.  Not part of check:
# it needs root to install qemu and the NFS tools, and a few minutes.
#
#   make check-nfs    the scenarios, skipped with a message where the lab
#                     cannot be had (no root to install, no packages)
#   make bench-nfs    commit latency on v3 and v4.2 as seen from a client

NFS_LAB  := $(B)/nfs
NFS_LOAD := $(B)/tests/nfsload

.PHONY: check-nfs bench-nfs

$(NFS_LOAD): tests/nfs/nfsload.c tests/history.c tests/history.h \
             src/fencedwrite.h $(STATIC) | $(B)/tests
	$(CC) $(ALL_CFLAGS) -Isrc $(LDFLAGS) -o $@ $< tests/history.c $(STATIC) \
	    $(LDLIBS_LIB)

check-nfs: all-tests $(NFS_LOAD)
	@if NFS_LAB_DIR=$(NFS_LAB) scripts/ensure-deps.sh nfs; then \
	    NFS_LAB_DIR=$(NFS_LAB) timeout 1200 tests/nfs/scenarios.sh $(B); \
	else \
	    echo "nfs: skipped: qemu, the NFS tools or Debian's kernel not installed and not installable here"; \
	fi

bench-nfs: all
	@if NFS_LAB_DIR=$(NFS_LAB) scripts/ensure-deps.sh nfs; then \
	    NFS_LAB_DIR=$(NFS_LAB) timeout 900 tests/nfs/bench.sh $(B); \
	else \
	    echo "bench-nfs: skipped: qemu, the NFS tools or Debian's kernel not installed and not installable here"; \
	fi
