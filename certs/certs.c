/*
 * certs.c - CA and serving certificates with OpenSSL 3; files, Secret and
 * caBundle. Choices and their reasons are in certs.h.
 */
#include "certs/certs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/banned.h"

#define DAY	       86400L
#define BACKDATE       3600L
#define MAX_DAYS       36500
#define WRITE_ATTEMPTS 5
#define MANAGED_LABEL  "app.kubernetes.io/managed-by"
#define MANAGED_VALUE  "gavel"

void certs_bundle_release(struct certs_bundle *b)
{
	if (!b)
		return;
	free(b->ca_crt);
	if (b->ca_key) {
		OPENSSL_cleanse(b->ca_key, strlen(b->ca_key));
		free(b->ca_key);
	}
	free(b->tls_crt);
	if (b->tls_key) {
		OPENSSL_cleanse(b->tls_key, strlen(b->tls_key));
		free(b->tls_key);
	}
	memset(b, 0, sizeof(*b));
}

/* ---- OpenSSL helpers ---- */

/* Sets err from OpenSSL's error queue. */
static enum gv_code ssl_fail(struct gv_err *err, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "";

	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return gv_err_set(err, GV_EINTERNAL, "%s failed%s%s", what, *buf ? ": " : "", buf);
}

/* Every certificate of a PEM text (empty stack when none or pem is NULL). */
static STACK_OF(X509) * pem_certs(const char *pem)
{
	STACK_OF(X509) *sk = sk_X509_new_null();
	BIO *bio;
	X509 *x;

	if (!sk)
		abort();
	if (!pem)
		return sk;
	bio = BIO_new_mem_buf(pem, -1);
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)))
		sk_X509_push(sk, x);
	ERR_clear_error();
	BIO_free(bio);
	return sk;
}

static EVP_PKEY *pem_key(const char *pem)
{
	EVP_PKEY *k;
	BIO *bio;

	if (!pem)
		return NULL;
	bio = BIO_new_mem_buf(pem, -1);
	k = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	ERR_clear_error();
	BIO_free(bio);
	return k;
}

static char *bio_text(BIO *bio)
{
	char *p;
	long n = BIO_get_mem_data(bio, &p);

	return gv_xstrndup(p, (size_t)n);
}

static char *cert_pem(X509 *x)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *s;

	PEM_write_bio_X509(bio, x);
	s = bio_text(bio);
	BIO_free(bio);
	return s;
}

static char *certs_pem(STACK_OF(X509) * sk)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *s;

	for (int i = 0; i < sk_X509_num(sk); i++)
		PEM_write_bio_X509(bio, sk_X509_value(sk, i));
	s = bio_text(bio);
	BIO_free(bio);
	return s;
}

static char *key_pem(EVP_PKEY *k)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *p, *s;
	long n;

	PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
	n = BIO_get_mem_data(bio, &p);
	s = gv_xstrndup(p, (size_t)n);
	OPENSSL_cleanse(p, (size_t)n);
	BIO_free(bio);
	return s;
}

static time_t asn1_time(const ASN1_TIME *t)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
		return 0;
	return timegm(&tm);
}

static time_t not_after(X509 *x)
{
	return asn1_time(X509_get0_notAfter(x));
}

static time_t not_before(X509 *x)
{
	return asn1_time(X509_get0_notBefore(x));
}

static bool due(X509 *x, time_t now)
{
	struct certs_info i = {.not_before = not_before(x), .not_after = not_after(x)};

	return certs_due(&i, now) || now < i.not_before;
}

bool certs_due(const struct certs_info *info, time_t now)
{
	time_t life = info->not_after - info->not_before;

	if (life <= 0)
		return true;
	return now >= info->not_after - life / 3;
}

/* ---- the request: names ---- */

/* Requested SANs, validated and de-duplicated. */
struct names {
	char *dns[CERTS_MAX_SANS]; /* owned, lowercase */
	size_t n_dns;
	unsigned char ip[CERTS_MAX_SANS][16];
	size_t ip_len[CERTS_MAX_SANS];
	size_t n_ip;
	char cn[256];
};

static void names_release(struct names *n)
{
	for (size_t i = 0; i < n->n_dns; i++)
		free(n->dns[i]);
	n->n_dns = 0;
}

