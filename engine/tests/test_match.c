/*
 * Unit tests for engine/match.c: rule selection with match / exclude
 * (kyverno-semantics.md section 2: kind selectors 2.3, filters 2.2,
 * selector wildcards 2.4, any/all/legacy 2.1 and 2.5, user info 2.7) and
 * the selection corner cases of E22.
 */
#include "engine/tests/testutil.h"

#include "engine/engine_int.h"

#include "common/banned.h"

/* A CREATE of Pod "x" in namespace "default" by no particular user. */
static struct match_request pod(void)
{
	struct match_request r;

	memset(&r, 0, sizeof(r));
	r.group = "";
	r.version = "v1";
	r.kind = "Pod";
	r.sub = "";
	r.name = "x";
	r.namespace = "default";
	r.op = OP_CREATE;
	return r;
}

/* Compiles block (YAML) as match (is_exclude false) or exclude and evaluates it. */
static int eval_block(const char *block, bool is_exclude, const struct match_request *r)
{
	json_t *j = Y(block);
	struct match_block b;
	struct gv_buf ptr = {0};
	struct gv_err err = {0};
	bool got;

	if (match_block_compile(j, &b, is_exclude, &ptr, &err)) {
		print_error("compile %s: %s: %s\n", block, err.pointer, err.msg);
		json_decref(j);
		gv_buf_release(&ptr);
		return -1;
	}
	got = match_block_eval(&b, r, is_exclude);
	match_block_release(&b);
	json_decref(j);
	gv_buf_release(&ptr);
	return got;
}

#define CHECK_SEL(block, is_exclude, req, want)                                                    \
	do {                                                                                       \
		int tu_got = eval_block((block), (is_exclude), (req));                             \
		CHECK(tu_got == (want), "%s %s: got %d, want %d",                                  \
		      (is_exclude) ? "exclude" : "match", (block), tu_got, (int)(want));           \
	} while (0)
#define MATCH(block, req, want)	  CHECK_SEL(block, false, req, want)
#define EXCLUDE(block, req, want) CHECK_SEL(block, true, req, want)

/* Compiles block and checks it is rejected with msg at pointer (relative to "/m"). */
static void check_compile_error(const char *block, bool is_exclude, const char *msg,
				const char *pointer)
{
	json_t *j = Y(block);
	struct match_block b;
	struct gv_buf ptr = {0};
	struct gv_err err = {0};
	enum gv_code rc;

	gv_buf_adds(&ptr, "/m");
	rc = match_block_compile(j, &b, is_exclude, &ptr, &err);
	CHECK(rc == GV_EINVAL, "%s accepted", block);
	if (rc == GV_OK)
		match_block_release(&b);
	if (msg)
		CHECK_PREFIX(err.msg, msg);
	if (pointer)
		CHECK_STR(err.pointer, pointer);
	json_decref(j);
	gv_buf_release(&ptr);
}

static void check_compiles(const char *block, bool is_exclude)
{
	json_t *j = Y(block);
	struct match_block b;
	struct gv_buf ptr = {0};
	struct gv_err err = {0};

	CHECK(match_block_compile(j, &b, is_exclude, &ptr, &err) == GV_OK, "%s: %s: %s", block,
	      err.pointer, err.msg);
	if (!err.code)
		match_block_release(&b);
	json_decref(j);
	gv_buf_release(&ptr);
}

/* ---- kind selectors (section 2.3) ---- */

