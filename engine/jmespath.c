/*
 * jmespath.c - JMESPath: lexer, Pratt parser to a tree compiled once,
 * tree-walking evaluator with a step budget and a depth limit, and the
 * standard functions. Kyverno's custom functions live in jp_functions.c.
 *
 * The grammar and the tree shapes follow the reference implementation
 * (jmespath.py) and go-jmespath, on which Kyverno's fork is built; the
 * Kyverno dialect (section 6.3 of kyverno-semantics.md) is the handling of
 * JP_ERR_UNKNOWN_KEY: raised by JN_FIELD on a map without the key, absorbed
 * (turned into null) by the nodes listed in jmespath.h, propagated by the
 * others.
 */
#include "engine/jmespath.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/jp_int.h"
#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* Errors and small helpers                                             */

const char *jp_error_kind_name(enum jp_error_kind kind)
{
	switch (kind) {
	case JP_ERR_NONE:
		return "none";
	case JP_ERR_SYNTAX:
		return "syntax";
	case JP_ERR_INVALID_ARITY:
		return "invalid-arity";
	case JP_ERR_INVALID_TYPE:
		return "invalid-type";
	case JP_ERR_INVALID_VALUE:
		return "invalid-value";
	case JP_ERR_UNKNOWN_FUNCTION:
		return "unknown-function";
	case JP_ERR_UNKNOWN_KEY:
		return "unknown-key";
	case JP_ERR_LIMIT:
		return "limit";
	case JP_ERR_RUNTIME:
		return "runtime";
	}
	return "unknown";
}

static void error_vset(struct jp_error *e, enum jp_error_kind kind, int pos, const char *fmt,
		       va_list ap)
{
	if (e->kind != JP_ERR_NONE)
		return;
	e->kind = kind;
	e->pos = pos;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

int jp_fail(struct jp_ev *ev, enum jp_error_kind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_vset(ev->e, kind, -1, fmt, ap);
	va_end(ap);
	return kind;
}

static int budget_fail(struct jp_ev *ev)
{
	if (ev->shared_max)
		return jp_fail(ev, JP_ERR_LIMIT, "shared evaluation step budget (%lu) exceeded",
			       ev->shared_max);
	return jp_fail(ev, JP_ERR_LIMIT, "evaluation step budget (%lu) exceeded", ev->max_steps);
}

/* Invariant: ev->steps <= ev->max_steps (a budget that runs out is left full). */
int jp_charge(struct jp_ev *ev, unsigned long n)
{
	if (n > ev->max_steps - ev->steps) {
		ev->steps = ev->max_steps;
		return budget_fail(ev);
	}
	ev->steps += n;
	return 0;
}

/* Bytes that the steps left may pay for, at a step per 16 bytes. */
static size_t bytes_left(const struct jp_ev *ev)
{
	unsigned long left = ev->max_steps - ev->steps;

	return left > SIZE_MAX / 16 ? SIZE_MAX : (size_t)left * 16;
}

json_t *jp_number(double d)
{
	if (!isfinite(d))
		return NULL;
	if (d == trunc(d) && fabs(d) < 9.2233720368547e18)
		return json_integer((json_int_t)d);
	return json_real(d);
}

bool jp_truthy(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
	case JSON_FALSE:
		return false;
	case JSON_STRING:
		return json_string_length(v) > 0;
	case JSON_ARRAY:
		return json_array_size(v) > 0;
	case JSON_OBJECT:
		return json_object_size(v) > 0;
	default:
		return true;
	}
}

const char *jp_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
		return "null";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_STRING:
		return "string";
	case JSON_ARRAY:
		return "array";
	case JSON_OBJECT:
		return "object";
	}
	return "unknown";
}

