/* SPDX-License-Identifier: MIT */
/* The command: its exit codes, messages and options, as a script sees
   them. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define RUN(in, out, err, ...) fwt_run(in, out, err, __VA_ARGS__, (char *)NULL)


/* One line on stderr, prefixed with the program's name. */
static void assert_one_message(const char *err, const char *needle)
{
	assert_true(strncmp(err, "fencedwrite: ", 13) == 0);
	assert_non_null(strstr(err, needle));
	assert_int_equal(strchr(err, '\n') - err + 1, (long)strlen(err));
}

#define TRY_HELP "Try 'fencedwrite --help' for more information.\n"

/* A usage error: one line naming the problem, then where to look. */
static void assert_usage_error(const char *err, const char *needle)
{
	const char *nl = strchr(err, '\n');

	if (strncmp(err, "fencedwrite: ", 13) != 0 || !nl ||
	    strcmp(nl + 1, TRY_HELP) != 0 || !strstr(err, needle) ||
	    strstr(err, needle) > nl)
		fail_msg("not one line with '%s' and the pointer to --help:\n%s",
		         needle, err);
}

static void exit_0_commits_stdin(void **state)
{
	char *out, *err;

	(void)state;
	assert_int_equal(RUN("hello\n", &out, &err, "-t", "1", "f"), 0);
	assert_string_equal(out, "");
	assert_string_equal(err, "");
	fwt_assert_content("f", "hello\n");
	assert_true(fwt_fence_token("f") == 1);
	free(out);
	free(err);
}

/* The seed's story through the command. */
static void exit_1_stale_token_names_file_token_and_fence(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(RUN("B\n", NULL, NULL, "--token", "8", "r"), 0);
	assert_int_equal(RUN("A\n", NULL, &err, "-t", "7", "r"), 1);
	assert_one_message(err, "stale token 7 for r: the fence holds 8");
	free(err);
	assert_int_equal(RUN("A\n", NULL, &err, "-t", "8", "r"), 1);
	free(err);
	assert_int_equal(RUN("A\n", NULL, &err, "-q", "-t", "8", "r"), 1);
	assert_string_equal(err, "");
	free(err);
	assert_int_equal(RUN("eq\n", NULL, NULL, "--allow-equal", "-t", "8",
	                     "r"), 0);
	fwt_assert_content("r", "eq\n");
	assert_true(fwt_fence_token("r") == 8);
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void exit_2_usage_errors_change_nothing(void **state)
{
	static const char *const bad[][8] = {
		{ "f", NULL },                          /* no token */
		{ "-t", "", "f", NULL },
		{ "-t", "-1", "f", NULL },
		{ "-t", "+8", "f", NULL },
		{ "-t", "0x8", "f", NULL },
		{ "-t", " 8", "f", NULL },
		{ "-t", "8x", "f", NULL },
		{ "-t", "0", "f", NULL },
		{ "--delete", "-t", "0", "f", NULL },
		{ "--check", "-t", "00", "f", NULL },
		{ "-t", "18446744073709551616", "f", NULL },
		{ "-t", "1", NULL },                    /* no FILE */
		{ "-t", "1", "f", "extra", NULL },      /* CMD without -- */
		{ "-t", "1", "f", "--", NULL },         /* -- without CMD */
		{ "-t", "1", "-w", "soon", "f", NULL },
		{ "-t", "1", "--mode", "0999", "f", NULL },
		{ "--show", "--check", "f", NULL },
		{ "--json", "-t", "1", "f", NULL },
		{ "--show", "-t", "1", "f", NULL },
		{ "--bogus", "f", NULL },
		{ "--delete", "-t", "1", "f", "--", "true" },
		{ "--update", "-t", "1", "f", NULL },   /* --update needs CMD */
		{ "--claim", "f", NULL },                /* no token */
		{ "--claim", "-t", "1", "f", "--", "true", NULL },
		{ "--read", "-t", "1", "f", NULL },
		{ "--verify", "-t", "1", "f", NULL },
		{ "--read", "--json", "f", NULL },
		{ "--read", "--verify", "f", NULL },
		{ "--token-file", "t", "-t", "1", "f", NULL },
		{ "--no-claim", "-t", "1", "f", NULL },  /* no CMD to claim for */
		{ "--no-claim", "--update", "-t", "1", "f", "--", "true" },
		{ "--read", "--token-file", "", "f", NULL },
		{ "--cmd-status", "-t", "1", "f", NULL },  /* no CMD */
		{ "--progress", "--claim", "-t", "1", "f", NULL },
		{ "-t", "1", "f", "--bogus", NULL },
		{ "-t", NULL },
	};
	char *argv[10], *err;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = 0;

		argv[n++] = (char *)"fencedwrite";
		for (int k = 0; k < 8 && bad[i][k]; k++)
			argv[n++] = (char *)bad[i][k];
		argv[n] = NULL;
		if (fwt_runv("x", NULL, &err, argv) != 2)
			fail_msg("case %zu (%s %s ...) did not exit 2", i,
			         argv[1], argv[2] ? argv[2] : "");
		assert_usage_error(err, "");
		free(err);
	}
	assert_null(fwt_slurp("f", NULL));
	assert_null(fwt_slurp("f.fence", NULL));
	assert_null(fwt_slurp("t", NULL));
}

