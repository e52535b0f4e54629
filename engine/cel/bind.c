/*
 * bind.c - binding a map of already evaluated values (cel.h cel_bind_map):
 * Kubernetes' `variables`.
 */
#include "engine/cel/cel_int.h"

#include <string.h>

#include "common/banned.h"

void cel_bind_map(struct cel_eval *ev, const char *name, const char *const *keys,
		  const struct cel_value *vals, size_t n)
{
	struct cel_value *k = cel_arena_alloc(&ev->arena, (n ? n : 1) * sizeof(*k));
	struct cel_value m;

	for (size_t i = 0; i < n; i++)
		k[i] = cel_str(keys[i], strlen(keys[i]));
	m = cel_map_new(ev, k, vals, n);
	cel_bind_value(ev, name, &m);
}
