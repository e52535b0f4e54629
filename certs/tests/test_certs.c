/*
 * Unit tests for certs/: generation (SANs, key type, lifetimes, chain
 * verification with X509_verify_cert), idempotence and renewal (time moved
 * forward: serving renewal, CA rotation keeping the old CA, pruning), bad
 * requests, files (modes 0600/0644, read back, unwritable directory), the
 * Secret shape, TLS with the kube client against an in-process HTTPS server
 * (CA from data and from a file, a wrong CA, a client certificate from
 * data), and Secret sync / caBundle injection against a fake API server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "certs/certs.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "kube/tests/httpd.h"

#include "common/banned.h"

#define DAY 86400L

static const char *const IPS[] = {"127.0.0.1", "::1"};
static const struct certs_request REQ = {
    .service = "gavel", .namespace = "gavel-system", .ips = IPS, .n_ips = 2};

static time_t t0;
static char tmpdir[256];

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gavel-certs-test-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int teardown_tmp(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd)) {
		/* best effort */
	}
	return 0;
}

static X509 *first_cert(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);

	BIO_free(bio);
	assert_non_null(x);
	return x;
}

static int count_certs(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int n = 0;

	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		n++;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(bio);
	return n;
}

static EVP_PKEY *key_of(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);

	BIO_free(bio);
	assert_non_null(k);
	return k;
}

/* Verifies the serving certificate against every CA of the bundle with X509_verify_cert. */
static int verify_chain(const char *ca_pem, const char *leaf_pem, time_t at)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	BIO *bio = BIO_new_mem_buf(ca_pem, -1);
	X509 *leaf = first_cert(leaf_pem), *x;
	int ok;

	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		X509_STORE_add_cert(store, x);
		X509_free(x);
	}
	ERR_clear_error();
	X509_STORE_CTX_init(ctx, store, leaf, NULL);
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	ok = X509_verify_cert(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(leaf);
	BIO_free(bio);
	return ok;
}

static time_t asn1(const ASN1_TIME *t)
{
	struct tm tm = {0};

	assert_int_equal(ASN1_TIME_to_tm(t, &tm), 1);
	return timegm(&tm);
}