static void test_kind_sel_parse(void **state)
{
	static const struct {
		const char *in, *group, *version, *kind, *sub;
	} cases[] = {
	    {"Pod", "*", "*", "Pod", ""},
	    {"*", "*", "*", "*", ""},
	    {"*/*", "*", "*", "*", "*"},
	    {"*/status", "*", "*", "*", "status"},
	    {"v1/Pod", "*", "v1", "Pod", ""},
	    {"v2beta1/HorizontalPodAutoscaler", "*", "v2beta1", "HorizontalPodAutoscaler", ""},
	    {"v1alpha1/Foo", "*", "v1alpha1", "Foo", ""},
	    {"Pod/exec", "*", "*", "Pod", "exec"},
	    {"Pod.exec", "*", "*", "Pod", "exec"},
	    {"Deployment/scale", "*", "*", "Deployment", "scale"},
	    {"v1/Pod/exec", "*", "v1", "Pod", "exec"},
	    {"v1/Pod.exec", "*", "v1", "Pod", "exec"},
	    {"apps/v1/Deployment", "apps", "v1", "Deployment", ""},
	    {"apps/v1/Deployment/scale", "apps", "v1", "Deployment", "scale"},
	    {"apps/v1/Deployment.scale", "apps", "v1", "Deployment", "scale"},
	    {"networking.k8s.io/v1/NetworkPolicy", "networking.k8s.io", "v1", "NetworkPolicy", ""},
	    {"crd.antrea.io/v1alpha1/NetworkPolicy", "crd.antrea.io", "v1alpha1", "NetworkPolicy",
	     ""},
	    /* "v1beta" is not version-like: Kind/sub */
	    {"v1beta/Foo", "*", "*", "v1beta", "Foo"},
	    {"V1/Pod", "*", "*", "V1", "Pod"},
	};
	(void)state;

	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct kind_sel k;

		kind_sel_parse(cases[i].in, &k);
		CHECK(k.group && !strcmp(k.group, cases[i].group) && k.version &&
			  !strcmp(k.version, cases[i].version) && k.kind &&
			  !strcmp(k.kind, cases[i].kind) && k.sub && !strcmp(k.sub, cases[i].sub),
		      "%s: got %s|%s|%s|%s, want %s|%s|%s|%s", cases[i].in, k.group, k.version,
		      k.kind, k.sub, cases[i].group, cases[i].version, cases[i].kind, cases[i].sub);
		kind_sel_release(&k);
	}
	CHECK_DONE();
}

static void test_kind_matching(void **state)
{
	static const struct {
		const char *sel, *group, *version, *kind, *sub;
		int want;
	} cases[] = {
	    /* a plain Pod */
	    {"Pod", "", "v1", "Pod", "", 1},
	    {"v1/Pod", "", "v1", "Pod", "", 1},
	    {"v2/Pod", "", "v1", "Pod", "", 0},
	    {"apps/v1/Pod", "", "v1", "Pod", "", 0},
	    {"*", "", "v1", "Pod", "", 1},
	    {"*/*", "", "v1", "Pod", "", 1},
	    {"Po*", "", "v1", "Pod", "", 1},
	    {"P?d", "", "v1", "Pod", "", 1},
	    {"pod", "", "v1", "Pod", "", 0}, /* case-sensitive */
	    {"Deployment", "", "v1", "Pod", "", 0},
	    {"Pod/exec", "", "v1", "Pod", "", 0},
	    /* pods/exec (E22) */
	    {"Pod", "", "v1", "Pod", "exec", 0},
	    {"Pod/exec", "", "v1", "Pod", "exec", 1},
	    {"Pod.exec", "", "v1", "Pod", "exec", 1},
	    {"v1/Pod/exec", "", "v1", "Pod", "exec", 1},
	    {"v1/Pod.exec", "", "v1", "Pod", "exec", 1},
	    {"Pod/*", "", "v1", "Pod", "exec", 1},
	    {"Pod/status", "", "v1", "Pod", "exec", 0},
	    {"*", "", "v1", "Pod", "exec", 0},
	    {"*/*", "", "v1", "Pod", "exec", 1},
	    {"*/exec", "", "v1", "Pod", "exec", 1},
	    {"Pod", "", "v1", "Pod", "status", 0},
	    /* pods/ephemeralcontainers is matched by Pod (and *) */
	    {"Pod", "", "v1", "Pod", "ephemeralcontainers", 1},
	    {"v1/Pod", "", "v1", "Pod", "ephemeralcontainers", 1},
	    {"*", "", "v1", "Pod", "ephemeralcontainers", 1},
	    {"Pod/ephemeralcontainers", "", "v1", "Pod", "ephemeralcontainers", 1},
	    /* groups and versions */
	    {"Deployment", "apps", "v1", "Deployment", "", 1},
	    {"v1/Deployment", "apps", "v1", "Deployment", "", 1},
	    {"apps/v1/Deployment", "apps", "v1", "Deployment", "", 1},
	    {"apps/*/Deployment", "apps", "v1", "Deployment", "", 1},
	    {"batch/v1/Deployment", "apps", "v1", "Deployment", "", 0},
	    {"apps/v1beta1/Deployment", "apps", "v1", "Deployment", "", 0},
	    {"Deployment/scale", "apps", "v1", "Deployment", "scale", 1},
	    {"apps/v1/Deployment/scale", "apps", "v1", "Deployment", "scale", 1},
	    {"Deployment", "apps", "v1", "Deployment", "scale", 0},
	    {"networking.k8s.io/v1/NetworkPolicy", "networking.k8s.io", "v1", "NetworkPolicy", "",
	     1},
	    {"crd.antrea.io/v1alpha1/NetworkPolicy", "networking.k8s.io", "v1", "NetworkPolicy", "",
	     0},
	    {"crd.antrea.io/v1alpha1/NetworkPolicy", "crd.antrea.io", "v1alpha1", "NetworkPolicy",
	     "", 1},
	    {"networking.k8s.io/v1/NetworkPolicy", "crd.antrea.io", "v1alpha1", "NetworkPolicy", "",
	     0},
	    {"*.k8s.io/v1/NetworkPolicy", "networking.k8s.io", "v1", "NetworkPolicy", "", 1},
	    {"NetworkPolicy", "crd.antrea.io", "v1alpha1", "NetworkPolicy", "", 1},
	};
	(void)state;

	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct match_request r = pod();
		char *block = gv_xasprintf("{any: [{resources: {kinds: ['%s']}}]}", cases[i].sel);
		int got;

		r.group = cases[i].group;
		r.version = cases[i].version;
		r.kind = cases[i].kind;
		r.sub = cases[i].sub;
		got = eval_block(block, false, &r);
		CHECK(got == cases[i].want, "kind %s vs %s/%s %s sub '%s': got %d, want %d",
		      cases[i].sel, cases[i].group, cases[i].version, cases[i].kind, cases[i].sub,
		      got, cases[i].want);
		free(block);
	}
	CHECK_DONE();
}

