/* SPDX-License-Identifier: MIT */
/*
 * lock.c - exclusive access to a fence file.
 *
 * fcntl record locks are the only locks that NFS carries between hosts, and
 * they come in two kinds:
 *
 *   - OFD locks (F_OFD_SETLK*, Linux 3.15) belong to an open file
 *     description.  Two threads that each open the fence exclude each other,
 *     and closing some other descriptor of the file does not drop them.
 *   - Classic POSIX locks (F_SETLK*) belong to the process.  Threads of one
 *     process never conflict with each other, and ANY close() of ANY
 *     descriptor of the file by the process silently drops every lock the
 *     process holds on it.  (SQLite's os_unix.c tells this story at length.)
 *
 * OFD is used where the kernel and the filesystem accept it; some NFSv3
 * clients answer it with EINVAL or ENOLCK, and there the classic kind is
 * used.  To make the classic kind safe inside one process, every lock is
 * taken under an in-process guard keyed by (device, inode):
 *
 *   - only the thread holding an inode's guard may hold a lock on it, so
 *     threads exclude each other whatever the lock kind;
 *   - a thread that opened the fence but must give up before it holds the
 *     guard (timeout, cancel) does not close its descriptor while another
 *     thread holds the guard: the descriptor is handed to the holder, which
 *     closes it after releasing its own lock.  Otherwise that close() would
 *     drop the holder's classic lock in the middle of its commit.
 *
 * The guard table is the library's only shared state: it mirrors the
 * kernel's per-process lock table, which is shared whether we like it or
 * not.
 *
 * Waiting with a timeout: a blocking F_SETLKW can only be cut short by a
 * signal, and the library installs none.  With a timeout the lock is polled
 * with F_SETLK and a backoff capped at 20 ms; without one the kernel blocks
 * us (F_SETLKW), so a waiting writer burns no CPU at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAX_REOPEN 100

int64_t fw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t fw_deadline(long timeout_ms)
{
	int64_t now;

	if (timeout_ms < 0)
		return -1;
	if (timeout_ms == 0)
		return 0;
	now = fw_now_ns();
	/* A deadline past the end of the clock is no deadline at all (and
	   computing it would overflow). */
	if (timeout_ms > (INT64_MAX - now) / 1000000)
		return -1;
	return now + (int64_t)timeout_ms * 1000000;
}

/* ---- the in-process guard -------------------------------------------- */

struct fw_guard {
	dev_t dev;
	ino_t ino;
	int held;
	unsigned users;         /* holder plus waiters */
	int *pending;           /* descriptors to close after the holder unlocks */
	size_t npending, cap;
	struct fw_guard *next;
};

static pthread_mutex_t guard_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t guard_cv;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static struct fw_guard *guards;

static void guard_init(void)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&guard_cv, &attr);
	pthread_condattr_destroy(&attr);
}

