/*
 * check.c - the compile-time type check of a CEL program (cel-semantics.md
 * 1.10): static types where they are known, `dyn` everywhere else.
 *
 * Every variable the caller binds (object, oldObject, request, params,
 * variables...) is `dyn`: the check only rejects what is wrong whatever the
 * documents are, i.e. a call or an operator whose argument types are known
 * and match none of the overloads cel-go declares (`1 + "a"`, `size(1)`,
 * `"a".startsWith(1)`, `1 && true`, a non-bool condition of `?:`), field
 * selection on a value that is not a map, a comprehension over a value that
 * is not a list or a map, and list or map literals mixing element types
 * (Kubernetes' HomogeneousAggregateLiterals). Types follow cel-go's checker:
 * type parameters unified with substitution, `dyn` assignable both ways,
 * `null` assignable to timestamps, durations, optionals and library types.
 *
 * A function of the library without signatures below is not checked (its
 * arguments are, its result is `dyn`, marked unknown: see
 * cel_program_type_known): a library function with an overload the table
 * does not list is never refused, only not checked.
 *
 * With declarations (cel_compile_decls): `variables.<name>` has the
 * declared type of that variable and an undeclared name fails ("undefined
 * field"), and the identifiers declared absent fail ("undeclared
 * reference").
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/banned.h"

enum ty_kind {
	TY_DYN,
	TY_NULL,
	TY_BOOL,
	TY_INT,
	TY_UINT,
	TY_DOUBLE,
	TY_STRING,
	TY_BYTES,
	TY_TIMESTAMP,
	TY_DURATION,
	TY_LIST,   /* p[0] */
	TY_MAP,	   /* p[0], p[1] */
	TY_TYPE,   /* p[0]: the type of a type value */
	TY_OPT,	   /* p[0] */
	TY_OPAQUE, /* name, p[0..np) */
	TY_PARAM   /* id */
};

#define TY_MAXP 4

struct ty {
	uint8_t kind;
	uint8_t np;
	int id;
	const char *name;
	const struct ty *p[TY_MAXP];
};

static const struct ty ty_dyn = {.kind = TY_DYN};
static const struct ty ty_null = {.kind = TY_NULL};
static const struct ty ty_bool = {.kind = TY_BOOL};
static const struct ty ty_int = {.kind = TY_INT};
static const struct ty ty_uint = {.kind = TY_UINT};
static const struct ty ty_double = {.kind = TY_DOUBLE};
static const struct ty ty_string = {.kind = TY_STRING};
static const struct ty ty_bytes = {.kind = TY_BYTES};
static const struct ty ty_timestamp = {.kind = TY_TIMESTAMP};
static const struct ty ty_duration = {.kind = TY_DURATION};
/* dyn because the library function giving it has no signature below (cel_program_type_known) */
static const struct ty ty_unknown = {.kind = TY_DYN};

struct scope_var {
	const char *name;
	const struct ty *t;
};

/* A binding of type parameter id, and what it was before (the undo trail). */
struct trail {
	int id;
	const struct ty *old;
};

struct checker {
	const struct cel_program *prog;
	struct cel_arena arena; /* types */
	const struct ty **sub;	/* sub[id]: the substitution of parameter id, or NULL */
	int nparams, capparams;
	struct trail *trail;
	size_t ntrail, captrail;
	struct scope_var *vars;
	size_t nvars, capvars;
	bool failed;
	int pos;
	char msg[256];
	bool dyn_literals;
	const struct cel_decls *decls; /* or NULL */
};

/* ---- types ---- */

static struct ty *ty_new(struct checker *c, enum ty_kind k)
{
	struct ty *t = cel_arena_alloc(&c->arena, sizeof(*t));

	memset(t, 0, sizeof(*t));
	t->kind = (uint8_t)k;
	return t;
}

static const struct ty *ty1(struct checker *c, enum ty_kind k, const struct ty *p0)
{
	struct ty *t = ty_new(c, k);

	t->np = 1;
	t->p[0] = p0;
	return t;
}

static const struct ty *ty_map(struct checker *c, const struct ty *k, const struct ty *v)
{
	struct ty *t = ty_new(c, TY_MAP);

	t->np = 2;
	t->p[0] = k;
	t->p[1] = v;
	return t;
}

static const struct ty *ty_param(struct checker *c)
{
	struct ty *t = ty_new(c, TY_PARAM);

	if (c->nparams == c->capparams) {
		c->capparams = c->capparams ? c->capparams * 2 : 16;
		c->sub = gv_xrealloc(c->sub, sizeof(*c->sub) * (size_t)c->capparams);
	}
	c->sub[c->nparams] = NULL;
	t->id = c->nparams++;
	return t;
}

static void bind_param(struct checker *c, int id, const struct ty *t)
{
	if (c->ntrail == c->captrail) {
		c->captrail = c->captrail ? c->captrail * 2 : 16;
		c->trail = gv_xrealloc(c->trail, sizeof(*c->trail) * c->captrail);
	}
	c->trail[c->ntrail].id = id;
	c->trail[c->ntrail].old = c->sub[id];
	c->ntrail++;
	c->sub[id] = t;
}

static void undo_to(struct checker *c, size_t mark)
{
	while (c->ntrail > mark) {
		c->ntrail--;
		c->sub[c->trail[c->ntrail].id] = c->trail[c->ntrail].old;
	}
}

/* t with the parameters bound so far replaced; free parameters stay (or become dyn). */
static const struct ty *subst(struct checker *c, const struct ty *t, bool free_to_dyn, int depth)
{
	struct ty *r;
	bool changed = false;
	const struct ty *np[TY_MAXP];
	int i;

	if (depth > CEL_MAX_DEPTH * 2)
		return &ty_dyn;
	if (t->kind == TY_PARAM) {
		if (c->sub[t->id])
			return subst(c, c->sub[t->id], free_to_dyn, depth + 1);
		return free_to_dyn ? &ty_dyn : t;
	}
	for (i = 0; i < t->np; i++) {
		np[i] = subst(c, t->p[i], free_to_dyn, depth + 1);
		changed |= np[i] != t->p[i];
	}
	if (!changed)
		return t;
	r = ty_new(c, (enum ty_kind)t->kind);
	*r = *t;
	for (i = 0; i < t->np; i++)
		r->p[i] = np[i];
	return r;
}

