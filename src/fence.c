/* SPDX-License-Identifier: MIT */
/*
 * fence.c - the fence file's life: created whole, locked and read (and
 * believed only when its owner and its records allow), advanced by one
 * record at a time.  The format itself is fence_record.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"

/*
 * A fence named with --fence may guard many files.  Re-created at 0 when
 * missing, it would reopen the door for all of them the moment one absent
 * file is written, so only --init creates it.
 */
int fw_named_fence_missing(const struct target *t, struct fw_result *res)
{
	return fw_fail(res, FW_UNSAFE,
	               "the fence %s does not exist; a fence named with "
	               "--fence is created only by 'fencedwrite --init "
	               "--fence %s %s'", t->fshown, t->fshown, t->path);
}

/* FILE's directory was removed since this run opened it (on NFS, by the
   server or another host: a lookup in it then finds nothing, or stale
   entries). */
static int dir_gone(const struct target *t)
{
	struct stat st;

	if (fstat(t->dirfd, &st) < 0)
		return errno == ESTALE || errno == ENOENT;
	return st.st_nlink == 0;
}

int fw_not_fenced(const struct target *t, struct fw_result *res)
{
	/* Not "adopt it": --init there would fence a file that is fenced. */
	if (dir_gone(t))
		return fw_fail(res, FW_UNSAFE,
		               "%s: its directory was removed or replaced while "
		               "this run had it open; nothing written: run again",
		               t->path);
	return fw_fail(res, FW_UNSAFE,
	               "%s is not fenced (no %s); adopt it with "
	               "'fencedwrite --init %s'", t->path, t->fshown, t->path);
}

int fw_fence_stale(const struct target *t, uint64_t token, uint64_t fence,
                   struct fw_result *res)
{
	return fw_fail(res, FW_STALE,
	               "stale token %llu for %s: the fence holds %llu%s",
	               (unsigned long long)token, t->path,
	               (unsigned long long)fence,
	               token == fence ? " (an equal token is stale unless "
	                                "it claimed the fence, or allowed)"
	                              : "");
}

/* The same content: both absent, or the same size and digest. */
static int same_content(const struct fw_record *a, const struct fw_record *b)
{
	if (a->file != b->file)
		return 0;
	return a->file == FW_FILE_ABSENT ||
	       (a->file == FW_FILE_PRESENT && a->size == b->size &&
	        a->digest == b->digest);
}

int fw_fence_decide(const struct fw_opts *o, uint64_t token,
                    const struct fw_fence *f, const struct stat *st,
                    int present, const struct fw_record *change)
{
	const struct fw_record *cur = &f->cur;

	if (token > cur->token)
		return FW_DECIDE_ACCEPT;
	if (token < cur->token)
		return FW_DECIDE_REJECT;
	/* Only the holder of N has N: an equal token after N's claim is
	   the claimant itself. */
	if (!strcmp(cur->op, "claim"))
		return FW_DECIDE_ACCEPT;
	/* N's own change, recorded before its rename or unlink: if FILE is
	   not what it says (the change never landed: a crash, an error, a
	   lost reply), N may finish it; if FILE is, the same change again is
	   done already.  A fence named with --fence guards several files,
	   and its record says nothing of the others. */
	if (!o->fence_path && (!strcmp(cur->op, "commit") ||
	                       !strcmp(cur->op, "delete"))) {
		int id = fw_identity_compare(cur, st, present);

		if (id == FW_ID_OTHER_FILE || id == FW_ID_MISSING)
			return FW_DECIDE_ACCEPT;
		if (id == FW_ID_SAME && change && same_content(cur, change))
			return FW_DECIDE_DONE;
	}
	if (o->flags & FW_ALLOW_EQUAL)
		return FW_DECIDE_ACCEPT;
	return FW_DECIDE_REJECT;
}

/*
 * The bits of a new fence: FILE's read and write bits, never write for
 * others (any local user could lower the token; trust.c refuses such a
 * fence), never execute or set-id (a fence is data, and a set-id file that
 * others may fill is a hole).
 */
static mode_t fence_mode(const struct stat *file, const struct fw_opts *o)
{
	return fw_wanted_mode(file, o) & 0664;
}

/*
 * Give a new fence (FD, whose state is NOW) FILE's owner and group where
 * the process may, and fence_mode's bits, with nothing the directory adds:
 * no ACL inherited from a default ACL (it may name writers nobody here
 * trusts), and no group write for a group the writer is not in (a setgid
 * directory's), which would make the fence one its own writer refuses.
 */
