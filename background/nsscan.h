/*
 * nsscan.h - the background scan, namespace by namespace, in bounded
 * memory: what `gavel scan` runs once and the reconciler of `gavel serve`
 * runs for the policies due in each cycle.
 *
 * Cluster-scoped objects first, then the namespaces in name order,
 * NSSCAN_AT_ONCE side by side. For each namespace: the metadata of its
 * reports is read; when they were written from the very inputs the
 * namespace has now (report_inputs_unchanged: the same objects at the same
 * resourceVersions, listed metadata only, and the same policies,
 * exceptions, resourceFilters, labels and gavel build), that is all.
 * Otherwise its objects are scanned (scanner_run with
 * scan_options.only_namespace) into a set of their own that records the
 * changes (a journal); when every report carries the digest of this very
 * scan (report_scan_unchanged), that is all. Otherwise the reports are
 * read (report_load scoped to the namespace), pruned, the scan is replayed
 * on them and they are written with the new digests. So memory holds one
 * namespace's reports and one list page per namespace in progress,
 * whatever the size of the cluster.
 *
 * Before the namespaces, each namespaced resource the due policies list is
 * asked once, metadata only with limit=1, whether the cluster has any
 * object of it: those with none are not listed per namespace.
 *
 * The reconciler scans only the policies due (nsscan_input.due) and keeps
 * a memo (struct nsscan_memo) of the inputs under which each policy's
 * results of each namespace were last made, so that a cycle with nothing
 * changed evaluates nothing and writes nothing even when the policies due
 * differ from cycle to cycle; the memo holds a digest per namespace and
 * policy, not objects.
 */
#ifndef GV_BACKGROUND_NSSCAN_H
#define GV_BACKGROUND_NSSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "background/report.h"
#include "background/scan.h"
#include "common/gv.h"
#include "common/metrics.h"
#include "engine/engine.h"
#include "kube/kube.h"
#include "view/view.h"

/*
 * Namespaces scanned side by side: while one waits for the API server to
 * store its reports, the other is listed and evaluated.
 */
#define NSSCAN_AT_ONCE 2

/* What a scan is asked. */
struct nsscan_options {
	struct kube_client *client;	    /* borrowed, required */
	const struct view_context *context; /* borrowed; NULL = context entries skipped */
	const char *namespace;		    /* gavel's: never scanned; NULL = "gavel" */
	int batch_size, workers;
	size_t resource_limit; /* objects per run, 0 = none (one namespace at a time then) */
	bool split;	       /* --split-policy-report */
	/*
	 * Borrowed, may be NULL (= split alone): the reports' layout, source
	 * and allowed results (report.h); its split wins over `split`.
	 */
	const struct report_options *report;
	/*
	 * After each namespace, the allocator's free memory goes back to the
	 * system (gv_heap_release): for a long-running process, whose resident
	 * memory would otherwise add up the peaks of the threads that scanned.
	 */
	bool release_heap;
	bool dry_run;	/* nothing is written */
	bool no_inputs; /* no inputs digests: every object is evaluated */
	/*
	 * Borrowed, may be NULL: proceed() is asked before each page and each
	 * write (false: the run stops, what is not written is dropped);
	 * page_done() after each page (calls are made one at a time).
	 */
	const struct scan_hooks *hooks;
	struct metrics_family *results, *processed; /* scan_options' metrics; may be NULL */
	struct scan_events *events;		    /* scan_options.events; may be NULL */
	struct metrics_family *duration;	    /* scan_options.duration; may be NULL */
	/*
	 * When set, called with the reports of each namespace scanned
	 * (report_render_all: an array, borrowed for the call), the
	 * cluster-scoped ones first, then the namespaces in order, one call
	 * at a time, as soon as the namespace and those before it are done
	 * (memory: a few namespaces' reports, not the cluster's). Reports
	 * found unchanged are emitted as they are stored. After an error, the
	 * namespaces done before it have been emitted.
	 */
	void (*emit)(void *ud, const json_t *reports);
	void *emit_ud;
};

