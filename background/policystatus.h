/*
 * policystatus.h - the `status` of each kyverno.io ClusterPolicy and
 * Policy, written by the leader through the status subresource, as
 * Kyverno writes it (DESIGN.md "gavel in the cluster"), so that
 * `kubectl wait --for=condition=Ready`, Argo CD's health check and
 * Kyverno's own e2e suite see what they expect:
 *
 *   status:
 *     ready: true
 *     conditions:
 *     - type: Ready
 *       status: "True"              "False" when the policy does not compile
 *       reason: Succeeded           Failed
 *       message: Ready              the compile error ("/spec/rules/0/...: ...")
 *       lastTransitionTime: "2026-01-01T10:00:00Z"
 *     - type: BackgroundScan        only for a compiled policy with a schedule of its own
 *       status: "True"              "False" when suspended or not scheduled
 *       reason: Scheduled           Suspended | InvalidSchedule
 *       message: "last scan 2026-01-01T10:00:00Z, next scan 2026-01-01T11:00:00Z"
 *       lastTransitionTime: ...
 *     autogen:
 *       rules: [...]                engine_autogen_status_rules(); absent when none
 *     rulecount: {validate: 1, generate: 0, mutate: 0, verifyimages: 0}
 *     validatingadmissionpolicy: {generated: false, message: ""}
 *
 * rulecount counts spec.rules (before autogen) by their kind of rule, as
 * Kyverno does. lastTransitionTime changes only when a condition's status
 * does (metav1.Condition's rule). A status is written only when it differs
 * from the object's (never on every pass): PUT .../status with the
 * object's resourceVersion, and on 409 read the object again and retry, at
 * most POLICYSTATUS_ATTEMPTS times; failures are logged and retried on a
 * later pass.
 */
#ifndef GV_BACKGROUND_POLICYSTATUS_H
#define GV_BACKGROUND_POLICYSTATUS_H

#include <stdbool.h>
#include <time.h>
#include <jansson.h>

#include "background/reconciler.h"
#include "background/snapshot.h"
#include "background/webhookconfig.h"
#include "common/gv.h"
#include "kube/kube.h"

#define POLICYSTATUS_ATTEMPTS  3
#define POLICYSTATUS_PERIOD_MS 1000
#define POLICYSTATUS_REFRESH_S 15 /* scan times are read again at least this often */

/* A policy's background scan, for the BackgroundScan condition. */
struct policystatus_scan {
	/*
	 * false: no BackgroundScan condition. True for a background policy
	 * with its own scanInterval/scanSchedule/scanSuspend, or while the
	 * global backgroundScanSuspend holds (policystatus.c says why).
	 */
	bool present;
	enum reconciler_when when; /* reconciler_when() of the policy */
	const char *suspended_by; /* "spec.scanSuspend" or "backgroundScanSuspend" when suspended */
	const char *error;	  /* the schedule's error (RECONCILER_INVALID) */
	time_t last, next;	  /* 0 = never / unknown */
};

/*
 * The status a policy document (borrowed) should carry: compile_error is
 * NULL for a policy that compiles, else the message for the Failed Ready
 * condition; scan may be NULL (no BackgroundScan condition); current is
 * the object's status now (borrowed, NULL = none), whose
 * lastTransitionTimes are kept for conditions whose status is unchanged;
 * now is for new transitions. New reference.
 */
json_t *policystatus_build(const json_t *doc, const char *compile_error,
			   const struct policystatus_scan *scan, const json_t *current, time_t now);

/*
 * The status of a compiled ValidatingPolicy / NamespacedValidatingPolicy
 * whose current status is `current` (borrowed, NULL = none), in
 * status.conditionStatus as Kyverno writes it: ready true, conditions
 * WebhookConfigured ("Webhook configured.", written once its webhooks are
 * registered) and RBACPermissionsGranted ("Policy is ready for
 * reporting."), both True/Succeeded, then the BackgroundScan condition
 * above (present scans only); other conditions are kept as they are. New
 * reference.
 */
json_t *policystatus_build_cel(const json_t *current, const struct policystatus_scan *scan,
			       time_t now);

struct policystatus_config {
	struct kube_client *client;	 /* borrowed, required */
	struct snapshot *snapshot;	 /* borrowed, required */
	const struct reconciler *leader; /* borrowed; NULL = this replica always writes */
	/*
	 * borrowed, may be NULL: the generated webhooks; a compiled policy
	 * with spec.admission not false is written Ready only once they
	 * cover it (webhookconfig_covers), as Kyverno does
	 */
	struct webhookconfig *webhooks;
	const char *namespace; /* gavel's (scan state ConfigMap); NULL = "gavel" */
	const char *interval;  /* --background-scan-interval; NULL = 1h */
	long period_ms;	       /* 0 = POLICYSTATUS_PERIOD_MS */
};

struct policystatus;

/* Starts the writer's thread (NULL only when no thread can be made). */
struct policystatus *policystatus_start(const struct policystatus_config *cfg);

/* Stops the thread and frees. NULL is fine. */
void policystatus_stop(struct policystatus *ps);

/* Status writes done (tests, metrics). */
unsigned long policystatus_writes(const struct policystatus *ps);

#endif
