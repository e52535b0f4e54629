/*
 * jp_fn_x509.c - x509_decode: a PEM certificate or CSR as Go's encoding/json
 * shows x509.Certificate.
 */
#include "engine/jp_fn_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/core_names.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* x509_decode: Go's x509.Certificate as encoding/json shows it          */

static json_t *b64_json(const unsigned char *p, size_t n)
{
	unsigned char *buf = gv_xmalloc(4 * ((n + 2) / 3) + 1);
	int len = EVP_EncodeBlock(buf, p, (int)n);
	json_t *v = json_stringn((const char *)buf, (size_t)len);

	free(buf);
	return v;
}

/* DER bytes from an i2d call (taken) as base64, or null when len <= 0. */
static json_t *der_json(unsigned char *der, int len)
{
	json_t *v = len > 0 ? b64_json(der, (size_t)len) : json_null();

	OPENSSL_free(der);
	return v;
}

static json_t *oid_json(const ASN1_OBJECT *obj)
{
	char buf[256], *p, *end;
	json_t *a = json_array();

	if (OBJ_obj2txt(buf, sizeof(buf), obj, 1) <= 0)
		return a;
	for (p = buf; *p;) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		json_array_append_new(a, json_integer(v));
		p = *end == '.' ? end + 1 : end;
	}
	return a;
}

static json_t *asn1_string_json(const ASN1_STRING *s)
{
	unsigned char *utf8 = NULL;
	int n = ASN1_STRING_to_UTF8(&utf8, s);
	json_t *v;

	if (n < 0)
		return json_string("");
	v = jp_string_lossy((const char *)utf8, (size_t)n);
	OPENSSL_free(utf8);
	return v;
}

/* pkix.Name */
static json_t *name_json(const X509_NAME *name)
{
	static const struct {
		int nid;
		const char *field;
	} fields[] = {
	    {NID_countryName, "Country"},
	    {NID_organizationName, "Organization"},
	    {NID_organizationalUnitName, "OrganizationalUnit"},
	    {NID_localityName, "Locality"},
	    {NID_stateOrProvinceName, "Province"},
	    {NID_streetAddress, "StreetAddress"},
	    {NID_postalCode, "PostalCode"},
	};
	json_t *o = json_object(), *names = json_array();
	int i, n = X509_NAME_entry_count(name);
	size_t f;

	for (f = 0; f < GV_ARRAY_LEN(fields); f++)
		json_object_set_new(o, fields[f].field, json_null());
	json_object_set_new(o, "SerialNumber", json_string(""));
	json_object_set_new(o, "CommonName", json_string(""));
	for (i = 0; i < n; i++) {
		const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
		const ASN1_OBJECT *obj = X509_NAME_ENTRY_get_object(e);
		json_t *val = asn1_string_json(X509_NAME_ENTRY_get_data(e)), *pair = json_object();
		int nid = OBJ_obj2nid(obj);

		json_object_set_new(pair, "Type", oid_json(obj));
		json_object_set(pair, "Value", val);
		json_array_append_new(names, pair);
		if (nid == NID_commonName)
			json_object_set(o, "CommonName", val);
		else if (nid == NID_serialNumber)
			json_object_set(o, "SerialNumber", val);
		for (f = 0; f < GV_ARRAY_LEN(fields); f++) {
			if (fields[f].nid != nid)
				continue;
			if (json_is_null(json_object_get(o, fields[f].field)))
				json_object_set_new(o, fields[f].field, json_array());
			json_array_append(json_object_get(o, fields[f].field), val);
		}
		json_decref(val);
	}
	json_object_set_new(o, "Names", names);
	json_object_set_new(o, "ExtraNames", json_null());
	return o;
}

static json_t *asn1_time_json(const ASN1_TIME *t)
{
	struct tm tm;
	char buf[64];

	if (!ASN1_TIME_to_tm(t, &tm))
		return json_null();
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return json_string(buf);
}

/* A big number as a JSON number (exact integer when it fits). */
static json_t *bn_number(const BIGNUM *bn)
{
	char *dec = BN_bn2dec(bn);
	json_t *v;
	long long ll;

	if (!dec)
		return json_null();
	if (value_parse_go_int(dec, &ll))
		v = json_integer(ll);
	else
		v = jp_number(strtod(dec, NULL));
	OPENSSL_free(dec);
	return v ? v : json_null();
}

