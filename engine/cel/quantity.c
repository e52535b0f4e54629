/*
 * quantity.c - the Kubernetes quantity library (cel-semantics.md 1.9;
 * k8s.io/apiserver pkg/cel/library/quantity.go): quantity(), isQuantity()
 * and the comparisons and conversions of a Quantity (compareTo, isLessThan
 * and isGreaterThan also compare two Semvers, see semver.c). Parsing and exact
 * comparison are engine/value.h's (resource.ParseQuantity's grammar).
 * add() and sub() are exact within 128 bits (an overflow is an error; Go's
 * inf.Dec has no bound); their result prints as a plain decimal.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <math.h>
#include <string.h>

#include "engine/value.h"
#include "common/banned.h"

struct cel_quantity {
	struct value_quantity q;
	const char *text; /* as written (arena) */
	size_t len;
};

static void q_text(const void *data, struct gv_buf *out)
{
	const struct cel_quantity *q = data;

	gv_buf_add(out, q->text, q->len);
}

static bool q_equal(const void *a, const void *b)
{
	const struct cel_quantity *x = a, *y = b;

	return value_quantity_cmp(&x->q, &y->q) == 0;
}

static const struct cel_opaque_type quantity_type = {"kubernetes.Quantity", "quantity", false,
						     q_text, q_equal};

static bool parse(const struct cel_value *s, struct value_quantity *q)
{
	char buf[128];

	if (s->v.s.n == 0 || s->v.s.n >= sizeof(buf) || memchr(s->v.s.p, 0, s->v.s.n))
		return false;
	memcpy(buf, s->v.s.p, s->v.s.n);
	buf[s->v.s.n] = 0;
	return value_parse_quantity(buf, q);
}

static const struct cel_quantity *as_q(const struct cel_value *v)
{
	return v->kind == CEL_OPAQUE && v->v.obj.type == &quantity_type ? v->v.obj.data : NULL;
}

#define FN(name)                                                                                   \
	static struct cel_value name(struct cel_eval *ev, const struct cel_node *n,                \
				     struct cel_value *a, int na)

static struct cel_value overload(struct cel_eval *ev, const struct cel_node *n,
				 const struct cel_value *a, int na)
{
	return cel_err(ev, n->pos, "no such overload: %s(%s%s%s)", n->name, cel_type_name(&a[0]),
		       na > 1 ? ", " : "", na > 1 ? cel_type_name(&a[1]) : "");
}

FN(f_quantity)
{
	struct cel_quantity *q;
	struct cel_value v = {.kind = CEL_OPAQUE};

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	q = cel_eval_alloc(ev, sizeof(*q));
	if (!parse(&a[0], &q->q))
		return cel_err(ev, n->pos,
			       "quantities must match the regular expression "
			       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
	q->text = a[0].v.s.p;
	q->len = a[0].v.s.n;
	v.v.obj.type = &quantity_type;
	v.v.obj.data = q;
	return v;
}

FN(f_is_quantity)
{
	struct value_quantity q;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, a, na);
	return cel_bool(parse(&a[0], &q));
}

/* -1, 0 or 1 in *c; false unless both are quantities (or both semvers). */
static bool cmp2(const struct cel_value *a, const struct cel_value *b, int *c)
{
	const struct cel_quantity *x = as_q(a), *y = as_q(b);

	if (!x || !y)
		return cel_semver_cmp(a, b, c);
	*c = value_quantity_cmp(&x->q, &y->q);
	return true;
}

FN(f_compare_to)
{
	int c;

	if (!cmp2(&a[0], &a[1], &c))
		return overload(ev, n, a, na);
	return cel_int(c);
}

FN(f_less)
{
	int c;

	if (!cmp2(&a[0], &a[1], &c))
		return overload(ev, n, a, na);
	return cel_bool(c < 0);
}

FN(f_greater)
{
	int c;

	if (!cmp2(&a[0], &a[1], &c))
		return overload(ev, n, a, na);
	return cel_bool(c > 0);
}

FN(f_sign)
{
	const struct cel_quantity *q = as_q(&a[0]);

	if (!q)
		return overload(ev, n, a, na);
	if (q->q.coef_hi == 0 && q->q.coef_lo == 0)
		return cel_int(0);
	return cel_int(q->q.neg ? -1 : 1);
}

/* The quantity as an int64, when it is an integer that fits. */
static bool as_int64(const struct value_quantity *q, int64_t *out)
{
	uint64_t c = q->coef_lo;
	long long e;

	if (q->coef_hi)
		return false;
	if (c == 0) {
		*out = 0;
		return true;
	}
	if (q->exp10 < 0)
		return false;
	for (e = 0; e < q->exp10; e++) {
		if (c > UINT64_MAX / 10)
			return false;
		c *= 10;
	}
	if (q->neg ? c > (uint64_t)INT64_MAX + 1 : c > (uint64_t)INT64_MAX)
		return false;
	*out = q->neg ? (int64_t)(0 - c) : (int64_t)c;
	return true;
}

FN(f_is_integer)
{
	const struct cel_quantity *q = as_q(&a[0]);
	int64_t i;

	if (!q)
		return overload(ev, n, a, na);
	return cel_bool(as_int64(&q->q, &i));
}

FN(f_as_integer)
{
	const struct cel_quantity *q = as_q(&a[0]);
	int64_t i;

	if (!q)
		return overload(ev, n, a, na);
	if (!as_int64(&q->q, &i))
		return cel_err(ev, n->pos, "cannot convert value to integer");
	return cel_int(i);
}

FN(f_as_float)
{
	const struct cel_quantity *q = as_q(&a[0]);

	if (!q)
		return overload(ev, n, a, na);
	return cel_double((double)q->q.v);
}

