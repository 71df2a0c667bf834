/* SPDX-License-Identifier: MIT */
/*
 * commit.c - the fenced commit protocol, in the order of its steps.
 *
 *   begin   open FILE's directory once; every later step is relative to it,
 *           so renaming a path component mid-commit cannot redirect us.
 *           Create the temporary file there.
 *   write   stream the content into it (no lock held: a large file must
 *           not lengthen the time others wait).
 *   commit  1. fsync the content; note its inode, size and digest.
 *           2. lock the fence (fence.c), creating it when FILE and fence
 *              are both absent; read it; anything invalid fails closed.
 *           3. reject a token not larger than the fence's, unless it is
 *              the token of the fence's own claim, or of its own change
 *              that never reached FILE (a retry finishes it); the same
 *              change again is already done and changes nothing.
 *           4. write the token and what FILE will be into the fence, and
 *              fdatasync it.
 *           5. rename the content over FILE; fsync the directory.
 *           6. unlock.
 *
 * Step 4 before step 5 is the whole point.  Were FILE renamed first, a
 * crash (or a slow fence write) would leave FILE holding token N's content
 * behind a fence still at the old token, and a paused holder whose token
 * lies between the two would be accepted and overwrite newer content.  In
 * this order the fence is never behind FILE; a crash between 4 and 5 only
 * costs the new content, and the temporary file is left for fw_clean().
 *
 * A claim is steps 2 to 4 alone: the fence moves to N before the holder of
 * N has produced anything, so a paused holder of an older token is turned
 * away from that moment on, not from the moment N commits.
 *
 * The directory is fsynced before the unlock because on NFS the unlock may
 * flush cached state and swallow a write error nobody would then report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

/* What a NULL struct fw_opts means (fw_opts_init gives the same). */
const struct fw_opts fw_default_opts = { .timeout_ms = -1 };

void fw_opts_init(struct fw_opts *opts)
{
	*opts = fw_default_opts;
}

/*
 * Replacing or unlinking FILE frees its blocks at that moment, which for a
 * large file takes long (tens of milliseconds per 100 MiB with discard) and
 * would keep everybody waiting on the lock.  A descriptor held on the old
 * inode moves that cost to its close(), after the unlock.  Not worth a
 * system call for small files.
 *
 * Only on local disk filesystems: an NFS client asked to rename over (or
 * unlink) a file it holds open first renames that file to ".nfsXXXX" on
 * the server, in a call of its own.  Between the two calls another host
 * sees no FILE at all, and a client crash between them leaves it absent.
 */
#define DEFER_FREE_BYTES (1 << 20)

static int frees_blocks_late_safely(int dirfd)
{
	struct statfs sf;

	return fstatfs(dirfd, &sf) == 0 && fw_fs_is_local((long)sf.f_type);
}

/*
 * On NFS a lock is a lease: a client frozen (a paused VM, a stalled
 * kernel) past the server's lease time loses it silently, the server
 * grants it to another host, and the frozen client, once it runs again,
 * still believes it holds it.  Nothing here can stop a call from landing
 * then, but the fence can be read again, fresh from the server (O_DIRECT
 * bypasses the client's cache), at the three points where a lost lock
 * does harm: before our record is written (it would overwrite a newer
 * one), before the rename (it would replace newer content) and after it
 * (success must never be reported).  Each check narrows the window to the
 * few calls after it; the last one closes it for the exit status.
 */
enum phase { BEFORE_WRITE, BEFORE_RENAME, AFTER_RENAME };

