/* SPDX-License-Identifier: MIT */
/*
 * cli_metrics.c - node_exporter textfile-collector metrics: each run
 * rewrites PATH (--metrics, FENCEDWRITE_METRICS) with the last outcome
 * and the counters a fleet alerts on, per FILE (label file="...").
 *
 * Counters must survive across runs, so each run reads the file the last
 * one wrote and adds its own outcome.  Two runs at once must not lose an
 * increment: the read, the change and the rename happen under an flock
 * on a lock file beside PATH (PATH itself is replaced by each rename, so
 * a lock on it would guard nothing).  The collector reads *.prom files
 * and may read at any moment, so the new content goes to a temporary
 * file whose name does not end in .prom and is renamed over PATH.
 *
 * A PATH holding anything this file did not write (another exporter's
 * file, a typo in PATH, an edit) is left alone with a warning: starting
 * from zero would destroy what someone else wrote there.
 *
 * The textfile directory may be shared (a group's, or sticky like /tmp),
 * and the run may be root's: nothing another user may have put there is
 * written through.  The temporary file is created new (O_EXCL, a random
 * name), so a file or hard link planted at a known name is never
 * truncated or chmodded; PATH is opened without waiting and read only if
 * it is a regular file (a FIFO would hang the run for ever); the lock file
 * is readable by its owner alone and believed only if it is ours or
 * root's, so no other user can hold it to stop the updates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_report.h"

/* Larger is not a file of ours: hundreds of FILEs take a few KiB each. */
#define MAX_SIZE (4 << 20)
/* How long a run waits for another run's update of PATH (a few ms). */
#define LOCK_WAIT_MS 10000
/* The end of temporary names: not .prom, so the collector skips them. */
#define TMP_SUFFIX ".tmp"

#define HEADER "# fencedwrite(1) --metrics: rewritten whole by every run; " \
               "do not edit."

enum family { LAST_RUN, LAST_EXIT, LAST_OUTCOME, LAST_COMMIT, LAST_TOKEN,
              COMMITS, STALE, UNSAFE, LOCK_TIMEOUTS, ERRORS, NFAMILIES };

static const struct {
	const char *name, *type, *help;
} families[NFAMILIES] = {
	[LAST_RUN] = { "fencedwrite_last_run_timestamp_seconds", "gauge",
	               "Time of the last run for FILE, seconds since the "
	               "epoch." },
	[LAST_EXIT] = { "fencedwrite_last_exit_code", "gauge",
	                "Exit status of the last run for FILE (0 ok, 1 stale, "
	                "3 unsafe, 4 lock timeout, 5 error, 6 CMD failed, "
	                "8 lock lost)." },
	[LAST_OUTCOME] = { "fencedwrite_last_outcome", "gauge",
	                   "Outcome of the last run for FILE, as the outcome "
	                   "label; always 1." },
	[LAST_COMMIT] = { "fencedwrite_last_commit_timestamp_seconds", "gauge",
	                  "Time of the last commit of FILE, seconds since the "
	                  "epoch." },
	[LAST_TOKEN] = { "fencedwrite_last_commit_token", "gauge",
	                 "Fencing token of the last commit of FILE." },
	[COMMITS] = { "fencedwrite_commits_total", "counter",
	              "Commits of new content of FILE." },
	[STALE] = { "fencedwrite_stale_rejections_total", "counter",
	            "Runs turned away with a stale token (exit 1)." },
	[UNSAFE] = { "fencedwrite_unsafe_refusals_total", "counter",
	             "Runs that failed closed: fence missing, corrupt, not "
	             "trusted or unsafe (exit 3)." },
	[LOCK_TIMEOUTS] = { "fencedwrite_lock_timeouts_total", "counter",
	                    "Runs that did not get the fence's lock in time "
	                    "(exit 4)." },
	[ERRORS] = { "fencedwrite_errors_total", "counter",
	             "Runs that ended in a system error, a failed CMD or a lost "
	             "lock (exit 5, 6, 8; usage errors are not counted)." },
};

/* The series of one FILE. */
struct entry {
	char *label;                 /* file="..." as written: escaped */
	uint64_t value[NFAMILIES];
	unsigned have;               /* bit F: value[F] is present */
	char outcome[32];            /* LAST_OUTCOME's outcome label */
};

struct metrics {
	struct entry *e;
	size_t n;
};

