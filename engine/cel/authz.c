/*
 * authz.c - the Kubernetes authz library (cel-semantics.md 1.9;
 * k8s.io/apiserver pkg/cel/library/authz.go): the checks are built
 * (authorizer.group(g).resource(r).namespace(n).name(x).subresource(s),
 * authorizer.path(p), authorizer.serviceAccount(ns, n)), and check(verb)
 * asks the evaluation's host (cel.h struct cel_host, function
 * "authorizer.check"), which only the API server's authorizer can answer
 * (a SubjectAccessReview). Without a host, check(verb) is an explicit
 * error, so a rule using it ends in an error result, never in a guessed
 * allow or deny. The Decision has allowed(), reason(), errored() and
 * error().
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <string.h>

#include "common/banned.h"

/* One step of a check being built: what it is and the text it describes. */
struct authz_check {
	const char *what; /* "Authorizer", "GroupCheck", "ResourceCheck", "PathCheck" */
	const char *desc; /* "group 'apps' resource 'deployments'" (arena) */
	/* the attributes so far (arena strings, NULL when not set) */
	const char *sa_namespace, *sa_name; /* serviceAccount(ns, name) */
	const char *group, *resource, *subresource, *namespace, *name, *path;
	bool selectors; /* fieldSelector/labelSelector: not asked */
};

/* A check's answer. */
struct authz_decision {
	bool allowed;
	const char *reason; /* arena */
	const char *error;  /* arena, "" when none */
};

static void authz_text(const void *data, struct gv_buf *out)
{
	const struct authz_check *c = data;

	gv_buf_adds(out, c->desc);
}

static bool authz_equal(const void *a, const void *b)
{
	return a == b;
}

static const struct cel_opaque_type authz_type = {"kubernetes.authorization.Authorizer",
						  "authorizer", false, authz_text, authz_equal};

static void decision_text(const void *data, struct gv_buf *out)
{
	const struct authz_decision *d = data;

	gv_buf_addf(out, "decision(%s)", d->allowed ? "allowed" : "denied");
}

static const struct cel_opaque_type decision_type = {"kubernetes.authorization.Decision",
						     "decision", false, decision_text, authz_equal};

static const struct authz_check authz_root = {.what = "Authorizer", .desc = "authorizer"};

struct cel_value cel_authorizer_value(void)
{
	struct cel_value v = {.kind = CEL_OPAQUE};

	v.v.obj.type = &authz_type;
	v.v.obj.data = &authz_root;
	return v;
}

#define FN(name)                                                                                   \
	static struct cel_value name(struct cel_eval *ev, const struct cel_node *n,                \
				     struct cel_value *a, int na)

static const struct authz_check *as_check(const struct cel_value *v)
{
	return v->kind == CEL_OPAQUE && v->v.obj.type == &authz_type ? v->v.obj.data : NULL;
}

static struct cel_value no_overload(struct cel_eval *ev, const struct cel_node *n,
				    const struct cel_value *a)
{
	return cel_err(ev, n->pos, "no such overload: %s(%s)", n->name, cel_type_name(a));
}

/* The next step of a check: from is what the receiver must be, to what it becomes. */
static struct cel_value step(struct cel_eval *ev, const struct cel_node *n, struct cel_value *a,
			     int na, const char *from1, const char *from2, const char *to)
{
	const struct authz_check *c = as_check(&a[0]);
	struct authz_check *r;
	struct gv_buf b = {0};
	int i;

	if (!c || (strcmp(c->what, from1) != 0 && (!from2 || strcmp(c->what, from2) != 0)))
		return no_overload(ev, n, &a[0]);
	for (i = 1; i < na; i++)
		if (a[i].kind != CEL_STRING)
			return no_overload(ev, n, &a[i]);
	if (c != &authz_root)
		gv_buf_addf(&b, "%s ", c->desc);
	gv_buf_addf(&b, "%s", n->name);
	for (i = 1; i < na; i++)
		gv_buf_addf(&b, "%s'%.*s'", i == 1 ? " " : "/", (int)a[i].v.s.n, a[i].v.s.p);
	r = cel_eval_alloc(ev, sizeof(*r));
	*r = *c;
	r->what = to;
	r->desc = cel_eval_strdup(ev, b.data, b.len);
	{
		const char *v1 = na > 1 ? cel_eval_strdup(ev, a[1].v.s.p, a[1].v.s.n) : NULL;
		const char *nm = n->name;
		if (!strcmp(nm, "serviceAccount")) {
			r->sa_namespace = v1;
			r->sa_name = cel_eval_strdup(ev, a[2].v.s.p, a[2].v.s.n);
		} else if (!strcmp(nm, "group")) {
			r->group = v1;
		} else if (!strcmp(nm, "resource")) {
			r->resource = v1;
		} else if (!strcmp(nm, "subresource")) {
			r->subresource = v1;
		} else if (!strcmp(nm, "namespace")) {
			r->namespace = v1;
		} else if (!strcmp(nm, "name")) {
			r->name = v1;
		} else if (!strcmp(nm, "path")) {
			r->path = v1;
		} else {
			r->selectors = true;
		}
	}
	gv_buf_release(&b);
	{
		struct cel_value v = {.kind = CEL_OPAQUE};

		v.v.obj.type = &authz_type;
		v.v.obj.data = r;
		return v;
	}
}

