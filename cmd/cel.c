/*
 * cel.c - `gavel cel`: evaluate CEL expressions on documents, list the
 * functions, and run conformance cases.
 *
 *   gavel cel eval EXPRESSION [-i FILE] [--var name=FILE]... [--cel-var name=EXPR]...
 *                  [--expect EXPR] [--cel] [--cost-limit N] [--no-check]
 *   gavel cel functions
 *   gavel cel conformance [-v] FILE.jsonl...
 *
 * Exit codes as `gavel jp`: 0 result printed, 1 the expression failed to
 * parse or evaluate (or differs from --expect), 2 usage or input errors.
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/yaml.h"
#include "engine/cel/cel.h"
#include "common/banned.h"

static void usage(FILE *f)
{
	fputs(
	    "usage: gavel cel eval EXPRESSION [-i FILE] [--var name=FILE]... [--cel-var "
	    "name=EXPR]...\n"
	    "                      [--expect EXPR] [--cel] [--cost-limit N] [--no-check]\n"
	    "       gavel cel functions\n"
	    "       gavel cel conformance [-v] FILE.jsonl...\n"
	    "\n"
	    "eval         evaluates EXPRESSION with the JSON or YAML document of -i (stdin\n"
	    "             when no -i and no --var is given) bound as `object`, and prints\n"
	    "             the result as one line of JSON (--cel: as CEL text)\n"
	    "--var        binds variable `name` to the document in FILE\n"
	    "--cel-var    binds variable `name` to the value of the CEL expression EXPR\n"
	    "--expect     compares the result with the value of EXPR (same types, NaN equal\n"
	    "             to NaN); exit 0 when they are identical, 1 otherwise\n"
	    "--cost-limit runtime cost budget (default 1000000, Kubernetes' limit; 0 = none)\n"
	    "functions    lists the functions of the library\n"
	    "conformance  runs cases, one JSON object per line: {\"name\", \"expr\",\n"
	    "             \"bindings\": {name: CEL text}, \"want\": CEL text | \"error\": true,\n"
	    "             \"disable_check\": true, \"type\": deduced type, \"check_only\": true}\n",
	    f);
}

static void print_parse_error(const struct cel_parse_error *e)
{
	fprintf(stderr, "error: parse: %d:%d: %s\n%s\n", e->line, e->col, e->msg, e->caret);
}

static void print_eval_error(const struct cel_program *p, const struct cel_value *v)
{
	int line, col;

	cel_program_position(p, v->v.err->pos, &line, &col);
	if (line)
		fprintf(stderr, "error: evaluation: %d:%d: %s\n", line, col, v->v.err->msg);
	else
		fprintf(stderr, "error: evaluation: %s\n", v->v.err->msg);
}

struct programs {
	struct cel_program **v;
	size_t n;
};

static void programs_free(struct programs *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		cel_program_free(ps->v[i]);
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}

/*
 * Evaluates src in ev and binds the result to name (the program stays in
 * ps, the value in ev's arena). Returns 0, or 1 after printing the error.
 */
static int bind_cel(struct cel_eval *ev, struct programs *ps, const char *name, const char *src,
		    bool quiet)
{
	struct cel_parse_error perr;
	/* quiet: a value of the cel-spec suite, written in cel-go's default environment */
	struct cel_program *p =
	    cel_compile(src, strlen(src), quiet ? CEL_COMPILE_DYN_LITERALS : 0, &perr);
	struct cel_value v;

	if (!p) {
		if (!quiet)
			print_parse_error(&perr);
		return 1;
	}
	ps->v = gv_xrealloc(ps->v, sizeof(*ps->v) * (ps->n + 1));
	ps->v[ps->n++] = p;
	cel_eval_run(ev, p, &v);
	if (v.kind == CEL_ERROR) {
		if (!quiet)
			print_eval_error(p, &v);
		return 1;
	}
	cel_bind_value(ev, name, &v);
	return 0;
}

