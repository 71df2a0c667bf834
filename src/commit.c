/*
 * commit.c - the fenced commit protocol, in the order of its steps.
 *
 *   begin   open FILE's directory once; every later step is relative to it,
 *           so renaming a path component mid-commit cannot redirect us.
 *           Create the temporary file there.
 *   write   stream the content into it (no lock held: a large file must
 *           not lengthen the time others wait).
 *   commit  1. fsync the content.
 *           2. lock the fence (lock.c), creating it when FILE and fence
 *              are both absent; read it; anything invalid fails closed.
 *           3. reject a token not larger than the fence's.
 *           4. write the token into the fence and fdatasync it.
 *           5. rename the content over FILE; fsync the directory.
 *           6. unlock.
 *
 * Step 4 before step 5 is the whole point.  Were FILE renamed first, a
 * crash (or a slow fence write) would leave FILE holding token N's content
 * behind a fence still at the old token, and a paused holder whose token
 * lies between the two would be accepted and overwrite newer content.  In
 * this order the fence is never behind FILE; a crash between 4 and 5 only
 * costs the new content, and the temporary file is left for fw_clean().
 *
 * The directory is fsynced before the unlock because on NFS the unlock may
 * flush cached state and swallow a write error nobody would then report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"


/* What a NULL struct fw_opts means (fw_opts_init gives the same). */
const struct fw_opts fw_default_opts = { NULL, -1, 0, 0, NULL, NULL };

void fw_opts_init(struct fw_opts *opts)
{
	*opts = fw_default_opts;
}

/*
 * A temporary file's path for messages: NAME in DIR, or, when NAME is
 * empty (it could not be created), the pattern of names for BASE.
 */
static const char *tmp_shown(const char *dir, const char *base,
                             const char *name, char *buf, size_t len)
{
	const char *sep = strcmp(dir, ".") ? "/" : "";

	if (!strcmp(dir, "."))
		dir = "";
	if (name[0])
		snprintf(buf, len, "%s%s%s", dir, sep, name);
	else
		snprintf(buf, len, "%s%s.%s" FW_TMP_MARK "XXXXXXXXXXXX", dir,
		         sep, base);
	return buf;
}

/*
 * Look at FILE without following it.  0 and *ST when it is a regular file,
 * 1 when absent, else a failure code.
 */
