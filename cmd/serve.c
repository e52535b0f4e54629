/*
 * serve.c - `gavel serve`: the validating admission webhook.
 *
 *   gavel serve [--kubeconfig F] [--policies DIR]... [--tls-dir D]
 *               [--listen ADDR:PORT] [--metrics-listen ADDR:PORT]
 *               [--namespace NS] [--threads N] [--log-level L]
 *               [--log-format text|json] [--manage-certs[=true|false]]
 *               [--webhook-config NAME] [--tls-secret NAME] [--service NAME]
 *               [--cert-ip IP]... [--cert-dns NAME]...
 *               [--max-connections-per-ip N] [--client-ca-file F]
 *
 * Two modes:
 *   standalone  --policies given and no cluster configuration (no
 *               --kubeconfig, no $KUBECONFIG, not in a pod): the policies
 *               come from files (GitOps, benchmarks); SIGHUP reloads them.
 *   cluster     otherwise: policies, exceptions, namespace labels and the
 *               gavel ConfigMap come from the API server through
 *               background/snapshot; --policies adds file policies to them.
 *               RoleBindings and ClusterRoleBindings (background/rbac) give
 *               request.roles and request.clusterRoles.
 *
 * The key pair is read from <tls-dir>/tls.crt and tls.key and reloaded when
 * the files change. SIGTERM/SIGINT: stop accepting, finish the requests in
 * flight, exit 0. Start-up failures print one line and exit 2.
 *
 * Certificates (cluster mode, --manage-certs, on by default there): the CA
 * and the serving pair live in the Secret <namespace>/<tls-secret>
 * (certs_secret_sync: created when missing, renewed when due). A missing
 * Secret is seeded from the material already in --tls-dir when it is still
 * good (`gavel certs generate`, a previous run), so a caBundle made from
 * those files stays valid. The pair and the CA bundle (never the CA key) are
 * written into --tls-dir when they differ from the files there, and the
 * server reloads them. The CA bundle is injected into every webhook of the
 * ValidatingWebhookConfiguration --webhook-config (certs_inject): at start,
 * whenever that object changes (watched by name, so a configuration created
 * or re-applied later gets its caBundle within a second or two), and with
 * the hourly check of the Secret. Several replicas may do all this at once:
 * the Secret write retries on conflicts and the injection is idempotent.
 * --manage-certs=false leaves --tls-dir, the Secret and the configuration
 * alone (certificates provided from outside, e.g. cert-manager).
 */
#include "cmd/cmd.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/admission.h"
#include "common/metrics.h"
#include "view/metrics.h"
#include "background/context.h"
#include "background/policystatus.h"
#include "background/reconciler.h"
#include "background/schedule.h"
#include "background/rbac.h"
#include "background/snapshot.h"
#include "background/webhookconfig.h"
#include "kube/events.h"
#include "certs/certs.h"
#include "cmd/load.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "common/banned.h"

#define DEFAULT_TLS_DIR	       "/etc/gavel/tls"
#define GRACE_MS	       25000 /* in-flight requests get this long after SIGTERM */
#define TLS_CHECK_EVERY	       5     /* seconds between checks of the key pair files */
#define CERTS_CHECK_EVERY      3600  /* seconds between checks of the Secret (renewal) */
#define CERTS_RETRY_EVERY      30 /* seconds before a failed Secret or caBundle write is retried */
#define DEFAULT_WEBHOOK_CONFIG "gavel"
#define DEFAULT_TLS_SECRET     "gavel-tls" /* manifests/rbac.yaml grants this name */
#define DEFAULT_SERVICE	       "gavel"

struct serve_opts {
	const char *kubeconfig;
	struct load_paths policies; /* as given */
	const char *tls_dir;
	const char *listen;
	const char *metrics_listen; /* "" = none */
	const char *namespace;
	unsigned threads;
	unsigned max_per_ip;		   /* 0 = the server's default */
	const char *client_ca_file;	   /* NULL = no client authentication */
	bool leader_elect;		   /* only the Lease holder scans and writes reports */
	long lease_ms, renew_ms, retry_ms; /* --leader-elect-*; 0 = leader.h's defaults */
	bool background;		   /* run the background reconciler (cluster mode) */
	const char *scan_interval;	   /* --background-scan-interval */
	int scan_batch, scan_workers;
	int incremental;	 /* 1 on (default), 0 off */
	int auto_webhooks;	 /* --auto-update-webhooks: 1 on (default), 0 off */
	const char *omit_events; /* --omit-events: NULL = PolicyApplied,PolicySkipped */
	long scan_limit;
	bool split_reports;
	bool resource_reports;	   /* --report-layout resource */
	const char *report_source; /* --report-source: NULL = gavel */
	unsigned allowed_results;  /* --allowed-results; 0 = all */
	bool allow_http_ns;	   /* --allow-http-in-namespaced-policies */
	int log_level;
	int log_json;
	int manage_certs;		     /* 1 on, 0 off, -1 default (on in cluster mode) */
	const char *webhook_config;	     /* "" = inject nowhere */
	const char *resource_webhook_config; /* --resource-webhook-config; "" = webhook_config */
	const char *tls_secret;
	const char *service;
	const char *cert_ips[CERTS_MAX_SANS];
	size_t n_cert_ips;
	const char *cert_dns[CERTS_MAX_SANS];
	size_t n_cert_dns;
};