/* What one run scans (all borrowed). */
struct nsscan_input {
	const struct view_state *state; /* policy set, namespace labels, config */
	const json_t *namespaces;	/* array of the namespaces' names, sorted */
	const json_t *config_data;	/* gavel's ConfigMap data (resourceFilters) */
	const json_t *exceptions;	/* the PolicyException documents of the set */
	/* every background policy of the set, and those to evaluate now (a subset) */
	const struct engine_policy *const *all;
	size_t nall;
	const struct engine_policy *const *due;
	size_t ndue;
	/*
	 * The CEL policies (ValidatingPolicy, NamespacedValidatingPolicy:
	 * vpscan.h) likewise: every one background scans evaluate, and those
	 * due now (a subset). Their results go into the same reports (one per
	 * namespace, or per policy with split), their objects and fingerprints
	 * into the same inputs digests and memo.
	 */
	const struct vpol_policy *const *vall;
	size_t nvall;
	const struct vpol_policy *const *vdue;
	size_t nvdue;
};

/* Figures of a run; phase times are summed over the namespaces. */
struct nsscan_stats {
	size_t policies; /* background policies scanned */
	struct scan_stats scan;
	struct report_stats reports;
	size_t requests;      /* every API request: state, reports, scan */
	size_t results;	      /* results in the reports */
	double seconds;	      /* the whole run */
	double fetch_seconds; /* of which reading policies, namespaces, ConfigMap */
	double load_seconds;  /* reading gavel's reports (report_load) */
	double flush_seconds; /* writing the reports and the scan state */
};

/*
 * The reconciler's memory between runs: per namespace and policy, the
 * inputs digest its results were last made (or found current) under.
 * Bounded by namespaces times policies. Not thread-safe: one run at a time.
 */
struct nsscan_memo;
struct nsscan_memo *nsscan_memo_new(void);
void nsscan_memo_free(struct nsscan_memo *m);
/* Forgets everything (leadership lost: another replica may write meanwhile). */
void nsscan_memo_clear(struct nsscan_memo *m);
/*
 * Forgets namespace ns ("" = cluster-scoped objects; NULL is "") from the
 * next nsscan_run on: admission results were written into its reports, so
 * reports found current before need not be now (an object admitted and
 * deleted between two runs leaves the namespace's objects as they were,
 * and only a scan removes its results). The one function of the memo that
 * any thread may call, also during a run.
 */
void nsscan_memo_forget(struct nsscan_memo *m, const char *ns);

/*
 * One run over in (see the top of this file). memo (may be NULL, then
 * every due policy is evaluated unless the reports carry current inputs):
 * read and updated. stats (may be NULL) is filled. GV_ENET when the API
 * server cannot be used (the namespaces done before keep their reports
 * written); GV_OK when hooks->proceed() stopped the run
 * (stats->scan.stopped).
 */
enum gv_code nsscan_run(const struct nsscan_options *o, const struct nsscan_input *in,
			struct nsscan_memo *memo, struct nsscan_stats *stats, struct gv_err *err);

/*
 * Removes, namespace by namespace, the results of policies that are gone,
 * rules that are gone and background: false policies (report_prune), and
 * writes the reports that changed. *pruned (may be NULL): results removed.
 * GV_ENET on API errors.
 */
enum gv_code nsscan_prune(const struct nsscan_options *o, const struct nsscan_input *in,
			  size_t *pruned, struct nsscan_stats *stats, struct gv_err *err);

/*
 * `gavel scan`: reads the cluster state once (clusterstate.h), runs every
 * background policy (nsscan_run without a memo), then records every
 * policy's last scan in the scan-state ConfigMap unless dry_run. stats is
 * filled (may not be NULL). GV_ENET on API errors.
 */
enum gv_code nsscan_once(const struct nsscan_options *o, struct nsscan_stats *stats,
			 struct gv_err *err);

#endif
