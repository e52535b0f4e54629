/*
 * kube.h - a small Kubernetes REST client on libcurl (OpenSSL flavour):
 * configuration (kubeconfig, in-cluster), requests with retries, discovery,
 * paginated lists, and informers (list + watch kept in memory).
 *
 * Wire details: ../shared/docs/k8s-wire.md. Thread model: a client may be
 * shared by threads; each thread gets its own curl easy handle.
 */
#ifndef GV_KUBE_KUBE_H
#define GV_KUBE_KUBE_H

#include <stdbool.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/json.h"

/* Connection settings. All strings owned. */
struct kube_config {
	char *server;		    /* "https://127.0.0.1:6443" */
	char *ca_file;		    /* PEM file, or NULL */
	char *ca_data;		    /* PEM text (decoded certificate-authority-data), or NULL */
	char *token;		    /* bearer token, or NULL */
	char *token_file;	    /* re-read periodically and on 401 (in-cluster), or NULL */
	char *cert_file, *key_file; /* client certificate, or NULL */
	char *cert_data, *key_data; /* PEM text, or NULL */
	bool insecure;		    /* insecure-skip-tls-verify */
	char *namespace;	    /* in-cluster namespace file or kubeconfig context namespace */
};

/*
 * Loads the configuration: `path` (a kubeconfig), else $KUBECONFIG, else
 * in-cluster (KUBERNETES_SERVICE_HOST/PORT, the service-account token, CA and
 * namespace files), else ~/.kube/config. Uses the kubeconfig's
 * current-context. Returns GV_EINVAL / GV_ENOENT with a one-line reason.
 *
 * $KUBECONFIG may be a ':'-separated list: the first file that exists is
 * used (no merging). In-cluster: server "https://HOST:PORT" (IPv6 in []),
 * token_file, ca_file and namespace from
 * /var/run/secrets/kubernetes.io/serviceaccount/.
 */
enum gv_code kube_config_load(const char *path, struct kube_config **out, struct gv_err *err);

/*
 * Parses a kubeconfig (YAML or JSON, `v1` Config) from buf (len bytes).
 * `file` names it in errors; relative certificate-authority, client-certificate,
 * client-key and tokenFile paths are taken relative to `dir` (NULL = as is).
 * `context` picks a context by name (NULL = current-context). Supported:
 * cluster server, certificate-authority[-data], insecure-skip-tls-verify;
 * user token, tokenFile, client-certificate[-data], client-key[-data];
 * context namespace (NULL when unset). `*-data` is base64 of PEM; a file
 * field and its -data twin: the data wins. tls-server-name and proxy-url are
 * not supported (ignored). Users with
 * exec, auth-provider or username/password are rejected (GV_EINVAL), as are a
 * missing context/cluster/user, a server that is not http(s)://, and bad base64.
 */
enum gv_code kube_config_parse(const char *buf, size_t len, const char *file, const char *dir,
			       const char *context, struct kube_config **out, struct gv_err *err);
void kube_config_free(struct kube_config *c);

struct kube_client;

/*
 * Creates a client (copies cfg). Never fails except on bad TLS material or an
 * empty server (NULL + err). Bad TLS material is a CA, certificate or key
 * (file or data) that does not parse as PEM, a key that does not match the
 * certificate, or a certificate without a key.
 * Defaults: connect timeout 10 s, request timeout 60 s, watch timeoutSeconds
 * 300, 5 retries, backoff 200 ms doubling up to 5 s. Free only when no other
 * thread uses the client (informers stopped).
 */
struct kube_client *kube_client_new(const struct kube_config *cfg, struct gv_err *err);
void kube_client_free(struct kube_client *c);

/*
 * A child of parent (which must outlive it): its requests are sent by
 * parent (connections, retries, tuning, discovery cache and test
 * transport are parent's) and counted by the child, for figures such as
 * the API requests of one namespace's scan. Not for informers. Free with
 * kube_client_free.
 */
