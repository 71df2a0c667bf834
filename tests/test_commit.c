/* SPDX-License-Identifier: MIT */
/* The commit protocol through the library: every outcome, and the state
   each leaves on disk. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

static int commit(const char *path, uint64_t token, const char *data,
                  struct fw_result *res)
{
	return fw_commit_buffer(path, token, data, strlen(data), NULL, res);
}


/* The seed's story: A holds token 7 and is paused mid-write; its lease
   expires, B gets 8 and commits; A wakes and must be turned away. */
static void paused_holder_with_older_token_is_rejected(void **state)
{
	struct fw_txn *a;
	struct fw_result res;

	(void)state;
	assert_int_equal(commit("report.txt", 5, "day 0\n", &res), FW_OK);
	assert_int_equal(fw_txn_begin(&a, "report.txt", NULL, &res), FW_OK);
	assert_int_equal(fw_txn_write(a, "A's report", 10, &res), FW_OK);
	/* ... A is paused here; B takes over ... */
	assert_int_equal(commit("report.txt", 8, "B's report\n", &res), FW_OK);
	/* ... A wakes up, still believing it holds the lease. */
	assert_int_equal(fw_txn_commit(a, 7, &res), FW_STALE);
	assert_int_equal(res.code, FW_STALE);
	assert_true(res.fence_read && res.fence_token == 8);
	assert_non_null(strstr(res.message, "stale token 7"));
	assert_non_null(strstr(res.message, "report.txt"));
	assert_non_null(strstr(res.message, "holds 8"));
	fwt_assert_content("report.txt", "B's report\n");
	assert_true(fwt_fence_token("report.txt") == 8);
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void first_commit_creates_fence_and_file(void **state)
{
	struct fw_result res;
	struct fw_fence_info info;

	(void)state;
	assert_int_equal(commit("new.txt", 3, "hello\n", &res), FW_OK);
	fwt_assert_content("new.txt", "hello\n");
	assert_int_equal(fw_show("new.txt", NULL, &info, &res), FW_OK);
	assert_true(info.token == 3 && info.seq == 1);
	assert_string_equal(info.op, "commit");
	assert_true(info.pid == (long)getpid());
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void stale_and_equal_tokens_leave_file_and_fence_unchanged(void **state)
{
	struct fw_result res;
	struct fw_opts opts;
	char *fence_before, *fence_after;
	struct stat before, after;

	(void)state;
	assert_int_equal(commit("f", 10, "ten\n", &res), FW_OK);
	fence_before = fwt_slurp("f.fence", NULL);
	assert_int_equal(stat("f", &before), 0);
	assert_int_equal(commit("f", 9, "nine\n", &res), FW_STALE);
	assert_int_equal(commit("f", 10, "ten again\n", &res), FW_STALE);
	assert_non_null(strstr(res.message, "equal"));
	assert_int_equal(commit("f", 1, "one\n", &res), FW_STALE);
	assert_int_equal(stat("f", &after), 0);
	fence_after = fwt_slurp("f.fence", NULL);
	assert_string_equal(fence_before, fence_after);
	assert_true(before.st_ino == after.st_ino);
	fwt_assert_content("f", "ten\n");
	assert_int_equal(fwt_count_tmp("."), 0);
	/* The caller may opt in to equal tokens. */
	fw_opts_init(&opts);
	opts.flags = FW_ALLOW_EQUAL;
	assert_int_equal(fw_commit_buffer("f", 10, "ten again\n", 10, &opts,
	                                  &res), FW_OK);
	fwt_assert_content("f", "ten again\n");
	assert_int_equal(fw_commit_buffer("f", 9, "x", 1, &opts, &res),
	                 FW_STALE);
	free(fence_before);
	free(fence_after);
}

static void token_zero_is_a_usage_error(void **state)
{
	struct fw_result res;

	(void)state;
	assert_int_equal(commit("z", 0, "x", &res), FW_USAGE);
	assert_int_equal(fw_delete("z", 0, NULL, &res), FW_USAGE);
	assert_int_equal(fw_check("z", 0, NULL, &res), FW_USAGE);
	assert_null(fwt_slurp("z", NULL));
	assert_null(fwt_slurp("z.fence", NULL));
}

static void existing_unfenced_file_fails_closed_until_adopted(void **state)
{
	struct fw_result res;

	(void)state;
	fwt_spit("legacy", "old\n");
	assert_int_equal(commit("legacy", 100, "new\n", &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "not fenced"));
	assert_non_null(strstr(res.message, "--init"));
	assert_null(fwt_slurp("legacy.fence", NULL));
	fwt_assert_content("legacy", "old\n");
	assert_int_equal(fwt_count_tmp("."), 0);
	/* Deleting a fence does not reopen the door either. */
	assert_int_equal(fw_init("legacy", 50, NULL, &res), FW_OK);
	assert_true(fwt_fence_token("legacy") == 50);
	assert_int_equal(commit("legacy", 50, "new\n", &res), FW_STALE);
	assert_int_equal(commit("legacy", 51, "new\n", &res), FW_OK);
	assert_int_equal(unlink("legacy.fence"), 0);
	assert_int_equal(commit("legacy", 52, "newer\n", &res), FW_UNSAFE);
	assert_int_equal(fw_delete("legacy", 52, NULL, &res), FW_UNSAFE);
	fwt_assert_content("legacy", "new\n");
}

static void init_never_replaces_a_fence(void **state)
{
	struct fw_result res;

	(void)state;
	assert_int_equal(fw_init("g", 0, NULL, &res), FW_OK);
	assert_true(fwt_fence_token("g") == 0);
	assert_null(fwt_slurp("g", NULL));
	assert_int_equal(commit("g", 4, "four\n", &res), FW_OK);
	assert_int_equal(fw_init("g", 1, NULL, &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "already fenced"));
	assert_true(fwt_fence_token("g") == 4);
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void corrupt_or_truncated_fence_fails_closed(void **state)
{
	static const char *bad[] = { "", "7\n", "garbage garbage garbage\n" };
	struct fw_result res;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *fence;

		fwt_spit("c", "kept\n");
		fwt_spit("c.fence", bad[i]);
		assert_int_equal(commit("c", 99, "lost?\n", &res), FW_UNSAFE);
		assert_non_null(strstr(res.message, "c.fence is corrupt"));
		assert_int_equal(fw_delete("c", 99, NULL, &res), FW_UNSAFE);
		assert_int_equal(fw_check("c", 99, NULL, &res), FW_UNSAFE);
		fwt_assert_content("c", "kept\n");
		fence = fwt_slurp("c.fence", NULL);
		assert_string_equal(fence, bad[i]);
		free(fence);
		assert_int_equal(fwt_count_tmp("."), 0);
	}
}

/* Overwrite LEN bytes at OFF of PATH. */
static void scribble(const char *path, off_t off, const char *bytes,
                     size_t len)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, len, off), (ssize_t)len);
	close(fd);
}

