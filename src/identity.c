/* SPDX-License-Identifier: MIT */
/*
 * identity.c - what FILE is (absent, or inode, size and digest), and
 * whether it is what a fence record says it is.
 *
 * A record names the inode its commit renamed into place.  The inode
 * number alone tells a finished commit (FILE is that inode) from an
 * unfinished one (the rename never happened) or a file replaced behind
 * the fence's back; the size and digest tell an edit in place.  The cheap
 * comparison (inode and size, from one stat) decides the commit path; the
 * digest, which reads all of FILE, is only computed where a verdict needs
 * it: --verify, and a damaged record that must not be skipped blindly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int fw_identity_fd(int fd, struct fw_record *rec)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || fw_digest_fd(fd, &rec->size, &rec->digest) < 0)
		return -1;
	rec->file = FW_FILE_PRESENT;
	rec->ino = (uint64_t)st.st_ino;
	return 0;
}

int fw_identity_compare(const struct fw_record *rec, const struct stat *st,
                        int present)
{
	if (rec->file == FW_FILE_UNKNOWN)
		return FW_ID_UNKNOWN;
	if (rec->file == FW_FILE_ABSENT)
		return present ? FW_ID_OTHER_FILE : FW_ID_SAME;
	if (!present)
		return FW_ID_MISSING;
	if ((uint64_t)st->st_ino != rec->ino)
		return FW_ID_OTHER_FILE;
	if ((uint64_t)st->st_size != rec->size)
		return FW_ID_EDITED;
	return FW_ID_SAME;
}

int fw_identity_check(int dirfd, const char *base, const struct fw_record *rec,
                      int *verdict)
{
	struct fw_record now;
	struct stat st;
	int fd, present = 1;

	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return -1;
		present = 0;
	} else if (!S_ISREG(st.st_mode)) {
		*verdict = FW_ID_OTHER_FILE;
		return 0;
	}
	*verdict = fw_identity_compare(rec, &st, present);
	if (*verdict != FW_ID_SAME || rec->file != FW_FILE_PRESENT)
		return 0;
	fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
	            O_NONBLOCK);
	if (fd < 0)
		return -1;
	memset(&now, 0, sizeof(now));
	if (fw_identity_fd(fd, &now) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	close(fd);
	if (now.ino != rec->ino)
		*verdict = FW_ID_OTHER_FILE;   /* replaced while we read */
	else if (now.size != rec->size || now.digest != rec->digest)
		*verdict = FW_ID_EDITED;
	return 0;
}
