/*
 * test_registry.c - the registry client (kube/registry.h) against a fake
 * registry on 127.0.0.1 (kube/tests/httpd.h): a Docker v2 manifest, an OCI
 * index resolved to linux/amd64, Bearer token and Basic auth, 404,
 * oversize, timeout, digest checks and the caches; and the reference
 * parser it shares with image_normalize() (common/imageref.h).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/gv.h"
#include "common/imageref.h"
#include "kube/kube.h"
#include "kube/registry.h"
#include "kube/tests/httpd.h"

#include "common/banned.h"

#define MT_DOCKER   "application/vnd.docker.distribution.manifest.v2+json"
#define MT_OCI	    "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_IDX  "application/vnd.oci.image.index.v1+json"
#define MT_DOCK_IDX "application/vnd.docker.distribution.manifest.list.v2+json"

enum auth_mode { AUTH_NONE, AUTH_BEARER, AUTH_BASIC };

struct route {
	char path[512];
	int status;
	char type[128];
	char *body; /* owned */
};

/* The fake registry: routes by exact path; auth per mode; a delay before answering. */
struct fake {
	struct httpd *srv;
	struct route routes[16];
	int nroutes;
	enum auth_mode auth;
	char basic[256];	/* expected "Basic ..." (AUTH_BASIC, and at the token realm) */
	bool token_wants_basic; /* the realm requires the Basic credentials */
	long delay_ms;
	pthread_mutex_t mu;
	char token_query[1024]; /* the last token request's path */
	char token_auth[512];
	char accept[512]; /* Accept of the last manifest request */
	/* content */
	char cfg_digest[GV_SHA256_TEXT_LEN], man_digest[GV_SHA256_TEXT_LEN];
	char amd_digest[GV_SHA256_TEXT_LEN], idx_digest[GV_SHA256_TEXT_LEN];
};

static struct fake F;

static void digest_of(const char *s, char out[GV_SHA256_TEXT_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL);
	gv_sha256_text(md, out);
}

static void route_add(const char *path, int status, const char *type, const char *body)
{
	struct route *r = &F.routes[F.nroutes++];

	snprintf(r->path, sizeof(r->path), "%s", path);
	r->status = status;
	snprintf(r->type, sizeof(r->type), "%s", type);
	r->body = gv_xstrdup(body);
}

static void handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	char hdr[1024], *bearer;

	(void)ud;
	if (F.delay_ms)
		httpd_wait_close(c, F.delay_ms);
	if (!strncmp(r->path, "/token?", 7)) {
		pthread_mutex_lock(&F.mu);
		snprintf(F.token_query, sizeof(F.token_query), "%s", r->path);
		snprintf(F.token_auth, sizeof(F.token_auth), "%s", r->auth);
		pthread_mutex_unlock(&F.mu);
		if (F.token_wants_basic && strcmp(r->auth, F.basic)) {
			httpd_respond(c, 401, NULL, "{\"details\":\"bad credentials\"}");
			return;
		}
		httpd_respond(c, 200, NULL, "{\"access_token\":\"tok-123\",\"expires_in\":300}");
		return;
	}
	if (F.auth == AUTH_BEARER && strcmp(r->auth, "Bearer tok-123")) {
		snprintf(hdr, sizeof(hdr),
			 "WWW-Authenticate: Bearer realm=\"http://127.0.0.1:%d/token\","
			 "service=\"fake registry\",scope=\"repository:team/app:pull\"\r\n",
			 c->srv->port);
		httpd_respond(
		    c, 401, hdr,
		    "{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"authentication "
		    "required\"}]}");
		return;
	}
	if (F.auth == AUTH_BASIC && strcmp(r->auth, F.basic)) {
		httpd_respond(c, 401, "WWW-Authenticate: Basic realm=\"fake\"\r\n",
			      "{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"denied\"}]}");
		return;
	}
	bearer = strstr(r->path, "/manifests/");
	if (bearer) {
		pthread_mutex_lock(&F.mu);
		snprintf(F.accept, sizeof(F.accept), "%s", r->accept);
		pthread_mutex_unlock(&F.mu);
	}
	for (int i = 0; i < F.nroutes; i++) {
		if (strcmp(F.routes[i].path, r->path))
			continue;
		snprintf(hdr, sizeof(hdr), "Content-Type: %s\r\nDocker-Content-Digest: x\r\n",
			 F.routes[i].type);
		httpd_respond(c, F.routes[i].status, hdr, F.routes[i].body);
		return;
	}
	httpd_respond(
	    c, 404, NULL,
	    strstr(r->path, "/blobs/")
		? "{\"errors\":[{\"code\":\"BLOB_UNKNOWN\",\"message\":\"blob unknown\"}]}"
		: "{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\",\"message\":\"manifest "
		  "unknown\"}]}");
}

