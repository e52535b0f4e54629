/*
 * Unit tests for the background reconciler's pure parts and the scanner
 * against an in-memory fake API server: due computation (intervals, cron,
 * suspend and resume, missed fires, jitter, changed policies), schedule
 * resolution and its errors, the ConfigMap's global settings, kind
 * enumeration (kind selectors, autogen kinds), the incremental cache,
 * scan cycles (incremental skips, deleted objects, resource-limit
 * continuation, 403 and 410), and the scan-state ConfigMap encoding.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "background/reconciler.h"
#include "background/scan.h"
#include "background/scanstate.h"
#include "background/schedule.h"
#include "common/log.h"
#include "common/tests/helpers.h"
#include "kube/tests/transport.h"

#include "common/banned.h"

/* ---- helpers ---- */

static struct engine_policy *compile(const char *text)
{
	json_t *doc = J(text);
	struct gv_err err = {0};
	struct engine_policy *p = engine_policy_compile(doc, &err);

	if (!p)
		fail_msg("policy does not compile: %s", err.msg);
	json_decref(doc);
	return p;
}

static time_t T(const char *rfc3339)
{
	time_t t = 0;

	assert_int_equal(schedule_time_parse(rfc3339, &t, NULL), GV_OK);
	return t;
}

static const char *fmt(time_t t)
{
	static char buf[4][32];
	static int k;

	k = (k + 1) % 4;
	return schedule_time_format(t, buf[k], sizeof(buf[k]));
}

#define POLICY_REQUIRE_TEAM                                                                        \
	"{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'require-team',"  \
	"'uid':'u-1'},'spec':{%s'rules':[{'name':'check-team','match':{'any':[{'resources':"       \
	"{'kinds':['Pod']}}]},'validate':{'message':'team label required','pattern':"              \
	"{'metadata':{'labels':{'team':'?*'}}}}}]}}"

static struct engine_policy *policy_with(const char *spec_extra)
{
	char buf[2048];

	snprintf(buf, sizeof(buf), POLICY_REQUIRE_TEAM, spec_extra);
	return compile(buf);
}

static void global_of(const char *data_json, const char *flag, struct reconciler_global *g)
{
	json_t *data = data_json ? J(data_json) : NULL;

	reconciler_global_resolve(data, flag, g);
	json_decref(data);
}

static void sched_of(const char *doc_json, const char *ref, const struct reconciler_global *g,
		     struct reconciler_sched *s)
{
	json_t *doc = J(doc_json);

	reconciler_sched_resolve(doc, ref, g, s);
	json_decref(doc);
}

/* ---- due computation ---- */

static void test_due_interval(void **state)
{
	struct reconciler_global g;
	struct reconciler_sched s;
	struct scanstate_entry last = {0};
	time_t next = 0, now = T("2026-03-01T10:00:00Z");

	(void)state;
	global_of(NULL, "1h", &g);
	sched_of("{'spec':{}}", "p", &g, &s);
	assert_true(s.valid);
	assert_int_equal(s.source, RECONCILER_GLOBAL);
	assert_string_equal(s.text, "1h");
	assert_true(s.jitter >= 0 && s.jitter <= 60);

	/* never scanned: due at once */
	assert_int_equal(reconciler_when(&s, false, NULL, "u", 1, now, &next), RECONCILER_DUE);
	assert_int_equal(next, now);

	/* scanned 10 minutes ago: next = last + 1h + jitter */
	last.last_scan = now - 600;
	assert_int_equal(reconciler_when(&s, false, &last, NULL, 0, now, &next),
			 RECONCILER_WAITING);
	assert_int_equal(next, last.last_scan + 3600 + s.jitter);

	/* exactly at the fire time: due */
	assert_int_equal(reconciler_when(&s, false, &last, NULL, 0, next, NULL), RECONCILER_DUE);

	/* gavel was down for 5 hours: due once, not five times */
	last.last_scan = now - 5 * 3600;
	assert_int_equal(reconciler_when(&s, false, &last, NULL, 0, now, &next), RECONCILER_DUE);
	last.last_scan = now + 3; /* the catch-up scan ended */
	assert_int_equal(reconciler_when(&s, false, &last, NULL, 0, now + 4, &next),
			 RECONCILER_WAITING);
	assert_int_equal(next, now + 3 + 3600 + s.jitter);
	reconciler_sched_release(&s);
}

static void test_due_cron(void **state)
{
	struct reconciler_global g;
	struct reconciler_sched s;
	struct scanstate_entry last = {0};
	time_t next = 0;

	(void)state;
	global_of(NULL, NULL, &g);
	sched_of("{'spec':{'scanSchedule':'*/15 * * * *'}}", "p", &g, &s);
	assert_true(s.valid);
	assert_int_equal(s.source, RECONCILER_CRON);
	/* jitter is at most a tenth of the period (15 min -> 90 s, capped at 60 s) */
	assert_true(s.jitter >= 0 && s.jitter <= 60);
	last.last_scan = T("2026-03-01T10:01:00Z");
	assert_int_equal(
	    reconciler_when(&s, false, &last, NULL, 0, T("2026-03-01T10:05:00Z"), &next),
	    RECONCILER_WAITING);
	assert_string_equal(fmt(next - s.jitter), "2026-03-01T10:15:00Z");
	/* a day later (fires missed): due once */
	assert_int_equal(
	    reconciler_when(&s, false, &last, NULL, 0, T("2026-03-02T10:05:00Z"), &next),
	    RECONCILER_DUE);
	reconciler_sched_release(&s);

	/* 6-field (seconds) cron */
	sched_of("{'spec':{'scanSchedule':'*/5 * * * * ?'}}", "p", &g, &s);
	assert_true(s.valid);
	last.last_scan = T("2026-03-01T10:00:01Z");
	assert_int_equal(
	    reconciler_when(&s, false, &last, NULL, 0, T("2026-03-01T10:00:02Z"), &next),
	    RECONCILER_WAITING);
	assert_string_equal(fmt(next), "2026-03-01T10:00:05Z"); /* period 5 s: no jitter */
	reconciler_sched_release(&s);
}

static void test_due_suspend_resume(void **state)
{
	struct reconciler_global g;
	struct reconciler_sched s, s2;
	struct scanstate_entry last = {0};
	time_t next = 1, now = T("2026-03-01T10:00:00Z");

	(void)state;
	global_of("{'backgroundScanSuspend':'true'}", "10m", &g);
	assert_true(g.suspended);
	sched_of("{'spec':{}}", "p", &g, &s);
	/* suspended globally: never due, even never scanned */
	assert_int_equal(reconciler_when(&s, g.suspended, NULL, NULL, 0, now, &next),
			 RECONCILER_SUSPENDED);
	assert_int_equal(next, 0);
	/* resumed after 2 hours of missed 10-minute fires: one scan, then the period again */
	last.last_scan = now - 7200;
	global_of("{'backgroundScanSuspend':'false'}", "10m", &g);
	assert_false(g.suspended);
	assert_int_equal(reconciler_when(&s, g.suspended, &last, NULL, 0, now, &next),
			 RECONCILER_DUE);
	last.last_scan = now + 1;
	assert_int_equal(reconciler_when(&s, g.suspended, &last, NULL, 0, now + 2, &next),
			 RECONCILER_WAITING);
	assert_int_equal(next, now + 1 + 600 + s.jitter);
	reconciler_sched_release(&s);

	/* one policy suspended by spec.scanSuspend */
	sched_of("{'spec':{'scanSuspend':true,'scanInterval':'5s'}}", "p", &g, &s2);
	assert_true(s2.valid);
	assert_true(s2.suspended);
	assert_int_equal(reconciler_when(&s2, false, &last, NULL, 0, now + 100, &next),
			 RECONCILER_SUSPENDED);
	reconciler_sched_release(&s2);
	sched_of("{'spec':{'scanSuspend':false,'scanInterval':'5s'}}", "p", &g, &s2);
	assert_false(s2.suspended);
	assert_int_equal(reconciler_when(&s2, false, &last, NULL, 0, now + 100, &next),
			 RECONCILER_DUE);
	reconciler_sched_release(&s2);
}

