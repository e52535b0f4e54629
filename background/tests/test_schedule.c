/*
 * Unit tests for background/schedule.c: intervals, every cron field form,
 * names, ?, L, nL, descriptors, @every, time zones (Europe/Berlin around
 * its DST changes), the Quartz examples, leap years, impossible
 * expressions, error texts, due/missed logic, jitter, RFC 3339.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "background/schedule.h"

#include "common/banned.h"

static time_t T(const char *text)
{
	struct gv_err err = {0};
	time_t t = 0;

	if (schedule_time_parse(text, &t, &err)) {
		fprintf(stderr, "bad test time %s: %s\n", text, err.msg);
		fail();
	}
	return t;
}

static const char *fmt(time_t t)
{
	static char buf[8][32];
	static int i;

	i = (i + 1) % 8;
	if (!t)
		return "0";
	return schedule_time_format(t, buf[i], sizeof(buf[i]));
}

static void parse_ok(const char *text, struct schedule *s)
{
	struct gv_err err = {0};

	if (schedule_parse(text, s, &err)) {
		fprintf(stderr, "parse \"%s\": %s\n", text, err.msg);
		fail();
	}
}

/* Asserts the fire times after `from`, one after another. */
static void expect_fires(const char *expr, const char *from, const char *const *want, size_t n)
{
	struct schedule s;
	time_t t = T(from);

	parse_ok(expr, &s);
	for (size_t i = 0; i < n; i++) {
		t = schedule_next(&s, t);
		if (strcmp(fmt(t), want[i]) != 0) {
			fprintf(stderr, "%s from %s: fire %zu is %s, want %s\n", expr, from, i,
				fmt(t), want[i]);
			schedule_release(&s);
			fail();
		}
	}
	schedule_release(&s);
}

#define FIRES(expr, from, ...)                                                                     \
	do {                                                                                       \
		static const char *const want_[] = {__VA_ARGS__};                                  \
		expect_fires((expr), (from), want_, sizeof(want_) / sizeof(want_[0]));             \
	} while (0)

/* Asserts that text does not parse and that the message is exactly msg. */
static void expect_error(const char *text, const char *msg)
{
	struct schedule s;
	struct gv_err err = {0};
	enum gv_code rc = schedule_parse(text, &s, &err);

	if (rc != GV_EINVAL || strcmp(err.msg, msg) != 0) {
		fprintf(stderr, "\"%s\": rc %d, message\n  %s\nwant\n  %s\n", text, rc, err.msg,
			msg);
		fail();
	}
	assert_int_equal(s.kind, 0);
	assert_null(s.zone);
}

static const char *zoneinfo_dir(void)
{
	const char *dir = getenv("TZDIR");

	return dir && *dir ? dir : "/usr/share/zoneinfo";
}

static bool have_zone(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", zoneinfo_dir(), name);
	return access(path, R_OK) == 0;
}

static uint64_t bits(const int *v, size_t n)
{
	uint64_t b = 0;

	for (size_t i = 0; i < n; i++)
		b |= 1ULL << v[i];
	return b;
}

#define BITS(...) bits((const int[]){__VA_ARGS__}, sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

static void test_interval(void **state)
{
	struct schedule s;
	struct gv_err err = {0};

	(void)state;
	assert_int_equal(schedule_parse_interval("2h", &s, NULL), GV_OK);
	assert_int_equal(s.kind, SCHEDULE_INTERVAL);
	assert_int_equal(s.interval, 7200);
	assert_int_equal(schedule_parse_interval("2m30s", &s, NULL), GV_OK);
	assert_int_equal(s.interval, 150);
	assert_int_equal(schedule_parse_interval("1h30m", &s, NULL), GV_OK);
	assert_int_equal(s.interval, 5400);
	assert_int_equal(schedule_parse_interval("90m", &s, NULL), GV_OK);
	assert_int_equal(s.interval, 5400);
	assert_int_equal(schedule_parse_interval("1.5s", &s, NULL), GV_OK);
	assert_int_equal(s.interval, 1); /* one-second resolution: the fraction is dropped */
	assert_int_equal(schedule_parse_interval("+24h", &s, NULL), GV_OK);
	assert_int_equal(s.interval, 86400);
	assert_int_equal(schedule_next(&s, T("2026-01-01T00:00:00Z")), T("2026-01-02T00:00:00Z"));
	schedule_release(&s);

	assert_int_equal(schedule_parse_interval("0", &s, &err), GV_EINVAL);
	assert_string_equal(err.msg, "interval \"0\" must be > 0");
	gv_err_clear(&err);
	assert_int_equal(schedule_parse_interval("0s", &s, &err), GV_EINVAL);
	assert_string_equal(err.msg, "interval \"0s\" must be > 0");
	gv_err_clear(&err);
	assert_int_equal(schedule_parse_interval("-1h", &s, &err), GV_EINVAL);
	assert_string_equal(err.msg, "interval \"-1h\" must be > 0");
	gv_err_clear(&err);
	assert_int_equal(schedule_parse_interval("1d", &s, &err), GV_EINVAL);
	assert_string_equal(err.msg,
			    "interval \"1d\" is not a Go duration (e.g. 1h30m, 2m30s, 2h)");
	gv_err_clear(&err);
	assert_int_equal(schedule_parse_interval("", &s, &err), GV_EINVAL);
	gv_err_clear(&err);
	assert_int_equal(schedule_parse_interval("1h 30m", &s, &err), GV_EINVAL);
	gv_err_clear(&err);
	assert_int_equal(schedule_parse_interval("500ms", &s, &err), GV_EINVAL);
	assert_string_equal(err.msg, "interval \"500ms\" is under the 1s resolution of schedules");
	assert_int_equal(schedule_parse_interval(NULL, &s, NULL), GV_EINVAL);
}

static void test_parse_either(void **state)
{
	struct schedule s;

	(void)state;
	parse_ok("2h", &s);
	assert_int_equal(s.kind, SCHEDULE_INTERVAL);
	assert_int_equal(s.interval, 7200);
	parse_ok("  1h30m  ", &s);
	assert_int_equal(s.interval, 5400);
	parse_ok("0 * * * *", &s);
	assert_int_equal(s.kind, SCHEDULE_CRON);
	schedule_release(&s);
	expect_error("2x", "\"2x\" is neither a Go duration (e.g. 1h30m) nor a cron expression");
	expect_error("", "empty schedule");
	expect_error("   ", "empty schedule");
	/* scanSchedule only takes cron */
	assert_int_equal(schedule_parse_cron("2h", &s, NULL), GV_EINVAL);
	/* release is idempotent on zeroed schedules */
	schedule_release(&s);
	schedule_release(NULL);
}

