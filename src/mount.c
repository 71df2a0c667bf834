/* SPDX-License-Identifier: MIT */
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
 * "Local" is decided from a list of filesystems known to be local, never
 * from a list of known remote ones: a filesystem this file has not heard
 * of is UNKNOWN, and writes there fail closed.  A known local statfs magic
 * number decides with one fstatfs(); every other filesystem is looked up
 * in the mount table and judged by its type and options.
 *
 * fw_mount_analyse is a pure function over that text; fw_mount_of reads
 * the table for a directory; fw_mount_judge is the one verdict that both
 * the write path (fw_mount_check) and --doctor give.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

void fw_mount_unescape(char *s)
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

/* verdict() with a formatted reason, cut to fit. */
static void verdictf(struct fw_mount_info *m, int scope, const char *fmt,
                     ...) FW_PRINTF(3, 4);
static void verdictf(struct fw_mount_info *m, int scope, const char *fmt,
                     ...)
{
	va_list ap;

	m->scope = scope;
	va_start(ap, fmt);
	vsnprintf(m->why, sizeof(m->why), fmt, ap);
	va_end(ap);
}

/* Append ",TEXT" (or TEXT) to the options that matter. */
static void note(struct fw_mount_info *m, const char *text)
{
	size_t n = strlen(m->options);

	snprintf(m->options + n, sizeof(m->options) - n, "%s%s",
	         n ? "," : "", text);
}

/*
 * Filesystems that only this host can write: their fcntl locks exclude
 * every writer there is.  MAGIC is the statfs f_type that lets one
 * fstatfs() decide without the mount table (0: known by name only, the
 * table decides).  Every name whose magic is listed must be here, so that
 * the fast path and the table give the same verdict.
 */
static const struct {
	const char *name;
	unsigned long magic;
} local_fs[] = {
	{ "ext4", 0xef53 }, { "ext3", 0xef53 }, { "ext2", 0xef53 },
	{ "xfs", 0x58465342 }, { "btrfs", 0x9123683e },
	{ "tmpfs", 0x01021994 }, { "ramfs", 0x858458f6 },
	{ "zfs", 0x2fc12fc1 }, { "f2fs", 0xf2f52010 },
	{ "vfat", 0x4d44 }, { "msdos", 0x4d44 }, { "exfat", 0x2011bab0 },
	{ "bcachefs", 0xca451a4e }, { "nilfs2", 0x3434 },
	{ "jfs", 0x3153464a }, { "reiserfs", 0x52654973 },
	{ "hfsplus", 0x482b }, { "ntfs", 0 }, { "ntfs3", 0 },
	/* FUSE on a local block device (ntfs-3g, exfat-fuse) */
	{ "fuseblk", 0 },
};

#define NLOCAL (sizeof(local_fs) / sizeof(local_fs[0]))

static int local_name(const char *fstype)
{
	for (size_t i = 0; i < NLOCAL; i++)
		if (!strcmp(fstype, local_fs[i].name))
			return 1;
	return 0;
}

/* The name of a known local filesystem with statfs type F_TYPE, or NULL. */
static const char *local_magic(unsigned long f_type)
{
	for (size_t i = 0; i < NLOCAL; i++)
		if (local_fs[i].magic && local_fs[i].magic == f_type)
			return local_fs[i].name;
	return NULL;
}

static void classify_nfs(struct fw_mount_info *m, const char *super)
{
	char vers[32] = "", v[64];
	const char *ll;

	if (opt(super, "vers", vers, sizeof(vers)))
		snprintf(m->options, sizeof(m->options), "vers=%s", vers);
	if (opt(super, "nolock", v, sizeof(v))) {
		note(m, "nolock");
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
		verdictf(m, FW_SCOPE_UNSAFE, "NFS mounted with "
		         "local_lock=%s: fcntl locks exclude only this "
		         "host's processes", ll);
		return;
	}
	verdict(m, FW_SCOPE_SHARED, vers[0] == '4'
	        ? "NFSv4: fcntl locks are held by the server, under "
	          "the client's lease"
	        : "NFS: fcntl locks are held by the server's lock "
	          "manager (lockd/statd)");
}

