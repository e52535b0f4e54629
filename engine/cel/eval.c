/*
 * eval.c - the CEL evaluator: a walk of the AST with CEL's error semantics
 * (cel-semantics.md 1.4-1.6): errors are values; && and || absorb them
 * commutatively; ?: evaluates only the branch taken; macros; a runtime cost
 * budget that ends any evaluation with a fatal error.
 *
 * What can be decided once per program is (cel_resolve): variable slots,
 * constant lists, the specialised evaluations of enum cel_fast, and the field
 * cache entries. Each node kind has its function (eval_fns); a chain of
 * selections a.?b.c is walked as a whole (eval_chain) without the optional
 * values of its steps, and a path from a bound variable (object.spec) is
 * looked up once per evaluation however often it is written. All of it
 * charges the cost of evaluating node by node.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

/* Memory an evaluation may take from its arena. */
#define CEL_MEM_LIMIT ((size_t)64 << 20)

struct cel_eval *cel_eval_new(uint64_t cost_limit)
{
	struct cel_eval *ev = gv_xcalloc(1, sizeof(*ev));

	ev->limit = cost_limit;
	ev->mem_limit = CEL_MEM_LIMIT;
	return ev;
}

void cel_eval_reset(struct cel_eval *ev)
{
	size_t i;

	cel_arena_release(&ev->arena);
	for (i = 0; i < ev->nvars; i++)
		free((char *)ev->vars[i].name);
	ev->nvars = 0;
	ev->nlocals = 0;
	ev->cost = 0;
	ev->aborted = false;
}

void cel_eval_clear(struct cel_eval *ev)
{
	cel_arena_clear(&ev->arena);
	ev->nlocals = 0;
	ev->cost = 0;
	ev->aborted = false;
}

void cel_eval_free(struct cel_eval *ev)
{
	if (!ev)
		return;
	cel_eval_reset(ev);
	cel_regex_md_free(ev->re_md);
	free(ev->cache);
	free(ev->vars);
	free(ev->locals);
	free(ev);
}

void cel_bind_value(struct cel_eval *ev, const char *name, const struct cel_value *v)
{
	size_t i;

	for (i = 0; i < ev->nvars; i++) {
		if (strcmp(ev->vars[i].name, name) == 0) {
			ev->vars[i].v = *v;
			return;
		}
	}
	if (ev->nvars == ev->capvars) {
		ev->capvars = ev->capvars ? ev->capvars * 2 : 8;
		ev->vars = gv_xrealloc(ev->vars, sizeof(*ev->vars) * ev->capvars);
	}
	ev->vars[ev->nvars].name = gv_xstrdup(name);
	ev->vars[ev->nvars].v = *v;
	ev->nvars++;
}

void cel_bind_json(struct cel_eval *ev, const char *name, const json_t *doc)
{
	struct cel_value v = cel_from_json(doc);

	cel_bind_value(ev, name, &v);
}

static inline void push_local(struct cel_eval *ev, const char *name, const struct cel_value *v)
{
	if (ev->nlocals == ev->caplocals) {
		ev->caplocals = ev->caplocals ? ev->caplocals * 2 : 16;
		ev->locals = gv_xrealloc(ev->locals, sizeof(*ev->locals) * ev->caplocals);
	}
	ev->locals[ev->nlocals].name = name;
	ev->locals[ev->nlocals].v = *v;
	ev->nlocals++;
}

/* A bound (not comprehension) variable. */
static bool lookup_var(struct cel_eval *ev, const char *name, struct cel_value *out)
{
	size_t i;

	for (i = 0; i < ev->nvars; i++) {
		if (ev->vars[i].name[0] == name[0] && strcmp(ev->vars[i].name, name) == 0) {
			*out = ev->vars[i].v;
			return true;
		}
	}
	return false;
}

/*
 * The variable an identifier names: a comprehension or cel.bind variable by
 * its resolved slot (cel_resolve), else a bound one.
 */
static inline bool lookup_ident(struct cel_eval *ev, const struct cel_node *n,
				struct cel_value *out)
{
	if (n->slot) {
		*out = ev->locals[n->slot - 1].v;
		return true;
	}
	return lookup_var(ev, n->name, out);
}

static bool lookup(struct cel_eval *ev, const char *name, struct cel_value *out)
{
	size_t i;

	for (i = ev->nlocals; i > 0; i--) {
		if (strcmp(ev->locals[i - 1].name, name) == 0) {
			*out = ev->locals[i - 1].v;
			return true;
		}
	}
	for (i = 0; i < ev->nvars; i++) {
		if (strcmp(ev->vars[i].name, name) == 0) {
			*out = ev->vars[i].v;
			return true;
		}
	}
	return false;
}

static const char *const type_names[] = {"int",
					 "uint",
					 "double",
					 "bool",
					 "string",
					 "bytes",
					 "list",
					 "map",
					 "null_type",
					 "type",
					 "optional_type",
					 "net.IP",
					 "net.CIDR",
					 "google.protobuf.Timestamp",
					 "google.protobuf.Duration"};

static bool type_ident(const char *name, struct cel_value *out)
{
	size_t i;

	for (i = 0; i < GV_ARRAY_LEN(type_names); i++) {
		if (strcmp(type_names[i], name) == 0) {
			*out = cel_type(type_names[i]);
			return true;
		}
	}
	return false;
}

static struct cel_value aborted(struct cel_eval *ev)
{
	struct cel_value v = {.kind = CEL_ERROR};

	v.v.err = &ev->abort_err;
	return v;
}

/*
 * cel_eval_node(ev, c), with a literal or a comprehension variable read in
 * place (the same charge, no call).
 */
static inline struct cel_value eval_child(struct cel_eval *ev, const struct cel_node *c)
{
	if (c->kind == N_LIT || (c->kind == N_IDENT && c->slot)) {
		if (!cel_charge(ev, 1))
			return aborted(ev);
		return c->kind == N_LIT ? c->lit : ev->locals[c->slot - 1].v;
	}
	if (c->kind == N_LIST && c->konst) {
		/* cel_eval_node's charge: the node and each element literal */
		if (!cel_charge(ev, 1 + (uint64_t)c->n))
			return aborted(ev);
		return c->lit;
	}
	return cel_eval_node(ev, c);
}

static struct cel_value no_overload(struct cel_eval *ev, int pos, const char *what,
				    const struct cel_value *a, const struct cel_value *b)
{
	if (b)
		return cel_err(ev, pos, "no such overload: %s(%s, %s)", what, cel_type_name(a),
			       cel_type_name(b));
	return cel_err(ev, pos, "no such overload: %s(%s)", what, cel_type_name(a));
}

/* ---- arithmetic ---- */

static struct cel_value ts_make(struct cel_eval *ev, int64_t sec, int64_t nsec, int pos)
{
	struct cel_value v = {.kind = CEL_TIMESTAMP};

	if (nsec < 0) {
		nsec += 1000000000;
		sec -= 1;
	} else if (nsec >= 1000000000) {
		nsec -= 1000000000;
		sec += 1;
	}
	if (sec < CEL_TS_MIN || sec > CEL_TS_MAX)
		return cel_err(ev, pos, "timestamp overflow");
	v.v.ts.sec = sec;
	v.v.ts.nsec = (int32_t)nsec;
	return v;
}

