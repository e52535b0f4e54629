/*
 * reconciler.c - schedules, suspension, the reconciler's loop, leadership,
 * and the one-shot scan and status (reconciler.h).
 *
 * The shape is redis's serverCron: one thread ticks about once a second
 * and runs each sub-task when its own time comes (admission results,
 * policy-set changes, due scans, the state ConfigMap, report writes),
 * with backoff on the tasks that talk to the API server.
 */
#include "background/reconciler.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "background/clusterstate.h"
#include "background/leader.h"
#include "background/nsscan.h"
#include "background/vpscan.h"
#include "common/log.h"
#include "common/banned.h"

#define DRAIN_BATCH   64
#define STOP_FLUSH_S  5 /* the last flush of admission results at stop may take this long */
#define STATE_PREFIX1 "ClusterPolicy."
/* CEL policies' keys (vpscan_state_key) */
static const char *const state_prefixes_cel[] = {"ValidatingPolicy.", "NamespacedValidatingPolicy.",
						 "ValidatingAdmissionPolicy."};
#define STATE_PREFIX2 "Policy."

/* ---- schedules ---- */

const char *reconciler_source_name(enum reconciler_source s)
{
	switch (s) {
	case RECONCILER_INTERVAL:
		return "spec.scanInterval";
	case RECONCILER_CRON:
		return "spec.scanSchedule";
	case RECONCILER_GLOBAL:
		break;
	}
	return "global";
}

const char *reconciler_when_name(enum reconciler_when w)
{
	static const char *const names[] = {"due", "waiting", "suspended", "invalid", "never"};

	return (size_t)w < GV_ARRAY_LEN(names) ? names[w] : "?";
}

/* Go's strconv.ParseBool: 1 when true, 0 when false, -1 otherwise. */
/* The report options of the config (report.h). */
static struct report_options report_opts(const struct reconciler_config *cfg)
{
	struct report_options ro = {.split = cfg->split,
				    .resource = cfg->resource_reports,
				    .allowed = cfg->allowed_results};

	/* a literal: the config's string need not outlive this */
	if (cfg->report_source && !strcmp(cfg->report_source, REPORT_SOURCE_KYVERNO))
		ro.source = REPORT_SOURCE_KYVERNO;
	return ro;
}

static int parse_go_bool(const char *s)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

	for (size_t i = 0; i < GV_ARRAY_LEN(yes); i++) {
		if (!strcmp(s, yes[i]))
			return 1;
		if (!strcmp(s, no[i]))
			return 0;
	}
	return -1;
}

static void append_error(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append_error(char *buf, size_t n, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len && len + 2 < n) {
		snprintf(buf + len, n - len, "; ");
		len += 2;
	}
	if (len >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, n - len, fmt, ap);
	va_end(ap);
}

void reconciler_global_resolve(const json_t *data, const char *flag_interval,
			       struct reconciler_global *out)
{
	const char *flag =
	    flag_interval && *flag_interval ? flag_interval : RECONCILER_DEFAULT_INTERVAL;
	const char *v;
	struct gv_err e = {0};

	memset(out, 0, sizeof(*out));
	if (schedule_parse_interval(flag, &out->interval, &e)) {
		append_error(out->error, sizeof(out->error),
			     "--background-scan-interval \"%s\": %s (using %s)", flag, e.msg,
			     RECONCILER_DEFAULT_INTERVAL);
		flag = RECONCILER_DEFAULT_INTERVAL;
		schedule_parse_interval(flag, &out->interval, NULL);
	}
	snprintf(out->text, sizeof(out->text), "%s", flag);
	v = json_string_value(json_object_get(data, "backgroundScanInterval"));
	if (v && *v) {
		struct schedule s = {0};
		gv_err_clear(&e);
		if (schedule_parse_interval(v, &s, &e)) {
			append_error(out->error, sizeof(out->error),
				     "backgroundScanInterval \"%s\": %s (using %s)", v, e.msg,
				     flag);
		} else {
			out->interval = s;
			snprintf(out->text, sizeof(out->text), "%s", v);
			out->from_configmap = true;
		}
	}
	v = json_string_value(json_object_get(data, "backgroundScanSuspend"));
	if (v && *v) {
		int b = parse_go_bool(v);
		if (b < 0)
			append_error(
			    out->error, sizeof(out->error),
			    "backgroundScanSuspend \"%s\": want true or false (not suspended)", v);
		out->suspended = b == 1;
	}
}

void reconciler_sched_resolve(const json_t *doc, const char *ref,
			      const struct reconciler_global *global, struct reconciler_sched *out)
{
	const json_t *spec = json_object_get(doc, "spec");
	const json_t *cron = json_object_get(spec, "scanSchedule");
	const json_t *ival = json_object_get(spec, "scanInterval");
	const json_t *susp = json_object_get(spec, "scanSuspend");
	struct gv_err e = {0};

	memset(out, 0, sizeof(*out));
	out->suspended = json_is_true(susp) ||
			 (json_is_string(susp) && parse_go_bool(json_string_value(susp)) == 1);
	if (cron && json_is_null(cron))
		cron = NULL;
	if (ival && json_is_null(ival))
		ival = NULL;
	if (cron && ival) {
		out->source = RECONCILER_CRON;
		snprintf(out->text, sizeof(out->text), "%s",
			 json_is_string(cron) ? json_string_value(cron) : "?");
		snprintf(out->error, sizeof(out->error),
			 "spec.scanInterval and spec.scanSchedule are both set (use one)");
		return;
	}
	if (cron || ival) {
		const json_t *v = cron ? cron : ival;
		const char *field = cron ? "spec.scanSchedule" : "spec.scanInterval";
		enum gv_code rc;

		out->source = cron ? RECONCILER_CRON : RECONCILER_INTERVAL;
		if (!json_is_string(v)) {
			snprintf(out->text, sizeof(out->text), "?");
			snprintf(out->error, sizeof(out->error), "%s: not a string", field);
			return;
		}
		snprintf(out->text, sizeof(out->text), "%s", json_string_value(v));
		rc = cron ? schedule_parse_cron(json_string_value(v), &out->s, &e)
			  : schedule_parse_interval(json_string_value(v), &out->s, &e);
		if (rc) {
			memset(&out->s, 0, sizeof(out->s));
			snprintf(out->error, sizeof(out->error), "%s \"%s\": %s", field,
				 json_string_value(v), e.msg);
			return;
		}
	} else {
		out->source = RECONCILER_GLOBAL;
		snprintf(out->text, sizeof(out->text), "%s", global->text);
		out->s.kind = SCHEDULE_INTERVAL;
		out->s.interval = global->interval.interval;
	}
	out->valid = true;
	out->jitter = schedule_jitter(ref, schedule_period(&out->s));
}

void reconciler_sched_release(struct reconciler_sched *s)
{
	if (!s)
		return;
	schedule_release(&s->s);
	memset(s, 0, sizeof(*s));
}

