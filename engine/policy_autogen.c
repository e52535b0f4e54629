/*
 * policy_autogen.c - rules for Pod controllers generated from Pod rules
 * (autogen, kyverno-semantics.md section 9).
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/policy_int.h"
#include "engine/value.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

/* ---- autogen (section 9) ---- */

/*
 * Sorted by kind name: Kyverno keeps the selected controllers in a sorted
 * set (pkg/autogen, sets.List), so status.autogen.rules and the rules
 * evaluated list them in this order whatever the annotation's order.
 */
static const char *const controllers[] = {
    "DaemonSet", "Deployment", "Job", "ReplicaSet", "ReplicationController", "StatefulSet", NULL};
static const char *const controller_gvk[] = {"apps/v1/DaemonSet",
					     "apps/v1/Deployment",
					     "batch/v1/Job",
					     "apps/v1/ReplicaSet",
					     "v1/ReplicationController",
					     "apps/v1/StatefulSet",
					     NULL};

static bool kinds_has(const json_t *kinds, const char *kind, bool gvk_forms)
{
	size_t i;
	json_t *k;

	json_array_foreach(kinds, i, k)
	{
		struct kind_sel sel;
		bool match;
		if (!json_is_string(k))
			continue;
		if (!strcmp(json_string_value(k), kind))
			return true;
		if (!gvk_forms)
			continue;
		kind_sel_parse(json_string_value(k), &sel);
		match = !strcmp(sel.kind, kind) && sel.sub[0] == '\0';
		kind_sel_release(&sel);
		if (match)
			return true;
	}
	return false;
}

/* Calls fn on each resource description of a match/exclude block. */
static void each_resources(const json_t *block, void (*fn)(const json_t *res, void *ud), void *ud)
{
	size_t i;
	json_t *c;

	if (!json_is_object(block))
		return;
	json_array_foreach(json_object_get(block, "any"), i, c)
	    fn(json_object_get(c, "resources"), ud);
	json_array_foreach(json_object_get(block, "all"), i, c)
	    fn(json_object_get(c, "resources"), ud);
	if (json_object_get(block, "resources"))
		fn(json_object_get(block, "resources"), ud);
}

struct autogen_scan {
	bool disable;
	bool mentions;
};

static void scan_resources(const json_t *res, void *ud)
{
	struct autogen_scan *s = ud;
	const json_t *kinds = json_object_get(res, "kinds");
	size_t i;
	json_t *k;

	if (json_object_get(res, "name") || json_object_get(res, "names") ||
	    json_object_get(res, "selector") || json_object_get(res, "annotations"))
		s->disable = true;
	if (kinds_has(kinds, "Pod", false) && json_array_size(kinds) > 1)
		s->disable = true;
	json_array_foreach(kinds, i, k)
	{
		const char *ks = json_string_value(k);
		if (!ks)
			continue;
		if (!strcmp(ks, "Pod") || !strcmp(ks, "CronJob") || policy_in_set(controllers, ks))
			s->mentions = true;
	}
}

struct pod_scan {
	bool any_kinds;
	bool has_pod;
};

static void scan_pod(const json_t *res, void *ud)
{
	struct pod_scan *s = ud;
	const json_t *kinds = json_object_get(res, "kinds");
	if (json_array_size(kinds))
		s->any_kinds = true;
	if (kinds_has(kinds, "Pod", true))
		s->has_pod = true;
}

static json_t *replace_kinds(const json_t *block, const json_t *newkinds)
{
	json_t *b = json_deep_copy(block);
	const char *lists[] = {"any", "all"};
	size_t i;
	json_t *c;

	for (size_t l = 0; l < 2; l++)
		json_array_foreach(json_object_get(b, lists[l]), i, c)
		{
			json_t *res = json_object_get(c, "resources");
			if (kinds_has(json_object_get(res, "kinds"), "Pod", true))
				json_object_set(res, "kinds", (json_t *)newkinds);
		}
	if (json_object_get(b, "resources")) {
		json_t *res = json_object_get(b, "resources");
		if (kinds_has(json_object_get(res, "kinds"), "Pod", true))
			json_object_set(res, "kinds", (json_t *)newkinds);
	}
	return b;
}

