/*
 * Unit tests for kube/: kubeconfig and in-cluster configuration, base64,
 * Status parsing, paths, backoff bounds, the watch event splitter, and,
 * against a tiny in-process HTTP server (kube/tests/httpd.h), requests with
 * retries and token re-reads, paginated lists with 410 restarts, discovery,
 * and an informer (list, watch, bookmark resume, relist on 410, resume at
 * once after a cut, prompt stop).
 * No real API server is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "kube/kube_int.h"
#include "kube/tests/httpd.h"

#include "common/banned.h"

/* ---- helpers ---- */

/* Test literals into the char * fields of configuration structs. */
#define S(x) ((char *)(x))

static char tmpdir[256];

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gavel-kube-test-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int teardown_tmp(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd)) {
		/* best effort */
	}
	return 0;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static enum gv_code parse(const char *yaml, const char *context, struct kube_config **out,
			  struct gv_err *err)
{
	return kube_config_parse(yaml, strlen(yaml), "kc.yaml", "/etc/kc", context, out, err);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wait_until(bool (*cond)(void *), void *ud, double timeout_s)
{
	double end = now_s() + timeout_s;

	while (!cond(ud) && now_s() < end)
		kube_sleep(10, NULL);
	assert_true(cond(ud));
}

/* ---- kubeconfig ---- */

static const char KC_MAIN[] =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: c1\n"
    "  cluster:\n"
    "    server: https://127.0.0.1:6443/\n"
    "    certificate-authority-data: "
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmFiYwotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==\n"
    "- name: c2\n"
    "  cluster:\n"
    "    server: http://10.0.0.2:8080\n"
    "    certificate-authority: certs/ca.crt\n"
    "    insecure-skip-tls-verify: true\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: c1, user: u1, namespace: team-a}\n"
    "- name: other\n"
    "  context: {cluster: c2, user: u2}\n"
    "- name: nouser\n"
    "  context: {cluster: c2, user: ghost}\n"
    "users:\n"
    "- name: u1\n"
    "  user:\n"
    "    token: abc.def\n"
    "- name: u2\n"
    "  user:\n"
    "    tokenFile: /var/tok\n"
    "    client-certificate: client.crt\n"
    "    client-key: /abs/client.key\n";

static void test_config_inline(void **state)
{
	struct kube_config *c = NULL;
	struct gv_err err = {0};

	(void)state;
	assert_int_equal(parse(KC_MAIN, NULL, &c, &err), GV_OK);
	assert_string_equal(c->server, "https://127.0.0.1:6443");
	assert_string_equal(c->ca_data,
			    "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n");
	assert_null(c->ca_file);
	assert_string_equal(c->token, "abc.def");
	assert_null(c->token_file);
	assert_string_equal(c->namespace, "team-a");
	assert_false(c->insecure);
	kube_config_free(c);
}

static void test_config_context_and_files(void **state)
{
	struct kube_config *c = NULL;
	struct gv_err err = {0};

	(void)state;
	assert_int_equal(parse(KC_MAIN, "other", &c, &err), GV_OK);
	assert_string_equal(c->server, "http://10.0.0.2:8080");
	assert_string_equal(c->ca_file, "/etc/kc/certs/ca.crt");
	assert_true(c->insecure);
	assert_string_equal(c->token_file, "/var/tok");
	assert_string_equal(c->cert_file, "/etc/kc/client.crt");
	assert_string_equal(c->key_file, "/abs/client.key");
	assert_null(c->namespace);
	assert_null(c->token);
	kube_config_free(c);
}

static void expect_bad(const char *yaml, const char *context, enum gv_code code, const char *needle)
{
	struct kube_config *c = NULL;
	struct gv_err err = {0};

	assert_int_equal(parse(yaml, context, &c, &err), code);
	assert_null(c);
	if (!strstr(err.msg, needle))
		fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_config_bad(void **state)
{
	(void)state;
	expect_bad(KC_MAIN, "nope", GV_EINVAL, "context \"nope\" not found");
	expect_bad(KC_MAIN, "nouser", GV_EINVAL, "user \"ghost\" not found");
	expect_bad("clusters: []\n", NULL, GV_EINVAL, "no current-context");
	expect_bad("- a\n- b\n", NULL, GV_EINVAL, "not a kubeconfig");
	expect_bad("a: [unclosed\n", NULL, GV_EINVAL, "YAML");
	expect_bad("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n", NULL,
		   GV_EINVAL, "cluster \"c\" not found");
	expect_bad("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
		   "clusters:\n- name: c\n  cluster: {server: ftp://x}\n",
		   NULL, GV_EINVAL, "not an http(s) URL");
	expect_bad("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
		   "clusters:\n- name: c\n  cluster: {certificate-authority-data: abc}\n",
		   NULL, GV_EINVAL, "has no server");
	expect_bad("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
		   "clusters:\n- name: c\n  cluster: {server: 'https://a', "
		   "certificate-authority-data: '!!notbase64'}\n",
		   NULL, GV_EINVAL, "invalid base64");
	expect_bad("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		   "clusters:\n- name: c\n  cluster: {server: 'https://a'}\n"
		   "users:\n- name: u\n  user:\n    exec: {command: aws}\n",
		   NULL, GV_EINVAL, "\"exec\" authentication is not supported");
	expect_bad("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
		   "clusters:\n- name: c\n  cluster: {server: 'https://a', "
		   "insecure-skip-tls-verify: maybe}\n",
		   NULL, GV_EINVAL, "insecure-skip-tls-verify must be true or false");
	expect_bad("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
		   "clusters:\n- name: c\n  cluster: {server: 42}\n",
		   NULL, GV_EINVAL, "server must be a string");
}

static void test_config_load_paths(void **state)
{
	struct kube_config *c = NULL;
	struct gv_err err = {0};
	char path[512], env[1100];
	const char *old = getenv("KUBECONFIG");
	char *saved = old ? gv_xstrdup(old) : NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/kubeconfig", tmpdir);
	write_text(path,
		   "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		   "clusters:\n- name: c\n  cluster: {server: 'https://h:1', "
		   "certificate-authority: ca.pem}\n"
		   "users:\n- name: u\n  user: {tokenFile: tok}\n");
	assert_int_equal(kube_config_load(path, &c, &err), GV_OK);
	{
		char want[600];

		snprintf(want, sizeof(want), "%s/ca.pem", tmpdir);
		assert_string_equal(c->ca_file, want);
		snprintf(want, sizeof(want), "%s/tok", tmpdir);
		assert_string_equal(c->token_file, want);
	}
	kube_config_free(c);

	/* $KUBECONFIG: the first existing file of the list. */
	snprintf(env, sizeof(env), "%s/missing:%s", tmpdir, path);
	setenv("KUBECONFIG", env, 1);
	assert_int_equal(kube_config_load(NULL, &c, &err), GV_OK);
	assert_string_equal(c->server, "https://h:1");
	kube_config_free(c);
	snprintf(env, sizeof(env), "%s/missing", tmpdir);
	setenv("KUBECONFIG", env, 1);
	assert_int_equal(kube_config_load(NULL, &c, &err), GV_ENOENT);
	assert_null(c);

	/* An explicit file that does not exist. */
	gv_err_clear(&err);
	assert_int_equal(kube_config_load("/nonexistent/kc", &c, &err), GV_ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/kc"));
	if (saved)
		setenv("KUBECONFIG", saved, 1);
	else
		unsetenv("KUBECONFIG");
	free(saved);
}

static void test_config_incluster(void **state)
{
	struct kube_config *c = NULL;
	struct gv_err err = {0};
	char p[512];

	(void)state;
	assert_int_equal(kube_config_incluster(tmpdir, "", "443", &c, &err), GV_ENOENT);
	gv_err_clear(&err);
	/* no token file yet */
	assert_int_equal(kube_config_incluster(tmpdir, "10.0.0.1", "443", &c, &err), GV_ENOENT);
	snprintf(p, sizeof(p), "%s/token", tmpdir);
	write_text(p, "tok\n");
	snprintf(p, sizeof(p), "%s/namespace", tmpdir);
	write_text(p, "gavel-system\n");
	snprintf(p, sizeof(p), "%s/ca.crt", tmpdir);
	write_text(p, "x");
	assert_int_equal(kube_config_incluster(tmpdir, "10.0.0.1", "443", &c, &err), GV_OK);
	assert_string_equal(c->server, "https://10.0.0.1:443");
	assert_string_equal(c->namespace, "gavel-system");
	assert_string_equal(c->ca_file, p);
	snprintf(p, sizeof(p), "%s/token", tmpdir);
	assert_string_equal(c->token_file, p);
	kube_config_free(c);
	assert_int_equal(kube_config_incluster(tmpdir, "fd00::1", "6443", &c, &err), GV_OK);
	assert_string_equal(c->server, "https://[fd00::1]:6443");
	kube_config_free(c);
}

/* ---- small pieces ---- */

static void test_base64(void **state)
{
	static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *const enc[] = {"",	      "Zg==",	  "Zm8=",    "Zm9v",
					  "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	char *s, *d;
	size_t len;

	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(plain); i++) {
		s = kube_base64_encode(plain[i], strlen(plain[i]));
		assert_string_equal(s, enc[i]);
		assert_int_equal(kube_base64_decode(s, &d, &len, NULL), GV_OK);
		assert_int_equal(len, strlen(plain[i]));
		assert_string_equal(d, plain[i]);
		free(s);
		free(d);
	}
	assert_int_equal(kube_base64_decode("Zm9v\nYmFy\n", &d, NULL, NULL), GV_OK);
	assert_string_equal(d, "foobar");
	free(d);
	assert_int_equal(kube_base64_decode("Zm9", &d, NULL, NULL), GV_EINVAL);
	assert_int_equal(kube_base64_decode("Zm=v", &d, NULL, NULL), GV_EINVAL);
	assert_int_equal(kube_base64_decode("Zm9*", &d, NULL, NULL), GV_EINVAL);
	assert_null(d);
}

static void test_status_fill(void **state)
{
	struct kube_status st;
	const char *nf = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
			 "\"message\":\"configmaps \\\"x\\\" not found\",\"reason\":\"NotFound\","
			 "\"code\":404}";

	(void)state;
	kube_status_fill(&st, 404, nf, strlen(nf));
	assert_int_equal(st.http, 404);
	assert_string_equal(st.reason, "NotFound");
	assert_string_equal(st.message, "configmaps \"x\" not found");
	kube_status_fill(&st, 503, "backend down\nretry", 18);
	assert_string_equal(st.reason, "ServiceUnavailable");
	assert_string_equal(st.message, "backend down retry");
	kube_status_fill(&st, 418, NULL, 0);
	assert_string_equal(st.reason, "");
	assert_string_equal(st.message, "");
	/* ERROR watch events carry a Status without the HTTP code */
	{
		const char *gone = "{\"code\":410,\"reason\":\"Expired\",\"message\":\"too old\"}";

		kube_status_fill(&st, 0, gone, strlen(gone));
	}
	assert_int_equal(st.http, 410);
	assert_string_equal(st.reason, "Expired");
}

static void test_paths(void **state)
{
	struct kube_resource cm = {.group = S(""),
				   .version = S("v1"),
				   .kind = S("ConfigMap"),
				   .resource = S("configmaps"),
				   .namespaced = true};
	struct kube_resource ns = {.group = S(""),
				   .version = S("v1"),
				   .kind = S("Namespace"),
				   .resource = S("namespaces")};
	struct kube_resource vwc = {.group = S("admissionregistration.k8s.io"),
				    .version = S("v1"),
				    .kind = S("ValidatingWebhookConfiguration"),
				    .resource = S("validatingwebhookconfigurations")};
	struct kube_resource pr = {.group = S("wgpolicyk8s.io"),
				   .version = S("v1alpha2"),
				   .kind = S("PolicyReport"),
				   .resource = S("policyreports"),
				   .namespaced = true};
	char *p;

	(void)state;
#define CHECK(expr, want)                                                                          \
	p = (expr);                                                                                \
	assert_string_equal(p, want);                                                              \
	free(p)
	CHECK(kube_path(&cm, "team-a", "x"), "/api/v1/namespaces/team-a/configmaps/x");
	CHECK(kube_path(&cm, "team-a", NULL), "/api/v1/namespaces/team-a/configmaps");
	CHECK(kube_path(&cm, NULL, NULL), "/api/v1/configmaps");
	CHECK(kube_path(&cm, "", NULL), "/api/v1/configmaps");
	CHECK(kube_path(&ns, "ignored", "default"), "/api/v1/namespaces/default");
	CHECK(kube_path(&vwc, NULL, "gavel"),
	      "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/gavel");
	CHECK(kube_path(&pr, "ns", "polr-ns-ns"),
	      "/apis/wgpolicyk8s.io/v1alpha2/namespaces/ns/policyreports/polr-ns-ns");
	CHECK(kube_path(&cm, "a b", "x/y?z"), "/api/v1/namespaces/a%20b/configmaps/x%2Fy%3Fz");
	CHECK(kube_escape("a=b&c~d_e.f-g"), "a%3Db%26c~d_e.f-g");
#undef CHECK
}

static void test_backoff_bounds(void **state)
{
	(void)state;
	for (int round = 0; round < 200; round++) {
		for (unsigned a = 0; a < 40; a++) {
			unsigned d = 100, v;

			for (unsigned i = 1; i < a && d < 5000; i++)
				d *= 2;
			if (d > 5000)
				d = 5000;
			v = kube_backoff_ms(a, 100, 5000);
			if (v < d / 2 || v > d)
				fail_msg("attempt %u: %u not in [%u, %u]", a, v, d / 2, d);
		}
	}
	/* huge attempt numbers do not overflow */
	assert_true(kube_backoff_ms(1000000, 1000, 30000) <= 30000);
	assert_true(kube_backoff_ms(1000000, 1000, 30000) >= 15000);
	/* a cap below the base is raised to the base */
	assert_true(kube_backoff_ms(3, 200, 10) <= 200);
}

/* ---- event stream ---- */

struct events {
	char log[4096];
	int n;
	int stop_after; /* 0 = never */
};

static bool record_event(const char *type, json_t *obj, void *ud)
{
	struct events *e = ud;
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	size_t len = strlen(e->log);

	snprintf(e->log + len, sizeof(e->log) - len, "%s%s:%s", len ? " " : "", type,
		 name ? name : "-");
	e->n++;
	return !(e->stop_after && e->n >= e->stop_after);
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"},"
    "\"data\":{\"k\":\"}{\\\"]\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\"},\"list\":[1,{\"x\":[]}]}}\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\\\\\"}}}\r\n";

static void test_stream_every_split(void **state)
{
	size_t len = strlen(STREAM);

	(void)state;
	/* The result must not depend on where the chunks end. */
	for (size_t cut1 = 0; cut1 <= len; cut1 += 1) {
		for (size_t cut2 = cut1; cut2 <= len; cut2 += 7) {
			struct events e = {0};
			struct kube_stream s = {.on_event = record_event, .ud = &e};

			assert_int_equal(kube_stream_feed(&s, STREAM, cut1, NULL), GV_OK);
			assert_int_equal(kube_stream_feed(&s, STREAM + cut1, cut2 - cut1, NULL),
					 GV_OK);
			assert_int_equal(kube_stream_feed(&s, STREAM + cut2, len - cut2, NULL),
					 GV_OK);
			assert_string_equal(e.log, "ADDED:a MODIFIED:b BOOKMARK:- DELETED:c\\");
			assert_int_equal(s.events, 4);
			kube_stream_release(&s);
		}
	}
}

static void test_stream_errors(void **state)
{
	struct events e = {0};
	struct kube_stream s = {.on_event = record_event, .ud = &e, .max = 64};
	struct gv_err err = {0};
	char big[200];

	(void)state;
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"type\":\"ADDED\",\"object\":{\"x\":\"", 31);
	assert_int_equal(kube_stream_feed(&s, big, sizeof(big), &err), GV_ELIMIT);
	assert_non_null(strstr(err.msg, "larger than 64"));
	kube_stream_release(&s);

	memset(&s, 0, sizeof(s));
	s.on_event = record_event;
	s.ud = &e;
	gv_err_clear(&err);
	assert_int_equal(kube_stream_feed(&s, "garbage", 7, &err), GV_EINVAL);
	kube_stream_release(&s);

	memset(&s, 0, sizeof(s));
	s.on_event = record_event;
	s.ud = &e;
	gv_err_clear(&err);
	assert_int_equal(kube_stream_feed(&s, "{\"object\":{}}", 13, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "not an event"));
	kube_stream_release(&s);

	memset(&s, 0, sizeof(s));
	s.on_event = record_event;
	s.ud = &e;
	gv_err_clear(&err);
	assert_int_equal(kube_stream_feed(&s, "{\"type\":\"ADDED\",\"object\":{}", 27, &err),
			 GV_OK);
	assert_int_equal(kube_stream_feed(&s, ",\"x\":}", 6, &err), GV_EINVAL);
	kube_stream_release(&s);

	/* on_event returning false stops the stream. */
	memset(&e, 0, sizeof(e));
	e.stop_after = 1;
	memset(&s, 0, sizeof(s));
	s.on_event = record_event;
	s.ud = &e;
	assert_int_equal(kube_stream_feed(&s, STREAM, strlen(STREAM), NULL), GV_OK);
	assert_true(s.stopped);
	assert_string_equal(e.log, "ADDED:a");
	kube_stream_release(&s);
}

/* ---- against the in-process server ---- */

static struct kube_client *client_for(struct httpd *srv, const char *token, const char *token_file)
{
	struct kube_config cfg = {0};
	struct gv_err err = {0};
	char server[64];
	struct kube_client *c;

	snprintf(server, sizeof(server), "http://127.0.0.1:%d", srv->port);
	cfg.server = server;
	cfg.token = (char *)token;
	cfg.token_file = (char *)token_file;
	c = kube_client_new(&cfg, &err);
	assert_non_null(c);
	kube_client_set_retries(c, 3, 5, 20);
	kube_client_set_timeouts(c, 2000, 5000, 0);
	return c;
}

struct basic {
	atomic_int fail_first; /* answer 429/503 this many times first */
	int fail_code;
	char tokens[8][64]; /* Authorization values seen */
	atomic_int ntokens;
	char body[256];
	char ctype[128];
};

static void basic_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	struct basic *b = ud;
	int i = atomic_fetch_add(&b->ntokens, 1);

	if (i < 8)
		snprintf(b->tokens[i], sizeof(b->tokens[i]), "%s", r->auth);
	if (!strncmp(r->path, "/api/v1/namespaces/x/configmaps/missing", 39)) {
		httpd_respond(c, 404, NULL,
			      "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
			      "\"message\":\"configmaps \\\"missing\\\" not found\","
			      "\"reason\":\"NotFound\",\"code\":404}");
		return;
	}
	if (!strcmp(r->path, "/auth")) {
		if (strcmp(r->auth, "Bearer new")) {
			httpd_respond(c, 401, NULL,
				      "{\"kind\":\"Status\",\"reason\":\"Unauthorized\","
				      "\"message\":\"Unauthorized\",\"code\":401}");
			return;
		}
		httpd_respond(c, 200, NULL, "{\"ok\":true}");
		return;
	}
	if (!strcmp(r->path, "/flaky") && atomic_fetch_sub(&b->fail_first, 1) > 0) {
		httpd_respond(c, b->fail_code, b->fail_code == 429 ? "Retry-After: 0\r\n" : NULL,
			      "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\","
			      "\"message\":\"slow down\"}");
		return;
	}
	if (!strcmp(r->method, "PATCH") || !strcmp(r->method, "POST")) {
		snprintf(b->body, sizeof(b->body), "%s", r->body);
		snprintf(b->ctype, sizeof(b->ctype), "%s", r->content_type);
		httpd_respond(c, 201, NULL, r->body);
		return;
	}
	if (!strcmp(r->method, "DELETE")) {
		httpd_respond(c, 200, NULL, "");
		return;
	}
	httpd_respond(c, 200, NULL, "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}");
}

static void test_request_ok_and_errors(void **state)
{
	struct basic b = {0};
	struct httpd *srv = httpd_start(basic_handler, &b, NULL);
	struct kube_client *c = client_for(srv, "t0k", NULL);
	struct kube_status st;
	struct gv_err err = {0};
	json_t *out = NULL, *body;

	(void)state;
	assert_int_equal(
	    kube_request(c, "GET", "/api/v1/namespaces/x/configmaps/x", NULL, &out, &st, &err),
	    GV_OK);
	assert_int_equal(st.http, 200);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(out, "metadata"), "name")), "x");
	assert_string_equal(b.tokens[0], "Bearer t0k");
	json_decref(out);

