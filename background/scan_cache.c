/*
 * scan_cache.c - the incremental cache: per object of a target, its uid
 * and a fingerprint per policy, so a scan skips objects whose inputs did
 * not change (scan.h).
 */
#include "background/scan_int.h"

#include <stdlib.h>
#include <string.h>
#include "common/banned.h"

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