static void test_due_changed_policy(void **state)
{
	struct reconciler_global g;
	struct reconciler_sched s;
	struct scanstate_entry last = {.last_scan = 1000, .fingerprint = 42};
	time_t next;

	(void)state;
	snprintf(last.uid, sizeof(last.uid), "uid-a");
	global_of(NULL, "1h", &g);
	sched_of("{'spec':{}}", "p", &g, &s);
	assert_int_equal(reconciler_when(&s, false, &last, "uid-a", 42, 1100, &next),
			 RECONCILER_WAITING);
	/* rules changed: due at once */
	assert_int_equal(reconciler_when(&s, false, &last, "uid-a", 43, 1100, &next),
			 RECONCILER_DUE);
	/* deleted and created again under the same name */
	assert_int_equal(reconciler_when(&s, false, &last, "uid-b", 42, 1100, &next),
			 RECONCILER_DUE);
	/* unknown fingerprint or uid: the recorded time counts */
	assert_int_equal(reconciler_when(&s, false, &last, NULL, 0, 1100, &next),
			 RECONCILER_WAITING);
	reconciler_sched_release(&s);
}

static void test_jitter_spreads(void **state)
{
	struct reconciler_global g;
	char ref[32];
	time_t seen[64];
	size_t distinct = 0;

	(void)state;
	global_of(NULL, "1h", &g);
	for (int i = 0; i < 64; i++) {
		struct reconciler_sched s;
		bool dup = false;

		snprintf(ref, sizeof(ref), "policy-%d", i);
		sched_of("{'spec':{}}", ref, &g, &s);
		assert_true(s.jitter >= 0 && s.jitter <= SCHEDULE_JITTER_MAX);
		/* deterministic: the same name gives the same offset */
		{
			struct reconciler_sched again;
			sched_of("{'spec':{}}", ref, &g, &again);
			assert_int_equal(again.jitter, s.jitter);
			reconciler_sched_release(&again);
		}
		for (size_t k = 0; k < distinct; k++)
			dup |= seen[k] == s.jitter;
		if (!dup)
			seen[distinct++] = s.jitter;
		reconciler_sched_release(&s);
	}
	assert_true(distinct > 20); /* 64 policies sharing "1h" do not all fire together */
}

static void test_sched_errors(void **state)
{
	struct reconciler_global g;
	struct reconciler_sched s;

	(void)state;
	global_of(NULL, "1h", &g);
	sched_of("{'spec':{'scanSchedule':'61 * * * *'}}", "p", &g, &s);
	assert_false(s.valid);
	assert_string_equal(
	    s.error, "spec.scanSchedule \"61 * * * *\": minute \"61\": 61 is out of range 0-59");
	/* an invalid schedule never falls back to the global interval */
	assert_int_equal(reconciler_when(&s, false, NULL, NULL, 0, 1000, NULL), RECONCILER_INVALID);
	reconciler_sched_release(&s);

	sched_of("{'spec':{'scanInterval':'0'}}", "p", &g, &s);
	assert_false(s.valid);
	assert_non_null(strstr(s.error, "spec.scanInterval \"0\": "));
	reconciler_sched_release(&s);

	sched_of("{'spec':{'scanInterval':'5m','scanSchedule':'@hourly'}}", "p", &g, &s);
	assert_false(s.valid);
	assert_string_equal(s.error,
			    "spec.scanInterval and spec.scanSchedule are both set (use one)");
	reconciler_sched_release(&s);

	sched_of("{'spec':{'scanInterval':300}}", "p", &g, &s);
	assert_false(s.valid);
	assert_string_equal(s.error, "spec.scanInterval: not a string");
	reconciler_sched_release(&s);

	sched_of("{'spec':{'scanSchedule':'CRON_TZ=Europe/Berlin 0 3 * * *'}}", "p", &g, &s);
	assert_true(s.valid);
	reconciler_sched_release(&s);
	sched_of("{'spec':{'scanInterval':'2h30m'}}", "p", &g, &s);
	assert_true(s.valid);
	assert_int_equal(s.source, RECONCILER_INTERVAL);
	assert_int_equal(s.s.interval, 9000);
	reconciler_sched_release(&s);
}

static void test_global(void **state)
{
	struct reconciler_global g;

	(void)state;
	global_of(NULL, NULL, &g);
	assert_string_equal(g.text, "1h");
	assert_int_equal(g.interval.interval, 3600);
	assert_false(g.suspended);
	assert_string_equal(g.error, "");

	global_of("{'backgroundScanInterval':'30m'}", "2h", &g);
	assert_string_equal(g.text, "30m");
	assert_true(g.from_configmap);
	assert_int_equal(g.interval.interval, 1800);

	/* a bad ConfigMap interval: the flag's is used, the reason kept for the log */
	global_of("{'backgroundScanInterval':'soon'}", "2h", &g);
	assert_string_equal(g.text, "2h");
	assert_false(g.from_configmap);
	assert_non_null(strstr(g.error, "backgroundScanInterval \"soon\": "));
	assert_non_null(strstr(g.error, "(using 2h)"));

	global_of("{'backgroundScanSuspend':'True'}", NULL, &g);
	assert_true(g.suspended);
	global_of("{'backgroundScanSuspend':'1'}", NULL, &g);
	assert_true(g.suspended);
	global_of("{'backgroundScanSuspend':'yes'}", NULL, &g);
	assert_false(g.suspended);
	assert_string_equal(g.error,
			    "backgroundScanSuspend \"yes\": want true or false (not suspended)");
	global_of(NULL, "never", &g);
	assert_string_equal(g.text, "1h");
	assert_non_null(strstr(g.error, "--background-scan-interval \"never\""));
}

/* ---- kinds ---- */

static void test_kind_parse(void **state)
{
	static const struct {
		const char *in, *group, *version, *kind;
		bool ok;
	} cases[] = {
	    {"Pod", NULL, NULL, "Pod", true},
	    {"v1/Pod", NULL, "v1", "Pod", true},
	    {"apps/v1/Deployment", "apps", "v1", "Deployment", true},
	    {"networking.k8s.io/v1/NetworkPolicy", "networking.k8s.io", "v1", "NetworkPolicy",
	     true},
	    {"apps/*/Deployment", "apps", NULL, "Deployment", true},
	    {"*/v1/Pod", NULL, NULL, NULL,
	     false}, /* Kyverno: version "*", kind "v1", subresource "Pod" */
	    {"v2beta1/HorizontalPodAutoscaler", NULL, "v2beta1", "HorizontalPodAutoscaler", true},
	    {"Pod/status", NULL, NULL, NULL, false},
	    {"Pod.exec", NULL, NULL, NULL, false},
	    {"v1/Pod/exec", NULL, NULL, NULL, false},
	    {"apps/v1/Deployment/scale", NULL, NULL, NULL, false},
	    {"*", NULL, NULL, NULL, false},
	    {"*/*", NULL, NULL, NULL, false},
	    {"*/scale", NULL, NULL, NULL, false},
	    {"Po*", NULL, NULL, NULL, false},
	    {"", NULL, NULL, NULL, false},
	};

	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct scan_kind k = {0};
		bool ok = scan_kind_parse(cases[i].in, &k);

		if (ok != cases[i].ok)
			fail_msg("%s: parse %s, want %s", cases[i].in, ok ? "ok" : "refused",
				 cases[i].ok ? "ok" : "refused");
		if (!ok)
			continue;
		if (cases[i].group)
			assert_string_equal(k.group, cases[i].group);
		else
			assert_null(k.group);
		if (cases[i].version)
			assert_string_equal(k.version, cases[i].version);
		else
			assert_null(k.version);
		assert_string_equal(k.kind, cases[i].kind);
		scan_kind_release(&k);
	}
}

