/* SPDX-License-Identifier: MIT */
/*
 * fwbench - measurements behind `make bench`.  Every figure is a ratio to a
 * baseline measured in the same run, the two interleaved operation by
 * operation, as the median over several rounds: the machine is shared and
 * noisy, and only side-by-side ratios hold still.
 *
 *   fwbench small DIR ROUNDS OPS SIZE   fenced commit (library) against
 *                                       (a) a minimal durable replace and
 *                                       (b) the same without fsync
 *   fwbench hold DIR ROUNDS SMALL LARGE lock hold time of a commit of SMALL
 *                                       against one of LARGE bytes
 *   fwbench contention DIR PROCS SECONDS  commits/s of PROCS processes
 *                                       against one; CPU of waiters
 *   fwbench large DIR SIZE ROUNDS FW    the command FW committing SIZE
 *                                       bytes from a file and a pipe against
 *                                       (c) cp + sync, to a fresh target and
 *                                       over a file as large
 *   fwbench startup DIR ROUNDS OPS SELF FW  the command committing 1 byte
 *                                       against replace1, as processes
 *   fwbench replace1 PATH               baseline (a) of 1 byte, as a whole
 *                                       process (for the start-up figure)
 *   fwbench once DIR                    one 4 KiB fenced commit (callgrind)
 *
 * Output: one line per figure, "name value unit", for scripts/bench.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fencedwrite.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fwbench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static double median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	return n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static double median_d(double *v, size_t n)
{
	int64_t *w = malloc(n * sizeof(*w));
	double m;

	for (size_t i = 0; i < n; i++)
		w[i] = (int64_t)(v[i] * 1e6);
	m = median(w, n) / 1e6;
	free(w);
	return m;
}

/* ---- baselines ------------------------------------------------------- */

/* Baseline (a), or (b) without SYNC: the least a durable atomic replace
   can do: temp, write, fsync, rename, fsync the directory. */
static void plain_replace(int dirfd, const char *name, const char *buf,
                          size_t len, int sync)
{
	char tmp[300];
	int fd;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		die("baseline write: %s", strerror(errno));
	if (sync && fsync(fd) != 0)
		die("baseline fsync: %s", strerror(errno));
	close(fd);
	if (renameat(dirfd, tmp, dirfd, name) != 0)
		die("baseline rename: %s", strerror(errno));
	if (sync && fsync(dirfd) != 0)
		die("baseline fsync dir: %s", strerror(errno));
}

static uint64_t next_token = 1;

static void fenced(const char *path, const char *buf, size_t len)
{
	struct fw_result res;

	if (fw_commit_buffer(path, next_token++, buf, len, NULL, &res) != FW_OK)
		die("commit: %s", res.message);
}

/* ---- small ----------------------------------------------------------- */

static int bench_small(const char *dir, int rounds, int ops, size_t size)
{
	char *buf = malloc(size), path[4096];
	double ra[64], rb[64];
	int64_t *ta = malloc(ops * sizeof(int64_t)), *tb = malloc(ops * sizeof(int64_t));
	int64_t *tf = malloc(ops * sizeof(int64_t));
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	double ma = 0, mb = 0, mf = 0;

	if (dirfd < 0 || rounds > 64)
		die("small: bad directory or rounds");
	memset(buf, 'x', size);
	snprintf(path, sizeof(path), "%s/fenced", dir);
	fenced(path, buf, size);   /* the fence exists: steady state */
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < ops; i++) {
			int64_t t0 = now_ns();

			plain_replace(dirfd, "plain-a", buf, size, 1);
			ta[i] = now_ns() - t0;
			t0 = now_ns();
			plain_replace(dirfd, "plain-b", buf, size, 0);
			tb[i] = now_ns() - t0;
			t0 = now_ns();
			fenced(path, buf, size);
			tf[i] = now_ns() - t0;
		}
		ma = median(ta, (size_t)ops);
		mb = median(tb, (size_t)ops);
		mf = median(tf, (size_t)ops);
		ra[r] = mf / ma;
		rb[r] = mf / mb;
	}
	printf("small_fenced_us %.1f us\n", mf / 1000);
	printf("small_baseline_a_us %.1f us\n", ma / 1000);
	printf("small_baseline_b_us %.1f us\n", mb / 1000);
	printf("small_ratio_a %.3f x\n", median_d(ra, (size_t)rounds));
	printf("small_ratio_b %.3f x\n", median_d(rb, (size_t)rounds));
	close(dirfd);
	free(buf);
	free(ta);
	free(tb);
	free(tf);
	return 0;
}

