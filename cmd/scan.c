/*
 * scan.c - `gavel scan`: one background scan of every background policy
 * now, without leader election or schedules.
 *
 *   gavel scan [--kubeconfig F] [--dry-run] [-o yaml|json] [--namespace NS]
 *              [--split-policy-report] [--background-scan-batch-size N]
 *              [--background-scan-workers N] [--background-scan-resource-limit N]
 *              [--log-level L]
 *
 * Reads the policies, exceptions, namespaces and gavel's ConfigMap once,
 * asks once per namespaced kind whether the cluster has any object of it
 * (kinds with none are not listed per namespace), then goes namespace by
 * namespace (cluster-scoped objects first, then the namespaces in name
 * order, SCAN_NAMESPACES_AT_ONCE side by side): reads the metadata of the
 * namespace's reports; when they were written from the very inputs the
 * namespace has now (report_inputs_unchanged: the same objects at the same
 * resourceVersions, listed metadata only, and the same policies,
 * exceptions, resourceFilters, labels and gavel build), that is all.
 * Otherwise it scans the namespace's objects (scanner_run with
 * scan_options.only_namespace) into a set of their own that records the
 * changes (a journal); when every report carries the digest of this very
 * scan (report_scan_unchanged: same objects, results and policies,
 * written by gavel alone), that is all. Otherwise it reads the reports
 * (report_load scoped to the namespace), prunes them, replays the scan on
 * them and writes them with the new digest. So memory holds one
 * namespace's reports and one list page per namespace in progress,
 * whatever the size of the cluster, and the API server writes one
 * namespace's reports while the next is listed. Then every policy's last
 * scan goes to the scan-state ConfigMap. --dry-run writes nothing and
 * prints the reports as they would be (YAML unless -o json); -o prints
 * them after writing. A summary line goes to stderr:
 *
 *   gavel scan: P policies, N objects (E evaluated, U unchanged, F filtered,
 *   X failed), R results in the reports; reports: C created, U updated,
 *   D deleted, K unchanged (I read); Q API requests; S s (policies A s,
 *   reading reports B s, scan C s: lists D s, evaluation E s, merge F s;
 *   writing G s)
 *
 * (the phase times are summed over the namespaces, so with namespaces
 * side by side they can add up to more than S).
 *
 * Exit 0 on success, 1 when some objects could not be evaluated or some
 * kinds were skipped (403), 2 on usage errors and when the API server
 * cannot be used (the namespaces done before keep their reports written).
 */
#include "cmd/cmd.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "background/clusterstate.h"
#include "background/context.h"
#include "background/reconciler.h"
#include "background/report.h"
#include "background/scan.h"
#include "background/scanstate.h"
#include "common/gv.h"
#include "common/log.h"
#include "common/yaml.h"
#include "kube/kube.h"
#include "common/banned.h"

/*
 * Namespaces scanned side by side: while one waits for the API server to
 * store its reports, the other is listed and evaluated.
 */
#define SCAN_NAMESPACES_AT_ONCE 2

static void usage(FILE *f)
{
	fputs(
	    "usage: gavel scan [options]\n"
	    "\n"
	    "Scans every background policy now (no leader election, no schedules) and\n"
	    "writes gavel's PolicyReports and ClusterPolicyReports.\n"
	    "\n"
	    "options:\n"
	    "  --kubeconfig F                       cluster configuration (default: $KUBECONFIG,\n"
	    "                                       in-cluster, ~/.kube/config)\n"
	    "  --dry-run                            write nothing; print the reports (YAML)\n"
	    "  -o, --output yaml|json               print the reports\n"
	    "  --namespace NS                       gavel's namespace, never scanned (default\n"
	    "                                       $POD_NAMESPACE, else gavel)\n"
	    "  --split-policy-report                one report per policy per namespace\n"
	    "  --background-scan-batch-size N       objects per list page (default 500)\n"
	    "  --background-scan-workers N          evaluation threads (default 2)\n"
	    "  --background-scan-resource-limit N   at most N objects (default: no limit)\n"
	    "  --log-level L                        debug, info, warn, error (default warn)\n",
	    f);
}

