/*
 * Hostile policies and hostile objects against the engine API: each case
 * must end with a functional outcome (a compile error, or a rule result,
 * usually `error` naming the bound that tripped), never with a hang, a
 * stack overflow or unbounded memory. The other policies of the same set
 * must give the same results as without the hostile ones.
 *
 * Functional outcomes are asserted, the bound that tripped named by its
 * error message. Timings and peak memory are printed ("hostile: <case>:
 * ...") for the hardening report, never compared with anything.
 *
 * Every case runs in a child process with guards: RLIMIT_CPU and, outside
 * sanitizer builds, RLIMIT_AS. The guards are generous and stop a runaway
 * case (reported as "not bounded") so that `make test` always ends. Cases
 * whose bound once did not hold (a filter multiplying regular-expression
 * backtracking, serialising and comparing values of 2^64 shared elements,
 * inserted text multiplying expressions, quadratic wildcard matching in
 * JMESPath, patterns and conditions, nested foreach loops, condition
 * operands and patterns made of millions of shared strings, messages made
 * of one large value or of many skip texts) run under tight guards,
 * BOUND_CPU_S and BOUND_AS, well above what they need (under a second, a
 * few tens of MiB) and far below what they took unbounded: there the guard
 * asserts the time and memory bound.
 */
#include "engine/tests/testutil.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"

#include "common/banned.h"

#if defined(__SANITIZE_ADDRESS__)
#define HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTILE_ASAN 1
#endif
#endif

/*
 * LeakSanitizer (part of ASan, or clang's alone): a case's child ends with
 * _exit(), so the exit-time leak check never runs there; the child asks for
 * one itself. Declared weak (<sanitizer/lsan_interface.h> not needed): NULL
 * when the runtime lacks it.
 */
#if defined(HOSTILE_ASAN)
#define HOSTILE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(leak_sanitizer)
#define HOSTILE_LSAN 1
#endif
#endif

#ifdef HOSTILE_LSAN
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));
#endif

#define GUARD_CPU_S	 240u	      /* CPU seconds a case may use before it is stopped */
#define GUARD_AS	 (3ull << 30) /* address space of a case (not under ASan) */
#define BOUND_CPU_S	 20u	      /* tight guards: the bound asserted */
#define BOUND_AS	 (1ull << 30)
#define BUDGET_EXCEEDED	 "evaluation step budget (1000000) exceeded"
#define RULE_EXCEEDED	 "rule evaluation step budget (1000000) exceeded"
#define RESULT_TOO_LARGE "result holds more than 4194304 values"
#define TEXT_TOO_LONG	 "the result is longer than 262144 bytes"
#define MANY_RULES	 10000
#define MAX_MESSAGE_SIZE (1u << 20) /* a rule message beyond this is not "bounded" */

/* ---- measuring (printed, never asserted) ---- */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Peak resident memory of this process in MiB (VmHWM), -1 when unknown. */
static double peak_mib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	double kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = strtod(line + 6, NULL);
	fclose(f);
	return kb < 0 ? -1 : kb / 1024;
}

static void report_timing(const char *what, double t0)
{
	printf("hostile: %s: %.1f ms, peak RSS %.0f MiB\n", what, (now_s() - t0) * 1e3, peak_mib());
	fflush(stdout);
}

/* ---- guarded cases ---- */

/*
 * Runs body in a child with CPU (seconds) and memory (address space bytes)
 * guards; the child's soft checks (CHECK*) decide its exit status. A child
 * stopped by a signal (SIGXCPU: CPU guard, SIGABRT: allocation refused by
 * the memory guard, SIGSEGV: stack overflow) failed to stay bounded.
 */
static void guarded_as(const char *what, void (*body)(void), unsigned cpu_s, unsigned long long as)
{
	pid_t pid;
	int st = 0;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fail_msg("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGXCPU};
		struct rlimit rl = {cpu_s, cpu_s + 5};

		/* cmocka's handlers would longjmp into the parent's test loop copy */
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], SIG_DFL);
		setrlimit(RLIMIT_CPU, &rl);
#ifndef HOSTILE_ASAN
		rl.rlim_cur = rl.rlim_max = (rlim_t)as;
		setrlimit(RLIMIT_AS, &rl);
#else
		(void)as;
#endif
		tu_failed = 0;
		body();
		fflush(stdout);
#ifdef HOSTILE_LSAN
		if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
			fprintf(stderr, "%s: LeakSanitizer found leaks (see above)\n", what);
			tu_failed = 1;
		}
#endif
		fflush(stderr);
		_exit(tu_failed ? 1 : 0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st))
		CHECK(0, "%s: stopped by signal %d (%s): not bounded", what, WTERMSIG(st),
		      strsignal(WTERMSIG(st)));
	else
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: checks failed (see above)", what);
	CHECK_DONE();
}

static void guarded(const char *what, void (*body)(void), unsigned cpu_s)
{
	guarded_as(what, body, cpu_s, GUARD_AS);
}

/* Tight guards: the case must stay within BOUND_CPU_S and BOUND_AS. */
static void bounded(const char *what, void (*body)(void))
{
	guarded_as(what, body, BOUND_CPU_S, BOUND_AS);
}

/* ---- documents ---- */

/* A rule on `kind` with failureAction Enforce; body (stolen) is the pattern or the deny. */
static json_t *rule_new(const char *name, const char *kind, const char *message, const char *what,
			json_t *body)
{
	return json_pack("{s:s, s:{s:[{s:{s:[s]}}]}, s:{s:s, s:s, s:o}}", "name", name, "match",
			 "any", "resources", "kinds", kind, "validate", "failureAction", "Enforce",
			 "message", message, what, body);
}

/* deny: {conditions: {any: [{key, operator: Equals, value}]}}; value is stolen. */
static json_t *deny_new(const char *key, json_t *value)
{
	return json_pack("{s:{s:[{s:s, s:s, s:o}]}}", "conditions", "any", "key", key, "operator",
			 "Equals", "value", value);
}

/* A ClusterPolicy with the given rules (stolen). */
static json_t *policy_new(const char *name, json_t *rules)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:b, s:o}}", "apiVersion", "kyverno.io/v1", "kind",
			 "ClusterPolicy", "metadata", "name", name, "spec", "background", 0,
			 "rules", rules);
}

/* One-rule policy on ConfigMaps. */
static json_t *policy1_new(const char *name, const char *message, const char *what, json_t *body)
{
	return policy_new(name, json_pack("[o]", rule_new(name, "ConfigMap", message, what, body)));
}

/*
 * A pattern no object of these tests satisfies, so that the rule fails and
 * its message is substituted (a deny rule whose message does not
 * substitute falls back to its condition messages: an empty text,
 * kyverno-semantics.md 5.1).
 */
static json_t *failing_pattern(void)
{
	return json_pack("{s:{s:{s:s}}}", "metadata", "labels", "absent", "?*");
}

/* Compiles doc (stolen); NULL with a failed check when it does not compile. */
static struct engine_policy *compile(json_t *doc)
{
	struct gv_err err = {0};
	struct engine_policy *p;

	CHECK(doc != NULL, "policy document could not be built");
	if (!doc)
		return NULL;
	p = engine_policy_compile(doc, &err);
	CHECK(p != NULL, "policy does not compile: %s: %s", err.pointer, err.msg);
	json_decref(doc);
	return p;
}

