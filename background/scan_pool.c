/*
 * scan_pool.c - the worker pool that evaluates the objects of a page
 * (slots) with the engine, and the monotonic clock of a cycle.
 */
#include "background/scan_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/banned.h"

/* ---- the worker pool ---- */

double scan_mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

void scan_pool_start(struct pool *p, int n, const struct engine_policyset *set,
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

void scan_pool_run(struct pool *p, struct slot *slots, size_t n)
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

void scan_pool_stop(struct pool *p)
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
