/*
 * trust.c - whose fence this is, and whether this process may believe it.
 */
#include <sys/stat.h>

#include "internal.h"

int fw_fence_trusted(const struct stat *st, const char *shown,
                     struct fw_result *res)
{
	(void)st;
	(void)shown;
	(void)res;
	return FW_OK;
}
