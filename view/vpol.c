/*
 * vpol.c - the CEL policies of a cluster view (view.h "CEL policies"):
 * compiled policies.kyverno.io ValidatingPolicy / NamespacedValidatingPolicy
 * documents and CEL PolicyExceptions, shared by the admission handler and
 * the background scans.
 */
#include "view/view.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/banned.h"

struct view_vpolset {
	atomic_int refs;
	struct vpol_policy **v; /* owned */
	size_t n;
	struct vpol_exception **x; /* owned */
	int64_t *xexp;		   /* spec.expiresAt of x[i], Unix seconds; INT64_MAX = none */
	size_t nx;
	json_t *errors;	   /* owned: [{kind, namespace, name, pointer, message}] */
	json_t *xdocs;	   /* owned: the documents of x, in order */
	json_t *bindings;  /* owned: ValidatingAdmissionPolicyBinding documents */
	const json_t **bv; /* owned array of borrowed pointers into bindings */
};

static const char *meta(const json_t *doc, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(doc, "metadata"), key));

	return s ? s : "";
}

/*
 * spec.expiresAt (RFC 3339: date, time, fraction, Z or +hh:mm) in Unix
 * seconds; INT64_MAX when absent; INT64_MIN when unreadable (the exception
 * is then never applied).
 */
static int64_t expires_at(const json_t *doc)
{
	const char *s =
	    json_string_value(json_object_get(json_object_get(doc, "spec"), "expiresAt"));
	struct tm tm = {0};
	int Y, M, D, h, m, sec, n = 0, oh = 0, om = 0;
	const char *z;
	char sign;

	if (!s)
		return INT64_MAX;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 || !n)
		return INT64_MIN;
	z = s + n;
	if (*z == '.')
		for (z++; *z >= '0' && *z <= '9'; z++)
			;
	if (*z == 'Z' || *z == 'z') {
		if (z[1])
			return INT64_MIN;
	} else if ((*z == '+' || *z == '-') && sscanf(z, "%c%2d:%2d", &sign, &oh, &om) == 3 &&
		   strlen(z) == 6) {
		if (sign == '-') {
			oh = -oh;
			om = -om;
		}
	} else {
		return INT64_MIN;
	}
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	return (int64_t)timegm(&tm) - (int64_t)oh * 3600 - (int64_t)om * 60;
}

static void add_error(json_t *errors, const json_t *doc, const struct gv_err *err)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	json_array_append_new(errors, json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind",
						kind ? kind : "", "namespace",
						meta(doc, "namespace"), "name", meta(doc, "name"),
						"pointer", err->pointer, "message", err->msg));
}

struct view_vpolset *view_vpolset_new(const json_t *policies, const json_t *exceptions)
{
	struct view_vpolset *s = gv_xcalloc(1, sizeof(*s));
	size_t i;
	const json_t *d;

	atomic_init(&s->refs, 1);
	s->errors = json_array();
	s->xdocs = json_array();
	s->v = gv_xcalloc(json_array_size(policies) + 1, sizeof(*s->v));
	json_array_foreach(policies, i, d)
	{
		struct gv_err err = {0};
		struct vpol_policy *p;
		if (!vpol_is_policy_doc(d))
			continue;
		p = vpol_compile(d, &err);
		if (!p) {
			gv_warn("snapshot: %s %s%s%s not loaded: %s%s%s",
				json_string_value(json_object_get(d, "kind")), meta(d, "namespace"),
				*meta(d, "namespace") ? "/" : "", meta(d, "name"), err.pointer,
				err.pointer[0] ? ": " : "", err.msg);
			add_error(s->errors, d, &err);
			continue;
		}
		s->v[s->n++] = p;
	}
	s->x = gv_xcalloc(json_array_size(exceptions) + 1, sizeof(*s->x));
	s->xexp = gv_xcalloc(json_array_size(exceptions) + 1, sizeof(*s->xexp));
	json_array_foreach(exceptions, i, d)
	{
		struct gv_err err = {0};
		struct vpol_exception *x = vpol_exception_compile(d, &err);
		if (!x) {
			gv_warn("snapshot: CEL PolicyException %s/%s not loaded: %s%s%s",
				meta(d, "namespace"), meta(d, "name"), err.pointer,
				err.pointer[0] ? ": " : "", err.msg);
			add_error(s->errors, d, &err);
			continue;
		}
		s->xexp[s->nx] = expires_at(d);
		if (s->xexp[s->nx] == INT64_MIN)
			gv_warn(
			    "snapshot: CEL PolicyException %s/%s: spec.expiresAt %s is not an RFC "
			    "3339 time: the exception is not applied",
			    meta(d, "namespace"), meta(d, "name"),
			    json_string_value(
				json_object_get(json_object_get(d, "spec"), "expiresAt")));
		s->x[s->nx++] = x;
		json_array_append(s->xdocs, (json_t *)d);
	}
	return s;
}

