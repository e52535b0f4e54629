/*
 * Unit tests for background/context.c against the in-process HTTP server of
 * kube/tests/httpd.h standing in for the API server and a service: configMap
 * from the watched cache (hit, miss, variables in the name), apiCall GET and
 * POST with jmesPath and default, the per-session cache, a timeout, an
 * oversize and a non-JSON answer, globalReference of both kinds, the CEL
 * http library's calls (hooks.http),
 * imageRegistry's errors (unreachable registry, providers), the CEL
 * image.GetMetadata of view/celhost.h through that loader (a registry's
 * answer in Kyverno's shape, its failures), and the rule result a failure
 * gives through engine_evaluate().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include "kube/tests/httpd.h"
#include "background/context.h"
#include "certs/certs.h"
#include "engine/cel/cel.h"
#include "view/celhost.h"

#include "common/banned.h"

struct srv {
	atomic_int pods_gets;
	atomic_int slow_gets;
};

/* A registry's image team/app:v1 (set before a test asks for it): its manifest and config. */
static char img_manifest[1024], img_config_path[128];
static const char img_config[] = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":"
				 "{\"User\":\"1000\"},\"rootfs\":{\"type\":\"layers\","
				 "\"diff_ids\":[]}}";
static atomic_int img_v2_gets; /* GETs of the unknown tag v2 */

static void handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	struct srv *s = ud;

	if (img_manifest[0] && !strcmp(r->path, "/v2/team/app/manifests/v1")) {
		httpd_respond(c, 200, NULL, img_manifest);
		return;
	}
	if (img_manifest[0] && !strcmp(r->path, "/v2/team/app/manifests/v2"))
		atomic_fetch_add(&img_v2_gets, 1); /* then the 404 below */
	if (img_manifest[0] && !strcmp(r->path, img_config_path)) {
		httpd_respond(c, 200, NULL, img_config);
		return;
	}
	if (strstr(r->path, "watch=1")) {
		httpd_stream_start(c);
		httpd_wait_close(c, 20000);
		return;
	}
	if (!strncmp(r->path, "/api/v1/configmaps", 18)) {
		if (strstr(r->path, "fieldSelector=metadata.name%3Dallowed") ||
		    !strstr(r->path, "fieldSelector"))
			httpd_respond(
			    c, 200, NULL,
			    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
			    "{\"resourceVersion\":\"5\"},\"items\":[{\"metadata\":{\"name\":"
			    "\"allowed\",\"namespace\":\"team\",\"resourceVersion\":\"4\"},"
			    "\"data\":{\"registries\":\"a.io,b.io\"}}]}");
		else
			httpd_respond(
			    c, 200, NULL,
			    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
			    "{\"resourceVersion\":\"5\"},\"items\":[]}");
		return;
	}
	if (!strcmp(r->path, "/api/v1/namespaces/team/pods")) {
		atomic_fetch_add(&s->pods_gets, 1);
		httpd_respond(c, 200, NULL, "{\"kind\":\"PodList\",\"items\":[{},{},{}]}");
		return;
	}
	if (!strcmp(r->path, "/echo") && !strcmp(r->method, "POST")) {
		char *b = gv_xasprintf("{\"got\":%s,\"auth\":\"%s\"}", r->body, r->auth);
		httpd_respond(c, 200, NULL, b);
		free(b);
		return;
	}
	if (!strcmp(r->path, "/slow")) {
		atomic_fetch_add(&s->slow_gets, 1);
		httpd_wait_close(c, 20000); /* until the client gives up */
		httpd_respond(c, 200, NULL, "{}");
		return;
	}
	if (!strcmp(r->path, "/big")) {
		char *b = gv_xmalloc(8192 + 16);
		memset(b, ' ', 8192);
		memcpy(b + 8192, "{}", 3);
		httpd_respond(c, 200, NULL, b);
		free(b);
		return;
	}
	if (!strcmp(r->path, "/notjson")) {
		httpd_respond(c, 200, NULL, "hello");
		return;
	}
	if (!strncmp(r->path, "/apis/kyverno.io/v2alpha1/globalcontextentries?", 47)) {
		httpd_respond(
		    c, 200, NULL,
		    "{\"kind\":\"GlobalContextEntryList\",\"apiVersion\":\"kyverno.io/v2alpha1\","
		    "\"metadata\":{\"resourceVersion\":\"7\"},\"items\":["
		    "{\"metadata\":{\"name\":\"deps\",\"resourceVersion\":\"6\"},\"spec\":"
		    "{\"kubernetesResource\":{\"group\":\"apps\",\"version\":\"v1\",\"resource\":"
		    "\"deployments\",\"namespace\":\"team\"}}},"
		    "{\"metadata\":{\"name\":\"podcount\",\"resourceVersion\":\"6\"},\"spec\":"
		    "{\"apiCall\":{\"urlPath\":\"/api/v1/namespaces/team/pods\","
		    "\"refreshInterval\":\"1h\"}}}]}");
		return;
	}
	if (!strncmp(r->path, "/apis/apps/v1/namespaces/team/deployments?", 42)) {
		httpd_respond(
		    c, 200, NULL,
		    "{\"kind\":\"DeploymentList\",\"apiVersion\":\"apps/v1\",\"metadata\":"
		    "{\"resourceVersion\":\"9\"},\"items\":[{\"metadata\":{\"name\":\"web\","
		    "\"namespace\":\"team\"}},{\"metadata\":{\"name\":\"db\","
		    "\"namespace\":\"team\"}}]}");
		return;
	}
	httpd_respond(
	    c, 404, NULL,
	    "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\","
	    "\"message\":\"the server could not find the requested resource\",\"code\":404}");
}

