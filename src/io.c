/* SPDX-License-Identifier: MIT */
/*
 * io.c - the few system calls whose short counts and EINTR every caller
 * would otherwise handle again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int fw_write_all(int fd, const void *buf, size_t len,
                 const struct fw_opts *opts)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR && !fw_cancelled(opts))
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The fence update is not interruptible: once begun it must land whole. */
int fw_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * A failed fsync is never retried as if nothing happened: after EIO the
 * kernel may have dropped the dirty pages, and a second fsync would report
 * success for data that is gone.  Only EINTR (NFS "intr" mounts) is retried.
 */
int fw_fsync(int fd)
{
	int rc;

	do
		rc = fsync(fd);
	while (rc < 0 && errno == EINTR);
	return rc;
}

int fw_fdatasync(int fd)
{
	int rc;

	do
		rc = fdatasync(fd);
	while (rc < 0 && errno == EINTR);
	return rc;
}

/*
 * Copy everything from IN to OUT in constant memory.  The kernel moves the
 * bytes itself where it can: copy_file_range() from a regular file (a
 * reflink or in-kernel copy), splice() from a pipe; anything else, or a
 * kernel or filesystem that declines (EXDEV, EINVAL, ENOSYS, EOPNOTSUPP),
 * takes the plain read/write loop, from where the fast path stopped.
 * On failure *READ_SIDE tells which descriptor failed.
 */
int fw_copy_fd(int in, int out, const struct fw_opts *opts, int *read_side)
{
	char buf[65536];
	struct stat st;
	int kind = 0;   /* 1 copy_file_range, 2 splice, 0 read/write */

	*read_side = 1;
	if (fstat(in, &st) < 0)
		return -1;
	if (S_ISREG(st.st_mode)) {
		kind = 1;
	} else if (S_ISFIFO(st.st_mode)) {
		kind = 2;
		/* A larger pipe halves the wake-ups between writer and us for
		   large content; refused sizes (pipe-max-size) are harmless. */
		(void)fcntl(in, F_SETPIPE_SZ, 1 << 20);
	}
	while (kind) {
		ssize_t n = kind == 1
		        ? copy_file_range(in, NULL, out, NULL, 1 << 30, 0)
		        : splice(in, NULL, out, NULL, 1 << 20, SPLICE_F_MOVE);

		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR && !fw_cancelled(opts))
			continue;
		if (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
		    errno == EOPNOTSUPP)
			break;   /* not here: the plain loop takes over */
		*read_side = -1;   /* either side: the caller names both */
		return -1;
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR && !fw_cancelled(opts))
				continue;
			return -1;
		}
		if (fw_write_all(out, buf, (size_t)n, opts) < 0) {
			*read_side = 0;
			return -1;
		}
	}
}
