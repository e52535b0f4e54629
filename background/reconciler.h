/*
 * reconciler.h - the background reconciler: finds the objects that already
 * violate policies and reports them in PolicyReports, on the schedule each
 * policy asks for. DESIGN.md "Background"; kyverno-semantics.md sections 7
 * (background mode) and 8.6 (report entries).
 *
 * It ties together:
 *   snapshot.h   the policy set, namespace labels and gavel's ConfigMap
 *   schedule.h   intervals and cron: when each policy is due
 *   scanstate.h  each policy's last completed scan, persisted in the cluster
 *   nsscan.h     one scan cycle, namespace by namespace (also `gavel scan`)
 *   scan.h       one namespace's scan: discovery, paged lists, worker pool, engine
 *   report.h     the report model and its writer
 *   leader.h     the Lease: only the leader scans and writes scan results
 *   audit_queue.h  the admission results queue, drained into the same reports
 *
 * Schedules. Global: backgroundScanInterval in gavel's ConfigMap (a Go
 * duration), else --background-scan-interval (default 1h); ConfigMap
 * changes apply at the next tick, without a restart; a ConfigMap value
 * that does not parse is logged (once per value) and the flag's interval
 * used. Per policy: spec.scanSchedule (cron, schedule.h) or
 * spec.scanInterval (Go duration) instead of the global interval. A policy
 * whose schedule does not parse, or that sets both, is logged at error
 * level with its name and reason and is NOT scanned (it does not fall
 * back to the global interval). Each policy is due at
 * schedule_next(last scan) + jitter (schedule_due(); jitter =
 * schedule_jitter(policy, schedule_period())): a fire missed while gavel
 * was down (or suspended) runs once, never in a burst. A policy never
 * scanned, created again (other uid) or whose rules changed (other
 * scan_policy_fingerprint()) is due at once. Last scans live in the
 * ConfigMap SCANSTATE_CONFIGMAP (scanstate.h), read when leadership starts.
 *
 * Suspend: backgroundScanSuspend "true" (Go ParseBool spellings) in the
 * ConfigMap suspends every schedule, spec.scanSuspend: true one policy. A
 * cycle already running finishes. Changes are logged at info level and
 * shown by gavel_background_scan_suspended{policy} and `gavel status`.
 *
 * One thread (started by reconciler_start) loops about every tick:
 *   - drains the admission queue into a model of admission results alone
 *     (every replica: admission results are upserts, written with the 409
 *     merge of report.h, so replicas do not lose each other's results);
 *     once written, the model is emptied;
 *   - when the policy set changed: rebuilds the schedule table; the leader
 *     removes results of deleted policies, rules and background: false
 *     (nsscan_prune: namespace by namespace), as it does once per
 *     leadership;
 *   - on the leader only (always, without --leader-elect): the due
 *     policies' scan cycle, the namespace-by-namespace scan of nsscan.h
 *     that `gavel scan` runs (memory: a few namespaces' reports and list
 *     pages, whatever the cluster's size), which writes each namespace's
 *     reports as it goes; a memo of the inputs each policy's results were
 *     made under (nsscan_memo) lets a cycle where nothing changed evaluate
 *     and write nothing; their last-scan times are written to the state
 *     ConfigMap only after the cycle, so a replica killed mid-cycle leaves
 *     the policy due for the next leader;
 *   - flushes the admission results when a cycle ended or they waited for
 *     flush_ms; API errors are retried with capped backoff (5 s to 5
 *     min).
 * Losing leadership stops the cycle between pages and namespaces, and the
 * writes; the memo is forgotten, so that a new leadership starts from what
 * the reports say.
 *
 * Metrics (cfg.metrics): gavel_background_scan_duration_seconds
 * (histogram, per cycle), gavel_background_scan_resources_processed_total,
 * kyverno_policy_results_total{policy_validation_mode="background"} (the
 * admission handler's family), gavel_background_scan_suspended{policy},
 * gavel_background_scan_last_success_timestamp_seconds{policy} (rendered at
 * scrape time from the schedule table), gavel_leader (leader.h; 1 without
 * --leader-elect).
 */
#ifndef GV_BACKGROUND_RECONCILER_H
#define GV_BACKGROUND_RECONCILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <jansson.h>

#include "view/view.h"
#include "common/metrics.h"
#include "background/audit_queue.h"
#include "background/report.h"
#include "background/scan.h"
#include "background/scanstate.h"
#include "background/schedule.h"
#include "background/snapshot.h"
#include "common/gv.h"
#include "engine/engine.h"
#include "kube/kube.h"

#define RECONCILER_DEFAULT_INTERVAL "1h"
#define RECONCILER_TICK_MS	    1000
#define RECONCILER_FLUSH_MS	    2000
#define RECONCILER_BACKOFF_MIN_S    5
#define RECONCILER_BACKOFF_MAX_S    300

