/*
 * jmespath.c - JMESPath evaluator: tree-walking evaluation of a compiled
 * expression with a step budget and a depth limit. The lexer is
 * jp_lexer.c, the parser jp_parser.c, value helpers jp_value.c, the
 * standard functions jp_std.c and Kyverno's custom functions
 * jp_functions.c; they share engine/jp_int.h.
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
#include "common/clock.h"
#include "engine/value.h"
#include "common/banned.h"
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
			return jp_fail_unknown_key(ev, n->name);
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
	if (!jp_is_number(a) || !jp_is_number(b)) {
		*out = json_null();
		goto out;
	}
	c = jp_num_cmp(a, b);
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
	else if (jp_is_number(a->v))
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
		return jp_budget_fail(ev);
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

/* The real clock and random source, for evaluations given none. */
static const struct jp_env real_env = {NULL, gv_clock_now, gv_random_u32};

static json_t *eval_top(const struct jp_expr *x, const json_t *data, struct jp_budget *b,
			const struct jp_env *env, struct jp_error *e)
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
	ev.env = env ? env : &real_env;
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
	return eval_top(x, data, NULL, NULL, e);
}

json_t *jp_eval_budget(const struct jp_expr *x, const json_t *data, struct jp_budget *b,
		       struct jp_error *e)
{
	return eval_top(x, data, b, NULL, e);
}

json_t *jp_eval_env(const struct jp_expr *x, const json_t *data, struct jp_budget *b,
		    const struct jp_env *env, struct jp_error *e)
{
	return eval_top(x, data, b, env, e);
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
