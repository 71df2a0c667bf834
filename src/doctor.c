/* SPDX-License-Identifier: MIT */
/*
 * doctor.c - fencedwrite --doctor: where FILE lives, which lock kind works
 * there, and whether fencing can hold.  Changes nothing.
 *
 * The verdict is fw_mount_judge's, the same the write path gives.  The
 * lock probe on the fence goes through fw_lock_open like every other open
 * of a fence by the library: where only classic POSIX locks exist, a bare
 * open() and close() here would drop another thread's lock on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Try a shared lock on the fence without waiting (so a running commit is
   not disturbed); where there is no fence, or the kind was not learnt
   because another thread of ours holds it, try the directory itself. */
static void probe_lock(const struct target *t, const struct fw_opts *opts,
                       struct fw_doctor_report *rep)
{
	struct fw_result ignored;
	struct fw_lock lk;
	int rc, fd;

	rc = fw_lock_open(t->fdirfd, t->fbase, t->fshown, 0, 0, opts, &lk,
	                  &ignored);
	if (rc == FW_OK) {
		rep->lock_granted = 1;
		fw_lock_release(&lk);
	}
	if (lk.ofd >= 0) {
		snprintf(rep->lock_kind, sizeof(rep->lock_kind), "%s",
		         lk.ofd ? "ofd" : "classic");
		return;
	}
	/* The directory is never a fence: closing it drops no one's lock. */
	fd = openat(t->fdirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		int granted = fw_lock_probe(fd, 0, rep->lock_kind) == 1;

		if (rc == FW_LOCK_ABSENT)
			rep->lock_granted = granted;
		close(fd);
	}
}

int fw_doctor(const char *path, const struct fw_opts *opts,
              struct fw_doctor_report *rep, struct fw_result *res)
{
	struct target t;
	int rc, fd;

	if (!opts)
		opts = &fw_default_opts;
	fw_result_start(res);
	memset(rep, 0, sizeof(*rep));
	rep->lease_seconds = -1;
	rep->recover_lost_locks = -1;
	rc = fw_target_open(&t, path, opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_mount_judge(&t, opts, 1, &rep->mount, res);
	if (rc != FW_OK && (rc != FW_UNSAFE || !rep->mount.fstype[0]))
		goto out;   /* no verdict to report: the message says why */
	rep->safe = rc == FW_OK;
	if (rep->safe && rep->mount.scope != FW_SCOPE_SHARED &&
	    rep->mount.scope != FW_SCOPE_LOCAL) {
		size_t n = strlen(rep->mount.why);

		snprintf(rep->mount.why + n, sizeof(rep->mount.why) - n,
		         "; allowed (--local-locks-ok): every writer must run "
		         "on this host");
	}
	probe_lock(&t, opts, rep);
	/* A mount table given for diagnosis describes another host's mounts:
	   this client's settings would be a wrong answer about it. */
	if (!opts->mountinfo)
		fw_nfs_client_report(rep);
	fd = openat(t.dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		rep->o_tmpfile = 1;
		close(fd);
	}
	if (rep->safe)
		rc = fw_ok(res);
out:
	fw_target_close(&t);
	return fw_result_end(res, rc);
}
