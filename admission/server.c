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
 *
 * Slow clients: libmicrohttpd's own timeout only measures inactivity, so a
 * client sending a byte a second would keep a connection forever. Every
 * connection is therefore listed (struct conn, its socket context) with a
 * deadline for the phase it is in, and a watchdog thread shuts down the
 * socket of a connection past its deadline; libmicrohttpd then sees the
 * connection end and closes it as usual.
 *
 * Accepting: libmicrohttpd's workers each watch the listening socket and
 * take up to ten connections a wake-up, so a burst of new connections (a
 * client opening its pool) often lands nearly all on one worker (63 of 66
 * measured), which then serves them on one core while the others idle.
 * The webhook's daemon is therefore quiesced as soon as it starts and an
 * acceptor thread of ours takes the connections and hands each to
 * MHD_add_connection(), which spreads them over the workers by descriptor
 * number; limits stay libmicrohttpd's (per worker, per client address),
 * and a connection over the total limit is closed by the acceptor.
 */
#include "admission/admission_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "common/log.h"
#include "common/banned.h"

/*
 * TLS 1.3 and 1.2 only. In TLS 1.2: ECDHE key exchange and AEAD ciphers
 * (AES-GCM, ChaCha20-Poly1305) only, so no CBC, no static RSA key exchange,
 * no finite-field DHE; no SHA-1 signatures. ECDHE-RSA stays for RSA key
 * pairs provided from outside (gavel's own certificates are ECDSA P-256).
 */
#define TLS_PRIORITIES                                                                             \
	"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+CHACHA20-POLY1305:"  \
	"+AES-128-GCM:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-GROUP-ALL:+GROUP-X25519:"    \
	"+GROUP-SECP256R1:+GROUP-SECP384R1:-SIGN-RSA-SHA1:-SIGN-ECDSA-SHA1"
