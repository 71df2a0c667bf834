/* SPDX-License-Identifier: MIT */
/*
 * fence_record.c - the fence file format (see fencedwrite-fence(5)).
 *
 * A fence is 1024 bytes: two slots of 512 bytes, each one line of text
 * padded with spaces to its newline:
 *
 *   fencedwrite-fence 2 seq=5 token=42 op=commit time=2026-11-30T11:06:35Z
 *   pid=4242 host=web1 ftoken=42 ino=1311 size=8 xxh64=44bc2cf5ad770999
 *   crc=89abcdef
 *
 * (one line in the file).  Besides the highest token, each record says
 * what FILE is once its change is in place: absent ("file=absent"), or the
 * inode, size and XXH64 digest of its content, and FTOKEN, the token that
 * content was committed under (a claim moves the token, not the content).
 *
 * Record number SEQ lives in slot SEQ % 2, so an update always overwrites
 * the slot that does NOT hold the current record.  A crash in the middle
 * of that write can garble only the slot being written, which then fails
 * its checksum; the other slot still holds the previous record.  This is
 * LMDB's two meta pages in text.  Unlike LMDB, a garbled slot is not
 * simply skipped: bit rot or a hand edit of the NEWEST record looks the
 * same, and reading the older record then would lower the token.  So the
 * parser reports a garbled slot (damaged) and the caller falls back only
 * when FILE is what the surviving record describes: then the change of
 * the garbled record never reached FILE, the torn-write case.
 *
 * Version 1 fences (512 bytes, two 256-byte slots, no identity) are read.
 * The first change writes its version 2 record into the second 512 bytes,
 * leaving the version 1 image whole in the first: a crash in the middle of
 * that write leaves the old record readable.
 *
 * Nothing here does I/O; commit.c moves the bytes.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAGIC_V1 "fencedwrite-fence 1 "
#define MAGIC_V2 "fencedwrite-fence 2 "
#define V1_SLOT (FW_V1_FENCE_SIZE / 2)

/* CRC-32C (Castagnoli), bit by bit: a record is ~300 bytes, once per commit. */
static uint32_t crc32c(const char *p, size_t n)
{
	uint32_t crc = 0xffffffffu;

	while (n--) {
		crc ^= (unsigned char)*p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	return ~crc;
}

off_t fw_record_offset(uint64_t seq)
{
	return (off_t)(seq % 2) * FW_SLOT_SIZE;
}

/*
 * UTC civil time of T (days to civil, after Howard Hinnant's algorithm).
 * Not gmtime_r() or strftime(): glibc's read the time zone files on first
 * use (tzset), and records are formatted while the fence's lock is held.
 */
static void civil(int64_t t, int f[6])
{
	int64_t days = t / 86400, secs = t % 86400, z, era, doe, yoe, doy, mp;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	f[2] = (int)(doy - (153 * mp + 2) / 5 + 1);
	f[1] = (int)(mp < 10 ? mp + 3 : mp - 9);
	f[0] = (int)(yoe + era * 400 + (f[1] <= 2));
	f[3] = (int)(secs / 3600);
	f[4] = (int)(secs / 60 % 60);
	f[5] = (int)(secs % 60);
}

/* Always exactly 20 characters, the shape the parser insists on. */
static void format_time(int64_t t, char out[64])
{
	int f[6];

	/* Beyond years 0..9999 (a clock gone wrong) the record says 1970. */
	if (t < -62167219200LL || t > 253402300799LL)
		t = 0;
	civil(t, f);
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02dZ", f[0], f[1], f[2],
	         f[3], f[4], f[5]);
}

/* A blank slot of SIZE bytes: spaces up to its newline. */
static void blank(char *slot, size_t size)
{
	memset(slot, ' ', size - 1);
	slot[size - 1] = '\n';
}

