/*
 * events.c - Kyverno's Events of rule results (events.h).
 */
#include "view/events.h"

#include <stdlib.h>
#include <string.h>

#include "common/gv.h"
#include "common/banned.h"

void view_events_policy_ref(const struct engine_policy *p, struct kube_event_object *out)
{
	const json_t *md = json_object_get(engine_policy_doc(p), "metadata");
	const char *ns = engine_policy_namespace(p);

	out->api_version = "kyverno.io/v1";
	out->kind = engine_policy_kind(p);
	out->namespace = ns && *ns ? ns : NULL;
	out->name = engine_policy_name(p);
	out->uid = json_string_value(json_object_get(md, "uid"));
}

char *view_events_policy_message(const struct kube_event_object *resource, const char *rule,
				 enum engine_status status, bool blocked, const char *message)
{
	bool with_msg = status == ENGINE_ERROR && message && *message;
	const char *ns = resource->namespace;

	if (ns && *ns)
		return gv_xasprintf("%s %s/%s: [%s] %s%s%s%s", resource->kind, ns, resource->name,
				    rule, engine_status_name(status), blocked ? " (blocked)" : "",
				    with_msg ? "; " : "", with_msg ? message : "");
	return gv_xasprintf("%s %s: [%s] %s%s%s%s", resource->kind, resource->name, rule,
			    engine_status_name(status), blocked ? " (blocked)" : "",
			    with_msg ? "; " : "", with_msg ? message : "");
}

size_t view_events_exceptions_each(const char *message,
				   void (*fn)(void *ud, const char *ns, const char *name), void *ud)
{
	static const char *const prefixes[] = {"rule is skipped due to policy exceptions",
					       "rule is skipped due to policy exception", NULL};
	const char *p = NULL;
	size_t count = 0;

	if (!message)
		return 0;
	for (size_t i = 0; prefixes[i] && !p; i++)
		if (!strncmp(message, prefixes[i], strlen(prefixes[i])))
			p = message + strlen(prefixes[i]);
	if (!p)
		return 0;
	if (*p == ':')
		p++;
	while (*p) {
		size_t n;
		char *item, *slash;

		while (*p == ' ' || *p == ',')
			p++;
		n = strcspn(p, ", ");
		if (!n)
			break;
		item = gv_xstrndup(p, n);
		slash = strchr(item, '/');
		if (slash) {
			*slash = '\0';
			fn(ud, item, slash + 1);
		} else {
			fn(ud, "", item);
		}
		free(item);
		count++;
		p += n;
	}
	return count;
}

struct exc_ctx {
	struct kube_events *ev;
	const char *source, *rule, *res_key, *policy_key;
	const struct kube_event_object *policy;
	struct gv_buf names;
};

static char *resource_key(const struct kube_event_object *r)
{
	if (r->namespace && *r->namespace)
		return gv_xasprintf("%s/%s/%s", r->kind, r->namespace, r->name);
	return gv_xasprintf("%s/%s", r->kind, r->name);
}

static void exception_one(void *ud, const char *ns, const char *name)
{
	struct exc_ctx *c = ud;
	struct kube_event_object x = {
	    .api_version = "kyverno.io/v2",
	    .kind = "PolicyException",
	    .namespace = *ns ? ns : NULL,
	    .name = name,
	};
	char *msg = gv_xasprintf(
	    "resource %s was skipped from policy rule %s/%s pursuant to policy exception %s%s%s",
	    c->res_key, c->policy_key, c->rule, ns, *ns ? "/" : "", name);

	kube_events_emit(c->ev, &x, KUBE_EVENT_POLICY_SKIPPED, c->source, "Resource Passed", msg);
	free(msg);
	if (c->names.len)
		gv_buf_adds(&c->names, ", ");
	gv_buf_addf(&c->names, "%s%s%s", ns, *ns ? "/" : "", name);
}

void view_events_exception(struct kube_events *ev, const char *source,
			   const struct kube_event_object *policy,
			   const struct kube_event_object *resource, const char *rule,
			   const char *message)
{
	char *res_key, *policy_key, *msg;
	struct exc_ctx c = {.ev = ev, .source = source, .rule = rule, .policy = policy};

	if (!ev)
		return;
	res_key = resource_key(resource);
	/* Kyverno's "<namespace>/<name>": an empty namespace leaves the slash */
	policy_key =
	    gv_xasprintf("%s/%s", policy->namespace ? policy->namespace : "", policy->name);
	c.res_key = res_key;
	c.policy_key = policy_key;
	if (view_events_exceptions_each(message, exception_one, &c)) {
		msg = gv_xasprintf("resource %s was skipped from policy rule %s/%s pursuant to "
				   "policy exceptions %s",
				   res_key, policy_key, rule, gv_buf_str(&c.names));
		kube_events_emit(ev, policy, KUBE_EVENT_POLICY_SKIPPED, source, "Resource Passed",
				 msg);
		free(msg);
	}
	gv_buf_release(&c.names);
	free(res_key);
	free(policy_key);
}

void view_events_scan_rule(struct kube_events *ev, const struct kube_event_object *policy,
			   const struct kube_event_object *resource,
			   const struct engine_rule_result *r)
{
	char *msg;

	if (!ev)
		return;
	switch (r->status) {
	case ENGINE_SKIP:
		if (r->exception)
			view_events_exception(ev, VIEW_EVENTS_SCAN, policy, resource, r->rule,
					      r->message);
		return;
	case ENGINE_PASS:
		msg = view_events_policy_message(resource, r->rule, r->status, false, NULL);
		kube_events_emit(ev, policy, KUBE_EVENT_POLICY_APPLIED, VIEW_EVENTS_SCAN,
				 "Resource Passed", msg);
		free(msg);
		return;
	default:
		break;
	}
	msg = gv_xasprintf("policy %s/%s %s: %s", policy->name, r->rule,
			   engine_status_name(r->status), r->message ? r->message : "");
	kube_events_emit(ev, resource, KUBE_EVENT_POLICY_VIOLATION, VIEW_EVENTS_SCAN,
			 "Resource Passed", msg);
	free(msg);
	msg = view_events_policy_message(resource, r->rule, r->status, false, r->message);
	kube_events_emit(ev, policy, KUBE_EVENT_POLICY_VIOLATION, VIEW_EVENTS_SCAN,
			 "Resource Passed", msg);
	free(msg);
}