struct fixture {
	struct srv s;
	struct httpd *srv;
	char server[64];
	struct kube_config cfg;
	struct kube_client *client;
	struct context_loader *l;
	const struct view_context *src;
};

static int setup(void **state)
{
	struct fixture *f = gv_xcalloc(1, sizeof(*f));
	struct context_options o = {0};

	f->srv = httpd_start(handler, &f->s, NULL);
	snprintf(f->server, sizeof(f->server), "http://127.0.0.1:%d", f->srv->port);
	f->cfg.server = f->server;
	f->cfg.token = (char *)"sekret";
	f->client = kube_client_new(&f->cfg, NULL);
	assert_non_null(f->client);
	o.client = f->client;
	o.kube = &f->cfg;
	/* long enough for a loaded machine and a sanitizer build; /slow outlasts it */
	o.call_timeout_ms = 2000;
	o.max_response = 4096;
	f->l = context_loader_new(&o);
	f->src = context_loader_source(f->l);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	context_loader_free(f->l);
	kube_client_free(f->client);
	httpd_stop(f->srv);
	free(f);
	return 0;
}

static json_t *J(const char *s)
{
	json_error_t je;
	json_t *v = json_loads(s, 0, &je);
	if (!v)
		fail_msg("bad JSON in test: %s: %s", je.text, s);
	return v;
}

/* Loads one entry through freshly opened hooks; *msg gets the error. */
static enum gv_code load(struct fixture *f, const struct engine_hooks *h, const char *entry,
			 json_t **out, char *msg, size_t n)
{
	json_t *e = J(entry);
	json_t *ctx = J("{\"request\":{\"namespace\":\"team\",\"operation\":\"CREATE\"}}");
	struct gv_err err = {0};
	enum gv_code rc;

	(void)f;
	*out = NULL;
	rc = h->load_context(h->ud, e, ctx, out, &err);
	if (msg)
		snprintf(msg, n, "%s", err.msg);
	json_decref(e);
	json_decref(ctx);
	return rc;
}

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void test_config_map(void **state)
{
	struct fixture *f = *state;
	const struct engine_hooks *h = f->src->open(f->src->ud, NULL, 0);
	char msg[512];
	json_t *v;
	char *s;

	assert_int_equal(load(f, h,
			      "{\"name\":\"cm\",\"configMap\":{\"name\":\"allowed\","
			      "\"namespace\":\"{{request.namespace}}\"}}",
			      &v, msg, sizeof(msg)),
			 GV_OK);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(v, "data"), "registries")),
	    "a.io,b.io");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(v, "metadata"), "namespace")),
	    "team");
	json_decref(v);

	/* missing in another namespace: Kyverno's error, never a skip */
	assert_int_not_equal(load(f, h,
				  "{\"name\":\"cm\",\"configMap\":{\"name\":\"allowed\","
				  "\"namespace\":\"other\"}}",
				  &v, msg, sizeof(msg)),
			     GV_OK);
	assert_null(v);
	assert_string_equal(msg, "failed to retrieve config map for context entry cm: configmaps "
				 "\"allowed\" not found");
	/* a name that is not there at all */
	assert_int_not_equal(load(f, h,
				  "{\"name\":\"x\",\"configMap\":{\"name\":\"nope\",\"namespace\":"
				  "\"team\"}}",
				  &v, msg, sizeof(msg)),
			     GV_OK);
	assert_non_null(strstr(msg, "configmaps \"nope\" not found"));
	f->src->close(f->src->ud, h);

	/* the cache answers without a request: the informer's list was the only GET */
	{
		int lists = 0;
		for (int i = 0; i < httpd_count(f->srv); i++) {
			char line[512];
			httpd_logged(f->srv, i, line, sizeof(line));
			if (strstr(line, "metadata.name%3Dallowed") && !strstr(line, "watch=1"))
				lists++;
		}
		assert_int_equal(lists, 1);
	}
	(void)s;
}

