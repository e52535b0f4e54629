/*
 * context.c - configMap, apiCall and globalReference context entries in the
 * cluster (context.h). ConfigMaps and GlobalContextEntries come from
 * informers, so evaluating a request never waits for the API server for
 * them; apiCall entries are the only calls made on the request path, each
 * bounded in time and size, and cached for one request or scan page.
 */
#include "background/context.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include "common/log.h"
#include "engine/jmespath.h"
#include "common/banned.h"

#define MAX_NAMED_CONFIGMAPS	  64   /* literal names watched one by one; past that, all */
#define MAX_CALLS_CACHED	  32   /* calls remembered by one session */
#define MAX_WALK_DEPTH		  64   /* policy documents walked for context entries */
#define GLOBAL_TICK_MS		  1000 /* the global context thread's period */
#define GLOBAL_DEFAULT_REFRESH_MS (10 * 60 * 1000)
#define MAX_TOKEN_BYTES		  (64 * 1024)

#define MAX_PULL_SECRETS 16 /* imageRegistryCredentials.secrets read for one entry */

struct cm_watch {
	char *name;		   /* owned: metadata.name watched */
	struct kube_informer *inf; /* owned */
};

/* One GlobalContextEntry as this loader keeps it. */
struct global {
	char *name;		   /* owned */
	char *rv;		   /* owned: resourceVersion it was made from */
	json_t *api_call;	   /* owned: spec.apiCall, or NULL */
	struct kube_informer *inf; /* owned: spec.kubernetesResource, or NULL */
	json_t *data;		   /* owned: apiCall's last answer, or NULL */
	char *error;		   /* owned: apiCall's last failure, or NULL */
	int64_t refresh_ms;	   /* apiCall's refreshInterval */
	int64_t next_ms;	   /* apiCall's next refresh (monotonic) */
};

struct context_loader {
	struct context_options o;
	struct kube_registry *registry; /* owned: imageRegistry entries */
	struct view_context src;
	pthread_mutex_t mu;
	struct engine_policyset *last_set; /* owned reference: the set last watched for */
	struct cm_watch *cms;		   /* owned array */
	size_t ncms;
	struct kube_informer *cm_all; /* owned, or NULL: every ConfigMap */
	/* global context entries */
	struct kube_informer *gce; /* owned, or NULL until a policy names a global reference */
	struct global *globals;	   /* owned array, guarded by mu */
	size_t nglobals;
	pthread_t thread;
	bool thread_started;
	bool stop;
	pthread_cond_t cv;
};

/* One cached call: the parsed answer or the failure. */
struct cached_call {
	char *key;    /* owned */
	json_t *data; /* owned, or NULL */
	char *error;  /* owned, or NULL */
	enum gv_code code;
};

/* The hooks of one admission request or scan page. */
struct session {
	struct engine_hooks hooks; /* first: the pointer handed out */
	struct context_loader *l;
	int64_t deadline_ms; /* monotonic */
	pthread_mutex_t mu;
	struct cached_call calls[MAX_CALLS_CACHED];
	size_t ncalls;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* ---- which ConfigMaps and global entries the policies name ---- */

struct wanted {
	char **names; /* owned strings */
	size_t n;
	bool all;    /* some name holds a variable, or too many names */
	bool global; /* some policy has a globalReference entry */
};

static void wanted_add(struct wanted *w, const char *name)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->names[i], name))
			return;
	if (w->n >= MAX_NAMED_CONFIGMAPS) {
		w->all = true;
		return;
	}
	w->names = gv_xrealloc(w->names, (w->n + 1) * sizeof(*w->names));
	w->names[w->n++] = gv_xstrdup(name);
}

static void wanted_release(struct wanted *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->names[i]);
	free(w->names);
}

/* Every `context` array of the document (rules, foreach, nested foreach). */
static void walk(const json_t *v, int depth, struct wanted *w)
{
	const char *k;
	json_t *c;
	size_t i;

	if (depth > MAX_WALK_DEPTH)
		return;
	if (json_is_array(v)) {
		json_array_foreach(v, i, c) walk(c, depth + 1, w);
		return;
	}
	if (!json_is_object(v))
		return;
	json_object_foreach((json_t *)v, k, c)
	{
		if (!strcmp(k, "context") && json_is_array(c)) {
			size_t j;
			json_t *e;
			json_array_foreach(c, j, e)
			{
				const json_t *cm = json_object_get(e, "configMap");
				const char *name = jstr(cm, "name");
				if (name && (strstr(name, "{{") || !*name))
					w->all = true;
				else if (name)
					wanted_add(w, name);
				if (json_object_get(e, "globalReference"))
					w->global = true;
			}
		}
		walk(c, depth + 1, w);
	}
}

static struct kube_informer *cm_start(struct context_loader *l, const char *name)
{
	char *esc, *path;
	struct kube_informer *inf;

	if (!name)
		return kube_informer_start(l->o.client, "/api/v1/configmaps", NULL, NULL);
	esc = kube_escape(name);
	path = gv_xasprintf("/api/v1/configmaps?fieldSelector=metadata.name%%3D%s", esc);
	inf = kube_informer_start(l->o.client, path, NULL, NULL);
	free(path);
	free(esc);
	return inf;
}

static void *global_main(void *ud);

/* Starts what w asks for that is not running yet. Called with l->mu held. */
static void watch_locked(struct context_loader *l, const struct wanted *w)
{
	if (w->all && !l->cm_all) {
		l->cm_all = cm_start(l, NULL);
		gv_debug("context: watching every ConfigMap");
	}
	for (size_t i = 0; i < w->n && !l->cm_all; i++) {
		bool have = false;
		for (size_t j = 0; j < l->ncms && !have; j++)
			have = !strcmp(l->cms[j].name, w->names[i]);
		if (have)
			continue;
		l->cms = gv_xrealloc(l->cms, (l->ncms + 1) * sizeof(*l->cms));
		l->cms[l->ncms].name = gv_xstrdup(w->names[i]);
		l->cms[l->ncms].inf = cm_start(l, w->names[i]);
		gv_debug("context: watching ConfigMaps named %s", w->names[i]);
		l->ncms++;
	}
	if (w->global && !l->gce) {
		l->gce = kube_informer_start(
		    l->o.client, "/apis/kyverno.io/v2alpha1/globalcontextentries", NULL, NULL);
		if (!pthread_create(&l->thread, NULL, global_main, l))
			l->thread_started = true;
		else
			gv_warn("context: cannot start the global context thread");
	}
}