enum reconciler_when reconciler_when(const struct reconciler_sched *s, bool global_suspended,
				     const struct scanstate_entry *last, const char *uid,
				     uint64_t fingerprint, time_t now, time_t *next)
{
	time_t base = 0, at = 0;

	if (next)
		*next = 0;
	if (!s->valid)
		return RECONCILER_INVALID;
	if (global_suspended || s->suspended)
		return RECONCILER_SUSPENDED;
	if (last && last->last_scan > 0) {
		base = last->last_scan;
		if (uid && *uid && last->uid[0] && strcmp(uid, last->uid))
			base = 0; /* another policy of the same name */
		if (fingerprint && last->fingerprint && fingerprint != last->fingerprint)
			base = 0; /* its rules changed */
	}
	if (schedule_due(&s->s, base, now, s->jitter, &at)) {
		if (next)
			*next = now;
		return RECONCILER_DUE;
	}
	if (!at)
		return RECONCILER_NEVER;
	if (next)
		*next = at;
	return RECONCILER_WAITING;
}

/* ---- the running reconciler ---- */

/* One policy of the current set, as the schedule table sees it. */
struct rpol {
	char *ref;		       /* owned: report name */
	char *key;		       /* owned: scan-state key */
	const struct engine_policy *p; /* borrowed from r->state; NULL for a CEL policy */
	const struct vpol_policy *vp;  /* a CEL policy (vpscan.h), borrowed from r->state */
	bool background;
	struct reconciler_sched sched;
	uint64_t fp;
	char uid[128];
	struct scanstate_entry last;
	bool has_last;
	bool spec_suspended; /* as last logged */
	char logged[700];    /* the schedule error last logged */
};

struct reconciler {
	struct report_options report; /* from the config: layout, source, allowed results */
	struct reconciler_config cfg; /* strings below are owned copies */
	char *namespace, *state_cm, *interval;
	struct leader *leader;
	struct scanner *scanner; /* counts the requests outside the scans */
	struct report_set *rs;	 /* admission results not written yet */
	struct nsscan_memo *memo;
	struct metrics_family *duration, *processed, *results, *leader_gauge;
	struct scan_events *events;	  /* owned; NULL without cfg.events */
	struct metrics_family *rule_time; /* kyverno_policy_execution_duration_seconds */
	struct collector_slot *collector; /* static; NULL = no per-policy metrics */

	pthread_t thread;
	bool started;
	atomic_bool stop;
	atomic_bool leading;
	atomic_uint lead_epoch; /* bumped by each on_start/on_stop */
	atomic_uint_fast64_t cycles;

	/* Owned by the thread, except that `mu` guards the table for the collector. */
	pthread_mutex_t mu;
	struct rpol *pols;
	size_t npols;
	struct view_state *state; /* owned reference */
	json_t *exceptions;	  /* owned: the exception documents of state's set */
	json_t *cfg_data;	  /* owned: last ConfigMap data seen */
	struct reconciler_global global;
	bool global_logged_suspend;
	char global_logged_error[600];

	unsigned seen_epoch;
	bool loaded;	    /* report_load and the state ConfigMap read for this leadership */
	json_t *state_data; /* owned: the state ConfigMap's data as read */
	json_t *pending;    /* owned: state changes not written yet */
	bool scan_dirty;    /* the model holds scan results not written yet (never now) */
	bool prune_due;	    /* results of policies gone or changed may remain */
	time_t load_retry_at, cycle_retry_at, flush_retry_at, state_retry_at;
	int load_backoff, cycle_backoff, flush_backoff, state_backoff;
	time_t last_flush;
	bool flush_now;
	time_t stop_deadline; /* during the last flush */
};

static void rpol_release(struct rpol *p)
{
	free(p->ref);
	free(p->key);
	reconciler_sched_release(&p->sched);
}

static int backoff_next(int *b)
{
	*b = *b ? *b * 2 : RECONCILER_BACKOFF_MIN_S;
	if (*b > RECONCILER_BACKOFF_MAX_S)
		*b = RECONCILER_BACKOFF_MAX_S;
	return *b;
}

static bool is_leading(const struct reconciler *r)
{
	return atomic_load(&r->leading);
}

bool reconciler_leading(const struct reconciler *r)
{
	return r && is_leading(r);
}

uint64_t reconciler_cycles(const struct reconciler *r)
{
	return r ? atomic_load(&r->cycles) : 0;
}

/* Leadership changes come from the elector's thread; the loop notices within 200 ms. */
static void on_lead_start(void *ud)
{
	struct reconciler *r = ud;

	atomic_store(&r->leading, true);
	atomic_fetch_add(&r->lead_epoch, 1);
	gv_info("background: leading (Lease acquired): background scans start");
}

static void on_lead_stop(void *ud)
{
	struct reconciler *r = ud;

	atomic_store(&r->leading, false);
	atomic_fetch_add(&r->lead_epoch, 1);
	gv_info("background: not leading any more: background scans stop");
}

/* The report writer's permission: scan results are written by the leader only. */
static bool flush_proceed(void *ud)
{
	struct reconciler *r = ud;

	if (r->stop_deadline && time(NULL) > r->stop_deadline)
		return false;
	return !r->scan_dirty || is_leading(r);
}

static bool scan_proceed(void *ud)
{
	struct reconciler *r = ud;

	return !atomic_load(&r->stop) && is_leading(r);
}

static size_t drain(struct reconciler *r, int timeout_ms)
{
	struct view_audit_item *items[DRAIN_BATCH];
	size_t total = 0, n;

	if (!r->cfg.queue)
		return 0;
	do {
		n = audit_queue_drain(r->cfg.queue, items, DRAIN_BATCH, timeout_ms);
		for (size_t i = 0; i < n; i++) {
			struct gv_err err = {0};
			if (report_put_admission(r->rs, items[i], &err))
				gv_warn("background: admission result of %s %s/%s not reported: %s",
					items[i]->kind, items[i]->namespace, items[i]->name,
					err.msg);
			else /* only a scan removes it once its object is gone */
				nsscan_memo_forget(r->memo, items[i]->namespace);
			view_audit_item_free(items[i]);
		}
		total += n;
		timeout_ms = 0;
	} while (n == DRAIN_BATCH);
	return total;
}

static void scan_page_done(void *ud)
{
	drain(ud, 0);
}

/*
 * Looks up a policy of the old table by scan-state key (NULL when absent):
 * unique across kinds, where a ValidatingPolicy and a ClusterPolicy may
 * share a report ref.
 */
static const struct rpol *old_pol(const struct rpol *v, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].key, key))
			return &v[i];
	return NULL;
}

/* The state entry of a table entry (false when absent or malformed). */
static bool rpol_lookup(const json_t *data, const struct rpol *p, struct scanstate_entry *e)
{
	const char *text;

	if (p->p)
		return scanstate_lookup(data, p->p, e);
	text = json_string_value(json_object_get(data, p->key));
	memset(e, 0, sizeof(*e));
	return text && !scanstate_decode(text, e, NULL);
}

