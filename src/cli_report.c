/* SPDX-License-Identifier: MIT */
/*
 * cli_report.c - the outcome of a run, named once for both reports
 * (cli_syslog.c, cli_metrics.c), and which of them are wanted.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "cli_report.h"

static const char *success_word(enum action a)
{
	switch (a) {
	case WRITE:
	case UPDATE:
	case APPEND: return "committed";
	case CLAIM: return "claimed";
	case DELETE: return "deleted";
	case INIT: return "adopted";
	default: return "ok";
	}
}

/* The word and the severity of exit code RC.  Warnings are what a
   healthy fleet sees now and then (a superseded holder, a busy lock);
   errors want a person. */
static void name_outcome(struct cli_outcome *o, enum action a, int rc,
                         int sig)
{
	static const struct { const char *word; int severity; } by_code[] = {
		[FW_STALE] = { "stale", LOG_WARNING },
		[FW_USAGE] = { "usage", LOG_ERR },
		[FW_UNSAFE] = { "unsafe", LOG_ERR },
		[FW_LOCKED] = { "lock-timeout", LOG_WARNING },
		[FW_SYSTEM] = { "error", LOG_ERR },
		[6] = { "cmd-failed", LOG_ERR },
		[FW_LOCK_LOST] = { "lock-lost", LOG_ERR },
	};

	o->word = "error";
	o->severity = LOG_ERR;
	if (rc == FW_OK) {
		o->word = success_word(a);
		o->severity = LOG_INFO;
		o->commit = a == WRITE || a == UPDATE || a == APPEND;
	} else if (sig) {
		o->word = "interrupted";
		o->severity = LOG_WARNING;
	} else if (rc > 0 && rc < (int)(sizeof(by_code) / sizeof(by_code[0])) &&
	           by_code[rc].word) {
		o->word = by_code[rc].word;
		o->severity = by_code[rc].severity;
	}
}

/* A setting from the option, else from the environment; "" is unset. */
static const char *setting(const char *option, const char *env)
{
	const char *v = option ? option : getenv(env);

	return v && *v ? v : NULL;
}

void cli_report(const struct cli *c, int rc, int cmd_status,
                const struct fw_result *res, int sig)
{
	int facility = cli_syslog_facility(c->syslog,
	                                   getenv("FENCEDWRITE_SYSLOG"));
	const char *metrics = setting(c->metrics, "FENCEDWRITE_METRICS");
	struct cli_outcome o;
	char cwd[PATH_MAX], abs[2 * PATH_MAX + 2];

	if (facility < 0 && !metrics)
		return;
	memset(&o, 0, sizeof(o));
	name_outcome(&o, c->action, rc, rc != FW_OK ? sig : 0);
	o.code = rc;
	o.sig = rc != FW_OK ? sig : 0;
	o.cmd_status = rc == 6 ? cmd_status : -1;
	o.cli = c;
	o.res = res;
	/* After a change the fence holds the run's token; otherwise what
	   the library read (for a stale token: the one that beat it). */
	o.fence_known = res->fence_read;
	o.fence = res->fence_token;
	if (rc == FW_OK && c->token_text &&
	    (o.commit || c->action == CLAIM || c->action == DELETE ||
	     c->action == INIT)) {
		o.fence_known = 1;
		o.fence = c->token;
	}
	/* CMD ran after the claim of its token (--update and --append claim
	   in fw_update_begin): the fence holds the token though nothing was
	   committed. */
	if (rc == 6 && (c->action == UPDATE || c->action == APPEND ||
	                (c->action == WRITE && !c->no_claim))) {
		o.fence_known = 1;
		o.fence = c->token;
	}
	/* A fleet greps and labels by FILE: the same file must have one
	   name, whichever directory cron ran the job in. */
	o.file = c->file;
	if (c->file[0] != '/' && getcwd(cwd, sizeof(cwd))) {
		snprintf(abs, sizeof(abs), "%s/%s", strcmp(cwd, "/") ? cwd : "",
		         c->file);
		o.file = abs;
	}
	if (facility >= 0)
		cli_syslog_send(&o, facility);
	/* A run asked to die of a signal does not wait for the metrics
	   file's lock; its outcome is in the log. */
	if (metrics && !o.sig)
		cli_metrics_update(&o, metrics);
}
