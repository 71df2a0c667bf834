/* SPDX-License-Identifier: MIT */
/*
 * I/O failures at each durable step of a commit (run under faults.so):
 * every failure leaves FILE old or new, whole; the fence never falls
 * behind FILE; no temporary file stays; the message names call and path.
 * And the durable order itself, read from the call trace.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"

static void (*arm)(const char *call, int nth, int err);
static const char *(*trace)(void);
static const char *(*reads)(void);
static void (*fstype)(long type);
static void (*hook)(const char *call, int nth, void (*fn)(void));

static int load_shim(void **state)
{
	(void)state;
	arm = (void (*)(const char *, int, int))dlsym(RTLD_DEFAULT,
	                                              "fwt_fault_arm");
	trace = (const char *(*)(void))dlsym(RTLD_DEFAULT, "fwt_fault_trace");
	reads = (const char *(*)(void))dlsym(RTLD_DEFAULT, "fwt_fault_reads");
	fstype = (void (*)(long))dlsym(RTLD_DEFAULT, "fwt_fault_fstype");
	hook = (void (*)(const char *, int, void (*)(void)))
	       dlsym(RTLD_DEFAULT, "fwt_fault_hook");
	if (!arm || !trace || !reads || !fstype || !hook)
		fail_msg("faults.so is not preloaded: run through make check");
	return 0;
}

static int commit(uint64_t token, const char *data, struct fw_result *res)
{
	return fw_commit_buffer("f", token, data, strlen(data), NULL, res);
}


/* The order that makes a crash at any point safe (see commit.c). */
static void commit_syncs_content_then_fence_then_renames_then_syncs_dir(
	void **state)
{
	struct fw_result res;

	(void)state;
	assert_int_equal(commit(1, "one", &res), FW_OK);
	arm(NULL, 0, 0);
	assert_int_equal(commit(2, "two", &res), FW_OK);
	assert_string_equal(trace(), "fsync pwrite fdatasync renameat fsync");
	arm(NULL, 0, 0);
	assert_int_equal(commit(2, "other", &res), FW_STALE);
	assert_string_equal(trace(), "fsync");   /* nothing written */
	/* The same commit again is done already: nothing written either. */
	arm(NULL, 0, 0);
	assert_int_equal(commit(2, "two", &res), FW_OK);
	assert_string_equal(trace(), "fsync");
}

struct step {
	const char *call;
	int nth, err;
	const char *message;   /* expected in the message */
	const char *content;   /* FILE afterwards */
	uint64_t fence;        /* at least this */
};

static void each_failing_step_leaves_a_consistent_state(void **state)
{
	static const struct step steps[] = {
		{ "fsync", 1, EIO, "fsync(.f.fwtmp.", "old", 1 },
		{ "fsync", 1, ENOSPC, "No space left", "old", 1 },
		{ "fsync", 1, EDQUOT, "quota", "old", 1 },
		{ "pwrite", 1, EIO, "write(f.fence)", "old", 1 },
		{ "pwrite", 1, EROFS, "Read-only", "old", 1 },
		{ "fdatasync", 1, EIO, "fdatasync(f.fence)", "old", 1 },
		{ "renameat", 1, EIO, "rename(f)", "old", 2 },
		{ "fsync", 2, EIO, "fsync directory(.)", "new", 2 },
	};
	struct fw_result res;

	(void)state;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *s = &steps[i];
		uint64_t fence;

		arm(NULL, 0, 0);
		assert_int_equal(fw_init("f", 0, NULL, &res), FW_OK);
		assert_int_equal(commit(1, "old", &res), FW_OK);
		arm(s->call, s->nth, s->err);
		assert_int_equal(commit(2, "new", &res), FW_SYSTEM);
		assert_int_equal(res.sys_errno, s->err);
		if (!strstr(res.message, s->message))
			fail_msg("step %zu: message '%s'", i, res.message);
		arm(NULL, 0, 0);
		fwt_assert_content("f", s->content);
		fence = fwt_fence_token("f");
		assert_true(fence >= s->fence && fence <= 2);
		assert_int_equal(fwt_count_tmp("."), 0);
		/* a later valid write is not prevented by the failure */
		assert_int_equal(commit(3, "later", &res), FW_OK);
		fwt_assert_content("f", "later");
		assert_int_equal(unlink("f"), 0);
		assert_int_equal(unlink("f.fence"), 0);
	}
}

