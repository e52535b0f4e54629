#include "cmd/values.h"

#include <stdlib.h>
#include <string.h>

#include "cmd/load.h"
#include "common/clock.h"
#include "common/yaml.h"
#include "engine/jmespath.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

/* The clock and random source the engine reads (time_now, random). */
static const struct jp_env real_env = {NULL, gv_clock_now, gv_random_u32};

/* ---- checking the document ---- */

static enum gv_code want_type(const json_t *v, bool (*is)(const json_t *), const char *what,
			      const char *ptr, struct gv_err *err)
{
	if (!v || json_is_null(v) || is(v))
		return GV_OK;
	return gv_err_setp(err, GV_EINVAL, ptr, "must be %s", what);
}

static bool is_object(const json_t *v)
{
	return json_is_object(v);
}

static bool is_array(const json_t *v)
{
	return json_is_array(v);
}

static bool is_string(const json_t *v)
{
	return json_is_string(v);
}

/* Checks each element of the array at key `key` of `parent` with fn. */
static enum gv_code check_list(const json_t *parent, const char *key, const char *base,
			       enum gv_code (*fn)(const json_t *, const char *, struct gv_err *),
			       struct gv_err *err)
{
	const json_t *a = json_object_get(parent, key);
	char ptr[512];
	size_t i;
	json_t *e;
	enum gv_code rc;

	snprintf(ptr, sizeof(ptr), "%s/%s", base, key);
	if ((rc = want_type(a, is_array, "a list", ptr, err)))
		return rc;
	json_array_foreach(a, i, e)
	{
		char p[600];
		snprintf(p, sizeof(p), "%s/%zu", ptr, i);
		if (!json_is_object(e))
			return gv_err_setp(err, GV_EINVAL, p, "must be an object");
		if ((rc = fn(e, p, err)))
			return rc;
	}
	return GV_OK;
}

static enum gv_code check_field(const json_t *o, const char *key, bool (*is)(const json_t *),
				const char *what, const char *base, struct gv_err *err)
{
	char p[700];

	snprintf(p, sizeof(p), "%s/%s", base, key);
	return want_type(json_object_get(o, key), is, what, p, err);
}

static enum gv_code check_resource_values(const json_t *o, const char *p, struct gv_err *err)
{
	enum gv_code rc = check_field(o, "name", is_string, "a string", p, err);

	return rc ? rc : check_field(o, "values", is_object, "an object", p, err);
}

static enum gv_code check_rule_values(const json_t *o, const char *p, struct gv_err *err)
{
	enum gv_code rc = check_field(o, "name", is_string, "a string", p, err);

	if (!rc)
		rc = check_field(o, "values", is_object, "an object", p, err);
	if (!rc)
		rc = check_field(o, "foreachValues", is_object, "an object", p, err);
	return rc;
}

static enum gv_code check_policy(const json_t *o, const char *p, struct gv_err *err)
{
	enum gv_code rc = check_field(o, "name", is_string, "a string", p, err);

	if (!rc)
		rc = check_list(o, "resources", p, check_resource_values, err);
	if (!rc)
		rc = check_list(o, "rules", p, check_rule_values, err);
	return rc;
}

static enum gv_code check_ns_selector(const json_t *o, const char *p, struct gv_err *err)
{
	enum gv_code rc = check_field(o, "name", is_string, "a string", p, err);

	return rc ? rc : check_field(o, "labels", is_object, "an object", p, err);
}

static enum gv_code check_namespace(const json_t *o, const char *p, struct gv_err *err)
{
	char mp[600];

	snprintf(mp, sizeof(mp), "%s/metadata", p);
	return check_field(json_object_get(o, "metadata"), "labels", is_object, "an object", mp,
			   err);
}

static enum gv_code check_api_resource(const json_t *o, const char *key, const char *p,
				       struct gv_err *err)
{
	const json_t *r = json_object_get(o, key);
	char rp[700];
	static const char *const fields[] = {"name", "kind", "group", "version"};