/* RFC 1123 DNS name: labels of [a-z0-9-], not starting or ending with '-', <= 63 chars. */
static bool dns_ok(const char *s)
{
	size_t len = strlen(s), label = 0;

	if (!len || len > 253)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char ch = s[i];

		if (ch == '.' || ch == '\0') {
			if (!label || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-'))
			return false;
		if (!label && ch == '-')
			return false;
		if (++label > 63)
			return false;
	}
	return true;
}

static enum gv_code add_dns(struct names *n, const char *name, struct gv_err *err)
{
	char *low;

	if (!dns_ok(name))
		return gv_err_set(err, GV_EINVAL, "\"%s\" is not a valid DNS name", name);
	low = gv_xstrdup(name);
	for (char *p = low; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	for (size_t i = 0; i < n->n_dns; i++)
		if (!strcmp(n->dns[i], low)) {
			free(low);
			return GV_OK;
		}
	if (n->n_dns + n->n_ip >= CERTS_MAX_SANS) {
		free(low);
		return gv_err_set(err, GV_EINVAL, "more than %d names", CERTS_MAX_SANS);
	}
	n->dns[n->n_dns++] = low;
	return GV_OK;
}

static enum gv_code add_ip(struct names *n, const char *ip, struct gv_err *err)
{
	unsigned char b[16];
	size_t len;

	if (inet_pton(AF_INET, ip, b) == 1)
		len = 4;
	else if (inet_pton(AF_INET6, ip, b) == 1)
		len = 16;
	else
		return gv_err_set(err, GV_EINVAL, "\"%s\" is not an IP address", ip);
	for (size_t i = 0; i < n->n_ip; i++)
		if (n->ip_len[i] == len && !memcmp(n->ip[i], b, len))
			return GV_OK;
	if (n->n_dns + n->n_ip >= CERTS_MAX_SANS)
		return gv_err_set(err, GV_EINVAL, "more than %d names", CERTS_MAX_SANS);
	memcpy(n->ip[n->n_ip], b, len);
	n->ip_len[n->n_ip++] = len;
	return GV_OK;
}

static enum gv_code names_from(const struct certs_request *req, struct names *n, struct gv_err *err)
{
	enum gv_code rc = GV_OK;
	char *s;

	memset(n, 0, sizeof(*n));
	if (req->service) {
		static const char *const suffixes[] = {NULL, "", ".svc", ".svc.cluster.local"};

		if (!req->namespace || !*req->namespace)
			return gv_err_set(err, GV_EINVAL, "a service needs a namespace");
		if (!dns_ok(req->service) || strchr(req->service, '.'))
			return gv_err_set(err, GV_EINVAL, "\"%s\" is not a valid Service name",
					  req->service);
		if (!dns_ok(req->namespace) || strchr(req->namespace, '.'))
			return gv_err_set(err, GV_EINVAL, "\"%s\" is not a valid namespace",
					  req->namespace);
		for (size_t i = 0; i < GV_ARRAY_LEN(suffixes) && !rc; i++) {
			s = suffixes[i]
				? gv_xasprintf("%s.%s%s", req->service, req->namespace, suffixes[i])
				: gv_xstrdup(req->service);
			rc = add_dns(n, s, err);
			free(s);
		}
		snprintf(n->cn, sizeof(n->cn), "%s.%s.svc", req->service, req->namespace);
	}
	for (size_t i = 0; i < req->n_dns && !rc; i++)
		rc = add_dns(n, req->dns[i], err);
	for (size_t i = 0; i < req->n_ips && !rc; i++)
		rc = add_ip(n, req->ips[i], err);
	if (!rc && !n->n_dns && !n->n_ip)
		rc = gv_err_set(err, GV_EINVAL, "no names: give a service or DNS names or IPs");
	if (!rc && !n->cn[0]) {
		if (n->n_dns)
			snprintf(n->cn, sizeof(n->cn), "%s", n->dns[0]);
		else
			inet_ntop(n->ip_len[0] == 4 ? AF_INET : AF_INET6, n->ip[0], n->cn,
				  sizeof(n->cn));
	}
	if (rc)
		names_release(n);
	return rc;
}

/* True when x's SANs are exactly the requested names. */
static bool sans_match(X509 *x, const struct names *n)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	bool dns_seen[CERTS_MAX_SANS] = {0}, ip_seen[CERTS_MAX_SANS] = {0};
	bool ok = gens != NULL;
	size_t seen = 0;

	for (int i = 0; ok && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		bool found = false;

		if (g->type == GEN_DNS) {
			const unsigned char *d = ASN1_STRING_get0_data(g->d.dNSName);
			size_t len = (size_t)ASN1_STRING_length(g->d.dNSName);

			for (size_t j = 0; j < n->n_dns && !found; j++)
				if (strlen(n->dns[j]) == len &&
				    !strncasecmp(n->dns[j], (const char *)d, len)) {
					found = true;
					seen += !dns_seen[j];
					dns_seen[j] = true;
				}
		} else if (g->type == GEN_IPADD) {
			const unsigned char *d = ASN1_STRING_get0_data(g->d.iPAddress);
			size_t len = (size_t)ASN1_STRING_length(g->d.iPAddress);

			for (size_t j = 0; j < n->n_ip && !found; j++)
				if (n->ip_len[j] == len && !memcmp(n->ip[j], d, len)) {
					found = true;
					seen += !ip_seen[j];
					ip_seen[j] = true;
				}
		}
		ok = found;
	}
	GENERAL_NAMES_free(gens);
	ERR_clear_error();
	return ok && seen == n->n_dns + n->n_ip;
}

/* ---- making certificates ---- */

static EVP_PKEY *new_key(void)
{
	return EVP_EC_gen("P-256");
}

static bool add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
	bool ok = e && X509_add_ext(x, e, -1);

	X509_EXTENSION_free(e);
	return ok;
}

