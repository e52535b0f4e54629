/*
 * apply.c - `gavel apply`: evaluates policies against resource manifests
 * offline, the way the Kyverno CLI does (one evaluation per resource and
 * policy, values and user info from files, operation CREATE unless the
 * values say otherwise).
 *
 *   gavel apply POLICY... --resource R... [--values-file F] [--userinfo F]
 *         [--exception F]... [--namespace-labels NS=KEY=VALUE,...]
 *         [--namespaces F] [-o table|json|yaml|report] [-t] [-p]
 *         [--detailed-results] [--audit-warn] [--fail-on any|enforce]
 *         [--warn-exit-code N] [--warn-no-pass] [--remove-color]
 *
 * The flags are `kyverno apply`'s, with its meaning (the table in
 * README.md "gavel apply" lists each one and what gavel does with it).
 * POLICY and R are files, directories (recursive: *.yaml, *.yml, *.json,
 * hidden entries skipped) or "-" for stdin. --resource (-r) takes one
 * value, as Kyverno's: a path or a comma-separated list of paths; it may
 * be repeated, and a positional argument after it is a policy. Documents of other kinds in a policy
 * file are ignored with a warning, but a policy file named on the command line that holds no policy
 * at all is an invalid policy (the engine's "not a policy" error).
 *
 * Output (stdout):
 *   (none)  Kyverno's: for each resource and policy with failed rules,
 *           "policy P -> resource NS/KIND/NAME failed:" and one numbered
 *           line per failed rule ("1 - RULE MESSAGE"), then the summary
 *           line "pass: N, fail: N, warn: N, error: N, skip: N ".
 *           --detailed-results prints the table of every result instead.
 *   -t      Kyverno's table (ID POLICY RULE RESOURCE RESULT REASON) of the
 *           results that did not pass (every result with
 *           --detailed-results, adding MESSAGE), then the summary line
 *   -p      "POLICY REPORT:" between dividers, then the reports as with
 *           -o report (as JSON with --output-format json)
 *   table   the table of every rule result: policy, rule, Kind/namespace/name,
 *           result, message (the header line comes first)
 *   json    a list of {policy, rule, resource: {apiVersion, kind, namespace,
 *           name}, result, action, scored, message, properties}; properties
 *           (left out when empty) are those a report result carries:
 *           the rule's reportProperties (variables substituted; a
 *           podSecurity fail's standard, version, controls, controlsJSON),
 *           "exceptions" (the PolicyExceptions that made a skip), a CEL
 *           policy's audit annotations and cel.validationIndex, a VAP's
 *           "binding"; message is the engine's
 *   yaml    the same list as YAML
 *   report  one wgpolicyk8s.io/v1alpha2 PolicyReport per namespace
 *           ("polr-ns-<namespace>") and one ClusterPolicyReport
 *           ("clusterpolicyreport") for cluster-scoped resources, as YAML
 *           documents. Results follow Kyverno's conventions (source
 *           "gavel", or KyvernoValidatingPolicy / ValidatingAdmissionPolicy
 *           for CEL policies as in gavel's cluster reports, scored from policies.kyverno.io/scored
 * with an unscored fail reported as warn, severity and category from the policy annotations, a
 * severity other than exactly critical|high|medium|low|info left out as Kyverno does
 *           (engine_report_severity), the resource as the only entry of
 *           `resources`), properties as -o json's and a message that a
 *           property replaces (engine_report_message: failMessage...,
 *           message). properties.process is "background scan": offline
 *           evaluation checks manifests as they stand and never blocks,
 *           which is what that value means to report consumers (the other
 *           value Kyverno writes, "admission review", would claim a request
 *           was made). The summary counts equal the results.
 *
 * Memory: resources are read, evaluated and printed in batches (256
 * documents or 8 MiB), table rows and report results go to temporary
 * files; what grows with the input is 9 to 18 bytes per distinct resource
 * (the de-duplication set, exact: keys are compared, in a temporary file)
 * and the counts of each report. When a validate.cel rule reads params
 * (paramKind), a first pass over the inputs keeps the resources of those
 * kinds, wherever they are (Kyverno's CLI loads every resource first),
 * stdin spooled to a temporary file for the second, evaluating, pass.
 *
 * Counting is Kyverno's: a failed rule of an unscored policy
 * (policies.kyverno.io/scored: "false"), or with --audit-warn of an Audit
 * policy, counts as warn.
 *
 * Exit status: 2 when any input was bad (an invalid policy or exception,
 * an unreadable, malformed or empty file, no policy or no resource at all,
 * a bad flag): each invalid policy is one line
 * "file:line:col: /json/pointer: message" on stderr and the others are
 * still evaluated; otherwise, as `kyverno apply`, 1 when any rule failed
 * or gave an error (a rule or policy gavel does not evaluate included:
 * never a silent pass); else --warn-exit-code N when some rule warned (or
 * when nothing passed, with --warn-no-pass); else 0. With
 * --fail-on enforce, 1 only when a rule whose failure action is Enforce
 * failed or a rule gave an error (gavel's earlier default).
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmd/load.h"
#include "cmd/table.h"
#include "cmd/values.h"
#include "background/report.h"
#include "common/utf8.h"
#include "common/yaml.h"
#include "engine/engine.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

#define DIVIDER "----------------------------------------------------------------------"

enum apply_output { OUT_KYVERNO, OUT_TABLE, OUT_JSON, OUT_YAML, OUT_REPORT };

/* One rule result of one (resource, policy) evaluation. */
struct apply_result {
	size_t resource; /* index into the loaded resources */
	size_t policy;	 /* index into the loaded policies */
	char *rule;	 /* owned */
	char *message;	 /* owned */
	enum engine_status status;
	enum engine_action action;
	/*
	 * owned, or NULL: the result's report properties (-o json|yaml|report
	 * only): the rule's reportProperties, "exceptions", a CEL policy's
	 * audit annotations, a VAP's "binding" (what the cluster reports carry)
	 */
	json_t *props;
};

struct apply_state {
	struct load_paths policy_paths, resource_paths, exception_paths;
	const char *values_file, *userinfo_file, *namespaces_file;
	struct load_policies pols;
	struct load_resources res;
	/*
	 * validate.cel paramKind/paramRef: the "apiVersion kind" of the kinds
	 * read (owned array, NULL when no policy reads params), and the
	 * resources of those kinds in all the inputs (the params, found by a
	 * first pass over the inputs before any is evaluated, as Kyverno's CLI
	 * loads every resource first)
	 */
	json_t *param_kinds;
	struct load_resources params;
	FILE *stdin_spool; /* owned: stdin as the first pass read it, or NULL */
	struct values values;
	struct values_userinfo ui;
	bool has_ui;
	enum apply_output out;
	bool bad;
	bool stdin_used;
	bool kyverno_table;		/* -t: Kyverno's table, results that did not pass */
	bool policy_report;		/* -p */
	bool report_json;		/* --output-format json with -p */
	bool detailed;			/* --detailed-results */
	bool audit_warn;		/* --audit-warn */
	bool fail_on_enforce;		/* --fail-on enforce */
	bool warn_no_pass;		/* --warn-no-pass */
	int warn_exit_code;		/* --warn-exit-code */
	size_t counts[5];		/* pass, fail, warn, error, skip as Kyverno counts them */
	int jobs;			/* -j: threads that parse and evaluate */
	bool enforce_failed;		/* a rule of an Enforce policy failed */
	struct engine_policyset **sets; /* owned: one set per valid policy */
	struct apply_seen *seen;	/* owned: keys of the resources evaluated so far */
	size_t nprinted;		/* list elements printed (-o json|yaml) */
	struct apply_pinfo *pinfo;	/* owned: per policy, what the output repeats */
	FILE *tspool;			/* owned: table rows (-o table, -t), for the widths */
	size_t trows;			/* table rows, the header excluded */
	size_t twidth[6];		/* widest cell of each table column, in code points */
	struct apply_nsrep *nsreps;	/* owned: the YAML reports being built, first-seen order */
	size_t nnsreps;
	json_t *nsindex;	   /* owned: namespace -> index in nsreps */
	FILE *spool;		   /* owned: temporary file holding the reports' results */
	size_t buffered;	   /* bytes in the nsreps' buffers */
	struct gv_buf partbuf[64]; /* the workers' output buffers, kept from batch to batch */
	struct apply_errs {	   /* the workers' error streams, likewise */
		FILE *f;
		char *buf;
		size_t len;
	} errs[64];
	struct apply_arena *arenas; /* owned: the parsing threads' chunks, likewise (64) */
};

/* One namespace's report (-o report): counts, and its results as YAML list items. */
struct apply_nsrep {
	char *ns;		      /* owned */
	size_t sum[5];		      /* by reported status */
	struct gv_buf buf;	      /* results not yet in the spool file */
	struct apply_spooled *chunks; /* owned: results written to the spool file, in order */
	size_t nchunks;
};

struct apply_spooled {
	long off;
	size_t len;
};

struct apply_seen;

/* What the output repeats for every result of one policy. */
struct apply_pinfo {
	char *ref;		/* owned: the policy as results name it (policy_ref) */
	bool unscored;		/* policies.kyverno.io/scored: "false" */
	char *json_ref;		/* owned: ref as a JSON string, or NULL (not UTF-8) */
	char *yaml_ref;		/* owned: ref as a YAML scalar, or NULL */
	char *report_meta;	/* owned: the report result's severity and category lines */
	char *report_meta_json; /* owned: the same as JSON members (each after ",\n") */
	/*
	 * a report result's `source`: "gavel" for kyverno.io policies, as
	 * gavel's cluster reports by default; a CEL policy's own, as there
	 * (background/report.h REPORT_SOURCE_VPOL, REPORT_SOURCE_VAP)
	 */
	const char *source;
};

static void apply_usage(FILE *f)
{
	fputs("usage: gavel apply POLICY... --resource R [options]\n"
	      "\n"
	      "Evaluates policies (files, directories, or - for stdin) against resources,\n"
	      "with the flags and outputs of `kyverno apply`.\n"
	      "\n"
	      "  -r, --resource R           resource file or directory (also R1,R2; repeatable)\n"
	      "  -f, --values-file F        values file (kind: Values)\n"
	      "  -s, --set K=V,...          variables (as in a values file's globalValues)\n"
	      "  -u, --userinfo F           admission user info (kind: UserInfo)\n"
	      "  -e, --exception F          PolicyException file or directory (repeatable)\n"
	      "      --namespace-labels L   namespace labels: NS=KEY=VALUE[,NS=KEY=VALUE...]\n"
	      "      --namespaces F         Namespace manifests whose labels to use\n"
	      "  -o, --output FORMAT        table, json, yaml or report (every result)\n"
	      "  -t, --table                Kyverno's table of the results that did not pass\n"
	      "  -p, --policy-report        print the results as policy reports\n"
	      "      --output-format F      json or yaml (with -p: the reports; else as -o)\n"
	      "      --detailed-results     every result, with its message\n"
	      "      --audit-warn           failures of Audit policies count as warnings\n"
	      "      --warn-exit-code N     exit code when rules warned and none failed\n"
	      "      --warn-no-pass         ... and also when no rule passed\n"
	      "      --fail-on any|enforce  exit 1 on any failure (default) or only Enforce ones\n"
	      "  -j, --jobs N               evaluation threads (default: the CPUs gavel may use)\n"
	      "      --remove-color         accepted: gavel never colours its output\n"
	      "      --continue-on-fail     accepted: gavel always evaluates every resource\n"
	      "\n"
	      "Exit status: 0 nothing failed, 1 a rule failed or gave an error, 2 bad input\n"
	      "(or the --warn-exit-code).\n",
	      f);
}

/* ---- arguments ---- */

static void add_list(struct load_paths *p, const char *arg)
{
	const char *s = arg;

	if (!strchr(arg, ',')) {
		load_paths_add(p, arg);
		return;
	}
	while (*s) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);
		if (n) {
			char *one = gv_xstrndup(s, n);
			load_paths_add(p, one);
			free(one);
		}
		s += n + (comma ? 1 : 0);
	}
}

/*
 * `kyverno apply` flags gavel refuses, and why: each names what to use
 * instead. A flag here is never silently ignored.
 */