static void test_config_map_templated_policy(void **state)
{
	struct fixture *f = *state;
	const char *pol =
	    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":{\"name\":"
	    "\"p\"},\"spec\":{\"rules\":[{\"name\":\"r\",\"match\":{\"any\":[{\"resources\":"
	    "{\"kinds\":[\"Pod\"]}}]},\"context\":[{\"name\":\"cm\",\"configMap\":{\"name\":"
	    "\"{{request.object.metadata.labels.cm}}\",\"namespace\":\"team\"}}],\"validate\":"
	    "{\"deny\":{\"conditions\":{\"any\":[{\"key\":\"{{request.object.spec.containers[0]."
	    "image}}\",\"operator\":\"AnyNotIn\",\"value\":\"{{cm.data.registries | split(@, "
	    "',')}}\"}]}}}}]}}";
	json_t *doc = J(pol);
	struct gv_err err = {0};
	struct engine_policy *p = engine_policy_compile(doc, &err);
	struct engine_policyset *set;
	const struct engine_hooks *h;
	struct engine_input in = {0};
	struct engine_report rep = {0};
	json_t *pod = J("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\","
			"\"namespace\":\"team\",\"labels\":{\"cm\":\"allowed\"}},\"spec\":"
			"{\"containers\":[{\"name\":\"c\",\"image\":\"a.io\"}]}}");
	json_t *bad = J("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"y\","
			"\"namespace\":\"team\",\"labels\":{\"cm\":\"missing\"}},\"spec\":"
			"{\"containers\":[{\"name\":\"c\",\"image\":\"a.io\"}]}}");

	assert_non_null(p);
	set = engine_policyset_new(&p, 1, NULL, 0);
	h = f->src->open(f->src->ud, set, 0);
	in.object = pod;
	in.hooks = h;
	if (engine_evaluate(set, &in, ENGINE_ADMISSION, &rep, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(rep.n, 1);
	if (rep.v[0].rules[0].status != ENGINE_PASS)
		fail_msg("%s", rep.v[0].rules[0].message);
	engine_report_release(&rep);

	in.object = bad;
	assert_int_equal(engine_evaluate(set, &in, ENGINE_ADMISSION, &rep, &err), GV_OK);
	assert_int_equal(rep.v[0].rules[0].status, ENGINE_ERROR);
	assert_string_equal(rep.v[0].rules[0].message,
			    "failed to check deny conditions: failed to substitute variables in "
			    "condition value: failed to resolve cm.data.registries | split(@, ',') "
			    "at path : failed to load context: failed to retrieve config map for "
			    "context entry cm: configmaps \"missing\" not found");
	engine_report_release(&rep);
	f->src->close(f->src->ud, h);

	/* a templated name makes the loader watch every ConfigMap */
	{
		bool all = false;
		for (int i = 0; i < httpd_count(f->srv); i++) {
			char line[512];
			httpd_logged(f->srv, i, line, sizeof(line));
			if (!strcmp(line, "GET /api/v1/configmaps?limit=500"))
				all = true;
		}
		assert_true(all);
	}
	engine_policyset_unref(set);
	engine_policy_unref(p);
	json_decref(doc);
	json_decref(pod);
	json_decref(bad);
}

static void test_api_call(void **state)
{
	struct fixture *f = *state;
	const struct engine_hooks *h = f->src->open(f->src->ud, NULL, 0);
	char msg[512];
	json_t *v;
	char *s;

	/* GET with jmesPath, twice: one request */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(
		    load(f, h,
			 "{\"name\":\"n\",\"apiCall\":{\"urlPath\":\"/api/v1/namespaces/"
			 "{{request.namespace}}/pods\",\"jmesPath\":\"items | "
			 "length(@)\"}}",
			 &v, msg, sizeof(msg)),
		    GV_OK);
		assert_int_equal(json_integer_value(v), 3);
		json_decref(v);
	}
	assert_int_equal(atomic_load(&f->s.pods_gets), 1);

	/* POST: data is the JSON body; gavel's token goes to the API server */
	assert_int_equal(load(f, h,
			      "{\"name\":\"p\",\"apiCall\":{\"method\":\"POST\",\"urlPath\":"
			      "\"/echo\",\"data\":[{\"key\":\"ns\",\"value\":\"{{request."
			      "namespace}}\"},{\"key\":\"n\",\"value\":2}]}}",
			      &v, msg, sizeof(msg)),
			 GV_OK);
	s = dump(v);
	assert_string_equal(s, "{\"auth\":\"Bearer sekret\",\"got\":{\"n\":2,\"ns\":\"team\"}}");
	free(s);
	json_decref(v);

	/* a service call: no token, the given headers */
	{
		char *e = gv_xasprintf(
		    "{\"name\":\"svc\",\"apiCall\":{\"method\":\"POST\",\"service\":{\"url\":"
		    "\"%s/echo\",\"headers\":[{\"key\":\"Authorization\",\"value\":\"Bearer "
		    "other\"}]},\"data\":[{\"key\":\"a\",\"value\":\"b\"}],\"jmesPath\":\"auth\"}}",
		    f->server);
		assert_int_equal(load(f, h, e, &v, msg, sizeof(msg)), GV_OK);
		assert_string_equal(json_string_value(v), "Bearer other");
		json_decref(v);
		free(e);
	}

	/* failures without a default are errors */
	assert_int_equal(load(f, h, "{\"name\":\"m\",\"apiCall\":{\"urlPath\":\"/missing\"}}", &v,
			      msg, sizeof(msg)),
			 GV_ENET);
	assert_non_null(strstr(msg, "failed to fetch data for APICall m: GET "));
	assert_non_null(strstr(msg, "HTTP 404: the server could not find the requested resource"));
	assert_int_equal(load(f, h,
			      "{\"name\":\"j\",\"apiCall\":{\"urlPath\":\"/api/v1/namespaces/team/"
			      "pods\",\"jmesPath\":\"nothere\"}}",
			      &v, msg, sizeof(msg)),
			 GV_EEVAL);
	assert_non_null(strstr(msg, "failed to apply jmespath nothere"));
	assert_int_equal(load(f, h, "{\"name\":\"t\",\"apiCall\":{\"urlPath\":\"/notjson\"}}", &v,
			      msg, sizeof(msg)),
			 GV_EINVAL);
	assert_non_null(strstr(msg, "the response is not JSON"));
	assert_int_equal(
	    load(f, h, "{\"name\":\"b\",\"apiCall\":{\"urlPath\":\"/big\"}}", &v, msg, sizeof(msg)),
	    GV_ELIMIT);
	assert_non_null(strstr(msg, "the response is larger than 4096 bytes"));
	assert_int_equal(
	    load(f, h, "{\"name\":\"x\",\"apiCall\":{\"method\":\"PUT\",\"urlPath\":\"/x\"}}", &v,
		 msg, sizeof(msg)),
	    GV_EINVAL);
	assert_non_null(strstr(msg, "method PUT is not GET or POST"));

	/* ... and the default when there is one: call failure and projection failure */
	assert_int_equal(load(f, h,
			      "{\"name\":\"m\",\"apiCall\":{\"urlPath\":\"/missing\",\"default\":"
			      "[\"d\"]}}",
			      &v, msg, sizeof(msg)),
			 GV_OK);
	s = dump(v);
	assert_string_equal(s, "[\"d\"]");
	free(s);
	json_decref(v);
	assert_int_equal(load(f, h,
			      "{\"name\":\"j\",\"apiCall\":{\"urlPath\":\"/api/v1/namespaces/team/"
			      "pods\",\"jmesPath\":\"nothere\",\"default\":0}}",
			      &v, msg, sizeof(msg)),
			 GV_OK);
	assert_int_equal(json_integer_value(v), 0);
	json_decref(v);
	f->src->close(f->src->ud, h);

	/* new hooks, new cache */
	h = f->src->open(f->src->ud, NULL, 0);
	assert_int_equal(load(f, h,
			      "{\"name\":\"n\",\"apiCall\":{\"urlPath\":\"/api/v1/namespaces/team/"
			      "pods\"}}",
			      &v, msg, sizeof(msg)),
			 GV_OK);
	json_decref(v);
	assert_int_equal(atomic_load(&f->s.pods_gets), 2);
	f->src->close(f->src->ud, h);
}

static void test_api_call_timeout(void **state)
{
	struct fixture *f = *state;
	const struct engine_hooks *h = f->src->open(f->src->ud, NULL, 0);
	char msg[512];
	json_t *v;
	struct timespec a, b;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(load(f, h, "{\"name\":\"s\",\"apiCall\":{\"urlPath\":\"/slow\"}}", &v, msg,
			      sizeof(msg)),
			 GV_ENET);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	assert_non_null(strstr(msg, "no answer within 2000 ms"));
	assert_true(ms < 10000);
	/* the failure is cached too: the same call is not made again */
	assert_int_equal(load(f, h, "{\"name\":\"s\",\"apiCall\":{\"urlPath\":\"/slow\"}}", &v, msg,
			      sizeof(msg)),
			 GV_ENET);
	assert_int_equal(atomic_load(&f->s.slow_gets), 1);
	f->src->close(f->src->ud, h);

	/* an admission deadline shorter than the call's timeout bounds it, then refuses calls */
	h = f->src->open(f->src->ud, NULL, 100);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(load(f, h, "{\"name\":\"s\",\"apiCall\":{\"urlPath\":\"/slow\"}}", &v, msg,
			      sizeof(msg)),
			 GV_ENET);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	assert_true(ms < 1500); /* the deadline, not the call's 2 s */
	assert_int_equal(load(f, h,
			      "{\"name\":\"n\",\"apiCall\":{\"urlPath\":\"/api/v1/namespaces/team/"
			      "pods\"}}",
			      &v, msg, sizeof(msg)),
			 GV_ENET);
	assert_non_null(strstr(msg, "the evaluation's deadline has passed"));
	assert_int_equal(atomic_load(&f->s.pods_gets), 0);
	f->src->close(f->src->ud, h);
}

/* An https service: trusted through caBundle only. */
static SSL_CTX *tls_ctx(const struct certs_bundle *b)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	BIO *cb = BIO_new_mem_buf(b->tls_crt, -1), *kb = BIO_new_mem_buf(b->tls_key, -1);
	X509 *crt = PEM_read_bio_X509(cb, NULL, NULL, NULL);
	EVP_PKEY *key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);

	assert_non_null(crt);
	assert_non_null(key);
	assert_int_equal(SSL_CTX_use_certificate(ctx, crt), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	X509_free(crt);
	EVP_PKEY_free(key);
	BIO_free(cb);
	BIO_free(kb);
	return ctx;
}