/* A ConfigMap in namespace default; extra (stolen, may be NULL) is merged into it. */
static json_t *configmap_new(const char *name, json_t *extra)
{
	json_t *o =
	    json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
		      "metadata", "name", name, "namespace", "default", "labels", "team", "a");

	if (extra) {
		json_object_update(o, extra);
		json_decref(extra);
	}
	return o;
}

static void evaluate(const struct engine_policyset *set, const json_t *obj,
		     struct engine_report *rep)
{
	struct engine_input in = {.object = obj, .operation = "CREATE"};
	struct gv_err err = {0};
	enum gv_code rc = engine_evaluate(set, &in, ENGINE_ADMISSION, rep, &err);

	CHECK(rc == GV_OK, "engine_evaluate: %s", err.msg);
}

static const struct engine_rule_result *find(const struct engine_report *rep, const char *policy,
					     const char *rule)
{
	for (size_t i = 0; i < rep->n; i++) {
		if (strcmp(engine_policy_name(rep->v[i].policy), policy))
			continue;
		for (size_t j = 0; j < rep->v[i].nrules; j++)
			if (!strcmp(rep->v[i].rules[j].rule, rule))
				return &rep->v[i].rules[j];
	}
	return NULL;
}

/* Evaluates one policy (stolen doc) on obj (stolen) and returns rule `rule`'s result copy. */
struct outcome {
	bool found;
	enum engine_status status;
	char *message; /* owned */
};

static struct outcome eval_one(json_t *policy_doc, const char *rule, json_t *obj)
{
	struct engine_policy *p = compile(policy_doc);
	struct outcome o = {0};
	struct engine_policyset *set;
	struct engine_report rep = {0};
	const struct engine_rule_result *r;

	if (!p) {
		json_decref(obj);
		return o;
	}
	set = engine_policyset_new(&p, 1, NULL, 0);
	engine_policy_unref(p);
	evaluate(set, obj, &rep);
	r = find(&rep, engine_policy_name(engine_policyset_get(set, 0)), rule);
	if (r) {
		o.found = true;
		o.status = r->status;
		o.message = gv_xstrdup(r->message ? r->message : "");
	}
	engine_report_release(&rep);
	engine_policyset_unref(set);
	json_decref(obj);
	return o;
}

static void outcome_release(struct outcome *o)
{
	free(o->message);
	o->message = NULL;
}

/* Shortened message for printing. */
static const char *brief(const char *s)
{
	static char b[200];

	if (!s)
		return "(none)";
	if (strlen(s) < sizeof(b))
		return s;
	memcpy(b, s, 150);
	snprintf(b + 150, sizeof(b) - 150, "... (%zu bytes)", strlen(s));
	return b;
}

/* The rule gave want_status, its message names needle (when not NULL) and stays bounded. */
static void check_outcome(const struct outcome *o, enum engine_status want_status,
			  const char *needle, int line)
{
	CHECK(o->found, "line %d: no rule result", line);
	if (!o->found)
		return;
	CHECK(o->status == want_status, "line %d: status %s, want %s (message '%s')", line,
	      engine_status_name(o->status), engine_status_name(want_status), brief(o->message));
	if (needle)
		CHECK(strstr(o->message, needle) != NULL,
		      "line %d: message '%s' does not name '%s'", line, brief(o->message),
		      brief(needle));
	CHECK(strlen(o->message) < MAX_MESSAGE_SIZE, "line %d: message of %zu bytes", line,
	      strlen(o->message));
}

#define CHECK_OUTCOME(o, want_status, needle) check_outcome(&(o), (want_status), (needle), __LINE__)

/* n copies of s. */
static char *repeat(const char *s, size_t n)
{
	struct gv_buf b = {0};

	for (size_t i = 0; i < n; i++)
		gv_buf_adds(&b, s);
	return gv_buf_detach(&b);
}

/*
 * JMESPath: a value that doubles n times, `[@,@]` (or `{a:@,b:@}` when hash).
 * Written compactly: a rule error quotes the whole expression, and the
 * reason at its end must fit in struct gv_err (1024 bytes).
 */
static char *doubling(const char *start, size_t n, bool hash)
{
	struct gv_buf b = {0};

	gv_buf_adds(&b, start);
	for (size_t i = 0; i < n; i++)
		gv_buf_adds(&b, hash ? "|{a:@,b:@}" : "|[@,@]");
	return gv_buf_detach(&b);
}

/* Evaluates "{{ expr }}" as a deny key on a plain ConfigMap. */
static struct outcome eval_expr(const char *name, const char *expr)
{
	char *key = gv_xasprintf("{{ %s }}", expr);
	struct outcome o =
	    eval_one(policy1_new(name, "hostile", "deny", deny_new(key, json_true())), name,
		     configmap_new("cm", NULL));

	free(key);
	return o;
}

/* ---- regular expressions ---- */

static void body_regex_catastrophic(void)
{
	char *a = repeat("a", 4096), *s = gv_xasprintf("%s!", a);
	static const char *const exprs[][2] = {
	    {"regex-match", "regex_match('(a+)+$', request.object.data.s)"},
	    {"regex-replace", "regex_replace_all('(a+)+$', request.object.data.s, 'x')"},
	    {"regex-dynamic", "regex_match(join('', ['(a+', ')+$']), request.object.data.s)"},
	};
	static const char *const fname[] = {"regex_match", "regex_replace_all", "regex_match"};

	for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
		double t0 = now_s();
		char *key = gv_xasprintf("{{ %s }}", exprs[i][1]);
		struct outcome o = eval_one(
		    policy1_new(exprs[i][0], "hostile", "deny", deny_new(key, json_true())),
		    exprs[i][0], configmap_new("cm", json_pack("{s:{s:s}}", "data", "s", s)));
		char *needle = gv_xasprintf("JMESPath function '%s'", fname[i]);

		report_timing(exprs[i][0], t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, needle);
		CHECK_OUTCOME(o, ENGINE_ERROR, "match limit exceeded");
		printf("hostile: %s: %s: %s\n", exprs[i][0], engine_status_name(o.status),
		       brief(o.message));
		outcome_release(&o);
		free(needle);
		free(key);
	}
	free(a);
	free(s);
}

static void test_regex_catastrophic(void **state)
{
	(void)state;
	guarded("regex_catastrophic", body_regex_catastrophic, GUARD_CPU_S);
}

/*
 * Backtracking is charged to the step budget: a filter running a
 * near-limit expression (about 950,000 of PCRE2's 1,000,000 backtracking
 * steps) on 2,000 elements stops after a few of them instead of costing
 * 2,000 times the per-call limit (a minute and a half of CPU). One such
 * call alone stays within the budget and gives Kyverno's answer.
 */
