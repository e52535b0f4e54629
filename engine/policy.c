/*
 * policy.c - loading and compiling ClusterPolicy / Policy documents
 * (kyverno-semantics.md sections 1, 7.1, 9), PolicyExceptions, and
 * policy sets.
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/value.h"
#include "common/banned.h"

#define MAX_NAME 63

static const char *const spec_fields[] = {"rules",
					  "background",
					  "admission",
					  "validationFailureAction",
					  "validationFailureActionOverrides",
					  "failurePolicy",
					  "webhookConfiguration",
					  "emitWarning",
					  "applyRules",
					  "webhookTimeoutSeconds",
					  "mutateExistingOnPolicyUpdate",
					  "generateExisting",
					  "generateExistingOnPolicyUpdate",
					  "useServerSideApply",
					  "schemaValidation",
					  "evaluation",
					  "scanInterval",
					  "scanSchedule",
					  "scanSuspend",
					  NULL};

static const char *const rule_fields[] = {"name",
					  "match",
					  "exclude",
					  "context",
					  "preconditions",
					  "validate",
					  "mutate",
					  "generate",
					  "verifyImages",
					  "imageExtractors",
					  "celPreconditions",
					  "skipBackgroundRequests",
					  "reportProperties",
					  NULL};

static const char *const validate_fields[] = {"message",
					      "pattern",
					      "anyPattern",
					      "deny",
					      "foreach",
					      "podSecurity",
					      "cel",
					      "manifests",
					      "failureAction",
					      "failureActionOverrides",
					      "allowExistingViolations",
					      "assert",
					      NULL};

static const char *const foreach_fields[] = {"list",	     "context", "preconditions",
					     "elementScope", "pattern", "anyPattern",
					     "deny",	     "foreach", NULL};

static bool in_set(const char *const *set, const char *k)
{
	for (; *set; set++)
		if (!strcmp(*set, k))
			return true;
	return false;
}

static void ptr_push(struct gv_buf *ptr, const char *seg)
{
	gv_pointer_add(ptr, seg);
}

static void ptr_pushi(struct gv_buf *ptr, size_t i)
{
	char idx[24];
	snprintf(idx, sizeof(idx), "%zu", i);
	gv_pointer_add(ptr, idx);
}

static void ptr_pop(struct gv_buf *ptr, size_t base)
{
	ptr->len = base;
	if (ptr->data)
		ptr->data[base] = '\0';
}

static enum gv_code check_fields(const json_t *obj, const char *const *known, struct gv_buf *ptr,
				 struct gv_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v)
	{
		if (!in_set(known, k)) {
			size_t base = ptr->len;
			ptr_push(ptr, k);
			gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "unknown field \"%s\"", k);
			ptr_pop(ptr, base);
			return GV_EINVAL;
		}
	}
	return GV_OK;
}

/* Spellings Kyverno's CRDs accept (manifests/crds, the enums of the schema). */
static const char *const action_values[] = {"audit", "enforce", "Audit", "Enforce", NULL};
static const char *const rule_action_values[] = {"Audit", "Enforce", NULL};
static const char *const failure_policy_values[] = {"Ignore", "Fail", NULL};
static const char *const apply_rules_values[] = {"All", "One", NULL};

/*
 * Checks the enumerated field obj.key against values (when present), with
 * the API server's message for a value outside a CRD enum. ptr is the
 * pointer of obj; the error's pointer is ptr + "/key".
 */
static enum gv_code check_enum(const json_t *obj, const char *key, const char *const *values,
			       const struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *v = json_object_get(obj, key);
	struct gv_buf at = {0}, list = {0};
	enum gv_code rc = GV_OK;

	if (!v || json_is_null(v))
		return GV_OK;
	for (const char *const *s = values; *s; s++)
		if (json_is_string(v) && !strcmp(json_string_value(v), *s))
			return GV_OK;
	for (const char *const *s = values; *s; s++)
		gv_buf_addf(&list, "%s\"%s\"", s == values ? "" : ", ", *s);
	gv_buf_adds(&at, gv_buf_str(ptr));
	gv_pointer_add(&at, key);
	if (json_is_string(v))
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(&at),
				 "Unsupported value: \"%s\": supported values: %s",
				 json_string_value(v), gv_buf_str(&list));
	else
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(&at),
				 "Invalid value: %s must be a string, one of %s", key,
				 gv_buf_str(&list));
	gv_buf_release(&at);
	gv_buf_release(&list);
	return rc;
}

/* Checks that obj.key, when present, is a boolean (a string "false" is not). */
static enum gv_code check_bool(const json_t *obj, const char *key, const struct gv_buf *ptr,
			       struct gv_err *err)
{
	const json_t *v = json_object_get(obj, key);
	struct gv_buf at = {0};
	enum gv_code rc;

	if (!v || json_is_null(v) || json_is_boolean(v))
		return GV_OK;
	gv_buf_adds(&at, gv_buf_str(ptr));
	gv_pointer_add(&at, key);
	rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(&at), "Invalid value: %s must be a boolean",
			 key);
	gv_buf_release(&at);
	return rc;
}

static bool parse_action(const json_t *v, enum engine_action *a)
{
	const char *s = json_string_value(v);
	if (!s)
		return false;
	*a = (!strcmp(s, "Enforce") || !strcmp(s, "enforce")) ? ENGINE_ENFORCE : ENGINE_AUDIT;
	return true;
}

static void overrides_release(struct override *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < o[i].nnamespaces; j++)
			free(o[i].namespaces[j]);
		free(o[i].namespaces);
		selector_free(o[i].ns_selector);
	}
	free(o);
}

static enum gv_code overrides_compile(const json_t *arr, struct override **out, size_t *n,
				      struct gv_buf *ptr, struct gv_err *err)
{
	size_t i, j;
	json_t *c, *ns;
	enum gv_code rc = GV_OK;

