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

/* Connection settings. All strings owned. */
struct kube_config {
	char *server;      /* "https://127.0.0.1:6443" */
	char *ca_file;     /* PEM file, or NULL */
	char *ca_data;     /* PEM text (decoded certificate-authority-data), or NULL */
	char *token;       /* bearer token, or NULL */
	char *token_file;  /* re-read periodically and on 401 (in-cluster), or NULL */
	char *cert_file, *key_file; /* client certificate, or NULL */
	char *cert_data, *key_data; /* PEM text, or NULL */
	bool insecure;     /* insecure-skip-tls-verify */
	char *namespace;   /* in-cluster namespace file or kubeconfig context namespace */
};

/*
 * Loads the configuration: `path` (a kubeconfig), else $KUBECONFIG, else
 * in-cluster (KUBERNETES_SERVICE_HOST/PORT, the service-account token, CA and
 * namespace files), else ~/.kube/config. Uses the kubeconfig's
 * current-context. Returns GV_EINVAL / GV_ENOENT with a one-line reason.
 */
enum gv_code kube_config_load(const char *path, struct kube_config **out, struct gv_err *err);
void kube_config_free(struct kube_config *c);

struct kube_client;

/* Creates a client (copies cfg). Never fails except on bad TLS material (NULL + err). */
struct kube_client *kube_client_new(const struct kube_config *cfg, struct gv_err *err);
void kube_client_free(struct kube_client *c);

/* The Kubernetes Status of a failed request. */
struct kube_status {
	long http;          /* HTTP status, 0 when no answer */
	char reason[64];    /* Status.reason: NotFound, Conflict, Gone, ... */
	char message[512];  /* Status.message */
};

/*
 * One request. method: GET, POST, PUT, PATCH (merge patch), DELETE. path:
 * "/api/v1/namespaces/x/configmaps/y" (query allowed). body may be NULL.
 * Retries 429, 5xx and connection errors with capped exponential backoff
 * and jitter (max_retries of the client); a 401 re-reads the token file once.
 * On 2xx returns GV_OK and *out (new reference, may be NULL for no body);
 * otherwise GV_ENET with st filled (st may be NULL) and err describing
 * "<method> <path>: <http> <reason>: <message>".
 */
enum gv_code kube_request(struct kube_client *c, const char *method, const char *path,
			  const json_t *body, json_t **out, struct kube_status *st,
			  struct gv_err *err);

/* A resolved API resource (discovery). Strings owned. */
struct kube_resource {
	char *group, *version, *kind, *resource; /* resource: plural, e.g. "pods" */
	bool namespaced;
};

/*
 * Resolves kind (optionally group/version; NULL = any, preferring the
 * preferred version) through discovery (cached per client). GV_ENOENT when
 * the kind is not served.
 */
enum gv_code kube_discover(struct kube_client *c, const char *group, const char *version,
			   const char *kind, struct kube_resource *out, struct gv_err *err);
void kube_resource_release(struct kube_resource *r);

/* Builds a path: ns NULL/"" = all namespaces (or cluster-scoped); name NULL = collection. */
char *kube_path(const struct kube_resource *r, const char *ns, const char *name);

/*
 * Lists a collection page by page (`limit`, `continue`), calling fn for each
 * item (borrowed); fn returns non-zero to stop. Restarts from the beginning
 * on 410 Gone. *resource_version (may be NULL) receives the list's
 * resourceVersion (caller frees).
 */
enum gv_code kube_list(struct kube_client *c, const char *path, int limit,
		       int (*fn)(const json_t *item, void *ud), void *ud, char **resource_version,
		       struct gv_err *err);

/*
 * Informer: keeps every object of a collection in memory with list + watch
 * (bookmarks, resume from the last resourceVersion, relist on 410, backoff
 * on errors), on its own thread. on_change is called (from that thread)
 * after the initial list and after each change, with no lock held.
 */
struct kube_informer;

struct kube_informer *kube_informer_start(struct kube_client *c, const char *path,
					  void (*on_change)(void *ud), void *ud);
/* True once the initial list completed. */
bool kube_informer_synced(const struct kube_informer *inf);
/* A new reference to an array of all objects now known (a consistent copy). */
json_t *kube_informer_list(struct kube_informer *inf);
/* Stops the thread and frees. */
void kube_informer_stop(struct kube_informer *inf);

#endif
