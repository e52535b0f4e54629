/*
 * fuzz_jmespath_doc.c - JMESPath parse + evaluate on a fuzzed document:
 * input is the expression, a NUL byte, and the document JSON (absent or
 * unparsable = null). Seeds: the expression/given pairs of
 * engine/testdata/jmespath.test and the compliance suite.
 */
#include "engine/fuzz/jp_fuzz.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *a, *b;
	size_t alen, blen;
	json_t *doc;
	char *src;

	fuzz_init();
	fuzz_split(data, size, &a, &alen, &b, &blen);
	src = gv_xstrndup(a, alen);
	doc = json_loadb(b, blen, JSON_DECODE_ANY, NULL);
	jp_fuzz_expr(src, doc);
	json_decref(doc);
	free(src);
	return 0;
}