static void test_field_forms(void **state)
{
	struct schedule s;

	(void)state;
	parse_ok("5 * * * *", &s);
	assert_true(s.seconds == 1);
	assert_true(s.minutes == BITS(5));
	assert_true(s.hours == 0xffffff);
	assert_true(s.days == 0xfffffffe);
	assert_true(s.months == 0x1ffe);
	assert_true(s.weekdays == 0x7f);
	assert_true(s.days_any && s.weekdays_any);
	assert_false(s.last_day);
	assert_true(s.last_weekdays == 0);
	schedule_release(&s);

	parse_ok("1-3 */7 */10 */5 1-5", &s);
	assert_true(s.minutes == BITS(1, 2, 3));
	assert_true(s.hours == BITS(0, 7, 14, 21));
	assert_true(s.days == BITS(1, 11, 21, 31));
	assert_true(s.months == BITS(1, 6, 11));
	assert_true(s.weekdays == BITS(1, 2, 3, 4, 5));
	assert_false(s.days_any); /* a stepped * restricts the day */
	assert_false(s.weekdays_any);
	schedule_release(&s);

	parse_ok("10-40/10 7/5 1,2,30 3-12/3 */2", &s);
	assert_true(s.minutes == BITS(10, 20, 30, 40));
	assert_true(s.hours == BITS(7, 12, 17, 22)); /* a/n = a-max/n */
	assert_true(s.days == BITS(1, 2, 30));
	assert_true(s.months == BITS(3, 6, 9, 12));
	assert_true(s.weekdays == BITS(0, 2, 4, 6)); /* * in standard cron is 0-6 */
	schedule_release(&s);

	parse_ok("1-3,10,*/30 0 * * *", &s);
	assert_true(s.minutes == BITS(0, 1, 2, 3, 10, 30));
	schedule_release(&s);

	parse_ok("*/1 * * * *", &s);
	assert_true(s.minutes == 0x0fffffffffffffffULL);
	schedule_release(&s);

	/* 6 fields: seconds first */
	parse_ok("*/15 0 12 * * ?", &s);
	assert_true(s.seconds == BITS(0, 15, 30, 45));
	assert_true(s.minutes == BITS(0));
	assert_true(s.hours == BITS(12));
	assert_true(s.weekdays_any);
	schedule_release(&s);

	/* day-of-week 7 is Sunday too in standard cron */
	parse_ok("0 0 * * 7", &s);
	assert_true(s.weekdays == BITS(0));
	schedule_release(&s);
	parse_ok("0 0 * * 5-7", &s);
	assert_true(s.weekdays == BITS(5, 6, 0));
	schedule_release(&s);
	parse_ok("0 0 * * 0-7", &s);
	assert_true(s.weekdays == 0x7f);
	assert_false(s.weekdays_any);
	schedule_release(&s);
	/* Quartz numbering: 1 = Sunday ... 7 = Saturday */
	parse_ok("0 0 0 ? * 1,7", &s);
	assert_true(s.weekdays == BITS(0, 6));
	schedule_release(&s);
	parse_ok("0 0 0 ? * */2", &s);
	assert_true(s.weekdays == BITS(0, 2, 4, 6));
	schedule_release(&s);

	/* every second; 5-field expressions fire at second 0 */
	FIRES("* * * * * *", "2026-05-01T10:00:58Z", "2026-05-01T10:00:59Z", "2026-05-01T10:01:00Z",
	      "2026-05-01T10:01:01Z");
	FIRES("* * * * *", "2026-05-01T10:00:58Z", "2026-05-01T10:01:00Z", "2026-05-01T10:02:00Z");
	FIRES("30 */20 * * * *", "2026-05-01T23:50:00Z", "2026-05-02T00:00:30Z",
	      "2026-05-02T00:20:30Z", "2026-05-02T00:40:30Z");
	FIRES("0 9-17/4 * * *", "2026-05-01T10:00:00Z", "2026-05-01T13:00:00Z",
	      "2026-05-01T17:00:00Z", "2026-05-02T09:00:00Z");
	FIRES("0 0 1 */4 *", "2026-05-01T10:00:00Z", "2026-09-01T00:00:00Z", "2027-01-01T00:00:00Z",
	      "2027-05-01T00:00:00Z");
	/* day-of-month 31 skips the short months */
	FIRES("0 0 31 * *", "2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z",
	      "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z");
}