static void ty_format(const struct ty *t, struct gv_buf *b, int depth)
{
	static const char *const names[] = {[TY_DYN] = "dyn",
					    [TY_NULL] = "null_type",
					    [TY_BOOL] = "bool",
					    [TY_INT] = "int",
					    [TY_UINT] = "uint",
					    [TY_DOUBLE] = "double",
					    [TY_STRING] = "string",
					    [TY_BYTES] = "bytes",
					    [TY_TIMESTAMP] = "google.protobuf.Timestamp",
					    [TY_DURATION] = "google.protobuf.Duration",
					    [TY_LIST] = "list",
					    [TY_MAP] = "map",
					    [TY_TYPE] = "type",
					    [TY_OPT] = "optional_type"};
	int i;

	if (depth > 32) {
		gv_buf_adds(b, "...");
		return;
	}
	if (t->kind == TY_PARAM) {
		gv_buf_addf(b, "_var%d", t->id);
		return;
	}
	gv_buf_adds(b, t->kind == TY_OPAQUE ? t->name : names[t->kind]);
	if (t->np) {
		gv_buf_addc(b, '(');
		for (i = 0; i < t->np; i++) {
			if (i)
				gv_buf_adds(b, ", ");
			ty_format(t->p[i], b, depth + 1);
		}
		gv_buf_addc(b, ')');
	}
}

static bool is_dyn(const struct ty *t)
{
	return t->kind == TY_DYN;
}

static bool nullable(const struct ty *t)
{
	return t->kind == TY_NULL || t->kind == TY_TIMESTAMP || t->kind == TY_DURATION ||
	       t->kind == TY_OPT || t->kind == TY_OPAQUE;
}

/* cel-go's isEqualOrLessSpecific: t1 matches t2 through dyn or a parameter. */
static bool less_specific(const struct ty *a, const struct ty *b, int depth)
{
	int i;

	if (depth > CEL_MAX_DEPTH * 2)
		return true;
	if (is_dyn(a) || a->kind == TY_PARAM)
		return true;
	if (is_dyn(b) || b->kind == TY_PARAM)
		return false;
	if (a->kind != b->kind)
		return false;
	if (a->kind == TY_TYPE)
		return true;
	if (a->kind == TY_OPAQUE && strcmp(a->name, b->name) != 0)
		return false;
	if (a->np != b->np)
		return false;
	for (i = 0; i < a->np; i++)
		if (!less_specific(a->p[i], b->p[i], depth + 1))
			return false;
	return true;
}

static const struct ty *most_general(const struct ty *a, const struct ty *b)
{
	/* the null of a legacy nullable candidate takes the other's type */
	if (b->kind == TY_NULL && nullable(a))
		return a;
	if (a->kind == TY_NULL && nullable(b))
		return b;
	return less_specific(a, b, 0) ? a : b;
}

static bool occurs(struct checker *c, int id, const struct ty *t, int depth)
{
	int i;

	if (depth > CEL_MAX_DEPTH * 2)
		return true;
	if (t->kind == TY_PARAM) {
		if (t->id == id)
			return true;
		return c->sub[t->id] && occurs(c, id, c->sub[t->id], depth + 1);
	}
	for (i = 0; i < t->np; i++)
		if (occurs(c, id, t->p[i], depth + 1))
			return true;
	return false;
}

static bool assignable(struct checker *c, const struct ty *a, const struct ty *b, int depth);

/* cel-go's isValidTypeSubstitution: may parameter p stand for t? */
static bool param_sub(struct checker *c, const struct ty *t, const struct ty *p, bool *has_sub,
		      int depth)
{
	const struct ty *cur;

	*has_sub = false;
	if (t->kind == TY_PARAM && t->id == p->id) {
		*has_sub = true;
		return true;
	}
	cur = c->sub[p->id];
	if (cur) {
		*has_sub = true;
		if (cur == t)
			return true;
		if (assignable(c, t, cur, depth + 1)) {
			const struct ty *g = most_general(t, cur);

			if (!occurs(c, p->id, g, 0))
				bind_param(c, p->id, g);
			return true;
		}
		return false;
	}
	if (occurs(c, p->id, t, 0))
		return false;
	bind_param(c, p->id, t);
	return true;
}

/*
 * A dyn value matched against t: each parameter in t may stand for anything,
 * so it becomes dyn (list(int) + dyn is list(dyn): the dyn list may hold
 * doubles). cel-go keeps list(int) there, a deduced type its values need
 * not have; gavel's deduced type is sound (a value has it).
 */
static void widen_params(struct checker *c, const struct ty *t, int depth)
{
	bool has_sub;
	int i;

	if (depth > CEL_MAX_DEPTH * 2)
		return;
	if (t->kind == TY_PARAM) {
		param_sub(c, &ty_dyn, t, &has_sub, depth);
		return;
	}
	for (i = 0; i < t->np; i++)
		widen_params(c, t->p[i], depth + 1);
}

/* cel-go's internalIsAssignable: is a value of type b acceptable where a is expected? */
static bool assignable(struct checker *c, const struct ty *a, const struct ty *b, int depth)
{
	bool has_sub;
	int i;

	if (depth > CEL_MAX_DEPTH * 2)
		return true;
	if (b->kind == TY_PARAM) {
		if (param_sub(c, a, b, &has_sub, depth))
			return true;
		if (has_sub)
			return false;
	}
	if (a->kind == TY_PARAM)
		return param_sub(c, b, a, &has_sub, depth);
	if (is_dyn(a) || is_dyn(b)) {
		widen_params(c, is_dyn(a) ? b : a, depth + 1);
		return true;
	}
	if (b->kind == TY_NULL && nullable(a))
		return true;
	if (a->kind != b->kind)
		return false;
	if (a->kind == TY_OPAQUE && strcmp(a->name, b->name) != 0)
		return false;
	if (a->kind == TY_TYPE)
		return true;
	if (a->np != b->np)
		return false;
	for (i = 0; i < a->np; i++)
		if (!assignable(c, a->p[i], b->p[i], depth + 1))
			return false;
	return true;
}

