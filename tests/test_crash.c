/* SPDX-License-Identifier: MIT */
/*
 * Crash and failure at every step (run under faults.so).
 *
 * 1. Every call: for a write, a rejected write, a delete, an adoption and a
 *    first write, the command is run once to count its calls, then once per
 *    call K and outcome: SIGKILL at call K, or call K failing with EIO,
 *    ENOSPC, EINTR, EDQUOT or EROFS.  After each run: FILE holds a whole
 *    payload (old or new) or is absent where that is allowed; the fence is
 *    readable and at least the token of FILE's content; the exit code is the
 *    documented one; no temporary file is left after a failure the process
 *    saw; and a later valid write succeeds.
 *
 * 2. Power loss: from the trace of a successful run, every state a crash
 *    could leave when writes not yet fsynced are lost (each file's content
 *    as of its last fsync; names as of the last directory fsync plus any
 *    prefix of the renames, links and unlinks since; a write to an otherwise
 *    synced file torn after any number of bytes) is rebuilt and checked
 *    against the same invariants.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"

#define F "f"
#define FENCE "f.fence"

/* Token of a whole payload "token=N\n"; 0 if the bytes are not one. */
static uint64_t payload_token(const char *p, size_t n)
{
	unsigned long long t;
	int used = 0;

	if (n < 8 || n > 40 || p[n - 1] != '\n' ||
	    sscanf(p, "token=%llu%n", &t, &used) != 1 || (size_t)used != n - 1)
		return 0;
	return t;
}

/* ---- 1. every call -------------------------------------------------- */

struct scenario {
	const char *name;
	const char *input;       /* content on stdin */
	const char *args[10];
	void (*setup)(void);
	int ok_rc;               /* exit code of the undisturbed run */
	uint64_t old_tok;        /* FILE's token before (0: absent) */
	uint64_t new_tok;        /* FILE's token after success (0: absent) */
	uint64_t old_fence;      /* fence before (UINT64_MAX: no fence) */
	uint64_t new_fence;      /* fence after success */
};

static void existing(void)
{
	assert_int_equal(fwt_run("token=5\n", NULL, NULL, "-t", "5", F,
	                         (char *)NULL), 0);
}

static void unfenced(void)
{
	fwt_spit(F, "token=5\n");
}

static void nothing(void)
{
}

static const struct scenario scenarios[] = {
	{ "write", "token=7\n", { "-t", "7", F }, existing, 0, 5, 7, 5, 7 },
	{ "rejected write", "token=3\n", { "-t", "3", F }, existing, 1, 5, 5,
	  5, 5 },
	{ "delete", NULL, { "--delete", "-t", "7", F }, existing, 0, 5, 0, 5,
	  7 },
	{ "init", NULL, { "--init", "-t", "6", F }, unfenced, 0, 5, 5,
	  UINT64_MAX, 6 },
	{ "first write", "token=4\n", { "-t", "4", F }, nothing, 0, 0, 4,
	  UINT64_MAX, 4 },
	/* A claim moves the fence and leaves FILE: both its copies. */
	{ "claim", NULL, { "--claim", "-t", "7", F }, existing, 0, 5, 5, 5, 7 },
	{ "update", NULL, { "-t", "7", "--update", F, "--", "sed", "s/=5/=7/" },
	  existing, 0, 5, 7, 5, 7 },
	{ "delete of an absent file", NULL, { "--delete", "-t", "4", F },
	  nothing, 0, 0, 0, UINT64_MAX, 4 },
};

static const struct { const char *name; int err; } outcomes[] = {
	{ "kill", 0 }, { "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EINTR", EINTR },
	{ "EDQUOT", EDQUOT }, { "EROFS", EROFS },
};

static void fresh_dir(void)
{
	assert_int_equal(system("rm -rf run && mkdir run"), 0);
	assert_int_equal(chdir("run"), 0);
}

