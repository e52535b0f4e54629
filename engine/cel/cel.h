/*
 * cel.h - the Common Expression Language (CEL) as Kubernetes and Kyverno run
 * it: parser, values, evaluator and standard library.
 *
 * Behaviour: cel-semantics.md section 1 (language, errors, macros, standard
 * functions, cost limits); the grammar and value semantics of cel-spec's
 * doc/langdef.md. Pure: no I/O, no clock, no threads of its own; a compiled
 * program may be evaluated from several threads at once, each with its own
 * struct cel_eval.
 *
 * Life cycle:
 *
 *	struct cel_program *p = cel_compile(src, len, &perr);   // once
 *	struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
 *	cel_bind_json(ev, "object", doc);                        // borrowed
 *	cel_eval_run(ev, p, &result);                            // many times
 *	... use result (borrows from ev, p and doc) ...
 *	cel_eval_clear(ev);  (values only)  cel_eval_reset(ev);  or  cel_eval_free(ev);
 *	cel_program_free(p);
 *
 * Values produced by an evaluation live in the evaluation's arena: they stay
 * valid until cel_eval_reset() or cel_eval_free(), and may borrow strings
 * and JSON nodes from the program and the bound documents, which must
 * outlive them. JSON documents are never copied: a JSON object is a CEL map,
 * an array a list, an integral number an int (a double when it is outside
 * int64 or written with a fraction or exponent), other numbers doubles.
 *
 * Library (cel-semantics.md 1.7-1.9): the standard functions and macros
 * (two-variable comprehensions, sortBy, optMap, optFlatMap, cel.bind
 * included); the extensions strings v2, lists v3, sets, math, encoders and
 * optional types; the Kubernetes lists, regex (find, findAll), quantity
 * semver, URL, IP and CIDR libraries. Time zone arguments are "UTC", fixed
 * offsets ("+05:30") or IANA names, read from the system tz database
 * (/usr/share/zoneinfo, once per zone: the engine's only file access).
 * The Kubernetes format library and cel-go's regex extension (regex.replace,
 * extract, extractAll) are there; the authz library builds checks and
 * answers check() with an error (see cel_authorizer_value()). Patterns are
 * run by PCRE2: constructs RE2 lacks (backreferences, lookaround, atomic
 * groups, possessive quantifiers, recursion, \C \K \R \X) are refused as
 * invalid regexes, so a pattern means the same as in Kubernetes or fails.
 * An unknown function is a compile error (see CEL_COMPILE_NO_CHECK).
 *
 * Compile time (cel-semantics.md 1.10, 1.11): a type check with every
 * variable `dyn` (check.c) and a cost estimate (cost.c), see cel_compile().
 * Run time: the cost budget counts nodes, comprehension iterations, the
 * lists, maps and strings built, elements compared by == and in, and the
 * backtracking of regular expressions, so a hostile expression ends in the
 * fatal cost error (or the 64 MiB memory limit) instead of a hang.
 */
#ifndef GV_ENGINE_CEL_H
#define GV_ENGINE_CEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/gv.h"

enum cel_kind {
	CEL_NULL,
	CEL_BOOL,
	CEL_INT,
	CEL_UINT,
	CEL_DOUBLE,
	CEL_STRING, /* UTF-8, not NUL-terminated (v.s) */
	CEL_BYTES,  /* v.s */
	CEL_LIST,
	CEL_MAP,
	CEL_TIMESTAMP, /* v.ts: seconds since the Unix epoch and nanoseconds 0..999999999 */
	CEL_DURATION,  /* v.dur: nanoseconds */
	CEL_TYPE,      /* v.type: the type's CEL name ("int", "google.protobuf.Timestamp") */
	CEL_OPTIONAL,  /* v.opt: the value, NULL for optional.none() */
	CEL_OPAQUE,    /* v.obj: a library type (net.IP, net.CIDR) */
	CEL_ERROR      /* v.err */
};

