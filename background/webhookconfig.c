/*
 * webhookconfig.c - gavel's resource webhooks generated from the policies
 * (Kyverno's webhook controller), and the leader's writer of them.
 */
#include "background/webhookconfig.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/vpolicy.h"
#include "common/log.h"
#include "common/banned.h"

static const char *const all_ops[WEBHOOKCONFIG_OPERATIONS_N] = {"CONNECT", "CREATE", "DELETE",
								"UPDATE"};

bool webhookconfig_owned(const char *name)
{
	static const char fail[] = WEBHOOKCONFIG_NAME "-fail", ign[] = WEBHOOKCONFIG_NAME "-ignore";

	return name &&
	       (!strncmp(name, fail, sizeof(fail) - 1) || !strncmp(name, ign, sizeof(ign) - 1));
}

/* ---- building (pure but for the resolver) ---- */

static const json_t *spec_of(const json_t *doc)
{
	return json_object_get(doc, "spec");
}

static bool fails_closed(const json_t *doc)
{
	const json_t *spec = spec_of(doc);
	const char *fp = json_string_value(
	    json_object_get(json_object_get(spec, "webhookConfiguration"), "failurePolicy"));

	if (!fp)
		fp = json_string_value(json_object_get(spec, "failurePolicy"));
	return !fp || strcmp(fp, "Ignore");
}

static int timeout_of(const json_t *doc, int def)
{
	const json_t *spec = spec_of(doc);
	const json_t *t =
	    json_object_get(json_object_get(spec, "webhookConfiguration"), "timeoutSeconds");

	if (!json_is_integer(t))
		t = json_object_get(spec, "webhookTimeoutSeconds");
	return json_is_integer(t) ? (int)json_integer_value(t) : def;
}

/* Operations of exclude filters that name operations and nothing else. */
static unsigned excluded_ops(const json_t *rule)
{
	const json_t *ex = json_object_get(rule, "exclude");
	static const char *const lists[] = {"any", "all"};
	unsigned mask = 0;

	for (size_t l = 0; l < GV_ARRAY_LEN(lists); l++) {
		size_t i;
		const json_t *f;
		json_array_foreach(json_object_get(ex, lists[l]), i, f)
		{
			const json_t *res = json_object_get(f, "resources");
			size_t j;
			const json_t *op;
			if (json_object_size(f) != 1 || json_object_size(res) != 1 ||
			    !json_object_get(res, "operations"))
				continue;
			json_array_foreach(json_object_get(res, "operations"), j, op)
			{
				for (size_t k = 0; k < WEBHOOKCONFIG_OPERATIONS_N; k++)
					if (json_string_value(op) &&
					    !strcmp(json_string_value(op), all_ops[k]))
						mask |= 1u << k;
			}
		}
	}
	return mask;
}

struct hook {
	char *name; /* owned */
	json_t
	    *rules; /* "group|version|scope|opsmask" -> {apiGroup, apiVersion, ops, resources{}} */
	bool fail;
	int timeout;
	const json_t *conditions; /* borrowed: the policy's matchConditions, or NULL */
};

/* namespaced: the filter of a namespaced Policy, which sees namespaced resources alone */
static void add_filter(struct hook *h, const json_t *res, unsigned exclude, bool namespaced,
		       const struct webhookconfig_resolver *r, json_t *cache)
{
	unsigned ops = 0;
	size_t i;
	const json_t *v;

	json_array_foreach(json_object_get(res, "operations"), i, v)
	{
		for (size_t k = 0; k < WEBHOOKCONFIG_OPERATIONS_N; k++)
			if (json_string_value(v) && !strcmp(json_string_value(v), all_ops[k]))
				ops |= 1u << k;
	}
	if (!ops)
		ops = (1u << WEBHOOKCONFIG_OPERATIONS_N) - 1;
	ops &= ~exclude;
	if (!ops)
		return;
	json_array_foreach(json_object_get(res, "kinds"), i, v)
	{
		const char *kind = json_string_value(v);
		json_t *parts;
		size_t j;
		const json_t *p;
		if (!kind)
			continue;
		parts = json_object_get(cache, kind);
		if (!parts) {
			parts = r->resolve(r->ud, kind);
			json_object_set_new(cache, kind, parts ? parts : json_null());
			parts = json_object_get(cache, kind);
		}
		json_array_foreach(parts, j, p)
		{
			const char *g = json_string_value(json_object_get(p, "apiGroup"));
			const char *ver = json_string_value(json_object_get(p, "apiVersion"));
			const char *scope = json_string_value(json_object_get(p, "scope"));
			char *key;
			if (namespaced && scope && !strcmp(scope, "Cluster"))
				continue;
			if (namespaced)
				scope = "Namespaced";
			key = gv_xasprintf("%s|%s|%s|%u", g ? g : "", ver ? ver : "",
					   scope ? scope : "*", ops);
			json_t *rule, *set;
			size_t n;
			const json_t *res_name;
			rule = json_object_get(h->rules, key);
			if (!rule) {
				json_t *opl = json_array();
				for (size_t k = 0; k < WEBHOOKCONFIG_OPERATIONS_N; k++)
					if (ops & (1u << k))
						json_array_append_new(opl, json_string(all_ops[k]));
				rule = json_pack("{s:[s], s:[s], s:o, s:{}, s:s}", "apiGroups",
						 g ? g : "", "apiVersions", ver ? ver : "*",
						 "operations", opl, "resources", "scope",
						 scope ? scope : "*");
				json_object_set_new(h->rules, key, rule);
			}
			set = json_object_get(rule, "resources");
			json_array_foreach(json_object_get(p, "resources"), n, res_name)
			{
				if (json_string_value(res_name))
					json_object_set_new(set, json_string_value(res_name),
							    json_true());
			}
			free(key);
		}
	}
}

