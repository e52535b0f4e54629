/*
 * celctx.h - the Kyverno CEL libraries answered offline for `gavel test`
 * (../shared/conformance/TEST-FORMAT.md section 7.6, cel-semantics.md
 * section 6): resource.Get/List from the test's `context` file
 * (spec.resources, NotFound an error) or its `clusterResources` (NotFound
 * null, labels honoured), image.GetMetadata from the context file's
 * spec.images, globalContext.Get from globalContextEntries, http.Get/Post
 * from apiCallResponses. Anything not answered is an explicit error: gavel
 * makes no network call offline.
 */
#ifndef GV_CMD_CELCTX_H
#define GV_CMD_CELCTX_H

#include <stdbool.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/cel/cel.h"

struct celctx {
	struct cel_host host; /* ready after celctx_init (ud = this struct) */
	json_t *context;      /* owned array: context file spec.resources */
	json_t *cluster;      /* owned array: clusterResources objects */
	json_t *images;	      /* owned array: context file spec.images */
	const json_t *gctx;   /* borrowed: globalContextEntries or NULL */
	const json_t *api;    /* borrowed: apiCallResponses or NULL */
	json_t *keep;	      /* owned array: results handed out (kept until release) */
};

void celctx_init(struct celctx *c);
void celctx_release(struct celctx *c);

/* Loads a `kind: Context` file (spec.resources, spec.images). */
enum gv_code celctx_load_context(struct celctx *c, const char *path, struct gv_err *err);

/*
 * Loads a clusterResources file: a `kind: ClusterResource` document gives
 * its spec.resources, any other document is one object (as written: no
 * namespace defaulting).
 */
enum gv_code celctx_load_cluster(struct celctx *c, const char *path, struct gv_err *err);

#endif
