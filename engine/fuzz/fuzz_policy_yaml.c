/*
 * fuzz_policy_yaml.c - a policy file as `gavel apply` reads it: YAML bytes
 * (any number of documents) -> gv_yaml_load -> engine_policy_compile /
 * engine_exception_compile -> engine_evaluate on a fixed Pod.
 *
 * Seeds: policy.yaml of the golden cases, the sample policies and the
 * conformance policies. Dictionary: engine/fuzz/policy.dict.
 */
#include "engine/fuzz/policy_fuzz.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gv_docs docs = {0};
	const json_t *v[POLICY_FUZZ_MAX_DOCS];
	struct gv_srcmap *maps[POLICY_FUZZ_MAX_DOCS];
	size_t n = 0;

	fuzz_init();
	gv_yaml_load((const char *)data, size, "fuzz.yaml", &docs, NULL);
	for (size_t i = 0; i < docs.n && n < POLICY_FUZZ_MAX_DOCS; i++) {
		v[n] = docs.v[i].value;
		maps[n] = docs.v[i].map;
		n++;
	}
	policy_fuzz_docs(v, maps, n);
	gv_docs_release(&docs);
	return 0;
}
