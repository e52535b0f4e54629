/*
 * kube_int.h - internals shared by the kube/ sources and kube/tests: the request
 * engine with streaming and abort hooks, the watch event splitter, Status
 * parsing, and the in-cluster configuration reader.
 */
#ifndef GV_KUBE_KUBE_INT_H
#define GV_KUBE_KUBE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "kube/kube.h"

/* Bounds. */
#define KUBE_MAX_RESPONSE   (64u << 20) /* bytes of one buffered response body */
#define KUBE_MAX_EVENT	    (16u << 20) /* bytes of one watch event (etcd objects are < 1.5 MiB) */
#define KUBE_MAX_RETRIES    10		/* upper bound for kube_client_set_retries */
#define KUBE_MAX_RETRY_WAIT 30000	/* ms: cap for Retry-After */
#define KUBE_TOKEN_TTL	    60		/* s: a token file is re-read after this long */
#define KUBE_DISCOVERY_TTL  600		/* s: discovery results are refetched after this long */
#define KUBE_DISCOVERY_MISS 10		/* s: a miss refetches when the cache is older than this */

/* One curl easy handle, owned by one thread, listed in its client for kube_client_free. */
struct kube_handle {
	void *curl;		  /* owned CURL * */
	struct kube_client *c;	  /* borrowed */
	struct kube_handle *next; /* in c->handles */
	struct kube_handle **pprev;
};

struct kube_client {
	struct kube_config cfg; /* owned strings */
	pthread_key_t key;	/* -> struct kube_handle of the calling thread */
	pthread_mutex_t mu;	/* handles, token */
	struct kube_handle *handles;
	char *token; /* owned: token read from cfg.token_file */
	time_t token_read;
	long connect_ms, request_ms;
	int watch_s;
	int max_retries;
	unsigned base_ms, cap_ms;
	/* discovery cache (discovery.c), under disc_mu */
	pthread_mutex_t disc_mu;
	json_t
	    *disc_groups; /* owned: [{"name": g, "preferred": v, "versions": [v...]}], core first */
	time_t disc_groups_at;
	json_t *disc_gv; /* owned: "group/version" -> {"at": time, "resources": [...]} */
	/* kube_client_new_transport: exchanges go there instead of curl */
	void (*transport)(void *ud, struct kube_exchange *x);
	void *transport_ud;
	/* kube_client_new_child: requests go through parent, counted here */
	struct kube_client *parent;
	atomic_ulong requests; /* kube_do calls (one per request, whatever its retries) */
};

/*
 * One request as the engine sees it. Zero-initialise, fill what is needed.
 * With on_data set the body is streamed to it (return false to abort the
 * transfer) instead of being buffered; only 2xx bodies are streamed, error
 * bodies are still buffered for the Status.
 */
struct kube_req {
	const char *method;	  /* GET, POST, PUT, PATCH, DELETE */
	const char *path;	  /* "/api/v1/..." with query */
	const char *content_type; /* of body; NULL = application/json */
	const char *accept;	  /* Accept header value; NULL = application/json */
	const char *body;	  /* borrowed, may be NULL */
	size_t body_len;
	const atomic_bool
	    *abort; /* borrowed: when it becomes true the request ends (GV_ENET, http 0) */
	bool (*on_data)(const char *p, size_t n, void *ud);
	void *ud;
	void *curl;	 /* borrowed CURL * to use; NULL = the calling thread's handle */
	long timeout_ms; /* total; 0 = client default, <0 = none */
	int retries;	 /* -1 = client default; 0 = single attempt */
};

/*
 * Performs req. On 2xx returns GV_OK with the body in *resp (when resp is
 * non-NULL and on_data is NULL). Otherwise GV_ENET with st and err filled
 * as for kube_request.
 */
enum gv_code kube_do(struct kube_client *c, const struct kube_req *req, struct gv_buf *resp,
		     struct kube_status *st, struct gv_err *err);

/* Makes the pager's requests end (GV_ENET) when *abort becomes true (abort may be NULL). */
void kube_pager_set_abort(struct kube_pager *p, const atomic_bool *abort);

/* kube_list that ends early (GV_ENET) when *abort becomes true (abort may be NULL). */
enum gv_code kube_list_abortable(struct kube_client *c, const char *path, int limit,
				 int (*fn)(const json_t *item, void *ud), void *ud,
				 char **resource_version, const atomic_bool *abort,
				 struct gv_err *err);

/*
 * Fills st from an HTTP status and a response body: Status.reason and
 * Status.message when the body is a Status, else the conventional reason
 * for the code and the start of the body (control characters replaced).
 */
void kube_status_fill(struct kube_status *st, long http, const char *body, size_t len);

/* The conventional Status.reason for an HTTP code ("NotFound"), "" when none. */
const char *kube_reason_for(long http);

/* Sleeps ms milliseconds, in slices, returning early (true) when *abort becomes true. */
bool kube_sleep(long ms, const atomic_bool *abort);

/*
 * Splits a stream of concatenated JSON objects (the watch body: one
 * {"type":...,"object":...} per line) at object boundaries, whatever the
 * chunking. on_event gets each event's type and object (borrowed) and
 * returns false to stop. Bounded: an event over max bytes is an error.
 */
struct kube_stream {
	struct gv_buf buf; /* bytes of the event being assembled */
	size_t max;	   /* bytes; 0 = KUBE_MAX_EVENT */
	int depth;	   /* brace depth in buf */
	bool in_str, esc;
	bool (*on_event)(const char *type, json_t *object, void *ud);
	void *ud;
	bool stopped;
	size_t events;
};

/*
 * Feeds n bytes. GV_OK, GV_ELIMIT (event too long), GV_EINVAL (not JSON or
 * not an event object). After on_event returned false, further bytes are ignored.
 */
enum gv_code kube_stream_feed(struct kube_stream *s, const char *p, size_t n, struct gv_err *err);
void kube_stream_release(struct kube_stream *s);

/*
 * Reads the in-cluster configuration from a service-account directory
 * (token, ca.crt, namespace) and host/port (the KUBERNETES_SERVICE_HOST/PORT
 * values). GV_ENOENT when host or port is empty.
 */
enum gv_code kube_config_incluster(const char *sa_dir, const char *host, const char *port,
				   struct kube_config **out, struct gv_err *err);

/* Reads a small file trimmed of surrounding whitespace; NULL when unreadable or empty. Caller
 * frees. */
char *kube_read_trimmed(const char *path);

#endif
