/*
 * Unit tests for background/rbac: request.roles and request.clusterRoles
 * from RoleBindings and ClusterRoleBindings (kyverno-semantics.md section
 * 2.2: subjects User, Group and ServiceAccount; RoleBinding to a Role and
 * to a ClusterRole; ClusterRoleBinding; de-duplicated and sorted), and the
 * cache kept by list + watch against a fake API server (kube/tests/httpd.h):
 * not ready before both lists, then updated by ADDED, MODIFIED and DELETED
 * events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "background/rbac.h"
#include "kube/tests/httpd.h"

#include "common/banned.h"

/* ---- helpers ---- */

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);

	if (!v)
		fail_msg("bad test JSON: %s (line %d)", e.text, e.line);
	return v;
}

/* The array as "a,b,c". */
static char *joined(const json_t *arr)
{
	struct gv_buf b = {0};
	size_t i;
	const json_t *v;

	assert_true(json_is_array(arr));
	json_array_foreach(arr, i, v)
	{
		assert_true(json_is_string(v));
		gv_buf_addf(&b, "%s%s", i ? "," : "", json_string_value(v));
	}
	return b.len ? gv_buf_detach(&b) : gv_xstrdup("");
}

/* Looks up user (JSON userInfo) in namespace ns; compares with the expected lists. */
static void expect_roles(const struct rbac_index *ix, const char *user_info, const char *ns,
			 const char *want_roles, const char *want_cluster_roles)
{
	json_t *ui = user_info ? parse(user_info) : NULL;
	json_t *roles = NULL, *cluster_roles = NULL;
	char *r, *cr;

	rbac_index_lookup(ix, ui, ns, &roles, &cluster_roles);
	r = joined(roles);
	cr = joined(cluster_roles);
	if (strcmp(r, want_roles) || strcmp(cr, want_cluster_roles))
		fail_msg("user %s in \"%s\": roles [%s] clusterRoles [%s], want [%s] [%s]",
			 user_info ? user_info : "(none)", ns ? ns : "(null)", r, cr, want_roles,
			 want_cluster_roles);
	free(r);
	free(cr);
	json_decref(roles);
	json_decref(cluster_roles);
	json_decref(ui);
}

/* ---- the index ---- */

static const char ROLEBINDINGS[] =
    "["
    /* a User to a Role in team-a */
    "{\"metadata\":{\"name\":\"alice-edit\",\"namespace\":\"team-a\"},"
    " \"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"edit\"},"
    " \"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]},"
    /* a Group to a Role in team-b; alice again as a second subject of the same binding */
    "{\"metadata\":{\"name\":\"devs\",\"namespace\":\"team-b\"},"
    " \"roleRef\":{\"kind\":\"Role\",\"name\":\"deployer\"},"
    " \"subjects\":[{\"kind\":\"Group\",\"name\":\"devs\"},{\"kind\":\"User\",\"name\":\"alice\"}]}"
    ","
    /* a RoleBinding in team-a to a ClusterRole (counted only for requests in team-a) */
    "{\"metadata\":{\"name\":\"alice-view\",\"namespace\":\"team-a\"},"
    " \"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"view\"},"
    " \"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]},"
    /* the same Role again by another binding (dedup) */
    "{\"metadata\":{\"name\":\"alice-edit-2\",\"namespace\":\"team-a\"},"
    " \"roleRef\":{\"kind\":\"Role\",\"name\":\"edit\"},"
    " \"subjects\":[{\"kind\":\"Group\",\"name\":\"devs\"}]},"
    /* ServiceAccount without a namespace: the binding's (team-a) */
    "{\"metadata\":{\"name\":\"sa-local\",\"namespace\":\"team-a\"},"
    " \"roleRef\":{\"kind\":\"Role\",\"name\":\"builder\"},"
    " \"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"ci\"}]},"
    /* ServiceAccount of another namespace */
    "{\"metadata\":{\"name\":\"sa-remote\",\"namespace\":\"team-b\"},"
    " \"roleRef\":{\"kind\":\"Role\",\"name\":\"reader\"},"
    " \"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"ci\",\"namespace\":\"team-a\"}]},"
    /* kinds are compared exactly: lowercase `user` never applies */
    "{\"metadata\":{\"name\":\"bad-kind\",\"namespace\":\"team-a\"},"
    " \"roleRef\":{\"kind\":\"Role\",\"name\":\"never\"},"
    " \"subjects\":[{\"kind\":\"user\",\"name\":\"alice\"}]},"
    /* a roleRef of another kind is left out */
    "{\"metadata\":{\"name\":\"odd-ref\",\"namespace\":\"team-a\"},"
    " \"roleRef\":{\"kind\":\"Something\",\"name\":\"never2\"},"
    " \"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}"
    "]";

