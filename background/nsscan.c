/*
 * nsscan.c - the background scan, namespace by namespace (nsscan.h): for
 * `gavel scan` once, for the reconciler each cycle.
 */
#include "background/nsscan.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "background/clusterstate.h"
#include "background/scanstate.h"
#include "background/vpscan.h"
#include "common/log.h"
#include "common/banned.h"

/* The report options of a scan: o->report, or the split flag alone. */
static struct report_options nsscan_report_options(const struct nsscan_options *o)
{
	struct report_options ro = {.split = o->split};

	if (o->report) {
		ro = *o->report;
		ro.journal = false;
	}
	return ro;
}

/* What of the report options the results depend on, for the inputs digest (into buf). */
static const char *nsscan_report_mode(const struct report_options *ro, char *buf, size_t n)
{
	snprintf(buf, n, "%s;%s;%u", ro->resource ? "resource" : "-", ro->source ? ro->source : "-",
		 ro->allowed);
	return buf;
}

static double mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A namespace's scan: its scanner (whose child client counts the
 * namespace's requests: report_api.client), the namespace ("" = the
 * cluster's reports: report_api.scope) and the run's proceed() for writes.
 */
struct scope {
	struct scanner *s;
	const char *ns;
	const struct scan_hooks *hooks; /* may be NULL */
};

static bool scope_proceed(void *ud)
{
	const struct scope *sc = ud;

	return !sc->hooks || !sc->hooks->proceed || sc->hooks->proceed(sc->hooks->ud);
}

/* The memo (nsscan.h): {namespace: {policy ref: inputs}}. */
struct nsscan_memo {
	json_t *ns;   /* owned */
	char *cursor; /* owned: the namespace a limited run starts from next; NULL = the first */
	pthread_mutex_t forget_mu;
	json_t *forget; /* owned, under forget_mu: namespaces to forget at the next run */
};

struct nsscan_memo *nsscan_memo_new(void)
{
	struct nsscan_memo *m = gv_xcalloc(1, sizeof(*m));

	m->ns = json_object();
	m->forget = json_object();
	pthread_mutex_init(&m->forget_mu, NULL);
	return m;
}

void nsscan_memo_forget(struct nsscan_memo *m, const char *ns)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->forget_mu);
	json_object_set_new(m->forget, ns ? ns : "", json_true());
	pthread_mutex_unlock(&m->forget_mu);
}

/* Drops the namespaces nsscan_memo_forget() named since the last run. */
static void memo_apply_forget(struct nsscan_memo *m)
{
	const char *ns;
	json_t *v;

	pthread_mutex_lock(&m->forget_mu);
	json_object_foreach(m->forget, ns, v)
	{
		(void)v;
		json_object_del(m->ns, ns);
	}
	json_object_clear(m->forget);
	pthread_mutex_unlock(&m->forget_mu);
}

void nsscan_memo_clear(struct nsscan_memo *m)
{
	if (!m)
		return;
	json_object_clear(m->ns);
	free(m->cursor);
	m->cursor = NULL;
}

void nsscan_memo_free(struct nsscan_memo *m)
{
	if (!m)
		return;
	json_decref(m->ns);
	json_decref(m->forget);
	pthread_mutex_destroy(&m->forget_mu);
	free(m->cursor);
	free(m);
}

/* The whole run: what the namespaces share. */
struct once {
	const struct nsscan_options *o;
	const struct nsscan_input *in;
	struct nsscan_memo *memo; /* may be NULL; under mu */
	const char *self;	  /* gavel's namespace */
	const struct engine_policy *const *all, *const *due;
	size_t nall, ndue;
	/* CEL policies (nsscan_input.vall, vdue); vrefs: their memo keys "<source>/<ref>" */
	const struct vpol_policy *const *vall, *const *vdue;
	size_t nvall, nvdue;
	char **vrefs;
	struct vpscan_plan *plan; /* the resources of vall */
	struct report_live *live; /* every CEL policy of the state, for report_prune_live */
	char **live_refs;
	size_t nlive;
	const char **spaces; /* "" (cluster-scoped objects), then the namespaces */
	size_t nspaces;
	char **refs; /* report_policy_ref of all[i] (owned) */
	char *salt;  /* what the reports depend on besides the scan: the policies (policy_salt) */
	/*
	 * What every namespace's results depend on besides its objects and
	 * labels (inputs_salt); NULL when inputs digests are not used.
	 */
	char *inputs_salt;
	char **empty; /* resources with no object in the cluster (empty_resources) */
	size_t nempty;
	int64_t start;	   /* Unix seconds when the scan started (scan_options.retain_since) */
	json_t **rendered; /* per namespace, done and not emitted yet (with o->emit) */
	size_t emitted;	   /* namespaces [0, emitted) have been emitted */
	struct scan_hooks hooks; /* o->hooks with page_done serialized (hook_mu) */
	pthread_mutex_t hook_mu;

	pthread_mutex_t mu;
	size_t next;	 /* the next namespace to take */
	size_t budget;	 /* objects left under the resource limit; SIZE_MAX = none */
	bool stop;	 /* the API server fails, or the resource limit: take no more namespaces */
	size_t stop_idx; /* where a limited run stopped: the next one starts there */
	enum gv_code rc;
	struct gv_err err; /* the first error */
	struct nsscan_stats *stats;
};