static struct cel_value dur(int64_t ns)
{
	struct cel_value v = {.kind = CEL_DURATION};

	v.v.dur = ns;
	return v;
}

static struct cel_value concat_list(struct cel_eval *ev, const struct cel_value *a,
				    const struct cel_value *b)
{
	size_t na = cel_list_size(a), nb = cel_list_size(b), i;
	struct cel_value *items;
	struct cel_value r = {.kind = CEL_LIST};
	struct cel_list *l;

	if (!cel_charge(ev, (na + nb) / 4 + 1))
		return aborted(ev);
	/* values are immutable: l + [] is l */
	if (!nb)
		return *a;
	if (!na)
		return *b;
	items = cel_eval_alloc(ev, sizeof(*items) * (na + nb + 1));
	for (i = 0; i < na; i++)
		items[i] = cel_list_get(a, i);
	for (i = 0; i < nb; i++)
		items[na + i] = cel_list_get(b, i);
	l = cel_eval_alloc(ev, sizeof(*l));
	l->n = na + nb;
	l->v = items;
	r.v.list = l;
	return r;
}

struct cel_value cel_arith(struct cel_eval *ev, enum cel_op op, const struct cel_value *a,
			   const struct cel_value *b, int pos)
{
	static const char *const names[] = {[OP_ADD] = "_+_",
					    [OP_SUB] = "_-_",
					    [OP_MUL] = "_*_",
					    [OP_DIV] = "_/_",
					    [OP_MOD] = "_%_"};
	int64_t ri;
	uint64_t ru;

	if (a->kind == CEL_INT && b->kind == CEL_INT) {
		int64_t x = a->v.i, y = b->v.i;

		switch (op) {
		case OP_ADD:
			if (__builtin_add_overflow(x, y, &ri))
				return cel_err(ev, pos, "integer overflow");
			return cel_int(ri);
		case OP_SUB:
			if (__builtin_sub_overflow(x, y, &ri))
				return cel_err(ev, pos, "integer overflow");
			return cel_int(ri);
		case OP_MUL:
			if (__builtin_mul_overflow(x, y, &ri))
				return cel_err(ev, pos, "integer overflow");
			return cel_int(ri);
		case OP_DIV:
			if (y == 0)
				return cel_err(ev, pos, "division by zero");
			if (x == INT64_MIN && y == -1)
				return cel_err(ev, pos, "integer overflow");
			return cel_int(x / y);
		case OP_MOD:
			if (y == 0)
				return cel_err(ev, pos, "modulus by zero");
			if (x == INT64_MIN && y == -1)
				return cel_err(ev, pos, "integer overflow");
			return cel_int(x % y);
		default:
			break;
		}
	}
	if (a->kind == CEL_UINT && b->kind == CEL_UINT) {
		uint64_t x = a->v.u, y = b->v.u;

		switch (op) {
		case OP_ADD:
			if (__builtin_add_overflow(x, y, &ru))
				return cel_err(ev, pos, "unsigned integer overflow");
			return cel_uint(ru);
		case OP_SUB:
			if (__builtin_sub_overflow(x, y, &ru))
				return cel_err(ev, pos, "unsigned integer overflow");
			return cel_uint(ru);
		case OP_MUL:
			if (__builtin_mul_overflow(x, y, &ru))
				return cel_err(ev, pos, "unsigned integer overflow");
			return cel_uint(ru);
		case OP_DIV:
			if (y == 0)
				return cel_err(ev, pos, "division by zero");
			return cel_uint(x / y);
		case OP_MOD:
			if (y == 0)
				return cel_err(ev, pos, "modulus by zero");
			return cel_uint(x % y);
		default:
			break;
		}
	}
	if (a->kind == CEL_DOUBLE && b->kind == CEL_DOUBLE) {
		double x = a->v.d, y = b->v.d;

		switch (op) {
		case OP_ADD:
			return cel_double(x + y);
		case OP_SUB:
			return cel_double(x - y);
		case OP_MUL:
			return cel_double(x * y);
		case OP_DIV:
			return cel_double(x / y);
		default:
			break;
		}
	}
	if (op == OP_ADD && a->kind == b->kind && (a->kind == CEL_STRING || a->kind == CEL_BYTES)) {
		size_t n = a->v.s.n + b->v.s.n;
		char *s;

		if (!cel_charge(ev, n / 16 + 1))
			return aborted(ev);
		s = cel_eval_alloc(ev, n + 1);
		if (a->v.s.n)
			memcpy(s, a->v.s.p, a->v.s.n);
		if (b->v.s.n)
			memcpy(s + a->v.s.n, b->v.s.p, b->v.s.n);
		s[n] = 0;
		return a->kind == CEL_STRING ? cel_str(s, n) : cel_bytes(s, n);
	}
	if (op == OP_ADD && a->kind == CEL_LIST && b->kind == CEL_LIST)
		return concat_list(ev, a, b);
	if (a->kind == CEL_DURATION && b->kind == CEL_DURATION && (op == OP_ADD || op == OP_SUB)) {
		if (op == OP_ADD ? __builtin_add_overflow(a->v.dur, b->v.dur, &ri)
				 : __builtin_sub_overflow(a->v.dur, b->v.dur, &ri))
			return cel_err(ev, pos, "duration overflow");
		return dur(ri);
	}
	if ((op == OP_ADD || op == OP_SUB) && a->kind == CEL_TIMESTAMP && b->kind == CEL_DURATION) {
		int64_t d = b->v.dur, s = d / 1000000000, ns = d % 1000000000;

		if (op == OP_SUB)
			s = -s, ns = -ns;
		return ts_make(ev, a->v.ts.sec + s, a->v.ts.nsec + ns, pos);
	}
	if (op == OP_ADD && a->kind == CEL_DURATION && b->kind == CEL_TIMESTAMP)
		return cel_arith(ev, op, b, a, pos);
	if (op == OP_SUB && a->kind == CEL_TIMESTAMP && b->kind == CEL_TIMESTAMP) {
		int64_t s = a->v.ts.sec - b->v.ts.sec, ns = a->v.ts.nsec - b->v.ts.nsec;

		if (__builtin_mul_overflow(s, (int64_t)1000000000, &ri) ||
		    __builtin_add_overflow(ri, ns, &ri))
			return cel_err(ev, pos, "duration overflow");
		return dur(ri);
	}
	return no_overload(ev, pos, names[op], a, b);
}

/* ---- operators ---- */

static struct cel_value eval_in(struct cel_eval *ev, const struct cel_value *x,
				const struct cel_value *c, int pos)
{
	size_t i, n;
	struct cel_value tmp;

	if (c->kind == CEL_LIST) {
		n = cel_list_size(c);
		if (!cel_charge(ev, n / 4))
			return aborted(ev);
		for (i = 0; i < n; i++) {
			struct cel_value e = cel_list_get(c, i), r = cel_equals(ev, x, &e, pos);

			if (r.kind == CEL_BOOL && r.v.b)
				return r;
		}
		return cel_bool(false);
	}
	if (c->kind == CEL_MAP) {
		switch (x->kind) {
		case CEL_STRING:
		case CEL_INT:
		case CEL_UINT:
		case CEL_DOUBLE:
		case CEL_BOOL:
			return cel_bool(cel_map_find(c, x, &tmp));
		default:
			return cel_bool(false);
		}
	}
	return no_overload(ev, pos, "@in", x, c);
}