	*out = NULL;
	*n = 0;
	if (!json_array_size(arr))
		return GV_OK;
	*out = gv_xcalloc(json_array_size(arr), sizeof(**out));
	json_array_foreach(arr, i, c)
	{
		struct override *o = &(*out)[i];
		const json_t *sel = json_object_get(c, "namespaceSelector");
		size_t ob = ptr->len;
		ptr_pushi(ptr, i);
		rc = check_enum(c, "action", action_values, ptr, err);
		ptr_pop(ptr, ob);
		if (rc)
			break;
		parse_action(json_object_get(c, "action"), &o->action);
		o->namespaces = gv_xcalloc(json_array_size(json_object_get(c, "namespaces")) + 1,
					   sizeof(char *));
		json_array_foreach(json_object_get(c, "namespaces"), j, ns) if (json_is_string(ns))
		    o->namespaces[o->nnamespaces++] = gv_xstrdup(json_string_value(ns));
		(*n)++;
		if (json_is_object(sel)) {
			rc = selector_compile(sel, &o->ns_selector, ptr, err);
			if (rc)
				break;
		}
	}
	if (rc) {
		overrides_release(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

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

		ptr_pushi(ptr, i);
		if (!name || !*name) {
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "context entry name is required");
			ptr_pop(ptr, base);
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
					ptr_push(ptr, "name");
					rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							 "entry name %s is invalid as it conflicts "
							 "with a pre-defined variable %s",
							 name, *v);
					break;
				}
			}
			if (rc) {
				ptr_pop(ptr, base);
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
				ptr_pop(ptr, base);
				break;
			}
		}
		if (e->kind == CONTEXT_VARIABLE && !json_is_object(var)) {
			ptr_push(ptr, "variable");
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "context entry %s: variable must be an object", name);
			ptr_pop(ptr, base);
			break;
		}
		if (json_is_object(var)) {
			const json_t *value = json_object_get(var, "value");
			const char *jp = json_string_value(json_object_get(var, "jmesPath"));
			const json_t *def = json_object_get(var, "default");
			e->is_variable = true;
			if (value) {
				ptr_push(ptr, "variable");
				ptr_push(ptr, "value");
				e->value = vtree_compile(value, err);
				if (!e->value) {
					if (!err->pointer[0])
						snprintf(err->pointer, sizeof(err->pointer), "%s",
							 gv_buf_str(ptr));
					rc = GV_EINVAL;
					ptr_pop(ptr, base);
					break;
				}
			}
			e->jmespath = jp ? gv_xstrdup(jp) : NULL;
			if (def) {
				e->def_raw = json_incref((json_t *)def);
				e->def = vtree_compile(def, err);
				if (!e->def) {
					rc = GV_EINVAL;
					ptr_pop(ptr, base);
					break;
				}
			}
		}
		ptr_pop(ptr, base);
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
		ptr_push(ptr, "podSecurity");
		rc = pss_spec_compile(json_object_get(v, "podSecurity"), &b->pss, ptr, err);
	} else if (deny) {
		b->kind = BODY_DENY;
		ptr_push(ptr, "deny");
		if (!json_is_object(deny)) {
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "deny must be an object");
		} else {
			const json_t *conds = json_object_get(deny, "conditions");
			ptr_push(ptr, "conditions");
			rc = conditions_compile(conds, &b->deny, ptr, err);
		}
	} else if (pattern) {
		json_t *resolved = resolve_refs(pattern, err);
		b->kind = BODY_PATTERN;
		ptr_push(ptr, "pattern");
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
		ptr_push(ptr, "anyPattern");
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
					ptr_pushi(ptr, i);
					b->any[i] = pattern_compile(c, err);
					if (!b->any[i]) {
						rc = pattern_err(err, ptr);
						ptr_pop(ptr, ib);
						break;
					}
					b->nany++;
					ptr_pop(ptr, ib);
				}
			}
		}
	} else if (fe) {
		b->kind = BODY_FOREACH;
		ptr_push(ptr, "foreach");
		rc = foreach_compile(fe, &b->foreach, &b->nforeach, ptr, err);
	} else {
		/* Accepted, not evaluated: an explicit error result (evaluate.c). */
		b->kind = BODY_UNSUPPORTED;
		b->unsupported = json_object_get(v, "cel")	   ? "validate.cel"
				 : json_object_get(v, "manifests") ? "validate.manifests"
								   : "validate.assert";
	}
	(void)in_foreach;
body_out:
	ptr_pop(ptr, base);
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

		ptr_pushi(ptr, i);
		(*n)++;
		f->element_scope = json_is_boolean(scope) ? json_boolean_value(scope) : -1;
		rc = check_fields(c, foreach_fields, ptr, err);
		if (!rc && !list) {
			ptr_push(ptr, "list");
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
					ptr_push(ptr, "list");
					rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							 "invalid foreach list %s: %s: %s", list,
							 jp_error_kind_name(je.kind), je.msg);
				}
				f->list_x = x;
			}
		}
		if (!rc) {
			size_t b2 = ptr->len;
			ptr_push(ptr, "context");
			rc = context_compile(json_object_get(c, "context"), &f->ctx, &f->nctx, ptr,
					     err);
			ptr_pop(ptr, b2);
		}
		if (!rc) {
			size_t b2 = ptr->len;
			ptr_push(ptr, "preconditions");
			rc = conditions_compile(json_object_get(c, "preconditions"), &f->pre, ptr,
						err);
			ptr_pop(ptr, b2);
		}
		if (!rc)
			rc = body_compile_fields(c, &f->body, true, ptr, err);
		ptr_pop(ptr, base);
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

/* ---- rules ---- */

void rule_release(struct rule *r)
{
	free(r->name);
	match_block_release(&r->match);
	match_block_release(&r->exclude);
	context_release(r->ctx, r->nctx);
	conditions_release(&r->pre);
	body_release(&r->body);
	vtree_free(r->message);
	free(r->message_raw);
	overrides_release(r->overrides, r->noverrides);
	memset(r, 0, sizeof(*r));
}

/* Admission-only variables (section 7.1): word match, not preceded by '.'. */
static bool admission_only_var(const char *expr)
{
	static const char *const names[] = {"serviceAccountName", "serviceAccountNamespace",
					    "request.userInfo", "request.roles",
					    "request.clusterRoles"};
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++) {
		size_t n = strlen(names[i]);
		for (const char *p = strstr(expr, names[i]); p; p = strstr(p + 1, names[i])) {
			char before = p == expr ? ' ' : p[-1];
			char after = p[n];
			bool word_before =
			    (before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
			    (before >= '0' && before <= '9') || before == '_' || before == '.';
			bool word_after = (after >= 'a' && after <= 'z') ||
					  (after >= 'A' && after <= 'Z') ||
					  (after >= '0' && after <= '9') || after == '_';
			if (!word_before && !word_after)
				return true;
		}
	}
	return false;
}

struct var_scan {
	char *first_bad; /* raw text of the first admission-only variable */
};

static void scan_var(const char *expr, const char *raw, void *ud)
{
	struct var_scan *s = ud;
	if (!s->first_bad && admission_only_var(expr))
		s->first_bad = gv_xstrdup(raw);
}

/* Kyverno's path notation: spec/rules[0]/exclude/any[0]/clusterRoles. */
static char *userinfo_path(size_t rule, const char *block, const struct match_block *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct match_filter *f = &b->f[i];
		const char *field = f->nroles		? "roles"
				    : f->ncluster_roles ? "clusterRoles"
				    : f->subjects	? "subjects"
							: NULL;
		if (!field)
			continue;
		if (b->mode == MATCH_ANY || b->mode == MATCH_ALL) {
			/* legacy single filter has no index */
		}
		return gv_xasprintf("spec/rules[%zu]/%s/%s[%zu]/%s", rule, block,
				    b->mode == MATCH_ANY ? "any" : "all", i, field);
	}
	return NULL;
}

enum gv_code rule_compile(const json_t *j, struct rule *r, bool background, struct gv_buf *ptr,
			  struct gv_err *err)
{
	const json_t *validate = json_object_get(j, "validate");
	const char *name = json_string_value(json_object_get(j, "name"));
	size_t base = ptr->len;
	enum gv_code rc;
	int ops;
	struct var_scan scan = {0};

