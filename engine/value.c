#include "engine/value.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/banned.h"

__extension__ typedef unsigned __int128 u128;

/* ------------------------------------------------------------------ */
/* UTF-8 and wildcards                                                 */

/*
 * Decodes one code point as Go's []rune conversion does: an invalid or
 * truncated sequence yields U+FFFD and consumes one byte. s is NUL-terminated.
 */
static inline uint32_t utf8_next(const unsigned char *s, size_t *len)
{
	unsigned cp;

	if (*s && *s < 0x80) {
		*len = 1; /* ASCII: most of what wildcards compare */
		return *s;
	}
	*len = gv_utf8_decode((const char *)s, strnlen((const char *)s, 4), &cp);
	return cp;
}

bool value_wildcard(const char *pattern, const char *text)
{
	return value_wildcard_bounded(pattern, text, SIZE_MAX, NULL) > 0;
}

int value_wildcard_bounded(const char *pattern, const char *text, size_t max_work, size_t *work)
{
	const unsigned char *p = (const unsigned char *)pattern;
	const unsigned char *t = (const unsigned char *)text;
	const unsigned char *star_p = NULL, *star_t = NULL;
	size_t pl, tl, n = 0;
	uint32_t pc, tc;

	if (work)
		*work = 0;
	if (!*p)
		return !*t;
	if (p[0] == '*' && !p[1])
		return 1;
	/*
	 * Iterative form of go-wildcard's recursive deepMatchRune: on a
	 * mismatch, let the last '*' absorb one more code point.
	 */
	while (*t) {
		if (++n > max_work) {
			if (work)
				*work = n - 1;
			return -1;
		}
		tc = utf8_next(t, &tl);
		if (*p) {
			pc = utf8_next(p, &pl);
			if (pc == '*') {
				star_p = p;
				star_t = t;
				p += pl;
				continue;
			}
			if (pc == '?' || pc == tc) {
				p += pl;
				t += tl;
				continue;
			}
		}
		if (!star_p) {
			if (work)
				*work = n;
			return 0;
		}
		p = star_p + 1;
		utf8_next(star_t, &tl);
		star_t += tl;
		t = star_t;
	}
	if (work)
		*work = n;
	while (*p == '*')
		p++;
	return !*p;
}

bool value_has_wildcard(const char *s)
{
	return strpbrk(s, "*?") != NULL;
}

/* ------------------------------------------------------------------ */
/* Quantities                                                          */

#define QTY_NANO_CAP_DIGITS 28

/* (2^63-1) * 10^9: the largest magnitude the slow path keeps, in units of 1n. */
static u128 qty_cap(void)
{
	return (u128)INT64_MAX * 1000000000u;
}

/* Number of decimal digits of v (0 for 0), without 128-bit divisions. */
static int u128_digits(u128 v)
{
	u128 p = 10;
	int n = 1;

	if (!v)
		return 0;
	if ((uint64_t)(v >> 64) == 0) {
		uint64_t w = (uint64_t)v, q = 10;

		while (n < 20 && w >= q) {
			q *= 10;
			n++;
		}
		return n;
	}
	while (n < 39 && v >= p) {
		p *= 10;
		n++;
	}
	return n;
}

/* 10^e as a long double; exact for the small exponents quantities use. */
static long double qty_pow10(long long e)
{
	static const long double tab[] = {1e0L,	 1e1L,	1e2L,  1e3L,  1e4L,  1e5L,  1e6L,
					  1e7L,	 1e8L,	1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
					  1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L};

	if (e >= 0 && e <= 20)
		return tab[e];
	if (e < 0 && e >= -20)
		return 1.0L / tab[-e];
	return powl(10.0L, (long double)e);
}

static void qty_set(struct value_quantity *q, bool neg, u128 coef, long long exp10, bool binary)
{
	if ((uint64_t)(coef >> 64) == 0) {
		uint64_t c = (uint64_t)coef;

		while (c && c % 10 == 0 && exp10 < LLONG_MAX) {
			c /= 10;
			exp10++;
		}
		coef = c;
	}
	while (coef && coef % 10 == 0 && exp10 < LLONG_MAX) {
		coef /= 10;
		exp10++;
	}
	q->neg = coef ? neg : false;
	q->coef_hi = (unsigned long long)(coef >> 64);
	q->coef_lo = (unsigned long long)coef;
	q->exp10 = coef ? exp10 : 0;
	q->binary = binary;
	if (!coef)
		q->v = 0;
	else if (exp10 > 5000)
		q->v = HUGE_VALL;
	else if (exp10 < -5000)
		q->v = 0;
	else
		q->v = (long double)coef * qty_pow10(exp10);
	if (q->neg)
		q->v = -q->v;
}

