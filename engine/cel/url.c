/*
 * url.c - the Kubernetes URL library (cel-semantics.md 1.9;
 * k8s.io/apiserver pkg/cel/library/urls.go): url(s), isURL(s) and the
 * accessors getScheme, getHost, getHostname, getPort, getEscapedPath,
 * getQuery. A URL is what Go's url.ParseRequestURI accepts (an absolute URI
 * or an absolute path), split as url.Parse splits it; the escaped path is
 * the path as written (Go's EscapedPath when the writing is a valid
 * encoding, which url() checks).
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <string.h>

#include "common/banned.h"

struct cel_url {
	const char *text; /* as written (arena) */
	size_t len;
	char *scheme; /* lower case */
	const char *host, *path, *query;
	size_t host_n, path_n, query_n;
	bool has_query;
};

static void url_text(const void *data, struct gv_buf *out)
{
	const struct cel_url *u = data;

	gv_buf_add(out, u->text, u->len);
}

static bool url_equal(const void *a, const void *b)
{
	const struct cel_url *x = a, *y = b;

	return x->len == y->len && memcmp(x->text, y->text, x->len) == 0;
}

static const struct cel_opaque_type url_type = {"kubernetes.URL", "url", false, url_text,
						url_equal};

static int hexv(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Whether every '%' of s[0..n) starts a valid escape. */
static bool escapes_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '%' && (i + 2 >= n || hexv(s[i + 1]) < 0 || hexv(s[i + 2]) < 0))
			return false;
	return true;
}

/* Splits s into u (pointers into s); NULL or the reason it is not a URL. */
static const char *parse_url(struct cel_eval *ev, const char *s, size_t n, struct cel_url *u)
{
	size_t i = 0, end = n, k;
	const char *hash;

	memset(u, 0, sizeof(*u));
	if (n == 0)
		return "empty url";
	for (k = 0; k < n; k++)
		if ((unsigned char)s[k] < 0x20 || s[k] == 0x7f)
			return "net/url: invalid control character in URL";
	/* scheme */
	if ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) {
		for (k = 1; k < n; k++) {
			char c = s[k];

			if (c == ':') {
				size_t j;

				u->scheme = cel_eval_strdup(ev, s, k);
				for (j = 0; j < k; j++)
					if (u->scheme[j] >= 'A' && u->scheme[j] <= 'Z')
						u->scheme[j] = (char)(u->scheme[j] + 32);
				i = k + 1;
				break;
			}
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))
				break;
		}
	} else if (s[0] == ':') {
		return "missing protocol scheme";
	}
	if (!u->scheme && s[0] != '/')
		return "invalid URI for request";
	/* the fragment (url.Parse) */
	hash = memchr(s + i, '#', n - i);
	if (hash)
		end = (size_t)(hash - s);
	{
		const char *q = memchr(s + i, '?', end - i);

		if (q) {
			u->has_query = true;
			u->query = q + 1;
			u->query_n = end - (size_t)(q - s) - 1;
			end = (size_t)(q - s);
		}
	}
	if (u->scheme && i < end && s[i] != '/')
		return NULL; /* opaque ("mailto:x"): no host, no path */
	if (end - i >= 2 && s[i] == '/' && s[i + 1] == '/') {
		size_t hs = i + 2, he = hs, at;
		const char *h;
		size_t hn;

		while (he < end && s[he] != '/')
			he++;
		/* userinfo@ */
		for (at = he; at > hs && s[at - 1] != '@'; at--)
			;
		h = s + (at > hs ? at : hs);
		hn = (size_t)(s + he - h);
		if (hn && h[0] == '[') {
			const char *rb = memchr(h, ']', hn);

			if (!rb)
				return "missing ']' in host";
			if ((size_t)(rb - h) + 1 < hn && rb[1] != ':')
				return "invalid port after host";
		}
		{
			/* the port: digits after the last ':' outside brackets */
			const char *colon = NULL;

			for (k = 0; k < hn; k++) {
				if (h[k] == ']')
					colon = NULL;
				else if (h[k] == ':')
					colon = h + k;
			}
			if (colon && (h[0] != '[' || memchr(h, ']', hn) < (const void *)colon)) {
				for (k = (size_t)(colon - h) + 1; k < hn; k++)
					if (h[k] < '0' || h[k] > '9')
						return "invalid port";
			}
		}
		for (k = 0; k < hn; k++)
			if (h[k] == ' ' || h[k] == '<' || h[k] == '>' || h[k] == '"' ||
			    h[k] == '`' || h[k] == '{' || h[k] == '}' || h[k] == '|' ||
			    h[k] == '\\' || h[k] == '^')
				return "invalid character in host name";
		if (!escapes_ok(h, hn))
			return "invalid URL escape";
		u->host = h;
		u->host_n = hn;
		i = he;
	}
	u->path = s + i;
	u->path_n = end - i;
	if (!escapes_ok(u->path, u->path_n))
		return "invalid URL escape";
	return NULL;
}

