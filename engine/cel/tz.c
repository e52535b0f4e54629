/*
 * tz.c - IANA time zones for the timestamp accessors (getHours('Europe/Paris')):
 * the TZif files of the system's tz database (RFC 8536, version 2+ 64-bit data
 * and the POSIX TZ footer for times after the last transition), read once per
 * zone and kept for the life of the process, as Go's time.LoadLocation does for
 * cel-go. This is the engine's only file access; a zone that cannot be read is
 * an evaluation error, never UTC.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

#define TZ_DIR	     "/usr/share/zoneinfo/"
#define TZ_MAX_FILE  (256 * 1024)
#define TZ_MAX_ZONES 128

/* One POSIX rule date: Jn (julian, no leap day), n (0-based day), Mm.w.d. */
struct tz_rule_date {
	char kind; /* 'J', 'D' or 'M' */
	int a, b, c;
	int64_t time; /* seconds after local midnight */
};

struct tz_zone {
	char *name; /* owned */
	size_t ntrans;
	int64_t *trans; /* owned: transition times (UTC) */
	uint8_t *idx;	/* owned: type index per transition */
	size_t ntypes;
	int32_t *offs; /* owned: UT offset per type */
	/* footer */
	bool has_rule;
	int32_t std_off, dst_off; /* UT offsets (east positive) */
	bool has_dst;
	struct tz_rule_date start, end;
	struct tz_zone *next;
};

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tz_zone *tz_zones;
static size_t tz_nzones;

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* ---- POSIX TZ strings ("CST6CDT,M3.2.0,M11.1.0") ---- */

static bool tz_num(const char **s, int *out)
{
	int v = 0, k = 0;

	while (**s >= '0' && **s <= '9' && k < 6) {
		v = v * 10 + (**s - '0');
		(*s)++;
		k++;
	}
	*out = v;
	return k > 0;
}

/* [+-]hh[:mm[:ss]] in seconds. */
static bool tz_hms(const char **s, int64_t *out)
{
	int sign = 1, h = 0, m = 0, sec = 0;

	if (**s == '+' || **s == '-')
		sign = *(*s)++ == '-' ? -1 : 1;
	if (!tz_num(s, &h) || h > 167)
		return false;
	if (**s == ':') {
		(*s)++;
		if (!tz_num(s, &m) || m > 59)
			return false;
		if (**s == ':') {
			(*s)++;
			if (!tz_num(s, &sec) || sec > 59)
				return false;
		}
	}
	*out = sign * ((int64_t)h * 3600 + m * 60 + sec);
	return true;
}

static bool tz_name(const char **s)
{
	const char *p = *s;

	if (*p == '<') {
		p = strchr(p, '>');
		if (!p)
			return false;
		*s = p + 1;
		return true;
	}
	while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
		p++;
	if (p - *s < 3)
		return false;
	*s = p;
	return true;
}

static bool tz_date(const char **s, struct tz_rule_date *d)
{
	d->time = 7200;
	if (**s == 'J') {
		(*s)++;
		d->kind = 'J';
		if (!tz_num(s, &d->a) || d->a < 1 || d->a > 365)
			return false;
	} else if (**s == 'M') {
		(*s)++;
		d->kind = 'M';
		if (!tz_num(s, &d->a) || **s != '.')
			return false;
		(*s)++;
		if (!tz_num(s, &d->b) || **s != '.')
			return false;
		(*s)++;
		if (!tz_num(s, &d->c) || d->a < 1 || d->a > 12 || d->b < 1 || d->b > 5 || d->c > 6)
			return false;
	} else {
		d->kind = 'D';
		if (!tz_num(s, &d->a) || d->a > 365)
			return false;
	}
	if (**s == '/') {
		(*s)++;
		return tz_hms(s, &d->time);
	}
	return true;
}

