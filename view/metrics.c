/*
 * metrics.c - Kyverno's policy metrics, one label set for admission and
 * the background scans (metrics.h).
 */
#include "view/metrics.h"

#include <string.h>
#include <strings.h>

#include "view/view.h"
#include "common/banned.h"

static const char *const result_labels[] = {"policy_validation_mode",
					    "policy_type",
					    "policy_background_mode",
					    "policy_namespace",
					    "policy_name",
					    "resource_kind",
					    "resource_namespace",
					    "resource_request_operation",
					    "rule_name",
					    "rule_result",
					    "rule_type",
					    "rule_execution_cause",
					    "dry_run",
					    NULL};

struct metrics_family *view_policy_results_new(struct metrics_registry *r)
{
	if (!r)
		return NULL;
	return metrics_counter_new(r, "kyverno_policy_results_total",
				   "Rule results of admission requests and background scans.",
				   result_labels);
}

void view_result_labels_policy(struct view_result_labels *l, const struct engine_policy *p,
			       enum engine_action action)
{
	bool namespaced = *engine_policy_namespace(p) != '\0';

	l->policy_validation_mode = action == ENGINE_ENFORCE ? "enforce" : "audit";
	l->policy_type = namespaced ? "namespaced" : "cluster";
	l->policy_background_mode = engine_policy_background(p) ? "true" : "false";
	l->policy_namespace = namespaced ? engine_policy_namespace(p) : "-";
	l->policy_name = engine_policy_name(p);
}

void view_result_labels_vpol(struct view_result_labels *l, const struct vpol_policy *p)
{
	bool namespaced = *vpol_namespace(p) != '\0';

	l->policy_validation_mode = view_vpol_actions(p) & VIEW_VPOL_DENY ? "enforce" : "audit";
	l->policy_type = namespaced ? "namespaced" : "cluster";
	l->policy_background_mode = view_vpol_background(p) ? "true" : "false";
	l->policy_namespace = namespaced ? vpol_namespace(p) : "-";
	l->policy_name = vpol_name(p);
}

/* The label values of a rule result, in result_labels' order (13). */
static void result_values(const struct view_result_labels *l, const char *v[13])
{
	v[0] = l->policy_validation_mode;
	v[1] = l->policy_type;
	v[2] = l->policy_background_mode;
	v[3] = l->policy_namespace;
	v[4] = l->policy_name;
	v[5] = l->resource_kind;
	v[6] = l->resource_namespace;
	v[7] = l->resource_request_operation;
	v[8] = l->rule_name;
	v[9] = l->rule_result;
	v[10] = l->rule_type ? l->rule_type : "validate";
	v[11] = l->rule_execution_cause;
	v[12] = l->dry_run ? l->dry_run : "false";
}

void view_result_count(struct metrics_family *f, const struct view_result_labels *l)
{
	const char *v[13];

	result_values(l, v);

	metrics_inc(f, v);
}

void view_result_record(struct metrics_family *count, struct metrics_family *duration,
			const struct view_result_labels *l, double seconds)
{
	const char *v[13];
	struct metrics_key k;

	if (!count && !duration)
		return;
	result_values(l, v);
	metrics_key_make(count ? count : duration, v, &k); /* both have result_labels */
	metrics_add_key(count, &k, 1);
	metrics_observe_key(duration, &k, seconds < 0 ? 0 : seconds);
	metrics_key_release(&k);
}

/* Kyverno's default histogram buckets (its metrics config's bucketBoundaries). */
static const double duration_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
					  2.5,	 5,    10,    15,   20,	 25,   30};

struct metrics_family *view_policy_duration_new(struct metrics_registry *r)
{
	if (!r)
		return NULL;
	return metrics_histogram_new(r, "kyverno_policy_execution_duration_seconds",
				     "Seconds a rule's evaluation took, for admission requests "
				     "and background scans.",
				     result_labels, duration_buckets,
				     sizeof(duration_buckets) / sizeof(duration_buckets[0]));
}

void view_result_observe(struct metrics_family *f, const struct view_result_labels *l,
			 double seconds)
{
	const char *v[13];

	result_values(l, v);

	metrics_observe(f, v, seconds < 0 ? 0 : seconds);
}

static const char *const change_labels[] = {"policy_validation_mode",
					    "policy_type",
					    "policy_background_mode",
					    "policy_namespace",
					    "policy_name",
					    "policy_change_type",
					    NULL};

struct metrics_family *view_policy_changes_new(struct metrics_registry *r)
{
	if (!r)
		return NULL;
	return metrics_counter_new(r, "kyverno_policy_changes_total",
				   "Policies created, updated and deleted.", change_labels);
}

static const json_t *policy_spec(const struct engine_policy *p)
{
	return json_object_get(engine_policy_doc(p), "spec");
}

static bool policy_enforce(const struct engine_policy *p)
{
	const char *a =
	    json_string_value(json_object_get(policy_spec(p), "validationFailureAction"));

	return a && !strcasecmp(a, "enforce");
}

