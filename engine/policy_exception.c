/*
 * policy_exception.c - compiling PolicyExceptions.
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/policy_int.h"
#include "engine/value.h"
#include "common/banned.h"

/* ---- exceptions ---- */

void engine_exception_free(struct engine_exception *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nentries; i++) {
		free(e->entries[i].policy);
		for (size_t j = 0; j < e->entries[i].nrules; j++)
			free(e->entries[i].rules[j]);
		free(e->entries[i].rules);
	}
	free(e->entries);
	match_block_release(&e->match);
	conditions_release(&e->conditions);
	pss_exclusions_free(e->pss, e->npss);
	free(e->name);
	free(e->namespace);
	free(e);
}

struct engine_exception *engine_exception_compile(const json_t *doc, struct gv_err *err)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const json_t *meta = json_object_get(doc, "metadata");
	const json_t *spec = json_object_get(doc, "spec");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	struct engine_exception *e;
	struct gv_buf ptr = {0};
	size_t i, j;
	json_t *c, *rn;

	if (!kind || strcmp(kind, "PolicyException")) {
		gv_err_setp(err, GV_EINVAL, "/kind", "not a PolicyException");
		return NULL;
	}
	if (!name) {
		gv_err_setp(err, GV_EINVAL, "/metadata/name", "name is required");
		return NULL;
	}
	if (!json_is_array(json_object_get(spec, "exceptions"))) {
		gv_err_setp(err, GV_EINVAL, "/spec/exceptions", "exceptions must be a list");
		return NULL;
	}
	e = gv_xcalloc(1, sizeof(*e));
	e->name = gv_xstrdup(name);
	e->namespace = gv_xstrdup(ns ? ns : "");
	e->entries = gv_xcalloc(json_array_size(json_object_get(spec, "exceptions")) + 1,
				sizeof(*e->entries));
	json_array_foreach(json_object_get(spec, "exceptions"), i, c)
	{
		const char *pn = json_string_value(json_object_get(c, "policyName"));
		const json_t *rules = json_object_get(c, "ruleNames");
		e->entries[i].policy = gv_xstrdup(pn ? pn : "");
		e->entries[i].rules = gv_xcalloc(json_array_size(rules) + 1, sizeof(char *));
		json_array_foreach(rules, j, rn) if (json_is_string(rn)) e->entries[i]
		    .rules[e->entries[i].nrules++] = gv_xstrdup(json_string_value(rn));
		e->nentries++;
	}
	gv_buf_adds(&ptr, "/spec/match");
	if (match_block_compile(json_object_get(spec, "match"), &e->match, false, &ptr, err))
		goto fail;
	gv_buf_reset(&ptr);
	gv_buf_adds(&ptr, "/spec/conditions");
	if (conditions_compile(json_object_get(spec, "conditions"), &e->conditions, &ptr, err))
		goto fail;
	gv_buf_reset(&ptr);
	gv_buf_adds(&ptr, "/spec/podSecurity");
	if (pss_exclusions_compile(json_object_get(spec, "podSecurity"), false, &e->pss, &e->npss,
				   &ptr, err))
		goto fail;
	gv_buf_release(&ptr);
	return e;
fail:
	gv_buf_release(&ptr);
	engine_exception_free(e);
	return NULL;
}
