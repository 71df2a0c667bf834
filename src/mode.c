/* SPDX-License-Identifier: MIT */
/*
 * mode.c - the owner, group and permission bits of the files we create:
 * FILE's replacement keeps FILE's, where the process may set them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/*
 * The permission bits FILE is to have, for creating its replacement:
 * FILE's own, the caller's, or 0666 (less the umask, applied by open).
 */
mode_t fw_wanted_mode(const struct stat *old, const struct fw_opts *o)
{
	if (o->flags & FW_USE_MODE)
		return o->mode & 07777;
	return old ? old->st_mode & 07777 : 0666;
}

/*
 * Give FD (whose state is NOW) the owner and group OLD has, where the
 * process may, and the bits WANT; when EXACT, WANT even if NOW already
 * differs only by the umask.
 */
int fw_set_owner_and_bits(int fd, const struct stat *now,
                           const struct stat *old, mode_t want, int exact)
{
	if (old && (old->st_uid != now->st_uid || old->st_gid != now->st_gid)) {
		if (fchown(fd, old->st_uid, old->st_gid) < 0) {
			if (errno != EPERM)
				return -1;
			/* A member of FILE's group who is not its owner may not
			   give the file away but may keep its group: otherwise
			   FILE would take the committer's group and shut the
			   other members out. */
			if (old->st_gid != now->st_gid &&
			    fchown(fd, (uid_t)-1, old->st_gid) < 0 &&
			    errno != EPERM)
				return -1;
		}
		/* fchown may have cleared set-id bits: set them again. */
		return fchmod(fd, want);
	}
	if (exact && (now->st_mode & 07777) != want)
		return fchmod(fd, want);
	return 0;
}

/*
 * Give FD (whose state is NOW) the owner and bits FILE has or will have.
 * Most of the time the file was created right and nothing is called.
 */
int fw_set_mode(int fd, const struct stat *now, const struct stat *old,
                const struct fw_opts *o)
{
	return fw_set_owner_and_bits(fd, now, old, fw_wanted_mode(old, o),
	                             old || (o->flags & FW_USE_MODE));
}