static void test_strictly_after(void **state)
{
	struct schedule s;
	time_t t = T("2026-11-20T10:15:00Z");

	(void)state;
	parse_ok("0 15 10 * * ?", &s);
	assert_int_equal(schedule_next(&s, t), T("2026-11-21T10:15:00Z"));
	assert_int_equal(schedule_next(&s, t - 1), t);
	schedule_release(&s);
	FIRES("15 10 * * *", "2026-11-20T10:14:59Z", "2026-11-20T10:15:00Z",
	      "2026-11-21T10:15:00Z");
	/* across a year end */
	FIRES("59 23 31 12 *", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z");
	FIRES("@yearly", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z");
}

static void test_names(void **state)
{
	struct schedule s;

	(void)state;
	parse_ok("0 0 * JAN-MAR,dec mon-FRI", &s);
	assert_true(s.months == BITS(1, 2, 3, 12));
	assert_true(s.weekdays == BITS(1, 2, 3, 4, 5));
	schedule_release(&s);
	parse_ok("0 0 * * Sun,sat", &s);
	assert_true(s.weekdays == BITS(0, 6));
	schedule_release(&s);
	/* MON-SUN in standard cron: Sunday counts as 7 at the end of a range */
	parse_ok("0 0 * * MON-SUN", &s);
	assert_true(s.weekdays == 0x7f);
	schedule_release(&s);
	/* Quartz: SUN = 1, names mean the same days */
	parse_ok("0 0 0 ? * SUN", &s);
	assert_true(s.weekdays == BITS(0));
	schedule_release(&s);
	parse_ok("0 0 0 ? * MON/2", &s);
	assert_true(s.weekdays == BITS(1, 3, 5)); /* MON, WED, FRI */
	schedule_release(&s);
	parse_ok("0 0 0 ? jul-AUG/1 tue", &s);
	assert_true(s.months == BITS(7, 8));
	assert_true(s.weekdays == BITS(2));
	schedule_release(&s);
	FIRES("0 12 * FEB SAT", "2026-01-15T00:00:00Z", "2026-02-07T12:00:00Z",
	      "2026-02-14T12:00:00Z", "2026-02-21T12:00:00Z", "2026-02-28T12:00:00Z",
	      "2027-02-06T12:00:00Z");
	expect_error("0 0 * * FUN", "day-of-week \"FUN\": unknown name \"FUN\"");
	expect_error("0 0 * JANUARY *", "month \"JANUARY\": unknown name \"JANUARY\"");
	expect_error("0 0 * * FRI-MON",
		     "day-of-week \"FRI-MON\": range 5-1 is backwards (start > end)");
	expect_error("0 MON * * *", "hour \"MON\": \"MON\" is not a number");
}

static void test_question(void **state)
{
	struct schedule s;

	(void)state;
	parse_ok("0 0 ? * ?", &s);
	assert_true(s.days_any && s.weekdays_any);
	assert_true(s.days == 0xfffffffe);
	schedule_release(&s);
	parse_ok("0 0 0 1 * ?", &s);
	assert_false(s.days_any);
	assert_true(s.weekdays_any);
	schedule_release(&s);
	FIRES("0 0 0 1 * ?", "2026-01-15T00:00:00Z", "2026-02-01T00:00:00Z",
	      "2026-03-01T00:00:00Z");
	expect_error("? * * * *",
		     "minute \"?\": '?' is only allowed in day-of-month and day-of-week");
	expect_error("0 0 ?/2 * *", "day-of-month \"?/2\": '?' takes no step");
}

static void test_last_day(void **state)
{
	struct schedule s;

	(void)state;
	parse_ok("0 0 L * *", &s);
	assert_true(s.last_day);
	assert_true(s.days == 0);
	assert_false(s.days_any);
	schedule_release(&s);
	FIRES("0 0 L * *", "2026-01-01T00:00:00Z", "2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z",
	      "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z");
	FIRES("0 0 L * *", "2028-02-01T00:00:00Z", "2028-02-29T00:00:00Z");
	/* L in a list, Quartz form */
	FIRES("0 30 23 1,15,L * ?", "2026-04-14T00:00:00Z", "2026-04-15T23:30:00Z",
	      "2026-04-30T23:30:00Z", "2026-05-01T23:30:00Z");
	expect_error("0 0 L-3 * *",
		     "day-of-month \"L-3\": 'L-n' (days before the last) is not supported");
	expect_error("0 0 15W * *", "day-of-month \"15W\": 'W' (nearest weekday) is not supported");
	expect_error("0 0 LW * *", "day-of-month \"LW\": 'W' (nearest weekday) is not supported");
	expect_error("0 0 5L * *",
		     "day-of-month \"5L\": only a plain 'L' (last day of the month) is supported");
	expect_error("0 L * * *",
		     "hour \"L\": 'L' is only allowed in day-of-month and day-of-week");
}

static void test_last_weekday(void **state)
{
	struct schedule s;

	(void)state;
	parse_ok("0 0 * * 5L", &s); /* standard cron: 5 = Friday */
	assert_true(s.last_weekdays == BITS(5));
	assert_true(s.weekdays == 0);
	assert_false(s.weekdays_any);
	schedule_release(&s);
	FIRES("0 0 * * 5L", "2026-01-01T00:00:00Z", "2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z",
	      "2026-03-27T00:00:00Z");
	/* Quartz: 1L = last Sunday; names too */
	FIRES("0 0 3 ? * 1L", "2026-01-01T00:00:00Z", "2026-01-25T03:00:00Z",
	      "2026-02-22T03:00:00Z", "2026-03-29T03:00:00Z", "2026-04-26T03:00:00Z",
	      "2026-05-31T03:00:00Z");
	FIRES("0 0 3 ? * SUNL", "2026-01-01T00:00:00Z", "2026-01-25T03:00:00Z");
	FIRES("0 3 * * 0L", "2026-01-01T00:00:00Z", "2026-01-25T03:00:00Z");
	FIRES("0 3 * * 7L", "2026-01-01T00:00:00Z", "2026-01-25T03:00:00Z");
	/* a list of a weekday and a last weekday */
	FIRES("0 0 * * 1,5L", "2026-01-24T00:00:00Z", "2026-01-26T00:00:00Z",
	      "2026-01-30T00:00:00Z", "2026-02-02T00:00:00Z");
	expect_error("0 0 0 ? * L",
		     "day-of-week \"L\": 'L' needs a weekday before it (e.g. 6L = last Friday)");
	expect_error("0 0 * * 8L", "day-of-week \"8L\": 8 is out of range 0-7");
	expect_error("0 0 0 ? * 0L", "day-of-week \"0L\": 0 is out of range 1-7");
	expect_error("0 0 * * 5#3",
		     "day-of-week \"5#3\": '#' (nth weekday of the month) is not supported");
}

static void test_dom_dow_or(void **state)
{
	(void)state;
	/* both restricted: the 13th OR any Friday (April 2026: Fridays 3, 10, 17, 24) */
	FIRES("0 0 13 * 5", "2026-04-01T00:00:00Z", "2026-04-03T00:00:00Z", "2026-04-10T00:00:00Z",
	      "2026-04-13T00:00:00Z", "2026-04-17T00:00:00Z", "2026-04-24T00:00:00Z",
	      "2026-05-01T00:00:00Z");
	/* Quartz with both restricted: accepted, same rule */
	FIRES("0 0 0 13 * FRI", "2026-04-01T00:00:00Z", "2026-04-03T00:00:00Z",
	      "2026-04-10T00:00:00Z", "2026-04-13T00:00:00Z");
	/* only one restricted: that one decides */
	FIRES("0 0 13 * *", "2026-04-01T00:00:00Z", "2026-04-13T00:00:00Z", "2026-05-13T00:00:00Z");
	FIRES("0 0 * * 5", "2026-04-01T00:00:00Z", "2026-04-03T00:00:00Z", "2026-04-10T00:00:00Z");
	/* a stepped * restricts (robfig): odd days OR Mondays */
	FIRES("0 0 */2 * 1", "2026-04-01T00:00:00Z", "2026-04-03T00:00:00Z", "2026-04-05T00:00:00Z",
	      "2026-04-06T00:00:00Z", "2026-04-07T00:00:00Z");
	/* day-of-month 30 in February with a weekday: Fridays of February */
	FIRES("0 0 30 2 5", "2026-01-01T00:00:00Z", "2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z");
}

static void test_descriptors(void **state)
{
	struct schedule s;
	struct gv_err err = {0};

	(void)state;
	FIRES("@yearly", "2026-05-05T00:00:00Z", "2027-01-01T00:00:00Z");
	FIRES("@annually", "2026-05-05T00:00:00Z", "2027-01-01T00:00:00Z");
	FIRES("@monthly", "2026-05-05T00:00:00Z", "2026-06-01T00:00:00Z", "2026-07-01T00:00:00Z");
	FIRES("@weekly", "2026-05-05T00:00:00Z", "2026-05-10T00:00:00Z", "2026-05-17T00:00:00Z");
	FIRES("@daily", "2026-05-05T00:00:00Z", "2026-05-06T00:00:00Z");
	FIRES("@midnight", "2026-05-05T00:00:00Z", "2026-05-06T00:00:00Z");
	FIRES("@hourly", "2026-05-05T00:30:00Z", "2026-05-05T01:00:00Z", "2026-05-05T02:00:00Z");
	FIRES("  @Daily  ", "2026-05-05T00:00:00Z", "2026-05-06T00:00:00Z");

	parse_ok("@every 1h30m", &s);
	assert_int_equal(s.kind, SCHEDULE_INTERVAL);
	assert_int_equal(s.interval, 5400);
	assert_null(s.zone);
	schedule_release(&s);
	FIRES("@every 2m30s", "2026-05-05T00:00:07Z", "2026-05-05T00:02:37Z",
	      "2026-05-05T00:05:07Z");
	assert_int_equal(schedule_parse_cron("@every 2h", &s, &err), GV_OK);
	assert_int_equal(s.interval, 7200);
	schedule_release(&s);

	expect_error("@reboot", "unknown descriptor \"@reboot\" (expected @yearly, @annually, "
				"@monthly, @weekly, @daily, @midnight, @hourly or @every "
				"<duration>)");
	expect_error("@daily 5", "@daily takes no fields after it");
	expect_error("@every", "@every takes one duration (e.g. @every 1h30m)");
	expect_error("@every 1h 30m", "@every takes one duration (e.g. @every 1h30m)");
	expect_error("@every 0s", "@every \"0s\" must be > 0");
	expect_error("@every often",
		     "@every \"often\" is not a Go duration (e.g. 1h30m, 2m30s, 2h)");
}

static void test_time_zones(void **state)
{
	struct schedule s;
	struct gv_err err = {0};
	char msg[512];

	(void)state;
	/* no file needed for UTC */
	FIRES("CRON_TZ=UTC 0 3 * * *", "2026-03-28T00:00:00Z", "2026-03-28T03:00:00Z");
	snprintf(msg, sizeof(msg),
		 "time zone \"Mars/Olympus_Mons\": no such zone (%s/Mars/Olympus_Mons)",
		 zoneinfo_dir());
	expect_error("CRON_TZ=Mars/Olympus_Mons 0 3 * * *", msg);
	expect_error("CRON_TZ=../../etc/passwd 0 3 * * *",
		     "time zone \"../../etc/passwd\": not an IANA zone name");
	expect_error("CRON_TZ=/etc/passwd 0 3 * * *",
		     "time zone \"/etc/passwd\": not an IANA zone name");
	expect_error("CRON_TZ= 0 3 * * *", "CRON_TZ=: missing time zone name");
	expect_error("TZ=UTC", "nothing after the time zone \"UTC\"");
	if (!have_zone("Europe/Berlin")) {
		skip();
		return;
	}
	snprintf(msg, sizeof(msg), "time zone \"Europe\": %s/Europe is not a zone file",
		 zoneinfo_dir());
	expect_error("CRON_TZ=Europe 0 3 * * *", msg);

	parse_ok("CRON_TZ=Europe/Berlin 30 2 * * *", &s);
	assert_non_null(s.zone);
	assert_string_equal(s.zone_name, "Europe/Berlin");
	schedule_release(&s);
	assert_null(s.zone);

	/*
	 * 2026-03-29 02:00 CET -> 03:00 CEST: 02:30 does not exist that day and
	 * does not fire; 03:00 is 01:00Z.
	 */
	FIRES("CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-27T00:00:00Z", "2026-03-27T01:30:00Z",
	      "2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z");
	FIRES("TZ=Europe/Berlin 0 3 * * *", "2026-03-27T12:00:00Z", "2026-03-28T02:00:00Z",
	      "2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z");
	/* every 30 minutes from 01:00 to 03:59 local around the gap */
	FIRES("CRON_TZ=Europe/Berlin */30 1-3 * * *", "2026-03-28T23:00:00Z",
	      "2026-03-29T00:00:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z",
	      "2026-03-29T01:30:00Z", "2026-03-29T23:00:00Z");
	/* 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens twice and fires twice */
	FIRES("CRON_TZ=Europe/Berlin 30 2 * * *", "2026-10-24T00:00:00Z", "2026-10-24T00:30:00Z",
	      "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z");
	/* midnight local, weekdays, descriptors and Quartz in a zone */
	FIRES("CRON_TZ=Europe/Berlin @daily", "2026-03-28T00:00:00Z", "2026-03-28T23:00:00Z",
	      "2026-03-29T22:00:00Z");
	FIRES("CRON_TZ=Europe/Berlin 0 15 10 ? * MON-FRI", "2026-03-27T00:00:00Z",
	      "2026-03-27T09:15:00Z", "2026-03-30T08:15:00Z");
	/* beyond the file's transition table (2037): the footer rule M3.5.0/M10.5.0/3 */
	FIRES("CRON_TZ=Europe/Berlin 30 2 * * *", "2045-03-24T00:00:00Z", "2045-03-24T01:30:00Z",
	      "2045-03-25T01:30:00Z", "2045-03-27T00:30:00Z");
	FIRES("CRON_TZ=Europe/Berlin 30 2 * * *", "2045-10-28T00:00:00Z", "2045-10-28T00:30:00Z",
	      "2045-10-29T00:30:00Z", "2045-10-29T01:30:00Z", "2045-10-30T01:30:00Z");
	/* the zone only moves the wall clock; the 6L rule still holds */
	FIRES("CRON_TZ=Europe/Berlin 0 15 10 ? * 6L", "2026-01-01T00:00:00Z",
	      "2026-01-30T09:15:00Z", "2026-02-27T09:15:00Z", "2026-03-27T09:15:00Z",
	      "2026-04-24T08:15:00Z");

	if (have_zone("Australia/Sydney")) {
		/* southern hemisphere, footer rule: DST ends 2041-04-07 03:00 AEDT */
		FIRES("CRON_TZ=Australia/Sydney 0 2,3 * * *", "2041-04-05T12:00:00Z",
		      "2041-04-05T15:00:00Z", "2041-04-05T16:00:00Z", "2041-04-06T15:00:00Z",
		      "2041-04-06T16:00:00Z", "2041-04-06T17:00:00Z");
	}
	if (have_zone("Asia/Kolkata")) {
		FIRES("CRON_TZ=Asia/Kolkata 15 0 1 * *", "2026-01-01T00:00:00Z",
		      "2026-01-31T18:45:00Z");
	}
	assert_int_equal(schedule_parse("CRON_TZ=Europe/Berlin 0 0 30 2 *", &s, &err), GV_EINVAL);
	assert_null(s.zone); /* the zone of a failed parse is freed */
}

/* ---- hand-made TZif files in a private TZDIR ---- */

static void put32(unsigned char **p, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		*(*p)++ = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char **p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p, (uint32_t)v);
}

/*
 * Writes a TZif file: version 0 (v1 only) or '2' (v1 + v2 block + footer),
 * with ntrans transitions at[] to type idx[], types off[] (ntypes).
 */
static void write_tzif(const char *path, int version, const int64_t *at, const uint8_t *idx,
		       size_t ntrans, const int32_t *off, size_t ntypes, const char *footer)
{
	unsigned char buf[4096], *p = buf;
	FILE *f;

	for (int block = 0; block < (version ? 2 : 1); block++) {
		memcpy(p, "TZif", 4);
		p[4] = (unsigned char)version;
		memset(p + 5, 0, 15);
		p += 20;
		put32(&p, 0);		     /* isutcnt */
		put32(&p, 0);		     /* isstdcnt */
		put32(&p, 0);		     /* leapcnt */
		put32(&p, (uint32_t)ntrans); /* timecnt */
		put32(&p, (uint32_t)ntypes); /* typecnt */
		put32(&p, 4);		     /* charcnt */
		for (size_t i = 0; i < ntrans; i++) {
			if (block == 0)
				put32(&p, (uint32_t)(int32_t)at[i]);
			else
				put64(&p, (uint64_t)at[i]);
		}
		for (size_t i = 0; i < ntrans; i++)
			*p++ = idx[i];
		for (size_t i = 0; i < ntypes; i++) {
			put32(&p, (uint32_t)off[i]);
			*p++ = 0;
			*p++ = 0;
		}
		memcpy(p, "ABC", 4);
		p += 4;
	}
	if (version)
		p += (size_t)snprintf((char *)p, sizeof(buf) - (size_t)(p - buf), "\n%s\n", footer);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, (size_t)(p - buf), f), (size_t)(p - buf));
	fclose(f);
}

