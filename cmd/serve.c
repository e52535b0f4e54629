/*
 * serve.c - `gavel serve`: the validating admission webhook.
 *
 *   gavel serve [--kubeconfig F] [--policies DIR]... [--tls-dir D]
 *               [--listen ADDR:PORT] [--metrics-listen ADDR:PORT]
 *               [--namespace NS] [--threads N] [--log-level L]
 *               [--log-format text|json]
 *
 * Two modes:
 *   standalone  --policies given and no cluster configuration (no
 *               --kubeconfig, no $KUBECONFIG, not in a pod): the policies
 *               come from files (GitOps, benchmarks); SIGHUP reloads them.
 *   cluster     otherwise: policies, exceptions, namespace labels and the
 *               gavel ConfigMap come from the API server through
 *               background/snapshot; --policies adds file policies to them.
 *
 * The key pair is read from <tls-dir>/tls.crt and tls.key and reloaded when
 * the files change. SIGTERM/SIGINT: stop accepting, finish the requests in
 * flight, exit 0. Start-up failures print one line and exit 2.
 */
#include "cmd/cmd.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/admission.h"
#include "admission/metrics.h"
#include "background/snapshot.h"
#include "cmd/load.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "common/banned.h"

#define DEFAULT_TLS_DIR "/etc/gavel/tls"
#define GRACE_MS	25000 /* in-flight requests get this long after SIGTERM */
#define TLS_CHECK_EVERY 5     /* seconds between checks of the key pair files */

struct serve_opts {
	const char *kubeconfig;
	struct load_paths policies; /* as given */
	const char *tls_dir;
	const char *listen;
	const char *metrics_listen; /* "" = none */
	const char *namespace;
	unsigned threads;
	bool leader_elect; /* accepted for the Deployment's contract; the reconciler uses it */
	int log_level;
	int log_json;
};

static void serve_usage(FILE *f)
{
	fputs("usage: gavel serve [options]\n"
	      "\n"
	      "Serves the validating admission webhook (POST /validate, /validate-policy,\n"
	      "GET /healthz, /readyz over TLS) and Prometheus metrics (GET /metrics).\n"
	      "\n"
	      "options:\n"
	      "  --kubeconfig F        cluster configuration (default: $KUBECONFIG, in-cluster)\n"
	      "  --policies DIR        policy files or directories (repeatable); without a\n"
	      "                        cluster configuration gavel runs standalone on them\n"
	      "  --tls-dir D           directory with tls.crt and tls.key (default " DEFAULT_TLS_DIR
	      ")\n"
	      "  --listen ADDR:PORT    webhook address (default :9443)\n"
	      "  --metrics-listen A:P  metrics address (default :8000; \"\" = none)\n"
	      "  --namespace NS        gavel's namespace, never judged (default $POD_NAMESPACE,\n"
	      "                        else gavel)\n"
	      "  --leader-elect        take part in leader election (background scans)\n"
	      "  --threads N           worker threads (default: number of CPUs)\n"
	      "  --log-level L         debug, info, warn, error (default info)\n"
	      "  --log-format F        text or json (default text)\n",
	      f);
}

/* Matches --name VALUE and --name=VALUE. */
static bool take(int argc, char **argv, int *i, const char *name, const char **val, bool *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n))
		return false;
	if (a[n] == '=') {
		*val = a + n + 1;
		return true;
	}
	if (a[n])
		return false;
	if (*i + 1 >= argc) {
		*missing = true;
		return true;
	}
	*val = argv[++*i];
	return true;
}

