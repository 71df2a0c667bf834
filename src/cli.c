/* SPDX-License-Identifier: MIT */
/*
 * cli.c - fencedwrite(1): options, messages and exit codes over the
 * library.  Protocol decisions live in commit.c; this file only translates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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
#include "cli_report.h"

#define EXIT_CMD_FAILED 6
/* How long CMD's group may take to act on a forwarded signal before the
   rest of it is killed, when fencedwrite itself is dying of a signal. */
#define GRACE_NS 1000000000LL
/* The interval of the cancellation ticker (see catch_signals). */
#define TICK_NS 10000000L
/* --progress updates its line at most this often. */
#define PROGRESS_NS 250000000L

extern char **environ;

/* Set by the handler; the library checks it when a call is interrupted. */
static volatile sig_atomic_t got_signal;
/* CMD's process group (its pid) while it runs, for the handler. */
static volatile pid_t cmd_pgid;
/* Interrupts blocking calls again and again once a signal has come. */
static timer_t ticker;
static volatile sig_atomic_t have_ticker;
/* What a failed CMD makes us exit with under --cmd-status: its status as
   a shell reports it (set wherever EXIT_CMD_FAILED is decided). */
static int cmd_own_status = EXIT_CMD_FAILED;

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
 * CMD runs in a process group of its own, which on a terminal is a
 * background job: its first read of the terminal would stop it (SIGTTIN)
 * for ever.  When fencedwrite is the terminal's foreground job, the
 * terminal goes to CMD's group while CMD runs and comes back after, as a
 * shell does for a job it starts in the foreground.
 */
static int tty_fd = -1;   /* the terminal given to CMD's group, or -1 */

static void give_terminal(pid_t pgid)
{
	for (int fd = 0; fd <= 2; fd += 2)
		if (isatty(fd) && tcgetpgrp(fd) == getpgrp() &&
		    tcsetpgrp(fd, pgid) == 0) {
			tty_fd = fd;
			/* CMD may have read the terminal before it was its
			   own, and been stopped for it (SIGTTIN): let it go
			   on, now that the read can succeed. */
			kill(-pgid, SIGCONT);
			return;
		}
}

static void take_terminal_back(void)
{
	sigset_t ttou, old;

	if (tty_fd < 0)
		return;
	/* From the background tcsetpgrp would stop us (SIGTTOU) unless
	   that signal is blocked. */
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	(void)tcsetpgrp(tty_fd, getpgrp());
	sigprocmask(SIG_SETMASK, &old, NULL);
	tty_fd = -1;
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
	take_terminal_back();
}

/*
 * Start CMD as the leader of a process group of its own, so that a signal
 * can be passed on to everything it starts, with IN (unless -1: our own)
 * as its standard input and OUT as its standard output.  0 or an errno
 * value.
 */