static void test_tzif_files(void **state)
{
	char dir[] = "/tmp/gavel-tzdir-XXXXXX", path[256], msg[512];
	const char *old = getenv("TZDIR");
	char *saved = old ? strdup(old) : NULL;
	static const int64_t at[] = {1000000000};
	static const uint8_t idx[] = {1};
	static const int32_t off2[] = {0, 3600}, off1[] = {0};
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	setenv("TZDIR", dir, 1);

	/* v1 only: one transition at 2001-09-09T01:46:40Z from UTC to +01:00 */
	snprintf(path, sizeof(path), "%s/V1", dir);
	write_tzif(path, 0, at, idx, 1, off2, 2, NULL);
	FIRES("CRON_TZ=V1 0 12 * * *", "2001-09-07T00:00:00Z", "2001-09-07T12:00:00Z",
	      "2001-09-08T12:00:00Z", "2001-09-09T11:00:00Z", "2001-09-10T11:00:00Z");

	/* v2, no transitions, fixed-offset footer */
	snprintf(path, sizeof(path), "%s/Fixed", dir);
	write_tzif(path, '2', NULL, NULL, 0, off1, 1, "<+0530>-5:30");
	FIRES("CRON_TZ=Fixed 0 12 * * *", "2026-01-01T00:00:00Z", "2026-01-01T06:30:00Z");

	/* v2, rule only: US Eastern rules from the footer for every year */
	snprintf(path, sizeof(path), "%s/Eastern", dir);
	write_tzif(path, '2', NULL, NULL, 0, off1, 1, "EST5EDT,M3.2.0,M11.1.0");
	FIRES("TZ=Eastern 0 12 * * *", "2026-03-07T00:00:00Z", "2026-03-07T17:00:00Z",
	      "2026-03-08T16:00:00Z");
	FIRES("TZ=Eastern 30 1 * * *", "2026-10-31T00:00:00Z", "2026-10-31T05:30:00Z",
	      "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z");

	/* Julian (J60 = 1 March) and zero-based (300) rule days */
	snprintf(path, sizeof(path), "%s/Julian", dir);
	write_tzif(path, '2', NULL, NULL, 0, off1, 1, "AAA-1BBB,J60/2,300/3");
	FIRES("CRON_TZ=Julian 0 12 * * *", "2026-02-27T00:00:00Z", "2026-02-27T11:00:00Z",
	      "2026-02-28T11:00:00Z", "2026-03-01T10:00:00Z");
	FIRES("CRON_TZ=Julian 0 12 * * *", "2026-10-27T00:00:00Z", "2026-10-27T10:00:00Z",
	      "2026-10-28T11:00:00Z");
	FIRES("CRON_TZ=Julian 0 12 * * *", "2028-02-28T00:00:00Z", "2028-02-28T11:00:00Z",
	      "2028-02-29T11:00:00Z", "2028-03-01T10:00:00Z");

	/* broken files are errors naming the zone, the file and the reason */
	snprintf(path, sizeof(path), "%s/Garbage", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	fputs("hello, world, this is not a zone file at all........", f);
	fclose(f);
	snprintf(msg, sizeof(msg), "time zone \"Garbage\": %s/Garbage: not a TZif file", dir);
	expect_error("CRON_TZ=Garbage 0 12 * * *", msg);
	snprintf(path, sizeof(path), "%s/Truncated", dir);
	write_tzif(path, 0, at, idx, 1, off2, 2, NULL);
	assert_int_equal(truncate(path, 50), 0);
	snprintf(msg, sizeof(msg), "time zone \"Truncated\": %s/Truncated: truncated TZif file",
		 dir);
	expect_error("CRON_TZ=Truncated 0 12 * * *", msg);
	snprintf(path, sizeof(path), "%s/BadRule", dir);
	write_tzif(path, '2', NULL, NULL, 0, off1, 1, "EST5EDT");
	snprintf(msg, sizeof(msg),
		 "time zone \"BadRule\": %s/BadRule: unsupported TZ rule in TZif footer", dir);
	expect_error("CRON_TZ=BadRule 0 12 * * *", msg);

	for (const char *const *n = (const char *const[]){"V1", "Fixed", "Eastern", "Julian",
							  "Garbage", "Truncated", "BadRule", NULL};
	     *n; n++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *n);
		unlink(path);
	}
	rmdir(dir);
	if (saved)
		setenv("TZDIR", saved, 1);
	else
		unsetenv("TZDIR");
	free(saved);
}

