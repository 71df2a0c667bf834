/* SPDX-License-Identifier: MIT */
/* Locking: other processes, timeouts, a fence replaced while we wait, and
   the classic-lock fallback (run again under noofd.so). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static int commit(const char *path, uint64_t token, const char *data,
                  long timeout_ms, struct fw_result *res)
{
	struct fw_opts opts;

	fw_opts_init(&opts);
	opts.timeout_ms = timeout_ms;
	return fw_commit_buffer(path, token, data, strlen(data), &opts, res);
}

static void busy_fence_gives_locked_and_changes_nothing(void **state)
{
	struct fwt_holder h;
	struct fw_result res;

	(void)state;
	assert_int_equal(commit("f", 1, "one", -1, &res), FW_OK);
	for (int classic = 0; classic <= 1; classic++) {
		char *content;

		fwt_lock_in_child("f.fence", classic, &h);
		assert_int_equal(commit("f", 2, "two", 0, &res), FW_LOCKED);
		assert_non_null(strstr(res.message, "locked"));
		assert_int_equal(commit("f", 2, "two", 50, &res), FW_LOCKED);
		assert_int_equal(fw_delete("f", 2, &(struct fw_opts){
		        .timeout_ms = 0 }, &res), FW_LOCKED);
		fwt_unlock(&h);
		content = fwt_slurp("f", NULL);
		assert_string_equal(content, "one");
		free(content);
		assert_true(fwt_fence_token("f") == 1);
		assert_int_equal(fwt_count_tmp("."), 0);
	}
	assert_int_equal(commit("f", 2, "two", 0, &res), FW_OK);
}

struct job {
	const char *path;
	uint64_t token;
	const char *data;
	int rc;
	struct fw_result res;
};

static void *commit_job(void *arg)
{
	struct job *j = arg;

	j->rc = commit(j->path, j->token, j->data, -1, &j->res);
	return NULL;
}

static void waiting_writer_commits_once_the_holder_lets_go(void **state)
{
	struct fwt_holder h;
	struct fw_result res;
	struct job j = { "w", 2, "second", -1, { 0 } };
	pthread_t t;

	(void)state;
	assert_int_equal(commit("w", 1, "first", -1, &res), FW_OK);
	fwt_lock_in_child("w.fence", 0, &h);
	assert_int_equal(pthread_create(&t, NULL, commit_job, &j), 0);
	fwt_wait_for_waiter("w.fence");
	{
		char *now = fwt_slurp("w", NULL);   /* no lock needed to read */

		assert_string_equal(now, "first");
		free(now);
	}
	fwt_unlock(&h);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, FW_OK);
	assert_true(fwt_fence_token("w") == 2);
}

/* Copy PATH's bytes into a new file NAME. */
static void copy_file(const char *path, const char *name)
{
	char *data = fwt_slurp(path, NULL);

	assert_non_null(data);
	fwt_spit(name, data);
	free(data);
}

/*
 * While a writer waits for the lock on the fence's inode X, someone puts a
 * different inode Y at the fence's path.  Once granted, the lock on X
 * locks out nobody who opens the path later: the writer must notice and
 * lock Y instead.  X is made to say 100, Y 5, so a writer that trusted X
 * would reject token 6.
 */
static void fence_replaced_while_waiting_is_relocked(void **state)
{
	struct fwt_holder h;
	struct fw_result res;
	struct job j = { "r", 6, "six", -1, { 0 } };
	pthread_t t;

	(void)state;
	assert_int_equal(commit("r", 1, "one", -1, &res), FW_OK);
	assert_int_equal(commit("x100", 100, "-", -1, &res), FW_OK);
	assert_int_equal(commit("y5", 5, "-", -1, &res), FW_OK);
	copy_file("y5.fence", "Y");
	fwt_lock_in_child("r.fence", 0, &h);
	assert_int_equal(pthread_create(&t, NULL, commit_job, &j), 0);
	fwt_wait_for_waiter("r.fence");
	copy_file("x100.fence", "r.fence");     /* rewrite X in place */
	assert_int_equal(rename("Y", "r.fence"), 0);
	fwt_unlock(&h);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (j.rc != FW_OK)
		fail_msg("commit: %s", j.res.message);
	assert_true(fwt_fence_token("r") == 6);
}

/* Under noofd.so the fallback must really have run. */
static void classic_fallback_ran_when_expected(void **state)
{
	unsigned long *refusals = dlsym(RTLD_DEFAULT, "fwt_noofd_refusals");
	struct fw_result res;

	(void)state;
	assert_int_equal(commit("c", 1, "x", -1, &res), FW_OK);
	if (getenv("FWT_EXPECT_CLASSIC")) {
		assert_non_null(refusals);
		assert_true(*refusals > 0);
	} else {
		assert_null(refusals);
	}
}

/* Threads of one process exclude each other whatever the lock kind: each
   thread's commits go through the guard, and the fence ends at the highest
   token any thread committed, holding that thread's content. */
#define THREADS 4
#define ROUNDS 40
static uint64_t next_token;

struct racer {
	uint64_t best;
	int failures;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char buf[64];

	for (int i = 0; i < ROUNDS; i++) {
		uint64_t tok = __atomic_add_fetch(&next_token, 1,
		                                  __ATOMIC_SEQ_CST);
		struct fw_result res;
		int rc;

		snprintf(buf, sizeof(buf), "token %llu\n",
		         (unsigned long long)tok);
		rc = commit("race", tok, buf, -1, &res);
		if (rc == FW_OK && tok > r->best)
			r->best = tok;
		else if (rc != FW_OK && rc != FW_STALE)
			r->failures++;
	}
	return NULL;
}

static void threads_of_one_process_exclude_each_other(void **state)
{
	struct racer r[THREADS];
	pthread_t t[THREADS];
	uint64_t best = 0;
	char want[64], *got;

	(void)state;
	memset(r, 0, sizeof(r));
	next_token = 0;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(r[i].failures, 0);
		if (r[i].best > best)
			best = r[i].best;
	}
	assert_true(fwt_fence_token("race") == best);
	snprintf(want, sizeof(want), "token %llu\n", (unsigned long long)best);
	got = fwt_slurp("race", NULL);
	assert_string_equal(got, want);
	free(got);
	assert_int_equal(fwt_count_tmp("."), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(busy_fence_gives_locked_and_changes_nothing),
		T(waiting_writer_commits_once_the_holder_lets_go),
		T(fence_replaced_while_waiting_is_relocked),
		T(classic_fallback_ran_when_expected),
		T(threads_of_one_process_exclude_each_other),
	};
	return cmocka_run_group_tests_name(getenv("FWT_EXPECT_CLASSIC")
	                                   ? "lock (classic locks)" : "lock",
	                                   tests, NULL, NULL);
}
