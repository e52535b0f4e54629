/*
 * events.c - scan Events, once per change (events.h).
 */
#include "background/events.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "background/scan.h"
#include "view/events.h"
#include "common/gv.h"
#include "common/banned.h"

/* Open addressing on the key hash; key 0 marks a free slot. */
struct scan_events {
	struct kube_events *ev; /* borrowed */
	pthread_mutex_t mu;
	uint64_t *keys, *vals; /* SCAN_EVENTS_MEMO each */
	size_t used;
};

struct scan_events *scan_events_new(struct kube_events *ev)
{
	struct scan_events *se;

	if (!ev)
		return NULL;
	se = gv_xcalloc(1, sizeof(*se));
	se->ev = ev;
	pthread_mutex_init(&se->mu, NULL);
	se->keys = gv_xcalloc(SCAN_EVENTS_MEMO, sizeof(*se->keys));
	se->vals = gv_xcalloc(SCAN_EVENTS_MEMO, sizeof(*se->vals));
	return se;
}

void scan_events_free(struct scan_events *se)
{
	if (!se)
		return;
	pthread_mutex_destroy(&se->mu);
	free(se->keys);
	free(se->vals);
	free(se);
}

void scan_events_reset(struct scan_events *se)
{
	if (!se)
		return;
	pthread_mutex_lock(&se->mu);
	memset(se->keys, 0, SCAN_EVENTS_MEMO * sizeof(*se->keys));
	se->used = 0;
	pthread_mutex_unlock(&se->mu);
}

/* Whether key now maps to val, recording it; true = it did not before. */
static bool memo_changed(struct scan_events *se, uint64_t key, uint64_t val)
{
	size_t i;
	bool changed = true;

	key |= 1; /* never 0 */
	pthread_mutex_lock(&se->mu);
	if (se->used >= SCAN_EVENTS_MEMO / 2) {
		memset(se->keys, 0, SCAN_EVENTS_MEMO * sizeof(*se->keys));
		se->used = 0;
	}
	for (i = key & (SCAN_EVENTS_MEMO - 1); se->keys[i] && se->keys[i] != key;
	     i = (i + 1) & (SCAN_EVENTS_MEMO - 1))
		;
	if (se->keys[i] == key) {
		changed = se->vals[i] != val;
	} else {
		se->keys[i] = key;
		se->used++;
	}
	se->vals[i] = val;
	pthread_mutex_unlock(&se->mu);
	return changed;
}

static const char *md_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

void scan_events_response(struct scan_events *se, const json_t *obj,
			  const struct engine_response *resp)
{
	struct kube_event_object pol,
	    res = {
		.api_version = json_string_value(json_object_get(obj, "apiVersion")),
		.kind = json_string_value(json_object_get(obj, "kind")),
		.namespace = md_str(obj, "namespace"),
		.name = md_str(obj, "name"),
		.uid = md_str(obj, "uid"),
	    };
	const json_t *pdoc;
	uint64_t base, version;

	if (!se || !resp || !res.kind || !res.name || !res.uid)
		return;
	view_events_policy_ref(resp->policy, &pol);
	pdoc = engine_policy_doc(resp->policy);
	base = scan_hash_str(res.uid, SCAN_HASH_SEED);
	base = scan_hash_str(pol.namespace, base);
	base = scan_hash_str(pol.name, base);
	version = scan_hash_str(md_str(obj, "resourceVersion"), SCAN_HASH_SEED);
	/* the generation, not the resourceVersion: status writes do not count */
	version = scan_hash_json(json_object_get(json_object_get(pdoc, "metadata"), "generation"),
				 version);
	version = scan_hash_str(pol.uid, version);
	for (size_t i = 0; i < resp->nrules; i++) {
		const struct engine_rule_result *r = &resp->rules[i];
		uint64_t key = scan_hash_str(r->rule, base);
		uint64_t val = scan_hash(&r->status, sizeof(r->status), version);

		val = scan_hash_str(r->message, val);
		if (memo_changed(se, key, val))
			view_events_scan_rule(se->ev, &pol, &res, r);
	}
}