static void free_metrics(struct metrics *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].label);
	free(m->e);
}

static struct entry *find_entry(struct metrics *m, const char *label,
                                int add)
{
	struct entry *grown;

	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->e[i].label, label) == 0)
			return &m->e[i];
	if (!add)
		return NULL;
	grown = realloc(m->e, (m->n + 1) * sizeof(*m->e));
	if (!grown)
		return NULL;
	m->e = grown;
	memset(&m->e[m->n], 0, sizeof(*m->e));
	m->e[m->n].label = strdup(label);
	if (!m->e[m->n].label)
		return NULL;
	return &m->e[m->n++];
}

/* FILE as a label value, escaped as the format wants (\\, \", \n); a
   byte that is not UTF-8 becomes U+FFFD.  NULL when out of memory. */
static char *label_value(const char *file)
{
	const unsigned char *p = (const unsigned char *)file;
	char *out = malloc(strlen(file) * 3 + 1), *q = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t n = cli_utf8_len(p);

		if (*p == '\\' || *p == '"' || *p == '\n') {
			*q++ = '\\';
			if (*p == '\n')
				*q++ = 'n';
			else
				*q++ = *(const char *)p;
		} else if (n > 0) {
			memcpy(q, p, n);
			q += n;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
		}
		p += n > 0 ? n : 1;
	}
	*q = '\0';
	return out;
}

static int family_of(const char *name)
{
	for (int f = 0; f < NFAMILIES; f++)
		if (strcmp(name, families[f].name) == 0)
			return f;
	return -1;
}

/*
 * A quoted label value at *P (just after the opening quote), kept as
 * written, escapes and all; *P moves past the closing quote.  NULL if
 * the value is not well formed.
 */
static char *take_quoted(char **p)
{
	char *start = *p, *s = *p;

	for (; *s && *s != '"'; s++)
		if (*s == '\\' && !strchr("\\\"n", *++s))
			return NULL;
	if (*s != '"')
		return NULL;
	*s = '\0';
	*p = s + 1;
	return start;
}

/* Decimal digits alone, as this file writes every value. */
static int take_number(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/*
 * One line of a file this code wrote, into M: the header, HELP and TYPE
 * of our families, or a sample NAME{file="..."[,outcome="..."]} VALUE.
 * -1 for anything else.
 */
static int parse_line(struct metrics *m, char *line)
{
	char *p = line, *name, *file = NULL, *outcome = NULL;
	struct entry *e;
	uint64_t v;
	int f;

	if (!*line || strcmp(line, HEADER) == 0)
		return 0;
	if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
		p = line + 7;
		p[strcspn(p, " ")] = '\0';
		return family_of(p) < 0 ? -1 : 0;
	}
	name = p;
	p += strspn(p, "abcdefghijklmnopqrstuvwxyz_");
	if (*p != '{')
		return -1;
	*p++ = '\0';
	if ((f = family_of(name)) < 0)
		return -1;
	while (*p != '}') {
		char **slot = strncmp(p, "file=\"", 6) == 0 ? &file
		              : strncmp(p, "outcome=\"", 9) == 0 ? &outcome
		              : NULL;

		if (!slot || *slot)
			return -1;
		p = strchr(p, '"') + 1;
		if (!(*slot = take_quoted(&p)))
			return -1;
		if (*p == ',')
			p++;
		else if (*p != '}')
			return -1;
	}
	if (p[1] != ' ' || take_number(p + 2, &v) < 0 || !file ||
	    (f == LAST_OUTCOME) != (outcome != NULL))
		return -1;
	if (outcome && (v != 1 || strlen(outcome) >= sizeof(e->outcome)))
		return -1;
	e = find_entry(m, file, 1);
	if (!e || e->have & 1u << f)
		return -1;   /* a series twice is not our file either */
	e->have |= 1u << f;
	e->value[f] = v;
	if (outcome)
		snprintf(e->outcome, sizeof(e->outcome), "%s", outcome);
	return 0;
}

/* TEXT (NUL-terminated, changed in place) into M: 0, or the number of
   the first line that is not ours. */
static int parse_file(struct metrics *m, char *text)
{
	int n = 1;

	for (char *line = text, *end; *line; line = end + 1, n++) {
		end = strchr(line, '\n');
		if (!end)
			return n;   /* we always end the last line */
		*end = '\0';
		if (parse_line(m, line) < 0)
			return n;
	}
	return 0;
}

