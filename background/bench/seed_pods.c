/*
 * seed_pods - creates many Pods in a local API server fast, for the
 * background scan benchmark (background/bench/scan_bench.sh).
 *
 *   seed_pods --kubeconfig F --pods N [--namespaces M] [--start I]
 *             [--concurrency C] [--prefix P]
 *
 * Creates the namespaces P-00 .. P-<M-1> (default bench, 100) when missing,
 * then Pods pod-<I> .. pod-<I+N-1> (Pod i in namespace i mod M), POSTed by C
 * threads (default 16), each with its own keep-alive connection
 * (kube_request). The Pods vary like real workloads: 1 to 3 containers,
 * init containers now and then, and roughly a third violate some
 * pod-security rule (privileged, hostNetwork, hostPID, hostPath, added
 * capabilities, no runAsNonRoot, no seccomp profile). A Pod that already
 * exists (409) counts as created. Prints one line:
 *
 *   seed: N Pods in M namespaces in S s (R/s), E errors
 *
 * Only loopback servers (127.0.0.1, ::1, localhost) are accepted: this is
 * a load generator. Exit 1 when some creates failed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "common/banned.h"

#define MAX_THREADS 128

struct seed {
	struct kube_client *client;
	const char *prefix;
	long start, count, namespaces;
	atomic_long next;
	atomic_long errors;
	atomic_flag first_error;
};

static unsigned mix(unsigned x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static json_t *container(const char *name, int port, unsigned r, bool bad)
{
	json_t *sc = json_pack("{s:b, s:b, s:{s:[s]}}", "allowPrivilegeEscalation", false,
			       "readOnlyRootFilesystem", true, "capabilities", "drop", "ALL");
	json_t *c;
	char pname[16];

	snprintf(pname, sizeof(pname), "p%d", port);
	if (bad) {
		switch (r % 4) {
		case 0:
			/* the API server refuses privileged without privilege escalation */
			json_object_set_new(sc, "privileged", json_true());
			json_object_set_new(sc, "allowPrivilegeEscalation", json_true());
			break;
		case 1:
			json_object_set_new(json_object_get(sc, "capabilities"), "add",
					    json_pack("[s]", "NET_ADMIN"));
			break;
		case 2:
			json_object_set_new(sc, "allowPrivilegeEscalation", json_true());
			break;
		default:
			json_object_set_new(sc, "runAsUser", json_integer(0));
			break;
		}
	}
	c = json_pack("{s:s, s:s, s:[{s:s, s:i}], s:[{s:s, s:s}], s:{s:{s:s, s:s}, s:{s:s, s:s}}, "
		      "s:o, s:[{s:s, s:s}]}",
		      "name", name, "image", "registry.example.com/shop/api:2.0.0", "ports", "name",
		      pname, "containerPort", port, "env", "name", "LOG_LEVEL", "value", "info",
		      "resources", "requests", "cpu", "100m", "memory", "128Mi", "limits", "cpu",
		      "500m", "memory", "512Mi", "securityContext", sc, "volumeMounts", "name",
		      "data", "mountPath", "/var/lib/app");
	return c;
}

static json_t *make_pod(const struct seed *s, long i)
{
	unsigned r = mix((unsigned)i * 2654435761U + 17);
	bool bad = r % 3 == 0;
	char name[64], ns[64], cname[32];
	json_t *containers = json_array(), *spec, *volumes;
	unsigned nc = 1 + (r >> 4) % 3;

	snprintf(name, sizeof(name), "pod-%06ld", i);
	snprintf(ns, sizeof(ns), "%s-%02ld", s->prefix, i % s->namespaces);
	for (unsigned c = 0; c < nc; c++) {
		snprintf(cname, sizeof(cname), "app-%u", c);
		json_array_append_new(containers,
				      container(cname, 8080 + (int)c, r >> 8, bad && c == 0));
	}
	volumes = json_pack("[{s:s, s:{}}]", "name", "data", "emptyDir");
	spec = json_pack("{s:o, s:o, s:i}", "containers", containers, "volumes", volumes,
			 "terminationGracePeriodSeconds", 30);
	if (!bad || (r >> 12) % 2)
		json_object_set_new(spec, "securityContext",
				    json_pack("{s:b, s:i, s:i, s:{s:s}}", "runAsNonRoot", true,
					      "runAsUser", 10001, "fsGroup", 10001,
					      "seccompProfile", "type", "RuntimeDefault"));
	if (bad && (r >> 14) % 5 == 0)
		json_object_set_new(spec, "hostNetwork", json_true());
	if (bad && (r >> 17) % 7 == 0)
		json_object_set_new(spec, "hostPID", json_true());
	if (bad && (r >> 20) % 6 == 0)
		json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name", "host",
							 "hostPath", "path", "/var/run"));
	if ((r >> 23) % 4 == 0)
		json_object_set_new(spec, "initContainers",
				    json_pack("[o]", container("init", 9090, r >> 9, false)));
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}}, s:o}", "apiVersion", "v1",
			 "kind", "Pod", "metadata", "name", name, "namespace", ns, "labels", "app",
			 "bench", "team", (r >> 5) % 4 ? "shop" : "data", "tier",
			 bad ? "legacy" : "web", "spec", spec);
}