static bool number(const char *v, long lo, long hi, long *out)
{
	char *end;
	long n;

	if (!v || !*v)
		return false;
	n = strtol(v, &end, 10);
	if (*end || n < lo || n > hi)
		return false;
	*out = n;
	return true;
}

static double mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum gv_code counted_request(void *ud, const char *method, const char *path,
				    const json_t *body, json_t **out, struct kube_status *st,
				    struct gv_err *err)
{
	return scanner_request(ud, method, path, body, out, st, err);
}

static enum gv_code counted_request_view(void *ud, const char *method, const char *path,
					 enum kube_view view, const json_t *body, json_t **out,
					 struct kube_status *st, struct gv_err *err)
{
	return scanner_request_view(ud, method, path, view, body, out, st, err);
}

/*
 * report_load's view of the API: the reports of one namespace ("" = the
 * cluster's) only, read one object per page, so that a namespace's
 * reports are never all parsed at once (the model they are folded into is
 * much smaller than their JSON).
 */
struct scope {
	struct scanner *s;
	const char *ns;
};

/* path with the value of its `limit` query parameter replaced by 1 (caller frees). */
static char *limit_one(const char *path)
{
	const char *q = strchr(path, '?'), *l, *end;

	for (l = q; l && *l; l = strchr(l + 1, '&'))
		if (!strncmp(l + 1, "limit=", 6))
			break;
	if (!l || !*l)
		return gv_xstrdup(path);
	l += 7;
	end = l + strcspn(l, "&");
	return gv_xasprintf("%.*s1%s", (int)(l - path), path, end);
}

/* Whether path is collection coll, with or without a query. */
static bool is_collection(const char *path, const char *coll)
{
	size_t n = strlen(coll);

	return !strncmp(path, coll, n) && (path[n] == '?' || !path[n]);
}

static enum gv_code scoped_request(void *ud, const char *method, const char *path,
				   const json_t *body, json_t **out, struct kube_status *st,
				   struct gv_err *err)
{
	static const char prs[] = "/apis/" REPORT_API_VERSION "/policyreports";
	static const char cprs[] = "/apis/" REPORT_API_VERSION "/clusterpolicyreports";
	const struct scope *sc = ud;
	bool pr = !strcmp(method, "GET") && is_collection(path, prs);
	bool cpr = !strcmp(method, "GET") && is_collection(path, cprs);
	char *ens, *one, *scoped;
	enum gv_code rc;

	if ((pr && !*sc->ns) || (cpr && *sc->ns)) {
		/* the other scope's collection: nothing of this namespace there */
		memset(st, 0, sizeof(*st));
		st->http = 200;
		if (!out)
			return GV_OK;
		*out = json_pack("{s:s, s:s, s:{}, s:[]}", "kind",
				 pr ? "PolicyReportList" : "ClusterPolicyReportList", "apiVersion",
				 REPORT_API_VERSION, "metadata", "items");
		return GV_OK;
	}
	if (!pr && !cpr)
		return scanner_request(sc->s, method, path, body, out, st, err);
	one = limit_one(path);
	if (cpr) {
		scoped = one;
		one = NULL;
	} else {
		ens = kube_escape(sc->ns);
		scoped = gv_xasprintf("/apis/" REPORT_API_VERSION "/namespaces/%s/policyreports%s",
				      ens, one + sizeof(prs) - 1);
		free(ens);
	}
	rc = scanner_request(sc->s, method, scoped, body, out, st, err);
	free(scoped);
	free(one);
	return rc;
}

/* The whole run: what the namespaces share. */
struct once {
	const struct reconciler_once_options *o;
	const char *self; /* gavel's namespace */
	const struct clusterstate *cs;
	const struct engine_policy **due;
	size_t ndue;
	const char **spaces; /* "" (cluster-scoped objects), then the namespaces */
	size_t nspaces;
	char *salt; /* what the reports depend on besides the scan: the policies (policy_salt) */
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