static void stats_add(struct nsscan_stats *t, const struct scan_stats *s,
		      const struct report_stats *r, double load, double flush, size_t results,
		      size_t requests)
{
	t->scan.requests += s->requests;
	t->scan.pages += s->pages;
	t->scan.listed += s->listed;
	t->scan.filtered += s->filtered;
	t->scan.evaluated += s->evaluated;
	t->scan.unchanged += s->unchanged;
	t->scan.failed += s->failed;
	t->scan.results += s->results;
	t->scan.deleted += s->deleted;
	t->scan.targets += s->targets;
	t->scan.forbidden += s->forbidden;
	t->scan.partial |= s->partial;
	t->scan.stopped |= s->stopped;
	t->scan.seconds += s->seconds;
	t->scan.list_seconds += s->list_seconds;
	t->scan.eval_seconds += s->eval_seconds;
	t->scan.commit_seconds += s->commit_seconds;
	t->reports.read += r->read;
	t->reports.created += r->created;
	t->reports.updated += r->updated;
	t->reports.deleted += r->deleted;
	t->reports.unchanged += r->unchanged;
	t->reports.conflicts += r->conflicts;
	t->reports.failed += r->failed;
	t->load_seconds += load;
	t->flush_seconds += flush;
	t->results += results;
	t->requests += requests;
}

/* "sha256:<hex>" of what ctx was fed (caller frees); frees ctx. NULL when it failed. */
static char *digest_end(EVP_MD_CTX *ctx)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char *out = NULL;

	if (ctx && EVP_DigestFinal_ex(ctx, md, &n) && n == 32) {
		out = gv_xcalloc(GV_SHA256_TEXT_LEN, 1);
		gv_sha256_text(md, out);
	}
	EVP_MD_CTX_free(ctx);
	return out;
}

static EVP_MD_CTX *digest_begin(void)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static void digest_str(EVP_MD_CTX *ctx, const char *s)
{
	EVP_DigestUpdate(ctx, s ? s : "", strlen(s ? s : ""));
	EVP_DigestUpdate(ctx, "\n", 1);
}

static void digest_json(EVP_MD_CTX *ctx, const json_t *v)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;

	digest_str(ctx, text ? text : "null");
	free(text);
}

/*
 * This very build of gavel: "sha256:<hex>" of the running executable, so
 * that reports written by another build (whose engine may decide
 * otherwise) are evaluated again. NULL when it cannot be read.
 */
static char *build_identity(void)
{
	EVP_MD_CTX *ctx = digest_begin();
	FILE *f = ctx ? fopen("/proc/self/exe", "rb") : NULL;
	char buf[65536];
	size_t n;
	bool ok;

	if (!f) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		EVP_DigestUpdate(ctx, buf, n);
	ok = !ferror(f);
	fclose(f);
	if (!ok) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	return digest_end(ctx);
}

/*
 * What every namespace's results depend on besides its objects and its
 * labels, when inputs digests can stand for results (caller frees): this
 * build, the layout, gavel's namespace, the policies (w->salt), gavel's
 * ConfigMap and the PolicyExceptions. NULL when they cannot: --dry-run
 * (the reports are printed), a resource limit (a namespace may be
 * scanned in part), a due policy or an exception whose results may
 * change with nothing of that changing (engine_doc_reads_outside: API
 * calls, ConfigMap lookups, time), or the build cannot be told.
 */
static char *inputs_salt(const struct once *w)
{
	const json_t *exc;
	EVP_MD_CTX *ctx;
	char *build;
	size_t i;

	if (w->o->dry_run || w->o->resource_limit || w->o->no_inputs)
		return NULL;
	for (i = 0; i < w->nall; i++) {
		if (engine_doc_reads_outside(engine_policy_doc(w->all[i]))) {
			gv_info(
			    "background: policy %s reads more than the objects: every object is "
			    "evaluated",
			    engine_policy_name(w->all[i]));
			return NULL;
		}
	}
	json_array_foreach(w->in->exceptions, i, exc)
	{
		if (engine_doc_reads_outside(exc))
			return NULL;
	}
	for (i = 0; i < w->nvall; i++) {
		if (vpscan_reads_outside(w->vall[i])) {
			gv_info("background: %s %s reads more than the objects: every object is "
				"evaluated",
				vpol_kind_name(w->vall[i]), vpol_name(w->vall[i]));
			return NULL;
		}
	}
	if (!(build = build_identity()) || !(ctx = digest_begin())) {
		free(build);
		return NULL;
	}
	digest_str(ctx, "gavel-scan-inputs-v1");
	digest_str(ctx, build);
	digest_str(ctx, w->o->split ? "split" : "namespace");
	if (w->o->report) { /* none: a digest as it was */
		char mode[96];

		digest_str(ctx, nsscan_report_mode(w->o->report, mode, sizeof(mode)));
	}
	digest_str(ctx, w->self);
	digest_str(ctx, w->salt);
	/* of gavel's ConfigMap, only resourceFilters matter in background mode */
	digest_json(ctx, json_object_get(w->in->config_data, "resourceFilters"));
	json_array_foreach(w->in->exceptions, i, exc)
	{
		const json_t *md = json_object_get(exc, "metadata");

		digest_json(ctx, json_object_get(md, "uid"));
		digest_json(ctx, json_object_get(md, "resourceVersion"));
	}
	if (w->nvall) {
		/* the CEL PolicyExceptions in force now (one that expires changes the digest) */
		struct view_vpolset *vs = view_state_vpols(w->in->state);
		size_t nx = 0;
		const json_t **xd;

		view_vpolset_exceptions(vs, &nx);
		xd = gv_xcalloc(nx + 1, sizeof(*xd));
		nx = view_vpolset_exception_docs_at(vs, (int64_t)time(NULL), xd);
		digest_str(ctx, "cel-exceptions");
		for (i = 0; i < nx; i++) {
			const json_t *md = json_object_get(xd[i], "metadata");

			digest_json(ctx, json_object_get(md, "uid"));
			digest_json(ctx, json_object_get(md, "resourceVersion"));
		}
		free(xd);
		/* and the ValidatingAdmissionPolicyBindings */
		{
			const json_t *const *bv = view_vpolset_bindings(vs, &nx);

			digest_str(ctx, "vap-bindings");
			for (i = 0; i < nx; i++) {
				const json_t *md = json_object_get(bv[i], "metadata");

				digest_json(ctx, json_object_get(md, "uid"));
				digest_json(ctx, json_object_get(md, "resourceVersion"));
			}
		}
	}
	free(build);
	return digest_end(ctx);
}