const char *cel_url_check(struct cel_eval *ev, const char *s, size_t n)
{
	struct cel_url u;

	return parse_url(ev, s, n, &u);
}

static const struct cel_url *as_url(const struct cel_value *v)
{
	return v->kind == CEL_OPAQUE && v->v.obj.type == &url_type ? v->v.obj.data : NULL;
}

#define FN(name)                                                                                   \
	static struct cel_value name(struct cel_eval *ev, const struct cel_node *n,                \
				     struct cel_value *a, int na)

static struct cel_value overload(struct cel_eval *ev, const struct cel_node *n,
				 const struct cel_value *a)
{
	return cel_err(ev, n->pos, "no such overload: %s(%s)", n->name, cel_type_name(a));
}

FN(f_url)
{
	struct cel_url *u;
	struct cel_value v = {.kind = CEL_OPAQUE};
	const char *err;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, &a[0]);
	u = cel_eval_alloc(ev, sizeof(*u));
	err = parse_url(ev, a[0].v.s.p, a[0].v.s.n, u);
	if (err)
		return cel_err(ev, n->pos, "URL parse error during conversion from string: %s",
			       err);
	u->text = a[0].v.s.p;
	u->len = a[0].v.s.n;
	v.v.obj.type = &url_type;
	v.v.obj.data = u;
	return v;
}

FN(f_is_url)
{
	struct cel_url u;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, &a[0]);
	return cel_bool(parse_url(ev, a[0].v.s.p, a[0].v.s.n, &u) == NULL);
}

FN(f_scheme)
{
	const struct cel_url *u = as_url(&a[0]);

	if (!u)
		return overload(ev, n, &a[0]);
	return u->scheme ? cel_str(u->scheme, strlen(u->scheme)) : cel_str("", 0);
}

FN(f_host)
{
	const struct cel_url *u = as_url(&a[0]);

	if (!u)
		return overload(ev, n, &a[0]);
	return cel_str(u->host ? u->host : "", u->host_n);
}

/* Go's Hostname() and Port(): brackets stripped, port after the last ':'. */
static void split_host(const struct cel_url *u, const char **h, size_t *hn, const char **p,
		       size_t *pn)
{
	const char *s = u->host ? u->host : "";
	size_t n = u->host_n, k;
	const char *colon = NULL;

	for (k = 0; k < n; k++) {
		if (s[k] == ']')
			colon = NULL;
		else if (s[k] == ':')
			colon = s + k;
	}
	if (n && s[0] == '[') {
		const char *rb = memchr(s, ']', n);

		*h = s + 1;
		*hn = rb ? (size_t)(rb - s) - 1 : n - 1;
		colon = rb && (size_t)(rb - s) + 1 < n && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		*h = s;
		*hn = colon ? (size_t)(colon - s) : n;
	}
	*p = colon ? colon + 1 : "";
	*pn = colon ? (size_t)(s + n - colon - 1) : 0;
}

