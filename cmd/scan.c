/*
 * scan.c - `gavel scan`: one background scan of every background policy
 * now, without leader election or schedules.
 *
 *   gavel scan [--kubeconfig F] [--dry-run] [-o yaml|json] [--namespace NS]
 *              [--split-policy-report] [--background-scan-batch-size N]
 *              [--background-scan-workers N] [--background-scan-resource-limit N]
 *              [--log-level L]
 *
 * Reads the policies (ClusterPolicy, Policy, ValidatingPolicy,
 * NamespacedValidatingPolicy, ValidatingAdmissionPolicy and its bindings
 * when served), exceptions, namespaces and gavel's ConfigMap once,
 * then scans namespace by namespace in bounded memory (background/nsscan.h,
 * the same scan the reconciler of `gavel serve` runs), then every policy's
 * last scan goes to the scan-state ConfigMap. --dry-run writes nothing and
 * prints the reports as they would be (YAML unless -o json); -o prints
 * them after writing. A summary line goes to stderr:
 *
 *   gavel scan: P policies, N objects (E evaluated, U unchanged, F filtered,
 *   X failed), R results in the reports; reports: C created, U updated,
 *   D deleted, K unchanged (I read); Q API requests; S s (policies A s,
 *   reading reports B s, scan C s: lists D s, evaluation E s, merge F s;
 *   writing G s)
 *
 * (the phase times are summed over the namespaces, so with namespaces
 * side by side they can add up to more than S).
 *
 * Exit 0 on success, 1 when some objects could not be evaluated or some
 * kinds were skipped (403), 2 on usage errors and when the API server
 * cannot be used (the namespaces done before keep their reports written).
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "background/context.h"
#include "background/nsscan.h"
#include "background/report.h"
#include "common/gv.h"
#include "common/log.h"
#include "common/yaml.h"
#include "kube/kube.h"
#include "common/banned.h"

static void usage(FILE *f)
{
	fputs(
	    "usage: gavel scan [options]\n"
	    "\n"
	    "Scans every background policy now (no leader election, no schedules) and\n"
	    "writes gavel's PolicyReports and ClusterPolicyReports.\n"
	    "\n"
	    "options:\n"
	    "  --kubeconfig F                       cluster configuration (default: $KUBECONFIG,\n"
	    "                                       in-cluster, ~/.kube/config)\n"
	    "  --dry-run                            write nothing; print the reports (YAML)\n"
	    "  -o, --output yaml|json               print the reports\n"
	    "  --namespace NS                       gavel's namespace, never scanned (default\n"
	    "                                       $POD_NAMESPACE, else gavel)\n"
	    "  --split-policy-report                one report per policy per namespace\n"
	    "  --reports-api A                      wgpolicyk8s (default) or openreports\n"
	    "  --background-scan-batch-size N       objects per list page (default 500)\n"
	    "  --background-scan-workers N          evaluation threads (default 2)\n"
	    "  --background-scan-resource-limit N   at most N objects (default: no limit)\n"
	    "  --log-level L                        debug, info, warn, error (default warn)\n",
	    f);
}

static bool number(const char *v, long lo, long hi, long *out)
{
	char *end;
	long n;

	if (!v || !*v)
		return false;
	n = strtol(v, &end, 10);
	if (*end || n < lo || n > hi)
		return false;
	*out = n;
	return true;
}

/* Where -o prints the reports, one namespace's at a time (nsscan_options.emit). */
struct printer {
	bool json;   /* else YAML */
	size_t done; /* reports printed */
};

/*
 * -o json: one array, as json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS)
 * prints it, written element by element; -o yaml: one document per
 * report, as kubectl get -o yaml of each.
 */
static void print_reports(void *ud, const json_t *reports)
{
	struct printer *p = ud;
	size_t i;
	const json_t *r;

	json_array_foreach(reports, i, r)
	{
		if (p->json) {
			char *text = json_dumps(r, JSON_INDENT(2) | JSON_SORT_KEYS);
			fputs(p->done ? ",\n  " : "[\n  ", stdout);
			for (const char *c = text ? text : "{}"; *c; c++) {
				putchar(*c);
				if (*c == '\n') /* one level deeper, inside the array */
					fputs("  ", stdout);
			}
			free(text);
		} else {
			struct gv_buf b = {0};
			gv_buf_adds(&b, "---\n");
			gv_yaml_dump(r, &b);
			fputs(gv_buf_str(&b), stdout);
			gv_buf_release(&b);
		}
		p->done++;
	}
}

