/*
 * policystatus.c - the leader's writer of policy status (Ready,
 * BackgroundScan, rulecount, autogen), from the snapshot's documents.
 */
#include "background/policystatus.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "background/scan.h"
#include "background/scanstate.h"
#include "background/schedule.h"
#include "background/vpscan.h"
#include "common/log.h"
#include "common/banned.h"

/* ---- the status (pure) ---- */

static const json_t *find_condition(const json_t *status, const char *type)
{
	size_t i;
	const json_t *c;

	json_array_foreach(json_object_get(status, "conditions"), i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

static json_t *condition(const json_t *current, const char *type, bool ok, const char *reason,
			 const char *message, time_t now)
{
	const json_t *old = find_condition(current, type);
	const char *old_status = json_string_value(json_object_get(old, "status"));
	const json_t *old_time = json_object_get(old, "lastTransitionTime");
	const char *st = ok ? "True" : "False";
	char buf[64];
	json_t *c = json_object();

	json_object_set_new(c, "type", json_string(type));
	json_object_set_new(c, "status", json_string(st));
	json_object_set_new(c, "reason", json_string(reason));
	json_object_set_new(c, "message", json_string(message));
	if (old_status && !strcmp(old_status, st) && json_is_string(old_time))
		json_object_set(c, "lastTransitionTime", (json_t *)old_time);
	else
		json_object_set_new(c, "lastTransitionTime",
				    json_string(schedule_time_format(now, buf, sizeof(buf))));
	return c;
}

static json_t *rule_count(const json_t *doc)
{
	int n[4] = {0};
	static const char *const keys[] = {"validate", "mutate", "generate", "verifyImages"};
	size_t i;
	const json_t *r;

	json_array_foreach(json_object_get(json_object_get(doc, "spec"), "rules"), i, r)
	{
		for (size_t k = 0; k < GV_ARRAY_LEN(keys); k++)
			if (json_object_get(r, keys[k])) {
				n[k]++;
				break;
			}
	}
	return json_pack("{s:i, s:i, s:i, s:i}", "validate", n[0], "generate", n[2], "mutate", n[1],
			 "verifyimages", n[3]);
}

static json_t *scan_condition(const struct policystatus_scan *s, const json_t *current, time_t now)
{
	char last[64] = "never", next[64] = "", msg[900];
	const char *reason = "Scheduled";
	bool ok = true;

	if (s->last > 0)
		schedule_time_format(s->last, last, sizeof(last));
	if (s->next > 0)
		schedule_time_format(s->next, next, sizeof(next));
	switch (s->when) {
	case RECONCILER_DUE:
		snprintf(msg, sizeof(msg), "last scan %s, next scan due now", last);
		break;
	case RECONCILER_WAITING:
		snprintf(msg, sizeof(msg), "last scan %s, next scan %s", last, next);
		break;
	case RECONCILER_SUSPENDED:
		ok = false;
		reason = "Suspended";
		snprintf(msg, sizeof(msg), "suspended by %s, last scan %s",
			 s->suspended_by ? s->suspended_by : "spec.scanSuspend", last);
		break;
	case RECONCILER_INVALID:
		ok = false;
		reason = "InvalidSchedule";
		snprintf(msg, sizeof(msg), "%s", s->error ? s->error : "invalid schedule");
		break;
	case RECONCILER_NEVER:
	default:
		ok = false;
		snprintf(msg, sizeof(msg), "last scan %s, the schedule fires no more", last);
		break;
	}
	return condition(current, "BackgroundScan", ok, reason, msg, now);
}

json_t *policystatus_build(const json_t *doc, const char *compile_error,
			   const struct policystatus_scan *scan, const json_t *current, time_t now)
{
	json_t *st = json_object(), *conds = json_array(), *autogen = json_object();
	json_t *rules = engine_autogen_status_rules(doc);

	json_object_set_new(st, "ready", json_boolean(!compile_error));
	json_array_append_new(conds, condition(current, "Ready", !compile_error,
					       compile_error ? "Failed" : "Succeeded",
					       compile_error ? compile_error : "Ready", now));
	if (scan && scan->present && !compile_error)
		json_array_append_new(conds, scan_condition(scan, current, now));
	json_object_set_new(st, "conditions", conds);
	if (json_array_size(rules))
		json_object_set(autogen, "rules", rules);
	json_decref(rules);
	json_object_set_new(st, "autogen", autogen);
	json_object_set_new(st, "rulecount", rule_count(doc));
	json_object_set_new(st, "validatingadmissionpolicy",
			    json_pack("{s:b, s:s}", "generated", 0, "message", ""));
	return st;
}

json_t *policystatus_build_cel(const json_t *current, const struct policystatus_scan *scan,
			       time_t now)
{
	json_t *st = json_is_object(current) ? json_deep_copy(current) : json_object();
	json_t *cs = json_object_get(st, "conditionStatus"), *conds = json_array();
	size_t i;
	const json_t *c;

	if (!json_is_object(cs)) {
		cs = json_object();
		json_object_set_new(st, "conditionStatus", cs);
	}
	/* Kyverno's: the webhooks are registered, the reports controller may read */
	json_array_append_new(conds, condition(cs, "WebhookConfigured", true, "Succeeded",
					       "Webhook configured.", now));
	json_array_append_new(conds, condition(cs, "RBACPermissionsGranted", true, "Succeeded",
					       "Policy is ready for reporting.", now));
	json_array_foreach(json_object_get(cs, "conditions"), i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		if (!t || (strcmp(t, "BackgroundScan") && strcmp(t, "WebhookConfigured") &&
			   strcmp(t, "RBACPermissionsGranted")))
			json_array_append(conds, (json_t *)c);
	}
	if (scan && scan->present)
		json_array_append_new(conds, scan_condition(scan, cs, now));
	json_object_set_new(cs, "conditions", conds);
	json_object_set_new(cs, "ready", json_true());
	return st;
}

/* ---- the writer ---- */

struct policystatus {
	struct policystatus_config cfg;
	char *namespace, *interval;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	atomic_ulong writes;

	/* Owned by the thread: */
	json_t *compiled; /* key -> {"uid", "generation", "error" (string|null), "fp"} */
	json_t *written;  /* key -> the resourceVersion a write replaced (informer lag) */
	json_t *state;	  /* the scan state ConfigMap's data */
	uint64_t seen_generation;
	bool waiting; /* some policy waits for its webhooks: pass again next period */
	time_t refreshed;
};

static const char *md_str(const json_t *doc, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(doc, "metadata"), key));

	return s ? s : "";
}

