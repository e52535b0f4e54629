/*
 * jp_functions.c - Kyverno's JMESPath functions (kyverno-semantics.md
 * section 6.4; Kyverno pkg/engine/jmespath/functions.go, arithmetic.go,
 * time.go). Each follows the Go implementation: strings are byte strings,
 * numbers float64, quantities resource.Quantity, durations time.Duration,
 * times time.Time formatted as RFC 3339.
 *
 * Known limits (documented in the function table's signatures too):
 *   - regular expressions are PCRE2 (Go's RE2 syntax is a subset in
 *     practice); backtracking is charged to the step budget and bounded by
 *     a match limit per call (-> JP_ERR_LIMIT), see RE_MATCH_LIMIT;
 *   - to_upper/to_lower/equal_fold map ASCII, Latin-1, Latin Extended-A/
 *     Additional, Greek, Cyrillic, Armenian and fullwidth letters only;
 *   - random() understands literals, escapes (\d \w \s and negations), ".",
 *     classes [...] / [^...], groups with |, and the quantifiers * + ? {n}
 *     {n,} {n,m} (unbounded repeats stop at 10), at most 4096 characters;
 *   - is_external_url does no DNS lookup: IP literals are judged by their
 *     range, "localhost", *.local, *.localhost, *.svc, *.cluster.local and
 *     dot-less host names are internal, every other host name is external;
 *   - x509_decode fills the fields of Go's x509.Certificate that policies
 *     use (see x509_object); name constraints and policies are null;
 *   - time_now and time_now_utc both report UTC (gavel runs in UTC).
 */
#include "engine/jp_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/core_names.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/imageref.h"
#include "common/yaml.h"
#include "engine/value.h"
#include "common/banned.h"

__extension__ typedef unsigned __int128 u128;

#define ARGV(i) (args[i].v)
#define STR(i)	json_string_value(args[i].v)
#define SLEN(i) json_string_length(args[i].v)
#define MAX_OUT (16u << 20) /* largest string a function may build */

/* "JMESPath function 'name': message", Kyverno's error prefix. */
static int kfail(struct jp_ev *ev, enum jp_error_kind kind, const char *fname, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int kfail(struct jp_ev *ev, enum jp_error_kind kind, const char *fname, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return jp_fail(ev, kind, "JMESPath function '%s': %s", fname, msg);
}

/* Takes the buffer's text as the result, charging for its size. */
static int out_buf(struct jp_ev *ev, const char *fname, struct gv_buf *b, json_t **out)
{
	int rc;

	if (b->len > MAX_OUT) {
		gv_buf_release(b);
		return kfail(ev, JP_ERR_LIMIT, fname, "result larger than %u bytes", MAX_OUT);
	}
	rc = jp_charge(ev, 1 + b->len / 16);
	if (!rc)
		*out = jp_string_lossy(gv_buf_str(b), b->len);
	gv_buf_release(b);
	return rc;
}

/*
 * Kyverno's ifaceToString: strings as they are, numbers with
 * strconv.FormatFloat(f, 'f', -1, 32), booleans "true"/"false".
 */
static bool iface_to_string(const json_t *v, struct gv_buf *out)
{
	if (json_is_string(v))
		gv_buf_add(out, json_string_value(v), json_string_length(v));
	else if (json_is_number(v))
		jp_format_double(json_number_value(v), 'f', 32, out);
	else if (json_is_boolean(v))
		gv_buf_adds(out, json_is_true(v) ? "true" : "false");
	else
		return false;
	return true;
}

/* Go's intNumber: the number must be integral. */
static bool int_number(const json_t *v, long long *out)
{
	double d = json_number_value(v);

	if (d != trunc(d) || d < -9.2e18 || d > 9.2e18)
		return false;
	*out = (long long)d;
	return true;
}

/* Linear time (glibc's memmem is two-way), as Go's strings.Index. */
static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
	if (nn == 0)
		return h;
	return memmem(h, hn, n, nn);
}

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
		i += jp_utf8_decode(s + i, n - i, &cp);
		jp_utf8_put(&b, upper ? uc_upper(cp) : uc_lower(cp));
	}
	return out_buf(ev, fname, &b, out);
}

/* ------------------------------------------------------------------ */
/* String functions                                                     */

static int fn_compare(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	size_t a = SLEN(0), b = SLEN(1);
	int c = memcmp(STR(0), STR(1), a < b ? a : b);

	if (c == 0)
		c = a < b ? -1 : a > b;
	*out = json_integer(c < 0 ? -1 : c > 0);
	return 0;
}

static int fn_equal_fold(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
{
	const char *a = STR(0), *b = STR(1);
	size_t an = SLEN(0), bn = SLEN(1), i = 0, j = 0;
	unsigned x, y;
	bool eq = true;

	while (eq && i < an && j < bn) {
		i += jp_utf8_decode(a + i, an - i, &x);
		j += jp_utf8_decode(b + j, bn - j, &y);
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
		m = jp_utf8_len(s, sn) + 1;
	} else {
		for (p = s; (p = find_bytes(p, sn - (size_t)(p - s), old, on)); p += on)
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
				j += jp_utf8_decode(s + start, sn - start, &cp);
		} else {
			j = (size_t)(find_bytes(s + start, sn - start, old, on) - s);
		}
		gv_buf_add(&b, s + start, j - start);
		gv_buf_add(&b, nw, nn);
		start = j + on;
		if (b.len > MAX_OUT)
			break;
	}
	if (start < sn)
		gv_buf_add(&b, s + start, sn - start);
	return out_buf(ev, fname, &b, out);
}

static int fn_replace(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	double d = json_number_value(ARGV(3));

	if (d > 9.2e18)
		d = 9.2e18;
	if (d < -9.2e18)
		d = -9.2e18;
	return replace_n(ev, "replace", args, (long long)d, out);
}

static int fn_replace_all(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	return replace_n(ev, "replace_all", args, -1, out);
}

static int fn_to_upper(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	return map_case(ev, "to_upper", args, true, out);
}

static int fn_to_lower(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	return map_case(ev, "to_lower", args, false, out);
}

static bool in_cutset(const char *set, size_t n, unsigned cp)
{
	size_t i = 0;
	unsigned c;

	while (i < n) {
		i += jp_utf8_decode(set + i, n - i, &c);
		if (c == cp)
			return true;
	}
	return false;
}