/*
 * The inputs of namespace ns (report_set_inputs; caller frees):
 * "context=<digest>; objects=<objects>", the context being w->inputs_salt
 * and the namespace's labels, the objects the digest of its objects
 * (scan_stats.inputs, scanner_inputs()). NULL when SHA-256 fails.
 */
static char *inputs_digest(const struct once *w, const char *ns, const char *objects)
{
	EVP_MD_CTX *ctx = digest_begin();
	char *context, *out;

	if (!ctx)
		return NULL;
	digest_str(ctx, w->inputs_salt);
	digest_str(ctx, ns);
	digest_json(ctx, *ns ? view_state_namespace_labels(w->in->state, ns) : NULL);
	if (!(context = digest_end(ctx)))
		return NULL;
	out = gv_xasprintf("context=%s; objects=%s", context, objects);
	free(context);
	return out;
}

/*
 * Whether the reports (items) were written for the same objects as
 * `inputs` but in another context (another build of gavel, other
 * policies, exceptions, resourceFilters or namespace labels): their
 * results are what they were, but the stamps must be renewed or every
 * later scan would evaluate everything again.
 */
static bool inputs_renew(const json_t *items, const char *ns, const char *inputs)
{
	const char *have = report_scan_inputs(items), *o1, *o2;

	if (!inputs || !have || report_inputs_unchanged(ns, items, inputs, NULL))
		return false;
	o1 = strstr(have, "; objects=");
	o2 = strstr(inputs, "; objects=");
	return o1 && o2 && !strncmp(o1, o2, strlen(o2)) &&
	       (o1[strlen(o2)] == ';' || !o1[strlen(o2)]);
}

/* memo[ns][ref of all[i]] == inputs (under w->mu). */
static bool memo_current(const struct once *w, const char *ns, size_t i, const char *inputs)
{
	const json_t *m = json_object_get(json_object_get(w->memo->ns, ns), w->refs[i]);

	return inputs && json_is_string(m) && !strcmp(json_string_value(m), inputs);
}

/* The same for vall[i]. */
static bool vmemo_current(const struct once *w, const char *ns, size_t i, const char *inputs)
{
	const json_t *m = json_object_get(json_object_get(w->memo->ns, ns), w->vrefs[i]);

	return inputs && json_is_string(m) && !strcmp(json_string_value(m), inputs);
}

/*
 * Records inputs for the policies flagged in which and vwhich (NULL = all
 * of them), under w->mu.
 */
static void memo_set(struct once *w, const char *ns, const bool *which, const bool *vwhich,
		     const char *inputs)
{
	json_t *m;

	if (!w->memo || !inputs)
		return;
	m = json_object_get(w->memo->ns, ns);
	if (!m) {
		m = json_object();
		json_object_set_new(w->memo->ns, ns, m);
	}
	for (size_t i = 0; i < w->nall; i++)
		if (!which || which[i])
			json_object_set_new(m, w->refs[i], json_string(inputs));
	for (size_t i = 0; i < w->nvall; i++)
		if (!vwhich || vwhich[i])
			json_object_set_new(m, w->vrefs[i], json_string(inputs));
}

/* Index of p in w->vall, or w->nvall. */
static size_t vall_index(const struct once *w, const struct vpol_policy *p)
{
	for (size_t i = 0; i < w->nvall; i++)
		if (w->vall[i] == p)
			return i;
	return w->nvall;
}

/*
 * The objects digest of a namespace with CEL policies: the legacy
 * scanner's and vpscan's together (the legacy one alone without CEL
 * policies, so that reports stamped before CEL policies keep their
 * stamps). "" when either is unknown. out has SCAN_INPUTS_LEN bytes.
 */
static void objects_join(const struct once *w, const char *legacy, const char *cel,
			 char out[SCAN_INPUTS_LEN])
{
	EVP_MD_CTX *ctx;
	char *d;

	if (!w->nvall || !legacy[0]) {
		snprintf(out, SCAN_INPUTS_LEN, "%s", w->nvall ? "" : legacy);
		return;
	}
	out[0] = '\0';
	if (!cel[0] || !(ctx = digest_begin()))
		return;
	digest_str(ctx, legacy);
	digest_str(ctx, cel);
	if ((d = digest_end(ctx))) {
		snprintf(out, SCAN_INPUTS_LEN, "%s", d);
		free(d);
	}
}

/* Index of p in w->all, or w->nall. */
static size_t all_index(const struct once *w, const struct engine_policy *p)
{
	for (size_t i = 0; i < w->nall; i++)
		if (w->all[i] == p)
			return i;
	return w->nall;
}

static bool proceeding(const struct once *w)
{
	return !w->o->hooks || !w->o->hooks->proceed || w->o->hooks->proceed(w->o->hooks->ud);
}

/*
 * One namespace. With inputs digests (w->inputs_salt), the metadata of its
 * reports is read first: when they carry inputs (report_scan_inputs), or
 * with a memo, the objects of every background policy are listed metadata
 * only (scanner_inputs) and, when the reports were written from these very
 * inputs (report_inputs_unchanged), that is all: nothing is evaluated.
 * With a memo, the due policies whose results were made under these inputs
 * are left out too. Otherwise the due policies scan its objects into a set
 * of their own (a journal), and, unless --dry-run, when the reports carry
 * the digest of an identical scan (report_scan_unchanged) and their inputs
 * stamps are current or the objects changed since (inputs_renew), nothing
 * more is read or written. Otherwise its reports are read, pruned, the
 * scan replayed onto them and they are written with the new digests (and
 * the inputs, when every background policy's results are current). With
 * o->emit, its reports are then emitted with those done before. *fatal:
 * the error was reading (the API server cannot be used: stop); a write
 * that fails (a namespace being deleted) leaves the other namespaces to
 * be done. Reports found unchanged are emitted as they are stored (read
 * once for that).
 */