static void exit_3_unfenced_corrupt_or_link(void **state)
{
	char *err;

	(void)state;
	fwt_spit("legacy", "old\n");
	assert_int_equal(RUN("new\n", NULL, &err, "-t", "5", "legacy"), 3);
	assert_one_message(err, "legacy is not fenced");
	free(err);
	assert_int_equal(RUN(NULL, NULL, NULL, "--init", "legacy"), 0);
	assert_int_equal(RUN(NULL, NULL, &err, "--init", "-t", "9", "legacy"), 3);
	assert_one_message(err, "already fenced");
	free(err);
	fwt_spit("legacy.fence", "token=999\n");
	assert_int_equal(RUN("new\n", NULL, &err, "-t", "5", "legacy"), 3);
	assert_one_message(err, "legacy.fence is corrupt");
	free(err);
	assert_int_equal(RUN(NULL, NULL, &err, "--show", "legacy"), 3);
	free(err);
	assert_int_equal(symlink("legacy", "link"), 0);
	assert_int_equal(RUN("new\n", NULL, &err, "-t", "5", "link"), 3);
	assert_one_message(err, "symbolic link");
	free(err);
	fwt_assert_content("legacy", "old\n");
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void exit_4_lock_not_acquired(void **state)
{
	struct fwt_holder h;
	char *err;

	(void)state;
	assert_int_equal(RUN("1\n", NULL, NULL, "-t", "1", "f"), 0);
	fwt_lock_in_child("f.fence", 0, &h);
	assert_int_equal(RUN("2\n", NULL, &err, "-n", "-t", "2", "f"), 4);
	assert_one_message(err, "locked by another writer");
	free(err);
	assert_int_equal(RUN("2\n", NULL, &err, "-w", "0.05", "-t", "2", "f"),
	                 4);
	free(err);
	assert_int_equal(RUN("2\n", NULL, &err, "-q", "--nonblock", "-t", "2",
	                     "f"), 4);
	assert_string_equal(err, "");
	free(err);
	fwt_unlock(&h);
	fwt_assert_content("f", "1\n");
	assert_int_equal(fwt_count_tmp("."), 0);
	assert_int_equal(RUN("2\n", NULL, NULL, "-w", "1", "-t", "2", "f"), 0);
}

static void exit_5_system_error_names_call_and_path(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(RUN("x", NULL, &err, "-t", "1", "missing/f"), 5);
	assert_one_message(err, "open(missing): No such file or directory");
	free(err);
	/* standard input that cannot be read */
	assert_int_equal(mkdir("adir", 0755), 0);
	{
		char *argv[] = { "fencedwrite", "-t", "1", "g", NULL };
		int in = open("adir", O_RDONLY), saved = dup(0), rc;

		assert_true(in >= 0 && saved >= 0);
		dup2(in, 0);
		rc = fwt_wait(fwt_spawn_inherit(argv));
		dup2(saved, 0);
		close(saved);
		close(in);
		assert_int_equal(rc, 5);
	}
	assert_null(fwt_slurp("g", NULL));
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void exit_6_cmd_fails_or_is_killed(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "1", "f", "--", "sh", "-c",
	                     "echo from cmd"), 0);
	fwt_assert_content("f", "from cmd\n");
	assert_int_equal(RUN(NULL, NULL, &err, "-t", "2", "f", "--", "sh", "-c",
	                     "echo partial; exit 3"), 6);
	assert_one_message(err, "sh exited with status 3");
	free(err);
	assert_int_equal(RUN(NULL, NULL, &err, "-t", "2", "f", "--", "sh", "-c",
	                     "echo partial; kill -9 $$"), 6);
	assert_one_message(err, "killed by signal 9");
	free(err);
	assert_int_equal(RUN(NULL, NULL, &err, "-t", "2", "f", "--",
	                     "/nonexistent/cmd"), 6);
	assert_non_null(strstr(err, "/nonexistent/cmd"));
	free(err);
	/* CMD's own options are not ours */
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "3", "f", "--", "printf",
	                     "-t %s", "x"), 0);
	fwt_assert_content("f", "-t x");
	assert_true(fwt_fence_token("f") == 3);
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* flock's form: the problem in one line, not the whole synopsis. */
static void unknown_option_is_one_line_and_a_pointer_to_help(void **state)
{
	static const struct { const char *argv[6], *says; } cases[] = {
		{ { "--bogus", "f" }, "unknown option '--bogus'" },
		{ { "--bogus=1", "f" }, "unknown option '--bogus'" },
		{ { "-x", "f" }, "unknown option '-x'" },
		{ { "-qx", "f" }, "unknown option '-x'" },
		{ { "--ve", "f" }, "option '--ve' is ambiguous: --verify, "
		                   "--version" },
		{ { "-t" }, "option '-t' needs an argument" },
		{ { "f", "--fence" }, "option '--fence' needs an argument" },
		{ { "--help=yes" }, "option '--help' takes no argument" },
		{ { "-t", "1", "f", "g" }, "unexpected argument 'g' after FILE" },
		{ { "-t", "1" }, "no FILE given" },
	};
	char *argv[8], *out, *err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = 0;

		argv[n++] = (char *)"fencedwrite";
		for (int k = 0; k < 6 && cases[i].argv[k]; k++)
			argv[n++] = (char *)cases[i].argv[k];
		argv[n] = NULL;
		assert_int_equal(fwt_runv("x", &out, &err, argv), 2);
		assert_usage_error(err, cases[i].says);
		assert_null(strstr(err, "Usage:"));
		assert_string_equal(out, "");
		free(out);
		free(err);
	}
	assert_null(fwt_slurp("f", NULL));
}

/* GNU order: options after FILE, up to the "--" that starts CMD; CMD's
   own arguments, options or not, are never looked at. */
static void options_may_follow_file_up_to_cmd(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(RUN(NULL, NULL, NULL, "f", "-t", "5", "--", "printf",
	                     "%s|", "-t", "9", "--read", "--", "-q"), 0);
	fwt_assert_content("f", "-t|9|--read|--|-q|");
	assert_true(fwt_fence_token("f") == 5);
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "6", "f", "--", "printf",
	                     "%s|", "-t", "9"), 0);
	fwt_assert_content("f", "-t|9|");
	assert_true(fwt_fence_token("f") == 6);
	/* options on both sides of FILE, content from standard input */
	assert_int_equal(RUN("in\n", NULL, NULL, "-q", "f", "--token", "7",
	                     "-w", "1"), 0);
	fwt_assert_content("f", "in\n");
	assert_true(fwt_fence_token("f") == 7);
	/* after "-- FILE" nothing is an option: a FILE named "-t" */
	assert_int_equal(RUN("dash\n", NULL, NULL, "-t", "1", "--", "-t"), 0);
	fwt_assert_content("-t", "dash\n");
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "2", "--", "-t", "--",
	                     "printf", "%s", "-n"), 0);
	fwt_assert_content("-t", "-n");
	assert_int_equal(RUN("x\n", NULL, &err, "-t", "3", "--", "-t", "-q"),
	                 2);
	assert_usage_error(err, "unexpected argument '-q' after FILE");
	free(err);
	/* POSIXLY_CORRECT: options end at FILE, as POSIX getopt has it */
	setenv("POSIXLY_CORRECT", "1", 1);
	assert_int_equal(RUN("y\n", NULL, &err, "f", "-t", "8"), 2);
	assert_usage_error(err, "option '-t' after FILE: with POSIXLY_CORRECT");
	free(err);
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "8", "f", "--", "echo",
	                     "-t", "strict"), 0);
	unsetenv("POSIXLY_CORRECT");
	fwt_assert_content("f", "-t strict\n");
	assert_true(fwt_fence_token("f") == 8);
}

/* The exit status of CMD itself, killed CMD as 128+N: the process must
   really exit with it, not die of the signal. */
static int run_status(char *const argv[])
{
	int status;
	pid_t pid = fwt_spawn(NULL, argv);

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void cmd_status_exits_with_cmds_own_status(void **state)
{
	char *const exit42[] = { "fencedwrite", "--cmd-status", "-t", "2", "f",
	                         "--", "sh", "-c", "echo partial; exit 42",
	                         NULL };
	char *const killed[] = { "fencedwrite", "-t", "3", "f", "--cmd-status",
	                         "--", "sh", "-c", "echo partial; kill -USR1 $$",
	                         NULL };
	char *const missing[] = { "fencedwrite", "--cmd-status", "-t", "4",
	                          "f", "--", "/nonexistent/cmd", NULL };
	char *const plain[] = { "fencedwrite", "-t", "5", "f", "--", "sh", "-c",
	                        "exit 42", NULL };
	char *err;

	(void)state;
	assert_int_equal(RUN("v1\n", NULL, NULL, "-t", "1", "f"), 0);
	assert_int_equal(run_status(exit42), 42);
	assert_int_equal(run_status(killed), 128 + SIGUSR1);
	assert_int_equal(run_status(missing), 127);   /* as sh says it */
	assert_int_equal(run_status(plain), 6);       /* without the option */
	fwt_assert_content("f", "v1\n");
	assert_int_equal(fwt_count_tmp("."), 0);
	/* the message still says nothing was committed */
	assert_int_equal(RUN(NULL, NULL, &err, "--cmd-status", "-t", "6", "f",
	                     "--", "sh", "-c", "exit 42"), 42);
	assert_one_message(err, "sh exited with status 42; nothing committed");
	free(err);
	/* a CMD that succeeds: fencedwrite's own codes, stale included */
	assert_int_equal(RUN(NULL, NULL, NULL, "--cmd-status", "-t", "7", "f",
	                     "--", "echo", "v7"), 0);
	fwt_assert_content("f", "v7\n");
	assert_int_equal(RUN(NULL, NULL, NULL, "--cmd-status", "-t", "7", "f",
	                     "--", "echo", "v7 again"), 1);
	fwt_assert_content("f", "v7\n");
}

/* The way a lock store hands over its token: etcdctl lock sets
   ETCD_LOCK_REV for the command it runs. */
static void token_env_reads_the_token_and_rejects_bad_values(void **state)
{
	char *err;

	(void)state;
	setenv("FWT_REV", "42", 1);
	assert_int_equal(RUN("x\n", NULL, NULL, "--token-env", "FWT_REV", "f"), 0);
	assert_true(fwt_fence_token("f") == 42);
	setenv("FWT_REV", "41", 1);
	assert_int_equal(RUN("y\n", NULL, NULL, "--token-env", "FWT_REV", "f"), 1);
	static const char *const bad[] = { "", "-1", "4x2", "0", " 43" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("FWT_REV", bad[i], 1);
		assert_int_equal(RUN("z\n", NULL, &err, "--token-env", "FWT_REV",
		                     "f"), 2);
		assert_non_null(strstr(err, "invalid token in FWT_REV"));
		free(err);
	}
	unsetenv("FWT_REV");
	assert_int_equal(RUN("z\n", NULL, &err, "--token-env", "FWT_REV", "f"),
	                 2);
	assert_non_null(strstr(err, "no such variable"));
	free(err);
	setenv("FWT_REV", "50", 1);
	assert_int_equal(RUN("z\n", NULL, NULL, "-t", "50", "--token-env",
	                     "FWT_REV", "f"), 2);
	unsetenv("FWT_REV");
	fwt_assert_content("f", "x\n");
}

/*
 * etcdctl lock runs its command with /dev/null as standard input, so
 * "producer | etcdctl lock NAME -- fencedwrite ..." would replace good
 * content with nothing.  /dev/null as input is refused; a pipe that
 * carries nothing is how to write an empty file on purpose.
 */
static void dev_null_stdin_is_refused_an_empty_pipe_is_not(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(RUN("good\n", NULL, NULL, "-t", "1", "f"), 0);
	assert_int_equal(RUN(NULL, NULL, &err, "-t", "2", "f"), 2);  /* /dev/null */
	assert_non_null(strstr(err, "standard input is /dev/null"));
	assert_non_null(strstr(err, "-- CMD"));
	free(err);
	fwt_assert_content("f", "good\n");
	assert_true(fwt_fence_token("f") == 1);
	assert_int_equal(RUN("", NULL, NULL, "-t", "2", "f"), 0);   /* a file */
	fwt_assert_content("f", "");
	/* with CMD, standard input is CMD's business */
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "3", "f", "--", "echo",
	                     "made"), 0);
	fwt_assert_content("f", "made\n");
}

