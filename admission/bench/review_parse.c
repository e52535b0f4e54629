/*
 * review_parse - the JSON-parse floor of the admission benchmark (`make
 * bench`, scripts/bench.sh).
 *
 *   review_parse [-n N] [--seconds S] [--emit DIR] [--passes P] [POLICY_PATH...]
 *
 * Generates N Pod AdmissionReviews (default 64; deterministic; 4-6 KB of
 * JSON each; even ones compliant with the restricted pod-security profile,
 * odd ones violating it in turn: a hostPort, hostNetwork, hostPath, added
 * capabilities, root user, privilege escalation, unconfined seccomp) and
 * measures, on one core, the time to parse one review with the parser the
 * webhook uses (gv_json_parse, freeing included) and, for
 * reference, with json_loadb. It prints
 *
 *   parse floor: R reviews/s (C cores / T us per review)
 *
 * the rate a server could not exceed if it did nothing but parse the
 * requests on every core. With POLICY_PATH (ClusterPolicy and
 * ValidatingPolicy files or directories) it also times the whole handler (admission_handle: parse,
 * evaluate, decide, encode the answer, count the metrics as gavel serve
 * does) on one core and counts the
 * allowed and denied answers. --emit writes the reviews as DIR/review-NNN.json
 * for the load generator. --passes P (with POLICY_PATH): no parse timing, the
 * handler runs exactly P times over the N reviews after the first pass, for
 * an instruction profile (valgrind --tool=callgrind
 * --toggle-collect=admission_handle: instructions per review = the
 * inclusive count / its calls). Figures are printed, never asserted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "admission/admission_int.h"
#include "cmd/load.h"
#include "common/gv.h"
#include "common/metrics.h"
#include "common/banned.h"

#define REVIEW_MIN 4096
#define REVIEW_MAX 6144

static unsigned long long rng = 0x2545F4914F6CDD1Dull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Violations of the odd reviews, in turn. */
enum violation {
	V_HOST_PORT,
	V_HOST_NETWORK,
	V_HOST_PATH,
	V_CAPABILITY,
	V_ROOT,
	V_ESCALATION,
	V_SECCOMP,
	V_COUNT
};

static json_t *container(const char *name, unsigned i, int v)
{
	static const char *const images[] = {"registry.example.com/shop/api:2.0.0",
					     "nginx:1.25.3",
					     "redis:7.2-alpine",
					     "ghcr.io/acme/worker:1.8.1",
					     "quay.io/prometheus/node-exporter:v1.7.0",
					     "envoyproxy/envoy:v1.29.0"};
	json_t *sc = json_pack(
	    "{s:b,s:b,s:b,s:{s:[s]},s:{s:s}}", "allowPrivilegeEscalation", v == V_ESCALATION,
	    "runAsNonRoot", v != V_ROOT, "readOnlyRootFilesystem", 1, "capabilities", "drop", "ALL",
	    "seccompProfile", "type", v == V_SECCOMP ? "Unconfined" : "RuntimeDefault");
	json_t *c;

	if (v == V_ROOT)
		json_object_set_new(sc, "runAsUser", json_integer(0));
	if (v == V_CAPABILITY)
		json_object_set_new(json_object_get(sc, "capabilities"), "add",
				    json_pack("[s]", "SYS_ADMIN"));
	c = json_pack("{s:s,s:s,s:s,s:[{s:s,s:i,s:s}]}", "name", name, "image",
		      images[rnd(GV_ARRAY_LEN(images))], "imagePullPolicy", "IfNotPresent", "ports",
		      "name", "http", "containerPort", 8080 + (int)i, "protocol", "TCP");
	if (v == V_HOST_PORT)
		json_object_set_new(json_array_get(json_object_get(c, "ports"), 0), "hostPort",
				    json_integer(8080));
	json_object_set_new(c, "env",
			    json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:{s:{s:s,s:s}}}]", "name",
				      "LOG_LEVEL", "value", "info", "name", "REGION", "value",
				      "eu-west-1", "name", "DB_PASSWORD", "valueFrom",
				      "secretKeyRef", "name", "db", "key", "password"));
	json_object_set_new(c, "resources",
			    json_pack("{s:{s:s,s:s},s:{s:s,s:s}}", "requests", "cpu", "100m",
				      "memory", "128Mi", "limits", "cpu", "500m", "memory",
				      "512Mi"));
	json_object_set_new(c, "securityContext", sc);
	json_object_set_new(c, "volumeMounts",
			    json_pack("[{s:s,s:s},{s:s,s:s,s:b}]", "name", "data", "mountPath",
				      "/var/lib/app", "name", "config", "mountPath", "/etc/app",
				      "readOnly", 1));
	json_object_set_new(c, "livenessProbe",
			    json_pack("{s:{s:s,s:i},s:i,s:i}", "httpGet", "path", "/healthz",
				      "port", 8080 + (int)i, "initialDelaySeconds", 5,
				      "periodSeconds", 10));
	json_object_set_new(c, "terminationMessagePath", json_string("/dev/termination-log"));
	json_object_set_new(c, "terminationMessagePolicy", json_string("File"));
	return c;
}

