/*
 * kube.c - the client: TLS material, per-thread curl handles, bearer tokens,
 * requests with retries, Status errors, paths and paginated lists.
 */
#include "kube/kube.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/json.h"
#include "common/log.h"
#include "kube/kube_int.h"
#include "common/banned.h"

#define USER_AGENT "gavel/0.1"

/* ---- process-wide set-up ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small helpers ---- */

static _Thread_local uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z;

	if (!rng_state) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		rng_state =
		    (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&ts;
		rng_state |= 1;
	}
	z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

unsigned kube_backoff_ms(unsigned attempt, unsigned base_ms, unsigned cap_ms)
{
	uint64_t d = base_ms ? base_ms : 1;
	unsigned lo;

	if (cap_ms < d)
		cap_ms = (unsigned)d;
	for (unsigned i = 1; i < attempt && d < cap_ms; i++)
		d *= 2;
	if (d > cap_ms)
		d = cap_ms;
	lo = (unsigned)(d / 2);
	return lo + (unsigned)(rng_next() % (d - lo + 1));
}

bool kube_sleep(long ms, const atomic_bool *abort)
{
	while (ms > 0) {
		long step = ms > 50 ? 50 : ms;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = step * 1000000L};

		if (abort && atomic_load(abort))
			return true;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		ms -= step;
	}
	return abort && atomic_load(abort);
}

char *kube_read_trimmed(const char *path)
{
	char *s = NULL, *b, *e;
	size_t len;

	if (gv_read_file(path, &s, &len, NULL))
		return NULL;
	for (b = s; *b == ' ' || *b == '\t' || *b == '\n' || *b == '\r'; b++)
		;
	e = b + strlen(b);
	while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		e--;
	if (e == b) {
		free(s);
		return NULL;
	}
	b = gv_xstrndup(b, (size_t)(e - b));
	free(s);
	return b;
}

char *kube_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct gv_buf b = {0};

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			gv_buf_addc(&b, (char)ch);
		} else {
			gv_buf_addc(&b, '%');
			gv_buf_addc(&b, hex[ch >> 4]);
			gv_buf_addc(&b, hex[ch & 15]);
		}
	}
	return gv_buf_detach(&b);
}

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *kube_base64_encode(const void *data, size_t n)
{
	const unsigned char *p = data;
	struct gv_buf b = {0};
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		char q[4] = {b64[v >> 18], b64[(v >> 12) & 63], b64[(v >> 6) & 63], b64[v & 63]};

		gv_buf_add(&b, q, 4);
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		char q[4] = {b64[v >> 18], b64[(v >> 12) & 63], '=', '='};

		gv_buf_add(&b, q, 4);
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		char q[4] = {b64[v >> 18], b64[(v >> 12) & 63], b64[(v >> 6) & 63], '='};

		gv_buf_add(&b, q, 4);
	}
	return gv_buf_detach(&b);
}

static int b64_val(char ch)
{
	const char *p = ch ? strchr(b64, ch) : NULL;

	return p ? (int)(p - b64) : -1;
}

enum gv_code kube_base64_decode(const char *s, char **out, size_t *len, struct gv_err *err)
{
	struct gv_buf b = {0};
	uint32_t acc = 0;
	int nbits = 0, pad = 0;
	size_t nchars = 0;

	*out = NULL;
	for (; *s; s++) {
		int v;

		if (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')
			continue;
		if (*s == '=') {
			pad++;
			nchars++;
			continue;
		}
		if (pad || (v = b64_val(*s)) < 0) {
			gv_buf_release(&b);
			return gv_err_set(err, GV_EINVAL, "invalid base64");
		}
		nchars++;
		acc = acc << 6 | (uint32_t)v;
		nbits += 6;
		if (nbits >= 8) {
			nbits -= 8;
			gv_buf_addc(&b, (char)((acc >> nbits) & 0xff));
		}
	}
	if (pad > 2 || nchars % 4 != 0 || (nbits && (acc & ((1u << nbits) - 1)))) {
		gv_buf_release(&b);
		return gv_err_set(err, GV_EINVAL, "invalid base64");
	}
	if (len)
		*len = b.len;
	*out = gv_buf_detach(&b);
	return GV_OK;
}

/* ---- TLS material checks ---- */

static void ssl_errors(struct gv_buf *b)
{
	unsigned long e;
	char tmp[256];

	if ((e = ERR_get_error())) {
		ERR_error_string_n(e, tmp, sizeof(tmp));
		gv_buf_addf(b, " (%s)", tmp);
	}
	ERR_clear_error();
}

/* Reads PEM from data or file into a memory BIO; NULL + err when the file is unreadable. */
static BIO *pem_bio(const char *data, const char *file, char **hold, struct gv_err *err)
{
	size_t len;

	if (data)
		return BIO_new_mem_buf(data, -1);
	if (gv_read_file(file, hold, &len, err))
		return NULL;
	return BIO_new_mem_buf(*hold, (int)len);
}

static enum gv_code check_tls(const struct kube_config *cfg, struct gv_err *err)
{
	struct gv_buf why = {0};
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	BIO *bio = NULL;
	char *hold = NULL;
	enum gv_code rc = GV_OK;
	bool have_cert = cfg->cert_data || cfg->cert_file,
	     have_key = cfg->key_data || cfg->key_file;

