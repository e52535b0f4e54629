/*
 * policy_checks.c - the checks Kyverno's admission of a policy makes on
 * each rule as written (kyverno-semantics.md sections 1.8 and 7.1).
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/policy_int.h"
#include "engine/value.h"
#include "common/banned.h"

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
						policy_ptr_push(ptr, "metadata");
						policy_ptr_push(ptr, maps[m]);
						policy_ptr_push(ptr, lk);
						gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
							    "labels and annotations supports only "
							    "string values, \"use double quotes "
							    "around the non-string values\"");
						policy_ptr_pop(ptr, base);
						return GV_EINVAL;
					}
				}
			}
			policy_ptr_push(ptr, k);
			if (check_label_values(v, ptr, err))
				return GV_EINVAL;
			policy_ptr_pop(ptr, base);
		}
	} else if (json_is_array(pat)) {
		size_t i;
		json_t *v;
		json_array_foreach(pat, i, v)
		{
			policy_ptr_pushi(ptr, i);
			if (check_label_values(v, ptr, err))
				return GV_EINVAL;
			policy_ptr_pop(ptr, base);
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
					policy_ptr_push(ptr, "validate");
					policy_ptr_push(ptr, vk);
					break;
				}
			}
		} else if (strcmp(k, "mutate") && strcmp(k, "generate") &&
			   strcmp(k, "verifyImages")) {
			vars_each(v, scan_element, &es);
			if (es.bad)
				policy_ptr_push(ptr, k);
		}
		if (es.bad) {
			gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				    "variable 'element' present outside of foreach at path %s",
				    gv_buf_str(ptr));
			free(es.bad);
			policy_ptr_pop(ptr, base);
			return GV_EINVAL;
		}
	}
	return GV_OK;
}

/*
 * Kinds the built-in API serves only as subresources (Kyverno finds them
 * through discovery: Scale is deployments/scale, statefulsets/scale, ...).
 */
static bool subresource_only_kind(const char *kind)
{
	static const char *const kinds[] = {"Scale",
					    "Eviction",
					    "TokenRequest",
					    "PodAttachOptions",
					    "PodExecOptions",
					    "PodProxyOptions",
					    "PodPortForwardOptions",
					    "NodeProxyOptions",
					    "ServiceProxyOptions"};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return true;
	return false;
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
			if (!ks->sub[0] && r->has_validate && subresource_only_kind(ks->kind))
				return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
						   "background scan enabled with subresource "
						   "%s. Set spec.background=false to disable "
						   "background mode for this policy rule",
						   ks->kind);
		}
	return GV_OK;
}

/* All admission checks of one rule as written (not the autogen copies). */
enum gv_code policy_check_rule(const json_t *rj, const struct rule *r, bool background,
			       struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *validate = json_object_get(rj, "validate");
	size_t base = ptr->len;
	json_t *names = json_array();
	struct var_check vc = {.names = names, .background = background};
	enum gv_code rc = GV_OK;

	if (json_object_get(validate, "pattern")) {
		policy_ptr_push(ptr, "validate");
		policy_ptr_push(ptr, "pattern");
		rc = check_label_values(json_object_get(validate, "pattern"), ptr, err);
		policy_ptr_pop(ptr, base);
	}
	if (!rc && json_is_array(json_object_get(validate, "anyPattern"))) {
		policy_ptr_push(ptr, "validate");
		policy_ptr_push(ptr, "anyPattern");
		rc = check_label_values(json_object_get(validate, "anyPattern"), ptr, err);
		policy_ptr_pop(ptr, base);
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
