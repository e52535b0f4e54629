/*
 * scan.h - one background scan cycle: the kinds a policy matches, listing
 * them page by page, evaluating the objects with a worker pool in
 * ENGINE_BACKGROUND mode, and merging the results into a report_set
 * (background/report.h). DESIGN.md "Background: Scan"; kyverno-semantics.md
 * section 7.2 (what a scan does) and 9 (autogen kinds).
 *
 * Pieces, from the inside out:
 *
 *   scan_kind_parse     one `kinds` entry -> group/version/kind to discover
 *   scan_policy_kinds   every kind a policy's validate rules match, autogen
 *                       kinds included
 *   scan_cache          per listed collection (a "target": resource and
 *                       namespace): the objects of its last complete
 *                       listing, and for each the fingerprint of its last
 *                       evaluation per policy (incremental scans, deleted
 *                       objects)
 *   scanner             the long-lived scanner: caches, the resource-limit
 *                       cursor, the worker pool; scanner_run() is one cycle
 *
 * A scanner is used by one thread at a time (the reconciler's, or `gavel
 * scan`); it starts its worker threads for each cycle and joins them
 * before returning.
 */
#ifndef GV_BACKGROUND_SCAN_H
#define GV_BACKGROUND_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "view/view.h"
#include "view/metrics.h"
#include "common/metrics.h"
#include "background/report.h"
#include "background/events.h"
#include "common/gv.h"
#include "engine/engine.h"
#include "kube/kube.h"

#define SCAN_DEFAULT_BATCH	 500 /* objects per list page (--background-scan-batch-size) */
#define SCAN_DEFAULT_WORKERS	 2   /* evaluation threads (--background-scan-workers) */
#define SCAN_DEFAULT_PARSE_BATCH 64  /* objects of a page parsed at a time */
#define SCAN_MAX_BATCH		 5000
#define SCAN_MAX_WORKERS	 64

/* ---- kinds ---- */

/*
 * A kind to resolve through discovery. group NULL = any group (core
 * first), version NULL = any version (the preferred one). Strings owned.
 */
struct scan_kind {
	char *group, *version, *kind;
};

/*
 * Parses one entry of a rule's `kinds` as Kyverno's ParseKindSelector does
 * (kyverno-semantics.md section 2.3): "Kind", "v1/Kind", "group/v1/Kind",
 * with a wildcard group or version ("*") becoming NULL. Returns false (out
 * untouched) for entries a scan cannot list: a subresource ("Pod/status",
 * "Pod.exec", "v1/Pod/exec"), a kind with a wildcard ("*", "Pod*", "*" slash "*"),
 * an empty string.
 */
bool scan_kind_parse(const char *sel, struct scan_kind *out);
void scan_kind_release(struct scan_kind *k);

/*
 * The kinds a policy's background scan lists, without duplicates, in the
 * order first met: for every validate rule that is background-safe
 * (engine_policy_rule_background_safe), the `kinds` of match.resources,
 * match.any[].resources and match.all[].resources of the policy document;
 * for the autogen rules the compiled policy has (rules after the
 * document's, kyverno-semantics.md section 9.2): apps/v1 DaemonSet,
 * Deployment, StatefulSet, ReplicaSet, batch/v1 Job, v1
 * ReplicationController (restricted to the annotation
 * pod-policies.kyverno.io/autogen-controllers when it lists kinds) for
 * "autogen-<rule>", batch/v1 CronJob for "autogen-cronjob-<rule>".
 *
 * `complete` is false when some rule's kinds are not all in the list (a
 * rule that is not background-safe, a subresource or wildcard kind): the
 * scan then cannot tell that the policy's results about objects it did not
 * list are stale, so it does not use report_retain() for the policy.
 */
struct scan_kinds {
	struct scan_kind *v; /* owned */
	size_t n;
	bool complete;
};

void scan_policy_kinds(const struct engine_policy *p, struct scan_kinds *out);
void scan_kinds_release(struct scan_kinds *k);

