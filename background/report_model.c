/*
 * report_model.c - the PolicyReport model: results per object, groups
 * (one per report before chunking), the journal of changes and the
 * model queries of report.h.
 */
#include "background/report_int.h"

#include <stdio.h>
#include "common/banned.h"

/* ---- the model ---- */

const char *report_intern(struct report_set *rs, const char *s)
{
	char *v;

	if (!s)
		return NULL;
	v = gv_map_get(&rs->strings, s);
	if (v)
		return v;
	v = gv_xstrdup(s);
	gv_map_put(&rs->strings, v, v);
	return v;
}

void report_rentry_release(struct rentry *e)
{
	if (!e->pooled)
		free(e->message);
	json_decref(e->props);
}

void report_rentry_copy(struct rentry *dst, const struct rentry *src)
{
	*dst = *src;
	/* a pooled message stays the pool's: entries never leave their set */
	if (!src->pooled)
		dst->message = gv_xstrdup(src->message);
	dst->props = json_incref(src->props); /* never modified once built */
}

bool report_rentry_same(const struct rentry *a, const struct rentry *b)
{
	return a->policy == b->policy && a->rule == b->rule && a->source == b->source &&
	       a->severity == b->severity && a->category == b->category &&
	       a->process == b->process && a->result == b->result && a->scored == b->scored &&
	       !strcmp(a->message, b->message) &&
	       (a->props == b->props || (a->props && b->props && json_equal(a->props, b->props)));
}

bool report_rentry_identical(const struct rentry *a, const struct rentry *b)
{
	return report_rentry_same(a, b) && a->seconds == b->seconds && a->nanos == b->nanos;
}

bool report_ts_newer(const struct rentry *a, const struct rentry *b)
{
	return a->seconds > b->seconds || (a->seconds == b->seconds && a->nanos > b->nanos);
}

bool report_rnode_same_info(const struct rnode *nd, const struct rinfo *ri)
{
	return nd->api_version == ri->api_version && nd->kind == ri->kind &&
	       nd->namespace == ri->namespace && !strcmp(nd->name, ri->name);
}

static void rnode_set_info(struct rnode *nd, const struct rinfo *ri)
{
	nd->api_version = ri->api_version;
	nd->kind = ri->kind;
	nd->namespace = ri->namespace;
	if (strcmp(nd->name, ri->name)) {
		free(nd->name);
		nd->name = gv_xstrdup(ri->name);
	}
}

void report_rnode_free(struct rnode *nd)
{
	if (!nd)
		return;
	for (size_t i = 0; i < nd->n; i++)
		report_rentry_release(&nd->v[i]);
	free(nd->v);
	free(nd->uid);
	free(nd->name);
	free(nd);
}

struct rentry *report_rnode_find(const struct rnode *nd, const char *policy, const char *rule)
{
	if (!nd)
		return NULL;
	for (size_t i = 0; i < nd->n; i++)
		if (nd->v[i].policy == policy && nd->v[i].rule == rule)
			return &nd->v[i];
	return NULL;
}

void report_gstate_release(struct gstate *s)
{
	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.v[i].key)
			report_rnode_free(s->nodes.v[i].val);
	gv_map_release(&s->nodes);
	s->nresults = 0;
}

void report_gstate_free(struct gstate *s)
{
	if (s) {
		report_gstate_release(s);
		free(s);
	}
}

struct gstate *report_gstate_copy(const struct gstate *s)
{
	struct gstate *c = gv_xcalloc(1, sizeof(*c));

	for (size_t i = 0; i < s->nodes.cap; i++) {
		const struct rnode *nd = s->nodes.v[i].val;
		struct rnode *cn;

		if (!s->nodes.v[i].key)
			continue;
		cn = gv_xcalloc(1, sizeof(*cn));
		*cn = *nd;
		cn->uid = gv_xstrdup(nd->uid);
		cn->name = gv_xstrdup(nd->name);
		cn->cap = nd->n;
		cn->v = gv_xcalloc(nd->n ? nd->n : 1, sizeof(*cn->v));
		for (size_t j = 0; j < nd->n; j++)
			report_rentry_copy(&cn->v[j], &nd->v[j]);
		gv_map_put(&c->nodes, cn->uid, cn);
	}
	c->nresults = s->nresults;
	return c;
}

static struct rnode *gstate_node(struct gstate *s, const struct rinfo *ri, bool create)
{
	struct rnode *nd = gv_map_get(&s->nodes, ri->uid);

	if (nd || !create)
		return nd;
	nd = gv_xcalloc(1, sizeof(*nd));
	nd->uid = gv_xstrdup(ri->uid);
	nd->name = gv_xstrdup(ri->name);
	nd->api_version = ri->api_version;
	nd->kind = ri->kind;
	nd->namespace = ri->namespace;
	gv_map_put(&s->nodes, nd->uid, nd);
	return nd;
}

void report_gstate_drop_if_empty(struct gstate *s, struct rnode *nd)
{
	if (nd && !nd->n)
		report_rnode_free(gv_map_del(&s->nodes, nd->uid));
}