/*
 * Content: config C; Docker v2 manifest M (tag v1) -> C; OCI manifest A
 * (the amd64 one, its own layer) -> C; OCI index I (tag multi): arm64 ->
 * a digest that is not served, then linux/amd64 -> A.
 */
static int setup(void **state)
{
	char path[512], *s;
	const char *cfg = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"User\":"
			  "\"1000\",\"Env\":[\"PATH=/bin\"]},\"rootfs\":{\"type\":\"layers\","
			  "\"diff_ids\":[]}}";

	(void)state;
	memset(&F, 0, sizeof(F));
	pthread_mutex_init(&F.mu, NULL);
	F.srv = httpd_start(handler, NULL, NULL);
	digest_of(cfg, F.cfg_digest);
	route_add("", 0, "", ""); /* index 0 unused */
	snprintf(path, sizeof(path), "/v2/team/app/blobs/%s", F.cfg_digest);
	route_add(path, 200, "application/octet-stream", cfg);

	s = gv_xasprintf(
	    "{\"schemaVersion\":2,\"mediaType\":\"" MT_DOCKER "\",\"config\":{"
	    "\"mediaType\":\"application/vnd.docker.container.image.v1+json\","
	    "\"size\":%zu,\"digest\":\"%s\"},\"layers\":[{\"mediaType\":"
	    "\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":1500000000,"
	    "\"digest\":\"sha256:%064d\"},{\"mediaType\":\"application/"
	    "vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":700000000,\"digest\":"
	    "\"sha256:%064d\"}]}",
	    strlen(cfg), F.cfg_digest, 1, 2);
	digest_of(s, F.man_digest);
	route_add("/v2/team/app/manifests/v1", 200, MT_DOCKER, s);
	snprintf(path, sizeof(path), "/v2/team/app/manifests/%s", F.man_digest);
	route_add(path, 200, MT_DOCKER, s);
	free(s);

	s = gv_xasprintf(
	    "{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI "\",\"config\":{"
	    "\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"size\":%zu,"
	    "\"digest\":\"%s\"},\"layers\":[{\"mediaType\":\"application/"
	    "vnd.oci.image.layer.v1.tar+gzip\",\"size\":42,\"digest\":\"sha256:%064d\"}]}",
	    strlen(cfg), F.cfg_digest, 3);
	digest_of(s, F.amd_digest);
	snprintf(path, sizeof(path), "/v2/team/app/manifests/%s", F.amd_digest);
	route_add(path, 200, MT_OCI, s);
	free(s);

	s = gv_xasprintf(
	    "{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_IDX "\",\"manifests\":["
	    "{\"mediaType\":\"" MT_OCI "\",\"size\":10,\"digest\":\"sha256:%064d\","
	    "\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\",\"variant\":\"v8\"}},"
	    "{\"mediaType\":\"" MT_OCI "\",\"size\":10,\"digest\":\"%s\","
	    "\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}}]}",
	    9, F.amd_digest);
	digest_of(s, F.idx_digest);
	route_add("/v2/team/app/manifests/multi", 200, MT_OCI_IDX, s);
	free(s);
	/* an index without linux/amd64 */
	route_add("/v2/team/app/manifests/armonly", 200, MT_DOCK_IDX,
		  "{\"schemaVersion\":2,\"mediaType\":\"" MT_DOCK_IDX "\",\"manifests\":[{"
		  "\"mediaType\":\"" MT_DOCKER "\",\"size\":1,\"digest\":\"sha256:"
		  "0000000000000000000000000000000000000000000000000000000000000009\","
		  "\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\"}}]}");
	/* a schema 1 manifest */
	route_add("/v2/team/app/manifests/old", 200,
		  "application/vnd.docker.distribution.manifest.v1+prettyjws",
		  "{\"schemaVersion\":1,\"name\":\"team/app\",\"tag\":\"old\",\"fsLayers\":[]}");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	httpd_stop(F.srv);
	for (int i = 0; i < F.nroutes; i++)
		free(F.routes[i].body);
	pthread_mutex_destroy(&F.mu);
	return 0;
}

