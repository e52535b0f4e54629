/*
 * jp_fn_strings.c - Kyverno's string functions (compare, equal_fold, replace,
 * replace_all, to_upper, to_lower, trim, trim_prefix, split, truncate,
 * path_canonicalize, to_boolean) and Go's case mapping for common scripts.
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
/* Case mapping (Go's unicode.ToUpper/ToLower for common scripts)       */

static unsigned uc_lower(unsigned c)
{
	if (c < 0x80)
		return c >= 'A' && c <= 'Z' ? c + 32 : c;
	if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
		return c + 32;
	if (c >= 0x100 && c <= 0x17F) {
		if (c == 0x130)
			return 'i';
		if (c == 0x178)
			return 0xFF;
		if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F)
			return c;
		if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
			return c % 2 ? c + 1 : c;
		return c % 2 ? c : c + 1;
	}
	if (c >= 0x391 && c <= 0x3AB && c != 0x3A2)
		return c + 32;
	if (c == 0x386)
		return 0x3AC;
	if (c >= 0x388 && c <= 0x38A)
		return c + 37;
	if (c == 0x38C)
		return 0x3CC;
	if (c == 0x38E || c == 0x38F)
		return c + 63;
	if (c >= 0x410 && c <= 0x42F)
		return c + 32;
	if (c >= 0x400 && c <= 0x40F)
		return c + 80;
	if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F))
		return c % 2 ? c : c + 1;
	if (c >= 0x531 && c <= 0x556)
		return c + 48;
	if (c >= 0x1E00 && c <= 0x1EFF && !(c >= 0x1E96 && c <= 0x1E9F))
		return c % 2 ? c : c + 1;
	if (c >= 0xFF21 && c <= 0xFF3A)
		return c + 32;
	return c;
}

static unsigned uc_upper(unsigned c)
{
	if (c < 0x80)
		return c >= 'a' && c <= 'z' ? c - 32 : c;
	if (c == 0xB5)
		return 0x39C;
	if (c == 0xFF)
		return 0x178;
	if (c >= 0xE0 && c <= 0xFE && c != 0xF7)
		return c - 32;
	if (c >= 0x100 && c <= 0x17F) {
		if (c == 0x131)
			return 'I';
		if (c == 0x17F)
			return 'S';
		if (c == 0x130 || c == 0x138 || c == 0x149 || c == 0x178)
			return c;
		if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
			return c % 2 ? c : c - 1;
		return c % 2 ? c - 1 : c;
	}
	if (c == 0x3C2)
		return 0x3A3;
	if (c >= 0x3B1 && c <= 0x3CB)
		return c - 32;
	if (c == 0x3AC)
		return 0x386;
	if (c >= 0x3AD && c <= 0x3AF)
		return c - 37;
	if (c == 0x3CC)
		return 0x38C;
	if (c == 0x3CD || c == 0x3CE)
		return c - 63;
	if (c >= 0x430 && c <= 0x44F)
		return c - 32;
	if (c >= 0x450 && c <= 0x45F)
		return c - 80;
	if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F))
		return c % 2 ? c - 1 : c;
	if (c >= 0x561 && c <= 0x586)
		return c - 48;
	if (c >= 0x1E00 && c <= 0x1EFF && !(c >= 0x1E96 && c <= 0x1E9F))
		return c % 2 ? c - 1 : c;
	if (c >= 0xFF41 && c <= 0xFF5A)
		return c - 32;
	return c;
}

/* Simple case folding for equal_fold: lower case plus the few letters whose orbit is wider. */
static unsigned uc_fold(unsigned c)
{
	if (c == 0x17F)
		return 's';
	if (c == 0x212A)
		return 'k';
	if (c == 0x212B)
		return 0xE5;
	if (c == 0x3C2)
		return 0x3C3;
	if (c == 0xB5)
		return 0x3BC;
	return uc_lower(c);
}

static int map_case(struct jp_ev *ev, const char *fname, struct jp_arg *args, bool upper,
		    json_t **out)
{
	struct gv_buf b = {0};
	const char *s = STR(0);
	size_t n = SLEN(0), i = 0;
	unsigned cp;

	while (i < n) {
		i += gv_utf8_decode(s + i, n - i, &cp);
		gv_utf8_put(&b, upper ? uc_upper(cp) : uc_lower(cp));
	}
	return jp_out_buf(ev, fname, &b, out);
}