/* Go's strings.Trim(s, cutset). */
static int fn_trim(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
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
		k = jp_utf8_decode(s + start, n - start, &cp);
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
		k = jp_utf8_decode(s + i, end - i, &cp);
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

static int fn_trim_prefix(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	size_t n = SLEN(0), pn = SLEN(1);

	if (pn <= n && memcmp(STR(0), STR(1), pn) == 0)
		*out = json_stringn(STR(0) + pn, n - pn);
	else
		*out = json_incref(ARGV(0));
	return 0;
}

/* Go's strings.Split(s, sep). */
static int fn_split(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	const char *s = STR(0), *sep = STR(1), *p;
	size_t n = SLEN(0), sn = SLEN(1), i = 0, k;
	json_t *res = json_array();
	unsigned cp;
	int rc;

	if (sn == 0) {
		while (i < n) {
			k = jp_utf8_decode(s + i, n - i, &cp);
			json_array_append_new(res, jp_string_lossy(s + i, k));
			i += k;
		}
	} else {
		while ((p = find_bytes(s + i, n - i, sep, sn))) {
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
static int fn_truncate(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
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
static int fn_path_canonicalize(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
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

static int fn_to_boolean(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
{
	if (SLEN(0) == 4 && strncasecmp(STR(0), "true", 4) == 0) {
		*out = json_true();
		return 0;
	}
	if (SLEN(0) == 5 && strncasecmp(STR(0), "false", 5) == 0) {
		*out = json_false();
		return 0;
	}
	return kfail(ev, JP_ERR_INVALID_VALUE, "to_boolean",
		     "lowercase argument must be 'true' or 'false' (provided: '%s')", STR(0));
}

/* ------------------------------------------------------------------ */
/* Regular expressions (Go RE2 semantics on PCRE2)                      */

/*
 * Backtracking is charged to the step budget, or a filter running a
 * backtracking-prone expression on many elements would multiply the
 * per-call limit. PCRE2 does not tell how much of its match limit a match
 * used, so a match runs with a small limit paid for in advance (a step per
 * RE_BACKTRACK_PER_STEP backtracking steps), and runs again with a limit
 * RE_LIMIT_GROWTH times larger, paid for again, each time the limit trips:
 * the work done is at most what was paid for, and at most
 * RE_LIMIT_GROWTH/(RE_LIMIT_GROWTH-1) times what one run with the final
 * limit costs. RE_MATCH_LIMIT caps one call.
 */
#define RE_MATCH_LIMIT	      1000000
#define RE_DEPTH_LIMIT	      10000
#define RE_FIRST_LIMIT	      64
#define RE_LIMIT_GROWTH	      4
#define RE_BACKTRACK_PER_STEP 8
#define RE_NLIMITS	      8 /* 64, 256, ..., 262144, then RE_MATCH_LIMIT */

static pthread_once_t re_once = PTHREAD_ONCE_INIT;
static pcre2_match_context *re_mctx[RE_NLIMITS]; /* by increasing match limit */
static uint32_t re_limit[RE_NLIMITS];

static void re_init(void)
{
	uint32_t limit = RE_FIRST_LIMIT;

	for (size_t i = 0; i < RE_NLIMITS; i++) {
		re_limit[i] = i + 1 < RE_NLIMITS && limit < RE_MATCH_LIMIT ? limit : RE_MATCH_LIMIT;
		re_mctx[i] = pcre2_match_context_create(NULL);
		if (!re_mctx[i])
			abort();
		pcre2_set_match_limit(re_mctx[i], re_limit[i]);
		pcre2_set_depth_limit(re_mctx[i], RE_DEPTH_LIMIT);
		pcre2_set_heap_limit(re_mctx[i], 20000); /* KiB */
		limit *= RE_LIMIT_GROWTH;
	}
}

static pcre2_code *re_compile(const char *pat, size_t n, char *err, size_t errn)
{
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE off;
	pcre2_code *code;
	int ec;

	/* Go: $ is end of text unless (?m); no \C; UTF-8 code points. */
	code = pcre2_compile((PCRE2_SPTR)pat, n,
			     PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C, &ec, &off,
			     NULL);
	if (!code && err) {
		pcre2_get_error_message(ec, msg, sizeof(msg));
		snprintf(err, errn, "error parsing regexp: %s at offset %zu", (const char *)msg,
			 (size_t)off);
	}
	return code;
}

static void re_free(void *p)
{
	pcre2_code_free(p);
}

/* Compile-time: a literal pattern is compiled once. */
static void re_prepare(struct jp_node *call)
{
	const json_t *lit;

	if (call->nkids < 1 || call->kids[0]->type != JN_LITERAL)
		return;
	lit = call->kids[0]->lit;
	if (!json_is_string(lit))
		return;
	call->aux = re_compile(json_string_value(lit), json_string_length(lit), NULL, 0);
	if (call->aux)
		call->aux_free = re_free;
}

/* The compiled pattern of args[0]: cached or compiled now (*owned set). */
static int re_get(struct jp_ev *ev, const char *fname, const struct jp_node *call,
		  struct jp_arg *args, pcre2_code **code, bool *owned)
{
	char err[320];

	pthread_once(&re_once, re_init);
	*owned = false;
	if (call->aux && call->kids[0]->type == JN_LITERAL) {
		*code = call->aux;
		return 0;
	}
	*code = re_compile(STR(0), SLEN(0), err, sizeof(err));
	if (!*code)
		return kfail(ev, JP_ERR_RUNTIME, fname, "%s", err);
	*owned = true;
	return 0;
}

static int re_match_error(struct jp_ev *ev, const char *fname, int rc)
{
	PCRE2_UCHAR msg[256];

	if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
	    rc == PCRE2_ERROR_HEAPLIMIT)
		return kfail(ev, JP_ERR_LIMIT, fname, "regular expression match limit exceeded");
	pcre2_get_error_message(rc, msg, sizeof(msg));
	return kfail(ev, JP_ERR_RUNTIME, fname, "%s", (const char *)msg);
}

/*
 * pcre2_match from byte start of s (n bytes), charged as described at
 * RE_MATCH_LIMIT. Sets *m to pcre2_match's result (>= 0 or
 * PCRE2_ERROR_NOMATCH) or returns an error (budget, limits, bad UTF-8).
 */
static int re_run(struct jp_ev *ev, const char *fname, const pcre2_code *code, const char *s,
		  size_t n, size_t start, pcre2_match_data *md, int *m)
{
	int rc;

	*m = PCRE2_ERROR_MATCHLIMIT;
	for (size_t i = 0; i < RE_NLIMITS && *m == PCRE2_ERROR_MATCHLIMIT; i++) {
		rc = jp_charge(ev, re_limit[i] / RE_BACKTRACK_PER_STEP);
		if (rc)
			return rc;
		*m = pcre2_match(code, (PCRE2_SPTR)s, n, start, 0, md, re_mctx[i]);
	}
	if (*m >= 0 || *m == PCRE2_ERROR_NOMATCH)
		return 0;
	return re_match_error(ev, fname, *m);
}

static int fn_regex_match(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	struct gv_buf src = {0};
	pcre2_match_data *md = NULL;
	pcre2_code *code = NULL;
	bool owned = false;
	int rc, m;

	rc = re_get(ev, "regex_match", call, args, &code, &owned);
	if (rc)
		return rc;
	iface_to_string(ARGV(1), &src);
	md = pcre2_match_data_create(1, NULL);
	rc = re_run(ev, "regex_match", code, gv_buf_str(&src), src.len, 0, md, &m);
	if (!rc)
		*out = json_boolean(m >= 0);
	if (!rc)
		rc = jp_charge(ev, 1 + src.len / 16);
	pcre2_match_data_free(md);
	if (owned)
		pcre2_code_free(code);
	gv_buf_release(&src);
	return rc;
}

static bool name_char(unsigned cp)
{
	return cp == '_' || (cp < 0x80 ? isalnum((int)cp) != 0 : true);
}

/* Go's Regexp.expand: $1, ${1}, $name, ${name}, $$. */
static void re_expand(const pcre2_code *code, const char *tpl, size_t tn, const char *src,
		      const PCRE2_SIZE *ov, int npairs, struct gv_buf *out)
{
	size_t i = 0, j, k;
	unsigned cp;

	while (i < tn) {
		const char *dollar = memchr(tpl + i, '$', tn - i);
		bool brace = false;
		long num = 0;
		size_t name_start, name_len;

		if (!dollar) {
			gv_buf_add(out, tpl + i, tn - i);
			return;
		}
		gv_buf_add(out, tpl + i, (size_t)(dollar - tpl) - i);
		i = (size_t)(dollar - tpl) + 1;
		if (i < tn && tpl[i] == '$') {
			gv_buf_addc(out, '$');
			i++;
			continue;
		}
		j = i;
		if (j < tn && tpl[j] == '{') {
			brace = true;
			j++;
		}
		name_start = j;
		while (j < tn) {
			k = jp_utf8_decode(tpl + j, tn - j, &cp);
			if (!name_char(cp))
				break;
			j += k;
		}
		name_len = j - name_start;
		if (name_len == 0 || (brace && (j >= tn || tpl[j] != '}'))) {
			gv_buf_addc(out, '$'); /* malformed: the $ is literal */
			continue;
		}
		if (brace)
			j++;
		i = j;
		for (k = 0; k < name_len; k++) {
			char c = tpl[name_start + k];
			if (c < '0' || c > '9' || num >= 100000000) {
				num = -1;
				break;
			}
			num = num * 10 + (c - '0');
		}
		if (tpl[name_start] == '0' && name_len > 1)
			num = -1;
		if (num < 0) {
			char name[128];
			int g;

			if (name_len >= sizeof(name))
				continue;
			memcpy(name, tpl + name_start, name_len);
			name[name_len] = '\0';
			g = pcre2_substring_number_from_name(code, (PCRE2_SPTR)name);
			if (g < 0)
				continue;
			num = g;
		}
		if (num < npairs && ov[2 * num] != PCRE2_UNSET)
			gv_buf_add(out, src + ov[2 * num], ov[2 * num + 1] - ov[2 * num]);
	}
}

/* Go's Regexp.ReplaceAllString / ReplaceAllLiteralString. */
static int regex_replace(struct jp_ev *ev, const char *fname, const struct jp_node *call,
			 struct jp_arg *args, bool literal, json_t **out)
{
	struct gv_buf src = {0}, repl = {0}, b = {0};
	pcre2_match_data *md = NULL;
	pcre2_code *code = NULL;
	bool owned = false;
	size_t last = 0, search = 0, n;
	const char *s;
	int rc, m;

	rc = re_get(ev, fname, call, args, &code, &owned);
	if (rc)
		return rc;
	iface_to_string(ARGV(1), &src);
	iface_to_string(ARGV(2), &repl);
	s = gv_buf_str(&src);
	n = src.len;
	md = pcre2_match_data_create_from_pattern(code, NULL);
	while (search <= n) {
		PCRE2_SIZE *ov;
		unsigned cp;
		size_t w;

		rc = re_run(ev, fname, code, s, n, search, md, &m);
		if (rc)
			goto out;
		if (m == PCRE2_ERROR_NOMATCH)
			break;
		ov = pcre2_get_ovector_pointer(md);
		gv_buf_add(&b, s + last, ov[0] - last);
		/* no replacement for an empty match right after the previous one */
		if (ov[1] > last || ov[0] == 0) {
			if (literal)
				gv_buf_add(&b, gv_buf_str(&repl), repl.len);
			else
				re_expand(code, gv_buf_str(&repl), repl.len, s, ov,
					  (int)pcre2_get_ovector_count(md), &b);
		}
		if (b.len > MAX_OUT)
			break;
		last = ov[1];
		w = search < n ? jp_utf8_decode(s + search, n - search, &cp) : 0;
		if (search + w > ov[1])
			search += w;
		else if (search + 1 > ov[1])
			search++;
		else
			search = ov[1];
	}
	if (last < n)
		gv_buf_add(&b, s + last, n - last);
	rc = out_buf(ev, fname, &b, out);
out:
	gv_buf_release(&b);
	gv_buf_release(&src);
	gv_buf_release(&repl);
	pcre2_match_data_free(md);
	if (owned)
		pcre2_code_free(code);
	return rc;
}

static int fn_regex_replace_all(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
				int nargs, json_t **out)
{
	return regex_replace(ev, "regex_replace_all", call, args, false, out);
}

static int fn_regex_replace_all_literal(struct jp_ev *ev, const struct jp_node *call,
					struct jp_arg *args, int nargs, json_t **out)
{
	return regex_replace(ev, "regex_replace_all_literal", call, args, true, out);
}

static int fn_pattern_match(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			    int nargs, json_t **out)
{
	struct gv_buf src = {0};
	unsigned long left = ev->max_steps - ev->steps;
	size_t work = 0;
	int rc, m;

	iface_to_string(ARGV(1), &src);
	/* matching may take (pattern x text) comparisons: the steps left bound them */
	m = value_wildcard_bounded(STR(0), gv_buf_str(&src),
				   left > SIZE_MAX / 16 ? SIZE_MAX : (size_t)left * 16, &work);
	if (m < 0)
		rc = jp_charge(ev, ev->max_steps - ev->steps + 1);
	else
		rc = jp_charge(ev, 1 + (SLEN(0) + work) / 16);
	if (!rc)
		*out = json_boolean(m > 0);
	gv_buf_release(&src);
	return rc;
}

static int fn_label_match(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	const char *k;
	json_t *v;
	bool ok = true;
	int rc;

	json_object_foreach(ARGV(0), k, v)
	{
		if ((rc = jp_charge(ev, 1)) ||
		    (rc = jp_ev_equal(ev, v, json_object_get(ARGV(1), k), &ok)))
			return rc;
		if (!ok)
			break;
	}
	*out = json_boolean(ok);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Collections and documents                                            */

static int fn_lookup(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	json_t *v;
	long long i;

	if (json_is_object(ARGV(0))) {
		if (!json_is_string(ARGV(1)))
			return kfail(ev, JP_ERR_INVALID_TYPE, "lookup",
				     "2 argument is expected of String type");
		v = json_object_getn(ARGV(0), STR(1), SLEN(1));
		*out = v ? json_incref(v) : json_null();
		return 0;
	}
	if (!json_is_number(ARGV(1)))
		return kfail(ev, JP_ERR_INVALID_TYPE, "lookup",
			     "2 argument is expected of Number type");
	if (!int_number(ARGV(1), &i))
		return kfail(ev, JP_ERR_INVALID_VALUE, "lookup",
			     "expected an integer number but got: %g", json_number_value(ARGV(1)));
	if (i < 0 || (size_t)i >= json_array_size(ARGV(0)))
		*out = json_null();
	else
		*out = json_incref(json_array_get(ARGV(0), (size_t)i));
	return 0;
}

static int fn_items(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	json_t *res = json_array(), *o, *v;
	const char *kname = STR(1), *vname = STR(2), *k;
	size_t i, n;
	int rc;

	if (json_is_object(ARGV(0))) {
		const char **keys;

		n = json_object_size(ARGV(0));
		keys = gv_xmalloc((n ? n : 1) * sizeof(*keys));
		i = 0;
		json_object_foreach(ARGV(0), k, v)
		{
			keys[i++] = k;
		}
		qsort(keys, n, sizeof(*keys), gv_strptr_cmp);
		for (i = 0; i < n; i++) {
			o = json_object();
			json_object_set_new(o, kname, json_string(keys[i]));
			json_object_set(o, vname, json_object_get(ARGV(0), keys[i]));
			json_array_append_new(res, o);
		}
		free(keys);
	} else {
		json_array_foreach(ARGV(0), i, v)
		{
			o = json_object();
			json_object_set_new(o, kname, json_integer((json_int_t)i));
			json_object_set(o, vname, v);
			json_array_append_new(res, o);
		}
	}
	rc = jp_charge(ev, json_array_size(res));
	if (rc) {
		json_decref(res);
		return rc;
	}
	*out = res;
	return 0;
}

static int fn_object_from_lists(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
				int nargs, json_t **out)
{
	json_t *res = json_object(), *k;
	struct gv_buf key = {0};
	size_t i, nv = json_array_size(ARGV(1));
	int rc;

	json_array_foreach(ARGV(0), i, k)
	{
		gv_buf_reset(&key);
		if (!iface_to_string(k, &key) || memchr(gv_buf_str(&key), '\0', key.len)) {
			json_decref(res);
			gv_buf_release(&key);
			return kfail(ev, JP_ERR_INVALID_TYPE, "object_from_lists",
				     "%zu argument is expected of StringArray type", i);
		}
		json_object_set(res, gv_buf_str(&key),
				i < nv ? json_array_get(ARGV(1), i) : json_null());
	}
	gv_buf_release(&key);
	rc = jp_charge(ev, json_array_size(ARGV(0)));
	if (rc) {
		json_decref(res);
		return rc;
	}
	*out = res;
	return 0;
}

static int fn_parse_json(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
{
	json_error_t jerr;
	json_t *v;
	int rc = jp_charge(ev, 1 + SLEN(0) / 16);

	if (rc)
		return rc;
	v = json_loadb(STR(0), SLEN(0), JSON_DECODE_ANY, &jerr);
	if (!v)
		v = json_loadb(STR(0), SLEN(0), JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &jerr);
	if (!v)
		return kfail(ev, JP_ERR_RUNTIME, "parse_json", "%s at line %d, column %d",
			     jerr.text, jerr.line, jerr.column);
	*out = v;
	return 0;
}

static int fn_parse_yaml(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
{
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	int rc = jp_charge(ev, 1 + SLEN(0) / 16);

	if (rc)
		return rc;
	if (gv_yaml_load(STR(0), SLEN(0), "parse_yaml", &docs, &err)) {
		gv_docs_release(&docs);
		return kfail(ev, JP_ERR_RUNTIME, "parse_yaml", "%s", err.msg);
	}
	*out = docs.n ? json_incref(docs.v[0].value) : json_null();
	gv_docs_release(&docs);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Arithmetic on numbers, quantities and durations (arithmetic.go)      */

/* An exact decimal: (neg ? -1 : 1) * coef * 10^exp. */
struct dec {
	bool neg;
	u128 coef;
	long long exp;
};

enum operand_kind { OPD_SCALAR, OPD_QUANTITY, OPD_DURATION };

struct operand {
	enum operand_kind kind;
	double f;     /* scalar */
	struct dec q; /* quantity value */
	bool binary;  /* quantity format BinarySI */
	int scale;    /* quantity: inf.Dec scale of AsDec() */
	long long ns; /* duration */
};

static void dec_norm(struct dec *d)
{
	while (d->coef && d->coef % 10 == 0) {
		d->coef /= 10;
		d->exp++;
	}
	if (!d->coef) {
		d->neg = false;
		d->exp = 0;
	}
}

/* coef * 10^k without overflow. */
static bool mul_pow10(u128 *coef, long long k)
{
	for (; k > 0; k--)
		if (__builtin_mul_overflow(*coef, (u128)10, coef))
			return false;
	return true;
}

static bool dec_add(struct dec a, struct dec b, struct dec *r)
{
	long long e = a.exp < b.exp ? a.exp : b.exp;

	if (a.coef && !mul_pow10(&a.coef, a.exp - e))
		return false;
	if (b.coef && !mul_pow10(&b.coef, b.exp - e))
		return false;
	r->exp = e;
	if (a.neg == b.neg) {
		if (__builtin_add_overflow(a.coef, b.coef, &r->coef))
			return false;
		r->neg = a.neg;
	} else if (a.coef >= b.coef) {
		r->coef = a.coef - b.coef;
		r->neg = a.neg;
	} else {
		r->coef = b.coef - a.coef;
		r->neg = b.neg;
	}
	dec_norm(r);
	return true;
}

static bool dec_mul(struct dec a, struct dec b, struct dec *r)
{
	if (__builtin_mul_overflow(a.coef, b.coef, &r->coef))
		return false;
	r->exp = a.exp + b.exp;
	r->neg = a.neg != b.neg;
	dec_norm(r);
	return true;
}

/* a / b rounded toward zero to `scale` decimal places (inf.Dec QuoRound, RoundDown). */
static bool dec_quo(struct dec a, struct dec b, long long scale, struct dec *r)
{
	long long k = a.exp - b.exp + scale;
	u128 num = a.coef, den = b.coef;

	if (!den)
		return false;
	if (k >= 0) {
		if (!mul_pow10(&num, k))
			return false;
	} else if (!mul_pow10(&den, -k)) {
		num = 0; /* the quotient rounds to zero */
		den = 1;
	}
	r->coef = num / den;
	r->exp = -scale;
	r->neg = a.neg != b.neg;
	dec_norm(r);
	return true;
}

static double dec_double(const struct dec *d)
{
	long double v = (long double)d->coef * powl(10.0L, (long double)d->exp);

	return (double)(d->neg ? -v : v);
}

static void u128_append(struct gv_buf *out, u128 v)
{
	char tmp[48];
	size_t w = sizeof(tmp);

	do {
		tmp[--w] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	gv_buf_add(out, tmp + w, sizeof(tmp) - w);
}

/* resource.Quantity.String(): CanonicalizeBytes of the value in its format. */
static void quantity_format(const struct dec *d, bool binary, struct gv_buf *out)
{
	static const char *dec_suffix[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
	static const char *bin_suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
	struct dec v = *d;
	u128 iv;
	long long e;
	int k;

	dec_norm(&v);
	if (!v.coef) {
		gv_buf_addc(out, '0');
		return;
	}
	if (binary && v.exp >= 0) {
		iv = v.coef;
		/* |v| < 1024 is shown in decimal; so is a value too large to hold */
		if (mul_pow10(&iv, v.exp) && iv >= 1024) {
			for (k = 0; k < 6 && iv % 1024 == 0; k++)
				iv /= 1024;
			if (v.neg)
				gv_buf_addc(out, '-');
			u128_append(out, iv);
			gv_buf_adds(out, bin_suffix[k]);
			return;
		}
	}
	e = v.exp;
	iv = v.coef;
	if (((e % 3) + 3) % 3 == 1) {
		iv *= 10;
		e -= 1;
	} else if (((e % 3) + 3) % 3 == 2) {
		iv *= 100;
		e -= 2;
	}
	if (v.neg)
		gv_buf_addc(out, '-');
	u128_append(out, iv);
	if (e >= -9 && e <= 18)
		gv_buf_adds(out, dec_suffix[(e + 9) / 3]);
	else
		gv_buf_addf(out, "e%lld", e);
}

/*
 * The scale inf.Dec reports for a parsed quantity (Go's AsDec().Scale()):
 * the fast path keeps digits * 10^(exp - fraction digits), the slow path
 * rounds to nano (scale 9).
 */
static int quantity_scale(const char *s)
{
	size_t num = 0, den = 0;
	const char *p = s, *suffix;
	long long exp = 0, e;

	if (*p == '+' || *p == '-')
		p++;
	while (*p == '0')
		p++;
	for (; isdigit((unsigned char)*p); p++)
		num++;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			den++;
	suffix = p;
	if (suffix[0] && suffix[1] == 'i')
		return den == 0 ? 0 : 9;
	switch (*suffix) {
	case 'n':
		exp = -9;
		break;
	case 'u':
		exp = -6;
		break;
	case 'm':
		exp = -3;
		break;
	case 'k':
		exp = 3;
		break;
	case 'M':
		exp = 6;
		break;
	case 'G':
		exp = 9;
		break;
	case 'T':
		exp = 12;
		break;
	case 'P':
		exp = 15;
		break;
	case 'E':
		exp = 18;
		break;
	case 'e':
		if (value_parse_go_int(suffix + 1, &e))
			exp = e;
		break;
	default:
		break;
	}
	if (num + den <= 18 && exp - (long long)den >= -9)
		return (int)((long long)den - exp);
	return 9;
}

static void dec_from_quantity(const struct value_quantity *q, struct dec *d)
{
	d->neg = q->neg;
	d->coef = ((u128)q->coef_hi << 64) | q->coef_lo;
	d->exp = q->exp10;
}

/* parseArithemticOperands: number -> scalar; string -> quantity, else duration. */
static int parse_operand(struct jp_ev *ev, const char *fname, const json_t *v, struct operand *op)
{
	struct value_quantity q;
	long double ns;

	memset(op, 0, sizeof(*op));
	if (json_is_number(v)) {
		op->kind = OPD_SCALAR;
		op->f = json_number_value(v);
		return 0;
	}
	if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)) {
		const char *s = json_string_value(v);

		if (value_parse_quantity(s, &q)) {
			op->kind = OPD_QUANTITY;
			dec_from_quantity(&q, &op->q);
			op->binary = q.binary;
			op->scale = quantity_scale(s);
			return 0;
		}
		if (value_parse_duration(s, &ns)) {
			op->kind = OPD_DURATION;
			op->ns = (long long)ns;
			return 0;
		}
	}
	return kfail(ev, JP_ERR_INVALID_TYPE, fname, "types mismatch");
}

/* A scalar as a quantity, as Kyverno does: ParseQuantity(fmt.Sprintf("%v", f)). */
static bool scalar_quantity(double f, struct dec *d, int *scale)
{
	struct value_quantity q;
	struct gv_buf b = {0};
	bool ok;

	value_format_float(f, 'g', &b);
	ok = value_parse_quantity(gv_buf_str(&b), &q);
	if (ok) {
		dec_from_quantity(&q, d);
		*scale = quantity_scale(gv_buf_str(&b));
	}
	gv_buf_release(&b);
	return ok;
}

static int out_quantity(struct jp_ev *ev, const struct dec *d, bool binary, json_t **out)
{
	struct gv_buf b = {0};

	quantity_format(d, binary, &b);
	*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return 0;
}

static int out_duration(long double ns, json_t **out)
{
	struct gv_buf b = {0};

	value_format_duration(ns, &b);
	*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return 0;
}

/* Go's time.Duration(float64): truncation, saturating instead of wrapping. */
static long double duration_of(double ns)
{
	if (ns != ns)
		return 0;
	if (ns >= 9.2233720368547758e18)
		return (long double)INT64_MAX;
	if (ns <= -9.2233720368547758e18)
		return (long double)INT64_MIN;
	return (long double)(long long)ns;
}

/* time.Duration.Seconds() */
static double duration_seconds(long long ns)
{
	long long sec = ns / 1000000000LL, nsec = ns % 1000000000LL;

	return (double)sec + (double)nsec / 1e9;
}

static int range_error(struct jp_ev *ev, const char *fname)
{
	return kfail(ev, JP_ERR_INVALID_VALUE, fname, "quantity out of range");
}

enum arith_op { AR_ADD, AR_SUB, AR_MUL, AR_DIV, AR_MOD };

static const char *arith_name[] = {"add", "subtract", "multiply", "divide", "modulo"};

static int arith(struct jp_ev *ev, enum arith_op op, const json_t *x, const json_t *y, json_t **out)
{
	const char *fname = arith_name[op];
	struct operand a, b;
	struct dec r, t;
	int rc, scale;

	rc = parse_operand(ev, fname, x, &a);
	if (!rc)
		rc = parse_operand(ev, fname, y, &b);
	if (rc)
		return rc;
	/* multiplication commutes: scalar * quantity|duration */
	if (op == AR_MUL && a.kind == OPD_SCALAR && b.kind != OPD_SCALAR) {
		struct operand tmp = a;
		a = b;
		b = tmp;
	}
	switch (op) {
	case AR_ADD:
	case AR_SUB:
		if (a.kind != b.kind)
			break;
		if (a.kind == OPD_SCALAR) {
			*out = jp_number(op == AR_ADD ? a.f + b.f : a.f - b.f);
			return 0;
		}
		if (a.kind == OPD_DURATION)
			return out_duration(op == AR_ADD ? (long double)a.ns + (long double)b.ns
							 : (long double)a.ns - (long double)b.ns,
					    out);
		if (op == AR_SUB)
			b.q.neg = !b.q.neg;
		if (!dec_add(a.q, b.q, &r))
			return range_error(ev, fname);
		/* Quantity.Add/Sub keep the first format unless it is zero */
		return out_quantity(ev, &r, a.q.coef ? a.binary : b.binary, out);
	case AR_MUL:
		if (b.kind != OPD_SCALAR)
			break;
		if (a.kind == OPD_SCALAR) {
			*out = jp_number(a.f * b.f);
			return 0;
		}
		if (a.kind == OPD_DURATION)
			return out_duration(duration_of(duration_seconds(a.ns) * b.f * 1e9), out);
		if (!scalar_quantity(b.f, &t, &scale))
			return kfail(ev, JP_ERR_INVALID_VALUE, fname,
				     "cannot convert %g to a quantity", b.f);
		if (!dec_mul(a.q, t, &r))
			return range_error(ev, fname);
		return out_quantity(ev, &r, a.binary, out);
	case AR_DIV:
		if (a.kind == OPD_SCALAR && b.kind == OPD_SCALAR) {
			if (b.f == 0)
				return kfail(ev, JP_ERR_INVALID_VALUE, fname,
					     "Zero divisor passed");
			*out = jp_number(a.f / b.f);
			return 0;
		}
		if (a.kind == OPD_QUANTITY && b.kind == OPD_QUANTITY) {
			double dv = dec_double(&b.q);

			if (dv == 0)
				return kfail(ev, JP_ERR_INVALID_VALUE, fname,
					     "Zero divisor passed");
			*out = jp_number(dec_double(&a.q) / dv);
			return 0;
		}
		if (a.kind == OPD_DURATION && b.kind == OPD_DURATION) {
			if (duration_seconds(b.ns) == 0)
				return kfail(ev, JP_ERR_INVALID_VALUE, fname,
					     "Zero divisor passed");
			*out = jp_number(duration_seconds(a.ns) / duration_seconds(b.ns));
			return 0;
		}
		if (b.kind != OPD_SCALAR || a.kind == OPD_SCALAR)
			break;
		if (b.f == 0)
			return kfail(ev, JP_ERR_INVALID_VALUE, fname, "Zero divisor passed");
		if (a.kind == OPD_DURATION)
			return out_duration(duration_of(duration_seconds(a.ns) / b.f * 1e9), out);
		if (!scalar_quantity(b.f, &t, &scale))
			return kfail(ev, JP_ERR_INVALID_VALUE, fname,
				     "cannot convert %g to a quantity", b.f);
		if (!dec_quo(a.q, t, a.scale > scale ? a.scale : scale, &r))
			return range_error(ev, fname);
		return out_quantity(ev, &r, a.binary, out);
	case AR_MOD:
		if (a.kind != b.kind)
			break;
		if (a.kind == OPD_DURATION) {
			if (b.ns == 0)
				return kfail(ev, JP_ERR_INVALID_VALUE, fname,
					     "Zero divisor passed");
			if (b.ns == -1)
				return out_duration(0, out);
			return out_duration((long double)(a.ns % b.ns), out);
		} else {
			double f1 = a.kind == OPD_SCALAR ? a.f : dec_double(&a.q);
			double f2 = b.kind == OPD_SCALAR ? b.f : dec_double(&b.q);
			long long i1, i2;

			if (f1 != trunc(f1) || f2 != trunc(f2) || fabs(f1) > 9.2e18 ||
			    fabs(f2) > 9.2e18)
				return kfail(ev, JP_ERR_INVALID_VALUE, fname,
					     "Non-integer argument(s) passed for modulo");
			i1 = (long long)f1;
			i2 = (long long)f2;
			if (i2 == 0)
				return kfail(ev, JP_ERR_INVALID_VALUE, fname,
					     "Zero divisor passed");
			if (a.kind == OPD_SCALAR) {
				*out = jp_number(i2 == -1 ? 0.0 : (double)(i1 % i2));
				return 0;
			}
			r.neg = false;
			r.exp = 0;
			i1 = i2 == -1 ? 0 : i1 % i2;
			r.neg = i1 < 0;
			r.coef = (u128)(i1 < 0 ? -(unsigned long long)i1 : (unsigned long long)i1);
			return out_quantity(ev, &r, a.binary, out);
		}
	}
	return kfail(ev, JP_ERR_INVALID_TYPE, fname, "types mismatch");
}

static int fn_add(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	return arith(ev, AR_ADD, ARGV(0), ARGV(1), out);
}

static int fn_subtract(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	return arith(ev, AR_SUB, ARGV(0), ARGV(1), out);
}

static int fn_multiply(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	return arith(ev, AR_MUL, ARGV(0), ARGV(1), out);
}

static int fn_divide(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return arith(ev, AR_DIV, ARGV(0), ARGV(1), out);
}

static int fn_modulo(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return arith(ev, AR_MOD, ARGV(0), ARGV(1), out);
}

/* Kyverno's sum: add() folded over the list; an empty list is an error. */
static int fn_sum(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	size_t i, n = json_array_size(ARGV(0));
	json_t *acc, *next;
	int rc;

	if (n == 0)
		return kfail(ev, JP_ERR_INVALID_VALUE, "sum",
			     "at least one element in the array is required");
	acc = json_incref(json_array_get(ARGV(0), 0));
	for (i = 1; i < n; i++) {
		rc = jp_charge(ev, 1);
		if (!rc)
			rc = arith(ev, AR_ADD, acc, json_array_get(ARGV(0), i), &next);
		json_decref(acc);
		if (rc) {
			/* Kyverno reports the add() failure under sum */
			if (ev->e->kind == JP_ERR_INVALID_TYPE)
				snprintf(ev->e->msg, sizeof(ev->e->msg),
					 "JMESPath function 'sum': types mismatch");
			return rc;
		}
		acc = next;
	}
	*out = acc;
	return 0;
}

static int fn_round(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	long long digits;
	double shift;

	if (!int_number(ARGV(1), &digits))
		return kfail(ev, JP_ERR_INVALID_VALUE, "round",
			     "Non-integer argument(s) passed for round off");
	if (digits < 0)
		return kfail(ev, JP_ERR_INVALID_VALUE, "round",
			     "Negative argument passed for round off");
	shift = pow(10, (double)digits);
	*out = jp_number(round(json_number_value(ARGV(0)) * shift) / shift);
	if (!*out) /* 0 * inf and the like: Go would give NaN */
		*out = json_incref(ARGV(0));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Encodings and digests                                                */

static int fn_base64_encode(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			    int nargs, json_t **out)
{
	size_t n = SLEN(0);
	unsigned char *buf;
	int len, rc;

	if (n > MAX_OUT)
		return kfail(ev, JP_ERR_LIMIT, "base64_encode", "input larger than %u bytes",
			     MAX_OUT);
	rc = jp_charge(ev, 1 + n / 8);
	if (rc)
		return rc;
	buf = gv_xmalloc(4 * ((n + 2) / 3) + 1);
	len = EVP_EncodeBlock(buf, (const unsigned char *)STR(0), (int)n);
	*out = json_stringn((const char *)buf, (size_t)len);
	free(buf);
	return 0;
}

/* Go's base64.StdEncoding.DecodeString: padding required, \r and \n ignored. */
static int fn_base64_decode(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			    int nargs, json_t **out)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *s = STR(0);
	size_t n = SLEN(0), i, m = 0, pad = 0;
	unsigned char *clean, *buf;
	int len, rc;

	rc = jp_charge(ev, 1 + n / 8);
	if (rc)
		return rc;
	clean = gv_xmalloc(n + 1);
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
		} else if (pad || !c || !strchr(alphabet, c)) {
			free(clean);
			return kfail(ev, JP_ERR_RUNTIME, "base64_decode",
				     "illegal base64 data at input byte %zu", i);
		}
		clean[m++] = (unsigned char)c;
	}
	if (m % 4 != 0 || pad > 2) {
		free(clean);
		return kfail(ev, JP_ERR_RUNTIME, "base64_decode",
			     "illegal base64 data at input byte %zu", m);
	}
	buf = gv_xmalloc(m / 4 * 3 + 1);
	len = m ? EVP_DecodeBlock(buf, clean, (int)m) : 0;
	free(clean);
	if (len < 0) {
		free(buf);
		return kfail(ev, JP_ERR_RUNTIME, "base64_decode", "illegal base64 data");
	}
	*out = jp_string_lossy((const char *)buf, (size_t)len - pad);
	free(buf);
	return 0;
}

static int digest_hex(struct jp_ev *ev, const EVP_MD *md, struct jp_arg *args, json_t **out)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	unsigned int n = 0, i;
	int rc = jp_charge(ev, 1 + SLEN(0) / 32);

	if (rc)
		return rc;
	if (!EVP_Digest(STR(0), SLEN(0), d, &n, md, NULL))
		return jp_fail(ev, JP_ERR_RUNTIME, "digest failed");
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	*out = json_stringn(hex, 2 * (size_t)n);
	return 0;
}

static int fn_sha256(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return digest_hex(ev, EVP_sha256(), args, out);
}

static int fn_sha1(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	return digest_hex(ev, EVP_sha1(), args, out);
}

static int fn_md5(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	return digest_hex(ev, EVP_md5(), args, out);
}

/* ------------------------------------------------------------------ */
/* semver_compare (github.com/blang/semver ParseRange)                   */

#define SEMVER_MAX_PARTS 64

enum semver_op { SV_EQ, SV_NE, SV_GT, SV_GE, SV_LT, SV_LE };

struct semver_part {
	char text[128];
};

/* blang's Parse: strict, no leading 'v'. */
static bool semver_parse(const char *s, struct value_semver *v)
{
	if (s[0] == 'v' || s[0] == 'V')
		return false;
	return value_parse_semver(s, v);
}

/* splitAndTrim: split on spaces not preceded by an operator character, drop 1-byte tokens. */
static int semver_split(const char *s, struct semver_part *parts, int max)
{
	size_t i, last = 0, len = strlen(s);
	char last_char = 0;
	int n = 0;

	for (i = 0; i <= len; i++) {
		bool end = i == len;

		if (!end && !(s[i] == ' ' && !strchr("><=", last_char ? last_char : 'x'))) {
			if (s[i] != ' ')
				last_char = s[i];
			continue;
		}
		if (end ? last + 1 < len : last + 1 < i) {
			size_t j, k = 0;

			if (n == max)
				return -1;
			for (j = last; j < i && k + 1 < sizeof(parts[n].text); j++)
				if (s[j] != ' ')
					parts[n].text[k++] = s[j];
			parts[n].text[k] = '\0';
			n++;
		}
		last = i + 1;
	}
	return n;
}

static bool semver_split_op(const char *s, char *op, size_t opn, const char **ver)
{
	size_t i = 0, k = 0;

	while (s[i] && !isdigit((unsigned char)s[i]))
		i++;
	if (!s[i])
		return false;
	*ver = s + i;
	/* TrimSpace(s[:i]) (spaces were removed already) */
	for (size_t j = 0; j < i && k + 1 < opn; j++)
		op[k++] = s[j];
	op[k] = '\0';
	return true;
}

static bool semver_op_of(const char *op, enum semver_op *out)
{
	static const struct {
		const char *s;
		enum semver_op op;
	} ops[] = {{"", SV_EQ},	 {"=", SV_EQ},	{"==", SV_EQ}, {"!", SV_NE}, {"!=", SV_NE},
		   {">", SV_GT}, {">=", SV_GE}, {"<", SV_LT},  {"<=", SV_LE}};
	size_t i;

	for (i = 0; i < GV_ARRAY_LEN(ops); i++) {
		if (strcmp(op, ops[i].s) == 0) {
			*out = ops[i].op;
			return true;
		}
	}
	return false;
}

/*
 * blang/semver's incrementMajorVersion (idx 0) and incrementMinorVersion
 * (idx 1): split flat at '.', add one to part idx (Atoi, wrapping as Go's
 * int does), join again. When the part is not a number (or is missing) Go
 * returns "" and expandWildcardVersion ignores the error: res is "".
 */
static void semver_increment(const char *flat, int idx, char *res, size_t size)
{
	const char *start = flat, *end;
	char part[96];
	long long v;
	unsigned long long next;
	int k;

	res[0] = '\0';
	for (k = 0; k < idx; k++) {
		start = strchr(start, '.');
		if (!start)
			return;
		start++;
	}
	end = strchr(start, '.');
	if (!end)
		end = start + strlen(start);
	if ((size_t)(end - start) >= sizeof(part))
		return;
	memcpy(part, start, (size_t)(end - start));
	part[end - start] = '\0';
	if (!value_parse_go_int(part, &v)) /* Go's strconv.Atoi */
		return;
	next = (unsigned long long)v + 1; /* Go's int wraps */
	snprintf(res, size, "%.*s%lld%s", (int)(start - flat), flat, (long long)next, end);
}

/* expandWildcardVersion for one part containing 'x'; writes 1 or 2 parts. */
static int semver_expand(const char *part, struct semver_part *outp)
{
	char op[16], flat[96], res[96];
	const char *ver, *last;
	int dots = 0, kind; /* 1 major, 2 minor, 3 patch wildcard, 0 none */
	const char *rop;
	bool incr = false;
	int n = 0;

	if (!semver_split_op(part, op, sizeof(op), &ver))
		return -1;
	for (const char *p = ver; *p; p++)
		dots += *p == '.';
	last = strrchr(ver, '.');
	last = last ? last + 1 : ver;
	kind = strcmp(last, "x") == 0 ? dots + 1 : 0;
	/* createVersionFromWildcard: ".x.x" -> ".x", first ".x" -> ".0", pad to 3 parts */
	{
		struct gv_buf b1 = {0};
		const char *p = strstr(ver, ".x.x");

		if (p) {
			gv_buf_add(&b1, ver, (size_t)(p - ver));
			gv_buf_adds(&b1, ".x");
			gv_buf_adds(&b1, p + 4);
		} else {
			gv_buf_adds(&b1, ver);
		}
		p = strstr(gv_buf_str(&b1), ".x");
		if (p) {
			size_t off = (size_t)(p - gv_buf_str(&b1));
			b1.data[off + 1] = '0';
		}
		dots = 0;
		for (p = gv_buf_str(&b1); *p; p++)
			dots += *p == '.';
		snprintf(flat, sizeof(flat), "%s%s", gv_buf_str(&b1), dots == 1 ? ".0" : "");
		gv_buf_release(&b1);
	}
	if (strcmp(op, ">") == 0) {
		rop = ">=";
		incr = true;
	} else if (strcmp(op, ">=") == 0) {
		rop = ">=";
	} else if (strcmp(op, "<") == 0) {
		rop = "<";
	} else if (strcmp(op, "<=") == 0) {
		rop = "<";
		incr = true;
	} else if (!op[0] || strcmp(op, "=") == 0 || strcmp(op, "==") == 0) {
		snprintf(outp[n++].text, sizeof(outp[0].text), ">=%s", flat);
		rop = "<";
		incr = true;
	} else if (strcmp(op, "!=") == 0 || strcmp(op, "!") == 0) {
		snprintf(outp[n++].text, sizeof(outp[0].text), "<%s", flat);
		rop = ">=";
		incr = true;
	} else {
		rop = "";
	}
	res[0] = '\0';
	if (!incr) {
		snprintf(res, sizeof(res), "%s", flat);
	} else if (kind == 3 || kind == 2) {
		semver_increment(flat, kind == 3 ? 1 : 0, res, sizeof(res));
	}
	snprintf(outp[n++].text, sizeof(outp[0].text), "%s%s", rop, res);
	return n;
}

static bool semver_holds(enum semver_op op, const struct value_semver *v,
			 const struct value_semver *w)
{
	int c = value_semver_cmp(v, w);

	switch (op) {
	case SV_EQ:
		return c == 0;
	case SV_NE:
		return c != 0;
	case SV_GT:
		return c > 0;
	case SV_GE:
		return c >= 0;
	case SV_LT:
		return c < 0;
	default:
		return c <= 0;
	}
}

static int fn_semver_compare(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			     int nargs, json_t **out)
{
	struct semver_part *parts = NULL, *exp = NULL;
	struct value_semver v, w;
	int n, i, ne = 0, rc = 0;
	bool any = false, all = true, group_open = false;

	memset(&v, 0, sizeof(v));
	if (!semver_parse(STR(0), &v))
		memset(&v, 0, sizeof(v)); /* Kyverno ignores the parse error: 0.0.0 */
	parts = gv_xcalloc(SEMVER_MAX_PARTS, sizeof(*parts));
	exp = gv_xcalloc(2 * SEMVER_MAX_PARTS, sizeof(*exp));
	n = semver_split(STR(1), parts, SEMVER_MAX_PARTS);
	if (n < 0) {
		rc = kfail(ev, JP_ERR_RUNTIME, "semver_compare", "range has too many parts");
		goto out;
	}
	/* splitORParts */
	for (i = 0; i < n; i++) {
		if (strcmp(parts[i].text, "||") == 0 && (i == 0 || i == n - 1)) {
			rc = kfail(ev, JP_ERR_RUNTIME, "semver_compare",
				   "%s element in range is '||'", i == 0 ? "First" : "Last");
			goto out;
		}
	}
	if (n == 0) {
		rc = kfail(ev, JP_ERR_RUNTIME, "semver_compare", "Last element in range is '||'");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(parts[i].text, "||") == 0) {
			snprintf(exp[ne++].text, sizeof(exp[0].text), "||");
		} else if (strchr(parts[i].text, 'x')) {
			int k = semver_expand(parts[i].text, exp + ne);

			if (k < 0) {
				rc = kfail(ev, JP_ERR_RUNTIME, "semver_compare",
					   "Could not get version from string: \"%s\"",
					   parts[i].text);
				goto out;
			}
			ne += k;
		} else {
			exp[ne++] = parts[i];
		}
	}
	/* OR of AND groups; every part is parsed even after the answer is known */
	for (i = 0; i <= ne; i++) {
		char op[16];
		const char *ver;
		enum semver_op sop;

		if (i == ne || strcmp(exp[i].text, "||") == 0) {
			if (!group_open) {
				rc = kfail(ev, JP_ERR_RUNTIME, "semver_compare",
					   "empty range in '%s'", STR(1));
				goto out;
			}
			any = any || all;
			all = true;
			group_open = false;
			continue;
		}
		group_open = true;
		if (!semver_split_op(exp[i].text, op, sizeof(op), &ver)) {
			rc = kfail(ev, JP_ERR_RUNTIME, "semver_compare",
				   "Could not get version from string: \"%s\"", exp[i].text);
			goto out;
		}
		if (!semver_op_of(op, &sop)) {
			rc =
			    kfail(ev, JP_ERR_RUNTIME, "semver_compare",
				  "Could not parse Range \"%s\": Could not parse comparator \"%s\"",
				  exp[i].text, op);
			goto out;
		}
		if (!semver_parse(ver, &w)) {
			rc = kfail(ev, JP_ERR_RUNTIME, "semver_compare",
				   "Could not parse Range \"%s\": invalid version \"%s\"",
				   exp[i].text, ver);
			goto out;
		}
		all = all && semver_holds(sop, &v, &w);
	}
	*out = json_boolean(any);
out:
	free(parts);
	free(exp);
	return rc;
}

/* ------------------------------------------------------------------ */
/* random(regex): a string matching a simple regular expression        */

#define RND_MAX_LEN    4096
#define RND_MAX_REPEAT 10
#define RND_MAX_DEPTH  32
#define RND_MAX_WORK   200000

struct rnd {
	const char *p, *end;
	struct gv_buf out;
	int depth;
	unsigned long work; /* atoms visited, bounded by RND_MAX_WORK */
	const char *err;
	bool limit; /* err is a bound, not a syntax error */
};

static unsigned rnd_below(unsigned n)
{
	unsigned v = 0;

	if (n <= 1)
		return 0;
	if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
		v = (unsigned)rand();
	return v % n;
}

/* A set of code points as ranges; `neg` complements it within printable ASCII. */
struct rnd_set {
	unsigned lo[64], hi[64];
	int n;
	bool neg;
};

static void set_add(struct rnd_set *s, unsigned lo, unsigned hi)
{
	if (s->n < 64) {
		s->lo[s->n] = lo;
		s->hi[s->n] = hi;
		s->n++;
	}
}

static bool set_has(const struct rnd_set *s, unsigned c)
{
	for (int i = 0; i < s->n; i++)
		if (c >= s->lo[i] && c <= s->hi[i])
			return true;
	return false;
}

static bool set_class(struct rnd_set *s, char c)
{
	switch (c) {
	case 'd':
		set_add(s, '0', '9');
		return true;
	case 'w':
		set_add(s, '0', '9');
		set_add(s, 'A', 'Z');
		set_add(s, 'a', 'z');
		set_add(s, '_', '_');
		return true;
	case 's':
		set_add(s, ' ', ' ');
		set_add(s, '\t', '\t');
		set_add(s, '\n', '\n');
		return true;
	default:
		return false;
	}
}

static unsigned escape_char(char c)
{
	switch (c) {
	case 'n':
		return '\n';
	case 't':
		return '\t';
	case 'r':
		return '\r';
	case 'f':
		return '\f';
	case 'v':
		return '\v';
	default:
		return (unsigned char)c;
	}
}

static void set_pick(const struct rnd_set *s, struct gv_buf *out)
{
	unsigned total = 0, k;
	int i;

	if (s->neg) {
		unsigned cand[96], nc = 0, c;

		for (c = 32; c < 127; c++)
			if (!set_has(s, c))
				cand[nc++] = c;
		if (nc)
			jp_utf8_put(out, cand[rnd_below(nc)]);
		return;
	}
	for (i = 0; i < s->n; i++)
		total += s->hi[i] - s->lo[i] + 1;
	k = rnd_below(total);
	for (i = 0; i < s->n; i++) {
		unsigned w = s->hi[i] - s->lo[i] + 1;
		if (k < w) {
			jp_utf8_put(out, s->lo[i] + k);
			return;
		}
		k -= w;
	}
}

static void rnd_alt(struct rnd *r, bool emit);

/* Parses one atom at r->p; emits a sample when emit. */
static void rnd_atom(struct rnd *r, bool emit)
{
	struct rnd_set set;
	unsigned cp;
	char c = *r->p;

	memset(&set, 0, sizeof(set));
	if (++r->work > RND_MAX_WORK) {
		r->err = "pattern too complex";
		r->limit = true;
		return;
	}
	if (c == '(') {
		r->p++;
		if (r->p + 1 < r->end && r->p[0] == '?' && r->p[1] == ':')
			r->p += 2;
		else if (r->p < r->end && r->p[0] == '?') {
			r->err = "unsupported group syntax";
			return;
		}
		if (++r->depth > RND_MAX_DEPTH) {
			r->err = "nested too deeply";
			return;
		}
		rnd_alt(r, emit);
		r->depth--;
		if (r->err)
			return;
		if (r->p >= r->end || *r->p != ')') {
			r->err = "missing )";
			return;
		}
		r->p++;
		return;
	}
	if (c == '[') {
		r->p++;
		if (r->p < r->end && *r->p == '^') {
			set.neg = true;
			r->p++;
		}
		bool first = true;
		while (r->p < r->end && (*r->p != ']' || first)) {
			unsigned lo, hi;

			first = false;
			if (*r->p == '\\' && r->p + 1 < r->end) {
				if (set_class(&set, r->p[1])) {
					r->p += 2;
					continue;
				}
				lo = escape_char(r->p[1]);
				r->p += 2;
			} else {
				r->p += jp_utf8_decode(r->p, (size_t)(r->end - r->p), &lo);
			}
			hi = lo;
			if (r->p + 1 < r->end && *r->p == '-' && r->p[1] != ']') {
				r->p++;
				if (*r->p == '\\' && r->p + 1 < r->end) {
					hi = escape_char(r->p[1]);
					r->p += 2;
				} else {
					r->p += jp_utf8_decode(r->p, (size_t)(r->end - r->p), &hi);
				}
				if (hi < lo) {
					r->err = "invalid character class range";
					return;
				}
			}
			set_add(&set, lo, hi);
		}
		if (r->p >= r->end) {
			r->err = "missing ]";
			return;
		}
		r->p++;
		if (emit)
			set_pick(&set, &r->out);
		return;
	}
	if (c == '.') {
		r->p++;
		if (emit)
			jp_utf8_put(&r->out, 32 + rnd_below(95));
		return;
	}
	if (c == '\\') {
		if (r->p + 1 >= r->end) {
			r->err = "trailing backslash";
			return;
		}
		c = r->p[1];
		r->p += 2;
		if (set_class(&set, c) || set_class(&set, (char)tolower((unsigned char)c))) {
			set.neg = isupper((unsigned char)c) != 0;
			if (emit)
				set_pick(&set, &r->out);
			return;
		}
		if (c == 'b' || c == 'B' || c == 'A' || c == 'z')
			return;
		if (emit)
			jp_utf8_put(&r->out, escape_char(c));
		return;
	}
	if (c == '^' || c == '$') {
		r->p++;
		return;
	}
	if (c == '*' || c == '+' || c == '?' || c == '{' || c == ')' || c == '|') {
		r->err = "missing argument to repetition operator";
		return;
	}
	r->p += jp_utf8_decode(r->p, (size_t)(r->end - r->p), &cp);
	if (emit)
		jp_utf8_put(&r->out, cp);
}

/* A sequence of quantified atoms up to | or ) or the end. */
static void rnd_seq(struct rnd *r, bool emit)
{
	while (r->p < r->end && *r->p != '|' && *r->p != ')' && !r->err) {
		const char *start = r->p;
		long lo = 1, hi = 1, k, times;

		rnd_atom(r, false);
		if (r->err)
			return;
		if (r->p < r->end && (*r->p == '*' || *r->p == '+' || *r->p == '?')) {
			lo = *r->p == '+' ? 1 : 0;
			hi = *r->p == '?' ? 1 : lo + RND_MAX_REPEAT;
			r->p++;
		} else if (r->p < r->end && *r->p == '{' && r->p + 1 < r->end &&
			   isdigit((unsigned char)r->p[1])) {
			char *e;

			lo = strtol(r->p + 1, &e, 10);
			if (lo > 1000) {
				r->err = "invalid repeat count";
				return;
			}
			hi = lo;
			if (*e == ',') {
				if (isdigit((unsigned char)e[1]))
					hi = strtol(e + 1, &e, 10);
				else {
					hi = lo + RND_MAX_REPEAT;
					e++;
				}
			}
			if (*e != '}' || hi < lo || hi > 1000) {
				r->err = "invalid repeat count";
				return;
			}
			r->p = e + 1;
		}
		if (r->p < r->end && *r->p == '?') /* lazy: same strings */
			r->p++;
		if (!emit)
			continue;
		times = lo + (long)rnd_below((unsigned)(hi - lo + 1));
		{
			const char *after = r->p;

			for (k = 0; k < times && !r->err; k++) {
				r->p = start;
				rnd_atom(r, true);
				if (r->out.len > RND_MAX_LEN) {
					r->err = "result too long";
					r->limit = true;
					return;
				}
			}
			r->p = after;
		}
	}
}

/* Alternatives separated by |: one is chosen. */
static void rnd_alt(struct rnd *r, bool emit)
{
	const char *starts[64];
	int n = 0, pick, i;
	const char *begin = r->p, *end;

	/* first pass: find the alternatives */
	for (;;) {
		if (n < 64)
			starts[n++] = r->p;
		rnd_seq(r, false);
		if (r->err)
			return;
		if (r->p < r->end && *r->p == '|') {
			r->p++;
			continue;
		}
		break;
	}
	end = r->p;
	(void)begin;
	if (!emit)
		return;
	pick = (int)rnd_below((unsigned)n);
	for (i = 0; i < n; i++) {
		if (i != pick)
			continue;
		r->p = starts[i];
		rnd_seq(r, true);
	}
	r->p = end;
}

static int fn_random(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	struct rnd r;
	int rc;

	if (SLEN(0) == 0)
		return kfail(ev, JP_ERR_INVALID_VALUE, "random", "no pattern provided");
	memset(&r, 0, sizeof(r));
	r.p = STR(0);
	r.end = STR(0) + SLEN(0);
	rnd_alt(&r, true);
	if (!r.err && r.p < r.end)
		r.err = "unexpected )";
	if (r.err) {
		rc = kfail(ev, r.limit ? JP_ERR_LIMIT : JP_ERR_RUNTIME, "random",
			   "%s in pattern '%s'", r.err, STR(0));
		gv_buf_release(&r.out);
		return rc;
	}
	rc = jp_charge(ev, r.work / 8);
	if (rc) {
		gv_buf_release(&r.out);
		return rc;
	}
	return out_buf(ev, "random", &r.out, out);
}

/* ------------------------------------------------------------------ */
/* x509_decode: Go's x509.Certificate as encoding/json shows it          */

static json_t *b64_json(const unsigned char *p, size_t n)
{
	unsigned char *buf = gv_xmalloc(4 * ((n + 2) / 3) + 1);
	int len = EVP_EncodeBlock(buf, p, (int)n);
	json_t *v = json_stringn((const char *)buf, (size_t)len);

	free(buf);
	return v;
}

/* DER bytes from an i2d call (taken) as base64, or null when len <= 0. */
static json_t *der_json(unsigned char *der, int len)
{
	json_t *v = len > 0 ? b64_json(der, (size_t)len) : json_null();

	OPENSSL_free(der);
	return v;
}

static json_t *oid_json(const ASN1_OBJECT *obj)
{
	char buf[256], *p, *end;
	json_t *a = json_array();

	if (OBJ_obj2txt(buf, sizeof(buf), obj, 1) <= 0)
		return a;
	for (p = buf; *p;) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		json_array_append_new(a, json_integer(v));
		p = *end == '.' ? end + 1 : end;
	}
	return a;
}

static json_t *asn1_string_json(const ASN1_STRING *s)
{
	unsigned char *utf8 = NULL;
	int n = ASN1_STRING_to_UTF8(&utf8, s);
	json_t *v;

	if (n < 0)
		return json_string("");
	v = jp_string_lossy((const char *)utf8, (size_t)n);
	OPENSSL_free(utf8);
	return v;
}

/* pkix.Name */
static json_t *name_json(const X509_NAME *name)
{
	static const struct {
		int nid;
		const char *field;
	} fields[] = {
	    {NID_countryName, "Country"},
	    {NID_organizationName, "Organization"},
	    {NID_organizationalUnitName, "OrganizationalUnit"},
	    {NID_localityName, "Locality"},
	    {NID_stateOrProvinceName, "Province"},
	    {NID_streetAddress, "StreetAddress"},
	    {NID_postalCode, "PostalCode"},
	};
	json_t *o = json_object(), *names = json_array();
	int i, n = X509_NAME_entry_count(name);
	size_t f;

	for (f = 0; f < GV_ARRAY_LEN(fields); f++)
		json_object_set_new(o, fields[f].field, json_null());
	json_object_set_new(o, "SerialNumber", json_string(""));
	json_object_set_new(o, "CommonName", json_string(""));
	for (i = 0; i < n; i++) {
		const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
		const ASN1_OBJECT *obj = X509_NAME_ENTRY_get_object(e);
		json_t *val = asn1_string_json(X509_NAME_ENTRY_get_data(e)), *pair = json_object();
		int nid = OBJ_obj2nid(obj);

		json_object_set_new(pair, "Type", oid_json(obj));
		json_object_set(pair, "Value", val);
		json_array_append_new(names, pair);
		if (nid == NID_commonName)
			json_object_set(o, "CommonName", val);
		else if (nid == NID_serialNumber)
			json_object_set(o, "SerialNumber", val);
		for (f = 0; f < GV_ARRAY_LEN(fields); f++) {
			if (fields[f].nid != nid)
				continue;
			if (json_is_null(json_object_get(o, fields[f].field)))
				json_object_set_new(o, fields[f].field, json_array());
			json_array_append(json_object_get(o, fields[f].field), val);
		}
		json_decref(val);
	}
	json_object_set_new(o, "Names", names);
	json_object_set_new(o, "ExtraNames", json_null());
	return o;
}

static json_t *asn1_time_json(const ASN1_TIME *t)
{
	struct tm tm;
	char buf[64];

	if (!ASN1_TIME_to_tm(t, &tm))
		return json_null();
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return json_string(buf);
}

/* A big number as a JSON number (exact integer when it fits). */
static json_t *bn_number(const BIGNUM *bn)
{
	char *dec = BN_bn2dec(bn);
	json_t *v;
	long long ll;

	if (!dec)
		return json_null();
	if (value_parse_go_int(dec, &ll))
		v = json_integer(ll);
	else
		v = jp_number(strtod(dec, NULL));
	OPENSSL_free(dec);
	return v ? v : json_null();
}

static int go_sig_alg(int nid)
{
	switch (nid) {
	case NID_md2WithRSAEncryption:
		return 1;
	case NID_md5WithRSAEncryption:
		return 2;
	case NID_sha1WithRSAEncryption:
		return 3;
	case NID_sha256WithRSAEncryption:
		return 4;
	case NID_sha384WithRSAEncryption:
		return 5;
	case NID_sha512WithRSAEncryption:
		return 6;
	case NID_dsaWithSHA1:
		return 7;
	case NID_dsa_with_SHA256:
		return 8;
	case NID_ecdsa_with_SHA1:
		return 9;
	case NID_ecdsa_with_SHA256:
		return 10;
	case NID_ecdsa_with_SHA384:
		return 11;
	case NID_ecdsa_with_SHA512:
		return 12;
	case NID_rsassaPss:
		return 13; /* Go distinguishes the PSS hashes; SHA-256 is the common one */
	case NID_ED25519:
		return 16;
	default:
		return 0;
	}
}

static json_t *public_key_json(X509 *cert, int *alg)
{
	EVP_PKEY *pk = X509_get0_pubkey(cert);
	json_t *o;
	BIGNUM *n = NULL, *e = NULL, *x = NULL, *y = NULL;

	*alg = 0;
	if (!pk) /* a key OpenSSL cannot decode */
		return json_null();
	o = json_object();
	switch (EVP_PKEY_get_base_id(pk)) {
	case EVP_PKEY_RSA:
		*alg = 1;
		if (EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_N, &n) &&
		    EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_E, &e)) {
			char *dec = BN_bn2dec(n);
			json_object_set_new(o, "N", json_string(dec ? dec : ""));
			OPENSSL_free(dec);
			json_object_set_new(o, "E", bn_number(e));
		}
		break;
	case EVP_PKEY_DSA:
		*alg = 2;
		break;
	case EVP_PKEY_EC:
		*alg = 3;
		json_object_set_new(o, "Curve", json_object());
		if (EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_X, &x) &&
		    EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_Y, &y)) {
			json_object_set_new(o, "X", bn_number(x));
			json_object_set_new(o, "Y", bn_number(y));
		}
		break;
	case EVP_PKEY_ED25519:
		*alg = 4;
		{
			unsigned char raw[64];
			size_t len = sizeof(raw);

			json_decref(o);
			if (EVP_PKEY_get_raw_public_key(pk, raw, &len))
				return b64_json(raw, len);
			return json_null();
		}
	default:
		break;
	}
	BN_free(n);
	BN_free(e);
	BN_free(x);
	BN_free(y);
	return o;
}

static int go_key_usage(uint32_t ku)
{
	static const struct {
		uint32_t ossl;
		int go;
	} map[] = {
	    {KU_DIGITAL_SIGNATURE, 1}, {KU_NON_REPUDIATION, 2}, {KU_KEY_ENCIPHERMENT, 4},
	    {KU_DATA_ENCIPHERMENT, 8}, {KU_KEY_AGREEMENT, 16},	{KU_KEY_CERT_SIGN, 32},
	    {KU_CRL_SIGN, 64},	       {KU_ENCIPHER_ONLY, 128}, {KU_DECIPHER_ONLY, 256},
	};
	int r = 0;

	if (ku == UINT32_MAX)
		return 0;
	for (size_t i = 0; i < GV_ARRAY_LEN(map); i++)
		if (ku & map[i].ossl)
			r |= map[i].go;
	return r;
}

static json_t *ext_key_usage_json(X509 *cert)
{
	static const struct {
		int nid, go;
	} map[] = {
	    {NID_anyExtendedKeyUsage, 0}, {NID_server_auth, 1},	  {NID_client_auth, 2},
	    {NID_code_sign, 3},		  {NID_email_protect, 4}, {NID_ipsecEndSystem, 5},
	    {NID_ipsecTunnel, 6},	  {NID_ipsecUser, 7},	  {NID_time_stamp, 8},
	    {NID_OCSP_sign, 9},		  {NID_ms_sgc, 10},	  {NID_ns_sgc, 11},
	    {NID_ms_code_com, 12},
	};
	EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(cert, NID_ext_key_usage, NULL, NULL);
	json_t *a;
	int i;

	if (!eku)
		return json_null();
	a = json_array();
	for (i = 0; i < sk_ASN1_OBJECT_num(eku); i++) {
		int nid = OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, i));
		for (size_t k = 0; k < GV_ARRAY_LEN(map); k++)
			if (map[k].nid == nid)
				json_array_append_new(a, json_integer(map[k].go));
	}
	EXTENDED_KEY_USAGE_free(eku);
	return a;
}

