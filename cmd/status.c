/*
 * status.c - `gavel status`: the background scan schedule of every policy.
 *
 *   gavel status [--kubeconfig F] [-o table|json] [--namespace NS]
 *                [--background-scan-interval D]
 *
 * For every ClusterPolicy and Policy, ValidatingPolicy and
 * NamespacedValidatingPolicy (shown as "<kind>/<name>"): its schedule and where it comes from
 * (global interval, spec.scanInterval, spec.scanSchedule), its last
 * completed scan (the scan-state ConfigMap), its next scan, the result
 * counts of gavel's reports, and whether it is suspended
 * (backgroundScanSuspend in the ConfigMap, spec.scanSuspend). Times are
 * RFC 3339 UTC. --background-scan-interval is the interval `gavel serve`
 * runs with when the ConfigMap has none (default 1h). The table:
 *
 *   POLICY  SCHEDULE  LAST SCAN  NEXT SCAN  PASS FAIL WARN ERROR SKIP  SUSPENDED  STATE
 *
 * -o json prints reconciler_status()'s array (background/reconciler.h).
 * Exit 0, or 2 on usage errors and when the API server cannot be used.
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "background/reconciler.h"
#include "background/report.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "common/banned.h"

/* Declared here until cmd/cmd.h carries it; the two declarations agree. */
int cmd_status(int argc, char **argv);

static void usage(FILE *f)
{
	fputs("usage: gavel status [options]\n"
	      "\n"
	      "Shows every policy's background scan schedule, last and next scan, report\n"
	      "result counts and whether its scans are suspended.\n"
	      "\n"
	      "options:\n"
	      "  --kubeconfig F                  cluster configuration (default: $KUBECONFIG,\n"
	      "                                  in-cluster, ~/.kube/config)\n"
	      "  -o, --output table|json         output format (default table)\n"
	      "  --reports-api A                 wgpolicyk8s (default) or openreports\n"
	      "  --namespace NS                  gavel's namespace (default $POD_NAMESPACE,\n"
	      "                                  else gavel)\n"
	      "  --background-scan-interval D    serve's global interval when the ConfigMap\n"
	      "                                  sets none (default 1h)\n",
	      f);
}

static const char *sval(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : def;
}