static void *worker(void *ud)
{
	struct seed *s = ud;

	for (;;) {
		long i = atomic_fetch_add(&s->next, 1);
		json_t *pod;
		char *path;
		struct kube_status st;
		struct gv_err err = {0};

		if (i >= s->start + s->count)
			break;
		pod = make_pod(s, i);
		path =
		    gv_xasprintf("/api/v1/namespaces/%s-%02ld/pods", s->prefix, i % s->namespaces);
		if (kube_request(s->client, "POST", path, pod, NULL, &st, &err) && st.http != 409) {
			atomic_fetch_add(&s->errors, 1);
			if (!atomic_flag_test_and_set(&s->first_error))
				fprintf(stderr, "seed: %s\n", err.msg);
		}
		free(path);
		json_decref(pod);
	}
	return NULL;
}

static bool loopback(const char *server)
{
	static const char *const ok[] = {
	    "https://127.0.0.1:", "https://[::1]:", "https://localhost:",
	    "http://127.0.0.1:",  "http://[::1]:",  "http://localhost:"};

	for (size_t i = 0; i < GV_ARRAY_LEN(ok); i++)
		if (!strncmp(server, ok[i], strlen(ok[i])))
			return true;
	return false;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct seed s = {.prefix = "bench", .namespaces = 100};
	const char *kubeconfig = NULL;
	struct kube_config *cfg = NULL;
	struct gv_err err = {0};
	pthread_t th[MAX_THREADS];
	long conc = 16;
	int nth = 0, code = 2;
	double t0;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--kubeconfig") && v)
			kubeconfig = argv[++i];
		else if (!strcmp(argv[i], "--pods") && v)
			s.count = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--namespaces") && v)
			s.namespaces = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--start") && v)
			s.start = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--concurrency") && v)
			conc = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--prefix") && v)
			s.prefix = argv[++i];
		else {
			fprintf(stderr, "usage: seed_pods --kubeconfig F --pods N [--namespaces M] "
					"[--start I] [--concurrency C] [--prefix P]\n");
			return 2;
		}
	}
	if (s.count <= 0 || s.namespaces <= 0 || s.namespaces > 100000 || conc < 1 ||
	    conc > MAX_THREADS || s.start < 0) {
		fprintf(stderr, "seed: bad --pods, --namespaces, --start or --concurrency\n");
		return 2;
	}
	gv_init();
	gv_log_setup(GV_LOG_ERROR, 0);
	if (kube_config_load(kubeconfig, &cfg, &err)) {
		fprintf(stderr, "seed: %s\n", err.msg);
		return 2;
	}
	if (!loopback(cfg->server)) {
		fprintf(stderr, "seed: %s is not a loopback server: refusing to load it\n",
			cfg->server);
		goto out;
	}
	if (!(s.client = kube_client_new(cfg, &err))) {
		fprintf(stderr, "seed: %s\n", err.msg);
		goto out;
	}
	kube_client_set_retries(s.client, 5, 100, 2000);
	for (long n = 0; n < s.namespaces; n++) {
		json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
				       "Namespace", "metadata", "name", "");
		char name[64];
		struct kube_status st;

		snprintf(name, sizeof(name), "%s-%02ld", s.prefix, n);
		json_object_set_new(json_object_get(ns, "metadata"), "name", json_string(name));
		gv_err_clear(&err);
		if (kube_request(s.client, "POST", "/api/v1/namespaces", ns, NULL, &st, &err) &&
		    st.http != 409) {
			fprintf(stderr, "seed: namespace %s: %s\n", name, err.msg);
			json_decref(ns);
			goto out;
		}
		json_decref(ns);
	}
	atomic_init(&s.next, s.start);
	atomic_init(&s.errors, 0);
	atomic_flag_clear(&s.first_error);
	t0 = now();
	for (long i = 0; i < conc; i++)
		if (!pthread_create(&th[nth], NULL, worker, &s))
			nth++;
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	{
		double secs = now() - t0;
		long errors = atomic_load(&s.errors);
		printf("seed: %ld Pods in %ld namespaces in %.2f s (%.0f/s), %ld errors\n", s.count,
		       s.namespaces, secs, (double)s.count / (secs > 0 ? secs : 1), errors);
		code = errors ? 1 : 0;
	}
out:
	if (s.client)
		kube_client_free(s.client);
	kube_config_free(cfg);
	return code;
}