/* *url.URL as encoding/json shows it, for a simple scheme://host/path?query#fragment. */
static json_t *url_json(const char *s)
{
	json_t *o = json_object();
	const char *p = strstr(s, "://"), *rest, *q, *h, *f;
	char *scheme = p ? gv_xstrndup(s, (size_t)(p - s)) : gv_xstrdup("");

	rest = p ? p + 3 : s;
	h = rest + strcspn(rest, "/?#");
	q = strchr(h, '?');
	f = strchr(h, '#');
	json_object_set_new(o, "Scheme", json_string(scheme));
	json_object_set_new(o, "Opaque", json_string(""));
	json_object_set_new(o, "User", json_null());
	json_object_set_new(o, "Host", json_stringn(rest, (size_t)(h - rest)));
	json_object_set_new(o, "Path", json_stringn(h, strcspn(h, "?#")));
	json_object_set_new(o, "RawPath", json_string(""));
	json_object_set_new(o, "OmitHost", json_false());
	json_object_set_new(o, "ForceQuery", json_false());
	json_object_set_new(o, "RawQuery",
			    q ? json_stringn(q + 1, strcspn(q + 1, "#")) : json_string(""));
	json_object_set_new(o, "Fragment", f ? json_string(f + 1) : json_string(""));
	json_object_set_new(o, "RawFragment", json_string(""));
	free(scheme);
	return o;
}

