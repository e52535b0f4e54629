/*
 * policy_rule.c - compiling one rule of a policy: fields, match/exclude,
 * preconditions, the validate body, admission-only variables
 * (kyverno-semantics.md sections 1 and 7.1).
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/yaml.h"
#include "engine/policy_int.h"
#include "engine/vpolicy.h"
#include "engine/value.h"
#include "common/banned.h"

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

static const char *const rule_action_values[] = {"Audit", "Enforce", NULL};
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
	vtree_free(r->props);
	policy_overrides_release(r->overrides, r->noverrides);
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

void policy_scan_var(const char *expr, const char *raw, void *ud)
{
	struct var_scan *s = ud;
	if (!s->first_bad && admission_only_var(expr))
		s->first_bad = gv_xstrdup(raw);
}

/* Kyverno's path notation: spec/rules[0]/exclude/any[0]/clusterRoles. */
char *policy_userinfo_path(size_t rule, const char *block, const struct match_block *b)
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

/*
 * reportProperties: a map of strings whose variables are substituted at
 * evaluation, as a message (kyverno-semantics.md 8.6).
 */
static enum gv_code props_compile(const json_t *j, struct rule *r, struct gv_buf *ptr,
				  struct gv_err *err)
{
	size_t base = ptr->len;
	const char *key;
	const json_t *v;
	enum gv_code rc = GV_OK;

	if (!j || json_is_null(j))
		return GV_OK;
	policy_ptr_push(ptr, "reportProperties");
	if (!json_is_object(j)) {
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				 "reportProperties must be a map of strings");
		goto out;
	}
	json_object_foreach((json_t *)j, key, v)
	{
		if (json_is_string(v))
			continue;
		policy_ptr_push(ptr, key);
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				 "reportProperties values must be strings");
		goto out;
	}
	if (!json_object_size(j))
		goto out;
	r->props = vtree_compile(j, err);
	if (!r->props) {
		rc = GV_EINVAL;
		if (err && !err->pointer[0])
			snprintf(err->pointer, sizeof(err->pointer), "%s", gv_buf_str(ptr));
	}
out:
	policy_ptr_pop(ptr, base);
	return rc;
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
	rc = policy_check_fields(j, rule_fields, ptr, err);
	if (rc)
		return rc;
	if (!name || !*name) {
		policy_ptr_push(ptr, "name");
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "rule name is required");
		goto out;
	}
	if (strlen(name) > MAX_NAME) {
		policy_ptr_push(ptr, "name");
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
		policy_ptr_push(ptr, "match");
		rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "match resources not specified");
		goto out;
	}
	policy_ptr_push(ptr, "match");
	rc = match_block_compile(json_object_get(j, "match"), &r->match, false, ptr, err);
	policy_ptr_pop(ptr, base);
	if (rc)
		goto out;
	policy_ptr_push(ptr, "exclude");
	rc = match_block_compile(json_object_get(j, "exclude"), &r->exclude, true, ptr, err);
	policy_ptr_pop(ptr, base);
	if (rc)
		goto out;
	{
		struct var_scan ms = {0};
		vars_each(json_object_get(j, "match"), policy_scan_var, &ms);
		vars_each(json_object_get(j, "exclude"), policy_scan_var, &ms);
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
				policy_ptr_push(ptr, "match");
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
	policy_ptr_push(ptr, "context");
	rc = context_compile(json_object_get(j, "context"), &r->ctx, &r->nctx, ptr, err);
	policy_ptr_pop(ptr, base);
	if (rc)
		goto out;
	rc = props_compile(json_object_get(j, "reportProperties"), r, ptr, err);
	if (rc)
		goto out;
	policy_ptr_push(ptr, "preconditions");
	rc = conditions_compile(json_object_get(j, "preconditions"), &r->pre, ptr, err);
	policy_ptr_pop(ptr, base);
	if (rc)
		goto out;
	if (validate) {
		const json_t *msg;
		r->has_validate = true;
		policy_ptr_push(ptr, "validate");
		if (!json_is_object(validate)) {
			rc = gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
					 "validate must be an object");
			goto out;
		}
		rc = policy_check_fields(validate, validate_fields, ptr, err);
		if (rc)
			goto out;
		rc = body_compile(validate, &r->body, ptr, err);
		if (rc)
			goto out;
		if (r->body.kind == BODY_CEL) {
			struct gv_err ce = {0};
			const json_t *m = json_object_get(validate, "message");
			r->body.cel = vpol_cel_compile(json_object_get(validate, "cel"),
						       json_object_get(j, "celPreconditions"),
						       json_string_value(m), name, &ce);
			if (!r->body.cel && !strncmp(ce.msg, "gavel does not evaluate ", 24)) {
				r->body.kind = BODY_UNSUPPORTED;
				r->body.unsupported = "validate.cel with the Kyverno CEL libraries";
			} else if (!r->body.cel) {
				/* Kyverno only warns at creation; evaluation then fails. */
				r->body.cel_error = gv_xstrdup(ce.msg);
			}
		}
		/* Rule fields that change what is evaluated and that gavel does not read. */
		r->unsupported = r->body.kind == BODY_UNSUPPORTED	  ? r->body.unsupported
				 : r->body.kind == BODY_CEL		  ? NULL
				 : json_object_get(j, "celPreconditions") ? "celPreconditions"
				 : json_object_get(j, "imageExtractors")  ? "imageExtractors"
									  : NULL;
		msg = json_object_get(validate, "message");
		if (json_is_string(msg)) {
			r->message_raw = gv_xstrdup(json_string_value(msg));
			policy_ptr_push(ptr, "message");
			r->message = vtree_compile(msg, err);
			if (!r->message) {
				rc = GV_EINVAL;
				if (!err->pointer[0])
					snprintf(err->pointer, sizeof(err->pointer), "%s",
						 gv_buf_str(ptr));
				goto out;
			}
			policy_ptr_pop(ptr, base);
			policy_ptr_push(ptr, "validate");
		}
		rc = policy_check_enum(validate, "failureAction", rule_action_values, ptr, err);
		if (!rc)
			rc = policy_check_bool(validate, "allowExistingViolations", ptr, err);
		if (rc)
			goto out;
		r->has_action =
		    policy_parse_action(json_object_get(validate, "failureAction"), &r->action);
		policy_ptr_push(ptr, "failureActionOverrides");
		rc = policy_overrides_compile(json_object_get(validate, "failureActionOverrides"),
					      &r->overrides, &r->noverrides, ptr, err);
		if (rc)
			goto out;
		if (json_is_boolean(json_object_get(validate, "allowExistingViolations")))
			r->allow_existing = json_boolean_value(
			    json_object_get(validate, "allowExistingViolations"));
		policy_ptr_pop(ptr, base);
	}
	/* Background safety (section 7.1). */
	vars_each(j, policy_scan_var, &scan);
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
	policy_ptr_pop(ptr, base);
	if (rc)
		rule_release(r);
	return rc;
}