/* Logs the ConfigMap's settings when they change. */
static void global_log(struct reconciler *r)
{
	struct reconciler_global *g = &r->global;

	if (strcmp(g->error, r->global_logged_error)) {
		if (g->error[0])
			gv_error("background: ConfigMap %s/gavel: %s", r->namespace, g->error);
		snprintf(r->global_logged_error, sizeof(r->global_logged_error), "%s", g->error);
	}
	if (g->suspended != r->global_logged_suspend) {
		gv_info("background: every scan schedule %s (ConfigMap backgroundScanSuspend)",
			g->suspended ? "suspended" : "resumed");
		r->global_logged_suspend = g->suspended;
	}
}

/*
 * Rebuilds the schedule table from r->state and r->global. True when a
 * policy of the old table is gone, changed (fingerprint) or no longer
 * background: its results may have to be removed.
 */
static bool table_rebuild(struct reconciler *r)
{
	const struct engine_policyset *set = view_state_policyset(r->state);
	struct view_vpolset *vs = view_state_vpols(r->state);
	size_t nl = set ? engine_policyset_count(set) : 0, n = nl + view_vpolset_count(vs), k = 0;
	struct rpol *v = gv_xcalloc(n + 1, sizeof(*v));
	struct rpol *old;
	size_t nold;
	bool gone = false;

	for (size_t i = 0; i < n; i++) {
		const struct engine_policy *p = i < nl ? engine_policyset_get(set, i) : NULL;
		const struct vpol_policy *vp = i < nl ? NULL : view_vpolset_policy(vs, i - nl);
		const json_t *doc = p ? engine_policy_doc(p) : vpol_doc(vp);
		const struct rpol *o;
		struct rpol *np = &v[k++];
		const char *uid =
		    json_string_value(json_object_get(json_object_get(doc, "metadata"), "uid"));

		np->p = p;
		np->vp = vp;
		np->ref = p ? report_policy_ref(p) : vpscan_policy_ref(vp);
		np->key = p ? scanstate_key(p) : vpscan_state_key(vp);
		np->background = p ? engine_policy_background(p) : vpscan_background(vp);
		np->fp = p ? scan_policy_fingerprint(p) : vpscan_fingerprint(vp);
		snprintf(np->uid, sizeof(np->uid), "%s", uid ? uid : "");
		/* the same schedule fields and semantics for every kind (a gavel extension on CEL
		 * policies) */
		reconciler_sched_resolve(doc, np->ref, &r->global, &np->sched);
		o = old_pol(r->pols, r->npols, np->key);
		if (o) {
			np->last = o->last;
			np->has_last = o->has_last;
			np->spec_suspended = o->spec_suspended;
			snprintf(np->logged, sizeof(np->logged), "%s", o->logged);
		} else if (r->state_data) {
			np->has_last = rpol_lookup(r->state_data, np, &np->last);
		}
		if (!np->background)
			continue;
		if (!np->sched.valid && strcmp(np->logged, np->sched.error)) {
			gv_error("background: policy %s: %s: the policy is not scanned", np->ref,
				 np->sched.error);
			snprintf(np->logged, sizeof(np->logged), "%s", np->sched.error);
		} else if (np->sched.valid) {
			np->logged[0] = '\0';
		}
		if (np->sched.suspended != np->spec_suspended || (!o && np->sched.suspended)) {
			gv_info("background: policy %s: scans %s (spec.scanSuspend)", np->ref,
				np->sched.suspended ? "suspended" : "resumed");
			np->spec_suspended = np->sched.suspended;
		}
	}
	for (size_t i = 0; i < r->npols && !gone; i++) {
		const struct rpol *o = &r->pols[i], *now = old_pol(v, k, o->key);

		gone = !now || now->fp != o->fp || now->background != o->background;
	}
	pthread_mutex_lock(&r->mu);
	old = r->pols;
	nold = r->npols;
	r->pols = v;
	r->npols = k;
	pthread_mutex_unlock(&r->mu);
	for (size_t i = 0; i < nold; i++)
		rpol_release(&old[i]);
	free(old);
	return gone;
}

/* Takes the last scans from the state ConfigMap; removes entries of policies gone. */
static void table_apply_state(struct reconciler *r)
{
	const char *key;
	json_t *v;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->npols; i++)
		r->pols[i].has_last = rpol_lookup(r->state_data, &r->pols[i], &r->pols[i].last);
	pthread_mutex_unlock(&r->mu);
	json_object_foreach(r->state_data, key, v)
	{
		bool known = false, ours = !strncmp(key, STATE_PREFIX1, strlen(STATE_PREFIX1)) ||
					   !strncmp(key, STATE_PREFIX2, strlen(STATE_PREFIX2));
		for (size_t i = 0; i < GV_ARRAY_LEN(state_prefixes_cel) && !ours; i++)
			ours = !strncmp(key, state_prefixes_cel[i], strlen(state_prefixes_cel[i]));
		if (!ours)
			continue;
		for (size_t i = 0; i < r->npols && !known; i++)
			known = !strcmp(r->pols[i].key, key);
		if (!known)
			json_object_set_new(r->pending, key, json_null());
	}
}

/* Drops what leadership gave: scan results not written, caches, the state read. */
static void leadership_lost(struct reconciler *r)
{
	if (r->scan_dirty) {
		gv_info("background: leadership lost: %zu report groups with scan results not "
			"written are dropped (the new leader scans again)",
			report_dirty_count(r->rs));
		report_set_free(r->rs);
		{
			struct report_options ro = report_opts(&r->cfg);
			r->rs = report_set_new(&ro);
		}
		r->scan_dirty = false;
	}
	scanner_reset(r->scanner);
	nsscan_memo_clear(r->memo);
	r->loaded = false;
	json_decref(r->state_data);
	r->state_data = NULL;
	json_object_clear(r->pending);
	r->load_backoff = r->cycle_backoff = r->state_backoff = 0;
	r->load_retry_at = r->cycle_retry_at = r->state_retry_at = 0;
}

/* At the start of a leadership: the reports as they are, the last scans. */
static void leadership_init(struct reconciler *r, time_t now)
{
	struct gv_err err = {0};
	json_t *data = NULL;

	if (now < r->load_retry_at)
		return;
	if (scanstate_read(scanner_client(r->scanner), r->namespace, r->state_cm, &data, &err)) {
		int b = backoff_next(&r->load_backoff);
		json_decref(data);
		gv_warn("background: start of leadership: %s (retrying in %d s)", err.msg, b);
		r->load_retry_at = now + b;
		return;
	}
	json_decref(r->state_data);
	r->state_data = data;
	table_apply_state(r);
	r->loaded = true;
	r->load_backoff = 0;
	/* results of policies deleted or changed while nobody led */
	r->prune_due = true;
	gv_info("background: leading: %zu policies with a recorded last scan",
		json_object_size(r->state_data));
}

/* The scans' options and input from the current state (in's arrays: caller frees). */
static void scan_setup(struct reconciler *r, const struct scan_hooks *hooks,
		       struct nsscan_options *o, struct nsscan_input *in, json_t **namespaces)
{
	const json_t *labels = view_state_namespaces(r->state);
	const char *key;
	const json_t *v;
	const struct engine_policy **all = gv_xcalloc(r->npols + 1, sizeof(*all));
	const struct vpol_policy **vall = gv_xcalloc(r->npols + 1, sizeof(*vall));