void report_gstate_set(struct gstate *s, const struct rinfo *ri, struct rentry *e)
{
	struct rnode *nd = gstate_node(s, ri, true);
	struct rentry *old = report_rnode_find(nd, e->policy, e->rule);

	rnode_set_info(nd, ri);
	if (old) {
		report_rentry_release(old);
		*old = *e;
		return;
	}
	if (nd->n == nd->cap) {
		nd->cap = nd->cap ? nd->cap * 2 : 4;
		nd->v = gv_xrealloc(nd->v, nd->cap * sizeof(*nd->v));
	}
	nd->v[nd->n++] = *e;
	s->nresults++;
}

void report_rnode_remove(struct gstate *s, struct rnode *nd, size_t i)
{
	report_rentry_release(&nd->v[i]);
	memmove(&nd->v[i], &nd->v[i + 1], (nd->n - i - 1) * sizeof(*nd->v));
	nd->n--;
	s->nresults--;
}

bool report_gstate_remove(struct gstate *s, const char *uid, const char *policy, const char *rule)
{
	struct rnode *nd = gv_map_get(&s->nodes, uid);

	if (!nd)
		return false;
	for (size_t i = 0; i < nd->n; i++) {
		if (nd->v[i].policy == policy && nd->v[i].rule == rule) {
			report_rnode_remove(s, nd, i);
			report_gstate_drop_if_empty(s, nd);
			return true;
		}
	}
	return false;
}

struct rnode **report_gstate_nodes(const struct gstate *s, size_t *n)
{
	struct rnode **v = gv_xcalloc(s->nodes.n ? s->nodes.n : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.v[i].key)
			v[k++] = s->nodes.v[i].val;
	*n = k;
	return v;
}

/* ---- groups ---- */

char *report_group_key(const char *ns, const char *base)
{
	return gv_xasprintf("%s\x1f%s", ns ? ns : "", base);
}

struct rgroup *report_group_find(const struct report_set *rs, const char *ns, const char *base)
{
	char *key = report_group_key(ns, base);
	struct rgroup *g = gv_map_get(&rs->groups, key);

	free(key);
	return g;
}

struct rgroup *report_group_get(struct report_set *rs, const char *ns, const char *base)
{
	struct rgroup *g = report_group_find(rs, ns, base);

	if (g)
		return g;
	g = gv_xcalloc(1, sizeof(*g));
	g->key = report_group_key(ns, base);
	g->ns = gv_xstrdup(ns ? ns : "");
	g->base = gv_xstrdup(base);
	g->known = rs->loaded;
	gv_map_put(&rs->groups, g->key, g);
	return g;
}

void report_chunks_free(struct rchunk *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].name);
		free(c[i].rv);
		free(c[i].digest);
		free(c[i].inputs);
		free(c[i].lo);
		free(c[i].hi);
	}
	free(c);
}

char *report_result_key(const json_t *r)
{
	const json_t *res = json_array_get(json_object_get(r, "resources"), 0);

	return gv_xasprintf("%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", str_or(jstr(res, "kind"), ""),
			    str_or(jstr(res, "namespace"), ""), str_or(jstr(res, "name"), ""),
			    str_or(jstr(res, "uid"), ""), str_or(jstr(r, "policy"), ""),
			    str_or(jstr(r, "rule"), ""));
}

void report_object_range(const json_t *obj, char **lo, char **hi)
{
	const json_t *r;
	size_t i;

	*lo = *hi = NULL;
	json_array_foreach(json_object_get(obj, "results"), i, r)
	{
		char *k = report_result_key(r);

		if (!*lo || strcmp(k, *lo) < 0) {
			free(*lo);
			*lo = gv_xstrdup(k);
		}
		if (!*hi || strcmp(k, *hi) > 0) {
			free(*hi);
			*hi = gv_xstrdup(k);
		}
		free(k);
	}
}

void report_group_free(struct rgroup *g)
{
	if (!g)
		return;
	report_gstate_release(&g->model);
	report_gstate_free(g->synced);
	report_chunks_free(g->chunks, g->nchunks);
	free(g->key);
	free(g->ns);
	free(g->base);
	free(g);
}

void report_group_touch(struct rgroup *g)
{
	if (!g->synced)
		g->synced = report_gstate_copy(&g->model);
	g->dirty = true;
}

/* ---- the public model API ---- */

const char *report_process_name(enum report_process p)
{
	return p == REPORT_ADMISSION_REVIEW ? "admission review" : "background scan";
}

enum gv_code report_resource_from_object(const json_t *obj, struct report_resource *r,
					 struct gv_err *err)
{
	const json_t *md = json_object_get(obj, "metadata");

	memset(r, 0, sizeof(*r));
	r->api_version = jstr(obj, "apiVersion");
	r->kind = jstr(obj, "kind");
	r->namespace = jstr(md, "namespace");
	r->name = jstr(md, "name");
	r->uid = jstr(md, "uid");
	if (!r->uid || !*r->uid)
		return gv_err_set(err, GV_EINVAL, "%s %s%s%s: no metadata.uid",
				  str_or(r->kind, "?"), str_or(r->namespace, ""),
				  r->namespace ? "/" : "", str_or(r->name, "?"));
	return GV_OK;
}

