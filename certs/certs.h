/*
 * certs.h - TLS material for the webhook (OpenSSL 3): an ECDSA P-256 CA and
 * a serving certificate it signs, kept in files, in a Kubernetes Secret and
 * as the caBundle of a ValidatingWebhookConfiguration, renewed before expiry.
 *
 * Choices (k8s-wire.md 2.2-2.4 compares Kyverno's and Gatekeeper's):
 *  - keys: ECDSA P-256, signatures ECDSA-SHA256; private keys are written as
 *    unencrypted PKCS#8 PEM ("BEGIN PRIVATE KEY"), which OpenSSL, GnuTLS
 *    (libmicrohttpd) and Go (the API server) all read;
 *  - lifetimes: CA 10 years, serving certificate 1 year (never past the CA's
 *    notAfter); notBefore is back-dated by 1 hour for clock skew;
 *  - renewal: a certificate is due when less than 1/3 of its lifetime
 *    remains (CA: ~3.3 years before expiry, serving: ~4 months before);
 *  - rotation: a new CA is put first in the CA bundle and the old CAs that
 *    have not expired stay after it (at most CERTS_MAX_CAS in all), so a
 *    caBundle written from the bundle trusts both the old and the new
 *    serving certificate while the change propagates;
 *  - serving certificate: CN <service>.<namespace>.svc, SANs DNS <service>,
 *    <service>.<namespace>, <service>.<namespace>.svc,
 *    <service>.<namespace>.svc.cluster.local, the extra DNS names and the IP
 *    SANs asked for; extendedKeyUsage serverAuth; the CN is never used by
 *    Go clients, only the SANs.
 */
#ifndef GV_CERTS_CERTS_H
#define GV_CERTS_CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "kube/kube.h"

#define CERTS_CA_DAYS  3650 /* default CA lifetime */
#define CERTS_DAYS     365  /* default serving certificate lifetime */
#define CERTS_MAX_CAS  3    /* CA certificates kept in a bundle (the current one included) */
#define CERTS_MAX_SANS 64   /* DNS + IP SANs of one serving certificate */

/* File names in a TLS directory and keys in the Secret. */
#define CERTS_TLS_CRT "tls.crt"
#define CERTS_TLS_KEY "tls.key"
#define CERTS_CA_CRT  "ca.crt"
#define CERTS_CA_KEY  "ca.key"

/*
 * PEM material. All strings owned, NULL when absent. Zero-initialise;
 * release with certs_bundle_release().
 */
struct certs_bundle {
	char *ca_crt;  /* CA bundle: the signing CA first, then older CAs still trusted */
	char *ca_key;  /* private key of the first CA */
	char *tls_crt; /* serving certificate (the leaf only) */
	char *tls_key; /* its private key */
};

void certs_bundle_release(struct certs_bundle *b);

/* What the serving certificate must cover. Strings borrowed. */
struct certs_request {
	const char *service;	/* Service name, or NULL for no Service DNS names */
	const char *namespace;	/* its namespace (required with service) */
	const char *const *dns; /* extra DNS SANs */
	size_t n_dns;
	const char *const *ips; /* IP SANs: IPv4 or IPv6 literals */
	size_t n_ips;
	int ca_days; /* CA lifetime; 0 = CERTS_CA_DAYS */
	int days;    /* serving lifetime; 0 = CERTS_DAYS */
};

/* What certs_ensure changed (bits). */
enum {
	CERTS_NEW_CA = 1,      /* a new CA was made (the bundle changed) */
	CERTS_NEW_SERVING = 2, /* a new serving certificate and key were issued */
	CERTS_PRUNED = 4       /* expired old CAs were dropped from the bundle */
};

/*
 * Makes b complete and current at time `now`: creates what is missing, a
 * new CA when the CA is absent, unreadable, does not match ca_key, or is due
 * (rotation as described above), a new serving certificate when it is absent,
 * unreadable, does not match tls_key, does not chain to the first CA, is due,
 * or its SANs differ from the request. *changed (may be NULL) gets the
 * CERTS_* bits. GV_EINVAL for a bad request (no names, a malformed IP or DNS
 * name, too many SANs, a negative lifetime), GV_EINTERNAL when OpenSSL fails.
 */
