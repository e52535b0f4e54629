/*
 * discovery.c - Kind -> resource through legacy discovery (/api, /apis,
 * /apis/<g>/<v>), cached per client.
 */
#include "kube/kube.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "kube/kube_int.h"
#include "common/banned.h"

void kube_resource_release(struct kube_resource *r)
{
	if (!r)
		return;
	free(r->group);
	free(r->version);
	free(r->kind);
	free(r->resource);
	memset(r, 0, sizeof(*r));
}

static json_t *group_entry(const char *name, const char *preferred, json_t *versions)
{
	return json_pack("{s:s, s:s, s:o}", "name", name, "preferred", preferred ? preferred : "",
			 "versions", versions);
}

/* Fetches the group list (core first) into c->disc_groups. Called with disc_mu held. */
static enum gv_code load_groups(struct kube_client *c, struct gv_err *err)
{
	json_t *api = NULL, *apis = NULL, *groups = json_array(), *v, *g;
	enum gv_code rc;
	size_t i, j;

	if ((rc = kube_request(c, "GET", "/api", NULL, &api, NULL, err)))
		goto out;
	if ((rc = kube_request(c, "GET", "/apis", NULL, &apis, NULL, err)))
		goto out;
	{
		json_t *versions = json_array();
		const char *pref = NULL;

		json_array_foreach(json_object_get(api, "versions"), i, v)
		{
			if (!json_is_string(v))
				continue;
			if (!pref)
				pref = json_string_value(v);
			json_array_append(versions, v);
		}
		json_array_append_new(groups, group_entry("", pref, versions));
	}
	json_array_foreach(json_object_get(apis, "groups"), i, g)
	{
		const char *name = json_string_value(json_object_get(g, "name"));
		const char *pref = json_string_value(
		    json_object_get(json_object_get(g, "preferredVersion"), "version"));
		json_t *versions = json_array(), *gv;

		if (!name || !*name) {
			json_decref(versions);
			continue;
		}
		json_array_foreach(json_object_get(g, "versions"), j, gv)
		{
			const char *ver = json_string_value(json_object_get(gv, "version"));

			if (ver)
				json_array_append_new(versions, json_string(ver));
		}
		json_array_append_new(groups, group_entry(name, pref, versions));
	}
	json_decref(c->disc_groups);
	c->disc_groups = groups;
	groups = NULL;
	c->disc_groups_at = time(NULL);
out:
	json_decref(api);
	json_decref(apis);
	json_decref(groups);
	return rc;
}

/* The resources of group/version (borrowed from the cache), or NULL when unavailable. */
static const json_t *gv_resources(struct kube_client *c, const char *group, const char *version)
{
	char *key = gv_xasprintf("%s/%s", group, version), *path;
	json_t *ent = json_object_get(c->disc_gv, key), *list = NULL;
	struct gv_err err = {0};
	time_t now = time(NULL);

	if (ent) {
		time_t age = now - (time_t)json_integer_value(json_object_get(ent, "at"));
		const json_t *res = json_object_get(ent, "resources");

		/* A failed group/version is asked again after KUBE_DISCOVERY_MISS. */
		if (age < (res ? KUBE_DISCOVERY_TTL : KUBE_DISCOVERY_MISS)) {
			free(key);
			return res;
		}
	}
	path =
	    *group ? gv_xasprintf("/apis/%s/%s", group, version) : gv_xasprintf("/api/%s", version);
	if (kube_request(c, "GET", path, NULL, &list, NULL, &err)) {
		/* An aggregated API that is down (503) must not hide the others. */
		gv_debug("kube: discovery of %s skipped: %s", key, err.msg);
		json_object_set_new(c->disc_gv, key, json_pack("{s:I}", "at", (json_int_t)now));
		free(path);
		free(key);
		return NULL;
	}
	{
		json_t *arr = json_object_get(list, "resources");

		arr = json_is_array(arr) ? json_incref(arr) : json_array();
		ent = json_pack("{s:I, s:o}", "at", (json_int_t)now, "resources", arr);
	}
	json_object_set_new(c->disc_gv, key, ent);
	json_decref(list);
	free(path);
	free(key);
	return json_object_get(ent, "resources");
}