	ERR_clear_error();
	if (cfg->ca_data || cfg->ca_file) {
		const char *what = cfg->ca_data ? "certificate-authority-data" : cfg->ca_file;

		if (!(bio = pem_bio(cfg->ca_data, cfg->ca_file, &hold, err))) {
			rc = GV_EINVAL;
			gv_err_prefix(err, "certificate-authority: ");
			goto out;
		}
		if (!(cert = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
			ssl_errors(&why);
			rc = gv_err_set(err, GV_EINVAL, "%s: no PEM certificate%s", what,
					gv_buf_str(&why));
			goto out;
		}
		X509_free(cert);
		cert = NULL;
		BIO_free(bio);
		bio = NULL;
		free(hold);
		hold = NULL;
	}
	if (have_cert != have_key) {
		rc = gv_err_set(err, GV_EINVAL, "client certificate and key must both be given");
		goto out;
	}
	if (!have_cert)
		goto out;
	if (!(bio = pem_bio(cfg->cert_data, cfg->cert_file, &hold, err))) {
		rc = GV_EINVAL;
		gv_err_prefix(err, "client-certificate: ");
		goto out;
	}
	if (!(cert = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		ssl_errors(&why);
		rc = gv_err_set(err, GV_EINVAL, "%s: no PEM certificate%s",
				cfg->cert_data ? "client-certificate-data" : cfg->cert_file,
				gv_buf_str(&why));
		goto out;
	}
	BIO_free(bio);
	bio = NULL;
	free(hold);
	hold = NULL;
	if (!(bio = pem_bio(cfg->key_data, cfg->key_file, &hold, err))) {
		rc = GV_EINVAL;
		gv_err_prefix(err, "client-key: ");
		goto out;
	}
	if (!(key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL))) {
		ERR_clear_error();
		rc = gv_err_set(err, GV_EINVAL, "%s: no PEM private key",
				cfg->key_data ? "client-key-data" : cfg->key_file);
		goto out;
	}
	if (X509_check_private_key(cert, key) != 1) {
		ERR_clear_error();
		rc = gv_err_set(err, GV_EINVAL, "client key does not match the client certificate");
		goto out;
	}
out:
	X509_free(cert);
	EVP_PKEY_free(key);
	BIO_free(bio);
	if (hold) {
		/* may be key material */
		memset(hold, 0, strlen(hold));
		free(hold);
	}
	gv_buf_release(&why);
	return rc;
}

/* ---- client ---- */

static char *dup_or_null(const char *s)
{
	return s ? gv_xstrdup(s) : NULL;
}

static void handle_destroy(void *p)
{
	struct kube_handle *h = p;

	if (!h)
		return;
	pthread_mutex_lock(&h->c->mu);
	*h->pprev = h->next;
	if (h->next)
		h->next->pprev = h->pprev;
	pthread_mutex_unlock(&h->c->mu);
	curl_easy_cleanup(h->curl);
	free(h);
}

static struct kube_handle *handle_get(struct kube_client *c)
{
	struct kube_handle *h = pthread_getspecific(c->key);

	if (h)
		return h;
	h = gv_xcalloc(1, sizeof(*h));
	h->curl = curl_easy_init();
	if (!h->curl)
		abort();
	h->c = c;
	pthread_mutex_lock(&c->mu);
	h->next = c->handles;
	if (h->next)
		h->next->pprev = &h->next;
	c->handles = h;
	h->pprev = &c->handles;
	pthread_mutex_unlock(&c->mu);
	pthread_setspecific(c->key, h);
	return h;
}

struct kube_client *kube_client_new(const struct kube_config *cfg, struct gv_err *err)
{
	struct kube_client *c;

