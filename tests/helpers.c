/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"

struct fwt_dir {
	char path[4096];
	char old[4096];
};

int fwt_setup(void **state)
{
	struct fwt_dir *d = calloc(1, sizeof(*d));
	const char *tmp = getenv("TMPDIR");

	assert_non_null(d);
	snprintf(d->path, sizeof(d->path), "%s/fwtest.XXXXXX",
	         tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(d->path));
	assert_non_null(getcwd(d->old, sizeof(d->old)));
	assert_int_equal(chdir(d->path), 0);
	*state = d;
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

int fwt_teardown(void **state)
{
	struct fwt_dir *d = *state;

	if (chdir(d->old) != 0)
		return -1;
	nftw(d->path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
	return 0;
}

char *fwt_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

void fwt_spit(const char *path, const char *data)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, strlen(data), f), strlen(data));
	assert_int_equal(fclose(f), 0);
}

void fwt_assert_content(const char *path, const char *want)
{
	char *got = fwt_slurp(path, NULL);

	if (!got)
		fail_msg("%s does not exist", path);
	assert_string_equal(got, want);
	free(got);
}

uint64_t fwt_fence_token(const char *path)
{
	struct fw_fence_info info;
	struct fw_result res;
	int rc = fw_show(path, NULL, &info, &res);

	if (rc != FW_OK)
		fail_msg("fw_show(%s): %s", path, res.message);
	return info.token;
}

int fwt_count_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, ".fwtmp."))
			n++;
	closedir(d);
	return n;
}

static const char *bin(void)
{
	const char *b = getenv("FW_BIN");

	if (!b || !*b)
		fail_msg("FW_BIN is not set: run the suites through make check");
	return b;
}

static int open_input(const char *data)
{
	char name[] = "/tmp/fwt-in.XXXXXX";
	int fd;

	if (!data)
		return open("/dev/null", O_RDONLY);
	fd = mkstemp(name);
	assert_true(fd >= 0);
	unlink(name);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

pid_t fwt_spawn(const char *stdin_data, char *const argv[])
{
	int in = open_input(stdin_data);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in, 0);
		execv(bin(), argv);
		_exit(127);
	}
	close(in);
	return pid;
}

pid_t fwt_spawn_inherit(char *const argv[])
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* Keep the suite's output clean, without filling a closed
		   standard input with /dev/null. */
		int null = open("/dev/null", O_WRONLY);

		if (null == 0) {
			null = fcntl(0, F_DUPFD, 3);
			close(0);
		}
		dup2(null, 2);
		execv(bin(), argv);
		_exit(127);
	}
	return pid;
}

int fwt_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		assert_int_equal(errno, EINTR);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static char *slurp_fd(int fd)
{
	struct stat st;
	char *buf;

	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0),
	                 (ssize_t)st.st_size);
	buf[st.st_size] = '\0';
	return buf;
}

int fwt_runv(const char *stdin_data, char **out, char **err,
             char *const argv[])
{
	return fwt_runv_as((uid_t)-1, stdin_data, out, err, argv);
}

int fwt_runv_as(uid_t uid, const char *stdin_data, char **out, char **err,
                char *const argv[])
{
	return fwt_runv_as_groups(uid, (gid_t)uid, NULL, 0, stdin_data, out,
	                          err, argv);
}

int fwt_runv_as_groups(uid_t uid, gid_t gid, const gid_t *groups,
                       size_t ngroups, const char *stdin_data, char **out,
                       char **err, char *const argv[])
{
	char oname[] = "/tmp/fwt-out.XXXXXX", ename[] = "/tmp/fwt-err.XXXXXX";
	int ofd = mkstemp(oname), efd = mkstemp(ename);
	int in = open_input(stdin_data), rc;
	pid_t pid;

	assert_true(ofd >= 0 && efd >= 0);
	unlink(oname);
	unlink(ename);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in, 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		if (uid != (uid_t)-1 &&
		    (setgroups(ngroups, groups) || setgid(gid) || setuid(uid)))
			_exit(120);
		execv(bin(), argv);
		_exit(127);
	}
	close(in);
	rc = fwt_wait(pid);
	if (out)
		*out = slurp_fd(ofd);
	if (err)
		*err = slurp_fd(efd);
	close(ofd);
	close(efd);
	return rc;
}

