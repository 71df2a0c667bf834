/*
 * io.c - the few system calls whose short counts and EINTR every caller
 * would otherwise handle again.
 */
#include <errno.h>
#include <unistd.h>

#include "internal.h"

int fw_write_all(int fd, const void *buf, size_t len,
                 const struct fw_opts *opts)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR && !fw_cancelled(opts))
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The fence update is not interruptible: once begun it must land whole. */
int fw_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

ssize_t fw_pread_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, p + got, len - got, off + (off_t)got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * A failed fsync is never retried as if nothing happened: after EIO the
 * kernel may have dropped the dirty pages, and a second fsync would report
 * success for data that is gone.  Only EINTR (NFS "intr" mounts) is retried.
 */
int fw_fsync(int fd)
{
	int rc;

	do
		rc = fsync(fd);
	while (rc < 0 && errno == EINTR);
	return rc;
}

int fw_fdatasync(int fd)
{
	int rc;

	do
		rc = fdatasync(fd);
	while (rc < 0 && errno == EINTR);
	return rc;
}