	pthread_once(&global_once, global_init);
	if (!cfg->server || !*cfg->server) {
		gv_err_set(err, GV_EINVAL, "no server");
		return NULL;
	}
	if (check_tls(cfg, err))
		return NULL;
	c = gv_xcalloc(1, sizeof(*c));
	c->cfg.server = gv_xstrdup(cfg->server);
	while (strlen(c->cfg.server) > 8 && c->cfg.server[strlen(c->cfg.server) - 1] == '/')
		c->cfg.server[strlen(c->cfg.server) - 1] = '\0';
	c->cfg.ca_file = dup_or_null(cfg->ca_file);
	c->cfg.ca_data = dup_or_null(cfg->ca_data);
	c->cfg.token = dup_or_null(cfg->token);
	c->cfg.token_file = dup_or_null(cfg->token_file);
	c->cfg.cert_file = dup_or_null(cfg->cert_file);
	c->cfg.key_file = dup_or_null(cfg->key_file);
	c->cfg.cert_data = dup_or_null(cfg->cert_data);
	c->cfg.key_data = dup_or_null(cfg->key_data);
	c->cfg.insecure = cfg->insecure;
	c->cfg.namespace = dup_or_null(cfg->namespace);
	if (pthread_key_create(&c->key, handle_destroy))
		abort();
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->disc_mu, NULL);
	c->connect_ms = 10000;
	c->request_ms = 60000;
	c->watch_s = 300;
	c->max_retries = 5;
	c->base_ms = 200;
	c->cap_ms = 5000;
	c->disc_gv = json_object();
	if (c->cfg.insecure)
		gv_info("kube: TLS verification of %s is disabled (insecure-skip-tls-verify)",
			c->cfg.server);
	return c;
}

struct kube_client *kube_client_new_transport(void (*transport)(void *ud, struct kube_exchange *x),
					      void *ud)
{
	char server[] = "http://transport.invalid";
	struct kube_config cfg = {.server = server};
	struct kube_client *c = kube_client_new(&cfg, NULL);

	c->transport = transport;
	c->transport_ud = ud;
	c->max_retries = 0;
	c->base_ms = 1;
	c->cap_ms = 1;
	return c;
}

struct kube_client *kube_client_new_child(struct kube_client *parent)
{
	struct kube_client *c = gv_xcalloc(1, sizeof(*c));

	c->parent = parent->parent ? parent->parent : parent;
	atomic_init(&c->requests, 0);
	return c;
}

unsigned long kube_client_requests(const struct kube_client *c)
{
	return atomic_load(&((struct kube_client *)c)->requests);
}

void kube_client_free(struct kube_client *c)
{
	struct kube_handle *h, *next;

	if (!c)
		return;
	if (c->parent) {
		free(c);
		return;
	}
	pthread_key_delete(c->key);
	for (h = c->handles; h; h = next) {
		next = h->next;
		curl_easy_cleanup(h->curl);
		free(h);
	}
	free(c->cfg.server);
	free(c->cfg.ca_file);
	free(c->cfg.ca_data);
	free(c->cfg.token);
	free(c->cfg.token_file);
	free(c->cfg.cert_file);
	free(c->cfg.key_file);
	free(c->cfg.cert_data);
	free(c->cfg.key_data);
	free(c->cfg.namespace);
	free(c->token);
	json_decref(c->disc_groups);
	json_decref(c->disc_gv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->disc_mu);
	free(c);
}

void kube_client_set_retries(struct kube_client *c, int max_retries, unsigned base_ms,
			     unsigned cap_ms)
{
	if (max_retries < 0)
		max_retries = 0;
	if (max_retries > KUBE_MAX_RETRIES)
		max_retries = KUBE_MAX_RETRIES;
	c->max_retries = max_retries;
	c->base_ms = base_ms ? base_ms : 1;
	c->cap_ms = cap_ms < c->base_ms ? c->base_ms : cap_ms;
}

void kube_client_set_timeouts(struct kube_client *c, long connect_ms, long request_ms, int watch_s)
{
	if (connect_ms > 0)
		c->connect_ms = connect_ms;
	if (request_ms > 0)
		c->request_ms = request_ms;
	if (watch_s > 0)
		c->watch_s = watch_s;
}

/*
 * The bearer token to send: the token file's content (re-read when older than
 * KUBE_TOKEN_TTL or when reload is set), else the configured token. Caller frees.
 */
static char *token_get(struct kube_client *c, bool reload)
{
	char *t = NULL;
	time_t now = time(NULL);

	if (!c->cfg.token_file)
		return dup_or_null(c->cfg.token);
	pthread_mutex_lock(&c->mu);
	if (reload || !c->token || now - c->token_read >= KUBE_TOKEN_TTL) {
		char *fresh = kube_read_trimmed(c->cfg.token_file);

		if (fresh) {
			free(c->token);
			c->token = fresh;
		} else {
			gv_warn("kube: cannot read token file %s", c->cfg.token_file);
		}
		c->token_read = now;
	}
	t = dup_or_null(c->token ? c->token : c->cfg.token);
	pthread_mutex_unlock(&c->mu);
	return t;
}

/* ---- Status ---- */

const char *kube_reason_for(long http)
{
	static const struct {
		long code;
		const char *reason;
	} t[] = {
	    {400, "BadRequest"},
	    {401, "Unauthorized"},
	    {403, "Forbidden"},
	    {404, "NotFound"},
	    {405, "MethodNotAllowed"},
	    {406, "NotAcceptable"},
	    {409, "Conflict"},
	    {410, "Gone"},
	    {413, "RequestEntityTooLarge"},
	    {415, "UnsupportedMediaType"},
	    {422, "Invalid"},
	    {429, "TooManyRequests"},
	    {500, "InternalError"},
	    {503, "ServiceUnavailable"},
	    {504, "Timeout"},
	};

	for (size_t i = 0; i < GV_ARRAY_LEN(t); i++)
		if (t[i].code == http)
			return t[i].reason;
	return "";
}

/* Copies s into dst (n bytes), replacing control characters with spaces. */
static void copy_clean(char *dst, size_t n, const char *s, size_t len)
{
	size_t i, j = 0;

	for (i = 0; i < len && j + 1 < n && s[i]; i++)
		dst[j++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	while (j > 0 && dst[j - 1] == ' ')
		j--;
	dst[j] = '\0';
}

void kube_status_fill(struct kube_status *st, long http, const char *body, size_t len)
{
	json_t *v = NULL;
	const char *reason = NULL, *msg = NULL;

	memset(st, 0, sizeof(*st));
	st->http = http;
	if (body && len)
		v = json_loadb(body, len, 0, NULL);
	if (json_is_object(v)) {
		reason = json_string_value(json_object_get(v, "reason"));
		msg = json_string_value(json_object_get(v, "message"));
		if (!http && json_is_integer(json_object_get(v, "code")))
			st->http = (long)json_integer_value(json_object_get(v, "code"));
	}
	if (reason && *reason)
		copy_clean(st->reason, sizeof(st->reason), reason, strlen(reason));
	else
		snprintf(st->reason, sizeof(st->reason), "%s", kube_reason_for(st->http));
	if (msg && *msg)
		copy_clean(st->message, sizeof(st->message), msg, strlen(msg));
	else if (!v && body && len)
		copy_clean(st->message, sizeof(st->message), body, len > 200 ? 200 : len);
	json_decref(v);
}

/* ---- one transfer ---- */

struct xfer {
	CURL *curl;
	const struct kube_req *req;
	struct gv_buf *body; /* buffered body (error bodies always) */
	bool too_big;
	bool consumer_stopped;
	long retry_after; /* s, from the Retry-After header; 0 = none */
};

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	long code = 0;

	if (x->req->on_data) {
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code < 300) {
			if (!x->req->on_data(p, n, x->req->ud)) {
				x->consumer_stopped = true;
				return 0;
			}
			return n;
		}
	}
	if (x->body->len + n > KUBE_MAX_RESPONSE) {
		x->too_big = true;
		return 0;
	}
	gv_buf_add(x->body, p, n);
	return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	static const char name[] = "retry-after:";