static const struct {
	const char *name, *shrt;
	bool takes_value;
	const char *why;
} refused[] = {
    {"--cluster", "-c", false,
     "evaluates the objects of a live cluster: use `gavel scan --kubeconfig F --dry-run`"},
    {"--kubeconfig", NULL, true,
     "is for --cluster: use `gavel scan --kubeconfig F --dry-run` for a live cluster"},
    {"--context", NULL, true, "is for --cluster: gavel scan uses the kubeconfig's context"},
    {"--namespace", "-n", true,
     "is for --cluster: use `gavel scan --kubeconfig F --dry-run --namespace NS`"},
    {"--stdin", "-i", false,
     "pipes mutated resources to kubectl; gavel evaluates validate rules only "
     "(a - argument reads policies or resources from stdin)"},
    {"--registry", NULL, false,
     "reads image registries; offline, gavel answers imageRegistry context entries from "
     "--values-file"},
    {"--git-branch", "-b", true,
     "reads policies from a git repository: clone it and pass the folder"},
    {"--generate-exceptions", NULL, false,
     "writes PolicyExceptions for failures; gavel does not generate resources"},
    {"--exception-ttl", NULL, true, "is for --generate-exceptions"},
    {"--mutate-log-path", NULL, true,
     "writes mutated resources; gavel evaluates validate rules only"},
    {"--context-path", NULL, true, "is for ValidatingPolicy context; use --values-file"},
};

static bool take_refused(int argc, char **argv, int *i)
{
	for (size_t k = 0; k < GV_ARRAY_LEN(refused); k++) {
		const char *a = argv[*i];
		size_t n = strlen(refused[k].name);
		if (strncmp(a, refused[k].name, n) || (a[n] && a[n] != '=')) {
			if (!refused[k].shrt || strcmp(a, refused[k].shrt))
				continue;
		}
		fprintf(stderr, "gavel apply: %s %s\n", refused[k].name, refused[k].why);
		return true;
	}
	(void)argc;
	return false;
}

static bool set_output(struct apply_state *st, const char *v, bool format_flag)
{
	if (!strcmp(v, "table") && !format_flag)
		st->out = OUT_TABLE;
	else if (!strcmp(v, "json"))
		st->out = OUT_JSON;
	else if (!strcmp(v, "yaml"))
		st->out = OUT_YAML;
	else if (!strcmp(v, "report") && !format_flag)
		st->out = OUT_REPORT;
	else if (format_flag) {
		fprintf(stderr, "gavel apply: --output-format is json or yaml, not %s\n", v);
		return false;
	} else {
		/* Kyverno's -o names a file or folder for mutated resources. */
		fprintf(stderr,
			"gavel apply: unknown output format %s (table, json, yaml or report); "
			"kyverno's -o PATH writes mutated resources, which gavel does not make\n",
			v);
		return false;
	}
	return true;
}

static bool parse_int(const char *v, int *out)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < 0 || n > 255)
		return false;
	*out = (int)n;
	return true;
}

static int parse_args(struct apply_state *st, int argc, char **argv, const char ***ns_labels,
		      size_t *nns_labels, const char ***sets, size_t *nsets)
{
	const char *output_format = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		bool missing = false;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			apply_usage(stdout);
			return 0;
		}
		if (cmd_take(argc, argv, &i, "--resource", "-r", &v, &missing) ||
		    cmd_take(argc, argv, &i, "--resources", NULL, &v, &missing)) {
			if (!missing)
				add_list(&st->resource_paths, v);
		} else if (cmd_take(argc, argv, &i, "--values-file", "-f", &v, &missing)) {
			st->values_file = v;
		} else if (cmd_take(argc, argv, &i, "--set", "-s", &v, &missing)) {
			if (!missing) {
				*sets = gv_xrealloc(*sets, (*nsets + 1) * sizeof(char *));
				(*sets)[(*nsets)++] = v;
			}
		} else if (cmd_take(argc, argv, &i, "--userinfo", "-u", &v, &missing)) {
			st->userinfo_file = v;
		} else if (cmd_take(argc, argv, &i, "--exception", "-e", &v, &missing) ||
			   cmd_take(argc, argv, &i, "--exceptions", NULL, &v, &missing)) {
			if (!missing)
				add_list(&st->exception_paths, v);
		} else if (cmd_take(argc, argv, &i, "--namespace-labels", NULL, &v, &missing)) {
			if (!missing) {
				*ns_labels =
				    gv_xrealloc(*ns_labels, (*nns_labels + 1) * sizeof(char *));
				(*ns_labels)[(*nns_labels)++] = v;
			}
		} else if (cmd_take(argc, argv, &i, "--namespaces", NULL, &v, &missing)) {
			st->namespaces_file = v;
		} else if (cmd_take(argc, argv, &i, "--output", "-o", &v, &missing)) {
			if (!missing && !set_output(st, v, false))
				return 2;
		} else if (cmd_take(argc, argv, &i, "--output-format", NULL, &v, &missing)) {
			output_format = v;
		} else if (cmd_take(argc, argv, &i, "--fail-on", NULL, &v, &missing)) {
			if (!missing && strcmp(v, "any") && strcmp(v, "enforce")) {
				fprintf(stderr,
					"gavel apply: --fail-on is any or enforce, not %s\n", v);
				return 2;
			}
			st->fail_on_enforce = !missing && !strcmp(v, "enforce");
		} else if (cmd_take(argc, argv, &i, "--jobs", "-j", &v, &missing)) {
			if (!missing && (!parse_int(v, &st->jobs) || !st->jobs)) {
				fprintf(stderr, "gavel apply: -j takes 1..255, not %s\n", v);
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--warn-exit-code", NULL, &v, &missing)) {
			if (!missing && !parse_int(v, &st->warn_exit_code)) {
				fprintf(stderr,
					"gavel apply: --warn-exit-code takes 0..255, not %s\n", v);
				return 2;
			}
		} else if (!strcmp(a, "-t") || !strcmp(a, "--table")) {
			st->kyverno_table = true;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--policy-report")) {
			st->policy_report = true;
		} else if (!strcmp(a, "--detailed-results")) {
			st->detailed = true;
		} else if (!strcmp(a, "--audit-warn")) {
			st->audit_warn = true;
		} else if (!strcmp(a, "--warn-no-pass")) {
			st->warn_no_pass = true;
		} else if (!strcmp(a, "--remove-color") || !strcmp(a, "--continue-on-fail")) {
			; /* gavel's output has no colour; it always evaluates everything */
		} else if (take_refused(argc, argv, &i)) {
			return 2;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "gavel apply: unknown option %s\n", a);
			apply_usage(stderr);
			return 2;
		} else {
			load_paths_add(&st->policy_paths, a);
		}
		if (missing) {
			fprintf(stderr, "gavel apply: %s needs a value\n", a);
			return 2;
		}
	}
	if (output_format) {
		if (st->policy_report) {
			if (strcmp(output_format, "json") && strcmp(output_format, "yaml")) {
				fprintf(stderr,
					"gavel apply: --output-format is json or yaml, not %s\n",
					output_format);
				return 2;
			}
			st->report_json = !strcmp(output_format, "json");
		} else if (!set_output(st, output_format, true)) {
			return 2;
		}
	}
	if (st->policy_report)
		st->out = OUT_REPORT;
	else if (st->kyverno_table && st->out == OUT_KYVERNO)
		st->out = OUT_TABLE;
	else if (st->detailed && st->out == OUT_KYVERNO)
		st->out = OUT_TABLE;
	if (!st->policy_paths.n || !st->resource_paths.n) {
		fprintf(stderr, "gavel apply: %s\n",
			!st->policy_paths.n ? "no policy given"
					    : "no resource given (--resource R)");
		apply_usage(stderr);
		return 2;
	}
	return -1;
}

/* ---- loading ---- */

static void print_err(const char *what, const struct gv_err *e)
{
	char buf[2200];

	fprintf(stderr, "%s%s\n", what, gv_err_str(e, buf, sizeof(buf)));
}

static bool check_stdin(struct apply_state *st, const char *path)
{
	if (strcmp(path, "-"))
		return true;
	if (st->stdin_used) {
		fputs("gavel apply: stdin (-) can be read only once\n", stderr);
		st->bad = true;
		return false;
	}
	st->stdin_used = true;
	return true;
}

/* Expands a path list into files; errors are reported and make the run "bad". */
static void expand_all(struct apply_state *st, const struct load_paths *in, struct load_paths *out)
{
	for (size_t i = 0; i < in->n; i++) {
		struct gv_err e = {0};
		if (load_expand(in->v[i], out, &e)) {
			print_err("", &e);
			st->bad = true;
		}
	}
}

static void load_inputs(struct apply_state *st)
{
	struct load_paths files = {0};
	struct gv_err e = {0};

	expand_all(st, &st->policy_paths, &files);
	for (size_t i = 0; i < files.n; i++) {
		if (!check_stdin(st, files.v[i]))
			continue;
		gv_err_clear(&e);
		/* A file named on the command line must hold a policy; files found in a directory
		 * need not. */
		if (load_policies_file(&st->pols, files.v[i],
				       load_paths_has(&st->policy_paths, files.v[i]), stderr, &e))
			st->bad = true; /* already reported on stderr */
	}
	load_paths_release(&files);
	/* Two policies of one name would give rows nobody can tell apart. */
	for (size_t i = 0; i < st->pols.n; i++)
		for (size_t j = i + 1; j < st->pols.n; j++) {
			const struct load_policy *a = &st->pols.v[i], *b = &st->pols.v[j];
			if (*a->name && !strcmp(a->name, b->name) && !strcmp(a->kind, b->kind) &&
			    !strcmp(a->namespace, b->namespace)) {
				fprintf(stderr, "gavel apply: duplicate %s %s%s%s in %s and %s\n",
					a->kind, a->namespace, *a->namespace ? "/" : "", a->name,
					a->file, b->file);
				st->bad = true;
			}
		}
	if (st->pols.nnonk8s)
		fprintf(stderr,
			"gavel apply: skipped %zu file(s) without Kubernetes documents (no kind), "
			"such as %s\n",
			st->pols.nnonk8s, st->pols.first_nonk8s);

	expand_all(st, &st->exception_paths, &files);
	for (size_t i = 0; i < files.n; i++) {
		if (!check_stdin(st, files.v[i]))
			continue;
		gv_err_clear(&e);
		if (load_exceptions_file(&st->pols, files.v[i], stderr, &e))
			st->bad = true;
	}
	load_paths_release(&files);
	if (st->pols.nerrors)
		st->bad = true;
}

static void load_namespace_labels(struct apply_state *st, const char **specs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = specs[i];
		while (*s) {
			const char *comma = strchr(s, ',');
			size_t len = comma ? (size_t)(comma - s) : strlen(s);
			char *item = gv_xstrndup(s, len);
			char *eq1 = strchr(item, '='), *eq2 = eq1 ? strchr(eq1 + 1, '=') : NULL;

			if (!eq1 || !eq2 || eq1 == item || eq2 == eq1 + 1) {
				fprintf(stderr,
					"gavel apply: --namespace-labels: \"%s\" is not "
					"NAMESPACE=KEY=VALUE\n",
					item);
				st->bad = true;
			} else {
				const json_t *cur;
				json_t *labels;
				*eq1 = '\0';
				*eq2 = '\0';
				cur = values_namespace_labels(&st->values, item);
				labels = cur ? json_deep_copy(cur) : json_object();
				json_object_set_new(labels, eq1 + 1, json_string(eq2 + 1));
				values_set_namespace_labels(&st->values, item, labels);
				json_decref(labels);
			}
			free(item);
			s += len + (comma ? 1 : 0);
		}
	}
}

static void load_namespaces_file(struct apply_state *st, const char *file)
{
	struct load_resources nss = {0};
	struct gv_err e = {0};

	if (load_resources_file(&nss, file, stderr, &e))
		st->bad = true;
	for (size_t i = 0; i < nss.n; i++) {
		const json_t *o = nss.v[i].obj;
		if (strcmp(load_res_kind(o), "Namespace")) {
			fprintf(stderr, "%s:%d: warning: --namespaces: ignoring %s %s\n",
				nss.v[i].file, nss.v[i].line, load_res_kind(o), load_res_name(o));
			continue;
		}
		values_set_namespace_labels(
		    &st->values, load_res_name(o),
		    json_object_get(json_object_get(o, "metadata"), "labels"));
	}
	load_resources_release(&nss);
}

/* ---- evaluation ---- */

/*
 * Worker k's stream for error lines (opened once: a memory stream per
 * batch would cost a large allocation, and glibc then consolidates the
 * heap's free small chunks each time).
 */
static FILE *worker_errs(struct apply_state *st, size_t k)
{
	struct apply_errs *e = &st->errs[k];

	if (!e->f)
		e->f = open_memstream(&e->buf, &e->len);
	if (!e->f) {
		fprintf(stderr, "gavel apply: %s\n", strerror(errno));
		exit(2);
	}
	return e->f;
}

