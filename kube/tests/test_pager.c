/*
 * test_pager.c - kube_pager and kube_list over the test transport
 * (kube_client_new_transport): pages and continue tokens, restarts on
 * 410 Gone, metadata-only and text pages, Status errors, connection
 * failures and retries; listings resumed from a token, limits changed
 * along the way, pages taken out of the pager.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/json.h"
#include "kube/kube.h"

#include "common/banned.h"

/* A collection of 5 ConfigMaps served in pages; gone: 410s to answer to continue tokens. */
struct server {
	int gone;
	int fail; /* 503s to answer first */
	int down; /* connection failures to answer first */
	char log[8][256];
	int nlog;
	char accept[256];
};

static void serve(void *ud, struct kube_exchange *x)
{
	struct server *s = ud;
	const char *q = strchr(x->path, '?'), *c;
	int limit = 0, from = 0;

	if (s->nlog < 8)
		snprintf(s->log[s->nlog++], sizeof(s->log[0]), "%s %s", x->method, x->path);
	snprintf(s->accept, sizeof(s->accept), "%s", x->accept);
	if (s->down > 0) {
		s->down--;
		x->http = 0;
		return;
	}
	if (s->fail > 0) {
		s->fail--;
		x->http = 503;
		gv_buf_adds(&x->response, "{\"kind\":\"Status\",\"reason\":\"ServiceUnavailable\","
					  "\"message\":\"try later\"}");
		return;
	}
	if (!strncmp(x->path, "/api/v1/pods", 12)) {
		/* not a list object; or a list without items */
		x->http = 200;
		gv_buf_adds(&x->response, strstr(x->path, "continue=")
					      ? "{\"kind\":\"PodList\",\"metadata\":{}}"
					      : "[{\"kind\":\"Pod\"}]");
		return;
	}
	if (strncmp(x->path, "/api/v1/configmaps", 18)) {
		x->http = 404;
		gv_buf_adds(&x->response, "{\"kind\":\"Status\",\"reason\":\"NotFound\","
					  "\"message\":\"no such thing\"}");
		return;
	}
	if (q && (c = strstr(q, "limit=")))
		limit = (int)strtol(c + 6, NULL, 10);
	if (q && (c = strstr(q, "continue=c")))
		from = (int)strtol(c + 10, NULL, 10);
	if (from && s->gone > 0) {
		s->gone--;
		x->http = 410;
		gv_buf_adds(&x->response, "{\"kind\":\"Status\",\"reason\":\"Expired\","
					  "\"message\":\"too old resource version\"}");
		return;
	}
	x->http = 200;
	gv_buf_adds(&x->response, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
				  "\"metadata\":{\"resourceVersion\":\"42\"");
	if (limit && from + limit < 5)
		gv_buf_addf(&x->response, ",\"continue\":\"c%d\"", from + limit);
	gv_buf_adds(&x->response, "},\"items\":[");
	for (int i = from; i < 5 && (!limit || i < from + limit); i++)
		gv_buf_addf(&x->response, "%s{\"metadata\":{\"name\":\"cm%d\"}}",
			    i > from ? "," : "", i);
	gv_buf_adds(&x->response, "]}");
}

static int collect(const json_t *item, void *ud)
{
	struct gv_buf *b = ud;

	gv_buf_addf(b, "%s%s/%s/%s", b->len ? " " : "",
		    json_string_value(json_object_get(item, "apiVersion")),
		    json_string_value(json_object_get(item, "kind")),
		    json_string_value(json_object_get(json_object_get(item, "metadata"), "name")));
	return 0;
}