enum gv_code certs_ensure(struct certs_bundle *b, const struct certs_request *req, time_t now,
			  unsigned *changed, struct gv_err *err);

/*
 * Checks b at `now`: the serving key matches the certificate, the certificate
 * verifies (X509_verify_cert, purpose sslserver) against the bundle's first
 * CA, and, when req is non-NULL, its SANs are exactly the requested ones.
 * GV_EINVAL with the reason otherwise.
 */
enum gv_code certs_verify(const struct certs_bundle *b, const struct certs_request *req, time_t now,
			  struct gv_err *err);

/* Facts about the first certificate of a PEM text. */
struct certs_info {
	time_t not_before, not_after; /* UTC seconds */
	bool is_ca;
	char subject[256]; /* the CN */
	char sans[1024];   /* "DNS:a, IP:127.0.0.1" (truncated) */
	int n_certs;	   /* certificates in the PEM text */
};

enum gv_code certs_info(const char *pem, struct certs_info *out, struct gv_err *err);

/* True when less than a third of the lifetime [not_before, not_after] remains at now. */
bool certs_due(const struct certs_info *info, time_t now);

/*
 * Writes tls.crt, tls.key, ca.crt and ca.key (those present in b) into dir,
 * creating dir (mode 0700) when it does not exist. Keys are mode 0600,
 * certificates 0644. Each file is written to a temporary name and renamed,
 * so readers never see half a file; the order is ca.crt, ca.key, tls.key,
 * tls.crt. GV_EIO naming the file on failure.
 */
enum gv_code certs_write_dir(const struct certs_bundle *b, const char *dir, struct gv_err *err);

/*
 * Reads the four files from dir into b (which it releases first); a missing
 * file (or directory) leaves its field NULL. GV_EIO on other read errors.
 */
enum gv_code certs_read_dir(const char *dir, struct certs_bundle *b, struct gv_err *err);

/*
 * The Secret holding b: type kubernetes.io/tls with data tls.crt, tls.key,
 * ca.crt, ca.key (base64), label app.kubernetes.io/managed-by=gavel. New
 * reference.
 */
json_t *certs_secret_new(const struct certs_bundle *b, const char *ns, const char *name);

/* Reads the four keys of a Secret's data into b (released first); absent keys stay NULL. */
enum gv_code certs_from_secret(const json_t *secret, struct certs_bundle *b, struct gv_err *err);

/*
 * Keeps the CA and serving pair in the Secret ns/name: creates it (POST)
 * when missing, else reads it, runs certs_ensure and writes it back (PUT
 * with the resourceVersion read) when anything changed; a 409 (someone else
 * wrote first) re-reads, at most 5 times. An existing Secret is only
 * rewritten when it carries the label app.kubernetes.io/managed-by=gavel
 * and has type kubernetes.io/tls. On GV_OK, out (may be NULL) holds the
 * material now stored and *changed (may be NULL) the CERTS_* bits.
 */
enum gv_code certs_secret_sync(struct kube_client *c, const char *ns, const char *name,
			       const struct certs_request *req, time_t now,
			       struct certs_bundle *out, unsigned *changed, struct gv_err *err);

/*
 * Sets webhooks[].clientConfig.caBundle = base64(ca_pem) in every webhook of
 * the ValidatingWebhookConfiguration `name` (admissionregistration.k8s.io/v1)
 * with GET + PUT carrying the resourceVersion (409 re-reads, at most 5
 * times). ca_pem is the whole CA bundle (certs_bundle.ca_crt: during a
 * rotation it holds the new and the old CA) and must hold at least one
 * certificate. No write when every caBundle already matches. *changed (may
 * be NULL) tells whether anything was written. GV_ENET with the Status
 * (NotFound, Forbidden...) on API errors, GV_EINVAL for a bad PEM or a
 * configuration without webhooks.
 */
enum gv_code certs_inject(struct kube_client *c, const char *name, const char *ca_pem,
			  bool *changed, struct gv_err *err);

#endif