static void test_quartz_examples(void **state)
{
	struct schedule s;
	time_t t = T("2026-11-19T00:00:00Z"), end = T("2027-04-01T00:00:00Z"), day;
	int fires = 0, weekdays = 0;

	(void)state;
	/* 10:15:00 every weekday, from a Thursday over four months */
	parse_ok("0 15 10 ? * MON-FRI", &s);
	for (t = schedule_next(&s, t); t < end; t = schedule_next(&s, t)) {
		struct tm tm;

		assert_non_null(gmtime_r(&t, &tm));
		assert_int_equal(tm.tm_hour, 10);
		assert_int_equal(tm.tm_min, 15);
		assert_int_equal(tm.tm_sec, 0);
		assert_true(tm.tm_wday >= 1 && tm.tm_wday <= 5);
		fires++;
	}
	for (day = T("2026-11-19T00:00:00Z"); day < end; day += 86400) {
		struct tm tm;

		gmtime_r(&day, &tm);
		weekdays += tm.tm_wday >= 1 && tm.tm_wday <= 5;
	}
	assert_int_equal(fires, weekdays);
	schedule_release(&s);
	FIRES("0 15 10 ? * MON-FRI", "2026-11-20T00:00:00Z", "2026-11-20T10:15:00Z",
	      "2026-11-23T10:15:00Z", "2026-11-24T10:15:00Z", "2026-11-25T10:15:00Z",
	      "2026-11-26T10:15:00Z", "2026-11-27T10:15:00Z", "2026-11-30T10:15:00Z");

	/* 10:15 on the last Friday of every month */
	FIRES("0 15 10 ? * 6L", "2026-01-01T00:00:00Z", "2026-01-30T10:15:00Z",
	      "2026-02-27T10:15:00Z", "2026-03-27T10:15:00Z", "2026-04-24T10:15:00Z",
	      "2026-05-29T10:15:00Z", "2026-06-26T10:15:00Z", "2026-07-31T10:15:00Z",
	      "2026-08-28T10:15:00Z", "2026-09-25T10:15:00Z", "2026-10-30T10:15:00Z",
	      "2026-11-27T10:15:00Z", "2026-12-25T10:15:00Z", "2027-01-29T10:15:00Z",
	      "2027-02-26T10:15:00Z", "2027-03-26T10:15:00Z");
	/* the same in standard cron */
	FIRES("15 10 * * 5L", "2027-11-01T00:00:00Z", "2027-11-26T10:15:00Z",
	      "2027-12-31T10:15:00Z");
}

