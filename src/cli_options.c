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
	        "Usage: " PROG " -t N [OPTIONS] FILE [-- CMD [ARG...]]\n"
	        "       " PROG " --delete -t N [OPTIONS] FILE\n"
	        "       " PROG " --check -t N [OPTIONS] FILE\n"
	        "       " PROG " --show [--json] [OPTIONS] FILE\n"
	        "       " PROG " --init [-t N] [OPTIONS] FILE\n"
	        "       " PROG " --clean [OPTIONS] FILE\n"
	        "       " PROG " --doctor [--json] [OPTIONS] FILE\n");
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
	      "      --json            with --show or --doctor: print JSON\n"
	      "      --local-locks-ok  write even where locks exclude only this host\n"
	      "                        (NFS nolock, local_lock=posix|all): only if every\n"
	      "                        writer runs on this host\n"
	      "      --mountinfo FILE  read the mount table from FILE instead of\n"
	      "                        /proc/self/mountinfo (diagnosis, tests)\n"
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

int fw_cli_parse(struct cli *c, int argc, char **argv)
{
	enum { OPT_FENCE = 256, OPT_TOKEN_ENV, OPT_ALLOW_EQUAL, OPT_MODE, OPT_JSON,
	       OPT_DELETE, OPT_CHECK, OPT_SHOW, OPT_INIT, OPT_CLEAN, OPT_DOCTOR,
	       OPT_LOCAL_LOCKS_OK, OPT_MOUNTINFO };
	static const struct option longopts[] = {
		{ "token", required_argument, NULL, 't' },
		{ "token-env", required_argument, NULL, OPT_TOKEN_ENV },
		{ "fence", required_argument, NULL, OPT_FENCE },
		{ "timeout", required_argument, NULL, 'w' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "allow-equal", no_argument, NULL, OPT_ALLOW_EQUAL },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "local-locks-ok", no_argument, NULL, OPT_LOCAL_LOCKS_OK },
		{ "mountinfo", required_argument, NULL, OPT_MOUNTINFO },
		{ "quiet", no_argument, NULL, 'q' },
		{ "delete", no_argument, NULL, OPT_DELETE },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "show", no_argument, NULL, OPT_SHOW },
		{ "init", no_argument, NULL, OPT_INIT },
		{ "clean", no_argument, NULL, OPT_CLEAN },
		{ "doctor", no_argument, NULL, OPT_DOCTOR },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int ch, rest;

	optind = 0;   /* glibc: start afresh, also on a second call */
	/* '+': options end at FILE, so CMD's own options are never ours. */
	while ((ch = getopt_long(argc, argv, "+t:w:nqhV", longopts, NULL)) != -1) {
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
		case OPT_JSON:
			c->json = 1;
			break;
		case 'q':
			c->quiet = 1;
			break;
		case OPT_DELETE: case OPT_CHECK: case OPT_SHOW: case OPT_INIT:
		case OPT_CLEAN: case OPT_DOCTOR:
			if (set_action(c, (enum action[]){ DELETE, CHECK, SHOW,
			               INIT, CLEAN, DOCTOR }[ch - OPT_DELETE]) < 0)
				return usage_error("%s", "only one of --delete, "
				                   "--check, --show, --init, --clean, "
				                   "--doctor may be given");
			break;
		case OPT_LOCAL_LOCKS_OK:
			c->opts.flags |= FW_LOCAL_LOCKS_OK;
			break;
		case OPT_MOUNTINFO:
			c->opts.mountinfo = optarg;
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
	if (c->json && c->action != SHOW && c->action != DOCTOR)
		return usage_error("%s", "--json goes with --show or --doctor");
	if (!c->token_text && (c->action == WRITE || c->action == DELETE ||
	                       c->action == CHECK))
		return usage_error("%s", "no token given: use -t N or "
		                   "--token-env NAME");
	if (c->token_text && c->token == 0 && c->action != INIT)
		return bad_token(c);
	if (c->token_text && (c->action == SHOW || c->action == CLEAN ||
	                      c->action == DOCTOR))
		return usage_error("%s", "a token has no meaning with --show, "
		                   "--clean or --doctor");
	if (c->action == WRITE && !c->cmd && c->stdin_closed)
		return usage_error("%s", "standard input is closed: give the "
		                   "content on standard input or as -- CMD");
	return FW_OK;
}

