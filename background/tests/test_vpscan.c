/*
 * test_vpscan.c - CEL policies in background scans: the prune keeps the
 * results of live ValidatingPolicies (and drops those of policies gone),
 * legacy and CEL results share one report per namespace, one namespace's
 * scan with a fake API server (results, source, NamespacedValidatingPolicy
 * scope, retain, inputs digest), a ValidatingAdmissionPolicy whose kind is
 * not served, and the policy fingerprint ignoring the schedule fields.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "background/policystatus.h"
#include "background/report.h"
#include "background/vpscan.h"
#include "common/tests/helpers.h"
#include "kube/tests/transport.h"

#include "common/banned.h"

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

static struct vpol_policy *vcompile(const char *text)
{
	json_t *doc = J(text);
	struct gv_err err = {0};
	struct vpol_policy *p = vpol_compile(doc, &err);

	if (!p)
		fail_msg("CEL policy does not compile: %s", err.msg);
	json_decref(doc);
	return p;
}

static struct report_resource pod(const char *ns, const char *name, const char *uid)
{
	return (struct report_resource){"v1", "Pod", ns, name, uid};
}

static struct report_entry ent(const char *rule, enum engine_status st, const char *source,
			       enum report_process proc)
{
	return (struct report_entry){.rule = rule,
				     .result = st,
				     .message = "m",
				     .scored = true,
				     .seconds = 1,
				     .process = proc,
				     .source = source};
}

static void replace1(struct report_set *rs, const struct report_resource *r, const char *policy,
		     const struct report_entry *e, size_t n)
{
	struct gv_err err = {0};

	assert_int_equal(report_replace(rs, r, policy, e, n, &err), GV_OK);
}

#define CPOL_TEAM                                                                                  \
	"{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":{\"name\":"     \
	"\"require-team\"},\"spec\":{\"background\":true,\"rules\":[{\"name\":\"team\",\"match\":" \
	"{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},\"validate\":{\"message\":\"m\","       \
	"\"pattern\":{\"metadata\":{\"labels\":{\"team\":\"?*\"}}}}}]}}"

/* A Pod ValidatingPolicy (kind, name, namespace, extra spec members). */
static char *vp_text(const char *kind, const char *name, const char *ns, const char *extra)
{
	return gv_xasprintf(
	    "{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"%s\",\"metadata\":{\"name\":"
	    "\"%s\"%s%s%s,\"uid\":\"uid-%s\"},\"spec\":{%s\"validationActions\":[\"Audit\"],"
	    "\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"operations\":[\"CREATE\",\"UPDATE\"],\"resources\":[\"pods\"]}]},"
	    "\"validations\":[{\"expression\":\"has(object.metadata.labels) && \\u0027team\\u0027 "
	    "in "
	    "object.metadata.labels\",\"message\":\"label team is required\"}]}}",
	    kind, name, ns ? ",\"namespace\":\"" : "", ns ? ns : "", ns ? "\"" : "", name,
	    extra ? extra : "");
}

/*
 * The prune fix: report_prune() alone drops every CEL result (it knows only
 * the legacy set); report_prune_live() keeps those of live policies (whatever
 * their rule, even a name a ClusterPolicy also has), drops those of CEL
 * policies gone and the background results of a policy no longer scanned.
 */
