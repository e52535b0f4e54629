/*
 * httpd.h - a tiny in-process HTTP/1.1 (optionally TLS) server for unit
 * tests of the Kubernetes client: one thread per connection, every response
 * closes its connection, a test-supplied handler answers each request.
 * Header-only (static functions) so that several test programs can use it.
 */
#ifndef GV_KUBE_TESTS_HTTPD_H
#define GV_KUBE_TESTS_HTTPD_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/ssl.h>

#define HTTPD_MAX_CONN 256
#define HTTPD_MAX_LOG  256

struct httpd;

/* One parsed request. Strings are NUL-terminated copies owned by the server. */
struct httpd_req {
	char method[16];
	char path[2048];
	char auth[512];		/* Authorization header value, "" when none */
	char content_type[128]; /* Content-Type header value */
	char accept[512];	/* Accept header value */
	char *body;		/* NUL-terminated */
	size_t body_len;
	int n; /* sequence number of the request, from 0 */
};

struct httpd_conn {
	struct httpd *srv;
	int fd;
	SSL *ssl;
};

typedef void (*httpd_handler_fn)(struct httpd_conn *c, const struct httpd_req *r, void *ud);

struct httpd {
	int lfd;
	int port;
	SSL_CTX *tls; /* borrowed, NULL = plain HTTP */
	httpd_handler_fn handler;
	void *ud;
	atomic_bool stop;
	pthread_t acceptor;
	pthread_mutex_t mu;
	pthread_t conns[HTTPD_MAX_CONN];
	int nconns;
	/* request log: "METHOD PATH" */
	char *log[HTTPD_MAX_LOG];
	int nlog;
	atomic_int nreq;
};

static __attribute__((unused)) int httpd_write(struct httpd_conn *c, const void *p, size_t n)
{
	const char *s = p;

	while (n) {
		ssize_t w;

		if (c->ssl) {
			int r = SSL_write(c->ssl, s, (int)n);

			w = r > 0 ? r : -1;
		} else {
			w = send(c->fd, s, n, MSG_NOSIGNAL);
		}
		if (w < 0 && errno == EINTR && !c->ssl)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static __attribute__((unused)) ssize_t httpd_read(struct httpd_conn *c, void *p, size_t n)
{
	if (c->ssl) {
		int r = SSL_read(c->ssl, p, (int)n);

		return r > 0 ? r : (r == 0 ? 0 : -1);
	}
	return recv(c->fd, p, n, 0);
}

/* Sends a complete response with a body (Connection: close). */
static __attribute__((unused)) void httpd_respond(struct httpd_conn *c, int code,
						  const char *extra_headers, const char *body)
{
	char head[1024];
	size_t len = body ? strlen(body) : 0;

	snprintf(head, sizeof(head),
		 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n%s\r\n",
		 code, len, extra_headers ? extra_headers : "");
	httpd_write(c, head, strlen(head));
	if (len)
		httpd_write(c, body, len);
}

/* Starts a streamed 200 response (body until the connection closes). */
static __attribute__((unused)) void httpd_stream_start(struct httpd_conn *c)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				   "Connection: close\r\n\r\n";

	httpd_write(c, head, sizeof(head) - 1);
}

/* Waits until the peer closes or the server stops (max ms). True when the peer closed. */
static __attribute__((unused)) bool httpd_wait_close(struct httpd_conn *c, long ms)
{
	char tmp[256];

	while (ms > 0 && !atomic_load(&c->srv->stop)) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		int r = poll(&pfd, 1, 50);

		ms -= 50;
		if (r > 0) {
			ssize_t n = httpd_read(c, tmp, sizeof(tmp));

			if (n <= 0)
				return true;
		}
	}
	return false;
}

static __attribute__((unused)) char *httpd_strcasestr(const char *h, const char *n)
{
	size_t ln = strlen(n);

	for (; *h; h++)
		if (!strncasecmp(h, n, ln))
			return (char *)h;
	return NULL;
}

static __attribute__((unused)) void httpd_header(const char *head, const char *name, char *out,
						 size_t n)
{
	char *p = httpd_strcasestr(head, name), *e;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(name);
	while (*p == ' ')
		p++;
	e = strstr(p, "\r\n");
	snprintf(out, n, "%.*s", e ? (int)(e - p) : (int)strlen(p), p);
}

struct httpd_job {
	struct httpd *srv;
	int fd;
};