/* ---- signatures ---- */

/*
 * Overloads as cel-go declares them, in a small text form:
 *   "name(T, ...) R", T and R types: int uint double bool string bytes null
 *   dyn timestamp duration list(T) map(K, V) optional(T), a library type's
 *   name, or an upper-case letter (a type parameter of the overload).
 * member: the first parameter is the receiver (x.name(...)).
 */
struct sig {
	bool member;
	const char *text;
};

#define MB true
#define GL false
static const struct sig sigs[] = {
    /* operators */
    {GL, "_+_(int, int) int"},
    {GL, "_+_(uint, uint) uint"},
    {GL, "_+_(double, double) double"},
    {GL, "_+_(string, string) string"},
    {GL, "_+_(bytes, bytes) bytes"},
    {GL, "_+_(list(A), list(A)) list(A)"},
    {GL, "_+_(duration, duration) duration"},
    {GL, "_+_(timestamp, duration) timestamp"},
    {GL, "_+_(duration, timestamp) timestamp"},
    {GL, "_-_(int, int) int"},
    {GL, "_-_(uint, uint) uint"},
    {GL, "_-_(double, double) double"},
    {GL, "_-_(timestamp, timestamp) duration"},
    {GL, "_-_(timestamp, duration) timestamp"},
    {GL, "_-_(duration, duration) duration"},
    {GL, "_*_(int, int) int"},
    {GL, "_*_(uint, uint) uint"},
    {GL, "_*_(double, double) double"},
    {GL, "_/_(int, int) int"},
    {GL, "_/_(uint, uint) uint"},
    {GL, "_/_(double, double) double"},
    {GL, "_%_(int, int) int"},
    {GL, "_%_(uint, uint) uint"},
    {GL, "-_(int) int"},
    {GL, "-_(double) double"},
    {GL, "!_(bool) bool"},
    {GL, "_&&_(bool, bool) bool"},
    {GL, "_||_(bool, bool) bool"},
    {GL, "_?_:_(bool, A, A) A"},
    {GL, "_<_(bool, bool) bool"},
    {GL, "_<_(int, int) bool"},
    {GL, "_<_(int, uint) bool"},
    {GL, "_<_(int, double) bool"},
    {GL, "_<_(uint, uint) bool"},
    {GL, "_<_(uint, int) bool"},
    {GL, "_<_(uint, double) bool"},
    {GL, "_<_(double, double) bool"},
    {GL, "_<_(double, int) bool"},
    {GL, "_<_(double, uint) bool"},
    {GL, "_<_(string, string) bool"},
    {GL, "_<_(bytes, bytes) bool"},
    {GL, "_<_(timestamp, timestamp) bool"},
    {GL, "_<_(duration, duration) bool"},
    {GL, "_[_](list(A), int) A"},
    {GL, "_[_](list(A), uint) A"},
    {GL, "_[_](list(A), double) A"},
    {GL, "_[_](map(K, V), K) V"},
    {GL, "_[_](optional(list(A)), int) optional(A)"},
    {GL, "_[_](optional(map(K, V)), K) optional(V)"},
    /* standard functions */
    {GL, "size(string) int"},
    {GL, "size(bytes) int"},
    {GL, "size(list(A)) int"},
    {GL, "size(map(K, V)) int"},
    {MB, "size(string) int"},
    {MB, "size(bytes) int"},
    {MB, "size(list(A)) int"},
    {MB, "size(map(K, V)) int"},
    {MB, "contains(string, string) bool"},
    {MB, "startsWith(string, string) bool"},
    {MB, "endsWith(string, string) bool"},
    {GL, "matches(string, string) bool"},
    {MB, "matches(string, string) bool"},
    {GL, "int(dyn) int"},
    {GL, "uint(dyn) uint"},
    {GL, "double(dyn) double"},
    {GL, "string(dyn) string"},
    {GL, "bytes(dyn) bytes"},
    {GL, "bool(dyn) bool"},
    {GL, "duration(dyn) duration"},
    {GL, "timestamp(dyn) timestamp"},
    {MB, "getFullYear(timestamp) int"},
    {MB, "getFullYear(timestamp, string) int"},
    {MB, "getMonth(timestamp) int"},
    {MB, "getMonth(timestamp, string) int"},
    {MB, "getDayOfYear(timestamp) int"},
    {MB, "getDayOfYear(timestamp, string) int"},
    {MB, "getDayOfMonth(timestamp) int"},
    {MB, "getDayOfMonth(timestamp, string) int"},
    {MB, "getDate(timestamp) int"},
    {MB, "getDate(timestamp, string) int"},
    {MB, "getDayOfWeek(timestamp) int"},
    {MB, "getDayOfWeek(timestamp, string) int"},
    {MB, "getHours(timestamp) int"},
    {MB, "getHours(timestamp, string) int"},
    {MB, "getHours(duration) int"},
    {MB, "getMinutes(timestamp) int"},
    {MB, "getMinutes(timestamp, string) int"},
    {MB, "getMinutes(duration) int"},
    {MB, "getSeconds(timestamp) int"},
    {MB, "getSeconds(timestamp, string) int"},
    {MB, "getSeconds(duration) int"},
    {MB, "getMilliseconds(timestamp) int"},
    {MB, "getMilliseconds(timestamp, string) int"},
    {MB, "getMilliseconds(duration) int"},
    /* strings */
    {MB, "charAt(string, int) string"},
    {MB, "indexOf(string, string) int"},
    {MB, "indexOf(string, string, int) int"},
    {MB, "indexOf(list(A), A) int"},
    {MB, "lastIndexOf(string, string) int"},
    {MB, "lastIndexOf(string, string, int) int"},
    {MB, "lastIndexOf(list(A), A) int"},
    {MB, "lowerAscii(string) string"},
    {MB, "upperAscii(string) string"},
    {MB, "replace(string, string, string) string"},
    {MB, "replace(string, string, string, int) string"},
    {MB, "split(string, string) list(string)"},
    {MB, "split(string, string, int) list(string)"},
    {MB, "substring(string, int) string"},
    {MB, "substring(string, int, int) string"},
    {MB, "trim(string) string"},
    {MB, "join(list(string)) string"},
    {MB, "join(list(string), string) string"},
    {GL, "strings.quote(string) string"},
    {MB, "format(string, list(dyn)) string"},
    {MB, "find(string, string) string"},
    {MB, "findAll(string, string) list(string)"},
    {MB, "findAll(string, string, int) list(string)"},
    /* optional types */
    {GL, "optional.of(A) optional(A)"},
    {GL, "optional.ofNonZeroValue(A) optional(A)"},
    {GL, "optional.none() optional(A)"},
    {MB, "hasValue(optional(A)) bool"},
    {MB, "value(optional(A)) A"},
    {GL, "optional.unwrap(list(optional(A))) list(A)"},
    {MB, "unwrapOpt(list(optional(A))) list(A)"},
    {MB, "first(list(A)) optional(A)"},
    {MB, "last(list(A)) optional(A)"},
    /* encoders, lists, sets */
    {GL, "base64.encode(bytes) string"},
    {GL, "base64.decode(string) bytes"},
    {GL, "lists.range(int) list(int)"},
    {MB, "slice(list(A), int, int) list(A)"},
    {MB, "distinct(list(A)) list(A)"},
    {MB, "sort(list(A)) list(A)"},
    {GL, "sets.contains(list(A), list(A)) bool"},
    {GL, "sets.equivalent(list(A), list(A)) bool"},
    {GL, "sets.intersects(list(A), list(A)) bool"},
    {MB, "isSorted(list(A)) bool"},
    {MB, "sum(list(A)) A"},
    {MB, "min(list(A)) A"},
    {MB, "max(list(A)) A"},
    /* math */
    {GL, "math.ceil(double) double"},
    {GL, "math.floor(double) double"},
    {GL, "math.round(double) double"},
    {GL, "math.round(double, int) double"},
    {GL, "math.trunc(double) double"},
    {GL, "math.isInf(double) bool"},
    {GL, "math.isNaN(double) bool"},
    {GL, "math.isFinite(double) bool"},
    {GL, "math.sqrt(int) double"},
    {GL, "math.sqrt(uint) double"},
    {GL, "math.sqrt(double) double"},
    {GL, "math.abs(int) int"},
    {GL, "math.abs(uint) uint"},
    {GL, "math.abs(double) double"},
    {GL, "math.sign(int) int"},
    {GL, "math.sign(uint) uint"},
    {GL, "math.sign(double) double"},
    {GL, "math.bitAnd(int, int) int"},
    {GL, "math.bitAnd(uint, uint) uint"},
    {GL, "math.bitOr(int, int) int"},
    {GL, "math.bitOr(uint, uint) uint"},
    {GL, "math.bitXor(int, int) int"},
    {GL, "math.bitXor(uint, uint) uint"},
    {GL, "math.bitNot(int) int"},
    {GL, "math.bitNot(uint) uint"},
    {GL, "math.bitShiftLeft(int, int) int"},
    {GL, "math.bitShiftLeft(uint, int) uint"},
    {GL, "math.bitShiftRight(int, int) int"},
    {GL, "math.bitShiftRight(uint, int) uint"},
    /* Kubernetes libraries: constructors and predicates */
    {GL, "quantity(string) kubernetes.Quantity"},
    {GL, "isQuantity(string) bool"},
    {GL, "url(string) kubernetes.URL"},
    {GL, "isURL(string) bool"},
    {GL, "ip(string) net.IP"},
    {GL, "isIP(string) bool"},
    {GL, "cidr(string) net.CIDR"},
    {GL, "isCIDR(string) bool"},
};
#undef MB
#undef GL

