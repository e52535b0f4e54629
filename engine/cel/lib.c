/*
 * lib.c - CEL's standard library and the extension libraries Kubernetes and
 * Kyverno enable (cel-semantics.md 1.7, 1.8): conversions, size, string
 * tests, regular expressions, timestamps and durations, the strings, lists,
 * sets, math, encoders and optional extensions.
 *
 * Regular expressions: CEL specifies RE2; gavel runs them with PCRE2 in UTF
 * mode with RE2's defaults where they differ (ASCII \d \w \s, `$` only at
 * the end of the text) and refuses the constructs RE2 does not have
 * (lookaround, backreferences, atomic groups, possessive quantifiers,
 * recursion, \C) with an error, so a pattern either means what it means in
 * RE2 or is rejected. PCRE2 backtracks where RE2 does not: a match limit
 * turns a catastrophic pattern into an error instead of a hang.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/banned.h"

#define FN(name)                                                                                   \
	static struct cel_value name(struct cel_eval *ev, const struct cel_node *n,                \
				     struct cel_value *a, int na)

static struct cel_value overload(struct cel_eval *ev, const struct cel_node *n,
				 const struct cel_value *a, int na)
{
	struct gv_buf b = {0};
	struct cel_value r;
	int i;

	for (i = 0; i < na; i++) {
		if (i)
			gv_buf_adds(&b, ", ");
		gv_buf_adds(&b, cel_type_name(&a[i]));
	}
	r = cel_err(ev, n->pos, "no such overload: %s(%s)", n->name, gv_buf_str(&b));
	gv_buf_release(&b);
	return r;
}

/* ---- UTF-8 ---- */

/* Decodes the code point at s[*i] (n bytes) and advances *i; invalid bytes read as U+FFFD. */
static uint32_t utf8_next(const char *s, size_t n, size_t *i)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = u[*i];
	size_t l, k;

	if (c < 0x80) {
		(*i)++;
		return c;
	}
	l = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
	if (!l || *i + l > n) {
		(*i)++;
		return 0xFFFD;
	}
	c &= (uint32_t)(0x7F >> l);
	for (k = 1; k < l; k++) {
		if ((u[*i + k] & 0xC0) != 0x80) {
			(*i)++;
			return 0xFFFD;
		}
		c = (c << 6) | (u[*i + k] & 0x3F);
	}
	*i += l;
	return c;
}

static size_t utf8_count(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			c++;
	return c;
}

/* Byte offset of code point index cp (clamped to n). */
static size_t utf8_offset(const char *s, size_t n, size_t cp)
{
	size_t i = 0;

	while (cp > 0 && i < n) {
		utf8_next(s, n, &i);
		cp--;
	}
	return i;
}

static bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		uint32_t c;
		size_t l, k;
		uint64_t w;

		if (i + 8 <= n) {
			/* eight ASCII bytes at a time */
			memcpy(&w, u + i, 8);
			if (!(w & 0x8080808080808080ULL)) {
				i += 8;
				continue;
			}
		}
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		l = (u[i] & 0xE0) == 0xC0   ? 2
		    : (u[i] & 0xF0) == 0xE0 ? 3
		    : (u[i] & 0xF8) == 0xF0 ? 4
					    : 0;
		if (!l || i + l > n)
			return false;
		c = u[i] & (0x7F >> l);
		for (k = 1; k < l; k++) {
			if ((u[i + k] & 0xC0) != 0x80)
				return false;
			c = (c << 6) | (u[i + k] & 0x3F);
		}
		if ((l == 2 && c < 0x80) || (l == 3 && c < 0x800) || (l == 4 && c < 0x10000) ||
		    c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			return false;
		i += l;
	}
	return true;
}

/* A string value built from a buffer (copied into the arena, cost charged). */
static struct cel_value buf_str(struct cel_eval *ev, struct gv_buf *b, bool bytes)
{
	char *s = cel_eval_strdup(ev, gv_buf_str(b), b->len);
	size_t len = b->len;

	gv_buf_release(b);
	return bytes ? cel_bytes(s, len) : cel_str(s, len);
}

/* ---- size and string tests ---- */

FN(f_size)
{
	switch (a[0].kind) {
	case CEL_STRING:
		cel_charge(ev, a[0].v.s.n / 16);
		return cel_int((int64_t)utf8_count(a[0].v.s.p, a[0].v.s.n));
	case CEL_BYTES:
		return cel_int((int64_t)a[0].v.s.n);
	case CEL_LIST:
		return cel_int((int64_t)cel_list_size(&a[0]));
	case CEL_MAP:
		return cel_int((int64_t)cel_map_size(&a[0]));
	default:
		return overload(ev, n, a, na);
	}
}

static const char *memmem_s(const char *h, size_t hn, const char *nd, size_t nn)
{
	if (!nn)
		return h;
	return memmem(h, hn, nd, nn);
}

FN(f_contains)
{
	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING)
		return overload(ev, n, a, na);
	cel_charge(ev, (a[0].v.s.n + a[1].v.s.n) / 16);
	return cel_bool(memmem_s(a[0].v.s.p, a[0].v.s.n, a[1].v.s.p, a[1].v.s.n) != NULL);
}

FN(f_starts)
{
	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING)
		return overload(ev, n, a, na);
	return cel_bool(a[1].v.s.n <= a[0].v.s.n &&
			memcmp(a[0].v.s.p, a[1].v.s.p, a[1].v.s.n) == 0);
}

FN(f_ends)
{
	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING)
		return overload(ev, n, a, na);
	return cel_bool(a[1].v.s.n <= a[0].v.s.n &&
			memcmp(a[0].v.s.p + a[0].v.s.n - a[1].v.s.n, a[1].v.s.p, a[1].v.s.n) == 0);
}

/* ---- regular expressions ---- */

#define RE_MATCH_LIMIT 1000000
#define RE_DEPTH_LIMIT 10000
/*
 * A match first runs with a tenth of the limit; one that backtracks past it
 * is charged for those steps (RE_STEPS_PER_COST per unit) and runs again with
 * the whole limit, charged likewise if it fails again: a pattern that
 * backtracks spends the budget, so a loop of matches ends in the cost error
 * within about RE_STEPS_PER_COST * limit steps.
 */
#define RE_FIRST_LIMIT	  (RE_MATCH_LIMIT / 10)
#define RE_STEPS_PER_COST 32

/* NULL when pattern uses a construct RE2 does not have; else the reason in *why. */
static bool re2_compatible(const char *p, size_t n, const char **why)
{
	size_t i;
	bool in_class = false;

	for (i = 0; i < n; i++) {
		char c = p[i];

		if (c == '\\' && i + 1 < n) {
			char e = p[i + 1];

			if (!in_class && ((e >= '1' && e <= '9') || e == 'g' || e == 'k')) {
				*why = "backreferences are not supported";
				return false;
			}
			if (e == 'C' || e == 'K' || e == 'R' || e == 'X') {
				*why = "this escape is not supported by RE2";
				return false;
			}
			i++;
			continue;
		}
		if (in_class) {
			if (c == ']')
				in_class = false;
			continue;
		}
		if (c == '[') {
			in_class = true;
			if (i + 1 < n && p[i + 1] == '^')
				i++;
			if (i + 1 < n && p[i + 1] == ']')
				i++;
			continue;
		}
		if (c == '(' && i + 1 < n && p[i + 1] == '?') {
			char e = i + 2 < n ? p[i + 2] : 0;

			if (e == '=' || e == '!' || e == '>' || e == '|' || e == 'R' ||
			    (e >= '0' && e <= '9') || e == '&' || e == '(' || e == '#' ||
			    (e == '<' && i + 3 < n && (p[i + 3] == '=' || p[i + 3] == '!'))) {
				*why =
				    "lookaround, atomic groups, conditionals and recursion are not "
				    "supported";
				return false;
			}
		}
		if ((c == '*' || c == '+' || c == '?' || c == '}') && i + 1 < n &&
		    p[i + 1] == '+') {
			*why = "possessive quantifiers are not supported";
			return false;
		}
	}
	return true;
}

void *cel_regex_compile(const char *pattern, size_t n, char *err, size_t errlen)
{
	const char *why;
	int ec;
	PCRE2_SIZE eo;
	pcre2_code *re;

	if (!re2_compatible(pattern, n, &why)) {
		snprintf(err, errlen, "invalid regex '%.*s': %s", (int)n, pattern, why);
		return NULL;
	}
	re =
	    pcre2_compile((PCRE2_SPTR)pattern, n, PCRE2_UTF | PCRE2_DOLLAR_ENDONLY, &ec, &eo, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];

		pcre2_get_error_message(ec, msg, sizeof(msg));
		snprintf(err, errlen, "invalid regex '%.*s': %s", (int)n, pattern,
			 (const char *)msg);
	}
	return re;
}

void cel_regex_free(void *re)
{
	pcre2_code_free(re);
}

/* Compiles a CEL (RE2) pattern; NULL and an error value in *err on failure. */
static pcre2_code *re_compile(struct cel_eval *ev, const struct cel_node *n,
			      const struct cel_value *pat, struct cel_value *err)
{
	char msg[512];
	pcre2_code *re = cel_regex_compile(pat->v.s.p, pat->v.s.n, msg, sizeof(msg));

	if (!re)
		*err = cel_err(ev, n->pos, "%s", msg);
	return re;
}

/* One match context with the limits, made once, read-only afterwards (shared by threads). */
static pcre2_match_context *re_mctx, *re_mctx_first;
static pthread_once_t re_once = PTHREAD_ONCE_INIT;

static void re_init(void)
{
	re_mctx = pcre2_match_context_create(NULL);
	re_mctx_first = pcre2_match_context_create(NULL);
	if (!re_mctx || !re_mctx_first)
		abort();
	pcre2_set_match_limit(re_mctx, RE_MATCH_LIMIT);
	pcre2_set_depth_limit(re_mctx, RE_DEPTH_LIMIT);
	pcre2_set_match_limit(re_mctx_first, RE_FIRST_LIMIT);
	pcre2_set_depth_limit(re_mctx_first, RE_DEPTH_LIMIT);
}

/* 1 match, 0 none, -1 error (in *err). Capture offsets in md when given. */
void cel_regex_md_free(void *md)
{
	pcre2_match_data_free(md);
}

/*
 * Callers have checked that s is valid UTF-8 (utf8_valid), so a match from
 * the start skips pcre2's own check. md NULL: whether it matches only (a
 * match data of one pair kept in the context).
 */
