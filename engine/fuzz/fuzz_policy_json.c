/*
 * fuzz_policy_json.c - a policy as the API server sends it (/validate-policy,
 * the snapshot's informer): JSON bytes -> jansson -> engine_policy_compile
 * -> engine_evaluate on a fixed Pod. Skips the YAML layer, so the fuzzer
 * spends its time on the compiler.
 *
 * Seeds: the policy seeds converted to JSON by build/fuzz/seeds.
 */
#include "engine/fuzz/policy_fuzz.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc;
	const json_t *v[1];

	fuzz_init();
	doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!doc)
		return 0;
	v[0] = doc;
	policy_fuzz_docs(v, NULL, 1);
	json_decref(doc);
	return 0;
}
