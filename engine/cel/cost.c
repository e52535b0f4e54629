/*
 * cost.c - the compile-time cost estimate of a CEL program
 * (cel-semantics.md 1.11): a range [min, max] of the runtime cost, in the
 * units of the runtime budget (1 per node evaluated, 1 per comprehension
 * iteration, size-proportional for lists and strings built).
 *
 * min is a lower bound whatever the bound documents are: only sizes known
 * from the expression itself count (literals, lists.range(N), what macros
 * and concatenation build from them), short-circuits and early exits take
 * their cheapest way, and a comprehension whose body may fail is counted
 * for one iteration only (an error ends it). The size-proportional rates are
 * below the runtime's, so min never exceeds what an evaluation is charged.
 * An expression whose min exceeds the per-expression limit cannot finish:
 * cel_compile refuses it ("estimated cost exceeds budget").
 *
 * max is Kubernetes' worst case: a value of unknown size (a document, a
 * variable) is bounded by the largest request the API server accepts,
 * 3 MiB, i.e. a string of 3 Mi bytes or a list of 1.5 Mi elements (2 bytes
 * each at least, "0,"); saturates at UINT64_MAX.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

#define MAX_REQUEST_BYTES ((uint64_t)3 << 20)
#define UNKNOWN_SIZE	  (MAX_REQUEST_BYTES / 2)

struct est {
	uint64_t cmin, cmax; /* cost */
	uint64_t smin, smax; /* size of the result (list elements, string bytes) */
	bool safe;	     /* never an error value (literals, variables, built from them) */
};

struct cvar {
	const char *name;
	struct est e;
};

struct coster {
	struct cvar *vars;
	size_t nvars, cap;
};

