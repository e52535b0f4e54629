/*
 * scan.c - the scanner: its options, the targets (collections) it lists
 * and their listings in progress, list pages as received, and the
 * requests it makes (scan.h). One cycle is in scan_cycle.c.
 */
#include "background/scan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/banned.h"

/* ---- the scanner ---- */

void scan_target_free(struct target *t)
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
		scan_target_free(s->targets[i]);
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

void scan_page_release(struct page *pg)
{
	gv_buf_release(&pg->text);
	json_decref(pg->head);
	free(pg->spans);
	memset(pg, 0, sizeof(*pg));
}

json_t *scan_page_item(const struct page *pg, size_t i)
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

enum gv_code scanner_discover(struct scanner *s, const struct scan_kind *k,
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

struct target *scan_target_find(const struct scanner *s, const char *key)
{
	for (size_t i = 0; i < s->ntargets; i++)
		if (!strcmp(s->targets[i]->key, key))
			return s->targets[i];
	return NULL;
}

void scan_target_add_user(struct target *t, uint64_t pk)
{
	for (size_t i = 0; i < t->nusers; i++)
		if (t->users[i] == pk)
			return;
	t->users = gv_xrealloc(t->users, (t->nusers + 1) * sizeof(*t->users));
	t->users[t->nusers++] = pk;
}

bool scan_retained_has(const struct scanner *s, uint64_t pk)
{
	for (size_t i = 0; i < s->nretained; i++)
		if (s->retained[i] == pk)
			return true;
	return false;
}
