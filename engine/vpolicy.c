/*
 * vpolicy.c - CEL policies (vpolicy.h): ValidatingPolicy,
 * NamespacedValidatingPolicy, ValidatingAdmissionPolicy, CEL
 * PolicyExceptions and validate.cel bodies (cel-semantics.md 2-5).
 */
#include "engine/vpolicy.h"

#include <ctype.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/cel/cel.h"
#include "engine/engine_int.h"
#include "common/banned.h"

/* ---- compiled pieces ---- */

struct vexpr {
	char *name;		  /* owned: variable/condition name, audit key, or NULL */
	struct cel_program *prog; /* owned */
	bool reads_vars;	  /* the text names `variables` */
};

struct vvalidation {
	struct cel_program *expr;     /* owned */
	struct cel_program *msg_expr; /* owned or NULL */
	char *message;		      /* owned or NULL */
};

/* One resourceRules entry (section 2.3 step 4). */
struct rrule {
	char **ops, **groups, **versions, **resources, **names;
	size_t nops, ngroups, nversions, nresources, nnames;
	int scope; /* 0 any, 1 Cluster, 2 Namespaced */
};

struct vmatch {
	bool present; /* matchConstraints given */
	struct rrule *rules, *excl;
	size_t nrules, nexcl;
	struct selector *ns_sel, *obj_sel; /* NULL = match all */
	bool keep_empty;		   /* the CLI keeps an empty response (hasSelector) */
};

/* The evaluable part shared by ValidatingPolicy, VAP and validate.cel. */
struct vbody {
	struct vmatch match;
	struct vexpr *conds, *vars, *audits;
	size_t nconds, nvars, naudits;
	struct vvalidation *vals;
	size_t nvals;
	bool ignore; /* failurePolicy: Ignore */
};

struct vpol_policy {
	enum vpol_kind kind;
	char *name, *namespace; /* owned */
	json_t *doc;		/* owned reference */
	bool json_mode;
	bool has_param_kind;
	bool uses_request;    /* an expression may read `request` */
	struct vbody *bodies; /* [0] the policy, then its autogen copies */
	size_t nbodies;
};

struct vpol_exception {
	char *name, *namespace;
	char **ref_names, **ref_kinds;
	size_t nrefs;
	struct vexpr *conds;
	size_t nconds;
	json_t *images, *values; /* owned arrays or NULL */
	bool uses_request;	 /* a condition may read `request` */
	bool report_pass;
	long priority;
};

struct vpol_cel {
	struct vbody body;
	char *rule;
	char *default_message; /* validate.message or NULL */
	bool has_params;       /* paramKind and paramRef */
	json_t *param_kind;    /* owned reference, or NULL */
	json_t *param_ref;     /* owned reference, or NULL */
};

/* ---- small helpers ---- */

static const char *str_of(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static char **str_array(const json_t *a, size_t *n)
{
	char **v;
	size_t i;
	json_t *e;

	*n = 0;
	if (!json_is_array(a))
		return NULL;
	v = gv_xcalloc(json_array_size(a) + 1, sizeof(*v));
	json_array_foreach(a, i, e)
	{
		if (json_is_string(e))
			v[(*n)++] = gv_xstrdup(json_string_value(e));
	}
	return v;
}

static void str_array_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool in_list(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], "*") || !strcmp(v[i], s))
			return true;
	return false;
}

/* Kyverno CEL library names (cel-semantics.md section 6) that gavel does not evaluate. */
static const char *kyverno_lib_call(const char *src)
{
	static const char *const names[] = {
	    "resource.",
	    "http.",
	    "image.",
	    "imageData.",
	    "imagedata.",
	    "globalContext.",
	    "parseImageReference",
	    "isImage(",
	    "parseServiceAccount",
	    "user.",
	    "x509.",
	    "json.",
	    "yaml.",
	    "time.",
	    "hash.",
	    "sha1(",
	    "sha256(",
	    "md5(",
	    "random(",
	    "gzip.",
	    "listObjToMap",
	    "transform.",
	    "exceptions.",
	    "authorizer.",
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++) {
		const char *p = strstr(src, names[i]);
		while (p) {
			/* a name, not the tail of an identifier or a field (object.image.) */
			if (p == src ||
			    (!isalnum((unsigned char)p[-1]) && p[-1] != '_' && p[-1] != '.'))
				return names[i];
			p = strstr(p + 1, names[i]);
		}
	}
	return NULL;
}

/*
 * The first call of a host-answered Kyverno library function in src
 * ("resource.Get(", ...), or NULL: those compile in every environment, so
 * the VAP / validate.cel environment refuses them by name.
 */
static const char *host_call_in(const char *src)
{
	static const char *const names[] = {
	    "resource.Get(",
	    "resource.get(",
	    "resource.List(",
	    "resource.list(",
	    "image.GetMetadata(",
	    "image.getMetadata(",
	    "globalContext.Get(",
	    "globalContext.get(",
	    "http.Get(",
	    "http.get(",
	    "http.Post(",
	    "http.post(",
	    "parseServiceAccount(",
	    "user.parseServiceAccount(",
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++) {
		const char *p = strstr(src, names[i]);
		while (p) {
			if (p == src ||
			    (!isalnum((unsigned char)p[-1]) && p[-1] != '_' && p[-1] != '.'))
				return names[i];
			p = strstr(p + 1, names[i]);
		}
	}
	return NULL;
}

#define UNSUPPORTED_PREFIX "gavel does not evaluate "

/*
 * Compiling for the VAP / validate.cel environment, which has no Kyverno
 * libraries (cel-semantics.md 1.1): set around those compiles only. The
 * compiles of one policy run on one thread, so a thread-local flag.
 */
static _Thread_local bool vap_env;

/* Whether text holds the identifier id (delimited by non-identifier bytes). */
static bool text_mentions(const char *text, const char *id)
{
	size_t n = strlen(id);

	for (const char *p = text; (p = strstr(p, id)); p += n) {
		bool before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		bool after = isalnum((unsigned char)p[n]) || p[n] == '_';
		if (!before && !after)
			return true;
	}
	return false;
}

/* Whether type is one of the '|'-separated types of want. */
static bool type_in(const char *type, const char *want)
{
	size_t n = strlen(type);

	for (const char *w = want; w;) {
		const char *bar = strchr(w, '|');
		size_t wn = bar ? (size_t)(bar - w) : strlen(w);
		if (wn == n && !strncmp(w, type, n))
			return true;
		w = bar ? bar + 1 : NULL;
	}
	return false;
}

/*
 * Compiles one expression at JSON pointer ptr, in the environment of d
 * (NULL: every variable dyn). want: the static types the result may have
 * ("bool", "string|null_type"; cel-semantics.md 1.10), or NULL for any; a
 * type the check does not know is let through (checked when evaluated).
 */
static enum gv_code expr_compile(const json_t *j, const char *ptr, const struct cel_decls *d,
				 const char *want, struct cel_program **out, struct gv_err *err)
{
	struct cel_parse_error pe = {0};
	const char *src = json_string_value(j);

	*out = NULL;
	if (!src)
		return gv_err_setp(err, GV_EINVAL, ptr, "expression must be a string");
	if (vap_env && host_call_in(src)) {
		const char *lib = host_call_in(src);
		return gv_err_setp(err, GV_EINVAL, ptr,
				   UNSUPPORTED_PREFIX "the Kyverno CEL library (%.*s) used by "
						      "expression %s",
				   (int)strcspn(lib, ".("), lib, src);
	}
	*out = cel_compile_decls(src, strlen(src), 0, d, &pe);
	if (*out) {
		const char *type = cel_program_type(*out);
		char w[64];
		if (!want || !cel_program_type_known(*out) || type_in(type, want))
			return GV_OK;
		snprintf(w, sizeof(w), "%.*s", (int)strcspn(want, "|"), want);
		gv_err_setp(err, GV_EINVAL, ptr,
			    "compilation failed: output is expected to be of type %s, but "
			    "expression %s is of type %s",
			    w, src, type);
		cel_program_free(*out);
		*out = NULL;
		return GV_EINVAL;
	}
	{
		const char *lib = kyverno_lib_call(src);
		if (lib)
			return gv_err_setp(err, GV_EINVAL, ptr,
					   UNSUPPORTED_PREFIX "the Kyverno CEL library (%.*s) used "
							      "by expression %s",
					   (int)strcspn(lib, ".("), lib, src);
	}
	return gv_err_setp(err, GV_EINVAL, ptr, "compilation failed: ERROR: <input>:%d:%d: %s\n%s",
			   pe.line, pe.col, pe.msg, pe.caret);
}

/*
 * Compiles a list of {name_key, expr_key} objects. d and want as
 * expr_compile; with vars, d is the environment of the first one and each
 * later one also sees the earlier ones (Kubernetes' variables: each may
 * read the variables defined before it only).
 */