/* Absolute $(/path) references move with the wrapped pattern (section 9.2). */
static char *shift_references(const char *s, const char *prefix)
{
	static const char *const ops[] = {">=", "<=", ">", "<", "!", ""};
	struct gv_buf b = {0};
	const char *p = s, *q;

	while ((q = strstr(p, "$("))) {
		const char *after = q + 2;
		size_t oplen = 0;
		for (size_t i = 0; i < GV_ARRAY_LEN(ops); i++)
			if (!strncmp(after, ops[i], strlen(ops[i]))) {
				oplen = strlen(ops[i]);
				break;
			}
		gv_buf_add(&b, p, (size_t)(after + oplen - p));
		if (after[oplen] == '/')
			gv_buf_adds(&b, prefix);
		p = after + oplen;
	}
	gv_buf_adds(&b, p);
	return gv_buf_detach(&b);
}

/* {spec: {template: P}} or {spec: {jobTemplate: {spec: {template: P}}}} */
static json_t *wrap_pattern(const json_t *p, bool cronjob)
{
	json_t *t = json_object();
	json_object_set(t, "template", (json_t *)p);
	if (cronjob) {
		json_t *jt = json_object();
		json_object_set_new(jt, "spec", t);
		t = json_object();
		json_object_set_new(t, "jobTemplate", jt);
	}
	json_t *out = json_object();
	json_object_set_new(out, "spec", t);
	return out;
}

