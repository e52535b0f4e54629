/*
 * celhost.h - Kyverno's CEL libraries answered from the cluster
 * (cel-semantics.md section 6), for ValidatingPolicies evaluated in
 * admission and in background scans: resource.Get/List (apiCall GETs) and
 * globalContext.Get (globalReference) through the context loader's
 * load_context hook, with its deadline and per-session cache; http.Get/Post
 * through its http hook; image.GetMetadata through load_context with an
 * imageRegistry entry {reference} (the registry fetch, credentials, cache
 * and deadline of that context entry), answered as Kyverno's image data:
 *   {image, resolvedImage, registry, repository, identifier, tag (absent
 *    for a reference by digest), digest (of what the reference resolved
 *    to), imageIndex (the index, when the reference named one), manifest,
 *    config (the image's config file: architecture, os, config {Env, User,
 *    ...}, rootfs, history)}
 * the same answer (or failure) for the same reference within one host; a
 * failure is the call's error "failed to get image data: <the loader's
 * reason>", and
 * without a loader (no cluster connection) an error too, never a value.
 * globalContext projections are an explicit error. NotFound of
 * resource.Get and an unknown global entry are null, as in Kyverno.
 */
#ifndef GV_VIEW_CELHOST_H
#define GV_VIEW_CELHOST_H

#include <jansson.h>

#include "engine/cel/cel.h"
#include "engine/engine.h"

/* One evaluation thread's host. Not thread-safe: one per thread. */
struct view_cel_host {
	struct cel_host host;		  /* vpol_input.host = &h->host */
	const struct engine_hooks *hooks; /* borrowed, or NULL: every call an error */
	const char *policy_ns; /* set per policy: a NamespacedValidatingPolicy's namespace, or "" */
	const char *where;     /* for "<fn> is not evaluated by <where>"; NULL = "gavel" */
	json_t *keep;	       /* owned: the answers handed out (they live until release) */
	json_t *images;	       /* owned: image.GetMetadata answers (or error texts) by reference */
};

/* Fills h (hooks borrowed, may be NULL). */
void view_cel_host_init(struct view_cel_host *h, const struct engine_hooks *hooks,
			const char *where);

/* Frees the answers handed out (values a program returned become invalid). */
void view_cel_host_release(struct view_cel_host *h);

#endif
