/* SPDX-License-Identifier: MIT */
/*
 * cli_options.c - fencedwrite(1)'s options: the table, the help text and
 * their parsing.  Each option has its line in --help and in the man page,
 * in the same order.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage_line(FILE *out)
{
	fprintf(out,
	        "Usage: " PROG " -t N [OPTIONS] FILE -- CMD [ARG...]\n"
	        "       " PROG " -t N [OPTIONS] FILE < CONTENT\n"
	        "       " PROG " --read [--token-file PATH] [OPTIONS] FILE\n"
	        "       " PROG " --update -t N [OPTIONS] FILE -- CMD [ARG...]\n"
	        "       " PROG " --append -t N [OPTIONS] FILE [-- CMD [ARG...]]\n"
	        "       " PROG " --claim -t N [OPTIONS] FILE\n"
	        "       " PROG " --delete -t N [OPTIONS] FILE\n"
	        "       " PROG " --check -t N [OPTIONS] FILE\n"
	        "       " PROG " --show [--json] [OPTIONS] FILE\n"
	        "       " PROG " --verify [--json] [OPTIONS] FILE\n"
	        "       " PROG " --init [-t N] [OPTIONS] FILE\n"
	        "       " PROG " --clean [OPTIONS] FILE\n"
	        "       " PROG " --doctor [--json] [OPTIONS] FILE\n");
}

/* The lines below follow the option table in fw_cli_parse, and the man
   page follows both. */
static void help(void)
{
	usage_line(stdout);
	fputs("\n"
	      "Replace FILE with new content only if fencing token N is larger than\n"
	      "every token accepted before, as recorded in FILE's fence (FILE.fence).\n"
	      "The content is CMD's standard output, committed only if CMD exits 0\n"
	      "(N is claimed before CMD starts), or else standard input.  Prefer\n"
	      "-- CMD to a pipe: 'producer | " PROG " -t N FILE' commits whatever\n"
	      "a failed producer wrote before it failed.\n"
	      "Options may also follow FILE; everything after -- is CMD.\n"
	      "\n"
	      "Actions (default: write):\n"
	      "      --read            print one whole version of FILE\n"
	      "      --update          claim N, give CMD FILE's content on standard\n"
	      "                        input, commit CMD's output unless a newer token\n"
	      "                        claimed or committed meanwhile\n"
	      "      --append          the same, appending standard input (or CMD's\n"
	      "                        output) to FILE's content\n"
	      "      --claim           advance the fence to N; FILE is not touched\n"
	      "      --delete          remove FILE under the fence; the fence stays\n"
	      "      --check           exit 0 if N would be accepted now, 1 if not\n"
	      "      --show            print the fence's token\n"
	      "      --verify          exit 0 if FILE is exactly what the fence\n"
	      "                        committed, 3 saying what differs if not\n"
	      "      --init            adopt an existing FILE: create its fence with\n"
	      "                        token N (default 0)\n"
	      "      --clean           remove temporary files of writers that died\n"
	      "      --doctor          tell whether fencing can hold where FILE lives\n"
	      "                        (exit 0 if so, 3 if not)\n"
	      "\n"
	      "Options:\n"
	      "  -t, --token N         the fencing token: decimal, 1 to 18446744073709551615\n"
	      "                        (0 too with --init)\n"
	      "      --token-env NAME  read the token from environment variable NAME\n"
	      "                        (e.g. ETCD_LOCK_REV under 'etcdctl lock')\n"
	      "      --fence PATH      the fence file (default: FILE.fence)\n"
	      "  -w, --timeout SECS    give up if the lock is not acquired in SECS\n"
	      "                        (fractions allowed; default: wait for ever)\n"
	      "  -n, --nonblock        give up at once if the lock is held (-w 0)\n"
	      "      --allow-equal     accept a token equal to the fence's\n"
	      "      --mode OCTAL      permission bits for FILE (default: keep FILE's,\n"
	      "                        or 0666 & ~umask for a new FILE)\n"
	      "      --no-claim        with -- CMD: do not claim N before CMD starts\n"
	      "      --cmd-status      with -- CMD: when CMD fails, exit with its\n"
	      "                        status (128+N if killed by signal N), not 6\n"
	      "      --progress        show bytes so far and the rate on standard\n"
	      "                        error while the content comes in, if that is\n"
	      "                        a terminal\n"
	      "      --token-file PATH with --read: write the token the printed\n"
	      "                        content was committed under to PATH\n"
	      "      --json            with --show, --verify or --doctor: print JSON\n"
	      "      --local-locks-ok  write even where locks exclude only this host\n"
	      "                        (NFS nolock, local_lock=posix|all): only if every\n"
	      "                        writer runs on this host\n"
	      "      --mountinfo FILE  read the mount table from FILE instead of\n"
	      "                        /proc/self/mountinfo (diagnosis, tests)\n"
	      "      --syslog          log the outcome to syslog, one line per run\n"
	      "      --metrics PATH    update node_exporter textfile metrics in PATH\n"
	      "  -q, --quiet           no message for exit 1 (stale) or 4 (lock busy)\n"
	      "  -h, --help            show this help and exit\n"
	      "  -V, --version         show the version and exit\n"
	      "\n"
	      "Exit status:\n"
	      "  0  done (with --check: N would be accepted; with --verify: FILE is\n"
	      "     what the fence committed)\n"
	      "  1  stale token: N is not larger than the fence's; nothing changed\n"
	      "  2  usage error; nothing changed\n"
	      "  3  fence missing, corrupt or unsafe: failed closed; nothing changed\n"
	      "     (with --verify: FILE is not what the fence committed)\n"
	      "  4  lock not acquired within -w/-n; nothing changed\n"
	      "  5  system or I/O error; FILE holds its old or its new content\n"
	      "  6  CMD failed or was killed; nothing committed (with --cmd-status:\n"
	      "     CMD's own status, or 128+N when signal N killed it)\n"
	      "  8  the lock was lost during the change (an NFSv4 lease that lapsed);\n"
	      "     the message says whether FILE may hold this superseded content\n"
	      "\n"
	      "See fencedwrite(1), fencedwrite-fence(5), libfencedwrite(3).\n",
	      stdout);
}

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
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

