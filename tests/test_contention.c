/* SPDX-License-Identifier: MIT */
/*
 * Contention: writer processes, each with threads, commit random tokens
 * (fresh, equal, stale) to one FILE while reader processes read it in a
 * loop.  Every operation is recorded with CLOCK_MONOTONIC start and end
 * times, and the history is checked afterwards:
 *
 *   - committed tokens are unique and increase in real-time order, and every
 *     rejection is justified (history.c);
 *   - every read saw one whole payload with a valid checksum, and no reader
 *     saw a token lower than one it had seen before;
 *   - at the end FILE holds the highest committed token's payload and the
 *     fence holds that token; no temporary file is left.
 *
 * FWT_WRITERS, FWT_THREADS and FWT_OPS (per thread) scale it up.  With
 * FWT_HUGE set, every token lies just below 2^64, and the run ends by
 * committing UINT64_MAX itself, after which nothing is accepted.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "history.h"

#define FILE_NAME "shared.txt"
#define READERS 2

struct op {
	int64_t start, end;
	uint64_t token;
	int rc;
};

struct shared {
	uint64_t base;          /* added to every token */
	uint64_t next_token;
	int writers_done;
	unsigned long reads, read_violations, bad_codes;
	char first_violation[160];
	size_t nops;
	struct op ops[];
};

static struct shared *sh;
static int writers = 4, threads = 2, ops_per_thread = 40;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *writer_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	char buf[4096];

	for (int i = 0; i < ops_per_thread; i++) {
		size_t slot = __atomic_fetch_add(&sh->nops, 1, __ATOMIC_SEQ_CST);
		struct op *op = &sh->ops[slot];
		uint64_t base = __atomic_add_fetch(&sh->next_token, 1,
		                                   __ATOMIC_SEQ_CST);
		unsigned r = (unsigned)rand_r(&seed);
		struct fw_result res;
		uint64_t tok;
		size_t n;

		switch (r % 8) {
		case 0:   /* deliberately stale */
			tok = 1 + r % (base / 2 + 1);
			break;
		case 1:   /* likely equal to a recent commit */
			tok = base > 1 ? base - 1 : 1;
			break;
		default:  /* fresh, give or take a concurrent writer */
			tok = base + r % 3;
		}
		tok += sh->base;
		n = fwh_payload(buf, sizeof(buf), tok, r);
		op->token = tok;
		op->start = now_ns();
		op->rc = fw_commit_buffer(FILE_NAME, tok, buf, n, NULL, &res);
		op->end = now_ns();
		if (op->rc != FW_OK && op->rc != FW_STALE)
			__atomic_add_fetch(&sh->bad_codes, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void writer_process(int id)
{
	pthread_t t[16];

	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, writer_thread,
		                   (void *)(uintptr_t)(id * 1000 + i + 1)))
			_exit(3);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	_exit(0);
}

static void reader_process(void)
{
	static char buf[8192];
	uint64_t last = 0;

	while (!__atomic_load_n(&sh->writers_done, __ATOMIC_SEQ_CST)) {
		FILE *f = fopen(FILE_NAME, "rb");
		uint64_t tok;
		size_t n;

		if (!f)
			continue;   /* before the first commit */
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		__atomic_add_fetch(&sh->reads, 1, __ATOMIC_SEQ_CST);
		if (fwh_parse_payload(buf, n, &tok) != 0 || tok < last) {
			if (__atomic_add_fetch(&sh->read_violations, 1,
			                       __ATOMIC_SEQ_CST) == 1)
				snprintf(sh->first_violation,
				         sizeof(sh->first_violation),
				         "read %zu bytes after token %llu", n,
				         (unsigned long long)last);
			continue;
		}
		last = tok;
	}
	_exit(0);
}