/* Content of 1 MiB or more is synced in a thread of its own beside the
   digest's read-back: its failure still fails the commit, leaving FILE
   and the fence as they were and no temporary file. */
static void large_content_whose_sync_fails_is_not_committed(void **state)
{
	size_t len = 2u << 20;
	char *big = malloc(len);
	struct fw_result res;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', len);
	assert_int_equal(commit(1, "old", &res), FW_OK);
	arm("fsync", 1, EIO);
	assert_int_equal(fw_commit_buffer("f", 2, big, len, NULL, &res),
	                 FW_SYSTEM);
	assert_int_equal(res.sys_errno, EIO);
	assert_non_null(strstr(res.message, "fsync(.f.fwtmp."));
	arm(NULL, 0, 0);
	fwt_assert_content("f", "old");
	assert_true(fwt_fence_token("f") == 1);
	assert_int_equal(fwt_count_tmp("."), 0);
	assert_int_equal(fw_commit_buffer("f", 2, big, len, NULL, &res), FW_OK);
	free(big);
}

static void interrupted_sync_is_retried(void **state)
{
	struct fw_result res;

	(void)state;
	arm("fsync", 1, EINTR);
	assert_int_equal(commit(1, "one", &res), FW_OK);
	arm("fdatasync", 1, EINTR);
	assert_int_equal(commit(2, "two", &res), FW_OK);
	arm(NULL, 0, 0);
	fwt_assert_content("f", "two");
	assert_true(fwt_fence_token("f") == 2);
}

/* A failed fence creation leaves no fence at all, never a broken one. */
static void failed_fence_creation_leaves_no_fence(void **state)
{
	struct fw_result res;

	(void)state;
	arm("linkat", 1, EIO);
	assert_int_equal(commit(1, "one", &res), FW_SYSTEM);
	assert_non_null(strstr(res.message, "link(f.fence)"));
	arm(NULL, 0, 0);
	assert_null(fwt_slurp("f.fence", NULL));
	assert_null(fwt_slurp("f", NULL));
	assert_int_equal(fwt_count_tmp("."), 0);
	assert_int_equal(commit(1, "one", &res), FW_OK);
}

/* Stream INPUT_FD into "f" through the library; the commit's result. */
static int stream(int input_fd, uint64_t token, struct fw_result *res)
{
	struct fw_txn *txn;
	int rc = fw_txn_begin(&txn, "f", NULL, res);

	if (rc != FW_OK)
		return rc;
	rc = fw_txn_copy_fd(txn, input_fd, "input", res);
	if (rc != FW_OK) {
		fw_txn_abort(txn);
		return rc;
	}
	return fw_txn_commit(txn, token, res);
}

#define BIG (3 * 65536 + 123)

static char *pattern(void)
{
	char *p = malloc(BIG + 1);

	for (int i = 0; i < BIG; i++)
		p[i] = (char)('A' + i % 53 % 26);
	p[BIG] = '\0';
	return p;
}

static int regular_input(const char *data)
{
	int fd;

	fwt_spit("input", data);
	fd = open("input", O_RDONLY);
	assert_true(fd >= 0);
	return fd;
}

/* A pipe filled by a child, so it can carry more than its buffer. */
static int pipe_input(const char *data)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	if (fork() == 0) {
		close(p[0]);
		(void)!write(p[1], data, strlen(data));
		_exit(0);
	}
	close(p[1]);
	return p[0];
}

/* The kernel moves the bytes where it can, and the plain loop takes over
   where it declines, even part-way. */
