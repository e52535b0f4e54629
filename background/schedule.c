/*
 * schedule.c - intervals, cron expressions and time zones for the
 * background reconciler. See schedule.h for the accepted texts.
 *
 * Times are int64 seconds. A "wall" time is the zone's local clock reading
 * written as if it were UTC seconds, so calendar arithmetic on it is plain
 * proleptic-Gregorian arithmetic (Howard Hinnant's days/civil algorithms),
 * never the C library's (no TZ, no mktime, no locale state).
 */
#include "background/schedule.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/value.h"
#include "common/hash.h"
#include "common/banned.h"

#define DAY_S 86400
/* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z */
#define TIME_MIN      (-62135596800LL)
#define TIME_MAX      253402300799LL
#define HORIZON_S     ((int64_t)SCHEDULE_HORIZON_YEARS * 366 * DAY_S)
#define NONE	      INT64_MIN
#define ZONE_FILE_MAX (1 << 20)

/* ---- calendar ------------------------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
	static const unsigned char n[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : n[m];
}

/* 0 = Sunday. 1970-01-01 was a Thursday. */
static unsigned weekday(int64_t days)
{
	return (unsigned)(((days % 7) + 11) % 7);
}

/* ---- time zones: TZif files and POSIX TZ rules ---------------------------- */

/*
 * When a POSIX TZ rule switches: 'J' Julian n (1-365, Feb 29 never
 * counted), 'D' zero-based day n (0-365), 'M' month.week.day.
 */
struct tz_date {
	char kind;
	int n, m, w, d;
	int32_t time; /* seconds after local midnight; may be < 0 or >= 24h (TZif v3) */
};

struct schedule_zone {
	size_t n;	    /* transitions */
	int64_t *at;	    /* owned; UTC instants, ascending */
	int32_t *off;	    /* owned; UTC offset (s east) from at[i] on */
	int32_t off_before; /* before at[0] (time type 0), or always when n == 0 and no rule */
	bool has_rule;	    /* the footer rule applies from at[n-1] on */
	bool has_dst;	    /* the rule has daylight saving time */
	int32_t std_off, dst_off;
	struct tz_date start, end; /* DST begins (standard local time), ends (DST local time) */
};

static void zone_free(struct schedule_zone *z)
{
	if (!z)
		return;
	free(z->at);
	free(z->off);
	free(z);
}

static int64_t tz_date_day(const struct tz_date *r, int64_t y)
{
	int64_t jan1 = days_from_civil(y, 1, 1), d0;
	unsigned mdays, day;

	switch (r->kind) {
	case 'J':
		return jan1 + r->n - 1 + (is_leap(y) && r->n >= 60 ? 1 : 0);
	case 'D':
		return jan1 + r->n;
	default:
		d0 = days_from_civil(y, (unsigned)r->m, 1);
		mdays = days_in_month(y, (unsigned)r->m);
		day = 1 + (unsigned)((r->d - (int)weekday(d0) + 7) % 7) + (unsigned)(r->w - 1) * 7;
		while (day > mdays)
			day -= 7;
		return d0 + day - 1;
	}
}

/* Offset at t from the footer rule; *until = the next change after t. */
static int32_t rule_lookup(const struct schedule_zone *z, int64_t t, int64_t *until)
{
	struct {
		int64_t at;
		int32_t off;
	} ev[6], tmp;
	int64_t y;
	unsigned m, d;
	int32_t off = z->std_off;
	size_t n = 0, i, j;

	*until = INT64_MAX;
	if (!z->has_dst)
		return z->std_off;
	civil_from_days(floor_div(t + z->std_off, DAY_S), &y, &m, &d);
	for (int64_t yy = y - 1; yy <= y + 1; yy++) {
		ev[n].at = tz_date_day(&z->start, yy) * DAY_S + z->start.time - z->std_off;
		ev[n++].off = z->dst_off;
		ev[n].at = tz_date_day(&z->end, yy) * DAY_S + z->end.time - z->dst_off;
		ev[n++].off = z->std_off;
	}
	/* insertion sort, stable: on a tie the later year's event wins */
	for (i = 1; i < n; i++) {
		tmp = ev[i];
		for (j = i; j > 0 && ev[j - 1].at > tmp.at; j--)
			ev[j] = ev[j - 1];
		ev[j] = tmp;
	}
	for (i = 0; i < n; i++) {
		if (ev[i].at <= t) {
			off = ev[i].off;
		} else {
			*until = ev[i].at;
			break;
		}
	}
	return off;
}

