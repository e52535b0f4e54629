/*
 * jp_value.c - JMESPath values: error and budget helpers, UTF-8, numbers
 * as Go prints them, equality and bounded JSON dumps. Shared by the lexer,
 * parser, evaluator and functions through engine/jp_int.h.
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

int jp_fail_unknown_key(struct jp_ev *ev, const char *name)
{
	static const char head[] = "Unknown key \"", tail[] = "\" in path";
	struct jp_error *e = ev->e;
	size_t n = 0, cap = sizeof(e->msg) - 1;
	const char *parts[3] = {head, name, tail};

	if (e->kind != JP_ERR_NONE)
		return JP_ERR_UNKNOWN_KEY;
	e->kind = JP_ERR_UNKNOWN_KEY;
	e->pos = -1;
	/* truncated as vsnprintf would */
	for (size_t i = 0; i < 3 && n < cap; i++) {
		size_t k = strlen(parts[i]);
		if (k > cap - n)
			k = cap - n;
		memcpy(e->msg + n, parts[i], k);
		n += k;
	}
	e->msg[n] = '\0';
	return JP_ERR_UNKNOWN_KEY;
}

int jp_budget_fail(struct jp_ev *ev)
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
		return jp_budget_fail(ev);
	}
	ev->steps += n;
	return 0;
}

/* Bytes that the steps left may pay for, at a step per 16 bytes. */
size_t jp_bytes_left(const struct jp_ev *ev)
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
		k = gv_utf8_decode(s + i, n - i, &cp);
		gv_utf8_put(&b, cp);
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

bool jp_is_number(const json_t *v)
{
	return json_is_integer(v) || json_is_real(v);
}

int jp_num_cmp(const json_t *a, const json_t *b)
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
	if (jp_is_number(a) && jp_is_number(b)) {
		*eq = jp_num_cmp(a, b) == 0;
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
bool jp_dump_bounded(const json_t *v, struct gv_buf *out, unsigned flags, size_t max,
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
	return jp_dump_bounded(v, out, flags, max, SIZE_MAX, NULL);
}
