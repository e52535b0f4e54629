/*
 * jp_int.h - internals shared by the JMESPath files of engine/: jp_value.c
 * (values, errors, budget), jp_lexer.c, jp_parser.c, jmespath.c (the
 * evaluator), jp_std.c (standard functions) and jp_functions.c (Kyverno's
 * custom functions, kyverno-semantics.md section 6.4). Not for use outside
 * those files; everyone else includes engine/jmespath.h.
 */
#ifndef GV_ENGINE_JP_INT_H
#define GV_ENGINE_JP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/utf8.h"
#include "engine/jmespath.h"

/* Bounds. A bound that trips is JP_ERR_LIMIT. */
#define JP_DEFAULT_MAX_STEPS 1000000UL
#define JP_MAX_AST_DEPTH     256  /* nesting of the compiled tree */
#define JP_MAX_EVAL_DEPTH    512  /* evaluator recursion, exprefs included */
#define JP_MAX_VALUE_DEPTH   4096 /* recursion into values (equality, dump) */
#define JP_MAX_SRC_LEN	     (1u << 20)

enum jp_node_type {
	JN_CURRENT,	     /* @, and the implicit left side of a projection */
	JN_FIELD,	     /* name on the current object */
	JN_CHAIN,	     /* kids[0] then kids[1] on its result, ...: a.b[0].c */
	JN_INDEX,	     /* [idx] on the current array */
	JN_SLICE,	     /* [start:stop:step] on the current array */
	JN_PROJECTION,	     /* kids[0] a list, kids[1] on each element */
	JN_VALUE_PROJECTION, /* kids[0] an object, kids[1] on each value */
	JN_FLATTEN,	     /* kids[0] a list, one level flattened */
	JN_FILTER,	     /* kids[0] a list, kids[2] the condition, kids[1] on kept */
	JN_MULTI_LIST,	     /* [kids...] */
	JN_MULTI_HASH,	     /* {keys[i]: kids[i]} */
	JN_LITERAL,	     /* lit */
	JN_PIPE,	     /* kids[0] | kids[1] */
	JN_OR,		     /* kids[0] || kids[1] */
	JN_AND,		     /* kids[0] && kids[1] */
	JN_NOT,		     /* !kids[0] */
	JN_CMP,		     /* kids[0] op kids[1] */
	JN_FUNCTION,	     /* fn(kids...) */
	JN_EXPREF,	     /* &kids[0] */
};

enum jp_cmp { JC_EQ, JC_NE, JC_LT, JC_LE, JC_GT, JC_GE };

struct jp_func;

struct jp_node {
	enum jp_node_type type;
	int pos;    /* byte offset in the source */
	int height; /* 1 + height of the tallest kid */
	int nkids;
	struct jp_node **kids; /* owned */
	char **keys;	       /* owned, JN_MULTI_HASH */
	json_t *lit;	       /* owned, JN_LITERAL */
	char *name;	       /* owned, JN_FIELD */
	size_t name_len;
	long long idx;		  /* JN_INDEX */
	long long slice[3];	  /* JN_SLICE: start, stop, step */
	bool has[3];		  /* JN_SLICE: which parts were given */
	enum jp_cmp op;		  /* JN_CMP */
	const struct jp_func *fn; /* JN_FUNCTION, borrowed from a static table */
	void *aux;		  /* owned, function-specific compiled data */
	void (*aux_free)(void *aux);
};

/* Evaluation state of one jp_eval call. */
struct jp_ev {
	bool kyverno;
	unsigned long steps, max_steps;
	unsigned long shared_max; /* max_steps is what a shared budget of this size left, else 0 */
	int depth;
	struct jp_error *e;	  /* never NULL */
	const struct jp_env *env; /* never NULL: the clock and random source */
};

/* One evaluated function argument: a value, or an expression reference. */
struct jp_arg {
	json_t *v;		   /* owned reference; NULL when ref is set */
	const struct jp_node *ref; /* JN_EXPREF's expression, borrowed */
};

/* Argument type masks for signatures. */
#define JT_NULL	  0x01u
#define JT_BOOL	  0x02u
#define JT_NUMBER 0x04u
#define JT_STRING 0x08u
#define JT_ARRAY  0x10u
#define JT_OBJECT 0x20u
#define JT_EXPREF 0x40u
#define JT_ANY	  0x3fu