struct kube_client *kube_client_new_child(struct kube_client *parent);

/* Requests sent through c so far (each counts once, whatever its retries). */
unsigned long kube_client_requests(const struct kube_client *c);

/*
 * Tuning (call before sharing the client between threads). Retries: at most
 * max_retries (clamped to 0..10) further attempts after the first; the wait
 * before attempt n is kube_backoff_ms(n, base_ms, cap_ms), or the server's
 * Retry-After (capped at 30 s) when larger. Timeouts in ms (0 = keep);
 * watch_s is the watch's timeoutSeconds (0 = keep).
 */
void kube_client_set_retries(struct kube_client *c, int max_retries, unsigned base_ms,
			     unsigned cap_ms);
void kube_client_set_timeouts(struct kube_client *c, long connect_ms, long request_ms, int watch_s);

/*
 * Capped exponential backoff with jitter for attempt n (1 = first retry):
 * d = min(cap_ms, base_ms * 2^(n-1)); returns a value in [d/2, d].
 */
unsigned kube_backoff_ms(unsigned attempt, unsigned base_ms, unsigned cap_ms);

/* The Kubernetes Status of a failed request. */
struct kube_status {
	long http;	   /* HTTP status, 0 when no answer */
	char reason[64];   /* Status.reason: NotFound, Conflict, Gone, ... */
	char message[512]; /* Status.message */
};

/*
 * One request. method: GET, POST, PUT, PATCH (merge patch), DELETE. path:
 * "/api/v1/namespaces/x/configmaps/y" (query allowed). body may be NULL.
 * Retries 429, 5xx and connection errors with capped exponential backoff
 * and jitter (max_retries of the client); a 401 re-reads the token file once.
 * On 2xx returns GV_OK and *out (new reference, may be NULL for no body);
 * otherwise GV_ENET with st filled (st may be NULL) and err describing
 * "<method> <path>: <http> <reason>: <message>".
 *
 * Details: st->reason/message come from the Status body (or the
 * conventional reason for the code when the body is not a Status); a
 * connection failure has st->http 0 and err "<method> <server><path>:
 * <curl's reason>". Not retried: other 4xx, TLS verification failures, 501.
 * Retry-After (s) is honoured up to 30 s. A response body over 64 MiB is
 * GV_ELIMIT; a 2xx body that is not JSON is GV_ENET (pass out NULL for
 * endpoints such as /readyz). Sends Accept: application/json, no
 * Accept-Encoding, HTTP/1.1. Tokens and bodies are never logged.
 */
enum gv_code kube_request(struct kube_client *c, const char *method, const char *path,
			  const json_t *body, json_t **out, struct kube_status *st,
			  struct gv_err *err);

/*
 * A GET (Accept: application/json) whose 2xx body is handed back as
 * received in *out (reset first; the caller releases it), for callers
 * that parse it their own way: list pages read with gv_json_parse_list()
 * (common/json.h). Retries, errors and limits as kube_request(); the body
 * is not checked to be JSON.
 */
enum gv_code kube_get_raw(struct kube_client *c, const char *path, struct gv_buf *out,
			  struct kube_status *st, struct gv_err *err);

/*
 * What a response carries. The metadata views ask the server for the
 * metadata only (Accept: application/json;as=PartialObjectMetadata;
 * g=meta.k8s.io;v=v1, or PartialObjectMetadataList for a list, falling
 * back to application/json): an object (GET of one object, the answer of
 * a POST or PUT: KUBE_VIEW_METADATA) or a list's items
 * (KUBE_VIEW_METADATA_LIST) are then PartialObjectMetadata (apiVersion
 * meta.k8s.io/v1, metadata with name, namespace, uid, resourceVersion,
 * labels, annotations, managedFields), so large objects are neither
 * encoded by the server nor parsed here. Served by kube-apiserver 1.15 and
 * later (Kubernetes API concepts, "Retrieving metadata only"). The view
 * must match the path: a list view on one object is a 500 from the server.
 */
