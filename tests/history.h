/* SPDX-License-Identifier: MIT */
/*
 * history.h - the invariant checker for a history of fenced writes, shared
 * by the contention and update suites, the etcd end-to-end test and the
 * NFS lab's load; and the payload those writers commit and readers check.
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

/*
 * A payload for TOK: "tok=TOK" on a line of its own (what history_check
 * compares FILE's first line with), a pad whose length SEED chooses, and
 * a checksum of everything before it, so that a reader can tell a whole
 * version from a torn one.  Its length, at most CAP (>= 64).
 */
size_t fwh_payload(char *buf, size_t cap, uint64_t tok, unsigned seed);
/* 0 and *TOK if BUF's N bytes are one whole payload, else -1. */
int fwh_parse_payload(const char *buf, size_t n, uint64_t *tok);

#endif