static enum gv_code exprs_compile(const json_t *list, const char *ptr, const char *name_key,
				  const char *expr_key, const struct cel_decls *d, const char *want,
				  bool vars, struct vexpr **out, size_t *n, struct gv_err *err)
{
	size_t i;
	json_t *e;
	enum gv_code rc = GV_OK;
	struct cel_decls vd = d ? *d : (struct cel_decls){0};
	const char **names = NULL, **types = NULL;

	*out = NULL;
	*n = 0;
	if (!list || json_is_null(list))
		return GV_OK;
	if (!json_is_array(list))
		return gv_err_setp(err, GV_EINVAL, ptr, "must be a list");
	*out = gv_xcalloc(json_array_size(list) + 1, sizeof(**out));
	if (vars && d && d->typed_variables) {
		names = gv_xcalloc(d->nvars + json_array_size(list) + 1, sizeof(*names));
		types = gv_xcalloc(d->nvars + json_array_size(list) + 1, sizeof(*types));
		for (i = 0; i < d->nvars; i++) {
			names[i] = d->var_names[i];
			types[i] = d->var_types[i];
		}
		vd.var_names = names;
		vd.var_types = types;
	}
	json_array_foreach(list, i, e)
	{
		char p[512];
		struct vexpr *x = &(*out)[*n];
		snprintf(p, sizeof(p), "%s/%zu/%s", ptr, i, expr_key);
		if ((rc = expr_compile(json_object_get(e, expr_key), p, d ? &vd : NULL, want,
				       &x->prog, err)))
			goto out;
		x->name = name_key ? gv_xstrdup(str_of(e, name_key)) : NULL;
		x->reads_vars = text_mentions(cel_program_source(x->prog), "variables");
		(*n)++;
		if (names) {
			names[vd.nvars] = x->name;
			types[vd.nvars++] =
			    cel_program_type_known(x->prog) ? cel_program_type(x->prog) : "?";
		}
	}
out:
	free(names);
	free(types);
	return rc;
}

static void exprs_free(struct vexpr *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		cel_program_free(v[i].prog);
	}
	free(v);
}

static void rrule_compile(const json_t *j, struct rrule *r)
{
	const char *scope = str_of(j, "scope");

	memset(r, 0, sizeof(*r));
	r->ops = str_array(json_object_get(j, "operations"), &r->nops);
	r->groups = str_array(json_object_get(j, "apiGroups"), &r->ngroups);
	r->versions = str_array(json_object_get(j, "apiVersions"), &r->nversions);
	r->resources = str_array(json_object_get(j, "resources"), &r->nresources);
	r->names = str_array(json_object_get(j, "resourceNames"), &r->nnames);
	r->scope = !strcmp(scope, "Cluster") ? 1 : !strcmp(scope, "Namespaced") ? 2 : 0;
}

static void rrule_release(struct rrule *r)
{
	str_array_free(r->ops, r->nops);
	str_array_free(r->groups, r->ngroups);
	str_array_free(r->versions, r->nversions);
	str_array_free(r->resources, r->nresources);
	str_array_free(r->names, r->nnames);
}

static bool selector_nonempty(const json_t *s)
{
	return json_object_size(json_object_get(s, "matchLabels")) ||
	       json_array_size(json_object_get(s, "matchExpressions"));
}

static enum gv_code vmatch_compile(const json_t *mc, const char *ptr, struct vmatch *m,
				   struct gv_err *err)
{
	const json_t *rules = json_object_get(mc, "resourceRules");
	const json_t *excl = json_object_get(mc, "excludeResourceRules");
	const json_t *ns = json_object_get(mc, "namespaceSelector");
	const json_t *obj = json_object_get(mc, "objectSelector");
	struct gv_buf p = {0};
	enum gv_code rc = GV_OK;
	size_t i;
	json_t *e;
	bool names = false;

	memset(m, 0, sizeof(*m));
	if (!mc || json_is_null(mc))
		return GV_OK;
	m->present = true;
	if (json_is_array(rules)) {
		m->rules = gv_xcalloc(json_array_size(rules) + 1, sizeof(*m->rules));
		json_array_foreach(rules, i, e)
		{
			rrule_compile(e, &m->rules[m->nrules++]);
			names = names || json_array_size(json_object_get(e, "resourceNames"));
		}
	}
	if (json_is_array(excl)) {
		m->excl = gv_xcalloc(json_array_size(excl) + 1, sizeof(*m->excl));
		json_array_foreach(excl, i, e) rrule_compile(e, &m->excl[m->nexcl++]);
	}
	if (selector_nonempty(ns)) {
		gv_buf_addf(&p, "%s/namespaceSelector", ptr);
		if ((rc = selector_compile(ns, &m->ns_sel, &p, err)))
			goto out;
	}
	if (selector_nonempty(obj)) {
		gv_buf_reset(&p);
		gv_buf_addf(&p, "%s/objectSelector", ptr);
		if ((rc = selector_compile(obj, &m->obj_sel, &p, err)))
			goto out;
	}
	/* TEST-FORMAT.md 7.2 step 2: the CLI's hasSelector. */
	m->keep_empty = m->nrules != 1 || names || m->nexcl || m->ns_sel || m->obj_sel;
out:
	gv_buf_release(&p);
	return rc;
}

static void vmatch_release(struct vmatch *m)
{
	for (size_t i = 0; i < m->nrules; i++)
		rrule_release(&m->rules[i]);
	for (size_t i = 0; i < m->nexcl; i++)
		rrule_release(&m->excl[i]);
	free(m->rules);
	free(m->excl);
	selector_free(m->ns_sel);
	selector_free(m->obj_sel);
}

static void body_release_v(struct vbody *b)
{
	vmatch_release(&b->match);
	exprs_free(b->conds, b->nconds);
	exprs_free(b->vars, b->nvars);
	exprs_free(b->audits, b->naudits);
	for (size_t i = 0; i < b->nvals; i++) {
		cel_program_free(b->vals[i].expr);
		cel_program_free(b->vals[i].msg_expr);
		free(b->vals[i].message);
	}
	free(b->vals);
	memset(b, 0, sizeof(*b));
}

static enum gv_code validations_compile(const json_t *list, const char *ptr, struct vbody *b,
					const struct cel_decls *d, bool typed, struct gv_err *err)
{
	size_t i;
	json_t *e;
	enum gv_code rc;

	if (!list || json_is_null(list))
		return GV_OK;
	if (!json_is_array(list))
		return gv_err_setp(err, GV_EINVAL, ptr, "must be a list");
	b->vals = gv_xcalloc(json_array_size(list) + 1, sizeof(*b->vals));
	json_array_foreach(list, i, e)
	{
		char p[512];
		struct vvalidation *v = &b->vals[b->nvals];
		const json_t *me = json_object_get(e, "messageExpression");
		const json_t *msg = json_object_get(e, "message");

		snprintf(p, sizeof(p), "%s/%zu/expression", ptr, i);
		if ((rc = expr_compile(json_object_get(e, "expression"), p, d,
				       typed ? "bool" : NULL, &v->expr, err)))
			return rc;
		b->nvals++;
		if (json_is_string(me) && json_string_length(me)) {
			snprintf(p, sizeof(p), "%s/%zu/messageExpression", ptr, i);
			if ((rc = expr_compile(me, p, d, typed ? "string" : NULL, &v->msg_expr,
					       err)))
				return rc;
		}
		if (json_is_string(msg))
			v->message = gv_xstrdup(json_string_value(msg));
	}
	return GV_OK;
}

/*
 * spec fields shared by ValidatingPolicy and VAP. Variables are typed
 * (variables.<name> has the type of its expression; an undefined or later
 * one is a compile error); typed (ValidatingPolicy): result types and
 * undeclared names as cel-semantics.md 1.10.
 */
static enum gv_code body_compile_spec(const json_t *spec, struct vbody *b, bool with_match,
				      bool typed, struct gv_err *err)
{
	static const char *const undeclared[] = {"params", "authorizer"};
	struct cel_decls d = {.typed_variables = true};
	const char **names = NULL, **types = NULL;
	enum gv_code rc;

	memset(b, 0, sizeof(*b));
	if (typed) {
		d.undeclared = undeclared;
		d.nundeclared = GV_ARRAY_LEN(undeclared);
	}
	if (with_match && (rc = vmatch_compile(json_object_get(spec, "matchConstraints"),
					       "/spec/matchConstraints", &b->match, err)))
		return rc;
	/* Match conditions run before the variables: `variables` stays untyped there. */
	{
		struct cel_decls cd = d;
		cd.typed_variables = false;
		if ((rc = exprs_compile(json_object_get(spec, "matchConditions"),
					"/spec/matchConditions", "name", "expression", &cd,
					typed ? "bool" : NULL, false, &b->conds, &b->nconds, err)))
			return rc;
	}
	if ((rc = exprs_compile(json_object_get(spec, "variables"), "/spec/variables", "name",
				"expression", &d, NULL, true, &b->vars, &b->nvars, err)))
		return rc;
	names = gv_xcalloc(b->nvars + 1, sizeof(*names));
	types = gv_xcalloc(b->nvars + 1, sizeof(*types));
	for (size_t i = 0; i < b->nvars; i++) {
		names[i] = b->vars[i].name;
		types[i] = cel_program_type_known(b->vars[i].prog)
			       ? cel_program_type(b->vars[i].prog)
			       : "?";
	}
	d.var_names = names;
	d.var_types = types;
	d.nvars = b->nvars;
	if ((rc = validations_compile(json_object_get(spec, "validations"), "/spec/validations", b,
				      &d, typed, err)))
		goto out;
	if ((rc = exprs_compile(json_object_get(spec, "auditAnnotations"), "/spec/auditAnnotations",
				"key", "valueExpression", &d, typed ? "string|null_type" : NULL,
				false, &b->audits, &b->naudits, err)))
		goto out;
	b->ignore = !strcmp(str_of(spec, "failurePolicy"), "Ignore");
out:
	free(names);
	free(types);
	return rc;
}

/* ---- documents ---- */

static bool av_is(const json_t *doc, const char *group)
{
	const char *av = str_of(doc, "apiVersion");
	size_t n = strlen(group);

	return !strncmp(av, group, n) && av[n] == '/';
}

bool vpol_is_policy_doc(const json_t *doc)
{
	const char *kind = str_of(doc, "kind");
	const char *av = str_of(doc, "apiVersion");

	if (av_is(doc, "policies.kyverno.io"))
		return !strcmp(kind, "ValidatingPolicy") ||
		       !strcmp(kind, "NamespacedValidatingPolicy");
	return !strcmp(av, "admissionregistration.k8s.io/v1") &&
	       !strcmp(kind, "ValidatingAdmissionPolicy");
}

