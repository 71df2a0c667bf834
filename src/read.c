/* SPDX-License-Identifier: MIT */
/*
 * read.c - one whole version of FILE, for readers on NFS.
 *
 * A commit replaces FILE by rename.  On a local filesystem, and on NFSv4
 * (whose open state keeps the old file alive on the server), a reader that
 * opened the old FILE reads it to the end.  On NFSv3 the server forgets
 * the old inode once it is unlinked, and a reader on another client can
 * get ESTALE in the middle of its read; between the lookup and the open it
 * can also get ESTALE or, while another client's writer is caught between
 * the two calls of a silly rename, ENOENT.
 *
 * Such a reader must start again, and must not have printed half of the
 * old version first.  So the version is copied into an anonymous memory
 * file (memfd) and only handed out once read whole; a read that fails
 * with ESTALE or ENOENT is retried, with a short backoff, for a bounded
 * time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Long enough to ride out a commit storm, short enough for a cron job. */
#define READ_ATTEMPTS 20
#define READ_BACKOFF_MAX_MS 100

static int retryable(int err)
{
	return err == ESTALE || err == ENOENT;
}

/*
 * IN to OUT with read() and write(): 0, or 1 if reading failed, 2 if
 * writing did (errno set).  Not copy_file_range: an NFS source and a memfd
 * target are on different filesystems, and the read errors are the ones
 * that matter here.
 */
static int copy_plain(int in, int out, const struct fw_opts *opts,
                      struct fw_digest *d)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(in, chunk, sizeof(chunk));

		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR && !fw_cancelled(opts))
				continue;
			return 1;
		}
		fw_digest_update(d, chunk, (size_t)n);
		if (fw_write_all(out, chunk, (size_t)n, opts) < 0)
			return 2;
	}
}

/* -1 with errno ERR: the caller tries again. */
static int again(int err)
{
	errno = err;
	return -1;
}

/*
 * Copy one version of FILE into BUF (a memfd, emptied first), and what it
 * was into GOT (inode, size, digest).  FW_OK, or -1 with errno set to a
 * retryable error, or a failure code in RES.
 */
static int read_once(const struct target *t, int buf,
                     const struct fw_opts *opts, struct fw_record *got,
                     struct fw_result *res)
{
	struct fw_digest d;
	struct stat st;
	int fd, side, err;

