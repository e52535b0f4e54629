/*
 * scan.c - the kinds of a policy, the incremental cache, and one scan
 * cycle: list, filter, evaluate on a worker pool, merge into reports
 * (scan.h).
 *
 * Memory: a cycle holds one list page at a time, as received (about 4 KB
 * a Pod), with parse_batch of its objects parsed and their engine reports;
 * the caches hold, per object, its uid and a 16-byte fingerprint per
 * policy; the report_set holds the reports.
 */
#include "background/scan.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/json.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/banned.h"

#define LIST_RESTARTS 3 /* 410s of one listing before the target is given up for the cycle */

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

/* Kyverno's version segment: v<digits>[(alpha|beta)<digits>] or "*". */
static bool is_version(const char *s)
{
	const char *p = s;

	if (!strcmp(s, "*"))
		return true;
	if (*p++ != 'v' || *p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	if (!*p)
		return true;
	if (!strncmp(p, "alpha", 5))
		p += 5;
	else if (!strncmp(p, "beta", 4))
		p += 4;
	else
		return false;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return !*p;
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
		if (!strcmp(parts[0], "*") || !is_version(parts[0]))
			goto out; /* "*" slash subresource, Kind/subresource */
		version = parts[0];
		kind = parts[1];
		break;
	case 3:
		if (is_version(parts[0]))
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

/* ---- the incremental cache ---- */

struct scan_fp {
	uint64_t pk, fp;
};

struct scan_entry {
	char *uid; /* owned */
	uint64_t hash;
	struct scan_fp *v; /* owned */
	uint32_t n, cap;
};

/* Open addressing, linear probing, backward-shift deletion. */
struct emap {
	struct scan_entry **v;
	size_t cap, n;
};

struct scan_cache {
	struct emap complete, current;
	bool finished; /* a listing finished once */
	bool listing;
};

static void entry_free(struct scan_entry *e)
{
	if (!e)
		return;
	free(e->uid);
	free(e->v);
	free(e);
}

static size_t emap_find(const struct emap *m, const char *uid, uint64_t h)
{
	size_t mask = m->cap - 1, i = (size_t)h & mask;

	while (m->v[i]) {
		if (m->v[i]->hash == h && !strcmp(m->v[i]->uid, uid))
			return i;
		i = (i + 1) & mask;
	}
	return i;
}

static struct scan_entry *emap_get(const struct emap *m, const char *uid, uint64_t h)
{
	if (!m->cap)
		return NULL;
	return m->v[emap_find(m, uid, h)];
}

static void emap_put(struct emap *m, struct scan_entry *e);

static void emap_grow(struct emap *m)
{
	struct emap old = *m;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->v = gv_xcalloc(m->cap, sizeof(*m->v));
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.v[i])
			emap_put(m, old.v[i]);
	free(old.v);
}

static void emap_put(struct emap *m, struct scan_entry *e)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap)
		emap_grow(m);
	i = emap_find(m, e->uid, e->hash);
	if (!m->v[i])
		m->n++;
	m->v[i] = e;
}

/* Takes the entry out of the map (NULL when absent). */
static struct scan_entry *emap_take(struct emap *m, const char *uid, uint64_t h)
{
	size_t mask, i, j;
	struct scan_entry *e;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	i = emap_find(m, uid, h);
	if (!(e = m->v[i]))
		return NULL;
	m->v[i] = NULL;
	m->n--;
	/* shift back the entries of the cluster that follows */
	for (j = (i + 1) & mask; m->v[j]; j = (j + 1) & mask) {
		size_t home = (size_t)m->v[j]->hash & mask;
		bool between = i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (between)
			continue;
		m->v[i] = m->v[j];
		m->v[j] = NULL;
		i = j;
	}
	return e;
}

static void emap_release(struct emap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		entry_free(m->v[i]);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

struct scan_cache *scan_cache_new(void)
{
	return gv_xcalloc(1, sizeof(struct scan_cache));
}

void scan_cache_free(struct scan_cache *c)
{
	if (!c)
		return;
	emap_release(&c->complete);
	emap_release(&c->current);
	free(c);
}

struct scan_entry *scan_cache_visit(struct scan_cache *c, const char *uid)
{
	uint64_t h = scan_hash_str(uid, SCAN_HASH_SEED);
	struct scan_entry *e;

	c->listing = true;
	if ((e = emap_get(&c->current, uid, h)))
		return e;
	e = emap_take(&c->complete, uid, h);
	if (!e) {
		e = gv_xcalloc(1, sizeof(*e));
		e->uid = gv_xstrdup(uid);
		e->hash = h;
	}
	emap_put(&c->current, e);
	return e;
}

bool scan_entry_fresh(const struct scan_entry *e, uint64_t pk, uint64_t fp)
{
	for (uint32_t i = 0; i < e->n; i++)
		if (e->v[i].pk == pk)
			return e->v[i].fp == fp;
	return false;
}

void scan_entry_set(struct scan_entry *e, uint64_t pk, uint64_t fp)
{
	for (uint32_t i = 0; i < e->n; i++) {
		if (e->v[i].pk == pk) {
			e->v[i].fp = fp;
			return;
		}
	}
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 4;
		e->v = gv_xrealloc(e->v, e->cap * sizeof(*e->v));
	}
	e->v[e->n].pk = pk;
	e->v[e->n].fp = fp;
	e->n++;
}

void scan_entry_forget(struct scan_entry *e, uint64_t pk)
{
	for (uint32_t i = 0; i < e->n; i++) {
		if (e->v[i].pk == pk) {
			e->v[i] = e->v[--e->n];
			return;
		}
	}
}

void scan_entry_prune(struct scan_entry *e, bool (*keep)(void *ud, uint64_t pk), void *ud)
{
	uint32_t k = 0;

	if (!keep)
		return;
	for (uint32_t i = 0; i < e->n; i++)
		if (keep(ud, e->v[i].pk))
			e->v[k++] = e->v[i];
	e->n = k;
}

bool scan_cache_drop(struct scan_cache *c, const char *uid)
{
	uint64_t h = scan_hash_str(uid, SCAN_HASH_SEED);
	struct scan_entry *a = emap_take(&c->current, uid, h);
	struct scan_entry *b = emap_take(&c->complete, uid, h);
	bool known = (a && a->n) || b;

	entry_free(a);
	entry_free(b);
	return known;
}

char **scan_cache_finish(struct scan_cache *c, size_t *n)
{
	char **gone = NULL;
	size_t k = 0;

	*n = 0;
	if (c->finished && c->complete.n) {
		gone = gv_xcalloc(c->complete.n, sizeof(*gone));
		for (size_t i = 0; i < c->complete.cap; i++) {
			if (!c->complete.v[i])
				continue;
			gone[k++] = c->complete.v[i]->uid;
			c->complete.v[i]->uid = NULL;
		}
	}
	emap_release(&c->complete);
	c->complete = c->current;
	memset(&c->current, 0, sizeof(c->current));
	c->finished = true;
	c->listing = false;
	*n = k;
	if (!k) {
		free(gone);
		gone = NULL;
	}
	return gone;
}

void scan_cache_abandon(struct scan_cache *c)
{
	for (size_t i = 0; i < c->current.cap; i++)
		if (c->current.v[i])
			emap_put(&c->complete, c->current.v[i]);
	free(c->current.v);
	memset(&c->current, 0, sizeof(c->current));
	c->listing = false;
}

bool scan_cache_complete(const struct scan_cache *c)
{
	return c->finished;
}

bool scan_cache_listing(const struct scan_cache *c)
{
	return c->listing;
}

size_t scan_cache_count(const struct scan_cache *c)
{
	return c->complete.n + c->current.n;
}

