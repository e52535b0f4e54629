/*
 * jmespath.h - JMESPath (https://jmespath.org/specification.html) with
 * Kyverno's dialect and custom functions (kyverno-semantics.md sections 6.3
 * and 6.4).
 *
 * An expression is compiled once and evaluated many times; evaluation is
 * pure and thread-safe. Numbers in results follow the input: integers stay
 * integers where the spec allows (jansson integer), arithmetic results are
 * reals unless integral (then integers); callers compare numbers by value.
 */
#ifndef GV_ENGINE_JMESPATH_H
#define GV_ENGINE_JMESPATH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"

/* Error kinds, named as the JMESPath compliance suite names them. */
enum jp_error_kind {
	JP_ERR_NONE = 0,
	JP_ERR_SYNTAX,
	JP_ERR_INVALID_ARITY,
	JP_ERR_INVALID_TYPE,
	JP_ERR_INVALID_VALUE,
	JP_ERR_UNKNOWN_FUNCTION,
	JP_ERR_UNKNOWN_KEY, /* Kyverno dialect: missing map key (section 6.3) */
	JP_ERR_LIMIT,	    /* step budget or depth exceeded */
	JP_ERR_RUNTIME,	    /* any other function failure (bad regex, bad base64, ...) */
};

/*
 * Which kind a function failure gets: an argument of the wrong JSON type,
 * or operands of kinds that do not go together (quantity + duration), is
 * JP_ERR_INVALID_TYPE; a value of the right type that the function refuses
 * (zero divisor, non-integer modulo, to_boolean("maybe"), a negative
 * precision, a zero slice step) is JP_ERR_INVALID_VALUE; content that fails
 * to parse (regex, base64, JSON, YAML, time, duration, certificate, semver
 * range, image reference) is JP_ERR_RUNTIME. Kyverno's own messages are
 * used where they leak into policy results ("JMESPath function 'divide':
 * Zero divisor passed").
 */

/* Returns the compliance-suite name of a kind: "syntax", "invalid-type", ... */
const char *jp_error_kind_name(enum jp_error_kind kind);

struct jp_error {
	enum jp_error_kind kind;
	char msg[512]; /* e.g. "Unknown key \"labels\" in path" */
	int pos;       /* byte offset in the expression for syntax errors, else -1 */
};

struct jp_expr; /* compiled, immutable */

/*
 * Options. kyverno: missing map keys raise JP_ERR_UNKNOWN_KEY where Kyverno's
 * fork does (absorbed by ||, comparators, function arguments, filters,
 * projections, pipes, multiselects, !, &&), and Kyverno's custom functions
 * are available. Without it, plain JMESPath (missing key = null, standard
 * functions only).
 */
struct jp_options {
	bool kyverno;
	unsigned long max_steps; /* evaluation step budget; 0 = default (1,000,000) */
};

/*
 * Compiles src. Unknown function names are syntax-time errors
 * (JP_ERR_UNKNOWN_FUNCTION); so is a wrong argument count for a known
 * function (JP_ERR_INVALID_ARITY), and a zero slice step
 * (JP_ERR_INVALID_VALUE). Syntax errors set e->pos to the byte offset of the
 * offending token and end e->msg with "at position N". Bounds: source up to
 * 1 MiB, nesting up to 256 levels (parentheses, operators, pipes), else
 * JP_ERR_LIMIT. Regular expressions given as literals are compiled here.
 * Returns NULL and fills *e (may be NULL) on error; opt may be NULL (plain
 * JMESPath, default budget).
 */
struct jp_expr *jp_compile(const char *src, const struct jp_options *opt, struct jp_error *e);

void jp_free(struct jp_expr *x);

/* The source text the expression was compiled from (owned by x). */
const char *jp_source(const struct jp_expr *x);

