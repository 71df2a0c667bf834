/* SPDX-License-Identifier: MIT */
/*
 * inspect.c - the actions that look and change nothing: would a token be
 * accepted (--check), what the fence holds (--show), and whether FILE is
 * what the fence says it is (--verify, and the status behind --show
 * --json).  Each reads the fence under a shared lock, so it sees every
 * finished change and none half done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

static void fence_info(const struct fw_record *r, struct fw_fence_info *info)
{
	memset(info, 0, sizeof(*info));
	info->token = r->token;
	info->seq = r->seq;
	info->time = r->time;
	info->pid = r->pid;
	memcpy(info->host, r->host, sizeof(info->host));
	memcpy(info->op, r->op, sizeof(info->op));
}

int fw_check(const char *path, uint64_t token, const struct fw_opts *opts,
             struct fw_result *res)
{
	struct target t;
	struct fw_fence f;
	struct fw_lock lk;
	struct stat st;
	int rc;

	rc = fw_target_begin(&t, path, token, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_fence_lock(&t, 0, FW_ABSENT_REPORTS,
	                   fw_deadline(opts->timeout_ms), opts, &lk, &f, res);
	if (rc == 1) {
		/* Neither FILE nor fence: a first commit would create the
		   fence at 0 and accept any token. */
		rc = fw_ok(res);
	} else if (rc == FW_OK) {
		rc = fw_file_state(&t, &st, res);
		if (rc == 0 || rc == 1)
			rc = fw_fence_decide(opts, token, &f, &st, rc == 0, NULL)
			     == FW_DECIDE_REJECT
			     ? fw_fence_stale(&t, token, f.cur.token, res)
			     : fw_ok(res);
		fw_lock_release(&lk);
	}
	fw_target_close(&t);
	return fw_result_end(res, rc);
}

int fw_show(const char *path, const struct fw_opts *opts,
            struct fw_fence_info *info, struct fw_result *res)
{
	struct target t;
	struct fw_fence f;
	struct fw_lock lk;
	int rc;

	fw_result_start(res);
	rc = fw_target_start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_fence_lock(&t, 0, FW_ABSENT_FAILS,
	                   fw_deadline(opts->timeout_ms), opts, &lk, &f, res);
	if (rc == FW_OK) {
		fw_lock_release(&lk);
		fence_info(&f.cur, info);
		rc = fw_ok(res);
	}
	fw_target_close(&t);
	return fw_result_end(res, rc);
}

void fw_status_init(struct fw_status *st)
{
	memset(st, 0, sizeof(*st));
}

static const char *verdict_words(int v)
{
	switch (v) {
	case FW_VERIFY_SAME: return "the file is what the fence committed";
	case FW_VERIFY_EDITED: return "the file was edited in place since its commit";
	case FW_VERIFY_REPLACED: return "the file was replaced outside fencedwrite";
	case FW_VERIFY_UNFINISHED: return "the newest change is unfinished: "
	                                  "the file still holds the content "
	                                  "before it";
	case FW_VERIFY_MISSING: return "the file is missing although the "
	                               "fence says it exists";
	default: return "the fence does not say what this file is (format "
	                "version 1, or a fence named with --fence whose "
	                "newest record is about another file)";
	}
}

/*
 * Compare FILE with the fence's records: DEEP also reads FILE to compare
 * digests.  Fills ST; FW_OK, or a failure code.
 */
static int judge(const struct target *t, const struct fw_fence *f, int deep,
                 struct fw_status *st, struct fw_result *res)
{
	const struct fw_record *cur = &f->cur;
	struct stat fs;
	int rc, id;

	rc = fw_file_state(t, &fs, res);
	if (rc != 0 && rc != 1)
		return rc;
	st->file_present = rc == 0;
	if (cur->file == FW_FILE_PRESENT) {
		st->ino = cur->ino;
		st->file_size = cur->size;
		st->digest = cur->digest;
	}
	/* A change that never landed is held as a claim of its token
	   (commit.c): the record before says what did not happen. */
	if (!strcmp(cur->op, "claim") && f->has_prev &&
	    f->prev.token == cur->token && (!strcmp(f->prev.op, "commit") ||
	                                    !strcmp(f->prev.op, "delete")) &&
	    fw_identity_compare(&f->prev, &fs, st->file_present) !=
	    FW_ID_SAME &&
	    fw_identity_compare(cur, &fs, st->file_present) == FW_ID_SAME) {
		st->verdict = FW_VERIFY_UNFINISHED;
		st->file_token = cur->ftoken;
		st->file_token_known = 1;
		snprintf(st->what, sizeof(st->what), "%s",
		         verdict_words(st->verdict));
		return FW_OK;
	}
	id = fw_identity_compare(cur, &fs, st->file_present);
	/* A fence named with --fence may guard other files, and its
	   records may be about one of them. */
	if (t->named && id != FW_ID_SAME)
		id = FW_ID_UNKNOWN;
	if (id == FW_ID_SAME && deep &&
	    fw_identity_check(t->dirfd, t->base, cur, &id) < 0)
		return fw_fail_sys(res, errno, "read", t->path);
	switch (id) {
	case FW_ID_SAME:
		st->verdict = FW_VERIFY_SAME;
		st->file_token = cur->ftoken;
		st->file_token_known = 1;
		break;
	case FW_ID_UNKNOWN:
		st->verdict = FW_VERIFY_UNKNOWN;
		break;
	default:
		st->verdict = id == FW_ID_EDITED ? FW_VERIFY_EDITED
		            : id == FW_ID_MISSING ? FW_VERIFY_MISSING
		            : FW_VERIFY_REPLACED;
		if (f->has_prev && strcmp(cur->op, "claim") != 0 &&
		    fw_identity_compare(&f->prev, &fs, st->file_present) ==
		    FW_ID_SAME) {
			st->verdict = FW_VERIFY_UNFINISHED;
			st->file_token = f->prev.ftoken;
			st->file_token_known = 1;
		}
	}
	snprintf(st->what, sizeof(st->what), "%s", verdict_words(st->verdict));
	return FW_OK;
}

static int status(const char *path, const struct fw_opts *opts, int deep,
                  struct fw_status *out, struct fw_result *res)
{
	struct fw_status st;
	struct fw_fence f;
	struct fw_lock lk;
	struct target t;
	int rc;

	fw_result_start(res);
	memset(&st, 0, sizeof(st));
	rc = fw_target_start(&t, path, &opts, res);
	if (rc == FW_OK) {
		rc = fw_fence_lock(&t, 0, FW_ABSENT_FAILS,
		                   fw_deadline(opts->timeout_ms), opts, &lk, &f,
		                   res);
		if (rc == FW_OK) {
			fence_info(&f.cur, &st.fence);
			rc = judge(&t, &f, deep, &st, res);
			fw_lock_release(&lk);
		}
		fw_target_close(&t);
	}
	*out = st;
	if (rc == FW_OK && deep && st.verdict != FW_VERIFY_SAME)
		rc = fw_fail(res, FW_UNSAFE, "%s: %s", path, st.what);
	else if (rc == FW_OK)
		rc = fw_ok(res);
	return fw_result_end(res, rc);
}

int fw_status(const char *path, const struct fw_opts *opts,
              struct fw_status *st, struct fw_result *res)
{
	return status(path, opts, 0, st, res);
}

int fw_verify(const char *path, const struct fw_opts *opts,
              struct fw_status *st, struct fw_result *res)
{
	return status(path, opts, 1, st, res);
}