#define MAX_CERTS    16		 /* certificates in tls.crt (leaf + chain) */
#define MAX_DISCARD  (16u << 20) /* bytes of an oversize body read before hanging up */
#define RETIRED_KEEP 600	 /* seconds a replaced key pair stays valid for handshakes */
#define TEXT_TYPE    "text/plain; charset=utf-8"
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Connection rules of the webhook port (the config's 0 values). */
#define CONN_LIMIT 1024u
/* Half the slots per client address: the API server may need many, an intruder gets half. */
#define PER_IP_LIMIT	512u
#define IDLE_TIMEOUT	120u /* longer than the API server's 90 s, so that the client closes first */
#define REQUEST_TIMEOUT 10u
/* The plain HTTP port (/metrics, /healthz, /readyz): Prometheus and the kubelet. */
#define METRICS_CONN_LIMIT   64u
#define METRICS_PER_IP_LIMIT 16u
#define METRICS_IDLE_TIMEOUT 30u
#define WATCH_EVERY_MS	     250   /* the watchdog's period */
#define WARN_EVERY_MS	     10000 /* at most one libmicrohttpd warning per port this often */

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

enum route {
	ROUTE_NONE,
	ROUTE_VALIDATE,
	ROUTE_VALIDATE_FAIL,   /* /validate/fail: policies with failurePolicy Fail only */
	ROUTE_VALIDATE_IGNORE, /* /validate/ignore: failurePolicy Ignore only */
	ROUTE_VALIDATE_POLICY,
	ROUTE_HEALTHZ,
	ROUTE_READYZ
};

/* One listening port and the rules of its connections. */
struct listener {
	struct admission_server *s; /* the server holding this listener */
	const char *name;	    /* "webhook" or "metrics", in logs and metrics */
	unsigned conn_limit, per_ip_limit;
	unsigned request_timeout, idle_timeout; /* seconds */
	atomic_llong warned;			/* monotonic ms of the last warning logged */
	atomic_uint unwarned;			/* warnings logged at debug level since */
	atomic_uint open;			/* connections libmicrohttpd holds */
};

/*
 * Where a connection is. REQUEST: from accept (TLS handshake included), or
 * from the first byte after an idle spell, to the end of the body. HANDLING:
 * the handler runs (no deadline: the engine's bounds apply). REPLYING: the
 * answer is being sent. IDLE: kept alive between requests.
 */
enum conn_phase { CONN_REQUEST, CONN_HANDLING, CONN_REPLYING, CONN_IDLE };

/*
 * One connection, from accept to close (libmicrohttpd's socket context).
 * Listed in the server's `conns`; every field but l, fd and peer is
 * guarded by conns_mu.
 */
struct conn {
	struct listener *l; /* borrowed */
	int fd;
	char peer[INET6_ADDRSTRLEN];
	bool unauthenticated; /* client certificates required but not asked for: refuse */
	enum conn_phase phase;
	int64_t since;	  /* monotonic ms when the phase began */
	int64_t deadline; /* monotonic ms; 0 = none */
	bool dropped;	  /* shut down by the watchdog */
	struct conn *prev, *next;
};

struct admission_server {
	struct admission_handler *handler; /* borrowed */
	struct metrics_registry *metrics;  /* borrowed */
	char *tls_dir;
	char *client_ca; /* PEM of the client CA file; NULL = no client authentication */
	struct file_stamp crt_stamp, key_stamp; /* of the pair loaded (or last tried) */
	struct MHD_Daemon *daemon, *metrics_daemon;
	int fd, metrics_fd; /* listening sockets (owned until handed back by quiesce) */
	unsigned port, metrics_port;
	struct listener webhook, plain;
	atomic_int in_flight;
	struct metrics_family *dropped; /* gavel_http_connections_dropped_total */

	pthread_mutex_t conns_mu;
	pthread_cond_t conns_cv; /* wakes the watchdog to stop */
	struct conn *conns;	 /* every open connection of both ports */
	bool stopping;
	bool watchdog_started;
	pthread_t watchdog;

	/* the webhook's acceptor: s->fd is ours again once the daemon is quiesced */
	pthread_t acceptor;
	bool acceptor_started;
	int wake_fd; /* eventfd: stops the acceptor */
};

/* One request's state (*con_cls). */
struct request {
	enum route route;
	struct gv_buf body;
	size_t received;
	bool too_big;
	struct timespec start;
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void count_drop(struct listener *l, const char *reason)
{
	metrics_inc(l->s->dropped, (const char *const[]){l->name, reason});
}

/*
 * libmicrohttpd's messages. They name no bodies, headers or keys (at most a
 * URL); control characters are blanked all the same. Trouble of the server
 * itself (memory, descriptors, threads, polling) is a warning, at most one
 * per port every WARN_EVERY_MS; what one client did wrong is debug.
 */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	static const char *const trouble[] = {"reached connection limit",
					      "resource limit",
					      "Error allocating",
					      "Error accepting",
					      "Error during",
					      "poll failed",
					      "select failed",
					      "epoll",
					      "Failed to create",
					      "Failed to initiali",
					      "Failed to signal",
					      "Failed to start",
					      "Failed to add",
					      "MHD failed",
					      "GnuTLS failed",
					      "priorities",
					      "trust certificate",
					      "clock"};
	struct listener *l = cls;
	struct gv_buf b = {0};
	bool warn = false, limit;
	const char *name = l ? l->name : "http";

	gv_buf_vaddf(&b, fmt, ap);
	if (!b.data)
		return;
	if (b.len > 512)
		b.len = 512;
	while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
		b.len--;
	for (size_t i = 0; i < b.len; i++)
		if ((unsigned char)b.data[i] < 0x20 || b.data[i] == 0x7f)
			b.data[i] = ' ';
	b.data[b.len] = '\0';
	for (size_t i = 0; i < GV_ARRAY_LEN(trouble) && !warn; i++)
		warn = strstr(b.data, trouble[i]) != NULL;
	limit = strstr(b.data, "reached connection limit") != NULL;
	if (l && limit)
		count_drop(l, "connection_limit");
	if (warn && l) {
		int64_t now = now_ms();
		long long last = atomic_load(&l->warned);
		if (now - last >= WARN_EVERY_MS &&
		    atomic_compare_exchange_strong(&l->warned, &last, (long long)now)) {
			unsigned quiet = atomic_exchange(&l->unwarned, 0);
			char more[160] = "";
			if (limit)
				snprintf(more, sizeof(more),
					 " (limits: %u connections, %u per client address)",
					 l->conn_limit, l->per_ip_limit);
			if (quiet)
				snprintf(
				    more + strlen(more), sizeof(more) - strlen(more),
				    " (%u more messages since the last warning, at debug level)",
				    quiet);
			gv_warn("http: %s: %s%s", name, b.data, more);
		} else {
			atomic_fetch_add(&l->unwarned, 1);
			gv_debug("http: %s: %s", name, b.data);
		}
	} else {
		gv_log(warn ? GV_LOG_WARN : GV_LOG_DEBUG, "http: %s: %s", name, b.data);
	}
	gv_buf_release(&b);
}

/* ---- connections and their deadlines ---- */

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Moves k to phase; the deadline is timeout seconds away (0 = none). */
static void conn_enter(struct conn *k, enum conn_phase phase, unsigned timeout)
{
	struct admission_server *s;

	if (!k)
		return;
	s = k->l->s;
	pthread_mutex_lock(&s->conns_mu);
	k->phase = phase;
	k->since = now_ms();
	k->deadline = timeout ? k->since + (int64_t)timeout * 1000 : 0;
	pthread_mutex_unlock(&s->conns_mu);
}

/* The headers of a request are in: a new request, unless its first bytes were seen already. */
static void conn_request(struct conn *k)
{
	struct admission_server *s;

	if (!k)
		return;
	s = k->l->s;
	pthread_mutex_lock(&s->conns_mu);
	if (k->phase != CONN_REQUEST) {
		k->phase = CONN_REQUEST;
		k->since = now_ms();
		k->deadline = k->since + (int64_t)k->l->request_timeout * 1000;
	}
	pthread_mutex_unlock(&s->conns_mu);
}

static void peer_name(const struct sockaddr *sa, char *out, size_t n)
{
	out[0] = '\0';
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)n);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
			  (socklen_t)n);
	if (!out[0])
		snprintf(out, n, "?");
}

