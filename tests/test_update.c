/* SPDX-License-Identifier: MIT */
/*
 * Fenced read-modify-write: an update claims its token, reads the version
 * the claim covers and commits what it computed from it; a newer claim or
 * commit in between makes it stale, so no update is ever lost.  Proven
 * with concurrent appenders judged by the history checker: every accepted
 * append is in FILE exactly once, in token order, and no rejected one is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "history.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static char *read_fd(int fd)
{
	char *buf = malloc(65536);
	ssize_t n;

	assert_non_null(buf);
	n = read(fd, buf, 65535);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static void update_reads_the_claimed_version_and_commits(void **state)
{
	struct fw_result res;
	struct fw_txn *txn;
	char *old;
	int cur;

	(void)state;
	assert_int_equal(fw_commit_buffer("s", 1, "count=1\n", 8, NULL, &res),
	                 FW_OK);
	assert_int_equal(fw_update_begin(&txn, "s", 2, NULL, &cur, &res),
	                 FW_OK);
	assert_true(cur >= 0);
	old = read_fd(cur);
	close(cur);
	assert_string_equal(old, "count=1\n");
	free(old);
	assert_true(fwt_fence_token("s") == 2);   /* claimed */
	assert_int_equal(fw_txn_write(txn, "count=2\n", 8, &res), FW_OK);
	assert_int_equal(fw_txn_commit(txn, 2, &res), FW_OK);
	fwt_assert_content("s", "count=2\n");
	/* an absent FILE reads as nothing */
	assert_int_equal(fw_update_begin(&txn, "new", 1, NULL, &cur, &res),
	                 FW_OK);
	assert_int_equal(cur, -1);
	fw_txn_abort(txn);
	/* a stale claim begins nothing */
	assert_int_equal(fw_update_begin(&txn, "s", 1, NULL, &cur, &res),
	                 FW_STALE);
	assert_null(txn);
	assert_int_equal(cur, -1);
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* Jepsen's lost update: two holders read the same state; the older one
   commits last.  Here the older one is stale. */
static void newer_claim_during_an_update_makes_it_stale(void **state)
{
	struct fw_result res;
	struct fw_txn *a;
	int cur;

	(void)state;
	assert_int_equal(fw_commit_buffer("s", 1, "x=1\n", 4, NULL, &res),
	                 FW_OK);
	assert_int_equal(fw_update_begin(&a, "s", 2, NULL, &cur, &res), FW_OK);
	close(cur);
	/* a newer holder claims and commits while A computes */
	assert_int_equal(fw_append_buffer("s", 3, "y=3\n", 4, NULL, &res),
	                 FW_OK);
	assert_int_equal(fw_txn_write(a, "x=2\n", 4, &res), FW_OK);
	assert_int_equal(fw_txn_commit(a, 2, &res), FW_STALE);
	fwt_assert_content("s", "x=1\ny=3\n");
	/* a claim alone is enough */
	assert_int_equal(fw_update_begin(&a, "s", 4, NULL, &cur, &res), FW_OK);
	close(cur);
	assert_int_equal(fw_claim("s", 5, NULL, &res), FW_OK);
	assert_int_equal(fw_txn_write(a, "lost\n", 5, &res), FW_OK);
	assert_int_equal(fw_txn_commit(a, 4, &res), FW_STALE);
	fwt_assert_content("s", "x=1\ny=3\n");
	assert_int_equal(fw_append_buffer("s", 4, "z\n", 2, NULL, &res),
	                 FW_STALE);
	assert_int_equal(fw_append_buffer("s", 5, "z=5\n", 4, NULL, &res),
	                 FW_OK);
	fwt_assert_content("s", "x=1\ny=3\nz=5\n");
}

struct shared {
	uint64_t next_token;
	size_t nops;
	struct fwh_op ops[];
};

/*
 * One appender: it takes the lease (an flock standing for the lease store)
 * and the next token, then either holds the lease through its update, as a
 * healthy holder does, or lets it go at once and goes on regardless, as a
 * holder paused past its lease does.
 */
