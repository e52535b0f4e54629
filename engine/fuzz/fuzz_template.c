/*
 * fuzz_template.c - {{ }} substitution (engine/engine_int.h, kyverno-semantics.md
 * 6.2): the input as one string through tmpl_has_vars + tmpl_eval_string
 * and through vtree_compile + vtree_eval; var_query on it as a bare
 * expression (foreach list, context jmesPath); and, when the input is JSON,
 * the whole tree through vtree_compile + vtree_eval (keys hold variables
 * too). Evaluated against a fixed rule context, once as CREATE and once as
 * DELETE (request.object read as oldObject).
 *
 * Input: the text (cut at the first NUL). Seeds: every string of the golden
 * policies holding "{{", and the messages. Dictionary: engine/fuzz/jmespath.dict.
 */
#include <stdlib.h>
#include <jansson.h>

#include "common/fuzz/fuzz.h"
#include "engine/engine_int.h"

#include "common/banned.h"

static const char ROOT[] =
    "{\"request\":{\"operation\":\"CREATE\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":"
    "\"x\",\"labels\":{\"app\":\"web\"},\"annotations\":{\"tpl\":"
    "\"{{ request.object.metadata.name }}\",\"ratio\":\"0.5\"}},\"spec\":{\"replicas\":3,"
    "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}},\"oldObject\":{\"metadata\":{"
    "\"name\":\"old\",\"labels\":{\"app\":\"api\"}}}},\"cm\":{\"data\":{\"web\":\"big\"}},"
    "\"num\":5,\"s\":\"{{ num }}\",\"element\":{\"name\":\"c\"},\"elementIndex\":0}";

static void eval_tree(const json_t *tree, const struct var_ctx *ctx)
{
	struct gv_err err = {0};
	struct vtree *t = vtree_compile(tree, &err);
	json_t *out = NULL;

	if (!t)
		return;
	if (vtree_is_const(t))
		vtree_const(t);
	else if (vtree_eval(t, ctx, &out, &err) == GV_OK)
		json_decref(out);
	vtree_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *root;
	json_t *str, *tree;
	char *s;

	fuzz_init();
	if (!root)
		root = json_loads(ROOT, 0, NULL);
	s = fuzz_str(data, size);
	/* Strings in policies come from jansson: valid UTF-8 only. */
	str = json_string(s);
	if (!str) {
		free(s);
		return 0;
	}
	tree = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	for (int del = 0; del < 2; del++) {
		struct var_ctx ctx = {.root = root, .delete_op = del};
		struct gv_err err = {0};
		struct jp_error jerr = {0};
		json_t *out = NULL;

		tmpl_has_vars(s);
		if (tmpl_eval_string(s, &ctx, &out, &err) == GV_OK)
			json_decref(out);
		out = NULL;
		gv_err_clear(&err);
		if (var_query(s, &ctx, &out, &jerr, &err) == GV_OK)
			json_decref(out);
		eval_tree(str, &ctx);
		if (tree)
			eval_tree(tree, &ctx);
	}
	json_decref(tree);
	json_decref(str);
	free(s);
	return 0;
}
