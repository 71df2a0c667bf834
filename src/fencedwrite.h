/* SPDX-License-Identifier: MIT */
/*
 * fencedwrite.h - replace a file on a shared filesystem only for the holder
 * of the newest fencing token.
 *
 * A lease store (etcd, ZooKeeper, ...) gives each new lease holder a token
 * larger than every token before it.  A holder that was paused past the end
 * of its lease still believes it holds the lease; only the resource can tell
 * it is stale.  This library makes a plain file that resource: beside FILE
 * lives a fence file, FILE.fence, that records the highest token ever
 * accepted, and every change of FILE goes through it:
 *
 *   1. the new content is written to a temporary file in FILE's directory
 *      and synced, before any lock is taken;
 *   2. the fence is locked (fcntl), read, and the token compared:
 *      a token not larger than the fence's is rejected (FW_STALE);
 *   3. the new token is written into the fence and synced;
 *   4. the temporary file is renamed over FILE and the directory synced;
 *   5. the lock is released.
 *
 * Because step 3 comes before step 4, the fence holds a token at least as
 * large as the token of FILE's content at every instant, including after a
 * crash between any two steps.  Readers of FILE see the old or the new
 * content, whole.
 *
 * Rules that fail closed (FW_UNSAFE) rather than guess:
 *   - FILE exists but its fence does not: the file was never fenced, or the
 *     fence was deleted.  Adopt it with fw_init().
 *   - A fence named with opts->fence_path does not exist: such a fence may
 *     guard many files and is created only by fw_init().
 *   - The fence cannot be parsed or fails its checksums.
 *   - FILE or the fence is a symbolic link, or FILE is not a regular file.
 * When neither FILE nor its fence (beside it) exists, the fence is created
 * with token 0.
 *
 * Names: FILE's last component may be as long as its fence's name allows
 * (NAME_MAX less ".fence"); a longer one is FW_USAGE (name a fence with
 * opts->fence_path).
 *
 * Every function returns an enum fw_code and, when given a struct fw_result,
 * fills every field of it, on every path: the code, the errno of the
 * failing call (0 unless the code is FW_SYSTEM), the fence's token if it
 * was read (0 otherwise), and a one-line message naming the call and the
 * path ("" on success).  The library never prints, never
 * exits and installs no signal handlers.
 *
 * Threads: calls may be made from any number of threads; two threads
 * changing the same FILE exclude each other.  Where the kernel or the
 * filesystem has no open-file-description (OFD) locks, classic POSIX locks
 * are used, and those belong to the whole process and are dropped by ANY
 * close() of the fence file in the process: a program that opens and closes
 * a fence file itself, outside this library, can break the exclusion.
 * A child forked while another thread is committing shares the fence's
 * open file description and with it the lock, until it execs or exits:
 * fork when no call is in progress, or exec at once, and call the library
 * in a child only after exec.
 *
 * Compatibility (the ABI): the library is libfencedwrite.so.1, its symbols
 * carry the version FENCEDWRITE_1 (later additions a node of their own
 * release) and only the fw_ functions below are exported.  A program built
 * against this header keeps working with every later 1.x library:
 *   - The structures a caller allocates (fw_opts, fw_result, fw_fence_info,
 *     fw_status, fw_mount_info, fw_doctor_report) keep their size and every
 *     field's offset for ever.  Each ends in reserved space; a new field is
 *     taken from it, whole 8-byte slots at a time (a narrower field with
 *     explicit padding, so that 32-bit targets, which align uint64_t to 4,
 *     keep the size too), and its zero value means the behaviour before it
 *     existed.  So an old program's zeroed reserve asks for the old
 *     behaviour, and a new library never writes past an old structure.
 *   - The library zeroes the reserved space of every structure it fills.
 *     fw_opts_init() and fw_status_init() zero the whole structure; a
 *     caller that does not use them zeroes it itself (= {0}).
 *   - When a structure's reserve is used up, a new structure and new
 *     functions are added beside the old ones, which keep working.
 *   - enum fw_code may gain values: treat a code you do not know as a
 *     failure.
 *   - fw_version() tells the library's version at run time; FW_VERSION is
 *     this header's.
 * make abi-check holds the library to this against a recorded baseline.
 */
#ifndef FENCEDWRITE_H
#define FENCEDWRITE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FW_VERSION "1.1.0"
#define FW_VERSION_MAJOR 1
#define FW_VERSION_MINOR 1
#define FW_VERSION_PATCH 0

