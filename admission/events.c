/*
 * events.c - the Events of one judged admission request, as Kyverno's
 * admission handlers generate them (kube/events.h has the recorder).
 */
#include "admission/admission_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "view/events.h"
#include "common/banned.h"

/*
 * The Events of one rule result: on the policy and (but for pass, and
 * unless on_resource is false) on the resource, Kyverno's
 * buildPolicyEventMessage and NewResourceViolationEvent.
 */
static void emit_result(struct kube_events *ev, const struct admission_event_request *rq,
			const struct kube_event_object *pol, const char *rule,
			enum engine_status status, const char *message, bool blocks,
			bool on_resource)
{
	enum kube_event_reason reason;
	char *pmsg, *rmsg;
	struct kube_event_object res = {
	    .api_version = rq->api_version,
	    .kind = rq->kind,
	    .namespace = rq->namespace,
	    .name = rq->name,
	    .uid = rq->uid,
	};

	switch (status) {
	case ENGINE_FAIL:
		reason = KUBE_EVENT_POLICY_VIOLATION;
		break;
	case ENGINE_ERROR:
		reason = KUBE_EVENT_POLICY_ERROR;
		break;
	case ENGINE_PASS:
		reason = KUBE_EVENT_POLICY_APPLIED;
		break;
	default:
		/* a skip gives Events only with exceptions (view_events_exception) */
		return;
	}
	pmsg = view_events_policy_message(&res, rule, status, blocks, message);
	kube_events_emit(ev, pol, reason, VIEW_EVENTS_ADMISSION,
			 blocks ? "Resource Blocked" : "Resource Passed", pmsg);
	if (on_resource && status != ENGINE_PASS) {
		rmsg = gv_xasprintf("policy %s/%s %s: %s", pol->name, rule,
				    engine_status_name(status), message ? message : "");
		kube_events_emit(ev, &res, reason, VIEW_EVENTS_ADMISSION,
				 blocks ? "Resource Blocked" : "Resource Passed", rmsg);
		free(rmsg);
	}
	free(pmsg);
}

/* Whether a rule of rep judged by this webhook (only) blocks the request. */
static bool request_blocked(const struct engine_report *rep, int only)
{
	for (size_t i = 0; i < rep->n; i++) {
		const struct engine_response *resp = &rep->v[i];

		if (only >= 0 && (int)engine_policy_failure_policy(resp->policy) != only)
			continue;
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *r = &resp->rules[j];

			if ((r->status == ENGINE_FAIL || r->status == ENGINE_ERROR) &&
			    engine_decide(resp->policy, r, ENGINE_ADMISSION).blocks)
				return true;
		}
	}
	return false;
}

void admission_events_emit(struct kube_events *ev, const struct admission_event_request *rq,
			   const struct engine_report *rep, int only)
{
	bool blocked;

	if (!ev || rq->dry_run)
		return;
	/* a blocked request's object is not stored: Events on the policies only */
	blocked = request_blocked(rep, only);
	for (size_t i = 0; i < rep->n; i++) {
		const struct engine_response *resp = &rep->v[i];
		const struct engine_policy *p = resp->policy;
		if (only >= 0 && (int)engine_policy_failure_policy(p) != only)
			continue; /* judged by the other webhook */
		const json_t *pmd = json_object_get(engine_policy_doc(p), "metadata");
		struct kube_event_object pol = {
		    .api_version = "kyverno.io/v1",
		    .kind = engine_policy_kind(p),
		    .namespace = engine_policy_namespace(p),
		    .name = engine_policy_name(p),
		    .uid = json_string_value(json_object_get(pmd, "uid")),
		};
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *r = &resp->rules[j];
			struct engine_decision d = engine_decide(p, r, ENGINE_ADMISSION);
			if (r->status == ENGINE_SKIP && r->exception) {
				/* Kyverno's NewPolicyExceptionEvents */
				struct kube_event_object res = {
				    .api_version = rq->api_version,
				    .kind = rq->kind,
				    .namespace = rq->namespace,
				    .name = rq->name,
				    .uid = rq->uid,
				};
				view_events_exception(ev, VIEW_EVENTS_ADMISSION, &pol, &res,
						      r->rule, r->message);
				continue;
			}
			emit_result(ev, rq, &pol, r->rule, r->status, r->message, d.blocks,
				    !blocked);
		}
	}
}

void admission_vpol_events(struct kube_events *ev, const struct admission_event_request *rq,
			   const json_t *policy, const char *rule, enum engine_status status,
			   const char *message, bool blocked)
{
	const json_t *md = json_object_get(policy, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *av = json_string_value(json_object_get(policy, "apiVersion"));
	struct kube_event_object pol = {
	    .api_version = av ? av : "policies.kyverno.io/v1",
	    .kind = json_string_value(json_object_get(policy, "kind")),
	    .namespace = ns && *ns ? ns : NULL,
	    .name = json_string_value(json_object_get(md, "name")),
	    .uid = json_string_value(json_object_get(md, "uid")),
	};

	if (!ev || !rq || rq->dry_run || !pol.kind || !pol.name)
		return;
	emit_result(ev, rq, &pol, rule ? rule : "", status, message,
		    blocked && (status == ENGINE_FAIL || status == ENGINE_ERROR), true);
}