/*
 * A library type held opaquely: its CEL type name, the function that makes
 * one from text (for CEL text output), its text form (output; string(x)
 * when `stringable`), and equality of two values of the type.
 */
struct cel_opaque_type {
	const char *name; /* "net.IP" */
	const char *ctor; /* "ip" */
	bool stringable;  /* string(x) is defined (IP, CIDR) */
	void (*text)(const void *data, struct gv_buf *out);
	bool (*equal)(const void *a, const void *b);
};

struct cel_list;
struct cel_map;

/* An evaluation error: a value that propagates until absorbed. */
struct cel_error {
	const char *msg; /* e.g. "no such key: foo", "division by zero" */
	int pos;	 /* byte offset in the expression, -1 = unknown */
	bool fatal;	 /* cost/memory limit: never absorbed by && || or macros */
};

struct cel_value {
	uint8_t kind; /* enum cel_kind */
	uint8_t json; /* list/map: v.json holds the borrowed json_t */
	union {
		bool b;
		int64_t i;
		uint64_t u;
		double d;
		struct {
			const char *p;
			size_t n;
		} s;
		const struct cel_list *list;
		const struct cel_map *map;
		const json_t *json;
		struct {
			int64_t sec;
			int32_t nsec;
		} ts;
		int64_t dur;
		const char *type;
		const struct cel_value *opt;
		const struct cel_error *err;
		struct {
			const struct cel_opaque_type *type;
			const void *data;
		} obj;
	} v;
};

/* Kubernetes' per-expression runtime cost limit (cel-semantics.md 1.11). */
#define CEL_DEFAULT_COST_LIMIT 1000000
/* Longest expression accepted, in bytes (cel-go's default code point limit). */
#define CEL_MAX_EXPR_BYTES 100000
/* Deepest expression nesting accepted (cel-go's parser recursion limit). */
#define CEL_MAX_DEPTH 250

/* A parse (compile) error. */
struct cel_parse_error {
	char msg[256];	 /* "Syntax error: mismatched input ')'" ... */
	int line, col;	 /* 1-based; col counts code points */
	char caret[512]; /* the offending source line and a caret line under it */
};

struct cel_program;
struct cel_eval;

/*
 * Compile flags. CEL_COMPILE_NO_CHECK: an unknown function or a call with a
 * wrong number of arguments is an error of the evaluation instead of the
 * compilation (cel-go with type checking disabled; cel-spec's disable_check).
 */
#define CEL_COMPILE_NO_CHECK 1u
/*
 * CEL_COMPILE_DYN_LITERALS: list and map literals mixing element types are
 * list(dyn)/map(.., dyn) (cel-go's default environment, the cel-spec suite)
 * instead of a compile error (Kubernetes' HomogeneousAggregateLiterals).
 */
#define CEL_COMPILE_DYN_LITERALS 2u
/*
 * CEL_COMPILE_NO_COST: no compile-time cost check (to exercise the runtime
 * budget with expressions the estimate would refuse).
 */
#define CEL_COMPILE_NO_COST 4u
/*
 * CEL_COMPILE_NO_TYPES: no type check (unknown functions and arities stay
 * compile errors): every operand is dynamic, wrong types are errors of the
 * evaluation ("no such overload"), as in a program whose inputs are all dyn.
 */
#define CEL_COMPILE_NO_TYPES 8u

/*
 * Parses expression src (len bytes, need not be NUL-terminated) into a
 * program. Unknown functions and wrong arities (unless CEL_COMPILE_NO_CHECK),
 * malformed macros, reserved identifiers, message literals (gavel has no
 * protobuf types) and the size and depth limits are errors.
 *
 * Unless CEL_COMPILE_NO_CHECK, the program is type checked as Kubernetes
 * does at compile time (cel-semantics.md 1.10, engine/cel/check.c): every
 * variable is `dyn`, so only what is wrong whatever the bound documents are
 * is refused, with cel-go's messages: operators and functions whose
 * argument types are known and match no overload ("found no matching
 * overload for '_+_' applied to '(int, string)'", `size(1)`,
 * `"a".startsWith(1)`, `1 && true`, `1 ? 2 : 3`, `true ? 1 : "a"`,
 * `1 == 1.0`), field selection on a value that is not a map, a comprehension
 * over a value that is neither list nor map, mixed list/map literals (see
 * CEL_COMPILE_DYN_LITERALS).
 *
 * Unless CEL_COMPILE_NO_CHECK or CEL_COMPILE_NO_COST, an expression whose
 * estimated cost (cel_program_cost) is certain to exceed
 * CEL_DEFAULT_COST_LIMIT is refused: "estimated cost exceeds budget". Returns NULL and
 * fills *err (may be NULL) on error. Free with cel_program_free().
 */