/* Writes what worker k wrote to its error stream to stderr, and empties the stream. */
static void errs_drain(struct apply_state *st, size_t k)
{
	struct apply_errs *e = &st->errs[k];

	if (!e->f || fflush(e->f))
		return;
	if (e->len)
		fwrite(e->buf, 1, e->len, stderr);
	rewind(e->f);
}

/* The results of evaluating resources [r0, r1) of the batch (one worker's share). */
struct apply_part {
	const struct apply_state *st;
	size_t r0, r1;
	struct apply_result *v; /* owned */
	size_t n;
	FILE *errs; /* the worker's error lines (worker_errs()) */
	bool bad;
	/*
	 * Each resource's results are formatted here, by the worker, and
	 * freed: out holds the text for stdout (-o json: elements each after
	 * ",\n"; -o table, -t: rows as NUL-terminated cells without the ID;
	 * -o report: per result the namespace, NUL, the reported status as
	 * one byte, the report's list item (YAML, or JSON after ",\n" with
	 * --output-format json), NUL).
	 */
	struct gv_buf out;
	size_t nout;	  /* elements (-o json|yaml), rows (table) or results (report) */
	size_t counts[5]; /* as Kyverno counts them */
	bool enforce_failed;
	size_t twidth[6]; /* -o table, -t: the widest cell of each column of out (not the ID) */
};

static struct apply_result *part_add(struct apply_part *pt);
static size_t cell_width(const char *s);

/* Whether the output shows results' properties (-o json|yaml|report, -p). */
static bool wants_props(const struct apply_state *st)
{
	return st->out == OUT_JSON || st->out == OUT_YAML || st->out == OUT_REPORT;
}

/*
 * A result's properties, as the cluster reports' (report.c result_props):
 * *props (taken: set to NULL) with "exceptions" (the PolicyExceptions that
 * made it a skip, which win over a reportProperty of that name). NULL
 * when none.
 */
static json_t *props_take(json_t **props, const char *exceptions)
{
	json_t *o = json_object_size(*props) ? *props : NULL;

	if (!o)
		json_decref(*props);
	*props = NULL;
	if (!exceptions)
		return o;
	if (!o) {
		o = json_object();
	} else if (o->refcount > 1) {
		json_t *c = json_copy(o); /* not ours to change */
		json_decref(o);
		o = c;
	}
	json_object_set_new(o, "exceptions", json_string(exceptions));
	return o;
}

/* A CEL policy (engine/vpolicy.h) against resource r. */
static void apply_cel(struct apply_part *pt, FILE *errs, size_t r, size_t p)
{
	const struct apply_state *st = pt->st;
	const struct load_policy *lp = &st->pols.v[p];
	struct values_eval ev;
	struct vpol_input in = {0};
	struct vpol_report rep = {0};
	struct gv_err e = {0};
	const char *ns = load_res_namespace(st->res.v[r].obj);
	const json_t *labels = values_namespace_labels(&st->values, ns);
	json_t *nso = NULL;

	if (values_eval_init(&ev, &st->values, st->has_ui ? &st->ui : NULL, lp->name,
			     st->res.v[r].obj, NULL, &e)) {
		char buf[2200];
		fprintf(errs, "gavel apply: %s\n", gv_err_str(&e, buf, sizeof(buf)));
		pt->bad = true;
		return;
	}
	if (labels)
		nso = json_pack("{s:s,s:s,s:{s:s,s:O}}", "apiVersion", "v1", "kind", "Namespace",
				"metadata", "name", ns, "labels", labels);
	in.object = ev.in.object;
	in.old_object = ev.in.old_object;
	in.operation = ev.in.operation;
	in.user_info = ev.in.user_info;
	in.namespace_object = nso;
	in.exceptions = st->pols.cel_exceptions;
	in.nexceptions = st->pols.ncel_exceptions;
	in.bindings = (const json_t *const *)st->pols.bindings;
	in.nbindings = st->pols.nbindings;
	if (vpol_evaluate(lp->vpol, &in, &rep, &e)) {
		char buf[2200];
		fprintf(errs, "gavel apply: %s\n", gv_err_str(&e, buf, sizeof(buf)));
		pt->bad = true;
	}
	for (size_t i = 0; i < rep.n; i++) {
		for (size_t j = 0; j < rep.v[i].n; j++) {
			struct apply_result *a;
			a = part_add(pt);
			a->resource = r;
			a->policy = p;
			a->rule = gv_xstrdup(rep.v[i].rules[j].rule);
			a->message = gv_xstrdup(rep.v[i].rules[j].message);
			a->status = rep.v[i].rules[j].status;
			a->action = vpol_denies(lp->vpol) ? ENGINE_ENFORCE : ENGINE_AUDIT;
			a->props = wants_props(st) ? props_take(&rep.v[i].rules[j].properties, NULL)
						   : NULL;
		}
	}
	vpol_report_release(&rep);
	json_decref(nso);
	values_eval_release(&ev);
}

static struct apply_result *part_add(struct apply_part *pt)
{
	if ((pt->n & (pt->n - 1)) == 0)
		pt->v = gv_xrealloc(pt->v, (pt->n ? 2 * pt->n : 1) * sizeof(*pt->v));
	return &pt->v[pt->n++];
}

/* ---- formatting, in the workers ---- */

/* Whether s is what jansson takes as a string (well-formed UTF-8): json_string() refuses others. */
static bool utf8_ok(const char *s)
{
	while (*s) {
		size_t k;
		if ((unsigned char)*s < 0x80) {
			s++;
			continue;
		}
		k = gv_utf8_valid(s, strnlen(s, 4));
		if (!k)
			return false;
		s += k;
	}
	return true;
}

/* Appends s as json_dumps() writes a string (no flags: '/' and non-ASCII as they are). */
static void json_quote(struct gv_buf *b, const char *s)
{
	const char *run = s;

	gv_buf_addc(b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *esc;
		char seq[8];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		gv_buf_add(b, run, (size_t)(s - run));
		run = s + 1;
		switch (c) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		default:
			snprintf(seq, sizeof(seq), "\\u%04X", c);
			esc = seq;
		}
		gv_buf_adds(b, esc);
	}
	gv_buf_add(b, run, (size_t)(s - run));
	gv_buf_addc(b, '"');
}

/*
 * One member of a JSON object dumped with JSON_INDENT(2) at the given
 * depth: "\n" or ",\n" (after the first), the indent, "key": value. A
 * value that is not UTF-8 leaves the member out, as json_object_set_new()
 * with json_string()'s NULL does.
 */
static void json_member(struct gv_buf *b, bool *first, int depth, const char *key, const char *val)
{
	if (!utf8_ok(val))
		return;
	gv_buf_adds(b, *first ? "\n" : ",\n");
	*first = false;
	for (int i = 0; i < 2 * depth; i++)
		gv_buf_addc(b, ' ');
	gv_buf_addc(b, '"');
	gv_buf_adds(b, key);
	gv_buf_add(b, "\": ", 3);
	json_quote(b, val);
}

/* The same member with a value already formatted (raw). */
static void json_member_raw(struct gv_buf *b, bool *first, int depth, const char *key,
			    const char *raw)
{
	gv_buf_adds(b, *first ? "\n" : ",\n");
	*first = false;
	for (int i = 0; i < 2 * depth; i++)
		gv_buf_addc(b, ' ');
	gv_buf_addc(b, '"');
	gv_buf_adds(b, key);
	gv_buf_add(b, "\": ", 3);
	gv_buf_adds(b, raw);
}

/* "<indent>key: value\n" as gv_yaml_dump() writes a string member (left out when not UTF-8). */
static void yaml_member(struct gv_buf *b, int ind, const char *key, const char *val)
{
	if (!utf8_ok(val))
		return;
	for (int i = 0; i < ind; i++)
		gv_buf_addc(b, ' ');
	gv_buf_adds(b, key);
	gv_buf_adds(b, ": ");
	gv_yaml_dump_string(val, strlen(val), b);
	gv_buf_addc(b, '\n');
}

static char *json_quoted(const char *s)
{
	struct gv_buf b = {0};

	if (!utf8_ok(s))
		return NULL;
	json_quote(&b, s);
	return gv_buf_detach(&b);
}

static char *yaml_scalar(const char *s)
{
	struct gv_buf b = {0};

	if (!utf8_ok(s))
		return NULL;
	gv_yaml_dump_string(s, strlen(s), &b);
	return gv_buf_detach(&b);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The keys of props' string members ("process" left out: the offline
 * value is written instead) and, with process, "process", sorted as a
 * Kyverno report's properties (a Go map) are. Returns the count; *keys is
 * owned (free()), the strings borrowed.
 */
static size_t props_keys(const json_t *props, bool process, const char ***keys)
{
	size_t n = 0;
	const char *key;
	json_t *v;

	*keys = gv_xcalloc(json_object_size(props) + 1, sizeof(**keys));
	json_object_foreach((json_t *)props, key, v)
	{
		if (json_is_string(v) && strcmp(key, "process"))
			(*keys)[n++] = key;
	}
	if (process)
		(*keys)[n++] = "process";
	qsort(*keys, n, sizeof(**keys), key_cmp);
	return n;
}

#define OFFLINE_PROCESS "background scan"

/*
 * "properties" as a JSON member at the given depth (after ",
"), with
 * process: "background scan" when process is set; nothing when there is
 * no member at all.
 */
static void props_json(struct gv_buf *b, const json_t *props, int depth, bool process)
{
	const char **keys;
	size_t n;

	if (!json_object_size(props) && process && depth == 3) {
		/* the common case: no properties of its own (-o report) */
		gv_buf_adds(b, ",\n      \"properties\": {\n        \"process\": \"" OFFLINE_PROCESS
			       "\"\n      }");
		return;
	}
	n = props_keys(props, process, &keys);
	if (n) {
		gv_buf_adds(b, ",\n");
		for (int i = 0; i < 2 * depth; i++)
			gv_buf_addc(b, ' ');
		gv_buf_adds(b, "\"properties\": {");
		for (size_t k = 0; k < n; k++) {
			const char *v = strcmp(keys[k], "process")
					    ? json_string_value(json_object_get(props, keys[k]))
					    : OFFLINE_PROCESS;
			gv_buf_adds(b, k ? ",\n" : "\n");
			for (int i = 0; i < 2 * depth + 2; i++)
				gv_buf_addc(b, ' ');
			json_quote(b, keys[k]);
			gv_buf_adds(b, ": ");
			json_quote(b, v);
		}
		gv_buf_addc(b, '\n');
		for (int i = 0; i < 2 * depth; i++)
			gv_buf_addc(b, ' ');
		gv_buf_addc(b, '}');
	}
	free(keys);
}

/* The same as YAML, "<indent>properties:" and its members two spaces further in. */
static void props_yaml(struct gv_buf *b, const json_t *props, int ind, bool process)
{
	const char **keys;
	size_t n;

	if (!json_object_size(props) && process && ind == 2) {
		gv_buf_adds(b, "  properties:\n    process: " OFFLINE_PROCESS "\n");
		return;
	}
	n = props_keys(props, process, &keys);
	if (n) {
		for (int i = 0; i < ind; i++)
			gv_buf_addc(b, ' ');
		gv_buf_adds(b, "properties:\n");
		for (size_t k = 0; k < n; k++) {
			const char *v = strcmp(keys[k], "process")
					    ? json_string_value(json_object_get(props, keys[k]))
					    : OFFLINE_PROCESS;
			for (int i = 0; i < ind + 2; i++)
				gv_buf_addc(b, ' ');
			gv_yaml_dump_string(keys[k], strlen(keys[k]), b);
			gv_buf_adds(b, ": ");
			gv_yaml_dump_string(v, strlen(v), b);
			gv_buf_addc(b, '\n');
		}
	}
	free(keys);
}

/* The message a report result shows: the one its properties set, else the engine's. */
static const char *report_message(const struct apply_result *a, enum engine_status reported)
{
	const char *m = a->props ? engine_report_message(a->props, reported) : NULL;

	return m ? m : a->message;
}

static char *policy_ref(const struct load_policy *lp);

/* metadata.annotations[key] of a ClusterPolicy/Policy or of a CEL policy, or NULL. */
static const char *lp_annotation(const struct load_policy *lp, const char *key)
{
	if (lp->vpol)
		return vpol_annotation(lp->vpol, key);
	return engine_policy_annotation(lp->policy, key);
}