int cmd_scan(int argc, char **argv)
{
	struct nsscan_options o = {0};
	struct nsscan_stats st = {0};
	struct context_loader *ctxl = NULL;
	const char *kubeconfig = NULL, *output = NULL;
	struct kube_config *kcfg = NULL;
	struct kube_client *client = NULL;
	struct printer pr = {0};
	struct gv_err err = {0};
	int level = GV_LOG_WARN, code = 2;
	enum gv_code rc;

	o.namespace =
	    getenv("POD_NAMESPACE") && *getenv("POD_NAMESPACE") ? getenv("POD_NAMESPACE") : "gavel";
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false;
		long n;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--dry-run")) {
			o.dry_run = true;
		} else if (!strcmp(argv[i], "--split-policy-report")) {
			o.split = true;
		} else if (cmd_take(argc, argv, &i, "--reports-api", NULL, &v, &missing)) {
			enum report_api_kind api = REPORT_WGPOLICYK8S;
			struct gv_err aerr = {0};
			if (v && report_api_parse(v, &api, &aerr)) {
				fprintf(
				    stderr,
				    "gavel scan: --reports-api: want wgpolicyk8s or openreports\n");
				return 2;
			}
			if (v)
				report_use_api(api);
		} else if (cmd_take(argc, argv, &i, "--kubeconfig", NULL, &v, &missing)) {
			kubeconfig = v;
		} else if (cmd_take(argc, argv, &i, "-o", NULL, &v, &missing) ||
			   cmd_take(argc, argv, &i, "--output", NULL, &v, &missing)) {
			if (v && strcmp(v, "yaml") && strcmp(v, "json")) {
				fprintf(stderr, "gavel scan: -o: want yaml or json\n");
				return 2;
			}
			output = v;
		} else if (cmd_take(argc, argv, &i, "--namespace", NULL, &v, &missing)) {
			o.namespace = v;
		} else if (cmd_take(argc, argv, &i, "--background-scan-batch-size", NULL, &v,
				    &missing)) {
			if (v && !number(v, 1, SCAN_MAX_BATCH, &n)) {
				fprintf(stderr,
					"gavel scan: --background-scan-batch-size: want 1 to "
					"%d\n",
					SCAN_MAX_BATCH);
				return 2;
			}
			o.batch_size = v ? (int)n : 0;
		} else if (cmd_take(argc, argv, &i, "--background-scan-workers", NULL, &v,
				    &missing)) {
			if (v && !number(v, 1, SCAN_MAX_WORKERS, &n)) {
				fprintf(stderr,
					"gavel scan: --background-scan-workers: want 1 to %d\n",
					SCAN_MAX_WORKERS);
				return 2;
			}
			o.workers = v ? (int)n : 0;
		} else if (cmd_take(argc, argv, &i, "--background-scan-resource-limit", NULL, &v,
				    &missing)) {
			if (v && !number(v, 0, 1000000000L, &n)) {
				fprintf(stderr,
					"gavel scan: --background-scan-resource-limit: want a "
					"number >= 0\n");
				return 2;
			}
			o.resource_limit = v ? (size_t)n : 0;
		} else if (cmd_take(argc, argv, &i, "--log-level", NULL, &v, &missing)) {
			if (v && (level = gv_log_parse_level(v)) < 0) {
				fprintf(
				    stderr,
				    "gavel scan: --log-level: want debug, info, warn or error\n");
				return 2;
			}
		} else {
			fprintf(stderr, "gavel scan: unknown argument %s\n", argv[i]);
			usage(stderr);
			return 2;
		}
		if (missing) {
			fprintf(stderr, "gavel scan: %s needs a value\n", argv[i]);
			return 2;
		}
	}
	gv_log_setup((enum gv_log_level)level, 0);
	if (o.dry_run && !output)
		output = "yaml";
	if (kube_config_load(kubeconfig, &kcfg, &err)) {
		fprintf(stderr, "gavel scan: kubeconfig: %s\n", err.msg);
		goto out;
	}
	client = kube_client_new(kcfg, &err);
	if (!client) {
		fprintf(stderr, "gavel scan: kubeconfig: %s\n", err.msg);
		goto out;
	}
	o.client = client;
	ctxl = context_loader_new(
	    &(struct context_options){.client = client, .kube = kcfg, .namespace = o.namespace});
	o.context = context_loader_source(ctxl);
	if (output) {
		pr.json = !strcmp(output, "json");
		o.emit = print_reports;
		o.emit_ud = &pr;
	}
	rc = nsscan_once(&o, &st, &err);
	if (pr.json)
		fputs(pr.done ? "\n]\n" : "[]\n", stdout);
	fflush(stdout);
	if (rc) {
		fprintf(stderr, "gavel scan: %s\n", err.msg);
		goto out;
	}
	fprintf(stderr,
		"gavel scan: %zu policies, %zu objects (%zu evaluated, %zu unchanged, %zu "
		"filtered, %zu failed), %zu results in the reports; reports: %zu created, %zu "
		"updated, %zu deleted, %zu unchanged (%zu read)%s; %zu API requests; %.2f s "
		"(policies %.2f s, reading reports %.2f s, scan %.2f s: lists %.2f s, evaluation "
		"%.2f s, merge %.2f s; writing %.2f s)\n",
		st.policies, st.scan.listed, st.scan.evaluated, st.scan.unchanged, st.scan.filtered,
		st.scan.failed, st.results, st.reports.created, st.reports.updated,
		st.reports.deleted, st.reports.unchanged, st.reports.read,
		o.dry_run ? " [dry run: nothing written]" : "", st.requests, st.seconds,
		st.fetch_seconds, st.load_seconds, st.scan.seconds, st.scan.list_seconds,
		st.scan.eval_seconds, st.scan.commit_seconds, st.flush_seconds);
	code = st.scan.failed || st.scan.forbidden ? 1 : 0;
out:
	context_loader_free(ctxl);
	if (client)
		kube_client_free(client);
	if (kcfg)
		kube_config_free(kcfg);
	return code;
}