static char *kinds_str(const struct scan_kinds *ks)
{
	struct gv_buf b = {0};

	for (size_t i = 0; i < ks->n; i++)
		gv_buf_addf(&b, "%s%s/%s/%s", i ? " " : "", ks->v[i].group ? ks->v[i].group : "*",
			    ks->v[i].version ? ks->v[i].version : "*", ks->v[i].kind);
	return gv_buf_detach(&b);
}

static void test_policy_kinds(void **state)
{
	struct engine_policy *p;
	struct scan_kinds ks;
	char *s;

	(void)state;
	/* a Pod rule: Pod plus every autogen controller and CronJob */
	p = policy_with("");
	scan_policy_kinds(p, &ks);
	s = kinds_str(&ks);
	assert_string_equal(s, "*/*/Pod apps/v1/DaemonSet apps/v1/Deployment apps/v1/StatefulSet "
			       "apps/v1/ReplicaSet batch/v1/Job /v1/ReplicationController "
			       "batch/v1/CronJob");
	assert_true(ks.complete);
	free(s);
	scan_kinds_release(&ks);
	engine_policy_unref(p);

	/* autogen restricted by annotation */
	p = compile(
	    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'p',"
	    "'annotations':{'pod-policies.kyverno.io/autogen-controllers':'Deployment,Job'}},"
	    "'spec':{'rules':[{'name':'r','match':{'resources':{'kinds':['Pod']}},"
	    "'validate':{'pattern':{'spec':{'hostNetwork':false}}}}]}}");
	scan_policy_kinds(p, &ks);
	s = kinds_str(&ks);
	assert_string_equal(s, "*/*/Pod apps/v1/Deployment batch/v1/Job");
	free(s);
	scan_kinds_release(&ks);
	engine_policy_unref(p);

	/* several kinds, duplicates once, all/any forms; subresources make it incomplete */
	p = compile(
	    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'p'},"
	    "'spec':{'background':false,'rules':["
	    "{'name':'a','match':{'all':[{'resources':{'kinds':['ConfigMap','v1/Secret']}}]},"
	    "'validate':{'pattern':{'metadata':{'name':'?*'}}}},"
	    "{'name':'b','match':{'any':[{'resources':{'kinds':['ConfigMap',"
	    "'networking.k8s.io/v1/Ingress']}}]},'validate':{'pattern':{'metadata':"
	    "{'name':'?*'}}}},"
	    "{'name':'c','match':{'any':[{'resources':{'kinds':['Pod/exec']}}]},"
	    "'validate':{'pattern':{'metadata':{'name':'?*'}}}}]}}");
	scan_policy_kinds(p, &ks);
	s = kinds_str(&ks);
	assert_string_equal(s, "*/*/ConfigMap */v1/Secret networking.k8s.io/v1/Ingress");
	assert_false(ks.complete);
	free(s);
	scan_kinds_release(&ks);
	engine_policy_unref(p);

	/* a rule that is not background-safe contributes no kind */
	p = compile(
	    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'p'},"
	    "'spec':{'background':false,'rules':["
	    "{'name':'who','match':{'any':[{'resources':{'kinds':['ConfigMap']}}]},"
	    "'validate':{'deny':{'conditions':{'any':[{'key':'{{request.userInfo.username}}',"
	    "'operator':'Equals','value':'bob'}]}}}},"
	    "{'name':'ok','match':{'any':[{'resources':{'kinds':['Service']}}]},"
	    "'validate':{'pattern':{'metadata':{'name':'?*'}}}}]}}");
	scan_policy_kinds(p, &ks);
	s = kinds_str(&ks);
	assert_string_equal(s, "*/*/Service");
	assert_false(ks.complete);
	free(s);
	scan_kinds_release(&ks);
	engine_policy_unref(p);
}

static void test_fingerprint(void **state)
{
	struct engine_policy *a = policy_with(""), *b = policy_with("'scanInterval':'5s',");
	struct engine_policy *c = policy_with("'scanSuspend':true,'scanSchedule':'@daily',");
	struct engine_policy *d = policy_with("'validationFailureAction':'Enforce',");

	(void)state;
	/* the schedule fields do not count; everything else does */
	assert_true(scan_policy_fingerprint(a) == scan_policy_fingerprint(b));
	assert_true(scan_policy_fingerprint(a) == scan_policy_fingerprint(c));
	assert_true(scan_policy_fingerprint(a) != scan_policy_fingerprint(d));
	assert_true(scan_policy_fingerprint(a) != 0);
	engine_policy_unref(a);
	engine_policy_unref(b);
	engine_policy_unref(c);
	engine_policy_unref(d);
}

/* ---- the incremental cache ---- */

static void test_cache(void **state)
{
	struct scan_cache *c = scan_cache_new();
	struct scan_entry *e;
	char **gone;
	size_t n, nu = 0;
	const char **uids = NULL;

	(void)state;
	assert_false(scan_cache_complete(c));
	e = scan_cache_visit(c, "a");
	assert_false(scan_entry_fresh(e, 1, 100));
	scan_entry_set(e, 1, 100);
	scan_entry_set(e, 2, 200);
	assert_true(scan_entry_fresh(e, 1, 100));
	assert_false(scan_entry_fresh(e, 1, 101));
	scan_cache_visit(c, "b");
	scan_cache_visit(c, "c");
	assert_true(scan_cache_listing(c));
	/* the first listing reports nothing gone */
	gone = scan_cache_finish(c, &n);
	assert_null(gone);
	assert_int_equal(n, 0);
	assert_true(scan_cache_complete(c));
	assert_int_equal(scan_cache_count(c), 3);

	/* second listing: b deleted, d new, a unchanged */
	e = scan_cache_visit(c, "a");
	assert_true(scan_entry_fresh(e, 1, 100));
	assert_true(scan_entry_fresh(e, 2, 200));
	scan_entry_forget(e, 2);
	assert_false(scan_entry_fresh(e, 2, 200));
	assert_true(scan_cache_visit(c, "a") == e); /* visited twice: the same entry */
	scan_cache_visit(c, "c");
	scan_cache_visit(c, "d");
	/* during a listing, known = last complete + current */
	scan_cache_uids(c, &uids, &nu);
	assert_int_equal(nu, 4);
	free(uids);
	gone = scan_cache_finish(c, &n);
	assert_int_equal(n, 1);
	assert_string_equal(gone[0], "b");
	free(gone[0]);
	free(gone);

	/* a filtered object is dropped; known before = its results are stale */
	assert_true(scan_cache_drop(c, "c"));
	assert_false(scan_cache_drop(c, "zz"));
	assert_int_equal(scan_cache_count(c), 2);

	/* an abandoned listing keeps what it visited and what it did not */
	scan_cache_visit(c, "a");
	scan_cache_visit(c, "e");
	scan_cache_abandon(c);
	assert_false(scan_cache_listing(c));
	uids = NULL;
	nu = 0;
	scan_cache_uids(c, &uids, &nu);
	assert_int_equal(nu, 3);
	qsort(uids, nu, sizeof(*uids), gv_strptr_cmp);
	assert_string_equal(uids[0], "a");
	assert_string_equal(uids[1], "d");
	assert_string_equal(uids[2], "e");
	free(uids);

	/* many objects: the map grows, deletions keep lookups right */
	for (int round = 0; round < 2; round++) {
		char uid[32];
		for (int i = 0; i < 5000; i++) {
			if (round == 1 && i % 3 == 0)
				continue;
			snprintf(uid, sizeof(uid), "uid-%d", i);
			e = scan_cache_visit(c, uid);
			if (round == 0)
				scan_entry_set(e, 7, (uint64_t)i);
			else
				assert_true(scan_entry_fresh(e, 7, (uint64_t)i));
		}
		gone = scan_cache_finish(c, &n);
		if (round == 1)
			assert_int_equal(n, 1667);
		for (size_t i = 0; i < n; i++)
			free(gone[i]);
		free(gone);
	}
	scan_cache_free(c);
}

static bool keep_odd(void *ud, uint64_t pk)
{
	(void)ud;
	return pk % 2;
}

