/*
 * net.c - the Kubernetes IP and CIDR libraries (cel-semantics.md 1.9;
 * k8s.io/apiserver pkg/cel/library/ip.go, cidr.go): ip(), isIP(),
 * ip.isCanonical(), cidr(), isCIDR() and their member functions. Addresses
 * are read as Go's netip.ParseAddr reads them; as in Kubernetes, zones and
 * IPv4-mapped IPv6 addresses are refused.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "common/banned.h"

struct cel_ip {
	int family; /* 4 or 6 */
	unsigned char a[16];
};

struct cel_cidr {
	struct cel_ip ip; /* as written (host bits kept) */
	int bits;
};

static void ip_text(const void *data, struct gv_buf *out)
{
	const struct cel_ip *ip = data;
	char buf[INET6_ADDRSTRLEN];

	inet_ntop(ip->family == 4 ? AF_INET : AF_INET6, ip->a, buf, sizeof(buf));
	gv_buf_adds(out, buf);
}

static bool ip_equal(const void *a, const void *b)
{
	const struct cel_ip *x = a, *y = b;

	return x->family == y->family && memcmp(x->a, y->a, x->family == 4 ? 4 : 16) == 0;
}

static void cidr_text(const void *data, struct gv_buf *out)
{
	const struct cel_cidr *c = data;

	ip_text(&c->ip, out);
	gv_buf_addf(out, "/%d", c->bits);
}

static bool cidr_equal(const void *a, const void *b)
{
	const struct cel_cidr *x = a, *y = b;

	return x->bits == y->bits && ip_equal(&x->ip, &y->ip);
}

static const struct cel_opaque_type ip_type = {"net.IP", "ip", true, ip_text, ip_equal};
static const struct cel_opaque_type cidr_type = {"net.CIDR", "cidr", true, cidr_text, cidr_equal};

/* Parses an address: 0 ok, else an error message. */
static const char *parse_ip(const char *s, size_t n, struct cel_ip *ip)
{
	char buf[64];
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (n == 0 || n >= sizeof(buf))
		return "parse error during conversion from string";
	memcpy(buf, s, n);
	buf[n] = 0;
	if (memchr(buf, '%', n))
		return "with zone value is not allowed";
	memset(ip, 0, sizeof(*ip));
	if (!memchr(buf, ':', n)) {
		if (inet_pton(AF_INET, buf, ip->a) != 1)
			return "parse error during conversion from string";
		ip->family = 4;
		return NULL;
	}
	if (inet_pton(AF_INET6, buf, ip->a) != 1)
		return "parse error during conversion from string";
	if (memcmp(ip->a, mapped, 12) == 0)
		return "IPv4-mapped IPv6 address is not allowed";
	ip->family = 6;
	return NULL;
}

static struct cel_value opaque(struct cel_eval *ev, const struct cel_opaque_type *t,
			       const void *data, size_t n)
{
	struct cel_value v = {.kind = CEL_OPAQUE};
	void *copy = cel_eval_alloc(ev, n);

	memcpy(copy, data, n);
	v.v.obj.type = t;
	v.v.obj.data = copy;
	return v;
}

static const struct cel_ip *as_ip(const struct cel_value *v)
{
	return v->kind == CEL_OPAQUE && v->v.obj.type == &ip_type ? v->v.obj.data : NULL;
}

static const struct cel_cidr *as_cidr(const struct cel_value *v)
{
	return v->kind == CEL_OPAQUE && v->v.obj.type == &cidr_type ? v->v.obj.data : NULL;
}

#define FN(name)                                                                                   \
	static struct cel_value name(struct cel_eval *ev, const struct cel_node *n,                \
				     struct cel_value *a, int na)

static struct cel_value overload(struct cel_eval *ev, const struct cel_node *n,
				 const struct cel_value *a)
{
	return cel_err(ev, n->pos, "no such overload: %s(%s)", n->name, cel_type_name(a));
}

FN(f_ip)
{
	struct cel_ip ip;
	const char *err;

	if (a[0].kind == CEL_OPAQUE && as_cidr(&a[0]))
		return opaque(ev, &ip_type, &as_cidr(&a[0])->ip, sizeof(ip));
	if (a[0].kind != CEL_STRING)
		return overload(ev, n, &a[0]);
	err = parse_ip(a[0].v.s.p, a[0].v.s.n, &ip);
	if (err)
		return cel_err(ev, n->pos, "IP Address '%.*s' %s", (int)a[0].v.s.n, a[0].v.s.p,
			       err);
	return opaque(ev, &ip_type, &ip, sizeof(ip));
}