size_t jp_utf8_decode(const char *s, size_t n, unsigned *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned c, need, min;
	size_t i;

	if (n == 0) {
		*cp = 0xFFFD;
		return 1;
	}
	c = u[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
		c &= 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		c &= 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		c &= 0x07;
		min = 0x10000;
	} else {
		*cp = 0xFFFD;
		return 1;
	}
	if (n <= need) {
		*cp = 0xFFFD;
		return 1;
	}
	for (i = 1; i <= need; i++) {
		if ((u[i] & 0xC0) != 0x80) {
			*cp = 0xFFFD;
			return 1;
		}
		c = (c << 6) | (u[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
		*cp = 0xFFFD;
		return 1;
	}
	*cp = c;
	return need + 1;
}

void jp_utf8_put(struct gv_buf *b, unsigned cp)
{
	char t[4];

	if (cp < 0x80) {
		gv_buf_addc(b, (char)cp);
	} else if (cp < 0x800) {
		t[0] = (char)(0xC0 | (cp >> 6));
		t[1] = (char)(0x80 | (cp & 0x3F));
		gv_buf_add(b, t, 2);
	} else if (cp < 0x10000) {
		t[0] = (char)(0xE0 | (cp >> 12));
		t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		t[2] = (char)(0x80 | (cp & 0x3F));
		gv_buf_add(b, t, 3);
	} else {
		t[0] = (char)(0xF0 | (cp >> 18));
		t[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		t[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		t[3] = (char)(0x80 | (cp & 0x3F));
		gv_buf_add(b, t, 4);
	}
}

size_t jp_utf8_len(const char *s, size_t n)
{
	size_t count = 0, i = 0;
	unsigned cp;

	while (i < n) {
		i += jp_utf8_decode(s + i, n - i, &cp);
		count++;
	}
	return count;
}

json_t *jp_string_lossy(const char *s, size_t n)
{
	struct gv_buf b = {0};
	size_t i = 0, k;
	unsigned cp;
	json_t *v;

	v = json_stringn(s, n);
	if (v)
		return v;
	while (i < n) {
		k = jp_utf8_decode(s + i, n - i, &cp);
		jp_utf8_put(&b, cp);
		i += k;
	}
	v = json_stringn_nocheck(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return v;
}

/* ------------------------------------------------------------------ */
/* Numbers as Go prints them                                            */

/* Shortest %e text of the float32 nearest d that reads back as that float32. */
static void shortest_e32(double d, char *buf, size_t n)
{
	int prec;

	for (prec = 1; prec <= 9; prec++) {
		snprintf(buf, n, "%.*e", prec - 1, d);
		if ((float)strtod(buf, NULL) == (float)d)
			return;
	}
}

/* Plain ('f') form of a float32 (Go's FormatFloat(d, 'f', -1, 32)). */
static void format_float32(double d, struct gv_buf *out)
{
	char tmp[64], digits[32];
	int nd = 0, exp10, i;
	const char *p;

	d = (double)(float)d;
	if (!isfinite(d) || d == 0) {
		value_format_float(d, 'f', out);
		return;
	}
	shortest_e32(d, tmp, sizeof(tmp));
	p = tmp;
	if (*p == '-') {
		gv_buf_addc(out, '-');
		p++;
	}
	for (; *p && *p != 'e'; p++)
		if (isdigit((unsigned char)*p) && nd < (int)sizeof(digits) - 1)
			digits[nd++] = *p;
	exp10 = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (exp10 < 0) {
		gv_buf_adds(out, "0.");
		for (i = 0; i < -exp10 - 1; i++)
			gv_buf_addc(out, '0');
		gv_buf_add(out, digits, (size_t)nd);
	} else if (exp10 >= nd - 1) {
		gv_buf_add(out, digits, (size_t)nd);
		for (i = 0; i < exp10 - (nd - 1); i++)
			gv_buf_addc(out, '0');
	} else {
		gv_buf_add(out, digits, (size_t)exp10 + 1);
		gv_buf_addc(out, '.');
		gv_buf_add(out, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
	}
}

void jp_format_double(double d, char fmt, int bits, struct gv_buf *out)
{
	double ad = fabs(d);
	size_t mark;

	if (bits == 32) {
		format_float32(d, out);
		return;
	}
	if (fmt != 'j') {
		value_format_float(d, fmt, out);
		return;
	}
	if (ad == 0 || !isfinite(d) || (ad >= 1e-6 && ad < 1e21)) {
		value_format_float(d, 'f', out);
		return;
	}
	/* encoding/json: exponent form, e-07 trimmed to e-7 */
	mark = out->len;
	value_format_float(d, 'e', out);
	if (out->len - mark >= 4 && out->data[out->len - 4] == 'e' &&
	    out->data[out->len - 3] == '-' && out->data[out->len - 2] == '0') {
		out->data[out->len - 2] = out->data[out->len - 1];
		out->len--;
		out->data[out->len] = '\0';
	}
}

/* ------------------------------------------------------------------ */
/* Equality, dump                                                      */

static bool is_number(const json_t *v)
{
	return json_is_integer(v) || json_is_real(v);
}

static int num_cmp(const json_t *a, const json_t *b)
{
	double x, y;

	if (json_is_integer(a) && json_is_integer(b)) {
		json_int_t i = json_integer_value(a), j = json_integer_value(b);
		return i < j ? -1 : i > j;
	}
	x = json_number_value(a);
	y = json_number_value(b);
	return x < y ? -1 : x > y;
}

/*
 * Equality walk; ev (may be NULL: unbounded) is charged a step per pair of
 * elements or members and a step per 16 bytes of strings compared, so that
 * values sharing parts (`[@,@]` repeated) cannot make it walk for ever.
 */
static int equal_walk(struct jp_ev *ev, const json_t *a, const json_t *b, int depth, bool *eq)
{
	size_t i, n;
	const char *k;
	json_t *va;
	int rc;

	*eq = false;
	if (!a || !b)
		return 0;
	if (a == b) {
		*eq = true;
		return 0;
	}
	if (depth > JP_MAX_VALUE_DEPTH)
		return 0;
	if (is_number(a) && is_number(b)) {
		*eq = num_cmp(a, b) == 0;
		return 0;
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		n = json_string_length(a);
		if (n != json_string_length(b))
			return 0;
		if (ev && n >= 16 && (rc = jp_charge(ev, n / 16)))
			return rc;
		*eq = memcmp(json_string_value(a), json_string_value(b), n) == 0;
		return 0;
	case JSON_ARRAY:
		n = json_array_size(a);
		if (n != json_array_size(b))
			return 0;
		for (i = 0; i < n; i++) {
			if (ev && (rc = jp_charge(ev, 1)))
				return rc;
			rc = equal_walk(ev, json_array_get(a, i), json_array_get(b, i), depth + 1,
					eq);
			if (rc || !*eq)
				return rc;
		}
		*eq = true;
		return 0;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach(jp_mut(a), k, va)
		{
			if (ev && (rc = jp_charge(ev, 1)))
				return rc;
			rc = equal_walk(ev, va, json_object_get(b, k), depth + 1, eq);
			if (rc || !*eq)
				return rc;
		}
		*eq = true;
		return 0;
	default:
		*eq = true; /* true, false, null: same type */
		return 0;
	}
}

bool jp_equal(const json_t *a, const json_t *b)
{
	bool eq;

	equal_walk(NULL, a, b, 0, &eq);
	return eq;
}

int jp_ev_equal(struct jp_ev *ev, const json_t *a, const json_t *b, bool *eq)
{
	return equal_walk(ev, a, b, 0, eq);
}

/*
 * Writing JSON text with a bound: a value's text goes to out until out
 * holds more than limit bytes. Every value written adds at least one byte,
 * so the walk stops after at most limit values whatever the value's logical
 * size.
 */
struct dump {
	struct gv_buf *out;
	unsigned flags;
	size_t limit;	   /* most bytes out may hold */
	size_t values;	   /* values written */
	size_t max_values; /* most values to write */
};

static bool dump_string(struct dump *d, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	struct gv_buf *out = d->out;
	size_t i, start = 0;
	unsigned char c;

	if (n > d->limit || out->len > d->limit - n) /* at least n bytes */
		return false;
	gv_buf_addc(out, '"');
	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[7];
		size_t skip = 1;

		if (c == '"')
			esc = "\\\"";
		else if (c == '\\')
			esc = "\\\\";
		else if (c == '\n')
			esc = "\\n";
		else if (c == '\r')
			esc = "\\r";
		else if (c == '\t')
			esc = "\\t";
		else if (c < 0x20 ||
			 ((d->flags & JP_DUMP_HTML_ESCAPE) && (c == '<' || c == '>' || c == '&'))) {
			u[0] = '\\';
			u[1] = 'u';
			u[2] = '0';
			u[3] = '0';
			u[4] = hex[c >> 4];
			u[5] = hex[c & 15];
			u[6] = '\0';
			esc = u;
		} else if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
			   ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) {
			esc = (unsigned char)s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
			skip = 3;
		}
		if (!esc)
			continue;
		gv_buf_add(out, s + start, i - start);
		gv_buf_adds(out, esc);
		i += skip - 1;
		start = i + 1;
	}
	gv_buf_add(out, s + start, n - start);
	gv_buf_addc(out, '"');
	return out->len <= d->limit;
}

static bool dump_walk(struct dump *d, const json_t *v, int depth)
{
	struct gv_buf *out = d->out;
	size_t i, n;
	const char *k;
	json_t *x;
	bool ok = true;

	if (out->len > d->limit || ++d->values > d->max_values)
		return false;
	if (depth > JP_MAX_VALUE_DEPTH) {
		gv_buf_adds(out, "null");
		return out->len <= d->limit;
	}
	switch (json_typeof(v)) {
	case JSON_NULL:
		gv_buf_adds(out, "null");
		break;
	case JSON_TRUE:
		gv_buf_adds(out, "true");
		break;
	case JSON_FALSE:
		gv_buf_adds(out, "false");
		break;
	case JSON_INTEGER:
		gv_buf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		jp_format_double(json_real_value(v), 'j', 64, out);
		break;
	case JSON_STRING:
		return dump_string(d, json_string_value(v), json_string_length(v));
	case JSON_ARRAY:
		gv_buf_addc(out, '[');
		n = json_array_size(v);
		for (i = 0; i < n && ok; i++) {
			if (i)
				gv_buf_addc(out, ',');
			ok = dump_walk(d, json_array_get(v, i), depth + 1);
		}
		if (!ok)
			return false;
		gv_buf_addc(out, ']');
		break;
	case JSON_OBJECT:
		gv_buf_addc(out, '{');
		if (d->flags & JP_DUMP_SORT_KEYS) {
			const char **keys;
			n = json_object_size(v);
			keys = gv_xmalloc((n ? n : 1) * sizeof(*keys));
			i = 0;
			json_object_foreach(jp_mut(v), k, x)
			{
				keys[i++] = k;
			}
			qsort(keys, n, sizeof(*keys), gv_strptr_cmp);
			for (i = 0; i < n && ok; i++) {
				if (i)
					gv_buf_addc(out, ',');
				ok = dump_string(d, keys[i], strlen(keys[i]));
				gv_buf_addc(out, ':');
				ok = ok && dump_walk(d, json_object_get(v, keys[i]), depth + 1);
			}
			free(keys);
		} else {
			i = 0;
			json_object_foreach(jp_mut(v), k, x)
			{
				if (i++)
					gv_buf_addc(out, ',');
				ok = dump_string(d, k, strlen(k));
				gv_buf_addc(out, ':');
				if (!ok || !dump_walk(d, x, depth + 1))
					return false;
			}
		}
		if (!ok)
			return false;
		gv_buf_addc(out, '}');
		break;
	}
	return out->len <= d->limit;
}

void jp_dump(const json_t *v, struct gv_buf *out, unsigned flags)
{
	struct dump d = {out, flags, SIZE_MAX, 0, SIZE_MAX};

	dump_walk(&d, v ? v : json_null(), 0);
}

/*
 * Appends at most max bytes and max_values values (*values: how many were
 * written); false, out back to its length on entry, past either.
 */
static bool dump_bounded(const json_t *v, struct gv_buf *out, unsigned flags, size_t max,
			 size_t max_values, size_t *values)
{
	size_t start = out->len;
	struct dump d = {out, flags, max > SIZE_MAX - start ? SIZE_MAX : start + max, 0,
			 max_values};
	bool ok = dump_walk(&d, v ? v : json_null(), 0);

	if (values)
		*values = d.values;
	if (ok)
		return true;
	out->len = start;
	if (out->data)
		out->data[start] = '\0';
	return false;
}

bool jp_dump_max(const json_t *v, struct gv_buf *out, unsigned flags, size_t max)
{
	return dump_bounded(v, out, flags, max, SIZE_MAX, NULL);
}

/* ------------------------------------------------------------------ */
/* Lexer                                                                */

enum tok {
	T_EOF,
	T_UNQUOTED,
	T_QUOTED,
	T_LITERAL, /* `json` or 'raw string' */
	T_NUMBER,
	T_DOT,
	T_STAR,
	T_FLATTEN,
	T_FILTER,
	T_LBRACKET,
	T_RBRACKET,
	T_LBRACE,
	T_RBRACE,
	T_LPAREN,
	T_RPAREN,
	T_COMMA,
	T_COLON,
	T_PIPE,
	T_OR,
	T_AND,
	T_NOT,
	T_EXPREF,
	T_CURRENT,
	T_EQ,
	T_NE,
	T_LT,
	T_LE,
	T_GT,
	T_GE,
};

static const char *tok_name(enum tok t)
{
	static const char *names[] = {
	    [T_EOF] = "end of expression",
	    [T_UNQUOTED] = "identifier",
	    [T_QUOTED] = "quoted identifier",
	    [T_LITERAL] = "literal",
	    [T_NUMBER] = "number",
	    [T_DOT] = "'.'",
	    [T_STAR] = "'*'",
	    [T_FLATTEN] = "'[]'",
	    [T_FILTER] = "'[?'",
	    [T_LBRACKET] = "'['",
	    [T_RBRACKET] = "']'",
	    [T_LBRACE] = "'{'",
	    [T_RBRACE] = "'}'",
	    [T_LPAREN] = "'('",
	    [T_RPAREN] = "')'",
	    [T_COMMA] = "','",
	    [T_COLON] = "':'",
	    [T_PIPE] = "'|'",
	    [T_OR] = "'||'",
	    [T_AND] = "'&&'",
	    [T_NOT] = "'!'",
	    [T_EXPREF] = "'&'",
	    [T_CURRENT] = "'@'",
	    [T_EQ] = "'=='",
	    [T_NE] = "'!='",
	    [T_LT] = "'<'",
	    [T_LE] = "'<='",
	    [T_GT] = "'>'",
	    [T_GE] = "'>='",
	};
	return names[t];
}

struct token {
	enum tok t;
	int pos;
	char *str; /* owned: identifier name */
	size_t len;
	json_t *lit; /* owned: literal value */
	long long num;
};

struct parser {
	const char *src;
	size_t n;
	struct token *toks; /* owned */
	size_t ntoks, cap, i;
	int depth;
	bool kyverno;
	struct jp_error *e;
};

static int syntax_error(struct parser *p, enum jp_error_kind kind, int pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int syntax_error(struct parser *p, enum jp_error_kind kind, int pos, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->e->kind == JP_ERR_NONE) {
		p->e->kind = kind;
		p->e->pos = pos;
		snprintf(p->e->msg, sizeof(p->e->msg), "%s at position %d", msg, pos);
	}
	return kind;
}

static struct token *tok_push(struct parser *p, enum tok t, int pos)
{
	struct token *k;

	if (p->ntoks == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->toks = gv_xrealloc(p->toks, p->cap * sizeof(*p->toks));
	}
	k = &p->toks[p->ntoks++];
	memset(k, 0, sizeof(*k));
	k->t = t;
	k->pos = pos;
	return k;
}

/* Position just after the closing delimiter `end`, skipping \x escapes; 0 when unterminated. */
static size_t scan_delimited(const char *s, size_t n, size_t i, char end)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n)
			i++;
		else if (s[i] == end)
			return i + 1;
	}
	return 0;
}

static int lex_quoted(struct parser *p, size_t *ip)
{
	size_t i = *ip, end;
	json_t *v;
	json_error_t jerr;
	struct token *k;

	end = scan_delimited(p->src, p->n, i, '"');
	if (!end)
		return syntax_error(p, JP_ERR_SYNTAX, (int)i, "unterminated quoted identifier");
	v = json_loadb(p->src + i, end - i, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!v || !json_is_string(v)) {
		json_decref(v);
		return syntax_error(p, JP_ERR_SYNTAX, (int)i, "invalid quoted identifier");
	}
	k = tok_push(p, T_QUOTED, (int)i);
	k->len = json_string_length(v);
	k->str = gv_xstrndup(json_string_value(v), k->len);
	json_decref(v);
	*ip = end;
	return 0;
}

static int lex_raw_string(struct parser *p, size_t *ip)
{
	size_t i = *ip, end, j;
	struct gv_buf b = {0};
	struct token *k;
	json_t *v;

	end = scan_delimited(p->src, p->n, i, '\'');
	if (!end)
		return syntax_error(p, JP_ERR_SYNTAX, (int)i, "unterminated raw string literal");
	/* Only \' is an escape in a raw string; every other backslash is kept. */
	for (j = i + 1; j < end - 1; j++) {
		if (p->src[j] == '\\' && j + 1 < end - 1 && p->src[j + 1] == '\'') {
			gv_buf_addc(&b, '\'');
			j++;
		} else {
			gv_buf_addc(&b, p->src[j]);
		}
	}
	v = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	if (!v)
		return syntax_error(p, JP_ERR_SYNTAX, (int)i,
				    "invalid UTF-8 in raw string literal");
	k = tok_push(p, T_LITERAL, (int)i);
	k->lit = v;
	*ip = end;
	return 0;
}

static int lex_json_literal(struct parser *p, size_t *ip)
{
	size_t i = *ip, end, j;
	struct gv_buf b = {0};
	json_error_t jerr;
	struct token *k;
	json_t *v;

	end = scan_delimited(p->src, p->n, i, '`');
	if (!end)
		return syntax_error(p, JP_ERR_SYNTAX, (int)i, "unterminated JSON literal");
	for (j = i + 1; j < end - 1; j++) {
		if (p->src[j] == '\\' && j + 1 < end - 1 && p->src[j + 1] == '`') {
			gv_buf_addc(&b, '`');
			j++;
		} else {
			gv_buf_addc(&b, p->src[j]);
		}
	}
	v = json_loadb(gv_buf_str(&b), b.len, JSON_DECODE_ANY, &jerr);
	if (!v) /* integers beyond int64 */
		v = json_loadb(gv_buf_str(&b), b.len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL,
			       &jerr);
	gv_buf_release(&b);
	if (!v)
		return syntax_error(p, JP_ERR_SYNTAX, (int)i, "invalid JSON literal: %s",
				    jerr.text);
	k = tok_push(p, T_LITERAL, (int)i);
	k->lit = v;
	*ip = end;
	return 0;
}

static int lex(struct parser *p)
{
	const char *s = p->src;
	size_t n = p->n, i = 0, j;
	int rc;
	struct token *k;

	while (i < n) {
		char c = s[i];
		char d = i + 1 < n ? s[i + 1] : '\0';
		int pos = (int)i;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			i++;
			continue;
		}
		if (isalpha((unsigned char)c) || c == '_') {
			for (j = i + 1; j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'); j++)
				;
			k = tok_push(p, T_UNQUOTED, pos);
			k->str = gv_xstrndup(s + i, j - i);
			k->len = j - i;
			i = j;
			continue;
		}
		if (isdigit((unsigned char)c) || (c == '-' && isdigit((unsigned char)d))) {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(s + i, &end, 10);
			if (errno)
				return syntax_error(p, JP_ERR_SYNTAX, pos, "number out of range");
			k = tok_push(p, T_NUMBER, pos);
			k->num = v;
			i = (size_t)(end - s);
			continue;
		}
		switch (c) {
		case '"':
			rc = lex_quoted(p, &i);
			if (rc)
				return rc;
			continue;
		case '\'':
			rc = lex_raw_string(p, &i);
			if (rc)
				return rc;
			continue;
		case '`':
			rc = lex_json_literal(p, &i);
			if (rc)
				return rc;
			continue;
		case '.':
			tok_push(p, T_DOT, pos);
			break;
		case '*':
			tok_push(p, T_STAR, pos);
			break;
		case '[':
			if (d == ']') {
				tok_push(p, T_FLATTEN, pos);
				i++;
			} else if (d == '?') {
				tok_push(p, T_FILTER, pos);
				i++;
			} else {
				tok_push(p, T_LBRACKET, pos);
			}
			break;
		case ']':
			tok_push(p, T_RBRACKET, pos);
			break;
		case '{':
			tok_push(p, T_LBRACE, pos);
			break;
		case '}':
			tok_push(p, T_RBRACE, pos);
			break;
		case '(':
			tok_push(p, T_LPAREN, pos);
			break;
		case ')':
			tok_push(p, T_RPAREN, pos);
			break;
		case ',':
			tok_push(p, T_COMMA, pos);
			break;
		case ':':
			tok_push(p, T_COLON, pos);
			break;
		case '@':
			tok_push(p, T_CURRENT, pos);
			break;
		case '|':
			if (d == '|') {
				tok_push(p, T_OR, pos);
				i++;
			} else {
				tok_push(p, T_PIPE, pos);
			}
			break;
		case '&':
			if (d == '&') {
				tok_push(p, T_AND, pos);
				i++;
			} else {
				tok_push(p, T_EXPREF, pos);
			}
			break;
		case '!':
			if (d == '=') {
				tok_push(p, T_NE, pos);
				i++;
			} else {
				tok_push(p, T_NOT, pos);
			}
			break;
		case '=':
			if (d != '=')
				return syntax_error(p, JP_ERR_SYNTAX, pos,
						    "unexpected '=' (did you mean '=='?)");
			tok_push(p, T_EQ, pos);
			i++;
			break;
		case '<':
			if (d == '=') {
				tok_push(p, T_LE, pos);
				i++;
			} else {
				tok_push(p, T_LT, pos);
			}
			break;
		case '>':
			if (d == '=') {
				tok_push(p, T_GE, pos);
				i++;
			} else {
				tok_push(p, T_GT, pos);
			}
			break;
		default:
			if ((unsigned char)c >= 0x80)
				return syntax_error(p, JP_ERR_SYNTAX, pos,
						    "unexpected character (quote non-ASCII names)");
			return syntax_error(p, JP_ERR_SYNTAX, pos, "unexpected character '%c'", c);
		}
		i++;
	}
	tok_push(p, T_EOF, (int)n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tree                                                                 */

static void node_free(struct jp_node *n)
{
	int i;

	if (!n)
		return;
	for (i = 0; i < n->nkids; i++) {
		node_free(n->kids[i]);
		if (n->keys)
			free(n->keys[i]);
	}
	free(n->kids);
	free(n->keys);
	json_decref(n->lit);
	free(n->name);
	if (n->aux && n->aux_free)
		n->aux_free(n->aux);
	free(n);
}

static struct jp_node *node_new(enum jp_node_type type, int pos)
{
	struct jp_node *n = gv_xcalloc(1, sizeof(*n));

	n->type = type;
	n->pos = pos;
	n->height = 1;
	return n;
}

/* Adds kid (taken) to n; fails when the tree grows too tall. */
static int node_add(struct parser *p, struct jp_node *n, struct jp_node *kid)
{
	n->kids = gv_xrealloc(n->kids, ((size_t)n->nkids + 1) * sizeof(*n->kids));
	n->kids[n->nkids++] = kid;
	if (kid && kid->height + 1 > n->height)
		n->height = kid->height + 1;
	if (n->height > JP_MAX_AST_DEPTH)
		return syntax_error(p, JP_ERR_LIMIT, n->pos,
				    "expression nested too deeply (limit %d)", JP_MAX_AST_DEPTH);
	return 0;
}

/* Builds type(a, b[, c]) taking the kids; on error frees everything. */
static int node_make(struct parser *p, enum jp_node_type type, int pos, struct jp_node **out,
		     struct jp_node *a, struct jp_node *b, struct jp_node *c)
{
	struct jp_node *n = node_new(type, pos);
	int rc = 0;

	*out = NULL;
	rc = node_add(p, n, a);
	a = NULL;
	if (!rc && b) {
		rc = node_add(p, n, b);
		b = NULL;
	}
	if (!rc && c) {
		rc = node_add(p, n, c);
		c = NULL;
	}
	node_free(b);
	node_free(c);
	if (rc) {
		node_free(n);
		return rc;
	}
	*out = n;
	return 0;
}

/* left.right where a chain absorbs the new link. */
static int chain_append(struct parser *p, struct jp_node *left, struct jp_node *right,
			struct jp_node **out)
{
	int rc;

	if (left->type == JN_CHAIN) {
		rc = node_add(p, left, right);
		if (rc) {
			node_free(left);
			return rc;
		}
		*out = left;
		return 0;
	}
	return node_make(p, JN_CHAIN, left->pos, out, left, right, NULL);
}

/* ------------------------------------------------------------------ */
/* Parser (Pratt, binding powers of the reference implementation)       */

#define BP_PROJECTION_STOP 10

static int bp_of(enum tok t)
{
	switch (t) {
	case T_PIPE:
		return 1;
	case T_OR:
		return 2;
	case T_AND:
		return 3;
	case T_EQ:
	case T_NE:
	case T_LT:
	case T_LE:
	case T_GT:
	case T_GE:
		return 5;
	case T_FLATTEN:
		return 9;
	case T_STAR:
		return 20;
	case T_FILTER:
		return 21;
	case T_DOT:
		return 40;
	case T_NOT:
		return 45;
	case T_LBRACE:
		return 50;
	case T_LBRACKET:
		return 55;
	case T_LPAREN:
		return 60;
	default:
		return 0;
	}
}

static struct token *cur_tok(struct parser *p)
{
	return &p->toks[p->i];
}

static enum tok cur(struct parser *p)
{
	return p->toks[p->i].t;
}

static enum tok peek(struct parser *p, size_t k)
{
	size_t j = p->i + k;
	return j < p->ntoks ? p->toks[j].t : T_EOF;
}

static void advance(struct parser *p)
{
	if (p->i + 1 < p->ntoks)
		p->i++;
}

static int unexpected(struct parser *p)
{
	struct token *k = cur_tok(p);

	if (k->t == T_EOF)
		return syntax_error(p, JP_ERR_SYNTAX, k->pos, "unexpected end of expression");
	return syntax_error(p, JP_ERR_SYNTAX, k->pos, "unexpected %s", tok_name(k->t));
}

static int expect(struct parser *p, enum tok t)
{
	if (cur(p) != t) {
		struct token *k = cur_tok(p);
		return syntax_error(p, JP_ERR_SYNTAX, k->pos, "expected %s, got %s", tok_name(t),
				    tok_name(k->t));
	}
	advance(p);
	return 0;
}

static int parse_expr(struct parser *p, int rbp, struct jp_node **out);

static struct jp_node *current_node(int pos)
{
	return node_new(JN_CURRENT, pos);
}

static int parse_multi_list(struct parser *p, int pos, struct jp_node **out)
{
	struct jp_node *n = node_new(JN_MULTI_LIST, pos), *kid;
	int rc;

	for (;;) {
		rc = parse_expr(p, 0, &kid);
		if (rc)
			goto fail;
		rc = node_add(p, n, kid);
		if (rc)
			goto fail;
		if (cur(p) == T_RBRACKET)
			break;
		rc = expect(p, T_COMMA);
		if (rc)
			goto fail;
	}
	advance(p);
	*out = n;
	return 0;
fail:
	node_free(n);
	return rc;
}

static int parse_multi_hash(struct parser *p, int pos, struct jp_node **out)
{
	struct jp_node *n = node_new(JN_MULTI_HASH, pos), *kid;
	struct token *k;
	char *key;
	int rc;

	for (;;) {
		k = cur_tok(p);
		if (k->t != T_UNQUOTED && k->t != T_QUOTED) {
			rc = syntax_error(p, JP_ERR_SYNTAX, k->pos, "expected a key name, got %s",
					  tok_name(k->t));
			goto fail;
		}
		key = k->str;
		k->str = NULL;
		advance(p);
		rc = expect(p, T_COLON);
		if (!rc)
			rc = parse_expr(p, 0, &kid);
		if (rc) {
			free(key);
			goto fail;
		}
		n->keys = gv_xrealloc(n->keys, ((size_t)n->nkids + 1) * sizeof(*n->keys));
		n->keys[n->nkids] = key;
		rc = node_add(p, n, kid);
		if (rc)
			goto fail;
		if (cur(p) == T_COMMA) {
			advance(p);
			continue;
		}
		if (cur(p) == T_RBRACE) {
			advance(p);
			break;
		}
		rc = unexpected(p);
		goto fail;
	}
	*out = n;
	return 0;
fail:
	node_free(n);
	return rc;
}

/* [number], [start:stop:step]; the '[' is consumed. */
static int parse_index(struct parser *p, struct jp_node **out)
{
	struct token *k = cur_tok(p);
	struct jp_node *n;
	int part = 0, pos = k->pos;

	if (!(cur(p) == T_COLON || peek(p, 1) == T_COLON)) {
		n = node_new(JN_INDEX, pos);
		n->idx = k->num;
		advance(p);
		if (expect(p, T_RBRACKET)) {
			node_free(n);
			return JP_ERR_SYNTAX;
		}
		*out = n;
		return 0;
	}
	n = node_new(JN_SLICE, pos);
	while (cur(p) != T_RBRACKET) {
		if (cur(p) == T_COLON) {
			part++;
			if (part > 2) {
				node_free(n);
				return syntax_error(p, JP_ERR_SYNTAX, cur_tok(p)->pos,
						    "too many ':' in slice");
			}
			advance(p);
		} else if (cur(p) == T_NUMBER && !n->has[part]) {
			n->slice[part] = cur_tok(p)->num;
			n->has[part] = true;
			advance(p);
		} else {
			node_free(n);
			return unexpected(p);
		}
	}
	advance(p);
	if (n->has[2] && n->slice[2] == 0) {
		node_free(n);
		return syntax_error(p, JP_ERR_INVALID_VALUE, pos, "slice step cannot be 0");
	}
	*out = n;
	return 0;
}

static int parse_dot_rhs(struct parser *p, int rbp, struct jp_node **out)
{
	int pos = cur_tok(p)->pos;

	switch (cur(p)) {
	case T_UNQUOTED:
	case T_QUOTED:
	case T_STAR:
		return parse_expr(p, rbp, out);
	case T_LBRACKET:
		advance(p);
		return parse_multi_list(p, pos, out);
	case T_LBRACE:
		advance(p);
		return parse_multi_hash(p, pos, out);
	default:
		return syntax_error(p, JP_ERR_SYNTAX, pos,
				    "expected an identifier, '*', '[' or '{' after '.', got %s",
				    tok_name(cur(p)));
	}
}

static int parse_projection_rhs(struct parser *p, int rbp, struct jp_node **out)
{
	if (bp_of(cur(p)) < BP_PROJECTION_STOP) {
		*out = current_node(cur_tok(p)->pos);
		return 0;
	}
	switch (cur(p)) {
	case T_LBRACKET:
	case T_FILTER:
		return parse_expr(p, rbp, out);
	case T_DOT:
		advance(p);
		return parse_dot_rhs(p, rbp, out);
	default:
		return unexpected(p);
	}
}

/* left[? cond ] rhs; the '[?' is consumed. */
static int parse_filter(struct parser *p, struct jp_node *left, int pos, struct jp_node **out)
{
	struct jp_node *cond = NULL, *right = NULL;
	int rc;

	rc = parse_expr(p, 0, &cond);
	if (!rc)
		rc = expect(p, T_RBRACKET);
	if (rc)
		goto fail;
	if (cur(p) == T_FLATTEN)
		right = current_node(pos);
	else
		rc = parse_projection_rhs(p, bp_of(T_FILTER), &right);
	if (rc)
		goto fail;
	return node_make(p, JN_FILTER, pos, out, left, right, cond);
fail:
	node_free(left);
	node_free(cond);
	return rc;
}

/* A projection of left over rhs parsed at rbp (left taken). */
static int make_projection(struct parser *p, enum jp_node_type type, struct jp_node *left, int rbp,
			   int pos, struct jp_node **out)
{
	struct jp_node *right;
	int rc;

	rc = parse_projection_rhs(p, rbp, &right);
	if (rc) {
		node_free(left);
		return rc;
	}
	return node_make(p, type, pos, out, left, right, NULL);
}

static int nud(struct parser *p, struct jp_node **out)
{
	struct token *k = cur_tok(p);
	struct jp_node *n, *left, *right;
	int pos = k->pos, rc;

	advance(p);
	switch (k->t) {
	case T_LITERAL:
		n = node_new(JN_LITERAL, pos);
		n->lit = k->lit;
		k->lit = NULL;
		*out = n;
		return 0;
	case T_UNQUOTED:
	case T_QUOTED:
		if (k->t == T_QUOTED && cur(p) == T_LPAREN)
			return syntax_error(p, JP_ERR_SYNTAX, pos,
					    "quoted identifiers cannot name functions");
		n = node_new(JN_FIELD, pos);
		n->name = k->str;
		n->name_len = k->len;
		k->str = NULL;
		*out = n;
		return 0;
	case T_STAR:
		left = current_node(pos);
		if (cur(p) == T_RBRACKET) {
			right = current_node(pos);
			return node_make(p, JN_VALUE_PROJECTION, pos, out, left, right, NULL);
		}
		return make_projection(p, JN_VALUE_PROJECTION, left, bp_of(T_STAR), pos, out);
	case T_FILTER:
		return parse_filter(p, current_node(pos), pos, out);
	case T_LBRACE:
		return parse_multi_hash(p, pos, out);
	case T_LPAREN:
		rc = parse_expr(p, 0, &n);
		if (rc)
			return rc;
		rc = expect(p, T_RPAREN);
		if (rc) {
			node_free(n);
			return rc;
		}
		*out = n;
		return 0;
	case T_FLATTEN:
		rc = node_make(p, JN_FLATTEN, pos, &left, current_node(pos), NULL, NULL);
		if (rc)
			return rc;
		return make_projection(p, JN_PROJECTION, left, bp_of(T_FLATTEN), pos, out);
	case T_NOT:
		rc = parse_expr(p, bp_of(T_NOT), &n);
		if (rc)
			return rc;
		return node_make(p, JN_NOT, pos, out, n, NULL, NULL);
	case T_LBRACKET:
		if (cur(p) == T_NUMBER || cur(p) == T_COLON) {
			rc = parse_index(p, &right);
			if (rc)
				return rc;
			if (right->type == JN_SLICE)
				return make_projection(p, JN_PROJECTION, right, bp_of(T_STAR), pos,
						       out);
			*out = right;
			return 0;
		}
		if (cur(p) == T_STAR && peek(p, 1) == T_RBRACKET) {
			advance(p);
			advance(p);
			return make_projection(p, JN_PROJECTION, current_node(pos), bp_of(T_STAR),
					       pos, out);
		}
		return parse_multi_list(p, pos, out);
	case T_CURRENT:
		*out = current_node(pos);
		return 0;
	case T_EXPREF:
		rc = parse_expr(p, 0, &n);
		if (rc)
			return rc;
		return node_make(p, JN_EXPREF, pos, out, n, NULL, NULL);
	case T_EOF:
		return syntax_error(p, JP_ERR_SYNTAX, pos, "unexpected end of expression");
	default:
		return syntax_error(p, JP_ERR_SYNTAX, pos, "unexpected %s", tok_name(k->t));
	}
}

static const struct jp_func *func_find(const char *name, bool kyverno);

static int parse_call(struct parser *p, struct jp_node *left, int pos, struct jp_node **out)
{
	struct jp_node *n = NULL, *arg;
	const struct jp_func *fn;
	int rc;

	if (left->type != JN_FIELD || !left->name || strlen(left->name) != left->name_len) {
		rc = syntax_error(p, JP_ERR_SYNTAX, pos, "invalid function name");
		node_free(left);
		return rc;
	}
	n = node_new(JN_FUNCTION, left->pos);
	n->name = left->name;
	n->name_len = left->name_len;
	left->name = NULL;
	node_free(left);
	while (cur(p) != T_RPAREN) {
		rc = parse_expr(p, 0, &arg);
		if (rc)
			goto fail;
		rc = node_add(p, n, arg);
		if (rc)
			goto fail;
		if (cur(p) == T_COMMA) {
			advance(p);
			if (cur(p) == T_RPAREN) {
				rc = unexpected(p);
				goto fail;
			}
		} else if (cur(p) != T_RPAREN) {
			rc = unexpected(p);
			goto fail;
		}
	}
	advance(p);
	fn = func_find(n->name, p->kyverno);
	if (!fn) {
		rc = syntax_error(p, JP_ERR_UNKNOWN_FUNCTION, n->pos, "unknown function: %s()",
				  n->name);
		goto fail;
	}
	if (n->nkids < fn->min_args || (fn->max_args >= 0 && n->nkids > fn->max_args)) {
		if (fn->max_args < 0)
			rc = syntax_error(p, JP_ERR_INVALID_ARITY, n->pos,
					  "%s() takes at least %d argument%s, got %d", fn->name,
					  fn->min_args, fn->min_args == 1 ? "" : "s", n->nkids);
		else if (fn->min_args == fn->max_args)
			rc = syntax_error(p, JP_ERR_INVALID_ARITY, n->pos,
					  "%s() takes %d argument%s, got %d", fn->name,
					  fn->min_args, fn->min_args == 1 ? "" : "s", n->nkids);
		else
			rc = syntax_error(p, JP_ERR_INVALID_ARITY, n->pos,
					  "%s() takes %d to %d arguments, got %d", fn->name,
					  fn->min_args, fn->max_args, n->nkids);
		goto fail;
	}
	n->fn = fn;
	if (fn->prepare)
		fn->prepare(n);
	*out = n;
	return 0;
fail:
	node_free(n);
	return rc;
}

static int led(struct parser *p, struct jp_node *left, struct jp_node **out)
{
	struct token *k = cur_tok(p);
	enum tok t = k->t;
	struct jp_node *right;
	int pos = k->pos, rc;
	enum jp_node_type type;

	advance(p);
	switch (t) {
	case T_DOT:
		if (cur(p) == T_STAR) {
			advance(p);
			return make_projection(p, JN_VALUE_PROJECTION, left, bp_of(T_DOT), pos,
					       out);
		}
		rc = parse_dot_rhs(p, bp_of(T_DOT), &right);
		if (rc)
			goto fail;
		return chain_append(p, left, right, out);
	case T_PIPE:
	case T_OR:
	case T_AND:
		type = t == T_PIPE ? JN_PIPE : t == T_OR ? JN_OR : JN_AND;
		rc = parse_expr(p, bp_of(t), &right);
		if (rc)
			goto fail;
		return node_make(p, type, pos, out, left, right, NULL);
	case T_LPAREN:
		return parse_call(p, left, pos, out);
	case T_FILTER:
		return parse_filter(p, left, pos, out);
	case T_EQ:
	case T_NE:
	case T_LT:
	case T_LE:
	case T_GT:
	case T_GE:
		rc = parse_expr(p, bp_of(t), &right);
		if (rc)
			goto fail;
		rc = node_make(p, JN_CMP, pos, out, left, right, NULL);
		if (!rc)
			(*out)->op = t == T_EQ	 ? JC_EQ
				     : t == T_NE ? JC_NE
				     : t == T_LT ? JC_LT
				     : t == T_LE ? JC_LE
				     : t == T_GT ? JC_GT
						 : JC_GE;
		return rc;
	case T_FLATTEN:
		rc = node_make(p, JN_FLATTEN, pos, &right, left, NULL, NULL);
		if (rc)
			return rc;
		return make_projection(p, JN_PROJECTION, right, bp_of(T_FLATTEN), pos, out);
	case T_LBRACKET:
		if (cur(p) == T_NUMBER || cur(p) == T_COLON) {
			rc = parse_index(p, &right);
			if (rc)
				goto fail;
			if (right->type == JN_SLICE) {
				rc = chain_append(p, left, right, &left);
				if (rc)
					return rc;
				return make_projection(p, JN_PROJECTION, left, bp_of(T_STAR), pos,
						       out);
			}
			return chain_append(p, left, right, out);
		}
		rc = expect(p, T_STAR);
		if (!rc)
			rc = expect(p, T_RBRACKET);
		if (rc)
			goto fail;
		return make_projection(p, JN_PROJECTION, left, bp_of(T_STAR), pos, out);
	default:
		p->i--;
		rc = unexpected(p);
		goto fail;
	}
fail:
	node_free(left);
	return rc;
}

static int parse_expr(struct parser *p, int rbp, struct jp_node **out)
{
	struct jp_node *left;
	int rc;

	if (++p->depth > JP_MAX_AST_DEPTH) {
		p->depth--;
		return syntax_error(p, JP_ERR_LIMIT, cur_tok(p)->pos,
				    "expression nested too deeply (limit %d)", JP_MAX_AST_DEPTH);
	}
	rc = nud(p, &left);
	while (!rc && rbp < bp_of(cur(p)))
		rc = led(p, left, &left);
	p->depth--;
	if (rc)
		return rc;
	*out = left;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Compiled expressions                                                 */

struct jp_expr {
	char *src;	      /* owned */
	struct jp_node *root; /* owned */
	bool kyverno;
	unsigned long max_steps;
};

struct jp_expr *jp_compile(const char *src, const struct jp_options *opt, struct jp_error *e)
{
	struct jp_error local;
	struct parser p;
	struct jp_node *root = NULL;
	struct jp_expr *x = NULL;
	size_t i;
	int rc;

	if (!e)
		e = &local;
	memset(e, 0, sizeof(*e));
	e->pos = -1;
	memset(&p, 0, sizeof(p));
	p.src = src;
	p.n = strlen(src);
	p.kyverno = opt && opt->kyverno;
	p.e = e;
	if (p.n > JP_MAX_SRC_LEN) {
		syntax_error(&p, JP_ERR_LIMIT, 0, "expression longer than %u bytes",
			     JP_MAX_SRC_LEN);
		goto out;
	}
	rc = lex(&p);
	if (rc)
		goto out;
	rc = parse_expr(&p, 0, &root);
	if (rc)
		goto out;
	if (cur(&p) != T_EOF) {
		unexpected(&p);
		node_free(root);
		root = NULL;
		goto out;
	}
	x = gv_xcalloc(1, sizeof(*x));
	x->src = gv_xstrdup(src);
	x->root = root;
	x->kyverno = p.kyverno;
	x->max_steps = opt && opt->max_steps ? opt->max_steps : JP_DEFAULT_MAX_STEPS;
out:
	for (i = 0; i < p.ntoks; i++) {
		free(p.toks[i].str);
		json_decref(p.toks[i].lit);
	}
	free(p.toks);
	return x;
}

void jp_free(struct jp_expr *x)
{
	if (!x)
		return;
	node_free(x->root);
	free(x->src);
	free(x);
}

const char *jp_source(const struct jp_expr *x)
{
	return x->src;
}

/* ------------------------------------------------------------------ */
/* Evaluator                                                            */

static int eval(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out);

/* Evaluates where Kyverno's fork absorbs a missing key into null. */
static int eval_soft(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	int rc = eval(ev, n, cur, out);

	if (rc == JP_ERR_UNKNOWN_KEY) {
		ev->e->kind = JP_ERR_NONE;
		ev->e->msg[0] = '\0';
		*out = json_null();
		return 0;
	}
	return rc;
}

static int field_get(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	json_t *v;

	if (!json_is_object(cur)) {
		*out = json_null();
		return 0;
	}
	v = json_object_getn(cur, n->name, n->name_len);
	if (!v) {
		if (ev->kyverno)
			return jp_fail(ev, JP_ERR_UNKNOWN_KEY, "Unknown key \"%s\" in path",
				       n->name);
		*out = json_null();
		return 0;
	}
	*out = json_incref(v);
	return 0;
}

static json_t *index_get(json_t *cur, long long idx)
{
	size_t len;

	if (!json_is_array(cur))
		return json_null();
	len = json_array_size(cur);
	if (idx < 0)
		idx += (long long)len;
	if (idx < 0 || (size_t)idx >= len)
		return json_null();
	return json_incref(json_array_get(cur, (size_t)idx));
}

static int slice_get(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	long long len, start, stop, step, i;
	json_t *res;
	int rc;

	if (!json_is_array(cur)) {
		*out = json_null();
		return 0;
	}
	len = (long long)json_array_size(cur);
	step = n->has[2] ? n->slice[2] : 1;
	if (step > 0) {
		start = n->has[0] ? n->slice[0] : 0;
		stop = n->has[1] ? n->slice[1] : len;
		if (start < 0)
			start = start + len < 0 ? 0 : start + len;
		if (start > len)
			start = len;
		if (stop < 0)
			stop = stop + len < 0 ? 0 : stop + len;
		if (stop > len)
			stop = len;
	} else {
		start = n->has[0] ? n->slice[0] : len - 1;
		stop = n->has[1] ? n->slice[1] : -1;
		if (n->has[0]) {
			if (start < 0)
				start = start + len < 0 ? -1 : start + len;
			if (start >= len)
				start = len - 1;
		}
		if (n->has[1]) {
			if (stop < 0)
				stop = stop + len < 0 ? -1 : stop + len;
			if (stop >= len)
				stop = len - 1;
		}
	}
	res = json_array();
	for (i = start; step > 0 ? i < stop : i > stop; i += step) {
		rc = jp_charge(ev, 1);
		if (rc) {
			json_decref(res);
			return rc;
		}
		json_array_append(res, json_array_get(cur, (size_t)i));
	}
	*out = res;
	return 0;
}

/* Applies n to each element of list (kids[1] of a projection), skipping nulls. */
static int project(struct jp_ev *ev, const struct jp_node *body, json_t *list, json_t **out)
{
	json_t *res, *el, *v;
	size_t i, len = json_array_size(list);
	int rc = 0;

	res = json_array();
	for (i = 0; i < len; i++) {
		el = json_array_get(list, i);
		if (body->type == JN_CURRENT) {
			rc = jp_charge(ev, 1);
			v = json_incref(el);
		} else {
			rc = eval_soft(ev, body, el, &v);
		}
		if (rc) {
			json_decref(res);
			return rc;
		}
		if (json_is_null(v))
			continue;
		json_array_append_new(res, v);
	}
	*out = res;
	return 0;
}

static int eval_chain(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	json_t *v = json_incref(cur), *next;
	const struct jp_node *k;
	int i, rc;

	for (i = 0; i < n->nkids; i++) {
		k = n->kids[i];
		if (k->type == JN_FIELD) {
			rc = jp_charge(ev, 1);
			if (!rc)
				rc = field_get(ev, k, v, &next);
		} else if (k->type == JN_INDEX) {
			rc = jp_charge(ev, 1);
			next = rc ? NULL : index_get(v, k->idx);
		} else {
			rc = eval(ev, k, v, &next);
		}
		json_decref(v);
		if (rc)
			return rc;
		v = next;
	}
	*out = v;
	return 0;
}

static int eval_cmp(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	json_t *a = NULL, *b = NULL;
	int rc, c;
	bool r = false;

	rc = eval_soft(ev, n->kids[0], cur, &a);
	if (!rc)
		rc = eval_soft(ev, n->kids[1], cur, &b);
	if (rc)
		goto out;
	if (n->op == JC_EQ || n->op == JC_NE) {
		rc = jp_ev_equal(ev, a, b, &r);
		if (!rc)
			*out = json_boolean(r == (n->op == JC_EQ));
		goto out;
	}
	if (!is_number(a) || !is_number(b)) {
		*out = json_null();
		goto out;
	}
	c = num_cmp(a, b);
	switch (n->op) {
	case JC_LT:
		r = c < 0;
		break;
	case JC_LE:
		r = c <= 0;
		break;
	case JC_GT:
		r = c > 0;
		break;
	default:
		r = c >= 0;
		break;
	}
	*out = json_boolean(r);
out:
	json_decref(a);
	json_decref(b);
	return rc;
}

static int check_arg_type(struct jp_ev *ev, const struct jp_func *fn, int i, struct jp_arg *a)
{
	int nt = fn->max_args < 0 ? fn->min_args : fn->max_args;
	unsigned mask = fn->types[i < nt ? i : nt - 1], have;
	struct gv_buf want = {0};
	static const char *names[] = {"null",  "boolean", "number",    "string",
				      "array", "object",  "expression"};
	unsigned bit;
	int rc;

	if (a->ref)
		have = JT_EXPREF;
	else if (json_is_null(a->v))
		have = JT_NULL;
	else if (json_is_boolean(a->v))
		have = JT_BOOL;
	else if (is_number(a->v))
		have = JT_NUMBER;
	else if (json_is_string(a->v))
		have = JT_STRING;
	else if (json_is_array(a->v))
		have = JT_ARRAY;
	else
		have = JT_OBJECT;
	if (mask & have)
		return 0;
	if ((mask & JT_ANY) == JT_ANY) {
		gv_buf_adds(&want, "any");
	} else {
		for (bit = 0; bit < 7; bit++) {
			if (!(mask & (1u << bit)))
				continue;
			if (want.len)
				gv_buf_addc(&want, '|');
			gv_buf_adds(&want, names[bit]);
		}
	}
	rc = jp_fail(ev, JP_ERR_INVALID_TYPE,
		     "invalid type for argument %d of %s(): expected %s, got %s", i + 1, fn->name,
		     gv_buf_str(&want), a->ref ? "expression" : jp_type_name(a->v));
	gv_buf_release(&want);
	return rc;
}

static int eval_call(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	struct jp_arg small[6], *args = small;
	const struct jp_func *fn = n->fn;
	int i, rc = 0, got = 0;

	if (n->nkids > (int)GV_ARRAY_LEN(small))
		args = gv_xcalloc((size_t)n->nkids, sizeof(*args));
	for (i = 0; i < n->nkids; i++) {
		const struct jp_node *k = n->kids[i];

		args[i].v = NULL;
		args[i].ref = NULL;
		if (k->type == JN_EXPREF) {
			args[i].ref = k->kids[0];
		} else {
			rc = eval_soft(ev, k, cur, &args[i].v);
			if (rc)
				goto out;
		}
		got = i + 1;
	}
	for (i = 0; i < n->nkids; i++) {
		rc = check_arg_type(ev, fn, i, &args[i]);
		if (rc)
			goto out;
	}
	*out = NULL;
	rc = fn->fn(ev, n, args, n->nkids, out);
	if (rc && *out) { /* a function may fail (budget) after building its result */
		json_decref(*out);
		*out = NULL;
	}
	if (!rc && !*out)
		rc = jp_fail(ev, JP_ERR_RUNTIME, "%s(): result is not representable in JSON",
			     fn->name);
out:
	for (i = 0; i < got; i++)
		json_decref(args[i].v);
	if (args != small)
		free(args);
	return rc;
}

static int eval_node(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	json_t *a = NULL, *b = NULL, *res, *el, *v;
	const char *key;
	size_t i, len;
	int rc = 0;

	switch (n->type) {
	case JN_CURRENT:
		*out = json_incref(cur);
		return 0;
	case JN_LITERAL:
		*out = json_incref(n->lit);
		return 0;
	case JN_FIELD:
		return field_get(ev, n, cur, out);
	case JN_CHAIN:
		return eval_chain(ev, n, cur, out);
	case JN_INDEX:
		*out = index_get(cur, n->idx);
		return 0;
	case JN_SLICE:
		return slice_get(ev, n, cur, out);
	case JN_PROJECTION:
		/* Kyverno's fork: a missing key on the left of a projection is null. */
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		if (!json_is_array(a))
			*out = json_null();
		else
			rc = project(ev, n->kids[1], a, out);
		json_decref(a);
		return rc;
	case JN_VALUE_PROJECTION:
		/* Kyverno's fork: a missing key on the left of a projection is null. */
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		if (!json_is_object(a)) {
			json_decref(a);
			*out = json_null();
			return 0;
		}
		b = json_array();
		json_object_foreach(a, key, el)
		{
			json_array_append(b, el);
		}
		json_decref(a);
		rc = project(ev, n->kids[1], b, out);
		json_decref(b);
		return rc;
	case JN_FLATTEN:
		/* Kyverno's fork: a missing key on the left of a projection is null. */
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		if (!json_is_array(a)) {
			json_decref(a);
			*out = json_null();
			return 0;
		}
		res = json_array();
		len = json_array_size(a);
		for (i = 0; i < len && !rc; i++) {
			el = json_array_get(a, i);
			rc = jp_charge(ev, 1 + json_array_size(el));
			if (json_is_array(el))
				json_array_extend(res, el);
			else
				json_array_append(res, el);
		}
		json_decref(a);
		if (rc) {
			json_decref(res);
			return rc;
		}
		*out = res;
		return 0;
	case JN_FILTER:
		/* Kyverno's fork: a missing key on the left of a projection is null. */
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		if (!json_is_array(a)) {
			json_decref(a);
			*out = json_null();
			return 0;
		}
		res = json_array();
		len = json_array_size(a);
		for (i = 0; i < len; i++) {
			el = json_array_get(a, i);
			rc = eval_soft(ev, n->kids[2], el, &b);
			if (rc)
				break;
			if (!jp_truthy(b)) {
				json_decref(b);
				continue;
			}
			json_decref(b);
			if (n->kids[1]->type == JN_CURRENT) {
				json_array_append(res, el);
				continue;
			}
			rc = eval_soft(ev, n->kids[1], el, &v);
			if (rc)
				break;
			if (json_is_null(v))
				continue;
			json_array_append_new(res, v);
		}
		json_decref(a);
		if (rc) {
			json_decref(res);
			return rc;
		}
		*out = res;
		return 0;
	case JN_MULTI_LIST:
		if (json_is_null(cur)) {
			*out = json_null();
			return 0;
		}
		res = json_array();
		for (i = 0; i < (size_t)n->nkids; i++) {
			rc = eval_soft(ev, n->kids[i], cur, &v);
			if (rc) {
				json_decref(res);
				return rc;
			}
			json_array_append_new(res, v);
		}
		*out = res;
		return 0;
	case JN_MULTI_HASH:
		if (json_is_null(cur)) {
			*out = json_null();
			return 0;
		}
		res = json_object();
		for (i = 0; i < (size_t)n->nkids; i++) {
			rc = eval_soft(ev, n->kids[i], cur, &v);
			if (rc) {
				json_decref(res);
				return rc;
			}
			json_object_set_new(res, n->keys[i], v);
		}
		*out = res;
		return 0;
	case JN_PIPE:
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		rc = eval_soft(ev, n->kids[1], a, out);
		json_decref(a);
		return rc;
	case JN_OR:
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		if (jp_truthy(a)) {
			*out = a;
			return 0;
		}
		json_decref(a);
		/* ... and on either side of || */
		return eval_soft(ev, n->kids[1], cur, out);
	case JN_AND:
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		if (!jp_truthy(a)) {
			*out = a;
			return 0;
		}
		json_decref(a);
		return eval_soft(ev, n->kids[1], cur, out);
	case JN_NOT:
		rc = eval_soft(ev, n->kids[0], cur, &a);
		if (rc)
			return rc;
		*out = json_boolean(!jp_truthy(a));
		json_decref(a);
		return 0;
	case JN_CMP:
		return eval_cmp(ev, n, cur, out);
	case JN_FUNCTION:
		return eval_call(ev, n, cur, out);
	case JN_EXPREF:
		/* Only meaningful as a function argument (eval_call handles it). */
		return jp_fail(ev, JP_ERR_INVALID_TYPE,
			       "an expression reference (&...) can only be a function argument");
	}
	return jp_fail(ev, JP_ERR_RUNTIME, "internal error: unknown node type %d", (int)n->type);
}

static int eval(struct jp_ev *ev, const struct jp_node *n, json_t *cur, json_t **out)
{
	int rc;

	if (ev->steps >= ev->max_steps)
		return budget_fail(ev);
	ev->steps++;
	if (ev->depth >= JP_MAX_EVAL_DEPTH)
		return jp_fail(ev, JP_ERR_LIMIT, "evaluation nested too deeply (limit %d)",
			       JP_MAX_EVAL_DEPTH);
	ev->depth++;
	rc = eval_node(ev, n, cur, out);
	ev->depth--;
	return rc;
}

int jp_ev_eval(struct jp_ev *ev, const struct jp_node *node, json_t *cur, json_t **out)
{
	return eval(ev, node, cur, out);
}

/* A frame of result_within's walk. */
struct walk_frame {
	const json_t *v;
	size_t i; /* next element of an array */
	void *it; /* next member of an object */
};

static bool has_kids(const json_t *v)
{
	return (json_is_array(v) && json_array_size(v)) ||
	       (json_is_object(v) && json_object_size(v));
}

/*
 * True when v holds at most max values, a shared part counted each time it
 * appears: what a caller walking the result would visit. The walk stops
 * past max, and keeps one frame per level (results may be as deep as the
 * input).
 */
static bool result_within(const json_t *v, size_t max)
{
	struct walk_frame small[32], *st = small;
	size_t n = 0, cap = GV_ARRAY_LEN(small), count = 1;
	bool ok = true;

	if (!has_kids(v))
		return true;
	st[n++] = (struct walk_frame){v, 0, json_is_object(v) ? json_object_iter(jp_mut(v)) : NULL};
	while (n && ok) {
		struct walk_frame *f = &st[n - 1];
		const json_t *c = NULL;

		if (json_is_array(f->v)) {
			/* scalars in a row without going back to the frame loop */
			for (size_t len = json_array_size(f->v); f->i < len && !c;) {
				const json_t *e = json_array_get(f->v, f->i++);
				ok = ++count <= max;
				if (!ok)
					break;
				if (has_kids(e))
					c = e;
			}
		} else {
			while (f->it && !c) {
				const json_t *e = json_object_iter_value(f->it);
				f->it = json_object_iter_next(jp_mut(f->v), f->it);
				ok = ++count <= max;
				if (!ok)
					break;
				if (has_kids(e))
					c = e;
			}
		}
		if (!c) { /* frame done, or past max (the loop ends) */
			n--;
			continue;
		}
		if (n == cap) {
			struct walk_frame *bigger = gv_xmalloc(2 * cap * sizeof(*st));
			memcpy(bigger, st, n * sizeof(*st));
			if (st != small)
				free(st);
			st = bigger;
			cap *= 2;
		}
		st[n++] = (struct walk_frame){
		    c, 0, json_is_object(c) ? json_object_iter(jp_mut(c)) : NULL};
	}
	if (st != small)
		free(st);
	return ok;
}

static json_t *eval_top(const struct jp_expr *x, const json_t *data, struct jp_budget *b,
			struct jp_error *e)
{
	struct jp_error local;
	struct jp_ev ev;
	json_t *out = NULL;
	int rc;

	if (!e)
		e = &local;
	/* not a memset of the 512-byte message: this runs once per evaluation */
	e->kind = JP_ERR_NONE;
	e->msg[0] = '\0';
	e->pos = -1;
	ev.kyverno = x->kyverno;
	ev.steps = 0;
	ev.max_steps = x->max_steps;
	ev.shared_max = 0;
	ev.depth = 0;
	ev.e = e;
	if (b) {
		unsigned long max = b->max ? b->max : JP_DEFAULT_MAX_STEPS;
		unsigned long left = b->used < max ? max - b->used : 0;

		if (left < ev.max_steps) {
			ev.max_steps = left;
			if (b->used)
				ev.shared_max = max;
		}
	}
	/* The tree is only read; the cast lets references be taken. */
	rc = eval(&ev, x->root, data ? jp_mut(data) : json_null(), &out);
	if (b)
		b->used = ev.steps > ULONG_MAX - b->used ? ULONG_MAX : b->used + ev.steps;
	if (!rc && !result_within(out, JP_MAX_RESULT_VALUES)) {
		json_decref(out);
		out = NULL;
		rc = jp_fail(&ev, JP_ERR_LIMIT,
			     "result holds more than %lu values (shared parts counted each time "
			     "they appear)",
			     JP_MAX_RESULT_VALUES);
	}
	if (rc) {
		if (e->kind == JP_ERR_NONE) {
			e->kind = (enum jp_error_kind)rc;
			snprintf(e->msg, sizeof(e->msg), "evaluation failed");
		}
		return NULL;
	}
	return out;
}

json_t *jp_eval(const struct jp_expr *x, const json_t *data, struct jp_error *e)
{
	return eval_top(x, data, NULL, e);
}

json_t *jp_eval_budget(const struct jp_expr *x, const json_t *data, struct jp_budget *b,
		       struct jp_error *e)
{
	return eval_top(x, data, b, e);
}

json_t *jp_search(const char *src, const json_t *data, const struct jp_options *opt,
		  struct jp_error *e)
{
	struct jp_expr *x = jp_compile(src, opt, e);
	json_t *v;

	if (!x)
		return NULL;
	v = jp_eval(x, data, e);
	jp_free(x);
	return v;
}

/* ------------------------------------------------------------------ */
/* Standard functions                                                   */

#define ARG(i) (args[i].v)

/* Stable merge sort of n values by cmp; cmp may fail (returns error via *rc). */
struct sort_item {
	json_t *key;   /* borrowed or owned per caller */
	json_t *value; /* borrowed */
};

static int item_cmp(const struct sort_item *a, const struct sort_item *b)
{
	if (a->key == b->key) /* shared: copies of one long string sort in linear time */
		return 0;
	if (json_is_string(a->key))
		return strcmp(json_string_value(a->key), json_string_value(b->key));
	return num_cmp(a->key, b->key);
}

static int merge_sort(struct jp_ev *ev, struct sort_item *v, size_t n)
{
	struct sort_item *tmp;
	size_t width, i, lo, mid, hi, a, b, k;
	int rc = 0;

	if (n < 2)
		return 0;
	tmp = gv_xmalloc(n * sizeof(*tmp));
	for (width = 1; width < n && !rc; width *= 2) {
		for (lo = 0; lo < n; lo += 2 * width) {
			mid = lo + width < n ? lo + width : n;
			hi = lo + 2 * width < n ? lo + 2 * width : n;
			a = lo;
			b = mid;
			k = lo;
			while (a < mid && b < hi)
				tmp[k++] = item_cmp(&v[b], &v[a]) < 0 ? v[b++] : v[a++];
			while (a < mid)
				tmp[k++] = v[a++];
			while (b < hi)
				tmp[k++] = v[b++];
		}
		for (i = 0; i < n; i++)
			v[i] = tmp[i];
		rc = jp_charge(ev, n);
	}
	free(tmp);
	return rc;
}

/* Keys must be all numbers or all strings. */
static int check_keys(struct jp_ev *ev, const char *fname, struct sort_item *v, size_t n)
{
	size_t i;
	bool str;

	if (n == 0)
		return 0;
	str = json_is_string(v[0].key);
	for (i = 0; i < n; i++) {
		if (str ? !json_is_string(v[i].key) : !is_number(v[i].key))
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "%s(): values must be all numbers or all strings, got %s",
				       fname, jp_type_name(v[i].key));
	}
	return 0;
}

static int fn_abs(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	if (json_is_integer(ARG(0)) && json_integer_value(ARG(0)) != LLONG_MIN)
		*out = json_integer(llabs(json_integer_value(ARG(0))));
	else
		*out = json_real(fabs(json_number_value(ARG(0))));
	return 0;
}

static int number_array(struct jp_ev *ev, const char *fname, json_t *a)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
	{
		if (!is_number(v))
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "%s(): expected an array of numbers, element %zu is %s",
				       fname, i, jp_type_name(v));
	}
	return jp_charge(ev, json_array_size(a));
}

static int fn_avg(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	double sum = 0;
	int rc = number_array(ev, "avg", ARG(0));

	if (rc)
		return rc;
	if (n == 0) {
		*out = json_null();
		return 0;
	}
	for (i = 0; i < n; i++)
		sum += json_number_value(json_array_get(ARG(0), i));
	*out = jp_number(sum / (double)n);
	return 0;
}

static int fn_ceil(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	*out = json_is_integer(ARG(0)) ? json_incref(ARG(0))
				       : jp_number(ceil(json_number_value(ARG(0))));
	return 0;
}

static int fn_floor(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	*out = json_is_integer(ARG(0)) ? json_incref(ARG(0))
				       : jp_number(floor(json_number_value(ARG(0))));
	return 0;
}

/* Linear time (glibc's memmem is two-way), as Go's strings.Contains. */
static bool str_contains(const char *h, size_t hn, const char *n, size_t nn)
{
	return nn == 0 || memmem(h, hn, n, nn) != NULL;
}

static int fn_contains(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	size_t i;
	json_t *v;
	bool r = false;
	int rc;

	if (json_is_string(ARG(0))) {
		if (json_is_string(ARG(1))) {
			r = str_contains(json_string_value(ARG(0)), json_string_length(ARG(0)),
					 json_string_value(ARG(1)), json_string_length(ARG(1)));
			if ((rc = jp_charge(ev, json_string_length(ARG(0)) / 16)))
				return rc;
		}
	} else {
		json_array_foreach(ARG(0), i, v)
		{
			if ((rc = jp_charge(ev, 1)) || (rc = jp_ev_equal(ev, v, ARG(1), &r)))
				return rc;
			if (r)
				break;
		}
	}
	*out = json_boolean(r);
	return 0;
}

static int fn_ends_with(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	size_t a = json_string_length(ARG(0)), b = json_string_length(ARG(1));

	*out = json_boolean(
	    b <= a && memcmp(json_string_value(ARG(0)) + a - b, json_string_value(ARG(1)), b) == 0);
	return 0;
}

static int fn_starts_with(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	size_t a = json_string_length(ARG(0)), b = json_string_length(ARG(1));

	*out = json_boolean(b <= a &&
			    memcmp(json_string_value(ARG(0)), json_string_value(ARG(1)), b) == 0);
	return 0;
}

static int fn_join(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	struct gv_buf b = {0};
	size_t i;
	json_t *v;
	int rc;

	json_array_foreach(ARG(1), i, v)
	{
		if (!json_is_string(v)) {
			gv_buf_release(&b);
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "join(): expected an array of strings, element %zu is %s", i,
				       jp_type_name(v));
		}
		if (i)
			gv_buf_add(&b, json_string_value(ARG(0)), json_string_length(ARG(0)));
		gv_buf_add(&b, json_string_value(v), json_string_length(v));
	}
	rc = jp_charge(ev, 1 + b.len / 16);
	if (!rc)
		*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return rc;
}