static const char CLUSTERROLEBINDINGS[] =
    "["
    "{\"metadata\":{\"name\":\"zeta\"},"
    " \"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"zeta-admin\"},"
    " \"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]},"
    "{\"metadata\":{\"name\":\"cm\"},"
    " \"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"cm-admin\"},"
    " \"subjects\":[{\"kind\":\"Group\",\"name\":\"devs\"},{\"kind\":\"User\",\"name\":\"alice\"}]}"
    ","
    /* `view` again, through a ClusterRoleBinding this time (dedup with alice-view) */
    "{\"metadata\":{\"name\":\"view-all\"},"
    " \"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"view\"},"
    " \"subjects\":[{\"kind\":\"Group\",\"name\":\"auditors\"}]},"
    /* ServiceAccount subjects of a ClusterRoleBinding need their namespace */
    "{\"metadata\":{\"name\":\"sa-ns\"},"
    " \"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"ci-cluster\"},"
    " \"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"ci\",\"namespace\":\"team-a\"}]},"
    "{\"metadata\":{\"name\":\"sa-no-ns\"},"
    " \"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"never3\"},"
    " \"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"ci\"}]},"
    /* a ClusterRoleBinding cannot reference a Role */
    "{\"metadata\":{\"name\":\"role-ref\"},"
    " \"roleRef\":{\"kind\":\"Role\",\"name\":\"never4\"},"
    " \"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}"
    "]";

static struct rbac_index *sample_index(void)
{
	json_t *rbs = parse(ROLEBINDINGS), *crbs = parse(CLUSTERROLEBINDINGS);
	struct rbac_index *ix = rbac_index_build(rbs, crbs);

	json_decref(rbs);
	json_decref(crbs);
	return ix;
}

static void test_user_subjects(void **state)
{
	struct rbac_index *ix = sample_index();

	(void)state;
	/* 8 RoleBindings minus odd-ref, 6 ClusterRoleBindings minus role-ref */
	assert_int_equal(rbac_index_bindings(ix), 12);
	/* Roles of every namespace; view only through the RoleBinding of the request's
	 * namespace; cluster roles sorted (cm-admin < view < zeta-admin) */
	expect_roles(ix, "{\"username\":\"alice\"}", "team-a", "team-a:edit,team-b:deployer",
		     "cm-admin,view,zeta-admin");
	expect_roles(ix, "{\"username\":\"alice\"}", "team-b", "team-a:edit,team-b:deployer",
		     "cm-admin,zeta-admin");
	/* cluster-scoped request: no RoleBinding gives a cluster role */
	expect_roles(ix, "{\"username\":\"alice\"}", "", "team-a:edit,team-b:deployer",
		     "cm-admin,zeta-admin");
	expect_roles(ix, "{\"username\":\"alice\"}", NULL, "team-a:edit,team-b:deployer",
		     "cm-admin,zeta-admin");
	/* an unknown user has nothing */
	expect_roles(ix, "{\"username\":\"mallory\",\"groups\":[\"system:authenticated\"]}",
		     "team-a", "", "");
	rbac_index_unref(ix);
}

