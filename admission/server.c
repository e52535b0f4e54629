/*
 * server.c - the webhook's HTTPS server (libmicrohttpd with its internal
 * thread pool, GnuTLS underneath) and the plain HTTP /metrics listener.
 *
 * Requests follow libmicrohttpd's multi-call access handler: the first call
 * sees the headers (route, method, Content-Type and Content-Length are
 * checked there), the next ones the body in pieces (bounded), the last one
 * answers. Per-request state lives in *con_cls and is freed in the
 * completion callback, so nothing survives from one request to the next.
 *
 * TLS: the key pair is handed to GnuTLS per handshake by a certificate
 * callback, so a pair rotated on disk is picked up without restarting the
 * daemon. GnuTLS' callback has no user pointer, hence one TLS server per
 * process (the pair lives in this file's `tls` store).
 */
#include "admission/admission_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "common/log.h"
#include "common/banned.h"

#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define MAX_CERTS      16	   /* certificates in tls.crt (leaf + chain) */
#define MAX_DISCARD    (16u << 20) /* bytes of an oversize body read before hanging up */
#define RETIRED_KEEP   600	   /* seconds a replaced key pair stays valid for handshakes */
#define TEXT_TYPE      "text/plain; charset=utf-8"
#define METRICS_TYPE   "text/plain; version=0.0.4; charset=utf-8"

/* ---- the TLS key pair ---- */

struct tls_pair {
	gnutls_pcert_st pcerts[MAX_CERTS];
	unsigned npcerts;
	gnutls_privkey_t key;
	time_t retired;	       /* 0 while current */
	struct tls_pair *next; /* retired list */
};

struct file_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

static struct {
	pthread_mutex_t mu;
	struct tls_pair *current;
	struct tls_pair *retired;
	bool in_use; /* a TLS server is running */
} tls = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void pair_free(struct tls_pair *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->npcerts; i++)
		gnutls_pcert_deinit(&p->pcerts[i]);
	if (p->key)
		gnutls_privkey_deinit(p->key);
	free(p);
}

static enum gv_code read_pem(const char *path, gnutls_datum_t *d, struct gv_err *err)
{
	char *data = NULL;
	size_t len = 0;
	enum gv_code rc = gv_read_file(path, &data, &len, err);

	if (rc)
		return rc;
	d->data = (unsigned char *)data;
	d->size = (unsigned)len;
	return GV_OK;
}

/* Loads dir/tls.crt and dir/tls.key, checking that they belong together. */
static enum gv_code pair_load(const char *dir, struct tls_pair **out, struct gv_err *err)
{
	char *crt_path = gv_xasprintf("%s/tls.crt", dir),
	     *key_path = gv_xasprintf("%s/tls.key", dir);
	gnutls_datum_t crt = {0}, key = {0};
	gnutls_certificate_credentials_t check = NULL;
	struct tls_pair *p = NULL;
	enum gv_code rc;
	int r;

	*out = NULL;
	if ((rc = read_pem(crt_path, &crt, err)) || (rc = read_pem(key_path, &key, err)))
		goto out;
	/* set_x509_key_mem2 rejects bad PEM and a key that does not match the certificate. */
	gnutls_certificate_allocate_credentials(&check);
	r = gnutls_certificate_set_x509_key_mem2(check, &crt, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (r < 0) {
		rc = gv_err_set(err, GV_EINVAL, "tls: %s, %s: %s", crt_path, key_path,
				gnutls_strerror(r));
		goto out;
	}
	p = gv_xcalloc(1, sizeof(*p));
	p->npcerts = MAX_CERTS;
	r = gnutls_pcert_list_import_x509_raw(p->pcerts, &p->npcerts, &crt, GNUTLS_X509_FMT_PEM, 0);
	if (r < 0) {
		p->npcerts = 0;
		rc = gv_err_set(err, GV_EINVAL, "tls: %s: %s", crt_path, gnutls_strerror(r));
		goto out;
	}
	gnutls_privkey_init(&p->key);
	r = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (r < 0) {
		rc = gv_err_set(err, GV_EINVAL, "tls: %s: %s", key_path, gnutls_strerror(r));
		goto out;
	}
	*out = p;
	p = NULL;
out:
	pair_free(p);
	if (check)
		gnutls_certificate_free_credentials(check);
	if (key.data) {
		memset(key.data, 0, key.size);
		free(key.data);
	}
	free(crt.data);
	free(crt_path);
	free(key_path);
	return rc;
}

static int cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			 const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			 gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *key)
{
	int rc = -1;

	(void)session;
	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	pthread_mutex_lock(&tls.mu);
	if (tls.current) {
		*pcert = tls.current->pcerts;
		*pcert_length = tls.current->npcerts;
		*key = tls.current->key;
		rc = 0;
	}
	pthread_mutex_unlock(&tls.mu);
	return rc;
}