static int fn_keys(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	const char *k;
	json_t *v, *res = json_array();

	json_object_foreach(ARG(0), k, v)
	{
		json_array_append_new(res, json_string(k));
	}
	*out = res;
	return jp_charge(ev, json_array_size(res));
}

static int fn_values(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	const char *k;
	json_t *v, *res = json_array();

	json_object_foreach(ARG(0), k, v)
	{
		json_array_append(res, v);
	}
	*out = res;
	return jp_charge(ev, json_array_size(res));
}

static int fn_length(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	json_t *a = ARG(0);
	size_t n;

	if (json_is_string(a))
		n = jp_utf8_len(json_string_value(a), json_string_length(a));
	else if (json_is_array(a))
		n = json_array_size(a);
	else
		n = json_object_size(a);
	*out = json_integer((json_int_t)n);
	return 0;
}

static int fn_map(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	json_t *res = json_array(), *el, *v;
	size_t i;
	int rc;

	json_array_foreach(ARG(1), i, el)
	{
		rc = jp_ev_eval(ev, args[0].ref, el, &v);
		if (rc) {
			json_decref(res);
			return rc;
		}
		json_array_append_new(res, v);
	}
	*out = res;
	return 0;
}

static int minmax(struct jp_ev *ev, const char *fname, json_t *a, bool want_max, json_t **out)
{
	size_t i, n = json_array_size(a);
	json_t *best, *v;
	bool str;
	int c;

	if (n == 0) {
		*out = json_null();
		return 0;
	}
	best = json_array_get(a, 0);
	str = json_is_string(best);
	if (!str && !is_number(best))
		return jp_fail(ev, JP_ERR_INVALID_TYPE,
			       "%s(): expected an array of numbers or strings, got %s element",
			       fname, jp_type_name(best));
	for (i = 0; i < n; i++) {
		v = json_array_get(a, i);
		if (str ? !json_is_string(v) : !is_number(v))
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "%s(): values must be all numbers or all strings, got %s",
				       fname, jp_type_name(v));
		if (v == best)
			continue;
		c = str ? strcmp(json_string_value(v), json_string_value(best)) : num_cmp(v, best);
		if (want_max ? c > 0 : c < 0)
			best = v;
	}
	*out = json_incref(best);
	return jp_charge(ev, n);
}

