/*
 * bench_cel - the CEL benchmark of `make bench`.
 *
 *   bench_cel
 *
 * Prints nanoseconds per parse (compile) and per evaluation of the typical
 * expressions of the policy library's pod-security-vpol set (host
 * namespaces, privileged, host path, capabilities, privilege escalation,
 * run as non-root, host ports; the `variables` inlined), an image check with
 * matches(), a label lookup and a quantity comparison, on a Pod bound as
 * `object`; beside each, the JMESPath expression doing the same check on the
 * same Pod as Kyverno's request.object. Each figure is the median of several
 * timed batches. Figures are printed, never asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/cel/cel.h"
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

static double median(double *t)
{
	qsort(t, BATCHES, sizeof(t[0]), cmp_double);
	return t[BATCHES / 2];
}

static long iterations_for(double ns_guess)
{
	long n = (long)(2e7 / (ns_guess > 1 ? ns_guess : 1));
	return n < 100 ? 100 : n > 500000 ? 500000 : n;
}

static double cel_parse_ns(const char *expr, long iters)
{
	double t[BATCHES];

	for (int b = 0; b < BATCHES; b++) {
		double t0 = now();
		for (long i = 0; i < iters; i++)
			cel_program_free(cel_compile(expr, strlen(expr), 0, NULL));
		t[b] = (now() - t0) * 1e9 / (double)iters;
	}
	return median(t);
}

static double cel_eval_ns(struct cel_eval *ev, const struct cel_program *p, long iters)
{
	double t[BATCHES];
	struct cel_value v;

	for (int b = 0; b < BATCHES; b++) {
		double t0 = now();
		for (long i = 0; i < iters; i++) {
			cel_eval_run(ev, p, &v);
			cel_eval_clear(ev);
		}
		t[b] = (now() - t0) * 1e9 / (double)iters;
	}
	return median(t);
}

static double jp_parse_ns(const char *expr, const struct jp_options *opt, long iters)
{
	double t[BATCHES];
	struct jp_error e;

	for (int b = 0; b < BATCHES; b++) {
		double t0 = now();
		for (long i = 0; i < iters; i++)
			jp_free(jp_compile(expr, opt, &e));
		t[b] = (now() - t0) * 1e9 / (double)iters;
	}
	return median(t);
}

static double jp_eval_ns(const struct jp_expr *x, const json_t *data, long iters)
{
	double t[BATCHES];
	struct jp_error e;

	for (int b = 0; b < BATCHES; b++) {
		double t0 = now();
		for (long i = 0; i < iters; i++)
			json_decref(jp_eval(x, data, &e));
		t[b] = (now() - t0) * 1e9 / (double)iters;
	}
	return median(t);
}

static const char *const pod_context =
    "{\"request\": {\"operation\": \"CREATE\", \"namespace\": \"shop\", \"object\": {"
    "\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"web-1\", "
    "\"namespace\": \"shop\", \"labels\": {\"app\": \"web\", \"team\": \"storefront\", "
    "\"app.kubernetes.io/name\": \"web\"}, \"annotations\": {\"owner\": \"shop@example.com\"}},"
    "\"spec\": {\"serviceAccountName\": \"web\", \"securityContext\": {\"runAsNonRoot\": true},"
    "\"containers\": ["
    "{\"name\": \"web\", \"image\": \"registry.example.com/shop/web:1.4.2\", "
    "\"securityContext\": {\"runAsNonRoot\": true, \"allowPrivilegeEscalation\": false, "
    "\"capabilities\": {\"drop\": [\"ALL\"], \"add\": [\"NET_BIND_SERVICE\"]}}, "
    "\"resources\": {\"limits\": {\"memory\": \"512Mi\", \"cpu\": \"500m\"}}, "
    "\"ports\": [{\"containerPort\": 8080}]},"
    "{\"name\": \"envoy\", \"image\": \"registry.example.com/envoyproxy/envoy:v1.29.0\", "
    "\"securityContext\": {\"privileged\": false, \"allowPrivilegeEscalation\": false}, "
    "\"resources\": {\"limits\": {\"memory\": \"128Mi\"}}},"
    "{\"name\": \"log\", \"image\": \"registry.example.com/busybox:latest\", "
    "\"securityContext\": {\"allowPrivilegeEscalation\": false}}],"
    "\"initContainers\": [{\"name\": \"init\", \"image\": \"registry.example.com/busybox:1.36\", "
    "\"securityContext\": {\"allowPrivilegeEscalation\": false}}],"
    "\"volumes\": [{\"name\": \"data\", \"emptyDir\": {}}, "
    "{\"name\": \"cfg\", \"configMap\": {\"name\": \"web\"}}]}}}}";

#define ALL_CEL                                                                                    \
	"(object.spec.containers + object.spec.?initContainers.orValue([]) + "                     \
	"object.spec.?ephemeralContainers.orValue([]))"
#define ALL_JP "request.object.spec.[ephemeralContainers, initContainers, containers][]"
#define CAPS                                                                                       \
	"'AUDIT_WRITE','CHOWN','DAC_OVERRIDE','FOWNER','FSETID','KILL','MKNOD','NET_BIND_SERVICE'" \
	","                                                                                        \
	"'SETFCAP','SETGID','SETPCAP','SETUID','SYS_CHROOT'"
#define CAPS_JP                                                                                    \
	"\"AUDIT_WRITE\",\"CHOWN\",\"DAC_OVERRIDE\",\"FOWNER\",\"FSETID\",\"KILL\",\"MKNOD\","     \
	"\"NET_BIND_SERVICE\",\"SETFCAP\",\"SETGID\",\"SETPCAP\",\"SETUID\",\"SYS_CHROOT\""

static const struct {
	const char *label, *cel, *jp; /* jp NULL: no JMESPath equivalent */
} cases[] = {
    {"host namespaces",
     "!(object.spec.?hostNetwork.orValue(false) || object.spec.?hostIPC.orValue(false) || "
     "object.spec.?hostPID.orValue(false))",
     "!(request.object.spec.hostNetwork || request.object.spec.hostIPC || "
     "request.object.spec.hostPID)"},
    {"privileged (has)",
     "object.spec.containers.all(c, !has(c.securityContext) || "
     "!has(c.securityContext.privileged) || c.securityContext.privileged == false)",
     "length(request.object.spec.containers[?securityContext.privileged == `true`]) == `0`"},
    {"host path", "object.spec.?volumes.orValue([]).all(volume, !has(volume.hostPath))",
     "length(request.object.spec.volumes[?hostPath] || `[]`) == `0`"},
    {"capabilities",
     ALL_CEL ".all(container, container.?securityContext.?capabilities.?add.orValue([])"
	     ".all(capability, capability == '' || capability in [" CAPS "]))",
     "length(" ALL_JP ".securityContext.capabilities.add[] | [?!contains(`[" CAPS_JP
     "]`, @)]) == `0`"},
    {"privilege escalation",
     ALL_CEL ".all(container, "
	     "container.?securityContext.allowPrivilegeEscalation.orValue(true) == false)",
     "length(" ALL_JP "[?securityContext.allowPrivilegeEscalation != `false`]) == `0`"},
    {"run as non-root",
     "(object.spec.?securityContext.?runAsNonRoot.orValue(false) == true && " ALL_CEL
     ".all(c, c.?securityContext.?runAsNonRoot.orValue(true) == true)) || " ALL_CEL
     ".all(c, c.?securityContext.?runAsNonRoot.orValue(false) == true)",
     "(request.object.spec.securityContext.runAsNonRoot == `true` && length(" ALL_JP
     "[?securityContext.runAsNonRoot == `false`]) == `0`) || length(" ALL_JP
     "[?securityContext.runAsNonRoot != `true`]) == `0`"},
    {"host ports",
     ALL_CEL ".all(container, container.?ports.orValue([]).all(port, "
	     "port.?hostPort.orValue(0) == 0))",
     "length(" ALL_JP ".ports[] | [?hostPort && hostPort != `0`]) == `0`"},
    {"image registry (matches)",
     "object.spec.containers.all(c, c.image.matches('^registry\\\\.example\\\\.com/'))",
     "length(request.object.spec.containers[?!regex_match('^registry\\.example\\.com/', "
     "image)]) == `0`"},
    {"label lookup", "object.metadata.labels['app.kubernetes.io/name'] == 'web'",
     "request.object.metadata.labels.\"app.kubernetes.io/name\" == 'web'"},
    {"memory limit (quantity)",
     "object.spec.containers.all(c, "
     "quantity(c.?resources.?limits.?memory.orValue('0')).isLessThan(quantity('1Gi')))",
     NULL},
};