/* ---- resource fields (section 2.2) ---- */

static void test_names(void **state)
{
	struct match_request r = pod();
	(void)state;

	r.name = "web-abc";
	MATCH("{any: [{resources: {kinds: [Pod], names: ['web-*']}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], names: [api, 'web-\?\?\?']}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], names: [api]}}]}", &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], name: 'web-*'}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], name: 'api-*'}}]}", &r, 0);
	MATCH("{any: [{resources: {names: ['web-abc']}}]}", &r, 1);
	/* E22: generateName "web-" and no name (the request carries generateName) */
	r.name = "web-";
	MATCH("{any: [{resources: {kinds: [Pod], names: ['web-*']}}]}", &r, 1);
	/* names are case-sensitive */
	r.name = "Web-1";
	MATCH("{any: [{resources: {kinds: [Pod], names: ['web-*']}}]}", &r, 0);
	CHECK_DONE();
}

static void test_namespaces(void **state)
{
	struct match_request r = pod();
	(void)state;

	r.namespace = "team-b";
	MATCH("{any: [{resources: {kinds: [Pod], namespaces: ['team-*']}}]}", &r, 1);
	r.namespace = "default";
	MATCH("{any: [{resources: {kinds: [Pod], namespaces: ['team-*']}}]}", &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], namespaces: [prod, default]}}]}", &r, 1);
	/* a cluster-scoped object has no namespace */
	r = pod();
	r.kind = "ClusterRole";
	r.group = "rbac.authorization.k8s.io";
	r.namespace = "";
	MATCH("{any: [{resources: {kinds: [ClusterRole], namespaces: ['?*']}}]}", &r, 0);
	MATCH("{any: [{resources: {kinds: [ClusterRole], namespaces: [default]}}]}", &r, 0);
	/* '*' matches the empty namespace (section 3.7: '*' matches the empty text) */
	MATCH("{any: [{resources: {kinds: [ClusterRole], namespaces: ['*']}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [ClusterRole]}}]}", &r, 1);
	/* E22: a Namespace is matched by its own name */
	r = pod();
	r.kind = "Namespace";
	r.name = "team-a";
	r.namespace = "";
	MATCH("{any: [{resources: {kinds: [Namespace], namespaces: ['team-*']}}]}", &r, 1);
	r.name = "prod";
	MATCH("{any: [{resources: {kinds: [Namespace], namespaces: ['team-*']}}]}", &r, 0);
	CHECK_DONE();
}

static void test_annotations(void **state)
{
	struct match_request r = pod();
	json_t *ann = J("{'owner': 'team-a', 'policy.io/level': 'high'}");
	(void)state;

	r.annotations = ann;
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {owner: team-a}}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {owner: 'team-*'}}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {owner: team-b}}}]}", &r, 0);
	/* wildcards in the key too */
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {'own*': 'team-?'}}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {'policy.io/*': high}}}]}", &r, 1);
	/* every pair must be satisfied */
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {owner: team-a, 'policy.io/level': "
	      "high}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {owner: team-a, 'policy.io/level': "
	      "low}}}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {missing: '*'}}}]}", &r, 0);
	r.annotations = NULL;
	MATCH("{any: [{resources: {kinds: [Pod], annotations: {owner: '*'}}}]}", &r, 0);
	json_decref(ann);
	CHECK_DONE();
}

