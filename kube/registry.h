/*
 * registry.h - an OCI / Docker registry (HTTP API v2) client answering
 * Kyverno's `imageRegistry` context entry (kyverno-semantics.md section
 * 1.5): the "ImageData" of an image reference, as Kyverno's loader
 * (pkg/engine/context/loaders/imagedata.go, through go-containerregistry)
 * builds it:
 *
 *   {"image":         the reference as given,
 *    "resolvedImage": "<registry>/<repository>@<digest of the top-level manifest>",
 *    "registry":      "ghcr.io" ("index.docker.io" for Docker Hub),
 *    "repository":    "org/app" ("library/nginx" for a one-component Hub name),
 *    "identifier":    the tag ("latest" when none) or the digest when given,
 *    "manifest":      the image manifest (JSON),
 *    "manifestList":  the index (JSON) when the reference names one, else null,
 *    "configData":    the image config blob (JSON)}
 *
 * An index (OCI image index, Docker manifest list) is resolved to its
 * linux/amd64 entry (the first whose platform has os "linux" and
 * architecture "amd64", any variant), as go-containerregistry's default
 * platform does; "manifest" is then that platform's manifest while
 * "resolvedImage" keeps the index digest. The shared docs are silent on
 * this: the behaviour is go-containerregistry's remote.Descriptor.Image().
 *
 * Thread model: one struct kube_registry may be shared by threads (its
 * caches are locked); each thread gets its own curl handle, kept (with its
 * open connections, closed by curl after 118 s idle) until the thread ends
 * or the client is freed.
 */
#ifndef GV_KUBE_REGISTRY_H
#define GV_KUBE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"

/* Bounds of a client. Zero fields take the defaults given. */
struct kube_registry_limits {
	long timeout_ms;      /* one kube_registry_image_data call, all requests: 10000 */
	size_t max_body;      /* bytes of one manifest, config blob or token answer: 4 MiB */
	long ref_ttl_ms;      /* a reference (tag) is answered from the cache this long: 30000 */
	size_t cache_entries; /* entries of each cache (by reference, by digest): 256 */
	size_t cache_bytes;   /* manifest + config bytes kept in each cache: 32 MiB */
};

struct kube_registry;

/* Creates a client with its caches (lim NULL = defaults). Never fails. */
struct kube_registry *kube_registry_new(const struct kube_registry_limits *lim);
/* Frees the client and the curl handles of all threads; no call may be running. NULL is fine. */
void kube_registry_free(struct kube_registry *r);

/*
 * Per call: the entry's imageRegistryCredentials, read by the caller.
 *
 * allow_insecure (allowInsecureRegistry): TLS certificates are not
 * verified and plain http:// is used when https:// cannot connect.
 * Without it, http:// is still tried after https:// for localhost,
 * loopback and private (RFC 1918) addresses, as go-containerregistry does;
 * every other registry is https:// with verification. A registry that
 * answered on http:// only is asked on http:// at once for 5 minutes (by
 * calls that allow http:// for it).
 *
 * docker_configs: borrowed, NULL or an array of docker config documents,
 * each the decoded `.dockerconfigjson` of one Secret named in
 * imageRegistryCredentials.secrets (or imagePullSecrets), in order:
 * {"auths": {"<host>": {"auth": base64("user:pass")} | {"username", "password"}
 *  | {"registrytoken"}}} (the legacy .dockercfg shape, the host map
 * without "auths", is read too). A key matches the registry by host[:port]
 * after dropping a scheme and a path ("https://index.docker.io/v1/" is
 * Docker Hub; docker.io, index.docker.io and registry-1.docker.io are
 * one); a key "*.example.com" matches one label in place of the '*'. The
 * first exact match (documents in order) is used, else the first wildcard
 * match.
 * "identitytoken" (an OAuth2 refresh token) is not supported: such an
 * entry without a username/password is skipped. Cloud credential
 * helpers (providers amazon, azure, google, github) are not here: the
 * caller gives their output as a docker config or reports an error.
 */
struct kube_registry_opts {
	bool allow_insecure;
	const json_t *docker_configs; /* borrowed, may be NULL */
};

/*
 * Fetches the ImageData of reference (a Docker reference:
 * "[registry/]repository[:tag][@digest]", parsed by gv_imageref_parse with
 * Docker Hub defaults; "nginx" is index.docker.io/library/nginx:latest).
 * opts may be NULL (anonymous, secure). On GV_OK *out is a new object
 * (the caller releases it; a private copy, free to modify).
 *
 * Requests (HTTP/1.1, all within limits.timeout_ms):
 *   GET /v2/<repository>/manifests/<tag or digest>, Accept: OCI manifest
 *     and index, Docker manifest v2 and manifest list;
 *   for an index, GET of the linux/amd64 manifest by digest;
 *   GET /v2/<repository>/blobs/<config digest> (redirects followed, up to 5,
 *     http(s) only; the Authorization header is not sent to another host).
 * Auth: anonymous first; a 401 with "WWW-Authenticate: Bearer realm=...,
 * service=...,scope=..." gets a token from the realm (GET with service and
 * scope, default scope "repository:<repository>:pull", Basic credentials
 * from docker_configs when there are some; answer {"token"} or
 * {"access_token"}); a 401 with "Basic" is answered with the credentials.
 * A registrytoken is sent as Bearer at once. Digests: the digest of the
 * top-level manifest is the sha256 of its body (what go-containerregistry
 * reports; Docker-Content-Digest is not trusted), and a reference by digest
 * must equal it (so a sha384/sha512 reference fails, as it does there);
 * a platform manifest and the config blob are checked against their
 * sha256 descriptor digests (other algorithms are taken as given).
 *
 * Cache: a reference seen with the same opts in the last ref_ttl_ms is
 * answered without a request; a manifest whose digest was resolved before
 * with the same opts is not followed again (its platform manifest and
 * config are kept). Entries are dropped oldest first past the bounds.
 *
 * Errors (gv_err message, no credentials in it):
 *   GV_EINVAL  bad reference ("invalid image reference \"X\": <why>"), a
 *              manifest or config that is not JSON, an unsupported media type
 *              (schema 1), an index without linux/amd64, a digest mismatch
 *   GV_ENOENT  404 ("<registry>/<repository>:<tag>: manifest unknown (404 ...)")
 *   GV_ENET    unreachable ("registry <host> unreachable: <curl's reason>"),
 *              timed out ("registry <host>: timed out after N ms"), auth
 *              denied ("registry <host>: authentication required/denied
 *              (401|403 ...)"), other HTTP failures
 *   GV_ELIMIT  a body over max_body ("... larger than N bytes")
 * The caller reports them as Kyverno does: the rule's result is `error`
 * with "failed to load context: failed to fetch image descriptor: <ref>,
 * error: <message>".
 */
enum gv_code kube_registry_image_data(struct kube_registry *r, const char *reference,
				      const struct kube_registry_opts *opts, json_t **out,
				      struct gv_err *err);

#endif