static void test_prune_live(void **state)
{
	struct engine_policy *cp = compile(CPOL_TEAM);
	struct engine_policyset *set = engine_policyset_new(&cp, 1, NULL, 0);
	struct report_resource a = pod("team-a", "a", "uid-a"), b = pod("team-a", "b", "uid-b");
	struct report_entry legacy = ent("team", ENGINE_FAIL, NULL, REPORT_BACKGROUND_SCAN);
	struct report_entry vp = ent("", ENGINE_FAIL, REPORT_SOURCE_VPOL, REPORT_BACKGROUND_SCAN);
	struct report_entry vpx =
	    ent("exception", ENGINE_SKIP, REPORT_SOURCE_VPOL, REPORT_BACKGROUND_SCAN);
	struct report_entry vap =
	    ent("some-vap", ENGINE_FAIL, REPORT_SOURCE_VAP, REPORT_BACKGROUND_SCAN);
	struct report_entry adm = ent("", ENGINE_FAIL, REPORT_SOURCE_VPOL, REPORT_ADMISSION_REVIEW);
	struct report_live live[] = {{REPORT_SOURCE_VPOL, "require-team", true},
				     {REPORT_SOURCE_VPOL, "team-a/nvp", false}};
	struct gv_err err = {0};

	(void)state;
	for (int round = 0; round < 2; round++) {
		struct report_set *rs = report_set_new(NULL);

		replace1(rs, &a, "require-team", &legacy, 1);
		/* a ValidatingPolicy with the ClusterPolicy's name: its own results */
		replace1(rs, &b, "require-team", &vp, 1);
		replace1(rs, &a, "team-a/nvp", &vp, 1);
		assert_int_equal(report_upsert(rs, &b,
					       (struct report_entry[]){{.policy = "team-a/nvp",
									.rule = "",
									.result = ENGINE_FAIL,
									.scored = true,
									.seconds = 1,
									.process = adm.process,
									.source = adm.source}},
					       1, &err),
				 GV_OK);
		replace1(rs, &b, "gone-vp", &vpx, 1);
		replace1(rs, &b, "some-vap", &vap, 1);
		assert_int_equal(report_count(rs), 6);
		if (round == 0) {
			/* the legacy view: every CEL result is of a policy it does not know */
			assert_int_equal(report_prune(rs, set), 5);
			assert_int_equal(report_count(rs), 1);
		} else {
			/* gone-vp, some-vap (no live VAP), nvp's background result on a */
			assert_int_equal(report_prune_live(rs, set, live, 2), 3);
			assert_int_equal(report_count(rs), 3);
			assert_int_equal(report_prune_live(rs, set, live, 2), 0);
			{
				json_t *objs = report_render_all(rs);
				const json_t *res =
				    json_object_get(json_array_get(objs, 0), "results");
				size_t i, nvp = 0, nlegacy = 0;
				const json_t *r;

				assert_int_equal(json_array_size(objs), 1);
				json_array_foreach(res, i, r)
				{
					const char *src =
					    json_string_value(json_object_get(r, "source"));
					if (!strcmp(src, REPORT_SOURCE_VPOL)) {
						nvp++;
						/* Kyverno leaves a ValidatingPolicy's rule out */
						assert_null(json_object_get(r, "rule"));
					} else {
						assert_string_equal(src, REPORT_SOURCE);
						nlegacy++;
					}
				}
				assert_int_equal(nvp, 2);
				assert_int_equal(nlegacy, 1);
				json_decref(objs);
			}
		}
		report_set_free(rs);
	}
	engine_policyset_unref(set);
	engine_policy_unref(cp);
}

/* Mixed sets: one report per namespace; per policy (legacy and CEL alike) with split. */
static void test_mixed_layouts(void **state)
{
	struct report_resource a = pod("team-a", "a", "uid-a");
	struct report_entry legacy = ent("team", ENGINE_FAIL, NULL, REPORT_BACKGROUND_SCAN);
	struct report_entry vp = ent("", ENGINE_PASS, REPORT_SOURCE_VPOL, REPORT_BACKGROUND_SCAN);

	(void)state;
	for (int split = 0; split < 2; split++) {
		struct report_options ro = {.split = split};
		struct report_set *rs = report_set_new(&ro);
		json_t *objs;

		replace1(rs, &a, "require-team", &legacy, 1);
		replace1(rs, &a, "vp-team", &vp, 1);
		objs = report_render_all(rs);
		if (!split) {
			assert_int_equal(json_array_size(objs), 1);
			assert_string_equal(
			    json_string_value(json_object_get(
				json_object_get(json_array_get(objs, 0), "metadata"), "name")),
			    "polr-ns-team-a");
			assert_int_equal(
			    json_array_size(json_object_get(json_array_get(objs, 0), "results")),
			    2);
		} else {
			assert_int_equal(json_array_size(objs), 2);
			assert_string_equal(
			    json_string_value(json_object_get(
				json_object_get(json_array_get(objs, 0), "metadata"), "name")),
			    "polr-ns-team-a-require-team");
			assert_string_equal(
			    json_string_value(json_object_get(
				json_object_get(json_array_get(objs, 1), "metadata"), "name")),
			    "polr-ns-team-a-vp-team");
		}
		json_decref(objs);
		report_set_free(rs);
	}
}

/* ---- one namespace's scan against a fake API server ---- */

struct fake {
	int lists;	   /* list requests */
	bool vap_served;   /* admissionregistration.k8s.io/v1 serves validatingadmissionpolicies */
	const char *color; /* label of pod b */
};

