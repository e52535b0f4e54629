/*
 * hash.h - FNV-1a hashing and a string-keyed hash map (open addressing,
 * linear probing, backward-shift deletion). Not thread-safe: a map belongs
 * to one thread or to its owner's lock.
 */
#ifndef GV_COMMON_HASH_H
#define GV_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

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
