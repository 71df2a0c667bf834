/* SPDX-License-Identifier: MIT */
/*
 * Where a file lives: the mount table analysis on fixtures for every kind
 * of mount that matters, --doctor's verdicts, and writes refused where the
 * fence's lock cannot exclude other hosts.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"   /* fw_lock_open: a lock held through the library */

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
		/* lines read off the NFS lab's client (tests/nfs/) */
		{ "lab-nfs3", "nfs", "/mnt/v3", "server:/export",
		  "vers=3,local_lock=none", FW_SCOPE_SHARED, "lockd" },
		{ "lab-nfs42", "nfs4", "/mnt/v4", "server:/",
		  "vers=4.2,local_lock=none", FW_SCOPE_SHARED, "NFSv4" },
		{ "lab-nfs3-nolock", "nfs", "/mnt/nolock", "server:/export",
		  "vers=3,nolock", FW_SCOPE_UNSAFE, "nolock" },
		{ "lab-nfs3-local-all", "nfs", "/mnt/locall", "server:/export",
		  "vers=3,local_lock=all", FW_SCOPE_UNSAFE, "local_lock=all" },
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
		{ "lustre-flock", "lustre", "/lustre", "10.0.0.1@o2ib:/scratch",
		  "flock", FW_SCOPE_SHARED, "coherent on every client" },
		{ "lustre-localflock", "lustre", "/lustre",
		  "10.0.0.1@o2ib:/scratch", "localflock", FW_SCOPE_UNSAFE,
		  "only this client" },
		{ "lustre-noflock", "lustre", "/lustre", "10.0.0.1@o2ib:/scratch",
		  "", FW_SCOPE_UNSAFE, "fcntl locks fail" },
		{ "ocfs2-o2cb", "ocfs2", "/cluster", "/dev/mapper/shared", "",
		  FW_SCOPE_UNSAFE, "o2cb" },
		{ "ocfs2-localflocks", "ocfs2", "/cluster", "/dev/mapper/shared",
		  "localflocks", FW_SCOPE_UNSAFE, "localflocks" },
		{ "ocfs2-pcmk", "ocfs2", "/cluster", "/dev/mapper/shared",
		  "cluster_stack=pcmk", FW_SCOPE_SHARED, "DLM" },
		{ "gpfs", "gpfs", "/gpfs/fs1", "fs1", "", FW_SCOPE_SHARED,
		  "token manager" },
		{ "9p", "9p", "/mnt/host", "hostshare", "trans=virtio",
		  FW_SCOPE_UNKNOWN, "server's choice" },
		{ "9p-legacy", "9p", "/mnt/host", "hostshare",
		  "trans=virtio,legacy protocol", FW_SCOPE_UNSAFE,
		  "never sent to the server" },
		{ "virtiofs", "virtiofs", "/mnt/shared", "myfs", "",
		  FW_SCOPE_UNKNOWN, "remote locks" },
		{ "rclone", "fuse.rclone", "/mnt/drive", "remote:", "",
		  FW_SCOPE_UNSAFE, "rclone does not implement locks" },
		{ "unknown", "beegfs", "/mnt/beegfs", "beegfs_nodev", "",
		  FW_SCOPE_UNKNOWN, "not known" },
		{ "overlay-nfs-upper", "overlay", "/merged", "overlay", "",
		  FW_SCOPE_UNSAFE, "/srv/nfs/upper is on nfs4" },
		{ "overlay-container", "overlay", "/", "overlay", "",
		  FW_SCOPE_UNKNOWN, "not in this mount table" },
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
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fwt_fit_mount_line(f, ".", "/shared", fstype, "fileserver:/export", super);
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

/* A filesystem whose lock scope is not known to reach every writing host
   fails closed like an unsafe one, unless the caller vouches that every
   writer runs on this host; --doctor gives the same verdict. */