/* Makes p current; the old pair is retired and freed RETIRED_KEEP seconds later. */
static void pair_install(struct tls_pair *p)
{
	time_t now = time(NULL);
	struct tls_pair *expired = NULL, **pp;

	pthread_mutex_lock(&tls.mu);
	if (tls.current) {
		tls.current->retired = now;
		tls.current->next = tls.retired;
		tls.retired = tls.current;
	}
	tls.current = p;
	for (pp = &tls.retired; *pp;) {
		if (now - (*pp)->retired > RETIRED_KEEP) {
			struct tls_pair *x = *pp;
			*pp = x->next;
			x->next = expired;
			expired = x;
		} else {
			pp = &(*pp)->next;
		}
	}
	pthread_mutex_unlock(&tls.mu);
	while (expired) {
		struct tls_pair *next = expired->next;
		pair_free(expired);
		expired = next;
	}
}

static void tls_release_all(void)
{
	struct tls_pair *p, *next;

	pthread_mutex_lock(&tls.mu);
	p = tls.retired;
	pair_free(tls.current);
	tls.current = NULL;
	tls.retired = NULL;
	tls.in_use = false;
	pthread_mutex_unlock(&tls.mu);
	for (; p; p = next) {
		next = p->next;
		pair_free(p);
	}
}

static bool stamp_get(const char *path, struct file_stamp *st)
{
	struct stat sb;

	memset(st, 0, sizeof(*st));
	if (stat(path, &sb))
		return false;
	st->dev = sb.st_dev;
	st->ino = sb.st_ino;
	st->size = sb.st_size;
	st->mtime = sb.st_mtim;
	return true;
}

static bool stamp_eq(const struct file_stamp *a, const struct file_stamp *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* ---- the server ---- */

enum route { ROUTE_NONE, ROUTE_VALIDATE, ROUTE_VALIDATE_POLICY, ROUTE_HEALTHZ, ROUTE_READYZ };

struct admission_server {
	struct admission_handler *handler; /* borrowed */
	struct metrics_registry *metrics;  /* borrowed */
	char *tls_dir;
	struct file_stamp crt_stamp, key_stamp; /* of the pair loaded (or last tried) */
	struct MHD_Daemon *daemon, *metrics_daemon;
	int fd, metrics_fd; /* listening sockets (owned until handed back by quiesce) */
	unsigned port, metrics_port;
	unsigned request_timeout;
	atomic_int in_flight;
};

/* One request's state (*con_cls). */
struct request {
	enum route route;
	struct gv_buf body;
	size_t received;
	bool too_big;
	struct timespec start;
};

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct gv_buf b = {0};

	(void)cls;
	gv_buf_vaddf(&b, fmt, ap);
	while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
		b.data[--b.len] = '\0';
	gv_debug("http: %s", gv_buf_str(&b));
	gv_buf_release(&b);
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *ctype,
			       char *body, size_t len, const char *allow)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned status, const char *text,
				    const char *allow)
{
	char *body = gv_xasprintf("%s\n", text);

	return respond(c, status, TEXT_TYPE, body, strlen(body), allow);
}

static enum route route_of(const char *url)
{
	if (!strcmp(url, "/validate"))
		return ROUTE_VALIDATE;
	if (!strcmp(url, "/validate-policy"))
		return ROUTE_VALIDATE_POLICY;
	if (!strcmp(url, "/healthz"))
		return ROUTE_HEALTHZ;
	if (!strcmp(url, "/readyz"))
		return ROUTE_READYZ;
	return ROUTE_NONE;
}

static bool json_content_type(const char *ct)
{
	static const char want[] = "application/json";

	if (!ct)
		return false;
	while (*ct == ' ')
		ct++;
	if (strncasecmp(ct, want, sizeof(want) - 1))
		return false;
	ct += sizeof(want) - 1;
	return !*ct || *ct == ';' || *ct == ' ';
}