/*
 * Asks this connection's TLS session for a client certificate and has
 * GnuTLS verify it in the handshake (against the trust list given as
 * MHD_OPTION_HTTPS_MEM_TRUST, for TLS client use): no certificate, or one
 * that does not verify, and the handshake fails.
 */
static bool require_client_cert(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
	/* Static: GnuTLS keeps the pointer for the handshake. */
	static gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
						.data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};

	if (!session)
		return false;
	gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
	gnutls_session_set_verify_cert2(session, &purpose, 1, 0);
	return true;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct listener *l = cls;
	struct admission_server *s = l->s;
	struct conn *k = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!k)
			return;
		atomic_fetch_sub(&l->open, 1);
		/* Unlisted before libmicrohttpd closes the descriptor: the watchdog never
		 * shuts down a descriptor number that was reused. */
		pthread_mutex_lock(&s->conns_mu);
		if (k->prev)
			k->prev->next = k->next;
		else
			s->conns = k->next;
		if (k->next)
			k->next->prev = k->prev;
		pthread_mutex_unlock(&s->conns_mu);
		free(k);
		*socket_context = NULL;
		return;
	}
	atomic_fetch_add(&l->open, 1);
	k = gv_xcalloc(1, sizeof(*k));
	k->l = l;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	k->fd = ci ? ci->connect_fd : -1;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	peer_name(ci ? ci->client_addr : NULL, k->peer, sizeof(k->peer));
	if (l == &s->webhook && s->client_ca && !require_client_cert(c))
		k->unauthenticated = true;
	/* Until the first answer, libmicrohttpd's inactivity timeout is the request's. */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, l->request_timeout);
	k->phase = CONN_REQUEST;
	k->since = now_ms();
	k->deadline = k->since + (int64_t)l->request_timeout * 1000;
	pthread_mutex_lock(&s->conns_mu);
	k->next = s->conns;
	if (s->conns)
		s->conns->prev = k;
	s->conns = k;
	pthread_mutex_unlock(&s->conns_mu);
	*socket_context = k;
}

/*
 * Whether bytes arrived on an idle connection since it went idle idle_ms
 * ago (the first bytes of its next request, maybe trickling in). TCP only.
 */
static bool data_since(int fd, int64_t idle_ms)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return false;
	/* tcpi_last_data_recv: ms since data last came; the margin covers clock ticks. */
	return (int64_t)ti.tcpi_last_data_recv + 100 < idle_ms;
}

static const char *const drop_reason[] = {
    [CONN_REQUEST] = "request_timeout",
    [CONN_HANDLING] = "request_timeout",
    [CONN_REPLYING] = "reply_timeout",
    [CONN_IDLE] = "idle_timeout",
};