static void closed_stdin_is_a_usage_error(void **state)
{
	char *argv[] = { "fencedwrite", "-t", "1", "f", NULL };
	int saved = dup(0), rc;

	(void)state;
	close(0);
	rc = fwt_wait(fwt_spawn_inherit(argv));
	dup2(saved, 0);
	close(saved);
	assert_int_equal(rc, 2);
	assert_null(fwt_slurp("f", NULL));
}

static void delete_check_show_init_clean(void **state)
{
	char *out, *err;

	(void)state;
	assert_int_equal(RUN("v\n", NULL, NULL, "-t", "10", "f"), 0);
	assert_int_equal(RUN(NULL, NULL, NULL, "--check", "-t", "11", "f"), 0);
	assert_int_equal(RUN(NULL, NULL, &err, "--check", "-t", "10", "f"), 1);
	assert_one_message(err, "holds 10");
	free(err);
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "f"), 0);
	assert_string_equal(out, "10\n");
	free(out);
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "--json", "f"), 0);
	assert_non_null(strstr(out, "{\"file\":\"f\",\"fence\":\"f.fence\","
	                            "\"token\":\"10\",\"seq\":\"1\","
	                            "\"op\":\"commit\""));
	assert_non_null(strstr(out, "\"host\":"));
	free(out);
	assert_int_equal(RUN(NULL, NULL, NULL, "--delete", "-t", "10", "f"), 1);
	fwt_assert_content("f", "v\n");
	assert_int_equal(RUN(NULL, NULL, NULL, "--delete", "-t", "12", "f"), 0);
	assert_null(fwt_slurp("f", NULL));
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "f"), 0);
	assert_string_equal(out, "12\n");
	free(out);
	assert_int_equal(RUN(NULL, NULL, &err, "--clean", "f"), 0);
	assert_string_equal(err, "");
	free(err);
	/* A fence named with --fence is created by --init only. */
	assert_int_equal(RUN("x", NULL, NULL, "--fence", "other.fence", "-t",
	                     "1", "f"), 3);
	assert_int_equal(RUN(NULL, NULL, NULL, "--init", "--fence",
	                     "other.fence", "f"), 0);
	assert_int_equal(RUN("x", NULL, NULL, "--fence", "other.fence", "-t",
	                     "1", "f"), 0);
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "--json", "--fence",
	                     "other.fence", "f"), 0);
	assert_non_null(strstr(out, "\"fence\":\"other.fence\""));
	free(out);
}

static void mode_option_and_preserved_bits(void **state)
{
	struct stat st;

	(void)state;
	assert_int_equal(RUN("x", NULL, NULL, "--mode", "0640", "-t", "1", "m"),
	                 0);
	assert_int_equal(stat("m", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(RUN("y", NULL, NULL, "-t", "2", "m"), 0);
	assert_int_equal(stat("m", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
}

static void help_and_version_document_every_option(void **state)
{
	static const char *opts[] = {
		"--read", "--update", "--append", "--claim", "--delete",
		"--check", "--show", "--verify", "--init", "--clean", "--doctor",
		"--token", "--token-env", "--fence", "--timeout", "--nonblock",
		"--allow-equal", "--mode", "--no-claim", "--cmd-status",
		"--progress", "--token-file",
		"--json", "--local-locks-ok", "--mountinfo", "--syslog",
		"--metrics", "--quiet",
		"--help", "--version",
	};
	char *out;

	(void)state;
	assert_int_equal(RUN(NULL, &out, NULL, "--help"), 0);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		char line[40];

		snprintf(line, sizeof(line), " %s", opts[i]);
		if (!strstr(out, line))
			fail_msg("--help does not mention %s", opts[i]);
	}
	for (int code = 0; code <= 6; code++) {
		char line[24];

		snprintf(line, sizeof(line), "\n  %d  ", code);
		assert_non_null(strstr(out, line));
	}
	free(out);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(RUN(NULL, &out, NULL, i ? "--version" : "-V"),
		                 0);
		assert_string_equal(out, "fencedwrite " FW_VERSION "\n"
		    "Copyright (c) 2026 The fencedwrite authors\n"
		    "License: MIT <https://opensource.org/licenses/MIT>\n"
		    "This is free software: you are free to change and "
		    "redistribute it.\n"
		    "There is NO WARRANTY, to the extent permitted by law.\n");
		free(out);
	}
}

static void large_stdin_is_committed_exactly(void **state)
{
	size_t n = 3 * 1024 * 1024 + 17, len;
	char *big = malloc(n + 1), *got;

	(void)state;
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26);
	big[n] = '\0';
	assert_int_equal(RUN(big, NULL, NULL, "-t", "1", "big"), 0);
	got = fwt_slurp("big", &len);
	assert_int_equal(len, n);
	assert_memory_equal(got, big, n);
	free(got);
	free(big);
}

/* A signal while waiting for the lock: the temporary file is removed and
   the command dies of that signal, as a script expects. */
static void sigterm_while_waiting_leaves_nothing_behind(void **state)
{
	char *argv[] = { "fencedwrite", "-t", "2", "f", NULL };
	struct fwt_holder h;
	pid_t pid;

	(void)state;
	/* valgrind 3.19 keeps signals blocked during F_OFD_SETLKW, which it
	   does not know blocks: the signal would wait for the lock. */
	if (getenv("FWT_UNDER_VALGRIND")) {
		print_message("skipped under valgrind: it defers signals "
		              "during an OFD lock wait\n");
		skip();
	}
	assert_int_equal(RUN("1\n", NULL, NULL, "-t", "1", "f"), 0);
	fwt_lock_in_child("f.fence", 0, &h);
	pid = fwt_spawn("2\n", argv);
	fwt_wait_for_waiter("f.fence");
	assert_int_equal(fwt_count_tmp("."), 1);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(fwt_wait(pid), 128 + SIGTERM);
	fwt_unlock(&h);
	assert_int_equal(fwt_count_tmp("."), 0);
	fwt_assert_content("f", "1\n");
	assert_true(fwt_fence_token("f") == 1);
}

static void sigint_while_cmd_runs_leaves_nothing_behind(void **state)
{
	(void)state;
	/* CMD interrupts its parent, fencedwrite, then would write more. */
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "1", "f", "--", "sh", "-c",
	                     "echo part; kill -INT $PPID; exec sleep 30"),
	                 128 + SIGINT);
	assert_null(fwt_slurp("f", NULL));
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* ---- processes, as the tests below watch them ------------------------ */