/* ------------------------------------------------------------------ */
/* String functions                                                     */

int jp_fn_compare(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	size_t a = SLEN(0), b = SLEN(1);
	int c = memcmp(STR(0), STR(1), a < b ? a : b);

	if (c == 0)
		c = a < b ? -1 : a > b;
	*out = json_integer(c < 0 ? -1 : c > 0);
	return 0;
}

int jp_fn_equal_fold(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	const char *a = STR(0), *b = STR(1);
	size_t an = SLEN(0), bn = SLEN(1), i = 0, j = 0;
	unsigned x, y;
	bool eq = true;

	while (eq && i < an && j < bn) {
		i += gv_utf8_decode(a + i, an - i, &x);
		j += gv_utf8_decode(b + j, bn - j, &y);
		eq = x == y || uc_fold(x) == uc_fold(y);
	}
	*out = json_boolean(eq && i == an && j == bn);
	return 0;
}

/* Go's strings.Replace(s, old, new, n). */
static int replace_n(struct jp_ev *ev, const char *fname, struct jp_arg *args, long long n,
		     json_t **out)
{
	const char *s = STR(0), *old = STR(1), *nw = STR(2), *p;
	size_t sn = SLEN(0), on = SLEN(1), nn = SLEN(2), start = 0, j, m = 0;
	struct gv_buf b = {0};
	long long i;
	unsigned cp;

	if ((on == nn && memcmp(old, nw, on) == 0) || n == 0) {
		*out = json_incref(ARGV(0));
		return 0;
	}
	if (on == 0) {
		m = gv_utf8_len(s, sn) + 1;
	} else {
		for (p = s; (p = jp_find_bytes(p, sn - (size_t)(p - s), old, on)); p += on)
			m++;
	}
	if (m == 0) {
		*out = json_incref(ARGV(0));
		return 0;
	}
	if (n < 0 || (unsigned long long)n > m)
		n = (long long)m;
	for (i = 0; i < n; i++) {
		j = start;
		if (on == 0) {
			if (i > 0 && start < sn)
				j += gv_utf8_decode(s + start, sn - start, &cp);
		} else {
			j = (size_t)(jp_find_bytes(s + start, sn - start, old, on) - s);
		}
		gv_buf_add(&b, s + start, j - start);
		gv_buf_add(&b, nw, nn);
		start = j + on;
		if (b.len > MAX_OUT)
			break;
	}
	if (start < sn)
		gv_buf_add(&b, s + start, sn - start);
	return jp_out_buf(ev, fname, &b, out);
}

int jp_fn_replace(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	double d = json_number_value(ARGV(3));

	if (d > 9.2e18)
		d = 9.2e18;
	if (d < -9.2e18)
		d = -9.2e18;
	return replace_n(ev, "replace", args, (long long)d, out);
}

int jp_fn_replace_all(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	return replace_n(ev, "replace_all", args, -1, out);
}

int jp_fn_to_upper(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	return map_case(ev, "to_upper", args, true, out);
}

int jp_fn_to_lower(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	return map_case(ev, "to_lower", args, false, out);
}

static bool in_cutset(const char *set, size_t n, unsigned cp)
{
	size_t i = 0;
	unsigned c;

	while (i < n) {
		i += gv_utf8_decode(set + i, n - i, &c);
		if (c == cp)
			return true;
	}
	return false;
}

/* Go's strings.Trim(s, cutset). */
int jp_fn_trim(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
	       json_t **out)
{
	const char *s = STR(0), *set = STR(1);
	size_t n = SLEN(0), sn = SLEN(1), start = 0, end, k, i;
	unsigned cp;

	if (n == 0 || sn == 0) {
		*out = json_incref(ARGV(0));
		return 0;
	}
	while (start < n) {
		k = gv_utf8_decode(s + start, n - start, &cp);
		if (!in_cutset(set, sn, cp))
			break;
		start += k;
	}
	end = n;
	while (end > start) {
		/* back up to the start of the last code point */
		i = end - 1;
		while (i > start && ((unsigned char)s[i] & 0xC0) == 0x80 && end - i < 4)
			i--;
		k = gv_utf8_decode(s + i, end - i, &cp);
		if (i + k != end) { /* not a whole sequence: one invalid byte */
			i = end - 1;
			cp = 0xFFFD;
		}
		if (!in_cutset(set, sn, cp))
			break;
		end = i;
	}
	*out = jp_string_lossy(s + start, end - start);
	return 0;
}

