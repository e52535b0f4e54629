/*
 * webhookconfig.h - the resource webhooks of gavel's
 * ValidatingWebhookConfiguration, generated from the loaded policies as
 * Kyverno's webhook controller does (k8s-wire.md 2.2; DESIGN.md "gavel in
 * the cluster"), so the API server calls gavel only for what some policy
 * matches, and a gavel outage blocks only what a Fail policy guards.
 *
 * Webhooks (all in the configuration named by serve --webhook-config):
 *   validate.gavel.svc-fail     -> /validate/fail, failurePolicy Fail
 *   validate.gavel.svc-ignore   -> /validate/ignore, failurePolicy Ignore
 *   validate.gavel.svc-<fail|ignore>-finegrained-<policy>
 *       one per policy with spec.webhookConfiguration.matchConditions,
 *       carrying them (Policy: <namespace>-<name>)
 * A webhook is present only when some policy gives it a rule: with no
 * policy, no rule and no resource webhook. Other webhooks of the
 * configuration (validate-policy.gavel.svc, an installer's own) are left
 * as they are; the clientConfig (service or url, caBundle) of the new ones
 * is copied from validate-policy.gavel.svc with the path replaced.
 *
 * Which policies: every ClusterPolicy and Policy that compiles and has
 * spec.admission not false (docs may also hold ValidatingPolicies, below). Failure policy:
 * spec.webhookConfiguration.failurePolicy, else spec.failurePolicy, else
 * Fail. timeoutSeconds: the largest of the webhook's policies'
 * spec.webhookConfiguration.timeoutSeconds / spec.webhookTimeoutSeconds,
 * else the default (10), within 1..30.
 *
 * Rules: for each validate rule (spec.rules and the autogen rules) and each
 * resource filter of its match (any, all, or the legacy form), each kind
 * resolved through discovery: "Pod" -> pods and pods/ephemeralcontainers (so "Pod/<star>" too),
 * "apps/v1/Deployment", "Pod/exec" (a subresource), "Pod/<star>" (every
 * subresource the server lists), "<star>" -> all groups, versions and
 * resources plus pods/ephemeralcontainers, "<star>/<star>", "<star>/scale"
 * (<star> is "*"). Kinds the
 * server does not serve are left out. Operations: the filter's
 * `operations`, else CONNECT, CREATE, DELETE, UPDATE, less those of
 * exclude filters that name only operations; sorted. Rules are grouped by
 * apiGroup, apiVersion, operations and scope (Namespaced, Cluster, or "*"
 * for wildcards; a namespaced Policy's are Namespaced, its cluster-scoped
 * kinds left out, as it never sees them; resources a "*" rule of the same
 * group, version and operations has are left out of the others), sorted by
 * apiGroup, apiVersion, scope and operations, resources sorted.
 *
 * ValidatingPolicy and NamespacedValidatingPolicy (policies.kyverno.io;
 * cel-semantics.md 2.1, 2.3, 2.7) share these webhooks: spec.failurePolicy
 * picks fail or ignore (Fail when unset), webhookConfiguration.timeoutSeconds
 * counts like webhookTimeoutSeconds. Each matchConstraints.resourceRules
 * entry gives a rule per apiGroup x apiVersion with its resources as
 * written (the API server resolves "*", "pods/<star>", "<star>/scale"
 * itself, as for Kyverno's vpol webhooks), its operations ("*" = all four,
 * none = all four) and its scope ("*" when unset); a
 * NamespacedValidatingPolicy's rules are Namespaced and its Cluster rules
 * left out. The autogen kinds of a Pod policy (apps/v1 and batch/v1
 * controllers, autogen.podControllers.controllers) are added with the pod
 * rule's operations. Left out: evaluation.admission.enabled false,
 * evaluation.mode JSON, a policy that does not compile (the state's
 * view_vpolset), ValidatingAdmissionPolicies (the API server runs them).
 * Not carried to the webhook, gavel deciding them itself: a policy's
 * matchConditions (they may call Kyverno's libraries), its
 * namespaceSelector/objectSelector, excludeResourceRules, resourceNames,
 * and matchPolicy (the webhook's is Equivalent, which sends a superset).
 * Divergence: Kyverno gives a policy with timeoutSeconds a fine-grained
 * webhook of its own with a per-policy path; gavel has no per-policy
 * path, and a second webhook would have the request judged twice, so the
 * shared webhook takes the largest timeout instead.
 *
 * Selectors: namespaceSelector and objectSelector from the ConfigMap key
 * `webhooks` (Kyverno's: a JSON object, or an array whose first element is
 * used, with namespaceSelector / objectSelector), gavel's own namespace
 * always excluded (kubernetes.io/metadata.name NotIn); matchConditions
 * from the ConfigMap key `matchConditions` (a JSON array) on every webhook
 * (a 1.20-1.26 API server drops them).
 *
 * The writer (leader only) rebuilds when the policies or the ConfigMap
 * changed, WEBHOOKCONFIG_SETTLE_MS after the first change since the last
 * build (the changes within it are built together), and
 * every WEBHOOKCONFIG_RESYNC_S, and after a CustomResourceDefinition
 * changes (an informer on WEBHOOKCONFIG_CRD_PATH, as Kyverno watches CRDs):
 * the rules are rebuilt at once (a kind discovery does not list yet taken
 * from the CRDs the informer holds, webhookconfig_resolve_crd), then
 * discovery is forgotten and the rules rebuilt at each delay
 * of WEBHOOKCONFIG_CRD_DELAYS_MS (ms after the change: a new group reaches
 * discovery a little after its CRD is Established), so a policy on a kind
 * installed after it gets its rule within a second or so; it PUTs the configuration only when its
 * webhooks differ from what it last wrote or from what the server holds,
 * with resourceVersion, retrying a 409 at most WEBHOOKCONFIG_ATTEMPTS
 * times.
 */
