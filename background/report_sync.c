/*
 * report_sync.c - talking to the API server: listing report metadata,
 * flushing groups (create, update, delete in an order that never loses a
 * result, re-read and retry on 409) and loading what exists at start-up.
 */
#include "background/report_int.h"

#include <stdio.h>

#include "common/log.h"
#include "common/banned.h"

#define LIST_PAGE     50
#define LIST_RESTARTS 3

/* ---- the API server ---- */

static enum gv_code api_call(const struct report_api *api, const char *method, const char *path,
			     const json_t *body, json_t **out, struct kube_status *st,
			     struct gv_err *err)
{
	memset(st, 0, sizeof(*st));
	if (out)
		*out = NULL;
	return kube_request(api->client, method, path, body, out, st, err);
}

/* api_call() for answers whose metadata is all that is read (view: an object's or a list's). */
static enum gv_code api_call_meta(const struct report_api *api, const char *method,
				  const char *path, enum kube_view view, const json_t *body,
				  json_t **out, struct kube_status *st, struct gv_err *err)
{
	memset(st, 0, sizeof(*st));
	if (out)
		*out = NULL;
	return kube_request_view(api->client, method, path, view, body, out, st, err);
}

enum gv_code report_list_metadata(const struct report_api *api, const char *ns, json_t **items,
				  struct gv_err *err)
{
	char *sel = kube_escape(REPORT_SELECTOR);
	char *coll = report_path(ns, NULL);
	char *path = gv_xasprintf("%s?labelSelector=%s&resourceVersion=0", coll, sel);
	struct kube_status st;
	json_t *list = NULL;
	enum gv_code rc;

	*items = NULL;
	rc = api_call_meta(api, "GET", path, KUBE_VIEW_METADATA_LIST, NULL, &list, &st, err);
	free(path);
	free(coll);
	free(sel);
	if (rc)
		return rc;
	*items = json_incref(json_object_get(list, "items"));
	json_decref(list);
	if (!json_is_array(*items)) {
		json_decref(*items);
		*items = json_array();
	}
	return GV_OK;
}

static bool proceed(const struct report_api *api)
{
	return !api->proceed || api->proceed(api->ud);
}

/* Reads g's objects from the cluster and rebases onto them. */
static enum gv_code group_reread(struct report_set *rs, const struct report_api *api,
				 struct rgroup *g, struct report_stats *stats, struct gv_err *err)
{
	char *label = report_group_label(g->base);
	char *sel = gv_xasprintf(REPORT_LABEL_GROUP "=%s", label);
	char *esel = kube_escape(sel);
	char *coll = report_path(g->ns, NULL);
	char *path = gv_xasprintf("%s?labelSelector=%s", coll, esel);
	char *first = report_chunk_name(g->base, 0), *fpath = NULL;
	struct kube_status st;
	struct fresh f = {0};
	json_t *list = NULL, *one = NULL;
	const json_t *item;
	bool have_first = false;
	size_t i;
	enum gv_code rc;

	rc = api_call(api, "GET", path, NULL, &list, &st, err);
	if (rc)
		goto out;
	json_array_foreach(json_object_get(list, "items"), i, item)
	{
		const char *name = jstr(json_object_get(item, "metadata"), "name");
		char *b = NULL;
		size_t idx;

		if (!name || !report_parse_name(name, &b, &idx) || strcmp(b, g->base)) {
			free(b);
			continue;
		}
		free(b);
		have_first |= !strcmp(name, first);
		report_fresh_add(rs, &f, g->ns, g->base, item, NULL);
		if (stats)
			stats->read++;
	}
	if (!have_first) {
		/* chunk 0 written by someone who did not label it */
		struct gv_err e2 = {0};

		fpath = report_path(g->ns, first);
		rc = api_call(api, "GET", fpath, NULL, &one, &st, &e2);
		if (rc && st.http == 404) {
			rc = GV_OK;
		} else if (rc) {
			gv_err_set(err, rc, "%s", e2.msg);
			goto out;
		} else {
			report_fresh_add(rs, &f, g->ns, g->base, one, NULL);
			if (stats)
				stats->read++;
		}
	}
	report_group_rebase(rs, g, &f);
out:
	report_fresh_release(&f);
	json_decref(list);
	json_decref(one);
	free(label);
	free(sel);
	free(esel);
	free(coll);
	free(path);
	free(first);
	free(fpath);
	return rc;
}