static void add_rule(struct hook *h, const json_t *rule, bool namespaced,
		     const struct webhookconfig_resolver *r, json_t *cache)
{
	const json_t *match = json_object_get(rule, "match");
	unsigned exclude = excluded_ops(rule);
	static const char *const lists[] = {"any", "all"};

	if (!json_object_get(rule, "validate"))
		return;
	if (json_object_get(match, "resources"))
		add_filter(h, json_object_get(match, "resources"), exclude, namespaced, r, cache);
	for (size_t l = 0; l < GV_ARRAY_LEN(lists); l++) {
		size_t i;
		const json_t *f;
		json_array_foreach(json_object_get(match, lists[l]), i, f)
		    add_filter(h, json_object_get(f, "resources"), exclude, namespaced, r, cache);
	}
}

static const char *first_str(const json_t *rule, const char *key)
{
	const char *s = json_string_value(json_array_get(json_object_get(rule, key), 0));

	return s ? s : "";
}

static int rule_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(first_str(x, "apiGroups"), first_str(y, "apiGroups"));
	size_t i;

	if (!c)
		c = strcmp(first_str(x, "apiVersions"), first_str(y, "apiVersions"));
	if (!c)
		c = strcmp(json_string_value(json_object_get(x, "scope")),
			   json_string_value(json_object_get(y, "scope")));
	for (i = 0; !c && i < WEBHOOKCONFIG_OPERATIONS_N; i++) {
		const char *ox =
		    json_string_value(json_array_get(json_object_get(x, "operations"), i));
		const char *oy =
		    json_string_value(json_array_get(json_object_get(y, "operations"), i));
		c = strcmp(ox ? ox : "", oy ? oy : "");
	}
	return c;
}

/*
 * Drops from a Namespaced or Cluster rule the resources a "*"-scoped rule of
 * the same apiGroup, apiVersion and operations has (it covers every scope),
 * and the rule when nothing is left: a Policy and a ClusterPolicy on one
 * kind make one rule, as Kyverno writes it.
 */
static void absorb_scoped(json_t *rules)
{
	for (size_t i = 0; i < json_array_size(rules);) {
		json_t *r = json_array_get(rules, i), *res = json_object_get(r, "resources");
		bool emptied = false;
		for (size_t k = 0; k < json_array_size(rules) && !emptied; k++) {
			const json_t *w = json_array_get(rules, k);
			const json_t *wres = json_object_get(w, "resources");
			if (k == i || strcmp(json_string_value(json_object_get(w, "scope")), "*") ||
			    !strcmp(json_string_value(json_object_get(r, "scope")), "*") ||
			    strcmp(first_str(w, "apiGroups"), first_str(r, "apiGroups")) ||
			    strcmp(first_str(w, "apiVersions"), first_str(r, "apiVersions")) ||
			    !json_equal(json_object_get(w, "operations"),
					json_object_get(r, "operations")))
				continue;
			for (size_t n = 0; n < json_array_size(res);) {
				bool covered = false;
				for (size_t m = 0; m < json_array_size(wres) && !covered; m++)
					covered = json_equal(json_array_get(res, n),
							     json_array_get(wres, m));
				if (covered)
					json_array_remove(res, n);
				else
					n++;
			}
			emptied = !json_array_size(res);
		}
		if (emptied)
			json_array_remove(rules, i);
		else
			i++;
	}
}

/* Sorts an array of rules in place (rule_cmp). */
static void sort_rules(json_t *rules)
{
	size_t n = json_array_size(rules), i;
	json_t **v;

	if (n < 2)
		return;
	v = gv_xcalloc(n, sizeof(*v));
	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(rules, i));
	qsort(v, n, sizeof(*v), rule_cmp);
	json_array_clear(rules);
	for (i = 0; i < n; i++)
		json_array_append_new(rules, v[i]);
	free(v);
}

static json_t *sorted_keys(const json_t *set)
{
	json_t *a = json_array();
	const char *k;
	json_t *v;
	size_t n = json_object_size(set), i = 0;
	const char **keys = gv_xcalloc(n + 1, sizeof(*keys));

	json_object_foreach((json_t *)set, k, v) keys[i++] = k;
	qsort(keys, n, sizeof(*keys), gv_strptr_cmp);
	for (i = 0; i < n; i++)
		json_array_append_new(a, json_string(keys[i]));
	free(keys);
	return a;
}

/* A copy of the clientConfig with its path replaced by path. */
static json_t *client_config_for(const json_t *tmpl, const char *path)
{
	json_t *cc = tmpl ? json_deep_copy(tmpl) : json_object();
	json_t *svc = json_object_get(cc, "service");
	const char *url = json_string_value(json_object_get(cc, "url"));

	if (svc) {
		json_object_set_new(svc, "path", json_string(path));
	} else if (url) {
		const char *p = strstr(url, "://");
		const char *slash = p ? strchr(p + 3, '/') : NULL;
		size_t n = slash ? (size_t)(slash - url) : strlen(url);
		char *nu = gv_xasprintf("%.*s%s", (int)n, url, path);
		json_object_set_new(cc, "url", json_string(nu));
		free(nu);
	}
	return cc;
}