static int fn_max(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	return minmax(ev, "max", ARG(0), true, out);
}

static int fn_min(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	return minmax(ev, "min", ARG(0), false, out);
}

/* Evaluates ref on each element of a into items (keys owned). */
static int eval_keys(struct jp_ev *ev, const struct jp_node *ref, json_t *a,
		     struct sort_item **items)
{
	size_t i, n = json_array_size(a);
	struct sort_item *v = gv_xcalloc(n ? n : 1, sizeof(*v));
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		v[i].value = json_array_get(a, i);
		rc = jp_ev_eval(ev, ref, v[i].value, &v[i].key);
	}
	*items = v;
	return rc;
}

static void free_keys(struct sort_item *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		json_decref(v[i].key);
	free(v);
}

static int by_minmax(struct jp_ev *ev, const char *fname, struct jp_arg *args, bool want_max,
		     json_t **out)
{
	size_t i, n = json_array_size(ARG(0)), best = 0;
	struct sort_item *v;
	int rc, c;

	if (n == 0) {
		*out = json_null();
		return 0;
	}
	rc = eval_keys(ev, args[1].ref, ARG(0), &v);
	if (!rc)
		rc = check_keys(ev, fname, v, n);
	if (rc)
		goto out;
	for (i = 1; i < n; i++) {
		c = item_cmp(&v[i], &v[best]);
		if (want_max ? c > 0 : c < 0)
			best = i;
	}
	*out = json_incref(v[best].value);
out:
	free_keys(v, n);
	return rc;
}