/*
 * Slow path of ParseQuantity (the inf.Dec branch): the exact value
 * digits * 10^dexp * 2^e2, rounded up to a multiple of 1n and capped at
 * 2^63-1. Returns the magnitude in units of 1n.
 */
static u128 qty_slow(const char *num, size_t numlen, const char *den, size_t denlen, long long dexp,
		     int e2)
{
	unsigned char stackbuf[160], *d; /* little-endian decimal digits */
	size_t cap = numlen + denlen + 24, n = 0, i;
	long long k, L;
	u128 nano = 0;
	bool sticky = false;

	d = cap <= sizeof(stackbuf) ? stackbuf : gv_xmalloc(cap);
	for (i = denlen; i-- > 0;)
		d[n++] = (unsigned char)(den[i] - '0');
	for (i = numlen; i-- > 0;)
		d[n++] = (unsigned char)(num[i] - '0');
	while (n && !d[n - 1])
		n--;
	if (!n)
		goto out;
	/* multiply by 2^e2, at most 2^20 per pass so carries stay small */
	while (e2 > 0) {
		int sh = e2 > 20 ? 20 : e2;
		unsigned long carry = 0;

		for (i = 0; i < n; i++) {
			unsigned long x = ((unsigned long)d[i] << sh) + carry;

			d[i] = (unsigned char)(x % 10);
			carry = x / 10;
		}
		while (carry) {
			d[n++] = (unsigned char)(carry % 10);
			carry /= 10;
		}
		e2 -= sh;
	}
	k = dexp + 9; /* value in nano units = A * 10^k */
	L = (long long)n;
	if (k > QTY_NANO_CAP_DIGITS || L + k > QTY_NANO_CAP_DIGITS) {
		nano = qty_cap();
		goto out;
	}
	if (k >= 0) {
		for (i = n; i-- > 0;)
			nano = nano * 10 + d[i];
		for (long long j = 0; j < k; j++)
			nano *= 10;
	} else {
		size_t m = (size_t)(-k);

		if (m >= n) {
			nano = 0;
			sticky = true; /* the digits are not all zero */
		} else {
			for (i = 0; i < m; i++)
				if (d[i])
					sticky = true;
			for (i = n; i-- > m;)
				nano = nano * 10 + d[i];
		}
		if (sticky)
			nano++;
	}
	if (nano > qty_cap())
		nano = qty_cap();
out:
	if (d != stackbuf)
		free(d);
	return nano;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_suffix_char(char c)
{
	switch (c) {
	case 'e':
	case 'E':
	case 'i':
	case 'n':
	case 'u':
	case 'm':
	case 'k':
	case 'K':
	case 'M':
	case 'G':
	case 'T':
	case 'P':
		return true;
	default:
		return false;
	}
}

bool value_parse_quantity(const char *s, struct value_quantity *q)
{
	size_t len = strlen(s), pos = 0, num_start, numlen, den_start = 0, denlen = 0, i;
	const char *num;
	const char *suffix;
	size_t suflen;
	bool neg = false;
	int base = 10;
	long long exponent = 0;

	if (len == 0)
		return false;
	if (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-';
		pos++;
	}
	while (pos < len && s[pos] == '0')
		pos++;
	if (pos >= len) {
		qty_set(q, false, 0, 0, false);
		return true;
	}
	num_start = pos;
	while (pos < len && is_digit(s[pos]))
		pos++;
	num = s + num_start;
	numlen = pos - num_start;
	if (numlen == 0) {
		num = "0";
		numlen = 1;
	}
	if (pos < len && s[pos] == '.') {
		pos++;
		den_start = pos;
		while (pos < len && is_digit(s[pos]))
			pos++;
		denlen = pos - den_start;
	}
	suffix = s + pos;
	while (pos < len && is_suffix_char(s[pos]))
		pos++;
	if (pos < len && (s[pos] == '-' || s[pos] == '+'))
		pos++;
	while (pos < len && is_digit(s[pos]))
		pos++;
	if (pos < len)
		return false;
	suflen = (size_t)(s + len - suffix);

	/* quantitySuffixer.interpret */
	{
		static const char dec[] = "num kMGTPE";
		static const int dec_exp[] = {-9, -6, -3, 0, 3, 6, 9, 12, 15, 18};
		static const char bin[] = "KMGTPE";
		const char *hit;
		bool found = false;

		if (suflen == 0) {
			found = true;
		} else if (suflen == 1 && suffix[0] != ' ' && (hit = strchr(dec, suffix[0]))) {
			exponent = dec_exp[hit - dec];
			found = true;
		} else if (suflen == 2 && suffix[1] == 'i' && suffix[0] &&
			   (hit = strchr(bin, suffix[0]))) {
			base = 2;
			exponent = 10 * (hit - bin + 1);
			found = true;
		}
		if (!found) {
			long long e;

			if (suflen < 2 || (suffix[0] != 'e' && suffix[0] != 'E'))
				return false;
			if (!value_parse_go_int(suffix + 1, &e))
				return false;
			exponent = (int32_t)(uint32_t)(unsigned long long)e; /* Go's int32() */
		}
	}

	if (base == 10) {
		long long precision = 18 - (long long)(numlen + denlen);
		long long scale = exponent - (long long)denlen;

		if (precision >= 0 && scale >= -9) {
			unsigned long long v = 0;

			for (i = 0; i < numlen; i++)
				v = v * 10 + (unsigned long long)(num[i] - '0');
			for (i = 0; i < denlen; i++)
				v = v * 10 + (unsigned long long)(s[den_start + i] - '0');
			qty_set(q, neg, v, scale, false);
			return true;
		}
		qty_set(q, neg, qty_slow(num, numlen, s + den_start, denlen, scale, 0), -9, false);
		return true;
	}
	if (denlen == 0) {
		long long precision = 15 - (long long)numlen - exponent * 3 / 10 - 1;

		if (precision >= 0) {
			unsigned long long v = 0;

			for (i = 0; i < numlen; i++)
				v = v * 10 + (unsigned long long)(num[i] - '0');
			if (v <= ((unsigned long long)INT64_MAX >> exponent)) {
				qty_set(q, neg, (u128)v << exponent, 0, true);
				return true;
			}
		}
	}
	qty_set(q, neg,
		qty_slow(num, numlen, s + den_start, denlen, -(long long)denlen, (int)exponent), -9,
		true);
	return true;
}

static u128 qty_coef(const struct value_quantity *q)
{
	return ((u128)q->coef_hi << 64) | q->coef_lo;
}

int value_quantity_cmp(const struct value_quantity *a, const struct value_quantity *b)
{
	u128 ca = qty_coef(a), cb = qty_coef(b);
	int sa = ca ? (a->neg ? -1 : 1) : 0;
	int sb = cb ? (b->neg ? -1 : 1) : 0;
	int da, db, mag;
	long long ea, eb;

	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (!sa)
		return 0;
	if (a->exp10 == b->exp10) {
		mag = ca < cb ? -1 : ca > cb ? 1 : 0;
		return sa > 0 ? mag : -mag;
	}
	da = u128_digits(ca);
	db = u128_digits(cb);
	ea = a->exp10 + da;
	eb = b->exp10 + db;
	if (ea != eb) {
		mag = ea < eb ? -1 : 1;
	} else {
		/* same magnitude: align the exponents (the gap is < 40 digits) */
		long long ga = a->exp10, gb = b->exp10;

		while (ga > gb) {
			ca *= 10;
			ga--;
		}
		while (gb > ga) {
			cb *= 10;
			gb--;
		}
		mag = ca < cb ? -1 : ca > cb ? 1 : 0;
	}
	return sa > 0 ? mag : -mag;
}

/* ------------------------------------------------------------------ */
/* Durations (Go time.ParseDuration / Duration.String)                 */

static const struct {
	const char *name;
	size_t len;
	uint64_t ns;
} duration_units[] = {
    {"ns", 2, 1ull},	       {"us", 2, 1000ull},
    {"\xc2\xb5s", 3, 1000ull}, /* U+00B5 micro sign */
    {"\xce\xbcs", 3, 1000ull}, /* U+03BC greek mu */
    {"ms", 2, 1000000ull},     {"s", 1, 1000000000ull},
    {"m", 1, 60000000000ull},  {"h", 1, 3600000000000ull},
};

bool value_parse_duration(const char *s, long double *ns)
{
	const uint64_t lim = 1ull << 63;
	uint64_t d = 0;
	bool neg = false;

	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return true;
	}
	if (!*s)
		return false;
	while (*s) {
		uint64_t v = 0, f = 0, unit = 0;
		double scale = 1;
		bool pre = false, post = false, overflow = false;
		size_t ulen = 0, i;

		if (!(*s == '.' || is_digit(*s)))
			return false;
		for (; is_digit(*s); s++) {
			if (v > lim / 10)
				return false;
			v = v * 10 + (uint64_t)(*s - '0');
			if (v > lim)
				return false;
			pre = true;
		}
		if (*s == '.') {
			s++;
			for (; is_digit(*s); s++) {
				uint64_t y;

				post = true;
				if (overflow)
					continue;
				if (f > (lim - 1) / 10) {
					overflow = true;
					continue;
				}
				y = f * 10 + (uint64_t)(*s - '0');
				if (y > lim) {
					overflow = true;
					continue;
				}
				f = y;
				scale *= 10;
			}
		}
		if (!pre && !post)
			return false;
		while (s[ulen] && s[ulen] != '.' && !is_digit(s[ulen]))
			ulen++;
		if (ulen == 0)
			return false;
		for (i = 0; i < GV_ARRAY_LEN(duration_units); i++) {
			if (duration_units[i].len == ulen &&
			    memcmp(duration_units[i].name, s, ulen) == 0) {
				unit = duration_units[i].ns;
				break;
			}
		}
		if (!unit)
			return false;
		s += ulen;
		if (v > lim / unit)
			return false;
		v *= unit;
		if (f > 0) {
			v += (uint64_t)((double)f * ((double)unit / scale));
			if (v > lim)
				return false;
		}
		d += v;
		if (d > lim)
			return false;
	}
	if (neg) {
		*ns = -(long double)d;
		return true;
	}
	if (d > lim - 1)
		return false;
	*ns = (long double)d;
	return true;
}