static enum gv_code once_namespace(struct once *w, size_t idx, size_t budget, bool *partial,
				   bool *fatal, struct gv_err *err)
{
	const char *ns = w->spaces[idx];
	struct scan_options so = {0};
	struct report_options ro = nsscan_report_options(w->o);
	struct scan_stats sst = {0};
	struct report_stats rst = {0};
	struct scanner *scanner;
	struct report_set *scan, *rs = NULL;
	struct scope sc = {.ns = ns, .hooks = w->o->hooks};
	struct report_api api = {.ud = &sc, .proceed = scope_proceed}; /* client: the scanner's */
	const struct engine_policy **due = NULL;
	bool *fresh = NULL; /* with a memo: which of w->all this namespace evaluates */
	size_t ndue = 0;
	const struct vpol_policy **vdue = NULL;
	bool *vfresh = NULL; /* the same for w->vall */
	size_t nvdue = 0;
	struct vpscan_stats vst = {0};
	struct vpscan_args va = {0};
	double load = 0, flush = 0, t;
	size_t results = 0;
	char *digest = NULL, *inputs = NULL;
	json_t *items = NULL;
	enum gv_code rc = GV_OK;

	so.context = w->o->context;
	so.batch_size = w->o->batch_size;
	so.workers = w->o->workers;
	so.incremental = false; /* a scanner lives for one namespace: nothing to compare with */
	so.resource_limit = budget == SIZE_MAX ? 0 : budget;
	so.skip_namespace = w->self;
	so.only_namespace = ns;
	so.empty_resources = (const char *const *)w->empty;
	so.nempty = w->nempty;
	so.retain_since = w->start;
	so.inputs = w->inputs_salt != NULL && !w->memo;
	so.results = w->o->results;
	so.processed = w->o->processed;
	so.events = w->o->events;
	so.duration = w->o->duration;
	scanner = scanner_new(w->o->client, &so);
	/* both sets live this namespace's scan: one copy of each message */
	ro.intern_messages = true;
	ro.journal = true;
	scan = report_set_new(&ro);
	ro.journal = false;
	sc.s = scanner;
	api.client = scanner_client(scanner);
	*fatal = true;
	due = gv_xcalloc(w->ndue + 1, sizeof(*due));
	if (w->ndue)
		memcpy(due, w->due, w->ndue * sizeof(*due));
	ndue = w->ndue;
	vdue = gv_xcalloc(w->nvdue + 1, sizeof(*vdue));
	if (w->nvdue)
		memcpy(vdue, w->vdue, w->nvdue * sizeof(*vdue));
	nvdue = w->nvdue;
	va.client = scanner_client(scanner);
	va.state = w->in->state;
	va.ns = ns;
	va.self = w->self;
	va.since = w->start;
	va.batch_size = w->o->batch_size;
	va.results = w->o->results;
	va.context = w->o->context;
	if (w->inputs_salt) {
		/* reports written from the same inputs: nothing to evaluate */
		char objects[SCAN_INPUTS_LEN];
		size_t nobj = 0;

		t = mono_seconds();
		rc = report_list_metadata(&api, ns, &items, err);
		load = mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "reading the reports: ");
			goto out;
		}
		if (w->memo || report_scan_inputs(items)) {
			t = mono_seconds();
			scanner_inputs(scanner, w->in->state, w->all, w->nall, objects, &nobj);
			if (w->nvall) {
				struct gv_err verr = {0};
				char legacy[SCAN_INPUTS_LEN];

				va.due = w->vall;
				va.ndue = w->nvall;
				va.metadata_only = true;
				if (vpscan_namespace(w->plan, &va, &vst, &verr))
					gv_debug("background: %s: inputs not known: %s", ns,
						 verr.msg);
				nobj += vst.listed;
				snprintf(legacy, sizeof(legacy), "%s", objects);
				objects_join(w, legacy, vst.inputs, objects);
				va.metadata_only = false;
				memset(&vst, 0, sizeof(vst));
			}
			sst.list_seconds = sst.seconds = mono_seconds() - t;
			inputs = objects[0] ? inputs_digest(w, ns, objects) : NULL;
			if (inputs && report_inputs_unchanged(ns, items, inputs, &results)) {
				sst.listed = sst.unchanged = nobj;
				rst.unchanged += json_array_size(items);
				pthread_mutex_lock(&w->mu);
				memo_set(w, ns, NULL, NULL, inputs);
				pthread_mutex_unlock(&w->mu);
				*fatal = false;
				goto out;
			}
			if (w->memo && inputs) {
				fresh = gv_xcalloc(w->nall + 1, sizeof(*fresh));
				vfresh = gv_xcalloc(w->nvall + 1, sizeof(*vfresh));
				ndue = 0;
				nvdue = 0;
				pthread_mutex_lock(&w->mu);
				for (size_t i = 0; i < w->ndue; i++) {
					size_t k = all_index(w, w->due[i]);
					if (k < w->nall && memo_current(w, ns, k, inputs))
						continue;
					due[ndue++] = w->due[i];
					if (k < w->nall)
						fresh[k] = true;
				}
				for (size_t i = 0; i < w->nvdue; i++) {
					size_t k = vall_index(w, w->vdue[i]);
					if (k < w->nvall && vmemo_current(w, ns, k, inputs))
						continue;
					vdue[nvdue++] = w->vdue[i];
					if (k < w->nvall)
						vfresh[k] = true;
				}
				pthread_mutex_unlock(&w->mu);
				if (!ndue && !nvdue) {
					sst.listed = sst.unchanged = nobj;
					*fatal = false;
					goto out;
				}
			} else {
				free(inputs);
				inputs = NULL;
			}
			memset(&sst, 0, sizeof(sst));
			results = 0;
		}
	}
	rc = scanner_run(scanner, w->in->state, due, ndue, scan, &w->hooks, NULL, &sst, err);
	if (rc)
		goto out;
	if (sst.stopped) {
		*fatal = false;
		goto out;
	}
	if (nvdue && !sst.partial) {
		double tv = mono_seconds();

		va.due = vdue;
		va.ndue = nvdue;
		va.rs = scan;
		rc = vpscan_namespace(w->plan, &va, &vst, err);
		sst.listed += vst.listed;
		sst.filtered += vst.filtered;
		sst.evaluated += vst.evaluated;
		sst.results += vst.results;
		sst.requests += vst.requests;
		sst.forbidden += vst.forbidden;
		sst.eval_seconds += mono_seconds() - tv;
		sst.seconds += mono_seconds() - tv;
		if (rc)
			goto out;
	}
	*partial = sst.partial;
	if (!sst.partial)
		digest = report_journal_digest(scan, w->salt);
	if (!w->memo && w->inputs_salt && sst.inputs[0]) {
		char objects[SCAN_INPUTS_LEN];

		objects_join(w, sst.inputs, nvdue == w->nvall ? vst.inputs : "", objects);
		inputs = objects[0] ? inputs_digest(w, ns, objects) : NULL;
	}
	if (!w->o->dry_run && digest) {
		if (!items) {
			t = mono_seconds();
			rc = report_list_metadata(&api, ns, &items, err);
			load += mono_seconds() - t;
			if (rc) {
				gv_err_prefix(err, "reading the reports: ");
				goto out;
			}
		}
		if (report_scan_unchanged(scan, ns, items, digest) &&
		    (w->memo || !inputs_renew(items, ns, inputs))) {
			rst.unchanged += json_array_size(items);
			results = report_count(scan);
			pthread_mutex_lock(&w->mu);
			memo_set(w, ns, fresh, vfresh, inputs);
			pthread_mutex_unlock(&w->mu);
			*fatal = false;
			goto out;
		}
	}
	rs = report_set_new(&ro);
	{
		struct report_api sapi = {.client = scanner_client(sc.s), .scope = ns};

		t = mono_seconds();
		rc = report_load(rs, &sapi, &rst, err);
		load += mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "reading the reports: ");
			goto out;
		}
	}
	report_prune_live(rs, view_state_policyset(w->in->state), w->live, w->nlive);
	report_replay_spend(rs, scan);
	report_set_digest(rs, digest);
	if (w->memo && inputs) {
		/* stamped only when every background policy's results are now current */
		bool all = true;

		pthread_mutex_lock(&w->mu);
		for (size_t i = 0; i < w->nall && all; i++)
			all = fresh[i] || memo_current(w, ns, i, inputs);
		for (size_t i = 0; i < w->nvall && all; i++)
			all = vfresh[i] || vmemo_current(w, ns, i, inputs);
		pthread_mutex_unlock(&w->mu);
		report_set_inputs(rs, all ? inputs : NULL);
	} else {
		report_set_inputs(rs, inputs);
	}
	*fatal = false;
	if (!w->o->dry_run) {
		if (!proceeding(w))
			goto out;
		t = mono_seconds();
		rc = report_flush(rs, &api, &rst, err);
		flush = mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "writing the reports: ");
			goto out;
		}
		if (report_dirty_count(rs))
			goto out; /* stopped by proceed(): not written */
		pthread_mutex_lock(&w->mu);
		memo_set(w, ns, fresh, vfresh, inputs);
		pthread_mutex_unlock(&w->mu);
	}
	if (w->rendered)
		w->rendered[idx] = report_render_all(rs);
	results = report_count(rs);