static bool add_sans(X509 *x, const struct names *n)
{
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	bool ok = gens != NULL;

	for (size_t i = 0; ok && i < n->n_dns; i++) {
		GENERAL_NAME *g = GENERAL_NAME_new();
		ASN1_IA5STRING *s = ASN1_IA5STRING_new();

		ok = g && s && ASN1_STRING_set(s, n->dns[i], (int)strlen(n->dns[i]));
		if (ok) {
			GENERAL_NAME_set0_value(g, GEN_DNS, s);
			s = NULL;
			ok = sk_GENERAL_NAME_push(gens, g) > 0;
			if (ok)
				g = NULL;
		}
		ASN1_IA5STRING_free(s);
		GENERAL_NAME_free(g);
	}
	for (size_t i = 0; ok && i < n->n_ip; i++) {
		GENERAL_NAME *g = GENERAL_NAME_new();
		ASN1_OCTET_STRING *s = ASN1_OCTET_STRING_new();

		ok = g && s && ASN1_OCTET_STRING_set(s, n->ip[i], (int)n->ip_len[i]);
		if (ok) {
			GENERAL_NAME_set0_value(g, GEN_IPADD, s);
			s = NULL;
			ok = sk_GENERAL_NAME_push(gens, g) > 0;
			if (ok)
				g = NULL;
		}
		ASN1_OCTET_STRING_free(s);
		GENERAL_NAME_free(g);
	}
	ok = ok && X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1;
	GENERAL_NAMES_free(gens);
	return ok;
}

/*
 * A certificate for key `pub` named cn, valid [nb, na], signed by
 * issuer/issuer_key (NULL issuer = self-signed with issuer_key).
 */
static X509 *make_cert(const char *cn, EVP_PKEY *pub, X509 *issuer, EVP_PKEY *issuer_key, time_t nb,
		       time_t na, const struct names *sans)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	BIGNUM *serial = BN_new();
	X509V3_CTX ctx;
	bool ok = x && name && serial;

	ok = ok && X509_set_version(x, X509_VERSION_3);
	ok = ok && BN_rand(serial, 127, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) &&
	     BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x));
	ok = ok && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
					      (const unsigned char *)"gavel", -1, -1, 0);
	ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn,
					      -1, -1, 0);
	ok = ok && X509_set_subject_name(x, name);
	ok = ok && X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
	ok = ok && ASN1_TIME_set(X509_getm_notBefore(x), nb) &&
	     ASN1_TIME_set(X509_getm_notAfter(x), na);
	ok = ok && X509_set_pubkey(x, pub);
	if (ok) {
		X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
		if (!issuer) {
			ok = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE") &&
			     add_ext(x, &ctx, NID_key_usage,
				     "critical,digitalSignature,keyCertSign,cRLSign");
		} else {
			ok = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
			     add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") &&
			     add_ext(x, &ctx, NID_ext_key_usage, "serverAuth");
		}
		ok = ok && add_ext(x, &ctx, NID_subject_key_identifier, "hash") &&
		     add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always");
	}
	if (ok && sans)
		ok = add_sans(x, sans);
	ok = ok && X509_sign(x, issuer_key, EVP_sha256()) > 0;
	X509_NAME_free(name);
	BN_free(serial);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* Verifies leaf against ca at now for TLS server use; reason on failure. */