static struct cel_value eval_or_value(struct cel_eval *ev, const struct cel_node *n);

static __attribute__((noinline)) struct cel_value eval_binary(struct cel_eval *ev,
							      const struct cel_node *n)
{
	struct cel_value a, b, r;
	int c;
	bool nan;

	if (n->a[0]->fast == FAST_OR_VALUE) {
		/* x.?f.orValue(d) == lit, the policy library's commonest test */
		a = cel_charge(ev, 1) ? eval_or_value(ev, n->a[0]) : aborted(ev);
	} else {
		a = eval_child(ev, n->a[0]);
	}

	if (a.kind == CEL_ERROR)
		return a;
	b = eval_child(ev, n->a[1]);
	if (b.kind == CEL_ERROR)
		return b;
	if (a.kind == b.kind) {
		/* the commonest cases of cel_equals and cel_arith, in place */
		if (a.kind == CEL_BOOL && (n->op == OP_EQ || n->op == OP_NE))
			return cel_bool((a.v.b == b.v.b) == (n->op == OP_EQ));
		if (a.kind == CEL_LIST && n->op == OP_ADD)
			return concat_list(ev, &a, &b);
	}
	switch (n->op) {
	case OP_EQ:
		return cel_equals(ev, &a, &b, n->pos);
	case OP_NE:
		r = cel_equals(ev, &a, &b, n->pos);
		if (r.kind == CEL_BOOL)
			r.v.b = !r.v.b;
		return r;
	case OP_LT:
	case OP_LE:
	case OP_GT:
	case OP_GE:
		if (!cel_compare(&a, &b, &c, &nan)) {
			if (nan)
				return cel_bool(false);
			return no_overload(ev, n->pos, "relation", &a, &b);
		}
		switch (n->op) {
		case OP_LT:
			return cel_bool(c < 0);
		case OP_LE:
			return cel_bool(c <= 0);
		case OP_GT:
			return cel_bool(c > 0);
		default:
			return cel_bool(c >= 0);
		}
	case OP_IN:
		return eval_in(ev, &a, &b, n->pos);
	default:
		return cel_arith(ev, (enum cel_op)n->op, &a, &b, n->pos);
	}
}

static struct cel_value eval_unary(struct cel_eval *ev, const struct cel_node *n)
{
	struct cel_value a = eval_child(ev, n->a[0]);

	if (a.kind == CEL_ERROR)
		return a;
	if (n->op == OP_NOT) {
		if (a.kind != CEL_BOOL)
			return no_overload(ev, n->pos, "!_", &a, NULL);
		return cel_bool(!a.v.b);
	}
	switch (a.kind) {
	case CEL_INT:
		if (a.v.i == INT64_MIN)
			return cel_err(ev, n->pos, "integer overflow");
		return cel_int(-a.v.i);
	case CEL_DOUBLE:
		return cel_double(-a.v.d);
	case CEL_DURATION:
		if (a.v.dur == INT64_MIN)
			return cel_err(ev, n->pos, "duration overflow");
		return dur(-a.v.dur);
	default:
		return no_overload(ev, n->pos, "-_", &a, NULL);
	}
}

/* && (and=true) or || with commutative error absorption. */
static struct cel_value eval_logic(struct cel_eval *ev, const struct cel_node *n, bool and)
{
	struct cel_value a = eval_child(ev, n->a[0]), b;

	if (ev->aborted)
		return aborted(ev);
	if (a.kind == CEL_BOOL && a.v.b != and)
		return a;
	b = eval_child(ev, n->a[1]);
	if (ev->aborted)
		return aborted(ev);
	if (b.kind == CEL_BOOL && b.v.b != and)
		return b;
	if (a.kind == CEL_ERROR)
		return a;
	if (a.kind != CEL_BOOL)
		return no_overload(ev, n->pos, and? "_&&_" : "_||_", &a, &b);
	if (b.kind == CEL_ERROR)
		return b;
	if (b.kind != CEL_BOOL)
		return no_overload(ev, n->pos, and? "_&&_" : "_||_", &a, &b);
	return cel_bool(and);
}

/* ---- selection and indexing ---- */

static const struct cel_node *chain_root(const struct cel_node *n)
{
	while (n->kind == N_SELECT)
		n = n->a[0];
	return n;
}

static struct cel_value select_field(struct cel_eval *ev, const struct cel_value *o,
				     const char *name, size_t nlen, bool opt, int pos)
{
	struct cel_value key, r;

	if (o->kind == CEL_MAP && o->json) {
		/* a JSON object: one lookup, no key value (the hot path of policies) */
		const json_t *j = json_object_getn(o->v.json, name, nlen);

		if (j) {
			r = cel_from_json(j);
			return opt ? cel_opt(ev, &r) : r;
		}
		if (opt)
			return cel_opt(ev, NULL);
		return cel_err(ev, pos, "no such key: %s", name);
	}
	key = cel_str(name, nlen);
	if (o->kind == CEL_OPTIONAL) {
		if (!o->v.opt)
			return *o;
		/* A present value that has no fields: no presence test here (cel-spec optionals).
		 */
		if (o->v.opt->kind != CEL_MAP && o->v.opt->kind != CEL_ERROR &&
		    o->v.opt->kind != CEL_OPTIONAL)
			return cel_err(ev, pos, "no such key: %s", name);
		r = select_field(ev, o->v.opt, name, nlen, true, pos);
		return r;
	}
	if (o->kind == CEL_MAP) {
		if (cel_map_find(o, &key, &r))
			return opt ? cel_opt(ev, &r) : r;
		if (opt)
			return cel_opt(ev, NULL);
		return cel_err(ev, pos, "no such key: %s", name);
	}
	/*
	 * cel-go qualifies an optional selection as a presence test: a value
	 * that is neither a map nor a message (a JSON null above all, as in
	 * `metadata:` left empty) has no such field, so `x.?f` is
	 * optional.none() where `x.f` is an error.
	 */
	if (opt && o->kind != CEL_ERROR)
		return cel_opt(ev, NULL);
	return cel_err(ev, pos, "type '%s' does not support field selection", cel_type_name(o));
}

/*
 * a.b.c with `a` unbound: the longest prefix that names a variable
 * ("a.b.c", then "a.b" ...) or a type, and the remaining names selected on
 * it (cel-spec: namespace resolution). False when none does.
 */
static __attribute__((noinline)) bool resolve_chain(struct cel_eval *ev, const struct cel_node *top,
						    struct cel_value *out)
{
	const struct cel_node *parts[64], *t = top;
	int np = 0, k, j;

