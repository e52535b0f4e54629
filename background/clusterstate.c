/*
 * clusterstate.c - one read of policies, exceptions, namespaces and the
 * ConfigMap (clusterstate.h).
 */
#include "background/clusterstate.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "background/snapshot.h"
#include "common/log.h"
#include "common/banned.h"

enum gv_code clusterstate_list(struct kube_client *client, const char *path, int limit,
			       json_t **items, struct kube_status *st, struct gv_err *err)
{
	struct kube_list_options o = {.limit = limit};
	struct kube_pager *p = kube_pager_new(client, path, &o);
	struct kube_page *pg;
	enum gv_code rc;

	*items = json_array();
	while (!(rc = kube_pager_next(p, &pg, st, err)) && pg) {
		if (pg->restarted)
			json_array_clear(*items);
		json_array_extend(*items, json_object_get(pg->list, "items"));
	}
	kube_pager_free(p);
	if (rc) {
		json_decref(*items);
		*items = NULL;
	}
	return rc;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
		      json_string_value(*(json_t *const *)b));
}

/* Sorts an array of strings (new references moved around, none taken). */
static void sort_strings(json_t *a)
{
	size_t n = json_array_size(a);
	json_t **v = gv_xcalloc(n + 1, sizeof(*v));

	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(a, i));
	qsort(v, n, sizeof(*v), str_cmp);
	json_array_clear(a);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, v[i]);
	free(v);
}

/* Lists a kind of group at the first served version; none served = empty. */
static enum gv_code list_group_kind(struct kube_client *client, const char *group, const char *kind,
				    const char *const *versions, size_t nversions, json_t **items,
				    struct gv_err *err)
{
	for (size_t i = 0; i < nversions; i++) {
		char *path = gv_xasprintf("/apis/%s/%s/%s", group, versions[i], kind);
		struct kube_status st;
		struct gv_err e = {0};
		enum gv_code rc = clusterstate_list(client, path, 500, items, &st, &e);

		free(path);
		if (!rc)
			return GV_OK;
		if (st.http != 404)
			return gv_err_set(err, rc, "%s", e.msg);
	}
	*items = json_array();
	return GV_OK;
}

static enum gv_code list_kind(struct kube_client *client, const char *kind,
			      const char *const *versions, size_t nversions, json_t **items,
			      struct gv_err *err)
{
	return list_group_kind(client, "kyverno.io", kind, versions, nversions, items, err);
}

/* The policies.kyverno.io documents: ValidatingPolicy, NamespacedValidatingPolicy, PolicyException.
 */
static enum gv_code list_cel(struct kube_client *client, json_t **vpols, json_t **xs,
			     struct gv_err *err)
{
	static const char *const vers[] = {"v1", "v1beta1", "v1alpha1"};
	json_t *a = NULL, *b = NULL;
	enum gv_code rc;

	*vpols = *xs = NULL;
	if ((rc = list_group_kind(client, "policies.kyverno.io", "validatingpolicies", vers, 3, &a,
				  err)) ||
	    (rc = list_group_kind(client, "policies.kyverno.io", "namespacedvalidatingpolicies",
				  vers, 2, &b, err)) ||
	    (rc = list_group_kind(client, "policies.kyverno.io", "policyexceptions", vers, 3, xs,
				  err))) {
		json_decref(a);
		json_decref(b);
		json_decref(*xs);
		*xs = NULL;
		return rc;
	}
	json_array_extend(a, b);
	json_decref(b);
	*vpols = a;
	return GV_OK;
}

/* admissionregistration.k8s.io versions that served ValidatingAdmissionPolicy, newest first */
static const char *const vap_versions[] = {"v1", "v1beta1", "v1alpha1"};

const char *const *clusterstate_vap_versions(size_t *n)
{
	*n = GV_ARRAY_LEN(vap_versions);
	return vap_versions;
}

void clusterstate_vap_to_v1(json_t *doc, const char *kind)
{
	static const char group[] = "admissionregistration.k8s.io/";
	const char *av = json_string_value(json_object_get(doc, "apiVersion"));
	bool served = !av; /* none: the list's version, one of those asked */

	if (!json_is_object(doc))
		return;
	if (!json_string_value(json_object_get(doc, "kind")))
		json_object_set_new(doc, "kind", json_string(kind));
	for (size_t i = 0; av && i < GV_ARRAY_LEN(vap_versions); i++)
		served = served || (!strncmp(av, group, sizeof(group) - 1) &&
				    !strcmp(av + sizeof(group) - 1, vap_versions[i]));
	/* another group or version is left as it is: not one gavel compiles */
	if (served)
		json_object_set_new(doc, "apiVersion",
				    json_string("admissionregistration.k8s.io/v1"));
}

enum gv_code clusterstate_list_vap(struct kube_client *client, const char *resource,
				   const char *kind, json_t **items, struct gv_err *err)
{
	size_t i;
	json_t *d;
	enum gv_code rc = list_group_kind(client, "admissionregistration.k8s.io", resource,
					  vap_versions, GV_ARRAY_LEN(vap_versions), items, err);

	if (rc)
		return rc;
	json_array_foreach(*items, i, d) clusterstate_vap_to_v1(d, kind);
	return GV_OK;
}

