/*
 * pattern.h - Kyverno's validate pattern language (kyverno-semantics.md
 * sections 3 and 4): maps, arrays, scalars, the string mini-language
 * (| & ! > < >= <= ranges, wildcards, quantities, durations), anchors
 * (k) =(k) ^(k) X(k) <(k), the presence table, metadata label/annotation
 * wildcard keys, and anyPattern aggregation.
 *
 * A pattern is compiled once (anchors and string operators parsed) and then
 * matched against many resources. Matching is pure and thread-safe, and
 * allocates nothing when the resource passes; for any other outcome the
 * match is run a second time to build the path and message texts.
 *
 * Choices where kyverno-semantics.md leaves room:
 * - several skip texts aggregated into one (all elements of a list, or all
 *   anchors of a map, skipped) are joined with "; ";
 * - the presence table (3.8.7) turns a failure into ERROR only for (k) and
 *   ^(k) keys that were never present; X(k) keys never do;
 * - a wildcard label/annotation key (3.9) takes the first matching resource
 *   key in the resource object's order, keeps its anchor wrapper, and keys
 *   are processed in the order of their new names.
 */
#ifndef GV_ENGINE_PATTERN_H
#define GV_ENGINE_PATTERN_H

#include <jansson.h>

#include "common/gv.h"

struct pattern; /* compiled, immutable */

/*
 * Compiles a pattern tree. Rejects anchors Kyverno rejects in validate
 * patterns ("+()" and malformed ones) and an existence anchor whose value is
 * not a non-empty list, with err->pointer set relative to the pattern root
 * (e.g. "/spec/containers/0/+(name)", RFC 6901 escaping) and Kyverno's
 * message ("unsupported anchor +(name)", "existence anchor should have value
 * of type list", "existence anchor: should have atleast one value"), code
 * GV_EINVAL; a pattern nested deeper than 256 levels gives GV_ELIMIT.
 * Returns NULL on error. The pattern tree is borrowed during the call only.
 */
struct pattern *pattern_compile(const json_t *tree, struct gv_err *err);

void pattern_free(struct pattern *p);

enum pattern_status {
	PATTERN_PASS,
	PATTERN_FAIL,  /* mismatch; `path` holds the failing path */
	PATTERN_SKIP,  /* conditional / global anchors not satisfied */
	PATTERN_ERROR, /* presence-table or empty-path failure (section 3.8.7) */
};

/*
 * Outcome of one match. `path` is Kyverno's path ("/spec/containers/0/image/",
 * "" when none: always "" for PASS, SKIP and ERROR), `msg` the error text
 * (skip text for SKIP, the inner error for FAIL/ERROR, "" for PASS). Never
 * NULL; owned by the outcome (on PASS they point to a shared static "" and
 * nothing is allocated). Release with pattern_outcome_release(), which is
 * also safe on a zero-initialised outcome.
 */
struct pattern_outcome {
	enum pattern_status status;
	char *path;
	char *msg;
};

/*
 * Matches resource (may be NULL = absent) against p (section 3.1). The
 * work is bounded: a step per value visited and per 16 code points a
 * wildcard compares, at most 1,000,000 steps, past which the status is
 * PATTERN_ERROR (engine_int.h's pattern_match_budget charges a rule's
 * budget instead).
 */
void pattern_match(const struct pattern *p, const json_t *resource, struct pattern_outcome *out);

void pattern_outcome_release(struct pattern_outcome *o);

/*
 * Builds the rule message for a pattern outcome (section 3.11): rule is the
 * rule name, message the substituted validate.message or NULL ("" counts as
 * no message; otherwise a '.' is appended unless it ends with one).
 * Returns a new string; caller frees.
 */
char *pattern_message(const struct pattern_outcome *o, const char *rule, const char *message);

/*
 * anyPattern (section 4): tries each compiled pattern in order. Sets *status
 * to PASS/FAIL/SKIP and returns the full rule message (new string). A
 * pattern whose outcome is ERROR counts as a failure ("rule r[i] failed:
 * <err>"). With n == 0 the status is PASS and the message is `message` as
 * given ("" when NULL).
 */
char *pattern_any(struct pattern *const *pats, size_t n, const json_t *resource, const char *rule,
		  const char *message, enum pattern_status *status);

#endif