/* {namespaceSelector, objectSelector} from the ConfigMap's `webhooks` key. */
static json_t *selectors_of(const json_t *data, const char *ns)
{
	const char *text = json_string_value(json_object_get(data, "webhooks"));
	json_t *parsed = text ? json_loads(text, 0, NULL) : NULL, *w, *out, *nsel, *exprs;

	w = json_is_array(parsed) ? json_array_get(parsed, 0) : parsed;
	out = json_object();
	nsel = json_is_object(json_object_get(w, "namespaceSelector"))
		   ? json_deep_copy(json_object_get(w, "namespaceSelector"))
		   : json_object();
	exprs = json_object_get(nsel, "matchExpressions");
	if (!json_is_array(exprs)) {
		exprs = json_array();
		json_object_set_new(nsel, "matchExpressions", exprs);
	}
	json_array_append_new(exprs,
			      json_pack("{s:s, s:s, s:[s]}", "key", "kubernetes.io/metadata.name",
					"operator", "NotIn", "values", ns));
	json_object_set_new(out, "namespaceSelector", nsel);
	json_object_set_new(out, "objectSelector",
			    json_is_object(json_object_get(w, "objectSelector"))
				? json_deep_copy(json_object_get(w, "objectSelector"))
				: json_object());
	json_decref(parsed);
	return out;
}

/* ---- ValidatingPolicy / NamespacedValidatingPolicy (cel-semantics.md 2.1, 2.3, 2.7) ---- */

static bool is_vpol_doc(const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	return vpol_is_policy_doc(doc) && kind &&
	       (!strcmp(kind, "ValidatingPolicy") || !strcmp(kind, "NamespacedValidatingPolicy"));
}

/* Whether a ValidatingPolicy is registered at all: admission on, Kubernetes mode. */
static bool vpol_in_webhook(const json_t *doc)
{
	const json_t *ev = json_object_get(spec_of(doc), "evaluation");
	const char *mode = json_string_value(json_object_get(ev, "mode"));

	if (json_is_false(json_object_get(json_object_get(ev, "admission"), "enabled")))
		return false;
	return !mode || strcmp(mode, "JSON");
}

static unsigned ops_mask(const json_t *ops)
{
	unsigned m = 0;
	size_t i;
	const json_t *v;

	json_array_foreach(ops, i, v)
	{
		const char *s = json_string_value(v);
		if (s && !strcmp(s, "*"))
			m = (1u << WEBHOOKCONFIG_OPERATIONS_N) - 1;
		for (size_t k = 0; s && k < WEBHOOKCONFIG_OPERATIONS_N; k++)
			if (!strcmp(s, all_ops[k]))
				m |= 1u << k;
	}
	/* none named: every operation (gavel's matcher decides) */
	return m ? m : (1u << WEBHOOKCONFIG_OPERATIONS_N) - 1;
}

/* The rule of h for group|version|scope|ops, made when missing. */
static json_t *hook_rule(struct hook *h, const char *g, const char *ver, const char *scope,
			 unsigned ops)
{
	char *key = gv_xasprintf("%s|%s|%s|%u", g, ver, scope, ops);
	json_t *rule = json_object_get(h->rules, key);

	if (!rule) {
		json_t *opl = json_array();
		for (size_t k = 0; k < WEBHOOKCONFIG_OPERATIONS_N; k++)
			if (ops & (1u << k))
				json_array_append_new(opl, json_string(all_ops[k]));
		rule = json_pack("{s:[s], s:[s], s:o, s:{}, s:s}", "apiGroups", g, "apiVersions",
				 ver, "operations", opl, "resources", "scope", scope);
		json_object_set_new(h->rules, key, rule);
	}
	free(key);
	return rule;
}

/*
 * One resourceRules entry as the API server reads it: every apiGroup x
 * apiVersion, the resources as written (wildcards and subresources: the
 * API server resolves them), scope as written ("*" when unset). A
 * NamespacedValidatingPolicy only sees requests in its namespace:
 * Namespaced, and nothing for a Cluster rule.
 */
static void add_vpol_rule(struct hook *h, const json_t *rr, bool namespaced)
{
	unsigned ops = ops_mask(json_object_get(rr, "operations"));
	const char *scope = json_string_value(json_object_get(rr, "scope"));
	size_t i, j, k;
	const json_t *g, *ver, *res;

	if (!scope || !*scope)
		scope = "*";
	if (namespaced) {
		if (!strcmp(scope, "Cluster"))
			return;
		scope = "Namespaced";
	}
	json_array_foreach(json_object_get(rr, "apiGroups"), i, g)
	{
		json_array_foreach(json_object_get(rr, "apiVersions"), j, ver)
		{
			json_t *set;
			if (!json_is_string(g) || !json_is_string(ver))
				continue;
			set = json_object_get(
			    hook_rule(h, json_string_value(g), json_string_value(ver), scope, ops),
			    "resources");
			json_array_foreach(json_object_get(rr, "resources"), k, res)
			{
				if (json_string_value(res) && *json_string_value(res))
					json_object_set_new(set, json_string_value(res),
							    json_true());
			}
		}
	}
}

static bool str_only(const json_t *a, const char *want)
{
	const char *s = json_string_value(json_array_get(a, 0));

	return json_array_size(a) == 1 && s && !strcmp(s, want);
}

static bool selector_set(const json_t *sel)
{
	return json_object_size(json_object_get(sel, "matchLabels")) ||
	       json_array_size(json_object_get(sel, "matchExpressions"));
}

/*
 * The autogen rules of a Pod policy (cel-semantics.md 2.7): when
 * matchConstraints is one rule on core v1 pods (no resourceNames, no
 * excludeResourceRules, no objectSelector), apps/v1 daemonsets,
 * deployments, replicasets, statefulsets and batch/v1 jobs, cronjobs, as
 * autogen.podControllers.controllers lets through (absent: all; []:
 * none), with the pod rule's operations; scope dropped.
 */