static void test_group_subjects_and_dedup(void **state)
{
	struct rbac_index *ix = sample_index();

	(void)state;
	/* through the group only */
	expect_roles(ix, "{\"username\":\"bob\",\"groups\":[\"devs\"]}", "team-a",
		     "team-a:edit,team-b:deployer", "cm-admin");
	/* user and groups together: every binding found once (edit by two bindings,
	 * deployer and cm-admin through both the user and the group, view through a
	 * RoleBinding and a ClusterRoleBinding) */
	expect_roles(ix,
		     "{\"username\":\"alice\",\"groups\":[\"devs\",\"auditors\","
		     "\"system:authenticated\"]}",
		     "team-a", "team-a:edit,team-b:deployer", "cm-admin,view,zeta-admin");
	/* a group named like a user is not that user */
	expect_roles(ix, "{\"username\":\"carol\",\"groups\":[\"alice\"]}", "team-a", "", "");
	/* no username: only the groups count */
	expect_roles(ix, "{\"groups\":[\"auditors\"]}", "team-b", "", "view");
	/* no user information at all */
	expect_roles(ix, NULL, "team-a", "", "");
	expect_roles(NULL, "{\"username\":\"alice\"}", "team-a", "", "");
	rbac_index_unref(ix);
}

static void test_service_account_subjects(void **state)
{
	struct rbac_index *ix = sample_index();

	(void)state;
	/* sa-local (binding's namespace), sa-remote (explicit namespace), sa-ns (cluster);
	 * sa-no-ns never applies */
	expect_roles(ix, "{\"username\":\"system:serviceaccount:team-a:ci\"}", "team-a",
		     "team-a:builder,team-b:reader", "ci-cluster");
	/* the same name in another namespace is another account */
	expect_roles(ix, "{\"username\":\"system:serviceaccount:team-b:ci\"}", "team-b", "", "");
	/* a User subject does not match a service account by its short name */
	expect_roles(ix, "{\"username\":\"ci\"}", "team-a", "", "");
	rbac_index_unref(ix);
}

static void test_malformed_bindings(void **state)
{
	json_t *rbs =
	    parse("[{\"metadata\":{\"name\":\"no-ns\"},\"roleRef\":{\"kind\":\"Role\",\"name\":"
		  "\"r\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"u\"}]},"
		  "{\"metadata\":{\"name\":\"no-ref\",\"namespace\":\"n\"},"
		  "\"subjects\":[{\"kind\":\"User\",\"name\":\"u\"}]},"
		  "{\"metadata\":{\"name\":\"no-subjects\",\"namespace\":\"n\"},"
		  "\"roleRef\":{\"kind\":\"Role\",\"name\":\"r2\"}},"
		  "{\"metadata\":{\"name\":\"bad-subjects\",\"namespace\":\"n\"},"
		  "\"roleRef\":{\"kind\":\"Role\",\"name\":\"r3\"},\"subjects\":[{\"kind\":"
		  "\"User\"},{\"name\":\"u\"},{\"kind\":\"User\",\"name\":\"\"},7,"
		  "{\"kind\":\"User\",\"name\":\"u\"}]},"
		  "\"not an object\"]");
	struct rbac_index *ix = rbac_index_build(rbs, NULL);

	(void)state;
	/* bad-subjects still applies through its one good subject */
	expect_roles(ix, "{\"username\":\"u\",\"groups\":[7,\"x\"]}", "n", "n:r3", "");
	expect_roles(ix, "{\"username\":\"\"}", "n", "", "");
	rbac_index_unref(ix);
	json_decref(rbs);
}

/* ---- the cache against a fake API server ---- */

struct fake {
	atomic_bool release_lists; /* the ClusterRoleBinding list is answered */
	atomic_bool send_events;   /* the first watches send their events */
	atomic_int rb_lists, crb_lists;
	atomic_int watches;
};