static void body_regex_amplified(void)
{
	char *a = repeat("a", 25), *s = gv_xasprintf("%s!", a);
	json_t *items = json_array();
	double t0 = now_s();
	struct outcome o;

	for (int i = 0; i < 2000; i++)
		json_array_append_new(items, json_string(s));
	o = eval_one(
	    policy1_new("regex-amplified", "hostile", "deny",
			deny_new("{{ length(request.object.items[?regex_match('^(a|aa)+$', "
				 "@)]) }}",
				 json_integer(0))),
	    "regex-amplified", configmap_new("cm", json_pack("{s:o}", "items", items)));
	report_timing("regex-amplified (2000 x near-limit backtracking)", t0);
	CHECK_OUTCOME(o, ENGINE_ERROR, BUDGET_EXCEEDED);
	CHECK_OUTCOME(o, ENGINE_ERROR, "regex_match('^(a|aa)+$', @)");
	printf("hostile: regex-amplified: %s: %s\n", engine_status_name(o.status),
	       brief(o.message));
	outcome_release(&o);

	/* one near-limit call: no match, so the deny condition is false */
	t0 = now_s();
	o = eval_one(policy1_new("regex-once", "hostile", "deny",
				 deny_new("{{ regex_match('^(a|aa)+$', request.object.data.s) }}",
					  json_true())),
		     "regex-once", configmap_new("cm", json_pack("{s:{s:s}}", "data", "s", s)));
	report_timing("regex-once (one near-limit call)", t0);
	CHECK_OUTCOME(o, ENGINE_PASS, NULL);
	outcome_release(&o);
	free(a);
	free(s);
}

static void test_regex_amplified(void **state)
{
	(void)state;
	bounded("regex_amplified", body_regex_amplified);
}

/* ---- JMESPath size explosion ---- */

static void body_jmespath_explosion(void)
{
	/* 2^64 leaves if anything walked them; values are shared, so building is cheap. */
	char *list = doubling("`1`", 64, false), *hash = doubling("`1`", 48, true);
	char *flat = repeat("|[]", 63), *stars = repeat(".*", 47);
	char *joins = repeat("|[join('',@),join('',@)]", 30);
	struct {
		const char *name;
		char *expr;
	} cases[] = {
	    {"explode-flatten", gv_xasprintf("%s%s|length(@)", list, flat)},
	    {"explode-projection", gv_xasprintf("(%s)|@%s|length(@)", hash, stars)},
	    {"explode-sort", gv_xasprintf("%s%s|sort(@)|length(@)", list, flat)},
	    {"explode-join", gv_xasprintf("`\"ab\"`|[@,@]%s|join('',@)|length(@)", joins)},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double t0 = now_s();
		struct outcome o = eval_expr(cases[i].name, cases[i].expr);

		report_timing(cases[i].name, t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, BUDGET_EXCEEDED);
		printf("hostile: %s: %s: %s\n", cases[i].name, engine_status_name(o.status),
		       brief(o.message));
		outcome_release(&o);
		free(cases[i].expr);
	}
	free(list);
	free(hash);
	free(flat);
	free(stars);
	free(joins);
}

static void test_jmespath_explosion(void **state)
{
	(void)state;
	guarded("jmespath_explosion", body_jmespath_explosion, GUARD_CPU_S);
}

/*
 * Values share their parts, so `[@,@]` repeated 64 times holds 2^64
 * logical elements after 64 steps. Everything that walks a value charges
 * the step budget as it goes (to_string, ==, contains, label_match), a
 * message inserts at most MAX_SUBST_BYTES of text, and no evaluation hands
 * the engine a result holding more than 4,194,304 values, so that deny
 * conditions, patterns and messages never walk one.
 */
static void body_jmespath_explosion_unbounded(void)
{
	/* 2^40 is as unbounded as 2^64, and two of them fit in an error message */
	char *list = doubling("`1`", 64, false), *hash = doubling("`1`", 40, true);
	char *mid = doubling("`1`", 20, false);
	struct {
		const char *name;
		char *expr;
		const char *needle;
	} cases[] = {
	    {"explode-to-string", gv_xasprintf("%s | to_string(@) | length(@)", list),
	     BUDGET_EXCEEDED},
	    {"explode-equality", gv_xasprintf("[(%s), (%s)] | [0] == [1]", list, list),
	     BUDGET_EXCEEDED},
	    {"explode-contains", gv_xasprintf("contains([(%s)], (%s))", list, list),
	     BUDGET_EXCEEDED},
	    {"explode-label-match", gv_xasprintf("label_match((%s), (%s))", hash, hash),
	     BUDGET_EXCEEDED},
	    {"explode-result", gv_xstrdup(list), RESULT_TOO_LARGE},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double t0 = now_s();
		struct outcome o = eval_expr(cases[i].name, cases[i].expr);

		report_timing(cases[i].name, t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, cases[i].needle);
		printf("hostile: %s: %s: %s\n", cases[i].name, engine_status_name(o.status),
		       brief(o.message));
		outcome_release(&o);
		free(cases[i].expr);
	}
	/* the message of a failing rule: the value is refused, or its text cut */
	{
		static const char *const names[] = {"explode-message", "explode-message-text"};
		const char *exprs[] = {list, mid};
		const char *needles[] = {RESULT_TOO_LARGE, TEXT_TOO_LONG};

		for (size_t i = 0; i < 2; i++) {
			double t0 = now_s();
			char *msg = gv_xasprintf("value: {{ %s }}", exprs[i]);
			struct outcome o =
			    eval_one(policy1_new(names[i], msg, "pattern", failing_pattern()),
				     names[i], configmap_new("cm", NULL));

			report_timing(names[i], t0);
			CHECK_OUTCOME(o, ENGINE_FAIL, needles[i]);
			printf("hostile: %s: %s: %s\n", names[i], engine_status_name(o.status),
			       brief(o.message));
			outcome_release(&o);
			free(msg);
		}
	}
	/* a deny condition comparing two such values, a pattern holding one */
	{
		double t0 = now_s();
		char *v = gv_xasprintf("{{ %s }}", list);
		struct outcome o;

		o = eval_one(policy1_new("explode-condition", "hostile", "deny",
					 deny_new(v, json_string(v))),
			     "explode-condition", configmap_new("cm", NULL));
		report_timing("explode-condition", t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, RESULT_TOO_LARGE);
		printf("hostile: explode-condition: %s: %s\n", engine_status_name(o.status),
		       brief(o.message));
		outcome_release(&o);
		t0 = now_s();
		o = eval_one(policy1_new("explode-pattern", "hostile", "pattern",
					 json_pack("{s:s}", "data", v)),
			     "explode-pattern", configmap_new("cm", NULL));
		report_timing("explode-pattern", t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, RESULT_TOO_LARGE);
		printf("hostile: explode-pattern: %s: %s\n", engine_status_name(o.status),
		       brief(o.message));
		outcome_release(&o);
		free(v);
	}
	free(list);
	free(hash);
	free(mid);
}

static void test_jmespath_explosion_unbounded(void **state)
{
	(void)state;
	bounded("jmespath_explosion_unbounded", body_jmespath_explosion_unbounded);
}

/*
 * pattern_match() on a wildcard and a text of the object: the matcher may
 * compare (pattern length x text length) code points, 200 million here;
 * the steps left bound the comparisons.
 */
static void body_wildcard_quadratic(void)
{
	char *a = repeat("a", 2000), *p = gv_xasprintf("*%sb", a), *t = repeat("a", 100000);
	double t0 = now_s();
	struct outcome o = eval_one(
	    policy1_new(
		"wildcard-quadratic", "hostile", "deny",
		deny_new("{{ pattern_match(request.object.data.p, request.object.data.t) }}",
			 json_true())),
	    "wildcard-quadratic",
	    configmap_new("cm", json_pack("{s:{s:s, s:s}}", "data", "p", p, "t", t)));

	report_timing("wildcard-quadratic", t0);
	CHECK_OUTCOME(o, ENGINE_ERROR, BUDGET_EXCEEDED);
	outcome_release(&o);
	free(a);
	free(p);
	free(t);
}

