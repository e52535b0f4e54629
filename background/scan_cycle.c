/*
 * scan_cycle.c - one scan cycle: the policies and the targets they list,
 * the inputs digest, objects into slots and their results into the
 * reports, retention of results of objects that are gone, and the
 * scanner's garbage collection (scanner_run, scanner_inputs).
 */
#include "background/scan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/banned.h"

void scan_inputs_add(EVP_MD_CTX *ctx, const char *target, const json_t *md)
{
	const char *uid = jstr(md, "uid"), *rv = jstr(md, "resourceVersion");

	EVP_DigestUpdate(ctx, target, strlen(target));
	EVP_DigestUpdate(ctx, "\x1f", 1);
	EVP_DigestUpdate(ctx, uid ? uid : "", strlen(uid ? uid : ""));
	EVP_DigestUpdate(ctx, "\x1f", 1);
	EVP_DigestUpdate(ctx, rv ? rv : "", strlen(rv ? rv : ""));
	EVP_DigestUpdate(ctx, "\n", 1);
}

static EVP_MD_CTX *inputs_begin(void)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	if (ctx)
		EVP_DigestUpdate(ctx, "gavel-scan-inputs-v1\n", 21);
	return ctx;
}

/* Ends the digest into out ("sha256:<hex>"; "" when lost or not recorded); frees ctx. */
static void inputs_end(EVP_MD_CTX *ctx, bool lost, char out[SCAN_INPUTS_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	out[0] = '\0';
	if (ctx && !lost && EVP_DigestFinal_ex(ctx, md, &n) && n == 32)
		gv_sha256_text(md, out);
	EVP_MD_CTX_free(ctx);
}

/* Fingerprint of the PolicyExceptions: uid and resourceVersion of each. */
static uint64_t exceptions_fingerprint(struct scanner *s)
{
	static const char *const versions[] = {"v2", "v2beta1"};
	struct kube_resource r = {0};
	uint64_t h = SCAN_HASH_SEED;
	char *coll = NULL;
	struct kube_pager *p;
	bool found = false;

	for (size_t i = 0; i < GV_ARRAY_LEN(versions) && !found; i++) {
		struct scan_kind k = {(char *)"kyverno.io", (char *)versions[i],
				      (char *)"PolicyException"};
		found = !scanner_discover(s, &k, &r, NULL);
	}
	if (!found)
		return h;
	coll = kube_path(&r, NULL, NULL);
	kube_resource_release(&r);
	/* no restart on 410: an error makes every object look changed */
	p = kube_pager_new(s->client, coll,
			   &(struct kube_list_options){.limit = 500, .max_restarts = -1});
	for (int pages = 0; pages < 1000; pages++) {
		struct kube_status st;
		struct gv_err err = {0};
		struct kube_page *pg;
		const json_t *it;
		size_t i;

		if (kube_pager_next(p, &pg, &st, &err)) {
			gv_debug("background: PolicyExceptions not listed: %s", err.msg);
			/* unknown (but not absent): every object looks changed rather than miss one
			 */
			if (st.http != 403 && st.http != 404)
				h = scan_hash_str(err.msg, h ^ (uint64_t)time(NULL));
			break;
		}
		if (!pg)
			break;
		json_array_foreach(json_object_get(pg->list, "items"), i, it)
		{
			const json_t *md = json_object_get(it, "metadata");
			h = scan_hash_str(jstr(md, "uid"), h);
			h = scan_hash_str(jstr(md, "resourceVersion"), h);
		}
	}
	kube_pager_free(p);
	free(coll);
	return h;
}

static int key_cmp(const void *a, const void *b)
{
	const struct cyc_target *x = a, *y = b;

	return strcmp(x->t->key, y->t->key);
}

/* Finds or makes the scanner's target for resource r in namespace ns; returns the cycle index. */
static size_t cycle_target(struct cycle *c, const struct kube_resource *r, const char *ns)
{
	char *key =
	    gv_xasprintf("%s/%s/%s|%s", r->group ? r->group : "", r->version, r->resource, ns);
	struct target *t = scan_target_find(c->s, key);
	size_t i;

	for (i = 0; i < c->ntargets; i++)
		if (c->targets[i].t == t && t)
			break;
	if (t && i < c->ntargets) {
		free(key);
		return i;
	}
	if (!t) {
		t = gv_xcalloc(1, sizeof(*t));
		t->key = key;
		key = NULL;
		t->res.group = gv_xstrdup(r->group ? r->group : "");
		t->res.version = gv_xstrdup(r->version);
		t->res.kind = gv_xstrdup(r->kind);
		t->res.resource = gv_xstrdup(r->resource);
		t->res.namespaced = r->namespaced;
		t->res.listable = r->listable;
		t->ns = gv_xstrdup(ns);
		t->cache = scan_cache_new();
		c->s->targets =
		    gv_xrealloc(c->s->targets, (c->s->ntargets + 1) * sizeof(*c->s->targets));
		c->s->targets[c->s->ntargets++] = t;
	}
	free(key);
	c->targets = gv_xrealloc(c->targets, (c->ntargets + 1) * sizeof(*c->targets));
	memset(&c->targets[c->ntargets], 0, sizeof(*c->targets));
	c->targets[c->ntargets].t = t;
	return c->ntargets++;
}

static void policy_add_target(struct cyc_policy *cp, size_t ti)
{
	for (size_t i = 0; i < cp->ntargets; i++)
		if (cp->targets[i] == ti)
			return;
	cp->targets = gv_xrealloc(cp->targets, (cp->ntargets + 1) * sizeof(*cp->targets));
	cp->targets[cp->ntargets++] = ti;
}

char *scan_resource_key(const struct kube_resource *r)
{
	return gv_xasprintf("%s/%s/%s", r->group ? r->group : "", r->version ? r->version : "",
			    r->resource ? r->resource : "");
}

/* Whether r is one of scan_options.empty_resources. */
static bool known_empty(const struct scanner *s, const struct kube_resource *r)
{
	char *key;
	bool hit = false;

	if (!s->opt.nempty)
		return false;
	key = scan_resource_key(r);
	for (size_t i = 0; i < s->opt.nempty && !hit; i++)
		hit = !strcmp(key, s->opt.empty_resources[i]);
	free(key);
	return hit;
}

/* Records r as known empty in the cycle's namespace (once per group and kind). */
static void cycle_note_empty(struct cycle *c, const struct kube_resource *r)
{
	char *key = gv_xasprintf("%s\n%s", r->group ? r->group : "", r->kind);

	for (size_t i = 0; i < c->nempties; i++) {
		if (!strcmp(c->empties[i], key)) {
			free(key);
			return;
		}
	}
	c->empties = gv_xrealloc(c->empties, (c->nempties + 1) * sizeof(*c->empties));
	c->empties[c->nempties++] = key;
}

/* Resolves the kinds of every due policy into targets. */
static void cycle_resolve(struct cycle *c)
{
	const char *only = c->s->only_ns;

	for (size_t pi = 0; pi < c->npols; pi++) {
		struct cyc_policy *cp = &c->pols[pi];
		const char *pns = engine_policy_namespace(cp->p);

		for (size_t k = 0; k < cp->kinds.n; k++) {
			const struct scan_kind *sk = &cp->kinds.v[k];
			struct kube_resource r = {0};
			struct gv_err err = {0};
			enum gv_code rc = scanner_discover(c->s, sk, &r, &err);
			bool empty;

			if (rc == GV_ENOENT) {
				gv_debug("background: policy %s: kind %s%s%s%s%s is not served: "
					 "nothing to scan",
					 cp->ref, sk->group ? sk->group : "", sk->group ? "/" : "",
					 sk->version ? sk->version : "", sk->version ? "/" : "",
					 sk->kind);
				continue;
			}
			if (rc) {
				gv_warn("background: policy %s: kind %s not resolved, skipped: %s",
					cp->ref, sk->kind, err.msg);
				cp->failed = true;
				cp->out.skipped_kinds = true;
				continue;
			}
			if (!r.listable) {
				gv_debug("background: policy %s: %s cannot be listed", cp->ref,
					 r.resource);
				kube_resource_release(&r);
				continue;
			}
			if (*pns && !r.namespaced) {
				/* a namespaced Policy never matches cluster-scoped objects */
				kube_resource_release(&r);
				continue;
			}
			cp->resolved = true;
			empty = only && *only && r.namespaced && !(*pns && strcmp(pns, only)) &&
				known_empty(c->s, &r);
			if (empty)
				cycle_note_empty(c, &r);
			if (only && (r.namespaced ? !*only || (*pns && strcmp(pns, only)) || empty
						  : *only)) {
				/* not listed in this namespace (scan_options.only_namespace) */
				kube_resource_release(&r);
				continue;
			}
			policy_add_target(
			    cp, cycle_target(c, &r, r.namespaced ? (only ? only : pns) : ""));
			kube_resource_release(&r);
		}
	}
	/* visit order: by key; remap the policies' indices */
	{
		size_t n = c->ntargets;
		struct target **before = gv_xcalloc(n + 1, sizeof(*before));

		for (size_t i = 0; i < n; i++)
			before[i] = c->targets[i].t;
		if (n > 1)
			qsort(c->targets, n, sizeof(*c->targets), key_cmp);
		for (size_t pi = 0; pi < c->npols; pi++) {
			struct cyc_policy *cp = &c->pols[pi];
			for (size_t k = 0; k < cp->ntargets; k++) {
				struct target *t = before[cp->targets[k]];
				for (size_t j = 0; j < n; j++)
					if (c->targets[j].t == t)
						cp->targets[k] = j;
			}
		}
		free(before);
	}
	for (size_t pi = 0; pi < c->npols; pi++) {
		struct cyc_policy *cp = &c->pols[pi];
		cp->out.targets = cp->ntargets;
		for (size_t k = 0; k < cp->ntargets; k++) {
			struct cyc_target *ct = &c->targets[cp->targets[k]];
			ct->pols = gv_xrealloc(ct->pols, (ct->npols + 1) * sizeof(*ct->pols));
			ct->pols[ct->npols++] = pi;
			scan_target_add_user(ct->t, cp->pk);
		}
	}
}

/* Hash of the labels of namespace ns (cached for runs of the same namespace). */
static uint64_t labels_hash(struct cycle *c, const char *ns, const json_t *labels)
{
	if (c->last_ns && !strcmp(c->last_ns, ns))
		return c->last_ns_hash;
	free(c->last_ns);
	c->last_ns = gv_xstrdup(ns);
	c->last_ns_hash = scan_hash_json(labels, SCAN_HASH_SEED);
	return c->last_ns_hash;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The policy keys of every policy of the set, sorted (caller frees). */
static uint64_t *alive_keys(const struct engine_policyset *set, size_t *n)
{
	size_t m = set ? engine_policyset_count(set) : 0;
	uint64_t *v = gv_xcalloc(m + 1, sizeof(*v));

	for (size_t i = 0; i < m; i++) {
		char *ref = report_policy_ref(engine_policyset_get(set, i));
		v[i] = scan_hash_str(ref, SCAN_HASH_SEED);
		free(ref);
	}
	qsort(v, m, sizeof(*v), u64_cmp);
	*n = m;
	return v;
}

static bool policy_alive(void *ud, uint64_t pk)
{
	const struct cycle *c = ud;

	return bsearch(&pk, c->alive, c->nalive, sizeof(*c->alive), u64_cmp) != NULL;
}

bool scan_slot_prepare(struct cycle *c, struct cyc_target *ct, struct slot *sl, json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	const struct kube_resource *r = &ct->t->res;
	bool is_ns_kind = !*r->group && !strcmp(r->kind, "Namespace");
	uint64_t lh;

	sl->obj = obj;
	sl->uid = jstr(md, "uid");
	sl->ns = jstr(md, "namespace");
	sl->name = jstr(md, "name");
	sl->rv = jstr(md, "resourceVersion");
	if (!sl->ns)
		sl->ns = "";
	if (!sl->name)
		sl->name = "";
	if (!sl->uid || !*sl->uid) {
		gv_warn("background: %s %s%s%s has no metadata.uid: not scanned", r->kind, sl->ns,
			*sl->ns ? "/" : "", sl->name);
		return false;
	}
	if (c->s->skip_ns &&
	    (!strcmp(sl->ns, c->s->skip_ns) || (is_ns_kind && !strcmp(sl->name, c->s->skip_ns))))
		goto filtered;
	if (view_config_filtered(c->config, r->group, r->version, r->kind, "", sl->ns, sl->name))
		goto filtered;
	sl->labels = view_state_namespace_labels(c->st, is_ns_kind ? sl->name : sl->ns);
	if (is_ns_kind && !sl->labels)
		sl->labels = json_object_get(md, "labels");
	lh = labels_hash(c, is_ns_kind ? sl->name : sl->ns, sl->labels);
	sl->entry = scan_cache_visit(ct->t->cache, sl->uid);
	scan_entry_prune(sl->entry, policy_alive, c);
	sl->fps = gv_xcalloc(ct->npols + 1, sizeof(*sl->fps));
	sl->need = gv_xcalloc(ct->npols + 1, sizeof(*sl->need));
	for (size_t k = 0; k < ct->npols; k++) {
		const struct cyc_policy *cp = &c->pols[ct->pols[k]];
		uint64_t fp = scan_hash_str(sl->rv, SCAN_HASH_SEED);

		fp = scan_hash(&lh, sizeof(lh), fp);
		fp = scan_hash(&cp->fp, sizeof(cp->fp), fp);
		fp = scan_hash(&c->exc_fp, sizeof(c->exc_fp), fp);
		sl->fps[k] = fp;
		sl->need[k] = !c->s->opt.incremental || cp->outside ||
			      !scan_entry_fresh(sl->entry, cp->pk, fp);
		sl->eval |= sl->need[k];
	}
	return true;
filtered:
	if (scan_cache_drop(ct->t->cache, sl->uid))
		report_delete_object(c->rs, NULL, sl->uid);
	c->stats->filtered++;
	return false;
}

void scan_slot_release(struct slot *sl)
{
	json_decref(sl->obj);
	free(sl->fps);
	free(sl->need);
	free(sl->error);
	if (sl->eval && !sl->rc)
		engine_report_release(&sl->rep);
	memset(sl, 0, sizeof(*sl));
}

void scan_slot_commit(struct cycle *c, struct cyc_target *ct, struct slot *sl, int64_t now)
{
	const struct kube_resource *r = &ct->t->res;
	struct report_resource res;
	struct gv_err err = {0};
	bool *done;

	for (size_t k = 0; k < ct->npols; k++) {
		struct cyc_policy *cp = &c->pols[ct->pols[k]];
		cp->out.objects++;
		if (!sl->need[k])
			cp->out.unchanged++;
	}
	if (!sl->eval) {
		c->stats->unchanged++;
		return;
	}
	if (sl->rc) {
		gv_warn("background: %s %s%s%s: cannot be evaluated: %s", r->kind, sl->ns,
			*sl->ns ? "/" : "", sl->name, sl->error);
		c->stats->failed++;
		for (size_t k = 0; k < ct->npols; k++) {
			struct cyc_policy *cp = &c->pols[ct->pols[k]];
			if (!sl->need[k])
				continue;
			scan_entry_forget(sl->entry, cp->pk);
			cp->out.failed++;
		}
		return;
	}
	c->stats->evaluated++;
	if (report_resource_from_object(sl->obj, &res, &err)) {
		gv_warn("background: %s %s%s%s: %s", r->kind, sl->ns, *sl->ns ? "/" : "", sl->name,
			err.msg);
		return;
	}
	done = gv_xcalloc(ct->npols + 1, sizeof(*done));
	for (size_t i = 0; i < sl->rep.n; i++) {
		const struct engine_response *resp = &sl->rep.v[i];
		size_t k;

		for (k = 0; k < ct->npols; k++)
			if (c->pols[ct->pols[k]].p == resp->policy)
				break;
		if (k == ct->npols || !sl->need[k] || done[k])
			continue;
		done[k] = true;
		if (report_put_response(c->rs, &res, resp, ENGINE_BACKGROUND, now, 0, &err)) {
			gv_warn("background: %s %s%s%s: policy %s: %s", r->kind, sl->ns,
				*sl->ns ? "/" : "", sl->name, c->pols[ct->pols[k]].ref, err.msg);
			gv_err_clear(&err);
			continue;
		}
		scan_events_response(c->s->opt.events, sl->obj, resp);
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *rr = &resp->rules[j];
			c->stats->results++;
			if (c->s->opt.results) {
				/* a background scan evaluates as a CREATE (section 6.5) */
				struct view_result_labels ml = {
				    .resource_kind = r->kind,
				    .resource_namespace = sl->ns,
				    .resource_request_operation = "create",
				    .rule_name = rr->rule,
				    .rule_result = engine_status_name(rr->status),
				    .rule_execution_cause = "background_scan"};
				view_result_labels_policy(&ml, resp->policy, rr->action);
				view_result_record(c->s->opt.results, c->s->opt.duration, &ml,
						   rr->seconds);
			}
		}
	}
	for (size_t k = 0; k < ct->npols; k++) {
		struct cyc_policy *cp = &c->pols[ct->pols[k]];
		if (!sl->need[k])
			continue;
		if (!done[k]) {
			/* no response: the policy does not apply (any more): no results */
			report_replace(c->rs, &res, cp->ref, NULL, 0, NULL);
		}
		cp->out.evaluated++;
		scan_entry_set(sl->entry, cp->pk, sl->fps[k]);
	}
	free(done);
}

static void cycle_retain(struct cycle *c)
{
	for (size_t pi = 0; pi < c->npols; pi++) {
		struct cyc_policy *cp = &c->pols[pi];
		const char **uids = NULL;
		size_t n = 0;
		bool ready = cp->kinds.complete && cp->ntargets && !cp->failed;

		/*
		 * Listed elsewhere but not in this namespace: none of the objects its
		 * results in this namespace's reports are about is there.
		 */
		if (c->s->only_ns && !cp->ntargets)
			ready = cp->kinds.complete && cp->resolved && !cp->failed;
		for (size_t k = 0; ready && k < cp->ntargets; k++)
			ready = scan_cache_complete(c->targets[cp->targets[k]].t->cache);
		if (!ready || scan_retained_has(c->s, cp->pk))
			continue;
		for (size_t k = 0; k < cp->ntargets; k++)
			scan_cache_uids(c->targets[cp->targets[k]].t->cache, &uids, &n);
		report_retain_since(c->rs, cp->ref, uids, n, c->s->opt.retain_since);
		free(uids);
		cp->out.retained = true;
		c->s->retained =
		    gv_xrealloc(c->s->retained, (c->s->nretained + 1) * sizeof(*c->s->retained));
		c->s->retained[c->s->nretained++] = cp->pk;
	}
}

/*
 * report_retain_objects() for the targets listed to the end in this cycle:
 * results about objects of their kind that are gone go, whatever the
 * policy (admission results of policies not scanned, the resource layout's
 * whole report).
 */
static void cycle_retain_objects(struct cycle *c)
{
	for (size_t i = 0; i < c->ntargets; i++) {
		const struct target *t = c->targets[i].t;
		const char **uids = NULL;
		const char *ns;
		size_t n = 0;

		if (!c->targets[i].done || !scan_cache_complete(t->cache))
			continue;
		ns = *t->ns ? t->ns : t->res.namespaced ? NULL : "";
		scan_cache_uids(t->cache, &uids, &n);
		report_retain_objects(c->rs, t->res.group, t->res.kind, ns, uids, n,
				      c->s->opt.retain_since);
		free(uids);
	}
	/* none in the cluster, so none in this namespace */
	for (size_t i = 0; i < c->nempties; i++) {
		char *nl = strchr(c->empties[i], '\n');

		*nl = '\0';
		report_retain_objects(c->rs, c->empties[i], nl + 1, c->s->only_ns, NULL, 0,
				      c->s->opt.retain_since);
		*nl = '\n';
	}
}

/* Drops the targets no policy of the set uses any more. */
static void scanner_gc(struct scanner *s, const uint64_t *alive, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < s->ntargets; i++) {
		struct target *t = s->targets[i];
		size_t u = 0;

		for (size_t j = 0; j < t->nusers; j++)
			if (bsearch(&t->users[j], alive, n, sizeof(*alive), u64_cmp))
				t->users[u++] = t->users[j];
		t->nusers = u;
		if (!u && t->users) {
			gv_debug("background: %s no longer scanned: cache dropped", t->key);
			scan_target_free(t);
			continue;
		}
		s->targets[k++] = t;
	}
	s->ntargets = k;
	k = 0;
	for (size_t i = 0; i < s->nretained; i++)
		if (bsearch(&s->retained[i], alive, n, sizeof(*alive), u64_cmp))
			s->retained[k++] = s->retained[i];
	s->nretained = k;
}

