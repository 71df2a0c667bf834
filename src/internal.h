/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the library's rooms share and callers never see.
 */
#ifndef FW_INTERNAL_H
#define FW_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fencedwrite.h"

#define FW_HIDDEN __attribute__((visibility("hidden")))
#define FW_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* What a NULL struct fw_opts means (commit.c). */
FW_HIDDEN extern const struct fw_opts fw_default_opts;

/* ---- status.c: filling struct fw_result ------------------------------ */

/*
 * Record CODE with a formatted message and evaluate to CODE.  Macros, so
 * that the value of a failure is visible where it is returned (a static
 * analyser cannot see through a call into another file).
 */
FW_HIDDEN void fw_set_result(struct fw_result *res, int code,
                             const char *fmt, ...) FW_PRINTF(3, 4);
FW_HIDDEN void fw_set_sys_result(struct fw_result *res, int err,
                                 const char *call, const char *path);
#define fw_fail(res, code, ...) \
	(fw_set_result((res), (code), __VA_ARGS__), (code))
/* FW_SYSTEM naming the call, the path and strerror(ERR). */
#define fw_fail_sys(res, err, call, path) \
	(fw_set_sys_result((res), (err), (call), (path)), FW_SYSTEM)
#define fw_ok(res) (fw_set_result((res), FW_OK, "%s", ""), FW_OK)

/* Clear every field of RES (at the start of each public call). */
FW_HIDDEN void fw_result_start(struct fw_result *res);
/* Make RES agree with CODE on the way out of a public call: the code
   itself, a message for every failure, no errno or token left over. */
FW_HIDDEN void fw_result_finish(struct fw_result *res, int code);
/* fw_result_finish, evaluating to CODE (evaluated once) where the reader
   and a static analyser can see it. */
#define fw_result_end(res, code) \
	({ int fw_code_ = (code); fw_result_finish((res), fw_code_); fw_code_; })
/* Add to RES's message (a second thing the caller must know). */
FW_HIDDEN void fw_result_append(struct fw_result *res, const char *fmt, ...)
	FW_PRINTF(2, 3);

/* "token 0 is never accepted" (FW_USAGE). */
FW_HIDDEN int fw_zero_token(struct fw_result *res);

/* True when a call that failed with EINTR must not be retried. */
FW_HIDDEN int fw_cancelled(const struct fw_opts *opts);

/* ---- target.c: FILE's directory and fence ----------------------------- */

#include <limits.h>

struct target {
	const char *path;          /* FILE as the caller named it */
	int dirfd;                 /* FILE's directory */
	char base[NAME_MAX + 1];   /* FILE's name in it */
	char dirshown[PATH_MAX];   /* the directory, for messages */
	int fdirfd;                /* the fence's directory (may be dirfd) */
	char fbase[NAME_MAX + 1];
	char fshown[PATH_MAX];     /* the fence's path, for messages */
	int fence_local;           /* set by fw_mount_check: the fence's
	                              locks are a local kernel's, never lost */
	int named;                 /* the fence was named (--fence): it may
	                              guard other files than FILE */
};

/* Open FILE's directory (and the fence's, if elsewhere); FW_OK or a code. */
FW_HIDDEN int fw_target_open(struct target *t, const char *path,
                             const struct fw_opts *opts,
                             struct fw_result *res);
/* What every action with a token does first: a clean RES, token 0
   refused, then fw_target_start. */
FW_HIDDEN int fw_target_begin(struct target *t, const char *path,
                              uint64_t token, const struct fw_opts **opts,
                              struct fw_result *res);
/* The same after making a NULL *OPTS the defaults. */
FW_HIDDEN int fw_target_start(struct target *t, const char *path,
                              const struct fw_opts **opts,
                              struct fw_result *res);
FW_HIDDEN void fw_target_close(struct target *t);
/*
 * Look at FILE without following it.  0 and *ST when it is a regular file,
 * 1 when absent, else a failure code (a link or another kind of file is
 * FW_UNSAFE).
 */
