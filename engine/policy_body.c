/*
 * policy_body.c - compiling context entries and validate bodies (pattern,
 * anyPattern, deny, foreach, podSecurity), with the $(...) references
 * inside patterns resolved (kyverno-semantics.md section 3.10).
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/policy_int.h"
#include "engine/value.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

static const char *const foreach_fields[] = {"list",	     "context", "preconditions",
					     "elementScope", "pattern", "anyPattern",
					     "deny",	     "foreach", NULL};

/* ---- context entries ---- */

void context_release(struct context_entry *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].name);
		json_decref(c[i].raw);
		vtree_free(c[i].value);
		free(c[i].jmespath);
		vtree_free(c[i].def);
		json_decref(c[i].def_raw);
	}
	free(c);
}

const char *const context_kind_names[CONTEXT_GLOBALREFERENCE + 1] = {
    "variable", "configMap", "apiCall", "imageRegistry", "globalReference"};

enum gv_code context_compile(const json_t *j, struct context_entry **out, size_t *n,
			     struct gv_buf *ptr, struct gv_err *err)
{
	size_t i, base = ptr->len;
	json_t *c;
	enum gv_code rc = GV_OK;

	*out = NULL;
	*n = 0;
	if (!json_array_size(j))
		return GV_OK;
	*out = gv_xcalloc(json_array_size(j), sizeof(**out));
	json_array_foreach(j, i, c)
	{
		struct context_entry *e = &(*out)[i];
		const char *name = json_string_value(json_object_get(c, "name"));
		const json_t *var = json_object_get(c, "variable");

		policy_ptr_pushi(ptr, i);
		if (!name || !*name) {
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "context entry name is required");
			policy_ptr_pop(ptr, base);
			break;
		}
		e->name = gv_xstrdup(name);
		e->raw = json_incref(c);
		(*n)++;
		{
			/* Kyverno's policy validation (validateRuleContext). */
			static const char *const reserved[] = {"images",
							       "request",
							       "serviceAccountName",
							       "serviceAccountNamespace",
							       "element",
							       "elementIndex",
							       NULL};
			for (const char *const *v = reserved; *v; v++) {
				size_t vl = strlen(*v);
				if (!strcmp(name, *v) ||
				    (!strncmp(name, *v, vl) && name[vl] == '.')) {
					policy_ptr_push(ptr, "name");
					rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							 "entry name %s is invalid as it conflicts "
							 "with a pre-defined variable %s",
							 name, *v);
					break;
				}
			}
			if (rc) {
				policy_ptr_pop(ptr, base);
				break;
			}
		}
		{
			int found = 0;
			for (size_t k = 0; k < GV_ARRAY_LEN(context_kind_names); k++)
				if (json_object_get(c, context_kind_names[k])) {
					e->kind = (enum context_kind)k;
					found++;
				}
			if (found != 1) {
				/* Kyverno's policy validation (validateRuleContext). */
				rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
						 "exactly one of configMap or apiCall or "
						 "imageRegistry or variable or globalReference is "
						 "required for context entries");
				policy_ptr_pop(ptr, base);
				break;
			}
		}
		if (e->kind == CONTEXT_VARIABLE && !json_is_object(var)) {
			policy_ptr_push(ptr, "variable");
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "context entry %s: variable must be an object", name);
			policy_ptr_pop(ptr, base);
			break;
		}
		if (json_is_object(var)) {
			const json_t *value = json_object_get(var, "value");
			const char *jp = json_string_value(json_object_get(var, "jmesPath"));
			const json_t *def = json_object_get(var, "default");
			e->is_variable = true;
			if (value) {
				policy_ptr_push(ptr, "variable");
				policy_ptr_push(ptr, "value");
				e->value = vtree_compile(value, err);
				if (!e->value) {
					if (!err->pointer[0])
						snprintf(err->pointer, sizeof(err->pointer), "%s",
							 gv_buf_str(ptr));
					rc = GV_EINVAL;
					policy_ptr_pop(ptr, base);
					break;
				}
			}
			e->jmespath = jp ? gv_xstrdup(jp) : NULL;
			if (def) {
				e->def_raw = json_incref((json_t *)def);
				e->def = vtree_compile(def, err);
				if (!e->def) {
					rc = GV_EINVAL;
					policy_ptr_pop(ptr, base);
					break;
				}
			}
		}
		policy_ptr_pop(ptr, base);
	}
	if (rc) {
		context_release(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* ---- validate bodies ---- */

static void foreach_release(struct foreach *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].list);
		jp_free(f[i].list_x);
		context_release(f[i].ctx, f[i].nctx);
		conditions_release(&f[i].pre);
		body_release(&f[i].body);
	}
	free(f);
}