static void test_api_call_service_tls(void **state)
{
	struct fixture *f = *state;
	const char *ips[] = {"127.0.0.1"};
	struct certs_request req = {.ips = ips, .n_ips = 1};
	struct certs_bundle good = {0}, other = {0};
	struct srv s = {0};
	struct httpd *tls;
	SSL_CTX *ctx;
	const struct engine_hooks *h;
	char msg[512];
	json_t *v, *e;
	char *text;

	assert_int_equal(certs_ensure(&good, &req, time(NULL), NULL, NULL), GV_OK);
	assert_int_equal(certs_ensure(&other, &req, time(NULL), NULL, NULL), GV_OK);
	ctx = tls_ctx(&good);
	tls = httpd_start(handler, &s, ctx);
	h = f->src->open(f->src->ud, NULL, 0);

	e = json_pack("{s:s,s:{s:{s:s,s:s},s:s}}", "name", "svc", "apiCall", "service", "url", "",
		      "caBundle", good.ca_crt, "jmesPath", "items | length(@)");
	text = gv_xasprintf("https://127.0.0.1:%d/api/v1/namespaces/team/pods", tls->port);
	json_object_set_new(json_object_get(json_object_get(e, "apiCall"), "service"), "url",
			    json_string(text));
	free(text);
	text = json_dumps(e, JSON_COMPACT);
	assert_int_equal(load(f, h, text, &v, msg, sizeof(msg)), GV_OK);
	assert_int_equal(json_integer_value(v), 3);
	json_decref(v);
	free(text);

	/* another CA: the TLS handshake fails, the system CAs are not asked */
	json_object_set_new(json_object_get(json_object_get(e, "apiCall"), "service"), "caBundle",
			    json_string(other.ca_crt));
	text = json_dumps(e, JSON_COMPACT);
	assert_int_equal(load(f, h, text, &v, msg, sizeof(msg)), GV_ENET);
	assert_non_null(
	    strstr(msg, "failed to fetch data for APICall svc: GET https://127.0.0.1:"));
	free(text);
	json_decref(e);
	f->src->close(f->src->ud, h);
	httpd_stop(tls);
	SSL_CTX_free(ctx);
	certs_bundle_release(&good);
	certs_bundle_release(&other);
}