static long long ival(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static void print_table(const json_t *rows)
{
	static const char *const heads[] = {"POLICY", "SCHEDULE",  "LAST SCAN", "NEXT SCAN",
					    "PASS",   "FAIL",	   "WARN",	"ERROR",
					    "SKIP",   "SUSPENDED", "STATE"};
	enum { NCOL = 11 };
	size_t w[NCOL], n = json_array_size(rows);
	char ***cells = gv_xcalloc(n + 1, sizeof(*cells));
	size_t i;
	const json_t *r;

	for (size_t c = 0; c < NCOL; c++)
		w[c] = strlen(heads[c]);
	json_array_foreach(rows, i, r)
	{
		const json_t *res = json_object_get(r, "results");
		const char *src = sval(r, "source", "global");
		const char *state = sval(r, "state", "");
		const char *err = sval(r, "error", NULL);

		cells[i] = gv_xcalloc(NCOL, sizeof(**cells));
		/* CEL policies by kind: a ValidatingPolicy may share a ClusterPolicy's name */
		cells[i][0] =
		    strstr(sval(r, "kind", ""), "ValidatingPolicy")
			? gv_xasprintf("%s/%s", sval(r, "kind", ""), sval(r, "policy", ""))
			: gv_xstrdup(sval(r, "policy", ""));
		cells[i][1] = !strcmp(src, "global")
				  ? gv_xasprintf("%s (global)", sval(r, "schedule", ""))
				  : gv_xstrdup(sval(r, "schedule", ""));
		cells[i][2] = gv_xstrdup(sval(r, "lastScan", "-"));
		cells[i][3] = gv_xstrdup(sval(r, "nextScan", "-"));
		cells[i][4] = gv_xasprintf("%lld", ival(res, "pass"));
		cells[i][5] = gv_xasprintf("%lld", ival(res, "fail"));
		cells[i][6] = gv_xasprintf("%lld", ival(res, "warn"));
		cells[i][7] = gv_xasprintf("%lld", ival(res, "error"));
		cells[i][8] = gv_xasprintf("%lld", ival(res, "skip"));
		cells[i][9] = json_is_true(json_object_get(r, "suspended"))
				  ? gv_xasprintf("yes (%s)", sval(r, "suspendedBy", "?"))
				  : gv_xstrdup("no");
		cells[i][10] = err ? gv_xasprintf("%s: %s", state, err) : gv_xstrdup(state);
		for (size_t c = 0; c < NCOL - 1; c++)
			if (strlen(cells[i][c]) > w[c])
				w[c] = strlen(cells[i][c]);
	}
	for (size_t c = 0; c < NCOL; c++)
		printf(c + 1 < NCOL ? "%-*s  " : "%-*s\n", c + 1 < NCOL ? (int)w[c] : 0, heads[c]);
	for (i = 0; i < n; i++) {
		for (size_t c = 0; c < NCOL; c++) {
			printf(c + 1 < NCOL ? "%-*s  " : "%-*s\n", c + 1 < NCOL ? (int)w[c] : 0,
			       cells[i][c]);
			free(cells[i][c]);
		}
		free(cells[i]);
	}
	free(cells);
}

int cmd_status(int argc, char **argv)
{
	const char *kubeconfig = NULL, *output = "table", *interval = NULL;
	const char *ns =
	    getenv("POD_NAMESPACE") && *getenv("POD_NAMESPACE") ? getenv("POD_NAMESPACE") : "gavel";
	struct kube_config *kcfg = NULL;
	struct kube_client *client = NULL;
	json_t *rows = NULL;
	struct gv_err err = {0};
	int code = 2;

	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (cmd_take(argc, argv, &i, "--kubeconfig", NULL, &v, &missing)) {
			kubeconfig = v;
		} else if (cmd_take(argc, argv, &i, "-o", NULL, &v, &missing) ||
			   cmd_take(argc, argv, &i, "--output", NULL, &v, &missing)) {
			if (v && strcmp(v, "table") && strcmp(v, "json")) {
				fprintf(stderr, "gavel status: -o: want table or json\n");
				return 2;
			}
			if (v)
				output = v;
		} else if (cmd_take(argc, argv, &i, "--reports-api", NULL, &v, &missing)) {
			enum report_api_kind api = REPORT_WGPOLICYK8S;
			struct gv_err aerr = {0};
			if (v && report_api_parse(v, &api, &aerr)) {
				fprintf(stderr, "gavel status: --reports-api: want wgpolicyk8s or "
						"openreports\n");
				return 2;
			}
			if (v)
				report_use_api(api);
		} else if (cmd_take(argc, argv, &i, "--namespace", NULL, &v, &missing)) {
			ns = v;
		} else if (cmd_take(argc, argv, &i, "--background-scan-interval", NULL, &v,
				    &missing)) {
			interval = v;
		} else {
			fprintf(stderr, "gavel status: unknown argument %s\n", argv[i]);
			usage(stderr);
			return 2;
		}
		if (missing) {
			fprintf(stderr, "gavel status: %s needs a value\n", argv[i]);
			return 2;
		}
	}
	gv_log_setup(GV_LOG_ERROR, 0);
	if (interval) {
		struct schedule s = {0};
		if (schedule_parse_interval(interval, &s, &err)) {
			fprintf(stderr, "gavel status: --background-scan-interval: %s\n", err.msg);
			return 2;
		}
	}
	if (kube_config_load(kubeconfig, &kcfg, &err)) {
		fprintf(stderr, "gavel status: kubeconfig: %s\n", err.msg);
		goto out;
	}
	client = kube_client_new(kcfg, &err);
	if (!client) {
		fprintf(stderr, "gavel status: kubeconfig: %s\n", err.msg);
		goto out;
	}
	if (reconciler_status(client, ns, interval, time(NULL), &rows, &err)) {
		fprintf(stderr, "gavel status: %s\n", err.msg);
		goto out;
	}
	if (!strcmp(output, "json")) {
		char *s = json_dumps(rows, JSON_INDENT(2));
		printf("%s\n", s ? s : "[]");
		free(s);
	} else {
		print_table(rows);
	}
	code = 0;
out:
	json_decref(rows);
	if (client)
		kube_client_free(client);
	if (kcfg)
		kube_config_free(kcfg);
	return code;
}