static int re_exec(struct cel_eval *ev, const struct cel_node *n, pcre2_code *re, const char *s,
		   size_t len, size_t start, pcre2_match_data *md, struct cel_value *err)
{
	uint32_t opts = start == 0 ? PCRE2_NO_UTF_CHECK : 0;
	int rc;

	pthread_once(&re_once, re_init);
	if (!md) {
		if (!ev->re_md)
			ev->re_md = pcre2_match_data_create(1, NULL);
		md = ev->re_md; /* NULL: pcre2_match fails, an error below */
	}
	cel_charge(ev, len / 16 + 1);
	rc = pcre2_match(re, (PCRE2_SPTR)s, len, start, opts, md, re_mctx_first);
	if (rc == PCRE2_ERROR_MATCHLIMIT && cel_charge(ev, RE_FIRST_LIMIT / RE_STEPS_PER_COST)) {
		rc = pcre2_match(re, (PCRE2_SPTR)s, len, start, opts, md, re_mctx);
		if (rc == PCRE2_ERROR_MATCHLIMIT)
			cel_charge(ev, RE_MATCH_LIMIT / RE_STEPS_PER_COST);
	}
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	*err = cel_err(ev, n->pos, "regex match failed (%s)",
		       rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT
			   ? "match limit exceeded"
			   : "invalid input");
	return -1;
}

FN(f_matches)
{
	struct cel_value err;
	pcre2_code *re;
	int rc;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING)
		return overload(ev, n, a, na);
	if (!utf8_valid(a[0].v.s.p, a[0].v.s.n))
		return cel_err(ev, n->pos, "matches(): invalid UTF-8 text");
	if (n->aux) {
		/* a literal pattern, compiled with the program */
		rc = re_exec(ev, n, n->aux, a[0].v.s.p, a[0].v.s.n, 0, NULL, &err);
		return rc < 0 ? err : cel_bool(rc == 1);
	}
	re = re_compile(ev, n, &a[1], &err);
	if (!re)
		return err;
	rc = re_exec(ev, n, re, a[0].v.s.p, a[0].v.s.n, 0, NULL, &err);
	pcre2_code_free(re);
	return rc < 0 ? err : cel_bool(rc == 1);
}

/*
 * Kubernetes regex library: s.find(re) (the first match, '' when none),
 * s.findAll(re[, n]) (up to n matches, all when n < 0).
 */
static struct cel_value find(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
			     int na, bool all)
{
	struct cel_value err, *items = NULL;
	pcre2_code *re;
	pcre2_match_data *md;
	size_t start = 0, k = 0, cap = 0;
	int64_t limit = -1;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING || (na == 3 && a[2].kind != CEL_INT))
		return overload(ev, n, a, na);
	if (na == 3)
		limit = a[2].v.i;
	if (!utf8_valid(a[0].v.s.p, a[0].v.s.n))
		return cel_err(ev, n->pos, "%s(): invalid UTF-8 text", n->name);
	re = n->aux ? n->aux : re_compile(ev, n, &a[1], &err);
	if (!re)
		return err;
	md = pcre2_match_data_create_from_pattern(re, NULL);
	for (;;) {
		PCRE2_SIZE *ov;
		int rc;

		if ((all && limit >= 0 && (int64_t)k >= limit) || start > a[0].v.s.n)
			break;
		rc = re_exec(ev, n, re, a[0].v.s.p, a[0].v.s.n, start, md, &err);
		if (rc < 0) {
			pcre2_match_data_free(md);
			if (!n->aux)
				pcre2_code_free(re);
			return err;
		}
		if (rc == 0)
			break;
		ov = pcre2_get_ovector_pointer(md);
		if (!all) {
			struct cel_value r = cel_str(a[0].v.s.p + ov[0], ov[1] - ov[0]);

			pcre2_match_data_free(md);
			if (!n->aux)
				pcre2_code_free(re);
			return r;
		}
		if (k == cap) {
			size_t nc = cap ? cap * 2 : 8;
			struct cel_value *nv = cel_eval_alloc(ev, sizeof(*nv) * nc);

			if (k)
				memcpy(nv, items, sizeof(*nv) * k);
			items = nv;
			cap = nc;
		}
		items[k++] = cel_str(a[0].v.s.p + ov[0], ov[1] - ov[0]);
		if (ov[1] == ov[0]) {
			/* an empty match: step over one code point */
			size_t j = ov[1];

			if (j >= a[0].v.s.n)
				break;
			utf8_next(a[0].v.s.p, a[0].v.s.n, &j);
			start = j;
		} else {
			start = ov[1];
		}
	}
	pcre2_match_data_free(md);
	if (!n->aux)
		pcre2_code_free(re);
	if (!all)
		return cel_str("", 0);
	return cel_list_new(ev, items, k);
}

FN(f_find)
{
	return find(ev, n, a, na, false);
}

FN(f_find_all)
{
	return find(ev, n, a, na, true);
}

/*
 * cel-go ext.Regex v1 (VPOL env): regex.replace(s, re, repl[, n]) (repl:
 * \0-\9 groups, \\ a backslash; n < 0 all, 0 none), regex.extract(s, re) ->
 * optional(string) and regex.extractAll(s, re) -> list(string): the capture
 * group when the pattern has one (a group that did not take part is no
 * result), else the whole match; more than one group is an error. Matches
 * follow Go's FindAll: an empty match right after the previous match is
 * skipped.
 */
struct re_iter {
	pcre2_code *re;
	pcre2_match_data *md;
	const char *s;
	size_t len, start;
	size_t prev_end; /* SIZE_MAX before the first match */
};

/* 1 and the next match in it->md, 0 no more, -1 error (in *err). */
static int re_next(struct cel_eval *ev, const struct cel_node *n, struct re_iter *it,
		   struct cel_value *err)
{
	for (;;) {
		PCRE2_SIZE *ov;
		int rc;

		if (it->start > it->len)
			return 0;
		rc = re_exec(ev, n, it->re, it->s, it->len, it->start, it->md, err);
		if (rc <= 0)
			return rc;
		ov = pcre2_get_ovector_pointer(it->md);
		if (ov[0] == ov[1]) {
			size_t j = ov[1];

			if (j >= it->len)
				it->start = it->len + 1;
			else {
				utf8_next(it->s, it->len, &j);
				it->start = j;
			}
			if (ov[0] == it->prev_end)
				continue;
		} else {
			it->start = ov[1];
		}
		it->prev_end = ov[1];
		return 1;
	}
}

static uint32_t re_groups(pcre2_code *re)
{
	uint32_t c = 0;

	pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &c);
	return c;
}

static struct cel_value regex_ext(struct cel_eval *ev, const struct cel_node *n,
				  struct cel_value *a, int na, int mode)
{
	struct cel_value err, *items = NULL, r;
	struct re_iter it = {0};
	struct gv_buf b = {0};
	size_t k = 0, cap = 0, last = 0;
	int64_t limit = -1, done = 0;
	uint32_t groups;
	int rc;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING ||
	    (mode == 0 && a[2].kind != CEL_STRING) || (na == 4 && a[3].kind != CEL_INT))
		return overload(ev, n, a, na);
	if (na == 4)
		limit = a[3].v.i;
	if (mode == 0 && limit == 0)
		return a[0];
	if (!utf8_valid(a[0].v.s.p, a[0].v.s.n))
		return cel_err(ev, n->pos, "%s(): invalid UTF-8 text", n->name);
	it.re = n->aux ? n->aux : re_compile(ev, n, &a[1], &err);
	if (!it.re)
		return err;
	groups = re_groups(it.re);
	if (mode != 0 && groups > 1) {
		r = cel_err(ev, n->pos,
			    "regular expression has more than one capturing group: \"%.*s\"",
			    (int)a[1].v.s.n, a[1].v.s.p);
		goto out;
	}
	it.md = pcre2_match_data_create_from_pattern(it.re, NULL);
	it.s = a[0].v.s.p;
	it.len = a[0].v.s.n;
	it.prev_end = SIZE_MAX;
	while ((limit < 0 || done < limit) && (rc = re_next(ev, n, &it, &err)) != 0) {
		PCRE2_SIZE *ov;
		struct cel_value item;

		if (rc < 0) {
			r = err;
			goto out;
		}
		ov = pcre2_get_ovector_pointer(it.md);
		done++;
		if (mode == 0) {
			const char *rp = a[2].v.s.p;
			size_t rn = a[2].v.s.n, i;

			gv_buf_add(&b, it.s + last, ov[0] - last);
			for (i = 0; i < rn; i++) {
				unsigned g;

				if (rp[i] != '\\') {
					gv_buf_addc(&b, rp[i]);
					continue;
				}
				if (++i >= rn) {
					r = cel_err(
					    ev, n->pos,
					    "invalid replacement string: '%.*s' \\ not allowed "
					    "at end",
					    (int)rn, rp);
					goto out;
				}
				if (rp[i] == '\\') {
					gv_buf_addc(&b, '\\');
					continue;
				}
				if (rp[i] < '0' || rp[i] > '9') {
					r = cel_err(ev, n->pos,
						    "invalid replacement string: '%.*s' \\ must be "
						    "followed by a digit or \\",
						    (int)rn, rp);
					goto out;
				}
				g = (unsigned)(rp[i] - '0');
				if (g > groups) {
					r = cel_err(
					    ev, n->pos,
					    "replacement string references group %u but regex "
					    "has only %u group(s)",
					    g, groups);
					goto out;
				}
				if (ov[2 * g] != PCRE2_UNSET)
					gv_buf_add(&b, it.s + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
			}
			last = ov[1];
			continue;
		}
		if (groups == 1 && ov[2] == PCRE2_UNSET) {
			if (mode == 1)
				break;
			continue;
		}
		item = groups == 1 ? cel_str(it.s + ov[2], ov[3] - ov[2])
				   : cel_str(it.s + ov[0], ov[1] - ov[0]);
		if (mode == 1) {
			r = cel_opt(ev, &item);
			goto out;
		}
		if (k == cap) {
			size_t nc = cap ? cap * 2 : 8;
			struct cel_value *nv = cel_eval_alloc(ev, sizeof(*nv) * nc);

			if (k)
				memcpy(nv, items, sizeof(*nv) * k);
			items = nv;
			cap = nc;
		}
		items[k++] = item;
	}
	if (mode == 0) {
		gv_buf_add(&b, it.s + last, it.len - last);
		r = buf_str(ev, &b, false);
	} else if (mode == 1) {
		r = cel_opt(ev, NULL);
	} else {
		r = cel_list_new(ev, items, k);
	}
out:
	gv_buf_release(&b);
	pcre2_match_data_free(it.md);
	if (!n->aux)
		pcre2_code_free(it.re);
	return r;
}