static int go_sig_alg(int nid)
{
	switch (nid) {
	case NID_md2WithRSAEncryption:
		return 1;
	case NID_md5WithRSAEncryption:
		return 2;
	case NID_sha1WithRSAEncryption:
		return 3;
	case NID_sha256WithRSAEncryption:
		return 4;
	case NID_sha384WithRSAEncryption:
		return 5;
	case NID_sha512WithRSAEncryption:
		return 6;
	case NID_dsaWithSHA1:
		return 7;
	case NID_dsa_with_SHA256:
		return 8;
	case NID_ecdsa_with_SHA1:
		return 9;
	case NID_ecdsa_with_SHA256:
		return 10;
	case NID_ecdsa_with_SHA384:
		return 11;
	case NID_ecdsa_with_SHA512:
		return 12;
	case NID_rsassaPss:
		return 13; /* Go distinguishes the PSS hashes; SHA-256 is the common one */
	case NID_ED25519:
		return 16;
	default:
		return 0;
	}
}

static json_t *public_key_json(X509 *cert, int *alg)
{
	EVP_PKEY *pk = X509_get0_pubkey(cert);
	json_t *o;
	BIGNUM *n = NULL, *e = NULL, *x = NULL, *y = NULL;

	*alg = 0;
	if (!pk) /* a key OpenSSL cannot decode */
		return json_null();
	o = json_object();
	switch (EVP_PKEY_get_base_id(pk)) {
	case EVP_PKEY_RSA:
		*alg = 1;
		if (EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_N, &n) &&
		    EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_RSA_E, &e)) {
			char *dec = BN_bn2dec(n);
			json_object_set_new(o, "N", json_string(dec ? dec : ""));
			OPENSSL_free(dec);
			json_object_set_new(o, "E", bn_number(e));
		}
		break;
	case EVP_PKEY_DSA:
		*alg = 2;
		break;
	case EVP_PKEY_EC:
		*alg = 3;
		json_object_set_new(o, "Curve", json_object());
		if (EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_X, &x) &&
		    EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_Y, &y)) {
			json_object_set_new(o, "X", bn_number(x));
			json_object_set_new(o, "Y", bn_number(y));
		}
		break;
	case EVP_PKEY_ED25519:
		*alg = 4;
		{
			unsigned char raw[64];
			size_t len = sizeof(raw);

			json_decref(o);
			if (EVP_PKEY_get_raw_public_key(pk, raw, &len))
				return b64_json(raw, len);
			return json_null();
		}
	default:
		break;
	}
	BN_free(n);
	BN_free(e);
	BN_free(x);
	BN_free(y);
	return o;
}

static int go_key_usage(uint32_t ku)
{
	static const struct {
		uint32_t ossl;
		int go;
	} map[] = {
	    {KU_DIGITAL_SIGNATURE, 1}, {KU_NON_REPUDIATION, 2}, {KU_KEY_ENCIPHERMENT, 4},
	    {KU_DATA_ENCIPHERMENT, 8}, {KU_KEY_AGREEMENT, 16},	{KU_KEY_CERT_SIGN, 32},
	    {KU_CRL_SIGN, 64},	       {KU_ENCIPHER_ONLY, 128}, {KU_DECIPHER_ONLY, 256},
	};
	int r = 0;

	if (ku == UINT32_MAX)
		return 0;
	for (size_t i = 0; i < GV_ARRAY_LEN(map); i++)
		if (ku & map[i].ossl)
			r |= map[i].go;
	return r;
}

static json_t *ext_key_usage_json(X509 *cert)
{
	static const struct {
		int nid, go;
	} map[] = {
	    {NID_anyExtendedKeyUsage, 0}, {NID_server_auth, 1},	  {NID_client_auth, 2},
	    {NID_code_sign, 3},		  {NID_email_protect, 4}, {NID_ipsecEndSystem, 5},
	    {NID_ipsecTunnel, 6},	  {NID_ipsecUser, 7},	  {NID_time_stamp, 8},
	    {NID_OCSP_sign, 9},		  {NID_ms_sgc, 10},	  {NID_ns_sgc, 11},
	    {NID_ms_code_com, 12},
	};
	EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(cert, NID_ext_key_usage, NULL, NULL);
	json_t *a;
	int i;

	if (!eku)
		return json_null();
	a = json_array();
	for (i = 0; i < sk_ASN1_OBJECT_num(eku); i++) {
		int nid = OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, i));
		for (size_t k = 0; k < GV_ARRAY_LEN(map); k++)
			if (map[k].nid == nid)
				json_array_append_new(a, json_integer(map[k].go));
	}
	EXTENDED_KEY_USAGE_free(eku);
	return a;
}