/* Fills st->pinfo (before the workers start). */
static void pinfo_init(struct apply_state *st)
{
	st->pinfo = gv_xcalloc(st->pols.n ? st->pols.n : 1, sizeof(*st->pinfo));
	for (size_t p = 0; p < st->pols.n; p++) {
		const struct load_policy *lp = &st->pols.v[p];
		struct apply_pinfo *pi = &st->pinfo[p];
		const char *scored = lp_annotation(lp, "policies.kyverno.io/scored");
		const char *sev =
		    engine_report_severity(lp_annotation(lp, "policies.kyverno.io/severity"));
		const char *cat = lp_annotation(lp, "policies.kyverno.io/category");
		struct gv_buf meta = {0};
		bool first;

		pi->ref = policy_ref(lp);
		pi->source = !lp->vpol					      ? REPORT_SOURCE
			     : !strcmp(lp->kind, "ValidatingAdmissionPolicy") ? REPORT_SOURCE_VAP
									      : REPORT_SOURCE_VPOL;
		pi->unscored = scored && !strcmp(scored, "false");
		pi->json_ref = json_quoted(pi->ref);
		pi->yaml_ref = yaml_scalar(pi->ref);
		if (sev)
			yaml_member(&meta, 2, "severity", sev);
		if (cat && *cat)
			yaml_member(&meta, 2, "category", cat);
		gv_buf_adds(&meta, ""); /* never NULL */
		pi->report_meta = gv_buf_detach(&meta);
		first = false;
		if (sev)
			json_member(&meta, &first, 3, "severity", sev);
		if (cat && *cat)
			json_member(&meta, &first, 3, "category", cat);
		gv_buf_adds(&meta, "");
		pi->report_meta_json = gv_buf_detach(&meta);
	}
}

static void pinfo_release(struct apply_state *st)
{
	for (size_t p = 0; st->pinfo && p < st->pols.n; p++) {
		free(st->pinfo[p].ref);
		free(st->pinfo[p].json_ref);
		free(st->pinfo[p].yaml_ref);
		free(st->pinfo[p].report_meta);
		free(st->pinfo[p].report_meta_json);
	}
	free(st->pinfo);
}

/* Result as reports show it: an unscored fail is a warning. */
static enum engine_status reported_status(const struct apply_state *st,
					  const struct apply_result *a)
{
	if (a->status == ENGINE_FAIL && st->pinfo[a->policy].unscored)
		return ENGINE_WARN;
	return a->status;
}

/* How Kyverno counts a result: an unscored or (--audit-warn) Audit failure is a warning. */
static enum engine_status counted_status(const struct apply_state *st, const struct apply_result *a)
{
	if (a->status == ENGINE_FAIL &&
	    (st->pinfo[a->policy].unscored || (st->audit_warn && a->action == ENGINE_AUDIT)))
		return ENGINE_WARN;
	return a->status;
}

static const char *status_title(enum engine_status s)
{
	static const char *const t[] = {"Pass", "Fail", "Warn", "Error", "Skip"};

	return t[s];
}

/* The identity of one resource, as the outputs show it. */
struct apply_resinfo {
	const char *api_version, *kind, *ns, *name, *uid; /* borrowed from the object */
};

static void resinfo_get(const json_t *o, struct apply_resinfo *ri)
{
	const json_t *md = json_object_get(o, "metadata");

	ri->api_version = load_res_api_version(o);
	ri->kind = load_res_kind(o);
	ri->ns = load_str(md, "namespace", NULL);
	ri->name = load_str(md, "name", NULL);
	ri->uid = load_str(md, "uid", NULL);
}

/* Kyverno's default output for one resource: the failed rules of each policy. */
static void fmt_failures(struct apply_part *pt, const struct apply_resinfo *ri, size_t i0)
{
	const struct apply_state *st = pt->st;

	for (size_t i = i0; i < pt->n;) {
		size_t j = i, n = 0;

		while (j < pt->n && pt->v[j].policy == pt->v[i].policy)
			j++;
		for (size_t k = i; k < j; k++) {
			const struct apply_result *a = &pt->v[k];
			if (a->status != ENGINE_FAIL)
				continue;
			if (!n++) {
				bool audit_warn = st->audit_warn && a->action == ENGINE_AUDIT;
				gv_buf_addf(&pt->out, "policy %s -> resource %s/%s/%s failed%s:\n",
					    st->pinfo[a->policy].ref, ri->ns, ri->kind, ri->name,
					    audit_warn ? " as audit warning" : "");
			}
			gv_buf_addf(&pt->out, "%zu - %s %s\n", n, a->rule, a->message);
		}
		if (n)
			gv_buf_addc(&pt->out, '\n');
		i = j;
	}
}

/* -o json: each result as an element of the list (json_dumps with JSON_INDENT(2)). */
static void fmt_json(struct apply_part *pt, const struct apply_resinfo *ri, size_t i0)
{
	const struct apply_state *st = pt->st;
	struct gv_buf res = {0};
	bool first = true;

	json_member(&res, &first, 3, "apiVersion", ri->api_version);
	json_member(&res, &first, 3, "kind", ri->kind);
	if (*ri->ns)
		json_member(&res, &first, 3, "namespace", ri->ns);
	json_member(&res, &first, 3, "name", ri->name);
	gv_buf_adds(&res, first ? "{}" : "\n    }");
	for (size_t i = i0; i < pt->n; i++) {
		const struct apply_result *a = &pt->v[i];
		const struct apply_pinfo *pi = &st->pinfo[a->policy];

		first = true;
		gv_buf_adds(&pt->out, ",\n  {");
		if (pi->json_ref)
			json_member_raw(&pt->out, &first, 2, "policy", pi->json_ref);
		json_member(&pt->out, &first, 2, "rule", a->rule);
		gv_buf_adds(&pt->out, first ? "\n    \"resource\": {" : ",\n    \"resource\": {");
		first = false;
		gv_buf_adds(&pt->out, gv_buf_str(&res) + (res.data[0] == '{' ? 1 : 0));
		json_member(&pt->out, &first, 2, "result", engine_status_name(a->status));
		json_member(&pt->out, &first, 2, "action",
			    a->action == ENGINE_ENFORCE ? "Enforce" : "Audit");
		json_member_raw(&pt->out, &first, 2, "scored", pi->unscored ? "false" : "true");
		json_member(&pt->out, &first, 2, "message", a->message);
		if (a->props)
			props_json(&pt->out, a->props, 2, false);
		gv_buf_adds(&pt->out, "\n  }");
		pt->nout++;
	}
	gv_buf_release(&res);
}

/* -o yaml: each result as gv_yaml_dump() writes a one-element list. */
static void fmt_yaml(struct apply_part *pt, const struct apply_resinfo *ri, size_t i0)
{
	const struct apply_state *st = pt->st;
	struct gv_buf res = {0};

	yaml_member(&res, 4, "apiVersion", ri->api_version);
	yaml_member(&res, 4, "kind", ri->kind);
	if (*ri->ns)
		yaml_member(&res, 4, "namespace", ri->ns);
	yaml_member(&res, 4, "name", ri->name);
	for (size_t i = i0; i < pt->n; i++) {
		const struct apply_result *a = &pt->v[i];
		const struct apply_pinfo *pi = &st->pinfo[a->policy];
		size_t start = pt->out.len;

		if (pi->yaml_ref) {
			gv_buf_adds(&pt->out, "  policy: ");
			gv_buf_adds(&pt->out, pi->yaml_ref);
			gv_buf_addc(&pt->out, '\n');
		}
		yaml_member(&pt->out, 2, "rule", a->rule);
		gv_buf_adds(&pt->out, "  resource:\n");
		gv_buf_add(&pt->out, res.data, res.len);
		yaml_member(&pt->out, 2, "result", engine_status_name(a->status));
		yaml_member(&pt->out, 2, "action",
			    a->action == ENGINE_ENFORCE ? "Enforce" : "Audit");
		gv_buf_adds(&pt->out, pi->unscored ? "  scored: false\n" : "  scored: true\n");
		yaml_member(&pt->out, 2, "message", a->message);
		if (a->props)
			props_yaml(&pt->out, a->props, 2, false);
		/* "- " replaces the indent of the element's first line */
		pt->out.data[start] = '-';
		pt->nout++;
	}
	gv_buf_release(&res);
}

/* -o table, -t: the rows of one resource, as NUL-terminated cells without the ID. */
static void fmt_table(struct apply_part *pt, const struct apply_resinfo *ri, size_t i0)
{
	const struct apply_state *st = pt->st;
	/* -o table and --detailed-results show every result; -t those that did not pass. */
	bool all = st->detailed || !st->kyverno_table;

	for (size_t i = i0; i < pt->n; i++) {
		const struct apply_result *a = &pt->v[i];
		enum engine_status s = counted_status(st, a);

		if (!all && (s == ENGINE_PASS || s == ENGINE_SKIP))
			continue;
		size_t at = pt->out.len, c = 1;

		gv_buf_add(&pt->out, st->pinfo[a->policy].ref,
			   strlen(st->pinfo[a->policy].ref) + 1);
		gv_buf_add(&pt->out, a->rule, strlen(a->rule) + 1);
		gv_buf_adds(&pt->out, ri->ns);
		gv_buf_addc(&pt->out, '/');
		gv_buf_adds(&pt->out, ri->kind);
		gv_buf_addc(&pt->out, '/');
		gv_buf_add(&pt->out, ri->name, strlen(ri->name) + 1);
		gv_buf_add(&pt->out, status_title(s), strlen(status_title(s)) + 1);
		if (st->detailed) {
			size_t m = pt->out.len;
			gv_buf_add(&pt->out, a->message, strlen(a->message) + 1);
			for (char *ch = pt->out.data + m; *ch; ch++)
				if (*ch == '\n' || *ch == '\r' || *ch == '\t')
					*ch = ' '; /* table_one_line() */
		}
		/* the column widths, here in the worker rather than when printing */
		for (const char *cell = pt->out.data + at; cell < pt->out.data + pt->out.len;
		     cell += strlen(cell) + 1, c++) {
			size_t w = cell_width(cell);
			if (w > pt->twidth[c])
				pt->twidth[c] = w;
		}
		pt->nout++;
	}
}

/*
 * -o report with --output-format json: per result the namespace, the
 * reported status and the report's list item as json_dumps() writes it
 * with JSON_INDENT(2) in "results", after ",\n".
 */
static void fmt_report_json(struct apply_part *pt, const struct apply_resinfo *ri, size_t i0)
{
	const struct apply_state *st = pt->st;
	struct gv_buf res = {0};
	bool first = true;

	/* resources: [{apiVersion, kind, namespace, name, uid}] */
	json_member(&res, &first, 5, "apiVersion", ri->api_version);
	json_member(&res, &first, 5, "kind", ri->kind);
	if (*ri->ns)
		json_member(&res, &first, 5, "namespace", ri->ns);
	json_member(&res, &first, 5, "name", ri->name);
	if (*ri->uid)
		json_member(&res, &first, 5, "uid", ri->uid);
	gv_buf_adds(&res, first ? "{}" : "\n        }");
	for (size_t i = i0; i < pt->n; i++) {
		const struct apply_result *a = &pt->v[i];
		const struct apply_pinfo *pi = &st->pinfo[a->policy];
		enum engine_status s = reported_status(st, a);

		first = false;
		gv_buf_add(&pt->out, ri->ns, strlen(ri->ns) + 1);
		gv_buf_addc(&pt->out, (char)('0' + s));
		gv_buf_adds(&pt->out, ",\n    {\n      \"source\": \"");
		gv_buf_adds(&pt->out, pi->source);
		gv_buf_adds(&pt->out, "\"");
		if (pi->json_ref)
			json_member_raw(&pt->out, &first, 3, "policy", pi->json_ref);
		json_member(&pt->out, &first, 3, "rule", a->rule);
		json_member(&pt->out, &first, 3, "result", engine_status_name(s));
		json_member_raw(&pt->out, &first, 3, "scored", pi->unscored ? "false" : "true");
		gv_buf_adds(&pt->out, pi->report_meta_json);
		json_member(&pt->out, &first, 3, "message", report_message(a, s));
		gv_buf_adds(&pt->out, ",\n      \"resources\": [\n        ");
		gv_buf_adds(&pt->out, res.data[0] == '{' ? "{}" : "{");
		if (res.data[0] != '{')
			gv_buf_add(&pt->out, res.data, res.len);
		gv_buf_adds(&pt->out, "\n      ]");
		props_json(&pt->out, a->props, 3, true);
		gv_buf_adds(&pt->out, "\n    }");
		gv_buf_add(&pt->out, "", 1);
		pt->nout++;
	}
	gv_buf_release(&res);
}

