/*
 * policy.c - loading and compiling ClusterPolicy / Policy documents
 * (kyverno-semantics.md sections 1, 7.1, 9) and the field checks the
 * policy files share. Rules are compiled in policy_rule.c (bodies in
 * policy_body.c), autogen is policy_autogen.c, the admission checks
 * policy_checks.c, PolicyExceptions policy_exception.c and policy sets
 * policy_set.c; they share engine/policy_int.h.
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/policy_int.h"
#include "engine/value.h"
#include "common/banned.h"

static const char *const spec_fields[] = {"rules",
					  "background",
					  "admission",
					  "validationFailureAction",
					  "validationFailureActionOverrides",
					  "failurePolicy",
					  "webhookConfiguration",
					  "emitWarning",
					  "applyRules",
					  "webhookTimeoutSeconds",
					  "mutateExistingOnPolicyUpdate",
					  "generateExisting",
					  "generateExistingOnPolicyUpdate",
					  "useServerSideApply",
					  "schemaValidation",
					  "evaluation",
					  "scanInterval",
					  "scanSchedule",
					  "scanSuspend",
					  NULL};

bool policy_in_set(const char *const *set, const char *k)
{
	for (; *set; set++)
		if (!strcmp(*set, k))
			return true;
	return false;
}

void policy_ptr_push(struct gv_buf *ptr, const char *seg)
{
	gv_pointer_add(ptr, seg);
}

void policy_ptr_pushi(struct gv_buf *ptr, size_t i)
{
	char idx[24];
	snprintf(idx, sizeof(idx), "%zu", i);
	gv_pointer_add(ptr, idx);
}

void policy_ptr_pop(struct gv_buf *ptr, size_t base)
{
	ptr->len = base;
	if (ptr->data)
		ptr->data[base] = '\0';
}

enum gv_code policy_check_fields(const json_t *obj, const char *const *known, struct gv_buf *ptr,
				 struct gv_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v)
	{
		if (!policy_in_set(known, k)) {
			size_t base = ptr->len;
			policy_ptr_push(ptr, k);
			gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "unknown field \"%s\"", k);
			policy_ptr_pop(ptr, base);
			return GV_EINVAL;
		}
	}
	return GV_OK;
}

/* Spellings Kyverno's CRDs accept (manifests/crds, the enums of the schema). */
static const char *const action_values[] = {"audit", "enforce", "Audit", "Enforce", NULL};
static const char *const failure_policy_values[] = {"Ignore", "Fail", NULL};
static const char *const apply_rules_values[] = {"All", "One", NULL};

/*
 * Checks the enumerated field obj.key against values (when present), with
 * the API server's message for a value outside a CRD enum. ptr is the
 * pointer of obj; the error's pointer is ptr + "/key".
 */
enum gv_code policy_check_enum(const json_t *obj, const char *key, const char *const *values,
			       const struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *v = json_object_get(obj, key);
	struct gv_buf at = {0}, list = {0};
	enum gv_code rc = GV_OK;

	if (!v || json_is_null(v))
		return GV_OK;
	for (const char *const *s = values; *s; s++)
		if (json_is_string(v) && !strcmp(json_string_value(v), *s))
			return GV_OK;
	for (const char *const *s = values; *s; s++)
		gv_buf_addf(&list, "%s\"%s\"", s == values ? "" : ", ", *s);
	gv_buf_adds(&at, gv_buf_str(ptr));
	gv_pointer_add(&at, key);
	if (json_is_string(v))
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(&at),
				 "Unsupported value: \"%s\": supported values: %s",
				 json_string_value(v), gv_buf_str(&list));
	else
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(&at),
				 "Invalid value: %s must be a string, one of %s", key,
				 gv_buf_str(&list));
	gv_buf_release(&at);
	gv_buf_release(&list);
	return rc;
}

/* Checks that obj.key, when present, is a boolean (a string "false" is not). */
enum gv_code policy_check_bool(const json_t *obj, const char *key, const struct gv_buf *ptr,
			       struct gv_err *err)
{
	const json_t *v = json_object_get(obj, key);
	struct gv_buf at = {0};
	enum gv_code rc;

	if (!v || json_is_null(v) || json_is_boolean(v))
		return GV_OK;
	gv_buf_adds(&at, gv_buf_str(ptr));
	gv_pointer_add(&at, key);
	rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(&at), "Invalid value: %s must be a boolean",
			 key);
	gv_buf_release(&at);
	return rc;
}