/* Shuts down the sockets of connections past their deadline, every WATCH_EVERY_MS. */
static void *watchdog_main(void *arg)
{
	struct admission_server *s = arg;

	pthread_mutex_lock(&s->conns_mu);
	while (!s->stopping) {
		int64_t now = now_ms();
		struct timespec until;

		for (struct conn *k = s->conns; k; k = k->next) {
			if (k->dropped)
				continue;
			if (k->phase == CONN_IDLE && data_since(k->fd, now - k->since)) {
				k->phase = CONN_REQUEST;
				k->since = now;
				k->deadline = now + (int64_t)k->l->request_timeout * 1000;
			}
			if (!k->deadline || now < k->deadline)
				continue;
			k->dropped = true;
			shutdown(k->fd, SHUT_RDWR);
			count_drop(k->l, drop_reason[k->phase]);
			gv_debug("http: %s: connection from %s closed: %s", k->l->name, k->peer,
				 k->phase == CONN_IDLE	     ? "idle for too long"
				 : k->phase == CONN_REPLYING ? "answer not taken in time"
							     : "request not received in time");
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += WATCH_EVERY_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->conns_cv, &s->conns_mu, &until);
	}
	pthread_mutex_unlock(&s->conns_mu);
	return NULL;
}

/* ---- requests ---- */

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *ctype,
			       char *body, size_t len, const char *allow)
{
	struct MHD_Response *resp;
	struct conn *k = conn_of(c);
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
	if (k)
		conn_enter(k, CONN_REPLYING, k->l->request_timeout);
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
	if (!strcmp(url, "/validate/fail"))
		return ROUTE_VALIDATE_FAIL;
	if (!strcmp(url, "/validate/ignore"))
		return ROUTE_VALIDATE_IGNORE;
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

/* GET /healthz and /readyz, on both ports. */
static enum MHD_Result health(struct admission_server *s, struct MHD_Connection *c,
			      enum route route, const char *method)
{
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
				    "GET, HEAD");
	if (route == ROUTE_READYZ && !admission_handler_ready(s->handler))
		return respond_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				    "not ready: no policy snapshot loaded yet", NULL);
	return respond_text(c, MHD_HTTP_OK, "ok", NULL);
}

