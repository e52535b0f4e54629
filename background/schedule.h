/*
 * schedule.h - when the background reconciler scans: Go-style intervals,
 * cron expressions, next-fire computation, due/missed logic and jitter.
 * DESIGN.md "Background: Schedules".
 *
 * Texts accepted
 *
 *   interval   a Go duration > 0 ("2h", "2m30s", "1h30m"): the global
 *              backgroundScanInterval and a policy's spec.scanInterval.
 *              Schedules have one-second resolution: fractions of a second
 *              are dropped and an interval under 1s is refused.
 *
 *   cron       a policy's spec.scanSchedule, fields separated by blanks:
 *              5 fields  minute hour day-of-month month day-of-week
 *                        (standard cron, as Kubernetes CronJob / robfig cron:
 *                        day-of-week 0-7, 0 and 7 = Sunday)
 *              6 fields  second minute hour day-of-month month day-of-week
 *                        (Quartz: day-of-week 1-7, 1 = Sunday)
 *              Each field is a comma list of: `*`, `n`, `a-b`, `*` or `a-b`
 *              or `a` followed by `/step` (`a/step` = `a-max/step`), names
 *              JAN-DEC and SUN-SAT (any case) wherever a number goes,
 *              `?` (= `*`) in day-of-month and day-of-week only, `L` (last
 *              day of the month) in day-of-month, `nL` (last weekday n of the
 *              month, e.g. `5L` in 5 fields and `6L` or `FRIL` in Quartz =
 *              last Friday) in day-of-week. Ranges go upwards (`FRI-MON` is
 *              an error); a step may not exceed the field's span. Quartz's
 *              `W`, `#`, `L-n` and 7th (year) field are refused.
 *              Day matching is robfig's / Vixie cron's: when day-of-month
 *              and day-of-week are both restricted (neither is `*`/`?`, a
 *              stepped `*` /n counts as restricted), a day matches if EITHER
 *              matches; otherwise both must. Quartz demands one of them be
 *              `?`; gavel accepts both forms with the OR rule.
 *              Descriptors: @yearly/@annually, @monthly, @weekly,
 *              @daily/@midnight, @hourly (the 5-field equivalents) and
 *              `@every <duration>` (an interval measured from the previous
 *              fire, like robfig's ConstantDelaySchedule).
 *              A day-of-month/month combination that can never occur
 *              ("0 0 30 2 *") is refused at parse time.
 *
 *   time zone  cron is UTC unless prefixed `CRON_TZ=<zone> ` or `TZ=<zone> `
 *              with an IANA zone name. The zone is read once, at parse time,
 *              from the TZif file $TZDIR/<zone> (default
 *              /usr/share/zoneinfo) with gavel's own TZif v1/v2/v3 reader,
 *              including the POSIX TZ footer rule for times past the last
 *              listed transition; the process TZ is never touched, so
 *              parsing and schedule_next are thread-safe. "UTC" needs no
 *              file. The fields match the zone's wall clock: a schedule
 *              fires at every instant whose local time matches, so a wall
 *              time skipped by a DST change (02:30 on the spring-forward
 *              day in Europe/Berlin) does not fire that day, and one that
 *              occurs twice (02:30 on the fall-back day) fires twice - the
 *              behaviour of Kubernetes CronJob (robfig cron v3).
 *
 * Errors (GV_EINVAL, err->msg) name the field and the reason, e.g.
 *   minute "61": 61 is out of range 0-59
 *   day-of-week "FUN": unknown name "FUN"
 *   expected 5 or 6 fields, got 4
 *   time zone "Mars/Base": no such zone (/usr/share/zoneinfo/Mars/Base)
 * Callers add the policy context ("policy p: spec.scanSchedule: ").
 */
#ifndef GV_BACKGROUND_SCHEDULE_H
#define GV_BACKGROUND_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/gv.h"

/* Years schedule_next searches before it gives up (> the 8 years between Feb 29s around 2100). */
#define SCHEDULE_HORIZON_YEARS 10
/* schedule_jitter never exceeds this many seconds. */
#define SCHEDULE_JITTER_MAX 60

enum schedule_kind {
	SCHEDULE_INTERVAL = 1, /* fires every `interval` seconds after a reference time */
	SCHEDULE_CRON,	       /* fires when the (zone's) wall clock matches the fields */
};

/* A loaded time zone (transition table and rule); opaque. */
struct schedule_zone;

/*
 * A parsed schedule. Fill it with schedule_parse*, read it freely from any
 * number of threads, free it with schedule_release. It owns `zone`, so it
 * must not be copied by assignment (the copies would share the zone).
 *
 * Cron fields are bit sets: bit v set = value v allowed. Day-of-week is
 * normalised to 0-6 with 0 = Sunday whatever the input convention.
 */