/* fmtFrac of Go's time package: writes ".ddd" (trailing zeros dropped) backwards. */
static size_t dur_frac(char *buf, size_t w, uint64_t *v, int prec)
{
	bool print = false;

	for (int i = 0; i < prec; i++) {
		unsigned digit = (unsigned)(*v % 10);

		print = print || digit != 0;
		if (print)
			buf[--w] = (char)('0' + digit);
		*v /= 10;
	}
	if (print)
		buf[--w] = '.';
	return w;
}

static size_t dur_int(char *buf, size_t w, uint64_t v)
{
	if (v == 0) {
		buf[--w] = '0';
		return w;
	}
	while (v > 0) {
		buf[--w] = (char)('0' + v % 10);
		v /= 10;
	}
	return w;
}

void value_format_duration(long double ns, struct gv_buf *out)
{
	char buf[40];
	size_t w = sizeof(buf);
	int64_t d;
	uint64_t u;
	bool neg;

	if (ns != ns)
		d = 0;
	else if (ns >= 9223372036854775807.0L)
		d = INT64_MAX;
	else if (ns <= -9223372036854775808.0L)
		d = INT64_MIN;
	else
		d = (int64_t)ns;
	neg = d < 0;
	u = neg ? -(uint64_t)d : (uint64_t)d;
	if (u < 1000000000ull) {
		int prec;

		buf[--w] = 's';
		if (u == 0) {
			buf[--w] = '0';
			gv_buf_add(out, buf + w, sizeof(buf) - w);
			return;
		} else if (u < 1000ull) {
			prec = 0;
			buf[--w] = 'n';
		} else if (u < 1000000ull) {
			prec = 3;
			buf[--w] = '\xb5';
			buf[--w] = '\xc2';
		} else {
			prec = 6;
			buf[--w] = 'm';
		}
		w = dur_frac(buf, w, &u, prec);
		w = dur_int(buf, w, u);
	} else {
		buf[--w] = 's';
		w = dur_frac(buf, w, &u, 9);
		w = dur_int(buf, w, u % 60);
		u /= 60;
		if (u > 0) {
			buf[--w] = 'm';
			w = dur_int(buf, w, u % 60);
			u /= 60;
			if (u > 0) {
				buf[--w] = 'h';
				w = dur_int(buf, w, u);
			}
		}
	}
	if (neg)
		buf[--w] = '-';
	gv_buf_add(out, buf + w, sizeof(buf) - w);
}