bool vpol_is_exception_doc(const json_t *doc)
{
	return av_is(doc, "policies.kyverno.io") && !strcmp(str_of(doc, "kind"), "PolicyException");
}

bool vpol_is_binding_doc(const json_t *doc)
{
	return av_is(doc, "admissionregistration.k8s.io") &&
	       !strcmp(str_of(doc, "kind"), "ValidatingAdmissionPolicyBinding");
}

/* ---- autogen (section 2.7) ---- */

static bool ident_byte(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/*
 * Whether a string anywhere in j holds the identifier id (delimited by
 * non-identifier bytes): a CEL expression that reads a variable names it,
 * so one without it never reads that variable (messages and names may give
 * false positives, which only cost the variable's construction).
 */
static bool json_mentions(const json_t *j, const char *id)
{
	size_t i;
	const char *k;
	json_t *v;

	if (json_is_string(j))
		return text_mentions(json_string_value(j), id);
	if (json_is_array(j)) {
		json_array_foreach(j, i, v) if (json_mentions(v, id)) return true;
		return false;
	}
	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, k, v) if (json_mentions(v, id)) return true;
	}
	return false;
}

char *vpol_autogen_text(const char *text, bool cronjob, bool keep_namespace)
{
	static const char *const from[] = {"oldObject.spec", "oldObject.metadata", "object.spec",
					   "object.metadata"};
	const char *tmpl = cronjob ? "spec.jobTemplate.spec.template." : "spec.template.";
	struct gv_buf b = {0};
	const char *p = text;

	while (*p) {
		bool done = false;
		for (size_t i = 0; i < GV_ARRAY_LEN(from) && !done; i++) {
			size_t n = strlen(from[i]);
			const char *field = strchr(from[i], '.') + 1;
			size_t head = (size_t)(field - from[i]);
			if (strncmp(p, from[i], n) || ident_byte(p[n]))
				continue;
			if (keep_namespace && !strcmp(field, "metadata") &&
			    !strncmp(p + n, ".namespace", 10) && !ident_byte(p[n + 10]))
				continue;
			gv_buf_add(&b, p, head);
			gv_buf_adds(&b, tmpl);
			gv_buf_adds(&b, field);
			p += n;
			done = true;
		}
		if (!done) {
			/* "oldObject" must not be read as "...Object" + "object" later. */
			if (!strncmp(p, "oldObject", 9)) {
				gv_buf_add(&b, p, 9);
				p += 9;
			} else {
				gv_buf_addc(&b, *p++);
			}
		}
	}
	return gv_buf_detach(&b);
}

static bool str_is(const json_t *a, const char *want)
{
	const char *s = json_string_value(json_array_get(a, 0));
	return json_array_size(a) == 1 && s && !strcmp(s, want);
}

static bool pod_only(const json_t *mc)
{
	const json_t *rules = json_object_get(mc, "resourceRules");
	const json_t *r = json_array_get(rules, 0);

	if (json_array_size(rules) != 1 ||
	    json_array_size(json_object_get(mc, "excludeResourceRules")) ||
	    selector_nonempty(json_object_get(mc, "objectSelector")) ||
	    json_array_size(json_object_get(r, "resourceNames")))
		return false;
	return str_is(json_object_get(r, "apiGroups"), "") &&
	       str_is(json_object_get(r, "apiVersions"), "v1") &&
	       str_is(json_object_get(r, "resources"), "pods");
}

static bool ctl_has(const json_t *ctl, const char *name)
{
	size_t k;
	json_t *c;

	if (!json_is_array(ctl))
		return true;
	json_array_foreach(ctl, k, c)
	{
		if (json_is_string(c) && !strcmp(json_string_value(c), name))
			return true;
	}
	return false;
}

static json_t *autogen_rule_for(const json_t *pod_rule, const char *group,
				const char *const *resources, size_t n)
{
	json_t *r = json_object();
	json_t *res = json_array();
	const json_t *ops = json_object_get(pod_rule, "operations");

	for (size_t i = 0; i < n; i++)
		json_array_append_new(res, json_string(resources[i]));
	json_object_set_new(r, "apiGroups", json_pack("[s]", group));
	json_object_set_new(r, "apiVersions", json_pack("[s]", "v1"));
	json_object_set_new(r, "resources", res);
	if (ops)
		json_object_set_new(r, "operations", json_deep_copy(ops));
	return r;
}

/*
 * The autogen copies' specs (0, 1 or 2 new references in out): the
 * controllers of `defaults` and `cronjobs` that podControllers lets through.
 */
static size_t autogen_specs(const json_t *spec, json_t **out)
{
	const json_t *mc = json_object_get(spec, "matchConstraints");
	const json_t *ctl = json_object_get(
	    json_object_get(json_object_get(spec, "autogen"), "podControllers"), "controllers");
	static const char *const apps[] = {"daemonsets", "deployments", "replicasets",
					   "statefulsets"};
	const char *on_apps[4];
	size_t napps = 0, nout = 0;
	bool jobs, cron;

	if (!json_is_object(mc) || !pod_only(mc))
		return 0;
	for (size_t i = 0; i < 4; i++)
		if (ctl_has(ctl, apps[i]))
			on_apps[napps++] = apps[i];
	jobs = ctl_has(ctl, "jobs");
	cron = ctl_has(ctl, "cronjobs");
	for (int which = 0; which < 2; which++) {
		const json_t *pod_rule = json_array_get(json_object_get(mc, "resourceRules"), 0);
		json_t *rules = json_array(), *nmc, *copy;
		char *text, *re;
		if (which == 0) {
			if (napps)
				json_array_append_new(
				    rules, autogen_rule_for(pod_rule, "apps", on_apps, napps));
			if (jobs) {
				static const char *const j[] = {"jobs"};
				json_array_append_new(rules,
						      autogen_rule_for(pod_rule, "batch", j, 1));
			}
		} else if (cron) {
			static const char *const c[] = {"cronjobs"};
			json_array_append_new(rules, autogen_rule_for(pod_rule, "batch", c, 1));
		}
		if (!json_array_size(rules)) {
			json_decref(rules);
			continue;
		}
		nmc = json_object();
		json_object_set_new(nmc, "resourceRules", rules);
		if (json_object_get(mc, "namespaceSelector"))
			json_object_set_new(
			    nmc, "namespaceSelector",
			    json_deep_copy(json_object_get(mc, "namespaceSelector")));
		copy = json_deep_copy(spec);
		json_object_del(copy, "matchConstraints");
		text = json_dumps(copy, JSON_COMPACT);
		json_decref(copy);
		re = vpol_autogen_text(text, which == 1, true);
		free(text);
		copy = json_loads(re, 0, NULL);
		free(re);
		if (!copy) {
			json_decref(nmc);
			continue;
		}
		json_object_set_new(copy, "matchConstraints", nmc);
		out[nout++] = copy;
	}
	return nout;
}

/* ---- compile ---- */

struct vpol_policy *vpol_compile(const json_t *doc, struct gv_err *err)
{
	struct vpol_policy *p;
	const json_t *spec = json_object_get(doc, "spec");
	const char *kind = str_of(doc, "kind");
	json_t *copies[2];
	size_t ncopies = 0;
	enum gv_code rc;

	if (!vpol_is_policy_doc(doc)) {
		gv_err_setp(err, GV_EINVAL, "/kind", "not a CEL policy: %s %s",
			    str_of(doc, "apiVersion"), kind);
		return NULL;
	}
	p = gv_xcalloc(1, sizeof(*p));
	p->kind = !strcmp(kind, "ValidatingAdmissionPolicy")	? VPOL_VAP
		  : !strcmp(kind, "NamespacedValidatingPolicy") ? VPOL_NAMESPACED
								: VPOL_VALIDATING;
	p->name = gv_xstrdup(str_of(json_object_get(doc, "metadata"), "name"));
	p->namespace = gv_xstrdup(p->kind == VPOL_NAMESPACED
				      ? str_of(json_object_get(doc, "metadata"), "namespace")
				      : "");
	p->doc = json_incref((json_t *)doc);
	p->json_mode = !strcmp(str_of(json_object_get(spec, "evaluation"), "mode"), "JSON");
	p->has_param_kind = json_is_object(json_object_get(spec, "paramKind"));
	p->uses_request = json_mentions(spec, "request");
	if (!json_is_object(spec)) {
		gv_err_setp(err, GV_EINVAL, "/spec", "spec is required");
		goto fail;
	}
	if (p->kind != VPOL_VAP && !p->json_mode)
		ncopies = autogen_specs(spec, copies);
	p->bodies = gv_xcalloc(1 + ncopies, sizeof(*p->bodies));
	vap_env = p->kind == VPOL_VAP;
	rc = body_compile_spec(spec, &p->bodies[0], !p->json_mode, p->kind != VPOL_VAP, err);
	vap_env = false;
	p->nbodies = 1;
	for (size_t i = 0; i < ncopies; i++) {
		if (!rc) {
			rc = body_compile_spec(copies[i], &p->bodies[i + 1], true, true, err);
			p->nbodies++;
		}
		json_decref(copies[i]);
	}
	if (rc)
		goto fail;
	return p;
fail:
	vpol_free(p);
	return NULL;
}

void vpol_free(struct vpol_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nbodies; i++)
		body_release_v(&p->bodies[i]);
	free(p->bodies);
	free(p->name);
	free(p->namespace);
	json_decref(p->doc);
	free(p);
}

const char *vpol_name(const struct vpol_policy *p)
{
	return p->name;
}

const char *vpol_namespace(const struct vpol_policy *p)
{
	return p->namespace;
}