FW_HIDDEN int fw_file_state(const struct target *t, struct stat *st,
                            struct fw_result *res);

/* ---- mode.c: owner, group and bits of the files we create ------------ */

/* The bits FILE is to have: FILE's own (OLD), --mode's, or 0666. */
FW_HIDDEN mode_t fw_wanted_mode(const struct stat *old,
                                const struct fw_opts *o);
/* Give FD (whose state is NOW) OLD's owner and group where the process
   may, and the bits WANT (when EXACT, even if only the umask differs). */
FW_HIDDEN int fw_set_owner_and_bits(int fd, const struct stat *now,
                                    const struct stat *old, mode_t want,
                                    int exact);
/* The same with FILE's wanted bits. */
FW_HIDDEN int fw_set_mode(int fd, const struct stat *now,
                          const struct stat *old, const struct fw_opts *o);

/* ---- mount.c: where a file lives -------------------------------------- */

/* Analyse the mount of DIRFD in TABLE (NULL: /proc/self/mountinfo). */
FW_HIDDEN int fw_mount_of(int dirfd, const char *shown, const char *table,
                          struct fw_mount_info *info, struct fw_result *res);
/*
 * Whether fencing holds for T: the fence's filesystem must keep locks that
 * reach every host that can write FILE.  FW_OK if so, or if the caller
 * allows local locks (FW_LOCAL_LOCKS_OK); FW_UNSAFE with a message naming
 * the paths and the reason; or another code.  *FENCE receives the fence's
 * mount; with DETAILS every field is filled from the mount table, else a
 * known local filesystem costs one fstatfs() and fills only scope, fstype
 * and why.  The write path and fw_doctor both ask this, so they agree.
 */
FW_HIDDEN int fw_mount_judge(const struct target *t,
                             const struct fw_opts *opts, int details,
                             struct fw_mount_info *fence,
                             struct fw_result *res);
/* fw_mount_judge for the write path: FW_OK, FW_UNSAFE naming the reason,
   or another code. */
FW_HIDDEN int fw_mount_check(struct target *t, const struct fw_opts *opts,
                             struct fw_result *res);
/* 1 if statfs type F_TYPE is a known local filesystem. */
FW_HIDDEN int fw_fs_is_local(long f_type);
/* All of a kernel table (PATH) in a NUL-terminated buffer to free; NULL
   with errno set (EFBIG: too long to be one). */
FW_HIDDEN char *fw_mount_read_table(const char *path);
/* Decode the \ooo escapes of the kernel's mount tables, in place. */
FW_HIDDEN void fw_mount_unescape(char *s);

/* ---- nfs_client.c: what this host's NFS client says about a mount ---- */

/* The NFSv4 lease of the mount at MOUNT_POINT, in seconds, from STATS (the
   text of /proc/self/mountstats); -1 if not found. */
FW_HIDDEN long fw_nfs_lease(const char *stats, const char *mount_point);
/* The NFS client's recover_lost_locks from PARAM (the text of its module
   parameter file): 1, 0, or -1 if not readable. */
FW_HIDDEN int fw_nfs_recover_lost_locks(const char *param);
/* Fill REP's lease_seconds and recover_lost_locks for its mount. */
FW_HIDDEN void fw_nfs_client_report(struct fw_doctor_report *rep);

/* ---- digest.c: XXH64 of FILE's content ------------------------------ */

struct fw_digest {
	uint64_t v[4];
	uint64_t total;
	unsigned char buf[32];
	size_t fill;
};

FW_HIDDEN void fw_digest_init(struct fw_digest *d);
FW_HIDDEN void fw_digest_update(struct fw_digest *d, const void *buf,
                                size_t len);
FW_HIDDEN uint64_t fw_digest_final(const struct fw_digest *d);
/* The digest and size of all FD holds, read from its start: 0, or -1
   with errno. */
FW_HIDDEN int fw_digest_fd(int fd, uint64_t *size, uint64_t *digest);