/* Lustre's client picks its file operations from these three: "flock"
   sends fcntl and flock locks to the servers' lock manager (LDLM), so
   they are coherent across the cluster; "localflock" keeps them in this
   client's kernel; with neither ("noflock") fcntl locks fail (ENOSYS). */
static void classify_lustre(struct fw_mount_info *m, const char *super)
{
	char v[8];

	if (opt(super, "flock", v, sizeof(v))) {
		note(m, "flock");
		verdict(m, FW_SCOPE_SHARED, "Lustre mounted with flock: fcntl "
		        "locks are held by the servers' lock manager, "
		        "coherent on every client");
	} else if (opt(super, "localflock", v, sizeof(v))) {
		note(m, "localflock");
		verdict(m, FW_SCOPE_UNSAFE, "Lustre mounted with localflock: "
		        "fcntl locks exclude only this client's processes");
	} else {
		verdict(m, FW_SCOPE_UNSAFE, "Lustre mounted without flock: "
		        "fcntl locks fail (ENOSYS); remount with -o flock");
	}
}

/*
 * OCFS2 sends fcntl (POSIX) locks to the cluster only through a stack
 * that implements them: the userspace stack (cluster_stack=pcmk, cman,
 * through fs/dlm).  The classic o2cb stack (no cluster_stack shown, or
 * cluster_stack=o2cb with global heartbeat) carries flock() between nodes
 * but leaves fcntl locks to each node's kernel, and so does localflocks.
 * heartbeat=none without a stack is a single-node ("local") volume or a
 * setup the options do not describe.
 */
static void classify_ocfs2(struct fw_mount_info *m, const char *super)
{
	char stack[16], hb[16], v[8];

	if (opt(super, "localflocks", v, sizeof(v))) {
		note(m, "localflocks");
		verdict(m, FW_SCOPE_UNSAFE, "OCFS2 mounted with localflocks: "
		        "locks stay on this node");
		return;
	}
	if (opt(super, "cluster_stack", stack, sizeof(stack)) &&
	    strcmp(stack, "o2cb") != 0) {
		note(m, "cluster_stack=");
		strncat(m->options, stack,
		        sizeof(m->options) - strlen(m->options) - 1);
		verdict(m, FW_SCOPE_SHARED, "OCFS2 on a userspace cluster "
		        "stack: fcntl locks go through the cluster's DLM");
		return;
	}
	if (opt(super, "heartbeat", hb, sizeof(hb)) && !strcmp(hb, "none")) {
		note(m, "heartbeat=none");
		verdict(m, FW_SCOPE_UNKNOWN, "OCFS2 with heartbeat=none and no "
		        "cluster stack named: cannot tell whether other nodes "
		        "mount it");
		return;
	}
	verdict(m, FW_SCOPE_UNSAFE, "OCFS2 on the o2cb stack: only flock() "
	        "reaches other nodes; fcntl locks stay on this node");
}

/* v9fs sends locks to the server only with 9P2000.L (the default, shown
   as no version option); what the server does with them is its own
   business: QEMU's virtfs server grants every request. */
static void classify_9p(struct fw_mount_info *m, const char *super)
{
	char v[32];

	if (opt(super, "trans", v, sizeof(v))) {
		note(m, "trans=");
		strncat(m->options, v,
		        sizeof(m->options) - strlen(m->options) - 1);
	}
	if (opt(super, "noextend", v, sizeof(v)) ||
	    (opt(super, "version", v, sizeof(v)) &&
	     strcmp(v, "9p2000.L") != 0)) {
		note(m, "legacy protocol");
		verdict(m, FW_SCOPE_UNSAFE, "9p without 9P2000.L: locks are "
		        "never sent to the server");
		return;
	}
	verdict(m, FW_SCOPE_UNKNOWN, "9p: locks are sent to the 9P server, "
	        "and whether it enforces them between clients is the "
	        "server's choice (QEMU's grants every request)");
}