bool policy_parse_action(const json_t *v, enum engine_action *a)
{
	const char *s = json_string_value(v);
	if (!s)
		return false;
	*a = (!strcmp(s, "Enforce") || !strcmp(s, "enforce")) ? ENGINE_ENFORCE : ENGINE_AUDIT;
	return true;
}

void policy_overrides_release(struct override *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < o[i].nnamespaces; j++)
			free(o[i].namespaces[j]);
		free(o[i].namespaces);
		selector_free(o[i].ns_selector);
	}
	free(o);
}

enum gv_code policy_overrides_compile(const json_t *arr, struct override **out, size_t *n,
				      struct gv_buf *ptr, struct gv_err *err)
{
	size_t i, j;
	json_t *c, *ns;
	enum gv_code rc = GV_OK;

	*out = NULL;
	*n = 0;
	if (!json_array_size(arr))
		return GV_OK;
	*out = gv_xcalloc(json_array_size(arr), sizeof(**out));
	json_array_foreach(arr, i, c)
	{
		struct override *o = &(*out)[i];
		const json_t *sel = json_object_get(c, "namespaceSelector");
		size_t ob = ptr->len;
		policy_ptr_pushi(ptr, i);
		rc = policy_check_enum(c, "action", action_values, ptr, err);
		policy_ptr_pop(ptr, ob);
		if (rc)
			break;
		policy_parse_action(json_object_get(c, "action"), &o->action);
		o->namespaces = gv_xcalloc(json_array_size(json_object_get(c, "namespaces")) + 1,
					   sizeof(char *));
		json_array_foreach(json_object_get(c, "namespaces"), j, ns) if (json_is_string(ns))
		    o->namespaces[o->nnamespaces++] = gv_xstrdup(json_string_value(ns));
		(*n)++;
		if (json_is_object(sel)) {
			rc = selector_compile(sel, &o->ns_selector, ptr, err);
			if (rc)
				break;
		}
	}
	if (rc) {
		policy_overrides_release(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* ---- policies ---- */

/* A namespaced Policy may not select cluster-scoped kinds (section 1.6). */
static enum gv_code check_namespaced_kinds(const json_t *rule, struct gv_buf *ptr,
					   struct gv_err *err)
{
	static const char *const blocks[] = {"match", "exclude"};
	static const char *const lists[] = {"any", "all"};
	size_t base = ptr->len;

	for (size_t b = 0; b < 2; b++) {
		const json_t *blk = json_object_get(rule, blocks[b]);
		for (size_t l = 0; l < 3; l++) {
			const json_t *filters = l < 2 ? json_object_get(blk, lists[l]) : NULL;
			size_t nf = l < 2 ? json_array_size(filters) : 1;
			for (size_t f = 0; f < nf; f++) {
				const json_t *res =
				    l < 2 ? json_object_get(json_array_get(filters, f), "resources")
					  : json_object_get(blk, "resources");
				size_t k;
				json_t *kind;
				json_array_foreach(json_object_get(res, "kinds"), k, kind)
				{
					struct kind_sel sel;
					bool cluster;
					if (!json_is_string(kind))
						continue;
					kind_sel_parse(json_string_value(kind), &sel);
					cluster = engine_kind_cluster_scoped(sel.kind);
					if (cluster) {
						policy_ptr_push(ptr, blocks[b]);
						if (l < 2) {
							policy_ptr_push(ptr, lists[l]);
							policy_ptr_pushi(ptr, f);
						}
						policy_ptr_push(ptr, "resources");
						policy_ptr_push(ptr, "kinds");
						policy_ptr_pushi(ptr, k);
						gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							    "Cluster wide resource '%s' not "
							    "allowed in namespaced policy",
							    sel.kind);
						policy_ptr_pop(ptr, base);
					}
					kind_sel_release(&sel);
					if (cluster)
						return GV_EINVAL;
				}
			}
		}
	}
	return GV_OK;
}

static void scan_images(const char *expr, const char *raw, void *ud)
{
	bool *uses = ud;
	(void)raw;
	if (strstr(expr, "images"))
		*uses = true;
}

static void policy_free(struct engine_policy *p)
{
	for (size_t i = 0; i < p->nrules; i++)
		rule_release(&p->rules[i]);
	free(p->rules);
	policy_overrides_release(p->overrides, p->noverrides);
	json_decref(p->doc);
	free(p->name);
	free(p->namespace);
	free(p->kind);
	free(p);
}

struct engine_policy *engine_policy_ref(struct engine_policy *p)
{
	atomic_fetch_add(&p->refs, 1);
	return p;
}

void engine_policy_unref(struct engine_policy *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1)
		policy_free(p);
}

static bool bool_field(const json_t *spec, const char *k, bool def)
{
	const json_t *v = json_object_get(spec, k);
	return json_is_boolean(v) ? json_boolean_value(v) : def;
}

struct engine_policy *engine_policy_compile(const json_t *doc, struct gv_err *err)
{
	struct engine_policy *p = NULL;
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const char *api = json_string_value(json_object_get(doc, "apiVersion"));
	const json_t *meta = json_object_get(doc, "metadata");
	const json_t *spec = json_object_get(doc, "spec");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const json_t *rules;
	json_t *gen = NULL;
	struct gv_buf ptr = {0};
	enum gv_code rc = GV_OK;
	size_t i, total;
	json_t *r;
	const char *fp, *apply;