	memset(o, 0, sizeof(*o));
	memset(in, 0, sizeof(*in));
	o->client = r->cfg.client;
	o->context = r->cfg.context;
	o->namespace = r->namespace;
	o->batch_size = r->cfg.batch_size;
	o->workers = r->cfg.workers;
	o->resource_limit = r->cfg.resource_limit;
	o->split = r->cfg.split;
	o->report = &r->report;
	o->no_inputs = !r->cfg.incremental;
	o->release_heap = true;
	o->hooks = hooks;
	o->results = r->results;
	o->processed = r->processed;
	o->events = r->events;
	o->duration = r->rule_time;
	{
		size_t n = 0;
		const char **names = gv_xcalloc(json_object_size(labels) + 1, sizeof(*names));

		json_object_foreach((json_t *)labels, key, v) names[n++] = key;
		qsort(names, n, sizeof(*names), gv_strptr_cmp);
		*namespaces = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(*namespaces, json_string(names[i]));
		free(names);
	}
	in->state = r->state;
	in->namespaces = *namespaces;
	in->config_data = r->cfg_data;
	in->exceptions = r->exceptions;
	for (size_t i = 0; i < r->npols; i++) {
		if (!r->pols[i].background)
			continue;
		if (r->pols[i].p)
			all[in->nall++] = r->pols[i].p;
		else
			vall[in->nvall++] = r->pols[i].vp;
	}
	in->all = all;
	in->vall = vall;
}

/* Removes the results of policies gone or changed, namespace by namespace. */
static void prune(struct reconciler *r, time_t now)
{
	struct scan_hooks hooks = {scan_proceed, NULL, r};
	struct nsscan_options o;
	struct nsscan_input in;
	struct gv_err err = {0};
	json_t *nss;
	size_t pruned = 0;

	if (!r->prune_due || now < r->cycle_retry_at)
		return;
	scan_setup(r, &hooks, &o, &in, &nss);
	if (nsscan_prune(&o, &in, &pruned, NULL, &err)) {
		int b = backoff_next(&r->cycle_backoff);
		gv_warn("background: stale results not all removed (retrying in %d s): %s", b,
			err.msg);
		r->cycle_retry_at = time(NULL) + b;
	} else if (scan_proceed(r)) {
		r->prune_due = false;
		if (pruned)
			gv_info("background: %zu stale results removed", pruned);
	}
	free((void *)in.all);
	free((void *)in.vall);
	json_decref(nss);
}

/*
 * Records the last scans. Only once the reports hold their results: a
 * replica killed (or deposed) between the two must leave the policies due,
 * so that the next leader scans them again instead of trusting reports
 * that were never written.
 */
static void write_state(struct reconciler *r, time_t now)
{
	struct gv_err err = {0};

	if (!json_object_size(r->pending) || now < r->state_retry_at || r->scan_dirty)
		return;
	if (scanstate_write(scanner_client(r->scanner), r->namespace, r->state_cm, r->pending,
			    &err)) {
		int b = backoff_next(&r->state_backoff);
		gv_warn("background: scan state ConfigMap %s/%s not written (retrying in %d s): %s",
			r->namespace, r->state_cm, b, err.msg);
		r->state_retry_at = now + b;
		return;
	}
	r->state_backoff = 0;
	json_object_clear(r->pending);
}

/*
 * Runs the cycle of the policies due now, if any: the namespace-by-namespace
 * scan of nsscan.h (the one `gavel scan` runs), which writes each
 * namespace's reports as it goes; r->memo keeps what was found current.
 */
static void run_due(struct reconciler *r, time_t now)
{
	const struct engine_policy **due;
	const struct vpol_policy **vdue;
	size_t *idx, n = 0, nd = 0, nv = 0;
	struct nsscan_stats ns = {0};
	struct scan_stats stats;
	struct scan_hooks hooks = {scan_proceed, scan_page_done, r};
	struct nsscan_options o;
	struct nsscan_input in;
	struct gv_err err = {0};
	struct gv_buf names = {0};
	json_t *nss = NULL;
	enum gv_code rc;
	time_t end;

	if (now < r->cycle_retry_at)
		return;
	due = gv_xcalloc(r->npols + 1, sizeof(*due));
	vdue = gv_xcalloc(r->npols + 1, sizeof(*vdue));
	idx = gv_xcalloc(r->npols + 1, sizeof(*idx));
	for (size_t i = 0; i < r->npols; i++) {
		struct rpol *p = &r->pols[i];
		if (!p->background)
			continue;
		if (reconciler_when(&p->sched, r->global.suspended, p->has_last ? &p->last : NULL,
				    p->uid, p->fp, now, NULL) != RECONCILER_DUE)
			continue;
		idx[n++] = i;
		if (p->p)
			due[nd++] = p->p;
		else
			vdue[nv++] = p->vp;
		if (names.len < 200)
			gv_buf_addf(&names, "%s%s", names.len ? ", " : "", p->ref);
	}
	if (!n)
		goto out;
	gv_debug("background: scanning %zu policies: %s", n, gv_buf_str(&names));
	scan_setup(r, &hooks, &o, &in, &nss);
	in.due = due;
	in.ndue = nd;
	in.vdue = vdue;
	in.nvdue = nv;
	{
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = nsscan_run(&o, &in, r->memo, &ns, &err);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns.seconds =
		    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	}
	free((void *)in.all);
	free((void *)in.vall);
	json_decref(nss);
	stats = ns.scan;
	stats.requests = ns.requests;
	end = time(NULL);
	metrics_observe(r->duration, NULL, ns.seconds);
	r->flush_now = true;
	if (rc) {
		int b = backoff_next(&r->cycle_backoff);
		gv_warn("background: scan of %s stopped after %zu objects (retrying in %d s): %s",
			gv_buf_str(&names), stats.listed, b, err.msg);
		r->cycle_retry_at = end + b;
		goto out;
	}
	if (stats.stopped) {
		gv_info("background: scan of %s stopped (leadership lost or shutting down)",
			gv_buf_str(&names));
		goto out;
	}
	r->cycle_backoff = 0;
	gv_info(
	    "background: scanned %zu %s (%s): %zu objects, %zu evaluated, %zu unchanged, %zu "
	    "filtered, %zu failed, %zu results, %zu gone; %zu API requests, %.2f s (lists %.2f s, "
	    "evaluation %.2f s, merge %.2f s; reports: %zu read, %zu created, %zu updated, %zu "
	    "deleted)%s",
	    n, n == 1 ? "policy" : "policies", gv_buf_str(&names), stats.listed, stats.evaluated,
	    stats.unchanged, stats.filtered, stats.failed, stats.results, stats.deleted,
	    stats.requests, ns.seconds, stats.list_seconds, stats.eval_seconds,
	    stats.commit_seconds, ns.reports.read, ns.reports.created, ns.reports.updated,
	    ns.reports.deleted,
	    stats.partial ? " (resource limit reached: the next cycle continues)" : "");
	if (ns.reports.created || ns.reports.updated || ns.reports.deleted)
		gv_info("background: reports written: %zu created, %zu updated, %zu deleted, %zu "
			"unchanged, %zu conflicts",
			ns.reports.created, ns.reports.updated, ns.reports.deleted,
			ns.reports.unchanged, ns.reports.conflicts);
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < n; i++) {
		struct rpol *p = &r->pols[idx[i]];
		char *text;
		p->last.last_scan =
		    now; /* when it was due: the schedule's fire, however long the cycle */
		p->last.fingerprint = p->fp;
		snprintf(p->last.uid, sizeof(p->last.uid), "%s", p->uid);
		p->has_last = true;
		text = scanstate_encode(&p->last);
		json_object_set_new(r->pending, p->key, json_string(text));
		free(text);
	}
	pthread_mutex_unlock(&r->mu);
	atomic_fetch_add(&r->cycles, 1);