/* FUSE: the kernel sends locks to the daemon only if the daemon asked
   for them (FUSE_POSIX_LOCKS); otherwise they stay in this kernel.  The
   mount table does not say which, so only daemons known either way get a
   verdict. */
static void classify_fuse(struct fw_mount_info *m)
{
	static const char *const no_locks[] = {
		"fuse.sshfs", "fuse.rclone", "fuse.s3fs", "fuse.gcsfuse",
		"fuse.goofys", NULL
	};

	if (!strcmp(m->fstype, "fuse.ceph-fuse") ||
	    !strcmp(m->fstype, "fuse.ceph")) {
		verdict(m, FW_SCOPE_SHARED, "ceph-fuse: fcntl locks are held "
		        "by the metadata servers");
		return;
	}
	if (one_of(m->fstype, no_locks)) {
		verdictf(m, FW_SCOPE_UNSAFE, "%s does not implement locks: "
		         "they exclude only this host's processes",
		         m->fstype + strlen("fuse."));
		return;
	}
	if (!strcmp(m->fstype, "virtiofs")) {
		verdict(m, FW_SCOPE_UNKNOWN, "virtiofs: locks reach the host "
		        "and other guests only if virtiofsd runs with remote "
		        "locks, which it does not by default");
		return;
	}
	verdictf(m, FW_SCOPE_UNKNOWN, "%s, a FUSE filesystem: locks "
	         "reach other hosts only if its daemon implements them",
	         m->fstype);
}

/* Decide the lock scope from the filesystem type and its options. */
static void classify(struct fw_mount_info *m, const char *super)
{
	char v[8];

	m->options[0] = '\0';
	if (!strcmp(m->fstype, "nfs") || !strcmp(m->fstype, "nfs4")) {
		classify_nfs(m, super);
	} else if (!strcmp(m->fstype, "cifs") || !strcmp(m->fstype, "smb3")) {
		if (opt(super, "nobrl", v, sizeof(v))) {
			note(m, "nobrl");
			verdict(m, FW_SCOPE_UNSAFE, "SMB mounted with nobrl: "
			        "byte-range locks are not sent to the server");
		} else {
			verdict(m, FW_SCOPE_SHARED, "SMB: fcntl locks are sent "
			        "to the server as byte-range locks");
		}
	} else if (!strcmp(m->fstype, "ceph")) {
		verdict(m, FW_SCOPE_SHARED, "CephFS: fcntl locks are held by "
		        "the metadata servers");
	} else if (!strcmp(m->fstype, "gfs2")) {
		if (opt(super, "localflocks", v, sizeof(v))) {
			note(m, "localflocks");
			verdict(m, FW_SCOPE_UNSAFE, "GFS2 mounted with "
			        "localflocks: locks stay on this host");
		} else {
			verdict(m, FW_SCOPE_SHARED, "GFS2: fcntl locks go "
			        "through the cluster's lock manager");
		}
	} else if (!strcmp(m->fstype, "lustre")) {
		classify_lustre(m, super);
	} else if (!strcmp(m->fstype, "ocfs2")) {
		classify_ocfs2(m, super);
	} else if (!strcmp(m->fstype, "gpfs")) {
		verdict(m, FW_SCOPE_SHARED, "GPFS (Storage Scale): fcntl "
		        "locks are granted by the cluster's token manager");
	} else if (!strcmp(m->fstype, "afs")) {
		verdict(m, FW_SCOPE_UNSAFE, "AFS does not carry byte-range "
		        "locks between clients");
	} else if (!strcmp(m->fstype, "9p")) {
		classify_9p(m, super);
	} else if (!strcmp(m->fstype, "virtiofs") ||
	           (starts(m->fstype, "fuse") &&
	            strcmp(m->fstype, "fuseblk") != 0)) {
		classify_fuse(m);
	} else if (local_name(m->fstype)) {
		verdict(m, FW_SCOPE_LOCAL, "a local filesystem: fcntl locks "
		        "exclude every writer on this host, the only one that "
		        "can write here");
	} else {
		verdictf(m, FW_SCOPE_UNKNOWN, "%s: not known to fencedwrite,"
		         " so it cannot tell whether fcntl locks reach every "
		         "writing host", m->fstype);
	}
}

