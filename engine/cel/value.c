/*
 * value.c - CEL values: the arena they live in, JSON documents seen as CEL
 * values without copying, equality and ordering (cel-spec langdef.md
 * "Equality", "Ordering"; numbers compare across int, uint and double), and
 * printing as JSON or CEL text.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

/* ---- arena ---- */

#define ARENA_BLOCK 8192

void *cel_arena_alloc_slow(struct cel_arena *a, size_t n)
{
	struct cel_arena_block *b = a->head;
	void *r;

	n = (n + 15) & ~(size_t)15;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > ARENA_BLOCK / 2 ? n : ARENA_BLOCK;

		b = gv_xmalloc(sizeof(*b) + cap);
		b->cap = cap;
		b->used = 0;
		if (n > ARENA_BLOCK / 2 && a->head) {
			/* a big block goes behind the current one, which keeps its room */
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	r = b->data + b->used;
	b->used += n;
	a->used += n;
	return r;
}

void cel_arena_release(struct cel_arena *a)
{
	struct cel_arena_block *b = a->head, *nx;

	for (; b; b = nx) {
		nx = b->next;
		free(b);
	}
	a->head = NULL;
	a->used = 0;
}

void cel_arena_clear(struct cel_arena *a)
{
	struct cel_arena_block *b = a->head, *nx, *keep = NULL;

	for (; b; b = nx) {
		nx = b->next;
		if (!keep && b->cap == ARENA_BLOCK) {
			keep = b;
			continue;
		}
		free(b);
	}
	if (keep) {
		keep->used = 0;
		keep->next = NULL;
	}
	a->head = keep;
	a->used = 0;
}

char *cel_arena_strndup(struct cel_arena *a, const char *s, size_t n)
{
	char *r = cel_arena_alloc(a, n + 1);

	if (n)
		memcpy(r, s, n);
	r[n] = 0;
	return r;
}

/* ---- constructors ---- */

struct cel_value cel_null(void)
{
	struct cel_value v = {.kind = CEL_NULL};

	return v;
}

struct cel_value cel_bool(bool b)
{
	struct cel_value v = {.kind = CEL_BOOL};

	v.v.b = b;
	return v;
}

struct cel_value cel_int(int64_t i)
{
	struct cel_value v = {.kind = CEL_INT};

	v.v.i = i;
	return v;
}

struct cel_value cel_uint(uint64_t u)
{
	struct cel_value v = {.kind = CEL_UINT};

	v.v.u = u;
	return v;
}

struct cel_value cel_double(double d)
{
	struct cel_value v = {.kind = CEL_DOUBLE};

	v.v.d = d;
	return v;
}

struct cel_value cel_str(const char *p, size_t n)
{
	struct cel_value v = {.kind = CEL_STRING};

	v.v.s.p = p;
	v.v.s.n = n;
	return v;
}

struct cel_value cel_bytes(const char *p, size_t n)
{
	struct cel_value v = {.kind = CEL_BYTES};

	v.v.s.p = p;
	v.v.s.n = n;
	return v;
}

struct cel_value cel_type(const char *name)
{
	struct cel_value v = {.kind = CEL_TYPE};

	v.v.type = name;
	return v;
}

bool cel_charge_check(struct cel_eval *ev)
{
	if (ev->limit && ev->cost > ev->limit && !ev->aborted) {
		ev->aborted = true;
		ev->abort_err.msg = "operation cancelled: actual cost limit exceeded";
		ev->abort_err.pos = -1;
		ev->abort_err.fatal = true;
	}
	if (ev->arena.used > ev->mem_limit && !ev->aborted) {
		ev->aborted = true;
		ev->abort_err.msg = "operation cancelled: memory limit exceeded";
		ev->abort_err.pos = -1;
		ev->abort_err.fatal = true;
	}
	return !ev->aborted;
}

char *cel_eval_strdup(struct cel_eval *ev, const char *s, size_t n)
{
	cel_charge(ev, n / 16);
	return cel_arena_strndup(&ev->arena, s, n);
}

struct cel_value cel_err(struct cel_eval *ev, int pos, const char *fmt, ...)
{
	struct cel_value v = {.kind = CEL_ERROR};
	struct cel_error *e = cel_arena_alloc(&ev->arena, sizeof(*e));
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	e->msg = cel_arena_strndup(&ev->arena, buf, strlen(buf));
	e->pos = pos;
	e->fatal = false;
	v.v.err = e;
	return v;
}

struct cel_value cel_list_new(struct cel_eval *ev, const struct cel_value *items, size_t n)
{
	struct cel_value v = {.kind = CEL_LIST};
	struct cel_list *l = cel_arena_alloc(&ev->arena, sizeof(*l));
	struct cel_value *c = NULL;

	cel_charge(ev, n / 4);
	if (n) {
		c = cel_arena_alloc(&ev->arena, sizeof(*c) * n);
		memcpy(c, items, sizeof(*c) * n);
	}
	l->n = n;
	l->v = c;
	v.v.list = l;
	return v;
}

struct cel_value cel_map_new(struct cel_eval *ev, const struct cel_value *k,
			     const struct cel_value *vals, size_t n)
{
	struct cel_value v = {.kind = CEL_MAP};
	struct cel_map *m = cel_arena_alloc(&ev->arena, sizeof(*m));
	struct cel_value *kc = NULL, *vc = NULL;

	cel_charge(ev, n / 2);
	if (n) {
		kc = cel_arena_alloc(&ev->arena, sizeof(*kc) * n);
		vc = cel_arena_alloc(&ev->arena, sizeof(*vc) * n);
		memcpy(kc, k, sizeof(*kc) * n);
		memcpy(vc, vals, sizeof(*vc) * n);
	}
	m->n = n;
	m->k = kc;
	m->v = vc;
	v.v.map = m;
	return v;
}

/* ---- lists and maps ---- */

size_t cel_list_size(const struct cel_value *l)
{
	return l->json ? json_array_size(l->v.json) : l->v.list->n;
}

struct cel_value cel_list_get(const struct cel_value *l, size_t i)
{
	if (l->json)
		return cel_from_json(json_array_get(l->v.json, i));
	return l->v.list->v[i];
}

size_t cel_map_size(const struct cel_value *m)
{
	return m->json ? json_object_size(m->v.json) : m->v.map->n;
}

void cel_map_entry(const struct cel_value *m, size_t i, struct cel_value *k, struct cel_value *v)
{
	if (m->json) {
		/* jansson keeps insertion order: walk to the i-th (callers iterate in order) */
		const char *key;
		json_t *val;
		size_t idx = 0;

		json_object_foreach((json_t *)m->v.json, key, val)
		{
			if (idx++ == i) {
				*k = cel_str(key, strlen(key));
				*v = cel_from_json(val);
				return;
			}
		}
		*k = cel_null();
		*v = cel_null();
		return;
	}
	*k = m->v.map->k[i];
	*v = m->v.map->v[i];
}

/* Numeric value of a key for cross-type lookup: false when not integral. */
static bool key_number(const struct cel_value *k, bool *neg, uint64_t *mag)
{
	switch (k->kind) {
	case CEL_INT:
		*neg = k->v.i < 0;
		*mag = k->v.i < 0 ? (uint64_t)0 - (uint64_t)k->v.i : (uint64_t)k->v.i;
		return true;
	case CEL_UINT:
		*neg = false;
		*mag = k->v.u;
		return true;
	case CEL_DOUBLE:
		if (k->v.d != floor(k->v.d) || !(fabs(k->v.d) < 18446744073709551616.0))
			return false;
		*neg = k->v.d < 0;
		*mag = (uint64_t)fabs(k->v.d);
		return true;
	default:
		return false;
	}
}

static bool key_equal(const struct cel_value *a, const struct cel_value *b)
{
	bool na, nb;
	uint64_t ma, mb;

	if (a->kind == CEL_STRING && b->kind == CEL_STRING)
		return a->v.s.n == b->v.s.n && memcmp(a->v.s.p, b->v.s.p, a->v.s.n) == 0;
	if (a->kind == CEL_BOOL && b->kind == CEL_BOOL)
		return a->v.b == b->v.b;
	if (key_number(a, &na, &ma) && key_number(b, &nb, &mb))
		return na == nb && ma == mb && (ma != 0 || true);
	return false;
}

bool cel_map_find(const struct cel_value *m, const struct cel_value *key, struct cel_value *out)
{
	size_t i;

	if (m->json) {
		json_t *j;

		if (key->kind != CEL_STRING)
			return false;
		j = json_object_getn(m->v.json, key->v.s.p, key->v.s.n);
		if (!j)
			return false;
		*out = cel_from_json(j);
		return true;
	}
	for (i = 0; i < m->v.map->n; i++) {
		if (key_equal(&m->v.map->k[i], key)) {
			*out = m->v.map->v[i];
			return true;
		}
	}
	return false;
}

/* ---- types, equality, ordering ---- */

const char *cel_type_name(const struct cel_value *v)
{
	switch (v->kind) {
	case CEL_NULL:
		return "null_type";
	case CEL_BOOL:
		return "bool";
	case CEL_INT:
		return "int";
	case CEL_UINT:
		return "uint";
	case CEL_DOUBLE:
		return "double";
	case CEL_STRING:
		return "string";
	case CEL_BYTES:
		return "bytes";
	case CEL_LIST:
		return "list";
	case CEL_MAP:
		return "map";
	case CEL_TIMESTAMP:
		return "google.protobuf.Timestamp";
	case CEL_DURATION:
		return "google.protobuf.Duration";
	case CEL_TYPE:
		return "type";
	case CEL_OPTIONAL:
		return "optional_type";
	case CEL_OPAQUE:
		return v->v.obj.type->name;
	default:
		return "error";
	}
}

static bool is_num(const struct cel_value *v)
{
	return v->kind == CEL_INT || v->kind == CEL_UINT || v->kind == CEL_DOUBLE;
}

/* Compares two numbers on one number line; false when NaN is involved. */
static bool num_cmp(const struct cel_value *a, const struct cel_value *b, int *cmp)
{
	if (a->kind == CEL_INT && b->kind == CEL_INT) {
		*cmp = (a->v.i > b->v.i) - (a->v.i < b->v.i);
		return true;
	}
	if (a->kind == CEL_UINT && b->kind == CEL_UINT) {
		*cmp = (a->v.u > b->v.u) - (a->v.u < b->v.u);
		return true;
	}
	if (a->kind == CEL_INT && b->kind == CEL_UINT) {
		if (a->v.i < 0)
			*cmp = -1;
		else
			*cmp = ((uint64_t)a->v.i > b->v.u) - ((uint64_t)a->v.i < b->v.u);
		return true;
	}
	if (a->kind == CEL_UINT && b->kind == CEL_INT) {
		if (!num_cmp(b, a, cmp))
			return false;
		*cmp = -*cmp;
		return true;
	}
	if (a->kind == CEL_DOUBLE && b->kind == CEL_DOUBLE) {
		if (isnan(a->v.d) || isnan(b->v.d))
			return false;
		*cmp = (a->v.d > b->v.d) - (a->v.d < b->v.d);
		return true;
	}
	if (a->kind == CEL_DOUBLE) {
		/* as cel-go: the integer converted to double (lossy past 2^53) */
		double d = a->v.d, e = b->kind == CEL_INT ? (double)b->v.i : (double)b->v.u;

		if (isnan(d))
			return false;
		*cmp = (d > e) - (d < e);
		return true;
	}
	if (!num_cmp(b, a, cmp))
		return false;
	*cmp = -*cmp;
	return true;
}

static int bytes_cmp(const struct cel_value *a, const struct cel_value *b)
{
	size_t n = a->v.s.n < b->v.s.n ? a->v.s.n : b->v.s.n;
	int c = n ? memcmp(a->v.s.p, b->v.s.p, n) : 0;

	if (c)
		return c < 0 ? -1 : 1;
	return (a->v.s.n > b->v.s.n) - (a->v.s.n < b->v.s.n);
}

bool cel_compare(const struct cel_value *a, const struct cel_value *b, int *cmp, bool *nan)
{
	*nan = false;
	if (is_num(a) && is_num(b)) {
		if (!num_cmp(a, b, cmp)) {
			*nan = true;
			return false;
		}
		return true;
	}
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case CEL_STRING:
	case CEL_BYTES:
		*cmp = bytes_cmp(a, b);
		return true;
	case CEL_BOOL:
		*cmp = (a->v.b > b->v.b) - (a->v.b < b->v.b);
		return true;
	case CEL_TIMESTAMP:
		if (a->v.ts.sec != b->v.ts.sec)
			*cmp = a->v.ts.sec < b->v.ts.sec ? -1 : 1;
		else
			*cmp = (a->v.ts.nsec > b->v.ts.nsec) - (a->v.ts.nsec < b->v.ts.nsec);
		return true;
	case CEL_DURATION:
		*cmp = (a->v.dur > b->v.dur) - (a->v.dur < b->v.dur);
		return true;
	default:
		return false;
	}
}