static json_t *ip_json(const ASN1_OCTET_STRING *ip)
{
	const unsigned char *b = ASN1_STRING_get0_data(ip);
	int n = ASN1_STRING_length(ip);
	char buf[64];

	if (n == 4) {
		snprintf(buf, sizeof(buf), "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	} else if (n == 16) {
		static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0,    0,
							   0, 0, 0, 0, 0xff, 0xff};
		unsigned g[8];
		int best = -1, best_len = 0, i, run;
		struct gv_buf t = {0};

		if (memcmp(b, v4mapped, 12) == 0) {
			snprintf(buf, sizeof(buf), "%u.%u.%u.%u", b[12], b[13], b[14], b[15]);
			return json_string(buf);
		}
		for (i = 0; i < 8; i++)
			g[i] = (unsigned)(b[2 * i] << 8 | b[2 * i + 1]);
		for (i = 0; i < 8; i += run ? run : 1) { /* longest run of zero groups, >= 2 */
			for (run = 0; i + run < 8 && g[i + run] == 0; run++)
				;
			if (run > best_len && run >= 2) {
				best = i;
				best_len = run;
			}
		}
		for (i = 0; i < 8; i++) {
			if (i == best) {
				gv_buf_adds(&t, "::");
				i += best_len - 1;
				continue;
			}
			if (t.len && t.data[t.len - 1] != ':')
				gv_buf_addc(&t, ':');
			gv_buf_addf(&t, "%x", g[i]);
		}
		snprintf(buf, sizeof(buf), "%s", gv_buf_str(&t));
		gv_buf_release(&t);
	} else {
		return json_null();
	}
	return json_string(buf);
}

