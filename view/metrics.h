/*
 * metrics.h - the policy metrics admission and the background scans both
 * write, registered in one place with Kyverno's names and label sets
 * (Kyverno's pkg/metrics: policyresults, policyruleinfo), so a dashboard built for Kyverno reads
 * gavel.
 *
 *   kyverno_policy_results_total    counter, one per rule result
 *   kyverno_policy_rule_info_total  gauge: 1 per loaded rule (a collector's text)
 *   kyverno_policy_execution_duration_seconds  histogram, one per rule result
 *   kyverno_policy_changes_total    counter, one per policy created, updated, deleted
 *
 * Label values as Kyverno's: policy_validation_mode "enforce" | "audit";
 * policy_type "cluster" | "namespaced" (a Policy or a
 * NamespacedValidatingPolicy is namespaced); policy_background_mode
 * "true" | "false"; policy_namespace "-" for a cluster-wide policy;
 * rule_type "validate"; rule_result pass | fail | warn | error | skip;
 * rule_execution_cause "admission_request" | "background_scan";
 * resource_request_operation create | update | delete | connect (a
 * background scan evaluates as a CREATE: "create"); dry_run "true" |
 * "false".
 */
#ifndef GV_VIEW_METRICS_H
#define GV_VIEW_METRICS_H

#include <stdbool.h>

#include "common/metrics.h"
#include "engine/engine.h"
#include "engine/vpolicy.h"

/* One rule result, as kyverno_policy_results_total labels it. Strings borrowed. */
struct view_result_labels {
	const char *policy_validation_mode;
	const char *policy_type;
	const char *policy_background_mode;
	const char *policy_namespace;
	const char *policy_name;
	const char *resource_kind;
	const char *resource_namespace;
	const char *resource_request_operation;
	const char *rule_name;
	const char *rule_result;
	const char *rule_type;
	const char *rule_execution_cause;
	const char *dry_run;
};

/*
 * Registers kyverno_policy_results_total in r, or finds it (admission and
 * the reconciler share one registry). NULL when r is NULL: counting is then
 * a no-op.
 */
struct metrics_family *view_policy_results_new(struct metrics_registry *r);

/*
 * The policy part of l from a kyverno.io policy: validation mode from the
 * rule's action (enforce when ENGINE_ENFORCE), type, background mode,
 * namespace ("-" when cluster-wide) and name. The other fields are left.
 */
void view_result_labels_policy(struct view_result_labels *l, const struct engine_policy *p,
			       enum engine_action action);

/*
 * The same from a ValidatingPolicy / NamespacedValidatingPolicy: enforce
 * when its validationActions hold Deny; background mode from
 * evaluation.background.enabled.
 */
void view_result_labels_vpol(struct view_result_labels *l, const struct vpol_policy *p);

/* Counts one rule result in f (may be NULL). rule_type "validate" and dry_run "false" when NULL. */
void view_result_count(struct metrics_family *f, const struct view_result_labels *l);

/*
 * kyverno_policy_execution_duration_seconds: a histogram of the seconds
 * one rule's evaluation took (engine_rule_result.seconds), with the labels
 * of kyverno_policy_results_total and Kyverno's default buckets (0.005,
 * 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 25, 30).
 * Registers it in r or finds it; NULL when r is NULL.
 */
struct metrics_family *view_policy_duration_new(struct metrics_registry *r);

/*
 * view_result_count(count, l) and view_result_observe(duration, l,
 * seconds) with the labels hashed once (either family may be NULL).
 */
void view_result_record(struct metrics_family *count, struct metrics_family *duration,
			const struct view_result_labels *l, double seconds);

/* Observes seconds for the result labelled l in f (may be NULL); defaults as view_result_count. */
void view_result_observe(struct metrics_family *f, const struct view_result_labels *l,
			 double seconds);

/*
 * kyverno_policy_changes_total: a counter of policy changes with Kyverno's
 * labels policy_validation_mode (spec.validationFailureAction: "enforce"
 * when Enforce, else "audit"), policy_type, policy_background_mode,
 * policy_namespace, policy_name and policy_change_type "created" |
 * "updated" | "deleted". Registers it in r or finds it; NULL when r is NULL.
 */
struct metrics_family *view_policy_changes_new(struct metrics_registry *r);

/*
 * Counts in f (may be NULL) the changes from the kyverno.io policies of
 * old (NULL: none) to those of cur (NULL: none), by kind, namespace and
 * name: a policy only in cur is "created", only in old "deleted", in both
 * with another spec "updated" (labelled as the old one, and once more as
 * the new one when its validation or background mode changed), as
 * Kyverno's policy controller counts them. Policies loaded from files
 * count as well.
 */
void view_policy_changes_count(struct metrics_family *f, const struct engine_policyset *old,
			       const struct engine_policyset *cur);

struct view_state;

/*
 * Appends kyverno_policy_rule_info_total (a gauge: 1 per rule of each
 * loaded kyverno.io policy and ValidatingPolicy, labels
 * policy_validation_mode, policy_type, policy_background_mode,
 * policy_namespace, policy_name, rule_name, rule_type, status_ready "true")
 * for the policies of st, in exposition format: a metrics collector's text,
 * so a policy no longer loaded leaves no series behind. st may be NULL (the
 * family's header only).
 */
void view_policy_rule_info_render(const struct view_state *st, struct gv_buf *out);

#endif
