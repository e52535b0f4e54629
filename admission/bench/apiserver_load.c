/*
 * apiserver_load - Pod CREATE latency through a real API server (`make
 * bench`, scripts/bench.sh), with or without gavel's webhook registered.
 *
 *   apiserver_load --kubeconfig F --namespace NS [--concurrency C]
 *                  [--seconds S] [--warmup S] [--label TEXT]
 *
 * C threads (default 16), each with its own keep-alive connection, POST
 * the same compliant Pod (metadata.generateName, so every request creates
 * a new Pod; about 2 KB; it passes the restricted pod-security profile and
 * gavel's sample policies) to /api/v1/namespaces/NS/pods for S seconds
 * (default 10) after a warm-up of S seconds (default 2, not counted), and
 * print one line:
 *
 *   LABEL: N creates in S s (R/s), p50 A ms, p99 B ms, max M ms, E errors
 *
 * An error is any answer other than 201 (the first one is printed). Expect
 * one now and then: when a generated name is already taken the API server
 * answers 500 ServerTimeout ("please try again"), about once in a few
 * thousand creates at this rate.
 * Figures are printed, never asserted. Only the server of the kubeconfig
 * is contacted (the benchmark runs it on 127.0.0.1).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>

#include "common/gv.h"
#include "kube/kube.h"
#include "common/banned.h"

#define MAX_THREADS 256

static const char POD[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"bench-\","
    "\"labels\":{\"app\":\"bench\",\"team\":\"bench\",\"app.kubernetes.io/part-of\":\"gavel-"
    "bench\"},\"annotations\":{\"prometheus.io/scrape\":\"true\"}},\"spec\":{\"securityContext\":"
    "{\"runAsNonRoot\":true,\"runAsUser\":10001,\"fsGroup\":10001,\"seccompProfile\":{\"type\":"
    "\"RuntimeDefault\"}},\"containers\":[{\"name\":\"app\",\"image\":\"registry.example.com/"
    "shop/api:2.0.0\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080}],\"env\":[{\"name\":"
    "\"LOG_LEVEL\",\"value\":\"info\"},{\"name\":\"REGION\",\"value\":\"eu-west-1\"}],"
    "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},\"limits\":{\"cpu\":"
    "\"500m\",\"memory\":\"512Mi\"}},\"securityContext\":{\"allowPrivilegeEscalation\":false,"
    "\"runAsNonRoot\":true,\"readOnlyRootFilesystem\":true,\"capabilities\":{\"drop\":[\"ALL\"]},"
    "\"seccompProfile\":{\"type\":\"RuntimeDefault\"}},\"volumeMounts\":[{\"name\":\"data\","
    "\"mountPath\":\"/var/lib/app\"}]}],\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}]}}";

struct run {
	const struct kube_config *cfg;
	char *url;
	double t_start, t_measure, t_end; /* monotonic seconds */
	atomic_int errors;
	atomic_flag first_error;
};

struct worker {
	pthread_t thread;
	struct run *run;
	double *lat; /* owned: seconds, counted requests only */
	size_t n, cap;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct sink {
	char buf[512];
	size_t n;
};

/* Keeps the start of the answer for the error message. */
static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t len = size * nmemb, room = sizeof(s->buf) - 1 - s->n;

