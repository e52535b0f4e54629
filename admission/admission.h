/*
 * admission.h - the validating admission webhook: AdmissionReview bytes in,
 * AdmissionReview bytes out, and the TLS server around it.
 *
 * Pieces, from the inside out (what it shares with the background
 * reconciler, the cluster view and the audit results, is in view/view.h):
 *
 *   admission_source   where the handler takes the current view_state from
 *                      (background/snapshot.h in cluster mode, wired by
 *                      cmd/serve.c; a fixed state in standalone mode)
 *   admission_handler  the pure handler: admission_handle() and
 *                      admission_handle_policy() (no sockets, no globals)
 *   admission_server   libmicrohttpd + GnuTLS around the handler, and the
 *                      plain /metrics listener
 *
 * Behaviour: ../shared/docs/k8s-wire.md section 1 (AdmissionReview v1 and
 * v1beta1, warnings limits) and kyverno-semantics.md sections 7.3 and 8
 * (blocking, the denial message, warnings, failure policy, existing
 * violations on UPDATE, DELETE judged on oldObject, E26).
 *
 * Threads: everything here may be called from any thread; a handler is
 * shared by the server's worker threads.
 */
#ifndef GV_ADMISSION_ADMISSION_H
#define GV_ADMISSION_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/metrics.h"
#include "engine/engine.h"
#include "view/view.h"
#include "kube/events.h"

/* Largest AdmissionReview body accepted (bytes); larger ones get HTTP 413. */
#define ADMISSION_MAX_BODY (3u << 20)

/* ---- source ---- */

/*
 * Where the handler gets the current state: acquire() returns a new
 * reference (released by the handler with view_state_unref), or NULL
 * while no policy snapshot is loaded yet (the handler then answers 503 and
 * /readyz is not ready). Called once per request, from worker threads.
 */
struct admission_source {
	struct view_state *(*acquire)(void *ud);
	void *ud;
	/*
	 * Optional (NULL = none). written(): /validate-policy admitted a write
	 * of a kyverno.io policy or PolicyException that is not a dry run
	 * (object borrowed; old_object borrowed, NULL for a CREATE).
	 * acquire_fresh(): as acquire(), but the state holds the writes
	 * reported to written() first, and the labels of `namespace` (the
	 * request's; NULL or "" = none) when the source has not seen that
	 * namespace yet, waiting a bounded time for the source to see them;
	 * used for requests on other kinds than kyverno.io's and Namespace,
	 * so that a resource created right after its PolicyException, or in
	 * a namespace just created, is judged with it.
	 */
	void (*written)(void *ud, const json_t *object, const json_t *old_object);
	struct view_state *(*acquire_fresh)(void *ud, const char *namespace);
};

/* A source that always answers the same state (standalone mode, tests). */
struct admission_fixed_source {
	struct admission_source source; /* points into this struct */
	struct view_state *state;	/* owned reference; may be swapped with _set */
	void *lock;			/* owned */
};
/* Fills *f (all of it: hooks it does not offer are NULL) with a reference to state. */
void admission_fixed_source_init(struct admission_fixed_source *f, struct view_state *state);
/* Replaces the state (a reference is taken); readers see the new one from their next request. */
void admission_fixed_source_set(struct admission_fixed_source *f, struct view_state *state);
void admission_fixed_source_release(struct admission_fixed_source *f);

/* ---- the handler ---- */

struct admission_handler_config {
	const struct admission_source *source; /* borrowed, required */
	/* borrowed, may be NULL: context entries that read the cluster are then skipped */
	const struct view_context *context;
	const char *namespace; /* gavel's own namespace: allowed unjudged; NULL = none */
	/*
	 * Where the results of an allowed request that go into PolicyReports
	 * are sent (view_audit_item; ownership moves to emit, called from
	 * worker threads, must not block). NULL = not sent. cmd/serve.c wires
	 * it to the report writer's queue (background/audit_queue.h).
	 */
	void (*emit)(void *ud, struct view_audit_item *item);
	void *emit_ud;
	struct metrics_registry *metrics; /* borrowed, may be NULL (no metrics) */
	/*
	 * borrowed, may be NULL: request.roles and request.clusterRoles are
	 * then not computed (standalone mode: no cluster to read bindings
	 * from; the variables are absent and roles/clusterRoles filters see
	 * empty lists)
	 */
	const struct view_roles_source *roles;
	/* borrowed, may be NULL (no Events): admission_events_emit() of each judged request */
	struct kube_events *events;
	/*
	 * May be NULL (kinds not checked): whether the API server serves a
	 * kind as a policy writes it ("Pod", "apps/v1/Deployment", "Pod/exec",
	 * "Foo/<star>"); /validate-policy refuses a policy naming a kind it
	 * does not serve, as Kyverno does through discovery.
	 */
	bool (*kind_known)(void *ud, const char *kind);
	void *kind_known_ud;
	/*
	 * May be NULL (a subresource request is matched by its own kind): the
	 * Kind of a resource (group "" = core, version, plural) as the API
	 * server serves it, a new string, or NULL when it does not. A request
	 * for a subresource (deployments/scale, pods/eviction) is matched as
	 * its top-level resource's kind with the subresource ("Deployment/scale"),
	 * kyverno-semantics.md section 2.3.
	 */
	char *(*resource_kind)(void *ud, const char *group, const char *version,
			       const char *resource);
	void *resource_kind_ud;
};