static void test_leap_years(void **state)
{
	(void)state;
	FIRES("0 0 29 2 *", "2024-03-01T00:00:00Z", "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z");
	FIRES("0 0 29 2 *", "1997-01-01T00:00:00Z", "2000-02-29T00:00:00Z", /* 2000 is leap */
	      "2004-02-29T00:00:00Z");
	/* 2100 is not a leap year: 8 years between two Feb 29 */
	FIRES("0 0 29 2 *", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z");
	FIRES("0 0 12 29 FEB ?", "2025-01-01T00:00:00Z", "2028-02-29T12:00:00Z");
	FIRES("0 0 L 2 *", "2099-01-01T00:00:00Z", "2099-02-28T00:00:00Z", "2100-02-28T00:00:00Z",
	      "2101-02-28T00:00:00Z", "2102-02-28T00:00:00Z", "2103-02-28T00:00:00Z",
	      "2104-02-29T00:00:00Z");
	FIRES("0 0 * 2 *", "2028-02-28T00:00:00Z", "2028-02-29T00:00:00Z", "2029-02-01T00:00:00Z");
}

static void test_impossible(void **state)
{
	struct schedule s;

	(void)state;
	expect_error("0 0 30 2 *", "day-of-month \"30\" never occurs in month \"2\": the schedule "
				   "would never fire");
	expect_error("0 0 0 31 4,6,9,11 ?",
		     "day-of-month \"31\" never occurs in month \"4,6,9,11\": the schedule would "
		     "never fire");
	expect_error("0 0 30-31 FEB *", "day-of-month \"30-31\" never occurs in month \"FEB\": "
					"the schedule would never fire");
	/* possible somewhere: accepted */
	parse_ok("0 0 31 2,3 *", &s);
	schedule_release(&s);

	/* the search is bounded even for a schedule that was never parsed */
	memset(&s, 0, sizeof(s));
	s.kind = SCHEDULE_CRON;
	s.seconds = 1;
	s.minutes = 1;
	s.hours = 1;
	s.months = 0x1ffe;
	s.days = 0; /* no day ever */
	s.days_any = false;
	s.weekdays_any = true;
	s.weekdays = 0x7f;
	assert_int_equal(schedule_next(&s, T("2026-01-01T00:00:00Z")), 0);
	assert_int_equal(schedule_period(&s), 0);
	s.days = 0xfffffffe;
	s.months = 0;
	assert_int_equal(schedule_next(&s, T("2026-01-01T00:00:00Z")), 0);
	s.months = 0x1ffe;
	s.hours = 0;
	assert_int_equal(schedule_next(&s, T("2026-01-01T00:00:00Z")), 0);
	s.kind = 0;
	assert_int_equal(schedule_next(&s, T("2026-01-01T00:00:00Z")), 0);
	assert_int_equal(schedule_next(NULL, T("2026-01-01T00:00:00Z")), 0);

	/* nothing after 9999-12-31 */
	parse_ok("0 0 29 2 *", &s);
	assert_int_equal(schedule_next(&s, T("9997-01-01T00:00:00Z")), 0);
	assert_int_equal(schedule_next(&s, (time_t)INT64_MAX), 0);
	assert_int_equal(schedule_next(&s, (time_t)INT64_MIN), 0);
	schedule_release(&s);
	parse_ok("@every 1h", &s);
	assert_int_equal(schedule_next(&s, T("9999-12-31T23:30:00Z")), 0);
	assert_int_equal(schedule_next(&s, (time_t)INT64_MAX), 0);
}

static void test_errors(void **state)
{
	static const struct {
		const char *expr, *msg;
	} cases[] = {
	    {"* * * *", "expected 5 or 6 fields, got 4 (5: minute hour day-of-month month "
			"day-of-week; 6: second first, Quartz style)"},
	    {"0 0 0 * * * 2026", "expected 5 or 6 fields, got 7 (5: minute hour day-of-month "
				 "month day-of-week; 6: second first, Quartz style)"},
	    {"60 * * * *", "minute \"60\": 60 is out of range 0-59"},
	    {"5,61 * * * *", "minute \"5,61\": 61 is out of range 0-59"},
	    {"60 * * * * *", "second \"60\": 60 is out of range 0-59"},
	    {"0 24 * * *", "hour \"24\": 24 is out of range 0-23"},
	    {"0 0 0 * *", "day-of-month \"0\": 0 is out of range 1-31"},
	    {"0 0 32 * *", "day-of-month \"32\": 32 is out of range 1-31"},
	    {"0 0 * 13 *", "month \"13\": 13 is out of range 1-12"},
	    {"0 0 * 0 *", "month \"0\": 0 is out of range 1-12"},
	    {"0 0 * * 8", "day-of-week \"8\": 8 is out of range 0-7"},
	    {"0 0 0 ? * 0", "day-of-week \"0\": 0 is out of range 1-7"},
	    {"0 0 0 ? * 8", "day-of-week \"8\": 8 is out of range 1-7"},
	    {"*/0 * * * *", "minute \"*/0\": step 0 must be at least 1"},
	    {"*/90 * * * *",
	     "minute \"*/90\": step 90 is larger than the field's span (60 values)"},
	    {"*/ * * * *", "minute \"*/\": missing step after '/'"},
	    {"*/x * * * *", "minute \"*/x\": step \"x\" is not a number"},
	    {"1,,2 * * * *", "minute \"1,,2\": empty list element"},
	    {"1, * * * *", "minute \"1,\": empty list element"},
	    {"5-2 * * * *", "minute \"5-2\": range 5-2 is backwards (start > end)"},
	    {"5- * * * *", "minute \"5-\": missing value"},
	    {"-5 * * * *", "minute \"-5\": missing value"},
	    {"/5 * * * *", "minute \"/5\": missing value"},
	    {"1x * * * *", "minute \"1x\": \"1x\" is not a number"},
	    {"a * * * *", "minute \"a\": \"a\" is not a number"},
	};
	struct schedule s;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		expect_error(cases[i].expr, cases[i].msg);
	}
	/* 6 fields with a * day-of-week is fine: * is 1-7 in Quartz */
	parse_ok("0 0 0 * * *", &s);
	assert_true(s.weekdays == 0x7f);
	schedule_release(&s);
	/* the first error wins and the caller's context is kept */
	{
		struct gv_err err = {0};

		assert_int_equal(schedule_parse("61 * * * *", &s, &err), GV_EINVAL);
		assert_int_equal(err.code, GV_EINVAL);
		gv_err_prefix(&err, "policy p: spec.scanSchedule: ");
		assert_string_equal(
		    err.msg, "policy p: spec.scanSchedule: minute \"61\": 61 is out of range 0-59");
	}
}