static void test_wildcard_quadratic(void **state)
{
	(void)state;
	bounded("wildcard_quadratic", body_wildcard_quadratic);
}

/* ---- a 10,000-rule policy ---- */

static json_t *many_rules_policy(size_t n)
{
	json_t *rules = json_array();

	for (size_t i = 0; i < n; i++) {
		char name[32], label[32], msg[64];
		snprintf(name, sizeof(name), "r%zu", i);
		snprintf(label, sizeof(label), "l%zu", i);
		snprintf(msg, sizeof(msg), "rule %zu: {{ request.object.metadata.name }}", i);
		json_array_append_new(
		    rules, rule_new(name, "ConfigMap", msg, "pattern",
				    json_pack("{s:{s:{s:s}}}", "metadata", "labels", label, "?*")));
	}
	return policy_new("many-rules", rules);
}

static void body_many_rules(void)
{
	json_t *doc = many_rules_policy(MANY_RULES), *labels = json_object();
	double t0 = now_s();
	struct engine_policy *p = compile(doc);
	struct engine_policyset *set;
	struct engine_report rep = {0};
	size_t pass = 0, fail = 0, other = 0;

	report_timing("many-rules: compile 10,000 rules", t0);
	if (!p) {
		json_decref(labels);
		return;
	}
	CHECK_INT(engine_policy_rule_count(p), MANY_RULES);
	set = engine_policyset_new(&p, 1, NULL, 0);
	engine_policy_unref(p);
	for (size_t i = 0; i < MANY_RULES; i += 2) { /* every even rule passes */
		char label[32];
		snprintf(label, sizeof(label), "l%zu", i);
		json_object_set_new(labels, label, json_string("x"));
	}
	{
		json_t *cm = configmap_new("many", json_pack("{s:{s:s, s:s, s:o}}", "metadata",
							     "name", "many", "namespace", "default",
							     "labels", labels));
		t0 = now_s();
		evaluate(set, cm, &rep);
		report_timing("many-rules: evaluate 10,000 rules", t0);
		json_decref(cm);
	}
	for (size_t i = 0; i < rep.n; i++)
		for (size_t j = 0; j < rep.v[i].nrules; j++) {
			enum engine_status st = rep.v[i].rules[j].status;
			pass += st == ENGINE_PASS;
			fail += st == ENGINE_FAIL;
			other += st != ENGINE_PASS && st != ENGINE_FAIL;
		}
	CHECK_INT(pass, MANY_RULES / 2);
	CHECK_INT(fail, MANY_RULES / 2);
	CHECK_INT(other, 0);
	{
		const struct engine_rule_result *r = find(&rep, "many-rules", "r9999");
		CHECK(r && r->status == ENGINE_FAIL, "r9999 fails");
		if (r)
			CHECK_PREFIX(r->message, "validation error: rule 9999: many.");
	}
	engine_report_release(&rep);
	t0 = now_s();
	engine_policyset_unref(set);
	report_timing("many-rules: free", t0);
}

static void test_many_rules(void **state)
{
	(void)state;
	guarded("many_rules", body_many_rules, GUARD_CPU_S);
}

/* ---- deep nesting ---- */

/* {a: {a: ... leaf}} with depth levels of "a" (leaf stolen). */
static json_t *nest(size_t depth, json_t *leaf)
{
	json_t *v = leaf;

	for (size_t i = 0; i < depth; i++)
		v = json_pack("{s:o}", "a", v);
	return v;
}

/* [[[ ... leaf ]]] */
static json_t *nest_array(size_t depth, json_t *leaf)
{
	json_t *v = leaf;

	for (size_t i = 0; i < depth; i++)
		v = json_pack("[o]", v);
	return v;
}

static void body_deep_pattern(void)
{
	struct gv_err err = {0};
	json_t *doc;
	struct engine_policy *p;
	double t0;

	/* beyond the pattern depth bound: rejected at compile time, whole */
	static const size_t too_deep[] = {300, 2048};
	for (size_t i = 0; i < sizeof(too_deep) / sizeof(too_deep[0]); i++) {
		memset(&err, 0, sizeof(err));
		doc = policy1_new("deep-pattern", "deep", "pattern",
				  json_pack("{s:o}", "data", nest(too_deep[i], json_string("v"))));
		t0 = now_s();
		p = engine_policy_compile(doc, &err);
		printf("hostile: deep-pattern %zu levels: %s\n", too_deep[i],
		       p ? "compiled" : err.msg);
		report_timing("deep-pattern compile", t0);
		CHECK(p == NULL, "a pattern %zu levels deep compiles", too_deep[i]);
		CHECK(err.code == GV_ELIMIT, "code %d, want GV_ELIMIT", (int)err.code);
		CHECK(strstr(err.msg, "pattern nesting exceeds 256 levels") != NULL, "message '%s'",
		      err.msg);
		if (p)
			engine_policy_unref(p);
		json_decref(doc);
	}
	/* deep arrays too */
	memset(&err, 0, sizeof(err));
	doc = policy1_new("deep-pattern-array", "deep", "pattern",
			  json_pack("{s:o}", "data", nest_array(1000, json_string("v"))));
	p = engine_policy_compile(doc, &err);
	CHECK(p == NULL && err.code == GV_ELIMIT, "1000 nested arrays: %s",
	      p ? "compiled" : err.msg);
	if (p)
		engine_policy_unref(p);
	json_decref(doc);

	/* within the bound: compiles and evaluates */
	{
		struct outcome o;
		t0 = now_s();
		o = eval_one(
		    policy1_new("deep-ok", "deep", "pattern",
				json_pack("{s:o}", "data", nest(250, json_string("v")))),
		    "deep-ok",
		    configmap_new("cm", json_pack("{s:o}", "data", nest(250, json_string("v")))));
		report_timing("deep-pattern 250 levels: pass", t0);
		CHECK_OUTCOME(o, ENGINE_PASS, NULL);
		outcome_release(&o);
		o = eval_one(
		    policy1_new("deep-ok", "deep", "pattern",
				json_pack("{s:o}", "data", nest(250, json_string("v")))),
		    "deep-ok",
		    configmap_new("cm", json_pack("{s:o}", "data", nest(250, json_string("w")))));
		CHECK_OUTCOME(o, ENGINE_FAIL, "/a/a/a/");
		outcome_release(&o);
	}
}

/* The deepest nesting any gavel loader lets through is 2048 (jansson's parser). */
#define DEEP_RESOURCE 2048
/* Kubernetes' own JSON decoder stops at 10,000; reachable only through the API. */
#define DEEPER_RESOURCE 10000

