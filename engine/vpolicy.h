/*
 * vpolicy.h - CEL policies: policies.kyverno.io ValidatingPolicy and
 * NamespacedValidatingPolicy (v1, v1beta1, v1alpha1), Kubernetes
 * ValidatingAdmissionPolicy (+ ValidatingAdmissionPolicyBinding and
 * params), CEL PolicyExceptions, and the `validate.cel` body of a
 * kyverno.io ClusterPolicy/Policy rule.
 *
 * Behaviour: ../shared/docs/cel-semantics.md sections 2 (ValidatingPolicy:
 * matchConstraints 2.3, matchConditions and variables 2.4, validations and
 * audit annotations 2.5, results 2.6, autogen 2.7, JSON mode 2.8), 3 (CEL
 * PolicyException), 4 (validate.cel), 5 (ValidatingAdmissionPolicy), and
 * ../shared/conformance/TEST-FORMAT.md section 7 for the offline results.
 *
 * Compile once (every expression parsed by engine/cel), evaluate many: pure,
 * no I/O; a compiled policy may be evaluated from several threads at once.
 * Variables are evaluated in order before the validations and kept with
 * their errors, so an erroring variable errors only the expressions that
 * read it (Kubernetes' lazy variables give the same results).
 * Kyverno CEL libraries: resource.Get/List, image.GetMetadata,
 * globalContext.Get and http.Get/Post are answered by the caller's host
 * (vpol_input.host; without one a call is an evaluation error). The other
 * Kyverno libraries, and any of them in a ValidatingAdmissionPolicy or
 * validate.cel (whose environment has none), make vpol_compile() /
 * vpol_cel_compile() fail with GV_EINVAL and a message starting "gavel
 * does not evaluate " (so callers report the policy as unsupported, never
 * as passing or as a user error).
 */
#ifndef GV_ENGINE_VPOLICY_H
#define GV_ENGINE_VPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine.h"

enum vpol_kind { VPOL_VALIDATING, VPOL_NAMESPACED, VPOL_VAP };

struct vpol_policy;    /* compiled ValidatingPolicy/NVPOL/VAP, autogen copies included */
struct vpol_exception; /* compiled policies.kyverno.io PolicyException */
struct vpol_cel;       /* compiled validate.cel body of a kyverno.io rule */
struct cel_host;

/*
 * Whether doc is a CEL policy this module compiles: policies.kyverno.io
 * v1|v1beta1|v1alpha1 ValidatingPolicy, v1|v1beta1 NamespacedValidatingPolicy,
 * admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy.
 */
bool vpol_is_policy_doc(const json_t *doc);
/* policies.kyverno.io PolicyException (any version). */
bool vpol_is_exception_doc(const json_t *doc);
/* admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding. */
bool vpol_is_binding_doc(const json_t *doc);

/*
 * Compiles a CEL policy document (borrowed; the policy keeps a reference).
 * Adds the autogen copies of a Pod ValidatingPolicy (section 2.7). Errors:
 * GV_EINVAL with err->pointer at the field and the CEL error with its
 * position ("compilation failed: ERROR: <input>:1:5: Syntax error: ..."
 * with the source line and a caret; err->pointer
 * "/spec/validations/0/expression"); a Kyverno CEL library call gives the
 * "gavel does not evaluate " message described above. Variables are typed
 * (cel-semantics.md 1.10): variables.<name> has the type of that
 * variable's expression, and a name not defined before the expression
 * reading it (itself, a later one, a typo) is the compile error
 * "undefined field '<name>'". In a ValidatingPolicy, also: `params` and
 * `authorizer` are undeclared ("undeclared reference to 'params' (in
 * container '')"), and a validation or match condition whose static type
 * is not bool (a bare `object.spec.hostNetwork` is dyn), a
 * messageExpression not string, or an audit annotation neither string nor
 * null is refused ("compilation failed: output is expected to be of type
 * bool, but expression ... is of type dyn"); a type the check cannot
 * deduce (a library function it has no signature for) is let through and
 * checked when evaluated. The matchConditions of a CEL PolicyException
 * must be bool the same way (vpol_exception_compile).
 */