FN(f_regex_replace)
{
	return regex_ext(ev, n, a, na, 0);
}

FN(f_regex_extract)
{
	return regex_ext(ev, n, a, na, 1);
}

FN(f_regex_extract_all)
{
	return regex_ext(ev, n, a, na, 2);
}

/* ---- conversions ---- */

static bool parse_int64(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	uint64_t v = 0;

	if (i < n && (s[i] == '-' || s[i] == '+')) {
		neg = s[i] == '-';
		i++;
	}
	if (i == n)
		return false;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

static bool parse_uint64(const char *s, size_t n, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;

	if (i < n && s[i] == '+')
		i++;
	if (i == n)
		return false;
	for (; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return false;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static struct cel_value conv_err(struct cel_eval *ev, const struct cel_node *n,
				 const struct cel_value *a, const char *to)
{
	return cel_err(ev, n->pos, "type conversion error from '%s' to '%s'", cel_type_name(a), to);
}

FN(f_int)
{
	int64_t i;

	switch (a[0].kind) {
	case CEL_INT:
		return a[0];
	case CEL_UINT:
		if (a[0].v.u > (uint64_t)INT64_MAX)
			return cel_err(ev, n->pos, "integer overflow");
		return cel_int((int64_t)a[0].v.u);
	case CEL_DOUBLE:
		if (!(a[0].v.d > -9223372036854775808.0 - 1025.0 &&
		      a[0].v.d < 9223372036854775808.0) ||
		    a[0].v.d <= -9223372036854775808.0 - 1.0)
			return cel_err(ev, n->pos, "integer overflow");
		if (a[0].v.d <= -9223372036854775808.0)
			return cel_err(ev, n->pos, "integer overflow");
		return cel_int((int64_t)a[0].v.d);
	case CEL_STRING:
		if (!parse_int64(a[0].v.s.p, a[0].v.s.n, &i))
			return conv_err(ev, n, &a[0], "int");
		return cel_int(i);
	case CEL_TIMESTAMP:
		return cel_int(a[0].v.ts.sec);
	case CEL_DURATION:
		return cel_int(a[0].v.dur);
	default:
		return overload(ev, n, a, na);
	}
}

FN(f_uint)
{
	uint64_t u;

	switch (a[0].kind) {
	case CEL_UINT:
		return a[0];
	case CEL_INT:
		if (a[0].v.i < 0)
			return cel_err(ev, n->pos, "unsigned integer overflow");
		return cel_uint((uint64_t)a[0].v.i);
	case CEL_DOUBLE:
		if (!(a[0].v.d > -1.0 && a[0].v.d < 18446744073709551616.0))
			return cel_err(ev, n->pos, "unsigned integer overflow");
		return cel_uint((uint64_t)a[0].v.d);
	case CEL_STRING:
		if (!parse_uint64(a[0].v.s.p, a[0].v.s.n, &u))
			return conv_err(ev, n, &a[0], "uint");
		return cel_uint(u);
	default:
		return overload(ev, n, a, na);
	}
}

/* Go's strconv.ParseFloat(s, 64) syntax (decimal; inf, infinity, nan in any case). */
static bool parse_double(const char *s, size_t n, double *out)
{
	char tmp[512], *end;
	size_t i = 0;
	const char *t;

	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	t = tmp;
	if (*t == '+' || *t == '-')
		t++;
	if (strcasecmp(t, "inf") == 0 || strcasecmp(t, "infinity") == 0) {
		*out = tmp[0] == '-' ? -INFINITY : INFINITY;
		return true;
	}
	if (strcasecmp(t, "nan") == 0) {
		if (t != tmp)
			return false;
		*out = NAN;
		return true;
	}
	for (i = 0; i < n; i++) {
		char c = tmp[i];

		if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' ||
		      c == '-' || c == '_'))
			return false;
	}
	*out = strtod(tmp, &end);
	return *end == 0 && end != tmp;
}

FN(f_double)
{
	double d;

	switch (a[0].kind) {
	case CEL_DOUBLE:
		return a[0];
	case CEL_INT:
		return cel_double((double)a[0].v.i);
	case CEL_UINT:
		return cel_double((double)a[0].v.u);
	case CEL_STRING:
		if (!parse_double(a[0].v.s.p, a[0].v.s.n, &d))
			return conv_err(ev, n, &a[0], "double");
		return cel_double(d);
	default:
		return overload(ev, n, a, na);
	}
}

/* Go's strconv.FormatFloat(d, 'g', -1, 64): shortest digits, %e past exponent 21. */
static void format_double(double d, struct gv_buf *out)
{
	char buf[64], digs[32];
	int prec, exp, nd = 0, k;
	char *e;

	if (isnan(d)) {
		gv_buf_adds(out, "NaN");
		return;
	}
	if (isinf(d)) {
		gv_buf_adds(out, d > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (d == 0) {
		gv_buf_adds(out, signbit(d) ? "-0" : "0");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* buf = [-]D.DDDDe[+-]XX */
	e = strchr(buf, 'e');
	exp = (int)strtol(e + 1, NULL, 10);
	for (k = 0; buf + k < e; k++)
		if (buf[k] >= '0' && buf[k] <= '9')
			digs[nd++] = buf[k];
	while (nd > 1 && digs[nd - 1] == '0')
		nd--;
	if (d < 0)
		gv_buf_addc(out, '-');
	if (exp < -4 || exp >= 21) {
		gv_buf_addc(out, digs[0]);
		if (nd > 1) {
			gv_buf_addc(out, '.');
			gv_buf_add(out, digs + 1, (size_t)nd - 1);
		}
		gv_buf_addf(out, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		return;
	}
	if (exp < 0) {
		gv_buf_adds(out, "0.");
		for (k = -1; k > exp; k--)
			gv_buf_addc(out, '0');
		gv_buf_add(out, digs, (size_t)nd);
		return;
	}
	for (k = 0; k <= exp; k++)
		gv_buf_addc(out, k < nd ? digs[k] : '0');
	if (nd > exp + 1) {
		gv_buf_addc(out, '.');
		gv_buf_add(out, digs + exp + 1, (size_t)(nd - exp - 1));
	}
}

FN(f_string)
{
	struct gv_buf b = {0};

	switch (a[0].kind) {
	case CEL_STRING:
		return a[0];
	case CEL_INT:
		gv_buf_addf(&b, "%lld", (long long)a[0].v.i);
		break;
	case CEL_UINT:
		gv_buf_addf(&b, "%llu", (unsigned long long)a[0].v.u);
		break;
	case CEL_DOUBLE:
		format_double(a[0].v.d, &b);
		break;
	case CEL_BOOL:
		gv_buf_adds(&b, a[0].v.b ? "true" : "false");
		break;
	case CEL_BYTES:
		if (!utf8_valid(a[0].v.s.p, a[0].v.s.n))
			return conv_err(ev, n, &a[0], "string");
		return cel_str(a[0].v.s.p, a[0].v.s.n);
	case CEL_TIMESTAMP:
		cel_format_timestamp(a[0].v.ts.sec, a[0].v.ts.nsec, &b);
		break;
	case CEL_DURATION:
		cel_format_duration(a[0].v.dur, &b);
		break;
	case CEL_OPAQUE:
		if (!a[0].v.obj.type->stringable)
			return overload(ev, n, a, na);
		a[0].v.obj.type->text(a[0].v.obj.data, &b);
		break;
	default:
		return overload(ev, n, a, na);
	}
	return buf_str(ev, &b, false);
}

FN(f_bytes)
{
	if (a[0].kind == CEL_BYTES)
		return a[0];
	if (a[0].kind == CEL_STRING)
		return cel_bytes(a[0].v.s.p, a[0].v.s.n);
	return overload(ev, n, a, na);
}

FN(f_bool)
{
	static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
	size_t i;

	if (a[0].kind == CEL_BOOL)
		return a[0];
	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	for (i = 0; i < GV_ARRAY_LEN(t); i++) {
		if (a[0].v.s.n == strlen(t[i]) && memcmp(a[0].v.s.p, t[i], a[0].v.s.n) == 0)
			return cel_bool(true);
		if (a[0].v.s.n == strlen(f[i]) && memcmp(a[0].v.s.p, f[i], a[0].v.s.n) == 0)
			return cel_bool(false);
	}
	return conv_err(ev, n, &a[0], "bool");
}

FN(f_dyn)
{
	return a[0];
}

FN(f_type)
{
	return cel_type(cel_type_name(&a[0]));
}

FN(f_duration)
{
	struct cel_value r = {.kind = CEL_DURATION};

	if (a[0].kind == CEL_DURATION)
		return a[0];
	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	if (!cel_parse_duration(a[0].v.s.p, a[0].v.s.n, &r.v.dur))
		return cel_err(ev, n->pos, "invalid duration '%.*s'", (int)a[0].v.s.n, a[0].v.s.p);
	return r;
}

FN(f_timestamp)
{
	struct cel_value r = {.kind = CEL_TIMESTAMP};

	if (a[0].kind == CEL_TIMESTAMP)
		return a[0];
	if (a[0].kind == CEL_INT) {
		if (a[0].v.i < CEL_TS_MIN || a[0].v.i > CEL_TS_MAX)
			return cel_err(ev, n->pos, "timestamp out of range");
		r.v.ts.sec = a[0].v.i;
		return r;
	}
	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	if (!cel_parse_timestamp(a[0].v.s.p, a[0].v.s.n, &r.v.ts.sec, &r.v.ts.nsec))
		return cel_err(ev, n->pos, "invalid timestamp '%.*s'", (int)a[0].v.s.n, a[0].v.s.p);
	return r;
}

/* ---- timestamp and duration accessors ---- */

enum tpart { TP_YEAR, TP_MONTH, TP_DOY, TP_DOM, TP_DATE, TP_DOW, TP_H, TP_M, TP_S, TP_MS };

/* Offset in seconds of a time zone argument: "UTC", "+05:30", "-02:30", "02:00". */
static bool tz_offset(const struct cel_value *z, int64_t *off)
{
	const char *s = z->v.s.p;
	size_t n = z->v.s.n, i = 0;
	int sign = 1, h = 0, m = 0;

	if ((n == 3 && memcmp(s, "UTC", 3) == 0) || (n == 1 && s[0] == 'Z')) {
		*off = 0;
		return true;
	}
	if (n && (s[0] == '+' || s[0] == '-')) {
		sign = s[0] == '-' ? -1 : 1;
		i = 1;
	}
	if (n - i != 5 || s[i + 2] != ':')
		return false;
	if (s[i] < '0' || s[i] > '9' || s[i + 1] < '0' || s[i + 1] > '9' || s[i + 3] < '0' ||
	    s[i + 3] > '9' || s[i + 4] < '0' || s[i + 4] > '9')
		return false;
	h = (s[i] - '0') * 10 + (s[i + 1] - '0');
	m = (s[i + 3] - '0') * 10 + (s[i + 4] - '0');
	*off = sign * (h * 3600 + m * 60);
	return true;
}

static struct cel_value time_part(struct cel_eval *ev, const struct cel_node *n,
				  struct cel_value *a, int na, enum tpart p)
{
	int64_t sec, off = 0, y;
	int mo, d, yd, wd;

	if (a[0].kind == CEL_DURATION && na == 1) {
		int64_t ns = a[0].v.dur;

		switch (p) {
		case TP_H:
			return cel_int(ns / 3600000000000LL);
		case TP_M:
			return cel_int(ns / 60000000000LL);
		case TP_S:
			return cel_int(ns / 1000000000LL);
		case TP_MS:
			/* the milliseconds component, not the total (cel-go) */
			return cel_int(ns % 1000000000LL / 1000000LL);
		default:
			return overload(ev, n, a, na);
		}
	}
	if (a[0].kind != CEL_TIMESTAMP || (na == 2 && a[1].kind != CEL_STRING))
		return overload(ev, n, a, na);
	if (na == 2 && !tz_offset(&a[1], &off) &&
	    !cel_tz_lookup(a[1].v.s.p, a[1].v.s.n, a[0].v.ts.sec, &off))
		return cel_err(ev, n->pos, "unknown time zone '%.*s'", (int)a[1].v.s.n, a[1].v.s.p);
	sec = a[0].v.ts.sec + off;
	cel_civil(sec, &y, &mo, &d, &yd, &wd);
	switch (p) {
	case TP_YEAR:
		return cel_int(y);
	case TP_MONTH:
		return cel_int(mo - 1);
	case TP_DOY:
		return cel_int(yd);
	case TP_DOM:
		return cel_int(d - 1);
	case TP_DATE:
		return cel_int(d);
	case TP_DOW:
		return cel_int(wd);
	case TP_H:
		return cel_int(((sec % 86400) + 86400) % 86400 / 3600);
	case TP_M:
		return cel_int(((sec % 3600) + 3600) % 3600 / 60);
	case TP_S:
		return cel_int(((sec % 60) + 60) % 60);
	default:
		return cel_int(a[0].v.ts.nsec / 1000000);
	}
}

#define TIMEFN(fname, part)                                                                        \
	FN(fname)                                                                                  \
	{                                                                                          \
		return time_part(ev, n, a, na, part);                                              \
	}
TIMEFN(f_year, TP_YEAR)
TIMEFN(f_month, TP_MONTH)
TIMEFN(f_doy, TP_DOY)
TIMEFN(f_dom, TP_DOM)
TIMEFN(f_date, TP_DATE)
TIMEFN(f_dow, TP_DOW)
TIMEFN(f_hours, TP_H)
TIMEFN(f_minutes, TP_M)
TIMEFN(f_seconds, TP_S)
TIMEFN(f_millis, TP_MS)

/* ---- strings extension (cel-go ext.Strings, version 2) ---- */

FN(f_char_at)
{
	size_t cnt, off, end;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_INT)
		return overload(ev, n, a, na);
	cnt = utf8_count(a[0].v.s.p, a[0].v.s.n);
	if (a[1].v.i < 0 || (uint64_t)a[1].v.i > cnt)
		return cel_err(ev, n->pos, "index out of range: %lld", (long long)a[1].v.i);
	off = utf8_offset(a[0].v.s.p, a[0].v.s.n, (size_t)a[1].v.i);
	end = off;
	if (end < a[0].v.s.n)
		utf8_next(a[0].v.s.p, a[0].v.s.n, &end);
	return cel_str(a[0].v.s.p + off, end - off);
}

/* Code point index of the first (or last) occurrence of t in s at or after (before) from. */
static struct cel_value index_of(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
				 int na, bool last)
{
	const char *s = a[0].v.s.p, *t = a[1].v.s.p;
	size_t sn = a[0].v.s.n, tn = a[1].v.s.n, cnt = utf8_count(s, sn), tcnt;
	int64_t from, i;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING || (na == 3 && a[2].kind != CEL_INT))
		return overload(ev, n, a, na);
	tcnt = utf8_count(t, tn);
	from = na == 3 ? a[2].v.i : last ? (int64_t)cnt : 0;
	if (from < 0 || (uint64_t)from > cnt)
		return cel_err(ev, n->pos, "index out of range: %lld", (long long)from);
	if (!cel_charge(ev, sn / 8 + 1))
		return cel_null();
	if (tcnt > cnt)
		return cel_int(-1);
	if (!last) {
		size_t off = utf8_offset(s, sn, (size_t)from);

		for (i = from; (uint64_t)i + tcnt <= cnt; i++) {
			if (sn - off >= tn && memcmp(s + off, t, tn) == 0)
				return cel_int(i);
			if (off < sn)
				utf8_next(s, sn, &off);
		}
		return cel_int(-1);
	}
	{
		/* the last start at or before from: walk forward once, remember the last hit */
		int64_t start = (uint64_t)from + tcnt > cnt ? (int64_t)(cnt - tcnt) : from,
			hit = -1;
		size_t off = 0;

		for (i = 0; i <= start; i++) {
			if (sn - off >= tn && memcmp(s + off, t, tn) == 0)
				hit = i;
			if (off < sn)
				utf8_next(s, sn, &off);
		}
		return cel_int(hit);
	}
}

FN(f_index_of)
{
	if (a[0].kind == CEL_LIST && na == 2) {
		size_t i, cnt = cel_list_size(&a[0]);

		for (i = 0; i < cnt; i++) {
			struct cel_value e = cel_list_get(&a[0], i),
					 r = cel_equals(ev, &e, &a[1], n->pos);

			if (r.kind == CEL_BOOL && r.v.b)
				return cel_int((int64_t)i);
		}
		return cel_int(-1);
	}
	return index_of(ev, n, a, na, false);
}

FN(f_last_index_of)
{
	if (a[0].kind == CEL_LIST && na == 2) {
		size_t i, cnt = cel_list_size(&a[0]);

		for (i = cnt; i > 0; i--) {
			struct cel_value e = cel_list_get(&a[0], i - 1),
					 r = cel_equals(ev, &e, &a[1], n->pos);

			if (r.kind == CEL_BOOL && r.v.b)
				return cel_int((int64_t)i - 1);
		}
		return cel_int(-1);
	}
	return index_of(ev, n, a, na, true);
}

static struct cel_value case_ascii(struct cel_eval *ev, const struct cel_node *n,
				   struct cel_value *a, int na, bool upper)
{
	char *s;
	size_t i;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	s = cel_eval_strdup(ev, a[0].v.s.p, a[0].v.s.n);
	for (i = 0; i < a[0].v.s.n; i++) {
		if (upper && s[i] >= 'a' && s[i] <= 'z')
			s[i] = (char)(s[i] - 32);
		else if (!upper && s[i] >= 'A' && s[i] <= 'Z')
			s[i] = (char)(s[i] + 32);
	}
	return cel_str(s, a[0].v.s.n);
}

FN(f_lower)
{
	return case_ascii(ev, n, a, na, false);
}

FN(f_upper)
{
	return case_ascii(ev, n, a, na, true);
}

FN(f_replace)
{
	struct gv_buf b = {0};
	const char *s = a[0].v.s.p, *old = a[1].v.s.p;
	size_t sn = a[0].v.s.n, on = a[1].v.s.n, i = 0;
	int64_t limit = -1, done = 0;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING || a[2].kind != CEL_STRING ||
	    (na == 4 && a[3].kind != CEL_INT))
		return overload(ev, n, a, na);
	if (na == 4)
		limit = a[3].v.i;
	if (limit == 0)
		return a[0];
	while (i <= sn) {
		if (!cel_charge(ev, 1)) {
			gv_buf_release(&b);
			return cel_null();
		}
		if (limit >= 0 && done >= limit) {
			gv_buf_add(&b, s + i, sn - i);
			break;
		}
		if (on == 0) {
			/* Go: the replacement before every code point and at the end */
			size_t j = i;

			gv_buf_add(&b, a[2].v.s.p, a[2].v.s.n);
			cel_charge(ev, a[2].v.s.n / 16);
			done++;
			if (i == sn)
				break;
			utf8_next(s, sn, &j);
			gv_buf_add(&b, s + i, j - i);
			i = j;
			continue;
		}
		{
			const char *hit = memmem(s + i, sn - i, old, on);

			if (!hit) {
				gv_buf_add(&b, s + i, sn - i);
				break;
			}
			gv_buf_add(&b, s + i, (size_t)(hit - (s + i)));
			gv_buf_add(&b, a[2].v.s.p, a[2].v.s.n);
			cel_charge(ev, a[2].v.s.n / 16);
			done++;
			i = (size_t)(hit - s) + on;
		}
		if (b.len > 64u << 20) {
			gv_buf_release(&b);
			return cel_err(ev, n->pos, "replace(): result larger than 64 MiB");
		}
	}
	return buf_str(ev, &b, false);
}

FN(f_split)
{
	struct cel_value *items;
	const char *s = a[0].v.s.p, *sep = a[1].v.s.p;
	size_t sn = a[0].v.s.n, pn = a[1].v.s.n, i = 0, k = 0, cap;
	int64_t limit = -1;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING || (na == 3 && a[2].kind != CEL_INT))
		return overload(ev, n, a, na);
	if (na == 3)
		limit = a[2].v.i;
	if (limit == 0)
		return cel_list_new(ev, NULL, 0);
	cap = sn + 2;
	if (!cel_charge(ev, cap / 4))
		return cel_null();
	items = cel_eval_alloc(ev, sizeof(*items) * cap);
	if (pn == 0) {
		while (i < sn) {
			size_t j = i;

			if (limit > 0 && (int64_t)k == limit - 1) {
				items[k++] = cel_str(s + i, sn - i);
				i = sn;
				break;
			}
			utf8_next(s, sn, &j);
			items[k++] = cel_str(s + i, j - i);
			i = j;
		}
		return cel_list_new(ev, items, k);
	}
	for (;;) {
		const char *hit;

		if (limit > 0 && (int64_t)k == limit - 1) {
			items[k++] = cel_str(s + i, sn - i);
			break;
		}
		hit = memmem(s + i, sn - i, sep, pn);
		if (!hit) {
			items[k++] = cel_str(s + i, sn - i);
			break;
		}
		items[k++] = cel_str(s + i, (size_t)(hit - (s + i)));
		i = (size_t)(hit - s) + pn;
	}
	return cel_list_new(ev, items, k);
}

FN(f_substring)
{
	size_t cnt, b, e;
	int64_t from, to;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_INT || (na == 3 && a[2].kind != CEL_INT))
		return overload(ev, n, a, na);
	cnt = utf8_count(a[0].v.s.p, a[0].v.s.n);
	from = a[1].v.i;
	to = na == 3 ? a[2].v.i : (int64_t)cnt;
	if (from < 0 || (uint64_t)from > cnt)
		return cel_err(ev, n->pos, "index out of range: %lld", (long long)from);
	if (to < 0 || (uint64_t)to > cnt)
		return cel_err(ev, n->pos, "index out of range: %lld", (long long)to);
	if (to < from)
		return cel_err(ev, n->pos, "invalid substring range. start: %lld, end: %lld",
			       (long long)from, (long long)to);
	b = utf8_offset(a[0].v.s.p, a[0].v.s.n, (size_t)from);
	e = utf8_offset(a[0].v.s.p, a[0].v.s.n, (size_t)to);
	return cel_str(a[0].v.s.p + b, e - b);
}