static int fn_max_by(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return by_minmax(ev, "max_by", args, true, out);
}

static int fn_min_by(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return by_minmax(ev, "min_by", args, false, out);
}

static int fn_merge(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	json_t *res = json_object();
	int i;

	for (i = 0; i < nargs; i++) {
		json_object_update(res, ARG(i));
		if (jp_charge(ev, json_object_size(ARG(i)))) {
			json_decref(res);
			return JP_ERR_LIMIT;
		}
	}
	*out = res;
	return 0;
}

static int fn_not_null(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	int i;

	for (i = 0; i < nargs; i++) {
		if (!json_is_null(ARG(i))) {
			*out = json_incref(ARG(i));
			return 0;
		}
	}
	*out = json_null();
	return 0;
}

static int fn_reverse(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	json_t *a = ARG(0), *res;
	size_t i, n, k;

	if (json_is_array(a)) {
		n = json_array_size(a);
		res = json_array();
		for (i = n; i > 0; i--)
			json_array_append(res, json_array_get(a, i - 1));
		*out = res;
		return jp_charge(ev, n);
	} else {
		const char *s = json_string_value(a);
		char *r;

		n = json_string_length(a);
		r = gv_xmalloc(n + 1);
		/* reverse code points, keeping each one's bytes in order */
		for (i = 0; i < n; i += k) {
			unsigned cp;
			k = jp_utf8_decode(s + i, n - i, &cp);
			memcpy(r + n - i - k, s + i, k);
		}
		*out = json_stringn(r, n);
		free(r);
		return jp_charge(ev, 1 + n / 16);
	}
}

