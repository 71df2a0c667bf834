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
static int copy_plain(int in, int out, const struct fw_opts *opts)
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
 * Copy one version of FILE into BUF (a memfd, emptied first).  FW_OK, or
 * -1 with errno set to a retryable error, or a failure code in RES.
 */
static int read_once(const struct target *t, int buf,
                     const struct fw_opts *opts, struct fw_result *res)
{
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
	side = copy_plain(fd, buf, opts);
	err = errno;
	close(fd);
	if (side == 0)
		return FW_OK;
	if (side == 1 && retryable(err))
		return again(err);
	if (side == 2)
		return fw_fail_sys(res, err, "write", "memory file");
	return fw_fail_sys(res, err, "read", t->path);
}

int fw_read(const char *path, int out, const struct fw_opts *opts,
            struct fw_result *res)
{
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

		rc = read_once(&t, buf, opts, res);
		if (rc != -1)
			break;
		if (attempt == READ_ATTEMPTS || fw_cancelled(opts)) {
			rc = fw_fail_sys(res, errno, "read", path);
			fw_result_append(res, " (%d attempts: it keeps being "
			                 "replaced or removed)", attempt);
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