/* ---- hold: lock hold time, seen by interposing fcntl and close ---------
 * This program links the library statically, so its calls to fcntl() and
 * close() resolve here first.  The last lock a commit takes is the fence's
 * (the temporary file's was taken when it was created); the lock is
 * released by close().  From that grant to that close is the hold time.
 */
static int64_t granted_at, last_hold;
static int granted_fd = -1;

int close(int fd);
int close(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "close");
	if (fd == granted_fd) {
		last_hold = now_ns() - granted_at;
		granted_fd = -1;
	}
	return real(fd);
}

/* Under _FILE_OFFSET_BITS=64 glibc's header names this symbol fcntl64,
   the one the library calls. */
int fcntl(int fd, int cmd, ...);
int fcntl(int fd, int cmd, ...)
{
	static int (*real)(int, int, ...);
	va_list ap;
	void *arg;
	int rc;

	if (!real)
		real = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl64");
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (cmd == F_OFD_SETLKW || cmd == F_OFD_SETLK || cmd == F_SETLK ||
	    cmd == F_SETLKW) {
		struct flock *fl = arg;

		rc = real(fd, cmd, arg);
		if (rc == 0 && fl->l_type != F_UNLCK) {
			granted_fd = fd;
			granted_at = now_ns();
		}
		return rc;
	}
	return real(fd, cmd, arg);
}

/* Commit SOURCE's bytes to PATH through the streaming API; hold time. */
static int64_t commit_from(const char *path, const char *source)
{
	struct fw_result res;
	struct fw_txn *txn;
	int fd = open(source, O_RDONLY);

	if (fd < 0 || fw_txn_begin(&txn, path, NULL, &res) != FW_OK ||
	    fw_txn_copy_fd(txn, fd, source, &res) != FW_OK)
		die("stream %s: %s", source, res.message);
	close(fd);
	last_hold = 0;
	if (fw_txn_commit(txn, next_token++, &res) != FW_OK)
		die("commit: %s", res.message);
	return last_hold;
}

static void make_file(const char *path, size_t size)
{
	static char block[1 << 20];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	memset(block, 'y', sizeof(block));
	while (size > 0) {
		size_t n = size < sizeof(block) ? size : sizeof(block);

		if (fd < 0 || write(fd, block, n) != (ssize_t)n)
			die("make %s: %s", path, strerror(errno));
		size -= n;
	}
	if (fsync(fd) != 0)
		die("fsync %s", path);
	close(fd);
}

static int bench_hold(const char *dir, int rounds, size_t small, size_t large)
{
	char s_src[4096], l_src[4096], s_dst[4096], l_dst[4096];
	int64_t hs[64], hl[64];

	snprintf(s_src, sizeof(s_src), "%s/src-small", dir);
	snprintf(l_src, sizeof(l_src), "%s/src-large", dir);
	snprintf(s_dst, sizeof(s_dst), "%s/held-small", dir);
	snprintf(l_dst, sizeof(l_dst), "%s/held-large", dir);
	make_file(s_src, small);
	make_file(l_src, large);
	commit_from(s_dst, s_src);   /* steady state: both files exist */
	commit_from(l_dst, l_src);
	for (int r = 0; r < rounds && r < 64; r++) {
		hs[r] = commit_from(s_dst, s_src);
		hl[r] = commit_from(l_dst, l_src);
	}
	printf("hold_small_us %.1f us\n", median(hs, (size_t)rounds) / 1000);
	printf("hold_large_us %.1f us\n", median(hl, (size_t)rounds) / 1000);
	printf("hold_ratio %.3f x\n",
	       median(hl, (size_t)rounds) / median(hs, (size_t)rounds));
	unlink(s_src);
	unlink(l_src);
	return 0;
}

/* ---- contention ------------------------------------------------------ */

struct counters {
	uint64_t token;
	uint64_t commits, stale;
};

/* PROCS processes commit 4 KiB for SECONDS; commits per second. */
static double run_writers(const char *path, int procs, double seconds,
                          struct counters *c)
{
	int64_t start = now_ns(), end = start + (int64_t)(seconds * 1e9);
	char buf[4096];