/* ---- schedules (pure) ---- */

/* Where a policy's schedule comes from. */
enum reconciler_source { RECONCILER_GLOBAL, RECONCILER_INTERVAL, RECONCILER_CRON };

/* "global", "spec.scanInterval", "spec.scanSchedule". */
const char *reconciler_source_name(enum reconciler_source s);

/* The global settings from gavel's ConfigMap and the flag. */
struct reconciler_global {
	struct schedule
	    interval;	     /* always valid (the flag's, else 1h, when the ConfigMap's is bad) */
	char text[64];	     /* the interval in force as written ("1h") */
	bool from_configmap; /* text came from backgroundScanInterval */
	bool suspended;	     /* backgroundScanSuspend */
	char error[600];     /* "" or why a ConfigMap value was not used */
};

/*
 * Reads backgroundScanInterval and backgroundScanSuspend from data (the
 * ConfigMap's data, borrowed; NULL = none) over flag_interval (NULL =
 * RECONCILER_DEFAULT_INTERVAL; a flag that does not parse is also
 * replaced by the default, with error set). backgroundScanSuspend takes
 * Go's ParseBool spellings (1 t T TRUE true True, 0 f F FALSE false
 * False); anything else is an error and counts as false.
 */
void reconciler_global_resolve(const json_t *data, const char *flag_interval,
			       struct reconciler_global *out);

/* A policy's schedule. Release with reconciler_sched_release (it may own a time zone). */
struct reconciler_sched {
	bool valid; /* false: the policy's schedule is invalid: it is not scanned */
	enum reconciler_source source;
	char text[256];	   /* the schedule as written */
	char error[700];   /* when !valid: "spec.scanSchedule \"...\": <reason>" */
	struct schedule s; /* when valid */
	time_t jitter;	   /* schedule_jitter(ref, schedule_period(&s)) */
	bool suspended;	   /* spec.scanSuspend: true */
};

/*
 * Resolves the schedule of a policy document (borrowed): spec.scanSchedule
 * (schedule_parse_cron), spec.scanInterval (schedule_parse_interval), both
 * (invalid: "spec.scanInterval and spec.scanSchedule are both set"), or
 * neither: global's interval. A non-string value is invalid too.
 * ref is the policy's report name ("name" or "ns/name"), for the jitter.
 */
void reconciler_sched_resolve(const json_t *doc, const char *ref,
			      const struct reconciler_global *global, struct reconciler_sched *out);
void reconciler_sched_release(struct reconciler_sched *s);

enum reconciler_when {
	RECONCILER_DUE,	      /* scan now */
	RECONCILER_WAITING,   /* *next is the time it becomes due */
	RECONCILER_SUSPENDED, /* globally or by spec.scanSuspend */
	RECONCILER_INVALID,   /* bad schedule: never scanned */
	RECONCILER_NEVER,     /* the schedule never fires again */
};

/* "due", "waiting", "suspended", "invalid", "never". */
const char *reconciler_when_name(enum reconciler_when w);

/*
 * Whether a policy is due at now. last: its state entry (NULL = never
 * scanned); an entry whose uid differs from uid (both known) or whose
 * fingerprint differs from fingerprint (both non-zero) counts as never
 * scanned. *next (may be NULL) receives when it is due (now when due, 0
 * when suspended, invalid or never). Suspension wins over everything; a
 * resumed policy is due at most once for all the fires it missed.
 */
enum reconciler_when reconciler_when(const struct reconciler_sched *s, bool global_suspended,
				     const struct scanstate_entry *last, const char *uid,
				     uint64_t fingerprint, time_t now, time_t *next);

/* ---- the running reconciler ---- */