static void body_deep_resource(void)
{
	static const size_t depths[] = {DEEP_RESOURCE, DEEPER_RESOURCE};

	for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
		json_t *rules = json_array();
		struct engine_policy *p;
		struct engine_policyset *set;
		struct engine_report rep = {0};
		json_t *cm;
		double t0 = now_s();
		static const char *const names[] = {"team-label", "dump", "equal",
						    "message",	  "walk", "deep-pattern"};

		json_array_append_new(rules, rule_new("team-label", "ConfigMap", "team", "pattern",
						      json_pack("{s:{s:{s:s}}}", "metadata",
								"labels", "team", "?*")));
		json_array_append_new(
		    rules,
		    rule_new("dump", "ConfigMap", "dump", "deny",
			     deny_new("{{ length(to_string(request.object)) }}", json_integer(0))));
		json_array_append_new(
		    rules, rule_new("equal", "ConfigMap", "equal", "deny",
				    deny_new("{{ request.object.data == request.object.data }}",
					     json_false())));
		json_array_append_new(rules, rule_new("message", "ConfigMap",
						      "data: {{ request.object.data }}", "deny",
						      json_object()));
		json_array_append_new(
		    rules,
		    rule_new("walk", "ConfigMap", "walk", "deny",
			     deny_new("{{ length(request.object.data.a.a.a.a.a.a.a.a.a.a.a.a) }}",
				      json_integer(0))));
		json_array_append_new(
		    rules, rule_new("deep-pattern", "ConfigMap", "deep", "pattern",
				    json_pack("{s:o}", "data", nest(200, json_string("*")))));
		p = compile(policy_new("deep-resource", rules));
		if (!p)
			return;
		set = engine_policyset_new(&p, 1, NULL, 0);
		engine_policy_unref(p);
		cm = configmap_new("cm",
				   json_pack("{s:o}", "data", nest(depths[d], json_integer(1))));
		evaluate(set, cm, &rep);
		printf("hostile: deep-resource %zu levels:\n", depths[d]);
		report_timing("deep-resource evaluate", t0);
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			const struct engine_rule_result *r = find(&rep, "deep-resource", names[i]);
			CHECK(r != NULL, "%zu levels: no result for %s", depths[d], names[i]);
			if (!r)
				continue;
			printf("hostile:   %s: %s: %s\n", names[i], engine_status_name(r->status),
			       brief(r->message));
			CHECK(strlen(r->message) < MAX_MESSAGE_SIZE, "%s: message of %zu bytes",
			      names[i], strlen(r->message));
		}
		/* the ordinary rule is not disturbed by the depth of another field */
		{
			const struct engine_rule_result *r =
			    find(&rep, "deep-resource", "team-label");
			CHECK(r && r->status == ENGINE_PASS, "team-label passes at %zu levels",
			      depths[d]);
			r = find(&rep, "deep-resource", "deep-pattern");
			CHECK(r && r->status == ENGINE_PASS,
			      "a 200-level pattern of wildcards passes at %zu levels", depths[d]);
		}
		engine_report_release(&rep);
		engine_policyset_unref(set);
		json_decref(cm);
	}
}

static void test_deep_pattern(void **state)
{
	(void)state;
	guarded("deep_pattern", body_deep_pattern, GUARD_CPU_S);
}

static void test_deep_resource(void **state)
{
	(void)state;
	guarded("deep_resource", body_deep_resource, GUARD_CPU_S);
}

/* ---- {{ }} chains ---- */

static void body_template_chains(void)
{
	double t0;
	struct outcome o;

	/* 10,000 nested braces around one variable: compiles or is refused, and ends */
	{
		char *open = repeat("{{ ", 10000), *close = repeat(" }}", 10000);
		char *msg = gv_xasprintf("%srequest.object.metadata.name%s", open, close);
		json_t *doc = policy1_new("nested-braces", msg, "pattern", failing_pattern());
		struct gv_err err = {0};
		struct engine_policy *p;

		t0 = now_s();
		p = engine_policy_compile(doc, &err);
		report_timing("nested-braces: compile 10,000 levels", t0);
		printf("hostile: nested-braces: %s\n", p ? "compiled" : brief(err.msg));
		if (p) {
			struct engine_policyset *set = engine_policyset_new(&p, 1, NULL, 0);
			struct engine_report rep = {0};
			json_t *cm = configmap_new("cm", NULL);
			const struct engine_rule_result *r;

			engine_policy_unref(p);
			t0 = now_s();
			evaluate(set, cm, &rep);
			report_timing("nested-braces: evaluate", t0);
			r = find(&rep, "nested-braces", "nested-braces");
			CHECK(r != NULL, "nested-braces: no result");
			if (r) {
				printf("hostile: nested-braces: %s: %s\n",
				       engine_status_name(r->status), brief(r->message));
				CHECK(r->status == ENGINE_FAIL || r->status == ENGINE_ERROR,
				      "nested-braces: status %s", engine_status_name(r->status));
				CHECK(strlen(r->message) < MAX_MESSAGE_SIZE, "message of %zu bytes",
				      strlen(r->message));
			}
			engine_report_release(&rep);
			engine_policyset_unref(set);
			json_decref(cm);
		}
		json_decref(doc);
		free(open);
		free(close);
		free(msg);
	}

	/* 10,000 variables in one message */
	{
		char *msg = repeat("{{ request.object.metadata.name }}", 10000);
		char *want = repeat("cm", 10000);
		t0 = now_s();
		o = eval_one(policy1_new("many-vars", msg, "deny", json_object()), "many-vars",
			     configmap_new("cm", NULL));
		report_timing("many-vars: 10,000 variables in a message", t0);
		CHECK_OUTCOME(o, ENGINE_FAIL, want);
		outcome_release(&o);
		free(msg);
		free(want);
	}

	/*
	 * Object text inserted into a message is scanned again (Kyverno's
	 * behaviour, kyverno-semantics.md 6.2): an annotation that inserts
	 * itself never settles and is cut after 10 passes.
	 */
	t0 = now_s();
	o = eval_one(policy1_new("reinsert", "cm: {{ request.object.metadata.annotations.a }}",
				 "pattern", failing_pattern()),
		     "reinsert",
		     configmap_new("cm", json_pack("{s:{s:s, s:s, s:{s:s}}}", "metadata", "name",
						   "cm", "namespace", "default", "annotations", "a",
						   "{{ request.object.metadata.annotations.a }}")));
	report_timing("reinsert: self-inserting annotation", t0);
	CHECK_OUTCOME(o, ENGINE_FAIL, "substitution did not finish in 10 passes");
	outcome_release(&o);

	/* a shallow variable {{- }} inserts the text literally */
	o = eval_one(policy1_new("shallow", "cm: {{- request.object.metadata.annotations.a }}",
				 "pattern", failing_pattern()),
		     "shallow",
		     configmap_new("cm", json_pack("{s:{s:s, s:s, s:{s:s}}}", "metadata", "name",
						   "cm", "namespace", "default", "annotations", "a",
						   "{{ request.object.metadata.annotations.a }}")));
	CHECK_OUTCOME(o, ENGINE_FAIL, "cm: {{ request.object.metadata.annotations.a }}");
	outcome_release(&o);
}

static void test_template_chains(void **state)
{
	(void)state;
	guarded("template_chains", body_template_chains, GUARD_CPU_S);
}

/*
 * Inserted text is re-scanned up to 10 times (kyverno-semantics.md 6.2),
 * so object text can multiply expressions: an annotation holding k copies
 * of a variable that inserts the annotation again gives k^n variables
 * after n passes, and an annotation can hold many near-budget expressions.
 * One substitution is bounded as a whole: at most 1024 variables and
 * 262,144 bytes of text per pass, and one step budget shared by all its
 * variables, the object's included; the rule's budget, of the same size,
 * is charged as well and runs out first once the rule used a step before.
 */