static void change_count(struct metrics_family *f, const struct engine_policy *p, const char *type)
{
	bool namespaced = *engine_policy_namespace(p) != '\0';
	const char *const v[] = {policy_enforce(p) ? "enforce" : "audit",
				 namespaced ? "namespaced" : "cluster",
				 engine_policy_background(p) ? "true" : "false",
				 namespaced ? engine_policy_namespace(p) : "-",
				 engine_policy_name(p),
				 type};

	metrics_inc(f, v);
}

static const struct engine_policy *set_find(const struct engine_policyset *s,
					    const struct engine_policy *p)
{
	size_t n = s ? engine_policyset_count(s) : 0;

	for (size_t i = 0; i < n; i++) {
		const struct engine_policy *q = engine_policyset_get(s, i);
		if (!strcmp(engine_policy_kind(q), engine_policy_kind(p)) &&
		    !strcmp(engine_policy_namespace(q), engine_policy_namespace(p)) &&
		    !strcmp(engine_policy_name(q), engine_policy_name(p)))
			return q;
	}
	return NULL;
}

void view_policy_changes_count(struct metrics_family *f, const struct engine_policyset *old,
			       const struct engine_policyset *cur)
{
	size_t nold = old ? engine_policyset_count(old) : 0;
	size_t ncur = cur ? engine_policyset_count(cur) : 0;

	if (!f)
		return;
	for (size_t i = 0; i < ncur; i++) {
		const struct engine_policy *p = engine_policyset_get(cur, i);
		const struct engine_policy *was = set_find(old, p);
		if (!was) {
			change_count(f, p, "created");
		} else if (was != p && !json_equal(policy_spec(was), policy_spec(p))) {
			change_count(f, was, "updated");
			if (engine_policy_background(was) != engine_policy_background(p) ||
			    policy_enforce(was) != policy_enforce(p))
				change_count(f, p, "updated");
		}
	}
	for (size_t i = 0; i < nold; i++) {
		const struct engine_policy *p = engine_policyset_get(old, i);
		if (!set_find(cur, p))
			change_count(f, p, "deleted");
	}
}

/* A label value escaped as the exposition format wants. */
static void label(struct gv_buf *out, const char *name, const char *v, bool first)
{
	gv_buf_addf(out, "%s%s=\"", first ? "" : ",", name);
	for (const char *c = v ? v : ""; *c; c++) {
		if (*c == '\\' || *c == '"')
			gv_buf_addc(out, '\\');
		if (*c == '\n') {
			gv_buf_adds(out, "\\n");
			continue;
		}
		gv_buf_addc(out, *c);
	}
	gv_buf_addc(out, '"');
}

static void rule_info(struct gv_buf *out, const char *mode, const char *type, const char *bg,
		      const char *ns, const char *name, const char *rule, const char *rule_type)
{
	gv_buf_adds(out, "kyverno_policy_rule_info_total{");
	label(out, "policy_validation_mode", mode, true);
	label(out, "policy_type", type, false);
	label(out, "policy_background_mode", bg, false);
	label(out, "policy_namespace", ns, false);
	label(out, "policy_name", name, false);
	label(out, "rule_name", rule, false);
	label(out, "rule_type", rule_type, false);
	label(out, "status_ready", "true", false);
	gv_buf_adds(out, "} 1\n");
}

void view_policy_rule_info_render(const struct view_state *st, struct gv_buf *out)
{
	const struct engine_policyset *set = st ? view_state_policyset(st) : NULL;
	struct view_vpolset *vs = st ? view_state_vpols(st) : NULL;

	gv_buf_adds(out, "# HELP kyverno_policy_rule_info_total The rules of the loaded "
			 "policies, 1 each.\n# TYPE kyverno_policy_rule_info_total gauge\n");
	for (size_t i = 0; set && i < engine_policyset_count(set); i++) {
		const struct engine_policy *p = engine_policyset_get(set, i);
		bool namespaced = *engine_policy_namespace(p) != '\0';
		for (size_t r = 0; r < engine_policy_rule_count(p); r++) {
			const char *un = engine_policy_rule_unsupported(p, r);
			/* mutate, generate, verifyImages keep their type; validate otherwise */
			const char *type =
			    un && (!strcmp(un, "mutate") || !strcmp(un, "generate") ||
				   !strcmp(un, "verifyImages"))
				? un
				: "validate";
			rule_info(out,
				  engine_policy_rule_action(p, r) == ENGINE_ENFORCE ? "enforce"
										    : "audit",
				  namespaced ? "namespaced" : "cluster",
				  engine_policy_background(p) ? "true" : "false",
				  namespaced ? engine_policy_namespace(p) : "-",
				  engine_policy_name(p), engine_policy_rule_name(p, r), type);
		}
	}
	for (size_t i = 0; vs && i < view_vpolset_count(vs); i++) {
		const struct vpol_policy *p = view_vpolset_policy(vs, i);
		struct view_result_labels l = {0};
		if (vpol_kind(p) == VPOL_VAP)
			continue;
		view_result_labels_vpol(&l, p);
		rule_info(out, l.policy_validation_mode, l.policy_type, l.policy_background_mode,
			  l.policy_namespace, l.policy_name, "", "validate");
	}
}
