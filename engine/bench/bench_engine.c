/*
 * bench_engine - the engine benchmark of `make bench`.
 *
 *   bench_engine [-n PODS] [--emit FILE] POLICY_DIR_OR_FILE...
 *
 * Generates PODS realistic Pods (deterministic: varied containers, init
 * containers, securityContext, volumes, labels; 2-6 KB of JSON each),
 * compiles every ClusterPolicy (autogen included) and every
 * policies.kyverno.io ValidatingPolicy found (engine/vpolicy.h, evaluated as
 * a CREATE of each Pod, one vpol_batch per Pod), then prints, for each of
 * the two sets: pods/s and mean microseconds per pod-policy evaluation on
 * one core; with both sets, their ratio measured in this one run; then the
 * time to only parse the same pods' JSON, the ratio evaluation/parse, and
 * peak RSS. With --emit, also writes the pods as one multi-document YAML
 * file for the whole-process `gavel apply` figure. Figures are printed,
 * never asserted.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/yaml.h"
#include "engine/engine.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

static unsigned long long rng = 0x9E3779B97F4A7C15ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *pick(const char *const *v, size_t n)
{
	return v[rnd((unsigned)n)];
}

static json_t *container(const char *name, int i)
{
	static const char *const images[] = {"nginx:1.25",
					     "registry.example.com/shop/api:2.0.0",
					     "busybox",
					     "redis:7-alpine",
					     "ghcr.io/acme/worker@sha256:0f3c2b",
					     "quay.io/prometheus/node-exporter:v1.7.0",
					     "docker.io/library/postgres:16",
					     "envoyproxy/envoy:v1.29.0"};
	static const char *const caps[] = {"NET_ADMIN", "SYS_ADMIN",	    "CHOWN",
					   "KILL",	"NET_BIND_SERVICE", "SETUID"};
	json_t *c =
	    json_pack("{s:s,s:s,s:s}", "name", name, "image", pick(images, GV_ARRAY_LEN(images)),
		      "imagePullPolicy", rnd(2) ? "IfNotPresent" : "Always");
	json_t *ports = json_array();
	for (unsigned p = 0; p < 1 + rnd(3); p++)
		json_array_append_new(ports, json_pack("{s:s,s:i,s:s}", "name",
						       p ? "metrics" : "http", "containerPort",
						       8000 + (int)p + i, "protocol", "TCP"));
	json_object_set_new(c, "ports", ports);
	json_object_set_new(c, "env",
			    json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:{s:{s:s,s:s}}}]", "name",
				      "LOG_LEVEL", "value", "info", "name", "REGION", "value",
				      "eu-west-1", "name", "DB_PASSWORD", "valueFrom",
				      "secretKeyRef", "name", "db", "key", "password"));
	json_object_set_new(c, "resources",
			    json_pack("{s:{s:s,s:s},s:{s:s,s:s}}", "requests", "cpu", "100m",
				      "memory", "128Mi", "limits", "cpu", "500m", "memory",
				      rnd(4) ? "512Mi" : "2Gi"));
	if (rnd(4)) {
		json_t *sc = json_object();
		json_object_set_new(sc, "runAsNonRoot", json_boolean(rnd(5) != 0));
		json_object_set_new(sc, "allowPrivilegeEscalation", json_boolean(rnd(6) == 0));
		json_object_set_new(sc, "readOnlyRootFilesystem", json_boolean(rnd(2)));
		if (rnd(8) == 0)
			json_object_set_new(sc, "privileged", json_true());
		if (rnd(3) == 0)
			json_object_set_new(sc, "runAsUser", json_integer(rnd(4) ? 1000 : 0));
		json_object_set_new(
		    sc, "capabilities",
		    json_pack("{s:[s],s:[s]}", "drop", "ALL", "add",
			      rnd(5) ? "NET_BIND_SERVICE" : pick(caps, GV_ARRAY_LEN(caps))));
		if (rnd(3))
			json_object_set_new(
			    sc, "seccompProfile",
			    json_pack("{s:s}", "type", rnd(4) ? "RuntimeDefault" : "Unconfined"));
		json_object_set_new(c, "securityContext", sc);
	}
	json_object_set_new(c, "volumeMounts",
			    json_pack("[{s:s,s:s},{s:s,s:s,s:b}]", "name", "data", "mountPath",
				      "/var/lib/app", "name", "config", "mountPath", "/etc/app",
				      "readOnly", 1));
	json_object_set_new(c, "livenessProbe",
			    json_pack("{s:{s:s,s:i},s:i,s:i}", "httpGet", "path", "/healthz",
				      "port", 8000 + i, "initialDelaySeconds", 5, "periodSeconds",
				      10));
	return c;
}

static json_t *make_pod(int idx)
{
	static const char *const teams[] = {"shop", "payments", "search", "platform", "data"};
	char name[64], cname[32];
	json_t *containers = json_array(), *inits = json_array(), *volumes = json_array();
	json_t *spec, *pod;
	unsigned nc = 1 + rnd(3), ni = rnd(3);

	snprintf(name, sizeof(name), "pod-%d", idx);
	for (unsigned i = 0; i < nc; i++) {
		snprintf(cname, sizeof(cname), "app-%u", i);
		json_array_append_new(containers, container(cname, (int)i));
	}
	for (unsigned i = 0; i < ni; i++) {
		snprintf(cname, sizeof(cname), "init-%u", i);
		json_array_append_new(inits, container(cname, 10 + (int)i));
	}
	json_array_append_new(volumes, json_pack("{s:s,s:{}}", "name", "data", "emptyDir"));
	json_array_append_new(volumes, json_pack("{s:s,s:{s:s}}", "name", "config", "configMap",
						 "name", "app-config"));
	if (rnd(10) == 0)
		json_array_append_new(volumes, json_pack("{s:s,s:{s:s}}", "name", "host",
							 "hostPath", "path", "/var/run"));
	spec = json_pack("{s:o,s:s,s:i,s:o}", "containers", containers, "serviceAccountName",
			 "default", "terminationGracePeriodSeconds", 30, "volumes", volumes);
	if (ni)
		json_object_set_new(spec, "initContainers", inits);
	else
		json_decref(inits);
	if (rnd(12) == 0)
		json_object_set_new(spec, "hostNetwork", json_true());
	if (rnd(15) == 0)
		json_object_set_new(spec, "hostPID", json_true());
	if (rnd(2))
		json_object_set_new(spec, "securityContext",
				    json_pack("{s:b,s:i,s:{s:s}}", "runAsNonRoot", rnd(4) != 0,
					      "fsGroup", 2000, "seccompProfile", "type",
					      "RuntimeDefault"));
	pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s}},s:o}", "apiVersion", "v1",
			"kind", "Pod", "metadata", "name", name, "namespace", teams[idx % 5],
			"labels", "app", name, "team", teams[idx % 5], "app.kubernetes.io/version",
			"1.0", "annotations", "owner", "platform@example.com", "spec", spec);
	return pod;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long peak_rss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

struct plist {
	struct engine_policy **v;
	size_t n;
	struct vpol_policy **cel; /* ValidatingPolicies */
	size_t ncel;
};

