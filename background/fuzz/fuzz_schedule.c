/*
 * fuzz_schedule.c - schedule texts (background/schedule.h): Go durations,
 * cron expressions and descriptors, CRON_TZ=/TZ= prefixes (zone files come
 * from the system's zoneinfo), RFC 3339 times; then schedule_next,
 * schedule_period, schedule_jitter and schedule_due from several instants.
 *
 * Checks: schedule_next(s, t) is 0 or > t; for cron, a fire r found after t
 * is found again from r - 1 (the search does not skip fires); RFC 3339 times format
 * and parse back to the same second.
 *
 * Input: the text, optionally a NUL byte and 8 bytes of a little-endian
 * instant used as one more `after`. Seeds: the cron/interval examples in
 * build/fuzz/seeds and the scanSchedule/scanInterval of the samples.
 * Dictionary: background/fuzz/schedule.dict.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "background/schedule.h"
#include "common/fuzz/fuzz.h"

#include "common/banned.h"

/* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z. */
#define T_MIN (-62135596800LL)
#define T_MAX 253402300799LL

static void check_next(const struct schedule *s, time_t after)
{
	time_t r = schedule_next(s, after), again;

	if (!r)
		return;
	if (r <= after) {
		fprintf(stderr, "schedule_next(%lld) = %lld, not after it\n", (long long)after,
			(long long)r);
		abort();
	}
	/* cron fires at fixed instants; an interval counts from `after` */
	again = s->kind == SCHEDULE_CRON ? schedule_next(s, r - 1) : r;
	if (again != r) {
		fprintf(stderr, "schedule_next(%lld) = %lld but schedule_next(%lld) = %lld\n",
			(long long)after, (long long)r, (long long)(r - 1), (long long)again);
		abort();
	}
	schedule_next(s, r);
}

static void exercise(const struct schedule *s, time_t extra)
{
	const time_t afters[] = {0,	     1,	    978307200, 1709208000, 1763600000,
				 4102444800, T_MIN, T_MAX - 1, -1,	   T_MAX};
	time_t period = schedule_period(s), due = 0;

	for (size_t i = 0; i < GV_ARRAY_LEN(afters); i++)
		check_next(s, afters[i]);
	check_next(s, extra);
	schedule_jitter("policy", period);
	schedule_due(s, 0, 1763600000, 5, &due);
	schedule_due(s, 1763600000 - 86400, 1763600000, 5, &due);
	schedule_due(s, 1763600000 + 3600, 1763600000, 0, &due);
}

static void check_time(const char *text)
{
	struct gv_err err = {0};
	char buf[64];
	time_t t = 0, back = 0;

	if (schedule_time_parse(text, &t, &err) != GV_OK || t < T_MIN || t > T_MAX)
		return;
	schedule_time_format(t, buf, sizeof(buf));
	if (schedule_time_parse(buf, &back, &err) != GV_OK || back != t) {
		fprintf(stderr, "%s -> %lld -> %s -> %lld\n", text, (long long)t, buf,
			(long long)back);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *a, *b;
	size_t alen, blen;
	struct schedule s;
	time_t extra = 1763600000;
	char *text;

	fuzz_init();
	fuzz_split(data, size, &a, &alen, &b, &blen);
	if (blen >= 8) {
		uint64_t u = 0;

		for (int i = 7; i >= 0; i--)
			u = u << 8 | (uint8_t)b[i];
		extra = (time_t)(int64_t)u;
	}
	text = gv_xstrndup(a, alen);

	memset(&s, 0, sizeof(s));
	if (schedule_parse(text, &s, NULL) == GV_OK)
		exercise(&s, extra);
	schedule_release(&s);
	if (schedule_parse_cron(text, &s, NULL) == GV_OK)
		exercise(&s, extra);
	schedule_release(&s);
	if (schedule_parse_interval(text, &s, NULL) == GV_OK)
		exercise(&s, extra);
	schedule_release(&s);
	check_time(text);
	free(text);
	return 0;
}
