/* SPDX-License-Identifier: MIT */
/*
 * The content digest: XXH64 as Debian's `xxhsum -H64` computes it, the
 * same value however the content is split into writes.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "internal.h"

static uint64_t digest_of(const void *p, size_t n)
{
	struct fw_digest d;

	fw_digest_init(&d);
	fw_digest_update(&d, p, n);
	return fw_digest_final(&d);
}

/* Values printed by xxhsum -H64 for the same bytes. */
static void known_values(void **state)
{
	unsigned char r[10240];
	char x[100];

	(void)state;
	for (size_t i = 0; i < sizeof(r); i++)
		r[i] = (unsigned char)(i % 256);
	memset(x, 'x', sizeof(x));
	assert_true(digest_of("", 0) == 0xef46db3751d8e999ULL);
	assert_true(digest_of("a", 1) == 0xd24ec4f1a98c6e5bULL);
	assert_true(digest_of("abc", 3) == 0x44bc2cf5ad770999ULL);
	assert_true(digest_of(x, sizeof(x)) == 0x92f0de5a88a3c094ULL);
	assert_true(digest_of(r, sizeof(r)) == 0x58b820aa7970dbe2ULL);
}

static void any_split_gives_the_same_digest(void **state)
{
	unsigned char buf[4099];
	unsigned seed = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand_r(&seed);
	for (size_t len = 0; len < sizeof(buf); len += 97) {
		uint64_t whole = digest_of(buf, len);

		for (int round = 0; round < 20; round++) {
			struct fw_digest d;
			size_t at = 0;

			fw_digest_init(&d);
			while (at < len) {
				size_t n = (size_t)rand_r(&seed) % 70;

				if (n > len - at)
					n = len - at;
				fw_digest_update(&d, buf + at, n);
				at += n;
			}
			assert_true(fw_digest_final(&d) == whole);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_values),
		cmocka_unit_test(any_split_gives_the_same_digest),
	};
	return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
