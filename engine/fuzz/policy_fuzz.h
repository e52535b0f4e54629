/*
 * policy_fuzz.h - what the two policy targets (fuzz_policy_yaml.c,
 * fuzz_policy_json.c) do with each document they load: compile it as a
 * policy (or PolicyException), read every accessor, and when it compiles
 * evaluate it against a fixed Pod in both modes, the way `gavel apply` and
 * the admission handler would.
 */
#ifndef GV_ENGINE_POLICY_FUZZ_H
#define GV_ENGINE_POLICY_FUZZ_H

#include <string.h>
#include <jansson.h>

#include "common/fuzz/fuzz.h"
#include "common/yaml.h"
#include "engine/engine.h"

/* Documents compiled per input: a multi-document stream may hold more. */
#define POLICY_FUZZ_MAX_DOCS 8

static const char POLICY_FUZZ_POD[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":"
    "\"default\",\"uid\":\"u-1\",\"labels\":{\"app\":\"web\",\"team\":\"a\"},\"annotations\":{"
    "\"a.b/c\":\"1\"}},\"spec\":{\"hostNetwork\":false,\"containers\":[{\"name\":\"c\",\"image\":"
    "\"nginx:latest\",\"resources\":{\"limits\":{\"memory\":\"64Mi\",\"cpu\":\"500m\"}},"
    "\"securityContext\":{\"privileged\":true}},{\"name\":\"d\",\"image\":"
    "\"ghcr.io/x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}]}}";

static const char POLICY_FUZZ_USER[] =
    "{\"username\":\"alice\",\"uid\":\"1\",\"groups\":[\"dev\",\"system:authenticated\"]}";

static void policy_fuzz_evaluate(struct engine_policy *const *pv, size_t n,
				 struct engine_exception **exc, size_t nexc)
{
	json_t *pod = json_loads(POLICY_FUZZ_POD, 0, NULL);
	json_t *user = json_loads(POLICY_FUZZ_USER, 0, NULL);
	json_t *labels = json_pack("{s:s}", "env", "prod");
	struct engine_policyset *set = engine_policyset_new(pv, n, exc, nexc);
	struct engine_input in = {0};

	in.object = pod;
	in.operation = "CREATE";
	in.user_info = user;
	in.namespace_labels = labels;
	for (int mode = 0; mode < 2; mode++) {
		struct engine_report rep = {0};
		struct gv_err err = {0};

		if (engine_evaluate(set, &in, mode ? ENGINE_BACKGROUND : ENGINE_ADMISSION, &rep,
				    &err) == GV_OK) {
			for (size_t i = 0; i < rep.n; i++)
				for (size_t j = 0; j < rep.v[i].nrules; j++)
					engine_decide(rep.v[i].policy, &rep.v[i].rules[j],
						      mode ? ENGINE_BACKGROUND : ENGINE_ADMISSION);
		}
		engine_report_release(&rep);
	}
	/* DELETE judges the old object. */
	{
		struct engine_report rep = {0};

		in.object = NULL;
		in.old_object = pod;
		in.operation = "DELETE";
		engine_evaluate(set, &in, ENGINE_ADMISSION, &rep, NULL);
		engine_report_release(&rep);
	}
	engine_policyset_unref(set);
	json_decref(labels);
	json_decref(user);
	json_decref(pod);
}

/*
 * Compiles docs[0..n) (borrowed; maps may be NULL) and evaluates those that
 * compile.
 */
static void policy_fuzz_docs(const json_t *const *docs, struct gv_srcmap *const *maps, size_t n)
{
	struct engine_policy *pv[POLICY_FUZZ_MAX_DOCS];
	struct engine_exception *exc[POLICY_FUZZ_MAX_DOCS];
	size_t np = 0, nexc = 0;

	if (n > POLICY_FUZZ_MAX_DOCS)
		n = POLICY_FUZZ_MAX_DOCS;
	for (size_t i = 0; i < n; i++) {
		const char *kind = json_string_value(json_object_get(docs[i], "kind"));
		struct gv_err err = {0};
		char line[2048];

		if (kind && !strcmp(kind, "PolicyException")) {
			struct engine_exception *e = engine_exception_compile(docs[i], &err);

			if (e)
				exc[nexc++] = e;
		} else {
			struct engine_policy *p = engine_policy_compile(docs[i], &err);

			if (p) {
				engine_policy_name(p);
				engine_policy_namespace(p);
				engine_policy_kind(p);
				engine_policy_background(p);
				engine_policy_admission(p);
				engine_policy_emit_warning(p);
				engine_policy_failure_policy(p);
				engine_policy_annotation(p, "policies.kyverno.io/severity");
				for (size_t r = 0; r < engine_policy_rule_count(p); r++) {
					engine_policy_rule_name(p, r);
					engine_policy_rule_background_safe(p, r);
				}
				pv[np++] = p;
			}
		}
		if (err.code) {
			gv_err_locate(&err, "fuzz.yaml", maps ? maps[i] : NULL);
			gv_err_str(&err, line, sizeof(line));
		}
	}
	policy_fuzz_evaluate(pv, np, exc, nexc);
	for (size_t i = 0; i < np; i++)
		engine_policy_unref(pv[i]);
}

#endif
