/*
 * scan_list.c - listing one target page by page within a cycle's budget:
 * the page fetcher (the next page requested while the current one is
 * evaluated), resuming after an expired continue token, and the pages
 * into slots.
 */
#include "background/scan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/banned.h"

#define LIST_RESTARTS 3 /* 410s of one listing before the target is given up for the cycle */

static bool proceed(const struct cycle *c)
{
	return !c->hooks || !c->hooks->proceed || c->hooks->proceed(c->hooks->ud);
}

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

/* The next page of f's pager, taken out of it (page zeroed when the listing ended). */
static enum gv_code fetcher_fetch(struct fetcher *f, struct kube_page *page, struct kube_status *st,
				  struct gv_err *err)
{
	struct kube_page *pg;
	enum gv_code rc = kube_pager_next(f->pager, &pg, st, err);

	kube_pager_take(f->pager, page);
	return rc;
}

static void *fetcher_main(void *ud)
{
	struct fetcher *f = ud;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		struct kube_page page = {0};
		struct kube_status st;
		struct gv_err err = {0};
		enum gv_code rc;

		while (!f->stop && !f->want)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop)
			break;
		f->want = false;
		pthread_mutex_unlock(&f->mu);
		rc = fetcher_fetch(f, &page, &st, &err);
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

void scan_fetcher_start(struct fetcher *f, struct scanner *s)
{
	memset(f, 0, sizeof(*f));
	f->s = s;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	if (!s->opt.prefetch)
		return; /* the scanning thread asks for each page itself */
	f->running = !pthread_create(&f->th, NULL, fetcher_main, f);
}

