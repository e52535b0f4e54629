/*
 * registry.c - the registry (HTTP API v2) client behind the imageRegistry
 * context entry. See registry.h for the contract; here: the request loop
 * with its token flow, index resolution, digest checks and the two caches.
 *
 * Wire references: the OCI distribution spec (pulling manifests and
 * blobs), Docker's token authentication spec (WWW-Authenticate Bearer
 * challenge, GET realm?service=&scope=, {"token"} / {"access_token"}).
 */
#include "kube/registry.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "common/imageref.h"
#include "kube/kube.h"
#include "common/banned.h"

#define REG_TIMEOUT_MS	  10000L
#define REG_MAX_BODY	  (4u << 20)
#define REG_REF_TTL_MS	  30000L
#define REG_CACHE_ENTRIES 256u
#define REG_CACHE_BYTES	  (32u << 20)
#define REG_MAX_REDIRS	  5L
#define REG_MAX_HEADER	  4096u	  /* bytes of one kept header value */
#define REG_PLAIN_HOSTS	  64	  /* registries remembered as http:// only */
#define REG_PLAIN_TTL_MS  300000L /* ... for this long, then https:// is tried again */

static const char ACCEPT_MANIFEST[] = "Accept: application/vnd.oci.image.manifest.v1+json, "
				      "application/vnd.oci.image.index.v1+json, "
				      "application/vnd.docker.distribution.manifest.v2+json, "
				      "application/vnd.docker.distribution.manifest.list.v2+json";

/* ---- caches ---- */

struct cache_entry {
	char *key;	 /* owned */
	json_t *value;	 /* owned */
	size_t bytes;	 /* manifest + config bytes it stands for */
	long long at_ms; /* monotonic time it was stored */
	uint64_t used;	 /* LRU tick of its last use */
};

struct cache {
	struct cache_entry *e; /* owned, max_entries long */
	size_t n, max_entries;
	size_t bytes, max_bytes;
	uint64_t tick;
};

/* A registry found to answer on http:// only (https:// could not connect). */
struct plain_host {
	char host[256];
	long long at_ms; /* 0 = free slot */
};

/* One thread's curl handle (its connections and TLS state are kept between calls). */
struct reg_handle {
	void *curl;		 /* owned CURL * */
	struct kube_registry *r; /* borrowed */
	struct reg_handle *next; /* in r->handles */
	struct reg_handle **pprev;
};

struct kube_registry {
	struct kube_registry_limits lim;
	pthread_key_t key;			  /* -> struct reg_handle of the calling thread */
	struct reg_handle *handles;		  /* under mu */
	pthread_mutex_t mu;			  /* refs, digests, handles */
	struct plain_host plain[REG_PLAIN_HOSTS]; /* under mu */
	struct cache refs;			  /* "<fingerprint> <reference>" -> ImageData */
	struct cache digests; /* "<fingerprint> <registry>/<repository>@<digest>" ->
				 {"manifest", "configData"} */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cache_init(struct cache *c, size_t entries, size_t bytes)
{
	c->max_entries = entries;
	c->max_bytes = bytes;
	c->e = gv_xcalloc(entries, sizeof(*c->e));
}

static void cache_drop(struct cache *c, size_t i)
{
	free(c->e[i].key);
	json_decref(c->e[i].value);
	c->bytes -= c->e[i].bytes;
	c->e[i] = c->e[--c->n];
}

static void cache_release(struct cache *c)
{
	while (c->n)
		cache_drop(c, c->n - 1);
	free(c->e);
}

/*
 * A private copy of the value under key, NULL when absent or older than
 * ttl_ms (0 = any age); *bytes (may be NULL) gets the size it was stored with.
 */
static json_t *cache_get(struct cache *c, const char *key, long ttl_ms, long long now,
			 size_t *bytes)
{
	for (size_t i = 0; i < c->n; i++) {
		if (strcmp(c->e[i].key, key))
			continue;
		if (ttl_ms > 0 && now - c->e[i].at_ms >= ttl_ms) {
			cache_drop(c, i);
			return NULL;
		}
		c->e[i].used = ++c->tick;
		if (bytes)
			*bytes = c->e[i].bytes;
		return json_deep_copy(c->e[i].value);
	}
	return NULL;
}

/* Stores a copy of value; entries least recently used go first past the bounds. */
static void cache_put(struct cache *c, const char *key, const json_t *value, size_t bytes,
		      long long now)
{
	if (!c->max_entries || bytes > c->max_bytes / 4)
		return; /* one entry may not take more than a quarter of the cache */
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->e[i].key, key)) {
			cache_drop(c, i);
			break;
		}
	while (c->n && (c->n >= c->max_entries || c->bytes + bytes > c->max_bytes)) {
		size_t lru = 0;

		for (size_t i = 1; i < c->n; i++)
			if (c->e[i].used < c->e[lru].used)
				lru = i;
		cache_drop(c, lru);
	}
	c->e[c->n] = (struct cache_entry){.key = gv_xstrdup(key),
					  .value = json_deep_copy(value),
					  .bytes = bytes,
					  .at_ms = now,
					  .used = ++c->tick};
	c->bytes += bytes;
	c->n++;
}