static void body_template_amplified(void)
{
	static const char self[] = "{{ request.object.metadata.annotations.a }}";
	double t0;
	struct outcome o;
	char *ann = repeat(self, 8);

	t0 = now_s();
	o = eval_one(
	    policy1_new("reinsert-many", "cm: {{ request.object.metadata.annotations.a }}",
			"pattern", failing_pattern()),
	    "reinsert-many",
	    configmap_new("cm", json_pack("{s:{s:s, s:s, s:{s:s}}}", "metadata", "name", "cm",
					  "namespace", "default", "annotations", "a", ann)));
	report_timing("reinsert-many: 8 self-inserting copies", t0);
	CHECK_OUTCOME(o, ENGINE_FAIL, "more than 1024 variables");
	outcome_release(&o);
	free(ann);

	{
		/* ~130,000 steps each: within one budget, but 1,000 or 5,000 of them */
		static const size_t copies[] = {1000, 5000};
		static const char *const needles[] = {RULE_EXCEEDED, TEXT_TOO_LONG};
		char *l = doubling("`1`", 17, false), *f = repeat(" | []", 16);
		char *v = gv_xasprintf("{{ %s %s | length(@) }}", l, f);

		for (size_t i = 0; i < 2; i++) {
			char *a = repeat(v, copies[i]);
			t0 = now_s();
			o = eval_one(
			    policy1_new("expensive-vars",
					"cm: {{ request.object.metadata.annotations.a }}",
					"pattern", failing_pattern()),
			    "expensive-vars",
			    configmap_new("cm", json_pack("{s:{s:s, s:s, s:{s:s}}}", "metadata",
							  "name", "cm", "namespace", "default",
							  "annotations", "a", a)));
			printf("hostile: expensive-vars: %zu object-supplied expressions\n",
			       copies[i]);
			report_timing("expensive-vars", t0);
			CHECK_OUTCOME(o, ENGINE_FAIL, needles[i]);
			printf("hostile: expensive-vars: %s: %s\n", engine_status_name(o.status),
			       brief(o.message));
			outcome_release(&o);
			free(a);
		}
		free(l);
		free(f);
		free(v);
	}
}

static void test_template_amplified(void **state)
{
	(void)state;
	bounded("template_amplified", body_template_amplified);
}

/* ---- one budget per rule evaluation ---- */

/* deny: {conditions: {any: [{key, operator, value}]}}; value is stolen. */
static json_t *deny_op_new(const char *key, const char *op, json_t *value)
{
	return json_pack("{s:{s:[{s:s, s:s, s:o}]}}", "conditions", "any", "key", key, "operator",
			 op, "value", value);
}

/* The ordinary rule set beside each hostile one: ConfigMaps need a team label. */
static json_t *team_rule_new(void)
{
	return rule_new("team-label", "ConfigMap", "team", "pattern",
			json_pack("{s:{s:{s:s}}}", "metadata", "labels", "team", "?*"));
}

/*
 * Evaluates a policy holding the hostile rule (stolen, named `name`) and
 * team-label on obj (stolen): returns the hostile rule's outcome and checks
 * that team-label, evaluated after it with a budget of its own, passes.
 */
static struct outcome eval_beside(const char *name, json_t *rule, json_t *obj)
{
	struct engine_policy *p =
	    compile(policy_new(name, json_pack("[o,o]", rule, team_rule_new())));
	struct outcome o = {0};
	struct engine_policyset *set;
	struct engine_report rep = {0};
	const struct engine_rule_result *r;

	if (!p) {
		json_decref(obj);
		return o;
	}
	set = engine_policyset_new(&p, 1, NULL, 0);
	engine_policy_unref(p);
	evaluate(set, obj, &rep);
	r = find(&rep, name, name);
	if (r) {
		o.found = true;
		o.status = r->status;
		o.message = gv_xstrdup(r->message ? r->message : "");
	}
	r = find(&rep, name, "team-label");
	CHECK(r && r->status == ENGINE_PASS, "%s: team-label %s beside it", name,
	      r ? engine_status_name(r->status) : "gave no result");
	engine_report_release(&rep);
	engine_policyset_unref(set);
	json_decref(obj);
	return o;
}

/*
 * A message that is exactly one variable giving a non-string is written as
 * JSON: 4,194,303 shared values (within JP_MAX_RESULT_VALUES) would write
 * 8 MiB; the text is bounded as an embedded variable's is.
 */
static void body_message_value(void)
{
	char *list = doubling("`1`", 21, false), *msg = gv_xasprintf("{{ %s }}", list);
	double t0 = now_s();
	struct outcome o =
	    eval_beside("message-value",
			rule_new("message-value", "ConfigMap", msg, "pattern", failing_pattern()),
			configmap_new("cm", NULL));

	report_timing("message-value: 4,194,303 values", t0);
	CHECK_OUTCOME(o, ENGINE_FAIL, TEXT_TOO_LONG);
	CHECK_OUTCOME(o, ENGINE_FAIL, "variables substitution error in rule message-value");
	printf("hostile: message-value: %s: %s\n", engine_status_name(o.status), brief(o.message));
	outcome_release(&o);

	/* a small one is written as an embedded variable would be */
	o = eval_beside("message-object",
			rule_new("message-object", "ConfigMap",
				 "{{ request.object.metadata.labels }}", "pattern",
				 failing_pattern()),
			configmap_new("cm", NULL));
	CHECK_OUTCOME(o, ENGINE_FAIL, "validation error: {\"team\":\"a\"}. rule message-object");
	outcome_release(&o);
	free(list);
	free(msg);
}

static void test_message_value(void **state)
{
	(void)state;
	bounded("message_value", body_message_value);
}

/* A foreach over `outer`, nesting one over `inner` when not NULL, denying "y" elements. */
static json_t *foreach_rule_new(const char *name, const char *outer, const char *inner)
{
	json_t *deny = deny_op_new("{{ element }}", "Equals", json_string("y"));
	json_t *fe;

	if (inner)
		fe = json_pack("[{s:s, s:[{s:s, s:o}]}]", "list", outer, "foreach", "list", inner,
			       "deny", deny);
	else
		fe = json_pack("[{s:s, s:o}]", "list", outer, "deny", deny);
	return rule_new(name, "ConfigMap", "hostile", "foreach", fe);
}

/*
 * Every element of a foreach, nested ones included, is charged to the one
 * budget of the rule evaluation: two nested loops over 100,000 elements
 * (10^10 bodies, hours) stop after about 80,000 bodies, and so does a loop
 * whose body reads a 100,000-value list each time (10^10 values walked). A
 * loop of 10,000 elements stays well within the budget.
 */
