/*
 * schedule.c - `gavel schedule`: inspect scan schedules.
 *
 *   gavel schedule next EXPR [--from RFC3339] [-n N]
 *
 * EXPR is a cron expression (5 or 6 fields, descriptors, CRON_TZ=/TZ=
 * prefix) or a Go duration interval; see background/schedule.h. The next N
 * fire times strictly after --from (default: now) are printed in RFC 3339
 * UTC, one per line; for an interval they are from + k*interval. Several
 * non-option words are joined with spaces, so quoting is optional (but the
 * shell may expand `*` and `?`). A bad expression prints
 * "gavel schedule: <reason>" on stderr and exits 2.
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "background/schedule.h"
#include "common/gv.h"
#include "common/banned.h"

#define NEXT_MAX 10000

/* Declared here until cmd/cmd.h carries it; the two declarations agree. */

static void usage(FILE *f)
{
	fputs("usage: gavel schedule next EXPR [--from RFC3339] [-n N]\n"
	      "\n"
	      "next   prints the next N (default 5) fire times of EXPR after --from\n"
	      "       (default now), in RFC 3339 UTC, one per line\n"
	      "EXPR   a cron expression: 5 fields (minute hour day-of-month month\n"
	      "       day-of-week, 0-7 with 0 and 7 = Sunday) or 6 fields (Quartz: second\n"
	      "       first, day-of-week 1-7 with 1 = Sunday); names JAN-DEC SUN-SAT, a-b,\n"
	      "       */n, a-b/n, a/n, lists, ? and L in day-of-month, nL in day-of-week;\n"
	      "       @yearly @monthly @weekly @daily @hourly @every <duration>;\n"
	      "       UTC unless prefixed CRON_TZ=<zone> or TZ=<zone>;\n"
	      "       or a Go duration interval (2h, 2m30s, 1h30m)\n",
	      f);
}

static int fail(const struct gv_err *err)
{
	fprintf(stderr, "gavel schedule: %s\n", err->msg);
	return 2;
}

static int schedule_next_cmd(int argc, char **argv)
{
	struct schedule s = {0};
	struct gv_buf expr = {0};
	struct gv_err err = {0};
	const char *from_text = NULL;
	time_t from, t;
	long n = 5;
	int i, rc = 2;
	char buf[64], *end;

	for (i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "--from") == 0 || strcmp(argv[i], "-n") == 0) &&
		    i + 1 == argc) {
			fprintf(stderr, "gavel schedule: %s needs a value\n", argv[i]);
			goto out;
		}
		if (strcmp(argv[i], "--from") == 0) {
			from_text = argv[++i];
		} else if (strncmp(argv[i], "--from=", 7) == 0) {
			from_text = argv[i] + 7;
		} else if (strcmp(argv[i], "-n") == 0) {
			n = strtol(argv[++i], &end, 10);
			if (!*argv[i] || *end || n < 1 || n > NEXT_MAX) {
				fprintf(stderr, "gavel schedule: -n wants a number from 1 to %d\n",
					NEXT_MAX);
				goto out;
			}
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			rc = 0;
			goto out;
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			fprintf(stderr, "gavel schedule: unknown option %s\n", argv[i]);
			usage(stderr);
			goto out;
		} else {
			if (expr.len)
				gv_buf_addc(&expr, ' ');
			gv_buf_adds(&expr, argv[i]);
		}
	}
	if (!expr.len) {
		usage(stderr);
		goto out;
	}
	if (from_text) {
		if (schedule_time_parse(from_text, &from, &err)) {
			gv_err_prefix(&err, "--from: ");
			rc = fail(&err);
			goto out;
		}
	} else {
		from = time(NULL);
	}
	if (schedule_parse(gv_buf_str(&expr), &s, &err)) {
		rc = fail(&err);
		goto out;
	}
	for (long k = 0; k < n; k++) {
		t = schedule_next(&s, from);
		if (!t) {
			gv_err_set(&err, GV_ELIMIT,
				   "no fire time after %s (searched %d years, up to year 9999)",
				   schedule_time_format(from, buf, sizeof(buf)),
				   SCHEDULE_HORIZON_YEARS);
			rc = fail(&err);
			goto out;
		}
		puts(schedule_time_format(t, buf, sizeof(buf)));
		from = t;
	}
	rc = 0;
out:
	schedule_release(&s);
	gv_buf_release(&expr);
	return rc;
}

int cmd_schedule(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "next") == 0)
		return schedule_next_cmd(argc - 1, argv + 1);
	fprintf(stderr, "gavel schedule: unknown subcommand \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