static bool is_namespaced(const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	return kind ? !strcmp(kind, "Policy") : *md_str(doc, "namespace") != '\0';
}

static char *doc_key(const json_t *doc)
{
	return gv_xasprintf("%s/%s/%s", is_namespaced(doc) ? "Policy" : "ClusterPolicy",
			    md_str(doc, "namespace"), md_str(doc, "name"));
}

static char *status_path(const json_t *doc)
{
	const char *av = json_string_value(json_object_get(doc, "apiVersion"));
	char *ns = kube_escape(md_str(doc, "namespace")), *name = kube_escape(md_str(doc, "name"));
	char *p;

	if (!av || strncmp(av, "kyverno.io/", 11))
		av = "kyverno.io/v1";
	if (is_namespaced(doc))
		p = gv_xasprintf("/apis/%s/namespaces/%s/policies/%s/status", av, ns, name);
	else
		p = gv_xasprintf("/apis/%s/clusterpolicies/%s/status", av, name);
	free(ns);
	free(name);
	return p;
}

/* The compile outcome of doc, compiled again only when its uid or generation changed. */
static const json_t *compiled_entry(struct policystatus *ps, const char *key, const json_t *doc)
{
	json_t *e = json_object_get(ps->compiled, key);
	json_int_t gen =
	    json_integer_value(json_object_get(json_object_get(doc, "metadata"), "generation"));
	struct gv_err err = {0};
	struct engine_policy *p;
	char fp[32];

	if (e && !strcmp(json_string_value(json_object_get(e, "uid")), md_str(doc, "uid")) &&
	    json_integer_value(json_object_get(e, "generation")) == gen)
		return e;
	p = engine_policy_compile(doc, &err);
	snprintf(fp, sizeof(fp), "%016" PRIx64, p ? scan_policy_fingerprint(p) : (uint64_t)0);
	e = json_pack("{s:s, s:I, s:s}", "uid", md_str(doc, "uid"), "generation", gen, "fp", fp);
	if (p) {
		json_object_set_new(e, "error", json_null());
		engine_policy_unref(p);
	} else {
		char *msg = err.pointer[0] ? gv_xasprintf("%s: %s", err.pointer, err.msg)
					   : gv_xstrdup(err.msg);
		json_object_set_new(e, "error", json_string(msg));
		free(msg);
	}
	json_object_set_new(ps->compiled, key, e);
	return e;
}