static int fn_sort(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	struct sort_item *v = gv_xcalloc(n ? n : 1, sizeof(*v));
	json_t *res;
	int rc;

	for (i = 0; i < n; i++)
		v[i].key = v[i].value = json_array_get(ARG(0), i);
	rc = check_keys(ev, "sort", v, n);
	if (!rc)
		rc = merge_sort(ev, v, n);
	if (!rc) {
		res = json_array();
		for (i = 0; i < n; i++)
			json_array_append(res, v[i].value);
		*out = res;
	}
	free(v);
	return rc;
}

static int fn_sort_by(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	struct sort_item *v;
	json_t *res;
	int rc;

	rc = eval_keys(ev, args[1].ref, ARG(0), &v);
	if (!rc)
		rc = check_keys(ev, "sort_by", v, n);
	if (!rc)
		rc = merge_sort(ev, v, n);
	if (!rc) {
		res = json_array();
		for (i = 0; i < n; i++)
			json_array_append(res, v[i].value);
		*out = res;
	}
	free_keys(v, n);
	return rc;
}

static int fn_sum(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	json_int_t isum = 0;
	bool ints = true;
	double sum = 0;
	json_t *v;
	int rc = number_array(ev, "sum", ARG(0));

	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		v = json_array_get(ARG(0), i);
		sum += json_number_value(v);
		if (ints && json_is_integer(v) &&
		    !__builtin_add_overflow(isum, json_integer_value(v), &isum))
			continue;
		ints = false;
	}
	*out = ints ? json_integer(isum) : jp_number(sum);
	return 0;
}