static int still_ours(const struct target *t, const struct fw_lock *lk,
                      const struct fw_record *expect, enum phase phase,
                      uint64_t token, struct fw_result *res)
{
	_Alignas(4096) char image[2 * 4096];
	struct fw_fence f;
	char why[160];
	int flags = fcntl(lk->fd, F_GETFL);
	int direct = flags >= 0 && fcntl(lk->fd, F_SETFL, flags | O_DIRECT) == 0;
	ssize_t n;

	do
		n = pread(lk->fd, image, sizeof(image), 0);
	while (n < 0 && errno == EINTR);
	if (direct)
		(void)fcntl(lk->fd, F_SETFL, flags);
	/* An NFSv4 client that has found its lease expired fails every read
	   through the lock it lost with EIO (measured in the lab): that is
	   the answer, not a failure to get one. */
	if (n < 0 && errno != EIO)
		return fw_fail_sys(res, errno, "read", t->fshown);
	if (n >= 0 &&
	    fw_record_parse(image, (size_t)n, &f, why, sizeof(why)) == 0 &&
	    f.cur.seq == expect->seq && f.cur.token == expect->token &&
	    f.cur.pid == expect->pid && f.cur.time == expect->time &&
	    !strcmp(f.cur.host, expect->host))
		return FW_OK;
	if (phase != AFTER_RENAME)
		return fw_fail(res, FW_LOCK_LOST,
		               "the lock on %s was lost %s: another writer "
		               "changed the fence meanwhile; %s was not changed",
		               t->fshown, phase == BEFORE_WRITE
		               ? "before this change was recorded"
		               : "before the rename", t->path);
	return fw_fail(res, FW_LOCK_LOST,
	               "the lock on %s was lost while %s was being replaced: "
	               "another writer changed the fence meanwhile, and %s "
	               "may now hold this superseded content (token %llu); "
	               "rerun the newest holder's job", t->fshown, t->path,
	               t->path, (unsigned long long)token);
}

/*
 * What a claim records FILE to be: what the newest record (or the one
 * before it, after an unfinished change) says, when FILE is still that;
 * otherwise still what the newest record says, so that a change made
 * behind the fence's back stays visible to --verify after the claim.
 */
static void claimed_content(const struct fw_fence *f, const struct stat *st,
                            int present, struct fw_record *claim)
{
	const struct fw_record *from = &f->cur;

	if (f->has_prev &&
	    fw_identity_compare(&f->cur, st, present) != FW_ID_SAME &&
	    fw_identity_compare(&f->prev, st, present) == FW_ID_SAME)
		from = &f->prev;
	claim->file = from->file;
	claim->ftoken = from->ftoken;
	claim->ino = from->ino;
	claim->size = from->size;
	claim->digest = from->digest;
}

/*
 * Steps 2 to 6, shared by commit and delete: lock and read the fence,
 * decide on TOKEN, advance the fence durably with CHANGE (what FILE will
 * be), then rename TMP over FILE (or, with TMP NULL, unlink FILE), sync
 * the directory, and unlock.  TMP is emptied once renamed, so nobody
 * unlinks that name again.
 */
static int fenced_change(struct target *t, uint64_t token, char *tmp,
                         struct fw_record *change, const struct fw_opts *opts,
                         struct fw_result *res)
{
	struct fw_fence f;
	struct fw_lock lk;
	struct stat st;
	int rc, present, old_fd = -1;

