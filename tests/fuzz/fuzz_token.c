/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the token parser, checked against a second, naive
 * implementation: accepted exactly when the text is all digits, its value
 * fits in 64 bits and is not 0, and then with that value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fencedwrite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	unsigned __int128 v = 0;
	int digits = size > 0, big = 0;
	uint64_t got = 0;
	int rc;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	size = strlen(text);   /* the parser sees a C string */
	for (size_t i = 0; i < size; i++) {
		if (data[i] < '0' || data[i] > '9') {
			digits = 0;
			break;
		}
		v = v * 10 + (data[i] - '0');
		if (v > UINT64_MAX)
			big = 1, v = (unsigned __int128)UINT64_MAX + 1;
	}
	rc = fw_parse_token(text, &got);
	if (digits && !big && v != 0) {
		if (rc != FW_OK || got != (uint64_t)v)
			abort();
	} else if (rc != FW_USAGE || got != 0) {
		abort();
	}
	free(text);
	return 0;
}