static void serve_usage(FILE *f)
{
	fputs(
	    "usage: gavel serve [options]\n"
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
	    "  --max-connections-per-ip N  webhook connections one client address may hold\n"
	    "                        (default 512 of 1024; the API server keeps many)\n"
	    "  --client-ca-file F    require webhook clients to present a certificate signed\n"
	    "                        by a CA in F (PEM; default: no client authentication);\n"
	    "                        probes then go to /healthz, /readyz on --metrics-listen\n"
	    "  --leader-elect        take part in leader election (background scans)\n"
	    "  --leader-elect-lease-duration D  Lease duration (default 15s)\n"
	    "  --leader-elect-renew-deadline D  the leader stops scanning when it could not\n"
	    "                        renew for this long (default 10s)\n"
	    "  --leader-elect-retry-period D    between tries to acquire or renew (default 2s)\n"
	    "\n"
	    "background reconciler (cluster mode):\n"
	    "  --background=BOOL     scan existing objects and write PolicyReports (default true)\n"
	    "  --background-scan-interval D   global scan interval (default 1h; the\n"
	    "                        ConfigMap's backgroundScanInterval overrides it)\n"
	    "  --background-scan-batch-size N objects per list page (default 500)\n"
	    "  --background-scan-workers N    evaluation workers (default 2)\n"
	    "  --background-scan-resource-limit N  objects per scan cycle (default: no limit)\n"
	    "  --incremental-scan=BOOL        skip unchanged objects (default true)\n"
	    "  --split-policy-report          one report per policy and namespace\n"
	    "                        (= --report-layout policy)\n"
	    "  --report-layout L     namespace (default: one PolicyReport per namespace),\n"
	    "                        policy (one per policy and namespace), or resource\n"
	    "                        (one per resource, named by its uid, with scope and\n"
	    "                        ownerReferences, as Kyverno 1.11+ writes them)\n"
	    "  --reports-api A       wgpolicyk8s (default: wgpolicyk8s.io/v1alpha2\n"
	    "                        PolicyReport/ClusterPolicyReport) or openreports\n"
	    "                        (openreports.io/v1alpha1 Report/ClusterReport);\n"
	    "                        --openreportsEnabled[=BOOL] = openreports\n"
	    "  --report-source S     gavel (default) or kyverno: the source of kyverno.io\n"
	    "                        policies' results and the managed-by label of the\n"
	    "                        reports, as Kyverno writes them\n"
	    "  --allowed-results L   the results reports keep, e.g. fail,error (default:\n"
	    "                        pass,fail,warn,error,skip)\n"
	    "                        (a policy labelled reports.kyverno.io/disabled is\n"
	    "                        never reported)\n"
	    "  --allow-http-in-namespaced-policies=BOOL  let NamespacedValidatingPolicies\n"
	    "                        call http.Get/Post (default false, as Kyverno's\n"
	    "                        --allowHTTPInNamespacedPolicies)\n"
	    "  --omit-events LIST    Event reasons not written (default\n"
	    "                        PolicyApplied,PolicySkipped; \"\" = none); the ConfigMap\n"
	    "                        key omitEvents overrides it\n"
	    "  --auto-update-webhooks=BOOL    generate the resource webhooks of --webhook-config\n"
	    "                        from the policies (default true; false: leave them as\n"
	    "                        installed)\n"
	    "  --resource-webhook-config NAME  put the generated webhooks in this configuration\n"
	    "                        instead (made when missing; their clientConfig is copied\n"
	    "                        from --webhook-config's validate-policy.gavel.svc), as\n"
	    "                        Kyverno keeps its resource and policy webhooks apart\n"
	    "  --threads N           worker threads (default: CPUs gavel may run on)\n"
	    "  --log-level L         debug, info, warn, error (default info)\n"
	    "  --log-format F        text or json (default text)\n"
	    "\n"
	    "certificates (cluster mode):\n"
	    "  --manage-certs[=BOOL] keep the CA and serving pair in a Secret, write them into\n"
	    "                        --tls-dir, inject the CA into the webhook configuration and\n"
	    "                        renew before expiry (default true in cluster mode; false:\n"
	    "                        the files in --tls-dir are provided from outside)\n"
	    "  --webhook-config NAME ValidatingWebhookConfiguration to inject the CA into\n"
	    "                        (default " DEFAULT_WEBHOOK_CONFIG "; \"\" = none)\n"
	    "  --tls-secret NAME     Secret in --namespace (default " DEFAULT_TLS_SECRET ")\n"
	    "  --service NAME        Service named in the certificate (default " DEFAULT_SERVICE
	    ")\n"
	    "  --cert-ip IP          extra IP SAN (repeatable; the --listen address is added\n"
	    "                        when it is a specific IP)\n"
	    "  --cert-dns NAME       extra DNS SAN (repeatable)\n",
	    f);
}

/* Parses a boolean flag value; -1 when it is not one. */
static int parse_bool(const char *v)
{
	if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"))
		return 1;
	if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
		return 0;
	return -1;
}

/* Adds v to a list of at most CERTS_MAX_SANS; false when full. */
static bool add_san(const char **list, size_t *n, const char *v)
{
	if (*n >= CERTS_MAX_SANS)
		return false;
	list[(*n)++] = v;
	return true;
}

/* Returns -1 to go on, else an exit code. */
/* A non-negative decimal count; -1 when s is not one. */
/* A Go duration of whole seconds ("15s", "1m") into *ms; -1 with a message when bad. */
static int parse_lease_flag(const char *flag, const char *v, long *ms)
{
	struct schedule s;
	struct gv_err err = {0};

	if (schedule_parse_interval(v, &s, &err)) {
		fprintf(stderr, "gavel serve: %s: %s\n", flag, err.msg);
		return -1;
	}
	*ms = (long)s.interval * 1000;
	return 0;
}

static int parse_count(const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);

	if (!*s || *end || n < 0 || n > 100000000)
		return -1;
	return (int)n;
}

