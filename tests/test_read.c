/* SPDX-License-Identifier: MIT */
/*
 * fw_read (run under faults.so): one whole version of FILE or nothing,
 * through the ESTALE and ENOENT an NFS reader meets while another host
 * replaces FILE.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

static void (*arm)(const char *call, int nth, int err);
static int (*fired)(void);

static int load_shim(void **state)
{
	(void)state;
	arm = (void (*)(const char *, int, int))dlsym(RTLD_DEFAULT,
	                                              "fwt_fault_arm");
	fired = (int (*)(void))dlsym(RTLD_DEFAULT, "fwt_fault_fired");
	if (!arm || !fired)
		fail_msg("faults.so is not preloaded: run through make check");
	return 0;
}

/* Read PATH with fw_read into a fresh file; its bytes, malloc'ed. */
static char *read_version(const char *path, int *rc, struct fw_result *res,
                          size_t *len)
{
	int out = open("out", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char *got;

	assert_true(out >= 0);
	*rc = fw_read(path, out, NULL, res);
	close(out);
	got = fwt_slurp("out", len);
	assert_non_null(got);
	return got;
}

/* Content large enough to take many reads, each position distinct. */
static char *pattern(size_t len, char tag)
{
	char *p = malloc(len + 1);

	assert_non_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (char)('a' + (i * 7 + (size_t)tag) % 26);
	p[len] = '\0';
	return p;
}

static void plain_read_gives_the_file(void **state)
{
	struct fw_result res;
	size_t len;
	char *got;
	int rc;

	(void)state;
	assert_int_equal(fw_commit_buffer("f", 1, "one\n", 4, NULL, &res),
	                 FW_OK);
	arm(NULL, 0, 0);
	got = read_version("f", &rc, &res, &len);
	assert_int_equal(rc, FW_OK);
	assert_string_equal(got, "one\n");
	assert_int_equal(res.code, FW_OK);
	free(got);
}

/* ESTALE in the middle: what was read so far is dropped, the read starts
   again, and the output holds the version once, whole. */
static void stale_handle_mid_read_starts_again(void **state)
{
	size_t n = 1 << 20, len;
	char *data = pattern(n, 'x'), *got;
	struct fw_result res;
	int rc;

	(void)state;
	assert_int_equal(fw_commit_buffer("f", 1, data, n, NULL, &res), FW_OK);
	arm("read", 3, ESTALE);
	got = read_version("f", &rc, &res, &len);
	assert_int_equal(fired(), 1);
	assert_int_equal(rc, FW_OK);
	assert_int_equal(len, n);
	assert_memory_equal(got, data, n);
	free(got);
	/* On the open too, and ENOENT while a rename is half done. */
	arm("openat", 1, ESTALE);
	got = read_version("f", &rc, &res, &len);
	assert_int_equal(fired(), 1);
	assert_int_equal(rc, FW_OK);
	assert_int_equal(len, n);
	free(got);
	arm("openat", 1, ENOENT);
	got = read_version("f", &rc, &res, &len);
	assert_int_equal(fired(), 1);
	assert_int_equal(rc, FW_OK);
	assert_int_equal(len, n);
	free(got);
	free(data);
	arm(NULL, 0, 0);
}

/* Retried for a bounded time only, then a clear error and no output. */
static void endless_stale_handles_fail_with_nothing_written(void **state)
{
	struct fw_result res;
	size_t len;
	char *got;
	int rc;

	(void)state;
	assert_int_equal(fw_commit_buffer("f", 1, "one\n", 4, NULL, &res),
	                 FW_OK);
	arm("read", -2, ESTALE);   /* every read but the first */
	got = read_version("f", &rc, &res, &len);
	assert_true(fired() > 1);
	assert_int_equal(rc, FW_SYSTEM);
	assert_int_equal(res.sys_errno, ESTALE);
	assert_non_null(strstr(res.message, "read(f): Stale file handle"));
	assert_non_null(strstr(res.message, "attempts"));
	assert_int_equal(len, 0);
	free(got);
	arm(NULL, 0, 0);
	/* Absent for good is the same. */
	got = read_version("absent", &rc, &res, &len);
	assert_int_equal(rc, FW_SYSTEM);
	assert_int_equal(res.sys_errno, ENOENT);
	assert_int_equal(len, 0);
	free(got);
}

static void links_and_other_files_are_refused(void **state)
{
	struct fw_result res;
	size_t len;
	char *got;
	int rc;

	(void)state;
	fwt_spit("target", "secret\n");
	assert_int_equal(symlink("target", "link"), 0);
	arm(NULL, 0, 0);
	got = read_version("link", &rc, &res, &len);
	assert_int_equal(rc, FW_UNSAFE);
	assert_non_null(strstr(res.message, "symbolic link"));
	assert_int_equal(len, 0);
	free(got);
	assert_int_equal(mkdir("dir", 0755), 0);
	got = read_version("dir", &rc, &res, &len);
	assert_int_equal(rc, FW_UNSAFE);
	assert_int_equal(len, 0);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(plain_read_gives_the_file),
		T(stale_handle_mid_read_starts_again),
		T(endless_stale_handles_fail_with_nothing_written),
		T(links_and_other_files_are_refused),
	};
	return cmocka_run_group_tests_name("read", tests, load_shim, NULL);
}