enum vpol_kind vpol_kind(const struct vpol_policy *p)
{
	return p->kind;
}

const char *vpol_kind_name(const struct vpol_policy *p)
{
	static const char *const names[] = {"ValidatingPolicy", "NamespacedValidatingPolicy",
					    "ValidatingAdmissionPolicy"};
	return names[p->kind];
}

bool vpol_json_mode(const struct vpol_policy *p)
{
	return p->json_mode;
}

bool vpol_denies(const struct vpol_policy *p)
{
	const json_t *acts = json_object_get(json_object_get(p->doc, "spec"), "validationActions");
	size_t i;
	json_t *a;

	if (p->kind == VPOL_VAP || !json_array_size(acts))
		return true;
	json_array_foreach(acts, i, a)
	{
		if (json_is_string(a) && !strcmp(json_string_value(a), "Deny"))
			return true;
	}
	return false;
}

const json_t *vpol_doc(const struct vpol_policy *p)
{
	return p->doc;
}

const char *vpol_annotation(const struct vpol_policy *p, const char *key)
{
	return json_string_value(json_object_get(
	    json_object_get(json_object_get(p->doc, "metadata"), "annotations"), key));
}

struct vpol_exception *vpol_exception_compile(const json_t *doc, struct gv_err *err)
{
	struct vpol_exception *x = gv_xcalloc(1, sizeof(*x));
	const json_t *spec = json_object_get(doc, "spec");
	const json_t *refs = json_object_get(spec, "policyRefs");
	const json_t *md = json_object_get(doc, "metadata");
	const char *prio = str_of(json_object_get(md, "labels"), "polex.kyverno.io/priority");
	size_t i;
	json_t *e;

	x->name = gv_xstrdup(str_of(md, "name"));
	x->namespace = gv_xstrdup(str_of(md, "namespace"));
	if (!json_array_size(refs)) {
		gv_err_setp(err, GV_EINVAL, "/spec/policyRefs", "policyRefs must not be empty");
		goto fail;
	}
	x->ref_names = gv_xcalloc(json_array_size(refs), sizeof(char *));
	x->ref_kinds = gv_xcalloc(json_array_size(refs), sizeof(char *));
	json_array_foreach(refs, i, e)
	{
		x->ref_names[x->nrefs] = gv_xstrdup(str_of(e, "name"));
		x->ref_kinds[x->nrefs++] = gv_xstrdup(str_of(e, "kind"));
	}
	if (exprs_compile(json_object_get(spec, "matchConditions"), "/spec/matchConditions", "name",
			  "expression", NULL, "bool", false, &x->conds, &x->nconds, err))
		goto fail;
	if (json_array_size(json_object_get(spec, "images")))
		x->images = json_incref(json_object_get(spec, "images"));
	if (json_array_size(json_object_get(spec, "allowedValues")))
		x->values = json_incref(json_object_get(spec, "allowedValues"));
	x->report_pass = !strcmp(str_of(spec, "reportResult"), "pass");
	x->uses_request = json_mentions(json_object_get(spec, "matchConditions"), "request");
	{
		char *end = NULL;
		long v = strtol(prio, &end, 10);
		x->priority = *prio && end && !*end && v > 0 ? v : 0;
	}
	return x;
fail:
	vpol_exception_free(x);
	return NULL;
}

void vpol_exception_free(struct vpol_exception *x)
{
	if (!x)
		return;
	free(x->name);
	free(x->namespace);
	str_array_free(x->ref_names, x->nrefs);
	str_array_free(x->ref_kinds, x->nrefs);
	exprs_free(x->conds, x->nconds);
	json_decref(x->images);
	json_decref(x->values);
	free(x);
}

/* ---- evaluation ---- */

/* The request's group, version, kind and resource. */
struct vreq {
	char group[128], version[64], kind[128], resource[160];
	const char *sub;
	const char *name, *namespace;
	const char *op;
	const json_t *labels, *old_labels;
};

/* Lower-case plural of a kind, as the CLI guesses an unknown one. */
void vpol_kind_resource(const char *kind, char *out, size_t n)
{
	size_t len = strlen(kind), i;
	char low[160];

	for (i = 0; i < len && i + 1 < sizeof(low); i++)
		low[i] = (char)tolower((unsigned char)kind[i]);
	low[i] = '\0';
	len = i;
	if (!strcmp(low, "endpoints"))
		snprintf(out, n, "%s", low);
	else if (len && low[len - 1] == 's')
		snprintf(out, n, "%ses", low);
	else if (len > 1 && low[len - 1] == 'y' && !strchr("aeiou", low[len - 2])) {
		low[len - 1] = '\0';
		snprintf(out, n, "%sies", low);
	} else
		snprintf(out, n, "%ss", low);
}

static void vreq_init(struct vreq *r, const struct vpol_input *in)
{
	const json_t *obj =
	    in->object && json_object_size(in->object) ? in->object : in->old_object;
	const char *av = str_of(obj, "apiVersion");
	const char *slash = strchr(av, '/');
	const json_t *md = json_object_get(obj, "metadata");

	memset(r, 0, sizeof(*r));
	if (slash) {
		snprintf(r->group, sizeof(r->group), "%.*s", (int)(slash - av), av);
		snprintf(r->version, sizeof(r->version), "%s", slash + 1);
	} else {
		snprintf(r->version, sizeof(r->version), "%s", av);
	}
	snprintf(r->kind, sizeof(r->kind), "%s", str_of(obj, "kind"));
	if (in->resource)
		snprintf(r->resource, sizeof(r->resource), "%s", in->resource);
	else
		vpol_kind_resource(r->kind, r->resource, sizeof(r->resource));
	r->sub = in->subresource ? in->subresource : "";
	r->name = str_of(md, "name");
	if (!*r->name)
		r->name = str_of(md, "generateName");
	r->namespace = str_of(md, "namespace");
	r->op = in->operation ? in->operation : "CREATE";
	if (!strcmp(r->op, "CONNECT"))
		r->op = "CREATE";
	r->labels = json_object_get(json_object_get(in->object, "metadata"), "labels");
	r->old_labels = json_object_get(json_object_get(in->old_object, "metadata"), "labels");
}

static bool resource_matches(char *const *res, size_t n, const char *resource, const char *sub)
{
	for (size_t i = 0; i < n; i++) {
		const char *r = res[i];
		const char *slash = strchr(r, '/');
		if (!slash) {
			if (!*sub && (!strcmp(r, "*") || !strcmp(r, resource)))
				return true;
			continue;
		}
		if (!*sub)
			continue;
		{
			size_t hl = (size_t)(slash - r);
			bool head = (hl == 1 && r[0] == '*') ||
				    (strlen(resource) == hl && !strncmp(r, resource, hl));
			bool tail = !strcmp(slash + 1, "*") || !strcmp(slash + 1, sub);
			if (head && tail)
				return true;
		}
	}
	return false;
}

static bool rrule_matches(const struct rrule *r, const struct vreq *q)
{
	bool cluster = !*q->namespace || !strcmp(q->resource, "namespaces");

	if (!in_list(r->ops, r->nops, q->op))
		return false;
	if (!in_list(r->groups, r->ngroups, q->group) ||
	    !in_list(r->versions, r->nversions, q->version))
		return false;
	if (!resource_matches(r->resources, r->nresources, q->resource, q->sub))
		return false;
	if (r->scope == 1 && !(!*q->namespace || !strcmp(q->resource, "namespaces")))
		return false;
	if (r->scope == 2 && cluster)
		return false;
	if (r->nnames) {
		bool hit = false;
		for (size_t i = 0; i < r->nnames && !hit; i++)
			hit = !strcmp(r->names[i], q->name);
		if (!hit)
			return false;
	}
	return true;
}

/* A shared empty object (read-only; evaluations may run in several threads). */
static const json_t *empty_obj(void)
{
	static _Atomic(json_t *) shared;
	json_t *e = atomic_load(&shared), *mine;

	if (e)
		return e;
	mine = json_object();
	if (atomic_compare_exchange_strong(&shared, &e, mine))
		return mine;
	json_decref(mine);
	return e;
}

/* The `exceptions` document when no exception allows anything (shared, read-only). */
static const json_t *no_exceptions(void)
{
	static _Atomic(json_t *) shared;
	json_t *e = atomic_load(&shared), *mine;

	if (e)
		return e;
	mine = json_pack("{s:[],s:[]}", "allowedImages", "allowedValues");
	if (atomic_compare_exchange_strong(&shared, &e, mine))
		return mine;
	json_decref(mine);
	return e;
}

/* Section 2.3. */
static bool vmatch_eval(const struct vmatch *m, const struct vreq *q, const json_t *ns_obj)
{
	bool any = !m->nrules;

	for (size_t i = 0; i < m->nexcl; i++)
		if (rrule_matches(&m->excl[i], q))
			return false;
	for (size_t i = 0; i < m->nrules && !any; i++)
		any = rrule_matches(&m->rules[i], q);
	if (!any)
		return false;
	if (m->ns_sel) {
		bool is_ns = !strcmp(q->resource, "namespaces");
		if (is_ns || *q->namespace) {
			const json_t *labels;
			json_t *own = NULL;
			bool ok;
			if (is_ns)
				labels = q->labels;
			else if (ns_obj && json_is_object(ns_obj))
				labels =
				    json_object_get(json_object_get(ns_obj, "metadata"), "labels");
			else
				labels = own =
				    json_pack("{s:s}", "kubernetes.io/metadata.name", q->namespace);
			ok = selector_matches(m->ns_sel, labels ? labels : empty_obj());
			json_decref(own);
			if (!ok)
				return false;
		}
	}
	if (m->obj_sel && !selector_matches(m->obj_sel, q->labels ? q->labels : empty_obj()) &&
	    !selector_matches(m->obj_sel, q->old_labels ? q->old_labels : empty_obj()))
		return false;
	return true;
}