static void guard_unref(struct fw_guard *g)
{
	struct fw_guard **pp;

	if (--g->users > 0)
		return;
	for (pp = &guards; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	free(g->pending);
	free(g);
}

/*
 * Wait for the guard of FD's inode.  On failure (errno ETIMEDOUT, EINTR or
 * ENOMEM) FD has been closed, now or by the holder later.
 */
static struct fw_guard *guard_acquire(int fd, dev_t dev, ino_t ino,
                                      int64_t deadline,
                                      const struct fw_opts *opts)
{
	struct fw_guard *g;
	int err = 0;

	pthread_once(&guard_once, guard_init);
	pthread_mutex_lock(&guard_mu);
	for (g = guards; g && (g->dev != dev || g->ino != ino); g = g->next)
		;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			pthread_mutex_unlock(&guard_mu);
			close(fd);
			errno = ENOMEM;
			return NULL;
		}
		g->dev = dev;
		g->ino = ino;
		g->next = guards;
		guards = g;
	}
	g->users++;
	while (g->held) {
		/* Wake at least every 100 ms to notice a cancel request: a
		   condition wait is never interrupted by a signal. */
		int64_t now = fw_now_ns(), until = now + 100000000;
		struct timespec ts;

		if (fw_cancelled(opts)) {
			err = EINTR;
			break;
		}
		if (deadline == 0 || (deadline > 0 && now >= deadline)) {
			err = ETIMEDOUT;
			break;
		}
		if (deadline > 0 && deadline < until)
			until = deadline;
		ts.tv_sec = until / 1000000000;
		ts.tv_nsec = until % 1000000000;
		pthread_cond_timedwait(&guard_cv, &guard_mu, &ts);
	}
	if (err) {
		/* The holder may hold a classic lock on this inode: our close()
		   would drop it.  Leave the descriptor for the holder to close. */
		if (g->npending == g->cap) {
			size_t cap = g->cap ? 2 * g->cap : 4;
			int *p = realloc(g->pending, cap * sizeof(*p));

			if (p) {
				g->pending = p;
				g->cap = cap;
			}
		}
		if (g->npending < g->cap)
			g->pending[g->npending++] = fd;
		else
			close(fd);  /* out of memory: the lesser evil */
		guard_unref(g);
		pthread_mutex_unlock(&guard_mu);
		errno = err;
		return NULL;
	}
	g->held = 1;
	pthread_mutex_unlock(&guard_mu);
	return g;
}

/* Called after the holder has unlocked and closed its own descriptor. */
static void guard_release(struct fw_guard *g)
{
	pthread_mutex_lock(&guard_mu);
	for (size_t i = 0; i < g->npending; i++)
		close(g->pending[i]);
	g->npending = 0;
	g->held = 0;
	guard_unref(g);
	pthread_cond_broadcast(&guard_cv);
	pthread_mutex_unlock(&guard_mu);
}

/* ---- fcntl locks ----------------------------------------------------- */

/* 1 granted, 0 held by another, -1 error (errno). */
static int set_lock(int fd, short type, int wait, int *ofd)
{
	struct flock fl;

	for (;;) {
		int rc;

		memset(&fl, 0, sizeof(fl));
		fl.l_type = type;
		fl.l_whence = SEEK_SET;
		if (*ofd)
			rc = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
		else
			rc = fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl);
		if (rc == 0)
			return 1;
		if (!wait && (errno == EAGAIN || errno == EACCES))
			return 0;
		/* No OFD locks here (old kernel, some NFSv3 clients): use the
		   classic kind, which the guard makes safe between threads. */
		if (*ofd && (errno == EINVAL || errno == ENOLCK ||
		             errno == EOPNOTSUPP)) {
			*ofd = 0;
			continue;
		}
		return -1;
	}
}

int fw_lock_probe(int fd, int exclusive, char kind[8])
{
	int ofd = 1, rc;
	struct flock fl;

	do
		rc = set_lock(fd, exclusive ? F_WRLCK : F_RDLCK, 0, &ofd);
	while (rc < 0 && errno == EINTR);
	snprintf(kind, 8, "%s", ofd ? "ofd" : "classic");
	if (rc == 1) {
		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_UNLCK;
		fl.l_whence = SEEK_SET;
		(void)fcntl(fd, ofd ? F_OFD_SETLK : F_SETLK, &fl);
	}
	return rc;
}

int fw_lock_try(int fd, int wait)
{
	int ofd = 1, rc;

	do
		rc = set_lock(fd, F_WRLCK, wait, &ofd);
	while (rc < 0 && errno == EINTR);
	return rc;
}

/* Wait for the lock until DEADLINE: FW_OK, FW_LOCKED, or -1 (errno). */
static int wait_lock(int fd, short type, int64_t deadline,
                     const struct fw_opts *opts, int *ofd)
{
	long sleep_us = 500;

	for (;;) {
		int rc = set_lock(fd, type, deadline < 0, ofd);
		struct timespec ts;
		int64_t left;

		if (rc == 1)
			return FW_OK;
		if (rc < 0 && errno != EINTR)
			return -1;
		if (fw_cancelled(opts)) {
			errno = EINTR;
			return -1;
		}
		if (rc < 0)
			continue;   /* interrupted, not cancelled: wait on */
		/* Busy, and we poll: only a timed wait gets here. */
		left = deadline - fw_now_ns();
		if (left <= 0)
			return FW_LOCKED;
		if ((int64_t)sleep_us * 1000 > left)
			sleep_us = (long)(left / 1000) + 1;
		ts.tv_sec = sleep_us / 1000000;
		ts.tv_nsec = (sleep_us % 1000000) * 1000;
		nanosleep(&ts, NULL);
		sleep_us = sleep_us * 2 > 20000 ? 20000 : sleep_us * 2;
	}
}