static void nap_ms(long ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000 }, NULL);
}

/* Exit code or 128 + signal of PID, or -1 if it is still running after
   MS milliseconds (then it is left running). */
static int wait_bounded(pid_t pid, long ms)
{
	for (long i = 0;; i++) {
		int status;
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid)
			return WIFSIGNALED(status) ? 128 + WTERMSIG(status)
			                           : WEXITSTATUS(status);
		assert_true(got == 0 || errno == EINTR);
		if (i >= ms)
			return -1;
		nap_ms(1);
	}
}

/* PID's state letter and process group from /proc, or 0 if it is gone. */
static char proc_state(pid_t pid, pid_t *pgrp)
{
	char path[64], line[512], state = 0, *p;
	int pg = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')) != NULL &&
	    sscanf(p + 1, " %c %*d %d", &state, &pg) != 2)
		state = 0;
	fclose(f);
	if (pgrp)
		*pgrp = pg;
	return state;
}

static int alive(pid_t pid)
{
	char s = proc_state(pid, NULL);

	return s != 0 && s != 'Z' && s != 'X';
}

/* The number a shell wrote into NAME (written elsewhere and renamed, so
   it is whole once it is there). */
static pid_t read_pid_file(const char *name)
{
	for (int i = 0; i < 10000; i++) {
		char *s = fwt_slurp(name, NULL);

		if (s) {
			pid_t pid = (pid_t)atoi(s);

			free(s);
			return pid;
		}
		nap_ms(1);
	}
	fail_msg("%s never appeared", name);
	return -1;
}

/*
 * The command's standard output is a pipe, read until end of file as
 * $(...) reads it: a background child of CMD that keeps writing holds the
 * commit back until it is done, and can never write into FILE once the
 * command has exited.
 */
static void background_child_of_cmd_cannot_write_after_exit(void **state)
{
	char *argv[] = { "fencedwrite", "-t", "5", "out", "--", "sh", "-c",
	                 "echo $$ > p.t && mv p.t cmdpid; echo committed; "
	                 "(read x < go; echo LATE; : > done) &", NULL };
	char *at_exit = NULL, *now;
	pid_t pid, cmd;
	int rc = -1, fd;

	(void)state;
	assert_int_equal(mkfifo("go", 0600), 0);
	pid = fwt_spawn(NULL, argv);
	cmd = read_pid_file("cmdpid");
	/* CMD has exited once it is a zombie or gone; the background child
	   still holds the pipe.  Fixed: the command waits for end of file
	   and reaps CMD only then, so CMD stays a zombie. */
	for (int i = 0; i < 10000 && rc < 0; i++) {
		char s = proc_state(cmd, NULL);

		if (s == 'Z')
			break;
		rc = wait_bounded(pid, 0);
		if (rc < 0)
			nap_ms(1);
	}
	if (rc >= 0)
		at_exit = fwt_slurp("out", NULL);
	fd = open("go", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x\n", 2), 2);
	close(fd);
	(void)read_pid_file("done");
	if (rc < 0) {
		rc = fwt_wait(pid);
		at_exit = fwt_slurp("out", NULL);
	}
	assert_int_equal(rc, 0);
	assert_non_null(at_exit);
	assert_string_equal(at_exit, "committed\nLATE\n");
	now = fwt_slurp("out", NULL);
	assert_string_equal(now, at_exit);
	free(now);
	free(at_exit);
	assert_true(fwt_fence_token("out") == 5);
	assert_int_equal(fwt_count_tmp("."), 0);
}

/*
 * A signal to the command ends everything CMD started, not only CMD: the
 * whole group is sent the signal, and what ignores it is killed after a
 * short grace.  Nothing is left running once the command has died.
 */
static void signal_ends_cmds_whole_process_group(void **state)
{
	static const char *const how[] = { "", "trap '' TERM; " };

	(void)state;
	for (size_t k = 0; k < sizeof(how) / sizeof(how[0]); k++) {
		char script[256];
		char *argv[] = { "fencedwrite", "-t", "1", "out", "--", "sh",
		                 "-c", script, NULL };
		pid_t pid, sh, bg, cat, pg = 0;
		int rc, left = 1;

		snprintf(script, sizeof(script), "%ssleep 300 & echo $! > bg; "
		         "sleep 300 | cat & echo $! > cat; "
		         "echo $$ > p.t && mv p.t sh; wait", how[k]);
		unlink("bg");
		unlink("cat");
		unlink("sh");
		pid = fwt_spawn(NULL, argv);
		sh = read_pid_file("sh");
		bg = read_pid_file("bg");
		cat = read_pid_file("cat");
		assert_true(proc_state(sh, &pg) != 0);
		assert_int_equal(pg, sh);   /* CMD leads a group of its own */
		assert_int_equal(kill(pid, SIGTERM), 0);
		rc = wait_bounded(pid, 10000);
		for (int i = 0; i < 2000 && left; i++) {
			left = alive(bg) || alive(cat);
			if (left)
				nap_ms(1);
		}
		if (rc < 0 || left) {
			kill(pid, SIGKILL);
			kill(bg, SIGKILL);
			kill(cat, SIGKILL);
			fail_msg("case %zu: command %s, CMD's children %s", k,
			         rc < 0 ? "still running" : "died",
			         left ? "outlived it" : "are gone");
		}
		assert_int_equal(rc, 128 + SIGTERM);
		assert_null(fwt_slurp("out", NULL));
		assert_int_equal(fwt_count_tmp("."), 0);
	}
}

/*
 * A termination signal that lands after the library's last look at the
 * cancel flag and before the blocking lock wait must still end the wait.
 * Made deterministic: the signal is pending (blocked) when the command
 * starts; the command unblocks it at once, its handler runs before any
 * lock is asked for, and the delete and the check then go straight into
 * the blocking wait with no EINTR to come.  They must die of the signal
 * while the other process still holds the lock.
 */
static void signal_before_the_lock_wait_still_ends_it(void **state)
{
	static const char *const action[] = { "--delete", "--check" };
	struct fwt_holder h;

	(void)state;
	if (getenv("FWT_UNDER_VALGRIND")) {
		print_message("skipped under valgrind: it defers signals "
		              "during an OFD lock wait\n");
		skip();
	}
	assert_int_equal(RUN("1\n", NULL, NULL, "-t", "1", "f"), 0);
	fwt_lock_in_child("f.fence", 0, &h);
	for (size_t k = 0; k < sizeof(action) / sizeof(action[0]); k++) {
		pid_t pid = fork();
		int rc;

		assert_true(pid >= 0);
		if (pid == 0) {
			char *argv[] = { "fencedwrite", (char *)action[k], "-t",
			                 "2", "f", NULL };
			sigset_t set;
			int null = open("/dev/null", O_RDWR);

			sigemptyset(&set);
			sigaddset(&set, SIGTERM);
			sigprocmask(SIG_BLOCK, &set, NULL);
			/* pending, and kept across exec */
			kill(getpid(), SIGTERM);
			dup2(null, 0);
			dup2(null, 2);
			execv(getenv("FW_BIN"), argv);
			_exit(127);
		}
		rc = wait_bounded(pid, 10000);
		if (rc < 0) {
			kill(pid, SIGKILL);
			fwt_wait(pid);
			fwt_unlock(&h);
			fail_msg("%s waited for the lock despite SIGTERM",
			         action[k]);
		}
		assert_int_equal(rc, 128 + SIGTERM);
		assert_int_equal(kill(h.pid, 0), 0);   /* still holding it */
	}
	fwt_unlock(&h);
	fwt_assert_content("f", "1\n");
	assert_true(fwt_fence_token("f") == 1);
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* --init adopts at token 0 when no store revision is at hand, as --help
   says; anywhere else 0 stays a usage error (exit_2_...). */
static void init_accepts_token_0(void **state)
{
	(void)state;
	assert_int_equal(RUN(NULL, NULL, NULL, "--init", "-t", "0", "a"), 0);
	assert_true(fwt_fence_token("a") == 0);
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "0", "--init", "b"), 0);
	assert_true(fwt_fence_token("b") == 0);
	setenv("FWT_REV", "0", 1);
	assert_int_equal(RUN(NULL, NULL, NULL, "--token-env", "FWT_REV",
	                     "--init", "c"), 0);
	assert_int_equal(RUN("x", NULL, NULL, "--token-env", "FWT_REV", "c"),
	                 2);
	unsetenv("FWT_REV");
	assert_true(fwt_fence_token("c") == 0);
	assert_int_equal(RUN("x", NULL, NULL, "-t", "1", "c"), 0);
	fwt_assert_content("c", "x");
}