/*
 * Object `name` of g now holds what we sent: content hash, digest and
 * inputs annotations (NULL = none) and key range lo..hi; resp is the
 * server's answer.
 */
static void chunk_set(struct rgroup *g, const char *name, const json_t *resp, uint64_t hash,
		      const char *digest, const char *inputs, const char *lo, const char *hi)
{
	const char *rv = jstr(json_object_get(resp, "metadata"), "resourceVersion");
	struct rchunk *c = NULL;

	for (size_t i = 0; i < g->nchunks; i++)
		if (!strcmp(g->chunks[i].name, name))
			c = &g->chunks[i];
	if (!c) {
		g->chunks = gv_xrealloc(g->chunks, (g->nchunks + 1) * sizeof(*g->chunks));
		c = &g->chunks[g->nchunks++];
		memset(c, 0, sizeof(*c));
		c->name = gv_xstrdup(name);
	}
	free(c->rv);
	c->rv = rv ? gv_xstrdup(rv) : NULL;
	free(c->digest);
	c->digest = dup_or_null(digest);
	free(c->inputs);
	c->inputs = dup_or_null(inputs);
	c->hash = hash;
	free(c->lo);
	free(c->hi);
	c->lo = dup_or_null(lo);
	c->hi = dup_or_null(hi);
}

static void chunk_drop(struct rgroup *g, const char *name)
{
	for (size_t i = 0; i < g->nchunks; i++) {
		if (!strcmp(g->chunks[i].name, name)) {
			free(g->chunks[i].name);
			free(g->chunks[i].rv);
			free(g->chunks[i].digest);
			free(g->chunks[i].inputs);
			free(g->chunks[i].lo);
			free(g->chunks[i].hi);
			memmove(&g->chunks[i], &g->chunks[i + 1],
				(g->nchunks - i - 1) * sizeof(*g->chunks));
			g->nchunks--;
			return;
		}
	}
}

struct write_order {
	struct report_op *ops; /* the plan's writes (creates and updates) */
	size_t n;
	char **lo, **hi;	   /* key range of each op's new content */
	const struct rchunk **old; /* the object each op overwrites, or NULL */
	unsigned char *state;	   /* 0 not visited, 1 visiting, 2 placed */
	struct report_op *out;
	size_t nout;
};

static bool ranges_meet(const char *alo, const char *ahi, const char *blo, const char *bhi)
{
	return alo && blo && strcmp(alo, bhi) <= 0 && strcmp(blo, ahi) <= 0;
}

/* Places op i after the writes that take over the results its target holds. */
static void order_visit(struct write_order *w, size_t i)
{
	const struct rchunk *old = w->old[i];

	if (w->state[i])
		return; /* placed, or on the current path (no cycle is possible; ignore it) */
	w->state[i] = 1;
	for (size_t j = 0; old && j < w->n; j++)
		if (j != i && ranges_meet(old->lo, old->hi, w->lo[j], w->hi[j]))
			order_visit(w, j);
	w->state[i] = 2;
	w->out[w->nout++] = w->ops[i];
}

/*
 * Orders the writes of a group's plan so that no result is missing from
 * the cluster between two writes: a writer stopped (killed, deposed) in
 * the middle leaves at worst a result in two objects, which the next
 * flush repairs, never a result in none, which nothing could bring back.
 * An object is overwritten only after the objects that take over results
 * it holds were written. Results are cut into objects in sort order, so
 * those are the new objects whose key range meets the old object's; the
 * results of one object all move the same way (up when results were added
 * before them, down when removed), so the order exists (no cycle). The
 * deletions, last in the plan, stay last. Recursion depth is at most the
 * number of objects (REPORT_MAX_CHUNKS).
 */
