/*
 * hash.c - FNV-1a hashing and the string-keyed hash map (common/hash.h).
 */
#include "common/hash.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/gv.h"
#include "common/banned.h"

uint64_t gv_hash_str(const char *s)
{
	return gv_fnv1a64(s, strlen(s), GV_FNV1A64_OFFSET);
}

/* The slot of key, or the empty slot where it would go. cap > 0. */
static size_t map_find(const struct gv_map *m, const char *key, uint64_t h)
{
	size_t mask = m->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		if (!m->v[i].key || (m->v[i].h == h && !strcmp(m->v[i].key, key)))
			return i;
	}
}

void *gv_map_get(const struct gv_map *m, const char *key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	i = map_find(m, key, gv_hash_str(key));
	return m->v[i].key ? m->v[i].val : NULL;
}

static void map_grow(struct gv_map *m)
{
	struct gv_map old = *m;

	m->cap = old.cap ? old.cap * 2 : 16;
	m->v = gv_xcalloc(m->cap, sizeof(*m->v));
	for (size_t i = 0; i < old.cap; i++) {
		if (old.v[i].key)
			m->v[map_find(m, old.v[i].key, old.v[i].h)] = old.v[i];
	}
	free(old.v);
}

void gv_map_put(struct gv_map *m, const char *key, void *val)
{
	uint64_t h = gv_hash_str(key);
	size_t i;

	if ((m->n + 1) * 4 > m->cap * 3)
		map_grow(m);
	i = map_find(m, key, h);
	if (!m->v[i].key)
		m->n++;
	m->v[i] = (struct gv_map_slot){key, h, val};
}

void *gv_map_del(struct gv_map *m, const char *key)
{
	size_t mask, i, j;
	void *val;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	i = map_find(m, key, gv_hash_str(key));
	if (!m->v[i].key)
		return NULL;
	val = m->v[i].val;
	m->v[i].key = NULL;
	m->n--;
	/* backward shift: move up every later entry whose home is not between i and j */
	for (j = (i + 1) & mask; m->v[j].key; j = (j + 1) & mask) {
		size_t k = m->v[j].h & mask;
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);

		if (stays)
			continue;
		m->v[i] = m->v[j];
		m->v[j].key = NULL;
		i = j;
	}
	return val;
}

void gv_map_release(struct gv_map *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}