/* What a strict JSON parser makes of FILE: "token file_hex file". */
static char *strict_json(const char *json_path, int *ok)
{
	char cmd[512], *buf = calloc(1, 4096);
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; "
	         "d = json.loads(sys.stdin.buffer.read().decode(\"utf-8\")); "
	         "print(d.get(\"token\"), d.get(\"file_hex\"), "
	         "json.dumps(d[\"file\"]))' < %s", json_path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, 4095, p);
	buf[n] = '\0';
	*ok = pclose(p) == 0;
	return buf;
}

/*
 * --json output parses with a strict parser whatever the bytes of the
 * file's name, and a token near 2^64 comes out exact: as a string, since
 * a JSON number above 2^53 is rounded by many parsers.
 */
static void json_is_valid_and_tokens_are_exact(void **state)
{
	const char *name = "n\xff\xfe\x01x";
	char *out, *got;
	int ok, rc;

	(void)state;
	if (system("python3 -c '' 2>/dev/null") != 0) {
		print_message("skipped: python3 is not installed\n");
		skip();
	}
	assert_int_equal(RUN("v\n", NULL, NULL, "-t", "18446744073709551615",
	                     name), 0);
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "--json", name), 0);
	fwt_spit("show.json", out);
	free(out);
	got = strict_json("show.json", &ok);
	assert_true(ok);
	assert_string_equal(got, "18446744073709551615 6efffe0178 "
	                    "\"n\\ufffd\\ufffd\\u0001x\"\n");
	free(got);
	rc = RUN(NULL, &out, NULL, "--doctor", "--json", name);
	assert_true(rc == 0 || rc == 3);
	fwt_spit("doctor.json", out);
	free(out);
	got = strict_json("doctor.json", &ok);
	assert_true(ok);
	assert_string_equal(got, "None 6efffe0178 "
	                    "\"n\\ufffd\\ufffd\\u0001x\"\n");
	free(got);
}

/* ---- the actions over fw_read, fw_claim, fw_verify, fw_update_begin --- */

/* The long option named first on each line of S that a STARTS line
   begins, in order, each followed by a space. */
static void long_names(const char *s, const char *const *starts,
                       const char *dash, char *out, size_t size)
{
	out[0] = '\0';
	for (const char *line = s; line && *line;) {
		const char *end = strchr(line, '\n'), *p;

		for (const char *const *st = starts; *st; st++) {
			size_t n = strcspn(line, "\n");

			if (strncmp(line, *st, strlen(*st)) != 0)
				continue;
			p = strstr(line, dash);
			if (!p || p - line >= (long)n)
				break;
			p += strlen(dash);
			n = strcspn(p, " \n");
			if (strlen(out) + n + 2 < size) {
				strncat(out, p, n);
				strcat(out, " ");
			}
			break;
		}
		line = end ? end + 1 : NULL;
	}
}

/* flock's habit: --help and the man page list the options in one order
   (the parser's table follows the same order, see cli_options.c). */
static void help_and_man_page_list_options_in_one_order(void **state)
{
	static const char *const help_lines[] = { "  -", "      --", NULL };
	static const char *const man_lines[] = { ".It Fl", NULL };
	char path[4096], help_order[1024], man_order[1024], *out, *man;

	(void)state;
	snprintf(path, sizeof(path), "%s/../../man/fencedwrite.1",
	         getenv("FWT_FIXTURES") ? getenv("FWT_FIXTURES") : ".");
	man = fwt_slurp(path, NULL);
	if (!man) {
		print_message("skipped: no man page (FWT_FIXTURES unset)\n");
		skip();
	}
	assert_int_equal(RUN(NULL, &out, NULL, "--help"), 0);
	long_names(out, help_lines, "--", help_order, sizeof(help_order));
	long_names(man, man_lines, "\\-", man_order, sizeof(man_order));
	assert_string_equal(help_order, "read update append claim delete "
	                    "check show verify init clean doctor token "
	                    "token-env fence timeout nonblock allow-equal mode "
	                    "no-claim cmd-status progress token-file json "
	                    "local-locks-ok mountinfo syslog metrics "
	                    "quiet help version ");
	assert_string_equal(man_order, help_order);
	free(out);
	free(man);
}

/* Whatever a shell wrote before renaming NAME into place is there. */
static void wait_for_file(const char *name)
{
	(void)read_pid_file(name);
}

/* Open the FIFO NAME for writing (its reader is waiting) and close it. */
static void open_gate(const char *name)
{
	int fd = open(name, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "go\n", 3), 3);
	close(fd);
}

/*
 * A write by -- CMD claims its token before CMD starts: a holder paused
 * past its lease that wakes while the new holder's CMD still runs is
 * turned away at once, and, stale, does not run its own CMD at all.
 * Deterministic: the new holder's CMD waits on a FIFO the test opens.
 */
static void cmd_write_claims_first_zombie_turned_away_meanwhile(void **state)
{
	char *argv[] = { "fencedwrite", "-t", "8", "f", "--", "sh", "-c",
	                 "echo $$ > p.t && mv p.t started; read x < gate; "
	                 "echo by 8", NULL };
	char *err, *err2, *during;
	uint64_t fence;
	int zombie_in, zombie_cmd;
	pid_t pid;

	(void)state;
	assert_int_equal(RUN("old\n", NULL, NULL, "-t", "5", "f"), 0);
	assert_int_equal(mkfifo("gate", 0600), 0);
	pid = fwt_spawn(NULL, argv);
	wait_for_file("started");
	/* Observed while CMD runs, asserted once it is let go, so that a
	   failure leaves no process waiting on the FIFO. */
	fence = fwt_fence_token("f");             /* claimed, CMD running */
	zombie_in = RUN("by 7\n", NULL, &err, "-t", "7", "f");
	zombie_cmd = RUN(NULL, NULL, &err2, "-t", "7", "f", "--", "touch",
	                 "ran");
	during = fwt_slurp("f", NULL);
	open_gate("gate");
	assert_int_equal(fwt_wait(pid), 0);
	assert_true(fence == 8);
	assert_int_equal(zombie_in, 1);
	assert_one_message(err, "stale token 7 for f");
	assert_int_equal(zombie_cmd, 1);
	assert_one_message(err2, "stale token 7 for f");
	free(err);
	free(err2);
	assert_null(fwt_slurp("ran", NULL));      /* a stale CMD never runs */
	assert_string_equal(during, "old\n");
	free(during);
	fwt_assert_content("f", "by 8\n");
	assert_true(fwt_fence_token("f") == 8);
	assert_int_equal(fwt_count_tmp("."), 0);
}