static bool has_verb(const json_t *r, const char *verb)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(r, "verbs"), i,
			   v) if (json_is_string(v) &&
				  !strcmp(json_string_value(v), verb)) return true;
	return false;
}

/* Looks kind up in one group/version; fills out on a match. */
static bool find_in(struct kube_client *c, const char *group, const char *version, const char *kind,
		    struct kube_resource *out)
{
	const json_t *res = gv_resources(c, group, version), *r;
	size_t i;

	if (!res)
		return false;
	json_array_foreach(res, i, r)
	{
		const char *name = json_string_value(json_object_get(r, "name"));
		const char *k = json_string_value(json_object_get(r, "kind"));

		if (!name || !k || strchr(name, '/') || strcmp(k, kind))
			continue;
		out->group = gv_xstrdup(group);
		out->version = gv_xstrdup(version);
		out->kind = gv_xstrdup(kind);
		out->resource = gv_xstrdup(name);
		out->namespaced = json_is_true(json_object_get(r, "namespaced"));
		out->listable = has_verb(r, "list") && has_verb(r, "watch");
		return true;
	}
	return false;
}

static bool search(struct kube_client *c, const char *group, const char *version, const char *kind,
		   struct kube_resource *out)
{
	const json_t *g, *v;
	size_t i, j;

	json_array_foreach(c->disc_groups, i, g)
	{
		const char *name = json_string_value(json_object_get(g, "name"));
		const char *pref = json_string_value(json_object_get(g, "preferred"));

		if (group && strcmp(group, name))
			continue;
		if (version) {
			bool listed = false;

			json_array_foreach(json_object_get(g, "versions"), j, v) listed |=
			    !strcmp(json_string_value(v), version);
			if (listed && find_in(c, name, version, kind, out))
				return true;
			continue;
		}
		if (pref && *pref && find_in(c, name, pref, kind, out))
			return true;
		json_array_foreach(json_object_get(g, "versions"), j, v)
		{
			const char *ver = json_string_value(v);

			if (pref && !strcmp(ver, pref))
				continue;
			if (find_in(c, name, ver, kind, out))
				return true;
		}
	}
	return false;
}

enum gv_code kube_discover(struct kube_client *c, const char *group, const char *version,
			   const char *kind, struct kube_resource *out, struct gv_err *err)
{
	enum gv_code rc = GV_OK;
	time_t now = time(NULL);

	memset(out, 0, sizeof(*out));
	if (!kind || !*kind)
		return gv_err_set(err, GV_EINVAL, "discovery: no kind");
	if (c->parent)
		c = c->parent; /* one cache, uncounted, as before counting children */
	pthread_mutex_lock(&c->disc_mu);
	if (!c->disc_groups || now - c->disc_groups_at >= KUBE_DISCOVERY_TTL)
		if ((rc = load_groups(c, err)))
			goto out;
	if (search(c, group, version, kind, out))
		goto out;
	if (now - c->disc_groups_at >= KUBE_DISCOVERY_MISS) {
		/* A miss on an old cache: the kind may be new (a CRD). Refetch once. */
		json_object_clear(c->disc_gv);
		if ((rc = load_groups(c, err)))
			goto out;
		if (search(c, group, version, kind, out))
			goto out;
	}
	{
		struct gv_buf want = {0};

		gv_buf_adds(&want, kind);
		if (group)
			gv_buf_addf(&want, " in group %s", *group ? group : "\"\" (core)");
		if (version)
			gv_buf_addf(&want, " version %s", version);
		rc = gv_err_set(err, GV_ENOENT, "kind %s is not served by the API server",
				gv_buf_str(&want));
		gv_buf_release(&want);
	}
out:
	pthread_mutex_unlock(&c->disc_mu);
	return rc;
}

void kube_discovery_invalidate(struct kube_client *c)
{
	pthread_mutex_lock(&c->disc_mu);
	c->disc_groups_at = 0;
	json_object_clear(c->disc_gv);
	pthread_mutex_unlock(&c->disc_mu);
}
