/*
 * engine.h - gavel's rule engine: Kyverno-compatible ClusterPolicy/Policy
 * validate rules, loaded and compiled once, evaluated many times.
 *
 * Load -> compile -> evaluate -> decide:
 *   engine_policy_compile()    a policy document -> struct engine_policy
 *   engine_policyset_new()     policies -> immutable, refcounted snapshot
 *   engine_evaluate()          one resource/request -> struct engine_report
 *   engine_decide()            reporting matrix for one rule result
 *
 * Nothing here does network I/O or starts threads; evaluation is pure and
 * thread-safe on a shared policy set. Behaviour follows
 * ../shared/docs/kyverno-semantics.md (section numbers in comments).
 */
#ifndef GV_ENGINE_ENGINE_H
#define GV_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"

/* Rule result statuses (section 8.1); WARN only appears in reports (scored: "false"). */
enum engine_status { ENGINE_PASS, ENGINE_FAIL, ENGINE_WARN, ENGINE_ERROR, ENGINE_SKIP };

/* "pass", "fail", "warn", "error", "skip". */
const char *engine_status_name(enum engine_status s);

/*
 * Whether s is the version segment of a match kind ("v1/Pod",
 * "apps/v1/Deployment"): "*" or v<digits>[(alpha|beta)<digits>], as
 * Kyverno's kind parser (kyverno-semantics.md 1.1).
 */
bool engine_is_kind_version(const char *s);

enum engine_mode { ENGINE_ADMISSION, ENGINE_BACKGROUND };

enum engine_action { ENGINE_AUDIT, ENGINE_ENFORCE };

enum engine_failure_policy { ENGINE_FAILURE_FAIL, ENGINE_FAILURE_IGNORE };

struct engine_policy;	 /* compiled, immutable */
struct engine_policyset; /* immutable, refcounted snapshot of policies */
struct engine_exception; /* compiled PolicyException */

/*
 * Compiles one policy document (kyverno.io/v1 or v2beta1 ClusterPolicy or
 * Policy). Validates it as Kyverno's policy admission does (section 1.8,
 * 7.1) and expands autogen rules (section 9). On error returns NULL and sets
 * err with a JSON pointer into the document (err->pointer) and the message
 * Kyverno uses; the caller adds the file position with gv_err_locate().
 * `doc` is borrowed; the policy keeps its own reference.
 */
struct engine_policy *engine_policy_compile(const json_t *doc, struct gv_err *err);

/* Reference counting (policies are shared by sets). */
struct engine_policy *engine_policy_ref(struct engine_policy *p);
void engine_policy_unref(struct engine_policy *p);

/* Accessors. Returned strings and JSON are owned by the policy. */
const char *engine_policy_name(const struct engine_policy *p);
/* "" for a ClusterPolicy, the namespace for a namespaced Policy. */
const char *engine_policy_namespace(const struct engine_policy *p);
/* "ClusterPolicy" or "Policy". */
const char *engine_policy_kind(const struct engine_policy *p);
bool engine_policy_background(const struct engine_policy *p);
bool engine_policy_admission(const struct engine_policy *p);
bool engine_policy_emit_warning(const struct engine_policy *p);
enum engine_failure_policy engine_policy_failure_policy(const struct engine_policy *p);
/* The policy document as loaded (borrowed). */
const json_t *engine_policy_doc(const struct engine_policy *p);
/* Value of annotation key, or NULL (also when p is NULL). */
const char *engine_policy_annotation(const struct engine_policy *p, const char *key);
/*
 * The severity a PolicyReport result carries for the value of a policy's
 * policies.kyverno.io/severity annotation: "critical", "high", "medium",
 * "low" or "info" (static strings) when `annotation` is exactly one of them,
 * NULL for anything else ("Medium", "", NULL): the result then has no
 * severity, as Kyverno's SeverityFromString gives "" and the report CRD's
 * enum allows only these five. Used by gavel apply -o report and the
 * background reports (kyverno-semantics.md 8.6).
 */