static void test_list(void **state)
{
	struct server s = {0};
	struct kube_client *c = kube_client_new_transport(serve, &s);
	struct gv_buf b = {0};
	struct gv_err err = {0};
	char *rv = NULL;

	(void)state;
	assert_int_equal(
	    kube_list(c, "/api/v1/configmaps?labelSelector=a", 2, collect, &b, &rv, &err), GV_OK);
	assert_string_equal(gv_buf_str(&b), "v1/ConfigMap/cm0 v1/ConfigMap/cm1 v1/ConfigMap/cm2 "
					    "v1/ConfigMap/cm3 v1/ConfigMap/cm4");
	assert_string_equal(rv, "42");
	assert_int_equal(s.nlog, 3);
	assert_string_equal(s.log[0], "GET /api/v1/configmaps?labelSelector=a&limit=2");
	assert_string_equal(s.log[1], "GET /api/v1/configmaps?labelSelector=a&limit=2&continue=c2");
	assert_string_equal(s.accept, "application/json");
	free(rv);

	/* a 410 on a continue token starts over; too many give up */
	gv_buf_reset(&b);
	s.gone = 1;
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 3, collect, &b, NULL, &err), GV_OK);
	assert_string_equal(gv_buf_str(&b), "v1/ConfigMap/cm0 v1/ConfigMap/cm1 v1/ConfigMap/cm2 "
					    "v1/ConfigMap/cm0 v1/ConfigMap/cm1 v1/ConfigMap/cm2 "
					    "v1/ConfigMap/cm3 v1/ConfigMap/cm4");
	s.gone = 100;
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 3, collect, &b, NULL, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "410 Expired: too old resource version"));
	s.gone = 0;
	gv_err_clear(&err);

	/* Status errors and connection failures, retried when the client retries */
	assert_int_equal(kube_list(c, "/api/v1/secrets", 3, collect, &b, NULL, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "404 NotFound: no such thing"));
	gv_err_clear(&err);
	s.fail = 1;
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 0, NULL, NULL, NULL, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "503 ServiceUnavailable: try later"));
	gv_err_clear(&err);
	s.down = 1;
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 0, NULL, NULL, NULL, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "connection refused"));
	kube_client_set_retries(c, 2, 1, 1);
	s.fail = 1;
	s.down = 1;
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 0, NULL, NULL, NULL, &err), GV_OK);
	gv_buf_release(&b);
	kube_client_free(c);
}

/* A child client sends through its parent and counts its own requests. */
static void test_child(void **state)
{
	struct server s = {.fail = 1};
	struct kube_client *c = kube_client_new_transport(serve, &s);
	struct kube_client *a = kube_client_new_child(c), *b = kube_client_new_child(a);
	struct gv_err err = {0};
	json_t *out = NULL;

	(void)state;
	kube_client_set_retries(c, 2, 1, 1);
	assert_int_equal(kube_list(a, "/api/v1/configmaps", 2, NULL, NULL, NULL, &err), GV_OK);
	assert_int_equal(kube_request(b, "GET", "/api/v1/configmaps", NULL, &out, NULL, &err),
			 GV_OK);
	assert_int_equal(json_array_size(json_object_get(out, "items")), 5);
	json_decref(out);
	assert_int_equal(kube_client_requests(a), 3);
	assert_int_equal(kube_client_requests(b), 1);
	assert_int_equal(kube_client_requests(c), 4);
	assert_int_equal(s.nlog, 5); /* and one retry of a 503 */
	kube_client_free(b);
	kube_client_free(a);
	kube_client_free(c);
}