void body_release(struct body *b)
{
	json_decref(b->pattern_raw);
	pattern_free(b->pattern);
	for (size_t i = 0; i < b->nany; i++)
		pattern_free(b->any[i]);
	free(b->any);
	vtree_free(b->pattern_vars);
	conditions_release(&b->deny);
	foreach_release(b->foreach, b->nforeach);
	pss_spec_release(&b->pss);
	vpol_cel_free(b->cel);
	free(b->cel_error);
	memset(b, 0, sizeof(*b));
}

static enum gv_code pattern_err(struct gv_err *err, struct gv_buf *ptr)
{
	/* pattern_compile's pointer is relative to the pattern: make it absolute. */
	if (err && err->code) {
		char rel[sizeof(err->pointer)];
		snprintf(rel, sizeof(rel), "%s", err->pointer);
		snprintf(err->pointer, sizeof(err->pointer), "%s%s", gv_buf_str(ptr), rel);
	}
	return GV_EINVAL;
}

static enum gv_code foreach_compile(const json_t *arr, struct foreach **out, size_t *n,
				    struct gv_buf *ptr, struct gv_err *err);

/* ---- $(...) references inside patterns (section 3.10) ---- */

/* Strips an anchor wrapper: "=(name)" -> "name". Returns a new string. */
static char *anchor_inner(const char *k)
{
	size_t n = strlen(k);
	const char *p = k;

	if (n >= 3 && strchr("<=X^+", k[0]) && k[1] == '(' && k[n - 1] == ')')
		return gv_xstrndup(k + 2, n - 3);
	if (n >= 2 && p[0] == '(' && k[n - 1] == ')')
		return gv_xstrndup(k + 1, n - 2);
	return gv_xstrdup(k);
}

/* Looks up a '/'-separated path in the pattern root, ignoring anchor wrappers. */
static const json_t *ref_lookup(const json_t *root, const char *path)
{
	const json_t *cur = root;
	char *copy = gv_xstrdup(path), *seg = copy, *slash;

	while (cur && seg && *seg) {
		slash = strchr(seg, '/');
		if (slash)
			*slash = '\0';
		if (*seg) {
			if (json_is_array(cur)) {
				char *end;
				long idx = strtol(seg, &end, 10);
				cur = *end ? NULL : json_array_get(cur, (size_t)idx);
			} else if (json_is_object(cur)) {
				const char *k;
				json_t *v;
				const json_t *next = NULL;
				json_object_foreach((json_t *)cur, k, v)
				{
					char *inner = anchor_inner(k);
					bool eq = !strcmp(inner, seg);
					free(inner);
					if (eq) {
						next = v;
						break;
					}
				}
				cur = next;
			} else {
				cur = NULL;
			}
		}
		seg = slash ? slash + 1 : NULL;
	}
	free(copy);
	return cur;
}

/* path.Join(base, rel) with "." and ".." cleaned. Returns a new string. */
static char *ref_join(const char *base, const char *rel)
{
	char *segs[256];
	size_t n = 0;
	char *all = rel[0] == '/' ? gv_xstrdup(rel) : gv_xasprintf("%s/%s", base, rel);
	char *p = all, *slash;
	struct gv_buf out = {0};

	while (p) {
		slash = strchr(p, '/');
		if (slash)
			*slash = '\0';
		if (!strcmp(p, "..")) {
			if (n)
				n--;
		} else if (*p && strcmp(p, ".") && n < GV_ARRAY_LEN(segs)) {
			segs[n++] = p;
		}
		p = slash ? slash + 1 : NULL;
	}
	for (size_t i = 0; i < n; i++) {
		gv_buf_addc(&out, '/');
		gv_buf_adds(&out, segs[i]);
	}
	free(all);
	return gv_buf_detach(&out);
}

