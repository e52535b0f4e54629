/*
 * admission_int.h - internals shared by admission/ sources and admission/tests:
 * the go-yaml-style emitter of the denial message, the warnings budget and
 * small JSON writing helpers. Not for use outside admission/.
 */
#ifndef GV_ADMISSION_INT_H
#define GV_ADMISSION_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "admission/admission.h"
#include "common/gv.h"
#include "common/json.h"
#include "kube/events.h"
#include "view/metrics.h"

/* ---- message.c: the denial message (kyverno-semantics.md section 8.2) ---- */

/* One rule response that goes into the denial message. Strings borrowed. */
struct admission_msg_entry {
	const char *policy; /* bare policy name (no namespace) */
	const char *rule;
	const char *message;
};

/*
 * Appends s as go-yaml v3 emits a string scalar in block context with
 * 2-space indentation and no line wrapping: plain when YAML reads it back
 * as the same string, else single-quoted, else double-quoted with escapes;
 * a multi-line value (not a key) as a literal block (`|`, `|-`, `|+`, with
 * an indentation indicator when it starts with a space) whose lines are
 * indented by `indent` spaces. `key`: s is a mapping key (simple key).
 */
void admission_yaml_scalar(struct gv_buf *out, const char *s, int indent, bool key);

/*
 * True when go-yaml v3 would resolve s, written plain, to something other
 * than a string (resolve.go: strconv's syntax, underscores included, as in
 * ".9_9"), or quotes it anyway (YAML 1.1 booleans, base 60 floats).
 */
bool admission_yaml_non_string(const char *s);

/*
 * go-yaml's map key order (digit runs compared as numbers, letters after
 * other characters). A run of 19 digits or more wraps around as Go's int64
 * does ("9223372036854775808" sorts before "1"), so the order stays Kyverno's.
 */
int admission_yaml_key_cmp(const char *a, const char *b);

/*
 * Appends the YAML of {policy: {rule: message}} for entries (reordered in
 * place): keys sorted as go-yaml sorts them, a later entry with the same
 * policy and rule replacing an earlier one.
 */
void admission_yaml_policies(struct gv_buf *out, struct admission_msg_entry *v, size_t n);

/*
 * The whole status.message of a denial:
 * "\n\nresource <kind>/<ns>/<name> was blocked due to the following policies \n\n" + YAML.
 * Returns a new string.
 */
char *admission_denial_message(const char *kind, const char *ns, const char *name,
			       struct admission_msg_entry *v, size_t n);

/* ---- message.c: warnings within the API server's limits (k8s-wire.md 1.6) ---- */

#define ADMISSION_WARNING_MAX	 256  /* characters (runes) of one warning */
#define ADMISSION_WARNINGS_TOTAL 4096 /* characters of all warnings of one answer */

struct admission_warnings {
	char **v; /* owned strings */
	size_t n;
	size_t total;	/* characters used */
	size_t dropped; /* warnings left out (duplicates not counted) */
};

/*
 * Adds a warning: control characters become spaces, every byte that is not
 * part of well-formed UTF-8 (overlong forms, surrogates and code points past
 * U+10FFFF included) becomes U+FFFD, as Go's encoding/json writes it (the
 * API server refuses warnings that are not valid UTF-8); the text is cut to
 * ADMISSION_WARNING_MAX characters ("..." at the end); a duplicate is
 * ignored; a warning that would take the total past ADMISSION_WARNINGS_TOTAL
 * is dropped.
 */
void admission_warnings_add(struct admission_warnings *w, const char *text);
void admission_warnings_release(struct admission_warnings *w);

/* ---- vpolicy_admit.c: CEL policies (cel-semantics.md sections 2.6, 3) ---- */

struct admission_event_request;

/* One judged request, for the CEL policies. Everything borrowed. */
struct admission_vpol_request {
	const json_t *request;	      /* AdmissionReview.request */
	const json_t *object;	      /* NULL when absent (DELETE) */
	const json_t *old_object;     /* NULL when absent (CREATE) */
	const char *operation;	      /* CREATE, UPDATE, DELETE, CONNECT */
	const char *kind, *namespace; /* request.kind.kind, request.namespace ("" cluster) */
	const char *op_label;	      /* metrics label: create, update, ... */
	int only;		      /* the failure policy judged, -1 all */
	/*
	 * The context loader's hooks of this request (view_context), or NULL:
	 * resource.Get/List (apiCall GETs) and globalContext.Get
	 * (globalReference), http.Get/Post through hooks->http; without them,
	 * and for the other Kyverno libraries, a call is an evaluation error.
	 */
	const struct engine_hooks *hooks;
	struct metrics_family *results; /* kyverno_policy_results_total, or NULL */
	/* The Events of the results (admission_vpol_events), or NULL: none. */
	struct kube_events *events;
	const struct admission_event_request *event_object;
	/*
	 * Or NULL: the results of the request that go into PolicyReports are
	 * appended to audit->results (view_audit_result.vpol set), unless a
	 * policy with a Deny action judged it (cel-semantics.md 2.6).
	 */
	struct view_audit_item *audit;
};

