/* SPDX-License-Identifier: MIT */
/*
 * trust.c - whose fence this is, and whether this process may believe it.
 *
 * A fence protects against stale holders only if nobody outside the set of
 * writers can lower its token.  Anyone who may write the fence, or remove
 * and re-create it, can: the checksum is no signature.  So a fence is
 * believed only when everyone who can write it is someone this process
 * must trust anyway:
 *
 *   - its owner is root or this process's effective user, or the fence is
 *     writable by its group and this process is a member of that group
 *     (a team of accounts sharing a group directory);
 *   - it is not writable by others: any local user could reset it;
 *   - if it is writable by its group, this process is a member of that
 *     group: the group's members could reset it.
 *
 * In a sticky directory (/tmp) the owner of the fence may also remove it
 * and create another, which is why the owner must be trusted, not merely
 * the present mode.  On NFS with root_squash (or all_squash) files belong
 * to the anonymous user, whom every client's squashed processes share;
 * such a fence is refused like any other.
 *
 * Whoever may rename or remove names in the fence's directory can take the
 * fence away (the next write starts again at 0) or put another in its
 * place, so the directory is judged too: it must belong to root, the
 * caller or the fence's owner, and anyone else who may write it must be
 * kept from others' names by the sticky bit, or be a member of the
 * caller's group.  And since in a setgid directory any file created there
 * gets the directory's group, a group-writable fence of the caller's
 * group is only evidence of a team mate where nobody else may create
 * files in the directory.
 *
 * POSIX ACLs may name more writers than the mode shows (beyond the group
 * bits, which then are the ACL's mask): every user or group an ACL lets
 * write the fence, or the directory without the sticky bit, must be one
 * the caller trusts.  Where the group bits deny write, no named entry can
 * grant it, and the ACL is not read.  NFSv4 ACLs are not read: a server
 * that maps them to the mode bits is judged by those.
 *
 * Owners and groups are reported as numbers: resolving names goes through
 * NSS, which on a fleet may mean LDAP round trips or a hang while a
 * directory server is down, in a path whose whole point is to fail fast
 * and closed.  "ls -ln" shows the same numbers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"

/* 1 if GID is this process's effective or a supplementary group, 0 if not,
   -1 (errno) if the list cannot be had. */
int fw_in_group(gid_t gid)
{
	gid_t *groups;
	int n, found = 0;

	if (getegid() == gid)
		return 1;
	n = getgroups(0, NULL);
	if (n <= 0)
		return n;
	groups = malloc((size_t)n * sizeof(*groups));
	if (!groups)
		return -1;
	n = getgroups(n, groups);
	for (int i = 0; i < n; i++)
		found |= groups[i] == gid;
	free(groups);
	return n < 0 ? -1 : found;
}

#define REMEDY "; remove it and re-create it as the right user with " \
	"'fencedwrite --init -t N FILE', N at least the largest token ever " \
	"issued"

/* The Linux xattr form of a POSIX ACL: a version, then 8-byte entries. */
#define ACL_VERSION 2
#define ACL_USER 0x02
#define ACL_GROUP 0x08
#define ACL_MASK 0x10
#define ACL_WRITE 02

