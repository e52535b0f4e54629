/*
 * jp_fn_encoding.c - base64_encode, base64_decode and the digests sha256,
 * sha1 and md5.
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
/* Encodings and digests                                                */

int jp_fn_base64_encode(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	size_t n = SLEN(0);
	unsigned char *buf;
	int len, rc;

	if (n > MAX_OUT)
		return jp_kfail(ev, JP_ERR_LIMIT, "base64_encode", "input larger than %u bytes",
				MAX_OUT);
	rc = jp_charge(ev, 1 + n / 8);
	if (rc)
		return rc;
	buf = gv_xmalloc(4 * ((n + 2) / 3) + 1);
	len = EVP_EncodeBlock(buf, (const unsigned char *)STR(0), (int)n);
	*out = json_stringn((const char *)buf, (size_t)len);
	free(buf);
	return 0;
}

/* Go's base64.StdEncoding.DecodeString: padding required, \r and \n ignored. */
int jp_fn_base64_decode(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *s = STR(0);
	size_t n = SLEN(0), i, m = 0, pad = 0;
	unsigned char *clean, *buf;
	int len, rc;

	rc = jp_charge(ev, 1 + n / 8);
	if (rc)
		return rc;
	clean = gv_xmalloc(n + 1);
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
		} else if (pad || !c || !strchr(alphabet, c)) {
			free(clean);
			return jp_kfail(ev, JP_ERR_RUNTIME, "base64_decode",
					"illegal base64 data at input byte %zu", i);
		}
		clean[m++] = (unsigned char)c;
	}
	if (m % 4 != 0 || pad > 2) {
		free(clean);
		return jp_kfail(ev, JP_ERR_RUNTIME, "base64_decode",
				"illegal base64 data at input byte %zu", m);
	}
	buf = gv_xmalloc(m / 4 * 3 + 1);
	len = m ? EVP_DecodeBlock(buf, clean, (int)m) : 0;
	free(clean);
	if (len < 0) {
		free(buf);
		return jp_kfail(ev, JP_ERR_RUNTIME, "base64_decode", "illegal base64 data");
	}
	*out = jp_string_lossy((const char *)buf, (size_t)len - pad);
	free(buf);
	return 0;
}

static int digest_hex(struct jp_ev *ev, const EVP_MD *md, struct jp_arg *args, json_t **out)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	unsigned int n = 0, i;
	int rc = jp_charge(ev, 1 + SLEN(0) / 32);

	if (rc)
		return rc;
	if (!EVP_Digest(STR(0), SLEN(0), d, &n, md, NULL))
		return jp_fail(ev, JP_ERR_RUNTIME, "digest failed");
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	*out = json_stringn(hex, 2 * (size_t)n);
	return 0;
}

int jp_fn_sha256(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		 json_t **out)
{
	return digest_hex(ev, EVP_sha256(), args, out);
}

int jp_fn_sha1(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
	       json_t **out)
{
	return digest_hex(ev, EVP_sha1(), args, out);
}

int jp_fn_md5(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
	      json_t **out)
{
	return digest_hex(ev, EVP_md5(), args, out);
}