/* ---- fence_record.c: the fence file format --------------------------- */

#define FW_SLOT_SIZE 512
#define FW_FENCE_SIZE 1024        /* two slots */
#define FW_V1_FENCE_SIZE 512

/* What a record says FILE is once its change is in place. */
enum { FW_FILE_UNKNOWN, FW_FILE_ABSENT, FW_FILE_PRESENT };

struct fw_record {
	int version;            /* 1 or 2: the words it was written in */
	uint64_t seq;
	uint64_t token;
	int64_t time;
	long pid;
	char op[8];
	char host[65];
	int file;               /* FW_FILE_*; UNKNOWN in version 1 */
	uint64_t ftoken;        /* the token FILE's content was committed under */
	uint64_t ino, size, digest;   /* FILE, when FW_FILE_PRESENT */
};

/* A parsed fence. */
struct fw_fence {
	int layout;             /* 1: 512 bytes, 2: 1024 bytes */
	struct fw_record cur;   /* the newest valid record */
	struct fw_record prev;  /* the other record, when has_prev */
	int has_prev;
	int damaged;            /* the other slot is neither valid nor blank */
	char damage[64];        /* which slot, and why */
};

/* Format REC into a slot (REC->seq decides which): FW_SLOT_SIZE bytes. */
FW_HIDDEN void fw_record_format(const struct fw_record *rec,
                                char slot[FW_SLOT_SIZE]);
/* Byte offset of the slot that record number SEQ lives in. */
FW_HIDDEN off_t fw_record_offset(uint64_t seq);
/* The number of the record that follows F's current one. */
FW_HIDDEN uint64_t fw_record_next_seq(const struct fw_fence *f);
/*
 * Parse a whole fence image of LEN bytes.  On success fill *F and return
 * 0 (a damaged slot is reported in F, not an error: whether the current
 * record may be believed depends on FILE); otherwise return -1 and write a
 * short reason into WHY.
 */
FW_HIDDEN int fw_record_parse(const char *image, size_t len,
                              struct fw_fence *f, char *why, size_t whylen);
/* A fence image holding only REC (the other slot blank). */
FW_HIDDEN void fw_record_image(const struct fw_record *rec,
                               char image[FW_FENCE_SIZE]);
/* The same in format version 1, as older versions wrote it (tests). */
FW_HIDDEN void fw_record_image_v1(const struct fw_record *rec,
                                  char image[FW_V1_FENCE_SIZE]);
/* Fill pid, host and time for a record written now. */
FW_HIDDEN void fw_record_stamp(struct fw_record *rec, const char *op);

/* ---- trust.c: whose fence this is ------------------------------------ */

/*
 * FW_OK if a fence whose state is ST (as fstat gave it for the locked
 * descriptor FD, or -1), in the directory DIRFD, may be believed by this
 * process; FW_UNSAFE with a message naming SHOWN (or its directory
 * DSHOWN), the owner, group, mode or ACL entry at fault, otherwise.
 */
FW_HIDDEN int fw_fence_trusted(int fd, const struct stat *st, int dirfd,
                               const char *dshown, const char *shown,
                               struct fw_result *res);
/* The directory rules alone, for a fence this process is to create. */
FW_HIDDEN int fw_dir_trusted(int dirfd, const char *dshown, const char *shown,
                             struct fw_result *res);
/* 1 if GID is one of this process's groups, 0 if not, -1 (errno). */
FW_HIDDEN int fw_in_group(gid_t gid);

/* ---- identity.c: is FILE what a record says? -------------------------- */

/* How FILE compares with a record. */
enum {
	FW_ID_SAME,         /* the record's inode, size (and digest) */
	FW_ID_EDITED,       /* the record's inode, other content */
	FW_ID_OTHER_FILE,   /* another inode (or FILE where none should be) */
	FW_ID_MISSING,      /* no FILE where the record names one */
	FW_ID_UNKNOWN       /* a version 1 record says nothing of FILE */
};