static int run_scenario(const struct scenario *s)
{
	char *argv[12];
	int n = 0;

	argv[n++] = (char *)"fencedwrite";
	for (int i = 0; i < 10 && s->args[i]; i++)
		argv[n++] = (char *)s->args[i];
	argv[n] = NULL;
	return fwt_runv(s->input, NULL, NULL, argv);
}

static char *read_text(const char *path)
{
	char *t = fwt_slurp(path, NULL);
	size_t n;

	assert_non_null(t);
	n = strlen(t);
	if (n && t[n - 1] == '\n')
		t[n - 1] = '\0';
	return t;
}

/* The invariants after an interrupted or failed run. */
static void check_after(const struct scenario *s, int rc, int err,
                        const char *where)
{
	struct fw_fence_info info;
	struct fw_result res;
	size_t len;
	char *content = fwt_slurp(F, &len);
	uint64_t tok = content ? payload_token(content, len) : 0;
	int has_fence = access(FENCE, F_OK) == 0;

	if (content && tok == 0)
		fail_msg("%s: FILE is not a whole payload", where);
	if (tok != s->old_tok && tok != s->new_tok)
		fail_msg("%s: FILE has token %llu", where,
		         (unsigned long long)tok);
	if (has_fence) {
		uint64_t fence;

		if (fw_show(F, NULL, &info, &res) != FW_OK)
			fail_msg("%s: fence unreadable: %s", where,
			         res.message);
		fence = info.token;
		if (fence != s->old_fence && fence != s->new_fence &&
		    !(s->old_fence == UINT64_MAX && fence == 0))
			fail_msg("%s: fence went to %llu", where,
			         (unsigned long long)fence);
		if (fence < tok)
			fail_msg("%s: fence %llu behind FILE's token %llu",
			         where, (unsigned long long)fence,
			         (unsigned long long)tok);
	} else if (s->old_fence != UINT64_MAX) {
		fail_msg("%s: the fence disappeared", where);
	} else if (content && s->old_tok == 0) {
		fail_msg("%s: FILE appeared without a fence", where);
	}
	if (err == 0) {
		if (rc != 128 + SIGKILL)
			fail_msg("%s: exit %d, not killed", where, rc);
	} else if (rc == s->ok_rc) {
		/* The failure was absorbed (a retried EINTR, an ignored
		   close): then the outcome must be complete. */
		if (tok != s->new_tok)
			fail_msg("%s: exit %d but FILE has %llu", where, rc,
			         (unsigned long long)tok);
	} else if (rc != FW_SYSTEM) {
		fail_msg("%s: exit %d", where, rc);
	}
	free(content);
}

static void check_recovers(const struct scenario *s, const char *where)
{
	char *text;

	/* An adoption cut short may have left no fence: adopt again. */
	if (s->old_fence == UINT64_MAX && s->old_tok != 0 &&
	    access(FENCE, F_OK) != 0)
		assert_int_equal(fwt_run(NULL, NULL, NULL, "--init", "-t", "6",
		                         F, (char *)NULL), 0);
	if (fwt_run("token=100\n", NULL, NULL, "-t", "100", F,
	            (char *)NULL) != 0)
		fail_msg("%s: a later valid write failed", where);
	text = read_text(F);
	assert_string_equal(text, "token=100");
	free(text);
	assert_true(fwt_fence_token(F) == 100);
}

