/* SPDX-License-Identifier: MIT */
/*
 * What the fence knows of FILE: claims at takeover, the same commit
 * twice, verification of FILE against the records, and fences written by
 * fencedwrite 1.0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"

static int commit(const char *path, uint64_t token, const char *data,
                  struct fw_result *res)
{
	return fw_commit_buffer(path, token, data, strlen(data), NULL, res);
}

static struct fw_fence_info show(const char *path)
{
	struct fw_fence_info info;
	struct fw_result res;

	if (fw_show(path, NULL, &info, &res) != FW_OK)
		fail_msg("fw_show(%s): %s", path, res.message);
	return info;
}

/*
 * HDFS's newEpoch for a file: holder 34 claims before its long job, and
 * paused holder 33, which would have passed the fence (33 > 32) until 34
 * committed, is turned away from the claim on.
 */
static void claim_turns_older_holders_away_before_the_new_one_commits(
	void **state)
{
	struct fw_result res;
	struct fw_fence_info info;

	(void)state;
	assert_int_equal(commit("r", 32, "by 32\n", &res), FW_OK);
	assert_int_equal(fw_claim("r", 34, NULL, &res), FW_OK);
	info = show("r");
	assert_true(info.token == 34);
	assert_string_equal(info.op, "claim");
	fwt_assert_content("r", "by 32\n");
	/* the zombie */
	assert_int_equal(commit("r", 33, "by 33\n", &res), FW_STALE);
	assert_non_null(strstr(res.message, "holds 34"));
	fwt_assert_content("r", "by 32\n");
	/* the claimant finishes its job */
	assert_int_equal(commit("r", 34, "by 34\n", &res), FW_OK);
	fwt_assert_content("r", "by 34\n");
	/* its claim is spent: an equal token with other content is stale */
	assert_int_equal(commit("r", 34, "34 again\n", &res), FW_STALE);
	fwt_assert_content("r", "by 34\n");
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void claim_is_stale_below_and_done_already_at_its_own_token(
	void **state)
{
	struct fw_result res;
	uint64_t seq;

	(void)state;
	assert_int_equal(commit("r", 10, "ten\n", &res), FW_OK);
	assert_int_equal(fw_claim("r", 9, NULL, &res), FW_STALE);
	/* its own token: the holder of 10 holds the fence already */
	seq = show("r").seq;
	assert_int_equal(fw_claim("r", 10, NULL, &res), FW_OK);
	assert_true(show("r").seq == seq);
	assert_int_equal(fw_claim("r", 0, NULL, &res), FW_USAGE);
	assert_int_equal(fw_claim("r", 12, NULL, &res), FW_OK);
	seq = show("r").seq;
	assert_int_equal(fw_claim("r", 12, NULL, &res), FW_OK);
	assert_true(show("r").seq == seq);   /* nothing written */
	assert_int_equal(fw_check("r", 12, NULL, &res), FW_OK);
	assert_int_equal(fw_check("r", 11, NULL, &res), FW_STALE);
	/* a newer holder claims over it */
	assert_int_equal(fw_claim("r", 14, NULL, &res), FW_OK);
	assert_int_equal(commit("r", 12, "twelve\n", &res), FW_STALE);
	fwt_assert_content("r", "ten\n");
	/* a claim of an absent FILE creates its fence; FILE stays absent */
	assert_int_equal(fw_claim("new", 3, NULL, &res), FW_OK);
	assert_null(fwt_slurp("new", NULL));
	assert_true(show("new").token == 3);
	assert_int_equal(commit("new", 3, "three\n", &res), FW_OK);
	fwt_assert_content("new", "three\n");
}

/* A retried commit whose first run went through is done: nothing is
   written again, and it is not reported as stale. */
static void the_same_commit_twice_is_done_already(void **state)
{
	struct fw_result res;
	uint64_t seq;

	(void)state;
	assert_int_equal(commit("r", 9, "nine\n", &res), FW_OK);
	seq = show("r").seq;
	assert_int_equal(commit("r", 9, "nine\n", &res), FW_OK);
	assert_true(show("r").seq == seq);
	assert_int_equal(commit("r", 9, "nine!\n", &res), FW_STALE);
	assert_int_equal(fw_delete("r", 11, NULL, &res), FW_OK);
	seq = show("r").seq;
	assert_int_equal(fw_delete("r", 11, NULL, &res), FW_OK);
	assert_true(show("r").seq == seq);
	assert_int_equal(fwt_count_tmp("."), 0);
}

static struct fw_status status_of(const char *path, int deep, int want)
{
	struct fw_status st;
	struct fw_result res;
	int rc;

	fw_status_init(&st);
	rc = deep ? fw_verify(path, NULL, &st, &res)
	          : fw_status(path, NULL, &st, &res);
	if (rc != want)
		fail_msg("%s(%s) = %d, want %d: %s", deep ? "fw_verify"
		         : "fw_status", path, rc, want, res.message);
	return st;
}

/* --verify: FILE exactly as committed, or what differs. */
static void verify_says_what_differs(void **state)
{
	struct fw_status st;
	int fd;

	(void)state;
	{
		struct fw_result res;

		/* Two commits, so the record before the newest describes a
		   file too: FILE absent then cannot pass for a first commit
		   that never landed. */
		assert_int_equal(commit("r", 4, "four, longer\n", &res), FW_OK);
		assert_int_equal(commit("r", 5, "five\n", &res), FW_OK);
	}
	st = status_of("r", 1, FW_OK);
	assert_int_equal(st.verdict, FW_VERIFY_SAME);
	assert_true(st.file_token_known && st.file_token == 5);
	assert_true(st.fence.token == 5 && st.file_size == 5);
	/* edited in place, same size: only the digest tells */
	fd = open("r", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "FIVE", 4, 0), 4);
	close(fd);
	st = status_of("r", 0, FW_OK);
	assert_int_equal(st.verdict, FW_VERIFY_SAME);   /* cheap: no reading */
	st = status_of("r", 1, FW_UNSAFE);
	assert_int_equal(st.verdict, FW_VERIFY_EDITED);
	/* replaced outside fencedwrite */
	fwt_spit("other", "five\n");
	assert_int_equal(rename("other", "r"), 0);
	st = status_of("r", 1, FW_UNSAFE);
	assert_int_equal(st.verdict, FW_VERIFY_REPLACED);
	assert_non_null(strstr(st.what, "replaced outside"));
	/* removed */
	assert_int_equal(unlink("r"), 0);
	st = status_of("r", 1, FW_UNSAFE);
	assert_int_equal(st.verdict, FW_VERIFY_MISSING);
	/* no fence at all */
	status_of("nothing", 1, FW_UNSAFE);
}

