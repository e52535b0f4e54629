/*
 * Every rule gavel accepts is evaluated or says why not: this test loads
 * every ClusterPolicy and Policy under the conformance corpus
 * (../shared/conformance, or $GAVEL_CONFORMANCE) and checks that no
 * compiled rule, nor any foreach body inside one, has a body the evaluator
 * does not handle (BODY_NONE), that a body gavel does not evaluate names
 * what it is (BODY_UNSUPPORTED with its kind), and that every context entry
 * has a type. Skipped with a message when the corpus is absent.
 */
#define _XOPEN_SOURCE 700
#include "engine/tests/testutil.h"

#include <ftw.h>
#include <sys/stat.h>

#include "engine/engine_int.h"

#include "common/banned.h"

static size_t n_policies, n_rules, n_unsupported;

static void check_body(const char *file, const char *policy, const char *rule, const struct body *b)
{
	CHECK(b->kind != BODY_NONE, "%s: policy %s rule %s: a body that is never evaluated", file,
	      policy, rule);
	if (b->kind == BODY_UNSUPPORTED) {
		CHECK(b->unsupported != NULL, "%s: policy %s rule %s: unsupported body unnamed",
		      file, policy, rule);
		n_unsupported++;
	}
	for (size_t i = 0; i < b->nforeach; i++) {
		const struct foreach *f = &b->foreach[i];
		check_body(file, policy, rule, &f->body);
		for (size_t c = 0; c < f->nctx; c++)
			CHECK(f->ctx[c].kind <= CONTEXT_GLOBALREFERENCE,
			      "%s: policy %s rule %s: context entry without a type", file, policy,
			      rule);
	}
}

static void check_policy(const char *file, const struct engine_policy *p)
{
	n_policies++;
	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		n_rules++;
		for (size_t c = 0; c < r->nctx; c++)
			CHECK(r->ctx[c].kind <= CONTEXT_GLOBALREFERENCE,
			      "%s: policy %s rule %s: context entry without a type", file, p->name,
			      r->name);
		if (!r->has_validate) {
			/* mutate, generate, verifyImages: named, so they can be noted. */
			CHECK(r->unsupported != NULL,
			      "%s: policy %s rule %s: a rule without validate is not named", file,
			      p->name, r->name);
			continue;
		}
		check_body(file, p->name, r->name, &r->body);
		if (r->body.kind == BODY_UNSUPPORTED)
			CHECK(r->unsupported == r->body.unsupported,
			      "%s: policy %s rule %s: unsupported body not reported on the rule",
			      file, p->name, r->name);
	}
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t n = strlen(path);
	struct gv_docs docs;
	struct gv_err err = {0};

	(void)st;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	if (!((n > 5 && !strcmp(path + n - 5, ".yaml")) ||
	      (n > 4 && !strcmp(path + n - 4, ".yml"))))
		return 0;
	if (gv_yaml_load_file(path, &docs, &err))
		return 0; /* not ours to judge: the corpus has deliberately broken files */
	for (size_t i = 0; i < docs.n; i++) {
		const json_t *d = docs.v[i].value;
		const char *api = json_string_value(json_object_get(d, "apiVersion"));
		const char *kind = json_string_value(json_object_get(d, "kind"));
		struct engine_policy *p;
		struct gv_err e = {0};

		if (!api || !kind || strncmp(api, "kyverno.io/", 11) ||
		    (strcmp(kind, "ClusterPolicy") && strcmp(kind, "Policy")))
			continue;
		p = engine_policy_compile(d, &e);
		if (!p)
			continue; /* rejected: an explicit error, checked elsewhere */
		check_policy(path, p);
		engine_policy_unref(p);
	}
	gv_docs_release(&docs);
	return 0;
}

static void test_no_unevaluated_body(void **state)
{
	const char *dir = getenv("GAVEL_CONFORMANCE");
	struct stat st;

	(void)state;
	if (!dir)
		dir = "../shared/conformance";
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		print_message("corpus absent (%s): skipping the corpus walk\n", dir);
		skip();
	}
	nftw(dir, visit, 16, FTW_PHYS);
	print_message("%zu policies, %zu rules checked; %zu bodies gavel names as unsupported\n",
		      n_policies, n_rules, n_unsupported);
	CHECK(n_policies > 100, "only %zu policies found below %s", n_policies, dir);
	CHECK_DONE();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_unevaluated_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