static void every_call_killed_or_failed_leaves_a_safe_state(void **state)
{
	unsigned long runs = 0;

	(void)state;
	for (size_t si = 0; si < sizeof(scenarios) / sizeof(scenarios[0]); si++) {
		const struct scenario *s = &scenarios[si];
		long calls;
		char *text;

		fresh_dir();
		s->setup();
		setenv("FWT_COUNT", "../count", 1);
		assert_int_equal(run_scenario(s), s->ok_rc);
		unsetenv("FWT_COUNT");
		text = read_text("../count");
		calls = atol(text);
		free(text);
		assert_true(calls > 5);
		assert_int_equal(chdir(".."), 0);

		for (long k = 1; k <= calls; k++) {
			for (size_t o = 0; o < sizeof(outcomes) /
			                       sizeof(outcomes[0]); o++) {
				char spec[32], where[160], *call;
				int rc;

				fresh_dir();
				s->setup();
				snprintf(spec, sizeof(spec), "%ld:%s", k,
				         outcomes[o].err ? "" : "kill");
				if (outcomes[o].err)
					snprintf(spec, sizeof(spec), "%ld:%d",
					         k, outcomes[o].err);
				setenv("FWT_CRASH", spec, 1);
				setenv("FWT_COUNT", "../count", 1);
				unlink("../count");
				rc = run_scenario(s);
				unsetenv("FWT_CRASH");
				unsetenv("FWT_COUNT");
				call = access("../count", F_OK) == 0
				       ? read_text("../count") : strdup("?");
				snprintf(where, sizeof(where),
				         "%s, call %ld (%s) %s", s->name, k,
				         call, outcomes[o].name);
				check_after(s, rc, outcomes[o].err, where);
				/* A failure the process saw leaves no
				   temporary file, unless the failing call was
				   the very unlink that removes one. */
				if (outcomes[o].err && strcmp(call, "unlinkat") &&
				    fwt_count_tmp(".") != 0)
					fail_msg("%s: temporary file left",
					         where);
				check_recovers(s, where);
				free(call);
				assert_int_equal(chdir(".."), 0);
				runs++;
			}
		}
	}
	print_message("crash: %lu runs (every call x kill, EIO, ENOSPC, "
	              "EINTR, EDQUOT, EROFS), 0 violations\n", runs);
}

/* ---- 2. power loss -------------------------------------------------- */

#define MAXN 64
#define MAXI 64

struct inode {
	unsigned long ino;
	char cur[4096], synced[4096];
	size_t curlen, syncedlen;
};

struct names {
	char name[MAXN][128];
	unsigned long ino[MAXN];
	int n;
};

struct model {
	struct inode in[MAXI];
	int nin;
	struct names now, durable;
	char pending[MAXN][300];   /* namespace ops since the last dir fsync */
	int npending;
};

static struct inode *inode_of(struct model *m, unsigned long ino, int add)
{
	for (int i = 0; i < m->nin; i++)
		if (m->in[i].ino == ino)
			return &m->in[i];
	if (!add)
		return NULL;
	assert_true(m->nin < MAXI);
	memset(&m->in[m->nin], 0, sizeof(m->in[0]));
	m->in[m->nin].ino = ino;
	return &m->in[m->nin++];
}

static int find(const struct names *ns, const char *name)
{
	for (int i = 0; i < ns->n; i++)
		if (strcmp(ns->name[i], name) == 0)
			return i;
	return -1;
}

static void set_name(struct names *ns, const char *name, unsigned long ino)
{
	int i = find(ns, name);

	if (i < 0) {
		assert_true(ns->n < MAXN);
		i = ns->n++;
		snprintf(ns->name[i], sizeof(ns->name[i]), "%s", name);
	}
	ns->ino[i] = ino;
}

static void drop_name(struct names *ns, const char *name)
{
	int i = find(ns, name);

	if (i >= 0) {
		ns->n--;
		memmove(&ns->name[i], &ns->name[i + 1],
		        (size_t)(ns->n - i) * sizeof(ns->name[0]));
		memmove(&ns->ino[i], &ns->ino[i + 1],
		        (size_t)(ns->n - i) * sizeof(ns->ino[0]));
	}
}

/* Apply one namespace op ("C ino name", "R a b", "L a b", "U a"). */
static void apply_ns(struct names *ns, const char *op)
{
	char a[128], b[128];
	unsigned long ino;
	int i;

	if (sscanf(op, "C %lu %127s", &ino, a) == 2) {
		set_name(ns, a, ino);
	} else if (sscanf(op, "R %127s %127s", a, b) == 2) {
		if ((i = find(ns, a)) >= 0) {
			ino = ns->ino[i];
			drop_name(ns, a);
			set_name(ns, b, ino);
		}
	} else if (sscanf(op, "L %127s %127s", a, b) == 2) {
		if ((i = find(ns, a)) >= 0)
			set_name(ns, b, ns->ino[i]);
	} else if (sscanf(op, "U %127s", a) == 1) {
		drop_name(ns, a);
	}
}