out:
	gv_buf_release(&names);
	free(due);
	free(vdue);
	free(idx);
}

/* Writes the reports when a cycle ended or admission results waited long enough. */
static void flush(struct reconciler *r, time_t now)
{
	struct report_api api = {
	    .client = scanner_client(r->scanner), .ud = r, .proceed = flush_proceed};
	struct report_stats st = {0};
	struct gv_err err = {0};
	time_t every = (r->cfg.flush_ms + 999) / 1000;

	if (!report_dirty_count(r->rs)) {
		r->scan_dirty = false;
		r->flush_now = false;
		return;
	}
	if (now < r->flush_retry_at)
		return;
	if (!r->flush_now && now - r->last_flush < every)
		return;
	if (r->scan_dirty && !is_leading(r))
		return;
	/* results of policies deleted meanwhile (admission items of other replicas) */
	if (is_leading(r) && r->loaded)
		vpscan_prune(r->rs, r->state);
	r->last_flush = now;
	if (report_flush(r->rs, &api, &st, &err)) {
		int b = backoff_next(&r->flush_backoff);
		gv_warn("background: reports not all written (retrying in %d s): %s", b, err.msg);
		r->flush_retry_at = time(NULL) + b;
		return;
	}
	r->flush_backoff = 0;
	if (st.created || st.updated || st.deleted)
		gv_info("background: reports written: %zu created, %zu updated, %zu deleted, %zu "
			"unchanged, %zu conflicts",
			st.created, st.updated, st.deleted, st.unchanged, st.conflicts);
	if (!report_dirty_count(r->rs)) {
		struct report_options ro = report_opts(&r->cfg);

		r->scan_dirty = false;
		r->flush_now = false;
		/* written: the model need not keep them (memory stays bounded by the queue) */
		report_set_free(r->rs);
		r->rs = report_set_new(&ro);
	}
}

/* One pass of the loop. */
static void step(struct reconciler *r)
{
	time_t now = time(NULL);
	unsigned epoch = atomic_load(&r->lead_epoch);
	struct view_state *st;
	json_t *data, *exceptions = NULL;
	bool rebuild = false, policies = false;

	if (epoch != r->seen_epoch) {
		r->seen_epoch = epoch;
		if (!is_leading(r) || r->loaded)
			leadership_lost(r);
		if (is_leading(r))
			gv_info("background: this replica now scans");
	}
	st = r->cfg.snapshot ? snapshot_state_exceptions(r->cfg.snapshot, &exceptions) : NULL;
	if (!st && !r->state)
		return;
	if (st) {
		json_decref(r->exceptions);
		r->exceptions = exceptions;
	}
	if (st && (!r->state || view_state_policyset(st) != view_state_policyset(r->state) ||
		   view_state_vpols(st) != view_state_vpols(r->state))) {
		view_state_unref(r->state);
		r->state = st;
		st = NULL;
		rebuild = true;
	} else if (st) {
		/* same policies: keep the new namespace labels and config */
		view_state_unref(r->state);
		r->state = st;
		st = NULL;
	}
	data = snapshot_config_data(r->cfg.snapshot);
	if (!r->cfg_data || !json_equal(data, r->cfg_data)) {
		struct reconciler_global g;

		json_decref(r->cfg_data);
		r->cfg_data = json_incref(data);
		reconciler_global_resolve(data, r->interval, &g);
		pthread_mutex_lock(&r->mu);
		r->global = g;
		pthread_mutex_unlock(&r->mu);
		global_log(r);
		rebuild = true;
	}
	json_decref(data);
	if (rebuild) {
		policies = table_rebuild(r); /* some policy gone or changed */
		if (r->loaded)
			table_apply_state(r);
		if (policies && vpscan_prune(r->rs, r->state))
			r->flush_now = true;
		if (policies && r->loaded && is_leading(r))
			r->prune_due = true;
	}
	if (is_leading(r)) {
		if (!r->loaded)
			leadership_init(r, now);
		if (r->loaded && !atomic_load(&r->stop))
			run_due(r, now);
		/* after the scans, which prune what they rewrite anyway */
		if (r->loaded && !atomic_load(&r->stop))
			prune(r, time(NULL));
	}
	flush(r, time(NULL));
	if (is_leading(r) && r->loaded)
		write_state(r, time(NULL));
}

static void *reconciler_main(void *ud)
{
	struct reconciler *r = ud;
	long tick = r->cfg.tick_ms;

	while (!atomic_load(&r->stop)) {
		/* waiting is draining: admission results arrive while we wait */
		long waited = 0;
		while (waited < tick && !atomic_load(&r->stop) &&
		       atomic_load(&r->lead_epoch) == r->seen_epoch) {
			long slice = tick - waited < 200 ? tick - waited : 200;
			if (r->cfg.queue) {
				drain(r, (int)slice);
			} else {
				struct timespec ts = {0, slice * 1000000L};
				nanosleep(&ts, NULL);
			}
			waited += slice;
		}
		if (atomic_load(&r->stop))
			break;
		step(r);
	}
	/* a last write of the admission results that arrived */
	drain(r, 0);
	if (report_dirty_count(r->rs) && (!r->scan_dirty || is_leading(r))) {
		r->stop_deadline = time(NULL) + STOP_FLUSH_S;
		r->flush_now = true;
		r->flush_retry_at = 0;
		flush(r, time(NULL));
	}
	if (r->loaded && is_leading(r)) {
		r->state_retry_at = 0;
		write_state(r, time(NULL));
	}
	return NULL;
}

/* ---- metrics rendered at scrape time ---- */

static void add_label_value(struct gv_buf *b, const char *v)
{
	for (const char *p = v; *p; p++) {
		if (*p == '\\' || *p == '"')
			gv_buf_addc(b, '\\');
		if (*p == '\n') {
			gv_buf_adds(b, "\\n");
			continue;
		}
		gv_buf_addc(b, *p);
	}
}

/*
 * The registry keeps a collector for as long as it lives and has no way to
 * remove one, while a reconciler may be stopped before the metrics server
 * (serve stops the reconciler first, so that it releases its Lease). So the
 * collector's ud is one of these static slots, never freed: reconciler_stop
 * empties its slot, and a scrape after that renders nothing. Slots are
 * never reused (a registry would otherwise render another reconciler).
 */