	memset(r, 0, sizeof(*r));
	r->allow_existing = true;
	if (!json_is_object(j))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "rule must be an object");
	rc = check_fields(j, rule_fields, ptr, err);
	if (rc)
		return rc;
	if (!name || !*name) {
		ptr_push(ptr, "name");
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "rule name is required");
		goto out;
	}
	if (strlen(name) > MAX_NAME) {
		ptr_push(ptr, "name");
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				 "rule name '%s' is longer than %d characters", name, MAX_NAME);
		goto out;
	}
	r->name = gv_xstrdup(name);
	r->unsupported = json_object_get(j, "mutate")	      ? "mutate"
			 : json_object_get(j, "generate")     ? "generate"
			 : json_object_get(j, "verifyImages") ? "verifyImages"
							      : NULL;
	ops = !!validate + !!json_object_get(j, "mutate") + !!json_object_get(j, "generate") +
	      !!json_object_get(j, "verifyImages");
	if (ops == 0) {
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				 "No operation defined in the rule '%s'.(supported operations: "
				 "mutate,validate,generate,verifyImages)",
				 name);
		goto out;
	}
	if (ops > 1) {
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				 "Multiple operations defined in the rule '%s', only one operation "
				 "(mutate,validate,generate,verifyImages) is allowed per rule",
				 name);
		goto out;
	}
	if (!json_object_get(j, "match")) {
		ptr_push(ptr, "match");
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "match resources not specified");
		goto out;
	}
	ptr_push(ptr, "match");
	rc = match_block_compile(json_object_get(j, "match"), &r->match, false, ptr, err);
	ptr_pop(ptr, base);
	if (rc)
		goto out;
	ptr_push(ptr, "exclude");
	rc = match_block_compile(json_object_get(j, "exclude"), &r->exclude, true, ptr, err);
	ptr_pop(ptr, base);
	if (rc)
		goto out;
	{
		struct var_scan ms = {0};
		vars_each(json_object_get(j, "match"), scan_var, &ms);
		vars_each(json_object_get(j, "exclude"), scan_var, &ms);
		if (!ms.first_bad) {
			struct gv_buf t = {0};
			char *m =
			    json_dumps(json_object_get(j, "match"), JSON_COMPACT | JSON_ENCODE_ANY);
			char *x = json_dumps(json_object_get(j, "exclude"),
					     JSON_COMPACT | JSON_ENCODE_ANY);
			gv_buf_adds(&t, m ? m : "");
			gv_buf_adds(&t, x ? x : "");
			free(m);
			free(x);
			if (tmpl_has_vars(gv_buf_str(&t))) {
				ptr_push(ptr, "match");
				rc = gv_err_setp(
				    err, GV_EINVAL, gv_buf_str(ptr),
				    "rule \"%s\" should not have variables in match section", name);
			}
			gv_buf_release(&t);
		}
		free(ms.first_bad);
		if (rc)
			goto out;
	}
	ptr_push(ptr, "context");
	rc = context_compile(json_object_get(j, "context"), &r->ctx, &r->nctx, ptr, err);
	ptr_pop(ptr, base);
	if (rc)
		goto out;
	ptr_push(ptr, "preconditions");
	rc = conditions_compile(json_object_get(j, "preconditions"), &r->pre, ptr, err);
	ptr_pop(ptr, base);
	if (rc)
		goto out;
	if (validate) {
		const json_t *msg;
		r->has_validate = true;
		ptr_push(ptr, "validate");
		if (!json_is_object(validate)) {
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "validate must be an object");
			goto out;
		}
		rc = check_fields(validate, validate_fields, ptr, err);
		if (rc)
			goto out;
		rc = body_compile(validate, &r->body, ptr, err);
		if (rc)
			goto out;
		/* Rule fields that change what is evaluated and that gavel does not read. */
		r->unsupported = r->body.kind == BODY_UNSUPPORTED	  ? r->body.unsupported
				 : json_object_get(j, "celPreconditions") ? "celPreconditions"
				 : json_object_get(j, "imageExtractors")  ? "imageExtractors"
									  : NULL;
		msg = json_object_get(validate, "message");
		if (json_is_string(msg)) {
			r->message_raw = gv_xstrdup(json_string_value(msg));
			ptr_push(ptr, "message");
			r->message = vtree_compile(msg, err);
			if (!r->message) {
				rc = GV_EINVAL;
				if (!err->pointer[0])
					snprintf(err->pointer, sizeof(err->pointer), "%s",
						 gv_buf_str(ptr));
				goto out;
			}
			ptr_pop(ptr, base);
			ptr_push(ptr, "validate");
		}
		rc = check_enum(validate, "failureAction", rule_action_values, ptr, err);
		if (!rc)
			rc = check_bool(validate, "allowExistingViolations", ptr, err);
		if (rc)
			goto out;
		r->has_action =
		    parse_action(json_object_get(validate, "failureAction"), &r->action);
		ptr_push(ptr, "failureActionOverrides");
		rc = overrides_compile(json_object_get(validate, "failureActionOverrides"),
				       &r->overrides, &r->noverrides, ptr, err);
		if (rc)
			goto out;
		if (json_is_boolean(json_object_get(validate, "allowExistingViolations")))
			r->allow_existing = json_boolean_value(
			    json_object_get(validate, "allowExistingViolations"));
		ptr_pop(ptr, base);
	}
	/* Background safety (section 7.1). */
	vars_each(j, scan_var, &scan);
	r->background_safe = !scan.first_bad;
	{
		bool ui = false;
		for (size_t i = 0; i < r->match.n; i++)
			ui |= r->match.f[i].has_userinfo;
		for (size_t i = 0; i < r->exclude.n; i++)
			ui |= r->exclude.f[i].has_userinfo;
		if (ui)
			r->background_safe = false;
	}
	(void)background;
	free(scan.first_bad);
out:
	ptr_pop(ptr, base);
	if (rc)
		rule_release(r);
	return rc;
}

/* ---- autogen (section 9) ---- */

static const char *const controllers[] = {
    "DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController", NULL};
static const char *const controller_gvk[] = {"apps/v1/DaemonSet",
					     "apps/v1/Deployment",
					     "batch/v1/Job",
					     "apps/v1/StatefulSet",
					     "apps/v1/ReplicaSet",
					     "v1/ReplicationController",
					     NULL};

static bool kinds_has(const json_t *kinds, const char *kind, bool gvk_forms)
{
	size_t i;
	json_t *k;

	json_array_foreach(kinds, i, k)
	{
		struct kind_sel sel;
		bool match;
		if (!json_is_string(k))
			continue;
		if (!strcmp(json_string_value(k), kind))
			return true;
		if (!gvk_forms)
			continue;
		kind_sel_parse(json_string_value(k), &sel);
		match = !strcmp(sel.kind, kind) && sel.sub[0] == '\0';
		kind_sel_release(&sel);
		if (match)
			return true;
	}
	return false;
}

/* Calls fn on each resource description of a match/exclude block. */
static void each_resources(const json_t *block, void (*fn)(const json_t *res, void *ud), void *ud)
{
	size_t i;
	json_t *c;

	if (!json_is_object(block))
		return;
	json_array_foreach(json_object_get(block, "any"), i, c)
	    fn(json_object_get(c, "resources"), ud);
	json_array_foreach(json_object_get(block, "all"), i, c)
	    fn(json_object_get(c, "resources"), ud);
	if (json_object_get(block, "resources"))
		fn(json_object_get(block, "resources"), ud);
}

struct autogen_scan {
	bool disable;
	bool mentions;
};