struct schedule {
	enum schedule_kind kind;
	time_t interval; /* SCHEDULE_INTERVAL: period in seconds, >= 1 */

	uint64_t seconds;	    /* 0-59 (5-field cron: only 0) */
	uint64_t minutes;	    /* 0-59 */
	uint32_t hours;		    /* 0-23 */
	uint32_t days;		    /* day-of-month 1-31 */
	uint16_t months;	    /* 1-12 */
	uint8_t weekdays;	    /* day-of-week 0-6, 0 = Sunday */
	uint8_t last_weekdays;	    /* `nL`: bit n = the last weekday n of the month */
	bool last_day;		    /* `L` in day-of-month */
	bool days_any;		    /* day-of-month was `*` or `?` */
	bool weekdays_any;	    /* day-of-week was `*` or `?` */
	struct schedule_zone *zone; /* owned; NULL = UTC */
	char zone_name[64];	    /* "" = UTC (no prefix), else the name as written */
};

/*
 * Parses a Go duration interval ("1h30m") into s (kind SCHEDULE_INTERVAL).
 * GV_EINVAL when text is not a Go duration, is <= 0 or is under 1s.
 * s needs no release but schedule_release is harmless.
 */
enum gv_code schedule_parse_interval(const char *text, struct schedule *s, struct gv_err *err);

/*
 * Parses a cron expression or descriptor (optionally CRON_TZ=/TZ=-prefixed)
 * into s: kind SCHEDULE_CRON, or SCHEDULE_INTERVAL for `@every`. GV_EINVAL
 * on a malformed or never-firing expression or an unknown zone, GV_EIO when
 * a zone file exists but cannot be read; s is then left released. On
 * success the caller must schedule_release(s).
 */
enum gv_code schedule_parse_cron(const char *text, struct schedule *s, struct gv_err *err);

/*
 * Either form, for the CLI: a single word that is not a descriptor is an
 * interval, anything else a cron expression. Same results as above.
 */
enum gv_code schedule_parse(const char *text, struct schedule *s, struct gv_err *err);

/* Frees what s owns and zeroes it. NULL and zeroed schedules are fine. */
void schedule_release(struct schedule *s);

/*
 * The first fire time strictly after `after` (seconds since the epoch, UTC).
 * Interval: after + interval. Cron: the first whole second > after that
 * matches. Returns 0 when there is none within SCHEDULE_HORIZON_YEARS, when
 * the result would pass 9999-12-31T23:59:59Z, or when `after` is outside
 * 0001-01-01..9999-12-31 - the search is bounded and never loops forever.
 */
time_t schedule_next(const struct schedule *s, time_t after);

/*
 * The shortest gap in seconds between two fires, for sizing jitter:
 * the interval, or for cron the smallest gap among the first 64 fires after
 * 2001-01-01T00:00:00Z (deterministic, so a policy's jitter is stable).
 * 0 when the schedule never fires.
 */
time_t schedule_period(const struct schedule *s);

/*
 * Deterministic per-policy offset in seconds that spreads policies sharing
 * a schedule: FNV-1a of policy_name mapped into [0, min(period / 10,
 * SCHEDULE_JITTER_MAX)]. 0 for a NULL name or period < 10.
 */
time_t schedule_jitter(const char *policy_name, time_t period);

/*
 * Whether a policy is due for a scan at `now`.
 *   last    end of its last completed scan (seconds, UTC); <= 0 = never
 *           scanned, which is due at once. A `last` in the future (clock
 *           skew between replicas) counts as `now`.
 *   jitter  the policy's schedule_jitter, added to each fire time.
 * The fire time is schedule_next(s, last) + jitter: however many fires were
 * missed while gavel was down, the policy is due once, and after that scan
 * (last = its end) the next fire lies in the future again.
 * *due_at (may be NULL) receives that time (`now` when never scanned; 0
 * when the schedule never fires again, and then the result is false).
 */
bool schedule_due(const struct schedule *s, time_t last, time_t now, time_t jitter, time_t *due_at);

/*
 * Formats t as RFC 3339 UTC, "2026-11-20T10:15:00Z", into buf (size n >= 21
 * for years 0001-9999). Returns buf.
 */
const char *schedule_time_format(time_t t, char *buf, size_t n);

/*
 * Parses an RFC 3339 date-time ("2026-11-20T10:15:00Z",
 * "2026-11-20T11:15:00.5+01:00"; fractions are dropped) into *t.
 * GV_EINVAL with the reason when it is not one.
 */
enum gv_code schedule_time_parse(const char *text, time_t *t, struct gv_err *err);

#endif
