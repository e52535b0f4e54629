/*
 * fuzz_pattern.c - the validate pattern language (engine/pattern.h):
 * pattern_compile + pattern_match + pattern_message on an arbitrary
 * resource, and pattern_any when the pattern is a list (anyPattern).
 *
 * Input: pattern JSON, a NUL byte, resource JSON (absent or unparsable =
 * no resource). Seeds: validate.pattern / anyPattern of the golden cases
 * with their resource. Dictionary: engine/fuzz/pattern.dict.
 */
#include <jansson.h>

#include "common/fuzz/fuzz.h"
#include "engine/pattern.h"

#include "common/banned.h"

#define MAX_ANY 8

static void match_one(const struct pattern *p, const json_t *res)
{
	struct pattern_outcome o = {0};
	char *msg;

	pattern_match(p, res, &o);
	msg = pattern_message(&o, "rule", o.status == PATTERN_FAIL ? "custom message" : NULL);
	free(msg);
	pattern_outcome_release(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *a, *b;
	size_t alen, blen;
	json_t *pat, *res;
	struct pattern *p;

	fuzz_init();
	fuzz_split(data, size, &a, &alen, &b, &blen);
	pat = json_loadb(a, alen, JSON_DECODE_ANY, NULL);
	if (!pat)
		return 0;
	res = json_loadb(b, blen, JSON_DECODE_ANY, NULL);
	p = pattern_compile(pat, NULL);
	if (p) {
		match_one(p, res);
		match_one(p, NULL);
		pattern_free(p);
	}
	if (json_is_array(pat) && json_array_size(pat) <= MAX_ANY) {
		struct pattern *pats[MAX_ANY];
		size_t n = 0, i;
		json_t *el;

		json_array_foreach(pat, i, el)
		{
			if (!(pats[n] = pattern_compile(el, NULL)))
				break;
			n++;
		}
		if (n == json_array_size(pat)) {
			enum pattern_status st;
			char *msg = pattern_any(pats, n, res, "rule", NULL, &st);

			free(msg);
			msg = pattern_any(pats, n, res, "rule", "any message.", &st);
			free(msg);
		}
		for (i = 0; i < n; i++)
			pattern_free(pats[i]);
	}
	json_decref(res);
	json_decref(pat);
	return 0;
}
