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
	struct fw_record rec, again;
	char image[FW_FENCE_SIZE], why[160];

	if (fw_record_parse((const char *)data, size, &rec, why,
	                    sizeof(why)) != 0)
		return 0;
	fw_record_image(&rec, image);
	if (fw_record_parse(image, sizeof(image), &again, why,
	                    sizeof(why)) != 0 ||
	    again.seq != rec.seq || again.token != rec.token ||
	    again.pid != rec.pid || strcmp(again.host, rec.host) != 0 ||
	    strcmp(again.op, rec.op) != 0)
		abort();
	return 0;
}