	pthread_mutex_t mu;
	size_t next;   /* the next namespace to take */
	size_t budget; /* objects left under the resource limit; SIZE_MAX = none */
	bool stop;     /* the API server fails, or the resource limit: take no more namespaces */
	enum gv_code rc;
	struct gv_err err; /* the first error */
	struct reconciler_once_stats *stats;
};

static void stats_add(struct reconciler_once_stats *t, const struct scan_stats *s,
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

	if (w->o->dry_run || w->o->resource_limit)
		return NULL;
	for (i = 0; i < w->ndue; i++) {
		if (engine_doc_reads_outside(engine_policy_doc(w->due[i]))) {
			gv_info(
			    "gavel scan: policy %s reads more than the objects: every object is "
			    "evaluated",
			    engine_policy_name(w->due[i]));
			return NULL;
		}
	}
	json_array_foreach(w->cs->exceptions, i, exc)
	{
		if (engine_doc_reads_outside(exc))
			return NULL;
	}
	if (!(build = build_identity()) || !(ctx = digest_begin())) {
		free(build);
		return NULL;
	}
	digest_str(ctx, "gavel-scan-inputs-v1");
	digest_str(ctx, build);
	digest_str(ctx, w->o->split ? "split" : "namespace");
	digest_str(ctx, w->self);
	digest_str(ctx, w->salt);
	/* of gavel's ConfigMap, only resourceFilters matter in background mode */
	digest_json(ctx, json_object_get(w->cs->config_data, "resourceFilters"));
	json_array_foreach(w->cs->exceptions, i, exc)
	{
		const json_t *md = json_object_get(exc, "metadata");

		digest_json(ctx, json_object_get(md, "uid"));
		digest_json(ctx, json_object_get(md, "resourceVersion"));
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
	digest_json(ctx, *ns ? view_state_namespace_labels(w->cs->state, ns) : NULL);
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

/*
 * One namespace. With inputs digests (w->inputs_salt), the metadata of its
 * reports is read first: when they carry inputs (report_scan_inputs), the
 * objects are listed metadata only (scanner_inputs) and, when the reports
 * were written from these very inputs (report_inputs_unchanged), that is
 * all: nothing is evaluated. Otherwise its objects are scanned into a set
 * of their own (a journal), and, unless --dry-run, when the reports carry
 * the digest of an identical scan (report_scan_unchanged) and their inputs
 * stamps are current or the objects changed since (inputs_renew), nothing
 * more is read or written. Otherwise its reports are read, pruned, the
 * scan replayed onto them and they are written with the new digests. With
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
	struct scan_api sa = {.client = w->o->client};
	struct scan_options so = {0};
	struct report_options ro = {.split = w->o->split};
	struct scan_stats sst = {0};
	struct report_stats rst = {0};
	struct scanner *scanner;
	struct report_set *scan, *rs = NULL;
	struct scope sc;
	double load = 0, flush = 0, t;
	size_t results = 0;
	char *digest = NULL, *inputs = NULL;
	json_t *items = NULL;
	enum gv_code rc;

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
	so.inputs = w->inputs_salt != NULL;
	scanner = scanner_new(&sa, &so);
	ro.journal = true;
	scan = report_set_new(&ro);
	ro.journal = false;
	sc.s = scanner;
	sc.ns = ns;
	*fatal = true;
	if (w->inputs_salt) {
		/* reports written from the same inputs: nothing to evaluate */
		struct report_api api = {.request = counted_request,
					 .request_view = counted_request_view,
					 .ud = scanner};
		char objects[SCAN_INPUTS_LEN];
		size_t nobj = 0;

		t = mono_seconds();
		rc = report_list_metadata(&api, ns, &items, err);
		load = mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "reading the reports: ");
			goto out;
		}
		if (report_scan_inputs(items)) {
			t = mono_seconds();
			scanner_inputs(scanner, w->cs->state, w->due, w->ndue, objects, &nobj);
			sst.list_seconds = sst.seconds = mono_seconds() - t;
			inputs = inputs_digest(w, ns, objects);
			if (report_inputs_unchanged(ns, items, inputs, &results)) {
				sst.listed = sst.unchanged = nobj;
				rst.unchanged += json_array_size(items);
				*fatal = false;
				goto out;
			}
			free(inputs);
			inputs = NULL;
			memset(&sst, 0, sizeof(sst));
			results = 0;
		}
	}
	rc = scanner_run(scanner, w->cs->state, w->due, w->ndue, scan, NULL, NULL, &sst, err);
	if (rc)
		goto out;
	*partial = sst.partial;
	if (!sst.partial)
		digest = report_journal_digest(scan, w->salt);
	if (w->inputs_salt && sst.inputs[0])
		inputs = inputs_digest(w, ns, sst.inputs);
	if (!w->o->dry_run && digest) {
		struct report_api api = {.request = counted_request,
					 .request_view = counted_request_view,
					 .ud = scanner};

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
		    !inputs_renew(items, ns, inputs)) {
			rst.unchanged += json_array_size(items);
			results = report_count(scan);
			*fatal = false;
			goto out;
		}
	}
	rs = report_set_new(&ro);
	{
		struct report_api api = {.request = scoped_request, .ud = &sc};

		t = mono_seconds();
		rc = report_load(rs, &api, &rst, err);
		load += mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "reading the reports: ");
			goto out;
		}
	}
	report_prune(rs, view_state_policyset(w->cs->state));
	report_replay(rs, scan);
	report_set_digest(rs, digest);
	report_set_inputs(rs, inputs);
	*fatal = false;
	if (!w->o->dry_run) {
		struct report_api api = {.request = counted_request,
					 .request_view = counted_request_view,
					 .ud = scanner};

		t = mono_seconds();
		rc = report_flush(rs, &api, &rst, err);
		flush = mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "writing the reports: ");
			goto out;
		}
	}
	if (w->rendered)
		w->rendered[idx] = report_render_all(rs);
	results = report_count(rs);