static void test_selector(void **state)
{
	struct match_request r = pod();
	json_t *labels = J("{'app': 'web-1', 'app.kubernetes.io/name': 'shop', 'tier': 'front'}");
	(void)state;

	r.labels = labels;
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {tier: front}}}}]}", &r,
	      1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {tier: back}}}}]}", &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {tier: front, app: "
	      "web-1}}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {tier: front, app: "
	      "web-2}}}}]}",
	      &r, 0);
	/* section 2.4: wildcards in matchLabels keys and values */
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {app: 'web-*'}}}}]}", &r,
	      1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {app: 'web-?'}}}}]}", &r,
	      1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {app: 'api-*'}}}}]}", &r,
	      0);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {'app.kubernetes.io/*': "
	      "shop}}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {'app.kubernetes.io/*': "
	      "cart}}}}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {'*': '*'}}}}]}", &r, 1);
	/* matchExpressions */
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: tier, "
	      "operator: In, values: [front, back]}]}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: tier, "
	      "operator: In, values: [back]}]}}}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: tier, "
	      "operator: NotIn, values: [back]}]}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: tier, "
	      "operator: NotIn, values: [front]}]}}}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: env, "
	      "operator: NotIn, values: [prod]}]}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: tier, "
	      "operator: Exists}]}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: env, "
	      "operator: Exists}]}}}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: env, "
	      "operator: DoesNotExist}]}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: tier, "
	      "operator: DoesNotExist}]}}}]}",
	      &r, 0);
	/* matchExpressions values are not wildcard-expanded */
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: app, "
	      "operator: In, values: ['web-*']}]}}}]}",
	      &r, 0);
	/* no labels at all */
	r.labels = NULL;
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {tier: front}}}}]}", &r,
	      0);
	MATCH("{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: tier, "
	      "operator: DoesNotExist}]}}}]}",
	      &r, 1);
	json_decref(labels);
	CHECK_DONE();
}

static void test_namespace_selector(void **state)
{
	struct match_request r = pod();
	json_t *nsl = J("{'env': 'prod'}");
	(void)state;

	r.ns_labels = nsl;
	MATCH("{any: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {env: prod}}}}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {env: dev}}}}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], namespaceSelector: {matchExpressions: [{key: env, "
	      "operator: In, values: [prod, staging]}]}}}]}",
	      &r, 1);
	/* never matches a Namespace, even when its labels would */
	r.kind = "Namespace";
	r.name = "prod";
	r.namespace = "";
	r.labels = nsl;
	MATCH("{any: [{resources: {kinds: [Namespace], namespaceSelector: {matchLabels: {env: "
	      "prod}}}}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: ['*'], namespaceSelector: {matchLabels: {env: prod}}}}]}",
	      &r, 0);
	json_decref(nsl);
	CHECK_DONE();
}

static void test_operations(void **state)
{
	struct match_request r = pod();
	(void)state;

	MATCH("{any: [{resources: {kinds: [Pod], operations: [CREATE]}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod], operations: [UPDATE, DELETE]}}]}", &r, 0);
	r.op = OP_UPDATE;
	/* E22: operations [CREATE] and an UPDATE request */
	MATCH("{any: [{resources: {kinds: [Pod], operations: [CREATE]}}]}", &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], operations: [UPDATE, DELETE]}}]}", &r, 1);
	/* no operations: any operation */
	r.op = OP_DELETE;
	MATCH("{any: [{resources: {kinds: [Pod]}}]}", &r, 1);
	r.op = OP_CONNECT;
	r.sub = "exec";
	MATCH("{any: [{resources: {kinds: [Pod/exec], operations: [CONNECT]}}]}", &r, 1);
	/* an operation-only filter */
	MATCH("{any: [{resources: {operations: [CONNECT]}}]}", &r, 1);
	CHECK_INT(match_op_bit("CREATE"), OP_CREATE);
	CHECK_INT(match_op_bit("UPDATE"), OP_UPDATE);
	CHECK_INT(match_op_bit("DELETE"), OP_DELETE);
	CHECK_INT(match_op_bit("CONNECT"), OP_CONNECT);
	CHECK_INT(match_op_bit("create"), 0);
	CHECK_DONE();
}