/* A thread ended: its handle goes. */
static void handle_destroy(void *p)
{
	struct reg_handle *h = p;

	pthread_mutex_lock(&h->r->mu);
	*h->pprev = h->next;
	if (h->next)
		h->next->pprev = h->pprev;
	pthread_mutex_unlock(&h->r->mu);
	curl_easy_cleanup(h->curl);
	free(h);
}

/* The calling thread's curl handle, NULL when curl cannot make one. */
static CURL *thread_curl(struct kube_registry *r)
{
	struct reg_handle *h = pthread_getspecific(r->key);
	CURL *cu;

	if (h)
		return h->curl;
	cu = curl_easy_init();
	if (!cu)
		return NULL;
	h = gv_xcalloc(1, sizeof(*h));
	h->curl = cu;
	h->r = r;
	pthread_mutex_lock(&r->mu);
	h->next = r->handles;
	if (h->next)
		h->next->pprev = &h->next;
	h->pprev = &r->handles;
	r->handles = h;
	pthread_mutex_unlock(&r->mu);
	pthread_setspecific(r->key, h);
	return cu;
}

struct kube_registry *kube_registry_new(const struct kube_registry_limits *lim)
{
	struct kube_registry *r = gv_xcalloc(1, sizeof(*r));

	if (lim)
		r->lim = *lim;
	if (r->lim.timeout_ms <= 0)
		r->lim.timeout_ms = REG_TIMEOUT_MS;
	if (!r->lim.max_body)
		r->lim.max_body = REG_MAX_BODY;
	if (r->lim.ref_ttl_ms <= 0)
		r->lim.ref_ttl_ms = REG_REF_TTL_MS;
	if (!r->lim.cache_entries)
		r->lim.cache_entries = REG_CACHE_ENTRIES;
	if (!r->lim.cache_bytes)
		r->lim.cache_bytes = REG_CACHE_BYTES;
	pthread_mutex_init(&r->mu, NULL);
	if (pthread_key_create(&r->key, handle_destroy))
		abort(); /* out of keys: as out of memory */
	cache_init(&r->refs, r->lim.cache_entries, r->lim.cache_bytes);
	cache_init(&r->digests, r->lim.cache_entries, r->lim.cache_bytes);
	curl_global_init(CURL_GLOBAL_DEFAULT); /* thread-safe since curl 7.84 */
	return r;
}

void kube_registry_free(struct kube_registry *r)
{
	if (!r)
		return;
	pthread_key_delete(r->key); /* no destructor runs after this */
	while (r->handles) {
		struct reg_handle *h = r->handles;

		r->handles = h->next;
		curl_easy_cleanup(h->curl);
		free(h);
	}
	cache_release(&r->refs);
	cache_release(&r->digests);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* ---- one call ---- */

struct call {
	struct kube_registry *r;      /* borrowed */
	const char *reference;	      /* borrowed: as given */
	struct gv_imageref ref;	      /* owned; domain/path normalised for Docker Hub */
	bool insecure;		      /* allowInsecureRegistry */
	bool http_ok;		      /* http:// may be tried after https:// */
	const char *scheme;	      /* "https", "http", or NULL before the first answer */
	char *user, *pass, *regtoken; /* owned: credentials for this registry, or NULL */
	char *authz;		      /* owned: Authorization value to send, or NULL */
	bool auth_tried;	      /* a challenge was answered already */
	long long deadline;	      /* monotonic ms */
	CURL *curl;		      /* borrowed: the thread's handle */
	char errbuf[CURL_ERROR_SIZE];
};

struct resp {
	long http;
	struct gv_buf body;
	size_t max;
	bool too_big;
	char content_type[256];
	char challenge[REG_MAX_HEADER]; /* WWW-Authenticate (a Bearer one preferred) */
};

static void resp_reset(struct resp *rs)
{
	rs->http = 0;
	gv_buf_reset(&rs->body);
	rs->too_big = false;
	rs->content_type[0] = rs->challenge[0] = '\0';
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	struct resp *rs = ud;
	size_t n = size * nmemb;

	if (rs->body.len + n > rs->max) {
		rs->too_big = true;
		return 0;
	}
	gv_buf_add(&rs->body, p, n);
	return n;
}

/* Copies the value of header line p (n bytes) into out when its name is name. */
static bool header_value(const char *p, size_t n, const char *name, char *out, size_t outn)
{
	size_t ln = strlen(name), vlen;

	if (n <= ln || strncasecmp(p, name, ln) || p[ln] != ':')
		return false;
	p += ln + 1;
	n -= ln + 1;
	while (n && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' '))
		n--;
	vlen = n < outn - 1 ? n : outn - 1;
	memcpy(out, p, vlen);
	out[vlen] = '\0';
	return true;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct resp *rs = ud;
	size_t n = size * nmemb;
	char tmp[REG_MAX_HEADER];

	if (n >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a redirect) */
		rs->content_type[0] = rs->challenge[0] = '\0';
		return n;
	}
	header_value(p, n, "Content-Type", rs->content_type, sizeof(rs->content_type));
	if (header_value(p, n, "WWW-Authenticate", tmp, sizeof(tmp)) &&
	    (!rs->challenge[0] || !strncasecmp(tmp, "Bearer", 6)))
		memcpy(rs->challenge, tmp, sizeof(tmp));
	return n;
}