out:
	if (w->rendered && !rc && !w->rendered[idx]) {
		/* unchanged: printed as they are stored */
		struct report_api sapi = {.client = scanner_client(sc.s), .scope = ns};
		struct report_set *stored = report_set_new(&ro);

		rc = report_load(stored, &sapi, &rst, err);
		if (rc)
			gv_err_prefix(err, "reading the reports: ");
		else
			w->rendered[idx] = report_render_all(stored);
		report_set_free(stored);
	}
	if (rc)
		gv_err_prefix(err, "%s%s: ", *ns ? "namespace " : "cluster-scoped objects",
			      *ns ? ns : "");
	pthread_mutex_lock(&w->mu);
	/* in namespace order: what is done after those still running waits for them */
	while (w->rendered && w->emitted < w->nspaces && w->rendered[w->emitted]) {
		w->o->emit(w->o->emit_ud, w->rendered[w->emitted]);
		json_decref(w->rendered[w->emitted]);
		w->rendered[w->emitted++] = NULL;
	}
	stats_add(w->stats, &sst, &rst, load, flush, results, scanner_requests(scanner));
	if (w->budget != SIZE_MAX)
		w->budget -= sst.listed < w->budget ? sst.listed : w->budget;
	pthread_mutex_unlock(&w->mu);
	json_decref(items);
	free(digest);
	free(inputs);
	free(due);
	free(fresh);
	free(vdue);
	free(vfresh);
	report_set_free(rs);
	report_set_free(scan);
	scanner_free(scanner);
	return rc;
}