static void order_writes(const struct rgroup *g, struct report_op *ops, size_t n)
{
	struct write_order w = {.ops = ops};

	while (w.n < n && ops[w.n].kind != REPORT_OP_DELETE)
		w.n++;
	if (w.n < 2)
		return;
	w.lo = gv_xcalloc(w.n, sizeof(*w.lo));
	w.hi = gv_xcalloc(w.n, sizeof(*w.hi));
	w.old = gv_xcalloc(w.n, sizeof(*w.old));
	w.state = gv_xcalloc(w.n, 1);
	w.out = gv_xcalloc(w.n, sizeof(*w.out));
	for (size_t i = 0; i < w.n; i++) {
		w.lo[i] = dup_or_null(ops[i].lo);
		w.hi[i] = dup_or_null(ops[i].hi);
		for (size_t j = 0; ops[i].kind == REPORT_OP_UPDATE && j < g->nchunks; j++)
			if (!strcmp(g->chunks[j].name, ops[i].name))
				w.old[i] = &g->chunks[j];
	}
	for (size_t i = 0; i < w.n; i++)
		order_visit(&w, i);
	memcpy(ops, w.out, w.n * sizeof(*ops));
	for (size_t i = 0; i < w.n; i++) {
		free(w.lo[i]);
		free(w.hi[i]);
	}
	free(w.lo);
	free(w.hi);
	free(w.old);
	free(w.state);
	free(w.out);
}

/* Result of one write: done, conflict (re-read and retry), or failed. */
enum wres { W_OK, W_CONFLICT, W_FAIL, W_STOP };

static enum wres group_write(struct report_set *rs, const struct report_api *api, struct rgroup *g,
			     struct report_stats *stats, struct gv_err *err)
{
	struct report_op *ops = NULL;
	struct rpair *v = NULL;
	size_t n = 0, unchanged = 0;
	enum wres res = W_OK;

	if (report_group_plan(rs, g, true, &ops, &n, &unchanged, &v, err))
		return W_FAIL;
	order_writes(g, ops, n);
	if (stats)
		stats->unchanged += unchanged;
	for (size_t i = 0; i < n && res == W_OK; i++) {
		struct report_op *op = &ops[i];
		struct kube_status st;
		json_t *resp = NULL;
		struct gv_err e2 = {0};
		enum gv_code rc;
		static const char *const methods[] = {"POST", "PUT", "DELETE"};

		if (!proceed(api)) {
			res = W_STOP;
			break;
		}
		if (!op->body) {
			/* rendered now, and freed once sent: one object in memory at a time */
			op->body = report_chunk_render(rs, g, v, op->from, op->to, op->index,
						       op->nchunks, NULL);
			for (size_t j = 0; op->kind == REPORT_OP_UPDATE && j < g->nchunks; j++)
				if (!strcmp(g->chunks[j].name, op->name) && g->chunks[j].rv)
					json_object_set_new(json_object_get(op->body, "metadata"),
							    "resourceVersion",
							    json_string(g->chunks[j].rv));
		}
		/* only the answer's resourceVersion is read: no need for the server to send it all
		 */
		if (op->kind == REPORT_OP_DELETE)
			rc = api_call(api, methods[op->kind], op->path, op->body, &resp, &st, &e2);
		else
			rc = api_call_meta(api, methods[op->kind], op->path, KUBE_VIEW_METADATA,
					   op->body, &resp, &st, &e2);
		if (!rc) {
			if (op->kind == REPORT_OP_DELETE) {
				chunk_drop(g, op->name);
				if (stats)
					stats->deleted++;
			} else {
				chunk_set(g, op->name, resp, op->hash, rs->digest,
					  report_object_inputs(op->body), op->lo, op->hi);
				if (stats && op->kind == REPORT_OP_CREATE)
					stats->created++;
				else if (stats)
					stats->updated++;
			}
		} else if (st.http == 404 && op->kind == REPORT_OP_DELETE) {
			chunk_drop(g, op->name);
		} else if (st.http == 409 || (st.http == 404 && op->kind == REPORT_OP_UPDATE)) {
			gv_debug("report %s%s%s: %s: %ld %s, reading it again", g->ns,
				 *g->ns ? "/" : "", op->name, methods[op->kind], st.http,
				 st.reason);
			res = W_CONFLICT;
		} else {
			gv_err_set(err, rc, "%s", e2.msg);
			res = W_FAIL;
		}
		json_decref(resp);
		if (op->kind != REPORT_OP_DELETE) {
			json_decref(op->body);
			op->body = NULL;
		}
	}
	report_ops_free(ops, n);
	free(v);
	return res;
}

