/*
 * fuzz_cel.c - CEL parse + evaluate of an arbitrary expression, on a fixed
 * Pod-like document or on a fuzzed one.
 *
 * Input: the expression, optionally a NUL and a JSON document bound as
 * `object` (the fixed document when absent or not JSON). Each result is
 * printed as JSON and as CEL text; the CEL text must evaluate back to an
 * identical value (when it parses: a deep document can pass the depth limit).
 * Compiled with the type check, a value has the deduced type, and an
 * evaluation that ends without error costs at least the estimated minimum.
 * Seeds: the expressions of the cel-spec conformance files and a few policy
 * expressions (build/fuzz/seeds). Dictionary: engine/fuzz/cel.dict (tokens
 * and the function names).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/fuzz/fuzz.h"
#include "engine/cel/cel.h"

#include "common/banned.h"

/* Well under Kubernetes' 1,000,000 so that one input stays fast. */
#define CEL_FUZZ_COST 100000

static const char DOC[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"web\",\"app.kubernetes.io/name\":\"web\"},"
    "\"annotations\":{\"t\":\"2024-02-29T12:00:00Z\",\"d\":\"1h30m\"}},\"spec\":{\"replicas\":3,"
    "\"ratio\":0.25,\"big\":9007199254740993,\"neg\":-7,\"hostNetwork\":false,\"containers\":[{"
    "\"name\":\"c\",\"image\":\"nginx:1.25\",\"securityContext\":{\"privileged\":false,"
    "\"capabilities\":{\"add\":[\"NET_ADMIN\"]}},\"ports\":[{\"containerPort\":80}]},{\"name\":"
    "\"d\",\"image\":\"ghcr.io/o/r:latest\"}],\"nested\":[[1,[2,[3]]],[],null,true,\"s\",{\"k\":"
    "\"v\"}]}}";

/*
 * The type check is sound: a value computed by a program whose deduced type
 * is known has that type (or is null where null is assignable: see below).
 */
static void check_type(const struct cel_program *p, const struct cel_value *v)
{
	static const struct {
		const char *prefix;
		int kind;
	} kinds[] = {
	    {"bool", CEL_BOOL},
	    {"int", CEL_INT},
	    {"uint", CEL_UINT},
	    {"double", CEL_DOUBLE},
	    {"string", CEL_STRING},
	    {"bytes", CEL_BYTES},
	    {"null_type", CEL_NULL},
	    {"list(", CEL_LIST},
	    {"map(", CEL_MAP},
	    {"google.protobuf.Timestamp", CEL_TIMESTAMP},
	    {"google.protobuf.Duration", CEL_DURATION},
	    {"optional_type(", CEL_OPTIONAL},
	    {"type(", CEL_TYPE},
	};
	const char *t = cel_program_type(p);
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].prefix);

		if (strncmp(t, kinds[i].prefix, n) != 0 ||
		    (kinds[i].prefix[n - 1] != '(' && t[n] != 0))
			continue;
		/*
		 * null is assignable to timestamps, durations and optionals (check.c,
		 * as cel-go): [optional.of(1), null][1] is typed optional_type(int)
		 */
		if (v->kind == CEL_NULL &&
		    (kinds[i].kind == CEL_TIMESTAMP || kinds[i].kind == CEL_DURATION ||
		     kinds[i].kind == CEL_OPTIONAL))
			continue;
		if (v->kind != kinds[i].kind) {
			fprintf(stderr, "deduced type %s, value of kind %d: %s\n", t, v->kind,
				cel_program_source(p));
			abort();
		}
	}
}

static void round_trip(const struct cel_value *v)
{
	struct gv_buf b = {0};
	struct cel_program *p;

	cel_value_format(v, &b);
	p = cel_compile(b.data, b.len, 0, NULL);
	if (p) {
		struct cel_eval *ev = cel_eval_new(0);
		struct cel_value back;

		cel_eval_run(ev, p, &back);
		if (back.kind != CEL_ERROR && !cel_value_identical(v, &back)) {
			fprintf(stderr, "CEL text does not evaluate back to the value: %s\n",
				gv_buf_str(&b));
			abort();
		}
		cel_eval_free(ev);
		cel_program_free(p);
	}
	gv_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *fixed;
	const char *a, *b;
	size_t alen, blen;
	json_t *doc = NULL;
	struct cel_program *p;

	fuzz_init();
	if (!fixed)
		fixed = json_loads(DOC, 0, NULL);
	fuzz_split(data, size, &a, &alen, &b, &blen);
	if (blen)
		doc = json_loadb(b, blen, JSON_DECODE_ANY, NULL);
	static const unsigned variants[] = {0, CEL_COMPILE_NO_CHECK,
					    CEL_COMPILE_NO_TYPES | CEL_COMPILE_NO_COST};

	for (size_t vi = 0; vi < sizeof(variants) / sizeof(variants[0]); vi++) {
		unsigned flags = variants[vi];
		uint64_t cmin, cmax, cost;
		struct cel_parse_error e;
		struct cel_eval *ev;
		struct cel_value v;
		json_t *j;
		struct gv_buf out = {0};

		p = cel_compile(a, alen, flags, &e);
		if (!p)
			continue;
		ev = cel_eval_new(CEL_FUZZ_COST);
		cel_bind_json(ev, "object", doc ? doc : fixed);
		cel_bind_json(ev, "oldObject", json_null());
		cel_program_cost(p, &cmin, &cmax);
		cost = cel_eval_run(ev, p, &v);
		if (flags == 0 && cost < cmin && v.kind != CEL_ERROR) {
			fprintf(stderr, "cost %llu under the estimated minimum %llu: %s\n",
				(unsigned long long)cost, (unsigned long long)cmin,
				cel_program_source(p));
			abort();
		}
		if (v.kind != CEL_ERROR) {
			if (flags == 0)
				check_type(p, &v);
			j = cel_value_to_json(&v);
			json_decref(j);
			cel_value_format(&v, &out);
			round_trip(&v);
		}
		gv_buf_release(&out);
		cel_eval_free(ev);
		cel_program_free(p);
	}
	json_decref(doc);
	return 0;
}