/* One review; v < 0: compliant. */
static json_t *make_review(int idx, int v)
{
	static const char *const teams[] = {"shop", "payments", "search", "platform", "data"};
	char name[64], uid[64], cname[32];
	const char *team = teams[rnd(GV_ARRAY_LEN(teams))];
	json_t *containers = json_array(), *volumes, *spec, *meta, *pod, *req;
	unsigned nc = 1 + rnd(2);

	snprintf(name, sizeof(name), "%s-%d-7f9c8d6b5-x%04d", team, idx, idx);
	snprintf(uid, sizeof(uid), "5d2c9a1e-%04x-4f6b-9c3d-%012x", (unsigned)idx,
		 (unsigned)idx * 7919u);
	for (unsigned i = 0; i < nc; i++) {
		snprintf(cname, sizeof(cname), i ? "sidecar-%u" : "app", i);
		json_array_append_new(containers, container(cname, i, i == 0 ? v : -1));
	}
	volumes = json_pack("[{s:s,s:{}},{s:s,s:{s:s}},{s:s,s:{s:s}}]", "name", "data", "emptyDir",
			    "name", "config", "configMap", "name", "app-config", "name", "token",
			    "secret", "secretName", "app-token");
	if (v == V_HOST_PATH)
		json_array_append_new(volumes,
				      json_pack("{s:s,s:{s:s}}", "name", "host", "hostPath", "path",
						"/var/run/docker.sock"));
	spec = json_pack("{s:o,s:o,s:s,s:s,s:i,s:s,s:s,s:{s:b,s:i,s:i,s:{s:s}}}", "containers",
			 containers, "volumes", volumes, "restartPolicy", "Always", "dnsPolicy",
			 "ClusterFirst", "terminationGracePeriodSeconds", 30, "serviceAccountName",
			 "default", "schedulerName", "default-scheduler", "securityContext",
			 "runAsNonRoot", v != V_ROOT, "runAsUser", v == V_ROOT ? 0 : 10001,
			 "fsGroup", 10001, "seccompProfile", "type", "RuntimeDefault");
	if (v == V_HOST_NETWORK)
		json_object_set_new(spec, "hostNetwork", json_true());
	json_object_set_new(spec, "tolerations",
			    json_pack("[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i}]", "key",
				      "node.kubernetes.io/not-ready", "operator", "Exists",
				      "effect", "NoExecute", "tolerationSeconds", 300, "key",
				      "node.kubernetes.io/unreachable", "operator", "Exists",
				      "effect", "NoExecute", "tolerationSeconds", 300));
	meta =
	    json_pack("{s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s},s:{s:s,s:s}}", "name", name, "generateName",
		      "web-7f9c8d6b5-", "namespace", team, "labels", "app", "web", "team", team,
		      "pod-template-hash", "7f9c8d6b5", "app.kubernetes.io/part-of", team,
		      "annotations", "prometheus.io/scrape", "true", "prometheus.io/port", "8080");
	json_object_set_new(meta, "ownerReferences",
			    json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "apps/v1",
				      "kind", "ReplicaSet", "name", "web-7f9c8d6b5", "uid",
				      "0b7c6a57-3c1e-4d55-9e0f-2a9a3c6f1b42", "controller", 1,
				      "blockOwnerDeletion", 1));
	json_object_set_new(meta, "managedFields",
			    json_pack("[{s:s,s:s,s:s,s:s,s:s,s:{s:{s:{},s:{}},s:{s:{}}}}]",
				      "manager", "kube-controller-manager", "operation", "Update",
				      "apiVersion", "v1", "time", "2024-05-01T10:00:00Z",
				      "fieldsType", "FieldsV1", "fieldsV1", "f:metadata",
				      "f:labels", "f:ownerReferences", "f:spec", "f:containers"));
	pod = json_pack("{s:s,s:s,s:o,s:o,s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata",
			meta, "spec", spec, "status");
	req = json_pack("{s:s,s:{s:s,s:s,s:s},s:{s:s,s:s,s:s},s:{s:s,s:s,s:s},s:{s:s,s:s,s:s},"
			"s:s,s:s,s:{s:s,s:s,s:[s,s,s]},s:o,s:n,s:b,s:{s:s,s:s}}",
			"uid", uid, "kind", "group", "", "version", "v1", "kind", "Pod", "resource",
			"group", "", "version", "v1", "resource", "pods", "requestKind", "group",
			"", "version", "v1", "kind", "Pod", "requestResource", "group", "",
			"version", "v1", "resource", "pods", "namespace", team, "operation",
			"CREATE", "userInfo", "username",
			"system:serviceaccount:kube-system:replicaset-controller", "uid",
			"6a1e2f0c-55d1-4c7a-8a39-43f1f2a8b3c1", "groups", "system:serviceaccounts",
			"system:serviceaccounts:kube-system", "system:authenticated", "object", pod,
			"oldObject", "dryRun", 0, "options", "apiVersion", "meta.k8s.io/v1", "kind",
			"CreateOptions");
	return json_pack("{s:s,s:s,s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
			 "AdmissionReview", "request", req);
}