static void *once_main(void *ud)
{
	struct once *w = ud;

	for (;;) {
		struct gv_err err = {0};
		bool partial = false, fatal = false;
		size_t idx, budget;
		enum gv_code rc;

		pthread_mutex_lock(&w->mu);
		if (w->stop || w->next >= w->nspaces) {
			pthread_mutex_unlock(&w->mu);
			break;
		}
		idx = w->next++;
		budget = w->budget;
		pthread_mutex_unlock(&w->mu);
		if (!proceeding(w)) {
			pthread_mutex_lock(&w->mu);
			w->stop = true;
			w->stats->scan.stopped = true;
			pthread_mutex_unlock(&w->mu);
			break;
		}
		rc = once_namespace(w, idx, budget, &partial, &fatal, &err);
		if (w->o->release_heap)
			gv_heap_release();
		pthread_mutex_lock(&w->mu);
		if (rc && !w->rc) {
			w->rc = rc;
			w->err = err;
		}
		if (!w->stop && (partial || w->budget == 0))
			w->stop_idx = partial ? idx : idx + 1;
		if (fatal || partial || w->budget == 0 || w->stats->scan.stopped)
			w->stop = true;
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

/* page_done of o->hooks, one call at a time (namespaces are scanned side by side). */
static void hook_page_done(void *ud)
{
	struct once *w = ud;

	pthread_mutex_lock(&w->hook_mu);
	w->o->hooks->page_done(w->o->hooks->ud);
	pthread_mutex_unlock(&w->hook_mu);
}

static bool hook_proceed(void *ud)
{
	return proceeding(ud);
}

/*
 * The namespaced resources the background policies list that have no object in
 * the whole cluster (one metadata-only request with limit=1 each), so
 * that the namespaces do not ask for them one by one: with autogen rules
 * a Pod policy lists seven kinds, most of them empty on many clusters.
 * A resource whose question fails is not empty; when the API server does
 * not answer, the questions stop there (the namespaces then fail at once,
 * instead of each question waiting for its retries).
 */
static void empty_resources(struct once *w, struct scanner *counter)
{
	bool down = false; /* the API server does not answer: the namespaces will tell */

	for (size_t i = 0; i < w->nall && !down; i++) {
		struct scan_kinds ks = {0};

		scan_policy_kinds(w->all[i], &ks);
		for (size_t k = 0; k < ks.n && !down; k++) {
			struct kube_resource r = {0};
			struct kube_status st;
			struct gv_err err = {0};
			char *key, *coll, *path;
			json_t *list = NULL;
			bool seen = false;

			if (kube_discover(w->o->client, ks.v[k].group, ks.v[k].version,
					  ks.v[k].kind, &r, &err))
				continue;
			if (!r.namespaced || !r.listable) {
				kube_resource_release(&r);
				continue;
			}
			key = scan_resource_key(&r);
			for (size_t j = 0; j < w->nempty && !seen; j++)
				seen = !strcmp(w->empty[j], key);
			coll = kube_path(&r, NULL, NULL);
			path = gv_xasprintf("%s?limit=1", coll);
			memset(&st, 0, sizeof(st));
			if (!seen &&
			    scanner_request_view(counter, "GET", path, KUBE_VIEW_METADATA_LIST,
						 NULL, &list, &st, &err)) {
				down = st.http == 0 || st.http >= 500;
			} else if (!seen && json_array_size(json_object_get(list, "items")) == 0) {
				gv_debug(
				    "background: no %s in the cluster: not listed per namespace",
				    key);
				w->empty =
				    gv_xrealloc(w->empty, (w->nempty + 1) * sizeof(*w->empty));
				w->empty[w->nempty++] = key;
				key = NULL;
			}
			json_decref(list);
			free(path);
			free(coll);
			free(key);
			kube_resource_release(&r);
		}
		scan_kinds_release(&ks);
	}
}

/*
 * What reports depend on besides the objects scanned: every policy (not
 * only the background ones: deleting an admission-only policy removes its
 * results), by reference and fingerprint (scan_policy_fingerprint: its
 * spec and annotations). Caller frees.
 */
static char *policy_salt(const struct engine_policyset *set, const struct view_vpolset *vs)
{
	size_t nl = set ? engine_policyset_count(set) : 0, n = nl + view_vpolset_count(vs);
	char **v = gv_xcalloc(n + 1, sizeof(*v));
	struct gv_buf b = {0};

	for (size_t i = 0; i < nl; i++) {
		const struct engine_policy *p = engine_policyset_get(set, i);
		char *ref = report_policy_ref(p);

		v[i] =
		    gv_xasprintf("%s=%016llx", ref, (unsigned long long)scan_policy_fingerprint(p));
		free(ref);
	}
	/* CEL policies (none: the salt of a legacy set is what it always was) */
	for (size_t i = nl; i < n; i++) {
		const struct vpol_policy *p = view_vpolset_policy(vs, i - nl);
		char *ref = vpscan_policy_ref(p);

		v[i] = gv_xasprintf("%s/%s=%016llx", vpscan_source(p), ref,
				    (unsigned long long)vpscan_fingerprint(p));
		free(ref);
	}
	qsort(v, n, sizeof(*v), gv_strptr_cmp);
	for (size_t i = 0; i < n; i++) {
		gv_buf_adds(&b, v[i]);
		gv_buf_addc(&b, '\n');
		free(v[i]);
	}
	free(v);
	return gv_buf_detach(&b);
}

/* report_prune_live()'s list of every CEL policy of vs (refs owned by *refs). */
static void live_init(struct report_live **live, char ***refs, size_t *n,
		      const struct view_vpolset *vs)
{
	size_t k = view_vpolset_count(vs);

	*live = gv_xcalloc(k + 1, sizeof(**live));
	*refs = gv_xcalloc(k + 1, sizeof(**refs));
	for (size_t i = 0; i < k; i++) {
		const struct vpol_policy *p = view_vpolset_policy(vs, i);

		(*refs)[i] = vpscan_policy_ref(p);
		(*live)[i].ref = (*refs)[i];
		(*live)[i].source = vpscan_source(p);
		(*live)[i].background = vpscan_background(p);
	}
	*n = k;
}

static void live_release(struct report_live *live, char **refs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(refs[i]);
	free(refs);
	free(live);
}

static void once_init(struct once *w, const struct nsscan_options *o, const struct nsscan_input *in,
		      struct nsscan_memo *memo, struct nsscan_stats *stats)
{
	size_t first = 0;

	w->o = o;
	w->in = in;
	w->memo = memo;
	w->self = o->namespace && *o->namespace ? o->namespace : "gavel";
	w->all = in->all;
	w->nall = in->nall;
	w->due = in->due;
	w->ndue = in->ndue;
	w->refs = gv_xcalloc(w->nall + 1, sizeof(*w->refs));
	for (size_t i = 0; i < w->nall; i++)
		w->refs[i] = report_policy_ref(w->all[i]);
	w->salt = policy_salt(view_state_policyset(in->state), view_state_vpols(in->state));
	w->vall = in->vall;
	w->nvall = in->nvall;
	w->vdue = in->vdue;
	w->nvdue = in->nvdue;
	w->vrefs = gv_xcalloc(w->nvall + 1, sizeof(*w->vrefs));
	for (size_t i = 0; i < w->nvall; i++) {
		char *ref = vpscan_policy_ref(w->vall[i]);
		w->vrefs[i] = gv_xasprintf("%s/%s", vpscan_source(w->vall[i]), ref);
		free(ref);
	}
	live_init(&w->live, &w->live_refs, &w->nlive, view_state_vpols(in->state));
	w->stats = stats;
	w->nspaces = json_array_size(in->namespaces) + 1;
	w->spaces = gv_xcalloc(w->nspaces, sizeof(*w->spaces));
	w->spaces[0] = "";
	for (size_t i = 1; i < w->nspaces; i++)
		w->spaces[i] = json_string_value(json_array_get(in->namespaces, i - 1));
	/* a limited run goes on where the last one stopped, then wraps around */
	if (memo && memo->cursor && o->resource_limit) {
		while (first < w->nspaces && strcmp(w->spaces[first], memo->cursor) < 0)
			first++;
		if (first < w->nspaces && first > 0) {
			const char **v = gv_xcalloc(w->nspaces, sizeof(*v));
			for (size_t i = 0; i < w->nspaces; i++)
				v[i] = w->spaces[(first + i) % w->nspaces];
			free(w->spaces);
			w->spaces = v;
		}
	}
	w->budget = o->resource_limit ? o->resource_limit : SIZE_MAX;
	w->stop_idx = SIZE_MAX;
	if (o->hooks) {
		w->hooks.proceed = o->hooks->proceed ? hook_proceed : NULL;
		w->hooks.page_done = o->hooks->page_done ? hook_page_done : NULL;
		w->hooks.ud = w;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->hook_mu, NULL);
}

static void once_release(struct once *w)
{
	if (w->rendered)
		for (size_t i = 0; i < w->nspaces; i++)
			json_decref(w->rendered[i]);
	free(w->rendered);
	for (size_t i = 0; i < w->nall; i++)
		free(w->refs[i]);
	free(w->refs);
	for (size_t i = 0; i < w->nvall; i++)
		free(w->vrefs[i]);
	free(w->vrefs);
	live_release(w->live, w->live_refs, w->nlive);
	vpscan_plan_free(w->plan);
	free(w->spaces);
	free(w->salt);
	free(w->inputs_salt);
	for (size_t i = 0; i < w->nempty; i++)
		free(w->empty[i]);
	free(w->empty);
	pthread_mutex_destroy(&w->mu);
	pthread_mutex_destroy(&w->hook_mu);
}

enum gv_code nsscan_run(const struct nsscan_options *o, const struct nsscan_input *in,
			struct nsscan_memo *memo, struct nsscan_stats *stats, struct gv_err *err)
{
	struct nsscan_stats local = {0};
	struct scanner *counter;
	struct once w = {0};
	pthread_t th[NSSCAN_AT_ONCE];
	int nth = 0, want;
	enum gv_code rc;

	if (!stats)
		stats = &local;
	if (memo)
		memo_apply_forget(memo);
	counter = scanner_new(o->client, NULL); /* requests outside the namespaces */
	once_init(&w, o, in, memo, stats);
	w.inputs_salt = inputs_salt(&w);
	w.start = (int64_t)time(NULL);
	empty_resources(&w, counter);
	if (w.nvall)
		w.plan = vpscan_plan_new(scanner_client(counter), w.vall, w.nvall);
	if (o->emit)
		w.rendered = gv_xcalloc(w.nspaces, sizeof(*w.rendered));
	/* one namespace at a time under a resource limit: it is spent in order */
	want = o->resource_limit ? 1 : NSSCAN_AT_ONCE;
	for (int i = 1; i < want; i++) {
		if (pthread_create(&th[nth], NULL, once_main, &w)) {
			gv_warn("background: cannot start a thread: one namespace at a time");
			break;
		}
		nth++;
	}
	once_main(&w);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	rc = w.rc;
	if (rc)
		gv_err_set(err, rc, "%s", w.err.msg);
	if (memo && !rc && !stats->scan.stopped) {
		free(memo->cursor);
		memo->cursor = w.stop_idx < w.nspaces ? gv_xstrdup(w.spaces[w.stop_idx]) : NULL;
	}
	stats->requests += scanner_requests(counter);
	once_release(&w);
	scanner_free(counter);
	return rc;
}

enum gv_code nsscan_prune(const struct nsscan_options *o, const struct nsscan_input *in,
			  size_t *pruned, struct nsscan_stats *stats, struct gv_err *err)
{
	const struct engine_policyset *set = view_state_policyset(in->state);
	struct report_options ro = nsscan_report_options(o);
	struct scanner *counter = scanner_new(o->client, NULL);
	size_t nspaces = json_array_size(in->namespaces) + 1, total = 0;
	struct report_stats rst = {0};
	enum gv_code rc = GV_OK;
	struct report_live *live;
	char **live_refs;
	size_t nlive;

	ro.intern_messages = true; /* a set a namespace */
	live_init(&live, &live_refs, &nlive, view_state_vpols(in->state));
	for (size_t i = 0; i < nspaces && !rc; i++) {
		const char *ns = i ? json_string_value(json_array_get(in->namespaces, i - 1)) : "";
		struct scope sc = {.s = counter, .ns = ns, .hooks = o->hooks};
		struct report_api lapi = {.client = scanner_client(counter), .scope = ns};
		struct report_api wapi = {
		    .client = scanner_client(counter), .ud = &sc, .proceed = scope_proceed};
		struct report_set *rs;
		size_t n;

		if (!scope_proceed(&sc))
			break;
		rs = report_set_new(&ro);
		rc = report_load(rs, &lapi, &rst, err);
		if (rc) {
			gv_err_prefix(err, "reading the reports: ");
		} else if ((n = report_prune_live(rs, set, live, nlive)) > 0) {
			total += n;
			rc = report_flush(rs, &wapi, &rst, err);
			if (rc)
				gv_err_prefix(err, "writing the reports: ");
		}
		if (rc)
			gv_err_prefix(err, "%s%s: ", *ns ? "namespace " : "cluster-scoped objects",
				      *ns ? ns : "");
		report_set_free(rs);
		if (o->release_heap)
			gv_heap_release();
	}
	live_release(live, live_refs, nlive);
	if (pruned)
		*pruned = total;
	if (stats) {
		struct scan_stats none = {0};
		stats_add(stats, &none, &rst, 0, 0, 0, scanner_requests(counter));
	}
	scanner_free(counter);
	return rc;
}

enum gv_code nsscan_once(const struct nsscan_options *o, struct nsscan_stats *stats,
			 struct gv_err *err)
{
	const char *self = o->namespace && *o->namespace ? o->namespace : "gavel";
	struct scanner *counter =
	    scanner_new(o->client, NULL); /* requests outside the namespaces */
	struct scope sc = {.s = counter};
	struct clusterstate cs = {0};
	struct nsscan_input in = {0};
	const struct engine_policy **due = NULL;
	size_t ndue = 0;
	const struct vpol_policy **vdue = NULL;
	size_t nvdue = 0;
	json_t *changes = NULL;
	const struct engine_policyset *set;
	double t0 = mono_seconds();
	size_t np;
	enum gv_code rc;

	memset(stats, 0, sizeof(*stats));
	{
		double t = mono_seconds();

		rc = clusterstate_fetch(scanner_client(sc.s), self, "gavel", &cs, err);
		stats->fetch_seconds = mono_seconds() - t;
		if (rc)
			goto out;
	}
	set = view_state_policyset(cs.state);
	np = set ? engine_policyset_count(set) : 0;
	due = gv_xcalloc(np + 1, sizeof(*due));
	for (size_t i = 0; i < np; i++)
		if (engine_policy_background(engine_policyset_get(set, i)))
			due[ndue++] = engine_policyset_get(set, i);
	{
		struct view_vpolset *vs = view_state_vpols(cs.state);

		vdue = gv_xcalloc(view_vpolset_count(vs) + 1, sizeof(*vdue));
		for (size_t i = 0; i < view_vpolset_count(vs); i++)
			if (vpscan_background(view_vpolset_policy(vs, i)))
				vdue[nvdue++] = view_vpolset_policy(vs, i);
	}
	stats->policies = ndue + nvdue;
	in.state = cs.state;
	in.namespaces = cs.namespaces;
	in.config_data = cs.config_data;
	in.exceptions = cs.exceptions;
	in.all = in.due = due;
	in.nall = in.ndue = ndue;
	in.vall = in.vdue = vdue;
	in.nvall = in.nvdue = nvdue;
	rc = nsscan_run(o, &in, NULL, stats, err);
	if (rc)
		goto out;
	if (!o->dry_run) {
		time_t end = time(NULL);
		double t = mono_seconds();

		changes = json_object();
		for (size_t i = 0; i < ndue; i++) {
			struct scanstate_entry e = {0};
			const char *uid = json_string_value(json_object_get(
			    json_object_get(engine_policy_doc(due[i]), "metadata"), "uid"));
			char *key = scanstate_key(due[i]), *text;

			e.last_scan = end;
			e.fingerprint = scan_policy_fingerprint(due[i]);
			snprintf(e.uid, sizeof(e.uid), "%s", uid ? uid : "");
			text = scanstate_encode(&e);
			json_object_set_new(changes, key, json_string(text));
			free(text);
			free(key);
		}
		for (size_t i = 0; i < nvdue; i++) {
			struct scanstate_entry e = {0};
			const char *uid = json_string_value(
			    json_object_get(json_object_get(vpol_doc(vdue[i]), "metadata"), "uid"));
			char *key = vpscan_state_key(vdue[i]), *text;

			e.last_scan = end;
			e.fingerprint = vpscan_fingerprint(vdue[i]);
			snprintf(e.uid, sizeof(e.uid), "%s", uid ? uid : "");
			text = scanstate_encode(&e);
			json_object_set_new(changes, key, json_string(text));
			free(text);
			free(key);
		}
		rc = scanstate_write(scanner_client(sc.s), self, SCANSTATE_CONFIGMAP, changes, err);
		stats->flush_seconds += mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "writing the scan state: ");
			goto out;
		}
	}
out:
	stats->requests += scanner_requests(counter);
	stats->seconds = mono_seconds() - t0;
	json_decref(changes);
	free(due);
	free(vdue);
	clusterstate_release(&cs);
	scanner_free(counter);
	return rc;
}
