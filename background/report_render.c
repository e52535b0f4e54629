/*
 * report_render.c - the model rendered into report objects: results in
 * their order, summaries, labels, chunks cut below the size limit, and
 * the content digest that tells an object unchanged.
 */
#include "background/report_int.h"

#include <stdio.h>
#include "common/banned.h"

/* ---- rendering ---- */

int report_rpair_cmp(const void *pa, const void *pb)
{
	const struct rpair *a = pa, *b = pb;
	int c;

	if ((c = strcmp(a->nd->kind, b->nd->kind)) ||
	    (c = strcmp(a->nd->namespace, b->nd->namespace)) ||
	    (c = strcmp(a->nd->name, b->nd->name)) || (c = strcmp(a->nd->uid, b->nd->uid)) ||
	    (c = strcmp(a->e->policy, b->e->policy)) || (c = strcmp(a->e->rule, b->e->rule)))
		return c;
	return 0;
}

struct rpair *report_gstate_sorted(const struct gstate *s, size_t *n)
{
	struct rpair *v = gv_xcalloc(s->nresults ? s->nresults : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < s->nodes.cap; i++) {
		const struct rnode *nd = s->nodes.v[i].val;

		if (!s->nodes.v[i].key)
			continue;
		for (size_t j = 0; j < nd->n; j++)
			v[k++] = (struct rpair){nd, &nd->v[j]};
	}
	qsort(v, k, sizeof(*v), report_rpair_cmp);
	*n = k;
	return v;
}

static json_t *summary_of(const json_t *results)
{
	size_t count[ENGINE_SKIP + 1] = {0};
	const json_t *r;
	size_t i;
	json_t *s = json_object();

	json_array_foreach(results, i, r)
	{
		enum engine_status st;

		if (report_status_parse(jstr(r, "result"), &st))
			count[st]++;
	}
	json_object_set_new(s, "pass", json_integer((json_int_t)count[ENGINE_PASS]));
	json_object_set_new(s, "fail", json_integer((json_int_t)count[ENGINE_FAIL]));
	json_object_set_new(s, "warn", json_integer((json_int_t)count[ENGINE_WARN]));
	json_object_set_new(s, "error", json_integer((json_int_t)count[ENGINE_ERROR]));
	json_object_set_new(s, "skip", json_integer((json_int_t)count[ENGINE_SKIP]));
	return s;
}

/*
 * The hash that says whether two versions of an object differ in what
 * gavel writes: FNV-1a over each result's compact dump with sorted keys
 * (entry_hash, in order), then over the labels' and the summary's
 * (content_hash_finish), so that results can be hashed one by one as they
 * are rendered.
 */
static uint64_t entry_hash(uint64_t h, const char *dump)
{
	return gv_fnv1a64(dump ? dump : "", strlen(dump ? dump : "") + 1, h);
}

static char *entry_dump(const json_t *r)
{
	return json_dumps(r, JSON_SORT_KEYS | JSON_COMPACT);
}

static uint64_t content_hash_finish(uint64_t h, const json_t *labels, const json_t *summary)
{
	char *l = json_dumps(labels, JSON_SORT_KEYS | JSON_COMPACT);
	char *s = summary ? json_dumps(summary, JSON_SORT_KEYS | JSON_COMPACT) : NULL;

	h = entry_hash(h, l);
	h = entry_hash(h, s ? s : "null");
	free(l);
	free(s);
	return h;
}

uint64_t report_content_hash(const json_t *labels, const json_t *summary, const json_t *results)
{
	uint64_t h = GV_FNV1A64_OFFSET;
	const json_t *r;
	size_t i;

	json_array_foreach(results, i, r)
	{
		char *t = entry_dump(r);

		h = entry_hash(h, t);
		free(t);
	}
	return content_hash_finish(h, labels, summary);
}

static const char *const MANAGED_LABELS[] = {REPORT_LABEL_MANAGED_BY, REPORT_LABEL_GROUP,
					     REPORT_LABEL_CHUNK, REPORT_LABEL_LAYOUT};

json_t *report_managed_labels(const json_t *obj)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
	json_t *out = json_object();

	for (size_t i = 0; i < GV_ARRAY_LEN(MANAGED_LABELS); i++) {
		json_t *v = json_object_get(labels, MANAGED_LABELS[i]);

		if (v)
			json_object_set(out, MANAGED_LABELS[i], v);
	}
	return out;
}

void report_stamp_cache(struct report_set *rs)
{
	gv_map_release(&rs->stamp_groups);
	rs->stamp_cached = rs->inputs != NULL;
	if (!rs->stamp_cached)
		return;
	for (size_t i = 0; i < rs->groups.cap; i++) {
		const struct rgroup *g = rs->groups.v[i].val;
		const char *ns;
		uintptr_t v;

		if (!rs->groups.v[i].key || !g->model.nresults)
			continue;
		ns = report_intern(rs, g->ns);
		v = (uintptr_t)gv_map_get(&rs->stamp_groups, ns);
		gv_map_put(&rs->stamp_groups, ns, (void *)(v ? v + 1 : 2));
	}
}

