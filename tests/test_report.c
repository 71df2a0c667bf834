/* SPDX-License-Identifier: MIT */
/*
 * What the command reports besides its exit code: one syslog line per run
 * (--syslog, FENCEDWRITE_SYSLOG), caught on a real datagram socket the
 * test binds, and node_exporter textfile metrics (--metrics,
 * FENCEDWRITE_METRICS), checked by a strict parser of the text exposition
 * format (and by promtool where it is installed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define RUN(in, out, err, ...) fwt_run(in, out, err, __VA_ARGS__, (char *)NULL)

/* ---- syslog ----------------------------------------------------------- */

/* A datagram socket at ./log, named by FENCEDWRITE_SYSLOG_SOCKET for the
   commands this test runs. */
static int bind_log(void)
{
	struct sockaddr_un sa;
	char cwd[PATH_MAX];
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	assert_true(snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/log", cwd) <
	            (int)sizeof(sa.sun_path));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(setenv("FENCEDWRITE_SYSLOG_SOCKET", sa.sun_path, 1), 0);
	return fd;
}

static void unset_env(void)
{
	unsetenv("FENCEDWRITE_SYSLOG_SOCKET");
	unsetenv("FENCEDWRITE_SYSLOG");
	unsetenv("FENCEDWRITE_METRICS");
}

/*
 * The one datagram the last run sent (the run has exited, so it is
 * queued), NUL-terminated in BUF; and no second one.
 */
static void recv_one(int fd, char *buf, size_t size)
{
	ssize_t n = recv(fd, buf, size - 1, MSG_DONTWAIT);

	if (n < 0)
		fail_msg("no syslog datagram: %s", strerror(errno));
	buf[n] = '\0';
	assert_int_equal(recv(fd, buf + n + 1 < buf + size ? buf + n + 1 : buf,
	                      1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

static void assert_nothing_sent(int fd)
{
	char c;

	assert_int_equal(recv(fd, &c, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

/* LINE has " KEY=VALUE" as a whole field (followed by a space or the
   end). */
static void assert_field(const char *line, const char *key, const char *value)
{
	char want[PATH_MAX + 64];
	const char *p;
	size_t n;

	n = (size_t)snprintf(want, sizeof(want), " %s=%s", key, value);
	p = strstr(line, want);
	if (!p || (p[n] != ' ' && p[n] != '\0'))
		fail_msg("no field %s in: %s", want + 1, line);
}

/*
 * "<PRI>Mmm dd hh:mm:ss fencedwrite[PID]: WORD ..." (RFC 3164, as glibc's
 * syslog(3) sends it to /dev/log); the PID, or any PID when 0.
 */
static void assert_header(const char *line, int pri, long pid,
                          const char *word)
{
	char head[32], mon[4], tail[64];
	int day, h, m, s, got;
	long p;

	snprintf(head, sizeof(head), "<%d>", pri);
	if (strncmp(line, head, strlen(head)) != 0)
		fail_msg("priority is not %s: %s", head, line);
	line += strlen(head);
	assert_int_equal(sscanf(line, "%3s %d %d:%d:%d%n", mon, &day, &h, &m,
	                        &s, &got), 5);
	assert_int_equal(got, 15);
	assert_true(strlen(mon) == 3 &&
	            strstr("JanFebMarAprMayJunJulAugSepOctNovDec", mon));
	assert_true(day >= 1 && day <= 31 && h < 24 && m < 60 && s < 61);
	assert_true(line[3] == ' ' && line[6] == ' ' && line[15] == ' ');
	assert_int_equal(sscanf(line + 16, "fencedwrite[%ld]: %63s", &p, tail),
	                 2);
	if (pid)
		assert_int_equal(p, pid);
	assert_string_equal(tail, word);
	assert_null(strchr(line, '\n'));
}

static void here(const char *name, char *out, size_t size)
{
	char cwd[PATH_MAX];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_true(snprintf(out, size, "%s/%s", cwd, name) < (int)size);
}

static void syslog_line_per_outcome_with_priority_and_fields(void **state)
{
	char line[9000], path[PATH_MAX], host[256];
	char *argv[] = { "fencedwrite", "--syslog", "-t", "7", "r", NULL };
	struct fwt_holder h;
	int fd = bind_log();
	pid_t pid;
	char *err;

	(void)state;
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	here("r", path, sizeof(path));

	/* committed: user.info (8 + 6) */
	pid = fwt_spawn("A\n", argv);
	assert_int_equal(fwt_wait(pid), 0);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 14, pid, "committed");
	assert_field(line, "file", path);
	assert_field(line, "token", "7");
	assert_field(line, "fence", "7");
	assert_field(line, "host", host);
	assert_field(line, "code", "0");
	assert_null(strstr(line, " msg="));

	/* stale: user.warning, the token and the fence's token */
	assert_int_equal(RUN("B\n", NULL, &err, "--syslog", "-t", "5", "r"), 1);
	free(err);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 12, 0, "stale");
	assert_field(line, "file", path);
	assert_field(line, "token", "5");
	assert_field(line, "fence", "7");
	assert_field(line, "host", host);
	assert_field(line, "code", "1");
	assert_field(line, "msg", "\"stale token 5 for r: the fence holds 7\"");

	/* refused as unsafe: user.err */
	fwt_spit("legacy", "old\n");
	here("legacy", path, sizeof(path));
	assert_int_equal(RUN("new\n", NULL, &err, "--syslog", "-t", "9",
	                     "legacy"), 3);
	free(err);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 11, 0, "unsafe");
	assert_field(line, "file", path);
	assert_field(line, "token", "9");
	assert_field(line, "host", host);
	assert_field(line, "code", "3");
	assert_non_null(strstr(line, "legacy is not fenced"));

	/* lock timeout: user.warning */
	here("r", path, sizeof(path));
	fwt_lock_in_child("r.fence", 0, &h);
	assert_int_equal(RUN("C\n", NULL, &err, "--syslog", "-n", "-t", "8",
	                     "r"), 4);
	free(err);
	fwt_unlock(&h);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 12, 0, "lock-timeout");
	assert_field(line, "file", path);
	assert_field(line, "token", "8");
	assert_field(line, "code", "4");

	/* system error: user.err, the call and the path */
	here("missing/f", path, sizeof(path));
	assert_int_equal(RUN("x", NULL, &err, "--syslog", "-t", "1",
	                     "missing/f"), 5);
	free(err);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 11, 0, "error");
	assert_field(line, "file", path);
	assert_field(line, "code", "5");
	assert_non_null(strstr(line, "open(missing): No such file"));

	/* other actions say what they did */
	assert_int_equal(RUN(NULL, NULL, NULL, "--syslog", "--claim", "-t",
	                     "10", "r"), 0);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 14, 0, "claimed");
	assert_field(line, "action", "claim");
	assert_field(line, "fence", "10");

	/* without --syslog nothing is sent */
	assert_int_equal(RUN(NULL, NULL, NULL, "--show", "r"), 0);
	assert_nothing_sent(fd);
	fwt_assert_content("r", "A\n");
	close(fd);
	unset_env();
}