/* One line of the table, split.  The fields point into BUF, which the
   caller frees. */
struct mline {
	char *buf;
	unsigned long long id;
	unsigned major, minor;
	char *point, *fstype, *source, *super;
};

/* 1 if LINE (LEN bytes) is a mount line, 0 if not, -1 out of memory. */
static int parse_line(const char *line, size_t len, struct mline *l)
{
	char *f[32], *save = NULL;
	int n = 0, dash = -1;

	l->buf = strndup(line, len);
	if (!l->buf)
		return -1;
	for (char *tok = strtok_r(l->buf, " ", &save); tok && n < 32;
	     tok = strtok_r(NULL, " ", &save)) {
		if (dash < 0 && n >= 6 && !strcmp(tok, "-"))
			dash = n;
		f[n++] = tok;
	}
	if (dash < 0 || n < dash + 3 || !number(f[0], '\0', &l->id) ||
	    !devnum(f[2], &l->major, &l->minor)) {
		free(l->buf);
		l->buf = NULL;
		return 0;
	}
	fw_mount_unescape(f[4]);
	fw_mount_unescape(f[dash + 2]);
	l->point = f[4];
	l->fstype = f[dash + 1];
	l->source = f[dash + 2];
	l->super = n > dash + 3 ? f[dash + 3] : "";
	return 1;
}

/* Call FN for every mount line of TEXT until it returns nonzero; that
   value, or 0 at the end, or -1 out of memory. */
static int each_line(const char *text, int (*fn)(struct mline *, void *),
                     void *arg)
{
	for (const char *line = text; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		struct mline l;
		int rc = parse_line(line, len, &l);

		if (rc < 0)
			return -1;
		if (rc > 0) {
			rc = fn(&l, arg);
			free(l.buf);
			if (rc)
				return rc;
		}
		line = eol ? eol + 1 : NULL;
	}
	return 0;
}

static void fill(struct fw_mount_info *m, const struct mline *l)
{
	snprintf(m->mount_point, sizeof(m->mount_point), "%s", l->point);
	snprintf(m->fstype, sizeof(m->fstype), "%s", l->fstype);
	snprintf(m->source, sizeof(m->source), "%s", l->source);
	classify(m, l->super);
}

/* ---- overlayfs: local only if every layer is ------------------------ */

/*
 * Overlayfs keeps locks on its own inodes, in this kernel: they exclude
 * this host's writers only.  That is enough where no other host can write
 * the layers, i.e. where each layer is on a local filesystem.  A layer is
 * placed by the longest mount point that is a prefix of its path; a layer
 * that resolves to the overlay itself was mounted in another namespace (a
 * container's root) and cannot be judged from here.
 */
struct layer_search {
	const char *path;
	size_t best;            /* length of the best mount point so far */
	struct fw_mount_info m; /* its verdict */
	unsigned long long id;
	int found;
};

static int under(const char *path, const char *point)
{
	size_t n = strlen(point);

	if (!strcmp(point, "/"))
		return path[0] == '/';
	return !strncmp(path, point, n) && (path[n] == '/' || !path[n]);
}

static int layer_line(struct mline *l, void *arg)
{
	struct layer_search *s = arg;
	size_t n = strlen(l->point);

	/* The last of equally long mount points wins: it is mounted on
	   top of the others. */
	if (under(s->path, l->point) && (!s->found || n >= s->best)) {
		s->best = n;
		s->id = l->id;
		s->found = 1;
		memset(&s->m, 0, sizeof(s->m));
		fill(&s->m, l);
	}
	return 0;
}

/* Judge the layer at PATH: *O stays LOCAL if the layer is on a local
   filesystem, else says why not.  0, or -1 out of memory. */