static bool tz_parse_rule(struct tz_zone *z, const char *s)
{
	int64_t off;

	if (!tz_name(&s) || !tz_hms(&s, &off))
		return false;
	z->std_off = (int32_t)-off; /* POSIX offsets are west positive */
	z->has_rule = true;
	if (!*s)
		return true;
	if (!tz_name(&s))
		return false;
	z->has_dst = true;
	z->dst_off = z->std_off + 3600;
	if (*s && *s != ',') {
		if (!tz_hms(&s, &off))
			return false;
		z->dst_off = (int32_t)-off;
	}
	if (*s != ',') {
		/* no rule: the US rules of POSIX are not guessed */
		return false;
	}
	s++;
	if (!tz_date(&s, &z->start) || *s != ',')
		return false;
	s++;
	return tz_date(&s, &z->end) && !*s;
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since the epoch of January 1st of year y. */
static int64_t tz_year_start(int64_t y)
{
	return cel_days_from_civil(y, 1, 1);
}

/* Local seconds (from the year's start) of a rule date in year y. */
static int64_t tz_rule_secs(const struct tz_rule_date *d, int64_t y)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int64_t day = 0;

	if (d->kind == 'J') {
		day = d->a - 1;
		if (is_leap(y) && d->a >= 60)
			day++;
	} else if (d->kind == 'D') {
		day = d->a;
	} else {
		int m, first_wd, dim;
		int64_t mstart = 0, wd;

		for (m = 1; m < d->a; m++)
			mstart += mdays[m - 1] + (m == 2 && is_leap(y));
		dim = mdays[d->a - 1] + (d->a == 2 && is_leap(y));
		wd = (tz_year_start(y) + mstart) % 7;
		first_wd = (int)((wd + 11) % 7); /* 1970-01-01 was a Thursday (4) */
		day = (d->c - first_wd + 7) % 7 + (int64_t)(d->b - 1) * 7;
		while (day >= dim)
			day -= 7;
		day += mstart;
	}
	return day * 86400 + d->time;
}

static int32_t tz_rule_offset(const struct tz_zone *z, int64_t t)
{
	int64_t y, ys, start, end;
	int mo, d, yd, wd;

	if (!z->has_dst)
		return z->std_off;
	cel_civil(t + z->std_off, &y, &mo, &d, &yd, &wd);
	ys = tz_year_start(y) * 86400;
	start = ys + tz_rule_secs(&z->start, y) - z->std_off;
	end = ys + tz_rule_secs(&z->end, y) - z->dst_off;
	if (start < end)
		return t >= start && t < end ? z->dst_off : z->std_off;
	return t >= end && t < start ? z->std_off : z->dst_off;
}

/* ---- TZif ---- */

static void tz_zone_free(struct tz_zone *z)
{
	if (!z)
		return;
	free(z->name);
	free(z->trans);
	free(z->idx);
	free(z->offs);
	free(z);
}

static struct tz_zone *tz_parse(const unsigned char *p, size_t n)
{
	struct tz_zone *z = NULL;
	uint32_t isut, isstd, leap, timecnt, typecnt, charcnt;
	size_t off, need, i;
	int v2;