static void appender(struct shared *sh, int appends, int lease)
{
	for (int i = 0; i < appends; i++) {
		int paused = (i + getpid()) % 2;
		uint64_t token;
		size_t slot;
		struct fwh_op *op;
		struct fw_result res;
		struct fw_txn *txn;
		int cur, rc;

		if (flock(lease, LOCK_EX) < 0)
			_exit(3);
		token = __atomic_add_fetch(&sh->next_token, 1, __ATOMIC_SEQ_CST);
		slot = __atomic_fetch_add(&sh->nops, 1, __ATOMIC_SEQ_CST);
		op = &sh->ops[slot];
		op->token = token;
		op->start = now_ns();
		if (paused && flock(lease, LOCK_UN) < 0)
			_exit(3);
		rc = fw_update_begin(&txn, "log", token, NULL, &cur, &res);
		if (rc == FW_OK) {
			char line[32];

			op->claimed = 1;
			if (cur >= 0) {
				rc = fw_txn_copy_fd(txn, cur, "log", &res);
				close(cur);
			}
			snprintf(line, sizeof(line), "%llu\n",
			         (unsigned long long)token);
			if (rc == FW_OK)
				rc = fw_txn_write(txn, line, strlen(line), &res);
			if (rc == FW_OK)
				rc = fw_txn_commit(txn, token, &res);
			else
				fw_txn_abort(txn);
		}
		op->end = now_ns();
		op->rc = rc;
		if (!paused && flock(lease, LOCK_UN) < 0)
			_exit(3);
	}
}

static void concurrent_appenders_lose_no_update(void **state)
{
	const char *pe = getenv("FWT_APPENDERS"), *ae = getenv("FWT_APPENDS");
	int procs = pe ? atoi(pe) : 4, appends = ae ? atoi(ae) : 40;
	size_t total = (size_t)procs * (size_t)appends, committed = 0;
	size_t size = sizeof(struct shared) + total * sizeof(struct fwh_op);
	struct shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
	                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct fwh_summary sum;
	uint64_t last = 0;
	char why[200], *log, *line, *save = NULL;

	(void)state;
	assert_true(sh != MAP_FAILED);
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			/* each its own open file: flock excludes between them */
			int lease = open("lease", O_RDWR | O_CREAT | O_CLOEXEC,
			                 0600);

			if (lease < 0)
				_exit(3);
			appender(sh, appends, lease);
			_exit(0);
		}
	}
	for (int p = 0; p < procs; p++) {
		int status;

		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(sh->nops, total);
	if (fwh_check(sh->ops, total, &sum, why, sizeof(why)) != 0)
		fail_msg("history: %s", why);
	/* FILE: the committed tokens, each once, in token order; none of
	   the rejected. */
	log = fwt_slurp("log", NULL);
	assert_non_null(log);
	for (line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		uint64_t t = strtoull(line, NULL, 10);
		int found = 0;

		if (t <= last)
			fail_msg("token %llu after %llu in FILE",
			         (unsigned long long)t, (unsigned long long)last);
		last = t;
		for (size_t i = 0; i < total; i++)
			if (sh->ops[i].token == t) {
				if (sh->ops[i].rc != 0)
					fail_msg("rejected append %llu is in FILE",
					         (unsigned long long)t);
				found = 1;
			}
		assert_true(found);
		committed++;
	}
	if (committed != sum.commits)
		fail_msg("%zu appends committed, %zu in FILE", sum.commits,
		         committed);
	assert_true(fwt_fence_token("log") == last);
	/* The lease made most holders healthy: a real run, not only
	   rejections. */
	assert_true(sum.commits >= total / 4);
	assert_true(sum.rejections > 0);
	print_message("appenders: %zu operations, %zu committed, %zu "
	              "rejected, 0 lost\n", total, sum.commits,
	              sum.rejections);
	free(log);
	munmap(sh, size);
	assert_int_equal(fwt_count_tmp("."), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(update_reads_the_claimed_version_and_commits),
		T(newer_claim_during_an_update_makes_it_stale),
		T(concurrent_appenders_lose_no_update),
	};
	return cmocka_run_group_tests_name("update", tests, NULL, NULL);
}