static double elapsed(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The first call of a request: route, method and headers. */
static enum MHD_Result request_begin(struct admission_server *s, struct MHD_Connection *c,
				     const char *url, const char *method, void **con_cls)
{
	enum route route = route_of(url);
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
	const char *cl;
	struct request *r;

	switch (route) {
	case ROUTE_NONE:
		return respond_text(c, MHD_HTTP_NOT_FOUND, "not found", NULL);
	case ROUTE_HEALTHZ:
	case ROUTE_READYZ:
		if (!get)
			return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
					    "GET, HEAD");
		if (route == ROUTE_READYZ && !admission_handler_ready(s->handler))
			return respond_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
					    "not ready: no policy snapshot loaded yet", NULL);
		return respond_text(c, MHD_HTTP_OK, "ok", NULL);
	case ROUTE_VALIDATE:
	case ROUTE_VALIDATE_POLICY:
		break;
	}
	if (strcmp(method, MHD_HTTP_METHOD_POST))
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "POST");
	if (!json_content_type(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE)))
		return respond_text(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				    "unsupported media type: Content-Type must be application/json",
				    NULL);
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	r = gv_xcalloc(1, sizeof(*r));
	r->route = route;
	clock_gettime(CLOCK_MONOTONIC, &r->start);
	if (cl) {
		char *end;
		unsigned long long n;
		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno || end == cl || n > ADMISSION_MAX_BODY) {
			const char *expect =
			    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
			/*
			 * Answer at once when the client waits for 100 Continue or the body is
			 * huge; otherwise read and drop the body first, so that closing the
			 * connection does not reset it before the client reads the 413.
			 */
			if (expect || errno || end == cl || n > MAX_DISCARD) {
				free(r);
				return respond_text(c, MHD_HTTP_CONTENT_TOO_LARGE,
						    "request body too large: the limit is 3 MiB",
						    NULL);
			}
			r->too_big = true;
		} else if (n) {
			r->body.data = gv_xmalloc((size_t)n + 1);
			r->body.cap = (size_t)n + 1;
			r->body.data[0] = '\0';
		}
	}
	*con_cls = r;
	atomic_fetch_add(&s->in_flight, 1);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct admission_server *s = cls;
	struct request *r = *con_cls;
	struct admission_reply reply;
	enum MHD_Result res;

	(void)version;
	if (!r)
		return request_begin(s, c, url, method, con_cls);
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		r->received += n;
		if (s->request_timeout && elapsed(&r->start) > s->request_timeout) {
			gv_debug("http: request body not received within %us: closing",
				 s->request_timeout);
			return MHD_NO;
		}
		if (r->too_big || r->received > ADMISSION_MAX_BODY) {
			if (!r->too_big)
				gv_buf_release(&r->body);
			r->too_big = true;
			return r->received > MAX_DISCARD ? MHD_NO : MHD_YES;
		}
		gv_buf_add(&r->body, upload_data, n);
		return MHD_YES;
	}
	if (r->too_big)
		return respond_text(c, MHD_HTTP_CONTENT_TOO_LARGE,
				    "request body too large: the limit is 3 MiB", NULL);
	if (r->route == ROUTE_VALIDATE)
		admission_handle(s->handler, r->body.data ? r->body.data : "", r->body.len, &reply);
	else
		admission_handle_policy(s->handler, r->body.data ? r->body.data : "", r->body.len,
					&reply);
	gv_buf_release(&r->body); /* the body is not needed while the answer is sent */
	res = respond(c, (unsigned)reply.http, reply.content_type, reply.body, reply.len, NULL);
	reply.body = NULL;
	return res;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct admission_server *s = cls;
	struct request *r = *con_cls;

	(void)c;
	(void)toe;
	if (!r)
		return;
	gv_buf_release(&r->body);
	free(r);
	*con_cls = NULL;
	atomic_fetch_sub(&s->in_flight, 1);
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct admission_server *s = cls;
	struct gv_buf b = {0};
	size_t len;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	if (strcmp(url, "/metrics"))
		return respond_text(c, MHD_HTTP_NOT_FOUND, "not found", NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
				    "GET, HEAD");
	if (s->metrics)
		metrics_render(s->metrics, &b);
	len = b.len;
	return respond(c, MHD_HTTP_OK, METRICS_TYPE, gv_buf_detach(&b), len, NULL);
}

/* ---- sockets ---- */