static void add_vpol_autogen(struct hook *h, const json_t *spec, bool namespaced)
{
	const json_t *mc = json_object_get(spec, "matchConstraints");
	const json_t *rules = json_object_get(mc, "resourceRules");
	const json_t *pod = json_array_get(rules, 0);
	const json_t *ctl = json_object_get(
	    json_object_get(json_object_get(spec, "autogen"), "podControllers"), "controllers");
	static const char *const names[] = {"daemonsets",   "deployments", "replicasets",
					    "statefulsets", "jobs",	   "cronjobs"};
	json_t *apps = json_array(), *batch = json_array();

	if (json_array_size(rules) != 1 ||
	    json_array_size(json_object_get(mc, "excludeResourceRules")) ||
	    selector_set(json_object_get(mc, "objectSelector")) ||
	    json_array_size(json_object_get(pod, "resourceNames")) ||
	    !str_only(json_object_get(pod, "apiGroups"), "") ||
	    !str_only(json_object_get(pod, "apiVersions"), "v1") ||
	    !str_only(json_object_get(pod, "resources"), "pods"))
		goto out;
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++) {
		bool on = !json_is_array(ctl);
		size_t k;
		const json_t *c;
		json_array_foreach(ctl, k, c) on |=
		    json_is_string(c) && !strcmp(json_string_value(c), names[i]);
		if (on)
			json_array_append_new(i < 4 ? apps : batch, json_string(names[i]));
	}
	{
		json_t *ra = json_pack("{s:[s], s:[s], s:O}", "apiGroups", "apps", "apiVersions",
				       "v1", "resources", apps);
		json_t *rb = json_pack("{s:[s], s:[s], s:O}", "apiGroups", "batch", "apiVersions",
				       "v1", "resources", batch);
		if (json_object_get(pod, "operations")) {
			json_object_set(ra, "operations", json_object_get(pod, "operations"));
			json_object_set(rb, "operations", json_object_get(pod, "operations"));
		}
		if (json_array_size(apps))
			add_vpol_rule(h, ra, namespaced);
		if (json_array_size(batch))
			add_vpol_rule(h, rb, namespaced);
		json_decref(ra);
		json_decref(rb);
	}
out:
	json_decref(apps);
	json_decref(batch);
}

static void add_vpol(struct hook *h, const json_t *doc, bool namespaced)
{
	const json_t *spec = spec_of(doc);
	size_t i;
	const json_t *rr;

	json_array_foreach(
	    json_object_get(json_object_get(spec, "matchConstraints"), "resourceRules"), i, rr)
	    add_vpol_rule(h, rr, namespaced);
	add_vpol_autogen(h, spec, namespaced);
}

static int hook_cmp(const void *a, const void *b)
{
	return strcmp(((const struct hook *)a)->name, ((const struct hook *)b)->name);
}

json_t *webhookconfig_build(const json_t *docs, const json_t *config_data, const char *namespace,
			    const json_t *client_config, int default_timeout,
			    const struct webhookconfig_resolver *r)
{
	struct hook *hooks = NULL;
	size_t nhooks = 0;
	json_t *cache = json_object(), *out = json_array();
	json_t *sel = selectors_of(config_data, namespace && *namespace ? namespace : "gavel");
	const char *mc_text = json_string_value(json_object_get(config_data, "matchConditions"));
	json_t *global_mc = mc_text ? json_loads(mc_text, 0, NULL) : NULL;
	const json_t *doc;
	size_t i;

	if (default_timeout <= 0)
		default_timeout = WEBHOOKCONFIG_TIMEOUT;
	json_array_foreach(docs, i, doc)
	{
		const json_t *spec = spec_of(doc), *md = json_object_get(doc, "metadata");
		const json_t *mc = json_object_get(json_object_get(spec, "webhookConfiguration"),
						   "matchConditions");
		bool fail = fails_closed(doc);
		const char *dns = json_string_value(json_object_get(md, "namespace"));
		bool namespaced = dns && *dns;
		char *hname;
		struct hook *h = NULL;
		json_t *autogen;
		size_t j;
		const json_t *rule;

		bool vp = is_vpol_doc(doc);

		if (vp ? !vpol_in_webhook(doc) : json_is_false(json_object_get(spec, "admission")))
			continue;
		if (vp) {
			/* a ValidatingPolicy's matchConditions are gavel's to evaluate */
			mc = NULL;
			namespaced = !strcmp(json_string_value(json_object_get(doc, "kind")),
					     "NamespacedValidatingPolicy");
		}
		if (json_array_size(mc)) {
			const char *pns = json_string_value(json_object_get(md, "namespace"));
			const char *pname = json_string_value(json_object_get(md, "name"));
			hname = gv_xasprintf("%s-%s-finegrained-%s%s%s", WEBHOOKCONFIG_NAME,
					     fail ? "fail" : "ignore", pns ? pns : "",
					     pns ? "-" : "", pname ? pname : "");
		} else {
			hname = gv_xasprintf("%s-%s", WEBHOOKCONFIG_NAME, fail ? "fail" : "ignore");
		}
		for (size_t k = 0; k < nhooks && !h; k++)
			if (!strcmp(hooks[k].name, hname))
				h = &hooks[k];
		if (!h) {
			hooks = gv_xrealloc(hooks, (nhooks + 1) * sizeof(*hooks));
			h = &hooks[nhooks++];
			memset(h, 0, sizeof(*h));
			h->name = hname;
			hname = NULL;
			h->rules = json_object();
			h->fail = fail;
			h->conditions = json_array_size(mc) ? mc : NULL;
		}
		{
			int t = timeout_of(doc, default_timeout);
			if (t > h->timeout)
				h->timeout = t;
		}
		if (vp) {
			add_vpol(h, doc, namespaced);
			free(hname);
			continue;
		}
		json_array_foreach(json_object_get(spec, "rules"), j, rule)
		    add_rule(h, rule, namespaced, r, cache);
		autogen = engine_autogen_rules(doc);
		json_array_foreach(autogen, j, rule) add_rule(h, rule, namespaced, r, cache);
		json_decref(autogen);
		free(hname);
	}
	if (nhooks) /* qsort must not be given NULL, even for no element */
		qsort(hooks, nhooks, sizeof(*hooks), hook_cmp);
	for (i = 0; i < nhooks; i++) {
		struct hook *h = &hooks[i];
		const char *hname = h->name;
		json_t *rules = json_array(), *wh, *conds, *r0;
		const char *key;

		/* Sorted by apiGroup, apiVersion, scope, operations, as Kyverno lists them. */
		json_object_foreach(h->rules, key, r0)
		{
			json_t *rule = json_deep_copy(r0);
			json_object_set_new(rule, "resources",
					    sorted_keys(json_object_get(rule, "resources")));
			json_array_append_new(rules, rule);
		}
		absorb_scoped(rules);
		sort_rules(rules);
		if (json_array_size(rules)) {
			int t = h->timeout < 1 ? 1 : h->timeout > 30 ? 30 : h->timeout;
			wh = json_object();
			json_object_set_new(wh, "name", json_string(hname));
			json_object_set_new(wh, "admissionReviewVersions", json_pack("[s]", "v1"));
			json_object_set_new(
			    wh, "clientConfig",
			    client_config_for(client_config,
					      h->fail ? "/validate/fail" : "/validate/ignore"));
			json_object_set_new(wh, "failurePolicy",
					    json_string(h->fail ? "Fail" : "Ignore"));
			json_object_set_new(wh, "matchPolicy", json_string("Equivalent"));
			json_object_set(wh, "namespaceSelector",
					json_object_get(sel, "namespaceSelector"));
			json_object_set(wh, "objectSelector",
					json_object_get(sel, "objectSelector"));
			json_object_set_new(wh, "rules", rules);
			json_object_set_new(wh, "sideEffects", json_string("None"));
			json_object_set_new(wh, "timeoutSeconds", json_integer(t));
			conds = json_array();
			if (json_is_array(global_mc))
				json_array_extend(conds, global_mc);
			if (h->conditions)
				json_array_extend(conds, (json_t *)h->conditions);
			if (json_array_size(conds))
				json_object_set_new(wh, "matchConditions", conds);
			else
				json_decref(conds);
			json_array_append_new(out, wh);
		} else {
			json_decref(rules);
		}
		json_decref(h->rules);
		free(h->name);
	}
	free(hooks);
	json_decref(cache);
	json_decref(sel);
	json_decref(global_mc);
	return out;
}