void scan_cache_uids(const struct scan_cache *c, const char ***v, size_t *n)
{
	const struct emap *maps[] = {&c->complete, &c->current};

	*v = gv_xrealloc(*v, (*n + scan_cache_count(c) + 1) * sizeof(**v));
	for (size_t m = 0; m < GV_ARRAY_LEN(maps); m++)
		for (size_t i = 0; i < maps[m]->cap; i++)
			if (maps[m]->v[i])
				(*v)[(*n)++] = maps[m]->v[i]->uid;
}

/* ---- the scanner ---- */

/* A collection listed by scans: a resource in all namespaces ("") or one. */
struct target {
	char *key; /* owned: "group/version/resource|namespace" */
	struct kube_resource res;
	char *ns;		  /* owned; "" = all namespaces / cluster-scoped */
	struct scan_cache *cache; /* owned */
	char *cont;		  /* owned: continue token of the listing in progress */
	char *last;		  /* owned: key of the last object processed in it */
	uint64_t *users;	  /* policy keys that listed it */
	size_t nusers;
};

struct scanner {
	struct scan_options opt;
	char *skip_ns; /* owned */
	char *only_ns; /* owned: scan_options.only_namespace */
	struct target **targets;
	size_t ntargets;
	char *cursor;	    /* owned: key of the target the next cycle starts at */
	uint64_t *retained; /* policy keys that had their report_retain() */
	size_t nretained;
	struct kube_client *client; /* owned: a child of scanner_new's, counting its requests */
};

static void target_free(struct target *t)
{
	if (!t)
		return;
	free(t->key);
	kube_resource_release(&t->res);
	free(t->ns);
	scan_cache_free(t->cache);
	free(t->cont);
	free(t->last);
	free(t->users);
	free(t);
}

struct scanner *scanner_new(struct kube_client *client, const struct scan_options *opt)
{
	struct scanner *s = gv_xcalloc(1, sizeof(*s));

	if (opt)
		s->opt = *opt;
	if (s->opt.batch_size <= 0)
		s->opt.batch_size = SCAN_DEFAULT_BATCH;
	if (s->opt.batch_size > SCAN_MAX_BATCH)
		s->opt.batch_size = SCAN_MAX_BATCH;
	if (s->opt.workers <= 0)
		s->opt.workers = SCAN_DEFAULT_WORKERS;
	if (s->opt.workers > SCAN_MAX_WORKERS)
		s->opt.workers = SCAN_MAX_WORKERS;
	if (s->opt.parse_batch <= 0)
		s->opt.parse_batch = SCAN_DEFAULT_PARSE_BATCH;
	if (s->opt.parse_batch > s->opt.batch_size)
		s->opt.parse_batch = s->opt.batch_size;
	s->skip_ns = opt && opt->skip_namespace && *opt->skip_namespace
			 ? gv_xstrdup(opt->skip_namespace)
			 : NULL;
	s->opt.skip_namespace = s->skip_ns;
	s->only_ns = opt && opt->only_namespace ? gv_xstrdup(opt->only_namespace) : NULL;
	s->opt.only_namespace = s->only_ns;
	s->client = kube_client_new_child(client);
	return s;
}

void scanner_reset(struct scanner *s)
{
	for (size_t i = 0; i < s->ntargets; i++)
		target_free(s->targets[i]);
	free(s->targets);
	s->targets = NULL;
	s->ntargets = 0;
	free(s->cursor);
	s->cursor = NULL;
	free(s->retained);
	s->retained = NULL;
	s->nretained = 0;
}

void scanner_free(struct scanner *s)
{
	if (!s)
		return;
	scanner_reset(s);
	free(s->skip_ns);
	free(s->only_ns);
	kube_client_free(s->client);
	free(s);
}

struct kube_client *scanner_client(const struct scanner *s)
{
	return s->client;
}

const char *scanner_cursor(const struct scanner *s)
{
	return s->cursor;
}

size_t scanner_requests(const struct scanner *s)
{
	return kube_client_requests(s->client);
}

enum gv_code scanner_request(struct scanner *s, const char *method, const char *path,
			     const json_t *body, json_t **out, struct kube_status *st,
			     struct gv_err *err)
{
	return scanner_request_view(s, method, path, KUBE_VIEW_FULL, body, out, st, err);
}

enum gv_code scanner_request_view(struct scanner *s, const char *method, const char *path,
				  enum kube_view view, const json_t *body, json_t **out,
				  struct kube_status *st, struct gv_err *err)
{
	memset(st, 0, sizeof(*st));
	if (out)
		*out = NULL;
	return kube_request_view(s->client, method, path, view, body, out, st, err);
}

/*
 * A list page: its text as received, the list without its items, and
 * where each item lies in the text (parsed when it is processed); or,
 * when whole pages are parsed (scan_options.parse_batch), the list parsed
 * at once (no text kept).
 */
struct page {
	struct gv_buf text;
	json_t *head;  /* apiVersion, kind, metadata (continue); the whole list when parsed */
	json_t *items; /* parsed whole: the items (borrowed from head); else NULL */
	struct gv_json_span *spans;
	size_t n;
};

static void page_release(struct page *pg)
{
	gv_buf_release(&pg->text);
	json_decref(pg->head);
	free(pg->spans);
	memset(pg, 0, sizeof(*pg));
}

/* Item i of the page (new reference), or NULL when it is not an object. */
static json_t *page_item(const struct page *pg, size_t i)
{
	const char *at;

	if (pg->items) {
		json_t *it = json_array_get(pg->items, i);
		return json_is_object(it) ? json_incref(it) : NULL;
	}
	at = pg->text.data + pg->spans[i].off;
	/* the span was checked by gv_json_parse_list(): this parse cannot fail */
	return *at == '{' ? gv_json_parse(at, pg->spans[i].len, NULL) : NULL;
}

/* GET of one list page (pg released first; filled on GV_OK). */
static enum gv_code scanner_list(struct scanner *s, const char *path, struct page *pg,
				 struct kube_status *st, struct gv_err *err)
{
	struct gv_err perr = {0};
	enum gv_code rc;

	page_release(pg);
	memset(st, 0, sizeof(*st));
	if ((rc = kube_get_raw(s->client, path, &pg->text, st, err)))
		return rc;
	if (s->opt.parse_batch >= s->opt.batch_size) {
		/* whole pages: parsed at once, freed at once */
		pg->head = gv_json_parse(pg->text.data ? pg->text.data : "", pg->text.len, &perr);
		if (pg->head && !json_is_object(pg->head)) {
			json_decref(pg->head);
			pg->head = NULL;
			snprintf(perr.msg, sizeof(perr.msg), "'{' expected");
		}
		pg->items = json_object_get(pg->head, "items");
		pg->n = json_array_size(pg->items);
		gv_buf_release(&pg->text);
	} else {
		pg->head = gv_json_parse_list(pg->text.data ? pg->text.data : "", pg->text.len,
					      "items", &pg->spans, &pg->n, &perr);
	}
	if (!pg->head) {
		page_release(pg);
		return gv_err_set(err, GV_ENET, "GET %s: response is not a list: %s", path,
				  perr.msg);
	}
	return GV_OK;
}

static enum gv_code scanner_discover(struct scanner *s, const struct scan_kind *k,
				     struct kube_resource *out, struct gv_err *err)
{
	return kube_discover(s->client, k->group, k->version, k->kind, out, err);
}

size_t scan_cursor_start(const char *const *keys, size_t n, const char *cursor)
{
	if (!cursor)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i], cursor) >= 0)
			return i;
	return 0;
}