int main(void)
{
	struct jp_options ky = {.kyverno = true};
	json_t *ctx;
	struct cel_eval *ev;

	gv_init();
	ctx = json_loads(pod_context, 0, NULL);
	if (!ctx)
		return 2;
	ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	cel_bind_json(ev, "object", json_object_get(json_object_get(ctx, "request"), "object"));
	printf("typical pod-security-vpol checks on a Pod, ns (median of %d batches):\n", BATCHES);
	printf("  %-26s %10s %10s %7s  %10s %10s\n", "check", "CEL parse", "CEL eval", "result",
	       "JMESP parse", "JMESP eval");
	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct cel_parse_error perr;
		struct cel_program *p = cel_compile(cases[i].cel, strlen(cases[i].cel), 0, &perr);
		struct cel_value v;
		double cp, ce, jpp = -1, jpe = -1;
		char res[16];

		if (!p) {
			printf("  %-26s CEL does not compile: %s\n", cases[i].label, perr.msg);
			continue;
		}
		cel_eval_run(ev, p, &v);
		snprintf(res, sizeof(res), "%s",
			 v.kind == CEL_BOOL ? (v.v.b ? "true" : "false") : "ERROR");
		cel_eval_clear(ev);
		cp = cel_parse_ns(cases[i].cel, iterations_for(cel_parse_ns(cases[i].cel, 10)));
		ce = cel_eval_ns(ev, p, iterations_for(cel_eval_ns(ev, p, 10)));
		if (cases[i].jp) {
			struct jp_error e;
			struct jp_expr *x = jp_compile(cases[i].jp, &ky, &e);

			if (x) {
				json_t *r = jp_eval(x, ctx, &e);

				if (!json_is_true(r))
					snprintf(res + strlen(res), sizeof(res) - strlen(res),
						 "/jp!");
				json_decref(r);
				jpp =
				    jp_parse_ns(cases[i].jp, &ky,
						iterations_for(jp_parse_ns(cases[i].jp, &ky, 10)));
				jpe = jp_eval_ns(x, ctx, iterations_for(jp_eval_ns(x, ctx, 10)));
				jp_free(x);
			} else {
				printf("  %-26s JMESPath does not compile: %s\n", cases[i].label,
				       e.msg);
			}
		}
		if (jpp >= 0)
			printf("  %-26s %10.0f %10.0f %7s  %10.0f %10.0f\n", cases[i].label, cp, ce,
			       res, jpp, jpe);
		else
			printf("  %-26s %10.0f %10.0f %7s  %10s %10s\n", cases[i].label, cp, ce,
			       res, "-", "-");
		cel_program_free(p);
	}
	cel_eval_free(ev);
	json_decref(ctx);
	return 0;
}
