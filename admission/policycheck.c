/*
 * policycheck.c - what /validate-policy checks besides compiling the
 * policy: GlobalContextEntry checks, deprecated condition operators, and
 * Kyverno's field paths in messages.
 */
#include "admission/admission_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/banned.h"

bool admission_gctx_valid(const json_t *entry, struct gv_err *err)
{
	const json_t *spec = json_object_get(entry, "spec");
	const json_t *kr = json_object_get(spec, "kubernetesResource");
	const json_t *call = json_object_get(spec, "apiCall");
	const char *method = json_string_value(json_object_get(call, "method"));

	if (!kr && !call) {
		gv_err_setp(err, GV_EINVAL, "/spec",
			    "Required value: a kubernetesResource or an apiCall is required");
		return false;
	}
	if (kr && call) {
		gv_err_setp(err, GV_EINVAL, "/spec",
			    "Forbidden: kubernetesResource and apiCall cannot be used together");
		return false;
	}
	if (call && (!method || !strcmp(method, "GET")) &&
	    json_array_size(json_object_get(call, "data"))) {
		gv_err_setp(err, GV_EINVAL, "/spec/apiCall/data",
			    "Forbidden: data is not allowed for GET requests");
		return false;
	}
	return true;
}

/*
 * Looks at the kinds of a filter: *any set when one is served (or a
 * wildcard); the pointer of the first one not served into first (when
 * still empty).
 */
static void filter_kinds(const json_t *filter, const char *at,
			 bool (*known)(void *ud, const char *kind), void *ud, bool *any,
			 char *first, size_t cap, const char **first_kind)
{
	const json_t *kinds = json_object_get(json_object_get(filter, "resources"), "kinds"), *k;
	size_t i;

	json_array_foreach(kinds, i, k)
	{
		const char *kind = json_string_value(k);
		if (!kind)
			continue;
		if (kind[0] == '*' || known(ud, kind)) {
			*any = true;
		} else if (!*first) {
			snprintf(first, cap, "%s/resources/kinds/%zu", at, i);
			*first_kind = kind;
		}
	}
}

bool admission_policy_kinds_known(const json_t *policy, bool (*known)(void *ud, const char *kind),
				  void *ud, struct gv_err *err)
{
	static const char *const lists[] = {"any", "all"};
	const json_t *rules = json_object_get(json_object_get(policy, "spec"), "rules"), *rule;
	size_t i, j;

	json_array_foreach(rules, i, rule)
	{
		const json_t *m = json_object_get(rule, "match"), *f;
		char at[96], first[160] = "";
		const char *first_kind = NULL;
		bool any = false;
		snprintf(at, sizeof(at), "/spec/rules/%zu/match", i);
		filter_kinds(m, at, known, ud, &any, first, sizeof(first), &first_kind);
		for (size_t l = 0; l < GV_ARRAY_LEN(lists); l++) {
			json_array_foreach(json_object_get(m, lists[l]), j, f)
			{
				snprintf(at, sizeof(at), "/spec/rules/%zu/match/%s/%zu", i,
					 lists[l], j);
				filter_kinds(f, at, known, ud, &any, first, sizeof(first),
					     &first_kind);
			}
		}
		if (!any && first_kind) {
			gv_err_setp(err, GV_EINVAL, first,
				    "unable to convert GVK to GVR for kinds %s: the API server "
				    "does not serve it",
				    first_kind);
			return false;
		}
	}
	return true;
}

static void deprecations(const json_t *node, unsigned *seen, struct admission_warnings *w)
{
	static const char *const ops[] = {"In", "NotIn"};
	const char *key;
	const json_t *v;
	size_t i;

	if (json_is_array(node)) {
		json_array_foreach(node, i, v) deprecations(v, seen, w);
		return;
	}
	if (!json_is_object(node))
		return;
	if (json_object_get(node, "key") && json_is_string(json_object_get(node, "operator"))) {
		const char *op = json_string_value(json_object_get(node, "operator"));
		for (i = 0; i < GV_ARRAY_LEN(ops); i++) {
			if (strcmp(op, ops[i]) || (*seen & (1u << i)))
				continue;
			*seen |= 1u << i;
			char msg[128];
			snprintf(msg, sizeof(msg),
				 "Operator %s has been deprecated and will be removed soon.", op);
			admission_warnings_add(w, msg);
		}
	}
	json_object_foreach((json_t *)node, key, v) deprecations(v, seen, w);
}

void admission_policy_deprecations(const json_t *policy, struct admission_warnings *w)
{
	unsigned seen = 0;

	deprecations(json_object_get(json_object_get(policy, "spec"), "rules"), &seen, w);
}

void admission_field_path(struct gv_buf *out, const char *pointer)
{
	const char *p = pointer;
	int seg = 0;
	bool rules = false;

	while (*p == '/') {
		const char *s = p + 1, *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		bool index = n > 0 && strspn(s, "0123456789") == n;

		/* spec.rules[N].validate.podSecurity -> spec.rules[N].podSecurity */
		if (rules && seg == 3 && n == 8 && !strncmp(s, "validate", 8) && e &&
		    !strncmp(e, "/podSecurity", 12) && (e[12] == '/' || !e[12])) {
			p = e;
			seg++;
			continue;
		}
		if (seg == 1 && n == 5 && !strncmp(s, "rules", 5))
			rules = true;
		if (index) {
			gv_buf_addf(out, "[%.*s]", (int)n, s);
		} else {
			if (out->len && seg)
				gv_buf_addc(out, '.');
			/* ~1 and ~0 of JSON pointers */
			for (size_t k = 0; k < n; k++) {
				if (s[k] == '~' && k + 1 < n &&
				    (s[k + 1] == '0' || s[k + 1] == '1')) {
					gv_buf_addc(out, s[k + 1] == '0' ? '~' : '/');
					k++;
				} else {
					gv_buf_addc(out, s[k]);
				}
			}
		}
		seg++;
		p = e ? e : s + n;
	}
}