/* Unicode White_Space (Go's unicode.IsSpace). */
static bool is_uspace(uint32_t c)
{
	return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
	       c == 0x205F || c == 0x3000;
}

FN(f_trim)
{
	const char *s = a[0].v.s.p;
	size_t sn = a[0].v.s.n, b = 0, e = sn;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	while (b < sn) {
		size_t j = b;

		if (!is_uspace(utf8_next(s, sn, &j)))
			break;
		b = j;
	}
	while (e > b) {
		size_t st = e - 1, j;

		while (st > b && ((unsigned char)s[st] & 0xC0) == 0x80)
			st--;
		j = st;
		if (!is_uspace(utf8_next(s, sn, &j)))
			break;
		e = st;
	}
	return cel_str(s + b, e - b);
}

FN(f_join)
{
	struct gv_buf b = {0};
	size_t i, cnt;

	if (a[0].kind != CEL_LIST || (na == 2 && a[1].kind != CEL_STRING))
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(&a[0], i);

		if (e.kind != CEL_STRING) {
			gv_buf_release(&b);
			return cel_err(ev, n->pos, "join: list element %zu is a %s, not a string",
				       i, cel_type_name(&e));
		}
		if (i && na == 2)
			gv_buf_add(&b, a[1].v.s.p, a[1].v.s.n);
		gv_buf_add(&b, e.v.s.p, e.v.s.n);
	}
	return buf_str(ev, &b, false);
}