static json_t *pod_obj(const char *ns, const char *name, const char *uid, const char *rv, bool team)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:o}}", "apiVersion", "v1", "kind",
			 "Pod", "metadata", "name", name, "namespace", ns, "uid", uid,
			 "resourceVersion", rv, "labels",
			 team ? json_pack("{s:s}", "team", "x") : json_object());
}

static enum gv_code fake_request(void *ud, const char *method, const char *path, const json_t *body,
				 json_t **out, struct kube_status *st, struct gv_err *err)
{
	struct fake *f = ud;

	(void)body;
	(void)method;
	if (!strcmp(path, "/api/v1")) {
		*out = J("{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
			 "{\"name\":\"pods\",\"namespaced\":true,\"kind\":\"Pod\",\"verbs\":"
			 "[\"list\",\"watch\"]},{\"name\":\"pods/status\",\"namespaced\":true,"
			 "\"kind\":\"Pod\"}]}");
		return GV_OK;
	}
	if (!strncmp(path, "/apis/apps/v1", 13) || !strncmp(path, "/apis/batch/v1", 14)) {
		*out = J("{\"kind\":\"APIResourceList\",\"resources\":[]}");
		return GV_OK;
	}
	if (!strcmp(path, "/apis/admissionregistration.k8s.io/v1") && f->vap_served) {
		*out = J("{\"kind\":\"APIResourceList\",\"resources\":[{\"name\":\"configmaps\","
			 "\"namespaced\":true,\"kind\":\"ConfigMap\"}]}");
		return GV_OK;
	}
	if (!strncmp(path, "/api/v1/namespaces/team-a/pods", 30)) {
		json_t *items = json_array();
		f->lists++;
		json_array_append_new(items, pod_obj("team-a", "a", "uid-a", "10", false));
		json_array_append_new(items, pod_obj("team-a", "b", "uid-b", "11", true));
		*out = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "v1", "kind", "PodList",
				 "metadata", "resourceVersion", "20", "items", items);
		return GV_OK;
	}
	if (!strncmp(path, "/api/v1/namespaces/", 19)) {
		f->lists++;
		*out =
		    J("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{},\"items\":[]}");
		return GV_OK;
	}
	st->http = 404;
	snprintf(st->reason, sizeof(st->reason), "NotFound");
	return gv_err_set(err, GV_ENET, "the server could not find the requested resource");
}

static void test_scan_namespace(void **state)
{
	char *t1 = vp_text("ValidatingPolicy", "vp-team", NULL, NULL);
	char *t2 = vp_text("NamespacedValidatingPolicy", "nvp-team", "team-b", NULL);
	struct vpol_policy *vp = vcompile(t1), *nvp = vcompile(t2);
	const struct vpol_policy *pols[2] = {vp, nvp};
	struct fake f = {0};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct vpscan_plan *plan = vpscan_plan_new(c, pols, 2);
	struct view_state *st = view_state_new(NULL, NULL, NULL);
	struct report_set *rs = report_set_new(NULL);
	struct report_resource gone = pod("team-a", "gone", "uid-gone");
	struct report_entry old = ent("", ENGINE_FAIL, REPORT_SOURCE_VPOL, REPORT_BACKGROUND_SCAN);
	struct vpscan_args a = {.client = c,
				.state = st,
				.ns = "team-a",
				.self = "gavel",
				.due = pols,
				.ndue = 2,
				.rs = rs};
	struct vpscan_stats s1 = {0}, s2 = {0};
	struct gv_err err = {0};
	json_t *objs, *res;
	size_t i;
	const json_t *r;
	int fails = 0, passes = 0;

	(void)state;
	/* a stale result of an object that no longer exists */
	replace1(rs, &gone, "vp-team", &old, 1);
	assert_int_equal(vpscan_namespace(plan, &a, &s1, &err), GV_OK);
	assert_int_equal(s1.listed, 2);
	/* the NamespacedValidatingPolicy of team-b does not look at team-a */
	assert_int_equal(s1.evaluated, 2);
	assert_int_equal(s1.results, 2);
	assert_true(s1.inputs[0] != '\0');
	objs = report_render_all(rs);
	assert_int_equal(json_array_size(objs), 1);
	res = json_object_get(json_array_get(objs, 0), "results");
	assert_int_equal(json_array_size(res), 2); /* the stale one is gone (retain) */
	json_array_foreach(res, i, r)
	{
		assert_string_equal(json_string_value(json_object_get(r, "source")),
				    REPORT_SOURCE_VPOL);
		assert_string_equal(json_string_value(json_object_get(r, "policy")), "vp-team");
		assert_null(json_object_get(r, "rule"));
		assert_string_equal(
		    json_string_value(json_object_get(json_object_get(r, "properties"), "process")),
		    "background scan");
		if (!strcmp(json_string_value(json_object_get(r, "result")), "fail")) {
			fails++;
			assert_string_equal(json_string_value(json_object_get(r, "message")),
					    "label team is required");
		} else {
			passes++;
		}
	}
	assert_int_equal(fails, 1);
	assert_int_equal(passes, 1);
	json_decref(objs);

	/* metadata only: the same digest, nothing evaluated */
	a.metadata_only = true;
	a.rs = NULL;
	assert_int_equal(vpscan_namespace(plan, &a, &s2, &err), GV_OK);
	assert_int_equal(s2.evaluated, 0);
	assert_string_equal(s2.inputs, s1.inputs);

	/* its own namespace: the NamespacedValidatingPolicy's scope */
	a.metadata_only = false;
	a.rs = rs;
	a.ns = "team-b";
	a.due = &pols[1];
	a.ndue = 1;
	assert_int_equal(vpscan_namespace(plan, &a, &s2, &err), GV_OK);
	assert_int_equal(f.lists, 3);

	report_set_free(rs);
	view_state_unref(st);
	vpscan_plan_free(plan);
	kube_client_free(c);
	vpol_free(vp);
	vpol_free(nvp);
	free(t1);
	free(t2);
}