	rc = fw_fence_lock(t, 1, FW_ABSENT_CREATES,
	                   fw_deadline(opts->timeout_ms), opts, &lk, &f, res);
	if (rc != FW_OK)
		return rc;
	/* FILE as it is now, under the lock: a link planted since the
	   transaction began would be replaced by the rename (or removed by
	   the unlink) instead of refused. */
	rc = fw_file_state(t, &st, res);
	if (rc != 0 && rc != 1)
		goto unlock;
	present = rc == 0;
	switch (fw_fence_decide(opts, token, &f, &st, present, change)) {
	case FW_DECIDE_REJECT:
		rc = fw_fence_stale(t, token, f.cur.token, res);
		goto unlock;
	case FW_DECIDE_DONE: {
		int verdict;

		/* This very change is in place already, if FILE's content
		   says so too (not only its inode and size). */
		if (fw_identity_check(t->dirfd, t->base, &f.cur, &verdict) < 0)
			rc = fw_fail_sys(res, errno, "read", t->path);
		else if (verdict == FW_ID_SAME)
			rc = fw_ok(res);
		else
			rc = fw_fence_stale(t, token, f.cur.token, res);
		goto unlock;
	}
	default:
		break;
	}
	if (fw_cancelled(opts)) {
		rc = fw_fail_sys(res, EINTR, tmp ? "commit" : "delete", t->path);
		goto unlock;
	}
	/* From here on the change is finished, not abandoned. */
	change->token = change->ftoken = token;
	fw_record_stamp(change, tmp ? "commit" : "delete");
	rc = t->fence_local ? FW_OK
	     : still_ours(t, &lk, &f.cur, BEFORE_WRITE, token, res);
	if (rc == FW_OK)
		rc = fw_fence_advance(t, &lk, &f, change, res);
	if (rc == FW_OK && !t->fence_local)
		rc = still_ours(t, &lk, change, BEFORE_RENAME, token, res);
	if (rc != FW_OK)
		goto unlock;
	if (present && st.st_size >= DEFER_FREE_BYTES &&
	    frees_blocks_late_safely(t->dirfd))
		old_fd = openat(t->dirfd, t->base, O_RDONLY | O_NOFOLLOW |
		                O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (tmp) {
		if (renameat(t->dirfd, tmp, t->dirfd, t->base) < 0) {
			rc = fw_fail_sys(res, errno, "rename", t->path);
			goto unfinished;
		}
		tmp[0] = '\0';
	} else if (!present) {
		/* Nothing to unlink: this record changes nothing in FILE and
		   goes into both slots (the lock was looked at just above). */
		rc = fw_fence_seal(t, &lk, change, res);
		if (rc != FW_OK)
			goto unlock;
	} else if (unlinkat(t->dirfd, t->base, 0) < 0 && errno != ENOENT) {
		rc = fw_fail_sys(res, errno, "unlink", t->path);
		goto unfinished;
	}
	if (fw_fsync(t->dirfd) < 0) {
		rc = fw_fail_sys(res, errno, "fsync directory", t->dirshown);
		goto unlock;
	}
	rc = t->fence_local ? FW_OK
	     : still_ours(t, &lk, change, AFTER_RENAME, token, res);
	if (rc == FW_OK)
		rc = fw_ok(res);
	goto unlock;
unfinished:
	/* The fence names a change that never reached FILE.  Record, in the
	   other slot, TOKEN as claimed with FILE as it still is: damage to
	   either record then cannot make the token fall back, a retry of
	   TOKEN is accepted as its own claim, and --verify still sees the
	   unfinished change in the record before.  RES keeps the failure. */
	{
		struct fw_record held = *change;
		struct fw_result lost;

		/* Not over a newer record, if the lock was lost meanwhile:
		   on NFS a failing rename is just when that happens. */
		if (!t->fence_local &&
		    still_ours(t, &lk, change, BEFORE_RENAME, token, &lost) !=
		    FW_OK) {
			if (res)
				*res = lost;
			rc = FW_LOCK_LOST;
			goto unlock;
		}
		claimed_content(&f, &st, present, &held);
		fw_record_stamp(&held, "claim");
		(void)fw_fence_seal(t, &lk, &held, NULL);
	}
unlock:
	fw_lock_release(&lk);
	if (old_fd >= 0)
		close(old_fd);   /* frees the old blocks, now unlocked */
	return rc;
}


int fw_claim(const char *path, uint64_t token, const struct fw_opts *opts,
             struct fw_result *res)
{
	struct fw_record claim;
	struct fw_fence f;
	struct fw_lock lk;
	struct target t;
	struct stat st;
	int rc, present;