enum kube_view { KUBE_VIEW_FULL, KUBE_VIEW_METADATA, KUBE_VIEW_METADATA_LIST };

/* kube_request() with a chosen view (kube_request = KUBE_VIEW_FULL). */
enum gv_code kube_request_view(struct kube_client *c, const char *method, const char *path,
			       enum kube_view view, const json_t *body, json_t **out,
			       struct kube_status *st, struct gv_err *err);

/*
 * A PATCH with an explicit type: merge patch (application/merge-patch+json,
 * RFC 7386), JSON patch (application/json-patch+json, RFC 6902: body is an
 * array of ops) or server-side apply (application/apply-patch+yaml with a
 * JSON body; the path must carry fieldManager=...). Same results as kube_request.
 */
enum kube_patch_type { KUBE_PATCH_MERGE, KUBE_PATCH_JSON, KUBE_PATCH_APPLY };

enum gv_code kube_patch(struct kube_client *c, const char *path, enum kube_patch_type type,
			const json_t *body, json_t **out, struct kube_status *st,
			struct gv_err *err);

/* A resolved API resource (discovery). Strings owned. */
struct kube_resource {
	char *group, *version, *kind, *resource; /* resource: plural, e.g. "pods" */
	bool namespaced;
	bool listable; /* its verbs include list and watch (what scans and informers need) */
};

/*
 * Resolves kind (optionally group/version; NULL = any, preferring the
 * preferred version) through discovery (cached per client). GV_ENOENT when
 * the kind is not served.
 *
 * Walks /api, /api/<v>, /apis and /apis/<g>/<v> (legacy discovery, as on
 * 1.20). With group NULL the core group is tried first, then the groups in
 * the server's order. Only top-level resources count (names without '/').
 * Groups whose discovery fails (an aggregated API answering 503) are
 * skipped. Each group/version is cached for 10 minutes; a miss refetches
 * once when the cache is older than 10 s (a CRD just created); a failed
 * group/version is asked again after 10 s. Lookups of one client are
 * serialized (the cache lock is held while fetching). group ""
 * is the core group. out is filled only on GV_OK (release it).
 */
enum gv_code kube_discover(struct kube_client *c, const char *group, const char *version,
			   const char *kind, struct kube_resource *out, struct gv_err *err);
void kube_resource_release(struct kube_resource *r);

/*
 * Forgets the discovery cache of c: the next kube_discover() fetches it
 * again (a caller that must not miss a CRD installed a moment ago, e.g.
 * policy validation, after a miss).
 */
void kube_discovery_invalidate(struct kube_client *c);

/*
 * Builds a path: ns NULL/"" = all namespaces (or cluster-scoped); name NULL = collection.
 * "/api/v1/namespaces/NS/configmaps/NAME", "/apis/G/V/RESOURCE"; ns is
 * ignored for cluster-scoped resources; ns and name are percent-encoded.
 * Caller frees.
 */
char *kube_path(const struct kube_resource *r, const char *ns, const char *name);

/*
 * Percent-encodes s for a path segment or a query value (RFC 3986: only
 * A-Z a-z 0-9 - . _ ~ are kept). Caller frees.
 */
char *kube_escape(const char *s);

/*
 * Lists a collection page by page: the one way gavel lists. Options:
 * limit (items per page; <= 0 asks for everything in one response),
 * metadata (the items are PartialObjectMetadata: KUBE_VIEW_METADATA_LIST;
 * a page whose items are null or missing, as an empty one is, has none),
 * text (pages are handed over as received and only their head is parsed,
 * for callers that parse items one at a time: gv_json_parse_list()),
 * max_restarts (how often an expired continue token, 410 Gone, starts the
 * listing over from the first page; < 0: never, 0: 3), cont (a continue
 * token to start from, copied by kube_pager_new(): a listing resumed
 * where an earlier pager left it, kube_pager_continue(); NULL = the first
 * page; when it has expired, the 410 starts over from the first page like
 * any other). path may carry a query (labelSelector=...); limit and
 * continue are appended.
 */
