/*
 * jp.c - `gavel jp`: evaluate JMESPath (Kyverno dialect) on a document,
 * list the functions, and run the JMESPath compliance suite.
 *
 *   gavel jp query EXPRESSION [-i FILE] [--plain]
 *   gavel jp functions [--plain]
 *   gavel jp compliance [-v] FILE.json...
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/json.h"
#include "common/yaml.h"
#include "engine/jmespath.h"
#include "common/banned.h"

static void usage(FILE *f)
{
	fputs("usage: gavel jp query EXPRESSION [-i FILE] [--plain]\n"
	      "       gavel jp functions [--plain] [NAME...]   (also: function)\n"
	      "       gavel jp parse EXPRESSION...\n"
	      "       gavel jp compliance [-v] FILE.json...\n"
	      "\n"
	      "query       evaluates EXPRESSION on a JSON or YAML document (stdin by default)\n"
	      "            and prints the result as one line of JSON\n"
	      "functions   lists the functions (or the named ones) with their signatures\n"
	      "parse       checks that each expression compiles\n"
	      "compliance  runs JMESPath compliance-suite files in plain JMESPath mode\n"
	      "--plain     plain JMESPath: missing keys are null, no Kyverno functions\n",
	      f);
}

static void print_error(const struct jp_error *e)
{
	fprintf(stderr, "error: %s: %s\n", jp_error_kind_name(e->kind), e->msg);
}

/*
 * A JSON text in buf: one value and nothing else but whitespace, parsed with
 * gavel's JSON parser (gv_json_parse takes an object or an array: a string
 * is parsed inside brackets). NULL when buf is not such a text.
 */
static json_t *json_input(const char *buf, size_t len, char first)
{
	struct gv_buf w = {0};
	json_t *v, *one = NULL;

	if (first != '"')
		return gv_json_parse(buf, len, NULL);
	gv_buf_addc(&w, '[');
	gv_buf_add(&w, buf, len);
	gv_buf_addc(&w, ']');
	v = gv_json_parse(w.data, w.len, NULL);
	if (v && json_array_size(v) == 1)
		one = json_incref(json_array_get(v, 0));
	json_decref(v);
	gv_buf_release(&w);
	return one;
}

/*
 * The document of `gavel jp query` from path ("-" = stdin) in *out (a new
 * reference; null when the input has no document). JSON is read with the
 * JSON parser: input whose first byte other than JSON whitespace is '{',
 * '[' or '"' and that is one JSON value. Everything else, and such input
 * that is not JSON (a YAML flow mapping {a: 1}, a YAML "key": value), is
 * read with the YAML loader, whose error is the one reported; its first
 * document counts. The YAML loader alone would refuse valid JSON, e.g. an
 * escaped surrogate pair "\ud83d\ude00".
 */
static enum gv_code jp_input(const char *path, json_t **out, struct gv_err *err)
{
	struct gv_docs docs = {0};
	char *buf = NULL;
	size_t len = 0, i = 0;
	enum gv_code rc;

	*out = NULL;
	rc = gv_read_file(path, &buf, &len, err);
	if (rc)
		return rc;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i < len && (buf[i] == '{' || buf[i] == '[' || buf[i] == '"'))
		*out = json_input(buf, len, buf[i]);
	if (!*out) {
		rc = gv_yaml_load(buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path, &docs, err);
		if (!rc)
			*out = docs.n ? json_incref(docs.v[0].value) : json_null();
		gv_docs_release(&docs);
	}
	free(buf);
	return rc;
}

static int jp_query(int argc, char **argv)
{
	const char *expr = NULL, *input = "-";
	struct jp_options opt = {.kyverno = true};
	struct gv_err err = {0};
	struct gv_buf out = {0};
	struct jp_error e;
	struct jp_expr *x = NULL;
	json_t *doc = NULL, *res = NULL;
	int i, rc = 1;
	char ebuf[2048];

	for (i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "-i") == 0 || strcmp(argv[i], "--input") == 0) &&
		    i + 1 < argc) {
			input = argv[++i];
		} else if (strcmp(argv[i], "--plain") == 0) {
			opt.kyverno = false;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (!expr) {
			expr = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!expr) {
		usage(stderr);
		return 2;
	}
	x = jp_compile(expr, &opt, &e);
	if (!x) {
		print_error(&e);
		goto out;
	}
	if (jp_input(input, &doc, &err)) {
		fprintf(stderr, "error: %s\n", gv_err_str(&err, ebuf, sizeof(ebuf)));
		rc = 2;
		goto out;
	}
	res = jp_eval(x, doc, &e);
	if (!res) {
		print_error(&e);
		goto out;
	}
	jp_dump(res, &out, JP_DUMP_SORT_KEYS);
	printf("%s\n", gv_buf_str(&out));
	rc = 0;
out:
	gv_buf_release(&out);
	json_decref(res);
	json_decref(doc);
	jp_free(x);
	return rc;
}

static void print_function(const char *name, const char *signature, void *ud)
{
	(void)name;
	(void)ud;
	printf("%s\n", signature);
}

struct fn_filter {
	char **names; /* borrowed from argv; NULL = every function */
	int n;
	int found;
};