static void test_global_reference(void **state)
{
	struct fixture *f = *state;
	const struct engine_hooks *h = f->src->open(f->src->ud, NULL, 0);
	char msg[512];
	json_t *v = NULL;
	enum gv_code rc = GV_ENET;
	char *s;

	/* the entries are listed by the loader's thread: wait for them */
	for (int i = 0; i < 100 && rc; i++) {
		rc = load(f, h,
			  "{\"name\":\"g\",\"globalReference\":{\"name\":\"podcount\",\"jmesPath\":"
			  "\"items | length(@)\"}}",
			  &v, msg, sizeof(msg));
		if (rc)
			usleep(50 * 1000);
	}
	assert_int_equal(rc, GV_OK);
	assert_int_equal(json_integer_value(v), 3);
	json_decref(v);
	rc = GV_ENET;
	for (int i = 0; i < 100 && rc; i++) {
		rc = load(f, h,
			  "{\"name\":\"g\",\"globalReference\":{\"name\":\"deps\",\"jmesPath\":"
			  "\"[].metadata.name\"}}",
			  &v, msg, sizeof(msg));
		if (rc)
			usleep(50 * 1000);
	}
	assert_int_equal(rc, GV_OK);
	s = dump(v);
	assert_string_equal(s, "[\"db\",\"web\"]");
	free(s);
	json_decref(v);
	assert_int_equal(load(f, h, "{\"name\":\"g\",\"globalReference\":{\"name\":\"nope\"}}", &v,
			      msg, sizeof(msg)),
			 GV_ENET);
	assert_string_equal(msg, "failed to find globalcontext entry nope");
	f->src->close(f->src->ud, h);
}