static const char *reg_host(const struct call *c)
{
	return c->ref.domain;
}

/* localhost, loopback and RFC 1918 hosts: go-containerregistry's Registry.Scheme() "http" set. */
static bool host_is_private(const char *hostport)
{
	char host[256];
	const char *end;
	unsigned a, b;

	if (hostport[0] == '[') {
		end = strchr(hostport, ']');
		snprintf(host, sizeof(host), "%.*s", end ? (int)(end - hostport - 1) : 0,
			 hostport + 1);
		return !strcmp(host, "::1");
	}
	end = strchr(hostport, ':');
	snprintf(host, sizeof(host), "%.*s", end ? (int)(end - hostport) : (int)strlen(hostport),
		 hostport);
	if (!strcmp(host, "localhost"))
		return true;
	if (sscanf(host, "%u.%u.", &a, &b) != 2)
		return false;
	return a == 127 || a == 10 || (a == 172 && b >= 16 && b <= 31) || (a == 192 && b == 168);
}

static long remaining_ms(const struct call *c)
{
	return (long)(c->deadline - now_ms());
}

/*
 * One GET of url (absolute) with accept (a full "Accept: ..." line or NULL)
 * and the call's Authorization. GV_OK whatever the HTTP status (in rs->http).
 */
static enum gv_code http_get(struct call *c, const char *url, const char *accept, const char *authz,
			     struct resp *rs, struct gv_err *err)
{
	struct curl_slist *hdrs = NULL;
	char *auth_line = NULL;
	long left = remaining_ms(c);
	CURLcode cc;
	enum gv_code rc = GV_OK;

	resp_reset(rs);
	if (left <= 0)
		return gv_err_set(err, GV_ENET, "registry %s: timed out after %ld ms", reg_host(c),
				  c->r->lim.timeout_ms);
	if (accept)
		hdrs = curl_slist_append(hdrs, accept);
	if (authz) {
		auth_line = gv_xasprintf("Authorization: %s", authz);
		hdrs = curl_slist_append(hdrs, auth_line);
	}
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, left);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, left);
	curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c->curl, CURLOPT_MAXREDIRS, REG_MAX_REDIRS);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_REDIR_PROTOCOLS_STR,
			 c->insecure || c->http_ok ? "http,https" : "https");
	curl_easy_setopt(c->curl, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
	curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "gavel");
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, rs);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, rs);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf);
	c->errbuf[0] = '\0';
	cc = curl_easy_perform(c->curl);
	if (cc == CURLE_WRITE_ERROR && rs->too_big) {
		rc = gv_err_set(err, GV_ELIMIT, "registry %s: response larger than %zu bytes",
				reg_host(c), rs->max);
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		rc = gv_err_set(err, GV_ENET, "registry %s: timed out after %ld ms", reg_host(c),
				c->r->lim.timeout_ms);
	} else if (cc != CURLE_OK) {
		rc = gv_err_set(err, GV_ENET, "registry %s unreachable: %s", reg_host(c),
				c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
	} else {
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &rs->http);
	}
	curl_slist_free_all(hdrs);
	free(auth_line);
	return rc;
}

/* True when host answered on http:// only in the last REG_PLAIN_TTL_MS. */
static bool plain_known(struct kube_registry *r, const char *host)
{
	long long now = now_ms();
	bool known = false;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < REG_PLAIN_HOSTS; i++)
		if (r->plain[i].at_ms && now - r->plain[i].at_ms < REG_PLAIN_TTL_MS &&
		    !strcmp(r->plain[i].host, host))
			known = true;
	pthread_mutex_unlock(&r->mu);
	return known;
}

/* Remembers host as http:// only (the oldest slot goes when all are taken). */
static void plain_remember(struct kube_registry *r, const char *host)
{
	size_t slot = 0;

	if (strlen(host) >= sizeof(r->plain[0].host))
		return;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < REG_PLAIN_HOSTS; i++) {
		if (!strcmp(r->plain[i].host, host)) {
			slot = i;
			break;
		}
		if (r->plain[i].at_ms < r->plain[slot].at_ms)
			slot = i;
	}
	snprintf(r->plain[slot].host, sizeof(r->plain[slot].host), "%s", host);
	r->plain[slot].at_ms = now_ms();
	pthread_mutex_unlock(&r->mu);
}