static void scan_info(struct policystatus *ps, const json_t *doc, const json_t *entry,
		      const struct reconciler_global *global, time_t now,
		      struct reconciler_sched *sched, struct policystatus_scan *out)
{
	bool ns = is_namespaced(doc);
	const char *name = md_str(doc, "name");
	char *ref = ns ? gv_xasprintf("%s/%s", md_str(doc, "namespace"), name) : gv_xstrdup(name);
	char *key = scanstate_key_of(ns ? md_str(doc, "namespace") : NULL, name);
	const char *text = json_string_value(json_object_get(ps->state, key));
	struct scanstate_entry last = {0};
	bool has_last = text && !scanstate_decode(text, &last, NULL);
	uint64_t fp = strtoull(json_string_value(json_object_get(entry, "fp")), NULL, 16);

	memset(out, 0, sizeof(*out));
	reconciler_sched_resolve(doc, ref, global, sched);
	/*
	 * Only for a policy with a scan schedule of its own (gavel's
	 * spec.scanInterval / scanSchedule / scanSuspend) or while every scan
	 * is suspended: Kyverno writes the Ready condition alone, and tools
	 * (Kyverno's own e2e suite among them) match the conditions list whole.
	 */
	{
		const json_t *spec = json_object_get(doc, "spec");
		bool own = json_object_get(spec, "scanInterval") ||
			   json_object_get(spec, "scanSchedule") ||
			   json_object_get(spec, "scanSuspend");

		out->present = !json_is_false(json_object_get(spec, "background")) &&
			       (own || global->suspended);
	}
	out->when = reconciler_when(sched, global->suspended, has_last ? &last : NULL,
				    md_str(doc, "uid"), fp, now, &out->next);
	out->last = has_last ? last.last_scan : 0;
	out->error = sched->error;
	out->suspended_by = global->suspended ? "backgroundScanSuspend" : "spec.scanSuspend";
	free(ref);
	free(key);
}

/* PUT the status of doc; on 409 read it again and rebuild, a bounded number of times. */
static void write_status(struct policystatus *ps, const char *key, const json_t *doc,
			 const char *compile_error, const struct policystatus_scan *scan,
			 json_t *desired, time_t now)
{
	char *path = status_path(doc);
	json_t *cur = json_incref((json_t *)doc), *want = json_incref(desired);

	for (int attempt = 1; attempt <= POLICYSTATUS_ATTEMPTS; attempt++) {
		struct kube_status st = {0};
		struct gv_err err = {0};
		json_t *body = json_deep_copy(cur), *resp = NULL, *fresh = NULL;
		enum gv_code rc;

		if (!json_string_value(json_object_get(body, "kind")))
			json_object_set_new(
			    body, "kind",
			    json_string(is_namespaced(doc) ? "Policy" : "ClusterPolicy"));
		if (!json_string_value(json_object_get(body, "apiVersion")))
			json_object_set_new(body, "apiVersion", json_string("kyverno.io/v1"));
		json_object_set(body, "status", want);
		rc = kube_request(ps->cfg.client, "PUT", path, body, &resp, &st, &err);
		json_decref(body);
		json_decref(resp);
		if (!rc) {
			atomic_fetch_add(&ps->writes, 1);
			json_object_set_new(ps->written, key,
					    json_string(md_str(doc, "resourceVersion")));
			gv_debug("policystatus: %s written", key);
			break;
		}
		if (st.http == 404)
			break;
		if (st.http != 409 || attempt == POLICYSTATUS_ATTEMPTS) {
			gv_warn("policystatus: status of %s not written: %s", key, err.msg);
			break;
		}
		{
			/* Conflict: build again over what is there now. */
			size_t n = strlen(path) - strlen("/status");
			char *get = gv_xstrndup(path, n);
			rc = kube_request(ps->cfg.client, "GET", get, NULL, &fresh, NULL, NULL);
			free(get);
			if (rc || !fresh) {
				json_decref(fresh);
				break;
			}
			json_decref(cur);
			cur = fresh;
			json_decref(want);
			want = policystatus_build(cur, compile_error, scan,
						  json_object_get(cur, "status"), now);
			if (json_equal(want, json_object_get(cur, "status")))
				break;
		}
	}
	json_decref(cur);
	json_decref(want);
	free(path);
}

/*
 * The status of the compiled ValidatingPolicies and
 * NamespacedValidatingPolicies (policystatus_build_cel): Kyverno's
 * conditionStatus once their webhooks are registered, and the BackgroundScan
 * condition of those with a schedule of their own (or while every scan is
 * suspended), the same condition as the legacy policies'. PUT on the status
 * subresource only when it differs; a conflict is tried again on a later
 * pass.
 */