static uint32_t le(const unsigned char *p, int n)
{
	uint32_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * Whether FD's access ACL lets someone write whom this process does not
 * trust (a named user other than root, itself or ALSO; a named group it
 * is not in): 1 and the first such writer in WHO, 0 if not (or no ACL),
 * -1 if the ACL cannot be read or understood (errno).
 */
static int untrusted_acl_writer(int fd, uid_t also, char *who, size_t len)
{
	unsigned char buf[4 + 64 * 8];
	unsigned mask = 07;
	ssize_t n = fgetxattr(fd, "system.posix_acl_access", buf, sizeof(buf));

	if (n < 0)
		return errno == ENODATA || errno == ENOTSUP ? 0 : -1;
	if (n < 4 || (n - 4) % 8 || le(buf, 4) != ACL_VERSION) {
		errno = EINVAL;
		return -1;
	}
	for (ssize_t i = 4; i < n; i += 8)
		if (le(buf + i, 2) == ACL_MASK)
			mask = le(buf + i + 2, 2);
	for (ssize_t i = 4; i < n; i += 8) {
		unsigned tag = le(buf + i, 2), perm = le(buf + i + 2, 2) & mask;
		uint32_t id = le(buf + i + 4, 4);

		if (!(perm & ACL_WRITE))
			continue;
		if (tag == ACL_USER && id != 0 && id != geteuid() && id != also) {
			snprintf(who, len, "user uid %lu", (unsigned long)id);
			return 1;
		}
		if (tag == ACL_GROUP) {
			int member = fw_in_group((gid_t)id);

			if (member < 0)
				return -1;
			if (!member) {
				snprintf(who, len, "group gid %lu",
				         (unsigned long)id);
				return 1;
			}
		}
	}
	return 0;
}

/*
 * The directory DST (descriptor DIRFD, shown as DSHOWN) of a fence owned
 * by FENCE_OWNER: FW_OK, or FW_UNSAFE naming who could swap the fence.
 * *CLOSED is set when nobody but its owner and its group's members may
 * create files there.
 */
static int dir_trusted(int dirfd, const struct stat *dst, uid_t fence_owner,
                       const char *dshown, const char *shown, int *closed,
                       struct fw_result *res)
{
	unsigned long me = (unsigned long)geteuid();
	unsigned mode = dst->st_mode & 07777;
	int sticky = (dst->st_mode & S_ISVTX) != 0, rc;
	char who[64];

	*closed = !(dst->st_mode & S_IWOTH);
	if (dst->st_uid != 0 && dst->st_uid != geteuid() &&
	    dst->st_uid != fence_owner)
		return fw_fail(res, FW_UNSAFE,
		               "%s's directory %s belongs to uid %lu (mode "
		               "%04o), who may rename or remove the fence: it "
		               "must belong to root, uid %lu or the fence's owner",
		               shown, dshown, (unsigned long)dst->st_uid, mode,
		               me);
	if ((dst->st_mode & S_IWOTH) && !sticky)
		return fw_fail(res, FW_UNSAFE,
		               "%s's directory %s is writable by every user "
		               "without the sticky bit (mode %04o): anyone could "
		               "remove the fence or put another in its place; "
		               "make it sticky (chmod +t) or not world-writable",
		               shown, dshown, mode);
	if ((dst->st_mode & S_IWGRP) && !sticky) {
		rc = fw_in_group(dst->st_gid);
		if (rc < 0)
			return fw_fail_sys(res, errno, "getgroups", dshown);
		if (!rc)
			return fw_fail(res, FW_UNSAFE,
			               "%s's directory %s is writable by group "
			               "gid %lu (mode %04o), which uid %lu is not "
			               "in: its members could remove the fence or "
			               "put another in its place", shown, dshown,
			               (unsigned long)dst->st_gid, mode, me);
	}
	if (!(dst->st_mode & S_IWGRP))
		return FW_OK;
	rc = untrusted_acl_writer(dirfd, fence_owner, who, sizeof(who));
	if (rc < 0)
		return fw_fail_sys(res, errno, "getxattr", dshown);
	if (rc > 0)
		*closed = 0;
	if (rc > 0 && !sticky)
		return fw_fail(res, FW_UNSAFE,
		               "%s's directory %s has an ACL that lets %s write "
		               "it: it could remove the fence or put another in "
		               "its place", shown, dshown, who);
	return FW_OK;
}

int fw_fence_trusted(int fd, const struct stat *st, int dirfd,
                     const char *dshown, const char *shown,
                     struct fw_result *res)
{
	unsigned long uid = st->st_uid, gid = st->st_gid;
	unsigned long me = (unsigned long)geteuid();
	unsigned mode = st->st_mode & 07777;
	int owner_trusted = st->st_uid == 0 || st->st_uid == geteuid();
	int group_writes = (st->st_mode & S_IWGRP) != 0, member = 0, closed, rc;
	struct stat dst;
	char who[64];

	if (st->st_mode & S_IWOTH)
		return fw_fail(res, FW_UNSAFE,
		               "%s is writable by every user (owner uid %lu, "
		               "group gid %lu, mode %04o): anyone could have "
		               "reset its token" REMEDY, shown, uid, gid, mode);
	if (fstat(dirfd, &dst) < 0)
		return fw_fail_sys(res, errno, "fstat", dshown);
	rc = dir_trusted(dirfd, &dst, st->st_uid, dshown, shown, &closed, res);
	if (rc != FW_OK)
		return rc;
	if (group_writes || !owner_trusted) {
		member = fw_in_group(st->st_gid);
		if (member < 0)
			return fw_fail_sys(res, errno, "getgroups", shown);
	}
	if (group_writes && !member)
		return fw_fail(res, FW_UNSAFE,
		               "%s is writable by group gid %lu (owner uid %lu, "
		               "mode %04o), which uid %lu is not in: its members "
		               "could have reset its token" REMEDY,
		               shown, gid, uid, mode, me);
	/* A team mate's fence: group-writable, of our group, in a directory
	   where only the group may create files (see above). */
	if (!owner_trusted && !(group_writes && closed))
		return fw_fail(res, FW_UNSAFE,
		               "%s belongs to uid %lu (group gid %lu, mode %04o), "
		               "neither root nor uid %lu, and is not a fence of a "
		               "group uid %lu is in, in a directory only that "
		               "group may write: its owner could have reset its "
		               "token" REMEDY,
		               shown, uid, gid, mode, me, me);
	if (!group_writes || fd < 0)
		return FW_OK;
	rc = untrusted_acl_writer(fd, st->st_uid, who, sizeof(who));
	if (rc < 0)
		return fw_fail_sys(res, errno, "getxattr", shown);
	if (rc > 0)
		return fw_fail(res, FW_UNSAFE,
		               "%s has an ACL that lets %s write it: it could "
		               "reset its token" REMEDY, shown, who);
	return FW_OK;
}

int fw_dir_trusted(int dirfd, const char *dshown, const char *shown,
                   struct fw_result *res)
{
	struct stat dst;
	int closed;

	if (fstat(dirfd, &dst) < 0)
		return fw_fail_sys(res, errno, "fstat", dshown);
	return dir_trusted(dirfd, &dst, geteuid(), dshown, shown, &closed, res);
}