/* GET of /v2/<path> on the registry; picks the scheme on the first request. */
static enum gv_code v2_get_once(struct call *c, const char *path, const char *accept,
				struct resp *rs, struct gv_err *err)
{
	struct gv_err first = {0}, second = {0};
	char *url;
	enum gv_code rc;

	if (c->scheme) {
		url = gv_xasprintf("%s://%s/v2/%s", c->scheme, reg_host(c), path);
		rc = http_get(c, url, accept, c->authz, rs, err);
		free(url);
		return rc;
	}
	url = gv_xasprintf("https://%s/v2/%s", reg_host(c), path);
	rc = http_get(c, url, accept, c->authz, rs, c->http_ok ? &first : err);
	free(url);
	if (!rc || !c->http_ok || rs->too_big || remaining_ms(c) <= 0) {
		if (rc && c->http_ok && first.code == GV_ENET && remaining_ms(c) <= 0)
			gv_err_set(err, GV_ENET, "registry %s: timed out after %ld ms", reg_host(c),
				   c->r->lim.timeout_ms);
		else if (rc && c->http_ok)
			gv_err_set(err, first.code, "%s", first.msg);
		if (!rc)
			c->scheme = "https";
		return rc;
	}
	/* go-containerregistry's ping: http:// after https:// failed to connect */
	url = gv_xasprintf("http://%s/v2/%s", reg_host(c), path);
	rc = http_get(c, url, accept, c->authz, rs, &second);
	free(url);
	if (!rc) {
		c->scheme = "http";
		plain_remember(c->r, reg_host(c));
	} else if (rc == GV_ENET && first.code == GV_ENET && strstr(second.msg, " unreachable: ")) {
		gv_err_set(err, rc, "%s; over http:// too: %s", first.msg, second.msg);
	} else {
		gv_err_set(err, second.code, "%s", second.msg);
	}
	return rc;
}

/* Parses `key="value", key=value` auth-params of a challenge; value of key into out. */
static bool challenge_param(const char *ch, const char *key, char *out, size_t outn)
{
	const char *p = ch;
	size_t kl = strlen(key);

	while (*p && !isspace((unsigned char)*p)) /* the scheme */
		p++;
	while (*p) {
		const char *k, *v;
		size_t klen, vlen = 0;
		bool match;

		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		k = p;
		while (*p && *p != '=' && *p != ',')
			p++;
		klen = (size_t)(p - k);
		if (*p != '=')
			continue;
		p++;
		match = klen == kl && !strncasecmp(k, key, kl);
		if (*p == '"') {
			v = ++p;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1])
					p++;
				p++;
			}
			vlen = (size_t)(p - v);
			if (*p == '"')
				p++;
		} else {
			v = p;
			while (*p && *p != ',')
				p++;
			vlen = (size_t)(p - v);
		}
		if (match) {
			size_t o = 0;

			for (size_t i = 0; i < vlen && o + 1 < outn; i++) {
				if (v[i] == '\\' && i + 1 < vlen)
					i++;
				out[o++] = v[i];
			}
			out[o] = '\0';
			return true;
		}
	}
	return false;
}

static char *basic_value(const struct call *c)
{
	char *pair = gv_xasprintf("%s:%s", c->user, c->pass);
	char *b64 = kube_base64_encode(pair, strlen(pair));
	char *v = gv_xasprintf("Basic %s", b64);

	free(pair);
	free(b64);
	return v;
}

/* Answers the challenge of a 401: sets c->authz. */
static enum gv_code authenticate(struct call *c, const char *challenge, struct gv_err *err)
{
	char realm[2048], service[512], scope[1024];
	struct gv_buf url = {0};
	struct resp rs = {.max = c->r->lim.max_body};
	char *basic = NULL, *esc;
	json_t *j = NULL;
	const char *tok;
	enum gv_code rc = GV_OK;