static void test_image_registry(void **state)
{
	struct fixture *f = *state;
	const struct engine_hooks *h = f->src->open(f->src->ud, NULL, 0);
	char msg[512];
	json_t *v;

	/* nothing listens on port 1: the rule's error, with Kyverno's wording */
	assert_int_equal(
	    load(f, h, "{\"name\":\"i\",\"imageRegistry\":{\"reference\":\"127.0.0.1:1/x:1\"}}", &v,
		 msg, sizeof(msg)),
	    GV_ENET);
	assert_true(!strncmp(msg, "failed to fetch image descriptor: 127.0.0.1:1/x:1, error: ",
			     strlen("failed to fetch image descriptor: 127.0.0.1:1/x:1, error: ")));
	/* cloud credential providers: refused, never ignored */
	assert_int_equal(load(f, h,
			      "{\"name\":\"i\",\"imageRegistry\":{\"reference\":\"nginx\","
			      "\"imageRegistryCredentials\":{\"providers\":[\"amazon\"]}}}",
			      &v, msg, sizeof(msg)),
			 GV_EINVAL);
	assert_non_null(strstr(msg, "does not evaluate imageRegistryCredentials.providers"));
	/* no reference */
	assert_int_equal(load(f, h, "{\"name\":\"i\",\"imageRegistry\":{}}", &v, msg, sizeof(msg)),
			 GV_EINVAL);
	f->src->close(f->src->ud, h);
}

/* The value of expression src through a cluster CEL host (view/celhost.h) on hooks h. */
static json_t *cel_through(const struct engine_hooks *h, const char *src, char *msg, size_t n)
{
	struct view_cel_host vh;
	struct cel_parse_error pe = {0};
	struct cel_program *p = cel_compile(src, strlen(src), 0, &pe);
	struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	struct cel_value v;
	json_t *out;

	assert_non_null(p);
	view_cel_host_init(&vh, h, "test");
	cel_eval_set_host(ev, &vh.host);
	cel_eval_run(ev, p, &v);
	msg[0] = '\0';
	out = cel_value_to_json(&v);
	if (v.kind == CEL_ERROR)
		snprintf(msg, n, "%s", v.v.err->msg);
	cel_eval_free(ev);
	cel_program_free(p);
	view_cel_host_release(&vh);
	return out;
}

/*
 * image.GetMetadata in serve and scans: the imageRegistry loader's fetch,
 * answered in the shape of Kyverno's image data; a registry failure is the
 * expression's error.
 */
