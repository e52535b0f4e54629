/*
 * fuzz_tzif.c - gavel's own TZif reader (background/schedule.c): the input
 * is a zone file. It is put in a memfd and read as zone "<fd>" with
 * TZDIR=/proc/self/fd, so nothing is written to disk; a few cron
 * expressions in that zone then run schedule_next around DST-like
 * transitions, with the same checks as fuzz_schedule.c.
 *
 * Seeds: the system's zone files (/usr/share/zoneinfo), copied into the
 * temporary corpus by common/fuzz/run.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "background/schedule.h"
#include "common/fuzz/fuzz.h"

#include "common/banned.h"

static int fd = -1;

static void check_next(const struct schedule *s, time_t after)
{
	time_t r = schedule_next(s, after);

	if (r && (r <= after || (s->kind == SCHEDULE_CRON && schedule_next(s, r - 1) != r))) {
		fprintf(stderr, "schedule_next(%lld) = %lld; from r - 1: %lld\n", (long long)after,
			(long long)r, (long long)(r ? schedule_next(s, r - 1) : 0));
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const exprs[] = {"30 2 * * *", "0 0 L * *", "*/7 * * * * *",
					    "@every 90m"};
	const time_t afters[] = {0, 1711846800, 1729990800, 2500000000, 4102444800, -2208988800};
	char text[128];

	fuzz_init();
	if (fd < 0) {
		fd = memfd_create("tzif", 0);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		setenv("TZDIR", "/proc/self/fd", 1);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size) {
		perror("memfd write");
		abort();
	}
	for (size_t i = 0; i < GV_ARRAY_LEN(exprs); i++) {
		struct schedule s;

		snprintf(text, sizeof(text), "CRON_TZ=%d %s", fd, exprs[i]);
		memset(&s, 0, sizeof(s));
		if (schedule_parse_cron(text, &s, NULL) == GV_OK)
			for (size_t j = 0; j < GV_ARRAY_LEN(afters); j++)
				check_next(&s, afters[j]);
		schedule_release(&s);
	}
	return 0;
}