/* A quantity's exact value as a signed 128-bit coefficient; false past 2^127. */
static bool to_i128(const struct value_quantity *q, __int128 *c)
{
	if (q->coef_hi >> 63)
		return false;
	*c = (__int128)(((unsigned __int128)q->coef_hi << 64) | q->coef_lo);
	if (q->neg)
		*c = -*c;
	return true;
}

/* a + sign * b exactly (inf.Dec arithmetic, within 128 bits), as a new quantity. */
static struct cel_value add_sub(struct cel_eval *ev, const struct cel_node *n,
				const struct value_quantity *x, const struct value_quantity *y,
				int sign)
{
	__int128 a, b, sum;
	long long ea = x->exp10, eb = y->exp10, e;
	struct cel_quantity *q;
	struct cel_value v = {.kind = CEL_OPAQUE};
	unsigned __int128 mag;
	struct gv_buf t = {0};
	char digits[48];
	int nd = 0;

	if (!to_i128(x, &a) || !to_i128(y, &b))
		return cel_err(ev, n->pos, "quantity overflow");
	if (sign < 0)
		b = -b;
	/* bring both to the smaller exponent */
	while (ea > eb && a != 0) {
		if (__builtin_mul_overflow(a, (__int128)10, &a))
			return cel_err(ev, n->pos, "quantity overflow");
		ea--;
	}
	while (eb > ea && b != 0) {
		if (__builtin_mul_overflow(b, (__int128)10, &b))
			return cel_err(ev, n->pos, "quantity overflow");
		eb--;
	}
	e = a == 0 ? eb : ea;
	if (__builtin_add_overflow(a, b, &sum))
		return cel_err(ev, n->pos, "quantity overflow");
	while (sum != 0 && sum % 10 == 0) {
		sum /= 10;
		e++;
	}
	if (sum == 0)
		e = 0;
	q = cel_eval_alloc(ev, sizeof(*q));
	memset(&q->q, 0, sizeof(q->q));
	q->q.neg = sum < 0;
	mag = sum < 0 ? (unsigned __int128)(-sum) : (unsigned __int128)sum;
	q->q.coef_hi = (unsigned long long)(mag >> 64);
	q->q.coef_lo = (unsigned long long)mag;
	q->q.exp10 = e;
	q->q.v = (long double)sum * powl(10.0L, (long double)e);
	/* text: the decimal value ("1.5", "-250", "3e+30") */
	do {
		digits[nd++] = (char)('0' + (int)(mag % 10));
		mag /= 10;
	} while (mag);
	if (q->q.neg)
		gv_buf_addc(&t, '-');
	if (e >= 0 && e <= 18) {
		while (nd)
			gv_buf_addc(&t, digits[--nd]);
		for (; e > 0; e--)
			gv_buf_addc(&t, '0');
	} else if (e < 0 && -e < nd) {
		int k;

		for (k = nd - 1; k >= 0; k--) {
			gv_buf_addc(&t, digits[k]);
			if (k == (int)-e)
				gv_buf_addc(&t, '.');
		}
	} else if (e < 0 && -e <= 30) {
		gv_buf_adds(&t, "0.");
		for (long long z = -e - nd; z > 0; z--)
			gv_buf_addc(&t, '0');
		while (nd)
			gv_buf_addc(&t, digits[--nd]);
	} else {
		while (nd)
			gv_buf_addc(&t, digits[--nd]);
		gv_buf_addf(&t, "e%lld", e);
	}
	q->len = t.len;
	q->text = cel_eval_strdup(ev, gv_buf_str(&t), t.len);
	gv_buf_release(&t);
	v.v.obj.type = &quantity_type;
	v.v.obj.data = q;
	return v;
}

static struct cel_value arith(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
			      int na, int sign)
{
	const struct cel_quantity *x = as_q(&a[0]), *y = as_q(&a[1]);
	struct value_quantity iq;

	if (!x)
		return overload(ev, n, a, na);
	if (y)
		return add_sub(ev, n, &x->q, &y->q, sign);
	if (a[1].kind != CEL_INT)
		return overload(ev, n, a, na);
	memset(&iq, 0, sizeof(iq));
	iq.neg = a[1].v.i < 0;
	iq.coef_lo = a[1].v.i < 0 ? (uint64_t)0 - (uint64_t)a[1].v.i : (uint64_t)a[1].v.i;
	while (iq.coef_lo && iq.coef_lo % 10 == 0) {
		iq.coef_lo /= 10;
		iq.exp10++;
	}
	return add_sub(ev, n, &x->q, &iq, sign);
}

FN(f_add)
{
	return arith(ev, n, a, na, 1);
}

FN(f_sub)
{
	return arith(ev, n, a, na, -1);
}

#define G CEL_FN_GLOBAL
#define M CEL_FN_MEMBER
const struct cel_func cel_quantity_funcs[] = {
    {"quantity", f_quantity, 1, 1, G, false},
    {"isQuantity", f_is_quantity, 1, 1, G, false},
    {"compareTo", f_compare_to, 2, 2, M, false},
    {"isLessThan", f_less, 2, 2, M, false},
    {"isGreaterThan", f_greater, 2, 2, M, false},
    {"sign", f_sign, 1, 1, M, false},
    {"isInteger", f_is_integer, 1, 1, M, false},
    {"asInteger", f_as_integer, 1, 1, M, false},
    {"asApproximateFloat", f_as_float, 1, 1, M, false},
    {"add", f_add, 2, 2, M, false},
    {"sub", f_sub, 2, 2, M, false},
};
#undef G
#undef M
const size_t cel_quantity_nfuncs = GV_ARRAY_LEN(cel_quantity_funcs);