/*
 * 1 equal, 0 unequal, -1 error (an operand is an error), -2 out of steps:
 * *steps counts down one per list element or map entry compared (values
 * sharing their parts, cel.bind(a, [a, a], ...), take exponential time).
 */
static int equal3(const struct cel_value *a, const struct cel_value *b, bool strict,
		  uint64_t *steps)
{
	size_t i, n;
	int c;
	bool nan;

	if (a->kind == CEL_ERROR || b->kind == CEL_ERROR)
		return -1;
	if ((a->kind == CEL_LIST || a->kind == CEL_MAP) && (*steps)-- == 0)
		return -2;
	if (!strict && is_num(a) && is_num(b))
		return num_cmp(a, b, &c) && c == 0;
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case CEL_NULL:
		return 1;
	case CEL_DOUBLE:
		if (strict && isnan(a->v.d) && isnan(b->v.d))
			return 1;
		return a->v.d == b->v.d;
	case CEL_TYPE:
		return strcmp(a->v.type, b->v.type) == 0;
	case CEL_OPAQUE:
		return a->v.obj.type == b->v.obj.type &&
		       a->v.obj.type->equal(a->v.obj.data, b->v.obj.data);
	case CEL_OPTIONAL:
		if (!a->v.opt || !b->v.opt)
			return !a->v.opt && !b->v.opt;
		return equal3(a->v.opt, b->v.opt, strict, steps);
	case CEL_LIST: {
		int r = 1;

		n = cel_list_size(a);
		if (n != cel_list_size(b))
			return 0;
		for (i = 0; i < n; i++) {
			struct cel_value x = cel_list_get(a, i), y = cel_list_get(b, i);
			int e = equal3(&x, &y, strict, steps);

			if (e == 0 || e == -2)
				return e;
			if (e < 0)
				r = -1;
		}
		return r;
	}
	case CEL_MAP: {
		int r = 1;

		n = cel_map_size(a);
		if (n != cel_map_size(b))
			return 0;
		for (i = 0; i < n; i++) {
			struct cel_value k, x, y;
			int e;

			cel_map_entry(a, i, &k, &x);
			if (!cel_map_find(b, &k, &y))
				return 0;
			if (strict) {
				/* strict: the key found must be of the same kind */
				size_t j;

				for (j = 0; j < n; j++) {
					struct cel_value k2, y2;

					cel_map_entry(b, j, &k2, &y2);
					if (k2.kind == k.kind && key_equal(&k2, &k))
						break;
				}
				if (j == n)
					return 0;
			}
			e = equal3(&x, &y, strict, steps);
			if (e == 0 || e == -2)
				return e;
			if (e < 0)
				r = -1;
		}
		return r;
	}
	default:
		if (!cel_compare(a, b, &c, &nan))
			return 0;
		return c == 0;
	}
}