/* -o report (YAML): per result the namespace, the reported status and the report's list item. */
static void fmt_report(struct apply_part *pt, const struct apply_resinfo *ri, size_t i0)
{
	const struct apply_state *st = pt->st;
	struct gv_buf res = {0};

	/* resources: [{apiVersion, kind, namespace, name, uid}] */
	yaml_member(&res, 4, "apiVersion", ri->api_version);
	yaml_member(&res, 4, "kind", ri->kind);
	if (*ri->ns)
		yaml_member(&res, 4, "namespace", ri->ns);
	yaml_member(&res, 4, "name", ri->name);
	if (*ri->uid)
		yaml_member(&res, 4, "uid", ri->uid);
	if (res.len > 2)
		res.data[2] = '-';
	for (size_t i = i0; i < pt->n; i++) {
		const struct apply_result *a = &pt->v[i];
		const struct apply_pinfo *pi = &st->pinfo[a->policy];
		enum engine_status s = reported_status(st, a);

		gv_buf_add(&pt->out, ri->ns, strlen(ri->ns) + 1);
		gv_buf_addc(&pt->out, (char)('0' + s));
		gv_buf_adds(&pt->out, "- source: ");
		gv_buf_adds(&pt->out, pi->source);
		gv_buf_addc(&pt->out, '\n');
		if (pi->yaml_ref) {
			gv_buf_adds(&pt->out, "  policy: ");
			gv_buf_adds(&pt->out, pi->yaml_ref);
			gv_buf_addc(&pt->out, '\n');
		}
		yaml_member(&pt->out, 2, "rule", a->rule);
		yaml_member(&pt->out, 2, "result", engine_status_name(s));
		gv_buf_adds(&pt->out, pi->unscored ? "  scored: false\n" : "  scored: true\n");
		gv_buf_adds(&pt->out, pi->report_meta);
		yaml_member(&pt->out, 2, "message", report_message(a, s));
		gv_buf_adds(&pt->out, "  resources:\n");
		gv_buf_add(&pt->out, res.data, res.len);
		props_yaml(&pt->out, a->props, 2, true);
		gv_buf_add(&pt->out, "", 1);
		pt->nout++;
	}
	gv_buf_release(&res);
}

/* Counts and formats the results [i0, pt->n) of resource r, then frees them. */
static void format_resource(struct apply_part *pt, size_t r, size_t i0)
{
	const struct apply_state *st = pt->st;
	struct apply_resinfo ri;

	for (size_t i = i0; i < pt->n; i++) {
		const struct apply_result *a = &pt->v[i];
		pt->counts[counted_status(st, a)]++;
		if (a->status == ENGINE_FAIL && a->action == ENGINE_ENFORCE)
			pt->enforce_failed = true;
	}
	resinfo_get(st->res.v[r].obj, &ri);
	switch (st->out) {
	case OUT_KYVERNO:
		fmt_failures(pt, &ri, i0);
		break;
	case OUT_TABLE:
		fmt_table(pt, &ri, i0);
		break;
	case OUT_JSON:
		fmt_json(pt, &ri, i0);
		break;
	case OUT_YAML:
		fmt_yaml(pt, &ri, i0);
		break;
	case OUT_REPORT:
		if (st->report_json)
			fmt_report_json(pt, &ri, i0);
		else
			fmt_report(pt, &ri, i0);
		break;
	}
	for (size_t i = i0; i < pt->n; i++) {
		free(pt->v[i].rule);
		free(pt->v[i].message);
		json_decref(pt->v[i].props);
	}
	pt->n = i0;
}

static void *evaluate_range(void *arg)
{
	struct apply_part *pt = arg;
	const struct apply_state *st = pt->st;
	FILE *errs = pt->errs;
	/* what the policies of one resource share (the podSecurity checks) */
	struct engine_memo *memo = engine_memo_new();

	for (size_t r = pt->r0; r < pt->r1; r++) {
		size_t i0 = pt->n;

		engine_memo_clear(memo); /* a new resource may take a freed one's address */
		for (size_t p = 0; p < st->pols.n; p++) {
			struct engine_policy *pol = st->pols.v[p].policy;
			struct values_eval ev;
			struct engine_report rep = {0};
			struct gv_err e = {0};
			char buf[2200];

			if (!pol && st->pols.v[p].unsupported) {
				/* Never no result: a policy gavel does not evaluate is an error. */
				struct apply_result *a = part_add(pt);
				a->resource = r;
				a->policy = p;
				a->rule = gv_xstrdup("");
				a->message = gv_xstrdup(st->pols.v[p].unsupported);
				a->status = ENGINE_ERROR;
				a->action = ENGINE_AUDIT;
				a->props = NULL;
				continue;
			}
			if (st->pols.v[p].vpol) {
				apply_cel(pt, errs, r, p);
				continue;
			}
			if (!pol)
				continue;
			if (values_eval_init(&ev, &st->values, st->has_ui ? &st->ui : NULL,
					     engine_policy_name(pol), st->res.v[r].obj, NULL, &e)) {
				fprintf(errs, "gavel apply: %s\n",
					gv_err_str(&e, buf, sizeof(buf)));
				pt->bad = true;
				continue;
			}
			/* validate.cel paramRef reads the given resources (the CLI's fake client)
			 */
			ev.param_sources[0] = &st->params;
			/* the resource itself, not a copy values wrote into: shared by its policies
			 */
			ev.in.memo = ev.in.object == st->res.v[r].obj ? memo : NULL;
			ev.in.no_pss_properties = !wants_props(st);
			if (engine_evaluate(st->sets[p], &ev.in, ENGINE_ADMISSION, &rep, &e)) {
				gv_err_prefix(&e, "%s:%d: %s %s: policy %s: ", st->res.v[r].file,
					      st->res.v[r].line, load_res_kind(st->res.v[r].obj),
					      load_res_name(st->res.v[r].obj),
					      engine_policy_name(pol));
				fprintf(errs, "%s\n", gv_err_str(&e, buf, sizeof(buf)));
				pt->bad = true;
			}
			for (size_t i = 0; i < rep.n; i++) {
				if (rep.v[i].policy != pol)
					continue;
				for (size_t j = 0; j < rep.v[i].nrules; j++) {
					struct engine_rule_result *rr = &rep.v[i].rules[j];
					struct apply_result *a = part_add(pt);
					a->resource = r;
					a->policy = p;
					a->rule = gv_xstrdup(rr->rule ? rr->rule : "");
					a->message = gv_xstrdup(rr->message ? rr->message : "");
					a->status = rr->status;
					a->action = rr->action;
					a->props = wants_props(st)
						       ? props_take(&rr->properties, rr->exceptions)
						       : NULL;
				}
			}
			engine_report_release(&rep);
			values_eval_release(&ev);
		}
		format_resource(pt, r, i0);
		/* freed here, by the workers, rather than by the main thread after the batch */
		json_decref(st->res.v[r].obj);
		st->res.v[r].obj = NULL;
	}
	engine_memo_free(memo);
	return NULL;
}

static void reports_add(struct apply_state *st, const char *rns, enum engine_status s,
			const char *text, size_t len);

/* A table cell's width as table_print() counts it: the bytes that start a code point. */
static size_t cell_width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* Prints (or keeps, where the output needs every result) what a worker formatted. */
static void print_part(struct apply_state *st, const struct apply_part *pt)
{
	const char *p = pt->out.data, *end = p + pt->out.len;
	size_t ncols = st->detailed ? 6 : 5;

	if (!pt->out.len)
		return;
	switch (st->out) {
	case OUT_KYVERNO:
	case OUT_YAML:
		fwrite(p, 1, pt->out.len, stdout);
		break;
	case OUT_JSON:
		if (!st->nprinted) {
			fputs("[\n", stdout);
			p += 2; /* the first element's ",\n" */
		}
		fwrite(p, 1, (size_t)(end - p), stdout);
		break;
	case OUT_TABLE:
		if (!st->tspool)
			st->tspool = tmpfile();
		if (!st->tspool) {
			fprintf(stderr, "gavel apply: temporary file for the table: %s\n",
				strerror(errno));
			exit(2);
		}
		/* the rows as the worker wrote them (no ID: table_flush() numbers them) */
		fwrite(p, 1, pt->out.len, st->tspool);
		for (size_t c = 1; c < ncols; c++)
			if (pt->twidth[c] > st->twidth[c])
				st->twidth[c] = pt->twidth[c];
		st->trows += pt->nout;
		break;
	case OUT_REPORT:
		while (p < end) {
			const char *ns = p, *text;
			enum engine_status s;
			size_t len;
			p += strlen(p) + 1;
			s = (enum engine_status)(*p++ - '0');
			text = p;
			len = strlen(p);
			p += len + 1;
			reports_add(st, ns, s, text, len);
		}
		break;
	}
	st->nprinted += pt->nout;
}

/* The "apiVersion kind" of a paramKind, new reference. */
static json_t *param_kind_key(const json_t *pk)
{
	return json_sprintf("%s %s", load_str(pk, "apiVersion", NULL), load_str(pk, "kind", NULL));
}

/* st->param_kinds: the kinds the policies' validate.cel paramKind names. */
static void param_kinds_find(struct apply_state *st)
{
	for (size_t p = 0; p < st->pols.n; p++) {
		const json_t *doc =
		    st->pols.v[p].policy ? engine_policy_doc(st->pols.v[p].policy) : NULL;
		const json_t *rule;
		size_t i;
		json_array_foreach(json_object_get(json_object_get(doc, "spec"), "rules"), i, rule)
		{
			const json_t *cel =
			    json_object_get(json_object_get(rule, "validate"), "cel");
			if (!json_is_object(json_object_get(cel, "paramKind")))
				continue;
			if (!st->param_kinds)
				st->param_kinds = json_array();
			json_array_append_new(st->param_kinds,
					      param_kind_key(json_object_get(cel, "paramKind")));
		}
	}
}

/*
 * The first pass's batch lr[0..n): keeps (a copy of) each resource of a
 * paramKind whose key was not kept before (the first one wins, as
 * de-duplication does in the evaluating pass), frees the rest.
 */
static void params_take(struct apply_state *st, struct load_resource *lr, size_t n, json_t *keys)
{
	for (size_t r = 0; r < n; r++) {
		const json_t *o = lr[r].obj;
		json_t *kind = json_sprintf("%s %s", load_res_api_version(o), load_res_kind(o));
		size_t i;
		json_t *k;

		json_array_foreach(st->param_kinds, i, k)
		{
			char *key;

			if (!json_equal(k, kind))
				continue;
			key = load_resource_key(o);
			if (!json_object_get(keys, key)) {
				json_object_set_new(keys, key, json_true());
				if ((st->params.n & (st->params.n - 1)) == 0)
					st->params.v = gv_xrealloc(
					    st->params.v, (st->params.n ? 2 * st->params.n : 1) *
							      sizeof(*st->params.v));
				/* a copy outside the parsing threads' chunks, which are reused */
				st->params.v[st->params.n++] =
				    (struct load_resource){.obj = json_deep_copy(o)};
			}
			free(key);
			break;
		}
		json_decref(kind);
		json_decref(lr[r].obj);
		free(lr[r].file);
	}
}

/* Evaluates the resources of st->res and prints their results, with st->jobs threads. */
static void evaluate_batch(struct apply_state *st)
{
	size_t nparts = st->jobs > 1 ? (size_t)st->jobs : 1, per;
	struct apply_part *parts;
	pthread_t *th;

	if (nparts > GV_ARRAY_LEN(st->partbuf))
		nparts = GV_ARRAY_LEN(st->partbuf);
	if (nparts > st->res.n)
		nparts = st->res.n ? st->res.n : 1;
	per = (st->res.n + nparts - 1) / nparts;
	parts = gv_xcalloc(nparts, sizeof(*parts));
	th = gv_xcalloc(nparts, sizeof(*th));
	for (size_t k = 0; k < nparts; k++) {
		parts[k].st = st;
		parts[k].out = st->partbuf[k];
		parts[k].errs = worker_errs(st, k);
		parts[k].r0 = k * per < st->res.n ? k * per : st->res.n;
		parts[k].r1 = (k + 1) * per < st->res.n ? (k + 1) * per : st->res.n;
		if (k && pthread_create(&th[k], NULL, evaluate_range, &parts[k]))
			evaluate_range(&parts[k]), th[k] = 0;
	}
	evaluate_range(&parts[0]);
	for (size_t k = 0; k < nparts; k++) {
		if (k && th[k])
			pthread_join(th[k], NULL);
		errs_drain(st, k);
		st->bad = st->bad || parts[k].bad;
		for (int c = 0; c < 5; c++)
			st->counts[c] += parts[k].counts[c];
		st->enforce_failed = st->enforce_failed || parts[k].enforce_failed;
		print_part(st, &parts[k]);
		gv_buf_reset(&parts[k].out);
		st->partbuf[k] = parts[k].out;
		free(parts[k].v);
	}
	free(parts);
	free(th);
}