	memset(buf, 'z', sizeof(buf));
	c->commits = c->stale = 0;
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			while (now_ns() < end) {
				struct fw_result res;
				uint64_t t = __atomic_add_fetch(&c->token, 1,
				                                __ATOMIC_SEQ_CST);
				int rc = fw_commit_buffer(path, t, buf,
				                          sizeof(buf), NULL, &res);

				if (rc == FW_OK)
					__atomic_add_fetch(&c->commits, 1,
					                   __ATOMIC_SEQ_CST);
				else if (rc == FW_STALE)
					__atomic_add_fetch(&c->stale, 1,
					                   __ATOMIC_SEQ_CST);
				else
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < procs; p++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("writer failed");
	}
	return (double)c->commits / ((now_ns() - start) / 1e9);
}

/* CPU time of WAITERS processes blocked behind a held lock, as a share of
   the wall time they waited; TIMEOUT_MS as for fw_opts. */
static double waiting_cpu(const char *path, int waiters, long timeout_ms,
                          double seconds)
{
	struct rusage before, ru;
	int hold[2];
	char c;
	pid_t holder;
	int64_t t0;
	double cpu;

	/* RUSAGE_CHILDREN adds up every child ever reaped: take the
	   difference over this experiment only. */
	getrusage(RUSAGE_CHILDREN, &before);
	if (pipe(hold) != 0)
		die("pipe");
	holder = fork();
	if (holder == 0) {
		int fd = open(path, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		close(hold[0]);
		if (fd < 0 || fcntl(fd, F_OFD_SETLKW, &fl) != 0)
			_exit(1);
		(void)!write(hold[1], "x", 1);
		nanosleep(&(struct timespec){ (time_t)seconds,
		          (long)((seconds - (time_t)seconds) * 1e9) }, NULL);
		_exit(0);
	}
	close(hold[1]);
	if (read(hold[0], &c, 1) != 1)
		die("holder");
	t0 = now_ns();
	for (int w = 0; w < waiters; w++) {
		if (fork() == 0) {
			struct fw_opts o;
			struct fw_result res;

			fw_opts_init(&o);
			o.timeout_ms = timeout_ms;
			fw_commit_buffer(path, (uint64_t)1 << 62, "w", 1, &o, &res);
			_exit(0);
		}
	}
	for (int w = 0; w <= waiters; w++)
		wait(NULL);
	getrusage(RUSAGE_CHILDREN, &ru);
	cpu = (ru.ru_utime.tv_sec - before.ru_utime.tv_sec) +
	      (ru.ru_stime.tv_sec - before.ru_stime.tv_sec) +
	      ((ru.ru_utime.tv_usec - before.ru_utime.tv_usec) +
	       (ru.ru_stime.tv_usec - before.ru_stime.tv_usec)) / 1e6;
	return cpu / (waiters * ((now_ns() - t0) / 1e9));
}

static int bench_contention(const char *dir, int procs, double seconds,
                            int rounds)
{
	struct counters *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
	                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char path[4096];
	double ratio[16], one = 0, many = 0;
	uint64_t stale = 0, commits = 0;

	snprintf(path, sizeof(path), "%s/contended", dir);
	c->token = 0;
	for (int r = 0; r < rounds && r < 16; r++) {
		one = run_writers(path, 1, seconds, c);
		many = run_writers(path, procs, seconds, c);
		stale += c->stale;
		commits += c->commits;
		ratio[r] = many / one;
	}
	printf("contention_one_per_s %.0f commits/s\n", one);
	printf("contention_many_per_s %.0f commits/s\n", many);
	printf("contention_ratio %.3f x\n", median_d(ratio, (size_t)rounds));
	printf("contention_stale_share %.3f of attempts\n",
	       (double)stale / (double)(stale + commits));
	printf("waiting_cpu_blocking %.4f of wall\n",
	       waiting_cpu(path, procs - 1, -1, 2.0));
	printf("waiting_cpu_timeout %.4f of wall\n",
	       waiting_cpu(path, procs - 1, 60000, 2.0));
	return 0;
}

/* ---- whole processes ------------------------------------------------- */

/* Run ARGV with stdin from IN (or /dev/null); wall ns, peak RSS in KiB. */
static int64_t run_process(char *const argv[], const char *in, long *rss_kb)
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	int64_t t0 = now_ns();
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in ? in : "/dev/null",
	                                 O_RDONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0)
		die("spawn %s", argv[0]);
	posix_spawn_file_actions_destroy(&fa);
	if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		die("%s failed", argv[0]);
	if (rss_kb)
		*rss_kb = ru.ru_maxrss;
	return now_ns() - t0;
}

