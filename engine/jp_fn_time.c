/*
 * jp_fn_time.c - the time functions (Kyverno's time.go): Go's time.Parse
 * layouts, RFC 3339 output, durations, cron.
 */
#include "engine/jp_fn_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* Time (Go's time.Parse layouts, RFC 3339 output)                      */

/* An instant and the UTC offset it is shown in. */
struct gotime {
	long long sec; /* Unix seconds */
	int nsec;
	int off; /* seconds east of UTC */
};

#define RFC3339		    "2006-01-02T15:04:05Z07:00"
#define SECONDS_TO_YEAR_ONE 62135596800LL /* Go's zero time is 0001-01-01 UTC */

static const char *long_months[] = {"January",	 "February", "March",	 "April",
				    "May",	 "June",     "July",	 "August",
				    "September", "October",  "November", "December"};
static const char *long_days[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
				  "Thursday", "Friday", "Saturday"};

static bool is_leap(long long y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int days_in(int month, long long year)
{
	static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return month == 2 && is_leap(year) ? 29 : d[month - 1];
}

/* Civil time -> Unix seconds, via timegm. */
static bool civil_to_unix(long long year, int month, int day, int hour, int min, int sec,
			  long long *out)
{
	struct tm tm;
	time_t t;

	if (year < -100000000LL || year > 100000000LL)
		return false;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = (int)(year - 1900);
	tm.tm_mon = month - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	errno = 0;
	t = timegm(&tm);
	if (t == (time_t)-1 && errno)
		return false;
	*out = (long long)t;
	return true;
}

/* Unix seconds + offset -> broken-down local civil time, via gmtime_r. */
static bool unix_to_civil(long long sec, int off, struct tm *tm)
{
	time_t t = (time_t)(sec + off);

	return gmtime_r(&t, tm) != NULL;
}

static void format_rfc3339(const struct gotime *t, struct gv_buf *out)
{
	struct tm tm;
	long long year;

	if (!unix_to_civil(t->sec, t->off, &tm)) {
		gv_buf_adds(out, "0001-01-01T00:00:00Z");
		return;
	}
	year = (long long)tm.tm_year + 1900;
	if (year < 0)
		gv_buf_addf(out, "-%04lld", -year);
	else
		gv_buf_addf(out, "%04lld", year);
	gv_buf_addf(out, "-%02d-%02dT%02d:%02d:%02d", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
	if (t->off == 0) {
		gv_buf_addc(out, 'Z');
	} else {
		int a = t->off < 0 ? -t->off : t->off;
		gv_buf_addf(out, "%c%02d:%02d", t->off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
	}
}

enum std {
	STD_NONE,
	STD_LONG_MONTH,
	STD_MONTH,
	STD_NUM_MONTH,
	STD_ZERO_MONTH,
	STD_LONG_WEEKDAY,
	STD_WEEKDAY,
	STD_DAY,
	STD_UNDER_DAY,
	STD_ZERO_DAY,
	STD_UNDER_YEARDAY,
	STD_ZERO_YEARDAY,
	STD_HOUR,
	STD_HOUR12,
	STD_ZERO_HOUR12,
	STD_MINUTE,
	STD_ZERO_MINUTE,
	STD_SECOND,
	STD_ZERO_SECOND,
	STD_LONG_YEAR,
	STD_YEAR,
	STD_PM,
	STD_PM_LOWER,
	STD_TZ,
	STD_ISO_TZ, /* Z0700 family: 'Z' or a numeric offset */
	STD_NUM_TZ, /* -0700 family */
	STD_FRAC0,  /* .000 */
	STD_FRAC9,  /* .999 */
};

struct chunk {
	enum std std;
	int tz_hours_only, tz_colon, tz_seconds; /* zone shapes */
	int frac_digits;
	size_t len; /* length in the layout */
};

static bool starts_lower(const char *s)
{
	return *s >= 'a' && *s <= 'z';
}

/* Go's nextStdChunk for the chunk starting at s (STD_NONE: a literal byte). */
static void std_at(const char *s, struct chunk *c)
{
	memset(c, 0, sizeof(*c));
	c->len = 1;
#define IS(lit) (strncmp(s, lit, sizeof(lit) - 1) == 0)
#define SET(st, lit)                                                                               \
	do {                                                                                       \
		c->std = st;                                                                       \
		c->len = sizeof(lit) - 1;                                                          \
		return;                                                                            \
	} while (0)
	switch (*s) {
	case 'J':
		if (IS("Jan")) {
			if (IS("January"))
				SET(STD_LONG_MONTH, "January");
			if (!starts_lower(s + 3))
				SET(STD_MONTH, "Jan");
		}
		break;
	case 'M':
		if (IS("Mon")) {
			if (IS("Monday"))
				SET(STD_LONG_WEEKDAY, "Monday");
			if (!starts_lower(s + 3))
				SET(STD_WEEKDAY, "Mon");
		}
		if (IS("MST"))
			SET(STD_TZ, "MST");
		break;
	case '0':
		if (s[1] >= '1' && s[1] <= '6') {
			static const enum std t[] = {STD_ZERO_MONTH,  STD_ZERO_DAY,
						     STD_ZERO_HOUR12, STD_ZERO_MINUTE,
						     STD_ZERO_SECOND, STD_YEAR};
			c->std = t[s[1] - '1'];
			c->len = 2;
			return;
		}
		if (IS("002"))
			SET(STD_ZERO_YEARDAY, "002");
		break;
	case '1':
		if (IS("15"))
			SET(STD_HOUR, "15");
		SET(STD_NUM_MONTH, "1");
	case '2':
		if (IS("2006"))
			SET(STD_LONG_YEAR, "2006");
		SET(STD_DAY, "2");
	case '_':
		if (IS("_2")) {
			if (IS("_2006")) /* a literal _ then the year */
				break;
			SET(STD_UNDER_DAY, "_2");
		}
		if (IS("__2"))
			SET(STD_UNDER_YEARDAY, "__2");
		break;
	case '3':
		SET(STD_HOUR12, "3");
	case '4':
		SET(STD_MINUTE, "4");
	case '5':
		SET(STD_SECOND, "5");
	case 'P':
		if (IS("PM"))
			SET(STD_PM, "PM");
		break;
	case 'p':
		if (IS("pm"))
			SET(STD_PM_LOWER, "pm");
		break;
	case '-':
	case 'Z': {
		bool iso = *s == 'Z';
		const char *z = s + 1;

		c->std = iso ? STD_ISO_TZ : STD_NUM_TZ;
		if (strncmp(z, "07:00:00", 8) == 0) {
			c->tz_colon = c->tz_seconds = 1;
			c->len = 9;
		} else if (strncmp(z, "070000", 6) == 0) {
			c->tz_seconds = 1;
			c->len = 7;
		} else if (strncmp(z, "07:00", 5) == 0) {
			c->tz_colon = 1;
			c->len = 6;
		} else if (strncmp(z, "0700", 4) == 0) {
			c->len = 5;
		} else if (strncmp(z, "07", 2) == 0) {
			c->tz_hours_only = 1;
			c->len = 3;
		} else {
			c->std = STD_NONE;
			c->len = 1;
		}
		return;
	}
	case '.':
	case ',':
		if (s[1] == '0' || s[1] == '9') {
			char ch = s[1];
			size_t j = 1;

			while (s[j] == ch)
				j++;
			if (!isdigit((unsigned char)s[j])) {
				c->std = ch == '0' ? STD_FRAC0 : STD_FRAC9;
				c->frac_digits = (int)j - 1;
				c->len = j;
				return;
			}
		}
		break;
	default:
		break;
	}
#undef IS
#undef SET
}

/* getnum: one or two digits (exactly two when fixed). */
static bool getnum(const char **v, bool fixed, int *out)
{
	const char *s = *v;

	if (!isdigit((unsigned char)s[0]))
		return false;
	if (!isdigit((unsigned char)s[1])) {
		if (fixed)
			return false;
		*out = s[0] - '0';
		*v = s + 1;
		return true;
	}
	*out = (s[0] - '0') * 10 + (s[1] - '0');
	*v = s + 2;
	return true;
}

static bool getnum3(const char **v, bool fixed, int *out)
{
	const char *s = *v;
	int n = 0, i;

	for (i = 0; i < 3 && isdigit((unsigned char)s[i]); i++)
		n = n * 10 + (s[i] - '0');
	if (i == 0 || (fixed && i != 3))
		return false;
	*out = n;
	*v = s + i;
	return true;
}

static int lookup_name(const char **v, const char *const *names, int n, size_t len)
{
	for (int i = 0; i < n; i++) {
		size_t m = len ? len : strlen(names[i]);
		if (strncasecmp(*v, names[i], m) == 0) {
			*v += m;
			return i;
		}
	}
	return -1;
}

/* Fractional seconds ".ddd" (n chars including the separator) as nanoseconds. */
static bool parse_nanos(const char *s, size_t n, int *out)
{
	int ns = 0;
	size_t i;

	if (s[0] != '.' && s[0] != ',')
		return false;
	if (n > 10)
		n = 10;
	for (i = 1; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		ns = ns * 10 + (s[i] - '0');
	}
	for (; i < 10; i++)
		ns *= 10;
	*out = ns;
	return true;
}

/*
 * Go's time.Parse(layout, value) in a UTC process: zone abbreviations
 * other than UTC get offset 0 ("GMT+3" style gets +3h).
 */
static bool go_time_parse(const char *layout, const char *value, struct gotime *t, char *why,
			  size_t whyn)
{
	long long year = 0;
	int month = -1, day = -1, yday = -1, hour = 0, min = 0, sec = 0, nsec = 0, off = 0;
	bool pm_set = false, am_set = false, have_zone = false;
	const char *l = layout, *v = value;
	struct chunk c;

	while (*l) {
		std_at(l, &c);
		if (c.std == STD_NONE) {
			/* literal text; a space matches one or more spaces */
			if (*l == ' ') {
				if (*v != ' ')
					goto bad;
				while (*l == ' ')
					l++;
				while (*v == ' ')
					v++;
				continue;
			}
			if (*v != *l)
				goto bad;
			l++;
			v++;
			continue;
		}
		l += c.len;
		switch (c.std) {
		case STD_YEAR: {
			int y;
			if (!isdigit((unsigned char)v[0]) || !isdigit((unsigned char)v[1]))
				goto bad;
			y = (v[0] - '0') * 10 + (v[1] - '0');
			year = y >= 69 ? 1900 + y : 2000 + y;
			v += 2;
			break;
		}
		case STD_LONG_YEAR:
			for (int i = 0; i < 4; i++)
				if (!isdigit((unsigned char)v[i]))
					goto bad;
			year = (v[0] - '0') * 1000 + (v[1] - '0') * 100 + (v[2] - '0') * 10 +
			       (v[3] - '0');
			v += 4;
			break;
		case STD_MONTH:
			month = lookup_name(&v, long_months, 12, 3) + 1;
			if (month == 0)
				goto bad;
			break;
		case STD_LONG_MONTH:
			month = lookup_name(&v, long_months, 12, 0) + 1;
			if (month == 0)
				goto bad;
			break;
		case STD_NUM_MONTH:
		case STD_ZERO_MONTH:
			if (!getnum(&v, c.std == STD_ZERO_MONTH, &month) || month < 1 || month > 12)
				goto range;
			break;
		case STD_WEEKDAY:
			if (lookup_name(&v, long_days, 7, 3) < 0)
				goto bad;
			break;
		case STD_LONG_WEEKDAY:
			if (lookup_name(&v, long_days, 7, 0) < 0)
				goto bad;
			break;
		case STD_DAY:
		case STD_UNDER_DAY:
		case STD_ZERO_DAY:
			if (c.std == STD_UNDER_DAY && *v == ' ')
				v++;
			if (!getnum(&v, c.std == STD_ZERO_DAY, &day))
				goto bad;
			break;
		case STD_UNDER_YEARDAY:
		case STD_ZERO_YEARDAY:
			for (int i = 0; i < 2 && c.std == STD_UNDER_YEARDAY && *v == ' '; i++)
				v++;
			if (!getnum3(&v, c.std == STD_ZERO_YEARDAY, &yday) || yday < 1 ||
			    yday > 366)
				goto range;
			break;
		case STD_HOUR:
			if (!getnum(&v, false, &hour) || hour > 23)
				goto range;
			break;
		case STD_HOUR12:
		case STD_ZERO_HOUR12:
			if (!getnum(&v, c.std == STD_ZERO_HOUR12, &hour) || hour > 12)
				goto range;
			break;
		case STD_MINUTE:
		case STD_ZERO_MINUTE:
			if (!getnum(&v, c.std == STD_ZERO_MINUTE, &min) || min > 59)
				goto range;
			break;
		case STD_SECOND:
		case STD_ZERO_SECOND: {
			struct chunk next;

			if (!getnum(&v, c.std == STD_ZERO_SECOND, &sec) || sec > 59)
				goto range;
			/* fractional seconds the layout does not mention are accepted */
			std_at(l, &next);
			if ((v[0] == '.' || v[0] == ',') && isdigit((unsigned char)v[1]) &&
			    next.std != STD_FRAC0 && next.std != STD_FRAC9) {
				size_t n = 2;
				while (isdigit((unsigned char)v[n]))
					n++;
				if (!parse_nanos(v, n, &nsec))
					goto bad;
				v += n;
			}
			break;
		}
		case STD_PM:
		case STD_PM_LOWER: {
			const char *pm = c.std == STD_PM ? "PM" : "pm",
				   *am = c.std == STD_PM ? "AM" : "am";
			if (strncmp(v, pm, 2) == 0)
				pm_set = true;
			else if (strncmp(v, am, 2) == 0)
				am_set = true;
			else
				goto bad;
			v += 2;
			break;
		}
		case STD_ISO_TZ:
		case STD_NUM_TZ: {
			int sign, hh, mm = 0, ss = 0;

			have_zone = true;
			if (c.std == STD_ISO_TZ && *v == 'Z') {
				v++;
				off = 0;
				break;
			}
			if (*v != '+' && *v != '-')
				goto bad;
			sign = *v == '-' ? -1 : 1;
			v++;
			if (!getnum(&v, true, &hh))
				goto bad;
			if (!c.tz_hours_only) {
				if (c.tz_colon && *v++ != ':')
					goto bad;
				if (!getnum(&v, true, &mm))
					goto bad;
				if (c.tz_seconds) {
					if (c.tz_colon && *v++ != ':')
						goto bad;
					if (!getnum(&v, true, &ss))
						goto bad;
				}
			}
			if (hh > 24 || mm > 60 || ss > 60)
				goto range;
			off = sign * (hh * 3600 + mm * 60 + ss);
			break;
		}
		case STD_TZ: {
			size_t n = 0;

			have_zone = true;
			if (strncmp(v, "UTC", 3) == 0) {
				v += 3;
				off = 0;
				break;
			}
			if (strncmp(v, "GMT", 3) == 0) {
				const char *p = v + 3;
				int sign = 1, h = 0;

				off = 0;
				if (*p == '+' || *p == '-') {
					sign = *p == '-' ? -1 : 1;
					p++;
					while (isdigit((unsigned char)*p) && h < 100)
						h = h * 10 + (*p++ - '0');
					off = sign * h * 3600;
				}
				v = p;
				break;
			}
			/* Go's parseTimeZone: 3 upper-case letters, 4 ending in T (or
			 * WITA), 5 ending in T, or the special ChST and MeST */
			if (strncmp(v, "ChST", 4) == 0 || strncmp(v, "MeST", 4) == 0) {
				v += 4;
				off = 0;
				break;
			}
			while (v[n] >= 'A' && v[n] <= 'Z')
				n++;
			if (!(n == 3 || (n == 4 && (v[3] == 'T' || strncmp(v, "WITA", 4) == 0)) ||
			      (n == 5 && v[4] == 'T')))
				goto bad;
			v += n;
			off = 0;
			break;
		}
		case STD_FRAC0: {
			size_t n = (size_t)c.frac_digits + 1;
			if (strlen(v) < n || !parse_nanos(v, n, &nsec))
				goto bad;
			v += n;
			break;
		}
		case STD_FRAC9: {
			size_t n = 1;
			if ((v[0] != '.' && v[0] != ',') || !isdigit((unsigned char)v[1]))
				break; /* omitted */
			while (isdigit((unsigned char)v[n]))
				n++;
			if (!parse_nanos(v, n, &nsec))
				goto bad;
			v += n;
			break;
		}
		default:
			break;
		}
	}
	if (*v) {
		snprintf(why, whyn, "extra text: \"%s\"", v);
		return false;
	}
	if (pm_set && hour < 12)
		hour += 12;
	else if (am_set && hour == 12)
		hour = 0;
	if (yday >= 0) {
		int m = 1, d = yday;

		if (yday > (is_leap(year) ? 366 : 365))
			goto range;
		while (d > days_in(m, year)) {
			d -= days_in(m, year);
			m++;
		}
		if ((month >= 0 && month != m) || (day >= 0 && day != d))
			goto range;
		month = m;
		day = d;
	} else {
		if (month < 0)
			month = 1;
		if (day < 0)
			day = 1;
	}
	if (day < 1 || day > days_in(month, year)) {
		snprintf(why, whyn, "day out of range");
		return false;
	}
	if (!civil_to_unix(year, month, day, hour, min, sec, &t->sec))
		goto range;
	t->sec -= off;
	t->nsec = nsec;
	t->off = have_zone ? off : 0;
	return true;
bad:
	snprintf(why, whyn, "cannot parse \"%s\" as \"%s\"", value, layout);
	return false;
range:
	snprintf(why, whyn, "value out of range");
	return false;
}

/* Parses args[i] with layout (NULL = RFC 3339), failing with Kyverno's message. */
static int time_arg(struct jp_ev *ev, const char *fname, struct jp_arg *args, int i,
		    const char *layout, struct gotime *t)
{
	char why[300];

	if (!go_time_parse(layout ? layout : RFC3339, STR(i), t, why, sizeof(why)))
		return jp_kfail(ev, JP_ERR_RUNTIME, fname, "parsing time \"%s\": %s", STR(i), why);
	return 0;
}

static int duration_arg(struct jp_ev *ev, const char *fname, struct jp_arg *args, int i,
			long long *ns)
{
	long double d;

	if (!value_parse_duration(STR(i), &d))
		return jp_kfail(ev, JP_ERR_RUNTIME, fname, "time: invalid duration \"%s\"", STR(i));
	*ns = (long long)d;
	return 0;
}

static void time_now(const struct jp_ev *ev, struct gotime *t)
{
	struct timespec ts;

	ev->env->now(ev->env->ud, &ts);
	t->sec = (long long)ts.tv_sec;
	t->nsec = (int)ts.tv_nsec;
	t->off = 0;
}

static int out_time(const struct gotime *t, json_t **out)
{
	struct gv_buf b = {0};

	format_rfc3339(t, &b);
	*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return 0;
}

/* t2 - t1 in nanoseconds, saturated to int64 (Go's Time.Sub). */
static long double time_sub(const struct gotime *t2, const struct gotime *t1)
{
	long double d = ((long double)t2->sec - (long double)t1->sec) * 1e9L +
			(long double)(t2->nsec - t1->nsec);

	if (d > (long double)INT64_MAX)
		return (long double)INT64_MAX;
	if (d < (long double)INT64_MIN)
		return (long double)INT64_MIN;
	return d;
}

static void time_add_ns(struct gotime *t, long long ns)
{
	long long s = ns / 1000000000LL, n = ns % 1000000000LL;

	t->sec += s;
	t->nsec += (int)n;
	if (t->nsec >= 1000000000) {
		t->nsec -= 1000000000;
		t->sec++;
	} else if (t->nsec < 0) {
		t->nsec += 1000000000;
		t->sec--;
	}
}

static int time_cmp(const struct gotime *a, const struct gotime *b)
{
	if (a->sec != b->sec)
		return a->sec < b->sec ? -1 : 1;
	return a->nsec < b->nsec ? -1 : a->nsec > b->nsec;
}

int jp_fn_time_now(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	struct gotime t;

	time_now(ev, &t);
	return out_time(&t, out);
}

int jp_fn_time_now_utc(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	return jp_fn_time_now(ev, call, args, nargs, out);
}

int jp_fn_time_since(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	const char *layout = SLEN(0) ? STR(0) : NULL;
	struct gotime t1, t2;
	int rc;

	rc = time_arg(ev, "time_since", args, 1, layout, &t1);
	if (rc)
		return rc;
	if (SLEN(2)) {
		rc = time_arg(ev, "time_since", args, 2, layout, &t2);
		if (rc)
			return rc;
	} else {
		time_now(ev, &t2);
	}
	return jp_out_duration(time_sub(&t2, &t1), out);
}

int jp_fn_time_add(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	struct gotime t;
	long long ns;
	int rc;

	rc = time_arg(ev, "time_add", args, 0, NULL, &t);
	if (!rc)
		rc = duration_arg(ev, "time_add", args, 1, &ns);
	if (rc)
		return rc;
	time_add_ns(&t, ns);
	return out_time(&t, out);
}

/* The layout "1136239445" (the reference time in Unix seconds) reads epoch seconds. */
int jp_fn_time_parse(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	struct gotime t;
	long long s;
	int rc;

	if (strcmp(STR(0), "1136239445") == 0) {
		if (!value_parse_go_int(STR(1), &s))
			return jp_kfail(ev, JP_ERR_RUNTIME, "time_parse",
					"strconv.ParseInt: parsing \"%s\": invalid syntax", STR(1));
		t.sec = s;
		t.nsec = 0;
		t.off = 0;
		return out_time(&t, out);
	}
	rc = time_arg(ev, "time_parse", args, 1, STR(0), &t);
	if (rc)
		return rc;
	return out_time(&t, out);
}

int jp_fn_time_utc(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	struct gotime t;
	int rc = time_arg(ev, "time_utc", args, 0, NULL, &t);

	if (rc)
		return rc;
	t.off = 0;
	return out_time(&t, out);
}

int jp_fn_time_diff(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	struct gotime t1, t2;
	int rc;

	rc = time_arg(ev, "time_diff", args, 0, NULL, &t1);
	if (!rc)
		rc = time_arg(ev, "time_diff", args, 1, NULL, &t2);
	if (rc)
		return rc;
	return jp_out_duration(time_sub(&t2, &t1), out);
}

static int time_compare(struct jp_ev *ev, const char *fname, struct jp_arg *args, int want,
			json_t **out)
{
	struct gotime t1, t2;
	int rc;

	rc = time_arg(ev, fname, args, 0, NULL, &t1);
	if (!rc)
		rc = time_arg(ev, fname, args, 1, NULL, &t2);
	if (rc)
		return rc;
	*out = json_boolean(time_cmp(&t1, &t2) == want);
	return 0;
}

int jp_fn_time_before(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	return time_compare(ev, "time_before", args, -1, out);
}

int jp_fn_time_after(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return time_compare(ev, "time_after", args, 1, out);
}

int jp_fn_time_between(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	struct gotime t, a, b;
	int rc;

	rc = time_arg(ev, "time_between", args, 0, NULL, &t);
	if (!rc)
		rc = time_arg(ev, "time_between", args, 1, NULL, &a);
	if (!rc)
		rc = time_arg(ev, "time_between", args, 2, NULL, &b);
	if (rc)
		return rc;
	*out = json_boolean(time_cmp(&t, &a) > 0 && time_cmp(&t, &b) < 0);
	return 0;
}

/* Go's Time.Truncate: rounds down since the zero time (0001-01-01), keeps the offset. */
int jp_fn_time_truncate(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	struct gotime t;
	long long d;
	__int128 abs_ns, r;
	int rc;

	rc = time_arg(ev, "time_truncate", args, 0, NULL, &t);
	if (!rc)
		rc = duration_arg(ev, "time_truncate", args, 1, &d);
	if (rc)
		return rc;
	if (d > 0) {
		abs_ns = ((__int128)t.sec + SECONDS_TO_YEAR_ONE) * 1000000000 + t.nsec;
		r = abs_ns % d;
		if (r < 0)
			r += d;
		abs_ns -= r;
		t.sec = (long long)(abs_ns / 1000000000) - SECONDS_TO_YEAR_ONE;
		t.nsec = (int)(abs_ns % 1000000000);
		if (t.nsec < 0) {
			t.nsec += 1000000000;
			t.sec--;
		}
	}
	return out_time(&t, out);
}

/* "minute hour day month weekday" of the time in UTC. */
int jp_fn_time_to_cron(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	struct gotime t;
	struct tm tm;
	char buf[64];
	int rc = time_arg(ev, "time_to_cron", args, 0, NULL, &t);

	if (rc)
		return rc;
	if (!unix_to_civil(t.sec, 0, &tm))
		return jp_kfail(ev, JP_ERR_RUNTIME, "time_to_cron", "time out of range");
	snprintf(buf, sizeof(buf), "%d %d %d %d %d", tm.tm_min, tm.tm_hour, tm.tm_mday,
		 tm.tm_mon + 1, tm.tm_wday);
	*out = json_string(buf);
	return 0;
}