/* The policies of a cycle (the background ones of due) and their targets. */
static void cycle_begin(struct cycle *c, struct scanner *s, const struct view_state *st,
			const struct engine_policy *const *due, size_t ndue, bool gc)
{
	c->s = s;
	c->st = st;
	c->config = view_state_config(st);
	c->budget = s->opt.resource_limit ? s->opt.resource_limit : SIZE_MAX;
	c->pols = gv_xcalloc(ndue + 1, sizeof(*c->pols));
	for (size_t i = 0; i < ndue; i++) {
		struct cyc_policy *cp;

		if (!due[i] || !engine_policy_background(due[i]))
			continue;
		cp = &c->pols[c->npols++];
		cp->p = due[i];
		cp->ref = report_policy_ref(due[i]);
		cp->pk = scan_hash_str(cp->ref, SCAN_HASH_SEED);
		cp->fp = scan_policy_fingerprint(due[i]);
		cp->outside = engine_doc_reads_outside(engine_policy_doc(due[i]));
		scan_policy_kinds(due[i], &cp->kinds);
	}
	c->alive = alive_keys(view_state_policyset(st), &c->nalive);
	if (gc)
		scanner_gc(s, c->alive, c->nalive);
	cycle_resolve(c);
}

/* Whether some kind of a policy of the cycle could not be resolved. */
static bool cycle_failed_kinds(const struct cycle *c)
{
	for (size_t i = 0; i < c->npols; i++)
		if (c->pols[i].failed)
			return true;
	return false;
}