#define COLLECTOR_SLOTS 16

struct collector_slot {
	struct reconciler *r; /* NULL once stopped */
	bool used;
};

/* collector_mu guards every slot and is held while a slot's reconciler renders. */
static struct collector_slot collector_slots[COLLECTOR_SLOTS];
static pthread_mutex_t collector_mu = PTHREAD_MUTEX_INITIALIZER;

static struct collector_slot *collector_claim(struct reconciler *r)
{
	struct collector_slot *slot = NULL;

	pthread_mutex_lock(&collector_mu);
	for (size_t i = 0; i < COLLECTOR_SLOTS && !slot; i++) {
		if (!collector_slots[i].used) {
			slot = &collector_slots[i];
			slot->used = true;
			slot->r = r;
		}
	}
	pthread_mutex_unlock(&collector_mu);
	return slot;
}

static void collector_release(struct collector_slot *slot)
{
	if (!slot)
		return;
	pthread_mutex_lock(&collector_mu);
	slot->r = NULL;
	pthread_mutex_unlock(&collector_mu);
}

static void collect_locked(struct reconciler *r, struct gv_buf *out);

static void collect(void *ud, struct gv_buf *out)
{
	struct collector_slot *slot = ud;

	pthread_mutex_lock(&collector_mu);
	if (slot->r)
		collect_locked(slot->r, out);
	pthread_mutex_unlock(&collector_mu);
}

static void collect_locked(struct reconciler *r, struct gv_buf *out)
{
	pthread_mutex_lock(&r->mu);
	gv_buf_adds(out, "# HELP gavel_background_scan_suspended Whether the background scans of "
			 "the policy are suspended (ConfigMap or spec.scanSuspend).\n"
			 "# TYPE gavel_background_scan_suspended gauge\n");
	for (size_t i = 0; i < r->npols; i++) {
		const struct rpol *p = &r->pols[i];
		if (!p->background)
			continue;
		gv_buf_adds(out, "gavel_background_scan_suspended{policy=\"");
		add_label_value(out, p->ref);
		gv_buf_addf(out, "\"} %d\n", r->global.suspended || p->sched.suspended);
	}
	gv_buf_adds(out, "# HELP gavel_background_scan_last_success_timestamp_seconds End of the "
			 "last completed background scan of the policy, in Unix seconds.\n"
			 "# TYPE gavel_background_scan_last_success_timestamp_seconds gauge\n");
	for (size_t i = 0; i < r->npols; i++) {
		const struct rpol *p = &r->pols[i];
		if (!p->background || !p->has_last || p->last.last_scan <= 0)
			continue;
		gv_buf_adds(out, "gavel_background_scan_last_success_timestamp_seconds{policy=\"");
		add_label_value(out, p->ref);
		gv_buf_addf(out, "\"} %lld\n", (long long)p->last.last_scan);
	}
	pthread_mutex_unlock(&r->mu);
}

/* ---- lifecycle ---- */

static const double duration_buckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,   2.5,
					  5,	10,   30,  60,	 120, 300, 600};

static void reconciler_free(struct reconciler *r)
{
	if (!r)
		return;
	collector_release(r->collector);
	scanner_free(r->scanner);
	report_set_free(r->rs);
	nsscan_memo_free(r->memo);
	scan_events_free(r->events);
	json_decref(r->exceptions);
	for (size_t i = 0; i < r->npols; i++)
		rpol_release(&r->pols[i]);
	free(r->pols);
	view_state_unref(r->state);
	json_decref(r->cfg_data);
	json_decref(r->state_data);
	json_decref(r->pending);
	pthread_mutex_destroy(&r->mu);
	free(r->namespace);
	free(r->state_cm);
	free(r->interval);
	free(r);
}

enum gv_code reconciler_start(const struct reconciler_config *cfg, struct reconciler **out,
			      struct gv_err *err)
{
	struct reconciler *r;
	struct schedule s = {0};
	struct scan_options so = {0};
	struct report_options ro = {0};
	enum gv_code rc;

	*out = NULL;
	if (!cfg->client || !cfg->snapshot)
		return gv_err_set(err, GV_EINVAL, "background: no API client or snapshot");
	if (cfg->interval && (rc = schedule_parse_interval(cfg->interval, &s, err))) {
		gv_err_prefix(err, "--background-scan-interval: ");
		return rc;
	}
	if (cfg->leader_elect && !cfg->kube)
		return gv_err_set(err, GV_EINVAL, "background: --leader-elect needs a kubeconfig");
	r = gv_xcalloc(1, sizeof(*r));
	r->cfg = *cfg;
	r->namespace = gv_xstrdup(cfg->namespace && *cfg->namespace ? cfg->namespace : "gavel");
	r->state_cm =
	    gv_xstrdup(cfg->state_configmap && *cfg->state_configmap ? cfg->state_configmap
								     : SCANSTATE_CONFIGMAP);
	r->interval = gv_xstrdup(cfg->interval && *cfg->interval ? cfg->interval
								 : RECONCILER_DEFAULT_INTERVAL);
	r->cfg.namespace = r->namespace;
	r->cfg.state_configmap = r->state_cm;
	r->cfg.interval = r->interval;
	r->cfg.identity = NULL;
	if (r->cfg.tick_ms <= 0)
		r->cfg.tick_ms = RECONCILER_TICK_MS;
	if (r->cfg.flush_ms <= 0)
		r->cfg.flush_ms = RECONCILER_FLUSH_MS;
	pthread_mutex_init(&r->mu, NULL);
	atomic_init(&r->stop, false);
	atomic_init(&r->leading, !cfg->leader_elect);
	atomic_init(&r->lead_epoch, 0);
	atomic_init(&r->cycles, 0);
	r->pending = json_object();
	reconciler_global_resolve(NULL, r->interval, &r->global);
	ro = report_opts(cfg);
	r->report = ro;
	r->rs = report_set_new(&ro);
	r->memo = nsscan_memo_new();
	r->events = scan_events_new(cfg->events);

	if (cfg->metrics) {
		r->duration =
		    metrics_histogram_new(cfg->metrics, "gavel_background_scan_duration_seconds",
					  "Duration of one background scan cycle, in seconds.",
					  NULL, duration_buckets, GV_ARRAY_LEN(duration_buckets));
		r->processed = metrics_counter_new(
		    cfg->metrics, "gavel_background_scan_resources_processed_total",
		    "Objects taken through background scans (evaluated or "
		    "found unchanged).",
		    NULL);
		r->results = view_policy_results_new(cfg->metrics);
		r->rule_time = view_policy_duration_new(cfg->metrics);
		r->collector = collector_claim(r);
		if (r->collector)
			metrics_registry_add_collector(cfg->metrics, collect, r->collector);
		if (!cfg->leader_elect) {
			r->leader_gauge = metrics_gauge_new(cfg->metrics, LEADER_METRIC,
							    "1 when this replica leads (runs "
							    "background scans), else 0.",
							    NULL);
			metrics_set(r->leader_gauge, NULL, 1);
		}
	}
	so.context = cfg->context;
	so.batch_size = cfg->batch_size;
	so.workers = cfg->workers;
	so.parse_batch = INT_MAX; /* whole pages: see scan_options.parse_batch */
	so.incremental = cfg->incremental;
	so.resource_limit = cfg->resource_limit;
	so.skip_namespace = r->namespace;
	so.results = r->results;
	so.processed = r->processed;
	r->scanner = scanner_new(cfg->client, &so);

