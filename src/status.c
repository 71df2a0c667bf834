/* SPDX-License-Identifier: MIT */
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
	case FW_OK: return "success";
	case FW_STALE: return "stale token";
	case FW_USAGE: return "invalid argument";
	case FW_UNSAFE: return "fence missing, corrupt or unsafe";
	case FW_LOCKED: return "lock not acquired in time";
	case FW_SYSTEM: return "system or I/O error";
	case FW_LOCK_LOST: return "lock lost during the commit";
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
	/* ESTALE alone ("Stale file handle") tells an operator nothing: say
	   what happened and that nothing was written through it. */
	fw_set_result(res, FW_SYSTEM, "%s(%s): %s%s", call, path, strerror(err),
	              err == ESTALE ? " (removed or replaced on the server "
	                              "since it was opened; run again)" : "");
}

int fw_cancelled(const struct fw_opts *opts)
{
	return opts && opts->cancel && *opts->cancel;
}

void fw_result_start(struct fw_result *res)
{
	/* Every field is set on every path: a caller reusing one result
	   must never read the previous call's errno or token. */
	if (res)
		memset(res, 0, sizeof(*res));
}

void fw_result_finish(struct fw_result *res, int code)
{
	if (!res)
		return;
	res->code = code;
	if (code == FW_OK)
		res->message[0] = '\0';
	else if (!res->message[0])
		snprintf(res->message, sizeof(res->message), "%s",
		         fw_strerror(code));
	if (code != FW_SYSTEM)
		res->sys_errno = 0;
	if (!res->fence_read)
		res->fence_token = 0;
}

void fw_result_append(struct fw_result *res, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (!res)
		return;
	n = strlen(res->message);
	va_start(ap, fmt);
	vsnprintf(res->message + n, sizeof(res->message) - n, fmt, ap);
	va_end(ap);
}

int fw_zero_token(struct fw_result *res)
{
	return fw_fail(res, FW_USAGE, "token 0 is never accepted");
}