	if (!json_is_object(doc) || !kind ||
	    (strcmp(kind, "ClusterPolicy") && strcmp(kind, "Policy"))) {
		gv_err_setp(err, GV_EINVAL, "/kind",
			    "not a policy: kind is %s%s%s, want ClusterPolicy or Policy",
			    kind ? "\"" : "", kind ? kind : "missing", kind ? "\"" : "");
		return NULL;
	}
	if (!api || (strcmp(api, "kyverno.io/v1") && strcmp(api, "kyverno.io/v2beta1"))) {
		gv_err_setp(err, GV_EINVAL, "/apiVersion",
			    "unsupported apiVersion \"%s\" for %s (want kyverno.io/v1 or "
			    "kyverno.io/v2beta1)",
			    api ? api : "", kind);
		return NULL;
	}
	if (!name || !*name) {
		gv_err_setp(err, GV_EINVAL, "/metadata/name", "policy name is required");
		return NULL;
	}
	if (strlen(name) > MAX_NAME) {
		gv_err_setp(err, GV_EINVAL, "/metadata/name",
			    "policy name %s is longer than %d characters", name, MAX_NAME);
		return NULL;
	}
	if (!strcmp(kind, "ClusterPolicy") && ns && *ns) {
		gv_err_setp(err, GV_EINVAL, "/metadata/namespace",
			    "A clusterpolicy should not have the namespace defined");
		return NULL;
	}
	if (!json_is_object(spec)) {
		gv_err_setp(err, GV_EINVAL, "/spec", "spec is required");
		return NULL;
	}
	gv_buf_adds(&ptr, "/spec");
	if (policy_check_fields(spec, spec_fields, &ptr, err))
		goto fail;
	rules = json_object_get(spec, "rules");
	if (!json_is_array(rules) || !json_array_size(rules)) {
		gv_err_setp(err, GV_EINVAL, "/spec/rules", "a policy needs at least one rule");
		goto fail;
	}
	if (policy_check_enum(spec, "validationFailureAction", action_values, &ptr, err) ||
	    policy_check_enum(spec, "failurePolicy", failure_policy_values, &ptr, err) ||
	    policy_check_enum(spec, "applyRules", apply_rules_values, &ptr, err) ||
	    policy_check_bool(spec, "background", &ptr, err) ||
	    policy_check_bool(spec, "admission", &ptr, err) ||
	    policy_check_bool(spec, "emitWarning", &ptr, err) ||
	    policy_check_bool(spec, "scanSuspend", &ptr, err))
		goto fail;
	{
		const json_t *wc = json_object_get(spec, "webhookConfiguration");
		size_t wb = ptr.len;
		gv_pointer_add(&ptr, "webhookConfiguration");
		if (json_is_object(wc) &&
		    policy_check_enum(wc, "failurePolicy", failure_policy_values, &ptr, err))
			goto fail;
		policy_ptr_pop(&ptr, wb);
	}
	p = gv_xcalloc(1, sizeof(*p));
	atomic_init(&p->refs, 1);
	p->doc = json_incref((json_t *)doc);
	p->name = gv_xstrdup(name);
	p->kind = gv_xstrdup(kind);
	p->namespace = gv_xstrdup(!strcmp(kind, "Policy") ? (ns && *ns ? ns : "default") : "");
	p->background = bool_field(spec, "background", true);
	p->admission = bool_field(spec, "admission", true);
	p->emit_warning = bool_field(spec, "emitWarning", false);
	apply = json_string_value(json_object_get(spec, "applyRules"));
	p->apply_one = apply && !strcmp(apply, "One");
	policy_parse_action(json_object_get(spec, "validationFailureAction"), &p->action);
	fp = json_string_value(json_object_get(spec, "failurePolicy"));
	if (!fp)
		fp = json_string_value(json_object_get(
		    json_object_get(spec, "webhookConfiguration"), "failurePolicy"));
	p->failure_policy =
	    fp && !strcmp(fp, "Ignore") ? ENGINE_FAILURE_IGNORE : ENGINE_FAILURE_FAIL;
	if (!p->admission && !p->background) {
		gv_err_setp(err, GV_EINVAL, "/spec/admission",
			    "disabling both admission and background processing is not allowed");
		goto fail;
	}
	if (json_array_size(json_object_get(spec, "validationFailureActionOverrides")) &&
	    !strcmp(kind, "Policy")) {
		gv_err_setp(
		    err, GV_EINVAL, "/spec/validationFailureActionOverrides",
		    "Use of validationFailureActionOverrides is supported only with ClusterPolicy");
		goto fail;
	}
	gv_buf_reset(&ptr);
	gv_buf_adds(&ptr, "/spec/validationFailureActionOverrides");
	if (policy_overrides_compile(json_object_get(spec, "validationFailureActionOverrides"),
				     &p->overrides, &p->noverrides, &ptr, err))
		goto fail;
	/* duplicate rule names (a set: policies may hold thousands of rules) */
	{
		json_t *seen = json_object();
		json_array_foreach(rules, i, r)
		{
			const char *rn = json_string_value(json_object_get(r, "name"));
			if (!rn)
				continue;
			if (json_object_get(seen, rn)) {
				char at[64];
				snprintf(at, sizeof(at), "/spec/rules/%zu/name", i);
				gv_err_setp(err, GV_EINVAL, at, "Duplicate rule name: '%s'", rn);
				json_decref(seen);
				goto fail;
			}
			json_object_set_new(seen, rn, json_true());
		}
		json_decref(seen);
	}
	gen = autogen_rules(doc);
	total = json_array_size(rules) + json_array_size(gen);
	p->rules = gv_xcalloc(total, sizeof(*p->rules));
	for (i = 0; i < total; i++) {
		bool is_gen = i >= json_array_size(rules);
		size_t idx = is_gen ? i - json_array_size(rules) : i;
		const json_t *rj = is_gen ? json_array_get(gen, idx) : json_array_get(rules, idx);
		struct rule *rule = &p->rules[i];

		gv_buf_reset(&ptr);
		if (is_gen)
			gv_buf_addf(&ptr, "/status/autogen/rules/%zu", idx);
		else
			gv_buf_addf(&ptr, "/spec/rules/%zu", idx);
		rc = rule_compile(rj, rule, p->background, &ptr, err);
		if (rc)
			goto fail;
		p->nrules++;
		if (!strcmp(kind, "Policy") && !is_gen && check_namespaced_kinds(rj, &ptr, err))
			goto fail;
		if (!strcmp(kind, "Policy")) {
			for (size_t f = 0; f < rule->match.n; f++)
				if (rule->match.f[f].nnamespaces) {
					gv_err_setp(err, GV_EINVAL, gv_buf_str(&ptr),
						    "Filtering namespaces not allowed in "
						    "namespaced policies");
					goto fail;
				}
		}
		if (p->background && !is_gen) {
			struct var_scan scan = {0};
			vars_each(rj, policy_scan_var, &scan);
			if (scan.first_bad) {
				gv_err_setp(err, GV_EINVAL, gv_buf_str(&ptr),
					    "only select variables are allowed in background mode. "
					    "Set spec.background=false to disable background mode "
					    "for this policy rule: variable %s is not allowed",
					    scan.first_bad);
				free(scan.first_bad);
				goto fail;
			}
			{
				char *path = policy_userinfo_path(idx, "match", &rule->match);
				if (!path)
					path = policy_userinfo_path(idx, "exclude", &rule->exclude);
				if (path) {
					gv_err_setp(err, GV_EINVAL, gv_buf_str(&ptr),
						    "only select variables are allowed in "
						    "background mode. Set spec.background=false to "
						    "disable background mode for this policy rule: "
						    "invalid variable used at path: %s",
						    path);
					free(path);
					goto fail;
				}
			}
		}
		if (!is_gen && policy_check_rule(rj, rule, p->background, &ptr, err))
			goto fail;
	}
	vars_each(spec, scan_images, &p->uses_images);
	json_decref(gen);
	gv_buf_release(&ptr);
	return p;
fail:
	json_decref(gen);
	gv_buf_release(&ptr);
	if (p)
		policy_free(p);
	return NULL;
}

const char *engine_policy_name(const struct engine_policy *p)
{
	return p->name;
}

const char *engine_policy_namespace(const struct engine_policy *p)
{
	return p->namespace;
}

const char *engine_policy_kind(const struct engine_policy *p)
{
	return p->kind;
}

bool engine_policy_background(const struct engine_policy *p)
{
	return p->background;
}

bool engine_policy_admission(const struct engine_policy *p)
{
	return p->admission;
}

bool engine_policy_emit_warning(const struct engine_policy *p)
{
	return p->emit_warning;
}

enum engine_failure_policy engine_policy_failure_policy(const struct engine_policy *p)
{
	return p->failure_policy;
}

const json_t *engine_policy_doc(const struct engine_policy *p)
{
	return p->doc;
}

const char *engine_policy_annotation(const struct engine_policy *p, const char *key)
{
	if (!p)
		return NULL;
	return json_string_value(json_object_get(
	    json_object_get(json_object_get(p->doc, "metadata"), "annotations"), key));
}

size_t engine_policy_rule_count(const struct engine_policy *p)
{
	return p->nrules;
}

const char *engine_policy_rule_name(const struct engine_policy *p, size_t i)
{
	return i < p->nrules ? p->rules[i].name : NULL;
}

enum engine_action engine_policy_rule_action(const struct engine_policy *p, size_t i)
{
	return i < p->nrules && p->rules[i].has_action ? p->rules[i].action : p->action;
}

bool engine_policy_rule_background_safe(const struct engine_policy *p, size_t i)
{
	return i < p->nrules && p->rules[i].background_safe;
}

const char *engine_policy_rule_unsupported(const struct engine_policy *p, size_t i)
{
	return i < p->nrules ? p->rules[i].unsupported : NULL;
}

char *engine_policy_unsupported_note(const struct engine_policy *p)
{
	struct gv_buf b = {0};
	size_t n = 0;

	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		if (r->has_validate || !r->unsupported)
			continue;
		if (n < 3)
			gv_buf_addf(&b, "%s%s rule %s", n ? ", " : "", r->unsupported, r->name);
		n++;
	}
	if (!n)
		return NULL;
	if (n > 3)
		gv_buf_addf(&b, " and %zu more", n - 3);
	{
		char *s = gv_xasprintf(
		    "policy %s: gavel is a validate engine and does not evaluate its %s", p->name,
		    gv_buf_str(&b));
		gv_buf_release(&b);
		return s;
	}
}