	snprintf(rp, sizeof(rp), "%s/%s", p, key);
	if (!json_is_object(r))
		return gv_err_setp(err, GV_EINVAL, rp, "must be an APIResource object");
	for (size_t i = 0; i < GV_ARRAY_LEN(fields); i++) {
		enum gv_code rc = check_field(r, fields[i], is_string, "a string", rp, err);
		if (rc)
			return rc;
	}
	return GV_OK;
}

static enum gv_code check_subresource(const json_t *o, const char *p, struct gv_err *err)
{
	enum gv_code rc = check_api_resource(o, "subresource", p, err);

	if (!rc)
		rc = check_api_resource(o, "parentResource", p, err);
	if (!rc && !strchr(load_str(o, "subresource", "name", NULL), '/')) {
		char np[700];
		snprintf(np, sizeof(np), "%s/subresource/name", p);
		rc = gv_err_setp(err, GV_EINVAL, np, "must be <resource>/<subresource>");
	}
	return rc;
}

static enum gv_code check_values(const json_t *doc, struct gv_err *err)
{
	enum gv_code rc;

	if (!json_is_object(doc))
		return gv_err_setp(err, GV_EINVAL, "", "values: the document must be an object");
	/* Kyverno's CLI reads both spellings (kind: Value in older test folders). */
	if (*load_str(doc, "kind", NULL) && strcmp(load_str(doc, "kind", NULL), "Values") &&
	    strcmp(load_str(doc, "kind", NULL), "Value"))
		return gv_err_setp(err, GV_EINVAL, "/kind",
				   "values: kind must be Values (or Value), not %s",
				   load_str(doc, "kind", NULL));
	if ((rc = check_field(doc, "globalValues", is_object, "an object", "", err)))
		return rc;
	if ((rc = check_list(doc, "policies", "", check_policy, err)))
		return rc;
	if ((rc = check_list(doc, "namespaceSelector", "", check_ns_selector, err)))
		return rc;
	if ((rc = check_list(doc, "namespaces", "", check_namespace, err)))
		return rc;
	return check_list(doc, "subresources", "", check_subresource, err);
}

/* ---- loading ---- */

void values_set_namespace_labels(struct values *v, const char *ns, const json_t *labels)
{
	if (!v->ns_labels)
		v->ns_labels = json_object();
	json_object_set_new(v->ns_labels, ns,
			    json_is_object(labels) ? json_deep_copy(labels) : json_object());
}

static void index_namespaces(struct values *v)
{
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(v->doc, "namespaceSelector"), i, e)
	{
		values_set_namespace_labels(v, load_str(e, "name", NULL),
					    json_object_get(e, "labels"));
	}
	/* Full Namespace objects take precedence. */
	json_array_foreach(json_object_get(v->doc, "namespaces"), i, e)
	{
		values_set_namespace_labels(
		    v, load_str(e, "metadata", "name", NULL),
		    json_object_get(json_object_get(e, "metadata"), "labels"));
	}
}

enum gv_code values_load_json(struct values *v, const json_t *doc, struct gv_err *err)
{
	enum gv_code rc = check_values(doc, err);

	if (rc)
		return rc;
	v->doc = load_to_reals(doc);
	index_namespaces(v);
	return GV_OK;
}

enum gv_code values_load_file(struct values *v, const char *path, struct gv_err *err)
{
	struct gv_docs docs;
	enum gv_code rc;

	rc = load_docs(path, &docs, err);
	if (rc)
		goto out;
	if (docs.n != 1) {
		rc = gv_err_set(err, GV_EINVAL,
				"%s: a values file holds exactly one document, not %zu", docs.file,
				docs.n);
		goto out;
	}
	rc = values_load_json(v, docs.v[0].value, err);
	if (rc)
		gv_err_locate(err, docs.file, docs.v[0].map);
out:
	gv_docs_release(&docs);
	return rc;
}

void values_release(struct values *v)
{
	json_decref(v->doc);
	json_decref(v->ns_labels);
	v->doc = NULL;
	v->ns_labels = NULL;
}