static char *ref(const char *suffix)
{
	return gv_xasprintf("127.0.0.1:%d/team/app%s", F.srv->port, suffix);
}

static const char *str_at(const json_t *o, const char *a, const char *b, const char *c)
{
	const json_t *v = json_object_get(o, a);

	if (b)
		v = json_object_get(v, b);
	if (c)
		v = json_object_get(v, c);
	return json_string_value(v);
}

/* Fetches reference with opts from a fresh client; returns the code, *out and err. */
static enum gv_code fetch(const struct kube_registry_limits *lim, const char *reference,
			  const struct kube_registry_opts *opts, json_t **out, struct gv_err *err)
{
	struct kube_registry *r = kube_registry_new(lim);
	enum gv_code rc = kube_registry_image_data(r, reference, opts, out, err);

	kube_registry_free(r);
	return rc;
}

static void test_docker_manifest(void **state)
{
	char *reference = ref(":v1"), *want;
	json_t *d = NULL;
	struct gv_err err = {0};

	(void)state;
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_OK);
	assert_string_equal(str_at(d, "image", NULL, NULL), reference);
	want = gv_xasprintf("127.0.0.1:%d", F.srv->port);
	assert_string_equal(str_at(d, "registry", NULL, NULL), want);
	free(want);
	assert_string_equal(str_at(d, "repository", NULL, NULL), "team/app");
	assert_string_equal(str_at(d, "identifier", NULL, NULL), "v1");
	want = gv_xasprintf("127.0.0.1:%d/team/app@%s", F.srv->port, F.man_digest);
	assert_string_equal(str_at(d, "resolvedImage", NULL, NULL), want);
	free(want);
	assert_string_equal(str_at(d, "manifest", "mediaType", NULL), MT_DOCKER);
	assert_string_equal(str_at(d, "manifest", "config", "digest"), F.cfg_digest);
	assert_int_equal(json_array_size(json_object_get(json_object_get(d, "manifest"), "layers")),
			 2);
	assert_string_equal(str_at(d, "configData", "config", "User"), "1000");
	assert_string_equal(str_at(d, "configData", "os", NULL), "linux");
	assert_true(json_is_null(json_object_get(d, "manifestList")));
	/* the Accept list names the four manifest types */
	assert_non_null(strstr(F.accept, MT_DOCKER));
	assert_non_null(strstr(F.accept, MT_OCI));
	assert_non_null(strstr(F.accept, MT_OCI_IDX));
	assert_non_null(strstr(F.accept, MT_DOCK_IDX));
	json_decref(d);
	free(reference);
}