char *report_policy_ref(const struct engine_policy *p)
{
	const char *ns = engine_policy_namespace(p);

	if (ns && *ns)
		return gv_xasprintf("%s/%s", ns, engine_policy_name(p));
	return gv_xstrdup(engine_policy_name(p));
}

bool report_policy_disabled(const struct engine_policy *p)
{
	const json_t *labels =
	    json_object_get(json_object_get(engine_policy_doc(p), "metadata"), "labels");

	return json_object_get(labels, REPORT_LABEL_DISABLED) != NULL;
}

bool report_policy_scored(const struct engine_policy *p)
{
	const char *v = engine_policy_annotation(p, "policies.kyverno.io/scored");

	return !(v && !strcmp(v, "false"));
}

enum engine_status report_status(const struct engine_policy *p, enum engine_status s)
{
	if (s == ENGINE_FAIL && !report_policy_scored(p))
		return ENGINE_WARN;
	return s;
}

/* ---- the journal ---- */

void report_resource_copy(struct report_set *rs, struct report_resource *dst,
			  const struct report_resource *src)
{
	dst->api_version = report_intern(rs, src->api_version);
	dst->kind = report_intern(rs, src->kind);
	dst->namespace = report_intern(rs, src->namespace);
	dst->name = report_intern(rs, src->name);
	dst->uid = report_intern(rs, src->uid);
}

struct report_entry *report_entries_copy(struct report_set *rs, const struct report_entry *e,
					 size_t n)
{
	struct report_entry *v = gv_xcalloc(n ? n : 1, sizeof(*v));

	for (size_t i = 0; i < n; i++) {
		v[i] = e[i];
		v[i].policy = report_intern(rs, e[i].policy);
		v[i].rule = report_intern(rs, e[i].rule);
		v[i].message = report_intern(rs, e[i].message);
		v[i].severity = report_intern(rs, e[i].severity);
		v[i].category = report_intern(rs, e[i].category);
		v[i].source = report_intern(rs, e[i].source);
		v[i].properties = e[i].properties ? json_deep_copy(e[i].properties) : NULL;
	}
	return v;
}

void report_jrec_release(struct jrec *j)
{
	for (size_t i = 0; i < j->n; i++)
		json_decref((json_t *)j->e[i].properties);
	free(j->e);
	free(j->uids);
}

struct jrec *report_journal_add(struct report_set *rs, enum jkind kind)
{
	struct jrec *j;

	if (!rs->opt.journal)
		return NULL;
	if (rs->njournal == rs->capjournal) {
		rs->capjournal = rs->capjournal ? rs->capjournal * 2 : 64;
		rs->journal = gv_xrealloc(rs->journal, rs->capjournal * sizeof(*rs->journal));
	}
	j = &rs->journal[rs->njournal++];
	memset(j, 0, sizeof(*j));
	j->kind = kind;
	return j;
}

struct report_set *report_set_new(const struct report_options *opt)
{
	struct report_set *rs = gv_xcalloc(1, sizeof(*rs));

	if (opt)
		rs->opt = *opt;
	rs->opt.source = rs->opt.source ? report_intern(rs, rs->opt.source) : NULL;
	if (!rs->opt.chunk_results)
		rs->opt.chunk_results = REPORT_CHUNK_RESULTS;
	if (!rs->opt.chunk_bytes)
		rs->opt.chunk_bytes = REPORT_CHUNK_BYTES;
	if (rs->opt.chunk_bytes > REPORT_MAX_CHUNK_BYTES)
		rs->opt.chunk_bytes = REPORT_MAX_CHUNK_BYTES;
	return rs;
}

void report_drop_groups(struct report_set *rs)
{
	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			report_group_free(rs->groups.v[i].val);
	gv_map_release(&rs->groups);
}

void report_set_free(struct report_set *rs)
{
	if (!rs)
		return;
	report_drop_groups(rs);
	for (size_t i = 0; i < rs->strings.cap; i++)
		if (rs->strings.v[i].key)
			free(rs->strings.v[i].val);
	gv_map_release(&rs->strings);
	gv_map_release(&rs->stamp_groups);
	for (size_t i = 0; i < rs->nobsolete; i++)
		free(rs->obsolete[i]);
	free(rs->obsolete);
	for (size_t i = 0; i < rs->njournal; i++)
		report_jrec_release(&rs->journal[i]);
	free(rs->journal);
	free(rs->digest);
	free(rs->inputs);
	free(rs);
}

size_t report_count(const struct report_set *rs)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			n += ((const struct rgroup *)rs->groups.v[i].val)->model.nresults;
	return n;
}

size_t report_dirty_count(const struct report_set *rs)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			n += ((const struct rgroup *)rs->groups.v[i].val)->dirty;
	return n;
}