/* *url.URL as encoding/json shows it, for a simple scheme://host/path?query#fragment. */
static json_t *url_json(const char *s)
{
	json_t *o = json_object();
	const char *p = strstr(s, "://"), *rest, *q, *h, *f;
	char *scheme = p ? gv_xstrndup(s, (size_t)(p - s)) : gv_xstrdup("");

	rest = p ? p + 3 : s;
	h = rest + strcspn(rest, "/?#");
	q = strchr(h, '?');
	f = strchr(h, '#');
	json_object_set_new(o, "Scheme", json_string(scheme));
	json_object_set_new(o, "Opaque", json_string(""));
	json_object_set_new(o, "User", json_null());
	json_object_set_new(o, "Host", json_stringn(rest, (size_t)(h - rest)));
	json_object_set_new(o, "Path", json_stringn(h, strcspn(h, "?#")));
	json_object_set_new(o, "RawPath", json_string(""));
	json_object_set_new(o, "OmitHost", json_false());
	json_object_set_new(o, "ForceQuery", json_false());
	json_object_set_new(o, "RawQuery",
			    q ? json_stringn(q + 1, strcspn(q + 1, "#")) : json_string(""));
	json_object_set_new(o, "Fragment", f ? json_string(f + 1) : json_string(""));
	json_object_set_new(o, "RawFragment", json_string(""));
	free(scheme);
	return o;
}

static json_t *ip_json(const ASN1_OCTET_STRING *ip)
{
	const unsigned char *b = ASN1_STRING_get0_data(ip);
	int n = ASN1_STRING_length(ip);
	char buf[64];

	if (n == 4) {
		snprintf(buf, sizeof(buf), "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	} else if (n == 16) {
		static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0,    0,
							   0, 0, 0, 0, 0xff, 0xff};
		unsigned g[8];
		int best = -1, best_len = 0, i, run;
		struct gv_buf t = {0};

		if (memcmp(b, v4mapped, 12) == 0) {
			snprintf(buf, sizeof(buf), "%u.%u.%u.%u", b[12], b[13], b[14], b[15]);
			return json_string(buf);
		}
		for (i = 0; i < 8; i++)
			g[i] = (unsigned)(b[2 * i] << 8 | b[2 * i + 1]);
		for (i = 0; i < 8; i += run ? run : 1) { /* longest run of zero groups, >= 2 */
			for (run = 0; i + run < 8 && g[i + run] == 0; run++)
				;
			if (run > best_len && run >= 2) {
				best = i;
				best_len = run;
			}
		}
		for (i = 0; i < 8; i++) {
			if (i == best) {
				gv_buf_adds(&t, "::");
				i += best_len - 1;
				continue;
			}
			if (t.len && t.data[t.len - 1] != ':')
				gv_buf_addc(&t, ':');
			gv_buf_addf(&t, "%x", g[i]);
		}
		snprintf(buf, sizeof(buf), "%s", gv_buf_str(&t));
		gv_buf_release(&t);
	} else {
		return json_null();
	}
	return json_string(buf);
}

/* Subject alternative names, split by kind as Go does. */
static void san_json(X509 *cert, json_t *o)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	json_t *dns = json_null(), *email = json_null(), *ips = json_null(), *uris = json_null();
	int i;

	for (i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		json_t **dst = NULL, *v = NULL;

		switch (g->type) {
		case GEN_DNS:
			dst = &dns;
			v = asn1_string_json(g->d.dNSName);
			break;
		case GEN_EMAIL:
			dst = &email;
			v = asn1_string_json(g->d.rfc822Name);
			break;
		case GEN_IPADD:
			dst = &ips;
			v = ip_json(g->d.iPAddress);
			break;
		case GEN_URI: {
			json_t *t = asn1_string_json(g->d.uniformResourceIdentifier);
			dst = &uris;
			v = url_json(json_string_value(t));
			json_decref(t);
			break;
		}
		default:
			continue;
		}
		if (json_is_null(*dst))
			*dst = json_array();
		json_array_append_new(*dst, v);
	}
	GENERAL_NAMES_free(gens);
	json_object_set_new(o, "DNSNames", dns);
	json_object_set_new(o, "EmailAddresses", email);
	json_object_set_new(o, "IPAddresses", ips);
	json_object_set_new(o, "URIs", uris);
}

