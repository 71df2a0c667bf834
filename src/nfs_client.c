/* SPDX-License-Identifier: MIT */
/*
 * nfs_client.c - what this host's NFS client says about a mount, for
 * fw_doctor: the two settings that decide what a lost lock does.
 *
 * An NFSv4 lock is a lease.  A client cut off from the server (frozen,
 * partitioned) for longer than the lease loses its locks without being
 * told, and another host may take the fence's lock meanwhile; fencedwrite
 * then finds out only at its next call to the server (FW_LOCK_LOST).  The
 * lease is the longest such a pause may last unnoticed, so an operator
 * sizing lease-store TTLs and timeouts needs it.  recover_lost_locks=Y
 * makes it worse: the client takes such a lock again once the server is
 * back, after another client may have held and released it, so a writer
 * would never learn it had been fenced out.
 */
#define _GNU_SOURCE   /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MOUNTSTATS "/proc/self/mountstats"
#define RECOVER_LOST_LOCKS "/sys/module/nfs/parameters/recover_lost_locks"

/* The mount point of a mountstats "device SRC mounted on MP with fstype
   T ..." line, unescaped into OUT ("" if it cannot be read: a mount point
   longer than OUT, which then matches nothing, rather than leave the lines
   after it to the mount before); 0 if LINE is not a device line. */
static int device_line(const char *line, size_t len, char *out, size_t cap)
{
	static const char on[] = " mounted on ", with[] = " with fstype ";
	const char *a, *b, *end = line + len;
	size_t n;

	if (len < 7 || memcmp(line, "device ", 7) != 0)
		return 0;
	out[0] = '\0';
	a = memmem(line, len, on, sizeof(on) - 1);
	if (!a)
		return 1;
	a += sizeof(on) - 1;
	/* The last " with fstype ": an escaped mount point holds no spaces,
	   but look from the end all the same. */
	b = NULL;
	for (const char *p = a; p < end; p++) {
		p = memmem(p, (size_t)(end - p), with, sizeof(with) - 1);
		if (!p)
			break;
		b = p;
	}
	if (!b || (n = (size_t)(b - a)) >= cap)
		return 1;
	memcpy(out, a, n);
	out[n] = '\0';
	fw_mount_unescape(out);
	return 1;
}

long fw_nfs_lease(const char *stats, const char *mount_point)
{
	char mp[1024];
	long lease = -1;
	int in = 0;

	for (const char *line = stats; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *v;

		if (device_line(line, len, mp, sizeof(mp))) {
			in = strcmp(mp, mount_point) == 0;
			/* A later mount on the point hides the earlier ones:
			   their lease is not this mount's. */
			if (in)
				lease = -1;
		} else if (in && (v = memmem(line, len, "lease_time=", 11))) {
			char *stop;
			long s = strtol(v + 11, &stop, 10);

			if (stop != v + 11 && s >= 0)
				lease = s;
		}
		line += len + (nl != NULL);
	}
	return lease;
}

int fw_nfs_recover_lost_locks(const char *param)
{
	if (param[0] == 'Y' || param[0] == '1')
		return 1;
	if (param[0] == 'N' || param[0] == '0')
		return 0;
	return -1;
}

void fw_nfs_client_report(struct fw_doctor_report *rep)
{
	const char *fs = rep->mount.fstype;
	char *text;

	rep->lease_seconds = -1;
	rep->recover_lost_locks = -1;
	/* Leases and lost-lock recovery are NFSv4's; v3 locks live in lockd
	   and statd, which reclaim after a server reboot only. */
	if (strcmp(fs, "nfs4") != 0)
		return;
	text = fw_mount_read_table(MOUNTSTATS);
	if (text) {
		rep->lease_seconds = fw_nfs_lease(text, rep->mount.mount_point);
		free(text);
	}
	text = fw_mount_read_table(RECOVER_LOST_LOCKS);
	if (text) {
		rep->recover_lost_locks = fw_nfs_recover_lost_locks(text);
		free(text);
	}
}
