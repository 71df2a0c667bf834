/* SPDX-License-Identifier: MIT */
/*
 * faults.so - LD_PRELOAD shim for tests, never built into the tool.
 *
 * It sees every call of the write path (open, openat, read, write, pwrite, fsync,
 * fdatasync, rename, renameat, link, linkat, unlink, unlinkat, fcntl,
 * close, fchmod, fchown, copy_file_range, splice) and can:
 *
 *   - fail the Nth call of one kind with an errno (every call from the
 *     -Nth on, if N < 0): fwt_fault_arm() from a test, or
 *     FWT_FAULT="call:N:errno" in a child;
 *   - at the Kth call of any kind, SIGKILL the process or fail that call:
 *     FWT_CRASH="K:kill" or FWT_CRASH="K:errno";
 *   - count the calls: FWT_COUNT=path receives the total at exit, or,
 *     with FWT_CRASH, the name of the call that was made to fail;
 *   - trace the calls that change files, by inode, so a test can rebuild
 *     what a power loss could leave (FWT_TRACE=path):
 *       C ino name        a file created (or opened with O_CREAT) as name
 *       W ino off hex     bytes written at an offset
 *       S ino             fsync or fdatasync of a file
 *       D                 fsync of a directory
 *       R from to         rename
 *       L from to         link
 *       U name            unlink
 *     Names are last components: the tests work in one directory.
 *
 * fwt_fault_trace() returns the names of the durable calls made since the
 * last fwt_fault_arm(), for asserting their order in-process, and
 * fwt_fault_reads() the names of regular files opened read-only since then.
 * fwt_fault_fstype(T) makes fstatfs() report filesystem type T (0: the
 * real one), to take the paths the library reserves for NFS and others.
 * fwt_fault_hook(call, N, fn) runs fn just before the Nth call of a kind
 * (in-process), to make something happen at an exact step: another host
 * writing the fence while this one believes it holds the lock.
 * FWT_PAUSE="call:N:marker:release" does the same for a child that another
 * machine must catch at that step: just before the Nth call of the kind it
 * creates the file marker, then waits until the file release exists.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <unistd.h>

void fwt_fault_arm(const char *call, int nth, int err);
const char *fwt_fault_trace(void);
const char *fwt_fault_reads(void);
void fwt_fault_fstype(long type);
int fwt_fault_fired(void);
void fwt_fault_hook(const char *call, int nth, void (*fn)(void));

static char armed[32];
static int armed_nth, armed_err, seen, fired;
static char names[4096];
static char reads[4096];
static long fake_fstype;
static char hook_call[32];
static int hook_nth, hook_seen;
static void (*hook_fn)(void);
static char pause_call[32], pause_marker[1024], pause_release[1024];
static int pause_nth, pause_seen;

static long crash_at = -1, calls;
static int crash_err;   /* 0: SIGKILL */
static int trace_fd = -1;
static const char *count_path;

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

void fwt_fault_arm(const char *call, int nth, int err)
{
	snprintf(armed, sizeof(armed), "%s", call ? call : "");
	armed_nth = nth;
	armed_err = err;
	seen = 0;
	fired = 0;
	names[0] = '\0';
	reads[0] = '\0';
}

/* How many times the armed fault was injected since it was armed. */
int fwt_fault_fired(void)
{
	return fired;
}

const char *fwt_fault_trace(void)
{
	return names;
}

const char *fwt_fault_reads(void)
{
	return reads;
}

void fwt_fault_fstype(long type)
{
	fake_fstype = type;
}

void fwt_fault_hook(const char *call, int nth, void (*fn)(void))
{
	snprintf(hook_call, sizeof(hook_call), "%s", call ? call : "");
	hook_nth = nth;
	hook_seen = 0;
	hook_fn = fn;
}

__attribute__((constructor)) static void from_env(void)
{
	const char *spec = getenv("FWT_FAULT");
	const char *crash = getenv("FWT_CRASH");
	const char *trace = getenv("FWT_TRACE");
	const char *pause = getenv("FWT_PAUSE");
	char call[32], how[32];
	int nth, err;

	if (spec && sscanf(spec, "%31[a-z0-9_]:%d:%d", call, &nth, &err) == 3)
		fwt_fault_arm(call, nth, err);
	if (crash && sscanf(crash, "%ld:%31s", &crash_at, how) == 2)
		crash_err = strcmp(how, "kill") == 0 ? 0 : atoi(how);
	if (pause && sscanf(pause, "%31[a-z0-9_]:%d:%1023[^:]:%1023[^:]",
	                    pause_call, &pause_nth, pause_marker,
	                    pause_release) != 4)
		pause_call[0] = '\0';
	if (trace)
		trace_fd = REAL("open", int (*)(const char *, int, ...))
		           (trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		            0600);
	count_path = getenv("FWT_COUNT");
}