/*
 * Evaluates the ValidatingPolicies and NamespacedValidatingPolicies of
 * state routed to the request: admission enabled (evaluation.admission),
 * a NamespacedValidatingPolicy only for requests in its namespace, the
 * failure policy of the webhook called (`only`), CEL PolicyExceptions
 * applied. Every fail and every error gives "Policy <name> failed: <msg>"
 * / "Policy <name> error: <msg>": appended to deny (joined by "; ") when
 * validationActions has Deny, added to warnings when it has Warn. When
 * no policy with a Deny action matched the request, every result of the
 * matched policies goes to rq->audit for the reports (Kyverno's admission
 * reports of CEL policies; the caller decides whether the request is
 * reported at all: allowed, not dry-run, not DELETE, object with a uid).
 * Returns whether a Deny policy failed or erred.
 */
bool admission_vpol_judge(const struct view_state *state, const struct admission_vpol_request *rq,
			  struct admission_warnings *warnings, struct gv_buf *deny);

/*
 * /validate-policy for policies.kyverno.io documents: a ValidatingPolicy or
 * NamespacedValidatingPolicy must compile and have matchConstraints with at
 * least one resourceRules entry (cel-semantics.md 2.1); a PolicyException
 * must compile. Other kinds of the group are accepted. False with err set
 * (the JSON pointer and the compiler's message, "validating policy compiler
 * 1.0 error: failed to compile policy" in front of a compile error).
 */
bool admission_vpol_valid(const json_t *doc, struct gv_err *err);

/* ---- JSON writing ---- */

/* Appends s as a JSON string literal (quotes included). */
void admission_json_str(struct gv_buf *out, const char *s);

/* The judged object of a request, for its Events. Strings borrowed. */
struct admission_event_request {
	const char *api_version, *kind, *namespace, *name, *uid;
	bool dry_run; /* no Event for a dry run */
};

/*
 * Queues the Events of one judged request on ev (NULL: none), as Kyverno:
 * for each fail / error / pass / skip rule result, PolicyViolation /
 * PolicyError / PolicyApplied / PolicySkipped on the policy, message
 * "<Kind> [<ns>/]<name>: [<rule>] <status>[ (blocked)][; <error message>]",
 * and for fail / error on the resource, message "policy <policy>/<rule>
 * <status>: <message>", unless a rule blocks the request (its object is
 * not stored: Kyverno's GenerateEvents leaves the resource out then);
 * reportingComponent kyverno-admission (the
 * component name tools filter on), action "Resource Blocked" or "Resource
 * Passed". only: the failure policy judged (admission_handle_only), -1 all.
 * Omitted reasons are the recorder's business (kube/events.h).
 */
void admission_events_emit(struct kube_events *ev, const struct admission_event_request *rq,
			   const struct engine_report *rep, int only);

/*
 * The Events of one ValidatingPolicy or NamespacedValidatingPolicy result
 * at admission, as admission_events_emit gives them for a kyverno.io rule
 * (Kyverno's webhook event generation takes both kinds of engine
 * response): status fail / error / pass / skip -> PolicyViolation /
 * PolicyError / PolicyApplied / PolicySkipped on the policy (the
 * document's apiVersion, kind, namespace, name and uid), and but for skip
 * on the resource; rule is the result's ("" for a validation). blocked:
 * validationActions has Deny (a fail or error is then "(blocked)").
 * Nothing for a dry run or ev NULL. Everything borrowed.
 */
void admission_vpol_events(struct kube_events *ev, const struct admission_event_request *rq,
			   const json_t *policy, const char *rule, enum engine_status status,
			   const char *message, bool blocked);

/* ---- policycheck.c: /validate-policy warnings and messages ---- */

/*
 * A kyverno.io GlobalContextEntry as Kyverno's policy webhook checks it:
 * exactly one of spec.kubernetesResource and spec.apiCall; an apiCall with
 * method GET carries no data. False with err set (pointer, message).
 */
bool admission_gctx_valid(const json_t *entry, struct gv_err *err);

/*
 * Whether each rule of the policy can match something: some kind named in
 * its match filters (any, all, resources) is served, by known(ud, kind), or
 * is a wildcard ("*..."). A rule naming only kinds the server does not
 * serve (Foo, Pod/foo, v2/Pod, Scale) is refused, as Kyverno refuses it
 * through discovery; one naming a served kind too is accepted (a CRD
 * installed later). False with err set (pointer at the first kind not
 * served, Kyverno's message).
 */
bool admission_policy_kinds_known(const json_t *policy, bool (*known)(void *ud, const char *kind),
				  void *ud, struct gv_err *err);

/*
 * Warnings for what Kyverno accepts but has deprecated: the condition
 * operators In and NotIn ("Operator NotIn has been deprecated and will be
 * removed soon."), once per operator, in any condition under spec.rules.
 */
void admission_policy_deprecations(const json_t *policy, struct admission_warnings *w);

/*
 * The field path Kyverno's policy validation writes for a JSON pointer
 * into the object: "/spec/podSecurity/0/values" -> "spec.podSecurity[0].values";
 * a validate rule's podSecurity is under the rule itself in Kyverno's paths
 * ("/spec/rules/0/validate/podSecurity/exclude/0/values" ->
 * "spec.rules[0].podSecurity.exclude[0].values"). Appended to out.
 */
void admission_field_path(struct gv_buf *out, const char *pointer);

#endif