static uint64_t add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
	if (a && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

static uint64_t umin(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void push(struct coster *c, const char *name, const struct est *e)
{
	if (c->nvars == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->vars = gv_xrealloc(c->vars, sizeof(*c->vars) * c->cap);
	}
	c->vars[c->nvars].name = name;
	c->vars[c->nvars].e = *e;
	c->nvars++;
}

static struct est unknown(void)
{
	struct est e = {0, 0, 0, UNKNOWN_SIZE, false};

	return e;
}

static struct est walk(struct coster *c, const struct cel_node *n);

static struct est compr(struct coster *c, const struct cel_node *n)
{
	enum cel_macro m = (enum cel_macro)n->op;
	struct est r = walk(c, n->a[0]), body = {0}, var = unknown(), e;
	size_t base = c->nvars;
	uint64_t iters_min, per_min, per_max;
	bool safe = r.safe;
	bool filtered = (m == M_MAP || m == M_TRANSFORM_LIST || m == M_TRANSFORM_MAP ||
			 m == M_TRANSFORM_ENTRY) &&
			n->n == 3;
	int i;

	var.smax = UNKNOWN_SIZE;
	var.safe = true; /* an element or a key, never an error */
	push(c, n->name, &var);
	if (n->name2)
		push(c, n->name2, &var);
	body.cmin = 0;
	body.cmax = 0;
	body.safe = true;
	for (i = 1; i < n->n; i++) {
		e = walk(c, n->a[i]);
		/* with a filter (x, p, t), t runs only where p holds: at least p */
		if (!(filtered && i == 2))
			body.cmin = add(body.cmin, e.cmin);
		body.cmax = add(body.cmax, e.cmax);
		body.safe &= e.safe;
		body.smin = e.smin;
		body.smax = e.smax;
	}
	c->nvars = base;
	if (m == M_OPT_MAP || m == M_OPT_FLAT_MAP) {
		r.cmax = add(add(r.cmax, body.cmax), 1);
		r.cmin = add(r.cmin, 1);
		r.smin = 0;
		r.smax = body.smax;
		r.safe = false;
		return r;
	}
	/* early exits (all, exists, exists_one) and errors end the loop */
	if (m == M_ALL || m == M_EXISTS || m == M_EXISTS_ONE || !safe)
		iters_min = 0;
	else if (!body.safe)
		iters_min = r.smin ? 1 : 0;
	else
		iters_min = r.smin;
	per_min = add(1, body.cmin);
	per_max = add(1, body.cmax);
	e.cmin = add(add(1, r.cmin), mul(iters_min, per_min));
	/* per iteration, and the list or map built */
	e.cmax = add(add(add(1, r.cmax), mul(r.smax, per_max)), r.smax);
	e.safe = false;
	e.smin = 0;
	e.smax = r.smax;
	if ((m == M_MAP || m == M_TRANSFORM_LIST) && n->n == 2 && safe && body.safe) {
		e.smin = r.smin;
		e.safe = true;
		/* the list built: a quarter of its elements, at the runtime's lowest rate */
		e.cmin = add(e.cmin, r.smin / 16);
	}
	if (m == M_SORT_BY) {
		e.smin = r.smin;
		e.cmax = add(e.cmax, mul(r.smax, 64));
	}
	return e;
}

static struct est walk(struct coster *c, const struct cel_node *n)
{
	struct est e = unknown(), a, b, t;
	int i;
	size_t k;

	e.cmin = 1;
	e.cmax = 1;
	switch ((enum cel_node_kind)n->kind) {
	case N_LIT:
		e.safe = true;
		e.smin = e.smax = 0;
		if (n->lit.kind == CEL_STRING || n->lit.kind == CEL_BYTES)
			e.smin = e.smax = n->lit.v.s.n;
		return e;
	case N_IDENT:
		for (k = c->nvars; k > 0; k--) {
			if (strcmp(c->vars[k - 1].name, n->name) == 0) {
				e.smin = c->vars[k - 1].e.smin;
				e.smax = c->vars[k - 1].e.smax;
				e.safe = c->vars[k - 1].e.safe;
				return e;
			}
		}
		return e;
	case N_AND:
	case N_OR:
		a = walk(c, n->a[0]);
		b = walk(c, n->a[1]);
		e.cmin = add(1, umin(a.cmin, b.cmin));
		e.cmax = add(1, add(a.cmax, b.cmax));
		e.smin = e.smax = 0;
		return e;
	case N_COND:
		a = walk(c, n->a[0]);
		b = walk(c, n->a[1]);
		t = walk(c, n->a[2]);
		e.cmin = add(add(1, a.cmin), umin(b.cmin, t.cmin));
		e.cmax = add(add(1, a.cmax), umax(b.cmax, t.cmax));
		e.smin = umin(b.smin, t.smin);
		e.smax = umax(b.smax, t.smax);
		return e;
	case N_COMPR:
		return compr(c, n);
	case N_BIND: {
		size_t base = c->nvars;

		a = walk(c, n->a[0]);
		push(c, n->name, &a);
		b = walk(c, n->a[1]);
		c->nvars = base;
		b.cmin = add(add(b.cmin, a.cmin), 1);
		b.cmax = add(add(b.cmax, a.cmax), 1);
		b.safe &= a.safe;
		return b;
	}
	case N_LIST:
	case N_MAP:
		e.safe = n->kind == N_LIST;
		e.smin = 0;
		e.smax = 0;
		for (i = 0; i < n->n; i++) {
			a = walk(c, n->a[i]);
			e.cmin = add(e.cmin, a.cmin);
			e.cmax = add(e.cmax, a.cmax);
			e.safe &= a.safe;
			if (n->kind == N_LIST && !(i < 64 && (n->optmask >> i & 1)))
				e.smin++;
			e.smax++;
		}
		return e;
	case N_BINARY:
		a = walk(c, n->a[0]);
		b = walk(c, n->a[1]);
		/*
		 * the minimum: the left operand alone, as an error there returns
		 * before the right one (and any concatenation) is evaluated
		 */
		e.cmin = add(1, a.cmin);
		e.cmax = add(1, add(a.cmax, b.cmax));
		e.smin = e.smax = 0;
		if (n->op == OP_ADD) {
			/* concatenation: the runtime charges at most size/4 + 1 */
			e.smin = add(a.smin, b.smin);
			e.smax = add(a.smax, b.smax);
			e.cmax = add(e.cmax, e.smax / 4 + 1);
		} else if (n->op == OP_IN) {
			e.cmax = add(e.cmax, b.smax);
		} else if (n->op >= OP_EQ && n->op <= OP_GE) {
			e.cmax = add(e.cmax, umax(a.smax, b.smax));
		}
		return e;
	default:
		break;
	}
	/*
	 * select, has, index, unary, call: children, then the call's own cost;
	 * the minimum counts the first child alone (an error there returns
	 * before the others are evaluated; a lazy function such as or() may
	 * leave its argument unused)
	 */
	e.cmin = 1;
	e.cmax = 1;
	for (i = 0; i < n->n; i++) {
		a = walk(c, n->a[i]);
		/* a qualified name (net.IP, a.b.c) may resolve in one step */
		if (i == 0 && !(n->kind == N_SELECT &&
				(n->a[i]->kind == N_IDENT || n->a[i]->kind == N_SELECT)))
			e.cmin = add(e.cmin, a.cmin);
		e.cmax = add(e.cmax, a.cmax);
		if (i == 0) {
			e.smax = umax(a.smax, UNKNOWN_SIZE);
			if (n->kind == N_CALL) /* size-proportional functions */
				e.cmax = add(e.cmax, a.smax);
		}
	}
	if (n->kind == N_CALL && n->name && strcmp(n->name, "lists.range") == 0 && n->n == 1 &&
	    n->a[0]->kind == N_LIT && n->a[0]->lit.kind == CEL_INT) {
		int64_t v = n->a[0]->lit.v.i;

		e.smin = e.smax = v > 0 ? (uint64_t)v : 0;
		e.cmin = add(e.cmin, e.smin);
		e.cmax = add(e.cmax, e.smax);
		e.safe = v <= 10000000;
	}
	return e;
}

void cel_program_cost(const struct cel_program *p, uint64_t *min, uint64_t *max)
{
	struct coster c = {0};
	struct est e = walk(&c, p->root);

	*min = e.cmin;
	*max = e.cmax;
	free(c.vars);
}
