/*
 * events.h - the Events of rule results, as Kyverno's event package builds
 * them (pkg/event/events.go), for admission and background scans alike;
 * kube/events.h writes them.
 *
 *   on the policy     reason PolicyViolation (fail, error, warn) | PolicyApplied
 *                     (pass) | PolicySkipped (a PolicyException), message
 *                     "<Kind> <ns>/<name>: [<rule>] <status>[ (blocked)][; <error>]"
 *   on the resource   reason PolicyViolation, message
 *                     "policy <policy>/<rule> <status>: <rule message>"
 *   on an exception   reason PolicySkipped (apiVersion kyverno.io/v2), message
 *                     "resource <Kind>/<ns>/<name> was skipped from policy rule
 *                     <ns>/<policy>/<rule> pursuant to policy exception <ns>/<name>"
 *
 * Sources (reportingComponent) as Kyverno's: VIEW_EVENTS_ADMISSION
 * "kyverno-admission", VIEW_EVENTS_SCAN "kyverno-scan".
 */
#ifndef GV_VIEW_EVENTS_H
#define GV_VIEW_EVENTS_H

#include <stdbool.h>

#include "engine/engine.h"
#include "kube/events.h"

#define VIEW_EVENTS_ADMISSION "kyverno-admission"
#define VIEW_EVENTS_SCAN      "kyverno-scan"

/*
 * The object reference of a kyverno.io policy (apiVersion kyverno.io/v1,
 * its kind, namespace, name and uid; strings borrowed from p).
 */
void view_events_policy_ref(const struct engine_policy *p, struct kube_event_object *out);

/*
 * The PolicyExceptions named by the message of a rule the engine skipped
 * because of them ("rule is skipped due to policy exception[s] <list>",
 * entries "ns/name" or "name" separated by ',' and spaces), one per call
 * of fn(ud, namespace, name) with namespace "" for none. Returns how many.
 */
size_t view_events_exceptions_each(const char *message,
				   void (*fn)(void *ud, const char *ns, const char *name),
				   void *ud);

/*
 * Kyverno's NewPolicyExceptionEvents: for one rule skipped because of
 * exceptions (message as the engine gives it), a PolicySkipped Event on
 * each exception and one on the policy, action "Resource Passed".
 */
void view_events_exception(struct kube_events *ev, const char *source,
			   const struct kube_event_object *policy,
			   const struct kube_event_object *resource, const char *rule,
			   const char *message);

/*
 * The Events of one rule result of a background scan, as Kyverno's scan
 * controller generates them (pkg/controllers/report/utils/events.go): a
 * result that is neither pass nor skip gives PolicyViolation on the
 * resource and on the policy (action "Resource Passed": nothing is
 * blocked); pass gives PolicyApplied on the policy; a skip because of
 * exceptions the exception Events. Source VIEW_EVENTS_SCAN.
 */
void view_events_scan_rule(struct kube_events *ev, const struct kube_event_object *policy,
			   const struct kube_event_object *resource,
			   const struct engine_rule_result *r);

/* Kyverno's buildPolicyEventMessage (above); caller frees. */
char *view_events_policy_message(const struct kube_event_object *resource, const char *rule,
				 enum engine_status status, bool blocked, const char *message);

#endif
