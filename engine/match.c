/*
 * match.c - rule selection: match / exclude (kyverno-semantics.md section 2).
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/value.h"
#include "common/banned.h"

static char **str_list(const json_t *arr, size_t *n)
{
	char **v;
	size_t i;
	json_t *c;

	*n = 0;
	if (!json_is_array(arr) || !json_array_size(arr))
		return NULL;
	v = gv_xcalloc(json_array_size(arr), sizeof(*v));
	json_array_foreach(arr, i, c)
	{
		if (json_is_string(c))
			v[(*n)++] = gv_xstrdup(json_string_value(c));
	}
	return v;
}

static void str_list_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

bool engine_is_kind_version(const char *s)
{
	/* ^(v\d+((alpha|beta)\d+)?|\*)$ */
	const char *p = s;

	if (!strcmp(s, "*"))
		return true;
	if (*p++ != 'v')
		return false;
	if (!(*p >= '0' && *p <= '9'))
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	if (!*p)
		return true;
	if (!strncmp(p, "alpha", 5))
		p += 5;
	else if (!strncmp(p, "beta", 4))
		p += 4;
	else
		return false;
	if (!(*p >= '0' && *p <= '9'))
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '\0';
}

void kind_sel_parse(const char *s, struct kind_sel *k)
{
	char *parts[4] = {0};
	size_t n = 0;
	const char *p = s, *slash;
	char *last, *dot;

	memset(k, 0, sizeof(*k));
	while ((slash = strchr(p, '/')) && n < 3) {
		parts[n++] = gv_xstrndup(p, (size_t)(slash - p));
		p = slash + 1;
	}
	parts[n++] = gv_xstrdup(p);
	/* The last segment is also split on '.' (Pod.exec == Pod/exec). */
	last = parts[n - 1];
	dot = strchr(last, '.');
	if (dot && n < 4) {
		parts[n++] = gv_xstrdup(dot + 1);
		*dot = '\0';
	}
	if (n == 1) {
		k->group = gv_xstrdup("*");
		k->version = gv_xstrdup("*");
		k->kind = parts[0];
		k->sub = gv_xstrdup("");
	} else if (n == 2) {
		if (!strcmp(parts[0], "*") && !strcmp(parts[1], "*")) {
			k->group = gv_xstrdup("*");
			k->version = gv_xstrdup("*");
			k->kind = parts[0];
			k->sub = parts[1];
		} else if (!strcmp(parts[0], "*")) {
			/* "*" + lowercase subresource */
			k->group = gv_xstrdup("*");
			k->version = gv_xstrdup("*");
			k->kind = parts[0];
			k->sub = parts[1];
		} else if (engine_is_kind_version(parts[0])) {
			k->group = gv_xstrdup("*");
			k->version = parts[0];
			k->kind = parts[1];
			k->sub = gv_xstrdup("");
		} else {
			k->group = gv_xstrdup("*");
			k->version = gv_xstrdup("*");
			k->kind = parts[0];
			k->sub = parts[1];
		}
	} else if (n == 3) {
		if (engine_is_kind_version(parts[0])) {
			k->group = gv_xstrdup("*");
			k->version = parts[0];
			k->kind = parts[1];
			k->sub = parts[2];
		} else {
			k->group = parts[0];
			k->version = parts[1];
			k->kind = parts[2];
			k->sub = gv_xstrdup("");
		}
	} else {
		k->group = parts[0];
		k->version = parts[1];
		k->kind = parts[2];
		k->sub = parts[3];
	}
}

void kind_sel_release(struct kind_sel *k)
{
	free(k->group);
	free(k->version);
	free(k->kind);
	free(k->sub);
}

static bool kind_matches(const struct kind_sel *k, const struct match_request *r)
{
	const char *sub = r->sub ? r->sub : "";

	if (!value_wildcard(k->group, r->group ? r->group : ""))
		return false;
	if (!value_wildcard(k->version, r->version ? r->version : ""))
		return false;
	if (!value_wildcard(k->kind, r->kind ? r->kind : ""))
		return false;
	if (value_wildcard(k->sub, sub))
		return true;
	/* Pod matches pods/ephemeralcontainers for backwards compatibility. */
	return k->sub[0] == '\0' && !strcmp(sub, "ephemeralcontainers");
}