const char *engine_report_severity(const char *annotation);
/*
 * The message a PolicyReport result shows in place of the engine's, from
 * the result's properties (kyverno-semantics.md 8.6: a kyverno.io rule's
 * reportProperties; cel-semantics.md 7: also a CEL policy's audit
 * annotations): the string "<status>Message" for the reported status
 * (passMessage, failMessage, warnMessage, errorMessage, skipMessage), else
 * the string "message"; NULL when neither (or properties is not an object):
 * the engine's message stays. Borrowed from properties. Used by the
 * background reports and gavel apply -o report.
 */
const char *engine_report_message(const json_t *properties, enum engine_status status);
/*
 * The rules autogen adds to a policy document (section 9), in Kyverno's
 * order (per rule: the controllers' rule, then the CronJob rule): what
 * Kyverno writes in status.autogen.rules. New reference; [] when none.
 * doc is borrowed and need not compile.
 */
json_t *engine_autogen_rules(const json_t *doc);
/*
 * The same rules as Kyverno writes them in status.autogen.rules: from the
 * policy as the API server stores it (the CRD's defaults
 * skipBackgroundRequests: true and validate.allowExistingViolations: true
 * filled in where the rule has none) serialized from Go structs (match
 * and exclude always carry `resources`, {} when unused). New reference.
 */
json_t *engine_autogen_status_rules(const json_t *doc);

/* Number of rules after autogen, and their names. */
size_t engine_policy_rule_count(const struct engine_policy *p);
const char *engine_policy_rule_name(const struct engine_policy *p, size_t i);
/*
 * The failure action of rule i before namespace overrides (section 1.4):
 * its validate.failureAction, else the policy's validationFailureAction.
 */
enum engine_action engine_policy_rule_action(const struct engine_policy *p, size_t i);
/*
 * Whether rule i may run in background mode: false when it uses
 * admission-only variables (request.userInfo, request.roles,
 * request.clusterRoles, serviceAccountName, serviceAccountNamespace) or
 * user-info match/exclude (section 7.1).
 */
bool engine_policy_rule_background_safe(const struct engine_policy *p, size_t i);

/*
 * What gavel does not evaluate in rule i, or NULL when it evaluates all of
 * it: "mutate", "generate", "verifyImages" (rules outside a validate engine:
 * they give no result at all), or, for validate rules, a validate.cel that
 * calls the Kyverno CEL libraries,
 * "validate.manifests", "validate.assert", "celPreconditions" (on a body
 * that is not validate.cel),
 * "imageExtractors" (they give an ENGINE_ERROR result with `unsupported`
 * set). Static string.
 */
const char *engine_policy_rule_unsupported(const struct engine_policy *p, size_t i);

/*
 * One line for the policy's mutate, generate and verifyImages rules, e.g.
 * "policy add-labels: gavel is a validate engine and does not evaluate
 * mutate rule add-team (and 2 more)", or NULL when it has none. Say it once
 * where the policy is loaded. Caller frees.
 */
char *engine_policy_unsupported_note(const struct engine_policy *p);

/*
 * Whether the results of evaluating a policy or PolicyException document
 * (the whole document, autogen or not) may depend on more than the object,
 * its namespace's labels, the PolicyExceptions and gavel's configuration:
 * a `context` entry that reads the cluster or a registry (apiCall,
 * configMap, globalReference, imageRegistry; kyverno-semantics.md section
 * 1.5), a validate.cel paramRef or `authorizer` check (cel-semantics.md
 * section 4), or a JMESPath function whose value changes by itself
 * (time_now, time_now_utc, time_since, random). Found by walking the document, so
 * conservative: a string that merely mentions such a function counts.
 * `gavel scan` does not skip the evaluation of unchanged objects for such
 * documents (cmd/scan.c). NULL reads nothing.
 */
bool engine_doc_reads_outside(const json_t *doc);

