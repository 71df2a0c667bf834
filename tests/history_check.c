/* SPDX-License-Identifier: MIT */
/*
 * history_check LOG FILE - check a history of fenced writes recorded by a
 * script, one operation a line: "START_NS END_NS TOKEN EXIT_CODE", then
 * that FILE holds "tok=BEST" and its fence BEST, the highest committed
 * token.  Prints one summary line; exits 0 if every invariant holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fencedwrite.h"
#include "history.h"

int main(int argc, char **argv)
{
	struct fwh_op *ops = NULL;
	struct fwh_summary sum;
	struct fw_fence_info info;
	struct fw_result res;
	size_t n = 0, cap = 0;
	char why[200], want[64], got[64] = "";
	long long s, e;
	unsigned long long t;
	int rc;
	FILE *log, *f;

	if (argc != 3) {
		fprintf(stderr, "usage: history_check LOG FILE\n");
		return 2;
	}
	log = fopen(argv[1], "r");
	if (!log) {
		perror(argv[1]);
		return 2;
	}
	while (fscanf(log, "%lld %lld %llu %d", &s, &e, &t, &rc) == 4) {
		if (n == cap) {
			struct fwh_op *more;

			cap = cap ? 2 * cap : 64;
			more = realloc(ops, cap * sizeof(*ops));
			if (!more) {
				free(ops);
				return 2;
			}
			ops = more;
		}
		ops[n++] = (struct fwh_op){ s, e, t, rc, 0 };
	}
	fclose(log);
	if (fwh_check(ops, n, &sum, why, sizeof(why)) != 0) {
		printf("history: violation: %s\n", why);
		return 1;
	}
	if (fw_show(argv[2], NULL, &info, &res) != FW_OK) {
		printf("history: %s\n", res.message);
		return 1;
	}
	snprintf(want, sizeof(want), "tok=%llu",
	         (unsigned long long)sum.best);
	f = fopen(argv[2], "r");
	if (f) {
		if (!fgets(got, sizeof(got), f))
			got[0] = '\0';
		got[strcspn(got, "\n")] = '\0';
		fclose(f);
	}
	if (info.token != sum.best || strcmp(got, want) != 0) {
		printf("history: ends with fence %llu and FILE '%s', want %llu\n",
		       (unsigned long long)info.token, got,
		       (unsigned long long)sum.best);
		return 1;
	}
	printf("history: %zu ops, %zu commits, %zu rejections, 0 violations\n",
	       sum.ops, sum.commits, sum.rejections);
	free(ops);
	return 0;
}