/* ---- discovery ---- */

static json_t *part(const char *group, const char *version, const char *scope, json_t *resources)
{
	return json_pack("{s:s, s:s, s:o, s:s}", "apiGroup", group, "apiVersion", version,
			 "resources", resources, "scope", scope);
}

/* Every subresource "<plural>/<sub>" the group/version lists for plural. */
static json_t *subresources(struct kube_client *c, const struct kube_resource *res)
{
	char *path = *res->group ? gv_xasprintf("/apis/%s/%s", res->group, res->version)
				 : gv_xasprintf("/api/%s", res->version);
	json_t *list = NULL, *out = json_array();
	size_t plen = strlen(res->resource), i;
	const json_t *r;

	if (!kube_request(c, "GET", path, NULL, &list, NULL, NULL)) {
		json_array_foreach(json_object_get(list, "resources"), i, r)
		{
			const char *n = json_string_value(json_object_get(r, "name"));
			if (n && !strncmp(n, res->resource, plen) && n[plen] == '/')
				json_array_append_new(out, json_string(n));
		}
	}
	json_decref(list);
	free(path);
	return out;
}

json_t *webhookconfig_resolve_discovery(void *ud, const char *kind)
{
	struct kube_client *c = ud;
	char *copy = gv_xstrdup(kind), *tok[5] = {0}, *p = copy, *sub = NULL;
	const char *group = NULL, *version = NULL, *k;
	struct kube_resource res = {0};
	json_t *out = NULL, *resources;
	size_t n = 0;

	if (!strcmp(kind, "*")) {
		out = json_pack("[o]", part("*", "*", "*",
					    json_pack("[s, s]", "*", "pods/ephemeralcontainers")));
		goto done;
	}
	if (!strncmp(kind, "*/", 2)) {
		out = json_pack("[o]", part("*", "*", "*", json_pack("[s]", kind)));
		goto done;
	}
	while (n < GV_ARRAY_LEN(tok)) {
		tok[n++] = p;
		p = strchr(p, '/');
		if (!p)
			break;
		*p++ = '\0';
	}
	if (p)
		goto done; /* too many parts */
	/* A last part after the Kind (capitalized) is a subresource. */
	if (n >= 2 && (islower((unsigned char)tok[n - 1][0]) || !strcmp(tok[n - 1], "*")) &&
	    isupper((unsigned char)tok[n - 2][0]))
		sub = tok[--n];
	if (n == 1) {
		k = tok[0];
	} else if (n == 2) {
		version = tok[0];
		k = tok[1];
	} else if (n == 3) {
		group = tok[0];
		version = tok[1];
		k = tok[2];
	} else {
		goto done;
	}
	if (version && !strcmp(version, "*"))
		version = NULL;
	if (group && !strcmp(group, "*"))
		group = NULL;
	if (n == 2 && version && !strchr(version, '.'))
		group = ""; /* "v1/Pod": the core group */
	if (kube_discover(c, group, version, k, &res, NULL))
		goto done;
	if (sub && !strcmp(sub, "*")) {
		bool eph = false;
		size_t i;
		const json_t *v;
		resources = subresources(c, &res);
		/* as for "Pod": ephemeral containers even where discovery hides them */
		json_array_foreach(resources, i, v) eph |=
		    !strcmp(json_string_value(v), "pods/ephemeralcontainers");
		if (!*res.group && !strcmp(res.resource, "pods") && !eph)
			json_array_append_new(resources, json_string("pods/ephemeralcontainers"));
	} else if (sub) {
		char *name = gv_xasprintf("%s/%s", res.resource, sub);
		json_t *subs = subresources(c, &res);
		bool served = false;
		size_t i;
		const json_t *v;
		json_array_foreach(subs, i, v) served |= !strcmp(json_string_value(v), name);
		json_decref(subs);
		if (!served && strcmp(name, "pods/ephemeralcontainers")) {
			free(name);
			kube_resource_release(&res);
			goto done; /* not a subresource the server lists */
		}
		resources = json_pack("[s]", name);
		free(name);
	} else {
		resources = json_pack("[s]", res.resource);
		if (!*res.group && !strcmp(res.resource, "pods"))
			json_array_append_new(resources, json_string("pods/ephemeralcontainers"));
	}
	out = json_pack("[o]", part(res.group, res.version,
				    res.namespaced ? "Namespaced" : "Cluster", resources));
	kube_resource_release(&res);
done:
	free(copy);
	return out;
}

