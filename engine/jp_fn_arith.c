/*
 * jp_fn_arith.c - add, subtract, multiply, divide, modulo, sum and round on
 * numbers, quantities and durations (Kyverno's arithmetic.go), with exact
 * decimals for quantities.
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
	return jp_kfail(ev, JP_ERR_INVALID_TYPE, fname, "types mismatch");
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

int jp_out_duration(long double ns, json_t **out)
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
	return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname, "quantity out of range");
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
			return jp_out_duration(op == AR_ADD ? (long double)a.ns + (long double)b.ns
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
			return jp_out_duration(duration_of(duration_seconds(a.ns) * b.f * 1e9),
					       out);
		if (!scalar_quantity(b.f, &t, &scale))
			return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
					"cannot convert %g to a quantity", b.f);
		if (!dec_mul(a.q, t, &r))
			return range_error(ev, fname);
		return out_quantity(ev, &r, a.binary, out);
	case AR_DIV:
		if (a.kind == OPD_SCALAR && b.kind == OPD_SCALAR) {
			if (b.f == 0)
				return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
						"Zero divisor passed");
			*out = jp_number(a.f / b.f);
			return 0;
		}
		if (a.kind == OPD_QUANTITY && b.kind == OPD_QUANTITY) {
			double dv = dec_double(&b.q);

			if (dv == 0)
				return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
						"Zero divisor passed");
			*out = jp_number(dec_double(&a.q) / dv);
			return 0;
		}
		if (a.kind == OPD_DURATION && b.kind == OPD_DURATION) {
			if (duration_seconds(b.ns) == 0)
				return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
						"Zero divisor passed");
			*out = jp_number(duration_seconds(a.ns) / duration_seconds(b.ns));
			return 0;
		}
		if (b.kind != OPD_SCALAR || a.kind == OPD_SCALAR)
			break;
		if (b.f == 0)
			return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname, "Zero divisor passed");
		if (a.kind == OPD_DURATION)
			return jp_out_duration(duration_of(duration_seconds(a.ns) / b.f * 1e9),
					       out);
		if (!scalar_quantity(b.f, &t, &scale))
			return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
					"cannot convert %g to a quantity", b.f);
		if (!dec_quo(a.q, t, a.scale > scale ? a.scale : scale, &r))
			return range_error(ev, fname);
		return out_quantity(ev, &r, a.binary, out);
	case AR_MOD:
		if (a.kind != b.kind)
			break;
		if (a.kind == OPD_DURATION) {
			if (b.ns == 0)
				return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
						"Zero divisor passed");
			if (b.ns == -1)
				return jp_out_duration(0, out);
			return jp_out_duration((long double)(a.ns % b.ns), out);
		} else {
			double f1 = a.kind == OPD_SCALAR ? a.f : dec_double(&a.q);
			double f2 = b.kind == OPD_SCALAR ? b.f : dec_double(&b.q);
			long long i1, i2;

			if (f1 != trunc(f1) || f2 != trunc(f2) || fabs(f1) > 9.2e18 ||
			    fabs(f2) > 9.2e18)
				return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
						"Non-integer argument(s) passed for modulo");
			i1 = (long long)f1;
			i2 = (long long)f2;
			if (i2 == 0)
				return jp_kfail(ev, JP_ERR_INVALID_VALUE, fname,
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
	return jp_kfail(ev, JP_ERR_INVALID_TYPE, fname, "types mismatch");
}

int jp_fn_add(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
	      json_t **out)
{
	return arith(ev, AR_ADD, ARGV(0), ARGV(1), out);
}

int jp_fn_subtract(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	return arith(ev, AR_SUB, ARGV(0), ARGV(1), out);
}

int jp_fn_multiply(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	return arith(ev, AR_MUL, ARGV(0), ARGV(1), out);
}

int jp_fn_divide(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		 json_t **out)
{
	return arith(ev, AR_DIV, ARGV(0), ARGV(1), out);
}

int jp_fn_modulo(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		 json_t **out)
{
	return arith(ev, AR_MOD, ARGV(0), ARGV(1), out);
}

/* Kyverno's sum: add() folded over the list; an empty list is an error. */
int jp_fn_sum(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
	      json_t **out)
{
	size_t i, n = json_array_size(ARGV(0));
	json_t *acc, *next;
	int rc;

	if (n == 0)
		return jp_kfail(ev, JP_ERR_INVALID_VALUE, "sum",
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

int jp_fn_round(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		json_t **out)
{
	long long digits;
	double shift;

	if (!jp_int_number(ARGV(1), &digits))
		return jp_kfail(ev, JP_ERR_INVALID_VALUE, "round",
				"Non-integer argument(s) passed for round off");
	if (digits < 0)
		return jp_kfail(ev, JP_ERR_INVALID_VALUE, "round",
				"Negative argument passed for round off");
	shift = pow(10, (double)digits);
	*out = jp_number(round(json_number_value(ARGV(0)) * shift) / shift);
	if (!*out) /* 0 * inf and the like: Go would give NaN */
		*out = json_incref(ARGV(0));
	return 0;
}