static void load_policies(const char *path, struct plist *pl)
{
	struct stat st;
	struct gv_docs docs;
	struct gv_err err = {0};

	if (stat(path, &st))
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		if (!d)
			return;
		while ((e = readdir(d))) {
			char *sub;
			if (e->d_name[0] == '.')
				continue;
			sub = gv_xasprintf("%s/%s", path, e->d_name);
			load_policies(sub, pl);
			free(sub);
		}
		closedir(d);
		return;
	}
	if (!strstr(path, ".yaml") || strstr(path, "kyverno-test") || strstr(path, "resource"))
		return;
	if (gv_yaml_load_file(path, &docs, &err)) {
		gv_docs_release(&docs);
		return;
	}
	for (size_t i = 0; i < docs.n; i++) {
		const char *kind = json_string_value(json_object_get(docs.v[i].value, "kind"));
		struct engine_policy *p;
		if (kind && vpol_is_policy_doc(docs.v[i].value)) {
			struct vpol_policy *vp;
			gv_err_clear(&err);
			vp = vpol_compile(docs.v[i].value, &err);
			if (!vp) {
				fprintf(stderr, "bench: %s: %s\n", path, err.msg);
				continue;
			}
			pl->cel = gv_xrealloc(pl->cel, (pl->ncel + 1) * sizeof(*pl->cel));
			pl->cel[pl->ncel++] = vp;
			continue;
		}
		if (!kind || strcmp(kind, "ClusterPolicy"))
			continue;
		gv_err_clear(&err);
		p = engine_policy_compile(docs.v[i].value, &err);
		if (!p) {
			fprintf(stderr, "bench: %s: %s\n", path, err.msg);
			continue;
		}
		pl->v = gv_xrealloc(pl->v, (pl->n + 1) * sizeof(*pl->v));
		pl->v[pl->n++] = p;
	}
	gv_docs_release(&docs);
}