/* The library's own version ("1.1.0"), which may be newer than FW_VERSION
   of the header a program was built with. */
const char *fw_version(void);

/*
 * Outcomes.  The values are the exit codes of fencedwrite(1), so a C program
 * and a shell script speak of the same thing by the same number.
 */
enum fw_code {
	FW_OK = 0,      /* committed (or, for a check, would be accepted) */
	FW_STALE = 1,   /* token not larger than the fence's: nothing changed */
	FW_USAGE = 2,   /* invalid argument: nothing changed */
	FW_UNSAFE = 3,  /* fence missing, corrupt or unsafe: nothing changed */
	FW_LOCKED = 4,  /* lock not acquired within the timeout: nothing changed */
	FW_SYSTEM = 5,  /* a system call failed: FILE holds its old or its new
	                   content, never a mix; message names call and path */
	/* 6 and 7 are the command's own (CMD failed; fencedwrite-etcd: etcd
	   unreachable). */
	FW_LOCK_LOST = 8 /* the fence's lock was lost during the commit (an
	                   NFSv4 lease that lapsed while this client was
	                   frozen): another writer advanced the fence.  If the
	                   message says so, the rename came first and FILE may
	                   hold this superseded content; otherwise FILE is
	                   unchanged */
};

/* A static string describing a code ("success", "stale token", ...). */
const char *fw_strerror(int code);

/* Filled, every field, by every call that takes one; may be NULL where
   not wanted. */
struct fw_result {
	int code;               /* enum fw_code, as returned */
	int sys_errno;          /* errno of the failed call, or 0 */
	int fence_read;         /* 1 if fence_token below was read from the fence */
	uint64_t fence_token;   /* the fence's token when the decision was made */
	char message[1024];     /* one line, no trailing newline; "" on FW_OK */
	uint64_t reserved[8];   /* zeroed: room for later fields */
};

/* Flags for struct fw_opts.flags. */
#define FW_ALLOW_EQUAL 0x1u  /* accept a token equal to the fence's */
#define FW_USE_MODE    0x2u  /* give FILE the permission bits in .mode */
/* Write even where fcntl locks exclude only this host's processes (NFS
   mounted nolock or local_lock=posix|all): only for setups whose writers
   all run on one host. */
#define FW_LOCAL_LOCKS_OK 0x4u

struct fw_opts {
	/* Fence path; NULL means FILE with ".fence" appended. */
	const char *fence_path;
	/* Milliseconds to wait for the lock: -1 waits for ever, 0 does not
	   wait at all. */
	long timeout_ms;
	unsigned flags;
	/* Permission bits for FILE when FW_USE_MODE is set.  Otherwise an
	   existing FILE keeps its bits (and owner and group, where the process
	   may set them) and a new FILE gets 0666 & ~umask. */
	mode_t mode;
	/* The mount table to consult; NULL means /proc/self/mountinfo.  For
	   diagnosis and tests. */
	const char *mountinfo;
	/* If not NULL, a flag the caller's signal handler sets.  A system call
	   interrupted (EINTR) while it is set ends the call with FW_SYSTEM and
	   sys_errno EINTR, after removing the temporary file, provided the
	   fence has not yet been written; once it has, the commit finishes.
	   NULL: interrupted calls are retried. */
	volatile sig_atomic_t *cancel;
	/* Zero (fw_opts_init): room for later options, whose zero value is
	   the behaviour before they existed. */
	uint64_t reserved[8];
};

/* Defaults: fence beside FILE, wait for ever, no flags, the reserve
   zeroed.  (A structure zeroed by the caller instead differs only in
   timeout_ms: 0, do not wait.) */
void fw_opts_init(struct fw_opts *opts);

/*
 * Parse a token: decimal digits only, 1 to UINT64_MAX.  Signs, spaces,
 * prefixes, trailing characters, 0 and overflow are FW_USAGE and leave *out
 * alone.
 */
int fw_parse_token(const char *text, uint64_t *out);

/*
 * Commit LEN bytes from BUF as the new content of PATH under TOKEN.
 * FW_OK: PATH holds BUF and the fence holds TOKEN, both durable.
 * Anything else: PATH is unchanged (but see FW_SYSTEM above), no
 * temporary file is left behind.
 */
