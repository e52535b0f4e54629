/*
 * scan_int.h - internals shared by the files of the background scan
 * (scan.h): scan_kinds.c (hashing, the kinds of a policy), scan_cache.c
 * (the incremental cache), scan.c (the scanner and its targets),
 * scan_pool.c (the worker pool), scan_cycle.c (one cycle: targets,
 * objects into slots, retention) and scan_list.c (listing a target page
 * by page). Not for use outside those files.
 *
 * Memory: a cycle holds one list page at a time, as received (about 4 KB
 * a Pod), with parse_batch of its objects parsed and their engine reports;
 * the caches hold, per object, its uid and a 16-byte fingerprint per
 * policy; the report_set holds the reports.
 */
#ifndef GV_BACKGROUND_SCAN_INT_H
#define GV_BACKGROUND_SCAN_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "common/gv.h"
#include "common/json.h"
#include "background/scan.h"

static inline const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* ---- types ---- */

/* A collection listed by scans: a resource in all namespaces ("") or one. */
struct target {
	char *key; /* owned: "group/version/resource|namespace" */
	struct kube_resource res;
	char *ns;		  /* owned; "" = all namespaces / cluster-scoped */
	struct scan_cache *cache; /* owned */
	char *cont;		  /* owned: continue token of the listing in progress */
	char *last;		  /* owned: key of the last object processed in it */
	uint64_t *users;	  /* policy keys that listed it */
	size_t nusers;
};

/* What persists between cycles: options, targets and their listings in progress. */
struct scanner {
	struct scan_options opt;
	char *skip_ns; /* owned */
	char *only_ns; /* owned: scan_options.only_namespace */
	struct target **targets;
	size_t ntargets;
	char *cursor;	    /* owned: key of the target the next cycle starts at */
	uint64_t *retained; /* policy keys that had their report_retain() */
	size_t nretained;
	struct kube_client *client; /* owned: a child of scanner_new's, counting its requests */
};

/*
 * A list page: its text as received, the list without its items, and
 * where each item lies in the text (parsed when it is processed); or,
 * when whole pages are parsed (scan_options.parse_batch), the list parsed
 * at once (no text kept).
 */
struct page {
	struct gv_buf text;
	json_t *head;  /* apiVersion, kind, metadata (continue); the whole list when parsed */
	json_t *items; /* parsed whole: the items (borrowed from head); else NULL */
	struct gv_json_span *spans;
	size_t n;
};

/* A policy of the set, during one cycle. */
struct cyc_policy {
	const struct engine_policy *p; /* borrowed from the set */
	char *ref;		       /* owned: report policy field */
	uint64_t pk;		       /* hash of ref: the cache's policy key */
	uint64_t fp;		       /* scan_policy_fingerprint */
	bool outside; /* reads the cluster (context entries), time or random: always evaluated */
	struct scan_kinds kinds;
	size_t *targets; /* indices into the cycle's targets */
	size_t ntargets;
	bool failed;   /* a target of it was skipped */
	bool resolved; /* some kind resolved to a listable resource (before only_namespace) */
	struct scan_outcome out;
};

/* A target listed in one cycle, with the policies that need it. */
struct cyc_target {
	struct target *t; /* borrowed from the scanner */
	size_t *pols;	  /* indices into the cycle's policies */
	size_t npols;
	bool done; /* listing finished in this cycle */
};

/* One object of a page. */
struct slot {
	json_t *obj; /* owned reference: parsed from the page */
	const char *uid, *ns, *name, *rv;
	const json_t *labels;	  /* namespace labels (borrowed from the state) */
	struct scan_entry *entry; /* in the target's cache */
	uint64_t *fps;		  /* per policy of the target */
	bool *need;		  /* per policy of the target: evaluate */
	bool eval;
	enum gv_code rc;
	char *error; /* owned, when rc */
	struct engine_report rep;
};

/* The workers that evaluate a page's slots (scan_options.workers). */
struct pool {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	pthread_t *th;
	int nth;
	unsigned gen;
	bool stop;
	struct slot *slots;
	size_t n;
	atomic_size_t next;
	int active;
	const struct engine_policyset *set;
	const struct view_context *context; /* borrowed, or NULL */
	const struct engine_hooks *hooks;   /* of the page being evaluated, or NULL */
};

