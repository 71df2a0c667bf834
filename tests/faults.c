/*
 * faults.so - LD_PRELOAD shim for tests: records the durable calls of the
 * write path in order, and makes the Nth call of one kind fail with a
 * chosen errno.  Armed by fwt_fault_arm() from a test, or in a child
 * process by FWT_FAULT="call:N:errno" (errno as a number).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

static char armed[32];
static int armed_nth, armed_err, seen;
static char trace[4096];

void fwt_fault_arm(const char *call, int nth, int err);
const char *fwt_fault_trace(void);

void fwt_fault_arm(const char *call, int nth, int err)
{
	snprintf(armed, sizeof(armed), "%s", call ? call : "");
	armed_nth = nth;
	armed_err = err;
	seen = 0;
	trace[0] = '\0';
}

const char *fwt_fault_trace(void)
{
	return trace;
}

__attribute__((constructor)) static void from_env(void)
{
	const char *spec = getenv("FWT_FAULT");
	char call[32];
	int nth, err;

	if (spec && sscanf(spec, "%31[a-z0-9]:%d:%d", call, &nth, &err) == 3)
		fwt_fault_arm(call, nth, err);
}

/* 1 if this call must fail (errno set). */
static int fault(const char *call)
{
	size_t n = strlen(trace);

	if (n + strlen(call) + 2 < sizeof(trace))
		snprintf(trace + n, sizeof(trace) - n, "%s%s", n ? " " : "",
		         call);
	if (armed[0] && strcmp(call, armed) == 0 && ++seen == armed_nth) {
		errno = armed_err;
		return 1;
	}
	return 0;
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

int fsync(int fd)
{
	return fault("fsync") ? -1 : REAL("fsync", int (*)(int))(fd);
}

int fdatasync(int fd)
{
	return fault("fdatasync") ? -1 : REAL("fdatasync", int (*)(int))(fd);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (fault("pwrite"))
		return -1;
	return REAL("pwrite", ssize_t (*)(int, const void *, size_t, off_t))
	       (fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	if (fault("pwrite"))
		return -1;
	return REAL("pwrite64", ssize_t (*)(int, const void *, size_t, off_t))
	       (fd, buf, n, off);
}

int renameat(int a, const char *from, int b, const char *to)
{
	if (fault("renameat"))
		return -1;
	return REAL("renameat", int (*)(int, const char *, int, const char *))
	       (a, from, b, to);
}

int linkat(int a, const char *from, int b, const char *to, int flags)
{
	if (fault("linkat"))
		return -1;
	return REAL("linkat",
	            int (*)(int, const char *, int, const char *, int))
	       (a, from, b, to, flags);
}