	if (ftruncate(buf, 0) < 0 || lseek(buf, 0, SEEK_SET) < 0)
		return fw_fail_sys(res, errno, "truncate", "memory file");
	do
		fd = openat(t->dirfd, t->base, O_RDONLY | O_NOFOLLOW |
		            O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	while (fd < 0 && errno == EINTR && !fw_cancelled(opts));
	if (fd < 0) {
		if (retryable(errno))
			return -1;
		if (errno == ELOOP)
			return fw_fail(res, FW_UNSAFE, "%s is a symbolic link; "
			               "fencedwrite neither follows nor reads "
			               "links: name the file it points to",
			               t->path);
		return fw_fail_sys(res, errno, "open", t->path);
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return retryable(err) ? again(err)
		                      : fw_fail_sys(res, err, "fstat", t->path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fw_fail(res, FW_UNSAFE, "%s is not a regular file",
		               t->path);
	}
	fw_digest_init(&d);
	side = copy_plain(fd, buf, opts, &d);
	err = errno;
	close(fd);
	if (side == 0) {
		got->file = FW_FILE_PRESENT;
		got->ino = (uint64_t)st.st_ino;
		got->size = d.total;
		got->digest = fw_digest_final(&d);
		return FW_OK;
	}
	if (side == 1 && retryable(err))
		return again(err);
	if (side == 2)
		return fw_fail_sys(res, err, "write", "memory file");
	return fw_fail_sys(res, err, "read", t->path);
}

/*
 * The token FILE's content GOT was committed under, from the fence's two
 * records: 1 and *TOKEN if one of them names exactly that content (inode,
 * size and digest), 0 if neither does (a commit landed between our read of
 * the fence and of FILE, or FILE was changed behind the fence's back),
 * or a failure code.
 */
static int token_of(const struct fw_fence *f, const struct fw_record *got,
                    uint64_t *token)
{
	const struct fw_record *r[2] = { &f->cur, f->has_prev ? &f->prev : NULL };

	for (int i = 0; i < 2; i++)
		if (r[i] && r[i]->file == FW_FILE_PRESENT &&
		    r[i]->ino == got->ino && r[i]->size == got->size &&
		    r[i]->digest == got->digest) {
			*token = r[i]->ftoken;
			return 1;
		}
	return 0;
}

/* The fence's records, read under a shared lock held only that long. */
static int fence_now(const struct target *t, const struct fw_opts *opts,
                     struct fw_fence *f, struct fw_result *res)
{
	struct fw_lock lk;
	int rc = fw_fence_lock(t, 0, FW_ABSENT_FAILS,
	                       fw_deadline(opts->timeout_ms), opts, &lk, f, res);

	if (rc == FW_OK)
		fw_lock_release(&lk);
	return rc;
}

int fw_read_version(const char *path, int out, const struct fw_opts *opts,
                    uint64_t *token, struct fw_result *res)
{
	struct fw_record got;
	struct fw_fence f;
	struct target t;
	long backoff_ms = 1;
	int rc, buf, side, attempt;

	fw_result_start(res);
	if (!opts)
		opts = &fw_default_opts;
	rc = fw_target_open(&t, path, opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	buf = memfd_create("fencedwrite-read", MFD_CLOEXEC);
	if (buf < 0) {
		fw_target_close(&t);
		return fw_result_end(res, fw_fail_sys(res, errno,
		                                      "memfd_create", path));
	}
	for (attempt = 1;; attempt++) {
		struct timespec ts;
		int err = ESTALE;

		/* Fence first, FILE second: FILE's content is then either
		   what one of these records names, or newer (and the next
		   attempt sees its record). */
		rc = token ? fence_now(&t, opts, &f, res) : FW_OK;
		if (rc == FW_OK && token && f.cur.file == FW_FILE_UNKNOWN)
			rc = fw_fail(res, FW_UNSAFE, "%s: its fence is of format "
			             "version 1, which does not record the "
			             "content's token; it will after the next "
			             "change", path);
		if (rc != FW_OK)
			break;
		rc = read_once(&t, buf, opts, &got, res);
		if (rc == -1) {
			err = errno;
		} else if (rc != FW_OK || !token) {
			break;
		} else {
			/* The fence again: unchanged, its records name every
			   version FILE could have been meanwhile (an inode
			   number can come back with the same content). */
			struct fw_fence now;

			rc = fence_now(&t, opts, &now, res);
			if (rc != FW_OK)
				break;
			if (now.cur.seq == f.cur.seq &&
			    token_of(&f, &got, token))
				break;
			err = 0;   /* read whole, its record not seen */
		}
		if (attempt == READ_ATTEMPTS || fw_cancelled(opts)) {
			if (err)
				rc = fw_fail_sys(res, err, "read", path);
			else
				rc = fw_fail(res, FW_UNSAFE, "%s is not what "
				             "its fence's records describe: "
				             "changed outside fencedwrite, or "
				             "replaced too often to read",
				             path);
			fw_result_append(res, " (%d attempts)", attempt);
			break;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = backoff_ms * 1000000;
		nanosleep(&ts, NULL);
		if (backoff_ms * 2 <= READ_BACKOFF_MAX_MS)
			backoff_ms *= 2;
		else
			backoff_ms = READ_BACKOFF_MAX_MS;
	}
	if (rc == FW_OK) {
		if (lseek(buf, 0, SEEK_SET) < 0)
			rc = fw_fail_sys(res, errno, "seek", "memory file");
		else if (fw_copy_fd(buf, out, opts, &side) < 0)
			rc = side == 1 ? fw_fail_sys(res, errno, "read",
			                             "memory file")
			               : fw_fail_sys(res, errno, "write",
			                             "the output");
		else
			rc = fw_ok(res);
	}
	close(buf);
	fw_target_close(&t);
	return fw_result_end(res, rc);
}

int fw_read(const char *path, int out, const struct fw_opts *opts,
            struct fw_result *res)
{
	return fw_read_version(path, out, opts, NULL, res);
}