static void pass_cel(struct policystatus *ps, const struct reconciler_global *global, time_t now,
		     json_t *seen)
{
	struct view_state *st = snapshot_state(ps->cfg.snapshot);
	struct view_vpolset *vs = view_state_vpols(st);

	for (size_t i = 0; i < view_vpolset_count(vs); i++) {
		const struct vpol_policy *p = view_vpolset_policy(vs, i);
		const json_t *doc = vpol_doc(p), *spec = json_object_get(doc, "spec");
		const json_t *cur = json_object_get(doc, "status");
		char *ref, *skey, *key, *path, *ns, *name;
		const char *text, *replaced, *av;
		struct scanstate_entry last = {0};
		struct reconciler_sched sched;
		struct policystatus_scan scan = {0};
		bool own, has_last;
		json_t *want;

		if (vpol_kind(p) == VPOL_VAP)
			continue;
		own = json_object_get(spec, "scanInterval") ||
		      json_object_get(spec, "scanSchedule") || json_object_get(spec, "scanSuspend");
		key = gv_xasprintf("%s/%s/%s", vpol_kind_name(p), vpol_namespace(p), vpol_name(p));
		json_object_set_new(seen, key, json_true());
		replaced = json_string_value(json_object_get(ps->written, key));
		if (replaced && !strcmp(replaced, md_str(doc, "resourceVersion"))) {
			free(key); /* our write is not in the informer yet */
			continue;
		}
		if (view_vpol_admission(p) && !vpol_json_mode(p) &&
		    !webhookconfig_covers(ps->cfg.webhooks, doc)) {
			ps->waiting = true; /* its webhooks are not registered yet */
			free(key);
			continue;
		}
		json_object_del(ps->written, key);
		ref = vpscan_policy_ref(p);
		skey = vpscan_state_key(p);
		text = json_string_value(json_object_get(ps->state, skey));
		has_last = text && !scanstate_decode(text, &last, NULL);
		reconciler_sched_resolve(doc, ref, global, &sched);
		scan.present = vpscan_background(p) && (own || global->suspended);
		scan.when =
		    reconciler_when(&sched, global->suspended, has_last ? &last : NULL,
				    md_str(doc, "uid"), vpscan_fingerprint(p), now, &scan.next);
		scan.last = has_last ? last.last_scan : 0;
		scan.error = sched.error;
		scan.suspended_by =
		    global->suspended ? "backgroundScanSuspend" : "spec.scanSuspend";
		want = policystatus_build_cel(cur, &scan, now);
		if (!json_equal(want, cur)) {
			json_t *body = json_deep_copy(doc), *resp = NULL;
			struct kube_status kst = {0};
			struct gv_err err = {0};

			av = json_string_value(json_object_get(doc, "apiVersion"));
			ns = kube_escape(vpol_namespace(p));
			name = kube_escape(vpol_name(p));
			path =
			    *vpol_namespace(p)
				? gv_xasprintf(
				      "/apis/%s/namespaces/%s/namespacedvalidatingpolicies/"
				      "%s/status",
				      av, ns, name)
				: gv_xasprintf("/apis/%s/validatingpolicies/%s/status", av, name);
			json_object_set(body, "status", want);
			if (!kube_request(ps->cfg.client, "PUT", path, body, &resp, &kst, &err)) {
				atomic_fetch_add(&ps->writes, 1);
				json_object_set_new(ps->written, key,
						    json_string(md_str(doc, "resourceVersion")));
			} else if (kst.http != 404 && kst.http != 409) {
				gv_warn("policystatus: status of %s not written: %s", key, err.msg);
			}
			json_decref(body);
			json_decref(resp);
			free(path);
			free(ns);
			free(name);
		}
		json_decref(want);
		reconciler_sched_release(&sched);
		free(ref);
		free(skey);
		free(key);
	}
	view_state_unref(st);
}