unsigned match_op_bit(const char *op)
{
	if (!strcmp(op, "CREATE"))
		return OP_CREATE;
	if (!strcmp(op, "UPDATE"))
		return OP_UPDATE;
	if (!strcmp(op, "DELETE"))
		return OP_DELETE;
	if (!strcmp(op, "CONNECT"))
		return OP_CONNECT;
	return 0;
}

enum gv_code selector_compile(const json_t *j, struct selector **out, struct gv_buf *ptr,
			      struct gv_err *err)
{
	struct selector *s;
	const json_t *ml = json_object_get(j, "matchLabels");
	const json_t *me = json_object_get(j, "matchExpressions");
	size_t i;
	json_t *c;

	*out = NULL;
	if (!json_is_object(j))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "label selector must be an object");
	s = gv_xcalloc(1, sizeof(*s));
	s->match_labels = json_is_object(ml) ? json_incref((json_t *)ml) : NULL;
	if (json_is_array(me)) {
		s->reqs = gv_xcalloc(json_array_size(me) + 1, sizeof(*s->reqs));
		json_array_foreach(me, i, c)
		{
			const char *op = json_string_value(json_object_get(c, "operator"));
			const char *key = json_string_value(json_object_get(c, "key"));
			struct sel_req *r = &s->reqs[s->nreqs];

			if (!key || !op) {
				selector_free(s);
				return gv_err_setp(
				    err, GV_EINVAL, gv_buf_str(ptr),
				    "matchExpressions[%zu]: key and operator are required", i);
			}
			if (!strcmp(op, "In"))
				r->op = SEL_IN;
			else if (!strcmp(op, "NotIn"))
				r->op = SEL_NOTIN;
			else if (!strcmp(op, "Exists"))
				r->op = SEL_EXISTS;
			else if (!strcmp(op, "DoesNotExist"))
				r->op = SEL_DOESNOTEXIST;
			else {
				selector_free(s);
				return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
						   "\"%s\" is not a valid label selector operator",
						   op);
			}
			r->key = gv_xstrdup(key);
			r->values = str_list(json_object_get(c, "values"), &r->nvalues);
			s->nreqs++;
		}
	}
	*out = s;
	return GV_OK;
}

void selector_free(struct selector *s)
{
	if (!s)
		return;
	json_decref(s->match_labels);
	for (size_t i = 0; i < s->nreqs; i++) {
		free(s->reqs[i].key);
		str_list_free(s->reqs[i].values, s->reqs[i].nvalues);
	}
	free(s->reqs);
	free(s);
}

static const char *label(const json_t *labels, const char *k)
{
	return json_string_value(json_object_get(labels, k));
}

bool selector_matches(const struct selector *s, const json_t *labels)
{
	const char *k;
	json_t *v;

	if (s->match_labels) {
		json_object_foreach(s->match_labels, k, v)
		{
			const char *want = json_string_value(v);
			const char *have;

			if (!want)
				return false;
			if (value_has_wildcard(k) || value_has_wildcard(want)) {
				/* section 2.4: replaced by the first matching label */
				const char *lk;
				json_t *lv;
				bool found = false;
				json_object_foreach((json_t *)labels, lk, lv)
				{
					if (json_is_string(lv) && value_wildcard(k, lk) &&
					    value_wildcard(want, json_string_value(lv))) {
						found = true;
						break;
					}
				}
				if (!found)
					return false;
				continue;
			}
			have = label(labels, k);
			if (!have || strcmp(have, want))
				return false;
		}
	}
	for (size_t i = 0; i < s->nreqs; i++) {
		const struct sel_req *r = &s->reqs[i];
		const char *have = label(labels, r->key);
		bool in = false;

		if (have)
			for (size_t j = 0; j < r->nvalues; j++)
				if (!strcmp(have, r->values[j]))
					in = true;
		switch (r->op) {
		case SEL_IN:
			if (!have || !in)
				return false;
			break;
		case SEL_NOTIN:
			if (have && in)
				return false;
			break;
		case SEL_EXISTS:
			if (!have)
				return false;
			break;
		case SEL_DOESNOTEXIST:
			if (have)
				return false;
			break;
		}
	}
	return true;
}