	if (n < 44 || memcmp(p, "TZif", 4) != 0)
		return NULL;
	v2 = p[4] >= '2';
	if (!v2)
		return NULL; /* 32-bit only files are not in any current tzdata */
	/* skip the version 1 block */
	isut = be32(p + 20);
	isstd = be32(p + 24);
	leap = be32(p + 28);
	timecnt = be32(p + 32);
	typecnt = be32(p + 36);
	charcnt = be32(p + 40);
	off = 44 + (size_t)timecnt * 5 + (size_t)typecnt * 6 + charcnt + (size_t)leap * 8 + isstd +
	      isut;
	if (off + 44 > n || memcmp(p + off, "TZif", 4) != 0)
		return NULL;
	isut = be32(p + off + 20);
	isstd = be32(p + off + 24);
	leap = be32(p + off + 28);
	timecnt = be32(p + off + 32);
	typecnt = be32(p + off + 36);
	charcnt = be32(p + off + 40);
	off += 44;
	need =
	    (size_t)timecnt * 9 + (size_t)typecnt * 6 + charcnt + (size_t)leap * 12 + isstd + isut;
	if (typecnt == 0 || typecnt > 256 || timecnt > 100000 || need > n - off)
		return NULL;
	z = gv_xcalloc(1, sizeof(*z));
	z->ntrans = timecnt;
	z->ntypes = typecnt;
	z->trans = gv_xmalloc(sizeof(*z->trans) * (timecnt + 1));
	z->idx = gv_xmalloc(timecnt + 1);
	z->offs = gv_xmalloc(sizeof(*z->offs) * typecnt);
	for (i = 0; i < timecnt; i++)
		z->trans[i] = be64(p + off + i * 8);
	off += (size_t)timecnt * 8;
	for (i = 0; i < timecnt; i++) {
		z->idx[i] = p[off + i];
		if (z->idx[i] >= typecnt)
			goto bad;
	}
	off += timecnt;
	for (i = 0; i < typecnt; i++)
		z->offs[i] = (int32_t)be32(p + off + i * 6);
	off += (size_t)typecnt * 6 + charcnt + (size_t)leap * 12 + isstd + isut;
	/* footer: "\n<POSIX TZ>\n" */
	if (off < n && p[off] == '\n') {
		const unsigned char *e = memchr(p + off + 1, '\n', n - off - 1);

		if (e && e > p + off + 1) {
			char rule[128];
			size_t len = (size_t)(e - (p + off + 1));

			if (len < sizeof(rule)) {
				memcpy(rule, p + off + 1, len);
				rule[len] = 0;
				if (!tz_parse_rule(z, rule))
					z->has_rule = false;
			}
		}
	}
	return z;
bad:
	tz_zone_free(z);
	return NULL;
}

static bool tz_name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > 100 || s[0] == '/' || s[0] == '.')
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '/' || c == '_' || c == '-' || c == '+'))
			return false;
		if (c == '/' && i + 1 < n && s[i + 1] == '.')
			return false;
	}
	return true;
}

static struct tz_zone *tz_load(const char *name, size_t n)
{
	char path[160];
	unsigned char *buf = NULL;
	struct tz_zone *z = NULL;
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), TZ_DIR "%.*s", (int)n, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	buf = gv_xmalloc(TZ_MAX_FILE);
	len = fread(buf, 1, TZ_MAX_FILE, f);
	fclose(f);
	if (len < TZ_MAX_FILE)
		z = tz_parse(buf, len);
	free(buf);
	if (z) {
		z->name = gv_xmalloc(n + 1);
		memcpy(z->name, name, n);
		z->name[n] = 0;
	}
	return z;
}

static const struct tz_zone *tz_get(const char *name, size_t n)
{
	struct tz_zone *z;

	pthread_mutex_lock(&tz_lock);
	for (z = tz_zones; z; z = z->next)
		if (strlen(z->name) == n && memcmp(z->name, name, n) == 0)
			break;
	if (!z && tz_nzones < TZ_MAX_ZONES) {
		z = tz_load(name, n);
		if (z) {
			z->next = tz_zones;
			tz_zones = z;
			tz_nzones++;
		}
	}
	pthread_mutex_unlock(&tz_lock);
	return z;
}

bool cel_tz_lookup(const char *name, size_t n, int64_t t, int64_t *off)
{
	const struct tz_zone *z;
	size_t lo, hi;

	if (!tz_name_ok(name, n) || (n == 5 && memcmp(name, "Local", 5) == 0))
		return false;
	z = tz_get(name, n);
	if (!z)
		return false;
	if (!z->ntrans || t < z->trans[0]) {
		*off = z->offs[0];
		return true;
	}
	if (t >= z->trans[z->ntrans - 1] && z->has_rule) {
		*off = tz_rule_offset(z, t);
		return true;
	}
	lo = 0;
	hi = z->ntrans; /* trans[lo] <= t < trans[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->trans[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	*off = z->offs[z->idx[lo]];
	return true;
}
