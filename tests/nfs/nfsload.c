/* SPDX-License-Identifier: MIT */
/*
 * nfsload - one lab client's share of the cross-host contention scenario.
 *
 *   nfsload FILE STAMPDIR WRITERS OPS READERS SEED
 *
 * WRITERS processes commit OPS tokens each to FILE (fresh, equal to the
 * fence, or stale) while READERS processes read FILE in a loop until the
 * writers are done.  Prints one line per write, "START END TOKEN RC", for
 * tests/history_check, and a reader summary on stderr.  With
 * NFSLOAD_LOCAL_LOCKS_OK=1 in the environment the writers pass
 * FW_LOCAL_LOCKS_OK, so that on a nolock or local_lock=all mount they write
 * with no exclusion between hosts: the control that shows the checker
 * catches what exclusion prevents.
 *
 * Clocks: the two clients' own clocks cannot be compared, so every start
 * and end is the NFS server's clock, read as the mtime the server sets when
 * a client touches a stamp file (SETATTR to server time).  The start stamp
 * is taken before the operation begins, so it is not later than its true
 * start; the end stamp is taken after the operation ended, plus one clock
 * tick, because the server stamps with its coarse (per-tick) clock.  Every
 * operation's recorded interval thus contains its real one, on one clock,
 * and the checker's real-time claims stay sound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fencedwrite.h"
#include "../history.h"   /* the payload, as the contention suite writes it */

#define TICK_NS 10000000LL      /* above one tick of a HZ=100..1000 kernel */
#define MAX_PROCS 32

struct op {
	long long start, end;
	unsigned long long token;
	int rc;
};

struct shared {
	int writers_done;
	unsigned long reads, torn, backwards, estale, missing, other;
	char first[160];
	struct op ops[];
};

static struct shared *sh;
static struct fw_opts opts;

/* The server's clock now, or -1: touch the stamp file, read its mtime. */
static long long server_now(int fd)
{
	struct stat st;

	if (futimens(fd, NULL) != 0 || fstat(fd, &st) != 0)
		return -1;
	return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

static unsigned long long fence_now(const char *file)
{
	struct fw_fence_info info;
	struct fw_result res;

	if (fw_show(file, &opts, &info, &res) != FW_OK)
		return 0;
	return info.token;
}

static void writer(const char *file, const char *stampdir, int id, int ops,
                   unsigned seed, struct op *out)
{
	char path[4096], buf[4096], host[64] = "";
	int fd;

	/* The host in the name too: machines booted alike hand out the same
	   pids, and a stamp file shared with a writer on the other client is
	   removed under this one when that writer ends (ESTALE on NFSv3). */
	(void)gethostname(host, sizeof(host) - 1);
	snprintf(path, sizeof(path), "%s/stamp.%s.%d.%d", stampdir, host,
	         (int)getppid(), id);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		perror(path);
		_exit(5);
	}
	for (int i = 0; i < ops; i++) {
		unsigned r = (unsigned)rand_r(&seed);
		unsigned long long tok, fence;
		struct fw_result res;
		size_t n;

		out[i].start = server_now(fd);
		if (out[i].start < 0) {
			perror(path);
			_exit(5);
		}
		switch (r % 8) {
		case 0:   /* deliberately stale */
			fence = fence_now(file);
			tok = fence > 1 ? fence - 1 - r % (fence < 100 ? 1 : 100)
			                : 1;
			break;
		case 1:   /* equal to the latest commit: stale too */
			fence = fence_now(file);
			tok = fence ? fence : 1;
			break;
		default:  /* fresh: the server's clock in microseconds, give or
		           * take a writer that started a little later */
			tok = (unsigned long long)out[i].start / 1000 +
			      r % 20000;
		}
		n = fwh_payload(buf, sizeof(buf), tok, r);
		out[i].token = tok;
		out[i].rc = fw_commit_buffer(file, tok, buf, n, &opts, &res);
		if (out[i].rc != FW_OK && out[i].rc != FW_STALE)
			fprintf(stderr, "nfsload: token %llu: %s\n", tok,
			        res.message);
		out[i].end = server_now(fd);
		if (out[i].end < 0) {
			perror(path);
			_exit(5);
		}
		out[i].end += TICK_NS;
	}
	close(fd);
	unlink(path);
	_exit(0);
}