/* Resolves the $(...) references of one string at location `here`. */
static enum gv_code ref_string(const json_t *root, const char *here, const char *s, json_t **out,
			       struct gv_err *err)
{
	struct gv_buf b = {0};
	const char *p = s;
	bool changed = false;

	while (*p) {
		const char *start = strstr(p, "$(");
		const char *close;
		if (!start) {
			gv_buf_adds(&b, p);
			break;
		}
		if (start > s && start[-1] == '\\') {
			gv_buf_add(&b, p, (size_t)(start - 1 - p));
			gv_buf_adds(&b, "$(");
			p = start + 2;
			changed = true;
			continue;
		}
		close = strchr(start, ')');
		if (!close) {
			gv_buf_adds(&b, p);
			break;
		}
		gv_buf_add(&b, p, (size_t)(start - p));
		{
			char *inner = gv_xstrndup(start + 2, (size_t)(close - start - 2));
			const char *path = inner;
			char op[3] = "";
			char *abs;
			const json_t *v;
			static const char *const ops[] = {">=", "<=", ">", "<", "!"};
			for (size_t i = 0; i < GV_ARRAY_LEN(ops); i++)
				if (!strncmp(path, ops[i], strlen(ops[i]))) {
					snprintf(op, sizeof(op), "%s", ops[i]);
					path += strlen(ops[i]);
					break;
				}
			abs = ref_join(here, path);
			v = ref_lookup(root, abs);
			gv_buf_adds(&b, op);
			if (json_is_string(v)) {
				gv_buf_adds(&b, json_string_value(v));
			} else if (json_is_integer(v)) {
				gv_buf_addf(&b, "%lld", (long long)json_integer_value(v));
			} else if (json_is_real(v)) {
				gv_buf_addf(&b, "%f", json_real_value(v));
			} else {
				gv_err_set(err, GV_EINVAL,
					   "failed to resolve reference $(%s): the path %s does "
					   "not hold a string or number",
					   inner, abs);
				free(inner);
				free(abs);
				gv_buf_release(&b);
				return GV_EINVAL;
			}
			free(inner);
			free(abs);
		}
		changed = true;
		p = close + 1;
	}
	*out = changed ? json_string(gv_buf_str(&b)) : NULL;
	gv_buf_release(&b);
	return GV_OK;
}

/* Returns a new tree with $(...) references resolved, or NULL when it has none. */
static json_t *ref_tree(const json_t *root, const json_t *node, struct gv_buf *here,
			struct gv_err *err, bool *failed)
{
	if (json_is_string(node)) {
		json_t *r = NULL;
		if (!strstr(json_string_value(node), "$("))
			return NULL;
		if (ref_string(root, gv_buf_str(here), json_string_value(node), &r, err))
			*failed = true;
		return r;
	}
	if (json_is_object(node)) {
		json_t *copy = NULL;
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)node, k, v)
		{
			size_t base = here->len;
			char *inner = anchor_inner(k);
			json_t *r;
			gv_buf_addc(here, '/');
			gv_buf_adds(here, inner);
			free(inner);
			r = ref_tree(root, v, here, err, failed);
			here->len = base;
			here->data[base] = '\0';
			if (*failed) {
				json_decref(r);
				json_decref(copy);
				return NULL;
			}
			if (r) {
				if (!copy)
					copy = json_copy((json_t *)node);
				json_object_set_new(copy, k, r);
			}
		}
		return copy;
	}
	if (json_is_array(node)) {
		json_t *copy = NULL;
		size_t i;
		json_t *v;
		json_array_foreach(node, i, v)
		{
			size_t base = here->len;
			json_t *r;
			gv_buf_addf(here, "/%zu", i);
			r = ref_tree(root, v, here, err, failed);
			here->len = base;
			here->data[base] = '\0';
			if (*failed) {
				json_decref(r);
				json_decref(copy);
				return NULL;
			}
			if (r) {
				if (!copy)
					copy = json_copy((json_t *)node);
				json_array_set_new(copy, i, r);
			}
		}
		return copy;
	}
	return NULL;
}