/* UTC offset (seconds east) in effect at instant t; *until = the next instant it may change. */
static int32_t zone_lookup(const struct schedule_zone *z, int64_t t, int64_t *until)
{
	size_t lo, hi;

	*until = INT64_MAX;
	if (!z)
		return 0;
	if (z->n == 0 || t >= z->at[z->n - 1]) {
		if (z->has_rule)
			return rule_lookup(z, t, until);
		return z->n ? z->off[z->n - 1] : z->off_before;
	}
	if (t < z->at[0]) {
		*until = z->at[0];
		return z->off_before;
	}
	/* at[lo] <= t < at[hi] */
	lo = 0;
	hi = z->n - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->at[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	*until = z->at[hi];
	return z->off[lo];
}

/* POSIX TZ pieces. Each returns the position after what it read, or NULL. */
static const char *tz_name(const char *p)
{
	const char *s = p;

	if (*p == '<') {
		while (*p && *p != '>')
			p++;
		return *p == '>' && p - s > 1 ? p + 1 : NULL;
	}
	while (isalpha((unsigned char)*p))
		p++;
	return p - s >= 3 ? p : NULL;
}

/* [+-]h[hh][:mm[:ss]] into seconds; max_h bounds the hours. */
static const char *tz_hms(const char *p, int max_h, int32_t *out)
{
	int sign = 1, part[3] = {0, 0, 0}, i;

	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	for (i = 0; i < 3; i++) {
		int v = 0, nd = 0;

		if (i > 0) {
			if (*p != ':')
				break;
			p++;
		}
		while (isdigit((unsigned char)*p) && nd < 3) {
			v = v * 10 + (*p++ - '0');
			nd++;
		}
		if (nd == 0 || (i > 0 && (nd != 2 || v > 59)))
			return NULL;
		part[i] = v;
	}
	if (part[0] > max_h)
		return NULL;
	*out = sign * (part[0] * 3600 + part[1] * 60 + part[2]);
	return p;
}

static const char *tz_num(const char *p, int lo, int hi, int *out)
{
	int v = 0, nd = 0;

	while (isdigit((unsigned char)*p) && nd < 4) {
		v = v * 10 + (*p++ - '0');
		nd++;
	}
	if (nd == 0 || v < lo || v > hi)
		return NULL;
	*out = v;
	return p;
}

static const char *tz_rule_date(const char *p, struct tz_date *r)
{
	memset(r, 0, sizeof(*r));
	r->time = 2 * 3600;
	if (*p == 'J') {
		r->kind = 'J';
		p = tz_num(p + 1, 1, 365, &r->n);
	} else if (*p == 'M') {
		r->kind = 'M';
		p = tz_num(p + 1, 1, 12, &r->m);
		if (p && *p == '.')
			p = tz_num(p + 1, 1, 5, &r->w);
		else
			p = NULL;
		if (p && *p == '.')
			p = tz_num(p + 1, 0, 6, &r->d);
		else
			p = NULL;
	} else {
		r->kind = 'D';
		p = tz_num(p, 0, 365, &r->n);
	}
	if (p && *p == '/')
		p = tz_hms(p + 1, 167, &r->time);
	return p;
}

/* Parses a TZif footer ("CET-1CEST,M3.5.0,M10.5.0/3"); "" means no rule. */
static bool tz_footer(const char *p, struct schedule_zone *z)
{
	int32_t v;

	if (!*p)
		return true;
	p = tz_name(p);
	if (!p || !(p = tz_hms(p, 24, &v)))
		return false;
	z->std_off = -v; /* POSIX offsets count west */
	z->has_rule = true;
	if (!*p)
		return true;
	p = tz_name(p);
	if (!p)
		return false;
	z->dst_off = z->std_off + 3600;
	if (*p && *p != ',') {
		if (!(p = tz_hms(p, 24, &v)))
			return false;
		z->dst_off = -v;
	}
	/* TZif footers always spell the rule out; POSIX's implicit default is not guessed */
	if (*p != ',' || !(p = tz_rule_date(p + 1, &z->start)) || *p != ',' ||
	    !(p = tz_rule_date(p + 1, &z->end)) || *p)
		return false;
	z->has_dst = true;
	return true;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/*
 * Reads a TZif file (RFC 8536, versions 1-4): the 64-bit block when there
 * is one, else the 32-bit block; then the footer rule.
 */
static enum gv_code tzif_parse(const unsigned char *p, size_t len, struct schedule_zone *z,
			       const char **why)
{
	size_t cnt[6], tsize = 4, block, off = 0, i, ntypes, rest;
	const unsigned char *times, *idx, *types;
	int32_t *typeoff = NULL;
	enum gv_code rc = GV_EINVAL;
	int version;

	*why = "not a TZif file";
	if (len < 44 || memcmp(p, "TZif", 4) != 0)
		goto out;
	version = p[4];
	for (;;) {
		if (len - off < 44 || memcmp(p + off, "TZif", 4) != 0)
			goto out;
		for (i = 0; i < 6; i++) {
			cnt[i] = be32(p + off + 20 + 4 * i);
			if (cnt[i] > 100000) {
				*why = "implausible TZif counts";
				goto out;
			}
		}
		/* isutcnt isstdcnt leapcnt timecnt typecnt charcnt */
		block = cnt[3] * (tsize + 1) + cnt[4] * 6 + cnt[5] + cnt[2] * (tsize + 4) + cnt[1] +
			cnt[0];
		if (len - off - 44 < block) {
			*why = "truncated TZif file";
			goto out;
		}
		if (tsize == 8 || version < '2')
			break;
		off += 44 + block;
		tsize = 8;
	}
	if (cnt[2] > 0) {
		*why = "zones with leap seconds (right/...) are not supported";
		goto out;
	}
	ntypes = cnt[4];
	if (ntypes == 0) {
		*why = "TZif file without time types";
		goto out;
	}
	times = p + off + 44;
	idx = times + cnt[3] * tsize;
	types = idx + cnt[3];
	typeoff = gv_xcalloc(ntypes, sizeof(*typeoff));
	for (i = 0; i < ntypes; i++) {
		int32_t o = (int32_t)be32(types + 6 * i);

		if (o < -26 * 3600 || o > 26 * 3600) {
			*why = "implausible UTC offset in TZif file";
			goto out;
		}
		typeoff[i] = o;
	}
	z->off_before = typeoff[0];
	z->n = cnt[3];
	z->at = gv_xcalloc(z->n ? z->n : 1, sizeof(*z->at));
	z->off = gv_xcalloc(z->n ? z->n : 1, sizeof(*z->off));
	for (i = 0; i < z->n; i++) {
		z->at[i] = tsize == 8 ? be64(times + 8 * i) : (int32_t)be32(times + 4 * i);
		if (idx[i] >= ntypes || (i > 0 && z->at[i] <= z->at[i - 1])) {
			*why = "corrupt TZif transitions";
			goto out;
		}
		z->off[i] = typeoff[idx[i]];
	}
	if (tsize == 8) {
		const char *foot = (const char *)p + off + 44 + block, *nl;
		char rule[128];

		rest = len - off - 44 - block;
		if (rest < 2 || foot[0] != '\n' || !(nl = memchr(foot + 1, '\n', rest - 1)) ||
		    (size_t)(nl - foot - 1) >= sizeof(rule)) {
			*why = "bad TZif footer";
			goto out;
		}
		memcpy(rule, foot + 1, (size_t)(nl - foot - 1));
		rule[nl - foot - 1] = '\0';
		if (!tz_footer(rule, z)) {
			*why = "unsupported TZ rule in TZif footer";
			goto out;
		}
	}
	rc = GV_OK;
out:
	free(typeoff);
	return rc;
}

static bool zone_name_ok(const char *name)
{
	const char *p;

	if (!*name || *name == '/' || *name == '.' || strlen(name) >= 64)
		return false;
	for (p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("/_+-.", *p))
			return false;
	return !strstr(name, "..") && !strstr(name, "/.") && !strstr(name, "//");
}

static enum gv_code zone_load(const char *name, struct schedule_zone **out, struct gv_err *err)
{
	const char *dir = getenv("TZDIR"), *why = NULL;
	struct schedule_zone *z = NULL;
	unsigned char *data = NULL;
	enum gv_code rc = GV_OK;
	char path[4096];
	struct stat st;
	FILE *f = NULL;
	size_t len;

	*out = NULL;
	if (!zone_name_ok(name))
		return gv_err_set(err, GV_EINVAL, "time zone \"%s\": not an IANA zone name", name);
	if (!dir || !*dir)
		dir = "/usr/share/zoneinfo";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f) {
		if (errno == ENOENT || errno == ENOTDIR)
			rc = gv_err_set(err, GV_EINVAL, "time zone \"%s\": no such zone (%s)", name,
					path);
		else
			rc = gv_err_set(err, GV_EIO, "time zone \"%s\": %s: %s", name, path,
					strerror(errno));
		goto out;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > ZONE_FILE_MAX) {
		rc = gv_err_set(err, GV_EINVAL, "time zone \"%s\": %s is not a zone file", name,
				path);
		goto out;
	}
	data = gv_xmalloc((size_t)st.st_size + 1);
	len = fread(data, 1, (size_t)st.st_size, f);
	if (ferror(f) || len != (size_t)st.st_size) {
		rc = gv_err_set(err, GV_EIO, "time zone \"%s\": %s: read error", name, path);
		goto out;
	}
	z = gv_xcalloc(1, sizeof(*z));
	rc = tzif_parse(data, len, z, &why);
	if (rc) {
		gv_err_set(err, rc, "time zone \"%s\": %s: %s", name, path, why);
		goto out;
	}
	*out = z;
	z = NULL;
out:
	if (f)
		fclose(f);
	free(data);
	zone_free(z);
	return rc;
}

/* ---- cron fields ------------------------------------------------------------ */

static const char *const month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
					  "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const day_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

struct field_def {
	const char *name;
	int min, max;		  /* numbers accepted */
	int span_lo, span_hi;	  /* what `*` and `a/step` cover */
	const char *const *names; /* NULL = numbers only */
	int name_base;		  /* value of names[0] */
	bool question;		  /* `?` allowed */
	bool last;		  /* `L` allowed */
	bool nth_last;		  /* `nL` allowed */
};

static const struct field_def f_second = {.name = "second", .max = 59, .span_hi = 59};
static const struct field_def f_minute = {.name = "minute", .max = 59, .span_hi = 59};
static const struct field_def f_hour = {.name = "hour", .max = 23, .span_hi = 23};
static const struct field_def f_dom = {.name = "day-of-month",
				       .min = 1,
				       .max = 31,
				       .span_lo = 1,
				       .span_hi = 31,
				       .question = true,
				       .last = true};
static const struct field_def f_month = {.name = "month",
					 .min = 1,
					 .max = 12,
					 .span_lo = 1,
					 .span_hi = 12,
					 .names = month_names,
					 .name_base = 1};
/* standard cron: 0-7, 0 and 7 = Sunday; `*` is 0-6 */
static const struct field_def f_dow5 = {.name = "day-of-week",
					.max = 7,
					.span_hi = 6,
					.names = day_names,
					.question = true,
					.nth_last = true};
/* Quartz: 1-7, 1 = Sunday */
static const struct field_def f_dow6 = {.name = "day-of-week",
					.min = 1,
					.max = 7,
					.span_lo = 1,
					.span_hi = 7,
					.names = day_names,
					.name_base = 1,
					.question = true,
					.nth_last = true};

struct field_val {
	uint64_t bits;	    /* raw values in the field's own numbering */
	uint64_t last_bits; /* nL, raw values */
	bool any;	    /* `*` or `?` (unstepped) */
	bool last;	    /* `L` */
};

/* A token of the expression: a window into the caller's text. */
struct tok {
	const char *p;
	size_t n;
};

#define FIELD_ERR(code_, ...)                                                                      \
	do {                                                                                       \
		char why_[256];                                                                    \
		snprintf(why_, sizeof(why_), __VA_ARGS__);                                         \
		return gv_err_set(err, (code_), "%s \"%.*s\": %s", def->name, (int)field.n,        \
				  field.p, why_);                                                  \
	} while (0)

/* One number or name of the element text [p, p+n). */
static enum gv_code field_value(const struct field_def *def, struct tok field, const char *p,
				size_t n, bool *by_name, int *out, struct gv_err *err)
{
	long v = 0;
	size_t i;

	*by_name = false;
	if (n == 0)
		FIELD_ERR(GV_EINVAL, "missing value");
	if (isdigit((unsigned char)p[0])) {
		for (i = 0; i < n; i++) {
			if (!isdigit((unsigned char)p[i]))
				FIELD_ERR(GV_EINVAL, "\"%.*s\" is not a number", (int)n, p);
			if (v < 100000)
				v = v * 10 + (p[i] - '0');
		}
		if (v < def->min || v > def->max)
			FIELD_ERR(GV_EINVAL, "%ld is out of range %d-%d", v, def->min, def->max);
		*out = (int)v;
		return GV_OK;
	}
	if (!def->names || !isalpha((unsigned char)p[0]))
		FIELD_ERR(GV_EINVAL, "\"%.*s\" is not a number", (int)n, p);
	if (n == 3) {
		size_t count = def->names == month_names ? 12 : 7;

		for (i = 0; i < count; i++) {
			if (strncasecmp(def->names[i], p, 3) == 0) {
				*by_name = true;
				*out = def->name_base + (int)i;
				return GV_OK;
			}
		}
	}
	FIELD_ERR(GV_EINVAL, "unknown name \"%.*s\"", (int)n, p);
}

/* Parses a step "n" (the text after '/'). */
static enum gv_code field_step(const struct field_def *def, struct tok field, const char *p,
			       size_t n, int *out, struct gv_err *err)
{
	int span = def->span_hi - def->span_lo + 1;
	long v = 0;
	size_t i;

	if (n == 0)
		FIELD_ERR(GV_EINVAL, "missing step after '/'");
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			FIELD_ERR(GV_EINVAL, "step \"%.*s\" is not a number", (int)n, p);
		if (v < 100000)
			v = v * 10 + (p[i] - '0');
	}
	if (v < 1)
		FIELD_ERR(GV_EINVAL, "step %ld must be at least 1", v);
	if (v > span)
		FIELD_ERR(GV_EINVAL, "step %ld is larger than the field's span (%d values)", v,
			  span);
	*out = (int)v;
	return GV_OK;
}