/*
 * Evaluates x against data (borrowed, never modified; NULL is null).
 * Returns a new reference (json null for a null result; values taken from
 * data are shared, not copied), or NULL with *e filled on error (e->pos is
 * -1).
 *
 * Bounds, all JP_ERR_LIMIT. Every node visited and every element a
 * projection, flatten, sort, comparison or function walks costs a step;
 * strings built, serialised (to_string) or compared cost a step per 16
 * bytes; regular expressions cost a step per 8 backtracking steps (PCRE2's
 * match limit count), paid for in advance; past opt->max_steps evaluation
 * stops with "evaluation step budget (N) exceeded". Evaluation also stops
 * past 512 nested evaluations, and a regular expression call past 1,000,000
 * backtracking steps ("regular expression match limit exceeded"). Values
 * are shared, so `[@,@]` repeated n times builds 2^n logical elements in n
 * steps: a result holding more than JP_MAX_RESULT_VALUES values, counting a
 * shared part each time it appears, is refused ("result holds more than N
 * values"), so that callers may walk any result they get.
 *
 * Kyverno functions follow Kyverno's Go code (functions.go, arithmetic.go,
 * time.go) with these limits: regular expressions run on PCRE2 (Go RE2
 * syntax in practice); to_upper/to_lower/equal_fold know ASCII, Latin,
 * Greek, Cyrillic, Armenian and fullwidth letters; random() supports
 * literals, escapes, ".", classes, groups with |, and * + ? {n,m}
 * (unbounded repeats stop at 10 more), up to 4096 characters;
 * is_external_url() does no DNS lookup (IP literals by range; localhost,
 * *.local, *.svc, *.cluster.local and dot-less names are internal);
 * x509_decode() fills the x509.Certificate fields policies use (names,
 * validity, keys with an RSA modulus as a decimal string, extensions, SANs,
 * key usages, basic constraints), name constraints are null; time_now()
 * reports UTC.
 */
json_t *jp_eval(const struct jp_expr *x, const json_t *data, struct jp_error *e);

/*
 * A step budget shared by several evaluations (jp_eval_budget), such as all
 * the variables of one substitution: each evaluation may use at most its
 * own budget (jp_options.max_steps) and at most what the earlier ones left.
 */
struct jp_budget {
	unsigned long max;  /* steps for all the evaluations; 0 = 1,000,000 */
	unsigned long used; /* steps used so far; each evaluation adds its own */
};

/*
 * jp_eval charging budget b (not NULL) as well: when what the earlier
 * evaluations left runs out first, the error is "shared evaluation step
 * budget (N) exceeded". Failed evaluations count the steps they used.
 */
json_t *jp_eval_budget(const struct jp_expr *x, const json_t *data, struct jp_budget *b,
		       struct jp_error *e);

/*
 * The outside world a few Kyverno functions read: time_now(),
 * time_now_utc() and time_since() with one time argument read the clock,
 * random() the random source. The engine has no clock of its own: the
 * program (cmd/, the servers) passes common/clock.h's gv_clock_now and
 * gv_random_u32, a test a fixed clock. Both callbacks are required; ud is
 * passed through.
 */
struct jp_env {
	void *ud;
	void (*now)(void *ud, struct timespec *ts); /* UTC, since the Unix epoch */
	uint32_t (*random)(void *ud);		    /* uniformly random */
};

/*
 * jp_eval_budget with the clock and random source of env (borrowed). b may
 * be NULL (no shared budget); env NULL means common/clock.h's real ones
 * (what jp_eval and jp_eval_budget use).
 */
json_t *jp_eval_env(const struct jp_expr *x, const json_t *data, struct jp_budget *b,
		    const struct jp_env *env, struct jp_error *e);

/* Most values (a shared part counted each time it appears) in a result. */
#define JP_MAX_RESULT_VALUES (1ul << 22)

/* Convenience: compile + eval + free. */
json_t *jp_search(const char *src, const json_t *data, const struct jp_options *opt,
		  struct jp_error *e);

/*
 * JMESPath equality: numbers by value (1 == 1.0, integer or real), strings
 * byte-wise, arrays element-wise, objects key-wise regardless of order.
 * Both borrowed; NULL equals nothing. Unbounded: the time is that of a walk
 * of both values (expressions compare within their step budget).
 */
bool jp_equal(const json_t *a, const json_t *b);

/* Flags for jp_dump. */
#define JP_DUMP_SORT_KEYS   0x1u /* object keys in byte order, as Go's encoding/json */
#define JP_DUMP_HTML_ESCAPE 0x2u /* <, >, & as \u003c..., as Go's json.Marshal */

/*
 * Appends v (borrowed) to out as compact one-line JSON. Numbers: integers in
 * decimal; reals in the shortest form that reads back exactly, with an
 * exponent only outside [1e-6, 1e21) (Go's encoding/json: 1.2, 100, 1e+21).
 * Strings escape ", \, control characters, and U+2028/U+2029.
 */
void jp_dump(const json_t *v, struct gv_buf *out, unsigned flags);

/*
 * jp_dump appending at most max bytes: returns false, with out back to its
 * length on entry, when the text of v is longer. The work is proportional
 * to max whatever the size of v (shared parts of a value are written, and
 * walked, once per appearance).
 */
bool jp_dump_max(const json_t *v, struct gv_buf *out, unsigned flags, size_t max);

/*
 * Calls fn(name, signature, ud) for each available function, in name order
 * (signature like "contains(array|string, any) -> boolean").
 */
void jp_list_functions(bool kyverno, void (*fn)(const char *name, const char *signature, void *ud),
		       void *ud);

#endif