/* Subject alternative names, split by kind as Go does. */
static void san_json(X509 *cert, json_t *o)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	json_t *dns = json_null(), *email = json_null(), *ips = json_null(), *uris = json_null();
	int i;

	for (i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		json_t **dst = NULL, *v = NULL;

		switch (g->type) {
		case GEN_DNS:
			dst = &dns;
			v = asn1_string_json(g->d.dNSName);
			break;
		case GEN_EMAIL:
			dst = &email;
			v = asn1_string_json(g->d.rfc822Name);
			break;
		case GEN_IPADD:
			dst = &ips;
			v = ip_json(g->d.iPAddress);
			break;
		case GEN_URI: {
			json_t *t = asn1_string_json(g->d.uniformResourceIdentifier);
			dst = &uris;
			v = url_json(json_string_value(t));
			json_decref(t);
			break;
		}
		default:
			continue;
		}
		if (json_is_null(*dst))
			*dst = json_array();
		json_array_append_new(*dst, v);
	}
	GENERAL_NAMES_free(gens);
	json_object_set_new(o, "DNSNames", dns);
	json_object_set_new(o, "EmailAddresses", email);
	json_object_set_new(o, "IPAddresses", ips);
	json_object_set_new(o, "URIs", uris);
}

static json_t *extensions_json(X509 *cert)
{
	int i, n = X509_get_ext_count(cert);
	json_t *a;

	if (n <= 0)
		return json_null();
	a = json_array();
	for (i = 0; i < n; i++) {
		X509_EXTENSION *ext = X509_get_ext(cert, i);
		ASN1_OCTET_STRING *data = X509_EXTENSION_get_data(ext);
		json_t *e = json_object();

		json_object_set_new(e, "Id", oid_json(X509_EXTENSION_get_object(ext)));
		json_object_set_new(e, "Critical", json_boolean(X509_EXTENSION_get_critical(ext)));
		json_object_set_new(
		    e, "Value",
		    b64_json(ASN1_STRING_get0_data(data), (size_t)ASN1_STRING_length(data)));
		json_array_append_new(a, e);
	}
	return a;
}

