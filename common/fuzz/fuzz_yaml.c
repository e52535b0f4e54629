/*
 * fuzz_yaml.c - the YAML loader every policy, resource and kubeconfig goes
 * through (common/yaml.h): gv_yaml_load, the source map (gv_srcmap_find,
 * gv_err_locate), and gv_yaml_dump, whose output must load back as the same
 * value (numbers compared by value: an integral real loads as an integer).
 *
 * Input: the YAML stream. Seeds: every YAML file of the golden cases,
 * samples and conformance corpus.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/fuzz/fuzz.h"
#include "common/yaml.h"
#include "engine/jmespath.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const ptrs[] = {"", "/metadata", "/spec/rules/0/validate/pattern",
					   "/a/b~1c/0", "/0"};
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	char line[2048];

	fuzz_init();
	if (gv_yaml_load((const char *)data, size, "fuzz.yaml", &docs, &err) != GV_OK)
		gv_err_str(&err, line, sizeof(line));
	for (size_t i = 0; i < docs.n; i++) {
		struct gv_buf out = {0};
		struct gv_docs back = {0};
		struct gv_err e2 = {0};
		int l = 0, c = 0;

		for (size_t k = 0; k < GV_ARRAY_LEN(ptrs); k++) {
			gv_srcmap_find(docs.v[i].map, ptrs[k], &l, &c);
			snprintf(e2.pointer, sizeof(e2.pointer), "%s", ptrs[k]);
			gv_err_locate(&e2, "fuzz.yaml", docs.v[i].map);
		}
		gv_yaml_dump(docs.v[i].value, &out);
		gv_err_clear(&e2);
		if (gv_yaml_load(out.data, out.len, "dump.yaml", &back, &e2) != GV_OK ||
		    back.n != 1 || !jp_equal(docs.v[i].value, back.v[0].value)) {
			char *orig = json_dumps(docs.v[i].value, JSON_ENCODE_ANY | JSON_COMPACT);
			char *re = back.n
				       ? json_dumps(back.v[0].value, JSON_ENCODE_ANY | JSON_COMPACT)
				       : NULL;

			fprintf(stderr,
				"gv_yaml_dump does not load back as the same value\n"
				"value:  %s\ndump:\n%s\nloaded: %s\nerror: %s\n",
				orig, gv_buf_str(&out), re ? re : "(none)", e2.msg);
			abort();
		}
		gv_docs_release(&back);
		gv_buf_release(&out);
	}
	gv_docs_release(&docs);
	return 0;
}