/* The first call of a request: route, method and headers. */
static enum MHD_Result request_begin(struct admission_server *s, struct MHD_Connection *c,
				     const char *url, const char *method, void **con_cls)
{
	enum route route = route_of(url);
	const char *cl;
	struct request *r;

	switch (route) {
	case ROUTE_NONE:
		return respond_text(c, MHD_HTTP_NOT_FOUND, "not found", NULL);
	case ROUTE_HEALTHZ:
	case ROUTE_READYZ:
		return health(s, c, route, method);
	case ROUTE_VALIDATE:
	case ROUTE_VALIDATE_FAIL:
	case ROUTE_VALIDATE_IGNORE:
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
	struct listener *l = cls;
	struct admission_server *s = l->s;
	struct request *r = *con_cls;
	struct admission_reply reply;
	enum MHD_Result res;

	(void)version;
	if (!r) {
		struct conn *k = conn_of(c);
		if (s->client_ca && (!k || k->unauthenticated))
			return MHD_NO; /* fail closed: never served without the client check */
		conn_request(k);
		return request_begin(s, c, url, method, con_cls);
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		r->received += n;
		if (elapsed(&r->start) > l->request_timeout) {
			gv_debug("http: request body not received within %us: closing",
				 l->request_timeout);
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
	conn_enter(conn_of(c), CONN_HANDLING, 0);
	if (r->route == ROUTE_VALIDATE)
		admission_handle(s->handler, r->body.data ? r->body.data : "", r->body.len, &reply);
	else if (r->route == ROUTE_VALIDATE_FAIL || r->route == ROUTE_VALIDATE_IGNORE)
		admission_handle_only(s->handler, r->body.data ? r->body.data : "", r->body.len,
				      r->route == ROUTE_VALIDATE_FAIL ? ENGINE_FAILURE_FAIL
								      : ENGINE_FAILURE_IGNORE,
				      &reply);
	else
		admission_handle_policy(s->handler, r->body.data ? r->body.data : "", r->body.len,
					&reply);
	gv_buf_release(&r->body); /* the body is not needed while the answer is sent */
	res = respond(c, (unsigned)reply.http, reply.content_type, reply.body, reply.len, NULL);
	reply.body = NULL;
	return res;
}

/* A request is over (answered, or the connection failed): the connection goes idle. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct listener *l = cls;
	struct request *r = *con_cls;

	/* The watchdog's idle deadline is a backstop: libmicrohttpd closes idle connections. */
	conn_enter(conn_of(c), CONN_IDLE, l->idle_timeout + 5);
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, l->idle_timeout);
	if (!r)
		return;
	gv_buf_release(&r->body);
	free(r);
	*con_cls = NULL;
	atomic_fetch_sub(&l->s->in_flight, 1);
}

/* The plain HTTP port: GET /metrics, and /healthz and /readyz as on the webhook port. */
static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct listener *l = cls;
	struct admission_server *s = l->s;
	enum route route = route_of(url);
	struct gv_buf b = {0};
	size_t len;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	conn_request(conn_of(c));
	if (route == ROUTE_HEALTHZ || route == ROUTE_READYZ)
		return health(s, c, route, method);
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

/*
 * The CPUs this process may run on (its affinity: taskset, a cpuset), else
 * the CPUs online: one worker per CPU, as more would only queue behind each
 * other on the same cores.
 */
static unsigned cpu_count(void)
{
	cpu_set_t set;
	long n;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 && n < 256 ? (unsigned)n : 2;
}

static void listener_init(struct listener *l, struct admission_server *s, const char *name,
			  unsigned conn_limit, unsigned per_ip_limit, unsigned request_timeout,
			  unsigned idle_timeout)
{
	l->s = s;
	l->name = name;
	l->conn_limit = conn_limit;
	l->per_ip_limit = per_ip_limit;
	l->request_timeout = request_timeout;
	l->idle_timeout = idle_timeout;
	atomic_init(&l->warned, LLONG_MIN / 2);
	atomic_init(&l->unwarned, 0);
	atomic_init(&l->open, 0);
}

/* Reads the client CA file: PEM certificates, at least one. *out: the PEM (owned). */
static enum gv_code client_ca_load(const char *path, char **out, struct gv_err *err)
{
	gnutls_certificate_credentials_t check = NULL;
	gnutls_datum_t d;
	char *pem = NULL;
	size_t len = 0;
	enum gv_code rc;
	int n;

	*out = NULL;
	if ((rc = gv_read_file(path, &pem, &len, err))) {
		gv_err_prefix(err, "client CA file: ");
		return rc;
	}
	d.data = (unsigned char *)pem;
	d.size = (unsigned)len;
	gnutls_certificate_allocate_credentials(&check);
	n = gnutls_certificate_set_x509_trust_mem(check, &d, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(check);
	if (n <= 0) {
		free(pem);
		return gv_err_set(err, GV_EINVAL, "client CA file %s: %s", path,
				  n < 0 ? gnutls_strerror(n) : "no PEM certificate in it");
	}
	*out = pem;
	return GV_OK;
}

/* A message of ours through libmicrohttpd's logger (counted and rate-limited the same way). */
static void listener_log(struct listener *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mhd_log(l, fmt, ap);
	va_end(ap);
}

/*
 * The acceptor (see the top of the file): waits for the listening socket
 * or wake_fd, takes every pending connection and hands it to the daemon,
 * which closes it when no worker has room or its client address is at its
 * limit (and says so through mhd_log).
 */
static void *acceptor_main(void *arg)
{
	struct admission_server *s = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = s->fd, .events = POLLIN},
				      {.fd = s->wake_fd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			listener_log(&s->webhook, "Error accepting connection: poll: %s\n",
				     strerror(errno));
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
			continue;
		}
		if (p[1].revents)
			return NULL;
		for (;;) {
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);
			int fd = accept4(s->fd, (struct sockaddr *)&ss, &sl,
					 SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd < 0) {
				if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
				    errno == ENOMEM) {
					/* as libmicrohttpd does: let the server free some first */
					listener_log(&s->webhook,
						     "Error accepting connection: %s\n",
						     strerror(errno));
					struct timespec ts = {0, 10 * 1000000L};
					nanosleep(&ts, NULL);
				}
				break; /* EAGAIN, or a connection gone before it was taken */
			}
			if (atomic_load(&s->webhook.open) >= s->webhook.conn_limit) {
				/* libmicrohttpd would close it without a word */
				close(fd);
				listener_log(&s->webhook, "Server reached connection limit. "
							  "Closing inbound connection.\n");
				continue;
			}
			/* the socket is closed by libmicrohttpd either way */
			MHD_add_connection(s->daemon, fd, (struct sockaddr *)&ss, sl);
		}
	}
}