static void test_oci_index_amd64(void **state)
{
	char *reference = ref(":multi"), *want, line[600], arm[80];
	json_t *d = NULL;
	struct gv_err err = {0};
	int before = httpd_count(F.srv);

	(void)state;
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_OK);
	/* the platform manifest, while resolvedImage names the index */
	assert_string_equal(str_at(d, "manifest", "mediaType", NULL), MT_OCI);
	assert_string_equal(
	    str_at(json_array_get(json_object_get(json_object_get(d, "manifest"), "layers"), 0),
		   "digest", NULL, NULL),
	    "sha256:0000000000000000000000000000000000000000000000000000000000000003");
	assert_string_equal(str_at(d, "manifestList", "mediaType", NULL), MT_OCI_IDX);
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(d, "manifestList"), "manifests")), 2);
	want = gv_xasprintf("127.0.0.1:%d/team/app@%s", F.srv->port, F.idx_digest);
	assert_string_equal(str_at(d, "resolvedImage", NULL, NULL), want);
	free(want);
	assert_string_equal(str_at(d, "configData", "config", "User"), "1000");
	/* three requests: index, amd64 manifest, config; never the arm64 entry */
	assert_int_equal(httpd_count(F.srv) - before, 3);
	snprintf(arm, sizeof(arm), "sha256:%064d", 9);
	for (int i = before; i < httpd_count(F.srv); i++) {
		httpd_logged(F.srv, i, line, sizeof(line));
		assert_null(strstr(line, arm));
	}
	json_decref(d);
	free(reference);

	reference = ref(":armonly");
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "no image for platform linux/amd64"));
	free(reference);
	gv_err_clear(&err);
	reference = ref(":old");
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "unsupported manifest media type"));
	free(reference);
}

static void test_by_digest(void **state)
{
	char *reference = gv_xasprintf("127.0.0.1:%d/team/app@%s", F.srv->port, F.man_digest);
	json_t *d = NULL;
	struct gv_err err = {0};

	(void)state;
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_OK);
	assert_string_equal(str_at(d, "identifier", NULL, NULL), F.man_digest);
	assert_string_equal(str_at(d, "configData", "config", "User"), "1000");
	json_decref(d);
	free(reference);
	/* a digest that the body does not have */
	reference = gv_xasprintf("127.0.0.1:%d/team/app:v1@%s", F.srv->port, F.cfg_digest);
	F.routes[F.nroutes] = F.routes[2]; /* serve M under C's digest */
	snprintf(F.routes[F.nroutes].path, sizeof(F.routes[0].path), "/v2/team/app/manifests/%s",
		 F.cfg_digest);
	F.routes[F.nroutes].body = gv_xstrdup(F.routes[2].body);
	F.nroutes++;
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "digest mismatch"));
	free(reference);
	/* a sha512 reference: manifests are checked by their sha256 */
	reference = gv_xasprintf("127.0.0.1:%d/team/app@sha512:%0128d", F.srv->port, 7);
	F.routes[F.nroutes] = F.routes[2];
	snprintf(F.routes[F.nroutes].path, sizeof(F.routes[0].path),
		 "/v2/team/app/manifests/sha512:%0128d", 7);
	F.routes[F.nroutes].body = gv_xstrdup(F.routes[2].body);
	F.nroutes++;
	gv_err_clear(&err);
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "digest mismatch"));
	free(reference);
}

static void test_bearer_token(void **state)
{
	char *reference = ref(":v1"), *b64, *dc;
	json_t *d = NULL, *configs;
	struct gv_err err = {0};
	struct kube_registry_opts opts = {0};

	(void)state;
	F.auth = AUTH_BEARER;
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_OK);
	assert_string_equal(str_at(d, "configData", "config", "User"), "1000");
	json_decref(d);
	assert_non_null(strstr(F.token_query, "service=fake%20registry"));
	assert_non_null(strstr(F.token_query, "scope=repository%3Ateam%2Fapp%3Apull"));
	assert_string_equal(F.token_auth, ""); /* anonymous token */

	/* a realm that wants the docker config's credentials */
	b64 = kube_base64_encode("alice:s3cret", 12);
	snprintf(F.basic, sizeof(F.basic), "Basic %s", b64);
	F.token_wants_basic = true;
	gv_err_clear(&err);
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "authentication denied"));
	dc = gv_xasprintf("[{\"auths\":{\"https://127.0.0.1:%d/v1/\":{\"auth\":\"%s\"}}}]",
			  F.srv->port, b64);
	configs = json_loads(dc, 0, NULL);
	opts.docker_configs = configs;
	gv_err_clear(&err);
	assert_int_equal(fetch(NULL, reference, &opts, &d, &err), GV_OK);
	assert_string_equal(F.token_auth, F.basic);
	json_decref(d);
	F.token_wants_basic = false;
	F.auth = AUTH_NONE;
	json_decref(configs);
	free(dc);
	free(b64);
	free(reference);
}