/* Grows the review with environment variables of its first container to a size in range. */
static char *review_text(int idx)
{
	int v = idx % 2 ? (idx / 2) % V_COUNT : -1;
	json_t *r = make_review(idx, v);
	json_t *env = json_object_get(
	    json_array_get(
		json_object_get(
		    json_object_get(json_object_get(json_object_get(r, "request"), "object"),
				    "spec"),
		    "containers"),
		0),
	    "env");
	size_t target = REVIEW_MIN + rnd(REVIEW_MAX - REVIEW_MIN - 256);
	char *text = json_dumps(r, JSON_COMPACT);

	for (int n = 0; strlen(text) < target; n++) {
		char k[64];
		snprintf(k, sizeof(k), "FEATURE_FLAG_%03d", n);
		json_array_append_new(env, json_pack("{s:s,s:s}", "name", k, "value",
						     n % 3 ? "enabled" : "disabled"));
		free(text);
		text = json_dumps(r, JSON_COMPACT);
	}
	json_decref(r);
	return text;
}

static int emit(char **texts, int n, const char *dir)
{
	if (mkdir(dir, 0755) && errno != EEXIST) {
		perror(dir);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		char *path = gv_xasprintf("%s/review-%03d.json", dir, i);
		FILE *f = fopen(path, "w");
		if (!f || fputs(texts[i], f) == EOF || fclose(f)) {
			perror(path);
			free(path);
			return 2;
		}
		free(path);
	}
	return 0;
}