/* ---- user info (section 2.2, 2.7) ---- */

static void test_user_info(void **state)
{
	struct match_request r = pod();
	json_t *ui = J("{'username': 'alice-x', 'groups': ['devs', 'system:authenticated']}");
	json_t *sa = J("{'username': 'system:serviceaccount:ns1:sa-1', 'groups': []}");
	json_t *roles = J("['default:dev', 'prod:viewer']");
	json_t *croles = J("['cluster-admin', 'view']");
	(void)state;

	r.user_info = ui;
	r.roles = roles;
	r.cluster_roles = croles;
	/* subjects: wildcard on the name */
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: 'alice*'}]}]}", &r,
	      1);
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: bob}]}]}", &r, 0);
	MATCH(
	    "{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: bob}, {kind: Group, "
	    "name: devs}]}]}",
	    &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: Group, name: 'system:*'}]}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: Group, name: ops}]}]}", &r, 0);
	/* roles and clusterRoles: exact membership, no wildcards */
	MATCH("{any: [{resources: {kinds: [Pod]}, roles: ['default:dev']}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod]}, roles: ['default:*']}]}", &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod]}, clusterRoles: [view]}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod]}, clusterRoles: ['cluster-*']}]}", &r, 0);
	/* E22: exclude clusterRoles [cluster-*] does not exclude cluster-admin */
	EXCLUDE("{any: [{clusterRoles: ['cluster-*']}]}", &r, 0);
	EXCLUDE("{any: [{clusterRoles: [cluster-admin]}]}", &r, 1);
	/* every specified user-info field must hold */
	MATCH("{any: [{resources: {kinds: [Pod]}, roles: ['default:dev'], clusterRoles: [edit]}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod]}, roles: ['default:dev'], clusterRoles: [view]}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod]}, roles: ['default:dev'], subjects: [{kind: User, "
	      "name: bob}]}]}",
	      &r, 0);
	/* and the resource part still has to match */
	MATCH("{any: [{resources: {kinds: [Service]}, clusterRoles: [view]}]}", &r, 0);
	/* ServiceAccount subjects: system:serviceaccount:<ns>:<name> */
	r.user_info = sa;
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: ServiceAccount, name: 'sa-*', "
	      "namespace: ns1}]}]}",
	      &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: ServiceAccount, name: sa-1, "
	      "namespace: ns2}]}]}",
	      &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, "
	      "name: 'system:serviceaccount:ns1:*'}]}]}",
	      &r, 1);
	/* legacy user-info fields directly under match */
	r.user_info = ui;
	MATCH("{resources: {kinds: [Pod]}, clusterRoles: [view]}", &r, 1);
	MATCH("{resources: {kinds: [Pod]}, clusterRoles: [edit]}", &r, 0);
	json_decref(ui);
	json_decref(sa);
	json_decref(roles);
	json_decref(croles);
	CHECK_DONE();
}

static void test_user_info_without_request_info(void **state)
{
	struct match_request r = pod();
	(void)state;

	/* section 2.7: no user info -> dropped from match filters ... */
	MATCH("{any: [{resources: {kinds: [Pod]}, clusterRoles: [cluster-admin]}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: alice}]}]}", &r, 1);
	MATCH("{all: [{resources: {kinds: [Pod]}, roles: ['default:dev']}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Service]}, clusterRoles: [cluster-admin]}]}", &r, 0);
	/* ... but kept in exclude filters, where it never matches */
	EXCLUDE("{any: [{clusterRoles: [cluster-admin]}]}", &r, 0);
	EXCLUDE("{any: [{subjects: [{kind: User, name: alice}]}]}", &r, 0);
	EXCLUDE("{any: [{roles: ['default:dev']}]}", &r, 0);
	EXCLUDE("{any: [{resources: {kinds: [Pod]}, clusterRoles: [cluster-admin]}]}", &r, 0);
	EXCLUDE("{any: [{resources: {kinds: [Pod]}}]}", &r, 1);
	CHECK_DONE();
}

/* ---- any / all / legacy (section 2.1, 2.5) ---- */

