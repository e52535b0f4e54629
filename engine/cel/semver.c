/*
 * semver.c - the Kubernetes semver library, version 1 (cel-semantics.md
 * 1.9; k8s.io/apiserver pkg/cel/library/semverlib.go): semver(s[,
 * normalize]), isSemver(s[, normalize]), major(), minor(), patch(); the
 * comparisons compareTo, isLessThan and isGreaterThan are shared with
 * quantities (quantity.c calls cel_semver_cmp). Versions are read with
 * blang/semver's strict rules (engine/value.h); normalize accepts a leading
 * "v", missing minor and patch parts and leading zeros, as Kubernetes does.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <stdio.h>
#include <string.h>

#include "engine/value.h"
#include "common/banned.h"

struct cel_semver {
	struct value_semver v;
	const char *text; /* as written (arena) */
	size_t len;
};

static void sv_text(const void *data, struct gv_buf *out)
{
	const struct cel_semver *s = data;

	gv_buf_add(out, s->text, s->len);
}

static bool sv_equal(const void *a, const void *b)
{
	const struct cel_semver *x = a, *y = b;

	return value_semver_cmp(&x->v, &y->v) == 0;
}

static const struct cel_opaque_type semver_type = {"kubernetes.Semver", "semver", false, sv_text,
						   sv_equal};

/* The normalized text of s into out: no "v", three numeric parts without leading zeros. */
static bool normalize(const char *s, size_t n, struct gv_buf *out)
{
	size_t core = 0, i, parts = 0;

	if (n && s[0] == 'v')
		s++, n--;
	while (core < n && s[core] != '-' && s[core] != '+')
		core++;
	i = 0;
	while (i < core) {
		size_t st = i;

		while (i < core && s[i] != '.')
			i++;
		if (i == st || parts == 3)
			return false;
		while (st + 1 < i && s[st] == '0')
			st++;
		if (parts)
			gv_buf_addc(out, '.');
		gv_buf_add(out, s + st, i - st);
		parts++;
		if (i < core)
			i++;
	}
	if (!parts)
		return false;
	for (; parts < 3; parts++)
		gv_buf_adds(out, ".0");
	gv_buf_add(out, s + core, n - core);
	return true;
}

static bool parse(const struct cel_value *s, bool norm, struct value_semver *v)
{
	struct gv_buf b = {0};
	bool ok;

	if (memchr(s->v.s.p, 0, s->v.s.n) || s->v.s.n > 256)
		return false;
	if (norm) {
		ok = normalize(s->v.s.p, s->v.s.n, &b);
	} else {
		/* strict: blang's Parse takes no leading "v" */
		ok = s->v.s.n && s->v.s.p[0] != 'v';
		gv_buf_add(&b, s->v.s.p, s->v.s.n);
	}
	ok = ok && value_parse_semver(gv_buf_str(&b), v);
	gv_buf_release(&b);
	return ok;
}

static const struct cel_semver *as_sv(const struct cel_value *v)
{
	return v->kind == CEL_OPAQUE && v->v.obj.type == &semver_type ? v->v.obj.data : NULL;
}

bool cel_semver_cmp(const struct cel_value *a, const struct cel_value *b, int *c)
{
	const struct cel_semver *x = as_sv(a), *y = as_sv(b);

	if (!x || !y)
		return false;
	*c = value_semver_cmp(&x->v, &y->v);
	return true;
}

#define FN(name)                                                                                   \
	static struct cel_value name(struct cel_eval *ev, const struct cel_node *n,                \
				     struct cel_value *a, int na)

static struct cel_value overload(struct cel_eval *ev, const struct cel_node *n,
				 const struct cel_value *a)
{
	return cel_err(ev, n->pos, "no such overload: %s(%s)", n->name, cel_type_name(a));
}

FN(f_semver)
{
	struct cel_semver *s;
	struct cel_value v = {.kind = CEL_OPAQUE};

	if (a[0].kind != CEL_STRING || (na == 2 && a[1].kind != CEL_BOOL))
		return overload(ev, n, &a[0]);
	s = cel_eval_alloc(ev, sizeof(*s));
	if (!parse(&a[0], na == 2 && a[1].v.b, &s->v))
		return cel_err(ev, n->pos, "could not parse semver: '%.*s'", (int)a[0].v.s.n,
			       a[0].v.s.p);
	s->text = a[0].v.s.p;
	s->len = a[0].v.s.n;
	v.v.obj.type = &semver_type;
	v.v.obj.data = s;
	return v;
}

FN(f_is_semver)
{
	struct value_semver v;

	if (a[0].kind != CEL_STRING || (na == 2 && a[1].kind != CEL_BOOL))
		return overload(ev, n, &a[0]);
	return cel_bool(parse(&a[0], na == 2 && a[1].v.b, &v));
}

static struct cel_value part(struct cel_eval *ev, const struct cel_node *n,
			     const struct cel_value *a, int which)
{
	const struct cel_semver *s = as_sv(&a[0]);

	if (!s)
		return overload(ev, n, &a[0]);
	return cel_int(which == 0 ? s->v.major : which == 1 ? s->v.minor : s->v.patch);
}

FN(f_major)
{
	return part(ev, n, a, 0);
}

FN(f_minor)
{
	return part(ev, n, a, 1);
}

FN(f_patch)
{
	return part(ev, n, a, 2);
}

#define G CEL_FN_GLOBAL
#define M CEL_FN_MEMBER
const struct cel_func cel_semver_funcs[] = {
    {"semver", f_semver, 1, 2, G, false}, {"isSemver", f_is_semver, 1, 2, G, false},
    {"major", f_major, 1, 1, M, false},	  {"minor", f_minor, 1, 1, M, false},
    {"patch", f_patch, 1, 1, M, false},
};
#undef G
#undef M
const size_t cel_semver_nfuncs = GV_ARRAY_LEN(cel_semver_funcs);
