/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the command's option parser.  The input is split at
 * NUL bytes into arguments.  Besides not crashing: a parse that succeeds
 * names a FILE, and a token whenever the action needs one; a token of 0
 * is only ever let through for --init; --update has a CMD, only the
 * writing actions have one; --token-file only with --read, --no-claim
 * only with a write by CMD, --json only where JSON is printed,
 * --cmd-status only with a CMD, --progress only where content comes in.
 * Options may follow FILE, yet the arguments are never reordered, and
 * CMD is exactly the tail after a "--" that follows FILE: none of its
 * arguments was taken as an option.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *argv[34], *orig[34];
	int argc = 0;
	struct cli c;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc++] = (char *)"fencedwrite";
	for (char *p = buf; p <= buf + size && argc < 33; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	memcpy(orig, argv, sizeof(argv));
	memset(&c, 0, sizeof(c));
	fw_opts_init(&c.opts);
	if (fw_cli_parse(&c, argc, argv) == FW_OK) {
		int at_file = 0;

		if (!c.file)
			abort();
		if (memcmp(orig, argv, sizeof(argv)) != 0)
			abort();
		for (int i = 1; i < argc; i++)
			if (argv[i] == c.file)
				at_file = i;
		if (!at_file)
			abort();
		if (c.cmd && (c.cmd <= argv + at_file + 1 ||
		              c.cmd > argv + argc - 1 ||
		              strcmp(c.cmd[-1], "--") != 0))
			abort();
		if (c.cmd_status && !c.cmd)
			abort();
		if (c.progress && c.action != WRITE && c.action != UPDATE &&
		    c.action != APPEND)
			abort();
		if ((c.action == WRITE || c.action == UPDATE ||
		     c.action == APPEND || c.action == CLAIM ||
		     c.action == DELETE || c.action == CHECK) && c.token == 0)
			abort();
		if (c.token_text && c.token == 0 && c.action != INIT)
			abort();
		if (c.action == UPDATE && !c.cmd)
			abort();
		if (c.cmd && c.action != WRITE && c.action != UPDATE &&
		    c.action != APPEND)
			abort();
		if (c.token_file && c.action != READ)
			abort();
		if (c.no_claim && !(c.action == WRITE && c.cmd))
			abort();
		if (c.json && c.action != SHOW && c.action != VERIFY &&
		    c.action != DOCTOR)
			abort();
	}
	free(buf);
	return 0;
}