static const char RB_LIST[] =
    "{\"kind\":\"RoleBindingList\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
    "\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
    "{\"metadata\":{\"name\":\"alice-edit\",\"namespace\":\"team-a\",\"resourceVersion\":\"5\"},"
    "\"roleRef\":{\"kind\":\"Role\",\"name\":\"edit\"},"
    "\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}]}";

static const char CRB_LIST[] =
    "{\"kind\":\"ClusterRoleBindingList\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
    "\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
    "{\"metadata\":{\"name\":\"alice-cm\",\"resourceVersion\":\"6\"},"
    "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"cm-admin\"},"
    "\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}]}";

/* RoleBindings: alice-edit now also for the group devs (MODIFIED), a new binding to a
 * ClusterRole (ADDED). */
static const char RB_EVENTS[] =
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":"
    "\"alice-edit\",\"namespace\":\"team-a\",\"resourceVersion\":\"11\"},\"roleRef\":{\"kind\":"
    "\"Role\",\"name\":\"edit\"},\"subjects\":[{\"kind\":\"Group\",\"name\":\"devs\"}]}}\n"
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":"
    "\"alice-view\",\"namespace\":\"team-a\",\"resourceVersion\":\"12\"},\"roleRef\":{\"kind\":"
    "\"ClusterRole\",\"name\":\"view\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}}"
    "\n";

/* ClusterRoleBindings: alice-cm deleted. */
static const char CRB_EVENTS[] =
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":"
    "\"alice-cm\",\"resourceVersion\":\"13\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":"
    "\"cm-admin\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}}\n";

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Waits (bounded) until flag is set or the server stops. */
static void wait_flag(struct httpd_conn *c, atomic_bool *flag)
{
	for (int i = 0; i < 1000 && !atomic_load(flag) && !atomic_load(&c->srv->stop); i++)
		sleep_ms(10);
}

static void fake_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	struct fake *f = ud;
	bool crb = strstr(r->path, "/clusterrolebindings") != NULL;

	if (!strstr(r->path, "/rolebindings") && !crb) {
		httpd_respond(c, 404, NULL, "{\"kind\":\"Status\",\"code\":404}");
		return;
	}
	if (!strstr(r->path, "watch=1")) {
		if (crb) {
			atomic_fetch_add(&f->crb_lists, 1);
			wait_flag(c, &f->release_lists);
			httpd_respond(c, 200, NULL, CRB_LIST);
		} else {
			atomic_fetch_add(&f->rb_lists, 1);
			httpd_respond(c, 200, NULL, RB_LIST);
		}
		return;
	}
	atomic_fetch_add(&f->watches, 1);
	httpd_stream_start(c);
	if (strstr(r->path, "resourceVersion=10")) {
		const char *ev = crb ? CRB_EVENTS : RB_EVENTS;
		wait_flag(c, &f->send_events);
		httpd_write(c, ev, strlen(ev));
	}
	httpd_wait_close(c, 20000);
}

/* Polls the cache's source for alice in team-a until it answers want (bounded). */
static bool wait_for(const struct view_roles_source *src, const char *want_roles,
		     const char *want_cluster_roles, char *got, size_t ngot)
{
	json_t *ui = parse("{\"username\":\"alice\",\"groups\":[\"devs\"]}");
	bool ok = false;

	for (int i = 0; i < 500 && !ok; i++) {
		json_t *roles = NULL, *cluster_roles = NULL;
		struct gv_err err = {0};
		if (src->lookup(src->ud, ui, "team-a", &roles, &cluster_roles, &err) == GV_OK) {
			char *r = joined(roles), *cr = joined(cluster_roles);
			ok = !strcmp(r, want_roles) && !strcmp(cr, want_cluster_roles);
			snprintf(got, ngot, "[%s] [%s]", r, cr);
			free(r);
			free(cr);
		} else {
			snprintf(got, ngot, "error: %s", err.msg);
		}
		json_decref(roles);
		json_decref(cluster_roles);
		if (!ok)
			sleep_ms(10);
	}
	json_decref(ui);
	return ok;
}

