/*
 * policy_int.h - internals shared by the files that compile policies:
 * policy.c (the policy document), policy_body.c (context entries and
 * validate bodies), policy_rule.c (rules), policy_autogen.c (rules for Pod
 * controllers, kyverno-semantics.md section 9), policy_checks.c (admission
 * checks, sections 1.8 and 7.1), policy_exception.c (PolicyExceptions) and
 * policy_set.c (policy sets). Not for use outside those files.
 */
#ifndef GV_ENGINE_POLICY_INT_H
#define GV_ENGINE_POLICY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine_int.h"

/* Longest policy and rule name (Kubernetes' 63-character label limit). */
#define MAX_NAME 63

/* What policy_scan_var found (ud of a variable walk). */
struct var_scan {
	char *first_bad; /* raw text of the first admission-only variable */
};

/* Field checks with the JSON pointer of the field in ptr (pushed, popped). */
/* Whether k is one of the NULL-terminated set. */
bool policy_in_set(const char *const *set, const char *k);

void policy_ptr_push(struct gv_buf *ptr, const char *seg);

void policy_ptr_pushi(struct gv_buf *ptr, size_t i);

void policy_ptr_pop(struct gv_buf *ptr, size_t base);

/* Fails on a key of obj that is not in known (NULL-terminated). */
enum gv_code policy_check_fields(const json_t *obj, const char *const *known, struct gv_buf *ptr,
				 struct gv_err *err);

/*
 * Checks the enumerated field obj.key against values (when present), with
 * the API server's message for a value outside a CRD enum. ptr is the
 * pointer of obj; the error's pointer is ptr + "/key".
 */
enum gv_code policy_check_enum(const json_t *obj, const char *key, const char *const *values,
			       const struct gv_buf *ptr, struct gv_err *err);

/* Checks that obj.key, when present, is a boolean (a string "false" is not). */
enum gv_code policy_check_bool(const json_t *obj, const char *key, const struct gv_buf *ptr,
			       struct gv_err *err);

/* Audit/Enforce in either case (Kyverno's CRD spellings). */
bool policy_parse_action(const json_t *v, enum engine_action *a);

/* validationFailureActionOverrides: compiled, released. */
void policy_overrides_release(struct override *o, size_t n);

enum gv_code policy_overrides_compile(const json_t *arr, struct override **out, size_t *n,
				      struct gv_buf *ptr, struct gv_err *err);

/* Variable walk callback recording admission-only variables (ud: struct var_scan). */
void policy_scan_var(const char *expr, const char *raw, void *ud);

/* Kyverno's path notation: spec/rules[0]/exclude/any[0]/clusterRoles. */
char *policy_userinfo_path(size_t rule, const char *block, const struct match_block *b);

/* All admission checks of one rule as written (not the autogen copies). */
enum gv_code policy_check_rule(const json_t *rj, const struct rule *r, bool background,
			       struct gv_buf *ptr, struct gv_err *err);

#endif