/* Returns -1 to go on, else an exit code. */
static int parse_args(struct serve_opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			serve_usage(stdout);
			return 0;
		}
		if (take(argc, argv, &i, "--kubeconfig", &v, &missing)) {
			o->kubeconfig = v;
		} else if (take(argc, argv, &i, "--policies", &v, &missing)) {
			if (v)
				load_paths_add(&o->policies, v);
		} else if (take(argc, argv, &i, "--tls-dir", &v, &missing)) {
			o->tls_dir = v;
		} else if (take(argc, argv, &i, "--listen", &v, &missing)) {
			o->listen = v;
		} else if (take(argc, argv, &i, "--metrics-listen", &v, &missing)) {
			o->metrics_listen = v;
		} else if (take(argc, argv, &i, "--namespace", &v, &missing)) {
			o->namespace = v;
		} else if (!strcmp(argv[i], "--leader-elect")) {
			o->leader_elect = true;
		} else if (take(argc, argv, &i, "--threads", &v, &missing)) {
			char *end;
			long n = v ? strtol(v, &end, 10) : 0;
			if (v && (*end || n < 1 || n > 256)) {
				fprintf(stderr,
					"gavel serve: --threads: want a number from 1 to 256\n");
				return 2;
			}
			o->threads = (unsigned)n;
		} else if (take(argc, argv, &i, "--log-level", &v, &missing)) {
			if (v && (o->log_level = gv_log_parse_level(v)) < 0) {
				fprintf(
				    stderr,
				    "gavel serve: --log-level: want debug, info, warn or error\n");
				return 2;
			}
		} else if (take(argc, argv, &i, "--log-format", &v, &missing)) {
			if (v && strcmp(v, "text") && strcmp(v, "json")) {
				fprintf(stderr, "gavel serve: --log-format: want text or json\n");
				return 2;
			}
			o->log_json = v && !strcmp(v, "json");
		} else {
			fprintf(stderr, "gavel serve: unknown argument %s\n", argv[i]);
			serve_usage(stderr);
			return 2;
		}
		if (missing) {
			fprintf(stderr, "gavel serve: %s needs a value\n", argv[i]);
			return 2;
		}
	}
	return -1;
}

/*
 * Loads the policy files: valid policies go into *set (exceptions from the
 * files too) and, as references, into *pols; invalid ones are logged and
 * left out. Returns GV_OK unless a path cannot be read.
 */
static enum gv_code load_file_policies(const struct load_paths *given,
				       struct engine_policyset **set, struct engine_policy ***pols,
				       size_t *npols, struct gv_err *err)
{
	struct load_paths files = {0};
	struct load_policies lp = {0};
	enum gv_code rc = GV_OK;
	size_t n = 0;

	*set = NULL;
	*pols = NULL;
	*npols = 0;
	for (size_t i = 0; i < given->n; i++)
		if ((rc = load_expand(given->v[i], &files, err)))
			goto out;
	for (size_t i = 0; i < files.n; i++) {
		struct gv_err e = {0};
		char buf[2048];
		if (load_policies_file(&lp, files.v[i], false, NULL, &e))
			gv_warn("policies: %s", gv_err_str(&e, buf, sizeof(buf)));
	}
	*pols = gv_xcalloc(lp.n + 1, sizeof(**pols));
	for (size_t i = 0; i < lp.n; i++) {
		if (lp.v[i].policy)
			(*pols)[n++] = engine_policy_ref(lp.v[i].policy);
		else
			gv_warn("policies: %s %s not loaded: %s", lp.v[i].kind, lp.v[i].name,
				lp.v[i].error ? lp.v[i].error : "invalid");
	}
	*npols = n;
	*set = load_policyset_new(&lp, *pols, n);
	gv_info("policies: %zu loaded from %zu files (%zu invalid documents left out)", n, files.n,
		lp.nerrors);
out:
	load_policies_release(&lp);
	load_paths_release(&files);
	return rc;
}

static void unref_all(struct engine_policy **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		engine_policy_unref(v[i]);
	free(v);
}

static bool cluster_configured(const struct serve_opts *o)
{
	const char *kc = getenv("KUBECONFIG");
	const char *host = getenv("KUBERNETES_SERVICE_HOST");

	return o->kubeconfig || (kc && *kc) || (host && *host);
}

