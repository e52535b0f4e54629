/*
 * fuzz_message.c - what the admission handler writes from rule messages,
 * which carry request data through {{ }}: the go-yaml-style denial message
 * (admission_denial_message, admission_yaml_scalar) and the warnings budget
 * (admission_warnings_add).
 *
 * Checks: a scalar written as a mapping value reads back (libyaml, through
 * gv_yaml_load) as the same string whenever it reads back as a string (the
 * Kubernetes resolution of gv_yaml_load differs from go-yaml v3 for a few
 * plain words such as "yes", so non-strings are not compared); every warning
 * is valid UTF-8, at most ADMISSION_WARNING_MAX characters, and together
 * within ADMISSION_WARNINGS_TOTAL. One known go-yaml quirk is skipped
 * (check_scalar()).
 *
 * Input: NUL-separated fields: kind, namespace, name, then (policy, rule,
 * message) triples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "admission/admission_int.h"
#include "common/fuzz/fuzz.h"
#include "common/yaml.h"

#include "common/banned.h"

#define MAX_FIELDS 24

/* Characters (UTF-8 sequences) in s, or -1 when s is not valid UTF-8. */
static long utf8_chars(const char *s)
{
	json_t *j = json_string(s);
	long n = 0;

	if (!j)
		return -1;
	json_decref(j);
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

static void check_scalar(const char *s, bool key)
{
	struct gv_buf b = {0};
	struct gv_docs docs = {0};
	const json_t *v;

	if (utf8_chars(s) < 0)
		return;
	/*
	 * go-yaml v3 writes a multi-line value starting with a tab as a literal
	 * block whose first line is indentation + tab, which go-yaml and
	 * libyaml then refuse to read ("found a tab character where an
	 * indentation space is expected"). The denial message copies go-yaml
	 * byte for byte, so that one is not a gavel bug.
	 */
	if (!key && s[0] == '\t' && strchr(s, '\n'))
		return;
	if (key) {
		admission_yaml_scalar(&b, s, 2, true);
		gv_buf_adds(&b, ": v\n");
	} else {
		/* a value ends with its own line break */
		gv_buf_adds(&b, "k: ");
		admission_yaml_scalar(&b, s, 2, false);
	}
	if (gv_yaml_load(b.data, b.len, "scalar", &docs, NULL) != GV_OK || docs.n != 1) {
		fprintf(stderr, "scalar %s does not read back:\n%s\n", key ? "key" : "value",
			gv_buf_str(&b));
		abort();
	}
	v = docs.v[0].value;
	if (key) {
		void *it = json_object_iter((json_t *)v);

		if (!it || strcmp(json_object_iter_key(it), s)) {
			fprintf(stderr, "key does not read back:\n%s\n", gv_buf_str(&b));
			abort();
		}
	} else {
		v = json_object_get(v, "k");
		if (json_is_string(v) && strcmp(json_string_value(v), s)) {
			fprintf(stderr, "scalar does not read back:\n%s\n", gv_buf_str(&b));
			abort();
		}
	}
	gv_docs_release(&docs);
	gv_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *f[MAX_FIELDS];
	struct admission_msg_entry e[MAX_FIELDS / 3];
	struct admission_warnings w = {0};
	size_t nf = 0, ne = 0, total = 0;
	char *copy, *p, *msg;

	fuzz_init();
	copy = gv_xmalloc(size + 1);
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (p = copy; nf < MAX_FIELDS;) {
		f[nf++] = p;
		p += strlen(p);
		if (p == copy + size)
			break;
		p++;
	}
	while (nf < 3)
		f[nf++] = "";
	for (size_t i = 3; i + 2 < nf; i += 3) {
		e[ne].policy = f[i];
		e[ne].rule = f[i + 1];
		e[ne].message = f[i + 2];
		ne++;
	}
	msg = admission_denial_message(f[0], f[1], f[2], e, ne);
	free(msg);
	for (size_t i = 0; i < nf; i++) {
		check_scalar(f[i], false);
		check_scalar(f[i], true);
		admission_warnings_add(&w, f[i]);
	}
	for (size_t i = 0; i < w.n; i++) {
		long c = utf8_chars(w.v[i]);

		if (c < 0 || c > ADMISSION_WARNING_MAX || strpbrk(w.v[i], "\n\r\t")) {
			fprintf(stderr, "bad warning (%ld characters): %s\n", c, w.v[i]);
			abort();
		}
		total += c < 0 ? strlen(w.v[i]) : (size_t)c;
	}
	if (total > ADMISSION_WARNINGS_TOTAL) {
		fprintf(stderr, "warnings total %zu characters\n", total);
		abort();
	}
	admission_warnings_release(&w);
	free(copy);
	return 0;
}
