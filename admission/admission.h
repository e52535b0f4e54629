/*
 * admission.h - the validating admission webhook: AdmissionReview bytes in,
 * AdmissionReview bytes out, and the TLS server around it.
 *
 * Pieces, from the inside out:
 *
 *   admission_config   the gavel ConfigMap's admission settings, compiled
 *                      (resourceFilters, excludeUsernames, excludeGroups)
 *   admission_state    an immutable, refcounted view of the cluster: the
 *                      policy set, namespace labels, the config
 *   admission_source   where the handler takes the current state from
 *                      (background/snapshot.h in cluster mode, a fixed
 *                      state in standalone mode)
 *   admission_roles_source  request.roles and request.clusterRoles of a
 *                      user (background/rbac.h in cluster mode)
 *   admission_queue    bounded queue of the admission results that go into
 *                      PolicyReports, drained by the report writer
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
#include "engine/engine.h"
#include "admission/metrics.h"
#include "kube/events.h"

/* Largest AdmissionReview body accepted (bytes); larger ones get HTTP 413. */
#define ADMISSION_MAX_BODY (3u << 20)

/* ---- configuration: the gavel ConfigMap ---- */

/*
 * Compiled admission settings from the `data` of gavel's ConfigMap (all
 * values strings, as in Kyverno's `kyverno` ConfigMap):
 *
 *   resourceFilters   "[Kind,Namespace,Name][...]": requests matching an
 *                     entry are allowed without evaluation. Kind is `Kind`,
 *                     `Kind/subresource`, `version/Kind`, `group/version/Kind`
 *                     or `group/version/Kind/subresource`; `*` and `?`
 *                     wildcards everywhere; a Kind without a subresource
 *                     matches only requests without one, and `*` slash `*`
 *                     matches every kind and subresource; a missing
 *                     Namespace or Name means `*`. An entry whose Kind
 *                     matches Namespace also filters the Namespace objects
 *                     named by its Namespace part (`[*,kube-system,*]`
 *                     filters the kube-system Namespace itself), as Kyverno.
 *   excludeUsernames  comma-separated usernames (wildcards) whose requests
 *   excludeGroups     (or groups) are allowed without evaluation.
 *
 * Unknown keys are ignored (the reconciler reads its own keys from the same
 * ConfigMap). Refcounted and immutable.
 */
struct admission_config;

/*
 * Compiles data (an object of strings, borrowed; NULL = no filters).
 * Malformed entries are skipped with a warning in the log. Never fails.
 * Returns a config with refcount 1.
 */
struct admission_config *admission_config_new(const json_t *data);
struct admission_config *admission_config_ref(struct admission_config *c);
void admission_config_unref(struct admission_config *c);

/*
 * Whether a request for this kind (request.kind group/version/kind, the
 * subresource or "" ), namespace ("" for cluster-scoped) and name is
 * filtered out by resourceFilters. NULL strings count as "".
 */
bool admission_config_filtered(const struct admission_config *c, const char *group,
			       const char *version, const char *kind, const char *subresource,
			       const char *namespace, const char *name);

/* Whether the user (request.userInfo, borrowed) is excluded by username or group. */
bool admission_config_user_excluded(const struct admission_config *c, const json_t *user_info);

/* ---- state and source ---- */

/*
 * What one request is judged against: a policy set, the labels of every
 * namespace, and the config. Immutable once made; refcounted (atomic), so
 * a writer builds a new state and swaps a pointer while readers keep the
 * old one for as long as their request lasts.
 */
struct admission_state;

/*
 * Makes a state. set: a reference is taken (the caller keeps its own).
 * namespaces: an object {namespace name: labels object}, a reference is
 * taken; NULL = no namespace labels known. config: a reference is taken;
 * NULL = an empty config. Returns refcount 1.
 */
struct admission_state *admission_state_new(struct engine_policyset *set, json_t *namespaces,
					    struct admission_config *config);
struct admission_state *admission_state_ref(struct admission_state *s);
void admission_state_unref(struct admission_state *s);