static bool verify_leaf(X509 *leaf, X509 *ca, time_t now, const char **why)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	bool ok = false;

	*why = "out of memory";
	if (store && ctx && X509_STORE_add_cert(store, ca) &&
	    X509_STORE_CTX_init(ctx, store, leaf, NULL)) {
		X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), now);
		X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
		ok = X509_verify_cert(ctx) == 1;
		if (!ok)
			*why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
	}
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	ERR_clear_error();
	return ok;
}

enum gv_code certs_verify(const struct certs_bundle *b, const struct certs_request *req, time_t now,
			  struct gv_err *err)
{
	STACK_OF(X509) *cas = pem_certs(b->ca_crt), *leafs = pem_certs(b->tls_crt);
	EVP_PKEY *key = pem_key(b->tls_key);
	struct names n = {0};
	const char *why;
	enum gv_code rc = GV_OK;

	if (!sk_X509_num(cas)) {
		rc = gv_err_set(err, GV_EINVAL, "no CA certificate");
		goto out;
	}
	if (!sk_X509_num(leafs)) {
		rc = gv_err_set(err, GV_EINVAL, "no serving certificate");
		goto out;
	}
	if (!key || X509_check_private_key(sk_X509_value(leafs, 0), key) != 1) {
		ERR_clear_error();
		rc = gv_err_set(err, GV_EINVAL, "the serving key does not match the certificate");
		goto out;
	}
	if (!verify_leaf(sk_X509_value(leafs, 0), sk_X509_value(cas, 0), now, &why)) {
		rc = gv_err_set(err, GV_EINVAL, "the serving certificate does not verify: %s", why);
		goto out;
	}
	if (req) {
		if ((rc = names_from(req, &n, err)))
			goto out;
		if (!sans_match(sk_X509_value(leafs, 0), &n))
			rc = gv_err_set(err, GV_EINVAL,
					"the serving certificate's names differ from the request");
	}
out:
	names_release(&n);
	sk_X509_pop_free(cas, X509_free);
	sk_X509_pop_free(leafs, X509_free);
	EVP_PKEY_free(key);
	return rc;
}

