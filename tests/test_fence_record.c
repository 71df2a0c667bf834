/* The fence format: round trip, torn slots and every corruption. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"

static struct fw_record rec(uint64_t seq, uint64_t token)
{
	struct fw_record r;

	memset(&r, 0, sizeof(r));
	r.seq = seq;
	r.token = token;
	fw_record_stamp(&r, "commit");
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

static int parse(const char *image, size_t len, struct fw_record *out)
{
	char why[160];

	return fw_record_parse(image, len, out, why, sizeof(why));
}

static void round_trip_keeps_every_field(void **state)
{
	char image[FW_FENCE_SIZE];
	struct fw_record in = rec(0, 18446744073709551615ull), out;

	(void)state;
	in.time = 1796000000;
	in.pid = 4194304;
	strcpy(in.host, "web-1.example_org");
	fw_record_image(&in, image);
	assert_int_equal(parse(image, sizeof(image), &out), 0);
	assert_true(out.seq == 0 && out.token == in.token);
	assert_true(out.time == in.time && out.pid == in.pid);
	assert_string_equal(out.host, in.host);
	assert_string_equal(out.op, "commit");
	/* Human-readable: one line per slot, the token spelled out. */
	assert_non_null(strstr(image, "token=18446744073709551615 "));
	assert_int_equal(image[FW_SLOT_SIZE - 1], '\n');
	assert_int_equal(image[FW_FENCE_SIZE - 1], '\n');
	assert_null(memchr(image, '\0', sizeof(image)));
}

static void newer_valid_slot_wins_in_either_position(void **state)
{
	char image[FW_FENCE_SIZE];
	struct fw_record out;

	(void)state;
	for (uint64_t seq = 1; seq <= 6; seq++) {
		image_of(image, seq, 100 + seq);
		assert_int_equal(parse(image, sizeof(image), &out), 0);
		assert_true(out.seq == seq && out.token == 100 + seq);
	}
}

/*
 * A crash while the next record is written leaves any prefix of the new
 * bytes over the old bytes of that slot.  Every such state must read as
 * the old token or the new one.
 */
static void torn_write_reads_as_old_or_new_at_every_byte(void **state)
{
	char before[FW_FENCE_SIZE], after[FW_FENCE_SIZE], torn[FW_FENCE_SIZE];
	struct fw_record next = rec(6, 60), out;
	off_t at = fw_record_offset(6);

	(void)state;
	image_of(before, 5, 50);        /* slots: seq 4 (49), seq 5 (50) */
	memcpy(after, before, sizeof(after));
	fw_record_format(&next, after + at);
	for (int cut = 0; cut <= FW_SLOT_SIZE; cut++) {
		memcpy(torn, before, sizeof(torn));
		memcpy(torn + at, after + at, (size_t)cut);
		assert_int_equal(parse(torn, sizeof(torn), &out), 0);
		if (cut == FW_SLOT_SIZE)
			assert_true(out.token == 60);
		else if (out.token != 50 && out.token != 60)
			fail_msg("cut at %d read token %llu", cut,
			         (unsigned long long)out.token);
	}
	/* Sector-style tears: the tail written, the head not. */
	for (int cut = 0; cut < FW_SLOT_SIZE; cut++) {
		memcpy(torn, before, sizeof(torn));
		memcpy(torn + at + cut, after + at + cut,
		       (size_t)(FW_SLOT_SIZE - cut));
		assert_int_equal(parse(torn, sizeof(torn), &out), 0);
		assert_true(out.token == 50 || out.token == 60);
	}
}

/* Any single corrupted byte of the current slot falls back to the other
   slot; the same in both slots fails closed. */
static void every_single_byte_corruption_is_caught(void **state)
{
	char image[FW_FENCE_SIZE], bad[FW_FENCE_SIZE];
	struct fw_record out;
	static const char subst[] = { 'x', '0', '9', ' ', '\n', '\0', '\xff' };

	(void)state;
	image_of(image, 3, 30);  /* current in slot 1 */
	for (int i = FW_SLOT_SIZE; i < FW_FENCE_SIZE; i++) {
		for (size_t s = 0; s < sizeof(subst); s++) {
			if (image[i] == subst[s])
				continue;
			memcpy(bad, image, sizeof(bad));
			bad[i] = subst[s];
			if (parse(bad, sizeof(bad), &out) == 0 &&
			    out.token != 29)
				fail_msg("byte %d = 0x%02x read token %llu", i,
				         (unsigned char)subst[s],
				         (unsigned long long)out.token);
			/* the same byte broken in the other slot too */
			bad[i - FW_SLOT_SIZE] = bad[i] == image[i - FW_SLOT_SIZE]
			                        ? 'Z' : bad[i];
			if (bad[i - FW_SLOT_SIZE] != image[i - FW_SLOT_SIZE])
				assert_int_equal(parse(bad, sizeof(bad), &out),
				                 -1);
		}
	}
}

static void fails_closed_on_wrong_size_blank_and_garbage(void **state)
{
	char image[FW_FENCE_SIZE], big[FW_FENCE_SIZE + 1], why[160];
	struct fw_record out;

	(void)state;
	image_of(image, 1, 1);
	assert_int_equal(parse(image, 0, &out), -1);
	assert_int_equal(parse(image, FW_FENCE_SIZE - 1, &out), -1);
	memcpy(big, image, sizeof(image));
	big[FW_FENCE_SIZE] = 'x';
	assert_int_equal(parse(big, sizeof(big), &out), -1);
	memset(image, ' ', sizeof(image));
	image[FW_SLOT_SIZE - 1] = image[FW_FENCE_SIZE - 1] = '\n';
	assert_int_equal(fw_record_parse(image, sizeof(image), &out, why,
	                                 sizeof(why)), -1);
	assert_non_null(strstr(why, "blank"));
	memset(image, 'A', sizeof(image));
	assert_int_equal(parse(image, sizeof(image), &out), -1);
}

/* Edit one field of a valid slot and fix its checksum, so only the
   field's own validation can reject it. */
static int parse_edited(const char *from, const char *to, char *why)
{
	struct fw_record r = rec(2, 20), out;
	char image[FW_FENCE_SIZE], line[FW_SLOT_SIZE + 64], *p;
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
	return fw_record_parse(image, sizeof(image), &out, why, 160);
}

static void rejects_version_wrong_slot_and_malformed_fields(void **state)
{
	static const struct { const char *from, *to, *why; } bad[] = {
		{ "fencedwrite-fence 1 ", "fencedwrite-fence 2 ",
		  "unsupported format version" },
		{ "seq=2", "seq=3", "wrong slot" },
		{ "token=20", "token=020", "malformed" },
		{ "token=20", "token=-20", "malformed" },
		{ "token=20", "token=18446744073709551616", "malformed" },
		{ "op=commit", "op=launch", "malformed" },
		{ "time=2", "time=x", "malformed" },
		{ "pid=", "pid=99999999999", "malformed" },
		{ "host=", "host=a b", "malformed" },
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
	struct fw_record a = rec(2, 20), b = rec(3, 10), out;

	(void)state;
	fw_record_image(&a, image);
	fw_record_format(&b, image + fw_record_offset(3));
	assert_int_equal(fw_record_parse(image, sizeof(image), &out, why,
	                                 sizeof(why)), -1);
	assert_non_null(strstr(why, "lower token"));
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
		cmocka_unit_test(stamp_keeps_the_record_one_line),
	};
	return cmocka_run_group_tests_name("fence_record", tests, NULL, NULL);
}