/* The token text is all zeros: a token only --init may give. */
static int all_zeros(const char *s)
{
	if (!*s)
		return 0;
	while (*s == '0')
		s++;
	return *s == '\0';
}

static int bad_token(const struct cli *c)
{
	if (c->token_env)
		return usage_error("invalid token in %s='%s': want decimal "
		                   "digits, 1 to 18446744073709551615",
		                   c->token_env, c->token_text);
	return usage_error("invalid token '%s': want decimal digits, 1 to "
	                   "18446744073709551615", c->token_text);
}

/* TEXT from -t (ENV NULL) or from variable ENV.  Zero is let through
   here and judged once the action is known (-t 0 may precede --init). */
static int take_token(struct cli *c, const char *env, const char *text)
{
	c->token_env = env;
	c->token_text = text;
	if (!text)
		return usage_error("--token-env %s: no such variable in the "
		                   "environment", env);
	if (fw_parse_token(text, &c->token) == FW_OK)
		return 0;
	if (all_zeros(text)) {
		c->token = 0;
		return 0;
	}
	bad_token(c);
	return -1;
}

static int set_action(struct cli *c, enum action a)
{
	if (c->action_set && c->action != a)
		return -1;
	c->action = a;
	c->action_set = 1;
	return 0;
}

/* What each action takes besides FILE. */
static int needs_token(enum action a)
{
	return a == WRITE || a == UPDATE || a == APPEND || a == CLAIM ||
	       a == DELETE || a == CHECK;
}

static int takes_token(enum action a)
{
	return needs_token(a) || a == INIT;
}

static int takes_cmd(enum action a)
{
	return a == WRITE || a == UPDATE || a == APPEND;
}

static int takes_json(enum action a)
{
	return a == SHOW || a == VERIFY || a == DOCTOR;
}

/* Content from standard input. */
static int reads_stdin(const struct cli *c)
{
	return (c->action == WRITE || c->action == APPEND) && !c->cmd;
}

/* The combinations no action accepts; FW_OK or the error printed. */
static int check_combination(const struct cli *c)
{
	if (c->cmd && !takes_cmd(c->action))
		return usage_error("%s", "a CMD is only run when writing, with "
		                   "--update or with --append");
	if (c->action == UPDATE && !c->cmd)
		return usage_error("%s", "--update needs a CMD: FILE -- CMD");
	if (c->json && !takes_json(c->action))
		return usage_error("%s", "--json goes with --show, --verify or "
		                   "--doctor");
	if (c->token_file && c->action != READ)
		return usage_error("%s", "--token-file goes with --read");
	if (c->no_claim && !(c->action == WRITE && c->cmd))
		return usage_error("%s", "--no-claim goes with a write by "
		                   "-- CMD");
	if (c->cmd_status && !c->cmd)
		return usage_error("%s", "--cmd-status goes with -- CMD");
	if (c->progress && !takes_cmd(c->action))
		return usage_error("%s", "--progress goes with a write, "
		                   "--update or --append");
	if (!c->token_text && needs_token(c->action))
		return usage_error("%s", "no token given: use -t N or "
		                   "--token-env NAME");
	if (c->token_text && c->token == 0 && c->action != INIT)
		return bad_token(c);
	if (c->token_text && !takes_token(c->action))
		return usage_error("%s", "a token has no meaning with --read, "
		                   "--show, --verify, --clean or --doctor");
	if (reads_stdin(c) && c->stdin_closed)
		return usage_error("%s", "standard input is closed: give the "
		                   "content on standard input or as -- CMD");
	return FW_OK;
}