const json_t *values_namespace_labels(const struct values *v, const char *ns)
{
	if (!v || !v->ns_labels || !ns || !*ns)
		return NULL;
	return json_object_get(v->ns_labels, ns);
}

/* ---- lookups ---- */

/* Sets key in dst, moving it last so later layers are applied after earlier ones. */
static void put_last(json_t *dst, const char *key, const json_t *val)
{
	json_object_del(dst, key);
	json_object_set_new(dst, key, json_deep_copy(val));
}

static void put_all(json_t *dst, const json_t *src)
{
	const char *k;
	json_t *val;

	json_object_foreach(load_unconst(src), k, val)
	{
		put_last(dst, k, val);
	}
}

json_t *values_for_resource(const struct values *v, const char *policy, const char *resource)
{
	json_t *out = json_object();
	const json_t *g;
	size_t i, j;
	json_t *p, *r;

	if (!v || !v->doc)
		return out;
	g = json_object_get(v->doc, "globalValues");
	if (json_is_object(g))
		put_all(out, g);
	json_array_foreach(json_object_get(v->doc, "policies"), i, p)
	{
		if (strcmp(load_str(p, "name", NULL), policy))
			continue;
		json_array_foreach(json_object_get(p, "resources"), j, r)
		{
			const json_t *vals = json_object_get(r, "values");
			if (!strcmp(load_str(r, "name", NULL), resource) && json_is_object(vals))
				put_all(out, vals);
		}
	}
	return out;
}

static json_t *rule_field(const struct values *v, const char *policy, const char *rule,
			  const char *field)
{
	json_t *out = NULL;
	size_t i, j;
	json_t *p, *r;

	if (!v || !v->doc)
		return NULL;
	json_array_foreach(json_object_get(v->doc, "policies"), i, p)
	{
		if (strcmp(load_str(p, "name", NULL), policy))
			continue;
		json_array_foreach(json_object_get(p, "rules"), j, r)
		{
			const json_t *vals = json_object_get(r, field);
			if (strcmp(load_str(r, "name", NULL), rule) || !json_is_object(vals))
				continue;
			if (!out)
				out = json_object();
			put_all(out, vals);
		}
	}
	return out;
}

json_t *values_for_rule(const struct values *v, const char *policy, const char *rule)
{
	return rule_field(v, policy, rule, "values");
}

json_t *values_foreach_for_rule(const struct values *v, const char *policy, const char *rule)
{
	return rule_field(v, policy, rule, "foreachValues");
}

/* ---- AddVariable ---- */

/* Next segment of a dotted name into seg; returns the rest, or NULL at the end. */
static const char *next_segment(const char *s, struct gv_buf *seg)
{
	gv_buf_reset(seg);
	if (*s == '"') {
		const char *q = strchr(s + 1, '"');
		if (q && (q[1] == '.' || q[1] == '\0')) {
			gv_buf_add(seg, s + 1, (size_t)(q - s - 1));
			return q[1] ? q + 2 : NULL;
		}
	}
	{
		const char *dot = strchr(s, '.');
		size_t n = dot ? (size_t)(dot - s) : strlen(s);
		gv_buf_add(seg, s, n);
		return dot ? dot + 1 : NULL;
	}
}

static void merge_into(json_t *dst, const char *key, const json_t *val)
{
	json_t *cur = json_object_get(dst, key);
	const char *k;
	json_t *c;

	if (json_is_object(cur) && json_is_object(val)) {
		json_object_foreach(load_unconst(val), k, c)
		{
			merge_into(cur, k, c);
		}
		return;
	}
	json_object_set_new(dst, key, json_deep_copy(val));
}

