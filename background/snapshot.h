/*
 * snapshot.h - the cluster as gavel judges it: kyverno.io ClusterPolicy,
 * Policy and PolicyException objects, the labels of every Namespace and
 * gavel's ConfigMap, kept current with kube informers (list + watch) and
 * published as an immutable view_state (view/view.h).
 *
 * On a change a background thread (changes within SNAPSHOT_SETTLE_MS are
 * coalesced) builds what changed: a new engine_policyset (policies that do
 * not compile are logged with their name and JSON pointer and left out;
 * unchanged policies are reused, not recompiled, keyed by uid and
 * resourceVersion), the {namespace: labels} map, or the compiled config;
 * then swaps the state pointer under a mutex. Readers (admission requests,
 * the reconciler's scans) take a reference and keep a consistent view for
 * as long as they hold it. DESIGN.md "Background: Snapshots".
 *
 * API versions: ClusterPolicy and Policy at the group's preferred version
 * (kyverno.io/v1); PolicyException at kyverno.io/v2, else v2beta1;
 * policies.kyverno.io ValidatingPolicy, NamespacedValidatingPolicy and
 * (CEL) PolicyException at that group's preferred version, compiled into
 * the state's view_vpolset (view/view.h; the CEL PolicyExceptions, like
 * kyverno.io ones, are waited for at most OPTIONAL_SYNC_WAIT_S);
 * ValidatingAdmissionPolicy and its bindings at the first
 * admissionregistration.k8s.io version served of v1, v1beta1, v1alpha1,
 * read as v1 (clusterstate_vap_to_v1, background/clusterstate.h). A kind
 * whose CRD is not installed counts as empty, and discovery is retried
 * every SNAPSHOT_REDISCOVER_S seconds so that a CRD installed later is
 * picked up.
 */
#ifndef GV_BACKGROUND_SNAPSHOT_H
#define GV_BACKGROUND_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "view/view.h"
#include "common/gv.h"
#include "engine/engine.h"
#include "kube/kube.h"

struct metrics_registry;

#define SNAPSHOT_SETTLE_MS    100
#define SNAPSHOT_REDISCOVER_S 30
#define SNAPSHOT_EXPECT_MS    2000
#define SNAPSHOT_NAMESPACE_MS 1000

struct snapshot_config {
	struct kube_client *client; /* borrowed; must outlive the snapshot */
	const char *namespace;	    /* gavel's namespace (copied); NULL = "gavel" */
	const char *configmap;	    /* ConfigMap name in that namespace (copied); NULL = "gavel" */
	/*
	 * Policies that are part of every set besides the cluster's (serve
	 * --policies in cluster mode); a reference is taken to each.
	 */
	struct engine_policy *const *static_policies;
	size_t nstatic;
};

struct snapshot;

/*
 * Resolves the kinds through discovery and starts the informers and the
 * rebuild thread. Returns GV_ENET with err set when the API server cannot
 * be reached for discovery at all (a missing CRD is not an error). The
 * first state is published once every informer has listed once.
 */
enum gv_code snapshot_start(const struct snapshot_config *cfg, struct snapshot **out,
			    struct gv_err *err);

/* Stops the informers and the thread; frees s. States still referenced stay valid. */
void snapshot_stop(struct snapshot *s);

/* A new reference to the current state, or NULL before the first one is published. */
struct view_state *snapshot_state(struct snapshot *s);

/*
 * Writes the API server is about to store, so that a request that follows
 * them is judged with them (a PolicyException created, then the resource
 * it exempts; DESIGN.md "Background: Snapshots").
 *
 * snapshot_expect: a ClusterPolicy, Policy or PolicyException write that
 * gavel's /validate-policy admitted (object borrowed; old_object borrowed,
 * the stored object of an UPDATE, NULL for a CREATE). It is awaited until a
 * published state holds it (same namespace and name, the object's uid when
 * it has one, a resourceVersion other than old_object's), at most
 * SNAPSHOT_EXPECT_MS (the write may still be refused after gavel admitted
 * it). An UPDATE that leaves spec, labels and annotations as they were is
 * not awaited (the server may store nothing). While some write is awaited,
 * changes are built at once rather than after SNAPSHOT_SETTLE_MS.
 *
 * snapshot_state_fresh: snapshot_state() once no write is awaited (or
 * those awaited expired) and, when namespace is not NULL or "", once the
 * state has that namespace's labels (a request in a namespace just
 * created: at most SNAPSHOT_NAMESPACE_MS); waiting at most max_ms
 * milliseconds in all.
 */
void snapshot_expect(struct snapshot *s, const json_t *object, const json_t *old_object);
struct view_state *snapshot_state_fresh(struct snapshot *s, long max_ms, const char *namespace);

/*
 * snapshot_state() and, taken together with it, the PolicyException
 * documents its policy set was built from (*exceptions: a new reference to
 * an array; NULL when the state is NULL).
 */
struct view_state *snapshot_state_exceptions(struct snapshot *s, json_t **exceptions);

/*
 * A new reference to the `data` object of gavel's ConfigMap as last seen
 * (an empty object when it does not exist), for the reconciler's own keys
 * (backgroundScanInterval, backgroundScanSuspend, ...).
 */
json_t *snapshot_config_data(struct snapshot *s);

/*
 * Counts policy changes in r from now on: kyverno_policy_changes_total
 * (view/metrics.h), one "created", "updated" or "deleted" for each
 * ClusterPolicy and Policy a rebuild finds added, with another spec, or
 * gone. r borrowed (outlives s).
 */
void snapshot_set_metrics(struct snapshot *s, struct metrics_registry *r);

/*
 * A new reference to an array of the ClusterPolicy and Policy documents
 * of the last published state, as listed (shared: read only), those that
 * did not compile included; [] before the first state. For the policy
 * status and webhook configuration writers.
 */
json_t *snapshot_policy_docs(struct snapshot *s);

/* Increases each time a new state is published (0 before the first). */
uint64_t snapshot_generation(struct snapshot *s);

/*
 * Builds a policy set from policy and exception documents (arrays,
 * borrowed; NULL = none) plus static policies, as the snapshot does:
 * documents that do not compile are logged and left out. *ncompiled
 * (may be NULL) receives the number of policies in the set. Exposed for
 * tests and for gavel's standalone mode.
 */
struct engine_policyset *snapshot_build_policyset(const json_t *policies, const json_t *exceptions,
						  struct engine_policy *const *static_policies,
						  size_t nstatic, size_t *ncompiled);

/* Builds {namespace name: labels object} from Namespace objects (array, borrowed). */
json_t *snapshot_build_namespaces(const json_t *namespaces);

#endif
