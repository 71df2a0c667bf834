/*
 * Where a file lives: the mount table analysis on fixtures for every kind
 * of mount that matters, --doctor's verdicts, and writes refused where the
 * fence's lock cannot exclude other hosts.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

static char *fixture(const char *name)
{
	char path[4096];
	char *text;

	snprintf(path, sizeof(path), "%s/mountinfo/%s.txt",
	         getenv("FWT_FIXTURES"), name);
	text = fwt_slurp(path, NULL);
	if (!text)
		fail_msg("no fixture %s (FWT_FIXTURES is set by make check)",
		         path);
	return text;
}

static void every_fixture_gets_its_verdict(void **state)
{
	static const struct {
		const char *name, *fstype, *mount_point, *source, *options;
		int scope;
		const char *why;
	} cases[] = {
		{ "nfs3-lockd", "nfs", "/shared", "fileserver:/export/shared",
		  "vers=3,local_lock=none", FW_SCOPE_SHARED, "lockd" },
		{ "nfs3-nolock", "nfs", "/shared", "fileserver:/export/shared",
		  "vers=3,nolock", FW_SCOPE_UNSAFE, "nolock" },
		{ "nfs42", "nfs4", "/shared", "fileserver:/export/shared",
		  "vers=4.2,local_lock=none", FW_SCOPE_SHARED, "NFSv4" },
		{ "nfs4-local-all", "nfs4", "/shared", "fileserver:/export/shared",
		  "vers=4.1,local_lock=all", FW_SCOPE_UNSAFE, "local_lock=all" },
		{ "nfs3-local-posix", "nfs", "/shared", "fileserver:/export/shared",
		  "vers=3,local_lock=posix", FW_SCOPE_UNSAFE, "local_lock=posix" },
		{ "nfs3-local-flock", "nfs", "/shared", "fileserver:/export/shared",
		  "vers=3,local_lock=flock", FW_SCOPE_SHARED, "lockd" },
		{ "cifs", "cifs", "/mnt/smb", "//winserver/share", "",
		  FW_SCOPE_SHARED, "byte-range" },
		{ "cifs-nobrl", "cifs", "/mnt/smb", "//winserver/share", "nobrl",
		  FW_SCOPE_UNSAFE, "nobrl" },
		{ "sshfs", "fuse.sshfs", "/mnt/remote", "deploy@buildhost:/srv/out",
		  "", FW_SCOPE_UNSAFE, "sshfs" },
		{ "ext4", "ext4", "/data", "/dev/vdb", "", FW_SCOPE_LOCAL, "local" },
		{ "tmpfs", "tmpfs", "/run/fw", "tmpfs", "", FW_SCOPE_LOCAL, "local" },
		{ "overlay", "overlay", "/merged", "overlay", "", FW_SCOPE_LOCAL,
		  "local" },
		{ "bind", "ext4", "/srv/reports", "/dev/vdb", "", FW_SCOPE_LOCAL,
		  "local" },
		{ "spaces", "nfs", "/mnt/shared reports",
		  "file server:/export/my reports", "vers=3,local_lock=none",
		  FW_SCOPE_SHARED, "lockd" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fw_mount_info m;
		char *text = fixture(cases[i].name);

		assert_int_equal(fw_mount_analyse(text, 4242, 0, 0, &m), FW_OK);
		if (strcmp(m.fstype, cases[i].fstype) ||
		    strcmp(m.mount_point, cases[i].mount_point) ||
		    strcmp(m.source, cases[i].source) ||
		    strcmp(m.options, cases[i].options) ||
		    m.scope != cases[i].scope || !strstr(m.why, cases[i].why))
			fail_msg("%s: got %s %s on '%s' [%s] scope %d: %s",
			         cases[i].name, m.fstype, m.source, m.mount_point,
			         m.options, m.scope, m.why);
		free(text);
	}
}

/* Without a mount id (old kernels), the device decides; of several
   mounts of one device, the last listed is the one paths resolve to. */
static void device_fallback_takes_the_last_mount(void **state)
{
	char *a = fixture("ext4"), *b = fixture("bind"), *both, *last;
	struct fw_mount_info m;

	(void)state;
	/* the bind fixture's last line mounts the same device (254:16) */
	b[strlen(b) - 1] = '\0';
	last = strrchr(b, '\n') + 1;
	assert_true(asprintf(&both, "%s%s\n", a, last) > 0);
	assert_int_equal(fw_mount_analyse(a, 0, 254, 16, &m), FW_OK);
	assert_string_equal(m.mount_point, "/data");
	assert_int_equal(fw_mount_analyse(both, 0, 254, 16, &m), FW_OK);
	assert_string_equal(m.mount_point, "/srv/reports");
	assert_int_equal(fw_mount_analyse(a, 0, 254, 0, &m), FW_OK);
	assert_string_equal(m.mount_point, "/");
	assert_int_equal(fw_mount_analyse(a, 0, 9, 9, &m), FW_UNSAFE);
	assert_int_equal(fw_mount_analyse(a, 99999, 0, 0, &m), FW_UNSAFE);
	assert_int_equal(fw_mount_analyse("", 0, 254, 0, &m), FW_UNSAFE);
	assert_int_equal(fw_mount_analyse("garbage\n- - -\n", 0, 254, 0, &m),
	                 FW_UNSAFE);
	free(a);
	free(b);
	free(both);
}

