/*
 * fuzz_jmespath.c - JMESPath parse + evaluate (Kyverno dialect and plain)
 * of an arbitrary expression on a fixed document shaped like a rule's
 * context (request.object, userInfo, element, numbers, quantities, times,
 * certificates-to-be, nested lists).
 *
 * Input: the expression text (cut at the first NUL). Seeds: the
 * expressions of engine/testdata/jmespath.test, the compliance suite
 * (../shared/conformance/jmespath) and the {{ }} of the golden policies.
 * Dictionary: engine/fuzz/jmespath.dict (+ the function names, added by
 * build/fuzz/seeds).
 */
#include "engine/fuzz/jp_fuzz.h"

#include "common/banned.h"

static const char DOC[] =
    "{\"request\":{\"operation\":\"CREATE\",\"namespace\":\"default\",\"userInfo\":{\"username\":"
    "\"alice\",\"groups\":[\"dev\",\"ops\"]},\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
    "\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"labels\":{\"app\":\"web\","
    "\"tier\":\"1\"},\"annotations\":{\"a.b/c\":\"{\\\"x\\\":[1,2]}\",\"t\":"
    "\"2024-02-29T12:00:00Z\",\"d\":\"1h30m\",\"q\":\"512Mi\"}},\"spec\":{\"replicas\":3,"
    "\"ratio\":0.25,\"big\":9007199254740993,\"neg\":-7,\"containers\":[{\"name\":\"c\","
    "\"image\":\"nginx:1.25\",\"ports\":[{\"containerPort\":80},{\"containerPort\":443}],"
    "\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}},{\"name\":\"d\","
    "\"image\":\"ghcr.io/o/r:latest\",\"env\":[{\"name\":\"A\",\"value\":\"aGVsbG8=\"}]}],"
    "\"nested\":[[1,[2,[3,[4]]]],[],null,true,\"s\",{\"k\":\"v\"}]}},\"oldObject\":null},"
    "\"element\":{\"name\":\"c\",\"image\":\"nginx\"},\"elementIndex\":0,\"images\":{"
    "\"containers\":{\"c\":{\"registry\":\"docker.io\",\"name\":\"nginx\",\"tag\":\"1.25\"}}},"
    "\"empty\":{},\"list\":[\"b\",\"a\",\"c\",\"a\"],\"nums\":[3,1.5,-2,1e300,0]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *doc;
	char *src;

	fuzz_init();
	if (!doc)
		doc = json_loads(DOC, 0, NULL);
	src = fuzz_str(data, size);
	jp_fuzz_expr(src, doc);
	free(src);
	return 0;
}