static enum gv_code group_flush(struct report_set *rs, const struct report_api *api,
				struct rgroup *g, struct report_stats *stats, bool *stopped,
				struct gv_err *err)
{
	enum gv_code rc;

	if (!g->known) {
		rc = group_reread(rs, api, g, stats, err);
		if (rc)
			return rc;
	}
	for (int attempt = 0; attempt < REPORT_MAX_ATTEMPTS; attempt++) {
		enum wres w = group_write(rs, api, g, stats, err);

		if (w == W_OK) {
			report_gstate_free(g->synced);
			g->synced = NULL;
			g->dirty = false;
			return GV_OK;
		}
		if (w == W_STOP) {
			*stopped = true;
			return GV_OK;
		}
		if (w == W_FAIL)
			return err && err->code ? err->code : GV_ENET;
		if (stats)
			stats->conflicts++;
		rc = group_reread(rs, api, g, stats, err);
		if (rc)
			return rc;
	}
	return gv_err_set(err, GV_ENET, "still conflicting after %d attempts", REPORT_MAX_ATTEMPTS);
}

enum gv_code report_flush(struct report_set *rs, const struct report_api *api,
			  struct report_stats *stats, struct gv_err *err)
{
	struct rgroup **gs;
	size_t n, kept = 0;
	enum gv_code first = GV_OK;
	bool stopped = false;

	report_stamp_cache(rs);
	gs = report_groups_sorted(rs, &n);
	for (size_t i = 0; i < n && !stopped; i++) {
		struct rgroup *g = gs[i];
		struct gv_err e = {0};
		enum gv_code rc;

		if (!g->dirty)
			continue;
		if (!proceed(api)) {
			stopped = true;
			break;
		}
		rc = group_flush(rs, api, g, stats, &stopped, &e);
		if (rc) {
			gv_warn("report %s%s%s: %s", g->ns, *g->ns ? "/" : "", g->base, e.msg);
			if (stats)
				stats->failed++;
			if (!first) {
				first = rc;
				gv_err_set(err, rc, "report %s%s%s: %s", g->ns, *g->ns ? "/" : "",
					   g->base, e.msg);
			}
		} else if (!g->dirty && !g->model.nresults && !g->nchunks && !g->synced) {
			/* an empty group with no objects: forget it */
			report_group_free(gv_map_del(&rs->groups, g->key));
		}
	}
	free(gs);
	report_stamp_uncache(rs);
	if (first || stopped)
		return first;
	/* objects of the other layout, now that their results are written elsewhere */
	for (size_t i = 0; i < rs->nobsolete; i++) {
		struct kube_status st;
		struct gv_err e = {0};
		json_t *opts = report_delete_options(NULL);
		enum gv_code rc;

		rc = api_call(api, "DELETE", rs->obsolete[i], opts, NULL, &st, &e);
		json_decref(opts);
		if (!rc || st.http == 404) {
			if (!rc && stats)
				stats->deleted++;
			free(rs->obsolete[i]);
			continue;
		}
		if (!first)
			first = gv_err_set(err, rc, "%s", e.msg);
		rs->obsolete[kept++] = rs->obsolete[i];
	}
	rs->nobsolete = kept;
	return first;
}

/* ---- start-up ---- */

static void obsolete_add(struct report_set *rs, const char *ns, const char *name)
{
	char *path = report_path(ns, name);

	for (size_t i = 0; i < rs->nobsolete; i++) {
		if (!strcmp(rs->obsolete[i], path)) {
			free(path);
			return;
		}
	}
	rs->obsolete = gv_xrealloc(rs->obsolete, (rs->nobsolete + 1) * sizeof(*rs->obsolete));
	rs->obsolete[rs->nobsolete++] = path;
}

struct loading {
	struct gv_map groups; /* group key -> struct fresh */
	struct strays strays;
};

