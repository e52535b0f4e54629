/*
 * status.c - `gavel status`: the background scan schedule of every policy.
 *
 *   gavel status [--kubeconfig F] [-o table|json] [--namespace NS]
 *                [--background-scan-interval D]
 *
 * For every ClusterPolicy and Policy, ValidatingPolicy and
 * NamespacedValidatingPolicy, and Kubernetes ValidatingAdmissionPolicy
 * (CEL kinds shown as "<kind>/<name>"): its schedule and where it comes
 * from (global interval, spec.scanInterval, spec.scanSchedule), its last
 * completed scan (the scan-state ConfigMap), its next scan, the result
 * counts of gavel's reports, and whether it is suspended
 * (backgroundScanSuspend in the ConfigMap, spec.scanSuspend); for a
 * ValidatingAdmissionPolicy also its bindings. Times are RFC 3339 UTC.
 * --background-scan-interval is the interval `gavel serve` runs with when
 * the ConfigMap has none (default 1h). The table (cmd/status.h):
 *
 *   POLICY  SCHEDULE  LAST SCAN  NEXT SCAN  PASS FAIL WARN ERROR SKIP  SUSPENDED  STATE
 *
 * -o json prints cmd_status_rows()'s array (cmd/status.h).
 * Exit 0, or 2 on usage errors and when the API server cannot be used.
 */
#include "cmd/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "background/clusterstate.h"
#include "background/reconciler.h"
#include "background/report.h"
#include "background/vpscan.h"
#include "cmd/cmd.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "common/banned.h"

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

/* The names of the bindings of VAP `name` (a new array, as the API listed them). */
static json_t *vap_bindings(const struct view_vpolset *vs, const char *name)
{
	size_t n = 0;
	const json_t *const *bv = view_vpolset_bindings(vs, &n);
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		const json_t *spec = json_object_get(bv[i], "spec");
		const char *pn = json_string_value(json_object_get(spec, "policyName"));
		const char *bn =
		    json_string_value(json_object_get(json_object_get(bv[i], "metadata"), "name"));
		if (pn && bn && !strcmp(pn, name))
			json_array_append_new(a, json_string(bn));
	}
	return a;
}

/*
 * The row of one ValidatingAdmissionPolicy: p compiled, or NULL with
 * error (the compiler's message) for one left out of the set. Its
 * schedule is read as the reconciler reads it (reconciler_sched_resolve,
 * reconciler_when, scan-state key vpscan_state_key()).
 */
static json_t *vap_row(const char *name, const struct vpol_policy *p, const char *error,
		       const struct view_vpolset *vs, const json_t *state, const json_t *counts,
		       const struct reconciler_global *global, time_t now)
{
	json_t *o = reconciler_status_cel_row(REPORT_SOURCE_VAP, name, p ? vpol_doc(p) : NULL, p,
					      error, true, state, counts, global, now);

	json_object_set_new(o, "bindings", vap_bindings(vs, name));
	return o;
}

static int row_cmp(const void *a, const void *b)
{
	const json_t *const *x = a, *const *y = b;

	return strcmp(sval(*x, "policy", ""), sval(*y, "policy", ""));
}

/*
 * Lists admissionregistration.k8s.io `resource` at the first version the
 * server serves into *items (a new array, as v1, kind set on each item); a
 * server that serves none has none, as the snapshots take it (optional
 * kinds).
 */
static enum gv_code list_optional(struct kube_client *client, const char *resource,
				  const char *kind, json_t **items, struct gv_err *err)
{
	return clusterstate_list_vap(client, resource, kind, items, err);
}

