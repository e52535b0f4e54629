/*
 * vpscan.h - CEL policies (policies.kyverno.io ValidatingPolicy and
 * NamespacedValidatingPolicy, view/view.h "CEL policies") in background
 * scans: which resources a policy lists, one namespace's scan of them into
 * a report_set, and what the schedules and the incremental scans need to
 * know about such a policy (its report ref, scan-state key, fingerprint).
 * cel-semantics.md sections 2.1 (scope), 2.6 (results; match-condition
 * skips are not reported in background), 2.7 (autogen kinds), 2.9
 * (background variables) and 7 (report entries).
 *
 * Resources. A policy lists, for every spec.matchConstraints.resourceRules
 * entry, each apiGroups x apiVersions x resources (apiVersions "*" = the
 * group's preferred version), and for a Pod policy whose autogen applies
 * (section 2.7) the controllers autogen.podControllers.controllers keeps
 * (all six by default). Entries a scan cannot list (a group "*", a
 * resource "*" or with a subresource) make the policy incomplete: its
 * results about objects it did not list are then never taken as stale.
 * Resources are resolved with the discovery documents (/api/v1,
 * /apis/<group>[/<version>]); one that is not served is skipped quietly
 * (debug log) and counts as empty.
 *
 * Threads: a plan is immutable once made; vpscan_namespace() may run for
 * several namespaces at once on one plan.
 */
#ifndef GV_BACKGROUND_VPSCAN_H
#define GV_BACKGROUND_VPSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "background/report.h"
#include "background/scan.h"
#include "common/gv.h"
#include "common/metrics.h"
#include "view/metrics.h"
#include "view/celhost.h"
#include "engine/vpolicy.h"
#include "kube/kube.h"
#include "view/view.h"

/* REPORT_SOURCE_VPOL, or REPORT_SOURCE_VAP for a ValidatingAdmissionPolicy. */
const char *vpscan_source(const struct vpol_policy *p);

/* The report `policy` of p: "name", or "namespace/name" for a NamespacedValidatingPolicy. Caller
 * frees. */
char *vpscan_policy_ref(const struct vpol_policy *p);

/*
 * The scan-state key (scanstate.h) of p: "ValidatingPolicy.<name>",
 * "NamespacedValidatingPolicy.<namespace>.<name>",
 * "ValidatingAdmissionPolicy.<name>". Caller frees.
 */
char *vpscan_state_key(const struct vpol_policy *p);

/*
 * Whether background scans evaluate p: evaluation.background.enabled
 * (default true) and not JSON mode (section 2.8: no objects to scan). A
 * ValidatingAdmissionPolicy always.
 */
bool vpscan_background(const struct vpol_policy *p);

/* What p's results depend on: scan_doc_fingerprint() of its document. */
uint64_t vpscan_fingerprint(const struct vpol_policy *p);

/*
 * Whether p's results may change with nothing it scans changing: it calls
 * a Kyverno library that reads the cluster, the network or the clock
 * (resource., http., globalContext., image., time.now, random). Such a
 * policy disables inputs digests, as engine_doc_reads_outside() does for
 * legacy policies.
 */
bool vpscan_reads_outside(const struct vpol_policy *p);

/*
 * report_prune_live() with st's policy set and every CEL policy of st:
 * the results of policies gone (legacy or CEL), of rules gone, and the
 * background-scan results of policies no longer scanned go. Returns the
 * number removed.
 */
size_t vpscan_prune(struct report_set *rs, const struct view_state *st);

/* ---- plans ---- */

struct vpscan_plan;

/*
 * Resolves the resources of pols[0..n) (borrowed; they must outlive the
 * plan) through client's discovery. Never fails: a group/version whose
 * discovery fails is skipped (logged at debug level) and the policies
 * listing it are incomplete.
 */
struct vpscan_plan *vpscan_plan_new(struct kube_client *client,
				    const struct vpol_policy *const *pols, size_t n);
void vpscan_plan_free(struct vpscan_plan *plan);

/* One namespace's scan. */
struct vpscan_args {
	struct kube_client *client;	/* borrowed: the lists */
	const struct view_state *state; /* namespace labels, config (resourceFilters) */
	const char *ns;			/* "" = cluster-scoped objects */
	const char *self;		/* gavel's namespace: never scanned */
	/* the policies to evaluate (each in the plan); with metadata_only, those whose objects
	 * make the digest */
	const struct vpol_policy *const *due;
	size_t ndue;
	struct report_set *rs;		/* where results go (not with metadata_only) */
	int64_t since;			/* report_retain_since()'s since */
	int batch_size;			/* list page size; <= 0: SCAN_DEFAULT_BATCH */
	bool metadata_only;		/* list metadata only, evaluate nothing: the digest alone */
	struct metrics_family *results; /* kyverno_policy_results_total, or NULL */
	/*
	 * borrowed, or NULL: the context loader that answers Kyverno's CEL
	 * libraries (view/celhost.h; opened once per call, no overall
	 * deadline); NULL: every library call is an evaluation error
	 */
	const struct view_context *context;
};

struct vpscan_stats {
	size_t listed, filtered, evaluated, results, requests;
	bool forbidden; /* some collection answered 403 */
	/*
	 * "sha256:<hex>" of every object listed (target key, uid and
	 * resourceVersion, in listing order, filtered ones included); "" when
	 * a listing failed or restarted.
	 */
	char inputs[SCAN_INPUTS_LEN];
};

/*
 * Scans namespace a->ns for a->due: each resource listed once (pages of
 * the batch size), gavel's namespace and resourceFilters left out, every
 * object evaluated with vpol_evaluate (Kyverno's CEL libraries through
 * a->context's hooks; operation CREATE, empty userInfo,
 * namespaceObject from the state's labels, the CEL PolicyExceptions in
 * force); a NamespacedValidatingPolicy only in its namespace. Each
 * (object, policy) gets report_replace() of its results (rule "" /
 * "exception" / "evaluation" / "match", source vpscan_source(), process
 * "background scan", severity/category/scored from the annotations;
 * match-condition skips left out). A complete policy then gets
 * report_retain_since() with the uids it evaluated (none when it has no
 * resource in the namespace). A 403 or 404 skips the collection; other API
 * errors return GV_ENET (what was evaluated is in rs).
 */
enum gv_code vpscan_namespace(const struct vpscan_plan *plan, const struct vpscan_args *a,
			      struct vpscan_stats *stats, struct gv_err *err);

#endif