bool engine_doc_reads_outside(const json_t *doc)
{
	static const char *const entries[] = {"apiCall", "configMap", "globalReference",
					      "imageRegistry"};
	static const char *const functions[] = {"time_now", "time_since", "random",
						/* validate.cel's SubjectAccessReviews */
						"authorizer."};
	const char *key;
	const json_t *v;
	size_t i;

	if (json_is_string(doc)) {
		for (i = 0; i < GV_ARRAY_LEN(functions); i++)
			if (strstr(json_string_value(doc), functions[i]))
				return true;
		return false;
	}
	if (json_is_array(doc)) {
		json_array_foreach(doc, i, v)
		{
			if (engine_doc_reads_outside(v))
				return true;
		}
		return false;
	}
	json_object_foreach((json_t *)doc, key, v)
	{
		/* validate.cel parameter objects are read from the cluster */
		if (!strcmp(key, "paramRef") && json_is_object(v))
			return true;
		if (!strcmp(key, "context") && json_is_array(v)) {
			const json_t *entry;
			size_t k;

			json_array_foreach(v, k, entry)
			{
				for (i = 0; i < GV_ARRAY_LEN(entries); i++)
					if (json_object_get(entry, entries[i]))
						return true;
			}
		}
		if (engine_doc_reads_outside(v))
			return true;
	}
	return false;
}

static bool override_matches(const struct override *o, const char *ns, const json_t *ns_labels)
{
	if (!o->nnamespaces && !o->ns_selector)
		return true;
	if (!ns || !*ns)
		return false;
	for (size_t i = 0; i < o->nnamespaces; i++)
		if (value_wildcard(o->namespaces[i], ns))
			return true;
	return o->ns_selector && selector_matches(o->ns_selector, ns_labels);
}

enum engine_action rule_effective_action(const struct engine_policy *p, const struct rule *r,
					 const char *ns, const json_t *ns_labels)
{
	const struct override *o = r->noverrides ? r->overrides : p->overrides;
	size_t n = r->noverrides ? r->noverrides : p->noverrides;

	for (size_t i = 0; i < n; i++)
		if (override_matches(&o[i], ns, ns_labels))
			return o[i].action;
	return r->has_action ? r->action : p->action;
}