/* The pattern with references resolved: a new reference (the input when none). */
static json_t *resolve_refs(const json_t *pattern, struct gv_err *err)
{
	struct gv_buf here = {0};
	bool failed = false;
	json_t *r;

	gv_buf_adds(&here, "");
	r = ref_tree(pattern, pattern, &here, err, &failed);
	gv_buf_release(&here);
	if (failed)
		return NULL;
	return r ? r : json_incref((json_t *)pattern);
}

/* Compiles the body fields of a validate (or foreach) object. */
static enum gv_code body_compile_fields(const json_t *v, struct body *b, bool in_foreach,
					struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *pattern = json_object_get(v, "pattern");
	const json_t *anyp = json_object_get(v, "anyPattern");
	const json_t *deny = json_object_get(v, "deny");
	const json_t *fe = json_object_get(v, "foreach");
	size_t base = ptr->len;
	enum gv_code rc = GV_OK;
	int count = !!pattern + !!anyp + !!deny + !!fe + !!json_object_get(v, "cel") +
		    !!json_object_get(v, "podSecurity") + !!json_object_get(v, "manifests") +
		    !!json_object_get(v, "assert");

	memset(b, 0, sizeof(*b));
	if (count == 0)
		return gv_err_setp(
		    err, GV_EINVAL, gv_buf_str(ptr),
		    "one of pattern, anyPattern, deny, foreach, cel must be specified");
	if (count > 1)
		return gv_err_setp(
		    err, GV_EINVAL, gv_buf_str(ptr),
		    "only one of pattern, anyPattern, deny, foreach, cel can be specified");
	if (json_object_get(v, "podSecurity")) {
		b->kind = BODY_POD_SECURITY;
		policy_ptr_push(ptr, "podSecurity");
		rc = pss_spec_compile(json_object_get(v, "podSecurity"), &b->pss, ptr, err);
	} else if (deny) {
		b->kind = BODY_DENY;
		policy_ptr_push(ptr, "deny");
		if (!json_is_object(deny)) {
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "deny must be an object");
		} else {
			const json_t *conds = json_object_get(deny, "conditions");
			policy_ptr_push(ptr, "conditions");
			rc = conditions_compile(conds, &b->deny, ptr, err);
		}
	} else if (pattern) {
		json_t *resolved = resolve_refs(pattern, err);
		b->kind = BODY_PATTERN;
		policy_ptr_push(ptr, "pattern");
		if (!resolved) {
			rc = GV_EINVAL;
			snprintf(err->pointer, sizeof(err->pointer), "%s", gv_buf_str(ptr));
			goto body_out;
		}
		pattern = resolved;
		b->pattern_raw = resolved; /* owns the resolved tree */
		b->pattern_vars = vtree_compile(pattern, err);
		if (!b->pattern_vars) {
			rc = GV_EINVAL;
			if (!err->pointer[0])
				snprintf(err->pointer, sizeof(err->pointer), "%s", gv_buf_str(ptr));
		} else if (vtree_is_const(b->pattern_vars)) {
			vtree_free(b->pattern_vars);
			b->pattern_vars = NULL;
			b->pattern = pattern_compile(pattern, err);
			if (!b->pattern)
				rc = pattern_err(err, ptr);
		} else {
			/* Check the anchors now; variables are substituted per evaluation. */
			struct pattern *probe = pattern_compile(pattern, err);
			if (!probe)
				rc = pattern_err(err, ptr);
			pattern_free(probe);
		}
	} else if (anyp) {
		b->kind = BODY_ANY_PATTERN;
		policy_ptr_push(ptr, "anyPattern");
		b->pattern_raw = json_incref((json_t *)anyp);
		if (!json_is_array(anyp)) {
			/* evaluated as an error result (section 4) */
		} else {
			b->pattern_vars = vtree_compile(anyp, err);
			if (!b->pattern_vars) {
				rc = GV_EINVAL;
			} else if (vtree_is_const(b->pattern_vars)) {
				size_t i;
				json_t *c;
				vtree_free(b->pattern_vars);
				b->pattern_vars = NULL;
				b->any = gv_xcalloc(json_array_size(anyp) + 1, sizeof(*b->any));
				json_array_foreach(anyp, i, c)
				{
					size_t ib = ptr->len;
					policy_ptr_pushi(ptr, i);
					b->any[i] = pattern_compile(c, err);
					if (!b->any[i]) {
						rc = pattern_err(err, ptr);
						policy_ptr_pop(ptr, ib);
						break;
					}
					b->nany++;
					policy_ptr_pop(ptr, ib);
				}
			}
		}
	} else if (fe) {
		b->kind = BODY_FOREACH;
		policy_ptr_push(ptr, "foreach");
		rc = foreach_compile(fe, &b->foreach, &b->nforeach, ptr, err);
	} else if (json_object_get(v, "cel") && !in_foreach) {
		/* Compiled by rule_compile, which knows the rule's celPreconditions. */
		b->kind = BODY_CEL;
	} else {
		/* Accepted, not evaluated: an explicit error result (evaluate.c). */
		b->kind = BODY_UNSUPPORTED;
		b->unsupported = json_object_get(v, "cel")	   ? "validate.cel"
				 : json_object_get(v, "manifests") ? "validate.manifests"
								   : "validate.assert";
	}