struct vpol_policy *vpol_compile(const json_t *doc, struct gv_err *err);
void vpol_free(struct vpol_policy *p);
const char *vpol_name(const struct vpol_policy *p);
const char *vpol_namespace(const struct vpol_policy *p); /* "" unless NVPOL */
enum vpol_kind vpol_kind(const struct vpol_policy *p);
/* "ValidatingPolicy", "NamespacedValidatingPolicy", "ValidatingAdmissionPolicy". */
const char *vpol_kind_name(const struct vpol_policy *p);
/* evaluation.mode: JSON (section 2.8). */
bool vpol_json_mode(const struct vpol_policy *p);
/*
 * Whether a failing result blocks: validationActions holds Deny (the
 * default); a ValidatingAdmissionPolicy always (its bindings decide in the
 * API server).
 */
bool vpol_denies(const struct vpol_policy *p);
/*
 * The plural resource of a kind as the CLI guesses it ("Pod" -> "pods",
 * "NetworkPolicy" -> "networkpolicies", "Ingress" -> "ingresses"), into
 * out (n bytes).
 */
void vpol_kind_resource(const char *kind, char *out, size_t n);
/* The policy document (borrowed from p; read only). */
const json_t *vpol_doc(const struct vpol_policy *p);
/* Annotation value or NULL. */
const char *vpol_annotation(const struct vpol_policy *p, const char *key);

struct vpol_exception *vpol_exception_compile(const json_t *doc, struct gv_err *err);
void vpol_exception_free(struct vpol_exception *x);

/* One evaluation input; everything borrowed. */
struct vpol_input {
	const json_t *object;		/* NULL when absent (DELETE) */
	const json_t *old_object;	/* NULL when absent */
	const char *operation;		/* "CREATE" when NULL */
	const char *resource;		/* plural resource ("pods"); NULL: guessed from the kind */
	const char *subresource;	/* or NULL */
	const json_t *user_info;	/* {username, uid, groups, extra} or NULL */
	const json_t *namespace_object; /* the object's Namespace, or NULL */
	/* CEL PolicyExceptions to consider (ValidatingPolicy). */
	struct vpol_exception *const *exceptions;
	size_t nexceptions;
	/* ValidatingAdmissionPolicyBinding documents (VAP; section 5). */
	const json_t *const *bindings;
	size_t nbindings;
	/* Parameter objects (VAP bindings' paramRef; TEST-FORMAT 7.3). */
	const json_t *const *params;
	size_t nparams;
	/* JSON mode: the payload is evaluated as it is, no matching (section 2.8). */
	bool json_payload;
	/* Answers the Kyverno CEL libraries (engine/cel/cel.h), or NULL: calls are errors. */
	const struct cel_host *host;
	/*
	 * In the cluster (background scans): the hooks whose param_scope and
	 * params fetch each binding's paramRef objects as Kubernetes does
	 * (section 5, vpol_params_collect); `params` above is then unused.
	 * NULL: offline, params from `params` (TEST-FORMAT.md 7.3).
	 */
	const struct engine_hooks *hooks;
};

struct vpol_rule_result {
	char *rule; /* owned: "", "exception", "evaluation", "match", or the VAP name */
	enum engine_status status;
	char *message; /* owned */
	/*
	 * owned, NULL = none: the result's report `properties` (an object of
	 * strings, as Kyverno writes them for CEL policies: audit annotation
	 * values, "cel.validationIndex", "exceptions", a VAP's "binding").
	 */
	json_t *properties;
};

/* One response: zero rules means "matched nothing, response kept" (Excluded). */
struct vpol_response {
	struct vpol_rule_result *rules; /* owned */
	size_t n;
};

struct vpol_report {
	struct vpol_response *v; /* owned: responses kept (the CLI drop rule applied) */
	size_t n;
};

/*
 * Evaluates p (and its autogen copies) against in, as the Kyverno CLI
 * does (TEST-FORMAT.md 7.2-7.4). Failing validations are results; returns
 * GV_OK unless the input is unusable.
 */