static int file_state(const struct target *t, struct stat *st,
                      struct fw_result *res)
{
	if (fstatat(t->dirfd, t->base, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 1;
		return fw_fail_sys(res, errno, "stat", t->path);
	}
	/* A link in a shared directory may have been planted to make us
	   write somewhere unfenced; a rename would replace the link itself.
	   Either way the caller meant something else: refuse. */
	if (S_ISLNK(st->st_mode))
		return fw_fail(res, FW_UNSAFE,
		               "%s is a symbolic link; fencedwrite neither "
		               "follows nor replaces links: name the file it "
		               "points to", t->path);
	if (!S_ISREG(st->st_mode))
		return fw_fail(res, FW_UNSAFE, "%s is not a regular file",
		               t->path);
	return 0;
}

/*
 * A fence named with --fence may guard many files.  Re-created at 0 when
 * missing, it would reopen the door for all of them the moment one absent
 * file is written, so only --init creates it.
 */
static int named_fence_missing(const struct target *t, struct fw_result *res)
{
	return fw_fail(res, FW_UNSAFE,
	               "the fence %s does not exist; a fence named with "
	               "--fence is created only by 'fencedwrite --init "
	               "--fence %s %s'", t->fshown, t->fshown, t->path);
}

static int not_fenced(const struct target *t, struct fw_result *res)
{
	return fw_fail(res, FW_UNSAFE,
	               "%s is not fenced (no %s); adopt it with "
	               "'fencedwrite --init %s'", t->path, t->fshown, t->path);
}

/*
 * The permission bits FILE is to have, for creating its replacement:
 * FILE's own, the caller's, or 0666 (less the umask, applied by open).
 */
static mode_t wanted_mode(const struct stat *old, const struct fw_opts *o)
{
	if (o->flags & FW_USE_MODE)
		return o->mode & 07777;
	return old ? old->st_mode & 07777 : 0666;
}

/*
 * The bits of a new fence: FILE's read and write bits, never write for
 * others (any local user could lower the token; trust.c refuses such a
 * fence), never execute or set-id (a fence is data, and a set-id file that
 * others may fill is a hole).
 */
static mode_t fence_mode(const struct stat *file, const struct fw_opts *o)
{
	return wanted_mode(file, o) & 0664;
}

/*
 * Give FD (whose state is NOW) the owner and group OLD has, where the
 * process may, and the bits WANT; when EXACT, WANT even if NOW already
 * differs only by the umask.
 */
static int set_owner_and_bits(int fd, const struct stat *now,
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
static int set_mode(int fd, const struct stat *now, const struct stat *old,
                    const struct fw_opts *o)
{
	return set_owner_and_bits(fd, now, old, wanted_mode(old, o),
	                          old || (o->flags & FW_USE_MODE));
}

/* The same for a new fence of FILE (OLD), with the bits of fence_mode. */
static int set_fence_mode(int fd, const struct stat *now,
                          const struct stat *old, const struct fw_opts *o)
{
	return set_owner_and_bits(fd, now, old, fence_mode(old, o),
	                          old || (o->flags & FW_USE_MODE));
}

/* ---- the fence ------------------------------------------------------- */

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
 * Create the fence holding TOKEN, atomically: it is written and synced
 * under a temporary name and then link()ed into place, which fails if a
 * fence appeared meanwhile.  A fence therefore never exists half-written,
 * and a crash during creation leaves no fence rather than a broken one.
 * Returns FW_OK, or 1 if another process created it first.
 */
static int create_fence(const struct target *t, uint64_t token,
                        const char *op, const struct stat *file,
                        const struct fw_opts *opts, struct fw_result *res)
{
	char tmp[NAME_MAX + 1], image[FW_FENCE_SIZE];
	struct fw_record rec;
	struct stat now;
	int fd, rc = FW_OK;

	memset(&rec, 0, sizeof(rec));
	rec.token = token;
	fw_record_stamp(&rec, op);
	fw_record_image(&rec, image);
	tmp[0] = '\0';
	fd = fw_tmp_create(t->fdirfd, t->fbase, fence_mode(file, opts),
	                   tmp, sizeof(tmp), &now);
	if (fd < 0) {
		char fdir[PATH_MAX], shown[PATH_MAX + 64];

		return fw_fail_sys(res, errno, "open",
		                   tmp_shown(fdir_shown(t, fdir), t->fbase, "",
		                             shown, sizeof(shown)));
	}
	if (set_fence_mode(fd, &now, file, opts) < 0)
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

static int read_fence(const struct target *t, int fd, struct fw_record *rec,
                      struct fw_result *res)
{
	char image[FW_FENCE_SIZE + 1], why[160];
	ssize_t n;

	/* One read of one byte more than a fence: a short count from a
	   regular file is its end, so a longer file shows as 513. */
	do
		n = pread(fd, image, sizeof(image), 0);
	while (n < 0 && errno == EINTR);

	if (n < 0)
		return fw_fail_sys(res, errno, "read", t->fshown);
	if (fw_record_parse(image, (size_t)n, rec, why, sizeof(why)) < 0)
		return fw_fail(res, FW_UNSAFE,
		               "%s is corrupt: %s; refusing to guess its token "
		               "(see fencedwrite-fence(5) to recover)",
		               t->fshown, why);
	if (res) {
		res->fence_read = 1;
		res->fence_token = rec->token;
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
	struct stat st;
	int rc;

	if (!res || (res->sys_errno != EACCES && res->sys_errno != EPERM) ||
	    fstatat(t->fdirfd, t->fbase, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return FW_SYSTEM;
	{
		struct fw_result why;

		rc = fw_fence_trusted(&st, t->fshown, &why);
		if (rc != FW_OK)
			*res = why;
	}
	return rc == FW_OK ? FW_SYSTEM : rc;
}

/* How fence_lock treats a missing fence. */
enum absent { ABSENT_FAILS, ABSENT_CREATES, ABSENT_REPORTS };

/*
 * Lock the fence and read it.  A fence that is missing while FILE is
 * absent too is created (ABSENT_CREATES) or reported as 1
 * (ABSENT_REPORTS); missing beside an existing FILE, it fails closed.
 */
static int fence_lock(const struct target *t, int exclusive, enum absent how,
                      int64_t deadline, const struct fw_opts *opts,
                      struct fw_lock *lk, struct fw_record *rec,
                      struct fw_result *res)
{
	int file_seen = 0;

	for (int attempt = 0; attempt < 100; attempt++) {
		struct stat st;
		int rc = fw_lock_open(t->fdirfd, t->fbase, t->fshown, exclusive,
		                      deadline, opts, lk, res);

		if (rc == FW_OK) {
			rc = fw_fence_trusted(&lk->st, t->fshown, res);
			if (rc == FW_OK)
				rc = read_fence(t, lk->fd, rec, res);
			if (rc != FW_OK)
				fw_lock_release(lk);
			return rc;
		}
		if (rc == FW_SYSTEM)
			return unopenable_fence(t, res);
		if (rc != FW_LOCK_ABSENT)
			return rc;
		if (how == ABSENT_FAILS)
			return fw_fail(res, FW_UNSAFE, "%s has no fence (%s)",
			               t->path, t->fshown);
		if (opts->fence_path)
			return named_fence_missing(t, res);
		/* A fence is always created before FILE first appears, so FILE
		   present and fence absent means a fence just created by
		   someone else (look once more) or no fence at all. */
		rc = file_state(t, &st, res);
		if (rc == 0) {
			if (file_seen++)
				return not_fenced(t, res);
			continue;
		}
		if (rc != 1)
			return rc;
		if (how == ABSENT_REPORTS)
			return 1;
		rc = create_fence(t, 0, "create", NULL, opts, res);
		if (rc != FW_OK && rc != 1)
			return rc;
	}
	return fw_fail(res, FW_UNSAFE, "%s keeps appearing and disappearing",
	               t->fshown);
}

static int accepts(const struct fw_opts *o, uint64_t token, uint64_t fence)
{
	return token > fence || (token == fence && (o->flags & FW_ALLOW_EQUAL));
}

static int stale(const struct target *t, uint64_t token, uint64_t fence,
                 struct fw_result *res)
{
	return fw_fail(res, FW_STALE,
	               "stale token %llu for %s: the fence holds %llu%s",
	               (unsigned long long)token, t->path,
	               (unsigned long long)fence,
	               token == fence ? " (an equal token is stale unless "
	                                "allowed)" : "");
}

/* Step 4: the new record goes into the slot the current one is not in. */
static int advance_fence(const struct target *t, const struct fw_lock *lk,
                         const struct fw_record *cur, uint64_t token,
                         const char *op, struct fw_result *res)
{
	char slot[FW_SLOT_SIZE];
	struct fw_record next;

	if (cur->seq == UINT64_MAX)
		return fw_fail(res, FW_UNSAFE, "%s: sequence number exhausted",
		               t->fshown);
	memset(&next, 0, sizeof(next));
	next.seq = cur->seq + 1;
	next.token = token;
	fw_record_stamp(&next, op);
	fw_record_format(&next, slot);
	if (fw_pwrite_all(lk->fd, slot, sizeof(slot),
	                  fw_record_offset(next.seq)) < 0)
		return fw_fail_sys(res, errno, "write", t->fshown);
	if (fw_fdatasync(lk->fd) < 0)
		return fw_fail_sys(res, errno, "fdatasync", t->fshown);
	return FW_OK;
}

/*
 * Replacing or unlinking FILE frees its blocks at that moment, which for a
 * large file takes long (tens of milliseconds per 100 MiB with discard) and
 * would keep everybody waiting on the lock.  A descriptor held on the old
 * inode moves that cost to its close(), after the unlock.  Not worth a
 * system call for small files.
 *
 * Only on local disk filesystems: an NFS client asked to rename over (or
 * unlink) a file it holds open first renames that file to ".nfsXXXX" on
 * the server, in a call of its own.  Between the two calls another host
 * sees no FILE at all, and a client crash between them leaves it absent.
 */
#define DEFER_FREE_BYTES (1 << 20)

static int frees_blocks_late_safely(int dirfd)
{
	struct statfs sf;

	if (fstatfs(dirfd, &sf) < 0)
		return 0;
	switch ((unsigned long)sf.f_type) {
	case 0xef53:        /* ext2, ext3, ext4 */
	case 0x58465342:    /* xfs */
	case 0x9123683e:    /* btrfs */
	case 0xf2f52010:    /* f2fs */
	case 0x2fc12fc1:    /* zfs */
	case 0xca451a4e:    /* bcachefs */
		return 1;
	default:
		return 0;
	}
}

/*
 * Steps 2 to 6, shared by commit and delete: lock and read the fence, check
 * TOKEN, advance the fence durably, then rename TMP over FILE (or, with TMP
 * NULL, unlink FILE) and sync the directory, and unlock.  TMP is emptied
 * once renamed, so nobody unlinks that name again.
 */
static int fenced_change(const struct target *t, uint64_t token, char *tmp,
                         const struct fw_opts *opts, struct fw_result *res)
{
	struct fw_record cur;
	struct fw_lock lk;
	struct stat st;
	int rc, present, old_fd = -1;

	rc = fence_lock(t, 1, ABSENT_CREATES, fw_deadline(opts->timeout_ms),
	                opts, &lk, &cur, res);
	if (rc != FW_OK)
		return rc;
	if (!accepts(opts, token, cur.token)) {
		rc = stale(t, token, cur.token, res);
		goto unlock;
	}
	/* FILE as it is now, under the lock: a link planted since the
	   transaction began would be replaced by the rename (or removed by
	   the unlink) instead of refused. */
	rc = file_state(t, &st, res);
	if (rc != 0 && rc != 1)
		goto unlock;
	present = rc == 0;
	if (fw_cancelled(opts)) {
		rc = fw_fail_sys(res, EINTR, tmp ? "commit" : "delete", t->path);
		goto unlock;
	}
	/* From here on the change is finished, not abandoned. */
	rc = advance_fence(t, &lk, &cur, token, tmp ? "commit" : "delete", res);
	if (rc != FW_OK)
		goto unlock;
	if (present && st.st_size >= DEFER_FREE_BYTES &&
	    frees_blocks_late_safely(t->dirfd))
		old_fd = openat(t->dirfd, t->base, O_RDONLY | O_NOFOLLOW |
		                O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (tmp) {
		if (renameat(t->dirfd, tmp, t->dirfd, t->base) < 0) {
			rc = fw_fail_sys(res, errno, "rename", t->path);
			goto unlock;
		}
		tmp[0] = '\0';
	} else if (unlinkat(t->dirfd, t->base, 0) < 0 && errno != ENOENT) {
		rc = fw_fail_sys(res, errno, "unlink", t->path);
		goto unlock;
	}
	if (fw_fsync(t->dirfd) < 0) {
		rc = fw_fail_sys(res, errno, "fsync directory", t->dirshown);
		goto unlock;
	}
	rc = fw_ok(res);
unlock:
	fw_lock_release(&lk);
	if (old_fd >= 0)
		close(old_fd);   /* frees the old blocks, now unlocked */
	return rc;
}

/* What every entry point does first: defaults, a clean result, FILE's
   directory and fence located. */
static int start(struct target *t, const char *path,
                 const struct fw_opts **opts, struct fw_result *res)
{
	if (!*opts)
		*opts = &fw_default_opts;
	return fw_target_open(t, path, *opts, res);
}

static int zero_token(struct fw_result *res)
{
	return fw_fail(res, FW_USAGE, "token 0 is never accepted");
}

/* ---- the streaming transaction --------------------------------------- */

struct fw_txn {
	struct target t;
	struct fw_opts opts;
	int fd;
	char tmp[NAME_MAX + 1];         /* its name in FILE's directory */
	char tmpshown[PATH_MAX + 64];   /* its path, for messages */
	char *names;                    /* our copies of the caller's strings */
	mode_t setid_mode;              /* FILE's bits if set-id, else 0 */
};

/*
 * Copy the strings the transaction uses after fw_txn_begin returns (FILE's
 * path for messages, the fence's and the mount table's names), so the
 * caller may free its own at once.
 */
static int copy_names(struct fw_txn *txn, const char *path)
{
	const char *src[3] = { path, txn->opts.fence_path,
	                       txn->opts.mountinfo };
	size_t len[3], total = 0;
	char *p;

	for (int i = 0; i < 3; i++)
		total += len[i] = src[i] ? strlen(src[i]) + 1 : 0;
	p = txn->names = malloc(total ? total : 1);
	if (!p)
		return -1;
	for (int i = 0; i < 3; i++)
		if (src[i]) {
			memcpy(p, src[i], len[i]);
			src[i] = p;
			p += len[i];
		}
	txn->t.path = src[0];
	txn->opts.fence_path = src[1];
	txn->opts.mountinfo = src[2];
	return 0;
}

/*
 * Free TXN, removing its temporary file unless it was renamed into place.
 * A file that cannot be removed is added to RES's message, which keeps its
 * code: the caller must still learn what happened to FILE first.
 */
static void txn_free(struct fw_txn *txn, struct fw_result *res)
{
	int err = fw_tmp_discard(txn->t.dirfd, txn->tmp, txn->fd);

	if (err)
		fw_result_append(res, "%sthe temporary file %s could not be "
		                 "removed (%s): remove it with 'fencedwrite "
		                 "--clean %s'", res && res->message[0] ? "; "
		                 : "", txn->tmpshown, strerror(err),
		                 txn->t.path);
	fw_target_close(&txn->t);
	free(txn->names);
	free(txn);
}

int fw_txn_begin(struct fw_txn **out, const char *path,
                 const struct fw_opts *opts, struct fw_result *res)
{
	struct fw_txn *txn;
	struct stat st, fst;
	int rc;

	*out = NULL;
	fw_result_start(res);
	if (!path || !*path)
		return fw_result_end(res, fw_fail(res, FW_USAGE,
		                                  "no file named"));
	txn = calloc(1, sizeof(*txn));
	if (!txn)
		return fw_result_end(res, fw_fail_sys(res, ENOMEM, "malloc",
		                                      path));
	txn->opts = opts ? *opts : fw_default_opts;
	txn->fd = -1;
	if (copy_names(txn, path) < 0) {
		free(txn);
		return fw_result_end(res, fw_fail_sys(res, ENOMEM, "malloc",
		                                      path));
	}
	rc = fw_target_open(&txn->t, txn->t.path, &txn->opts, res);
	if (rc != FW_OK) {
		free(txn->names);
		free(txn);
		return fw_result_end(res, rc);
	}
	rc = fw_mount_check(&txn->t, &txn->opts, res);
	if (rc == FW_OK)
		rc = file_state(&txn->t, &st, res);
	/* Fail before the producer runs, not after: an existing FILE with
	   no fence, or a named fence that is missing, can never be
	   committed. */
	if ((rc == 0 || (rc == 1 && txn->opts.fence_path)) &&
	    fstatat(txn->t.fdirfd, txn->t.fbase, &fst, AT_SYMLINK_NOFOLLOW) < 0)
		rc = errno != ENOENT ? fw_fail_sys(res, errno, "stat",
		                                   txn->t.fshown)
		     : txn->opts.fence_path ? named_fence_missing(&txn->t, res)
		     : not_fenced(&txn->t, res);
	if (rc == 0 || rc == 1) {
		mode_t want = wanted_mode(rc == 0 ? &st : NULL, &txn->opts);
		struct stat now;

		if (want & (S_ISUID | S_ISGID))
			txn->setid_mode = want;
		txn->fd = fw_tmp_create(txn->t.dirfd, txn->t.base, want & 0777,
		                        txn->tmp, sizeof(txn->tmp), &now);
		if (txn->fd < 0)
			txn->tmp[0] = '\0';
		tmp_shown(txn->t.dirshown, txn->t.base, txn->tmp,
		          txn->tmpshown, sizeof(txn->tmpshown));
		if (txn->fd < 0)
			rc = fw_fail_sys(res, errno, "open", txn->tmpshown);
		else if (set_mode(txn->fd, &now, rc == 0 ? &st : NULL,
		                  &txn->opts) < 0)
			rc = fw_fail_sys(res, errno, "fchmod", txn->tmpshown);
		else
			rc = FW_OK;
	}
	if (rc != FW_OK) {
		txn_free(txn, res);
		return fw_result_end(res, rc);
	}
	*out = txn;
	return fw_result_end(res, fw_ok(res));
}

int fw_txn_fd(const struct fw_txn *txn)
{
	return txn->fd;
}

int fw_txn_write(struct fw_txn *txn, const void *buf, size_t len,
                 struct fw_result *res)
{
	fw_result_start(res);
	if (fw_write_all(txn->fd, buf, len, &txn->opts) < 0)
		return fw_result_end(res, fw_fail_sys(res, errno, "write",
		                                      txn->tmpshown));
	return fw_result_end(res, fw_ok(res));
}

int fw_txn_copy_fd(struct fw_txn *txn, int fd, const char *fd_name,
                   struct fw_result *res)
{
	char both[PATH_MAX + 512];
	int read_side;

	fw_result_start(res);
	if (fw_copy_fd(fd, txn->fd, &txn->opts, &read_side) == 0)
		return fw_result_end(res, fw_ok(res));
	if (read_side == 1)
		return fw_result_end(res, fw_fail_sys(res, errno, "read",
		                                      fd_name));
	if (read_side == 0)
		return fw_result_end(res, fw_fail_sys(res, errno, "write",
		                                      txn->tmpshown));
	snprintf(both, sizeof(both), "%s, %s", fd_name, txn->tmpshown);
	return fw_result_end(res, fw_fail_sys(res, errno, "copy", both));
}

void fw_txn_abort(struct fw_txn *txn)
{
	if (txn)
		txn_free(txn, NULL);
}

int fw_txn_rollback(struct fw_txn *txn, struct fw_result *res)
{
	fw_result_start(res);
	if (!txn)
		return fw_result_end(res, fw_ok(res));
	txn_free(txn, res);
	return fw_result_end(res, res && res->message[0] ? FW_SYSTEM : FW_OK);
}

int fw_txn_commit(struct fw_txn *txn, uint64_t token, struct fw_result *res)
{
	int rc;

	fw_result_start(res);
	if (token == 0)
		rc = zero_token(res);
	/* The kernel drops set-id bits at the first write of a process that
	   may not set them (CAP_FSETID); the owner may set them again. */
	else if (txn->setid_mode && fchmod(txn->fd, txn->setid_mode) < 0)
		rc = fw_fail_sys(res, errno, "fchmod", txn->tmpshown);
	/* 1. The content is durable before the fence can name it. */
	else if (fw_fsync(txn->fd) < 0)
		rc = fw_fail_sys(res, errno, "fsync", txn->tmpshown);
	else if (fw_cancelled(&txn->opts))
		rc = fw_fail_sys(res, EINTR, "commit", txn->t.path);
	else
		rc = fenced_change(&txn->t, token, txn->tmp, &txn->opts, res);
	txn_free(txn, res);
	return fw_result_end(res, rc);
}

int fw_commit_buffer(const char *path, uint64_t token, const void *buf,
                     size_t len, const struct fw_opts *opts,
                     struct fw_result *res)
{
	struct fw_txn *txn;
	int rc;

	fw_result_start(res);
	if (token == 0)
		return fw_result_end(res, zero_token(res));
	rc = fw_txn_begin(&txn, path, opts, res);
	if (rc != FW_OK)
		return rc;
	rc = fw_txn_write(txn, buf, len, res);
	if (rc != FW_OK) {
		txn_free(txn, res);
		return fw_result_end(res, rc);
	}
	return fw_txn_commit(txn, token, res);
}

/* ---- the other operations -------------------------------------------- */

int fw_delete(const char *path, uint64_t token, const struct fw_opts *opts,
              struct fw_result *res)
{
	struct target t;
	int rc;

	fw_result_start(res);
	if (token == 0)
		return fw_result_end(res, zero_token(res));
	rc = start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_mount_check(&t, opts, res);
	if (rc == FW_OK)
		rc = fenced_change(&t, token, NULL, opts, res);
	fw_target_close(&t);
	return fw_result_end(res, rc);
}

int fw_check(const char *path, uint64_t token, const struct fw_opts *opts,
             struct fw_result *res)
{
	struct target t;
	struct fw_record cur;
	struct fw_lock lk;
	int rc;

	fw_result_start(res);
	if (token == 0)
		return fw_result_end(res, zero_token(res));
	rc = start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fence_lock(&t, 0, ABSENT_REPORTS, fw_deadline(opts->timeout_ms),
	                opts, &lk, &cur, res);
	if (rc == 1) {
		/* Neither FILE nor fence: a first commit would create the
		   fence at 0 and accept any token. */
		rc = fw_ok(res);
	} else if (rc == FW_OK) {
		rc = accepts(opts, token, cur.token)
		             ? fw_ok(res) : stale(&t, token, cur.token, res);
		fw_lock_release(&lk);
	}
	fw_target_close(&t);
	return fw_result_end(res, rc);
}

int fw_show(const char *path, const struct fw_opts *opts,
            struct fw_fence_info *info, struct fw_result *res)
{
	struct target t;
	struct fw_record cur;
	struct fw_lock lk;
	int rc;

	fw_result_start(res);
	rc = start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fence_lock(&t, 0, ABSENT_FAILS, fw_deadline(opts->timeout_ms),
	                opts, &lk, &cur, res);
	if (rc == FW_OK) {
		fw_lock_release(&lk);
		info->token = cur.token;
		info->seq = cur.seq;
		info->time = cur.time;
		info->pid = cur.pid;
		memcpy(info->host, cur.host, sizeof(info->host));
		memcpy(info->op, cur.op, sizeof(info->op));
		rc = fw_ok(res);
	}
	fw_target_close(&t);
	return fw_result_end(res, rc);
}

int fw_init(const char *path, uint64_t token, const struct fw_opts *opts,
            struct fw_result *res)
{
	struct target t;
	struct stat st;
	int rc;

	fw_result_start(res);
	rc = start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_mount_check(&t, opts, res);
	if (rc == FW_OK)
		rc = file_state(&t, &st, res);
	if (rc == 0 || rc == 1)
		rc = create_fence(&t, token, "init", rc == 0 ? &st : NULL, opts,
		                  res);
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

int fw_clean(const char *path, const struct fw_opts *opts, unsigned *removed,
             struct fw_result *res)
{
	struct target t;
	unsigned n = 0;
	int rc;

	fw_result_start(res);
	rc = start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_tmp_clean(t.dirfd, t.base, t.dirshown, &n, res);
	if (rc == FW_OK)
		rc = fw_tmp_clean(t.fdirfd, t.fbase, t.fshown, &n, res);
	if (rc == FW_OK && n > 0 && fw_fsync(t.dirfd) < 0)
		rc = fw_fail_sys(res, errno, "fsync directory", t.dirshown);
	if (rc == FW_OK)
		rc = fw_ok(res);
	if (removed)
		*removed = n;
	fw_target_close(&t);
	return fw_result_end(res, rc);
}
