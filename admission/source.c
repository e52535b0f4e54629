/*
 * source.c - the fixed state source of standalone mode and tests.
 */
#include "admission/admission_int.h"

#include <pthread.h>
#include <string.h>
#include <stdlib.h>

#include "common/banned.h"

/* ---- fixed source ---- */

static struct view_state *fixed_acquire(void *ud)
{
	struct admission_fixed_source *f = ud;
	struct view_state *s;

	pthread_mutex_lock(f->lock);
	s = view_state_ref(f->state);
	pthread_mutex_unlock(f->lock);
	return s;
}

void admission_fixed_source_init(struct admission_fixed_source *f, struct view_state *state)
{
	pthread_mutex_t *mu = gv_xmalloc(sizeof(*mu));

	/* every hook the source does not offer (written, acquire_fresh) NULL */
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(mu, NULL);
	f->lock = mu;
	f->state = view_state_ref(state);
	f->source.acquire = fixed_acquire;
	f->source.ud = f;
}

void admission_fixed_source_set(struct admission_fixed_source *f, struct view_state *state)
{
	struct view_state *old;

	view_state_ref(state);
	pthread_mutex_lock(f->lock);
	old = f->state;
	f->state = state;
	pthread_mutex_unlock(f->lock);
	view_state_unref(old);
}

void admission_fixed_source_release(struct admission_fixed_source *f)
{
	view_state_unref(f->state);
	f->state = NULL;
	if (f->lock) {
		pthread_mutex_destroy(f->lock);
		free(f->lock);
	}
	f->lock = NULL;
}