struct cel_value cel_equals(struct cel_eval *ev, const struct cel_value *a,
			    const struct cel_value *b, int pos)
{
	/* scalars of one kind: no budget to share out (nothing charged) */
	if (a->kind == b->kind && cel_charge(ev, 0)) {
		switch (a->kind) {
		case CEL_BOOL:
			return cel_bool(a->v.b == b->v.b);
		case CEL_INT:
			return cel_bool(a->v.i == b->v.i);
		case CEL_STRING:
			return cel_bool(
			    a->v.s.n == b->v.s.n &&
			    (a->v.s.n == 0 || memcmp(a->v.s.p, b->v.s.p, a->v.s.n) == 0));
		default:
			break;
		}
	}
	/* a quarter per element compared, within what is left of the budget */
	uint64_t left = ev->limit ? (ev->limit > ev->cost ? (ev->limit - ev->cost) * 4 + 4 : 4)
				  : UINT64_MAX,
		 steps = left;
	int e = equal3(a, b, false, &steps);

	if (!cel_charge(ev, (left - steps) / 4) || e == -2) {
		struct cel_value v = {.kind = CEL_ERROR};

		cel_charge(ev, ev->limit + 1);
		v.v.err = &ev->abort_err;
		return v;
	}
	if (e < 0)
		return a->kind == CEL_ERROR ? *a : *b;
	return cel_bool(e == 1);
}