	if (n > sizeof(name) - 1 && !strncasecmp(p, name, sizeof(name) - 1)) {
		char tmp[32], *end;
		long v;

		copy_clean(tmp, sizeof(tmp), p + sizeof(name) - 1, n - (sizeof(name) - 1));
		v = strtol(tmp, &end, 10);
		if (end != tmp && v > 0)
			x->retry_after = v;
	}
	return n;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = ud;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return x->req->abort && atomic_load(x->req->abort);
}

static void set_blob(CURL *h, CURLoption opt, const char *pem)
{
	struct curl_blob blob = {.data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY};

	curl_easy_setopt(h, opt, &blob);
}

/* Sets the options of one attempt. hdrs receives the header list (caller frees). */
static void setup(struct kube_client *c, CURL *h, const struct kube_req *req, const char *url,
		  const char *token, struct xfer *x, char *errbuf, struct curl_slist **hdrs)
{
	struct curl_slist *l = NULL;
	long timeout = req->timeout_ms ? req->timeout_ms : c->request_ms;

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	if (timeout > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
	/* TLS */
	if (c->cfg.ca_data) {
		set_blob(h, CURLOPT_CAINFO_BLOB, c->cfg.ca_data);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	} else if (c->cfg.ca_file) {
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cfg.ca_file);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
#if LIBCURL_VERSION_NUM >= 0x075700
		/* The in-cluster CA file can rotate: do not keep it for curl's default 24 h. */
		curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 60L);
#endif
	}
	if (c->cfg.cert_data) {
		set_blob(h, CURLOPT_SSLCERT_BLOB, c->cfg.cert_data);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
	} else if (c->cfg.cert_file) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cfg.cert_file);
	}
	if (c->cfg.key_data) {
		set_blob(h, CURLOPT_SSLKEY_BLOB, c->cfg.key_data);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	} else if (c->cfg.key_file) {
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->cfg.key_file);
	}
	if (c->cfg.insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	/* method and body */
	if (!strcmp(req->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
		if (req->body || strcmp(req->method, "DELETE")) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)(req->body ? req->body_len : 0));
		}
	}
	{
		char *acc =
		    gv_xasprintf("Accept: %s", req->accept ? req->accept : "application/json");

		l = curl_slist_append(l, acc);
		free(acc);
	}
	l = curl_slist_append(l, "Expect:");
	if (req->body) {
		char *ct = gv_xasprintf("Content-Type: %s",
					req->content_type ? req->content_type : "application/json");

		l = curl_slist_append(l, ct);
		free(ct);
	}
	if (token) {
		char *auth = gv_xasprintf("Authorization: Bearer %s", token);

		l = curl_slist_append(l, auth);
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	*hdrs = l;
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	if (req->abort) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	}
}

