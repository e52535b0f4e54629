/*
 * hash.h - FNV-1a and word-at-a-time hashing, and a string-keyed hash map (open addressing,
 * linear probing, backward-shift deletion). Not thread-safe: a map belongs
 * to one thread or to its owner's lock.
 */
#ifndef GV_COMMON_HASH_H
#define GV_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GV_FNV1A64_OFFSET 0xcbf29ce484222325ULL
#define GV_FNV1A64_PRIME  0x100000001b3ULL

/* FNV-1a (64 bits) of n bytes at p, continuing from h (GV_FNV1A64_OFFSET to start). */
static inline uint64_t gv_fnv1a64(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= GV_FNV1A64_PRIME;
	}
	return h;
}

#define GV_HASH_WORDS_K 0x9e3779b97f4a7c15ULL

/*
 * A 64-bit hash of n bytes at p, eight bytes a step, continuing from h (any
 * start value): several times fewer instructions than gv_fnv1a64() on
 * strings longer than a few bytes. For in-memory tables only: its values
 * may change between builds, so never store or print them.
 */
static inline uint64_t gv_hash_words(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	uint64_t w;

	h = (h ^ n) * GV_HASH_WORDS_K;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * GV_HASH_WORDS_K;
		h ^= h >> 29;
	}
	if (n) {
		w = 0;
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)s[i] << (8 * i);
		h = (h ^ w) * GV_HASH_WORDS_K;
		h ^= h >> 29;
	}
	return h;
}

/* FNV-1a (64 bits) of the NUL-terminated s. */
uint64_t gv_hash_str(const char *s);

struct gv_map_slot {
	const char *key; /* borrowed; NULL = empty */
	uint64_t h;	 /* gv_hash_str(key) */
	void *val;	 /* borrowed */
};

/*
 * Zero-initialise (`struct gv_map m = {0};`). Keys and values are
 * borrowed: a key must stay valid while it is in the map (usually it is
 * owned by the value). Iterate over v[0..cap) skipping empty slots; any
 * put or del invalidates iteration positions.
 */
struct gv_map {
	struct gv_map_slot *v; /* owned */
	size_t cap, n;	       /* cap: 0 or a power of two; n: keys */
};

/* The value of key, or NULL. */
void *gv_map_get(const struct gv_map *m, const char *key);

/* Sets key -> val, replacing the value of an existing key. */
void gv_map_put(struct gv_map *m, const char *key, void *val);

/* Removes key; returns its value or NULL when absent. */
void *gv_map_del(struct gv_map *m, const char *key);

/* Frees the slots (not keys or values); the map is empty and reusable. */
void gv_map_release(struct gv_map *m);

#endif