/* One element of a comma list: * ? L nL a a-b with an optional /step. */
static enum gv_code field_element(const struct field_def *def, struct tok field, const char *p,
				  size_t n, struct field_val *fv, struct gv_err *err)
{
	const char *slash, *dash;
	int lo, hi, step = 1, v;
	bool star = false, by_name, step_given;
	enum gv_code rc;

	if (n == 0)
		FIELD_ERR(GV_EINVAL, "empty list element");
	if (n == 1 && p[0] == '?') {
		if (!def->question)
			FIELD_ERR(GV_EINVAL, "'?' is only allowed in day-of-month and day-of-week");
		for (v = def->span_lo; v <= def->span_hi; v++)
			fv->bits |= 1ULL << v;
		fv->any = true;
		return GV_OK;
	}
	if (n == 1 && (p[0] == 'L' || p[0] == 'l')) {
		if (def->last) {
			fv->last = true;
			return GV_OK;
		}
		if (def->nth_last)
			FIELD_ERR(GV_EINVAL, "'L' needs a weekday before it (e.g. %s)",
				  def == &f_dow5 ? "5L = last Friday" : "6L = last Friday");
		FIELD_ERR(GV_EINVAL, "'L' is only allowed in day-of-month and day-of-week");
	}
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '#')
			FIELD_ERR(GV_EINVAL, "'#' (nth weekday of the month) is not supported");
		if ((p[i] == 'W' || p[i] == 'w') && def == &f_dom)
			FIELD_ERR(GV_EINVAL, "'W' (nearest weekday) is not supported");
	}
	if ((def->last || def->nth_last) && n >= 2 && (p[n - 1] == 'L' || p[n - 1] == 'l') &&
	    !memchr(p, '-', n) && !memchr(p, '/', n)) {
		if (def->last)
			FIELD_ERR(GV_EINVAL,
				  "only a plain 'L' (last day of the month) is supported");
		rc = field_value(def, field, p, n - 1, &by_name, &v, err);
		if (rc)
			return rc;
		fv->last_bits |= 1ULL << v;
		return GV_OK;
	}
	if (def->last && n >= 2 && (p[0] == 'L' || p[0] == 'l'))
		FIELD_ERR(GV_EINVAL, "'L-n' (days before the last) is not supported");

	slash = memchr(p, '/', n);
	step_given = slash != NULL;
	if (slash) {
		rc = field_step(def, field, slash + 1, n - (size_t)(slash + 1 - p), &step, err);
		if (rc)
			return rc;
		n = (size_t)(slash - p);
	}
	if (n == 1 && p[0] == '*') {
		star = true;
		lo = def->span_lo;
		hi = def->span_hi;
	} else if (n == 1 && p[0] == '?') {
		FIELD_ERR(GV_EINVAL, "'?' takes no step");
	} else {
		dash = memchr(p, '-', n);
		rc = field_value(def, field, p, dash ? (size_t)(dash - p) : n, &by_name, &lo, err);
		if (rc)
			return rc;
		if (dash) {
			rc = field_value(def, field, dash + 1, n - (size_t)(dash + 1 - p), &by_name,
					 &hi, err);
			if (rc)
				return rc;
			/* MON-SUN in standard cron: Sunday is also 7 */
			if (def == &f_dow5 && by_name && hi == 0 && lo > 0)
				hi = 7;
			if (lo > hi)
				FIELD_ERR(GV_EINVAL, "range %d-%d is backwards (start > end)", lo,
					  hi);
		} else {
			hi = step_given ? (lo > def->span_hi ? lo : def->span_hi) : lo;
		}
	}
	for (v = lo; v <= hi; v += step)
		fv->bits |= 1ULL << v;
	if (star && step == 1)
		fv->any = true;
	return GV_OK;
}

