/*
 * cli.c - fencedwrite(1): options, messages and exit codes over the
 * library.  Protocol decisions live in commit.c; this file only translates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fencedwrite.h"

#define PROG "fencedwrite"
#define EXIT_CMD_FAILED 6

extern char **environ;

/* Set by the handler; the library checks it when a call is interrupted. */
static volatile sig_atomic_t got_signal;
/* CMD while it runs, so the handler can pass a signal on to it. */
static volatile pid_t child_pid;

enum action { WRITE, DELETE, CHECK, SHOW, INIT, CLEAN };

struct cli {
	enum action action;
	int action_set;
	const char *token_text;
	uint64_t token;
	int quiet, json;
	const char *file;
	char **cmd;                 /* NULL: content from standard input */
	int stdin_closed;
	struct fw_opts opts;
};

static void usage_line(FILE *out)
{
	fprintf(out,
	        "Usage: " PROG " -t N [OPTIONS] FILE [-- CMD [ARG...]]\n"
	        "       " PROG " --delete -t N [OPTIONS] FILE\n"
	        "       " PROG " --check -t N [OPTIONS] FILE\n"
	        "       " PROG " --show [--json] [OPTIONS] FILE\n"
	        "       " PROG " --init [-t N] [OPTIONS] FILE\n"
	        "       " PROG " --clean [OPTIONS] FILE\n");
}

static void help(void)
{
	usage_line(stdout);
	fputs("\n"
	      "Replace FILE with new content only if fencing token N is larger than\n"
	      "every token accepted before, as recorded in FILE's fence (FILE.fence).\n"
	      "The content comes from standard input, or from CMD's standard output\n"
	      "when CMD is given (committed only if CMD exits 0).\n"
	      "\n"
	      "Actions (default: write):\n"
	      "      --delete          remove FILE under the fence; the fence stays\n"
	      "      --check           exit 0 if N would be accepted now, 1 if not\n"
	      "      --show            print the fence's token\n"
	      "      --init            adopt an existing FILE: create its fence with\n"
	      "                        token N (default 0)\n"
	      "      --clean           remove temporary files of writers that died\n"
	      "\n"
	      "Options:\n"
	      "  -t, --token N         the fencing token: decimal, 1 to 18446744073709551615\n"
	      "      --fence PATH      the fence file (default: FILE.fence)\n"
	      "  -w, --timeout SECS    give up if the lock is not acquired in SECS\n"
	      "                        (fractions allowed; default: wait for ever)\n"
	      "  -n, --nonblock        give up at once if the lock is held (-w 0)\n"
	      "      --allow-equal     accept a token equal to the fence's\n"
	      "      --mode OCTAL      permission bits for FILE (default: keep FILE's,\n"
	      "                        or 0666 & ~umask for a new FILE)\n"
	      "      --json            with --show: print the whole fence record as JSON\n"
	      "  -q, --quiet           no message for exit 1 (stale) or 4 (lock busy)\n"
	      "  -h, --help            show this help and exit\n"
	      "  -V, --version         show the version and exit\n"
	      "\n"
	      "Exit status:\n"
	      "  0  committed (with --check: N would be accepted)\n"
	      "  1  stale token: N is not larger than the fence's; nothing changed\n"
	      "  2  usage error; nothing changed\n"
	      "  3  fence missing, corrupt or unsafe: failed closed; nothing changed\n"
	      "  4  lock not acquired within -w/-n; nothing changed\n"
	      "  5  system or I/O error; FILE holds its old or its new content\n"
	      "  6  CMD failed or was killed; nothing committed\n"
	      "\n"
	      "See fencedwrite(1), fencedwrite-fence(5), libfencedwrite(3).\n",
	      stdout);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
	return FW_USAGE;
}

/* SECS: digits, optionally a '.' and up to 3 more digits. */
static int parse_timeout(const char *s, long *ms)
{
	long whole = 0, frac = 0, scale = 100;
	const char *p = s;

	if (!*p)
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (whole > 100000000)
			return -1;
		whole = whole * 10 + (*p - '0');
	}
	if (p == s)
		return -1;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			if (scale == 0)
				return -1;
			else
				frac += (*p - '0') * scale;
	}
	if (*p)
		return -1;
	*ms = whole * 1000 + frac;
	return 0;
}

static int parse_mode(const char *s, mode_t *mode)
{
	unsigned long v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '7'; p++)
		v = v * 8 + (unsigned long)(*p - '0');
	if (p == s || *p || p - s > 4)
		return -1;
	*mode = (mode_t)v;
	return 0;
}

static int set_action(struct cli *c, enum action a)
{
	if (c->action_set && c->action != a)
		return -1;
	c->action = a;
	c->action_set = 1;
	return 0;
}