/* Connection-level failures worth another attempt. */
static bool curl_retryable(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

static bool http_retryable(long http)
{
	return http == 429 || (http >= 500 && http != 501 && http != 505);
}

/*
 * One exchange through the client's transport (kube_client_new_transport)
 * instead of curl: the same outcomes as a transfer (a curl code, the HTTP
 * status, the body buffered or streamed to on_data when 2xx).
 */
static CURLcode transport_perform(struct kube_client *c, const struct kube_req *req, struct xfer *x,
				  long *http, char *errbuf)
{
	struct kube_exchange ex = {
	    .method = req->method,
	    .path = req->path,
	    .accept = req->accept ? req->accept : "application/json",
	    .content_type =
		req->body ? (req->content_type ? req->content_type : "application/json") : NULL,
	    .body = req->body,
	    .body_len = req->body_len};

	if (req->abort && atomic_load(req->abort))
		return CURLE_ABORTED_BY_CALLBACK;
	c->transport(c->transport_ud, &ex);
	*http = ex.http;
	x->retry_after = ex.retry_after;
	if (!ex.http) {
		snprintf(errbuf, CURL_ERROR_SIZE, "%s",
			 ex.response.len ? gv_buf_str(&ex.response) : "connection refused");
		gv_buf_release(&ex.response);
		return CURLE_COULDNT_CONNECT;
	}
	if (req->on_data && ex.http >= 200 && ex.http < 300) {
		if (ex.response.len && !req->on_data(ex.response.data, ex.response.len, req->ud))
			x->consumer_stopped = true;
		gv_buf_release(&ex.response);
		return x->consumer_stopped ? CURLE_WRITE_ERROR : CURLE_OK;
	}
	if (ex.response.len > KUBE_MAX_RESPONSE) {
		x->too_big = true;
		gv_buf_release(&ex.response);
		return CURLE_WRITE_ERROR;
	}
	gv_buf_release(x->body);
	*x->body = ex.response;
	return CURLE_OK;
}

enum gv_code kube_do(struct kube_client *c, const struct kube_req *req, struct gv_buf *resp,
		     struct kube_status *st, struct gv_err *err)
{
	struct kube_status tmp;
	CURL *curl;
	struct gv_buf body = {0};
	char *url = NULL, errbuf[CURL_ERROR_SIZE];
	int retries = req->retries < 0 ? c->max_retries : req->retries;
	int attempt = 0;
	bool reauthed = false;
	enum gv_code rc = GV_OK;

	atomic_fetch_add(&c->requests, 1);
	if (c->parent)
		return kube_do(c->parent, req, resp, st, err);
	if (!st)
		st = &tmp;
	memset(st, 0, sizeof(*st));
	if (!req->path || req->path[0] != '/')
		return gv_err_set(err, GV_EINVAL, "%s %s: path must start with '/'", req->method,
				  req->path ? req->path : "(null)");
	curl = req->curl || c->transport ? req->curl : handle_get(c)->curl;
	url = gv_xasprintf("%s%s", c->cfg.server, req->path);
	for (;;) {
		struct curl_slist *hdrs = NULL;
		struct xfer x = {.curl = curl, .req = req, .body = &body};
		CURLcode cc;
		long http = 0;
		long wait;

		gv_buf_reset(&body);
		errbuf[0] = '\0';
		if (c->transport) {
			cc = transport_perform(c, req, &x, &http, errbuf);
		} else {
			char *token = token_get(c, false);

			setup(c, curl, req, url, token, &x, errbuf, &hdrs);
			cc = curl_easy_perform(curl);
			curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http);
			curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
			curl_slist_free_all(hdrs);
			if (token) {
				memset(token, 0, strlen(token));
				free(token);
			}
		}
		gv_debug("kube: %s %s -> %ld (curl %d)", req->method, req->path, http, (int)cc);

		if (x.consumer_stopped || (cc == CURLE_OK && http >= 200 && http < 300)) {
			st->http = http;
			if (resp && !req->on_data) {
				/* handed over, not copied: list pages are large */
				gv_buf_release(resp);
				*resp = body;
				body = (struct gv_buf){0};
			}
			rc = GV_OK;
			goto out;
		}
		if (cc == CURLE_ABORTED_BY_CALLBACK || (req->abort && atomic_load(req->abort))) {
			st->http = 0;
			snprintf(st->message, sizeof(st->message), "aborted");
			rc = gv_err_set(err, GV_ENET, "%s %s: aborted", req->method, req->path);
			goto out;
		}
		if (x.too_big) {
			st->http = http;
			snprintf(st->message, sizeof(st->message), "response larger than %u bytes",
				 KUBE_MAX_RESPONSE);
			rc = gv_err_set(err, GV_ELIMIT, "%s %s: response larger than %u bytes",
					req->method, req->path, KUBE_MAX_RESPONSE);
			goto out;
		}
		if (cc != CURLE_OK) {
			memset(st, 0, sizeof(*st));
			snprintf(st->message, sizeof(st->message), "%s",
				 errbuf[0] ? errbuf : curl_easy_strerror(cc));
			if (!curl_retryable(cc) || attempt >= retries) {
				rc = gv_err_set(err, GV_ENET, "%s %s%s: %s%s", req->method,
						c->cfg.server, req->path, st->message,
						attempt ? " (after retries)" : "");
				goto out;
			}
		} else {
			kube_status_fill(st, http, body.data, body.len);
			if (http == 401 && c->cfg.token_file && !reauthed) {
				/* A rotated token: read the file again and retry once at once. */
				reauthed = true;
				char *t = token_get(c, true);
				free(t);
				continue;
			}
			if (!http_retryable(http) || attempt >= retries) {
				rc = gv_err_set(err, GV_ENET, "%s %s: %ld %s: %s", req->method,
						req->path, st->http, st->reason, st->message);
				goto out;
			}
		}
		attempt++;
		wait = kube_backoff_ms((unsigned)attempt, c->base_ms, c->cap_ms);
		if (x.retry_after * 1000 > wait)
			wait = x.retry_after * 1000 > KUBE_MAX_RETRY_WAIT ? KUBE_MAX_RETRY_WAIT
									  : x.retry_after * 1000;
		gv_debug("kube: %s %s: retry %d/%d in %ld ms", req->method, req->path, attempt,
			 retries, wait);
		if (kube_sleep(wait, req->abort)) {
			rc = gv_err_set(err, GV_ENET, "%s %s: aborted", req->method, req->path);
			goto out;
		}
	}
out:
	free(url);
	gv_buf_release(&body);
	return rc;
}