static void scan_resources(const json_t *res, void *ud)
{
	struct autogen_scan *s = ud;
	const json_t *kinds = json_object_get(res, "kinds");
	size_t i;
	json_t *k;

	if (json_object_get(res, "name") || json_object_get(res, "names") ||
	    json_object_get(res, "selector") || json_object_get(res, "annotations"))
		s->disable = true;
	if (kinds_has(kinds, "Pod", false) && json_array_size(kinds) > 1)
		s->disable = true;
	json_array_foreach(kinds, i, k)
	{
		const char *ks = json_string_value(k);
		if (!ks)
			continue;
		if (!strcmp(ks, "Pod") || !strcmp(ks, "CronJob") || in_set(controllers, ks))
			s->mentions = true;
	}
}

struct pod_scan {
	bool any_kinds;
	bool has_pod;
};

static void scan_pod(const json_t *res, void *ud)
{
	struct pod_scan *s = ud;
	const json_t *kinds = json_object_get(res, "kinds");
	if (json_array_size(kinds))
		s->any_kinds = true;
	if (kinds_has(kinds, "Pod", true))
		s->has_pod = true;
}

static json_t *replace_kinds(const json_t *block, const json_t *newkinds)
{
	json_t *b = json_deep_copy(block);
	const char *lists[] = {"any", "all"};
	size_t i;
	json_t *c;

	for (size_t l = 0; l < 2; l++)
		json_array_foreach(json_object_get(b, lists[l]), i, c)
		{
			json_t *res = json_object_get(c, "resources");
			if (kinds_has(json_object_get(res, "kinds"), "Pod", true))
				json_object_set(res, "kinds", (json_t *)newkinds);
		}
	if (json_object_get(b, "resources")) {
		json_t *res = json_object_get(b, "resources");
		if (kinds_has(json_object_get(res, "kinds"), "Pod", true))
			json_object_set(res, "kinds", (json_t *)newkinds);
	}
	return b;
}

/* Absolute $(/path) references move with the wrapped pattern (section 9.2). */
static char *shift_references(const char *s, const char *prefix)
{
	static const char *const ops[] = {">=", "<=", ">", "<", "!", ""};
	struct gv_buf b = {0};
	const char *p = s, *q;

	while ((q = strstr(p, "$("))) {
		const char *after = q + 2;
		size_t oplen = 0;
		for (size_t i = 0; i < GV_ARRAY_LEN(ops); i++)
			if (!strncmp(after, ops[i], strlen(ops[i]))) {
				oplen = strlen(ops[i]);
				break;
			}
		gv_buf_add(&b, p, (size_t)(after + oplen - p));
		if (after[oplen] == '/')
			gv_buf_adds(&b, prefix);
		p = after + oplen;
	}
	gv_buf_adds(&b, p);
	return gv_buf_detach(&b);
}

/* {spec: {template: P}} or {spec: {jobTemplate: {spec: {template: P}}}} */
static json_t *wrap_pattern(const json_t *p, bool cronjob)
{
	json_t *t = json_object();
	json_object_set(t, "template", (json_t *)p);
	if (cronjob) {
		json_t *jt = json_object();
		json_object_set_new(jt, "spec", t);
		t = json_object();
		json_object_set_new(t, "jobTemplate", jt);
	}
	json_t *out = json_object();
	json_object_set_new(out, "spec", t);
	return out;
}

static json_t *autogen_rule(const json_t *rule, const json_t *kinds, bool cronjob)
{
	const char *name = json_string_value(json_object_get(rule, "name"));
	char *newname = gv_xasprintf(cronjob ? "autogen-cronjob-%s" : "autogen-%s", name);
	json_t *r = json_deep_copy(rule), *v, *t;
	char *text, *rep;
	static const char *const from[] = {"request.object.spec", "request.oldObject.spec",
					   "request.object.metadata", "request.oldObject.metadata"};
	static const char *const to_pod[] = {
	    "request.object.spec.template.spec", "request.oldObject.spec.template.spec",
	    "request.object.spec.template.metadata", "request.oldObject.spec.template.metadata"};
	static const char *const to_cron[] = {
	    "request.object.spec.jobTemplate.spec.template.spec",
	    "request.oldObject.spec.jobTemplate.spec.template.spec",
	    "request.object.spec.jobTemplate.spec.template.metadata",
	    "request.oldObject.spec.jobTemplate.spec.template.metadata"};

	if (strlen(newname) > MAX_NAME)
		newname[MAX_NAME] = '\0';
	json_object_set_new(r, "name", json_string(newname));
	free(newname);
	if ((v = json_object_get(r, "match")))
		json_object_set_new(r, "match", replace_kinds(v, kinds));
	if ((v = json_object_get(r, "exclude")))
		json_object_set_new(r, "exclude", replace_kinds(v, kinds));
	v = json_object_get(r, "validate");
	if (json_is_object(v)) {
		if ((t = json_object_get(v, "pattern")))
			json_object_set_new(v, "pattern", wrap_pattern(t, cronjob));
		if (json_is_array(t = json_object_get(v, "anyPattern"))) {
			json_t *arr = json_array();
			size_t i;
			json_t *c;
			json_array_foreach(t, i, c)
			    json_array_append_new(arr, wrap_pattern(c, cronjob));
			json_object_set_new(v, "anyPattern", arr);
		}
	}
	/* Textual variable rewrite over the whole rule. */
	text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	for (size_t i = 0; i < GV_ARRAY_LEN(from); i++) {
		rep = gv_str_replace_all(text, from[i], cronjob ? to_cron[i] : to_pod[i]);
		free(text);
		text = rep;
	}
	rep =
	    shift_references(text, cronjob ? "/spec/jobTemplate/spec/template" : "/spec/template");
	free(text);
	text = rep;
	json_decref(r);
	r = json_loads(text, 0, NULL);
	free(text);
	return r;
}

json_t *autogen_rules(const json_t *doc)
{
	const json_t *spec = json_object_get(doc, "spec");
	const json_t *rules = json_object_get(spec, "rules");
	const char *ann = json_string_value(
	    json_object_get(json_object_get(json_object_get(doc, "metadata"), "annotations"),
			    "pod-policies.kyverno.io/autogen-controllers"));
	json_t *out = json_array();
	struct autogen_scan scan = {0};
	bool sel[7] = {0}, cron = true, any_ctrl = false;
	size_t i;
	json_t *r;

	if (!json_is_array(rules))
		return out;
	json_array_foreach(rules, i, r)
	{
		char *text =
		    json_dumps(json_object_get(r, "mutate"), JSON_COMPACT | JSON_ENCODE_ANY);
		if (json_object_get(r, "generate") || (text && strstr(text, "\"patchesJson6902\"")))
			scan.disable = true;
		free(text);
		each_resources(json_object_get(r, "match"), scan_resources, &scan);
		each_resources(json_object_get(r, "exclude"), scan_resources, &scan);
	}
	if (scan.disable || !scan.mentions)
		return out;
	if (ann && !strcmp(ann, "none"))
		return out;
	if (ann) {
		char *copy = gv_xstrdup(ann), *p = copy, *comma;
		cron = false;
		for (;;) {
			comma = strchr(p, ',');
			if (comma)
				*comma = '\0';
			for (size_t c = 0; controllers[c]; c++)
				if (!strcmp(p, controllers[c]))
					sel[c] = true;
			if (!strcmp(p, "CronJob"))
				cron = true;
			if (!comma)
				break;
			p = comma + 1;
		}
		free(copy);
	} else {
		for (size_t c = 0; controllers[c]; c++)
			sel[c] = true;
	}
	for (size_t c = 0; controllers[c]; c++)
		any_ctrl |= sel[c];
	json_array_foreach(rules, i, r)
	{
		struct pod_scan m = {0}, x = {0};
		json_t *kinds;

		if (!json_object_get(r, "validate"))
			continue;
		each_resources(json_object_get(r, "match"), scan_pod, &m);
		each_resources(json_object_get(r, "exclude"), scan_pod, &x);
		if (!m.has_pod || (x.any_kinds && !x.has_pod))
			continue;
		if (any_ctrl) {
			kinds = json_array();
			for (size_t c = 0; controllers[c]; c++)
				if (sel[c])
					json_array_append_new(kinds,
							      json_string(controller_gvk[c]));
			json_array_append_new(out, autogen_rule(r, kinds, false));
			json_decref(kinds);
		}
		if (cron) {
			kinds = json_pack("[s]", "batch/v1/CronJob");
			json_array_append_new(out, autogen_rule(r, kinds, true));
			json_decref(kinds);
		}
	}
	return out;
}

