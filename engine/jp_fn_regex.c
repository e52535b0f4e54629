/*
 * jp_fn_regex.c - regex_match, regex_replace_all(_literal), pattern_match
 * and label_match: Go RE2 semantics on PCRE2, a literal pattern compiled
 * once, backtracking charged to the step budget.
 */
#include "engine/jp_fn_int.h"

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

#include "engine/value.h"
#include "common/banned.h"

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
void jp_re_prepare(struct jp_node *call)
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
		return jp_kfail(ev, JP_ERR_RUNTIME, fname, "%s", err);
	*owned = true;
	return 0;
}

static int re_match_error(struct jp_ev *ev, const char *fname, int rc)
{
	PCRE2_UCHAR msg[256];

	if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
	    rc == PCRE2_ERROR_HEAPLIMIT)
		return jp_kfail(ev, JP_ERR_LIMIT, fname, "regular expression match limit exceeded");
	pcre2_get_error_message(rc, msg, sizeof(msg));
	return jp_kfail(ev, JP_ERR_RUNTIME, fname, "%s", (const char *)msg);
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

int jp_fn_regex_match(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	struct gv_buf src = {0};
	pcre2_match_data *md = NULL;
	pcre2_code *code = NULL;
	bool owned = false;
	int rc, m;

	rc = re_get(ev, "regex_match", call, args, &code, &owned);
	if (rc)
		return rc;
	jp_iface_to_string(ARGV(1), &src);
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
			k = gv_utf8_decode(tpl + j, tn - j, &cp);
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
	jp_iface_to_string(ARGV(1), &src);
	jp_iface_to_string(ARGV(2), &repl);
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
		w = search < n ? gv_utf8_decode(s + search, n - search, &cp) : 0;
		if (search + w > ov[1])
			search += w;
		else if (search + 1 > ov[1])
			search++;
		else
			search = ov[1];
	}
	if (last < n)
		gv_buf_add(&b, s + last, n - last);
	rc = jp_out_buf(ev, fname, &b, out);
out:
	gv_buf_release(&b);
	gv_buf_release(&src);
	gv_buf_release(&repl);
	pcre2_match_data_free(md);
	if (owned)
		pcre2_code_free(code);
	return rc;
}

int jp_fn_regex_replace_all(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			    int nargs, json_t **out)
{
	return regex_replace(ev, "regex_replace_all", call, args, false, out);
}

int jp_fn_regex_replace_all_literal(struct jp_ev *ev, const struct jp_node *call,
				    struct jp_arg *args, int nargs, json_t **out)
{
	return regex_replace(ev, "regex_replace_all_literal", call, args, true, out);
}

int jp_fn_pattern_match(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	struct gv_buf src = {0};
	unsigned long left = ev->max_steps - ev->steps;
	size_t work = 0;
	int rc, m;

	jp_iface_to_string(ARGV(1), &src);
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

int jp_fn_label_match(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
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