static void test_generate(void **state)
{
	struct certs_bundle b = {0};
	struct gv_err err = {0};
	unsigned ch = 99;
	X509 *ca, *leaf;
	EVP_PKEY *k;
	GENERAL_NAMES *gens;
	char group[64];
	size_t glen;
	struct certs_info info;

	(void)state;
	assert_int_equal(certs_ensure(&b, &REQ, t0, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_NEW_CA | CERTS_NEW_SERVING);
	assert_non_null(b.ca_crt);
	assert_non_null(b.ca_key);
	assert_non_null(b.tls_crt);
	assert_non_null(b.tls_key);
	assert_non_null(strstr(b.tls_key, "-----BEGIN PRIVATE KEY-----"));

	ca = first_cert(b.ca_crt);
	leaf = first_cert(b.tls_crt);
	/* keys: ECDSA P-256 */
	k = key_of(b.tls_key);
	assert_int_equal(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_group_name(k, group, sizeof(group), &glen), 1);
	assert_string_equal(group, "prime256v1");
	assert_int_equal(X509_check_private_key(leaf, k), 1);
	EVP_PKEY_free(k);
	k = key_of(b.ca_key);
	assert_int_equal(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
	assert_int_equal(X509_check_private_key(ca, k), 1);
	EVP_PKEY_free(k);
	/* roles */
	assert_true(X509_check_ca(ca) > 0);
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_true(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
	/* lifetimes: back-dated 1 h; CA 10 years, serving 1 year */
	assert_int_equal(asn1(X509_get0_notBefore(ca)), t0 - 3600);
	assert_int_equal(asn1(X509_get0_notAfter(ca)), t0 + 3650 * DAY);
	assert_int_equal(asn1(X509_get0_notAfter(leaf)), t0 + 365 * DAY);
	/* SANs: exactly the Service names and the IPs */
	gens = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	assert_int_equal(sk_GENERAL_NAME_num(gens), 6);
	GENERAL_NAMES_free(gens);
	assert_int_equal(X509_check_host(leaf, "gavel", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "gavel.gavel-system", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "gavel.gavel-system.svc", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "gavel.gavel-system.svc.cluster.local", 0, 0, NULL),
			 1);
	assert_int_equal(X509_check_host(leaf, "other.gavel-system.svc", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(leaf, "::1", 0), 1);
	assert_int_equal(X509_check_ip_asc(leaf, "10.0.0.1", 0), 0);
	/* the chain verifies now, not before notBefore, not after expiry */
	assert_int_equal(verify_chain(b.ca_crt, b.tls_crt, t0), 1);
	assert_int_equal(verify_chain(b.ca_crt, b.tls_crt, t0 - 2 * 3600), 0);
	assert_int_equal(verify_chain(b.ca_crt, b.tls_crt, t0 + 366 * DAY), 0);
	assert_int_equal(certs_verify(&b, &REQ, t0, &err), GV_OK);
	/* info */
	assert_int_equal(certs_info(b.tls_crt, &info, &err), GV_OK);
	assert_string_equal(info.subject, "gavel.gavel-system.svc");
	assert_false(info.is_ca);
	assert_string_equal(info.sans,
			    "DNS:gavel, DNS:gavel.gavel-system, DNS:gavel.gavel-system.svc, "
			    "DNS:gavel.gavel-system.svc.cluster.local, IP:127.0.0.1, IP:::1");
	assert_false(certs_due(&info, t0));
	assert_false(certs_due(&info, t0 + 240 * DAY));
	assert_true(certs_due(&info, t0 + 245 * DAY));
	assert_int_equal(certs_info(b.ca_crt, &info, &err), GV_OK);
	assert_true(info.is_ca);
	assert_int_equal(info.n_certs, 1);
	X509_free(ca);
	X509_free(leaf);
	certs_bundle_release(&b);
}

static void test_idempotent_and_renewal(void **state)
{
	struct certs_bundle b = {0};
	struct gv_err err = {0};
	char *ca1, *tls1, *tls2, *ca2;
	unsigned ch;

	(void)state;
	assert_int_equal(certs_ensure(&b, &REQ, t0, &ch, &err), GV_OK);
	ca1 = gv_xstrdup(b.ca_crt);
	tls1 = gv_xstrdup(b.tls_crt);
	/* nothing to do a day later */
	assert_int_equal(certs_ensure(&b, &REQ, t0 + DAY, &ch, &err), GV_OK);
	assert_int_equal(ch, 0);
	assert_string_equal(b.ca_crt, ca1);
	assert_string_equal(b.tls_crt, tls1);

	/* less than a third of the serving lifetime left: new serving, same CA */
	assert_int_equal(certs_ensure(&b, &REQ, t0 + 250 * DAY, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_NEW_SERVING);
	assert_string_equal(b.ca_crt, ca1);
	assert_string_not_equal(b.tls_crt, tls1);
	tls2 = gv_xstrdup(b.tls_crt);

	/* the CA is due: a new CA first in the bundle, the old one kept */
	assert_int_equal(certs_ensure(&b, &REQ, t0 + 2500 * DAY, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_NEW_CA | CERTS_NEW_SERVING);
	assert_int_equal(count_certs(b.ca_crt), 2);
	assert_non_null(strstr(b.ca_crt, ca1));
	assert_ptr_not_equal(strstr(b.ca_crt, ca1), b.ca_crt); /* old CA second */
	/* both the new serving certificate and one signed by the old CA verify with the bundle */
	assert_int_equal(verify_chain(b.ca_crt, b.tls_crt, t0 + 2500 * DAY), 1);
	assert_int_equal(certs_verify(&b, &REQ, t0 + 2500 * DAY, &err), GV_OK);
	ca2 = gv_xstrdup(b.ca_crt);

	/* an unchanged request later keeps both */
	assert_int_equal(certs_ensure(&b, &REQ, t0 + 2501 * DAY, &ch, &err), GV_OK);
	assert_int_equal(ch, 0);
	assert_string_equal(b.ca_crt, ca2);

	/* after the old CA expired it is dropped */
	assert_int_equal(certs_ensure(&b, &REQ, t0 + 3700 * DAY, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_PRUNED | CERTS_NEW_SERVING);
	assert_int_equal(count_certs(b.ca_crt), 1);
	assert_null(strstr(b.ca_crt, ca1));
	free(ca1);
	free(ca2);
	free(tls1);
	free(tls2);
	certs_bundle_release(&b);
}

static void test_reissue_on_change(void **state)
{
	struct certs_bundle b = {0}, other = {0};
	struct gv_err err = {0};
	struct certs_request req = REQ;
	const char *dns[] = {"webhook.example.dev"};
	char *ca1, *key;
	unsigned ch;

	(void)state;
	assert_int_equal(certs_ensure(&b, &REQ, t0, &ch, &err), GV_OK);
	ca1 = gv_xstrdup(b.ca_crt);
	/* new names: new serving certificate only */
	req.dns = dns;
	req.n_dns = 1;
	req.n_ips = 1;
	assert_int_equal(certs_ensure(&b, &req, t0, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_NEW_SERVING);
	assert_string_equal(b.ca_crt, ca1);
	assert_int_equal(certs_verify(&b, &req, t0, &err), GV_OK);
	gv_err_clear(&err);
	assert_int_equal(certs_verify(&b, &REQ, t0, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "names differ"));

	/* a key that does not match: reissued */
	assert_int_equal(certs_ensure(&other, &REQ, t0, &ch, &err), GV_OK);
	key = b.tls_key;
	b.tls_key = gv_xstrdup(other.tls_key);
	free(key);
	gv_err_clear(&err);
	assert_int_equal(certs_verify(&b, NULL, t0, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "does not match"));
	assert_int_equal(certs_ensure(&b, &req, t0, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_NEW_SERVING);

	/* a serving certificate from another CA: reissued */
	free(b.tls_crt);
	free(b.tls_key);
	b.tls_crt = gv_xstrdup(other.tls_crt);
	b.tls_key = gv_xstrdup(other.tls_key);
	gv_err_clear(&err);
	assert_int_equal(certs_verify(&b, NULL, t0, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "does not verify"));
	assert_int_equal(certs_ensure(&b, &req, t0, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_NEW_SERVING);

	/* the CA key lost: a new CA */
	free(b.ca_key);
	b.ca_key = NULL;
	assert_int_equal(certs_ensure(&b, &req, t0, &ch, &err), GV_OK);
	assert_int_equal(ch, CERTS_NEW_CA | CERTS_NEW_SERVING);
	free(ca1);
	certs_bundle_release(&b);
	certs_bundle_release(&other);
}

static void expect_bad_req(const struct certs_request *req, const char *needle)
{
	struct certs_bundle b = {0};
	struct gv_err err = {0};

	assert_int_equal(certs_ensure(&b, req, t0, NULL, &err), GV_EINVAL);
	if (!strstr(err.msg, needle))
		fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
	assert_null(b.ca_crt);
	certs_bundle_release(&b);
}

static void test_bad_requests(void **state)
{
	const char *bad_ip[] = {"127.0.0.300"};
	const char *bad_dns[] = {"-x.example"};
	const char *long_label[] = {
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b"};
	const char *many[CERTS_MAX_SANS + 1];
	struct certs_request r;

	(void)state;
	r = (struct certs_request){.service = "gavel"};
	expect_bad_req(&r, "needs a namespace");
	r = (struct certs_request){.service = "Bad_Name", .namespace = "ns"};
	expect_bad_req(&r, "not a valid Service name");
	r = (struct certs_request){.service = "a.b", .namespace = "ns"};
	expect_bad_req(&r, "not a valid Service name");
	r = (struct certs_request){.service = "s", .namespace = "n s"};
	expect_bad_req(&r, "not a valid namespace");
	r = (struct certs_request){0};
	expect_bad_req(&r, "no names");
	r = (struct certs_request){.ips = bad_ip, .n_ips = 1};
	expect_bad_req(&r, "not an IP address");
	r = (struct certs_request){.dns = bad_dns, .n_dns = 1};
	expect_bad_req(&r, "not a valid DNS name");
	r = (struct certs_request){.dns = long_label, .n_dns = 1};
	expect_bad_req(&r, "not a valid DNS name");
	r = (struct certs_request){.service = "s", .namespace = "n", .days = -1};
	expect_bad_req(&r, "lifetimes");
	for (int i = 0; i <= CERTS_MAX_SANS; i++)
		many[i] = gv_xasprintf("h%d.example", i);
	r = (struct certs_request){.dns = many, .n_dns = CERTS_MAX_SANS + 1};
	expect_bad_req(&r, "more than");
	for (int i = 0; i <= CERTS_MAX_SANS; i++)
		free((char *)many[i]);
}

static void test_ip_only_and_short_lifetimes(void **state)
{
	const char *ips[] = {"127.0.0.1", "127.0.0.1"};
	struct certs_request r = {.ips = ips, .n_ips = 2, .days = 2, .ca_days = 1};
	struct certs_bundle b = {0};
	struct certs_info info;
	unsigned ch;

	(void)state;
	assert_int_equal(certs_ensure(&b, &r, t0, &ch, NULL), GV_OK);
	assert_int_equal(certs_info(b.tls_crt, &info, NULL), GV_OK);
	assert_string_equal(info.subject, "127.0.0.1");
	assert_string_equal(info.sans, "IP:127.0.0.1");
	/* never past the CA */
	assert_int_equal(info.not_after, t0 + DAY);
	certs_bundle_release(&b);
}

static void test_files(void **state)
{
	struct certs_bundle b = {0}, back = {0};
	struct gv_err err = {0};
	struct stat sb;
	char dir[512], p[600];

	(void)state;
	assert_int_equal(certs_ensure(&b, &REQ, t0, NULL, &err), GV_OK);
	snprintf(dir, sizeof(dir), "%s/tls", tmpdir);
	/* reading a directory that does not exist yields nothing */
	assert_int_equal(certs_read_dir(dir, &back, &err), GV_OK);
	assert_null(back.ca_crt);
	assert_int_equal(certs_write_dir(&b, dir, &err), GV_OK);
	assert_int_equal(stat(dir, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	snprintf(p, sizeof(p), "%s/tls.key", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(p, sizeof(p), "%s/ca.key", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(p, sizeof(p), "%s/tls.crt", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	snprintf(p, sizeof(p), "%s/ca.crt", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	/* a key file that existed with a wide mode is narrowed on rewrite */
	snprintf(p, sizeof(p), "%s/tls.key", dir);
	assert_int_equal(chmod(p, 0666), 0);
	assert_int_equal(certs_write_dir(&b, dir, &err), GV_OK);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);

	assert_int_equal(certs_read_dir(dir, &back, &err), GV_OK);
	assert_string_equal(back.ca_crt, b.ca_crt);
	assert_string_equal(back.ca_key, b.ca_key);
	assert_string_equal(back.tls_crt, b.tls_crt);
	assert_string_equal(back.tls_key, b.tls_key);
	/* no temporary files left */
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) -eq 4", dir);
		assert_int_equal(system(cmd), 0);
	}
	/* a directory under a regular file cannot be written */
	snprintf(p, sizeof(p), "%s/tls.crt/sub", dir);
	assert_int_equal(certs_write_dir(&b, p, &err), GV_EIO);
	assert_non_null(strstr(err.msg, "tls.crt/sub"));
	certs_bundle_release(&b);
	certs_bundle_release(&back);
}

static void test_secret_shape(void **state)
{
	struct certs_bundle b = {0}, back = {0};
	json_t *s;
	char *dec;

	(void)state;
	assert_int_equal(certs_ensure(&b, &REQ, t0, NULL, NULL), GV_OK);
	s = certs_secret_new(&b, "gavel-system", "gavel-tls");
	assert_string_equal(json_string_value(json_object_get(s, "type")), "kubernetes.io/tls");
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "Secret");
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_object_get(s, "metadata"), "labels"),
				"app.kubernetes.io/managed-by")),
			    "gavel");
	assert_int_equal(kube_base64_decode(json_string_value(json_object_get(
						json_object_get(s, "data"), "tls.crt")),
					    &dec, NULL, NULL),
			 GV_OK);
	assert_string_equal(dec, b.tls_crt);
	free(dec);
	assert_int_equal(certs_from_secret(s, &back, NULL), GV_OK);
	assert_string_equal(back.ca_key, b.ca_key);
	assert_string_equal(back.tls_key, b.tls_key);
	json_object_set_new(json_object_get(s, "data"), "ca.key", json_string("%%%"));
	assert_int_equal(certs_from_secret(s, &back, NULL), GV_EINVAL);
	json_decref(s);
	certs_bundle_release(&b);
	certs_bundle_release(&back);
}

/* ---- TLS with the kube client ---- */

struct tls_state {
	atomic_bool saw_client_cert;
};

static void tls_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	struct tls_state *s = ud;
	X509 *peer = SSL_get1_peer_certificate(c->ssl);

	(void)r;
	if (peer)
		atomic_store(&s->saw_client_cert, true);
	X509_free(peer);
	httpd_respond(c, 200, NULL, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
}

static int accept_any(int ok, X509_STORE_CTX *ctx)
{
	(void)ok;
	(void)ctx;
	return 1;
}

static SSL_CTX *server_ctx(const struct certs_bundle *b)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	X509 *x = first_cert(b->tls_crt);
	EVP_PKEY *k = key_of(b->tls_key);

	assert_int_equal(SSL_CTX_use_certificate(ctx, x), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, k), 1);
	/* ask for a client certificate without requiring one */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any);
	X509_free(x);
	EVP_PKEY_free(k);
	return ctx;
}

static void test_tls_client(void **state)
{
	const char *ip[] = {"127.0.0.1"};
	struct certs_request r = {.ips = ip, .n_ips = 1};
	struct certs_bundle b = {0}, wrong = {0}, client = {0};
	struct tls_state ts = {0};
	SSL_CTX *ctx;
	struct httpd *srv;
	struct kube_config cfg = {0};
	struct kube_client *c;
	struct gv_err err = {0};
	struct kube_status st;
	char server[64], dir[512], ca_file[600];

	(void)state;
	assert_int_equal(certs_ensure(&b, &r, time(NULL), NULL, NULL), GV_OK);
	assert_int_equal(certs_ensure(&wrong, &r, time(NULL), NULL, NULL), GV_OK);
	assert_int_equal(certs_ensure(&client, &r, time(NULL), NULL, NULL), GV_OK);
	ctx = server_ctx(&b);
	srv = httpd_start(tls_handler, &ts, ctx);
	snprintf(server, sizeof(server), "https://127.0.0.1:%d", srv->port);
	cfg.server = server;

	/* CA from data */
	cfg.ca_data = b.ca_crt;
	c = kube_client_new(&cfg, &err);
	assert_non_null(c);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, &st, &err), GV_OK);
	assert_false(atomic_load(&ts.saw_client_cert));
	kube_client_free(c);

	/* CA from a file, client certificate and key from data */
	snprintf(dir, sizeof(dir), "%s/ca", tmpdir);
	assert_int_equal(certs_write_dir(&b, dir, &err), GV_OK);
	snprintf(ca_file, sizeof(ca_file), "%s/ca.crt", dir);
	cfg.ca_data = NULL;
	cfg.ca_file = ca_file;
	cfg.cert_data = client.tls_crt;
	cfg.key_data = client.tls_key;
	c = kube_client_new(&cfg, &err);
	assert_non_null(c);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, &st, &err), GV_OK);
	assert_true(atomic_load(&ts.saw_client_cert));
	kube_client_free(c);

	/* a client key that does not match its certificate is refused at once */
	cfg.key_data = client.ca_key;
	assert_null(kube_client_new(&cfg, &err));
	assert_non_null(strstr(err.msg, "does not match"));
	cfg.cert_data = cfg.key_data = NULL;

	/* the wrong CA: a TLS error, not retried */
	gv_err_clear(&err);
	cfg.ca_file = NULL;
	cfg.ca_data = wrong.ca_crt;
	c = kube_client_new(&cfg, &err);
	assert_non_null(c);
	kube_client_set_retries(c, 3, 1, 2);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, &st, &err), GV_ENET);
	assert_int_equal(st.http, 0);
	assert_non_null(strstr(err.msg, "certificate"));
	kube_client_free(c);

	/* insecure skips verification */
	cfg.insecure = true;
	c = kube_client_new(&cfg, &err);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, &st, NULL), GV_OK);
	kube_client_free(c);

	httpd_stop(srv);
	SSL_CTX_free(ctx);
	certs_bundle_release(&b);
	certs_bundle_release(&wrong);
	certs_bundle_release(&client);
}