struct view_vpolset *view_vpolset_ref(struct view_vpolset *s)
{
	if (s)
		atomic_fetch_add(&s->refs, 1);
	return s;
}

void view_vpolset_unref(struct view_vpolset *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->n; i++)
		vpol_free(s->v[i]);
	for (size_t i = 0; i < s->nx; i++)
		vpol_exception_free(s->x[i]);
	free(s->v);
	free(s->x);
	free(s->xexp);
	json_decref(s->errors);
	json_decref(s->xdocs);
	json_decref(s->bindings);
	free(s->bv);
	free(s);
}

size_t view_vpolset_count(const struct view_vpolset *s)
{
	return s ? s->n : 0;
}

const struct vpol_policy *view_vpolset_policy(const struct view_vpolset *s, size_t i)
{
	return s && i < s->n ? s->v[i] : NULL;
}

struct vpol_exception *const *view_vpolset_exceptions(const struct view_vpolset *s, size_t *n)
{
	*n = s ? s->nx : 0;
	return s ? s->x : NULL;
}

size_t view_vpolset_exceptions_at(const struct view_vpolset *s, int64_t now,
				  struct vpol_exception **out)
{
	size_t k = 0;

	for (size_t i = 0; s && i < s->nx; i++)
		if (s->xexp[i] > now)
			out[k++] = s->x[i];
	return k;
}

size_t view_vpolset_exception_docs_at(const struct view_vpolset *s, int64_t now, const json_t **out)
{
	size_t k = 0;

	for (size_t i = 0; s && i < s->nx; i++)
		if (s->xexp[i] > now)
			out[k++] = json_array_get(s->xdocs, i);
	return k;
}

void view_vpolset_set_bindings(struct view_vpolset *s, const json_t *bindings)
{
	size_t i;
	const json_t *d;

	json_decref(s->bindings);
	free(s->bv);
	s->bindings = json_array();
	json_array_foreach(bindings, i, d)
	{
		if (vpol_is_binding_doc(d))
			json_array_append(s->bindings, (json_t *)d);
	}
	s->bv = gv_xcalloc(json_array_size(s->bindings) + 1, sizeof(*s->bv));
	for (i = 0; i < json_array_size(s->bindings); i++)
		s->bv[i] = json_array_get(s->bindings, i);
}

const json_t *const *view_vpolset_bindings(const struct view_vpolset *s, size_t *n)
{
	*n = s && s->bindings ? json_array_size(s->bindings) : 0;
	return s ? s->bv : NULL;
}

const json_t *view_vpolset_errors(const struct view_vpolset *s)
{
	return s ? s->errors : NULL;
}

static const json_t *spec_of(const struct vpol_policy *p)
{
	return json_object_get(vpol_doc(p), "spec");
}

unsigned view_vpol_actions(const struct vpol_policy *p)
{
	const json_t *acts = json_object_get(spec_of(p), "validationActions");
	unsigned bits = 0;
	size_t i;
	const json_t *a;

	if (!json_array_size(acts))
		return VIEW_VPOL_DENY;
	json_array_foreach(acts, i, a)
	{
		const char *s = json_string_value(a);
		if (!s)
			continue;
		if (!strcmp(s, "Deny"))
			bits |= VIEW_VPOL_DENY;
		else if (!strcmp(s, "Warn"))
			bits |= VIEW_VPOL_WARN;
		else if (!strcmp(s, "Audit"))
			bits |= VIEW_VPOL_AUDIT;
	}
	return bits;
}

/* evaluation.<which>.enabled, true unless false. */
static bool enabled(const struct vpol_policy *p, const char *which)
{
	const json_t *e = json_object_get(
	    json_object_get(json_object_get(spec_of(p), "evaluation"), which), "enabled");

	return !json_is_false(e);
}

bool view_vpol_admission(const struct vpol_policy *p)
{
	return enabled(p, "admission");
}

bool view_vpol_background(const struct vpol_policy *p)
{
	return enabled(p, "background");
}

enum engine_failure_policy view_vpol_failure_policy(const struct vpol_policy *p)
{
	const char *fp = json_string_value(json_object_get(spec_of(p), "failurePolicy"));

	return fp && !strcmp(fp, "Ignore") ? ENGINE_FAILURE_IGNORE : ENGINE_FAILURE_FAIL;
}