FN(f_group)
{
	return step(ev, n, a, na, "Authorizer", NULL, "GroupCheck");
}

FN(f_path)
{
	return step(ev, n, a, na, "Authorizer", NULL, "PathCheck");
}

FN(f_service_account)
{
	return step(ev, n, a, na, "Authorizer", NULL, "Authorizer");
}

FN(f_resource)
{
	return step(ev, n, a, na, "GroupCheck", NULL, "ResourceCheck");
}

FN(f_res_part)
{
	return step(ev, n, a, na, "ResourceCheck", NULL, "ResourceCheck");
}

FN(f_check)
{
	const struct authz_check *c = as_check(&a[0]);

	(void)na;
	if (!c || (strcmp(c->what, "ResourceCheck") != 0 && strcmp(c->what, "PathCheck") != 0))
		return no_overload(ev, n, &a[0]);
	if (a[1].kind != CEL_STRING)
		return no_overload(ev, n, &a[1]);
	if (!ev->host || !ev->host->call || c->selectors)
		return cel_err(ev, n->pos,
			       "authorizer: %s check('%.*s'): authorization checks need the API "
			       "server's authorizer, which gavel does not query %s",
			       c->desc, (int)a[1].v.s.n, a[1].v.s.p,
			       c->selectors ? "with field or label selectors" : "here");
	{
		json_t *spec = json_object(), *args = json_array();
		const json_t *r;
		char msg[512] = "";
		struct authz_decision *d;
		struct cel_value v = {.kind = CEL_OPAQUE};
		const char *keys[] = {"group", "resource", "subresource", "namespace",
				      "name",  "path",	   "saNamespace", "saName"};
		const char *vals[] = {c->group, c->resource, c->subresource,  c->namespace,
				      c->name,	c->path,     c->sa_namespace, c->sa_name};
		for (size_t i = 0; i < GV_ARRAY_LEN(keys); i++)
			if (vals[i])
				json_object_set_new(spec, keys[i], json_string(vals[i]));
		json_object_set_new(spec, "verb", json_stringn(a[1].v.s.p, a[1].v.s.n));
		json_array_append_new(args, spec);
		r = ev->host->call(ev->host->ud, "authorizer.check", args, msg, sizeof(msg));
		json_decref(args);
		ev->gen++;
		if (!r)
			return cel_err(ev, n->pos, "%s",
				       msg[0] ? msg : "authorization check failed");
		d = cel_eval_alloc(ev, sizeof(*d));
		d->allowed = json_is_true(json_object_get(r, "allowed"));
		d->reason = cel_eval_strdup(ev,
					    json_string_value(json_object_get(r, "reason"))
						? json_string_value(json_object_get(r, "reason"))
						: "",
					    json_string_length(json_object_get(r, "reason")));
		d->error =
		    cel_eval_strdup(ev,
				    json_string_value(json_object_get(r, "evaluationError"))
					? json_string_value(json_object_get(r, "evaluationError"))
					: "",
				    json_string_length(json_object_get(r, "evaluationError")));
		v.v.obj.type = &decision_type;
		v.v.obj.data = d;
		return v;
	}
}

/* The Decision accessors (allowed, reason, errored, error). */
FN(f_decision)
{
	const struct authz_decision *d =
	    a[0].kind == CEL_OPAQUE && a[0].v.obj.type == &decision_type ? a[0].v.obj.data : NULL;

	(void)na;
	if (!d)
		return no_overload(ev, n, &a[0]);
	if (!strcmp(n->name, "allowed"))
		return cel_bool(d->allowed);
	if (!strcmp(n->name, "errored"))
		return cel_bool(*d->error != '\0');
	if (!strcmp(n->name, "reason"))
		return cel_str(d->reason, strlen(d->reason));
	return cel_str(d->error, strlen(d->error));
}

#define M CEL_FN_MEMBER
const struct cel_func cel_authz_funcs[] = {
    {"group", f_group, 2, 2, M, false},
    {"path", f_path, 2, 2, M, false},
    {"serviceAccount", f_service_account, 3, 3, M, false},
    {"resource", f_resource, 2, 2, M, false},
    {"subresource", f_res_part, 2, 2, M, false},
    {"namespace", f_res_part, 2, 2, M, false},
    {"name", f_res_part, 2, 2, M, false},
    {"fieldSelector", f_res_part, 2, 2, M, false},
    {"labelSelector", f_res_part, 2, 2, M, false},
    {"check", f_check, 2, 2, M, false},
    {"allowed", f_decision, 1, 1, M, false},
    {"reason", f_decision, 1, 1, M, false},
    {"errored", f_decision, 1, 1, M, false},
    {"error", f_decision, 1, 1, M, false},
};
#undef M
const size_t cel_authz_nfuncs = GV_ARRAY_LEN(cel_authz_funcs);