/* ---- a fake API server: a map path -> object with resourceVersions ---- */

struct fake {
	pthread_mutex_t mu;
	json_t *objs; /* path -> object */
	int rv;
	atomic_int conflicts; /* answer 409 to this many PUTs first */
	atomic_int puts, posts;
};

static void fake_handler(struct httpd_conn *c, const struct httpd_req *r, void *ud)
{
	struct fake *f = ud;
	json_t *obj = NULL, *body = NULL;
	char *text = NULL;
	char path[2048];
	int code = 200;

	pthread_mutex_lock(&f->mu);
	if (!strcmp(r->method, "GET")) {
		obj = json_incref(json_object_get(f->objs, r->path));
		if (!obj)
			code = 404;
	} else if (!strcmp(r->method, "POST")) {
		atomic_fetch_add(&f->posts, 1);
		body = json_loads(r->body, 0, NULL);
		snprintf(
		    path, sizeof(path), "%s/%s", r->path,
		    json_string_value(json_object_get(json_object_get(body, "metadata"), "name")));
		if (json_object_get(f->objs, path)) {
			code = 409;
		} else {
			char rv[16];

			snprintf(rv, sizeof(rv), "%d", ++f->rv);
			json_object_set_new(json_object_get(body, "metadata"), "resourceVersion",
					    json_string(rv));
			json_object_set(f->objs, path, body);
			obj = json_incref(body);
			code = 201;
		}
	} else if (!strcmp(r->method, "PUT")) {
		json_t *cur = json_object_get(f->objs, r->path);
		const char *want, *have;

		atomic_fetch_add(&f->puts, 1);
		body = json_loads(r->body, 0, NULL);
		want = json_string_value(
		    json_object_get(json_object_get(body, "metadata"), "resourceVersion"));
		have = json_string_value(
		    json_object_get(json_object_get(cur, "metadata"), "resourceVersion"));
		if (!cur) {
			code = 404;
		} else if (atomic_fetch_sub(&f->conflicts, 1) > 0 || !want || strcmp(want, have)) {
			/* someone else wrote: bump the stored version */
			char rv[16];

			snprintf(rv, sizeof(rv), "%d", ++f->rv);
			json_object_set_new(json_object_get(cur, "metadata"), "resourceVersion",
					    json_string(rv));
			code = 409;
		} else {
			char rv[16];

			snprintf(rv, sizeof(rv), "%d", ++f->rv);
			json_object_set_new(json_object_get(body, "metadata"), "resourceVersion",
					    json_string(rv));
			json_object_set(f->objs, r->path, body);
			obj = json_incref(body);
		}
	}
	if (code == 404)
		text = gv_xstrdup("{\"kind\":\"Status\",\"reason\":\"NotFound\",\"message\":\"not "
				  "found\",\"code\":404}");
	else if (code == 409)
		text = gv_xstrdup("{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"the "
				  "object has been modified\",\"code\":409}");
	else
		text = json_dumps(obj, JSON_COMPACT);
	/* stored objects are shared: drop references under the lock */
	json_decref(obj);
	json_decref(body);
	pthread_mutex_unlock(&f->mu);
	httpd_respond(c, code, NULL, text);
	free(text);
}

