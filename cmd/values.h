/*
 * values.h - the Kyverno CLI's values model (`kind: Values` files and the
 * inline `values` of a test) and `kind: UserInfo` files, and the engine
 * input and hooks built from them for one offline evaluation.
 *
 * Follows ../shared/conformance/TEST-FORMAT.md sections 4.1, 4.2 and 5.1:
 *
 *   globalValues              variables for every policy and resource
 *   policies[].resources[]    {name, values}: variables for one resource of
 *                             one policy, matched by resource name only
 *                             (every block naming the policy is used, in order)
 *   policies[].rules[]        {name, values, foreachValues}: variables for one
 *                             rule, added to its context before its context
 *                             entries; foreachValues maps a variable to a
 *                             list whose element i is used for foreach element i
 *   namespaceSelector[]       {name, labels}: namespace labels
 *   namespaces[]              Namespace objects (their labels win over
 *                             namespaceSelector)
 *   subresources[]            {subresource, parentResource}: APIResource pairs
 *                             mapping a manifest kind to parent kind + subresource
 *
 * Variable names are dotted paths ("request.operation", "cm.data.key"); a
 * segment may be double-quoted to hold dots
 * (`request.object.metadata.annotations."example.com/x"`). Precedence is
 * globalValues < per-resource < per-rule. The global and per-resource
 * variables also shape the request itself, as the Kyverno CLI does: they are
 * applied to {request: {object, oldObject}} and the objects are read back, so
 * `request.object.*` values change the evaluated object, and
 * `request.operation` (CREATE by default) picks the operation: UPDATE uses the
 * resource as both object and oldObject, DELETE has no object and the
 * resource as oldObject. Every number is a real, as in the Kyverno CLI.
 */
#ifndef GV_CMD_VALUES_H
#define GV_CMD_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine.h"

struct values {
	json_t *doc;	   /* owned: the Values document, numbers converted to reals */
	json_t *ns_labels; /* owned: namespace name -> labels object */
};

/*
 * Loads a Values file (`apiVersion: cli.kyverno.io/v1alpha1`, `kind:
 * Values`, or the legacy form without apiVersion/kind). On error returns
 * GV_EINVAL (or the read error) with err located in the file ("file:line:col",
 * JSON pointer). v must be zeroed or released before.
 */
enum gv_code values_load_file(struct values *v, const char *path, struct gv_err *err);

/* Same from an already parsed document (a test's inline `values`); doc is borrowed. */
enum gv_code values_load_json(struct values *v, const json_t *doc, struct gv_err *err);

/*
 * Sets labels of namespace ns (borrowed labels object; replaces earlier
 * ones). Used by `gavel apply --namespace-labels/--namespaces`. Works on a
 * zeroed struct values too.
 */
void values_set_namespace_labels(struct values *v, const char *ns, const json_t *labels);

void values_release(struct values *v);

/* Labels of namespace ns (borrowed), or NULL when unknown. v may be NULL. */
const json_t *values_namespace_labels(const struct values *v, const char *ns);

/*
 * New object of the variables for (policy, resource name): globalValues,
 * then every policies[name == policy].resources[name == resource].values.
 * Never NULL (an empty object when nothing applies). v may be NULL.
 */
json_t *values_for_resource(const struct values *v, const char *policy, const char *resource);

/* New object of policies[policy].rules[rule].values, or NULL when none. */
json_t *values_for_rule(const struct values *v, const char *policy, const char *rule);

/* New object of policies[policy].rules[rule].foreachValues, or NULL when none. */
json_t *values_foreach_for_rule(const struct values *v, const char *policy, const char *rule);

/*
 * Adds a variable to a JSON context the way Kyverno's AddVariable does:
 * the dotted name becomes nested objects and value is deep-merged in
 * (objects merge key by key, anything else replaces). ctx must be an
 * object the caller owns; value is borrowed (copied).
 */
void values_add_variable(json_t *ctx, const char *name, const json_t *value);

/* `kind: UserInfo` file (section 4.2). */
struct values_userinfo {
	json_t *doc;		 /* owned */
	const json_t *user_info; /* borrowed from doc: {username, uid, groups, extra}, never NULL */
	const json_t *roles;	 /* borrowed: array, never NULL */
	const json_t *cluster_roles; /* borrowed: array, never NULL */
};

/* Loads a UserInfo file (also the legacy form). u must be zeroed. */
enum gv_code values_userinfo_load_file(struct values_userinfo *u, const char *path,
				       struct gv_err *err);
void values_userinfo_release(struct values_userinfo *u);

/*
 * One evaluation of one resource against one policy, prepared as the
 * Kyverno CLI prepares it. After values_eval_init(), `in` is ready for
 * engine_evaluate(): it points into this struct (hooks, objects), so the
 * struct must stay where it is until values_eval_release().
 *
 * Hooks: rule_values returns the global + per-resource variables followed
 * by the rule's own values, as leaf assignments (an object value is split
 * into one dotted name per member, so assigning them one by one merges
 * objects as Kyverno's AddVariable does). The request.operation,
 * request.object* and request.oldObject* variables of the global and
 * per-resource values are left out: they are already applied to the input
 * (operation, object, old_object). foreach_values returns the rule's
 * foreachValues;
 * param_scope and params answer from param_sources (below);
 * load_context answers GV_ENOENT for every configMap, apiCall,
 * imageRegistry and globalReference entry (offline: not loaded, so a value
 * injected by rule_values stays).
 */
struct values_eval {
	struct engine_input in;
	struct engine_hooks hooks;
	const struct values *values; /* borrowed, may be NULL */
	char *policy;		     /* owned: policy name */
	json_t *vars;		     /* owned: global + per-resource variables */
	json_t *object;		     /* owned or NULL */
	json_t *old_object;	     /* owned or NULL */
	char operation[16];
	char subresource[128];
	/*
	 * borrowed, or NULL: a test's globalContextEntries, which answer
	 * globalReference context entries (set after values_eval_init)
	 */
	const json_t *global_entries;
	/*
	 * borrowed, or NULL: the objects a validate.cel paramRef reads
	 * offline, as the CLI's fake client holds them (a test's resources
	 * and paramResources; TEST-FORMAT.md 7.5), looked up by apiVersion,
	 * kind, namespace (namespaced kinds: "default" when unset) and name
	 * or label selector; the kind's scope from the built-in table. No
	 * sources: every named parameter is not found.
	 */
	const struct load_resources *param_sources[2];
};

/*
 * Prepares ev for `resource` (borrowed, must outlive ev) and the policy
 * named `policy`. `values` and `userinfo` may be NULL (no userinfo file:
 * the input carries no user info at all). `operation`, when non-NULL,
 * overrides the operation chosen by the values (a test entry's
 * `operation`). Returns GV_EINVAL for an operation that is not CREATE,
 * UPDATE, DELETE or CONNECT (ev is then released already).
 */
enum gv_code values_eval_init(struct values_eval *ev, const struct values *values,
			      const struct values_userinfo *userinfo, const char *policy,
			      const json_t *resource, const char *operation, struct gv_err *err);
void values_eval_release(struct values_eval *ev);

#endif