static json_t *access_json(X509 *cert, int method_nid)
{
	AUTHORITY_INFO_ACCESS *aia = X509_get_ext_d2i(cert, NID_info_access, NULL, NULL);
	json_t *a = json_null();
	int i;

	for (i = 0; aia && i < sk_ACCESS_DESCRIPTION_num(aia); i++) {
		ACCESS_DESCRIPTION *ad = sk_ACCESS_DESCRIPTION_value(aia, i);

		if (OBJ_obj2nid(ad->method) != method_nid || ad->location->type != GEN_URI)
			continue;
		if (json_is_null(a))
			a = json_array();
		json_array_append_new(a,
				      asn1_string_json(ad->location->d.uniformResourceIdentifier));
	}
	AUTHORITY_INFO_ACCESS_free(aia);
	return a;
}

static json_t *crl_json(X509 *cert)
{
	CRL_DIST_POINTS *dps = X509_get_ext_d2i(cert, NID_crl_distribution_points, NULL, NULL);
	json_t *a = json_null();
	int i, j;

	for (i = 0; dps && i < sk_DIST_POINT_num(dps); i++) {
		DIST_POINT *dp = sk_DIST_POINT_value(dps, i);

		if (!dp->distpoint || dp->distpoint->type != 0)
			continue;
		for (j = 0; j < sk_GENERAL_NAME_num(dp->distpoint->name.fullname); j++) {
			GENERAL_NAME *g = sk_GENERAL_NAME_value(dp->distpoint->name.fullname, j);
			if (g->type != GEN_URI)
				continue;
			if (json_is_null(a))
				a = json_array();
			json_array_append_new(a, asn1_string_json(g->d.uniformResourceIdentifier));
		}
	}
	CRL_DIST_POINTS_free(dps);
	return a;
}