static void count_violation(const char *what, size_t n,
                            unsigned long long last)
{
	if (__atomic_add_fetch(&sh->torn, 0, __ATOMIC_SEQ_CST) +
	    __atomic_add_fetch(&sh->backwards, 0, __ATOMIC_SEQ_CST) == 1)
		snprintf(sh->first, sizeof(sh->first),
		         "%s: read %zu bytes after token %llu", what, n, last);
}

static void reader(const char *file)
{
	static char buf[8192];
	unsigned long long last = 0;
	uint64_t tok;

	while (!__atomic_load_n(&sh->writers_done, __ATOMIC_SEQ_CST)) {
		int fd = open(file, O_RDONLY);
		ssize_t n = 0;
		size_t got = 0;

		if (fd < 0) {
			int e = errno;

			__atomic_add_fetch(e == ENOENT ? &sh->missing :
			                   e == ESTALE ? &sh->estale :
			                   &sh->other, 1, __ATOMIC_SEQ_CST);
			if (e == ENOENT)   /* before the first commit */
				usleep(10000);
			continue;
		}
		while (got < sizeof(buf) &&
		       (n = read(fd, buf + got, sizeof(buf) - got)) > 0)
			got += (size_t)n;
		if (n < 0) {
			__atomic_add_fetch(errno == ESTALE ? &sh->estale :
			                   &sh->other, 1, __ATOMIC_SEQ_CST);
			close(fd);
			continue;
		}
		close(fd);
		/* A breather between reads: on a one-CPU machine a reader
		 * that never yields starves the writers beside it, and each
		 * read is four calls to the one emulated server that the
		 * writers' locked steps wait on.  About 20 reads a second
		 * still put thousands into every run. */
		usleep(20000);
		__atomic_add_fetch(&sh->reads, 1, __ATOMIC_SEQ_CST);
		if (fwh_parse_payload(buf, got, &tok) != 0) {
			__atomic_add_fetch(&sh->torn, 1, __ATOMIC_SEQ_CST);
			count_violation("torn", got, last);
		} else if (tok < last) {
			__atomic_add_fetch(&sh->backwards, 1, __ATOMIC_SEQ_CST);
			count_violation("backwards", got, last);
		} else {
			last = tok;
		}
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	pid_t pids[2 * MAX_PROCS];
	int writers, ops, readers, np = 0, bad = 0;
	unsigned seed;

	if (argc != 7) {
		fprintf(stderr, "usage: nfsload FILE STAMPDIR WRITERS OPS "
		        "READERS SEED\n");
		return 2;
	}
	writers = atoi(argv[3]);
	ops = atoi(argv[4]);
	readers = atoi(argv[5]);
	seed = (unsigned)strtoul(argv[6], NULL, 10);
	fw_opts_init(&opts);
	if (getenv("NFSLOAD_LOCAL_LOCKS_OK"))
		opts.flags |= FW_LOCAL_LOCKS_OK;
	if (writers < 1 || writers > MAX_PROCS || ops < 1 || ops > 1000000 ||
	    readers < 0 || readers > MAX_PROCS)
		return 2;
	sh = mmap(NULL, sizeof(*sh) + (size_t)writers * (size_t)ops *
	          sizeof(struct op), PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 5;
	for (int i = 0; i < readers; i++) {
		pid_t p = fork();

		if (p == 0)
			reader(argv[1]);
		pids[np++] = p;
	}
	for (int i = 0; i < writers; i++) {
		pid_t p = fork();

		if (p == 0)
			writer(argv[1], argv[2], i, ops, seed * 1000 + (unsigned)i,
			       &sh->ops[(size_t)i * (size_t)ops]);
		pids[np++] = p;
	}
	for (int i = readers; i < np; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	}
	__atomic_store_n(&sh->writers_done, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < readers; i++)
		waitpid(pids[i], NULL, 0);
	for (size_t i = 0; i < (size_t)writers * (size_t)ops; i++)
		printf("%lld %lld %llu %d\n", sh->ops[i].start, sh->ops[i].end,
		       sh->ops[i].token, sh->ops[i].rc);
	fprintf(stderr, "reads=%lu torn=%lu backwards=%lu estale=%lu "
	        "missing=%lu other=%lu%s%s\n", sh->reads, sh->torn,
	        sh->backwards, sh->estale, sh->missing, sh->other,
	        sh->first[0] ? " first: " : "", sh->first);
	return bad || sh->torn || sh->backwards || sh->other ? 1 : 0;
}
