/* SPDX-License-Identifier: MIT */
/* The fence format: round trip, torn slots, every corruption, version 1
   fences and their upgrade. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"

static struct fw_record rec(uint64_t seq, uint64_t token)
{
	struct fw_record r;

	memset(&r, 0, sizeof(r));
	r.seq = seq;
	r.token = r.ftoken = token;
	fw_record_stamp(&r, "commit");
	r.file = FW_FILE_PRESENT;
	r.ino = 1000 + seq;
	r.size = 10 * token;
	r.digest = 0x0123456789abcdefULL ^ token;
	return r;
}

/* A fence whose current record is (SEQ, TOKEN) and whose other slot holds
   the record before it. */
static void image_of(char image[FW_FENCE_SIZE], uint64_t seq, uint64_t token)
{
	struct fw_record prev = rec(seq - 1, token - 1), cur = rec(seq, token);

	fw_record_image(&prev, image);
	fw_record_format(&cur, image + fw_record_offset(seq));
}

static int parse_fence(const char *image, size_t len, struct fw_fence *f)
{
	char why[160];

	return fw_record_parse(image, len, f, why, sizeof(why));
}

static int parse(const char *image, size_t len, struct fw_record *out)
{
	struct fw_fence f;
	int rc = parse_fence(image, len, &f);

	*out = f.cur;
	return rc;
}

static void round_trip_keeps_every_field(void **state)
{
	char image[FW_FENCE_SIZE];
	struct fw_record in = rec(0, 18446744073709551615ull), out;

	(void)state;
	in.time = 1796000000;
	in.pid = 4194304;
	in.ftoken = 77;
	in.ino = 18446744073709551615ull;
	in.size = 0;
	in.digest = 0xef46db3751d8e999ULL;
	strcpy(in.host, "web-1.example_org");
	fw_record_image(&in, image);
	assert_int_equal(parse(image, sizeof(image), &out), 0);
	assert_int_equal(out.version, 2);
	assert_true(out.seq == 0 && out.token == in.token);
	assert_true(out.time == in.time && out.pid == in.pid);
	assert_string_equal(out.host, in.host);
	assert_string_equal(out.op, "commit");
	assert_int_equal(out.file, FW_FILE_PRESENT);
	assert_true(out.ftoken == 77 && out.ino == in.ino && out.size == 0 &&
	            out.digest == in.digest);
	/* Human-readable: one line per slot, the token spelled out, the
	   digest as xxhsum -H64 prints it. */
	assert_non_null(memmem(image, sizeof(image), "token=18446744073709551615 ", 27));
	assert_non_null(memmem(image, sizeof(image), " xxh64=ef46db3751d8e999 ", 24));
	assert_int_equal(image[FW_SLOT_SIZE - 1], '\n');
	assert_int_equal(image[FW_FENCE_SIZE - 1], '\n');
	assert_null(memchr(image, '\0', sizeof(image)));
	/* A record of an absent FILE, and a claim. */
	in.file = FW_FILE_ABSENT;
	strcpy(in.op, "claim");
	fw_record_image(&in, image);
	assert_int_equal(parse(image, sizeof(image), &out), 0);
	assert_int_equal(out.file, FW_FILE_ABSENT);
	assert_string_equal(out.op, "claim");
	assert_non_null(memmem(image, sizeof(image), " file=absent ", 13));
}

static void newer_valid_slot_wins_in_either_position(void **state)
{
	char image[FW_FENCE_SIZE];
	struct fw_fence f;

	(void)state;
	for (uint64_t seq = 1; seq <= 6; seq++) {
		image_of(image, seq, 100 + seq);
		assert_int_equal(parse_fence(image, sizeof(image), &f), 0);
		assert_true(f.cur.seq == seq && f.cur.token == 100 + seq);
		assert_true(f.has_prev && f.prev.token == 99 + seq);
		assert_false(f.damaged);
	}
}

/*
 * A crash while the next record is written leaves any prefix of the new
 * bytes over the old bytes of that slot.  Every such state reads as the
 * new record or as the old one with the other slot reported damaged, for
 * the caller to judge against FILE.
 */