static int parse_args(struct serve_opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			serve_usage(stdout);
			return 0;
		}
		/* A bare --manage-certs means true: it never takes the next argument. */
		if (!strcmp(argv[i], "--manage-certs")) {
			o->manage_certs = 1;
		} else if (!strncmp(argv[i], "--manage-certs=", 15)) {
			if ((o->manage_certs = parse_bool(argv[i] + 15)) < 0) {
				fprintf(stderr,
					"gavel serve: --manage-certs: want true or false\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--webhook-config", NULL, &v, &missing)) {
			o->webhook_config = v;
		} else if (cmd_take(argc, argv, &i, "--resource-webhook-config", NULL, &v,
				    &missing)) {
			o->resource_webhook_config = v;
		} else if (cmd_take(argc, argv, &i, "--tls-secret", NULL, &v, &missing)) {
			if (v && !*v) {
				fprintf(stderr, "gavel serve: --tls-secret: empty name\n");
				return 2;
			}
			o->tls_secret = v;
		} else if (cmd_take(argc, argv, &i, "--service", NULL, &v, &missing)) {
			if (v && !*v) {
				fprintf(stderr, "gavel serve: --service: empty name\n");
				return 2;
			}
			o->service = v;
		} else if (cmd_take(argc, argv, &i, "--cert-ip", NULL, &v, &missing)) {
			if (v && !add_san(o->cert_ips, &o->n_cert_ips, v)) {
				fprintf(stderr, "gavel serve: too many --cert-ip\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--cert-dns", NULL, &v, &missing)) {
			if (v && !add_san(o->cert_dns, &o->n_cert_dns, v)) {
				fprintf(stderr, "gavel serve: too many --cert-dns\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--kubeconfig", NULL, &v, &missing)) {
			o->kubeconfig = v;
		} else if (cmd_take(argc, argv, &i, "--policies", NULL, &v, &missing)) {
			if (v)
				load_paths_add(&o->policies, v);
		} else if (cmd_take(argc, argv, &i, "--tls-dir", NULL, &v, &missing)) {
			o->tls_dir = v;
		} else if (cmd_take(argc, argv, &i, "--listen", NULL, &v, &missing)) {
			o->listen = v;
		} else if (cmd_take(argc, argv, &i, "--metrics-listen", NULL, &v, &missing)) {
			o->metrics_listen = v;
		} else if (cmd_take(argc, argv, &i, "--namespace", NULL, &v, &missing)) {
			o->namespace = v;
		} else if (!strcmp(argv[i], "--leader-elect")) {
			o->leader_elect = true;
		} else if (cmd_take(argc, argv, &i, "--leader-elect-lease-duration", NULL, &v,
				    &missing)) {
			if (v && parse_lease_flag("--leader-elect-lease-duration", v, &o->lease_ms))
				return 2;
		} else if (cmd_take(argc, argv, &i, "--leader-elect-renew-deadline", NULL, &v,
				    &missing)) {
			if (v && parse_lease_flag("--leader-elect-renew-deadline", v, &o->renew_ms))
				return 2;
		} else if (cmd_take(argc, argv, &i, "--leader-elect-retry-period", NULL, &v,
				    &missing)) {
			if (v && parse_lease_flag("--leader-elect-retry-period", v, &o->retry_ms))
				return 2;
		} else if (!strncmp(argv[i], "--background=", 13)) {
			int b = parse_bool(argv[i] + 13);
			if (b < 0) {
				fprintf(stderr, "gavel serve: --background: want true or false\n");
				return 2;
			}
			o->background = b;
		} else if (!strcmp(argv[i], "--incremental-scan")) {
			o->incremental = 1;
		} else if (!strncmp(argv[i], "--incremental-scan=", 19)) {
			if ((o->incremental = parse_bool(argv[i] + 19)) < 0) {
				fprintf(stderr,
					"gavel serve: --incremental-scan: want true or false\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--omit-events", "--omitEvents", &v,
				    &missing)) {
			unsigned mask;
			struct gv_err e = {0};
			if (v && !kube_events_parse_omit(v, &mask, &e)) {
				fprintf(stderr, "gavel serve: --omit-events: %s\n", e.msg);
				return 2;
			}
			o->omit_events = v;
		} else if (!strcmp(argv[i], "--auto-update-webhooks")) {
			o->auto_webhooks = 1;
		} else if (!strncmp(argv[i], "--auto-update-webhooks=", 23)) {
			if ((o->auto_webhooks = parse_bool(argv[i] + 23)) < 0) {
				fprintf(
				    stderr,
				    "gavel serve: --auto-update-webhooks: want true or false\n");
				return 2;
			}
		} else if (!strncmp(argv[i], "--allow-http-in-namespaced-policies", 35) ||
			   !strncmp(argv[i], "--allowHTTPInNamespacedPolicies", 31)) {
			const char *rest = argv[i] + (argv[i][7] == '-' ? 35 : 31);
			int b = !*rest ? 1 : *rest == '=' ? parse_bool(rest + 1) : -2;
			if (b == -2) {
				fprintf(stderr, "gavel serve: unknown argument %s\n", argv[i]);
				serve_usage(stderr);
				return 2;
			}
			if (b < 0) {
				fprintf(stderr, "gavel serve: %.*s: want true or false\n",
					(int)(rest - argv[i]), argv[i]);
				return 2;
			}
			o->allow_http_ns = b;
		} else if (!strcmp(argv[i], "--split-policy-report")) {
			o->split_reports = true;
		} else if (cmd_take(argc, argv, &i, "--report-layout", NULL, &v, &missing)) {
			if (v && !strcmp(v, "namespace")) {
				o->split_reports = o->resource_reports = false;
			} else if (v && !strcmp(v, "policy")) {
				o->split_reports = true;
				o->resource_reports = false;
			} else if (v && !strcmp(v, "resource")) {
				o->resource_reports = true;
			} else if (v) {
				fprintf(stderr,
					"gavel serve: --report-layout: want namespace, policy "
					"or resource\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--reports-api", NULL, &v, &missing)) {
			enum report_api_kind api = REPORT_WGPOLICYK8S;
			struct gv_err aerr = {0};
			if (v && report_api_parse(v, &api, &aerr)) {
				fprintf(stderr, "gavel serve: --reports-api: want wgpolicyk8s or "
						"openreports\n");
				return 2;
			}
			if (v)
				report_use_api(api);
		} else if (!strncmp(argv[i], "--openreportsEnabled", 20) &&
			   (!argv[i][20] || argv[i][20] == '=')) {
			int b = !argv[i][20] ? 1 : parse_bool(argv[i] + 21);
			if (b < 0) {
				fprintf(stderr,
					"gavel serve: --openreportsEnabled: want true or false\n");
				return 2;
			}
			report_use_api(b ? REPORT_OPENREPORTS : REPORT_WGPOLICYK8S);
		} else if (cmd_take(argc, argv, &i, "--report-source", NULL, &v, &missing)) {
			if (v && strcmp(v, "gavel") && strcmp(v, REPORT_SOURCE_KYVERNO)) {
				fprintf(stderr,
					"gavel serve: --report-source: want gavel or kyverno\n");
				return 2;
			}
			o->report_source =
			    v && !strcmp(v, REPORT_SOURCE_KYVERNO) ? REPORT_SOURCE_KYVERNO : NULL;
		} else if (cmd_take(argc, argv, &i, "--allowed-results", NULL, &v, &missing)) {
			struct gv_err e = {0};

			if (v && report_allowed_parse(v, &o->allowed_results, &e)) {
				fprintf(stderr, "gavel serve: --allowed-results: %s\n", e.msg);
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--background-scan-interval", NULL, &v,
				    &missing)) {
			o->scan_interval = v;
		} else if (cmd_take(argc, argv, &i, "--background-scan-batch-size", NULL, &v,
				    &missing)) {
			if (v && (o->scan_batch = parse_count(v)) <= 0) {
				fprintf(stderr, "gavel serve: --background-scan-batch-size: want a "
						"positive number\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--background-scan-workers", NULL, &v,
				    &missing)) {
			if (v &&
			    ((o->scan_workers = parse_count(v)) <= 0 || o->scan_workers > 64)) {
				fprintf(stderr,
					"gavel serve: --background-scan-workers: want 1 to 64\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--background-scan-resource-limit", NULL, &v,
				    &missing)) {
			if (v && (o->scan_limit = parse_count(v)) < 0) {
				fprintf(stderr, "gavel serve: --background-scan-resource-limit: "
						"want a number\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--max-connections-per-ip", NULL, &v,
				    &missing)) {
			int n = v ? parse_count(v) : 0;
			if (v && (n < 1 || n > 1000000)) {
				fprintf(stderr, "gavel serve: --max-connections-per-ip: want a "
						"number from 1 to 1000000\n");
				return 2;
			}
			o->max_per_ip = (unsigned)n;
		} else if (cmd_take(argc, argv, &i, "--client-ca-file", NULL, &v, &missing)) {
			if (v && !*v) {
				fprintf(stderr, "gavel serve: --client-ca-file: empty path\n");
				return 2;
			}
			o->client_ca_file = v;
		} else if (cmd_take(argc, argv, &i, "--threads", NULL, &v, &missing)) {
			char *end;
			long n = v ? strtol(v, &end, 10) : 0;
			if (v && (*end || n < 1 || n > 256)) {
				fprintf(stderr,
					"gavel serve: --threads: want a number from 1 to 256\n");
				return 2;
			}
			o->threads = (unsigned)n;
		} else if (cmd_take(argc, argv, &i, "--log-level", NULL, &v, &missing)) {
			if (v && (o->log_level = gv_log_parse_level(v)) < 0) {
				fprintf(
				    stderr,
				    "gavel serve: --log-level: want debug, info, warn or error\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--log-format", NULL, &v, &missing)) {
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
				       size_t *npols, struct view_vpolset **vset,
				       struct gv_err *err)
{
	json_t *vdocs = json_array();
	struct load_paths files = {0};
	struct load_policies lp = {0};
	enum gv_code rc = GV_OK;
	size_t n = 0;

	*set = NULL;
	*pols = NULL;
	*npols = 0;
	*vset = NULL;
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
		else if (lp.v[i].vpol && vpol_kind(lp.v[i].vpol) != VPOL_VAP)
			json_array_append(vdocs, (json_t *)vpol_doc(lp.v[i].vpol));
		else
			gv_warn("policies: %s %s not loaded: %s", lp.v[i].kind, lp.v[i].name,
				lp.v[i].error ? lp.v[i].error
				: lp.v[i].vpol
				    ? "a ValidatingAdmissionPolicy is enforced by the API server"
				: lp.v[i].unsupported ? lp.v[i].unsupported
						      : "invalid");
	}
	*npols = n;
	*set = load_policyset_new(&lp, *pols, n);
	if (json_array_size(vdocs)) {
		*vset = view_vpolset_new(vdocs, NULL);
		gv_info("policies: %zu ValidatingPolicies loaded from files",
			view_vpolset_count(*vset));
	}
	gv_info("policies: %zu loaded from %zu files (%zu invalid documents left out)", n, files.n,
		lp.nerrors);
out:
	json_decref(vdocs);
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

/* ---- certificates in cluster mode (--manage-certs) ---- */

struct certmgr {
	struct kube_client *client;		     /* borrowed */
	const char *ns, *secret, *webhook, *tls_dir; /* borrowed ("" webhook = none) */
	struct certs_request req;		     /* strings borrowed from the options */
	const char *ips[CERTS_MAX_SANS + 1];
	char listen_ip[64];
	char *ca;		     /* owned: the CA bundle now in force */
	struct kube_informer *watch; /* owned: the webhook configuration, by name */
	atomic_bool webhook_changed; /* set by the informer's thread */
	bool inject_due;	     /* the caBundle must be (re)written */
	time_t next_sync, next_inject;
};

/*
 * The IP of a --listen address when it names one specific address
 * ("127.0.0.1:9443", "[::1]:9443"), else "" (":9443", "0.0.0.0:9443").
 */
static void listen_ip(const char *listen, char *out, size_t n)
{
	const char *colon = strrchr(listen, ':');
	unsigned char addr[16];
	size_t len;

	out[0] = '\0';
	if (!colon || colon == listen)
		return;
	len = (size_t)(colon - listen);
	if (listen[0] == '[' && len >= 2 && listen[len - 1] == ']')
		snprintf(out, n, "%.*s", (int)(len - 2), listen + 1);
	else
		snprintf(out, n, "%.*s", (int)len, listen);
	if (!strcmp(out, "0.0.0.0") || !strcmp(out, "::") ||
	    (inet_pton(AF_INET, out, addr) != 1 && inet_pton(AF_INET6, out, addr) != 1))
		out[0] = '\0';
}

/* The material that goes into --tls-dir: never the CA's private key. */
static bool dir_differs(const struct certs_bundle *want, const struct certs_bundle *have)
{
	const char *w[] = {want->ca_crt, want->tls_crt, want->tls_key};
	const char *h[] = {have->ca_crt, have->tls_crt, have->tls_key};

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (!h[i] || strcmp(w[i], h[i]))
			return true;
	return false;
}

/*
 * Creates the Secret from the good material already in --tls-dir when the
 * Secret does not exist. Returns true when it did; false (nothing done)
 * when the Secret exists, the directory holds nothing usable or anything
 * fails: certs_secret_sync then does the usual.
 */
static bool certmgr_seed(struct certmgr *m, time_t now)
{
	char *ens = kube_escape(m->ns), *ename = kube_escape(m->secret);
	char *path = gv_xasprintf("/api/v1/namespaces/%s/secrets/%s", ens, ename);
	char *coll = gv_xasprintf("/api/v1/namespaces/%s/secrets", ens);
	struct certs_bundle b = {0};
	struct kube_status st = {0};
	struct gv_err err = {0};
	json_t *obj = NULL;
	unsigned ch = 0;
	bool seeded = false;

	if (!kube_request(m->client, "GET", path, NULL, &obj, &st, &err) || st.http != 404)
		goto out;
	if (certs_read_dir(m->tls_dir, &b, NULL) || !b.ca_crt || !b.ca_key || !b.tls_crt ||
	    !b.tls_key)
		goto out;
	/* Keeps what is still good (the CA at least), renews the rest. */
	if (certs_ensure(&b, &m->req, now, &ch, NULL) || (ch & CERTS_NEW_CA))
		goto out;
	obj = certs_secret_new(&b, m->ns, m->secret);
	if (kube_request(m->client, "POST", coll, obj, NULL, &st, &err))
		goto out; /* 409: another replica created it first; the sync reads theirs */
	gv_info("certs: created Secret %s/%s from the CA in %s%s", m->ns, m->secret, m->tls_dir,
		ch & CERTS_NEW_SERVING ? " (new serving certificate)" : "");
	seeded = true;
out:
	json_decref(obj);
	certs_bundle_release(&b);
	free(ens);
	free(ename);
	free(path);
	free(coll);
	return seeded;
}

/*
 * Brings the Secret up to date (creating or renewing) and --tls-dir in line
 * with it. A new CA bundle makes the caBundle due.
 */
static enum gv_code certmgr_sync(struct certmgr *m, time_t now, struct gv_err *err)
{
	struct certs_bundle b = {0}, have = {0};
	unsigned ch = 0;
	enum gv_code rc;

	certmgr_seed(m, now);
	rc = certs_secret_sync(m->client, m->ns, m->secret, &m->req, now, &b, &ch, err);
	if (rc) {
		gv_err_prefix(err, "Secret %s/%s: ", m->ns, m->secret);
		goto out;
	}
	free(b.ca_key); /* the CA key stays in the Secret */
	b.ca_key = NULL;
	certs_read_dir(m->tls_dir, &have, NULL);
	if (dir_differs(&b, &have)) {
		if ((rc = certs_write_dir(&b, m->tls_dir, err)))
			goto out;
		gv_info("certs: serving pair and CA from Secret %s/%s written to %s", m->ns,
			m->secret, m->tls_dir);
	}
	if (!m->ca || strcmp(m->ca, b.ca_crt)) {
		free(m->ca);
		m->ca = gv_xstrdup(b.ca_crt);
		m->inject_due = true;
		m->next_inject = 0;
	}
out:
	certs_bundle_release(&b);
	certs_bundle_release(&have);
	return rc;
}

static void certmgr_on_webhook(void *ud)
{
	struct certmgr *m = ud;

	atomic_store(&m->webhook_changed, true);
}

/* Writes the caBundle when due and the configuration exists. */
static void certmgr_inject(struct certmgr *m, time_t now)
{
	struct gv_err err = {0};
	json_t *cur;

	if (!*m->webhook || !m->ca)
		return;
	if (atomic_exchange(&m->webhook_changed, false)) {
		m->inject_due = true;
		m->next_inject = 0;
	}
	if (!m->inject_due || now < m->next_inject)
		return;
	/* Once the watch has listed, a configuration it does not hold does not exist yet. */
	if (m->watch && kube_informer_synced(m->watch)) {
		cur = kube_informer_get(m->watch, NULL, m->webhook);
		json_decref(cur);
		if (!cur) {
			gv_debug("certs: ValidatingWebhookConfiguration %s does not exist (yet)",
				 m->webhook);
			m->inject_due = false;
			return;
		}
	}
	if (certs_inject(m->client, m->webhook, m->ca, NULL, &err)) {
		gv_warn("certs: caBundle of %s not written (retrying in %d s): %s", m->webhook,
			CERTS_RETRY_EVERY, err.msg);
		m->next_inject = now + CERTS_RETRY_EVERY;
		return;
	}
	m->inject_due = false;
}

/*
 * Starts certificate management: the Secret, --tls-dir and the watch of the
 * webhook configuration. Fails (exit 2) only when the Secret cannot be
 * synced and --tls-dir has no key pair to serve meanwhile.
 */
static enum gv_code certmgr_start(struct certmgr *m, const struct serve_opts *o,
				  struct kube_client *client, struct gv_err *err)
{
	time_t now = time(NULL);
	size_t n = 0;

	m->client = client;
	m->ns = o->namespace;
	m->secret = o->tls_secret;
	m->webhook = o->webhook_config;
	m->tls_dir = o->tls_dir;
	atomic_init(&m->webhook_changed, false);
	for (size_t i = 0; i < o->n_cert_ips; i++)
		m->ips[n++] = o->cert_ips[i];
	listen_ip(o->listen, m->listen_ip, sizeof(m->listen_ip));
	if (m->listen_ip[0]) {
		bool have = false;
		for (size_t i = 0; i < n; i++)
			have = have || !strcmp(m->ips[i], m->listen_ip);
		if (!have && n < CERTS_MAX_SANS)
			m->ips[n++] = m->listen_ip;
	}
	m->req.service = o->service;
	m->req.namespace = o->namespace;
	m->req.dns = o->cert_dns;
	m->req.n_dns = o->n_cert_dns;
	m->req.ips = m->ips;
	m->req.n_ips = n;

	if (certmgr_sync(m, now, err)) {
		struct certs_bundle have = {0};
		bool usable =
		    !certs_read_dir(m->tls_dir, &have, NULL) && have.tls_crt && have.tls_key;

		certs_bundle_release(&have);
		if (!usable)
			return err->code;
		gv_warn("certs: %s; serving the key pair in %s meanwhile, retrying in %d s",
			err->msg, m->tls_dir, CERTS_RETRY_EVERY);
		gv_err_clear(err);
		m->next_sync = now + CERTS_RETRY_EVERY;
	} else {
		m->next_sync = now + CERTS_CHECK_EVERY;
	}
	if (*m->webhook) {
		char *ename = kube_escape(m->webhook);
		char *path = gv_xasprintf(
		    "/apis/admissionregistration.k8s.io/v1/"
		    "validatingwebhookconfigurations?fieldSelector=metadata.name%%3D%s",
		    ename);

		m->watch = kube_informer_start(client, path, certmgr_on_webhook, m);
		free(ename);
		free(path);
		/* So that the first injection knows whether the configuration exists. */
		if (m->watch)
			kube_informer_wait_synced(m->watch, 5000);
	}
	gv_info("certs: managed in Secret %s/%s, caBundle of %s", m->ns, m->secret,
		*m->webhook ? m->webhook : "(none)");
	return GV_OK;
}

/* Called about once a second from the main loop. Returns true when --tls-dir may have changed. */
static bool certmgr_tick(struct certmgr *m, time_t now)
{
	bool synced = false;

	if (now >= m->next_sync) {
		struct gv_err err = {0};
		if (certmgr_sync(m, now, &err)) {
			gv_warn("certs: %s (retrying in %d s)", err.msg, CERTS_RETRY_EVERY);
			m->next_sync = now + CERTS_RETRY_EVERY;
		} else {
			m->next_sync = now + CERTS_CHECK_EVERY;
			/* Hourly: also repair a caBundle someone changed while no event came. */
			m->inject_due = true;
			synced = true;
		}
	}
	certmgr_inject(m, now);
	return synced;
}

static void certmgr_stop(struct certmgr *m)
{
	if (m->watch)
		kube_informer_stop(m->watch);
	m->watch = NULL;
	free(m->ca);
	m->ca = NULL;
}

/* kyverno_policy_rule_info_total at each scrape, from the state the handler judges with. */
static void rule_info_collect(void *ud, struct gv_buf *out)
{
	const struct admission_source *src = ud;
	struct view_state *st = src->acquire(src->ud);

	view_policy_rule_info_render(st, out);
	if (st)
		view_state_unref(st);
}

/* The handler's state source in cluster mode: the snapshot's current state. */
static struct view_state *snapshot_acquire(void *ud)
{
	return snapshot_state(ud);
}

/* How long a resource request waits for a policy write gavel just admitted. */
#define FRESH_WAIT_MS 2000

static struct view_state *snapshot_acquire_fresh(void *ud, const char *namespace)
{
	return snapshot_state_fresh(ud, FRESH_WAIT_MS, namespace);
}

static void snapshot_written(void *ud, const json_t *object, const json_t *old_object)
{
	snapshot_expect(ud, object, old_object);
}

#define KIND_RETRIES  4
#define KIND_RETRY_NS 500000000L

/* Whether the API server serves a kind as a policy names it (the handler's kind_known). */
static bool kind_served(void *ud, const char *kind)
{
	json_t *parts = webhookconfig_resolve_discovery(ud, kind);
	bool yes = parts != NULL;

	/*
	 * A CRD installed a moment ago: ask the server again, a few times (its
	 * group may reach discovery a little after the CRD is Established).
	 */
	for (int i = 0; !yes && i < KIND_RETRIES; i++) {
		if (i)
			nanosleep(&(struct timespec){0, KIND_RETRY_NS}, NULL);
		kube_discovery_invalidate(ud);
		parts = webhookconfig_resolve_discovery(ud, kind);
		yes = parts != NULL;
	}

	json_decref(parts);
	return yes;
}

/* The handler's resource_kind: the Kind the API server lists for a resource. */
static char *resource_kind(void *ud, const char *group, const char *version, const char *resource)
{
	char *path =
	    *group ? gv_xasprintf("/apis/%s/%s", group, version) : gv_xasprintf("/api/%s", version);
	json_t *list = NULL;
	const json_t *r;
	char *kind = NULL;
	size_t i;

	if (!kube_request(ud, "GET", path, NULL, &list, NULL, NULL)) {
		json_array_foreach(json_object_get(list, "resources"), i, r)
		{
			const char *n = json_string_value(json_object_get(r, "name"));
			const char *k = json_string_value(json_object_get(r, "kind"));
			if (n && k && !strcmp(n, resource)) {
				kind = gv_xstrdup(k);
				break;
			}
		}
	}
	json_decref(list);
	free(path);
	return kind;
}

/* The handler's emit callback: its audit results go to the report writer's queue. */
static void queue_emit(void *ud, struct view_audit_item *item)
{
	audit_queue_push(ud, item);
}

int cmd_serve(int argc, char **argv)
{
	struct serve_opts o = {.tls_dir = DEFAULT_TLS_DIR,
			       .listen = ":9443",
			       .metrics_listen = ":8000",
			       .namespace = "gavel",
			       .log_level = GV_LOG_INFO,
			       .manage_certs = -1,
			       .webhook_config = DEFAULT_WEBHOOK_CONFIG,
			       .resource_webhook_config = "",
			       .tls_secret = DEFAULT_TLS_SECRET,
			       .service = DEFAULT_SERVICE,
			       .background = true,
			       .incremental = 1,
			       .auto_webhooks = 1};
	struct metrics_registry *metrics = NULL;
	struct reconciler *recon = NULL;
	struct policystatus *pstatus = NULL;
	struct webhookconfig *whconf = NULL;
	struct kube_events *events = NULL;
	struct metrics_family *events_dropped = NULL;
	uint64_t dropped_seen = 0;
	unsigned omit_flag = KUBE_EVENTS_OMIT_DEFAULT;
	struct audit_queue *queue = NULL;
	struct admission_handler *handler = NULL;
	struct admission_server *server = NULL;
	struct admission_fixed_source fixed = {0};
	struct admission_source snap_source = {.acquire = snapshot_acquire,
					       .acquire_fresh = snapshot_acquire_fresh,
					       .written = snapshot_written};
	const struct admission_source *source;
	struct kube_config *kcfg = NULL;
	struct kube_client *client = NULL;
	struct snapshot *snap = NULL;
	struct rbac_cache *rbac = NULL;
	struct context_loader *ctxl = NULL;
	struct certmgr certs = {0};
	bool manage_certs = false;
	struct engine_policyset *set = NULL;
	struct view_vpolset *fvpols = NULL;
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
	if (standalone && o.manage_certs == 1) {
		fprintf(stderr, "gavel serve: --manage-certs needs a cluster (--kubeconfig, "
				"$KUBECONFIG or in-cluster configuration)\n");
		code = 2;
		goto out;
	}
	manage_certs = !standalone && o.manage_certs != 0;

	/* Signals are taken synchronously by this thread; every thread started below inherits the
	 * mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	code = 2;
	if (o.policies.n && load_file_policies(&o.policies, &set, &pols, &npols, &fvpols, &err)) {
		code = fail("--policies: ", &err);
		goto out;
	}
	if (fvpols && !standalone)
		gv_warn("policies: ValidatingPolicies of --policies files are judged in standalone "
			"mode only; in cluster mode create them in the cluster");
	if (standalone) {
		struct view_state *st = view_state_new(set, NULL, NULL);
		view_state_set_vpols(st, fvpols);
		admission_fixed_source_init(&fixed, st);
		view_state_unref(st);
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
		ctxl = context_loader_new(
		    &(struct context_options){.client = client,
					      .kube = kcfg,
					      .namespace = o.namespace,
					      .allow_http_namespaced = o.allow_http_ns});
		sc.client = client;
		sc.namespace = o.namespace;
		sc.static_policies = pols;
		sc.nstatic = npols;
		if (snapshot_start(&sc, &snap, &err)) {
			code = fail("cluster: ", &err);
			goto out;
		}
		snap_source.ud = snap;
		source = &snap_source;
		if (rbac_cache_start(client, &rbac, &err)) {
			code = fail("cluster: ", &err);
			goto out;
		}
		if (manage_certs && certmgr_start(&certs, &o, client, &err)) {
			code = fail("certs: ", &err);
			goto out;
		}
		if (o.omit_events)
			kube_events_parse_omit(o.omit_events, &omit_flag, NULL);
		events = kube_events_start(client, omit_flag);
		/* The report writer of the background reconciler drains this queue. */
		queue = audit_queue_new(1024, AUDIT_QUEUE_DROP_OLDEST);
	}

	metrics = metrics_registry_new();
	snapshot_set_metrics(snap, metrics);
	metrics_registry_add_collector(metrics, rule_info_collect, (void *)source);
	if (queue)
		audit_queue_register_metrics(queue, metrics);
	{
		struct admission_handler_config hc = {
		    .source = source, .namespace = o.namespace, .metrics = metrics};
		if (queue) {
			hc.emit = queue_emit;
			hc.emit_ud = queue;
		}
		hc.roles = rbac ? rbac_cache_source(rbac) : NULL;
		hc.context = ctxl ? context_loader_source(ctxl) : NULL;
		hc.events = events;
		if (client) {
			hc.kind_known = kind_served;
			hc.kind_known_ud = client;
			hc.resource_kind = resource_kind;
			hc.resource_kind_ud = client;
		}
		handler = admission_handler_new(&hc);
		if (events)
			events_dropped =
			    metrics_counter_new(metrics, "gavel_events_dropped_total",
						"Events not written because the queue was full.",
						(const char *const[]){NULL});
	}
	{
		struct admission_server_config cfg = {
		    .handler = handler,
		    .listen = o.listen,
		    .tls_dir = o.tls_dir,
		    .metrics_listen = *o.metrics_listen ? o.metrics_listen : NULL,
		    .metrics = metrics,
		    .threads = o.threads,
		    .max_per_ip = o.max_per_ip,
		    .client_ca_file = o.client_ca_file,
		};
		if (admission_server_start(&cfg, &server, &err)) {
			code = fail("", &err);
			goto out;
		}
	}
	if (!standalone && o.background) {
		struct reconciler_config rc = {
		    .client = client,
		    .kube = kcfg,
		    .snapshot = snap,
		    .queue = queue,
		    .metrics = metrics,
		    .context = context_loader_source(ctxl),
		    .events = events,
		    .namespace = o.namespace,
		    .interval = o.scan_interval,
		    .batch_size = o.scan_batch,
		    .workers = o.scan_workers,
		    .incremental = o.incremental != 0,
		    .resource_limit = (size_t)(o.scan_limit > 0 ? o.scan_limit : 0),
		    .split = o.split_reports,
		    .resource_reports = o.resource_reports,
		    .report_source = o.report_source,
		    .allowed_results = o.allowed_results,
		    .leader_elect = o.leader_elect,
		    .lease_duration_ms = o.lease_ms,
		    .renew_deadline_ms = o.renew_ms,
		    .retry_period_ms = o.retry_ms,
		};
		if (reconciler_start(&rc, &recon, &err)) {
			code = fail("background: ", &err);
			goto out;
		}
		if (o.auto_webhooks && *o.webhook_config) {
			const char *res = *o.resource_webhook_config ? o.resource_webhook_config
								     : o.webhook_config;
			whconf = webhookconfig_start(&(struct webhookconfig_config){
			    .client = client,
			    .snapshot = snap,
			    .leader = recon,
			    .name = res,
			    .template_name =
				strcmp(res, o.webhook_config) ? o.webhook_config : NULL,
			    .namespace = o.namespace,
			});
		}
		pstatus = policystatus_start(&(struct policystatus_config){
		    .client = client,
		    .snapshot = snap,
		    .leader = recon,
		    .webhooks = whconf,
		    .namespace = o.namespace,
		    .interval = o.scan_interval,
		});
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
			struct view_vpolset *nv = NULL;
			struct gv_err e = {0};
			if (load_file_policies(&o.policies, &nset, &npv, &nn, &nv, &e)) {
				gv_warn("serve: SIGHUP: policies not reloaded: %s", e.msg);
			} else {
				struct view_state *st = view_state_new(nset, NULL, NULL);
				view_state_set_vpols(st, nv);
				view_vpolset_unref(nv);
				admission_fixed_source_set(&fixed, st);
				view_state_unref(st);
				engine_policyset_unref(set);
				unref_all(pols, npols);
				set = nset;
				pols = npv;
				npols = nn;
				gv_info("serve: SIGHUP: policies reloaded");
			}
		}
		if (events) {
			/* ConfigMap key omitEvents over the flag; the drop counter. */
			json_t *data = snapshot_config_data(snap);
			const char *cm = json_string_value(json_object_get(data, "omitEvents"));
			unsigned mask = omit_flag;
			uint64_t d = kube_events_dropped(events);
			if (cm && !kube_events_parse_omit(cm, &mask, NULL))
				mask = omit_flag;
			kube_events_set_omit(events, mask);
			json_decref(data);
			if (d > dropped_seen)
				metrics_add(events_dropped, (const char *const[]){NULL},
					    (double)(d - dropped_seen));
			dropped_seen = d;
		}
		if (manage_certs && certmgr_tick(&certs, time(NULL)))
			admission_server_reload_tls(server);
		if (time(NULL) - last_tls_check >= TLS_CHECK_EVERY) {
			admission_server_reload_tls(server);
			last_tls_check = time(NULL);
		}
	}
	gv_info("serve: %s: stopping (finishing requests in flight)",
		sig == SIGTERM ? "SIGTERM" : "SIGINT");
	/* The reconciler finishes its write and releases the Lease first. */
	policystatus_stop(pstatus);
	pstatus = NULL;
	webhookconfig_stop(whconf);
	whconf = NULL;
	reconciler_stop(recon);
	recon = NULL;
	admission_server_stop(server, GRACE_MS);
	server = NULL;
	kube_events_stop(events);
	events = NULL;
	gv_info("serve: stopped");
	code = 0;
out:
	policystatus_stop(pstatus);
	admission_server_stop(server, 0);
	server = NULL;
	kube_events_stop(events);
	webhookconfig_stop(whconf);
	reconciler_stop(recon);
	admission_server_stop(server, 0);
	admission_handler_free(handler);
	if (queue)
		audit_queue_close(queue);
	certmgr_stop(&certs);
	rbac_cache_stop(rbac);
	snapshot_stop(snap);
	context_loader_free(ctxl);
	audit_queue_free(queue);
	metrics_registry_free(metrics);
	if (fixed.lock)
		admission_fixed_source_release(&fixed);
	if (client)
		kube_client_free(client);
	if (kcfg)
		kube_config_free(kcfg);
	if (set)
		engine_policyset_unref(set);
	view_vpolset_unref(fvpols);
	unref_all(pols, npols);
	load_paths_release(&o.policies);
	return code;
}
