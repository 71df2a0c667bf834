/* SPDX-License-Identifier: MIT */
/*
 * target.c - where FILE and its fence are: each directory opened once, so
 * that every later step is relative to a descriptor and a concurrent rename
 * of a path component cannot redirect the operation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define FENCE_SUFFIX ".fence"

/* Split PATH into a directory and a last component that names a file. */
static int split(const char *path, char *dir, size_t dirlen, char *base,
                 struct fw_result *res)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 1;

	size_t nlen = strlen(name);

	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return fw_fail(res, FW_USAGE, "%s: not a file name", path);
	if (nlen > NAME_MAX)
		return fw_fail(res, FW_USAGE, "%s: a file name is at most %d "
		               "bytes", path, NAME_MAX);
	if (dlen + 1 > dirlen)
		return fw_fail_sys(res, ENAMETOOLONG, "open", path);
	if (!slash)
		dir[0] = '.', dlen = 1;
	else if (dlen == 0)
		dir[0] = '/', dlen = 1;
	else
		memcpy(dir, path, dlen);
	dir[dlen] = '\0';
	memcpy(base, name, nlen + 1);   /* base holds NAME_MAX + 1 */
	return FW_OK;
}

static int open_dir(const char *dir, struct fw_result *res)
{
	int fd;

	do
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		fw_set_sys_result(res, errno, "open", dir);
	return fd;
}

void fw_target_close(struct target *t)
{
	if (t->fdirfd >= 0 && t->fdirfd != t->dirfd)
		close(t->fdirfd);
	if (t->dirfd >= 0)
		close(t->dirfd);
	t->dirfd = t->fdirfd = -1;
}

int fw_target_open(struct target *t, const char *path,
                       const struct fw_opts *opts, struct fw_result *res)
{
	int rc;

	t->dirfd = t->fdirfd = -1;
	t->path = path;
	t->fence_local = 0;
	t->named = opts->fence_path != NULL;
	if (!path || !*path)
		return fw_fail(res, FW_USAGE, "no file named");
	rc = split(path, t->dirshown, sizeof(t->dirshown), t->base, res);
	if (rc != FW_OK)
		return rc;
	t->dirfd = open_dir(t->dirshown, res);
	if (t->dirfd < 0)
		return FW_SYSTEM;
	if (!opts->fence_path) {
		size_t blen = strlen(t->base), plen = strlen(path);

		if (blen + sizeof(FENCE_SUFFIX) > sizeof(t->fbase)) {
			fw_target_close(t);
			return fw_fail(res, FW_USAGE, "%s: the name is too long "
			               "for a fence beside it (at most %d bytes "
			               "with \"" FENCE_SUFFIX "\"); name a fence "
			               "with a shorter name (--fence PATH)",
			               path, NAME_MAX);
		}
		if (plen + sizeof(FENCE_SUFFIX) > sizeof(t->fshown)) {
			fw_target_close(t);
			return fw_fail_sys(res, ENAMETOOLONG, "open", path);
		}
		memcpy(t->fbase, t->base, blen);
		memcpy(t->fbase + blen, FENCE_SUFFIX, sizeof(FENCE_SUFFIX));
		memcpy(t->fshown, path, plen);
		memcpy(t->fshown + plen, FENCE_SUFFIX, sizeof(FENCE_SUFFIX));
		t->fdirfd = t->dirfd;
		return FW_OK;
	}
	snprintf(t->fshown, sizeof(t->fshown), "%s", opts->fence_path);
	{
		char fdir[PATH_MAX];
		struct stat a, b;

		rc = split(opts->fence_path, fdir, sizeof(fdir), t->fbase, res);
		if (rc == FW_OK)
			t->fdirfd = open_dir(fdir, res);
		if (rc != FW_OK || t->fdirfd < 0) {
			fw_target_close(t);
			return rc != FW_OK ? rc : FW_SYSTEM;
		}
		if (fstat(t->dirfd, &a) == 0 && fstat(t->fdirfd, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
		    !strcmp(t->base, t->fbase)) {
			fw_target_close(t);
			return fw_fail(res, FW_USAGE,
			               "%s: the fence cannot be the file itself",
			               path);
		}
	}
	return FW_OK;
}

/*
 * Look at FILE without following it.  0 and *ST when it is a regular file,
 * 1 when absent, else a failure code.
 */
int fw_file_state(const struct target *t, struct stat *st,
                  struct fw_result *res)
{
	if (fstatat(t->dirfd, t->base, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 1;
		return fw_fail_sys(res, errno, "stat", t->path);
	}
	/* A link in a shared directory may have been planted to make us
	   write somewhere unfenced; a rename would replace the link itself.
	   Either way the caller meant something else: refuse. */
	if (S_ISLNK(st->st_mode))
		return fw_fail(res, FW_UNSAFE,
		               "%s is a symbolic link; fencedwrite neither "
		               "follows nor replaces links: name the file it "
		               "points to", t->path);
	if (!S_ISREG(st->st_mode))
		return fw_fail(res, FW_UNSAFE, "%s is not a regular file",
		               t->path);
	return 0;
}

/* What every action with a token does first: a clean result, token 0
   refused, then what every entry point does. */
int fw_target_begin(struct target *t, const char *path, uint64_t token,
                    const struct fw_opts **opts, struct fw_result *res)
{
	fw_result_start(res);
	if (token == 0)
		return fw_zero_token(res);
	return fw_target_start(t, path, opts, res);
}

/* What every entry point does first: defaults, FILE's directory and fence
   located. */
int fw_target_start(struct target *t, const char *path,
                    const struct fw_opts **opts, struct fw_result *res)
{
	if (!*opts)
		*opts = &fw_default_opts;
	return fw_target_open(t, path, *opts, res);
}