static void print_function_named(const char *name, const char *signature, void *ud)
{
	struct fn_filter *f = ud;

	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->names[i], name)) {
			printf("%s\n", signature);
			f->found++;
		}
}

/*
 * `functions [--plain]`, and Kyverno's `function [NAME...]`: every
 * function, or the named ones (exit 1 when a name is unknown).
 */
static int jp_functions(int argc, char **argv)
{
	bool kyverno = true;
	struct fn_filter f = {.names = gv_xcalloc((size_t)argc, sizeof(char *))};
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--plain"))
			kyverno = false;
		else
			f.names[f.n++] = argv[i];
	}
	if (!f.n) {
		jp_list_functions(kyverno, print_function, NULL);
	} else {
		jp_list_functions(kyverno, print_function_named, &f);
		if (f.found < f.n) {
			fprintf(stderr,
				"gavel jp function: unknown function among the names given\n");
			rc = 1;
		}
	}
	free(f.names);
	return rc;
}

/*
 * Kyverno's `jp parse EXPRESSION...`: checks that each expression
 * compiles (with Kyverno's functions) and prints it back after "# ";
 * a syntax error is printed on stderr and makes the exit code 1. gavel
 * does not print go-jmespath's AST: its compiled form is not that tree.
 */
static int jp_parse(int argc, char **argv)
{
	struct jp_options opt = {.kyverno = true};
	int rc = 0;

	if (argc < 2) {
		fputs("usage: gavel jp parse EXPRESSION...\n", stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct jp_error e;
		struct jp_expr *x = jp_compile(argv[i], &opt, &e);
		printf("# %s\n", argv[i]);
		if (!x) {
			print_error(&e);
			rc = 1;
			continue;
		}
		printf("ok\n");
		jp_free(x);
	}
	return rc;
}

/* Runs one case; returns true when it passes. *got is what happened (owned text). */
static bool run_case(const char *expr, const json_t *given, const json_t *want_result,
		     const char *want_error, char **got)
{
	struct jp_options opt = {.kyverno = false};
	struct gv_buf b = {0};
	struct jp_error e;
	struct jp_expr *x;
	json_t *res = NULL;
	bool ok;

	x = jp_compile(expr, &opt, &e);
	if (x)
		res = jp_eval(x, given, &e);
	jp_free(x);
	if (!res) {
		gv_buf_addf(&b, "error: %s: %s", jp_error_kind_name(e.kind), e.msg);
		ok = want_error && strcmp(want_error, jp_error_kind_name(e.kind)) == 0;
	} else {
		jp_dump(res, &b, 0);
		ok = !want_error && jp_equal(res, want_result);
	}
	json_decref(res);
	*got = gv_buf_detach(&b);
	return ok;
}

static int jp_compliance(int argc, char **argv)
{
	unsigned long passed = 0, failed = 0;
	bool verbose = false;
	int i, rc = 0;

	for (i = 1; i < argc; i++) {
		const char *file = argv[i];
		unsigned long fp = 0, ft = 0;
		json_error_t jerr;
		json_t *suites, *suite, *c;
		size_t si, ci;

		if (strcmp(file, "-v") == 0) {
			verbose = true;
			continue;
		}
		suites = json_load_file(file, JSON_DECODE_ANY, &jerr);
		if (!suites || !json_is_array(suites)) {
			fprintf(stderr, "error: %s: %s\n", file,
				suites ? "not an array of suites" : jerr.text);
			json_decref(suites);
			rc = 2;
			continue;
		}
		json_array_foreach(suites, si, suite)
		{
			json_t *given = json_object_get(suite, "given");

			json_array_foreach(json_object_get(suite, "cases"), ci, c)
			{
				const char *expr =
				    json_string_value(json_object_get(c, "expression"));
				json_t *want = json_object_get(c, "result");
				const char *want_err =
				    json_string_value(json_object_get(c, "error"));
				char *got = NULL;
				bool ok;

				if (json_object_get(c, "bench") || !expr)
					continue;
				ft++;
				ok = run_case(expr, given, want ? want : json_null(), want_err,
					      &got);
				if (ok) {
					fp++;
				} else if (verbose) {
					struct gv_buf wb = {0};

					if (want_err)
						gv_buf_addf(&wb, "error: %s", want_err);
					else
						jp_dump(want ? want : json_null(), &wb, 0);
					printf("  FAIL %s\n    expected: %s\n    got:      %s\n",
					       expr, gv_buf_str(&wb), got);
					gv_buf_release(&wb);
				}
				free(got);
			}
		}
		json_decref(suites);
		printf("%s: %lu/%lu\n", file, fp, ft);
		passed += fp;
		failed += ft - fp;
	}
	printf("%lu passed, %lu failed\n", passed, failed);
	if (rc)
		return rc;
	return failed ? 1 : 0;
}

int cmd_jp(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "query") == 0)
		return jp_query(argc - 1, argv + 1);
	if (strcmp(argv[1], "parse") == 0)
		return jp_parse(argc - 1, argv + 1);
	if (strcmp(argv[1], "functions") == 0 || strcmp(argv[1], "function") == 0)
		return jp_functions(argc - 1, argv + 1);
	if (strcmp(argv[1], "compliance") == 0)
		return jp_compliance(argc - 1, argv + 1);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "gavel jp: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
