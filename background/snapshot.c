/*
 * snapshot.c - informers for policies, exceptions, namespaces and gavel's
 * ConfigMap, and the thread that turns their contents into admission
 * states (DESIGN.md "Background: Snapshots").
 */
#include "background/snapshot.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "background/clusterstate.h"
#include "common/log.h"
#include "view/metrics.h"
#include "common/banned.h"

enum watch_kind {
	W_CPOL,
	W_POL,
	W_EXC,
	W_NS,
	W_CM,
	W_VPOL,
	W_NVPOL,
	W_CEXC,
	W_VAP,	/* admissionregistration.k8s.io ValidatingAdmissionPolicy (background only) */
	W_VAPB, /* and its bindings */
	W_COUNT
};

#define POLICY_BITS ((1u << W_CPOL) | (1u << W_POL) | (1u << W_EXC))
/* policies.kyverno.io ValidatingPolicy, NamespacedValidatingPolicy, PolicyException */
#define VPOL_BITS                                                                                  \
	((1u << W_VPOL) | (1u << W_NVPOL) | (1u << W_CEXC) | (1u << W_VAP) | (1u << W_VAPB))

struct watch {
	struct snapshot *s;
	enum watch_kind kind;
	char *path;		   /* owned; NULL while the kind is not served */
	struct kube_informer *inf; /* owned */
	time_t started;		   /* when the informer started */
	bool waived;		   /* optional kind not synced in time: no longer waited for */
};

/*
 * PolicyExceptions are optional: when their informer has not listed within
 * this many seconds (RBAC, a broken CRD), states are published without
 * them (and with them once the list arrives) rather than never.
 */
#define OPTIONAL_SYNC_WAIT_S 10

/* Compiled policies of the last build, reused while a policy is unchanged. */
struct cache_entry {
	char *key;		      /* owned: kind/namespace/name/uid/resourceVersion */
	struct engine_policy *policy; /* owned reference; NULL when it did not compile */
};

struct cache {
	struct cache_entry *v;
	size_t n;
};

/* A write /validate-policy admitted, awaited in the published state (snapshot_expect). */
struct expect {
	bool exception; /* a PolicyException; else a ClusterPolicy or Policy */
	char *ns, *name;
	char *uid;    /* NULL: any */
	char *old_rv; /* NULL for a CREATE */
	struct timespec deadline;
};

struct snapshot {
	struct kube_client *client; /* borrowed */
	char *namespace, *configmap;
	struct engine_policy **statics; /* owned references */
	size_t nstatic;
	struct watch w[W_COUNT];

	pthread_mutex_t mu; /* guards everything below up to `thread` */
	pthread_cond_t cv;
	unsigned dirty; /* watch kinds changed since the last build */
	bool stop;
	struct view_state *state; /* owned reference, NULL until the first build */
	json_t *config_data;	  /* owned */
	json_t *exceptions_pub;	  /* owned: the exception documents of state's policy set */
	json_t *policy_docs;	  /* owned: ClusterPolicies then Policies as listed */
	uint64_t generation;
	pthread_cond_t published; /* broadcast when a state is published */
	json_t *namespaces_pub;	  /* owned: the namespace labels of state */
	unsigned waiters;	  /* requests waiting in snapshot_state_fresh */
	struct expect *expects;	  /* awaited writes */
	size_t nexpects;
	pthread_t thread;

	/* Owned by the rebuild thread: */
	unsigned pending;
	struct engine_policyset *set;
	json_t *namespaces;
	json_t *exceptions; /* the exception documents the set was built from */
	struct view_config *config;
	struct cache cache;
	json_t *logged_exceptions;		  /* keys of exceptions whose error was logged */
	struct view_vpolset *vpols;		  /* the CEL policies of the last build */
	_Atomic(struct metrics_family *) changes; /* kyverno_policy_changes_total, or NULL */
};

/* ---- building ---- */

static const char *meta_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(o, "metadata"), key));

	return s ? s : "";
}

static char *doc_key(const json_t *doc, const char *kind)
{
	return gv_xasprintf("%s/%s/%s/%s/%s", kind, meta_str(doc, "namespace"),
			    meta_str(doc, "name"), meta_str(doc, "uid"),
			    meta_str(doc, "resourceVersion"));
}