/* FILE (F, NULL if absent) is what record R says it is. */
static int file_is(const struct inode *f, const struct fw_record *r)
{
	struct fw_digest d;

	if (r->file == FW_FILE_ABSENT)
		return f == NULL;
	if (r->file != FW_FILE_PRESENT || !f || f->ino != r->ino ||
	    f->syncedlen != r->size)
		return 0;
	fw_digest_init(&d);
	fw_digest_update(&d, f->synced, f->syncedlen);
	return fw_digest_final(&d) == r->digest;
}

/* What a crash now could leave, with the first J pending ops durable. */
static void check_crash_state(const struct model *m, int j,
                              const struct scenario *s, const char *where)
{
	struct names ns = m->durable;
	const struct inode *f = NULL, *fence = NULL;
	uint64_t tok = 0, ftok;
	struct fw_fence rec;
	char why[160];
	int i;

	for (int k = 0; k < j; k++)
		apply_ns(&ns, m->pending[k]);
	if ((i = find(&ns, F)) >= 0)
		f = inode_of((struct model *)m, ns.ino[i], 0);
	if ((i = find(&ns, FENCE)) >= 0)
		fence = inode_of((struct model *)m, ns.ino[i], 0);
	if (f) {
		tok = payload_token(f->synced, f->syncedlen);
		if (tok == 0 || (tok != s->old_tok && tok != s->new_tok))
			fail_msg("%s: FILE would hold %zu bytes '%.*s'", where,
			         f->syncedlen, (int)f->syncedlen, f->synced);
	}
	if (!fence) {
		if (s->old_fence != UINT64_MAX)
			fail_msg("%s: the fence would be gone", where);
		if (f && s->old_tok == 0)
			fail_msg("%s: FILE would exist without a fence", where);
		return;
	}
	if (fw_record_parse(fence->synced, fence->syncedlen, &rec, why,
	                    sizeof(why)) != 0)
		fail_msg("%s: the fence would be unreadable: %s", where, why);
	/* A torn slot is only read past when FILE is what the surviving
	   record says: a power loss must never leave a fence that then
	   fails closed. */
	if (rec.damaged && !file_is(f, &rec.cur))
		fail_msg("%s: the fence would be damaged (%s) and FILE not "
		         "what its surviving record says: it would fail closed",
		         where, rec.damage);
	ftok = rec.cur.token;
	if (ftok < tok)
		fail_msg("%s: the fence would say %llu, FILE %llu", where,
		         (unsigned long long)ftok, (unsigned long long)tok);
}