static enum gv_code acceptor_start(struct admission_server *s, struct gv_err *err)
{
	if (MHD_quiesce_daemon(s->daemon) != s->fd) {
		s->fd = -1; /* still the daemon's: MHD_stop_daemon closes it */
		return gv_err_set(err, GV_EIO,
				  "the HTTPS server's listening socket was not handed back");
	}
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0)
		return gv_err_set(err, GV_EIO, "eventfd: %s", strerror(errno));
	if (pthread_create(&s->acceptor, NULL, acceptor_main, s)) {
		close(s->wake_fd);
		s->wake_fd = -1;
		return gv_err_set(err, GV_EIO, "the connection acceptor did not start");
	}
	s->acceptor_started = true;
	return GV_OK;
}

/* Stops taking connections: the acceptor joined (the caller closes the listening socket). */
static void acceptor_stop(struct admission_server *s)
{
	if (s->acceptor_started) {
		uint64_t one = 1;
		if (write(s->wake_fd, &one, sizeof(one)) < 0) {
			/* an eventfd write only fails past 2^64 - 2: not here */
		}
		pthread_join(s->acceptor, NULL);
		s->acceptor_started = false;
	}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	s->wake_fd = -1;
}

static void watchdog_stop(struct admission_server *s)
{
	if (!s->watchdog_started)
		return;
	pthread_mutex_lock(&s->conns_mu);
	s->stopping = true;
	pthread_cond_signal(&s->conns_cv);
	pthread_mutex_unlock(&s->conns_mu);
	pthread_join(s->watchdog, NULL);
	s->watchdog_started = false;
}

/* Frees s once both daemons are stopped (their connections are all closed). */
static void server_free(struct admission_server *s)
{
	watchdog_stop(s);
	tls_release_all();
	pthread_cond_destroy(&s->conns_cv);
	pthread_mutex_destroy(&s->conns_mu);
	free(s->client_ca);
	free(s->tls_dir);
	free(s);
}

enum gv_code admission_server_start(const struct admission_server_config *cfg,
				    struct admission_server **out, struct gv_err *err)
{
	static const char *const drop_labels[] = {"listener", "reason", NULL};
	struct admission_server *s = gv_xcalloc(1, sizeof(*s));
	struct tls_pair *pair = NULL;
	unsigned threads = cfg->threads ? cfg->threads : cpu_count();
	struct MHD_OptionItem trust[2] = {{MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL}};
	pthread_condattr_t ca;
	enum gv_code rc;
	char *crt_path, *key_path;

	*out = NULL;
	s->fd = s->metrics_fd = s->wake_fd = -1;
	s->handler = cfg->handler;
	s->metrics = cfg->metrics;
	s->tls_dir = gv_xstrdup(cfg->tls_dir ? cfg->tls_dir : ".");
	atomic_init(&s->in_flight, 0);
	pthread_mutex_init(&s->conns_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->conns_cv, &ca);
	pthread_condattr_destroy(&ca);
	listener_init(&s->webhook, s, "webhook",
		      cfg->connection_limit ? cfg->connection_limit : CONN_LIMIT,
		      cfg->max_per_ip ? cfg->max_per_ip : PER_IP_LIMIT,
		      cfg->request_timeout ? cfg->request_timeout : REQUEST_TIMEOUT,
		      cfg->idle_timeout ? cfg->idle_timeout : IDLE_TIMEOUT);
	listener_init(&s->plain, s, "metrics", METRICS_CONN_LIMIT, METRICS_PER_IP_LIMIT,
		      REQUEST_TIMEOUT, METRICS_IDLE_TIMEOUT);
	if (s->metrics)
		s->dropped = metrics_counter_new(
		    s->metrics, "gavel_http_connections_dropped_total",
		    "Connections closed by gavel before they were served: over a connection "
		    "limit, or past the deadline of a request, an answer or an idle spell.",
		    drop_labels);

