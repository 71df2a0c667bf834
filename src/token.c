/* SPDX-License-Identifier: MIT */
/*
 * token.c - the one spelling of a fencing token.
 *
 * strtoull would accept " 8", "+8", "-1" (as a huge number) and "0x8" with
 * base 0: each a way for a script bug to become a token nobody issued.
 */
#include "internal.h"

int fw_parse_token(const char *text, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = text;

	if (!text || !*text)
		return FW_USAGE;
	for (; *p; p++) {
		unsigned d;

		if (*p < '0' || *p > '9')
			return FW_USAGE;
		d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return FW_USAGE;
		v = v * 10 + d;
	}
	if (v == 0)
		return FW_USAGE;
	*out = v;
	return FW_OK;
}