int main(int argc, char **argv)
{
	int npods = 10000;
	const char *emit = NULL;
	struct plist pl = {0};
	char **texts;
	json_t **pods;
	struct engine_policyset *set;
	double t0, parse_s, eval_s = 0, cel_s = 0;
	long rss_before, rss_parsed, rss_after;
	size_t bytes = 0, results = 0, fails = 0, cresults = 0, cfails = 0;

	gv_init();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			npods = (int)strtol(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--emit") && i + 1 < argc) {
			emit = argv[++i];
		} else {
			load_policies(argv[i], &pl);
		}
	}
	if (!pl.n && !pl.ncel) {
		fprintf(stderr, "bench: no ClusterPolicy or ValidatingPolicy found\n");
		return 2;
	}
	texts = gv_xcalloc((size_t)npods, sizeof(*texts));
	for (int i = 0; i < npods; i++) {
		json_t *p = make_pod(i);
		texts[i] = json_dumps(p, JSON_COMPACT);
		bytes += strlen(texts[i]);
		json_decref(p);
	}
	if (emit) {
		FILE *f = fopen(emit, "w");
		if (!f) {
			perror(emit);
			return 2;
		}
		for (int i = 0; i < npods; i++)
			fprintf(f, "---\n%s\n", texts[i]);
		fclose(f);
	}
	rss_before = peak_rss_kib();
	pods = gv_xcalloc((size_t)npods, sizeof(*pods));
	t0 = now();
	for (int i = 0; i < npods; i++)
		pods[i] = json_loads(texts[i], 0, NULL);
	parse_s = now() - t0;
	rss_parsed = peak_rss_kib();
	set = engine_policyset_new(pl.v, pl.n, NULL, 0);
	if (pl.n) {
		t0 = now();
		for (int i = 0; i < npods; i++) {
			struct engine_input in = {.object = pods[i], .operation = "CREATE"};
			struct engine_report rep;
			if (engine_evaluate(set, &in, ENGINE_ADMISSION, &rep, NULL) == GV_OK) {
				for (size_t k = 0; k < rep.n; k++) {
					results += rep.v[k].nrules;
					for (size_t r = 0; r < rep.v[k].nrules; r++)
						fails += rep.v[k].rules[r].status == ENGINE_FAIL;
				}
			}
			engine_report_release(&rep);
		}
		eval_s = now() - t0;
		printf("engine: %d pods (%.1f KB mean JSON), %zu ClusterPolicies (%zu rules with "
		       "autogen)\n",
		       npods, (double)bytes / npods / 1024.0, pl.n, results / (size_t)npods);
		printf("engine: ClusterPolicies: evaluation %.0f pods/s, %.2f us per pod-policy, "
		       "%zu rule results (%zu fail)\n",
		       npods / eval_s, eval_s * 1e6 / ((double)npods * (double)pl.n), results,
		       fails);
	}
	if (pl.ncel) {
		/* One batch per Pod: what the webhook and the scans do per resource. */
		t0 = now();
		for (int i = 0; i < npods; i++) {
			struct vpol_input in = {
			    .object = pods[i], .operation = "CREATE", .resource = "pods"};
			struct vpol_batch *b = vpol_batch_new(&in);
			for (size_t k = 0; k < pl.ncel; k++) {
				struct vpol_report rep;
				if (vpol_batch_evaluate(b, pl.cel[k], &rep, NULL) != GV_OK)
					continue;
				for (size_t r = 0; r < rep.n; r++) {
					cresults += rep.v[r].n;
					for (size_t j = 0; j < rep.v[r].n; j++)
						cfails += rep.v[r].rules[j].status == ENGINE_FAIL;
				}
				vpol_report_release(&rep);
			}
			vpol_batch_free(b);
		}
		cel_s = now() - t0;
		printf("engine: %d pods (%.1f KB mean JSON), %zu ValidatingPolicies\n", npods,
		       (double)bytes / npods / 1024.0, pl.ncel);
		printf("engine: ValidatingPolicies: evaluation %.0f pods/s, %.2f us per "
		       "pod-policy, %zu rule results (%zu fail)\n",
		       npods / cel_s, cel_s * 1e6 / ((double)npods * (double)pl.ncel), cresults,
		       cfails);
	}
	if (pl.ncel) {
		/* The same without a batch: one vpol_evaluate per pod-policy. */
		double t1 = now(), single_s;
		for (int i = 0; i < npods; i++) {
			struct vpol_input in = {
			    .object = pods[i], .operation = "CREATE", .resource = "pods"};
			for (size_t k = 0; k < pl.ncel; k++) {
				struct vpol_report rep;
				if (vpol_evaluate(pl.cel[k], &in, &rep, NULL) == GV_OK)
					vpol_report_release(&rep);
			}
		}
		single_s = now() - t1;
		printf(
		    "engine: ValidatingPolicies one vpol_evaluate per pod-policy (no batch): %.0f "
		    "pods/s, %.2f us per pod-policy\n",
		    npods / single_s, single_s * 1e6 / ((double)npods * (double)pl.ncel));
	}
	if (pl.n && pl.ncel)
		printf("engine: in this run, ValidatingPolicies/ClusterPolicies time per pod %.2f "
		       "(pods/s %.0f vs %.0f; below 1: the CEL set is faster)\n",
		       cel_s / eval_s, npods / cel_s, npods / eval_s);
	rss_after = peak_rss_kib();
	printf("engine: JSON parse only %.0f pods/s (%.2f us per pod)\n", npods / parse_s,
	       parse_s * 1e6 / npods);
	printf("engine: ratio evaluation/parse %.2f\n", (eval_s + cel_s) / parse_s);
	printf("engine: peak RSS %.1f MiB: %.1f MiB before the parsed input, %.1f MiB with it, "
	       "%.1f MiB added by evaluation\n",
	       (double)rss_after / 1024.0, (double)rss_before / 1024.0, (double)rss_parsed / 1024.0,
	       (double)(rss_after - rss_parsed) / 1024.0);
	for (int i = 0; i < npods; i++) {
		json_decref(pods[i]);
		free(texts[i]);
	}
	free(pods);
	free(texts);
	engine_policyset_unref(set);
	for (size_t i = 0; i < pl.n; i++)
		engine_policy_unref(pl.v[i]);
	free(pl.v);
	for (size_t i = 0; i < pl.ncel; i++)
		vpol_free(pl.cel[i]);
	free(pl.cel);
	return 0;
}