static void quote_into(const char *s, size_t n, struct gv_buf *b)
{
	size_t i = 0;

	gv_buf_addc(b, '"');
	while (i < n) {
		size_t st = i;
		uint32_t c;

		c = utf8_next(s, n, &i);
		switch (c) {
		case '\a':
			gv_buf_adds(b, "\\a");
			break;
		case '\b':
			gv_buf_adds(b, "\\b");
			break;
		case '\f':
			gv_buf_adds(b, "\\f");
			break;
		case '\n':
			gv_buf_adds(b, "\\n");
			break;
		case '\r':
			gv_buf_adds(b, "\\r");
			break;
		case '\t':
			gv_buf_adds(b, "\\t");
			break;
		case '\v':
			gv_buf_adds(b, "\\v");
			break;
		case '\\':
			gv_buf_adds(b, "\\\\");
			break;
		case '"':
			gv_buf_adds(b, "\\\"");
			break;
		default:
			if (c == 0xFFFD && !(i - st == 3))
				gv_buf_adds(b, "\xef\xbf\xbd");
			else
				gv_buf_add(b, s + st, i - st);
			break;
		}
	}
	gv_buf_addc(b, '"');
}

FN(f_quote)
{
	struct gv_buf b = {0};

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	quote_into(a[0].v.s.p, a[0].v.s.n, &b);
	return buf_str(ev, &b, false);
}

/* ---- string.format (ext.Strings) ---- */

/* A double as %s and %d print it: Go's shortest form, Infinity, -Infinity, NaN. */
static void format_double_s(double d, struct gv_buf *b)
{
	if (isinf(d))
		gv_buf_adds(b, d > 0 ? "Infinity" : "-Infinity");
	else
		format_double(d, b);
}

/* %s of any value (cel-go ext/formatting.go): nested values print the same way. */
/* Longest text of one %s argument: past it, the cost of the string built exceeds any budget. */
#define FORMAT_MAX_TEXT ((size_t)16 << 20)

static void format_value_s(const struct cel_value *v, struct gv_buf *b)
{
	size_t i, cnt;

	if (b->len > FORMAT_MAX_TEXT)
		return; /* values sharing their parts: exponential text */
	switch (v->kind) {
	case CEL_STRING:
	case CEL_BYTES:
		gv_buf_add(b, v->v.s.p, v->v.s.n);
		break;
	case CEL_INT:
		gv_buf_addf(b, "%lld", (long long)v->v.i);
		break;
	case CEL_UINT:
		gv_buf_addf(b, "%llu", (unsigned long long)v->v.u);
		break;
	case CEL_BOOL:
		gv_buf_adds(b, v->v.b ? "true" : "false");
		break;
	case CEL_DOUBLE:
		format_double_s(v->v.d, b);
		break;
	case CEL_LIST:
		gv_buf_addc(b, '[');
		cnt = cel_list_size(v);
		for (i = 0; i < cnt; i++) {
			struct cel_value e = cel_list_get(v, i);

			if (i)
				gv_buf_adds(b, ", ");
			format_value_s(&e, b);
		}
		gv_buf_addc(b, ']');
		break;
	case CEL_MAP: {
		/* entries sorted by their text, as cel-go sorts them */
		struct gv_buf *parts;
		size_t k;

		cnt = cel_map_size(v);
		parts = gv_xcalloc(cnt + 1, sizeof(*parts));
		for (i = 0; i < cnt; i++) {
			struct cel_value key, val;

			cel_map_entry(v, i, &key, &val);
			format_value_s(&key, &parts[i]);
			gv_buf_adds(&parts[i], ": ");
			format_value_s(&val, &parts[i]);
		}
		for (i = 1; i < cnt; i++) {
			for (k = i;
			     k > 0 && strcmp(gv_buf_str(&parts[k - 1]), gv_buf_str(&parts[k])) > 0;
			     k--) {
				struct gv_buf t = parts[k];

				parts[k] = parts[k - 1];
				parts[k - 1] = t;
			}
		}
		gv_buf_addc(b, '{');
		for (i = 0; i < cnt; i++) {
			if (i)
				gv_buf_adds(b, ", ");
			gv_buf_adds(b, gv_buf_str(&parts[i]));
			gv_buf_release(&parts[i]);
		}
		free(parts);
		gv_buf_addc(b, '}');
		break;
	}
	case CEL_TYPE:
		gv_buf_adds(b, v->v.type);
		break;
	case CEL_NULL:
		gv_buf_adds(b, "null");
		break;
	case CEL_TIMESTAMP:
		cel_format_timestamp(v->v.ts.sec, v->v.ts.nsec, b);
		break;
	case CEL_DURATION:
		cel_format_duration(v->v.dur, b);
		break;
	default:
		cel_value_format(v, b);
		break;
	}
}

static bool format_arg(struct cel_eval *ev, const struct cel_value *v, char verb, int prec,
		       struct gv_buf *b, const char **err)
{
	size_t i;

	switch (verb) {
	case 's':
		if (v->kind == CEL_OPTIONAL) {
			*err = "string clause can only be used on strings, bools, bytes, ints, "
			       "doubles, "
			       "maps, lists, types, durations, and timestamps";
			return false;
		}
		format_value_s(v, b);
		return true;
	case 'd':
		if (v->kind == CEL_INT)
			gv_buf_addf(b, "%lld", (long long)v->v.i);
		else if (v->kind == CEL_UINT)
			gv_buf_addf(b, "%llu", (unsigned long long)v->v.u);
		else if (v->kind == CEL_DOUBLE && (isnan(v->v.d) || isinf(v->v.d)))
			format_double_s(v->v.d, b);
		else {
			*err = "decimal clause can only be used on integers";
			return false;
		}
		return true;
	case 'f':
	case 'e':
		if (v->kind != CEL_DOUBLE && v->kind != CEL_INT && v->kind != CEL_UINT) {
			*err = verb == 'f' ? "fixed-point clause can only be used on doubles"
					   : "scientific clause can only be used on doubles";
			return false;
		}
		{
			double d = v->kind == CEL_DOUBLE ? v->v.d
				   : v->kind == CEL_INT	 ? (double)v->v.i
							 : (double)v->v.u;

			if (isnan(d)) {
				gv_buf_adds(b, "NaN");
				return true;
			}
			if (isinf(d)) {
				gv_buf_adds(b, d > 0 ? "Infinity" : "-Infinity");
				return true;
			}
			if (verb == 'f')
				gv_buf_addf(b, "%.*f", prec < 0 ? 6 : prec, d);
			else
				gv_buf_addf(b, "%.*e", prec < 0 ? 6 : prec, d);
		}
		return true;
	case 'b':
		if (v->kind == CEL_INT || v->kind == CEL_UINT) {
			uint64_t u = v->kind == CEL_UINT ? v->v.u
				     : v->v.i < 0	 ? (uint64_t)0 - (uint64_t)v->v.i
							 : (uint64_t)v->v.i;
			char bits[65];
			int k = 64;

			bits[k] = 0;
			do {
				bits[--k] = (char)('0' + (u & 1));
				u >>= 1;
			} while (u);
			if (v->kind == CEL_INT && v->v.i < 0)
				gv_buf_addc(b, '-');
			gv_buf_adds(b, bits + k);
			return true;
		}
		if (v->kind == CEL_BOOL) {
			gv_buf_adds(b, v->v.b ? "1" : "0");
			return true;
		}
		*err = "only integers and bools can be formatted as binary";
		return false;
	case 'o':
		if (v->kind == CEL_INT) {
			if (v->v.i < 0)
				gv_buf_addf(b, "-%llo", (unsigned long long)(0 - (uint64_t)v->v.i));
			else
				gv_buf_addf(b, "%llo", (unsigned long long)v->v.i);
			return true;
		}
		if (v->kind == CEL_UINT) {
			gv_buf_addf(b, "%llo", (unsigned long long)v->v.u);
			return true;
		}
		*err = "octal clause can only be used on integers";
		return false;
	case 'x':
	case 'X':
		if (v->kind == CEL_INT) {
			if (v->v.i < 0)
				gv_buf_addf(b, verb == 'x' ? "-%llx" : "-%llX",
					    (unsigned long long)(0 - (uint64_t)v->v.i));
			else
				gv_buf_addf(b, verb == 'x' ? "%llx" : "%llX",
					    (unsigned long long)v->v.i);
			return true;
		}
		if (v->kind == CEL_UINT) {
			gv_buf_addf(b, verb == 'x' ? "%llx" : "%llX", (unsigned long long)v->v.u);
			return true;
		}
		if (v->kind == CEL_STRING || v->kind == CEL_BYTES) {
			for (i = 0; i < v->v.s.n; i++)
				gv_buf_addf(b, verb == 'x' ? "%02x" : "%02X",
					    (unsigned char)v->v.s.p[i]);
			return true;
		}
		*err = "only integers, byte buffers, and strings can be formatted as hex";
		return false;
	default:
		*err = "unrecognized formatting clause";
		return false;
	}
	(void)ev;
}