static void syslog_env_enables_it_and_chooses_the_facility(void **state)
{
	static const struct { const char *value; int pri; } cases[] = {
		{ "1", 14 }, { "yes", 14 }, { "user", 14 }, { "daemon", 30 },
		{ "LOCAL3", 19 * 8 + 6 }, { "0", -1 }, { "off", -1 }, { "", -1 },
	};
	char line[9000], *err;
	int fd = bind_log(), token = 1;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char t[16];

		snprintf(t, sizeof(t), "%d", token++);
		assert_int_equal(setenv("FENCEDWRITE_SYSLOG", cases[i].value, 1),
		                 0);
		assert_int_equal(RUN("x", NULL, NULL, "-t", t, "r"), 0);
		if (cases[i].pri < 0) {
			assert_nothing_sent(fd);
			continue;
		}
		recv_one(fd, line, sizeof(line));
		assert_header(line, cases[i].pri, 0, "committed");
		assert_field(line, "token", t);
	}
	/* --syslog wins over FENCEDWRITE_SYSLOG=0 */
	assert_int_equal(setenv("FENCEDWRITE_SYSLOG", "0", 1), 0);
	assert_int_equal(RUN("x", NULL, NULL, "--syslog", "-t", "100", "r"), 0);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 14, 0, "committed");
	/* a value not understood still logs, and says so */
	assert_int_equal(setenv("FENCEDWRITE_SYSLOG", "mabye", 1), 0);
	assert_int_equal(RUN("x", NULL, &err, "-t", "101", "r"), 0);
	assert_non_null(strstr(err, "FENCEDWRITE_SYSLOG='mabye'"));
	free(err);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 14, 0, "committed");
	close(fd);
	unset_env();
}