static __attribute__((unused)) void *httpd_conn_main(void *arg)
{
	struct httpd_job *job = arg;
	struct httpd_conn c = {.srv = job->srv, .fd = job->fd};
	struct httpd_req *r = calloc(1, sizeof(*r));
	char *buf = malloc(1 << 20), *end = NULL, cl[32];
	size_t len = 0, need;

	free(job);
	if (c.srv->tls) {
		c.ssl = SSL_new(c.srv->tls);
		SSL_set_fd(c.ssl, c.fd);
		if (SSL_accept(c.ssl) != 1)
			goto out;
	}
	while (len < (1 << 20) - 1) {
		ssize_t n = httpd_read(&c, buf + len, (1 << 20) - 1 - len);

		if (n <= 0)
			goto out;
		len += (size_t)n;
		buf[len] = '\0';
		if (!c.srv->tls && (unsigned char)buf[0] == 0x16)
			goto out; /* a TLS ClientHello on plain HTTP: hang up, as servers do */
		if ((end = strstr(buf, "\r\n\r\n")))
			break;
	}
	if (!end)
		goto out;
	*end = '\0';
	sscanf(buf, "%15s %2047s", r->method, r->path);
	httpd_header(buf, "\r\nAuthorization:", r->auth, sizeof(r->auth));
	httpd_header(buf, "\r\nContent-Type:", r->content_type, sizeof(r->content_type));
	httpd_header(buf, "\r\nAccept:", r->accept, sizeof(r->accept));
	httpd_header(buf, "\r\nContent-Length:", cl, sizeof(cl));
	need = (size_t)strtoul(cl, NULL, 10);
	{
		size_t have = len - (size_t)(end + 4 - buf);

		r->body = calloc(1, need + 1);
		memcpy(r->body, end + 4, have < need ? have : need);
		while (have < need) {
			ssize_t n = httpd_read(&c, r->body + have, need - have);

			if (n <= 0)
				break;
			have += (size_t)n;
		}
		r->body_len = have < need ? have : need;
	}
	r->n = atomic_fetch_add(&c.srv->nreq, 1);
	pthread_mutex_lock(&c.srv->mu);
	if (c.srv->nlog < HTTPD_MAX_LOG) {
		size_t sz = strlen(r->method) + strlen(r->path) + 2;

		c.srv->log[c.srv->nlog] = malloc(sz);
		snprintf(c.srv->log[c.srv->nlog], sz, "%s %s", r->method, r->path);
		c.srv->nlog++;
	}
	pthread_mutex_unlock(&c.srv->mu);
	c.srv->handler(&c, r, c.srv->ud);
out:
	if (c.ssl) {
		SSL_shutdown(c.ssl);
		SSL_free(c.ssl);
	}
	close(c.fd);
	free(r->body);
	free(r);
	free(buf);
	return NULL;
}

static __attribute__((unused)) void *httpd_accept_main(void *arg)
{
	struct httpd *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd pfd = {.fd = s->lfd, .events = POLLIN};
		struct httpd_job *job;
		int fd;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		job = malloc(sizeof(*job));
		job->srv = s;
		job->fd = fd;
		pthread_mutex_lock(&s->mu);
		if (s->nconns < HTTPD_MAX_CONN &&
		    !pthread_create(&s->conns[s->nconns], NULL, httpd_conn_main, job)) {
			s->nconns++;
		} else {
			close(fd);
			free(job);
		}
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

/* Starts a server on 127.0.0.1 (a free port); tls may be NULL. */
static __attribute__((unused)) struct httpd *httpd_start(httpd_handler_fn handler, void *ud,
							 SSL_CTX *tls)
{
	struct httpd *s = calloc(1, sizeof(*s));
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	int one = 1;

	s->handler = handler;
	s->ud = ud;
	s->tls = tls;
	pthread_mutex_init(&s->mu, NULL);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(s->lfd, 64)) {
		perror("httpd");
		abort();
	}
	getsockname(s->lfd, (struct sockaddr *)&a, &alen);
	s->port = ntohs(a.sin_port);
	pthread_create(&s->acceptor, NULL, httpd_accept_main, s);
	return s;
}

/* Copies the i-th logged request line ("GET /path"), "" when none. */
static __attribute__((unused)) void httpd_logged(struct httpd *s, int i, char *out, size_t n)
{
	pthread_mutex_lock(&s->mu);
	snprintf(out, n, "%s", i < s->nlog ? s->log[i] : "");
	pthread_mutex_unlock(&s->mu);
}

static __attribute__((unused)) int httpd_count(struct httpd *s)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = s->nlog;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static __attribute__((unused)) void httpd_stop(struct httpd *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->acceptor, NULL);
	for (int i = 0; i < s->nconns; i++)
		pthread_join(s->conns[i], NULL);
	close(s->lfd);
	for (int i = 0; i < s->nlog; i++)
		free(s->log[i]);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

#endif