body_out:
	policy_ptr_pop(ptr, base);
	if (rc)
		body_release(b);
	return rc;
}

enum gv_code body_compile(const json_t *validate, struct body *b, struct gv_buf *ptr,
			  struct gv_err *err)
{
	return body_compile_fields(validate, b, false, ptr, err);
}

static enum gv_code foreach_compile(const json_t *arr, struct foreach **out, size_t *n,
				    struct gv_buf *ptr, struct gv_err *err)
{
	size_t i, base = ptr->len;
	json_t *c;
	enum gv_code rc = GV_OK;

	*out = NULL;
	*n = 0;
	if (!json_is_array(arr))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "foreach must be a list");
	*out = gv_xcalloc(json_array_size(arr) + 1, sizeof(**out));
	json_array_foreach(arr, i, c)
	{
		struct foreach *f = &(*out)[i];
		const json_t *scope = json_object_get(c, "elementScope");
		const char *list = json_string_value(json_object_get(c, "list"));

		policy_ptr_pushi(ptr, i);
		(*n)++;
		f->element_scope = json_is_boolean(scope) ? json_boolean_value(scope) : -1;
		rc = policy_check_fields(c, foreach_fields, ptr, err);
		if (!rc && !list) {
			policy_ptr_push(ptr, "list");
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "foreach list is required");
		}
		if (!rc) {
			struct jp_error je;
			static const struct jp_options opts = {.kyverno = true};
			struct jp_expr *x = NULL;
			f->list = gv_xstrdup(list);
			if (!tmpl_has_vars(list)) {
				x = jp_compile(list, &opts, &je);
				if (!x) {
					policy_ptr_push(ptr, "list");
					rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							 "invalid foreach list %s: %s: %s", list,
							 jp_error_kind_name(je.kind), je.msg);
				}
				f->list_x = x;
			}
		}
		if (!rc) {
			size_t b2 = ptr->len;
			policy_ptr_push(ptr, "context");
			rc = context_compile(json_object_get(c, "context"), &f->ctx, &f->nctx, ptr,
					     err);
			policy_ptr_pop(ptr, b2);
		}
		if (!rc) {
			size_t b2 = ptr->len;
			policy_ptr_push(ptr, "preconditions");
			rc = conditions_compile(json_object_get(c, "preconditions"), &f->pre, ptr,
						err);
			policy_ptr_pop(ptr, b2);
		}
		if (!rc)
			rc = body_compile_fields(c, &f->body, true, ptr, err);
		policy_ptr_pop(ptr, base);
		if (rc)
			break;
	}
	if (rc) {
		foreach_release(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