	assert_int_equal(kube_request(c, "GET", "/api/v1/namespaces/x/configmaps/missing", NULL,
				      &out, &st, &err),
			 GV_ENET);
	assert_null(out);
	assert_int_equal(st.http, 404);
	assert_string_equal(st.reason, "NotFound");
	assert_string_equal(st.message, "configmaps \"missing\" not found");
	assert_string_equal(err.msg, "GET /api/v1/namespaces/x/configmaps/missing: 404 NotFound: "
				     "configmaps \"missing\" not found");
	/* 404 is not retried */
	assert_int_equal(httpd_count(srv), 2);

	/* the raw GET hands the body over as received; errors as kube_request */
	{
		struct gv_buf raw = {0};
		gv_buf_adds(&raw, "stale");
		assert_int_equal(
		    kube_get_raw(c, "/api/v1/namespaces/x/configmaps/x", &raw, &st, &err), GV_OK);
		assert_int_equal(st.http, 200);
		assert_string_equal(gv_buf_str(&raw),
				    "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}");
		gv_err_clear(&err);
		assert_int_equal(
		    kube_get_raw(c, "/api/v1/namespaces/x/configmaps/missing", &raw, &st, &err),
		    GV_ENET);
		assert_int_equal(st.http, 404);
		assert_string_equal(err.msg, "GET /api/v1/namespaces/x/configmaps/missing: 404 "
					     "NotFound: configmaps \"missing\" not found");
		assert_int_equal(raw.len, 0);
		gv_buf_release(&raw);
		assert_int_equal(httpd_count(srv), 4);
	}

