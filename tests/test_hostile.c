/*
 * Hostile input and hostile neighbours, through the command:
 *
 *   - an unprivileged writer in a sticky, world-writable directory where
 *     another user planted links and files at FILE, at the fence and at
 *     names that look like temporary files;
 *   - permission denied on the directory, on FILE and on the fence;
 *   - a read-only filesystem and a full one (small tmpfs mounts);
 *   - a directory, a FIFO or a device where FILE should be.
 *
 * Needs root to switch users and mount; skips with a message otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define VICTIM 65534    /* nobody: the writer */
#define ATTACKER 65533  /* another local user */

static void need_root(void)
{
	if (geteuid() != 0) {
		print_message("skipped: needs root to switch users and mount\n");
		skip();
	}
}

/* Run the command as UID with STDIN_DATA; stderr into *ERR. */
static int run_as(uid_t uid, const char *stdin_data, char **err, ...)
{
	char *argv[16];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)"fencedwrite";
	va_start(ap, err);
	while ((argv[n] = va_arg(ap, char *)) != NULL)
		assert_true(++n < 15);
	va_end(ap);
	return fwt_runv_as(uid, stdin_data, NULL, err, argv);
}

/* A world-writable sticky directory "shared", as /tmp is. */
static void make_shared(void)
{
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("shared", 0755), 0);
	assert_int_equal(chmod("shared", 01777), 0);
}

static void plant(const char *path, const char *data, uid_t owner)
{
	fwt_spit(path, data);
	assert_int_equal(chown(path, owner, owner), 0);
}

static void plant_link(const char *target, const char *path, uid_t owner)
{
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(lchown(path, owner, owner), 0);
}

static void assert_refused(int rc, int want, const char *err,
                           const char *needle)
{
	if (rc != want)
		fail_msg("exit %d, want %d: %s", rc, want, err);
	assert_true(strncmp(err, "fencedwrite: ", 13) == 0);
	if (!strstr(err, needle))
		fail_msg("message '%s' lacks '%s'", err, needle);
}

/* Run CALL (which fills err), then check its refusal. */
#define REFUSED(call, want, needle)                                       \
	do {                                                               \
		int rc_ = (call);                                          \
		assert_refused(rc_, want, err, needle);                    \
		free(err);                                                 \
	} while (0)

static void planted_links_never_redirect_a_write(void **state)
{
	char *err;

	(void)state;
	need_root();
	make_shared();
	fwt_spit("precious", "root's data\n");
	assert_int_equal(chmod("precious", 0666), 0);   /* even if writable */

	/* a link at FILE */
	plant_link("../precious", "shared/report", ATTACKER);
	REFUSED(run_as(VICTIM, "evil\n", &err, "-t", "5",
	                      "shared/report", (char *)NULL),
	        3, "symbolic link");

	/* a link at the fence, FILE absent */
	plant_link("../precious", "shared/out.fence", ATTACKER);
	REFUSED(run_as(VICTIM, "evil\n", &err, "-t", "5", "shared/out",
	                      (char *)NULL),
	        3, "symbolic link");
	REFUSED(run_as(VICTIM, NULL, &err, "--init", "shared/out",
	                      (char *)NULL),
	        3, "already exists");
	REFUSED(run_as(VICTIM, NULL, &err, "--show", "shared/out",
	                      (char *)NULL),
	        3, "symbolic link");

	fwt_assert_content("precious", "root's data\n");
	assert_null(fwt_slurp("shared/out", NULL));
	assert_int_equal(fwt_count_tmp("shared"), 0);
}

static void planted_temporary_names_are_neither_used_nor_removed(void **state)
{
	char name[64];
	struct stat st;

	(void)state;
	need_root();
	make_shared();
	/* links and files at names shaped like temporary files */
	for (int i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "shared/.data.fwtmp.%012x", i);
		if (i % 2)
			plant_link("../precious", name, ATTACKER);
		else
			plant(name, "planted\n", ATTACKER);
	}
	fwt_spit("precious", "root's data\n");
	assert_int_equal(run_as(VICTIM, "mine\n", NULL, "-t", "1",
	                        "shared/data", (char *)NULL), 0);
	fwt_assert_content("shared/data", "mine\n");
	assert_int_equal(stat("shared/data", &st), 0);
	assert_int_equal(st.st_uid, VICTIM);
	/* the victim's clean removes none of another user's files */
	assert_int_equal(run_as(VICTIM, NULL, NULL, "--clean", "shared/data",
	                        (char *)NULL), 0);
	assert_int_equal(fwt_count_tmp("shared"), 16);
	fwt_assert_content("precious", "root's data\n");
}

/* Another user's fence is not writable by us: refuse, change nothing. */
static void fence_owned_by_someone_else_is_refused(void **state)
{
	char *err;

	(void)state;
	need_root();
	make_shared();
	assert_int_equal(fwt_run("theirs\n", NULL, NULL, "-t", "9",
	                         "shared/r", (char *)NULL), 0);
	assert_int_equal(chown("shared/r", ATTACKER, ATTACKER), 0);
	assert_int_equal(chown("shared/r.fence", ATTACKER, ATTACKER), 0);
	REFUSED(run_as(VICTIM, "mine\n", &err, "-t", "10", "shared/r",
	                      (char *)NULL),
	        5, "open(shared/r.fence): Permission denied");
	fwt_assert_content("shared/r", "theirs\n");
	assert_int_equal(fwt_count_tmp("shared"), 0);
}

