/*
 * jp_fn_images.c - image_normalize (distribution/reference grammar, Kyverno
 * defaults) and is_external_url.
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

#include "common/imageref.h"
#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* image_normalize (distribution/reference grammar, Kyverno defaults)   */

int jp_fn_image_normalize(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	struct gv_imageref ref;
	struct gv_buf res = {0};
	struct gv_err e = {0};
	int rc;

	if (gv_imageref_parse(STR(0), SLEN(0), &ref, &e))
		return jp_kfail(ev, JP_ERR_RUNTIME, "image_normalize", "%s", e.msg);
	if (ref.domain)
		gv_buf_addf(&res, "%s/", ref.domain);
	gv_buf_adds(&res, ref.path);
	if (ref.digest)
		gv_buf_addf(&res, "@%s", ref.digest);
	else
		gv_buf_addf(&res, ":%s", ref.tag ? ref.tag : "latest");
	rc = jp_out_buf(ev, "image_normalize", &res, out);
	gv_imageref_release(&ref);
	gv_buf_release(&res);
	return rc;
}

/* ------------------------------------------------------------------ */
/* is_external_url                                                      */

static bool parse_ipv4(const char *s, unsigned char ip[4])
{
	int k = 0;
	const char *p = s;

	for (k = 0; k < 4; k++) {
		unsigned v = 0;
		int digits = 0;

		while (isdigit((unsigned char)*p) && digits < 4) {
			v = v * 10 + (unsigned)(*p - '0');
			p++;
			digits++;
		}
		if (!digits || v > 255 || (digits > 1 && p[-digits] == '0'))
			return false;
		ip[k] = (unsigned char)v;
		if (k < 3 && *p++ != '.')
			return false;
	}
	return *p == '\0';
}

static bool ipv4_internal(const unsigned char ip[4])
{
	return ip[0] == 127 || ip[0] == 10 || ip[0] == 0 ||
	       (ip[0] == 172 && (ip[1] & 0xF0) == 16) || (ip[0] == 192 && ip[1] == 168) ||
	       (ip[0] == 169 && ip[1] == 254);
}

static bool host_suffix(const char *h, const char *suffix)
{
	size_t n = strlen(h), m = strlen(suffix);

	return n >= m && strcasecmp(h + n - m, suffix) == 0;
}

int jp_fn_is_external_url(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	const char *s = STR(0), *p, *host, *end, *at;
	char h[256];
	size_t hn;
	unsigned char ip4[4];

	*out = json_false();
	p = strstr(s, "://");
	if (!p || p == s)
		return 0;
	for (const char *q = s; q < p; q++)
		if (!isalnum((unsigned char)*q) && *q != '+' && *q != '-' && *q != '.')
			return 0;
	host = p + 3;
	end = host + strcspn(host, "/?#");
	at = memchr(host, '@', (size_t)(end - host));
	if (at)
		host = at + 1;
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));
		if (!close)
			return 0;
		hn = (size_t)(close - host - 1);
		if (hn == 0 || hn >= sizeof(h))
			return 0;
		memcpy(h, host + 1, hn);
		h[hn] = '\0';
		/* ::1 loopback, fc00::/7 unique local, fe80::/10 link local, :: unspecified */
		*out =
		    json_boolean(!(strcmp(h, "::1") == 0 || strcmp(h, "::") == 0 ||
				   strncasecmp(h, "fc", 2) == 0 || strncasecmp(h, "fd", 2) == 0 ||
				   strncasecmp(h, "fe8", 3) == 0 || strncasecmp(h, "fe9", 3) == 0 ||
				   strncasecmp(h, "fea", 3) == 0 || strncasecmp(h, "feb", 3) == 0));
		return 0;
	}
	hn = strcspn(host, ":/?#");
	if (host + hn > end)
		hn = (size_t)(end - host);
	if (hn == 0 || hn >= sizeof(h))
		return 0;
	memcpy(h, host, hn);
	h[hn] = '\0';
	if (parse_ipv4(h, ip4)) {
		*out = json_boolean(!ipv4_internal(ip4));
		return 0;
	}
	if (strcasecmp(h, "localhost") == 0 || host_suffix(h, ".localhost") ||
	    host_suffix(h, ".local") || host_suffix(h, ".svc") || !strchr(h, '.'))
		return 0;
	*out = json_true();
	return 0;
}