static json_t *request_json(const struct vreq *q, const struct vpol_input *in, bool full)
{
	json_t *r = json_object();
	json_t *gvk =
	    json_pack("{s:s,s:s,s:s}", "group", q->group, "version", q->version, "kind", q->kind);
	json_t *gvr = json_pack("{s:s,s:s,s:s}", "group", q->group, "version", q->version,
				"resource", q->resource);

	json_object_set(r, "kind", gvk);
	json_object_set(r, "resource", gvr);
	json_object_set_new(r, "requestKind", gvk);
	json_object_set_new(r, "requestResource", gvr);
	if (*q->sub) {
		json_object_set_new(r, "subResource", json_string(q->sub));
		json_object_set_new(r, "requestSubResource", json_string(q->sub));
	}
	json_object_set_new(r, "name", json_string(q->name));
	json_object_set_new(r, "namespace", json_string(q->namespace));
	json_object_set_new(r, "operation", json_string(q->op));
	json_object_set_new(r, "userInfo",
			    in->user_info ? json_deep_copy(in->user_info) : json_object());
	json_object_set_new(r, "dryRun", json_false());
	if (full) {
		json_object_set(r, "object", (json_t *)(in->object ? in->object : json_null()));
		json_object_set(r, "oldObject",
				(json_t *)(in->old_object ? in->old_object : json_null()));
	}
	return r;
}

/* Text of an error value. */
static const char *err_text(const struct cel_value *v)
{
	return v->kind == CEL_ERROR && v->v.err && v->v.err->msg ? v->v.err->msg : "unknown error";
}

/* One result of one body. */
struct vout {
	bool none; /* not matched: no rule */
	const char *rule;
	enum engine_status status;
	char *message;
	json_t *holder; /* owned: the `exceptions` document bound */
	json_t *props;	/* owned: the result's report properties (cel-semantics.md 7), or NULL */
};

/* Sets report property key of o's result (cel-semantics.md 2.5, 3, 7). */
static void vout_prop(struct vout *o, const char *key, const char *value, size_t len)
{
	json_t *v = json_stringn(value, len);

	if (!v)
		return; /* not UTF-8: left out rather than mangled */
	if (!o->props)
		o->props = json_object();
	json_object_set_new(o->props, key, v);
}

static void vout_index(struct vout *o, size_t i)
{
	char idx[24];

	snprintf(idx, sizeof(idx), "%zu", i);
	vout_prop(o, "cel.validationIndex", idx, strlen(idx));
}

static void vout_set(struct vout *o, const char *rule, enum engine_status s, char *msg)
{
	o->none = false;
	o->rule = rule;
	o->status = s;
	free(o->message);
	o->message = msg;
}

/* Evaluates the variables in order and binds `variables`. */
static void bind_variables(struct cel_eval *ev, const struct vbody *b)
{
	const char **names = gv_xcalloc(b->nvars + 1, sizeof(*names));
	struct cel_value *vals = gv_xcalloc(b->nvars + 1, sizeof(*vals));

	for (size_t i = 0; i < b->nvars; i++) {
		/* The variables before it, for an expression that may read them. */
		if (b->vars[i].reads_vars)
			cel_bind_map(ev, "variables", names, vals, i);
		cel_eval_run(ev, b->vars[i].prog, &vals[i]);
		names[i] = b->vars[i].name;
	}
	cel_bind_map(ev, "variables", names, vals, b->nvars);
	free(names);
	free(vals);
}

/* Runs boolean conditions: 1 all true, 0 one false, -1 errors (texts in errs). */
static int run_conditions(struct cel_eval *ev, const struct vexpr *c, size_t n, struct gv_buf *errs)
{
	bool failed = false;

	for (size_t i = 0; i < n; i++) {
		struct cel_value v;
		cel_eval_run(ev, c[i].prog, &v);
		if (v.kind == CEL_BOOL) {
			if (!v.v.b)
				return 0;
			continue;
		}
		failed = true;
		if (errs->len)
			gv_buf_adds(errs, "; ");
		if (v.kind == CEL_ERROR)
			gv_buf_addf(errs, "expression '%s' resulted in error: %s",
				    cel_program_source(c[i].prog), err_text(&v));
		else
			gv_buf_addf(errs, "expression '%s' must evaluate to bool",
				    cel_program_source(c[i].prog));
	}
	return failed ? -1 : 1;
}

static char *trimmed(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return gv_xstrndup(s, n);
}

/*
 * Kubernetes' message of a denied validation (section 4.6): the trimmed
 * messageExpression (unless empty, multi-line or over 5 KiB), else the
 * trimmed message, else "failed expression: <expression>".
 */
static char *k8s_message(struct cel_eval *ev, const struct vvalidation *v, const char *dflt)
{
	if (v->msg_expr) {
		struct cel_value m;
		cel_eval_run(ev, v->msg_expr, &m);
		if (m.kind == CEL_STRING) {
			char *t = trimmed(m.v.s.p, m.v.s.n);
			if (*t && !strchr(t, '\n') && strlen(t) <= 5120)
				return t;
			free(t);
		}
	}
	if (v->message && *v->message) {
		char *t = trimmed(v->message, strlen(v->message));
		if (*t)
			return t;
		free(t);
	}
	if (dflt && *dflt)
		return gv_xstrdup(dflt);
	return gv_xasprintf("failed expression: %s", cel_program_source(v->expr));
}

/* Validations and audit annotations of a ValidatingPolicy (section 2.5). */
static void run_vpol_validations(struct cel_eval *ev, const struct vbody *b, struct vout *o)
{
	size_t i;

	for (i = 0; i < b->nvals; i++) {
		const struct vvalidation *v = &b->vals[i];
		struct cel_value r;
		cel_eval_run(ev, v->expr, &r);
		if (r.kind == CEL_BOOL && r.v.b)
			continue;
		if (r.kind == CEL_ERROR) {
			vout_set(o, "", ENGINE_ERROR, gv_xasprintf("error: %s", err_text(&r)));
			vout_index(o, i);
			return;
		}
		if (r.kind != CEL_BOOL) {
			vout_set(o, "", ENGINE_ERROR,
				 gv_xasprintf("error: expression '%s' did not return a bool",
					      cel_program_source(v->expr)));
			vout_index(o, i);
			return;
		}
		vout_index(o, i);
		if (v->msg_expr) {
			struct cel_value m;
			cel_eval_run(ev, v->msg_expr, &m);
			if (m.kind == CEL_STRING)
				vout_set(o, "", ENGINE_FAIL, gv_xstrndup(m.v.s.p, m.v.s.n));
			else
				vout_set(o, "", ENGINE_FAIL,
					 gv_xasprintf("failed to evaluate message expression: %s",
						      m.kind == CEL_ERROR ? err_text(&m)
									  : "not a string"));
		} else if (v->message && *v->message) {
			vout_set(o, "", ENGINE_FAIL, gv_xstrdup(v->message));
		} else {
			vout_set(o, "", ENGINE_FAIL,
				 gv_xasprintf("CEL expression validation failed at index %zu", i));
		}
		break;
	}
	if (i == b->nvals)
		vout_set(o, "", ENGINE_PASS, gv_xstrdup("success"));
	for (size_t k = 0; k < b->naudits; k++) {
		struct cel_value a;
		cel_eval_run(ev, b->audits[k].prog, &a);
		if (a.kind == CEL_STRING) {
			if (a.v.s.n) /* "" is no annotation */
				vout_prop(o, b->audits[k].name, a.v.s.p, a.v.s.n);
			continue;
		}
		if (o->status == ENGINE_PASS)
			vout_set(o, "evaluation", ENGINE_ERROR,
				 gv_xasprintf("failed to load context: failed to evaluate "
					      "auditAnnotation '%s': %s",
					      b->audits[k].name,
					      a.kind == CEL_ERROR ? err_text(&a) : "not a string"));
		else
			vout_set(
			    o, "", ENGINE_ERROR,
			    gv_xasprintf("failed to convert auditAnnotation '%s' expression: %s",
					 b->audits[k].name,
					 a.kind == CEL_ERROR ? err_text(&a) : "not a string"));
		return;
	}
}

static bool exception_refers(const struct vpol_exception *x, const struct vpol_policy *p)
{
	for (size_t i = 0; i < x->nrefs; i++)
		if (!strcmp(x->ref_names[i], p->name) &&
		    !strcmp(x->ref_kinds[i], vpol_kind_name(p)))
			return true;
	return false;
}

/*
 * CEL PolicyExceptions (section 3): true when the policy is fully exempted
 * or an exception errored (*o set); else binds `exceptions`.
 */