/* "<group>/<version>/<resource>" of r (group "" for the core group): scan_options.empty_resources.
 * Caller frees. */
char *scan_resource_key(const struct kube_resource *r);

/* ---- fingerprints ---- */

/* FNV-1a 64 of n bytes, continuing from h (start with SCAN_HASH_SEED). */
#define SCAN_HASH_SEED 0xcbf29ce484222325ULL
uint64_t scan_hash(const void *p, size_t n, uint64_t h);
/* Of a NUL-terminated string (NULL hashes as ""), with a terminator so "ab"+"c" != "a"+"bc". */
uint64_t scan_hash_str(const char *s, uint64_t h);
/* Of a JSON value with sorted keys (NULL hashes as null). */
uint64_t scan_hash_json(const json_t *v, uint64_t h);

/*
 * What the results of the policy document doc (borrowed; kind, namespace
 * and name as the policy set knows them, NULL hashing as "") depend on:
 * kind, namespace, name, uid, its annotations (but kubectl's
 * last-applied-configuration) and its spec without the scheduling fields
 * (scanInterval, scanSchedule, scanSuspend), so that changing a schedule
 * neither re-evaluates objects nor triggers a scan. Equal documents give
 * equal fingerprints on every replica. For every policy language.
 */
uint64_t scan_doc_fingerprint(const char *kind, const char *ns, const char *name,
			      const json_t *doc);

/* scan_doc_fingerprint() of a legacy (kyverno.io) policy. */
uint64_t scan_policy_fingerprint(const struct engine_policy *p);

/* ---- the incremental cache of one target ---- */

/*
 * The objects of one listed collection. A listing visits objects
 * (scan_cache_visit), which moves each from the last complete listing into
 * the current one; scan_cache_finish() ends the listing: objects not
 * visited are gone (deleted) and returned. Per object the cache keeps, for
 * each policy (by a 64-bit key), the fingerprint of what its last
 * evaluation saw (object resourceVersion, namespace labels, policy
 * fingerprint, exceptions): an object whose fingerprint is unchanged need
 * not be evaluated again for that policy.
 */
struct scan_cache;
struct scan_entry; /* one object in the current listing */

struct scan_cache *scan_cache_new(void);
void scan_cache_free(struct scan_cache *c);

/*
 * Visits object uid in the current listing and returns its entry (owned
 * by the cache; valid until the next visit, drop or finish). An object
 * already visited in this listing is returned as is.
 */
struct scan_entry *scan_cache_visit(struct scan_cache *c, const char *uid);

/* Whether the entry records fingerprint fp for policy key pk. */
bool scan_entry_fresh(const struct scan_entry *e, uint64_t pk, uint64_t fp);
/* Records fp for pk (replacing an older one). */
void scan_entry_set(struct scan_entry *e, uint64_t pk, uint64_t fp);
/* Forgets pk (evaluation failed: try again next time). */
void scan_entry_forget(struct scan_entry *e, uint64_t pk);
/*
 * Keeps only the policy keys for which keep(ud, pk) is true (policies that
 * no longer exist). keep NULL keeps all.
 */
void scan_entry_prune(struct scan_entry *e, bool (*keep)(void *ud, uint64_t pk), void *ud);

/*
 * Removes object uid from both listings (it is filtered out now). Returns
 * true when it was known (it was scanned before: its results are stale).
 */
bool scan_cache_drop(struct scan_cache *c, const char *uid);

/*
 * Ends the current listing: it becomes the complete one. Returns the uids
 * of the objects of the previous complete listing that were not visited
 * (new array of owned strings, *n of them; NULL when none): deleted objects.
 * The first finish of a cache returns none (nothing was known).
 */
char **scan_cache_finish(struct scan_cache *c, size_t *n);

/*
 * Forgets the listing in progress without finishing it: the objects it
 * visited stay known (as in the complete listing).
 */
void scan_cache_abandon(struct scan_cache *c);