static void test_cache_prune(void **state)
{
	struct scan_cache *c = scan_cache_new();
	struct scan_entry *e = scan_cache_visit(c, "x");

	(void)state;
	for (uint64_t pk = 1; pk <= 6; pk++)
		scan_entry_set(e, pk, pk * 10);
	scan_entry_prune(e, keep_odd, NULL);
	assert_true(scan_entry_fresh(e, 1, 10));
	assert_true(scan_entry_fresh(e, 5, 50));
	assert_false(scan_entry_fresh(e, 2, 20));
	scan_cache_free(c);
}

static void test_cursor_start(void **state)
{
	const char *keys[] = {"/v1/configmaps|", "/v1/pods|", "apps/v1/deployments|"};

	(void)state;
	assert_int_equal(scan_cursor_start(keys, 3, NULL), 0);
	assert_int_equal(scan_cursor_start(keys, 3, "/v1/pods|"), 1);
	assert_int_equal(scan_cursor_start(keys, 3, "/v1/q"), 2);
	assert_int_equal(scan_cursor_start(keys, 3, "zzz"), 0); /* past the end: wrap */
	assert_int_equal(scan_cursor_start(keys, 0, "x"), 0);
}

/* ---- a fake API server ---- */

struct fake {
	json_t *pods;		    /* array of Pod objects, sorted by namespace/name */
	json_t *configmaps;	    /* array */
	int requests;		    /* GETs of collections */
	int pod_pages;		    /* pages of pods served */
	bool forbid_cms;	    /* 403 on configmaps */
	bool expire_once;	    /* the next request with a continue token gets 410 */
	bool fail_all;		    /* every request fails (API server down) */
	bool not_a_list;	    /* pods are answered with an array, not a list object */
	json_t *written;	    /* report objects by path (POST/PUT) */
	json_t *state;		    /* the scan-state ConfigMap, or NULL */
	struct fake_api fa;	    /* fake_request behind ... */
	struct kube_client *client; /* ... this client's test transport (fake_init) */
};

static json_t *pod(const char *ns, const char *name, const char *uid, const char *rv,
		   const char *team)
{
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:o}, s:{s:[{s:s, s:s}]}}",
			      "apiVersion", "v1", "kind", "Pod", "metadata", "name", name,
			      "namespace", ns, "uid", uid, "resourceVersion", rv, "labels",
			      team ? json_pack("{s:s}", "team", team) : json_object(), "spec",
			      "containers", "name", "c", "image", "nginx:1.0");
	return p;
}

static int pod_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	char kx[256], ky[256];

	snprintf(kx, sizeof(kx), "%s/%s",
		 json_string_value(json_object_get(json_object_get(x, "metadata"), "namespace")),
		 json_string_value(json_object_get(json_object_get(x, "metadata"), "name")));
	snprintf(ky, sizeof(ky), "%s/%s",
		 json_string_value(json_object_get(json_object_get(y, "metadata"), "namespace")),
		 json_string_value(json_object_get(json_object_get(y, "metadata"), "name")));
	return strcmp(kx, ky);
}

static void fake_sort(struct fake *f)
{
	size_t n = json_array_size(f->pods);
	json_t **v = gv_xcalloc(n + 1, sizeof(*v));
	json_t *sorted = json_array();

	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(f->pods, i);
	qsort(v, n, sizeof(*v), pod_cmp);
	for (size_t i = 0; i < n; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_decref(f->pods);
	f->pods = sorted;
}

static const char *qparam(const char *path, const char *key, char *buf, size_t n)
{
	const char *q = strchr(path, '?');
	size_t kl = strlen(key);

	for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
		const char *s = p + 1;
		if (!strncmp(s, key, kl) && s[kl] == '=') {
			size_t len = strcspn(s + kl + 1, "&");
			snprintf(buf, n, "%.*s", (int)len, s + kl + 1);
			return buf;
		}
	}
	return NULL;
}

static json_t *list_page(struct fake *f, const json_t *all, const char *path, const char *kind,
			 struct kube_status *st)
{
	char lim[32], cont[32], nsbuf[128];
	const char *l = qparam(path, "limit", lim, sizeof(lim));
	const char *c = qparam(path, "continue", cont, sizeof(cont));
	const char *nsp = strstr(path, "/namespaces/");
	size_t limit = l ? strtoul(l, NULL, 10) : 0, start = c ? strtoul(c, NULL, 10) : 0, k = 0;
	json_t *items = json_array(), *page;
	size_t i;
	const json_t *it;

	if (c && f->expire_once) {
		f->expire_once = false;
		st->http = 410;
		snprintf(st->reason, sizeof(st->reason), "Expired");
		json_decref(items);
		return NULL;
	}
	nsbuf[0] = '\0';
	if (nsp)
		snprintf(nsbuf, sizeof(nsbuf), "%.*s", (int)strcspn(nsp + 12, "/"), nsp + 12);
	json_array_foreach(all, i, it)
	{
		const char *ns = json_string_value(
		    json_object_get(json_object_get(it, "metadata"), "namespace"));
		if (nsbuf[0] && strcmp(ns, nsbuf))
			continue;
		if (k++ < start)
			continue;
		if (limit && json_array_size(items) == limit)
			break;
		/* list items carry no apiVersion/kind */
		{
			json_t *copy = json_deep_copy(it);
			json_object_del(copy, "apiVersion");
			json_object_del(copy, "kind");
			json_array_append_new(items, copy);
		}
	}
	page = json_pack("{s:s, s:s, s:{}, s:o}", "apiVersion", "v1", "kind", kind, "metadata",
			 "items", items);
	{
		/* count what is left after this page */
		size_t total = 0;
		json_array_foreach(all, i, it)
		{
			const char *ns = json_string_value(
			    json_object_get(json_object_get(it, "metadata"), "namespace"));
			if (!nsbuf[0] || !strcmp(ns, nsbuf))
				total++;
		}
		if (start + json_array_size(items) < total) {
			char next[32];
			snprintf(next, sizeof(next), "%zu", start + json_array_size(items));
			json_object_set_new(json_object_get(page, "metadata"), "continue",
					    json_string(next));
		}
	}
	return page;
}

static enum gv_code fake_answer(struct fake *f, const char *method, const char *path,
				const json_t *body, json_t **out, struct kube_status *st,
				struct gv_err *err)
{

	if (f->fail_all) {
		st->http = 0;
		return gv_err_set(err, GV_ENET, "%s %s: connection refused", method, path);
	}
	/* discovery: the core group serves Pods and ConfigMaps, no other group */
	if (!strcmp(method, "GET") && !strcmp(path, "/api")) {
		*out = json_pack("{s:s, s:[s]}", "kind", "APIVersions", "versions", "v1");
		return GV_OK;
	}
	if (!strcmp(method, "GET") && !strcmp(path, "/apis")) {
		*out = json_pack("{s:s, s:[]}", "kind", "APIGroupList", "groups");
		return GV_OK;
	}
	if (!strcmp(method, "GET") && !strcmp(path, "/api/v1")) {
		*out = json_pack(
		    "{s:s, s:s, s:[{s:s, s:b, s:s, s:[s, s]}, {s:s, s:b, s:s, s:[s, s]}]}", "kind",
		    "APIResourceList", "groupVersion", "v1", "resources", "name", "pods",
		    "namespaced", 1, "kind", "Pod", "verbs", "list", "watch", "name", "configmaps",
		    "namespaced", 1, "kind", "ConfigMap", "verbs", "list", "watch");
		return GV_OK;
	}
	if (!strcmp(method, "GET") && !strncmp(path, "/api/v1/", 8) && strstr(path, "pods")) {
		f->requests++;
		if (f->not_a_list) {
			*out = json_pack("[i]", 1);
			return GV_OK;
		}
		*out = list_page(f, f->pods, path, "PodList", st);
		if (!*out)
			return gv_err_set(err, GV_ENET, "GET %s: 410 Expired", path);
		f->pod_pages++;
		return GV_OK;
	}
	if (!strcmp(method, "GET") && strstr(path, "configmaps?")) {
		f->requests++;
		if (f->forbid_cms) {
			st->http = 403;
			snprintf(st->reason, sizeof(st->reason), "Forbidden");
			return gv_err_set(err, GV_ENET,
					  "GET %s: 403 Forbidden: configmaps is "
					  "forbidden",
					  path);
		}
		*out = list_page(f, f->configmaps, path, "ConfigMapList", st);
		return GV_OK;
	}
	if (!strcmp(path, "/api/v1/namespaces/gavel/configmaps/gavel-scan-state")) {
		if (!strcmp(method, "GET")) {
			if (!f->state) {
				st->http = 404;
				return gv_err_set(err, GV_ENET, "GET %s: 404 NotFound", path);
			}
			*out = json_incref(f->state);
			return GV_OK;
		}
		if (!strcmp(method, "PATCH")) {
			if (!f->state) {
				st->http = 404;
				return gv_err_set(err, GV_ENET, "PATCH %s: 404 NotFound", path);
			}
			{
				const char *k;
				json_t *v;
				json_t *data = json_object_get(f->state, "data");
				json_object_foreach(json_object_get(body, "data"), k, v)
				{
					if (json_is_null(v))
						json_object_del(data, k);
					else
						json_object_set(data, k, v);
				}
			}
			*out = json_incref(f->state);
			return GV_OK;
		}
	}
	if (!strcmp(method, "POST") && !strcmp(path, "/api/v1/namespaces/gavel/configmaps")) {
		f->state = json_deep_copy(body);
		*out = json_incref(f->state);
		return GV_OK;
	}
	st->http = 404;
	return gv_err_set(err, GV_ENET, "%s %s: 404 NotFound", method, path);
}