static int format_file(const struct metrics *m, FILE *out)
{
	fprintf(out, "%s\n", HEADER);
	for (int f = 0; f < NFAMILIES; f++) {
		int any = 0;

		for (size_t i = 0; i < m->n; i++)
			any |= !!(m->e[i].have & 1u << f);
		if (!any)
			continue;
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", families[f].name,
		        families[f].help, families[f].name, families[f].type);
		for (size_t i = 0; i < m->n; i++) {
			const struct entry *e = &m->e[i];

			if (!(e->have & 1u << f))
				continue;
			fprintf(out, "%s{file=\"%s\"", families[f].name, e->label);
			if (f == LAST_OUTCOME)
				fprintf(out, ",outcome=\"%s\"", e->outcome);
			fprintf(out, "} %llu\n", (unsigned long long)e->value[f]);
		}
	}
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* This run's outcome into E. */
static void count(struct entry *e, const struct cli_outcome *o)
{
	enum family counter = ERRORS;

	e->value[LAST_RUN] = (uint64_t)time(NULL);
	e->value[LAST_EXIT] = (uint64_t)o->code;
	e->value[LAST_OUTCOME] = 1;
	snprintf(e->outcome, sizeof(e->outcome), "%s", o->word);
	e->have |= 1u << LAST_RUN | 1u << LAST_EXIT | 1u << LAST_OUTCOME;
	for (int f = COMMITS; f < NFAMILIES; f++)
		e->have |= 1u << f;   /* counters at 0 are worth seeing */
	switch (o->code) {
	case FW_OK:
		if (!o->commit)
			return;
		e->value[LAST_COMMIT] = e->value[LAST_RUN];
		e->value[LAST_TOKEN] = o->cli->token;
		e->have |= 1u << LAST_COMMIT | 1u << LAST_TOKEN;
		counter = COMMITS;
		break;
	case FW_STALE: counter = STALE; break;
	case FW_UNSAFE: counter = UNSAFE; break;
	case FW_LOCKED: counter = LOCK_TIMEOUTS; break;
	default: break;
	}
	e->value[counter]++;
}

/* The lock file FD is a regular file of ours or root's, that no one
   else may open: anybody else could hold it. */
static int lock_file_ours(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_uid == geteuid() || st.st_uid == 0) &&
	       !(st.st_mode & 077);
}

/* Exclusive flock on FD, waiting up to LOCK_WAIT_MS. */
static int lock_briefly(int fd)
{
	struct timespec nap = { 0, 2000000 };

	for (long waited = 0; waited < LOCK_WAIT_MS; waited += 2) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		nanosleep(&nap, NULL);
	}
	errno = ETIMEDOUT;
	return -1;
}

/* Whole content of PATH, NUL-terminated, into *TEXT ("" if absent), and
   its permission bits into *MODE.  0, or -1 with errno set. */
static int read_previous(const char *path, char **text, mode_t *mode)
{
	/* O_NONBLOCK: a FIFO planted at PATH must not hold the run (and the
	   lock) for ever; it is refused below as not a regular file. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
	              O_NOCTTY);
	struct stat st;
	size_t got = 0;

	*text = NULL;
	if (fd < 0 && errno == ENOENT) {
		*text = strdup("");
		return *text ? 0 : -1;
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_SIZE) {
		int err = errno;

		if (fstat(fd, &st) == 0)
			err = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		close(fd);
		errno = err;
		return -1;
	}
	/* Another user's file is not our counters: in a shared directory
	   they could plant made-up values, or a mode that lets them write
	   what root then keeps rewriting. */
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	/* Readable as PATH was (the collector runs as another user), but
	   never writable by anyone else. */
	*mode = st.st_mode & 0644;
	*text = malloc((size_t)st.st_size + 1);
	errno = ENOMEM;
	while (*text && got < (size_t)st.st_size) {
		ssize_t n = read(fd, *text + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;   /* shrunk under us: not our writer */
			break;
		}
		got += (size_t)n;
	}
	if (!*text || got < (size_t)st.st_size) {
		int err = errno;

		close(fd);
		free(*text);
		*text = NULL;
		errno = err;
		return -1;
	}
	close(fd);
	(*text)[got] = '\0';
	return 0;
}

/* M as PATH's new content, through a new file named from TMP (its
   XXXXXX filled in) in the same directory. */