/* The line of REC up to its checksum, in the given version's words. */
static int format_fields(const struct fw_record *rec, int version, char *out,
                         size_t len)
{
	char when[64];
	int n;

	format_time(rec->time, when);
	n = snprintf(out, len,
	             "%sseq=%llu token=%llu op=%s time=%s pid=%ld host=%s",
	             version == 1 ? MAGIC_V1 : MAGIC_V2,
	             (unsigned long long)rec->seq,
	             (unsigned long long)rec->token, rec->op, when, rec->pid,
	             rec->host);
	if (version == 1)
		return n;
	n += snprintf(out + n, len - (size_t)n, " ftoken=%llu",
	              (unsigned long long)rec->ftoken);
	if (rec->file == FW_FILE_PRESENT)
		n += snprintf(out + n, len - (size_t)n,
		              " ino=%llu size=%llu xxh64=%016llx",
		              (unsigned long long)rec->ino,
		              (unsigned long long)rec->size,
		              (unsigned long long)rec->digest);
	else
		n += snprintf(out + n, len - (size_t)n, " file=absent");
	return n;
}

static void format_slot(const struct fw_record *rec, int version,
                        char *slot, size_t size)
{
	int n = format_fields(rec, version, slot, size);

	n += snprintf(slot + n, size - (size_t)n, " crc=%08x",
	              crc32c(slot, (size_t)n));
	memset(slot + n, ' ', size - 1 - (size_t)n);
	slot[size - 1] = '\n';
}

void fw_record_format(const struct fw_record *rec, char slot[FW_SLOT_SIZE])
{
	format_slot(rec, 2, slot, FW_SLOT_SIZE);
}

void fw_record_image(const struct fw_record *rec, char image[FW_FENCE_SIZE])
{
	fw_record_format(rec, image + fw_record_offset(rec->seq));
	blank(image + FW_SLOT_SIZE - fw_record_offset(rec->seq), FW_SLOT_SIZE);
}

void fw_record_image_v1(const struct fw_record *rec,
                        char image[FW_V1_FENCE_SIZE])
{
	size_t at = (size_t)(rec->seq % 2) * V1_SLOT;

	format_slot(rec, 1, image + at, V1_SLOT);
	blank(image + V1_SLOT - at, V1_SLOT);
}

uint64_t fw_record_next_seq(const struct fw_fence *f)
{
	uint64_t seq = f->cur.seq + 1;

	/* From a version 1 fence, write into the second half first: the
	   first half holds both version 1 slots, one of which must stay
	   readable until the new record is whole. */
	if (f->layout == 1 && seq % 2 == 0)
		seq++;
	return seq;
}

static int is_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

void fw_record_stamp(struct fw_record *rec, const char *op)
{
	char host[256];
	size_t i;

	rec->version = 2;
	rec->time = (int64_t)time(NULL);
	rec->pid = (long)getpid();
	snprintf(rec->op, sizeof(rec->op), "%s", op);
	if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	/* The record is one line of space-separated fields: keep it so. */
	for (i = 0; i < sizeof(rec->host) - 1 && host[i]; i++)
		rec->host[i] = (char)(is_host_char(host[i]) ? host[i] : '_');
	rec->host[i] = '\0';
}

/* ---- parsing: strict, every byte accounted for ----------------------- */

struct cursor {
	const char *p, *end;
};

static int lit(struct cursor *c, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
		return -1;
	c->p += n;
	return 0;
}

static int u64(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		unsigned d = (unsigned)(*c->p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		c->p++;
	}
	/* No empty numbers and no leading zeros: one spelling per value. */
	if (c->p == start || (*start == '0' && c->p - start > 1))
		return -1;
	*out = v;
	return 0;
}