static void unreachable_syslog_never_changes_the_exit_code(void **state)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	char *err;
	int fd, tx;

	(void)state;
	/* nobody listening */
	assert_int_equal(setenv("FENCEDWRITE_SYSLOG_SOCKET", "nolog", 1), 0);
	assert_int_equal(setenv("FENCEDWRITE_SYSLOG", "1", 1), 0);
	assert_int_equal(RUN("A\n", NULL, &err, "-t", "7", "r"), 0);
	assert_non_null(strstr(err, "fencedwrite: syslog: sendto(nolog): No such "
	                       "file or directory; the outcome was not logged\n"));
	free(err);
	fwt_assert_content("r", "A\n");
	assert_int_equal(RUN("B\n", NULL, &err, "-t", "6", "r"), 1);
	assert_non_null(strstr(err, "not logged"));
	assert_non_null(strstr(err, "stale token 6"));
	free(err);

	/* a daemon that reads nothing: its queue full, the run does not
	   wait for it (were it to, the alarm would end this suite) */
	fd = bind_log();
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(tx >= 0);
	while (sendto(tx, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&sa,
	              len) == 1)
		;
	assert_int_equal(errno, EAGAIN);
	alarm(60);
	assert_int_equal(RUN("C\n", NULL, &err, "-t", "8", "r"), 0);
	alarm(0);
	assert_non_null(strstr(err, "Resource temporarily unavailable; the "
	                       "outcome was not logged"));
	free(err);
	fwt_assert_content("r", "C\n");
	close(tx);
	close(fd);
	unset_env();
}

static void file_names_cannot_forge_lines_or_fields(void **state)
{
	char line[9000], path[PATH_MAX], want[PATH_MAX + 16];
	int fd = bind_log();

	(void)state;
	assert_int_equal(RUN("x", NULL, NULL, "--syslog", "-t", "1",
	                     "a b\nhost=evil\"\\"), 0);
	recv_one(fd, line, sizeof(line));
	assert_null(strchr(line, '\n'));
	here("a b\\x0ahost=evil\\\"\\\\\"", path, sizeof(path));
	snprintf(want, sizeof(want), "\"%s", path);
	assert_field(line, "file", want);
	assert_null(strstr(line, " host=evil"));
	close(fd);
	unset_env();
}

/* A FILE whose name, escaped, is longer than a line has room for: the
   name is cut short inside its quotes, and every other field is there. */
static void long_file_names_leave_every_field_whole(void **state)
{
	char line[9000], dir[256], path[PATH_MAX];
	const char *end;
	int fd = bind_log();

	(void)state;
	/* 15 nested directories of 250 characters, each needing escapes */
	memset(dir, '"', 250);
	dir[250] = '\0';
	path[0] = '\0';
	for (int i = 0; i < 15; i++) {
		strcat(path, dir);
		assert_int_equal(mkdir(path, 0755), 0);
		strcat(path, "/");
	}
	strcat(path, "f");
	assert_int_equal(RUN("x", NULL, NULL, "--syslog", "-t", "3", path), 0);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 8 + 6, 0, "committed");   /* user.info */
	assert_field(line, "token", "3");
	assert_field(line, "fence", "3");
	assert_field(line, "action", "write");
	assert_field(line, "code", "0");
	assert_non_null(strstr(line, " host="));
	/* the file's value ends in ..." and the line goes on after it */
	end = strstr(line, "...\" ");
	assert_non_null(end);
	assert_true(strstr(line, " file=\"") < end);
	close(fd);
	unset_env();
}

/* A CMD that fails after the claim: the line says what CMD returned, that
   the fence holds the claimed token, and why nothing was committed; with
   --cmd-status the code is still fencedwrite's 6. */