/* ---- requests ---- */

static enum gv_code request_json(struct kube_client *c, const char *method, const char *path,
				 const char *content_type, const char *accept, const json_t *body,
				 const atomic_bool *abort, json_t **out, struct kube_status *st,
				 struct gv_err *err)
{
	struct kube_req req = {.method = method,
			       .path = path,
			       .content_type = content_type,
			       .accept = accept,
			       .abort = abort,
			       .retries = -1};
	struct gv_buf resp = {0};
	char *text = NULL;
	enum gv_code rc;

	if (out)
		*out = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text)
			return gv_err_set(err, GV_EINVAL, "%s %s: body cannot be encoded", method,
					  path);
		req.body = text;
		req.body_len = strlen(text);
	}
	rc = kube_do(c, &req, &resp, st, err);
	if (!rc && out && resp.len) {
		size_t at = strspn(resp.data, " \t\r\n");

		if (at < resp.len && (resp.data[at] == '{' || resp.data[at] == '[')) {
			struct gv_err perr = {0};

			/* objects and lists: gavel's parser, about twice as fast on list pages */
			*out = gv_json_parse(resp.data, resp.len, &perr);
			if (!*out)
				rc = gv_err_set(err, GV_ENET, "%s %s: response is not JSON: %s",
						method, path, perr.msg);
		} else {
			json_error_t jerr;

			*out = json_loadb(resp.data, resp.len, JSON_DECODE_ANY, &jerr);
			if (!*out)
				rc = gv_err_set(err, GV_ENET, "%s %s: response is not JSON: %s",
						method, path, jerr.text);
		}
	}
	free(text);
	gv_buf_release(&resp);
	return rc;
}

enum gv_code kube_get_raw(struct kube_client *c, const char *path, struct gv_buf *out,
			  struct kube_status *st, struct gv_err *err)
{
	struct kube_req req = {.method = "GET", .path = path, .retries = -1};

	gv_buf_reset(out);
	return kube_do(c, &req, out, st, err);
}

/*
 * The media types a metadata view asks for, plain JSON from servers (or
 * endpoints) that cannot transform. Only the first is tried by the server
 * when it can transform at all, and asking for a list's metadata on an
 * object (or the other way round) is a 500: hence one view for each.
 */
#define ACCEPT_METADATA                                                                            \
	"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#define ACCEPT_METADATA_LIST                                                                       \
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

enum gv_code kube_request(struct kube_client *c, const char *method, const char *path,
			  const json_t *body, json_t **out, struct kube_status *st,
			  struct gv_err *err)
{
	return kube_request_view(c, method, path, KUBE_VIEW_FULL, body, out, st, err);
}

enum gv_code kube_request_view(struct kube_client *c, const char *method, const char *path,
			       enum kube_view view, const json_t *body, json_t **out,
			       struct kube_status *st, struct gv_err *err)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
	bool known = false;

	for (size_t i = 0; i < GV_ARRAY_LEN(methods); i++)
		known |= !strcmp(method, methods[i]);
	if (!known) {
		if (out)
			*out = NULL;
		if (st)
			memset(st, 0, sizeof(*st));
		return gv_err_set(err, GV_EINVAL, "unsupported method \"%s\"", method);
	}
	return request_json(c, method, path,
			    !strcmp(method, "PATCH") ? "application/merge-patch+json" : NULL,
			    view == KUBE_VIEW_METADATA	      ? ACCEPT_METADATA
			    : view == KUBE_VIEW_METADATA_LIST ? ACCEPT_METADATA_LIST
							      : NULL,
			    body, NULL, out, st, err);
}