/* The conventional --version: name and version, copyright, licence. */
static void version(void)
{
	/* The library's own: the code that runs, whatever header built us. */
	printf(PROG " %s\n", fw_version());
	fputs("Copyright (c) 2026 The fencedwrite authors\n"
	      "License: MIT <https://opensource.org/licenses/MIT>\n"
	      "This is free software: you are free to change and redistribute "
	      "it.\n"
	      "There is NO WARRANTY, to the extent permitted by law.\n", stdout);
}

/*
 * One line for an option getopt_long refused (CH is '?' or ':'), ARG the
 * argument it was looking at.  getopt's own messages are off: they name
 * argv[0] rather than the program, and cannot say which options an
 * ambiguous abbreviation could mean.
 */
static int bad_option(int ch, const char *arg, const struct option *longopts)
{
	char list[512] = "";
	size_t n;
	int matches = 0;

	if (strncmp(arg, "--", 2) != 0) {
		if (ch == ':')
			return usage_error("option '-%c' needs an argument",
			                   optopt);
		return usage_error("unknown option '-%c'", optopt);
	}
	arg += 2;
	n = strcspn(arg, "=");
	if (optopt && ch == ':')
		return usage_error("option '--%.*s' needs an argument", (int)n,
		                   arg);
	if (optopt)
		return usage_error("option '--%.*s' takes no argument", (int)n,
		                   arg);
	for (const struct option *o = longopts; o->name; o++)
		if (strncmp(o->name, arg, n) == 0) {
			size_t len = strlen(list);

			snprintf(list + len, sizeof(list) - len, "%s--%s",
			         matches++ ? ", " : "", o->name);
		}
	if (matches > 1)
		return usage_error("option '--%.*s' is ambiguous: %s", (int)n,
		                   arg, list);
	return usage_error("unknown option '--%.*s'", (int)n, arg);
}

/*
 * What follows FILE: nothing, or "--" and CMD.  REST is the argument
 * after FILE (NULL if none), STRICT whether options had to end at FILE.
 */
static int take_cmd(struct cli *c, char **rest, int strict)
{
	if (!rest[0])
		return FW_OK;
	if (strcmp(rest[0], "--") != 0) {
		if (strict && rest[0][0] == '-' && rest[0][1])
			return usage_error("option '%s' after FILE: with "
			                   "POSIXLY_CORRECT set, options come "
			                   "before FILE", rest[0]);
		return usage_error("unexpected argument '%s' after FILE (put "
		                   "CMD after --)", rest[0]);
	}
	if (!rest[1])
		return usage_error("%s", "no CMD after --");
	c->cmd = rest + 1;
	return FW_OK;
}