/* --no-claim: the old behaviour, the fence moves only at the commit, so
   the paused holder's write still lands until then. */
static void no_claim_lets_the_zombie_in_until_the_commit(void **state)
{
	char *argv[] = { "fencedwrite", "--no-claim", "-t", "8", "f", "--",
	                 "sh", "-c", "echo $$ > p.t && mv p.t started; "
	                 "read x < gate; echo by 8", NULL };
	char *during;
	uint64_t fence;
	int zombie;
	pid_t pid;

	(void)state;
	assert_int_equal(RUN("old\n", NULL, NULL, "-t", "5", "f"), 0);
	assert_int_equal(mkfifo("gate", 0600), 0);
	pid = fwt_spawn(NULL, argv);
	wait_for_file("started");
	fence = fwt_fence_token("f");
	zombie = RUN("by 7\n", NULL, NULL, "-t", "7", "f");
	during = fwt_slurp("f", NULL);
	open_gate("gate");
	assert_int_equal(fwt_wait(pid), 0);
	assert_true(fence == 5);
	assert_int_equal(zombie, 0);
	assert_string_equal(during, "by 7\n");
	free(during);
	fwt_assert_content("f", "by 8\n");
	assert_true(fwt_fence_token("f") == 8);
}

static void claim_advances_the_fence_and_leaves_file_alone(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(RUN("x\n", NULL, NULL, "-t", "1", "f"), 0);
	assert_int_equal(RUN(NULL, NULL, NULL, "--claim", "-t", "5", "f"), 0);
	fwt_assert_content("f", "x\n");
	assert_true(fwt_fence_token("f") == 5);
	assert_int_equal(RUN(NULL, NULL, NULL, "--claim", "-t", "5", "f"), 0);
	assert_int_equal(RUN(NULL, NULL, &err, "--claim", "-t", "4", "f"), 1);
	assert_one_message(err, "stale token 4 for f: the fence holds 5");
	free(err);
	assert_int_equal(RUN("old holder\n", NULL, NULL, "-t", "3", "f"), 1);
	assert_int_equal(RUN("y\n", NULL, NULL, "-t", "5", "f"), 0);
	fwt_assert_content("f", "y\n");
	/* An absent FILE: the fence is created, FILE is not. */
	assert_int_equal(RUN(NULL, NULL, NULL, "--claim", "-t", "6", "g"), 0);
	assert_true(fwt_fence_token("g") == 6);
	assert_null(fwt_slurp("g", NULL));
	/* An unfenced FILE fails closed. */
	fwt_spit("legacy", "l\n");
	assert_int_equal(RUN(NULL, NULL, NULL, "--claim", "-t", "6", "legacy"),
	                 3);
	assert_null(fwt_slurp("legacy.fence", NULL));
}

/*
 * --update: CMD gets FILE's content and its output is committed; a
 * newer holder that commits while CMD runs wins, and the update is stale
 * (exit 1) instead of overwriting it.  CMD blocks on a FIFO while the
 * test commits the newer token.
 */
static void update_increments_and_loses_nothing_to_a_newer_holder(void **state)
{
	char *argv[] = { "fencedwrite", "-t", "4", "--update", "n", "--",
	                 "sh", "-c", "read n; echo $$ > p.t && mv p.t started; "
	                 "read x < gate; echo $((n + 1))", NULL };
	uint64_t fence;
	int newer;
	pid_t pid;

	(void)state;
	assert_int_equal(RUN("41\n", NULL, NULL, "-t", "1", "n"), 0);
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "2", "--update", "n", "--",
	                     "sh", "-c", "read n; echo $((n + 1))"), 0);
	fwt_assert_content("n", "42\n");
	assert_true(fwt_fence_token("n") == 2);
	/* An absent FILE reads as empty; our own input is not CMD's. */
	assert_int_equal(RUN("junk\n", NULL, NULL, "-t", "3", "--update", "new",
	                     "--", "sh", "-c", "cat; echo first"), 0);
	fwt_assert_content("new", "first\n");

	assert_int_equal(mkfifo("gate", 0600), 0);
	pid = fwt_spawn(NULL, argv);
	wait_for_file("started");
	fence = fwt_fence_token("n");              /* claimed */
	newer = RUN("100\n", NULL, NULL, "-t", "5", "n");
	open_gate("gate");
	assert_int_equal(fwt_wait(pid), 1);
	assert_true(fence == 4);
	assert_int_equal(newer, 0);
	fwt_assert_content("n", "100\n");
	assert_true(fwt_fence_token("n") == 5);
	assert_int_equal(fwt_count_tmp("."), 0);
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "6", "--update", "n", "--",
	                     "sh", "-c", "read n; echo $((n + 1))"), 0);
	fwt_assert_content("n", "101\n");
	/* A stale update does not run CMD. */
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "5", "--update", "n", "--",
	                     "touch", "ran"), 1);
	assert_null(fwt_slurp("ran", NULL));
	fwt_assert_content("n", "101\n");
}

static void append_from_stdin_and_from_cmd(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(RUN("a\n", NULL, NULL, "-t", "1", "--append", "log"), 0);
	fwt_assert_content("log", "a\n");
	assert_int_equal(RUN("b\n", NULL, NULL, "-t", "2", "--append", "log"), 0);
	fwt_assert_content("log", "a\nb\n");
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "3", "--append", "log",
	                     "--", "echo", "c"), 0);
	fwt_assert_content("log", "a\nb\nc\n");
	assert_true(fwt_fence_token("log") == 3);
	assert_int_equal(RUN(NULL, NULL, &err, "-t", "4", "--append", "log"), 2);
	assert_non_null(strstr(err, "standard input is /dev/null"));
	free(err);
	assert_int_equal(RUN("d\n", NULL, NULL, "-t", "3", "--append", "log"), 1);
	assert_int_equal(RUN(NULL, NULL, NULL, "-t", "4", "--append", "log",
	                     "--", "false"), 6);
	fwt_assert_content("log", "a\nb\nc\n");
	assert_int_equal(fwt_count_tmp("."), 0);
}

static void read_prints_a_version_and_its_token(void **state)
{
	char *out, *err;

	(void)state;
	fwt_spit("plain", "not fenced\n");
	assert_int_equal(RUN(NULL, &out, &err, "--read", "plain"), 0);
	assert_string_equal(out, "not fenced\n");
	assert_string_equal(err, "");
	free(out);
	free(err);
	assert_int_equal(RUN("v3\n", NULL, NULL, "-t", "3", "f"), 0);
	assert_int_equal(RUN(NULL, NULL, NULL, "--claim", "-t", "9", "f"), 0);
	assert_int_equal(RUN(NULL, &out, NULL, "--read", "--token-file", "tok",
	                     "f"), 0);
	assert_string_equal(out, "v3\n");
	free(out);
	fwt_assert_content("tok", "3\n");   /* the commit's, not the claim's */
	/* No fence to name a token: fails closed, prints nothing. */
	assert_int_equal(RUN(NULL, &out, &err, "--read", "--token-file", "tok2",
	                     "plain"), 3);
	assert_string_equal(out, "");
	assert_one_message(err, "plain");
	free(out);
	free(err);
	assert_null(fwt_slurp("tok2", NULL));
	assert_int_equal(RUN(NULL, &out, &err, "--read", "--token-file",
	                     "nodir/tok", "f"), 5);
	assert_one_message(err, "open(nodir/tok): No such file or directory");
	free(out);
	free(err);
}

