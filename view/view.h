/*
 * view.h - what the admission webhook and the background reconciler share
 * about the cluster, so that neither includes the other:
 *
 *   view_config        the gavel ConfigMap's admission settings, compiled
 *                      (resourceFilters, excludeUsernames, excludeGroups)
 *   view_state         an immutable, refcounted view of the cluster: the
 *                      policy set, namespace labels, the config
 *   view_roles_source  request.roles and request.clusterRoles of a user
 *                      (background/rbac.h in cluster mode)
 *   view_context       the loaders of context entries that read the cluster
 *                      (background/context.h in cluster mode)
 *   view_audit_item    one admission request's results that go into
 *                      PolicyReports: made by the admission handler, handed
 *                      to its emit callback (cmd/serve.c queues them for the
 *                      report writer of background/audit_queue.h)
 *
 * Modules: cmd -> admission, background -> view -> engine -> common.
 * Threads: everything here may be called from any thread.
 */
#ifndef GV_VIEW_VIEW_H
#define GV_VIEW_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine.h"
#include "engine/vpolicy.h"

/* ---- configuration: the gavel ConfigMap ---- */

/*
 * Compiled admission settings from the `data` of gavel's ConfigMap (all
 * values strings, as in Kyverno's `kyverno` ConfigMap):
 *
 *   resourceFilters   "[Kind,Namespace,Name][...]": requests matching an
 *                     entry are allowed without evaluation. Kind is `Kind`,
 *                     `Kind/subresource`, `version/Kind`, `group/version/Kind`
 *                     or `group/version/Kind/subresource`; `*` and `?`
 *                     wildcards everywhere; a Kind without a subresource
 *                     matches only requests without one, and `*` slash `*`
 *                     matches every kind and subresource; a missing
 *                     Namespace or Name means `*`. An entry whose Kind
 *                     matches Namespace also filters the Namespace objects
 *                     named by its Namespace part (`[*,kube-system,*]`
 *                     filters the kube-system Namespace itself), as Kyverno.
 *   excludeUsernames  comma-separated usernames (wildcards) whose requests
 *   excludeGroups     (or groups) are allowed without evaluation.
 *
 * Unknown keys are ignored (the reconciler reads its own keys from the same
 * ConfigMap). Refcounted and immutable.
 */
struct view_config;

/*
 * Compiles data (an object of strings, borrowed; NULL = no filters).
 * Malformed entries are skipped with a warning in the log. Never fails.
 * Returns a config with refcount 1.
 */
struct view_config *view_config_new(const json_t *data);
struct view_config *view_config_ref(struct view_config *c);
void view_config_unref(struct view_config *c);

/*
 * Whether a request for this kind (request.kind group/version/kind, the
 * subresource or "" ), namespace ("" for cluster-scoped) and name is
 * filtered out by resourceFilters. NULL strings count as "".
 */
bool view_config_filtered(const struct view_config *c, const char *group, const char *version,
			  const char *kind, const char *subresource, const char *namespace,
			  const char *name);

/* Whether the user (request.userInfo, borrowed) is excluded by username or group. */
bool view_config_user_excluded(const struct view_config *c, const json_t *user_info);

/* ---- state ---- */

/*
 * What one request is judged against: a policy set, the labels of every
 * namespace, and the config. Immutable once made; refcounted (atomic), so
 * a writer builds a new state and swaps a pointer while readers keep the
 * old one for as long as their request lasts.
 */
struct view_state;

/*
 * Makes a state. set: a reference is taken (the caller keeps its own).
 * namespaces: an object {namespace name: labels object}, a reference is
 * taken; NULL = no namespace labels known. config: a reference is taken;
 * NULL = an empty config. Returns refcount 1.
 */
struct view_state *view_state_new(struct engine_policyset *set, json_t *namespaces,
				  struct view_config *config);
struct view_state *view_state_ref(struct view_state *s);
void view_state_unref(struct view_state *s);

/* Accessors; results are borrowed from the state. */
struct engine_policyset *view_state_policyset(const struct view_state *s);
/* Labels object of namespace ns, or NULL when unknown. */
const json_t *view_state_namespace_labels(const struct view_state *s, const char *ns);
const struct view_config *view_state_config(const struct view_state *s);
/* The {namespace name: labels} object (borrowed), or NULL when none is known. */
const json_t *view_state_namespaces(const struct view_state *s);