/* ---- output ---- */

static char *policy_ref(const struct load_policy *lp)
{
	if (*lp->namespace && !strcmp(lp->kind, "Policy"))
		return gv_xasprintf("%s/%s", lp->namespace, lp->name);
	return gv_xstrdup(lp->name);
}

/* The table (-o table, -t): the header, then the rows kept in the temporary file. */
static void table_flush(struct apply_state *st)
{
	static const char *const head[] = {"ID", "POLICY", "RULE", "RESOURCE", "RESULT", "MESSAGE"};
	size_t ncols = st->detailed ? 6 : 5;
	char *line[6] = {0};
	size_t cap[6] = {0};
	char id[24];
	struct gv_buf b = {0};

	st->twidth[0] = (size_t)snprintf(id, sizeof(id), "%zu", st->trows);
	for (size_t c = 0; c < ncols; c++)
		if (cell_width(head[c]) > st->twidth[c])
			st->twidth[c] = cell_width(head[c]);
	table_border(stdout, st->twidth, ncols);
	table_row(stdout, (char *const *)head, st->twidth, ncols);
	if (st->trows) {
		table_border(stdout, st->twidth, ncols);
		if (fseek(st->tspool, 0, SEEK_SET)) {
			fprintf(stderr, "gavel apply: temporary file for the table: %s\n",
				strerror(errno));
			exit(2);
		}
	}
	for (size_t r = 0; r < st->trows; r++) {
		char *cells[6];
		char *d = id + sizeof(id) - 1;

		*d = '\0';
		for (size_t v = r + 1; v; v /= 10)
			*--d = (char)('0' + v % 10);
		cells[0] = d;
		for (size_t c = 1; c < ncols; c++) {
			if (getdelim(&line[c], &cap[c], '\0', st->tspool) <= 0) {
				fputs("gavel apply: temporary file for the table: short read\n",
				      stderr);
				exit(2);
			}
			cells[c] = line[c];
		}
		table_row_add(&b, cells, st->twidth, ncols);
		if (b.len >= 64u << 10) {
			fwrite(b.data, 1, b.len, stdout);
			gv_buf_reset(&b);
		}
	}
	fwrite(b.data, 1, b.len, stdout);
	gv_buf_release(&b);
	table_border(stdout, st->twidth, ncols);
	for (size_t c = 0; c < ncols; c++)
		free(line[c]);
}

static void print_summary(const struct apply_state *st)
{
	printf("\npass: %zu, fail: %zu, warn: %zu, error: %zu, skip: %zu \n", st->counts[0],
	       st->counts[1], st->counts[2], st->counts[3], st->counts[4]);
}

/* One report (PolicyReport for ns, ClusterPolicyReport when ns is ""), its results empty. */
static json_t *report_new(const char *ns)
{
	json_t *r = json_object(), *md = json_object(), *labels = json_object(), *sum;
	char name[64];

	json_object_set_new(r, "apiVersion", json_string("wgpolicyk8s.io/v1alpha2"));
	json_object_set_new(r, "kind", json_string(*ns ? "PolicyReport" : "ClusterPolicyReport"));
	if (*ns)
		snprintf(name, sizeof(name), "polr-ns-%s", ns); /* 63 characters at most */
	else
		snprintf(name, sizeof(name), "clusterpolicyreport");
	json_object_set_new(md, "name", json_string(name));
	if (*ns)
		json_object_set_new(md, "namespace", json_string(ns));
	json_object_set_new(labels, "app.kubernetes.io/managed-by", json_string("gavel"));
	json_object_set_new(md, "labels", labels);
	json_object_set_new(r, "metadata", md);
	sum = json_object();
	json_object_set_new(sum, "pass", json_integer(0));
	json_object_set_new(sum, "fail", json_integer(0));
	json_object_set_new(sum, "warn", json_integer(0));
	json_object_set_new(sum, "error", json_integer(0));
	json_object_set_new(sum, "skip", json_integer(0));
	json_object_set_new(r, "summary", sum);
	json_object_set_new(r, "results", json_array());
	return r;
}

#define NSREP_FLUSH    (64u << 10) /* a namespace's buffer goes to the spool file at this size */
#define NSREP_BUFFERED (4u << 20)  /* and every buffer when they hold this much together */

static void nsrep_flush(struct apply_state *st, struct apply_nsrep *r)
{
	if (!r->buf.len)
		return;
	if (!st->spool)
		st->spool = tmpfile();
	if (!st->spool || fseek(st->spool, 0, SEEK_END)) {
		fprintf(stderr, "gavel apply: temporary file for the reports: %s\n",
			strerror(errno));
		exit(2);
	}
	r->chunks = gv_xrealloc(r->chunks, (r->nchunks + 1) * sizeof(*r->chunks));
	r->chunks[r->nchunks].off = ftell(st->spool);
	r->chunks[r->nchunks].len = r->buf.len;
	r->nchunks++;
	if (fwrite(gv_buf_str(&r->buf), 1, r->buf.len, st->spool) != r->buf.len) {
		fprintf(stderr, "gavel apply: temporary file for the reports: %s\n",
			strerror(errno));
		exit(2);
	}
	st->buffered -= r->buf.len;
	gv_buf_reset(&r->buf);
}

/*
 * Adds one result (its YAML list item, text) to the report of namespace
 * rns. YAML reports keep each namespace's results as text, spooled to a
 * temporary file, so memory holds counts, not results.
 */
static void reports_add(struct apply_state *st, const char *rns, enum engine_status s,
			const char *text, size_t len)
{
	const json_t *idx;
	struct apply_nsrep *r;

	if (!st->nsindex)
		st->nsindex = json_object();
	idx = json_object_get(st->nsindex, rns);
	if (!idx) {
		st->nsreps = gv_xrealloc(st->nsreps, (st->nnsreps + 1) * sizeof(*st->nsreps));
		memset(&st->nsreps[st->nnsreps], 0, sizeof(*st->nsreps));
		st->nsreps[st->nnsreps].ns = gv_xstrdup(rns);
		json_object_set_new(st->nsindex, rns, json_integer((json_int_t)st->nnsreps));
		r = &st->nsreps[st->nnsreps++];
	} else {
		r = &st->nsreps[json_integer_value(idx)];
	}
	r->sum[s]++;
	gv_buf_add(&r->buf, text, len);
	st->buffered += len;
	if (r->buf.len >= NSREP_FLUSH)
		nsrep_flush(st, r);
	if (st->buffered >= NSREP_BUFFERED)
		for (size_t k = 0; k < st->nnsreps; k++)
			nsrep_flush(st, &st->nsreps[k]);
}

/*
 * The reports, in the order their namespaces were first seen: YAML
 * documents (gv_yaml_dump()), or with --output-format json each report as
 * json_dumps() writes it with JSON_INDENT(2), one after the other.
 */
