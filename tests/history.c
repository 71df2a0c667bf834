/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

static int by_end(const void *a, const void *b)
{
	const struct fwh_op *x = *(const struct fwh_op *const *)a;
	const struct fwh_op *y = *(const struct fwh_op *const *)b;

	return (x->end > y->end) - (x->end < y->end);
}

static int by_start(const void *a, const void *b)
{
	const struct fwh_op *x = *(const struct fwh_op *const *)a;
	const struct fwh_op *y = *(const struct fwh_op *const *)b;

	return (x->start > y->start) - (x->start < y->start);
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Highest token among the first N of SORTED whose key is < LIMIT. */
static uint64_t max_before(const struct fwh_op *const *sorted,
                           const uint64_t *prefix, size_t n, int64_t limit,
                           int use_end)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int64_t key = use_end ? sorted[mid]->end : sorted[mid]->start;

		if (key < limit)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? prefix[lo - 1] : 0;
}

/* Another operation than OP committed or claimed OP's token, or a larger
   one, and started before OP ended. */
static int other_claim_or_commit(const struct fwh_op *ops, size_t n,
                                 const struct fwh_op *op)
{
	for (size_t i = 0; i < n; i++)
		if (&ops[i] != op && (ops[i].rc == 0 || ops[i].claimed) &&
		    ops[i].token >= op->token && ops[i].start < op->end)
			return 1;
	return 0;
}

int fwh_check(const struct fwh_op *ops, size_t n, struct fwh_summary *sum,
              char *why, size_t whylen)
{
	const struct fwh_op **by_e = calloc(n + 1, sizeof(*by_e));
	const struct fwh_op **by_s = calloc(n + 1, sizeof(*by_s));
	size_t ns = 0;   /* by_s holds commits and claims */
	uint64_t *pre_e = calloc(n + 1, sizeof(*pre_e));
	uint64_t *pre_s = calloc(n + 1, sizeof(*pre_s));
	uint64_t *tokens = calloc(n + 1, sizeof(*tokens));
	size_t nc = 0;
	int rc = -1;

	sum->ops = n;
	sum->commits = sum->rejections = 0;
	sum->best = 0;
	if (!by_e || !by_s || !pre_e || !pre_s || !tokens) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (ops[i].rc == 0 || ops[i].claimed)
			by_s[ns++] = &ops[i];
		if (ops[i].rc == 0) {
			by_e[nc] = &ops[i];
			tokens[nc++] = ops[i].token;
		} else if (ops[i].rc != 1) {
			snprintf(why, whylen, "token %llu ended with code %d",
			         (unsigned long long)ops[i].token, ops[i].rc);
			goto out;
		}
	}
	qsort(tokens, nc, sizeof(*tokens), by_value);
	for (size_t i = 1; i < nc; i++)
		if (tokens[i] == tokens[i - 1]) {
			snprintf(why, whylen, "token %llu committed twice",
			         (unsigned long long)tokens[i]);
			goto out;
		}
	qsort(by_e, nc, sizeof(*by_e), by_end);
	qsort(by_s, ns, sizeof(*by_s), by_start);
	for (size_t i = 0; i < nc; i++)
		pre_e[i] = i && pre_e[i - 1] > by_e[i]->token ? pre_e[i - 1]
		                                              : by_e[i]->token;
	for (size_t i = 0; i < ns; i++)
		pre_s[i] = i && pre_s[i - 1] > by_s[i]->token ? pre_s[i - 1]
		                                              : by_s[i]->token;
	for (size_t i = 0; i < n; i++) {
		const struct fwh_op *op = &ops[i];

		if (op->rc == 0) {
			uint64_t before = max_before(by_e, pre_e, nc, op->start, 1);

			if (before >= op->token) {
				snprintf(why, whylen, "token %llu committed "
				         "after a commit of %llu had ended",
				         (unsigned long long)op->token,
				         (unsigned long long)before);
				goto out;
			}
		} else {
			uint64_t seen = max_before(by_s, pre_s, ns, op->end, 0);

			sum->rejections++;
			/* Its own claim does not justify it. */
			if (seen < op->token ||
			    (seen == op->token && op->claimed &&
			     !other_claim_or_commit(ops, n, op))) {
				snprintf(why, whylen, "token %llu rejected with "
				         "no commit or claim >= it under way",
				         (unsigned long long)op->token);
				goto out;
			}
		}
	}
	sum->commits = nc;
	sum->best = nc ? tokens[nc - 1] : 0;
	rc = 0;
out:
	free(by_e);
	free(by_s);
	free(pre_e);
	free(pre_s);
	free(tokens);
	return rc;
}

/* FNV-1a: enough to tell a torn read from a whole one. */
static uint32_t checksum(const char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 16777619u;
	return h;
}

size_t fwh_payload(char *buf, size_t cap, uint64_t tok, unsigned seed)
{
	size_t n = (size_t)snprintf(buf, cap, "tok=%llu\npad=",
	                            (unsigned long long)tok);
	size_t pad = seed % 3000;

	for (size_t i = 0; i < pad && n < cap - 32; i++)
		buf[n++] = (char)('a' + (seed + i) % 26);
	n += (size_t)snprintf(buf + n, cap - n, " sum=%08x\n",
	                      checksum(buf, n));
	return n;
}

int fwh_parse_payload(const char *buf, size_t n, uint64_t *tok)
{
	unsigned long long t;
	unsigned sum;
	const char *s;

	if (n < 24 || buf[n - 1] != '\n' || sscanf(buf, "tok=%llu\n", &t) != 1)
		return -1;
	s = buf + n - 14;   /* " sum=" + 8 hex digits + newline */
	if (strncmp(s, " sum=", 5) != 0 || sscanf(s + 5, "%8x", &sum) != 1 ||
	    sum != checksum(buf, (size_t)(s - buf)))
		return -1;
	*tok = t;
	return 0;
}