/*
 * True when kind names a cluster-scoped Kubernetes kind (built-in API
 * resources and the cluster-scoped kinds of Kyverno and the policy-report
 * API); every other kind, custom resources included, counts as namespaced,
 * as in the Kyverno CLI's built-in discovery data.
 */
bool engine_kind_cluster_scoped(const char *kind);

/*
 * Compiles a PolicyException (kyverno.io/v2, v2beta1). Returns NULL on error
 * with err set as for policies.
 */
struct engine_exception *engine_exception_compile(const json_t *doc, struct gv_err *err);
void engine_exception_free(struct engine_exception *e);

/*
 * Builds a snapshot from policies (each gets a new reference) and exceptions
 * (ownership moves to the set; the array itself stays the caller's).
 * Returns a set with refcount 1.
 */
struct engine_policyset *engine_policyset_new(struct engine_policy *const *policies, size_t n,
					      struct engine_exception **exceptions, size_t nexc);
struct engine_policyset *engine_policyset_ref(struct engine_policyset *s);
void engine_policyset_unref(struct engine_policyset *s);
size_t engine_policyset_count(const struct engine_policyset *s);
const struct engine_policy *engine_policyset_get(const struct engine_policyset *s, size_t i);

/*
 * Answers context entries that need the outside world (configMap, apiCall,
 * imageRegistry, globalReference) and injects per-rule values (the CLI's
 * values files). All callbacks are optional (NULL); ud is passed through.
 */
struct jp_env;

struct engine_hooks {
	void *ud;
	/*
	 * Variables to add to the JSON context of a rule before its context
	 * entries are processed (CLI values: globalValues, per-resource and
	 * per-rule values). Returns a new reference to an object mapping
	 * dotted variable names to values, or NULL. Names are split on '.'
	 * outside double quotes ("request.operation",
	 * "request.object.metadata.annotations.\"a.b/c\""); each assignment
	 * replaces the value at that path (objects are not merged), creating
	 * the objects on the way.
	 */
	json_t *(*rule_values)(void *ud, const struct engine_policy *p, const char *rule,
			       const json_t *resource);
	/*
	 * foreach values (CLI foreachValues): a new reference to an object
	 * mapping a variable name to a list, element i used for foreach
	 * element i; or NULL.
	 */
	json_t *(*foreach_values)(void *ud, const struct engine_policy *p, const char *rule,
				  const json_t *resource);
	/*
	 * Loads a non-variable context entry (entry is the whole context
	 * item, e.g. {"name": "cm", "configMap": {...}}); `ctx` is the JSON
	 * context built so far. Returns GV_OK with *out a new reference, or
	 * an error code (the rule then fails with "failed to load context").
	 * Returns GV_ENOENT to mean "not available offline": the entry is
	 * skipped, and a same-named value injected by rule_values stays.
	 */
	enum gv_code (*load_context)(void *ud, const json_t *entry, const json_t *ctx, json_t **out,
				     struct gv_err *err);
	/*
	 * The clock and random source of time_now(), time_since() and random()
	 * (engine/jmespath.h struct jp_env), borrowed: the program passes the
	 * real ones (common/clock.h), a test a fixed clock. NULL, or no hooks
	 * at all: common/clock.h's real ones.
	 */
	const struct jp_env *env;
	/*
	 * A call of Kyverno's CEL http library (cel-semantics.md section 6):
	 * method "GET" or "POST", url an absolute http(s) URL, headers an
	 * object of string values or NULL, body (POST) any JSON value, sent as
	 * JSON, or NULL. policy_namespace is the namespace of the calling
	 * NamespacedValidatingPolicy, "" for a cluster-wide policy. Returns
	 * GV_OK with *out a new reference, as Kyverno's library answers: the
	 * decoded body when it is a JSON object, with "statusCode" added;
	 * {"body": <decoded JSON value, or the text>, "statusCode": N}
	 * otherwise. Any status is an answer; a failed request (connection,
	 * TLS, timeout, oversize body) or a call not allowed is an error.
	 */
	enum gv_code (*http)(void *ud, const char *method, const char *url, const json_t *headers,
			     const json_t *body, const char *policy_namespace, json_t **out,
			     struct gv_err *err);
	/*
	 * Parameter resources (validate.cel paramKind/paramRef,
	 * cel-semantics.md section 4 step 4; ValidatingAdmissionPolicyBinding
	 * paramRef in background scans, section 5). param_scope sets
	 * *namespaced for the kind `kind` of apiVersion `api_version`
	 * ("rules.example.com/v1", "v1"); an error (a kind the cluster does
	 * not serve) becomes the result's error. params answers the objects:
	 * with name non-NULL, *out is a new reference to that one object in
	 * namespace ns ("" for a cluster-scoped kind), and a missing one is
	 * GV_ENOENT with the API server's message (`<resource> "<name>" not
	 * found`); with name NULL, *out is a new reference to an array of the
	 * objects of the kind in ns, possibly narrowed by selector (a
	 * LabelSelector object, or NULL; the engine applies it again). Other
	 * failures are errors. Both or neither are set.
	 */
	enum gv_code (*param_scope)(void *ud, const char *api_version, const char *kind,
				    bool *namespaced, struct gv_err *err);
	enum gv_code (*params)(void *ud, const char *api_version, const char *kind, const char *ns,
			       const char *name, const json_t *selector, json_t **out,
			       struct gv_err *err);
	/*
	 * An authorization check of validate.cel's `authorizer`
	 * (cel-semantics.md 1.9, 4): review is the spec of an
	 * authorization.k8s.io/v1 SubjectAccessReview ({user, uid, groups,
	 * extra, resourceAttributes {verb, group, resource, subresource,
	 * namespace, name} | nonResourceAttributes {path, verb}}). Returns
	 * GV_OK with *out a new reference to its status ({allowed, denied,
	 * reason, evaluationError}); a failed review is an error. NULL: the
	 * check is an evaluation error.
	 */
	enum gv_code (*authorize)(void *ud, const json_t *review, json_t **out, struct gv_err *err);
};