/* Accessors; results are borrowed from the state. */
struct engine_policyset *admission_state_policyset(const struct admission_state *s);
/* Labels object of namespace ns, or NULL when unknown. */
const json_t *admission_state_namespace_labels(const struct admission_state *s, const char *ns);
const struct admission_config *admission_state_config(const struct admission_state *s);

/*
 * Where the handler gets the current state: acquire() returns a new
 * reference (released by the handler with admission_state_unref), or NULL
 * while no policy snapshot is loaded yet (the handler then answers 503 and
 * /readyz is not ready). Called once per request, from worker threads.
 */
struct admission_source {
	struct admission_state *(*acquire)(void *ud);
	void *ud;
};

/*
 * Where the handler gets an admission request's `request.roles` and
 * `request.clusterRoles` (kyverno-semantics.md sections 2.2 and 6.5): the
 * RBAC bindings cache of background/rbac.h in cluster mode.
 *
 * lookup(ud, user_info, namespace, &roles, &cluster_roles, err): user_info
 * is request.userInfo (borrowed, may be NULL), namespace the request's (""
 * when cluster-scoped). GV_OK with two new arrays of strings (the caller
 * decrefs); any other code with err set when they cannot be computed (not
 * listed yet): the request is then answered 503, never judged without them.
 * ready(ud): whether lookup can answer (for /readyz). Called from worker
 * threads; must not call the API server.
 */
struct admission_roles_source {
	enum gv_code (*lookup)(void *ud, const json_t *user_info, const char *namespace,
			       json_t **roles, json_t **cluster_roles, struct gv_err *err);
	bool (*ready)(void *ud);
	void *ud;
};

/* A source that always answers the same state (standalone mode, tests). */
struct admission_fixed_source {
	struct admission_source source; /* points into this struct */
	struct admission_state *state;	/* owned reference; may be swapped with _set */
	void *lock;			/* owned */
};
void admission_fixed_source_init(struct admission_fixed_source *f, struct admission_state *state);
/* Replaces the state (a reference is taken); readers see the new one from their next request. */
void admission_fixed_source_set(struct admission_fixed_source *f, struct admission_state *state);
void admission_fixed_source_release(struct admission_fixed_source *f);

/* ---- the report queue ---- */

/*
 * The admission results that the reporting matrix sends to PolicyReports
 * (engine_decide(...).reported: Audit rules; DESIGN.md "Reporting
 * matrix"). The handler pushes one item per allowed admission request that
 * has such results; the report writer of the background reconciler drains
 * them and merges them into the reports of the resource's namespace.
 *
 * Not queued (kyverno-semantics.md section 7.3): denied requests (nothing
 * is persisted), DELETE, dryRun, objects without metadata.uid, requests
 * allowed without evaluation (filters, gavel's own namespace).
 */
struct admission_report_result {
	struct engine_policy *policy; /* owned reference: name, namespace, annotations
					 (severity, category, scored) for the report entry */
	char *rule;		      /* owned */
	enum engine_status status;
	char *message;	/* owned */
	bool exception; /* skipped because of a PolicyException */
};

struct admission_report_item {
	/* The resource, as of this request (all owned, "" when absent). */
	char *api_version, *kind, *namespace, *name, *uid, *resource_version;
	char *operation;			 /* "CREATE", "UPDATE" or "CONNECT" */
	char *request_uid;			 /* request.uid */
	int64_t timestamp;			 /* Unix seconds when the request was judged */
	struct admission_report_result *results; /* owned array, policy-set and rule order */
	size_t nresults;
};

void admission_report_item_free(struct admission_report_item *it);

/* What push does when the queue is full. */
enum admission_queue_full {
	ADMISSION_QUEUE_DROP_OLDEST, /* the oldest item is freed and counted as dropped */
	ADMISSION_QUEUE_REJECT,	     /* the new item is freed and counted as rejected */
};

struct admission_queue;

/*
 * A FIFO of at most capacity items (capacity 0 = 1024). Memory stays
 * bounded by capacity times the size of one request's results.
 */