/* Exactly DIGITS lowercase hex digits (at most 16). */
static int hex(struct cursor *c, int digits, uint64_t *out)
{
	uint64_t v = 0;

	if (c->end - c->p < digits)
		return -1;
	for (int i = 0; i < digits; i++) {
		char ch = *c->p++;

		if (ch >= '0' && ch <= '9')
			v = v << 4 | (uint64_t)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = v << 4 | (uint64_t)(ch - 'a' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static int word(struct cursor *c, char *out, size_t outlen,
                int (*ok)(char))
{
	size_t n = 0;

	while (c->p < c->end && *c->p != ' ') {
		if (!ok(*c->p) || n + 1 >= outlen)
			return -1;
		out[n++] = *c->p++;
	}
	out[n] = '\0';
	return n ? 0 : -1;
}

static int is_op_char(char c)
{
	return c >= 'a' && c <= 'z';
}

static int known_op(const char *op, int version)
{
	return !strcmp(op, "init") || !strcmp(op, "create") ||
	       !strcmp(op, "commit") || !strcmp(op, "delete") ||
	       (version == 2 && !strcmp(op, "claim"));
}

/* N digits, already checked to be digits. */
static int num(const char *p, int n)
{
	int v = 0;

	while (n--)
		v = v * 10 + (*p++ - '0');
	return v;
}

/*
 * Seconds since 1970 of a UTC civil time (days from civil, after Howard
 * Hinnant's algorithm).  Not timegm(): that may read the time zone files,
 * and the fence is parsed while its lock is held.
 */
static int64_t epoch_seconds(int y, int mon, int d, int h, int min, int s)
{
	int64_t era, yoe, doy, doe;

	y -= mon <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (mon + (mon > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return ((era * 146097 + doe - 719468) * 24 + h) * 3600 +
	       (int64_t)min * 60 + s;
}

static int timestamp(struct cursor *c, int64_t *out)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";

	if (c->end - c->p < 20)
		return -1;
	for (int i = 0; i < 20; i++) {
		char ch = c->p[i];

		if (shape[i] == 'd' ? (ch < '0' || ch > '9') : ch != shape[i])
			return -1;
	}
	*out = epoch_seconds(num(c->p, 4), num(c->p + 5, 2), num(c->p + 8, 2),
	                     num(c->p + 11, 2), num(c->p + 14, 2),
	                     num(c->p + 17, 2));
	c->p += 20;
	return 0;
}

/* What FILE is, in a version 2 record. */
static int identity(struct cursor *c, struct fw_record *rec)
{
	if (lit(c, " ftoken=") || u64(c, &rec->ftoken))
		return -1;
	if (lit(c, " file=absent") == 0) {
		rec->file = FW_FILE_ABSENT;
		return 0;
	}
	rec->file = FW_FILE_PRESENT;
	return lit(c, " ino=") || u64(c, &rec->ino) ||
	       lit(c, " size=") || u64(c, &rec->size) ||
	       lit(c, " xxh64=") || hex(c, 16, &rec->digest) ? -1 : 0;
}

/* 0 if SLOT (SIZE bytes, number IDX) holds a valid record of VERSION;
   else -1 and a reason. */
static int parse_slot(const char *slot, size_t size, int idx, int version,
                      struct fw_record *rec, const char **why)
{
	struct cursor c = { slot, slot + size - 1 };
	uint64_t pid, crc;
	const char *crc_at;

	memset(rec, 0, sizeof(*rec));
	rec->version = version;
	if (slot[size - 1] != '\n')
		return *why = "no newline at end of slot", -1;
	if (c.p[0] == ' ')
		return *why = "blank", -1;
	if (lit(&c, version == 1 ? MAGIC_V1 : MAGIC_V2) != 0) {
		if (lit(&c, "fencedwrite-fence ") == 0)
			return *why = "unsupported format version", -1;
		return *why = "not a fencedwrite fence record", -1;
	}
	if (lit(&c, "seq=") || u64(&c, &rec->seq) ||
	    lit(&c, " token=") || u64(&c, &rec->token) ||
	    lit(&c, " op=") || word(&c, rec->op, sizeof(rec->op), is_op_char) ||
	    !known_op(rec->op, version) ||
	    lit(&c, " time=") || timestamp(&c, &rec->time) ||
	    lit(&c, " pid=") || u64(&c, &pid) || pid > 0x7fffffff ||
	    lit(&c, " host=") ||
	    word(&c, rec->host, sizeof(rec->host), is_host_char) ||
	    (version == 2 && identity(&c, rec)))
		return *why = "malformed record", -1;
	crc_at = c.p;
	if (lit(&c, " crc=") || hex(&c, 8, &crc))
		return *why = "malformed record", -1;
	for (; c.p < c.end; c.p++)
		if (*c.p != ' ')
			return *why = "garbage after checksum", -1;
	if (crc != crc32c(slot, (size_t)(crc_at - slot)))
		return *why = "checksum mismatch", -1;
	if ((int)(rec->seq % 2) != idx)
		return *why = "record in the wrong slot", -1;
	rec->pid = (long)pid;
	if (version == 1)
		rec->file = FW_FILE_UNKNOWN;
	return 0;
}

static int is_blank(const char *slot, size_t size)
{
	for (size_t i = 0; i + 1 < size; i++)
		if (slot[i] != ' ')
			return 0;
	return slot[size - 1] == '\n';
}

/*
 * Two slots (A, B) made into a fence: the newer valid record is current;
 * a slot that is neither valid nor blank marks the fence damaged.
 */
static int pick(const struct fw_record r[2], const int ok[2],
                const int blank_slot[2], const char *reason[2],
                struct fw_fence *f, char *why, size_t whylen)
{
	if (!ok[0] && !ok[1]) {
		snprintf(why, whylen, "no valid record (slot 0: %s; slot 1: %s)",
		         reason[0], reason[1]);
		return -1;
	}
	if (ok[0] && ok[1]) {
		int newer = r[1].seq > r[0].seq;

		/* The fence only moves forward: a newer record with the
		   lower token was not written by fencedwrite. */
		if (r[newer].token < r[!newer].token) {
			snprintf(why, whylen,
			         "newer record has the lower token (%llu < %llu)",
			         (unsigned long long)r[newer].token,
			         (unsigned long long)r[!newer].token);
			return -1;
		}
		f->cur = r[newer];
		f->prev = r[!newer];
		f->has_prev = 1;
		return 0;
	}
	f->cur = r[ok[1]];
	/* Only a fence's first record has a blank slot beside it: a blank
	   slot later is one wiped, and may have held the newest record. */
	if (!blank_slot[!ok[1]] || f->cur.seq != 0) {
		f->damaged = 1;
		snprintf(f->damage, sizeof(f->damage), "slot %d: %s", !ok[1],
		         reason[!ok[1]]);
	}
	return 0;
}

/* The newest valid record of a version 1 image (two 256-byte slots). */
static int parse_v1(const char *image, struct fw_fence *f, char *why,
                    size_t whylen)
{
	struct fw_record r[2];
	const char *reason[2] = { "", "" };
	int ok[2], blank_slot[2];

	memset(f, 0, sizeof(*f));
	f->layout = 1;
	for (int i = 0; i < 2; i++) {
		const char *slot = image + (size_t)i * V1_SLOT;

		ok[i] = parse_slot(slot, V1_SLOT, i, 1, &r[i], &reason[i]) == 0;
		blank_slot[i] = is_blank(slot, V1_SLOT);
	}
	return pick(r, ok, blank_slot, reason, f, why, whylen);
}

int fw_record_parse(const char *image, size_t len, struct fw_fence *f,
                    char *why, size_t whylen)
{
	struct fw_record r[2];
	const char *reason[2] = { "", "" };
	int ok[2], blank_slot[2];

	memset(f, 0, sizeof(*f));
	if (len == FW_V1_FENCE_SIZE)
		return parse_v1(image, f, why, whylen);
	if (len != FW_FENCE_SIZE) {
		snprintf(why, whylen, "size is %zu bytes, not %d (or %d for "
		         "format version 1)", len, FW_FENCE_SIZE,
		         FW_V1_FENCE_SIZE);
		return -1;
	}
	f->layout = 2;
	for (int i = 0; i < 2; i++) {
		const char *slot = image + (size_t)i * FW_SLOT_SIZE;

		blank_slot[i] = is_blank(slot, FW_SLOT_SIZE);
		ok[i] = parse_slot(slot, FW_SLOT_SIZE, i, 2, &r[i],
		                   &reason[i]) == 0;
		/* The first half of a fence being upgraded still holds the
		   whole version 1 image. */
		if (!ok[i] && i == 0 && strncmp(slot, MAGIC_V1,
		                                 strlen(MAGIC_V1)) == 0) {
			struct fw_fence old;
			char oldwhy[160];

			ok[0] = parse_v1(slot, &old, oldwhy,
			                 sizeof(oldwhy)) == 0 && !old.damaged;
			if (ok[0])
				r[0] = old.cur;
			else
				reason[0] = "version 1 image damaged";
		}
	}
	if (ok[0] && ok[1] && r[0].version == 1 && r[1].seq <= r[0].seq) {
		snprintf(why, whylen, "version 2 record %llu is not newer than "
		         "version 1 record %llu", (unsigned long long)r[1].seq,
		         (unsigned long long)r[0].seq);
		return -1;
	}
	return pick(r, ok, blank_slot, reason, f, why, whylen);
}
