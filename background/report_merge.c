/*
 * report_merge.c - report objects read back from the cluster and folded
 * into the model, and the plans of the writes that bring the cluster to
 * the model.
 */
#include "background/report_int.h"

#include <stdio.h>
#include "common/banned.h"

/* ---- reading objects back ---- */

void report_fresh_release(struct fresh *f)
{
	report_gstate_release(&f->st);
	report_chunks_free(f->chunks, f->n);
	memset(f, 0, sizeof(*f));
}

void report_strays_release(struct strays *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].ns);
		free(s->v[i].uid);
		free(s->v[i].name);
		report_rentry_release(&s->v[i].e);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static void strays_add(struct strays *s, const char *ns, const struct rinfo *ri, struct rentry *e)
{
	struct stray *x;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = gv_xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	x = &s->v[s->n++];
	x->ns = gv_xstrdup(ns);
	x->e = *e;
	x->uid = gv_xstrdup(ri->uid);
	x->name = gv_xstrdup(ri->name);
	x->api_version = ri->api_version;
	x->kind = ri->kind;
	x->namespace = ri->namespace;
}

/* The REPORT_ANNOTATION_SCAN_DIGEST of an object (borrowed), NULL when it has none. */
static const char *object_digest(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");

	return jstr(json_object_get(md, "annotations"), REPORT_ANNOTATION_SCAN_DIGEST);
}

const char *report_object_inputs(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");

	return jstr(json_object_get(md, "annotations"), REPORT_ANNOTATION_SCAN_INPUTS);
}

uint64_t report_fold_object(struct report_set *rs, struct gstate *st, const char *ns,
			    const char *base, const json_t *obj, struct strays *strays)
{
	const json_t *results = json_object_get(obj, "results"), *r;
	const json_t *scope = json_object_get(obj, "scope");
	struct gstate own = {0}; /* obj's results alone, for the hash */
	json_t *rendered = json_array(), *labels;
	struct rpair *v;
	size_t i, n;
	uint64_t h;

	json_array_foreach(results, i, r)
	{
		struct rentry e, e2;
		struct rinfo ri;
		struct rentry *o;
		struct rnode *nd;
		bool mine = true;

		if (!report_entry_parse(rs, r, scope, &e, &ri))
			continue;
		if (base) {
			char *want = report_base_of(rs, ns, ri.uid, e.policy);

			mine = !strcmp(want, base);
			free(want);
		}
		report_rentry_copy(&e2, &e);
		nd = gv_map_get(&own.nodes, ri.uid);
		o = report_rnode_find(nd, e2.policy, e2.rule);
		if (!o || report_ts_newer(&e2, o))
			report_gstate_set(&own, &ri, &e2);
		else
			report_rentry_release(&e2);
		if (!mine) {
			if (strays)
				strays_add(strays, ns, &ri, &e);
			else
				report_rentry_release(&e);
			continue;
		}
		nd = gv_map_get(&st->nodes, ri.uid);
		o = report_rnode_find(nd, e.policy, e.rule);
		if (!o || report_ts_newer(&e, o))
			report_gstate_set(st, &ri, &e);
		else
			report_rentry_release(&e);
	}
	v = report_gstate_sorted(&own, &n);
	for (i = 0; i < n; i++)
		json_array_append_new(rendered,
				      report_entry_render(v[i].nd, v[i].e, !rs->opt.resource));
	free(v);
	labels = report_managed_labels(obj);
	h = report_content_hash(labels, json_object_get(obj, "summary"), rendered);
	json_decref(labels);
	json_decref(rendered);
	report_gstate_release(&own);
	return h;
}

void report_fresh_add(struct report_set *rs, struct fresh *f, const char *ns, const char *base,
		      const json_t *obj, struct strays *strays)
{
	const json_t *md = json_object_get(obj, "metadata");
	struct rchunk *c;

	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 4;
		f->chunks = gv_xrealloc(f->chunks, f->cap * sizeof(*f->chunks));
	}
	c = &f->chunks[f->n++];
	c->name = gv_xstrdup(str_or(jstr(md, "name"), ""));
	c->rv = jstr(md, "resourceVersion") ? gv_xstrdup(jstr(md, "resourceVersion")) : NULL;
	c->digest = dup_or_null(object_digest(obj));
	c->inputs = dup_or_null(report_object_inputs(obj));
	c->hash = report_fold_object(rs, &f->st, ns, base, obj, strays);
	report_object_range(obj, &c->lo, &c->hi);
}