/* A ValidatingPolicy labelled reports.kyverno.io/disabled is evaluated, never reported. */
static void test_scan_disabled(void **state)
{
	char *t = vp_text("ValidatingPolicy", "vp-quiet", NULL, NULL);
	char *labelled =
	    gv_str_replace_all(t, "\"metadata\":{",
			       "\"metadata\":{\"labels\":{\"reports.kyverno.io/disabled\":\"\"},");
	struct vpol_policy *vp = vcompile(labelled);
	const struct vpol_policy *pols[1] = {vp};
	struct fake f = {0};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct vpscan_plan *plan = vpscan_plan_new(c, pols, 1);
	struct view_state *st = view_state_new(NULL, NULL, NULL);
	struct report_set *rs = report_set_new(NULL);
	struct vpscan_args a = {.client = c,
				.state = st,
				.ns = "team-a",
				.self = "gavel",
				.due = pols,
				.ndue = 1,
				.rs = rs};
	struct vpscan_stats s1 = {0};
	struct gv_err err = {0};

	(void)state;
	assert_int_equal(vpscan_namespace(plan, &a, &s1, &err), GV_OK);
	assert_int_equal(s1.evaluated, 2);
	assert_int_equal(s1.results, 0);
	assert_int_equal(report_count(rs), 0);
	report_set_free(rs);
	view_state_unref(st);
	vpscan_plan_free(plan);
	kube_client_free(c);
	vpol_free(vp);
	free(t);
	free(labelled);
}

/* A context loader that knows one GlobalContextEntry, limits = {max: 3}. */
static enum gv_code gce_load(void *ud, const json_t *entry, const json_t *ctx, json_t **out,
			     struct gv_err *err)
{
	const char *g =
	    json_string_value(json_object_get(json_object_get(entry, "globalReference"), "name"));

	(void)ud;
	(void)ctx;
	if (g && !strcmp(g, "limits")) {
		*out = json_pack("{s:i}", "max", 3);
		return GV_OK;
	}
	return gv_err_set(err, GV_ENET, "failed to find globalcontext entry %s", g ? g : "?");
}

static const struct engine_hooks gce_hooks = {.load_context = gce_load};
static int gce_opens, gce_closes;

static const struct engine_hooks *gce_open(void *ud, const struct engine_policyset *set,
					   long deadline_ms)
{
	(void)ud;
	(void)set;
	assert_true(deadline_ms < 0); /* a scan: no overall bound */
	gce_opens++;
	return &gce_hooks;
}

static void gce_close(void *ud, const struct engine_hooks *h)
{
	(void)ud;
	assert_ptr_equal(h, &gce_hooks);
	gce_closes++;
}