	/* PATCH is a merge patch; the body goes out as compact JSON. */
	body = json_pack("{s:{s:s}}", "data", "k", "v");
	assert_int_equal(
	    kube_request(c, "PATCH", "/api/v1/namespaces/x/configmaps/x", body, &out, &st, NULL),
	    GV_OK);
	assert_string_equal(b.ctype, "application/merge-patch+json");
	assert_string_equal(b.body, "{\"data\":{\"k\":\"v\"}}");
	assert_int_equal(st.http, 201);
	json_decref(out);
	json_decref(body);
	body = json_pack("[{s:s, s:s, s:s}]", "op", "replace", "path", "/data/k", "value", "w");
	assert_int_equal(kube_patch(c, "/api/v1/namespaces/x/configmaps/x", KUBE_PATCH_JSON, body,
				    NULL, &st, NULL),
			 GV_OK);
	assert_string_equal(b.ctype, "application/json-patch+json");
	json_decref(body);
	/* DELETE without a body; an empty 200 gives no object */
	out = json_true();
	assert_int_equal(
	    kube_request(c, "DELETE", "/api/v1/namespaces/x/configmaps/x", NULL, &out, &st, NULL),
	    GV_OK);
	assert_null(out);
	/* bad input */
	gv_err_clear(&err);
	assert_int_equal(kube_request(c, "BREW", "/x", NULL, NULL, &st, &err), GV_EINVAL);
	gv_err_clear(&err);
	assert_int_equal(kube_request(c, "GET", "relative", NULL, NULL, &st, &err), GV_EINVAL);
	kube_client_free(c);
	httpd_stop(srv);
}