enum gv_code certs_ensure(struct certs_bundle *b, const struct certs_request *req, time_t now,
			  unsigned *changed, struct gv_err *err)
{
	STACK_OF(X509) *cas = NULL, *keep = NULL, *leafs = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	X509 *ca = NULL, *leaf = NULL;
	struct names n = {0};
	unsigned ch = 0;
	int ca_days = req->ca_days ? req->ca_days : CERTS_CA_DAYS;
	int days = req->days ? req->days : CERTS_DAYS;
	enum gv_code rc;
	bool need_serving;

	if (changed)
		*changed = 0;
	if (ca_days < 1 || ca_days > MAX_DAYS || days < 1 || days > MAX_DAYS)
		return gv_err_set(err, GV_EINVAL, "lifetimes must be 1..%d days", MAX_DAYS);
	if ((rc = names_from(req, &n, err)))
		return rc;
	ERR_clear_error();
	cas = pem_certs(b->ca_crt);
	ca_key = pem_key(b->ca_key);
	keep = sk_X509_new_null();
	if (!sk_X509_num(cas) || !ca_key ||
	    X509_check_private_key(sk_X509_value(cas, 0), ca_key) != 1 ||
	    X509_check_ca(sk_X509_value(cas, 0)) < 1 || due(sk_X509_value(cas, 0), now)) {
		/* A new CA; the old ones that still work stay behind it. */
		ERR_clear_error();
		EVP_PKEY_free(ca_key);
		if (!(ca_key = new_key())) {
			rc = ssl_fail(err, "CA key generation");
			goto out;
		}
		if (!(ca = make_cert("gavel-ca", ca_key, NULL, ca_key, now - BACKDATE,
				     now + (time_t)ca_days * DAY, NULL))) {
			rc = ssl_fail(err, "CA certificate");
			goto out;
		}
		X509_up_ref(ca);
		sk_X509_push(keep, ca);
		ch |= CERTS_NEW_CA;
	} else {
		ca = sk_X509_value(cas, 0);
		X509_up_ref(ca);
		X509_up_ref(ca);
		sk_X509_push(keep, ca);
		sk_X509_delete(cas, 0);
		X509_free(ca); /* the reference cas held */
	}
	for (int i = 0; i < sk_X509_num(cas); i++) {
		X509 *old = sk_X509_value(cas, i);

		if (sk_X509_num(keep) < CERTS_MAX_CAS && X509_check_ca(old) > 0 &&
		    not_after(old) > now && X509_cmp(old, ca)) {
			X509_up_ref(old);
			sk_X509_push(keep, old);
		} else if (!(ch & CERTS_NEW_CA)) {
			ch |= CERTS_PRUNED;
		}
	}
	ERR_clear_error();

	need_serving = (ch & CERTS_NEW_CA) != 0;
	if (!need_serving) {
		const char *why;

		leafs = pem_certs(b->tls_crt);
		key = pem_key(b->tls_key);
		need_serving = !sk_X509_num(leafs) || !key ||
			       X509_check_private_key(sk_X509_value(leafs, 0), key) != 1 ||
			       !verify_leaf(sk_X509_value(leafs, 0), ca, now, &why) ||
			       due(sk_X509_value(leafs, 0), now) ||
			       !sans_match(sk_X509_value(leafs, 0), &n);
		ERR_clear_error();
		EVP_PKEY_free(key);
		key = NULL;
	}
	if (need_serving) {
		time_t na = now + (time_t)days * DAY;

		if (na > not_after(ca))
			na = not_after(ca);
		if (!(key = new_key())) {
			rc = ssl_fail(err, "serving key generation");
			goto out;
		}
		if (!(leaf = make_cert(n.cn, key, ca, ca_key, now - BACKDATE, na, &n))) {
			rc = ssl_fail(err, "serving certificate");
			goto out;
		}
		ch |= CERTS_NEW_SERVING;
	}
	if (ch & (CERTS_NEW_CA | CERTS_PRUNED)) {
		free(b->ca_crt);
		b->ca_crt = certs_pem(keep);
	}
	if (ch & CERTS_NEW_CA) {
		if (b->ca_key)
			OPENSSL_cleanse(b->ca_key, strlen(b->ca_key));
		free(b->ca_key);
		b->ca_key = key_pem(ca_key);
	}
	if (ch & CERTS_NEW_SERVING) {
		free(b->tls_crt);
		b->tls_crt = cert_pem(leaf);
		if (b->tls_key)
			OPENSSL_cleanse(b->tls_key, strlen(b->tls_key));
		free(b->tls_key);
		b->tls_key = key_pem(key);
	}
	if (changed)
		*changed = ch;
out:
	names_release(&n);
	sk_X509_pop_free(cas, X509_free);
	sk_X509_pop_free(keep, X509_free);
	sk_X509_pop_free(leafs, X509_free);
	X509_free(ca);
	X509_free(leaf);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return rc;
}

enum gv_code certs_info(const char *pem, struct certs_info *out, struct gv_err *err)
{
	STACK_OF(X509) *sk = pem_certs(pem);
	GENERAL_NAMES *gens;
	struct gv_buf sans = {0};
	X509 *x;