struct kube_list_options {
	int limit;
	bool metadata;
	bool text;
	int max_restarts;
	const char *cont;
};

/*
 * One page, owned by the pager and valid until the next kube_pager_next()
 * (or owned by the caller after kube_pager_take(): kube_page_release()).
 * Parsed pages (text false): list is the page with its items' apiVersion
 * and kind filled in from the list's when the server left them out.
 * Text pages: text holds the body, head the page without its items
 * (gv_json_parse_list) and spans[0..nspans) the items' bytes in text;
 * items are as the server sent them (fill apiVersion and kind from
 * api_version and item_kind). restarted: the listing started over before
 * this page (410 Gone), so items of earlier pages come again. index: 0
 * for the first page of a listing (again after a restart).
 */
struct kube_page {
	json_t *list;
	struct gv_buf text;
	json_t *head;
	struct gv_json_span *spans;
	size_t nspans;
	const char *api_version; /* the list's apiVersion (in list or head), or NULL */
	char *item_kind;	 /* owned: the list's kind without "List", or NULL */
	bool restarted;
	unsigned index;
};

struct kube_pager;

/* A pager over path (copied) with options o (NULL = defaults); c must outlive it. */
struct kube_pager *kube_pager_new(struct kube_client *c, const char *path,
				  const struct kube_list_options *o);

/*
 * The next page: GV_OK with *page set (owned by the pager), or GV_OK with
 * *page NULL when the listing is complete (after the last page, or at once
 * after kube_pager_stop()). Errors (GV_ENET, GV_ELIMIT; st filled when not
 * NULL) end the listing: later calls return GV_OK with *page NULL. More
 * than max_restarts 410s in one listing are an error, as is a body that
 * is not a list object (GV_ENET "GET <path>: response is not a list:
 * <why>"); a missing or null items is an empty page.
 */
enum gv_code kube_pager_next(struct kube_pager *p, struct kube_page **page, struct kube_status *st,
			     struct gv_err *err);

/* Ends the listing: no further page is requested. */
void kube_pager_stop(struct kube_pager *p);

/*
 * Items per page of the requests that follow (a restart after a 410
 * included); <= 0 asks for everything in one response. For a caller whose
 * page size changes along the listing (a budget of objects). Not while
 * another thread is in kube_pager_next() on p.
 */
void kube_pager_set_limit(struct kube_pager *p, int limit);

/*
 * The continue token the next page will be requested with (borrowed,
 * valid until the next kube_pager_next() or kube_pager_free(); copy it to
 * keep it): the starting token (kube_list_options.cont) before the first
 * page, then the last page's metadata.continue; NULL when the listing is
 * complete, or when it starts over from the first page. After an error,
 * the token of the request that failed. A caller that stops before the
 * end keeps it to resume the listing later with a new pager.
 */
const char *kube_pager_continue(const struct kube_pager *p);

/*
 * Moves the page last returned by kube_pager_next() out of the pager into
 * *out (the returned pointer must not be used after): the caller owns it
 * and frees it with kube_page_release(), so that it may hold it while the
 * pager fetches the next one (two pages in memory, no copy). *out is
 * zeroed when there is no page (before the first, after the end or after
 * a take).
 */
void kube_pager_take(struct kube_pager *p, struct kube_page *out);

/* Frees what a taken page holds and zeroes it (pg may be NULL). */
void kube_page_release(struct kube_page *pg);

/* The resourceVersion of the listing's first page (borrowed), NULL before it or when none. */
const char *kube_pager_resource_version(const struct kube_pager *p);

/* Requests made so far (each page and each restarted page). */
unsigned long kube_pager_requests(const struct kube_pager *p);

void kube_pager_free(struct kube_pager *p);

