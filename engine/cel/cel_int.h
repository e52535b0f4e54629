/*
 * cel_int.h - internals shared by the files of engine/cel: the AST, the
 * arena, the evaluation context and the function table.
 */
#ifndef GV_ENGINE_CEL_INT_H
#define GV_ENGINE_CEL_INT_H

#include "engine/cel/cel.h"

enum cel_op {
	OP_NONE,
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV,
	OP_MOD,
	OP_EQ,
	OP_NE,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_IN,
	OP_NOT,
	OP_NEG
};

enum cel_node_kind {
	N_LIT,	  /* lit */
	N_IDENT,  /* name */
	N_SELECT, /* a[0].name; opt: a.?name */
	N_HAS,	  /* has(a[0].name) */
	N_INDEX,  /* a[0][a[1]]; opt: a[?x] */
	N_CALL,	  /* fn(target? a[0], args...) */
	N_UNARY,  /* op a[0] */
	N_BINARY, /* a[0] op a[1] */
	N_AND,	  /* a[0] && a[1] */
	N_OR,	  /* a[0] || a[1] */
	N_COND,	  /* a[0] ? a[1] : a[2] */
	N_LIST,	  /* [a...]; optmask: ?e elements */
	N_MAP,	  /* {a[2i]: a[2i+1]}; optmask */
	N_COMPR,  /* macro over a[0] */
	N_BIND	  /* cel.bind(name, a[0], a[1]) */
};

enum cel_macro {
	M_ALL,
	M_EXISTS,
	M_EXISTS_ONE,
	M_MAP,		   /* x, t  or x, p, t */
	M_FILTER,	   /* x, p */
	M_TRANSFORM_LIST,  /* i, v, [p,] t */
	M_TRANSFORM_MAP,   /* i, v, [p,] t */
	M_TRANSFORM_ENTRY, /* i, v, [p,] {k: v} */
	M_SORT_BY,	   /* x, key */
	M_OPT_MAP,	   /* x, e */
	M_OPT_FLAT_MAP	   /* x, e */
};

/* An evaluation specialised at compile time (cel_resolve). */
enum cel_fast {
	FAST_NONE,
	FAST_OR_VALUE /* N_CALL: a[0].orValue(a[1]) with a[0] a selection chain */
};

struct cel_func;

struct cel_node {
	uint8_t kind; /* enum cel_node_kind */
	uint8_t op;   /* enum cel_op, or enum cel_macro for N_COMPR */
	bool opt;     /* optional select/index */
	bool target;  /* N_CALL: a[0] is the receiver; N_SELECT: the top of a chain a.b.c */
	int pos;      /* byte offset in the source */
	int n;	      /* number of children */
	int depth;    /* 1 + the deepest child's */
	struct cel_node **a;
	const char *name;	   /* N_IDENT, N_SELECT, N_CALL; N_COMPR/N_BIND: first variable */
	const char *name2;	   /* N_COMPR: second variable (two-variable forms) */
	const struct cel_func *fn; /* N_CALL */
	uint64_t optmask;     /* N_LIST/N_MAP: bit i = element/entry i is optional (first 64) */
	struct cel_value lit; /* N_LIT */
	void *aux;	      /* N_CALL: a compiled literal regex (owned by the program) */
	size_t nlen;	      /* strlen(name) (cel_resolve) */
	bool konst;	      /* N_LIST: lit holds its value (cel_resolve) */
	uint8_t fast;	      /* enum cel_fast (cel_resolve) */
	int slot;  /* N_IDENT: 1 + the index of the comprehension or cel.bind variable it names on
		      the locals stack (cel_resolve), 0: not such a variable */
	int cache; /* N_SELECT on a chain rooted at a bound variable: 1 + its entry in the
		      evaluation's field cache (one per distinct path, cel_resolve), or 0 */
};

/* ---- arena ---- */

struct cel_arena_block;
struct cel_arena {
	struct cel_arena_block *head;
	size_t used; /* bytes handed out, for the memory bound */
};