	while (t->kind == N_SELECT && np < 63) {
		parts[np++] = t;
		t = t->a[0];
	}
	if (t->kind != N_IDENT)
		return false;
	/* parts[np - 1] is the innermost selection */
	for (k = 0; k <= np; k++) {
		struct gv_buf b = {0};
		struct cel_value v;
		bool found;

		gv_buf_adds(&b, t->name);
		for (j = np - 1; j >= k; j--) {
			gv_buf_addc(&b, '.');
			gv_buf_adds(&b, parts[j]->name);
		}
		found = lookup(ev, gv_buf_str(&b), &v) || type_ident(gv_buf_str(&b), &v);
		gv_buf_release(&b);
		if (!found)
			continue;
		for (j = k - 1; j >= 0 && v.kind != CEL_ERROR; j--)
			v = select_field(ev, &v, parts[j]->name, parts[j]->nlen, false,
					 parts[j]->pos);
		*out = v;
		return true;
	}
	return false;
}

static __attribute__((noinline)) struct cel_value eval_select_generic(struct cel_eval *ev,
								      const struct cel_node *n)
{
	struct cel_value o, tmp;

	if (n->target) {
		/* a chain a.b.c whose root is unbound: dotted variables and type names */
		const struct cel_node *root = chain_root(n);

		if (root->kind == N_IDENT && !lookup_ident(ev, root, &tmp)) {
			if (resolve_chain(ev, n, &tmp))
				return tmp;
		} else if (root->kind == N_IDENT && root == n->a[0]) {
			/* x.f: the variable was just looked up (an error value is the result) */
			if (!cel_charge(ev, 1))
				return aborted(ev);
			if (tmp.kind == CEL_ERROR)
				return tmp;
			return select_field(ev, &tmp, n->name, n->nlen, n->opt, n->pos);
		} else if (root->kind == N_IDENT && root == n->a[0]->a[0]) {
			/* x.a.f (object.spec.f): both names on the variable just looked up */
			const struct cel_node *m = n->a[0];

			if (!cel_charge(ev, 1) || !cel_charge(ev, 1))
				return aborted(ev);
			if (tmp.kind == CEL_ERROR)
				return tmp;
			o = select_field(ev, &tmp, m->name, m->nlen, m->opt, m->pos);
			if (o.kind == CEL_ERROR)
				return o;
			return select_field(ev, &o, n->name, n->nlen, n->opt, n->pos);
		}
	}
	o = cel_eval_node(ev, n->a[0]);
	if (o.kind == CEL_ERROR)
		return o;
	return select_field(ev, &o, n->name, n->nlen, n->opt, n->pos);
}

static struct cel_value eval_call_generic(struct cel_eval *ev, const struct cel_node *n);

/*
 * The value of a selection chain kept unwrapped while it is walked, so that
 * `x.?a.?b` makes no optional value per step: v itself (opt false),
 * optional.of(v) (opt), or optional.none() (opt and none).
 */
struct chain_val {
	struct cel_value v;
	bool opt, none;
};

#define CHAIN_MAX 32

/* Field name of s on JSON object obj, through the field cache when s has an entry. */
static inline const json_t *chain_field(struct cel_eval *ev, const struct cel_node *s,
					const json_t *obj)
{
	struct cel_field_cache *c;

	if (!s->cache)
		return json_object_getn(obj, s->name, s->nlen);
	c = &ev->cache[s->cache - 1];
	if (c->gen != ev->gen || c->obj != obj) {
		c->gen = ev->gen;
		c->obj = obj;
		c->res = json_object_getn(obj, s->name, s->nlen);
	}
	return c->res;
}

static struct cel_value chain_value(struct cel_eval *ev, const struct chain_val *st)
{
	if (!st->opt)
		return st->v;
	return cel_opt(ev, st->none ? NULL : &st->v);
}

static void chain_set(struct chain_val *st, const struct cel_value *r)
{
	st->opt = r->kind == CEL_OPTIONAL;
	st->none = st->opt && !r->v.opt;
	st->v = st->opt ? (r->v.opt ? *r->v.opt : *r) : *r;
}

/*
 * Evaluates the chain of selections ending at top (a.b.?c.d: each node a
 * N_SELECT down to the first that is not), with the semantics and the cost
 * of evaluating each node in turn (eval_select_generic, select_field): the
 * selections below top and the root are charged here, top (already charged
 * by cel_eval_node) is not, extra more is. False, and nothing charged, when
 * the chain is left to eval_select_generic: longer than CHAIN_MAX, or rooted
 * at an unbound name that dotted names or a type may resolve.
 */
static bool eval_chain(struct cel_eval *ev, const struct cel_node *top, uint64_t extra,
		       struct chain_val *st)
{
	const struct cel_node *parts[CHAIN_MAX], *t = top;
	int np = 0;

	while (t->kind == N_SELECT) {
		if (np == CHAIN_MAX)
			return false;
		parts[np++] = t;
		t = t->a[0];
	}
	st->opt = st->none = false;
	if (top->target && t->kind == N_IDENT) {
		if (!lookup_ident(ev, t, &st->v))
			return false;
		if (!cel_charge(ev, (uint64_t)np + extra)) {
			st->v = aborted(ev);
			return true;
		}
	} else {
		if (!cel_charge(ev, (uint64_t)np - 1 + extra)) {
			st->v = aborted(ev);
			return true;
		}
		st->v = eval_child(ev, t);
	}
	while (np > 0) {
		const struct cel_node *s = parts[--np];
		struct cel_value o, r;

		if (!st->opt) {
			if (st->v.kind == CEL_ERROR)
				return true;
			if (st->v.kind == CEL_MAP && st->v.json) {
				const json_t *j = chain_field(ev, s, st->v.v.json);

				if (j) {
					st->v = cel_from_json(j);
					st->opt = s->opt;
				} else if (s->opt) {
					st->opt = st->none = true;
				} else {
					st->v = cel_err(ev, s->pos, "no such key: %s", s->name);
				}
				continue;
			}
		} else {
			if (st->none)
				continue;
			if (st->v.kind == CEL_MAP && st->v.json) {
				const json_t *j = chain_field(ev, s, st->v.v.json);

				if (j)
					st->v = cel_from_json(j);
				else
					st->none = true;
				continue;
			}
		}
		o = chain_value(ev, st);
		r = select_field(ev, &o, s->name, s->nlen, s->opt, s->pos);
		chain_set(st, &r);
	}
	return true;
}

static struct cel_value eval_select(struct cel_eval *ev, const struct cel_node *n)
{
	struct chain_val st;

	if (!eval_chain(ev, n, 0, &st))
		return eval_select_generic(ev, n);
	return chain_value(ev, &st);
}

/*
 * x.orValue(d) with x a selection chain (n->fast: FAST_OR_VALUE): f_or_value
 * on the chain's value, with no optional value made.
 */
static struct cel_value eval_or_value(struct cel_eval *ev, const struct cel_node *n)
{
	struct chain_val st;
	struct cel_value d;

	if (!eval_chain(ev, n->a[0], 1, &st))
		return eval_call_generic(ev, n);
	d = eval_child(ev, n->a[1]);
	if (ev->aborted)
		return aborted(ev);
	if (!st.opt)
		return st.v.kind != CEL_ERROR && d.kind == CEL_ERROR ? d : st.v;
	return st.none ? d : st.v;
}