__attribute__((destructor)) static void write_count(void)
{
	FILE *f;

	if (count_path && (f = fopen(count_path, "w")) != NULL) {
		fprintf(f, "%ld\n", calls);
		fclose(f);
	}
}

static void trace_line(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	if (trace_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!REAL("write", ssize_t (*)(int, const void *, size_t))
		       (trace_fd, line, (size_t)n);
}

/* The inode of a regular file, or 0 for anything else. */
static unsigned long regular_ino(int fd)
{
	struct stat st;

	if (fd == trace_fd || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	return (unsigned long)st.st_ino;
}

static const char *last(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The armed fault: the Nth call of its kind, or with N < 0 every call
   from the -Nth on.  1 if this call must fail (errno set). */
static int armed_fault(const char *call)
{
	if (!armed[0] || strcmp(call, armed) != 0)
		return 0;
	++seen;
	if (armed_nth > 0 ? seen != armed_nth : seen < -armed_nth)
		return 0;
	fired++;
	errno = armed_err;
	return 1;
}

/* FWT_PAUSE: the other machine learns of the step from the marker and
   may stop this one whole (a frozen machine answers no message); the
   release file is the one fact this process can see after it is let go,
   so polling it is waiting for that fact, not guessing a time. */
static void pause_here(const char *call)
{
	int fd;

	if (!pause_call[0] || strcmp(call, pause_call) != 0 ||
	    ++pause_seen != pause_nth)
		return;
	fd = REAL("open", int (*)(const char *, int, ...))
	     (pause_marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		REAL("close", int (*)(int))(fd);
	while (access(pause_release, F_OK) != 0)
		usleep(10000);
}

/* A commit of 1 MiB or more syncs its content in a thread of its own
   while the caller reads the digest: the counters below must count the
   two threads' calls one at a time, or a crash "at call N" would not be
   one call.  Recursive: a hook's own calls come back through here. */
static pthread_mutex_t fault_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

static int fault_locked(const char *call);

/* 1 if this call must fail (errno set); may not return (SIGKILL). */
static int fault(const char *call)
{
	int rc;

	pthread_mutex_lock(&fault_lock);
	rc = fault_locked(call);
	pthread_mutex_unlock(&fault_lock);
	return rc;
}

static int fault_locked(const char *call)
{
	size_t n = strlen(names);

	pause_here(call);

	if (hook_fn && strcmp(call, hook_call) == 0 && ++hook_seen == hook_nth) {
		void (*fn)(void) = hook_fn;

		hook_fn = NULL;   /* the hook's own calls must not re-enter */
		fn();
	}

	if (++calls == crash_at) {
		FILE *f;

		/* Say which call it was, for the test to judge the outcome. */
		if (count_path && (f = fopen(count_path, "w")) != NULL) {
			fprintf(f, "%s\n", call);
			fclose(f);
			count_path = NULL;
		}
		if (crash_err == 0)
			kill(getpid(), SIGKILL);
		errno = crash_err;
		return 1;
	}
	if (strcmp(call, "fsync") == 0 || strcmp(call, "fdatasync") == 0 ||
	    strcmp(call, "pwrite") == 0 || strcmp(call, "renameat") == 0 ||
	    strcmp(call, "linkat") == 0 || strcmp(call, "splice") == 0 ||
	    strcmp(call, "copy_file_range") == 0) {
		if (n + strlen(call) + 2 < sizeof(names))
			snprintf(names + n, sizeof(names) - n, "%s%s",
			         n ? " " : "", call);
	}
	return armed_fault(call);
}

static void trace_write(int fd, const void *buf, ssize_t n, off_t off)
{
	unsigned long ino = regular_ino(fd);
	char hex[1500];
	const unsigned char *p = buf;

	if (!ino || n <= 0 || trace_fd < 0)
		return;
	for (ssize_t i = 0; i < n; i += 700) {
		ssize_t k = n - i < 700 ? n - i : 700;

		for (ssize_t j = 0; j < k; j++)
			sprintf(hex + 2 * j, "%02x", p[i + j]);
		trace_line("W %lu %lld %s\n", ino, (long long)(off + i), hex);
	}
}

static int after_open(int fd, const char *path, int flags)
{
	unsigned long ino;

	if (fd >= 0 && (flags & O_CREAT) && (ino = regular_ino(fd)) != 0)
		trace_line("C %lu %s\n", ino, last(path));
	if (fd >= 0 && !(flags & O_CREAT) && (flags & O_ACCMODE) == O_RDONLY &&
	    regular_ino(fd) != 0) {
		size_t n = strlen(reads);

		if (n + strlen(last(path)) + 2 < sizeof(reads))
			snprintf(reads + n, sizeof(reads) - n, "%s%s",
			         n ? " " : "", last(path));
	}
	return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_LIKE(fn)                                                        \
int fn(const char *path, int flags, ...)                                     \
{                                                                            \
	va_list ap;                                                          \
	mode_t mode;                                                         \
	va_start(ap, flags);                                                 \
	mode = mode_arg(flags, ap);                                          \
	va_end(ap);                                                          \
	if (fault("open"))                                                   \
		return -1;                                                   \
	return after_open(REAL(#fn, int (*)(const char *, int, ...))         \
	                  (path, flags, mode), path, flags);                 \
}
#define OPENAT_LIKE(fn)                                                      \
int fn(int dirfd, const char *path, int flags, ...)                          \
{                                                                            \
	va_list ap;                                                          \
	mode_t mode;                                                         \
	va_start(ap, flags);                                                 \
	mode = mode_arg(flags, ap);                                          \
	va_end(ap);                                                          \
	if (fault("openat"))                                                 \
		return -1;                                                   \
	return after_open(REAL(#fn, int (*)(int, const char *, int, ...))    \
	                  (dirfd, path, flags, mode), path, flags);          \
}

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...);
OPEN_LIKE(open)
OPEN_LIKE(open64)
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

/* Reads only fail when armed: counting them would renumber every call
   of the crash suite for no new state on disk. */
ssize_t read(int fd, void *buf, size_t n)
{
	if (armed_fault("read"))
		return -1;
	return REAL("read", ssize_t (*)(int, void *, size_t))(fd, buf, n);
}

/* Likewise pread, as a client whose NFSv4 lock was lost sees it (EIO). */
ssize_t pread(int fd, void *buf, size_t n, off_t off);
ssize_t pread64(int fd, void *buf, size_t n, off_t off);

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	if (armed_fault("pread"))
		return -1;
	return REAL("pread", ssize_t (*)(int, void *, size_t, off_t))
	       (fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	if (armed_fault("pread"))
		return -1;
	return REAL("pread64", ssize_t (*)(int, void *, size_t, off_t))
	       (fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	off_t off;
	ssize_t rc;

	if (fault("write"))
		return -1;
	off = regular_ino(fd) ? lseek(fd, 0, SEEK_CUR) : 0;
	rc = REAL("write", ssize_t (*)(int, const void *, size_t))(fd, buf, n);
	trace_write(fd, buf, rc, off);
	return rc;
}

#define PWRITE_LIKE(fn)                                                      \
ssize_t fn(int fd, const void *buf, size_t n, off_t off)                     \
{                                                                            \
	ssize_t rc;                                                          \
	if (fault("pwrite"))                                                 \
		return -1;                                                   \
	rc = REAL(#fn, ssize_t (*)(int, const void *, size_t, off_t))        \
	     (fd, buf, n, off);                                              \
	trace_write(fd, buf, rc, off);                                       \
	return rc;                                                           \
}
PWRITE_LIKE(pwrite)
PWRITE_LIKE(pwrite64)

static void trace_sync(int fd, int rc)
{
	struct stat st;

	if (rc != 0 || fd == trace_fd || fstat(fd, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode))
		trace_line("D\n");
	else if (S_ISREG(st.st_mode))
		trace_line("S %lu\n", (unsigned long)st.st_ino);
}

#define SYNC_LIKE(fn)                                                        \
int fn(int fd)                                                               \
{                                                                            \
	int rc;                                                              \
	if (fault(#fn))                                                      \
		return -1;                                                   \
	rc = REAL(#fn, int (*)(int))(fd);                                    \
	trace_sync(fd, rc);                                                  \
	return rc;                                                           \
}
int fsync(int fd);
int fdatasync(int fd);
SYNC_LIKE(fsync)
SYNC_LIKE(fdatasync)

int renameat(int a, const char *from, int b, const char *to)
{
	int rc;

	if (fault("renameat"))
		return -1;
	rc = REAL("renameat", int (*)(int, const char *, int, const char *))
	     (a, from, b, to);
	if (rc == 0)
		trace_line("R %s %s\n", last(from), last(to));
	return rc;
}

int rename(const char *from, const char *to)
{
	int rc;

	if (fault("rename"))
		return -1;
	rc = REAL("rename", int (*)(const char *, const char *))(from, to);
	if (rc == 0)
		trace_line("R %s %s\n", last(from), last(to));
	return rc;
}

int linkat(int a, const char *from, int b, const char *to, int flags)
{
	int rc;

	if (fault("linkat"))
		return -1;
	rc = REAL("linkat", int (*)(int, const char *, int, const char *, int))
	     (a, from, b, to, flags);
	if (rc == 0)
		trace_line("L %s %s\n", last(from), last(to));
	return rc;
}

int unlinkat(int dirfd, const char *name, int flags)
{
	int rc;

	if (fault("unlinkat"))
		return -1;
	rc = REAL("unlinkat", int (*)(int, const char *, int))(dirfd, name,
	                                                       flags);
	if (rc == 0)
		trace_line("U %s\n", last(name));
	return rc;
}

int unlink(const char *name)
{
	int rc;

	if (fault("unlink"))
		return -1;
	rc = REAL("unlink", int (*)(const char *))(name);
	if (rc == 0)
		trace_line("U %s\n", last(name));
	return rc;
}

#define FCNTL_LIKE(fn)                                                       \
int fn(int fd, int cmd, ...)                                                 \
{                                                                            \
	va_list ap;                                                          \
	void *arg;                                                           \
	va_start(ap, cmd);                                                   \
	arg = va_arg(ap, void *);                                            \
	va_end(ap);                                                          \
	if (fault("fcntl"))                                                  \
		return -1;                                                   \
	return REAL(#fn, int (*)(int, int, ...))(fd, cmd, arg);              \
}
int fcntl(int fd, int cmd, ...);
int fcntl64(int fd, int cmd, ...);
FCNTL_LIKE(fcntl)
FCNTL_LIKE(fcntl64)

/* A failed close still releases the descriptor, as on Linux. */
int close(int fd)
{
	int fail = fd != trace_fd && fault("close"), err = errno;
	int rc = REAL("close", int (*)(int))(fd);

	if (fail) {
		errno = err;
		return -1;
	}
	return rc;
}

int fchmod(int fd, mode_t mode)
{
	if (fault("fchmod"))
		return -1;
	return REAL("fchmod", int (*)(int, mode_t))(fd, mode);
}

int fchown(int fd, uid_t uid, gid_t gid)
{
	if (fault("fchown"))
		return -1;
	return REAL("fchown", int (*)(int, uid_t, gid_t))(fd, uid, gid);
}

/* The kernel copy paths: seen (fwt_fault_trace) and made to fail.  While
   tracing for the power-loss model they decline (ENOSYS), as a kernel
   without them would: the library's fallback then writes through write(),
   whose bytes the trace records. */
ssize_t copy_file_range(int in, loff_t *inoff, int out, loff_t *outoff,
                        size_t len, unsigned flags)
{
	if (fault("copy_file_range"))
		return -1;
	if (trace_fd >= 0) {
		errno = ENOSYS;
		return -1;
	}
	return REAL("copy_file_range",
	            ssize_t (*)(int, loff_t *, int, loff_t *, size_t, unsigned))
	       (in, inoff, out, outoff, len, flags);
}

ssize_t splice(int in, loff_t *inoff, int out, loff_t *outoff, size_t len,
               unsigned flags)
{
	if (fault("splice"))
		return -1;
	if (trace_fd >= 0) {
		errno = ENOSYS;
		return -1;
	}
	return REAL("splice",
	            ssize_t (*)(int, loff_t *, int, loff_t *, size_t, unsigned))
	       (in, inoff, out, outoff, len, flags);
}

/* statfs and statfs64 have one layout on 64-bit Linux. */
int fstatfs(int fd, struct statfs *sf)
{
	int rc = REAL("fstatfs", int (*)(int, struct statfs *))(fd, sf);

	if (rc == 0 && fake_fstype)
		sf->f_type = fake_fstype;
	return rc;
}

int fstatfs64(int fd, struct statfs64 *sf)
{
	int rc = REAL("fstatfs64", int (*)(int, struct statfs64 *))(fd, sf);

	if (rc == 0 && fake_fstype)
		sf->f_type = fake_fstype;
	return rc;
}