static int parse_args(struct cli *c, int argc, char **argv)
{
	enum { OPT_FENCE = 256, OPT_ALLOW_EQUAL, OPT_MODE, OPT_JSON,
	       OPT_DELETE, OPT_CHECK, OPT_SHOW, OPT_INIT, OPT_CLEAN };
	static const struct option longopts[] = {
		{ "token", required_argument, NULL, 't' },
		{ "fence", required_argument, NULL, OPT_FENCE },
		{ "timeout", required_argument, NULL, 'w' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "allow-equal", no_argument, NULL, OPT_ALLOW_EQUAL },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "delete", no_argument, NULL, OPT_DELETE },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "show", no_argument, NULL, OPT_SHOW },
		{ "init", no_argument, NULL, OPT_INIT },
		{ "clean", no_argument, NULL, OPT_CLEAN },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int ch, rest;

	/* '+': options end at FILE, so CMD's own options are never ours. */
	while ((ch = getopt_long(argc, argv, "+t:w:nqhV", longopts, NULL)) != -1) {
		switch (ch) {
		case 't':
			c->token_text = optarg;
			if (fw_parse_token(optarg, &c->token) != FW_OK)
				return usage_error("invalid token '%s': want "
				                   "decimal digits, 1 to "
				                   "18446744073709551615", optarg);
			break;
		case OPT_FENCE:
			c->opts.fence_path = optarg;
			break;
		case 'w':
			if (parse_timeout(optarg, &c->opts.timeout_ms) < 0)
				return usage_error("invalid timeout '%s': want "
				                   "seconds, e.g. 10 or 0.5", optarg);
			break;
		case 'n':
			c->opts.timeout_ms = 0;
			break;
		case OPT_ALLOW_EQUAL:
			c->opts.flags |= FW_ALLOW_EQUAL;
			break;
		case OPT_MODE:
			if (parse_mode(optarg, &c->opts.mode) < 0)
				return usage_error("invalid mode '%s': want "
				                   "octal, e.g. 0644", optarg);
			c->opts.flags |= FW_USE_MODE;
			break;
		case OPT_JSON:
			c->json = 1;
			break;
		case 'q':
			c->quiet = 1;
			break;
		case OPT_DELETE: case OPT_CHECK: case OPT_SHOW: case OPT_INIT:
		case OPT_CLEAN:
			if (set_action(c, (enum action[]){ DELETE, CHECK, SHOW,
			               INIT, CLEAN }[ch - OPT_DELETE]) < 0)
				return usage_error("%s", "only one of --delete, "
				                   "--check, --show, --init, --clean "
				                   "may be given");
			break;
		case 'h':
			help();
			return -1;
		case 'V':
			printf(PROG " " FW_VERSION "\n");
			return -1;
		default:
			usage_line(stderr);
			return FW_USAGE;
		}
	}
	rest = argc - optind;
	if (rest < 1)
		return usage_error("%s", "no FILE given");
	c->file = argv[optind];
	if (rest > 1) {
		if (strcmp(argv[optind + 1], "--") != 0)
			return usage_error("unexpected argument '%s' after FILE "
			                   "(put CMD after --)", argv[optind + 1]);
		if (c->action != WRITE)
			return usage_error("%s", "a CMD is only run when writing");
		if (rest < 3)
			return usage_error("%s", "no CMD after --");
		c->cmd = argv + optind + 2;
	}
	if (c->json && c->action != SHOW)
		return usage_error("%s", "--json goes with --show");
	if (!c->token_text && (c->action == WRITE || c->action == DELETE ||
	                       c->action == CHECK))
		return usage_error("%s", "no token given: use -t N");
	if (c->token_text && (c->action == SHOW || c->action == CLEAN))
		return usage_error("%s", "-t has no meaning with --show or --clean");
	if (c->action == WRITE && !c->cmd && c->stdin_closed)
		return usage_error("%s", "standard input is closed: give the "
		                   "content on standard input or as -- CMD");
	return FW_OK;
}

static void on_signal(int sig)
{
	int saved = errno;

	got_signal = sig;
	/* A signal meant for us alone (a cron timeout kills only us) must
	   stop CMD too, or we would wait for it to finish on its own. */
	if (child_pid > 0)
		kill(child_pid, sig);
	errno = saved;
}

/* Signals end a run cleanly: the library notices, removes its temporary
   file, and main() then dies of the same signal, as the caller expects. */
static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;   /* no SA_RESTART: blocking calls return */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static void die_of_signal(void)
{
	int sig = got_signal;

	signal(sig, SIG_DFL);
	raise(sig);
}

/* A closed 0, 1 or 2 would be reused by our own files; then a message
   meant for stderr could land in the new content. */