int fw_commit_buffer(const char *path, uint64_t token, const void *buf,
                     size_t len, const struct fw_opts *opts,
                     struct fw_result *res);

/*
 * A streaming transaction, for content too large for memory or produced by
 * another program.  fw_txn_begin() creates the temporary file; write the
 * content with fw_txn_write(), fw_txn_copy_fd() or straight into
 * fw_txn_fd(); then end the transaction with exactly one of
 * fw_txn_commit() or fw_txn_abort(), both of which free it.
 *
 * fw_txn_begin fails early (FW_UNSAFE) when PATH exists and is not fenced,
 * is a symbolic link or is not a regular file, or when the fence named by
 * opts->fence_path does not exist, so a long-running producer is not
 * started for nothing.  PATH, OPTS and the strings OPTS points to are
 * copied: the caller may free them once fw_txn_begin returns.  Only
 * opts->cancel, if set, must stay valid until the transaction ends.
 */
struct fw_txn;

int fw_txn_begin(struct fw_txn **txn, const char *path,
                 const struct fw_opts *opts, struct fw_result *res);

/* Append LEN bytes.  On failure the transaction stays open: abort it. */
int fw_txn_write(struct fw_txn *txn, const void *buf, size_t len,
                 struct fw_result *res);

/*
 * Append everything readable from FD until end of file, in constant memory.
 * FD_NAME names FD in messages ("standard input").  On failure the
 * transaction stays open: abort it.
 */
int fw_txn_copy_fd(struct fw_txn *txn, int fd, const char *fd_name,
                   struct fw_result *res);

/*
 * The temporary file's descriptor, open for writing and positioned at the
 * end of what was written so far.  It remains owned by the transaction:
 * do not close it.  It is close-on-exec; dup2() it to hand it to a child.
 */
int fw_txn_fd(const struct fw_txn *txn);

/*
 * Sync the content, then lock, check TOKEN, advance the fence and rename the
 * content over PATH, as described at the top of this file.  Frees TXN
 * whatever the outcome.  For content of 1 MiB or more the content's fsync
 * runs in a short-lived thread (all signals blocked, joined before the
 * lock is taken) while the digest is read back; where no thread can be
 * created, the calling thread syncs.
 */
int fw_txn_commit(struct fw_txn *txn, uint64_t token, struct fw_result *res);

/* Remove the temporary file and free TXN.  TXN may be NULL. */
void fw_txn_abort(struct fw_txn *txn);

/*
 * The same as fw_txn_abort(), saying whether the temporary file is gone:
 * FW_OK, or FW_SYSTEM with a message naming the file left behind and how
 * to remove it (fencedwrite --clean).  TXN may be NULL.
 */
int fw_txn_rollback(struct fw_txn *txn, struct fw_result *res);

/*
 * A fenced read-modify-write: claim TOKEN for PATH (fw_claim), then begin
 * a transaction for PATH's new content and open, into *CURRENT, the
 * version of PATH the claim covers (-1 if PATH is absent; the caller
 * closes it).  Compute the new content from *CURRENT, write it to the
 * transaction, and commit with fw_txn_commit(*TXN, TOKEN): it is accepted
 * only if no other token claimed or committed meanwhile, so no update is
 * ever lost: a newer holder's change makes this one FW_STALE instead.
 * On failure nothing is open and *TXN is NULL.
 */
int fw_update_begin(struct fw_txn **txn, const char *path, uint64_t token,
                    const struct fw_opts *opts, int *current,
                    struct fw_result *res);

/*
 * Append LEN bytes from BUF to PATH under TOKEN, as an update: the new
 * content is PATH's current content (none if absent) followed by BUF.
 */
int fw_append_buffer(const char *path, uint64_t token, const void *buf,
                     size_t len, const struct fw_opts *opts,
                     struct fw_result *res);

/*
 * Remove PATH under the fence: the fence advances to TOKEN, then PATH is
 * unlinked.  The fence stays, so a stale holder cannot re-create PATH.  A
 * PATH that is already absent is not an error.
 */
int fw_delete(const char *path, uint64_t token, const struct fw_opts *opts,
              struct fw_result *res);

/*
 * FW_OK if TOKEN would be accepted now, FW_STALE if not.  Changes nothing;
 * takes a shared lock so the answer reflects every finished commit.
 */
int fw_check(const char *path, uint64_t token, const struct fw_opts *opts,
             struct fw_result *res);