static void pass(struct policystatus *ps, bool refresh)
{
	json_t *docs = snapshot_policy_docs(ps->cfg.snapshot);
	json_t *data = snapshot_config_data(ps->cfg.snapshot), *seen = json_object();
	struct reconciler_global global;
	time_t now = time(NULL);
	const json_t *doc;
	const char *k;
	json_t *v, *tmp;
	size_t i;

	if (refresh || !ps->state) {
		json_t *state = NULL;
		if (!scanstate_read(ps->cfg.client, ps->namespace, SCANSTATE_CONFIGMAP, &state,
				    NULL)) {
			json_decref(ps->state);
			ps->state = state;
		} else if (!ps->state) {
			ps->state = json_object();
		}
		ps->refreshed = now;
	}
	reconciler_global_resolve(data, ps->interval, &global);
	json_array_foreach(docs, i, doc)
	{
		char *key = doc_key(doc);
		const json_t *entry = compiled_entry(ps, key, doc);
		const char *error = json_string_value(json_object_get(entry, "error"));
		const char *replaced = json_string_value(json_object_get(ps->written, key));
		struct reconciler_sched sched;
		struct policystatus_scan scan;
		json_t *want;

		json_object_set_new(seen, key, json_true());
		if (replaced && !strcmp(replaced, md_str(doc, "resourceVersion"))) {
			free(key); /* our write is not in the informer yet */
			continue;
		}
		if (!error &&
		    !json_is_false(json_object_get(json_object_get(doc, "spec"), "admission")) &&
		    !webhookconfig_covers(ps->cfg.webhooks, doc)) {
			ps->waiting = true; /* its webhooks are not registered yet */
			free(key);
			continue;
		}
		json_object_del(ps->written, key);
		scan_info(ps, doc, entry, &global, now, &sched, &scan);
		want = policystatus_build(doc, error, &scan, json_object_get(doc, "status"), now);
		if (!json_equal(want, json_object_get(doc, "status")))
			write_status(ps, key, doc, error, &scan, want, now);
		json_decref(want);
		reconciler_sched_release(&sched);
		free(key);
	}
	pass_cel(ps, &global, now, seen);
	json_object_foreach_safe(ps->compiled, tmp, k, v)
	{
		if (!json_object_get(seen, k))
			json_object_del(ps->compiled, k);
	}
	json_decref(seen);
	json_decref(docs);
	json_decref(data);
}

static void *thread_main(void *ud)
{
	struct policystatus *ps = ud;
	long period = ps->cfg.period_ms > 0 ? ps->cfg.period_ms : POLICYSTATUS_PERIOD_MS;

	pthread_mutex_lock(&ps->mu);
	while (!ps->stop) {
		struct timespec ts;
		uint64_t gen;
		time_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += period / 1000;
		ts.tv_nsec += (period % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ps->cv, &ps->mu, &ts);
		if (ps->stop)
			break;
		pthread_mutex_unlock(&ps->mu);
		gen = snapshot_generation(ps->cfg.snapshot);
		now = time(NULL);
		if (ps->cfg.leader && !reconciler_leading(ps->cfg.leader)) {
			json_object_clear(ps->written);
			ps->seen_generation = 0;
		} else if (gen && (gen != ps->seen_generation || ps->waiting ||
				   now - ps->refreshed >= POLICYSTATUS_REFRESH_S)) {
			bool refresh = now - ps->refreshed >= POLICYSTATUS_REFRESH_S;
			ps->seen_generation = gen;
			ps->waiting = false;
			pass(ps, refresh);
		}
		pthread_mutex_lock(&ps->mu);
	}
	pthread_mutex_unlock(&ps->mu);
	return NULL;
}

struct policystatus *policystatus_start(const struct policystatus_config *cfg)
{
	struct policystatus *ps = gv_xcalloc(1, sizeof(*ps));

	ps->cfg = *cfg;
	ps->namespace = gv_xstrdup(cfg->namespace && *cfg->namespace ? cfg->namespace : "gavel");
	ps->interval = cfg->interval ? gv_xstrdup(cfg->interval) : NULL;
	ps->compiled = json_object();
	ps->written = json_object();
	atomic_init(&ps->writes, 0);
	pthread_mutex_init(&ps->mu, NULL);
	pthread_cond_init(&ps->cv, NULL);
	if (pthread_create(&ps->thread, NULL, thread_main, ps)) {
		pthread_mutex_destroy(&ps->mu);
		pthread_cond_destroy(&ps->cv);
		json_decref(ps->compiled);
		json_decref(ps->written);
		free(ps->namespace);
		free(ps->interval);
		free(ps);
		return NULL;
	}
	return ps;
}

void policystatus_stop(struct policystatus *ps)
{
	if (!ps)
		return;
	pthread_mutex_lock(&ps->mu);
	ps->stop = true;
	pthread_cond_signal(&ps->cv);
	pthread_mutex_unlock(&ps->mu);
	pthread_join(ps->thread, NULL);
	pthread_mutex_destroy(&ps->mu);
	pthread_cond_destroy(&ps->cv);
	json_decref(ps->compiled);
	json_decref(ps->written);
	json_decref(ps->state);
	free(ps->namespace);
	free(ps->interval);
	free(ps);
}

unsigned long policystatus_writes(const struct policystatus *ps)
{
	return ps ? atomic_load(&ps->writes) : 0;
}
