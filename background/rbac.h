/*
 * rbac.h - the cluster's RoleBindings and ClusterRoleBindings, kept by list
 * + watch and indexed by subject, from which an admission request's
 * `request.roles` and `request.clusterRoles` are computed without calling
 * the API server on the request path (kyverno-semantics.md sections 2.2
 * and 6.5; Kyverno's userinfo.GetRoleRef).
 *
 * For a request by userInfo {username, groups} in namespace N:
 *
 *   a binding applies when one of its subjects is
 *     kind User            with name == username
 *     kind Group           with name in groups
 *     kind ServiceAccount  with "system:serviceaccount:<ns>:<name>" ==
 *                          username, <ns> being the subject's namespace or,
 *                          when empty, the RoleBinding's own (a
 *                          ClusterRoleBinding subject without a namespace
 *                          never applies)
 *   (kinds and names compared exactly; other subject kinds ignored);
 *
 *   roles         "<binding namespace>:<role name>" of every applying
 *                 RoleBinding whose roleRef.kind is Role, whatever N;
 *   clusterRoles  the roleRef name of every applying RoleBinding whose
 *                 roleRef.kind is ClusterRole and whose namespace is N
 *                 (so none for a cluster-scoped request), and of every
 *                 applying ClusterRoleBinding (roleRef.kind ClusterRole);
 *
 * each list de-duplicated and sorted (byte order, as Go's slices.Sort).
 * Roles are computed for every user, system users included:
 * kyverno-semantics.md names no user for whom they are skipped, so none is
 * (admission's excludeUsernames/excludeGroups skip whole requests before
 * that).
 *
 * Threads: an index is immutable and may be read by any number of threads;
 * the cache's functions may be called from any thread.
 */
#ifndef GV_BACKGROUND_RBAC_H
#define GV_BACKGROUND_RBAC_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "view/view.h"
#include "common/gv.h"
#include "kube/kube.h"

/* Collections the cache watches (manifests/rbac.yaml grants list and watch). */
#define RBAC_ROLEBINDINGS_PATH	      "/apis/rbac.authorization.k8s.io/v1/rolebindings"
#define RBAC_CLUSTERROLEBINDINGS_PATH "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"

/* ---- the index ---- */

/*
 * Bindings by subject: immutable once built, refcounted (atomic), so the
 * cache swaps a pointer while requests keep the index they started with.
 */
struct rbac_index;

/*
 * Builds an index from RoleBinding and ClusterRoleBinding objects (arrays,
 * borrowed; NULL = none). Bindings without a roleRef name or of another
 * roleRef kind, and subjects without a name, are left out. Never fails.
 * Returns refcount 1.
 */
struct rbac_index *rbac_index_build(const json_t *rolebindings, const json_t *clusterrolebindings);
struct rbac_index *rbac_index_ref(struct rbac_index *ix);
void rbac_index_unref(struct rbac_index *ix); /* NULL is fine */

/*
 * The roles and clusterRoles of user_info (an AdmissionRequest userInfo
 * object, borrowed; NULL or no username = nobody, only its groups count) for
 * a request in namespace ("" or NULL = cluster-scoped), as described at the
 * top. *roles and *cluster_roles receive new arrays of strings (possibly
 * empty; caller decrefs). Cost: one hash lookup per group plus one, and the
 * bindings found.
 */
void rbac_index_lookup(const struct rbac_index *ix, const json_t *user_info, const char *namespace,
		       json_t **roles, json_t **cluster_roles);

/* Number of bindings indexed (for logs and tests). */
size_t rbac_index_bindings(const struct rbac_index *ix);

/* ---- the cache ---- */

struct rbac_cache;

/*
 * Starts two informers (RBAC_ROLEBINDINGS_PATH, all namespaces, and
 * RBAC_CLUSTERROLEBINDINGS_PATH) on client c (borrowed; must outlive the
 * cache). After both listed once, and after every change, the index is
 * rebuilt from both collections and swapped. GV_EINTERNAL when no thread
 * can be started. Never calls the API server itself: a server that cannot
 * be reached keeps the cache not ready (the informers retry).
 */
enum gv_code rbac_cache_start(struct kube_client *c, struct rbac_cache **out, struct gv_err *err);

/* Stops the informers and frees the cache. Indexes still referenced stay valid. NULL is fine. */
void rbac_cache_stop(struct rbac_cache *rc);

/* True once both collections were listed (and an index published). */
bool rbac_cache_ready(struct rbac_cache *rc);

/* A new reference to the current index, NULL before the first one. */
struct rbac_index *rbac_cache_index(struct rbac_cache *rc);

/* Increases with every index published (0 before the first). */
uint64_t rbac_cache_generation(struct rbac_cache *rc);

/*
 * The admission roles source of this cache (borrowed from rc; valid until
 * rbac_cache_stop): lookup answers from the current index, or fails with
 * GV_ENOENT "RoleBindings and ClusterRoleBindings not listed yet" before
 * the first; ready is rbac_cache_ready.
 */
const struct view_roles_source *rbac_cache_source(struct rbac_cache *rc);

#endif