void values_add_variable(json_t *ctx, const char *name, const json_t *value)
{
	struct gv_buf seg = {0};
	const char *rest = name;
	json_t *cur = ctx;

	for (;;) {
		rest = next_segment(rest, &seg);
		if (!rest) {
			merge_into(cur, gv_buf_str(&seg), value);
			break;
		}
		{
			json_t *child = json_object_get(cur, gv_buf_str(&seg));
			if (!json_is_object(child)) {
				child = json_object();
				json_object_set_new(cur, gv_buf_str(&seg), child);
			}
			cur = child;
		}
	}
	gv_buf_release(&seg);
}

/* ---- UserInfo ---- */

enum gv_code values_userinfo_load_file(struct values_userinfo *u, const char *path,
				       struct gv_err *err)
{
	struct gv_docs docs;
	enum gv_code rc;
	const json_t *doc;

	memset(u, 0, sizeof(*u));
	rc = load_docs(path, &docs, err);
	if (rc)
		goto out;
	if (docs.n != 1) {
		rc = gv_err_set(err, GV_EINVAL,
				"%s: a userinfo file holds exactly one document, not %zu",
				docs.file, docs.n);
		goto out;
	}
	doc = docs.v[0].value;
	if (!json_is_object(doc)) {
		rc = gv_err_setp(err, GV_EINVAL, "", "userinfo: the document must be an object");
	} else if (*load_str(doc, "kind", NULL) &&
		   strcmp(load_str(doc, "kind", NULL), "UserInfo")) {
		rc = gv_err_setp(err, GV_EINVAL, "/kind", "userinfo: kind must be UserInfo, not %s",
				 load_str(doc, "kind", NULL));
	} else if ((rc = check_field(doc, "userInfo", is_object, "an object", "", err)) ||
		   (rc = check_field(doc, "roles", is_array, "a list", "", err)) ||
		   (rc = check_field(doc, "clusterRoles", is_array, "a list", "", err))) {
		/* err set */
	}
	if (rc) {
		gv_err_locate(err, docs.file, docs.v[0].map);
		goto out;
	}
	u->doc = json_object();
	json_object_set_new(u->doc, "userInfo",
			    json_is_object(json_object_get(doc, "userInfo"))
				? json_deep_copy(json_object_get(doc, "userInfo"))
				: json_object());
	json_object_set_new(u->doc, "roles",
			    json_is_array(json_object_get(doc, "roles"))
				? json_deep_copy(json_object_get(doc, "roles"))
				: json_array());
	json_object_set_new(u->doc, "clusterRoles",
			    json_is_array(json_object_get(doc, "clusterRoles"))
				? json_deep_copy(json_object_get(doc, "clusterRoles"))
				: json_array());
	u->user_info = json_object_get(u->doc, "userInfo");
	u->roles = json_object_get(u->doc, "roles");
	u->cluster_roles = json_object_get(u->doc, "clusterRoles");
out:
	gv_docs_release(&docs);
	return rc;
}

void values_userinfo_release(struct values_userinfo *u)
{
	json_decref(u->doc);
	memset(u, 0, sizeof(*u));
}

/* ---- one evaluation ---- */

/* Whether name is `prefix` or lies below it ("request.object" or "request.object.x"). */
static bool under(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(name, prefix, n) && (name[n] == '\0' || name[n] == '.');
}

/*
 * Adds name = value to out as leaf assignments: a non-empty object value
 * becomes one dotted name per member (keys holding a dot are quoted), so
 * an engine that assigns each name merges objects the way Kyverno's
 * AddVariable does (`request: {operation: UPDATE}` keeps request.object).
 */
static void put_flat(json_t *out, const char *name, const json_t *value, int depth)
{
	const char *k;
	json_t *v;

	if (!json_is_object(value) || !json_object_size(value) || depth > 64) {
		put_last(out, name, value);
		return;
	}
	json_object_foreach(load_unconst(value), k, v)
	{
		char *child = strchr(k, '.') ? gv_xasprintf("%s.\"%s\"", name, k)
					     : gv_xasprintf("%s.%s", name, k);
		put_flat(out, child, v, depth + 1);
		free(child);
	}
}