/* An integral list index from int, uint or an integral double; false otherwise. */
static bool list_index(const struct cel_value *i, int64_t *out)
{
	switch (i->kind) {
	case CEL_INT:
		*out = i->v.i;
		return true;
	case CEL_UINT:
		*out = i->v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)i->v.u;
		return true;
	case CEL_DOUBLE:
		if (i->v.d != floor(i->v.d) || !(fabs(i->v.d) < 9.2e18))
			return false;
		*out = (int64_t)i->v.d;
		return true;
	default:
		return false;
	}
}

static struct cel_value index_value(struct cel_eval *ev, const struct cel_value *o,
				    const struct cel_value *k, bool opt, int pos)
{
	struct cel_value r;
	int64_t i;

	if (o->kind == CEL_OPTIONAL) {
		if (!o->v.opt)
			return *o;
		return index_value(ev, o->v.opt, k, true, pos);
	}
	if (o->kind == CEL_LIST) {
		size_t n = cel_list_size(o);

		if (!list_index(k, &i))
			return no_overload(ev, pos, "_[_]", o, k);
		if (i < 0 || (uint64_t)i >= n) {
			if (opt)
				return cel_opt(ev, NULL);
			return cel_err(ev, pos, "index out of range: %lld (list size %zu)",
				       (long long)i, n);
		}
		r = cel_list_get(o, (size_t)i);
		return opt ? cel_opt(ev, &r) : r;
	}
	if (o->kind == CEL_MAP) {
		switch (k->kind) {
		case CEL_STRING:
		case CEL_INT:
		case CEL_UINT:
		case CEL_DOUBLE:
		case CEL_BOOL:
			break;
		default:
			return no_overload(ev, pos, "_[_]", o, k);
		}
		if (cel_map_find(o, k, &r))
			return opt ? cel_opt(ev, &r) : r;
		if (opt)
			return cel_opt(ev, NULL);
		if (k->kind == CEL_STRING)
			return cel_err(ev, pos, "no such key: %.*s", (int)k->v.s.n, k->v.s.p);
		{
			struct gv_buf b = {0};

			cel_value_format(k, &b);
			r = cel_err(ev, pos, "no such key: %s", gv_buf_str(&b));
			gv_buf_release(&b);
			return r;
		}
	}
	return no_overload(ev, pos, "_[_]", o, k);
}

static struct cel_value eval_index(struct cel_eval *ev, const struct cel_node *n)
{
	struct cel_value o = cel_eval_node(ev, n->a[0]), k;

	if (o.kind == CEL_ERROR)
		return o;
	k = cel_eval_node(ev, n->a[1]);
	if (k.kind == CEL_ERROR)
		return k;
	return index_value(ev, &o, &k, n->opt, n->pos);
}

static struct cel_value eval_has(struct cel_eval *ev, const struct cel_node *n)
{
	const struct cel_node *c = n->a[0];
	struct cel_value o, r, key;
	struct chain_val st;

	/*
	 * The operand as cel_eval_node would give it (a selection chain walked
	 * in place: charged 1 for its top node here, the rest by eval_chain).
	 */
	if (c->kind == N_SELECT && cel_charge(ev, 1) && eval_chain(ev, c, 0, &st)) {
		if (st.opt && st.none)
			return cel_bool(false);
		o = st.v;
	} else if (c->kind == N_SELECT) {
		o = ev->aborted ? aborted(ev) : eval_select_generic(ev, c);
	} else {
		o = eval_child(ev, c);
	}
	if (o.kind == CEL_ERROR)
		return o;
	if (o.kind == CEL_OPTIONAL) {
		if (!o.v.opt)
			return cel_bool(false);
		o = *o.v.opt;
	}
	if (o.kind == CEL_MAP && o.json) /* a presence check, the value is not needed */
		return cel_bool(json_object_getn(o.v.json, n->name, n->nlen) != NULL);
	if (o.kind == CEL_MAP) {
		key = cel_str(n->name, n->nlen);
		return cel_bool(cel_map_find(&o, &key, &r));
	}
	return cel_err(ev, n->pos, "invalid type for field selection: %s", cel_type_name(&o));
}

/* ---- literals ---- */

static __attribute__((noinline)) struct cel_value eval_list(struct cel_eval *ev,
							    const struct cel_node *n)
{
	struct cel_value *items, r;
	int i, k = 0;

	if (!n->n)
		return cel_list_new(ev, NULL, 0);
	items = cel_eval_alloc(ev, sizeof(*items) * (size_t)n->n);
	for (i = 0; i < n->n; i++) {
		struct cel_value e = cel_eval_node(ev, n->a[i]);

		if (e.kind == CEL_ERROR)
			return e;
		if (i < 64 && (n->optmask >> i) & 1) {
			if (e.kind != CEL_OPTIONAL)
				return cel_err(ev, n->a[i]->pos,
					       "optional element of type '%s' is not an optional",
					       cel_type_name(&e));
			if (!e.v.opt)
				continue;
			e = *e.v.opt;
		}
		items[k++] = e;
	}
	r.kind = CEL_LIST;
	r.json = 0;
	{
		struct cel_list *l = cel_eval_alloc(ev, sizeof(*l));

		l->n = (size_t)k;
		l->v = items;
		r.v.list = l;
	}
	return r;
}

static bool valid_key(const struct cel_value *k)
{
	return k->kind == CEL_STRING || k->kind == CEL_INT || k->kind == CEL_UINT ||
	       k->kind == CEL_BOOL;
}

static __attribute__((noinline)) struct cel_value eval_map(struct cel_eval *ev,
							   const struct cel_node *n)
{
	size_t cap = (size_t)n->n / 2, k = 0, j;
	struct cel_value *keys = cel_eval_alloc(ev, sizeof(*keys) * (cap + 1));
	struct cel_value *vals = cel_eval_alloc(ev, sizeof(*vals) * (cap + 1));
	struct cel_value r = {.kind = CEL_MAP};
	struct cel_map *m;
	int i;

	for (i = 0; i + 1 < n->n; i += 2) {
		struct cel_value kv = cel_eval_node(ev, n->a[i]), vv;

		if (kv.kind == CEL_ERROR)
			return kv;
		vv = cel_eval_node(ev, n->a[i + 1]);
		if (vv.kind == CEL_ERROR)
			return vv;
		if (!valid_key(&kv))
			return cel_err(ev, n->a[i]->pos, "unsupported key type: %s",
				       cel_type_name(&kv));
		if (i / 2 < 64 && (n->optmask >> (i / 2)) & 1) {
			if (vv.kind != CEL_OPTIONAL)
				return cel_err(ev, n->a[i + 1]->pos,
					       "optional entry of type '%s' is not an optional",
					       cel_type_name(&vv));
			if (!vv.v.opt)
				continue;
			vv = *vv.v.opt;
		}
		for (j = 0; j < k; j++) {
			struct cel_value e = cel_equals(ev, &keys[j], &kv, n->pos);

			if (e.kind == CEL_BOOL && e.v.b)
				return cel_err(ev, n->a[i]->pos, "Failed with repeated key");
		}
		keys[k] = kv;
		vals[k] = vv;
		k++;
	}
	m = cel_eval_alloc(ev, sizeof(*m));
	m->n = k;
	m->k = keys;
	m->v = vals;
	r.v.map = m;
	return r;
}