static void test_request_retries(void **state)
{
	struct basic b = {0};
	struct httpd *srv = httpd_start(basic_handler, &b, NULL);
	struct kube_client *c = client_for(srv, NULL, NULL);
	struct kube_status st;
	struct gv_err err = {0};

	(void)state;
	/* 429 twice, then 200: three requests, success */
	atomic_store(&b.fail_first, 2);
	b.fail_code = 429;
	assert_int_equal(kube_request(c, "GET", "/flaky", NULL, NULL, &st, &err), GV_OK);
	assert_int_equal(httpd_count(srv), 3);
	assert_string_equal(b.tokens[0], ""); /* no token configured: no Authorization */

	/* 503 forever: 1 + 3 retries, then the error */
	atomic_store(&b.fail_first, 100);
	b.fail_code = 503;
	assert_int_equal(kube_request(c, "GET", "/flaky", NULL, NULL, &st, &err), GV_ENET);
	assert_int_equal(httpd_count(srv), 3 + 4);
	assert_int_equal(st.http, 503);
	assert_string_equal(st.reason, "TooManyRequests");
	kube_client_free(c);
	httpd_stop(srv);
}

static void test_request_token_reread(void **state)
{
	struct basic b = {0};
	struct httpd *srv = httpd_start(basic_handler, &b, NULL);
	struct kube_client *c;
	struct kube_status st;
	char path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/token", tmpdir);
	write_text(path, "old\n");
	c = client_for(srv, "fallback", path);
	/* the first request reads the file: "old" is refused */
	assert_int_equal(kube_request(c, "GET", "/other", NULL, NULL, &st, NULL), GV_OK);
	assert_string_equal(b.tokens[0], "Bearer old");
	/* the token rotates; the cached one gets 401, the file is read again */
	write_text(path, "new\n");
	assert_int_equal(kube_request(c, "GET", "/auth", NULL, NULL, &st, NULL), GV_OK);
	assert_string_equal(b.tokens[1], "Bearer old");
	assert_string_equal(b.tokens[2], "Bearer new");
	/* a token that stays bad: one re-read only, then 401 */
	write_text(path, "bad\n");
	c->token_read = 0; /* pretend a minute passed */
	assert_int_equal(kube_request(c, "GET", "/auth", NULL, NULL, &st, NULL), GV_ENET);
	assert_int_equal(st.http, 401);
	assert_int_equal(httpd_count(srv), 5);
	kube_client_free(c);
	httpd_stop(srv);
}