struct admission_handler;

/*
 * Makes a handler; the metric families (kyverno_admission_requests_total,
 * kyverno_admission_review_duration_seconds, kyverno_policy_results_total)
 * are registered here, once. Borrowed pointers must outlive the handler.
 */
struct admission_handler *admission_handler_new(const struct admission_handler_config *cfg);
void admission_handler_free(struct admission_handler *h);

/* One answer. The body is owned; for HTTP 200 it is an AdmissionReview. */
struct admission_reply {
	int http;		  /* 200; 400 malformed request; 503 not ready */
	const char *content_type; /* static: "application/json" or "text/plain; charset=utf-8" */
	char *body;		  /* owned, NUL-terminated */
	size_t len;
	/* For logs: */
	bool allowed;
	bool evaluated; /* policies were evaluated (not filtered) */
};

void admission_reply_release(struct admission_reply *r);

/*
 * POST /validate: judges one AdmissionReview (body: len bytes of JSON,
 * borrowed, need not be NUL-terminated). Always fills out; never fails.
 *
 * - apiVersion admission.k8s.io/v1 or v1beta1, kind AdmissionReview; the
 *   answer echoes apiVersion and kind and carries response.uid =
 *   request.uid. Anything else malformed: HTTP 400 with a one-line reason
 *   ("malformed JSON: ... at line L column C", "request.uid is missing", ...).
 * - Allowed without evaluation: gavel's own namespace (and its Namespace
 *   object), resourceFilters, excluded users/groups, and requests with no
 *   object to judge (a DELETE without oldObject).
 * - Otherwise: engine_evaluate() in ENGINE_ADMISSION mode with object,
 *   oldObject (DELETE: judged on oldObject), operation, namespace,
 *   request.kind, subResource, userInfo, the roles and clusterRoles of the
 *   config's roles source (HTTP 503 while it cannot answer), the
 *   namespace's labels, the whole request and the hooks of cfg->context
 *   (opened for the request, closed after it); engine_decide() per rule
 *   result.
 * - Denied when some rule blocks: status {code: 403, reason: Forbidden,
 *   message} with the message of kyverno-semantics.md section 8.2:
 *   "\n\nresource <Kind>/<namespace>/<name> was blocked due to the following
 *   policies \n\n" + YAML {policy: {rule: message}} of every fail/error
 *   result of an Enforce rule (go-yaml style: keys sorted, 2-space indent,
 *   quoted only when needed). No warnings on a denial.
 * - Allowed: `warnings` for each result engine_decide() warns about
 *   (Audit fail/error with emitWarning, Enforce error under failurePolicy
 *   Ignore), as "policy <policy>.<rule>: <message>", made single-line and
 *   kept within the API server's limits (k8s-wire.md 1.6: duplicates
 *   dropped, each at most 256 characters, 4096 in all).
 * - dryRun requests are judged the same way but never queued.
 */
void admission_handle(struct admission_handler *h, const char *body, size_t len,
		      struct admission_reply *out);

/*
 * POST /validate/fail and /validate/ignore (the two webhooks of the
 * generated configuration, background/webhookconfig.h, as Kyverno's
 * validate.kyverno.svc-fail/-ignore): admission_handle() judging only the
 * policies whose spec.failurePolicy is `only` (an enum
 * engine_failure_policy; -1 = every policy, as admission_handle()).
 */
void admission_handle_only(struct admission_handler *h, const char *body, size_t len, int only,
			   struct admission_reply *out);