/*
 * Copy one whole version of PATH to OUT (a pipe, a file, a socket ...).
 * On NFS a reader can meet ESTALE in the middle of a read, or ENOENT, when
 * a commit on another host replaces PATH; the version is therefore read
 * whole into memory first (an anonymous memory file, not the heap) and
 * the read retried, for about a second and a half at most, so OUT gets one
 * whole version or nothing.  Takes no lock and changes nothing.  FW_OK;
 * FW_UNSAFE if PATH is a symbolic link or not a regular file; FW_SYSTEM
 * naming the call (ESTALE or ENOENT after the last attempt).
 */
int fw_read(const char *path, int out, const struct fw_opts *opts,
            struct fw_result *res);

/*
 * The same, and *TOKEN (if not NULL) the token the bytes written to OUT
 * were committed under: the fence is read (under a shared lock, released
 * at once) before PATH, and the version is retried until one of the
 * fence's records names exactly what was read (inode, size, digest).
 * FW_UNSAFE when PATH never matches its fence (it was changed outside
 * fencedwrite), or when there is no fence.
 */
int fw_read_version(const char *path, int out, const struct fw_opts *opts,
                    uint64_t *token, struct fw_result *res);

/* The current record of a fence, as fw_show reports it. */
struct fw_fence_info {
	uint64_t token;     /* highest accepted token */
	uint64_t seq;       /* number of updates since the fence was created */
	int64_t time;       /* seconds since the epoch of the last update */
	long pid;           /* process that wrote it ... */
	char host[65];      /* ... on this host */
	char op[8];         /* "init", "create", "commit", "delete" or
	                       "claim" */
	uint64_t reserved[4];   /* zeroed */
};

/* Read PATH's fence under a shared lock.  A missing fence is FW_UNSAFE. */
int fw_show(const char *path, const struct fw_opts *opts,
            struct fw_fence_info *info, struct fw_result *res);

/*
 * Advance PATH's fence to TOKEN without touching PATH.  From then on every
 * token below TOKEN is stale, and TOKEN itself is accepted (fw_txn_commit,
 * fw_commit_buffer, fw_delete) while the fence's newest record is this
 * claim.  A new holder claims before it starts producing, so a paused
 * holder of an older token is turned away from that moment on, not only
 * once the new holder commits.  FW_OK (also when TOKEN claimed already),
 * FW_STALE (TOKEN is not larger than the fence's), or a failure code.
 * Like a commit, a claim creates the fence beside an absent PATH.
 */
int fw_claim(const char *path, uint64_t token, const struct fw_opts *opts,
             struct fw_result *res);

/* How FILE compares with what the fence's newest record says it is. */
enum fw_verdict {
	FW_VERIFY_SAME,         /* FILE is what the fence committed (or
	                           claimed, unchanged) */
	FW_VERIFY_EDITED,       /* the committed file, other content: edited
	                           in place */
	FW_VERIFY_REPLACED,     /* another file: replaced (or created) outside
	                           fencedwrite */
	FW_VERIFY_UNFINISHED,   /* the newest change never reached FILE (a
	                           crash or an error before its rename): FILE
	                           still holds the content before it */
	FW_VERIFY_MISSING,      /* FILE is absent where the fence says it is */
	FW_VERIFY_UNKNOWN       /* the fence is in format version 1, which does
	                           not record FILE; the next change adds it */
};

/* What the fence says and whether FILE agrees. */
struct fw_status {
	struct fw_fence_info fence;   /* the newest record */
	int verdict;                  /* enum fw_verdict */
	int file_present;             /* FILE exists */
	int file_token_known;         /* 1: file_token below is known */
	uint64_t file_token;          /* the token FILE's content was
	                                 committed under (differs from
	                                 fence.token after a claim or an
	                                 unfinished change) */
	uint64_t ino, file_size, digest;  /* what the newest record says FILE
	                                     is: inode, size, XXH64 */
	char what[256];               /* the verdict in words */
	uint64_t reserved[8];         /* zeroed */
};

/* Zero ST (fw_status and fw_verify fill it whole; kept for programs that
   call it before them). */
void fw_status_init(struct fw_status *st);

/*
 * Fill ST under a shared lock, comparing FILE with the records by inode
 * and size only (no reading of FILE).  FW_OK, or a failure code (a missing
 * fence is FW_UNSAFE).
 */
int fw_status(const char *path, const struct fw_opts *opts,
              struct fw_status *st, struct fw_result *res);