static void test_request_unreachable(void **state)
{
	struct kube_config cfg = {.server = S("http://127.0.0.1:1")};
	struct kube_client *c = kube_client_new(&cfg, NULL);
	struct kube_status st;
	struct gv_err err = {0};
	double t0 = now_s();

	(void)state;
	kube_client_set_retries(c, 2, 5, 10);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, &st, &err), GV_ENET);
	assert_int_equal(st.http, 0);
	assert_non_null(strstr(err.msg, "GET http://127.0.0.1:1/api: "));
	assert_true(now_s() - t0 < 5);
	kube_client_free(c);
}

static void test_client_bad_tls(void **state)
{
	struct kube_config cfg = {.server = S("https://127.0.0.1:1"), .ca_data = S("not pem")};
	struct gv_err err = {0};

	(void)state;
	assert_null(kube_client_new(&cfg, &err));
	assert_non_null(strstr(err.msg, "certificate-authority-data: no PEM certificate"));
	gv_err_clear(&err);
	cfg.ca_data = NULL;
	cfg.ca_file = S("/nonexistent/ca.crt");
	assert_null(kube_client_new(&cfg, &err));
	assert_non_null(strstr(err.msg, "/nonexistent/ca.crt"));
	gv_err_clear(&err);
	cfg.ca_file = NULL;
	cfg.cert_data = S("x");
	assert_null(kube_client_new(&cfg, &err));
	assert_non_null(strstr(err.msg, "both"));
}

/* ---- lists ---- */

struct lister {
	atomic_int gone_once; /* answer 410 to the first continue request */
};

static void list_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	struct lister *l = ud;

	if (strstr(r->path, "continue=tok%2F2")) {
		if (atomic_fetch_sub(&l->gone_once, 1) > 0) {
			httpd_respond(
			    c, 410, NULL,
			    "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,"
			    "\"message\":\"The provided continue parameter is too old\"}");
			return;
		}
		httpd_respond(c, 200, NULL,
			      "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
			      "{\"resourceVersion\":\"99\",\"continue\":\"\"},"
			      "\"items\":[{\"metadata\":{\"name\":\"c\"}}]}");
		return;
	}
	if (strstr(r->path, "continue=tok1")) {
		httpd_respond(c, 200, NULL,
			      "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
			      "{\"resourceVersion\":\"99\",\"continue\":\"tok/2\"},"
			      "\"items\":[{\"metadata\":{\"name\":\"b\"}}]}");
		return;
	}
	httpd_respond(c, 200, NULL,
		      "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
		      "{\"resourceVersion\":\"42\",\"continue\":\"tok1\"},"
		      "\"items\":[{\"metadata\":{\"name\":\"a\"}},"
		      "{\"kind\":\"Other\",\"metadata\":{\"name\":\"a2\"}}]}");
}

struct seen {
	char names[256];
	int stop_at;
	int n;
};

static int collect(const json_t *item, void *ud)
{
	struct seen *s = ud;
	size_t len = strlen(s->names);

	snprintf(s->names + len, sizeof(s->names) - len, "%s%s/%s", len ? " " : "",
		 json_string_value(json_object_get(item, "kind")),
		 json_string_value(json_object_get(json_object_get(item, "metadata"), "name")));
	assert_string_equal(json_string_value(json_object_get(item, "apiVersion")), "v1");
	return s->stop_at && ++s->n >= s->stop_at;
}