	memset(out, 0, sizeof(*out));
	if (!sk_X509_num(sk)) {
		sk_X509_pop_free(sk, X509_free);
		return gv_err_set(err, GV_EINVAL, "no PEM certificate");
	}
	x = sk_X509_value(sk, 0);
	out->n_certs = sk_X509_num(sk);
	out->not_before = not_before(x);
	out->not_after = not_after(x);
	out->is_ca = X509_check_ca(x) > 0;
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out->subject,
				      sizeof(out->subject)) < 0)
		out->subject[0] = '\0';
	gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		const char *sep = sans.len ? ", " : "";

		if (g->type == GEN_DNS) {
			gv_buf_addf(&sans, "%sDNS:", sep);
			gv_buf_add(&sans, ASN1_STRING_get0_data(g->d.dNSName),
				   (size_t)ASN1_STRING_length(g->d.dNSName));
		} else if (g->type == GEN_IPADD) {
			char ip[INET6_ADDRSTRLEN] = "?";
			int len = ASN1_STRING_length(g->d.iPAddress);

			if (len == 4 || len == 16)
				inet_ntop(len == 4 ? AF_INET : AF_INET6,
					  ASN1_STRING_get0_data(g->d.iPAddress), ip, sizeof(ip));
			gv_buf_addf(&sans, "%sIP:%s", sep, ip);
		}
	}
	snprintf(out->sans, sizeof(out->sans), "%s", gv_buf_str(&sans));
	gv_buf_release(&sans);
	GENERAL_NAMES_free(gens);
	sk_X509_pop_free(sk, X509_free);
	ERR_clear_error();
	return GV_OK;
}

/* ---- files ---- */

static enum gv_code write_file(const char *dir, const char *name, const char *data, mode_t mode,
			       struct gv_err *err)
{
	char *path = gv_xasprintf("%s/%s", dir, name);
	char *tmp = gv_xasprintf("%s/.%s.XXXXXX", dir, name);
	size_t len = strlen(data), off = 0;
	enum gv_code rc = GV_OK;
	int fd;

	fd = mkstemp(tmp); /* mode 0600 */
	if (fd < 0) {
		rc = gv_err_set(err, GV_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = gv_err_set(err, GV_EIO, "%s: %s", path, strerror(errno));
			break;
		}
		off += (size_t)w;
	}
	if (!rc && fchmod(fd, mode))
		rc = gv_err_set(err, GV_EIO, "%s: chmod: %s", path, strerror(errno));
	if (!rc && fsync(fd))
		rc = gv_err_set(err, GV_EIO, "%s: fsync: %s", path, strerror(errno));
	if (close(fd) && !rc)
		rc = gv_err_set(err, GV_EIO, "%s: %s", path, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = gv_err_set(err, GV_EIO, "%s: %s", path, strerror(errno));
	if (rc)
		unlink(tmp);
out:
	free(path);
	free(tmp);
	return rc;
}

enum gv_code certs_write_dir(const struct certs_bundle *b, const char *dir, struct gv_err *err)
{
	struct stat sb;
	enum gv_code rc = GV_OK;

	if (stat(dir, &sb)) {
		if (errno != ENOENT || mkdir(dir, 0700))
			return gv_err_set(err, GV_EIO, "%s: %s", dir, strerror(errno));
	} else if (!S_ISDIR(sb.st_mode)) {
		return gv_err_set(err, GV_EIO, "%s: not a directory", dir);
	}
	if (b->ca_crt && (rc = write_file(dir, CERTS_CA_CRT, b->ca_crt, 0644, err)))
		return rc;
	if (b->ca_key && (rc = write_file(dir, CERTS_CA_KEY, b->ca_key, 0600, err)))
		return rc;
	if (b->tls_key && (rc = write_file(dir, CERTS_TLS_KEY, b->tls_key, 0600, err)))
		return rc;
	if (b->tls_crt && (rc = write_file(dir, CERTS_TLS_CRT, b->tls_crt, 0644, err)))
		return rc;
	return GV_OK;
}

static enum gv_code read_one(const char *dir, const char *name, char **out, struct gv_err *err)
{
	char *path = gv_xasprintf("%s/%s", dir, name);
	struct gv_err lerr = {0};
	size_t len;
	enum gv_code rc;

	rc = gv_read_file(path, out, &len, &lerr);
	free(path);
	if (rc == GV_ENOENT || (rc && errno == ENOTDIR)) {
		*out = NULL;
		return GV_OK;
	}
	if (rc)
		return gv_err_set(err, rc, "%s", lerr.msg);
	return GV_OK;
}

enum gv_code certs_read_dir(const char *dir, struct certs_bundle *b, struct gv_err *err)
{
	enum gv_code rc;