/*
 * The same, also comparing FILE's content with the recorded digest (reads
 * all of FILE).  FW_OK if FILE is exactly what the newest record says;
 * FW_UNSAFE otherwise, the message and ST->verdict saying what differs.
 * For monitoring: a fleet alerts on writers that bypassed the fence.
 */
int fw_verify(const char *path, const struct fw_opts *opts,
              struct fw_status *st, struct fw_result *res);

/*
 * Adopt PATH (which may or may not exist): create its fence with TOKEN,
 * which may be 0, recording PATH's content as committed under TOKEN.  An
 * existing fence is never replaced: FW_UNSAFE.
 */
int fw_init(const char *path, uint64_t token, const struct fw_opts *opts,
            struct fw_result *res);

/*
 * Where PATH lives, and whether fencing can hold there.  Fencing is only as
 * good as the fcntl lock that serialises check and commit: it must exclude
 * every writer, on every host.
 */
enum fw_lock_scope {
	FW_SCOPE_SHARED,    /* a network filesystem whose locks reach all hosts */
	FW_SCOPE_LOCAL,     /* a local filesystem: safe among this host's writers */
	FW_SCOPE_UNSAFE,    /* a shared filesystem whose locks stay on this host */
	FW_SCOPE_UNKNOWN    /* cannot tell (FUSE and others): treated as unsafe */
};

struct fw_mount_info {
	char fstype[64];        /* "ext4", "nfs4", "fuse.sshfs", ... */
	char source[256];       /* "server:/export", "/dev/vda1", ... */
	char mount_point[1024];
	char options[512];      /* the options that matter here, or "" */
	int scope;              /* enum fw_lock_scope */
	char why[256];          /* one line: what decides the scope */
	uint64_t reserved[4];   /* zeroed */
};

struct fw_doctor_report {
	struct fw_mount_info mount;
	char lock_kind[8];      /* "ofd" or "classic" */
	int lock_granted;       /* 1 if a test lock was granted */
	int o_tmpfile;          /* 1 if O_TMPFILE works in the directory */
	int safe;               /* 1 if fencing holds (scope SHARED or LOCAL) */
	/* On NFSv4, the lease the server announced: a client cut off from
	   the server longer than this loses its locks, silently (see
	   FW_LOCK_LOST).  -1 where unknown or not NFSv4. */
	long lease_seconds;
	/* The NFS client's recover_lost_locks setting (module parameter
	   nfs.recover_lost_locks): 1 means a lock lost that way is taken
	   again without a word once the server is back, after another
	   client may have taken and released it.  -1 where unknown or not
	   NFS. */
	int recover_lost_locks;
	uint64_t reserved[8];   /* zeroed */
};

/*
 * Analyse MOUNTINFO (the text of /proc/self/mountinfo) for the mount with
 * id MNT_ID, or, when MNT_ID is 0, the mount of device MAJOR:MINOR (the
 * last such line, as the kernel lists later mounts after earlier ones).
 * A pure function, for tests and tools.  FW_OK, or FW_UNSAFE if no line
 * matches.
 */
int fw_mount_analyse(const char *mountinfo, unsigned long long mnt_id,
                     unsigned major, unsigned minor,
                     struct fw_mount_info *info);

/*
 * Examine PATH's directory: its mount (fw_mount_analyse on the mount
 * table), the lock kind that works there and whether a lock is granted,
 * and whether O_TMPFILE works.  Changes nothing.  FW_OK if fencing holds,
 * FW_UNSAFE if not (REP says why), or another failure code.
 */
int fw_doctor(const char *path, const struct fw_opts *opts,
              struct fw_doctor_report *rep, struct fw_result *res);

/*
 * Remove temporary files left in PATH's directory by writers of PATH (and
 * of its fence) that died without cleaning up (SIGKILL, power loss).  A
 * temporary file whose writer is alive holds a lock that keeps it from
 * being removed, on this host or, where the filesystem's locks are shared,
 * on any host.  *removed (may be NULL) is set to the number removed.
 * Run it from a process that is not itself writing PATH where only classic
 * POSIX locks exist: its close() of a live writer's temporary file would
 * drop that writer's lock in the same process.
 */
int fw_clean(const char *path, const struct fw_opts *opts,
             unsigned *removed, struct fw_result *res);

#ifdef __cplusplus
}
#endif

#endif /* FENCEDWRITE_H */
