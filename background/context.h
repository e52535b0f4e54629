/*
 * context.h - the loaders of the context entries that read the cluster
 * (kyverno-semantics.md section 1.5), behind engine_hooks.load_context, for
 * `gavel serve` (admission and the reconciler) and `gavel scan`:
 *
 *   configMap        {name, namespace}, variables substituted: answered from
 *                    informers (list + watch) of the ConfigMaps the loaded
 *                    policies name (one informer per literal name, by field
 *                    selector, across namespaces; one informer of every
 *                    ConfigMap when some policy's name holds a variable), so
 *                    no API call is made on the request path and a change is
 *                    seen within the watch's latency. The value is
 *                    {"data": ..., "metadata": ...} of the ConfigMap
 *                    (`<name>.data.*`, `<name>.metadata.*`). A ConfigMap that
 *                    does not exist: "failed to retrieve config map for
 *                    context entry <entry>: configmaps \"<name>\" not found".
 *   apiCall          {urlPath | service{url, caBundle, headers}, method GET |
 *                    POST, data [{key, value}] (the POST body, a JSON object),
 *                    jmesPath, default}, variables substituted in the whole
 *                    apiCall but its default: urlPath against the API server
 *                    with gavel's credentials, service against its URL with
 *                    caBundle (PEM) as the only trusted CA for https. Each
 *                    call is bounded by a timeout (context_options) and by
 *                    what is left of the evaluation's deadline, and its
 *                    response by a size cap; a non-2xx answer, a body that
 *                    is not JSON, a timeout, an oversize body, a failed
 *                    jmesPath are errors, unless a
 *                    `default` is given: the default is then the value.
 *                    The same call (method, URL, body, headers) is made once
 *                    per opened hooks (one admission request, one scan page).
 *   globalReference  {name, jmesPath}: the data of the cluster-scoped
 *                    kyverno.io/v2alpha1 GlobalContextEntry `name` (informer),
 *                    jmesPath applied when given. spec.kubernetesResource
 *                    {group, version, resource, namespace}: the array of the
 *                    objects, kept by an informer; spec.apiCall {urlPath |
 *                    service, method, data, refreshInterval (default 10m)}:
 *                    the last answer, refreshed on its interval by a thread of
 *                    the loader (an entry that has no data yet, or whose
 *                    last call failed, is an error).
 *   imageRegistry    {reference, jmesPath, imageRegistryCredentials
 *                    {allowInsecureRegistry, secrets, providers}}, variables
 *                    substituted: Kyverno's ImageData of the image from its
 *                    registry's v2 API (kube/registry.h: manifest, config,
 *                    resolvedImage; cached by reference and digest), jmesPath
 *                    applied when given. `secrets` are docker-config Secrets
 *                    in gavel's namespace (context_options.namespace), read
 *                    through the API server; `providers` (cloud credential
 *                    helpers) are an error. A fetch failure: "failed to fetch
 *                    image descriptor: <ref>, error: <reason>".
 *
 * The hooks' param_scope and params callbacks (validate.cel paramKind /
 * paramRef, ValidatingAdmissionPolicyBinding paramRef; cel-semantics.md
 * sections 4 and 5) resolve the kind through discovery and GET the named
 * object or LIST the collection with the label selector, through the same
 * per-session cache, timeout and deadline as apiCall; a 404 of a named
 * object is GV_ENOENT with the API server's message.
 *
 * The hooks' authorize callback (validate.cel's `authorizer`) POSTs a
 * SubjectAccessReview to the API server with gavel's credentials (the
 * same review once per session) and answers its status.
 *
 * The hooks' http callback (engine_hooks.http) makes the calls of Kyverno's
 * CEL http library (cel-semantics.md section 6) with the same timeout,
 * deadline and size cap, uncached: any status is an answer ({..., statusCode}),
 * a failed request "request failed: <reason>"; a NamespacedValidatingPolicy's
 * calls are refused unless context_options.allow_http_namespaced (Kyverno's
 * --allowHTTPInNamespacedPolicies).
 *
 * Every failure is a GV_E* code with err set; the engine makes it the rule's
 * `error` result "failed to load context: <message>". GV_ENOENT (the
 * offline "skip this entry") is never returned.
 */
#ifndef GV_BACKGROUND_CONTEXT_H
#define GV_BACKGROUND_CONTEXT_H

#include <stddef.h>
#include <jansson.h>

#include "view/view.h"
#include "common/gv.h"
#include "engine/engine.h"
#include "kube/kube.h"
#include "kube/registry.h"

#define CONTEXT_CALL_TIMEOUT_MS 5000	   /* one apiCall */
#define CONTEXT_DEADLINE_MS	8000	   /* all the calls of one admission request / scan page */
#define CONTEXT_MAX_RESPONSE	(2u << 20) /* bytes of one apiCall response */
#define CONTEXT_SYNC_WAIT_MS	5000	   /* wait for a new informer's first list */

struct context_options {
	struct kube_client *client;	/* borrowed, required: informers */
	const struct kube_config *kube; /* borrowed, required: apiCall urlPath credentials */
	long call_timeout_ms;		/* 0 = CONTEXT_CALL_TIMEOUT_MS */
	long deadline_ms;		/* 0 = CONTEXT_DEADLINE_MS */
	size_t max_response;		/* 0 = CONTEXT_MAX_RESPONSE */
	long sync_wait_ms;		/* 0 = CONTEXT_SYNC_WAIT_MS */
	const char *namespace;	    /* borrowed: gavel's namespace (pull secrets); NULL = "gavel" */
	bool allow_http_namespaced; /* http.* from NamespacedValidatingPolicies (hooks.http) */
};

struct context_loader;

/*
 * Makes a loader (options copied; the client and config must outlive it).
 * Informers start when the policy sets given to open() name ConfigMaps or
 * global references; they are kept until context_loader_free().
 */
struct context_loader *context_loader_new(const struct context_options *o);
void context_loader_free(struct context_loader *l);

/* The view_context of l (points into l). */
const struct view_context *context_loader_source(struct context_loader *l);

/*
 * Makes sure every ConfigMap and GlobalContextEntry named by set's policies
 * is watched (what open() does); informers just started are not waited for.
 */
void context_loader_watch(struct context_loader *l, const struct engine_policyset *set);

#endif