static void body_foreach_budget(void)
{
	json_t *items = json_array();
	double t0;
	struct outcome o;

	for (int i = 0; i < 100000; i++)
		json_array_append_new(items, json_string("x"));
	t0 = now_s();
	o = eval_beside(
	    "foreach-nested",
	    foreach_rule_new("foreach-nested", "request.object.items", "request.object.items"),
	    configmap_new("cm", json_pack("{s:O}", "items", items)));
	report_timing("foreach-nested: 100,000 x 100,000 elements", t0);
	CHECK_OUTCOME(o, ENGINE_ERROR, RULE_EXCEEDED);
	printf("hostile: foreach-nested: %s: %s\n", engine_status_name(o.status), brief(o.message));
	outcome_release(&o);

	/* each element reads the whole list: JMESPath's walk of a result is charged */
	{
		json_t *deny =
		    deny_op_new("{{ request.object.items }}", "Equals", json_string("y"));
		json_t *fe =
		    json_pack("[{s:s, s:o}]", "list", "request.object.items", "deny", deny);

		t0 = now_s();
		o = eval_beside(
		    "foreach-whole-list",
		    rule_new("foreach-whole-list", "ConfigMap", "hostile", "foreach", fe),
		    configmap_new("cm", json_pack("{s:O}", "items", items)));
		report_timing("foreach-whole-list: 100,000 x a 100,000-value result", t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, RULE_EXCEEDED);
		outcome_release(&o);
	}

	t0 = now_s();
	o = eval_beside("foreach-10k",
			foreach_rule_new("foreach-10k", "request.object.items[:10000]", NULL),
			configmap_new("cm", json_pack("{s:O}", "items", items)));
	report_timing("foreach-10k: 10,000 elements", t0);
	CHECK_OUTCOME(o, ENGINE_PASS, NULL);
	outcome_release(&o);
	json_decref(items);
}

static void test_foreach_budget(void **state)
{
	(void)state;
	bounded("foreach_budget", body_foreach_budget);
}

/*
 * Wildcards of patterns and conditions against object text: matching may
 * compare (pattern length x text length) code points, 8 billion here (tens
 * of seconds each); the rule's budget bounds the comparisons.
 */
static void body_wildcard_rule_budget(void)
{
	char *a = repeat("a", 4000), *wild = gv_xasprintf("*%sb", a), *t = repeat("a", 2000000);
	struct {
		const char *name;
		const char *what;
		json_t *body;
		const char *needle;
	} cases[] = {
	    {"wildcard-pattern", "pattern", json_pack("{s:{s:s}}", "data", "t", wild),
	     "rule wildcard-pattern execution error: " RULE_EXCEEDED},
	    {"wildcard-anyin", "deny",
	     deny_op_new("{{ request.object.data.t }}", "AnyIn", json_pack("[s]", wild)),
	     "failed to check deny conditions: " RULE_EXCEEDED},
	    {"wildcard-equals", "deny",
	     deny_op_new("{{ request.object.data.t }}", "Equals", json_string(wild)),
	     "failed to check deny conditions: " RULE_EXCEEDED},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double t0 = now_s();
		struct outcome o = eval_beside(
		    cases[i].name,
		    rule_new(cases[i].name, "ConfigMap", "hostile", cases[i].what, cases[i].body),
		    configmap_new("cm", json_pack("{s:{s:s}}", "data", "t", t)));

		report_timing(cases[i].name, t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, cases[i].needle);
		printf("hostile: %s: %s: %s\n", cases[i].name, engine_status_name(o.status),
		       brief(o.message));
		outcome_release(&o);
	}
	free(a);
	free(wild);
	free(t);
}

static void test_wildcard_rule_budget(void **state)
{
	(void)state;
	bounded("wildcard_rule_budget", body_wildcard_rule_budget);
}

/*
 * Operands within JP_MAX_RESULT_VALUES that share their parts: a 100,000
 * byte string of the object listed 2,097,152 times costs 21 steps to build
 * and 200 GiB to format, compare or copy into a pattern. Conditions and
 * substituted patterns charge that work to the rule's budget.
 */
static void body_shared_operands(void)
{
	char *s = repeat("x", 100000), *list = doubling("request.object.data.s", 21, false);
	char *v = gv_xasprintf("{{ %s }}", list);
	struct {
		const char *name;
		const char *what;
		json_t *body;
		const char *needle;
	} cases[] = {
	    {"shared-anyin", "deny", deny_op_new(v, "AnyIn", json_pack("[s]", "y")),
	     "failed to check deny conditions: " RULE_EXCEEDED},
	    {"shared-equals", "deny", deny_op_new(v, "Equals", json_string(v)),
	     "failed to check deny conditions: " RULE_EXCEEDED},
	    {"shared-pattern", "pattern", json_pack("{s:{s:s}}", "data", "s", v), RULE_EXCEEDED},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double t0 = now_s();
		struct outcome o = eval_beside(
		    cases[i].name,
		    rule_new(cases[i].name, "ConfigMap", "hostile", cases[i].what, cases[i].body),
		    configmap_new("cm", json_pack("{s:{s:s}}", "data", "s", s)));

		report_timing(cases[i].name, t0);
		CHECK_OUTCOME(o, ENGINE_ERROR, cases[i].needle);
		printf("hostile: %s: %s: %s\n", cases[i].name, engine_status_name(o.status),
		       brief(o.message));
		outcome_release(&o);
	}
	free(s);
	free(list);
	free(v);
}

static void test_shared_operands(void **state)
{
	(void)state;
	bounded("shared_operands", body_shared_operands);
}

/*
 * A pattern whose conditional anchor skips each of 200,000 list elements:
 * the skip texts of the elements are joined into the rule's message, cut
 * at 262,144 bytes instead of 18 MiB.
 */
static void body_skip_texts(void)
{
	json_t *items = json_array();
	double t0;
	struct outcome o;

	for (int i = 0; i < 200000; i++)
		json_array_append_new(items, json_pack("{s:s}", "a", "x"));
	t0 = now_s();
	o = eval_beside("skip-texts",
			rule_new("skip-texts", "ConfigMap", "hostile", "pattern",
				 json_pack("{s:[{s:s}]}", "items", "(b)", "y")),
			configmap_new("cm", json_pack("{s:o}", "items", items)));
	report_timing("skip-texts: 200,000 skipped elements", t0);
	CHECK_OUTCOME(o, ENGINE_SKIP, "conditional anchor mismatch");
	CHECK(strlen(o.message) <= 262144, "message of %zu bytes", strlen(o.message));
	printf("hostile: skip-texts: %s: %s\n", engine_status_name(o.status), brief(o.message));
	outcome_release(&o);
}

static void test_skip_texts(void **state)
{
	(void)state;
	bounded("skip_texts", body_skip_texts);
}

/* ---- the other policies of the set are unaffected ---- */

static const char normal_team[] = "apiVersion: kyverno.io/v1\n"
				  "kind: ClusterPolicy\n"
				  "metadata: {name: require-team-label}\n"
				  "spec:\n"
				  "  background: true\n"
				  "  rules:\n"
				  "  - name: check-team\n"
				  "    match: {any: [{resources: {kinds: [Pod, ConfigMap]}}]}\n"
				  "    validate:\n"
				  "      failureAction: Enforce\n"
				  "      message: label team is required\n"
				  "      pattern: {metadata: {labels: {team: '?*'}}}\n";

static const char normal_privileged[] = "apiVersion: kyverno.io/v1\n"
					"kind: ClusterPolicy\n"
					"metadata: {name: disallow-privileged}\n"
					"spec:\n"
					"  background: true\n"
					"  rules:\n"
					"  - name: no-privileged-containers\n"
					"    match: {any: [{resources: {kinds: [Pod]}}]}\n"
					"    validate:\n"
					"      failureAction: Enforce\n"
					"      message: privileged containers are not allowed\n"
					"      pattern:\n"
					"        spec:\n"
					"          containers:\n"
					"          - =(securityContext):\n"
					"              =(privileged): 'false'\n";

