/*
 * policy_set.c - policy sets: an immutable, reference-counted array of
 * compiled policies.
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/policy_int.h"
#include "engine/value.h"
#include "common/banned.h"

/* ---- policy sets ---- */

struct engine_policyset *engine_policyset_new(struct engine_policy *const *policies, size_t n,
					      struct engine_exception **exceptions, size_t nexc)
{
	struct engine_policyset *s = gv_xcalloc(1, sizeof(*s));

	atomic_init(&s->refs, 1);
	s->v = gv_xcalloc(n + 1, sizeof(*s->v));
	for (size_t i = 0; i < n; i++) {
		s->v[s->n++] = engine_policy_ref(policies[i]);
		s->uses_images |= policies[i]->uses_images;
	}
	s->exc = gv_xcalloc(nexc + 1, sizeof(*s->exc));
	for (size_t i = 0; i < nexc; i++)
		s->exc[s->nexc++] = exceptions[i];
	return s;
}

struct engine_policyset *engine_policyset_ref(struct engine_policyset *s)
{
	atomic_fetch_add(&s->refs, 1);
	return s;
}

void engine_policyset_unref(struct engine_policyset *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->n; i++)
		engine_policy_unref(s->v[i]);
	for (size_t i = 0; i < s->nexc; i++)
		engine_exception_free(s->exc[i]);
	free(s->v);
	free(s->exc);
	free(s);
}

size_t engine_policyset_count(const struct engine_policyset *s)
{
	return s->n;
}

const struct engine_policy *engine_policyset_get(const struct engine_policyset *s, size_t i)
{
	return i < s->n ? s->v[i] : NULL;
}