/* ---- macros ---- */

struct iter {
	const struct cel_value *range;
	bool map;
	size_t n, i;
	void *jit; /* JSON object iterator */
};

static void iter_init(struct iter *it, const struct cel_value *range)
{
	it->range = range;
	it->map = range->kind == CEL_MAP;
	it->n = it->map ? cel_map_size(range) : cel_list_size(range);
	it->i = 0;
	it->jit = it->map && range->json ? json_object_iter((json_t *)range->v.json) : NULL;
}

/* Next (index or key, element or value); false at the end. */
static inline bool iter_next(struct iter *it, struct cel_value *k, struct cel_value *v)
{
	if (it->i >= it->n)
		return false;
	if (!it->map) {
		*k = cel_int((int64_t)it->i);
		*v = cel_list_get(it->range, it->i);
	} else if (it->range->json) {
		const char *key;

		if (!it->jit)
			return false;
		key = json_object_iter_key(it->jit);
		*k = cel_str(key, strlen(key));
		*v = cel_from_json(json_object_iter_value(it->jit));
		it->jit = json_object_iter_next((json_t *)it->range->v.json, it->jit);
	} else {
		*k = it->range->v.map->k[it->i];
		*v = it->range->v.map->v[it->i];
	}
	it->i++;
	return true;
}

struct vec {
	struct cel_value *v;
	size_t n, cap;
};

static void vec_push(struct cel_eval *ev, struct vec *x, const struct cel_value *v)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 8;
		struct cel_value *nv = cel_eval_alloc(ev, sizeof(*nv) * cap);

		if (x->n)
			memcpy(nv, x->v, sizeof(*nv) * x->n);
		x->v = nv;
		x->cap = cap;
	}
	x->v[x->n++] = *v;
}

static struct cel_value eval_sort_by(struct cel_eval *ev, const struct cel_node *n,
				     const struct cel_value *range);

/*
 * all/exists of one variable over a list: the loop of eval_compr with the
 * variable's slot pushed once and overwritten (same cost and result).
 */
static struct cel_value eval_all_list(struct cel_eval *ev, const struct cel_node *n,
				      const struct cel_value *range)
{
	bool all = n->op == M_ALL;
	size_t base = ev->nlocals, cnt = cel_list_size(range), i;
	struct cel_value err = {.kind = CEL_NULL}, p;

	push_local(ev, n->name, range);
	for (i = 0; i < cnt; i++) {
		if (!cel_charge(ev, 1))
			break;
		ev->nlocals = base + 1;
		ev->locals[base].v = range->json ? cel_from_json(json_array_get(range->v.json, i))
						 : range->v.list->v[i];
		p = cel_eval_node(ev, n->a[1]);
		if (p.kind == CEL_BOOL) {
			if (p.v.b != all) {
				ev->nlocals = base;
				return p;
			}
		} else if (err.kind == CEL_NULL) {
			err = p.kind == CEL_ERROR
				  ? p
				  : no_overload(ev, n->a[1]->pos, all ? "all" : "exists", &p, NULL);
		}
		if (ev->aborted)
			break;
	}
	ev->nlocals = base;
	if (ev->aborted)
		return aborted(ev);
	if (err.kind != CEL_NULL)
		return err;
	return cel_bool(all);
}

static __attribute__((noinline)) struct cel_value eval_compr(struct cel_eval *ev,
							     const struct cel_node *n)
{
	enum cel_macro m = (enum cel_macro)n->op;
	struct cel_value range = cel_eval_node(ev, n->a[0]), k, v, r, err = {.kind = CEL_NULL};
	struct vec out = {0}, outk = {0};
	bool two = n->name2 != NULL, has_filter;
	size_t base = ev->nlocals, count = 0;
	struct iter it;

	if (range.kind == CEL_ERROR)
		return range;
	if (m == M_OPT_MAP || m == M_OPT_FLAT_MAP) {
		if (range.kind != CEL_OPTIONAL)
			return no_overload(ev, n->pos, m == M_OPT_MAP ? "optMap" : "optFlatMap",
					   &range, NULL);
		if (!range.v.opt)
			return range;
		push_local(ev, n->name, range.v.opt);
		r = cel_eval_node(ev, n->a[1]);
		ev->nlocals = base;
		if (r.kind == CEL_ERROR || m == M_OPT_FLAT_MAP) {
			if (r.kind != CEL_ERROR && r.kind != CEL_OPTIONAL)
				return cel_err(ev, n->pos, "optFlatMap() must produce an optional");
			return r;
		}
		return cel_opt(ev, &r);
	}
	if (range.kind != CEL_LIST && range.kind != CEL_MAP)
		return cel_err(ev, n->pos,
			       "expression of type '%s' cannot be range of a comprehension",
			       cel_type_name(&range));
	if (m == M_SORT_BY)
		return eval_sort_by(ev, n, &range);
	if ((m == M_ALL || m == M_EXISTS) && !two && range.kind == CEL_LIST)
		return eval_all_list(ev, n, &range);
	has_filter = ((m == M_MAP && n->n == 3) || (m == M_TRANSFORM_LIST && n->n == 3) ||
		      (m == M_TRANSFORM_MAP && n->n == 3) || (m == M_TRANSFORM_ENTRY && n->n == 3));
	iter_init(&it, &range);
	while (iter_next(&it, &k, &v)) {
		struct cel_value p;

		if (!cel_charge(ev, 1))
			break;
		ev->nlocals = base;
		if (two) {
			push_local(ev, n->name, &k);
			push_local(ev, n->name2, &v);
		} else {
			push_local(ev, n->name, it.map ? &k : &v);
		}
		switch (m) {
		case M_ALL:
		case M_EXISTS:
			p = cel_eval_node(ev, n->a[1]);
			if (p.kind == CEL_BOOL) {
				if (p.v.b != (m == M_ALL)) {
					ev->nlocals = base;
					return p;
				}
			} else if (err.kind == CEL_NULL) {
				err = p.kind == CEL_ERROR
					  ? p
					  : no_overload(ev, n->a[1]->pos,
							m == M_ALL ? "all" : "exists", &p, NULL);
			}
			break;
		case M_EXISTS_ONE:
			p = cel_eval_node(ev, n->a[1]);
			if (p.kind != CEL_BOOL) {
				ev->nlocals = base;
				return p.kind == CEL_ERROR
					   ? p
					   : no_overload(ev, n->a[1]->pos, "exists_one", &p, NULL);
			}
			count += p.v.b;
			break;
		case M_FILTER:
		case M_MAP:
		case M_TRANSFORM_LIST:
		case M_TRANSFORM_MAP:
		case M_TRANSFORM_ENTRY:
			if (m == M_FILTER || has_filter) {
				p = cel_eval_node(ev, n->a[1]);
				if (p.kind != CEL_BOOL) {
					ev->nlocals = base;
					return p.kind == CEL_ERROR
						   ? p
						   : no_overload(ev, n->a[1]->pos, "filter", &p,
								 NULL);
				}
				if (!p.v.b)
					break;
				if (m == M_FILTER) {
					vec_push(ev, &out, it.map ? &k : &v);
					break;
				}
			}
			r = cel_eval_node(ev, n->a[n->n - 1]);
			if (r.kind == CEL_ERROR) {
				ev->nlocals = base;
				return r;
			}
			if (m == M_TRANSFORM_MAP) {
				vec_push(ev, &outk, &k);
				vec_push(ev, &out, &r);
			} else if (m == M_TRANSFORM_ENTRY) {
				struct iter e;
				struct cel_value ek, evv, dummy;

				if (r.kind != CEL_MAP) {
					ev->nlocals = base;
					return cel_err(
					    ev, n->pos,
					    "transformMapEntry() must produce a map, got %s",
					    cel_type_name(&r));
				}
				iter_init(&e, &r);
				while (iter_next(&e, &ek, &evv)) {
					struct cel_value tmpmap = {.kind = CEL_MAP};
					struct cel_map tm = {outk.n, outk.v, out.v};

					tmpmap.v.map = &tm;
					if (cel_map_find(&tmpmap, &ek, &dummy)) {
						ev->nlocals = base;
						return cel_err(ev, n->pos,
							       "insert failed: key already exists");
					}
					vec_push(ev, &outk, &ek);
					vec_push(ev, &out, &evv);
				}
			} else {
				vec_push(ev, &out, &r);
			}
			break;
		default:
			break;
		}
		if (ev->aborted)
			break;
	}
	ev->nlocals = base;
	if (ev->aborted)
		return aborted(ev);
	switch (m) {
	case M_ALL:
	case M_EXISTS:
		if (err.kind != CEL_NULL)
			return err;
		return cel_bool(m == M_ALL);
	case M_EXISTS_ONE:
		return cel_bool(count == 1);
	case M_TRANSFORM_MAP:
	case M_TRANSFORM_ENTRY:
		return cel_map_new(ev, outk.v, out.v, out.n);
	default:
		return cel_list_new(ev, out.v, out.n);
	}
}

