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
/* How long CMD's group may take to act on a forwarded signal before the
   rest of it is killed, when fencedwrite itself is dying of a signal. */
#define GRACE_NS 1000000000LL
/* The interval of the cancellation ticker (see catch_signals). */
#define TICK_NS 10000000L

extern char **environ;

/* Set by the handler; the library checks it when a call is interrupted. */
static volatile sig_atomic_t got_signal;
/* CMD's process group (its pid) while it runs, for the handler. */
static volatile pid_t cmd_pgid;
/* Interrupts blocking calls again and again once a signal has come. */
static timer_t ticker;
static volatile sig_atomic_t have_ticker;

static void forward_to_cmd(int sig)
{
	pid_t pg = cmd_pgid;

	if (pg <= 0)
		return;
	kill(-pg, sig);
	/* A member stopped by SIGTTIN or SIGSTOP acts on SIG only once it
	   runs again. */
	kill(-pg, SIGCONT);
}

static void on_signal(int sig)
{
	static const struct itimerspec tick = {
		.it_value = { 0, 1000000 }, .it_interval = { 0, TICK_NS },
	};
	int saved = errno;

	got_signal = sig;
	/* A signal meant for us alone (a cron timeout kills only us, Ctrl-C
	   reaches only the terminal's foreground group) must stop CMD and
	   everything it started too, or we would wait for them. */
	forward_to_cmd(sig);
	/*
	 * The library looks at the cancel flag only when a call returns
	 * EINTR.  A signal that lands after its last look and before a
	 * blocking call starts (the lock wait, a read from CMD's pipe)
	 * interrupts nothing, and the call would block until the other
	 * writer unlocks.  So from now on a timer signal interrupts whatever
	 * blocks, every TICK_NS, until the library has noticed the flag.
	 */
	if (have_ticker)
		timer_settime(ticker, 0, &tick, NULL);
	errno = saved;
}

static void on_tick(int sig)
{
	(void)sig;   /* only there to make blocking calls return EINTR */
}

/* Signals end a run cleanly: the library notices, removes its temporary
   file, and main() then dies of the same signal, as the caller expects. */
static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigevent ev;
	struct sigaction sa, old;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;     /* no SA_RESTART: blocking calls return */
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigaction(SIGRTMIN, &sa, NULL);
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGRTMIN;
	have_ticker = timer_create(CLOCK_MONOTONIC, &ev, &ticker) == 0;
	sa.sa_handler = on_signal;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		/* An ignored signal stays ignored, for us and for CMD:
		   nohup, and a shell's background jobs, rely on that. */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&set, sigs[i]);
	}
	/* A blocked mask survives exec: a parent that started us with these
	   blocked would otherwise make us deaf to them. */
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void stop_ticker(void)
{
	static const struct itimerspec off;

	if (have_ticker)
		timer_settime(ticker, 0, &off, NULL);
}

static void die_of_signal(void)
{
	int sig = got_signal;

	signal(sig, SIG_DFL);
	kill(getpid(), sig);   /* not blocked: it ends us here */
	_exit(128 + sig);
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

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * End CMD's process group: SIG to all of it, up to GRACE_NS for CMD to
 * exit, then SIGKILL to whatever of the group is left (a pipeline's other
 * members, a background job).  CMD is reaped only after the SIGKILL: until
 * then its pid, which is the group's id, cannot be reused, so the SIGKILL
 * cannot reach a stranger.
 */
static void stop_cmd_group(pid_t pid, int sig)
{
	int64_t deadline = now_ns() + GRACE_NS;

	forward_to_cmd(sig);
	for (;;) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0
		    ? errno != EINTR : si.si_pid == pid)
			break;
		if (now_ns() >= deadline)
			break;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	kill(-pid, SIGKILL);
	cmd_pgid = 0;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * Start CMD as the leader of a process group of its own, so that a signal
 * can be passed on to everything it starts, with OUT as its standard
 * output.  0 or an errno value.
 */
static int spawn_cmd(char **cmd, int out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	rc = posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
	if (rc == 0)
		rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	if (rc == 0)
		rc = posix_spawnattr_setpgroup(&at, 0);
	if (rc == 0)
		rc = posix_spawnp(pid, cmd[0], &fa, &at, cmd, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

/* CMD's exit status, as FW_OK, EXIT_CMD_FAILED (said why), FW_SYSTEM,
   or -1 when a signal came. */
static int reap_cmd(pid_t pid, const char *name)
{
	siginfo_t si;
	int status;

	/* WNOWAIT: the group keeps its id while we decide (stop_cmd_group). */
	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0)
			break;
		if (errno != EINTR) {
			fprintf(stderr, PROG ": waitid(%s): %s\n", name,
			        strerror(errno));
			stop_cmd_group(pid, SIGTERM);
			return FW_SYSTEM;
		}
		if (got_signal) {
			stop_cmd_group(pid, got_signal);
			return -1;
		}
	}
	cmd_pgid = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got_signal)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FW_OK;
	if (WIFEXITED(status))
		fprintf(stderr, PROG ": %s exited with status %d; nothing "
		        "committed\n", name, WEXITSTATUS(status));
	else
		fprintf(stderr, PROG ": %s was killed by signal %d (%s); "
		        "nothing committed\n", name, WTERMSIG(status),
		        strsignal(WTERMSIG(status)));
	return EXIT_CMD_FAILED;
}

