/* The commit protocol through the library: every outcome, and the state
   each leaves on disk. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

/* A crash tore the newer slot: the fence reads as the older token, and the
   next commit writes into the torn slot, leaving the good one alone. */
static void torn_fence_reads_as_previous_token_and_heals(void **state)
{
	struct fw_result res;
	char *image;
	size_t len;
	int fd;

	(void)state;
	assert_int_equal(commit("t", 5, "five\n", &res), FW_OK);   /* seq 1 */
	assert_int_equal(commit("t", 6, "six\n", &res), FW_OK);    /* seq 2 */
	/* garble the middle of slot 0 (seq 2, token 6) */
	fd = open("t.fence", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "\xff\xfe###", 5, 40), 5);
	close(fd);
	assert_true(fwt_fence_token("t") == 5);
	assert_int_equal(commit("t", 6, "six again\n", &res), FW_OK);
	assert_true(fwt_fence_token("t") == 6);
	image = fwt_slurp("t.fence", &len);
	assert_int_equal(len, 512);
	assert_non_null(strstr(image, "seq=2 token=6"));
	assert_non_null(strstr(image, "seq=1 token=5"));
	free(image);
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
		T(torn_fence_reads_as_previous_token_and_heals),
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
	};
	return cmocka_run_group_tests_name("commit", tests, NULL, NULL);
}