void context_loader_watch(struct context_loader *l, const struct engine_policyset *set)
{
	struct wanted w = {0};

	if (!set)
		return;
	pthread_mutex_lock(&l->mu);
	if (l->last_set == set) {
		pthread_mutex_unlock(&l->mu);
		return;
	}
	for (size_t i = 0; i < engine_policyset_count(set); i++)
		walk(engine_policy_doc(engine_policyset_get(set, i)), 0, &w);
	watch_locked(l, &w);
	if (l->last_set)
		engine_policyset_unref(l->last_set);
	l->last_set = engine_policyset_ref((struct engine_policyset *)set);
	pthread_mutex_unlock(&l->mu);
	wanted_release(&w);
}

/* ---- HTTP calls ---- */

struct http_call {
	const char *method; /* GET or POST */
	char *url;	    /* owned */
	char *body;	    /* owned, or NULL */
	char *ca;	    /* owned PEM, or NULL: the kube config's (api) or the system's */
	bool api;	    /* to the API server: gavel's credentials */
	struct curl_slist *headers; /* owned */
};

static void http_call_release(struct http_call *c)
{
	free(c->url);
	free(c->body);
	free(c->ca);
	curl_slist_free_all(c->headers);
}

struct capped {
	struct gv_buf b;
	size_t max;
	bool over;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct capped *c = ud;
	size_t len = size * n;

	if (c->b.len + len > c->max) {
		c->over = true;
		return 0;
	}
	gv_buf_add(&c->b, p, len);
	return len;
}

static char *read_token(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = gv_xmalloc(MAX_TOKEN_BYTES + 1);
	n = fread(buf, 1, MAX_TOKEN_BYTES, f);
	fclose(f);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = 0;
	return buf;
}