	rc = fw_target_begin(&t, path, token, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_mount_check(&t, opts, res);
	if (rc == FW_OK)
		rc = fw_fence_lock(&t, 1, FW_ABSENT_CREATES,
		                   fw_deadline(opts->timeout_ms), opts, &lk, &f,
		                   res);
	if (rc != FW_OK) {
		fw_target_close(&t);
		return fw_result_end(res, rc);
	}
	rc = fw_file_state(&t, &st, res);
	if (rc != 0 && rc != 1)
		goto out;
	present = rc == 0;
	/* The fence's own token: claimed already, or this holder's own
	   change (finished or not; a retry will be judged when it commits).
	   Nothing to change. */
	if (token == f.cur.token && (!strcmp(f.cur.op, "claim") ||
	                             !strcmp(f.cur.op, "commit") ||
	                             !strcmp(f.cur.op, "delete")) &&
	    !(opts->flags & FW_ALLOW_EQUAL)) {
		rc = fw_ok(res);
		goto out;
	}
	if (token < f.cur.token || (token == f.cur.token &&
	                            !(opts->flags & FW_ALLOW_EQUAL))) {
		rc = fw_fence_stale(&t, token, f.cur.token, res);
		goto out;
	}
	memset(&claim, 0, sizeof(claim));
	claimed_content(&f, &st, present, &claim);
	claim.token = token;
	fw_record_stamp(&claim, "claim");
	rc = FW_OK;
	if (!t.fence_local)
		rc = still_ours(&t, &lk, &f.cur, BEFORE_WRITE, token, res);
	if (rc == FW_OK)
		rc = fw_fence_advance(&t, &lk, &f, &claim, res);
	/* A claim leaves FILE alone: its record goes into both slots.  The
	   lock is looked at before the second copy too, which would
	   otherwise overwrite a newer record. */
	if (rc == FW_OK && !t.fence_local)
		rc = still_ours(&t, &lk, &claim, BEFORE_RENAME, token, res);
	if (rc == FW_OK)
		rc = fw_fence_seal(&t, &lk, &claim, res);
	if (rc == FW_OK && !t.fence_local)
		rc = still_ours(&t, &lk, &claim, BEFORE_RENAME, token, res);
	if (rc == FW_OK)
		rc = fw_ok(res);
out:
	fw_lock_release(&lk);
	fw_target_close(&t);
	return fw_result_end(res, rc);
}

/* ---- the streaming transaction --------------------------------------- */

struct fw_txn {
	struct target t;
	struct fw_opts opts;
	int fd;
	char tmp[NAME_MAX + 1];         /* its name in FILE's directory */
	char tmpshown[PATH_MAX + 64];   /* its path, for messages */
	char *names;                    /* our copies of the caller's strings */
	mode_t setid_mode;              /* FILE's bits if set-id, else 0 */
};

/*
 * Copy the strings the transaction uses after fw_txn_begin returns (FILE's
 * path for messages, the fence's and the mount table's names), so the
 * caller may free its own at once.
 */
static int copy_names(struct fw_txn *txn, const char *path)
{
	const char *src[3] = { path, txn->opts.fence_path,
	                       txn->opts.mountinfo };
	size_t len[3], total = 0;
	char *p;

	for (int i = 0; i < 3; i++)
		total += len[i] = src[i] ? strlen(src[i]) + 1 : 0;
	p = txn->names = malloc(total ? total : 1);
	if (!p)
		return -1;
	for (int i = 0; i < 3; i++)
		if (src[i]) {
			memcpy(p, src[i], len[i]);
			src[i] = p;
			p += len[i];
		}
	txn->t.path = src[0];
	txn->opts.fence_path = src[1];
	txn->opts.mountinfo = src[2];
	return 0;
}

/*
 * Free TXN, removing its temporary file unless it was renamed into place.
 * A file that cannot be removed is added to RES's message, which keeps its
 * code: the caller must still learn what happened to FILE first.
 */
static void txn_free(struct fw_txn *txn, struct fw_result *res)
{
	int err = fw_tmp_discard(txn->t.dirfd, txn->tmp, txn->fd);

	if (err)
		fw_result_append(res, "%sthe temporary file %s could not be "
		                 "removed (%s): remove it with 'fencedwrite "
		                 "--clean %s'", res && res->message[0] ? "; "
		                 : "", txn->tmpshown, strerror(err),
		                 txn->t.path);
	fw_target_close(&txn->t);
	free(txn->names);
	free(txn);
}

int fw_txn_begin(struct fw_txn **out, const char *path,
                 const struct fw_opts *opts, struct fw_result *res)
{
	struct fw_txn *txn;
	struct stat st, fst;
	int rc;

	*out = NULL;
	fw_result_start(res);
	if (!path || !*path)
		return fw_result_end(res, fw_fail(res, FW_USAGE,
		                                  "no file named"));
	txn = calloc(1, sizeof(*txn));
	if (!txn)
		return fw_result_end(res, fw_fail_sys(res, ENOMEM, "malloc",
		                                      path));
	txn->opts = opts ? *opts : fw_default_opts;
	txn->fd = -1;
	if (copy_names(txn, path) < 0) {
		free(txn);
		return fw_result_end(res, fw_fail_sys(res, ENOMEM, "malloc",
		                                      path));
	}
	rc = fw_target_open(&txn->t, txn->t.path, &txn->opts, res);
	if (rc != FW_OK) {
		free(txn->names);
		free(txn);
		return fw_result_end(res, rc);
	}
	rc = fw_mount_check(&txn->t, &txn->opts, res);
	if (rc == FW_OK)
		rc = fw_file_state(&txn->t, &st, res);
	/* Fail before the producer runs, not after: an existing FILE with
	   no fence, or a named fence that is missing, can never be
	   committed. */
	if ((rc == 0 || (rc == 1 && txn->opts.fence_path)) &&
	    fstatat(txn->t.fdirfd, txn->t.fbase, &fst, AT_SYMLINK_NOFOLLOW) < 0)
		rc = errno != ENOENT ? fw_fail_sys(res, errno, "stat",
		                                   txn->t.fshown)
		     : txn->opts.fence_path ? fw_named_fence_missing(&txn->t, res)
		     : fw_not_fenced(&txn->t, res);
	if (rc == 0 || rc == 1) {
		mode_t want = fw_wanted_mode(rc == 0 ? &st : NULL, &txn->opts);
		struct stat now;

		/* A set-id file is filled while only its owner may write it:
		   content another user wrote into it would be made set-id
		   again at the commit (the kernel clears the bits at that
		   user's write, fw_txn_commit sets them). */
		if (want & (S_ISUID | S_ISGID))
			txn->setid_mode = want;
		txn->fd = fw_tmp_create(txn->t.dirfd, txn->t.base,
		                        txn->setid_mode ? 0600 : want & 0777,
		                        txn->tmp, sizeof(txn->tmp), &now);
		if (txn->fd < 0)
			txn->tmp[0] = '\0';
		fw_tmp_shown(txn->t.dirshown, txn->t.base, txn->tmp,
		          txn->tmpshown, sizeof(txn->tmpshown));
		if (txn->fd < 0)
			rc = fw_fail_sys(res, errno, "open", txn->tmpshown);
		else if ((txn->setid_mode
		          ? fw_set_owner_and_bits(txn->fd, &now,
		                                  rc == 0 ? &st : NULL, 0600, 1)
		          : fw_set_mode(txn->fd, &now, rc == 0 ? &st : NULL,
		                        &txn->opts)) < 0)
			rc = fw_fail_sys(res, errno, "fchmod", txn->tmpshown);
		else
			rc = FW_OK;
	}
	if (rc != FW_OK) {
		txn_free(txn, res);
		return fw_result_end(res, rc);
	}
	*out = txn;
	return fw_result_end(res, fw_ok(res));
}

int fw_txn_fd(const struct fw_txn *txn)
{
	return txn->fd;
}

int fw_txn_write(struct fw_txn *txn, const void *buf, size_t len,
                 struct fw_result *res)
{
	fw_result_start(res);
	if (fw_write_all(txn->fd, buf, len, &txn->opts) < 0)
		return fw_result_end(res, fw_fail_sys(res, errno, "write",
		                                      txn->tmpshown));
	return fw_result_end(res, fw_ok(res));
}

int fw_txn_copy_fd(struct fw_txn *txn, int fd, const char *fd_name,
                   struct fw_result *res)
{
	char both[PATH_MAX + 512];
	int read_side;