/* After a claim the fence's token and the token of FILE's content differ;
   --show --json reports both. */
static void status_tells_the_fence_token_from_the_content_token(
	void **state)
{
	struct fw_result res;
	struct fw_status st;

	(void)state;
	assert_int_equal(commit("r", 7, "seven\n", &res), FW_OK);
	assert_int_equal(fw_claim("r", 9, NULL, &res), FW_OK);
	st = status_of("r", 1, FW_OK);
	assert_true(st.fence.token == 9 && st.file_token == 7);
	assert_string_equal(st.fence.op, "claim");
}


/* A fence written by fencedwrite 1.0 keeps working and is upgraded. */
static void version_1_fence_is_read_and_upgraded_by_the_next_change(
	void **state)
{
	char v1[FW_V1_FENCE_SIZE];
	struct fw_record old;
	struct fw_result res;
	struct fw_status st;
	char *image;
	size_t len;
	int fd;

	(void)state;
	memset(&old, 0, sizeof(old));
	old.seq = 3;
	old.token = 30;
	fw_record_stamp(&old, "commit");
	fwt_v1_image(&old, v1);
	fwt_spit("r", "thirty\n");
	fd = open("r.fence", O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, v1, sizeof(v1)), (ssize_t)sizeof(v1));
	close(fd);
	assert_true(show("r").token == 30);
	st = status_of("r", 1, FW_UNSAFE);
	assert_int_equal(st.verdict, FW_VERIFY_UNKNOWN);
	assert_int_equal(commit("r", 30, "stale\n", &res), FW_STALE);
	assert_int_equal(commit("r", 31, "thirty-one\n", &res), FW_OK);
	image = fwt_slurp("r.fence", &len);
	assert_int_equal(len, FW_FENCE_SIZE);
	assert_non_null(strstr(image, "fencedwrite-fence 1 seq=3 token=30 "));
	assert_non_null(strstr(image, "fencedwrite-fence 2 seq=5 token=31 "));
	free(image);
	st = status_of("r", 1, FW_OK);
	assert_true(st.file_token == 31);
	assert_int_equal(commit("r", 32, "thirty-two\n", &res), FW_OK);
	image = fwt_slurp("r.fence", &len);
	assert_null(strstr(image, "fencedwrite-fence 1 "));
	free(image);
	assert_true(show("r").token == 32);
}