static void test_basic_docker_config(void **state)
{
	char *reference = ref(":v1"), *b64, *dc;
	json_t *d = NULL, *configs;
	struct gv_err err = {0};
	struct kube_registry_opts opts = {0};

	(void)state;
	b64 = kube_base64_encode("bob:pa:ss", 9);
	snprintf(F.basic, sizeof(F.basic), "Basic %s", b64);
	F.auth = AUTH_BASIC;
	/* anonymous: refused with a clear message */
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "authentication required"));
	/* a config for another registry first, then ours (username/password form) */
	dc = gv_xasprintf("[{\"auths\":{\"other.example.com\":{\"auth\":\"eDp5\"}}},"
			  "{\"auths\":{\"127.0.0.1:%d\":{\"username\":\"bob\",\"password\":"
			  "\"pa:ss\"}}}]",
			  F.srv->port);
	configs = json_loads(dc, 0, NULL);
	opts.docker_configs = configs;
	assert_int_equal(fetch(NULL, reference, &opts, &d, &err), GV_OK);
	assert_string_equal(str_at(d, "configData", "config", "User"), "1000");
	json_decref(d);
	json_decref(configs);
	free(dc);
	/* an exact key wins over an earlier wildcard one */
	dc = gv_xasprintf("[{\"auths\":{\"*.0.0.1:%d\":{\"auth\":\"Ym9iOndyb25n\"}}},"
			  "{\"auths\":{\"http://127.0.0.1:%d/v2/\":{\"auth\":\"%s\"}}}]",
			  F.srv->port, F.srv->port, b64);
	configs = json_loads(dc, 0, NULL);
	opts.docker_configs = configs;
	assert_int_equal(fetch(NULL, reference, &opts, &d, &err), GV_OK);
	json_decref(d);
	json_decref(configs);
	free(dc);
	/* the wildcard alone is used (and its password is wrong) */
	dc = gv_xasprintf("{\"auths\":{\"*.0.0.1:%d\":{\"auth\":\"Ym9iOndyb25n\"}}}", F.srv->port);
	configs = json_loads(dc, 0, NULL);
	opts.docker_configs = configs;
	gv_err_clear(&err);
	assert_int_equal(fetch(NULL, reference, &opts, &d, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "authentication denied"));
	json_decref(configs);
	free(dc);
	/* the wrong password */
	dc = gv_xasprintf("{\"auths\":{\"127.0.0.1:%d\":{\"auth\":\"%s\"}}}", F.srv->port,
			  "Ym9iOndyb25n");
	configs = json_loads(dc, 0, NULL);
	opts.docker_configs = configs;
	gv_err_clear(&err);
	assert_int_equal(fetch(NULL, reference, &opts, &d, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "authentication denied"));
	assert_null(strstr(err.msg, "wrong")); /* no credentials in messages */
	json_decref(configs);
	free(dc);
	/* an "auth" that is not base64 of user:password */
	configs = json_pack("{s{s{ss}}}", "auths", "127.0.0.1", "auth", "bm9jb2xvbg==");
	opts.docker_configs = configs;
	gv_err_clear(&err);
	free(reference);
	reference = gv_xstrdup("127.0.0.1/team/app:v1");
	assert_int_equal(fetch(NULL, reference, &opts, &d, &err), GV_EINVAL);
	assert_string_equal(err.msg, "docker config entry \"127.0.0.1\": bad auth");
	assert_int_equal(configs->refcount, 1);
	json_decref(configs);
	F.auth = AUTH_NONE;
	free(b64);
	free(reference);
}