json_t *engine_autogen_rules(const json_t *doc)
{
	return autogen_rules(doc);
}

/* ---- policy admission checks (sections 1.8, 7.1) ---- */

/* Pattern metadata.labels / metadata.annotations values must be strings. */
static enum gv_code check_label_values(const json_t *pat, struct gv_buf *ptr, struct gv_err *err)
{
	size_t base = ptr->len;

	if (json_is_object(pat)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)pat, k, v)
		{
			if (!strcmp(k, "metadata") && json_is_object(v)) {
				static const char *const maps[] = {"labels", "annotations"};
				for (size_t m = 0; m < 2; m++) {
					const json_t *lm = json_object_get(v, maps[m]);
					const char *lk;
					json_t *lv;
					json_object_foreach((json_t *)lm, lk, lv)
					{
						if (json_is_string(lv))
							continue;
						ptr_push(ptr, "metadata");
						ptr_push(ptr, maps[m]);
						ptr_push(ptr, lk);
						gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							    "labels and annotations supports only "
							    "string values, \"use double quotes "
							    "around the non-string values\"");
						ptr_pop(ptr, base);
						return GV_EINVAL;
					}
				}
			}
			ptr_push(ptr, k);
			if (check_label_values(v, ptr, err))
				return GV_EINVAL;
			ptr_pop(ptr, base);
		}
	} else if (json_is_array(pat)) {
		size_t i;
		json_t *v;
		json_array_foreach(pat, i, v)
		{
			ptr_pushi(ptr, i);
			if (check_label_values(v, ptr, err))
				return GV_EINVAL;
			ptr_pop(ptr, base);
		}
	}
	return GV_OK;
}

/* Context entry names declared anywhere in a rule (rule and foreach contexts). */
static void collect_context_names(const json_t *node, json_t *names)
{
	if (json_is_object(node)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)node, k, v)
		{
			if (!strcmp(k, "context") && json_is_array(v)) {
				size_t i;
				json_t *e;
				json_array_foreach(v, i, e)
				{
					const char *n =
					    json_string_value(json_object_get(e, "name"));
					if (n)
						json_array_append_new(names, json_string(n));
				}
			}
			collect_context_names(v, names);
		}
	} else if (json_is_array(node)) {
		size_t i;
		json_t *v;
		json_array_foreach(node, i, v) collect_context_names(v, names);
	}
}

static bool has_word(const char *s, const char *w)
{
	return strstr(s, w) != NULL;
}

/* "name(" followed by something that is not a brace: a function call. */
static bool has_call(const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p != '(' || p == s)
			continue;
		if (!((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= '0' && p[-1] <= '9') ||
		      p[-1] == '_'))
			continue;
		if (p[1] && p[1] != '{' && p[1] != '}')
			return true;
	}
	return false;
}

struct var_check {
	const json_t *names;
	bool background;
	char *bad; /* raw text of the first variable outside the allow-list */
};

static void check_var(const char *expr, const char *raw, void *ud)
{
	struct var_check *vc = ud;
	size_t i;
	json_t *n;
	bool ok;

	if (vc->bad)
		return;
	if (vc->background)
		ok = has_word(expr, "request.") || has_word(expr, "element") ||
		     has_word(expr, "@") || has_word(expr, "images") || has_word(expr, "image.") ||
		     has_call(expr);
	else
		ok = has_word(expr, "request") || has_word(expr, "serviceAccountName") ||
		     has_word(expr, "serviceAccountNamespace") || has_word(expr, "element") ||
		     has_word(expr, "@") || has_word(expr, "image") || has_call(expr);
	json_array_foreach(vc->names, i, n)
	{
		const char *name = json_string_value(n);
		if (!strncmp(expr, name, strlen(name)))
			ok = true;
	}
	/* nested variables: the outer text is checked once the inner resolves */
	if (strchr(expr, '{'))
		ok = true;
	if (!ok)
		vc->bad = gv_xstrdup(raw);
}

struct element_scan {
	char *bad;
};

static void scan_element(const char *expr, const char *raw, void *ud)
{
	struct element_scan *es = ud;
	(void)raw;
	if (!es->bad &&
	    (!strncmp(expr, "element", 7) || strstr(expr, " element") || strstr(expr, "(element")))
		es->bad = gv_xstrdup(expr);
}

/* `element` variables outside foreach (section 1.7). */
static enum gv_code check_element_vars(const json_t *rule, struct gv_buf *ptr, struct gv_err *err)
{
	const char *k;
	json_t *v;
	size_t base = ptr->len;

	json_object_foreach((json_t *)rule, k, v)
	{
		struct element_scan es = {0};
		if (!strcmp(k, "validate") && json_is_object(v)) {
			const char *vk;
			json_t *vv;
			json_object_foreach(v, vk, vv)
			{
				if (!strcmp(vk, "foreach"))
					continue;
				vars_each(vv, scan_element, &es);
				if (es.bad) {
					ptr_push(ptr, "validate");
					ptr_push(ptr, vk);
					break;
				}
			}
		} else if (strcmp(k, "mutate") && strcmp(k, "generate") &&
			   strcmp(k, "verifyImages")) {
			vars_each(v, scan_element, &es);
			if (es.bad)
				ptr_push(ptr, k);
		}
		if (es.bad) {
			gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				    "variable 'element' present outside of foreach at path %s",
				    gv_buf_str(ptr));
			free(es.bad);
			ptr_pop(ptr, base);
			return GV_EINVAL;
		}
	}
	return GV_OK;
}

/* Background restrictions on kinds (section 7.1 items 4 and 5). */
static enum gv_code check_background_kinds(const struct rule *r, struct gv_buf *ptr,
					   struct gv_err *err)
{
	for (size_t f = 0; f < r->match.n; f++)
		for (size_t k = 0; k < r->match.f[f].nkinds; k++) {
			const struct kind_sel *ks = &r->match.f[f].kinds[k];
			if (!strcmp(ks->kind, "*") && !strcmp(ks->group, "*") && !ks->sub[0])
				return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
						   "wildcard policy not allowed in background "
						   "mode. Set spec.background=false to disable "
						   "background mode for this policy rule ");
			if (ks->sub[0] && r->has_validate)
				return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
						   "background scan enabled with subresource "
						   "%s/%s. Set spec.background=false to disable "
						   "background mode for this policy rule",
						   ks->kind, ks->sub);
		}
	return GV_OK;
}

