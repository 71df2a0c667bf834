/* SPDX-License-Identifier: MIT */
/*
 * noofd.so - LD_PRELOAD shim for tests: the kernel "has no OFD locks"
 * (as some NFSv3 clients answer), so the library must fall back to classic
 * POSIX locks and its in-process guard.  Counts the refusals so a test can
 * tell the fallback really ran.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>

unsigned long fwt_noofd_refusals;

static int refuse(int cmd)
{
	return cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK;
}

static int forward(const char *name, int fd, int cmd, void *arg)
{
	int (*real)(int, int, ...) =
		(int (*)(int, int, ...))dlsym(RTLD_NEXT, name);

	if (refuse(cmd)) {
		__atomic_add_fetch(&fwt_noofd_refusals, 1, __ATOMIC_RELAXED);
		errno = EINVAL;
		return -1;
	}
	return real(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...);
int fcntl64(int fd, int cmd, ...);

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return forward("fcntl", fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return forward("fcntl64", fd, cmd, arg);
}