/* Splits "ADDR:PORT", ":PORT", "[v6]:PORT" into host (NULL = any) and port. */
static enum gv_code parse_listen(const char *spec, char **host, unsigned *port, struct gv_err *err)
{
	const char *colon, *h = spec;
	size_t hlen;
	char *end;
	unsigned long p;

	*host = NULL;
	if (!spec || !(colon = strrchr(spec, ':')))
		return gv_err_set(err, GV_EINVAL, "listen address \"%s\": want ADDR:PORT",
				  spec ? spec : "");
	hlen = (size_t)(colon - spec);
	if (hlen >= 2 && spec[0] == '[' && spec[hlen - 1] == ']') {
		h = spec + 1;
		hlen -= 2;
	}
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || p > 65535)
		return gv_err_set(err, GV_EINVAL, "listen address \"%s\": bad port", spec);
	if (hlen && !(hlen == 1 && *h == '*'))
		*host = gv_xstrndup(h, hlen);
	*port = (unsigned)p;
	return GV_OK;
}

static int bind_one(const struct addrinfo *ai, bool dual)
{
	int fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	int one = 1, zero = 0;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (dual && ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1024)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static enum gv_code listen_on(const char *spec, int *fd_out, unsigned *port_out, struct gv_err *err)
{
	struct addrinfo hints = {0}, *res = NULL, *ai;
	char *host = NULL, portstr[16];
	unsigned port = 0;
	enum gv_code rc;
	int fd = -1, gai, last = 0;

	*fd_out = -1;
	if ((rc = parse_listen(spec, &host, &port, err)))
		return rc;
	snprintf(portstr, sizeof(portstr), "%u", port);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	hints.ai_family = host ? AF_UNSPEC : AF_INET6;
	gai = getaddrinfo(host, portstr, &hints, &res);
	if (gai && !host) { /* no IPv6 here: any IPv4 address */
		hints.ai_family = AF_INET;
		gai = getaddrinfo(NULL, portstr, &hints, &res);
	}
	if (gai) {
		rc = gv_err_set(err, GV_EINVAL, "listen %s: %s", spec, gai_strerror(gai));
		goto out;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = bind_one(ai, !host);
		if (fd < 0)
			last = errno;
	}
	if (fd < 0 && !host && last == EAFNOSUPPORT) {
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		struct addrinfo v4 = {.ai_family = AF_INET,
				      .ai_socktype = SOCK_STREAM,
				      .ai_addr = (struct sockaddr *)&sin,
				      .ai_addrlen = sizeof(sin)};
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
		fd = bind_one(&v4, false);
		if (fd < 0)
			last = errno;
	}
	if (fd < 0) {
		rc = gv_err_set(err, GV_EIO, "listen %s: %s", spec, strerror(last));
		goto out;
	}
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		*port_out = port;
		if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
			*port_out =
			    ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							   : ((struct sockaddr_in *)&ss)->sin_port);
	}
	*fd_out = fd;
out:
	if (res)
		freeaddrinfo(res);
	free(host);
	return rc;
}

static unsigned cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 && n < 256 ? (unsigned)n : 2;
}

enum gv_code admission_server_start(const struct admission_server_config *cfg,
				    struct admission_server **out, struct gv_err *err)
{
	struct admission_server *s = gv_xcalloc(1, sizeof(*s));
	struct tls_pair *pair = NULL;
	unsigned threads = cfg->threads ? cfg->threads : cpu_count();
	enum gv_code rc;
	char *crt_path, *key_path;

	*out = NULL;
	s->fd = s->metrics_fd = -1;
	s->handler = cfg->handler;
	s->metrics = cfg->metrics;
	s->tls_dir = gv_xstrdup(cfg->tls_dir ? cfg->tls_dir : ".");
	s->request_timeout = cfg->request_timeout ? cfg->request_timeout : 10;
	atomic_init(&s->in_flight, 0);

	pthread_mutex_lock(&tls.mu);
	if (tls.in_use) {
		pthread_mutex_unlock(&tls.mu);
		free(s->tls_dir);
		free(s);
		return gv_err_set(err, GV_EINVAL,
				  "a TLS server is already running in this process");
	}
	tls.in_use = true;
	pthread_mutex_unlock(&tls.mu);

