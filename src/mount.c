/*
 * mount.c - where a file lives, and whether fcntl locks there reach every
 * host that can write it.
 *
 * Fencing is only as good as the lock that serialises check and commit.
 * On NFS mounted with nolock or local_lock=posix|all, fcntl locks are kept
 * by the local kernel alone: two hosts both pass the check, and the fence
 * can go backwards.  The mount's options say so in /proc/self/mountinfo:
 *
 *   36 25 0:52 / /shared rw,relatime - nfs srv:/exp rw,vers=3,...,local_lock=all
 *   (1)(2) (3) (4)  (5)      (6)    (-) (8)   (9)       (10)
 *
 * mount id, parent id, major:minor, root, mount point, mount options,
 * optional fields up to "-", filesystem type, source, superblock options.
 * Paths escape space, tab, newline and backslash as \040 \011 \012 \134.
 *
 * fw_mount_analyse is a pure function over that text; fw_mount_of reads
 * the table for a directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

/* Decode \ooo escapes in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			                (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* A decimal number that is the whole of S (or ends at STOP); 0 if not. */
static int number(const char *s, char stop, unsigned long long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno == 0 && *end == stop;
}

/* "major:minor" */
static int devnum(const char *s, unsigned *major, unsigned *minor)
{
	unsigned long long a, b;
	const char *colon = strchr(s, ':');

	if (!colon || !number(s, ':', &a) || !number(colon + 1, '\0', &b) ||
	    a > 0xffffffffu || b > 0xffffffffu)
		return 0;
	*major = (unsigned)a;
	*minor = (unsigned)b;
	return 1;
}

/* The value of KEY in a comma-separated option list: "key=value" gives
   value, a bare "key" gives "", absent gives NULL.  Copied into BUF. */
static const char *opt(const char *opts, const char *key, char *buf,
                       size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = opts; *p;) {
		size_t n = strcspn(p, ",");

		if (n >= klen && strncmp(p, key, klen) == 0 &&
		    (n == klen || p[klen] == '=')) {
			size_t v = n == klen ? 0 : n - klen - 1;

			if (v >= len)
				v = len - 1;
			memcpy(buf, p + n - v, v);
			buf[v] = '\0';
			return buf;
		}
		p += n + (p[n] == ',');
	}
	return NULL;
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static void verdict(struct fw_mount_info *m, int scope, const char *why)
{
	m->scope = scope;
	snprintf(m->why, sizeof(m->why), "%s", why);
}