static int cel_eval_cmd(int argc, char **argv)
{
	const char *expr = NULL, *input = NULL, *expect = NULL, *val;
	struct gv_docs *docs = NULL;
	size_t ndocs = 0, k;
	struct programs ps = {0};
	struct cel_parse_error perr;
	struct cel_program *p = NULL;
	struct cel_eval *ev = NULL;
	struct cel_value res;
	struct gv_err err = {0};
	bool as_cel = false, missing = false, any_var = false, no_check = false;
	unsigned long long limit = CEL_DEFAULT_COST_LIMIT;
	int i, rc = 2;
	char ebuf[2048];
	char **vars = NULL, **celvars = NULL;
	size_t nvars = 0, ncelvars = 0;

	for (i = 1; i < argc; i++) {
		if (cmd_take(argc, argv, &i, "--input", "-i", &val, &missing)) {
			input = val;
		} else if (cmd_take(argc, argv, &i, "--var", NULL, &val, &missing)) {
			vars = gv_xrealloc(vars, sizeof(*vars) * (nvars + 1));
			vars[nvars++] = (char *)val;
			any_var = true;
		} else if (cmd_take(argc, argv, &i, "--cel-var", NULL, &val, &missing)) {
			celvars = gv_xrealloc(celvars, sizeof(*celvars) * (ncelvars + 1));
			celvars[ncelvars++] = (char *)val;
			any_var = true;
		} else if (cmd_take(argc, argv, &i, "--expect", NULL, &val, &missing)) {
			expect = val;
		} else if (cmd_take(argc, argv, &i, "--cost-limit", NULL, &val, &missing)) {
			char *end;

			limit = strtoull(val, &end, 10);
			if (*end || !*val) {
				fprintf(stderr, "error: --cost-limit: not a number: %s\n", val);
				goto out;
			}
		} else if (missing) {
			fprintf(stderr, "error: %s needs a value\n", argv[i]);
			goto out;
		} else if (strcmp(argv[i], "--no-check") == 0) {
			no_check = true;
		} else if (strcmp(argv[i], "--cel") == 0) {
			as_cel = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			rc = 0;
			goto out;
		} else if (!expr) {
			expr = argv[i];
		} else {
			usage(stderr);
			goto out;
		}
	}
	if (!expr) {
		usage(stderr);
		goto out;
	}
	rc = 1;
	p = cel_compile(expr, strlen(expr), no_check ? CEL_COMPILE_NO_CHECK : 0, &perr);
	if (!p) {
		print_parse_error(&perr);
		goto out;
	}
	ev = cel_eval_new(limit);
	{
		/* as in a VAP: checks are built, check() is an error */
		struct cel_value az = cel_authorizer_value();

		cel_bind_value(ev, "authorizer", &az);
	}
	docs = gv_xcalloc(nvars + 1, sizeof(*docs));
	if (input || !any_var) {
		if (gv_yaml_load_file(input ? input : "-", &docs[ndocs], &err)) {
			fprintf(stderr, "error: %s\n", gv_err_str(&err, ebuf, sizeof(ebuf)));
			rc = 2;
			goto out;
		}
		cel_bind_json(ev, "object", docs[ndocs].n ? docs[ndocs].v[0].value : json_null());
		ndocs++;
	}
	for (k = 0; k < nvars; k++) {
		char *eq = strchr(vars[k], '=');

		if (!eq || eq == vars[k]) {
			fprintf(stderr, "error: --var %s: expected name=FILE\n", vars[k]);
			rc = 2;
			goto out;
		}
		*eq = 0;
		if (gv_yaml_load_file(eq + 1, &docs[ndocs], &err)) {
			fprintf(stderr, "error: %s\n", gv_err_str(&err, ebuf, sizeof(ebuf)));
			rc = 2;
			goto out;
		}
		cel_bind_json(ev, vars[k], docs[ndocs].n ? docs[ndocs].v[0].value : json_null());
		ndocs++;
	}
	for (k = 0; k < ncelvars; k++) {
		char *eq = strchr(celvars[k], '=');

		if (!eq || eq == celvars[k]) {
			fprintf(stderr, "error: --cel-var %s: expected name=EXPR\n", celvars[k]);
			rc = 2;
			goto out;
		}
		*eq = 0;
		if (bind_cel(ev, &ps, celvars[k], eq + 1, false)) {
			rc = 2;
			goto out;
		}
	}
	cel_eval_run(ev, p, &res);
	if (res.kind == CEL_ERROR) {
		print_eval_error(p, &res);
		goto out;
	}
	if (expect) {
		struct cel_value want;
		struct gv_buf a = {0}, b = {0};

		if (bind_cel(ev, &ps, " expected", expect, false)) {
			rc = 2;
			goto out;
		}
		cel_eval_run(ev, ps.v[ps.n - 1], &want);
		cel_value_format(&res, &a);
		if (cel_value_identical(&res, &want)) {
			printf("%s\n", gv_buf_str(&a));
			rc = 0;
		} else {
			cel_value_format(&want, &b);
			printf("%s\n", gv_buf_str(&a));
			fprintf(stderr, "error: differs: expected %s\n", gv_buf_str(&b));
		}
		gv_buf_release(&a);
		gv_buf_release(&b);
		goto out;
	}
	if (as_cel) {
		struct gv_buf b = {0};

		cel_value_format(&res, &b);
		printf("%s\n", gv_buf_str(&b));
		gv_buf_release(&b);
	} else {
		json_t *j = cel_value_to_json(&res);
		char *s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);

		printf("%s\n", s ? s : "null");
		free(s);
		json_decref(j);
	}
	rc = 0;
out:
	for (k = 0; k < ndocs; k++)
		gv_docs_release(&docs[k]);
	free(docs);
	free(vars);
	free(celvars);
	cel_eval_free(ev);
	programs_free(&ps);
	cel_program_free(p);
	return rc;
}