/* Asks f's pager for its next page of at most limit items. */
static void fetcher_submit(struct fetcher *f, size_t limit)
{
	/* no request in flight: the pager is the caller's to change */
	kube_pager_set_limit(f->pager, (int)limit);
	if (!f->running) {
		/* no thread: the request is made when the answer is asked for */
		f->busy = true;
		return;
	}
	pthread_mutex_lock(&f->mu);
	f->want = true;
	f->busy = true;
	f->done = false;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/*
 * The items of a pager's page, moved into a scan page (no copy). True when
 * the listing started over before it (an expired continue token).
 */
static bool page_from(struct page *pg, struct kube_page *kp)
{
	bool restarted = kp->restarted;

	pg->text = kp->text;
	pg->spans = kp->spans;
	if (kp->list) {
		/* parsed whole: the items are the list's */
		pg->head = kp->list;
		pg->items = json_object_get(kp->list, "items");
		pg->n = json_array_size(pg->items);
	} else {
		pg->head = kp->head;
		pg->n = kp->nspans;
	}
	kp->list = kp->head = NULL;
	kp->text = (struct gv_buf){0};
	kp->spans = NULL;
	kube_page_release(kp);
	return restarted;
}

/*
 * Waits for the page asked for and takes it (page released first);
 * *restarted: the listing started over before it (may be NULL).
 */
static enum gv_code fetcher_take(struct fetcher *f, struct page *page, bool *restarted,
				 struct kube_status *st, struct gv_err *err)
{
	struct kube_page kp = {0};
	enum gv_code rc;
	bool r;

	if (!f->running) {
		f->busy = false;
		scan_page_release(page);
		rc = fetcher_fetch(f, &kp, st, err);
		r = page_from(page, &kp);
		if (restarted)
			*restarted = r;
		return rc;
	}
	pthread_mutex_lock(&f->mu);
	while (!f->done)
		pthread_cond_wait(&f->cv, &f->mu);
	scan_page_release(page);
	kp = f->page;
	*st = f->st;
	*err = f->err;
	rc = f->rc;
	memset(&f->page, 0, sizeof(f->page));
	f->done = false;
	f->busy = false;
	pthread_mutex_unlock(&f->mu);
	r = page_from(page, &kp);
	if (restarted)
		*restarted = r;
	return rc;
}

/* Drops an answer nobody wants (the cycle stopped). */
static void fetcher_discard(struct fetcher *f)
{
	struct page page = {0};
	struct kube_status st;
	struct gv_err err = {0};

	if (f->busy && f->running) {
		fetcher_take(f, &page, NULL, &st, &err);
		scan_page_release(&page);
	}
	f->busy = false;
}

void scan_fetcher_stop(struct fetcher *f)
{
	fetcher_discard(f);
	if (f->running) {
		pthread_mutex_lock(&f->mu);
		f->stop = true;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
	}
	kube_page_release(&f->page);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
}

/* Index of the first item of a page after `last` (items up to it were processed before). */
static size_t first_fresh(const struct page *pg, const char *last)
{
	size_t i;

	for (i = 0; last && i < pg->n; i++) {
		json_t *item = scan_page_item(pg, i);
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
	double t0 = scan_mono_now();
	int64_t now;

	scan_pool_run(&c->pool, slots, n);
	c->stats->eval_seconds += scan_mono_now() - t0;
	t0 = scan_mono_now();
	now = (int64_t)time(NULL);
	for (size_t i = 0; i < n; i++) {
		scan_slot_commit(c, ct, &slots[i], now);
		scan_slot_release(&slots[i]);
	}
	c->stats->commit_seconds += scan_mono_now() - t0;
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
		json_t *item = scan_page_item(pg, i);

		if (c->inputs) {
			if (item)
				scan_inputs_add(c->inputs, t->key,
						json_object_get(item, "metadata"));
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
		if (!scan_slot_prepare(c, ct, &slots[ns], item)) {
			scan_slot_release(&slots[ns]);
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

enum list_end scan_list_target(struct cycle *c, struct cyc_target *ct, struct fetcher *f,
			       struct gv_err *err)
{
	struct target *t = ct->t;
	size_t batch = (size_t)c->s->opt.batch_size;
	char *coll = kube_path(&t->res, *t->ns ? t->ns : NULL, NULL);
	/* whole pages (parse_batch >= batch_size) are parsed at once, freed at once */
	struct kube_list_options o = {.text = c->s->opt.parse_batch < c->s->opt.batch_size,
				      .max_restarts = LIST_RESTARTS,
				      .cont = t->cont};
	/* resumed without a token (it expired): skip what was processed */
	bool skipping = t->last && !t->cont;
	enum list_end end = L_FINISHED;
	struct page page = {0};

	f->pager = kube_pager_new(c->s->client, coll, &o);
	c->stats->targets++;
	if (t->cont || t->last)
		c->inputs_lost = true; /* continued: this cycle does not see its start */
	for (;;) {
		struct kube_status st;
		struct gv_err e = {0};
		size_t n, from, fresh, left;
		const char *cont;
		char *next;
		double t0;
		bool restarted = false;
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
			fetcher_submit(f, c->budget < batch ? c->budget : batch);
		}
		t0 = scan_mono_now();
		rc = fetcher_take(f, &page, &restarted, &st, &e);
		c->stats->list_seconds += scan_mono_now() - t0;
		cont = kube_pager_continue(f->pager);
		if (rc && t->cont && !cont)
			restarted = true; /* the token expired, then listing again failed */
		if (restarted) {
			/* the pager listed again from the start (at most LIST_RESTARTS times) */
			gv_info("background: listing %s: continue token expired, "
				"listing again from the start",
				t->key);
			skipping = t->last != NULL;
			c->inputs_lost = true; /* a page seen twice */
		}
		if (rc) {
			/* resumed next cycle from the token that failed (none after a restart) */
			free(t->cont);
			t->cont = cont ? gv_xstrdup(cont) : NULL;
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
		/* copied: the fetcher moves the pager on while this page is evaluated */
		next = cont ? gv_xstrdup(cont) : NULL;
		left = c->budget == SIZE_MAX ? SIZE_MAX
					     : c->budget - (fresh < c->budget ? fresh : c->budget);
		/* ask for the next page now; evaluate this one meanwhile */
		if (c->s->opt.prefetch && next && left && proceed(c))
			fetcher_submit(f, left < batch ? left : batch);
		page_process(c, ct, &page, from);
		free(t->cont);
		t->cont = next;
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
	scan_page_release(&page);
	kube_pager_free(f->pager);
	f->pager = NULL;
	free(coll);
	return end;
}

/* report_retain() for the policies whose every target is known, once per policy. */