void report_stamp_uncache(struct report_set *rs)
{
	gv_map_release(&rs->stamp_groups);
	rs->stamp_cached = false;
}

char *report_inputs_stamp(const struct report_set *rs, const struct rgroup *g, size_t nchunks,
			  size_t nresults)
{
	size_t groups = 0;

	if (!rs->inputs)
		return NULL;
	if (rs->stamp_cached) {
		uintptr_t v = (uintptr_t)gv_map_get(&rs->stamp_groups, g->ns);

		groups = v ? (size_t)(v - 1) : 0;
	} else {
		for (size_t i = 0; i < rs->groups.cap; i++) {
			const struct rgroup *o = rs->groups.v[i].val;

			if (rs->groups.v[i].key && o->model.nresults && !strcmp(o->ns, g->ns))
				groups++;
		}
	}
	return gv_xasprintf("%s; groups=%zu; chunks=%zu; results=%zu", rs->inputs, groups, nchunks,
			    nresults);
}

/*
 * The resource layout: metadata.ownerReferences and `scope` name the one
 * object of g (its first node: a group keyed by uid has one), as Kyverno
 * writes them (k8s-wire.md 3.3). Nothing when g has no result.
 */
static void resource_scope(const struct rgroup *g, json_t *md, json_t *o)
{
	const struct rnode *nd = NULL;
	json_t *owner, *scope;

	for (size_t i = 0; !nd && i < g->model.nodes.cap; i++)
		if (g->model.nodes.v[i].key)
			nd = g->model.nodes.v[i].val;
	if (!nd)
		return;
	owner = json_object();
	json_object_set_new(owner, "apiVersion", jstring(nd->api_version));
	json_object_set_new(owner, "kind", jstring(nd->kind));
	json_object_set_new(owner, "name", jstring(nd->name));
	json_object_set_new(owner, "uid", jstring(nd->uid));
	json_object_set_new(md, "ownerReferences", json_pack("[o]", owner));
	scope = json_object();
	json_object_set_new(scope, "apiVersion", jstring(nd->api_version));
	json_object_set_new(scope, "kind", jstring(nd->kind));
	if (*nd->namespace)
		json_object_set_new(scope, "namespace", jstring(nd->namespace));
	json_object_set_new(scope, "name", jstring(nd->name));
	json_object_set_new(scope, "uid", jstring(nd->uid));
	json_object_set_new(o, "scope", scope);
}

static json_t *report_object(const struct report_set *rs, const struct rgroup *g, size_t index,
			     size_t nchunks, json_t *results, uint64_t *hash)
{
	json_t *o = json_object(), *md = json_object(), *labels = json_object(), *sum;
	char *name = report_chunk_name(g->base, index), *label = report_group_label(g->base);
	char idx[24];

	snprintf(idx, sizeof(idx), "%zu", index);
	json_object_set_new(labels, REPORT_LABEL_MANAGED_BY, json_string(report_managed_by(rs)));
	json_object_set_new(labels, REPORT_LABEL_GROUP, json_string(label));
	json_object_set_new(labels, REPORT_LABEL_CHUNK, json_string(idx));
	json_object_set_new(labels, REPORT_LABEL_LAYOUT, json_string(report_layout_name(rs)));
	sum = summary_of(results);
	if (hash) /* the hash costs a sorted dump of the whole object: only when asked */
		*hash = report_content_hash(labels, sum, results);
	json_object_set_new(o, "apiVersion", json_string(report_api_version()));
	json_object_set_new(o, "kind", json_string(report_kind(!*g->ns)));
	json_object_set_new(md, "name", json_string(name));
	if (*g->ns)
		json_object_set_new(md, "namespace", json_string(g->ns));
	json_object_set_new(md, "labels", labels);
	if (rs->digest || rs->inputs) {
		json_t *ann = json_object();
		char *stamp = report_inputs_stamp(rs, g, nchunks, json_array_size(results));

		if (rs->digest)
			json_object_set_new(ann, REPORT_ANNOTATION_SCAN_DIGEST,
					    json_string(rs->digest));
		if (stamp)
			json_object_set_new(ann, REPORT_ANNOTATION_SCAN_INPUTS, json_string(stamp));
		free(stamp);
		json_object_set_new(md, "annotations", ann);
	}
	if (rs->opt.resource)
		resource_scope(g, md, o);
	json_object_set_new(o, "metadata", md);
	json_object_set_new(o, "summary", sum);
	json_object_set_new(o, "results", results);
	free(name);
	free(label);
	return o;
}

void report_cplans_free(struct cplan *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].lo);
		free(c[i].hi);
	}
	free(c);
}