static void test_cache_list_and_watch(void **state)
{
	struct fake f = {0};
	struct httpd *srv = httpd_start(fake_handler, &f, NULL);
	struct kube_config cfg = {0};
	struct kube_client *c;
	struct rbac_cache *rc = NULL;
	const struct view_roles_source *src;
	json_t *roles = (json_t *)1, *cluster_roles = (json_t *)1;
	struct gv_err err = {0};
	char server[64], got[256];
	uint64_t gen;

	(void)state;
	snprintf(server, sizeof(server), "http://127.0.0.1:%d", srv->port);
	cfg.server = server;
	c = kube_client_new(&cfg, &err);
	assert_non_null(c);
	kube_client_set_timeouts(c, 2000, 5000, 30);
	assert_int_equal(rbac_cache_start(c, &rc, &err), GV_OK);
	src = rbac_cache_source(rc);

	/* The RoleBindings are listed but not the ClusterRoleBindings: not ready. */
	for (int i = 0; i < 500 && !atomic_load(&f.crb_lists); i++)
		sleep_ms(10);
	assert_int_equal(atomic_load(&f.crb_lists), 1);
	assert_false(rbac_cache_ready(rc));
	assert_false(src->ready(src->ud));
	assert_null(rbac_cache_index(rc));
	assert_int_equal(rbac_cache_generation(rc), 0);
	assert_int_equal(src->lookup(src->ud, NULL, "team-a", &roles, &cluster_roles, &err),
			 GV_ENOENT);
	assert_null(roles);
	assert_null(cluster_roles);
	assert_string_equal(err.msg, "RoleBindings and ClusterRoleBindings not listed yet");

	/* Both listed: ready, from the lists. */
	atomic_store(&f.release_lists, true);
	if (!wait_for(src, "team-a:edit", "cm-admin", got, sizeof(got)))
		fail_msg("after the lists: %s", got);
	assert_true(rbac_cache_ready(rc));
	assert_true(src->ready(src->ud));
	gen = rbac_cache_generation(rc);
	assert_true(gen >= 1);

	/* Watch events: alice-edit now through the group, alice-view added (a ClusterRole in
	 * team-a), alice-cm deleted. */
	atomic_store(&f.send_events, true);
	if (!wait_for(src, "team-a:edit", "view", got, sizeof(got)))
		fail_msg("after the watch events: %s", got);
	assert_true(rbac_cache_generation(rc) > gen);
	{
		/* alice without the group devs lost edit with the MODIFIED event */
		struct rbac_index *ix = rbac_cache_index(rc);
		expect_roles(ix, "{\"username\":\"alice\"}", "team-a", "", "view");
		expect_roles(ix, "{\"username\":\"alice\"}", "team-b", "", "");
		rbac_index_unref(ix);
	}
	/* Each collection listed once: events are applied, not relisted. */
	assert_int_equal(atomic_load(&f.rb_lists), 1);
	assert_int_equal(atomic_load(&f.crb_lists), 1);

	rbac_cache_stop(rc);
	kube_client_free(c);
	httpd_stop(srv);
}

static void test_cache_unreachable(void **state)
{
	struct kube_config cfg = {.server = (char *)"http://127.0.0.1:1"};
	struct kube_client *c = kube_client_new(&cfg, NULL);
	struct rbac_cache *rc = NULL;

	(void)state;
	assert_int_equal(rbac_cache_start(c, &rc, NULL), GV_OK);
	sleep_ms(200);
	assert_false(rbac_cache_ready(rc));
	rbac_cache_stop(rc);
	kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_user_subjects),
	    cmocka_unit_test(test_group_subjects_and_dedup),
	    cmocka_unit_test(test_service_account_subjects),
	    cmocka_unit_test(test_malformed_bindings),
	    cmocka_unit_test(test_cache_list_and_watch),
	    cmocka_unit_test(test_cache_unreachable),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