static void torn_write_reads_as_old_or_new_at_every_byte(void **state)
{
	char before[FW_FENCE_SIZE], after[FW_FENCE_SIZE], torn[FW_FENCE_SIZE];
	struct fw_record next = rec(6, 60);
	off_t at = fw_record_offset(6);
	struct fw_fence f;

	(void)state;
	image_of(before, 5, 50);        /* slots: seq 4 (49), seq 5 (50) */
	memcpy(after, before, sizeof(after));
	fw_record_format(&next, after + at);
	for (int cut = 0; cut <= FW_SLOT_SIZE; cut++) {
		memcpy(torn, before, sizeof(torn));
		memcpy(torn + at, after + at, (size_t)cut);
		assert_int_equal(parse_fence(torn, sizeof(torn), &f), 0);
		if (f.cur.token == 60) {
			assert_false(f.damaged);
		} else if (f.cur.token != 50 ||
		           (f.damaged != (memcmp(torn, before,
		                                 sizeof(torn)) != 0))) {
			fail_msg("cut at %d read token %llu, damaged %d", cut,
			         (unsigned long long)f.cur.token, f.damaged);
		}
	}
	assert_true(f.cur.token == 60);
	/* Sector-style tears: the tail written, the head not. */
	for (int cut = 1; cut < FW_SLOT_SIZE; cut++) {
		memcpy(torn, before, sizeof(torn));
		memcpy(torn + at + cut, after + at + cut,
		       (size_t)(FW_SLOT_SIZE - cut));
		assert_int_equal(parse_fence(torn, sizeof(torn), &f), 0);
		assert_true(f.cur.token == 50 || f.cur.token == 60);
		if (f.cur.token == 50 && memcmp(torn, before, sizeof(torn)))
			assert_true(f.damaged);
	}
}

/* Any single corrupted byte of the current slot is seen: the other slot
   is read, and reported as the one left; the same in both slots fails
   closed. */
static void every_single_byte_corruption_is_caught(void **state)
{
	char image[FW_FENCE_SIZE], bad[FW_FENCE_SIZE];
	struct fw_fence f;
	static const char subst[] = { 'x', '0', '9', ' ', '\n', '\0', '\xff' };

	(void)state;
	image_of(image, 3, 30);  /* current in slot 1 */
	for (int i = FW_SLOT_SIZE; i < FW_FENCE_SIZE; i++) {
		for (size_t s = 0; s < sizeof(subst); s++) {
			if (image[i] == subst[s])
				continue;
			memcpy(bad, image, sizeof(bad));
			bad[i] = subst[s];
			if (parse_fence(bad, sizeof(bad), &f) == 0 &&
			    (f.cur.token != 29 || !f.damaged))
				fail_msg("byte %d = 0x%02x read token %llu, "
				         "damaged %d", i, (unsigned char)subst[s],
				         (unsigned long long)f.cur.token,
				         f.damaged);
			/* the same byte broken in the other slot too */
			bad[i - FW_SLOT_SIZE] = bad[i] == image[i - FW_SLOT_SIZE]
			                        ? 'Z' : bad[i];
			if (bad[i - FW_SLOT_SIZE] != image[i - FW_SLOT_SIZE])
				assert_int_equal(parse_fence(bad, sizeof(bad),
				                             &f), -1);
		}
	}
}

static void fails_closed_on_wrong_size_blank_and_garbage(void **state)
{
	char image[FW_FENCE_SIZE], big[FW_FENCE_SIZE + 1], why[160];
	struct fw_record out;
	struct fw_fence f;

	(void)state;
	image_of(image, 1, 1);
	assert_int_equal(parse(image, 0, &out), -1);
	assert_int_equal(parse(image, FW_FENCE_SIZE - 1, &out), -1);
	assert_int_equal(parse(image, FW_V1_FENCE_SIZE + 1, &out), -1);
	memcpy(big, image, sizeof(image));
	big[FW_FENCE_SIZE] = 'x';
	assert_int_equal(parse(big, sizeof(big), &out), -1);
	memset(image, ' ', sizeof(image));
	image[FW_SLOT_SIZE - 1] = image[FW_FENCE_SIZE - 1] = '\n';
	assert_int_equal(fw_record_parse(image, sizeof(image), &f, why,
	                                 sizeof(why)), -1);
	assert_non_null(strstr(why, "blank"));
	memset(image, 'A', sizeof(image));
	assert_int_equal(parse(image, sizeof(image), &out), -1);
	/* A blank other slot (a fence's first record) is not damage. */
	out = rec(0, 0);
	fw_record_image(&out, image);
	assert_int_equal(parse_fence(image, sizeof(image), &f), 0);
	assert_false(f.damaged);
	assert_false(f.has_prev);
}

/* Edit one field of a valid slot and fix its checksum, so only the
   field's own validation can reject it. */