/* A short single-line excerpt of a body for an error message. */
static void excerpt(const struct gv_buf *b, char *out, size_t n)
{
	size_t j = 0;
	for (size_t i = 0; i < b->len && j + 1 < n; i++) {
		unsigned char ch = (unsigned char)b->data[i];
		out[j++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	out[j] = 0;
}

/*
 * One easy handle per thread, kept between calls (reset each time) so that
 * its connection cache saves a TLS handshake per call to the same server;
 * freed when the thread ends.
 */
static pthread_key_t handle_key;
static pthread_once_t handle_once = PTHREAD_ONCE_INIT;

static void handle_free(void *h)
{
	curl_easy_cleanup(h);
}

static void handle_key_make(void)
{
	if (pthread_key_create(&handle_key, handle_free))
		abort();
}

static CURL *thread_handle(void)
{
	CURL *h;

	pthread_once(&handle_once, handle_key_make);
	h = pthread_getspecific(handle_key);
	if (h) {
		curl_easy_reset(h);
		return h;
	}
	h = curl_easy_init();
	if (h && pthread_setspecific(handle_key, h)) {
		curl_easy_cleanup(h);
		h = NULL;
	}
	return h;
}

/*
 * Makes the call within timeout_ms: *status the HTTP status, body the
 * answer (max_response bytes at most). Errors: GV_ENET (connection, TLS,
 * timeout), GV_ELIMIT (body too large).
 */
static enum gv_code http_perform(struct context_loader *l, const struct http_call *c,
				 long timeout_ms, long *status, struct gv_buf *out,
				 struct gv_err *err)
{
	const struct kube_config *k = l->o.kube;
	CURL *h = thread_handle();
	struct curl_slist *hdrs = NULL;
	struct capped body = {.max = l->o.max_response};
	char errbuf[CURL_ERROR_SIZE] = "";
	char *auth = NULL, *token = NULL;
	CURLcode cc;
	enum gv_code rc = GV_OK;

	*status = 0;
	if (!h)
		return gv_err_set(err, GV_EINTERNAL, "cannot make an HTTP handle");
	for (const struct curl_slist *s = c->headers; s; s = s->next)
		hdrs = curl_slist_append(hdrs, s->data);
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (c->body)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	if (!strcmp(c->method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body ? c->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(c->body ? strlen(c->body) : 0));
	}
	if (c->api && k) {
		if (k->token)
			token = gv_xstrdup(k->token);
		else if (k->token_file)
			token = read_token(k->token_file);
		if (token && *token) {
			auth = gv_xasprintf("Authorization: Bearer %s", token);
			hdrs = curl_slist_append(hdrs, auth);
		}
		if (k->ca_data) {
			struct curl_blob b = {k->ca_data, strlen(k->ca_data), CURL_BLOB_COPY};
			curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
		} else if (k->ca_file) {
			curl_easy_setopt(h, CURLOPT_CAINFO, k->ca_file);
		}
		if (k->cert_data) {
			struct curl_blob b = {k->cert_data, strlen(k->cert_data), CURL_BLOB_COPY};
			curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
			curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		} else if (k->cert_file) {
			curl_easy_setopt(h, CURLOPT_SSLCERT, k->cert_file);
		}
		if (k->key_data) {
			struct curl_blob b = {k->key_data, strlen(k->key_data), CURL_BLOB_COPY};
			curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
			curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
		} else if (k->key_file) {
			curl_easy_setopt(h, CURLOPT_SSLKEY, k->key_file);
		}
		if (k->insecure) {
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
		}
	} else if (c->ca) {
		/* the caBundle is the only CA trusted for this service */
		struct curl_blob b = {c->ca, strlen(c->ca), CURL_BLOB_COPY};
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	if (body.over) {
		rc = gv_err_set(err, GV_ELIMIT, "%s %s: the response is larger than %zu bytes",
				c->method, c->url, l->o.max_response);
		goto out;
	}
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		rc = gv_err_set(err, GV_ENET, "%s %s: no answer within %ld ms", c->method, c->url,
				timeout_ms);
		goto out;
	}
	if (cc != CURLE_OK) {
		rc = gv_err_set(err, GV_ENET, "%s %s: %s", c->method, c->url,
				*errbuf ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	gv_buf_add(out, body.b.data ? body.b.data : "", body.b.len);
out:
	/* nothing of this call stays set: the handle outlives these buffers */
	curl_easy_reset(h);
	curl_slist_free_all(hdrs);
	free(auth);
	free(token);
	gv_buf_release(&body.b);
	return rc;
}

/*
 * Makes the call within timeout_ms; *out the parsed JSON answer. Errors:
 * GV_ENET (connection, TLS, timeout, non-2xx), GV_ELIMIT (body too large),
 * GV_EINVAL (body not JSON).
 */
static enum gv_code http_do(struct context_loader *l, const struct http_call *c, long timeout_ms,
			    json_t **out, struct gv_err *err)
{
	struct gv_buf body = {0};
	long status = 0;
	enum gv_code rc;
	json_error_t je;

	*out = NULL;
	rc = http_perform(l, c, timeout_ms, &status, &body, err);
	if (rc)
		goto out;
	if (status < 200 || status > 299) {
		char ex[256];
		json_t *st = json_loadb(body.data ? body.data : "", body.len, 0, &je);
		const char *msg = jstr(st, "message");
		excerpt(&body, ex, sizeof(ex));
		rc = gv_err_set(err, GV_ENET, "%s %s: HTTP %ld: %s", c->method, c->url, status,
				msg ? msg : ex);
		json_decref(st);
		goto out;
	}
	*out = json_loadb(body.data ? body.data : "", body.len, JSON_DECODE_ANY, &je);
	if (!*out)
		rc = gv_err_set(err, GV_EINVAL, "%s %s: the response is not JSON: %s", c->method,
				c->url, je.text);
out:
	gv_buf_release(&body);
	return rc;
}

/*
 * Reads an apiCall object (substituted) into c: urlPath or service,
 * method, data. GV_EINVAL for a malformed call.
 */
static enum gv_code http_call_parse(struct context_loader *l, const json_t *call,
				    struct http_call *c, struct gv_err *err)
{
	const char *path = jstr(call, "urlPath");
	const json_t *svc = json_object_get(call, "service");
	const char *method = jstr(call, "method");
	const json_t *data = json_object_get(call, "data");

	memset(c, 0, sizeof(*c));
	c->method = !method || !*method ? "GET" : method;
	if (strcmp(c->method, "GET") && strcmp(c->method, "POST"))
		return gv_err_set(err, GV_EINVAL, "apiCall method %s is not GET or POST",
				  c->method);
	if (path && *path && svc)
		return gv_err_set(err, GV_EINVAL, "apiCall has both urlPath and service");
	if (path && *path) {
		const char *server = l->o.kube ? l->o.kube->server : NULL;
		size_t sl;
		if (!server)
			return gv_err_set(err, GV_EINVAL, "no API server for apiCall %s", path);
		sl = strlen(server);
		c->url = gv_xasprintf("%.*s%s%s", (int)(sl && server[sl - 1] == '/' ? sl - 1 : sl),
				      server, *path == '/' ? "" : "/", path);
		c->api = true;
	} else if (json_is_object(svc)) {
		const char *url = jstr(svc, "url"), *ca = jstr(svc, "caBundle");
		size_t i;
		json_t *hd;
		if (!url || !*url)
			return gv_err_set(err, GV_EINVAL, "apiCall service has no url");
		if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
			return gv_err_set(err, GV_EINVAL,
					  "apiCall service url %s is not http(s)://", url);
		c->url = gv_xstrdup(url);
		c->ca = ca && *ca ? gv_xstrdup(ca) : NULL;
		json_array_foreach(json_object_get(svc, "headers"), i, hd)
		{
			const char *key = jstr(hd, "key"), *val = jstr(hd, "value");
			char *line;
			if (!key || !*key || strpbrk(key, ":\r\n") || (val && strpbrk(val, "\r\n")))
				return gv_err_set(err, GV_EINVAL,
						  "apiCall service header %zu is not "
						  "a valid header",
						  i);
			line = gv_xasprintf("%s: %s", key, val ? val : "");
			c->headers = curl_slist_append(c->headers, line);
			free(line);
		}
	} else {
		return gv_err_set(err, GV_EINVAL, "apiCall has neither urlPath nor service");
	}
	if (!strcmp(c->method, "POST")) {
		json_t *obj = json_object();
		size_t i;
		json_t *d;
		json_array_foreach(data, i, d)
		{
			const char *key = jstr(d, "key");
			if (key)
				json_object_set(obj, key,
						json_object_get(d, "value")
						    ? json_object_get(d, "value")
						    : json_null());
		}
		c->body = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(obj);
	}
	return GV_OK;
}

static char *call_key(const struct http_call *c)
{
	struct gv_buf b = {0};

	gv_buf_addf(&b, "%s\n%s\n%s\n%s\n", c->method, c->url, c->body ? c->body : "",
		    c->ca ? c->ca : "");
	for (const struct curl_slist *s = c->headers; s; s = s->next)
		gv_buf_addf(&b, "%s\n", s->data);
	return gv_buf_detach(&b);
}

/* The call through the session's cache; *out a new reference. */
static enum gv_code session_call(struct session *s, const struct http_call *c, json_t **out,
				 struct gv_err *err)
{
	char *key = call_key(c);
	long left = (long)(s->deadline_ms - now_ms());
	long timeout = s->l->o.call_timeout_ms;
	struct gv_err e = {0};
	json_t *data = NULL;
	enum gv_code rc;

	*out = NULL;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->ncalls; i++) {
		struct cached_call *cc = &s->calls[i];
		if (strcmp(cc->key, key))
			continue;
		rc = cc->code;
		if (rc)
			gv_err_set(err, rc, "%s", cc->error);
		else
			*out = json_incref(cc->data);
		pthread_mutex_unlock(&s->mu);
		free(key);
		return rc;
	}
	pthread_mutex_unlock(&s->mu);
	if (left <= 0) {
		free(key);
		return gv_err_set(err, GV_ENET, "%s %s: the evaluation's deadline has passed",
				  c->method, c->url);
	}
	rc = http_do(s->l, c, left < timeout ? left : timeout, &data, &e);
	pthread_mutex_lock(&s->mu);
	if (s->ncalls < MAX_CALLS_CACHED) {
		struct cached_call *cc = &s->calls[s->ncalls++];
		cc->key = key;
		key = NULL;
		cc->code = rc;
		cc->data = rc ? NULL : json_incref(data);
		cc->error = rc ? gv_xstrdup(e.msg) : NULL;
	}
	pthread_mutex_unlock(&s->mu);
	free(key);
	if (rc)
		gv_err_set(err, rc, "%s", e.msg);
	*out = data;
	return rc;
}

/*
 * engine_hooks.http: Kyverno's CEL http library (cel-semantics.md section
 * 6) within the session's deadline, not cached (a POST may have effects).
 */
static enum gv_code hook_http(void *ud, const char *method, const char *url, const json_t *headers,
			      const json_t *body, const char *policy_namespace, json_t **out,
			      struct gv_err *err)
{
	struct session *s = ud;
	struct http_call c = {0};
	struct gv_buf answer = {0};
	long left = (long)(s->deadline_ms - now_ms());
	long timeout = s->l->o.call_timeout_ms, status = 0;
	const char *key;
	const json_t *v;
	json_t *data;
	enum gv_code rc;

	*out = NULL;
	if (policy_namespace && *policy_namespace && !s->l->o.allow_http_namespaced)
		return gv_err_set(err, GV_EINVAL,
				  "request failed: http calls are not allowed in namespaced "
				  "policies (--allow-http-in-namespaced-policies)");
	if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
		return gv_err_set(err, GV_EINVAL, "request failed: url %s is not http(s)://", url);
	if (headers && !json_is_object(headers))
		return gv_err_set(err, GV_EINVAL, "request failed: headers are not a map");
	c.method = !strcmp(method, "POST") ? "POST" : "GET";
	json_object_foreach((json_t *)headers, key, v)
	{
		const char *val = json_string_value(v);
		char *line;
		if (!*key || strpbrk(key, ":\r\n") || !val || strpbrk(val, "\r\n")) {
			curl_slist_free_all(c.headers);
			return gv_err_set(err, GV_EINVAL,
					  "request failed: header %s is not a valid header", key);
		}
		line = gv_xasprintf("%s: %s", key, val);
		c.headers = curl_slist_append(c.headers, line);
		free(line);
	}
	c.url = gv_xstrdup(url);
	if (!strcmp(c.method, "POST"))
		c.body = json_dumps(body ? body : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	if (left <= 0) {
		rc = gv_err_set(err, GV_ENET,
				"request failed: %s %s: the evaluation's deadline "
				"has passed",
				c.method, url);
		goto out;
	}
	rc = http_perform(s->l, &c, left < timeout ? left : timeout, &status, &answer, err);
	if (rc) {
		gv_err_prefix(err, "request failed: ");
		goto out;
	}
	/* Go's json.Unmarshal into any: numbers are float64 */
	data = json_loadb(answer.data ? answer.data : "", answer.len,
			  JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, NULL);
	if (json_is_object(data)) {
		json_object_set_new(data, "statusCode", json_integer(status));
		*out = data;
	} else {
		if (!data)
			data = json_stringn(answer.data ? answer.data : "", answer.len);
		if (!data) {
			rc = gv_err_set(err, GV_EINVAL,
					"request failed: %s %s: the response is neither JSON nor "
					"UTF-8 text",
					c.method, url);
			goto out;
		}
		*out = json_pack("{s:o, s:I}", "body", data, "statusCode", (json_int_t)status);
	}
out:
	http_call_release(&c);
	gv_buf_release(&answer);
	return rc;
}

/* ---- the entries ---- */

static enum gv_code apply_jmespath(const char *expr, const json_t *data, json_t **out,
				   struct gv_err *err)
{
	struct jp_error je = {0};
	struct jp_options opt = {.kyverno = true};
	json_t *v = jp_search(expr, data, &opt, &je);

	*out = v;
	if (!v)
		return gv_err_set(err, GV_EEVAL, "failed to apply jmespath %s: %s", expr, je.msg);
	return GV_OK;
}

static enum gv_code load_config_map(struct session *s, const json_t *entry, const json_t *ctx,
				    json_t **out, struct gv_err *err)
{
	struct context_loader *l = s->l;
	const char *ename = jstr(entry, "name");
	json_t *cm = NULL, *obj = NULL;
	struct kube_informer *inf = NULL;
	const char *name, *ns;
	enum gv_code rc;

	rc = engine_substitute(json_object_get(entry, "configMap"), ctx, &cm, err);
	if (rc) {
		gv_err_prefix(err, "failed to substitute variables in context entry %s: ", ename);
		return rc;
	}
	name = jstr(cm, "name");
	ns = jstr(cm, "namespace");
	if (!ns || !*ns)
		ns = "default";
	if (!name || !*name) {
		rc = gv_err_set(err, GV_EINVAL,
				"failed to retrieve config map for context entry %s: no name",
				ename);
		goto out;
	}
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->ncms && !inf; i++)
		if (!strcmp(l->cms[i].name, name))
			inf = l->cms[i].inf;
	if (!inf)
		inf = l->cm_all;
	if (!inf) {
		/* a set that was not watched for (never in gavel's own use): watch it now */
		struct wanted w = {0};
		wanted_add(&w, name);
		watch_locked(l, &w);
		wanted_release(&w);
		inf = l->cm_all ? l->cm_all : l->cms[l->ncms - 1].inf;
	}
	pthread_mutex_unlock(&l->mu);
	if (!inf || !kube_informer_wait_synced(inf, l->o.sync_wait_ms)) {
		rc =
		    gv_err_set(err, GV_ENET,
			       "failed to retrieve config map for context entry %s: the ConfigMaps "
			       "named %s are not listed yet",
			       ename, name);
		goto out;
	}
	obj = kube_informer_get(inf, ns, name);
	if (!obj) {
		rc = gv_err_set(err, GV_ENET,
				"failed to retrieve config map for context entry %s: configmaps "
				"\"%s\" not found",
				ename, name);
		goto out;
	}
	*out = json_pack("{s:O,s:O}", "data",
			 json_object_get(obj, "data") ? json_object_get(obj, "data") : json_null(),
			 "metadata", json_object_get(obj, "metadata"));
out:
	json_decref(obj);
	json_decref(cm);
	return rc;
}

static enum gv_code load_api_call(struct session *s, const json_t *entry, const json_t *ctx,
				  json_t **out, struct gv_err *err)
{
	const char *ename = jstr(entry, "name");
	const json_t *def = json_object_get(json_object_get(entry, "apiCall"), "default");
	json_t *raw = json_copy(json_object_get(entry, "apiCall")), *call = NULL, *data = NULL;
	struct http_call c = {0};
	struct gv_err e = {0};
	const char *jp;
	enum gv_code rc;

	json_object_del(raw, "default");
	rc = engine_substitute(raw, ctx, &call, &e);
	if (rc) {
		gv_err_set(err, rc, "failed to substitute variables in context entry %s: %s", ename,
			   e.msg);
		goto out;
	}
	rc = http_call_parse(s->l, call, &c, &e);
	if (!rc)
		rc = session_call(s, &c, &data, &e);
	jp = jstr(call, "jmesPath");
	if (!rc && jp && *jp) {
		json_t *v = NULL;
		rc = apply_jmespath(jp, data, &v, &e);
		json_decref(data);
		data = v;
	}
	if (rc && def) {
		/* the call or the projection failed: the default is the value */
		json_decref(data);
		data = json_incref((json_t *)def);
		rc = GV_OK;
	}
	if (rc) {
		gv_err_set(err, rc, "failed to fetch data for APICall %s: %s", ename, e.msg);
		goto out;
	}
	*out = data;
	data = NULL;
out:
	http_call_release(&c);
	json_decref(data);
	json_decref(call);
	json_decref(raw);
	return rc;
}

enum global_state { GLOBAL_READY, GLOBAL_MISSING, GLOBAL_PENDING, GLOBAL_FAILED };

/* One look at entry name: its data (new reference) when ready, its failure when failed. */
static enum global_state global_lookup(struct context_loader *l, const char *name, json_t **data,
				       char **error)
{
	enum global_state st = GLOBAL_MISSING;

	*data = NULL;
	*error = NULL;
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->nglobals && st == GLOBAL_MISSING; i++) {
		struct global *g = &l->globals[i];
		if (strcmp(g->name, name))
			continue;
		if (g->inf) {
			st = kube_informer_synced(g->inf) ? GLOBAL_READY : GLOBAL_PENDING;
			*data = st == GLOBAL_READY ? kube_informer_list(g->inf) : NULL;
		} else if (g->data) {
			st = GLOBAL_READY;
			*data = json_incref(g->data);
		} else if (g->error) {
			st = GLOBAL_FAILED;
			*error = gv_xstrdup(g->error);
		} else {
			st = GLOBAL_PENDING;
		}
	}
	pthread_mutex_unlock(&l->mu);
	return st;
}

static void globals_sync(struct context_loader *l, const json_t *items);

static enum gv_code load_global(struct session *s, const json_t *entry, const json_t *ctx,
				json_t **out, struct gv_err *err)
{
	struct context_loader *l = s->l;
	const char *ename = jstr(entry, "name");
	json_t *ref = NULL, *data = NULL;
	const char *name, *jp;
	struct kube_informer *gce;
	enum global_state st;
	char *error = NULL;
	int64_t until = now_ms() + l->o.sync_wait_ms;
	bool listed = false;
	enum gv_code rc;

	rc = engine_substitute(json_object_get(entry, "globalReference"), ctx, &ref, err);
	if (rc) {
		gv_err_prefix(err, "failed to substitute variables in context entry %s: ", ename);
		return rc;
	}
	name = jstr(ref, "name");
	jp = jstr(ref, "jmesPath");
	if (!name || !*name) {
		rc = gv_err_set(err, GV_EINVAL, "globalReference of context entry %s has no name",
				ename);
		goto out;
	}
	pthread_mutex_lock(&l->mu);
	if (!l->gce) {
		struct wanted w = {.global = true};
		watch_locked(l, &w);
	}
	gce = l->gce; /* kept until the loader is freed */
	pthread_mutex_unlock(&l->mu);
	if (until > s->deadline_ms)
		until = s->deadline_ms;
	/* Entries just made (or a loader just started) get their first data within the wait. */
	for (;;) {
		st = global_lookup(l, name, &data, &error);
		if (st == GLOBAL_READY || st == GLOBAL_FAILED)
			break;
		if (st == GLOBAL_MISSING && !listed && gce && kube_informer_synced(gce)) {
			json_t *items = kube_informer_list(gce);
			globals_sync(l, items);
			json_decref(items);
			listed = true;
			continue;
		}
		if (st == GLOBAL_MISSING && listed)
			break;
		if (now_ms() >= until)
			break;
		if (gce && !kube_informer_synced(gce))
			kube_informer_wait_synced(gce, 50);
		else
			usleep(50 * 1000);
	}
	if (st == GLOBAL_MISSING) {
		rc = gv_err_set(err, GV_ENET, "failed to find globalcontext entry %s", name);
		goto out;
	}
	if (st != GLOBAL_READY) {
		rc =
		    gv_err_set(err, GV_ENET, "failed to fetch data for global context entry %s: %s",
			       name, error ? error : "no data yet");
		goto out;
	}
	if (jp && *jp) {
		json_t *v = NULL;
		rc = apply_jmespath(jp, data, &v, err);
		if (rc) {
			gv_err_prefix(err, "global context entry %s: ", name);
			goto out;
		}
		json_decref(data);
		data = v;
	}
	*out = data;
	data = NULL;
out:
	free(error);
	json_decref(data);
	json_decref(ref);
	return rc;
}

/*
 * The docker config of pull secret `name` in gavel's namespace (its
 * .dockerconfigjson, or the older .dockercfg wrapped as {"auths": ...}),
 * read through the API server with gavel's credentials.
 */
static enum gv_code pull_secret(struct session *s, const char *name, json_t **out,
				struct gv_err *err)
{
	const char *ns = s->l->o.namespace && *s->l->o.namespace ? s->l->o.namespace : "gavel";
	char *path = gv_xasprintf("/api/v1/namespaces/%s/secrets/%s", ns, name);
	json_t *call = json_pack("{s:s,s:s}", "urlPath", path, "method", "GET");
	json_t *secret = NULL, *cfg = NULL;
	struct http_call c = {0};
	const char *b64 = NULL;
	bool legacy = false;
	enum gv_code rc;

	*out = NULL;
	rc = http_call_parse(s->l, call, &c, err);
	if (!rc)
		rc = session_call(s, &c, &secret, err);
	http_call_release(&c);
	if (rc) {
		gv_err_prefix(err, "imagePullSecret %s/%s: ", ns, name);
		goto out;
	}
	b64 = jstr(json_object_get(secret, "data"), ".dockerconfigjson");
	if (!b64) {
		b64 = jstr(json_object_get(secret, "data"), ".dockercfg");
		legacy = b64 != NULL;
	}
	if (!b64) {
		rc = gv_err_set(err, GV_EINVAL,
				"imagePullSecret %s/%s has no .dockerconfigjson or .dockercfg", ns,
				name);
		goto out;
	}
	{
		size_t len = strlen(b64), pad = 0;
		unsigned char *raw = gv_xmalloc(len / 4 * 3 + 4);
		int n = len % 4 ? -1 : EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)len);
		json_error_t je;
		if (n < 0) {
			free(raw);
			rc = gv_err_set(err, GV_EINVAL, "imagePullSecret %s/%s: bad base64", ns,
					name);
			goto out;
		}
		while (pad < 2 && len > pad && b64[len - 1 - pad] == '=')
			pad++;
		cfg = json_loadb((const char *)raw, (size_t)n - pad, 0, &je);
		free(raw);
		if (!json_is_object(cfg)) {
			rc = gv_err_set(
			    err, GV_EINVAL,
			    "imagePullSecret %s/%s: the docker config is not a JSON object", ns,
			    name);
			goto out;
		}
	}
	if (legacy) {
		json_t *w = json_pack("{s:O}", "auths", cfg);
		json_decref(cfg);
		cfg = w;
	}
	*out = cfg;
	cfg = NULL;
out:
	json_decref(cfg);
	json_decref(secret);
	json_decref(call);
	free(path);
	return rc;
}