struct reconciler_config {
	struct kube_client *client;	  /* borrowed: scans, reports, scan state; required */
	const struct kube_config *kube;	  /* the Lease elector makes its own client from it */
	struct snapshot *snapshot;	  /* borrowed: policies, namespaces, ConfigMap; required */
	struct audit_queue *queue;	  /* borrowed; NULL = no admission results */
	struct metrics_registry *metrics; /* borrowed; NULL = no metrics */
	const struct view_context *context; /* borrowed; NULL = context entries skipped */
	struct kube_events *events; /* borrowed; NULL = no scan Events (background/events.h) */
	const char *namespace; /* gavel's: state ConfigMap, Lease, never scanned; NULL = "gavel" */
	const char *state_configmap; /* NULL = SCANSTATE_CONFIGMAP */
	const char *interval;	     /* --background-scan-interval; NULL = "1h" */
	int batch_size;		     /* --background-scan-batch-size; <= 0: 500 */
	int workers;		     /* --background-scan-workers; <= 0: 2 */
	bool incremental;	     /* --incremental-scan (serve's default: true) */
	size_t resource_limit;	     /* --background-scan-resource-limit; 0 = none */
	bool split;		     /* --split-policy-report */
	bool resource_reports;	     /* --report-layout resource: one report per resource */
	const char *report_source;   /* --report-source: NULL = "gavel", or "kyverno" */
	unsigned allowed_results;    /* --allowed-results (report_options.allowed); 0 = all */
	bool leader_elect;	     /* --leader-elect; false: this process always leads */
	const char *identity;	     /* Lease holder identity; NULL = leader_default_identity() */
	/* Lease timings in ms; 0 = leader.h's defaults (15 s / 10 s / 2 s). */
	long lease_duration_ms, renew_deadline_ms, retry_period_ms;
	long tick_ms;  /* 0 = RECONCILER_TICK_MS */
	long flush_ms; /* 0 = RECONCILER_FLUSH_MS */
};

struct reconciler;

/*
 * Validates cfg (GV_EINVAL: a --background-scan-interval that does not
 * parse, a bad Lease timing), registers the metrics, starts the elector
 * (leader_elect) and the reconciler's thread. The first cycle runs once the
 * snapshot has published a state and, with leader_elect, this replica
 * leads.
 */
enum gv_code reconciler_start(const struct reconciler_config *cfg, struct reconciler **out,
			      struct gv_err *err);

/*
 * Stops: a cycle in progress stops at its next page, the thread ends after
 * a last flush of admission results (at most a few seconds), the elector
 * releases the Lease, everything is freed. The snapshot, queue, client and
 * registry are the caller's and must outlive this call. NULL is fine.
 */
void reconciler_stop(struct reconciler *r);

/* Whether this replica leads (always true without leader_elect). */
bool reconciler_leading(const struct reconciler *r);

/* Completed scan cycles since the start (tests, the e2e driver). */
uint64_t reconciler_cycles(const struct reconciler *r);

/* ---- one-shot commands (`gavel scan`: nsscan.h) ---- */

/*
 * `gavel status`: one object per policy (new reference to an array, in
 * ClusterPolicy-then-Policy, name order, then the ValidatingPolicies and
 * NamespacedValidatingPolicies, kind "ValidatingPolicy" /
 * "NamespacedValidatingPolicy", whose schedules are read the same way):
 *   {"policy": ref, "kind", "background": bool, "schedule": text,
 *    "source": "global"|"spec.scanInterval"|"spec.scanSchedule",
 *    "state": reconciler_when_name(), "error": reason (invalid only),
 *    "suspended": bool, "suspendedBy": "configmap"|"policy" (when suspended),
 *    "lastScan": RFC 3339 or null, "nextScan": RFC 3339 or null,
 *    "results": {"pass", "fail", "warn", "error", "skip"} from the reports}
 * at time now; interval is serve's --background-scan-interval (NULL = 1h),
 * used when the ConfigMap has no backgroundScanInterval. GV_ENET on API
 * errors.
 */
enum gv_code reconciler_status(struct kube_client *client, const char *namespace,
			       const char *interval, time_t now, json_t **out, struct gv_err *err);

/*
 * One CEL policy's row of reconciler_status() (the fields above): kind
 * (ValidatingPolicy, NamespacedValidatingPolicy or ValidatingAdmissionPolicy,
 * whose results are counted under REPORT_SOURCE_VAP, the others' under
 * REPORT_SOURCE_VPOL), ref its policy ref, doc the policy document (may be
 * NULL; its schedule fields and uid), p the compiled policy (NULL: state
 * "invalid" with error, or "not compiled"), background false: state
 * "not-background", never suspended. state is the scan-state ConfigMap's
 * data (vpscan_state_key), counts reconciler_result_counts()'s. New
 * reference; all parameters borrowed.
 */
json_t *reconciler_status_cel_row(const char *kind, const char *ref, const json_t *doc,
				  const struct vpol_policy *p, const char *error, bool background,
				  const json_t *state, const json_t *counts,
				  const struct reconciler_global *global, time_t now);

/*
 * The results in gavel's reports (namespaced and cluster; a report kind
 * that is not served has none), counted per policy: *out (new reference)
 * {key: {"pass", "fail", "warn", "error", "skip"}}, the key being the
 * policy ref of a kyverno.io policy's results and "<source>/<ref>" of a
 * CEL policy's (REPORT_SOURCE_VPOL, REPORT_SOURCE_VAP: a ClusterPolicy may
 * have the same name). GV_ENET (err filled) when a list fails.
 */
enum gv_code reconciler_result_counts(struct kube_client *client, json_t **out, struct gv_err *err);

#endif