	if (room) {
		size_t k = len < room ? len : room;
		memcpy(s->buf + s->n, p, k);
		s->n += k;
		s->buf[s->n] = '\0';
	}
	return len;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	const struct kube_config *cfg = r->cfg;
	struct curl_slist *hdrs = NULL;
	char *auth = NULL;
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (cfg->token) {
		auth = gv_xasprintf("Authorization: Bearer %s", cfg->token);
		hdrs = curl_slist_append(hdrs, auth);
	}
	curl_easy_setopt(c, CURLOPT_URL, r->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, POD);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(sizeof(POD) - 1));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	if (cfg->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
	if (cfg->ca_data) {
		struct curl_blob blob = {cfg->ca_data, strlen(cfg->ca_data), CURL_BLOB_COPY};
		curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
	}
	if (cfg->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, cfg->cert_file);
	if (cfg->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, cfg->key_file);
	if (cfg->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	for (;;) {
		struct sink s = {{0}, 0};
		double t0 = now_s(), t1;
		long code = 0;
		CURLcode cc;

		if (t0 >= r->t_end)
			break;
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
		cc = curl_easy_perform(c);
		t1 = now_s();
		if (cc == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		if (code != 201) {
			atomic_fetch_add(&r->errors, 1);
			if (!atomic_flag_test_and_set(&r->first_error))
				fprintf(stderr, "apiserver_load: first error: %s%ld %s\n",
					cc == CURLE_OK ? "HTTP " : curl_easy_strerror(cc), code,
					s.buf);
			continue;
		}
		if (t0 < r->t_measure || t1 > r->t_end)
			continue;
		if (w->n == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 4096;
			w->lat = gv_xrealloc(w->lat, w->cap * sizeof(*w->lat));
		}
		w->lat[w->n++] = t1 - t0;
	}
	curl_slist_free_all(hdrs);
	free(auth);
	curl_easy_cleanup(c);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *ns = NULL, *label = "apiserver";
	long conc = 16;
	double secs = 10, warmup = 2;
	struct kube_config *cfg = NULL;
	struct gv_err err = {0};
	struct worker *w;
	struct run r = {0};
	double *all;
	size_t n = 0;
	int rc = 0;

	gv_init();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr, "apiserver_load: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--kubeconfig"))
			kubeconfig = v;
		else if (!strcmp(a, "--namespace"))
			ns = v;
		else if (!strcmp(a, "--concurrency"))
			conc = strtol(v, NULL, 10);
		else if (!strcmp(a, "--seconds"))
			secs = strtod(v, NULL);
		else if (!strcmp(a, "--warmup"))
			warmup = strtod(v, NULL);
		else if (!strcmp(a, "--label"))
			label = v;
		else {
			fprintf(stderr,
				"usage: apiserver_load --kubeconfig F --namespace NS "
				"[--concurrency C] [--seconds S] [--warmup S] [--label T]\n");
			return 2;
		}
	}
	if (!ns || conc < 1 || conc > MAX_THREADS || secs <= 0 || secs > 600 || warmup < 0) {
		fprintf(stderr,
			"apiserver_load: want --namespace, --concurrency 1..%d, --seconds "
			"0..600\n",
			MAX_THREADS);
		return 2;
	}
	if (kube_config_load(kubeconfig, &cfg, &err)) {
		fprintf(stderr, "apiserver_load: %s\n", err.msg);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	{
		char *ens = kube_escape(ns);
		r.url = gv_xasprintf("%s/api/v1/namespaces/%s/pods", cfg->server, ens);
		free(ens);
	}
	r.cfg = cfg;
	atomic_init(&r.errors, 0);
	atomic_flag_clear(&r.first_error);
	r.t_start = now_s();
	r.t_measure = r.t_start + warmup;
	r.t_end = r.t_measure + secs;
	w = gv_xcalloc((size_t)conc, sizeof(*w));
	for (long i = 0; i < conc; i++) {
		w[i].run = &r;
		if (pthread_create(&w[i].thread, NULL, work, &w[i])) {
			fprintf(stderr, "apiserver_load: cannot start a thread\n");
			exit(2);
		}
	}
	for (long i = 0; i < conc; i++) {
		pthread_join(w[i].thread, NULL);
		n += w[i].n;
	}
	all = gv_xcalloc(n + 1, sizeof(*all));
	n = 0;
	for (long i = 0; i < conc; i++) {
		memcpy(all + n, w[i].lat, w[i].n * sizeof(*all));
		n += w[i].n;
		free(w[i].lat);
	}
	if (!n) {
		printf("%s: no request succeeded (%d errors)\n", label, atomic_load(&r.errors));
		rc = 1;
	} else {
		qsort(all, n, sizeof(*all), cmp_double);
		printf("%s: %zu creates in %.0f s (%.0f/s), p50 %.2f ms, p99 %.2f ms, max %.2f ms, "
		       "%d errors\n",
		       label, n, secs, (double)n / secs, pct(all, n, 0.50) * 1e3,
		       pct(all, n, 0.99) * 1e3, all[n - 1] * 1e3, atomic_load(&r.errors));
	}
	free(all);
	free(w);
	free(r.url);
	kube_config_free(cfg);
	curl_global_cleanup();
	return rc;
}