/*
 * A private copy of a listed object, with apiVersion and kind filled in
 * (list items of some servers omit them). The informer's objects are never
 * modified.
 */
static json_t *doc_copy(const json_t *doc, const char *kind, const char *api_version)
{
	json_t *c = json_deep_copy(doc);

	if (!json_string_value(json_object_get(c, "kind")))
		json_object_set_new(c, "kind", json_string(kind));
	if (!json_string_value(json_object_get(c, "apiVersion")) && api_version)
		json_object_set_new(c, "apiVersion", json_string(api_version));
	return c;
}

static void cache_release(struct cache *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].key);
		if (c->v[i].policy)
			engine_policy_unref(c->v[i].policy);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* Takes the entry for key out of old (NULL when absent). */
static bool cache_take(struct cache *old, const char *key, struct cache_entry *out)
{
	for (size_t i = 0; i < old->n; i++) {
		if (!old->v[i].key || strcmp(old->v[i].key, key))
			continue;
		*out = old->v[i];
		old->v[i].key = NULL;
		old->v[i].policy = NULL;
		return true;
	}
	return false;
}

static void compile_policies(const json_t *docs, const char *kind, struct cache *old,
			     struct cache *out)
{
	size_t i;
	const json_t *d;

	json_array_foreach(docs, i, d)
	{
		struct cache_entry e = {0};
		char *key = doc_key(d, kind);
		if (cache_take(old, key, &e)) {
			free(key);
		} else {
			json_t *doc = doc_copy(d, kind, "kyverno.io/v1");
			struct gv_err err = {0};
			e.key = key;
			e.policy = engine_policy_compile(doc, &err);
			if (!e.policy)
				gv_warn("snapshot: %s %s%s%s not loaded: %s%s%s", kind,
					meta_str(d, "namespace"),
					*meta_str(d, "namespace") ? "/" : "", meta_str(d, "name"),
					err.pointer, err.pointer[0] ? ": " : "", err.msg);
			else
				gv_debug("snapshot: %s %s compiled", kind, meta_str(d, "name"));
			if (e.policy) {
				/* Once per compiled document (unchanged ones are cached). */
				char *note = engine_policy_unsupported_note(e.policy);
				if (note)
					gv_info("snapshot: %s %s: %s", kind, meta_str(d, "name"),
						note);
				free(note);
			}
			json_decref(doc);
		}
		out->v = gv_xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
		out->v[out->n++] = e;
	}
}

/*
 * The policy set of cluster policies, namespaced policies and exceptions;
 * *cache is replaced by the entries of this build (unchanged documents are
 * not compiled again). logged: keys of exceptions already reported.
 */
static struct engine_policyset *build_set(const json_t *cpols, const json_t *pols,
					  const json_t *excs, struct engine_policy *const *statics,
					  size_t nstatic, struct cache *cache, json_t *logged,
					  size_t *ncompiled)
{
	struct cache fresh = {0};
	struct engine_policy **pv;
	struct engine_exception **ev = NULL;
	struct engine_policyset *set;
	size_t np = 0, ne = 0, i;
	const json_t *d;
	json_t *now_failed = json_object();

	compile_policies(cpols, "ClusterPolicy", cache, &fresh);
	compile_policies(pols, "Policy", cache, &fresh);
	cache_release(cache);
	*cache = fresh;
	pv = gv_xcalloc(nstatic + fresh.n + 1, sizeof(*pv));
	for (i = 0; i < nstatic; i++)
		pv[np++] = statics[i];
	for (i = 0; i < fresh.n; i++)
		if (fresh.v[i].policy)
			pv[np++] = fresh.v[i].policy;
	ev = gv_xcalloc(json_array_size(excs) + 1, sizeof(*ev));
	json_array_foreach(excs, i, d)
	{
		json_t *doc = doc_copy(d, "PolicyException", NULL);
		struct gv_err err = {0};
		struct engine_exception *e = engine_exception_compile(doc, &err);
		if (e) {
			ev[ne++] = e;
		} else {
			char *key = doc_key(d, "PolicyException");
			if (!json_object_get(logged, key))
				gv_warn("snapshot: PolicyException %s/%s not loaded: %s%s%s",
					meta_str(d, "namespace"), meta_str(d, "name"), err.pointer,
					err.pointer[0] ? ": " : "", err.msg);
			json_object_set_new(now_failed, key, json_true());
			free(key);
		}
		json_decref(doc);
	}
	if (logged) {
		json_object_clear(logged);
		json_object_update(logged, now_failed);
	}
	json_decref(now_failed);
	set = engine_policyset_new(pv, np, ev, ne);
	if (ncompiled)
		*ncompiled = np;
	free(pv);
	free(ev);
	return set;
}