static int fence_bits(int fd, const struct stat *now, const struct stat *file,
                      const struct fw_opts *opts)
{
	mode_t want = fence_mode(file, opts);
	int exact = file || (opts->flags & FW_USE_MODE);
	struct stat st;

	/* (Removing an absent ACL succeeds on some filesystems: ask.) */
	if (fgetxattr(fd, "system.posix_acl_access", NULL, 0) > 0) {
		if (fremovexattr(fd, "system.posix_acl_access") < 0)
			return -1;
		/* The default ACL overrode the umask; without the ACL, keep
		   the group from writing rather than guess what it meant. */
		want &= 0644;
		exact = 1;
	} else if (errno != ENODATA && errno != ENOTSUP) {
		return -1;
	}
	if (fw_set_owner_and_bits(fd, now, file, want, exact) < 0 ||
	    fstat(fd, &st) < 0)
		return -1;
	if ((st.st_mode & S_IWGRP) && fw_in_group(st.st_gid) == 0)
		return fchmod(fd, st.st_mode & 0644);
	return 0;
}

/* The fence's directory, for messages. */
static const char *fdir_shown(const struct target *t, char buf[PATH_MAX])
{
	const char *slash = strrchr(t->fshown, '/');

	if (!slash)
		return ".";
	snprintf(buf, PATH_MAX, "%.*s", (int)(slash - t->fshown), t->fshown);
	return buf[0] ? buf : "/";
}

/*
 * Create the fence holding REC (seq 0), atomically: it is written and
 * synced under a temporary name and then link()ed into place, which fails
 * if a fence appeared meanwhile.  A fence therefore never exists
 * half-written, and a crash during creation leaves no fence rather than a
 * broken one.  FILE is FILE's state (NULL: absent), for the fence's owner
 * and bits.  Returns FW_OK, or 1 if another process created it first.
 */
int fw_fence_create(const struct target *t, const struct fw_record *rec,
                    const struct stat *file, const struct fw_opts *opts,
                    struct fw_result *res)
{
	char tmp[NAME_MAX + 1], image[FW_FENCE_SIZE];
	struct stat now;
	int fd, rc = FW_OK;

	fw_record_image(rec, image);
	tmp[0] = '\0';
	fd = fw_tmp_create(t->fdirfd, t->fbase, fence_mode(file, opts),
	                   tmp, sizeof(tmp), &now);
	if (fd < 0) {
		char fdir[PATH_MAX], shown[PATH_MAX + 64];

		return fw_fail_sys(res, errno, "open",
		                   fw_tmp_shown(fdir_shown(t, fdir), t->fbase, "",
		                                shown, sizeof(shown)));
	}
	if (fence_bits(fd, &now, file, opts) < 0)
		rc = fw_fail_sys(res, errno, "fchmod", t->fshown);
	else if (fw_write_all(fd, image, sizeof(image), NULL) < 0)
		rc = fw_fail_sys(res, errno, "write", t->fshown);
	else if (fw_fsync(fd) < 0)
		rc = fw_fail_sys(res, errno, "fsync", t->fshown);
	/* Close before linking: once linked this inode IS the fence, and a
	   close() after another thread locked it would drop that thread's
	   classic POSIX lock. */
	close(fd);
	if (rc != FW_OK) {
		unlinkat(t->fdirfd, tmp, 0);
		return rc;
	}
	if (linkat(t->fdirfd, tmp, t->fdirfd, t->fbase, 0) < 0) {
		int err = errno;

		unlinkat(t->fdirfd, tmp, 0);
		if (err == EEXIST)
			return 1;
		return fw_fail_sys(res, err, "link", t->fshown);
	}
	unlinkat(t->fdirfd, tmp, 0);
	if (fw_fsync(t->fdirfd) < 0)
		return fw_fail_sys(res, errno, "fsync directory of", t->fshown);
	return FW_OK;
}

/*
 * A slot that fails its checksum is either the tail of a write torn by a
 * crash (its change never reached FILE: the surviving record still
 * describes FILE) or damage done later (bit rot, a hand edit) to a record
 * whose change did reach FILE.  Only the first may be read past.
 */
static int believe_damaged(const struct target *t, const struct fw_fence *f,
                           struct fw_result *res)
{
	int verdict = FW_ID_UNKNOWN;