static void reports_print(struct apply_state *st)
{
	static const char *const keys[] = {"pass", "fail", "warn", "error", "skip"};
	char copy[65536];

	for (size_t k = 0; k < st->nnsreps; k++) {
		struct apply_nsrep *r = &st->nsreps[k];
		json_t *rep = report_new(r->ns), *sum = json_object_get(rep, "summary");
		size_t skip = st->report_json ? 1 : 0; /* the first item's ',' */

		for (int i = 0; i < 5; i++)
			json_object_set_new(sum, keys[i], json_integer((json_int_t)r->sum[i]));
		json_object_del(rep, "results");
		if (st->report_json) {
			/* the report without its results ends "\n}": they go before that */
			char *head = json_dumps(rep, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
			size_t len = strlen(head);
			fwrite(head, 1, len >= 2 ? len - 2 : len, stdout);
			fputs(",\n  \"results\": [", stdout);
			free(head);
		} else {
			struct gv_buf b = {0};
			gv_yaml_dump(rep, &b);
			if (k)
				fputs("---\n", stdout);
			fputs(gv_buf_str(&b), stdout);
			fputs("results:\n", stdout);
			gv_buf_release(&b);
		}
		json_decref(rep);
		for (size_t c = 0; c < r->nchunks; c++) {
			size_t left = r->chunks[c].len;
			if (fseek(st->spool, r->chunks[c].off, SEEK_SET)) {
				fprintf(stderr, "gavel apply: temporary file for the reports: %s\n",
					strerror(errno));
				exit(2);
			}
			while (left) {
				size_t n = fread(copy, 1, left < sizeof(copy) ? left : sizeof(copy),
						 st->spool);
				if (!n) {
					fputs("gavel apply: temporary file for the reports: short "
					      "read\n",
					      stderr);
					exit(2);
				}
				fwrite(copy + skip, 1, n - skip, stdout);
				skip = 0;
				left -= n;
			}
		}
		fputs(gv_buf_str(&r->buf) + (r->buf.len ? skip : 0), stdout);
		if (st->report_json)
			fputs("\n  ]\n}\n", stdout);
	}
}

static void reports_release(struct apply_state *st)
{
	for (size_t k = 0; k < st->nnsreps; k++) {
		free(st->nsreps[k].ns);
		gv_buf_release(&st->nsreps[k].buf);
		free(st->nsreps[k].chunks);
	}
	free(st->nsreps);
	json_decref(st->nsindex);
	if (st->spool)
		fclose(st->spool);
}

/* Ends the output once every batch was printed. */
static void print_end(struct apply_state *st)
{
	switch (st->out) {
	case OUT_KYVERNO:
		print_summary(st);
		return;
	case OUT_TABLE:
		table_flush(st);
		print_summary(st);
		return;
	case OUT_REPORT:
		if (st->policy_report)
			printf("%s\nPOLICY REPORT:\n%s\n", DIVIDER, DIVIDER);
		reports_print(st);
		return;
	case OUT_JSON:
		fputs(st->nprinted ? "\n]\n" : "[]\n", stdout);
		return;
	case OUT_YAML:
		if (!st->nprinted) {
			struct gv_buf b = {0};
			json_t *none = json_array();
			gv_yaml_dump(none, &b);
			fputs(gv_buf_str(&b), stdout);
			gv_buf_release(&b);
			json_decref(none);
		}
		return;
	}
}

/* ---- streaming ---- */

/*
 * The keys of the resources evaluated so far, for de-duplication without
 * keeping the objects, and exact: memory holds one 8-byte slot per key
 * (the upper half of a 64-bit hash of "group/kind/namespace/name" and
 * where its record is), and a temporary file holds the records (the
 * whole hash, the key itself, and the file and line where it was first
 * seen). A slot whose hash half matches is confirmed by reading its
 * record back and comparing the keys, so two keys that share a hash are
 * never taken for duplicates; the table grows by reading the records
 * back in order, so only the new table is in memory while it grows.
 * Memory: 8 bytes a slot, the table from 4/7 to 7/8 full (9 to 18 bytes
 * a resource).
 */
struct apply_seen {
	uint64_t *v; /* slot: hash >> 32 << 32 | (record offset / 8 + 1); 0 = empty */
	size_t cap, n;
	FILE *f;      /* the records, 8-byte aligned (NULL until the first key) */
	uint64_t len; /* bytes written to f */
	bool dirty;   /* f has buffered writes */
	char *rec;    /* owned: the record last read back, then its file name */
	size_t reccap;
};

/* A record's fixed part; the key, then the file name, follow (no NUL), padded to 8 bytes. */
struct apply_seen_rec {
	uint64_t hash;
	int32_t line;
	uint32_t keylen, filelen, pad;
};

static uint64_t key_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a, then a final mix */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static _Noreturn void seen_fail(const char *what)
{
	fprintf(stderr, "gavel apply: temporary file for the resource keys: %s\n", what);
	exit(2);
}

/* Reads the record at off into set->rec (the fixed part first, then key and file). */
static const struct apply_seen_rec *seen_read(struct apply_seen *set, uint64_t off)
{
	struct apply_seen_rec h;
	size_t more;

	if (set->dirty) {
		if (fflush(set->f))
			seen_fail(strerror(errno));
		set->dirty = false;
	}
	if (pread(fileno(set->f), &h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
		seen_fail("short read");
	more = (size_t)h.keylen + h.filelen;
	if (sizeof(h) + more + 1 > set->reccap) {
		set->reccap = sizeof(h) + more + 1;
		set->rec = gv_xrealloc(set->rec, set->reccap);
	}
	memcpy(set->rec, &h, sizeof(h));
	if (more && pread(fileno(set->f), set->rec + sizeof(h), more, (off_t)(off + sizeof(h))) !=
			(ssize_t)more)
		seen_fail("short read");
	return (const struct apply_seen_rec *)(void *)set->rec;
}

#define SEEN_BLOCK (64u << 10)

/* The free slot for hash in set->v (no key of the table is compared). */
static uint64_t *seen_free_slot(struct apply_seen *set, uint64_t hash)
{
	size_t i = (size_t)hash & (set->cap - 1);

	while (set->v[i])
		i = (i + 1) & (set->cap - 1);
	return &set->v[i];
}

/* Doubles the table, refilled from the records (the old table is freed first). */
static void seen_grow(struct apply_seen *set)
{
	char *block = NULL;
	uint64_t off = 0;

	free(set->v);
	set->cap = set->cap ? 2 * set->cap : 1024;
	set->v = gv_xcalloc(set->cap, sizeof(*set->v));
	if (set->len) {
		if (fflush(set->f))
			seen_fail(strerror(errno));
		set->dirty = false;
		block = gv_xmalloc(SEEN_BLOCK);
	}
	while (off < set->len) {
		/* a block of whole records (one record larger than a block is read alone) */
		size_t want = set->len - off < SEEN_BLOCK ? (size_t)(set->len - off) : SEEN_BLOCK;
		size_t at = 0;
		ssize_t got = pread(fileno(set->f), block, want, (off_t)off);
		if (got < (ssize_t)sizeof(struct apply_seen_rec))
			seen_fail("short read");
		for (;;) {
			struct apply_seen_rec r;
			size_t size;
			if ((size_t)got - at < sizeof(r))
				break;
			memcpy(&r, block + at, sizeof(r));
			size = (sizeof(r) + r.keylen + r.filelen + 7) & ~(size_t)7;
			if (at && size > (size_t)got - at)
				break;
			*seen_free_slot(set, r.hash) = (r.hash >> 32 << 32) | ((off + at) / 8 + 1);
			at += size;
			if (at >= (size_t)got)
				break;
		}
		off += at;
	}
	free(block);
}

/*
 * Looks key up: returns true when it was seen before, with *first_file and *first_line
 * where (file valid until the next call); else records it as first seen
 * at file:line and returns false.
 */
static bool seen_check(struct apply_seen *set, const char *key, const char *file, int line,
		       const char **first_file, int *first_line)
{
	uint64_t hash = key_hash(key);
	size_t keylen = strlen(key), filelen = strlen(file), flen, i;
	struct apply_seen_rec h = {0};
	static const char zeros[8];

	if (!set->cap)
		seen_grow(set);
	for (i = (size_t)hash & (set->cap - 1); set->v[i]; i = (i + 1) & (set->cap - 1)) {
		const struct apply_seen_rec *r;
		if (set->v[i] >> 32 != hash >> 32)
			continue;
		r = seen_read(set, ((set->v[i] & 0xffffffffu) - 1) * 8);
		if (r->hash != hash || r->keylen != keylen ||
		    memcmp(set->rec + sizeof(*r), key, keylen))
			continue;
		*first_line = r->line;
		flen = r->filelen; /* r is overwritten by the file name */
		memmove(set->rec, set->rec + sizeof(*r) + keylen, flen);
		set->rec[flen] = '\0';
		*first_file = set->rec;
		return true;
	}
	if (!set->f) {
		if (!(set->f = tmpfile()))
			seen_fail(strerror(errno));
		setvbuf(set->f, NULL, _IOFBF, SEEN_BLOCK);
	}
	if (set->len / 8 + 1 > 0xffffffffu)
		seen_fail("too many resources");
	h.hash = hash;
	h.line = line;
	h.keylen = (uint32_t)keylen;
	h.filelen = (uint32_t)filelen;
	if (fwrite(&h, sizeof(h), 1, set->f) != 1 || fwrite(key, 1, keylen, set->f) != keylen ||
	    fwrite(file, 1, filelen, set->f) != filelen ||
	    fwrite(zeros, 1, (8 - (keylen + filelen) % 8) % 8, set->f) !=
		(8 - (keylen + filelen) % 8) % 8)
		seen_fail(strerror(errno));
	set->dirty = true;
	set->v[i] = (hash >> 32 << 32) | (set->len / 8 + 1);
	set->len += (sizeof(h) + keylen + filelen + 7) & ~(uint64_t)7;
	if (8 * ++set->n > 7 * set->cap)
		seen_grow(set);
	return false;
}

static void seen_free(struct apply_seen *set)
{
	if (set) {
		free(set->v);
		if (set->f)
			fclose(set->f);
		free(set->rec);
	}
	free(set);
}

/*
 * The documents' memory. Parsing a document allocates many small jansson
 * blocks that all die together once the resource is evaluated; the
 * parsing threads take them from chunks of their own instead of malloc()
 * (a pointer bump), and freeing one only counts it (json_decref() of a
 * resource, wherever it happens). A chunk is reused once it is full and
 * every block taken from it was freed, so a block still referenced is
 * never overwritten, whoever holds it. Chunks are CHUNK_SIZE bytes at a
 * CHUNK_SIZE boundary; the allocator functions stay installed for the
 * rest of the process and give every other block to malloc()/free().
 */
#define CHUNK_SIZE  (256u << 10)
#define CHUNK_MAX   1024 /* chunks in all (256 MiB); past that, malloc() */
#define CHUNK_SLOTS 4096 /* chunk_slot: open addressing, at most a quarter full */

struct apply_chunk_hdr {
	atomic_size_t freed; /* blocks freed, by any thread */
	size_t taken;	     /* blocks taken, by the owning arena */
	size_t used;	     /* bytes used, the header included */
};

/* One parsing thread's chunks (one per worker slot, used by one thread at a time). */
struct apply_arena {
	struct apply_chunk_hdr *cur;
	struct apply_chunk_hdr *full[256]; /* full chunks, reused once every block is freed */
	size_t nfull;
};

/* every chunk (never freed) by its address, added under chunk_lock, read without it */
static _Atomic(char *) chunk_slot[CHUNK_SLOTS];
static size_t nchunks;
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local struct apply_arena *cur_arena; /* set while a thread parses */

static struct apply_chunk_hdr *chunk_of(void *p)
{
	uintptr_t base = (uintptr_t)p & ~(uintptr_t)(CHUNK_SIZE - 1);
	char *c;

	/* a block is freed after its chunk was added: that thread's store is seen here */
	for (size_t i = (base / CHUNK_SIZE) % CHUNK_SLOTS;
	     (c = atomic_load_explicit(&chunk_slot[i], memory_order_acquire));
	     i = (i + 1) % CHUNK_SLOTS)
		if ((uintptr_t)c == base)
			return (struct apply_chunk_hdr *)(void *)c;
	return NULL;
}

/* A new chunk: CHUNK_SIZE bytes at a CHUNK_SIZE boundary, straight from the system. */
static struct apply_chunk_hdr *chunk_map(void)
{
	char *p = mmap(NULL, 2 * (size_t)CHUNK_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *c;

	if (p == MAP_FAILED)
		return NULL;
	c = (char *)(((uintptr_t)p + CHUNK_SIZE - 1) & ~(uintptr_t)(CHUNK_SIZE - 1));
	if (c > p)
		munmap(p, (size_t)(c - p));
	if (c + CHUNK_SIZE < p + 2 * (size_t)CHUNK_SIZE)
		munmap(c + CHUNK_SIZE, (size_t)(p + 2 * (size_t)CHUNK_SIZE - (c + CHUNK_SIZE)));
	return (struct apply_chunk_hdr *)(void *)c;
}

/* A chunk for the arena: one of its full chunks whose blocks are all freed, or a new one. */
static struct apply_chunk_hdr *chunk_get(struct apply_arena *a)
{
	struct apply_chunk_hdr *c = NULL;

	for (size_t i = 0; i < a->nfull; i++)
		if (atomic_load_explicit(&a->full[i]->freed, memory_order_acquire) ==
		    a->full[i]->taken) {
			c = a->full[i];
			a->full[i] = a->full[--a->nfull];
			break;
		}
	if (!c) {
		pthread_mutex_lock(&chunk_lock);
		if (nchunks < CHUNK_MAX && (c = chunk_map())) {
			size_t i = ((uintptr_t)c / CHUNK_SIZE) % CHUNK_SLOTS;
			while (atomic_load_explicit(&chunk_slot[i], memory_order_relaxed))
				i = (i + 1) % CHUNK_SLOTS;
			atomic_store_explicit(&chunk_slot[i], (char *)c, memory_order_release);
			nchunks++;
		}
		pthread_mutex_unlock(&chunk_lock);
		if (!c)
			return NULL;
	}
	atomic_store_explicit(&c->freed, 0, memory_order_relaxed);
	c->taken = 0;
	c->used = (sizeof(*c) + 15) & ~(size_t)15;
	return c;
}

static void *arena_alloc(size_t n)
{
	struct apply_arena *a = cur_arena;
	size_t need = (n + 15) & ~(size_t)15;

	if (a && need <= CHUNK_SIZE / 8) {
		if (!a->cur || a->cur->used + need > CHUNK_SIZE) {
			if (a->cur) {
				if (a->nfull == GV_ARRAY_LEN(a->full))
					goto heap;
				a->full[a->nfull++] = a->cur;
			}
			a->cur = chunk_get(a);
		}
		if (a->cur) {
			void *p = (char *)a->cur + a->cur->used;
			a->cur->used += need;
			a->cur->taken++;
			return p;
		}
	}
heap:
	return gv_xmalloc(n);
}

static void arena_free(void *p)
{
	struct apply_chunk_hdr *c;

	if (!p)
		return;
	c = chunk_of(p);
	if (c)
		atomic_fetch_add_explicit(&c->freed, 1, memory_order_release);
	else
		free(p);
}

/* Frees the resources of the batch just printed. */
static void batch_release(struct apply_state *st)
{
	load_resources_release(&st->res);
}

/* One document's text. */
struct apply_chunk {
	const char *text; /* in process_resources()' buffer of the batch */
	size_t off, len;
	int line; /* first line in the file */
	const char *file;
};

struct apply_batch_part {
	struct apply_chunk *chunks;
	size_t n;
	struct apply_arena *arena;
	struct load_resources res;
	FILE *errs; /* worker_errs() */
	bool bad;
};

static void *parse_part(void *arg)
{
	struct apply_batch_part *bp = arg;
	FILE *errs = bp->errs;

	bp->res.no_dedup = true;
	cur_arena = bp->arena;
	for (size_t i = 0; i < bp->n; i++) {
		struct gv_err e = {0};
		if (load_resources_buf(&bp->res, bp->chunks[i].text, bp->chunks[i].len,
				       bp->chunks[i].file, bp->chunks[i].line, errs, &e))
			bp->bad = true;
	}
	cur_arena = NULL;
	return NULL;
}

/*
 * Parses chunks (with st->jobs threads), de-duplicates in input order,
 * evaluates, prints, and frees everything of the batch. Returns the
 * number of resources evaluated.
 */
static size_t run_batch(struct apply_state *st, struct apply_chunk *chunks, size_t n,
			json_t *param_keys)
{
	size_t nparts = st->jobs > 1 ? (size_t)st->jobs : 1, per, nres = 0;
	struct apply_batch_part *parts;
	pthread_t *th;
	bool *started;

	if (nparts > GV_ARRAY_LEN(st->partbuf))
		nparts = GV_ARRAY_LEN(st->partbuf);
	if (nparts > n)
		nparts = n ? n : 1;
	per = (n + nparts - 1) / nparts;
	parts = gv_xcalloc(nparts, sizeof(*parts));
	th = gv_xcalloc(nparts, sizeof(*th));
	started = gv_xcalloc(nparts, sizeof(*started));
	for (size_t k = 0; k < nparts; k++) {
		size_t c0 = k * per < n ? k * per : n, c1 = (k + 1) * per < n ? (k + 1) * per : n;
		parts[k].chunks = chunks + c0;
		parts[k].errs = worker_errs(st, k);
		parts[k].n = c1 - c0;
		parts[k].arena = &st->arenas[k];
		if (k)
			started[k] = !pthread_create(&th[k], NULL, parse_part, &parts[k]);
		if (k && !started[k])
			parse_part(&parts[k]);
	}
	parse_part(&parts[0]);
	for (size_t k = 0; k < nparts; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		if (param_keys) {
			/* the first pass: its errors are the evaluating pass's to report */
			if (st->errs[k].f && !fflush(st->errs[k].f))
				rewind(st->errs[k].f);
			params_take(st, parts[k].res.v, parts[k].res.n, param_keys);
			free(parts[k].res.v);
			json_decref(parts[k].res.index);
			continue;
		}
		errs_drain(st, k);
		st->bad = st->bad || parts[k].bad;
		for (size_t i = 0; i < parts[k].res.n; i++) {
			struct load_resource *lr = &parts[k].res.v[i];
			char *key = load_resource_key(lr->obj);
			const char *first_file;
			int first_line;
			bool found =
			    seen_check(st->seen, key, lr->file, lr->line, &first_file, &first_line);

			free(key);
			if (found) {
				const json_t *o = lr->obj;
				fprintf(stderr,
					"%s:%d: warning: duplicate %s %s/%s ignored (first loaded "
					"from %s:%d)\n",
					lr->file, lr->line, load_res_kind(o), load_res_namespace(o),
					load_res_name(o), first_file, first_line);
				json_decref(lr->obj);
				free(lr->file);
				continue;
			}
			if ((st->res.n & (st->res.n - 1)) == 0)
				st->res.v = gv_xrealloc(st->res.v, (st->res.n ? 2 * st->res.n : 1) *
								       sizeof(*st->res.v));
			st->res.v[st->res.n++] = *lr;
		}
		free(parts[k].res.v);
		json_decref(parts[k].res.index);
	}
	free(parts);
	free(th);
	free(started);
	if (param_keys)
		return 0;
	nres = st->res.n;
	evaluate_batch(st);
	batch_release(st);
	return nres;
}

/* A line that starts a YAML document ("---" alone or followed by a space). */
static bool doc_start(const char *line)
{
	return !strncmp(line, "---", 3) && (!line[3] || strchr(" \t\r\n", line[3]));
}

#define BATCH_DOCS  256	       /* documents per batch */
#define BATCH_BYTES (8u << 20) /* or bytes */

/*
 * Reads every file of files document by document (a line "---" starts a
 * document: YAML forbids it inside a scalar) and runs them in batches, so
 * that memory holds one batch, not the input. Returns the number of
 * resources evaluated. With param_keys (the first pass, when a policy
 * reads params): only keeps the params (params_take(); param_keys the
 * keys kept), reports nothing, and spools stdin to st->stdin_spool, which
 * the evaluating pass then reads in its place.
 */
static size_t read_pass(struct apply_state *st, const struct load_paths *files, json_t *param_keys)
{
	struct apply_chunk *chunks = gv_xcalloc(BATCH_DOCS, sizeof(*chunks));
	struct gv_buf text = {0}; /* the documents of the batch, one after the other */
	size_t n = 0, bytes = 0, total = 0;
	bool stdin_read = false;

	for (size_t fi = 0; fi < files->n; fi++) {
		const char *file = files->v[fi];
		bool is_stdin = !strcmp(file, "-");
		FILE *f, *spool = NULL;
		char *line = NULL;
		size_t cap = 0;
		ssize_t got;
		int lineno = 0;
		size_t doc = text.len; /* where the document being read starts in text */
		int cur_line = 1;

		if (param_keys) {
			if (is_stdin && stdin_read)
				continue; /* the evaluating pass says why */
			stdin_read = stdin_read || is_stdin;
			if (is_stdin && !(spool = st->stdin_spool = tmpfile())) {
				fprintf(stderr, "gavel apply: stdin: %s\n", strerror(errno));
				exit(2);
			}
		} else if (!check_stdin(st, file)) {
			continue;
		}
		if (!is_stdin)
			f = fopen(file, "r");
		else if (!param_keys && st->stdin_spool)
			f = st->stdin_spool, rewind(f);
		else
			f = stdin;
		if (!f) {
			if (!param_keys) {
				fprintf(stderr, "%s: %s\n", file, strerror(errno));
				st->bad = true;
			}
			continue;
		}
		for (;;) {
			got = getline(&line, &cap, f);
			if (got >= 0)
				lineno++;
			if (got < 0 || (doc_start(line) && text.len > doc)) {
				if (text.len > doc) {
					chunks[n].off = doc;
					chunks[n].len = text.len - doc;
					gv_buf_add(&text, "", 1); /* each one NUL-terminated */
					doc = text.len;
					chunks[n].line = cur_line;
					chunks[n].file = file;
					bytes += chunks[n].len;
					n++;
				}
				cur_line = lineno;
				if (n == BATCH_DOCS || bytes >= BATCH_BYTES || (got < 0 && n)) {
					for (size_t i = 0; i < n; i++)
						chunks[i].text = text.data + chunks[i].off;
					total += run_batch(st, chunks, n, param_keys);
					n = 0;
					bytes = 0;
					gv_buf_reset(
					    &text); /* its room is kept for the next batch */
					doc = 0;
				}
			}
			if (got < 0)
				break;
			if (spool && fwrite(line, 1, (size_t)got, spool) != (size_t)got) {
				fprintf(stderr, "gavel apply: stdin: %s\n", strerror(errno));
				exit(2);
			}
			gv_buf_add(&text, line, (size_t)got);
		}
		if (ferror(f) && !param_keys) {
			fprintf(stderr, "%s: %s\n", file, strerror(errno));
			st->bad = true;
		}
		if (!is_stdin)
			fclose(f);
		free(line);
	}
	free(chunks);
	gv_buf_release(&text);
	return total;
}

/*
 * Evaluates every resource of the inputs: when a policy reads params, a
 * first pass over the inputs keeps the params (so that a param after the
 * resource it applies to counts), then the evaluating pass. Returns the
 * number of resources evaluated.
 */
static size_t process_resources(struct apply_state *st)
{
	struct load_paths files = {0};
	size_t total;

	st->seen = gv_xcalloc(1, sizeof(*st->seen));
	st->arenas = gv_xcalloc(GV_ARRAY_LEN(st->partbuf), sizeof(*st->arenas));
	st->sets = gv_xcalloc(st->pols.n ? st->pols.n : 1, sizeof(*st->sets));
	for (size_t p = 0; p < st->pols.n; p++)
		if (st->pols.v[p].policy)
			st->sets[p] = load_policyset_new(&st->pols, &st->pols.v[p].policy, 1);
	param_kinds_find(st);
	expand_all(st, &st->resource_paths, &files);
	if (st->param_kinds) {
		json_t *keys = json_object();

		read_pass(st, &files, keys);
		json_decref(keys);
	}
	total = read_pass(st, &files, NULL);
	if (st->stdin_spool)
		fclose(st->stdin_spool);
	st->stdin_spool = NULL;
	load_paths_release(&files);
	return total;
}

/* Policies loaded, valid or not, including the kinds gavel does not evaluate. */
static size_t count_policies(const struct apply_state *st)
{
	return st->pols.n;
}

/* Kyverno's exit code (or gavel's earlier one with --fail-on enforce). */
static int exit_code(const struct apply_state *st)
{
	if (st->fail_on_enforce)
		return st->enforce_failed || st->counts[ENGINE_ERROR] ? 1 : 0;
	if (st->counts[ENGINE_FAIL] || st->counts[ENGINE_ERROR])
		return 1;
	if (st->counts[ENGINE_WARN] && st->warn_exit_code)
		return st->warn_exit_code;
	if (!st->counts[ENGINE_PASS] && st->warn_no_pass)
		return st->warn_exit_code;
	return 0;
}

/* --set K=V,...: variables for every policy and resource (a values file's globalValues). */
static void load_set_variables(struct apply_state *st, const char **specs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = specs[i];
		while (*s) {
			const char *comma = strchr(s, ',');
			size_t len = comma ? (size_t)(comma - s) : strlen(s);
			char *item = gv_xstrndup(s, len);
			char *eq = strchr(item, '=');

			if (!eq || eq == item) {
				fprintf(stderr, "gavel apply: --set: \"%s\" is not NAME=VALUE\n",
					item);
				st->bad = true;
			} else {
				json_t *g;
				*eq = '\0';
				if (!st->values.doc)
					st->values.doc = json_object();
				g = json_object_get(st->values.doc, "globalValues");
				if (!json_is_object(g)) {
					g = json_object();
					json_object_set_new(st->values.doc, "globalValues", g);
				}
				json_object_set_new(g, item, json_string(eq + 1));
			}
			free(item);
			s += len + (comma ? 1 : 0);
		}
	}
}

int cmd_apply(int argc, char **argv)
{
	struct apply_state st;
	const char **ns_labels = NULL, **sets = NULL;
	size_t nns_labels = 0, nsets = 0;
	struct gv_err e = {0};
	int rc;

	/*
	 * No fastbins: every batch frees its documents' many small blocks,
	 * and with fastbins each large allocation after that first coalesces
	 * them all (malloc_consolidate), about a third of the time of a run.
	 * Freed small blocks are merged as they are freed instead.
	 */
	mallopt(M_MXFAST, 0);
	/*
	 * And keep what is freed: each batch needs about as much memory as
	 * the one before, which the heap gave back to the system at its end
	 * (trim) and took again page by page (page faults) when the threads'
	 * arenas shrank and grew. Large blocks from the heap too, for the
	 * same reason; memory stays bounded by the largest batch.
	 */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	json_set_alloc_funcs(arena_alloc, arena_free);
	memset(&st, 0, sizeof(st));
	rc = parse_args(&st, argc, argv, &ns_labels, &nns_labels, &sets, &nsets);
	if (rc >= 0)
		goto out;
	if (st.values_file) {
		if (check_stdin(&st, st.values_file) &&
		    values_load_file(&st.values, st.values_file, &e)) {
			print_err("", &e);
			st.bad = true;
		}
	}
	if (st.userinfo_file) {
		gv_err_clear(&e);
		if (check_stdin(&st, st.userinfo_file)) {
			if (values_userinfo_load_file(&st.ui, st.userinfo_file, &e)) {
				print_err("", &e);
				st.bad = true;
			} else {
				st.has_ui = true;
			}
		}
	}
	if (st.namespaces_file && check_stdin(&st, st.namespaces_file))
		load_namespaces_file(&st, st.namespaces_file);
	load_namespace_labels(&st, ns_labels, nns_labels);
	load_set_variables(&st, sets, nsets);
	if (!st.jobs) {
		cpu_set_t cpus;
		st.jobs = sched_getaffinity(0, sizeof(cpus), &cpus) ? 1 : CPU_COUNT(&cpus);
		if (st.jobs > 64)
			st.jobs = 64;
	}
	load_inputs(&st);
	if (!st.bad && !count_policies(&st)) {
		fputs("gavel apply: no policy found in the given paths (ClusterPolicy, Policy or a "
		      "CEL policy kind)\n",
		      stderr);
		st.bad = true;
	}
	pinfo_init(&st);
	/* Bad input: the rest is still evaluated and printed, and the exit code is 2. */
	{
		bool bad_before = st.bad;
		size_t nres = process_resources(&st);
		if (!bad_before && !st.bad && !nres) {
			fputs("gavel apply: no resource found in the given paths\n", stderr);
			st.bad = true;
		}
	}
	print_end(&st);
	rc = st.bad ? 2 : exit_code(&st);
out:
	batch_release(&st);
	for (size_t p = 0; st.sets && p < st.pols.n; p++)
		if (st.sets[p])
			engine_policyset_unref(st.sets[p]);
	free(st.sets);
	pinfo_release(&st);
	for (size_t k = 0; k < GV_ARRAY_LEN(st.partbuf); k++) {
		gv_buf_release(&st.partbuf[k]);
		if (st.errs[k].f)
			fclose(st.errs[k].f);
		free(st.errs[k].buf);
	}
	if (st.tspool)
		fclose(st.tspool);
	reports_release(&st);
	seen_free(st.seen);
	free(st.arenas); /* not their chunks: blocks may live on, and are freed as blocks */
	free(ns_labels);
	free(sets);
	load_paths_release(&st.policy_paths);
	load_paths_release(&st.resource_paths);
	load_paths_release(&st.exception_paths);
	load_policies_release(&st.pols);
	load_resources_release(&st.res);
	load_resources_release(&st.params);
	json_decref(st.param_kinds);
	values_release(&st.values);
	values_userinfo_release(&st.ui);
	return rc;
}