FN(f_format)
{
	struct gv_buf b = {0};
	const char *s = a[0].v.s.p, *err = NULL;
	size_t sn = a[0].v.s.n, i, argi = 0, nargs;
	struct cel_value r;

	if (a[0].kind != CEL_STRING || a[1].kind != CEL_LIST)
		return overload(ev, n, a, na);
	nargs = cel_list_size(&a[1]);
	for (i = 0; i < sn; i++) {
		int prec = -1;
		struct cel_value v;

		if (s[i] != '%') {
			gv_buf_addc(&b, s[i]);
			continue;
		}
		i++;
		if (i >= sn) {
			err = "unexpected end of format string";
			break;
		}
		if (s[i] == '%') {
			gv_buf_addc(&b, '%');
			continue;
		}
		if (s[i] == '.') {
			prec = 0;
			i++;
			while (i < sn && s[i] >= '0' && s[i] <= '9') {
				prec = prec * 10 + (s[i] - '0');
				if (prec > 1000) {
					err = "precision too large";
					break;
				}
				i++;
			}
			if (err)
				break;
			if (i >= sn) {
				err = "unexpected end of format string";
				break;
			}
		}
		if (argi >= nargs) {
			gv_buf_release(&b);
			return cel_err(ev, n->pos, "index %zu out of range", argi);
		}
		v = cel_list_get(&a[1], argi++);
		if (!format_arg(ev, &v, s[i], prec, &b, &err))
			break;
		if (b.len > FORMAT_MAX_TEXT) {
			gv_buf_release(&b);
			if (!cel_charge(ev, FORMAT_MAX_TEXT / 16))
				return cel_null(); /* aborted: the evaluator reports it */
			return cel_err(ev, n->pos, "format: text longer than %zu bytes",
				       FORMAT_MAX_TEXT);
		}
	}
	if (err) {
		gv_buf_release(&b);
		return cel_err(ev, n->pos, "error during formatting: %s", err);
	}
	r = buf_str(ev, &b, false);
	return r;
}

/* ---- optional types ---- */

FN(f_opt_of)
{
	return cel_opt(ev, &a[0]);
}

static bool is_zero(const struct cel_value *v)
{
	switch (v->kind) {
	case CEL_NULL:
		return true;
	case CEL_BOOL:
		return !v->v.b;
	case CEL_INT:
		return v->v.i == 0;
	case CEL_UINT:
		return v->v.u == 0;
	case CEL_DOUBLE:
		return v->v.d == 0;
	case CEL_STRING:
	case CEL_BYTES:
		return v->v.s.n == 0;
	case CEL_LIST:
		return cel_list_size(v) == 0;
	case CEL_MAP:
		return cel_map_size(v) == 0;
	case CEL_DURATION:
		return v->v.dur == 0;
	case CEL_TIMESTAMP:
		return v->v.ts.sec == 0 && v->v.ts.nsec == 0;
	default:
		return false;
	}
}

FN(f_opt_nonzero)
{
	return is_zero(&a[0]) ? cel_opt(ev, NULL) : cel_opt(ev, &a[0]);
}

FN(f_opt_none)
{
	return cel_opt(ev, NULL);
}

FN(f_has_value)
{
	if (a[0].kind != CEL_OPTIONAL)
		return overload(ev, n, a, na);
	return cel_bool(a[0].v.opt != NULL);
}

FN(f_value)
{
	if (a[0].kind != CEL_OPTIONAL)
		return overload(ev, n, a, na);
	if (!a[0].v.opt)
		return cel_err(ev, n->pos, "optional.none() dereference");
	return *a[0].v.opt;
}

FN(f_or)
{
	if (a[0].kind != CEL_OPTIONAL || (a[1].kind != CEL_OPTIONAL && a[1].kind != CEL_ERROR))
		return a[0].kind == CEL_ERROR ? a[0] : overload(ev, n, a, na);
	if (a[0].v.opt)
		return a[0];
	return a[1];
}

/* orValue, with Kyverno's compat rule: a non-optional receiver is returned as is. */
FN(f_or_value)
{
	if (a[0].kind == CEL_ERROR)
		return a[0];
	if (a[0].kind != CEL_OPTIONAL)
		return a[1].kind == CEL_ERROR ? a[1] : a[0];
	if (a[0].v.opt)
		return *a[0].v.opt;
	return a[1];
}

FN(f_opt_unwrap)
{
	struct cel_value *items;
	size_t i, cnt, k = 0;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	items = cel_eval_alloc(ev, sizeof(*items) * (cnt + 1));
	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(&a[0], i);

		if (e.kind != CEL_OPTIONAL)
			return cel_err(ev, n->pos,
				       "optional.unwrap: element %zu is not an optional", i);
		if (e.v.opt)
			items[k++] = *e.v.opt;
	}
	return cel_list_new(ev, items, k);
}

FN(f_first)
{
	size_t cnt;
	struct cel_value e;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	if (!cnt)
		return cel_opt(ev, NULL);
	e = cel_list_get(&a[0], 0);
	return cel_opt(ev, &e);
}

FN(f_last)
{
	size_t cnt;
	struct cel_value e;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	if (!cnt)
		return cel_opt(ev, NULL);
	e = cel_list_get(&a[0], cnt - 1);
	return cel_opt(ev, &e);
}

/* ---- math extension ---- */

static double as_double(const struct cel_value *v)
{
	return v->kind == CEL_DOUBLE ? v->v.d
	       : v->kind == CEL_INT  ? (double)v->v.i
				     : (double)v->v.u;
}

static bool is_number(const struct cel_value *v)
{
	return v->kind == CEL_INT || v->kind == CEL_UINT || v->kind == CEL_DOUBLE;
}

static struct cel_value extreme(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
				int na, bool greatest)
{
	struct cel_value best;
	size_t i, cnt;
	const struct cel_value *items = a;
	struct cel_value *tmp = NULL;
	int c;
	bool nan;

	cnt = (size_t)na;
	if (na == 1 && a[0].kind == CEL_LIST) {
		cnt = cel_list_size(&a[0]);
		if (!cnt)
			return cel_err(ev, n->pos, "%s(list) argument must not be empty", n->name);
		tmp = cel_eval_alloc(ev, sizeof(*tmp) * cnt);
		for (i = 0; i < cnt; i++)
			tmp[i] = cel_list_get(&a[0], i);
		items = tmp;
	}
	for (i = 0; i < cnt; i++)
		if (!is_number(&items[i]))
			return cel_err(ev, n->pos, "%s: no such overload for argument of type %s",
				       n->name, cel_type_name(&items[i]));
	best = items[0];
	for (i = 1; i < cnt; i++) {
		if (!cel_compare(&items[i], &best, &c, &nan)) {
			if (items[i].kind == CEL_DOUBLE && isnan(items[i].v.d))
				best = items[i];
			continue;
		}
		if (greatest ? c > 0 : c < 0)
			best = items[i];
	}
	return best;
}

FN(f_greatest)
{
	return extreme(ev, n, a, na, true);
}

FN(f_least)
{
	return extreme(ev, n, a, na, false);
}

static struct cel_value dmath(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
			      int na, double (*f)(double))
{
	if (a[0].kind != CEL_DOUBLE)
		return overload(ev, n, a, na);
	return cel_double(f(a[0].v.d));
}

static double round_away(double d)
{
	return round(d);
}

FN(f_ceil)
{
	return dmath(ev, n, a, na, ceil);
}

FN(f_floor)
{
	return dmath(ev, n, a, na, floor);
}

FN(f_round)
{
	return dmath(ev, n, a, na, round_away);
}

FN(f_trunc)
{
	return dmath(ev, n, a, na, trunc);
}

FN(f_sqrt)
{
	if (!is_number(&a[0]))
		return overload(ev, n, a, na);
	return cel_double(sqrt(as_double(&a[0])));
}

FN(f_abs)
{
	switch (a[0].kind) {
	case CEL_INT:
		if (a[0].v.i == INT64_MIN)
			return cel_err(ev, n->pos, "integer overflow");
		return cel_int(a[0].v.i < 0 ? -a[0].v.i : a[0].v.i);
	case CEL_UINT:
		return a[0];
	case CEL_DOUBLE:
		return cel_double(fabs(a[0].v.d));
	default:
		return overload(ev, n, a, na);
	}
}

FN(f_sign)
{
	switch (a[0].kind) {
	case CEL_INT:
		return cel_int((a[0].v.i > 0) - (a[0].v.i < 0));
	case CEL_UINT:
		return cel_uint(a[0].v.u > 0);
	case CEL_DOUBLE:
		if (isnan(a[0].v.d))
			return a[0];
		return cel_double((a[0].v.d > 0) - (a[0].v.d < 0));
	default:
		return overload(ev, n, a, na);
	}
}

FN(f_is_inf)
{
	if (a[0].kind != CEL_DOUBLE)
		return overload(ev, n, a, na);
	return cel_bool(isinf(a[0].v.d));
}

FN(f_is_nan)
{
	if (a[0].kind != CEL_DOUBLE)
		return overload(ev, n, a, na);
	return cel_bool(isnan(a[0].v.d));
}

FN(f_is_finite)
{
	if (a[0].kind != CEL_DOUBLE)
		return overload(ev, n, a, na);
	return cel_bool(isfinite(a[0].v.d));
}