static json_t *extensions_json(X509 *cert)
{
	int i, n = X509_get_ext_count(cert);
	json_t *a;

	if (n <= 0)
		return json_null();
	a = json_array();
	for (i = 0; i < n; i++) {
		X509_EXTENSION *ext = X509_get_ext(cert, i);
		ASN1_OCTET_STRING *data = X509_EXTENSION_get_data(ext);
		json_t *e = json_object();

		json_object_set_new(e, "Id", oid_json(X509_EXTENSION_get_object(ext)));
		json_object_set_new(e, "Critical", json_boolean(X509_EXTENSION_get_critical(ext)));
		json_object_set_new(
		    e, "Value",
		    b64_json(ASN1_STRING_get0_data(data), (size_t)ASN1_STRING_length(data)));
		json_array_append_new(a, e);
	}
	return a;
}

static json_t *access_json(X509 *cert, int method_nid)
{
	AUTHORITY_INFO_ACCESS *aia = X509_get_ext_d2i(cert, NID_info_access, NULL, NULL);
	json_t *a = json_null();
	int i;

	for (i = 0; aia && i < sk_ACCESS_DESCRIPTION_num(aia); i++) {
		ACCESS_DESCRIPTION *ad = sk_ACCESS_DESCRIPTION_value(aia, i);

		if (OBJ_obj2nid(ad->method) != method_nid || ad->location->type != GEN_URI)
			continue;
		if (json_is_null(a))
			a = json_array();
		json_array_append_new(a,
				      asn1_string_json(ad->location->d.uniformResourceIdentifier));
	}
	AUTHORITY_INFO_ACCESS_free(aia);
	return a;
}

static json_t *crl_json(X509 *cert)
{
	CRL_DIST_POINTS *dps = X509_get_ext_d2i(cert, NID_crl_distribution_points, NULL, NULL);
	json_t *a = json_null();
	int i, j;

	for (i = 0; dps && i < sk_DIST_POINT_num(dps); i++) {
		DIST_POINT *dp = sk_DIST_POINT_value(dps, i);

		if (!dp->distpoint || dp->distpoint->type != 0)
			continue;
		for (j = 0; j < sk_GENERAL_NAME_num(dp->distpoint->name.fullname); j++) {
			GENERAL_NAME *g = sk_GENERAL_NAME_value(dp->distpoint->name.fullname, j);
			if (g->type != GEN_URI)
				continue;
			if (json_is_null(a))
				a = json_array();
			json_array_append_new(a, asn1_string_json(g->d.uniformResourceIdentifier));
		}
	}
	CRL_DIST_POINTS_free(dps);
	return a;
}

static json_t *policies_json(X509 *cert)
{
	CERTIFICATEPOLICIES *pol = X509_get_ext_d2i(cert, NID_certificate_policies, NULL, NULL);
	json_t *a = json_null();
	int i;

	for (i = 0; pol && i < sk_POLICYINFO_num(pol); i++) {
		if (json_is_null(a))
			a = json_array();
		json_array_append_new(a, oid_json(sk_POLICYINFO_value(pol, i)->policyid));
	}
	CERTIFICATEPOLICIES_free(pol);
	return a;
}

static json_t *octets_or_null(const ASN1_OCTET_STRING *s)
{
	if (!s)
		return json_null();
	return b64_json(ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s));
}

