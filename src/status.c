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

int fw_ok(struct fw_result *res)
{
	if (res) {
		res->code = FW_OK;
		res->sys_errno = 0;
		res->message[0] = '\0';
	}
	return FW_OK;
}

int fw_fail(struct fw_result *res, int code, const char *fmt, ...)
{
	if (res) {
		va_list ap;

		res->code = code;
		va_start(ap, fmt);
		vsnprintf(res->message, sizeof(res->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

int fw_fail_sys(struct fw_result *res, int err, const char *call,
                const char *path)
{
	if (res)
		res->sys_errno = err;
	return fw_fail(res, FW_SYSTEM, "%s(%s): %s", call, path, strerror(err));
}

int fw_cancelled(const struct fw_opts *opts)
{
	return opts && opts->cancel && *opts->cancel;
}