static struct target *target_find(const struct scanner *s, const char *key)
{
	for (size_t i = 0; i < s->ntargets; i++)
		if (!strcmp(s->targets[i]->key, key))
			return s->targets[i];
	return NULL;
}

static void target_add_user(struct target *t, uint64_t pk)
{
	for (size_t i = 0; i < t->nusers; i++)
		if (t->users[i] == pk)
			return;
	t->users = gv_xrealloc(t->users, (t->nusers + 1) * sizeof(*t->users));
	t->users[t->nusers++] = pk;
}

static bool retained_has(const struct scanner *s, uint64_t pk)
{
	for (size_t i = 0; i < s->nretained; i++)
		if (s->retained[i] == pk)
			return true;
	return false;
}

/* ---- one cycle ---- */

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct cyc_policy {
	const struct engine_policy *p; /* borrowed from the set */
	char *ref;		       /* owned: report policy field */
	uint64_t pk;		       /* hash of ref: the cache's policy key */
	uint64_t fp;		       /* scan_policy_fingerprint */
	bool outside; /* reads the cluster (context entries), time or random: always evaluated */
	struct scan_kinds kinds;
	size_t *targets; /* indices into the cycle's targets */
	size_t ntargets;
	bool failed;   /* a target of it was skipped */
	bool resolved; /* some kind resolved to a listable resource (before only_namespace) */
	struct scan_outcome out;
};

struct cyc_target {
	struct target *t; /* borrowed from the scanner */
	size_t *pols;	  /* indices into the cycle's policies */
	size_t npols;
	bool done; /* listing finished in this cycle */
};

/* One object of a page. */
struct slot {
	json_t *obj; /* owned reference: parsed from the page */
	const char *uid, *ns, *name, *rv;
	const json_t *labels;	  /* namespace labels (borrowed from the state) */
	struct scan_entry *entry; /* in the target's cache */
	uint64_t *fps;		  /* per policy of the target */
	bool *need;		  /* per policy of the target: evaluate */
	bool eval;
	enum gv_code rc;
	char *error; /* owned, when rc */
	struct engine_report rep;
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	pthread_t *th;
	int nth;
	unsigned gen;
	bool stop;
	struct slot *slots;
	size_t n;
	atomic_size_t next;
	int active;
	const struct engine_policyset *set;
	const struct view_context *context; /* borrowed, or NULL */
	const struct engine_hooks *hooks;   /* of the page being evaluated, or NULL */
};

struct cycle {
	struct scanner *s;
	const struct view_state *st;
	const struct view_config *config;
	struct report_set *rs;
	const struct scan_hooks *hooks;
	struct cyc_policy *pols;
	size_t npols;
	struct cyc_target *targets;
	size_t ntargets;
	uint64_t exc_fp;
	size_t budget; /* objects left (SIZE_MAX = no limit) */
	struct scan_stats *stats;
	struct pool pool;
	char *last_ns; /* namespace-label hash cache */
	uint64_t last_ns_hash;
	uint64_t *alive; /* sorted keys of the set's policies */
	size_t nalive;
	EVP_MD_CTX *inputs; /* owned: scan_options.inputs; NULL = not recorded */
	bool inputs_lost;   /* some object was not seen exactly once */
	/* "group\nkind" of the kinds not listed in only_ns as known empty (owned) */
	char **empties;
	size_t nempties;
};

static void evaluate_slot(const struct engine_policyset *set, const struct engine_hooks *hooks,
			  struct slot *sl)
{
	struct engine_input in = {0};
	struct gv_err err = {0};

	in.object = sl->obj;
	in.operation = "CREATE";
	in.hooks = hooks;
	in.namespace_labels = sl->labels;
	sl->rc = engine_evaluate(set, &in, ENGINE_BACKGROUND, &sl->rep, &err);
	if (sl->rc)
		sl->error = gv_xstrdup(err.msg[0] ? err.msg : "evaluation failed");
}