static int parse_edited(const char *from, const char *to, char *why)
{
	struct fw_record r = rec(2, 20);
	char image[FW_FENCE_SIZE], line[FW_SLOT_SIZE + 64], *p;
	struct fw_fence f;
	uint32_t crc = 0xffffffffu;
	size_t n;

	fw_record_image(&r, image);
	memcpy(line, image, FW_SLOT_SIZE);
	line[FW_SLOT_SIZE] = '\0';
	p = strstr(line, from);
	assert_non_null(p);
	memmove(p + strlen(to), p + strlen(from), strlen(p + strlen(from)) + 1);
	memcpy(p, to, strlen(to));
	p = strstr(line, " crc=");
	for (const char *q = line; q < p; q++) {
		crc ^= (unsigned char)*q;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	n = (size_t)(p - line);
	n += (size_t)sprintf(p, " crc=%08x", ~crc);
	memset(line + n, ' ', FW_SLOT_SIZE - 1 - n);
	line[FW_SLOT_SIZE - 1] = '\n';
	memcpy(image, line, FW_SLOT_SIZE);
	return fw_record_parse(image, sizeof(image), &f, why, 160);
}

static void rejects_version_wrong_slot_and_malformed_fields(void **state)
{
	static const struct { const char *from, *to, *why; } bad[] = {
		{ "fencedwrite-fence 2 ", "fencedwrite-fence 3 ",
		  "unsupported format version" },
		{ "seq=2", "seq=3", "wrong slot" },
		{ "token=20", "token=020", "malformed" },
		{ "token=20", "token=-20", "malformed" },
		{ "token=20", "token=18446744073709551616", "malformed" },
		{ "op=commit", "op=launch", "malformed" },
		{ "time=2", "time=x", "malformed" },
		{ "pid=", "pid=99999999999", "malformed" },
		{ "host=", "host=a b", "malformed" },
		{ "ftoken=20", "ftoken=", "malformed" },
		{ "ino=", "ino=0", "malformed" },
		{ "size=200", "size=0200", "malformed" },
		{ "xxh64=0", "xxh64=X", "malformed" },
		{ "xxh64=", "xxh64=0", "malformed" },
		{ " ino=", " file=here ino=", "malformed" },
	};
	char why[160];

	(void)state;
	/* control: an edit that changes nothing still parses */
	assert_int_equal(parse_edited("seq=2", "seq=2", why), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_edited(bad[i].from, bad[i].to, why) != -1)
			fail_msg("'%s' was accepted", bad[i].to);
		if (!strstr(why, bad[i].why))
			fail_msg("'%s': reason '%s'", bad[i].to, why);
	}
}

/* The fence only moves forward: a newer record with a lower token was
   not written by fencedwrite, and the reader refuses to pick either. */
static void newer_record_with_lower_token_fails_closed(void **state)
{
	char image[FW_FENCE_SIZE], why[160];
	struct fw_record a = rec(2, 20), b = rec(3, 10);
	struct fw_fence f;

	(void)state;
	fw_record_image(&a, image);
	fw_record_format(&b, image + fw_record_offset(3));
	assert_int_equal(fw_record_parse(image, sizeof(image), &f, why,
	                                 sizeof(why)), -1);
	assert_non_null(strstr(why, "lower token"));
}

/*
 * Version 1 fences, as fencedwrite 1.0 wrote them, are read; the first
 * change writes its record into the second half, leaving the version 1
 * image whole until the new record is; every tear of that write reads as
 * the version 1 record or fails closed, never as anything else.
 */