/* ---- the writer ---- */

struct webhookconfig {
	struct webhookconfig_config cfg;
	char *name, *namespace;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;

	struct kube_informer *crds; /* CustomResourceDefinitions, for their changes alone */

	/* Under mu: */
	uint64_t crd_changes; /* CRD change batches seen by the informer */
	json_t *covered;      /* "uid/generation" of the policies the configuration was made for */

	/* Owned by the thread: */
	json_t *compiled;     /* "uid/generation" -> true (compiles) | false */
	json_t *last_desired; /* the generated webhooks last written */
	json_t *last_view;    /* the configuration's generated webhooks right after */
};

static const char *md_str(const json_t *doc, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(doc, "metadata"), key));

	return s ? s : "";
}

/* The documents that compile (cached by uid and generation). */
static json_t *good_docs(struct webhookconfig *w, const json_t *docs)
{
	json_t *out = json_array(), *fresh = json_object();
	size_t i;
	const json_t *doc;

	json_array_foreach(docs, i, doc)
	{
		char *key = gv_xasprintf("%s/%" JSON_INTEGER_FORMAT, md_str(doc, "uid"),
					 json_integer_value(json_object_get(
					     json_object_get(doc, "metadata"), "generation")));
		json_t *ok = json_object_get(w->compiled, key);
		if (!ok) {
			struct engine_policy *p = engine_policy_compile(doc, NULL);
			ok = json_boolean(p != NULL);
			if (p)
				engine_policy_unref(p);
		} else {
			json_incref(ok);
		}
		if (json_is_true(ok))
			json_array_append(out, (json_t *)doc);
		json_object_set_new(fresh, key, ok);
		free(key);
	}
	json_decref(w->compiled);
	w->compiled = fresh;
	return out;
}

/* "uid/generation" of a policy document. */
static char *policy_key(const json_t *doc)
{
	return gv_xasprintf(
	    "%s/%" JSON_INTEGER_FORMAT, md_str(doc, "uid"),
	    json_integer_value(json_object_get(json_object_get(doc, "metadata"), "generation")));
}

static json_t *owned_view(const json_t *config)
{
	json_t *v = json_array();
	size_t i;
	const json_t *wh;

	json_array_foreach(json_object_get(config, "webhooks"), i, wh)
	{
		if (webhookconfig_owned(json_string_value(json_object_get(wh, "name"))))
			json_array_append(v, (json_t *)wh);
	}
	return v;
}

/* The clientConfig of validate-policy.gavel.svc (or of the first webhook not generated). */
static const json_t *template_of(const json_t *config)
{
	size_t i;
	const json_t *wh, *first = NULL;

	json_array_foreach(json_object_get(config, "webhooks"), i, wh)
	{
		const char *n = json_string_value(json_object_get(wh, "name"));
		if (webhookconfig_owned(n))
			continue;
		if (n && !strcmp(n, "validate-policy.gavel.svc"))
			return json_object_get(wh, "clientConfig");
		if (!first)
			first = json_object_get(wh, "clientConfig");
	}
	return first;
}

#define VWC_PATH "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"

/* GET a configuration by name: GV_OK with *out, else the status in *st. */
static enum gv_code get_config(struct webhookconfig *w, const char *name, json_t **out,
			       struct kube_status *st, struct gv_err *err)
{
	char *ename = kube_escape(name), *path = gv_xasprintf("%s/%s", VWC_PATH, ename);
	enum gv_code rc = kube_request(w->cfg.client, "GET", path, NULL, out, st, err);

	free(path);
	free(ename);
	return rc;
}

