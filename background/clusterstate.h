/*
 * clusterstate.h - one read of what background/snapshot.h keeps current
 * with informers: ClusterPolicies, Policies, PolicyExceptions, Namespaces,
 * ValidatingPolicies, NamespacedValidatingPolicies, CEL PolicyExceptions,
 * ValidatingAdmissionPolicies and their bindings (at whichever version the
 * server serves) and gavel's ConfigMap, listed once and made into an
 * view_state.
 * For the one-shot commands (`gavel scan`, `gavel status`), which need no
 * watches.
 */
#ifndef GV_BACKGROUND_CLUSTERSTATE_H
#define GV_BACKGROUND_CLUSTERSTATE_H

#include <stddef.h>
#include <jansson.h>

#include "view/view.h"
#include "common/gv.h"
#include "kube/kube.h"

struct clusterstate {
	struct view_state *state; /* owned reference: policy set, namespace labels, config */
	json_t *policies; /* owned: ClusterPolicy and Policy documents (kind and apiVersion set) */
	json_t *config_data; /* owned: `data` of gavel's ConfigMap ({} when absent) */
	json_t *namespaces;  /* owned: array of the namespaces' names, sorted */
	json_t *exceptions;  /* owned: the PolicyException documents, as listed */
	size_t npolicies;    /* policies that compiled (in the set) */
	/*
	 * owned: the policies.kyverno.io ValidatingPolicy and
	 * NamespacedValidatingPolicy documents, as listed; they and the CEL
	 * PolicyExceptions are compiled into state's view_vpolset.
	 */
	json_t *vpolicies;
};

/*
 * Lists everything (pages of 500). Kinds whose CRD is not installed count
 * as empty; so does a missing ConfigMap. Policies that do not compile are
 * logged and left out of the set (they stay in `policies`). GV_ENET when
 * the API server cannot be asked.
 */
enum gv_code clusterstate_fetch(struct kube_client *client, const char *namespace,
				const char *configmap, struct clusterstate *out,
				struct gv_err *err);
void clusterstate_release(struct clusterstate *cs);

/*
 * Lists a collection page by page (limit per page, kube_pager) into
 * *items (a new array of the items, apiVersion and kind filled in from
 * the list; started over on 410 Gone). GV_ENET with st filled on errors
 * (st may be NULL).
 */
enum gv_code clusterstate_list(struct kube_client *client, const char *path, int limit,
			       json_t **items, struct kube_status *st, struct gv_err *err);

/*
 * The admissionregistration.k8s.io versions that served
 * ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding, newest
 * first: v1 (Kubernetes 1.30+), v1beta1 (1.28-1.29, off by default),
 * v1alpha1 (1.26-1.27, off by default). *n gets their count; the array is
 * static.
 */
const char *const *clusterstate_vap_versions(size_t *n);

/*
 * Converts a ValidatingAdmissionPolicy or binding as a server lists it at
 * one of those versions to v1, in place: sets kind (when absent) and
 * apiVersion "admissionregistration.k8s.io/v1". Nothing else differs: the
 * three versions share every field's name, shape and default; an older one
 * only lacks fields added later, and a document from it lacks them too,
 * which v1 reads as Kubernetes did (no matchConditions, variables or
 * auditAnnotations: none; no messageExpression: the message; no
 * paramRef.parameterNotFoundAction: Deny, as Kubernetes defaults it and
 * as 1.26-1.27 failed on missing params; a binding's validationActions
 * are not read, cel-semantics.md section 5). A document of another group
 * or version is left as it is: not a ValidatingAdmissionPolicy gavel
 * compiles (vpol_is_policy_doc). doc borrowed, modified.
 */
void clusterstate_vap_to_v1(json_t *doc, const char *kind);

/*
 * Lists `resource` ("validatingadmissionpolicies" or
 * "validatingadmissionpolicybindings") at the first version of
 * clusterstate_vap_versions() the server serves (a 404 tries the next),
 * every item converted with clusterstate_vap_to_v1(, kind). A server that
 * serves none: *items an empty array, GV_OK. Any other failure: GV_ENET.
 * *items is a new array (NULL on errors).
 */
enum gv_code clusterstate_list_vap(struct kube_client *client, const char *resource,
				   const char *kind, json_t **items, struct gv_err *err);

#endif