static int spawn_cmd(char **cmd, int in, int out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	rc = in < 0 ? 0 : posix_spawn_file_actions_adddup2(&fa, in,
	                                                   STDIN_FILENO);
	if (rc == 0)
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
	/* A ^C or ^\ typed while CMD had the terminal was meant for the
	   whole job: die of it too, as shells do. */
	if (tty_fd >= 0 && WIFSIGNALED(status) &&
	    (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGQUIT))
		got_signal = WTERMSIG(status);
	take_terminal_back();
	if (got_signal)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FW_OK;
	cmd_own_status = WIFEXITED(status) ? WEXITSTATUS(status)
	                                   : 128 + WTERMSIG(status);
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
 * Run CMD, its standard input IN (-1: ours), with its standard output
 * going through a pipe into the transaction, until end of file, as $(...)
 * captures it.  The temporary file itself is never handed to CMD: a
 * background child of CMD could otherwise write into FILE after the
 * commit.  FW_OK, EXIT_CMD_FAILED, another code with RES filled, or -1
 * when a signal came.
 */
static int run_cmd(struct fw_txn *txn, char **cmd, int in,
                   struct fw_result *res)
{
	char name[64];
	int pfd[2], rc;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		snprintf(res->message, sizeof(res->message), "pipe(standard "
		         "output of %.40s): %s", cmd[0], strerror(errno));
		return FW_SYSTEM;
	}
	rc = spawn_cmd(cmd, in, pfd[1], &pid);
	close(pfd[1]);   /* CMD's group must hold the only write ends */
	if (rc != 0) {
		close(pfd[0]);
		fprintf(stderr, PROG ": %s: %s\n", cmd[0], strerror(rc));
		res->message[0] = '\0';
		/* As a shell says it: not found, or found but not runnable. */
		cmd_own_status = rc == ENOENT ? 127 : 126;
		return EXIT_CMD_FAILED;
	}
	cmd_pgid = pid;
	give_terminal(pid);
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

/* ---- --progress -------------------------------------------------------- */

/*
 * A line on standard error (a terminal) saying how much of the content has
 * come in and how fast.  The library copies with splice or
 * copy_file_range, which report nothing on the way; the count is instead
 * the size of the temporary file, looked at by a thread of its own, so
 * the copy keeps its fast path and costs nothing when the option is off.
 */
struct progress {
	int on;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;          /* under lock: end the line and return */
	int fd;            /* the temporary file, owned by the transaction */
	off_t base;        /* its size when the count started */
	int64_t start;
	int width;         /* of the line shown last, 0 if none yet */
};

static void human_size(char *buf, size_t len, double v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static void progress_show(struct progress *p)
{
	char line[128], size[32], rate[32];
	double secs = (double)(now_ns() - p->start) / 1e9;
	struct stat st;
	int n;

	if (fstat(p->fd, &st) < 0)
		return;
	human_size(size, sizeof(size), (double)st.st_size);
	human_size(rate, sizeof(rate),
	           secs > 0 ? (double)(st.st_size - p->base) / secs : 0);
	n = snprintf(line, sizeof(line), PROG ": %lld bytes (%s) so far, %s/s",
	             (long long)st.st_size, size, rate);
	/* Spaces over what is left of a longer previous line. */
	fprintf(stderr, "\r%s%*s", line, p->width > n ? p->width - n : 0, "");
	p->width = n;
}

static void *progress_run(void *arg)
{
	struct progress *p = arg;
	struct timespec at;

	pthread_mutex_lock(&p->lock);
	clock_gettime(CLOCK_MONOTONIC, &at);
	while (!p->stop) {
		at.tv_nsec += PROGRESS_NS;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		while (!p->stop &&
		       pthread_cond_timedwait(&p->wake, &p->lock, &at) == 0)
			;
		if (!p->stop)
			progress_show(p);
	}
	/* The last count, and the line ended: what follows starts afresh.
	   Content shorter than one interval leaves no line at all. */
	if (p->width) {
		progress_show(p);
		fputc('\n', stderr);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Start the line for the content going to FD, if asked for and if
   standard error is a terminal (a log file wants no \r lines). */
static void progress_start(struct progress *p, const struct cli *c, int fd)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	struct stat st;

	memset(p, 0, sizeof(*p));
	if (!c->progress || !isatty(STDERR_FILENO) || fstat(fd, &st) < 0)
		return;
	p->fd = fd;
	p->base = st.st_size;
	p->start = now_ns();
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	/*
	 * The thread blocks every signal: the handlers must run on the main
	 * thread, whose blocking calls they interrupt to cancel the write.
	 * Blocked SIGTTOU also lets the line through while CMD's group has
	 * the terminal and it is set to tostop.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	p->on = pthread_create(&p->thread, NULL, progress_run, p) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!p->on) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
	}
}

static void progress_end(struct progress *p)
{
	if (!p->on)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	p->on = 0;
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

/*
 * End a transaction that will not be committed.  Its failure (a temporary
 * file left behind) is said after the one that ended the write, whose
 * exit code stands.
 */
static int give_up(struct fw_txn *txn, int rc, struct fw_result *res)
{
	struct fw_result rb;

	if (fw_txn_rollback(txn, &rb) != FW_OK) {
		if (res->message[0] && rc >= 0)
			fprintf(stderr, PROG ": %s\n", res->message);
		fprintf(stderr, PROG ": %s\n", rb.message);
		res->message[0] = '\0';
	}
	return rc < 0 ? FW_SYSTEM : rc;
}

/* The new content from standard input or CMD (its input CMD_IN), then
   the commit under the token. */
static int fill_and_commit(struct cli *c, struct fw_txn *txn, int cmd_in,
                           struct fw_result *res)
{
	struct progress p;
	int rc;

	progress_start(&p, c, fw_txn_fd(txn));
	if (c->cmd)
		rc = run_cmd(txn, c->cmd, cmd_in, res);
	else
		rc = fw_txn_copy_fd(txn, STDIN_FILENO, "standard input", res);
	progress_end(&p);
	if (rc != FW_OK)
		return give_up(txn, rc, res);
	return fw_txn_commit(txn, c->token, res);
}

static int do_write(struct cli *c, struct fw_result *res)
{
	struct fw_txn *txn;
	int rc;

	/*
	 * Claim before CMD starts: a holder paused past its lease is turned
	 * away from the moment this one takes over, not only once CMD has
	 * finished, which may be long after the paused one woke up; and a
	 * stale holder does not run CMD at all.
	 */
	if (c->cmd && !c->no_claim) {
		rc = fw_claim(c->file, c->token, &c->opts, res);
		if (rc != FW_OK)
			return rc;
	}
	rc = fw_txn_begin(&txn, c->file, &c->opts, res);
	if (rc != FW_OK)
		return rc;
	return fill_and_commit(c, txn, -1, res);
}

/*
 * --update and --append: the claim and the version it covers come from
 * fw_update_begin; a newer token that claims or commits meanwhile makes
 * the commit stale, so nothing it wrote is lost.
 */
static int do_update(struct cli *c, struct fw_result *res)
{
	struct fw_txn *txn;
	int current, in, rc;

	rc = fw_update_begin(&txn, c->file, c->token, &c->opts, &current, res);
	if (rc != FW_OK)
		return rc;
	if (c->action == APPEND) {
		rc = current < 0 ? FW_OK
		     : fw_txn_copy_fd(txn, current, c->file, res);
		if (current >= 0)
			close(current);
		return rc != FW_OK ? give_up(txn, rc, res)
		                   : fill_and_commit(c, txn, -1, res);
	}
	/* An absent FILE is empty input, not ours (which may be a terminal). */
	in = current >= 0 ? current : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		snprintf(res->message, sizeof(res->message), "open(/dev/null): "
		         "%s", strerror(errno));
		return give_up(txn, FW_SYSTEM, res);
	}
	rc = fill_and_commit(c, txn, in, res);
	close(in);
	return rc;
}

/* PATH gets TOKEN in decimal and a newline. */
static int write_token_file(const char *path, uint64_t token,
                            struct fw_result *res)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)token);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY,
	              0666);
	const char *call = "open";
	int err = errno;

	if (fd >= 0) {
		ssize_t w = write(fd, line, (size_t)n);

		err = w < 0 ? errno : EIO;   /* a short write sets no errno */
		call = w == n ? NULL : "write";
		if (close(fd) < 0 && !call) {
			err = errno;
			call = "close";
		}
		if (!call)
			return FW_OK;
	}
	snprintf(res->message, sizeof(res->message), "%s(%s): %s", call, path,
	         strerror(err));
	return FW_SYSTEM;
}