static bool run_exceptions(struct cel_eval *ev, const struct vpol_policy *p,
			   const struct vpol_input *in, struct vout *o)
{
	json_t *images = NULL, *values = NULL;
	struct gv_buf names = {0}, errs = {0}, bare = {0};
	const struct vpol_exception *chosen = NULL;
	bool done = false;

	for (size_t i = 0; i < in->nexceptions; i++) {
		const struct vpol_exception *x = in->exceptions[i];
		int c;
		if (!exception_refers(x, p))
			continue;
		c = run_conditions(ev, x->conds, x->nconds, &errs);
		if (c < 0 && !chosen) {
			vout_set(o, "evaluation", ENGINE_ERROR,
				 gv_xasprintf("failed to load context: %s", gv_buf_str(&errs)));
			done = true;
			goto out;
		}
		if (c <= 0)
			continue;
		if (!x->images && !x->values) {
			if (names.len)
				gv_buf_adds(&names, ", ");
			gv_buf_addf(&names, "%s/%s", x->namespace, x->name);
			if (bare.len)
				gv_buf_addc(&bare, ',');
			gv_buf_adds(&bare, x->name);
			if (!chosen || x->priority > chosen->priority)
				chosen = x;
			continue;
		}
		if (!chosen) {
			if (x->images)
				json_array_extend(images ? images : (images = json_array()),
						  x->images);
			if (x->values)
				json_array_extend(values ? values : (values = json_array()),
						  x->values);
		}
	}
	if (chosen) {
		vout_set(o, "exception", chosen->report_pass ? ENGINE_PASS : ENGINE_SKIP,
			 gv_xasprintf("rule is skipped due to policy exception: %s",
				      gv_buf_str(&names)));
		vout_prop(o, "exceptions", gv_buf_str(&bare), bare.len);
		done = true;
		goto out;
	}
	if (!images && !values) {
		/* The common case: nothing allowed, one shared read-only document. */
		cel_bind_json(ev, "exceptions", no_exceptions());
		goto out;
	}
	{
		json_t *ex = json_pack("{s:o,s:o}", "allowedImages", images ? images : json_array(),
				       "allowedValues", values ? values : json_array());
		images = values = NULL;
		/* kept alive by the caller's holder until the evaluation ends */
		cel_bind_json(ev, "exceptions", ex);
		json_decref(o->holder);
		o->holder = ex;
	}
out:
	json_decref(images);
	json_decref(values);
	gv_buf_release(&names);
	gv_buf_release(&bare);
	gv_buf_release(&errs);
	return done;
}

/*
 * The state of one input shared by the policies evaluated against it
 * (vpolicy.h): its request fields, the `request` document (built on first
 * use) and one CEL context.
 */
struct vpol_batch {
	const struct vpol_input *in; /* borrowed */
	bool usable;		     /* an object or an old object */
	struct vreq q;
	json_t *request; /* owned, or NULL until a policy reads it */
	struct cel_eval *ev;
};

/* Whether an evaluation of p may read `request` (p's expressions or its exceptions'). */
static bool needs_request(const struct vpol_policy *p, const struct vpol_input *in)
{
	if (p->uses_request)
		return true;
	for (size_t i = 0; i < in->nexceptions; i++)
		if (in->exceptions[i]->uses_request && exception_refers(in->exceptions[i], p))
			return true;
	return false;
}

/* Binds the ValidatingPolicy variables (section 2.9). */
static void bind_vpol_env(struct vpol_batch *bt, const struct vpol_policy *p)
{
	struct cel_eval *ev = bt->ev;
	const struct vpol_input *in = bt->in;

	if (p->json_mode || in->json_payload) {
		cel_bind_json(ev, "object", in->object ? in->object : json_null());
		cel_bind_json(ev, "oldObject", json_null());
		cel_bind_json(ev, "request", json_null());
		cel_bind_json(ev, "namespaceObject", json_null());
		return;
	}
	cel_bind_json(ev, "object", in->object ? in->object : empty_obj());
	cel_bind_json(ev, "oldObject", in->old_object ? in->old_object : empty_obj());
	if (needs_request(p, in)) {
		if (!bt->request)
			bt->request = request_json(&bt->q, in, true);
		cel_bind_json(ev, "request", bt->request);
	}
	cel_bind_json(ev, "namespaceObject",
		      in->namespace_object ? in->namespace_object : json_null());
}

static void eval_vpol_body(struct vpol_batch *bt, const struct vpol_policy *p,
			   const struct vbody *b, struct vout *o)
{
	struct cel_eval *ev = bt->ev;
	const struct vpol_input *in = bt->in;
	struct gv_buf errs = {0};
	int c;

	o->none = true;
	if (!p->json_mode) {
		if (!b->match.present || !vmatch_eval(&b->match, &bt->q, in->namespace_object))
			return;
	}
	cel_eval_reset(ev);
	bind_vpol_env(bt, p);
	if (run_exceptions(ev, p, in, o))
		goto out;
	c = run_conditions(ev, b->conds, b->nconds, &errs);
	if (c == 0 || (c < 0 && b->ignore)) {
		vout_set(o, "", ENGINE_SKIP, gv_xstrdup("skip"));
		goto out;
	}
	if (c < 0) {
		vout_set(o, "evaluation", ENGINE_ERROR,
			 gv_xasprintf("failed to load context: %s", gv_buf_str(&errs)));
		goto out;
	}
	bind_variables(ev, b);
	run_vpol_validations(ev, b, o);
out:
	gv_buf_release(&errs);
}

/* Params of a VAP binding offline (TEST-FORMAT.md 7.3); new reference. */
static json_t *binding_params(const json_t *binding, const struct vpol_input *in)
{
	const json_t *ref = json_object_get(json_object_get(binding, "spec"), "paramRef");
	const json_t *sel = json_object_get(ref, "selector");
	const char *name = str_of(ref, "name"), *ns = str_of(ref, "namespace");

	if (!json_is_object(ref))
		return json_null();
	if (json_is_object(sel)) {
		struct selector *s = NULL;
		struct gv_buf ptr = {0};
		json_t *items = json_array();
		if (selector_compile(sel, &s, &ptr, NULL) == GV_OK) {
			for (size_t i = 0; i < in->nparams; i++) {
				const json_t *l = json_object_get(
				    json_object_get(in->params[i], "metadata"), "labels");
				if (selector_matches(s, l ? l : empty_obj()))
					json_array_append(items, (json_t *)in->params[i]);
			}
		}
		selector_free(s);
		gv_buf_release(&ptr);
		return json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items",
				 items);
	}
	for (size_t i = 0; i < in->nparams; i++) {
		const json_t *md = json_object_get(in->params[i], "metadata");
		if (*name ? !strcmp(str_of(md, "name"), name)
			  : (*ns && !strcmp(str_of(md, "namespace"), ns)))
			return json_incref((json_t *)in->params[i]);
	}
	return json_null();
}

/* One VAP evaluation (section 5): rule named after the policy. */
static void eval_vap_once(struct cel_eval *ev, const struct vpol_policy *p, const struct vbody *b,
			  struct vout *o)
{
	struct gv_buf errs = {0};
	int c = run_conditions(ev, b->conds, b->nconds, &errs);
	size_t i;

	if (c == 0) {
		vout_set(o, p->name, ENGINE_SKIP, gv_xstrdup("match conditions aren't met"));
		goto out;
	}
	if (c < 0) {
		vout_set(o, p->name, ENGINE_ERROR, gv_buf_detach(&errs));
		goto out;
	}
	bind_variables(ev, b);
	for (i = 0; i < b->nvals; i++) {
		struct cel_value r;
		cel_eval_run(ev, b->vals[i].expr, &r);
		if (r.kind == CEL_BOOL && r.v.b)
			continue;
		if (r.kind != CEL_BOOL) {
			vout_set(o, p->name, ENGINE_ERROR,
				 gv_xasprintf("expression '%s' resulted in error: %s",
					      cel_program_source(b->vals[i].expr),
					      r.kind == CEL_ERROR ? err_text(&r)
								  : "must evaluate to bool"));
			goto out;
		}
		vout_set(o, p->name, ENGINE_FAIL, k8s_message(ev, &b->vals[i], NULL));
		goto out;
	}
	vout_set(o, p->name, ENGINE_PASS, gv_xstrdup(""));
out:
	gv_buf_release(&errs);
}

/*
 * One binding of a VAP in the cluster (section 5): the binding's paramRef
 * objects fetched through hooks, one evaluation per object; the first
 * error wins, else the first failure, else the last result.
 */
static void eval_vap_cluster(struct cel_eval *ev, const struct vpol_policy *p,
			     const struct vbody *b, const json_t *binding, const char *ns,
			     const struct engine_hooks *hooks, struct vout *o)
{
	const json_t *ref = json_object_get(json_object_get(binding, "spec"), "paramRef");
	const json_t *kind = json_object_get(json_object_get(p->doc, "spec"), "paramKind");
	struct gv_err e = {0};
	json_t *params = NULL;
	bool failed = false;
	size_t n;

	if (!p->has_param_kind) {
		/* no paramKind: a paramRef is ignored, params is null */
		cel_bind_json(ev, "params", json_null());
		eval_vap_once(ev, p, b, o);
		return;
	}
	if (!json_is_object(ref)) {
		vout_set(o, p->name, ENGINE_ERROR,
			 gv_xasprintf("error in parameterized resource: binding %s: paramKind "
				      "non-nil but paramRef is nil",
				      str_of(json_object_get(binding, "metadata"), "name")));
		return;
	}
	if (vpol_params_collect(kind, ref, ns, hooks, true, &params, &e)) {
		vout_set(o, p->name, ENGINE_ERROR,
			 gv_xasprintf("error in parameterized resource: %s", e.msg));
		return;
	}
	n = json_array_size(params);
	if (!n)
		/* parameterNotFoundAction Allow: Kubernetes evaluates nothing */
		vout_set(o, p->name, ENGINE_SKIP,
			 gv_xstrdup("no params found (parameterNotFoundAction: Allow)"));
	for (size_t i = 0; i < n; i++) {
		struct vout one = {.none = true};
		cel_bind_json(ev, "params", json_array_get(params, i));
		eval_vap_once(ev, p, b, &one);
		if (!one.none && (one.status == ENGINE_ERROR || !failed)) {
			vout_set(o, one.rule, one.status, one.message);
			one.message = NULL;
			failed = one.status == ENGINE_FAIL;
		}
		free(one.message);
		if (!one.none && one.status == ENGINE_ERROR)
			break;
	}
	cel_bind_json(ev, "params", json_null());
	json_decref(params);
}