static void test_pager(void **state)
{
	struct server s = {.gone = 1};
	struct kube_client *c = kube_client_new_transport(serve, &s);
	struct kube_list_options o = {.limit = 2, .metadata = true, .text = true};
	struct kube_pager *p = kube_pager_new(c, "/api/v1/configmaps", &o);
	struct kube_page *pg;
	struct gv_buf b = {0};
	struct gv_err err = {0};
	unsigned restarts = 0;

	(void)state;
	while (!kube_pager_next(p, &pg, NULL, &err) && pg) {
		assert_non_null(pg->head);
		assert_null(pg->list);
		assert_string_equal(pg->api_version, "v1");
		assert_string_equal(pg->item_kind, "ConfigMap");
		restarts += pg->restarted;
		if (pg->restarted)
			assert_int_equal(pg->index, 0);
		for (size_t i = 0; i < pg->nspans; i++) {
			json_t *item =
			    gv_json_parse(pg->text.data + pg->spans[i].off, pg->spans[i].len, NULL);

			assert_non_null(item);
			assert_null(json_object_get(item, "kind"));
			gv_buf_addf(&b, "%s%s", b.len ? " " : "",
				    json_string_value(json_object_get(
					json_object_get(item, "metadata"), "name")));
			json_decref(item);
		}
	}
	assert_string_equal(gv_buf_str(&b), "cm0 cm1 cm0 cm1 cm2 cm3 cm4");
	assert_int_equal(restarts, 1);
	assert_int_equal(kube_pager_requests(p), 5);
	assert_string_equal(kube_pager_resource_version(p), "42");
	assert_non_null(strstr(s.accept, "as=PartialObjectMetadataList"));
	/* done: no further request */
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_null(pg);
	assert_int_equal(kube_pager_requests(p), 5);
	kube_pager_free(p);

	/* stopped after the first page */
	p = kube_pager_new(c, "/api/v1/configmaps", &(struct kube_list_options){.limit = 2});
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_non_null(pg);
	assert_int_equal(json_array_size(json_object_get(pg->list, "items")), 2);
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(pg->list, "items"), 0), "kind")),
			    "ConfigMap");
	kube_pager_stop(p);
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_null(pg);
	kube_pager_free(p);

	/* no restart allowed */
	s.gone = 1;
	p = kube_pager_new(c, "/api/v1/configmaps",
			   &(struct kube_list_options){.limit = 2, .max_restarts = -1});
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_ENET);
	assert_null(pg);
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_null(pg);
	kube_pager_free(p);
	gv_buf_release(&b);
	kube_client_free(c);
}

/* The names of a parsed page's items, space-separated, into b. */
static void names(struct gv_buf *b, const struct kube_page *pg)
{
	const json_t *item;
	size_t i;

	gv_buf_reset(b);
	json_array_foreach(json_object_get(pg->list, "items"), i, item) gv_buf_addf(
	    b, "%s%s", b->len ? " " : "",
	    json_string_value(json_object_get(json_object_get(item, "metadata"), "name")));
}

/*
 * A listing resumed from a continue token, its page size changed along
 * the way, its next token read, its pages taken out; restarts on 410 from
 * a resumed token.
 */
