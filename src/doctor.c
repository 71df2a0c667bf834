/*
 * doctor.c - fencedwrite --doctor: where FILE lives, which lock kind works
 * there, and whether fencing can hold.  Changes nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int fw_doctor(const char *path, const struct fw_opts *opts,
              struct fw_doctor_report *rep, struct fw_result *res)
{
	struct target t;
	int rc, fd;

	if (!opts)
		opts = &fw_default_opts;
	fw_result_start(res);
	memset(rep, 0, sizeof(*rep));
	rc = fw_target_open(&t, path, opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_mount_of(t.fdirfd, t.fshown, opts->mountinfo, &rep->mount, res);
	if (rc != FW_OK)
		goto out;
	/* Probe the lock on the fence if there is one (shared, so a running
	   commit is not disturbed), else on the directory itself. */
	fd = openat(t.fdirfd, t.fbase, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	            O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		fd = openat(t.fdirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		rep->lock_granted = fw_lock_probe(fd, 0, rep->lock_kind) == 1;
		close(fd);
	}
	fd = openat(t.dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		rep->o_tmpfile = 1;
		close(fd);
	}
	rep->safe = rep->mount.scope == FW_SCOPE_SHARED ||
	            rep->mount.scope == FW_SCOPE_LOCAL;
	rc = rep->safe ? fw_ok(res)
	               : fw_fail(res, FW_UNSAFE, "%s: %s", path,
	                         rep->mount.why);
out:
	fw_target_close(&t);
	return fw_result_end(res, rc);
}