/* Parses a type of a signature at *s; params[26] are the overload's parameters. */
static const struct ty *sig_type(struct checker *c, const char **s, const struct ty **params)
{
	const char *p = *s, *e;
	const struct ty *t;
	size_t n;

	while (*p == ' ')
		p++;
	for (e = p; *e && *e != '(' && *e != ')' && *e != ',' && *e != ' '; e++)
		;
	n = (size_t)(e - p);
	*s = e;
	if (n == 1 && *p >= 'A' && *p <= 'Z') {
		if (!params[*p - 'A'])
			params[*p - 'A'] = ty_param(c);
		return params[*p - 'A'];
	}
#define IS(w) (n == strlen(w) && memcmp(p, w, n) == 0)
	if (IS("list") || IS("optional") || IS("map")) {
		bool map = IS("map");
		const struct ty *a, *b = NULL;

		(*s)++; /* ( */
		a = sig_type(c, s, params);
		if (map) {
			(*s)++; /* , */
			b = sig_type(c, s, params);
		}
		(*s)++; /* ) */
		if (map)
			return ty_map(c, a, b);
		return ty1(c, IS("list") ? TY_LIST : TY_OPT, a);
	}
	if (IS("int"))
		return &ty_int;
	if (IS("uint"))
		return &ty_uint;
	if (IS("double"))
		return &ty_double;
	if (IS("bool"))
		return &ty_bool;
	if (IS("string"))
		return &ty_string;
	if (IS("bytes"))
		return &ty_bytes;
	if (IS("null"))
		return &ty_null;
	if (IS("timestamp"))
		return &ty_timestamp;
	if (IS("duration"))
		return &ty_duration;
	if (IS("dyn"))
		return &ty_dyn;
#undef IS
	t = ty_new(c, TY_OPAQUE);
	((struct ty *)t)->name = cel_arena_strndup(&c->arena, p, n);
	return t;
}