/* Evaluate the Python expression EXPR over D, JSON parsed strictly from
   TEXT (one line, UTF-8, no NaN). */
static char *json_eval(const char *text, const char *expr)
{
	char cmd[1024], *buf = calloc(1, 4096);
	size_t n;
	FILE *p;

	assert_non_null(strchr(text, '\n'));
	assert_true(strchr(text, '\n')[1] == '\0');
	fwt_spit("eval.json", text);
	snprintf(cmd, sizeof(cmd), "python3 -c 'import json; "
	         "d = json.loads(open(\"eval.json\", \"rb\").read()"
	         ".decode(\"utf-8\"), parse_constant=int.__call__); "
	         "print(json.dumps(%s))'", expr);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, 4095, p);
	buf[n] = '\0';
	assert_int_equal(pclose(p), 0);
	return buf;
}

static void need_python(void)
{
	if (system("python3 -c '' 2>/dev/null") != 0) {
		print_message("skipped: python3 is not installed\n");
		skip();
	}
}

/* Replace NAME behind the fence's back: another inode. */
static void replace_by_hand(const char *name, const char *data)
{
	fwt_spit("by-hand.t", data);
	assert_int_equal(rename("by-hand.t", name), 0);
}

static void verify_says_what_differs(void **state)
{
	char *out, *err, *got;
	int fd;

	(void)state;
	need_python();
	assert_int_equal(RUN("good\n", NULL, NULL, "-t", "1", "f"), 0);
	assert_int_equal(RUN(NULL, &out, &err, "--verify", "f"), 0);
	assert_string_equal(out, "");
	assert_string_equal(err, "");
	free(out);
	free(err);
	assert_int_equal(RUN(NULL, &out, NULL, "--verify", "--json", "f"), 0);
	got = json_eval(out, "[d[\"token\"], d[\"file_token\"], d[\"verdict\"]]");
	assert_string_equal(got, "[\"1\", \"1\", \"same\"]\n");
	free(got);
	free(out);
	/* Edited in place: the same inode and size, other bytes. */
	fd = open("f", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "evil\n", 5), 5);
	close(fd);
	assert_int_equal(RUN(NULL, NULL, &err, "--verify", "f"), 3);
	assert_one_message(err, "edited");
	free(err);
	assert_int_equal(RUN(NULL, &out, &err, "--verify", "--json", "f"), 3);
	got = json_eval(out, "[d[\"token\"], d[\"file_token\"], d[\"verdict\"]]");
	assert_string_equal(got, "[\"1\", null, \"edited\"]\n");
	free(got);
	free(out);
	free(err);
	assert_int_equal(RUN("good 2\n", NULL, NULL, "-t", "2", "f"), 0);
	replace_by_hand("f", "forged\n");
	assert_int_equal(RUN(NULL, NULL, &err, "--verify", "f"), 3);
	assert_one_message(err, "replaced");
	free(err);
	assert_int_equal(unlink("f"), 0);
	assert_int_equal(RUN(NULL, NULL, &err, "--verify", "f"), 3);
	assert_one_message(err, "missing");
	free(err);
	/* No fence: nothing to verify against, and no JSON. */
	fwt_spit("plain", "p\n");
	assert_int_equal(RUN(NULL, &out, &err, "--verify", "--json", "plain"),
	                 3);
	assert_string_equal(out, "");
	assert_one_message(err, "plain");
	free(out);
	free(err);
}

/* --show --json gives the token of FILE's content beside the fence's,
   and the verdict; plain --show still prints the fence's token alone. */
static void show_json_reports_file_token_and_verdict(void **state)
{
	char *out, *got;

	(void)state;
	need_python();
	assert_int_equal(RUN("v\n", NULL, NULL, "-t", "3", "f"), 0);
	assert_int_equal(RUN(NULL, NULL, NULL, "--claim", "-t", "9", "f"), 0);
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "f"), 0);
	assert_string_equal(out, "9\n");
	free(out);
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "--json", "f"), 0);
	got = json_eval(out, "[d[\"token\"], d[\"op\"], d[\"file_token\"], "
	                "d[\"verdict\"]]");
	assert_string_equal(got, "[\"9\", \"claim\", \"3\", \"same\"]\n");
	free(got);
	free(out);
	replace_by_hand("f", "forged\n");
	assert_int_equal(RUN(NULL, &out, NULL, "--show", "--json", "f"), 0);
	got = json_eval(out, "[d[\"token\"], d[\"file_token\"], d[\"verdict\"]]");
	assert_string_equal(got, "[\"9\", null, \"replaced\"]\n");
	free(got);
	free(out);
}

/*
 * A failed CMD rolls the transaction back; if its temporary file cannot
 * be removed, the command says so (and how to clean it) as well as why
 * it failed, and keeps CMD's exit code.  The removal is made to fail by
 * tests/faults.c (unlinkat fails with EIO).
 */
static void failed_cmd_reports_a_temporary_file_left_behind(void **state)
{
	char shim[4096], *err;
	const char *bin = getenv("FW_BIN");
	const char *slash = bin ? strrchr(bin, '/') : NULL;

	(void)state;
	if (getenv("FWT_UNDER_VALGRIND") || !slash) {
		print_message("skipped: the fault shim is not preloaded under "
		              "valgrind\n");
		skip();
	}
	snprintf(shim, sizeof(shim), "%.*s/tests/faults.so",
	         (int)(slash - bin), bin);
	if (access(shim, R_OK) != 0) {
		print_message("skipped: no %s\n", shim);
		skip();
	}
	/* The fence exists: the only unlinkat left is the rollback's. */
	assert_int_equal(RUN("v1\n", NULL, NULL, "-t", "1", "f"), 0);
	setenv("LD_PRELOAD", shim, 1);
	setenv("FWT_FAULT", "unlinkat:1:5", 1);
	setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
	assert_int_equal(RUN(NULL, NULL, &err, "-t", "2", "f", "--", "sh",
	                     "-c", "echo part; exit 3"), 6);
	unsetenv("LD_PRELOAD");
	unsetenv("FWT_FAULT");
	assert_true(strncmp(err, "fencedwrite: sh exited with status 3",
	                    36) == 0);
	assert_non_null(strstr(err, "\nfencedwrite: the temporary file "));
	assert_non_null(strstr(err, "could not be removed"));
	assert_non_null(strstr(err, "fencedwrite --clean f"));
	free(err);
	fwt_assert_content("f", "v1\n");
	assert_int_equal(fwt_count_tmp("."), 1);
	assert_int_equal(RUN(NULL, NULL, NULL, "--clean", "f"), 0);
	assert_int_equal(fwt_count_tmp("."), 0);
}

/*
 * On a terminal, CMD (in a process group of its own) gets the terminal
 * while it runs: it can read from it, and ^C typed there ends the job.
 * Runs the command as a session leader on a new pseudo-terminal.
 */
static pid_t spawn_on_pty(int *master, char *const argv[])
{
	pid_t pid;

	*master = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(*master >= 0);
	assert_int_equal(grantpt(*master), 0);
	assert_int_equal(unlockpt(*master), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sigset_t none;
		int s;

		/* As a shell starts a foreground job: whatever this suite's
		   runner ignores or blocks, ^C must work on the terminal. */
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (setsid() < 0)
			_exit(120);
		s = open(ptsname(*master), O_RDWR);   /* the controlling tty */
		if (s < 0)
			_exit(121);
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		execv(getenv("FW_BIN"), argv);
		_exit(127);
	}
	return pid;
}