void fw_lock_release(struct fw_lock *lk)
{
	if (lk->fd < 0)
		return;
	/* close() releases the lock, whichever kind; on NFS it is also the
	   moment the server forgets us, so every write and sync of the
	   commit has been made before this point (the caller's job). */
	close(lk->fd);
	lk->fd = -1;
	guard_release(lk->guard);
	lk->guard = NULL;
}

int fw_lock_open(int dirfd, const char *name, const char *shown,
                 int exclusive, int64_t deadline,
                 const struct fw_opts *opts, struct fw_lock *lk,
                 struct fw_result *res)
{
	int flags = (exclusive ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC |
	            O_NOCTTY | O_NONBLOCK;

	lk->fd = -1;
	lk->guard = NULL;
	lk->ofd = -1;
	for (int attempt = 0; attempt < MAX_REOPEN; attempt++) {
		struct stat st, now;
		int fd, rc, ofd = 1;   /* wait_lock falls back to classic */

		fd = openat(dirfd, name, flags);
		if (fd < 0) {
			if (errno == ENOENT)
				return FW_LOCK_ABSENT;
			if (errno == ELOOP)
				return fw_fail(res, FW_UNSAFE,
				               "%s is a symbolic link; a fence "
				               "must be a regular file", shown);
			if (errno == EINTR && !fw_cancelled(opts))
				continue;
			return fw_fail_sys(res, errno, "open", shown);
		}
		if (fstat(fd, &st) < 0) {
			int err = errno;

			close(fd);
			return fw_fail_sys(res, err, "fstat", shown);
		}
		lk->guard = guard_acquire(fd, st.st_dev, st.st_ino, deadline,
		                          opts);
		if (!lk->guard) {
			if (errno == ETIMEDOUT)
				return fw_fail(res, FW_LOCKED,
				               "%s is locked by another thread "
				               "of this process", shown);
			return fw_fail_sys(res, errno, "lock", shown);
		}
		lk->fd = fd;
		if (!S_ISREG(st.st_mode)) {
			fw_lock_release(lk);
			return fw_fail(res, FW_UNSAFE,
			               "%s is not a regular file", shown);
		}
		rc = wait_lock(fd, exclusive ? F_WRLCK : F_RDLCK, deadline,
		               opts, &ofd);
		lk->ofd = ofd;
		if (rc != FW_OK) {
			int err = errno;

			fw_lock_release(lk);
			if (rc == FW_LOCKED)
				return fw_fail(res, FW_LOCKED,
				               "%s is locked by another writer",
				               shown);
			return fw_fail_sys(res, err, "fcntl(F_SETLKW)", shown);
		}
		/* While we waited, the file we locked may have been replaced
		   or removed; a lock on an inode nobody else will open locks
		   out nobody.  Only a lock on the inode at the path counts. */
		rc = fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW);
		if (rc == 0 && now.st_dev == st.st_dev &&
		    now.st_ino == st.st_ino) {
			/* Owner and mode as of the grant, not as of the open:
			   the trust check judges these. */
			lk->st = now;
			return FW_OK;
		}
		if (rc < 0 && errno != ENOENT) {
			int err = errno;

			fw_lock_release(lk);
			return fw_fail_sys(res, err, "stat", shown);
		}
		fw_lock_release(lk);
	}
	return fw_fail(res, FW_UNSAFE,
	               "%s was replaced %d times while being locked; "
	               "something other than fencedwrite is rewriting it",
	               shown, MAX_REOPEN);
}
