/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the fence record parser on arbitrary bytes.  Besides
 * not crashing, a record it accepts must survive a round trip: formatted
 * again and parsed again, it is the same record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_fence f, again;
	struct fw_record rec;
	char image[FW_FENCE_SIZE], why[160];

	if (fw_record_parse((const char *)data, size, &f, why,
	                    sizeof(why)) != 0)
		return 0;
	/* The newest record, written as this version writes it. */
	rec = f.cur;
	rec.version = 2;
	if (rec.file == FW_FILE_UNKNOWN)
		rec.file = FW_FILE_ABSENT;   /* a version 1 record says nothing */
	fw_record_image(&rec, image);
	/* A lone record beside a blank slot is damage unless it is a
	   fence's first (seq 0): one wiped may have held a newer record. */
	if (fw_record_parse(image, sizeof(image), &again, why,
	                    sizeof(why)) != 0 ||
	    again.damaged != (rec.seq != 0) ||
	    again.cur.seq != rec.seq || again.cur.token != rec.token ||
	    again.cur.pid != rec.pid || strcmp(again.cur.host, rec.host) != 0 ||
	    strcmp(again.cur.op, rec.op) != 0 ||
	    again.cur.file != rec.file || again.cur.ftoken != rec.ftoken ||
	    (rec.file == FW_FILE_PRESENT &&
	     (again.cur.ino != rec.ino || again.cur.size != rec.size ||
	      again.cur.digest != rec.digest)))
		abort();
	return 0;
}