/*
 * POST /validate-policy: an AdmissionReview whose object is a kyverno.io
 * ClusterPolicy or Policy, or a kyverno.io/v2, v2beta1 or v2alpha1
 * PolicyException. A policy that does not compile is denied (403) with
 * engine_policy_compile()'s message (e.g. the background/userInfo message
 * of kyverno-semantics.md section 7.1; errors inside podSecurity with
 * Kyverno's field path in front); an exception that does not compile, or
 * of another kyverno.io version, and a GlobalContextEntry Kyverno refuses
 * (admission_gctx_valid), with "<field path>: <reason>" (Kyverno's path:
 * "spec.podSecurity[0].values"). An allowed policy may carry warnings
 * (unsupported rule kinds, deprecated operators). Allowed otherwise, and
 * for DELETE and other kinds. Malformed reviews: 400.
 */
void admission_handle_policy(struct admission_handler *h, const char *body, size_t len,
			     struct admission_reply *out);

/* True once the source has a state and the roles source (if any) is ready (for /readyz). */
bool admission_handler_ready(struct admission_handler *h);

/* ---- the server ---- */

struct admission_server_config {
	struct admission_handler *handler; /* borrowed, required */
	const char *listen;		   /* "ADDR:PORT", ":PORT", "[::1]:PORT"; port 0 = any */
	const char *tls_dir;		   /* holds tls.crt and tls.key (PEM) */
	const char *metrics_listen;	   /* plain HTTP /metrics; NULL = none */
	struct metrics_registry *metrics;  /* rendered by /metrics; NULL = none */
	unsigned threads;	    /* worker threads; 0 = the CPUs gavel may run on (affinity) */
	unsigned connection_limit;  /* 0 = 1024 */
	unsigned max_per_ip;	    /* connections one client address may hold; 0 = 512. The API
				       server comes from few addresses with many keep-alive
				       connections: keep it high */
	unsigned idle_timeout;	    /* seconds a connection may stay idle; 0 = 120 (longer than
				       the API server's 90 s, so the client closes first) */
	unsigned request_timeout;   /* seconds for a request: TLS handshake (new connections),
				       request line, headers and body; the same again to send
				       the answer; 0 = 10 */
	const char *client_ca_file; /* PEM CA certificates: when set, clients of the webhook
				       port (every route, /healthz included) must present a
				       certificate one of them signed (for TLS client use),
				       checked in the handshake; NULL or "" = no client
				       authentication. Read once, at start */
};

struct admission_server;

/*
 * Binds the sockets, loads the TLS key pair (and the client CA file) and
 * starts the worker threads. Errors (one line in err): GV_ENOENT/GV_EIO
 * when tls.crt, tls.key or the client CA file is missing or unreadable,
 * GV_EINVAL for bad PEM or a bad address, GV_EIO when a port cannot be
 * bound ("listen 127.0.0.1:9443: Address already in use").
 * TLS: 1.3 and 1.2 only; in TLS 1.2 only ECDHE with AES-GCM or
 * ChaCha20-Poly1305.
 * Routes: POST /validate, POST /validate-policy, GET /healthz, GET
 * /readyz; 404 for other paths, 405 for other methods, 415 unless the
 * body is application/json, 413 over ADMISSION_MAX_BODY (by
 * Content-Length and while reading). The query string is ignored. The
 * metrics port serves GET /metrics, and /healthz and /readyz as well, so
 * that probes there are answered while the webhook port is flooded.
 * Connections: a request (from accept, TLS handshake included, or from the
 * first byte after an idle spell, to the end of its body) and then its
 * answer each get request_timeout seconds; past that the connection is
 * closed. Over connection_limit or max_per_ip, new connections are closed
 * at once. Both are counted in gavel_http_connections_dropped_total
 * {listener, reason} when metrics is set. libmicrohttpd's own messages go
 * to the log: trouble of the server as warnings (rate-limited), a client's
 * errors at debug level.
 */
enum gv_code admission_server_start(const struct admission_server_config *cfg,
				    struct admission_server **out, struct gv_err *err);

/* The port actually bound (useful with port 0), 0 when unknown. */
unsigned admission_server_port(const struct admission_server *s);
unsigned admission_server_metrics_port(const struct admission_server *s);

/*
 * Reloads tls.crt/tls.key when their modification time, size or inode
 * changed since the last load (new handshakes use the new pair; a pair
 * that does not load is logged and the old one kept). Call periodically.
 * Returns true when a new pair was loaded.
 */
bool admission_server_reload_tls(struct admission_server *s);

/*
 * Graceful stop: stops accepting connections, waits up to grace_ms for the
 * requests in flight to finish, then closes everything and frees s.
 */
void admission_server_stop(struct admission_server *s, int grace_ms);

#endif