/*
 * A crash tore the record being written before its rename: FILE is still
 * what the surviving record says, so the fence reads as that record, and
 * the next commit writes into the torn slot, leaving the good one alone.
 */
static void torn_record_before_rename_reads_as_previous_and_heals(
	void **state)
{
	struct fw_result res;
	char *image;
	size_t len;

	(void)state;
	assert_int_equal(commit("t", 5, "five\n", &res), FW_OK);   /* seq 1 */
	/* record 2 (slot 0) torn part-way; FILE still holds five */
	scribble("t.fence", 0, "fencedwrite-fence 2 seq=2 tok", 29);
	assert_true(fwt_fence_token("t") == 5);
	assert_int_equal(commit("t", 6, "six\n", &res), FW_OK);
	assert_true(fwt_fence_token("t") == 6);
	image = fwt_slurp("t.fence", &len);
	assert_int_equal(len, 1024);
	assert_non_null(strstr(image, "seq=2 token=6 "));
	assert_non_null(strstr(image, "seq=1 token=5 "));
	free(image);
}

/*
 * The newest record damaged after its change reached FILE (bit rot, a hand
 * edit): reading the older record would lower the token and let a used
 * token in again.  Every action fails closed, saying how to recover.
 */
static void damaged_newest_record_fails_closed(void **state)
{
	struct fw_fence_info info;
	struct fw_result res;
	char *image, *at;
	size_t len;

	(void)state;
	assert_int_equal(commit("t", 5, "five\n", &res), FW_OK);   /* seq 1 */
	assert_int_equal(commit("t", 6, "six\n", &res), FW_OK);    /* seq 2 */
	scribble("t.fence", 40, "\xff\xfe###", 5);
	assert_int_equal(fw_show("t", NULL, &info, &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "damaged"));
	assert_non_null(strstr(res.message, "--init -t N"));
	assert_int_equal(commit("t", 6, "stale six\n", &res), FW_UNSAFE);
	assert_int_equal(fw_check("t", 6, NULL, &res), FW_UNSAFE);
	fwt_assert_content("t", "six\n");
	/* A hand edit of the newest record, its checksum left as it was. */
	assert_int_equal(commit("u", 5, "five\n", &res), FW_OK);
	assert_int_equal(commit("u", 6, "six\n", &res), FW_OK);
	image = fwt_slurp("u.fence", &len);
	at = strstr(image, "token=6 ");
	assert_non_null(at);
	scribble("u.fence", at - image, "token=9 ", 8);
	free(image);
	assert_int_equal(fw_show("u", NULL, &info, &res), FW_UNSAFE);
	assert_int_equal(commit("u", 6, "stale six\n", &res), FW_UNSAFE);
	fwt_assert_content("u", "six\n");
	/* Recovery as the message says. */
	assert_int_equal(rename("u.fence", "u.fence.damaged"), 0);
	assert_int_equal(fw_init("u", 6, NULL, &res), FW_OK);
	assert_int_equal(commit("u", 6, "stale six\n", &res), FW_STALE);
	assert_int_equal(commit("u", 7, "seven\n", &res), FW_OK);
}