/*
 * One evaluation input: an admission request or a scanned object. All
 * pointers are borrowed for the duration of engine_evaluate().
 */
struct engine_input {
	const json_t *object;	  /* new object; NULL for DELETE */
	const json_t *old_object; /* old object (UPDATE, DELETE), else NULL */
	const char *operation;	  /* "CREATE" (default when NULL), "UPDATE", "DELETE", "CONNECT" */
	const char *namespace;	  /* request namespace; NULL = from the object */
	/* Request kind; NULLs are derived from the object's apiVersion/kind. */
	const char *group, *version, *kind, *subresource;
	/*
	 * {username, uid, groups, extra}, or NULL for "no user information"
	 * (background scans, the CLI without a userinfo file): user-info
	 * constraints (subjects, roles, clusterRoles) are then dropped from
	 * match filters and compared with an empty user in exclude filters, so
	 * they never exclude (section 2.7).
	 */
	const json_t *user_info;
	const json_t *roles;		/* array of "ns:role" or NULL */
	const json_t *cluster_roles;	/* array or NULL */
	const json_t *namespace_labels; /* labels object of the object's namespace, or NULL */
	const json_t *request; /* whole AdmissionRequest for other request.* fields, or NULL */
	const struct engine_hooks *hooks; /* or NULL */
	/*
	 * Or NULL: what calls about this same object share (struct
	 * engine_memo), for a caller that evaluates one object policy by
	 * policy. One engine_evaluate() evaluates a whole set with a memo of
	 * its own.
	 */
	struct engine_memo *memo;
	/*
	 * The caller reads no podSecurity report properties (standard,
	 * version, controls, controlsJSON in engine_rule_result.properties):
	 * they are not built. Outcomes and messages are the same.
	 */
	bool no_pss_properties;
};

/*
 * Work done once on an object and reused by later engine_evaluate() calls
 * about the same object (engine_input.memo): the podSecurity checks. A
 * cache, never a change of outcome. It is keyed by the object's address:
 * use one memo for one object only (engine_memo_new() per object, or
 * engine_memo_clear() in between), unchanged while it is used, and from one
 * thread at a time. engine_memo_free(NULL) does nothing.
 */