/* Decide the lock scope from the filesystem type and its options. */
static void classify(struct fw_mount_info *m, const char *super)
{
	static const char *const local[] = {
		"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs",
		"overlay", "zfs", "f2fs", "vfat", "exfat", "jfs", "reiserfs",
		"nilfs2", "bcachefs", "hfsplus", "ntfs", "ntfs3", NULL
	};
	char v[64];

	m->options[0] = '\0';
	if (!strcmp(m->fstype, "nfs") || !strcmp(m->fstype, "nfs4")) {
		char vers[32] = "";
		const char *ll;

		if (opt(super, "vers", vers, sizeof(vers)))
			snprintf(m->options, sizeof(m->options), "vers=%s", vers);
		if (opt(super, "nolock", v, sizeof(v))) {
			strncat(m->options, ",nolock",
			        sizeof(m->options) - strlen(m->options) - 1);
			verdict(m, FW_SCOPE_UNSAFE, "NFS mounted with nolock: "
			        "fcntl locks exclude only this host's processes");
			return;
		}
		ll = opt(super, "local_lock", v, sizeof(v));
		if (ll) {
			size_t n = strlen(m->options);

			snprintf(m->options + n, sizeof(m->options) - n,
			         "%slocal_lock=%s", n ? "," : "", ll);
		}
		if (ll && (!strcmp(ll, "posix") || !strcmp(ll, "all"))) {
			snprintf(m->why, sizeof(m->why), "NFS mounted with "
			         "local_lock=%s: fcntl locks exclude only this "
			         "host's processes", ll);
			m->scope = FW_SCOPE_UNSAFE;
			return;
		}
		verdict(m, FW_SCOPE_SHARED, vers[0] == '4'
		        ? "NFSv4: fcntl locks are held by the server, under "
		          "the client's lease"
		        : "NFS: fcntl locks are held by the server's lock "
		          "manager (lockd/statd)");
		return;
	}
	if (!strcmp(m->fstype, "cifs") || !strcmp(m->fstype, "smb3")) {
		if (opt(super, "nobrl", v, sizeof(v))) {
			snprintf(m->options, sizeof(m->options), "nobrl");
			verdict(m, FW_SCOPE_UNSAFE, "SMB mounted with nobrl: "
			        "byte-range locks are not sent to the server");
			return;
		}
		verdict(m, FW_SCOPE_SHARED, "SMB: fcntl locks are sent to the "
		        "server as byte-range locks");
		return;
	}
	if (!strcmp(m->fstype, "ceph")) {
		verdict(m, FW_SCOPE_SHARED, "CephFS: fcntl locks are held by "
		        "the metadata servers");
		return;
	}
	if (!strcmp(m->fstype, "gfs2")) {
		if (opt(super, "localflocks", v, sizeof(v))) {
			snprintf(m->options, sizeof(m->options), "localflocks");
			verdict(m, FW_SCOPE_UNSAFE, "GFS2 mounted with "
			        "localflocks: locks stay on this host");
			return;
		}
		verdict(m, FW_SCOPE_SHARED, "GFS2: fcntl locks go through the "
		        "cluster's lock manager");
		return;
	}
	if (!strcmp(m->fstype, "afs")) {
		verdict(m, FW_SCOPE_UNSAFE, "AFS does not carry byte-range "
		        "locks between clients");
		return;
	}
	if (!strcmp(m->fstype, "fuse.sshfs")) {
		verdict(m, FW_SCOPE_UNSAFE, "sshfs does not implement locks: "
		        "they exclude only this host's processes");
		return;
	}
	if (starts(m->fstype, "fuse")) {
		verdict(m, FW_SCOPE_UNKNOWN, "a FUSE filesystem: locks reach "
		        "other hosts only if its daemon implements them");
		return;
	}
	if (one_of(m->fstype, local)) {
		verdict(m, FW_SCOPE_LOCAL, "a local filesystem: fcntl locks "
		        "exclude every writer on this host, the only one that "
		        "can write here");
		return;
	}
	snprintf(m->why, sizeof(m->why), "%s: not known to fencedwrite; "
	         "check that its fcntl locks reach every writing host",
	         m->fstype);
	m->scope = FW_SCOPE_UNKNOWN;
}

int fw_mount_analyse(const char *text, unsigned long long mnt_id,
                     unsigned major, unsigned minor,
                     struct fw_mount_info *info)
{
	const char *line = text;
	int found = 0;

	memset(info, 0, sizeof(*info));
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char *copy = strndup(line, len), *f[32], *save = NULL;
		int n = 0, dash = -1;
		unsigned long long id;
		unsigned maj, min;

		if (!copy)
			return FW_SYSTEM;
		for (char *tok = strtok_r(copy, " ", &save); tok && n < 32;
		     tok = strtok_r(NULL, " ", &save)) {
			if (dash < 0 && n >= 6 && !strcmp(tok, "-"))
				dash = n;
			f[n++] = tok;
		}
		if (dash > 0 && n >= dash + 3 && number(f[0], '\0', &id) &&
		    devnum(f[2], &maj, &min) &&
		    (mnt_id ? id == mnt_id : (maj == major && min == minor))) {
			/* For a device, the last line wins: it is the mount
			   made last, the one a path resolves to. */
			unescape(f[4]);
			unescape(f[dash + 2]);
			snprintf(info->mount_point, sizeof(info->mount_point),
			         "%s", f[4]);
			snprintf(info->fstype, sizeof(info->fstype), "%s",
			         f[dash + 1]);
			snprintf(info->source, sizeof(info->source), "%s",
			         f[dash + 2]);
			classify(info, n > dash + 3 ? f[dash + 3] : "");
			found = 1;
		}
		free(copy);
		if (found && mnt_id)
			break;
		line = eol ? eol + 1 : NULL;
	}
	return found ? FW_OK : FW_UNSAFE;
}