/* kube_request's contract: out may be NULL (the answer is dropped). */
static enum gv_code fake_request(void *ud, const char *method, const char *path, const json_t *body,
				 json_t **out, struct kube_status *st, struct gv_err *err)
{
	json_t *sink = NULL;
	enum gv_code rc = fake_answer(ud, method, path, body, out ? out : &sink, st, err);

	json_decref(sink);
	return rc;
}

static void fake_init(struct fake *f, int nns, int per_ns)
{
	char ns[32], name[32], uid[32];

	memset(f, 0, sizeof(*f));
	f->pods = json_array();
	f->configmaps = json_array();
	for (int n = 0; n < nns; n++) {
		for (int i = 0; i < per_ns; i++) {
			snprintf(ns, sizeof(ns), "ns-%02d", n);
			snprintf(name, sizeof(name), "pod-%03d", i);
			snprintf(uid, sizeof(uid), "uid-%02d-%03d", n, i);
			json_array_append_new(f->pods, pod(ns, name, uid, "1", i % 2 ? "a" : NULL));
		}
	}
	fake_sort(f);
	f->fa = (struct fake_api){.request = fake_request, .ud = f};
	f->client = fake_api_client(&f->fa);
}

static void fake_release(struct fake *f)
{
	kube_client_free(f->client);
	json_decref(f->pods);
	json_decref(f->configmaps);
	json_decref(f->written);
	json_decref(f->state);
}

struct world {
	struct fake f;
	struct engine_policy *pols[4];
	size_t npols;
	struct view_state *st;
	struct report_set *rs;
	struct scanner *s;
};

static void world_state(struct world *w, const char *config_json)
{
	struct engine_policyset *set = engine_policyset_new(w->pols, w->npols, NULL, 0);
	json_t *nss = J("{'ns-00':{'env':'dev'},'ns-01':{'env':'prod'},'ns-02':{}}");
	json_t *cfgdata = config_json ? J(config_json) : NULL;
	struct view_config *cfg = view_config_new(cfgdata);

	view_state_unref(w->st);
	w->st = view_state_new(set, nss, cfg);
	engine_policyset_unref(set);
	json_decref(nss);
	json_decref(cfgdata);
	view_config_unref(cfg);
}

static bool g_prefetch; /* world_init: scan_options.prefetch */

static void world_init(struct world *w, int nns, int per_ns, size_t limit, bool incremental)
{
	struct scan_options opt = {.batch_size = 7,
				   .workers = 2,
				   .incremental = incremental,
				   .resource_limit = limit,
				   .prefetch = g_prefetch,
				   .skip_namespace = "gavel"};

	memset(w, 0, sizeof(*w));
	fake_init(&w->f, nns, per_ns);
	w->pols[w->npols++] = policy_with("'background':true,");
	world_state(w, NULL);
	w->rs = report_set_new(NULL);
	w->s = scanner_new(w->f.client, &opt);
}

static void world_release(struct world *w)
{
	scanner_free(w->s);
	report_set_free(w->rs);
	view_state_unref(w->st);
	for (size_t i = 0; i < w->npols; i++)
		engine_policy_unref(w->pols[i]);
	fake_release(&w->f);
}

static enum gv_code world_run(struct world *w, struct scan_stats *st, struct scan_outcome *out)
{
	const struct engine_policyset *set = view_state_policyset(w->st);
	const struct engine_policy *due[4];
	size_t n = engine_policyset_count(set);
	struct gv_err err = {0};

	for (size_t i = 0; i < n; i++)
		due[i] = engine_policyset_get(set, i);
	return scanner_run(w->s, w->st, due, n, w->rs, NULL, out, st, &err);
}

/* ---- scan cycles ---- */

static void test_scan_incremental(void **state)
{
	struct world w;
	struct scan_stats st;
	struct scan_outcome out[1];

	(void)state;
	world_init(&w, 3, 10, 0, true);
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.listed, 30);
	assert_int_equal(st.evaluated, 30);
	assert_int_equal(st.unchanged, 0);
	assert_int_equal(st.results, 30);
	assert_int_equal(report_count(w.rs), 30);
	assert_int_equal(out[0].objects, 30);
	assert_true(out[0].retained);
	assert_int_equal(st.pages, 5); /* all namespaces at once, in pages of 7 */

	/* nothing changed: nothing evaluated */
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.evaluated, 0);
	assert_int_equal(st.unchanged, 30);
	assert_false(out[0].retained); /* once per policy */

	/* one object changed (resourceVersion): only it is evaluated */
	json_object_set_new(json_object_get(json_array_get(w.f.pods, 4), "metadata"),
			    "resourceVersion", json_string("2"));
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.evaluated, 1);
	assert_int_equal(st.unchanged, 29);

	/* namespace labels changed: that namespace's objects again */
	{
		struct engine_policyset *set = engine_policyset_ref(view_state_policyset(w.st));
		json_t *nss = J("{'ns-00':{'env':'test'},'ns-01':{'env':'prod'},'ns-02':{}}");
		view_state_unref(w.st);
		w.st = view_state_new(set, nss, NULL);
		engine_policyset_unref(set);
		json_decref(nss);
	}
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.evaluated, 10);

	/* the policy changed: everything again */
	engine_policy_unref(w.pols[0]);
	w.pols[0] = policy_with("'background':true,'validationFailureAction':'Enforce',");
	world_state(&w, NULL);
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.evaluated, 30);
	world_release(&w);

	/* --incremental-scan=false: everything every time */
	world_init(&w, 2, 5, 0, false);
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.evaluated, 10);
	assert_int_equal(st.unchanged, 0);
	world_release(&w);
}

static void test_scan_deleted_and_filtered(void **state)
{
	struct world w;
	struct scan_stats st;
	size_t before;

	(void)state;
	world_init(&w, 3, 4, 0, true);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	before = report_count(w.rs);
	assert_int_equal(before, 12);
	/* two pods deleted: their results go */
	json_array_remove(w.f.pods, 0);
	json_array_remove(w.f.pods, 5);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_int_equal(st.deleted, 2);
	assert_int_equal(report_count(w.rs), 10);
	/* resourceFilters now exclude ns-01: its results go, its pods are not evaluated */
	world_state(&w, "{'resourceFilters':'[Pod,ns-01,*]'}");
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_int_equal(st.filtered, 3);
	assert_int_equal(report_count(w.rs), 7);
	/* gavel's own namespace is never scanned */
	json_array_append_new(w.f.pods, pod("gavel", "self", "uid-self", "1", NULL));
	fake_sort(&w.f);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_int_equal(st.filtered, 4);
	assert_int_equal(report_count(w.rs), 7);
	world_release(&w);
}