FN(f_is_ip)
{
	struct cel_ip ip;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, &a[0]);
	return cel_bool(parse_ip(a[0].v.s.p, a[0].v.s.n, &ip) == NULL);
}

FN(f_is_canonical)
{
	struct cel_ip ip;
	struct gv_buf b = {0};
	const char *err;
	bool same;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, &a[0]);
	err = parse_ip(a[0].v.s.p, a[0].v.s.n, &ip);
	if (err)
		return cel_err(ev, n->pos, "IP Address '%.*s' %s", (int)a[0].v.s.n, a[0].v.s.p,
			       err);
	ip_text(&ip, &b);
	same = b.len == a[0].v.s.n && memcmp(b.data, a[0].v.s.p, b.len) == 0;
	gv_buf_release(&b);
	return cel_bool(same);
}

FN(f_family)
{
	const struct cel_ip *ip = as_ip(&a[0]);

	if (!ip)
		return overload(ev, n, &a[0]);
	return cel_int(ip->family);
}

enum ipclass { IC_UNSPEC, IC_LOOPBACK, IC_LL_MULTICAST, IC_LL_UNICAST, IC_GLOBAL };

static bool ip_is(const struct cel_ip *ip, enum ipclass c)
{
	static const unsigned char zero[16];
	const unsigned char *b = ip->a;

	if (ip->family == 4) {
		switch (c) {
		case IC_UNSPEC:
			return memcmp(b, zero, 4) == 0;
		case IC_LOOPBACK:
			return b[0] == 127;
		case IC_LL_MULTICAST:
			return b[0] == 224 && b[1] == 0 && b[2] == 0;
		case IC_LL_UNICAST:
			return b[0] == 169 && b[1] == 254;
		default:
			if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255)
				return false;
			return !ip_is(ip, IC_UNSPEC) && !ip_is(ip, IC_LOOPBACK) &&
			       (b[0] & 0xf0) != 0xe0 && !ip_is(ip, IC_LL_UNICAST);
		}
	}
	switch (c) {
	case IC_UNSPEC:
		return memcmp(b, zero, 16) == 0;
	case IC_LOOPBACK:
		return memcmp(b, zero, 15) == 0 && b[15] == 1;
	case IC_LL_MULTICAST:
		return b[0] == 0xff && (b[1] & 0x0f) == 0x02;
	case IC_LL_UNICAST:
		return b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
	default:
		return !ip_is(ip, IC_UNSPEC) && !ip_is(ip, IC_LOOPBACK) && b[0] != 0xff &&
		       !ip_is(ip, IC_LL_UNICAST);
	}
}

static struct cel_value ip_class(struct cel_eval *ev, const struct cel_node *n,
				 const struct cel_value *a, enum ipclass c)
{
	const struct cel_ip *ip = as_ip(&a[0]);

	if (!ip)
		return overload(ev, n, &a[0]);
	return cel_bool(ip_is(ip, c));
}

FN(f_is_unspecified)
{
	return ip_class(ev, n, a, IC_UNSPEC);
}

FN(f_is_loopback)
{
	return ip_class(ev, n, a, IC_LOOPBACK);
}

FN(f_is_ll_multicast)
{
	return ip_class(ev, n, a, IC_LL_MULTICAST);
}

FN(f_is_ll_unicast)
{
	return ip_class(ev, n, a, IC_LL_UNICAST);
}

FN(f_is_global_unicast)
{
	return ip_class(ev, n, a, IC_GLOBAL);
}

static const char *parse_cidr(const char *s, size_t n, struct cel_cidr *c)
{
	const char *slash = memchr(s, '/', n), *err;
	size_t k;
	int bits = 0;

	if (memchr(s, '%', n))
		return "with zone value is not allowed";
	if (!slash || slash + 1 == s + n)
		return "parse error during conversion from string";
	for (k = (size_t)(slash - s) + 1; k < n; k++) {
		if (s[k] < '0' || s[k] > '9' || bits > 128)
			return "parse error during conversion from string";
		bits = bits * 10 + (s[k] - '0');
	}
	if (n - (size_t)(slash - s) > 2 && slash[1] == '0')
		return "parse error during conversion from string";
	err = parse_ip(s, (size_t)(slash - s), &c->ip);
	if (err)
		return err;
	if (bits > (c->ip.family == 4 ? 32 : 128))
		return "parse error during conversion from string";
	c->bits = bits;
	return NULL;
}