static void failed_cmd_is_logged_with_its_status_and_the_claim(void **state)
{
	char line[9000];
	int fd = bind_log();

	(void)state;
	assert_int_equal(RUN("", NULL, NULL, "--syslog", "--cmd-status", "-t",
	                     "5", "r", "--", "sh", "-c", "exit 3"), 3);
	recv_one(fd, line, sizeof(line));
	assert_header(line, 8 + 3, 0, "cmd-failed");   /* user.err */
	assert_field(line, "token", "5");
	assert_field(line, "fence", "5");
	assert_field(line, "code", "6");
	assert_field(line, "cmd_status", "3");
	assert_non_null(strstr(line, " msg=\""));
	assert_true(fwt_fence_token("r") == 5);
	close(fd);
	unset_env();
}

/* ---- metrics: a strict parser of the text exposition format ----------- */

struct sample {
	char name[128];
	char labels[4][2][1024];   /* name, unescaped value */
	int nlabels;
	double value;
};

struct exposition {
	struct sample s[64];
	int n;
};

static int name_char(char c, int first, int colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

/* A metric (COLON) or label name at *P, copied to OUT; -1 if none. */
static int take_name(const char **p, char *out, size_t size, int colon)
{
	size_t n = 0;

	while (name_char((*p)[n], n == 0, colon))
		n++;
	if (n == 0 || n >= size)
		return -1;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n;
	return 0;
}

/* Valid UTF-8 throughout (simple check: lead and continuation bytes). */
static int utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = -1;

		if (*p < 0x80)
			n = 0;
		else if (*p >= 0xc2 && *p <= 0xdf)
			n = 1;
		else if (*p >= 0xe0 && *p <= 0xef)
			n = 2;
		else if (*p >= 0xf0 && *p <= 0xf4)
			n = 3;

		if (n < 0)
			return 0;
		for (p++; n > 0; n--, p++)
			if ((*p & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

/* A float as Go's strconv.ParseFloat takes it, or Nan/+Inf/-Inf. */
static int take_value(const char *s, double *v)
{
	char *end;

	if (!strcmp(s, "NaN") || !strcmp(s, "+Inf") || !strcmp(s, "-Inf")) {
		*v = strcmp(s, "NaN") ? (s[0] == '+' ? 1e308 : -1e308) : 0;
		return 0;
	}
	if (!*s || strchr(s, ' '))
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	return *end || errno ? -1 : 0;
}

/*
 * Parse TEXT, failing the test on anything the format forbids: bad names,
 * bad label syntax or escapes, values that are not floats, HELP or TYPE
 * twice or after the family's samples, a family's samples not together,
 * the same series twice, a counter without _total, no final newline.
 */
static void parse_exposition(const char *text, struct exposition *x)
{
	char families[64][128], typed[64][128], helped[64][128];
	int nfam = 0, ntyped = 0, nhelped = 0, lineno = 0;
	const char *line = text;

	x->n = 0;
	assert_true(!*text || text[strlen(text) - 1] == '\n');
	while (*line) {
		char buf[PATH_MAX * 2];
		const char *end = strchr(line, '\n'), *p = buf;
		struct sample *s = &x->s[x->n];

		lineno++;
		assert_true((size_t)(end - line) < sizeof(buf));
		memcpy(buf, line, (size_t)(end - line));
		buf[end - line] = '\0';
		line = end + 1;
		if (*p == '#') {
			char name[128];
			int help = !strncmp(p, "# HELP ", 7);
			int type = !strncmp(p, "# TYPE ", 7);

			if (!help && !type)
				continue;   /* a comment */
			p += 7;
			if (take_name(&p, name, sizeof(name), 1) < 0 || *p != ' ')
				fail_msg("line %d: HELP/TYPE name: %s", lineno, buf);
			for (int i = 0; i < nfam; i++)
				if (!strcmp(families[i], name))
					fail_msg("line %d: %s after its samples",
					         lineno, buf);
			if (type) {
				const char *t = p + 1;

				if (strcmp(t, "counter") && strcmp(t, "gauge") &&
				    strcmp(t, "histogram") && strcmp(t, "summary") &&
				    strcmp(t, "untyped"))
					fail_msg("line %d: type %s", lineno, t);
				for (int i = 0; i < ntyped; i++)
					if (!strcmp(typed[i], name))
						fail_msg("line %d: TYPE twice", lineno);
				if ((strcmp(t, "counter") == 0) !=
				    (strlen(name) > 6 &&
				     !strcmp(name + strlen(name) - 6, "_total")))
					fail_msg("line %d: counters, and only they, end "
					         "in _total", lineno);
				snprintf(typed[ntyped++], sizeof(typed[0]), "%s", name);
			}
			if (help) {
				for (int i = 0; i < nhelped; i++)
					if (!strcmp(helped[i], name))
						fail_msg("line %d: HELP twice", lineno);
				snprintf(helped[nhelped++], sizeof(helped[0]), "%s",
				         name);
			}
			continue;
		}
		if (!*p)
			continue;
		if (take_name(&p, s->name, sizeof(s->name), 1) < 0)
			fail_msg("line %d: metric name: %s", lineno, buf);
		s->nlabels = 0;
		if (*p == '{') {
			p++;
			while (*p != '}') {
				char *v = s->labels[s->nlabels][1];
				size_t n = 0;

				assert_true(s->nlabels < 4);
				if (take_name(&p, s->labels[s->nlabels][0],
				              sizeof(s->labels[0][0]), 0) < 0 ||
				    p[0] != '=' || p[1] != '"')
					fail_msg("line %d: label: %s", lineno, buf);
				for (p += 2; *p != '"'; p++) {
					if (!*p)
						fail_msg("line %d: open quote", lineno);
					if (*p == '\\') {
						p++;
						if (*p != '\\' && *p != '"' && *p != 'n')
							fail_msg("line %d: escape \\%c",
							         lineno, *p);
						v[n++] = *p == 'n' ? '\n' : *p;
					} else {
						v[n++] = *p;
					}
				}
				v[n] = '\0';
				if (!utf8_ok(v))
					fail_msg("line %d: label value not UTF-8",
					         lineno);
				for (int i = 0; i < s->nlabels; i++)
					if (!strcmp(s->labels[i][0],
					            s->labels[s->nlabels][0]))
						fail_msg("line %d: label twice", lineno);
				s->nlabels++;
				p++;
				if (*p == ',')
					p++;
				else if (*p != '}')
					fail_msg("line %d: after label: %s", lineno,
					         buf);
			}
			p++;
		}
		if (*p != ' ' || take_value(p + 1, &s->value) < 0)
			fail_msg("line %d: value: %s", lineno, buf);
		if (nfam == 0 || strcmp(families[nfam - 1], s->name)) {
			for (int i = 0; i < nfam; i++)
				if (!strcmp(families[i], s->name))
					fail_msg("line %d: %s's samples apart",
					         lineno, s->name);
			snprintf(families[nfam++], sizeof(families[0]), "%s",
			         s->name);
		}
		for (int i = 0; i < x->n; i++) {
			int same = !strcmp(x->s[i].name, s->name) &&
			           x->s[i].nlabels == s->nlabels;

			for (int k = 0; same && k < s->nlabels; k++)
				same = !strcmp(x->s[i].labels[k][0],
				               s->labels[k][0]) &&
				       !strcmp(x->s[i].labels[k][1],
				               s->labels[k][1]);
			if (same)
				fail_msg("line %d: series twice", lineno);
		}
		assert_true(x->n < 63);
		x->n++;
	}
	/* Every family of ours has HELP and TYPE. */
	for (int i = 0; i < nfam; i++) {
		int found = 0;

		for (int k = 0; k < ntyped; k++)
			found |= !strcmp(typed[k], families[i]);
		if (!found)
			fail_msg("%s has no TYPE", families[i]);
	}
}

/* The value of NAME{file=FILE[,outcome=OUTCOME]}; fails if absent. */
static double metric(const struct exposition *x, const char *name,
                     const char *file, const char *outcome)
{
	for (int i = 0; i < x->n; i++) {
		const struct sample *s = &x->s[i];
		int file_ok = 0, outcome_ok = !outcome;

		if (strcmp(s->name, name))
			continue;
		for (int k = 0; k < s->nlabels; k++) {
			file_ok |= !strcmp(s->labels[k][0], "file") &&
			           !strcmp(s->labels[k][1], file);
			outcome_ok |= outcome && !strcmp(s->labels[k][0],
			                                 "outcome") &&
			              !strcmp(s->labels[k][1], outcome);
		}
		if (file_ok && outcome_ok)
			return s->value;
	}
	fail_msg("no %s{file=\"%s\"%s%s}", name, file, outcome ? ",outcome=" : "",
	         outcome ? outcome : "");
	return -1;
}

/* Read and parse PATH; also through promtool where it is installed. */
static void load(const char *path, struct exposition *x)
{
	char *text = fwt_slurp(path, NULL);

	assert_non_null(text);
	parse_exposition(text, x);
	free(text);
	if (system("command -v promtool >/dev/null 2>&1") == 0) {
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s'", path);
		assert_int_equal(system(cmd), 0);
	}
}

/* No temporary file of m.prom's is left. */
static void assert_no_tmp(void)
{
	glob_t g;

	assert_int_equal(glob(".m.prom.*.tmp", GLOB_NOSORT, NULL, &g),
	                 GLOB_NOMATCH);
}

/* NAMES (NULL-ended) exist, and no temporary file is left. */
static void assert_left(const char *const *names)
{
	for (const char *const *n = names; *n; n++)
		assert_int_equal(access(*n, F_OK), 0);
	assert_no_tmp();
}

static void metrics_count_outcomes_per_file(void **state)
{
	static const char *const left[] = { "m.prom", ".m.prom.lock", NULL };
	char r[PATH_MAX], legacy[PATH_MAX], *err;
	static struct exposition x;
	struct fwt_holder h;
	time_t t0 = time(NULL), t1;
	struct stat st;

	(void)state;
	here("r", r, sizeof(r));
	here("legacy", legacy, sizeof(legacy));
	umask(077);   /* cron's umask must not hide the file from the collector */
	assert_int_equal(RUN("A\n", NULL, NULL, "--metrics", "m.prom", "-t", "7",
	                     "r"), 0);
	umask(022);
	assert_int_equal(stat("m.prom", &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(setenv("FENCEDWRITE_METRICS", "m.prom", 1), 0);
	assert_int_equal(RUN("B\n", NULL, NULL, "-q", "-t", "5", "r"), 1);
	assert_int_equal(RUN("B\n", NULL, NULL, "-q", "-t", "6", "r"), 1);
	fwt_spit("legacy", "old\n");
	assert_int_equal(RUN("new\n", NULL, &err, "-t", "9", "legacy"), 3);
	free(err);
	load("m.prom", &x);
	t1 = time(NULL);
	assert_true(metric(&x, "fencedwrite_commits_total", r, NULL) == 1);
	assert_true(metric(&x, "fencedwrite_stale_rejections_total", r, NULL) == 2);
	assert_true(metric(&x, "fencedwrite_unsafe_refusals_total", r, NULL) == 0);
	assert_true(metric(&x, "fencedwrite_last_commit_token", r, NULL) == 7);
	assert_true(metric(&x, "fencedwrite_last_exit_code", r, NULL) == 1);
	assert_true(metric(&x, "fencedwrite_last_outcome", r, "stale") == 1);
	{
		double c = metric(&x, "fencedwrite_last_commit_timestamp_seconds",
		                  r, NULL);

		assert_true(c >= (double)t0 && c <= (double)t1);
	}
	/* the other FILE has its own series */
	assert_true(metric(&x, "fencedwrite_unsafe_refusals_total", legacy,
	                   NULL) == 1);
	assert_true(metric(&x, "fencedwrite_commits_total", legacy, NULL) == 0);
	assert_true(metric(&x, "fencedwrite_last_outcome", legacy, "unsafe") == 1);

	/* a lock timeout, then a commit: the last outcome follows */
	fwt_lock_in_child("r.fence", 0, &h);
	assert_int_equal(RUN("C\n", NULL, NULL, "-q", "-n", "-t", "8", "r"), 4);
	fwt_unlock(&h);
	assert_int_equal(RUN("D\n", NULL, NULL, "--metrics", "m.prom", "-t",
	                     "12", "r"), 0);
	load("m.prom", &x);
	assert_true(metric(&x, "fencedwrite_lock_timeouts_total", r, NULL) == 1);
	assert_true(metric(&x, "fencedwrite_commits_total", r, NULL) == 2);
	assert_true(metric(&x, "fencedwrite_stale_rejections_total", r, NULL) == 2);
	assert_true(metric(&x, "fencedwrite_last_commit_token", r, NULL) == 12);
	assert_true(metric(&x, "fencedwrite_last_outcome", r, "committed") == 1);
	assert_true(metric(&x, "fencedwrite_last_exit_code", r, NULL) == 0);
	assert_true(metric(&x, "fencedwrite_last_run_timestamp_seconds", r,
	                   NULL) >= (double)t0);
	assert_left(left);
	unset_env();
}

/* Many runs at once, each adding one: not one increment is lost. */
static void concurrent_runs_lose_no_increment(void **state)
{
	enum { WAVES = 20, AT_ONCE = 8 };
	char *argv[] = { "fencedwrite", "-q", "--metrics", "m.prom", "-t", "5",
	                 "r", NULL };
	char r[PATH_MAX];
	static struct exposition x;
	pid_t pids[AT_ONCE];

	(void)state;
	here("r", r, sizeof(r));
	assert_int_equal(RUN("A\n", NULL, NULL, "-t", "100", "r"), 0);
	for (int w = 0; w < WAVES; w++) {
		for (int i = 0; i < AT_ONCE; i++)
			pids[i] = fwt_spawn("B\n", argv);
		for (int i = 0; i < AT_ONCE; i++)
			assert_int_equal(fwt_wait(pids[i]), 1);
	}
	load("m.prom", &x);
	assert_true(metric(&x, "fencedwrite_stale_rejections_total", r, NULL) ==
	            WAVES * AT_ONCE);
	assert_true(metric(&x, "fencedwrite_commits_total", r, NULL) == 0);
	assert_no_tmp();
}

/* The textfile directory may be shared with other users (a group's, or
   sticky), and the run may be root's: what they plant there is never
   written through, never hangs the run, never stops the updates. */
static void metrics_directory_shared_with_others(void **state)
{
	char *err;
	struct stat st;

	(void)state;
	/* a file (here a hard link to another file) at a temporary name */
	fwt_spit("victim", "do not touch\n");
	assert_int_equal(chmod("victim", 0664), 0);
	assert_int_equal(link("victim", ".m.prom.tmp"), 0);
	assert_int_equal(RUN("A\n", NULL, NULL, "--metrics", "m.prom", "-t",
	                     "1", "r"), 0);
	fwt_assert_content("victim", "do not touch\n");
	assert_int_equal(stat("victim", &st), 0);
	assert_int_equal(st.st_mode & 0777, 0664);
	assert_int_equal(access("m.prom", F_OK), 0);
	assert_int_equal(unlink(".m.prom.tmp"), 0);
	assert_no_tmp();

	/* a FIFO at PATH: refused at once, not waited on for ever (the
	   alarm would end the suite) */
	assert_int_equal(mkfifo("f.prom", 0644), 0);
	alarm(60);
	assert_int_equal(RUN("B\n", NULL, &err, "--metrics", "f.prom", "-t",
	                     "2", "r"), 0);
	alarm(0);
	assert_non_null(strstr(err, "read(f.prom): Invalid argument; not "
	                       "updated"));
	free(err);

	/* a lock file others can open, or another user's, is not believed:
	   its holder could stop every update */
	assert_int_equal(chmod(".m.prom.lock", 0644), 0);
	assert_int_equal(RUN("C\n", NULL, &err, "--metrics", "m.prom", "-t",
	                     "3", "r"), 0);
	assert_non_null(strstr(err, ".m.prom.lock belongs to another user"));
	free(err);
	if (geteuid() == 0) {
		assert_int_equal(chmod(".m.prom.lock", 0600), 0);
		assert_int_equal(chown(".m.prom.lock", 65534, 65534), 0);
		assert_int_equal(RUN("D\n", NULL, &err, "--metrics", "m.prom",
		                     "-t", "4", "r"), 0);
		assert_non_null(strstr(err, "belongs to another user"));
		free(err);
	}
	fwt_assert_content("r", geteuid() == 0 ? "D\n" : "C\n");

	/* PATH itself: a mode letting others write is not kept, and another
	   user's file (made-up counters, planted in a shared directory) is
	   neither read nor taken over */
	assert_int_equal(unlink(".m.prom.lock"), 0);
	assert_int_equal(chmod("m.prom", 0666), 0);
	assert_int_equal(RUN("E\n", NULL, NULL, "--metrics", "m.prom", "-t",
	                     "5", "r"), 0);
	assert_int_equal(stat("m.prom", &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	if (geteuid() == 0) {
		char *before;

		assert_int_equal(chown("m.prom", 65534, 65534), 0);
		before = fwt_slurp("m.prom", NULL);
		assert_int_equal(RUN("F\n", NULL, &err, "--metrics", "m.prom",
		                     "-t", "6", "r"), 0);
		assert_non_null(strstr(err, "m.prom belongs to another user"));
		free(err);
		fwt_assert_content("m.prom", before);
		assert_int_equal(stat("m.prom", &st), 0);
		assert_int_equal(st.st_uid, 65534);
		free(before);
	}
}

/* A PATH this code did not write is left as it is, the run's exit code
   unchanged, and stderr says why. */
static void foreign_or_unparsable_metrics_file_is_left_alone(void **state)
{
	static const char *const foreign[] = {
		"# HELP node_apt_upgrades_pending Apt packages pending.\n"
		"node_apt_upgrades_pending 3\n",
		"fencedwrite_commits_total{file=\"/x\"} 1.5\n",
		"fencedwrite_commits_total{file=\"/x\"} 1",   /* cut short */
		"fencedwrite_commits_total{file=\"/x\\t\"} 1\n",
		"fencedwrite_commits_total{file=\"/x\"} 1\n"
		"fencedwrite_commits_total{file=\"/x\"} 2\n",
	};
	char *err;

	(void)state;
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		char t[16];

		snprintf(t, sizeof(t), "%zu", i + 1);
		fwt_spit("m.prom", foreign[i]);
		assert_int_equal(RUN("A\n", NULL, &err, "--metrics", "m.prom",
		                     "-t", t, "r"), 0);
		if (!strstr(err, "fencedwrite: metrics: m.prom, line ") ||
		    !strstr(err, "is not fencedwrite's metrics: left alone"))
			fail_msg("case %zu: %s", i, err);
		free(err);
		fwt_assert_content("m.prom", foreign[i]);
		fwt_assert_content("r", "A\n");
	}
	/* a stale run with a foreign file still exits 1 */
	assert_int_equal(RUN("B\n", NULL, &err, "--metrics", "m.prom", "-t",
	                     "1", "r"), 1);
	assert_non_null(strstr(err, "left alone"));
	free(err);
	/* a directory that does not exist: reported, exit code unchanged */
	assert_int_equal(RUN("C\n", NULL, &err, "--metrics", "nodir/m.prom",
	                     "-t", "9", "r"), 0);
	assert_non_null(strstr(err, "fencedwrite: metrics: open(nodir/.m.prom."
	                       "lock): No such file or directory; not updated"));
	free(err);
	fwt_assert_content("r", "C\n");
	/* an empty file is a fresh start */
	fwt_spit("m.prom", "");
	assert_int_equal(RUN("D\n", NULL, &err, "--metrics", "m.prom", "-t",
	                     "10", "r"), 0);
	assert_string_equal(err, "");
	free(err);
}

/* Quotes, backslashes, newlines and bytes that are not UTF-8 in FILE
   come out as valid labels, and the same FILE finds its series again. */
static void odd_file_names_make_valid_labels(void **state)
{
	const char *name = "q\"b\\n\nl\xff";
	char path[PATH_MAX], want[PATH_MAX], *p;
	static struct exposition x;

	(void)state;
	here(name, path, sizeof(path));
	assert_int_equal(RUN("A\n", NULL, NULL, "--metrics", "m.prom", "-t", "1",
	                     name), 0);
	assert_int_equal(RUN("B\n", NULL, NULL, "--metrics", "m.prom", "-t", "2",
	                     name), 0);
	load("m.prom", &x);
	snprintf(want, sizeof(want), "%s", path);
	p = strstr(want, "\xff");
	assert_non_null(p);
	strcpy(p, "\xef\xbf\xbd");
	assert_true(metric(&x, "fencedwrite_commits_total", want, NULL) == 2);
	assert_true(metric(&x, "fencedwrite_last_commit_token", want, NULL) == 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(syslog_line_per_outcome_with_priority_and_fields),
		T(syslog_env_enables_it_and_chooses_the_facility),
		T(unreachable_syslog_never_changes_the_exit_code),
		T(file_names_cannot_forge_lines_or_fields),
		T(metrics_count_outcomes_per_file),
		T(long_file_names_leave_every_field_whole),
		T(failed_cmd_is_logged_with_its_status_and_the_claim),
		T(concurrent_runs_lose_no_increment),
		T(metrics_directory_shared_with_others),
		T(foreign_or_unparsable_metrics_file_is_left_alone),
		T(odd_file_names_make_valid_labels),
	};

	unset_env();
	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