	/* A fence named with --fence may guard other files: this FILE
	   cannot vouch for a record about another one. */
	if (!t->named &&
	    fw_identity_check(t->dirfd, t->base, &f->cur, &verdict) < 0)
		return fw_fail_sys(res, errno, "read", t->path);
	if (verdict == FW_ID_SAME)
		return FW_OK;
	return fw_fail(res, FW_UNSAFE,
	               "%s is damaged (%s) and %s: the damaged record may have "
	               "been newer, so the token is unknown; refusing to guess "
	               "(recover: move the fence aside, then 'fencedwrite "
	               "--init -t N %s' with N at least the largest token ever "
	               "issued; see fencedwrite-fence(5))", t->fshown, f->damage,
	               t->named ? "it may guard other files than this one"
	               : f->cur.version == 1
	               ? "its surviving record, of format version 1, does not "
	                 "say what the file is"
	               : "the file is not what its surviving record describes",
	               t->path);
}

static int read_fence(const struct target *t, int fd, struct fw_fence *f,
                      struct fw_result *res)
{
	char image[FW_FENCE_SIZE + 1], why[160];
	ssize_t n;

	/* One read of one byte more than a fence: a short count from a
	   regular file is its end, so a longer file shows as too long. */
	do
		n = pread(fd, image, sizeof(image), 0);
	while (n < 0 && errno == EINTR);

	if (n < 0)
		return fw_fail_sys(res, errno, "read", t->fshown);
	if (fw_record_parse(image, (size_t)n, f, why, sizeof(why)) < 0)
		return fw_fail(res, FW_UNSAFE,
		               "%s is corrupt: %s; refusing to guess its token "
		               "(see fencedwrite-fence(5) to recover)",
		               t->fshown, why);
	if (f->damaged) {
		int rc = believe_damaged(t, f, res);

		if (rc != FW_OK)
			return rc;
	}
	if (res) {
		res->fence_read = 1;
		res->fence_token = f->cur.token;
	}
	return FW_OK;
}

/*
 * The fence could not be opened: EACCES on another user's fence says less
 * than the truth, which is that it would not be believed if it could be
 * opened.  Say that (FW_UNSAFE), or keep the open failure in RES.
 */