static int fn_to_array(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	if (json_is_array(ARG(0))) {
		*out = json_incref(ARG(0));
	} else {
		*out = json_array();
		json_array_append(*out, ARG(0));
	}
	return 0;
}

/* Parses s as Go's strconv.ParseFloat does for decimal input; false if it is not a number. */
static bool parse_number(const char *s, size_t n, json_t **out)
{
	char buf[128], *end;
	size_t i;
	bool integral = true;
	double d;
	long long ll;

	if (n == 0 || n >= sizeof(buf))
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (isdigit((unsigned char)c) ||
		    ((c == '-' || c == '+') && (i == 0 || s[i - 1] == 'e' || s[i - 1] == 'E')))
			continue;
		if (c == '.' || c == 'e' || c == 'E') {
			integral = false;
			continue;
		}
		return false;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	if (integral) {
		ll = strtoll(buf, &end, 10);
		if (*end == '\0' && errno == 0 && end != buf) {
			*out = json_integer(ll);
			return true;
		}
	}
	errno = 0;
	d = strtod(buf, &end);
	if (*end != '\0' || end == buf || !isfinite(d))
		return false;
	*out = jp_number(d);
	return *out != NULL;
}

static int fn_to_number(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	json_t *a = ARG(0);

	if (is_number(a))
		*out = json_incref(a);
	else if (!json_is_string(a) ||
		 !parse_number(json_string_value(a), json_string_length(a), out))
		*out = json_null();
	return 0;
}