json_t *webhookconfig_resolve_crd(const json_t *crds, const char *kind)
{
	char *copy = gv_xstrdup(kind), *tok[3] = {0};
	const char *group = NULL, *version = NULL, *k;
	size_t n = 0, i;
	const json_t *crd;
	json_t *out = NULL;

	for (char *p = copy; p && n < 3;) {
		tok[n++] = p;
		p = strchr(p, '/');
		if (p)
			*p++ = '\0';
		if (p && n == 3)
			goto done; /* a subresource or more */
	}
	if (n == 1) {
		k = tok[0];
	} else if (n == 3) {
		group = tok[0];
		version = strcmp(tok[1], "*") ? tok[1] : NULL;
		k = tok[2];
	} else {
		goto done;
	}
	json_array_foreach(crds, i, crd)
	{
		const json_t *spec = json_object_get(crd, "spec");
		const json_t *names = json_object_get(spec, "names");
		const char *g = json_string_value(json_object_get(spec, "group"));
		const char *plural = json_string_value(json_object_get(names, "plural"));
		const char *scope = json_string_value(json_object_get(spec, "scope"));
		const char *ck = json_string_value(json_object_get(names, "kind"));
		const char *use = NULL;
		size_t j;
		const json_t *v;
		if (!g || !plural || !ck || strcmp(ck, k) || (group && strcmp(group, g)))
			continue;
		json_array_foreach(json_object_get(spec, "versions"), j, v)
		{
			const char *name = json_string_value(json_object_get(v, "name"));
			if (!name || !json_is_true(json_object_get(v, "served")))
				continue;
			if (version ? !strcmp(version, name)
				    : (!use || json_is_true(json_object_get(v, "storage"))))
				use = name;
		}
		if (!use)
			continue;
		out = json_pack("[o]",
				part(g, use,
				     scope && !strcmp(scope, "Cluster") ? "Cluster" : "Namespaced",
				     json_pack("[s]", plural)));
		break;
	}
done:
	free(copy);
	return out;
}

struct crd_resolver {
	struct kube_client *client;
	json_t *crds; /* the informer's CRDs, taken for one build */
};

/* Discovery, else the CRDs the informer holds (a kind installed a moment ago). */
static json_t *resolve_with_crds(void *ud, const char *kind)
{
	struct crd_resolver *cr = ud;
	json_t *out = webhookconfig_resolve_discovery(cr->client, kind);

	return out ? out : webhookconfig_resolve_crd(cr->crds, kind);
}

/* Returns true when the configuration matches the policies (written or already so). */
static bool sync_once(struct webhookconfig *w)
{
	char *ename = kube_escape(w->name);
	char *path = gv_xasprintf("%s/%s", VWC_PATH, ename);
	json_t *docs = snapshot_policy_docs(w->cfg.snapshot), *good = good_docs(w, docs);
	struct view_state *state = snapshot_state(w->cfg.snapshot);
	struct view_vpolset *vset = state ? view_state_vpols(state) : NULL;
	json_t *data = snapshot_config_data(w->cfg.snapshot);
	struct crd_resolver cr = {w->cfg.client, w->crds ? kube_informer_list(w->crds) : NULL};
	struct webhookconfig_resolver r = {resolve_with_crds, &cr};
	bool done = false, unusable = false;

	/* The ValidatingPolicies that compiled (the state's set leaves the others out). */
	for (size_t i = 0; i < view_vpolset_count(vset); i++) {
		const json_t *d = vpol_doc(view_vpolset_policy(vset, i));
		if (is_vpol_doc(d))
			json_array_append(good, (json_t *)d);
	}
	for (int attempt = 1; attempt <= WEBHOOKCONFIG_ATTEMPTS; attempt++) {
		json_t *cur = NULL, *tcur = NULL, *desired, *view, *hooks, *body, *resp = NULL;
		struct kube_status st = {0};
		struct gv_err err = {0};
		const json_t *tmpl;
		bool create = false;
		size_t i;
		const json_t *wh;

		if (kube_request(w->cfg.client, "GET", path, NULL, &cur, &st, &err)) {
			if (st.http == 404 && w->cfg.template_name) {
				/* a configuration of its own: made here */
				cur = json_pack(
				    "{s:s, s:s, s:{s:s, s:{s:s}}, s:[]}", "apiVersion",
				    "admissionregistration.k8s.io/v1", "kind",
				    "ValidatingWebhookConfiguration", "metadata", "name", w->name,
				    "labels", "app.kubernetes.io/managed-by", "gavel", "webhooks");
				create = true;
			} else {
				if (st.http == 404)
					gv_debug("webhookconfig: %s does not exist", w->name);
				else
					gv_warn("webhookconfig: %s", err.msg);
				unusable = st.http == 404;
				break;
			}
		}
		if (w->cfg.template_name &&
		    get_config(w, w->cfg.template_name, &tcur, &st, &err) != GV_OK) {
			gv_warn("webhookconfig: %s: %s", w->cfg.template_name, err.msg);
			unusable = st.http == 404;
			json_decref(cur);
			break;
		}
		tmpl = template_of(tcur ? tcur : cur);
		if (!tmpl) {
			gv_warn("webhookconfig: %s has no webhook to take the clientConfig from "
				"(validate-policy.gavel.svc)",
				w->cfg.template_name ? w->cfg.template_name : w->name);
			unusable = true;
			json_decref(tcur);
			json_decref(cur);
			break;
		}
		desired = webhookconfig_build(good, data, w->namespace, tmpl, w->cfg.timeout, &r);
		json_decref(tcur);
		view = owned_view(cur);
		if (!create && (json_equal(view, desired) ||
				(w->last_desired && json_equal(desired, w->last_desired) &&
				 w->last_view && json_equal(view, w->last_view)))) {
			json_decref(view);
			json_decref(desired);
			json_decref(cur);
			done = true;
			break;
		}
		json_decref(view);
		hooks = json_array();
		json_array_foreach(json_object_get(cur, "webhooks"), i, wh)
		{
			if (!webhookconfig_owned(json_string_value(json_object_get(wh, "name"))))
				json_array_append(hooks, (json_t *)wh);
		}
		json_array_extend(hooks, desired);
		body = json_deep_copy(cur);
		json_object_set_new(body, "webhooks", hooks);
		if (!kube_request(w->cfg.client, create ? "POST" : "PUT", create ? VWC_PATH : path,
				  body, &resp, &st, &err)) {
			done = true;
			gv_info("webhookconfig: %s: %zu generated webhooks written", w->name,
				json_array_size(desired));
			json_decref(w->last_desired);
			w->last_desired = json_incref(desired);
			json_decref(w->last_view);
			w->last_view = owned_view(resp);
			attempt = WEBHOOKCONFIG_ATTEMPTS;
		} else if (st.http != 409 || attempt == WEBHOOKCONFIG_ATTEMPTS) {
			gv_warn("webhookconfig: %s not written: %s", w->name, err.msg);
		}
		json_decref(resp);
		json_decref(body);
		json_decref(desired);
		json_decref(cur);
	}
	pthread_mutex_lock(&w->mu);
	/* unusable: nothing to wait for, but only for the policies this sync saw */
	if (done || unusable) {
		size_t i;
		const json_t *d;
		json_object_clear(w->covered);
		json_array_foreach(good, i, d)
		{
			char *key = policy_key(d);
			json_object_set_new(w->covered, key, json_true());
			free(key);
		}
	}
	pthread_mutex_unlock(&w->mu);
	json_decref(cr.crds);
	json_decref(data);
	json_decref(good);
	json_decref(docs);
	if (state)
		view_state_unref(state);
	free(path);
	free(ename);
	return done;
}