/* A mount table holding the test directory's own mount, as FSTYPE with
   SUPER options: the write path consults a table it is given. */
static void fake_table(const char *path, const char *fstype,
                       const char *super)
{
	struct statx stx;
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(statx(AT_FDCWD, ".", 0, STATX_MNT_ID, &stx), 0);
	fprintf(f, "%llu 1 %u:%u / /shared rw,relatime - %s "
	        "fileserver:/export %s\n",
	        (unsigned long long)stx.stx_mnt_id, stx.stx_dev_major,
	        stx.stx_dev_minor, fstype, super);
	fclose(f);
}

static void writes_refused_where_locks_stay_on_this_host(void **state)
{
	char *err, *out;

	(void)state;
	assert_int_equal(fwt_run("before\n", NULL, NULL, "-t", "1", "f",
	                         (char *)NULL), 0);
	fake_table("unsafe.mi", "nfs", "rw,vers=3,hard,proto=tcp,"
	           "local_lock=all,addr=192.0.2.10");
	assert_int_equal(fwt_run("after\n", NULL, &err, "--mountinfo",
	                         "unsafe.mi", "-t", "2", "f", (char *)NULL), 3);
	assert_non_null(strstr(err, "local_lock=all"));
	assert_non_null(strstr(err, "fileserver:/export"));
	assert_non_null(strstr(err, "--local-locks-ok"));
	free(err);
	assert_int_equal(fwt_run(NULL, NULL, &err, "--mountinfo", "unsafe.mi",
	                         "--delete", "-t", "2", "f", (char *)NULL), 3);
	free(err);
	assert_int_equal(fwt_run(NULL, NULL, &err, "--mountinfo", "unsafe.mi",
	                         "--init", "g", (char *)NULL), 3);
	free(err);
	fwt_assert_content("f", "before\n");
	assert_true(fwt_fence_token("f") == 1);
	assert_int_equal(fwt_count_tmp("."), 0);
	/* doctor agrees, and says why */
	assert_int_equal(fwt_run(NULL, &out, NULL, "--mountinfo", "unsafe.mi",
	                         "--doctor", "f", (char *)NULL), 3);
	assert_non_null(strstr(out, "fencing cannot hold"));
	assert_non_null(strstr(out, "local_lock=all"));
	free(out);
	assert_int_equal(fwt_run(NULL, &out, NULL, "--mountinfo", "unsafe.mi",
	                         "--doctor", "--json", "f", (char *)NULL), 3);
	assert_non_null(strstr(out, "\"safe\":false"));
	assert_non_null(strstr(out, "\"locks_reach\":\"this host\""));
	free(out);
	/* the explicit override, for single-host setups */
	assert_int_equal(fwt_run("after\n", NULL, NULL, "--mountinfo",
	                         "unsafe.mi", "--local-locks-ok", "-t", "2",
	                         "f", (char *)NULL), 0);
	fwt_assert_content("f", "after\n");
	/* nolock too; and a safe NFS mount lets writes through */
	fake_table("nolock.mi", "nfs", "rw,vers=3,nolock,local_lock=all");
	assert_int_equal(fwt_run("x\n", NULL, NULL, "--mountinfo", "nolock.mi",
	                         "-t", "3", "f", (char *)NULL), 3);
	fake_table("safe.mi", "nfs4", "rw,vers=4.2,local_lock=none");
	assert_int_equal(fwt_run("safe\n", NULL, NULL, "--mountinfo",
	                         "safe.mi", "-t", "3", "f", (char *)NULL), 0);
	assert_int_equal(fwt_run(NULL, &out, NULL, "--mountinfo", "safe.mi",
	                         "--doctor", "f", (char *)NULL), 0);
	assert_non_null(strstr(out, "locks reach: all hosts"));
	free(out);
	/* a table that does not list the mount: cannot tell, fail closed */
	fwt_spit("empty.mi", "");
	assert_int_equal(fwt_run("y\n", NULL, &err, "--mountinfo", "empty.mi",
	                         "-t", "4", "f", (char *)NULL), 3);
	assert_non_null(strstr(err, "not in empty.mi"));
	free(err);
	fwt_assert_content("f", "safe\n");
}

/* The real filesystems of this machine: the test directory's and a
   tmpfs, through the real mount table. */
static void doctor_on_this_machines_filesystems(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(fwt_run(NULL, &out, NULL, "--doctor", "f",
	                         (char *)NULL), 0);
	assert_non_null(strstr(out, "fencing holds"));
	assert_non_null(strstr(out, "lock:        ofd lock, granted"));
	free(out);
	if (access("/dev/shm", W_OK) == 0) {
		assert_int_equal(fwt_run(NULL, &out, NULL, "--doctor", "--json",
		                         "/dev/shm/fwt-doctor", (char *)NULL), 0);
		assert_non_null(strstr(out, "\"fstype\":\"tmpfs\""));
		assert_non_null(strstr(out, "\"safe\":true"));
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(every_fixture_gets_its_verdict),
		T(device_fallback_takes_the_last_mount),
		T(writes_refused_where_locks_stay_on_this_host),
		T(doctor_on_this_machines_filesystems),
	};
	return cmocka_run_group_tests_name("mount", tests, NULL, NULL);
}