static int judge_layer(const char *text, unsigned long long overlay_id,
                       char *path, struct fw_mount_info *o)
{
	struct layer_search s = { .path = path };

	fw_mount_unescape(path);
	if (each_line(text, layer_line, &s) < 0)
		return -1;
	if (!s.found || s.id == overlay_id ||
	    !strcmp(s.m.fstype, "overlay")) {
		verdictf(o, FW_SCOPE_UNKNOWN, "overlay: the layer %s is not "
		         "in this mount table (mounted from another namespace?),"
		         " so cannot tell who else writes it", path);
	} else if (s.m.scope != FW_SCOPE_LOCAL) {
		int scope = s.m.scope == FW_SCOPE_UNKNOWN ? FW_SCOPE_UNKNOWN
		                                          : FW_SCOPE_UNSAFE;

		verdictf(o, scope, "overlay: locks stay on this host, but the "
		         "layer %s is on %s %s (%s)", path, s.m.fstype,
		         s.m.source, s.m.why);
	}
	return 0;
}

static int classify_overlay(struct fw_mount_info *o, const char *text,
                            unsigned long long id, const char *super)
{
	static const char *const keys[] = {
		"upperdir", "lowerdir", "lowerdir+", "datadir+", NULL
	};
	char *opts = strdup(super), *save = NULL;
	int layers = 0;

	if (!opts)
		return -1;
	o->options[0] = '\0';
	verdict(o, FW_SCOPE_LOCAL, "overlay on local filesystems only: its "
	        "locks exclude every writer on this host, the only one that "
	        "can write its layers");
	for (char *kv = strtok_r(opts, ",", &save);
	     kv && o->scope == FW_SCOPE_LOCAL;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *psave = NULL;

		if (!eq)
			continue;
		*eq = '\0';
		if (!one_of(kv, keys))
			continue;
		for (char *p = strtok_r(eq + 1, ":", &psave);
		     p && o->scope == FW_SCOPE_LOCAL;
		     p = strtok_r(NULL, ":", &psave)) {
			layers++;
			if (judge_layer(text, id, p, o) < 0) {
				free(opts);
				return -1;
			}
		}
	}
	free(opts);
	if (!layers)
		verdict(o, FW_SCOPE_UNKNOWN, "overlay: no layers in its "
		        "options, cannot tell who else writes them");
	return 0;
}

/* ---- the mount of one directory -------------------------------------- */

struct find {
	unsigned long long id;
	unsigned major, minor;
	struct fw_mount_info *info;
	unsigned long long found_id;
	int found;
	char *super;            /* the match's superblock options (overlay) */
};

static int find_line(struct mline *l, void *arg)
{
	struct find *f = arg;

	if (f->id ? l->id != f->id
	          : (l->major != f->major || l->minor != f->minor))
		return 0;
	/* For a device, the last line wins: it is the mount made last, the
	   one a path resolves to. */
	free(f->super);
	f->super = strdup(l->super);
	if (!f->super)
		return -1;
	memset(f->info, 0, sizeof(*f->info));
	fill(f->info, l);
	f->found_id = l->id;
	f->found = 1;
	return f->id ? 1 : 0;
}

int fw_mount_analyse(const char *text, unsigned long long mnt_id,
                     unsigned major, unsigned minor,
                     struct fw_mount_info *info)
{
	struct find f = { mnt_id, major, minor, NULL, 0, 0, NULL };
	int rc;

	memset(info, 0, sizeof(*info));
	f.info = info;
	rc = each_line(text, find_line, &f);
	if (rc >= 0 && f.found && !strcmp(info->fstype, "overlay"))
		rc = classify_overlay(info, text, f.found_id, f.super);
	free(f.super);
	if (rc < 0) {
		memset(info, 0, sizeof(*info));
		errno = ENOMEM;
		return FW_SYSTEM;
	}
	return f.found ? FW_OK : FW_UNSAFE;
}

/* A mount table is a few hundred KiB even on a container host; anything
   larger (a device that never ends, a FIFO fed for ever) is not one. */