static void test_list_pages(void **state)
{
	struct lister l = {0};
	struct httpd *srv = httpd_start(list_handler, &l, NULL);
	struct kube_client *c = client_for(srv, NULL, NULL);
	struct seen s = {0};
	struct gv_err err = {0};
	char *rv = NULL, line[256];

	(void)state;
	assert_int_equal(
	    kube_list(c, "/api/v1/configmaps?labelSelector=a%3Db", 2, collect, &s, &rv, &err),
	    GV_OK);
	assert_string_equal(s.names, "ConfigMap/a Other/a2 ConfigMap/b ConfigMap/c");
	assert_string_equal(rv, "42");
	free(rv);
	httpd_logged(srv, 0, line, sizeof(line));
	assert_string_equal(line, "GET /api/v1/configmaps?labelSelector=a%3Db&limit=2");
	httpd_logged(srv, 1, line, sizeof(line));
	assert_string_equal(line,
			    "GET /api/v1/configmaps?labelSelector=a%3Db&limit=2&continue=tok1");
	httpd_logged(srv, 2, line, sizeof(line));
	assert_string_equal(line,
			    "GET /api/v1/configmaps?labelSelector=a%3Db&limit=2&continue=tok%2F2");

	/* 410 on a continue token: start over from the first page */
	memset(&s, 0, sizeof(s));
	atomic_store(&l.gone_once, 1);
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 2, collect, &s, NULL, &err), GV_OK);
	assert_string_equal(s.names, "ConfigMap/a Other/a2 ConfigMap/b ConfigMap/a Other/a2 "
				     "ConfigMap/b ConfigMap/c");

	/* fn stops early */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 2, collect, &s, NULL, &err), GV_OK);
	assert_string_equal(s.names, "ConfigMap/a Other/a2");

	/* endless 410 gives up */
	memset(&s, 0, sizeof(s));
	atomic_store(&l.gone_once, 100);
	assert_int_equal(kube_list(c, "/api/v1/configmaps", 2, collect, &s, NULL, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "410 Expired"));
	kube_client_free(c);
	httpd_stop(srv);
}

/* ---- discovery ---- */

static void disc_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	(void)ud;
	if (!strcmp(r->path, "/api"))
		httpd_respond(c, 200, NULL, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
	else if (!strcmp(r->path, "/api/v1"))
		httpd_respond(
		    c, 200, NULL,
		    "{\"groupVersion\":\"v1\",\"resources\":["
		    "{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\","
		    "\"verbs\":[\"create\",\"get\",\"list\",\"watch\"]},"
		    "{\"name\":\"namespaces\",\"namespaced\":false,\"kind\":\"Namespace\"},"
		    "{\"name\":\"namespaces/status\",\"namespaced\":false,\"kind\":\"Namespace\"},"
		    "{\"name\":\"events\",\"namespaced\":true,\"kind\":\"Event\"}]}");
	else if (!strcmp(r->path, "/apis"))
		httpd_respond(
		    c, 200, NULL,
		    "{\"kind\":\"APIGroupList\",\"groups\":["
		    "{\"name\":\"metrics.k8s.io\",\"versions\":[{\"groupVersion\":"
		    "\"metrics.k8s.io/v1beta1\",\"version\":\"v1beta1\"}],"
		    "\"preferredVersion\":{\"version\":\"v1beta1\"}},"
		    "{\"name\":\"apps\",\"versions\":["
		    "{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"},"
		    "{\"groupVersion\":\"apps/v1beta1\",\"version\":\"v1beta1\"}],"
		    "\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}},"
		    "{\"name\":\"events.k8s.io\",\"versions\":[{\"version\":\"v1\"}],"
		    "\"preferredVersion\":{\"version\":\"v1\"}}]}");
	else if (!strcmp(r->path, "/apis/metrics.k8s.io/v1beta1"))
		httpd_respond(c, 503, NULL,
			      "{\"kind\":\"Status\",\"reason\":\"ServiceUnavailable\"}");
	else if (!strcmp(r->path, "/apis/apps/v1"))
		httpd_respond(
		    c, 200, NULL,
		    "{\"resources\":["
		    "{\"name\":\"deployments/scale\",\"namespaced\":true,\"kind\":\"Scale\"},"
		    "{\"name\":\"deployments\",\"namespaced\":true,\"kind\":\"Deployment\"}]}");
	else if (!strcmp(r->path, "/apis/apps/v1beta1"))
		httpd_respond(
		    c, 200, NULL,
		    "{\"resources\":["
		    "{\"name\":\"deployments\",\"namespaced\":true,\"kind\":\"Deployment\"},"
		    "{\"name\":\"oldthings\",\"namespaced\":false,\"kind\":\"OldThing\"}]}");
	else if (!strcmp(r->path, "/apis/events.k8s.io/v1"))
		httpd_respond(c, 200, NULL,
			      "{\"resources\":[{\"name\":\"events\",\"namespaced\":true,"
			      "\"kind\":\"Event\"}]}");
	else
		httpd_respond(c, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
}

static void test_discovery(void **state)
{
	struct httpd *srv = httpd_start(disc_handler, NULL, NULL);
	struct kube_client *c = client_for(srv, NULL, NULL);
	struct kube_resource r;
	struct gv_err err = {0};
	int n;

	(void)state;
	kube_client_set_retries(c, 0, 1, 1);
	assert_int_equal(kube_discover(c, NULL, NULL, "ConfigMap", &r, &err), GV_OK);
	assert_string_equal(r.group, "");
	assert_string_equal(r.version, "v1");
	assert_string_equal(r.resource, "configmaps");
	assert_true(r.namespaced);
	assert_true(r.listable);
	kube_resource_release(&r);

	assert_int_equal(kube_discover(c, NULL, NULL, "Namespace", &r, &err), GV_OK);
	assert_string_equal(r.resource, "namespaces");
	assert_false(r.namespaced);
	assert_false(r.listable); /* no verbs given */
	kube_resource_release(&r);

	/* preferred version first; subresources never match; the broken group is skipped */
	assert_int_equal(kube_discover(c, NULL, NULL, "Deployment", &r, &err), GV_OK);
	assert_string_equal(r.group, "apps");
	assert_string_equal(r.version, "v1");
	assert_string_equal(r.resource, "deployments");
	kube_resource_release(&r);
	assert_int_equal(kube_discover(c, "apps", "v1beta1", "Deployment", &r, &err), GV_OK);
	assert_string_equal(r.version, "v1beta1");
	kube_resource_release(&r);
	assert_int_equal(kube_discover(c, NULL, NULL, "OldThing", &r, &err), GV_OK);
	assert_string_equal(r.version, "v1beta1");
	kube_resource_release(&r);

	/* group NULL: the core group wins; a group picks its own */
	assert_int_equal(kube_discover(c, NULL, NULL, "Event", &r, &err), GV_OK);
	assert_string_equal(r.group, "");
	kube_resource_release(&r);
	assert_int_equal(kube_discover(c, "events.k8s.io", NULL, "Event", &r, &err), GV_OK);
	assert_string_equal(r.group, "events.k8s.io");
	kube_resource_release(&r);

	assert_int_equal(kube_discover(c, NULL, NULL, "Scale", &r, &err), GV_ENOENT);
	assert_null(r.resource);
	gv_err_clear(&err);
	assert_int_equal(kube_discover(c, "apps", NULL, "ConfigMap", &r, &err), GV_ENOENT);
	assert_non_null(strstr(err.msg, "kind ConfigMap in group apps is not served"));

	/* cached: more lookups do not refetch the groups */
	n = httpd_count(srv);
	assert_int_equal(kube_discover(c, NULL, NULL, "Deployment", &r, &err), GV_OK);
	kube_resource_release(&r);
	assert_int_equal(httpd_count(srv), n);
	kube_client_free(c);
	httpd_stop(srv);
}