struct cel_arena_block {
	struct cel_arena_block *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

/* cel_arena_alloc() when the head block has no room (value.c). */
void *cel_arena_alloc_slow(struct cel_arena *a, size_t n);
/* n bytes, 16-aligned, valid until the arena is cleared or released. */
static inline void *cel_arena_alloc(struct cel_arena *a, size_t n)
{
	struct cel_arena_block *b = a->head;
	void *r;

	n = (n + 15) & ~(size_t)15;
	if (__builtin_expect(!b || b->cap - b->used < n, 0))
		return cel_arena_alloc_slow(a, n);
	r = b->data + b->used;
	b->used += n;
	a->used += n;
	return r;
}
void cel_arena_release(struct cel_arena *a);
/* Frees everything allocated but keeps one block for reuse. */
void cel_arena_clear(struct cel_arena *a);
char *cel_arena_strndup(struct cel_arena *a, const char *s, size_t n);

/* ---- program ---- */

struct cel_program {
	char *src; /* owned */
	size_t len;
	struct cel_arena arena; /* nodes and literals */
	struct cel_node *root;
	void **regexes; /* owned: the compiled literal patterns (cel_regex_free) */
	size_t nregexes;
	char type[128];	 /* the deduced type ("dyn" when not checked) */
	bool type_known; /* type is not a `dyn` from an unlisted library function */
	int ncache;	 /* entries of the field cache its evaluation needs (cel_resolve) */
};

/* ---- values ---- */

struct cel_list {
	size_t n;
	const struct cel_value *v;
};

struct cel_map {
	size_t n;
	const struct cel_value *k;
	const struct cel_value *v;
};

/* ---- evaluation ---- */

struct cel_var {
	const char *name;
	struct cel_value v;
};

/*
 * A field lookup on a JSON object made once per evaluation: the documents
 * do not change while a program runs, so a path such as object.spec names
 * one value however often it is written, and c.securityContext one value
 * per element c (obj: the object it was looked up on; gen: the evaluation
 * that filled it, advanced also by each host call, whose answers may be
 * released and their addresses reused).
 */
struct cel_field_cache {
	uint64_t gen;
	const json_t *obj, *res; /* res NULL: obj has no such field */
};

struct cel_eval {
	struct cel_arena arena;
	uint64_t cost, limit;
	size_t mem_limit;
	bool aborted;
	struct cel_error abort_err;
	struct cel_var *vars; /* bound variables (names owned) */
	size_t nvars, capvars;
	struct cel_var *locals; /* comprehension variables, a stack */
	size_t nlocals, caplocals;
	const struct cel_program *prog;
	const struct cel_host *host; /* borrowed, or NULL (host.c) */
	void *re_md; /* owned: a pcre2 match data of one pair for matches() (lib.c), or NULL */
	struct cel_field_cache *cache; /* owned: ncache entries */
	size_t ncache;
	uint64_t gen; /* the evaluations run */
};

/* Values */
struct cel_value cel_null(void);
struct cel_value cel_bool(bool b);
struct cel_value cel_int(int64_t i);
struct cel_value cel_uint(uint64_t u);
struct cel_value cel_double(double d);
struct cel_value cel_str(const char *p, size_t n);
struct cel_value cel_bytes(const char *p, size_t n);
struct cel_value cel_type(const char *name);
/*
 * A JSON value seen as a CEL value, borrowed. JSON numbers
 * (cel-semantics.md 1.3): integral ones are int, others double. jansson
 * reads a number with a fraction or exponent as a real, and an integer
 * beyond int64 fails to load unless JSON_DECODE_INT_AS_REAL.
 */
static inline struct cel_value cel_from_json(const json_t *j)
{
	struct cel_value v = {.kind = CEL_NULL};

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		v.kind = CEL_MAP;
		v.json = 1;
		v.v.json = j;
		break;
	case JSON_ARRAY:
		v.kind = CEL_LIST;
		v.json = 1;
		v.v.json = j;
		break;
	case JSON_STRING:
		v.kind = CEL_STRING;
		v.v.s.p = json_string_value(j);
		v.v.s.n = json_string_length(j);
		break;
	case JSON_INTEGER:
		v.kind = CEL_INT;
		v.v.i = (int64_t)json_integer_value(j);
		break;
	case JSON_REAL:
		v.kind = CEL_DOUBLE;
		v.v.d = json_real_value(j);
		break;
	case JSON_TRUE:
		v.kind = CEL_BOOL;
		v.v.b = true;
		break;
	case JSON_FALSE:
		v.kind = CEL_BOOL;
		v.v.b = false;
		break;
	default:
		break;
	}
	return v;
}
struct cel_value cel_err(struct cel_eval *ev, int pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct cel_value cel_list_new(struct cel_eval *ev, const struct cel_value *v, size_t n);
struct cel_value cel_map_new(struct cel_eval *ev, const struct cel_value *k,
			     const struct cel_value *v, size_t n);

/* Copies n bytes into the arena (charged to the cost). */
char *cel_eval_strdup(struct cel_eval *ev, const char *s, size_t n);

/* The limit checks of cel_charge() (value.c): false (and the context aborted) once over. */
bool cel_charge_check(struct cel_eval *ev);

size_t cel_list_size(const struct cel_value *l);
struct cel_value cel_list_get(const struct cel_value *l, size_t i);
size_t cel_map_size(const struct cel_value *m);
/* i-th key and value (iteration order: insertion, or the JSON object's). */
void cel_map_entry(const struct cel_value *m, size_t i, struct cel_value *k, struct cel_value *v);
/* Map lookup: true and *out when key is present (numeric keys compare across types). */
bool cel_map_find(const struct cel_value *m, const struct cel_value *key, struct cel_value *out);

const char *cel_type_name(const struct cel_value *v);
/* CEL equality (numbers across types); an error value when either side errs. */
struct cel_value cel_equals(struct cel_eval *ev, const struct cel_value *a,
			    const struct cel_value *b, int pos);
/* Ordering: -1/0/1 in *cmp; false when not comparable (no overload or NaN: *nan set). */
bool cel_compare(const struct cel_value *a, const struct cel_value *b, int *cmp, bool *nan);

/* Timestamps and durations (time.c) */
#define CEL_TS_MIN (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define CEL_TS_MAX (253402300799LL) /* 9999-12-31T23:59:59Z */
bool cel_parse_timestamp(const char *s, size_t n, int64_t *sec, int32_t *nsec);
void cel_format_timestamp(int64_t sec, int32_t nsec, struct gv_buf *out);
bool cel_parse_duration(const char *s, size_t n, int64_t *ns);
void cel_format_duration(int64_t ns, struct gv_buf *out);
/* Days since 1970-01-01 of a proleptic Gregorian date (month and day 1-based). */
int64_t cel_days_from_civil(int64_t y, int m, int d);
/*
 * UT offset in seconds (east positive) of IANA zone name (n bytes) at Unix
 * time t, from the system tz database (tz.c; read once per zone and cached).
 * False when the name is not a readable zone.
 */
bool cel_tz_lookup(const char *name, size_t n, int64_t t, int64_t *off);
/* Calendar fields of a Unix time. */
void cel_civil(int64_t sec, int64_t *year, int *month, int *day, int *yday, int *wday);

static inline void *cel_eval_alloc(struct cel_eval *ev, size_t n)
{
	return cel_arena_alloc(&ev->arena, n);
}

/* optional.of(*v), or optional.none() when v is NULL. */
static inline struct cel_value cel_opt(struct cel_eval *ev, const struct cel_value *inner)
{
	struct cel_value v = {.kind = CEL_OPTIONAL};

	if (inner) {
		struct cel_value *c = cel_arena_alloc(&ev->arena, sizeof(*c));

		*c = *inner;
		v.v.opt = c;
	}
	return v;
}

/* Charges cost; false (and the context aborted) once over the limit (or either limit was
 * already exceeded). */
static inline bool cel_charge(struct cel_eval *ev, uint64_t c)
{
	ev->cost += c;
	if (__builtin_expect(
		ev->cost <= ev->limit && ev->arena.used <= ev->mem_limit && !ev->aborted, 1))
		return true;
	return cel_charge_check(ev);
}

/* Evaluation (eval.c) */
/*
 * Resolves what can be resolved once per program (called by cel_compile on
 * a parsed tree): the name lengths, and each identifier naming a
 * comprehension or cel.bind variable to its index on the locals stack
 * (scoping is static: a macro's range and a bind's value are outside the
 * variables' scope, the other arguments inside); and folds each list literal
 * of literals into its value (N_LIST konst), charged as if evaluated.
 */
void cel_resolve(struct cel_program *p);
struct cel_value cel_eval_node(struct cel_eval *ev, const struct cel_node *n);
struct cel_value cel_arith(struct cel_eval *ev, enum cel_op op, const struct cel_value *a,
			   const struct cel_value *b, int pos);

/* Regular expressions (lib.c): NULL and the reason in err when pattern is not one. */
void *cel_regex_compile(const char *pattern, size_t n, char *err, size_t errlen);
void cel_regex_free(void *re);
/* Frees a context's re_md (NULL is fine). */
void cel_regex_md_free(void *md);

/* Functions (lib.c) */
typedef struct cel_value (*cel_fn)(struct cel_eval *ev, const struct cel_node *n,
				   struct cel_value *args, int nargs);
struct cel_func {
	const char *name;
	cel_fn fn;
	int8_t min_args, max_args; /* including the receiver */
	uint8_t style;		   /* CEL_FN_GLOBAL, CEL_FN_MEMBER or both */
	bool lazy;		   /* receives unevaluated errors (no strict error propagation) */
};
#define CEL_FN_GLOBAL 1
#define CEL_FN_MEMBER 2
const struct cel_func *cel_func_find(const char *name, bool member, int nargs);
/* google.protobuf.Struct/ListValue/Value{...}: (field name, value) pairs; n->name is the type. */
extern const struct cel_func cel_json_message;
/* The tables of the other library files (net.c, quantity.c, semver.c, url.c). */
extern const struct cel_func cel_net_funcs[];
extern const size_t cel_net_nfuncs;
extern const struct cel_func cel_quantity_funcs[];
extern const size_t cel_quantity_nfuncs;
extern const struct cel_func cel_semver_funcs[];
extern const size_t cel_semver_nfuncs;
extern const struct cel_func cel_url_funcs[];
extern const size_t cel_url_nfuncs;
extern const struct cel_func cel_format_funcs[];
extern const size_t cel_format_nfuncs;
extern const struct cel_func cel_authz_funcs[];
extern const size_t cel_authz_nfuncs;
/* NULL when s is a URL as url() reads it (Go's url.ParseRequestURI), else the reason. */
const char *cel_url_check(struct cel_eval *ev, const char *s, size_t n);
extern const struct cel_func cel_host_funcs[];
extern const size_t cel_host_nfuncs;
/* Semver ordering (semver.c) for the comparisons shared with quantities: false when not two
 * Semvers. */
bool cel_semver_cmp(const struct cel_value *a, const struct cel_value *b, int *c);
bool cel_func_known(const char *name);

/*
 * Type check (check.c) of a parsed program: 0 and the deduced type's CEL
 * name in type (typelen bytes, may be NULL) and in *known whether it is the
 * type cel-go deduces (cel_program_type_known), or -1 with the byte offset
 * and the message of the first error (cel-semantics.md 1.10). d: the
 * environment's declarations (cel_compile_decls) or NULL.
 */
/* Cost estimate (cost.c): see cel_program_cost() in cel.h. */
int cel_check(const struct cel_program *p, unsigned flags, const struct cel_decls *d, char *type,
	      size_t typelen, bool *known, int *pos, char *msg, size_t msglen);

#endif