int fwt_run(const char *stdin_data, char **out, char **err, ...)
{
	char *argv[64];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)"fencedwrite";
	va_start(ap, err);
	while ((argv[n] = va_arg(ap, char *)) != NULL)
		assert_true(++n < 63);
	va_end(ap);
	return fwt_runv(stdin_data, out, err, argv);
}

void fwt_lock_in_child(const char *path, int classic, struct fwt_holder *h)
{
	int ready[2], release[2];
	char c;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	h->pid = fork();
	assert_true(h->pid >= 0);
	if (h->pid == 0) {
		struct flock fl;
		int fd = open(path, O_RDWR);

		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		if (fd < 0)
			_exit(1);
		/* Under noofd.so OFD locks are refused: hold a classic one. */
		if (fcntl(fd, classic ? F_SETLKW : F_OFD_SETLKW, &fl) &&
		    fcntl(fd, F_SETLKW, &fl))
			_exit(1);
		close(release[1]);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		(void)!read(release[0], &c, 1);   /* until the parent lets go */
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	h->release_fd = release[1];
}

void fwt_unlock(struct fwt_holder *h)
{
	close(h->release_fd);
	assert_int_equal(fwt_wait(h->pid), 0);
}

/*
 * /proc/locks lists a blocked request as "N: -> OFDLCK ... MAJ:MIN:INO ...".
 * Polling it is waiting for a fact, not guessing a delay.
 */
void fwt_wait_for_waiter(const char *path)
{
	struct stat st;
	char needle[64], line[256];

	assert_int_equal(stat(path, &st), 0);
	snprintf(needle, sizeof(needle), ":%lu ", (unsigned long)st.st_ino);
	for (int i = 0; i < 20000; i++) {
		FILE *f = fopen("/proc/locks", "r");
		int found = 0;

		assert_non_null(f);
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, "->") && strstr(line, needle);
		fclose(f);
		if (found)
			return;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	fail_msg("nobody started waiting for the lock on %s", path);
}

void fwt_fit_mount_line(FILE *f, const char *dir, const char *point,
                        const char *fstype, const char *source,
                        const char *super)
{
	struct statx stx;

	assert_int_equal(statx(AT_FDCWD, dir, 0, STATX_MNT_ID, &stx), 0);
	fprintf(f, "%llu 1 %u:%u / %s rw,relatime - %s %s %s\n",
	        (unsigned long long)stx.stx_mnt_id, stx.stx_dev_major,
	        stx.stx_dev_minor, point, fstype, source, super);
}

void fwt_v1_image(const struct fw_record *cur, char *image)
{
	char prev_image[FW_V1_FENCE_SIZE];
	struct fw_record prev = *cur;
	size_t half = FW_V1_FENCE_SIZE / 2, at = (size_t)(cur->seq % 2) * half;

	prev.seq = cur->seq - 1;
	prev.token = cur->token - 1;
	fw_record_image_v1(&prev, prev_image);
	fw_record_image_v1(cur, image);
	memcpy(image + half - at, prev_image + half - at, half);
}

void fwt_write_next_record(const char *fence,
                           void (*edit)(struct fw_record *, void *),
                           void *arg)
{
	char image[FW_FENCE_SIZE + 1], slot[FW_SLOT_SIZE], why[160];
	struct fw_record next;
	struct fw_fence f;
	int fd = open(fence, O_RDWR);
	ssize_t n;

	assert_true(fd >= 0);
	n = pread(fd, image, sizeof(image), 0);
	assert_int_equal(fw_record_parse(image, (size_t)n, &f, why,
	                                 sizeof(why)), 0);
	next = f.cur;
	next.seq = fw_record_next_seq(&f);
	edit(&next, arg);
	fw_record_format(&next, slot);
	assert_int_equal(pwrite(fd, slot, sizeof(slot),
	                        fw_record_offset(next.seq)),
	                 (ssize_t)sizeof(slot));
	close(fd);
}