static void copy_paths_and_their_fallbacks_give_the_same_bytes(void **state)
{
	static const struct {
		int pipe;
		const char *call;
		int nth, err;
		const char *want_in_trace;
	} cases[] = {
		{ 0, NULL, 0, 0, "copy_file_range" },
		{ 1, NULL, 0, 0, "splice" },
		{ 0, "copy_file_range", 1, EXDEV, "copy_file_range" },
		{ 0, "copy_file_range", 2, EOPNOTSUPP, "copy_file_range" },
		{ 1, "splice", 1, EINVAL, "splice" },
		{ 1, "splice", 3, ENOSYS, "splice" },
	};
	char *data = pattern();
	struct fw_result res;
	uint64_t token = 1;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = cases[i].pipe ? pipe_input(data) : regular_input(data);

		arm(cases[i].call, cases[i].nth, cases[i].err);
		if (stream(fd, token++, &res) != FW_OK)
			fail_msg("case %zu: %s", i, res.message);
		if (!strstr(trace(), cases[i].want_in_trace))
			fail_msg("case %zu: trace '%s'", i, trace());
		arm(NULL, 0, 0);
		close(fd);
		while (wait(NULL) > 0)
			;
		fwt_assert_content("f", data);
	}
	/* neither a file nor a pipe: a socket takes the plain loop */
	{
		int sv[2];

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		if (fork() == 0) {
			close(sv[0]);
			(void)!write(sv[1], data, BIG);
			_exit(0);
		}
		close(sv[1]);
		arm(NULL, 0, 0);
		assert_int_equal(stream(sv[0], token++, &res), FW_OK);
		assert_null(strstr(trace(), "splice"));
		assert_null(strstr(trace(), "copy_file_range"));
		close(sv[0]);
		wait(NULL);
		fwt_assert_content("f", data);
	}
	/* a real error is reported, nothing committed, nothing left */
	{
		int fd = regular_input("short\n");

		arm("copy_file_range", 1, EIO);
		assert_int_equal(stream(fd, token++, &res), FW_SYSTEM);
		arm(NULL, 0, 0);
		assert_non_null(strstr(res.message, "copy(input, .f.fwtmp."));
		close(fd);
		fwt_assert_content("f", data);
		assert_int_equal(fwt_count_tmp("."), 0);
	}
	free(data);
}