static void *pool_main(void *ud)
{
	struct pool *p = ud;
	unsigned seen = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		for (;;) {
			size_t i = atomic_fetch_add(&p->next, 1);
			if (i >= p->n)
				break;
			if (p->slots[i].eval)
				evaluate_slot(p->set, p->hooks, &p->slots[i]);
		}
		pthread_mutex_lock(&p->mu);
		if (--p->active == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void pool_start(struct pool *p, int n, const struct engine_policyset *set,
		       const struct view_context *context)
{
	memset(p, 0, sizeof(*p));
	p->context = context;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	atomic_init(&p->next, 0);
	p->set = set;
	p->th = gv_xcalloc((size_t)n, sizeof(*p->th));
	for (int i = 0; i < n; i++) {
		if (pthread_create(&p->th[p->nth], NULL, pool_main, p)) {
			gv_warn("background: cannot start a scan worker (%d running)", p->nth);
			break;
		}
		p->nth++;
	}
}

/* Evaluates slots[0..n) on the workers (inline when none could start). */
static void pool_run(struct pool *p, struct slot *slots, size_t n)
{
	/* One page, one set of context hooks: the same call is made once per page. */
	p->hooks = p->context ? p->context->open(p->context->ud, p->set, -1) : NULL;
	if (!p->nth) {
		for (size_t i = 0; i < n; i++)
			if (slots[i].eval)
				evaluate_slot(p->set, p->hooks, &slots[i]);
		goto out;
	}
	pthread_mutex_lock(&p->mu);
	p->slots = slots;
	p->n = n;
	atomic_store(&p->next, 0);
	p->active = p->nth;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	while (p->active)
		pthread_cond_wait(&p->done, &p->mu);
	p->slots = NULL;
	p->n = 0;
	pthread_mutex_unlock(&p->mu);
out:
	if (p->context)
		p->context->close(p->context->ud, p->hooks);
	p->hooks = NULL;
}

static void pool_stop(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	free(p->th);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
}

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* One listed object into the inputs digest (scan_stats.inputs). */
static void inputs_add(EVP_MD_CTX *ctx, const char *target, const json_t *md)
{
	const char *uid = jstr(md, "uid"), *rv = jstr(md, "resourceVersion");

	EVP_DigestUpdate(ctx, target, strlen(target));
	EVP_DigestUpdate(ctx, "\x1f", 1);
	EVP_DigestUpdate(ctx, uid ? uid : "", strlen(uid ? uid : ""));
	EVP_DigestUpdate(ctx, "\x1f", 1);
	EVP_DigestUpdate(ctx, rv ? rv : "", strlen(rv ? rv : ""));
	EVP_DigestUpdate(ctx, "\n", 1);
}

static EVP_MD_CTX *inputs_begin(void)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	if (ctx)
		EVP_DigestUpdate(ctx, "gavel-scan-inputs-v1\n", 21);
	return ctx;
}

/* Ends the digest into out ("sha256:<hex>"; "" when lost or not recorded); frees ctx. */
static void inputs_end(EVP_MD_CTX *ctx, bool lost, char out[SCAN_INPUTS_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	out[0] = '\0';
	if (ctx && !lost && EVP_DigestFinal_ex(ctx, md, &n) && n == 32)
		gv_sha256_text(md, out);
	EVP_MD_CTX_free(ctx);
}

/* Fingerprint of the PolicyExceptions: uid and resourceVersion of each. */
static uint64_t exceptions_fingerprint(struct scanner *s)
{
	static const char *const versions[] = {"v2", "v2beta1"};
	struct kube_resource r = {0};
	uint64_t h = SCAN_HASH_SEED;
	char *coll = NULL;
	struct kube_pager *p;
	bool found = false;

	for (size_t i = 0; i < GV_ARRAY_LEN(versions) && !found; i++) {
		struct scan_kind k = {(char *)"kyverno.io", (char *)versions[i],
				      (char *)"PolicyException"};
		found = !scanner_discover(s, &k, &r, NULL);
	}
	if (!found)
		return h;
	coll = kube_path(&r, NULL, NULL);
	kube_resource_release(&r);
	/* no restart on 410: an error makes every object look changed */
	p = kube_pager_new(s->client, coll,
			   &(struct kube_list_options){.limit = 500, .max_restarts = -1});
	for (int pages = 0; pages < 1000; pages++) {
		struct kube_status st;
		struct gv_err err = {0};
		struct kube_page *pg;
		const json_t *it;
		size_t i;

		if (kube_pager_next(p, &pg, &st, &err)) {
			gv_debug("background: PolicyExceptions not listed: %s", err.msg);
			/* unknown (but not absent): every object looks changed rather than miss one
			 */
			if (st.http != 403 && st.http != 404)
				h = scan_hash_str(err.msg, h ^ (uint64_t)time(NULL));
			break;
		}
		if (!pg)
			break;
		json_array_foreach(json_object_get(pg->list, "items"), i, it)
		{
			const json_t *md = json_object_get(it, "metadata");
			h = scan_hash_str(jstr(md, "uid"), h);
			h = scan_hash_str(jstr(md, "resourceVersion"), h);
		}
	}
	kube_pager_free(p);
	free(coll);
	return h;
}

static int key_cmp(const void *a, const void *b)
{
	const struct cyc_target *x = a, *y = b;

	return strcmp(x->t->key, y->t->key);
}

/* Finds or makes the scanner's target for resource r in namespace ns; returns the cycle index. */
static size_t cycle_target(struct cycle *c, const struct kube_resource *r, const char *ns)
{
	char *key =
	    gv_xasprintf("%s/%s/%s|%s", r->group ? r->group : "", r->version, r->resource, ns);
	struct target *t = target_find(c->s, key);
	size_t i;

	for (i = 0; i < c->ntargets; i++)
		if (c->targets[i].t == t && t)
			break;
	if (t && i < c->ntargets) {
		free(key);
		return i;
	}
	if (!t) {
		t = gv_xcalloc(1, sizeof(*t));
		t->key = key;
		key = NULL;
		t->res.group = gv_xstrdup(r->group ? r->group : "");
		t->res.version = gv_xstrdup(r->version);
		t->res.kind = gv_xstrdup(r->kind);
		t->res.resource = gv_xstrdup(r->resource);
		t->res.namespaced = r->namespaced;
		t->res.listable = r->listable;
		t->ns = gv_xstrdup(ns);
		t->cache = scan_cache_new();
		c->s->targets =
		    gv_xrealloc(c->s->targets, (c->s->ntargets + 1) * sizeof(*c->s->targets));
		c->s->targets[c->s->ntargets++] = t;
	}
	free(key);
	c->targets = gv_xrealloc(c->targets, (c->ntargets + 1) * sizeof(*c->targets));
	memset(&c->targets[c->ntargets], 0, sizeof(*c->targets));
	c->targets[c->ntargets].t = t;
	return c->ntargets++;
}

static void policy_add_target(struct cyc_policy *cp, size_t ti)
{
	for (size_t i = 0; i < cp->ntargets; i++)
		if (cp->targets[i] == ti)
			return;
	cp->targets = gv_xrealloc(cp->targets, (cp->ntargets + 1) * sizeof(*cp->targets));
	cp->targets[cp->ntargets++] = ti;
}

char *scan_resource_key(const struct kube_resource *r)
{
	return gv_xasprintf("%s/%s/%s", r->group ? r->group : "", r->version ? r->version : "",
			    r->resource ? r->resource : "");
}

/* Whether r is one of scan_options.empty_resources. */
static bool known_empty(const struct scanner *s, const struct kube_resource *r)
{
	char *key;
	bool hit = false;

	if (!s->opt.nempty)
		return false;
	key = scan_resource_key(r);
	for (size_t i = 0; i < s->opt.nempty && !hit; i++)
		hit = !strcmp(key, s->opt.empty_resources[i]);
	free(key);
	return hit;
}

/* Records r as known empty in the cycle's namespace (once per group and kind). */
static void cycle_note_empty(struct cycle *c, const struct kube_resource *r)
{
	char *key = gv_xasprintf("%s\n%s", r->group ? r->group : "", r->kind);

	for (size_t i = 0; i < c->nempties; i++) {
		if (!strcmp(c->empties[i], key)) {
			free(key);
			return;
		}
	}
	c->empties = gv_xrealloc(c->empties, (c->nempties + 1) * sizeof(*c->empties));
	c->empties[c->nempties++] = key;
}

/* Resolves the kinds of every due policy into targets. */
static void cycle_resolve(struct cycle *c)
{
	const char *only = c->s->only_ns;

	for (size_t pi = 0; pi < c->npols; pi++) {
		struct cyc_policy *cp = &c->pols[pi];
		const char *pns = engine_policy_namespace(cp->p);

		for (size_t k = 0; k < cp->kinds.n; k++) {
			const struct scan_kind *sk = &cp->kinds.v[k];
			struct kube_resource r = {0};
			struct gv_err err = {0};
			enum gv_code rc = scanner_discover(c->s, sk, &r, &err);
			bool empty;

			if (rc == GV_ENOENT) {
				gv_debug("background: policy %s: kind %s%s%s%s%s is not served: "
					 "nothing to scan",
					 cp->ref, sk->group ? sk->group : "", sk->group ? "/" : "",
					 sk->version ? sk->version : "", sk->version ? "/" : "",
					 sk->kind);
				continue;
			}
			if (rc) {
				gv_warn("background: policy %s: kind %s not resolved, skipped: %s",
					cp->ref, sk->kind, err.msg);
				cp->failed = true;
				cp->out.skipped_kinds = true;
				continue;
			}
			if (!r.listable) {
				gv_debug("background: policy %s: %s cannot be listed", cp->ref,
					 r.resource);
				kube_resource_release(&r);
				continue;
			}
			if (*pns && !r.namespaced) {
				/* a namespaced Policy never matches cluster-scoped objects */
				kube_resource_release(&r);
				continue;
			}
			cp->resolved = true;
			empty = only && *only && r.namespaced && !(*pns && strcmp(pns, only)) &&
				known_empty(c->s, &r);
			if (empty)
				cycle_note_empty(c, &r);
			if (only && (r.namespaced ? !*only || (*pns && strcmp(pns, only)) || empty
						  : *only)) {
				/* not listed in this namespace (scan_options.only_namespace) */
				kube_resource_release(&r);
				continue;
			}
			policy_add_target(
			    cp, cycle_target(c, &r, r.namespaced ? (only ? only : pns) : ""));
			kube_resource_release(&r);
		}
	}
	/* visit order: by key; remap the policies' indices */
	{
		size_t n = c->ntargets;
		struct target **before = gv_xcalloc(n + 1, sizeof(*before));

		for (size_t i = 0; i < n; i++)
			before[i] = c->targets[i].t;
		if (n > 1)
			qsort(c->targets, n, sizeof(*c->targets), key_cmp);
		for (size_t pi = 0; pi < c->npols; pi++) {
			struct cyc_policy *cp = &c->pols[pi];
			for (size_t k = 0; k < cp->ntargets; k++) {
				struct target *t = before[cp->targets[k]];
				for (size_t j = 0; j < n; j++)
					if (c->targets[j].t == t)
						cp->targets[k] = j;
			}
		}
		free(before);
	}
	for (size_t pi = 0; pi < c->npols; pi++) {
		struct cyc_policy *cp = &c->pols[pi];
		cp->out.targets = cp->ntargets;
		for (size_t k = 0; k < cp->ntargets; k++) {
			struct cyc_target *ct = &c->targets[cp->targets[k]];
			ct->pols = gv_xrealloc(ct->pols, (ct->npols + 1) * sizeof(*ct->pols));
			ct->pols[ct->npols++] = pi;
			target_add_user(ct->t, cp->pk);
		}
	}
}

/* Hash of the labels of namespace ns (cached for runs of the same namespace). */
static uint64_t labels_hash(struct cycle *c, const char *ns, const json_t *labels)
{
	if (c->last_ns && !strcmp(c->last_ns, ns))
		return c->last_ns_hash;
	free(c->last_ns);
	c->last_ns = gv_xstrdup(ns);
	c->last_ns_hash = scan_hash_json(labels, SCAN_HASH_SEED);
	return c->last_ns_hash;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The policy keys of every policy of the set, sorted (caller frees). */
static uint64_t *alive_keys(const struct engine_policyset *set, size_t *n)
{
	size_t m = set ? engine_policyset_count(set) : 0;
	uint64_t *v = gv_xcalloc(m + 1, sizeof(*v));

	for (size_t i = 0; i < m; i++) {
		char *ref = report_policy_ref(engine_policyset_get(set, i));
		v[i] = scan_hash_str(ref, SCAN_HASH_SEED);
		free(ref);
	}
	qsort(v, m, sizeof(*v), u64_cmp);
	*n = m;
	return v;
}

static bool policy_alive(void *ud, uint64_t pk)
{
	const struct cycle *c = ud;

	return bsearch(&pk, c->alive, c->nalive, sizeof(*c->alive), u64_cmp) != NULL;
}

/* Prepares one page object: filters, cache, what to evaluate. False: left out. */
static bool slot_prepare(struct cycle *c, struct cyc_target *ct, struct slot *sl, json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	const struct kube_resource *r = &ct->t->res;
	bool is_ns_kind = !*r->group && !strcmp(r->kind, "Namespace");
	uint64_t lh;

	sl->obj = obj;
	sl->uid = jstr(md, "uid");
	sl->ns = jstr(md, "namespace");
	sl->name = jstr(md, "name");
	sl->rv = jstr(md, "resourceVersion");
	if (!sl->ns)
		sl->ns = "";
	if (!sl->name)
		sl->name = "";
	if (!sl->uid || !*sl->uid) {
		gv_warn("background: %s %s%s%s has no metadata.uid: not scanned", r->kind, sl->ns,
			*sl->ns ? "/" : "", sl->name);
		return false;
	}
	if (c->s->skip_ns &&
	    (!strcmp(sl->ns, c->s->skip_ns) || (is_ns_kind && !strcmp(sl->name, c->s->skip_ns))))
		goto filtered;
	if (view_config_filtered(c->config, r->group, r->version, r->kind, "", sl->ns, sl->name))
		goto filtered;
	sl->labels = view_state_namespace_labels(c->st, is_ns_kind ? sl->name : sl->ns);
	if (is_ns_kind && !sl->labels)
		sl->labels = json_object_get(md, "labels");
	lh = labels_hash(c, is_ns_kind ? sl->name : sl->ns, sl->labels);
	sl->entry = scan_cache_visit(ct->t->cache, sl->uid);
	scan_entry_prune(sl->entry, policy_alive, c);
	sl->fps = gv_xcalloc(ct->npols + 1, sizeof(*sl->fps));
	sl->need = gv_xcalloc(ct->npols + 1, sizeof(*sl->need));
	for (size_t k = 0; k < ct->npols; k++) {
		const struct cyc_policy *cp = &c->pols[ct->pols[k]];
		uint64_t fp = scan_hash_str(sl->rv, SCAN_HASH_SEED);

		fp = scan_hash(&lh, sizeof(lh), fp);
		fp = scan_hash(&cp->fp, sizeof(cp->fp), fp);
		fp = scan_hash(&c->exc_fp, sizeof(c->exc_fp), fp);
		sl->fps[k] = fp;
		sl->need[k] = !c->s->opt.incremental || cp->outside ||
			      !scan_entry_fresh(sl->entry, cp->pk, fp);
		sl->eval |= sl->need[k];
	}
	return true;
filtered:
	if (scan_cache_drop(ct->t->cache, sl->uid))
		report_delete_object(c->rs, NULL, sl->uid);
	c->stats->filtered++;
	return false;
}

static void slot_release(struct slot *sl)
{
	json_decref(sl->obj);
	free(sl->fps);
	free(sl->need);
	free(sl->error);
	if (sl->eval && !sl->rc)
		engine_report_release(&sl->rep);
	memset(sl, 0, sizeof(*sl));
}

/* Merges one evaluated (or unchanged) object into the reports. */
static void slot_commit(struct cycle *c, struct cyc_target *ct, struct slot *sl, int64_t now)
{
	const struct kube_resource *r = &ct->t->res;
	struct report_resource res;
	struct gv_err err = {0};
	bool *done;

	for (size_t k = 0; k < ct->npols; k++) {
		struct cyc_policy *cp = &c->pols[ct->pols[k]];
		cp->out.objects++;
		if (!sl->need[k])
			cp->out.unchanged++;
	}
	if (!sl->eval) {
		c->stats->unchanged++;
		return;
	}
	if (sl->rc) {
		gv_warn("background: %s %s%s%s: cannot be evaluated: %s", r->kind, sl->ns,
			*sl->ns ? "/" : "", sl->name, sl->error);
		c->stats->failed++;
		for (size_t k = 0; k < ct->npols; k++) {
			struct cyc_policy *cp = &c->pols[ct->pols[k]];
			if (!sl->need[k])
				continue;
			scan_entry_forget(sl->entry, cp->pk);
			cp->out.failed++;
		}
		return;
	}
	c->stats->evaluated++;
	if (report_resource_from_object(sl->obj, &res, &err)) {
		gv_warn("background: %s %s%s%s: %s", r->kind, sl->ns, *sl->ns ? "/" : "", sl->name,
			err.msg);
		return;
	}
	done = gv_xcalloc(ct->npols + 1, sizeof(*done));
	for (size_t i = 0; i < sl->rep.n; i++) {
		const struct engine_response *resp = &sl->rep.v[i];
		size_t k;

		for (k = 0; k < ct->npols; k++)
			if (c->pols[ct->pols[k]].p == resp->policy)
				break;
		if (k == ct->npols || !sl->need[k] || done[k])
			continue;
		done[k] = true;
		if (report_put_response(c->rs, &res, resp, ENGINE_BACKGROUND, now, 0, &err)) {
			gv_warn("background: %s %s%s%s: policy %s: %s", r->kind, sl->ns,
				*sl->ns ? "/" : "", sl->name, c->pols[ct->pols[k]].ref, err.msg);
			gv_err_clear(&err);
			continue;
		}
		scan_events_response(c->s->opt.events, sl->obj, resp);
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *rr = &resp->rules[j];
			c->stats->results++;
			if (c->s->opt.results) {
				/* a background scan evaluates as a CREATE (section 6.5) */
				struct view_result_labels ml = {
				    .resource_kind = r->kind,
				    .resource_namespace = sl->ns,
				    .resource_request_operation = "create",
				    .rule_name = rr->rule,
				    .rule_result = engine_status_name(rr->status),
				    .rule_execution_cause = "background_scan"};
				view_result_labels_policy(&ml, resp->policy, rr->action);
				view_result_count(c->s->opt.results, &ml);
				view_result_observe(c->s->opt.duration, &ml, rr->seconds);
			}
		}
	}
	for (size_t k = 0; k < ct->npols; k++) {
		struct cyc_policy *cp = &c->pols[ct->pols[k]];
		if (!sl->need[k])
			continue;
		if (!done[k]) {
			/* no response: the policy does not apply (any more): no results */
			report_replace(c->rs, &res, cp->ref, NULL, 0, NULL);
		}
		cp->out.evaluated++;
		scan_entry_set(sl->entry, cp->pk, sl->fps[k]);
	}
	free(done);
}

static bool proceed(const struct cycle *c)
{
	return !c->hooks || !c->hooks->proceed || c->hooks->proceed(c->hooks->ud);
}

enum list_end { L_FINISHED, L_BUDGET, L_SKIPPED, L_STOPPED, L_FAILED };

/* Fills apiVersion and kind of list items that lack them. */
static void fill_kind(json_t *item, const json_t *page)
{
	const char *lk = jstr(page, "kind"), *av = jstr(page, "apiVersion");

	if (!jstr(item, "kind") && lk) {
		size_t n = strlen(lk);
		if (n > 4 && !strcmp(lk + n - 4, "List"))
			json_object_set_new(item, "kind", json_stringn(lk, n - 4));
	}
	if (!jstr(item, "apiVersion") && av)
		json_object_set_new(item, "apiVersion", json_string(av));
}

static char *object_key(const json_t *item)
{
	const json_t *md = json_object_get(item, "metadata");
	const char *ns = jstr(md, "namespace"), *name = jstr(md, "name");

	if (ns && *ns)
		return gv_xasprintf("%s/%s", ns, name ? name : "");
	return gv_xstrdup(name ? name : "");
}

/*
 * The page fetcher. With the prefetch option, one thread (so one
 * keep-alive connection) per cycle makes the list requests, the next page
 * requested while the scanning thread evaluates the current one; at most
 * one request is outstanding, so at most two pages are in memory. Without
 * it, the scanning thread makes each request when it needs the page: the
 * page is then parsed in the heap arena of the thread that frees it,
 * instead of growing one arena per short-lived fetcher thread (glibc keeps
 * what a thread freed into another's arena resident).
 */
struct fetcher {
	struct scanner *s;
	pthread_t th;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *path; /* owned: the request to make; NULL = none */
	bool busy;  /* a request was submitted and its answer not taken yet */
	bool done;  /* the answer is there */
	bool stop;
	struct page page; /* the answer (owned until taken) */
	struct kube_status st;
	struct gv_err err;
	enum gv_code rc;
};

static void *fetcher_main(void *ud)
{
	struct fetcher *f = ud;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		char *path;
		struct page page = {0};
		struct kube_status st;
		struct gv_err err = {0};
		enum gv_code rc;

		while (!f->stop && !f->path)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop)
			break;
		path = f->path;
		f->path = NULL;
		pthread_mutex_unlock(&f->mu);
		rc = scanner_list(f->s, path, &page, &st, &err);
		free(path);
		pthread_mutex_lock(&f->mu);
		f->page = page;
		f->st = st;
		f->err = err;
		f->rc = rc;
		f->done = true;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

static void fetcher_start(struct fetcher *f, struct scanner *s)
{
	memset(f, 0, sizeof(*f));
	f->s = s;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	if (!s->opt.prefetch)
		return; /* the scanning thread asks for each page itself */
	f->running = !pthread_create(&f->th, NULL, fetcher_main, f);
}

/* Submits a request (path taken). */
static void fetcher_submit(struct fetcher *f, char *path)
{
	if (!f->running) {
		/* no thread: the request is made when the answer is asked for */
		f->path = path;
		f->busy = true;
		return;
	}
	pthread_mutex_lock(&f->mu);
	f->path = path;
	f->busy = true;
	f->done = false;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Waits for the answer of the submitted request and takes it (page released first). */
static enum gv_code fetcher_take(struct fetcher *f, struct page *page, struct kube_status *st,
				 struct gv_err *err)
{
	enum gv_code rc;

	if (!f->running) {
		char *path = f->path;
		f->path = NULL;
		f->busy = false;
		rc = scanner_list(f->s, path, page, st, err);
		free(path);
		return rc;
	}
	pthread_mutex_lock(&f->mu);
	while (!f->done)
		pthread_cond_wait(&f->cv, &f->mu);
	page_release(page);
	*page = f->page;
	*st = f->st;
	*err = f->err;
	rc = f->rc;
	memset(&f->page, 0, sizeof(f->page));
	f->done = false;
	f->busy = false;
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/* Drops an answer nobody wants (the cycle stopped). */
static void fetcher_discard(struct fetcher *f)
{
	struct page page = {0};
	struct kube_status st;
	struct gv_err err = {0};

	if (f->busy && f->running) {
		fetcher_take(f, &page, &st, &err);
		page_release(&page);
	} else if (f->busy) {
		free(f->path);
		f->path = NULL;
		f->busy = false;
	}
}

static void fetcher_stop(struct fetcher *f)
{
	fetcher_discard(f);
	if (f->running) {
		pthread_mutex_lock(&f->mu);
		f->stop = true;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
	}
	free(f->path);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
}

static char *page_path(const char *coll, size_t limit, const char *cont)
{
	char *econt = cont ? kube_escape(cont) : NULL;
	char *path = gv_xasprintf("%s?limit=%zu%s%s", coll, limit, econt ? "&continue=" : "",
				  econt ? econt : "");

	free(econt);
	return path;
}

/* Index of the first item of a page after `last` (items up to it were processed before). */
static size_t first_fresh(const struct page *pg, const char *last)
{
	size_t i;

	for (i = 0; last && i < pg->n; i++) {
		json_t *item = page_item(pg, i);
		char *key = object_key(item);
		int cmp = strcmp(key, last);
		free(key);
		json_decref(item);
		if (cmp > 0)
			break;
	}
	return last ? i : 0;
}

/* The listing of t is complete: objects not seen are gone. */
static void target_finished(struct cycle *c, struct cyc_target *ct)
{
	struct target *t = ct->t;
	size_t ngone = 0;
	char **gone = scan_cache_finish(t->cache, &ngone);

	for (size_t i = 0; i < ngone; i++) {
		report_delete_object(c->rs, NULL, gone[i]);
		free(gone[i]);
	}
	free(gone);
	c->stats->deleted += ngone;
	free(t->last);
	t->last = NULL;
	ct->done = true;
}

/* Evaluates and commits slots[0..n) (released after). */
static void batch_run(struct cycle *c, struct cyc_target *ct, struct slot *slots, size_t n)
{
	double t0 = mono_now();
	int64_t now;

	pool_run(&c->pool, slots, n);
	c->stats->eval_seconds += mono_now() - t0;
	t0 = mono_now();
	now = (int64_t)time(NULL);
	for (size_t i = 0; i < n; i++) {
		slot_commit(c, ct, &slots[i], now);
		slot_release(&slots[i]);
	}
	c->stats->commit_seconds += mono_now() - t0;
	metrics_add(c->s->opt.processed, NULL, (double)n);
}

/*
 * Evaluates the items of a page from index `from` and merges them into
 * the reports, parse_batch items at a time.
 */
static void page_process(struct cycle *c, struct cyc_target *ct, const struct page *pg, size_t from)
{
	struct target *t = ct->t;
	size_t cap = (size_t)c->s->opt.parse_batch, ns = 0;
	struct slot *slots = gv_xcalloc((pg->n < cap ? pg->n : cap) + 1, sizeof(*slots));

	for (size_t i = 0; i < pg->n; i++) {
		json_t *item = page_item(pg, i);

		if (c->inputs) {
			if (item)
				inputs_add(c->inputs, t->key, json_object_get(item, "metadata"));
			else
				c->inputs_lost = true;
		}
		if (!item)
			continue;
		if (i < from) {
			/* processed before the continue token expired: only mark it seen */
			const char *uid = jstr(json_object_get(item, "metadata"), "uid");
			if (uid)
				scan_cache_visit(t->cache, uid);
			json_decref(item);
			continue;
		}
		fill_kind(item, pg->head);
		free(t->last);
		t->last = object_key(item);
		if (c->budget != SIZE_MAX)
			c->budget--;
		if (!slot_prepare(c, ct, &slots[ns], item)) {
			slot_release(&slots[ns]);
			continue;
		}
		ns++;
		if (ns == cap) {
			batch_run(c, ct, slots, ns);
			ns = 0;
		}
	}
	batch_run(c, ct, slots, ns);
	free(slots);
}

/*
 * Lists one target (continuing its listing in progress) within the budget
 * (with the prefetch option, the next page requested while the current one
 * is evaluated).
 */
static enum list_end list_target(struct cycle *c, struct cyc_target *ct, struct fetcher *f,
				 struct gv_err *err)
{
	struct target *t = ct->t;
	char *coll = kube_path(&t->res, *t->ns ? t->ns : NULL, NULL);
	/* resumed without a token (it expired): skip what was processed */
	bool skipping = t->last && !t->cont;
	int restarts = 0;
	enum list_end end = L_FINISHED;
	struct page page = {0};

	c->stats->targets++;
	if (t->cont || t->last)
		c->inputs_lost = true; /* continued: this cycle does not see its start */
	for (;;) {
		struct kube_status st;
		struct gv_err e = {0};
		size_t n, from, fresh, left;
		const char *next;
		double t0;
		enum gv_code rc;

		if (!f->busy) {
			if (!proceed(c)) {
				end = L_STOPPED;
				break;
			}
			if (c->budget == 0) {
				end = L_BUDGET;
				break;
			}
			fetcher_submit(f, page_path(coll,
						    c->budget < (size_t)c->s->opt.batch_size
							? c->budget
							: (size_t)c->s->opt.batch_size,
						    t->cont));
		}
		t0 = mono_now();
		rc = fetcher_take(f, &page, &st, &e);
		c->stats->list_seconds += mono_now() - t0;
		if (rc) {
			if (st.http == 410 && restarts < LIST_RESTARTS) {
				gv_info("background: listing %s: continue token expired, "
					"listing again from the start",
					t->key);
				restarts++;
				free(t->cont);
				t->cont = NULL;
				skipping = t->last != NULL;
				c->inputs_lost = true; /* a page seen twice */
				continue;
			}
			if (st.http == 403 || st.http == 404 || st.http == 405) {
				gv_warn("background: cannot list %s%s%s: %s; skipped",
					t->res.resource, *t->ns ? " in namespace " : "", t->ns,
					e.msg);
				if (st.http == 403)
					c->stats->forbidden++;
				end = L_SKIPPED;
				break;
			}
			gv_err_set(err, GV_ENET, "listing %s: %s", t->key, e.msg);
			end = L_FAILED;
			break;
		}
		c->stats->pages++;
		n = page.n;
		c->stats->listed += n;
		from = skipping ? first_fresh(&page, t->last) : 0;
		fresh = n - from;
		if (fresh)
			skipping = false;
		next = jstr(json_object_get(page.head, "metadata"), "continue");
		next = next && *next ? next : NULL;
		left = c->budget == SIZE_MAX ? SIZE_MAX
					     : c->budget - (fresh < c->budget ? fresh : c->budget);
		/* ask for the next page now; evaluate this one meanwhile */
		if (c->s->opt.prefetch && next && left && proceed(c))
			fetcher_submit(f, page_path(coll,
						    left < (size_t)c->s->opt.batch_size
							? left
							: (size_t)c->s->opt.batch_size,
						    next));
		page_process(c, ct, &page, from);
		free(t->cont);
		t->cont = next ? gv_xstrdup(next) : NULL;
		if (c->hooks && c->hooks->page_done)
			c->hooks->page_done(c->hooks->ud);
		if (!t->cont) {
			/* the end: complete (when skipping, everything was processed before) */
			target_finished(c, ct);
			end = L_FINISHED;
			break;
		}
	}
	fetcher_discard(f);
	page_release(&page);
	free(coll);
	return end;
}

/* report_retain() for the policies whose every target is known, once per policy. */
static void cycle_retain(struct cycle *c)
{
	for (size_t pi = 0; pi < c->npols; pi++) {
		struct cyc_policy *cp = &c->pols[pi];
		const char **uids = NULL;
		size_t n = 0;
		bool ready = cp->kinds.complete && cp->ntargets && !cp->failed;

		/*
		 * Listed elsewhere but not in this namespace: none of the objects its
		 * results in this namespace's reports are about is there.
		 */
		if (c->s->only_ns && !cp->ntargets)
			ready = cp->kinds.complete && cp->resolved && !cp->failed;
		for (size_t k = 0; ready && k < cp->ntargets; k++)
			ready = scan_cache_complete(c->targets[cp->targets[k]].t->cache);
		if (!ready || retained_has(c->s, cp->pk))
			continue;
		for (size_t k = 0; k < cp->ntargets; k++)
			scan_cache_uids(c->targets[cp->targets[k]].t->cache, &uids, &n);
		report_retain_since(c->rs, cp->ref, uids, n, c->s->opt.retain_since);
		free(uids);
		cp->out.retained = true;
		c->s->retained =
		    gv_xrealloc(c->s->retained, (c->s->nretained + 1) * sizeof(*c->s->retained));
		c->s->retained[c->s->nretained++] = cp->pk;
	}
}

/*
 * report_retain_objects() for the targets listed to the end in this cycle:
 * results about objects of their kind that are gone go, whatever the
 * policy (admission results of policies not scanned, the resource layout's
 * whole report).
 */
static void cycle_retain_objects(struct cycle *c)
{
	for (size_t i = 0; i < c->ntargets; i++) {
		const struct target *t = c->targets[i].t;
		const char **uids = NULL;
		const char *ns;
		size_t n = 0;

		if (!c->targets[i].done || !scan_cache_complete(t->cache))
			continue;
		ns = *t->ns ? t->ns : t->res.namespaced ? NULL : "";
		scan_cache_uids(t->cache, &uids, &n);
		report_retain_objects(c->rs, t->res.group, t->res.kind, ns, uids, n,
				      c->s->opt.retain_since);
		free(uids);
	}
	/* none in the cluster, so none in this namespace */
	for (size_t i = 0; i < c->nempties; i++) {
		char *nl = strchr(c->empties[i], '\n');

		*nl = '\0';
		report_retain_objects(c->rs, c->empties[i], nl + 1, c->s->only_ns, NULL, 0,
				      c->s->opt.retain_since);
		*nl = '\n';
	}
}

/* Drops the targets no policy of the set uses any more. */
static void scanner_gc(struct scanner *s, const uint64_t *alive, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < s->ntargets; i++) {
		struct target *t = s->targets[i];
		size_t u = 0;

		for (size_t j = 0; j < t->nusers; j++)
			if (bsearch(&t->users[j], alive, n, sizeof(*alive), u64_cmp))
				t->users[u++] = t->users[j];
		t->nusers = u;
		if (!u && t->users) {
			gv_debug("background: %s no longer scanned: cache dropped", t->key);
			target_free(t);
			continue;
		}
		s->targets[k++] = t;
	}
	s->ntargets = k;
	k = 0;
	for (size_t i = 0; i < s->nretained; i++)
		if (bsearch(&s->retained[i], alive, n, sizeof(*alive), u64_cmp))
			s->retained[k++] = s->retained[i];
	s->nretained = k;
}

/* The policies of a cycle (the background ones of due) and their targets. */
static void cycle_begin(struct cycle *c, struct scanner *s, const struct view_state *st,
			const struct engine_policy *const *due, size_t ndue, bool gc)
{
	c->s = s;
	c->st = st;
	c->config = view_state_config(st);
	c->budget = s->opt.resource_limit ? s->opt.resource_limit : SIZE_MAX;
	c->pols = gv_xcalloc(ndue + 1, sizeof(*c->pols));
	for (size_t i = 0; i < ndue; i++) {
		struct cyc_policy *cp;

		if (!due[i] || !engine_policy_background(due[i]))
			continue;
		cp = &c->pols[c->npols++];
		cp->p = due[i];
		cp->ref = report_policy_ref(due[i]);
		cp->pk = scan_hash_str(cp->ref, SCAN_HASH_SEED);
		cp->fp = scan_policy_fingerprint(due[i]);
		cp->outside = engine_doc_reads_outside(engine_policy_doc(due[i]));
		scan_policy_kinds(due[i], &cp->kinds);
	}
	c->alive = alive_keys(view_state_policyset(st), &c->nalive);
	if (gc)
		scanner_gc(s, c->alive, c->nalive);
	cycle_resolve(c);
}

/* Whether some kind of a policy of the cycle could not be resolved. */
static bool cycle_failed_kinds(const struct cycle *c)
{
	for (size_t i = 0; i < c->npols; i++)
		if (c->pols[i].failed)
			return true;
	return false;
}

static void cycle_end(struct cycle *c)
{
	for (size_t i = 0; i < c->npols; i++) {
		free(c->pols[i].ref);
		free(c->pols[i].targets);
		scan_kinds_release(&c->pols[i].kinds);
	}
	for (size_t i = 0; i < c->ntargets; i++)
		free(c->targets[i].pols);
	free(c->pols);
	free(c->targets);
	free(c->last_ns);
	free(c->alive);
	for (size_t i = 0; i < c->nempties; i++)
		free(c->empties[i]);
	free(c->empties);
	EVP_MD_CTX_free(c->inputs);
	c->inputs = NULL;
}

enum gv_code scanner_inputs(struct scanner *s, const struct view_state *st,
			    const struct engine_policy *const *due, size_t ndue,
			    char out[SCAN_INPUTS_LEN], size_t *objects)
{
	struct scan_stats stats = {0};
	struct cycle c = {0};
	size_t listed = 0;
	bool lost = false;

	c.stats = &stats;
	cycle_begin(&c, s, st, due, ndue, false);
	c.inputs = inputs_begin();
	lost = cycle_failed_kinds(&c);
	for (size_t i = 0; i < c.ntargets && c.inputs && !lost; i++) {
		const struct target *t = c.targets[i].t;
		char *coll;
		struct kube_list_options lo = {
		    .limit = s->opt.batch_size, .metadata = true, .max_restarts = -1};
		struct kube_pager *p;
		struct kube_page *pg;

		if (!c.targets[i].npols)
			continue;
		coll = kube_path(&t->res, *t->ns ? t->ns : NULL, NULL);
		p = kube_pager_new(s->client, coll, &lo);
		while (!lost) {
			struct kube_status st2;
			struct gv_err e = {0};
			const json_t *item;
			size_t k;

			/* no restart on 410: a listing seen twice is not the inputs of one cycle */
			if (kube_pager_next(p, &pg, &st2, &e)) {
				gv_debug("background: %s: inputs not known: %s", t->key, e.msg);
				lost = true;
			}
			if (!pg)
				break;
			json_array_foreach(json_object_get(pg->list, "items"), k, item)
			{
				if (!json_is_object(item))
					lost = true;
				else
					inputs_add(c.inputs, t->key,
						   json_object_get(item, "metadata"));
				listed++;
			}
		}
		kube_pager_free(p);
		free(coll);
	}
	inputs_end(c.inputs, lost, out);
	c.inputs = NULL;
	cycle_end(&c);
	if (objects)
		*objects = listed;
	return GV_OK;
}

enum gv_code scanner_run(struct scanner *s, const struct view_state *st,
			 const struct engine_policy *const *due, size_t ndue, struct report_set *rs,
			 const struct scan_hooks *hooks, struct scan_outcome *out,
			 struct scan_stats *stats, struct gv_err *err)
{
	struct scan_stats local = {0};
	struct cycle c = {0};
	struct fetcher fetch;
	const struct engine_policyset *set = view_state_policyset(st);
	size_t requests0 = scanner_requests(s), start, visited = 0;
	double t0 = mono_now();
	enum gv_code rc = GV_OK;
	const char **keys = NULL;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	if (out)
		memset(out, 0, ndue * sizeof(*out));
	c.rs = rs;
	c.hooks = hooks;
	c.stats = stats;
	cycle_begin(&c, s, st, due, ndue, true);
	if (s->opt.inputs)
		c.inputs = inputs_begin();
	if (c.ntargets && s->opt.incremental)
		c.exc_fp = exceptions_fingerprint(s);
	keys = gv_xcalloc(c.ntargets + 1, sizeof(*keys));
	for (size_t i = 0; i < c.ntargets; i++)
		keys[i] = c.targets[i].t->key;
	start = scan_cursor_start(keys, c.ntargets, s->cursor);
	pool_start(&c.pool, s->opt.workers, set, s->opt.context);
	fetcher_start(&fetch, s);
	for (; visited < c.ntargets; visited++) {
		struct cyc_target *ct = &c.targets[(start + visited) % c.ntargets];
		enum list_end end;

		if (!ct->npols)
			continue;
		if (c.budget == 0) {
			stats->partial = true;
			break;
		}
		end = list_target(&c, ct, &fetch, err);
		if (end == L_SKIPPED) {
			c.inputs_lost = true;
			scan_cache_abandon(ct->t->cache);
			free(ct->t->cont);
			ct->t->cont = NULL;
			free(ct->t->last);
			ct->t->last = NULL;
			for (size_t k = 0; k < ct->npols; k++) {
				c.pols[ct->pols[k]].failed = true;
				c.pols[ct->pols[k]].out.skipped_kinds = true;
			}
			continue;
		}
		if (end == L_STOPPED) {
			stats->stopped = true;
			break;
		}
		if (end == L_FAILED) {
			rc = GV_ENET;
			break;
		}
		if (end == L_BUDGET) {
			stats->partial = true;
			break;
		}
	}
	fetcher_stop(&fetch);
	pool_stop(&c.pool);
	/* where the next cycle starts */
	free(s->cursor);
	s->cursor = NULL;
	if (stats->partial && c.ntargets) {
		struct cyc_target *ct = &c.targets[(start + visited) % c.ntargets];
		if (ct->done)
			ct = &c.targets[(start + visited + 1) % c.ntargets];
		s->cursor = gv_xstrdup(ct->t->key);
	}
	if (!rc && !stats->stopped) {
		cycle_retain(&c);
		cycle_retain_objects(&c);
	}
	for (size_t i = 0, k = 0; i < ndue; i++) {
		if (!due[i] || !engine_policy_background(due[i]))
			continue;
		if (out)
			out[i] = c.pols[k].out;
		k++;
	}
	if (c.inputs) {
		inputs_end(c.inputs,
			   c.inputs_lost || rc || stats->stopped || stats->partial ||
			       cycle_failed_kinds(&c),
			   stats->inputs);
		c.inputs = NULL;
	}
	cycle_end(&c);
	free(keys);
	stats->requests = scanner_requests(s) - requests0;
	stats->seconds = mono_now() - t0;
	return rc;
}