/*
 * imageRegistry {reference, jmesPath, imageRegistryCredentials
 * {allowInsecureRegistry, secrets, providers}}: Kyverno's ImageData of the
 * image (kube/registry.h), jmesPath applied when given. Cloud credential
 * providers are refused with an error (gavel has none); secrets are docker
 * configs in gavel's namespace.
 */
static enum gv_code load_image_registry(struct session *s, const json_t *entry, const json_t *ctx,
					json_t **out, struct gv_err *err)
{
	const char *ename = jstr(entry, "name");
	json_t *ir = NULL, *configs = json_array(), *data = NULL;
	const json_t *cred, *secrets;
	struct kube_registry_opts opts = {0};
	const char *ref, *jp;
	struct gv_err e = {0};
	enum gv_code rc;

	rc = engine_substitute(json_object_get(entry, "imageRegistry"), ctx, &ir, err);
	if (rc) {
		gv_err_prefix(err, "failed to substitute variables in context entry %s: ", ename);
		goto out;
	}
	ref = jstr(ir, "reference");
	jp = jstr(ir, "jmesPath");
	if (!ref || !*ref) {
		rc = gv_err_set(err, GV_EINVAL,
				"imageRegistry of context entry %s has no reference", ename);
		goto out;
	}
	cred = json_object_get(ir, "imageRegistryCredentials");
	if (json_array_size(json_object_get(cred, "providers"))) {
		rc = gv_err_set(err, GV_EINVAL,
				"context entry %s: gavel does not evaluate "
				"imageRegistryCredentials.providers (give the credentials as "
				"imageRegistryCredentials.secrets)",
				ename);
		goto out;
	}
	secrets = json_object_get(cred, "secrets");
	if (json_array_size(secrets) > MAX_PULL_SECRETS) {
		rc = gv_err_set(err, GV_ELIMIT, "context entry %s: more than %d secrets", ename,
				MAX_PULL_SECRETS);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(secrets); i++) {
		const char *sn = json_string_value(json_array_get(secrets, i));
		json_t *cfg = NULL;
		if (!sn || !*sn)
			continue;
		rc = pull_secret(s, sn, &cfg, err);
		if (rc)
			goto out;
		json_array_append_new(configs, cfg);
	}
	opts.allow_insecure = json_is_true(json_object_get(cred, "allowInsecureRegistry"));
	opts.docker_configs = configs;
	rc = kube_registry_image_data(s->l->registry, ref, &opts, &data, &e);
	if (rc) {
		/* Kyverno's wording */
		gv_err_set(err, rc, "failed to fetch image descriptor: %s, error: %s", ref, e.msg);
		goto out;
	}
	if (jp && *jp) {
		json_t *v = NULL;
		rc = apply_jmespath(jp, data, &v, err);
		if (rc)
			goto out;
		json_decref(data);
		data = v;
	}
	*out = data;
	data = NULL;
out:
	json_decref(data);
	json_decref(configs);
	json_decref(ir);
	return rc;
}