#define MOUNTINFO_MAX ((size_t)16 << 20)

/*
 * Read all of PATH into a NUL-terminated buffer (the caller frees it);
 * NULL with errno set, EFBIG past MOUNTINFO_MAX.  A FIFO is opened without
 * waiting for a writer, then read normally.
 */
char *fw_mount_read_table(const char *path)
{
	size_t cap = 16384, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int err = 0;

	if (!buf || fd < 0 || fcntl(fd, F_SETFL, 0) < 0) {
		err = errno;
		free(buf);
		if (fd >= 0)
			close(fd);
		errno = err;
		return NULL;
	}
	while (!err) {
		ssize_t n;

		if (len + 1 == cap) {
			char *more;

			if (len > MOUNTINFO_MAX) {
				err = EFBIG;
				break;
			}
			cap = cap * 2 > MOUNTINFO_MAX + 2 ? MOUNTINFO_MAX + 2
			                                  : cap * 2;
			more = realloc(buf, cap);
			if (!more) {
				err = ENOMEM;
				break;
			}
			buf = more;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno != EINTR)
			err = errno;
		if (n == 0)
			break;
		if (n > 0)
			len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

int fw_mount_of(int dirfd, const char *shown, const char *table,
                struct fw_mount_info *info, struct fw_result *res)
{
	const char *path = table ? table : "/proc/self/mountinfo";
	unsigned long long id = 0;
	struct statx stx;
	char *text;
	int rc;

	memset(info, 0, sizeof(*info));
	if (statx(dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0)
		return fw_fail_sys(res, errno, "statx", shown);
	if (stx.stx_mask & STATX_MNT_ID)
		id = stx.stx_mnt_id;
	text = fw_mount_read_table(path);
	if (!text && errno == EFBIG)
		return fw_fail(res, FW_UNSAFE, "%s: longer than %zu MiB, not a "
		               "mount table; cannot tell whether fencing holds "
		               "for %s", path, MOUNTINFO_MAX >> 20, shown);
	if (!text)
		return fw_fail_sys(res, errno, "read", path);
	rc = fw_mount_analyse(text, id, stx.stx_dev_major, stx.stx_dev_minor,
	                      info);
	free(text);
	if (rc == FW_SYSTEM)
		return fw_fail_sys(res, ENOMEM, "malloc", path);
	if (rc == FW_UNSAFE)
		return fw_fail(res, FW_UNSAFE, "%s: its mount is not in %s; "
		               "cannot tell whether fencing holds there",
		               shown, path);
	return rc;
}

/* ---- the verdict ------------------------------------------------------ */

/*
 * The scope of DIRFD's filesystem into *M.  A known local magic number
 * decides alone: without DETAILS that is one fstatfs() and no table read,
 * the price of a write on a local disk.  A table named in OPTS is always
 * consulted, and decides.
 */
static int scope_of(int dirfd, const char *shown, const struct fw_opts *opts,
                    int details, struct fw_mount_info *m,
                    struct fw_result *res)
{
	const char *local = NULL;
	struct statfs sf;
	int rc;

	memset(m, 0, sizeof(*m));
	if (!opts->mountinfo) {
		if (fstatfs(dirfd, &sf) < 0)
			return fw_fail_sys(res, errno, "statfs", shown);
		local = local_magic((unsigned long)sf.f_type);
		if (local && !details) {
			snprintf(m->fstype, sizeof(m->fstype), "%s", local);
			verdict(m, FW_SCOPE_LOCAL, "a local filesystem");
			return FW_OK;
		}
	}
	rc = fw_mount_of(dirfd, shown, opts->mountinfo, m, res);
	if (rc == FW_OK && local && m->scope != FW_SCOPE_LOCAL)
		/* The table disagrees with the kernel's magic number; the
		   write path believed the magic number, and so must we. */
		verdict(m, FW_SCOPE_LOCAL, "a local filesystem");
	return rc;
}

static int same_fs(int a, int b)
{
	struct stat sa, sb;

	return a == b || (fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	                  sa.st_dev == sb.st_dev);
}

/* The fence's locks are local and FILE is where other hosts may write:
   each host would lock its own fence. */
static int local_fence_shared_file(const struct target *t,
                                   struct fw_mount_info *fence,
                                   const struct fw_mount_info *file,
                                   struct fw_result *res)
{
	verdictf(fence, FW_SCOPE_LOCAL, "the fence is on a local "
	         "filesystem (%s) but %s is on %s %s: other hosts write the "
	         "file without seeing this host's locks", fence->fstype,
	         t->dirshown, file->fstype, file->source);
	return fw_fail(res, FW_UNSAFE,
	               "%s is on a local filesystem (%s%s%s), whose locks "
	               "exclude only this host's writers, but %s's directory "
	               "%s is on %s %s (mounted on %s): %s; put the fence on "
	               "the same shared filesystem or, if every writer runs on "
	               "this host, allow it (--local-locks-ok)", t->fshown,
	               fence->fstype, fence->mount_point[0] ? " on " : "",
	               fence->mount_point, t->path, t->dirshown, file->fstype,
	               file->source, file->mount_point, file->why);
}

static int unsafe_fence(const struct target *t,
                        const struct fw_mount_info *m, struct fw_result *res)
{
	if (m->scope == FW_SCOPE_UNKNOWN)
		return fw_fail(res, FW_UNSAFE,
		               "%s is on %s %s (mounted on %s): %s; fencing "
		               "holds only where locks reach every host that "
		               "can write, so this is refused; if every writer "
		               "runs on this host, allow it (--local-locks-ok)",
		               t->fshown, m->fstype, m->source, m->mount_point,
		               m->why);
	return fw_fail(res, FW_UNSAFE,
	               "%s is on %s %s (mounted on %s): %s, so fencing cannot "
	               "hold between hosts; remount so that locks reach every "
	               "host (NFS: without nolock, local_lock=none; Lustre: "
	               "flock) or, if every writer runs on this host, allow "
	               "it (--local-locks-ok)", t->fshown, m->fstype,
	               m->source, m->mount_point, m->why);
}

int fw_mount_judge(const struct target *t, const struct fw_opts *opts,
                   int details, struct fw_mount_info *fence,
                   struct fw_result *res)
{
	struct fw_mount_info file;
	int rc, allow = (opts->flags & FW_LOCAL_LOCKS_OK) != 0;

	rc = scope_of(t->fdirfd, t->fshown, opts, details, fence, res);
	if (rc != FW_OK)
		return rc;
	if (fence->scope == FW_SCOPE_SHARED)
		return FW_OK;
	if (fence->scope != FW_SCOPE_LOCAL)
		return allow ? FW_OK : unsafe_fence(t, fence, res);
	/* A local fence serves only if FILE is local too: the fence's
	   filesystem is the one whose locks matter, FILE's the one that
	   says who else can write. */
	if (same_fs(t->dirfd, t->fdirfd))
		return FW_OK;
	rc = scope_of(t->dirfd, t->dirshown, opts, details, &file, res);
	if (rc != FW_OK || file.scope == FW_SCOPE_LOCAL || allow)
		return rc;
	return local_fence_shared_file(t, fence, &file, res);
}

/*
 * Refuse to write where the fence's lock cannot exclude every host that
 * can write FILE (NFS mounted nolock or local_lock=posix|all, SMB nobrl,
 * a filesystem not known to be local or shared, a local fence for a FILE
 * on a shared one): there two hosts can both pass the check and the fence
 * can go backwards.
 */
int fw_mount_check(struct target *t, const struct fw_opts *opts,
                   struct fw_result *res)
{
	struct fw_mount_info m;
	int rc = fw_mount_judge(t, opts, 0, &m, res);

	t->fence_local = rc == FW_OK && m.scope == FW_SCOPE_LOCAL;
	return rc;
}

int fw_fs_is_local(long f_type)
{
	return local_magic((unsigned long)f_type) != NULL;
}
