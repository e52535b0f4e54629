/*
 * rbac.c - RoleBindings and ClusterRoleBindings by subject, for
 * request.roles and request.clusterRoles (Kyverno's userinfo.GetRoleRef,
 * kyverno-semantics.md section 2.2), kept current by two informers.
 *
 * The index is a hash (a jansson object) from a subject key to the role
 * references its bindings grant. Service account subjects are stored under
 * the username they authenticate as, so a request needs one lookup for its
 * username and one per group, whatever the number of bindings.
 */
#include "background/rbac.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/banned.h"

#define SA_PREFIX "system:serviceaccount:"

/*
 * A reference of the index: what one binding grants to one subject.
 * Stored as a JSON array [type, namespace, name]:
 *   "r"  a RoleBinding to a Role:         roles += "<namespace>:<name>"
 *   "rc" a RoleBinding to a ClusterRole:  clusterRoles += name when the
 *        request's namespace is <namespace>
 *   "c"  a ClusterRoleBinding:            clusterRoles += name
 */
struct rbac_index {
	atomic_long refs;
	json_t *by_subject; /* owned: {"u:<username>" | "g:<group>": [reference...]} */
	size_t nbindings;
};

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	if (b)
		v = json_object_get(v, b);
	return json_string_value(v);
}

static void add_ref(json_t *map, const char *prefix, const char *subject, json_t *ref)
{
	char *key = gv_xasprintf("%s%s", prefix, subject);
	json_t *list = json_object_get(map, key);

	if (!list) {
		list = json_array();
		json_object_set_new(map, key, list);
	}
	json_array_append(list, ref);
	free(key);
}

/* Indexes one binding; ns is NULL for a ClusterRoleBinding. */
static bool index_binding(json_t *map, const json_t *b, const char *ns)
{
	const char *kind = str_at(b, "roleRef", "kind");
	const char *name = str_at(b, "roleRef", "name");
	const json_t *subjects = json_object_get(b, "subjects");
	const char *type;
	json_t *ref;
	size_t i;
	const json_t *s;

	if (!kind || !name || !*name)
		return false;
	if (ns && !strcmp(kind, "Role"))
		type = "r";
	else if (!strcmp(kind, "ClusterRole"))
		type = ns ? "rc" : "c";
	else
		return false;
	ref = json_pack("[s,s,s]", type, ns ? ns : "", name);
	json_array_foreach(subjects, i, s)
	{
		const char *skind = str_at(s, "kind", NULL);
		const char *sname = str_at(s, "name", NULL);
		if (!skind || !sname || !*sname)
			continue;
		if (!strcmp(skind, "User")) {
			add_ref(map, "u:", sname, ref);
		} else if (!strcmp(skind, "Group")) {
			add_ref(map, "g:", sname, ref);
		} else if (!strcmp(skind, "ServiceAccount")) {
			/* Its namespace, else the RoleBinding's; none: never matches. */
			const char *sns = str_at(s, "namespace", NULL);
			char *user;
			if (!sns || !*sns)
				sns = ns;
			if (!sns || !*sns)
				continue;
			user = gv_xasprintf(SA_PREFIX "%s:%s", sns, sname);
			add_ref(map, "u:", user, ref);
			free(user);
		}
	}
	json_decref(ref);
	return true;
}

struct rbac_index *rbac_index_build(const json_t *rolebindings, const json_t *clusterrolebindings)
{
	struct rbac_index *ix = gv_xcalloc(1, sizeof(*ix));
	size_t i;
	const json_t *b;

	atomic_init(&ix->refs, 1);
	ix->by_subject = json_object();
	json_array_foreach(rolebindings, i, b)
	{
		const char *ns = str_at(b, "metadata", "namespace");
		if (ns && *ns)
			ix->nbindings += index_binding(ix->by_subject, b, ns);
	}
	json_array_foreach(clusterrolebindings, i, b) ix->nbindings +=
	    index_binding(ix->by_subject, b, NULL);
	return ix;
}

struct rbac_index *rbac_index_ref(struct rbac_index *ix)
{
	if (ix)
		atomic_fetch_add(&ix->refs, 1);
	return ix;
}

