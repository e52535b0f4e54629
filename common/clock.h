/*
 * clock.h - the real clock and random source, which programs (cmd/, the
 * servers) hand to the engine through struct jp_env (engine/jmespath.h).
 * The engine never calls these itself except as the default of an
 * evaluation given no jp_env.
 */
#ifndef GV_COMMON_CLOCK_H
#define GV_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_REALTIME into *ts (UTC seconds and nanoseconds). ud is unused. */
void gv_clock_now(void *ud, struct timespec *ts);

/*
 * A uniformly random 32-bit number from OpenSSL's RAND_bytes (rand() if it
 * fails). Not for keys. ud is unused.
 */
uint32_t gv_random_u32(void *ud);

#endif