static enum gv_code load_entry(struct session *s, const json_t *entry, const json_t *ctx,
			       json_t **out, struct gv_err *err)
{
	if (json_object_get(entry, "configMap"))
		return load_config_map(s, entry, ctx, out, err);
	if (json_object_get(entry, "apiCall"))
		return load_api_call(s, entry, ctx, out, err);
	if (json_object_get(entry, "globalReference"))
		return load_global(s, entry, ctx, out, err);
	if (json_object_get(entry, "imageRegistry"))
		return load_image_registry(s, entry, ctx, out, err);
	return gv_err_set(err, GV_EINVAL, "context entry %s: unknown kind of entry",
			  jstr(entry, "name") ? jstr(entry, "name") : "");
}

static enum gv_code hook_load_context(void *ud, const json_t *entry, const json_t *ctx,
				      json_t **out, struct gv_err *err)
{
	enum gv_code rc;

	*out = NULL;
	rc = load_entry(ud, entry, ctx, out, err);
	/*
	 * GV_ENOENT means "skip this entry" to the engine (offline values);
	 * in the cluster a thing that is not found (a 404 from a registry or
	 * the API server) is a failure like any other: never a skip.
	 */
	if (rc == GV_ENOENT) {
		if (err)
			err->code = GV_EEVAL;
		rc = GV_EEVAL;
	}
	return rc;
}