struct engine_memo;
struct engine_memo *engine_memo_new(void);
void engine_memo_clear(struct engine_memo *m);
void engine_memo_free(struct engine_memo *m);

/* One rule's result (section 8.1). */
struct engine_rule_result {
	char *rule; /* owned: rule name (autogen names included) */
	enum engine_status status;
	char *message;		   /* owned */
	enum engine_action action; /* effective failure action for this request (section 1.4) */
	bool exception;		   /* skipped because of a PolicyException */
	/*
	 * owned: with exception and status skip, the names (without
	 * namespace) of the PolicyExceptions that made it a skip, joined by
	 * "," (a report result's properties.exceptions, as Kyverno); else NULL.
	 */
	char *exceptions;
	/*
	 * owned: the rule's reportProperties, variables substituted (an
	 * object of strings; a value that is not a string is written as
	 * JSON, as in a message), for a report result's properties; NULL
	 * when the rule has none (kyverno-semantics.md 8.6). A podSecurity
	 * fail adds standard, version, controls and controlsJSON
	 * (pod-security-semantics.md 4.2), which win over reportProperties
	 * of the same name.
	 */
	json_t *properties;
	/*
	 * An ENGINE_ERROR because gavel does not evaluate this rule's kind
	 * (validate.cel, validate.manifests, validate.assert,
	 * celPreconditions, imageExtractors): the message says "gavel does not
	 * evaluate <what>". `gavel test` scores it as unsupported.
	 */
	bool unsupported;
	/*
	 * Seconds the rule's evaluation took (kyverno_policy_execution_duration_seconds),
	 * on the clock of in->hooks->env (common/clock.h's without one; a
	 * fixed clock gives 0). Not part of any output.
	 */
	double seconds;
};

/*
 * All rule results of one policy for one input. A policy that applies to
 * the input's namespace always has a response, possibly with no rules.
 */
struct engine_response {
	const struct engine_policy *policy; /* borrowed from the set */
	struct engine_rule_result *rules;   /* owned array */
	size_t nrules;
};

struct engine_report {
	struct engine_response *v; /* owned array, in policy-set order */
	size_t n;
};

/*
 * Evaluates every policy of set against in. In BACKGROUND mode the
 * operation is CREATE, rules that are not background-safe are skipped (no
 * result), and policies with background: false are not evaluated.
 * Failing rules are results, not errors: this returns GV_OK unless the input
 * itself is unusable (no object at all), with err set.
 * Release out with engine_report_release().
 */
enum gv_code engine_evaluate(const struct engine_policyset *set, const struct engine_input *in,
			     enum engine_mode mode, struct engine_report *out, struct gv_err *err);

void engine_report_release(struct engine_report *r);

/*
 * The reporting matrix (DESIGN.md, kyverno-semantics.md section 7.3, 8.2,
 * 8.4) for one rule result: whether it blocks the admission request, and
 * whether it goes into a PolicyReport.
 */
struct engine_decision {
	bool blocks;
	bool reported;
	bool warns; /* returned as an admission warning */
};

struct engine_decision engine_decide(const struct engine_policy *p,
				     const struct engine_rule_result *r, enum engine_mode mode);

/*
 * Substitutes the variables of tree (section 6.2) against ctx, the JSON
 * context a load_context hook is given: for the loaders of context entries
 * that read the cluster (a configMap's name, an apiCall's urlPath and
 * data). Both borrowed; *out a new reference. For a DELETE
 * (request.operation) request.object reads request.oldObject. Errors as
 * a rule's substitution: GV_EEVAL ("failed to resolve <expr> at path
 * <pointer>: ..."), GV_ELIMIT past the default step budget.
 */
enum gv_code engine_substitute(const json_t *tree, const json_t *ctx, json_t **out,
			       struct gv_err *err);

#endif