/* Whether a listing ever finished (the cache knows every object). */
bool scan_cache_complete(const struct scan_cache *c);
/* Whether a listing is in progress (visits since the last finish/abandon). */
bool scan_cache_listing(const struct scan_cache *c);
/* Objects known: the complete listing and the current one. */
size_t scan_cache_count(const struct scan_cache *c);
/*
 * Appends the uids of every known object (borrowed from the cache, valid
 * until it changes) to *v (grown with gv_xrealloc), *n updated.
 */
void scan_cache_uids(const struct scan_cache *c, const char ***v, size_t *n);

/* ---- the scanner ---- */

struct scan_options {
	/* borrowed, may be NULL: hooks for the context entries that read the cluster, opened
	 * for each page */
	const struct view_context *context;
	int batch_size; /* list page size; <= 0: SCAN_DEFAULT_BATCH */
	int workers;	/* evaluation threads; <= 0: SCAN_DEFAULT_WORKERS */
	/*
	 * Objects of a page parsed, evaluated and merged at a time; <= 0:
	 * SCAN_DEFAULT_PARSE_BATCH. The page is kept as text (about 4 KB a
	 * Pod; gv_json_parse_list) and a parsed Pod takes about 30 KB, so
	 * memory grows with the page's text, not its parsed size. At least
	 * batch_size: each page is parsed whole as it arrives and freed at
	 * once, for a process whose memory is its reports anyway (the
	 * reconciler): in a heap that large, glibc's allocator reuses one
	 * large run of frees faster than many small ones (a 10k-Pod cycle
	 * takes about 1.5 times as long in batches).
	 */
	int parse_batch;
	bool incremental;      /* skip objects whose fingerprint is unchanged */
	size_t resource_limit; /* objects per cycle, 0 = no limit */
	/*
	 * Request the next list page while the current one is evaluated: faster
	 * when the API server is remote and CPUs are free, at the cost of a
	 * second page in memory (its text, about 2 MB per 500 Pods; parsed
	 * when whole pages are, about 15 MB) and a
	 * thread of its own for the list requests. Off: memory is bounded by
	 * one page, requested by the thread that calls scanner_run().
	 */
	bool prefetch;
	const char *skip_namespace; /* gavel's own namespace: never scanned (copied); NULL = none */
	/*
	 * Only the objects of one namespace (copied): a ClusterPolicy's
	 * namespaced kinds are listed in that namespace alone, its
	 * cluster-scoped kinds not at all, a Policy only when it lives there;
	 * "" = only cluster-scoped objects. NULL = everything (the default).
	 * For `gavel scan`, which goes namespace by namespace with one
	 * report_set each (memory bounded by the largest namespace, not by the
	 * cluster). The set given to scanner_run() must then hold that
	 * namespace's reports alone: report_retain() runs with the uids of
	 * the namespace's objects, and a policy that has no target in the
	 * namespace, but would have some elsewhere, gets report_retain() with
	 * no uids, so that its stale results in those reports go too.
	 */
	const char *only_namespace;
	/*
	 * With only_namespace: resources ("<group>/<version>/<resource>", group
	 * "" for the core group; borrowed, must outlive the scanner) known to
	 * have no object anywhere, so not listed in the namespace (`gavel scan`
	 * asks each kind once for the whole cluster instead of once per
	 * namespace). An object created after that question is left to the
	 * next scan; retain_since keeps its admission results meanwhile. The
	 * namespace's results about objects of such a resource, of any policy
	 * and process, go as a listing with no uids would make them go
	 * (report_retain_objects): the last object of a kind deleted.
	 */
	const char *const *empty_resources;
	size_t nempty;
	/*
	 * report_retain_since()'s `since` for the policies a cycle evaluated
	 * in full (Unix seconds; 0 = report_retain()): results newer than that
	 * are not removed as stale.
	 */
	int64_t retain_since;
	/*
	 * Metrics (borrowed, may be NULL): kyverno_policy_results_total (the
	 * admission handler's family: policy_name, rule_name, rule_result,
	 * policy_validation_mode = "background", resource_kind,
	 * resource_namespace, resource_request_operation = "") and
	 * gavel_background_scan_resources_processed_total (no labels).
	 */
	struct metrics_family *results;
	struct metrics_family *processed;
	struct metrics_family *duration; /* kyverno_policy_execution_duration_seconds, or NULL */
	/*
	 * Borrowed, may be NULL: the Events of the results of each object
	 * evaluated (background/events.h: once per change).
	 */
	struct scan_events *events;
	/*
	 * Record the digest of what the cycle listed (scan_stats.inputs,
	 * scanner_inputs()): `gavel scan` stamps it on the reports it writes
	 * so that the next scan can tell, from metadata-only lists, that
	 * nothing it would evaluate has changed.
	 */
	bool inputs;
};