	pthread_mutex_lock(&tls.mu);
	if (tls.in_use) {
		pthread_mutex_unlock(&tls.mu);
		pthread_cond_destroy(&s->conns_cv);
		pthread_mutex_destroy(&s->conns_mu);
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
	if (cfg->client_ca_file && *cfg->client_ca_file) {
		if ((rc = client_ca_load(cfg->client_ca_file, &s->client_ca, err)))
			goto fail;
		trust[0].option = MHD_OPTION_HTTPS_MEM_TRUST;
		trust[0].ptr_value = s->client_ca;
	}

	if ((rc = listen_on(cfg->listen ? cfg->listen : ":9443", &s->fd, &s->port, err)))
		goto fail;
	if (cfg->metrics_listen &&
	    (rc = listen_on(cfg->metrics_listen, &s->metrics_fd, &s->metrics_port, err)))
		goto fail;
	if (pthread_create(&s->watchdog, NULL, watchdog_main, s)) {
		rc = gv_err_set(err, GV_EIO, "the connection watchdog did not start");
		goto fail;
	}
	s->watchdog_started = true;

	/*
	 * libmicrohttpd wants its logger as the first option. Its thread pool
	 * (epoll, one worker per CPU, the handler run inline, no hand-off) was
	 * measured against a thread per connection (more CPU per review, and
	 * a backlog at 4,000 reviews/s on 2 cores) and against 1, 4 and 8
	 * workers (no difference beyond the noise). Over TLS an answer is two
	 * records (the header, then the body: two sendmsg, no MSG_MORE), and
	 * libmicrohttpd sets TCP_NODELAY right after the body, which pushes
	 * out at once whatever Nagle held back: no answer waits for a delayed
	 * ACK (strace of a served review: recv, recv, sendmsg, sendmsg,
	 * setsockopt, within the same wakeup). On shared cores the tail of
	 * the latency is the time the workers wait for a core, not the
	 * server's own time (rate_load prints both).
	 */
	s->daemon = MHD_start_daemon(
	    MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ITC |
		MHD_USE_ERROR_LOG,
	    0, NULL, NULL, on_request, &s->webhook, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
	    &s->webhook, MHD_OPTION_LISTEN_SOCKET, s->fd, MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_LIMIT, s->webhook.conn_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    s->webhook.per_ip_limit, MHD_OPTION_CONNECTION_TIMEOUT, s->webhook.idle_timeout,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s->webhook, MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, &s->webhook, MHD_OPTION_HTTPS_CERT_CALLBACK, cert_callback,
	    MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES, MHD_OPTION_ARRAY, trust, MHD_OPTION_END);
	if (!s->daemon) {
		rc = gv_err_set(err, GV_EIO, "listen %s: the HTTPS server did not start",
				cfg->listen ? cfg->listen : ":9443");
		goto fail;
	}
	if ((rc = acceptor_start(s, err)))
		goto fail; /* s->fd: the daemon's still when not handed back */
	if (s->metrics_fd >= 0) {
		s->metrics_daemon = MHD_start_daemon(
		    MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
			MHD_USE_ERROR_LOG,
		    0, NULL, NULL, on_metrics, &s->plain, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
		    &s->plain, MHD_OPTION_LISTEN_SOCKET, s->metrics_fd, MHD_OPTION_CONNECTION_LIMIT,
		    s->plain.conn_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->plain.per_ip_limit,
		    MHD_OPTION_CONNECTION_TIMEOUT, s->plain.idle_timeout,
		    MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s->plain,
		    MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s->plain, MHD_OPTION_END);
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
	acceptor_stop(s);
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	if (s->fd >= 0)
		close(s->fd);
	if (s->metrics_fd >= 0)
		close(s->metrics_fd);
	server_free(s);
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
		acceptor_stop(s); /* no new connections from here on */
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
		while (atomic_load(&s->in_flight) > 0 && elapsed(&t0) * 1000 < grace_ms) {
			struct timespec ts = {0, 5 * 1000000L};
			nanosleep(&ts, NULL);
		}
		MHD_stop_daemon(s->daemon);
	}
	if (s->metrics_daemon)
		MHD_stop_daemon(s->metrics_daemon);
	/* MHD closes a listening socket it was given unless it was quiesced. */
	server_free(s);
}