static enum gv_code field_parse(const struct field_def *def, struct tok field, struct field_val *fv,
				struct gv_err *err)
{
	const char *p = field.p, *end = field.p + field.n;
	enum gv_code rc;

	memset(fv, 0, sizeof(*fv));
	if (field.n > 256)
		FIELD_ERR(GV_EINVAL, "field too long");
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;

		rc = field_element(def, field, p, (size_t)(e - p), fv, err);
		if (rc)
			return rc;
		if (!comma)
			break;
		p = comma + 1;
	}
	return GV_OK;
}

#undef FIELD_ERR

/* Day-of-week bits in the field's numbering -> 0-6 with 0 = Sunday. */
static uint8_t dow_normalise(const struct field_def *def, uint64_t raw)
{
	uint8_t out = 0;

	for (int v = def->min; v <= def->max; v++) {
		if (!(raw & (1ULL << v)))
			continue;
		out |= (uint8_t)(1u << (def == &f_dow6 ? v - 1 : v % 7));
	}
	return out;
}

/* ---- parsing ------------------------------------------------------------------ */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static enum gv_code interval_from_text(const char *text, const char *what, struct schedule *s,
				       struct gv_err *err)
{
	long double ns;

	if (!value_parse_duration(text, &ns))
		return gv_err_set(err, GV_EINVAL,
				  "%s \"%s\" is not a Go duration (e.g. 1h30m, 2m30s, 2h)", what,
				  text);
	if (ns <= 0)
		return gv_err_set(err, GV_EINVAL, "%s \"%s\" must be > 0", what, text);
	if (ns < 1e9L)
		return gv_err_set(err, GV_EINVAL,
				  "%s \"%s\" is under the 1s resolution of schedules", what, text);
	s->kind = SCHEDULE_INTERVAL;
	s->interval = (time_t)(ns / 1e9L);
	return GV_OK;
}