	if (!strncasecmp(challenge, "Basic", 5)) {
		if (!c->user)
			return gv_err_set(
			    err, GV_ENET,
			    "registry %s: authentication required (401, Basic) and no "
			    "credentials for it",
			    reg_host(c));
		free(c->authz);
		c->authz = basic_value(c);
		return GV_OK;
	}
	if (strncasecmp(challenge, "Bearer", 6))
		return gv_err_set(err, GV_ENET,
				  "registry %s: authentication required (401) with an unsupported "
				  "challenge \"%.64s\"",
				  reg_host(c), challenge);
	if (!challenge_param(challenge, "realm", realm, sizeof(realm)) || !realm[0])
		return gv_err_set(err, GV_ENET, "registry %s: Bearer challenge without a realm",
				  reg_host(c));
	if (strncmp(realm, "https://", 8) &&
	    !(strncmp(realm, "http://", 7) == 0 && (c->insecure || c->http_ok)))
		return gv_err_set(err, GV_ENET,
				  "registry %s: token realm \"%.256s\" is not https://",
				  reg_host(c), realm);
	gv_buf_adds(&url, realm);
	gv_buf_addc(&url, strchr(realm, '?') ? '&' : '?');
	if (challenge_param(challenge, "service", service, sizeof(service))) {
		esc = kube_escape(service);
		gv_buf_addf(&url, "service=%s&", esc);
		free(esc);
	}
	if (!challenge_param(challenge, "scope", scope, sizeof(scope)))
		snprintf(scope, sizeof(scope), "repository:%s:pull", c->ref.path);
	esc = kube_escape(scope);
	gv_buf_addf(&url, "scope=%s", esc);
	free(esc);
	if (c->user)
		basic = basic_value(c);
	rc = http_get(c, gv_buf_str(&url), "Accept: application/json", basic, &rs, err);
	if (rc)
		goto out;
	if (rs.http == 401 || rs.http == 403) {
		rc = gv_err_set(err, GV_ENET, "registry %s: authentication denied (token %ld)",
				reg_host(c), rs.http);
		goto out;
	}
	if (rs.http != 200) {
		rc = gv_err_set(err, GV_ENET, "registry %s: token request failed (%ld)",
				reg_host(c), rs.http);
		goto out;
	}
	j = json_loadb(rs.body.data ? rs.body.data : "", rs.body.len, 0, NULL);
	tok = json_string_value(json_object_get(j, "token"));
	if (!tok || !*tok)
		tok = json_string_value(json_object_get(j, "access_token"));
	if (!tok || !*tok) {
		rc = gv_err_set(err, GV_ENET, "registry %s: token answer without a token",
				reg_host(c));
		goto out;
	}
	free(c->authz);
	c->authz = gv_xasprintf("Bearer %s", tok);
out:
	json_decref(j);
	free(basic);
	gv_buf_release(&url);
	gv_buf_release(&rs.body);
	return rc;
}

/* The registry's error text of a failed answer: "CODE: message" of errors[0], else "". */
static void registry_error(const struct resp *rs, char *out, size_t n)
{
	json_t *j = json_loadb(rs->body.data ? rs->body.data : "", rs->body.len, 0, NULL);
	json_t *e0 = json_array_get(json_object_get(j, "errors"), 0);
	const char *code = json_string_value(json_object_get(e0, "code"));
	const char *msg = json_string_value(json_object_get(e0, "message"));

	if (code || msg)
		snprintf(out, n, " %.64s: %.256s", code ? code : "", msg ? msg : "");
	else
		out[0] = '\0';
	for (char *p = out; *p; p++) /* the registry's text goes into reports: one line */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	json_decref(j);
}

/*
 * GET /v2/<path> answering one auth challenge. On GV_OK rs holds a 200 answer;
 * what names the object in errors ("<registry>/<repository>:<tag>").
 */
static enum gv_code v2_get(struct call *c, const char *path, const char *accept, const char *what,
			   struct resp *rs, struct gv_err *err)
{
	char detail[400];
	enum gv_code rc;

	for (;;) {
		rc = v2_get_once(c, path, accept, rs, err);
		if (rc)
			return rc;
		if (rs->http == 401 && !c->auth_tried && rs->challenge[0]) {
			c->auth_tried = true;
			rc = authenticate(c, rs->challenge, err);
			if (rc)
				return rc;
			continue;
		}
		break;
	}
	if (rs->http == 200)
		return GV_OK;
	registry_error(rs, detail, sizeof(detail));
	if (rs->http == 404)
		return gv_err_set(err, GV_ENOENT, "%s: %s unknown (404%s)", what,
				  strstr(path, "/blobs/") ? "blob" : "manifest", detail);
	if (rs->http == 401)
		return gv_err_set(err, GV_ENET, "registry %s: authentication %s (401%s)",
				  reg_host(c), c->authz ? "denied" : "required", detail);
	if (rs->http == 403)
		return gv_err_set(err, GV_ENET, "registry %s: authentication denied (403%s)",
				  reg_host(c), detail);
	return gv_err_set(err, GV_ENET, "registry %s: GET /v2/%s: HTTP %ld%s", reg_host(c), path,
			  rs->http, detail);
}

static void sha256_text(const char *p, size_t n, char out[GV_SHA256_TEXT_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL);
	gv_sha256_text(md, out);
}

/* Checks body against a digest it was asked by (sha256 only; others are taken as given). */
static enum gv_code check_digest(const struct call *c, const struct resp *rs, const char *want,
				 const char *what, struct gv_err *err)
{
	char got[GV_SHA256_TEXT_LEN];

	if (strncmp(want, "sha256:", 7))
		return GV_OK;
	sha256_text(rs->body.data ? rs->body.data : "", rs->body.len, got);
	if (strcmp(got, want))
		return gv_err_set(err, GV_EINVAL, "%s: digest mismatch: got %s, want %s", what, got,
				  want);
	return GV_OK;
}