struct engine_policyset *snapshot_build_policyset(const json_t *policies, const json_t *exceptions,
						  struct engine_policy *const *static_policies,
						  size_t nstatic, size_t *ncompiled)
{
	struct cache cache = {0};
	json_t *cpols = json_array(), *pols = json_array(), *logged = json_object();
	struct engine_policyset *set;
	size_t i;
	const json_t *d;

	/* Split by kind so that each gets its kind's defaults. */
	json_array_foreach(policies, i, d)
	{
		const char *kind = json_string_value(json_object_get(d, "kind"));
		if (kind && !strcmp(kind, "Policy"))
			json_array_append(pols, (json_t *)d);
		else if (kind && !strcmp(kind, "ClusterPolicy"))
			json_array_append(cpols, (json_t *)d);
	}
	set =
	    build_set(cpols, pols, exceptions, static_policies, nstatic, &cache, logged, ncompiled);
	cache_release(&cache);
	json_decref(cpols);
	json_decref(pols);
	json_decref(logged);
	return set;
}

json_t *snapshot_build_namespaces(const json_t *namespaces)
{
	json_t *map = json_object();
	size_t i;
	const json_t *d;

	json_array_foreach(namespaces, i, d)
	{
		const char *name = meta_str(d, "name");
		const json_t *labels = json_object_get(json_object_get(d, "metadata"), "labels");
		if (!*name)
			continue;
		json_object_set_new(
		    map, name, json_is_object(labels) ? json_deep_copy(labels) : json_object());
	}
	return map;
}

/* ---- informers ---- */