#ifndef GV_BACKGROUND_WEBHOOKCONFIG_H
#define GV_BACKGROUND_WEBHOOKCONFIG_H

#include <stdbool.h>
#include <jansson.h>

#include "background/reconciler.h"
#include "background/snapshot.h"
#include "common/gv.h"
#include "kube/kube.h"

#define WEBHOOKCONFIG_NAME	   "validate.gavel.svc"
#define WEBHOOKCONFIG_SETTLE_MS	   500
#define WEBHOOKCONFIG_RESYNC_S	   30
#define WEBHOOKCONFIG_ATTEMPTS	   3
#define WEBHOOKCONFIG_TIMEOUT	   10
#define WEBHOOKCONFIG_OPERATIONS_N 4
#define WEBHOOKCONFIG_CRD_DELAYS_MS                                                                \
	{                                                                                          \
		0, 250, 500, 1000, 2000, 4000                                                      \
	}
#define WEBHOOKCONFIG_CRD_PATH "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

/*
 * How a kind of a policy (the text in `kinds`) is served: a new reference
 * to an array of {"apiGroup", "apiVersion", "resources": [...], "scope"},
 * or NULL when the server does not serve it.
 */
struct webhookconfig_resolver {
	json_t *(*resolve)(void *ud, const char *kind);
	void *ud;
};

/*
 * The generated webhooks (new reference to an array, sorted by name) for
 * the policy documents `docs` (borrowed; ClusterPolicy, Policy,
 * ValidatingPolicy, NamespacedValidatingPolicy, other kinds ignored as the
 * VP rules say; every one is used: filter out the ones that do not compile
 * first), the ConfigMap's data (borrowed, may be
 * NULL), gavel's namespace, the clientConfig to copy (borrowed; its
 * service.path or the path of its url is replaced), the default timeout.
 */
json_t *webhookconfig_build(const json_t *docs, const json_t *config_data, const char *namespace,
			    const json_t *client_config, int default_timeout,
			    const struct webhookconfig_resolver *r);

/* Whether a webhook name is one of the generated ones. */
bool webhookconfig_owned(const char *name);

/* The resolver on a client's discovery (ud: the struct kube_client *). */
json_t *webhookconfig_resolve_discovery(void *ud, const char *kind);

/*
 * A kind as the CustomResourceDefinitions `crds` (borrowed array) declare
 * it, for a CRD that discovery does not list yet (created a moment ago,
 * not yet Established): "Kind", "group/version/Kind" or
 * "group/<star>/Kind" (no subresource); the served version named, else the
 * storage version; scope from spec.scope. The writer asks it when
 * discovery does not know a kind. Same shape as the resolver's; NULL when
 * no CRD declares it.
 */
json_t *webhookconfig_resolve_crd(const json_t *crds, const char *kind);

struct webhookconfig_config {
	struct kube_client *client;	 /* borrowed, required */
	struct snapshot *snapshot;	 /* borrowed, required */
	const struct reconciler *leader; /* borrowed; NULL = always */
	const char *name;		 /* the ValidatingWebhookConfiguration, required */
	/*
	 * The configuration holding validate-policy.gavel.svc, whose
	 * clientConfig the generated webhooks copy, when it is not `name`
	 * (NULL = `name`). Then `name` holds the generated webhooks alone,
	 * as Kyverno keeps kyverno-resource-validating-webhook-cfg apart
	 * from kyverno-policy-validating-webhook-cfg, and is created when
	 * missing (labelled app.kubernetes.io/managed-by: gavel).
	 */
	const char *template_name; /* borrowed; must outlive the writer */
	const char *namespace;	   /* gavel's; NULL = "gavel" */
	int timeout;		   /* default timeoutSeconds; <= 0: WEBHOOKCONFIG_TIMEOUT */
};

struct webhookconfig;

/* Starts the writer's thread (NULL only when no thread can be made). */
struct webhookconfig *webhookconfig_start(const struct webhookconfig_config *cfg);

/*
 * Whether the configuration was last found or written to match a set of
 * policies holding this one (doc borrowed; same uid and
 * metadata.generation; a ClusterPolicy, Policy or a ValidatingPolicy of
 * the state's compiled set): its webhooks are registered. True for w NULL (no
 * writer), and when the last sync found the configuration or its template
 * missing (nothing to wait for) for the policies that sync saw: a policy
 * newer than the last sync waits for the next one. The policy status writer reports a compiled
 * admission policy Ready only then, as Kyverno reports Ready once the
 * policy's webhooks are registered.
 */
bool webhookconfig_covers(struct webhookconfig *w, const json_t *doc);
void webhookconfig_stop(struct webhookconfig *w);

#endif