static enum gv_code parse_body(const struct resp *rs, const char *what, json_t **out,
			       struct gv_err *err)
{
	json_error_t je;

	*out = json_loadb(rs->body.data ? rs->body.data : "", rs->body.len,
			  JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!*out)
		return gv_err_set(err, GV_EINVAL, "%s: not JSON: %s", what, je.text);
	return GV_OK;
}

/* The media type of a manifest: its mediaType field, else the Content-Type without parameters. */
static void media_type(const json_t *m, const struct resp *rs, char *out, size_t n)
{
	const char *mt = json_string_value(json_object_get(m, "mediaType"));
	size_t len;

	if (mt) {
		snprintf(out, n, "%s", mt);
		return;
	}
	len = strcspn(rs->content_type, "; ");
	snprintf(out, n, "%.*s", (int)len, rs->content_type);
}

static bool is_index(const char *mt, const json_t *m)
{
	if (!strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
	    !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json"))
		return true;
	return json_is_array(json_object_get(m, "manifests")) && !json_object_get(m, "config");
}

static enum gv_code check_image_manifest(const char *mt, const json_t *m, const char *what,
					 struct gv_err *err)
{
	const char *cd;

	if (strcmp(mt, "application/vnd.oci.image.manifest.v1+json") &&
	    strcmp(mt, "application/vnd.docker.distribution.manifest.v2+json") &&
	    !(json_integer_value(json_object_get(m, "schemaVersion")) == 2 &&
	      json_object_get(m, "config")))
		return gv_err_set(err, GV_EINVAL, "%s: unsupported manifest media type \"%.128s\"",
				  what, mt[0] ? mt : "(none)");
	cd = json_string_value(json_object_get(json_object_get(m, "config"), "digest"));
	if (!cd || !strchr(cd, ':') || strchr(cd, '/') || strchr(cd, '?') || strchr(cd, '#'))
		return gv_err_set(err, GV_EINVAL, "%s: manifest has no valid config digest", what);
	return GV_OK;
}

/* The digest of the index entry for linux/amd64 (borrowed from index), NULL when none. */
static const char *pick_platform(const json_t *index)
{
	const json_t *d;
	size_t i;

	json_array_foreach(json_object_get(index, "manifests"), i, d)
	{
		const json_t *pf = json_object_get(d, "platform");
		const char *os = json_string_value(json_object_get(pf, "os"));
		const char *arch = json_string_value(json_object_get(pf, "architecture"));
		const char *dg = json_string_value(json_object_get(d, "digest"));

		if (os && arch && dg && !strcmp(os, "linux") && !strcmp(arch, "amd64"))
			return dg;
	}
	return NULL;
}

/* The digest string is safe in a URL path: "alg:hex" of [a-z0-9+._-] and hex. */
static bool digest_safe(const char *d)
{
	const char *colon = strchr(d, ':');

	if (!colon || colon == d || !colon[1] || strlen(d) > 200)
		return false;
	for (const char *p = d; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("+._-:", *p)))
			return false;
	return true;
}

/*
 * From the top-level manifest m (body in rs) to {"manifest", "configData"}:
 * follows an index to linux/amd64, fetches the config blob.
 */
static enum gv_code resolve_image(struct call *c, json_t *m, const struct resp *top,
				  const char *what, json_t **out, size_t *bytes, struct gv_err *err)
{
	struct resp rs = {.max = c->r->lim.max_body};
	json_t *child = NULL, *config = NULL;
	const json_t *manifest = m;
	char mt[256], *path = NULL;
	const char *cd;
	enum gv_code rc = GV_OK;

	*bytes = top->body.len;
	media_type(m, top, mt, sizeof(mt));
	if (is_index(mt, m)) {
		const char *dg = pick_platform(m);

		if (!dg) {
			rc = gv_err_set(err, GV_EINVAL,
					"%s: no image for platform linux/amd64 in the index", what);
			goto out;
		}
		if (!digest_safe(dg)) {
			rc = gv_err_set(err, GV_EINVAL, "%s: bad digest in the index", what);
			goto out;
		}
		path = gv_xasprintf("%s/manifests/%s", c->ref.path, dg);
		rc = v2_get(c, path, ACCEPT_MANIFEST, what, &rs, err);
		if (!rc)
			rc = check_digest(c, &rs, dg, what, err);
		if (!rc)
			rc = parse_body(&rs, what, &child, err);
		if (rc)
			goto out;
		*bytes += rs.body.len;
		media_type(child, &rs, mt, sizeof(mt));
		manifest = child;
		free(path);
		path = NULL;
	}
	rc = check_image_manifest(mt, manifest, what, err);
	if (rc)
		goto out;
	cd = json_string_value(json_object_get(json_object_get(manifest, "config"), "digest"));
	if (!digest_safe(cd)) {
		rc = gv_err_set(err, GV_EINVAL, "%s: bad config digest", what);
		goto out;
	}
	path = gv_xasprintf("%s/blobs/%s", c->ref.path, cd);
	rc = v2_get(c, path, NULL, what, &rs, err);
	if (!rc)
		rc = check_digest(c, &rs, cd, what, err);
	if (!rc)
		rc = parse_body(&rs, what, &config, err);
	if (rc)
		goto out;
	*bytes += rs.body.len;
	*out = json_pack("{sOsOsO}", "manifest", manifest, "configData", config, "manifestList",
			 child ? m : json_null());
out:
	json_decref(child);
	json_decref(config);
	free(path);
	gv_buf_release(&rs.body);
	return rc;
}