/* Exit code (or 128 + signal) of PID, draining MASTER meanwhile; -1 if
   it has not ended after LIMIT_S seconds (then it is killed).  Bounded by
   the clock: once the terminal hangs up, poll() returns at once. */
static int wait_on_pty(pid_t pid, int master, int limit_s)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		struct pollfd p = { master, POLLIN, 0 };
		int status;

		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFSIGNALED(status) ? 128 + WTERMSIG(status)
			                           : WEXITSTATUS(status);
		if (poll(&p, 1, 10) > 0 && (p.revents & POLLIN)) {
			char buf[256];

			if (read(master, buf, sizeof(buf)) < 0)
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		} else if (p.revents) {
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < limit_s);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static void cmd_gets_the_terminal_it_runs_on(void **state)
{
	char *const reader[] = { (char *)"fencedwrite", (char *)"-t",
	                         (char *)"1", (char *)"f", (char *)"--",
	                         (char *)"sh", (char *)"-c",
	                         (char *)"read x; echo \"got $x\"", NULL };
	char *const waiter[] = { (char *)"fencedwrite", (char *)"-t",
	                         (char *)"2", (char *)"f", (char *)"--",
	                         (char *)"sh", (char *)"-c",
	                         (char *)"echo ready >&2; read x; echo late", NULL };
	int master, rc;
	pid_t pid;
	char buf[64];
	size_t got = 0;

	(void)state;
	pid = spawn_on_pty(&master, reader);
	assert_int_equal(write(master, "hello\n", 6), 6);
	rc = wait_on_pty(pid, master, 20);
	close(master);
	if (rc != 0)
		fail_msg("exit %d: CMD could not read the terminal", rc);
	fwt_assert_content("f", "got hello\n");
	/* ^C while CMD reads: the job ends, nothing committed */
	pid = spawn_on_pty(&master, waiter);
	while (got < sizeof(buf) - 1) {   /* until CMD runs: it says so */
		ssize_t n = read(master, buf + got, sizeof(buf) - 1 - got);

		assert_true(n > 0);
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "ready"))
			break;
	}
	assert_int_equal(write(master, "\003", 1), 1);
	rc = wait_on_pty(pid, master, 20);
	close(master);
	assert_int_equal(rc, 128 + SIGINT);
	fwt_assert_content("f", "got hello\n");
	assert_int_equal(fwt_count_tmp("."), 0);
}

/*
 * Read MASTER into BUF (SIZE bytes, NUL-terminated) until NEEDLE is in it
 * (NULL: until the terminal hangs up), for at most LIMIT_S seconds.  The
 * length read, or -1 if NEEDLE never came.
 */
static long read_pty_until(int master, char *buf, size_t size,
                           const char *needle, int limit_s)
{
	struct timespec start, now;
	size_t got = 0;

	buf[0] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		struct pollfd p = { master, POLLIN, 0 };
		ssize_t n;

		if (needle && strstr(buf, needle))
			return (long)got;
		if (poll(&p, 1, 100) <= 0)
			goto tick;
		n = read(master, buf + got, size - 1 - got);
		if (n <= 0)   /* EIO: every slave descriptor is closed */
			return needle ? -1 : (long)got;
		got += (size_t)n;
		buf[got] = '\0';
		if (got == size - 1)
			return -1;
tick:
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < limit_s);
	return -1;
}

/*
 * --progress: a line on the terminal while the content comes in, ended
 * with a newline when it is all there; nothing at all when standard
 * error is not a terminal.
 */
static void progress_is_shown_on_a_terminal_only(void **state)
{
	char *const slow[] = { (char *)"fencedwrite", (char *)"--progress",
	                       (char *)"-t", (char *)"1", (char *)"f",
	                       (char *)"--", (char *)"sh", (char *)"-c",
	                       (char *)"head -c 5000 /dev/zero; read x; "
	                       "printf y", NULL };
	char buf[8192], *err, *line;
	size_t len;
	int master, status;
	pid_t pid;

	(void)state;
	/* CMD holds the content back until the line is there */
	pid = spawn_on_pty(&master, slow);
	if (read_pty_until(master, buf, sizeof(buf),
	                   "fencedwrite: 5000 bytes (4.9 KiB) so far, ", 20) < 0)
		fail_msg("no progress line on the terminal: '%s'", buf);
	assert_int_equal(write(master, "go\n", 3), 3);
	assert_true(read_pty_until(master, buf, sizeof(buf), NULL, 20) >= 0);
	close(master);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the last line has the final count and is ended (the terminal
	   shows a newline as \r\n) */
	line = strrchr(buf, '\r');
	assert_non_null(line);
	assert_string_equal(line, "\r\n");
	*line = '\0';
	line = strrchr(buf, '\r');
	assert_non_null(line);
	assert_true(strncmp(line, "\rfencedwrite: 5001 bytes (4.9 KiB) so "
	                    "far, ", 39) == 0);
	free(fwt_slurp("f", &len));
	assert_int_equal(len, 5001);
	/*
	 * Standard error a file: not a byte.  The line would be printed
	 * after a quarter of a second; this content takes a whole second to
	 * come in (the sleep makes a slow producer, it waits for nothing).
	 */
	assert_int_equal(RUN(NULL, NULL, &err, "--progress", "-t", "2", "f",
	                     "--", "sh", "-c", "head -c 5000 /dev/zero; "
	                     "sleep 1"), 0);
	assert_string_equal(err, "");
	free(err);
	free(fwt_slurp("f", &len));
	assert_int_equal(len, 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(exit_0_commits_stdin),
		T(exit_1_stale_token_names_file_token_and_fence),
		T(exit_2_usage_errors_change_nothing),
		T(exit_3_unfenced_corrupt_or_link),
		T(exit_4_lock_not_acquired),
		T(exit_5_system_error_names_call_and_path),
		T(exit_6_cmd_fails_or_is_killed),
		T(unknown_option_is_one_line_and_a_pointer_to_help),
		T(options_may_follow_file_up_to_cmd),
		T(cmd_status_exits_with_cmds_own_status),
		T(token_env_reads_the_token_and_rejects_bad_values),
		T(dev_null_stdin_is_refused_an_empty_pipe_is_not),
		T(closed_stdin_is_a_usage_error),
		T(delete_check_show_init_clean),
		T(mode_option_and_preserved_bits),
		T(help_and_version_document_every_option),
		T(large_stdin_is_committed_exactly),
		T(sigterm_while_waiting_leaves_nothing_behind),
		T(sigint_while_cmd_runs_leaves_nothing_behind),
		T(background_child_of_cmd_cannot_write_after_exit),
		T(signal_ends_cmds_whole_process_group),
		T(signal_before_the_lock_wait_still_ends_it),
		T(init_accepts_token_0),
		T(json_is_valid_and_tokens_are_exact),
		T(help_and_man_page_list_options_in_one_order),
		T(cmd_write_claims_first_zombie_turned_away_meanwhile),
		T(no_claim_lets_the_zombie_in_until_the_commit),
		T(claim_advances_the_fence_and_leaves_file_alone),
		T(update_increments_and_loses_nothing_to_a_newer_holder),
		T(append_from_stdin_and_from_cmd),
		T(read_prints_a_version_and_its_token),
		T(verify_says_what_differs),
		T(show_json_reports_file_token_and_verdict),
		T(failed_cmd_reports_a_temporary_file_left_behind),
		T(cmd_gets_the_terminal_it_runs_on),
		T(progress_is_shown_on_a_terminal_only),
	};
	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