/* A reader learns the token of the very bytes it got. */
static void read_version_gives_the_token_of_the_bytes_read(void **state)
{
	struct fw_result res;
	uint64_t token = 0;
	char *got;
	int out;

	(void)state;
	assert_int_equal(commit("r", 5, "five\n", &res), FW_OK);
	assert_int_equal(fw_claim("r", 7, NULL, &res), FW_OK);
	out = open("out", O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	assert_int_equal(fw_read_version("r", out, NULL, &token, &res), FW_OK);
	close(out);
	assert_true(token == 5);   /* claimed by 7, content still 5's */
	fwt_assert_content("out", "five\n");
	assert_int_equal(commit("r", 7, "seven\n", &res), FW_OK);
	out = open("out", O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(fw_read_version("r", out, NULL, &token, &res), FW_OK);
	close(out);
	assert_true(token == 7);
	fwt_assert_content("out", "seven\n");
	/* changed behind the fence's back: no token can be named */
	fwt_spit("r", "forged\n");
	out = open("out", O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(fw_read_version("r", out, NULL, &token, &res),
	                 FW_UNSAFE);
	close(out);
	got = fwt_slurp("out", NULL);
	assert_string_equal(got, "");
	free(got);
	assert_non_null(strstr(res.message, "not what its fence"));
	/* without asking for the token, any whole version is fine */
	out = open("out", O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(fw_read("r", out, NULL, &res), FW_OK);
	close(out);
	fwt_assert_content("out", "forged\n");
}

/* A commit of TOKEN recorded (inode INO), its rename never made: a
   state a crash leaves. */
static void unfinished_commit(struct fw_record *next, void *arg)
{
	uint64_t token = ((const uint64_t *)arg)[0];

	next->token = next->ftoken = token;
	strcpy(next->op, "commit");
	next->file = FW_FILE_PRESENT;
	next->ino = ((const uint64_t *)arg)[1];
	next->size = 4;
	next->digest = 1;
}

/*
 * The holder of N, whose commit crashed between its fence write and its
 * rename, retries the way it runs: by -- CMD (which claims first) or by
 * --update.  Its claim of its own token changes nothing and is not stale;
 * a claim of a token already committed, the same.
 */
static void claim_of_the_fences_own_token_changes_nothing(void **state)
{
	struct fw_result res;
	uint64_t seq;
	char *err;

	(void)state;
	assert_int_equal(commit("r", 5, "old\n", &res), FW_OK);
	{
		uint64_t how[2] = { 6, 999999 };   /* token, inode */

		fwt_write_next_record("r.fence", unfinished_commit, how);
	}
	seq = show("r").seq;
	assert_int_equal(fw_claim("r", 6, NULL, &res), FW_OK);
	assert_true(show("r").seq == seq);
	assert_int_equal(fwt_run(NULL, NULL, &err, "-t", "6", "r", "--",
	                         "echo", "new", (char *)NULL), 0);
	free(err);
	fwt_assert_content("r", "new\n");
	/* the same -- CMD job again: its claim is the fence's own token,
	   and the same output is done already */
	assert_int_equal(fwt_run(NULL, NULL, &err, "-t", "6", "r", "--",
	                         "echo", "new", (char *)NULL), 0);
	free(err);
	assert_int_equal(fwt_run(NULL, NULL, &err, "-t", "6", "r", "--",
	                         "echo", "other", (char *)NULL), 1);
	free(err);
	fwt_assert_content("r", "new\n");
}

/* A claim does not launder an edit made behind the fence's back. */
static void claim_keeps_an_edit_outside_fencedwrite_visible(void **state)
{
	struct fw_result res;
	struct fw_status st;

	(void)state;
	assert_int_equal(commit("r", 5, "five\n", &res), FW_OK);
	fwt_spit("r", "tampered\n");
	assert_int_equal(fw_claim("r", 6, NULL, &res), FW_OK);
	st = status_of("r", 1, FW_UNSAFE);
	assert_true(st.verdict == FW_VERIFY_REPLACED ||
	            st.verdict == FW_VERIFY_EDITED);
	assert_false(st.file_token_known);
}

/* "Done already" is only said when FILE does hold that content. */
static void done_already_looks_at_files_content(void **state)
{
	struct fw_result res;
	int fd;

	(void)state;
	assert_int_equal(commit("r", 5, "aaaa\n", &res), FW_OK);
	fd = open("r", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "bbbb", 4, 0), 4);
	close(fd);
	assert_int_equal(commit("r", 5, "aaaa\n", &res), FW_STALE);
	fwt_assert_content("r", "bbbb\n");
}

/* A fence of format version 1 names no content: no token for a read. */
static void read_version_on_a_version_1_fence_says_so_at_once(void **state)
{
	char v1[FW_V1_FENCE_SIZE];
	struct fw_record old;
	struct fw_result res;
	uint64_t token;
	int fd;

	(void)state;
	memset(&old, 0, sizeof(old));
	old.seq = 1;
	old.token = 4;
	fw_record_stamp(&old, "commit");
	fwt_v1_image(&old, v1);
	fwt_spit("r", "four\n");
	fd = open("r.fence", O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, v1, sizeof(v1)), (ssize_t)sizeof(v1));
	close(fd);
	fd = open("out", O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(fw_read_version("r", fd, NULL, &token, &res),
	                 FW_UNSAFE);
	close(fd);
	assert_non_null(strstr(res.message, "version 1"));
	assert_null(strstr(res.message, "attempts"));
}

/*
 * A fence named with --fence guards several files: the FILE of one can
 * never vouch for a record about another, so a damaged slot fails closed,
 * and --verify says it cannot tell rather than "unfinished".
 */
static void named_fence_never_reads_past_damage(void **state)
{
	struct fw_result res;
	struct fw_opts opts;
	struct fw_status st;
	int fd;

	(void)state;
	fw_opts_init(&opts);
	opts.fence_path = "shared.fence";
	assert_int_equal(fw_init("A", 0, &opts, &res), FW_OK);
	assert_int_equal(fw_commit_buffer("A", 5, "a5\n", 3, &opts, &res),
	                 FW_OK);
	assert_int_equal(fw_commit_buffer("B", 9, "b9\n", 3, &opts, &res),
	                 FW_OK);
	fw_status_init(&st);
	assert_int_equal(fw_verify("A", &opts, &st, &res), FW_UNSAFE);
	assert_int_equal(st.verdict, FW_VERIFY_UNKNOWN);
	fd = open("shared.fence", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "X", 1, 40), 1);   /* B's record */
	close(fd);
	assert_int_equal(fw_commit_buffer("A", 7, "zombie\n", 7, &opts, &res),
	                 FW_UNSAFE);
	fwt_assert_content("A", "a5\n");
}

/* A blanked slot is damage unless the other record is the fence's first. */
static void blanked_slot_is_damage(void **state)
{
	struct fw_fence_info info;
	struct fw_result res;
	char blank[FW_SLOT_SIZE];
	int fd;

	(void)state;
	memset(blank, ' ', sizeof(blank));
	blank[sizeof(blank) - 1] = '\n';
	assert_int_equal(commit("r", 5, "five\n", &res), FW_OK);  /* seq 1 */
	assert_int_equal(commit("r", 9, "nine\n", &res), FW_OK);  /* seq 2 */
	fd = open("r.fence", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, blank, sizeof(blank), 0), FW_SLOT_SIZE);
	close(fd);
	assert_int_equal(fw_show("r", NULL, &info, &res), FW_UNSAFE);
	assert_int_equal(commit("r", 6, "zombie\n", &res), FW_UNSAFE);
	fwt_assert_content("r", "nine\n");
	/* a new fence's blank second slot is no damage */
	assert_int_equal(fw_init("new", 3, NULL, &res), FW_OK);
	assert_true(show("new").token == 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(claim_turns_older_holders_away_before_the_new_one_commits),
		T(claim_is_stale_below_and_done_already_at_its_own_token),
		T(the_same_commit_twice_is_done_already),
		T(verify_says_what_differs),
		T(status_tells_the_fence_token_from_the_content_token),
		T(version_1_fence_is_read_and_upgraded_by_the_next_change),
		T(read_version_gives_the_token_of_the_bytes_read),
		T(claim_of_the_fences_own_token_changes_nothing),
		T(claim_keeps_an_edit_outside_fencedwrite_visible),
		T(done_already_looks_at_files_content),
		T(read_version_on_a_version_1_fence_says_so_at_once),
		T(named_fence_never_reads_past_damage),
		T(blanked_slot_is_damage),
	};
	return cmocka_run_group_tests_name("claim", tests, NULL, NULL);
}