static void test_due(void **state)
{
	struct schedule s;
	time_t now = T("2026-06-01T12:00:00Z"), at = 1;

	(void)state;
	parse_ok("1h", &s);
	/* never scanned: due now */
	assert_true(schedule_due(&s, 0, now, 0, &at));
	assert_int_equal(at, now);
	/* scanned 30 minutes ago: due in 30 minutes */
	assert_false(schedule_due(&s, now - 1800, now, 0, &at));
	assert_int_equal(at, now + 1800);
	/* exactly on time */
	assert_true(schedule_due(&s, now - 3600, now, 0, &at));
	/* jitter delays */
	assert_false(schedule_due(&s, now - 3600, now, 20, &at));
	assert_int_equal(at, now + 20);
	assert_true(schedule_due(&s, now - 3600, now + 20, 20, NULL));
	/* negative jitter counts as none */
	assert_true(schedule_due(&s, now - 3600, now, -5, NULL));
	/* down for 5 hours: due once; after that scan the next is an hour later */
	assert_true(schedule_due(&s, now - 5 * 3600, now, 0, &at));
	assert_int_equal(at, now - 4 * 3600);
	assert_false(schedule_due(&s, now + 42, now + 43, 0, &at));
	assert_int_equal(at, now + 42 + 3600);
	/* a last scan in the future (clock skew) counts as now */
	assert_false(schedule_due(&s, now + 86400, now, 0, &at));
	assert_int_equal(at, now + 3600);
	schedule_release(&s);

	parse_ok("0 * * * *", &s);
	/* missed 10 hourly fires while down: due once */
	assert_true(schedule_due(&s, T("2026-06-01T01:30:00Z"), now, 0, &at));
	assert_int_equal(at, T("2026-06-01T02:00:00Z"));
	/* the scan ran from 12:00:00 to 12:03:10: the next fire is 13:00 */
	assert_false(
	    schedule_due(&s, T("2026-06-01T12:03:10Z"), T("2026-06-01T12:30:00Z"), 7, &at));
	assert_int_equal(at, T("2026-06-01T13:00:07Z"));
	assert_false(
	    schedule_due(&s, T("2026-06-01T12:03:10Z"), T("2026-06-01T13:00:06Z"), 7, NULL));
	assert_true(
	    schedule_due(&s, T("2026-06-01T12:03:10Z"), T("2026-06-01T13:00:07Z"), 7, NULL));
	/* a scan longer than the period: the fires it overlapped are not replayed */
	assert_false(
	    schedule_due(&s, T("2026-06-01T14:10:00Z"), T("2026-06-01T14:10:01Z"), 0, &at));
	assert_int_equal(at, T("2026-06-01T15:00:00Z"));
	schedule_release(&s);

	/* a schedule that never fires again is never due */
	parse_ok("0 0 29 2 *", &s);
	assert_false(
	    schedule_due(&s, T("9997-01-01T00:00:00Z"), T("9998-01-01T00:00:00Z"), 0, &at));
	assert_int_equal(at, 0);
	schedule_release(&s);
}

static void test_jitter(void **state)
{
	static const char *const names[] = {"require-labels",
					    "disallow-latest-tag",
					    "restrict-image-registries",
					    "require-probes",
					    "a",
					    "b",
					    "c",
					    "policy-1",
					    "policy-2",
					    "policy-3"};
	struct schedule s;
	time_t seen[SCHEDULE_JITTER_MAX + 1] = {0};
	int distinct = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		time_t j = schedule_jitter(names[i], 3600);

		assert_true(j >= 0 && j <= SCHEDULE_JITTER_MAX);
		assert_int_equal(j, schedule_jitter(names[i], 3600)); /* deterministic */
		assert_true(schedule_jitter(names[i], 100) <= 10);    /* 10% of the period */
		assert_true(schedule_jitter(names[i], 86400 * 365) <= SCHEDULE_JITTER_MAX);
		assert_int_equal(schedule_jitter(names[i], 9), 0);
		assert_int_equal(schedule_jitter(names[i], 0), 0);
		assert_int_equal(schedule_jitter(names[i], -100), 0);
		if (!seen[j]++)
			distinct++;
	}
	assert_true(distinct >= 5); /* spread, not all on the same second */
	for (int i = 0; i < 1000; i++) {
		char name[32];
		time_t j;

		snprintf(name, sizeof(name), "policy-%d", i);
		j = schedule_jitter(name, 600);
		assert_true(j >= 0 && j <= 60);
		j = schedule_jitter(name, 50);
		assert_true(j >= 0 && j <= 5);
	}
	assert_int_equal(schedule_jitter(NULL, 3600), 0);
	/* fixed values: the hash must not change between builds or hosts */
	assert_int_equal(schedule_jitter("", 3600), (time_t)(14695981039346656037ULL % 61));

	parse_ok("*/15 * * * *", &s);
	assert_int_equal(schedule_period(&s), 900);
	schedule_release(&s);
	parse_ok("0 0 1,2 * *", &s);
	assert_int_equal(schedule_period(&s), 86400);
	schedule_release(&s);
	parse_ok("@hourly", &s);
	assert_int_equal(schedule_period(&s), 3600);
	schedule_release(&s);
	parse_ok("* * * * * *", &s);
	assert_int_equal(schedule_period(&s), 1);
	assert_int_equal(schedule_jitter("x", schedule_period(&s)), 0);
	schedule_release(&s);
	parse_ok("2h30m", &s);
	assert_int_equal(schedule_period(&s), 9000);
	schedule_release(&s);
	parse_ok("0 15 10 ? * 6L", &s);
	assert_true(schedule_period(&s) >= 28 * 86400);
	schedule_release(&s);
	assert_int_equal(schedule_period(NULL), 0);
}

/* Independent reference for UTC schedules, on gmtime_r. */
static bool ref_day_match(const struct schedule *s, time_t t)
{
	time_t tomorrow = t + 86400, nextweek = t + 7 * 86400;
	struct tm tm, td, tw;
	bool dom, dow;

	gmtime_r(&t, &tm);
	gmtime_r(&tomorrow, &td);
	gmtime_r(&nextweek, &tw);
	if (!(s->months >> (tm.tm_mon + 1) & 1))
		return false;
	dom = (s->days >> tm.tm_mday & 1) || (s->last_day && td.tm_mday == 1);
	dow = (s->weekdays >> tm.tm_wday & 1) ||
	      ((s->last_weekdays >> tm.tm_wday & 1) && tw.tm_mon != tm.tm_mon);
	if (s->days_any || s->weekdays_any)
		return dom && dow;
	return dom || dow;
}

/* 0 when t matches, else how far it is safe to step. */
static time_t ref_time_skip(const struct schedule *s, time_t t)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	if (!(s->hours >> tm.tm_hour & 1))
		return 3600 - tm.tm_min * 60 - tm.tm_sec;
	if (!(s->minutes >> tm.tm_min & 1))
		return 60 - tm.tm_sec;
	return !(s->seconds >> tm.tm_sec & 1);
}

static time_t ref_next(const struct schedule *s, time_t after)
{
	time_t t = after + 1, limit = after + 9 * 366 * 86400;

	while (t < limit) {
		time_t skip;

		if (!ref_day_match(s, t))
			t = (t / 86400 + 1) * 86400;
		else if ((skip = ref_time_skip(s, t)) != 0)
			t += skip;
		else
			return t;
	}
	return 0;
}

static void test_brute_force(void **state)
{
	static const char *const exprs[] = {
	    "*/7 3-5 * * *",	"0 0 13 * 5",	     "17 1 L * *",   "0 12 * * 2L",
	    "0 0 */3 * 1-2",	"30 6 1,15 */2 *",   "0 22 * * 1-5", "5 4 * * sun",
	    "*/20 10 * * * *",	"0 0 0 ? * 6L",	     "0 30 9 L * ?", "0 0 */5 * * ?",
	    "15 */6 29-31 * *", "0 0 1 JAN,JUL MON", "@weekly",	     "0 23 L 2 *",
	};
	static const char *const starts[] = {"2026-01-30T22:59:59Z", "2027-12-31T23:00:00Z",
					     "2028-02-27T06:00:00Z", "2026-07-15T10:00:00Z"};

	(void)state;
	for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
		struct schedule s;

		parse_ok(exprs[i], &s);
		for (size_t j = 0; j < sizeof(starts) / sizeof(starts[0]); j++) {
			time_t from = T(starts[j]), got = from, want;

			for (int k = 0; k < 6; k++) {
				got = schedule_next(&s, got);
				want = ref_next(&s, from);
				if (got != want) {
					fprintf(stderr, "%s after %s: got %s want %s\n", exprs[i],
						fmt(from), fmt(got), fmt(want));
					fail();
				}
				from = got;
			}
		}
		schedule_release(&s);
	}
}

