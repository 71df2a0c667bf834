/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the command's options, parsed apart from running them so the
 * parser can be tested and fuzzed on its own.
 */
#ifndef FW_CLI_H
#define FW_CLI_H

#include "fencedwrite.h"

#define PROG "fencedwrite"

/* In the order of --help, the option table and the man page. */
enum action { WRITE, READ, UPDATE, APPEND, CLAIM, DELETE, CHECK, SHOW,
              VERIFY, INIT, CLEAN, DOCTOR };

struct cli {
	enum action action;
	int action_set;
	const char *token_text;
	const char *token_env;      /* the variable token_text came from */
	uint64_t token;             /* 0 only with --init */
	int quiet, json;
	int no_claim;               /* --no-claim: CMD runs before any claim */
	int cmd_status;             /* --cmd-status: a failed CMD's own status */
	int progress;               /* --progress: asked for; shown on a tty */
	const char *token_file;     /* --read: where the content's token goes */
	const char *file;
	char **cmd;                 /* NULL: content from standard input */
	int stdin_closed;           /* set by the caller before parsing */
	int syslog;                 /* --syslog: one line per run to syslog */
	const char *metrics;        /* --metrics: the textfile to update */
	struct fw_opts opts;
};

/*
 * Parse ARGV into C (which the caller has zeroed, with fw_opts_init done).
 * Options may come before and after FILE (unless POSIXLY_CORRECT is set);
 * everything after the "--" that follows FILE is CMD, untouched.  ARGV is
 * never reordered.  FW_OK: run it.  FW_USAGE: the error has been printed
 * (one line, then a pointer to --help).  -1: --help or --version was
 * printed; exit 0.
 */
int fw_cli_parse(struct cli *c, int argc, char **argv);

/* Length of the well-formed UTF-8 sequence at S, or 0 (RFC 3629: no
   overlong forms, no surrogates, nothing above U+10FFFF): JSON output and
   metrics labels must be UTF-8.  In cli.c. */
size_t cli_utf8_len(const unsigned char *s);

#endif