static json_t *hook_rule_values(void *ud, const struct engine_policy *p, const char *rule,
				const json_t *resource)
{
	struct values_eval *ev = ud;
	json_t *out = json_object(), *flat = json_object();
	json_t *rv = values_for_rule(ev->values, p ? engine_policy_name(p) : ev->policy, rule);
	const char *k;
	json_t *v;

	(void)resource;
	/*
	 * The global and per-resource values that shape the request (operation,
	 * object, oldObject) are already in the engine input. Injecting them
	 * again would also override the engine's own evaluation of the old
	 * object as a CREATE (pre-existing violations on UPDATE), which Kyverno
	 * runs on a context where only the rule's own values are re-added.
	 */
	json_object_foreach(ev->vars, k, v)
	{
		put_flat(flat, k, v, 0);
	}
	json_object_foreach(flat, k, v)
	{
		if (!strcmp(k, "request.operation") || under(k, "request.object") ||
		    under(k, "request.oldObject"))
			continue;
		put_last(out, k, v);
	}
	json_decref(flat);
	if (rv) {
		json_object_foreach(rv, k, v)
		{
			put_flat(out, k, v, 0);
		}
		json_decref(rv);
	}
	if (!json_object_size(out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static json_t *hook_foreach_values(void *ud, const struct engine_policy *p, const char *rule,
				   const json_t *resource)
{
	struct values_eval *ev = ud;

	(void)resource;
	/* p may be NULL: the evaluation is for ev->policy anyway. */
	return values_foreach_for_rule(ev->values, p ? engine_policy_name(p) : ev->policy, rule);
}

/*
 * A globalReference from a test's globalContextEntries (TEST-FORMAT.md
 * section 2.1): the entry's `data`, or its `resources` as a list; each
 * projection {name, path} adds the key `name` (the path's value) to object
 * data; then the reference's jmesPath. An unknown name, an entry without
 * data, a failed projection or jmesPath: an error, never a skip.
 */
static enum gv_code mock_global(const json_t *entries, const json_t *ref, json_t **out,
				struct gv_err *err)
{
	const char *name = json_string_value(json_object_get(ref, "name"));
	const char *jp = json_string_value(json_object_get(ref, "jmesPath"));
	const json_t *e = NULL, *c;
	json_t *data = NULL;
	size_t i;

	json_array_foreach(entries, i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));
		if (n && name && !strcmp(n, name))
			e = c;
	}
	if (!e)
		return gv_err_set(err, GV_EEVAL, "failed to find globalcontext entry %s",
				  name ? name : "");
	if (json_object_get(e, "data"))
		data = json_deep_copy(json_object_get(e, "data"));
	else if (json_is_array(json_object_get(e, "resources")))
		data = json_deep_copy(json_object_get(e, "resources"));
	else
		return gv_err_set(err, GV_EEVAL,
				  "global context entry %s: gavel test reads `data` or `resources` "
				  "of globalContextEntries, not resourceFiles",
				  name);
	json_array_foreach(json_object_get(e, "projections"), i, c)
	{
		const char *pn = json_string_value(json_object_get(c, "name"));
		const char *path = json_string_value(json_object_get(c, "path"));
		struct jp_error je = {0};
		struct jp_options opt = {.kyverno = true};
		json_t *v;
		if (!pn || !path || !json_is_object(data))
			continue;
		v = jp_search(path, data, &opt, &je);
		if (!v) {
			json_decref(data);
			return gv_err_set(err, GV_EEVAL,
					  "global context entry %s: projection %s: %s", name, pn,
					  je.msg);
		}
		json_object_set_new(data, pn, v);
	}
	if (jp && *jp) {
		struct jp_error je = {0};
		struct jp_options opt = {.kyverno = true};
		json_t *v = jp_search(jp, data, &opt, &je);
		json_decref(data);
		if (!v)
			return gv_err_set(err, GV_EEVAL, "failed to apply jmespath %s: %s", jp,
					  je.msg);
		data = v;
	}
	*out = data;
	return GV_OK;
}

static enum gv_code hook_load_context(void *ud, const json_t *entry, const json_t *ctx,
				      json_t **out, struct gv_err *err)
{
	struct values_eval *ev = ud;

	(void)ctx;
	*out = NULL;
	if (json_is_array(ev->global_entries) && json_object_get(entry, "globalReference"))
		return mock_global(ev->global_entries, json_object_get(entry, "globalReference"),
				   out, err);
	/*
	 * Offline: configMap, apiCall, imageRegistry and globalReference are not
	 * loaded (a same-named value from the values file stays).
	 */
	return GV_ENOENT;
}

/* engine_hooks.param_scope offline: the built-in table (unknown kinds are namespaced). */
static enum gv_code hook_param_scope(void *ud, const char *api_version, const char *kind,
				     bool *namespaced, struct gv_err *err)
{
	(void)ud;
	(void)api_version;
	(void)err;
	*namespaced = !engine_kind_cluster_scoped(kind);
	return GV_OK;
}

/* engine_hooks.params offline: the objects of param_sources (values.h). */
static enum gv_code hook_params(void *ud, const char *api_version, const char *kind, const char *ns,
				const char *name, const json_t *selector, json_t **out,
				struct gv_err *err)
{
	struct values_eval *ev = ud;
	bool namespaced = !engine_kind_cluster_scoped(kind);
	json_t *all = json_array();

	(void)selector; /* the engine filters by labels */
	*out = NULL;
	for (size_t s = 0; s < GV_ARRAY_LEN(ev->param_sources); s++) {
		const struct load_resources *lr = ev->param_sources[s];
		for (size_t i = 0; lr && i < lr->n; i++) {
			const json_t *o = lr->v[i].obj;
			const char *ons = load_res_namespace(o);
			if (strcmp(load_res_api_version(o), api_version) ||
			    strcmp(load_res_kind(o), kind))
				continue;
			if (namespaced && strcmp(*ons ? ons : "default", ns))
				continue;
			if (name && strcmp(load_res_name(o), name))
				continue;
			if (name) {
				json_decref(all);
				*out = json_incref((json_t *)o);
				return GV_OK;
			}
			json_array_append((json_t *)all, (json_t *)o);
		}
	}
	if (name) {
		char res[128];
		const char *slash = strchr(api_version, '/');
		json_decref(all);
		vpol_kind_resource(kind, res, sizeof(res));
		return gv_err_set(err, GV_ENOENT, "%s%s%.*s \"%s\" not found", res,
				  slash ? "." : "", slash ? (int)(slash - api_version) : 0,
				  api_version, name);
	}
	*out = all;
	return GV_OK;
}

/* Maps a manifest such as a Scale to its parent kind and subresource. */
static void apply_subresource(struct values_eval *ev, const json_t *resource)
{
	size_t i;
	json_t *s;
	const char *av = load_res_api_version(resource), *kind = load_res_kind(resource);

	if (!ev->values || !ev->values->doc)
		return;
	json_array_foreach(json_object_get(ev->values->doc, "subresources"), i, s)
	{
		const json_t *sub = json_object_get(s, "subresource");
		const json_t *parent = json_object_get(s, "parentResource");
		const char *g = load_str(sub, "group", NULL), *ver = load_str(sub, "version", NULL);
		char want[256];
		const char *slash;

		snprintf(want, sizeof(want), "%s%s%s", g, *g ? "/" : "", ver);
		if (strcmp(kind, load_str(sub, "kind", NULL)) || strcmp(av, want))
			continue;
		slash = strchr(load_str(sub, "name", NULL), '/');
		snprintf(ev->subresource, sizeof(ev->subresource), "%s", slash ? slash + 1 : "");
		ev->in.group = load_str(parent, "group", NULL);
		ev->in.version = load_str(parent, "version", NULL);
		ev->in.kind = load_str(parent, "kind", NULL);
		ev->in.subresource = ev->subresource;
	}
}

enum gv_code values_eval_init(struct values_eval *ev, const struct values *values,
			      const struct values_userinfo *userinfo, const char *policy,
			      const json_t *resource, const char *operation, struct gv_err *err)
{
	const char *op;
	json_t *ctx, *req;

	memset(ev, 0, sizeof(*ev));
	ev->values = values;
	ev->policy = gv_xstrdup(policy);
	ev->vars = values_for_resource(values, policy, load_res_name(resource));
	if (operation) {
		json_t *s = json_string(operation);
		put_last(ev->vars, "request.operation", s);
		json_decref(s);
	}
	op = load_str(ev->vars, "request.operation", NULL);
	if (!*op)
		op = "CREATE";
	if (strcmp(op, "CREATE") && strcmp(op, "UPDATE") && strcmp(op, "DELETE") &&
	    strcmp(op, "CONNECT")) {
		gv_err_set(err, GV_EINVAL,
			   "request.operation: %s is not CREATE, UPDATE, DELETE or CONNECT", op);
		values_eval_release(ev);
		return GV_EINVAL;
	}
	snprintf(ev->operation, sizeof(ev->operation), "%s", op);

	if (!json_object_size(ev->vars)) {
		/* No variable: the request is the resource as it is (CREATE). */
		if (json_is_object(resource))
			ev->object = json_incref((json_t *)resource);
		goto hooks;
	}
	/* Apply the variables to the request and read the objects back. */
	ctx = json_object();
	req = json_object();
	json_object_set_new(ctx, "request", req);
	{
		/* Copy the resource only when a value is about to write into it. */
		bool writes = false;
		const char *k;
		json_t *val;
		json_object_foreach(ev->vars, k, val)
		{
			if (!strncmp(k, "request.object", 14) ||
			    !strncmp(k, "request.oldObject", 17) || !strcmp(k, "request"))
				writes = true;
		}
		if (strcmp(op, "DELETE"))
			json_object_set_new(req, "object",
					    writes ? json_deep_copy(resource)
						   : json_incref((json_t *)resource));
		if (!strcmp(op, "UPDATE") || !strcmp(op, "DELETE"))
			json_object_set_new(req, "oldObject",
					    writes ? json_deep_copy(resource)
						   : json_incref((json_t *)resource));
	}
	{
		const char *k;
		json_t *val;
		json_object_foreach(ev->vars, k, val)
		{
			values_add_variable(ctx, k, val);
		}
	}
	req = json_object_get(ctx, "request");
	if (strcmp(op, "DELETE") && json_is_object(json_object_get(req, "object")))
		ev->object = json_incref(json_object_get(req, "object"));
	if ((!strcmp(op, "UPDATE") || !strcmp(op, "DELETE")) &&
	    json_is_object(json_object_get(req, "oldObject")))
		ev->old_object = json_incref(json_object_get(req, "oldObject"));
	json_decref(ctx);

hooks:
	ev->hooks.ud = ev;
	ev->hooks.rule_values = hook_rule_values;
	ev->hooks.foreach_values = hook_foreach_values;
	ev->hooks.load_context = hook_load_context;
	ev->hooks.param_scope = hook_param_scope;
	ev->hooks.params = hook_params;
	ev->hooks.env = &real_env;

	ev->in.object = ev->object;
	ev->in.old_object = ev->old_object;
	ev->in.operation = ev->operation;
	if (userinfo && userinfo->doc) {
		ev->in.user_info = userinfo->user_info;
		ev->in.roles = userinfo->roles;
		ev->in.cluster_roles = userinfo->cluster_roles;
	}
	ev->in.namespace_labels = values_namespace_labels(values, load_res_namespace(resource));
	ev->in.hooks = &ev->hooks;
	apply_subresource(ev, resource);
	return GV_OK;
}

void values_eval_release(struct values_eval *ev)
{
	free(ev->policy);
	json_decref(ev->vars);
	json_decref(ev->object);
	json_decref(ev->old_object);
	memset(ev, 0, sizeof(*ev));
}
