/*
 * metrics.c - Kyverno's policy metrics, one label set for admission and
 * the background scans (metrics.h).
 */
#include "view/metrics.h"

#include <string.h>

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

void view_result_count(struct metrics_family *f, const struct view_result_labels *l)
{
	const char *const v[] = {l->policy_validation_mode,
				 l->policy_type,
				 l->policy_background_mode,
				 l->policy_namespace,
				 l->policy_name,
				 l->resource_kind,
				 l->resource_namespace,
				 l->resource_request_operation,
				 l->rule_name,
				 l->rule_result,
				 l->rule_type ? l->rule_type : "validate",
				 l->rule_execution_cause,
				 l->dry_run ? l->dry_run : "false"};

	metrics_inc(f, v);
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