static void version_1_fences_are_read_and_upgraded_in_place(void **state)
{
	char v1[FW_V1_FENCE_SIZE], up[FW_FENCE_SIZE], torn[FW_FENCE_SIZE];
	struct fw_record old = rec(4, 40), next = rec(0, 41), again;
	struct fw_fence f, g;

	(void)state;
	fwt_v1_image(&old, v1);
	assert_non_null(memmem(v1, sizeof(v1),
	                       "fencedwrite-fence 1 seq=4 token=40 ", 35));
	assert_null(memmem(v1, sizeof(v1), "xxh64=", 6));
	assert_int_equal(parse_fence(v1, sizeof(v1), &f), 0);
	assert_int_equal(f.layout, 1);
	assert_int_equal(f.cur.version, 1);
	assert_int_equal(f.cur.file, FW_FILE_UNKNOWN);
	assert_true(f.cur.token == 40 && f.cur.seq == 4);
	/* The upgrade: record 5 (odd) into bytes 512..1023. */
	next.seq = fw_record_next_seq(&f);
	assert_true(next.seq == 5);
	assert_int_equal(fw_record_offset(next.seq), FW_V1_FENCE_SIZE);
	memcpy(up, v1, sizeof(v1));
	fw_record_format(&next, up + FW_V1_FENCE_SIZE);
	assert_int_equal(parse_fence(up, sizeof(up), &g), 0);
	assert_int_equal(g.layout, 2);
	assert_true(g.cur.token == 41 && g.cur.version == 2 && g.has_prev);
	assert_true(g.prev.token == 40 && g.prev.version == 1);
	/* The next record goes to slot 0, over the version 1 image. */
	again = rec(fw_record_next_seq(&g), 42);
	assert_true(again.seq == 6);
	fw_record_format(&again, up);
	assert_int_equal(parse_fence(up, sizeof(up), &g), 0);
	assert_true(g.cur.token == 42 && g.prev.token == 41);
	/* From a version 1 fence whose next number is even, one is skipped. */
	old = rec(5, 50);
	fwt_v1_image(&old, v1);
	assert_int_equal(parse_fence(v1, sizeof(v1), &f), 0);
	assert_true(fw_record_next_seq(&f) == 7);
	/* Tears of the upgrade write: the file grows as the bytes land. */
	old = rec(4, 40);
	fwt_v1_image(&old, v1);
	memcpy(up, v1, sizeof(v1));
	fw_record_format(&next, up + FW_V1_FENCE_SIZE);
	for (size_t cut = 1; cut < FW_SLOT_SIZE; cut++) {
		memcpy(torn, up, sizeof(torn));
		if (parse_fence(torn, FW_V1_FENCE_SIZE + cut, &g) == 0)
			fail_msg("a fence of %zu bytes was read",
			         FW_V1_FENCE_SIZE + cut);
		/* grown in one go, written partly */
		memset(torn + FW_V1_FENCE_SIZE + cut, ' ',
		       FW_SLOT_SIZE - cut - 1);
		torn[FW_FENCE_SIZE - 1] = '\n';
		assert_int_equal(parse_fence(torn, sizeof(torn), &g), 0);
		/* the new record whole but for its padding is the new one */
		assert_true((g.cur.token == 40 && g.damaged) ||
		            (g.cur.token == 41 && !g.damaged));
	}
	assert_true(g.cur.token == 41);
}

static void stamp_keeps_the_record_one_line(void **state)
{
	struct fw_record r = rec(0, 1);

	(void)state;
	assert_true(r.pid == (long)getpid());
	assert_true(r.host[0] != '\0');
	for (const char *h = r.host; *h; h++)
		assert_true(*h != ' ' && *h != '\n');
}

/* Record times are converted without the C library's time zone code (it
   reads files under the fence's lock): the same as gmtime_r, back and
   forth, across leap days and centuries. */
static void record_times_are_utc_both_ways(void **state)
{
	char image[FW_FENCE_SIZE], want[32];
	struct fw_record in = rec(0, 1), out;
	struct tm tm;

	(void)state;
	for (int64_t t = -2208988800LL; t < 4133894400LL; t += 7776000 + 86399) {
		time_t tt = (time_t)t;

		in.time = t;
		fw_record_image(&in, image);
		assert_int_equal(parse(image, sizeof(image), &out), 0);
		assert_true(out.time == t);
		assert_non_null(gmtime_r(&tt, &tm));
		strftime(want, sizeof(want), "time=%Y-%m-%dT%H:%M:%SZ", &tm);
		assert_non_null(memmem(image, sizeof(image), want,
		                       strlen(want)));
	}
	in.time = 951782400;   /* 2000-02-29T00:00:00Z */
	fw_record_image(&in, image);
	assert_non_null(memmem(image, sizeof(image),
	                       "time=2000-02-29T00:00:00Z", 25));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_keeps_every_field),
		cmocka_unit_test(newer_valid_slot_wins_in_either_position),
		cmocka_unit_test(torn_write_reads_as_old_or_new_at_every_byte),
		cmocka_unit_test(every_single_byte_corruption_is_caught),
		cmocka_unit_test(fails_closed_on_wrong_size_blank_and_garbage),
		cmocka_unit_test(rejects_version_wrong_slot_and_malformed_fields),
		cmocka_unit_test(newer_record_with_lower_token_fails_closed),
		cmocka_unit_test(version_1_fences_are_read_and_upgraded_in_place),
		cmocka_unit_test(stamp_keeps_the_record_one_line),
		cmocka_unit_test(record_times_are_utc_both_ways),
	};
	return cmocka_run_group_tests_name("fence_record", tests, NULL, NULL);
}