static struct cel_value bitop(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
			      int na, char op)
{
	if (na == 1) {
		if (a[0].kind == CEL_INT)
			return cel_int(~a[0].v.i);
		if (a[0].kind == CEL_UINT)
			return cel_uint(~a[0].v.u);
		return overload(ev, n, a, na);
	}
	if (a[0].kind == CEL_INT && a[1].kind == CEL_INT) {
		uint64_t x = (uint64_t)a[0].v.i, y = (uint64_t)a[1].v.i;

		return cel_int((int64_t)(op == '&' ? x & y : op == '|' ? x | y : x ^ y));
	}
	if (a[0].kind == CEL_UINT && a[1].kind == CEL_UINT)
		return cel_uint(op == '&'   ? a[0].v.u & a[1].v.u
				: op == '|' ? a[0].v.u | a[1].v.u
					    : a[0].v.u ^ a[1].v.u);
	return overload(ev, n, a, na);
}

FN(f_bit_and)
{
	return bitop(ev, n, a, na, '&');
}

FN(f_bit_or)
{
	return bitop(ev, n, a, na, '|');
}

FN(f_bit_xor)
{
	return bitop(ev, n, a, na, '^');
}

FN(f_bit_not)
{
	return bitop(ev, n, a, na, '~');
}

static struct cel_value shift(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
			      int na, bool left)
{
	int64_t s;

	if (a[1].kind != CEL_INT || (a[0].kind != CEL_INT && a[0].kind != CEL_UINT))
		return overload(ev, n, a, na);
	s = a[1].v.i;
	if (s < 0)
		return cel_err(ev, n->pos, "math.%s() negative offset: %lld",
			       left ? "bitShiftLeft" : "bitShiftRight", (long long)s);
	if (a[0].kind == CEL_INT) {
		uint64_t x = (uint64_t)a[0].v.i;

		if (s > 63)
			return cel_int(0);
		return cel_int((int64_t)(left ? x << s : x >> s));
	}
	if (s > 63)
		return cel_uint(0);
	return cel_uint(left ? a[0].v.u << s : a[0].v.u >> s);
}

FN(f_shl)
{
	return shift(ev, n, a, na, true);
}

FN(f_shr)
{
	return shift(ev, n, a, na, false);
}

/* ---- encoders ---- */

FN(f_b64_encode)
{
	struct cel_value r;
	json_t *j;

	if (a[0].kind != CEL_BYTES)
		return overload(ev, n, a, na);
	j = cel_value_to_json(&a[0]);
	r = cel_str(cel_eval_strdup(ev, json_string_value(j), json_string_length(j)),
		    json_string_length(j));
	json_decref(j);
	return r;
}

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

FN(f_b64_decode)
{
	const char *s = a[0].v.s.p;
	size_t sn = a[0].v.s.n, i, k = 0, end = sn;
	char *out;
	unsigned acc = 0;
	int bits = 0;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	/* padded (StdEncoding) or unpadded (RawStdEncoding), as cel-go accepts both */
	while (end > 0 && s[end - 1] == '=')
		end--;
	if (sn - end > 2 || (sn != end && sn % 4 != 0) || end % 4 == 1)
		return cel_err(ev, n->pos, "illegal base64 data");
	out = cel_eval_alloc(ev, end + 1);
	for (i = 0; i < end; i++) {
		int v = b64val((unsigned char)s[i]);

		if (v < 0)
			return cel_err(ev, n->pos, "illegal base64 data at input byte %zu", i);
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (char)((acc >> bits) & 0xFF);
		}
	}
	return cel_bytes(out, k);
}

/* ---- lists and sets extensions ---- */

FN(f_range)
{
	struct cel_value *items;
	int64_t i;

	if (a[0].kind != CEL_INT)
		return overload(ev, n, a, na);
	if (a[0].v.i <= 0)
		return cel_list_new(ev, NULL, 0);
	if (!cel_charge(ev, (uint64_t)a[0].v.i) || a[0].v.i > 10000000)
		return cel_err(ev, n->pos, "lists.range: %lld elements exceed the cost budget",
			       (long long)a[0].v.i);
	items = cel_eval_alloc(ev, sizeof(*items) * (size_t)a[0].v.i);
	for (i = 0; i < a[0].v.i; i++)
		items[i] = cel_int(i);
	return cel_list_new(ev, items, (size_t)a[0].v.i);
}

FN(f_slice)
{
	size_t cnt;
	struct cel_value *items;
	int64_t i;

	if (a[0].kind != CEL_LIST || a[1].kind != CEL_INT || a[2].kind != CEL_INT)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	if (a[1].v.i < 0 || a[2].v.i < 0)
		return cel_err(ev, n->pos,
			       "cannot slice(%lld, %lld), negative indexes not supported",
			       (long long)a[1].v.i, (long long)a[2].v.i);
	if (a[1].v.i > a[2].v.i)
		return cel_err(ev, n->pos,
			       "cannot slice(%lld, %lld), start index must be less than or "
			       "equal to end index",
			       (long long)a[1].v.i, (long long)a[2].v.i);
	if ((uint64_t)a[2].v.i > cnt)
		return cel_err(ev, n->pos, "cannot slice(%lld, %lld), list is length %zu",
			       (long long)a[1].v.i, (long long)a[2].v.i, cnt);
	items = cel_eval_alloc(ev, sizeof(*items) * (size_t)(a[2].v.i - a[1].v.i + 1));
	for (i = a[1].v.i; i < a[2].v.i; i++)
		items[i - a[1].v.i] = cel_list_get(&a[0], (size_t)i);
	return cel_list_new(ev, items, (size_t)(a[2].v.i - a[1].v.i));
}

static bool flatten_into(struct cel_eval *ev, const struct cel_value *l, int64_t depth,
			 struct cel_value **items, size_t *k, size_t *cap)
{
	size_t i, cnt = cel_list_size(l);

	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(l, i);

		if (!cel_charge(ev, 1))
			return false;
		if (e.kind == CEL_LIST && depth > 0) {
			if (!flatten_into(ev, &e, depth - 1, items, k, cap))
				return false;
			continue;
		}
		if (*k == *cap) {
			size_t nc = *cap ? *cap * 2 : 8;
			struct cel_value *nv = cel_eval_alloc(ev, sizeof(*nv) * nc);

			if (*k)
				memcpy(nv, *items, sizeof(*nv) * *k);
			*items = nv;
			*cap = nc;
		}
		(*items)[(*k)++] = e;
	}
	return true;
}

FN(f_flatten)
{
	struct cel_value *items = NULL;
	size_t k = 0, cap = 0;
	int64_t depth = 1;

	if (a[0].kind != CEL_LIST || (na == 2 && a[1].kind != CEL_INT))
		return overload(ev, n, a, na);
	if (na == 2)
		depth = a[1].v.i;
	if (depth < 0)
		return cel_err(ev, n->pos, "level must be non-negative");
	if (depth > 64)
		depth = 64;
	if (!flatten_into(ev, &a[0], depth, &items, &k, &cap))
		return cel_null();
	return cel_list_new(ev, items, k);
}

FN(f_distinct)
{
	size_t i, j, cnt, k = 0;
	struct cel_value *items;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	if (!cel_charge(ev, cnt * cnt / 8))
		return cel_null();
	items = cel_eval_alloc(ev, sizeof(*items) * (cnt + 1));
	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(&a[0], i);

		for (j = 0; j < k; j++) {
			struct cel_value r = cel_equals(ev, &items[j], &e, n->pos);

			if (r.kind == CEL_BOOL && r.v.b)
				break;
		}
		if (j == k)
			items[k++] = e;
	}
	return cel_list_new(ev, items, k);
}

FN(f_reverse)
{
	size_t i, cnt;
	struct cel_value *items;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	items = cel_eval_alloc(ev, sizeof(*items) * (cnt + 1));
	for (i = 0; i < cnt; i++)
		items[cnt - 1 - i] = cel_list_get(&a[0], i);
	return cel_list_new(ev, items, cnt);
}

static int value_qcmp(const void *x, const void *y)
{
	int c = 0;
	bool nan;

	cel_compare(x, y, &c, &nan);
	return c;
}

FN(f_sort)
{
	size_t i, cnt;
	struct cel_value *items;
	int c;
	bool nan;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	items = cel_eval_alloc(ev, sizeof(*items) * (cnt + 1));
	for (i = 0; i < cnt; i++) {
		items[i] = cel_list_get(&a[0], i);
		if (!cel_compare(&items[0], &items[i], &c, &nan) ||
		    (items[i].kind != items[0].kind))
			return cel_err(ev, n->pos, "sort(): list elements must have the same type");
	}
	cel_charge(ev, cnt * 2);
	if (cnt > 1)
		qsort(items, cnt, sizeof(*items), value_qcmp);
	return cel_list_new(ev, items, cnt);
}

static bool list_has(struct cel_eval *ev, const struct cel_value *l, const struct cel_value *x)
{
	size_t i, cnt = cel_list_size(l);

	cel_charge(ev, cnt / 4);
	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(l, i), r = cel_equals(ev, &e, x, -1);

		if (r.kind == CEL_BOOL && r.v.b)
			return true;
	}
	return false;
}

/* sets.contains(a, b): every element of b is in a. */
FN(f_sets_contains)
{
	size_t i, cnt;

	if (a[0].kind != CEL_LIST || a[1].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[1]);
	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(&a[1], i);

		if (!list_has(ev, &a[0], &e))
			return cel_bool(false);
	}
	return cel_bool(true);
}

FN(f_sets_equivalent)
{
	struct cel_value sw[2];

	if (a[0].kind != CEL_LIST || a[1].kind != CEL_LIST)
		return overload(ev, n, a, na);
	if (!f_sets_contains(ev, n, a, na).v.b)
		return cel_bool(false);
	sw[0] = a[1];
	sw[1] = a[0];
	return f_sets_contains(ev, n, sw, 2);
}

FN(f_sets_intersects)
{
	size_t i, cnt;

	if (a[0].kind != CEL_LIST || a[1].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[1]);
	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(&a[1], i);

		if (list_has(ev, &a[0], &e))
			return cel_bool(true);
	}
	return cel_bool(false);
}

/* ---- Kubernetes lists library ---- */

FN(f_is_sorted)
{
	size_t i, cnt;
	int c;
	bool nan;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	for (i = 1; i < cnt; i++) {
		struct cel_value x = cel_list_get(&a[0], i - 1), y = cel_list_get(&a[0], i);

		if (!cel_compare(&x, &y, &c, &nan))
			return cel_err(ev, n->pos, "isSorted(): elements cannot be compared");
		if (c > 0)
			return cel_bool(false);
	}
	return cel_bool(true);
}