struct cel_program *cel_compile(const char *src, size_t len, unsigned flags,
				struct cel_parse_error *err);
void cel_program_free(struct cel_program *p);
/*
 * Declarations of an environment beyond cel_compile()'s, where every
 * variable is `dyn` (Kubernetes' composition of policy variables,
 * cel-semantics.md 1.10). With typed_variables, `variables` has exactly the
 * fields var_names, of the types var_types (cel_program_type() texts of the
 * variables' own programs, or "?" for a type the check does not know, see
 * cel_program_type_known()): variables.<name> has that type, and another
 * name is the compile error "undefined field '<name>'" (a variable used
 * before its definition, or by itself). Reading an identifier of
 * `undeclared` (not shadowed by a macro variable) is the compile error
 * "undeclared reference to '<name>' (in container '')". All borrowed for the
 * call only.
 */
struct cel_decls {
	bool typed_variables;
	const char *const *var_names;
	const char *const *var_types;
	size_t nvars;
	const char *const *undeclared;
	size_t nundeclared;
};
/* cel_compile() in the environment of d (NULL: cel_compile()). */
struct cel_program *cel_compile_decls(const char *src, size_t len, unsigned flags,
				      const struct cel_decls *d, struct cel_parse_error *err);
/*
 * Whether the static type of p's result is what cel-go deduces: false when
 * it is `dyn` only because it comes from a library function whose
 * overloads the check does not list (cel-go may know it is, say, bool).
 */
bool cel_program_type_known(const struct cel_program *p);

/*
 * The static type of p's result as cel-go names it ("bool", "list(int)",
 * "map(string, dyn)", "optional_type(int)", "null_type"); "dyn" when not
 * known or not checked. Owned by p.
 */
const char *cel_program_type(const struct cel_program *p);

/*
 * Compile-time cost estimate of p in runtime cost units (cel-semantics.md
 * 1.11, engine/cel/cost.c): *min is a lower bound of what any evaluation is
 * charged (sizes known from the expression itself: literals,
 * lists.range(N), what macros and concatenation build from them); *max the
 * worst case with every value of unknown size bounded by Kubernetes' largest
 * request (3 MiB), saturating at UINT64_MAX. Kyverno estimates nothing;
 * cel_compile refuses only a *min over the limit, which no evaluation can
 * finish.
 */
void cel_program_cost(const struct cel_program *p, uint64_t *min, uint64_t *max);

/* The source text of p (NUL-terminated, owned by p). */
const char *cel_program_source(const struct cel_program *p);

/*
 * 1-based line and column (in code points) of byte offset pos in p's source;
 * both 0 when pos < 0.
 */
void cel_program_position(const struct cel_program *p, int pos, int *line, int *col);

/* A new evaluation context with a runtime cost budget (0 = no limit). */
struct cel_eval *cel_eval_new(uint64_t cost_limit);
void cel_eval_free(struct cel_eval *ev);

/* Frees every value the context made and forgets its variables. */
void cel_eval_reset(struct cel_eval *ev);

/*
 * Frees every value the context made (keeping some memory for the next
 * run) but keeps the variables: those bound to documents stay valid; a
 * variable bound to a value that an evaluation in this context made must
 * be bound again before use.
 */
void cel_eval_clear(struct cel_eval *ev);