/* Fill REC's identity (present, inode, size, digest) from FD's content. */
FW_HIDDEN int fw_identity_fd(int fd, struct fw_record *rec);
/* Compare REC with FILE's stat ST (PRESENT 0: FILE absent), no reading:
   inode and size only. */
FW_HIDDEN int fw_identity_compare(const struct fw_record *rec,
                                  const struct stat *st, int present);
/* The full comparison, digest included, of BASE in DIRFD: 0 and
   *VERDICT, or -1 with errno. */
FW_HIDDEN int fw_identity_check(int dirfd, const char *base,
                                const struct fw_record *rec, int *verdict);

/* ---- lock.c: exclusive access to the fence --------------------------- */

struct fw_guard;

struct fw_lock {
	int fd;                 /* the locked fence, or -1 */
	struct fw_guard *guard; /* in-process exclusion for this inode */
	struct stat st;         /* the locked inode, as fstat saw it */
	int ofd;                /* kind fw_lock_open tried, also when busy:
	                           1 OFD, 0 classic, -1 none */
};

/* fw_lock_open's result when the fence does not exist. */
#define FW_LOCK_ABSENT (-1)

/*
 * Open NAME (relative to DIRFD, never following a symlink) and lock it,
 * for writing if EXCLUSIVE, else for reading.  DEADLINE_NS is a
 * CLOCK_MONOTONIC instant, or -1 to wait for ever, 0 not to wait.
 * Returns FW_OK, FW_LOCK_ABSENT, FW_LOCKED, FW_UNSAFE or FW_SYSTEM.
 */
FW_HIDDEN int fw_lock_open(int dirfd, const char *name, const char *shown,
                           int exclusive, int64_t deadline_ns,
                           const struct fw_opts *opts, struct fw_lock *lk,
                           struct fw_result *res);
FW_HIDDEN void fw_lock_release(struct fw_lock *lk);
/*
 * Try once to lock FD for writing, with an OFD lock where possible.
 * Returns 1 if granted, 0 if another holder has it, -1 with errno set.
 */
FW_HIDDEN int fw_lock_try(int fd, int wait);
/* Try a lock on FD without waiting, for diagnosis: KIND gets "ofd" or
   "classic"; 1 granted (and released again), 0 busy, -1 error. */
FW_HIDDEN int fw_lock_probe(int fd, int exclusive, char kind[8]);
FW_HIDDEN int64_t fw_now_ns(void);
FW_HIDDEN int64_t fw_deadline(long timeout_ms);

/* ---- fence.c: the fence file's life ----------------------------------- */

struct fw_lock;

/* What fw_fence_lock does when the fence is missing. */
enum fw_absent {
	FW_ABSENT_FAILS,    /* fail closed */
	FW_ABSENT_CREATES,  /* create it (token 0) if FILE is absent too */
	FW_ABSENT_REPORTS   /* return 1 if FILE is absent too */
};

/*
 * Lock the fence (for writing if EXCLUSIVE) and read it into *F, failing
 * closed on an untrusted owner, a corrupt fence, or a damaged record that
 * FILE shows may have been newer.  A missing fence: see enum fw_absent; a
 * fence named with --fence is never created here.  FW_OK with *LK held,
 * or a failure code with nothing held.
 */
FW_HIDDEN int fw_fence_lock(const struct target *t, int exclusive,
                            enum fw_absent how, int64_t deadline,
                            const struct fw_opts *opts, struct fw_lock *lk,
                            struct fw_fence *f, struct fw_result *res);
/* Write NEXT (token, op, stamp and identity filled; seq is set here) as
   the fence's newest record, durably. */
FW_HIDDEN int fw_fence_advance(const struct target *t,
                               const struct fw_lock *lk,
                               const struct fw_fence *f,
                               struct fw_record *next, struct fw_result *res);
/* Write REC again as the next record (REC->seq moves on), into the other
   slot, so that both slots hold it. */