void report_group_rebase(struct report_set *rs, struct rgroup *g, struct fresh *f)
{
	struct gstate *cluster = NULL;
	bool changed = false;

	if (g->synced) {
		struct rnode **nodes;
		size_t nn;

		cluster = report_gstate_copy(&f->st);
		/* results added or changed */
		nodes = report_gstate_nodes(&g->model, &nn);
		for (size_t i = 0; i < nn; i++) {
			const struct rnode *m = nodes[i];
			const struct rnode *s = gv_map_get(&g->synced->nodes, m->uid);
			struct rinfo ri = {m->uid, m->api_version, m->kind, m->namespace, m->name};

			for (size_t j = 0; j < m->n; j++) {
				const struct rentry *se =
				    report_rnode_find(s, m->v[j].policy, m->v[j].rule);
				struct rnode *fn;
				struct rentry *fe, e;

				if (se && report_rentry_identical(se, &m->v[j]) &&
				    report_rnode_same_info(s, &ri))
					continue;
				fn = gv_map_get(&f->st.nodes, m->uid);
				fe = report_rnode_find(fn, m->v[j].policy, m->v[j].rule);
				if (fe && report_rentry_same(fe, &m->v[j]) &&
				    report_rnode_same_info(fn, &ri))
					continue;
				report_rentry_copy(&e, &m->v[j]);
				report_gstate_set(&f->st, &ri, &e);
				changed = true;
			}
		}
		free(nodes);
		/* results removed */
		nodes = report_gstate_nodes(g->synced, &nn);
		for (size_t i = 0; i < nn; i++) {
			const struct rnode *s = nodes[i];
			const struct rnode *m = gv_map_get(&g->model.nodes, s->uid);

			for (size_t j = 0; j < s->n; j++)
				if (!report_rnode_find(m, s->v[j].policy, s->v[j].rule))
					changed |= report_gstate_remove(
					    &f->st, s->uid, s->v[j].policy, s->v[j].rule);
		}
		free(nodes);
	}
	report_gstate_release(&g->model);
	g->model = f->st;
	report_gstate_free(g->synced);
	g->synced = NULL;
	if (changed) {
		g->synced = cluster;
		cluster = NULL;
	}
	report_gstate_free(cluster);
	report_chunks_free(g->chunks, g->nchunks);
	g->chunks = f->chunks;
	g->nchunks = f->n;
	memset(f, 0, sizeof(*f));
	g->known = true;
	g->dirty = true;
}

enum gv_code report_merge(struct report_set *rs, const char *ns, const char *base,
			  const json_t *current, json_t **desired, struct gv_err *err)
{
	struct rgroup *g = report_group_get(rs, ns, base);
	struct fresh f = {0};
	const json_t *obj;
	uint64_t *h = NULL;
	json_t *objs = NULL;
	size_t i;
	enum gv_code rc;

	json_array_foreach(current, i, obj) report_fresh_add(rs, &f, g->ns, g->base, obj, NULL);
	report_group_rebase(rs, g, &f);
	rc = report_group_render(rs, g, &objs, &h, err);
	if (rc)
		return rc;
	json_array_foreach(objs, i, obj)
	{
		const char *name = jstr(json_object_get(obj, "metadata"), "name");

		for (size_t j = 0; j < g->nchunks; j++)
			if (!strcmp(g->chunks[j].name, name) && g->chunks[j].rv)
				json_object_set_new(json_object_get(obj, "metadata"),
						    "resourceVersion",
						    json_string(g->chunks[j].rv));
	}
	free(h);
	*desired = objs;
	return GV_OK;
}

/* ---- plans ---- */

json_t *report_delete_options(const char *rv)
{
	json_t *o = json_object();

	json_object_set_new(o, "kind", json_string("DeleteOptions"));
	json_object_set_new(o, "apiVersion", json_string("v1"));
	json_object_set_new(o, "propagationPolicy", json_string("Background"));
	if (rv) {
		json_t *pre = json_object();

		json_object_set_new(pre, "resourceVersion", json_string(rv));
		json_object_set_new(o, "preconditions", pre);
	}
	return o;
}