static json_t *policies_json(X509 *cert)
{
	CERTIFICATEPOLICIES *pol = X509_get_ext_d2i(cert, NID_certificate_policies, NULL, NULL);
	json_t *a = json_null();
	int i;

	for (i = 0; pol && i < sk_POLICYINFO_num(pol); i++) {
		if (json_is_null(a))
			a = json_array();
		json_array_append_new(a, oid_json(sk_POLICYINFO_value(pol, i)->policyid));
	}
	CERTIFICATEPOLICIES_free(pol);
	return a;
}

static json_t *octets_or_null(const ASN1_OCTET_STRING *s)
{
	if (!s)
		return json_null();
	return b64_json(ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s));
}

static json_t *x509_object(X509 *cert)
{
	json_t *o = json_object();
	const ASN1_BIT_STRING *sig = NULL;
	const X509_ALGOR *sigalg = NULL;
	const ASN1_OBJECT *algobj = NULL;
	BIGNUM *serial;
	uint32_t flags;
	unsigned char *der = NULL;
	long pathlen;
	int alg, len;

	len = i2d_X509(cert, &der);
	json_object_set_new(o, "Raw", der_json(der, len));
	der = NULL;
	len = i2d_re_X509_tbs(cert, &der);
	json_object_set_new(o, "RawTBSCertificate", der_json(der, len));
	der = NULL;
	len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
	json_object_set_new(o, "RawSubjectPublicKeyInfo", der_json(der, len));
	der = NULL;
	len = i2d_X509_NAME(X509_get_subject_name(cert), &der);
	json_object_set_new(o, "RawSubject", der_json(der, len));
	der = NULL;
	len = i2d_X509_NAME(X509_get_issuer_name(cert), &der);
	json_object_set_new(o, "RawIssuer", der_json(der, len));
	X509_get0_signature(&sig, &sigalg, cert);
	json_object_set_new(o, "Signature",
			    sig ? b64_json(sig->data, (size_t)sig->length) : json_null());
	if (sigalg)
		X509_ALGOR_get0(&algobj, NULL, NULL, sigalg);
	json_object_set_new(o, "SignatureAlgorithm",
			    json_integer(algobj ? go_sig_alg(OBJ_obj2nid(algobj)) : 0));
	json_object_set_new(o, "PublicKey", public_key_json(cert, &alg));
	json_object_set_new(o, "PublicKeyAlgorithm", json_integer(alg));
	json_object_set_new(o, "Version", json_integer(X509_get_version(cert) + 1));
	serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
	json_object_set_new(o, "SerialNumber", serial ? bn_number(serial) : json_null());
	BN_free(serial);
	json_object_set_new(o, "Issuer", name_json(X509_get_issuer_name(cert)));
	json_object_set_new(o, "Subject", name_json(X509_get_subject_name(cert)));
	json_object_set_new(o, "NotBefore", asn1_time_json(X509_get0_notBefore(cert)));
	json_object_set_new(o, "NotAfter", asn1_time_json(X509_get0_notAfter(cert)));
	json_object_set_new(o, "KeyUsage", json_integer(go_key_usage(X509_get_key_usage(cert))));
	json_object_set_new(o, "Extensions", extensions_json(cert));
	json_object_set_new(o, "ExtraExtensions", json_null());
	json_object_set_new(o, "UnhandledCriticalExtensions", json_null());
	json_object_set_new(o, "ExtKeyUsage", ext_key_usage_json(cert));
	json_object_set_new(o, "UnknownExtKeyUsage", json_null());
	flags = X509_get_extension_flags(cert);
	pathlen = X509_get_pathlen(cert);
	json_object_set_new(o, "BasicConstraintsValid", json_boolean(flags & EXFLAG_BCONS));
	json_object_set_new(o, "IsCA", json_boolean(flags & EXFLAG_CA));
	json_object_set_new(
	    o, "MaxPathLen",
	    json_integer((flags & EXFLAG_BCONS) ? (pathlen < 0 ? -1 : pathlen) : 0));
	json_object_set_new(o, "MaxPathLenZero",
			    json_boolean((flags & EXFLAG_BCONS) && pathlen == 0));
	json_object_set_new(o, "SubjectKeyId", octets_or_null(X509_get0_subject_key_id(cert)));
	json_object_set_new(o, "AuthorityKeyId", octets_or_null(X509_get0_authority_key_id(cert)));
	json_object_set_new(o, "OCSPServer", access_json(cert, NID_ad_OCSP));
	json_object_set_new(o, "IssuingCertificateURL", access_json(cert, NID_ad_ca_issuers));
	san_json(cert, o);
	json_object_set_new(o, "PermittedDNSDomainsCritical", json_false());
	json_object_set_new(o, "PermittedDNSDomains", json_null());
	json_object_set_new(o, "ExcludedDNSDomains", json_null());
	json_object_set_new(o, "PermittedIPRanges", json_null());
	json_object_set_new(o, "ExcludedIPRanges", json_null());
	json_object_set_new(o, "PermittedEmailAddresses", json_null());
	json_object_set_new(o, "ExcludedEmailAddresses", json_null());
	json_object_set_new(o, "PermittedURIDomains", json_null());
	json_object_set_new(o, "ExcludedURIDomains", json_null());
	json_object_set_new(o, "CRLDistributionPoints", crl_json(cert));
	json_object_set_new(o, "PolicyIdentifiers", policies_json(cert));
	return o;
}

static int fn_x509_decode(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	BIO *bio;
	X509 *cert;
	int rc = jp_charge(ev, 100 + SLEN(0) / 4);

	if (rc)
		return rc;
	if (SLEN(0) > (1u << 20))
		return kfail(ev, JP_ERR_LIMIT, "x509_decode", "certificate larger than 1 MiB");
	bio = BIO_new_mem_buf(STR(0), (int)SLEN(0));
	cert = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (!cert)
		return kfail(ev, JP_ERR_RUNTIME, "x509_decode", "invalid certificate");
	*out = x509_object(cert);
	X509_free(cert);
	return 0;
}

/* ------------------------------------------------------------------ */
/* image_normalize (distribution/reference grammar, Kyverno defaults)   */

static int fn_image_normalize(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			      int nargs, json_t **out)
{
	struct gv_imageref ref;
	struct gv_buf res = {0};
	struct gv_err e = {0};
	int rc;

	if (gv_imageref_parse(STR(0), SLEN(0), &ref, &e))
		return kfail(ev, JP_ERR_RUNTIME, "image_normalize", "%s", e.msg);
	if (ref.domain)
		gv_buf_addf(&res, "%s/", ref.domain);
	gv_buf_adds(&res, ref.path);
	if (ref.digest)
		gv_buf_addf(&res, "@%s", ref.digest);
	else
		gv_buf_addf(&res, ":%s", ref.tag ? ref.tag : "latest");
	rc = out_buf(ev, "image_normalize", &res, out);
	gv_imageref_release(&ref);
	gv_buf_release(&res);
	return rc;
}

/* ------------------------------------------------------------------ */
/* is_external_url                                                      */