static void filter_release(struct match_filter *f)
{
	for (size_t i = 0; i < f->nkinds; i++)
		kind_sel_release(&f->kinds[i]);
	free(f->kinds);
	str_list_free(f->names, f->nnames);
	str_list_free(f->namespaces, f->nnamespaces);
	json_decref(f->annotations);
	selector_free(f->selector);
	selector_free(f->ns_selector);
	str_list_free(f->roles, f->nroles);
	str_list_free(f->cluster_roles, f->ncluster_roles);
	json_decref(f->subjects);
}

static enum gv_code filter_compile(const json_t *res, const json_t *ui, struct match_filter *f,
				   bool is_exclude, struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *kinds, *name, *names, *ops, *v;
	size_t i, base = ptr->len;
	json_t *c;
	enum gv_code rc = GV_OK;

	memset(f, 0, sizeof(*f));
	if (res && !json_is_object(res))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "resources must be an object");
	kinds = json_object_get(res, "kinds");
	if (json_is_array(kinds) && json_array_size(kinds)) {
		f->kinds = gv_xcalloc(json_array_size(kinds), sizeof(*f->kinds));
		json_array_foreach(kinds, i, c)
		{
			if (!json_is_string(c))
				continue;
			kind_sel_parse(json_string_value(c), &f->kinds[f->nkinds++]);
		}
		f->has_resources = true;
	}
	name = json_object_get(res, "name");
	names = json_object_get(res, "names");
	if (json_is_string(name) && json_string_length(name) && json_is_array(names) &&
	    json_array_size(names)) {
		gv_pointer_add(ptr, "resources");
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				 "both name and names can not be specified together");
		goto out;
	}
	if (json_is_string(name) && json_string_length(name)) {
		f->names = gv_xcalloc(1, sizeof(*f->names));
		f->names[0] = gv_xstrdup(json_string_value(name));
		f->nnames = 1;
	} else {
		f->names = str_list(names, &f->nnames);
	}
	f->namespaces = str_list(json_object_get(res, "namespaces"), &f->nnamespaces);
	v = json_object_get(res, "annotations");
	if (json_is_object(v) && json_object_size(v))
		f->annotations = json_incref((json_t *)v);
	v = json_object_get(res, "selector");
	if (json_is_object(v)) {
		gv_pointer_add(ptr, "resources");
		gv_pointer_add(ptr, "selector");
		if (!json_object_size(json_object_get(v, "matchLabels")) &&
		    !json_array_size(json_object_get(v, "matchExpressions"))) {
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "the requirements are not specified in selector");
			goto out;
		}
		rc = selector_compile(v, &f->selector, ptr, err);
		if (rc)
			goto out;
		ptr->len = base;
		ptr->data[base] = '\0';
	}
	v = json_object_get(res, "namespaceSelector");
	if (json_is_object(v)) {
		rc = selector_compile(v, &f->ns_selector, ptr, err);
		if (rc)
			goto out;
	}
	ops = json_object_get(res, "operations");
	json_array_foreach(ops, i, c)
	{
		unsigned bit = json_is_string(c) ? match_op_bit(json_string_value(c)) : 0;
		if (!bit) {
			char idx[32];
			snprintf(idx, sizeof(idx), "%zu", i);
			gv_pointer_add(ptr, "resources");
			gv_pointer_add(ptr, "operations");
			gv_pointer_add(ptr, idx);
			/* The CRD enum, with the API server's message. */
			rc = gv_err_setp(
			    err, GV_EINVAL, gv_buf_str(ptr),
			    json_is_string(c)
				? "Unsupported value: \"%s\": supported values: "
				  "\"CREATE\", \"CONNECT\", \"UPDATE\", \"DELETE\""
				: "Invalid value: %s must be a string, one of \"CREATE\", "
				  "\"CONNECT\", \"UPDATE\", \"DELETE\"",
			    json_is_string(c) ? json_string_value(c) : "operations");
			goto out;
		}
		f->ops |= bit;
	}
	if (f->nnames || f->nnamespaces || f->annotations || f->selector || f->ns_selector ||
	    f->ops)
		f->has_resources = true;
	if (ui) {
		f->roles = str_list(json_object_get(ui, "roles"), &f->nroles);
		f->cluster_roles =
		    str_list(json_object_get(ui, "clusterRoles"), &f->ncluster_roles);
		v = json_object_get(ui, "subjects");
		if (json_is_array(v) && json_array_size(v))
			f->subjects = json_incref((json_t *)v);
		f->has_userinfo = f->nroles || f->ncluster_roles || f->subjects;
	}
	if (!is_exclude && !f->has_resources) {
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "match resources not specified");
		goto out;
	}