static void ops_add(struct report_op **ops, size_t *n, size_t *cap, struct report_op op)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		*ops = gv_xrealloc(*ops, *cap * sizeof(**ops));
	}
	(*ops)[(*n)++] = op;
}

enum gv_code report_group_plan(const struct report_set *rs, const struct rgroup *g, bool lazy,
			       struct report_op **out, size_t *nout, size_t *unchanged,
			       struct rpair **vout, struct gv_err *err)
{
	struct report_op *ops = NULL;
	size_t n = 0, cap = 0, nv, nc = 0;
	struct rpair *v = report_gstate_sorted(&g->model, &nv);
	struct cplan *c = NULL;
	bool *used = gv_xcalloc(g->nchunks + 1, sizeof(*used));
	char *stamp = NULL;
	enum gv_code rc;

	*unchanged = 0;
	*vout = NULL;
	rc = report_group_cut(rs, g, v, nv, &c, &nc, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < nc; i++) {
		char *name = report_chunk_name(g->base, i);
		struct rchunk *cur = NULL;
		struct report_op op = {0};

		free(stamp);
		stamp = report_inputs_stamp(rs, g, nc, c[i].to - c[i].from);

		for (size_t j = 0; j < g->nchunks; j++) {
			if (!used[j] && !strcmp(g->chunks[j].name, name)) {
				cur = &g->chunks[j];
				used[j] = true;
				break;
			}
		}
		/* the digests count only when this set writes them: others leave them be */
		if (cur && cur->hash == c[i].hash &&
		    (!rs->digest || (cur->digest && !strcmp(cur->digest, rs->digest))) &&
		    (!stamp || (cur->inputs && !strcmp(cur->inputs, stamp)))) {
			(*unchanged)++;
			free(name);
			continue;
		}
		op.name = name;
		op.hash = c[i].hash;
		op.lo = c[i].lo;
		op.hi = c[i].hi;
		c[i].lo = c[i].hi = NULL;
		op.from = c[i].from;
		op.to = c[i].to;
		op.index = i;
		op.nchunks = nc;
		op.kind = cur ? REPORT_OP_UPDATE : REPORT_OP_CREATE;
		op.path = report_path(g->ns, cur ? name : NULL);
		if (!lazy) {
			op.body = report_chunk_render(rs, g, v, op.from, op.to, i, nc, NULL);
			if (cur && cur->rv)
				json_object_set_new(json_object_get(op.body, "metadata"),
						    "resourceVersion", json_string(cur->rv));
		}
		ops_add(&ops, &n, &cap, op);
	}
	for (size_t j = 0; j < g->nchunks; j++) {
		struct report_op op = {0};

		if (used[j])
			continue;
		op.kind = REPORT_OP_DELETE;
		op.name = gv_xstrdup(g->chunks[j].name);
		op.path = report_path(g->ns, g->chunks[j].name);
		op.body = report_delete_options(g->chunks[j].rv);
		ops_add(&ops, &n, &cap, op);
	}
out:
	report_cplans_free(c, nc);
	free(used);
	free(stamp);
	if (rc) {
		free(v);
		report_ops_free(ops, n);
		return rc;
	}
	if (lazy)
		*vout = v;
	else
		free(v);
	*out = ops;
	*nout = n;
	return GV_OK;
}

enum gv_code report_plan(struct report_set *rs, const char *ns, const char *base,
			 struct report_op **ops, size_t *n, struct gv_err *err)
{
	struct rgroup *g = report_group_find(rs, ns, base);
	size_t unchanged;

	struct rpair *v;

	*ops = NULL;
	*n = 0;
	if (!g)
		return GV_OK;
	return report_group_plan(rs, g, false, ops, n, &unchanged, &v, err);
}

void report_ops_free(struct report_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ops[i].name);
		free(ops[i].path);
		free(ops[i].lo);
		free(ops[i].hi);
		json_decref(ops[i].body);
	}
	free(ops);
}