static struct kube_client *fake_client(struct httpd *srv)
{
	struct kube_config cfg = {0};
	char server[64];
	struct kube_client *c;

	snprintf(server, sizeof(server), "http://127.0.0.1:%d", srv->port);
	cfg.server = server;
	c = kube_client_new(&cfg, NULL);
	kube_client_set_retries(c, 1, 1, 2);
	return c;
}

#define SECRET_PATH "/api/v1/namespaces/gavel-system/secrets/gavel-tls"
#define VWC_PATH    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/gavel"

static void test_secret_sync(void **state)
{
	struct fake f = {.objs = json_object()};
	struct httpd *srv;
	struct kube_client *c;
	struct certs_bundle b = {0}, b2 = {0};
	struct gv_err err = {0};
	unsigned ch;
	json_t *stored;

	(void)state;
	pthread_mutex_init(&f.mu, NULL);
	srv = httpd_start(fake_handler, &f, NULL);
	c = fake_client(srv);
	/* missing: created */
	assert_int_equal(certs_secret_sync(c, "gavel-system", "gavel-tls", &REQ, t0, &b, &ch, &err),
			 GV_OK);
	assert_int_equal(ch, CERTS_NEW_CA | CERTS_NEW_SERVING);
	assert_int_equal(atomic_load(&f.posts), 1);
	stored = json_object_get(f.objs, SECRET_PATH);
	assert_non_null(stored);
	assert_string_equal(json_string_value(json_object_get(stored, "type")),
			    "kubernetes.io/tls");
	/* present and current: read, nothing written */
	assert_int_equal(
	    certs_secret_sync(c, "gavel-system", "gavel-tls", &REQ, t0 + DAY, &b2, &ch, &err),
	    GV_OK);
	assert_int_equal(ch, 0);
	assert_string_equal(b2.tls_crt, b.tls_crt);
	assert_int_equal(atomic_load(&f.puts), 0);
	/* due: updated with PUT, after one conflict */
	atomic_store(&f.conflicts, 1);
	assert_int_equal(
	    certs_secret_sync(c, "gavel-system", "gavel-tls", &REQ, t0 + 300 * DAY, &b2, &ch, &err),
	    GV_OK);
	assert_int_equal(ch, CERTS_NEW_SERVING);
	assert_int_equal(atomic_load(&f.puts), 2);
	assert_string_equal(b2.ca_crt, b.ca_crt);
	assert_string_not_equal(b2.tls_crt, b.tls_crt);
	/* an unlabelled Secret is not rewritten */
	json_object_del(json_object_get(json_object_get(f.objs, SECRET_PATH), "metadata"),
			"labels");
	gv_err_clear(&err);
	assert_int_equal(
	    certs_secret_sync(c, "gavel-system", "gavel-tls", &REQ, t0 + 700 * DAY, &b2, &ch, &err),
	    GV_EINVAL);
	assert_non_null(strstr(err.msg, "not touching it"));
	kube_client_free(c);
	httpd_stop(srv);
	json_decref(f.objs);
	pthread_mutex_destroy(&f.mu);
	certs_bundle_release(&b);
	certs_bundle_release(&b2);
}