/* ---- credentials ---- */

/*
 * How a docker config key ("https://index.docker.io/v1/", "reg:5000",
 * "*.example.com") matches host: 2 exactly (or a Docker Hub alias), 1 by
 * its wildcard, 0 not.
 */
static int key_matches(const char *key, const char *host, bool hub)
{
	char k[512];
	size_t n;

	if (!strncasecmp(key, "https://", 8))
		key += 8;
	else if (!strncasecmp(key, "http://", 7))
		key += 7;
	n = strcspn(key, "/");
	if (n >= sizeof(k))
		return 0;
	memcpy(k, key, n);
	k[n] = '\0';
	if (hub && (!strcasecmp(k, "docker.io") || !strcasecmp(k, "index.docker.io") ||
		    !strcasecmp(k, "registry-1.docker.io")))
		return 2;
	if (!strcasecmp(k, host))
		return 2;
	if (k[0] == '*' && k[1] == '.') {
		const char *dot = strchr(host, '.');

		return dot && dot != host && !strcasecmp(dot, k + 1) ? 1 : 0;
	}
	return 0;
}

/*
 * Takes the credentials of the first entry that matches exactly, else of the
 * first that matches by a wildcard. GV_EINVAL for a bad "auth".
 */
static enum gv_code find_credentials(struct call *c, const json_t *configs, struct gv_err *err)
{
	bool hub = !strcmp(reg_host(c), "index.docker.io");
	size_t ndocs = json_is_array(configs) ? json_array_size(configs) : 1;

	/* read only, no reference taken: the caller's configs may be shared by threads */
	for (int want = 2; want >= 1; want--)
		for (size_t i = 0; i < ndocs; i++) {
			const json_t *doc =
			    json_is_array(configs) ? json_array_get(configs, i) : configs;
			const json_t *auths = json_object_get(doc, "auths");
			const char *key;
			const json_t *e;

			if (!auths)
				auths = doc; /* .dockercfg */
			json_object_foreach((json_t *)auths, key, e)
			{
				const char *auth = json_string_value(json_object_get(e, "auth"));
				const char *u = json_string_value(json_object_get(e, "username"));
				const char *p = json_string_value(json_object_get(e, "password"));
				const char *rt =
				    json_string_value(json_object_get(e, "registrytoken"));

				if (!json_is_object(e) ||
				    key_matches(key, reg_host(c), hub) != want)
					continue;
				if (rt && *rt) {
					c->regtoken = gv_xstrdup(rt);
					goto done;
				}
				if (auth && *auth) {
					char *dec = NULL, *colon;
					struct gv_err e2 = {0};

					if (kube_base64_decode(auth, &dec, NULL, &e2) ||
					    !(colon = strchr(dec, ':'))) {
						free(dec);
						return gv_err_set(
						    err, GV_EINVAL,
						    "docker config entry \"%.128s\": bad auth",
						    key);
					}
					*colon = '\0';
					c->user = gv_xstrdup(dec);
					c->pass = gv_xstrdup(colon + 1);
					free(dec);
					goto done;
				}
				if (u && p && *u) {
					c->user = gv_xstrdup(u);
					c->pass = gv_xstrdup(p);
					goto done;
				}
			}
		}
done:
	if (c->regtoken)
		c->authz = gv_xasprintf("Bearer %s", c->regtoken);
	return GV_OK;
}