static void test_not_found_and_unreachable(void **state)
{
	char *reference = ref(":nope"), *dead;
	json_t *d = NULL;
	struct gv_err err = {0};
	struct httpd *tmp;
	int port;

	(void)state;
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_ENOENT);
	assert_non_null(strstr(err.msg, "manifest unknown"));
	assert_non_null(strstr(err.msg, "/team/app:nope"));
	assert_null(d);
	free(reference);

	tmp = httpd_start(handler, NULL, NULL);
	port = tmp->port;
	httpd_stop(tmp); /* a port nobody listens on */
	dead = gv_xasprintf("127.0.0.1:%d/team/app:v1", port);
	gv_err_clear(&err);
	assert_int_equal(fetch(NULL, dead, NULL, &d, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "unreachable"));
	free(dead);

	gv_err_clear(&err);
	assert_int_equal(fetch(NULL, "Bad//Ref", NULL, &d, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "invalid image reference \"Bad//Ref\""));
}

static void test_oversize(void **state)
{
	struct kube_registry_limits lim = {.max_body = 300};
	char *reference = ref(":v1");
	json_t *d = NULL;
	struct gv_err err = {0};

	(void)state;
	assert_true(strlen(F.routes[2].body) > 300);
	assert_int_equal(fetch(&lim, reference, NULL, &d, &err), GV_ELIMIT);
	assert_non_null(strstr(err.msg, "larger than 300 bytes"));
	free(reference);
}

static void test_timeout(void **state)
{
	struct kube_registry_limits lim = {.timeout_ms = 300};
	char *reference = ref(":v1");
	json_t *d = NULL;
	struct gv_err err = {0};
	struct timespec a, b;
	long ms;

	(void)state;
	F.delay_ms = 3000;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(fetch(&lim, reference, NULL, &d, &err), GV_ENET);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	assert_non_null(strstr(err.msg, "timed out after 300 ms"));
	assert_true(ms >= 250 && ms < 1500);
	F.delay_ms = 0;
	free(reference);
}