static void permission_denied_at_each_level(void **state)
{
	char *err;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("d", 0755), 0);       /* not writable by us */
	assert_int_equal(fwt_run("root\n", NULL, NULL, "-t", "1", "d/f",
	                         (char *)NULL), 0);
	assert_int_equal(chmod("d/f.fence", 0666), 0);
	REFUSED(run_as(VICTIM, "x\n", &err, "-t", "2", "d/f", (char *)NULL),
	        5, "open(d/.f.fwtmp.XXXXXXXXXXXX): Permission denied");
	/* directory writable, fence not */
	assert_int_equal(chmod("d", 0777), 0);
	assert_int_equal(chmod("d/f.fence", 0644), 0);
	REFUSED(run_as(VICTIM, "x\n", &err, "-t", "2", "d/f", (char *)NULL),
	        5, "Permission denied");
	/* fence not even readable */
	assert_int_equal(chmod("d/f.fence", 0600), 0);
	REFUSED(run_as(VICTIM, NULL, &err, "--show", "d/f", (char *)NULL),
	        5, "open(d/f.fence): Permission denied");
	fwt_assert_content("d/f", "root\n");
	/* FILE itself read-only: a rename replaces it, as an editor would */
	assert_int_equal(chmod("d/f.fence", 0666), 0);
	assert_int_equal(chmod("d/f", 0444), 0);
	assert_int_equal(run_as(VICTIM, "x\n", NULL, "-t", "2", "d/f", (char *)NULL), 0);
	fwt_assert_content("d/f", "x\n");
	assert_int_equal(fwt_count_tmp("d"), 0);
}

static int mount_tmpfs(const char *dir, const char *opts)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -1;
	return mount("tmpfs", dir, "tmpfs", 0, opts);
}

static void read_only_filesystem_fails_with_5_and_changes_nothing(void **state)
{
	char *err;

	(void)state;
	need_root();
	if (mount_tmpfs("ro", "size=1m") != 0) {
		print_message("skipped: cannot mount tmpfs: %s\n",
		              strerror(errno));
		skip();
	}
	assert_int_equal(fwt_run("before\n", NULL, NULL, "-t", "1", "ro/f",
	                         (char *)NULL), 0);
	assert_int_equal(mount("tmpfs", "ro", "tmpfs",
	                       MS_REMOUNT | MS_RDONLY, NULL), 0);
	REFUSED(fwt_run("after\n", NULL, &err, "-t", "2", "ro/f",
	                       (char *)NULL),
	        5, "Read-only file system");
	REFUSED(fwt_run(NULL, NULL, &err, "--delete", "-t", "2", "ro/f",
	                       (char *)NULL),
	        5, "Read-only file system");
	assert_int_equal(fwt_run(NULL, NULL, NULL, "--check", "-t", "2", "ro/f",
	                         (char *)NULL), 0);
	fwt_assert_content("ro/f", "before\n");
	assert_true(fwt_fence_token("ro/f") == 1);
	assert_int_equal(umount("ro"), 0);
}

static void full_disk_fails_with_5_and_leaves_no_trace(void **state)
{
	size_t big = 256 * 1024;
	char *data = malloc(big + 1), *err;

	(void)state;
	need_root();
	if (mount_tmpfs("full", "size=64k") != 0) {
		print_message("skipped: cannot mount tmpfs: %s\n",
		              strerror(errno));
		skip();
	}
	assert_int_equal(fwt_run("small\n", NULL, NULL, "-t", "1", "full/f",
	                         (char *)NULL), 0);
	memset(data, 'x', big);
	data[big] = '\0';
	REFUSED(fwt_run(data, NULL, &err, "-t", "2", "full/f",
	                       (char *)NULL),
	        5, "No space left on device");
	fwt_assert_content("full/f", "small\n");
	assert_true(fwt_fence_token("full/f") == 1);
	assert_int_equal(fwt_count_tmp("full"), 0);
	/* and the space is given back: a small write still fits */
	assert_int_equal(fwt_run("next\n", NULL, NULL, "-t", "2", "full/f",
	                         (char *)NULL), 0);
	assert_int_equal(umount("full"), 0);
	free(data);
}

static void directory_fifo_or_device_at_file_is_refused(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(mkdir("adir", 0755), 0);
	assert_int_equal(mkfifo("afifo", 0644), 0);
	REFUSED(fwt_run("x", NULL, &err, "-t", "1", "adir",
	                       (char *)NULL),
	        3, "not a regular file");
	REFUSED(fwt_run("x", NULL, &err, "-t", "1", "afifo",
	                       (char *)NULL),
	        3, "not a regular file");
	REFUSED(fwt_run(NULL, NULL, &err, "--init", "afifo",
	                       (char *)NULL),
	        3, "not a regular file");
	if (geteuid() == 0) {
		assert_int_equal(mknod("anull", S_IFCHR | 0666,
		                       makedev(1, 3)), 0);
		REFUSED(fwt_run("x", NULL, &err, "-t", "1", "anull",
		                       (char *)NULL),
	        3, "not a regular file");
		assert_int_equal(mknod("anull2.fence", S_IFCHR | 0666,
		                       makedev(1, 3)), 0);
		REFUSED(fwt_run("x", NULL, &err, "-t", "1", "anull2",
		                       (char *)NULL),
	        3, "not a regular file");
	}
	assert_int_equal(fwt_count_tmp("."), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(planted_links_never_redirect_a_write),
		T(planted_temporary_names_are_neither_used_nor_removed),
		T(fence_owned_by_someone_else_is_refused),
		T(permission_denied_at_each_level),
		T(read_only_filesystem_fails_with_5_and_changes_nothing),
		T(full_disk_fails_with_5_and_leaves_no_trace),
		T(directory_fifo_or_device_at_file_is_refused),
	};
	return cmocka_run_group_tests_name("hostile", tests, NULL, NULL);
}