/* Whether signature text is an overload of name; *nparams its number of parameters. */
static bool sig_head(const char *text, const char *name, int *nparams)
{
	const char *paren = strncmp(text, "_[_]", 4) == 0 ? text + 4 : strchr(text, '(');
	size_t n = strlen(name);
	const char *p;
	int depth = 0, commas = 0;
	bool any = false;

	if ((size_t)(paren - text) != n || memcmp(text, name, n) != 0)
		return false;
	for (p = paren + 1; *p; p++) {
		if (*p == '(') {
			depth++;
		} else if (*p == ')') {
			if (depth-- == 0)
				break;
		} else if (*p == ',' && depth == 0) {
			commas++;
		} else if (*p != ' ') {
			any = true;
		}
	}
	*nparams = any ? commas + 1 : 0;
	return true;
}

/* ---- errors ---- */

static void cfail(struct checker *c, int pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cfail(struct checker *c, int pos, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return;
	c->failed = true;
	c->pos = pos;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
}

static void no_overload(struct checker *c, int pos, const char *name, bool member,
			const struct ty **args, int nargs)
{
	struct gv_buf b = {0};
	int i;

	if (member) {
		ty_format(subst(c, args[0], true, 0), &b, 0);
		gv_buf_addc(&b, '.');
	}
	gv_buf_addc(&b, '(');
	for (i = member ? 1 : 0; i < nargs; i++) {
		if (i > (member ? 1 : 0))
			gv_buf_adds(&b, ", ");
		ty_format(subst(c, args[i], true, 0), &b, 0);
	}
	gv_buf_addc(&b, ')');
	cfail(c, pos, "found no matching overload for '%s' applied to '%s'", name, gv_buf_str(&b));
	gv_buf_release(&b);
}

/*
 * The result type of name(args) (member: args[0] is the receiver), or NULL
 * when the table declares no overload of that shape (not checked). Reports
 * an error when overloads are declared and none accepts the arguments.
 */
static const struct ty *resolve(struct checker *c, int pos, const char *name, bool member,
				const struct ty **args, int nargs)
{
	const struct ty *result = NULL;
	bool declared = false;
	size_t i;
	int k;

	for (i = 0; i < GV_ARRAY_LEN(sigs); i++) {
		const struct ty *params[26] = {0}, *r;
		const char *s;
		int np;
		size_t mark = c->ntrail;
		bool ok = true;

		if (sigs[i].member != member || !sig_head(sigs[i].text, name, &np) || np != nargs)
			continue;
		declared = true;
		s = strncmp(sigs[i].text, "_[_]", 4) == 0 ? sigs[i].text + 5
							  : strchr(sigs[i].text, '(') + 1;
		for (k = 0; k < nargs; k++) {
			const struct ty *pt = sig_type(c, &s, params);

			s++; /* , or ) */
			if (ok && !assignable(c, pt, args[k], 0))
				ok = false;
		}
		if (nargs == 0)
			s++; /* ) */
		r = sig_type(c, &s, params);
		if (!ok) {
			undo_to(c, mark);
			continue;
		}
		r = subst(c, r, false, 0);
		if (!result)
			result = r;
		else if (!(result->kind == r->kind && less_specific(result, r, 0) &&
			   less_specific(r, result, 0)))
			result = &ty_dyn;
	}
	if (!declared)
		return NULL;
	if (!result) {
		no_overload(c, pos, name, member, args, nargs);
		return &ty_dyn;
	}
	return result;
}

/* ---- the walk ---- */

static const struct ty *check(struct checker *c, const struct cel_node *n);

static void push_var(struct checker *c, const char *name, const struct ty *t)
{
	if (c->nvars == c->capvars) {
		c->capvars = c->capvars ? c->capvars * 2 : 8;
		c->vars = gv_xrealloc(c->vars, sizeof(*c->vars) * c->capvars);
	}
	c->vars[c->nvars].name = name;
	c->vars[c->nvars].t = t;
	c->nvars++;
}

static const struct ty *type_ident(struct checker *c, const char *name)
{
	static const struct {
		const char *name;
		const struct ty *t;
	} names[] = {
	    {"int", &ty_int},
	    {"uint", &ty_uint},
	    {"double", &ty_double},
	    {"bool", &ty_bool},
	    {"string", &ty_string},
	    {"bytes", &ty_bytes},
	    {"null_type", &ty_null},
	    {"google.protobuf.Timestamp", &ty_timestamp},
	    {"google.protobuf.Duration", &ty_duration},
	};
	size_t i;

	for (i = 0; i < GV_ARRAY_LEN(names); i++)
		if (strcmp(names[i].name, name) == 0)
			return ty1(c, TY_TYPE, names[i].t);
	if (strcmp(name, "list") == 0 || strcmp(name, "map") == 0 || strcmp(name, "type") == 0 ||
	    strcmp(name, "dyn") == 0 || strcmp(name, "optional_type") == 0)
		return ty1(c, TY_TYPE, &ty_dyn);
	return NULL;
}

/* The joined type of aggregate literal elements (HomogeneousAggregateLiterals). */
static const struct ty *join(struct checker *c, const struct cel_node *e, const struct ty *prev,
			     const struct ty *cur)
{
	struct gv_buf a = {0}, b = {0};

	if (!prev)
		return cur;
	if (assignable(c, prev, cur, 0))
		return most_general(prev, cur);
	if (c->dyn_literals)
		return &ty_dyn;
	ty_format(subst(c, prev, true, 0), &a, 0);
	ty_format(subst(c, cur, true, 0), &b, 0);
	cfail(c, e->pos, "expected type '%s' but found '%s'", gv_buf_str(&a), gv_buf_str(&b));
	gv_buf_release(&a);
	gv_buf_release(&b);
	return prev;
}

/* The element type of an optional element/entry (?e), which must be optional. */
static const struct ty *unwrap_opt(struct checker *c, const struct cel_node *e, const struct ty *t)
{
	struct gv_buf b = {0};

	t = subst(c, t, false, 0);
	if (t->kind == TY_OPT)
		return t->p[0];
	if (is_dyn(t) || t->kind == TY_PARAM)
		return &ty_dyn;
	ty_format(t, &b, 0);
	cfail(c, e->pos, "expected type 'optional_type' but found '%s'", gv_buf_str(&b));
	gv_buf_release(&b);
	return &ty_dyn;
}

static const struct ty *check_select(struct checker *c, const struct cel_node *n,
				     const struct ty *t, bool has)
{
	struct gv_buf b = {0};
	bool opt = n->opt;

	t = subst(c, t, false, 0);
	if (t->kind == TY_OPT) {
		/* selection on an optional is optional (cel-go's optional types) */
		opt = true;
		t = subst(c, t->p[0], false, 0);
	}
	switch (t->kind) {
	case TY_MAP:
		if (has)
			return &ty_bool;
		return opt ? ty1(c, TY_OPT, t->p[1]) : t->p[1];
	case TY_NULL:
	case TY_BOOL:
	case TY_INT:
	case TY_UINT:
	case TY_DOUBLE:
	case TY_STRING:
	case TY_BYTES:
	case TY_LIST:
	case TY_TIMESTAMP:
	case TY_DURATION:
		ty_format(t, &b, 0);
		cfail(c, n->pos, "type '%s' does not support field selection", gv_buf_str(&b));
		gv_buf_release(&b);
		return &ty_dyn;
	default:
		if (has)
			return &ty_bool;
		return opt ? ty1(c, TY_OPT, &ty_dyn) : &ty_dyn;
	}
}

static const struct ty *check_compr(struct checker *c, const struct cel_node *n)
{
	enum cel_macro m = (enum cel_macro)n->op;
	const struct ty *range = subst(c, check(c, n->a[0]), false, 0), *k = &ty_dyn, *v = &ty_dyn,
			*r = &ty_dyn, *last;
	size_t base = c->nvars;
	bool two = n->name2 != NULL;
	int i;

	if (m == M_OPT_MAP || m == M_OPT_FLAT_MAP) {
		if (range->kind == TY_OPT)
			v = range->p[0];
		else if (!is_dyn(range) && range->kind != TY_PARAM)
			no_overload(c, n->pos, m == M_OPT_MAP ? "optMap" : "optFlatMap", true,
				    &range, 1);
		push_var(c, n->name, v);
		r = check(c, n->a[1]);
		c->nvars = base;
		r = subst(c, r, false, 0);
		if (m == M_OPT_MAP)
			return ty1(c, TY_OPT, r);
		return r->kind == TY_OPT ? r : ty1(c, TY_OPT, &ty_dyn);
	}
	switch (range->kind) {
	case TY_LIST:
		k = two ? &ty_int : range->p[0];
		v = range->p[0];
		break;
	case TY_MAP:
		k = range->p[0];
		v = range->p[1];
		break;
	case TY_DYN:
	case TY_PARAM:
		break;
	default: {
		struct gv_buf b = {0};

		ty_format(range, &b, 0);
		cfail(c, n->a[0]->pos,
		      "expression of type '%s' cannot be range of a comprehension (must be list, "
		      "map, or dynamic)",
		      gv_buf_str(&b));
		gv_buf_release(&b);
	}
	}
	if (two) {
		push_var(c, n->name, k);
		push_var(c, n->name2, v);
	} else {
		push_var(c, n->name, k);
	}
	last = &ty_dyn;
	for (i = 1; i < n->n; i++) {
		const struct ty *t = check(c, n->a[i]);
		bool is_pred = (m == M_ALL || m == M_EXISTS || m == M_EXISTS_ONE || m == M_FILTER ||
				(i == 1 && n->n == 3));

		if (is_pred && m != M_SORT_BY && m != M_TRANSFORM_ENTRY) {
			const struct ty *args[2] = {t, t};

			if (!assignable(c, &ty_bool, t, 0))
				no_overload(c, n->a[i]->pos,
					    m == M_ALL		? "all"
					    : m == M_EXISTS	? "exists"
					    : m == M_EXISTS_ONE ? "exists_one"
								: "filter",
					    false, args, 1);
		}
		last = t;
	}
	c->nvars = base;
	switch (m) {
	case M_ALL:
	case M_EXISTS:
	case M_EXISTS_ONE:
		return &ty_bool;
	case M_MAP:
	case M_TRANSFORM_LIST:
		return ty1(c, TY_LIST, subst(c, last, false, 0));
	case M_FILTER:
		return range->kind == TY_LIST ? range : ty1(c, TY_LIST, k);
	case M_SORT_BY:
		return range->kind == TY_LIST ? range : ty1(c, TY_LIST, &ty_dyn);
	case M_TRANSFORM_MAP:
		r = subst(c, last, false, 0);
		return ty_map(c, range->kind == TY_LIST ? &ty_int : k, r);
	default:
		return ty_map(c, &ty_dyn, &ty_dyn);
	}
}

static const char *op_name(enum cel_op op, bool unary)
{
	switch (op) {
	case OP_ADD:
		return "_+_";
	case OP_SUB:
		return unary ? "-_" : "_-_";
	case OP_MUL:
		return "_*_";
	case OP_DIV:
		return "_/_";
	case OP_MOD:
		return "_%_";
	case OP_EQ:
		return "_==_";
	case OP_NE:
		return "_!=_";
	case OP_LT:
	case OP_LE:
	case OP_GT:
	case OP_GE:
		return "_<_";
	case OP_IN:
		return "@in";
	case OP_NOT:
		return "!_";
	case OP_NEG:
		return "-_";
	default:
		return "?";
	}
}

static const char *rel_name(enum cel_op op)
{
	switch (op) {
	case OP_LE:
		return "_<=_";
	case OP_GT:
		return "_>_";
	case OP_GE:
		return "_>=_";
	default:
		return "_<_";
	}
}

/* A type with no dyn or parameter anywhere. */
static bool concrete(const struct ty *t, int depth)
{
	int i;

	if (depth > 64 || is_dyn(t) || t->kind == TY_PARAM)
		return false;
	for (i = 0; i < t->np; i++)
		if (!concrete(t->p[i], depth + 1))
			return false;
	return true;
}

static const struct ty *check_binary(struct checker *c, const struct cel_node *n)
{
	const struct ty *args[2], *r;
	enum cel_op op = (enum cel_op)n->op;

	args[0] = check(c, n->a[0]);
	args[1] = check(c, n->a[1]);
	if (op == OP_EQ || op == OP_NE) {
		/* (A, A) -> bool; refused only when both sides are fully known and disagree */
		const struct ty *a = subst(c, args[0], false, 0), *b = subst(c, args[1], false, 0);
		size_t mark = c->ntrail;

		if (concrete(a, 0) && concrete(b, 0) && a->kind != TY_NULL && b->kind != TY_NULL &&
		    !assignable(c, a, b, 0))
			no_overload(c, n->pos, op_name(op, false), false, args, 2);
		undo_to(c, mark);
		return &ty_bool;
	}
	if (op == OP_IN) {
		const struct ty *b = subst(c, args[1], false, 0);

		if (b->kind != TY_LIST && b->kind != TY_MAP && !is_dyn(b) && b->kind != TY_PARAM)
			no_overload(c, n->pos, "@in", false, args, 2);
		return &ty_bool;
	}
	r = resolve(c, n->pos, op_name(op, false), false, args, 2);
	if (c->failed && (op == OP_LE || op == OP_GT || op == OP_GE) && strstr(c->msg, "'_<_'")) {
		/* the message names the operator written */
		char *p = strstr(c->msg, "'_<_'");
		char tail[256];

		snprintf(tail, sizeof(tail), "'%s'%s", rel_name(op), p + 5);
		snprintf(p, sizeof(c->msg) - (size_t)(p - c->msg), "%s", tail);
	}
	return r ? r : &ty_dyn;
}

static const struct ty *check_call(struct checker *c, const struct cel_node *n)
{
	const struct ty *args[64], *r;
	int i, na = n->n < 64 ? n->n : 64;
	bool dyn_literals = c->dyn_literals;

	/* format's argument list mixes types: exempt from homogeneous literals (ext.Strings) */
	if (n->name && strcmp(n->name, "format") == 0)
		c->dyn_literals = true;
	for (i = 0; i < n->n; i++) {
		const struct ty *t = check(c, n->a[i]);

		if (i < 64)
			args[i] = t;
	}
	c->dyn_literals = dyn_literals;
	if (!n->fn || n->fn == &cel_json_message || n->n > 64)
		return &ty_dyn;
	if (strcmp(n->name, "dyn") == 0 && n->n == 1)
		return &ty_dyn;
	if (strcmp(n->name, "type") == 0 && n->n == 1)
		return ty1(c, TY_TYPE, subst(c, args[0], false, 0));
	r = resolve(c, n->pos, n->name, n->target, args, na);
	return r ? r : &ty_unknown;
}

/*
 * A type text as ty_format writes it ("list(map(string, dyn))",
 * "optional_type(int)", "net.IP"; "?" = ty_unknown), advancing *s.
 */
static const struct ty *parse_ty(struct checker *c, const char **s, int depth)
{
	static const struct {
		const char *name;
		const struct ty *t;
		int np; /* -1 a simple type */
		enum ty_kind k;
	} names[] = {
	    {"?", &ty_unknown, -1, TY_DYN},
	    {"dyn", &ty_dyn, -1, TY_DYN},
	    {"null_type", &ty_null, -1, TY_NULL},
	    {"bool", &ty_bool, -1, TY_BOOL},
	    {"int", &ty_int, -1, TY_INT},
	    {"uint", &ty_uint, -1, TY_UINT},
	    {"double", &ty_double, -1, TY_DOUBLE},
	    {"string", &ty_string, -1, TY_STRING},
	    {"bytes", &ty_bytes, -1, TY_BYTES},
	    {"google.protobuf.Timestamp", &ty_timestamp, -1, TY_TIMESTAMP},
	    {"google.protobuf.Duration", &ty_duration, -1, TY_DURATION},
	    {"list", NULL, 1, TY_LIST},
	    {"map", NULL, 2, TY_MAP},
	    {"type", NULL, 1, TY_TYPE},
	    {"optional_type", NULL, 1, TY_OPT},
	};
	const char *p = *s;
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.?");
	struct ty *t;
	size_t i;

	*s = p + n;
	if (depth > 32 || !n)
		return &ty_dyn;
	for (i = 0; i < GV_ARRAY_LEN(names); i++)
		if (strlen(names[i].name) == n && memcmp(names[i].name, p, n) == 0)
			break;
	if (i < GV_ARRAY_LEN(names) && names[i].t)
		return names[i].t;
	t = ty_new(c, i < GV_ARRAY_LEN(names) ? names[i].k : TY_OPAQUE);
	if (t->kind == TY_OPAQUE)
		t->name = cel_arena_strndup(&c->arena, p, n);
	if (**s != '(')
		return t;
	do {
		const struct ty *a;
		(*s)++; /* ( or , */
		while (**s == ' ')
			(*s)++;
		a = parse_ty(c, s, depth + 1);
		if (t->np < TY_MAXP)
			t->p[t->np++] = a;
	} while (**s == ',');
	if (**s == ')')
		(*s)++;
	return t;
}

/*
 * The declared type of variables.<name> (cel_decls.typed_variables) for a
 * selection n on the identifier `variables` not shadowed by a macro
 * variable; NULL when n is something else. An undeclared name fails.
 */
static const struct ty *declared_variable(struct checker *c, const struct cel_node *n)
{
	const struct cel_decls *d = c->decls;
	const struct cel_node *v = n->a[0];
	size_t i;

	if (!d || !d->typed_variables || v->kind != N_IDENT || strcmp(v->name, "variables") != 0)
		return NULL;
	for (i = c->nvars; i > 0; i--)
		if (strcmp(c->vars[i - 1].name, "variables") == 0)
			return NULL;
	for (i = 0; i < d->nvars; i++)
		if (strcmp(d->var_names[i], n->name) == 0) {
			const char *s = d->var_types[i];
			return parse_ty(c, &s, 0);
		}
	cfail(c, n->pos, "undefined field '%s'", n->name);
	return &ty_dyn;
}

static const struct ty *check(struct checker *c, const struct cel_node *n)
{
	const struct ty *t, *args[3];
	size_t i;

	if (c->failed)
		return &ty_dyn;
	switch ((enum cel_node_kind)n->kind) {
	case N_LIT:
		switch ((enum cel_kind)n->lit.kind) {
		case CEL_NULL:
			return &ty_null;
		case CEL_BOOL:
			return &ty_bool;
		case CEL_INT:
			return &ty_int;
		case CEL_UINT:
			return &ty_uint;
		case CEL_DOUBLE:
			return &ty_double;
		case CEL_STRING:
			return &ty_string;
		case CEL_BYTES:
			return &ty_bytes;
		case CEL_TIMESTAMP:
			return &ty_timestamp;
		case CEL_DURATION:
			return &ty_duration;
		default:
			return &ty_dyn;
		}
	case N_IDENT:
		for (i = c->nvars; i > 0; i--)
			if (strcmp(c->vars[i - 1].name, n->name) == 0)
				return c->vars[i - 1].t;
		if (c->decls)
			for (i = 0; i < c->decls->nundeclared; i++)
				if (strcmp(c->decls->undeclared[i], n->name) == 0)
					cfail(c, n->pos,
					      "undeclared reference to '%s' (in container '')",
					      n->name);
		t = type_ident(c, n->name);
		return t ? t : &ty_dyn;
	case N_SELECT:
		if ((t = declared_variable(c, n)))
			return n->opt ? ty1(c, TY_OPT, t) : t;
		return check_select(c, n, check(c, n->a[0]), false);
	case N_HAS:
		if (declared_variable(c, n))
			return &ty_bool;
		return check_select(c, n, check(c, n->a[0]), true);
	case N_INDEX:
		args[0] = check(c, n->a[0]);
		args[1] = check(c, n->a[1]);
		if (n->opt) {
			const struct ty *b = subst(c, args[0], false, 0);

			if (b->kind == TY_OPT)
				args[0] = b->p[0];
		}
		t = resolve(c, n->pos, "_[_]", false, args, 2);
		if (!t)
			t = &ty_dyn;
		return n->opt ? ty1(c, TY_OPT, t) : t;
	case N_CALL:
		return check_call(c, n);
	case N_UNARY:
		args[0] = check(c, n->a[0]);
		t = resolve(c, n->pos, op_name((enum cel_op)n->op, true), false, args, 1);
		return t ? t : &ty_dyn;
	case N_BINARY:
		return check_binary(c, n);
	case N_AND:
	case N_OR:
		args[0] = check(c, n->a[0]);
		args[1] = check(c, n->a[1]);
		resolve(c, n->pos, n->kind == N_AND ? "_&&_" : "_||_", false, args, 2);
		return &ty_bool;
	case N_COND:
		args[0] = check(c, n->a[0]);
		args[1] = check(c, n->a[1]);
		args[2] = check(c, n->a[2]);
		t = resolve(c, n->pos, "_?_:_", false, args, 3);
		return t ? t : &ty_dyn;
	case N_LIST: {
		const struct ty *elem = NULL;
		int k;

		for (k = 0; k < n->n && !c->failed; k++) {
			t = check(c, n->a[k]);
			if (k < 64 && (n->optmask >> k & 1))
				t = unwrap_opt(c, n->a[k], t);
			elem = join(c, n->a[k], elem, t);
		}
		return ty1(c, TY_LIST, elem ? elem : ty_param(c));
	}
	case N_MAP: {
		const struct ty *kt = NULL, *vt = NULL;
		int k;

		for (k = 0; k + 1 < n->n && !c->failed; k += 2) {
			kt = join(c, n->a[k], kt, check(c, n->a[k]));
			t = check(c, n->a[k + 1]);
			if (k / 2 < 64 && (n->optmask >> (k / 2) & 1))
				t = unwrap_opt(c, n->a[k + 1], t);
			vt = join(c, n->a[k + 1], vt, t);
		}
		return ty_map(c, kt ? kt : ty_param(c), vt ? vt : ty_param(c));
	}
	case N_COMPR:
		return check_compr(c, n);
	case N_BIND: {
		size_t base = c->nvars;

		t = check(c, n->a[0]);
		push_var(c, n->name, t);
		t = check(c, n->a[1]);
		c->nvars = base;
		return t;
	}
	}
	return &ty_dyn;
}

int cel_check(const struct cel_program *p, unsigned flags, const struct cel_decls *d, char *type,
	      size_t typelen, bool *known, int *pos, char *msg, size_t msglen)
{
	struct checker c = {0};
	const struct ty *t;
	int rc = 0;

	c.prog = p;
	c.decls = d;
	c.dyn_literals = (flags & CEL_COMPILE_DYN_LITERALS) != 0;
	t = check(&c, p->root);
	if (c.failed) {
		*pos = c.pos;
		snprintf(msg, msglen, "%s", c.msg);
		rc = -1;
	} else if (type && typelen) {
		struct gv_buf b = {0};

		t = subst(&c, t, true, 0);
		if (known)
			*known = t != &ty_unknown;
		ty_format(t, &b, 0);
		snprintf(type, typelen, "%s", gv_buf_str(&b));
		gv_buf_release(&b);
	}
	free(c.sub);
	free(c.trail);
	free(c.vars);
	cel_arena_release(&c.arena);
	return rc;
}
