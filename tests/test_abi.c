/* SPDX-License-Identifier: MIT */
/*
 * What a program built against an older header relies on: the library's
 * version at run time, structures whose reserve is zeroed by every call
 * that fills them (a later field's zero is the old behaviour), options
 * zeroed by hand that work, and the NFS client facts fw_doctor reports.
 * make abi-check holds sizes, offsets and symbols to the recorded baseline.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "internal.h"   /* fw_nfs_lease, fw_nfs_recover_lost_locks */

static int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

#define RESERVE_IS_ZERO(s) all_zero((s).reserved, sizeof((s).reserved))

static void version_at_run_time_is_the_headers(void **state)
{
	char want[32];

	(void)state;
	snprintf(want, sizeof(want), "%d.%d.%d", FW_VERSION_MAJOR,
	         FW_VERSION_MINOR, FW_VERSION_PATCH);
	assert_string_equal(fw_version(), want);
	assert_string_equal(fw_version(), FW_VERSION);
}

/* Garbage in the reserve of every structure the library fills must come
   back zero: a later library reading a field from there in an old
   program's structure must find "not set". */
static void every_filled_structure_has_its_reserve_zeroed(void **state)
{
	struct fw_result res;
	struct fw_fence_info info;
	struct fw_status st;
	struct fw_doctor_report rep;
	struct fw_opts o;

	(void)state;
	memset(&o, 0x5a, sizeof(o));
	fw_opts_init(&o);
	assert_true(all_zero(&o.reserved, sizeof(o.reserved)));
	assert_int_equal(o.timeout_ms, -1);

	memset(&res, 0x5a, sizeof(res));
	assert_int_equal(fw_commit_buffer("f", 3, "x\n", 2, NULL, &res), FW_OK);
	assert_true(RESERVE_IS_ZERO(res));
	memset(&res, 0x5a, sizeof(res));
	assert_int_equal(fw_commit_buffer("f", 2, "y\n", 2, NULL, &res),
	                 FW_STALE);
	assert_true(RESERVE_IS_ZERO(res));
	assert_true(res.fence_token == 3 && res.message[0]);

	memset(&info, 0x5a, sizeof(info));
	assert_int_equal(fw_show("f", NULL, &info, &res), FW_OK);
	assert_true(RESERVE_IS_ZERO(info) && info.token == 3);

	memset(&st, 0x5a, sizeof(st));
	assert_int_equal(fw_verify("f", NULL, &st, &res), FW_OK);
	assert_true(RESERVE_IS_ZERO(st) && RESERVE_IS_ZERO(st.fence));
	assert_true(st.fence.token == 3 && st.verdict == FW_VERIFY_SAME);

	memset(&rep, 0x5a, sizeof(rep));
	assert_int_equal(fw_doctor("f", NULL, &rep, &res), FW_OK);
	assert_true(RESERVE_IS_ZERO(rep) && RESERVE_IS_ZERO(rep.mount));
	/* a local disk: no lease, no lost-lock recovery to speak of */
	assert_int_equal(rep.lease_seconds, -1);
	assert_int_equal(rep.recover_lost_locks, -1);
}

/* A caller that zeroes the options instead of calling fw_opts_init gets
   the defaults, but for the lock wait (0: do not wait). */
static void zeroed_options_work(void **state)
{
	struct fw_opts o = { 0 };
	struct fw_result res;
	struct fwt_holder h;

	(void)state;
	assert_int_equal(fw_commit_buffer("f", 1, "a\n", 2, &o, &res), FW_OK);
	fwt_assert_content("f", "a\n");
	fwt_lock_in_child("f.fence", 0, &h);
	assert_int_equal(fw_commit_buffer("f", 2, "b\n", 2, &o, &res),
	                 FW_LOCKED);
	fwt_unlock(&h);
	fwt_assert_content("f", "a\n");
	assert_true(fwt_fence_token("f") == 1);
}

static void nfs_lease_is_read_from_the_mounts_statistics(void **state)
{
	char path[4096];
	char *text;

	(void)state;
	snprintf(path, sizeof(path), "%s/mountstats/client.txt",
	         getenv("FWT_FIXTURES"));
	text = fwt_slurp(path, NULL);
	assert_non_null(text);
	/* the last mount on a point is the one in use */
	assert_int_equal(fw_nfs_lease(text, "/mnt/v4"), 45);
	assert_int_equal(fw_nfs_lease(text, "/mnt/with space"), 10);
	/* NFSv3 has no lease; an unknown mount point none either */
	assert_int_equal(fw_nfs_lease(text, "/mnt/v3"), -1);
	/* an NFSv3 mount over an NFSv4 one has no lease of its own */
	assert_int_equal(fw_nfs_lease(text, "/mnt/hidden"), -1);
	assert_int_equal(fw_nfs_lease(text, "/mnt"), -1);
	/* a mount point too long to read is nobody's: the one before it
	   keeps its own lease, not the long one's */
	assert_int_equal(fw_nfs_lease(text, "/mnt/long"), 77);
	assert_int_equal(fw_nfs_lease(text, "/"), -1);
	assert_int_equal(fw_nfs_lease("", "/mnt/v4"), -1);
	free(text);

	assert_int_equal(fw_nfs_recover_lost_locks("Y\n"), 1);
	assert_int_equal(fw_nfs_recover_lost_locks("N\n"), 0);
	assert_int_equal(fw_nfs_recover_lost_locks(""), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(version_at_run_time_is_the_headers),
		T(every_filled_structure_has_its_reserve_zeroed),
		T(zeroed_options_work),
		T(nfs_lease_is_read_from_the_mounts_statistics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