static void eval_vap(struct cel_eval *ev, const struct vpol_policy *p, const struct vpol_input *in,
		     const struct vreq *q, struct vout *o)
{
	const struct vbody *b = &p->bodies[0];
	json_t *req, *nso;
	const json_t *labels =
	    json_object_get(json_object_get(in->namespace_object, "metadata"), "labels");
	bool any_binding = false, policy_matches;
	struct vreq cq = *q;

	o->none = true;
	cq.op = "CREATE";
	nso = *q->namespace ? json_pack("{s:s,s:s,s:{s:s,s:O}}", "apiVersion", "v1", "kind",
					"Namespace", "metadata", "name", q->namespace, "labels",
					labels ? labels : empty_obj())
			    : json_pack("{s:s,s:s,s:{}}", "apiVersion", "v1", "kind", "Namespace",
					"metadata");
	{
		struct vpol_input ci = *in;
		ci.old_object = NULL;
		req = request_json(&cq, &ci, false);
	}
	cel_bind_json(ev, "object", in->object ? in->object : json_null());
	cel_bind_json(ev, "oldObject", json_null());
	cel_bind_json(ev, "request", req);
	cel_bind_json(ev, "namespaceObject", nso);
	cel_bind_json(ev, "params", json_null());
	/*
	 * With bindings, in the cluster (hooks) Kubernetes' matcher checks the
	 * policy's matchConstraints, then each binding's matchResources: a
	 * request must match both. Offline only the bindings' are checked, as
	 * Kyverno's CLI does (section 5).
	 */
	policy_matches = !in->hooks || (b->match.present && vmatch_eval(&b->match, &cq, nso));
	for (size_t i = 0; i < in->nbindings; i++) {
		const json_t *spec = json_object_get(in->bindings[i], "spec");
		const json_t *mr = json_object_get(spec, "matchResources");
		json_t *params;
		if (strcmp(str_of(spec, "policyName"), p->name))
			continue;
		any_binding = true;
		if (!policy_matches)
			continue;
		if (json_is_object(mr)) {
			struct vmatch m;
			struct gv_err e = {0};
			bool ok;
			if (vmatch_compile(mr, "", &m, &e)) {
				vout_set(o, p->name, ENGINE_ERROR, gv_xstrdup(e.msg));
				continue;
			}
			ok = vmatch_eval(&m, &cq, nso);
			vmatch_release(&m);
			if (!ok)
				continue;
		}
		if (in->hooks) {
			eval_vap_cluster(ev, p, b, in->bindings[i], q->namespace, in->hooks, o);
			continue;
		}
		params = binding_params(in->bindings[i], in);
		cel_bind_json(ev, "params", params);
		eval_vap_once(ev, p, b, o);
		if (!o->none) {
			const char *bn =
			    str_of(json_object_get(in->bindings[i], "metadata"), "name");

			vout_prop(o, "binding", bn, strlen(bn));
		}
		cel_bind_json(ev, "params", json_null());
		json_decref(params);
	}
	if (!any_binding && b->match.present && vmatch_eval(&b->match, &cq, nso))
		eval_vap_once(ev, p, b, o);
	json_decref(req);
	json_decref(nso);
}

struct vpol_batch *vpol_batch_new(const struct vpol_input *in)
{
	struct vpol_batch *bt = gv_xcalloc(1, sizeof(*bt));

	bt->in = in;
	bt->usable = in->object || in->old_object;
	if (bt->usable)
		vreq_init(&bt->q, in);
	bt->ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	return bt;
}

void vpol_batch_free(struct vpol_batch *bt)
{
	if (!bt)
		return;
	json_decref(bt->request);
	cel_eval_free(bt->ev);
	free(bt);
}

enum gv_code vpol_batch_evaluate(struct vpol_batch *bt, const struct vpol_policy *p,
				 struct vpol_report *out, struct gv_err *err)
{
	const struct vpol_input *in = bt->in;
	struct cel_eval *ev = bt->ev;

	memset(out, 0, sizeof(*out));
	if (!bt->usable)
		return gv_err_set(err, GV_EINVAL, "no object to evaluate");
	if (in->json_payload && !p->json_mode)
		return GV_OK;
	cel_eval_set_host(ev, p->kind != VPOL_VAP ? in->host : NULL);
	out->v = gv_xcalloc(p->nbodies, sizeof(*out->v));
	for (size_t i = 0; i < p->nbodies; i++) {
		struct vout o = {.none = true};
		bool keep;
		if (p->kind == VPOL_VAP) {
			cel_eval_reset(ev);
			eval_vap(ev, p, in, &bt->q, &o);
			keep = true;
		} else {
			eval_vpol_body(bt, p, &p->bodies[i], &o);
			keep = !o.none || p->json_mode || p->bodies[i].match.keep_empty;
		}
		if (keep) {
			struct vpol_response *r = &out->v[out->n++];
			if (!o.none) {
				r->rules = gv_xcalloc(1, sizeof(*r->rules));
				r->rules[0].rule = gv_xstrdup(o.rule ? o.rule : "");
				r->rules[0].status = o.status;
				r->rules[0].message = o.message ? o.message : gv_xstrdup("");
				r->rules[0].properties = o.props;
				o.message = NULL;
				o.props = NULL;
				r->n = 1;
			}
		}
		free(o.message);
		json_decref(o.props);
		json_decref(o.holder);
		if (p->kind == VPOL_VAP)
			break;
	}
	/* Nothing of this policy's evaluation stays bound for the next one. */
	cel_eval_reset(ev);
	return GV_OK;
}

enum gv_code vpol_evaluate(const struct vpol_policy *p, const struct vpol_input *in,
			   struct vpol_report *out, struct gv_err *err)
{
	struct vpol_batch *bt;
	enum gv_code rc;

	memset(out, 0, sizeof(*out));
	if (!in->object && !in->old_object)
		return gv_err_set(err, GV_EINVAL, "no object to evaluate");
	if (in->json_payload && !p->json_mode)
		return GV_OK;
	bt = vpol_batch_new(in);
	rc = vpol_batch_evaluate(bt, p, out, err);
	vpol_batch_free(bt);
	return rc;
}

void vpol_report_release(struct vpol_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		for (size_t j = 0; j < r->v[i].n; j++) {
			free(r->v[i].rules[j].rule);
			free(r->v[i].rules[j].message);
			json_decref(r->v[i].rules[j].properties);
		}
		free(r->v[i].rules);
	}
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* ---- validate.cel (section 4) ---- */

/*
 * What Kubernetes' API validation checks of a paramKind and paramRef
 * (prefix: JSON pointer of their parent, "" for validate.cel).
 */
static enum gv_code params_check(const json_t *kind, const json_t *ref, const char *prefix,
				 struct gv_err *err)
{
	const char *action = json_string_value(json_object_get(ref, "parameterNotFoundAction"));
	char p[256];

	if (!*str_of(kind, "apiVersion") || !*str_of(kind, "kind")) {
		snprintf(p, sizeof(p), "%s/paramKind", prefix);
		return gv_err_setp(err, GV_EINVAL, p, "paramKind needs apiVersion and kind");
	}
	snprintf(p, sizeof(p), "%s/paramRef", prefix);
	if (*str_of(ref, "name") && json_object_get(ref, "selector"))
		return gv_err_setp(err, GV_EINVAL, p,
				   "paramRef: one of name or selector must be set, not both");
	if (action && strcmp(action, "Deny") && strcmp(action, "Allow"))
		return gv_err_setp(err, GV_EINVAL, p,
				   "paramRef.parameterNotFoundAction: Unsupported value: \"%s\": "
				   "supported values: \"Allow\", \"Deny\"",
				   action);
	return GV_OK;
}

enum gv_code vpol_params_collect(const json_t *param_kind, const json_t *param_ref, const char *ns,
				 const struct engine_hooks *hooks, bool missing_is_none,
				 json_t **out, struct gv_err *err)
{
	const char *av = str_of(param_kind, "apiVersion"), *kind = str_of(param_kind, "kind");
	const char *name = str_of(param_ref, "name"), *rns = str_of(param_ref, "namespace");
	const char *action =
	    json_string_value(json_object_get(param_ref, "parameterNotFoundAction"));
	const json_t *sel = json_object_get(param_ref, "selector");
	struct selector *s = NULL;
	struct gv_buf ptr = {0};
	struct gv_err e = {0};
	json_t *got = NULL, *items = json_array();
	bool namespaced = true;
	const char *pns;
	enum gv_code rc;

	*out = NULL;
	if ((rc = params_check(param_kind, param_ref, "", err)))
		goto out;
	if (!hooks || !hooks->param_scope || !hooks->params) {
		rc = gv_err_set(err, GV_EINVAL, "no parameter resources are available here");
		goto out;
	}
	if ((rc = hooks->param_scope(hooks->ud, av, kind, &namespaced, &e))) {
		rc = gv_err_set(err, rc, "failed to check if resource is namespaced or not (%s)",
				e.msg);
		goto out;
	}
	if (namespaced) {
		pns = *rns ? rns : ns;
		if (!*pns) {
			rc = gv_err_set(err, GV_EINVAL,
					"can't use namespaced paramRef to match cluster-scoped "
					"resources");
			goto out;
		}
	} else if (*rns) {
		rc = gv_err_set(err, GV_EINVAL,
				"paramRef.namespace must not be provided for a cluster-scoped "
				"`paramKind`");
		goto out;
	} else {
		pns = "";
	}
	if (*name) {
		rc = hooks->params(hooks->ud, av, kind, pns, name, NULL, &got, &e);
		if (rc == GV_ENOENT && missing_is_none) {
			rc = GV_OK;
		} else if (rc) {
			rc = gv_err_set(err, rc, "%s", e.msg);
			goto out;
		} else if (json_is_object(got)) {
			json_array_append(items, got);
		}
	} else if (json_is_object(sel)) {
		size_t i;
		json_t *o;
		if ((rc = selector_compile(sel, &s, &ptr, &e))) {
			rc = gv_err_set(err, rc, "%s", e.msg);
			goto out;
		}
		if ((rc = hooks->params(hooks->ud, av, kind, pns, NULL, sel, &got, &e))) {
			rc = gv_err_set(err, rc, "%s", e.msg);
			goto out;
		}
		json_array_foreach(got, i, o)
		{
			const json_t *md = json_object_get(o, "metadata");
			const json_t *l = json_object_get(md, "labels");
			if (namespaced && strcmp(str_of(md, "namespace"), pns))
				continue;
			if (selector_matches(s, json_is_object(l) ? l : empty_obj()))
				json_array_append(items, o);
		}
	}
	if (!json_array_size(items) && (!action || !strcmp(action, "Deny"))) {
		rc = gv_err_set(err, GV_ENOENT, "no params found");
		goto out;
	}
	*out = items;
	items = NULL;
out:
	selector_free(s);
	gv_buf_release(&ptr);
	json_decref(got);
	json_decref(items);
	return rc;
}