enum gv_code kube_patch(struct kube_client *c, const char *path, enum kube_patch_type type,
			const json_t *body, json_t **out, struct kube_status *st,
			struct gv_err *err)
{
	static const char *const types[] = {"application/merge-patch+json",
					    "application/json-patch+json",
					    "application/apply-patch+yaml"};

	if ((unsigned)type >= GV_ARRAY_LEN(types) || !body) {
		if (out)
			*out = NULL;
		if (st)
			memset(st, 0, sizeof(*st));
		return gv_err_set(err, GV_EINVAL, "PATCH %s: bad patch type or no body", path);
	}
	return request_json(c, "PATCH", path, types[type], NULL, body, NULL, out, st, err);
}

/* ---- paths and lists ---- */

char *kube_path(const struct kube_resource *r, const char *ns, const char *name)
{
	struct gv_buf b = {0};
	char *e;

	if (!r->group || !*r->group)
		gv_buf_addf(&b, "/api/%s", r->version);
	else
		gv_buf_addf(&b, "/apis/%s/%s", r->group, r->version);
	if (r->namespaced && ns && *ns) {
		e = kube_escape(ns);
		gv_buf_addf(&b, "/namespaces/%s", e);
		free(e);
	}
	gv_buf_addf(&b, "/%s", r->resource);
	if (name) {
		e = kube_escape(name);
		gv_buf_addf(&b, "/%s", e);
		free(e);
	}
	return gv_buf_detach(&b);
}

/* Sets apiVersion and kind on a list item that lacks them. */
static void item_fill_kind(json_t *item, const char *api_version, const char *list_kind)
{
	size_t n;

	if (!json_is_object(item))
		return;
	if (api_version && !json_object_get(item, "apiVersion"))
		json_object_set_new(item, "apiVersion", json_string(api_version));
	if (list_kind && !json_object_get(item, "kind")) {
		n = strlen(list_kind);
		if (n > 4 && !strcmp(list_kind + n - 4, "List"))
			json_object_set_new(item, "kind", json_stringn(list_kind, n - 4));
	}
}

/* ---- the pager ---- */

struct kube_pager {
	struct kube_client *c; /* borrowed */
	char *path;
	struct kube_list_options o;
	const atomic_bool *abort; /* borrowed, may be NULL */
	char *cont;		  /* continue token of the next page; NULL = first page */
	char *rv;		  /* resourceVersion of the first page */
	struct kube_page page;
	unsigned long requests;
	unsigned index;
	int restarts;
	bool done;
};

struct kube_pager *kube_pager_new(struct kube_client *c, const char *path,
				  const struct kube_list_options *o)
{
	struct kube_pager *p = gv_xcalloc(1, sizeof(*p));

	p->c = c;
	p->path = gv_xstrdup(path);
	if (o)
		p->o = *o;
	if (!p->o.max_restarts)
		p->o.max_restarts = 3;
	if (p->o.cont && *p->o.cont)
		p->cont = gv_xstrdup(p->o.cont);
	p->o.cont = NULL; /* borrowed: p->cont holds the copy */
	return p;
}

void kube_pager_set_abort(struct kube_pager *p, const atomic_bool *abort)
{
	p->abort = abort;
}

static void page_clear(struct kube_page *pg)
{
	json_decref(pg->list);
	json_decref(pg->head);
	gv_buf_release(&pg->text);
	free(pg->spans);
	free(pg->item_kind);
	*pg = (struct kube_page){0};
}

void kube_page_release(struct kube_page *pg)
{
	if (pg)
		page_clear(pg);
}

void kube_pager_stop(struct kube_pager *p)
{
	p->done = true;
}

void kube_pager_set_limit(struct kube_pager *p, int limit)
{
	p->o.limit = limit;
}

const char *kube_pager_continue(const struct kube_pager *p)
{
	return p->cont;
}

void kube_pager_take(struct kube_pager *p, struct kube_page *out)
{
	/* everything the page points to is its own, so it moves as is */
	*out = p->page;
	p->page = (struct kube_page){0};
}

const char *kube_pager_resource_version(const struct kube_pager *p)
{
	return p->rv;
}

unsigned long kube_pager_requests(const struct kube_pager *p)
{
	return p->requests;
}

void kube_pager_free(struct kube_pager *p)
{
	if (!p)
		return;
	page_clear(&p->page);
	free(p->path);
	free(p->cont);
	free(p->rv);
	free(p);
}

/* The page's path: p->path with limit and continue appended (caller frees). */
static char *pager_path(const struct kube_pager *p)
{
	struct gv_buf b = {0};

	gv_buf_adds(&b, p->path);
	if (p->o.limit > 0 || p->cont)
		gv_buf_addc(&b, strchr(p->path, '?') ? '&' : '?');
	if (p->o.limit > 0)
		gv_buf_addf(&b, "limit=%d", p->o.limit);
	if (p->cont) {
		char *e = kube_escape(p->cont);

		gv_buf_addf(&b, "%scontinue=%s", p->o.limit > 0 ? "&" : "", e);
		free(e);
	}
	return gv_buf_detach(&b);
}