static void load_initial(struct model *m)
{
	DIR *d = opendir(".");
	struct dirent *de;

	assert_non_null(d);
	memset(m, 0, sizeof(*m));
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		struct inode *in;
		char *data;
		size_t len;

		if (de->d_name[0] == '.' && (!de->d_name[1] ||
		    (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		assert_int_equal(lstat(de->d_name, &st), 0);
		in = inode_of(m, (unsigned long)st.st_ino, 1);
		data = fwt_slurp(de->d_name, &len);
		assert_true(len < sizeof(in->cur));
		memcpy(in->cur, data, len);
		memcpy(in->synced, data, len);
		in->curlen = in->syncedlen = len;
		free(data);
		set_name(&m->now, de->d_name, in->ino);
	}
	closedir(d);
	m->durable = m->now;
}

static void hex_into(struct inode *in, long long off, const char *hex)
{
	size_t n = strlen(hex) / 2;

	assert_true((size_t)off + n <= sizeof(in->cur));
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		in->cur[off + (long long)i] = (char)v;
	}
	if ((size_t)off + n > in->curlen)
		in->curlen = (size_t)off + n;
}

/*
 * A write to a file whose content is otherwise synced may be torn by a
 * power loss: any prefix of it may reach the disk.  Check the states where
 * the write stopped after CUT bytes, for cuts across the whole write.
 */
static unsigned long torn_states(struct model *m, struct inode *in,
                                 long long off, const char *hex,
                                 const struct scenario *s, int point)
{
	size_t n = strlen(hex) / 2;
	struct inode saved = *in;
	unsigned long count = 0;
	char where[200], part[2100];

	if (in->curlen != in->syncedlen ||
	    memcmp(in->cur, in->synced, in->curlen) != 0)
		return 0;
	for (size_t cut = 1; cut < n; cut += cut < 16 ? 5 : 16, count++) {
		memcpy(part, hex, 2 * cut);
		part[2 * cut] = '\0';
		hex_into(in, off, part);
		memcpy(in->synced, in->cur, in->curlen);
		in->syncedlen = in->curlen;
		snprintf(where, sizeof(where), "%s: power lost during op %d, "
		         "%zu of %zu bytes written", s->name, point + 1, cut,
		         n);
		check_crash_state(m, m->npending, s, where);
		*in = saved;
	}
	return count;
}

static void power_loss_at_every_point_keeps_invariants(void **state)
{
	unsigned long states = 0;

	(void)state;
	for (size_t si = 0; si < sizeof(scenarios) / sizeof(scenarios[0]); si++) {
		const struct scenario *s = &scenarios[si];
		struct model m;
		char line[2200], where[200];
		FILE *trace;
		int point = 0;

		fresh_dir();
		s->setup();
		sync();             /* the starting state is durable */
		load_initial(&m);
		setenv("FWT_TRACE", "../trace", 1);
		unlink("../trace");
		assert_int_equal(run_scenario(s), s->ok_rc);
		unsetenv("FWT_TRACE");
		trace = fopen("../trace", "r");
		assert_non_null(trace);
		for (;;) {
			char *got = fgets(line, sizeof(line), trace);
			unsigned long ino;
			long long off;
			char hex[2100];
			struct inode *in;

			/* a crash before this op (or after the last one) */
			for (int j = 0; j <= m.npending; j++, states++) {
				snprintf(where, sizeof(where),
				         "%s: power lost before op %d, %d of "
				         "%d pending names durable", s->name,
				         point, j, m.npending);
				check_crash_state(&m, j, s, where);
			}
			if (!got)
				break;
			point++;
			line[strcspn(line, "\n")] = '\0';
			if (sscanf(line, "W %lu %lld %2099s", &ino, &off,
			           hex) == 3) {
				if ((in = inode_of(&m, ino, 0)) != NULL) {
					states += torn_states(&m, in, off, hex,
					                      s, point);
					hex_into(in, off, hex);
				}
			} else if (sscanf(line, "S %lu", &ino) == 1) {
				if ((in = inode_of(&m, ino, 0)) != NULL) {
					memcpy(in->synced, in->cur, in->curlen);
					in->syncedlen = in->curlen;
				}
			} else if (strcmp(line, "D") == 0) {
				m.durable = m.now;
				m.npending = 0;
			} else {
				if (sscanf(line, "C %lu", &ino) == 1)
					inode_of(&m, ino, 1);
				apply_ns(&m.now, line);
				assert_true(m.npending < MAXN &&
				            strlen(line) < sizeof(m.pending[0]));
				memcpy(m.pending[m.npending++], line,
				       strlen(line) + 1);
			}
		}
		fclose(trace);
		assert_int_equal(chdir(".."), 0);
	}
	print_message("power loss: %lu crash states checked, 0 violations\n",
	              states);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(every_call_killed_or_failed_leaves_a_safe_state),
		T(power_loss_at_every_point_keeps_invariants),
	};
	if (!getenv("LD_PRELOAD") || !strstr(getenv("LD_PRELOAD"), "faults"))
		fprintf(stderr, "test_crash: run under faults.so "
		        "(make check does)\n");
	return cmocka_run_group_tests_name("crash", tests, NULL, NULL);
}
