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
 * the present mode.  An access ACL that lets other users or groups write
 * shows in the group bits (its mask), so it is judged as group write: a
 * conservative answer, never a permissive one.  On NFS with root_squash
 * (or all_squash) files belong to the anonymous user, whom every client's
 * squashed processes share; such a fence is refused like any other.
 *
 * Owners and groups are reported as numbers: resolving names goes through
 * NSS, which on a fleet may mean LDAP round trips or a hang while a
 * directory server is down, in a path whose whole point is to fail fast
 * and closed.  "ls -ln" shows the same numbers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* 1 if GID is this process's effective or a supplementary group, 0 if not,
   -1 (errno) if the list cannot be had. */
static int member_of(gid_t gid)
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

int fw_fence_trusted(const struct stat *st, const char *shown,
                     struct fw_result *res)
{
	unsigned long uid = st->st_uid, gid = st->st_gid;
	unsigned long me = (unsigned long)geteuid();
	unsigned mode = st->st_mode & 07777;
	int owner_trusted = st->st_uid == 0 || st->st_uid == geteuid();
	int group_writes = (st->st_mode & S_IWGRP) != 0, member = 0;

	if (st->st_mode & S_IWOTH)
		return fw_fail(res, FW_UNSAFE,
		               "%s is writable by every user (owner uid %lu, "
		               "group gid %lu, mode %04o): anyone could have "
		               "reset its token" REMEDY, shown, uid, gid, mode);
	if (group_writes || !owner_trusted) {
		member = member_of(st->st_gid);
		if (member < 0)
			return fw_fail_sys(res, errno, "getgroups", shown);
	}
	if (group_writes && !member)
		return fw_fail(res, FW_UNSAFE,
		               "%s is writable by group gid %lu (owner uid %lu, "
		               "mode %04o), which uid %lu is not in: its members "
		               "could have reset its token" REMEDY,
		               shown, gid, uid, mode, me);
	if (!owner_trusted && !group_writes)
		return fw_fail(res, FW_UNSAFE,
		               "%s belongs to uid %lu (group gid %lu, mode %04o), "
		               "neither root nor uid %lu, and is not writable by "
		               "a group uid %lu is in: its owner could have reset "
		               "its token" REMEDY,
		               shown, uid, gid, mode, me, me);
	return FW_OK;
}