	if (cfg->leader_elect) {
		struct leader_config lc = {0};
		lc.kube = cfg->kube;
		lc.namespace = r->namespace;
		lc.identity = cfg->identity;
		lc.lease_duration_ms = cfg->lease_duration_ms;
		lc.renew_deadline_ms = cfg->renew_deadline_ms;
		lc.retry_period_ms = cfg->retry_period_ms;
		lc.on_start = on_lead_start;
		lc.on_stop = on_lead_stop;
		lc.ud = r;
		lc.metrics = cfg->metrics;
		if ((rc = leader_new(&lc, &r->leader, err))) {
			gv_err_prefix(err, "leader election: ");
			goto fail;
		}
	}
	if (pthread_create(&r->thread, NULL, reconciler_main, r)) {
		rc = gv_err_set(err, GV_EINTERNAL, "background: cannot start a thread");
		goto fail;
	}
	r->started = true;
	if (r->leader && (rc = leader_start(r->leader, err))) {
		gv_err_prefix(err, "leader election: ");
		reconciler_stop(r);
		return rc;
	}
	gv_info("background: reconciler started (interval %s, batch %d, workers %d, incremental "
		"%s, resource limit %zu, %s layout, leader election %s)",
		r->interval, cfg->batch_size > 0 ? cfg->batch_size : SCAN_DEFAULT_BATCH,
		cfg->workers > 0 ? cfg->workers : SCAN_DEFAULT_WORKERS,
		cfg->incremental ? "on" : "off", cfg->resource_limit,
		cfg->resource_reports ? "resource"
		: cfg->split	      ? "split"
				      : "namespace",
		cfg->leader_elect ? "on" : "off");
	*out = r;
	return GV_OK;
fail:
	if (r->leader)
		leader_stop(r->leader, false);
	reconciler_free(r);
	return rc;
}

void reconciler_stop(struct reconciler *r)
{
	if (!r)
		return;
	atomic_store(&r->stop, true);
	/* the elector first: a leader stops leading (on_stop) and releases the Lease */
	if (r->leader) {
		leader_stop(r->leader, true);
		r->leader = NULL;
	}
	if (r->started)
		pthread_join(r->thread, NULL);
	reconciler_free(r);
}

/* ---- one-shot commands ---- */

enum gv_code reconciler_result_counts(struct kube_client *client, json_t **out, struct gv_err *err)
{
	char *colls[] = {report_path_all(), report_path(NULL, NULL)};
	char *sel = kube_escape(REPORT_SELECTOR);

	*out = json_object();
	for (size_t c = 0; c < GV_ARRAY_LEN(colls); c++) {
		char *path = gv_xasprintf("%s?labelSelector=%s", colls[c], sel);
		struct kube_status st;
		struct gv_err e = {0};
		json_t *items = NULL;
		const json_t *rep, *res;
		size_t i, j;
		enum gv_code rc = clusterstate_list(client, path, 50, &items, &st, &e);

		free(path);
		if (rc && st.http == 404)
			continue; /* CRD not installed: no reports */
		if (rc) {
			rc = gv_err_set(err, rc, "%s", e.msg);
			free(sel);
			free(colls[0]);
			free(colls[1]);
			return rc;
		}
		json_array_foreach(items, i, rep)
		{
			json_array_foreach(json_object_get(rep, "results"), j, res)
			{
				const char *pol = json_string_value(json_object_get(res, "policy"));
				const char *r = json_string_value(json_object_get(res, "result"));
				const char *src = json_string_value(json_object_get(res, "source"));
				char *key;
				json_t *cnt;
				if (!pol || !r)
					continue;
				/* CEL policies' results: "<source>/<ref>" (a ClusterPolicy may
				 * share the name) */
				key = src && (!strcmp(src, REPORT_SOURCE_VPOL) ||
					      !strcmp(src, REPORT_SOURCE_VAP))
					  ? gv_xasprintf("%s/%s", src, pol)
					  : gv_xstrdup(pol);
				cnt = json_object_get(*out, key);
				if (!cnt) {
					cnt =
					    json_pack("{s:i, s:i, s:i, s:i, s:i}", "pass", 0,
						      "fail", 0, "warn", 0, "error", 0, "skip", 0);
					json_object_set_new(*out, key, cnt);
				}
				free(key);
				if (json_object_get(cnt, r))
					json_object_set_new(
					    cnt, r,
					    json_integer(
						json_integer_value(json_object_get(cnt, r)) + 1));
			}
		}
		json_decref(items);
	}
	free(sel);
	free(colls[0]);
	free(colls[1]);
	return GV_OK;
}

static json_t *time_or_null(time_t t)
{
	char buf[64];

	return t > 0 ? json_string(schedule_time_format(t, buf, sizeof(buf))) : json_null();
}

json_t *reconciler_status_cel_row(const char *kind, const char *ref, const json_t *doc,
				  const struct vpol_policy *p, const char *error, bool background,
				  const json_t *state, const json_t *counts,
				  const struct reconciler_global *global, time_t now)
{
	const char *uid =
	    json_string_value(json_object_get(json_object_get(doc, "metadata"), "uid"));
	const char *source =
	    kind && !strcmp(kind, REPORT_SOURCE_VAP) ? REPORT_SOURCE_VAP : REPORT_SOURCE_VPOL;
	bool suspended;
	struct reconciler_sched sched;
	struct scanstate_entry last = {0};
	enum reconciler_when when;
	bool has_last = false;
	time_t next = 0;
	json_t *o = json_object(), *cnt;
	char *ckey;

	if (p) {
		char *key = vpscan_state_key(p);
		const char *text = json_string_value(json_object_get(state, key));
		has_last = text && !scanstate_decode(text, &last, NULL);
		free(key);
	}
	reconciler_sched_resolve(doc, ref, global, &sched);
	when = reconciler_when(&sched, global->suspended, has_last ? &last : NULL, uid,
			       p ? vpscan_fingerprint(p) : 0, now, &next);
	suspended = background && (global->suspended || sched.suspended);
	json_object_set_new(o, "policy", json_string(ref));
	json_object_set_new(o, "kind", json_string(kind ? kind : ""));
	json_object_set_new(o, "background", json_boolean(background));
	json_object_set_new(o, "schedule", json_string(sched.text));
	json_object_set_new(o, "source", json_string(reconciler_source_name(sched.source)));
	if (!p) {
		json_object_set_new(o, "state", json_string("invalid"));
		json_object_set_new(o, "error", json_string(error ? error : "not compiled"));
		next = 0;
	} else if (!background) {
		json_object_set_new(o, "state", json_string("not-background"));
		next = 0;
	} else {
		json_object_set_new(o, "state", json_string(reconciler_when_name(when)));
		if (when == RECONCILER_INVALID)
			json_object_set_new(o, "error", json_string(sched.error));
	}
	json_object_set_new(o, "suspended", json_boolean(suspended));
	if (suspended)
		json_object_set_new(o, "suspendedBy",
				    json_string(global->suspended ? "configmap" : "policy"));
	json_object_set_new(o, "lastScan", time_or_null(has_last ? last.last_scan : 0));
	json_object_set_new(o, "nextScan", time_or_null(next));
	ckey = gv_xasprintf("%s/%s", source, ref);
	cnt = json_object_get(counts, ckey);
	json_object_set_new(o, "results",
			    cnt ? json_incref(cnt)
				: json_pack("{s:i, s:i, s:i, s:i, s:i}", "pass", 0, "fail", 0,
					    "warn", 0, "error", 0, "skip", 0));
	free(ckey);
	reconciler_sched_release(&sched);
	return o;
}