static void cycle_end(struct cycle *c)
{
	for (size_t i = 0; i < c->npols; i++) {
		free(c->pols[i].ref);
		free(c->pols[i].targets);
		scan_kinds_release(&c->pols[i].kinds);
	}
	for (size_t i = 0; i < c->ntargets; i++)
		free(c->targets[i].pols);
	free(c->pols);
	free(c->targets);
	free(c->last_ns);
	free(c->alive);
	for (size_t i = 0; i < c->nempties; i++)
		free(c->empties[i]);
	free(c->empties);
	EVP_MD_CTX_free(c->inputs);
	c->inputs = NULL;
}

enum gv_code scanner_inputs(struct scanner *s, const struct view_state *st,
			    const struct engine_policy *const *due, size_t ndue,
			    char out[SCAN_INPUTS_LEN], size_t *objects)
{
	struct scan_stats stats = {0};
	struct cycle c = {0};
	size_t listed = 0;
	bool lost = false;

	c.stats = &stats;
	cycle_begin(&c, s, st, due, ndue, false);
	c.inputs = inputs_begin();
	lost = cycle_failed_kinds(&c);
	for (size_t i = 0; i < c.ntargets && c.inputs && !lost; i++) {
		const struct target *t = c.targets[i].t;
		char *coll;
		/*
		 * as text, each item parsed alone: a parsed page of metadata
		 * (managedFields and all) takes about 14 times its text
		 */
		struct kube_list_options lo = {
		    .limit = s->opt.batch_size, .metadata = true, .text = true, .max_restarts = -1};
		struct kube_pager *p;
		struct kube_page *pg;

		if (!c.targets[i].npols)
			continue;
		coll = kube_path(&t->res, *t->ns ? t->ns : NULL, NULL);
		p = kube_pager_new(s->client, coll, &lo);
		while (!lost) {
			struct kube_status st2;
			struct gv_err e = {0};

			/* no restart on 410: a listing seen twice is not the inputs of one cycle */
			if (kube_pager_next(p, &pg, &st2, &e)) {
				gv_debug("background: %s: inputs not known: %s", t->key, e.msg);
				lost = true;
			}
			if (!pg)
				break;
			for (size_t k = 0; k < pg->nspans; k++) {
				json_t *item = gv_json_parse(pg->text.data + pg->spans[k].off,
							     pg->spans[k].len, NULL);

				if (!json_is_object(item))
					lost = true;
				else
					scan_inputs_add(c.inputs, t->key,
							json_object_get(item, "metadata"));
				json_decref(item);
				listed++;
			}
		}
		kube_pager_free(p);
		free(coll);
	}
	inputs_end(c.inputs, lost, out);
	c.inputs = NULL;
	cycle_end(&c);
	if (objects)
		*objects = listed;
	return GV_OK;
}