	fw_result_start(res);
	if (fw_copy_fd(fd, txn->fd, &txn->opts, &read_side) == 0)
		return fw_result_end(res, fw_ok(res));
	if (read_side == 1)
		return fw_result_end(res, fw_fail_sys(res, errno, "read",
		                                      fd_name));
	if (read_side == 0)
		return fw_result_end(res, fw_fail_sys(res, errno, "write",
		                                      txn->tmpshown));
	snprintf(both, sizeof(both), "%s, %s", fd_name, txn->tmpshown);
	return fw_result_end(res, fw_fail_sys(res, errno, "copy", both));
}

void fw_txn_abort(struct fw_txn *txn)
{
	if (txn)
		txn_free(txn, NULL);
}

int fw_txn_rollback(struct fw_txn *txn, struct fw_result *res)
{
	fw_result_start(res);
	if (!txn)
		return fw_result_end(res, fw_ok(res));
	txn_free(txn, res);
	return fw_result_end(res, res && res->message[0] ? FW_SYSTEM : FW_OK);
}

/*
 * Below this size the content's fsync takes a fraction of a millisecond:
 * not worth a thread.
 */
#define OVERLAP_SYNC_BYTES (1 << 20)

/*
 * Step 1: what FILE will be (inode, size, digest), and the content made
 * durable, before any lock is taken.  The digest is read back from the
 * page cache while the content's fsync runs (fw_fsync_begin): for a large
 * file the hashing then hides behind the writeback, where hashing first
 * and syncing after added 0.2 s per GiB.  The bytes hashed are the file's
 * own, read after the last write, so the digest is that of exactly what
 * the rename puts in place.
 */
static int content_durable(struct fw_txn *txn, struct fw_record *change,
                           struct fw_result *res)
{
	struct fw_sync_job job;
	struct stat st;
	int rc = FW_OK;