FN(f_sum)
{
	size_t i, cnt;
	struct cel_value acc = cel_int(0);

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	for (i = 0; i < cnt; i++) {
		struct cel_value e = cel_list_get(&a[0], i);

		if (i == 0) {
			acc = e;
			if (!is_number(&e) && e.kind != CEL_DURATION)
				return overload(ev, n, &e, 1);
			continue;
		}
		acc = cel_arith(ev, OP_ADD, &acc, &e, n->pos);
		if (acc.kind == CEL_ERROR)
			return acc;
	}
	return acc;
}

static struct cel_value list_extreme(struct cel_eval *ev, const struct cel_node *n,
				     struct cel_value *a, int na, bool max)
{
	size_t i, cnt;
	struct cel_value best;
	int c;
	bool nan;

	if (a[0].kind != CEL_LIST)
		return overload(ev, n, a, na);
	cnt = cel_list_size(&a[0]);
	if (!cnt)
		return cel_err(ev, n->pos, "%s called on empty list", max ? "max" : "min");
	best = cel_list_get(&a[0], 0);
	for (i = 1; i < cnt; i++) {
		struct cel_value e = cel_list_get(&a[0], i);

		if (!cel_compare(&e, &best, &c, &nan))
			return cel_err(ev, n->pos, "%s(): elements cannot be compared",
				       max ? "max" : "min");
		if (max ? c > 0 : c < 0)
			best = e;
	}
	return best;
}

FN(f_lmin)
{
	return list_extreme(ev, n, a, na, false);
}

FN(f_lmax)
{
	return list_extreme(ev, n, a, na, true);
}

/* ---- protobuf's JSON types ---- */

FN(f_json_message)
{
	bool value = strcmp(n->name, "google.protobuf.Value") == 0;
	bool list = strcmp(n->name, "google.protobuf.ListValue") == 0;
	const char *f;
	const struct cel_value *x;

	if (na == 0)
		return value  ? cel_null()
		       : list ? cel_list_new(ev, NULL, 0)
			      : cel_map_new(ev, NULL, NULL, 0);
	if (na > 2)
		return cel_err(ev, n->pos, "%s: more than one field set", n->name);
	f = a[0].v.s.p;
	x = &a[1];
	if (!value && strcmp(f, list ? "values" : "fields") == 0 &&
	    x->kind == (list ? CEL_LIST : CEL_MAP))
		return *x;
	if (value && ((strcmp(f, "number_value") == 0 && x->kind == CEL_DOUBLE) ||
		      (strcmp(f, "string_value") == 0 && x->kind == CEL_STRING) ||
		      (strcmp(f, "bool_value") == 0 && x->kind == CEL_BOOL) ||
		      (strcmp(f, "struct_value") == 0 && x->kind == CEL_MAP) ||
		      (strcmp(f, "list_value") == 0 && x->kind == CEL_LIST)))
		return *x;
	return cel_err(ev, n->pos, "%s: no field '%s' of type %s", n->name, f, cel_type_name(x));
}

const struct cel_func cel_json_message = {
    "google.protobuf JSON type", f_json_message, 0, 64, 0, false};

/* ---- the table ---- */

#define G CEL_FN_GLOBAL
#define M CEL_FN_MEMBER
static const struct cel_func funcs[] = {
    {"size", f_size, 1, 1, G | M, false},
    {"contains", f_contains, 2, 2, M, false},
    {"startsWith", f_starts, 2, 2, M, false},
    {"endsWith", f_ends, 2, 2, M, false},
    {"matches", f_matches, 2, 2, G | M, false},
    {"find", f_find, 2, 2, M, false},
    {"findAll", f_find_all, 2, 3, M, false},
    {"regex.replace", f_regex_replace, 3, 4, G, false},
    {"regex.extract", f_regex_extract, 2, 2, G, false},
    {"regex.extractAll", f_regex_extract_all, 2, 2, G, false},
    {"int", f_int, 1, 1, G, false},
    {"uint", f_uint, 1, 1, G, false},
    {"double", f_double, 1, 1, G, false},
    {"string", f_string, 1, 1, G, false},
    {"bytes", f_bytes, 1, 1, G, false},
    {"bool", f_bool, 1, 1, G, false},
    {"dyn", f_dyn, 1, 1, G, false},
    {"type", f_type, 1, 1, G, false},
    {"duration", f_duration, 1, 1, G, false},
    {"timestamp", f_timestamp, 1, 1, G, false},
    {"getFullYear", f_year, 1, 2, M, false},
    {"getMonth", f_month, 1, 2, M, false},
    {"getDayOfYear", f_doy, 1, 2, M, false},
    {"getDayOfMonth", f_dom, 1, 2, M, false},
    {"getDate", f_date, 1, 2, M, false},
    {"getDayOfWeek", f_dow, 1, 2, M, false},
    {"getHours", f_hours, 1, 2, M, false},
    {"getMinutes", f_minutes, 1, 2, M, false},
    {"getSeconds", f_seconds, 1, 2, M, false},
    {"getMilliseconds", f_millis, 1, 2, M, false},
    {"charAt", f_char_at, 2, 2, M, false},
    {"indexOf", f_index_of, 2, 3, M, false},
    {"lastIndexOf", f_last_index_of, 2, 3, M, false},
    {"lowerAscii", f_lower, 1, 1, M, false},
    {"upperAscii", f_upper, 1, 1, M, false},
    {"replace", f_replace, 3, 4, M, false},
    {"split", f_split, 2, 3, M, false},
    {"substring", f_substring, 2, 3, M, false},
    {"trim", f_trim, 1, 1, M, false},
    {"join", f_join, 1, 2, M, false},
    {"strings.quote", f_quote, 1, 1, G, false},
    {"format", f_format, 2, 2, M, false},
    {"optional.of", f_opt_of, 1, 1, G, false},
    {"optional.ofNonZeroValue", f_opt_nonzero, 1, 1, G, false},
    {"optional.none", f_opt_none, 0, 0, G, false},
    {"optional.unwrap", f_opt_unwrap, 1, 1, G, false},
    {"unwrapOpt", f_opt_unwrap, 1, 1, M, false},
    {"hasValue", f_has_value, 1, 1, M, false},
    {"value", f_value, 1, 1, M, false},
    {"or", f_or, 2, 2, M, true},
    {"orValue", f_or_value, 2, 2, M, true},
    {"first", f_first, 1, 1, M, false},
    {"last", f_last, 1, 1, M, false},
    {"math.greatest", f_greatest, 1, 64, G, false},
    {"math.least", f_least, 1, 64, G, false},
    {"math.ceil", f_ceil, 1, 1, G, false},
    {"math.floor", f_floor, 1, 1, G, false},
    {"math.round", f_round, 1, 1, G, false},
    {"math.trunc", f_trunc, 1, 1, G, false},
    {"math.sqrt", f_sqrt, 1, 1, G, false},
    {"math.abs", f_abs, 1, 1, G, false},
    {"math.sign", f_sign, 1, 1, G, false},
    {"math.isInf", f_is_inf, 1, 1, G, false},
    {"math.isNaN", f_is_nan, 1, 1, G, false},
    {"math.isFinite", f_is_finite, 1, 1, G, false},
    {"math.bitAnd", f_bit_and, 2, 2, G, false},
    {"math.bitOr", f_bit_or, 2, 2, G, false},
    {"math.bitXor", f_bit_xor, 2, 2, G, false},
    {"math.bitNot", f_bit_not, 1, 1, G, false},
    {"math.bitShiftLeft", f_shl, 2, 2, G, false},
    {"math.bitShiftRight", f_shr, 2, 2, G, false},
    {"base64.encode", f_b64_encode, 1, 1, G, false},
    {"base64.decode", f_b64_decode, 1, 1, G, false},
    {"lists.range", f_range, 1, 1, G, false},
    {"slice", f_slice, 3, 3, M, false},
    {"flatten", f_flatten, 1, 2, M, false},
    {"distinct", f_distinct, 1, 1, M, false},
    {"reverse", f_reverse, 1, 1, M, false},
    {"sort", f_sort, 1, 1, M, false},
    {"sets.contains", f_sets_contains, 2, 2, G, false},
    {"sets.equivalent", f_sets_equivalent, 2, 2, G, false},
    {"sets.intersects", f_sets_intersects, 2, 2, G, false},
    {"isSorted", f_is_sorted, 1, 1, M, false},
    {"sum", f_sum, 1, 1, M, false},
    {"min", f_lmin, 1, 1, M, false},
    {"max", f_lmax, 1, 1, M, false},
};
#undef G
#undef M
static const size_t nfuncs = GV_ARRAY_LEN(funcs);

static const struct {
	const struct cel_func *v;
	const size_t *n;
} tables[] = {
    {funcs, &nfuncs},
    {cel_net_funcs, &cel_net_nfuncs},
    {cel_quantity_funcs, &cel_quantity_nfuncs},
    {cel_semver_funcs, &cel_semver_nfuncs},
    {cel_url_funcs, &cel_url_nfuncs},
    {cel_format_funcs, &cel_format_nfuncs},
    {cel_authz_funcs, &cel_authz_nfuncs},
    {cel_host_funcs, &cel_host_nfuncs},
};

const struct cel_func *cel_func_find(const char *name, bool member, int nargs)
{
	size_t t, i;

	for (t = 0; t < GV_ARRAY_LEN(tables); t++) {
		for (i = 0; i < *tables[t].n; i++) {
			const struct cel_func *f = &tables[t].v[i];

			if (strcmp(f->name, name) != 0)
				continue;
			if (!(f->style & (member ? CEL_FN_MEMBER : CEL_FN_GLOBAL)))
				continue;
			if (nargs < f->min_args || nargs > f->max_args)
				continue;
			return f;
		}
	}
	return NULL;
}

bool cel_func_known(const char *name)
{
	size_t t, i;

	for (t = 0; t < GV_ARRAY_LEN(tables); t++)
		for (i = 0; i < *tables[t].n; i++)
			if (strcmp(tables[t].v[i].name, name) == 0)
				return true;
	return false;
}

void cel_list_functions(void (*fn)(const char *name, void *ud), void *ud)
{
	size_t t, i;

	for (t = 0; t < GV_ARRAY_LEN(tables); t++)
		for (i = 0; i < *tables[t].n; i++)
			if (i == 0 || strcmp(tables[t].v[i].name, tables[t].v[i - 1].name) != 0)
				fn(tables[t].v[i].name, ud);
}