struct sort_item {
	struct cel_value key, val;
	size_t idx;
};

static int sort_cmp(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;
	int c = 0;
	bool nan;

	cel_compare(&x->key, &y->key, &c, &nan);
	if (c)
		return c;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static struct cel_value eval_sort_by(struct cel_eval *ev, const struct cel_node *n,
				     const struct cel_value *range)
{
	size_t cnt, i, base = ev->nlocals;
	struct sort_item *items;
	struct cel_value *vals;
	int c;
	bool nan;

	if (range->kind != CEL_LIST)
		return no_overload(ev, n->pos, "sortBy", range, NULL);
	cnt = cel_list_size(range);
	items = cel_eval_alloc(ev, sizeof(*items) * (cnt + 1));
	for (i = 0; i < cnt; i++) {
		if (!cel_charge(ev, 2))
			return aborted(ev);
		items[i].val = cel_list_get(range, i);
		items[i].idx = i;
		push_local(ev, n->name, &items[i].val);
		items[i].key = cel_eval_node(ev, n->a[1]);
		ev->nlocals = base;
		if (items[i].key.kind == CEL_ERROR)
			return items[i].key;
		if (i > 0 && !cel_compare(&items[0].key, &items[i].key, &c, &nan))
			return cel_err(ev, n->pos,
				       "sortBy(): keys of types '%s' and '%s' cannot be ordered",
				       cel_type_name(&items[0].key), cel_type_name(&items[i].key));
		if (i == 0 && !cel_compare(&items[0].key, &items[0].key, &c, &nan))
			return cel_err(ev, n->pos, "sortBy(): keys of type '%s' cannot be ordered",
				       cel_type_name(&items[0].key));
	}
	if (cnt > 1) {
		cel_charge(ev, cnt);
		qsort(items, cnt, sizeof(*items), sort_cmp);
	}
	vals = cel_eval_alloc(ev, sizeof(*vals) * (cnt + 1));
	for (i = 0; i < cnt; i++)
		vals[i] = items[i].val;
	return cel_list_new(ev, vals, cnt);
}

static struct cel_value eval_call_generic(struct cel_eval *ev, const struct cel_node *n)
{
	struct cel_value argv[8], *args = argv;
	int i;

	if (!n->fn)
		return cel_err(ev, n->pos, "no such overload: %s with %d argument%s", n->name, n->n,
			       n->n == 1 ? "" : "s");
	if (n->n > 8)
		args = cel_eval_alloc(ev, sizeof(*args) * (size_t)n->n);
	for (i = 0; i < n->n; i++) {
		args[i] = eval_child(ev, n->a[i]);
		if (args[i].kind == CEL_ERROR && !n->fn->lazy)
			return args[i];
	}
	if (ev->aborted)
		return aborted(ev);
	return n->fn->fn(ev, n, args, n->n);
}

/* ---- dispatch: one function per node kind, called by cel_eval_node ---- */

static struct cel_value eval_lit(struct cel_eval *ev, const struct cel_node *n)
{
	return n->lit;
}

static struct cel_value eval_ident(struct cel_eval *ev, const struct cel_node *n)
{
	struct cel_value v;

	if (lookup_ident(ev, n, &v) || type_ident(n->name, &v))
		return v;
	return cel_err(ev, n->pos, "undeclared reference to '%s' (in container '')", n->name);
}

static struct cel_value eval_call(struct cel_eval *ev, const struct cel_node *n)
{
	if (n->fast == FAST_OR_VALUE)
		return eval_or_value(ev, n);
	return eval_call_generic(ev, n);
}

static struct cel_value eval_and(struct cel_eval *ev, const struct cel_node *n)
{
	return eval_logic(ev, n, true);
}

static struct cel_value eval_or(struct cel_eval *ev, const struct cel_node *n)
{
	return eval_logic(ev, n, false);
}

static struct cel_value eval_cond(struct cel_eval *ev, const struct cel_node *n)
{
	struct cel_value c = eval_child(ev, n->a[0]);

	if (c.kind == CEL_ERROR)
		return c;
	if (c.kind != CEL_BOOL)
		return no_overload(ev, n->pos, "_?_:_", &c, NULL);
	return eval_child(ev, n->a[c.v.b ? 1 : 2]);
}

static struct cel_value eval_list_node(struct cel_eval *ev, const struct cel_node *n)
{
	if (n->konst) {
		/* folded (cel_resolve): the cost of evaluating each element literal */
		if (!cel_charge(ev, (uint64_t)n->n))
			return aborted(ev);
		return n->lit;
	}
	return eval_list(ev, n);
}

static struct cel_value eval_bind(struct cel_eval *ev, const struct cel_node *n)
{
	size_t base = ev->nlocals;
	struct cel_value v = cel_eval_node(ev, n->a[0]), c;

	push_local(ev, n->name, &v);
	c = cel_eval_node(ev, n->a[1]);
	ev->nlocals = base;
	return c;
}

typedef struct cel_value (*eval_fn)(struct cel_eval *ev, const struct cel_node *n);

static const eval_fn eval_fns[N_BIND + 1] = {
    [N_LIT] = eval_lit,	    [N_IDENT] = eval_ident,   [N_SELECT] = eval_select,
    [N_HAS] = eval_has,	    [N_INDEX] = eval_index,   [N_CALL] = eval_call,
    [N_UNARY] = eval_unary, [N_BINARY] = eval_binary, [N_AND] = eval_and,
    [N_OR] = eval_or,	    [N_COND] = eval_cond,     [N_LIST] = eval_list_node,
    [N_MAP] = eval_map,	    [N_COMPR] = eval_compr,   [N_BIND] = eval_bind,
};

struct cel_value cel_eval_node(struct cel_eval *ev, const struct cel_node *n)
{
	if (!cel_charge(ev, 1))
		return aborted(ev);
	return eval_fns[n->kind](ev, n);
}

/* ---- resolution (once per program) ---- */

struct scope {
	const char *names[2 * CEL_MAX_DEPTH + 8];
	int n;
};

/* A list literal of literals only ([] too): its value, made once in the program's arena. */
static void fold_list(struct cel_program *p, struct cel_node *n)
{
	struct cel_value *items;
	struct cel_list *l;
	int i;

	if (n->optmask)
		return;
	for (i = 0; i < n->n; i++)
		if (n->a[i]->kind != N_LIT)
			return;
	items = cel_arena_alloc(&p->arena, sizeof(*items) * (size_t)(n->n + 1));
	for (i = 0; i < n->n; i++)
		items[i] = n->a[i]->lit;
	l = cel_arena_alloc(&p->arena, sizeof(*l));
	l->n = (size_t)n->n;
	l->v = items;
	memset(&n->lit, 0, sizeof(n->lit));
	n->lit.kind = CEL_LIST;
	n->lit.v.list = l;
	n->konst = true;
}

static void resolve_node(struct cel_program *p, struct cel_node *n, struct scope *sc)
{
	int i, base = sc->n;

	if (!n)
		return;
	if (n->name)
		n->nlen = strlen(n->name);
	if (n->kind == N_IDENT) {
		for (i = sc->n; i > 0; i--) {
			if (strcmp(sc->names[i - 1], n->name) == 0) {
				n->slot = i;
				break;
			}
		}
		return;
	}
	if ((n->kind != N_COMPR && n->kind != N_BIND) || n->n < 1) {
		for (i = 0; i < n->n; i++)
			resolve_node(p, n->a[i], sc);
		if (n->kind == N_CALL && n->fn && n->target && n->n == 2 &&
		    strcmp(n->fn->name, "orValue") == 0 && n->a[0]->kind == N_SELECT)
			n->fast = FAST_OR_VALUE;
		if (n->kind == N_LIST)
			fold_list(p, n);
		return;
	}
	/* the range (or the bound value) is outside the variables' scope */
	resolve_node(p, n->a[0], sc);
	if (sc->n + 2 > (int)GV_ARRAY_LEN(sc->names))
		return; /* deeper than the parser allows: left to lookup() */
	sc->names[sc->n++] = n->name;
	if (n->kind == N_COMPR && n->name2 && n->op != M_SORT_BY && n->op != M_OPT_MAP &&
	    n->op != M_OPT_FLAT_MAP)
		sc->names[sc->n++] = n->name2;
	for (i = 1; i < n->n; i++)
		resolve_node(p, n->a[i], sc);
	sc->n = base;
}

/* Paths a program's field cache holds at most. */
#define CEL_FIELD_CACHE_MAX 64

struct paths {
	char **key; /* the path of each cache entry: the names, NUL-separated */
	size_t *len;
	int n;
};

/*
 * The path of selection n from the bound variable its chain starts at, each
 * name ending with a NUL; nothing (b->len 0) when the chain starts elsewhere
 * (a comprehension variable, an expression) or is deeper than a chain can be.
 */
static __attribute__((noinline)) void path_key(const struct cel_node *n, struct gv_buf *b)
{
	const struct cel_node *parts[CHAIN_MAX], *t = n;
	int np = 0;

	while (t->kind == N_SELECT) {
		if (np == CHAIN_MAX)
			return;
		parts[np++] = t;
		t = t->a[0];
	}
	if (t->kind != N_IDENT)
		return;
	/* a comprehension variable's paths apart from a bound variable's of the same name */
	gv_buf_add(b, t->slot ? "$" : "", t->slot ? 1 : 0);
	gv_buf_add(b, t->name, strlen(t->name) + 1);
	while (np > 0) {
		t = parts[--np];
		gv_buf_add(b, t->name, t->nlen + 1);
	}
}

/*
 * A field cache entry for each selection on a chain rooted at a variable
 * (bound, or a comprehension's: after resolve_node a slot), one per distinct
 * path of names. An entry is used only for the JSON object it was filled
 * from (chain_field), so a comprehension variable's paths are shared by the
 * expressions of one iteration (c.securityContext in has() and in the test).
 */
static void cache_node(struct cel_program *p, struct cel_node *n, struct paths *ps)
{
	struct gv_buf b = {0};
	int i;

	if (!n)
		return;
	for (i = 0; i < n->n; i++)
		cache_node(p, n->a[i], ps);
	if (n->kind != N_SELECT)
		return;
	path_key(n, &b);
	if (!b.len)
		return;
	for (i = 0; i < ps->n; i++) {
		if (ps->len[i] == b.len && memcmp(ps->key[i], b.data, b.len) == 0) {
			n->cache = i + 1;
			gv_buf_release(&b);
			return;
		}
	}
	if (ps->n == CEL_FIELD_CACHE_MAX) {
		/* the paths past the first few are looked up each time (bounds the work here) */
		gv_buf_release(&b);
		return;
	}
	ps->key = gv_xrealloc(ps->key, sizeof(*ps->key) * (size_t)(ps->n + 1));
	ps->len = gv_xrealloc(ps->len, sizeof(*ps->len) * (size_t)(ps->n + 1));
	ps->key[ps->n] = b.data;
	ps->len[ps->n] = b.len;
	n->cache = ++ps->n;
}

void cel_resolve(struct cel_program *p)
{
	struct scope sc;
	struct paths ps = {0};
	int i;

	sc.n = 0;
	resolve_node(p, p->root, &sc);
	cache_node(p, p->root, &ps);
	p->ncache = ps.n;
	for (i = 0; i < ps.n; i++)
		free(ps.key[i]);
	free(ps.key);
	free(ps.len);
}

uint64_t cel_eval_run(struct cel_eval *ev, const struct cel_program *p, struct cel_value *out)
{
	ev->cost = 0;
	ev->prog = p;
	ev->aborted = false;
	ev->nlocals = 0;
	ev->gen++;
	if ((size_t)p->ncache > ev->ncache) {
		ev->cache = gv_xrealloc(ev->cache, sizeof(*ev->cache) * (size_t)p->ncache);
		memset(ev->cache + ev->ncache, 0,
		       sizeof(*ev->cache) * ((size_t)p->ncache - ev->ncache));
		ev->ncache = (size_t)p->ncache;
	}
	*out = cel_eval_node(ev, p->root);
	if (ev->aborted)
		*out = aborted(ev);
	return ev->cost;
}