static void writes_refused_where_lock_scope_is_unknown(void **state)
{
	static const char *const types[][2] = {
		{ "beegfs", "rw,cfgFile=/etc/beegfs/beegfs-client.conf" },
		{ "fuse.rclone", "rw,user_id=0,group_id=0" },
		{ "lustre", "rw,localflock" },
	};
	char *err, *out;

	(void)state;
	assert_int_equal(fwt_run("before\n", NULL, NULL, "-t", "1", "f",
	                         (char *)NULL), 0);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		fake_table("odd.mi", types[i][0], types[i][1]);
		assert_int_equal(fwt_run("after\n", NULL, &err, "--mountinfo",
		                         "odd.mi", "-t", "2", "f", (char *)NULL),
		                 3);
		if (!strstr(err, types[i][0]) || !strstr(err, "--local-locks-ok"))
			fail_msg("%s: %s", types[i][0], err);
		free(err);
		assert_int_equal(fwt_run(NULL, NULL, NULL, "--mountinfo", "odd.mi",
		                         "--delete", "-t", "2", "f", (char *)NULL),
		                 3);
		assert_int_equal(fwt_run(NULL, NULL, NULL, "--mountinfo", "odd.mi",
		                         "--init", "g", (char *)NULL), 3);
		assert_int_equal(fwt_run(NULL, &out, NULL, "--mountinfo", "odd.mi",
		                         "--doctor", "f", (char *)NULL), 3);
		assert_non_null(strstr(out, "fencing cannot hold"));
		free(out);
		fwt_assert_content("f", "before\n");
		assert_true(fwt_fence_token("f") == 1);
		assert_int_equal(access("g.fence", F_OK), -1);
	}
	assert_int_equal(fwt_count_tmp("."), 0);
	assert_int_equal(fwt_run(NULL, &out, NULL, "--mountinfo", "odd.mi",
	                         "--local-locks-ok", "--doctor", "f",
	                         (char *)NULL), 0);
	assert_non_null(strstr(out, "--local-locks-ok"));
	free(out);
	assert_int_equal(fwt_run("after\n", NULL, NULL, "--mountinfo", "odd.mi",
	                         "--local-locks-ok", "-t", "2", "f",
	                         (char *)NULL), 0);
	fwt_assert_content("f", "after\n");
}

/*
 * --fence on another filesystem: the fence's filesystem is the one whose
 * locks matter, FILE's the one that says who else can write.  A fence on
 * tmpfs for a FILE on NFS gives every host its own fence.  The table makes
 * the test directory an NFS mount and /dev/shm a tmpfs (which it is).
 */
static void local_fence_for_a_shared_file_is_refused(void **state)
{
	char fence[64], other[64], *err, *out;
	FILE *f;

	(void)state;
	if (access("/dev/shm", W_OK) != 0)
		skip();
	snprintf(fence, sizeof(fence), "/dev/shm/fwt-%ld.fence", (long)getpid());
	snprintf(other, sizeof(other), "/dev/shm/fwt-%ld", (long)getpid());
	unlink(fence);
	unlink(other);
	f = fopen("split.mi", "w");
	assert_non_null(f);
	fwt_fit_mount_line(f, ".", "/shared", "nfs4", "fileserver:/export",
	         "rw,vers=4.2,local_lock=none");
	fwt_fit_mount_line(f, "/dev/shm", "/dev/shm", "tmpfs", "tmpfs", "rw");
	fclose(f);
	assert_int_equal(fwt_run("one\n", NULL, &err, "--mountinfo", "split.mi",
	                         "--fence", fence, "-t", "1", "f", (char *)NULL),
	                 3);
	if (!strstr(err, fence) || !strstr(err, "tmpfs") ||
	    !strstr(err, "nfs4 fileserver:/export") ||
	    !strstr(err, "--local-locks-ok"))
		fail_msg("%s", err);
	free(err);
	assert_int_equal(fwt_run(NULL, NULL, NULL, "--mountinfo", "split.mi",
	                         "--fence", fence, "--init", "f", (char *)NULL),
	                 3);
	assert_int_equal(access("f", F_OK), -1);
	assert_int_equal(access(fence, F_OK), -1);
	/* --doctor says the same, naming both */
	assert_int_equal(fwt_run(NULL, &out, NULL, "--mountinfo", "split.mi",
	                         "--fence", fence, "--doctor", "f",
	                         (char *)NULL), 3);
	if (!strstr(out, "fencing cannot hold") || !strstr(out, "nfs4"))
		fail_msg("%s", out);
	free(out);
	assert_int_equal(fwt_run(NULL, NULL, NULL, "--mountinfo", "split.mi",
	                         "--local-locks-ok", "--fence", fence, "--init",
	                         "f", (char *)NULL), 0);
	assert_int_equal(fwt_run("one\n", NULL, NULL, "--mountinfo", "split.mi",
	                         "--local-locks-ok", "--fence", fence, "-t", "1",
	                         "f", (char *)NULL), 0);
	fwt_assert_content("f", "one\n");
	/* the other way round is safe: a shared fence for a local FILE */
	assert_int_equal(fwt_run(NULL, NULL, NULL, "--mountinfo", "split.mi",
	                         "--fence", "g.fence", "--init", other,
	                         (char *)NULL), 0);
	assert_int_equal(fwt_run("two\n", NULL, NULL, "--mountinfo", "split.mi",
	                         "--fence", "g.fence", "-t", "1", other,
	                         (char *)NULL), 0);
	assert_int_equal(fwt_run(NULL, NULL, NULL, "--mountinfo", "split.mi",
	                         "--fence", "g.fence", "--doctor", other,
	                         (char *)NULL), 0);
	unlink(fence);
	unlink(other);
}