static void test_scan_resource_limit(void **state)
{
	struct world w;
	struct scan_stats st;
	size_t seen = 0;
	int cycles = 0;

	(void)state;
	/* 3 namespaces x 10 pods, at most 12 objects per cycle */
	world_init(&w, 3, 10, 12, true);
	while (cycles < 10) {
		assert_int_equal(world_run(&w, &st, NULL), GV_OK);
		cycles++;
		seen += st.listed;
		assert_true(st.listed <= 12);
		if (!st.partial)
			break;
		assert_non_null(scanner_cursor(w.s));
	}
	/* 12 + 12 + 6: every object once, in three cycles */
	assert_int_equal(cycles, 3);
	assert_int_equal(seen, 30);
	assert_int_equal(report_count(w.rs), 30);
	assert_null(scanner_cursor(w.s));
	/* the next pass starts at the beginning again; unchanged objects are not evaluated */
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_int_equal(st.listed, 12);
	assert_int_equal(st.evaluated, 0);
	assert_true(st.partial);
	world_release(&w);
}

static void test_scan_expired_token(void **state)
{
	struct world w;
	struct scan_stats st;

	(void)state;
	/* a limit stops in the middle of the listing; the token then expires */
	world_init(&w, 2, 10, 8, true);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_true(st.partial);
	assert_int_equal(st.evaluated, 8);
	w.f.expire_once = true;
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	/* listed again from the start: the first 8 are skipped, 8 more processed */
	assert_int_equal(st.evaluated, 8);
	assert_int_equal(report_count(w.rs), 16);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_false(st.partial);
	assert_int_equal(report_count(w.rs), 20);
	world_release(&w);
}

static void test_scan_forbidden_and_down(void **state)
{
	struct world w;
	struct scan_stats st;
	struct scan_outcome out[2];
	struct gv_err err = {0};
	const struct engine_policy *due[2];

	(void)state;
	world_init(&w, 1, 3, 0, true);
	engine_policy_unref(w.pols[0]);
	w.pols[0] = compile(
	    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'cms'},"
	    "'spec':{'rules':[{'name':'r','match':{'any':[{'resources':{'kinds':['ConfigMap']}}]},"
	    "'validate':{'pattern':{'metadata':{'labels':{'team':'?*'}}}}}]}}");
	w.pols[w.npols++] = policy_with("");
	world_state(&w, NULL);
	w.f.forbid_cms = true;
	due[0] = engine_policyset_get(view_state_policyset(w.st), 0);
	due[1] = engine_policyset_get(view_state_policyset(w.st), 1);
	/* 403 on ConfigMaps: logged and skipped, the Pods are still scanned */
	assert_int_equal(scanner_run(w.s, w.st, due, 2, w.rs, NULL, out, &st, &err), GV_OK);
	assert_int_equal(st.forbidden, 1);
	assert_true(out[0].skipped_kinds);
	assert_false(out[0].retained);
	assert_int_equal(out[1].objects, 3);
	assert_int_equal(report_count(w.rs), 3);
	/* API server down: GV_ENET, nothing else changes */
	w.f.fail_all = true;
	assert_int_equal(scanner_run(w.s, w.st, due, 2, w.rs, NULL, out, &st, &err), GV_ENET);
	assert_int_equal(report_count(w.rs), 3);
	world_release(&w);
}

static bool stop_now(void *ud)
{
	int *calls = ud;

	return (*calls)++ < 1; /* one page, then stop */
}

static void test_scan_stops(void **state)
{
	struct world w;
	struct scan_stats st;
	int calls = 0;
	struct scan_hooks hooks = {.proceed = stop_now, .ud = &calls};
	const struct engine_policy *due[1];
	struct gv_err err = {0};

	(void)state;
	world_init(&w, 2, 10, 0, true);
	due[0] = engine_policyset_get(view_state_policyset(w.st), 0);
	assert_int_equal(scanner_run(w.s, w.st, due, 1, w.rs, &hooks, NULL, &st, &err), GV_OK);
	assert_true(st.stopped);
	assert_int_equal(st.listed, 7);
	world_release(&w);
}

/* How many results of rs are about the object uid. */
static size_t report_count_about(struct report_set *rs, const char *uid)
{
	json_t *all = report_render_all(rs), *rep, *res;
	size_t i, j, n = 0;

	json_array_foreach(all, i, rep)
	{
		json_array_foreach(json_object_get(rep, "results"), j, res)
		{
			const json_t *r0 = json_array_get(json_object_get(res, "resources"), 0);

			n += !strcmp(json_string_value(json_object_get(r0, "uid")), uid);
		}
	}
	json_decref(all);
	return n;
}

/* One cycle of a new scanner (as `gavel scan` makes one per namespace) for due[0]. */
static void scan_fresh(struct kube_client *api, const struct scan_options *opt,
		       const struct world *w, const struct engine_policy **due,
		       struct report_set *rs, struct scan_outcome *out, struct scan_stats *st)
{
	struct scanner *s = scanner_new(api, opt);
	struct gv_err err = {0};

	assert_int_equal(scanner_run(s, w->st, due, 1, rs, NULL, out, st, &err), GV_OK);
	scanner_free(s);
}

/*
 * scan_options.only_namespace, as `gavel scan` uses it: a scanner and a
 * report_set per namespace, the set holding that namespace's reports only.
 */
static void test_scan_one_namespace(void **state)
{
	struct world w;
	struct scan_stats st;
	struct scan_outcome out[1];
	struct scan_options opt = {
	    .batch_size = 3, .workers = 2, .skip_namespace = "gavel", .only_namespace = "ns-01"};
	const struct engine_policy *due[1];
	struct report_set *rs;

	(void)state;
	world_init(&w, 3, 4, 0, true);
	due[0] = engine_policyset_get(view_state_policyset(w.st), 0);
	rs = report_set_new(NULL);
	scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
	/* ns-01's Pods alone, listed in that namespace */
	assert_int_equal(st.listed, 4);
	assert_int_equal(st.pages, 2);
	assert_int_equal(st.targets, 1);
	assert_int_equal(report_count(rs), 4);
	assert_true(out[0].retained);

	/* a Pod of ns-01 deleted while nobody scanned: the next scan drops its results */
	json_array_remove(w.f.pods, 5);
	scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
	assert_int_equal(st.listed, 3);
	assert_int_equal(report_count(rs), 3);

	/*
	 * Cluster-scoped objects only: nothing of the Pod policy is listed, and
	 * its results in the set (the cluster-scoped reports, in real use) are
	 * stale.
	 */
	opt.only_namespace = "";
	scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
	assert_int_equal(st.listed, 0);
	assert_int_equal(st.targets, 0);
	assert_true(out[0].retained);
	assert_int_equal(report_count(rs), 0);

	/* Pods known to be absent from the cluster (empty_resources): not listed */
	{
		static const char *const empty[] = {"apps/v1/deployments", "/v1/pods"};
		char v1[] = "v1", plural[] = "pods";
		struct kube_resource pods = {.version = v1, .resource = plural};
		char *key = scan_resource_key(&pods);

		assert_string_equal(key, "/v1/pods");
		free(key);
		opt.only_namespace = "ns-01";
		scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
		assert_int_equal(report_count(rs), 3);
		opt.empty_resources = empty;
		opt.nempty = 2;
		/* results newer than retain_since (a Pod created while the scan ran) stay */
		opt.retain_since = (int64_t)time(NULL) - 60;
		scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
		assert_int_equal(st.listed, 0);
		assert_int_equal(st.targets, 0);
		assert_true(out[0].retained);
		assert_int_equal(report_count(rs), 3);
		/* older ones go */
		opt.retain_since = (int64_t)time(NULL) + 60;
		scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
		assert_int_equal(st.listed, 0);
		assert_int_equal(report_count(rs), 0);

		/*
		 * The admission result of a policy the scan does not evaluate
		 * (background: false) about the last Pod, deleted since: it goes
		 * too, in this namespace only, and a Deployment's stays.
		 */
		{
			struct report_resource gone = {"v1", "Pod", "ns-01", "gone", "uid-gone"};
			struct report_resource other = {"v1", "Pod", "ns-02", "other", "uid-ns02"};
			struct report_resource dep = {"apps/v1", "Deployment", "ns-01", "d",
						      "uid-dep"};
			struct report_entry e = {.policy = "admission-only",
						 .rule = "r",
						 .result = ENGINE_PASS,
						 .seconds = (int64_t)time(NULL),
						 .process = REPORT_ADMISSION_REVIEW};
			struct gv_err err = {0};

			assert_int_equal(report_upsert(rs, &gone, &e, 1, &err), GV_OK);
			assert_int_equal(report_upsert(rs, &other, &e, 1, &err), GV_OK);
			opt.empty_resources = empty + 1; /* Pods only */
			opt.nempty = 1;
			assert_int_equal(report_upsert(rs, &dep, &e, 1, &err), GV_OK);
			assert_int_equal(report_count(rs), 3);
			scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
			assert_int_equal(report_count(rs), 2);
			assert_int_equal(report_count_about(rs, "uid-gone"), 0);
			assert_int_equal(report_count_about(rs, "uid-ns02"), 1);
			assert_int_equal(report_count_about(rs, "uid-dep"), 1);
		}
	}
	report_set_free(rs);
	world_release(&w);
}