struct vpol_cel *vpol_cel_compile(const json_t *cel, const json_t *pre, const char *message,
				  const char *rule, struct gv_err *err)
{
	struct vpol_cel *c = gv_xcalloc(1, sizeof(*c));
	const json_t *exprs = json_object_get(cel, "expressions");
	enum gv_code rc;

	vap_env = true;
	c->rule = gv_xstrdup(rule ? rule : "");
	c->default_message = message ? gv_xstrdup(message) : NULL;
	c->has_params = json_is_object(json_object_get(cel, "paramKind")) &&
			json_is_object(json_object_get(cel, "paramRef"));
	if (c->has_params) {
		c->param_kind = json_incref(json_object_get(cel, "paramKind"));
		c->param_ref = json_incref(json_object_get(cel, "paramRef"));
	}
	if ((rc = exprs_compile(pre, "/celPreconditions", "name", "expression", NULL, NULL, false,
				&c->body.conds, &c->body.nconds, err)))
		goto fail;
	if ((rc = exprs_compile(json_object_get(cel, "variables"), "/variables", "name",
				"expression", NULL, NULL, false, &c->body.vars, &c->body.nvars,
				err)))
		goto fail;
	if ((rc = validations_compile(exprs, "/expressions", &c->body, NULL, false, err)))
		goto fail;
	if ((rc = exprs_compile(json_object_get(cel, "auditAnnotations"), "/auditAnnotations",
				"key", "valueExpression", NULL, NULL, false, &c->body.audits,
				&c->body.naudits, err)))
		goto fail;
	vap_env = false;
	return c;
fail:
	vap_env = false;
	vpol_cel_free(c);
	return NULL;
}

void vpol_cel_free(struct vpol_cel *c)
{
	if (!c)
		return;
	body_release_v(&c->body);
	free(c->rule);
	free(c->default_message);
	json_decref(c->param_kind);
	json_decref(c->param_ref);
	free(c);
}

/*
 * The host of a validate.cel evaluation: the `authorizer` checks as
 * SubjectAccessReviews through hooks->authorize, for the request's user
 * or the serviceAccount(ns, name) of the check (Kubernetes'
 * serviceaccount.UserInfo: groups system:serviceaccounts and
 * system:serviceaccounts:<ns>).
 */
struct authz_host {
	struct cel_host host;
	const struct engine_hooks *hooks; /* borrowed, or NULL */
	const json_t *user_info;	  /* borrowed, or NULL */
	json_t *keep;			  /* owned: the answers handed out */
};

static const json_t *authz_host_call(void *ud, const char *fn, const json_t *args, char *err,
				     size_t n)
{
	struct authz_host *h = ud;
	const json_t *spec = json_array_get(args, 0);
	const char *sa_ns = json_string_value(json_object_get(spec, "saNamespace"));
	const char *sa = json_string_value(json_object_get(spec, "saName"));
	json_t *review, *attrs, *out = NULL;
	struct gv_err e = {0};
	static const char *const attr_keys[] = {"group", "resource", "subresource", "namespace",
						"name"};

	if (strcmp(fn, "authorizer.check")) {
		snprintf(err, n, "%s: this library is not available in validate.cel", fn);
		return NULL;
	}
	if (!h->hooks || !h->hooks->authorize) {
		snprintf(err, n,
			 "authorizer: authorization checks need the API server's authorizer, "
			 "which gavel asks only in the cluster (gavel serve, scans)");
		return NULL;
	}
	if (sa) {
		review = json_object();
		json_object_set_new(
		    review, "user",
		    json_sprintf("system:serviceaccount:%s:%s", sa_ns ? sa_ns : "", sa));
		json_object_set_new(
		    review, "groups",
		    json_pack("[s,o]", "system:serviceaccounts",
			      json_sprintf("system:serviceaccounts:%s", sa_ns ? sa_ns : "")));
	} else {
		const char *keys[] = {"username", "uid", "groups", "extra"};
		const char *to[] = {"user", "uid", "groups", "extra"};
		review = json_object();
		for (size_t i = 0; i < GV_ARRAY_LEN(keys); i++) {
			const json_t *v = json_object_get(h->user_info, keys[i]);
			if (v)
				json_object_set_new(review, to[i], json_deep_copy(v));
		}
	}
	attrs = json_pack("{s:O}", "verb", json_object_get(spec, "verb"));
	if (json_object_get(spec, "path")) {
		json_object_set(attrs, "path", json_object_get(spec, "path"));
		json_object_set_new(review, "nonResourceAttributes", attrs);
	} else {
		for (size_t i = 0; i < GV_ARRAY_LEN(attr_keys); i++)
			if (json_object_get(spec, attr_keys[i]))
				json_object_set(attrs, attr_keys[i],
						json_object_get(spec, attr_keys[i]));
		json_object_set_new(review, "resourceAttributes", attrs);
	}
	if (h->hooks->authorize(h->hooks->ud, review, &out, &e)) {
		snprintf(err, n, "authorizer: %s", e.msg);
		json_decref(review);
		return NULL;
	}
	json_decref(review);
	json_array_append_new(h->keep, out);
	return out;
}

/* One evaluation of a validate.cel body with `params` bound (section 4 steps 5-6). */
static void cel_eval_once(const struct vpol_cel *c, struct cel_eval *ev, const json_t *nso,
			  enum engine_status *status, char **message)
{
	struct gv_buf errs = {0};
	const struct vbody *b = &c->body;
	int cond;
	size_t i;

	cel_bind_json(ev, "namespaceObject", json_null());
	cond = run_conditions(ev, b->conds, b->nconds, &errs);
	if (cond == 0) {
		*status = ENGINE_SKIP;
		*message = gv_xstrdup("cel preconditions not met");
		goto out;
	}
	if (cond < 0) {
		*status = ENGINE_FAIL;
		*message = gv_buf_detach(&errs);
		goto out;
	}
	cel_bind_json(ev, "namespaceObject", nso);
	bind_variables(ev, b);
	for (i = 0; i < b->nvals; i++) {
		struct cel_value r;
		cel_eval_run(ev, b->vals[i].expr, &r);
		if (r.kind == CEL_BOOL && r.v.b)
			continue;
		*status = ENGINE_FAIL;
		if (r.kind != CEL_BOOL)
			*message = gv_xasprintf("expression '%s' resulted in error: %s",
						cel_program_source(b->vals[i].expr),
						r.kind == CEL_ERROR ? err_text(&r)
								    : "must evaluate to bool");
		else
			*message = k8s_message(ev, &b->vals[i], c->default_message);
		goto out;
	}
	*status = ENGINE_PASS;
out:
	gv_buf_release(&errs);
}

void vpol_cel_evaluate(const struct vpol_cel *c, const json_t *object, const json_t *old_object,
		       const json_t *request, const char *ns_name, const struct engine_hooks *hooks,
		       enum engine_status *status, char **message)
{
	struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	json_t *nso = json_pack("{s:{s:s}}", "metadata", "name", ns_name ? ns_name : "");
	json_t *params = NULL;
	size_t i, n = 1;
	struct authz_host ah = {.host = {.call = authz_host_call},
				.hooks = hooks,
				.user_info = json_object_get(request, "userInfo"),
				.keep = json_array()};
	struct cel_value az = cel_authorizer_value();

	ah.host.ud = &ah;
	*message = NULL;
	cel_eval_set_host(ev, &ah.host);
	cel_bind_value(ev, "authorizer", &az);
	if (c->has_params) {
		struct gv_err e = {0};
		if (vpol_params_collect(c->param_kind, c->param_ref, ns_name ? ns_name : "", hooks,
					false, &params, &e)) {
			*status = ENGINE_ERROR;
			*message = gv_xasprintf("error in parameterized resource: %s", e.msg);
			goto out;
		}
		n = json_array_size(params);
	}
	cel_bind_json(ev, "object", object ? object : json_null());
	cel_bind_json(ev, "oldObject", old_object ? old_object : json_null());
	cel_bind_json(ev, "request", request ? request : json_null());
	for (i = 0; i < n; i++) {
		if (params)
			cel_bind_json(ev, "params", json_array_get(params, i));
		cel_eval_once(c, ev, nso, status, message);
		if (*status != ENGINE_PASS)
			goto out;
		free(*message);
		*message = NULL;
	}
	/* every parameter object passed, or there was none (Kyverno: pass) */
	*status = ENGINE_PASS;
	*message = gv_xasprintf("Validation rule '%s' passed.", c->rule);
out:
	json_decref(params);
	json_decref(nso);
	cel_eval_free(ev);
	json_decref(ah.keep);
}