json_t *report_chunk_render(const struct report_set *rs, const struct rgroup *g,
			    const struct rpair *v, size_t from, size_t to, size_t index,
			    size_t nchunks, uint64_t *hash)
{
	json_t *results = json_array();

	for (size_t i = from; i < to; i++)
		json_array_append_new(results,
				      report_entry_render(v[i].nd, v[i].e, !rs->opt.resource));
	return report_object(rs, g, index, nchunks, results, hash);
}

enum gv_code report_group_cut(const struct report_set *rs, const struct rgroup *g,
			      const struct rpair *v, size_t n, struct cplan **out, size_t *nout,
			      struct gv_err *err)
{
	size_t count = 0, bytes = 0, nchunks = 0, start = 0;
	struct cplan *c =
	    gv_xcalloc(n / (rs->opt.chunk_results ? rs->opt.chunk_results : 1) + n + 1, sizeof(*c));
	json_t *cur = NULL;
	uint64_t eh = GV_FNV1A64_OFFSET; /* entry_hash of the results of cur */

	for (size_t i = 0; i <= n; i++) {
		json_t *r = NULL;
		char *t = NULL;
		size_t sz = 0;

		if (i < n) {
			/* one dump per result: its size (sorted keys do not change it) and hash */
			r = report_entry_render(v[i].nd, v[i].e, !rs->opt.resource);
			t = entry_dump(r);
			sz = t ? strlen(t) + 1 : 0;
		}
		if (cur && (i == n || count >= rs->opt.chunk_results ||
			    (count && bytes + sz > rs->opt.chunk_bytes))) {
			/* for the hash and range: the annotations are not part of them */
			json_t *obj = report_object(rs, g, nchunks, 0, cur, NULL);
			json_t *labels = report_managed_labels(obj);

			c[nchunks].hash =
			    content_hash_finish(eh, labels, json_object_get(obj, "summary"));
			json_decref(labels);
			report_object_range(obj, &c[nchunks].lo, &c[nchunks].hi);
			json_decref(obj);
			c[nchunks].from = start;
			c[nchunks].to = i;
			nchunks++;
			cur = NULL;
		}
		if (i == n)
			break;
		if (!cur) {
			if (nchunks >= REPORT_MAX_CHUNKS) {
				json_decref(r);
				free(t);
				report_cplans_free(c, nchunks);
				return gv_err_set(
				    err, GV_ELIMIT, "report %s%s%s: more than %d objects needed",
				    g->ns, *g->ns ? "/" : "", g->base, REPORT_MAX_CHUNKS);
			}
			cur = json_array();
			count = 0;
			bytes = 0;
			start = i;
			eh = GV_FNV1A64_OFFSET;
		}
		json_array_append_new(cur, r);
		eh = entry_hash(eh, t);
		free(t);
		count++;
		bytes += sz;
	}
	*out = c;
	*nout = nchunks;
	return GV_OK;
}

enum gv_code report_group_render(const struct report_set *rs, const struct rgroup *g, json_t **out,
				 uint64_t **hashes, struct gv_err *err)
{
	size_t n, nc = 0;
	struct rpair *v = report_gstate_sorted(&g->model, &n);
	struct cplan *c = NULL;
	json_t *objs;
	uint64_t *h;
	enum gv_code rc;

	rc = report_group_cut(rs, g, v, n, &c, &nc, err);
	if (rc) {
		free(v);
		return rc;
	}
	objs = json_array();
	h = gv_xcalloc(nc + 1, sizeof(*h));
	for (size_t i = 0; i < nc; i++)
		json_array_append_new(
		    objs, report_chunk_render(rs, g, v, c[i].from, c[i].to, i, nc, &h[i]));
	report_cplans_free(c, nc);
	free(v);
	*out = objs;
	*hashes = h;
	return GV_OK;
}

static int group_cmp(const void *pa, const void *pb)
{
	const struct rgroup *a = *(struct rgroup *const *)pa, *b = *(struct rgroup *const *)pb;

	return strcmp(a->key, b->key);
}

struct rgroup **report_groups_sorted(const struct report_set *rs, size_t *n)
{
	struct rgroup **v = gv_xcalloc(rs->groups.n ? rs->groups.n : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			v[k++] = rs->groups.v[i].val;
	qsort(v, k, sizeof(*v), group_cmp);
	*n = k;
	return v;
}

json_t *report_render_all(struct report_set *rs)
{
	json_t *all = json_array();
	struct rgroup **gs;
	size_t n;

	report_stamp_cache(rs);
	gs = report_groups_sorted(rs, &n);
	for (size_t i = 0; i < n; i++) {
		json_t *objs = NULL;
		uint64_t *h = NULL;

		if (report_group_render(rs, gs[i], &objs, &h, NULL))
			continue;
		json_array_extend(all, objs);
		json_decref(objs);
		free(h);
	}
	free(gs);
	report_stamp_uncache(rs);
	return all;
}
