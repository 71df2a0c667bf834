/* SPDX-License-Identifier: MIT */
/*
 * io.c - the few system calls whose short counts and EINTR every caller
 * would otherwise handle again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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
 * An fsync in a short-lived thread of its own while the caller goes on:
 * the content's fsync waits for the disk (and spends CPU allocating its
 * blocks), the digest's read-back waits for a CPU, and started this way
 * the two overlap.  sync_file_range() alone cannot do it: it queues the
 * writeback in the caller, blocked on the device's queue about as long as
 * the fsync would have waited.  Native AIO's fsync runs in a kernel worker,
 * but io_destroy waits for two RCU grace periods (37 ms measured), and
 * io_uring is often disabled.  The thread calls libc's fsync, so whatever
 * interposes fsync sees this one as it sees every other.
 *
 * The thread blocks every signal: a signal meant for the caller's cancel
 * flag must interrupt the caller, not this fsync.  When no thread can be
 * made, fw_fsync_end makes the fsync in the caller.
 */
static void *fsync_thread(void *arg)
{
	struct fw_sync_job *job = arg;

	job->err = fw_fsync(job->fd) < 0 ? errno : 0;
	return NULL;
}

int fw_fsync_begin(struct fw_sync_job *job, int fd, int overlap)
{
	sigset_t all, old;

	job->fd = fd;
	job->err = 0;
	job->started = 0;
	if (!overlap)
		return 0;
	sigfillset(&all);
	if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
		return 0;
	job->started = pthread_create(&job->thread, NULL, fsync_thread,
	                              job) == 0;
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	return job->started;
}

/*
 * Wait for the fsync begun by fw_fsync_begin: 0, or -1 with its errno.
 * The answer is the fsync's own, never that of a second try (see
 * fw_fsync above).
 */
int fw_fsync_end(struct fw_sync_job *job)
{
	if (!job->started)
		return fw_fsync(job->fd);
	job->started = 0;
	/* Cannot fail: the thread is ours, joinable, and joined once. */
	(void)pthread_join(job->thread, NULL);
	if (job->err) {
		errno = job->err;
		return -1;
	}
	return 0;
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
