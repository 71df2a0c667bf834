/*
 * fence_record.c - the fence file format (see fencedwrite-fence(5)).
 *
 * A fence is 512 bytes: two slots of 256 bytes, each one line of text
 * padded with spaces to its newline:
 *
 *   fencedwrite-fence 1 seq=5 token=42 op=commit time=2026-11-30T11:06:35Z
 *   pid=4242 host=web1 crc=89abcdef
 *
 * (one line in the file).  Record number SEQ lives in slot SEQ % 2, so an
 * update always overwrites the slot that does NOT hold the current record.
 * A crash in the middle of that write can garble only the slot being
 * written; its checksum then fails and the reader takes the other slot,
 * which still holds the previous record.  This is LMDB's two meta pages in
 * text: the newest valid copy wins, and one copy is always untouched.
 *
 * Nothing here does I/O; lock.c and commit.c move the bytes.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAGIC "fencedwrite-fence 1 "

/* CRC-32C (Castagnoli), bit by bit: a record is ~150 bytes, once per commit. */
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

/* Always exactly 20 characters, the shape the parser insists on. */
static void format_time(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year < 0) {
		tt = 0;
		gmtime_r(&tt, &tm);
	}
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void fw_record_format(const struct fw_record *rec, char slot[FW_SLOT_SIZE])
{
	char when[32];
	int n;

	format_time(rec->time, when);
	n = snprintf(slot, FW_SLOT_SIZE,
	             MAGIC "seq=%llu token=%llu op=%s time=%s pid=%ld host=%s",
	             (unsigned long long)rec->seq,
	             (unsigned long long)rec->token, rec->op, when, rec->pid,
	             rec->host);
	n += snprintf(slot + n, FW_SLOT_SIZE - (size_t)n, " crc=%08x",
	              crc32c(slot, (size_t)n));
	memset(slot + n, ' ', FW_SLOT_SIZE - 1 - (size_t)n);
	slot[FW_SLOT_SIZE - 1] = '\n';
}

void fw_record_image(const struct fw_record *rec, char image[FW_FENCE_SIZE])
{
	char *other = image + FW_SLOT_SIZE - fw_record_offset(rec->seq);

	fw_record_format(rec, image + fw_record_offset(rec->seq));
	memset(other, ' ', FW_SLOT_SIZE - 1);
	other[FW_SLOT_SIZE - 1] = '\n';
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

static int known_op(const char *op)
{
	return !strcmp(op, "init") || !strcmp(op, "create") ||
	       !strcmp(op, "commit") || !strcmp(op, "delete");
}

/* N digits, already checked to be digits. */
static int num(const char *p, int n)
{
	int v = 0;

	while (n--)
		v = v * 10 + (*p++ - '0');
	return v;
}

static int timestamp(struct cursor *c, int64_t *out)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	struct tm tm;
	time_t t;

	if (c->end - c->p < 20)
		return -1;
	for (int i = 0; i < 20; i++) {
		char ch = c->p[i];

		if (shape[i] == 'd' ? (ch < '0' || ch > '9') : ch != shape[i])
			return -1;
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = num(c->p, 4);
	tm.tm_mon = num(c->p + 5, 2);
	tm.tm_mday = num(c->p + 8, 2);
	tm.tm_hour = num(c->p + 11, 2);
	tm.tm_min = num(c->p + 14, 2);
	tm.tm_sec = num(c->p + 17, 2);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	*out = (int64_t)t;
	c->p += 20;
	return 0;
}

static int hex32(struct cursor *c, uint32_t *out)
{
	uint32_t v = 0;

	if (c->end - c->p < 8)
		return -1;
	for (int i = 0; i < 8; i++) {
		char ch = *c->p++;

		if (ch >= '0' && ch <= '9')
			v = v << 4 | (uint32_t)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = v << 4 | (uint32_t)(ch - 'a' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* 0 if SLOT (number IDX) holds a valid record; else -1 and a reason. */
static int parse_slot(const char *slot, int idx, struct fw_record *rec,
                      const char **why)
{
	struct cursor c = { slot, slot + FW_SLOT_SIZE - 1 };
	uint64_t pid;
	uint32_t crc;
	const char *crc_at;

	if (slot[FW_SLOT_SIZE - 1] != '\n')
		return *why = "no newline at end of slot", -1;
	if (c.p[0] == ' ')
		return *why = "blank", -1;
	if (lit(&c, MAGIC) != 0) {
		if (lit(&c, "fencedwrite-fence ") == 0)
			return *why = "unsupported format version", -1;
		return *why = "not a fencedwrite fence record", -1;
	}
	if (lit(&c, "seq=") || u64(&c, &rec->seq) ||
	    lit(&c, " token=") || u64(&c, &rec->token) ||
	    lit(&c, " op=") || word(&c, rec->op, sizeof(rec->op), is_op_char) ||
	    !known_op(rec->op) ||
	    lit(&c, " time=") || timestamp(&c, &rec->time) ||
	    lit(&c, " pid=") || u64(&c, &pid) || pid > 0x7fffffff ||
	    lit(&c, " host=") ||
	    word(&c, rec->host, sizeof(rec->host), is_host_char))
		return *why = "malformed record", -1;
	crc_at = c.p;
	if (lit(&c, " crc=") || hex32(&c, &crc))
		return *why = "malformed record", -1;
	for (; c.p < c.end; c.p++)
		if (*c.p != ' ')
			return *why = "garbage after checksum", -1;
	if (crc != crc32c(slot, (size_t)(crc_at - slot)))
		return *why = "checksum mismatch", -1;
	if ((int)(rec->seq % 2) != idx)
		return *why = "record in the wrong slot", -1;
	rec->pid = (long)pid;
	return 0;
}

int fw_record_parse(const char *image, size_t len, struct fw_record *rec,
                    char *why, size_t whylen)
{
	struct fw_record r[2];
	const char *reason[2] = { "", "" };
	int ok[2];

	if (len != (size_t)FW_FENCE_SIZE) {
		snprintf(why, whylen, "size is %zu bytes, not %d", len,
		         FW_FENCE_SIZE);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		ok[i] = parse_slot(image + (size_t)i * FW_SLOT_SIZE, i, &r[i],
		                   &reason[i]) == 0;
	if (!ok[0] && !ok[1]) {
		snprintf(why, whylen, "no valid record (slot 0: %s; slot 1: %s)",
		         reason[0], reason[1]);
		return -1;
	}
	/* Both valid: the newer one is current.  Its token can never be the
	   lower one, since the fence only moves forward: if it is, someone
	   edited the file by hand, and guessing would be unsafe. */
	if (ok[0] && ok[1]) {
		int newer = r[1].seq > r[0].seq;

		if (r[newer].token < r[!newer].token) {
			snprintf(why, whylen,
			         "newer record has the lower token (%llu < %llu)",
			         (unsigned long long)r[newer].token,
			         (unsigned long long)r[!newer].token);
			return -1;
		}
		*rec = r[newer];
	} else {
		*rec = r[ok[1]];
	}
	return 0;
}