bool cel_value_identical(const struct cel_value *a, const struct cel_value *b)
{
	uint64_t steps = UINT64_MAX;

	return equal3(a, b, true, &steps) == 1;
}

/* ---- output ---- */

json_t *cel_value_to_json(const struct cel_value *v)
{
	struct gv_buf b = {0};
	json_t *j = NULL;
	size_t i, n;

	switch (v->kind) {
	case CEL_NULL:
		return json_null();
	case CEL_BOOL:
		return json_boolean(v->v.b);
	case CEL_INT:
		return json_integer((json_int_t)v->v.i);
	case CEL_UINT:
		if (v->v.u <= (uint64_t)INT64_MAX)
			return json_integer((json_int_t)v->v.u);
		return json_real((double)v->v.u);
	case CEL_DOUBLE:
		if (isnan(v->v.d))
			return json_string("NaN");
		if (isinf(v->v.d))
			return json_string(v->v.d > 0 ? "Infinity" : "-Infinity");
		return json_real(v->v.d);
	case CEL_STRING:
		return json_stringn(v->v.s.p, v->v.s.n);
	case CEL_BYTES: {
		static const char b64[] =
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const unsigned char *s = (const unsigned char *)v->v.s.p;

		for (i = 0; i < v->v.s.n; i += 3) {
			unsigned x = (unsigned)s[i] << 16;
			size_t left = v->v.s.n - i;

			if (left > 1)
				x |= (unsigned)s[i + 1] << 8;
			if (left > 2)
				x |= s[i + 2];
			gv_buf_addc(&b, b64[(x >> 18) & 63]);
			gv_buf_addc(&b, b64[(x >> 12) & 63]);
			gv_buf_addc(&b, left > 1 ? b64[(x >> 6) & 63] : '=');
			gv_buf_addc(&b, left > 2 ? b64[x & 63] : '=');
		}
		j = json_stringn(gv_buf_str(&b), b.len);
		gv_buf_release(&b);
		return j;
	}
	case CEL_LIST:
		if (v->json)
			return json_incref((json_t *)v->v.json);
		j = json_array();
		n = cel_list_size(v);
		for (i = 0; i < n; i++) {
			struct cel_value e = cel_list_get(v, i);
			json_t *x = cel_value_to_json(&e);

			if (!x) {
				json_decref(j);
				return NULL;
			}
			json_array_append_new(j, x);
		}
		return j;
	case CEL_MAP:
		if (v->json)
			return json_incref((json_t *)v->v.json);
		j = json_object();
		n = cel_map_size(v);
		for (i = 0; i < n; i++) {
			struct cel_value k, e;
			json_t *x;

			cel_map_entry(v, i, &k, &e);
			x = cel_value_to_json(&e);
			if (!x) {
				json_decref(j);
				return NULL;
			}
			gv_buf_reset(&b);
			if (k.kind == CEL_STRING)
				gv_buf_add(&b, k.v.s.p, k.v.s.n);
			else
				cel_value_format(&k, &b);
			json_object_setn_new(j, gv_buf_str(&b), b.len, x);
		}
		gv_buf_release(&b);
		return j;
	case CEL_TIMESTAMP:
		cel_format_timestamp(v->v.ts.sec, v->v.ts.nsec, &b);
		j = json_string(gv_buf_str(&b));
		gv_buf_release(&b);
		return j;
	case CEL_DURATION:
		cel_format_duration(v->v.dur, &b);
		j = json_string(gv_buf_str(&b));
		gv_buf_release(&b);
		return j;
	case CEL_TYPE:
		return json_string(v->v.type);
	case CEL_OPTIONAL:
		return v->v.opt ? cel_value_to_json(v->v.opt) : json_null();
	case CEL_OPAQUE:
		v->v.obj.type->text(v->v.obj.data, &b);
		j = json_string(gv_buf_str(&b));
		gv_buf_release(&b);
		return j;
	default:
		return NULL;
	}
}