out:
	ptr->len = base;
	if (ptr->data)
		ptr->data[base] = '\0';
	if (rc)
		filter_release(f);
	return rc;
}

enum gv_code match_block_compile(const json_t *m, struct match_block *b, bool is_exclude,
				 struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *any = json_object_get(m, "any"), *all = json_object_get(m, "all");
	const json_t *list = NULL;
	size_t base = ptr->len, i;
	json_t *c;
	enum gv_code rc = GV_OK;
	bool legacy = json_object_get(m, "resources") || json_object_get(m, "subjects") ||
		      json_object_get(m, "roles") || json_object_get(m, "clusterRoles");

	memset(b, 0, sizeof(*b));
	if (!m || json_is_null(m))
		return GV_OK;
	if (!json_is_object(m))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "must be an object");
	if ((json_array_size(any) && json_array_size(all)) ||
	    ((json_array_size(any) || json_array_size(all)) && legacy))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "can't specify any/all together with the resources field");
	if (json_array_size(any)) {
		b->mode = MATCH_ANY;
		list = any;
		gv_pointer_add(ptr, "any");
	} else if (json_array_size(all)) {
		b->mode = MATCH_ALL;
		list = all;
		gv_pointer_add(ptr, "all");
	} else if (legacy) {
		b->mode = MATCH_ALL;
		b->f = gv_xcalloc(1, sizeof(*b->f));
		b->n = 1;
		rc = filter_compile(json_object_get(m, "resources"), m, &b->f[0], is_exclude, ptr,
				    err);
		if (rc) {
			free(b->f);
			memset(b, 0, sizeof(*b));
		}
		return rc;
	} else {
		if (!is_exclude &&
		    (json_is_array(any) || json_is_array(all) || json_object_size(m)))
			return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					   "match resources not specified");
		return GV_OK;
	}
	b->f = gv_xcalloc(json_array_size(list), sizeof(*b->f));
	json_array_foreach(list, i, c)
	{
		size_t ib = ptr->len;
		char idx[24];
		snprintf(idx, sizeof(idx), "%zu", i);
		gv_pointer_add(ptr, idx);
		rc = filter_compile(json_object_get(c, "resources"), c, &b->f[i], is_exclude, ptr,
				    err);
		ptr->len = ib;
		ptr->data[ib] = '\0';
		if (rc)
			break;
		b->n++;
	}
	ptr->len = base;
	ptr->data[base] = '\0';
	if (rc)
		match_block_release(b);
	return rc;
}

void match_block_release(struct match_block *b)
{
	for (size_t i = 0; i < b->n; i++)
		filter_release(&b->f[i]);
	free(b->f);
	memset(b, 0, sizeof(*b));
}

bool match_block_has_kind(const struct match_block *b, const char *kind)
{
	for (size_t i = 0; i < b->n; i++)
		for (size_t j = 0; j < b->f[i].nkinds; j++)
			if (!strcmp(b->f[i].kinds[j].kind, kind))
				return true;
	return false;
}

static bool any_wildcard(char *const *pats, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (value_wildcard(pats[i], s))
			return true;
	return false;
}

static bool in_list(const json_t *arr, const char *s)
{
	size_t i;
	json_t *c;

	json_array_foreach(arr, i, c) if (json_is_string(c) &&
					  !strcmp(json_string_value(c), s)) return true;
	return false;
}

