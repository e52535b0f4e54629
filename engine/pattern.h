/*
 * pattern.h - Kyverno's validate pattern language (kyverno-semantics.md
 * sections 3 and 4): maps, arrays, scalars, the string mini-language
 * (| & ! > < >= <= ranges, wildcards, quantities, durations), anchors
 * (k) =(k) ^(k) X(k) <(k), the presence table, metadata label/annotation
 * wildcard keys, and anyPattern aggregation.
 *
 * A pattern is compiled once (anchors and string operators parsed) and then
 * matched against many resources. Matching is pure and thread-safe.
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
 * (e.g. "/spec/containers/0/+(name)"). Returns NULL on error.
 * The pattern tree is borrowed during the call only.
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
 * "" when none), `msg` the error text (skip text for SKIP, the inner error for
 * FAIL/ERROR). Both owned; release with pattern_outcome_release().
 */
struct pattern_outcome {
	enum pattern_status status;
	char *path;
	char *msg;
};

/* Matches resource (may be NULL = absent) against p (section 3.1). */
void pattern_match(const struct pattern *p, const json_t *resource, struct pattern_outcome *out);

void pattern_outcome_release(struct pattern_outcome *o);

/*
 * Builds the rule message for a pattern outcome (section 3.11): rule is the
 * rule name, message the substituted validate.message or NULL.
 * Returns a new string; caller frees.
 */
char *pattern_message(const struct pattern_outcome *o, const char *rule, const char *message);

/*
 * anyPattern (section 4): tries each compiled pattern in order. Sets *status
 * to PASS/FAIL/SKIP and returns the full rule message (new string).
 */
char *pattern_any(struct pattern *const *pats, size_t n, const json_t *resource, const char *rule,
		  const char *message, enum pattern_status *status);

#endif