struct admission_queue *admission_queue_new(size_t capacity, enum admission_queue_full when_full);

/* Frees the queue and every item still in it. No thread may use it any more. */
void admission_queue_free(struct admission_queue *q);

/*
 * Adds item (ownership moves to the queue, also when it is rejected: it is
 * then freed). Returns false when the item was rejected (REJECT policy, or
 * the queue is closed). Never blocks beyond the queue's mutex.
 */
bool admission_queue_push(struct admission_queue *q, struct admission_report_item *item);

/*
 * The report writer's side: moves up to max items (oldest first) into
 * out[] and returns how many; ownership of each moves to the caller, who
 * frees it with admission_report_item_free(). Waits up to timeout_ms
 * (0 = do not wait, <0 = until an item arrives or the queue is closed)
 * when the queue is empty. Returns 0 on timeout, and 0 right away once
 * the queue is closed and empty.
 */
size_t admission_queue_drain(struct admission_queue *q, struct admission_report_item **out,
			     size_t max, int timeout_ms);

/* Wakes every drainer; later pushes are rejected. Items already queued can still be drained. */
void admission_queue_close(struct admission_queue *q);

struct admission_queue_stats {
	size_t depth, capacity;
	uint64_t pushed;   /* items accepted */
	uint64_t dropped;  /* oldest items freed to make room (DROP_OLDEST) */
	uint64_t rejected; /* new items refused (REJECT, or closed) */
};
void admission_queue_stats(struct admission_queue *q, struct admission_queue_stats *out);

/*
 * Registers the queue's figures in a metrics registry (rendered at scrape
 * time): gavel_admission_report_queue_depth (gauge),
 * gavel_admission_report_queue_dropped_total and
 * gavel_admission_report_queue_rejected_total (counters). The queue must
 * outlive the registry's use.
 */
void admission_queue_register_metrics(struct admission_queue *q, struct metrics_registry *r);

/* ---- context entries that read the cluster ---- */

/*
 * Where the engine hooks of one evaluation come from in cluster mode: the
 * loaders of the context entries configMap, apiCall, globalReference and
 * imageRegistry (background/context.h makes one; cmd/serve.c hands the same
 * one to the handler and the reconciler). open() returns the hooks for one
 * admission request or one scan page, which cache the calls made through
 * them; set (borrowed) is the policy set about to be evaluated, so that
 * the loader keeps watching what its policies name. close() releases what
 * open() returned. Thread-safe; the hooks may be used by several threads
 * at once until close().
 */
struct admission_context {
	/*
	 * deadline_ms: how long all the calls made through the hooks may take
	 * together: 0 = the loader's default (an admission request's), < 0 = no
	 * overall bound (a scan page: each call still has its own timeout).
	 */
	const struct engine_hooks *(*open)(void *ud, const struct engine_policyset *set,
					   long deadline_ms);
	void (*close)(void *ud, const struct engine_hooks *hooks);
	void *ud;
};

/* ---- the handler ---- */

struct admission_handler_config {
	const struct admission_source *source; /* borrowed, required */
	/* borrowed, may be NULL: context entries that read the cluster are then skipped */
	const struct admission_context *context;
	const char *namespace;		  /* gavel's own namespace: allowed unjudged; NULL = none */
	struct admission_queue *queue;	  /* borrowed, may be NULL (results not queued) */
	struct metrics_registry *metrics; /* borrowed, may be NULL (no metrics) */
	/*
	 * borrowed, may be NULL: request.roles and request.clusterRoles are
	 * then not computed (standalone mode: no cluster to read bindings
	 * from; the variables are absent and roles/clusterRoles filters see
	 * empty lists)
	 */
	const struct admission_roles_source *roles;
	/* borrowed, may be NULL (no Events): admission_events_emit() of each judged request */
	struct kube_events *events;
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
 * of kyverno-semantics.md section 7.1); an exception that does not compile,
 * or of another kyverno.io version, with "<JSON pointer>: <reason>".
 * Allowed otherwise, and for DELETE and other kinds. Malformed reviews: 400.
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