/*
 * A page of more objects than are parsed at a time (parse_batch, default
 * and 7; also the whole page at once, as the reconciler parses): every
 * object evaluated and reported once, with its own result; an answer that
 * is not a list fails the cycle and leaves the reports as they were.
 */
static void scan_large_page(int parse_batch)
{
	struct world w;
	struct scan_stats st;
	struct scan_outcome out[1];
	struct scan_options opt = {
	    .batch_size = 500, .workers = 2, .parse_batch = parse_batch, .skip_namespace = "gavel"};
	const struct engine_policy *due[1];
	struct report_set *rs;
	struct gv_err err = {0};
	json_t *all, *item, *r;
	size_t i, j, pass = 0, fail = 0, pods = 0;

	world_init(&w, 3, 100, 0, true);
	due[0] = engine_policyset_get(view_state_policyset(w.st), 0);
	rs = report_set_new(NULL);
	scan_fresh(w.f.client, &opt, &w, due, rs, out, &st);
	assert_int_equal(st.pages, 1);
	assert_int_equal(st.listed, 300);
	assert_int_equal(st.evaluated, 300);
	assert_int_equal(st.results, 300);
	assert_int_equal(report_count(rs), 300);
	all = report_render_all(rs);
	json_array_foreach(all, i, item)
	{
		json_array_foreach(json_object_get(item, "results"), j, r)
		{
			const char *res = json_string_value(json_object_get(r, "result"));
			const char *name = json_string_value(json_object_get(
			    json_array_get(json_object_get(r, "resources"), 0), "name"));
			/* odd Pods carry the team label the policy asks for */
			bool odd = name && (name[strlen(name) - 1] - '0') % 2;
			assert_string_equal(res, odd ? "pass" : "fail");
			pass += odd;
			fail += !odd;
			pods++;
		}
	}
	assert_int_equal(pods, 300);
	assert_int_equal(pass, 150);
	assert_int_equal(fail, 150);
	json_decref(all);

	w.f.not_a_list = true;
	{
		struct scanner *s = scanner_new(w.f.client, &opt);
		assert_int_equal(scanner_run(s, w.st, due, 1, rs, NULL, out, &st, &err), GV_ENET);
		assert_non_null(strstr(err.msg, "response is not a list: '{' expected"));
		scanner_free(s);
	}
	assert_int_equal(report_count(rs), 300);
	report_set_free(rs);
	world_release(&w);
}

static void test_scan_large_page(void **state)
{
	(void)state;
	scan_large_page(0);
	scan_large_page(7);
	scan_large_page(INT_MAX);
}

/*
 * Incremental scans: an unchanged object is not evaluated again, a
 * changed one is, whole (a rule on its spec sees the new spec), and its
 * result replaces the old one.
 */
static void test_scan_incremental_whole(void **state)
{
	struct world w;
	struct scan_stats st;
	struct scan_outcome out[1];
	json_t *all, *item, *r, *c0;
	size_t i, j, fails = 0;

	(void)state;
	world_init(&w, 1, 10, 0, true);
	engine_policy_unref(w.pols[0]);
	w.pols[0] = compile(
	    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'nginx-only',"
	    "'uid':'u-2'},'spec':{'background':true,'rules':[{'name':'image','match':{'any':[{"
	    "'resources':{'kinds':['Pod']}}]},'validate':{'message':'nginx only','pattern':{"
	    "'spec':{'containers':[{'image':'nginx:*'}]}}}}]}}");
	world_state(&w, NULL);
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.evaluated, 10);
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.unchanged, 10);
	/* pod 3 changes its image */
	c0 = json_array_get(
	    json_object_get(json_object_get(json_array_get(w.f.pods, 3), "spec"), "containers"), 0);
	json_object_set_new(c0, "image", json_string("busybox:1"));
	json_object_set_new(json_object_get(json_array_get(w.f.pods, 3), "metadata"),
			    "resourceVersion", json_string("2"));
	assert_int_equal(world_run(&w, &st, out), GV_OK);
	assert_int_equal(st.evaluated, 1);
	assert_int_equal(st.unchanged, 9);
	all = report_render_all(w.rs);
	json_array_foreach(all, i, item)
	{
		json_array_foreach(json_object_get(item, "results"), j, r)
		{
			const char *res = json_string_value(json_object_get(r, "result"));
			const char *name = json_string_value(json_object_get(
			    json_array_get(json_object_get(r, "resources"), 0), "name"));
			if (!strcmp(res, "fail")) {
				assert_string_equal(name, "pod-003");
				assert_string_equal(
				    json_string_value(json_object_get(
					json_array_get(json_object_get(r, "resources"), 0),
					"kind")),
				    "Pod");
				fails++;
			}
		}
	}
	assert_int_equal(fails, 1);
	json_decref(all);
	world_release(&w);
}

/* The scanner of w replaced by one that records inputs digests (limit: resource_limit). */
static void world_inputs(struct world *w, size_t limit)
{
	struct scan_options opt = {.batch_size = 7,
				   .workers = 2,
				   .resource_limit = limit,
				   .skip_namespace = "gavel",
				   .inputs = true};

	scanner_free(w->s);
	w->s = scanner_new(w->f.client, &opt);
}

/* scanner_inputs() for every policy of w into out; the objects listed. */
static size_t world_probe(struct world *w, char out[SCAN_INPUTS_LEN])
{
	const struct engine_policyset *set = view_state_policyset(w->st);
	const struct engine_policy *due[4];
	size_t n = engine_policyset_count(set), objects = 0;

	for (size_t i = 0; i < n; i++)
		due[i] = engine_policyset_get(set, i);
	assert_int_equal(scanner_inputs(w->s, w->st, due, n, out, &objects), GV_OK);
	return objects;
}

/*
 * The inputs digest: a metadata-only probe tells what a full cycle would
 * record, and anything the cycle would see differently changes it.
 */