static size_t rand_below(uint64_t *rng, size_t n)
{
	*rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (size_t)((*rng >> 33) % n);
}

/* Random combinations of field forms against the reference, from random starts. */
static void test_random_against_reference(void **state)
{
	static const char *const sec[] = {"0", "*/15", "5,40", "*", "59", "10-20/5"};
	static const char *const min[] = {"0", "*/7", "1-5", "30", "*", "0,30", "59"};
	static const char *const hour[] = {"*", "0", "23", "9-17/4", "3,15", "*/5"};
	static const char *const dom[] = {"*",	  "?",	   "1",	 "15,L", "L",
					  "*/10", "29-31", "31", "13",	 "29"};
	static const char *const mon[] = {"*", "2", "JAN,JUN", "*/3", "2-3", "DEC", "feb,apr"};
	static const char *const dow5[] = {"*",	  "?",	 "5",	"1-5", "5L",
					   "SUN", "0,6", "*/2", "7",   "1,5L"};
	static const char *const dow6[] = {"?",	 "*",	"6",   "2-6",	 "6L",
					   "1L", "SUN", "1,7", "MON-FRI"};
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	int checked = 0, refused = 0;

#define PICK(a) (a)[rand_below(&rng, sizeof(a) / sizeof((a)[0]))]
	(void)state;
	for (int i = 0; i < 400; i++) {
		struct schedule s;
		struct gv_err err = {0};
		char expr[128];
		bool six = i % 2;
		time_t from;

		if (six)
			snprintf(expr, sizeof(expr), "%s %s %s %s %s %s", PICK(sec), PICK(min),
				 PICK(hour), PICK(dom), PICK(mon), PICK(dow6));
		else
			snprintf(expr, sizeof(expr), "%s %s %s %s %s", PICK(min), PICK(hour),
				 PICK(dom), PICK(mon), PICK(dow5));
		from = T("1990-01-01T00:00:00Z") + (time_t)rand_below(&rng, 110 * 365) * 86400 +
		       (time_t)rand_below(&rng, 86400);
		if (schedule_parse(expr, &s, &err)) {
			/* only never-firing day/month combinations may be refused */
			if (!strstr(err.msg, "never occurs")) {
				fprintf(stderr, "%s: %s\n", expr, err.msg);
				fail();
			}
			refused++;
			continue;
		}
		for (int k = 0; k < 4; k++) {
			time_t got = schedule_next(&s, from), want = ref_next(&s, from);

			if (got != want) {
				fprintf(stderr, "%s after %s: got %s want %s\n", expr, fmt(from),
					fmt(got), fmt(want));
				fail();
			}
			from = got;
			checked++;
		}
		schedule_release(&s);
	}
#undef PICK
	assert_true(checked > 1000);
	assert_true(refused < 100);
}

static void test_time_text(void **state)
{
	struct gv_err err = {0};
	char buf[32];
	time_t t;

	(void)state;
	assert_int_equal(T("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(T("2026-11-20T10:15:00Z"), 1795169700);
	assert_int_equal(T("2026-11-20T11:15:00+01:00"), 1795169700);
	assert_int_equal(T("2026-11-20T05:00:00-05:15"), 1795169700);
	assert_int_equal(T("2026-11-20t10:15:00.999z"), 1795169700);
	assert_int_equal(T("2026-11-20 10:15:00Z"), 1795169700);
	assert_int_equal(T("1969-12-31T23:59:59Z"), -1);
	assert_string_equal(schedule_time_format(1795169700, buf, sizeof(buf)),
			    "2026-11-20T10:15:00Z");
	assert_string_equal(schedule_time_format(-1, buf, sizeof(buf)), "1969-12-31T23:59:59Z");
	assert_string_equal(schedule_time_format(T("2028-02-29T23:59:59Z"), buf, sizeof(buf)),
			    "2028-02-29T23:59:59Z");
	assert_string_equal(schedule_time_format(253402300799, buf, sizeof(buf)),
			    "9999-12-31T23:59:59Z");
	assert_int_equal(schedule_time_parse("2026-11-20", &t, &err), GV_EINVAL);
	assert_string_equal(err.msg, "\"2026-11-20\" is not an RFC 3339 time: expected "
				     "YYYY-MM-DDTHH:MM:SSZ or an offset like +01:00");
	gv_err_clear(&err);
	assert_int_equal(schedule_time_parse("2026-02-29T00:00:00Z", &t, &err), GV_EINVAL);
	assert_string_equal(err.msg,
			    "\"2026-02-29T00:00:00Z\" is not an RFC 3339 time: day out of range");
	gv_err_clear(&err);
	assert_int_equal(schedule_time_parse("2026-13-01T00:00:00Z", &t, &err), GV_EINVAL);
	assert_string_equal(err.msg,
			    "\"2026-13-01T00:00:00Z\" is not an RFC 3339 time: month out of range");
	assert_int_equal(schedule_time_parse("2026-01-01T24:00:00Z", &t, NULL), GV_EINVAL);
	assert_int_equal(schedule_time_parse("2026-01-01T00:00:00", &t, NULL), GV_EINVAL);
	assert_int_equal(schedule_time_parse("2026-01-01T00:00:00Zjunk", &t, NULL), GV_EINVAL);
	assert_int_equal(schedule_time_parse("2026-01-01T00:00:00.Z", &t, NULL), GV_EINVAL);
	assert_int_equal(schedule_time_parse("2026-01-01T00:00:00+1:00", &t, NULL), GV_EINVAL);
	assert_int_equal(schedule_time_parse("", &t, NULL), GV_EINVAL);
	assert_int_equal(schedule_time_parse(NULL, &t, NULL), GV_EINVAL);
	assert_int_equal(T("2028-02-29T00:00:00Z"), 1835395200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_interval),
	    cmocka_unit_test(test_parse_either),
	    cmocka_unit_test(test_field_forms),
	    cmocka_unit_test(test_strictly_after),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_question),
	    cmocka_unit_test(test_last_day),
	    cmocka_unit_test(test_last_weekday),
	    cmocka_unit_test(test_dom_dow_or),
	    cmocka_unit_test(test_descriptors),
	    cmocka_unit_test(test_time_zones),
	    cmocka_unit_test(test_tzif_files),
	    cmocka_unit_test(test_quartz_examples),
	    cmocka_unit_test(test_leap_years),
	    cmocka_unit_test(test_impossible),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_due),
	    cmocka_unit_test(test_jitter),
	    cmocka_unit_test(test_brute_force),
	    cmocka_unit_test(test_random_against_reference),
	    cmocka_unit_test(test_time_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