static int fn_to_string(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	struct gv_buf b = {0};
	size_t values;
	int rc;

	if (json_is_string(ARG(0))) {
		*out = json_incref(ARG(0));
		return 0;
	}
	/*
	 * A step per value written and per 16 bytes; the steps left bound the
	 * walk, so a value sharing parts is not written whole.
	 */
	if (!dump_bounded(ARG(0), &b, ev->kyverno ? JP_DUMP_SORT_KEYS | JP_DUMP_HTML_ESCAPE : 0,
			  bytes_left(ev), ev->max_steps - ev->steps, &values))
		rc = jp_charge(ev, ev->max_steps - ev->steps + 1);
	else
		rc = jp_charge(ev, values + b.len / 16);
	if (!rc)
		*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return rc;
}

static int fn_type(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	*out = json_string(jp_type_name(ARG(0)));
	return 0;
}

#define T(x) JT_##x
static const struct jp_func std_funcs[] = {
    {"abs", "abs(number) -> number", 1, 1, {T(NUMBER)}, fn_abs, NULL},
    {"avg", "avg(array[number]) -> number", 1, 1, {T(ARRAY)}, fn_avg, NULL},
    {"ceil", "ceil(number) -> number", 1, 1, {T(NUMBER)}, fn_ceil, NULL},
    {"contains",
     "contains(array|string, any) -> boolean",
     2,
     2,
     {T(ARRAY) | T(STRING), T(ANY)},
     fn_contains,
     NULL},
    {"ends_with",
     "ends_with(string, string) -> boolean",
     2,
     2,
     {T(STRING), T(STRING)},
     fn_ends_with,
     NULL},
    {"floor", "floor(number) -> number", 1, 1, {T(NUMBER)}, fn_floor, NULL},
    {"join", "join(string, array[string]) -> string", 2, 2, {T(STRING), T(ARRAY)}, fn_join, NULL},
    {"keys", "keys(object) -> array[string]", 1, 1, {T(OBJECT)}, fn_keys, NULL},
    {"length",
     "length(string|array|object) -> number",
     1,
     1,
     {T(STRING) | T(ARRAY) | T(OBJECT)},
     fn_length,
     NULL},
    {"map", "map(&expression, array) -> array", 2, 2, {T(EXPREF), T(ARRAY)}, fn_map, NULL},
    {"max", "max(array[number]|array[string]) -> number|string", 1, 1, {T(ARRAY)}, fn_max, NULL},
    {"max_by", "max_by(array, &expression) -> any", 2, 2, {T(ARRAY), T(EXPREF)}, fn_max_by, NULL},
    {"merge", "merge(object, ...) -> object", 1, -1, {T(OBJECT)}, fn_merge, NULL},
    {"min", "min(array[number]|array[string]) -> number|string", 1, 1, {T(ARRAY)}, fn_min, NULL},
    {"min_by", "min_by(array, &expression) -> any", 2, 2, {T(ARRAY), T(EXPREF)}, fn_min_by, NULL},
    {"not_null", "not_null(any, ...) -> any", 1, -1, {T(ANY)}, fn_not_null, NULL},
    {"reverse",
     "reverse(array|string) -> array|string",
     1,
     1,
     {T(ARRAY) | T(STRING)},
     fn_reverse,
     NULL},
    {"sort", "sort(array[number]|array[string]) -> array", 1, 1, {T(ARRAY)}, fn_sort, NULL},
    {"sort_by",
     "sort_by(array, &expression) -> array",
     2,
     2,
     {T(ARRAY), T(EXPREF)},
     fn_sort_by,
     NULL},
    {"starts_with",
     "starts_with(string, string) -> boolean",
     2,
     2,
     {T(STRING), T(STRING)},
     fn_starts_with,
     NULL},
    {"sum", "sum(array[number]) -> number", 1, 1, {T(ARRAY)}, fn_sum, NULL},
    {"to_array", "to_array(any) -> array", 1, 1, {T(ANY)}, fn_to_array, NULL},
    {"to_number", "to_number(any) -> number", 1, 1, {T(ANY)}, fn_to_number, NULL},
    {"to_string", "to_string(any) -> string", 1, 1, {T(ANY)}, fn_to_string, NULL},
    {"type", "type(any) -> string", 1, 1, {T(ANY)}, fn_type, NULL},
    {"values", "values(object) -> array", 1, 1, {T(OBJECT)}, fn_values, NULL},
};
#undef T

static const struct jp_func *table_find(const struct jp_func *t, size_t n, const char *name)
{
	size_t lo = 0, hi = n, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = strcmp(name, t[mid].name);
		if (c == 0)
			return &t[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Kyverno's functions override the standard ones of the same name (sum). */
static const struct jp_func *func_find(const char *name, bool kyverno)
{
	const struct jp_func *f = NULL;

	if (kyverno)
		f = table_find(jp_kyverno_funcs, jp_kyverno_nfuncs, name);
	if (!f)
		f = table_find(std_funcs, GV_ARRAY_LEN(std_funcs), name);
	return f;
}

void jp_list_functions(bool kyverno, void (*fn)(const char *name, const char *signature, void *ud),
		       void *ud)
{
	size_t i = 0, j = 0, ns = GV_ARRAY_LEN(std_funcs), nk = kyverno ? jp_kyverno_nfuncs : 0;
	int c;

	while (i < ns || j < nk) {
		if (i == ns)
			c = 1;
		else if (j == nk)
			c = -1;
		else
			c = strcmp(std_funcs[i].name, jp_kyverno_funcs[j].name);
		if (c < 0) {
			fn(std_funcs[i].name, std_funcs[i].signature, ud);
			i++;
		} else {
			if (c == 0)
				i++; /* overridden */
			fn(jp_kyverno_funcs[j].name, jp_kyverno_funcs[j].signature, ud);
			j++;
		}
	}
}