static int bench_startup(const char *dir, int rounds, int ops,
                         const char *self, const char *fw)
{
	char path_a[4096], path_f[4096], one[4096], tok[32];
	int64_t ta[256], tf[256];
	double ratio[64];

	snprintf(path_a, sizeof(path_a), "%s/proc-plain", dir);
	snprintf(path_f, sizeof(path_f), "%s/proc-fenced", dir);
	snprintf(one, sizeof(one), "%s/one-byte", dir);
	make_file(one, 1);
	for (int r = 0; r < rounds && r < 64; r++) {
		for (int i = 0; i < ops && i < 256; i++) {
			char *a[] = { (char *)self, "replace1", path_a, NULL };
			char *f[] = { (char *)fw, "-t", tok, path_f, NULL };

			snprintf(tok, sizeof(tok), "%llu",
			         (unsigned long long)next_token++);
			ta[i] = run_process(a, one, NULL);
			tf[i] = run_process(f, one, NULL);
		}
		ratio[r] = median(tf, (size_t)ops) / median(ta, (size_t)ops);
	}
	printf("startup_fenced_us %.1f us\n", median(tf, (size_t)ops) / 1000);
	printf("startup_baseline_us %.1f us\n", median(ta, (size_t)ops) / 1000);
	printf("startup_ratio %.3f x\n", median_d(ratio, (size_t)rounds));
	return 0;
}

static int replace1(const char *path)
{
	char dir[4096], *slash;
	int dirfd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		die("replace1: want DIR/NAME");
	*slash = '\0';
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dirfd < 0)
		die("replace1: %s", dir);
	plain_replace(dirfd, slash + 1, "1", 1, 1);
	return 0;
}

/*
 * The lowest and highest of the rounds' own ratios A[r] / B[r], before the
 * medians sort A and B: on a shared machine one round can be twice
 * another, and the median alone hides that.
 */
static void spread(const char *name, const int64_t *a, const int64_t *b,
                   int rounds)
{
	double lo = 0, hi = 0;

	for (int r = 0; r < rounds && r < 16; r++) {
		double q = (double)a[r] / (double)b[r];

		lo = r == 0 || q < lo ? q : lo;
		hi = r == 0 || q > hi ? q : hi;
	}
	printf("%s_ratio_min %.3f x\n", name, lo);
	printf("%s_ratio_max %.3f x\n", name, hi);
}

/* Remove PATH (under its fence if FENCED) and sync, before a timed run. */
static void fresh_target(const char *path, int fenced)
{
	struct fw_result res;

	if (fenced && access(path, F_OK) == 0) {
		if (fw_delete(path, next_token++, NULL, &res) != FW_OK)
			die("delete: %s", res.message);
	} else {
		unlink(path);
	}
	sync();
}