static void format_string(const char *p, size_t n, bool bytes, struct gv_buf *out)
{
	size_t i;

	if (bytes)
		gv_buf_addc(out, 'b');
	gv_buf_addc(out, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '"' || c == '\\') {
			gv_buf_addc(out, '\\');
			gv_buf_addc(out, (char)c);
		} else if (c == '\n') {
			gv_buf_adds(out, "\\n");
		} else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) {
			gv_buf_addf(out, "\\x%02x", c);
		} else {
			gv_buf_addc(out, (char)c);
		}
	}
	gv_buf_addc(out, '"');
}

void cel_value_format(const struct cel_value *v, struct gv_buf *out)
{
	size_t i, n;

	switch (v->kind) {
	case CEL_NULL:
		gv_buf_adds(out, "null");
		break;
	case CEL_BOOL:
		gv_buf_adds(out, v->v.b ? "true" : "false");
		break;
	case CEL_INT:
		gv_buf_addf(out, "%lld", (long long)v->v.i);
		break;
	case CEL_UINT:
		gv_buf_addf(out, "%lluu", (unsigned long long)v->v.u);
		break;
	case CEL_DOUBLE:
		if (isnan(v->v.d))
			gv_buf_adds(out, "double(\"NaN\")");
		else if (isinf(v->v.d))
			gv_buf_adds(out,
				    v->v.d > 0 ? "double(\"Infinity\")" : "double(\"-Infinity\")");
		else {
			char tmp[64];

			snprintf(tmp, sizeof(tmp), "%.17g", v->v.d);
			gv_buf_adds(out, tmp);
			if (!strpbrk(tmp, ".e"))
				gv_buf_adds(out, ".0");
		}
		break;
	case CEL_STRING:
	case CEL_BYTES:
		format_string(v->v.s.p, v->v.s.n, v->kind == CEL_BYTES, out);
		break;
	case CEL_LIST:
		gv_buf_addc(out, '[');
		n = cel_list_size(v);
		for (i = 0; i < n; i++) {
			struct cel_value e = cel_list_get(v, i);

			if (i)
				gv_buf_adds(out, ", ");
			cel_value_format(&e, out);
		}
		gv_buf_addc(out, ']');
		break;
	case CEL_MAP:
		gv_buf_addc(out, '{');
		n = cel_map_size(v);
		for (i = 0; i < n; i++) {
			struct cel_value k, e;

			cel_map_entry(v, i, &k, &e);
			if (i)
				gv_buf_adds(out, ", ");
			cel_value_format(&k, out);
			gv_buf_adds(out, ": ");
			cel_value_format(&e, out);
		}
		gv_buf_addc(out, '}');
		break;
	case CEL_TIMESTAMP:
		gv_buf_adds(out, "timestamp(\"");
		cel_format_timestamp(v->v.ts.sec, v->v.ts.nsec, out);
		gv_buf_adds(out, "\")");
		break;
	case CEL_DURATION:
		gv_buf_adds(out, "duration(\"");
		cel_format_duration(v->v.dur, out);
		gv_buf_adds(out, "\")");
		break;
	case CEL_TYPE:
		gv_buf_adds(out, v->v.type);
		break;
	case CEL_OPTIONAL:
		if (!v->v.opt) {
			gv_buf_adds(out, "optional.none()");
		} else {
			gv_buf_adds(out, "optional.of(");
			cel_value_format(v->v.opt, out);
			gv_buf_addc(out, ')');
		}
		break;
	case CEL_OPAQUE: {
		struct gv_buf t = {0};

		v->v.obj.type->text(v->v.obj.data, &t);
		gv_buf_addf(out, "%s(", v->v.obj.type->ctor);
		format_string(t.data ? t.data : "", t.len, false, out);
		gv_buf_addc(out, ')');
		gv_buf_release(&t);
		break;
	}
	default:
		gv_buf_addf(out, "error(%s)", v->v.err->msg);
		break;
	}
}