/* Optional callbacks of one cycle; ud is passed through. */
struct scan_hooks {
	/* Asked before each page; false stops the cycle (leadership lost, shutdown). */
	bool (*proceed)(void *ud);
	/* Called on the scanning thread after each page (e.g. to drain the admission queue). */
	void (*page_done)(void *ud);
	void *ud;
};

/* "sha256:" and 64 hex digits, NUL-terminated. */
#define SCAN_INPUTS_LEN GV_SHA256_TEXT_LEN

/* What one cycle did for one due policy. */
struct scan_outcome {
	size_t targets;	    /* collections listed for it */
	size_t objects;	    /* objects of its kinds seen (filtered ones not counted) */
	size_t evaluated;   /* objects evaluated for it */
	size_t unchanged;   /* objects skipped: fingerprint unchanged */
	size_t failed;	    /* objects the engine could not evaluate */
	bool skipped_kinds; /* some kind was forbidden (403) or could not be resolved */
	bool retained;	    /* report_retain() ran for it (a first complete listing) */
};

struct scan_stats {
	size_t requests;       /* API requests made (discovery answered from cache not counted) */
	size_t pages;	       /* list pages read */
	size_t listed;	       /* objects received */
	size_t filtered;       /* left out: resourceFilters, gavel's namespace, no uid */
	size_t evaluated;      /* objects evaluated (once each, whatever the number of policies) */
	size_t unchanged;      /* objects not evaluated: unchanged for every due policy */
	size_t failed;	       /* objects the engine could not evaluate */
	size_t results;	       /* rule results put into the reports */
	size_t deleted;	       /* objects found gone: their results removed */
	size_t targets;	       /* collections visited */
	size_t forbidden;      /* collections skipped with 403 */
	bool partial;	       /* the resource limit stopped the cycle; the next one continues */
	bool stopped;	       /* proceed() said stop */
	double seconds;	       /* the whole cycle, wall clock */
	double list_seconds;   /* of which waiting for list pages (request and parse) */
	double eval_seconds;   /* of which evaluating pages on the workers */
	double commit_seconds; /* of which merging results into the reports */
	/*
	 * With scan_options.inputs: "sha256:<hex>" of every object listed, in
	 * visit order (target key, uid and resourceVersion of each, filtered
	 * ones included); "" when the cycle did not see every object once
	 * (partial, stopped, a target skipped or listed again after a 410, an
	 * API error).
	 */
	char inputs[SCAN_INPUTS_LEN];
};

struct scanner;

/*
 * Makes a scanner (opt is copied) that sends its requests through a child
 * of client (kube_client_new_child: they count in scanner_requests();
 * client must outlive the scanner; tests: kube_client_new_transport).
 */
struct scanner *scanner_new(struct kube_client *client, const struct scan_options *opt);
void scanner_free(struct scanner *s);

/*
 * Forgets every cache and the cursor (leadership lost: the reports may
 * change behind our back; the next cycle evaluates everything).
 */
void scanner_reset(struct scanner *s);