/*
 * Binds variable name (copied) to a JSON document (borrowed, not copied;
 * must outlive the evaluations) or to a value (copied shallowly; anything it
 * points to must outlive the evaluations). A later binding of the same name
 * replaces an earlier one.
 */
void cel_bind_json(struct cel_eval *ev, const char *name, const json_t *doc);
void cel_bind_value(struct cel_eval *ev, const char *name, const struct cel_value *v);

/*
 * Binds variable name to a map from keys (borrowed, NUL-terminated; must
 * outlive the evaluations) to values (copied shallowly), made in ev's arena:
 * valid until cel_eval_clear() or cel_eval_reset(). Values may be errors,
 * which then propagate only where read (Kubernetes' `variables`).
 */
void cel_bind_map(struct cel_eval *ev, const char *name, const char *const *keys,
		  const struct cel_value *vals, size_t n);

/*
 * Kyverno's CEL library calls answered by the embedder (cel-semantics.md
 * section 6): resource.Get/List, image.GetMetadata, globalContext.Get,
 * http.Get/Post (PascalCase and camelCase). `call` gets the function name
 * and its arguments as a JSON array and returns the result (borrowed: it
 * must stay valid until the evaluation's values are cleared), or NULL with
 * the error text in err. Without a host these calls are errors.
 */
struct cel_host {
	const json_t *(*call)(void *ud, const char *fn, const json_t *args, char *err,
			      size_t errlen);
	void *ud;
};

/* Binds a host (borrowed, NULL = none) for the following runs. */
void cel_eval_set_host(struct cel_eval *ev, const struct cel_host *h);

/*
 * Evaluates p. *out is the result, which may be an error value (kind
 * CEL_ERROR) such as "no such key" or the fatal "operation cancelled: actual
 * cost limit exceeded". The cost limit applies to each run. Values stay
 * in the context until cel_eval_clear() or cel_eval_reset(), and a context
 * refuses to hold more than 64 MiB ("memory limit exceeded"): clear it
 * between runs. Returns the cost spent.
 */
uint64_t cel_eval_run(struct cel_eval *ev, const struct cel_program *p, struct cel_value *out);

/*
 * JSON of a value (new reference): null, bools, numbers (uint as integer
 * when it fits, doubles; NaN and infinities as the strings "NaN",
 * "Infinity", "-Infinity"), strings, bytes as base64 strings, lists,
 * maps (keys as strings), timestamps as RFC 3339 text, durations as
 * seconds text ("1.5s"), types as their name, optionals as their value or
 * null. Returns NULL for an error value.
 */
json_t *cel_value_to_json(const struct cel_value *v);

/*
 * CEL-syntax text of v (1u, 2.0, b"\x01", [1, 2], {"a": 1},
 * timestamp("..."), duration("..."), optional.of(1)) appended to out.
 */
void cel_value_format(const struct cel_value *v, struct gv_buf *out);

/*
 * Strict equality for tests: same kinds (int 1 differs from uint 1 and 1.0),
 * NaN equals NaN, lists element by element, maps by key set and values.
 */
bool cel_value_identical(const struct cel_value *a, const struct cel_value *b);

/*
 * The value to bind as `authorizer` where Kubernetes declares it (VAP and
 * validate.cel): checks can be built on it, and check(verb) calls the
 * host's "authorizer.check" with one argument, the check as an object
 * {group, resource, subresource, namespace, name | path, saNamespace,
 * saName (serviceAccount(ns, name)), verb}, expecting a
 * SubjectAccessReview status {allowed, reason, evaluationError} back (a
 * Decision: allowed(), reason(), errored(), error()). Without a host, or
 * with field/label selectors, check(verb) is an evaluation error, since
 * only the API server's authorizer can answer (cel-semantics.md 1.9).
 * Static; nothing to free.
 */
struct cel_value cel_authorizer_value(void);

/* Calls fn once per function name of the library (for `gavel cel functions`). */
void cel_list_functions(void (*fn)(const char *name, void *ud), void *ud);

#endif