enum gv_code schedule_parse_interval(const char *text, struct schedule *s, struct gv_err *err)
{
	memset(s, 0, sizeof(*s));
	if (!text)
		return gv_err_set(err, GV_EINVAL, "missing interval");
	return interval_from_text(text, "interval", s, err);
}

static size_t tokenize(const char *p, struct tok *toks, size_t max)
{
	size_t n = 0;

	for (;;) {
		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		if (n < max)
			toks[n].p = p;
		while (*p && !is_blank(*p))
			p++;
		if (n < max)
			toks[n].n = (size_t)(p - toks[n].p);
		n++;
	}
	return n;
}

static const struct {
	const char *name;
	const char *fields;
} descriptors[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},	  {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* Fills the cron fields of s from 5 or 6 tokens. */
static enum gv_code cron_fields(const struct tok *t, size_t n, struct schedule *s,
				struct gv_err *err)
{
	const struct field_def *dow = n == 6 ? &f_dow6 : &f_dow5;
	struct field_val sec, min, hour, dom, mon, wd;
	size_t i = 0;
	enum gv_code rc;

	if (n == 6) {
		rc = field_parse(&f_second, t[i++], &sec, err);
		if (rc)
			return rc;
	} else {
		sec.bits = 1;
	}
	if ((rc = field_parse(&f_minute, t[i++], &min, err)) ||
	    (rc = field_parse(&f_hour, t[i++], &hour, err)) ||
	    (rc = field_parse(&f_dom, t[i++], &dom, err)) ||
	    (rc = field_parse(&f_month, t[i++], &mon, err)) ||
	    (rc = field_parse(dow, t[i++], &wd, err)))
		return rc;
	s->kind = SCHEDULE_CRON;
	s->seconds = sec.bits;
	s->minutes = min.bits;
	s->hours = (uint32_t)hour.bits;
	s->days = (uint32_t)dom.bits;
	s->last_day = dom.last;
	s->days_any = dom.any;
	s->months = (uint16_t)mon.bits;
	s->weekdays = dow_normalise(dow, wd.bits);
	s->last_weekdays = dow_normalise(dow, wd.last_bits);
	s->weekdays_any = wd.any;

	/*
	 * Only day-of-month restricts the day: some allowed month must have one
	 * of the allowed days (Feb counts 29), or the expression never fires.
	 */
	if (!s->days_any && s->weekdays_any && !s->last_day) {
		static const unsigned maxd[13] = {0,  31, 29, 31, 30, 31, 30,
						  31, 31, 30, 31, 30, 31};
		bool ok = false;

		for (unsigned m = 1; m <= 12 && !ok; m++)
			if (s->months & (1u << m))
				ok = (s->days & (((2ULL << maxd[m]) - 1) & ~1ULL)) != 0;
		if (!ok) {
			const struct tok *d = &t[n - 3], *m = &t[n - 2];

			return gv_err_set(err, GV_EINVAL,
					  "day-of-month \"%.*s\" never occurs in month \"%.*s\": "
					  "the schedule would never fire",
					  (int)d->n, d->p, (int)m->n, m->p);
		}
	}
	return GV_OK;
}

enum gv_code schedule_parse_cron(const char *text, struct schedule *s, struct gv_err *err)
{
	struct tok t[8], d[5];
	const char *p;
	size_t n, i;
	enum gv_code rc = GV_OK;

	memset(s, 0, sizeof(*s));
	if (!text)
		return gv_err_set(err, GV_EINVAL, "missing schedule");
	p = text;
	while (is_blank(*p))
		p++;
	if (!strncmp(p, "CRON_TZ=", 8) || !strncmp(p, "TZ=", 3)) {
		const char *z = strchr(p, '=') + 1, *ze = z;
		size_t zn;

		while (*ze && !is_blank(*ze))
			ze++;
		zn = (size_t)(ze - z);
		if (zn == 0) {
			rc = gv_err_set(err, GV_EINVAL, "%.*s: missing time zone name",
					(int)(z - p), p);
			goto out;
		}
		if (zn >= sizeof(s->zone_name)) {
			rc = gv_err_set(err, GV_EINVAL, "time zone \"%.*s\": name too long",
					(int)zn, z);
			goto out;
		}
		memcpy(s->zone_name, z, zn);
		s->zone_name[zn] = '\0';
		if (strcmp(s->zone_name, "UTC") != 0) {
			rc = zone_load(s->zone_name, &s->zone, err);
			if (rc)
				goto out;
		}
		p = ze;
		while (is_blank(*p))
			p++;
		if (!*p) {
			rc = gv_err_set(err, GV_EINVAL, "nothing after the time zone \"%s\"",
					s->zone_name);
			goto out;
		}
	}
	n = tokenize(p, t, GV_ARRAY_LEN(t));
	if (n == 0) {
		rc = gv_err_set(err, GV_EINVAL, "empty schedule");
		goto out;
	}
	if (t[0].p[0] == '@') {
		if (t[0].n == 6 && strncasecmp(t[0].p, "@every", 6) == 0) {
			char dur[64];

			if (n != 2) {
				rc = gv_err_set(err, GV_EINVAL,
						"@every takes one duration (e.g. @every 1h30m)");
				goto out;
			}
			snprintf(dur, sizeof(dur), "%.*s", (int)t[1].n, t[1].p);
			rc = interval_from_text(dur, "@every", s, err);
			if (rc)
				goto out;
			/* a constant delay has no wall clock: the zone is irrelevant */
			zone_free(s->zone);
			s->zone = NULL;
			s->zone_name[0] = '\0';
			goto out;
		}
		for (i = 0; i < GV_ARRAY_LEN(descriptors); i++)
			if (strlen(descriptors[i].name) == t[0].n &&
			    strncasecmp(descriptors[i].name, t[0].p, t[0].n) == 0)
				break;
		if (i == GV_ARRAY_LEN(descriptors)) {
			rc = gv_err_set(err, GV_EINVAL,
					"unknown descriptor \"%.*s\" (expected @yearly, "
					"@annually, @monthly, @weekly, @daily, @midnight, "
					"@hourly or @every <duration>)",
					(int)t[0].n, t[0].p);
			goto out;
		}
		if (n != 1) {
			rc = gv_err_set(err, GV_EINVAL, "%s takes no fields after it",
					descriptors[i].name);
			goto out;
		}
		tokenize(descriptors[i].fields, d, GV_ARRAY_LEN(d));
		rc = cron_fields(d, 5, s, err);
		goto out;
	}
	if (n != 5 && n != 6) {
		rc = gv_err_set(err, GV_EINVAL,
				"expected 5 or 6 fields, got %zu (5: minute hour day-of-month "
				"month day-of-week; 6: second first, Quartz style)",
				n);
		goto out;
	}
	rc = cron_fields(t, n, s, err);
out:
	if (rc) {
		zone_free(s->zone);
		memset(s, 0, sizeof(*s));
	}
	return rc;
}

enum gv_code schedule_parse(const char *text, struct schedule *s, struct gv_err *err)
{
	struct tok t[2];
	const char *p;

	memset(s, 0, sizeof(*s));
	if (!text)
		return gv_err_set(err, GV_EINVAL, "missing schedule");
	p = text;
	while (is_blank(*p))
		p++;
	if (tokenize(p, t, 2) == 1 && *p != '@' && !strchr(p, '=')) {
		char word[128];
		long double ns;

		if (t[0].n >= sizeof(word))
			return gv_err_set(err, GV_EINVAL, "schedule too long");
		snprintf(word, sizeof(word), "%.*s", (int)t[0].n, t[0].p);
		if (!value_parse_duration(word, &ns))
			return gv_err_set(err, GV_EINVAL,
					  "\"%s\" is neither a Go duration (e.g. 1h30m) nor a cron "
					  "expression",
					  word);
		return interval_from_text(word, "interval", s, err);
	}
	return schedule_parse_cron(text, s, err);
}

void schedule_release(struct schedule *s)
{
	if (!s)
		return;
	zone_free(s->zone);
	memset(s, 0, sizeof(*s));
}

/* ---- next fire ------------------------------------------------------------------ */

static int next_bit(uint64_t mask, int from)
{
	if (from < 0)
		from = 0;
	if (from >= 64)
		return -1;
	mask &= ~0ULL << from;
	return mask ? __builtin_ctzll(mask) : -1;
}

static bool day_matches(const struct schedule *s, int64_t y, unsigned m, unsigned d, int64_t days)
{
	unsigned mdays = days_in_month(y, m), wd = weekday(days);
	bool dom = (s->days & (1ULL << d)) || (s->last_day && d == mdays);
	bool dow = (s->weekdays & (1u << wd)) || ((s->last_weekdays & (1u << wd)) && d + 7 > mdays);

	/* robfig / Vixie: a `*` field makes the other decide, else either may */
	if (s->days_any || s->weekdays_any)
		return dom && dow;
	return dom || dow;
}

/* The first allowed h:mi:sec at or after the given one on a day; false when none is left. */
static bool time_in_day(const struct schedule *s, int *h, int *mi, int *sec)
{
	for (;;) {
		int H = next_bit(s->hours, *h), M, S;

		if (H < 0 || H > 23)
			return false;
		if (H != *h) {
			*h = H;
			*mi = 0;
			*sec = 0;
		}
		M = next_bit(s->minutes, *mi);
		if (M < 0 || M > 59) {
			(*h)++;
			*mi = 0;
			*sec = 0;
			continue;
		}
		if (M != *mi) {
			*mi = M;
			*sec = 0;
		}
		S = next_bit(s->seconds, *sec);
		if (S < 0 || S > 59) {
			if (++*mi == 60) {
				(*h)++;
				*mi = 0;
			}
			*sec = 0;
			continue;
		}
		*sec = S;
		return true;
	}
}

/* The first wall time in [from, last] matching the cron fields, or NONE. */
static int64_t cron_next_wall(const struct schedule *s, int64_t from, int64_t last)
{
	int64_t days = floor_div(from, DAY_S), sod = from - days * DAY_S, y;
	int h = (int)(sod / 3600), mi = (int)(sod / 60 % 60), sec = (int)(sod % 60), nm;
	unsigned m, d;

	if (!(s->months & 0x1ffe))
		return NONE;
	civil_from_days(days, &y, &m, &d);
	for (;;) {
		bool next_day = false;

		days = days_from_civil(y, m, d);
		if (days * DAY_S > last)
			return NONE;
		if (!(s->months & (1u << m))) {
			nm = next_bit(s->months & 0x1ffe, (int)m + 1);
			if (nm < 0) {
				y++;
				nm = next_bit(s->months & 0x1ffe, 1);
			}
			m = (unsigned)nm;
			d = 1;
			h = mi = sec = 0;
			continue;
		}
		if (!day_matches(s, y, m, d, days) || !time_in_day(s, &h, &mi, &sec))
			next_day = true;
		if (!next_day) {
			int64_t w = days * DAY_S + h * 3600 + mi * 60 + sec;

			return w <= last ? w : NONE;
		}
		h = mi = sec = 0;
		if (++d > days_in_month(y, m)) {
			d = 1;
			if (++m > 12) {
				m = 1;
				y++;
			}
		}
	}
}

time_t schedule_next(const struct schedule *s, time_t after)
{
	int64_t t, end;

	if (!s || after < TIME_MIN || after >= TIME_MAX)
		return 0;
	if (s->kind == SCHEDULE_INTERVAL) {
		if (s->interval <= 0 || s->interval > TIME_MAX - after)
			return 0;
		return after + s->interval;
	}
	if (s->kind != SCHEDULE_CRON)
		return 0;
	t = (int64_t)after + 1;
	end = (int64_t)after > TIME_MAX - HORIZON_S ? TIME_MAX : (int64_t)after + HORIZON_S;
	/*
	 * Walk the stretches of constant UTC offset: within one, local time is
	 * UTC + offset, a monotonic map, so the first matching wall time is the
	 * first matching instant. Gaps and repeats of the wall clock fall out.
	 */
	while (t <= end) {
		int64_t until, seg_last, w;
		int32_t off = zone_lookup(s->zone, t, &until);

		seg_last = until - 1 < end ? until - 1 : end;
		w = cron_next_wall(s, t + off, seg_last + off);
		if (w != NONE)
			return (time_t)(w - off);
		if (seg_last >= end)
			break;
		t = until;
	}
	return 0;
}

time_t schedule_period(const struct schedule *s)
{
	const time_t ref = 978307200; /* 2001-01-01T00:00:00Z */
	time_t prev, t, min = 0;

	if (!s)
		return 0;
	if (s->kind == SCHEDULE_INTERVAL)
		return s->interval;
	prev = schedule_next(s, ref - 1);
	for (int i = 0; prev && i < 64; i++) {
		t = schedule_next(s, prev);
		if (!t)
			break;
		if (!min || t - prev < min)
			min = t - prev;
		prev = t;
	}
	return min;
}

time_t schedule_jitter(const char *policy_name, time_t period)
{
	uint64_t h;
	time_t max;

	if (!policy_name || period < 10)
		return 0;
	h = gv_hash_str(policy_name);
	max = period / 10;
	if (max > SCHEDULE_JITTER_MAX)
		max = SCHEDULE_JITTER_MAX;
	return (time_t)(h % (uint64_t)(max + 1));
}

bool schedule_due(const struct schedule *s, time_t last, time_t now, time_t jitter, time_t *due_at)
{
	time_t at, next;

	if (jitter < 0)
		jitter = 0;
	if (last <= 0) {
		at = now;
	} else {
		if (last > now)
			last = now;
		next = schedule_next(s, last);
		if (!next) {
			if (due_at)
				*due_at = 0;
			return false;
		}
		at = jitter > TIME_MAX - next ? TIME_MAX : next + jitter;
	}
	if (due_at)
		*due_at = at;
	return now >= at;
}

/* ---- RFC 3339 ------------------------------------------------------------------ */

const char *schedule_time_format(time_t t, char *buf, size_t n)
{
	int64_t days = floor_div(t, DAY_S), sod = (int64_t)t - days * DAY_S, y;
	unsigned m, d;

	civil_from_days(days, &y, &m, &d);
	snprintf(buf, n, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y, m, d, (int)(sod / 3600),
		 (int)(sod / 60 % 60), (int)(sod % 60));
	return buf;
}

/* Reads exactly n digits. */
static bool digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return true;
}