int jp_fn_trim_prefix(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	size_t n = SLEN(0), pn = SLEN(1);

	if (pn <= n && memcmp(STR(0), STR(1), pn) == 0)
		*out = json_stringn(STR(0) + pn, n - pn);
	else
		*out = json_incref(ARGV(0));
	return 0;
}

/* Go's strings.Split(s, sep). */
int jp_fn_split(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		json_t **out)
{
	const char *s = STR(0), *sep = STR(1), *p;
	size_t n = SLEN(0), sn = SLEN(1), i = 0, k;
	json_t *res = json_array();
	unsigned cp;
	int rc;

	if (sn == 0) {
		while (i < n) {
			k = gv_utf8_decode(s + i, n - i, &cp);
			json_array_append_new(res, jp_string_lossy(s + i, k));
			i += k;
		}
	} else {
		while ((p = jp_find_bytes(s + i, n - i, sep, sn))) {
			json_array_append_new(res, json_stringn(s + i, (size_t)(p - s) - i));
			i = (size_t)(p - s) + sn;
		}
		json_array_append_new(res, json_stringn(s + i, n - i));
	}
	rc = jp_charge(ev, json_array_size(res));
	if (rc) {
		json_decref(res);
		return rc;
	}
	*out = res;
	return 0;
}

/* Kyverno slices the Go string by bytes; a split code point becomes U+FFFD. */
int jp_fn_truncate(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	double len = json_number_value(ARGV(1));
	size_t n = SLEN(0);

	if (len < 0)
		len = 0;
	if (len <= (double)n)
		*out = jp_string_lossy(STR(0), (size_t)len);
	else
		*out = json_incref(ARGV(0));
	return 0;
}

/* Go's filepath.Join(s): "" stays "", anything else is filepath.Clean'ed. */
int jp_fn_path_canonicalize(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			    int nargs, json_t **out)
{
	const char *s = STR(0);
	size_t n = SLEN(0), r = 0, dotdot = 0;
	char *buf;
	bool rooted;

	if (n == 0) {
		*out = json_string("");
		return 0;
	}
	buf = gv_xmalloc(n + 2);
	rooted = s[0] == '/';
	size_t i = 0;
	if (rooted) {
		buf[r++] = '/';
		i = 1;
		dotdot = 1;
	}
	while (i < n) {
		if (s[i] == '/') {
			i++;
		} else if (s[i] == '.' && (i + 1 == n || s[i + 1] == '/')) {
			i++;
		} else if (s[i] == '.' && s[i + 1] == '.' && (i + 2 == n || s[i + 2] == '/')) {
			i += 2;
			if (r > dotdot) {
				r--;
				while (r > dotdot && buf[r] != '/')
					r--;
			} else if (!rooted) {
				if (r > 0)
					buf[r++] = '/';
				buf[r++] = '.';
				buf[r++] = '.';
				dotdot = r;
			}
		} else {
			if ((rooted && r != 1) || (!rooted && r != 0))
				buf[r++] = '/';
			for (; i < n && s[i] != '/'; i++)
				buf[r++] = s[i];
		}
	}
	if (r == 0)
		buf[r++] = '.';
	*out = jp_string_lossy(buf, r);
	free(buf);
	return jp_charge(ev, 1 + n / 16);
}

int jp_fn_to_boolean(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	if (SLEN(0) == 4 && strncasecmp(STR(0), "true", 4) == 0) {
		*out = json_true();
		return 0;
	}
	if (SLEN(0) == 5 && strncasecmp(STR(0), "false", 5) == 0) {
		*out = json_false();
		return 0;
	}
	return jp_kfail(ev, JP_ERR_INVALID_VALUE, "to_boolean",
			"lowercase argument must be 'true' or 'false' (provided: '%s')", STR(0));
}