/*
 * Run CMD with its standard output going through a pipe into the
 * transaction, until end of file, as $(...) captures it.  The temporary
 * file itself is never handed to CMD: a background child of CMD could
 * otherwise write into FILE after the commit.  FW_OK, EXIT_CMD_FAILED,
 * another code with RES filled, or -1 when a signal came.
 */
static int run_cmd(struct fw_txn *txn, char **cmd, struct fw_result *res)
{
	char name[64];
	int pfd[2], rc;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		snprintf(res->message, sizeof(res->message), "pipe(standard "
		         "output of %.40s): %s", cmd[0], strerror(errno));
		return FW_SYSTEM;
	}
	rc = spawn_cmd(cmd, pfd[1], &pid);
	close(pfd[1]);   /* CMD's group must hold the only write ends */
	if (rc != 0) {
		close(pfd[0]);
		fprintf(stderr, PROG ": %s: %s\n", cmd[0], strerror(rc));
		res->message[0] = '\0';
		return EXIT_CMD_FAILED;
	}
	cmd_pgid = pid;
	/* A signal that came before cmd_pgid was set was not passed on. */
	if (got_signal)
		forward_to_cmd(got_signal);
	snprintf(name, sizeof(name), "standard output of %.40s", cmd[0]);
	rc = fw_txn_copy_fd(txn, pfd[0], name, res);
	close(pfd[0]);
	if (got_signal) {
		stop_cmd_group(pid, got_signal);
		return -1;
	}
	if (rc != FW_OK) {
		/* The content cannot be kept: CMD's work is for nothing. */
		stop_cmd_group(pid, SIGTERM);
		return rc;
	}
	rc = reap_cmd(pid, cmd[0]);
	if (rc != FW_OK)
		res->message[0] = '\0';   /* reap_cmd said why */
	return rc;
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
	if (c->cmd)
		rc = run_cmd(txn, c->cmd, res);
	else
		rc = fw_txn_copy_fd(txn, STDIN_FILENO, "standard input", res);
	if (rc != FW_OK) {
		fw_txn_abort(txn);
		return rc < 0 ? FW_SYSTEM : rc;
	}
	return fw_txn_commit(txn, c->token, res);
}

/* ---- JSON ------------------------------------------------------------ */

/*
 * Length of the well-formed UTF-8 sequence at S, or 0 (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF).  A NUL stops a
 * truncated sequence before the end of the string.
 */
static size_t utf8_len(const unsigned char *s)
{
	static const unsigned min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	unsigned cp;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1fu;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07u;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* S as a JSON string; a byte that is not part of valid UTF-8 becomes
   U+FFFD.  1 if S was valid UTF-8, 0 if something was replaced. */
static int json_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int valid = 1;

	putchar('"');
	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\u%04x", *p);
		else if (n > 0)
			fwrite(p, 1, n, stdout);
		else
			printf("\\ufffd");
		valid &= n > 0;
		p += n > 0 ? n : 1;
	}
	putchar('"');
	return valid;
}

/*
 * "VALUE" of field NAME.  Names are bytes to the kernel: when VALUE is not
 * valid UTF-8 its exact bytes follow as ,"NAME_hex":"6eff..." so that a
 * consumer can still tell two such names apart and open the file.
 */
static void json_value(const char *name, const char *value)
{
	if (json_string(value))
		return;
	printf(",\"%s_hex\":\"", name);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++)
		printf("%02x", *p);
	putchar('"');
}

static void json_field(const char *name, const char *value)
{
	printf(",\"%s\":", name);
	json_value(name, value);
}

/* 64-bit counters as decimal strings: a JSON number above 2^53 comes out
   of many parsers (jq 1.6, JavaScript) rounded. */
static void json_u64(const char *name, uint64_t v)
{
	printf(",\"%s\":\"%llu\"", name, (unsigned long long)v);
}

static int do_show(struct cli *c, struct fw_result *res)
{
	struct fw_fence_info info;
	char when[32], fence[PATH_MAX + 8];
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
	snprintf(fence, sizeof(fence), "%s.fence", c->file);
	printf("{\"file\":");
	json_value("file", c->file);
	json_field("fence", c->opts.fence_path ? c->opts.fence_path : fence);
	json_u64("token", info.token);
	json_u64("seq", info.seq);
	json_field("op", info.op);
	json_field("time", when);
	printf(",\"pid\":%ld", info.pid);
	json_field("host", info.host);
	printf("}\n");
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

static void doctor_json(const struct cli *c, const struct fw_doctor_report *r)
{
	printf("{\"file\":");
	json_value("file", c->file);
	json_field("fstype", r->mount.fstype);
	json_field("source", r->mount.source);
	json_field("mount_point", r->mount.mount_point);
	json_field("options", r->mount.options);
	json_field("lock_kind", r->lock_kind);
	printf(",\"lock_granted\":%s", r->lock_granted ? "true" : "false");
	json_field("locks_reach", r->mount.scope == FW_SCOPE_SHARED ? "all hosts"
	           : r->mount.scope == FW_SCOPE_UNKNOWN ? "unknown"
	           : "this host");
	printf(",\"o_tmpfile\":%s,\"safe\":%s",
	       r->o_tmpfile ? "true" : "false", r->safe ? "true" : "false");
	json_field("why", r->mount.why);
	printf("}\n");
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
		doctor_json(c, &r);
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
	/* Done (a commit that had begun is finished): no more interruptions
	   of what is left to say. */
	stop_ticker();
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