static void symlinks_are_never_followed(void **state)
{
	struct fw_result res;
	char *target;

	(void)state;
	/* FILE is a link planted towards an unfenced file */
	fwt_spit("victim", "precious\n");
	assert_int_equal(symlink("victim", "out"), 0);
	assert_int_equal(commit("out", 9, "evil\n", &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "symbolic link"));
	assert_int_equal(fw_delete("out", 9, NULL, &res), FW_UNSAFE);
	fwt_assert_content("victim", "precious\n");
	/* also when out is fenced: the link is neither followed nor replaced */
	assert_int_equal(fw_init("out", 0, NULL, &res), FW_UNSAFE);
	/* a fence that is a link to some other file */
	assert_int_equal(commit("real", 3, "three\n", &res), FW_OK);
	assert_int_equal(rename("real.fence", "elsewhere.fence"), 0);
	assert_int_equal(symlink("elsewhere.fence", "real.fence"), 0);
	assert_int_equal(commit("real", 4, "four\n", &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "symbolic link"));
	fwt_assert_content("real", "three\n");
	target = fwt_slurp("elsewhere.fence", NULL);
	assert_non_null(strstr(target, "token=3 "));
	free(target);
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void non_regular_file_fails_closed(void **state)
{
	struct fw_result res;

	(void)state;
	assert_int_equal(mkdir("d", 0755), 0);
	assert_int_equal(fw_init("d", 0, NULL, &res), FW_UNSAFE);
	assert_int_equal(mkfifo("p", 0644), 0);
	assert_int_equal(fw_init("p", 0, NULL, &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "not a regular file"));
	assert_int_equal(commit("p", 1, "x", &res), FW_UNSAFE);
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void replaced_file_keeps_mode_new_file_gets_umask(void **state)
{
	struct fw_result res;
	struct fw_opts opts;
	struct stat st;
	mode_t old = umask(027);

	(void)state;
	assert_int_equal(commit("m", 1, "one\n", &res), FW_OK);
	assert_int_equal(stat("m", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(chmod("m", 0604), 0);
	assert_int_equal(commit("m", 2, "two\n", &res), FW_OK);
	assert_int_equal(stat("m", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0604);
	fw_opts_init(&opts);
	opts.flags = FW_USE_MODE;
	opts.mode = 0600;
	assert_int_equal(fw_commit_buffer("m", 3, "3", 1, &opts, &res), FW_OK);
	assert_int_equal(stat("m", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	umask(old);
}

/* Where the process may (root may), the owner and group carry over too. */
static void replaced_file_keeps_owner_and_group_where_permitted(void **state)
{
	struct fw_result res;
	struct stat st;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(commit("o", 1, "one\n", &res), FW_OK);
	assert_int_equal(chown("o", 65534, 65534), 0);
	assert_int_equal(chmod("o", 02640), 0);
	assert_int_equal(commit("o", 2, "two\n", &res), FW_OK);
	assert_int_equal(stat("o", &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_gid, 65534);
	/* after the chown, which would have cleared the set-group-ID bit */
	assert_int_equal(st.st_mode & 07777, 02640);
}

static void delete_removes_file_and_keeps_fence(void **state)
{
	struct fw_result res;

	(void)state;
	assert_int_equal(commit("del", 4, "four\n", &res), FW_OK);
	assert_int_equal(fw_delete("del", 4, NULL, &res), FW_STALE);
	fwt_assert_content("del", "four\n");
	assert_int_equal(fw_delete("del", 5, NULL, &res), FW_OK);
	assert_null(fwt_slurp("del", NULL));
	assert_true(fwt_fence_token("del") == 5);
	/* a stale holder cannot bring it back */
	assert_int_equal(commit("del", 4, "zombie\n", &res), FW_STALE);
	assert_null(fwt_slurp("del", NULL));
	/* deleting what is already gone still advances the fence */
	assert_int_equal(fw_delete("del", 7, NULL, &res), FW_OK);
	assert_true(fwt_fence_token("del") == 7);
}

static void check_answers_without_changing_anything(void **state)
{
	struct fw_result res;
	char *before, *after;

	(void)state;
	assert_int_equal(fw_check("fresh", 1, NULL, &res), FW_OK);
	assert_null(fwt_slurp("fresh.fence", NULL));
	assert_int_equal(commit("k", 20, "x", &res), FW_OK);
	before = fwt_slurp("k.fence", NULL);
	assert_int_equal(fw_check("k", 21, NULL, &res), FW_OK);
	assert_int_equal(fw_check("k", 20, NULL, &res), FW_STALE);
	assert_true(res.fence_token == 20);
	after = fwt_slurp("k.fence", NULL);
	assert_string_equal(before, after);
	fwt_spit("unfenced", "x");
	assert_int_equal(fw_check("unfenced", 1, NULL, &res), FW_UNSAFE);
	free(before);
	free(after);
}

static void show_without_fence_fails_closed(void **state)
{
	struct fw_result res;
	struct fw_fence_info info;

	(void)state;
	assert_int_equal(fw_show("nothing", NULL, &info, &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "no fence"));
	assert_null(fwt_slurp("nothing.fence", NULL));
}

static void streaming_transaction_takes_chunks_fd_and_descriptor(void **state)
{
	struct fw_txn *txn;
	struct fw_result res;
	int p[2];

	(void)state;
	assert_int_equal(fw_txn_begin(&txn, "s", NULL, &res), FW_OK);
	assert_int_equal(fw_txn_write(txn, "one ", 4, &res), FW_OK);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "two ", 4), 4);
	close(p[1]);
	assert_int_equal(fw_txn_copy_fd(txn, p[0], "pipe", &res), FW_OK);
	close(p[0]);
	assert_int_equal(write(fw_txn_fd(txn), "three", 5), 5);
	assert_null(fwt_slurp("s", NULL));   /* nothing visible before commit */
	assert_int_equal(fwt_count_tmp("."), 1);
	assert_int_equal(fw_txn_commit(txn, 1, &res), FW_OK);
	fwt_assert_content("s", "one two three");
	assert_int_equal(fwt_count_tmp("."), 0);
	/* abort leaves nothing */
	assert_int_equal(fw_txn_begin(&txn, "s", NULL, &res), FW_OK);
	assert_int_equal(fw_txn_write(txn, "junk", 4, &res), FW_OK);
	fw_txn_abort(txn);
	fw_txn_abort(NULL);
	fwt_assert_content("s", "one two three");
	assert_int_equal(fwt_count_tmp("."), 0);
	/* a read error is reported with the name given */
	assert_int_equal(fw_txn_begin(&txn, "s", NULL, &res), FW_OK);
	assert_int_equal(fw_txn_copy_fd(txn, -1, "the input", &res), FW_SYSTEM);
	assert_int_equal(res.sys_errno, EBADF);
	assert_non_null(strstr(res.message, "read(the input)"));
	fw_txn_abort(txn);
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void fence_may_live_elsewhere(void **state)
{
	struct fw_result res;
	struct fw_opts opts;

	(void)state;
	assert_int_equal(mkdir("fences", 0755), 0);
	fw_opts_init(&opts);
	opts.fence_path = "fences/data.f";
	assert_int_equal(fw_init("data", 0, &opts, &res), FW_OK);
	assert_int_equal(fw_commit_buffer("data", 2, "2", 1, &opts, &res),
	                 FW_OK);
	assert_null(fwt_slurp("data.fence", NULL));
	assert_int_equal(fw_commit_buffer("data", 1, "1", 1, &opts, &res),
	                 FW_STALE);
	assert_non_null(strstr(res.message, "holds 2"));
	/* without the option, data is an unfenced file */
	assert_int_equal(commit("data", 3, "3", &res), FW_UNSAFE);
	opts.fence_path = "data";
	assert_int_equal(fw_commit_buffer("data", 9, "9", 1, &opts, &res),
	                 FW_USAGE);
	fwt_assert_content("data", "2");
}

static void missing_directory_is_a_system_error_naming_it(void **state)
{
	struct fw_result res;

	(void)state;
	assert_int_equal(commit("no/such/dir/f", 1, "x", &res), FW_SYSTEM);
	assert_int_equal(res.sys_errno, ENOENT);
	assert_non_null(strstr(res.message, "open(no/such/dir)"));
	assert_int_equal(commit("", 1, "x", &res), FW_USAGE);
	assert_int_equal(commit("dir/", 1, "x", &res), FW_USAGE);
	assert_int_equal(commit("..", 1, "x", &res), FW_USAGE);
}

/* A writer killed mid-write leaves its temporary file; clean removes it
   but never the file of a writer still alive. */
static void clean_removes_only_dead_writers_leftovers(void **state)
{
	struct fw_txn *live;
	struct fw_result res;
	unsigned removed = 99;
	pid_t pid;

	(void)state;
	assert_int_equal(commit("w", 1, "one\n", &res), FW_OK);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fw_txn *dead;

		if (fw_txn_begin(&dead, "w", NULL, NULL) == FW_OK)
			kill(getpid(), SIGKILL);
		_exit(1);
	}
	assert_int_equal(fwt_wait(pid), 128 + SIGKILL);
	assert_int_equal(fwt_count_tmp("."), 1);
	assert_int_equal(fw_txn_begin(&live, "w", NULL, &res), FW_OK);
	assert_int_equal(fwt_count_tmp("."), 2);
	assert_int_equal(fw_clean("w", NULL, &removed, &res), FW_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(fwt_count_tmp("."), 1);
	/* the live writer is unharmed */
	assert_int_equal(fw_txn_write(live, "two\n", 4, &res), FW_OK);
	assert_int_equal(fw_txn_commit(live, 2, &res), FW_OK);
	fwt_assert_content("w", "two\n");
	assert_int_equal(fwt_count_tmp("."), 0);
	/* names that only look similar are not touched */
	fwt_spit(".w.fwtmp.notours", "keep");
	fwt_spit(".w.fwtmp.0123456789ab.x", "keep");
	assert_int_equal(fw_clean("w", NULL, &removed, &res), FW_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(fwt_count_tmp("."), 2);
}

/*
 * A fence named with --fence may guard several files.  Were it re-created
 * when missing, removing it and writing an absent file would reset it to 0
 * and reopen the door for every other file it guards.
 */
static void named_fence_is_never_created_implicitly(void **state)
{
	struct fw_result res;
	struct fw_opts opts;
	struct fw_txn *txn;

	(void)state;
	fw_opts_init(&opts);
	opts.fence_path = "shared.fence";
	assert_int_equal(fw_commit_buffer("r1", 1, "x", 1, &opts, &res),
	                 FW_UNSAFE);
	assert_non_null(strstr(res.message, "--init"));
	assert_null(fwt_slurp("shared.fence", NULL));
	assert_null(fwt_slurp("r1", NULL));
	assert_int_equal(fw_init("r1", 0, &opts, &res), FW_OK);
	assert_int_equal(fw_commit_buffer("r1", 100, "r1 at 100", 9, &opts,
	                                  &res), FW_OK);
	assert_int_equal(unlink("shared.fence"), 0);
	/* r2 is absent: the fence must not come back at 0 ... */
	assert_int_equal(fw_commit_buffer("r2", 1, "r2", 2, &opts, &res),
	                 FW_UNSAFE);
	assert_null(fwt_slurp("shared.fence", NULL));
	assert_int_equal(fw_txn_begin(&txn, "r2", &opts, &res), FW_UNSAFE);
	assert_null(txn);
	assert_int_equal(fw_check("r2", 1, &opts, &res), FW_UNSAFE);
	assert_int_equal(fw_delete("r2", 1, &opts, &res), FW_UNSAFE);
	assert_null(fwt_slurp("shared.fence", NULL));
	/* ... so r1's stale holder stays out. */
	assert_int_equal(fw_commit_buffer("r1", 50, "stale", 5, &opts, &res),
	                 FW_UNSAFE);
	fwt_assert_content("r1", "r1 at 100");
	/* The sidecar fence of an absent FILE is still created. */
	assert_int_equal(commit("r3", 1, "r3", &res), FW_OK);
	assert_true(fwt_fence_token("r3") == 1);
}

/* The transaction must not keep pointers the caller may free. */
static void transaction_copies_the_names_it_was_given(void **state)
{
	char *path = strdup("copied.txt"), *fence = strdup("copied.f");
	struct fw_result res;
	struct fw_opts opts;
	struct fw_txn *txn;

	(void)state;
	assert_non_null(path);
	assert_non_null(fence);
	fw_opts_init(&opts);
	opts.fence_path = fence;
	assert_int_equal(fw_init(path, 5, &opts, &res), FW_OK);
	assert_int_equal(fw_txn_begin(&txn, path, &opts, &res), FW_OK);
	memset(path, 'Z', strlen(path));
	memset(fence, 'Z', strlen(fence));
	free(path);
	free(fence);
	assert_int_equal(fw_txn_write(txn, "late", 4, &res), FW_OK);
	assert_int_equal(fw_txn_commit(txn, 4, &res), FW_STALE);
	assert_non_null(strstr(res.message, "copied.txt"));
	assert_null(strstr(res.message, "ZZ"));
	assert_null(fwt_slurp("copied.txt", NULL));
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* Every field of a result says something true, on every path. */
static void assert_result_filled(int rc, const struct fw_result *res)
{
	assert_int_equal(res->code, rc);
	assert_non_null(memchr(res->message, '\0', sizeof(res->message)));
	if (rc == FW_OK)
		assert_string_equal(res->message, "");
	else
		assert_true(res->message[0] != '\0');
	if (rc != FW_SYSTEM)
		assert_int_equal(res->sys_errno, 0);
	assert_true(res->fence_read == 0 || res->fence_read == 1);
	if (!res->fence_read)
		assert_true(res->fence_token == 0);
}

#define GARBLE(r) memset(&(r), 0xA5, sizeof(r))

static void every_call_fills_every_field_of_its_result(void **state)
{
	struct fw_fence_info info;
	struct fw_doctor_report rep;
	struct fw_result res;
	struct fw_txn *txn;
	unsigned removed;
	int rc;

	(void)state;
	GARBLE(res);
	rc = fw_commit_buffer(NULL, 1, "x", 1, NULL, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_commit_buffer("f", 0, "x", 1, NULL, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_commit_buffer("f", 5, "x", 1, NULL, &res);
	assert_int_equal(rc, FW_OK);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_commit_buffer("f", 4, "x", 1, NULL, &res);
	assert_int_equal(rc, FW_STALE);
	assert_result_filled(rc, &res);
	assert_true(res.fence_read && res.fence_token == 5);
	GARBLE(res);
	rc = fw_check("f", 0, NULL, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_check("f", 6, NULL, &res);
	assert_int_equal(rc, FW_OK);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_delete("f", 0, NULL, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_show("f", NULL, &info, &res);
	assert_int_equal(rc, FW_OK);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_show("nothing/there", NULL, &info, &res);
	assert_int_equal(rc, FW_SYSTEM);
	assert_result_filled(rc, &res);
	assert_int_equal(res.sys_errno, ENOENT);
	GARBLE(res);
	rc = fw_show(NULL, NULL, &info, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_init("f", 1, NULL, &res);
	assert_int_equal(rc, FW_UNSAFE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_init("", 1, NULL, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_clean(NULL, NULL, &removed, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_clean("f", NULL, &removed, &res);
	assert_int_equal(rc, FW_OK);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_doctor(NULL, NULL, &rep, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_txn_begin(&txn, NULL, NULL, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_txn_begin(&txn, "f", NULL, &res);
	assert_int_equal(rc, FW_OK);
	assert_result_filled(rc, &res);
	GARBLE(res);
	rc = fw_txn_copy_fd(txn, -1, "nothing", &res);
	assert_int_equal(rc, FW_SYSTEM);
	assert_result_filled(rc, &res);
	assert_int_equal(res.sys_errno, EBADF);
	GARBLE(res);
	rc = fw_txn_commit(txn, 0, &res);
	assert_int_equal(rc, FW_USAGE);
	assert_result_filled(rc, &res);
	/* A code says what it is, not what the last action was. */
	assert_string_not_equal(fw_strerror(FW_OK), "committed");
	assert_int_equal(fwt_count_tmp("."), 0);
}

/*
 * FILE names: every name whose fence name fits must work, temporary names
 * shortened as needed; a longer one is a usage error that names the way
 * out (--fence).
 */
static void long_names_work_up_to_what_their_fence_allows(void **state)
{
	char name[300], fence[320];
	struct fw_result res;
	struct fw_opts opts;
	unsigned removed = 0;
	pid_t pid;

	(void)state;
	memset(name, 'n', sizeof(name));
	name[249] = '\0';          /* + ".fence" = 255, the longest name */
	assert_int_equal(commit(name, 1, "one", &res), FW_OK);
	assert_int_equal(commit(name, 2, "two", &res), FW_OK);
	fwt_assert_content(name, "two");
	snprintf(fence, sizeof(fence), "%s.fence", name);
	assert_true(fwt_fence_token(name) == 2);
	/* A writer killed mid-stream leaves a temporary file that the
	   cleaner recognises by its (shortened) name. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fw_txn *txn;

		if (fw_txn_begin(&txn, name, NULL, &res) != FW_OK)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(fwt_wait(pid), 0);
	assert_int_equal(fwt_count_tmp("."), 1);
	assert_int_equal(fw_clean(name, NULL, &removed, &res), FW_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(fwt_count_tmp("."), 0);
	name[249] = 'n';
	name[250] = '\0';
	assert_int_equal(commit(name, 1, "x", &res), FW_USAGE);
	assert_non_null(strstr(res.message, "--fence"));
	assert_null(fwt_slurp(name, NULL));
	/* With a fence elsewhere, the longest name a directory allows. */
	name[255] = '\0';
	memset(name + 250, 'n', 5);
	fw_opts_init(&opts);
	opts.fence_path = "short.fence";
	assert_int_equal(fw_init(name, 0, &opts, &res), FW_OK);
	assert_int_equal(fw_commit_buffer(name, 3, "3", 1, &opts, &res),
	                 FW_OK);
	fwt_assert_content(name, "3");
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* A timeout too large to add to the clock means waiting for ever, not
   an overflow (UBSan aborts the sanitized run on one). */
static void huge_timeout_is_waiting_for_ever(void **state)
{
	struct fw_result res;
	struct fw_opts opts;

	(void)state;
	fw_opts_init(&opts);
	opts.timeout_ms = LONG_MAX;
	assert_int_equal(fw_commit_buffer("f", 1, "1", 1, &opts, &res), FW_OK);
	assert_int_equal(fw_check("f", 2, &opts, &res), FW_OK);
}

/* FILE turned into a link between begin and commit: the rename would
   replace the link with content nobody asked to put there. */
static void file_replaced_by_link_before_commit_fails_closed(void **state)
{
	struct fw_result res;
	struct fw_txn *txn;
	struct stat st;

	(void)state;
	assert_int_equal(commit("f", 1, "old", &res), FW_OK);
	fwt_spit("elsewhere", "elsewhere");
	assert_int_equal(fw_txn_begin(&txn, "f", NULL, &res), FW_OK);
	assert_int_equal(fw_txn_write(txn, "new", 3, &res), FW_OK);
	assert_int_equal(unlink("f"), 0);
	assert_int_equal(symlink("elsewhere", "f"), 0);
	assert_int_equal(fw_txn_commit(txn, 2, &res), FW_UNSAFE);
	assert_non_null(strstr(res.message, "symbolic link"));
	assert_int_equal(lstat("f", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	fwt_assert_content("elsewhere", "elsewhere");
	assert_true(fwt_fence_token("f") == 1);
	assert_int_equal(fw_delete("f", 3, NULL, &res), FW_UNSAFE);
	assert_int_equal(lstat("f", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_true(fwt_fence_token("f") == 1);
	assert_int_equal(fwt_count_tmp("."), 0);
}


/* Flip one bit in slot SLOT's record of PATH's fence. */
static void rot(const char *path, int slot)
{
	char name[64];
	int fd;
	unsigned char c;
	off_t at = (off_t)slot * 512 + 60;

	snprintf(name, sizeof(name), "%s.fence", path);
	fd = open(name, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 1;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/*
 * Records that leave FILE as it was (a claim, a delete of an absent FILE)
 * are written into both slots: damage to either copy later leaves the
 * other, and the token never falls back to the record before.
 */
static void damaged_record_that_left_file_alone_never_falls_back(
	void **state)
{
	struct fw_fence_info info;
	struct fw_result res;

	(void)state;
	for (int slot = 0; slot < 2; slot++) {
		char name[16];

		snprintf(name, sizeof(name), "c%d", slot);
		assert_int_equal(commit(name, 10, "ten\n", &res), FW_OK);
		assert_int_equal(fw_claim(name, 20, NULL, &res), FW_OK);
		rot(name, slot);
		assert_int_equal(fw_show(name, NULL, &info, &res), FW_OK);
		assert_true(info.token == 20);
		assert_int_equal(commit(name, 15, "stale\n", &res), FW_STALE);
		fwt_assert_content(name, "ten\n");
		snprintf(name, sizeof(name), "d%d", slot);
		assert_int_equal(fw_delete(name, 50, NULL, &res), FW_OK);
		rot(name, slot);
		assert_int_equal(fw_show(name, NULL, &info, &res), FW_OK);
		assert_true(info.token == 50);
		assert_int_equal(commit(name, 7, "stale\n", &res), FW_STALE);
		assert_null(fwt_slurp(name, NULL));
	}
	/* both copies damaged: corrupt, fails closed */
	assert_int_equal(commit("e", 10, "ten\n", &res), FW_OK);
	assert_int_equal(fw_claim("e", 20, NULL, &res), FW_OK);
	rot("e", 0);
	rot("e", 1);
	assert_int_equal(fw_show("e", NULL, &info, &res), FW_UNSAFE);
	assert_int_equal(commit("e", 15, "stale\n", &res), FW_UNSAFE);
}

/* Content of N bytes that no shorter period repeats, so a digest of the
   wrong bytes (a stale page, a missing tail) cannot match by chance. */
static char *pattern(size_t n, unsigned seed)
{
	char *p = malloc(n);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)rand_r(&seed);
	return p;
}

/* FILE is exactly WANT's N bytes, and the fence's digest says so too. */
static void assert_committed(const char *path, const char *want, size_t n)
{
	struct fw_status st;
	struct fw_result res;
	size_t len;
	char *got = fwt_slurp(path, &len);

	assert_non_null(got);
	assert_int_equal(len, n);
	assert_memory_equal(got, want, n);
	free(got);
	fw_status_init(&st);
	assert_int_equal(fw_verify(path, NULL, &st, &res), FW_OK);
	assert_int_equal(st.verdict, FW_VERIFY_SAME);
}

/*
 * Large content is synced while its digest is read back (the two
 * overlap, the fsync in a thread of its own): the digest recorded is
 * still that of exactly the bytes renamed into place, whichever way they came in: a buffer, a regular
 * file (copied in the kernel), a pipe (spliced), the descriptor, or all
 * of them in one transaction.  Sizes on both sides of the size where the
 * overlap begins, and one not a multiple of anything.
 */
static void large_content_digest_matches_whatever_the_source(void **state)
{
	const size_t sizes[] = { (1u << 20) - 1, 1u << 20, (3u << 20) + 17 };
	uint64_t token = 1;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		char *data = pattern(n, (unsigned)i + 1);
		struct fw_result res;
		struct fw_txn *txn;
		int fd, p[2];
		pid_t pid;

		/* a buffer */
		assert_int_equal(fw_commit_buffer("big", token++, data, n, NULL,
		                                  &res), FW_OK);
		assert_committed("big", data, n);
		/* a regular file: copy_file_range, no byte in user space */
		fd = open("source", O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, data, n), (ssize_t)n);
		assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
		assert_int_equal(fw_txn_begin(&txn, "big", NULL, &res), FW_OK);
		assert_int_equal(fw_txn_copy_fd(txn, fd, "source", &res), FW_OK);
		close(fd);
		assert_int_equal(fw_txn_commit(txn, token++, &res), FW_OK);
		assert_committed("big", data, n);
		/* a pipe from another process: splice */
		assert_int_equal(pipe(p), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(p[0]);
			_exit(write(p[1], data, n) == (ssize_t)n ? 0 : 1);
		}
		close(p[1]);
		assert_int_equal(fw_txn_begin(&txn, "big", NULL, &res), FW_OK);
		assert_int_equal(fw_txn_copy_fd(txn, p[0], "pipe", &res), FW_OK);
		close(p[0]);
		assert_int_equal(fwt_wait(pid), 0);
		assert_int_equal(fw_txn_commit(txn, token++, &res), FW_OK);
		assert_committed("big", data, n);
		/* the three ways in one transaction, the last one the
		   descriptor, which the library never sees written */
		fd = open("source", O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(fw_txn_begin(&txn, "big", NULL, &res), FW_OK);
		assert_int_equal(fw_txn_write(txn, data, n / 3, &res), FW_OK);
		assert_int_equal(lseek(fd, (off_t)(n / 3), SEEK_SET),
		                 (off_t)(n / 3));
		assert_int_equal(fw_txn_copy_fd(txn, fd, "source", &res), FW_OK);
		close(fd);
		assert_int_equal(write(fw_txn_fd(txn), data, n / 2),
		                 (ssize_t)(n / 2));
		assert_int_equal(fw_txn_commit(txn, token++, &res), FW_OK);
		{
			char *both = malloc(n + n / 2);

			assert_non_null(both);
			memcpy(both, data, n);
			memcpy(both + n, data, n / 2);
			assert_committed("big", both, n + n / 2);
			free(both);
		}
		assert_int_equal(fwt_count_tmp("."), 0);
		unlink("source");
		free(data);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(paused_holder_with_older_token_is_rejected),
		T(first_commit_creates_fence_and_file),
		T(stale_and_equal_tokens_leave_file_and_fence_unchanged),
		T(token_zero_is_a_usage_error),
		T(existing_unfenced_file_fails_closed_until_adopted),
		T(init_never_replaces_a_fence),
		T(corrupt_or_truncated_fence_fails_closed),
		T(torn_record_before_rename_reads_as_previous_and_heals),
		T(damaged_newest_record_fails_closed),
		T(damaged_record_that_left_file_alone_never_falls_back),
		T(symlinks_are_never_followed),
		T(non_regular_file_fails_closed),
		T(replaced_file_keeps_mode_new_file_gets_umask),
		T(replaced_file_keeps_owner_and_group_where_permitted),
		T(delete_removes_file_and_keeps_fence),
		T(check_answers_without_changing_anything),
		T(show_without_fence_fails_closed),
		T(streaming_transaction_takes_chunks_fd_and_descriptor),
		T(fence_may_live_elsewhere),
		T(missing_directory_is_a_system_error_naming_it),
		T(clean_removes_only_dead_writers_leftovers),
		T(named_fence_is_never_created_implicitly),
		T(transaction_copies_the_names_it_was_given),
		T(every_call_fills_every_field_of_its_result),
		T(long_names_work_up_to_what_their_fence_allows),
		T(huge_timeout_is_waiting_for_ever),
		T(file_replaced_by_link_before_commit_fails_closed),
		T(large_content_digest_matches_whatever_the_source),
	};
	return cmocka_run_group_tests_name("commit", tests, NULL, NULL);
}