/*
 * Where the handler gets an admission request's `request.roles` and
 * `request.clusterRoles` (kyverno-semantics.md sections 2.2 and 6.5): the
 * RBAC bindings cache of background/rbac.h in cluster mode.
 *
 * lookup(ud, user_info, namespace, &roles, &cluster_roles, err): user_info
 * is request.userInfo (borrowed, may be NULL), namespace the request's (""
 * when cluster-scoped). GV_OK with two new arrays of strings (the caller
 * decrefs); any other code with err set when they cannot be computed (not
 * listed yet): the request is then answered 503, never judged without them.
 * ready(ud): whether lookup can answer (for /readyz). Called from worker
 * threads; must not call the API server.
 */
struct view_roles_source {
	enum gv_code (*lookup)(void *ud, const json_t *user_info, const char *namespace,
			       json_t **roles, json_t **cluster_roles, struct gv_err *err);
	bool (*ready)(void *ud);
	void *ud;
};

/* ---- CEL policies (view/vpol.c) ---- */

/*
 * The compiled policies.kyverno.io ValidatingPolicy and
 * NamespacedValidatingPolicy documents of a view and its CEL
 * PolicyExceptions (engine/vpolicy.h; cel-semantics.md sections 2 and 3).
 * Refcounted (atomic) and immutable.
 */
struct view_vpolset;

/*
 * Compiles policies and exceptions (arrays of documents with apiVersion
 * and kind, borrowed; NULL = none). A document that does not compile is
 * left out, logged with its name, JSON pointer and the compiler's message,
 * and listed by view_vpolset_errors(); the others are unaffected. Never
 * fails. Returns refcount 1.
 */
struct view_vpolset *view_vpolset_new(const json_t *policies, const json_t *exceptions);
struct view_vpolset *view_vpolset_ref(struct view_vpolset *s);
void view_vpolset_unref(struct view_vpolset *s);
/* Accessors (NULL s = empty); results borrowed from s. */
size_t view_vpolset_count(const struct view_vpolset *s);
const struct vpol_policy *view_vpolset_policy(const struct view_vpolset *s, size_t i);
struct vpol_exception *const *view_vpolset_exceptions(const struct view_vpolset *s, size_t *n);
/*
 * The exceptions in force at `now` (Unix seconds): those without
 * spec.expiresAt or expiring later (cel-semantics.md section 3; one whose
 * expiresAt cannot be read is never in force). out has room for every
 * exception (view_vpolset_exceptions' n); returns how many were written.
 */
size_t view_vpolset_exceptions_at(const struct view_vpolset *s, int64_t now,
				  struct vpol_exception **out);
/*
 * The documents (borrowed from s) of the exceptions in force at `now`, in
 * the order of view_vpolset_exceptions_at(); out has room for every
 * exception. Returns how many were written.
 */
size_t view_vpolset_exception_docs_at(const struct view_vpolset *s, int64_t now,
				      const json_t **out);
/*
 * The ValidatingAdmissionPolicyBinding documents of the set (the
 * ValidatingAdmissionPolicies themselves are among its policies,
 * vpol_kind() VPOL_VAP: background scans only). set_bindings (before s is
 * shared) keeps the binding documents of `bindings` (borrowed array);
 * bindings returns them (borrowed), *n of them.
 */
void view_vpolset_set_bindings(struct view_vpolset *s, const json_t *bindings);
const json_t *const *view_vpolset_bindings(const struct view_vpolset *s, size_t *n);
/* [{kind, namespace, name, pointer, message}] of the documents left out. */
const json_t *view_vpolset_errors(const struct view_vpolset *s);

/* validationActions of a ValidatingPolicy (cel-semantics.md 2.6); [] or absent = Deny. */
#define VIEW_VPOL_DENY	1u
#define VIEW_VPOL_WARN	2u
#define VIEW_VPOL_AUDIT 4u
unsigned view_vpol_actions(const struct vpol_policy *p);
/* evaluation.admission.enabled / evaluation.background.enabled (default true). */
bool view_vpol_admission(const struct vpol_policy *p);
bool view_vpol_background(const struct vpol_policy *p);
/* spec.failurePolicy: Ignore, else Fail (the default). */
enum engine_failure_policy view_vpol_failure_policy(const struct vpol_policy *p);