static void test_image_metadata_cel(void **state)
{
	struct fixture *f = *state;
	const struct engine_hooks *h = f->src->open(f->src->ud, NULL, 0);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdn = 0;
	char cdig[GV_SHA256_TEXT_LEN], mdig[GV_SHA256_TEXT_LEN], msg[512], *src;
	json_t *v;

	EVP_Digest(img_config, strlen(img_config), md, &mdn, EVP_sha256(), NULL);
	gv_sha256_text(md, cdig);
	snprintf(img_config_path, sizeof(img_config_path), "/v2/team/app/blobs/%s", cdig);
	snprintf(img_manifest, sizeof(img_manifest),
		 "{\"schemaVersion\":2,\"mediaType\":\"application/"
		 "vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/"
		 "vnd.oci.image.config.v1+json\",\"size\":%zu,\"digest\":\"%s\"},\"layers\":[],"
		 "\"annotations\":{\"org.opencontainers.image.base.name\":\"distroless\"}}",
		 strlen(img_config), cdig);
	EVP_Digest(img_manifest, strlen(img_manifest), md, &mdn, EVP_sha256(), NULL);
	gv_sha256_text(md, mdig);

	src = gv_xasprintf("[image.GetMetadata('127.0.0.1:%d/team/app:v1'), "
			   "image.getMetadata('127.0.0.1:%d/team/app:v1').config.config.User]",
			   f->srv->port, f->srv->port);
	v = cel_through(h, src, msg, sizeof(msg));
	assert_string_equal(msg, "");
	assert_non_null(v);
	{
		const json_t *d = json_array_get(v, 0);
		char *want = gv_xasprintf("127.0.0.1:%d/team/app@%s", f->srv->port, mdig);
		char *reg = gv_xasprintf("127.0.0.1:%d", f->srv->port);
		char *img = gv_xasprintf("%s/team/app:v1", reg);
		const char *k;
		const json_t *x;
		struct gv_buf keys = {0};

		assert_string_equal(json_string_value(json_array_get(v, 1)), "1000");
		json_object_foreach((json_t *)d, k, x) gv_buf_addf(&keys, "%s ", k);
		/* Kyverno's image data: config, not the legacy entry's configData */
		assert_non_null(strstr(gv_buf_str(&keys), "config "));
		assert_null(strstr(gv_buf_str(&keys), "configData"));
		assert_null(strstr(gv_buf_str(&keys), "manifestList"));
		assert_null(strstr(gv_buf_str(&keys), "imageIndex"));
		assert_string_equal(json_string_value(json_object_get(d, "image")), img);
		assert_string_equal(json_string_value(json_object_get(d, "resolvedImage")), want);
		assert_string_equal(json_string_value(json_object_get(d, "registry")), reg);
		assert_string_equal(json_string_value(json_object_get(d, "repository")),
				    "team/app");
		assert_string_equal(json_string_value(json_object_get(d, "identifier")), "v1");
		assert_string_equal(json_string_value(json_object_get(d, "tag")), "v1");
		assert_string_equal(json_string_value(json_object_get(d, "digest")), mdig);
		assert_string_equal(
		    json_string_value(json_object_get(
			json_object_get(json_object_get(d, "manifest"), "annotations"),
			"org.opencontainers.image.base.name")),
		    "distroless");
		assert_string_equal(json_string_value(json_object_get(json_object_get(d, "config"),
								      "architecture")),
				    "amd64");
		gv_buf_release(&keys);
		free(img);
		free(reg);
		free(want);
	}
	json_decref(v);
	free(src);

	/*
	 * an unknown tag (404) and an unreachable registry: errors, never
	 * values; one host asks the registry once for a failing reference
	 */
	src = gv_xasprintf("image.GetMetadata('127.0.0.1:%d/team/app:v2') != null || "
			   "image.GetMetadata('127.0.0.1:%d/team/app:v2') != null",
			   f->srv->port, f->srv->port);
	atomic_store(&img_v2_gets, 0);
	v = cel_through(h, src, msg, sizeof(msg));
	assert_null(v);
	assert_int_equal(atomic_load(&img_v2_gets), 1);
	assert_true(
	    !strncmp(msg, "failed to get image data: failed to fetch image descriptor: ",
		     strlen("failed to get image data: failed to fetch image descriptor: ")));
	assert_non_null(strstr(msg, "manifest unknown"));
	free(src);
	v = cel_through(h, "image.GetMetadata('127.0.0.1:1/x:1') == null", msg, sizeof(msg));
	assert_null(v);
	assert_true(!strncmp(msg,
			     "failed to get image data: failed to fetch image descriptor: "
			     "127.0.0.1:1/x:1, error: ",
			     strlen("failed to get image data: failed to fetch image descriptor: "
				    "127.0.0.1:1/x:1, error: ")));
	/* a reference the loader would substitute in: refused as written */
	v = cel_through(h, "image.GetMetadata('{{ request.object }}')", msg, sizeof(msg));
	assert_null(v);
	assert_non_null(strstr(msg, "invalid image reference"));
	/* no loader: an error too */
	v = cel_through(NULL, "image.GetMetadata('nginx')", msg, sizeof(msg));
	assert_null(v);
	assert_string_equal(msg, "failed to get image data: no cluster connection");
	img_manifest[0] = '\0';
	f->src->close(f->src->ud, h);
}

/* hooks.http: Kyverno's CEL http library (cel-semantics.md section 6). */
static enum gv_code call_http(const struct engine_hooks *h, const char *method, const char *url,
			      const char *headers, const char *body, const char *ns, char **out,
			      char *msg, size_t n)
{
	json_t *hd = headers ? J(headers) : NULL, *v = NULL;
	json_t *b = body ? json_loads(body, JSON_DECODE_ANY, NULL) : NULL;
	struct gv_err err = {0};
	enum gv_code rc = h->http(h->ud, method, url, hd, b, ns, &v, &err);

	snprintf(msg, n, "%s", err.msg);
	*out = v ? dump(v) : NULL;
	json_decref(v);
	json_decref(hd);
	json_decref(b);
	return rc;
}