/* ---- informer ---- */

struct inf_srv {
	atomic_int lists;
	atomic_int watches;
	atomic_bool idle_watch; /* a watch at rv 20 is open */
	char watch_paths[4][512];
};

static const char *const WATCH1 =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"11\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"12\"},\"data\":{\"v\":\"2\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":"
    "{\"resourceVersion\":\"14\"}}}\n";

static void inf_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	struct inf_srv *s = ud;

	if (!strcmp(r->path, "/ping")) {
		httpd_respond(c, 200, NULL, "{}");
		return;
	}

	if (!strstr(r->path, "watch=1")) {
		int n = atomic_fetch_add(&s->lists, 1);

		if (n == 0)
			httpd_respond(c, 200, NULL,
				      "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
				      "\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
				      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},"
				      "\"data\":{\"v\":\"1\"}},"
				      "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"}}]}");
		else
			httpd_respond(c, 200, NULL,
				      "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
				      "\"metadata\":{\"resourceVersion\":\"20\"},\"items\":["
				      "{\"metadata\":{\"name\":\"z\",\"namespace\":\"ns\"}},"
				      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},"
				      "\"data\":{\"v\":\"3\"}}]}");
		return;
	}
	{
		int w = atomic_fetch_add(&s->watches, 1);

		if (w < 4)
			snprintf(s->watch_paths[w], sizeof(s->watch_paths[w]), "%s", r->path);
		httpd_stream_start(c);
		if (strstr(r->path, "resourceVersion=10")) {
			/* events in awkward chunks, then a clean end of the watch */
			size_t len = strlen(WATCH1);

			for (size_t i = 0; i < len; i += 37) {
				httpd_write(c, WATCH1 + i, len - i < 37 ? len - i : 37);
				kube_sleep(2, NULL);
			}
			return;
		}
		if (strstr(r->path, "resourceVersion=14")) {
			static const char gone[] =
			    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
			    "\"reason\":\"Expired\",\"message\":\"too old resource version: "
			    "14\"}}\n";

			httpd_write(c, gone, sizeof(gone) - 1);
			httpd_wait_close(c, 5000);
			return;
		}
		atomic_store(&s->idle_watch, true);
		httpd_wait_close(c, 20000);
	}
}

struct changes {
	struct kube_informer *_Atomic inf;
	struct kube_client *c;
	atomic_int calls;
	atomic_int pings; /* requests made from on_change that succeeded */
	char snaps[8][256];
};

static void on_change(void *ud)
{
	struct changes *ch = ud;
	struct kube_informer *inf = atomic_load(&ch->inf);
	int i = atomic_fetch_add(&ch->calls, 1);
	json_t *all, *o;
	size_t j;

	/* on_change may use the client (even from inside the watch's callback) */
	if (!kube_request(ch->c, "GET", "/ping", NULL, NULL, NULL, NULL))
		atomic_fetch_add(&ch->pings, 1);
	if (!inf || i >= 8)
		return;
	all = kube_informer_list(inf);
	json_array_foreach(all, j, o)
	{
		size_t len = strlen(ch->snaps[i]);
		const json_t *data = json_object_get(o, "data");

		snprintf(ch->snaps[i] + len, sizeof(ch->snaps[i]) - len, "%s%s%s%s", len ? " " : "",
			 json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
			 data ? "=" : "",
			 data ? json_string_value(json_object_get(data, "v")) : "");
	}
	json_decref(all);
}

static bool idle_watch_open(void *ud)
{
	return atomic_load(&((struct inf_srv *)ud)->idle_watch);
}

static void test_informer(void **state)
{
	struct inf_srv s = {0};
	struct changes ch = {0};
	struct httpd *srv = httpd_start(inf_handler, &s, NULL);
	struct kube_client *c = client_for(srv, NULL, NULL);
	struct kube_informer *inf;
	json_t *all, *o;
	double t0;
	bool found;

	(void)state;
	kube_client_set_timeouts(c, 0, 0, 30);
	ch.c = c;
	/* on_change may run before start returns: it reads ch.inf */
	inf = kube_informer_start(c, "/api/v1/namespaces/ns/configmaps", on_change, &ch);
	atomic_store(&ch.inf, inf);
	assert_non_null(inf);
	assert_true(kube_informer_wait_synced(inf, 5000));
	wait_until(idle_watch_open, &s, 10);

	/* first watch: from the list's resourceVersion, with bookmarks */
	assert_string_equal(s.watch_paths[0], "/api/v1/namespaces/ns/configmaps?watch=1&"
					      "allowWatchBookmarks=true&timeoutSeconds=30&"
					      "resourceVersion=10");
	/* after a clean end: resume from the bookmark */
	assert_non_null(strstr(s.watch_paths[1], "resourceVersion=14"));
	/* ERROR 410: relist, then watch from the new list */
	assert_int_equal(atomic_load(&s.lists), 2);
	assert_non_null(strstr(s.watch_paths[2], "resourceVersion=20"));

	/* the state after the first watch's events was seen by on_change */
	found = false;
	for (int i = 0; i < 8 && i < atomic_load(&ch.calls); i++)
		found |= !strcmp(ch.snaps[i], "a=2 c");
	if (!found)
		fail_msg("no snapshot \"a=2 c\"; first: \"%s\" \"%s\"", ch.snaps[0], ch.snaps[1]);

	assert_int_equal(atomic_load(&ch.pings), atomic_load(&ch.calls));

	/* now: the relisted objects, sorted */
	all = kube_informer_list(inf);
	assert_int_equal(json_array_size(all), 2);
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_array_get(all, 0), "metadata"), "name")),
			    "a");
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_array_get(all, 1), "metadata"), "name")),
			    "z");
	/* list items got kind/apiVersion */
	assert_string_equal(json_string_value(json_object_get(json_array_get(all, 1), "kind")),
			    "ConfigMap");
	json_decref(all);
	o = kube_informer_get(inf, "ns", "a");
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "data"), "v")),
			    "3");
	json_decref(o);
	assert_null(kube_informer_get(inf, "ns", "b"));
	assert_null(kube_informer_get(inf, NULL, "a"));

	/* stop is prompt although the watch is idle */
	t0 = now_s();
	kube_informer_stop(inf);
	assert_true(now_s() - t0 < 2.5);
	kube_client_free(c);
	httpd_stop(srv);
}