int fw_cli_parse(struct cli *c, int argc, char **argv)
{
	/* An action's option is OPT_ACTION + its enum action. */
	enum { OPT_ACTION = 256, OPT_TOKEN_ENV = OPT_ACTION + DOCTOR + 1,
	       OPT_FENCE, OPT_ALLOW_EQUAL, OPT_MODE, OPT_NO_CLAIM,
	       OPT_CMD_STATUS, OPT_PROGRESS, OPT_TOKEN_FILE, OPT_JSON,
	       OPT_LOCAL_LOCKS_OK, OPT_MOUNTINFO, OPT_SYSLOG, OPT_METRICS };
	/* In the order of --help and of the man page. */
	static const struct option longopts[] = {
		{ "read", no_argument, NULL, OPT_ACTION + READ },
		{ "update", no_argument, NULL, OPT_ACTION + UPDATE },
		{ "append", no_argument, NULL, OPT_ACTION + APPEND },
		{ "claim", no_argument, NULL, OPT_ACTION + CLAIM },
		{ "delete", no_argument, NULL, OPT_ACTION + DELETE },
		{ "check", no_argument, NULL, OPT_ACTION + CHECK },
		{ "show", no_argument, NULL, OPT_ACTION + SHOW },
		{ "verify", no_argument, NULL, OPT_ACTION + VERIFY },
		{ "init", no_argument, NULL, OPT_ACTION + INIT },
		{ "clean", no_argument, NULL, OPT_ACTION + CLEAN },
		{ "doctor", no_argument, NULL, OPT_ACTION + DOCTOR },
		{ "token", required_argument, NULL, 't' },
		{ "token-env", required_argument, NULL, OPT_TOKEN_ENV },
		{ "fence", required_argument, NULL, OPT_FENCE },
		{ "timeout", required_argument, NULL, 'w' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "allow-equal", no_argument, NULL, OPT_ALLOW_EQUAL },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "no-claim", no_argument, NULL, OPT_NO_CLAIM },
		{ "cmd-status", no_argument, NULL, OPT_CMD_STATUS },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "local-locks-ok", no_argument, NULL, OPT_LOCAL_LOCKS_OK },
		{ "mountinfo", required_argument, NULL, OPT_MOUNTINFO },
		{ "syslog", no_argument, NULL, OPT_SYSLOG },
		{ "metrics", required_argument, NULL, OPT_METRICS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	/* POSIX order (options end at the first operand) on request, as GNU
	   tools do; otherwise options may follow FILE too. */
	int strict = getenv("POSIXLY_CORRECT") != NULL;

	optind = 0;   /* glibc: start afresh, also on a second call */
	opterr = 0;   /* bad_option says it, in one line */
	for (;;) {
		/* The argument getopt examines next: options are taken in
		   order ('+'), never permuted, so it is always argv[at]. */
		int at = optind ? optind : 1;
		int ch = getopt_long(argc, argv, "+:t:w:nqhV", longopts, NULL);

		if (ch == -1) {
			/* getopt stopped at an operand, or skipped a "--". */
			int dashdash = optind == at + 1 &&
			               strcmp(argv[at], "--") == 0;

			if (c->file) {
				/* FILE ... --: CMD follows, untouched. */
				if (dashdash)
					optind = at;
				break;
			}
			if (optind >= argc)
				return usage_error("%s", "no FILE given");
			c->file = argv[optind++];
			/* After "-- FILE" nothing is an option: that is how a
			   FILE named like an option is given. */
			if (dashdash || strict)
				break;
			continue;
		}
		if (ch > OPT_ACTION && ch <= OPT_ACTION + DOCTOR) {
			if (set_action(c, (enum action)(ch - OPT_ACTION)) < 0)
				return usage_error("%s", "only one of --read, "
				                   "--update, --append, --claim, "
				                   "--delete, --check, --show, "
				                   "--verify, --init, --clean, "
				                   "--doctor may be given");
			continue;
		}
		switch (ch) {
		case 't':
		case OPT_TOKEN_ENV:
			if (c->token_text)
				return usage_error("%s", "give the token once: "
				                   "-t or --token-env");
			if (take_token(c, ch == 't' ? NULL : optarg,
			               ch == 't' ? optarg : getenv(optarg)) < 0)
				return FW_USAGE;
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
		case OPT_NO_CLAIM:
			c->no_claim = 1;
			break;
		case OPT_CMD_STATUS:
			c->cmd_status = 1;
			break;
		case OPT_PROGRESS:
			c->progress = 1;
			break;
		case OPT_TOKEN_FILE:
			if (!*optarg)
				return usage_error("%s", "--token-file needs a "
				                   "path");
			c->token_file = optarg;
			break;
		case OPT_JSON:
			c->json = 1;
			break;
		case OPT_LOCAL_LOCKS_OK:
			c->opts.flags |= FW_LOCAL_LOCKS_OK;
			break;
		case OPT_MOUNTINFO:
			c->opts.mountinfo = optarg;
			break;
		case OPT_SYSLOG:
			c->syslog = 1;
			break;
		case OPT_METRICS:
			if (!*optarg)
				return usage_error("%s", "--metrics needs a path");
			c->metrics = optarg;
			break;
		case 'q':
			c->quiet = 1;
			break;
		case 'h':
			help();
			return -1;
		case 'V':
			version();
			return -1;
		default:
			return bad_option(ch, argv[at], longopts);
		}
	}
	if (take_cmd(c, argv + optind, strict) != FW_OK)
		return FW_USAGE;
	return check_combination(c);
}