static void test_any_all_legacy(void **state)
{
	struct match_request r = pod();
	(void)state;

	r.namespace = "prod";
	MATCH("{any: [{resources: {kinds: [Service]}}, {resources: {kinds: [Pod]}}]}", &r, 1);
	MATCH("{any: [{resources: {kinds: [Service]}}, {resources: {kinds: [ConfigMap]}}]}", &r, 0);
	MATCH("{all: [{resources: {kinds: [Pod]}}, {resources: {namespaces: [prod]}}]}", &r, 1);
	MATCH("{all: [{resources: {kinds: [Pod]}}, {resources: {namespaces: [dev]}}]}", &r, 0);
	/* one filter is a conjunction of its fields */
	MATCH("{any: [{resources: {kinds: [Pod], namespaces: [dev]}}]}", &r, 0);
	MATCH("{any: [{resources: {kinds: [Pod], namespaces: [prod], names: [x]}}]}", &r, 1);
	/* legacy form: one filter */
	MATCH("{resources: {kinds: [Pod], namespaces: [prod]}}", &r, 1);
	MATCH("{resources: {kinds: [Pod], namespaces: [dev]}}", &r, 0);
	EXCLUDE("{resources: {namespaces: [prod]}}", &r, 1);
	EXCLUDE("{resources: {namespaces: [dev]}}", &r, 0);
	/* exclude any / all */
	EXCLUDE("{any: [{resources: {namespaces: [dev]}}, {resources: {names: ['x*']}}]}", &r, 1);
	EXCLUDE("{all: [{resources: {namespaces: [dev]}}, {resources: {names: ['x*']}}]}", &r, 0);
	EXCLUDE("{all: [{resources: {namespaces: [prod]}}, {resources: {names: ['x*']}}]}", &r, 1);
	/* an absent exclude excludes nothing */
	EXCLUDE("{}", &r, 0);
	CHECK_DONE();
}

static void test_empty_filters(void **state)
{
	struct match_request r = pod();
	(void)state;

	/* an exclude filter with every field empty never excludes */
	EXCLUDE("{any: [{resources: {}}]}", &r, 0);
	EXCLUDE("{any: [{}]}", &r, 0);
	EXCLUDE("{any: [{resources: {kinds: []}}]}", &r, 0);
	/* user-info only filters are fine in exclude (section 1.8) */
	check_compiles("{any: [{clusterRoles: [cluster-admin]}]}", true);
	check_compiles("{any: [{subjects: [{kind: User, name: alice}]}]}", true);
	CHECK_DONE();
}

static void test_compile_errors(void **state)
{
	(void)state;

	/* section 1.8: match filters need resources */
	check_compile_error("{any: [{resources: {}}]}", false, "match resources not specified",
			    "/m/any/0");
	check_compile_error("{any: [{resources: {kinds: [Pod]}}, {resources: {}}]}", false,
			    "match resources not specified", "/m/any/1");
	check_compile_error("{all: [{resources: {}}]}", false, "match resources not specified",
			    "/m/all/0");
	check_compile_error("{any: [{clusterRoles: [cluster-admin]}]}", false,
			    "match resources not specified", "/m/any/0");
	check_compile_error("{any: [{subjects: [{kind: User, name: alice}]}]}", false,
			    "match resources not specified", "/m/any/0");
	check_compile_error("{resources: {}}", false, "match resources not specified", NULL);
	/* any together with all, or with the legacy fields */
	check_compile_error("{any: [{resources: {kinds: [Pod]}}], all: [{resources: {kinds: "
			    "[Pod]}}]}",
			    false, "can't specify any/all together", NULL);
	check_compile_error("{any: [{resources: {kinds: [Pod]}}], resources: {kinds: [Pod]}}",
			    false, "can't specify any/all together", NULL);
	/* name and names together; a selector without requirements */
	check_compile_error("{any: [{resources: {kinds: [Pod], name: a, names: [b]}}]}", false,
			    NULL, NULL);
	check_compile_error("{any: [{resources: {kinds: [Pod], selector: {}}}]}", false, NULL,
			    NULL);
	check_compile_error("{any: [{resources: {kinds: [Pod], selector: {matchLabels: {}}}}]}",
			    false, NULL, NULL);
	/* operations are an enum */
	check_compile_error("{any: [{resources: {kinds: [Pod], operations: [create]}}]}", false,
			    NULL, NULL);
	CHECK_DONE();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kind_sel_parse),
	    cmocka_unit_test(test_kind_matching),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_namespaces),
	    cmocka_unit_test(test_annotations),
	    cmocka_unit_test(test_selector),
	    cmocka_unit_test(test_namespace_selector),
	    cmocka_unit_test(test_operations),
	    cmocka_unit_test(test_user_info),
	    cmocka_unit_test(test_user_info_without_request_info),
	    cmocka_unit_test(test_any_all_legacy),
	    cmocka_unit_test(test_empty_filters),
	    cmocka_unit_test(test_compile_errors),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
