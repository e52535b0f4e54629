/*
 * imageref.c - image reference parsing (distribution/reference grammar,
 * Docker's default registry). See imageref.h.
 */
#include "common/imageref.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* path-component ("/" path-component)*, components [a-z0-9]+ joined by . _ __ -+ */
static bool ref_path_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0)
		return false;
	for (;;) {
		if (i >= n || !is_lower_alnum(s[i]))
			return false;
		while (i < n && is_lower_alnum(s[i]))
			i++;
		if (i == n)
			return true;
		if (s[i] == '/') {
			i++;
			continue;
		}
		if (s[i] == '.' || (s[i] == '_' && !(i + 1 < n && s[i + 1] == '_')))
			i++;
		else if (s[i] == '_')
			i += 2;
		else if (s[i] == '-')
			while (i < n && s[i] == '-')
				i++;
		else
			return false;
	}
}

/* host[:port], host a domain name, IPv4 or [IPv6]. */
static bool ref_domain_ok(const char *s, size_t n)
{
	size_t i = 0, start;

	if (n == 0)
		return false;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close || close == s + 1)
			return false;
		for (const char *p = s + 1; p < close; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
				return false;
		i = (size_t)(close - s) + 1;
	} else {
		for (;;) {
			start = i;
			while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '-'))
				i++;
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return false;
			if (i < n && s[i] == '.') {
				i++;
				continue;
			}
			break;
		}
	}
	if (i == n)
		return true;
	if (s[i] != ':' || i + 1 == n)
		return false;
	for (i++; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static bool ref_tag_ok(const char *s, size_t n)
{
	if (n == 0 || n > 128 || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

static bool ref_digest_ok(const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t alen, hlen, want = 0;

	if (!colon)
		return false;
	alen = (size_t)(colon - s);
	hlen = n - alen - 1;
	if (alen == 6 && memcmp(s, "sha256", 6) == 0)
		want = 64;
	else if (alen == 6 && memcmp(s, "sha384", 6) == 0)
		want = 96;
	else if (alen == 6 && memcmp(s, "sha512", 6) == 0)
		want = 128;
	if (!want || hlen != want)
		return false;
	for (size_t i = 0; i < hlen; i++)
		if (!((colon[1 + i] >= '0' && colon[1 + i] <= '9') ||
		      (colon[1 + i] >= 'a' && colon[1 + i] <= 'f')))
			return false;
	return true;
}

enum gv_code gv_imageref_parse(const char *img, size_t n, struct gv_imageref *out,
			       struct gv_err *err)
{
	const char *slash, *at, *name, *last, *colon;
	struct gv_buf full = {0};
	size_t name_len, first_len, i;
	const char *tag = NULL, *digest = NULL;
	size_t tag_len = 0, digest_len = 0;
	bool prefix = false, lower = true;
	enum gv_code rc = GV_OK;

	if (n == 0 || memchr(img, '\0', n))
		return gv_err_set(err, GV_EINVAL,
				  "repository name must have at least one component");
	/* addDefaultRegistry */
	slash = memchr(img, '/', n);
	if (!slash) {
		prefix = true;
	} else {
		first_len = (size_t)(slash - img);
		for (i = 0; i < first_len; i++)
			if (isupper((unsigned char)img[i]))
				lower = false;
		if (!memchr(img, '.', first_len) && !memchr(img, ':', first_len) &&
		    !(first_len == 9 && memcmp(img, "localhost", 9) == 0) && lower)
			prefix = true;
	}
	if (prefix)
		gv_buf_adds(&full, "docker.io/");
	gv_buf_add(&full, img, n);
	name = gv_buf_str(&full);
	name_len = full.len;
	at = memchr(name, '@', name_len);
	if (at) {
		digest = at + 1;
		digest_len = name_len - (size_t)(at - name) - 1;
		name_len = (size_t)(at - name);
		if (!ref_digest_ok(digest, digest_len)) {
			rc = gv_err_set(err, GV_EINVAL, "invalid reference format");
			goto out;
		}
	}
	last = name;
	for (i = 0; i < name_len; i++)
		if (name[i] == '/')
			last = name + i + 1;
	colon = memchr(last, ':', name_len - (size_t)(last - name));
	if (colon) {
		tag = colon + 1;
		tag_len = name_len - (size_t)(colon - name) - 1;
		name_len = (size_t)(colon - name);
		if (!ref_tag_ok(tag, tag_len)) {
			rc = gv_err_set(err, GV_EINVAL, "invalid reference format");
			goto out;
		}
	}
	if (name_len > 255) {
		rc = gv_err_set(err, GV_EINVAL,
				"repository name must not be more than 255 characters");
		goto out;
	}
	memset(out, 0, sizeof(*out));
	slash = memchr(name, '/', name_len);
	if (slash && ref_domain_ok(name, (size_t)(slash - name)) &&
	    ref_path_ok(slash + 1, name_len - (size_t)(slash - name) - 1)) {
		out->domain = gv_xstrndup(name, (size_t)(slash - name));
		out->path = gv_xstrndup(slash + 1, name_len - (size_t)(slash - name) - 1);
	} else if (ref_path_ok(name, name_len)) {
		out->path = gv_xstrndup(name, name_len); /* no registry */
	} else {
		bool upper = false;
		for (i = 0; i < name_len; i++)
			upper = upper || isupper((unsigned char)name[i]);
		rc = gv_err_set(err, GV_EINVAL, "%s",
				upper ? "repository name must be lowercase"
				      : "invalid reference format");
		goto out;
	}
	if (tag)
		out->tag = gv_xstrndup(tag, tag_len);
	if (digest)
		out->digest = gv_xstrndup(digest, digest_len);
out:
	gv_buf_release(&full);
	return rc;
}

/*
 * The split alone, without the grammar's checks: Docker's default registry
 * rule, "@" at the first '@', the tag after the last ':' of the last
 * component, the domain up to the first '/'. Fields may be "".
 */
static void split_lenient(const char *img, size_t n, struct gv_imageref *out)
{
	const char *slash = memchr(img, '/', n);
	char *full, *at, *lastslash, *colon, *first;
	bool lower = true;

	if (slash)
		for (const char *p = img; p < slash; p++)
			if (isupper((unsigned char)*p))
				lower = false;
	if (!slash ||
	    (!memchr(img, '.', (size_t)(slash - img)) && !memchr(img, ':', (size_t)(slash - img)) &&
	     !((size_t)(slash - img) == 9 && memcmp(img, "localhost", 9) == 0) && lower))
		full = gv_xasprintf("docker.io/%.*s", (int)n, img);
	else
		full = gv_xstrndup(img, n);
	memset(out, 0, sizeof(*out));
	at = strchr(full, '@');
	if (at) {
		out->digest = gv_xstrdup(at + 1);
		*at = '\0';
	}
	lastslash = strrchr(full, '/');
	colon = strrchr(lastslash ? lastslash : full, ':');
	if (colon) {
		out->tag = gv_xstrdup(colon + 1);
		*colon = '\0';
	}
	first = strchr(full, '/');
	out->path = gv_xstrdup(first ? first + 1 : "");
	if (first)
		*first = '\0';
	out->domain = full;
}

void gv_imageref_parse_lenient(const char *s, size_t n, struct gv_imageref *out)
{
	if (gv_imageref_parse(s, n, out, NULL) == GV_OK)
		return;
	split_lenient(s, strnlen(s, n), out);
}

bool gv_imageref_docker_hub(struct gv_imageref *r)
{
	if (!r->domain || (strcmp(r->domain, "docker.io") && strcmp(r->domain, "index.docker.io")))
		return false;
	free(r->domain);
	r->domain = gv_xstrdup("index.docker.io");
	if (!strchr(r->path, '/')) {
		char *p = gv_xasprintf("library/%s", r->path);

		free(r->path);
		r->path = p;
	}
	return true;
}

void gv_imageref_release(struct gv_imageref *r)
{
	free(r->domain);
	free(r->path);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof(*r));
}