FN(f_hostname)
{
	const struct cel_url *u = as_url(&a[0]);
	const char *h, *p;
	size_t hn, pn;

	if (!u)
		return overload(ev, n, &a[0]);
	split_host(u, &h, &hn, &p, &pn);
	return cel_str(h, hn);
}

FN(f_port)
{
	const struct cel_url *u = as_url(&a[0]);
	const char *h, *p;
	size_t hn, pn;

	if (!u)
		return overload(ev, n, &a[0]);
	split_host(u, &h, &hn, &p, &pn);
	return cel_str(p, pn);
}

FN(f_path)
{
	const struct cel_url *u = as_url(&a[0]);

	if (!u)
		return overload(ev, n, &a[0]);
	return cel_str(u->path ? u->path : "", u->path_n);
}

/* Go's QueryUnescape ('+' is a space); false on a bad escape. */
static bool unescape(struct cel_eval *ev, const char *s, size_t n, struct cel_value *out)
{
	char *o = cel_eval_alloc(ev, n + 1);
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			if (i + 2 >= n || hexv(s[i + 1]) < 0 || hexv(s[i + 2]) < 0)
				return false;
			o[k++] = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
			i += 2;
		} else {
			o[k++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	*out = cel_str(o, k);
	return true;
}

/* getQuery(): map(string, list(string)); pairs with a ';' or a bad escape are left out, as Go does.
 */
FN(f_query)
{
	const struct cel_url *u = as_url(&a[0]);
	struct cel_value *keys, *vals;
	size_t i = 0, nk = 0, cap, j;

	if (!u)
		return overload(ev, n, &a[0]);
	cap = u->query_n / 2 + 2;
	keys = cel_eval_alloc(ev, sizeof(*keys) * cap);
	vals = cel_eval_alloc(ev, sizeof(*vals) * cap);
	while (u->has_query && i <= u->query_n) {
		const char *s = u->query + i, *amp = memchr(s, '&', u->query_n - i), *eq;
		size_t len = amp ? (size_t)(amp - s) : u->query_n - i;
		struct cel_value k, v;

		i += len + 1;
		if (!len || memchr(s, ';', len))
			continue;
		eq = memchr(s, '=', len);
		if (!unescape(ev, s, eq ? (size_t)(eq - s) : len, &k) ||
		    !unescape(ev, eq ? eq + 1 : s + len, eq ? (size_t)(s + len - eq - 1) : 0, &v))
			continue;
		for (j = 0; j < nk; j++)
			if (keys[j].v.s.n == k.v.s.n &&
			    memcmp(keys[j].v.s.p, k.v.s.p, k.v.s.n) == 0)
				break;
		if (j == nk) {
			keys[nk] = k;
			vals[nk] = cel_list_new(ev, &v, 1);
			nk++;
		} else {
			size_t m = cel_list_size(&vals[j]), x;
			struct cel_value *items = cel_eval_alloc(ev, sizeof(*items) * (m + 1));

			for (x = 0; x < m; x++)
				items[x] = cel_list_get(&vals[j], x);
			items[m] = v;
			vals[j] = cel_list_new(ev, items, m + 1);
		}
		if (!cel_charge(ev, 1))
			break;
	}
	return cel_map_new(ev, keys, vals, nk);
}

#define G CEL_FN_GLOBAL
#define M CEL_FN_MEMBER
const struct cel_func cel_url_funcs[] = {
    {"url", f_url, 1, 1, G, false},
    {"isURL", f_is_url, 1, 1, G, false},
    {"getScheme", f_scheme, 1, 1, M, false},
    {"getHost", f_host, 1, 1, M, false},
    {"getHostname", f_hostname, 1, 1, M, false},
    {"getPort", f_port, 1, 1, M, false},
    {"getEscapedPath", f_path, 1, 1, M, false},
    {"getQuery", f_query, 1, 1, M, false},
};
#undef G
#undef M
const size_t cel_url_nfuncs = GV_ARRAY_LEN(cel_url_funcs);