/* Kyverno's CEL libraries in a scan go through the context loader, as at admission. */
static void test_scan_libraries(void **state)
{
	static const struct view_context ctxsrc = {gce_open, gce_close, NULL};
	const char *text =
	    "{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"ValidatingPolicy\",\"metadata\":"
	    "{\"name\":\"gce\",\"uid\":\"uid-gce\"},\"spec\":{\"validationActions\":[\"Audit\"],"
	    "\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"operations\":[\"CREATE\"],\"resources\":[\"pods\"]}]},\"validations\":"
	    "[{\"expression\":\"globalContext.Get(\\u0027limits\\u0027).max == "
	    "3\",\"message\":\"m\"}]}}";
	struct vpol_policy *vp = vcompile(text);
	const struct vpol_policy *pols[1] = {vp};
	struct fake f = {0};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct vpscan_plan *plan = vpscan_plan_new(c, pols, 1);
	struct view_state *st = view_state_new(NULL, NULL, NULL);
	struct vpscan_args a = {
	    .client = c, .state = st, .ns = "team-a", .self = "gavel", .due = pols, .ndue = 1};
	struct vpscan_stats s = {0};
	struct gv_err err = {0};
	const char *want[2] = {"error", "pass"};

	(void)state;
	for (int withctx = 0; withctx < 2; withctx++) {
		struct report_set *rs = report_set_new(NULL);
		json_t *objs, *res;
		const json_t *r;
		size_t i;
		a.rs = rs;
		a.context = withctx ? &ctxsrc : NULL;
		assert_int_equal(vpscan_namespace(plan, &a, &s, &err), GV_OK);
		assert_int_equal(s.evaluated, 2);
		objs = report_render_all(rs);
		res = json_object_get(json_array_get(objs, 0), "results");
		assert_int_equal(json_array_size(res), 2);
		json_array_foreach(res, i, r) assert_string_equal(
		    json_string_value(json_object_get(r, "result")), want[withctx]);
		json_decref(objs);
		report_set_free(rs);
	}
	assert_int_equal(gce_opens, 1);
	assert_int_equal(gce_closes, 1);
	view_state_unref(st);
	vpscan_plan_free(plan);
	kube_client_free(c);
	vpol_free(vp);
}

#define VAP                                                                                        \
	"{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"                            \
	"\"ValidatingAdmissionPolicy\",\"metadata\":{\"name\":\"vap-team\"},\"spec\":{"            \
	"\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],\"apiVersions\":"          \
	"[\"v1\"],\"operations\":[\"CREATE\"],\"resources\":[\"pods\"]}]},\"validations\":[{"      \
	"\"expression\":\"has(object.metadata.labels) && \\u0027team\\u0027 in "                   \
	"object.metadata.labels\"}]}}"

/*
 * A ValidatingAdmissionPolicy: reported with its source when its kinds are
 * served; a kind that is not served (apps/v1 absent) is skipped quietly.
 */
static void test_vap_and_not_served(void **state)
{
	struct vpol_policy *vap = vcompile(VAP);
	char *t = vp_text("ValidatingPolicy", "vp-deploy", NULL, NULL);
	struct vpol_policy *vp;
	const struct vpol_policy *pols[2];
	struct fake f = {0};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct vpscan_plan *plan;
	struct view_state *st = view_state_new(NULL, NULL, NULL);
	struct report_set *rs = report_set_new(NULL);
	struct vpscan_stats s = {0};
	struct gv_err err = {0};
	json_t *objs;
	char *p;

	(void)state;
	/* a policy on a resource the server does not serve */
	p = strstr(t, "\"pods\"");
	memcpy(p, "\"podz\"", 6);
	vp = vcompile(t);
	pols[0] = vap;
	pols[1] = vp;
	assert_string_equal(vpscan_source(vap), REPORT_SOURCE_VAP);
	plan = vpscan_plan_new(c, pols, 2);
	{
		struct vpscan_args a = {.client = c,
					.state = st,
					.ns = "team-a",
					.self = "gavel",
					.due = pols,
					.ndue = 2,
					.rs = rs};
		assert_int_equal(vpscan_namespace(plan, &a, &s, &err), GV_OK);
	}
	assert_int_equal(f.lists, 1); /* pods only: podz is not served */
	assert_int_equal(s.evaluated, 2);
	objs = report_render_all(rs);
	assert_int_equal(json_array_size(json_object_get(json_array_get(objs, 0), "results")), 2);
	assert_string_equal(
	    json_string_value(json_object_get(
		json_array_get(json_object_get(json_array_get(objs, 0), "results"), 0), "source")),
	    REPORT_SOURCE_VAP);
	json_decref(objs);
	report_set_free(rs);
	view_state_unref(st);
	vpscan_plan_free(plan);
	kube_client_free(c);
	vpol_free(vap);
	vpol_free(vp);
	free(t);
}