/* The CRD informer's callback: a kind may have come or gone. */
static void crd_changed(void *ud)
{
	struct webhookconfig *w = ud;

	pthread_mutex_lock(&w->mu);
	w->crd_changes++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static long ms_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

static void *thread_main(void *ud)
{
	struct webhookconfig *w = ud;
	uint64_t seen = 0, pending = 0, crd_seen = 0;
	struct timespec changed = {0}, synced = {0}, crd_at = {0};
	/* syncs after a CRD change, in ms from it; none due at first */
	static const long crd_delays_ms[] = WEBHOOKCONFIG_CRD_DELAYS_MS;
	size_t crd_step = GV_ARRAY_LEN(crd_delays_ms);

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		struct timespec ts, now;
		uint64_t gen, crd;
		long since_change, since_sync;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		if (w->stop)
			break;
		crd = w->crd_changes;
		pthread_mutex_unlock(&w->mu);
		gen = snapshot_generation(w->cfg.snapshot);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (crd != crd_seen) {
			/*
			 * A CRD created, Established, changed or deleted: discovery
			 * again and the rules with it at once and at the delays of
			 * crd_delays_ms after (a new group reaches discovery a
			 * little after its CRD is Established).
			 */
			crd_seen = crd;
			crd_at = now;
			crd_step = 0;
		}
		if (gen && gen != pending) {
			/* from the first change since the last sync: churn does not starve it */
			if (pending == seen)
				changed = now;
			pending = gen;
		}
		since_change = (now.tv_sec - changed.tv_sec) * 1000 +
			       (now.tv_nsec - changed.tv_nsec) / 1000000;
		since_sync = now.tv_sec - synced.tv_sec;
		if (w->cfg.leader && !reconciler_leading(w->cfg.leader)) {
			seen = 0;
		} else if (gen && crd_step < GV_ARRAY_LEN(crd_delays_ms) &&
			   ms_between(&crd_at, &now) >= crd_delays_ms[crd_step]) {
			/* at once: the CRDs (resolve_with_crds); after: discovery too */
			if (crd_step)
				kube_discovery_invalidate(w->cfg.client);
			seen = pending;
			synced = now;
			sync_once(w);
			while (crd_step < GV_ARRAY_LEN(crd_delays_ms) &&
			       ms_between(&crd_at, &now) >= crd_delays_ms[crd_step])
				crd_step++;
		} else if (gen && ((pending != seen && since_change >= WEBHOOKCONFIG_SETTLE_MS) ||
				   (seen && since_sync >= WEBHOOKCONFIG_RESYNC_S))) {
			seen = pending;
			synced = now;
			sync_once(w);
		}
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct webhookconfig *webhookconfig_start(const struct webhookconfig_config *cfg)
{
	struct webhookconfig *w = gv_xcalloc(1, sizeof(*w));

	w->cfg = *cfg;
	w->name = gv_xstrdup(cfg->name);
	w->namespace = gv_xstrdup(cfg->namespace && *cfg->namespace ? cfg->namespace : "gavel");
	w->compiled = json_object();
	w->covered = json_object();
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pthread_create(&w->thread, NULL, thread_main, w)) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		json_decref(w->compiled);
		json_decref(w->covered);
		free(w->name);
		free(w->namespace);
		free(w);
		return NULL;
	}
	w->crds = kube_informer_start(w->cfg.client, WEBHOOKCONFIG_CRD_PATH, crd_changed, w);
	return w;
}

bool webhookconfig_covers(struct webhookconfig *w, const json_t *doc)
{
	char *key;
	bool yes;

	if (!w)
		return true;
	key = policy_key(doc);
	pthread_mutex_lock(&w->mu);
	yes = json_object_get(w->covered, key) != NULL;
	pthread_mutex_unlock(&w->mu);
	free(key);
	return yes;
}

void webhookconfig_stop(struct webhookconfig *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	/*
	 * After the thread, which lists the informer's CRDs while it builds
	 * (sync_once); before the mutex and condition go, which the
	 * informer's callback (crd_changed) signals until it is stopped
	 */
	kube_informer_stop(w->crds);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	json_decref(w->compiled);
	json_decref(w->covered);
	json_decref(w->last_desired);
	json_decref(w->last_view);
	free(w->name);
	free(w->namespace);
	free(w);
}