enum gv_code kube_pager_next(struct kube_pager *p, struct kube_page **page, struct kube_status *st,
			     struct gv_err *err)
{
	struct kube_page *pg = &p->page;
	struct kube_status local;
	bool restarted = false;
	enum gv_code rc;

	*page = NULL;
	page_clear(pg);
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	for (;;) {
		struct kube_req req = {.method = "GET",
				       .accept = p->o.metadata ? ACCEPT_METADATA_LIST : NULL,
				       .abort = p->abort,
				       .retries = -1};
		struct gv_err lerr = {0};
		char *path;
		json_t *root;

		if (p->done)
			return GV_OK;
		path = pager_path(p);
		req.path = path;
		p->requests++;
		rc = kube_do(p->c, &req, &pg->text, st, &lerr);
		if (rc && st->http == 410 && p->o.max_restarts > 0 &&
		    p->restarts < p->o.max_restarts) {
			/* An expired continue token: start over. */
			gv_debug("kube: list %s: %s, restarting", p->path, st->reason);
			p->restarts++;
			restarted = true;
			free(p->cont);
			p->cont = NULL;
			p->index = 0;
			free(path);
			page_clear(pg);
			continue;
		}
		if (rc) {
			free(path);
			page_clear(pg);
			p->done = true;
			return gv_err_set(err, rc, "%s", lerr.msg);
		}
		if (p->o.text)
			root = pg->head = gv_json_parse_list(pg->text.data, pg->text.len, "items",
							     &pg->spans, &pg->nspans, &lerr);
		else
			root = pg->list = gv_json_parse(pg->text.data, pg->text.len, &lerr);
		if (root && !json_is_object(root)) {
			json_decref(root);
			root = pg->list = pg->head = NULL;
			snprintf(lerr.msg, sizeof(lerr.msg), "'{' expected");
		}
		if (!root) {
			rc = gv_err_set(err, GV_ENET, "GET %s: response is not a list: %s", path,
					lerr.msg);
			free(path);
			page_clear(pg);
			p->done = true;
			return rc;
		}
		if (!p->o.text) {
			json_t *items = json_object_get(root, "items");

			gv_buf_release(&pg->text);
			/* an empty list may have "items": null (metadata lists) or none */
			if (!items || json_is_null(items))
				json_object_set_new(root, "items", items = json_array());
			if (!json_is_array(items)) {
				rc = gv_err_set(err, GV_ENET, "GET %s: response is not a list: %s",
						path, "items is not an array");
				free(path);
				page_clear(pg);
				p->done = true;
				return rc;
			}
		}
		free(path);
		break;
	}
	{
		json_t *root = pg->list ? pg->list : pg->head, *item;
		const json_t *md = json_object_get(root, "metadata");
		const char *next = json_string_value(json_object_get(md, "continue"));
		const char *kind = json_string_value(json_object_get(root, "kind"));
		size_t i, n;

		if (!p->index) {
			const char *v = json_string_value(json_object_get(md, "resourceVersion"));

			free(p->rv);
			p->rv = v ? gv_xstrdup(v) : NULL;
		}
		pg->api_version = json_string_value(json_object_get(root, "apiVersion"));
		if (kind && (n = strlen(kind)) > 4 && !strcmp(kind + n - 4, "List"))
			pg->item_kind = gv_xstrndup(kind, n - 4);
		if (pg->list)
			json_array_foreach(json_object_get(root, "items"), i, item)
			    item_fill_kind(item, pg->api_version, kind);
		free(p->cont);
		p->cont = next && *next ? gv_xstrdup(next) : NULL;
		if (!p->cont)
			p->done = true;
	}
	pg->restarted = restarted;
	pg->index = p->index++;
	*page = pg;
	return GV_OK;
}

enum gv_code kube_list(struct kube_client *c, const char *path, int limit,
		       int (*fn)(const json_t *item, void *ud), void *ud, char **resource_version,
		       struct gv_err *err)
{
	return kube_list_abortable(c, path, limit, fn, ud, resource_version, NULL, err);
}

enum gv_code kube_list_abortable(struct kube_client *c, const char *path, int limit,
				 int (*fn)(const json_t *item, void *ud), void *ud,
				 char **resource_version, const atomic_bool *abort,
				 struct gv_err *err)
{
	struct kube_list_options o = {.limit = limit};
	struct kube_pager *p = kube_pager_new(c, path, &o);
	struct kube_page *pg;
	enum gv_code rc;

	if (resource_version)
		*resource_version = NULL;
	kube_pager_set_abort(p, abort);
	while (!(rc = kube_pager_next(p, &pg, NULL, err)) && pg) {
		const json_t *item;
		size_t i;

		json_array_foreach(json_object_get(pg->list, "items"), i, item)
		{
			if (fn && fn(item, ud)) {
				kube_pager_stop(p);
				break;
			}
		}
	}
	if (!rc && resource_version && kube_pager_resource_version(p))
		*resource_version = gv_xstrdup(kube_pager_resource_version(p));
	kube_pager_free(p);
	return rc;
}