static int bench_large(const char *dir, size_t size, int rounds,
                       const char *fw)
{
	char src[4096], cp_dst[4096], fw_dst[4096], tok[32], pipe_cmd[12288];
	int64_t tc[16], tfile[16], tpipe[16];
	long rss_file = 0, rss_pipe = 0, rss;

	snprintf(src, sizeof(src), "%s/large-src", dir);
	snprintf(cp_dst, sizeof(cp_dst), "%s/large-cp", dir);
	snprintf(fw_dst, sizeof(fw_dst), "%s/large-fenced", dir);
	make_file(src, size);
	for (int r = 0; r < rounds && r < 16; r++) {
		char *cp[] = { "cp", src, cp_dst, NULL };
		char *sync1[] = { "sync", cp_dst, NULL };
		char *f[] = { (char *)fw, "-t", tok, fw_dst, NULL };
		char *p[] = { "sh", "-c", pipe_cmd, NULL };

		/* Each timed run writes a new file on a synced disk: freeing
		   the previous gigabyte (with discard, hundreds of ms) falls
		   at different moments in cp and in a rename, and is not the
		   streaming this measures, so it happens before the clock. */
		fresh_target(cp_dst, 0);
		tc[r] = run_process(cp, NULL, NULL) + run_process(sync1, NULL, NULL);
		fresh_target(fw_dst, 1);
		snprintf(tok, sizeof(tok), "%llu", (unsigned long long)next_token++);
		tfile[r] = run_process(f, src, &rss);
		rss_file = rss > rss_file ? rss : rss_file;
		fresh_target(fw_dst, 1);
		snprintf(tok, sizeof(tok), "%llu", (unsigned long long)next_token++);
		snprintf(pipe_cmd, sizeof(pipe_cmd),
		         "cat '%s' | '%s' -t %s '%s'", src, fw, tok, fw_dst);
		/* Peak RSS of the whole pipeline (the shell reaps cat and
		   fencedwrite): an upper bound for fencedwrite's own. */
		tpipe[r] = run_process(p, NULL, &rss);
		rss_pipe = rss > rss_pipe ? rss : rss_pipe;
	}
	spread("large_file", tfile, tc, rounds);   /* before median() sorts */
	printf("large_cp_sync_ms %.0f ms\n", median(tc, (size_t)rounds) / 1e6);
	printf("large_file_ms %.0f ms\n", median(tfile, (size_t)rounds) / 1e6);
	printf("large_pipe_ms %.0f ms\n", median(tpipe, (size_t)rounds) / 1e6);
	printf("large_file_ratio %.3f x\n",
	       median(tfile, (size_t)rounds) / median(tc, (size_t)rounds));
	printf("large_pipe_ratio %.3f x\n",
	       median(tpipe, (size_t)rounds) / median(tc, (size_t)rounds));
	printf("large_file_rss_kib %ld KiB\n", rss_file);
	printf("large_pipe_rss_kib %ld KiB\n", rss_pipe);
	/* As users run it: each target already holds a file of the same size,
	   so both sides also pay for freeing the old one (cp truncates it,
	   fencedwrite renames over it and frees it after the unlock). */
	for (int r = 0; r < rounds && r < 16; r++) {
		char *cp[] = { "cp", src, cp_dst, NULL };
		char *sync1[] = { "sync", cp_dst, NULL };
		char *f[] = { (char *)fw, "-t", tok, fw_dst, NULL };

		if (run_process(cp, NULL, NULL) < 0)
			die("cp");
		snprintf(tok, sizeof(tok), "%llu", (unsigned long long)next_token++);
		run_process(f, src, NULL);
		sync();
		tc[r] = run_process(cp, NULL, NULL) + run_process(sync1, NULL, NULL);
		sync();
		snprintf(tok, sizeof(tok), "%llu", (unsigned long long)next_token++);
		tfile[r] = run_process(f, src, NULL);
		sync();
	}
	spread("replace_file", tfile, tc, rounds);
	printf("replace_cp_sync_ms %.0f ms\n", median(tc, (size_t)rounds) / 1e6);
	printf("replace_file_ms %.0f ms\n", median(tfile, (size_t)rounds) / 1e6);
	printf("replace_file_ratio %.3f x\n",
	       median(tfile, (size_t)rounds) / median(tc, (size_t)rounds));
	unlink(src);
	unlink(cp_dst);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "replace1"))
		return replace1(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "once")) {
		char path[4096], buf[4096];

		memset(buf, 'o', sizeof(buf));
		snprintf(path, sizeof(path), "%s/once", argv[2]);
		fenced(path, buf, sizeof(buf));    /* creates the fence */
		fenced(path, buf, sizeof(buf));    /* the measured commit */
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "small"))
		return bench_small(argv[2], atoi(argv[3]), atoi(argv[4]),
		                   (size_t)atol(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "hold"))
		return bench_hold(argv[2], atoi(argv[3]), (size_t)atol(argv[4]),
		                  (size_t)atol(argv[5]));
	if (argc == 6 && !strcmp(argv[1], "contention"))
		return bench_contention(argv[2], atoi(argv[3]), atof(argv[4]),
		                        atoi(argv[5]));
	if (argc == 7 && !strcmp(argv[1], "startup"))
		return bench_startup(argv[2], atoi(argv[3]), atoi(argv[4]),
		                     argv[5], argv[6]);
	if (argc == 6 && !strcmp(argv[1], "large"))
		return bench_large(argv[2], (size_t)atol(argv[3]), atoi(argv[4]),
		                   argv[5]);
	fprintf(stderr, "usage: see the comment at the top of bench/fwbench.c\n");
	return 2;
}
