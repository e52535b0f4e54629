/*
 * clock.c - the real clock and random source (common/clock.h).
 */
#include "common/clock.h"

#include <stdlib.h>

#include <openssl/rand.h>

#include "common/banned.h"

void gv_clock_now(void *ud, struct timespec *ts)
{
	(void)ud;
	clock_gettime(CLOCK_REALTIME, ts);
}

uint32_t gv_random_u32(void *ud)
{
	uint32_t v = 0;

	(void)ud;
	if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
		v = (uint32_t)rand();
	return v;
}