/* Read all of PATH into a NUL-terminated buffer (the caller frees it). */
static char *read_all(const char *path)
{
	size_t cap = 16384, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0) {
		int err = errno;

		free(buf);
		if (fd >= 0)
			close(fd);
		errno = err;
		return NULL;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 == cap) {
			char *more = realloc(buf, cap *= 2);

			if (!more) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = more;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = errno;

			close(fd);
			if (n < 0) {
				free(buf);
				errno = err;
				return NULL;
			}
			buf[len] = '\0';
			return buf;
		}
		len += (size_t)n;
	}
}

int fw_mount_of(int dirfd, const char *shown, const char *table,
                struct fw_mount_info *info, struct fw_result *res)
{
	const char *path = table ? table : "/proc/self/mountinfo";
	unsigned long long id = 0;
	struct statx stx;
	char *text;
	int rc;

	if (statx(dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0)
		return fw_fail_sys(res, errno, "statx", shown);
	if (stx.stx_mask & STATX_MNT_ID)
		id = stx.stx_mnt_id;
	text = read_all(path);
	if (!text)
		return fw_fail_sys(res, errno, "read", path);
	rc = fw_mount_analyse(text, id, stx.stx_dev_major, stx.stx_dev_minor,
	                      info);
	free(text);
	if (rc == FW_UNSAFE)
		return fw_fail(res, FW_UNSAFE, "%s: its mount is not in %s; "
		               "cannot tell whether fencing holds there",
		               shown, path);
	return rc;
}

/* Filesystems whose locks may not reach every host: worth reading the
   mount table for.  Everything else is local, or unknown and rare. */
int fw_mount_needs_check(long f_type)
{
	switch ((unsigned long)f_type) {
	case 0x6969:        /* NFS */
	case 0x517b:        /* SMB */
	case 0xff534d42:    /* CIFS */
	case 0xfe534d42:    /* SMB2 */
	case 0x5346414f:    /* AFS */
	case 0x65735546:    /* FUSE */
	case 0x01161970:    /* GFS2 */
	case 0x00c36400:    /* Ceph */
		return 1;
	default:
		return 0;
	}
}

/*
 * Refuse to write where the fence's lock cannot exclude other hosts (NFS
 * mounted nolock or local_lock=posix|all, SMB nobrl, ...): there two hosts
 * can both pass the check and the fence can go backwards.  One fstatfs()
 * tells local filesystems apart; only the others cost a look at the mount
 * table.  A table named in OPTS is always consulted.
 */
int fw_mount_check(const struct target *t, const struct fw_opts *opts,
                   struct fw_result *res)
{
	struct fw_mount_info m;
	struct statfs sf;
	int rc;

	if (!opts->mountinfo) {
		if (fstatfs(t->fdirfd, &sf) < 0)
			return fw_fail_sys(res, errno, "statfs", t->fshown);
		if (!fw_mount_needs_check((long)sf.f_type))
			return FW_OK;
	}
	rc = fw_mount_of(t->fdirfd, t->fshown, opts->mountinfo, &m, res);
	if (rc != FW_OK || m.scope != FW_SCOPE_UNSAFE ||
	    (opts->flags & FW_LOCAL_LOCKS_OK))
		return rc;
	return fw_fail(res, FW_UNSAFE,
	               "%s is on %s %s (mounted on %s): %s, so fencing cannot "
	               "hold between hosts; remount (NFS: without nolock, "
	               "local_lock=none) or, if every writer runs on this "
	               "host, allow it (--local-locks-ok)", t->fshown,
	               m.fstype, m.source, m.mount_point, m.why);
}