static int replace(const struct metrics *m, const char *path, char *tmp,
                   mode_t mode, const char **call)
{
	/* Created new, never opened: O_EXCL does not follow a link and does
	   not reuse a file someone planted at the name. */
	int fd = mkostemps(tmp, (int)strlen(TMP_SUFFIX), O_CLOEXEC);
	FILE *out;

	*call = "open";
	if (fd < 0)
		return -1;
	/* The collector runs as another user: the bits PATH had, else
	   world-readable whatever cron's umask is. */
	*call = "fchmod";
	if (fchmod(fd, mode) < 0 || !(out = fdopen(fd, "w"))) {
		int err = errno;

		close(fd);
		unlink(tmp);
		errno = err;
		return -1;
	}
	*call = "write";
	if (format_file(m, out) < 0 || (*call = "fsync", fsync(fd) < 0)) {
		int err = errno;

		fclose(out);
		unlink(tmp);
		errno = err;
		return -1;
	}
	*call = "close";
	if (fclose(out) != 0) {
		unlink(tmp);
		return -1;
	}
	*call = "rename";
	if (rename(tmp, path) < 0) {
		int err = errno;

		unlink(tmp);
		errno = err;
		return -1;
	}
	return 0;
}

void cli_metrics_update(const struct cli_outcome *o, const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	int dirlen = slash ? (int)(slash - path) + 1 : 0, fd, bad;
	char lockname[4096], tmp[4096], *text = NULL, *label = NULL;
	const char *call = "open";
	struct metrics m = { NULL, 0 };
	mode_t mode = 0644;
	struct entry *e;

	if (!*base) {
		fprintf(stderr, PROG ": metrics: %s is a directory; give a file "
		        "name ending in .prom\n", path);
		return;
	}
	/* Neither name ends in .prom: the collector never reads them. */
	if (snprintf(lockname, sizeof(lockname), "%.*s.%s.lock", dirlen, path,
	             base) >= (int)sizeof(lockname) ||
	    snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX" TMP_SUFFIX, dirlen, path,
	             base) >= (int)sizeof(tmp)) {
		fprintf(stderr, PROG ": metrics: %s: %s; not updated\n", path,
		        strerror(ENAMETOOLONG));
		return;
	}
	/* Owner-only: a lock others can open is a lock others can hold. */
	fd = open(lockname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	          O_NONBLOCK | O_NOCTTY, 0600);
	if (fd >= 0 && !lock_file_ours(fd)) {
		fprintf(stderr, PROG ": metrics: %s belongs to another user, "
		        "who could hold it to stop the updates; not updated "
		        "(remove it)\n", lockname);
		close(fd);
		return;
	}
	if (fd < 0 || (call = "flock", lock_briefly(fd) < 0)) {
		if (fd >= 0 && errno == ETIMEDOUT)
			fprintf(stderr, PROG ": metrics: %s held by another run "
			        "for more than %d s; not updated\n", lockname,
			        LOCK_WAIT_MS / 1000);
		else
			fprintf(stderr, PROG ": metrics: %s(%s): %s; not "
			        "updated\n", call, lockname, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (read_previous(path, &text, &mode) < 0) {
		if (errno == EPERM)
			fprintf(stderr, PROG ": metrics: %s belongs to another "
			        "user: not our counters; not updated (remove it, "
			        "or give another --metrics PATH)\n", path);
		else
			fprintf(stderr, PROG ": metrics: read(%s): %s; not "
			        "updated\n", path, strerror(errno));
	} else if ((bad = parse_file(&m, text)) != 0) {
		fprintf(stderr, PROG ": metrics: %s, line %d, is not fencedwrite's "
		        "metrics: left alone, not updated (remove it, or give "
		        "another --metrics PATH)\n", path, bad);
	} else if (!(label = label_value(o->file)) ||
	           !(e = find_entry(&m, label, 1))) {
		fprintf(stderr, PROG ": metrics: %s: %s; not updated\n", path,
		        strerror(ENOMEM));
	} else {
		count(e, o);
		if (replace(&m, path, tmp, mode, &call) < 0)
			fprintf(stderr, PROG ": metrics: %s(%s): %s; not "
			        "updated\n", call, strcmp(call, "rename") ? tmp
			        : path, strerror(errno));
	}
	free(label);
	free(text);
	free_metrics(&m);
	close(fd);   /* unlocks, after the rename: the next run reads ours */
}