static void history_is_linearizable(void **state)
{
	size_t total, ncommit, nreject;
	struct fwh_summary sum;
	uint64_t best;
	pid_t pids[64 + READERS];
	char want[4096], *got;
	int np = 0;

	(void)state;
	if (getenv("FWT_WRITERS"))
		writers = atoi(getenv("FWT_WRITERS"));
	if (getenv("FWT_THREADS"))
		threads = atoi(getenv("FWT_THREADS"));
	if (getenv("FWT_OPS"))
		ops_per_thread = atoi(getenv("FWT_OPS"));
	assert_true(writers > 0 && writers <= 64 && threads > 0 &&
	            threads <= 16 && ops_per_thread > 0);
	total = (size_t)writers * (size_t)threads * (size_t)ops_per_thread;
	sh = mmap(NULL, sizeof(*sh) + total * sizeof(struct op),
	          PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	if (getenv("FWT_HUGE"))
		sh->base = UINT64_MAX - 4 * (uint64_t)total - 16;

	for (int i = 0; i < READERS; i++) {
		pids[np] = fork();
		assert_true(pids[np] >= 0);
		if (pids[np++] == 0)
			reader_process();
	}
	for (int i = 0; i < writers; i++) {
		pids[np] = fork();
		assert_true(pids[np] >= 0);
		if (pids[np++] == 0)
			writer_process(i);
	}
	for (int i = READERS; i < np; i++)
		assert_int_equal(fwt_wait(pids[i]), 0);
	__atomic_store_n(&sh->writers_done, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < READERS; i++)
		assert_int_equal(fwt_wait(pids[i]), 0);

	assert_int_equal(sh->nops, total);
	assert_int_equal(sh->bad_codes, 0);
	if (sh->read_violations)
		fail_msg("%lu torn or backwards reads; first: %s",
		         sh->read_violations, sh->first_violation);
	assert_true(sh->reads > 0);

	{
		struct fwh_op *h = calloc(total, sizeof(*h));
		char why[200];

		assert_non_null(h);
		for (size_t i = 0; i < total; i++)
			h[i] = (struct fwh_op){ sh->ops[i].start, sh->ops[i].end,
			                        sh->ops[i].token,
			                        sh->ops[i].rc == FW_OK ? 0 : 1,
			                        0 };
		if (fwh_check(h, total, &sum, why, sizeof(why)) != 0)
			fail_msg("%s", why);
		free(h);
		ncommit = sum.commits;
		nreject = sum.rejections;
		best = sum.best;
	}
	assert_true(ncommit > 0 && nreject > 0);
	assert_true(fwt_fence_token(FILE_NAME) == best);
	got = fwt_slurp(FILE_NAME, NULL);
	assert_non_null(got);
	snprintf(want, sizeof(want), "tok=%llu\n", (unsigned long long)best);
	assert_true(strncmp(got, want, strlen(want)) == 0);
	assert_int_equal(fwt_count_tmp("."), 0);
	if (sh->base) {
		/* The top of the range: accepted once, then never again. */
		struct fw_result res;

		assert_true(best < UINT64_MAX);
		assert_int_equal(fw_commit_buffer(FILE_NAME, UINT64_MAX, "max\n",
		                                  4, NULL, &res), FW_OK);
		assert_int_equal(fw_commit_buffer(FILE_NAME, UINT64_MAX, "again\n",
		                                  6, NULL, &res), FW_STALE);
		assert_true(fwt_fence_token(FILE_NAME) == UINT64_MAX);
	}
	print_message("contention%s: %zu ops, %zu commits, %zu rejections, "
	              "%lu reads, 0 violations\n", sh->base ? " (huge tokens)" : "",
	              total, ncommit, nreject,
	              sh->reads);
	free(got);
	munmap(sh, sizeof(*sh) + total * sizeof(struct op));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(history_is_linearizable,
		                                fwt_setup, fwt_teardown),
	};
	return cmocka_run_group_tests_name(getenv("FWT_EXPECT_CLASSIC")
	                                   ? "contention (classic locks)"
	                                   : "contention", tests, NULL, NULL);
}