static const char normal_latest[] =
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: disallow-latest-tag}\n"
    "spec:\n"
    "  background: true\n"
    "  rules:\n"
    "  - name: no-latest\n"
    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
    "    validate:\n"
    "      failureAction: Audit\n"
    "      message: 'the :latest tag is not allowed: {{ request.object.metadata.name }}'\n"
    "      deny:\n"
    "        conditions:\n"
    "          any:\n"
    "          - key: '{{ request.object.spec.containers[].image }}'\n"
    "            operator: AnyIn\n"
    "            value: ['*:latest']\n";

static struct engine_policy *compile_yaml(const char *yaml)
{
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	struct engine_policy *p = NULL;

	if (gv_yaml_load(yaml, strlen(yaml), "test", &docs, &err) || docs.n != 1) {
		CHECK(0, "bad test YAML: %s", err.msg);
		return NULL;
	}
	p = compile(json_incref(docs.v[0].value));
	gv_docs_release(&docs);
	return p;
}

/* "policy/rule=status:message\n" for every result of the named policies. */
static char *results_of(const struct engine_report *rep, const char *const *policies, size_t n)
{
	struct gv_buf b = {0};

	for (size_t i = 0; i < rep->n; i++) {
		const char *name = engine_policy_name(rep->v[i].policy);
		bool want = false;
		for (size_t k = 0; k < n; k++)
			want |= !strcmp(name, policies[k]);
		if (!want)
			continue;
		for (size_t j = 0; j < rep->v[i].nrules; j++)
			gv_buf_addf(&b, "%s/%s=%s:%s\n", name, rep->v[i].rules[j].rule,
				    engine_status_name(rep->v[i].rules[j].status),
				    rep->v[i].rules[j].message ? rep->v[i].rules[j].message : "");
	}
	return gv_buf_detach(&b);
}

static void body_others_unaffected(void)
{
	static const char *const normal_names[] = {"require-team-label", "disallow-privileged",
						   "disallow-latest-tag"};
	const char *normal_yaml[] = {normal_team, normal_privileged, normal_latest};
	struct engine_policy *normal[3], *all[16];
	size_t nall = 0;
	struct engine_policyset *alone, *mixed;
	json_t *objects[3];
	char *a = repeat("a", 4096), *s = gv_xasprintf("%s!", a);
	char *list = doubling("`1`", 64, false), *flat = repeat("|[]", 63);
	char *explode = gv_xasprintf("{{ %s%s|length(@) }}", list, flat);

	for (size_t i = 0; i < 3; i++) {
		normal[i] = compile_yaml(normal_yaml[i]);
		if (!normal[i])
			return;
	}
	/* hostile policies first, then the normal ones, then more hostile ones */
	all[nall++] = compile(policy1_new(
	    "h-regex", "hostile", "deny",
	    deny_new("{{ regex_match('(a+)+$', request.object.metadata.annotations.s) }}",
		     json_true())));
	all[nall++] =
	    compile(policy1_new("h-explode", "hostile", "deny", deny_new(explode, json_true())));
	for (size_t i = 0; i < 3; i++)
		all[nall++] = engine_policy_ref(normal[i]);
	all[nall++] =
	    compile(policy1_new("h-reinsert", "x {{ request.object.metadata.annotations.a }}",
				"pattern", failing_pattern()));
	all[nall++] = compile(many_rules_policy(1000));
	for (size_t i = 0; i < nall; i++)
		if (!all[i])
			return;
	alone = engine_policyset_new(normal, 3, NULL, 0);
	mixed = engine_policyset_new(all, nall, NULL, 0);
	for (size_t i = 0; i < 3; i++)
		engine_policy_unref(normal[i]);
	for (size_t i = 0; i < nall; i++)
		engine_policy_unref(all[i]);

	objects[0] = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:[{s:s, s:s, s:{s:b}}]}}", "apiVersion",
	    "v1", "kind", "Pod", "metadata", "name", "bad", "namespace", "default", "annotations",
	    "s", s, "a", "{{ request.object.metadata.annotations.a }}", "spec", "containers",
	    "name", "c", "image", "nginx:latest", "securityContext", "privileged", 1);
	objects[1] =
	    json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1",
		      "kind", "Pod", "metadata", "name", "good", "namespace", "default", "labels",
		      "team", "a", "spec", "containers", "name", "c", "image", "nginx:1.25");
	objects[2] =
	    configmap_new("cm", json_pack("{s:{s:s, s:s, s:{s:s, s:s}}}", "metadata", "name", "cm",
					  "namespace", "default", "annotations", "s", s, "a",
					  "{{ request.object.metadata.annotations.a }}"));
	for (size_t i = 0; i < 3; i++) {
		struct engine_report ra = {0}, rm = {0};
		char *ta, *tm;
		double t0 = now_s();

		evaluate(alone, objects[i], &ra);
		report_timing("others-unaffected: normal set", t0);
		t0 = now_s();
		evaluate(mixed, objects[i], &rm);
		report_timing("others-unaffected: mixed set", t0);
		ta = results_of(&ra, normal_names, 3);
		tm = results_of(&rm, normal_names, 3);
		CHECK(*ta, "object %zu: the normal policies gave no results", i);
		CHECK_STR(tm, ta);
		/* and the hostile ones (on ConfigMaps) did trip their bounds */
		if (i == 2) {
			const struct engine_rule_result *r = find(&rm, "h-regex", "h-regex");
			CHECK(r && r->status == ENGINE_ERROR, "object %zu: h-regex errors", i);
			r = find(&rm, "h-explode", "h-explode");
			CHECK(r && r->status == ENGINE_ERROR, "object %zu: h-explode errors", i);
			r = find(&rm, "h-reinsert", "h-reinsert");
			CHECK(r && r->status == ENGINE_FAIL &&
				  strstr(r->message, "did not finish in 10 passes"),
			      "object %zu: h-reinsert is cut after 10 passes", i);
		}
		engine_report_release(&ra);
		engine_report_release(&rm);
		free(ta);
		free(tm);
	}
	for (size_t i = 0; i < 3; i++)
		json_decref(objects[i]);
	engine_policyset_unref(alone);
	engine_policyset_unref(mixed);
	free(a);
	free(s);
	free(list);
	free(flat);
	free(explode);
}

static void test_others_unaffected(void **state)
{
	(void)state;
	guarded("others_unaffected", body_others_unaffected, GUARD_CPU_S);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_regex_catastrophic),
	    cmocka_unit_test(test_regex_amplified),
	    cmocka_unit_test(test_jmespath_explosion),
	    cmocka_unit_test(test_jmespath_explosion_unbounded),
	    cmocka_unit_test(test_wildcard_quadratic),
	    cmocka_unit_test(test_many_rules),
	    cmocka_unit_test(test_deep_pattern),
	    cmocka_unit_test(test_deep_resource),
	    cmocka_unit_test(test_template_chains),
	    cmocka_unit_test(test_template_amplified),
	    cmocka_unit_test(test_message_value),
	    cmocka_unit_test(test_foreach_budget),
	    cmocka_unit_test(test_wildcard_rule_budget),
	    cmocka_unit_test(test_shared_operands),
	    cmocka_unit_test(test_skip_texts),
	    cmocka_unit_test(test_others_unaffected),
	};

	json_object_seed(1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