static void test_cache(void **state)
{
	struct kube_registry *r =
	    kube_registry_new(&(struct kube_registry_limits){.ref_ttl_ms = 300});
	char *tag = ref(":v1"),
	     *dig = gv_xasprintf("127.0.0.1:%d/team/app@%s", F.srv->port, F.man_digest);
	json_t *a = NULL, *b = NULL, *c = NULL;
	struct gv_err err = {0};
	struct kube_registry_opts insecure = {.allow_insecure = true};
	int n0 = httpd_count(F.srv), n1;

	(void)state;
	assert_int_equal(kube_registry_image_data(r, tag, NULL, &a, &err), GV_OK);
	n1 = httpd_count(F.srv);
	assert_int_equal(n1 - n0, 2); /* manifest, config */
	/* the same reference: no request, an equal private copy */
	assert_int_equal(kube_registry_image_data(r, tag, NULL, &b, &err), GV_OK);
	assert_int_equal(httpd_count(F.srv), n1);
	assert_true(json_equal(a, b));
	assert_ptr_not_equal(a, b);
	json_object_set_new(b, "image", json_string("changed")); /* the caller's own copy */
	json_decref(b);
	/* by digest: answered from the digest cache, no request */
	assert_int_equal(kube_registry_image_data(r, dig, NULL, &b, &err), GV_OK);
	assert_int_equal(httpd_count(F.srv), n1);
	assert_string_equal(str_at(b, "identifier", NULL, NULL), F.man_digest);
	assert_string_equal(str_at(b, "image", NULL, NULL), dig);
	assert_true(json_equal(json_object_get(a, "manifest"), json_object_get(b, "manifest")));
	json_decref(b);
	/* other credentials options: not shared */
	assert_int_equal(kube_registry_image_data(r, tag, &insecure, &c, &err), GV_OK);
	assert_int_equal(httpd_count(F.srv), n1 + 2);
	json_decref(c);
	/* past the TTL the tag is asked again; the digest is known, so no config request */
	usleep(350 * 1000);
	assert_int_equal(kube_registry_image_data(r, tag, NULL, &b, &err), GV_OK);
	assert_int_equal(httpd_count(F.srv), n1 + 3);
	assert_true(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	kube_registry_free(r);
	free(tag);
	free(dig);
}

static void test_cache_bounds(void **state)
{
	struct kube_registry *r =
	    kube_registry_new(&(struct kube_registry_limits){.cache_entries = 2});
	char *refs[3] = {ref(":v1"), ref(":multi"),
			 gv_xasprintf("127.0.0.1:%d/team/app@%s", F.srv->port, F.amd_digest)};
	json_t *d;
	struct gv_err err = {0};
	int n;

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(kube_registry_image_data(r, refs[i], NULL, &d, &err), GV_OK);
		json_decref(d);
	}
	/* refs[0] was dropped (two entries): asked again */
	n = httpd_count(F.srv);
	assert_int_equal(kube_registry_image_data(r, refs[2], NULL, &d, &err), GV_OK);
	json_decref(d);
	assert_int_equal(httpd_count(F.srv), n);
	assert_int_equal(kube_registry_image_data(r, refs[0], NULL, &d, &err), GV_OK);
	json_decref(d);
	assert_true(httpd_count(F.srv) > n);
	kube_registry_free(r);
	for (int i = 0; i < 3; i++)
		free(refs[i]);
}

static int conns(struct httpd *s)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = s->nconns;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* A loopback registry that answered on http:// only is not asked over https:// again. */
static void test_plain_http_remembered(void **state)
{
	struct kube_registry *r = kube_registry_new(NULL);
	char *v1 = ref(":v1"), *multi = ref(":multi");
	json_t *d = NULL;
	struct gv_err err = {0};
	int c0 = conns(F.srv), c1;

	(void)state;
	assert_int_equal(kube_registry_image_data(r, v1, NULL, &d, &err), GV_OK);
	json_decref(d);
	c1 = conns(F.srv);
	assert_int_equal(c1 - c0, 3); /* the https:// attempt, then manifest and config */
	assert_int_equal(kube_registry_image_data(r, multi, NULL, &d, &err), GV_OK);
	json_decref(d);
	assert_int_equal(conns(F.srv) - c1, 3); /* index, manifest, config: no https:// attempt */
	kube_registry_free(r);
	free(v1);
	free(multi);
}

struct par {
	struct kube_registry *r;
	const char *ref;
	int ok;
};

static void *par_main(void *arg)
{
	struct par *p = arg;

	for (int i = 0; i < 20; i++) {
		json_t *d = NULL;
		struct gv_err err = {0};

		if (kube_registry_image_data(p->r, p->ref, NULL, &d, &err) == GV_OK &&
		    !strcmp(
			json_string_value(json_object_get(
			    json_object_get(json_object_get(d, "configData"), "config"), "User")),
			"1000"))
			p->ok++;
		json_decref(d);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct kube_registry *r =
	    kube_registry_new(&(struct kube_registry_limits){.cache_entries = 1});
	char *refs[2] = {ref(":v1"), ref(":multi")};
	struct par p[4];
	pthread_t t[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		p[i] = (struct par){.r = r, .ref = refs[i % 2]};
		pthread_create(&t[i], NULL, par_main, &p[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(p[i].ok, 20);
	}
	kube_registry_free(r);
	free(refs[0]);
	free(refs[1]);
}

/* A server context with a fresh self-signed certificate for IP 127.0.0.1. */
static SSL_CTX *test_tls(void)
{
	EVP_PKEY *pk = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name = X509_get_subject_name(x);
	X509V3_CTX v3;
	X509_EXTENSION *ext;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, pk);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1,
				   -1, 0);
	X509_set_issuer_name(x, name);
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	X509_sign(x, pk, EVP_sha256());
	assert_int_equal(SSL_CTX_use_certificate(ctx, x), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, pk), 1);
	X509_free(x);
	EVP_PKEY_free(pk);
	return ctx;
}