static bool subjects_match(const json_t *subjects, const json_t *ui)
{
	const char *user = json_string_value(json_object_get(ui, "username"));
	const json_t *groups = json_object_get(ui, "groups");
	size_t i, j;
	json_t *s, *g;

	if (!user)
		user = "";
	json_array_foreach(subjects, i, s)
	{
		const char *kind = json_string_value(json_object_get(s, "kind"));
		const char *name = json_string_value(json_object_get(s, "name"));
		if (!kind || !name)
			continue;
		if (!strcmp(kind, "User")) {
			if (value_wildcard(name, user))
				return true;
		} else if (!strcmp(kind, "Group")) {
			json_array_foreach(
			    groups, j,
			    g) if (json_is_string(g) &&
				   value_wildcard(name, json_string_value(g))) return true;
		} else if (!strcmp(kind, "ServiceAccount")) {
			const char *ns = json_string_value(json_object_get(s, "namespace"));
			char *sa = gv_xasprintf("system:serviceaccount:%s:%s", ns ? ns : "", name);
			bool ok = value_wildcard(sa, user);
			free(sa);
			if (ok)
				return true;
		}
	}
	return false;
}

static bool annotations_match(const json_t *want, const json_t *have)
{
	const char *k, *hk;
	json_t *v, *hv;

	json_object_foreach((json_t *)want, k, v)
	{
		bool found = false;
		if (!json_is_string(v))
			return false;
		json_object_foreach((json_t *)have, hk, hv)
		{
			if (json_is_string(hv) && value_wildcard(k, hk) &&
			    value_wildcard(json_string_value(v), json_string_value(hv))) {
				found = true;
				break;
			}
		}
		if (!found)
			return false;
	}
	return true;
}

/* One filter (section 2.2). Exclude filters keep user-info constraints. */
static bool filter_eval(const struct match_filter *f, const struct match_request *r,
			bool is_exclude)
{
	bool use_userinfo = f->has_userinfo && (is_exclude || r->user_info);
	bool any = false;

	if (f->ops) {
		if (!(f->ops & r->op))
			return false;
		any = true;
	}
	if (f->nkinds) {
		bool ok = false;
		for (size_t i = 0; i < f->nkinds && !ok; i++)
			ok = kind_matches(&f->kinds[i], r);
		if (!ok)
			return false;
		any = true;
	}
	if (f->nnames) {
		if (!any_wildcard(f->names, f->nnames, r->name ? r->name : ""))
			return false;
		any = true;
	}
	if (f->nnamespaces) {
		const char *ns = r->namespace ? r->namespace : "";
		if (r->kind && !strcmp(r->kind, "Namespace") && (!r->group || !r->group[0]))
			ns = r->name ? r->name : "";
		if (!any_wildcard(f->namespaces, f->nnamespaces, ns))
			return false;
		any = true;
	}
	if (f->annotations) {
		if (!annotations_match(f->annotations, r->annotations))
			return false;
		any = true;
	}
	if (f->selector) {
		if (!selector_matches(f->selector, r->labels))
			return false;
		any = true;
	}
	if (f->ns_selector) {
		if (r->kind && !strcmp(r->kind, "Namespace"))
			return false;
		if (!selector_matches(f->ns_selector, r->ns_labels))
			return false;
		any = true;
	}
	if (use_userinfo) {
		const json_t *ui = r->user_info;
		if (f->nroles) {
			bool ok = false;
			for (size_t i = 0; i < f->nroles && !ok; i++)
				ok = in_list(r->roles, f->roles[i]);
			if (!ok)
				return false;
		}
		if (f->ncluster_roles) {
			bool ok = false;
			for (size_t i = 0; i < f->ncluster_roles && !ok; i++)
				ok = in_list(r->cluster_roles, f->cluster_roles[i]);
			if (!ok)
				return false;
		}
		if (f->subjects && !subjects_match(f->subjects, ui))
			return false;
		any = true;
	}
	return any;
}

bool match_block_eval(const struct match_block *b, const struct match_request *r, bool is_exclude)
{
	if (b->mode == MATCH_NONE || !b->n)
		return false;
	if (b->mode == MATCH_ANY) {
		for (size_t i = 0; i < b->n; i++)
			if (filter_eval(&b->f[i], r, is_exclude))
				return true;
		return false;
	}
	for (size_t i = 0; i < b->n; i++)
		if (!filter_eval(&b->f[i], r, is_exclude))
			return false;
	return true;
}