static json_t *x509_object(X509 *cert)
{
	json_t *o = json_object();
	const ASN1_BIT_STRING *sig = NULL;
	const X509_ALGOR *sigalg = NULL;
	const ASN1_OBJECT *algobj = NULL;
	BIGNUM *serial;
	uint32_t flags;
	unsigned char *der = NULL;
	long pathlen;
	int alg, len;

	len = i2d_X509(cert, &der);
	json_object_set_new(o, "Raw", der_json(der, len));
	der = NULL;
	len = i2d_re_X509_tbs(cert, &der);
	json_object_set_new(o, "RawTBSCertificate", der_json(der, len));
	der = NULL;
	len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
	json_object_set_new(o, "RawSubjectPublicKeyInfo", der_json(der, len));
	der = NULL;
	len = i2d_X509_NAME(X509_get_subject_name(cert), &der);
	json_object_set_new(o, "RawSubject", der_json(der, len));
	der = NULL;
	len = i2d_X509_NAME(X509_get_issuer_name(cert), &der);
	json_object_set_new(o, "RawIssuer", der_json(der, len));
	X509_get0_signature(&sig, &sigalg, cert);
	json_object_set_new(o, "Signature",
			    sig ? b64_json(sig->data, (size_t)sig->length) : json_null());
	if (sigalg)
		X509_ALGOR_get0(&algobj, NULL, NULL, sigalg);
	json_object_set_new(o, "SignatureAlgorithm",
			    json_integer(algobj ? go_sig_alg(OBJ_obj2nid(algobj)) : 0));
	json_object_set_new(o, "PublicKey", public_key_json(cert, &alg));
	json_object_set_new(o, "PublicKeyAlgorithm", json_integer(alg));
	json_object_set_new(o, "Version", json_integer(X509_get_version(cert) + 1));
	serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
	json_object_set_new(o, "SerialNumber", serial ? bn_number(serial) : json_null());
	BN_free(serial);
	json_object_set_new(o, "Issuer", name_json(X509_get_issuer_name(cert)));
	json_object_set_new(o, "Subject", name_json(X509_get_subject_name(cert)));
	json_object_set_new(o, "NotBefore", asn1_time_json(X509_get0_notBefore(cert)));
	json_object_set_new(o, "NotAfter", asn1_time_json(X509_get0_notAfter(cert)));
	json_object_set_new(o, "KeyUsage", json_integer(go_key_usage(X509_get_key_usage(cert))));
	json_object_set_new(o, "Extensions", extensions_json(cert));
	json_object_set_new(o, "ExtraExtensions", json_null());
	json_object_set_new(o, "UnhandledCriticalExtensions", json_null());
	json_object_set_new(o, "ExtKeyUsage", ext_key_usage_json(cert));
	json_object_set_new(o, "UnknownExtKeyUsage", json_null());
	flags = X509_get_extension_flags(cert);
	pathlen = X509_get_pathlen(cert);
	json_object_set_new(o, "BasicConstraintsValid", json_boolean(flags & EXFLAG_BCONS));
	json_object_set_new(o, "IsCA", json_boolean(flags & EXFLAG_CA));
	json_object_set_new(
	    o, "MaxPathLen",
	    json_integer((flags & EXFLAG_BCONS) ? (pathlen < 0 ? -1 : pathlen) : 0));
	json_object_set_new(o, "MaxPathLenZero",
			    json_boolean((flags & EXFLAG_BCONS) && pathlen == 0));
	json_object_set_new(o, "SubjectKeyId", octets_or_null(X509_get0_subject_key_id(cert)));
	json_object_set_new(o, "AuthorityKeyId", octets_or_null(X509_get0_authority_key_id(cert)));
	json_object_set_new(o, "OCSPServer", access_json(cert, NID_ad_OCSP));
	json_object_set_new(o, "IssuingCertificateURL", access_json(cert, NID_ad_ca_issuers));
	san_json(cert, o);
	json_object_set_new(o, "PermittedDNSDomainsCritical", json_false());
	json_object_set_new(o, "PermittedDNSDomains", json_null());
	json_object_set_new(o, "ExcludedDNSDomains", json_null());
	json_object_set_new(o, "PermittedIPRanges", json_null());
	json_object_set_new(o, "ExcludedIPRanges", json_null());
	json_object_set_new(o, "PermittedEmailAddresses", json_null());
	json_object_set_new(o, "ExcludedEmailAddresses", json_null());
	json_object_set_new(o, "PermittedURIDomains", json_null());
	json_object_set_new(o, "ExcludedURIDomains", json_null());
	json_object_set_new(o, "CRLDistributionPoints", crl_json(cert));
	json_object_set_new(o, "PolicyIdentifiers", policies_json(cert));
	return o;
}

int jp_fn_x509_decode(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	BIO *bio;
	X509 *cert;
	int rc = jp_charge(ev, 100 + SLEN(0) / 4);

	if (rc)
		return rc;
	if (SLEN(0) > (1u << 20))
		return jp_kfail(ev, JP_ERR_LIMIT, "x509_decode", "certificate larger than 1 MiB");
	bio = BIO_new_mem_buf(STR(0), (int)SLEN(0));
	cert = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (!cert)
		return jp_kfail(ev, JP_ERR_RUNTIME, "x509_decode", "invalid certificate");
	*out = x509_object(cert);
	X509_free(cert);
	return 0;
}
