/*
 * time.c - CEL timestamps and durations: RFC 3339 text, Go duration text
 * (time.ParseDuration), the proleptic Gregorian calendar. Pure arithmetic:
 * no time zone database and no clock.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <stdio.h>
#include <string.h>

#include "common/banned.h"

/* Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	*y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y += *m <= 2;
}

int64_t cel_days_from_civil(int64_t y, int m, int d)
{
	return days_from_civil(y, m, d);
}

static int64_t floordiv(int64_t a, int64_t b)
{
	return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

void cel_civil(int64_t sec, int64_t *year, int *month, int *day, int *yday, int *wday)
{
	int64_t days = floordiv(sec, 86400);

	civil_from_days(days, year, month, day);
	*yday = (int)(days - days_from_civil(*year, 1, 1));
	*wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday (4) */
}

static bool digits(const char *s, size_t n, size_t at, int count, int *out)
{
	int v = 0, k;

	if (at + (size_t)count > n)
		return false;
	for (k = 0; k < count; k++) {
		char c = s[at + (size_t)k];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*out = v;
	return true;
}

bool cel_parse_timestamp(const char *s, size_t n, int64_t *sec, int32_t *nsec)
{
	int y, mo, d, h, mi, se, oh = 0, om = 0;
	int64_t ns = 0, t;
	size_t i;
	int sign = 0;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (!digits(s, n, 0, 4, &y) || n < 20 || s[4] != '-' || !digits(s, n, 5, 2, &mo) ||
	    s[7] != '-' || !digits(s, n, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
	    !digits(s, n, 11, 2, &h) || s[13] != ':' || !digits(s, n, 14, 2, &mi) || s[16] != ':' ||
	    !digits(s, n, 17, 2, &se))
		return false;
	i = 19;
	if (i < n && s[i] == '.') {
		int k = 0;

		i++;
		while (i < n && s[i] >= '0' && s[i] <= '9') {
			if (k < 9) {
				ns = ns * 10 + (s[i] - '0');
				k++;
			}
			i++;
		}
		if (k == 0)
			return false;
		for (; k < 9; k++)
			ns *= 10;
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i < n && (s[i] == '+' || s[i] == '-')) {
		sign = s[i] == '-' ? -1 : 1;
		if (!digits(s, n, i + 1, 2, &oh) || i + 3 >= n || s[i + 3] != ':' ||
		    !digits(s, n, i + 4, 2, &om) || oh > 23 || om > 59)
			return false;
		i += 6;
	} else {
		return false;
	}
	if (i != n)
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 59)
		return false;
	if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return false;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	if (sign)
		t -= sign * (oh * 3600 + om * 60);
	if (t < CEL_TS_MIN || t > CEL_TS_MAX)
		return false;
	*sec = t;
	*nsec = (int32_t)ns;
	return true;
}

void cel_format_timestamp(int64_t sec, int32_t nsec, struct gv_buf *out)
{
	int64_t y, rem = sec - floordiv(sec, 86400) * 86400;
	int m, d, yd, wd;

	cel_civil(sec, &y, &m, &d, &yd, &wd);
	gv_buf_addf(out, "%04lld-%02d-%02dT%02d:%02d:%02d", (long long)y, m, d, (int)(rem / 3600),
		    (int)(rem / 60 % 60), (int)(rem % 60));
	if (nsec) {
		char f[16];
		int k;

		snprintf(f, sizeof(f), "%09d", (int)nsec);
		for (k = 8; k > 0 && f[k] == '0'; k--)
			f[k] = 0;
		gv_buf_addf(out, ".%s", f);
	}
	gv_buf_addc(out, 'Z');
}

/* Go's time.ParseDuration, into int64 nanoseconds (false on syntax or overflow). */
bool cel_parse_duration(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	uint64_t total = 0;

	if (i < n && (s[i] == '-' || s[i] == '+')) {
		neg = s[i] == '-';
		i++;
	}
	if (n - i == 1 && s[i] == '0') {
		*out = 0;
		return true;
	}
	if (i == n)
		return false;
	while (i < n) {
		uint64_t v = 0, unit, f = 0, scale = 1;
		unsigned __int128 part;
		bool any = false, over = false;
		size_t us;

		while (i < n && s[i] >= '0' && s[i] <= '9') {
			if (v > (UINT64_MAX - 9) / 10)
				over = true;
			else
				v = v * 10 + (uint64_t)(s[i] - '0');
			i++;
			any = true;
		}
		if (i < n && s[i] == '.') {
			i++;
			while (i < n && s[i] >= '0' && s[i] <= '9') {
				/* digits past the 18th cannot change a nanosecond count */
				if (scale < 1000000000000000000ULL) {
					f = f * 10 + (uint64_t)(s[i] - '0');
					scale *= 10;
				}
				i++;
				any = true;
			}
		}
		if (!any || over)
			return false;
		us = i;
		while (i < n && s[i] != '.' && !(s[i] >= '0' && s[i] <= '9'))
			i++;
#define UNIT(str) (i - us == strlen(str) && memcmp(s + us, str, i - us) == 0)
		if (UNIT("ns"))
			unit = 1;
		else if (UNIT("us") || UNIT("\xc2\xb5s") || UNIT("\xce\xbcs"))
			unit = 1000;
		else if (UNIT("ms"))
			unit = 1000000;
		else if (UNIT("s"))
			unit = 1000000000ULL;
		else if (UNIT("m"))
			unit = 60000000000ULL;
		else if (UNIT("h"))
			unit = 3600000000000ULL;
		else
			return false;
#undef UNIT
		/* exact: integer part times unit plus the fraction's share, truncated */
		part = (unsigned __int128)v * unit + (unsigned __int128)f * unit / scale;
		if (part > (unsigned __int128)INT64_MAX + 1)
			return false;
		total += (uint64_t)part;
		if (total > (uint64_t)INT64_MAX + (neg ? 1 : 0))
			return false;
	}
	*out = neg ? (int64_t)(0 - total) : (int64_t)total;
	return true;
}

/* Seconds with the fraction's trailing zeros dropped, then "s" (cel-go's string(duration)). */
void cel_format_duration(int64_t ns, struct gv_buf *out)
{
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	uint64_t s = mag / 1000000000ULL, f = mag % 1000000000ULL;

	if (ns < 0)
		gv_buf_addc(out, '-');
	gv_buf_addf(out, "%llu", (unsigned long long)s);
	if (f) {
		char b[16];
		int k;

		snprintf(b, sizeof(b), "%09llu", (unsigned long long)f);
		for (k = 8; k > 0 && b[k] == '0'; k--)
			b[k] = 0;
		gv_buf_addf(out, ".%s", b);
	}
	gv_buf_addc(out, 's');
}