static void on_change(void *ud)
{
	struct watch *w = ud;
	struct snapshot *s = w->s;

	pthread_mutex_lock(&s->mu);
	s->dirty |= 1u << w->kind;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static json_t *watch_list(struct watch *w)
{
	json_t *v = w->inf ? kube_informer_list(w->inf) : NULL;

	return v ? v : json_array();
}

/*
 * Finds where a kind is served. Returns GV_OK with *path set (caller
 * frees), GV_OK with *path NULL when it is not served, or GV_ENET.
 */
static enum gv_code discover(struct snapshot *s, enum watch_kind k, char **path, struct gv_err *err)
{
	static const char *const exc_versions[] = {"v2", "v2beta1"};
	struct kube_resource r = {0};
	struct gv_err e = {0};
	enum gv_code rc = GV_ENOENT;

	*path = NULL;
	switch (k) {
	case W_CPOL:
		rc = kube_discover(s->client, "kyverno.io", NULL, "ClusterPolicy", &r, &e);
		break;
	case W_POL:
		rc = kube_discover(s->client, "kyverno.io", NULL, "Policy", &r, &e);
		break;
	case W_EXC:
		for (size_t i = 0; i < GV_ARRAY_LEN(exc_versions); i++) {
			memset(&e, 0, sizeof(e));
			rc = kube_discover(s->client, "kyverno.io", exc_versions[i],
					   "PolicyException", &r, &e);
			if (rc != GV_ENOENT)
				break;
		}
		break;
	case W_VPOL:
		rc = kube_discover(s->client, "policies.kyverno.io", NULL, "ValidatingPolicy", &r,
				   &e);
		break;
	case W_NVPOL:
		rc = kube_discover(s->client, "policies.kyverno.io", NULL,
				   "NamespacedValidatingPolicy", &r, &e);
		break;
	case W_CEXC:
		rc = kube_discover(s->client, "policies.kyverno.io", NULL, "PolicyException", &r,
				   &e);
		break;
	case W_VAP:
	case W_VAPB: {
		/* the first version served (v1 from Kubernetes 1.30); none: not watched, quietly */
		size_t n;
		const char *const *vers = clusterstate_vap_versions(&n);
		for (size_t i = 0; i < n; i++) {
			memset(&e, 0, sizeof(e));
			rc = kube_discover(s->client, "admissionregistration.k8s.io", vers[i],
					   k == W_VAP ? "ValidatingAdmissionPolicy"
						      : "ValidatingAdmissionPolicyBinding",
					   &r, &e);
			if (rc != GV_ENOENT)
				break;
		}
		break;
	}
	case W_NS:
		*path = gv_xstrdup("/api/v1/namespaces");
		return GV_OK;
	case W_CM: {
		char *ns = kube_escape(s->namespace), *name = kube_escape(s->configmap);
		*path = gv_xasprintf(
		    "/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3D%s", ns, name);
		free(ns);
		free(name);
		return GV_OK;
	}
	case W_COUNT:
		break;
	}
	if (rc == GV_ENOENT)
		return GV_OK;
	if (rc) {
		gv_err_set(err, rc, "%s", e.msg);
		return rc;
	}
	*path = kube_path(&r, NULL, NULL);
	kube_resource_release(&r);
	return GV_OK;
}

static const char *kind_name(enum watch_kind k)
{
	static const char *const names[] = {"ClusterPolicy",
					    "Policy",
					    "PolicyException",
					    "Namespace",
					    "ConfigMap",
					    "ValidatingPolicy",
					    "NamespacedValidatingPolicy",
					    "PolicyException.policies.kyverno.io",
					    "ValidatingAdmissionPolicy",
					    "ValidatingAdmissionPolicyBinding"};

	return k < W_COUNT ? names[k] : "?";
}

/* Starts the informer of w at path (taken); false when no thread could be made. */
static bool watch_start(struct snapshot *s, struct watch *w, char *path)
{
	w->inf = kube_informer_start(s->client, path, on_change, w);
	if (!w->inf) {
		gv_error("snapshot: cannot start the informer of %s", kind_name(w->kind));
		free(path);
		return false;
	}
	w->path = path;
	w->started = time(NULL);
	gv_info("snapshot: watching %s at %s", kind_name(w->kind), path);
	return true;
}

/* Looks again for the kinds that were not served. */
static void rediscover(struct snapshot *s)
{
	for (int k = 0; k < W_COUNT; k++) {
		struct watch *w = &s->w[k];
		struct gv_err err = {0};
		char *path = NULL;
		if (w->path)
			continue;
		if (discover(s, (enum watch_kind)k, &path, &err)) {
			gv_debug("snapshot: discovery of %s: %s", kind_name(w->kind), err.msg);
			continue;
		}
		if (path && watch_start(s, w, path))
			s->pending |= 1u << k;
	}
}

static bool all_synced(struct snapshot *s)
{
	for (int k = 0; k < W_COUNT; k++) {
		struct watch *w = &s->w[k];
		if (!w->path || kube_informer_synced(w->inf) || w->waived)
			continue;
		if ((k == W_EXC || k == W_CEXC || k == W_VAP || k == W_VAPB) &&
		    time(NULL) - w->started >= OPTIONAL_SYNC_WAIT_S) {
			gv_warn("snapshot: %s not listed after %ds: going on without them until "
				"they are",
				kind_name(w->kind), OPTIONAL_SYNC_WAIT_S);
			w->waived = true;
			continue;
		}
		return false;
	}
	return true;
}

static json_t *find_configmap(struct snapshot *s)
{
	json_t *cms = watch_list(&s->w[W_CM]), *data = NULL;
	size_t i;
	const json_t *d;

	json_array_foreach(cms, i, d)
	{
		if (strcmp(meta_str(d, "name"), s->configmap))
			continue;
		if (json_is_object(json_object_get(d, "data")))
			data = json_deep_copy(json_object_get(d, "data"));
		break;
	}
	json_decref(cms);
	return data ? data : json_object();
}

/* Appends private copies of the objects w lists (kind filled in) to out. */
static void add_docs_api(json_t *out, struct watch *w, const char *kind, const char *api_version)
{
	json_t *v = watch_list(w);
	size_t i;
	const json_t *d;

	json_array_foreach(v, i, d)
	{
		const char *api = json_string_value(json_object_get(d, "apiVersion"));
		json_array_append_new(out, doc_copy(d, kind, api ? NULL : api_version));
	}
	json_decref(v);
}

static void add_docs(json_t *out, struct watch *w, const char *kind)
{
	add_docs_api(out, w, kind, "policies.kyverno.io/v1");
}

/* ValidatingAdmissionPolicies or bindings, at whichever version watched, as v1. */
static void add_vap_docs(json_t *out, struct watch *w, const char *kind)
{
	size_t from = json_array_size(out);

	add_docs_api(out, w, kind, NULL);
	for (size_t i = from; i < json_array_size(out); i++)
		clusterstate_vap_to_v1(json_array_get(out, i), kind);
}

/* ---- awaited writes (s->mu held) ---- */

static void expect_release(struct expect *e)
{
	free(e->ns);
	free(e->name);
	free(e->uid);
	free(e->old_rv);
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void expect_drop(struct snapshot *s, size_t i)
{
	expect_release(&s->expects[i]);
	s->expects[i] = s->expects[--s->nexpects];
}

static bool expect_in(const struct expect *e, const json_t *docs)
{
	size_t i;
	const json_t *d;

	json_array_foreach(docs, i, d)
	{
		if (strcmp(meta_str(d, "namespace"), e->ns) || strcmp(meta_str(d, "name"), e->name))
			continue;
		if (e->uid && strcmp(meta_str(d, "uid"), e->uid))
			continue;
		if (e->old_rv && !strcmp(meta_str(d, "resourceVersion"), e->old_rv))
			continue;
		return true;
	}
	return false;
}

/* Drops the awaited writes the published state holds. */
static void expects_satisfy(struct snapshot *s)
{
	for (size_t i = 0; i < s->nexpects;) {
		const struct expect *e = &s->expects[i];
		if (expect_in(e, e->exception ? s->exceptions_pub : s->policy_docs))
			expect_drop(s, i);
		else
			i++;
	}
}

static void expects_expire(struct snapshot *s, const struct timespec *now)
{
	for (size_t i = 0; i < s->nexpects;) {
		if (!ts_before(now, &s->expects[i].deadline)) {
			gv_debug("snapshot: %s %s/%s not seen within %d ms",
				 s->expects[i].exception ? "PolicyException" : "policy",
				 s->expects[i].ns, s->expects[i].name, SNAPSHOT_EXPECT_MS);
			expect_drop(s, i);
		} else {
			i++;
		}
	}
}

/* Rebuilds what the pending bits say changed and publishes a new state. */
static void rebuild(struct snapshot *s)
{
	struct view_state *st, *old;
	json_t *data = NULL, *docs = NULL;
	bool first = s->set == NULL;

	if (!all_synced(s))
		return;
	if ((s->pending & POLICY_BITS) || !s->set) {
		json_t *cpols = watch_list(&s->w[W_CPOL]), *pols = watch_list(&s->w[W_POL]);
		json_t *excs = watch_list(&s->w[W_EXC]);
		size_t n = 0;
		struct engine_policyset *set = build_set(cpols, pols, excs, s->statics, s->nstatic,
							 &s->cache, s->logged_exceptions, &n);
		view_policy_changes_count(atomic_load(&s->changes), s->set, set);
		if (s->set)
			engine_policyset_unref(s->set);
		s->set = set;
		gv_info("snapshot: %zu policies loaded (%zu in the cluster, %zu from files), %zu "
			"exceptions",
			n, json_array_size(cpols) + json_array_size(pols), s->nstatic,
			json_array_size(excs));
		docs = json_array();
		json_array_extend(docs, cpols);
		json_array_extend(docs, pols);
		json_decref(cpols);
		json_decref(pols);
		json_decref(s->exceptions);
		s->exceptions = excs;
	}
	if ((s->pending & (1u << W_NS)) || !s->namespaces) {
		json_t *nss = watch_list(&s->w[W_NS]);
		json_decref(s->namespaces);
		s->namespaces = snapshot_build_namespaces(nss);
		json_decref(nss);
	}
	if ((s->pending & (1u << W_CM)) || !s->config) {
		data = find_configmap(s);
		view_config_unref(s->config);
		s->config = view_config_new(data);
	}
	if ((s->pending & VPOL_BITS) || !s->vpols) {
		json_t *docs_v = json_array(), *xs = json_array(), *bindings = json_array();
		add_docs(docs_v, &s->w[W_VPOL], "ValidatingPolicy");
		add_docs(docs_v, &s->w[W_NVPOL], "NamespacedValidatingPolicy");
		add_docs(xs, &s->w[W_CEXC], "PolicyException");
		add_vap_docs(docs_v, &s->w[W_VAP], "ValidatingAdmissionPolicy");
		add_vap_docs(bindings, &s->w[W_VAPB], "ValidatingAdmissionPolicyBinding");
		view_vpolset_unref(s->vpols);
		s->vpols = view_vpolset_new(docs_v, xs);
		view_vpolset_set_bindings(s->vpols, bindings);
		json_decref(bindings);
		if (json_array_size(docs_v) || json_array_size(xs))
			gv_info(
			    "snapshot: %zu ValidatingPolicies loaded (%zu in the cluster), %zu CEL "
			    "exceptions",
			    view_vpolset_count(s->vpols), json_array_size(docs_v),
			    json_array_size(xs));
		json_decref(docs_v);
		json_decref(xs);
	}
	s->pending = 0;
	st = view_state_new(s->set, s->namespaces, s->config);
	view_state_set_vpols(st, s->vpols);
	pthread_mutex_lock(&s->mu);
	old = s->state;
	s->state = st;
	json_decref(s->exceptions_pub);
	s->exceptions_pub = json_incref(s->exceptions);
	json_decref(s->namespaces_pub);
	s->namespaces_pub = json_incref(s->namespaces);
	if (data) {
		json_decref(s->config_data);
		s->config_data = data;
		data = NULL;
	}
	if (docs) {
		json_decref(s->policy_docs);
		s->policy_docs = docs;
	}
	s->generation++;
	expects_satisfy(s);
	pthread_cond_broadcast(&s->published);
	pthread_mutex_unlock(&s->mu);
	view_state_unref(old);
	if (first)
		gv_info("snapshot: ready");
}

static void deadline_in(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *rebuild_thread(void *ud)
{
	struct snapshot *s = ud;
	struct timespec next_discovery, now, ts;

	deadline_in(&next_discovery, SNAPSHOT_REDISCOVER_S * 1000L);
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		if (!s->dirty) {
			/* While a build waits for informers to list, look again every second. */
			struct timespec until = next_discovery, soon;
			deadline_in(&soon, 1000);
			if (s->pending &&
			    (soon.tv_sec < until.tv_sec ||
			     (soon.tv_sec == until.tv_sec && soon.tv_nsec < until.tv_nsec)))
				until = soon;
			pthread_cond_timedwait(&s->cv, &s->mu, &until);
			if (s->stop)
				break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next_discovery.tv_sec || (now.tv_sec == next_discovery.tv_sec &&
							   now.tv_nsec >= next_discovery.tv_nsec)) {
			pthread_mutex_unlock(&s->mu);
			rediscover(s);
			deadline_in(&next_discovery, SNAPSHOT_REDISCOVER_S * 1000L);
			pthread_mutex_lock(&s->mu);
		}
		if (!s->dirty && !s->pending)
			continue;
		/*
		 * Let a burst of changes settle, then build once; at once while
		 * a request waits for an admitted write.
		 */
		deadline_in(&ts, SNAPSHOT_SETTLE_MS);
		while (!s->stop && !s->nexpects && !s->waiters &&
		       pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
			;
		if (s->stop)
			break;
		s->pending |= s->dirty;
		s->dirty = 0;
		pthread_mutex_unlock(&s->mu);
		rebuild(s);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- lifecycle ---- */

static void snapshot_free(struct snapshot *s)
{
	for (int k = 0; k < W_COUNT; k++) {
		if (s->w[k].inf)
			kube_informer_stop(s->w[k].inf);
		free(s->w[k].path);
	}
	for (size_t i = 0; i < s->nstatic; i++)
		engine_policy_unref(s->statics[i]);
	free(s->statics);
	for (size_t i = 0; i < s->nexpects; i++)
		expect_release(&s->expects[i]);
	free(s->expects);
	view_state_unref(s->state);
	json_decref(s->config_data);
	json_decref(s->policy_docs);
	if (s->set)
		engine_policyset_unref(s->set);
	json_decref(s->namespaces);
	json_decref(s->exceptions);
	json_decref(s->exceptions_pub);
	json_decref(s->namespaces_pub);
	view_config_unref(s->config);
	cache_release(&s->cache);
	json_decref(s->logged_exceptions);
	view_vpolset_unref(s->vpols);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->published);
	pthread_mutex_destroy(&s->mu);
	free(s->namespace);
	free(s->configmap);
	free(s);
}

enum gv_code snapshot_start(const struct snapshot_config *cfg, struct snapshot **out,
			    struct gv_err *err)
{
	struct snapshot *s = gv_xcalloc(1, sizeof(*s));
	char *paths[W_COUNT] = {0};
	pthread_condattr_t ca;
	enum gv_code rc = GV_OK;

	*out = NULL;
	atomic_init(&s->changes, NULL);
	s->client = cfg->client;
	s->namespace = gv_xstrdup(cfg->namespace && *cfg->namespace ? cfg->namespace : "gavel");
	s->configmap = gv_xstrdup(cfg->configmap && *cfg->configmap ? cfg->configmap : "gavel");
	s->statics = gv_xcalloc(cfg->nstatic + 1, sizeof(*s->statics));
	for (size_t i = 0; i < cfg->nstatic; i++)
		s->statics[s->nstatic++] = engine_policy_ref(cfg->static_policies[i]);
	s->config_data = json_object();
	s->logged_exceptions = json_object();
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_cond_init(&s->published, &ca);
	pthread_condattr_destroy(&ca);
	for (int k = 0; k < W_COUNT; k++) {
		s->w[k].s = s;
		s->w[k].kind = (enum watch_kind)k;
	}
	for (int k = 0; k < W_COUNT; k++) {
		rc = discover(s, (enum watch_kind)k, &paths[k], err);
		if (rc) {
			gv_err_prefix(err, "discovery of %s: ", kind_name((enum watch_kind)k));
			goto fail;
		}
		if (!paths[k])
			gv_warn(
			    "snapshot: %s is not served by the API server (CRD not installed?): "
			    "counted as empty, looked for again every %ds",
			    kind_name((enum watch_kind)k), SNAPSHOT_REDISCOVER_S);
	}
	for (int k = 0; k < W_COUNT; k++) {
		char *path = paths[k];
		paths[k] = NULL;
		if (path && !watch_start(s, &s->w[k], path)) {
			rc = gv_err_set(err, GV_EINTERNAL, "snapshot: cannot start a thread");
			goto fail;
		}
	}
	if (pthread_create(&s->thread, NULL, rebuild_thread, s)) {
		rc = gv_err_set(err, GV_EINTERNAL, "snapshot: cannot start a thread");
		goto fail;
	}
	*out = s;
	return GV_OK;
fail:
	for (int k = 0; k < W_COUNT; k++)
		free(paths[k]);
	snapshot_free(s);
	return rc;
}

void snapshot_stop(struct snapshot *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	snapshot_free(s);
}

struct view_state *snapshot_state(struct snapshot *s)
{
	struct view_state *st;

	pthread_mutex_lock(&s->mu);
	st = view_state_ref(s->state);
	pthread_mutex_unlock(&s->mu);
	return st;
}

static bool json_same(const json_t *a, const json_t *b)
{
	return (!a && !b) || (a && b && json_equal(a, b));
}

void snapshot_expect(struct snapshot *s, const json_t *object, const json_t *old_object)
{
	const char *kind = json_string_value(json_object_get(object, "kind"));
	const char *api = json_string_value(json_object_get(object, "apiVersion"));
	const json_t *md = json_object_get(object, "metadata");
	const json_t *omd = json_object_get(old_object, "metadata");
	struct expect e = {0};
	size_t i;

	/* kyverno.io kinds only: policies.kyverno.io documents are in the vpol set */
	if (!kind || !*meta_str(object, "name") || !api || strncmp(api, "kyverno.io/", 11))
		return;
	if (!strcmp(kind, "PolicyException"))
		e.exception = true;
	else if (strcmp(kind, "ClusterPolicy") && strcmp(kind, "Policy"))
		return;
	if (old_object &&
	    json_same(json_object_get(object, "spec"), json_object_get(old_object, "spec")) &&
	    json_same(json_object_get(md, "labels"), json_object_get(omd, "labels")) &&
	    json_same(json_object_get(md, "annotations"), json_object_get(omd, "annotations")))
		return;
	e.ns = gv_xstrdup(strcmp(kind, "ClusterPolicy") ? meta_str(object, "namespace") : "");
	e.name = gv_xstrdup(meta_str(object, "name"));
	e.uid = *meta_str(object, "uid") ? gv_xstrdup(meta_str(object, "uid")) : NULL;
	e.old_rv = old_object ? gv_xstrdup(meta_str(old_object, "resourceVersion")) : NULL;
	deadline_in(&e.deadline, SNAPSHOT_EXPECT_MS);
	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->nexpects; i++)
		if (s->expects[i].exception == e.exception && !strcmp(s->expects[i].ns, e.ns) &&
		    !strcmp(s->expects[i].name, e.name))
			break;
	if (i < s->nexpects) {
		expect_release(&s->expects[i]);
	} else {
		s->expects = gv_xrealloc(s->expects, (s->nexpects + 1) * sizeof(*s->expects));
		s->nexpects++;
	}
	s->expects[i] = e;
	pthread_mutex_unlock(&s->mu);
}

struct view_state *snapshot_state_fresh(struct snapshot *s, long max_ms, const char *namespace)
{
	struct timespec limit, ns_limit, now, until;
	struct view_state *st;
	bool ns_wait = namespace && *namespace;

	deadline_in(&limit, max_ms);
	deadline_in(&ns_limit, max_ms < SNAPSHOT_NAMESPACE_MS ? max_ms : SNAPSHOT_NAMESPACE_MS);
	pthread_mutex_lock(&s->mu);
	for (;;) {
		bool ns_missing;
		clock_gettime(CLOCK_MONOTONIC, &now);
		expects_expire(s, &now);
		ns_missing = ns_wait && s->namespaces_pub &&
			     !json_object_get(s->namespaces_pub, namespace) &&
			     ts_before(&now, &ns_limit);
		if ((!s->nexpects && !ns_missing) || s->stop || !ts_before(&now, &limit))
			break;
		until = ns_missing ? ns_limit : limit;
		for (size_t i = 0; i < s->nexpects; i++)
			if (ts_before(&s->expects[i].deadline, &until))
				until = s->expects[i].deadline;
		s->waiters++;
		pthread_cond_signal(&s->cv); /* a build settling goes ahead */
		pthread_cond_timedwait(&s->published, &s->mu, &until);
		s->waiters--;
	}
	st = view_state_ref(s->state);
	pthread_mutex_unlock(&s->mu);
	return st;
}

struct view_state *snapshot_state_exceptions(struct snapshot *s, json_t **exceptions)
{
	struct view_state *st;

	pthread_mutex_lock(&s->mu);
	st = s->state ? view_state_ref(s->state) : NULL;
	*exceptions = st ? json_incref(s->exceptions_pub) : NULL;
	pthread_mutex_unlock(&s->mu);
	if (st && !*exceptions)
		*exceptions = json_array();
	return st;
}

json_t *snapshot_config_data(struct snapshot *s)
{
	json_t *d;

	pthread_mutex_lock(&s->mu);
	d = json_incref(s->config_data);
	pthread_mutex_unlock(&s->mu);
	return d;
}

json_t *snapshot_policy_docs(struct snapshot *s)
{
	json_t *d;

	pthread_mutex_lock(&s->mu);
	d = s->policy_docs ? json_incref(s->policy_docs) : json_array();
	pthread_mutex_unlock(&s->mu);
	return d;
}

uint64_t snapshot_generation(struct snapshot *s)
{
	uint64_t g;

	pthread_mutex_lock(&s->mu);
	g = s->generation;
	pthread_mutex_unlock(&s->mu);
	return g;
}

void snapshot_set_metrics(struct snapshot *s, struct metrics_registry *r)
{
	if (s)
		atomic_store(&s->changes, view_policy_changes_new(r));
}