/* sha256 of what decides the answers besides the reference: the insecure flag and the configs. */
static void opts_fingerprint(const struct kube_registry_opts *o, char out[GV_SHA256_TEXT_LEN])
{
	char *dump = NULL;
	char *s;

	if (o && o->docker_configs)
		dump =
		    json_dumps(o->docker_configs, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	s = gv_xasprintf("%d %s", o && o->allow_insecure, dump ? dump : "");
	sha256_text(s, strlen(s), out);
	free(s);
	free(dump);
}

/* ---- the call ---- */

enum gv_code kube_registry_image_data(struct kube_registry *r, const char *reference,
				      const struct kube_registry_opts *opts, json_t **out,
				      struct gv_err *err)
{
	struct call c = {.r = r, .reference = reference};
	struct resp rs = {.max = r->lim.max_body};
	struct gv_err perr = {0};
	char fp[GV_SHA256_TEXT_LEN], top[GV_SHA256_TEXT_LEN];
	char *refkey = NULL, *digkey = NULL, *path = NULL, *what = NULL;
	json_t *m = NULL, *resolved = NULL, *data = NULL;
	const char *id;
	size_t bytes = 0;
	enum gv_code rc;

	*out = NULL;
	if (!reference)
		reference = c.reference = "";
	rc = gv_imageref_parse(reference, strlen(reference), &c.ref, &perr);
	if (!rc && !c.ref.domain)
		rc = gv_err_set(&perr, GV_EINVAL, "invalid reference format");
	if (rc) {
		rc = gv_err_set(err, GV_EINVAL, "invalid image reference \"%.256s\": %s", reference,
				perr.msg);
		goto out;
	}
	gv_imageref_docker_hub(&c.ref);
	id = c.ref.digest ? c.ref.digest : c.ref.tag ? c.ref.tag : "latest";
	what = gv_xasprintf("%s/%s%s%s", c.ref.domain, c.ref.path, c.ref.digest ? "@" : ":", id);
	opts_fingerprint(opts, fp);
	refkey = gv_xasprintf("%s %s", fp, reference);
	pthread_mutex_lock(&r->mu);
	data = cache_get(&r->refs, refkey, r->lim.ref_ttl_ms, now_ms(), NULL);
	if (!data && c.ref.digest && !strncmp(c.ref.digest, "sha256:", 7)) {
		digkey = gv_xasprintf("%s %s/%s@%s", fp, c.ref.domain, c.ref.path, c.ref.digest);
		resolved = cache_get(&r->digests, digkey, 0, now_ms(), &bytes);
	}
	pthread_mutex_unlock(&r->mu);
	if (data)
		goto done;
	if (resolved) {
		snprintf(top, sizeof(top), "%s", c.ref.digest);
		goto build;
	}

	c.insecure = opts && opts->allow_insecure;
	c.http_ok = c.insecure || host_is_private(c.ref.domain);
	if (c.http_ok && plain_known(r, c.ref.domain))
		c.scheme = "http";
	c.deadline = now_ms() + r->lim.timeout_ms;
	if (opts && opts->docker_configs) {
		rc = find_credentials(&c, opts->docker_configs, err);
		if (rc)
			goto out;
	}
	c.curl = thread_curl(r);
	if (!c.curl) {
		rc = gv_err_set(err, GV_EINTERNAL, "curl_easy_init failed");
		goto out;
	}
	path = gv_xasprintf("%s/manifests/%s", c.ref.path, id);
	rc = v2_get(&c, path, ACCEPT_MANIFEST, what, &rs, err);
	if (rc)
		goto out;
	sha256_text(rs.body.data ? rs.body.data : "", rs.body.len, top);
	if (c.ref.digest && strcmp(c.ref.digest, top)) {
		/* go-containerregistry checks a manifest by its sha256 whatever the algorithm */
		rc = gv_err_set(err, GV_EINVAL, "%s: digest mismatch: got %s, want %s", what, top,
				c.ref.digest);
		goto out;
	}
	free(digkey);
	digkey = gv_xasprintf("%s %s/%s@%s", fp, c.ref.domain, c.ref.path, top);
	pthread_mutex_lock(&r->mu);
	resolved = cache_get(&r->digests, digkey, 0, now_ms(), &bytes);
	pthread_mutex_unlock(&r->mu);
	if (!resolved) {
		rc = parse_body(&rs, what, &m, err);
		if (!rc)
			rc = resolve_image(&c, m, &rs, what, &resolved, &bytes, err);
		if (rc)
			goto out;
		pthread_mutex_lock(&r->mu);
		cache_put(&r->digests, digkey, resolved, bytes, now_ms());
		pthread_mutex_unlock(&r->mu);
	}
build:
	data = json_pack("{sssssssssssOsOsO}", "image", reference, "resolvedImage", "", "registry",
			 c.ref.domain, "repository", c.ref.path, "identifier", id, "manifest",
			 json_object_get(resolved, "manifest"), "configData",
			 json_object_get(resolved, "configData"), "manifestList",
			 json_object_get(resolved, "manifestList"));
	if (!data) {
		rc = gv_err_set(err, GV_EINTERNAL, "%s: incomplete cache entry", what);
		goto out;
	}
	json_object_set_new(data, "resolvedImage",
			    json_sprintf("%s/%s@%s", c.ref.domain, c.ref.path, top));
	pthread_mutex_lock(&r->mu);
	cache_put(&r->refs, refkey, data, bytes, now_ms());
	pthread_mutex_unlock(&r->mu);
done:
	*out = data;
	data = NULL;
	rc = GV_OK;
out:
	gv_imageref_release(&c.ref);
	free(c.user);
	free(c.pass);
	free(c.regtoken);
	free(c.authz);
	json_decref(m);
	json_decref(resolved);
	json_decref(data);
	free(refkey);
	free(digkey);
	free(path);
	free(what);
	gv_buf_release(&rs.body);
	return rc;
}