/* Through the command: exit 5 and a message naming call and path. */
static void command_exits_5_on_io_error(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(fwt_run("old", NULL, NULL, "-t", "1", "f", (char *)NULL), 0);
	setenv("FWT_FAULT", "fdatasync:1:5", 1);
	assert_int_equal(fwt_run("new", NULL, &err, "-t", "2", "f", (char *)NULL), 5);
	unsetenv("FWT_FAULT");
	assert_string_equal(err, "fencedwrite: fdatasync(f.fence): "
	                         "Input/output error\n");
	free(err);
	fwt_assert_content("f", "old");
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* WORD is one of the space-separated names in LIST. */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

/*
 * Holding the old inode open across the rename moves the cost of freeing
 * a large file past the unlock on a local disk.  On NFS it makes the
 * client rename FILE away first (".nfsXXXX"), in a separate call: another
 * host can see FILE missing, and a crash in between leaves it absent.
 */
static void old_file_is_held_open_on_local_disks_only(void **state)
{
	size_t len = 2u << 20;
	char *big = malloc(len + 1);
	struct fw_result res;

	(void)state;
	assert_non_null(big);
	memset(big, 'b', len);
	big[len] = '\0';
	assert_int_equal(commit(1, big, &res), FW_OK);
	arm(NULL, 0, 0);
	assert_int_equal(commit(2, big, &res), FW_OK);
	/* On this machine's disk the old inode is held (the control). */
	assert_true(has_word(reads(), "f"));
	fstype(0x6969);   /* NFS_SUPER_MAGIC */
	arm(NULL, 0, 0);
	assert_int_equal(commit(3, big, &res), FW_OK);
	fstype(0);
	if (has_word(reads(), "f"))
		fail_msg("FILE was opened during the commit: %s", reads());
	assert_true(fwt_fence_token("f") == 3);
	free(big);
}

/* A temporary file that cannot be removed is named, with the way to
   remove it, and the primary outcome stays what it was. */
static void leftover_temporary_file_is_reported(void **state)
{
	struct fw_result res;
	unsigned removed = 0;
	char *err = NULL;
	int rc;

	(void)state;
	assert_int_equal(commit(5, "five", &res), FW_OK);
	arm("unlinkat", 1, EIO);
	assert_int_equal(commit(4, "four", &res), FW_STALE);
	assert_non_null(strstr(res.message, "stale token 4"));
	assert_non_null(strstr(res.message, ".f.fwtmp."));
	assert_non_null(strstr(res.message, "could not be removed"));
	assert_non_null(strstr(res.message, "--clean"));
	assert_int_equal(fwt_count_tmp("."), 1);
	arm(NULL, 0, 0);
	assert_int_equal(fw_clean("f", NULL, &removed, &res), FW_OK);
	assert_int_equal(removed, 1);
	/* The command says it too, and exits with the primary code. */
	setenv("FWT_FAULT", "unlinkat:1:5", 1);
	rc = fwt_run("three", NULL, &err, "-t", "3", "f", (char *)NULL);
	unsetenv("FWT_FAULT");
	assert_int_equal(rc, FW_STALE);
	assert_non_null(strstr(err, "stale token 3"));
	assert_non_null(strstr(err, "could not be removed"));
	assert_non_null(strstr(err, "fencedwrite --clean f"));
	assert_int_equal(fwt_count_tmp("."), 1);
	free(err);
	fwt_assert_content("f", "five");
}

/*
 * The fence was advanced but the rename (or unlink) failed: the same
 * token finishes the change, and until then FILE is reported as the
 * content before it.
 */
static void unfinished_change_is_finished_by_retrying_its_token(
	void **state)
{
	struct fw_result res;
	struct fw_status st;

	(void)state;
	assert_int_equal(commit(6, "six", &res), FW_OK);
	arm("renameat", 1, EIO);
	assert_int_equal(commit(7, "seven", &res), FW_SYSTEM);
	arm(NULL, 0, 0);
	fwt_assert_content("f", "six");
	assert_true(fwt_fence_token("f") == 7);
	fw_status_init(&st);
	assert_int_equal(fw_verify("f", NULL, &st, &res), FW_UNSAFE);
	assert_int_equal(st.verdict, FW_VERIFY_UNFINISHED);
	assert_true(st.file_token_known && st.file_token == 6);
	assert_non_null(strstr(res.message, "unfinished"));
	/* the record of a change that never landed is kept in both slots:
	   damage to one copy does not bring token 6 back */
	{
		int fd = open("f.fence", O_RDWR);
		unsigned char c;

		assert_true(fd >= 0);
		for (off_t at = 60; at < 1024; at += 512) {
			assert_int_equal(pread(fd, &c, 1, at), 1);
			c ^= 1;
			assert_int_equal(pwrite(fd, &c, 1, at), 1);
			{
				struct fw_fence_info info;
				int rc = fw_show("f", NULL, &info, &res);

				/* 7, or fails closed; never 6 again */
				assert_true(rc == FW_UNSAFE ||
				            (rc == FW_OK && info.token == 7));
			}
			c ^= 1;
			assert_int_equal(pwrite(fd, &c, 1, at), 1);
		}
		close(fd);
	}
	/* an older token is still stale; the same one finishes it */
	assert_int_equal(commit(6, "six?", &res), FW_STALE);
	assert_int_equal(commit(7, "seven", &res), FW_OK);
	fwt_assert_content("f", "seven");
	assert_int_equal(fw_verify("f", NULL, &st, &res), FW_OK);
	/* and once finished, the same token with other content is stale */
	assert_int_equal(commit(7, "seven?", &res), FW_STALE);
	/* a delete likewise */
	arm("unlinkat", 1, EIO);
	assert_int_equal(fw_delete("f", 8, NULL, &res), FW_SYSTEM);
	arm(NULL, 0, 0);
	fwt_assert_content("f", "seven");
	assert_int_equal(fw_delete("f", 8, NULL, &res), FW_OK);
	assert_null(fwt_slurp("f", NULL));
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* Another host, which got the lock after ours lapsed, records a newer
   token (ours + 10) in the fence. */
static void ten_more(struct fw_record *next, void *arg)
{
	(void)arg;
	next->token += 10;
	next->pid = 1;
}

static void another_host_takes_over(void)
{
	fwt_write_next_record("f.fence", ten_more, NULL);
}

/* Commit DATA under TOKEN on "NFS" with the takeover at the Nth CALL. */
static int commit_losing_lock(const struct fw_opts *opts, const char *call,
                              int nth, uint64_t token, const char *data,
                              struct fw_result *res)
{
	struct fw_txn *txn;

	assert_int_equal(fw_txn_begin(&txn, "f", opts, res), FW_OK);
	assert_int_equal(fw_txn_write(txn, data, strlen(data), res), FW_OK);
	hook(call, nth, another_host_takes_over);
	return fw_txn_commit(txn, token, res);
}

/*
 * An NFSv4 lock is a lease, lost silently by a client frozen past it.  A
 * writer whose fence changed under its lock never reports success: before
 * its record is written and before the rename it gives up leaving FILE
 * alone; after the rename it says FILE may hold superseded content.
 */
static void lost_lock_is_never_reported_as_success(void **state)
{
	struct fw_result res;
	struct fw_opts opts;
	FILE *mi = fopen("nfs.mi", "w");

	(void)state;
	assert_non_null(mi);
	fwt_fit_mount_line(mi, ".", "/shared", "nfs4", "fileserver:/export",
	                   "rw,vers=4.2,local_lock=none");
	fclose(mi);
	fw_opts_init(&opts);
	opts.mountinfo = "nfs.mi";
	assert_int_equal(fw_commit_buffer("f", 1, "one", 3, &opts, &res),
	                 FW_OK);
	/* after the lock's read, before our record (2nd fcntl: F_GETFL) */
	assert_int_equal(commit_losing_lock(&opts, "fcntl", 2, 2, "two", &res),
	                 FW_LOCK_LOST);
	assert_non_null(strstr(res.message, "before this change was recorded"));
	fwt_assert_content("f", "one");
	assert_true(fwt_fence_token("f") == 11);
	/* after our record, before the rename */
	assert_int_equal(commit_losing_lock(&opts, "fdatasync", 1, 12, "12",
	                                    &res), FW_LOCK_LOST);
	assert_non_null(strstr(res.message, "before the rename"));
	fwt_assert_content("f", "one");
	assert_true(fwt_fence_token("f") == 22);
	/* at the rename: it lands, and the exit says what that means */
	assert_int_equal(commit_losing_lock(&opts, "renameat", 1, 23, "23",
	                                    &res), FW_LOCK_LOST);
	assert_non_null(strstr(res.message, "superseded content (token 23)"));
	fwt_assert_content("f", "23");
	assert_true(fwt_fence_token("f") == 33);
	/* the rename fails too (ESTALE, as after a frozen client): the record
	   held for the unfinished change must not overwrite the newer one */
	arm("renameat", 1, ESTALE);
	{
		int rc = commit_losing_lock(&opts, "renameat", 1, 34, "34",
		                            &res);

		if (rc != FW_LOCK_LOST)
			fail_msg("exit %d: %s", rc, res.message);
	}
	arm(NULL, 0, 0);
	fwt_assert_content("f", "23");
	assert_true(fwt_fence_token("f") == 44);
	hook(NULL, 0, NULL);
	assert_int_equal(fw_commit_buffer("f", 40, "40", 2, &opts, &res),
	                 FW_STALE);
	/* A client that finds its lease expired fails every read through
	   the lost lock with EIO: the check after the rename sees that, and
	   says what it means. */
	{
		struct fw_txn *txn;

		assert_int_equal(fw_txn_begin(&txn, "f", &opts, &res), FW_OK);
		assert_int_equal(fw_txn_write(txn, "45", 2, &res), FW_OK);
		/* preads: the content's identity (2), the lock's read, the
		   checks before the record and before the rename; then
		   the one after the rename fails */
		arm("pread", 6, EIO);
		assert_int_equal(fw_txn_commit(txn, 45, &res), FW_LOCK_LOST);
		arm(NULL, 0, 0);
		assert_non_null(strstr(res.message, "superseded content"));
		fwt_assert_content("f", "45");
	}
	/* and a claim */
	hook("fdatasync", 1, another_host_takes_over);
	assert_int_equal(fw_claim("f", 46, &opts, &res), FW_LOCK_LOST);
	assert_true(fwt_fence_token("f") == 56);
	hook(NULL, 0, NULL);
	assert_int_equal(fwt_count_tmp("."), 0);
	/* On a local filesystem the durable order is unchanged. */
	arm(NULL, 0, 0);
	assert_int_equal(commit(57, "57", &res), FW_OK);
	assert_string_equal(trace(), "fsync pwrite fdatasync renameat fsync");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(commit_syncs_content_then_fence_then_renames_then_syncs_dir),
		T(each_failing_step_leaves_a_consistent_state),
		T(large_content_whose_sync_fails_is_not_committed),
		T(interrupted_sync_is_retried),
		T(failed_fence_creation_leaves_no_fence),
		T(copy_paths_and_their_fallbacks_give_the_same_bytes),
		T(command_exits_5_on_io_error),
		T(old_file_is_held_open_on_local_disks_only),
		T(leftover_temporary_file_is_reported),
		T(unfinished_change_is_finished_by_retrying_its_token),
		T(lost_lock_is_never_reported_as_success),
	};
	return cmocka_run_group_tests_name("faults", tests, load_shim, NULL);
}
