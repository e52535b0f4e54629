/*
 * reconciler_driver - starts the background reconciler the way `gavel
 * serve` does in cluster mode (kube client, snapshot, admission report
 * queue, metrics registry, reconciler), without the webhook server. For
 * e2e/background.sh, which builds it against build/libgavel.a:
 *
 *   reconciler_driver --kubeconfig F [--namespace NS] [--interval D]
 *       [--leader-elect] [--identity ID] [--lease-ms N] [--renew-ms N]
 *       [--retry-ms N] [--split] [--batch N] [--workers N] [--limit N]
 *       [--incremental=false] [--tick-ms N] [--flush-ms N]
 *       [--metrics FILE] [--log-level L]
 *
 * --metrics FILE: the rendered metrics are written to FILE (atomically,
 * through FILE.tmp) about every second. SIGTERM/SIGINT: reconciler_stop
 * (releases the Lease), exit 0. SIGKILL it to simulate a crash.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "background/audit_queue.h"
#include "common/metrics.h"
#include "background/reconciler.h"
#include "background/snapshot.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "common/banned.h"

static void dump_metrics(struct metrics_registry *m, const char *file)
{
	struct gv_buf b = {0};
	char *tmp = gv_xasprintf("%s.tmp", file);
	FILE *f = fopen(tmp, "w");

	if (f) {
		metrics_render(m, &b);
		fputs(gv_buf_str(&b), f);
		fclose(f);
		rename(tmp, file);
	}
	gv_buf_release(&b);
	free(tmp);
}

static long num(const char *v)
{
	return v ? strtol(v, NULL, 10) : 0;
}

int main(int argc, char **argv)
{
	struct reconciler_config rc = {.incremental = true};
	const char *kubeconfig = NULL, *metrics_file = NULL;
	struct kube_config *kcfg = NULL;
	struct kube_client *client = NULL;
	struct snapshot *snap = NULL;
	struct audit_queue *queue = NULL;
	struct metrics_registry *metrics = NULL;
	struct reconciler *r = NULL;
	struct snapshot_config sc = {0};
	struct gv_err err = {0};
	int level = GV_LOG_INFO, code = 2;
	sigset_t sigs;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--kubeconfig") && v) {
			kubeconfig = v;
			i++;
		} else if (!strcmp(a, "--namespace") && v) {
			rc.namespace = v;
			i++;
		} else if (!strcmp(a, "--interval") && v) {
			rc.interval = v;
			i++;
		} else if (!strcmp(a, "--leader-elect")) {
			rc.leader_elect = true;
		} else if (!strcmp(a, "--identity") && v) {
			rc.identity = v;
			i++;
		} else if (!strcmp(a, "--lease-ms") && v) {
			rc.lease_duration_ms = num(v);
			i++;
		} else if (!strcmp(a, "--renew-ms") && v) {
			rc.renew_deadline_ms = num(v);
			i++;
		} else if (!strcmp(a, "--retry-ms") && v) {
			rc.retry_period_ms = num(v);
			i++;
		} else if (!strcmp(a, "--split")) {
			rc.split = true;
		} else if (!strcmp(a, "--batch") && v) {
			rc.batch_size = (int)num(v);
			i++;
		} else if (!strcmp(a, "--workers") && v) {
			rc.workers = (int)num(v);
			i++;
		} else if (!strcmp(a, "--limit") && v) {
			rc.resource_limit = (size_t)num(v);
			i++;
		} else if (!strcmp(a, "--incremental=false")) {
			rc.incremental = false;
		} else if (!strcmp(a, "--tick-ms") && v) {
			rc.tick_ms = num(v);
			i++;
		} else if (!strcmp(a, "--flush-ms") && v) {
			rc.flush_ms = num(v);
			i++;
		} else if (!strcmp(a, "--metrics") && v) {
			metrics_file = v;
			i++;
		} else if (!strcmp(a, "--log-level") && v) {
			level = gv_log_parse_level(v);
			i++;
		} else {
			fprintf(stderr, "reconciler_driver: bad argument %s\n", a);
			return 2;
		}
	}
	gv_init();
	gv_log_setup(level < 0 ? GV_LOG_INFO : (enum gv_log_level)level, 0);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (kube_config_load(kubeconfig, &kcfg, &err) || !(client = kube_client_new(kcfg, &err))) {
		fprintf(stderr, "reconciler_driver: kubeconfig: %s\n", err.msg);
		goto out;
	}
	sc.client = client;
	sc.namespace = rc.namespace;
	if (snapshot_start(&sc, &snap, &err)) {
		fprintf(stderr, "reconciler_driver: cluster: %s\n", err.msg);
		goto out;
	}
	queue = audit_queue_new(1024, AUDIT_QUEUE_DROP_OLDEST);
	metrics = metrics_registry_new();
	rc.client = client;
	rc.kube = kcfg;
	rc.snapshot = snap;
	rc.queue = queue;
	rc.metrics = metrics;
	if (reconciler_start(&rc, &r, &err)) {
		fprintf(stderr, "reconciler_driver: %s\n", err.msg);
		goto out;
	}
	for (;;) {
		struct timespec ts = {1, 0};
		int sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (metrics_file)
			dump_metrics(metrics, metrics_file);
	}
	gv_info("driver: stopping");
	code = 0;
out:
	reconciler_stop(r);
	if (queue)
		audit_queue_close(queue);
	snapshot_stop(snap);
	audit_queue_free(queue);
	metrics_registry_free(metrics);
	if (client)
		kube_client_free(client);
	if (kcfg)
		kube_config_free(kcfg);
	return code;
}
