/*
 * status.c - outcomes and their messages.  The library never prints: it
 * hands the caller one line that names what failed, and the caller decides.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *fw_strerror(int code)
{
	switch (code) {
	case FW_OK: return "committed";
	case FW_STALE: return "stale token";
	case FW_USAGE: return "invalid argument";
	case FW_UNSAFE: return "fence missing, corrupt or unsafe";
	case FW_LOCKED: return "lock not acquired in time";
	case FW_SYSTEM: return "system or I/O error";
	default: return "unknown fencedwrite code";
	}
}

void fw_set_result(struct fw_result *res, int code, const char *fmt, ...)
{
	va_list ap;

	if (!res)
		return;
	res->code = code;
	if (code == FW_OK)
		res->sys_errno = 0;
	va_start(ap, fmt);
	vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
}

void fw_set_sys_result(struct fw_result *res, int err, const char *call,
                       const char *path)
{
	if (!res)
		return;
	res->sys_errno = err;
	fw_set_result(res, FW_SYSTEM, "%s(%s): %s", call, path, strerror(err));
}

int fw_cancelled(const struct fw_opts *opts)
{
	return opts && opts->cancel && *opts->cancel;
}