/*
 * --read: the library copies one whole version to standard output, or
 * nothing.  With --token-file, the token comes from the same attempt as
 * the bytes, so it names exactly what was printed.
 */
static int do_read(struct cli *c, struct fw_result *res)
{
	uint64_t token = 0;
	int rc;

	if (!c->token_file)
		return fw_read(c->file, STDOUT_FILENO, &c->opts, res);
	rc = fw_read_version(c->file, STDOUT_FILENO, &c->opts, &token, res);
	if (rc != FW_OK)
		return rc;
	return write_token_file(c->token_file, token, res);
}

/* ---- JSON ------------------------------------------------------------ */

/*
 * Length of the well-formed UTF-8 sequence at S, or 0 (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF).  A NUL stops a
 * truncated sequence before the end of the string.
 */
size_t cli_utf8_len(const unsigned char *s)
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
		size_t n = cli_utf8_len(p);

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

static const char *verdict_name(int verdict)
{
	switch (verdict) {
	case FW_VERIFY_SAME: return "same";
	case FW_VERIFY_EDITED: return "edited";
	case FW_VERIFY_REPLACED: return "replaced";
	case FW_VERIFY_UNFINISHED: return "unfinished";
	case FW_VERIFY_MISSING: return "missing";
	default: return "unknown";
	}
}

/* --show --json and --verify --json: the fence's newest record, and what
   FILE is compared with it. */
static void status_json(const struct cli *c, const struct fw_status *st)
{
	const struct fw_fence_info *info = &st->fence;
	char when[32], fence[PATH_MAX + 8];
	struct tm tm;
	time_t t = (time_t)info->time;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(fence, sizeof(fence), "%s.fence", c->file);
	printf("{\"file\":");
	json_value("file", c->file);
	json_field("fence", c->opts.fence_path ? c->opts.fence_path : fence);
	json_u64("token", info->token);
	json_u64("seq", info->seq);
	json_field("op", info->op);
	json_field("time", when);
	printf(",\"pid\":%ld", info->pid);
	json_field("host", info->host);
	if (st->file_token_known)
		json_u64("file_token", st->file_token);
	else
		printf(",\"file_token\":null");
	json_field("verdict", verdict_name(st->verdict));
	json_field("what", st->what);
	printf("}\n");
}