/* One scan cycle (scanner_run). */
struct cycle {
	struct scanner *s;
	const struct view_state *st;
	const struct view_config *config;
	struct report_set *rs;
	const struct scan_hooks *hooks;
	struct cyc_policy *pols;
	size_t npols;
	struct cyc_target *targets;
	size_t ntargets;
	uint64_t exc_fp;
	size_t budget; /* objects left (SIZE_MAX = no limit) */
	struct scan_stats *stats;
	struct pool pool;
	char *last_ns; /* namespace-label hash cache */
	uint64_t last_ns_hash;
	uint64_t *alive; /* sorted keys of the set's policies */
	size_t nalive;
	EVP_MD_CTX *inputs; /* owned: scan_options.inputs; NULL = not recorded */
	bool inputs_lost;   /* some object was not seen exactly once */
	/* "group\nkind" of the kinds not listed in only_ns as known empty (owned) */
	char **empties;
	size_t nempties;
};

/* How scan_list_target() ended for its target. */
enum list_end { L_FINISHED, L_BUDGET, L_SKIPPED, L_STOPPED, L_FAILED };

/*
 * The page fetcher: it drives the target's kube_pager (kube_pager_next,
 * then kube_pager_take, so that the page is the scan's to hold). With the
 * prefetch option, one thread (so one
 * keep-alive connection) per cycle makes the list requests, the next page
 * requested while the scanning thread evaluates the current one; at most
 * one request is outstanding, so at most two pages are in memory. Without
 * it, the scanning thread makes each request when it needs the page: the
 * page is then parsed in the heap arena of the thread that frees it,
 * instead of growing one arena per short-lived fetcher thread (glibc keeps
 * what a thread freed into another's arena resident).
 */
struct fetcher {
	struct scanner *s;
	pthread_t th;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct kube_pager *pager; /* borrowed: the listing of the target being listed */
	bool want;		  /* the next page is to be fetched */
	bool busy;		  /* a page was asked for and not taken yet */
	bool done;		  /* the answer is there */
	bool stop;
	struct kube_page page; /* the answer (owned until taken, kube_pager_take) */
	struct kube_status st;
	struct gv_err err;
	enum gv_code rc;
};

/* ---- scan.c ---- */

void scan_target_free(struct target *t);

void scan_page_release(struct page *pg);

/* Item i of the page (new reference), or NULL when it is not an object. */
json_t *scan_page_item(const struct page *pg, size_t i);

enum gv_code scanner_discover(struct scanner *s, const struct scan_kind *k,
			      struct kube_resource *out, struct gv_err *err);

struct target *scan_target_find(const struct scanner *s, const char *key);

void scan_target_add_user(struct target *t, uint64_t pk);

bool scan_retained_has(const struct scanner *s, uint64_t pk);

/* ---- scan_pool.c ---- */

double scan_mono_now(void);

void scan_pool_start(struct pool *p, int n, const struct engine_policyset *set,
		     const struct view_context *context);

/* Evaluates slots[0..n) on the workers (inline when none could start). */
void scan_pool_run(struct pool *p, struct slot *slots, size_t n);

void scan_pool_stop(struct pool *p);

/* ---- scan_cycle.c ---- */

/* One listed object into the inputs digest (scan_stats.inputs). */
void scan_inputs_add(EVP_MD_CTX *ctx, const char *target, const json_t *md);

/* Prepares one page object: filters, cache, what to evaluate. False: left out. */
bool scan_slot_prepare(struct cycle *c, struct cyc_target *ct, struct slot *sl, json_t *obj);

void scan_slot_release(struct slot *sl);

/* Merges one evaluated (or unchanged) object into the reports. */
void scan_slot_commit(struct cycle *c, struct cyc_target *ct, struct slot *sl, int64_t now);

/* ---- scan_list.c ---- */

void scan_fetcher_start(struct fetcher *f, struct scanner *s);

void scan_fetcher_stop(struct fetcher *f);

/*
 * Lists one target (continuing its listing in progress) within the budget
 * (with the prefetch option, the next page requested while the current one
 * is evaluated).
 */
enum list_end scan_list_target(struct cycle *c, struct cyc_target *ct, struct fetcher *f,
			       struct gv_err *err);

#endif