/* The CEL of a validate.cel rule rewritten for a pod controller; new reference. */
static json_t *cel_autogen(const json_t *cel, bool cronjob)
{
	char *text = json_dumps(cel, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	char *rep = vpol_autogen_text(text, cronjob, false);
	json_t *out = json_loads(rep, JSON_DECODE_ANY, NULL);

	free(text);
	free(rep);
	return out ? out : json_deep_copy(cel);
}

static json_t *autogen_rule(const json_t *rule, const json_t *kinds, bool cronjob)
{
	const char *name = json_string_value(json_object_get(rule, "name"));
	char *newname = gv_xasprintf(cronjob ? "autogen-cronjob-%s" : "autogen-%s", name);
	json_t *r = json_deep_copy(rule), *v, *t;
	char *text, *rep;
	static const char *const from[] = {"request.object.spec", "request.oldObject.spec",
					   "request.object.metadata", "request.oldObject.metadata"};
	static const char *const to_pod[] = {
	    "request.object.spec.template.spec", "request.oldObject.spec.template.spec",
	    "request.object.spec.template.metadata", "request.oldObject.spec.template.metadata"};
	static const char *const to_cron[] = {
	    "request.object.spec.jobTemplate.spec.template.spec",
	    "request.oldObject.spec.jobTemplate.spec.template.spec",
	    "request.object.spec.jobTemplate.spec.template.metadata",
	    "request.oldObject.spec.jobTemplate.spec.template.metadata"};

	if (strlen(newname) > MAX_NAME)
		newname[MAX_NAME] = '\0';
	json_object_set_new(r, "name", json_string(newname));
	free(newname);
	if ((v = json_object_get(r, "match")))
		json_object_set_new(r, "match", replace_kinds(v, kinds));
	if ((v = json_object_get(r, "exclude")))
		json_object_set_new(r, "exclude", replace_kinds(v, kinds));
	v = json_object_get(r, "validate");
	if (json_is_object(v)) {
		if ((t = json_object_get(v, "pattern")))
			json_object_set_new(v, "pattern", wrap_pattern(t, cronjob));
		if (json_is_array(t = json_object_get(v, "anyPattern"))) {
			json_t *arr = json_array();
			size_t i;
			json_t *c;
			json_array_foreach(t, i, c)
			    json_array_append_new(arr, wrap_pattern(c, cronjob));
			json_object_set_new(v, "anyPattern", arr);
		}
	}
	/* CEL expressions: object.spec/metadata gain the template path (cel-semantics.md 4). */
	if (json_is_object(v) && json_object_get(v, "cel"))
		json_object_set_new(v, "cel", cel_autogen(json_object_get(v, "cel"), cronjob));
	if (json_object_get(r, "celPreconditions"))
		json_object_set_new(r, "celPreconditions",
				    cel_autogen(json_object_get(r, "celPreconditions"), cronjob));
	/* Textual variable rewrite over the whole rule. */
	text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	for (size_t i = 0; i < GV_ARRAY_LEN(from); i++) {
		rep = gv_str_replace_all(text, from[i], cronjob ? to_cron[i] : to_pod[i]);
		free(text);
		text = rep;
	}
	rep =
	    shift_references(text, cronjob ? "/spec/jobTemplate/spec/template" : "/spec/template");
	free(text);
	text = rep;
	json_decref(r);
	r = json_loads(text, 0, NULL);
	free(text);
	return r;
}

json_t *autogen_rules(const json_t *doc)
{
	const json_t *spec = json_object_get(doc, "spec");
	const json_t *rules = json_object_get(spec, "rules");
	const char *ann = json_string_value(
	    json_object_get(json_object_get(json_object_get(doc, "metadata"), "annotations"),
			    "pod-policies.kyverno.io/autogen-controllers"));
	json_t *out = json_array();
	struct autogen_scan scan = {0};
	bool sel[7] = {0}, cron = true, any_ctrl = false;
	size_t i;
	json_t *r;

	if (!json_is_array(rules))
		return out;
	json_array_foreach(rules, i, r)
	{
		char *text =
		    json_dumps(json_object_get(r, "mutate"), JSON_COMPACT | JSON_ENCODE_ANY);
		if (json_object_get(r, "generate") || (text && strstr(text, "\"patchesJson6902\"")))
			scan.disable = true;
		free(text);
		each_resources(json_object_get(r, "match"), scan_resources, &scan);
		each_resources(json_object_get(r, "exclude"), scan_resources, &scan);
	}
	if (scan.disable || !scan.mentions)
		return out;
	if (ann && !strcmp(ann, "none"))
		return out;
	if (ann) {
		char *copy = gv_xstrdup(ann), *p = copy, *comma;
		cron = false;
		for (;;) {
			comma = strchr(p, ',');
			if (comma)
				*comma = '\0';
			for (size_t c = 0; controllers[c]; c++)
				if (!strcmp(p, controllers[c]))
					sel[c] = true;
			if (!strcmp(p, "CronJob"))
				cron = true;
			if (!comma)
				break;
			p = comma + 1;
		}
		free(copy);
	} else {
		for (size_t c = 0; controllers[c]; c++)
			sel[c] = true;
	}
	for (size_t c = 0; controllers[c]; c++)
		any_ctrl |= sel[c];
	json_array_foreach(rules, i, r)
	{
		struct pod_scan m = {0}, x = {0};
		json_t *kinds;

		if (!json_object_get(r, "validate"))
			continue;
		each_resources(json_object_get(r, "match"), scan_pod, &m);
		each_resources(json_object_get(r, "exclude"), scan_pod, &x);
		if (!m.has_pod || (x.any_kinds && !x.has_pod))
			continue;
		if (any_ctrl) {
			kinds = json_array();
			for (size_t c = 0; controllers[c]; c++)
				if (sel[c])
					json_array_append_new(kinds,
							      json_string(controller_gvk[c]));
			json_array_append_new(out, autogen_rule(r, kinds, false));
			json_decref(kinds);
		}
		if (cron) {
			kinds = json_pack("[s]", "batch/v1/CronJob");
			json_array_append_new(out, autogen_rule(r, kinds, true));
			json_decref(kinds);
		}
	}
	return out;
}

json_t *engine_autogen_rules(const json_t *doc)
{
	return autogen_rules(doc);
}

/* A match/exclude block as Go serializes MatchResources: `resources` always there. */
static void status_block(json_t *block)
{
	if (json_is_object(block) && !json_object_get(block, "resources"))
		json_object_set_new(block, "resources", json_object());
}

json_t *engine_autogen_status_rules(const json_t *doc)
{
	json_t *rules = autogen_rules(doc), *r, *v;
	size_t i;

	json_array_foreach(rules, i, r)
	{
		status_block(json_object_get(r, "match"));
		status_block(json_object_get(r, "exclude"));
		if (!json_object_get(r, "skipBackgroundRequests"))
			json_object_set_new(r, "skipBackgroundRequests", json_true());
		v = json_object_get(r, "validate");
		if (json_is_object(v) && !json_object_get(v, "allowExistingViolations"))
			json_object_set_new(v, "allowExistingViolations", json_true());
	}
	return rules;
}