/*
 * The status of one ValidatingPolicy / NamespacedValidatingPolicy document
 * (reconciler_status_cel_row), with the compiler's message when it is not
 * in vs.
 */
static json_t *status_cel(const json_t *doc, const struct view_vpolset *vs, const json_t *state,
			  const json_t *counts, const struct reconciler_global *global, time_t now)
{
	const json_t *md = json_object_get(doc, "metadata");
	const char *name = json_string_value(json_object_get(md, "name"));
	const char *pns = json_string_value(json_object_get(md, "namespace"));
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const struct vpol_policy *p = NULL;
	const char *error = NULL;
	bool background;
	json_t *o;
	char *ref;
	size_t i;
	const json_t *e;

	for (i = 0; i < view_vpolset_count(vs) && !p; i++) {
		const struct vpol_policy *c = view_vpolset_policy(vs, i);
		if (name && !strcmp(vpol_name(c), name) && !strcmp(vpol_kind_name(c), kind) &&
		    !strcmp(vpol_namespace(c), pns ? pns : ""))
			p = c;
	}
	json_array_foreach(view_vpolset_errors(vs), i, e)
	{
		if (!p && name && !strcmp(json_string_value(json_object_get(e, "name")), name))
			error = json_string_value(json_object_get(e, "message"));
	}
	ref = pns && *pns ? gv_xasprintf("%s/%s", pns, name ? name : "")
			  : gv_xstrdup(name ? name : "");
	background =
	    p ? vpscan_background(p)
	      : !json_is_false(json_object_get(
		    json_object_get(json_object_get(json_object_get(doc, "spec"), "evaluation"),
				    "background"),
		    "enabled"));
	o = reconciler_status_cel_row(kind, ref, doc, p, error, background, state, counts, global,
				      now);
	free(ref);
	return o;
}

enum gv_code reconciler_status(struct kube_client *client, const char *namespace,
			       const char *interval, time_t now, json_t **out, struct gv_err *err)
{
	const char *ns = namespace && *namespace ? namespace : "gavel";
	struct clusterstate cs = {0};
	struct reconciler_global global;
	json_t *state = NULL, *counts = NULL;
	const json_t *doc;
	size_t i;
	enum gv_code rc;

	*out = NULL;
	if ((rc = clusterstate_fetch(client, ns, "gavel", &cs, err)) ||
	    (rc = scanstate_read(client, ns, SCANSTATE_CONFIGMAP, &state, err)) ||
	    (rc = reconciler_result_counts(client, &counts, err)))
		goto out;
	reconciler_global_resolve(cs.config_data, interval, &global);
	*out = json_array();
	json_array_foreach(cs.policies, i, doc)
	{
		const json_t *md = json_object_get(doc, "metadata");
		const char *name = json_string_value(json_object_get(md, "name"));
		const char *pns = json_string_value(json_object_get(md, "namespace"));
		const char *kind = json_string_value(json_object_get(doc, "kind"));
		const char *uid = json_string_value(json_object_get(md, "uid"));
		bool cluster = !kind || strcmp(kind, "Policy");
		char *ref = cluster || !pns ? gv_xstrdup(name ? name : "")
					    : gv_xasprintf("%s/%s", pns, name ? name : "");
		char *key = scanstate_key_of(cluster ? NULL : pns, name);
		const char *text = json_string_value(json_object_get(state, key));
		const json_t *bg = json_object_get(json_object_get(doc, "spec"), "background");
		bool background = !json_is_false(bg);
		struct scanstate_entry last = {0};
		bool has_last = text && !scanstate_decode(text, &last, NULL);
		struct gv_err cerr = {0};
		struct engine_policy *p = engine_policy_compile(doc, &cerr);
		struct reconciler_sched sched;
		enum reconciler_when when;
		time_t next = 0;
		json_t *o, *cnt;

		reconciler_sched_resolve(doc, ref, &global, &sched);
		when = reconciler_when(&sched, global.suspended, has_last ? &last : NULL, uid,
				       p ? scan_policy_fingerprint(p) : 0, now, &next);
		o = json_object();
		json_object_set_new(o, "policy", json_string(ref));
		json_object_set_new(o, "kind", json_string(cluster ? "ClusterPolicy" : "Policy"));
		json_object_set_new(o, "background", json_boolean(background));
		json_object_set_new(o, "schedule", json_string(sched.text));
		json_object_set_new(o, "source", json_string(reconciler_source_name(sched.source)));
		if (!p) {
			json_object_set_new(o, "state", json_string("invalid"));
			json_object_set_new(o, "error", json_string(cerr.msg));
			next = 0;
		} else if (!background) {
			json_object_set_new(o, "state", json_string("not-background"));
			next = 0;
		} else {
			json_object_set_new(o, "state", json_string(reconciler_when_name(when)));
			if (when == RECONCILER_INVALID)
				json_object_set_new(o, "error", json_string(sched.error));
		}
		json_object_set_new(
		    o, "suspended",
		    json_boolean(background && (global.suspended || sched.suspended)));
		if (background && (global.suspended || sched.suspended))
			json_object_set_new(o, "suspendedBy",
					    json_string(global.suspended ? "configmap" : "policy"));
		json_object_set_new(o, "lastScan", time_or_null(has_last ? last.last_scan : 0));
		json_object_set_new(o, "nextScan", time_or_null(next));
		cnt = json_object_get(counts, ref);
		json_object_set_new(o, "results",
				    cnt ? json_incref(cnt)
					: json_pack("{s:i, s:i, s:i, s:i, s:i}", "pass", 0, "fail",
						    0, "warn", 0, "error", 0, "skip", 0));
		json_array_append_new(*out, o);
		reconciler_sched_release(&sched);
		if (p)
			engine_policy_unref(p);
		free(ref);
		free(key);
	}
	json_array_foreach(cs.vpolicies, i, doc) json_array_append_new(
	    *out, status_cel(doc, view_state_vpols(cs.state), state, counts, &global, now));
out:
	json_decref(state);
	json_decref(counts);
	clusterstate_release(&cs);
	return rc;
}
