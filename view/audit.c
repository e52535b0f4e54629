/*
 * audit.c - the audit results an admission request hands to the report
 * writer.
 */
#include "view/view.h"

#include <stdlib.h>

#include "common/banned.h"

void view_audit_item_free(struct view_audit_item *it)
{
	if (!it)
		return;
	for (size_t i = 0; i < it->nresults; i++) {
		engine_policy_unref(it->results[i].policy);
		free(it->results[i].rule);
		free(it->results[i].message);
		free(it->results[i].exceptions);
		json_decref(it->results[i].properties);
		view_vpolset_unref(it->results[i].vpols);
	}
	free(it->results);
	free(it->api_version);
	free(it->kind);
	free(it->namespace);
	free(it->name);
	free(it->uid);
	free(it->resource_version);
	free(it->operation);
	free(it->request_uid);
	free(it);
}