/*
 * One cycle for the policies due[0..ndue) (pointers into st's policy set;
 * background: false policies are ignored):
 *
 *  1. the kinds of each policy (scan_policy_kinds) are resolved through
 *     discovery into targets: (resource, "" = all namespaces) for a
 *     ClusterPolicy, (resource, its namespace) for a Policy, namespaced
 *     kinds only for a Policy. A kind that is not served is skipped
 *     (debug log); a resolution error is logged and the kind skipped;
 *  2. the PolicyExceptions are listed once for their fingerprint (incremental
 *     scans only);
 *  3. targets are visited in key order starting at the cursor (where the
 *     previous cycle stopped when a resource limit is set), each listed
 *     with limit = batch size and continue tokens; a page's objects are
 *     filtered (gavel's namespace, resourceFilters of st's config,
 *     objects without uid), checked against the incremental cache, and
 *     the others evaluated by the worker pool (engine_evaluate,
 *     ENGINE_BACKGROUND, CREATE, namespace labels from st; a Namespace
 *     object gets its own labels); the responses of the due policies go
 *     into rs (report_put_response). An object the engine cannot evaluate
 *     is logged with its kind, name and reason and skipped;
 *  4. a 403 on a target is logged and the target skipped; a 410 (expired
 *     continue token) restarts the listing, skipping what was processed;
 *     other API errors (after kube_request's retries) end the cycle with
 *     GV_ENET: what was evaluated is in rs, nothing else changes;
 *  5. a finished listing reports objects that disappeared since the last
 *     one (report_delete_object); a policy whose kinds are complete and
 *     one of whose targets finished its first listing gets
 *     report_retain() with every uid its targets know (objects deleted
 *     while nobody was scanning).
 *
 * out (may be NULL) has ndue elements. stats may be NULL. Returns GV_OK
 * also when some targets were skipped (403, not served) or proceed()
 * stopped the cycle (stats->stopped).
 */
enum gv_code scanner_run(struct scanner *s, const struct view_state *st,
			 const struct engine_policy *const *due, size_t ndue, struct report_set *rs,
			 const struct scan_hooks *hooks, struct scan_outcome *out,
			 struct scan_stats *stats, struct gv_err *err);

/*
 * The digest a cycle with scan_options.inputs would record in
 * scan_stats.inputs if it ran now, from metadata-only lists (the same
 * targets, visited in the same order, pages of the batch size) without
 * evaluating anything: equal digests mean the cycle would see the very
 * same objects, at the same resourceVersions. *objects (may be NULL): the
 * objects listed. out is "" when the digest cannot be told (a target
 * cannot be listed, a 410, an error: logged at debug level); GV_OK always,
 * since a full cycle is then the answer. Changes no cache's content.
 */
enum gv_code scanner_inputs(struct scanner *s, const struct view_state *st,
			    const struct engine_policy *const *due, size_t ndue,
			    char out[SCAN_INPUTS_LEN], size_t *objects);

/*
 * The order in which a cycle visits n targets whose keys are sorted:
 * the index of the first key >= cursor (0 when cursor is NULL or every key
 * is smaller). Pure; exposed for tests.
 */
size_t scan_cursor_start(const char *const *keys, size_t n, const char *cursor);

/* The cursor the next cycle starts from (owned by s), NULL = the beginning. */
const char *scanner_cursor(const struct scanner *s);

/*
 * A request through the scanner's API that counts in its request counter
 * (for callers that share the scanner's figures: report writes, state).
 */
enum gv_code scanner_request(struct scanner *s, const char *method, const char *path,
			     const json_t *body, json_t **out, struct kube_status *st,
			     struct gv_err *err);
/*
 * scanner_request() with a view (kube/kube.h): KUBE_VIEW_METADATA asks for
 * metadata-only answers.
 */
enum gv_code scanner_request_view(struct scanner *s, const char *method, const char *path,
				  enum kube_view view, const json_t *body, json_t **out,
				  struct kube_status *st, struct gv_err *err);
/* API requests made through the scanner since it was made. */
size_t scanner_requests(const struct scanner *s);

/*
 * The scanner's client (a child of scanner_new's, kube.h: the requests
 * sent through it count in scanner_requests()), for the requests that go
 * with a scan (reports, scan state).
 */
struct kube_client *scanner_client(const struct scanner *s);

#endif