static void test_http(void **state)
{
	struct fixture *f = *state;
	const struct engine_hooks *h = f->src->open(f->src->ud, NULL, 0);
	char msg[512], *s, *url;

	assert_non_null(h->http);
	/* an object body gets statusCode; not cached: two calls, two requests */
	url = gv_xasprintf("%s/api/v1/namespaces/team/pods", f->server);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(call_http(h, "GET", url, NULL, NULL, "", &s, msg, sizeof(msg)),
				 GV_OK);
		assert_string_equal(s, "{\"items\":[{},{},{}],\"kind\":\"PodList\","
				       "\"statusCode\":200}");
		free(s);
	}
	assert_int_equal(atomic_load(&f->s.pods_gets), 2);
	free(url);
	/* any status is an answer */
	url = gv_xasprintf("%s/missing", f->server);
	assert_int_equal(call_http(h, "GET", url, NULL, NULL, "", &s, msg, sizeof(msg)), GV_OK);
	assert_non_null(strstr(s, "\"reason\":\"NotFound\""));
	assert_non_null(strstr(s, "\"statusCode\":404"));
	/* numbers decode as doubles, as Go's json.Unmarshal into any */
	assert_non_null(strstr(s, "\"code\":404.0"));
	free(s);
	free(url);
	/* not an object: {body, statusCode} */
	url = gv_xasprintf("%s/notjson", f->server);
	assert_int_equal(call_http(h, "GET", url, NULL, NULL, "", &s, msg, sizeof(msg)), GV_OK);
	assert_string_equal(s, "{\"body\":\"hello\",\"statusCode\":200}");
	free(s);
	free(url);
	/* POST: the body as JSON, the headers given, no credentials of gavel's */
	url = gv_xasprintf("%s/echo", f->server);
	assert_int_equal(call_http(h, "POST", url, "{\"Authorization\":\"Bearer x\"}",
				   "{\"a\":[1,\"b\"]}", "", &s, msg, sizeof(msg)),
			 GV_OK);
	assert_string_equal(s, "{\"auth\":\"Bearer x\",\"got\":{\"a\":[1.0,\"b\"]},"
			       "\"statusCode\":200}");
	free(s);
	assert_int_equal(call_http(h, "POST", url, NULL, "\"text\"", "", &s, msg, sizeof(msg)),
			 GV_OK);
	assert_string_equal(s, "{\"auth\":\"\",\"got\":\"text\",\"statusCode\":200}");
	free(s);
	/* a NamespacedValidatingPolicy's call is refused by default */
	assert_int_equal(call_http(h, "POST", url, NULL, "{}", "team", &s, msg, sizeof(msg)),
			 GV_EINVAL);
	assert_null(s);
	assert_non_null(strstr(msg, "not allowed in namespaced policies"));
	/* a bad header, a bad scheme */
	assert_int_equal(
	    call_http(h, "GET", url, "{\"a:b\":\"c\"}", NULL, "", &s, msg, sizeof(msg)), GV_EINVAL);
	assert_non_null(strstr(msg, "not a valid header"));
	assert_int_equal(
	    call_http(h, "GET", "file:///etc/passwd", NULL, NULL, "", &s, msg, sizeof(msg)),
	    GV_EINVAL);
	assert_non_null(strstr(msg, "is not http(s)://"));
	free(url);
	/* failed requests: too large, no answer */
	url = gv_xasprintf("%s/big", f->server);
	assert_int_equal(call_http(h, "GET", url, NULL, NULL, "", &s, msg, sizeof(msg)), GV_ELIMIT);
	assert_non_null(strstr(msg, "request failed: "));
	assert_non_null(strstr(msg, "larger than 4096 bytes"));
	free(url);
	url = gv_xasprintf("%s/slow", f->server);
	assert_int_equal(call_http(h, "GET", url, NULL, NULL, "", &s, msg, sizeof(msg)), GV_ENET);
	assert_non_null(strstr(msg, "request failed: "));
	free(url);
	f->src->close(f->src->ud, h);
}

/* With allow_http_namespaced a NamespacedValidatingPolicy may call. */
static void test_http_namespaced_allowed(void **state)
{
	struct fixture *f = *state;
	struct context_options o = {0};
	struct context_loader *l;
	const struct view_context *src;
	const struct engine_hooks *h;
	char msg[512], *s, *url;

	o.client = f->client;
	o.kube = &f->cfg;
	o.allow_http_namespaced = true;
	l = context_loader_new(&o);
	src = context_loader_source(l);
	h = src->open(src->ud, NULL, 0);
	url = gv_xasprintf("%s/notjson", f->server);
	assert_int_equal(call_http(h, "GET", url, NULL, NULL, "team", &s, msg, sizeof(msg)), GV_OK);
	assert_string_equal(s, "{\"body\":\"hello\",\"statusCode\":200}");
	free(s);
	free(url);
	src->close(src->ud, h);
	context_loader_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_config_map, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_config_map_templated_policy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_api_call, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_api_call_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_api_call_service_tls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_global_reference, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_image_registry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_image_metadata_cel, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_http, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_http_namespaced_allowed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
