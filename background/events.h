/*
 * events.h - the Events of background scans, once per change: Kyverno's
 * scan controller writes its Events when it evaluates a resource anew,
 * and re-evaluates only what changed. gavel's namespace scans evaluate
 * again every object of a namespace in which something changed, so a
 * memo of what each (object, policy, rule) last gave keeps repeated
 * results from writing the same Events again.
 *
 * The memo holds at most SCAN_EVENTS_MEMO entries (each 16 bytes of
 * hashes): a full memo is cleared, so that after that many distinct
 * results an unchanged one may be written once more.
 */
#ifndef GV_BACKGROUND_EVENTS_H
#define GV_BACKGROUND_EVENTS_H

#include <stdbool.h>
#include <jansson.h>

#include "engine/engine.h"
#include "kube/events.h"

#define SCAN_EVENTS_MEMO (1u << 18)

struct scan_events;

/* ev borrowed (outlives the result); NULL ev gives NULL (no Events). */
struct scan_events *scan_events_new(struct kube_events *ev);
void scan_events_free(struct scan_events *se);

/*
 * The Events of one policy's response for the scanned object obj
 * (view_events_scan_rule for each rule result), but for the rule results
 * that are the same as the last ones written for this object (uid), policy
 * and rule, with the object at the same resourceVersion and the policy at
 * the same metadata.generation (status writes do not count).
 * Thread-safe. se NULL: nothing.
 */
void scan_events_response(struct scan_events *se, const json_t *obj,
			  const struct engine_response *resp);

/* Forgets everything (leadership lost: the next leader writes its own). */
void scan_events_reset(struct scan_events *se);

#endif