/* Under AddressSanitizer a memory limit would stop the command starting. */
#if defined(__SANITIZE_ADDRESS__)
#define FWT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FWT_ASAN 1
#endif
#endif

/* --mountinfo on something endless is read up to a bound, then refused;
   the memory limit turns a missing bound into a failure, not a swap
   storm. */
static void endless_mount_table_is_refused(void **state)
{
	int fd;
	pid_t writer;
	char *err;
	struct rlimit old;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_AS, &old), 0);
#ifndef FWT_ASAN
	{
		struct rlimit lim = { (rlim_t)1 << 30, old.rlim_max };

		assert_int_equal(setrlimit(RLIMIT_AS, &lim), 0);
	}
#endif
	assert_int_equal(fwt_run(NULL, NULL, &err, "--mountinfo", "/dev/zero",
	                         "--doctor", "f", (char *)NULL), 3);
	if (!strstr(err, "/dev/zero") || !strstr(err, "16 MiB"))
		fail_msg("%s", err);
	free(err);
	/* a FIFO whose writer never stops */
	assert_int_equal(mkfifo("endless", 0600), 0);
	fd = open("endless", O_RDWR);   /* a writer before the reader opens */
	assert_true(fd >= 0);
	writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) {
		static char buf[65536];

		for (;;)
			if (write(fd, buf, sizeof(buf)) < 0)
				_exit(1);
	}
	close(fd);
	assert_int_equal(fwt_run("x\n", NULL, &err, "--mountinfo", "endless",
	                         "-t", "1", "f", (char *)NULL), 3);
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	assert_int_equal(setrlimit(RLIMIT_AS, &old), 0);
	if (!strstr(err, "endless") || !strstr(err, "16 MiB"))
		fail_msg("%s", err);
	free(err);
	assert_int_equal(access("f", F_OK), -1);
}

struct doctor_job {
	int rc;
	struct fw_doctor_report rep;
	struct fw_result res;
};

static void *doctor_job(void *arg)
{
	struct doctor_job *j = arg;

	j->rc = fw_doctor("f", NULL, &j->rep, &j->res);
	return NULL;
}

/*
 * While one thread holds the fence's lock through the library, another
 * runs fw_doctor.  With classic POSIX locks (run as test_mount@noofd) a
 * close() of the fence by the doctor would drop the holder's lock, and a
 * writer in another process would get through.
 */
static void doctor_keeps_another_threads_lock(void **state)
{
	struct doctor_job j;
	struct fw_opts opts;
	struct fw_result res;
	struct fw_lock lk;
	pthread_t t;
	int dirfd;

	(void)state;
	fw_opts_init(&opts);
	assert_int_equal(fwt_run("seven\n", NULL, NULL, "-t", "7", "f",
	                         (char *)NULL), 0);
	dirfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	assert_int_equal(fw_lock_open(dirfd, "f.fence", "f.fence", 1, -1, &opts,
	                              &lk, &res), FW_OK);
	assert_int_equal(pthread_create(&t, NULL, doctor_job, &j), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, FW_OK);
	assert_int_equal(j.rep.lock_granted, 0);
	assert_string_equal(j.rep.lock_kind,
	                    getenv("FWT_EXPECT_CLASSIC") ? "classic" : "ofd");
	/* another process must still find the fence locked */
	assert_int_equal(fwt_run("ten\n", NULL, NULL, "-n", "-t", "10", "f",
	                         (char *)NULL), 4);
	fw_lock_release(&lk);
	close(dirfd);
	fwt_assert_content("f", "seven\n");
	assert_true(fwt_fence_token("f") == 7);
	assert_int_equal(fwt_run("ten\n", NULL, NULL, "-n", "-t", "10", "f",
	                         (char *)NULL), 0);
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
	assert_non_null(strstr(out, getenv("FWT_EXPECT_CLASSIC")
	                            ? "lock:        classic lock, granted"
	                            : "lock:        ofd lock, granted"));
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
		T(writes_refused_where_lock_scope_is_unknown),
		T(local_fence_for_a_shared_file_is_refused),
		T(endless_mount_table_is_refused),
		T(doctor_keeps_another_threads_lock),
		T(doctor_on_this_machines_filesystems),
	};
	return cmocka_run_group_tests_name(getenv("FWT_EXPECT_CLASSIC")
	                                   ? "mount (classic locks)" : "mount",
	                                   tests, NULL, NULL);
}