/* ------------------------------------------------------------------ */
/* Go number parsing                                                   */

bool value_parse_go_int(const char *s, long long *out)
{
	unsigned long long v = 0, lim;
	bool neg = false;

	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	if (!*s)
		return false;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; *s; s++) {
		if (!is_digit(*s))
			return false;
		if (v > (lim - (unsigned long long)(*s - '0')) / 10)
			return false;
		v = v * 10 + (unsigned long long)(*s - '0');
	}
	if (neg)
		*out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
	else
		*out = (long long)v;
	return true;
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool is_hex(char c)
{
	c = lower(c);
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

/* strconv.underscoreOK */
static bool underscore_ok(const char *s)
{
	char saw = '^';
	size_t i = 0, n;
	bool hex = false;

	if (*s == '-' || *s == '+')
		s++;
	n = strlen(s);
	if (n >= 2 && s[0] == '0' &&
	    (lower(s[1]) == 'b' || lower(s[1]) == 'o' || lower(s[1]) == 'x')) {
		i = 2;
		saw = '0';
		hex = lower(s[1]) == 'x';
	}
	for (; i < n; i++) {
		if (is_digit(s[i]) || (hex && is_hex(s[i]))) {
			saw = '0';
			continue;
		}
		if (s[i] == '_') {
			if (saw != '0')
				return false;
			saw = '_';
			continue;
		}
		if (saw == '_')
			return false;
		saw = '!';
	}
	return saw != '_';
}

static bool ieq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (lower(*a) != lower(*b))
			return false;
	return !*a && !*b;
}

