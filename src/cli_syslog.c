/* SPDX-License-Identifier: MIT */
/*
 * cli_syslog.c - one line per run to the local syslog socket, for fleets
 * whose cron mail is no log.
 *
 * Not syslog(3): glibc's connects to /dev/log and nowhere else, so a test
 * could only catch its lines as root in a mount namespace of its own; it
 * blocks while the daemon's queue is full, and with LOG_CONS it writes to
 * the console.  A line here is one RFC 3164 datagram, sent without
 * waiting, to /dev/log (journald and rsyslog listen there with a datagram
 * socket) or to FENCEDWRITE_SYSLOG_SOCKET.  A lost line is said on
 * standard error and never changes the exit code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <paths.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cli_report.h"

int cli_syslog_facility(int option, const char *env)
{
	static const char *const on[] = { "1", "yes", "true", "on" };
	static const char *const off[] = { "0", "no", "false", "off" };
	static const struct { const char *name; int facility; } names[] = {
		{ "user", LOG_USER }, { "daemon", LOG_DAEMON },
		{ "local0", LOG_LOCAL0 }, { "local1", LOG_LOCAL1 },
		{ "local2", LOG_LOCAL2 }, { "local3", LOG_LOCAL3 },
		{ "local4", LOG_LOCAL4 }, { "local5", LOG_LOCAL5 },
		{ "local6", LOG_LOCAL6 }, { "local7", LOG_LOCAL7 },
	};

	if (!env || !*env)
		return option ? LOG_USER : -1;
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		if (strcasecmp(env, off[i]) == 0)
			return option ? LOG_USER : -1;   /* --syslog wins */
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
		if (strcasecmp(env, on[i]) == 0)
			return LOG_USER;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(env, names[i].name) == 0)
			return names[i].facility;
	/* Whoever set it wanted a log: a typo must not silence it. */
	fprintf(stderr, PROG ": FENCEDWRITE_SYSLOG='%s' is not 1, 0 or a "
	        "facility (user, daemon, local0 to local7): logging as user\n",
	        env);
	return LOG_USER;
}

/* The longest value of a field, escaped: every field of a line fits. */
#define FIELD_MAX 1536

/* A line being built; what does not fit is cut off. */
struct line {
	char buf[8192];
	size_t len;
};

__attribute__((format(printf, 2, 3)))
static void add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
	if (l->len > sizeof(l->buf) - 1)
		l->len = sizeof(l->buf) - 1;
}

/* Characters that never need quoting in a key=value line. */
static int bare(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || strchr("/._-+:@,%", ch);
}

/*
 * " KEY=VALUE", VALUE in double quotes unless it is all bare characters
 * (logfmt's rule), with '"' and '\' escaped and control characters as
 * \xHH: a file name with a newline cannot forge a second line or field.
 */
static void field(struct line *l, const char *key, const char *value)
{
	const unsigned char *p = (const unsigned char *)value;
	int quote = !*p;
	char v[FIELD_MAX + 8];
	size_t n = 0;

	for (; *p && !quote; p++)
		quote = !bare(*p);
	/* A value cut short ends in "..." inside its quotes, so that one
	   long file name or message cannot cut off the fields after it or
	   leave a quote open. */
	for (p = (const unsigned char *)value; *p; p++) {
		if (n + 4 > FIELD_MAX) {
			memcpy(v + n, "...", 3);
			n += 3;
			quote = 1;
			break;
		}
		if (*p == '"' || *p == '\\')
			n += (size_t)snprintf(v + n, 3, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			n += (size_t)snprintf(v + n, 5, "\\x%02x", *p);
		else
			v[n++] = (char)*p;
	}
	v[n] = '\0';
	add(l, " %s=%s%s%s", key, quote ? "\"" : "", v, quote ? "\"" : "");
}

static const char *action_name(enum action a)
{
	static const char *const names[] = {
		[WRITE] = "write", [READ] = "read", [UPDATE] = "update",
		[APPEND] = "append", [CLAIM] = "claim", [DELETE] = "delete",
		[CHECK] = "check", [SHOW] = "show", [VERIFY] = "verify",
		[INIT] = "init", [CLEAN] = "clean", [DOCTOR] = "doctor",
	};

	return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

/* "<PRI>Mmm dd hh:mm:ss fencedwrite[PID]: WORD file=... host=...". */
static void format_line(struct line *l, const struct cli_outcome *o,
                        int facility)
{
	const struct cli *c = o->cli;
	char when[32], host[256], num[24];
	time_t now = time(NULL);
	struct tm tm;

	/* RFC 3164's timestamp, local time; the C locale's month names. */
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%b %e %H:%M:%S", &tm);
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "-");
	host[sizeof(host) - 1] = '\0';
	add(l, "<%d>%s " PROG "[%ld]: %s", facility | o->severity, when,
	    (long)getpid(), o->word);
	field(l, "file", o->file);
	if (c->token_text) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)c->token);
		field(l, "token", num);
	}
	if (o->fence_known) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)o->fence);
		field(l, "fence", num);
	}
	field(l, "host", host);
	field(l, "action", action_name(c->action));
	snprintf(num, sizeof(num), "%d", o->code);
	field(l, "code", num);
	if (o->sig)
		field(l, "signal", sigabbrev_np(o->sig) ? sigabbrev_np(o->sig)
		                                        : "?");
	if (o->cmd_status >= 0) {
		snprintf(num, sizeof(num), "%d", o->cmd_status);
		field(l, "cmd_status", num);
	}
	if (o->code != FW_OK && o->res->message[0])
		field(l, "msg", o->res->message);
	else if (o->cmd_status >= 0)
		field(l, "msg", "CMD failed; nothing committed");
}

void cli_syslog_send(const struct cli_outcome *o, int facility)
{
	const char *path = getenv("FENCEDWRITE_SYSLOG_SOCKET");
	struct sockaddr_un sa;
	struct line l;
	ssize_t sent;
	int fd, err;

	if (!path || !*path)
		path = _PATH_LOG;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, PROG ": syslog: %s: %s; the outcome was not "
		        "logged\n", path, strerror(ENAMETOOLONG));
		return;
	}
	memcpy(sa.sun_path, path, strlen(path));
	l.len = 0;
	format_line(&l, o, facility);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, PROG ": syslog: socket(AF_UNIX): %s; the outcome "
		        "was not logged\n", strerror(errno));
		return;
	}
	/* MSG_DONTWAIT: a syslog daemon that is stuck or slow must not
	   hold up the job (its lock is released, but cron waits). */
	do
		sent = sendto(fd, l.buf, l.len, MSG_DONTWAIT | MSG_NOSIGNAL,
		              (const struct sockaddr *)&sa, sizeof(sa));
	while (sent < 0 && errno == EINTR);
	err = errno;
	close(fd);
	if (sent < 0)
		fprintf(stderr, PROG ": syslog: sendto(%s): %s; the outcome was "
		        "not logged\n", path, strerror(err));
}