	crt_path = gv_xasprintf("%s/tls.crt", s->tls_dir);
	key_path = gv_xasprintf("%s/tls.key", s->tls_dir);
	stamp_get(crt_path, &s->crt_stamp);
	stamp_get(key_path, &s->key_stamp);
	free(crt_path);
	free(key_path);
	if ((rc = pair_load(s->tls_dir, &pair, err)))
		goto fail;
	pair_install(pair);

	if ((rc = listen_on(cfg->listen ? cfg->listen : ":9443", &s->fd, &s->port, err)))
		goto fail;
	if (cfg->metrics_listen &&
	    (rc = listen_on(cfg->metrics_listen, &s->metrics_fd, &s->metrics_port, err)))
		goto fail;

	s->daemon = MHD_start_daemon(
	    MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ITC, 0, NULL,
	    NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->fd, MHD_OPTION_THREAD_POOL_SIZE,
	    threads, MHD_OPTION_CONNECTION_LIMIT,
	    cfg->connection_limit ? cfg->connection_limit : 1024u, MHD_OPTION_CONNECTION_TIMEOUT,
	    cfg->idle_timeout ? cfg->idle_timeout : 120u, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
	    s, MHD_OPTION_HTTPS_CERT_CALLBACK, cert_callback, MHD_OPTION_HTTPS_PRIORITIES,
	    TLS_PRIORITIES, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (!s->daemon) {
		rc = gv_err_set(err, GV_EIO, "listen %s: the HTTPS server did not start",
				cfg->listen ? cfg->listen : ":9443");
		goto fail;
	}
	s->fd = -1; /* the daemon owns the socket now */
	if (s->metrics_fd >= 0) {
		s->metrics_daemon = MHD_start_daemon(
		    MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC, 0, NULL, NULL,
		    on_metrics, s, MHD_OPTION_LISTEN_SOCKET, s->metrics_fd,
		    MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
		    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
		if (!s->metrics_daemon) {
			rc = gv_err_set(err, GV_EIO, "listen %s: the metrics server did not start",
					cfg->metrics_listen);
			goto fail;
		}
		s->metrics_fd = -1;
	}
	*out = s;
	return GV_OK;
fail:
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	if (s->fd >= 0)
		close(s->fd);
	if (s->metrics_fd >= 0)
		close(s->metrics_fd);
	tls_release_all();
	free(s->tls_dir);
	free(s);
	return rc;
}

unsigned admission_server_port(const struct admission_server *s)
{
	return s ? s->port : 0;
}

unsigned admission_server_metrics_port(const struct admission_server *s)
{
	return s ? s->metrics_port : 0;
}

bool admission_server_reload_tls(struct admission_server *s)
{
	char *crt_path = gv_xasprintf("%s/tls.crt", s->tls_dir);
	char *key_path = gv_xasprintf("%s/tls.key", s->tls_dir);
	struct file_stamp crt, key;
	struct tls_pair *pair = NULL;
	struct gv_err err = {0};
	bool loaded = false;

	if (!stamp_get(crt_path, &crt) || !stamp_get(key_path, &key))
		goto out; /* in the middle of a rotation, or gone: keep serving the old pair */
	if (stamp_eq(&crt, &s->crt_stamp) && stamp_eq(&key, &s->key_stamp))
		goto out;
	s->crt_stamp = crt;
	s->key_stamp = key;
	if (pair_load(s->tls_dir, &pair, &err)) {
		gv_warn("tls: new key pair in %s not loaded (keeping the old one): %s", s->tls_dir,
			err.msg);
		goto out;
	}
	pair_install(pair);
	gv_info("tls: key pair reloaded from %s", s->tls_dir);
	loaded = true;
out:
	free(crt_path);
	free(key_path);
	return loaded;
}

void admission_server_stop(struct admission_server *s, int grace_ms)
{
	struct timespec t0;

	if (!s)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (s->daemon) {
		MHD_socket fd = MHD_quiesce_daemon(s->daemon);
		if (fd != MHD_INVALID_SOCKET)
			close(fd);
		while (atomic_load(&s->in_flight) > 0 && elapsed(&t0) * 1000 < grace_ms) {
			struct timespec ts = {0, 5 * 1000000L};
			nanosleep(&ts, NULL);
		}
		MHD_stop_daemon(s->daemon);
	}
	if (s->metrics_daemon)
		MHD_stop_daemon(s->metrics_daemon);
	/* MHD closes a listening socket it was given unless it was quiesced. */
	tls_release_all();
	free(s->tls_dir);
	free(s);
}