static bool parse_ipv4(const char *s, unsigned char ip[4])
{
	int k = 0;
	const char *p = s;

	for (k = 0; k < 4; k++) {
		unsigned v = 0;
		int digits = 0;

		while (isdigit((unsigned char)*p) && digits < 4) {
			v = v * 10 + (unsigned)(*p - '0');
			p++;
			digits++;
		}
		if (!digits || v > 255 || (digits > 1 && p[-digits] == '0'))
			return false;
		ip[k] = (unsigned char)v;
		if (k < 3 && *p++ != '.')
			return false;
	}
	return *p == '\0';
}

static bool ipv4_internal(const unsigned char ip[4])
{
	return ip[0] == 127 || ip[0] == 10 || ip[0] == 0 ||
	       (ip[0] == 172 && (ip[1] & 0xF0) == 16) || (ip[0] == 192 && ip[1] == 168) ||
	       (ip[0] == 169 && ip[1] == 254);
}

static bool host_suffix(const char *h, const char *suffix)
{
	size_t n = strlen(h), m = strlen(suffix);

	return n >= m && strcasecmp(h + n - m, suffix) == 0;
}

static int fn_is_external_url(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			      int nargs, json_t **out)
{
	const char *s = STR(0), *p, *host, *end, *at;
	char h[256];
	size_t hn;
	unsigned char ip4[4];

	*out = json_false();
	p = strstr(s, "://");
	if (!p || p == s)
		return 0;
	for (const char *q = s; q < p; q++)
		if (!isalnum((unsigned char)*q) && *q != '+' && *q != '-' && *q != '.')
			return 0;
	host = p + 3;
	end = host + strcspn(host, "/?#");
	at = memchr(host, '@', (size_t)(end - host));
	if (at)
		host = at + 1;
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));
		if (!close)
			return 0;
		hn = (size_t)(close - host - 1);
		if (hn == 0 || hn >= sizeof(h))
			return 0;
		memcpy(h, host + 1, hn);
		h[hn] = '\0';
		/* ::1 loopback, fc00::/7 unique local, fe80::/10 link local, :: unspecified */
		*out =
		    json_boolean(!(strcmp(h, "::1") == 0 || strcmp(h, "::") == 0 ||
				   strncasecmp(h, "fc", 2) == 0 || strncasecmp(h, "fd", 2) == 0 ||
				   strncasecmp(h, "fe8", 3) == 0 || strncasecmp(h, "fe9", 3) == 0 ||
				   strncasecmp(h, "fea", 3) == 0 || strncasecmp(h, "feb", 3) == 0));
		return 0;
	}
	hn = strcspn(host, ":/?#");
	if (host + hn > end)
		hn = (size_t)(end - host);
	if (hn == 0 || hn >= sizeof(h))
		return 0;
	memcpy(h, host, hn);
	h[hn] = '\0';
	if (parse_ipv4(h, ip4)) {
		*out = json_boolean(!ipv4_internal(ip4));
		return 0;
	}
	if (strcasecmp(h, "localhost") == 0 || host_suffix(h, ".localhost") ||
	    host_suffix(h, ".local") || host_suffix(h, ".svc") || !strchr(h, '.'))
		return 0;
	*out = json_true();
	return 0;
}

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
		return kfail(ev, JP_ERR_RUNTIME, fname, "parsing time \"%s\": %s", STR(i), why);
	return 0;
}

static int duration_arg(struct jp_ev *ev, const char *fname, struct jp_arg *args, int i,
			long long *ns)
{
	long double d;

	if (!value_parse_duration(STR(i), &d))
		return kfail(ev, JP_ERR_RUNTIME, fname, "time: invalid duration \"%s\"", STR(i));
	*ns = (long long)d;
	return 0;
}

static void time_now(struct gotime *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
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

static int fn_time_now(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	struct gotime t;

	time_now(&t);
	return out_time(&t, out);
}

static int fn_time_now_utc(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			   int nargs, json_t **out)
{
	return fn_time_now(ev, call, args, nargs, out);
}

static int fn_time_since(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
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
		time_now(&t2);
	}
	return out_duration(time_sub(&t2, &t1), out);
}

static int fn_time_add(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
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
static int fn_time_parse(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
{
	struct gotime t;
	long long s;
	int rc;

	if (strcmp(STR(0), "1136239445") == 0) {
		if (!value_parse_go_int(STR(1), &s))
			return kfail(ev, JP_ERR_RUNTIME, "time_parse",
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

static int fn_time_utc(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	struct gotime t;
	int rc = time_arg(ev, "time_utc", args, 0, NULL, &t);

	if (rc)
		return rc;
	t.off = 0;
	return out_time(&t, out);
}

static int fn_time_diff(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	struct gotime t1, t2;
	int rc;

	rc = time_arg(ev, "time_diff", args, 0, NULL, &t1);
	if (!rc)
		rc = time_arg(ev, "time_diff", args, 1, NULL, &t2);
	if (rc)
		return rc;
	return out_duration(time_sub(&t2, &t1), out);
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

static int fn_time_before(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	return time_compare(ev, "time_before", args, -1, out);
}

static int fn_time_after(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
{
	return time_compare(ev, "time_after", args, 1, out);
}

static int fn_time_between(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			   int nargs, json_t **out)
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
static int fn_time_truncate(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
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
static int fn_time_to_cron(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			   int nargs, json_t **out)
{
	struct gotime t;
	struct tm tm;
	char buf[64];
	int rc = time_arg(ev, "time_to_cron", args, 0, NULL, &t);

	if (rc)
		return rc;
	if (!unix_to_civil(t.sec, 0, &tm))
		return kfail(ev, JP_ERR_RUNTIME, "time_to_cron", "time out of range");
	snprintf(buf, sizeof(buf), "%d %d %d %d %d", tm.tm_min, tm.tm_hour, tm.tm_mday,
		 tm.tm_mon + 1, tm.tm_wday);
	*out = json_string(buf);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The table, sorted by name                                            */

#define T(x) JT_##x
#define S    T(STRING)
#define N    T(NUMBER)
const struct jp_func jp_kyverno_funcs[] = {
    {"add",
     "add(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     fn_add,
     NULL},
    {"base64_decode", "base64_decode(string) -> string", 1, 1, {S}, fn_base64_decode, NULL},
    {"base64_encode", "base64_encode(string) -> string", 1, 1, {S}, fn_base64_encode, NULL},
    {"compare", "compare(string, string) -> number", 2, 2, {S, S}, fn_compare, NULL},
    {"divide",
     "divide(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     fn_divide,
     NULL},
    {"equal_fold", "equal_fold(string, string) -> boolean", 2, 2, {S, S}, fn_equal_fold, NULL},
    {"image_normalize", "image_normalize(string) -> string", 1, 1, {S}, fn_image_normalize, NULL},
    {"is_external_url", "is_external_url(string) -> boolean", 1, 1, {S}, fn_is_external_url, NULL},
    {"items",
     "items(object|array, string, string) -> array",
     3,
     3,
     {T(OBJECT) | T(ARRAY), S, S},
     fn_items,
     NULL},
    {"label_match",
     "label_match(object, object) -> boolean",
     2,
     2,
     {T(OBJECT), T(OBJECT)},
     fn_label_match,
     NULL},
    {"lookup",
     "lookup(object|array, string|number) -> any",
     2,
     2,
     {T(OBJECT) | T(ARRAY), S | N},
     fn_lookup,
     NULL},
    {"md5", "md5(string) -> string", 1, 1, {S}, fn_md5, NULL},
    {"modulo",
     "modulo(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     fn_modulo,
     NULL},
    {"multiply",
     "multiply(number|quantity|duration, number) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     fn_multiply,
     NULL},
    {"object_from_lists",
     "object_from_lists(array, array) -> object",
     2,
     2,
     {T(ARRAY), T(ARRAY)},
     fn_object_from_lists,
     NULL},
    {"parse_json", "parse_json(string) -> any", 1, 1, {S}, fn_parse_json, NULL},
    {"parse_yaml", "parse_yaml(string) -> any", 1, 1, {S}, fn_parse_yaml, NULL},
    {"path_canonicalize",
     "path_canonicalize(string) -> string",
     1,
     1,
     {S},
     fn_path_canonicalize,
     NULL},
    {"pattern_match",
     "pattern_match(string, string|number) -> boolean",
     2,
     2,
     {S, S | N},
     fn_pattern_match,
     NULL},
    {"random", "random(string) -> string", 1, 1, {S}, fn_random, NULL},
    {"regex_match",
     "regex_match(string, string|number) -> boolean",
     2,
     2,
     {S, S | N},
     fn_regex_match,
     re_prepare},
    {"regex_replace_all",
     "regex_replace_all(string, string|number, string|number) -> string",
     3,
     3,
     {S, S | N, S | N},
     fn_regex_replace_all,
     re_prepare},
    {"regex_replace_all_literal",
     "regex_replace_all_literal(string, string|number, string|number) -> string",
     3,
     3,
     {S, S | N, S | N},
     fn_regex_replace_all_literal,
     re_prepare},
    {"replace",
     "replace(string, string, string, number) -> string",
     4,
     4,
     {S, S, S, N},
     fn_replace,
     NULL},
    {"replace_all",
     "replace_all(string, string, string) -> string",
     3,
     3,
     {S, S, S},
     fn_replace_all,
     NULL},
    {"round", "round(number, number) -> number", 2, 2, {N, N}, fn_round, NULL},
    {"semver_compare",
     "semver_compare(string, string) -> boolean",
     2,
     2,
     {S, S},
     fn_semver_compare,
     NULL},
    {"sha1", "sha1(string) -> string", 1, 1, {S}, fn_sha1, NULL},
    {"sha256", "sha256(string) -> string", 1, 1, {S}, fn_sha256, NULL},
    {"split", "split(string, string) -> array[string]", 2, 2, {S, S}, fn_split, NULL},
    {"subtract",
     "subtract(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     fn_subtract,
     NULL},
    {"sum",
     "sum(array[number]|array[quantity]|array[duration]) -> number|string",
     1,
     1,
     {T(ARRAY)},
     fn_sum,
     NULL},
    {"time_add", "time_add(string, string) -> string", 2, 2, {S, S}, fn_time_add, NULL},
    {"time_after", "time_after(string, string) -> boolean", 2, 2, {S, S}, fn_time_after, NULL},
    {"time_before", "time_before(string, string) -> boolean", 2, 2, {S, S}, fn_time_before, NULL},
    {"time_between",
     "time_between(string, string, string) -> boolean",
     3,
     3,
     {S, S, S},
     fn_time_between,
     NULL},
    {"time_diff", "time_diff(string, string) -> string", 2, 2, {S, S}, fn_time_diff, NULL},
    {"time_now", "time_now() -> string", 0, 0, {0}, fn_time_now, NULL},
    {"time_now_utc", "time_now_utc() -> string", 0, 0, {0}, fn_time_now_utc, NULL},
    {"time_parse", "time_parse(string, string) -> string", 2, 2, {S, S}, fn_time_parse, NULL},
    {"time_since",
     "time_since(string, string, string) -> string",
     3,
     3,
     {S, S, S},
     fn_time_since,
     NULL},
    {"time_to_cron", "time_to_cron(string) -> string", 1, 1, {S}, fn_time_to_cron, NULL},
    {"time_truncate",
     "time_truncate(string, string) -> string",
     2,
     2,
     {S, S},
     fn_time_truncate,
     NULL},
    {"time_utc", "time_utc(string) -> string", 1, 1, {S}, fn_time_utc, NULL},
    {"to_boolean", "to_boolean(string) -> boolean", 1, 1, {S}, fn_to_boolean, NULL},
    {"to_lower", "to_lower(string) -> string", 1, 1, {S}, fn_to_lower, NULL},
    {"to_upper", "to_upper(string) -> string", 1, 1, {S}, fn_to_upper, NULL},
    {"trim", "trim(string, string) -> string", 2, 2, {S, S}, fn_trim, NULL},
    {"trim_prefix", "trim_prefix(string, string) -> string", 2, 2, {S, S}, fn_trim_prefix, NULL},
    {"truncate", "truncate(string, number) -> string", 2, 2, {S, N}, fn_truncate, NULL},
    {"x509_decode", "x509_decode(string) -> object", 1, 1, {S}, fn_x509_decode, NULL},
};
#undef T
#undef S
#undef N

const size_t jp_kyverno_nfuncs = GV_ARRAY_LEN(jp_kyverno_funcs);