void rbac_index_unref(struct rbac_index *ix)
{
	if (!ix || atomic_fetch_sub(&ix->refs, 1) != 1)
		return;
	json_decref(ix->by_subject);
	free(ix);
}

size_t rbac_index_bindings(const struct rbac_index *ix)
{
	return ix ? ix->nbindings : 0;
}

/* Adds the references found under key to the two sets. */
static void collect(const struct rbac_index *ix, const char *prefix, const char *subject,
		    const char *namespace, json_t *roles, json_t *cluster_roles)
{
	char *key = gv_xasprintf("%s%s", prefix, subject);
	const json_t *list = json_object_get(ix->by_subject, key);
	size_t i;
	const json_t *ref;

	free(key);
	json_array_foreach(list, i, ref)
	{
		const char *type = json_string_value(json_array_get(ref, 0));
		const char *ns = json_string_value(json_array_get(ref, 1));
		const char *name = json_string_value(json_array_get(ref, 2));
		if (!strcmp(type, "r")) {
			char *r = gv_xasprintf("%s:%s", ns, name);
			json_object_set_new(roles, r, json_true());
			free(r);
		} else if (!strcmp(type, "c") || !strcmp(ns, namespace)) {
			json_object_set_new(cluster_roles, name, json_true());
		}
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of set, sorted, as a new array. */
static json_t *sorted_keys(const json_t *set)
{
	size_t n = json_object_size(set), k = 0;
	const char **v = gv_xcalloc(n + 1, sizeof(*v));
	const char *key;
	json_t *val, *out = json_array();

	json_object_foreach((json_t *)set, key, val) v[k++] = key;
	qsort(v, k, sizeof(*v), cmp_str);
	for (size_t i = 0; i < k; i++)
		json_array_append_new(out, json_string(v[i]));
	free(v);
	return out;
}

void rbac_index_lookup(const struct rbac_index *ix, const json_t *user_info, const char *namespace,
		       json_t **roles, json_t **cluster_roles)
{
	json_t *rs = json_object(), *crs = json_object();
	const char *user = str_at(user_info, "username", NULL);
	const json_t *groups = json_object_get(user_info, "groups");
	size_t i;
	const json_t *g;

	if (!namespace)
	namespace = "";
	if (ix) {
		if (user && *user)
			collect(ix, "u:", user, namespace, rs, crs);
		json_array_foreach(groups, i, g)
		{
			if (json_string_value(g))
				collect(ix, "g:", json_string_value(g), namespace, rs, crs);
		}
	}
	*roles = sorted_keys(rs);
	*cluster_roles = sorted_keys(crs);
	json_decref(rs);
	json_decref(crs);
}

/* ---- the cache ---- */

enum { RB, CRB, NCOLL };

struct rbac_cache {
	struct kube_client *client; /* borrowed */
	struct kube_informer *_Atomic inf[NCOLL];
	struct view_roles_source source;
	pthread_mutex_t build_mu; /* one build at a time, so the last one sees the latest lists */
	pthread_mutex_t mu;	  /* guards index and generation */
	struct rbac_index *index; /* owned reference, NULL until both listed */
	uint64_t generation;
};

static void rebuild(struct rbac_cache *rc)
{
	struct kube_informer *rb, *crb;
	struct rbac_index *ix, *old;
	json_t *rbs, *crbs;
	bool first;

	pthread_mutex_lock(&rc->build_mu);
	rb = atomic_load(&rc->inf[RB]);
	crb = atomic_load(&rc->inf[CRB]);
	if (!rb || !crb || !kube_informer_synced(rb) || !kube_informer_synced(crb)) {
		pthread_mutex_unlock(&rc->build_mu);
		return;
	}
	rbs = kube_informer_list(rb);
	crbs = kube_informer_list(crb);
	ix = rbac_index_build(rbs, crbs);
	pthread_mutex_lock(&rc->mu);
	old = rc->index;
	first = !old;
	rc->index = ix;
	rc->generation++;
	pthread_mutex_unlock(&rc->mu);
	pthread_mutex_unlock(&rc->build_mu);
	if (first)
		gv_info("rbac: ready: %zu RoleBindings and ClusterRoleBindings indexed "
			"(%zu listed)",
			rbac_index_bindings(ix), json_array_size(rbs) + json_array_size(crbs));
	else
		gv_debug("rbac: %zu bindings indexed", rbac_index_bindings(ix));
	rbac_index_unref(old);
	json_decref(rbs);
	json_decref(crbs);
}

static void on_change(void *ud)
{
	rebuild(ud);
}

static enum gv_code source_lookup(void *ud, const json_t *user_info, const char *namespace,
				  json_t **roles, json_t **cluster_roles, struct gv_err *err)
{
	struct rbac_index *ix = rbac_cache_index(ud);

	*roles = *cluster_roles = NULL;
	if (!ix)
		return gv_err_set(err, GV_ENOENT,
				  "RoleBindings and ClusterRoleBindings not listed yet");
	rbac_index_lookup(ix, user_info, namespace, roles, cluster_roles);
	rbac_index_unref(ix);
	return GV_OK;
}

static bool source_ready(void *ud)
{
	return rbac_cache_ready(ud);
}

enum gv_code rbac_cache_start(struct kube_client *c, struct rbac_cache **out, struct gv_err *err)
{
	static const char *const paths[NCOLL] = {RBAC_ROLEBINDINGS_PATH,
						 RBAC_CLUSTERROLEBINDINGS_PATH};
	struct rbac_cache *rc = gv_xcalloc(1, sizeof(*rc));

	*out = NULL;
	rc->client = c;
	rc->source.lookup = source_lookup;
	rc->source.ready = source_ready;
	rc->source.ud = rc;
	pthread_mutex_init(&rc->build_mu, NULL);
	pthread_mutex_init(&rc->mu, NULL);
	for (int k = 0; k < NCOLL; k++) {
		struct kube_informer *inf = kube_informer_start(c, paths[k], on_change, rc);
		if (!inf) {
			rbac_cache_stop(rc);
			return gv_err_set(err, GV_EINTERNAL, "rbac: cannot start a thread");
		}
		atomic_store(&rc->inf[k], inf);
		gv_info("rbac: watching %s", paths[k]);
	}
	/* A list that completed before its informer was stored above is taken up here. */
	rebuild(rc);
	*out = rc;
	return GV_OK;
}

void rbac_cache_stop(struct rbac_cache *rc)
{
	struct kube_informer *infs[NCOLL];

	if (!rc)
		return;
	/* Unpublished first: a build running on the other informer's thread must not use them. */
	pthread_mutex_lock(&rc->build_mu);
	for (int k = 0; k < NCOLL; k++)
		infs[k] = atomic_exchange(&rc->inf[k], NULL);
	pthread_mutex_unlock(&rc->build_mu);
	for (int k = 0; k < NCOLL; k++)
		if (infs[k])
			kube_informer_stop(infs[k]);
	rbac_index_unref(rc->index);
	pthread_mutex_destroy(&rc->mu);
	pthread_mutex_destroy(&rc->build_mu);
	free(rc);
}

bool rbac_cache_ready(struct rbac_cache *rc)
{
	bool ready;

	pthread_mutex_lock(&rc->mu);
	ready = rc->index != NULL;
	pthread_mutex_unlock(&rc->mu);
	return ready;
}

struct rbac_index *rbac_cache_index(struct rbac_cache *rc)
{
	struct rbac_index *ix;

	pthread_mutex_lock(&rc->mu);
	ix = rbac_index_ref(rc->index);
	pthread_mutex_unlock(&rc->mu);
	return ix;
}

uint64_t rbac_cache_generation(struct rbac_cache *rc)
{
	uint64_t g;

	pthread_mutex_lock(&rc->mu);
	g = rc->generation;
	pthread_mutex_unlock(&rc->mu);
	return g;
}

const struct view_roles_source *rbac_cache_source(struct rbac_cache *rc)
{
	return &rc->source;
}