/*
 * A function. Arguments are type-checked against types[] (the last entry
 * repeats for variadic functions) before fn is called; fn sets *out to a new
 * reference, or returns a jp_error_kind with ev->e filled (jp_fail).
 */
struct jp_func {
	const char *name;
	const char *signature; /* "name(type, ...) -> type", for listings */
	int min_args;
	int max_args; /* -1: variadic */
	unsigned types[5];
	int (*fn)(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out);
	/* Optional: called once at compile time to precompute call->aux. */
	void (*prepare)(struct jp_node *call);
};

/*
 * jansson takes non-const pointers even to read (json_object_foreach,
 * json_incref); values reached through a const pointer are still never
 * modified, only referenced.
 */
static inline json_t *jp_mut(const json_t *v)
{
	union {
		const json_t *c;
		json_t *m;
	} u = {v};
	return u.m;
}

/* Kyverno's table (jp_functions.c), sorted by name. */
extern const struct jp_func jp_kyverno_funcs[];
extern const size_t jp_kyverno_nfuncs;

/* Sets ev->e (first error wins) and returns kind. printf-style. */
int jp_fail(struct jp_ev *ev, enum jp_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * jp_fail(ev, JP_ERR_UNKNOWN_KEY, "Unknown key \"%s\" in path", name)
 * without printf: Kyverno's evaluation hits it at every absent field, and
 * most such errors are dropped (eval_soft). Returns JP_ERR_UNKNOWN_KEY.
 */
int jp_fail_unknown_key(struct jp_ev *ev, const char *name);

/* Charges n steps against the budget; JP_ERR_LIMIT when it runs out. */
int jp_charge(struct jp_ev *ev, unsigned long n);

/*
 * jp_equal charged to the budget: a step per pair of elements or members
 * compared, a step per 16 bytes of strings compared. Sets *eq; returns 0
 * or JP_ERR_LIMIT.
 */
int jp_ev_equal(struct jp_ev *ev, const json_t *a, const json_t *b, bool *eq);

/* Evaluates node against cur (borrowed) into *out (new reference). */
int jp_ev_eval(struct jp_ev *ev, const struct jp_node *node, json_t *cur, json_t **out);

/*
 * A number as JMESPath/Go produce it: an integer when d is integral and fits
 * (Go prints float64 3 as "3"), else a real. NaN and infinities are not
 * representable in JSON: those return NULL.
 */
json_t *jp_number(double d);

/* JSON truthiness: false for null, false, "", [], {}. */
bool jp_truthy(const json_t *v);

/* "number", "string", ... (JMESPath type names). */
const char *jp_type_name(const json_t *v);

/*
 * A new string value from n bytes that may not be valid UTF-8: invalid
 * sequences become U+FFFD (what Go's JSON encoder does with them).
 */
json_t *jp_string_lossy(const char *s, size_t n);

/*
 * Go's strconv.FormatFloat(d, fmt, -1, bits): the shortest decimal text that
 * reads back as d. fmt 'f', 'e', 'g' as value_format_float (bits 64); 'j' is
 * encoding/json's choice (exponent form outside [1e-6, 1e21), "e-07" trimmed
 * to "e-7"). bits 32 first rounds d to a float32 and supports 'f' only (the
 * form Kyverno's ifaceToString uses for numbers).
 */
void jp_format_double(double d, char fmt, int bits, struct gv_buf *out);

/* Lexer tokens (jp_lexer.c) read by the parser (jp_parser.c). */
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
struct jp_expr {
	char *src;	      /* owned */
	struct jp_node *root; /* owned */
	bool kyverno;
	unsigned long max_steps;
};

/* Helpers shared between the JMESPath files. */
int jp_budget_fail(struct jp_ev *ev);

/* Bytes that the steps left may pay for, at a step per 16 bytes. */
size_t jp_bytes_left(const struct jp_ev *ev);

bool jp_is_number(const json_t *v);

int jp_num_cmp(const json_t *a, const json_t *b);

/*
 * Appends at most max bytes and max_values values (*values: how many were
 * written); false, out back to its length on entry, past either.
 */
bool jp_dump_bounded(const json_t *v, struct gv_buf *out, unsigned flags, size_t max,
		     size_t max_values, size_t *values);

const char *jp_tok_name(enum tok t);

int jp_syntax_error(struct parser *p, enum jp_error_kind kind, int pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

int jp_lex(struct parser *p);

/* Kyverno's functions override the standard ones of the same name (sum). */
const struct jp_func *jp_func_find(const char *name, bool kyverno);

#endif
