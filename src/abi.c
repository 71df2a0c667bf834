/* SPDX-License-Identifier: MIT */
/*
 * abi.c - what a program built against an older header may rely on.
 *
 * The structures of fencedwrite.h are allocated by callers, so their size
 * and layout are part of the ABI: a library that wrote one field more than
 * an old program allocated would corrupt that program's memory.  The sizes
 * are pinned here, where a field added outside the reserve breaks the
 * build at once rather than a program in the field; make abi-check then
 * compares every offset with the recorded baseline.
 */
#include <stddef.h>

#include "fencedwrite.h"

const char *fw_version(void)
{
	return FW_VERSION;
}

/* The sizes on LP64 targets (x86-64, arm64, ...), where the baseline is
   recorded.  A new field takes its bytes from the structure's reserved
   array: the size stays. */
#if defined(__LP64__)
_Static_assert(sizeof(struct fw_opts) == 104, "struct fw_opts changed size");
_Static_assert(sizeof(struct fw_result) == 1112,
               "struct fw_result changed size");
_Static_assert(sizeof(struct fw_fence_info) == 144,
               "struct fw_fence_info changed size");
_Static_assert(sizeof(struct fw_status) == 512,
               "struct fw_status changed size");
_Static_assert(sizeof(struct fw_mount_info) == 2152,
               "struct fw_mount_info changed size");
_Static_assert(sizeof(struct fw_doctor_report) == 2256,
               "struct fw_doctor_report changed size");
#endif