/* ---- parameter resources (engine_hooks.param_scope, params) ---- */

/* The kind of api_version through discovery (cached by the client). */
static enum gv_code param_discover(struct session *s, const char *api_version, const char *kind,
				   struct kube_resource *r, struct gv_err *err)
{
	const char *slash = strchr(api_version, '/');
	char *group = gv_xstrndup(api_version, slash ? (size_t)(slash - api_version) : 0);
	enum gv_code rc;

	rc = kube_discover(s->l->o.client, group, slash ? slash + 1 : api_version, kind, r, err);
	free(group);
	return rc;
}

static enum gv_code hook_param_scope(void *ud, const char *api_version, const char *kind,
				     bool *namespaced, struct gv_err *err)
{
	struct kube_resource r;
	enum gv_code rc = param_discover(ud, api_version, kind, &r, err);

	if (rc)
		return rc;
	*namespaced = r.namespaced;
	kube_resource_release(&r);
	return GV_OK;
}

/* A LabelSelector as the API's labelSelector text ("a=b,c in (d,e),!f"). */
static void selector_text(const json_t *sel, struct gv_buf *b)
{
	const char *k;
	const json_t *v, *e;
	size_t i, j;

	json_object_foreach((json_t *)json_object_get(sel, "matchLabels"), k, v)
	{
		gv_buf_addf(b, "%s%s=%s", b->len ? "," : "", k,
			    json_string_value(v) ? json_string_value(v) : "");
	}
	json_array_foreach(json_object_get(sel, "matchExpressions"), i, e)
	{
		const char *key = jstr(e, "key"), *op = jstr(e, "operator");
		if (!key || !op)
			continue;
		if (b->len)
			gv_buf_adds(b, ",");
		if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
			gv_buf_addf(b, "%s%s", *op == 'D' ? "!" : "", key);
			continue;
		}
		gv_buf_addf(b, "%s %s (", key, !strcmp(op, "NotIn") ? "notin" : "in");
		json_array_foreach(json_object_get(e, "values"), j, v)
		{
			gv_buf_addf(b, "%s%s", j ? "," : "",
				    json_string_value(v) ? json_string_value(v) : "");
		}
		gv_buf_adds(b, ")");
	}
}

