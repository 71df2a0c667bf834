/* SPDX-License-Identifier: MIT */
/*
 * tmpfile.c - temporary files and the leftovers of writers that died.
 *
 * New content is written to ".FILE.fwtmp.XXXXXXXXXXXX" in FILE's own
 * directory (rename is atomic only within one filesystem), created with
 * O_EXCL|O_NOFOLLOW so a file or link planted under that name is never
 * written through.
 *
 * A writer holds a write lock on its temporary file for as long as it
 * lives.  SIGKILL or a crash releases the lock, so a cleaner can tell a
 * dead writer's leftover (lock free) from a live writer's file (locked),
 * on any host whose locks reach this filesystem, without trusting clocks
 * or pids.  The cleaner locks a file before it unlinks it; a writer that
 * created its file but was not yet quick enough to lock it finds, once it
 * has the lock, that the name was unlinked (st_nlink == 0) and starts over.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define SUFFIX_LEN 12

static void random_suffix(char out[SUFFIX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[SUFFIX_LEN / 2];

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* No entropy yet (early boot): uniqueness, not secrecy, is
		   needed here, and O_EXCL settles any collision. */
		uint64_t x = (uint64_t)fw_now_ns() ^ ((uint64_t)getpid() << 32) ^
		             (uint64_t)(uintptr_t)r;

		for (size_t i = 0; i < sizeof(r); i++, x >>= 8)
			r[i] = (unsigned char)x;
	}
	for (size_t i = 0; i < sizeof(r); i++) {
		out[2 * i] = hex[r[i] >> 4];
		out[2 * i + 1] = hex[r[i] & 15];
	}
	out[SUFFIX_LEN] = '\0';
}

/*
 * What stands for BASE in its temporary names: BASE itself while
 * ".BASE.fwtmp.XXXXXXXXXXXX" fits in NAME_MAX, else as much of BASE as
 * fits, "~" and a hash of the whole of it.  Every FILE whose fence name
 * fits then has temporary names that fit, and the cleaner derives the
 * same stem to recognise them.
 */
#define STEM_MAX (NAME_MAX - 1 - (int)(sizeof(FW_TMP_MARK) - 1) - SUFFIX_LEN)

static void tmp_stem(const char *base, char stem[NAME_MAX + 1])
{
	size_t len = strlen(base);
	uint32_t h = 2166136261u;   /* FNV-1a */

	if (len <= (size_t)STEM_MAX) {
		memcpy(stem, base, len + 1);
		return;
	}
	for (const char *p = base; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(stem, NAME_MAX + 1, "%.*s~%08x", STEM_MAX - 9, base,
	         (unsigned)h);
}

int fw_tmp_create(int dirfd, const char *base, mode_t mode, char *name,
                  size_t namelen, struct stat *st)
{
	char stem[NAME_MAX + 1];

	tmp_stem(base, stem);
	for (int attempt = 0; attempt < 100; attempt++) {
		char suffix[SUFFIX_LEN + 1];
		int fd, n;

		random_suffix(suffix);
		n = snprintf(name, namelen, ".%s" FW_TMP_MARK "%s", stem, suffix);
		if (n < 0 || (size_t)n >= namelen || n > NAME_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		fd = openat(dirfd, name,
		            O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
		            O_NOCTTY, mode);
		if (fd < 0) {
			if (errno == EEXIST || errno == EINTR)
				continue;
			return -1;
		}
		if (fw_lock_try(fd, 1) < 0 || fstat(fd, st) < 0) {
			int err = errno;

			unlinkat(dirfd, name, 0);
			close(fd);
			errno = err;
			return -1;
		}
		if (st->st_nlink > 0)
			return fd;
		close(fd);  /* a cleaner took it before we locked it */
	}
	errno = EEXIST;
	return -1;
}

int fw_tmp_discard(int dirfd, const char *name, int fd)
{
	int err = 0;

	/* Unlink while still holding the lock, then close: a cleaner that
	   sees the name unlocked may take it for a dead writer's. */
	if (name[0] && unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		err = errno;
	if (fd >= 0)
		close(fd);
	return err;
}

static int is_leftover_of(const char *entry, const char *stem)
{
	size_t blen = strlen(stem), mlen = strlen(FW_TMP_MARK);
	const char *s;

	if (entry[0] != '.' || strncmp(entry + 1, stem, blen) != 0 ||
	    strncmp(entry + 1 + blen, FW_TMP_MARK, mlen) != 0)
		return 0;
	s = entry + 1 + blen + mlen;
	if (strlen(s) != SUFFIX_LEN)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

int fw_tmp_clean(int dirfd, const char *base, const char *shown,
                 unsigned *n, struct fw_result *res)
{
	char stem[NAME_MAX + 1];
	struct dirent *de;
	DIR *dir;
	int dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

	if (dfd < 0)
		return fw_fail_sys(res, errno, "dup", shown);
	dir = fdopendir(dfd);
	if (!dir) {
		int err = errno;

		close(dfd);
		return fw_fail_sys(res, err, "opendir", shown);
	}
	tmp_stem(base, stem);
	rewinddir(dir);
	while ((errno = 0, de = readdir(dir)) != NULL) {
		struct stat st, again;
		int fd;

		if (!is_leftover_of(de->d_name, stem))
			continue;
		fd = openat(dirfd, de->d_name,
		            O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
		            O_NONBLOCK);
		if (fd < 0)
			continue;  /* gone, a planted link, or not ours to open */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    fw_lock_try(fd, 0) == 1 &&
		    fstatat(dirfd, de->d_name, &again, AT_SYMLINK_NOFOLLOW) == 0 &&
		    again.st_dev == st.st_dev && again.st_ino == st.st_ino &&
		    unlinkat(dirfd, de->d_name, 0) == 0)
			(*n)++;
		close(fd);
	}
	if (errno != 0) {
		int err = errno;

		closedir(dir);
		return fw_fail_sys(res, err, "readdir", shown);
	}
	closedir(dir);
	return FW_OK;
}

/*
 * A temporary file's path for messages: NAME in DIR, or, when NAME is
 * empty (it could not be created), the pattern of names for BASE.
 */
const char *fw_tmp_shown(const char *dir, const char *base,
                         const char *name, char *buf, size_t len)
{
	const char *sep = strcmp(dir, ".") ? "/" : "";

	if (!strcmp(dir, "."))
		dir = "";
	if (name[0])
		snprintf(buf, len, "%s%s%s", dir, sep, name);
	else
		snprintf(buf, len, "%s%s.%s" FW_TMP_MARK "XXXXXXXXXXXX", dir,
		         sep, base);
	return buf;
}

int fw_clean(const char *path, const struct fw_opts *opts, unsigned *removed,
             struct fw_result *res)
{
	struct target t;
	unsigned n = 0;
	int rc;

	fw_result_start(res);
	rc = fw_target_start(&t, path, &opts, res);
	if (rc != FW_OK)
		return fw_result_end(res, rc);
	rc = fw_tmp_clean(t.dirfd, t.base, t.dirshown, &n, res);
	if (rc == FW_OK)
		rc = fw_tmp_clean(t.fdirfd, t.fbase, t.fshown, &n, res);
	if (rc == FW_OK && n > 0 && fw_fsync(t.dirfd) < 0)
		rc = fw_fail_sys(res, errno, "fsync directory", t.dirshown);
	if (rc == FW_OK)
		rc = fw_ok(res);
	if (removed)
		*removed = n;
	fw_target_close(&t);
	return fw_result_end(res, rc);
}
