/*
 * bench_jmespath - the JMESPath benchmark of `make bench`.
 *
 *   bench_jmespath [BENCHMARKS.json]
 *
 * Prints nanoseconds per parse and per evaluation for (a) the `bench`
 * cases of the JMESPath compliance suite (when its benchmarks.json is
 * given) and (b) typical Kyverno expressions against a realistic Pod
 * admission context. Each figure is the median of several timed batches.
 * Figures are printed, never asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/jmespath.h"
#include "common/banned.h"

#define BATCHES 7

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median over BATCHES batches of the time per iteration, in ns. */
static double time_parse(const char *expr, const struct jp_options *opt, long iters)
{
	double t[BATCHES];
	struct jp_error e;

	for (int b = 0; b < BATCHES; b++) {
		double t0 = now();
		for (long i = 0; i < iters; i++)
			jp_free(jp_compile(expr, opt, &e));
		t[b] = (now() - t0) * 1e9 / (double)iters;
	}
	qsort(t, BATCHES, sizeof(t[0]), cmp_double);
	return t[BATCHES / 2];
}

static double time_eval(const struct jp_expr *x, const json_t *data, long iters)
{
	double t[BATCHES];
	struct jp_error e;

	for (int b = 0; b < BATCHES; b++) {
		double t0 = now();
		for (long i = 0; i < iters; i++)
			json_decref(jp_eval(x, data, &e));
		t[b] = (now() - t0) * 1e9 / (double)iters;
	}
	qsort(t, BATCHES, sizeof(t[0]), cmp_double);
	return t[BATCHES / 2];
}

static long iterations_for(double ns_guess)
{
	long n = (long)(2e7 / (ns_guess > 1 ? ns_guess : 1));
	return n < 100 ? 100 : n > 200000 ? 200000 : n;
}

static void bench_one(const char *label, const char *expr, const json_t *data,
		      const struct jp_options *opt)
{
	struct jp_error e;
	struct jp_expr *x = jp_compile(expr, opt, &e);
	double p, v = -1;

	if (!x) {
		printf("  %-52.52s  does not compile: %s\n", label, e.msg);
		return;
	}
	p = time_parse(expr, opt, iterations_for(time_parse(expr, opt, 10)));
	if (data)
		v = time_eval(x, data, iterations_for(time_eval(x, data, 10)));
	if (v >= 0)
		printf("  %-60.60s  parse %8.0f ns   eval %8.0f ns\n", label, p, v);
	else
		printf("  %-60.60s  parse %8.0f ns\n", label, p);
	jp_free(x);
}

static const char *const pod_context =
    "{\"request\": {\"operation\": \"CREATE\", \"namespace\": \"shop\", \"object\": {"
    "\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"web-1\", "
    "\"namespace\": \"shop\", \"labels\": {\"app\": \"web\", \"team\": \"storefront\", "
    "\"app.kubernetes.io/name\": \"web\"}, \"annotations\": {\"owner\": \"shop@example.com\"}},"
    "\"spec\": {\"serviceAccountName\": \"web\", \"containers\": ["
    "{\"name\": \"web\", \"image\": \"registry.example.com/shop/web:1.4.2\", "
    "\"securityContext\": {\"runAsNonRoot\": true, \"allowPrivilegeEscalation\": false, "
    "\"capabilities\": {\"drop\": [\"ALL\"], \"add\": [\"NET_BIND_SERVICE\"]}}, "
    "\"resources\": {\"limits\": {\"memory\": \"512Mi\", \"cpu\": \"500m\"}}, "
    "\"ports\": [{\"containerPort\": 8080}]},"
    "{\"name\": \"envoy\", \"image\": \"envoyproxy/envoy:v1.29.0\", "
    "\"securityContext\": {\"privileged\": false}},"
    "{\"name\": \"log\", \"image\": \"busybox:latest\"}],"
    "\"initContainers\": [{\"name\": \"init\", \"image\": \"busybox:1.36\"}],"
    "\"volumes\": [{\"name\": \"data\", \"emptyDir\": {}}, "
    "{\"name\": \"host\", \"hostPath\": {\"path\": \"/var/run\"}}]}}}}";

static const char *const kyverno_exprs[] = {
    "request.object.spec.containers[].image",
    "length(request.object.spec.containers)",
    "request.object.metadata.labels.app || ''",
    "request.object.metadata.labels.\"app.kubernetes.io/name\"",
    "request.operation || 'BACKGROUND'",
    "request.object.spec.[ephemeralContainers, initContainers, "
    "containers][].securityContext.capabilities.add[]",
    "request.object.spec.containers[?securityContext.privileged == `true`].name",
    "request.object.spec.volumes[?hostPath].hostPath.path",
    "request.object.spec.containers[].resources.limits.memory | [0]",
    "regex_match('^registry\\.example\\.com/', request.object.spec.containers[0].image)",
    "request.object.spec.containers[].image | length(@)",
    "to_upper(request.object.metadata.labels.team)",
    "request.object.metadata.annotations.missing || `\"default\"`",
};

int main(int argc, char **argv)
{
	struct jp_options ky = {.kyverno = true}, plain = {.kyverno = false};
	json_t *ctx;

	gv_init();
	if (argc > 1) {
		json_t *suite = json_load_file(argv[1], 0, NULL);
		size_t i, j;
		json_t *g, *c;
		if (!suite) {
			fprintf(stderr, "bench_jmespath: cannot read %s\n", argv[1]);
			return 2;
		}
		printf("JMESPath compliance-suite benchmarks (%s):\n", argv[1]);
		json_array_foreach(suite, i, g)
		{
			const json_t *given = json_object_get(g, "given");
			json_array_foreach(json_object_get(g, "cases"), j, c)
			{
				const char *kind = json_string_value(json_object_get(c, "bench"));
				const char *expr =
				    json_string_value(json_object_get(c, "expression"));
				if (!kind || !expr)
					continue;
				bench_one(expr, expr, strcmp(kind, "parse") ? given : NULL, &plain);
			}
		}
		json_decref(suite);
	} else {
		printf("JMESPath compliance-suite benchmarks: corpus absent, skipped\n");
	}
	ctx = json_loads(pod_context, 0, NULL);
	printf("typical Kyverno expressions on a Pod admission context:\n");
	for (size_t i = 0; i < GV_ARRAY_LEN(kyverno_exprs); i++) {
		bench_one(kyverno_exprs[i], kyverno_exprs[i], ctx, &ky);
	}
	json_decref(ctx);
	return 0;
}