static int unopenable_fence(const struct target *t, struct fw_result *res)
{
	struct fw_result why;
	struct stat st;
	int rc;

	if (!res || (res->sys_errno != EACCES && res->sys_errno != EPERM) ||
	    fstatat(t->fdirfd, t->fbase, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return FW_SYSTEM;
	{
		char fdir[PATH_MAX];

		rc = fw_fence_trusted(-1, &st, t->fdirfd, fdir_shown(t, fdir),
		                      t->fshown, &why);
	}
	if (rc != FW_OK)
		*res = why;
	return rc == FW_OK ? FW_SYSTEM : rc;
}

/* The record a fence is created with when FILE and fence are both absent. */
static void first_record(struct fw_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	fw_record_stamp(rec, "create");
	rec->file = FW_FILE_ABSENT;
}

int fw_fence_lock(const struct target *t, int exclusive, enum fw_absent how,
                  int64_t deadline, const struct fw_opts *opts,
                  struct fw_lock *lk, struct fw_fence *f,
                  struct fw_result *res)
{
	int file_seen = 0;

	for (int attempt = 0; attempt < 100; attempt++) {
		struct fw_record rec;
		struct stat st;
		int rc = fw_lock_open(t->fdirfd, t->fbase, t->fshown, exclusive,
		                      deadline, opts, lk, res);

		if (rc == FW_OK) {
			char fdir[PATH_MAX];

			rc = fw_fence_trusted(lk->fd, &lk->st, t->fdirfd,
			                      fdir_shown(t, fdir), t->fshown,
			                      res);
			if (rc == FW_OK)
				rc = read_fence(t, lk->fd, f, res);
			if (rc != FW_OK)
				fw_lock_release(lk);
			return rc;
		}
		if (rc == FW_SYSTEM)
			return unopenable_fence(t, res);
		if (rc != FW_LOCK_ABSENT)
			return rc;
		if (how == FW_ABSENT_FAILS)
			return fw_fail(res, FW_UNSAFE, "%s has no fence (%s)",
			               t->path, t->fshown);
		if (opts->fence_path)
			return fw_named_fence_missing(t, res);
		/* A fence is always created before FILE first appears, so FILE
		   present and fence absent means a fence just created by
		   someone else (look once more) or no fence at all. */
		rc = fw_file_state(t, &st, res);
		if (rc == 0) {
			if (file_seen++)
				return fw_not_fenced(t, res);
			continue;
		}
		if (rc != 1)
			return rc;
		if (how == FW_ABSENT_REPORTS)
			return 1;
		/* Not even a first fence in a directory others may change. */
		{
			char fdir[PATH_MAX];

			rc = fw_dir_trusted(t->fdirfd, fdir_shown(t, fdir),
			                    t->fshown, res);
			if (rc != FW_OK)
				return rc;
		}
		first_record(&rec);
		rc = fw_fence_create(t, &rec, NULL, opts, res);
		if (rc != FW_OK && rc != 1)
			return rc;
	}
	return fw_fail(res, FW_UNSAFE, "%s keeps appearing and disappearing",
	               t->fshown);
}

int fw_fence_advance(const struct target *t, const struct fw_lock *lk,
                     const struct fw_fence *f, struct fw_record *next,
                     struct fw_result *res)
{
	char slot[FW_SLOT_SIZE];

	if (f->cur.seq >= UINT64_MAX - 1)
		return fw_fail(res, FW_UNSAFE, "%s: sequence number exhausted",
		               t->fshown);
	next->seq = fw_record_next_seq(f);
	fw_record_format(next, slot);
	/* The new record goes into the slot the current one is not in. */
	if (fw_pwrite_all(lk->fd, slot, sizeof(slot),
	                  fw_record_offset(next->seq)) < 0)
		return fw_fail_sys(res, errno, "write", t->fshown);
	if (fw_fdatasync(lk->fd) < 0)
		return fw_fail_sys(res, errno, "fdatasync", t->fshown);
	return FW_OK;
}

/*
 * A record whose change leaves FILE as it was (a claim, a delete of an
 * absent FILE, a change whose rename or unlink failed) cannot be told
 * from a torn write by looking at FILE, so it gets a second copy in the
 * other slot: damage to either copy later leaves the other, and only a
 * copy torn while its writer was still at work (and had reported nothing)
 * can fall back to the record before it.
 */
int fw_fence_seal(const struct target *t, const struct fw_lock *lk,
                  struct fw_record *rec, struct fw_result *res)
{
	char slot[FW_SLOT_SIZE];

	if (rec->seq >= UINT64_MAX - 1)
		return fw_fail(res, FW_UNSAFE, "%s: sequence number exhausted",
		               t->fshown);
	rec->seq++;
	fw_record_format(rec, slot);
	if (fw_pwrite_all(lk->fd, slot, sizeof(slot),
	                  fw_record_offset(rec->seq)) < 0)
		return fw_fail_sys(res, errno, "write", t->fshown);
	if (fw_fdatasync(lk->fd) < 0)
		return fw_fail_sys(res, errno, "fdatasync", t->fshown);
	return FW_OK;
}

int fw_init(const char *path, uint64_t token, const struct fw_opts *opts,
            struct fw_result *res)
{
	struct fw_record rec;
	struct target t;
	struct stat st;
	int rc;

	fw_result_start(res);
	rc = fw_target_start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_mount_check(&t, opts, res);
	if (rc == FW_OK)
		rc = fw_file_state(&t, &st, res);
	memset(&rec, 0, sizeof(rec));
	fw_record_stamp(&rec, "init");
	rec.token = rec.ftoken = token;
	rec.file = FW_FILE_ABSENT;
	if (rc == 0) {
		/* FILE's content is from now on what TOKEN committed. */
		int fd = openat(t.dirfd, t.base, O_RDONLY | O_NOFOLLOW |
		                O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

		if (fd < 0 || fw_identity_fd(fd, &rec) < 0)
			rc = fw_fail_sys(res, errno, "read", path);
		if (fd >= 0)
			close(fd);
	}
	if (rc == 0 || rc == 1)
		rc = fw_fence_create(&t, &rec, rc == 0 ? &st : NULL, opts, res);
	if (rc == 1) {
		struct fw_fence_info info;
		struct fw_result shown;

		if (fw_show(path, opts, &info, &shown) == FW_OK)
			rc = fw_fail(res, FW_UNSAFE,
			             "%s is already fenced (%s holds %llu); "
			             "--init never replaces a fence", path,
			             t.fshown, (unsigned long long)info.token);
		else
			rc = fw_fail(res, FW_UNSAFE,
			             "%s already exists; --init never replaces "
			             "a fence (%s)", t.fshown, shown.message);
	} else if (rc == FW_OK) {
		rc = fw_ok(res);
	}
	fw_target_close(&t);
	return fw_result_end(res, rc);
}