/* ValidatingAdmissionPolicies and their bindings (none on a server that serves no version). */
static enum gv_code list_vap(struct kube_client *client, json_t **vaps, json_t **bindings,
			     struct gv_err *err)
{
	enum gv_code rc;

	*vaps = *bindings = NULL;
	if ((rc = clusterstate_list_vap(client, "validatingadmissionpolicies",
					"ValidatingAdmissionPolicy", vaps, err)) ||
	    (rc = clusterstate_list_vap(client, "validatingadmissionpolicybindings",
					"ValidatingAdmissionPolicyBinding", bindings, err))) {
		json_decref(*vaps);
		*vaps = NULL;
		return rc;
	}
	return GV_OK;
}

enum gv_code clusterstate_fetch(struct kube_client *client, const char *namespace,
				const char *configmap, struct clusterstate *out, struct gv_err *err)
{
	static const char *const pol_versions[] = {"v1", "v2beta1"};
	static const char *const exc_versions[] = {"v2", "v2beta1"};
	json_t *cpols = NULL, *pols = NULL, *excs = NULL, *nss = NULL, *cm = NULL, *nsmap = NULL;
	json_t *vdocs = NULL, *vxs = NULL, *vaps = NULL, *vbind = NULL;
	struct view_vpolset *vset = NULL;
	struct engine_policyset *set = NULL;
	struct view_config *config = NULL;
	struct kube_status st;
	char *ens = NULL, *ecm = NULL, *path = NULL;
	enum gv_code rc;
	size_t i;
	json_t *d;

	memset(out, 0, sizeof(*out));
	if ((rc = list_kind(client, "clusterpolicies", pol_versions, 2, &cpols, err)) ||
	    (rc = list_kind(client, "policies", pol_versions, 2, &pols, err)) ||
	    (rc = list_kind(client, "policyexceptions", exc_versions, 2, &excs, err)) ||
	    (rc = list_cel(client, &vdocs, &vxs, err)) ||
	    (rc = list_vap(client, &vaps, &vbind, err)))
		goto out;
	rc = clusterstate_list(client, "/api/v1/namespaces", 500, &nss, NULL, err);
	if (rc)
		goto out;
	ens = kube_escape(namespace && *namespace ? namespace : "gavel");
	ecm = kube_escape(configmap && *configmap ? configmap : "gavel");
	path = gv_xasprintf("/api/v1/namespaces/%s/configmaps/%s", ens, ecm);
	{
		struct gv_err e = {0};
		rc = kube_request(client, "GET", path, NULL, &cm, &st, &e);
		if (rc && st.http != 404) {
			gv_err_set(err, rc, "%s", e.msg);
			goto out;
		}
		rc = GV_OK;
	}
	out->config_data = json_is_object(json_object_get(cm, "data"))
			       ? json_deep_copy(json_object_get(cm, "data"))
			       : json_object();
	out->policies = json_array();
	json_array_foreach(cpols, i, d)
	{
		if (!json_object_get(d, "kind"))
			json_object_set_new(d, "kind", json_string("ClusterPolicy"));
		json_array_append(out->policies, d);
	}
	json_array_foreach(pols, i, d)
	{
		if (!json_object_get(d, "kind"))
			json_object_set_new(d, "kind", json_string("Policy"));
		json_array_append(out->policies, d);
	}
	out->namespaces = json_array();
	json_array_foreach(nss, i, d)
	{
		const char *name =
		    json_string_value(json_object_get(json_object_get(d, "metadata"), "name"));
		if (name)
			json_array_append_new(out->namespaces, json_string(name));
	}
	sort_strings(out->namespaces);
	out->exceptions = json_incref(excs);
	set = snapshot_build_policyset(out->policies, excs, NULL, 0, &out->npolicies);
	nsmap = snapshot_build_namespaces(nss);
	config = view_config_new(out->config_data);
	out->state = view_state_new(set, nsmap, config);
	out->vpolicies = json_incref(vdocs);
	{
		json_t *all = json_copy(vdocs);

		json_array_extend(all, vaps);
		vset = view_vpolset_new(all, vxs);
		json_decref(all);
	}
	view_vpolset_set_bindings(vset, vbind);
	view_state_set_vpols(out->state, vset);
out:
	view_vpolset_unref(vset);
	json_decref(vdocs);
	json_decref(vxs);
	json_decref(vaps);
	json_decref(vbind);
	if (set)
		engine_policyset_unref(set);
	view_config_unref(config);
	json_decref(nsmap);
	json_decref(cpols);
	json_decref(pols);
	json_decref(excs);
	json_decref(nss);
	json_decref(cm);
	free(ens);
	free(ecm);
	free(path);
	if (rc)
		clusterstate_release(out);
	return rc;
}

void clusterstate_release(struct clusterstate *cs)
{
	if (!cs)
		return;
	view_state_unref(cs->state);
	json_decref(cs->policies);
	json_decref(cs->vpolicies);
	json_decref(cs->config_data);
	json_decref(cs->exceptions);
	json_decref(cs->namespaces);
	memset(cs, 0, sizeof(*cs));
}