static void test_informer_unreachable_stop(void **state)
{
	struct kube_config cfg = {.server = S("http://127.0.0.1:1")};
	struct kube_client *c = kube_client_new(&cfg, NULL);
	struct kube_informer *inf;
	double t0;

	(void)state;
	inf = kube_informer_start(c, "/api/v1/configmaps", NULL, NULL);
	assert_false(kube_informer_wait_synced(inf, 300));
	assert_false(kube_informer_synced(inf));
	t0 = now_s();
	kube_informer_stop(inf);
	assert_true(now_s() - t0 < 2);
	kube_client_free(c);
}

/*
 * A watch cut after it had worked (delivered an event) is resumed at once:
 * the backoff starts over. A watch cut before it delivered anything backs
 * off more and more.
 */
struct cut_srv {
	atomic_int watches;
	bool events; /* each watch delivers an event before it is cut */
};

static void cut_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	struct cut_srv *s = ud;
	char ev[256], chunk[320];
	int n, len, m;

	if (!strstr(r->path, "watch=1")) {
		httpd_respond(c, 200, NULL,
			      "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
			      "\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[]}");
		return;
	}
	n = atomic_fetch_add(&s->watches, 1);
	httpd_write(c, head, sizeof(head) - 1);
	if (s->events) {
		len = snprintf(
		    ev, sizeof(ev),
		    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":"
		    "{\"name\":\"c%d\",\"namespace\":\"ns\",\"resourceVersion\":\"%d\"}}}\n",
		    n, 11 + n);
		m = snprintf(chunk, sizeof(chunk), "%x\r\n%s\r\n", (unsigned)len, ev);
		httpd_write(c, chunk, (size_t)m);
	}
	kube_sleep(20, NULL);
	/* returning closes the connection without the last chunk: a cut */
}

static int cut_watches_in(bool events, long ms)
{
	struct cut_srv s = {.events = events};
	struct httpd *srv = httpd_start(cut_handler, &s, NULL);
	struct kube_client *c = client_for(srv, NULL, NULL);
	struct kube_informer *inf;
	int n;

	kube_client_set_retries(c, 3, 100, 1000); /* watch backoff: 100 ms doubling */
	kube_client_set_timeouts(c, 0, 0, 30);
	inf = kube_informer_start(c, "/api/v1/namespaces/ns/configmaps", NULL, NULL);
	assert_non_null(inf);
	assert_true(kube_informer_wait_synced(inf, 5000));
	kube_sleep(ms, NULL);
	n = atomic_load(&s.watches);
	kube_informer_stop(inf);
	kube_client_free(c);
	httpd_stop(srv);
	return n;
}

static void test_informer_cut_resumes(void **state)
{
	int worked, refused;

	(void)state;
	/* backoff 50-100 ms each time: at least 10 watches in 2 s */
	worked = cut_watches_in(true, 2000);
	if (worked < 10)
		fail_msg("a watch cut after an event: %d watches in 2 s", worked);
	/* 50-100, 100-200, 200-400, 400-800, 800-1600 ms: at most 6 in 2 s */
	refused = cut_watches_in(false, 2000);
	if (refused > 6)
		fail_msg("a watch cut before any event: %d watches in 2 s", refused);
}

/* Several threads share one client (one curl handle each). */
struct par {
	struct kube_client *c;
	int ok;
};

static void *par_main(void *arg)
{
	struct par *p = arg;

	for (int i = 0; i < 20; i++)
		if (!kube_request(p->c, "GET", "/api/v1/namespaces/x/configmaps/x", NULL, NULL,
				  NULL, NULL))
			p->ok++;
	return NULL;
}

static void test_threads(void **state)
{
	struct basic b = {0};
	struct httpd *srv = httpd_start(basic_handler, &b, NULL);
	struct kube_client *c = client_for(srv, NULL, NULL);
	pthread_t t[4];
	struct par p[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		p[i].c = c;
		p[i].ok = 0;
		pthread_create(&t[i], NULL, par_main, &p[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(p[i].ok, 20);
	}
	kube_client_free(c);
	httpd_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_inline),
	    cmocka_unit_test(test_config_context_and_files),
	    cmocka_unit_test(test_config_bad),
	    cmocka_unit_test_setup_teardown(test_config_load_paths, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_config_incluster, setup_tmp, teardown_tmp),
	    cmocka_unit_test(test_base64),
	    cmocka_unit_test(test_status_fill),
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_backoff_bounds),
	    cmocka_unit_test(test_stream_every_split),
	    cmocka_unit_test(test_stream_errors),
	    cmocka_unit_test(test_request_ok_and_errors),
	    cmocka_unit_test(test_request_retries),
	    cmocka_unit_test_setup_teardown(test_request_token_reread, setup_tmp, teardown_tmp),
	    cmocka_unit_test(test_request_unreachable),
	    cmocka_unit_test(test_client_bad_tls),
	    cmocka_unit_test(test_list_pages),
	    cmocka_unit_test(test_discovery),
	    cmocka_unit_test(test_informer),
	    cmocka_unit_test(test_informer_unreachable_stop),
	    cmocka_unit_test(test_informer_cut_resumes),
	    cmocka_unit_test(test_threads),
	};

	gv_init();
	gv_log_setup(GV_LOG_WARN, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