static void load_item(struct report_set *rs, struct loading *ld, const json_t *item)
{
	const json_t *md = json_object_get(item, "metadata");
	const char *ns = str_or(jstr(md, "namespace"), ""), *name = jstr(md, "name");
	char *base = NULL, *key;
	struct fresh *f;
	size_t idx;

	if (!name)
		return;
	if (!report_parse_name(name, &base, &idx) || !report_layout_owns(rs, ns, base)) {
		/* another layout's (or a foreign name): move its results, delete it later */
		struct gstate scratch = {0};

		gv_info("report %s%s%s: not of the %s layout, its results move", ns, *ns ? "/" : "",
			name, report_layout_name(rs));
		report_fold_object(rs, &scratch, ns, "", item, &ld->strays);
		report_gstate_release(&scratch);
		obsolete_add(rs, ns, name);
		free(base);
		return;
	}
	key = report_group_key(ns, base);
	f = gv_map_get(&ld->groups, key);
	if (!f) {
		f = gv_xcalloc(1, sizeof(*f));
		f->chunks = NULL;
		gv_map_put(&ld->groups, gv_xstrdup(key), f);
	}
	report_fresh_add(rs, f, ns, base, item, &ld->strays);
	free(key);
	free(base);
}

static enum gv_code load_list(struct report_set *rs, const struct report_api *api,
			      struct loading *ld, const char *coll, int page,
			      struct report_stats *stats, struct gv_err *err)
{
	char *sel = kube_escape(REPORT_SELECTOR);
	char *path = gv_xasprintf("%s?labelSelector=%s", coll, sel);
	/* a restart folds items seen twice into one */
	struct kube_list_options o = {.limit = page, .max_restarts = LIST_RESTARTS};
	struct kube_pager *p = kube_pager_new(api->client, path, &o);
	struct kube_page *pg;
	enum gv_code rc;

	while (!(rc = kube_pager_next(p, &pg, NULL, err)) && pg) {
		const json_t *item;
		size_t i;

		json_array_foreach(json_object_get(pg->list, "items"), i, item)
		{
			load_item(rs, ld, item);
			if (stats)
				stats->read++;
		}
	}
	kube_pager_free(p);
	free(path);
	free(sel);
	return rc;
}

enum gv_code report_load(struct report_set *rs, const struct report_api *api,
			 struct report_stats *stats, struct gv_err *err)
{
	struct loading ld = {0};
	/* scoped: one namespace's (or the cluster's) reports, one object a page */
	const char *scope = api->scope;
	char *pr = scope ? report_path(scope, NULL) : report_path_all();
	char *cpr = report_path(NULL, NULL);
	int page = scope ? 1 : LIST_PAGE;
	enum gv_code rc = GV_OK;

	if (!scope || *scope)
		rc = load_list(rs, api, &ld, pr, page, stats, err);
	if (!rc && (!scope || !*scope))
		rc = load_list(rs, api, &ld, cpr, page, stats, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < ld.groups.cap; i++) {
		const char *key = ld.groups.v[i].key, *sep;
		struct fresh *f = ld.groups.v[i].val;
		char *ns;

		if (!key)
			continue;
		sep = strchr(key, '\x1f');
		ns = gv_xstrndup(key, (size_t)(sep - key));
		report_group_rebase(rs, report_group_get(rs, ns, sep + 1), f);
		free(ns);
	}
	rs->loaded = true;
	/* groups not seen do not exist in the cluster */
	for (size_t i = 0; i < rs->groups.cap; i++) {
		struct rgroup *g = rs->groups.v[i].val;

		if (rs->groups.v[i].key && !g->known)
			g->known = true;
	}
	for (size_t i = 0; i < ld.strays.n; i++) {
		struct stray *x = &ld.strays.v[i];
		struct rinfo ri = {x->uid, x->api_version, x->kind, x->namespace, x->name};
		char *base = report_base_of(rs, x->ns, x->uid, x->e.policy);

		report_model_upsert(rs, report_group_get(rs, x->ns, base), &ri, &x->e, true);
		memset(&x->e, 0, sizeof(x->e));
		free(base);
	}
out:
	for (size_t i = 0; i < ld.groups.cap; i++) {
		if (!ld.groups.v[i].key)
			continue;
		report_fresh_release(ld.groups.v[i].val);
		free(ld.groups.v[i].val);
		free((char *)ld.groups.v[i].key);
	}
	gv_map_release(&ld.groups);
	report_strays_release(&ld.strays);
	free(pr);
	free(cpr);
	return rc;
}
