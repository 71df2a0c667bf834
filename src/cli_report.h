/* SPDX-License-Identifier: MIT */
/*
 * cli_report.h - what the command tells the world besides its exit code:
 * one syslog line per run (--syslog) and node_exporter textfile metrics
 * (--metrics).  Neither ever changes the exit code; a failure of either
 * is one line on standard error.
 */
#ifndef FW_CLI_REPORT_H
#define FW_CLI_REPORT_H

#include "cli.h"

/* One run's outcome, as the reports name it. */
struct cli_outcome {
	const char *word;      /* "committed", "stale", "unsafe", ... */
	int severity;          /* a syslog severity, LOG_INFO ... LOG_ERR */
	int code;              /* the exit code */
	int sig;               /* the signal that ended the run, or 0 */
	int cmd_status;        /* CMD's own exit status (128+N: signal N)
	                          when the code is 6, else -1 */
	int commit;            /* 1: FILE got new content under the token */
	int fence_known;       /* 1: fence below is known */
	uint64_t fence;        /* the fence's token as the run ends */
	const char *file;      /* FILE, absolute */
	const struct cli *cli;
	const struct fw_result *res;
};

/*
 * Report the outcome of the action C ran: exit code RC, the library's
 * RES, SIG the signal that interrupted it (0: none).  Syslog when
 * --syslog or FENCEDWRITE_SYSLOG asks for it, metrics when --metrics or
 * FENCEDWRITE_METRICS names a file.
 */
void cli_report(const struct cli *c, int rc, int cmd_status,
                const struct fw_result *res, int sig);

/* The parts, for cli_report. */

/*
 * The syslog facility (LOG_USER, ...) to log with, or -1 for none:
 * OPTION is --syslog, ENV the value of FENCEDWRITE_SYSLOG (may be NULL).
 */
int cli_syslog_facility(int option, const char *env);
void cli_syslog_send(const struct cli_outcome *o, int facility);
void cli_metrics_update(const struct cli_outcome *o, const char *path);

#endif