/* Appends the ValidatingAdmissionPolicies' rows to rows, in name order. */
static enum gv_code add_vap_rows(struct kube_client *client, const char *ns, const char *interval,
				 time_t now, json_t *rows, struct gv_err *err)
{
	struct view_vpolset *vs = NULL;
	struct reconciler_global global;
	json_t *vaps = NULL, *bindings = NULL, *config = NULL, *state = NULL, *counts = NULL;
	json_t **v = NULL;
	const json_t *e;
	size_t i, n = 0;
	enum gv_code rc;

	if ((rc = list_optional(client, "validatingadmissionpolicies", REPORT_SOURCE_VAP, &vaps,
				err)))
		goto out;
	if (!json_array_size(vaps))
		goto out; /* none, or the kind is not served: nothing more to ask */
	if ((rc = list_optional(client, "validatingadmissionpolicybindings",
				"ValidatingAdmissionPolicyBinding", &bindings, err)) ||
	    (rc = scanstate_read(client, ns, "gavel", &config, err)) ||
	    (rc = scanstate_read(client, ns, SCANSTATE_CONFIGMAP, &state, err)) ||
	    (rc = reconciler_result_counts(client, &counts, err)))
		goto out;
	/* compiled as the snapshot compiles them: the reconciler scans those that compile */
	vs = view_vpolset_new(vaps, NULL);
	view_vpolset_set_bindings(vs, bindings);
	reconciler_global_resolve(config, interval, &global);
	v = gv_xcalloc(json_array_size(vaps) + 1, sizeof(*v));
	for (i = 0; i < view_vpolset_count(vs); i++) {
		const struct vpol_policy *p = view_vpolset_policy(vs, i);
		if (vpol_kind(p) == VPOL_VAP)
			v[n++] = vap_row(vpol_name(p), p, NULL, vs, state, counts, &global, now);
	}
	json_array_foreach(view_vpolset_errors(vs), i, e)
	{
		if (!strcmp(sval(e, "kind", ""), REPORT_SOURCE_VAP) && n < json_array_size(vaps))
			v[n++] = vap_row(sval(e, "name", ""), NULL, sval(e, "message", NULL), vs,
					 state, counts, &global, now);
	}
	qsort(v, n, sizeof(*v), row_cmp);
	for (i = 0; i < n; i++)
		json_array_append_new(rows, v[i]);
out:
	free(v);
	view_vpolset_unref(vs);
	json_decref(vaps);
	json_decref(bindings);
	json_decref(config);
	json_decref(state);
	json_decref(counts);
	return rc;
}

enum gv_code cmd_status_rows(struct kube_client *client, const char *namespace,
			     const char *interval, time_t now, json_t **out, struct gv_err *err)
{
	const char *ns = namespace && *namespace ? namespace : "gavel";
	enum gv_code rc = reconciler_status(client, ns, interval, now, out, err);

	if (!rc)
		rc = add_vap_rows(client, ns, interval, now, *out, err);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

void cmd_status_table(FILE *f, const json_t *rows)
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
		const char *kind = sval(r, "kind", "");
		const json_t *bindings = json_object_get(r, "bindings");

		cells[i] = gv_xcalloc(NCOL, sizeof(**cells));
		/* CEL policies by kind: a ValidatingPolicy may share a ClusterPolicy's name */
		cells[i][0] = strcmp(kind, "ClusterPolicy") && strcmp(kind, "Policy")
				  ? gv_xasprintf("%s/%s", kind, sval(r, "policy", ""))
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
		if (json_is_array(bindings)) {
			/* a ValidatingAdmissionPolicy: which bindings the scans evaluate */
			char *names = NULL, *s = NULL;
			size_t b;
			const json_t *bn;
			json_array_foreach(bindings, b, bn)
			{
				s = names ? gv_xasprintf("%s, %s", names, json_string_value(bn))
					  : gv_xstrdup(json_string_value(bn));
				free(names);
				names = s;
			}
			s = names ? gv_xasprintf("%s (bindings: %s)", cells[i][10], names)
				  : gv_xasprintf("%s (no binding: matchConstraints)", cells[i][10]);
			free(names);
			free(cells[i][10]);
			cells[i][10] = s;
		}
		for (size_t c = 0; c < NCOL - 1; c++)
			if (strlen(cells[i][c]) > w[c])
				w[c] = strlen(cells[i][c]);
	}
	for (size_t c = 0; c < NCOL; c++)
		fprintf(f, c + 1 < NCOL ? "%-*s  " : "%-*s\n", c + 1 < NCOL ? (int)w[c] : 0,
			heads[c]);
	for (i = 0; i < n; i++) {
		for (size_t c = 0; c < NCOL; c++) {
			fprintf(f, c + 1 < NCOL ? "%-*s  " : "%-*s\n", c + 1 < NCOL ? (int)w[c] : 0,
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
	if (cmd_status_rows(client, ns, interval, time(NULL), &rows, &err)) {
		fprintf(stderr, "gavel status: %s\n", err.msg);
		goto out;
	}
	if (!strcmp(output, "json")) {
		char *s = json_dumps(rows, JSON_INDENT(2));
		printf("%s\n", s ? s : "[]");
		free(s);
	} else {
		cmd_status_table(stdout, rows);
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