bool value_parse_go_float(const char *s, double *out)
{
	const char *p = s;
	char stackbuf[128], *clean = NULL;
	bool sign = false, hex = false, digits = false, underscores = false, ok = false;
	size_t n, j = 0;
	double v;

	if (*p == '-' || *p == '+') {
		sign = true;
		p++;
	}
	if (ieq(p, "inf") || ieq(p, "infinity")) {
		*out = s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
		return true;
	}
	if (!sign && ieq(p, "nan")) {
		*out = NAN;
		return true;
	}
	/* syntax check (readFloat) */
	if (p[0] == '0' && lower(p[1]) == 'x') {
		hex = true;
		p += 2;
	}
	for (; *p; p++) {
		if (*p == '_') {
			underscores = true;
			continue;
		}
		if (is_digit(*p) || (hex && is_hex(*p)))
			digits = true;
		else
			break;
	}
	if (*p == '.') {
		for (p++; *p; p++) {
			if (*p == '_') {
				underscores = true;
				continue;
			}
			if (is_digit(*p) || (hex && is_hex(*p)))
				digits = true;
			else
				break;
		}
	}
	if (!digits)
		return false;
	if ((!hex && lower(*p) == 'e') || (hex && lower(*p) == 'p')) {
		bool edig = false;

		p++;
		if (*p == '-' || *p == '+')
			p++;
		for (; *p; p++) {
			if (*p == '_') {
				underscores = true;
				continue;
			}
			if (!is_digit(*p))
				break;
			edig = true;
		}
		if (!edig)
			return false;
	} else if (hex) {
		return false; /* hexadecimal mantissa requires a 'p' exponent */
	}
	if (*p)
		return false;
	if (underscores && !underscore_ok(s))
		return false;
	n = strlen(s);
	clean = n < sizeof(stackbuf) ? stackbuf : gv_xmalloc(n + 1);
	for (p = s; *p; p++)
		if (*p != '_')
			clean[j++] = *p;
	clean[j] = '\0';
	errno = 0;
	v = strtod(clean, NULL);
	if (errno == ERANGE && isinf(v))
		goto out;
	*out = v;
	ok = true;
out:
	if (clean != stackbuf)
		free(clean);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Go float formatting                                                 */

/*
 * Shortest decimal digits that round-trip to v (v finite, > 0): fills
 * digits (no trailing zeros, NUL-terminated) and returns the decimal point
 * position dp (value = 0.digits * 10^dp).
 */
static int float_shortest(double v, char *digits, size_t n)
{
	char buf[64];
	int prec, exp = 0;
	size_t j = 0;
	const char *p;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	for (p = buf; *p && *p != 'e'; p++)
		if (is_digit(*p) && j + 1 < n)
			digits[j++] = *p;
	digits[j] = '\0';
	while (j > 1 && digits[j - 1] == '0')
		digits[--j] = '\0';
	if (*p == 'e')
		exp = (int)strtol(p + 1, NULL, 10);
	return exp + 1;
}

static void fmt_e(struct gv_buf *out, const char *digits, int dp, char e)
{
	int exp = digits[0] == '0' ? 0 : dp - 1;
	char tmp[16];

	gv_buf_addc(out, digits[0]);
	if (digits[1]) {
		gv_buf_addc(out, '.');
		gv_buf_adds(out, digits + 1);
	}
	snprintf(tmp, sizeof(tmp), "%c%c%02d", e, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	gv_buf_adds(out, tmp);
}

static void fmt_f(struct gv_buf *out, const char *digits, int dp)
{
	int nd = (int)strlen(digits), i;

	if (dp <= 0) {
		gv_buf_addc(out, '0');
	} else {
		for (i = 0; i < dp; i++)
			gv_buf_addc(out, i < nd ? digits[i] : '0');
	}
	if (nd > dp) {
		gv_buf_addc(out, '.');
		for (i = dp; i < 0; i++)
			gv_buf_addc(out, '0');
		for (i = dp < 0 ? 0 : dp; i < nd; i++)
			gv_buf_addc(out, digits[i]);
	}
}

void value_format_float(double v, char fmt, struct gv_buf *out)
{
	char digits[32];
	int dp;

	if (isnan(v)) {
		gv_buf_adds(out, "NaN");
		return;
	}
	if (isinf(v)) {
		gv_buf_adds(out, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (signbit(v)) {
		gv_buf_addc(out, '-');
		v = -v;
	}
	if (v == 0) {
		digits[0] = '0';
		digits[1] = '\0';
		dp = 1;
	} else {
		dp = float_shortest(v, digits, sizeof(digits));
	}
	switch (fmt) {
	case 'e':
	case 'E':
		fmt_e(out, digits, dp, fmt);
		break;
	case 'f':
		fmt_f(out, digits, dp);
		break;
	default: {
		int exp = dp - 1;

		if (v != 0 && (exp < -4 || exp >= 6))
			fmt_e(out, digits, dp, 'e');
		else
			fmt_f(out, digits, v == 0 ? 1 : dp);
		break;
	}
	}
}

/* ------------------------------------------------------------------ */
/* Go %v of JSON values                                                */

#define GO_FORMAT_MAX_DEPTH 256

/*
 * Appends v's text while out->len stays within limit; false as soon as it
 * would not (out then holds a partial text the caller cuts). Every value
 * appends a byte at least (a separator, a bracket, a colon), so the walk
 * stops after about limit values.
 */
static bool go_format(const json_t *v, struct gv_buf *out, int depth, size_t limit)
{
	if (depth > GO_FORMAT_MAX_DEPTH) {
		gv_buf_adds(out, "...");
		return out->len <= limit;
	}
	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_STRING:
		if (json_string_length(v) > limit - out->len)
			return false;
		gv_buf_add(out, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		gv_buf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		value_format_float(json_real_value(v), 'g', out);
		break;
	case JSON_TRUE:
		gv_buf_adds(out, "true");
		break;
	case JSON_FALSE:
		gv_buf_adds(out, "false");
		break;
	case JSON_NULL:
		gv_buf_adds(out, "<nil>");
		break;
	case JSON_ARRAY: {
		size_t i;

		gv_buf_addc(out, '[');
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				gv_buf_addc(out, ' ');
			if (out->len > limit ||
			    !go_format(json_array_get(v, i), out, depth + 1, limit))
				return false;
		}
		gv_buf_addc(out, ']');
		break;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		const char **keys;
		const char *k;
		json_t *val;
		/* jansson's iterators take non-const objects; nothing is modified */
		json_t *obj = (json_t *)(uintptr_t)v;

		/* a colon per key: do not sort keys that cannot all be written */
		if (n > limit - out->len)
			return false;
		keys = gv_xcalloc(n ? n : 1, sizeof(*keys));
		json_object_foreach(obj, k, val)
		{
			(void)val;
			keys[i++] = k;
		}
		qsort(keys, n, sizeof(*keys), gv_strptr_cmp);
		gv_buf_adds(out, "map[");
		for (i = 0; i < n; i++) {
			if (i)
				gv_buf_addc(out, ' ');
			if (out->len > limit || strlen(keys[i]) > limit - out->len) {
				free(keys);
				return false;
			}
			gv_buf_adds(out, keys[i]);
			gv_buf_addc(out, ':');
			if (out->len > limit ||
			    !go_format(json_object_get(v, keys[i]), out, depth + 1, limit)) {
				free(keys);
				return false;
			}
		}
		gv_buf_addc(out, ']');
		free(keys);
		break;
	}
	}
	return out->len <= limit;
}

void value_go_format(const json_t *v, struct gv_buf *out)
{
	go_format(v, out, 0, SIZE_MAX);
}

bool value_go_format_max(const json_t *v, struct gv_buf *out, size_t max)
{
	size_t start = out->len;

	if (go_format(v, out, 0, max > SIZE_MAX - start ? SIZE_MAX : start + max))
		return true;
	out->len = start;
	if (out->data)
		out->data[start] = '\0';
	return false;
}

/* A frame of value_walk_cost's walk. */
struct walk_frame {
	const json_t *v;
	size_t i; /* next element of an array */
	void *it; /* next member of an object */
};

/* value_walk_cost, and value_count when bytes is false. */
static size_t walk(const json_t *v, size_t max, bool bytes)
{
	struct walk_frame small[32], *st = small;
	size_t n = 0, cap = sizeof(small) / sizeof(small[0]), cost = 1;
	/* jansson's iterators take non-const objects; nothing is modified */
	json_t *root = (json_t *)(uintptr_t)v;

	if (bytes && json_is_string(v))
		return 1 + json_string_length(v) / 16;
	if (!json_is_array(v) && !json_is_object(v))
		return 1;
	st[n++] = (struct walk_frame){root, 0, json_object_iter(root)};
	while (n && cost <= max) {
		struct walk_frame *f = &st[n - 1];
		json_t *c = NULL;

		if (json_is_array(f->v)) {
			if (f->i < json_array_size(f->v))
				c = json_array_get(f->v, f->i++);
		} else if (f->it) {
			if (bytes)
				cost += strlen(json_object_iter_key(f->it)) / 16;
			c = json_object_iter_value(f->it);
			f->it = json_object_iter_next((json_t *)(uintptr_t)f->v, f->it);
		}
		if (!c) {
			n--;
			continue;
		}
		cost += 1 + (bytes && json_is_string(c) ? json_string_length(c) / 16 : 0);
		if (!json_is_array(c) && !json_is_object(c))
			continue;
		if (n == cap) {
			struct walk_frame *bigger = gv_xcalloc(2 * cap, sizeof(*st));
			memcpy(bigger, st, n * sizeof(*st));
			if (st != small)
				free(st);
			st = bigger;
			cap *= 2;
		}
		st[n++] = (struct walk_frame){c, 0, json_object_iter(c)};
	}
	if (st != small)
		free(st);
	return cost;
}

size_t value_walk_cost(const json_t *v, size_t max)
{
	return walk(v, max, true);
}

size_t value_count(const json_t *v, size_t max)
{
	return walk(v, max, false);
}

char *value_go_string(const json_t *v)
{
	struct gv_buf b = {0};

	value_go_format(v, &b);
	return gv_buf_detach(&b);
}

/* ------------------------------------------------------------------ */
/* Semantic versions (github.com/blang/semver v4)                      */

static bool semver_num(const char *s, size_t n, long long *out)
{
	unsigned long long v = 0;
	size_t i;

	if (n == 0 || (n > 1 && s[0] == '0'))
		return false;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		if (v > ((unsigned long long)LLONG_MAX - (unsigned long long)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (unsigned long long)(s[i] - '0');
	}
	*out = (long long)v;
	return true;
}

static bool semver_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

/* Checks dot-separated identifiers; numeric ones must not have leading zeros when pre. */
static bool semver_idents(const char *s, size_t n, bool pre)
{
	size_t start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.') {
			if (!semver_alnum(s[i]))
				return false;
			continue;
		}
		if (i == start)
			return false;
		if (pre) {
			bool numeric = true;

			for (size_t j = start; j < i; j++)
				if (!is_digit(s[j]))
					numeric = false;
			if (numeric && i - start > 1 && s[start] == '0')
				return false;
		}
		start = i + 1;
	}
	return true;
}

bool value_parse_semver(const char *s, struct value_semver *v)
{
	const char *dot1, *dot2, *patch, *plus, *dash, *end;
	size_t plen;

	if (*s == 'v')
		s++;
	if (!*s)
		return false;
	dot1 = strchr(s, '.');
	if (!dot1)
		return false;
	dot2 = strchr(dot1 + 1, '.');
	if (!dot2)
		return false;
	if (!semver_num(s, (size_t)(dot1 - s), &v->major) ||
	    !semver_num(dot1 + 1, (size_t)(dot2 - dot1 - 1), &v->minor))
		return false;
	patch = dot2 + 1;
	end = patch + strlen(patch);
	plus = strchr(patch, '+');
	if (plus) {
		if (!semver_idents(plus + 1, (size_t)(end - plus - 1), false))
			return false;
		end = plus;
	}
	dash = memchr(patch, '-', (size_t)(end - patch));
	v->pre[0] = '\0';
	if (dash) {
		plen = (size_t)(end - dash - 1);
		if (!semver_idents(dash + 1, plen, true) || plen >= sizeof(v->pre))
			return false;
		memcpy(v->pre, dash + 1, plen);
		v->pre[plen] = '\0';
		end = dash;
	}
	return semver_num(patch, (size_t)(end - patch), &v->patch);
}

static int cmp_ll(long long a, long long b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return n > 0;
}

int value_semver_cmp(const struct value_semver *a, const struct value_semver *b)
{
	const char *pa = a->pre, *pb = b->pre;
	int c;

	if ((c = cmp_ll(a->major, b->major)) || (c = cmp_ll(a->minor, b->minor)) ||
	    (c = cmp_ll(a->patch, b->patch)))
		return c;
	if (!*pa && !*pb)
		return 0;
	if (!*pa)
		return 1;
	if (!*pb)
		return -1;
	for (;;) {
		size_t na = strcspn(pa, "."), nb = strcspn(pb, ".");
		bool da = all_digits(pa, na), db = all_digits(pb, nb);

		if (da && db) {
			/* no leading zeros: longer means bigger */
			if (na != nb)
				return na < nb ? -1 : 1;
			c = memcmp(pa, pb, na);
		} else if (da != db) {
			return da ? -1 : 1;
		} else {
			c = memcmp(pa, pb, na < nb ? na : nb);
			if (!c && na != nb)
				c = na < nb ? -1 : 1;
		}
		if (c)
			return c < 0 ? -1 : 1;
		pa += na;
		pb += nb;
		if (!*pa && !*pb)
			return 0;
		if (!*pa)
			return -1;
		if (!*pb)
			return 1;
		pa++;
		pb++;
	}
}

/* ------------------------------------------------------------------ */

bool value_number(const json_t *v, double *out)
{
	if (json_is_integer(v)) {
		*out = (double)json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		*out = json_real_value(v);
		return true;
	}
	return false;
}

/* A plain decimal "[+-]digits[.digits][e[+-]digits | decimal SI suffix]" split exactly. */
struct bigdec {
	bool neg;
	const char *digits; /* significant digits, no leading zeros (points into a buffer) */
	size_t n;
	long long exp; /* value = 0.digits * 10^exp */
};

static bool bigdec_parse(const char *s, char *buf, size_t cap, struct bigdec *d)
{
	static const struct {
		char suffix;
		int exp;
	} si[] = {{'n', -9}, {'u', -6}, {'m', -3}, {'k', 3}, {'M', 6},
		  {'G', 9},  {'T', 12}, {'P', 15}, {'E', 18}};
	const char *p = s;
	size_t n = 0, intdigits = 0;
	bool seen_point = false, any = false;
	long long e = 0;

	memset(d, 0, sizeof(*d));
	if (*p == '+' || *p == '-')
		d->neg = *p++ == '-';
	for (; (*p >= '0' && *p <= '9') || (*p == '.' && !seen_point); p++) {
		if (*p == '.') {
			seen_point = true;
			continue;
		}
		any = true;
		if (n == 0 && *p == '0') {
			if (!seen_point)
				continue; /* leading zero of the integer part */
			e--;		  /* leading zero of the fraction */
			continue;
		}
		if (n + 1 >= cap)
			return false;
		buf[n++] = *p;
		if (!seen_point)
			intdigits++;
	}
	if (!any)
		return false;
	if (*p == 'e' || *p == 'E') {
		long long x;

		/* as value_parse_quantity reads it: Go's int, cut to int32 */
		if (!value_parse_go_int(p + 1, &x))
			return false;
		e += (int32_t)(uint32_t)(unsigned long long)x;
	} else if (*p) {
		bool found = false;
		for (size_t i = 0; i < sizeof(si) / sizeof(si[0]); i++)
			if (p[0] == si[i].suffix && !p[1]) {
				e += si[i].exp;
				found = true;
			}
		if (!found)
			return false;
	}
	while (n && buf[n - 1] == '0')
		n--;
	buf[n] = '\0';
	d->digits = buf;
	d->n = n;
	d->exp = (long long)intdigits + e;
	if (!n)
		d->neg = false;
	return true;
}

static int bigdec_cmp(const struct bigdec *a, const struct bigdec *b)
{
	int sign = a->neg ? -1 : 1, c;

	if (!a->n || !b->n)
		return !a->n && !b->n ? 0 : (!a->n ? (b->neg ? 1 : -1) : sign);
	if (a->neg != b->neg)
		return sign;
	if (a->exp != b->exp)
		return a->exp > b->exp ? sign : -sign;
	c = strcmp(a->digits, b->digits);
	return c == 0 ? 0 : (c > 0 ? sign : -sign);
}

bool value_quantity_cmp_text(const char *a, const char *b, int *cmp)
{
	struct value_quantity qa, qb;

	if (!value_parse_quantity(a, &qa) || !value_parse_quantity(b, &qb))
		return false;
	if ((fabsl(qa.v) >= 9.2e18L && !qa.binary) || (fabsl(qb.v) >= 9.2e18L && !qb.binary)) {
		char ba[1024], bb[1024];
		struct bigdec da, db;
		if (bigdec_parse(a, ba, sizeof(ba), &da) && bigdec_parse(b, bb, sizeof(bb), &db)) {
			*cmp = bigdec_cmp(&da, &db);
			return true;
		}
	}
	*cmp = value_quantity_cmp(&qa, &qb);
	return true;
}