/* The schedule fields do not change the fingerprint; the spec does. */
static void test_fingerprint(void **state)
{
	char *t1 = vp_text("ValidatingPolicy", "vp", NULL, NULL);
	char *t2 = vp_text("ValidatingPolicy", "vp", NULL,
			   "\"scanInterval\":\"3s\",\"scanSuspend\":true,");
	char *t3 = vp_text("ValidatingPolicy", "vp", NULL, "\"failurePolicy\":\"Ignore\",");
	struct vpol_policy *a = vcompile(t1), *b = vcompile(t2), *c = vcompile(t3);
	char *key = vpscan_state_key(a), *ref = vpscan_policy_ref(a);

	(void)state;
	assert_true(vpscan_fingerprint(a) == vpscan_fingerprint(b));
	assert_true(vpscan_fingerprint(a) != vpscan_fingerprint(c));
	assert_string_equal(key, "ValidatingPolicy.vp");
	assert_string_equal(ref, "vp");
	assert_true(vpscan_background(a));
	assert_false(vpscan_reads_outside(a));
	free(key);
	free(ref);
	vpol_free(a);
	vpol_free(b);
	vpol_free(c);
	free(t1);
	free(t2);
	free(t3);
}

/*
 * The BackgroundScan condition of a CEL policy goes into
 * status.conditionStatus.conditions beside Kyverno's, which stay; its
 * lastTransitionTime holds while its status does.
 */
static void test_status_cel(void **state)
{
	json_t *cur = J("{'conditionStatus': {'ready': true, 'conditions': [{'type': "
			"'WebhookConfigured', 'status': 'True'}, {'type': 'BackgroundScan', "
			"'status': 'True', 'reason': 'Scheduled', 'lastTransitionTime': "
			"'2026-01-01T00:00:00Z'}]}, 'autogen': {}}");
	struct policystatus_scan scan = {
	    .present = true, .when = RECONCILER_WAITING, .last = 1767225600, .next = 1767229200};
	json_t *st = policystatus_build_cel(cur, &scan, 1767230000);
	const json_t *conds = json_object_get(json_object_get(st, "conditionStatus"), "conditions");
	const json_t *bs = json_array_get(conds, 2);

	(void)state;
	assert_int_equal(json_array_size(conds), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(conds, 0), "type")),
			    "WebhookConfigured");
	assert_string_equal(json_string_value(json_object_get(json_array_get(conds, 0), "message")),
			    "Webhook configured.");
	assert_string_equal(json_string_value(json_object_get(json_array_get(conds, 1), "type")),
			    "RBACPermissionsGranted");
	assert_string_equal(json_string_value(json_object_get(json_array_get(conds, 1), "message")),
			    "Policy is ready for reporting.");
	assert_true(json_is_true(json_object_get(json_object_get(st, "conditionStatus"), "ready")));
	assert_string_equal(json_string_value(json_object_get(bs, "reason")), "Scheduled");
	assert_string_equal(json_string_value(json_object_get(bs, "lastTransitionTime")),
			    "2026-01-01T00:00:00Z");
	assert_non_null(json_object_get(st, "autogen"));
	json_decref(st);
	scan.when = RECONCILER_SUSPENDED;
	st = policystatus_build_cel(cur, &scan, 1767230000);
	bs = json_array_get(json_object_get(json_object_get(st, "conditionStatus"), "conditions"),
			    2);
	assert_string_equal(json_string_value(json_object_get(bs, "status")), "False");
	assert_string_equal(json_string_value(json_object_get(bs, "reason")), "Suspended");
	assert_string_not_equal(json_string_value(json_object_get(bs, "lastTransitionTime")),
				"2026-01-01T00:00:00Z");
	json_decref(st);
	/* no schedule of its own any more: the condition goes */
	scan.present = false;
	st = policystatus_build_cel(cur, &scan, 1767230000);
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(st, "conditionStatus"), "conditions")),
	    2);
	json_decref(st);
	/* a policy with no status yet gets Kyverno's two conditions */
	st = policystatus_build_cel(NULL, &scan, 1767230000);
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(st, "conditionStatus"), "conditions")),
	    2);
	json_decref(st);
	json_decref(cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prune_live),	   cmocka_unit_test(test_mixed_layouts),
	    cmocka_unit_test(test_scan_namespace), cmocka_unit_test(test_scan_disabled),
	    cmocka_unit_test(test_scan_libraries), cmocka_unit_test(test_vap_and_not_served),
	    cmocka_unit_test(test_fingerprint),	   cmocka_unit_test(test_status_cel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
