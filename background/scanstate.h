/*
 * scanstate.h - the persisted scan state: when each policy's background
 * scan last completed, kept in the cluster in a ConfigMap owned by gavel
 * (SCANSTATE_CONFIGMAP in gavel's namespace), so that a restart, or
 * another replica taking over leadership, keeps every schedule's base
 * (DESIGN.md "Background: Schedules").
 *
 * Shape: one `data` key per policy, its value a JSON object:
 *
 *   data:
 *     ClusterPolicy.require-labels:
 * '{"lastScan":"2026-01-01T10:00:00Z","fingerprint":"9f3c...","uid":"..."}'
 *     Policy.team-a.require-team:   '{...}'
 *
 * Keys are "ClusterPolicy.<name>" and "Policy.<namespace>.<name>"
 * (ConfigMap keys allow [-._a-zA-Z0-9]; a namespace has no '.', so the
 * key is unambiguous). lastScan is RFC 3339 UTC (seconds); fingerprint is
 * scan_policy_fingerprint() in 16 hex digits (a policy whose rules changed
 * since is scanned again at once); uid is the policy's metadata.uid (a
 * policy deleted and created again under the same name starts afresh).
 * Unknown members are ignored, so later versions can add some.
 *
 * Writes are JSON merge patches of the keys that changed (null removes a
 * key), creating the ConfigMap when it does not exist: concurrent writers
 * of different keys do not lose each other's entries.
 */
#ifndef GV_BACKGROUND_SCANSTATE_H
#define GV_BACKGROUND_SCANSTATE_H

#include <stdint.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine.h"
#include "kube/kube.h"

#define SCANSTATE_CONFIGMAP "gavel-scan-state" /* in gavel's namespace */

struct scanstate_entry {
	time_t last_scan;     /* end of the last completed scan (UTC seconds); 0 = never */
	uint64_t fingerprint; /* the policy's scan_policy_fingerprint() then; 0 = unknown */
	char uid[128];	      /* the policy's metadata.uid then; "" = unknown */
};

/* The data key of a policy: "ClusterPolicy.<name>" or "Policy.<ns>.<name>". Caller frees. */
char *scanstate_key(const struct engine_policy *p);
/* The same from its parts (ns NULL or "" = a ClusterPolicy). Caller frees. */
char *scanstate_key_of(const char *ns, const char *name);

/* The JSON text of an entry. Caller frees. */
char *scanstate_encode(const struct scanstate_entry *e);

/*
 * Parses an entry. GV_EINVAL with the reason when text is not a JSON
 * object or lastScan is missing or not an RFC 3339 time; a malformed
 * fingerprint or uid is left 0 / "".
 */
enum gv_code scanstate_decode(const char *text, struct scanstate_entry *e, struct gv_err *err);

/*
 * Reads the ConfigMap ns/name: *data receives a new reference to its
 * `data` object ({} when it does not exist or has none). GV_ENET on API
 * errors other than 404.
 */
enum gv_code scanstate_read(struct kube_client *client, const char *ns, const char *name,
			    json_t **data, struct gv_err *err);

/*
 * Applies changes (borrowed object: key -> string sets, key -> null
 * removes) with a merge patch; creates the ConfigMap (labelled
 * app.kubernetes.io/managed-by: gavel) when it does not exist. Nothing is
 * sent for an empty object. GV_ENET on API errors.
 */
enum gv_code scanstate_write(struct kube_client *client, const char *ns, const char *name,
			     const json_t *changes, struct gv_err *err);

/* Looks up the entry of p in data (borrowed). False when absent or malformed. */
bool scanstate_lookup(const json_t *data, const struct engine_policy *p, struct scanstate_entry *e);

#endif