enum gv_code schedule_time_parse(const char *text, time_t *t, struct gv_err *err)
{
	const char *p = text;
	int y, mo, d, h, mi, s, oh = 0, om = 0, sign = 0;
	const char *why = "expected YYYY-MM-DDTHH:MM:SSZ or an offset like +01:00";

	if (!p)
		return gv_err_set(err, GV_EINVAL, "missing time");
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
		goto bad;
	p++;
	if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
	    !digits(&p, 2, &s))
		goto bad;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			goto bad;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
			goto bad;
	} else {
		goto bad;
	}
	if (*p)
		goto bad;
	why = NULL;
	if (y < 1)
		why = "year out of range";
	else if (mo < 1 || mo > 12)
		why = "month out of range";
	else if (d < 1 || (unsigned)d > days_in_month(y, (unsigned)mo))
		why = "day out of range";
	else if (h > 23 || mi > 59 || s > 59)
		why = "time of day out of range";
	else if (oh > 23 || om > 59)
		why = "UTC offset out of range";
	if (why)
		goto bad;
	*t = (time_t)(days_from_civil(y, (unsigned)mo, (unsigned)d) * DAY_S + h * 3600 + mi * 60 +
		      s - sign * (oh * 3600 + om * 60));
	return GV_OK;
bad:
	return gv_err_set(err, GV_EINVAL, "\"%s\" is not an RFC 3339 time: %s", text, why);
}