static void test_inject(void **state)
{
	struct fake f = {.objs = json_object()};
	struct httpd *srv;
	struct kube_client *c;
	struct certs_bundle b = {0};
	struct gv_err err = {0};
	json_t *hooks, *h;
	char *b64;
	bool changed;
	size_t i;

	(void)state;
	pthread_mutex_init(&f.mu, NULL);
	json_object_set_new(
	    f.objs, VWC_PATH,
	    json_pack("{s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:{s:s}}, {s:s, s:{s:s, s:s}}]}",
		      "apiVersion", "admissionregistration.k8s.io/v1", "kind",
		      "ValidatingWebhookConfiguration", "metadata", "name", "gavel",
		      "resourceVersion", "5", "webhooks", "name", "a.gavel.dev", "clientConfig",
		      "url", "https://127.0.0.1:9443/validate", "name", "b.gavel.dev",
		      "clientConfig", "url", "https://127.0.0.1:9443/validate", "caBundle",
		      "b2xk"));
	json_object_set_new(
	    f.objs, VWC_PATH "-empty",
	    json_pack("{s:{s:s, s:s}}", "metadata", "name", "gavel-empty", "resourceVersion", "1"));
	f.rv = 10;
	srv = httpd_start(fake_handler, &f, NULL);
	c = fake_client(srv);
	assert_int_equal(certs_ensure(&b, &REQ, t0, NULL, NULL), GV_OK);
	b64 = kube_base64_encode(b.ca_crt, strlen(b.ca_crt));

	atomic_store(&f.conflicts, 2);
	assert_int_equal(certs_inject(c, "gavel", b.ca_crt, &changed, &err), GV_OK);
	assert_true(changed);
	assert_int_equal(atomic_load(&f.puts), 3);
	hooks = json_object_get(json_object_get(f.objs, VWC_PATH), "webhooks");
	json_array_foreach(hooks, i, h) assert_string_equal(
	    json_string_value(json_object_get(json_object_get(h, "clientConfig"), "caBundle")),
	    b64);
	/* the other fields are untouched */
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_array_get(hooks, 0), "clientConfig"), "url")),
			    "https://127.0.0.1:9443/validate");
	/* again: nothing to write */
	assert_int_equal(certs_inject(c, "gavel", b.ca_crt, &changed, &err), GV_OK);
	assert_false(changed);
	assert_int_equal(atomic_load(&f.puts), 3);
	/* errors */
	gv_err_clear(&err);
	assert_int_equal(certs_inject(c, "missing", b.ca_crt, &changed, &err), GV_ENET);
	assert_string_equal(err.msg, "ValidatingWebhookConfiguration missing not found");
	gv_err_clear(&err);
	assert_int_equal(certs_inject(c, "gavel-empty", b.ca_crt, &changed, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "has no webhooks"));
	gv_err_clear(&err);
	assert_int_equal(certs_inject(c, "gavel", "not a pem", &changed, &err), GV_EINVAL);
	/* endless conflicts give up */
	gv_err_clear(&err);
	atomic_store(&f.conflicts, 100);
	assert_int_equal(certs_inject(c, "gavel", b.tls_crt, &changed, &err), GV_ENET);
	assert_non_null(strstr(err.msg, "still conflicting"));
	free(b64);
	kube_client_free(c);
	httpd_stop(srv);
	json_decref(f.objs);
	pthread_mutex_destroy(&f.mu);
	certs_bundle_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generate),
	    cmocka_unit_test(test_idempotent_and_renewal),
	    cmocka_unit_test(test_reissue_on_change),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_ip_only_and_short_lifetimes),
	    cmocka_unit_test_setup_teardown(test_files, setup_tmp, teardown_tmp),
	    cmocka_unit_test(test_secret_shape),
	    cmocka_unit_test_setup_teardown(test_tls_client, setup_tmp, teardown_tmp),
	    cmocka_unit_test(test_secret_sync),
	    cmocka_unit_test(test_inject),
	};

	gv_init();
	gv_log_setup(GV_LOG_WARN, 0);
	t0 = time(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