/* Mean seconds per review of fn over all texts, repeated for at least secs. */
static double time_per_review(char **texts, const size_t *lens, int n, double secs,
			      json_t *(*fn)(const char *, size_t))
{
	double t0 = now_s(), t;
	long done = 0;

	do {
		for (int i = 0; i < n; i++) {
			json_t *j = fn(texts[i], lens[i]);
			if (!j) {
				fprintf(stderr, "review_parse: review %d does not parse\n", i);
				exit(2);
			}
			json_decref(j);
		}
		done += n;
		t = now_s() - t0;
	} while (t < secs);
	return t / (double)done;
}

static json_t *parse_ours(const char *s, size_t n)
{
	return gv_json_parse(s, n, NULL);
}

static json_t *parse_jansson(const char *s, size_t n)
{
	return json_loadb(s, n, JSON_ALLOW_NUL, NULL);
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Times admission_handle on one core; returns seconds per review (wall
 * clock) and sets *cpu to the CPU seconds per review (the same unless other
 * processes took the core meanwhile).
 */
static double time_handler(char **texts, const size_t *lens, int n, double secs, long passes,
			   struct engine_policyset *set, struct view_vpolset *vpols, int *allowed,
			   int *denied, double *cpu)
{
	struct view_state *st = view_state_new(set, NULL, NULL);
	struct admission_fixed_source fixed = {0};
	struct admission_handler_config hc = {0};
	struct admission_handler *h;
	/* gavel serve always counts (kyverno_admission_*, kyverno_policy_results_total) */
	struct metrics_registry *metrics = metrics_registry_new();
	double t0, t, c0;
	long done = 0;

	if (vpols)
		view_state_set_vpols(st, vpols);
	admission_fixed_source_init(&fixed, st);
	view_state_unref(st);
	hc.source = &fixed.source;
	hc.namespace = "gavel";
	hc.metrics = metrics;
	h = admission_handler_new(&hc);
	*allowed = *denied = 0;
	for (int i = 0; i < n; i++) {
		struct admission_reply r = {0};
		admission_handle(h, texts[i], lens[i], &r);
		if (r.http != 200)
			fprintf(stderr, "review_parse: review %d: HTTP %d: %s\n", i, r.http,
				r.body);
		else if (r.allowed)
			++*allowed;
		else
			++*denied;
		admission_reply_release(&r);
	}
	t0 = now_s();
	c0 = cpu_s();
	do {
		for (int i = 0; i < n; i++) {
			struct admission_reply r = {0};
			admission_handle(h, texts[i], lens[i], &r);
			admission_reply_release(&r);
		}
		done += n;
		t = now_s() - t0;
	} while (passes ? done < passes * n : t < secs);
	*cpu = (cpu_s() - c0) / (double)done;
	admission_handler_free(h);
	admission_fixed_source_release(&fixed);
	metrics_registry_free(metrics);
	return t / (double)done;
}

/*
 * The ClusterPolicies of paths as an engine set (*npolicies of them) and
 * their ValidatingPolicies as a CEL set (*nvpols; NULL when none).
 */
static struct engine_policyset *load_set(char **paths, int n, size_t *npolicies,
					 struct view_vpolset **vpols, size_t *nvpols)
{
	json_t *vdocs = json_array();
	struct load_paths files = {0};
	struct load_policies lp = {0};
	struct engine_policy **pols;
	struct engine_policyset *set;
	size_t k = 0;

	for (int i = 0; i < n; i++) {
		struct gv_err err = {0};
		if (load_expand(paths[i], &files, &err)) {
			fprintf(stderr, "review_parse: %s\n", err.msg);
			exit(2);
		}
	}
	for (size_t i = 0; i < files.n; i++)
		load_policies_file(&lp, files.v[i], false, NULL, NULL);
	pols = gv_xcalloc(lp.n + 1, sizeof(*pols));
	for (size_t i = 0; i < lp.n; i++) {
		if (lp.v[i].policy)
			pols[k++] = lp.v[i].policy;
		else if (lp.v[i].vpol)
			json_array_append(vdocs, (json_t *)vpol_doc(lp.v[i].vpol));
	}
	set = load_policyset_new(&lp, pols, k);
	*npolicies = k;
	*nvpols = json_array_size(vdocs);
	*vpols = *nvpols ? view_vpolset_new(vdocs, NULL) : NULL;
	json_decref(vdocs);
	free(pols);
	load_policies_release(&lp);
	load_paths_release(&files);
	return set;
}

int main(int argc, char **argv)
{
	int n = 64, npaths = 0;
	long passes = 0;
	double secs = 1.0, t_ours, t_jansson;
	const char *dir = NULL;
	char **paths = gv_xcalloc((size_t)argc, sizeof(*paths));
	char **texts;
	size_t *lens, total = 0, lo = (size_t)-1, hi = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int rc = 0;

	gv_init();
	json_object_seed(0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			n = (int)strtol(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			secs = strtod(argv[++i], NULL);
		} else if (!strcmp(argv[i], "--emit") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strcmp(argv[i], "--passes") && i + 1 < argc) {
			passes = strtol(argv[++i], NULL, 10);
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: review_parse [-n N] [--seconds S] [--emit DIR] "
					"[--passes P] [POLICY_PATH...]\n");
			return 2;
		} else {
			paths[npaths++] = argv[i];
		}
	}
	if (n < 2 || n > 100000 || secs <= 0 || passes < 0) {
		fprintf(stderr, "review_parse: want -n 2..100000, --seconds > 0, --passes >= 0\n");
		return 2;
	}
	if (cores < 1)
		cores = 1;
	texts = gv_xcalloc((size_t)n, sizeof(*texts));
	lens = gv_xcalloc((size_t)n, sizeof(*lens));
	for (int i = 0; i < n; i++) {
		texts[i] = review_text(i);
		lens[i] = strlen(texts[i]);
		total += lens[i];
		lo = lens[i] < lo ? lens[i] : lo;
		hi = lens[i] > hi ? lens[i] : hi;
	}
	if (dir && (rc = emit(texts, n, dir)))
		goto out;
	printf("reviews: %d Pod AdmissionReviews (%d compliant, %d violating), %.1f-%.1f KB, "
	       "mean %.1f KB%s%s\n",
	       n, (n + 1) / 2, n / 2, (double)lo / 1024, (double)hi / 1024,
	       (double)total / (double)n / 1024, dir ? ", written to " : "", dir ? dir : "");
	if (!passes || !npaths) {
		t_ours = time_per_review(texts, lens, n, secs, parse_ours);
		t_jansson = time_per_review(texts, lens, n, secs, parse_jansson);
		printf("JSON parse, one core: %.1f us per review (gv_json_parse, freeing "
		       "included; json_loadb: %.1f us)\n",
		       t_ours * 1e6, t_jansson * 1e6);
		printf("parse floor: %.0f reviews/s (%ld cores / %.1f us per review)\n",
		       (double)cores / t_ours, cores, t_ours * 1e6);
	}
	if (npaths) {
		size_t np = 0, nv = 0;
		int allowed, denied;
		double cpu;
		struct view_vpolset *vpols = NULL;
		struct engine_policyset *set = load_set(paths, npaths, &np, &vpols, &nv);
		double t =
		    time_handler(texts, lens, n, secs, passes, set, vpols, &allowed, &denied, &cpu);
		char what[96];

		if (nv)
			snprintf(what, sizeof(what), "%zu policies, %zu ValidatingPolicies", np,
				 nv);
		else
			snprintf(what, sizeof(what), "%zu policies", np);
		printf("handler, one core (%s): %.1f us per review (%.1f us CPU), %d "
		       "allowed, %d denied -> %.0f reviews/s on %ld cores, no network\n",
		       what, t * 1e6, cpu * 1e6, allowed, denied, (double)cores / t, cores);
		engine_policyset_unref(set);
		view_vpolset_unref(vpols);
	}
out:
	for (int i = 0; i < n; i++)
		free(texts[i]);
	free(texts);
	free(lens);
	free(paths);
	return rc;
}