/* All admission checks of one rule as written (not the autogen copies). */
static enum gv_code check_rule(const json_t *rj, const struct rule *r, bool background,
			       struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *validate = json_object_get(rj, "validate");
	size_t base = ptr->len;
	json_t *names = json_array();
	struct var_check vc = {.names = names, .background = background};
	enum gv_code rc = GV_OK;

	if (json_object_get(validate, "pattern")) {
		ptr_push(ptr, "validate");
		ptr_push(ptr, "pattern");
		rc = check_label_values(json_object_get(validate, "pattern"), ptr, err);
		ptr_pop(ptr, base);
	}
	if (!rc && json_is_array(json_object_get(validate, "anyPattern"))) {
		ptr_push(ptr, "validate");
		ptr_push(ptr, "anyPattern");
		rc = check_label_values(json_object_get(validate, "anyPattern"), ptr, err);
		ptr_pop(ptr, base);
	}
	if (!rc)
		rc = check_element_vars(rj, ptr, err);
	if (!rc) {
		collect_context_names(rj, names);
		vars_each(rj, check_var, &vc);
		if (vc.bad) {
			rc = gv_err_setp(
			    err, GV_EINVAL, gv_buf_str(ptr),
			    "policy contains invalid variables: variable substitution failed for "
			    "rule %s: variable %s must match regex \"%s\" or patterns %s",
			    r->name, vc.bad,
			    background ? "request\\.|element|elementIndex|@|images|images\\.|"
					 "image\\.|([a-z_0-9]+\\()[^{}]"
				       : "request|serviceAccountName|serviceAccountNamespace|"
					 "element|elementIndex|@|images|image|([a-z_0-9]+\\()[^{}]",
			    "of the context entries");
			free(vc.bad);
		}
	}
	if (!rc && background)
		rc = check_background_kinds(r, ptr, err);
	json_decref(names);
	return rc;
}

/* ---- policies ---- */

/* A namespaced Policy may not select cluster-scoped kinds (section 1.6). */
static enum gv_code check_namespaced_kinds(const json_t *rule, struct gv_buf *ptr,
					   struct gv_err *err)
{
	static const char *const blocks[] = {"match", "exclude"};
	static const char *const lists[] = {"any", "all"};
	size_t base = ptr->len;

	for (size_t b = 0; b < 2; b++) {
		const json_t *blk = json_object_get(rule, blocks[b]);
		for (size_t l = 0; l < 3; l++) {
			const json_t *filters = l < 2 ? json_object_get(blk, lists[l]) : NULL;
			size_t nf = l < 2 ? json_array_size(filters) : 1;
			for (size_t f = 0; f < nf; f++) {
				const json_t *res =
				    l < 2 ? json_object_get(json_array_get(filters, f), "resources")
					  : json_object_get(blk, "resources");
				size_t k;
				json_t *kind;
				json_array_foreach(json_object_get(res, "kinds"), k, kind)
				{
					struct kind_sel sel;
					bool cluster;
					if (!json_is_string(kind))
						continue;
					kind_sel_parse(json_string_value(kind), &sel);
					cluster = engine_kind_cluster_scoped(sel.kind);
					if (cluster) {
						ptr_push(ptr, blocks[b]);
						if (l < 2) {
							ptr_push(ptr, lists[l]);
							ptr_pushi(ptr, f);
						}
						ptr_push(ptr, "resources");
						ptr_push(ptr, "kinds");
						ptr_pushi(ptr, k);
						gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							    "Cluster wide resource '%s' not "
							    "allowed in namespaced policy",
							    sel.kind);
						ptr_pop(ptr, base);
					}
					kind_sel_release(&sel);
					if (cluster)
						return GV_EINVAL;
				}
			}
		}
	}
	return GV_OK;
}

static void scan_images(const char *expr, const char *raw, void *ud)
{
	bool *uses = ud;
	(void)raw;
	if (strstr(expr, "images"))
		*uses = true;
}

static void policy_free(struct engine_policy *p)
{
	for (size_t i = 0; i < p->nrules; i++)
		rule_release(&p->rules[i]);
	free(p->rules);
	overrides_release(p->overrides, p->noverrides);
	json_decref(p->doc);
	free(p->name);
	free(p->namespace);
	free(p->kind);
	free(p);
}

struct engine_policy *engine_policy_ref(struct engine_policy *p)
{
	atomic_fetch_add(&p->refs, 1);
	return p;
}

void engine_policy_unref(struct engine_policy *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1)
		policy_free(p);
}

static bool bool_field(const json_t *spec, const char *k, bool def)
{
	const json_t *v = json_object_get(spec, k);
	return json_is_boolean(v) ? json_boolean_value(v) : def;
}

struct engine_policy *engine_policy_compile(const json_t *doc, struct gv_err *err)
{
	struct engine_policy *p = NULL;
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const char *api = json_string_value(json_object_get(doc, "apiVersion"));
	const json_t *meta = json_object_get(doc, "metadata");
	const json_t *spec = json_object_get(doc, "spec");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const json_t *rules;
	json_t *gen = NULL;
	struct gv_buf ptr = {0};
	enum gv_code rc = GV_OK;
	size_t i, total;
	json_t *r;
	const char *fp, *apply;