/*
 * engine_hooks.params: GET the named object, or LIST the collection with
 * the selector, through the session (cached, within its deadline).
 */
static enum gv_code hook_params(void *ud, const char *api_version, const char *kind, const char *ns,
				const char *name, const json_t *selector, json_t **out,
				struct gv_err *err)
{
	struct session *s = ud;
	struct kube_resource r;
	struct http_call c = {0};
	struct gv_buf path = {0}, sel = {0};
	struct gv_err e = {0};
	json_t *call = NULL, *data = NULL;
	char *p;
	enum gv_code rc;

	*out = NULL;
	if ((rc = param_discover(s, api_version, kind, &r, err)))
		return rc;
	p = kube_path(&r, *ns ? ns : NULL, name);
	gv_buf_adds(&path, p);
	free(p);
	kube_resource_release(&r);
	if (!name && selector) {
		selector_text(selector, &sel);
		if (sel.len) {
			char *esc = kube_escape(gv_buf_str(&sel));
			gv_buf_addf(&path, "?labelSelector=%s", esc);
			free(esc);
		}
	}
	call = json_pack("{s:s, s:s}", "urlPath", gv_buf_str(&path), "method", "GET");
	rc = http_call_parse(s->l, call, &c, &e);
	if (!rc)
		rc = session_call(s, &c, &data, &e);
	if (rc) {
		/* the API server's NotFound: `<resource> "<name>" not found` */
		const char *nf = strstr(e.msg, ": HTTP 404: ");
		if (nf && name)
			rc = gv_err_set(err, GV_ENOENT, "%s", nf + 12);
		else
			gv_err_set(err, rc, "%s", e.msg);
		goto out;
	}
	if (name) {
		*out = data;
		data = NULL;
	} else {
		const json_t *items = json_object_get(data, "items");
		*out = json_is_array(items) ? json_incref((json_t *)items) : json_array();
	}
out:
	http_call_release(&c);
	json_decref(call);
	json_decref(data);
	gv_buf_release(&path);
	gv_buf_release(&sel);
	return rc;
}

/*
 * engine_hooks.authorize: a SubjectAccessReview POSTed to the API server
 * with gavel's credentials, through the session (the same review is asked
 * once per session), answering its status.
 */
static enum gv_code hook_authorize(void *ud, const json_t *review, json_t **out, struct gv_err *err)
{
	struct session *s = ud;
	struct http_call c = {0};
	struct gv_err e = {0};
	json_t *call, *data = NULL;
	enum gv_code rc;

	*out = NULL;
	call = json_pack("{s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:O}]}", "urlPath",
			 "/apis/authorization.k8s.io/v1/subjectaccessreviews", "method", "POST",
			 "data", "key", "apiVersion", "value", "authorization.k8s.io/v1", "key",
			 "kind", "value", "SubjectAccessReview", "key", "spec", "value", review);
	rc = http_call_parse(s->l, call, &c, &e);
	if (!rc)
		rc = session_call(s, &c, &data, &e);
	if (rc) {
		gv_err_set(err, rc, "SubjectAccessReview: %s", e.msg);
	} else if (!json_is_object(json_object_get(data, "status"))) {
		rc = gv_err_set(err, GV_EINVAL, "SubjectAccessReview: the answer has no status");
	} else {
		*out = json_incref(json_object_get(data, "status"));
	}
	http_call_release(&c);
	json_decref(call);
	json_decref(data);
	return rc;
}

/* ---- global context entries ---- */

static void global_release(struct global *g)
{
	free(g->name);
	free(g->rv);
	json_decref(g->api_call);
	if (g->inf)
		kube_informer_stop(g->inf);
	json_decref(g->data);
	free(g->error);
}

/* Go's time.ParseDuration for the usual forms ("10m", "1h30m", "45s"); -1 when not one. */
static int64_t duration_ms(const char *s)
{
	double total = 0;
	if (!s || !*s)
		return -1;
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		double unit;
		if (end == s)
			return -1;
		s = end;
		if (!strncmp(s, "ms", 2))
			unit = 1, s += 2;
		else if (*s == 's')
			unit = 1000, s++;
		else if (*s == 'm')
			unit = 60000, s++;
		else if (*s == 'h')
			unit = 3600000, s++;
		else
			return -1;
		total += v * unit;
	}
	return total < 1000 ? 1000 : (int64_t)total;
}

static char *resource_path(const json_t *kr)
{
	const char *g = jstr(kr, "group"), *v = jstr(kr, "version"), *r = jstr(kr, "resource");
	const char *ns = jstr(kr, "namespace");
	char *path, *er, *ens = NULL;

	if (!v || !*v || !r || !*r)
		return NULL;
	er = kube_escape(r);
	if (ns && *ns)
		ens = kube_escape(ns);
	if (g && *g)
		path = gv_xasprintf("/apis/%s/%s%s%s%s/%s", g, v, ens ? "/namespaces/" : "",
				    ens ? ens : "", "", er);
	else
		path = gv_xasprintf("/api/%s%s%s/%s", v, ens ? "/namespaces/" : "", ens ? ens : "",
				    er);
	free(er);
	free(ens);
	return path;
}