static void test_scan_inputs(void **state)
{
	struct world w;
	struct scan_stats st;
	char probe[SCAN_INPUTS_LEN], before[SCAN_INPUTS_LEN];
	json_t *gone;

	(void)state;
	world_init(&w, 3, 10, 0, false);
	/* not asked for: not recorded */
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_string_equal(st.inputs, "");
	world_inputs(&w, 0);
	/* the probe evaluates nothing and agrees with the cycle */
	assert_int_equal(world_probe(&w, probe), 30);
	assert_int_equal(strlen(probe), SCAN_INPUTS_LEN - 1);
	assert_true(!strncmp(probe, "sha256:", 7));
	assert_int_equal(report_count(w.rs), 30);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_int_equal(st.evaluated, 30);
	assert_string_equal(st.inputs, probe);
	snprintf(before, sizeof(before), "%s", probe);
	/* a new resourceVersion */
	json_object_set_new(json_object_get(json_array_get(w.f.pods, 3), "metadata"),
			    "resourceVersion", json_string("2"));
	world_probe(&w, probe);
	assert_string_not_equal(probe, before);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_string_equal(st.inputs, probe);
	snprintf(before, sizeof(before), "%s", probe);
	/* an object deleted */
	gone = json_incref(json_array_get(w.f.pods, 12));
	json_array_remove(w.f.pods, 12);
	assert_int_equal(world_probe(&w, probe), 29);
	assert_string_not_equal(probe, before);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_string_equal(st.inputs, probe);
	json_decref(gone);
	/* a listing started again after a 410: not every object seen once */
	w.f.expire_once = true;
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_string_equal(st.inputs, "");
	w.f.expire_once = true;
	world_probe(&w, probe);
	assert_string_equal(probe, "");
	/* the API server down: the probe cannot tell, the cycle fails */
	w.f.fail_all = true;
	world_probe(&w, probe);
	assert_string_equal(probe, "");
	w.f.fail_all = false;
	/* a cycle cut by the resource limit */
	world_inputs(&w, 8);
	assert_int_equal(world_run(&w, &st, NULL), GV_OK);
	assert_true(st.partial);
	assert_string_equal(st.inputs, "");
	world_release(&w);
}

/* The same cycles with the next page requested while one is evaluated. */
static void test_scan_prefetch(void **state)
{
	g_prefetch = true;
	test_scan_incremental(state);
	test_scan_deleted_and_filtered(state);
	test_scan_resource_limit(state);
	test_scan_expired_token(state);
	test_scan_forbidden_and_down(state);
	test_scan_stops(state);
	g_prefetch = false;
}

/* ---- the scan-state ConfigMap ---- */

static void test_state_encoding(void **state)
{
	struct scanstate_entry e = {0}, d;
	struct engine_policy *p = policy_with("");
	struct engine_policy *np = compile(
	    "{'apiVersion':'kyverno.io/v1','kind':'Policy','metadata':{'name':'x.y','namespace':"
	    "'team-a'},'spec':{'rules':[{'name':'r','match':{'any':[{'resources':{'kinds':"
	    "['ConfigMap']}}]},'validate':{'pattern':{'metadata':{'name':'?*'}}}}]}}");
	struct gv_err err = {0};
	char *key, *text;

	(void)state;
	key = scanstate_key(p);
	assert_string_equal(key, "ClusterPolicy.require-team");
	free(key);
	key = scanstate_key(np);
	assert_string_equal(key, "Policy.team-a.x.y");
	free(key);

	e.last_scan = T("2026-03-01T10:00:00Z");
	e.fingerprint = 0x0123456789abcdefULL;
	snprintf(e.uid, sizeof(e.uid), "u-1");
	text = scanstate_encode(&e);
	assert_string_equal(
	    text, "{\"fingerprint\":\"0123456789abcdef\",\"lastScan\":\"2026-03-01T10:00:00Z\","
		  "\"uid\":\"u-1\"}");
	assert_int_equal(scanstate_decode(text, &d, &err), GV_OK);
	assert_int_equal(d.last_scan, e.last_scan);
	assert_true(d.fingerprint == e.fingerprint);
	assert_string_equal(d.uid, "u-1");
	free(text);

	/* older or foreign entries: what can be read is */
	assert_int_equal(
	    scanstate_decode("{\"lastScan\":\"2026-03-01T10:00:00Z\",\"extra\":1}", &d, NULL),
	    GV_OK);
	assert_true(d.fingerprint == 0);
	assert_int_equal(scanstate_decode("{\"lastScan\":\"yesterday\"}", &d, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "lastScan: "));
	gv_err_clear(&err);
	assert_int_equal(scanstate_decode("{}", &d, &err), GV_EINVAL);
	assert_string_equal(err.msg, "lastScan is missing");
	assert_int_equal(scanstate_decode("[1", &d, NULL), GV_EINVAL);
	assert_int_equal(scanstate_decode(NULL, &d, NULL), GV_EINVAL);
	engine_policy_unref(p);
	engine_policy_unref(np);
}

static void test_state_read_write(void **state)
{
	struct fake f;
	struct kube_client *api;
	struct engine_policy *p = policy_with("");
	struct scanstate_entry e = {.last_scan = 1700000000}, got;
	json_t *data = NULL, *changes;
	char *text;

	(void)state;
	fake_init(&f, 0, 0);
	api = f.client;
	/* absent: empty */
	assert_int_equal(scanstate_read(api, "gavel", SCANSTATE_CONFIGMAP, &data, NULL), GV_OK);
	assert_int_equal(json_object_size(data), 0);
	json_decref(data);
	/* the first write creates it */
	text = scanstate_encode(&e);
	changes = json_pack("{s:s}", "ClusterPolicy.require-team", text);
	free(text);
	assert_int_equal(scanstate_write(api, "gavel", SCANSTATE_CONFIGMAP, changes, NULL), GV_OK);
	json_decref(changes);
	assert_non_null(f.state);
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_object_get(f.state, "metadata"), "labels"),
				"app.kubernetes.io/managed-by")),
			    "gavel");
	assert_int_equal(scanstate_read(api, "gavel", SCANSTATE_CONFIGMAP, &data, NULL), GV_OK);
	assert_true(scanstate_lookup(data, p, &got));
	assert_int_equal(got.last_scan, 1700000000);
	json_decref(data);
	/* later writes patch: null removes a key */
	changes = J("{'ClusterPolicy.require-team':null,'ClusterPolicy.other':'{}'}");
	assert_int_equal(scanstate_write(api, "gavel", SCANSTATE_CONFIGMAP, changes, NULL), GV_OK);
	json_decref(changes);
	assert_int_equal(scanstate_read(api, "gavel", SCANSTATE_CONFIGMAP, &data, NULL), GV_OK);
	assert_false(scanstate_lookup(data, p, &got));
	assert_non_null(json_object_get(data, "ClusterPolicy.other"));
	json_decref(data);
	/* API errors are errors */
	f.fail_all = true;
	assert_int_equal(scanstate_read(api, "gavel", SCANSTATE_CONFIGMAP, &data, NULL), GV_ENET);
	fake_release(&f);
	engine_policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_due_interval),
	    cmocka_unit_test(test_due_cron),
	    cmocka_unit_test(test_due_suspend_resume),
	    cmocka_unit_test(test_due_changed_policy),
	    cmocka_unit_test(test_jitter_spreads),
	    cmocka_unit_test(test_sched_errors),
	    cmocka_unit_test(test_global),
	    cmocka_unit_test(test_kind_parse),
	    cmocka_unit_test(test_policy_kinds),
	    cmocka_unit_test(test_fingerprint),
	    cmocka_unit_test(test_cache),
	    cmocka_unit_test(test_cache_prune),
	    cmocka_unit_test(test_cursor_start),
	    cmocka_unit_test(test_scan_incremental),
	    cmocka_unit_test(test_scan_deleted_and_filtered),
	    cmocka_unit_test(test_scan_resource_limit),
	    cmocka_unit_test(test_scan_expired_token),
	    cmocka_unit_test(test_scan_forbidden_and_down),
	    cmocka_unit_test(test_scan_stops),
	    cmocka_unit_test(test_scan_one_namespace),
	    cmocka_unit_test(test_scan_prefetch),
	    cmocka_unit_test(test_scan_large_page),
	    cmocka_unit_test(test_scan_incremental_whole),
	    cmocka_unit_test(test_scan_inputs),
	    cmocka_unit_test(test_state_encoding),
	    cmocka_unit_test(test_state_read_write),
	};

	gv_init();
	gv_log_setup(GV_LOG_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