FW_HIDDEN int fw_fence_seal(const struct target *t, const struct fw_lock *lk,
                            struct fw_record *rec, struct fw_result *res);
/* Create the fence with REC, atomically; 1 if it already exists. */
FW_HIDDEN int fw_fence_create(const struct target *t,
                              const struct fw_record *rec,
                              const struct stat *file,
                              const struct fw_opts *opts,
                              struct fw_result *res);
/*
 * Whether the fence F accepts TOKEN for CHANGE (what FILE would become;
 * NULL: any change), FILE being ST (PRESENT 0: absent) under the lock.
 */
enum { FW_DECIDE_REJECT, FW_DECIDE_ACCEPT, FW_DECIDE_DONE };
FW_HIDDEN int fw_fence_decide(const struct fw_opts *o, uint64_t token,
                              const struct fw_fence *f, const struct stat *st,
                              int present, const struct fw_record *change);
/* The messages of refusals, shared by every action. */
FW_HIDDEN int fw_fence_stale(const struct target *t, uint64_t token,
                             uint64_t fence, struct fw_result *res);
FW_HIDDEN int fw_not_fenced(const struct target *t, struct fw_result *res);
FW_HIDDEN int fw_named_fence_missing(const struct target *t,
                                     struct fw_result *res);

/* ---- tmpfile.c: temporary files -------------------------------------- */

#define FW_TMP_MARK ".fwtmp."

/* Create ".BASE.fwtmp.RANDOM" in DIRFD, locked so no cleaner removes it.
   NAME receives the name (size >= NAME_MAX + 1), *ST the new file's
   state.  Returns the fd or -1. */
FW_HIDDEN int fw_tmp_create(int dirfd, const char *base, mode_t mode,
                            char *name, size_t namelen, struct stat *st);
/* Remove NAME (unless "") and close FD (unless < 0): 0, or the errno of
   a failed unlink, the file then left behind. */
FW_HIDDEN int fw_tmp_discard(int dirfd, const char *name, int fd);
/* A temporary file's path for messages: NAME in DIR, or, when NAME is
   empty (it could not be created), the pattern of names for BASE. */
FW_HIDDEN const char *fw_tmp_shown(const char *dir, const char *base,
                                   const char *name, char *buf, size_t len);
/* Remove dead writers' leftovers for BASE in DIRFD; count them in *N. */
FW_HIDDEN int fw_tmp_clean(int dirfd, const char *base, const char *shown,
                           unsigned *n, struct fw_result *res);

/* ---- io.c: system calls with EINTR and short counts handled ---------- */

FW_HIDDEN int fw_write_all(int fd, const void *buf, size_t len,
                           const struct fw_opts *opts);
FW_HIDDEN int fw_pwrite_all(int fd, const void *buf, size_t len, off_t off);
/* IN to OUT until end of file; *READ_SIDE: 1 IN failed, 0 OUT, -1 either. */
FW_HIDDEN int fw_copy_fd(int in, int out, const struct fw_opts *opts,
                         int *read_side);
FW_HIDDEN int fw_fsync(int fd);
FW_HIDDEN int fw_fdatasync(int fd);

/* An fsync of FD under way while the caller does something else. */
struct fw_sync_job {
	pthread_t thread;    /* making it, when started */
	int fd;
	int err;             /* its errno, or 0 */
	int started;         /* 0: fw_fsync_end makes the fsync itself */
};
/* Start fsync(FD) in a thread of its own if OVERLAP and a thread can be
   made; 1 if started, 0 if fw_fsync_end is to make it.  Never fails. */
FW_HIDDEN int fw_fsync_begin(struct fw_sync_job *job, int fd, int overlap);
/* Finish it: 0 once FD is durable, or -1 with the fsync's errno.  Call
   exactly once after fw_fsync_begin, whatever happened in between. */
FW_HIDDEN int fw_fsync_end(struct fw_sync_job *job);

#endif /* FW_INTERNAL_H */
