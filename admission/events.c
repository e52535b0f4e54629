/*
 * events.c - the Events of one judged admission request, as Kyverno's
 * admission handlers generate them (kube/events.h has the recorder).
 */
#include "admission/admission_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/banned.h"

void admission_events_emit(struct kube_events *ev, const struct admission_event_request *rq,
			   const struct engine_report *rep, int only)
{
	if (!ev || rq->dry_run)
		return;
	for (size_t i = 0; i < rep->n; i++) {
		const struct engine_response *resp = &rep->v[i];
		const struct engine_policy *p = resp->policy;
		if (only >= 0 && (int)engine_policy_failure_policy(p) != only)
			continue; /* judged by the other webhook */
		const char *pns = engine_policy_namespace(p);
		const json_t *pmd = json_object_get(engine_policy_doc(p), "metadata");
		struct kube_event_object pol = {
		    .api_version = "kyverno.io/v1",
		    .kind = engine_policy_kind(p),
		    .namespace = pns,
		    .name = engine_policy_name(p),
		    .uid = json_string_value(json_object_get(pmd, "uid")),
		};
		struct kube_event_object res = {
		    .api_version = rq->api_version,
		    .kind = rq->kind,
		    .namespace = rq->namespace,
		    .name = rq->name,
		    .uid = rq->uid,
		};
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *r = &resp->rules[j];
			struct engine_decision d = engine_decide(p, r, ENGINE_ADMISSION);
			enum kube_event_reason reason;
			bool on_resource = true;
			char *pmsg, *rmsg;
			switch (r->status) {
			case ENGINE_FAIL:
				reason = KUBE_EVENT_POLICY_VIOLATION;
				break;
			case ENGINE_ERROR:
				reason = KUBE_EVENT_POLICY_ERROR;
				break;
			case ENGINE_PASS:
				reason = KUBE_EVENT_POLICY_APPLIED;
				break;
			case ENGINE_SKIP:
				reason = KUBE_EVENT_POLICY_SKIPPED;
				on_resource = false;
				break;
			default:
				continue;
			}
			/* Kyverno's buildPolicyEventMessage and NewResourceViolationEvent. */
			if (rq->namespace && *rq->namespace)
				pmsg = gv_xasprintf(
				    "%s %s/%s: [%s] %s%s%s%s", rq->kind, rq->namespace, rq->name,
				    r->rule, engine_status_name(r->status),
				    d.blocks ? " (blocked)" : "",
				    r->status == ENGINE_ERROR && r->message ? "; " : "",
				    r->status == ENGINE_ERROR && r->message ? r->message : "");
			else
				pmsg = gv_xasprintf(
				    "%s %s: [%s] %s%s%s%s", rq->kind, rq->name, r->rule,
				    engine_status_name(r->status), d.blocks ? " (blocked)" : "",
				    r->status == ENGINE_ERROR && r->message ? "; " : "",
				    r->status == ENGINE_ERROR && r->message ? r->message : "");
			kube_events_emit(ev, &pol, reason, "kyverno-admission",
					 d.blocks ? "Resource Blocked" : "Resource Passed", pmsg);
			if (on_resource) {
				rmsg = gv_xasprintf("policy %s/%s %s: %s", engine_policy_name(p),
						    r->rule, engine_status_name(r->status),
						    r->message ? r->message : "");
				kube_events_emit(ev, &res, reason, "kyverno-admission",
						 d.blocks ? "Resource Blocked" : "Resource Passed",
						 rmsg);
				free(rmsg);
			}
			free(pmsg);
		}
	}
}