/* https: verified unless allowInsecureRegistry; no silent fallback to a plain answer. */
static void test_https(void **state)
{
	SSL_CTX *tls = test_tls();
	struct httpd *s = httpd_start(handler, NULL, tls);
	char *reference = gv_xasprintf("127.0.0.1:%d/team/app:v1", s->port);
	struct kube_registry_opts insecure = {.allow_insecure = true};
	json_t *d = NULL;
	struct gv_err err = {0};
	int n;

	(void)state;
	assert_int_equal(fetch(NULL, reference, &insecure, &d, &err), GV_OK);
	assert_string_equal(str_at(d, "configData", "config", "User"), "1000");
	assert_int_equal(httpd_count(s), 2); /* over TLS: the plain server saw nothing */
	json_decref(d);
	d = NULL;
	n = httpd_count(s);
	assert_int_equal(fetch(NULL, reference, NULL, &d, &err), GV_ENET);
	assert_null(d);
	assert_non_null(strstr(err.msg, "unreachable"));
	assert_non_null(strstr(err.msg, "certificate"));
	assert_int_equal(httpd_count(s), n);
	httpd_stop(s);
	SSL_CTX_free(tls);
	free(reference);
}

static void check_ref(const char *in, const char *domain, const char *path, const char *tag,
		      const char *digest)
{
	struct gv_imageref r;
	struct gv_err err = {0};

	assert_int_equal(gv_imageref_parse(in, strlen(in), &r, &err), GV_OK);
	gv_imageref_docker_hub(&r);
	assert_string_equal(r.domain, domain);
	assert_string_equal(r.path, path);
	if (tag)
		assert_string_equal(r.tag, tag);
	else
		assert_null(r.tag);
	if (digest)
		assert_string_equal(r.digest, digest);
	else
		assert_null(r.digest);
	gv_imageref_release(&r);
}

static void test_reference_normalization(void **state)
{
	const char *d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char *s = gv_xasprintf("ghcr.io/org/app:1.0@%s", d);
	struct gv_imageref r;
	struct gv_err err = {0};

	(void)state;
	check_ref("nginx", "index.docker.io", "library/nginx", NULL, NULL);
	check_ref("nginx:1.25", "index.docker.io", "library/nginx", "1.25", NULL);
	check_ref("docker.io/nginx", "index.docker.io", "library/nginx", NULL, NULL);
	check_ref("index.docker.io/library/nginx", "index.docker.io", "library/nginx", NULL, NULL);
	check_ref("bitnami/redis:7", "index.docker.io", "bitnami/redis", "7", NULL);
	check_ref("localhost/app", "localhost", "app", NULL, NULL);
	check_ref("127.0.0.1:5000/a/b/c:t", "127.0.0.1:5000", "a/b/c", "t", NULL);
	check_ref(s, "ghcr.io", "org/app", "1.0", d);
	free(s);
	assert_int_equal(gv_imageref_parse("Nginx", 5, &r, &err), GV_EINVAL);
	assert_string_equal(err.msg, "repository name must be lowercase");
	gv_err_clear(&err);
	assert_int_equal(gv_imageref_parse("app:", 4, &r, &err), GV_EINVAL);
	assert_string_equal(err.msg, "invalid reference format");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reference_normalization),
	    cmocka_unit_test_setup_teardown(test_docker_manifest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_https, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oci_index_amd64, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_by_digest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bearer_token, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_basic_docker_config, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_found_and_unreachable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oversize, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cache_bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_plain_http_remembered, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