static void print_function(const char *name, void *ud)
{
	(void)ud;
	printf("%s\n", name);
}

/*
 * One conformance case; returns true when it passes. *why says what
 * happened when it did not (owned).
 */
static bool run_case(const json_t *c, char **why)
{
	const char *expr = json_string_value(json_object_get(c, "expr"));
	size_t exprlen = json_string_length(json_object_get(c, "expr"));
	const char *want = json_string_value(json_object_get(c, "want"));
	const char *want_type = json_string_value(json_object_get(c, "type"));
	bool want_err = json_is_true(json_object_get(c, "error"));
	const json_t *bindings = json_object_get(c, "bindings");
	struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	struct programs ps = {0};
	struct cel_parse_error perr;
	struct cel_program *p = NULL;
	struct cel_value res, wv;
	struct gv_buf b = {0};
	const char *name;
	json_t *val;
	bool ok = false;

	if (!expr) {
		gv_buf_adds(&b, "case without expr");
		goto out;
	}
	json_object_foreach((json_t *)bindings, name, val)
	{
		if (!json_is_string(val) || bind_cel(ev, &ps, name, json_string_value(val), true)) {
			gv_buf_addf(&b, "binding %s does not evaluate", name);
			goto out;
		}
	}
	/* cel-spec runs cel-go's default environment: mixed literals are dyn */
	p = cel_compile(expr, exprlen,
			json_is_true(json_object_get(c, "disable_check"))
			    ? CEL_COMPILE_NO_CHECK
			    : CEL_COMPILE_DYN_LITERALS,
			&perr);
	if (!p) {
		gv_buf_addf(&b, "parse error: %d:%d: %s", perr.line, perr.col, perr.msg);
		ok = want_err;
		goto out;
	}
	if (want_type && strcmp(want_type, cel_program_type(p)) != 0) {
		gv_buf_addf(&b, "type %s, expected %s", cel_program_type(p), want_type);
		goto out;
	}
	if (json_is_true(json_object_get(c, "check_only"))) {
		gv_buf_addf(&b, "type %s", cel_program_type(p));
		ok = !want_err;
		goto out;
	}
	cel_eval_run(ev, p, &res);
	if (res.kind == CEL_ERROR) {
		gv_buf_addf(&b, "error: %s", res.v.err->msg);
		ok = want_err;
		goto out;
	}
	gv_buf_adds(&b, "value: ");
	cel_value_format(&res, &b);
	if (want_err || !want)
		goto out;
	if (bind_cel(ev, &ps, " want", want, true)) {
		gv_buf_adds(&b, " (expected value does not evaluate)");
		goto out;
	}
	cel_eval_run(ev, ps.v[ps.n - 1], &wv);
	ok = cel_value_identical(&res, &wv);
out:
	programs_free(&ps);
	cel_program_free(p);
	cel_eval_free(ev);
	*why = gv_buf_detach(&b);
	return ok;
}

static int cel_conformance(int argc, char **argv)
{
	unsigned long passed = 0, total = 0;
	bool verbose = false;
	int i, rc = 0;

	for (i = 1; i < argc; i++) {
		FILE *f;
		char *line = NULL;
		size_t cap = 0;
		ssize_t len;
		unsigned long fp = 0, ft = 0;

		if (strcmp(argv[i], "-v") == 0) {
			verbose = true;
			continue;
		}
		f = fopen(argv[i], "r");
		if (!f) {
			fprintf(stderr, "error: %s: cannot open\n", argv[i]);
			rc = 2;
			continue;
		}
		while ((len = getline(&line, &cap, f)) > 0) {
			json_error_t jerr;
			json_t *c = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &jerr);
			char *why = NULL;
			bool ok;

			if (!c) {
				fprintf(stderr, "error: %s: %s\n", argv[i], jerr.text);
				rc = 2;
				ft++;
				continue;
			}
			ok = run_case(c, &why);
			ft++;
			fp += ok;
			if (verbose || !ok)
				printf("%s %s\t%s\n", ok ? "PASS" : "FAIL",
				       json_string_value(json_object_get(c, "name")), why);
			free(why);
			json_decref(c);
		}
		free(line);
		fclose(f);
		printf("%s: %lu/%lu\n", argv[i], fp, ft);
		passed += fp;
		total += ft;
	}
	printf("%lu passed, %lu failed\n", passed, total - passed);
	if (rc)
		return rc;
	return passed == total ? 0 : 1;
}

int cmd_cel(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "eval") == 0)
		return cel_eval_cmd(argc - 1, argv + 1);
	if (strcmp(argv[1], "functions") == 0) {
		cel_list_functions(print_function, NULL);
		return 0;
	}
	if (strcmp(argv[1], "conformance") == 0)
		return cel_conformance(argc - 1, argv + 1);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "gavel cel: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