	memset(change, 0, sizeof(*change));
	if (fstat(txn->fd, &st) < 0)
		return fw_fail_sys(res, errno, "fstat", txn->tmpshown);
	(void)fw_fsync_begin(&job, txn->fd, st.st_size >= OVERLAP_SYNC_BYTES);
	if (fw_digest_fd(txn->fd, &change->size, &change->digest) < 0)
		rc = fw_fail_sys(res, errno, "read", txn->tmpshown);
	if (fw_fsync_end(&job) < 0 && rc == FW_OK)
		rc = fw_fail_sys(res, errno, "fsync", txn->tmpshown);
	change->file = FW_FILE_PRESENT;
	change->ino = (uint64_t)st.st_ino;
	return rc;
}

int fw_txn_commit(struct fw_txn *txn, uint64_t token, struct fw_result *res)
{
	struct fw_record change;
	int rc;

	fw_result_start(res);
	if (token == 0)
		rc = fw_zero_token(res);
	/* The kernel drops set-id bits at the first write of a process that
	   may not set them (CAP_FSETID); the owner may set them again. */
	else if (txn->setid_mode && fchmod(txn->fd, txn->setid_mode) < 0)
		rc = fw_fail_sys(res, errno, "fchmod", txn->tmpshown);
	/* 1. The content is durable before the fence can name it. */
	else if ((rc = content_durable(txn, &change, res)) != FW_OK)
		;   /* RES says which call failed */
	else if (fw_cancelled(&txn->opts))
		rc = fw_fail_sys(res, EINTR, "commit", txn->t.path);
	else
		rc = fenced_change(&txn->t, token, txn->tmp, &change,
		                   &txn->opts, res);
	txn_free(txn, res);
	return fw_result_end(res, rc);
}

int fw_commit_buffer(const char *path, uint64_t token, const void *buf,
                     size_t len, const struct fw_opts *opts,
                     struct fw_result *res)
{
	struct fw_txn *txn;
	int rc;

	fw_result_start(res);
	if (token == 0)
		return fw_result_end(res, fw_zero_token(res));
	rc = fw_txn_begin(&txn, path, opts, res);
	if (rc != FW_OK)
		return rc;
	rc = fw_txn_write(txn, buf, len, res);
	if (rc != FW_OK) {
		txn_free(txn, res);
		return fw_result_end(res, rc);
	}
	return fw_txn_commit(txn, token, res);
}

/* ---- read-modify-write ------------------------------------------------ */

int fw_update_begin(struct fw_txn **out, const char *path, uint64_t token,
                    const struct fw_opts *opts, int *current,
                    struct fw_result *res)
{
	struct fw_txn *txn;
	int rc, fd;

	*out = NULL;
	*current = -1;
	/* Claim first: from here on FILE changes only under a newer token,
	   and then this update's commit is stale, whatever it read. */
	rc = fw_claim(path, token, opts, res);
	if (rc == FW_OK)
		rc = fw_txn_begin(&txn, path, opts, res);
	if (rc != FW_OK)
		return rc;
	fd = openat(txn->t.dirfd, txn->t.base, O_RDONLY | O_NOFOLLOW |
	            O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno != ENOENT) {
		fw_result_start(res);
		rc = fw_fail_sys(res, errno, "open", txn->t.path);
		txn_free(txn, res);
		return fw_result_end(res, rc);
	}
	*current = fd;
	*out = txn;
	return FW_OK;
}

int fw_append_buffer(const char *path, uint64_t token, const void *buf,
                     size_t len, const struct fw_opts *opts,
                     struct fw_result *res)
{
	struct fw_txn *txn;
	int rc, current;

	rc = fw_update_begin(&txn, path, token, opts, &current, res);
	if (rc != FW_OK)
		return rc;
	rc = current < 0 ? FW_OK
	     : fw_txn_copy_fd(txn, current, txn->t.path, res);
	if (current >= 0)
		close(current);
	if (rc == FW_OK)
		rc = fw_txn_write(txn, buf, len, res);
	if (rc != FW_OK) {
		txn_free(txn, res);
		return fw_result_end(res, rc);
	}
	return fw_txn_commit(txn, token, res);
}

/* ---- the other operations -------------------------------------------- */

int fw_delete(const char *path, uint64_t token, const struct fw_opts *opts,
              struct fw_result *res)
{
	struct target t;
	int rc;

	rc = fw_target_begin(&t, path, token, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_mount_check(&t, opts, res);
	if (rc == FW_OK) {
		struct fw_record gone;

		memset(&gone, 0, sizeof(gone));
		gone.file = FW_FILE_ABSENT;
		rc = fenced_change(&t, token, NULL, &gone, opts, res);
	}
	fw_target_close(&t);
	return fw_result_end(res, rc);
}