out:
	if (w->rendered && !rc && !w->rendered[idx]) {
		/* unchanged: printed as they are stored */
		struct report_api api = {.request = scoped_request, .ud = &sc};
		struct report_set *stored = report_set_new(&ro);

		rc = report_load(stored, &api, &rst, err);
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
		rc = once_namespace(w, idx, budget, &partial, &fatal, &err);
		pthread_mutex_lock(&w->mu);
		if (rc && !w->rc) {
			w->rc = rc;
			w->err = err;
		}
		if (fatal || partial || w->budget == 0)
			w->stop = true;
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

/*
 * The namespaced resources the due policies list that have no object in
 * the whole cluster (one metadata-only request with limit=1 each), so
 * that the namespaces do not ask for them one by one: with autogen rules
 * a Pod policy lists seven kinds, most of them empty on many clusters.
 * A resource whose question fails is not empty.
 */
static void empty_resources(struct once *w, struct scanner *counter)
{
	for (size_t i = 0; i < w->ndue; i++) {
		struct scan_kinds ks = {0};

		scan_policy_kinds(w->due[i], &ks);
		for (size_t k = 0; k < ks.n; k++) {
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
			if (!seen &&
			    !scanner_request_view(counter, "GET", path, KUBE_VIEW_METADATA_LIST,
						  NULL, &list, &st, &err) &&
			    json_array_size(json_object_get(list, "items")) == 0) {
				gv_debug(
				    "gavel scan: no %s in the cluster: not listed per namespace",
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
static char *policy_salt(const struct engine_policyset *set)
{
	size_t n = set ? engine_policyset_count(set) : 0;
	char **v = gv_xcalloc(n + 1, sizeof(*v));
	struct gv_buf b = {0};

	for (size_t i = 0; i < n; i++) {
		const struct engine_policy *p = engine_policyset_get(set, i);
		char *ref = report_policy_ref(p);

		v[i] =
		    gv_xasprintf("%s=%016llx", ref, (unsigned long long)scan_policy_fingerprint(p));
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

/*
 * The scan, namespace by namespace: one scan of every background policy
 * now (no Lease, no schedules): the cluster state (clusterstate.h), then
 * each namespace (once_namespace), then every policy's last scan in the
 * state ConfigMap, unless dry_run (nothing written). The reports go to
 * o->emit when set. GV_ENET on API errors.
 */
static enum gv_code scan_once(const struct reconciler_once_options *o,
			      struct reconciler_once_stats *stats, struct gv_err *err)
{
	const char *self = o->namespace && *o->namespace ? o->namespace : "gavel";
	struct scan_api sa = {.client = o->client};
	struct scanner *counter = scanner_new(&sa, NULL); /* requests outside the namespaces */
	struct clusterstate cs = {0};
	struct once w = {0};
	pthread_t th[SCAN_NAMESPACES_AT_ONCE];
	int nth = 0, want;
	json_t *changes = NULL;
	const struct engine_policyset *set;
	double t0 = mono_seconds();
	size_t np;
	enum gv_code rc;

	memset(stats, 0, sizeof(*stats));
	{
		struct clusterstate_api ca = {.request = counted_request, .ud = counter};
		double t = mono_seconds();

		rc = clusterstate_fetch(&ca, self, "gavel", &cs, err);
		stats->fetch_seconds = mono_seconds() - t;
		if (rc)
			goto out;
	}
	set = view_state_policyset(cs.state);
	np = set ? engine_policyset_count(set) : 0;
	w.o = o;
	w.self = self;
	w.cs = &cs;
	w.salt = policy_salt(set);
	w.stats = stats;
	w.due = gv_xcalloc(np + 1, sizeof(*w.due));
	for (size_t i = 0; i < np; i++)
		if (engine_policy_background(engine_policyset_get(set, i)))
			w.due[w.ndue++] = engine_policyset_get(set, i);
	stats->policies = w.ndue;
	w.inputs_salt = inputs_salt(&w);
	w.start = (int64_t)time(NULL);
	empty_resources(&w, counter);
	w.nspaces = json_array_size(cs.namespaces) + 1;
	w.spaces = gv_xcalloc(w.nspaces, sizeof(*w.spaces));
	w.spaces[0] = "";
	for (size_t i = 1; i < w.nspaces; i++)
		w.spaces[i] = json_string_value(json_array_get(cs.namespaces, i - 1));
	if (o->emit)
		w.rendered = gv_xcalloc(w.nspaces, sizeof(*w.rendered));
	w.budget = o->resource_limit ? o->resource_limit : SIZE_MAX;
	pthread_mutex_init(&w.mu, NULL);
	/* one namespace at a time under a resource limit: it is spent in order */
	want = o->resource_limit ? 1 : SCAN_NAMESPACES_AT_ONCE;
	for (int i = 1; i < want; i++) {
		if (pthread_create(&th[nth], NULL, once_main, &w)) {
			gv_warn("gavel scan: cannot start a thread: one namespace at a time");
			break;
		}
		nth++;
	}
	once_main(&w);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&w.mu);
	rc = w.rc;
	if (rc) {
		gv_err_set(err, rc, "%s", w.err.msg);
		goto out;
	}
	if (!o->dry_run) {
		struct scanstate_api sapi = {.request = counted_request, .ud = counter};
		time_t end = time(NULL);
		double t = mono_seconds();

		changes = json_object();
		for (size_t i = 0; i < w.ndue; i++) {
			struct scanstate_entry e = {0};
			const char *uid = json_string_value(json_object_get(
			    json_object_get(engine_policy_doc(w.due[i]), "metadata"), "uid"));
			char *key = scanstate_key(w.due[i]), *text;

			e.last_scan = end;
			e.fingerprint = scan_policy_fingerprint(w.due[i]);
			snprintf(e.uid, sizeof(e.uid), "%s", uid ? uid : "");
			text = scanstate_encode(&e);
			json_object_set_new(changes, key, json_string(text));
			free(text);
			free(key);
		}
		rc = scanstate_write(&sapi, self, SCANSTATE_CONFIGMAP, changes, err);
		stats->flush_seconds += mono_seconds() - t;
		if (rc) {
			gv_err_prefix(err, "writing the scan state: ");
			goto out;
		}
	}
out:
	if (w.rendered)
		for (size_t i = 0; i < w.nspaces; i++)
			json_decref(w.rendered[i]);
	free(w.rendered);
	stats->requests += scanner_requests(counter);
	stats->seconds = mono_seconds() - t0;
	json_decref(changes);
	free(w.due);
	free(w.spaces);
	free(w.salt);
	free(w.inputs_salt);
	for (size_t i = 0; i < w.nempty; i++)
		free(w.empty[i]);
	free(w.empty);
	clusterstate_release(&cs);
	scanner_free(counter);
	return rc;
}

/* Where -o prints the reports, one namespace's at a time (reconciler_once_options.emit). */
struct printer {
	bool json;   /* else YAML */
	size_t done; /* reports printed */
};

/*
 * -o json: one array, as json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS)
 * prints it, written element by element; -o yaml: one document per
 * report, as kubectl get -o yaml of each.
 */
static void print_reports(void *ud, const json_t *reports)
{
	struct printer *p = ud;
	size_t i;
	const json_t *r;

	json_array_foreach(reports, i, r)
	{
		if (p->json) {
			char *text = json_dumps(r, JSON_INDENT(2) | JSON_SORT_KEYS);
			fputs(p->done ? ",\n  " : "[\n  ", stdout);
			for (const char *c = text ? text : "{}"; *c; c++) {
				putchar(*c);
				if (*c == '\n') /* one level deeper, inside the array */
					fputs("  ", stdout);
			}
			free(text);
		} else {
			struct gv_buf b = {0};
			gv_buf_adds(&b, "---\n");
			gv_yaml_dump(r, &b);
			fputs(gv_buf_str(&b), stdout);
			gv_buf_release(&b);
		}
		p->done++;
	}
}

int cmd_scan(int argc, char **argv)
{
	struct reconciler_once_options o = {0};
	struct reconciler_once_stats st = {0};
	struct context_loader *ctxl = NULL;
	const char *kubeconfig = NULL, *output = NULL;
	struct kube_config *kcfg = NULL;
	struct kube_client *client = NULL;
	struct printer pr = {0};
	struct gv_err err = {0};
	int level = GV_LOG_WARN, code = 2;
	enum gv_code rc;

	o.namespace =
	    getenv("POD_NAMESPACE") && *getenv("POD_NAMESPACE") ? getenv("POD_NAMESPACE") : "gavel";
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false;
		long n;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--dry-run")) {
			o.dry_run = true;
		} else if (!strcmp(argv[i], "--split-policy-report")) {
			o.split = true;
		} else if (cmd_take(argc, argv, &i, "--kubeconfig", NULL, &v, &missing)) {
			kubeconfig = v;
		} else if (cmd_take(argc, argv, &i, "-o", NULL, &v, &missing) ||
			   cmd_take(argc, argv, &i, "--output", NULL, &v, &missing)) {
			if (v && strcmp(v, "yaml") && strcmp(v, "json")) {
				fprintf(stderr, "gavel scan: -o: want yaml or json\n");
				return 2;
			}
			output = v;
		} else if (cmd_take(argc, argv, &i, "--namespace", NULL, &v, &missing)) {
			o.namespace = v;
		} else if (cmd_take(argc, argv, &i, "--background-scan-batch-size", NULL, &v,
				    &missing)) {
			if (v && !number(v, 1, SCAN_MAX_BATCH, &n)) {
				fprintf(stderr,
					"gavel scan: --background-scan-batch-size: want 1 to "
					"%d\n",
					SCAN_MAX_BATCH);
				return 2;
			}
			o.batch_size = v ? (int)n : 0;
		} else if (cmd_take(argc, argv, &i, "--background-scan-workers", NULL, &v,
				    &missing)) {
			if (v && !number(v, 1, SCAN_MAX_WORKERS, &n)) {
				fprintf(stderr,
					"gavel scan: --background-scan-workers: want 1 to %d\n",
					SCAN_MAX_WORKERS);
				return 2;
			}
			o.workers = v ? (int)n : 0;
		} else if (cmd_take(argc, argv, &i, "--background-scan-resource-limit", NULL, &v,
				    &missing)) {
			if (v && !number(v, 0, 1000000000L, &n)) {
				fprintf(stderr,
					"gavel scan: --background-scan-resource-limit: want a "
					"number >= 0\n");
				return 2;
			}
			o.resource_limit = v ? (size_t)n : 0;
		} else if (cmd_take(argc, argv, &i, "--log-level", NULL, &v, &missing)) {
			if (v && (level = gv_log_parse_level(v)) < 0) {
				fprintf(
				    stderr,
				    "gavel scan: --log-level: want debug, info, warn or error\n");
				return 2;
			}
		} else {
			fprintf(stderr, "gavel scan: unknown argument %s\n", argv[i]);
			usage(stderr);
			return 2;
		}
		if (missing) {
			fprintf(stderr, "gavel scan: %s needs a value\n", argv[i]);
			return 2;
		}
	}
	gv_log_setup((enum gv_log_level)level, 0);
	if (o.dry_run && !output)
		output = "yaml";
	if (kube_config_load(kubeconfig, &kcfg, &err)) {
		fprintf(stderr, "gavel scan: kubeconfig: %s\n", err.msg);
		goto out;
	}
	client = kube_client_new(kcfg, &err);
	if (!client) {
		fprintf(stderr, "gavel scan: kubeconfig: %s\n", err.msg);
		goto out;
	}
	o.client = client;
	ctxl = context_loader_new(
	    &(struct context_options){.client = client, .kube = kcfg, .namespace = o.namespace});
	o.context = context_loader_source(ctxl);
	if (output) {
		pr.json = !strcmp(output, "json");
		o.emit = print_reports;
		o.emit_ud = &pr;
	}
	rc = scan_once(&o, &st, &err);
	if (pr.json)
		fputs(pr.done ? "\n]\n" : "[]\n", stdout);
	fflush(stdout);
	if (rc) {
		fprintf(stderr, "gavel scan: %s\n", err.msg);
		goto out;
	}
	fprintf(stderr,
		"gavel scan: %zu policies, %zu objects (%zu evaluated, %zu unchanged, %zu "
		"filtered, %zu failed), %zu results in the reports; reports: %zu created, %zu "
		"updated, %zu deleted, %zu unchanged (%zu read)%s; %zu API requests; %.2f s "
		"(policies %.2f s, reading reports %.2f s, scan %.2f s: lists %.2f s, evaluation "
		"%.2f s, merge %.2f s; writing %.2f s)\n",
		st.policies, st.scan.listed, st.scan.evaluated, st.scan.unchanged, st.scan.filtered,
		st.scan.failed, st.results, st.reports.created, st.reports.updated,
		st.reports.deleted, st.reports.unchanged, st.reports.read,
		o.dry_run ? " [dry run: nothing written]" : "", st.requests, st.seconds,
		st.fetch_seconds, st.load_seconds, st.scan.seconds, st.scan.list_seconds,
		st.scan.eval_seconds, st.scan.commit_seconds, st.flush_seconds);
	code = st.scan.failed || st.scan.forbidden ? 1 : 0;
out:
	context_loader_free(ctxl);
	if (client)
		kube_client_free(client);
	if (kcfg)
		kube_config_free(kcfg);
	return code;
}
