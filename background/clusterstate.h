/*
 * clusterstate.h - one read of what background/snapshot.h keeps current
 * with informers: ClusterPolicies, Policies, PolicyExceptions, Namespaces,
 * ValidatingPolicies, NamespacedValidatingPolicies, CEL PolicyExceptions
 * and gavel's ConfigMap, listed once and made into an view_state.
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

#endif
