/*
 * scan_kinds.c - the hashes of scans and the kinds a policy matches,
 * resolved later through discovery (scan.h).
 */
#include "background/scan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/banned.h"

/* ---- hashing ---- */

uint64_t scan_hash(const void *p, size_t n, uint64_t h)
{
	return gv_fnv1a64(p, n, h);
}

uint64_t scan_hash_str(const char *s, uint64_t h)
{
	if (!s)
		s = "";
	return scan_hash(s, strlen(s) + 1, h);
}

static int hash_dump_cb(const char *buf, size_t size, void *data)
{
	uint64_t *h = data;

	*h = scan_hash(buf, size, *h);
	return 0;
}

uint64_t scan_hash_json(const json_t *v, uint64_t h)
{
	if (!v)
		return scan_hash_str("null", h);
	json_dump_callback(v, hash_dump_cb, &h, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	return scan_hash("\n", 1, h);
}

/* ---- kinds ---- */

static bool has_wild(const char *s)
{
	return strchr(s, '*') || strchr(s, '?');
}

bool scan_kind_parse(const char *sel, struct scan_kind *out)
{
	char *parts[5] = {0};
	char *copy, *p;
	size_t n = 0;
	const char *group = NULL, *version = NULL, *kind = NULL;
	bool ok = false;

	if (!sel || !*sel)
		return false;
	copy = gv_xstrdup(sel);
	for (p = copy; n < 4;) {
		char *slash = strchr(p, '/');
		parts[n++] = p;
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	if (strchr(p, '/'))
		goto out; /* more than four segments */
	/* "Pod.exec" is "Pod/exec": a subresource */
	if (strchr(parts[n - 1], '.'))
		goto out;
	switch (n) {
	case 1:
		kind = parts[0];
		break;
	case 2:
		if (!strcmp(parts[0], "*") || !engine_is_kind_version(parts[0]))
			goto out; /* "*" slash subresource, Kind/subresource */
		version = parts[0];
		kind = parts[1];
		break;
	case 3:
		if (engine_is_kind_version(parts[0]))
			goto out; /* v1/Kind/subresource */
		group = parts[0];
		version = parts[1];
		kind = parts[2];
		break;
	default:
		goto out; /* group/version/Kind/subresource */
	}
	if (!*kind || has_wild(kind))
		goto out;
	if (group && !*group)
		goto out;
	if (version && !*version)
		goto out;
	out->group = group && strcmp(group, "*") ? gv_xstrdup(group) : NULL;
	out->version = version && strcmp(version, "*") ? gv_xstrdup(version) : NULL;
	out->kind = gv_xstrdup(kind);
	ok = true;
out:
	free(copy);
	return ok;
}

void scan_kind_release(struct scan_kind *k)
{
	if (!k)
		return;
	free(k->group);
	free(k->version);
	free(k->kind);
	memset(k, 0, sizeof(*k));
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void kinds_add(struct scan_kinds *ks, const char *group, const char *version,
		      const char *kind)
{
	for (size_t i = 0; i < ks->n; i++)
		if (str_eq(ks->v[i].group, group) && str_eq(ks->v[i].version, version) &&
		    !strcmp(ks->v[i].kind, kind))
			return;
	ks->v = gv_xrealloc(ks->v, (ks->n + 1) * sizeof(*ks->v));
	ks->v[ks->n].group = group ? gv_xstrdup(group) : NULL;
	ks->v[ks->n].version = version ? gv_xstrdup(version) : NULL;
	ks->v[ks->n].kind = gv_xstrdup(kind);
	ks->n++;
}

static void kinds_add_list(struct scan_kinds *ks, const json_t *kinds)
{
	size_t i;
	const json_t *k;

	json_array_foreach(kinds, i, k)
	{
		struct scan_kind sk = {0};
		const char *s = json_string_value(k);
		if (!scan_kind_parse(s, &sk)) {
			ks->complete = false;
			continue;
		}
		kinds_add(ks, sk.group, sk.version, sk.kind);
		scan_kind_release(&sk);
	}
}

static void kinds_of_match(struct scan_kinds *ks, const json_t *match)
{
	static const char *const lists[] = {"any", "all"};
	size_t i;
	const json_t *f;

	kinds_add_list(ks, json_object_get(json_object_get(match, "resources"), "kinds"));
	for (size_t l = 0; l < GV_ARRAY_LEN(lists); l++)
		json_array_foreach(json_object_get(match, lists[l]), i, f)
		    kinds_add_list(ks, json_object_get(json_object_get(f, "resources"), "kinds"));
}

static const json_t *doc_rule(const json_t *rules, const char *name)
{
	size_t i;
	const json_t *r;

	json_array_foreach(rules, i, r)
	{
		const char *n = json_string_value(json_object_get(r, "name"));
		if (n && !strcmp(n, name))
			return r;
	}
	return NULL;
}

/* Whether the autogen-controllers annotation lets controller kind k be generated. */
static bool controller_selected(const char *ann, const char *k)
{
	const char *p = ann;
	size_t n = strlen(k);

	if (!ann)
		return true;
	/* a comma-separated list, split without trimming (section 9.1) */
	while (p && *p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == n && !strncmp(p, k, n))
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

void scan_policy_kinds(const struct engine_policy *p, struct scan_kinds *out)
{
	static const struct {
		const char *group, *version, *kind;
	} controllers[] = {
	    {"apps", "v1", "DaemonSet"},   {"apps", "v1", "Deployment"},
	    {"apps", "v1", "StatefulSet"}, {"apps", "v1", "ReplicaSet"},
	    {"batch", "v1", "Job"},	   {"", "v1", "ReplicationController"},
	};
	const json_t *doc = engine_policy_doc(p);
	const json_t *rules = json_object_get(json_object_get(doc, "spec"), "rules");
	const char *ann =
	    engine_policy_annotation(p, "pod-policies.kyverno.io/autogen-controllers");
	size_t nr = engine_policy_rule_count(p);

	memset(out, 0, sizeof(*out));
	out->complete = true;
	for (size_t i = 0; i < nr; i++) {
		const char *name = engine_policy_rule_name(p, i);
		const json_t *r = doc_rule(rules, name);
		bool safe = engine_policy_rule_background_safe(p, i);

		if (r) {
			if (!json_object_get(r, "validate"))
				continue; /* not evaluated by gavel: no results */
			if (!safe) {
				out->complete = false;
				continue;
			}
			kinds_of_match(out, json_object_get(r, "match"));
			continue;
		}
		if (!safe) {
			out->complete = false;
			continue;
		}
		if (!strncmp(name, "autogen-cronjob-", 16)) {
			kinds_add(out, "batch", "v1", "CronJob");
		} else if (!strncmp(name, "autogen-", 8)) {
			for (size_t c = 0; c < GV_ARRAY_LEN(controllers); c++)
				if (controller_selected(ann, controllers[c].kind))
					kinds_add(out, controllers[c].group, controllers[c].version,
						  controllers[c].kind);
		}
	}
}

void scan_kinds_release(struct scan_kinds *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		scan_kind_release(&k->v[i]);
	free(k->v);
	memset(k, 0, sizeof(*k));
}

uint64_t scan_doc_fingerprint(const char *kind, const char *ns, const char *name, const json_t *doc)
{
	const json_t *md = json_object_get(doc, "metadata");
	json_t *spec = json_copy(json_object_get(doc, "spec"));
	json_t *ann = json_copy(json_object_get(md, "annotations"));
	uint64_t h = SCAN_HASH_SEED;

	if (spec) {
		json_object_del(spec, "scanInterval");
		json_object_del(spec, "scanSchedule");
		json_object_del(spec, "scanSuspend");
	}
	if (ann)
		json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
	h = scan_hash_str(kind, h);
	h = scan_hash_str(ns, h);
	h = scan_hash_str(name, h);
	h = scan_hash_str(json_string_value(json_object_get(md, "uid")), h);
	h = scan_hash_json(ann, h);
	h = scan_hash_json(spec, h);
	json_decref(spec);
	json_decref(ann);
	return h;
}

uint64_t scan_policy_fingerprint(const struct engine_policy *p)
{
	return scan_doc_fingerprint(engine_policy_kind(p), engine_policy_namespace(p),
				    engine_policy_name(p), engine_policy_doc(p));
}