	if (!json_is_object(doc) || !kind ||
	    (strcmp(kind, "ClusterPolicy") && strcmp(kind, "Policy"))) {
		gv_err_setp(err, GV_EINVAL, "/kind",
			    "not a policy: kind is %s%s%s, want ClusterPolicy or Policy",
			    kind ? "\"" : "", kind ? kind : "missing", kind ? "\"" : "");
		return NULL;
	}
	if (!api || (strcmp(api, "kyverno.io/v1") && strcmp(api, "kyverno.io/v2beta1"))) {
		gv_err_setp(err, GV_EINVAL, "/apiVersion",
			    "unsupported apiVersion \"%s\" for %s (want kyverno.io/v1 or "
			    "kyverno.io/v2beta1)",
			    api ? api : "", kind);
		return NULL;
	}
	if (!name || !*name) {
		gv_err_setp(err, GV_EINVAL, "/metadata/name", "policy name is required");
		return NULL;
	}
	if (strlen(name) > MAX_NAME) {
		gv_err_setp(err, GV_EINVAL, "/metadata/name",
			    "policy name %s is longer than %d characters", name, MAX_NAME);
		return NULL;
	}
	if (!strcmp(kind, "ClusterPolicy") && ns && *ns) {
		gv_err_setp(err, GV_EINVAL, "/metadata/namespace",
			    "A clusterpolicy should not have the namespace defined");
		return NULL;
	}
	if (!json_is_object(spec)) {
		gv_err_setp(err, GV_EINVAL, "/spec", "spec is required");
		return NULL;
	}
	gv_buf_adds(&ptr, "/spec");
	if (check_fields(spec, spec_fields, &ptr, err))
		goto fail;
	rules = json_object_get(spec, "rules");
	if (!json_is_array(rules) || !json_array_size(rules)) {
		gv_err_setp(err, GV_EINVAL, "/spec/rules", "a policy needs at least one rule");
		goto fail;
	}
	if (check_enum(spec, "validationFailureAction", action_values, &ptr, err) ||
	    check_enum(spec, "failurePolicy", failure_policy_values, &ptr, err) ||
	    check_enum(spec, "applyRules", apply_rules_values, &ptr, err) ||
	    check_bool(spec, "background", &ptr, err) || check_bool(spec, "admission", &ptr, err) ||
	    check_bool(spec, "emitWarning", &ptr, err) ||
	    check_bool(spec, "scanSuspend", &ptr, err))
		goto fail;
	{
		const json_t *wc = json_object_get(spec, "webhookConfiguration");
		size_t wb = ptr.len;
		gv_pointer_add(&ptr, "webhookConfiguration");
		if (json_is_object(wc) &&
		    check_enum(wc, "failurePolicy", failure_policy_values, &ptr, err))
			goto fail;
		ptr_pop(&ptr, wb);
	}
	p = gv_xcalloc(1, sizeof(*p));
	atomic_init(&p->refs, 1);
	p->doc = json_incref((json_t *)doc);
	p->name = gv_xstrdup(name);
	p->kind = gv_xstrdup(kind);
	p->namespace = gv_xstrdup(!strcmp(kind, "Policy") ? (ns && *ns ? ns : "default") : "");
	p->background = bool_field(spec, "background", true);
	p->admission = bool_field(spec, "admission", true);
	p->emit_warning = bool_field(spec, "emitWarning", false);
	apply = json_string_value(json_object_get(spec, "applyRules"));
	p->apply_one = apply && !strcmp(apply, "One");
	parse_action(json_object_get(spec, "validationFailureAction"), &p->action);
	fp = json_string_value(json_object_get(spec, "failurePolicy"));
	if (!fp)
		fp = json_string_value(json_object_get(
		    json_object_get(spec, "webhookConfiguration"), "failurePolicy"));
	p->failure_policy =
	    fp && !strcmp(fp, "Ignore") ? ENGINE_FAILURE_IGNORE : ENGINE_FAILURE_FAIL;
	if (!p->admission && !p->background) {
		gv_err_setp(err, GV_EINVAL, "/spec/admission",
			    "disabling both admission and background processing is not allowed");
		goto fail;
	}
	if (json_array_size(json_object_get(spec, "validationFailureActionOverrides")) &&
	    !strcmp(kind, "Policy")) {
		gv_err_setp(
		    err, GV_EINVAL, "/spec/validationFailureActionOverrides",
		    "Use of validationFailureActionOverrides is supported only with ClusterPolicy");
		goto fail;
	}
	gv_buf_reset(&ptr);
	gv_buf_adds(&ptr, "/spec/validationFailureActionOverrides");
	if (overrides_compile(json_object_get(spec, "validationFailureActionOverrides"),
			      &p->overrides, &p->noverrides, &ptr, err))
		goto fail;
	/* duplicate rule names (a set: policies may hold thousands of rules) */
	{
		json_t *seen = json_object();
		json_array_foreach(rules, i, r)
		{
			const char *rn = json_string_value(json_object_get(r, "name"));
			if (!rn)
				continue;
			if (json_object_get(seen, rn)) {
				char at[64];
				snprintf(at, sizeof(at), "/spec/rules/%zu/name", i);
				gv_err_setp(err, GV_EINVAL, at, "Duplicate rule name: '%s'", rn);
				json_decref(seen);
				goto fail;
			}
			json_object_set_new(seen, rn, json_true());
		}
		json_decref(seen);
	}
	gen = autogen_rules(doc);
	total = json_array_size(rules) + json_array_size(gen);
	p->rules = gv_xcalloc(total, sizeof(*p->rules));
	for (i = 0; i < total; i++) {
		bool is_gen = i >= json_array_size(rules);
		size_t idx = is_gen ? i - json_array_size(rules) : i;
		const json_t *rj = is_gen ? json_array_get(gen, idx) : json_array_get(rules, idx);
		struct rule *rule = &p->rules[i];

		gv_buf_reset(&ptr);
		if (is_gen)
			gv_buf_addf(&ptr, "/status/autogen/rules/%zu", idx);
		else
			gv_buf_addf(&ptr, "/spec/rules/%zu", idx);
		rc = rule_compile(rj, rule, p->background, &ptr, err);
		if (rc)
			goto fail;
		p->nrules++;
		if (!strcmp(kind, "Policy") && !is_gen && check_namespaced_kinds(rj, &ptr, err))
			goto fail;
		if (!strcmp(kind, "Policy")) {
			for (size_t f = 0; f < rule->match.n; f++)
				if (rule->match.f[f].nnamespaces) {
					gv_err_setp(err, GV_EINVAL, gv_buf_str(&ptr),
						    "Filtering namespaces not allowed in "
						    "namespaced policies");
					goto fail;
				}
		}
		if (p->background && !is_gen) {
			struct var_scan scan = {0};
			vars_each(rj, scan_var, &scan);
			if (scan.first_bad) {
				gv_err_setp(err, GV_EINVAL, gv_buf_str(&ptr),
					    "only select variables are allowed in background mode. "
					    "Set spec.background=false to disable background mode "
					    "for this policy rule: variable %s is not allowed",
					    scan.first_bad);
				free(scan.first_bad);
				goto fail;
			}
			{
				char *path = userinfo_path(idx, "match", &rule->match);
				if (!path)
					path = userinfo_path(idx, "exclude", &rule->exclude);
				if (path) {
					gv_err_setp(err, GV_EINVAL, gv_buf_str(&ptr),
						    "only select variables are allowed in "
						    "background mode. Set spec.background=false to "
						    "disable background mode for this policy rule: "
						    "invalid variable used at path: %s",
						    path);
					free(path);
					goto fail;
				}
			}
		}
		if (!is_gen && check_rule(rj, rule, p->background, &ptr, err))
			goto fail;
	}
	vars_each(spec, scan_images, &p->uses_images);
	json_decref(gen);
	gv_buf_release(&ptr);
	return p;
fail:
	json_decref(gen);
	gv_buf_release(&ptr);
	if (p)
		policy_free(p);
	return NULL;
}

const char *engine_policy_name(const struct engine_policy *p)
{
	return p->name;
}

const char *engine_policy_namespace(const struct engine_policy *p)
{
	return p->namespace;
}

const char *engine_policy_kind(const struct engine_policy *p)
{
	return p->kind;
}

bool engine_policy_background(const struct engine_policy *p)
{
	return p->background;
}

bool engine_policy_admission(const struct engine_policy *p)
{
	return p->admission;
}

bool engine_policy_emit_warning(const struct engine_policy *p)
{
	return p->emit_warning;
}

enum engine_failure_policy engine_policy_failure_policy(const struct engine_policy *p)
{
	return p->failure_policy;
}

const json_t *engine_policy_doc(const struct engine_policy *p)
{
	return p->doc;
}

const char *engine_policy_annotation(const struct engine_policy *p, const char *key)
{
	if (!p)
		return NULL;
	return json_string_value(json_object_get(
	    json_object_get(json_object_get(p->doc, "metadata"), "annotations"), key));
}

size_t engine_policy_rule_count(const struct engine_policy *p)
{
	return p->nrules;
}

const char *engine_policy_rule_name(const struct engine_policy *p, size_t i)
{
	return i < p->nrules ? p->rules[i].name : NULL;
}

bool engine_policy_rule_background_safe(const struct engine_policy *p, size_t i)
{
	return i < p->nrules && p->rules[i].background_safe;
}