	certs_bundle_release(b);
	if ((rc = read_one(dir, CERTS_CA_CRT, &b->ca_crt, err)) ||
	    (rc = read_one(dir, CERTS_CA_KEY, &b->ca_key, err)) ||
	    (rc = read_one(dir, CERTS_TLS_CRT, &b->tls_crt, err)) ||
	    (rc = read_one(dir, CERTS_TLS_KEY, &b->tls_key, err)))
		certs_bundle_release(b);
	return rc;
}

/* ---- Secret ---- */

json_t *certs_secret_new(const struct certs_bundle *b, const char *ns, const char *name)
{
	json_t *data = json_object();
	const struct {
		const char *key, *val;
	} kv[] = {{CERTS_TLS_CRT, b->tls_crt},
		  {CERTS_TLS_KEY, b->tls_key},
		  {CERTS_CA_CRT, b->ca_crt},
		  {CERTS_CA_KEY, b->ca_key}};

	for (size_t i = 0; i < GV_ARRAY_LEN(kv); i++) {
		char *enc = kube_base64_encode(kv[i].val ? kv[i].val : "",
					       kv[i].val ? strlen(kv[i].val) : 0);

		json_object_set_new(data, kv[i].key, json_string(enc));
		free(enc);
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:o}", "apiVersion", "v1", "kind",
			 "Secret", "metadata", "name", name, "namespace", ns, "labels",
			 MANAGED_LABEL, MANAGED_VALUE, "type", "kubernetes.io/tls", "data", data);
}

enum gv_code certs_from_secret(const json_t *secret, struct certs_bundle *b, struct gv_err *err)
{
	const json_t *data = json_object_get(secret, "data");
	const char *keys[] = {CERTS_TLS_CRT, CERTS_TLS_KEY, CERTS_CA_CRT, CERTS_CA_KEY};
	char **fields[] = {&b->tls_crt, &b->tls_key, &b->ca_crt, &b->ca_key};
	enum gv_code rc = GV_OK;

	certs_bundle_release(b);
	for (size_t i = 0; i < GV_ARRAY_LEN(keys) && !rc; i++) {
		const char *v = json_string_value(json_object_get(data, keys[i]));

		if (!v || !*v)
			continue;
		if ((rc = kube_base64_decode(v, fields[i], NULL, err)))
			gv_err_prefix(err, "Secret data %s: ", keys[i]);
	}
	if (rc)
		certs_bundle_release(b);
	return rc;
}

enum gv_code certs_secret_sync(struct kube_client *c, const char *ns, const char *name,
			       const struct certs_request *req, time_t now,
			       struct certs_bundle *out, unsigned *changed, struct gv_err *err)
{
	char *ens = kube_escape(ns), *ename = kube_escape(name);
	char *path = gv_xasprintf("/api/v1/namespaces/%s/secrets/%s", ens, ename);
	char *coll = gv_xasprintf("/api/v1/namespaces/%s/secrets", ens);
	struct certs_bundle b = {0};
	enum gv_code rc = GV_ENET;
	unsigned ch = 0;

	if (changed)
		*changed = 0;
	for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
		struct kube_status st;
		struct gv_err lerr = {0};
		json_t *sec = NULL, *obj = NULL;
		const char *label, *type;

		rc = kube_request(c, "GET", path, NULL, &sec, &st, &lerr);
		if (rc && st.http == 404) {
			certs_bundle_release(&b);
			if ((rc = certs_ensure(&b, req, now, &ch, err)))
				goto out;
			obj = certs_secret_new(&b, ns, name);
			rc = kube_request(c, "POST", coll, obj, NULL, &st, &lerr);
			json_decref(obj);
			if (rc && st.http == 409)
				continue; /* created by someone else meanwhile: read theirs */
			if (rc)
				gv_err_set(err, rc, "%s", lerr.msg);
			else
				gv_info("certs: created Secret %s/%s", ns, name);
			goto out;
		}
		if (rc) {
			gv_err_set(err, rc, "%s", lerr.msg);
			goto out;
		}
		if ((rc = certs_from_secret(sec, &b, err))) {
			gv_err_prefix(err, "Secret %s/%s: ", ns, name);
			json_decref(sec);
			goto out;
		}
		rc = certs_ensure(&b, req, now, &ch, err);
		if (rc || !ch) {
			json_decref(sec);
			goto out;
		}
		label = json_string_value(json_object_get(
		    json_object_get(json_object_get(sec, "metadata"), "labels"), MANAGED_LABEL));
		type = json_string_value(json_object_get(sec, "type"));
		if (!label || strcmp(label, MANAGED_VALUE) || !type ||
		    strcmp(type, "kubernetes.io/tls")) {
			rc = gv_err_set(err, GV_EINVAL,
					"Secret %s/%s needs renewal but is not a kubernetes.io/tls "
					"Secret labelled %s=%s: not touching it",
					ns, name, MANAGED_LABEL, MANAGED_VALUE);
			json_decref(sec);
			goto out;
		}
		obj = certs_secret_new(&b, ns, name);
		/* Keep the existing metadata (resourceVersion, other labels, annotations). */
		json_object_set(obj, "metadata", json_object_get(sec, "metadata"));
		json_decref(sec);
		rc = kube_request(c, "PUT", path, obj, NULL, &st, &lerr);
		json_decref(obj);
		if (rc && st.http == 409)
			continue;
		if (rc)
			gv_err_set(err, rc, "%s", lerr.msg);
		else
			gv_info("certs: updated Secret %s/%s:%s%s%s", ns, name,
				ch & CERTS_NEW_CA ? " new CA" : "",
				ch & CERTS_NEW_SERVING ? " new serving certificate" : "",
				ch & CERTS_PRUNED ? " expired CA dropped" : "");
		goto out;
	}
	rc = gv_err_set(err, GV_ENET, "Secret %s/%s: still conflicting after %d attempts", ns, name,
			WRITE_ATTEMPTS);