static void keep_std_fds_open(struct cli *c)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (fd == 0)
			c->stdin_closed = 1;
		if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
			_exit(FW_SYSTEM);
	}
}

/* Run CMD with its standard output going into the transaction. */
static int run_cmd(struct fw_txn *txn, char **cmd)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fw_txn_fd(txn), STDOUT_FILENO);
	rc = posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, PROG ": %s: %s\n", cmd[0], strerror(rc));
		return EXIT_CMD_FAILED;
	}
	child_pid = pid;
	/* A signal that came before child_pid was set was not passed on. */
	if (got_signal)
		kill(pid, got_signal);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, PROG ": waitpid(%s): %s\n", cmd[0],
			        strerror(errno));
			child_pid = 0;
			return FW_SYSTEM;
		}
	}
	child_pid = 0;
	if (got_signal)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FW_OK;
	if (WIFEXITED(status))
		fprintf(stderr, PROG ": %s exited with status %d; nothing "
		        "committed\n", cmd[0], WEXITSTATUS(status));
	else
		fprintf(stderr, PROG ": %s was killed by signal %d (%s); "
		        "nothing committed\n", cmd[0], WTERMSIG(status),
		        strsignal(WTERMSIG(status)));
	return EXIT_CMD_FAILED;
}

static int do_write(struct cli *c, struct fw_result *res)
{
	struct fw_txn *txn;
	int rc = fw_txn_begin(&txn, c->file, &c->opts, res);

	if (rc != FW_OK)
		return rc;
	if (c->cmd) {
		rc = run_cmd(txn, c->cmd);
		if (rc != FW_OK) {
			fw_txn_abort(txn);
			res->message[0] = '\0';   /* run_cmd said why */
			return rc < 0 ? FW_SYSTEM : rc;
		}
	} else {
		rc = fw_txn_copy_fd(txn, STDIN_FILENO, "standard input", res);
		if (rc != FW_OK) {
			fw_txn_abort(txn);
			return rc;
		}
	}
	return fw_txn_commit(txn, c->token, res);
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static int do_show(struct cli *c, struct fw_result *res)
{
	struct fw_fence_info info;
	char when[32];
	struct tm tm;
	time_t t;
	int rc = fw_show(c->file, &c->opts, &info, res);

	if (rc != FW_OK)
		return rc;
	if (!c->json) {
		printf("%llu\n", (unsigned long long)info.token);
		return FW_OK;
	}
	t = (time_t)info.time;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("{\"file\":");
	json_string(c->file);
	printf(",\"fence\":");
	if (c->opts.fence_path) {
		json_string(c->opts.fence_path);
	} else {
		char fence[PATH_MAX + 8];

		snprintf(fence, sizeof(fence), "%s.fence", c->file);
		json_string(fence);
	}
	printf(",\"token\":%llu,\"seq\":%llu,\"op\":\"%s\",\"time\":\"%s\","
	       "\"pid\":%ld,\"host\":\"%s\"}\n",
	       (unsigned long long)info.token, (unsigned long long)info.seq,
	       info.op, when, info.pid, info.host);
	return FW_OK;
}

int main(int argc, char **argv)
{
	struct cli c;
	struct fw_result res;
	unsigned removed = 0;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(&res, 0, sizeof(res));
	fw_opts_init(&c.opts);
	keep_std_fds_open(&c);
	rc = parse_args(&c, argc, argv);
	if (rc < 0)
		return 0;
	if (rc != FW_OK)
		return rc;
	catch_signals();
	c.opts.cancel = &got_signal;

	switch (c.action) {
	case WRITE: rc = do_write(&c, &res); break;
	case DELETE: rc = fw_delete(c.file, c.token, &c.opts, &res); break;
	case CHECK: rc = fw_check(c.file, c.token, &c.opts, &res); break;
	case SHOW: rc = do_show(&c, &res); break;
	case INIT: rc = fw_init(c.file, c.token, &c.opts, &res); break;
	case CLEAN:
		rc = fw_clean(c.file, &c.opts, &removed, &res);
		if (rc == FW_OK && removed && !c.quiet)
			fprintf(stderr, PROG ": removed %u leftover temporary "
			        "file%s\n", removed, removed == 1 ? "" : "s");
		break;
	}
	if (rc != FW_OK && got_signal)
		die_of_signal();
	if (rc != FW_OK && res.message[0] &&
	    !(c.quiet && (rc == FW_STALE || rc == FW_LOCKED)))
		fprintf(stderr, PROG ": %s\n", res.message);
	if (fflush(stdout) != 0 && rc == FW_OK) {
		fprintf(stderr, PROG ": write(standard output): %s\n",
		        strerror(errno));
		rc = FW_SYSTEM;
	}
	return rc;
}