const char *engine_policy_rule_unsupported(const struct engine_policy *p, size_t i)
{
	return i < p->nrules ? p->rules[i].unsupported : NULL;
}

char *engine_policy_unsupported_note(const struct engine_policy *p)
{
	struct gv_buf b = {0};
	size_t n = 0;

	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		if (r->has_validate || !r->unsupported)
			continue;
		if (n < 3)
			gv_buf_addf(&b, "%s%s rule %s", n ? ", " : "", r->unsupported, r->name);
		n++;
	}
	if (!n)
		return NULL;
	if (n > 3)
		gv_buf_addf(&b, " and %zu more", n - 3);
	{
		char *s = gv_xasprintf(
		    "policy %s: gavel is a validate engine and does not evaluate its %s", p->name,
		    gv_buf_str(&b));
		gv_buf_release(&b);
		return s;
	}
}

bool engine_doc_reads_outside(const json_t *doc)
{
	static const char *const entries[] = {"apiCall", "configMap", "globalReference",
					      "imageRegistry"};
	static const char *const functions[] = {"time_now", "time_since", "random"};
	const char *key;
	const json_t *v;
	size_t i;

	if (json_is_string(doc)) {
		for (i = 0; i < GV_ARRAY_LEN(functions); i++)
			if (strstr(json_string_value(doc), functions[i]))
				return true;
		return false;
	}
	if (json_is_array(doc)) {
		json_array_foreach(doc, i, v)
		{
			if (engine_doc_reads_outside(v))
				return true;
		}
		return false;
	}
	json_object_foreach((json_t *)doc, key, v)
	{
		if (!strcmp(key, "context") && json_is_array(v)) {
			const json_t *entry;
			size_t k;

			json_array_foreach(v, k, entry)
			{
				for (i = 0; i < GV_ARRAY_LEN(entries); i++)
					if (json_object_get(entry, entries[i]))
						return true;
			}
		}
		if (engine_doc_reads_outside(v))
			return true;
	}
	return false;
}

static bool override_matches(const struct override *o, const char *ns, const json_t *ns_labels)
{
	if (!o->nnamespaces && !o->ns_selector)
		return true;
	if (!ns || !*ns)
		return false;
	for (size_t i = 0; i < o->nnamespaces; i++)
		if (value_wildcard(o->namespaces[i], ns))
			return true;
	return o->ns_selector && selector_matches(o->ns_selector, ns_labels);
}

enum engine_action rule_effective_action(const struct engine_policy *p, const struct rule *r,
					 const char *ns, const json_t *ns_labels)
{
	const struct override *o = r->noverrides ? r->overrides : p->overrides;
	size_t n = r->noverrides ? r->noverrides : p->noverrides;

	for (size_t i = 0; i < n; i++)
		if (override_matches(&o[i], ns, ns_labels))
			return o[i].action;
	return r->has_action ? r->action : p->action;
}

/* ---- exceptions ---- */

void engine_exception_free(struct engine_exception *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nentries; i++) {
		free(e->entries[i].policy);
		for (size_t j = 0; j < e->entries[i].nrules; j++)
			free(e->entries[i].rules[j]);
		free(e->entries[i].rules);
	}
	free(e->entries);
	match_block_release(&e->match);
	conditions_release(&e->conditions);
	pss_exclusions_free(e->pss, e->npss);
	free(e->name);
	free(e->namespace);
	free(e);
}

struct engine_exception *engine_exception_compile(const json_t *doc, struct gv_err *err)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const json_t *meta = json_object_get(doc, "metadata");
	const json_t *spec = json_object_get(doc, "spec");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	struct engine_exception *e;
	struct gv_buf ptr = {0};
	size_t i, j;
	json_t *c, *rn;

	if (!kind || strcmp(kind, "PolicyException")) {
		gv_err_setp(err, GV_EINVAL, "/kind", "not a PolicyException");
		return NULL;
	}
	if (!name) {
		gv_err_setp(err, GV_EINVAL, "/metadata/name", "name is required");
		return NULL;
	}
	if (!json_is_array(json_object_get(spec, "exceptions"))) {
		gv_err_setp(err, GV_EINVAL, "/spec/exceptions", "exceptions must be a list");
		return NULL;
	}
	e = gv_xcalloc(1, sizeof(*e));
	e->name = gv_xstrdup(name);
	e->namespace = gv_xstrdup(ns ? ns : "");
	e->entries = gv_xcalloc(json_array_size(json_object_get(spec, "exceptions")) + 1,
				sizeof(*e->entries));
	json_array_foreach(json_object_get(spec, "exceptions"), i, c)
	{
		const char *pn = json_string_value(json_object_get(c, "policyName"));
		const json_t *rules = json_object_get(c, "ruleNames");
		e->entries[i].policy = gv_xstrdup(pn ? pn : "");
		e->entries[i].rules = gv_xcalloc(json_array_size(rules) + 1, sizeof(char *));
		json_array_foreach(rules, j, rn) if (json_is_string(rn)) e->entries[i]
		    .rules[e->entries[i].nrules++] = gv_xstrdup(json_string_value(rn));
		e->nentries++;
	}
	gv_buf_adds(&ptr, "/spec/match");
	if (match_block_compile(json_object_get(spec, "match"), &e->match, false, &ptr, err))
		goto fail;
	gv_buf_reset(&ptr);
	gv_buf_adds(&ptr, "/spec/conditions");
	if (conditions_compile(json_object_get(spec, "conditions"), &e->conditions, &ptr, err))
		goto fail;
	gv_buf_reset(&ptr);
	gv_buf_adds(&ptr, "/spec/podSecurity");
	if (pss_exclusions_compile(json_object_get(spec, "podSecurity"), false, &e->pss, &e->npss,
				   &ptr, err))
		goto fail;
	gv_buf_release(&ptr);
	return e;
fail:
	gv_buf_release(&ptr);
	engine_exception_free(e);
	return NULL;
}

/* ---- policy sets ---- */

struct engine_policyset *engine_policyset_new(struct engine_policy *const *policies, size_t n,
					      struct engine_exception **exceptions, size_t nexc)
{
	struct engine_policyset *s = gv_xcalloc(1, sizeof(*s));

	atomic_init(&s->refs, 1);
	s->v = gv_xcalloc(n + 1, sizeof(*s->v));
	for (size_t i = 0; i < n; i++) {
		s->v[s->n++] = engine_policy_ref(policies[i]);
		s->uses_images |= policies[i]->uses_images;
	}
	s->exc = gv_xcalloc(nexc + 1, sizeof(*s->exc));
	for (size_t i = 0; i < nexc; i++)
		s->exc[s->nexc++] = exceptions[i];
	return s;
}

struct engine_policyset *engine_policyset_ref(struct engine_policyset *s)
{
	atomic_fetch_add(&s->refs, 1);
	return s;
}

void engine_policyset_unref(struct engine_policyset *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->n; i++)
		engine_policy_unref(s->v[i]);
	for (size_t i = 0; i < s->nexc; i++)
		engine_exception_free(s->exc[i]);
	free(s->v);
	free(s->exc);
	free(s);
}

size_t engine_policyset_count(const struct engine_policyset *s)
{
	return s->n;
}

const struct engine_policy *engine_policyset_get(const struct engine_policyset *s, size_t i)
{
	return i < s->n ? s->v[i] : NULL;
}