static void test_pager_resume(void **state)
{
	struct server s = {0};
	struct kube_client *c = kube_client_new_transport(serve, &s);
	struct kube_list_options o = {.limit = 2, .cont = "c2"};
	struct kube_pager *p = kube_pager_new(c, "/api/v1/configmaps?labelSelector=a", &o);
	struct kube_page *pg, held = {0};
	struct gv_buf b = {0};
	struct gv_err err = {0};
	struct kube_status st;

	(void)state;
	/* the starting token is the pager's own copy */
	o.cont = NULL;
	assert_string_equal(kube_pager_continue(p), "c2");
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_non_null(pg);
	assert_string_equal(s.log[0], "GET /api/v1/configmaps?labelSelector=a&limit=2&continue=c2");
	assert_false(pg->restarted);
	assert_int_equal(pg->index, 0);
	names(&b, pg);
	assert_string_equal(gv_buf_str(&b), "cm2 cm3");
	assert_string_equal(kube_pager_continue(p), "c4");

	/* taken: the caller holds it while the pager fetches the next one */
	kube_pager_take(p, &held);
	assert_non_null(held.list);
	assert_string_equal(held.item_kind, "ConfigMap");
	kube_pager_set_limit(p, 1);
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_non_null(pg);
	assert_ptr_not_equal(pg->list, held.list);
	assert_string_equal(s.log[1], "GET /api/v1/configmaps?labelSelector=a&limit=1&continue=c4");
	names(&b, pg);
	assert_string_equal(gv_buf_str(&b), "cm4");
	assert_int_equal(pg->index, 1);
	assert_null(kube_pager_continue(p)); /* complete */
	names(&b, &held);
	assert_string_equal(gv_buf_str(&b), "cm2 cm3");
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(held.list, "items"), 1), "kind")),
			    "ConfigMap");
	kube_page_release(&held);
	assert_null(held.list);
	kube_page_release(&held); /* released twice: nothing left to free */
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_null(pg);
	/* nothing to take after the end */
	kube_pager_take(p, &held);
	assert_null(held.list);
	assert_null(held.head);
	kube_pager_free(p);

	/* a taken text page keeps its text, head and spans after the pager is gone */
	p = kube_pager_new(c, "/api/v1/configmaps",
			   &(struct kube_list_options){.limit = 3, .text = true});
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	kube_pager_take(p, &held);
	kube_pager_free(p);
	assert_int_equal(held.nspans, 3);
	assert_non_null(held.head);
	assert_string_equal(held.item_kind, "ConfigMap");
	assert_string_equal(held.api_version, "v1");
	assert_memory_equal(held.text.data + held.spans[2].off, "{\"metadata\":{\"name\":\"cm2\"}}",
			    held.spans[2].len);
	kube_page_release(&held);

	/* the starting token expired: the listing starts over, at the limit now set */
	s.gone = 1;
	s.nlog = 0;
	p = kube_pager_new(c, "/api/v1/configmaps", &(struct kube_list_options){.cont = "c3"});
	kube_pager_set_limit(p, 4);
	assert_int_equal(kube_pager_next(p, &pg, &st, &err), GV_OK);
	assert_non_null(pg);
	assert_int_equal(s.nlog, 2);
	assert_string_equal(s.log[0], "GET /api/v1/configmaps?limit=4&continue=c3");
	assert_string_equal(s.log[1], "GET /api/v1/configmaps?limit=4");
	assert_true(pg->restarted);
	assert_int_equal(pg->index, 0);
	names(&b, pg);
	assert_string_equal(gv_buf_str(&b), "cm0 cm1 cm2 cm3");
	assert_string_equal(kube_pager_continue(p), "c4");
	assert_string_equal(kube_pager_resource_version(p), "42");
	assert_int_equal(kube_pager_next(p, &pg, &st, &err), GV_OK);
	assert_false(pg->restarted);
	assert_int_equal(pg->index, 1);
	kube_pager_free(p);

	/* no restart allowed: the error leaves the token that failed */
	s.gone = 1;
	p = kube_pager_new(
	    c, "/api/v1/configmaps",
	    &(struct kube_list_options){.limit = 2, .cont = "c2", .max_restarts = -1});
	assert_int_equal(kube_pager_next(p, &pg, &st, &err), GV_ENET);
	assert_null(pg);
	assert_int_equal(st.http, 410);
	assert_string_equal(st.reason, "Expired");
	assert_string_equal(kube_pager_continue(p), "c2");
	kube_pager_free(p);
	gv_err_clear(&err);

	/* an empty starting token is the first page */
	s.nlog = 0;
	p = kube_pager_new(c, "/api/v1/configmaps", &(struct kube_list_options){.cont = ""});
	assert_null(kube_pager_continue(p));
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_string_equal(s.log[0], "GET /api/v1/configmaps");
	kube_pager_free(p);
	gv_buf_release(&b);
	kube_client_free(c);
}

/* A body that is not a list object is an error; a list without items is an empty page. */
static void test_pager_not_a_list(void **state)
{
	struct server s = {0};
	struct kube_client *c = kube_client_new_transport(serve, &s);
	struct kube_pager *p;
	struct kube_page *pg;
	struct gv_err err = {0};

	(void)state;
	for (int text = 0; text < 2; text++) {
		p = kube_pager_new(c, "/api/v1/pods", &(struct kube_list_options){.text = text});
		assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_ENET);
		assert_null(pg);
		assert_non_null(strstr(err.msg, "GET /api/v1/pods: response is not a list: "));
		if (!text)
			assert_non_null(strstr(err.msg, "'{' expected"));
		gv_err_clear(&err);
		kube_pager_free(p);
	}
	p = kube_pager_new(c, "/api/v1/pods", &(struct kube_list_options){.cont = "x"});
	assert_int_equal(kube_pager_next(p, &pg, NULL, &err), GV_OK);
	assert_non_null(pg);
	assert_int_equal(json_array_size(json_object_get(pg->list, "items")), 0);
	assert_null(kube_pager_continue(p));
	kube_pager_free(p);
	kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_list),	 cmocka_unit_test(test_pager),
	    cmocka_unit_test(test_pager_resume), cmocka_unit_test(test_pager_not_a_list),
	    cmocka_unit_test(test_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
