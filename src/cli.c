/*
 * cli.c - fencedwrite(1): options, messages and exit codes over the
 * library.  Protocol decisions live in commit.c; this file only translates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define EXIT_CMD_FAILED 6

extern char **environ;

/* Set by the handler; the library checks it when a call is interrupted. */
static volatile sig_atomic_t got_signal;
/* CMD while it runs, so the handler can pass a signal on to it. */
static volatile pid_t child_pid;

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

/*
 * etcdctl lock (and cron without input) runs commands with /dev/null as
 * standard input: "producer | etcdctl lock NAME -- fencedwrite ..." would
 * commit an empty file over good content.  Nobody means that; an empty file
 * on purpose comes through a pipe or a regular file.
 */
static int stdin_is_dev_null(void)
{
	struct stat st;

	return fstat(STDIN_FILENO, &st) == 0 && S_ISCHR(st.st_mode) &&
	       major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
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

static const char *scope_name(int scope)
{
	switch (scope) {
	case FW_SCOPE_SHARED: return "all hosts";
	case FW_SCOPE_LOCAL: return "this host (a local filesystem)";
	case FW_SCOPE_UNSAFE: return "this host only";
	default: return "unknown";
	}
}

static int do_doctor(struct cli *c, struct fw_result *res)
{
	struct fw_doctor_report r;
	int rc = fw_doctor(c->file, &c->opts, &r, res);

	if (rc != FW_OK && rc != FW_UNSAFE)
		return rc;
	if (rc == FW_UNSAFE && !r.mount.fstype[0])
		return rc;   /* no mount found: the message says so */
	if (c->json) {
		printf("{\"file\":");
		json_string(c->file);
		printf(",\"fstype\":");
		json_string(r.mount.fstype);
		printf(",\"source\":");
		json_string(r.mount.source);
		printf(",\"mount_point\":");
		json_string(r.mount.mount_point);
		printf(",\"options\":");
		json_string(r.mount.options);
		printf(",\"lock_kind\":\"%s\",\"lock_granted\":%s,"
		       "\"locks_reach\":\"%s\",\"o_tmpfile\":%s,\"safe\":%s,"
		       "\"why\":", r.lock_kind, r.lock_granted ? "true" : "false",
		       r.mount.scope == FW_SCOPE_SHARED ? "all hosts"
		       : r.mount.scope == FW_SCOPE_UNKNOWN ? "unknown"
		       : "this host", r.o_tmpfile ? "true" : "false",
		       r.safe ? "true" : "false");
		json_string(r.mount.why);
		printf("}\n");
	} else {
		printf("file:        %s\n", c->file);
		printf("filesystem:  %s, %s on %s\n", r.mount.fstype,
		       r.mount.source, r.mount.mount_point);
		printf("options:     %s\n", r.mount.options[0] ? r.mount.options
		                                             : "(none that matter)");
		printf("lock:        %s lock, %s\n", r.lock_kind,
		       r.lock_granted ? "granted" : "not granted (busy)");
		printf("locks reach: %s\n", scope_name(r.mount.scope));
		printf("O_TMPFILE:   %s\n", r.o_tmpfile ? "yes" : "no");
		printf("verdict:     %s: %s\n", r.safe ? "fencing holds"
		       : "fencing cannot hold", r.mount.why);
	}
	res->message[0] = '\0';   /* the report said it */
	return rc;
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
	rc = fw_cli_parse(&c, argc, argv);
	if (rc < 0)
		return 0;
	if (rc != FW_OK)
		return rc;
	catch_signals();
	c.opts.cancel = &got_signal;

	if (c.action == WRITE && !c.cmd && stdin_is_dev_null()) {
		fprintf(stderr, PROG ": standard input is /dev/null, which would "
		        "commit an empty %s; give the producer as -- CMD (under "
		        "'etcdctl lock' commands read /dev/null), or pipe an "
		        "empty file in on purpose\n", c.file);
		return FW_USAGE;
	}
	switch (c.action) {
	case WRITE: rc = do_write(&c, &res); break;
	case DELETE: rc = fw_delete(c.file, c.token, &c.opts, &res); break;
	case CHECK: rc = fw_check(c.file, c.token, &c.opts, &res); break;
	case SHOW: rc = do_show(&c, &res); break;
	case INIT: rc = fw_init(c.file, c.token, &c.opts, &res); break;
	case DOCTOR: rc = do_doctor(&c, &res); break;
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
