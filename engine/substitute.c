/* substitute.c - variable substitution for the loaders of context entries. */
#include "engine/engine.h"
#include "engine/engine_int.h"
#include <string.h>
#include "common/banned.h"

enum gv_code engine_substitute(const json_t *tree, const json_t *ctx, json_t **out,
			       struct gv_err *err)
{
	struct jp_budget b = {0};
	const char *op =
	    json_string_value(json_object_get(json_object_get(ctx, "request"), "operation"));
	struct var_ctx vc = {.root = ctx, .delete_op = op && !strcmp(op, "DELETE"), .budget = &b};
	struct vtree *t;
	enum gv_code rc;

	*out = NULL;
	t = vtree_compile(tree, err);
	if (!t)
		return GV_EEVAL;
	rc = vtree_eval(t, &vc, out, err);
	vtree_free(t);
	return rc;
}
