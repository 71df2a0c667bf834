/* SPDX-License-Identifier: MIT */
/*
 * history.h - the invariant checker for a history of fenced writes, shared
 * by the contention suite and the etcd end-to-end test.
 */
#ifndef FW_TEST_HISTORY_H
#define FW_TEST_HISTORY_H

#include <stddef.h>
#include <stdint.h>

struct fwh_op {
	int64_t start, end;     /* one clock for all operations */
	uint64_t token;
	int rc;                 /* 0 committed, 1 stale; anything else fails */
	int claimed;            /* the operation claimed TOKEN at its start
	                           (fenced update, append): its claim turns
	                           smaller tokens away even if it later
	                           loses to a larger one */
};

struct fwh_summary {
	size_t ops, commits, rejections;
	uint64_t best;          /* highest committed token, 0 if none */
};

/*
 * Check that committed tokens are unique and increase in real-time order
 * (a commit that started after another ended has the larger token), and
 * that every rejection is justified (a commit, or a claim, of a token at
 * least as large had started before the rejection ended).  Returns 0, or -1 with the first
 * violation in WHY.
 */
int fwh_check(const struct fwh_op *ops, size_t n, struct fwh_summary *sum,
              char *why, size_t whylen);

#endif