out:
	if (!rc && changed)
		*changed = ch;
	if (!rc && out) {
		certs_bundle_release(out);
		*out = b;
		memset(&b, 0, sizeof(b));
	}
	certs_bundle_release(&b);
	free(ens);
	free(ename);
	free(path);
	free(coll);
	return rc;
}

/* ---- caBundle ---- */

enum gv_code certs_inject(struct kube_client *c, const char *name, const char *ca_pem,
			  bool *changed, struct gv_err *err)
{
	STACK_OF(X509) *sk = pem_certs(ca_pem);
	char *ename = kube_escape(name), *path = NULL, *b64 = NULL;
	enum gv_code rc = GV_OK;

	if (changed)
		*changed = false;
	if (!sk_X509_num(sk)) {
		rc = gv_err_set(err, GV_EINVAL, "CA bundle: no PEM certificate");
		goto out;
	}
	b64 = kube_base64_encode(ca_pem, strlen(ca_pem));
	path = gv_xasprintf(
	    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/%s", ename);
	for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
		struct kube_status st;
		struct gv_err lerr = {0};
		json_t *cfg = NULL, *hooks, *hook;
		size_t i, n = 0;

		if ((rc = kube_request(c, "GET", path, NULL, &cfg, &st, &lerr))) {
			if (st.http == 404)
				gv_err_set(err, rc, "ValidatingWebhookConfiguration %s not found",
					   name);
			else
				gv_err_set(err, rc, "%s", lerr.msg);
			goto out;
		}
		hooks = json_object_get(cfg, "webhooks");
		if (!json_array_size(hooks)) {
			json_decref(cfg);
			rc = gv_err_set(err, GV_EINVAL,
					"ValidatingWebhookConfiguration %s has no webhooks", name);
			goto out;
		}
		json_array_foreach(hooks, i, hook)
		{
			json_t *cc = json_object_get(hook, "clientConfig");
			const char *cur;

			if (!json_is_object(cc)) {
				cc = json_object();
				json_object_set_new(hook, "clientConfig", cc);
			}
			cur = json_string_value(json_object_get(cc, "caBundle"));
			if (cur && !strcmp(cur, b64))
				continue;
			json_object_set_new(cc, "caBundle", json_string(b64));
			n++;
		}
		if (!n) {
			json_decref(cfg);
			goto out;
		}
		rc = kube_request(c, "PUT", path, cfg, NULL, &st, &lerr);
		json_decref(cfg);
		if (rc && st.http == 409)
			continue;
		if (rc) {
			gv_err_set(err, rc, "%s", lerr.msg);
			goto out;
		}
		gv_info("certs: caBundle set in %zu webhook(s) of %s", n, name);
		if (changed)
			*changed = true;
		goto out;
	}
	rc = gv_err_set(err, GV_ENET,
			"ValidatingWebhookConfiguration %s: still conflicting after %d attempts",
			name, WRITE_ATTEMPTS);
out:
	sk_X509_pop_free(sk, X509_free);
	free(ename);
	free(path);
	free(b64);
	return rc;
}