enum gv_code scanner_run(struct scanner *s, const struct view_state *st,
			 const struct engine_policy *const *due, size_t ndue, struct report_set *rs,
			 const struct scan_hooks *hooks, struct scan_outcome *out,
			 struct scan_stats *stats, struct gv_err *err)
{
	struct scan_stats local = {0};
	struct cycle c = {0};
	struct fetcher fetch;
	const struct engine_policyset *set = view_state_policyset(st);
	size_t requests0 = scanner_requests(s), start, visited = 0;
	double t0 = scan_mono_now();
	enum gv_code rc = GV_OK;
	const char **keys = NULL;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	if (out)
		memset(out, 0, ndue * sizeof(*out));
	c.rs = rs;
	c.hooks = hooks;
	c.stats = stats;
	cycle_begin(&c, s, st, due, ndue, true);
	if (s->opt.inputs)
		c.inputs = inputs_begin();
	if (c.ntargets && s->opt.incremental)
		c.exc_fp = exceptions_fingerprint(s);
	keys = gv_xcalloc(c.ntargets + 1, sizeof(*keys));
	for (size_t i = 0; i < c.ntargets; i++)
		keys[i] = c.targets[i].t->key;
	start = scan_cursor_start(keys, c.ntargets, s->cursor);
	scan_pool_start(&c.pool, s->opt.workers, set, s->opt.context);
	scan_fetcher_start(&fetch, s);
	for (; visited < c.ntargets; visited++) {
		struct cyc_target *ct = &c.targets[(start + visited) % c.ntargets];
		enum list_end end;

		if (!ct->npols)
			continue;
		if (c.budget == 0) {
			stats->partial = true;
			break;
		}
		end = scan_list_target(&c, ct, &fetch, err);
		if (end == L_SKIPPED) {
			c.inputs_lost = true;
			scan_cache_abandon(ct->t->cache);
			free(ct->t->cont);
			ct->t->cont = NULL;
			free(ct->t->last);
			ct->t->last = NULL;
			for (size_t k = 0; k < ct->npols; k++) {
				c.pols[ct->pols[k]].failed = true;
				c.pols[ct->pols[k]].out.skipped_kinds = true;
			}
			continue;
		}
		if (end == L_STOPPED) {
			stats->stopped = true;
			break;
		}
		if (end == L_FAILED) {
			rc = GV_ENET;
			break;
		}
		if (end == L_BUDGET) {
			stats->partial = true;
			break;
		}
	}
	scan_fetcher_stop(&fetch);
	scan_pool_stop(&c.pool);
	/* where the next cycle starts */
	free(s->cursor);
	s->cursor = NULL;
	if (stats->partial && c.ntargets) {
		struct cyc_target *ct = &c.targets[(start + visited) % c.ntargets];
		if (ct->done)
			ct = &c.targets[(start + visited + 1) % c.ntargets];
		s->cursor = gv_xstrdup(ct->t->key);
	}
	if (!rc && !stats->stopped) {
		cycle_retain(&c);
		cycle_retain_objects(&c);
	}
	for (size_t i = 0, k = 0; i < ndue; i++) {
		if (!due[i] || !engine_policy_background(due[i]))
			continue;
		if (out)
			out[i] = c.pols[k].out;
		k++;
	}
	if (c.inputs) {
		inputs_end(c.inputs,
			   c.inputs_lost || rc || stats->stopped || stats->partial ||
			       cycle_failed_kinds(&c),
			   stats->inputs);
		c.inputs = NULL;
	}
	cycle_end(&c);
	free(keys);
	stats->requests = scanner_requests(s) - requests0;
	stats->seconds = scan_mono_now() - t0;
	return rc;
}