static int fail(const char *what, const struct gv_err *err)
{
	fprintf(stderr, "gavel serve: %s%s\n", what, err->msg);
	return 2;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_opts o = {.tls_dir = DEFAULT_TLS_DIR,
			       .listen = ":9443",
			       .metrics_listen = ":8000",
			       .namespace = "gavel",
			       .log_level = GV_LOG_INFO};
	struct metrics_registry *metrics = NULL;
	struct admission_queue *queue = NULL;
	struct admission_handler *handler = NULL;
	struct admission_server *server = NULL;
	struct admission_fixed_source fixed = {0};
	const struct admission_source *source;
	struct kube_config *kcfg = NULL;
	struct kube_client *client = NULL;
	struct snapshot *snap = NULL;
	struct engine_policyset *set = NULL;
	struct engine_policy **pols = NULL;
	size_t npols = 0;
	bool standalone;
	struct gv_err err = {0};
	sigset_t sigs;
	int code, sig;
	time_t last_tls_check;

	if (getenv("POD_NAMESPACE") && *getenv("POD_NAMESPACE"))
		o.namespace = getenv("POD_NAMESPACE");
	code = parse_args(&o, argc, argv);
	if (code >= 0)
		goto out;
	gv_log_setup((enum gv_log_level)o.log_level, o.log_json);
	standalone = o.policies.n && !cluster_configured(&o);
	if (o.leader_elect)
		gv_info("serve: --leader-elect: this build has no background reconciler yet; "
			"serving admission only");

	/* Signals are taken synchronously by this thread; every thread started below inherits the
	 * mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	code = 2;
	if (o.policies.n && load_file_policies(&o.policies, &set, &pols, &npols, &err)) {
		code = fail("--policies: ", &err);
		goto out;
	}
	if (standalone) {
		struct admission_state *st = admission_state_new(set, NULL, NULL);
		admission_fixed_source_init(&fixed, st);
		admission_state_unref(st);
		source = &fixed.source;
	} else {
		struct snapshot_config sc = {0};
		if (kube_config_load(o.kubeconfig, &kcfg, &err)) {
			code = fail("kubeconfig: ", &err);
			goto out;
		}
		client = kube_client_new(kcfg, &err);
		if (!client) {
			code = fail("kubeconfig: ", &err);
			goto out;
		}
		sc.client = client;
		sc.namespace = o.namespace;
		sc.static_policies = pols;
		sc.nstatic = npols;
		if (snapshot_start(&sc, &snap, &err)) {
			code = fail("cluster: ", &err);
			goto out;
		}
		source = snapshot_source(snap);
		/* The report writer of the background reconciler drains this queue. */
		queue = admission_queue_new(1024, ADMISSION_QUEUE_DROP_OLDEST);
	}

	metrics = metrics_registry_new();
	if (queue)
		admission_queue_register_metrics(queue, metrics);
	{
		struct admission_handler_config hc = {
		    .source = source, .namespace = o.namespace, .queue = queue, .metrics = metrics};
		handler = admission_handler_new(&hc);
	}
	{
		struct admission_server_config cfg = {
		    .handler = handler,
		    .listen = o.listen,
		    .tls_dir = o.tls_dir,
		    .metrics_listen = *o.metrics_listen ? o.metrics_listen : NULL,
		    .metrics = metrics,
		    .threads = o.threads,
		};
		if (admission_server_start(&cfg, &server, &err)) {
			code = fail("", &err);
			goto out;
		}
	}
	if (*o.metrics_listen)
		gv_info(
		    "serve: webhook listening on %s (port %u), metrics on %s (port %u), %s mode",
		    o.listen, admission_server_port(server), o.metrics_listen,
		    admission_server_metrics_port(server), standalone ? "standalone" : "cluster");
	else
		gv_info("serve: webhook listening on %s (port %u), %s mode", o.listen,
			admission_server_port(server), standalone ? "standalone" : "cluster");

	last_tls_check = time(NULL);
	for (;;) {
		struct timespec ts = {1, 0};
		sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig == SIGHUP && standalone) {
			struct engine_policyset *nset = NULL;
			struct engine_policy **npv = NULL;
			size_t nn = 0;
			struct gv_err e = {0};
			if (load_file_policies(&o.policies, &nset, &npv, &nn, &e)) {
				gv_warn("serve: SIGHUP: policies not reloaded: %s", e.msg);
			} else {
				struct admission_state *st = admission_state_new(nset, NULL, NULL);
				admission_fixed_source_set(&fixed, st);
				admission_state_unref(st);
				engine_policyset_unref(set);
				unref_all(pols, npols);
				set = nset;
				pols = npv;
				npols = nn;
				gv_info("serve: SIGHUP: policies reloaded");
			}
		}
		if (time(NULL) - last_tls_check >= TLS_CHECK_EVERY) {
			admission_server_reload_tls(server);
			last_tls_check = time(NULL);
		}
	}
	gv_info("serve: %s: stopping (finishing requests in flight)",
		sig == SIGTERM ? "SIGTERM" : "SIGINT");
	admission_server_stop(server, GRACE_MS);
	server = NULL;
	gv_info("serve: stopped");
	code = 0;
out:
	admission_server_stop(server, 0);
	admission_handler_free(handler);
	if (queue)
		admission_queue_close(queue);
	snapshot_stop(snap);
	admission_queue_free(queue);
	metrics_registry_free(metrics);
	if (fixed.lock)
		admission_fixed_source_release(&fixed);
	if (client)
		kube_client_free(client);
	if (kcfg)
		kube_config_free(kcfg);
	if (set)
		engine_policyset_unref(set);
	unref_all(pols, npols);
	load_paths_release(&o.policies);
	return code;
}