FN(f_cidr)
{
	struct cel_cidr c;
	const char *err;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, &a[0]);
	err = parse_cidr(a[0].v.s.p, a[0].v.s.n, &c);
	if (err)
		return cel_err(ev, n->pos, "network address '%.*s' %s", (int)a[0].v.s.n, a[0].v.s.p,
			       err);
	return opaque(ev, &cidr_type, &c, sizeof(c));
}

FN(f_is_cidr)
{
	struct cel_cidr c;

	if (a[0].kind != CEL_STRING)
		return overload(ev, n, &a[0]);
	return cel_bool(parse_cidr(a[0].v.s.p, a[0].v.s.n, &c) == NULL);
}

/* Whether ip lies in the first bits of prefix. */
static bool prefix_has(const struct cel_ip *prefix, int bits, const struct cel_ip *ip)
{
	int full = bits / 8, rest = bits % 8;

	if (prefix->family != ip->family)
		return false;
	if (memcmp(prefix->a, ip->a, (size_t)full) != 0)
		return false;
	if (rest) {
		unsigned char m = (unsigned char)(0xff << (8 - rest));

		return (prefix->a[full] & m) == (ip->a[full] & m);
	}
	return true;
}

FN(f_contains_ip)
{
	const struct cel_cidr *c = as_cidr(&a[0]);
	struct cel_ip tmp;
	const struct cel_ip *ip = as_ip(&a[1]);

	if (!c)
		return overload(ev, n, &a[0]);
	if (!ip && a[1].kind == CEL_STRING) {
		const char *err = parse_ip(a[1].v.s.p, a[1].v.s.n, &tmp);

		if (err)
			return cel_err(ev, n->pos, "IP Address '%.*s' %s", (int)a[1].v.s.n,
				       a[1].v.s.p, err);
		ip = &tmp;
	}
	if (!ip)
		return overload(ev, n, &a[1]);
	return cel_bool(prefix_has(&c->ip, c->bits, ip));
}

FN(f_contains_cidr)
{
	const struct cel_cidr *c = as_cidr(&a[0]), *o = as_cidr(&a[1]);
	struct cel_cidr tmp;

	if (!c)
		return overload(ev, n, &a[0]);
	if (!o && a[1].kind == CEL_STRING) {
		const char *err = parse_cidr(a[1].v.s.p, a[1].v.s.n, &tmp);

		if (err)
			return cel_err(ev, n->pos, "network address '%.*s' %s", (int)a[1].v.s.n,
				       a[1].v.s.p, err);
		o = &tmp;
	}
	if (!o)
		return overload(ev, n, &a[1]);
	return cel_bool(o->bits >= c->bits && prefix_has(&c->ip, c->bits, &o->ip));
}

FN(f_masked)
{
	const struct cel_cidr *c = as_cidr(&a[0]);
	struct cel_cidr m;
	int k;

	if (!c)
		return overload(ev, n, &a[0]);
	m = *c;
	for (k = 0; k < 16; k++) {
		int keep = m.bits - k * 8;

		if (keep <= 0)
			m.ip.a[k] = 0;
		else if (keep < 8)
			m.ip.a[k] &= (unsigned char)(0xff << (8 - keep));
	}
	return opaque(ev, &cidr_type, &m, sizeof(m));
}

FN(f_prefix_length)
{
	const struct cel_cidr *c = as_cidr(&a[0]);

	if (!c)
		return overload(ev, n, &a[0]);
	return cel_int(c->bits);
}

#define G CEL_FN_GLOBAL
#define M CEL_FN_MEMBER
const struct cel_func cel_net_funcs[] = {
    {"ip", f_ip, 1, 1, G | M, false},
    {"isIP", f_is_ip, 1, 1, G, false},
    {"ip.isCanonical", f_is_canonical, 1, 1, G, false},
    {"family", f_family, 1, 1, M, false},
    {"isUnspecified", f_is_unspecified, 1, 1, M, false},
    {"isLoopback", f_is_loopback, 1, 1, M, false},
    {"isLinkLocalMulticast", f_is_ll_multicast, 1, 1, M, false},
    {"isLinkLocalUnicast", f_is_ll_unicast, 1, 1, M, false},
    {"isGlobalUnicast", f_is_global_unicast, 1, 1, M, false},
    {"cidr", f_cidr, 1, 1, G, false},
    {"isCIDR", f_is_cidr, 1, 1, G, false},
    {"containsIP", f_contains_ip, 2, 2, M, false},
    {"containsCIDR", f_contains_cidr, 2, 2, M, false},
    {"masked", f_masked, 1, 1, M, false},
    {"prefixLength", f_prefix_length, 1, 1, M, false},
};
#undef G
#undef M
const size_t cel_net_nfuncs = GV_ARRAY_LEN(cel_net_funcs);
