/*
 * events.h - a Kubernetes Event recorder as Kyverno's event generator:
 * core/v1 Events POSTed by one background thread from a bounded queue,
 * rate limited, with Event kinds that can be omitted.
 *
 * An Event as written:
 *   apiVersion: v1
 *   kind: Event
 *   metadata: {generateName: <involved name>., namespace: <involved ns, or "default">}
 *   involvedObject: {apiVersion, kind, name, namespace, uid}
 *   type: Warning (PolicyViolation, PolicyError) | Normal (PolicyApplied, PolicySkipped)
 *   reason: PolicyViolation | PolicyError | PolicyApplied | PolicySkipped
 *   message: ...                           (at most 1024 bytes)
 *   source: {component: <source>}          Kyverno's: "kyverno-admission", "kyverno-scan"
 *                                          (view/events.h)
 *   reportingComponent: <source>
 *   reportingInstance: <source>-<host name>
 *   action: Resource Blocked | Resource Passed | Resource Skipped | ...
 *   firstTimestamp, lastTimestamp, eventTime: null, count: 1
 *
 * Bounds: at most EVENTS_QUEUE_MAX Events wait; a full queue drops the new
 * one (counted, kube_events_dropped). The writer sends at most
 * EVENTS_RATE_PER_S Events a second (a token bucket with burst
 * EVENTS_BURST); a failed POST is not retried (Events are best effort, as
 * client-go's recorder with its spam filter).
 */
#ifndef GV_KUBE_EVENTS_H
#define GV_KUBE_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "kube/kube.h"

#define EVENTS_QUEUE_MAX   1000
#define EVENTS_RATE_PER_S  50
#define EVENTS_BURST	   100
#define EVENTS_MESSAGE_MAX 1024

enum kube_event_reason {
	KUBE_EVENT_POLICY_VIOLATION,
	KUBE_EVENT_POLICY_ERROR,
	KUBE_EVENT_POLICY_APPLIED,
	KUBE_EVENT_POLICY_SKIPPED,
	KUBE_EVENT_REASON_COUNT
};

/* "PolicyViolation", "PolicyError", "PolicyApplied", "PolicySkipped". */
const char *kube_event_reason_name(enum kube_event_reason r);

/*
 * Parses Kyverno's --omitEvents list ("PolicyApplied,PolicySkipped"; ""
 * omits nothing) into a mask of 1 << reason. false for an unknown name
 * (named in err).
 */
bool kube_events_parse_omit(const char *list, unsigned *mask, struct gv_err *err);

/* The default mask: PolicyApplied and PolicySkipped omitted, as Kyverno. */
#define KUBE_EVENTS_OMIT_DEFAULT                                                                   \
	((1u << KUBE_EVENT_POLICY_APPLIED) | (1u << KUBE_EVENT_POLICY_SKIPPED))

/* The object an Event is about. Strings borrowed for the call. */
struct kube_event_object {
	const char *api_version, *kind, *namespace, *name, *uid; /* namespace/uid may be NULL */
};

struct kube_events;

/* Starts the writer (NULL only when no thread can be made). omit: the mask. */
struct kube_events *kube_events_start(struct kube_client *c, unsigned omit);

/* Stops: Events still queued are dropped; frees. NULL is fine. */
void kube_events_stop(struct kube_events *ev);

/* Replaces the mask of omitted reasons (from any thread). */
void kube_events_set_omit(struct kube_events *ev, unsigned omit);

/*
 * Queues one Event (copies everything; never blocks). Returns false when
 * it was omitted by the mask or dropped (queue full). ev NULL: false.
 * action may be NULL.
 */
bool kube_events_emit(struct kube_events *ev, const struct kube_event_object *about,
		      enum kube_event_reason reason, const char *source, const char *action,
		      const char *message);

/* Events dropped because the queue was full, and Events written. */
uint64_t kube_events_dropped(const struct kube_events *ev);
uint64_t kube_events_written(const struct kube_events *ev);

#endif