static int do_show(struct cli *c, struct fw_result *res)
{
	struct fw_fence_info info;
	struct fw_status st;
	int rc;

	if (c->json) {
		/* fw_status, not fw_show: the same record, read under the
		   same lock as the verdict (which does not read FILE). */
		fw_status_init(&st);
		rc = fw_status(c->file, &c->opts, &st, res);
		if (rc == FW_OK)
			status_json(c, &st);
		return rc;
	}
	rc = fw_show(c->file, &c->opts, &info, res);
	if (rc == FW_OK)
		printf("%llu\n", (unsigned long long)info.token);
	return rc;
}

/*
 * --verify: exit 0 when FILE is what the fence committed, 3 with the
 * library's message saying what differs.  Quiet on success, as a cron
 * job's check should be; with --json the verdict is printed either way.
 */
static int do_verify(struct cli *c, struct fw_result *res)
{
	struct fw_status st;
	int rc;

	fw_status_init(&st);
	rc = fw_verify(c->file, &c->opts, &st, res);
	/* A verdict was reached when the fence was read: its op is set. */
	if (c->json && (rc == FW_OK || rc == FW_UNSAFE) && st.fence.op[0])
		status_json(c, &st);
	return rc;
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
	if (r->lease_seconds >= 0)
		printf(",\"lease_seconds\":%ld", r->lease_seconds);
	else
		printf(",\"lease_seconds\":null");
	printf(",\"recover_lost_locks\":%s", r->recover_lost_locks < 0 ? "null"
	       : r->recover_lost_locks ? "true" : "false");
	printf("}\n");
}

/* The NFSv4 lines of --doctor: how long a frozen client keeps believing
   it holds the lock, and whether it takes a lost lock back silently. */
static void doctor_nfs_lines(const struct fw_doctor_report *r)
{
	if (r->lease_seconds >= 0)
		printf("nfs lease:   %ld s (a client cut off from the server "
		       "longer loses its locks unawares)\n", r->lease_seconds);
	if (r->recover_lost_locks == 1)
		printf("lost locks:  recover_lost_locks=Y: a lost lock is taken "
		       "back without a word; set nfs.recover_lost_locks=N\n");
	else if (r->recover_lost_locks == 0)
		printf("lost locks:  recover_lost_locks=N: a lost lock stays "
		       "lost and the writer is told (exit 8)\n");
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
		doctor_nfs_lines(&r);
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

	if ((c.action == WRITE || c.action == APPEND) && !c.cmd &&
	    stdin_is_dev_null()) {
		fprintf(stderr, PROG ": standard input is /dev/null, which would "
		        "commit an empty %s; give the producer as -- CMD (under "
		        "'etcdctl lock' commands read /dev/null), or pipe an "
		        "empty file in on purpose\n", c.file);
		return FW_USAGE;
	}
	switch (c.action) {
	case WRITE: rc = do_write(&c, &res); break;
	case READ: rc = do_read(&c, &res); break;
	case UPDATE:
	case APPEND: rc = do_update(&c, &res); break;
	case CLAIM: rc = fw_claim(c.file, c.token, &c.opts, &res); break;
	case DELETE: rc = fw_delete(c.file, c.token, &c.opts, &res); break;
	case CHECK: rc = fw_check(c.file, c.token, &c.opts, &res); break;
	case SHOW: rc = do_show(&c, &res); break;
	case VERIFY: rc = do_verify(&c, &res); break;
	case INIT: rc = fw_init(c.file, c.token, &c.opts, &res); break;
	case DOCTOR: rc = do_doctor(&c, &res); break;
	case CLEAN:
		rc = fw_clean(c.file, &c.opts, &removed, &res);
		if (rc == FW_OK && removed && !c.quiet)
			fprintf(stderr, PROG ": removed %u leftover temporary "
			        "file%s\n", removed, removed == 1 ? "" : "s");
		break;
	}
	/* Syslog and metrics: said on stderr if they fail, never rc. */
	cli_report(&c, rc, rc == EXIT_CMD_FAILED ? cmd_own_status : -1, &res,
	           got_signal);
	if (rc != FW_OK && got_signal)
		die_of_signal();
	/* flock(1)'s convention, on request: a caller that runs CMD through
	   us sees CMD's status as if it had run CMD itself. */
	if (rc == EXIT_CMD_FAILED && c.cmd_status)
		rc = cmd_own_status;
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
