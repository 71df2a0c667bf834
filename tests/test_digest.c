/* SPDX-License-Identifier: MIT */
/*
 * The content digest: XXH64 as Debian's `xxhsum -H64` computes it, the
 * same value however the content is split into writes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A file's digest is the digest of its bytes, and its size the file's,
   whatever its size against the 64 KiB reads: empty, one byte, one read
   and a bit, several MiB and an odd tail. */
static void file_digest_is_the_digest_of_its_bytes(void **state)
{
	const size_t sizes[] = { 0, 1, 65537, (8u << 20) + 4099 };
	size_t max = (8u << 20) + 4099;
	unsigned char *buf = malloc(max);
	unsigned seed = 11;
	char name[] = "/tmp/fwdigest.XXXXXX";
	int fd = mkstemp(name);

	(void)state;
	assert_non_null(buf);
	assert_true(fd >= 0);
	unlink(name);
	for (size_t i = 0; i < max; i++)
		buf[i] = (unsigned char)rand_r(&seed);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint64_t size, digest;

		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
		assert_int_equal(fw_digest_fd(fd, &size, &digest), 0);
		assert_int_equal(size, n);
		assert_true(digest == digest_of(buf, n));
	}
	close(fd);
	/* a descriptor that cannot be read is an error */
	assert_int_equal(fw_digest_fd(-1, &(uint64_t){ 0 }, &(uint64_t){ 0 }),
	                 -1);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_values),
		cmocka_unit_test(any_split_gives_the_same_digest),
		cmocka_unit_test(file_digest_is_the_digest_of_its_bytes),
	};
	return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