/*
 * Attaches the CEL policies to a state that is not yet shared (a reference
 * is taken; replaces any earlier set). States made without them have none.
 */
void view_state_set_vpols(struct view_state *st, struct view_vpolset *v);
/* The CEL policies of a state (borrowed), or NULL when none. */
struct view_vpolset *view_state_vpols(const struct view_state *s);

/* ---- audit results ---- */

/*
 * The admission results that the reporting matrix sends to PolicyReports
 * (engine_decide(...).reported: Audit rules; DESIGN.md "Reporting
 * matrix"), and those of Enforce rules (`enforce`) for the resource layout. The handler pushes one
 * item per allowed admission request that has such results; the report writer of the background
 * reconciler drains them and merges them into the reports of the resource's namespace.
 *
 * Not queued (kyverno-semantics.md section 7.3): denied requests (nothing
 * is persisted), DELETE, dryRun, objects without metadata.uid, requests
 * allowed without evaluation (filters, gavel's own namespace).
 */
struct view_audit_result {
	struct engine_policy *policy; /* owned reference: name, namespace, annotations
					 (severity, category, scored) for the report entry;
					 NULL for a CEL policy's result (vpol below) */
	char *rule;		      /* owned */
	enum engine_status status;
	char *message;	    /* owned */
	bool exception;	    /* skipped because of a PolicyException */
	char *exceptions;   /* owned: their names, "a,b" (engine_rule_result), or NULL */
	json_t *properties; /* owned reference: engine_rule_result.properties, or NULL */
	/*
	 * The result of an Enforce rule of the allowed request: Kyverno
	 * reports it (kyverno-semantics.md 7.3: passing and non-blocking
	 * results), gavel's namespace and split layouts do not (DESIGN.md
	 * "Reporting matrix"); the report writer decides.
	 */
	bool enforce;
	/*
	 * A ValidatingPolicy's or NamespacedValidatingPolicy's result (then
	 * `policy` is NULL, `rule` "" or what cel-semantics.md 2.6 names, no
	 * `exceptions`: they are in `properties`): vpol is the policy,
	 * borrowed from vpols, an owned reference to its set. The report
	 * writer takes the entry's policy, source, severity, category and
	 * process from it, as the background scan does (cel-semantics.md 7).
	 */
	struct view_vpolset *vpols;
	const struct vpol_policy *vpol;
};

struct view_audit_item {
	/* The resource, as of this request (all owned, "" when absent). */
	char *api_version, *kind, *namespace, *name, *uid, *resource_version;
	char *operation;		   /* "CREATE", "UPDATE" or "CONNECT" */
	char *request_uid;		   /* request.uid */
	int64_t timestamp;		   /* Unix seconds when the request was judged */
	struct view_audit_result *results; /* owned array, policy-set and rule order */
	size_t nresults;
};

void view_audit_item_free(struct view_audit_item *it);

/* ---- context entries that read the cluster ---- */

/*
 * Where the engine hooks of one evaluation come from in cluster mode: the
 * loaders of the context entries configMap, apiCall, globalReference and
 * imageRegistry (background/context.h makes one; cmd/serve.c hands the same
 * one to the handler and the reconciler). open() returns the hooks for one
 * admission request or one scan page, which cache the calls made through
 * them; set (borrowed) is the policy set about to be evaluated, so that
 * the loader keeps watching what its policies name. close() releases what
 * open() returned. Thread-safe; the hooks may be used by several threads
 * at once until close().
 */
struct view_context {
	/*
	 * deadline_ms: how long all the calls made through the hooks may take
	 * together: 0 = the loader's default (an admission request's), < 0 = no
	 * overall bound (a scan page: each call still has its own timeout).
	 */
	const struct engine_hooks *(*open)(void *ud, const struct engine_policyset *set,
					   long deadline_ms);
	void (*close)(void *ud, const struct engine_hooks *hooks);
	void *ud;
};

#endif