/* Brings l->globals in line with the GlobalContextEntries listed. */
static void globals_sync(struct context_loader *l, const json_t *items)
{
	size_t i;
	json_t *it;
	struct global *keep = NULL, *drop = NULL;
	size_t nkeep = 0, ndrop = 0;

	pthread_mutex_lock(&l->mu);
	/* entries gone or changed are dropped; the others kept */
	for (size_t j = 0; j < l->nglobals; j++) {
		struct global *g = &l->globals[j];
		bool live = false;
		json_array_foreach(items, i, it)
		{
			const json_t *md = json_object_get(it, "metadata");
			if (!strcmp(g->name, jstr(md, "name") ? jstr(md, "name") : "") &&
			    !strcmp(g->rv,
				    jstr(md, "resourceVersion") ? jstr(md, "resourceVersion") : ""))
				live = true;
		}
		if (live) {
			keep = gv_xrealloc(keep, (nkeep + 1) * sizeof(*keep));
			keep[nkeep++] = *g;
		} else {
			drop = gv_xrealloc(drop, (ndrop + 1) * sizeof(*drop));
			drop[ndrop++] = *g;
		}
	}
	json_array_foreach(items, i, it)
	{
		const json_t *md = json_object_get(it, "metadata");
		const json_t *spec = json_object_get(it, "spec");
		const char *name = jstr(md, "name"), *rv = jstr(md, "resourceVersion");
		bool have = false;
		struct global g = {0};
		if (!name)
			continue;
		for (size_t j = 0; j < nkeep && !have; j++)
			have = !strcmp(keep[j].name, name);
		if (have)
			continue;
		g.name = gv_xstrdup(name);
		g.rv = gv_xstrdup(rv ? rv : "");
		if (json_object_get(spec, "kubernetesResource")) {
			char *path = resource_path(json_object_get(spec, "kubernetesResource"));
			if (path)
				g.inf = kube_informer_start(l->o.client, path, NULL, NULL);
			else
				g.error = gv_xstrdup("spec.kubernetesResource needs a version and "
						     "a resource");
			free(path);
		} else if (json_object_get(spec, "apiCall")) {
			const char *ri = jstr(json_object_get(spec, "apiCall"), "refreshInterval");
			g.api_call = json_incref(json_object_get(spec, "apiCall"));
			g.refresh_ms = ri ? duration_ms(ri) : GLOBAL_DEFAULT_REFRESH_MS;
			if (g.refresh_ms < 0) {
				g.error = gv_xasprintf("bad refreshInterval %s", ri);
				json_decref(g.api_call);
				g.api_call = NULL;
			}
			g.next_ms = 0;
		} else {
			g.error = gv_xstrdup("neither spec.kubernetesResource nor spec.apiCall");
		}
		gv_debug("context: global context entry %s", name);
		keep = gv_xrealloc(keep, (nkeep + 1) * sizeof(*keep));
		keep[nkeep++] = g;
	}
	free(l->globals);
	l->globals = keep;
	l->nglobals = nkeep;
	pthread_mutex_unlock(&l->mu);
	for (size_t j = 0; j < ndrop; j++)
		global_release(&drop[j]);
	free(drop);
}

/* Refreshes the apiCall entries that are due (the calls made without the lock). */
static void globals_refresh(struct context_loader *l)
{
	for (;;) {
		json_t *call = NULL;
		char *name = NULL;
		struct http_call c = {0};
		struct gv_err e = {0};
		json_t *data = NULL;
		enum gv_code rc;
		int64_t now = now_ms();

		pthread_mutex_lock(&l->mu);
		for (size_t i = 0; i < l->nglobals && !call; i++) {
			struct global *g = &l->globals[i];
			if (g->api_call && g->next_ms <= now) {
				call = json_incref(g->api_call);
				name = gv_xstrdup(g->name);
				g->next_ms = now + g->refresh_ms;
			}
		}
		pthread_mutex_unlock(&l->mu);
		if (!call)
			return;
		rc = http_call_parse(l, call, &c, &e);
		if (!rc)
			rc = http_do(l, &c, l->o.call_timeout_ms, &data, &e);
		http_call_release(&c);
		if (rc)
			gv_warn("context: global context entry %s: %s", name, e.msg);
		pthread_mutex_lock(&l->mu);
		for (size_t i = 0; i < l->nglobals; i++) {
			struct global *g = &l->globals[i];
			if (strcmp(g->name, name) || g->api_call != call)
				continue;
			free(g->error);
			g->error = rc ? gv_xstrdup(e.msg) : NULL;
			if (!rc) {
				json_decref(g->data);
				g->data = json_incref(data);
			}
		}
		pthread_mutex_unlock(&l->mu);
		json_decref(data);
		json_decref(call);
		free(name);
	}
}

static void *global_main(void *ud)
{
	struct context_loader *l = ud;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		struct kube_informer *gce = l->gce;
		struct timespec ts;
		pthread_mutex_unlock(&l->mu);
		if (kube_informer_synced(gce)) {
			json_t *items = kube_informer_list(gce);
			globals_sync(l, items);
			json_decref(items);
			globals_refresh(l);
		}
		pthread_mutex_lock(&l->mu);
		if (l->stop)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += GLOBAL_TICK_MS / 1000;
		pthread_cond_timedwait(&l->cv, &l->mu, &ts);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* ---- sessions ---- */

static const struct engine_hooks *source_open(void *ud, const struct engine_policyset *set,
					      long deadline_ms)
{
	struct context_loader *l = ud;
	struct session *s = gv_xcalloc(1, sizeof(*s));

	context_loader_watch(l, set);
	s->l = l;
	/* no overall bound: a day, far past any call's timeout */
	s->deadline_ms = now_ms() + (deadline_ms < 0	? 86400000L
				     : deadline_ms == 0 ? l->o.deadline_ms
							: deadline_ms);
	pthread_mutex_init(&s->mu, NULL);
	s->hooks.ud = s;
	s->hooks.load_context = hook_load_context;
	s->hooks.http = hook_http;
	s->hooks.param_scope = hook_param_scope;
	s->hooks.params = hook_params;
	s->hooks.authorize = hook_authorize;
	return &s->hooks;
}

static void source_close(void *ud, const struct engine_hooks *h)
{
	struct session *s = h ? h->ud : NULL;

	(void)ud;
	if (!s)
		return;
	for (size_t i = 0; i < s->ncalls; i++) {
		free(s->calls[i].key);
		json_decref(s->calls[i].data);
		free(s->calls[i].error);
	}
	pthread_mutex_destroy(&s->mu);
	free(s);
}

struct context_loader *context_loader_new(const struct context_options *o)
{
	struct context_loader *l = gv_xcalloc(1, sizeof(*l));

	l->o = *o;
	if (l->o.call_timeout_ms <= 0)
		l->o.call_timeout_ms = CONTEXT_CALL_TIMEOUT_MS;
	if (l->o.deadline_ms <= 0)
		l->o.deadline_ms = CONTEXT_DEADLINE_MS;
	if (!l->o.max_response)
		l->o.max_response = CONTEXT_MAX_RESPONSE;
	if (l->o.sync_wait_ms <= 0)
		l->o.sync_wait_ms = CONTEXT_SYNC_WAIT_MS;
	l->registry = kube_registry_new(NULL);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->src.open = source_open;
	l->src.close = source_close;
	l->src.ud = l;
	return l;
}

const struct view_context *context_loader_source(struct context_loader *l)
{
	return &l->src;
}

void context_loader_free(struct context_loader *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	if (l->thread_started)
		pthread_join(l->thread, NULL);
	for (size_t i = 0; i < l->nglobals; i++)
		global_release(&l->globals[i]);
	free(l->globals);
	if (l->gce)
		kube_informer_stop(l->gce);
	for (size_t i = 0; i < l->ncms; i++) {
		kube_informer_stop(l->cms[i].inf);
		free(l->cms[i].name);
	}
	free(l->cms);
	if (l->cm_all)
		kube_informer_stop(l->cm_all);
	if (l->last_set)
		engine_policyset_unref(l->last_set);
	kube_registry_free(l->registry);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