/*
 * Lists a collection with a kube_pager (parsed pages of limit), calling fn
 * for each item (borrowed); fn returns non-zero to stop. Restarts from the
 * beginning on 410 Gone (at most 3 restarts, then GV_ENET): fn then sees
 * items again from the first page. *resource_version (may be NULL)
 * receives the list's resourceVersion (caller frees). Memory is bounded by
 * one page.
 */
enum gv_code kube_list(struct kube_client *c, const char *path, int limit,
		       int (*fn)(const json_t *item, void *ud), void *ud, char **resource_version,
		       struct gv_err *err);

/*
 * A test transport: a client made with kube_client_new_transport() hands
 * every request to transport() instead of the network, which fills in
 * http (0 = a connection failure whose reason is the response text),
 * response (the body, JSON or a Status; released by the client) and
 * optionally retry_after (s). The request fields are borrowed for the
 * call. Everything above the wire behaves as with a server: Status
 * parsing, retries (none by default: kube_client_set_retries),
 * discovery, lists, views (seen in accept), patch types (content_type).
 * transport may be called from several threads at once.
 */
struct kube_exchange {
	const char *method;	  /* GET, POST, PUT, PATCH, DELETE */
	const char *path;	  /* with query */
	const char *accept;	  /* Accept header */
	const char *content_type; /* NULL when there is no body */
	const char *body;	  /* NULL or body_len bytes */
	size_t body_len;
	long http;
	struct gv_buf response;
	long retry_after;
};

struct kube_client *kube_client_new_transport(void (*transport)(void *ud, struct kube_exchange *x),
					      void *ud);

/*
 * Informer: keeps every object of a collection in memory with list + watch
 * (bookmarks, resume from the last resourceVersion, relist on 410, backoff
 * on errors: capped at 30 s between lists and 5 s between watches, so the
 * objects are current again within seconds of an API server outage; started
 * over when a watch that had delivered events or stayed open 2 s breaks,
 * so a cut connection is resumed at once), on its own thread. on_change is
 * called (from that thread) after the initial list and after each change,
 * with no lock held.
 *
 * path is a collection path (kube_path with name NULL), optionally with a
 * query (labelSelector=...). Lists use limit=500; the watch is
 * `?watch=1&allowWatchBookmarks=true&resourceVersion=RV&timeoutSeconds=W`.
 * "After each change" means after each batch of events that arrived
 * together: several changes may be reported by one call. Objects are stored
 * by "namespace/name" ("name" when cluster-scoped). c must outlive the
 * informer. Returns NULL only when no thread can be created.
 */
struct kube_informer;

struct kube_informer *kube_informer_start(struct kube_client *c, const char *path,
					  void (*on_change)(void *ud), void *ud);
/* True once the initial list completed. */
bool kube_informer_synced(const struct kube_informer *inf);
/* Waits up to timeout_ms for the initial list; returns kube_informer_synced(). */
bool kube_informer_wait_synced(struct kube_informer *inf, long timeout_ms);
/*
 * A new reference to an array of all objects now known (a consistent copy),
 * sorted by namespace/name. The objects are shared with the informer: read only.
 */
json_t *kube_informer_list(struct kube_informer *inf);
/* A new reference to one object (shared, read only), or NULL. ns NULL/"" = cluster-scoped. */
json_t *kube_informer_get(struct kube_informer *inf, const char *ns, const char *name);
/*
 * Stops the thread and frees. Returns within about a second (an idle watch
 * is aborted). Must not be called from on_change.
 */
void kube_informer_stop(struct kube_informer *inf);

/*
 * Base64 (RFC 4648, standard alphabet, padded) as Secret data and caBundle
 * use it. Encode: caller frees. Decode skips whitespace; GV_EINVAL on bad
 * input; *out is NUL-terminated (caller frees), *len may be NULL.
 */
char *kube_base64_encode(const void *data, size_t n);
enum gv_code kube_base64_decode(const char *s, char **out, size_t *len, struct gv_err *err);

#endif
