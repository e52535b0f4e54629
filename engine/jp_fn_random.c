/*
 * jp_fn_random.c - random(regex): a string matching a simple regular
 * expression.
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
/* random(regex): a string matching a simple regular expression        */

#define RND_MAX_LEN    4096
#define RND_MAX_REPEAT 10
#define RND_MAX_DEPTH  32
#define RND_MAX_WORK   200000

struct rnd {
	const struct jp_env *env; /* borrowed: the random source */
	const char *p, *end;
	struct gv_buf out;
	int depth;
	unsigned long work; /* atoms visited, bounded by RND_MAX_WORK */
	const char *err;
	bool limit; /* err is a bound, not a syntax error */
};

static unsigned rnd_below(const struct jp_env *env, unsigned n)
{
	if (n <= 1)
		return 0;
	return (unsigned)(env->random(env->ud) % n);
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

static void set_pick(const struct jp_env *env, const struct rnd_set *s, struct gv_buf *out)
{
	unsigned total = 0, k;
	int i;

	if (s->neg) {
		unsigned cand[96], nc = 0, c;

		for (c = 32; c < 127; c++)
			if (!set_has(s, c))
				cand[nc++] = c;
		if (nc)
			gv_utf8_put(out, cand[rnd_below(env, nc)]);
		return;
	}
	for (i = 0; i < s->n; i++)
		total += s->hi[i] - s->lo[i] + 1;
	k = rnd_below(env, total);
	for (i = 0; i < s->n; i++) {
		unsigned w = s->hi[i] - s->lo[i] + 1;
		if (k < w) {
			gv_utf8_put(out, s->lo[i] + k);
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
				r->p += gv_utf8_decode(r->p, (size_t)(r->end - r->p), &lo);
			}
			hi = lo;
			if (r->p + 1 < r->end && *r->p == '-' && r->p[1] != ']') {
				r->p++;
				if (*r->p == '\\' && r->p + 1 < r->end) {
					hi = escape_char(r->p[1]);
					r->p += 2;
				} else {
					r->p += gv_utf8_decode(r->p, (size_t)(r->end - r->p), &hi);
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
			set_pick(r->env, &set, &r->out);
		return;
	}
	if (c == '.') {
		r->p++;
		if (emit)
			gv_utf8_put(&r->out, 32 + rnd_below(r->env, 95));
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
				set_pick(r->env, &set, &r->out);
			return;
		}
		if (c == 'b' || c == 'B' || c == 'A' || c == 'z')
			return;
		if (emit)
			gv_utf8_put(&r->out, escape_char(c));
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
	r->p += gv_utf8_decode(r->p, (size_t)(r->end - r->p), &cp);
	if (emit)
		gv_utf8_put(&r->out, cp);
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
		times = lo + (long)rnd_below(r->env, (unsigned)(hi - lo + 1));
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
	pick = (int)rnd_below(r->env, (unsigned)n);
	for (i = 0; i < n; i++) {
		if (i != pick)
			continue;
		r->p = starts[i];
		rnd_seq(r, true);
	}
	r->p = end;
}

int jp_fn_random(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		 json_t **out)
{
	struct rnd r;
	int rc;

	if (SLEN(0) == 0)
		return jp_kfail(ev, JP_ERR_INVALID_VALUE, "random", "no pattern provided");
	memset(&r, 0, sizeof(r));
	r.env = ev->env;
	r.p = STR(0);
	r.end = STR(0) + SLEN(0);
	rnd_alt(&r, true);
	if (!r.err && r.p < r.end)
		r.err = "unexpected )";
	if (r.err) {
		rc = jp_kfail(ev, r.limit ? JP_ERR_LIMIT : JP_ERR_RUNTIME, "random",
			      "%s in pattern '%s'", r.err, STR(0));
		gv_buf_release(&r.out);
		return rc;
	}
	rc = jp_charge(ev, r.work / 8);
	if (rc) {
		gv_buf_release(&r.out);
		return rc;
	}
	return jp_out_buf(ev, "random", &r.out, out);
}
