/*
 * Unit tests for background/report.c: names and chunk names, entries as
 * kyverno-semantics.md 8.6 describes them, summary, sorting, the changes
 * (replace, upsert, deletes, retain, prune), chunking, the merge after a
 * 409, plans (an unchanged report is not written), and the writer against
 * an in-memory fake API server: create, update, conflicts, a flush stopped
 * half-way loses no result, start-up load, layout switch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "background/report.h"
#include "admission/admission.h"
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

static const char *sget(const json_t *o, const char *path)
{
	/* "a.b.0.c": objects by key, arrays by index */
	char *copy = gv_xstrdup(path), *save = NULL;
	const json_t *v = o;

	for (char *t = strtok_r(copy, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
		v = json_is_array(v) ? json_array_get(v, strtoul(t, NULL, 10))
				     : json_object_get(v, t);
	free(copy);
	return json_string_value(v);
}

static long long iget(const json_t *o, const char *path)
{
	char *copy = gv_xstrdup(path), *save = NULL;
	const json_t *v = o;

	for (char *t = strtok_r(copy, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
		v = json_is_array(v) ? json_array_get(v, strtoul(t, NULL, 10))
				     : json_object_get(v, t);
	free(copy);
	return v ? (long long)json_integer_value(v) : -1;
}

static const json_t *jget(const json_t *o, const char *path)
{
	char *copy = gv_xstrdup(path), *save = NULL;
	const json_t *v = o;

	for (char *t = strtok_r(copy, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
		v = json_is_array(v) ? json_array_get(v, strtoul(t, NULL, 10))
				     : json_object_get(v, t);
	free(copy);
	return v;
}

static struct report_resource pod(const char *ns, const char *name, const char *uid)
{
	return (struct report_resource){"v1", "Pod", ns, name, uid};
}

static struct report_entry ent(const char *policy, const char *rule, enum engine_status st,
			       const char *msg, int64_t ts)
{
	return (struct report_entry){.policy = policy,
				     .rule = rule,
				     .result = st,
				     .message = msg,
				     .scored = true,
				     .seconds = ts,
				     .process = REPORT_BACKGROUND_SCAN};
}

static void replace1(struct report_set *rs, const struct report_resource *r, const char *policy,
		     const struct report_entry *e, size_t n)
{
	struct gv_err err = {0};

	assert_int_equal(report_replace(rs, r, policy, e, n, &err), GV_OK);
}

/* Checks that summary equals the counts of results in every object. */
static void check_summaries(const json_t *objs)
{
	size_t i;
	const json_t *o;

	json_array_foreach(objs, i, o)
	{
		static const char *const st[] = {"pass", "fail", "warn", "error", "skip"};
		long long count[5] = {0};
		const json_t *r;
		size_t j;

		json_array_foreach(json_object_get(o, "results"), j, r) for (int k = 0; k < 5; k++)
		    count[k] += !strcmp(sget(r, "result"), st[k]);
		for (int k = 0; k < 5; k++) {
			char path[32];

			snprintf(path, sizeof(path), "summary.%s", st[k]);
			assert_int_equal(iget(o, path), count[k]);
		}
	}
}

static bool dns_subdomain(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && c != '-' && c != '.')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
		if (c == '.' && (s[i - 1] == '-' || s[i + 1] == '-' || s[i - 1] == '.'))
			return false;
	}
	return true;
}

/* ---- names ---- */

static void check_name(char *got, const char *want)
{
	assert_string_equal(got, want);
	free(got);
}

static void test_names(void **state)
{
	static const char *const bases[] = {
	    "polr-ns-x",	   "polr-ns-x-1",	    "polr-ns-x-p-0",
	    "clusterpolicyreport", "clusterpolicyreport-7", "polr-ns-a-b.c"};
	char *b;
	size_t idx;

	(void)state;
	check_name(report_base_name(false, "team-a", "p"), "polr-ns-team-a");
	check_name(report_base_name(false, "", "p"), "clusterpolicyreport");
	check_name(report_base_name(false, NULL, NULL), "clusterpolicyreport");
	check_name(report_base_name(true, "team-a", "p"), "polr-ns-team-a-p");
	check_name(report_base_name(true, "team-a", "team-a/p2"), "polr-ns-team-a-p2");
	check_name(report_base_name(true, "", "p"), "clusterpolicyreport-p");

	check_name(report_chunk_name("polr-ns-x", 0), "polr-ns-x");
	check_name(report_chunk_name("polr-ns-x", 1), "polr-ns-x-1");
	check_name(report_chunk_name("polr-ns-x", 12), "polr-ns-x-12");
	check_name(report_chunk_name("polr-ns-x-p-1", 0), "polr-ns-x-p-1-0");
	check_name(report_chunk_name("polr-ns-x-p-1", 2), "polr-ns-x-p-1-2");

	assert_true(report_parse_name("polr-ns-x-1", &b, &idx));
	assert_string_equal(b, "polr-ns-x");
	assert_int_equal(idx, 1);
	free(b);
	assert_true(report_parse_name("polr-ns-x-p-1-0", &b, &idx));
	assert_string_equal(b, "polr-ns-x-p-1");
	assert_int_equal(idx, 0);
	free(b);
	assert_false(report_parse_name("polr-ns-x-0", &b, &idx));
	assert_false(report_parse_name("polr-ns-x-01", &b, &idx));
	assert_true(report_parse_name("clusterpolicyreport", &b, &idx));
	assert_string_equal(b, "clusterpolicyreport");
	assert_int_equal(idx, 0);
	free(b);

	/* every chunk name maps back to its (base, index) */
	for (size_t i = 0; i < GV_ARRAY_LEN(bases); i++) {
		for (size_t k = 0; k < 13; k++) {
			char *name = report_chunk_name(bases[i], k);

			assert_true(report_parse_name(name, &b, &idx));
			assert_string_equal(b, bases[i]);
			assert_int_equal(idx, k);
			free(b);
			free(name);
		}
	}
}

static void test_long_names(void **state)
{
	char ns[64], pol[254], pol2[254];
	char *b1, *b2, *c, *l;

	(void)state;
	memset(ns, 'n', 63);
	ns[63] = '\0';
	memset(pol, 'p', 253);
	pol[253] = '\0';
	memcpy(pol2, pol, sizeof(pol));
	pol2[252] = 'q';
	pol[100] = '.';
	pol2[100] = '.';
	b1 = report_base_name(true, ns, pol);
	b2 = report_base_name(true, ns, pol2);
	assert_true(strlen(b1) <= REPORT_MAX_BASE);
	assert_string_not_equal(b1, b2); /* the hash tells them apart */
	c = report_chunk_name(b1, REPORT_MAX_CHUNKS - 1);
	assert_true(dns_subdomain(b1));
	assert_true(dns_subdomain(c));
	assert_true(strlen(c) <= 253);
	free(c);
	c = report_base_name(true, ns, pol);
	assert_string_equal(c, b1); /* deterministic */
	free(c);
	l = report_group_label(b1);
	assert_true(strlen(l) <= 63);
	assert_true(dns_subdomain(l));
	free(l);
	l = report_group_label("polr-ns-short");
	assert_string_equal(l, "polr-ns-short");
	free(l);
	free(b1);
	free(b2);
	c = report_path("team-a", "polr-ns-team-a");
	assert_string_equal(c, "/apis/wgpolicyk8s.io/v1alpha2/namespaces/team-a/policyreports/"
			       "polr-ns-team-a");
	free(c);
	c = report_path("", NULL);
	assert_string_equal(c, "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports");
	free(c);
}

/* ---- entries and rendering ---- */

static void test_entries(void **state)
{
	struct report_set *rs = report_set_new(NULL);
	struct report_resource p = pod("team-a", "web", "uid-web");
	struct report_resource nsobj = {"v1", "Namespace", NULL, "team-a", "uid-ns"};
	char msg[3000], cat[400];
	struct report_entry e[4];
	json_t *all;
	const json_t *o, *r;

	(void)state;
	for (size_t i = 0; i < sizeof(msg) - 1; i += 3)
		memcpy(msg + i, "\xc3\xa9x", 3); /* "éx" */
	msg[sizeof(msg) - 1] = '\0';
	memset(cat, 'c', sizeof(cat) - 1);
	cat[sizeof(cat) - 1] = '\0';
	e[0] = ent(NULL, "r-b", ENGINE_FAIL, "label team is required", 1767225600);
	e[0].severity = "high";
	e[0].category = "Best Practices";
	e[1] = ent(NULL, "r-a", ENGINE_PASS, "", 1767225600);
	e[1].severity = "bogus";
	e[1].nanos = 5;
	e[2] = ent(NULL, "r-c", ENGINE_ERROR, msg, 1767225601);
	e[2].category = cat;
	e[2].severity = "High"; /* Kyverno keeps the exact CRD values only */
	e[3] = ent(NULL, "r-d", ENGINE_SKIP, "skipped", 1767225601);
	e[3].scored = false;
	e[3].process = REPORT_ADMISSION_REVIEW;
	replace1(rs, &p, "require-labels", e, 4);
	replace1(rs, &nsobj, "ns-policy", e, 1);
	assert_int_equal(report_count(rs), 5);

	all = report_render_all(rs);
	assert_int_equal(json_array_size(all), 2);
	check_summaries(all);
	/* sorted by namespace: the cluster report first */
	o = json_array_get(all, 0);
	assert_string_equal(sget(o, "kind"), "ClusterPolicyReport");
	assert_string_equal(sget(o, "metadata.name"), "clusterpolicyreport");
	assert_null(jget(o, "metadata.namespace"));
	assert_null(jget(o, "results.0.resources.0.namespace"));
	assert_string_equal(sget(o, "results.0.resources.0.kind"), "Namespace");

	o = json_array_get(all, 1);
	assert_string_equal(sget(o, "apiVersion"), "wgpolicyk8s.io/v1alpha2");
	assert_string_equal(sget(o, "kind"), "PolicyReport");
	assert_string_equal(sget(o, "metadata.name"), "polr-ns-team-a");
	assert_string_equal(sget(o, "metadata.namespace"), "team-a");
	assert_string_equal(
	    json_string_value(json_object_get(jget(o, "metadata.labels"), REPORT_LABEL_MANAGED_BY)),
	    "gavel");
	assert_string_equal(
	    json_string_value(json_object_get(jget(o, "metadata.labels"), REPORT_LABEL_GROUP)),
	    "polr-ns-team-a");
	assert_string_equal(
	    json_string_value(json_object_get(jget(o, "metadata.labels"), REPORT_LABEL_CHUNK)),
	    "0");
	assert_string_equal(
	    json_string_value(json_object_get(jget(o, "metadata.labels"), REPORT_LABEL_LAYOUT)),
	    "namespace");
	assert_int_equal(iget(o, "summary.pass"), 1);
	assert_int_equal(iget(o, "summary.fail"), 1);
	assert_int_equal(iget(o, "summary.error"), 1);
	assert_int_equal(iget(o, "summary.skip"), 1);
	assert_int_equal(iget(o, "summary.warn"), 0);
	/* results sorted by rule within the object */
	assert_string_equal(sget(o, "results.0.rule"), "r-a");
	assert_string_equal(sget(o, "results.1.rule"), "r-b");
	assert_string_equal(sget(o, "results.2.rule"), "r-c");
	assert_string_equal(sget(o, "results.3.rule"), "r-d");
	r = jget(o, "results.1");
	assert_string_equal(sget(r, "source"), "gavel");
	assert_string_equal(sget(r, "policy"), "require-labels");
	assert_string_equal(sget(r, "result"), "fail");
	assert_string_equal(sget(r, "severity"), "high");
	assert_string_equal(sget(r, "category"), "Best Practices");
	assert_string_equal(sget(r, "message"), "label team is required");
	assert_true(json_is_true(jget(r, "scored")));
	assert_int_equal(iget(r, "timestamp.seconds"), 1767225600);
	assert_int_equal(iget(r, "timestamp.nanos"), 0);
	assert_string_equal(sget(r, "resources.0.apiVersion"), "v1");
	assert_string_equal(sget(r, "resources.0.kind"), "Pod");
	assert_string_equal(sget(r, "resources.0.namespace"), "team-a");
	assert_string_equal(sget(r, "resources.0.name"), "web");
	assert_string_equal(sget(r, "resources.0.uid"), "uid-web");
	assert_string_equal(sget(r, "properties.process"), "background scan");
	r = jget(o, "results.0");
	assert_null(jget(r, "severity")); /* not one of the CRD's values */
	assert_null(jget(r, "message"));
	assert_int_equal(iget(r, "timestamp.nanos"), 5);
	r = jget(o, "results.2");
	assert_true(strlen(sget(r, "message")) <= REPORT_MAX_MESSAGE);
	assert_true(strlen(sget(r, "message")) >= REPORT_MAX_MESSAGE - 6);
	assert_non_null(strstr(sget(r, "message"), "..."));
	assert_true(strlen(sget(r, "category")) <= REPORT_MAX_CATEGORY);
	assert_null(jget(r, "severity"));
	r = jget(o, "results.3");
	assert_true(json_is_false(jget(r, "scored")));
	assert_string_equal(sget(r, "properties.process"), "admission review");
	json_decref(all);
	report_set_free(rs);
}

static const char POL_SCORED[] =
    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'require-team',"
    "'annotations':{'policies.kyverno.io/severity':'medium','policies.kyverno.io/category':"
    "'Best Practices'}},'spec':{'validationFailureAction':'Audit','background':true,'rules':[{"
    "'name':'check-team','match':{'any':[{'resources':{'kinds':['Pod']}}]},'validate':{"
    "'message':'label team is required','pattern':{'metadata':{'labels':{'team':'?*'}}}}}]}}";
static const char POL_UNSCORED[] =
    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'soft',"
    "'annotations':{'policies.kyverno.io/scored':'false','policies.kyverno.io/severity':"
    "'Medium'}},'spec':{'validationFailureAction':"
    "'Audit','rules':[{'name':'r','match':{'any':[{'resources':{'kinds':['Pod']}}]},'validate':{"
    "'message':'m','pattern':{'metadata':{'labels':{'x':'?*'}}}}}]}}";
static const char POL_NAMESPACED[] =
    "{'apiVersion':'kyverno.io/v1','kind':'Policy','metadata':{'name':'local','namespace':"
    "'team-a'},'spec':{'validationFailureAction':'Audit','rules':[{'name':'r1','match':{'any':"
    "[{'resources':{'kinds':['Pod']}}]},'validate':{'message':'m','pattern':{'metadata':{"
    "'labels':{'y':'?*'}}}}},{'name':'r2','match':{'any':[{'resources':{'kinds':['Pod']}}]},"
    "'validate':{'message':'m','pattern':{'metadata':{'labels':{'z':'?*'}}}}}]}}";
static const char POL_NOBG[] =
    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'nobg'},'spec':{"
    "'validationFailureAction':'Audit','background':false,'rules':[{'name':'r','match':{'any':["
    "{'resources':{'kinds':['Pod']}}]},'validate':{'message':'m','pattern':{'metadata':{"
    "'labels':{'x':'?*'}}}}}]}}";

static void test_engine_entries(void **state)
{
	struct engine_policy *scored = compile(POL_SCORED), *unscored = compile(POL_UNSCORED);
	struct engine_policy *local = compile(POL_NAMESPACED);
	struct report_set *rs = report_set_new(NULL);
	struct report_resource p = pod("team-a", "web", "uid-web");
	static char check_team[] = "check-team", team_msg[] = "label team is required";
	static char r[] = "r", m[] = "m", r1[] = "r1", r2[] = "r2", ok[] = "ok", no[] = "no";
	struct engine_rule_result rr = {
	    .rule = check_team, .status = ENGINE_FAIL, .message = team_msg, .action = ENGINE_AUDIT};
	struct engine_rule_result ru = {.rule = r, .status = ENGINE_FAIL, .message = m};
	struct engine_rule_result rl[2] = {{.rule = r1, .status = ENGINE_PASS, .message = ok},
					   {.rule = r2, .status = ENGINE_FAIL, .message = no}};
	struct engine_response resp;
	struct gv_err err = {0};
	char *ref;
	json_t *all;
	const json_t *res;

	(void)state;
	ref = report_policy_ref(local);
	assert_string_equal(ref, "team-a/local");
	free(ref);
	assert_false(report_policy_scored(unscored));
	assert_int_equal(report_status(unscored, ENGINE_FAIL), ENGINE_WARN);
	assert_int_equal(report_status(scored, ENGINE_FAIL), ENGINE_FAIL);

	resp = (struct engine_response){scored, &rr, 1};
	assert_int_equal(report_put_response(rs, &p, &resp, ENGINE_BACKGROUND, 100, 7, &err),
			 GV_OK);
	resp = (struct engine_response){unscored, &ru, 1};
	assert_int_equal(report_put_response(rs, &p, &resp, ENGINE_BACKGROUND, 100, 7, &err),
			 GV_OK);
	resp = (struct engine_response){local, rl, 2};
	assert_int_equal(report_put_response(rs, &p, &resp, ENGINE_ADMISSION, 100, 7, &err), GV_OK);
	all = report_render_all(rs);
	res = jget(json_array_get(all, 0), "results");
	assert_int_equal(json_array_size(res), 4);
	/* sorted by policy: require-team, soft, team-a/local x2 */
	assert_string_equal(sget(res, "0.policy"), "require-team");
	assert_string_equal(sget(res, "0.severity"), "medium");
	assert_string_equal(sget(res, "0.category"), "Best Practices");
	assert_string_equal(sget(res, "0.result"), "fail");
	assert_string_equal(sget(res, "0.properties.process"), "background scan");
	assert_int_equal(iget(res, "0.timestamp.nanos"), 7);
	assert_string_equal(sget(res, "1.policy"), "soft");
	assert_string_equal(sget(res, "1.result"), "warn");
	assert_null(jget(res, "1.severity")); /* 'Medium': not a CRD value, left out */
	assert_true(json_is_false(jget(res, "1.scored")));
	assert_string_equal(sget(res, "2.policy"), "team-a/local");
	assert_string_equal(sget(res, "2.rule"), "r1");
	assert_string_equal(sget(res, "2.properties.process"), "admission review");
	assert_string_equal(sget(res, "3.result"), "fail");
	assert_int_equal(iget(json_array_get(all, 0), "summary.warn"), 1);
	json_decref(all);

	/* an admission item */
	{
		static char v1[] = "v1", kind[] = "Pod", ns[] = "team-a", web[] = "web",
			    uid[] = "uid-web";
		json_t *rp = J("{'objName':'web','operation':'CREATE'}");
		struct view_audit_result ar = {.policy = scored,
					       .rule = check_team,
					       .status = ENGINE_PASS,
					       .message = ok,
					       .properties = rp};
		struct view_audit_item it = {.api_version = v1,
					     .kind = kind,
					     .namespace = ns,
					     .name = web,
					     .uid = uid,
					     .timestamp = 200,
					     .results = &ar,
					     .nresults = 1};

		assert_int_equal(report_put_admission(rs, &it, &err), GV_OK);
		all = report_render_all(rs);
		res = jget(json_array_get(all, 0), "results");
		assert_string_equal(sget(res, "0.result"), "pass");
		assert_string_equal(sget(res, "0.properties.process"), "admission review");
		/* the rule's reportProperties */
		assert_string_equal(sget(res, "0.properties.objName"), "web");
		assert_string_equal(sget(res, "0.properties.operation"), "CREATE");
		assert_int_equal(iget(res, "0.timestamp.seconds"), 200);
		json_decref(all);
		json_decref(rp);
	}
	/* a missing uid is refused */
	{
		struct report_resource nouid = pod("team-a", "x", NULL);
		struct gv_err e2 = {0};
		json_t *obj = J("{'kind':'Pod','metadata':{'name':'x'}}");
		struct report_resource res2;

		assert_int_equal(report_replace(rs, &nouid, "p", NULL, 0, &e2), GV_EINVAL);
		assert_int_equal(report_resource_from_object(obj, &res2, NULL), GV_EINVAL);
		json_decref(obj);
	}
	report_set_free(rs);
	engine_policy_unref(scored);
	engine_policy_unref(unscored);
	engine_policy_unref(local);
}

/* ---- changes ---- */

static void test_replace_and_timestamps(void **state)
{
	struct report_set *rs = report_set_new(NULL);
	struct report_resource a = pod("ns1", "a", "uid-a");
	struct report_entry e1[2] = {ent(NULL, "r1", ENGINE_PASS, "ok", 10),
				     ent(NULL, "r2", ENGINE_FAIL, "bad", 10)};
	struct report_entry e2[2] = {ent(NULL, "r1", ENGINE_PASS, "ok", 20),
				     ent(NULL, "r3", ENGINE_FAIL, "new", 20)};
	struct report_entry other = ent(NULL, "x", ENGINE_PASS, "", 10);
	json_t *all, *cur;
	struct report_op *ops;
	size_t n;
	struct gv_err err = {0};

	(void)state;
	replace1(rs, &a, "p1", e1, 2);
	replace1(rs, &a, "p2", &other, 1);
	/* the cluster now holds exactly this */
	all = report_render_all(rs);
	assert_int_equal(report_merge(rs, "ns1", "polr-ns-ns1", all, &cur, &err), GV_OK);
	json_decref(cur);
	assert_int_equal(report_plan(rs, "ns1", "polr-ns-ns1", &ops, &n, &err), GV_OK);
	assert_int_equal(n, 0); /* in sync: nothing to write */

	/* a rescan with the same results and a later timestamp changes nothing */
	e1[0].seconds = e1[1].seconds = 99;
	replace1(rs, &a, "p1", e1, 2);
	assert_int_equal(report_plan(rs, "ns1", "polr-ns-ns1", &ops, &n, &err), GV_OK);
	assert_int_equal(n, 0);
	json_decref(all);

	/* a scan with other results replaces p1's results only; unchanged r1 keeps its time */
	replace1(rs, &a, "p1", e2, 2);
	all = report_render_all(rs);
	assert_int_equal(json_array_size(jget(json_array_get(all, 0), "results")), 3);
	assert_string_equal(sget(all, "0.results.0.rule"), "r1");
	assert_int_equal(iget(all, "0.results.0.timestamp.seconds"), 10);
	assert_string_equal(sget(all, "0.results.1.rule"), "r3");
	assert_int_equal(iget(all, "0.results.1.timestamp.seconds"), 20);
	assert_string_equal(sget(all, "0.results.2.policy"), "p2");
	json_decref(all);
	assert_int_equal(report_plan(rs, "ns1", "polr-ns-ns1", &ops, &n, &err), GV_OK);
	assert_int_equal(n, 1);
	assert_int_equal(ops[0].kind, REPORT_OP_UPDATE);
	report_ops_free(ops, n);

	/* replace with nothing removes p1's results */
	replace1(rs, &a, "p1", NULL, 0);
	assert_int_equal(report_count(rs), 1);
	/* upsert keeps the other rules */
	{
		struct report_entry u = ent("p2", "y", ENGINE_SKIP, "", 30);

		assert_int_equal(report_upsert(rs, &a, &u, 1, &err), GV_OK);
		u.rule = "x";
		u.result = ENGINE_FAIL;
		assert_int_equal(report_upsert(rs, &a, &u, 1, &err), GV_OK);
		assert_int_equal(report_count(rs), 2);
		all = report_render_all(rs);
		assert_string_equal(sget(all, "0.results.0.result"), "fail");
		assert_string_equal(sget(all, "0.results.1.result"), "skip");
		json_decref(all);
	}
	report_set_free(rs);
}

static void test_deletes_and_prune(void **state)
{
	struct engine_policy *scored = compile(POL_SCORED), *local = compile(POL_NAMESPACED);
	struct engine_policy *nobg = compile(POL_NOBG);
	struct engine_policy *pols[3] = {scored, local, nobg};
	struct engine_policyset *set;
	struct report_set *rs = report_set_new(NULL);
	struct report_resource a = pod("team-a", "a", "uid-a"), b = pod("team-a", "b", "uid-b");
	struct report_resource c = pod("team-b", "c", "uid-c");
	struct report_entry ek = ent(NULL, "check-team", ENGINE_PASS, "", 1);
	struct report_entry el[3] = {ent(NULL, "r1", ENGINE_PASS, "", 1),
				     ent(NULL, "r2", ENGINE_PASS, "", 1),
				     ent(NULL, "gone-rule", ENGINE_PASS, "", 1)};
	struct report_entry en[2] = {ent(NULL, "r", ENGINE_FAIL, "", 1),
				     ent(NULL, "r", ENGINE_FAIL, "", 1)};
	struct report_entry eo = ent(NULL, "r", ENGINE_PASS, "", 1);
	const char *keep[] = {"uid-b", "uid-c"};

	(void)state;
	en[1].process = REPORT_ADMISSION_REVIEW;
	for (int i = 0; i < 3; i++) {
		struct report_resource *r = i == 0 ? &a : i == 1 ? &b : &c;

		replace1(rs, r, "require-team", &ek, 1);
		replace1(rs, r, "deleted-policy", &eo, 1);
	}
	replace1(rs, &a, "team-a/local", el, 3);
	replace1(rs, &a, "nobg", &en[0], 1);
	{
		struct gv_err err = {0};

		assert_int_equal(
		    report_upsert(rs, &b,
				  (struct report_entry[]){{.policy = "nobg",
							   .rule = "r",
							   .result = ENGINE_FAIL,
							   .process = REPORT_ADMISSION_REVIEW}},
				  1, &err),
		    GV_OK);
	}
	assert_int_equal(report_count(rs), 11);

	set = engine_policyset_new(pols, 3, NULL, 0);
	/* deleted-policy x3, gone-rule, nobg's background result on a */
	assert_int_equal(report_prune(rs, set), 5);
	assert_int_equal(report_count(rs), 6);
	assert_int_equal(report_prune(rs, set), 0);

	report_delete_rule(rs, "team-a/local", "r2");
	assert_int_equal(report_count(rs), 5);
	report_delete_background(rs, "nobg"); /* only the admission result on b is left: stays */
	assert_int_equal(report_count(rs), 5);
	report_delete_object(rs, "team-b", "uid-a"); /* wrong namespace: nothing */
	assert_int_equal(report_count(rs), 5);
	report_delete_object(rs, "team-a", "uid-a"); /* require-team + local r1 */
	assert_int_equal(report_count(rs), 3);
	report_retain(rs, "require-team", keep, 1); /* uid-c's result goes */
	assert_int_equal(report_count(rs), 2);
	report_delete_policy(rs, "nobg");
	assert_int_equal(report_count(rs), 1);
	report_delete_object(rs, NULL, "uid-b");
	assert_int_equal(report_count(rs), 0);
	(void)keep[1];

	engine_policyset_unref(set);
	report_set_free(rs);
	engine_policy_unref(scored);
	engine_policy_unref(local);
	engine_policy_unref(nobg);
}

/* Insertion order does not matter: rendering is sorted. */
static void test_deterministic(void **state)
{
	struct report_set *r1 = report_set_new(NULL), *r2 = report_set_new(NULL);
	static const char *const names[] = {"zeta", "alpha", "mid", "beta"};
	json_t *a, *b;

	(void)state;
	for (int i = 0; i < 4; i++) {
		char uid[16];
		struct report_resource r;
		struct report_entry e[2] = {ent(NULL, "b", ENGINE_PASS, "", 1),
					    ent(NULL, "a", ENGINE_FAIL, "", 1)};

		snprintf(uid, sizeof(uid), "u%d", i);
		r = pod("n", names[i], uid);
		replace1(r1, &r, "p", e, 2);
		snprintf(uid, sizeof(uid), "u%d", 3 - i);
		r = pod("n", names[3 - i], uid);
		replace1(r2, &r, "p", &e[1], 1);
		replace1(r2, &r, "q", &e[0], 1);
		replace1(r2, &r, "p", e, 2);
		replace1(r2, &r, "q", NULL, 0);
	}
	a = report_render_all(r1);
	b = report_render_all(r2);
	assert_true(json_equal(a, b));
	assert_string_equal(sget(a, "0.results.0.resources.0.name"), "alpha");
	assert_string_equal(sget(a, "0.results.0.rule"), "a");
	assert_string_equal(sget(a, "0.results.7.resources.0.name"), "zeta");
	json_decref(a);
	json_decref(b);
	report_set_free(r1);
	report_set_free(r2);
}

/* ---- chunks ---- */

static void add_pods(struct report_set *rs, const char *ns, int from, int to, const char *policy,
		     enum engine_status st)
{
	for (int i = from; i < to; i++) {
		char name[32], uid[32];
		struct report_resource r;
		struct report_entry e = ent(NULL, "rule", st, "message", 1);

		snprintf(name, sizeof(name), "pod-%03d", i);
		snprintf(uid, sizeof(uid), "uid-%s-%03d", ns, i);
		r = pod(ns, name, uid);
		replace1(rs, &r, policy, &e, 1);
	}
}

static void test_chunks(void **state)
{
	struct report_options opt = {.chunk_results = 3};
	struct report_set *rs = report_set_new(&opt);
	struct report_op *ops;
	json_t *all, *cur;
	size_t n;
	struct gv_err err = {0};

	(void)state;
	add_pods(rs, "x", 0, 7, "p", ENGINE_PASS);
	add_pods(rs, "x", 7, 8, "p", ENGINE_FAIL);
	all = report_render_all(rs);
	assert_int_equal(json_array_size(all), 3);
	check_summaries(all);
	assert_string_equal(sget(all, "0.metadata.name"), "polr-ns-x");
	assert_string_equal(sget(all, "1.metadata.name"), "polr-ns-x-1");
	assert_string_equal(sget(all, "2.metadata.name"), "polr-ns-x-2");
	for (int i = 0; i < 3; i++) {
		const json_t *labels = jget(json_array_get(all, (size_t)i), "metadata.labels");
		char idx[4];

		snprintf(idx, sizeof(idx), "%d", i);
		assert_string_equal(json_string_value(json_object_get(labels, REPORT_LABEL_GROUP)),
				    "polr-ns-x");
		assert_string_equal(json_string_value(json_object_get(labels, REPORT_LABEL_CHUNK)),
				    idx);
	}
	assert_int_equal(json_array_size(jget(all, "2.results")), 2);
	assert_int_equal(iget(all, "2.summary.fail"), 1);
	assert_int_equal(iget(all, "2.summary.pass"), 1);

	/* in sync, then the group shrinks: the third object is deleted */
	assert_int_equal(report_merge(rs, "x", "polr-ns-x", all, &cur, &err), GV_OK);
	json_decref(cur);
	json_decref(all);
	report_delete_object(rs, "x", "uid-x-007");
	report_delete_object(rs, "x", "uid-x-006");
	assert_int_equal(report_plan(rs, "x", "polr-ns-x", &ops, &n, &err), GV_OK);
	assert_int_equal(n, 1);
	assert_int_equal(ops[0].kind, REPORT_OP_DELETE);
	assert_string_equal(ops[0].name, "polr-ns-x-2");
	report_ops_free(ops, n);
	/* a new last pod changes the last object only */
	add_pods(rs, "x", 100, 101, "p", ENGINE_PASS);
	assert_int_equal(report_plan(rs, "x", "polr-ns-x", &ops, &n, &err), GV_OK);
	assert_int_equal(n, 1);
	assert_int_equal(ops[0].kind, REPORT_OP_UPDATE);
	assert_string_equal(ops[0].name, "polr-ns-x-2");
	assert_int_equal(json_array_size(jget(ops[0].body, "results")), 1);
	report_ops_free(ops, n);
	/* a new first pod shifts every later object */
	{
		struct report_resource r = pod("x", "aaa", "uid-aaa");
		struct report_entry e = ent(NULL, "rule", ENGINE_PASS, "", 1);

		replace1(rs, &r, "p", &e, 1);
	}
	assert_int_equal(report_plan(rs, "x", "polr-ns-x", &ops, &n, &err), GV_OK);
	assert_int_equal(n, 3);
	assert_int_equal(ops[0].kind, REPORT_OP_UPDATE);
	assert_int_equal(ops[1].kind, REPORT_OP_UPDATE);
	assert_int_equal(ops[2].kind, REPORT_OP_UPDATE);
	report_ops_free(ops, n);
	report_set_free(rs);

	/* by size: long messages make smaller chunks */
	opt = (struct report_options){.chunk_bytes = 4096};
	rs = report_set_new(&opt);
	for (int i = 0; i < 20; i++) {
		char name[32], uid[32], msg[1000];
		struct report_resource r;
		struct report_entry e;

		memset(msg, 'm', sizeof(msg) - 1);
		msg[sizeof(msg) - 1] = '\0';
		e = ent(NULL, "rule", ENGINE_FAIL, msg, 1);
		snprintf(name, sizeof(name), "pod-%03d", i);
		snprintf(uid, sizeof(uid), "uid-%03d", i);
		r = pod("y", name, uid);
		replace1(rs, &r, "p", &e, 1);
	}
	all = report_render_all(rs);
	assert_true(json_array_size(all) >= 5);
	check_summaries(all);
	for (size_t i = 0; i < json_array_size(all); i++) {
		char *s =
		    json_dumps(json_object_get(json_array_get(all, i), "results"), JSON_COMPACT);

		assert_true(strlen(s) <= 4096 + 64);
		free(s);
	}
	json_decref(all);
	report_set_free(rs);
}

/* ---- merge after a conflict ---- */

static void test_merge(void **state)
{
	struct report_set *rs = report_set_new(NULL);
	struct report_resource a = pod("ns1", "a", "uid-a"), b = pod("ns1", "b", "uid-b");
	struct report_entry e = ent(NULL, "r", ENGINE_PASS, "", 10);
	json_t *synced, *cluster, *desired, *extra;
	struct gv_err err = {0};
	const json_t *res;

	(void)state;
	replace1(rs, &a, "p", &e, 1);
	replace1(rs, &b, "p", &e, 1);
	synced = report_render_all(rs);
	json_object_set_new((json_t *)jget(synced, "0.metadata"), "resourceVersion",
			    json_string("5"));
	assert_int_equal(report_merge(rs, "ns1", "polr-ns-ns1", synced, &desired, &err), GV_OK);
	json_decref(desired);

	/* our changes: a fails now, b was deleted */
	e.result = ENGINE_FAIL;
	e.seconds = 20;
	replace1(rs, &a, "p", &e, 1);
	report_delete_object(rs, "ns1", "uid-b");

	/* meanwhile another writer added a result for c (and the object moved to rv 6) */
	cluster = json_deep_copy(synced);
	extra = J("{'source':'gavel','policy':'p','rule':'r','result':'warn','scored':true,"
		  "'timestamp':{'seconds':15,'nanos':0},'resources':[{'apiVersion':'v1','kind':"
		  "'Pod','namespace':'ns1','name':'c','uid':'uid-c'}],'properties':{'process':"
		  "'admission review'}}");
	json_array_append_new((json_t *)jget(cluster, "0.results"), extra);
	json_object_set_new((json_t *)jget(cluster, "0.metadata"), "resourceVersion",
			    json_string("6"));
	/* and the same results appear twice (a half-written chunk move) */
	{
		json_t *second = json_deep_copy(json_array_get(cluster, 0));

		json_object_set_new(json_object_get(second, "metadata"), "name",
				    json_string("polr-ns-ns1-1"));
		json_array_append_new(cluster, second);
	}
	assert_int_equal(report_merge(rs, "ns1", "polr-ns-ns1", cluster, &desired, &err), GV_OK);
	assert_int_equal(json_array_size(desired), 1);
	check_summaries(desired);
	assert_string_equal(sget(desired, "0.metadata.resourceVersion"), "6");
	res = jget(desired, "0.results");
	assert_int_equal(json_array_size(res), 2); /* a (ours, fail) and c (theirs); b gone */
	assert_string_equal(sget(res, "0.resources.0.name"), "a");
	assert_string_equal(sget(res, "0.result"), "fail");
	assert_string_equal(sget(res, "1.resources.0.name"), "c");
	assert_string_equal(sget(res, "1.result"), "warn");
	assert_null(jget(res, "1.severity")); /* 'Medium': not a CRD value, left out */
	json_decref(desired);
	/* merging the same read again gives the same objects (no duplicates) */
	assert_int_equal(report_merge(rs, "ns1", "polr-ns-ns1", cluster, &desired, &err), GV_OK);
	assert_int_equal(json_array_size(jget(desired, "0.results")), 2);
	json_decref(desired);
	{
		struct report_op *ops;
		size_t n;

		/* polr-ns-ns1 is updated, the stray polr-ns-ns1-1 deleted */
		assert_int_equal(report_plan(rs, "ns1", "polr-ns-ns1", &ops, &n, &err), GV_OK);
		assert_int_equal(n, 2);
		assert_int_equal(ops[0].kind, REPORT_OP_UPDATE);
		assert_string_equal(sget(ops[0].body, "metadata.resourceVersion"), "6");
		assert_int_equal(ops[1].kind, REPORT_OP_DELETE);
		assert_string_equal(ops[1].name, "polr-ns-ns1-1");
		assert_string_equal(sget(ops[1].body, "preconditions.resourceVersion"), "6");
		report_ops_free(ops, n);
	}
	json_decref(cluster);
	json_decref(synced);
	report_set_free(rs);
}

static void test_split_layout(void **state)
{
	struct report_options opt = {.split = true};
	struct report_set *rs = report_set_new(&opt);
	struct report_resource a = pod("team-a", "a", "uid-a");
	struct report_resource n = {"v1", "Namespace", "", "team-a", "uid-ns"};
	struct report_entry e = ent(NULL, "r", ENGINE_PASS, "", 1);
	json_t *all;

	(void)state;
	replace1(rs, &a, "p1", &e, 1);
	replace1(rs, &a, "p2-1", &e, 1);
	replace1(rs, &a, "team-a/local", &e, 1);
	replace1(rs, &n, "p1", &e, 1);
	all = report_render_all(rs);
	assert_int_equal(json_array_size(all), 4);
	assert_string_equal(sget(all, "0.metadata.name"), "clusterpolicyreport-p1");
	assert_string_equal(sget(all, "1.metadata.name"), "polr-ns-team-a-local");
	assert_string_equal(sget(all, "1.results.0.policy"), "team-a/local");
	assert_string_equal(sget(all, "2.metadata.name"), "polr-ns-team-a-p1");
	assert_string_equal(sget(all, "3.metadata.name"), "polr-ns-team-a-p2-1-0");
	assert_string_equal(
	    json_string_value(json_object_get(jget(all, "3.metadata.labels"), REPORT_LABEL_LAYOUT)),
	    "split");
	json_decref(all);
	report_delete_policy(rs, "p1");
	assert_int_equal(report_count(rs), 2);
	report_set_free(rs);
}

/* ---- the writer against a fake API server ---- */

struct fake {
	json_t *objs; /* "ns/name" -> object */
	long rv;
	int calls[4]; /* GET POST PUT DELETE */
	/* called before a write is served (a concurrent writer) */
	void (*hook)(struct fake *f, const char *method, const char *key);
	int hook_runs;
	long fail_http;		    /* answer the next write with this */
	int proceed_left;	    /* proceed_counted: answers true this many times */
	struct fake_api fa;	    /* fake_request behind ... */
	struct kube_client *client; /* ... this client's test transport */
};

static int method_index(const char *m)
{
	return !strcmp(m, "GET") ? 0 : !strcmp(m, "POST") ? 1 : !strcmp(m, "PUT") ? 2 : 3;
}

static char *unescape(const char *s, size_t n)
{
	char *out = gv_xmalloc(n + 1), *o = out;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n + 1) {
			char hex[3] = {s[i + 1], s[i + 2], 0};

			*o++ = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* The value of query parameter key, or NULL. Caller frees. */
static char *query(const char *path, const char *key)
{
	const char *q = strchr(path, '?');
	size_t kl = strlen(key);

	while (q) {
		q++;
		if (!strncmp(q, key, kl) && q[kl] == '=') {
			const char *v = q + kl + 1, *end = strchr(v, '&');

			return unescape(v, end ? (size_t)(end - v) : strlen(v));
		}
		q = strchr(q, '&');
	}
	return NULL;
}

static enum gv_code fake_status(struct kube_status *st, struct gv_err *err, long http,
				const char *reason, const char *msg)
{
	st->http = http;
	snprintf(st->reason, sizeof(st->reason), "%s", reason);
	snprintf(st->message, sizeof(st->message), "%s", msg);
	return gv_err_set(err, GV_ENET, "%ld %s: %s", http, reason, msg);
}

static void fake_store(struct fake *f, const char *key, json_t *obj)
{
	char rv[32];

	snprintf(rv, sizeof(rv), "%ld", ++f->rv);
	json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(rv));
	json_object_set_new(f->objs, key, obj);
}

static enum gv_code fake_request(void *ud, const char *method, const char *path, const json_t *body,
				 json_t **out, struct kube_status *st, struct gv_err *err)
{
	/* the API the writer was told to use, spelled out here (not taken from report.c) */
	bool orep = report_api_current() == REPORT_OPENREPORTS;
	const char *pre =
	    orep ? "/apis/openreports.io/v1alpha1/" : "/apis/wgpolicyk8s.io/v1alpha2/";
	const char *all_coll = orep ? "reports" : "policyreports";
	const char *cluster_coll = orep ? "clusterreports" : "clusterpolicyreports";
	struct fake *f = ud;
	char ns[128] = "", name[300] = "", coll[32] = "", key[512];
	const char *p = path + strlen(pre);
	size_t plen = strcspn(path, "?");
	char *rest = gv_xstrndup(p, plen - strlen(pre)), *seg2;
	bool all_ns = false;
	enum gv_code rc = GV_OK;
	json_t *cur;

	assert_true(!strncmp(path, pre, strlen(pre)));
	f->calls[method_index(method)]++;
	if (!strncmp(rest, "namespaces/", 11)) {
		char *slash = strchr(rest + 11, '/');

		snprintf(ns, sizeof(ns), "%.*s", (int)(slash - rest - 11), rest + 11);
		seg2 = slash + 1;
	} else {
		seg2 = rest;
		all_ns = !strcmp(rest, all_coll);
	}
	{
		char *slash = strchr(seg2, '/');

		snprintf(coll, sizeof(coll), "%.*s",
			 (int)(slash ? slash - seg2 : (long)strlen(seg2)), seg2);
		if (slash)
			snprintf(name, sizeof(name), "%s", slash + 1);
	}
	assert_string_equal(coll, *ns || all_ns ? all_coll : cluster_coll);
	if (strcmp(method, "GET") && f->hook)
		f->hook(f, method, name);
	if (strcmp(method, "GET") && f->fail_http) {
		long http = f->fail_http;

		f->fail_http = 0;
		free(rest);
		return fake_status(st, err, http, "InternalError", "injected");
	}
	if (!strcmp(method, "POST"))
		snprintf(name, sizeof(name), "%s", sget(body, "metadata.name"));
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	cur = json_object_get(f->objs, key);
	if (!strcmp(method, "GET") && !*name) {
		char *sel = query(path, "labelSelector"), *lim = query(path, "limit");
		char *cont = query(path, "continue");
		size_t skip = cont ? strtoul(cont, NULL, 10) : 0,
		       limit = lim ? strtoul(lim, 0, 10) : 0;
		size_t seen = 0;
		json_t *list = json_object(), *items = json_array();
		const char *k;
		json_t *o;

		json_object_foreach(f->objs, k, o)
		{
			const char *ons = sget(o, "metadata.namespace");
			bool cluster = !ons;
			char *eq = sel ? strchr(sel, '=') : NULL;

			if (!strcmp(coll, cluster_coll) != cluster)
				continue;
			if (!all_ns && !cluster && strcmp(ons, ns))
				continue;
			if (sel && !eq && !json_object_get(jget(o, "metadata.labels"), sel))
				continue; /* an existence selector */
			if (eq) {
				*eq = '\0';
				const char *lv = json_string_value(
				    json_object_get(jget(o, "metadata.labels"), sel));
				bool match = lv && !strcmp(lv, eq + 1);

				*eq = '=';
				if (!match)
					continue;
			}
			if (seen++ < skip)
				continue;
			if (limit && json_array_size(items) == limit) {
				char next[32];

				snprintf(next, sizeof(next), "%zu", skip + limit);
				json_object_set_new(list, "metadata",
						    json_pack("{ss}", "continue", next));
				break;
			}
			json_array_append_new(items, json_deep_copy(o));
		}
		json_object_set_new(list, "items", items);
		*out = list;
		free(sel);
		free(lim);
		free(cont);
	} else if (!strcmp(method, "GET")) {
		if (!cur)
			rc = fake_status(st, err, 404, "NotFound", "not found");
		else
			*out = json_deep_copy(cur);
	} else if (!strcmp(method, "POST")) {
		if (cur) {
			rc = fake_status(st, err, 409, "AlreadyExists", "already exists");
		} else {
			json_t *o = json_deep_copy(body);

			fake_store(f, key, o);
			*out = json_deep_copy(o);
		}
	} else if (!strcmp(method, "PUT")) {
		const char *rv = sget(body, "metadata.resourceVersion");

		if (!cur)
			rc = fake_status(st, err, 404, "NotFound", "not found");
		else if (!rv)
			rc = fake_status(st, err, 422, "Invalid",
					 "resourceVersion must be specified");
		else if (strcmp(rv, sget(cur, "metadata.resourceVersion")))
			rc = fake_status(st, err, 409, "Conflict", "the object has been modified");
		else {
			json_t *o = json_deep_copy(body);

			fake_store(f, key, o);
			*out = json_deep_copy(o);
		}
	} else {
		const char *rv = sget(body, "preconditions.resourceVersion");

		if (!cur)
			rc = fake_status(st, err, 404, "NotFound", "not found");
		else if (rv && strcmp(rv, sget(cur, "metadata.resourceVersion")))
			rc = fake_status(st, err, 409, "Conflict", "precondition failed");
		else
			json_object_del(f->objs, key);
	}
	free(rest);
	return rc;
}

static struct fake *fake_new(void)
{
	struct fake *f = gv_xcalloc(1, sizeof(*f));

	f->objs = json_object();
	f->fa = (struct fake_api){.request = fake_request, .ud = f};
	f->client = fake_api_client(&f->fa);
	return f;
}

static void fake_free(struct fake *f)
{
	kube_client_free(f->client);
	json_decref(f->objs);
	free(f);
}

static struct report_api fake_api(struct fake *f)
{
	return (struct report_api){.client = f->client, .ud = f};
}

static const json_t *fobj(struct fake *f, const char *key)
{
	return json_object_get(f->objs, key);
}

static void flush_ok(struct report_set *rs, struct fake *f, struct report_stats *st)
{
	struct report_api api = fake_api(f);
	struct gv_err err = {0};

	memset(st, 0, sizeof(*st));
	if (report_flush(rs, &api, st, &err))
		fail_msg("flush: %s", err.msg);
}

static void test_flush(void **state)
{
	struct report_options opt = {.chunk_results = 2};
	struct report_set *rs = report_set_new(&opt);
	struct fake *f = fake_new();
	struct report_stats st;

	(void)state;
	add_pods(rs, "x", 0, 5, "p", ENGINE_PASS);
	add_pods(rs, "", 0, 1, "p", ENGINE_FAIL); /* cluster-scoped "pods" for the test */
	flush_ok(rs, f, &st);
	/* unknown groups are read first (list + GET of chunk 0) */
	assert_int_equal(st.created, 4);
	assert_int_equal(st.updated + st.deleted + st.conflicts + st.failed, 0);
	assert_non_null(fobj(f, "x/polr-ns-x"));
	assert_non_null(fobj(f, "x/polr-ns-x-1"));
	assert_non_null(fobj(f, "x/polr-ns-x-2"));
	assert_non_null(fobj(f, "/clusterpolicyreport"));
	assert_int_equal(report_dirty_count(rs), 0);

	/* nothing changed: no write at all */
	memset(f->calls, 0, sizeof(f->calls));
	flush_ok(rs, f, &st);
	assert_int_equal(f->calls[1] + f->calls[2] + f->calls[3] + f->calls[0], 0);

	/* a rescan with equal results: still nothing */
	add_pods(rs, "x", 0, 5, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(f->calls[1] + f->calls[2] + f->calls[3], 0);

	/* shrink to 3 results: chunk 2 goes */
	report_delete_object(rs, "x", "uid-x-004");
	report_delete_object(rs, "x", "uid-x-003");
	flush_ok(rs, f, &st);
	assert_int_equal(st.deleted, 1);
	assert_int_equal(st.updated, 1);
	assert_int_equal(st.unchanged, 1);
	assert_null(fobj(f, "x/polr-ns-x-2"));

	/* everything gone: every object goes */
	report_delete_policy(rs, "p");
	flush_ok(rs, f, &st);
	assert_int_equal(st.deleted, 3);
	assert_int_equal(json_object_size(f->objs), 0);

	/* an API error leaves the group dirty for the next flush */
	add_pods(rs, "x", 0, 1, "p", ENGINE_PASS);
	f->fail_http = 500;
	{
		struct report_api api = fake_api(f);
		struct gv_err err = {0};

		memset(&st, 0, sizeof(st));
		assert_int_equal(report_flush(rs, &api, &st, &err), GV_ENET);
		assert_non_null(strstr(err.msg, "polr-ns-x"));
		assert_int_equal(st.failed, 1);
		assert_int_equal(report_dirty_count(rs), 1);
	}
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 1);
	fake_free(f);
	report_set_free(rs);
}

/* --reports-api openreports: the same reports, as openreports.io/v1alpha1 Report and
 * ClusterReport, at /apis/openreports.io/v1alpha1/... (the fake asserts the paths). */
static void test_openreports(void **state)
{
	struct report_set *rs = report_set_new(NULL), *rs2 = report_set_new(NULL);
	struct fake *f = fake_new();
	struct report_stats st;
	struct report_api api = fake_api(f);
	struct gv_err err = {0};
	enum report_api_kind k = REPORT_WGPOLICYK8S;
	const json_t *o;
	char *c;

	(void)state;
	assert_int_equal(report_api_parse("openreports", &k, &err), GV_OK);
	assert_int_equal(k, REPORT_OPENREPORTS);
	assert_int_equal(report_api_parse("wgpolicyk8s", &k, &err), GV_OK);
	assert_int_equal(k, REPORT_WGPOLICYK8S);
	assert_int_equal(report_api_parse("openreport", &k, &err), GV_EINVAL);
	assert_int_equal(report_api_parse(NULL, &k, &err), GV_EINVAL);
	assert_int_equal(k, REPORT_WGPOLICYK8S);

	report_use_api(REPORT_OPENREPORTS);
	c = report_path("team-a", "polr-ns-team-a");
	assert_string_equal(c, "/apis/openreports.io/v1alpha1/namespaces/team-a/reports/"
			       "polr-ns-team-a");
	free(c);
	c = report_path(NULL, NULL);
	assert_string_equal(c, "/apis/openreports.io/v1alpha1/clusterreports");
	free(c);
	c = report_path_all();
	assert_string_equal(c, "/apis/openreports.io/v1alpha1/reports");
	free(c);

	add_pods(rs, "x", 0, 2, "p", ENGINE_FAIL);
	add_pods(rs, "", 0, 1, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 2);
	o = fobj(f, "x/polr-ns-x");
	assert_non_null(o);
	assert_string_equal(sget(o, "apiVersion"), "openreports.io/v1alpha1");
	assert_string_equal(sget(o, "kind"), "Report");
	assert_int_equal(json_integer_value(jget(o, "summary.fail")), 2);
	o = fobj(f, "/clusterpolicyreport");
	assert_non_null(o);
	assert_string_equal(sget(o, "apiVersion"), "openreports.io/v1alpha1");
	assert_string_equal(sget(o, "kind"), "ClusterReport");

	/* a restart lists them back (namespaced across namespaces, and cluster) */
	memset(&st, 0, sizeof(st));
	assert_int_equal(report_load(rs2, &api, &st, &err), GV_OK);
	assert_int_equal(st.read, 2);
	/* and prunes them when the policy goes */
	report_delete_policy(rs2, "p");
	flush_ok(rs2, f, &st);
	assert_int_equal(st.deleted, 2);
	assert_int_equal(json_object_size(f->objs), 0);

	report_use_api(REPORT_WGPOLICYK8S);
	fake_free(f);
	report_set_free(rs);
	report_set_free(rs2);
}

/* A concurrent writer: before our write, it adds a result of its own to polr-ns-x. */
static void concurrent_add(struct fake *f, const char *method, const char *name)
{
	json_t *o = json_object_get(f->objs, "x/polr-ns-x"), *copy, *r;

	(void)method;
	(void)name;
	if (f->hook_runs++ || !o)
		return;
	copy = json_deep_copy(o);
	r = J("{'source':'gavel','policy':'p','rule':'rule','result':'fail','scored':true,"
	      "'timestamp':{'seconds':50,'nanos':0},'resources':[{'apiVersion':'v1','kind':'Pod',"
	      "'namespace':'x','name':'other','uid':'uid-other'}],'properties':{'process':"
	      "'admission review'}}");
	json_array_append_new(json_object_get(copy, "results"), r);
	fake_store(f, "x/polr-ns-x", copy);
}

static void test_flush_conflict(void **state)
{
	struct report_set *rs = report_set_new(NULL);
	struct fake *f = fake_new();
	struct report_stats st;
	const json_t *o;

	(void)state;
	add_pods(rs, "x", 0, 2, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 1);

	add_pods(rs, "x", 2, 3, "p", ENGINE_FAIL);
	f->hook = concurrent_add;
	flush_ok(rs, f, &st);
	assert_int_equal(st.conflicts, 1);
	assert_int_equal(st.updated, 1);
	o = fobj(f, "x/polr-ns-x");
	assert_int_equal(json_array_size(json_object_get(o, "results")), 4);
	assert_int_equal(iget(o, "summary.pass"), 2);
	assert_int_equal(iget(o, "summary.fail"), 2);
	/* the other writer's result is part of the model now */
	assert_int_equal(report_count(rs), 4);

	/* a POST that finds the name taken (AlreadyExists) merges too */
	{
		struct report_set *rs2 = report_set_new(NULL);
		struct report_api api = fake_api(f);
		struct gv_err err = {0};

		f->hook = NULL;
		/* rs2 believes it has read everything (an empty cluster) */
		{
			struct fake *empty = fake_new();
			struct report_api eapi = fake_api(empty);

			assert_int_equal(report_load(rs2, &eapi, NULL, &err), GV_OK);
			fake_free(empty);
		}
		add_pods(rs2, "x", 10, 11, "q", ENGINE_PASS);
		memset(&st, 0, sizeof(st));
		assert_int_equal(report_flush(rs2, &api, &st, &err), GV_OK);
		assert_int_equal(st.conflicts, 1);
		assert_int_equal(
		    json_array_size(json_object_get(fobj(f, "x/polr-ns-x"), "results")), 5);
		report_set_free(rs2);
	}
	fake_free(f);
	report_set_free(rs);
}

/* A writer that always wins: every write conflicts. */
static void always_conflict(struct fake *f, const char *method, const char *name)
{
	json_t *o = json_object_get(f->objs, "x/polr-ns-x");

	(void)method;
	(void)name;
	if (o)
		fake_store(f, "x/polr-ns-x", json_deep_copy(o));
}

static void test_flush_gives_up(void **state)
{
	struct report_set *rs = report_set_new(NULL);
	struct fake *f = fake_new();
	struct report_stats st;
	struct report_api api = fake_api(f);
	struct gv_err err = {0};

	(void)state;
	add_pods(rs, "x", 0, 1, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	add_pods(rs, "x", 1, 2, "p", ENGINE_PASS);
	f->hook = always_conflict;
	memset(&st, 0, sizeof(st));
	assert_int_equal(report_flush(rs, &api, &st, &err), GV_ENET);
	assert_int_equal(st.conflicts, REPORT_MAX_ATTEMPTS);
	assert_non_null(strstr(err.msg, "still conflicting"));
	assert_int_equal(report_dirty_count(rs), 1);
	f->hook = NULL;
	flush_ok(rs, f, &st);
	assert_int_equal(json_array_size(json_object_get(fobj(f, "x/polr-ns-x"), "results")), 2);
	fake_free(f);
	report_set_free(rs);
}

static bool stop_now(void *ud)
{
	(void)ud;
	return false;
}

static void test_flush_proceed(void **state)
{
	struct report_set *rs = report_set_new(NULL);
	struct fake *f = fake_new();
	struct report_api api = fake_api(f);
	struct gv_err err = {0};

	(void)state;
	add_pods(rs, "x", 0, 1, "p", ENGINE_PASS);
	api.proceed = stop_now;
	assert_int_equal(report_flush(rs, &api, NULL, &err), GV_OK);
	assert_int_equal(json_object_size(f->objs), 0);
	assert_int_equal(report_dirty_count(rs), 1);
	fake_free(f);
	report_set_free(rs);
}

static bool proceed_counted(void *ud)
{
	struct fake *f = ud;

	return f->proceed_left-- > 0;
}

/* Every result key ("uid policy rule") in the fake's objects, as a set. */
static json_t *fake_keys(struct fake *f)
{
	json_t *set = json_object(), *o;
	const char *k;

	json_object_foreach(f->objs, k, o)
	{
		const json_t *r;
		size_t i;

		json_array_foreach(json_object_get(o, "results"), i, r)
		{
			char key[256];

			snprintf(key, sizeof(key), "%s %s %s", sget(r, "resources.0.uid"),
				 sget(r, "policy"), sget(r, "rule"));
			json_object_set_new(set, key, json_true());
		}
	}
	return set;
}

/* Results in the fake's objects, duplicates included. */
static size_t fake_count(struct fake *f)
{
	const char *k;
	json_t *o;
	size_t n = 0;

	json_object_foreach(f->objs, k, o) n += json_array_size(json_object_get(o, "results"));
	return n;
}

/*
 * A flush stopped after any number of writes (the writer killed) leaves
 * every result that is in both the old and the new state somewhere in
 * the cluster: results moving up (added before them), down (removed
 * before them) and both in one flush.
 */
static void test_flush_stopped_loses_nothing(void **state)
{
	struct report_options opt = {.chunk_results = 10};
	struct report_api api;
	struct gv_err err = {0};

	(void)state;
	for (int scenario = 0; scenario < 3; scenario++) {
		for (int k = 0; k <= 10; k++) {
			struct report_set *rs = report_set_new(&opt), *rs2;
			struct fake *f = fake_new();
			struct report_stats st;
			json_t *before, *after, *v;
			const char *key;

			add_pods(rs, "x", 0, 40, "p", ENGINE_PASS);
			if (scenario > 0)
				add_pods(rs, "x", 0, 40, "q", ENGINE_FAIL);
			flush_ok(rs, f, &st);
			before = fake_keys(f);
			/* 0: q added for every pod (results move up), 1: pods 0-9 gone
			 * (down), 2: pods 0-9 gone and r added for pods 30-39 (both) */
			if (scenario == 0)
				add_pods(rs, "x", 0, 40, "q", ENGINE_FAIL);
			for (int i = 0; scenario > 0 && i < 10; i++) {
				char uid[32];

				snprintf(uid, sizeof(uid), "uid-x-%03d", i);
				report_delete_object(rs, "x", uid);
			}
			if (scenario == 2)
				add_pods(rs, "x", 30, 40, "r", ENGINE_PASS);
			api = fake_api(f);
			api.proceed = proceed_counted;
			f->proceed_left = 1 + k; /* the group, then k writes */
			assert_int_equal(report_flush(rs, &api, NULL, &err), GV_OK);
			after = fake_keys(f);
			json_object_foreach(before, key, v)
			{
				bool gone = scenario > 0 && strncmp(key, "uid-x-00", 8) == 0;

				if (!gone && !json_object_get(after, key))
					fail_msg("scenario %d, stopped after %d writes: %s lost",
						 scenario, k, key);
			}
			/* and a restarted writer repairs the duplicates */
			rs2 = report_set_new(&opt);
			api.proceed = NULL;
			assert_int_equal(report_load(rs2, &api, NULL, &err), GV_OK);
			flush_ok(rs2, f, &st);
			json_decref(after);
			after = fake_keys(f);
			assert_int_equal(fake_count(f), json_object_size(after));
			json_decref(before);
			json_decref(after);
			report_set_free(rs2);
			report_set_free(rs);
			fake_free(f);
		}
	}
}

/* Start-up: existing reports are taken over in place; the other layout's move and go. */
static void test_load_and_layout_switch(void **state)
{
	struct report_options split = {.split = true}, chunked = {.chunk_results = 2};
	struct report_set *rs = report_set_new(&chunked), *rs2;
	struct fake *f = fake_new();
	struct report_api api = fake_api(f);
	struct report_stats st;
	struct gv_err err = {0};
	json_t *foreign;

	(void)state;
	add_pods(rs, "x", 0, 3, "p", ENGINE_PASS);
	add_pods(rs, "x", 3, 4, "q", ENGINE_FAIL);
	add_pods(rs, "y", 0, 1, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(json_object_size(f->objs), 3);
	report_set_free(rs);
	/* a report labelled as gavel's with a name gavel does not make */
	foreign =
	    J("{'apiVersion':'wgpolicyk8s.io/v1alpha2','kind':'PolicyReport','metadata':{"
	      "'name':'odd-name','namespace':'y','labels':{'app.kubernetes.io/managed-by':"
	      "'gavel','gavel.dev/"
	      "report-layout':'namespace'}},'results':[{'policy':'p','rule':'rule','result':'skip',"
	      "'resources':[{'kind':'Pod','name':'z','uid':'uid-z','namespace':'y'}]}]}");
	fake_store(f, "y/odd-name", foreign);

	/* a restart with the same layout: nothing is rewritten except the foreign object */
	rs = report_set_new(&chunked);
	memset(&st, 0, sizeof(st));
	assert_int_equal(report_load(rs, &api, &st, &err), GV_OK);
	assert_int_equal(st.read, 4);
	assert_int_equal(report_count(rs), 6);
	memset(f->calls, 0, sizeof(f->calls));
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 0);
	assert_int_equal(st.deleted, 1); /* odd-name */
	assert_int_equal(st.updated, 1); /* polr-ns-y gets uid-z's result */
	assert_int_equal(json_object_size(f->objs), 3);
	assert_int_equal(json_array_size(json_object_get(fobj(f, "y/polr-ns-y"), "results")), 2);
	assert_null(fobj(f, "y/odd-name"));
	report_set_free(rs);

	/* switch to the split layout: results move, old objects are deleted */
	rs2 = report_set_new(&split);
	assert_int_equal(report_load(rs2, &api, NULL, &err), GV_OK);
	assert_int_equal(report_count(rs2), 6);
	flush_ok(rs2, f, &st);
	assert_null(fobj(f, "x/polr-ns-x"));
	assert_null(fobj(f, "x/polr-ns-x-1"));
	assert_null(fobj(f, "y/polr-ns-y"));
	assert_non_null(fobj(f, "x/polr-ns-x-p"));
	assert_non_null(fobj(f, "x/polr-ns-x-q"));
	assert_non_null(fobj(f, "y/polr-ns-y-p"));
	assert_int_equal(json_object_size(f->objs), 3);
	assert_int_equal(json_array_size(json_object_get(fobj(f, "x/polr-ns-x-p"), "results")), 3);
	assert_int_equal(iget(fobj(f, "x/polr-ns-x-q"), "summary.fail"), 1);
	report_set_free(rs2);

	/* and back */
	rs = report_set_new(NULL);
	assert_int_equal(report_load(rs, &api, NULL, &err), GV_OK);
	flush_ok(rs, f, &st);
	assert_int_equal(json_object_size(f->objs), 2);
	assert_int_equal(json_array_size(json_object_get(fobj(f, "x/polr-ns-x"), "results")), 4);
	report_set_free(rs);
	fake_free(f);
}

/* Load with pagination (50 per page) over many objects. */
static void test_load_pages(void **state)
{
	struct report_options split = {.split = true};
	struct report_set *rs = report_set_new(&split);
	struct fake *f = fake_new();
	struct report_api api = fake_api(f);
	struct report_stats st;
	struct gv_err err = {0};
	char pol[16];

	(void)state;
	for (int i = 0; i < 120; i++) {
		snprintf(pol, sizeof(pol), "p%03d", i);
		add_pods(rs, "x", 0, 1, pol, ENGINE_PASS);
	}
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 120);
	report_set_free(rs);
	rs = report_set_new(&split);
	memset(&st, 0, sizeof(st));
	memset(f->calls, 0, sizeof(f->calls));
	assert_int_equal(report_load(rs, &api, &st, &err), GV_OK);
	assert_int_equal(st.read, 120);
	assert_int_equal(f->calls[0], 4); /* 3 pages + the (empty) cluster list */
	assert_int_equal(report_count(rs), 120);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created + st.updated + st.deleted, 0);
	assert_int_equal(st.unchanged, 120);
	report_set_free(rs);
	fake_free(f);
}

/* report_retain_since: results newer than the scan's start stay, those of that very second go. */
static void test_retain_since(void **state)
{
	struct report_set *rs = report_set_new(NULL);
	static const char *const none[] = {"uid-x-009"};

	(void)state;
	add_pods(rs, "x", 0, 2, "p", ENGINE_PASS); /* timestamp 1 */
	report_retain_since(rs, "p", none, 1, 0);
	assert_int_equal(report_count(rs), 0);
	add_pods(rs, "x", 0, 2, "p", ENGINE_PASS);
	report_retain_since(rs, "p", none, 1, 1);
	assert_int_equal(report_count(rs), 0);
	add_pods(rs, "x", 0, 2, "p", ENGINE_PASS);
	report_retain_since(rs, "p", none, 1, -1);
	assert_int_equal(report_count(rs), 2);
	report_set_free(rs);
}

/* ---- the journal and scan digests ---- */

/* The calls of one scan of namespace x: pods 0..2 (pod 1 now fails), pod 3 without results. */
static void scan_calls(struct report_set *rs, int64_t ts, bool reverse)
{
	static const char *const uids[] = {"uid-x-000", "uid-x-001", "uid-x-002", "uid-x-003"};

	for (int k = 0; k < 4; k++) {
		int i = reverse ? 3 - k : k;
		char name[32];
		struct report_resource r;
		struct report_entry e =
		    ent(NULL, "rule", i == 1 ? ENGINE_FAIL : ENGINE_PASS, "message", ts);

		snprintf(name, sizeof(name), "pod-%03d", i);
		r = pod("x", name, uids[i]);
		replace1(rs, &r, "p", &e, i == 3 ? 0 : 1);
	}
	report_retain(rs, "p", uids, 4);
}

static void test_journal_replay(void **state)
{
	struct report_set *rs0 = report_set_new(NULL), *direct, *journal, *replayed;
	struct fake *f = fake_new();
	struct report_api api = fake_api(f);
	struct report_stats st;
	struct gv_err err = {0};
	json_t *a, *b;

	(void)state;
	/* the cluster: pods 0..4 pass p, and an admission result of another policy */
	add_pods(rs0, "x", 0, 5, "p", ENGINE_PASS);
	{
		struct report_resource r = pod("x", "pod-009", "uid-x-009");
		struct report_entry e = ent("adm", "check", ENGINE_FAIL, "no", 5);

		e.process = REPORT_ADMISSION_REVIEW;
		assert_int_equal(report_upsert(rs0, &r, &e, 1, &err), GV_OK);
	}
	flush_ok(rs0, f, &st);

	/* scanning into the loaded reports ... */
	direct = report_set_new(NULL);
	assert_int_equal(report_load(direct, &api, NULL, &err), GV_OK);
	scan_calls(direct, 7, false);
	a = report_render_all(direct);

	/* ... is what scanning into a journal and replaying it onto them gives */
	journal = report_set_new(&(struct report_options){.journal = true});
	scan_calls(journal, 7, false);
	assert_int_equal(report_count(journal), 3);
	replayed = report_set_new(NULL);
	assert_int_equal(report_load(replayed, &api, NULL, &err), GV_OK);
	report_replay(replayed, journal);
	b = report_render_all(replayed);
	assert_true(json_equal(a, b));
	/* pods 3 and 4 went, pod 1 fails, the admission result stayed */
	assert_int_equal(report_count(replayed), 4);
	assert_int_equal(iget(json_array_get(b, 0), "summary.fail"), 2);
	json_decref(a);
	json_decref(b);
	report_set_free(rs0);
	report_set_free(direct);
	report_set_free(journal);
	report_set_free(replayed);
	fake_free(f);
}

static char *digest_of(bool split, const char *salt, void (*more)(struct report_set *), int64_t ts,
		       bool reverse)
{
	struct report_set *rs =
	    report_set_new(&(struct report_options){.journal = true, .split = split});
	char *d;

	scan_calls(rs, ts, reverse);
	if (more)
		more(rs);
	d = report_journal_digest(rs, salt);
	report_set_free(rs);
	return d;
}

static void more_seen(struct report_set *rs)
{
	struct report_resource r = pod("x", "pod-005", "uid-x-005");

	replace1(rs, &r, "p", NULL, 0); /* one more object seen, with no result */
}

static void more_message(struct report_set *rs)
{
	struct report_resource r = pod("x", "pod-000", "uid-x-000");
	struct report_entry e = ent(NULL, "rule", ENGINE_PASS, "another message", 1);

	replace1(rs, &r, "p", &e, 1);
}

static void more_retain(struct report_set *rs)
{
	static const char *const uids[] = {"uid-x-000"};

	report_retain(rs, "p", uids, 1);
}

static void test_journal_digest(void **state)
{
	char *base = digest_of(false, "policies", NULL, 7, false);
	char *other[6];

	(void)state;
	assert_non_null(base);
	assert_int_equal(strlen(base), 7 + 64);
	assert_true(!strncmp(base, "sha256:", 7));
	/* neither the timestamps nor the order of the objects count */
	other[0] = digest_of(false, "policies", NULL, 99, true);
	assert_string_equal(base, other[0]);
	free(other[0]);
	/* everything a replay would do differently does */
	other[0] = digest_of(false, "policies", more_seen, 7, false);
	other[1] = digest_of(false, "policies", more_message, 7, false);
	other[2] = digest_of(false, "policies", more_retain, 7, false);
	other[3] = digest_of(false, "policies 2", NULL, 7, false);
	other[4] = digest_of(true, "policies", NULL, 7, false);
	other[5] = NULL;
	for (int i = 0; other[i]; i++) {
		assert_string_not_equal(base, other[i]);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(other[i], other[j]);
	}
	for (int i = 0; other[i]; i++)
		free(other[i]);
	/* a set without a journal has nothing to tell apart */
	{
		struct report_set *rs = report_set_new(NULL);
		char *d;

		scan_calls(rs, 7, false);
		d = report_journal_digest(rs, "policies");
		assert_string_not_equal(d, base);
		free(d);
		report_set_free(rs);
	}
	free(base);
}

/* The scan digest annotation of an object, "" when it has none. */
static const char *annotation(const json_t *o)
{
	const char *v = json_string_value(
	    json_object_get(jget(o, "metadata.annotations"), REPORT_ANNOTATION_SCAN_DIGEST));

	return v ? v : "";
}

/* The fake's objects as a list's items. */
static json_t *fake_items(struct fake *f)
{
	json_t *items = json_array(), *o;
	const char *k;

	json_object_foreach(f->objs, k, o) json_array_append(items, o);
	return items;
}

static void test_scan_digest(void **state)
{
	struct report_options chunked = {.chunk_results = 2};
	struct report_set *scan, *rs;
	struct fake *f = fake_new();
	struct report_api api = fake_api(f);
	struct report_stats st;
	struct gv_err err = {0};
	json_t *items, *copy, *o;
	char *d;
	size_t i;

	(void)state;
	scan = report_set_new(&(struct report_options){.journal = true, .chunk_results = 2});
	add_pods(scan, "x", 0, 5, "p", ENGINE_PASS);
	d = report_journal_digest(scan, "policies");

	/* no reports yet: not unchanged */
	items = fake_items(f);
	assert_false(report_scan_unchanged(scan, "x", items, d));
	json_decref(items);

	/* written with the digest: every object carries it */
	rs = report_set_new(&chunked);
	assert_int_equal(report_load(rs, &api, NULL, &err), GV_OK);
	report_replay(rs, scan);
	report_set_digest(rs, d);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 3);
	report_set_free(rs);
	items = fake_items(f);
	assert_int_equal(json_array_size(items), 3);
	json_array_foreach(items, i, o) assert_string_equal(annotation(o), d);
	assert_true(report_scan_unchanged(scan, "x", items, d));
	/* as report_list_metadata reads them: that namespace's objects */
	copy = NULL;
	assert_int_equal(report_list_metadata(&api, "x", &copy, &err), GV_OK);
	assert_int_equal(json_array_size(copy), 3);
	assert_true(report_scan_unchanged(scan, "x", copy, d));
	json_decref(copy);
	assert_int_equal(report_list_metadata(&api, "y", &copy, &err), GV_OK);
	assert_int_equal(json_array_size(copy), 0);
	json_decref(copy);
	/* another digest, none, another namespace */
	assert_false(report_scan_unchanged(scan, "x", items, "sha256:00"));
	assert_false(report_scan_unchanged(scan, "x", items, NULL));
	assert_false(report_scan_unchanged(scan, "y", items, d));

	/* one object without the annotation (the reconciler rewrote it) */
	copy = json_deep_copy(items);
	json_object_del((json_t *)jget(json_array_get(copy, 1), "metadata"), "annotations");
	assert_false(report_scan_unchanged(scan, "x", copy, d));
	json_decref(copy);
	/* a chunk missing (a writer stopped half way) */
	copy = json_deep_copy(items);
	json_array_foreach(copy, i, o) if (!strcmp(sget(o, "metadata.name"), "polr-ns-x-1"))
	{
		json_array_remove(copy, i);
		break;
	}
	assert_int_equal(json_array_size(copy), 2);
	assert_false(report_scan_unchanged(scan, "x", copy, d));
	json_decref(copy);
	/* changed by another field manager */
	copy = json_deep_copy(items);
	json_object_set_new((json_t *)jget(json_array_get(copy, 0), "metadata"), "managedFields",
			    J("[{\"manager\": \"gavel\"}, {\"manager\": \"kubectl-edit\"}]"));
	assert_false(report_scan_unchanged(scan, "x", copy, d));
	json_object_set_new((json_t *)jget(json_array_get(copy, 0), "metadata"), "managedFields",
			    J("[{\"manager\": \"gavel\"}]"));
	assert_true(report_scan_unchanged(scan, "x", copy, d));
	/* an object of the split layout next to them */
	o = json_deep_copy(json_array_get(copy, 0));
	json_object_set_new((json_t *)jget(o, "metadata"), "name", json_string("polr-ns-x-p"));
	json_array_append_new(copy, o);
	assert_false(report_scan_unchanged(scan, "x", copy, d));
	json_decref(copy);
	/* objects not gavel's do not count */
	copy = json_deep_copy(items);
	o = J("{\"metadata\": {\"name\": \"mine\", \"namespace\": \"x\"}}");
	json_array_append_new(copy, o);
	assert_true(report_scan_unchanged(scan, "x", copy, d));
	json_decref(copy);
	/* the scan has results and there are no objects */
	copy = json_array();
	assert_false(report_scan_unchanged(scan, "x", copy, d));
	json_decref(copy);
	json_decref(items);

	/* a writer without a digest leaves annotated objects with the same content alone */
	rs = report_set_new(&chunked);
	assert_int_equal(report_load(rs, &api, NULL, &err), GV_OK);
	add_pods(rs, "x", 0, 5, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created + st.updated + st.deleted, 0);
	/* and one with another digest writes it even though the results are the same */
	report_set_digest(rs, "sha256:other");
	report_replay(rs, scan);
	add_pods(rs, "x", 0, 1, "p", ENGINE_FAIL); /* dirty: the flush visits the group */
	add_pods(rs, "x", 0, 1, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(st.updated, 3);
	assert_string_equal(annotation(fobj(f, "x/polr-ns-x-2")), "sha256:other");
	report_set_free(rs);
	report_set_free(scan);
	free(d);
	fake_free(f);
}

/* The inputs annotation of an object, "" when it has none. */
static const char *stamp_of(const json_t *o)
{
	const char *v = json_string_value(
	    json_object_get(jget(o, "metadata.annotations"), REPORT_ANNOTATION_SCAN_INPUTS));

	return v ? v : "";
}

/* items without the object named name (new reference) */
static json_t *items_without(const json_t *items, const char *name)
{
	json_t *copy = json_deep_copy(items), *o;
	size_t i;

	json_array_foreach(copy, i, o) if (!strcmp(sget(o, "metadata.name"), name))
	{
		json_array_remove(copy, i);
		break;
	}
	return copy;
}

static void test_scan_inputs(void **state)
{
	static const char in[] = "context=sha256:aa; objects=sha256:bb";
	struct report_options chunked = {.chunk_results = 2};
	struct report_set *rs;
	struct fake *f = fake_new();
	struct report_api api = fake_api(f);
	struct report_stats st;
	struct gv_err err = {0};
	json_t *items, *copy, *o;
	size_t i, results;

	(void)state;
	/* no reports: nothing stamped */
	items = fake_items(f);
	assert_null(report_scan_inputs(items));
	assert_false(report_inputs_unchanged("x", items, in, NULL));
	json_decref(items);

	/* 5 results in chunks of 2: 3 objects, each stamped with the counts */
	rs = report_set_new(&chunked);
	assert_int_equal(report_load(rs, &api, NULL, &err), GV_OK);
	add_pods(rs, "x", 0, 5, "p", ENGINE_PASS);
	report_set_inputs(rs, in);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 3);
	assert_string_equal(stamp_of(fobj(f, "x/polr-ns-x")),
			    "context=sha256:aa; objects=sha256:bb; groups=1; chunks=3; results=2");
	assert_string_equal(stamp_of(fobj(f, "x/polr-ns-x-2")),
			    "context=sha256:aa; objects=sha256:bb; groups=1; chunks=3; results=1");
	/* the same content and stamp: nothing written; another stamp: written again */
	add_pods(rs, "x", 0, 1, "p", ENGINE_FAIL);
	add_pods(rs, "x", 0, 1, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created + st.updated + st.deleted, 0);
	report_set_inputs(rs, "context=sha256:cc; objects=sha256:bb");
	add_pods(rs, "x", 0, 1, "p", ENGINE_FAIL);
	add_pods(rs, "x", 0, 1, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(st.updated, 3);
	report_set_inputs(rs, in);
	add_pods(rs, "x", 0, 1, "p", ENGINE_FAIL);
	add_pods(rs, "x", 0, 1, "p", ENGINE_PASS);
	flush_ok(rs, f, &st);
	assert_int_equal(st.updated, 3);
	report_set_free(rs);

	assert_int_equal(report_list_metadata(&api, "x", &items, &err), GV_OK);
	assert_int_equal(json_array_size(items), 3);
	assert_non_null(report_scan_inputs(items));
	results = 0;
	assert_true(report_inputs_unchanged("x", items, in, &results));
	assert_int_equal(results, 5);
	/* other inputs, none, another namespace */
	assert_false(
	    report_inputs_unchanged("x", items, "context=sha256:aa; objects=sha256:b", NULL));
	assert_false(report_inputs_unchanged("x", items, NULL, NULL));
	assert_false(report_inputs_unchanged("y", items, in, NULL));
	/* the last chunk deleted, or a middle one: the counts tell */
	copy = items_without(items, "polr-ns-x-2");
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	copy = items_without(items, "polr-ns-x-1");
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	/* one object without its stamp (the reconciler rewrote it) */
	copy = json_deep_copy(items);
	json_object_del((json_t *)jget(json_array_get(copy, 1), "metadata"), "annotations");
	assert_non_null(report_scan_inputs(copy));
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	/* changed by another field manager */
	copy = json_deep_copy(items);
	json_object_set_new((json_t *)jget(json_array_get(copy, 0), "metadata"), "managedFields",
			    J("[{\"manager\": \"gavel\"}, {\"manager\": \"kubectl-edit\"}]"));
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	/* a stamp edited into another form */
	copy = json_deep_copy(items);
	json_object_set_new(
	    (json_t *)jget(json_array_get(copy, 0), "metadata.annotations"),
	    REPORT_ANNOTATION_SCAN_INPUTS,
	    json_string("context=sha256:aa; objects=sha256:bb; groups=1; chunks=3"));
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	/* the same chunk twice */
	copy = json_deep_copy(items);
	json_array_append_new(copy, json_deep_copy(json_array_get(copy, 0)));
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	/* objects not gavel's do not count, and alone they are nothing */
	copy = json_deep_copy(items);
	o = J("{\"metadata\": {\"name\": \"mine\", \"namespace\": \"x\"}}");
	json_array_append(copy, o);
	assert_true(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	copy = json_array();
	json_array_append_new(copy, o);
	assert_null(report_scan_inputs(copy));
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	json_decref(items);

	/* split layout: two groups; one of them deleted whole is seen */
	fake_free(f);
	f = fake_new();
	api = fake_api(f);
	rs = report_set_new(&(struct report_options){.split = true});
	assert_int_equal(report_load(rs, &api, NULL, &err), GV_OK);
	add_pods(rs, "x", 0, 2, "p", ENGINE_PASS);
	add_pods(rs, "x", 0, 2, "q", ENGINE_FAIL);
	report_set_inputs(rs, in);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 2);
	report_set_free(rs);
	assert_int_equal(report_list_metadata(&api, "x", &items, &err), GV_OK);
	assert_int_equal(json_array_size(items), 2);
	json_array_foreach(items, i, o)
	    assert_non_null(strstr(stamp_of(o), "; groups=2; chunks=1; results=2"));
	assert_true(report_inputs_unchanged("x", items, in, NULL));
	copy = items_without(items, "polr-ns-x-q");
	assert_int_equal(json_array_size(copy), 1);
	assert_false(report_inputs_unchanged("x", copy, in, NULL));
	json_decref(copy);
	json_decref(items);
	fake_free(f);
}

/* ---- the resource layout, sources, allowed results ---- */

/* A uid ending in "-<digits>": chunk 0 is still the uid itself. */
#define UID_A  "9d1c0f5e-51a7-4f3c-b3c4-201234567890"
#define UID_B  "0a5bb5ff-1c2d-4e5f-8a9b-abcdefabcdef"
#define UID_NS "11111111-2222-3333-4444-55555555aaaa"

/*
 * An admission item with CEL policies' results (cel-semantics.md 7): source
 * KyvernoValidatingPolicy, policy name or namespace/name, no rule, process
 * by the policy's background setting, scored/severity/category from the
 * annotations, the label reports.kyverno.io/disabled honoured; in every
 * layout.
 */
static void test_admission_vpol(void **state)
{
	json_t *docs = J(
	    "[{'apiVersion':'policies.kyverno.io/v1','kind':'ValidatingPolicy',"
	    "'metadata':{'name':'audit-team','annotations':{'policies.kyverno.io/severity':'high',"
	    "'policies.kyverno.io/category':'Teams','policies.kyverno.io/scored':'false'}},"
	    "'spec':{'validationActions':['Audit'],'evaluation':{'background':{'enabled':false}},"
	    "'matchConstraints':{'resourceRules':[{'apiGroups':[''],'apiVersions':['v1'],"
	    "'operations':['CREATE'],'resources':['pods']}]},"
	    "'validations':[{'expression':'true'}]}},"
	    "{'apiVersion':'policies.kyverno.io/v1','kind':'NamespacedValidatingPolicy',"
	    "'metadata':{'name':'ns-audit','namespace':'team-a'},"
	    "'spec':{'validationActions':['Audit'],"
	    "'matchConstraints':{'resourceRules':[{'apiGroups':[''],'apiVersions':['v1'],"
	    "'operations':['CREATE'],'resources':['pods']}]},"
	    "'validations':[{'expression':'true'}]}},"
	    "{'apiVersion':'policies.kyverno.io/v1','kind':'ValidatingPolicy',"
	    "'metadata':{'name':'quiet','labels':{'reports.kyverno.io/disabled':'true'}},"
	    "'spec':{'validationActions':['Audit'],"
	    "'matchConstraints':{'resourceRules':[{'apiGroups':[''],'apiVersions':['v1'],"
	    "'operations':['CREATE'],'resources':['pods']}]},"
	    "'validations':[{'expression':'true'}]}}]");
	json_t *none = J("[]"), *props = J("{'cel.validationIndex':'0'}");
	struct view_vpolset *vs = view_vpolset_new(docs, none);
	static char v1[] = "v1", kind[] = "Pod", ns[] = "team-a", web[] = "web", uid[] = UID_A,
		    empty[] = "", bad[] = "team label missing", ok[] = "";
	struct view_audit_result ar[3] = {
	    {.rule = empty, .status = ENGINE_FAIL, .message = bad, .properties = props},
	    {.rule = empty, .status = ENGINE_PASS, .message = ok},
	    {.rule = empty, .status = ENGINE_FAIL, .message = bad},
	};
	struct view_audit_item it = {.api_version = v1,
				     .kind = kind,
				     .namespace = ns,
				     .name = web,
				     .uid = uid,
				     .timestamp = 300,
				     .results = ar,
				     .nresults = 3};
	static const struct {
		struct report_options opt;
		const char *names[2]; /* the reports, in render order */
	} layouts[] = {
	    {{0}, {"polr-ns-team-a", NULL}},
	    {{.split = true}, {"polr-ns-team-a-audit-team", "polr-ns-team-a-ns-audit"}},
	    {{.resource = true}, {UID_A, NULL}},
	};

	(void)state;
	assert_int_equal(view_vpolset_count(vs), 3);
	for (size_t i = 0; i < 3; i++) {
		ar[i].vpols = vs;
		ar[i].vpol = view_vpolset_policy(vs, i);
	}
	for (size_t l = 0; l < GV_ARRAY_LEN(layouts); l++) {
		struct report_set *rs = report_set_new(&layouts[l].opt);
		struct gv_err err = {0};
		json_t *all, *res = json_array();
		const json_t *o, *r;
		size_t i;

		assert_int_equal(report_put_admission(rs, &it, &err), GV_OK);
		all = report_render_all(rs);
		assert_int_equal(json_array_size(all), layouts[l].names[1] ? 2 : 1);
		json_array_foreach(all, i, o)
		{
			assert_string_equal(sget(o, "metadata.name"), layouts[l].names[i]);
			json_array_extend(res, json_object_get(o, "results"));
		}
		/* quiet is labelled reports.kyverno.io/disabled */
		assert_int_equal(json_array_size(res), 2);
		r = json_array_get(res, 0);
		assert_string_equal(sget(r, "source"), "KyvernoValidatingPolicy");
		assert_string_equal(sget(r, "policy"), "audit-team");
		assert_null(jget(r, "rule"));
		assert_string_equal(sget(r, "result"), "warn"); /* scored: "false" */
		assert_true(json_is_false(jget(r, "scored")));
		assert_string_equal(sget(r, "message"), "team label missing");
		assert_string_equal(sget(r, "severity"), "high");
		assert_string_equal(sget(r, "category"), "Teams");
		assert_string_equal(sget(r, "properties.process"), "admission review");
		assert_string_equal(json_string_value(json_object_get(jget(r, "properties"),
								      "cel.validationIndex")),
				    "0");
		assert_int_equal(iget(r, "timestamp.seconds"), 300);
		r = json_array_get(res, 1);
		assert_string_equal(sget(r, "source"), "KyvernoValidatingPolicy");
		assert_string_equal(sget(r, "policy"), "team-a/ns-audit");
		assert_null(jget(r, "rule"));
		assert_string_equal(sget(r, "result"), "pass");
		/* background enabled: as Kyverno, by the policy's setting */
		assert_string_equal(sget(r, "properties.process"), "background scan");
		if (layouts[l].opt.resource)
			assert_null(jget(r, "resources"));
		else
			assert_string_equal(sget(r, "resources.0.uid"), UID_A);
		json_decref(res);
		json_decref(all);
		report_set_free(rs);
	}
	view_vpolset_unref(vs);
	json_decref(props);
	json_decref(none);
	json_decref(docs);
}

static void test_resource_layout(void **state)
{
	struct report_options opt = {.resource = true, .source = REPORT_SOURCE_KYVERNO};
	struct report_set *rs = report_set_new(&opt), *rs2;
	struct report_resource a = pod("team-a", "web", UID_A), b = pod("team-a", "db", UID_B);
	struct report_resource ns = {"v1", "Namespace", NULL, "team-a", UID_NS};
	struct report_entry e[2] = {ent("p", "r1", ENGINE_FAIL, "bad", 10),
				    ent("q", "r2", ENGINE_PASS, "ok", 10)};
	struct fake *f = fake_new();
	struct report_api api = fake_api(f);
	struct report_stats st;
	struct gv_err err = {0};
	json_t *kyv;
	const json_t *o;
	char *base = NULL, *name;
	size_t idx = 9;

	(void)state;
	/* names */
	name = report_chunk_name(UID_A, 0);
	assert_string_equal(name, UID_A);
	free(name);
	name = report_chunk_name(UID_A, 1);
	assert_string_equal(name, UID_A "-1");
	free(name);
	assert_true(report_parse_name(UID_A, &base, &idx));
	assert_string_equal(base, UID_A);
	assert_int_equal(idx, 0);
	free(base);
	assert_true(report_parse_name(UID_A "-1", &base, &idx));
	assert_string_equal(base, UID_A);
	assert_int_equal(idx, 1);
	free(base);

	replace1(rs, &a, "p", &e[0], 1);
	replace1(rs, &a, "q", &e[1], 1);
	replace1(rs, &b, "q", &e[1], 1);
	replace1(rs, &ns, "p", &e[0], 1);
	flush_ok(rs, f, &st);
	assert_int_equal(st.created, 3);
	o = fobj(f, "team-a/" UID_A);
	assert_non_null(o);
	assert_string_equal(sget(o, "kind"), "PolicyReport");
	assert_string_equal(
	    json_string_value(json_object_get(jget(o, "metadata.labels"), REPORT_LABEL_MANAGED_BY)),
	    "kyverno");
	assert_string_equal(
	    json_string_value(json_object_get(jget(o, "metadata.labels"), REPORT_LABEL_LAYOUT)),
	    "resource");
	assert_string_equal(sget(o, "metadata.ownerReferences.0.kind"), "Pod");
	assert_string_equal(sget(o, "metadata.ownerReferences.0.name"), "web");
	assert_string_equal(sget(o, "metadata.ownerReferences.0.uid"), UID_A);
	assert_string_equal(sget(o, "scope.kind"), "Pod");
	assert_string_equal(sget(o, "scope.namespace"), "team-a");
	assert_string_equal(sget(o, "scope.uid"), UID_A);
	assert_int_equal(json_array_size(jget(o, "results")), 2);
	assert_string_equal(sget(o, "results.0.source"), "kyverno");
	assert_null(jget(o, "results.0.resources")); /* the scope says it */
	assert_int_equal(iget(o, "summary.fail"), 1);
	assert_int_equal(iget(o, "summary.pass"), 1);
	o = fobj(f, "/" UID_NS);
	assert_non_null(o);
	assert_string_equal(sget(o, "kind"), "ClusterPolicyReport");
	assert_string_equal(sget(o, "scope.kind"), "Namespace");
	assert_null(jget(o, "scope.namespace"));

	/* Kyverno's own report (no gavel label) is never gavel's */
	kyv = J("{'apiVersion':'wgpolicyk8s.io/v1alpha2','kind':'PolicyReport','metadata':{"
		"'name':'" UID_B "x','namespace':'team-a','labels':{'app.kubernetes.io/managed-by':"
		"'kyverno'}},'results':[{'policy':'k','rule':'r','result':'fail'}]}");
	fake_store(f, "team-a/" UID_B "x", kyv);

	/* a restart: the model comes back from the scopes, nothing is rewritten */
	rs2 = report_set_new(&opt);
	assert_int_equal(report_load(rs2, &api, &st, &err), GV_OK);
	assert_int_equal(st.read, 3);
	assert_int_equal(report_count(rs2), 4);
	replace1(rs2, &a, "q", &e[1], 1);
	flush_ok(rs2, f, &st);
	assert_int_equal(st.created + st.updated + st.deleted, 0);

	/* the resource goes: its report goes (no GC on a bare API server) */
	report_delete_object(rs2, NULL, UID_A);
	flush_ok(rs2, f, &st);
	assert_int_equal(st.deleted, 1);
	assert_null(fobj(f, "team-a/" UID_A));
	assert_non_null(fobj(f, "team-a/" UID_B));
	assert_non_null(fobj(f, "team-a/" UID_B "x"));
	report_set_free(rs2);

	/* back to the namespace layout: the results move into polr-ns-team-a */
	rs2 = report_set_new(NULL);
	assert_int_equal(report_load(rs2, &api, &st, &err), GV_OK);
	flush_ok(rs2, f, &st);
	assert_null(fobj(f, "team-a/" UID_B));
	o = fobj(f, "team-a/polr-ns-team-a");
	assert_non_null(o);
	assert_string_equal(sget(o, "results.0.resources.0.uid"), UID_B);
	assert_string_equal(sget(o, "results.0.source"), "kyverno"); /* as written */
	assert_non_null(fobj(f, "team-a/" UID_B "x"));
	report_set_free(rs2);
	report_set_free(rs);
	fake_free(f);
}

static void test_allowed_results(void **state)
{
	unsigned bits = 0;
	struct gv_err err = {0};
	struct report_options opt = {0};
	struct report_set *rs;
	struct report_resource a = pod("ns", "web", "uid-web");
	struct report_entry e[2] = {ent("p", "r1", ENGINE_FAIL, "bad", 10),
				    ent("p", "r2", ENGINE_PASS, "ok", 10)};
	json_t *all;

	(void)state;
	assert_int_equal(report_allowed_parse(" fail , error", &bits, &err), GV_OK);
	assert_int_equal(bits, (1u << ENGINE_FAIL) | (1u << ENGINE_ERROR));
	assert_int_equal(report_allowed_parse("fail,nope", &bits, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "\"nope\""));
	assert_int_equal(report_allowed_parse("", &bits, &err), GV_EINVAL);
	assert_int_equal(report_allowed_parse("fail,", &bits, &err), GV_EINVAL);

	opt.allowed = 1u << ENGINE_FAIL;
	rs = report_set_new(&opt);
	replace1(rs, &a, "p", e, 2);
	assert_int_equal(report_count(rs), 1);
	all = report_render_all(rs);
	assert_string_equal(sget(all, "0.results.0.rule"), "r1");
	json_decref(all);
	/* the failing rule passes now: its fail goes, the pass is not kept */
	e[0].result = ENGINE_PASS;
	replace1(rs, &a, "p", e, 2);
	assert_int_equal(report_count(rs), 0);
	/* the same through admission (upserts) */
	e[0].result = ENGINE_FAIL;
	e[0].process = REPORT_ADMISSION_REVIEW;
	assert_int_equal(report_upsert(rs, &a, e, 1, &err), GV_OK);
	assert_int_equal(report_count(rs), 1);
	e[0].result = ENGINE_PASS;
	assert_int_equal(report_upsert(rs, &a, e, 1, &err), GV_OK);
	assert_int_equal(report_count(rs), 0);
	report_set_free(rs);
}

static const char POL_DISABLED[] =
    "{'apiVersion':'kyverno.io/v1','kind':'ClusterPolicy','metadata':{'name':'quiet',"
    "'labels':{'reports.kyverno.io/disabled':''}},'spec':{'validationFailureAction':'Audit',"
    "'rules':[{'name':'r','match':{'any':[{'resources':{'kinds':['Pod']}}]},'validate':{"
    "'message':'m','pattern':{'metadata':{'labels':{'team':'?*'}}}}}]}}";

static void test_disabled_and_properties(void **state)
{
	struct engine_policy *quiet = compile(POL_DISABLED), *scored = compile(POL_SCORED);
	struct report_set *rs = report_set_new(NULL);
	struct report_resource p = pod("team-a", "web", "uid-web");
	static char r[] = "r", m[] = "m", check_team[] = "check-team", exc[] = "ex-a,ex-b";
	static char msg[] = "rule is skipped due to policy exceptionskyverno/ex-a,kyverno/ex-b";
	struct engine_rule_result rq = {.rule = r, .status = ENGINE_FAIL, .message = m};
	struct engine_rule_result rs1 = {.rule = check_team,
					 .status = ENGINE_SKIP,
					 .message = msg,
					 .action = ENGINE_AUDIT,
					 .exception = true,
					 .exceptions = exc};
	struct engine_response resp;
	struct gv_err err = {0};
	json_t *all, *props;
	struct report_entry e = ent("p", "r", ENGINE_FAIL, "bad", 10);

	(void)state;
	assert_true(report_policy_disabled(quiet));
	assert_false(report_policy_disabled(scored));
	resp = (struct engine_response){quiet, &rq, 1};
	assert_int_equal(report_put_response(rs, &p, &resp, ENGINE_BACKGROUND, 100, 0, &err),
			 GV_OK);
	assert_int_equal(report_put_response(rs, &p, &resp, ENGINE_ADMISSION, 100, 0, &err), GV_OK);
	assert_int_equal(report_count(rs), 0);

	/* reportProperties beside exceptions (whose own key wins) */
	rs1.properties = J("{'objName':'web','exceptions':'mine'}");
	resp = (struct engine_response){scored, &rs1, 1};
	assert_int_equal(report_put_response(rs, &p, &resp, ENGINE_BACKGROUND, 100, 0, &err),
			 GV_OK);
	/* an entry's own properties; "process" is the process's */
	props = J("{'foo':'bar','process':'x'}");
	e.properties = props;
	replace1(rs, &p, "p", &e, 1);
	json_decref(props);
	all = report_render_all(rs);
	assert_string_equal(sget(all, "0.results.0.policy"), "p");
	assert_string_equal(sget(all, "0.results.0.properties.foo"), "bar");
	assert_string_equal(sget(all, "0.results.0.properties.process"), "background scan");
	assert_string_equal(sget(all, "0.results.1.policy"), "require-team");
	assert_string_equal(sget(all, "0.results.1.result"), "skip");
	assert_string_equal(sget(all, "0.results.1.properties.exceptions"), "ex-a,ex-b");
	assert_string_equal(sget(all, "0.results.1.properties.objName"), "web");
	assert_string_equal(sget(all, "0.results.1.properties.process"), "background scan");
	json_decref(all);
	json_decref(rs1.properties);
	report_set_free(rs);

	/*
	 * reportProperties' <result>Message, else message, replaces the
	 * message (kyverno-semantics.md 8.6); a CEL policy's audit annotations
	 * too (cel-semantics.md 7).
	 */
	rs = report_set_new(NULL);
	props = J("{'failMessage':'owner missing','passMessage':'ok','message':'generic'}");
	e.properties = props;
	replace1(rs, &p, "p", &e, 1);
	all = report_render_all(rs);
	assert_string_equal(sget(all, "0.results.0.message"), "owner missing");
	assert_string_equal(sget(all, "0.results.0.properties.failMessage"), "owner missing");
	json_decref(all);
	json_decref(props);
	props = J("{'passMessage':'ok','message':'generic'}");
	e.properties = props;
	replace1(rs, &p, "p", &e, 1);
	all = report_render_all(rs);
	assert_string_equal(sget(all, "0.results.0.message"), "generic");
	json_decref(all);
	json_decref(props);
	props = J("{'failMessage':'from an audit annotation'}");
	e.properties = props;
	e.source = REPORT_SOURCE_VPOL;
	e.rule = "";
	replace1(rs, &p, "p", &e, 1);
	all = report_render_all(rs);
	assert_string_equal(sget(all, "0.results.0.source"), REPORT_SOURCE_VPOL);
	assert_string_equal(sget(all, "0.results.0.message"), "from an audit annotation");
	json_decref(all);
	json_decref(props);
	report_set_free(rs);
	engine_policy_unref(quiet);
	engine_policy_unref(scored);
}

/* A complete listing of a kind: results of any policy about objects gone go. */
static void test_retain_objects(void **state)
{
	struct report_options opt = {.resource = true, .journal = true};
	struct report_set *rs = report_set_new(&opt), *dst = report_set_new(&opt);
	struct report_resource a = pod("team-a", "web", UID_A), b = pod("team-a", "db", UID_B);
	struct report_resource d = {"apps/v1", "Deployment", "team-a", "web", UID_NS};
	struct report_entry e[2] = {ent("p", "r1", ENGINE_FAIL, "bad", 10),
				    ent("q", "r2", ENGINE_PASS, "ok", 10)};
	const char *const alive[] = {UID_B};

	(void)state;
	e[1].process = REPORT_ADMISSION_REVIEW;
	for (struct report_set *s2 = rs; s2; s2 = s2 == rs ? dst : NULL) {
		replace1(s2, &a, "p", &e[0], 1);
		replace1(s2, &a, "q", &e[1], 1);
		replace1(s2, &b, "p", &e[0], 1);
		replace1(s2, &d, "p", &e[0], 1);
	}
	report_set_free(dst);
	dst = report_set_new(NULL);
	replace1(dst, &a, "q", &e[1], 1);
	replace1(dst, &a, "p", &e[0], 1);
	/* another namespace's listing says nothing of team-a */
	report_retain_objects(rs, "", "Pod", "team-b", alive, 1, 0);
	assert_int_equal(report_count(rs), 4);
	/* a result newer than the listing stays */
	report_retain_objects(rs, "", "Pod", "team-a", alive, 1, 5);
	assert_int_equal(report_count(rs), 4);
	report_retain_objects(rs, "", "Pod", "team-a", alive, 1, 20);
	assert_int_equal(report_count(rs), 2); /* web's p and q go; db and the Deployment stay */
	report_retain_objects(rs, "apps", "Deployment", NULL, NULL, 0, 0);
	assert_int_equal(report_count(rs), 1);
	/* replayed onto another set (the namespace scans' journal) */
	report_replay(dst, rs);
	assert_int_equal(report_count(dst), 1);
	report_set_free(rs);
	report_set_free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_long_names),
	    cmocka_unit_test(test_entries),
	    cmocka_unit_test(test_engine_entries),
	    cmocka_unit_test(test_replace_and_timestamps),
	    cmocka_unit_test(test_deletes_and_prune),
	    cmocka_unit_test(test_deterministic),
	    cmocka_unit_test(test_chunks),
	    cmocka_unit_test(test_merge),
	    cmocka_unit_test(test_split_layout),
	    cmocka_unit_test(test_admission_vpol),
	    cmocka_unit_test(test_flush),
	    cmocka_unit_test(test_openreports),
	    cmocka_unit_test(test_scan_inputs),
	    cmocka_unit_test(test_flush_conflict),
	    cmocka_unit_test(test_flush_gives_up),
	    cmocka_unit_test(test_flush_proceed),
	    cmocka_unit_test(test_flush_stopped_loses_nothing),
	    cmocka_unit_test(test_load_and_layout_switch),
	    cmocka_unit_test(test_load_pages),
	    cmocka_unit_test(test_retain_since),
	    cmocka_unit_test(test_journal_replay),
	    cmocka_unit_test(test_journal_digest),
	    cmocka_unit_test(test_scan_digest),
	    cmocka_unit_test(test_resource_layout),
	    cmocka_unit_test(test_allowed_results),
	    cmocka_unit_test(test_disabled_and_properties),
	    cmocka_unit_test(test_retain_objects),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