enum gv_code vpol_evaluate(const struct vpol_policy *p, const struct vpol_input *in,
			   struct vpol_report *out, struct gv_err *err);
void vpol_report_release(struct vpol_report *r);

/*
 * Several policies against one input: the input's request fields are read
 * once, the `request` document is built at most once (and only when a
 * policy's expressions name it), and one CEL context serves them all.
 * vpol_batch_evaluate(b, p, ...) gives exactly what vpol_evaluate(p, in,
 * ...) gives. `in` and everything it points to are borrowed and must
 * outlive the batch. A batch is used by one thread at a time; the policies
 * may be shared. Free with vpol_batch_free() (NULL is fine).
 */
struct vpol_batch;
struct vpol_batch *vpol_batch_new(const struct vpol_input *in);
enum gv_code vpol_batch_evaluate(struct vpol_batch *b, const struct vpol_policy *p,
				 struct vpol_report *out, struct gv_err *err);
void vpol_batch_free(struct vpol_batch *b);

/*
 * validate.cel of a kyverno.io rule (section 4): `cel` is the validate.cel
 * object, `pre` the rule's celPreconditions (or NULL), `message` the rule's
 * validate.message (or NULL), `rule` its name. Errors as vpol_compile
 * (pointers relative to the cel object).
 */
struct vpol_cel *vpol_cel_compile(const json_t *cel, const json_t *pre, const char *message,
				  const char *rule, struct gv_err *err);
void vpol_cel_free(struct vpol_cel *c);

/*
 * Evaluates a validate.cel body: object/old_object as in vpol_input,
 * `request` the Kubernetes request ({operation, userInfo, namespace, ...}),
 * `ns_name` the namespace name (namespaceObject is {metadata: {name}}).
 * With paramKind and paramRef, the parameter objects are fetched through
 * hooks (param_scope, params; NULL hooks or callbacks: an error result),
 * and the body is evaluated once per object, `params` bound to it
 * (section 4 step 4). Sets *status to PASS, FAIL, SKIP (celPreconditions
 * not met) or ERROR (the parameters could not be collected: "error in
 * parameterized resource: <why>"), with *message (caller frees).
 * Evaluation errors are FAIL, as Kyverno's validator runs with failure
 * policy Fail; over several parameter objects the first skip or fail wins.
 */
void vpol_cel_evaluate(const struct vpol_cel *c, const json_t *object, const json_t *old_object,
		       const json_t *request, const char *ns_name, const struct engine_hooks *hooks,
		       enum engine_status *status, char **message);

/*
 * The parameter objects of a paramKind ({apiVersion, kind}) and paramRef
 * ({name, namespace, selector, parameterNotFoundAction}) for a request in
 * namespace ns ("" for a cluster-scoped object), through hooks, as
 * Kyverno's CollectParams (cel-semantics.md section 4 step 4): a
 * namespaced kind is read in paramRef.namespace, else ns (none: "can't
 * use namespaced paramRef to match cluster-scoped resources"); a
 * cluster-scoped kind with paramRef.namespace is an error; name: that one
 * object, else selector: the matching objects. No object found and
 * parameterNotFoundAction Deny (also when unset, Kubernetes' default):
 * "no params found". A named object that does not exist is an error
 * unless missing_is_none (Kubernetes' binding dispatcher: none found).
 * GV_OK with *out a new array reference, else an error (err->msg the
 * reason, without prefix).
 */
enum gv_code vpol_params_collect(const json_t *param_kind, const json_t *param_ref, const char *ns,
				 const struct engine_hooks *hooks, bool missing_is_none,
				 json_t **out, struct gv_err *err);

/*
 * Rewrites the CEL text of a Pod policy for a pod controller (section 2.7,
 * 4): object.spec / object.metadata (and oldObject.) gain the template path
 * (cronjob: spec.jobTemplate.spec.template). With keep_namespace,
 * object.metadata.namespace is left alone. Returns a new string.
 */
char *vpol_autogen_text(const char *text, bool cronjob, bool keep_namespace);

#endif
