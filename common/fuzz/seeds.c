/*
 * seeds.c - builds the seed corpora and dictionaries of the fuzz targets at
 * run time (build/fuzz/seeds), so that no third-party file is copied into
 * the tree.
 *
 *   seeds OUT [DIR...]
 *
 * Reads every *.yaml, *.json and *.test file under each DIR (the golden
 * cases engine/testdata, manifests/samples, ../shared/conformance when
 * present) and writes OUT/<target>/<NNNNN> seed files in each target's
 * input format (see the target's header comment), plus a few inputs written
 * here (kubeconfigs, cron texts, reports). Dictionaries: OUT/<target>.dict is
 * the target's static dictionary (<module>/fuzz/<name>.dict) followed by
 * generated entries (the JMESPath function names).
 *
 * Seeds are capped at FUZZ_SEED_MAX bytes and FUZZ_SEEDS_PER_TARGET files
 * per target; duplicates are dropped.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>

#include "background/report.h"
#include "common/gv.h"
#include "common/hash.h"
#include "common/yaml.h"
#include "engine/engine_int.h"
#include "engine/jmespath.h"

#include "common/banned.h"

#define FUZZ_SEED_MAX	      (48u * 1024u)
#define FUZZ_SEEDS_PER_TARGET 3000

enum target {
	T_YAML,
	T_POLICY_YAML,
	T_POLICY_JSON,
	T_PATTERN,
	T_JMESPATH,
	T_JMESPATH_DOC,
	T_TEMPLATE,
	T_ADMISSION,
	T_ADMISSION_JSON,
	T_MESSAGE,
	T_KUBECONFIG,
	T_WATCH,
	T_SCHEDULE,
	T_TZIF,
	T_REPORT,
	T_CEL,
	T_COUNT
};

/* Target binary names, and the static dictionary (NULL = none) each starts from. */
static const struct {
	const char *name, *dict;
	bool functions; /* append the JMESPath function names */
} targets[T_COUNT] = {
    [T_YAML] = {"fuzz_yaml", "common/fuzz/yaml.dict", false},
    [T_POLICY_YAML] = {"fuzz_policy_yaml", "engine/fuzz/policy.dict", true},
    [T_POLICY_JSON] = {"fuzz_policy_json", "engine/fuzz/policy.dict", true},
    [T_PATTERN] = {"fuzz_pattern", "engine/fuzz/pattern.dict", false},
    [T_JMESPATH] = {"fuzz_jmespath", "engine/fuzz/jmespath.dict", true},
    [T_JMESPATH_DOC] = {"fuzz_jmespath_doc", "engine/fuzz/jmespath.dict", true},
    [T_TEMPLATE] = {"fuzz_template", "engine/fuzz/jmespath.dict", true},
    [T_ADMISSION] = {"fuzz_admission", "admission/fuzz/admission.dict", false},
    [T_ADMISSION_JSON] = {"fuzz_json", NULL, false},
    [T_MESSAGE] = {"fuzz_message", "common/fuzz/yaml.dict", false},
    [T_KUBECONFIG] = {"fuzz_kubeconfig", "kube/fuzz/kubeconfig.dict", false},
    [T_WATCH] = {"fuzz_watch", NULL, false},
    [T_SCHEDULE] = {"fuzz_schedule", "background/fuzz/schedule.dict", false},
    [T_TZIF] = {"fuzz_tzif", NULL, false},
    [T_REPORT] = {"fuzz_report", "background/fuzz/report.dict", false},
    [T_CEL] = {"fuzz_cel", "engine/fuzz/cel.dict", false},
};

static const char *out_dir;
static size_t counts[T_COUNT];
static uint64_t *seen[T_COUNT]; /* hashes of seeds written, to drop duplicates */

static void seed(enum target t, const void *data, size_t n)
{
	uint64_t h = gv_fnv1a64(data, n, GV_FNV1A64_OFFSET);
	char path[4096];
	FILE *f;

	if (n > FUZZ_SEED_MAX || counts[t] >= FUZZ_SEEDS_PER_TARGET)
		return;
	if (!seen[t])
		seen[t] = gv_xcalloc(FUZZ_SEEDS_PER_TARGET, sizeof(uint64_t));
	for (size_t i = 0; i < counts[t]; i++)
		if (seen[t][i] == h)
			return;
	snprintf(path, sizeof(path), "%s/%s/%05zu", out_dir, targets[t].name, counts[t]);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
	seen[t][counts[t]++] = h;
}

static void seed_str(enum target t, const char *s)
{
	seed(t, s, strlen(s));
}

/* Seeds a, NUL, b. */
static void seed_pair(enum target t, const char *a, const char *b)
{
	struct gv_buf buf = {0};

	gv_buf_adds(&buf, a);
	gv_buf_addc(&buf, '\0');
	gv_buf_adds(&buf, b);
	seed(t, buf.data, buf.len);
	gv_buf_release(&buf);
}

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* ---- what a policy document gives ---- */

/* Resources of the case a policy came from (first document of resource(s).yaml). */
static json_t *case_resource;

static const char DEFAULT_POD[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
    "\"image\":\"nginx:latest\"}]}}";

static void pattern_seed(const json_t *pat)
{
	char *p = dump(pat), *r = case_resource ? dump(case_resource) : gv_xstrdup(DEFAULT_POD);

	seed_pair(T_PATTERN, p, r);
	free(p);
	free(r);
}

static void var_found(const char *expr, const char *raw, void *ud)
{
	(void)raw;
	(void)ud;
	seed_str(T_JMESPATH, expr);
}

/* Walks any JSON tree for patterns, strings with {{ }}, jmesPath/list fields, schedules. */
static void walk(const json_t *v, const char *key)
{
	const char *k;
	const json_t *c;
	size_t i;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (strstr(s, "{{"))
			seed_str(T_TEMPLATE, s);
		if (key && (!strcmp(key, "jmesPath") || !strcmp(key, "list")))
			seed_str(T_JMESPATH, s);
		if (key && (!strcmp(key, "scanSchedule") || !strcmp(key, "scanInterval")))
			seed_str(T_SCHEDULE, s);
		if (key && !strcmp(key, "message"))
			seed_str(T_TEMPLATE, s);
		return;
	}
	if (key && (!strcmp(key, "pattern") || !strcmp(key, "anyPattern")))
		pattern_seed(v);
	if (key && !strcmp(key, "anyPattern") && json_is_array(v))
		json_array_foreach(v, i, c) pattern_seed(c);
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, c) walk(c, k);
	else if (json_is_array(v))
		json_array_foreach(v, i, c) walk(c, NULL);
}

static bool is_policy(const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	return kind && (!strcmp(kind, "ClusterPolicy") || !strcmp(kind, "Policy") ||
			!strcmp(kind, "PolicyException"));
}

/* ---- what a resource gives ---- */

static size_t nreviews;

static void review_seed(enum target t, const char *op, const json_t *obj, const json_t *old)
{
	const char *kind = json_string_value(json_object_get(obj ? obj : old, "kind"));
	const json_t *meta = json_object_get(obj ? obj : old, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	json_t *rv = json_pack(
	    "{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s},s:{s:s,s:s,s:s},s:s,s:s,s:s,s:{s:s,"
	    "s:[s]},s:O?,s:O?,s:b}}",
	    "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid",
	    "req-1", "kind", "group", "", "version", "v1", "kind", kind ? kind : "Pod", "resource",
	    "group", "", "version", "v1", "resource", "pods", "name", name ? name : "", "namespace",
	    ns ? ns : "default", "operation", op, "userInfo", "username", "alice", "groups", "dev",
	    "object", obj, "oldObject", old, "dryRun", 0);
	char *s = dump(rv);

	seed_str(t, s);
	if (t == T_ADMISSION)
		seed_str(T_ADMISSION_JSON, s);
	free(s);
	json_decref(rv);
}

static void resource_seeds(const json_t *res)
{
	char *s = dump(res);
	char *ev = gv_xasprintf("%c{\"type\":\"ADDED\",\"object\":%s}\n{\"type\":\"MODIFIED\","
				"\"object\":%s}\n",
				(char)(3 + nreviews % 7), s, s);

	seed_str(T_WATCH, ev);
	free(ev);
	if (nreviews++ % 4 == 0) {
		review_seed(T_ADMISSION, "UPDATE", res, res);
		review_seed(T_ADMISSION, "DELETE", NULL, res);
	}
	review_seed(T_ADMISSION, "CREATE", res, NULL);
	free(s);
}

/* ---- files ---- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* The first resource document next to a policy (golden case or CLI test folder). */
static json_t *load_case_resource(const char *policy_path)
{
	static const char *const names[] = {"resource.yaml", "resources.yaml"};
	const char *slash = strrchr(policy_path, '/');

	for (size_t i = 0; slash && i < GV_ARRAY_LEN(names); i++) {
		char *p =
		    gv_xasprintf("%.*s/%s", (int)(slash - policy_path), policy_path, names[i]);
		struct gv_docs docs = {0};
		json_t *r = NULL;

		if (gv_yaml_load_file(p, &docs, NULL) == GV_OK && docs.n)
			r = json_incref(docs.v[0].value);
		gv_docs_release(&docs);
		free(p);
		if (r)
			return r;
	}
	return NULL;
}

static void yaml_file(const char *path, const char *buf, size_t len)
{
	struct gv_docs docs = {0};
	bool policies = false;

	seed(T_YAML, buf, len);
	gv_yaml_load(buf, len, path, &docs, NULL);
	for (size_t i = 0; i < docs.n; i++)
		policies |= is_policy(docs.v[i].value);
	if (policies) {
		seed(T_POLICY_YAML, buf, len);
		case_resource = load_case_resource(path);
	}
	for (size_t i = 0; i < docs.n; i++) {
		const json_t *d = docs.v[i].value;

		if (is_policy(d)) {
			char *s = dump(d);

			seed_str(T_POLICY_JSON, s);
			free(s);
			walk(d, NULL);
			vars_each(d, var_found, NULL);
			if (nreviews % 3 == 0)
				review_seed(T_ADMISSION, "CREATE", d, NULL);
		} else if (json_is_object(d) && json_object_get(d, "kind") &&
			   json_object_get(d, "metadata")) {
			resource_seeds(d);
		}
	}
	json_decref(case_resource);
	case_resource = NULL;
	gv_docs_release(&docs);
}

/* The compliance suite: [{given, cases: [{expression, ...}]}]. */
static void jmespath_json_file(const char *buf, size_t len)
{
	json_t *root = json_loadb(buf, len, 0, NULL);
	const json_t *grp, *c;
	size_t i, j;

	json_array_foreach(root, i, grp)
	{
		char *given = dump(json_object_get(grp, "given"));

		json_array_foreach(json_object_get(grp, "cases"), j, c)
		{
			const char *e = json_string_value(json_object_get(c, "expression"));

			if (!e)
				continue;
			seed_str(T_JMESPATH, e);
			if (given)
				seed_pair(T_JMESPATH_DOC, e, given);
		}
		free(given);
	}
	json_decref(root);
}

/* engine/testdata/jmespath.test: blocks of expression, input, result. */
static void jmespath_test_file(char *buf)
{
	char *lines[3];
	int n = 0;

	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (line[0] == '#' || !strcmp(line, "%%FAIL"))
			continue;
		if (!line[0]) {
			n = 0;
			continue;
		}
		if (n < 3)
			lines[n++] = line;
		if (n == 2) {
			seed_str(T_JMESPATH, lines[0]);
			seed_pair(T_JMESPATH_DOC, lines[0], lines[1]);
		}
	}
}

/* A .json file: an AdmissionReview (request.json), a resource, or anything else (YAML seed). */
static void resource_seeds_from_json(const char *buf, size_t len)
{
	json_t *j = json_loadb(buf, len, 0, NULL);

	seed(T_YAML, buf, len);
	if (json_object_get(j, "request")) {
		seed(T_ADMISSION, buf, len);
		seed(T_ADMISSION_JSON, buf, len);
	} else if (json_is_object(j) && json_object_get(j, "kind")) {
		resource_seeds(j);
	}
	json_decref(j);
}

/* cel-spec conformance files: the expr: "..." lines (text-format escapes kept). */
static void cel_textproto_file(const char *buf)
{
	const char *p = buf;

	while ((p = strstr(p, "expr: ")) != NULL) {
		char q;
		const char *e;

		p += 6;
		q = *p;
		if (q != '"' && q != '\'')
			continue;
		for (e = p + 1; *e && *e != q && *e != '\n'; e++)
			if (*e == '\\' && e[1])
				e++;
		if (*e == q)
			seed(T_CEL, p + 1, (size_t)(e - p - 1));
		p = e;
	}
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	char *buf = NULL;
	size_t len = 0;

	(void)ftw;
	if (type != FTW_F || st->st_size > (off_t)(1u << 20))
		return 0;
	if (!ends_with(path, ".yaml") && !ends_with(path, ".yml") && !ends_with(path, ".json") &&
	    !ends_with(path, ".test") && !ends_with(path, ".textproto"))
		return 0;
	if (gv_read_file(path, &buf, &len, NULL) != GV_OK)
		return 0;
	if (ends_with(path, ".textproto"))
		cel_textproto_file(buf);
	else if (ends_with(path, ".test"))
		jmespath_test_file(buf);
	else if (ends_with(path, ".json") && strstr(path, "jmespath"))
		jmespath_json_file(buf, len);
	else if (ends_with(path, ".json"))
		resource_seeds_from_json(buf, len);
	else
		yaml_file(path, buf, len);
	free(buf);
	return 0;
}

/* ---- seeds written here ---- */

static const char *const kubeconfigs[] = {
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: c\n"
    "  cluster:\n"
    "    server: https://127.0.0.1:6443\n"
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: c, user: u, namespace: team-a}\n"
    "users:\n"
    "- name: u\n"
    "  user: {token: abc.def}\n",
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: other\n"
    "clusters:\n"
    "- {name: c, cluster: {server: \"http://[::1]:8080\", insecure-skip-tls-verify: true}}\n"
    "- {name: d, cluster: {server: https://k.example:443, certificate-authority: ca.crt}}\n"
    "contexts:\n"
    "- {name: dev, context: {cluster: d, user: cert}}\n"
    "- {name: other, context: {cluster: c, user: tok}}\n"
    "users:\n"
    "- {name: cert, user: {client-certificate: c.crt, client-key: /abs/c.key, "
    "client-certificate-data: \"YQ==\", client-key-data: \"Yg==\"}}\n"
    "- {name: tok, user: {tokenFile: token}}\n",
    "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"current-context\":\"dev\",\"clusters\":[{"
    "\"name\":\"c\",\"cluster\":{\"server\":\"https://1.2.3.4\"}}],\"contexts\":[{\"name\":"
    "\"dev\",\"context\":{\"cluster\":\"c\",\"user\":\"u\"}}],\"users\":[{\"name\":\"u\","
    "\"user\":{\"exec\":{\"command\":\"x\"}}}]}",
    "current-context: dev\n"
    "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"
    "clusters: [{name: c, cluster: {server: \"ftp://x\"}}]\n"
    "users: [{name: u, user: {username: a, password: b}}]\n",
};

static const char *const schedules[] = {
    "2h",
    "2m30s",
    "1h30m",
    "1.5h",
    "500ms",
    "-1h",
    "0s",
    "1us",
    "300000h",
    "1h1m1s1ms",
    "0 * * * *",
    "*/15 9-17 * * MON-FRI",
    "0 0 1,15 * *",
    "30 2 * * 0",
    "0 0 29 2 *",
    "0 0 30 2 *",
    "0 0 L * *",
    "0 12 * * 5L",
    "0 0 12 ? * FRIL",
    "0 0/5 14,18 * * ?",
    "15 10 ? * 6L",
    "0 0 0 ? * 1",
    "@yearly",
    "@monthly",
    "@weekly",
    "@daily",
    "@hourly",
    "@every 90m",
    "@every 1s",
    "CRON_TZ=Europe/Berlin 30 2 * * *",
    "TZ=America/New_York 0 1 * * SUN",
    "CRON_TZ=UTC 0 0 * * *",
    "TZ=Mars/Base 0 0 * * *",
    "0 0 * * 7",
    "0 0 31 4,6,9,11 *",
    "* * * * * *",
    "59 59 23 31 12 *",
    "0 0 0 1 1 ? 2030",
    "2026-11-20T10:15:00Z",
    "2026-11-20T11:15:00.5+01:00",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2024-02-29T12:00:00-23:59",
};

static const char *const zones[] = {
    "UTC",	    "Europe/Berlin",   "America/New_York", "Australia/Lord_Howe",
    "Asia/Kolkata", "Pacific/Chatham", "America/Santiago", "Africa/Casablanca"};

/* A string literal with embedded NULs. */
#define SEED_LIT(t, lit) seed((t), (lit), sizeof(lit) - 1)

static void message_seeds(void)
{
	SEED_LIT(T_MESSAGE, "Pod\0default\0web\0require-team\0team\0label team is required\0"
			    "p2\0b\0failed to substitute variables: key: 'yes'\nnext: \"x\"\0"
			    "p3\0- a\0  leading space, trailing space \0"
			    "\xc3\xa9t\xc3\xa9\0on\0\t#comment: {x}");
	SEED_LIT(T_MESSAGE, "Deployment\0\0x\0p\0r\0multi\nline\n\n");
	SEED_LIT(T_MESSAGE, "K\0ns\0n\0p\0r\0'quoted' \"double\" \\ back\0p\0r\0null");
}

static void report_seeds(void)
{
	for (int flags = 0; flags < 16; flags++) {
		struct report_options opt = {.split = flags & 1,
					     .chunk_results = (size_t)((flags >> 1) & 3) + 1};
		struct report_set *rs = report_set_new(&opt);
		struct report_resource res[] = {{"v1", "Pod", "ns1", "a", "uid-a"},
						{"v1", "Pod", "ns1", "b-1", "uid-b"},
						{"v1", "Namespace", NULL, "ns1", "uid-ns"}};
		struct report_entry e[3] = {{.rule = "r1",
					     .result = ENGINE_FAIL,
					     .message = "needs team",
					     .severity = "high",
					     .category = "Best Practices",
					     .scored = true,
					     .seconds = 100},
					    {.rule = "r2",
					     .result = ENGINE_PASS,
					     .scored = true,
					     .seconds = 90,
					     .nanos = 5},
					    {.rule = "r3",
					     .result = ENGINE_WARN,
					     .scored = false,
					     .seconds = 300,
					     .process = REPORT_ADMISSION_REVIEW}};
		json_t *all;
		char *s;

		for (size_t i = 0; i < GV_ARRAY_LEN(res); i++) {
			report_replace(rs, &res[i], i == 1 ? "p" : "ns1/q", e, 3 - i % 2, NULL);
			report_replace(rs, &res[i], "p-2", e + 1, 1, NULL);
		}
		all = report_render_all(rs);
		s = dump(all);
		{
			char *in = gv_xasprintf("%c%s", (char)(flags | 0x30), s);

			seed_str(T_REPORT, in);
			free(in);
		}
		free(s);
		json_decref(all);
		report_set_free(rs);
	}
	seed_str(T_REPORT, "\x31[]");
	seed_str(T_REPORT, "\x30{\"items\":[{\"metadata\":{\"name\":\"polr-ns-ns1-0\"},"
			   "\"results\":[{\"policy\":\"p\",\"rule\":\"r1\",\"result\":\"pass\","
			   "\"resources\":[{\"uid\":\"uid-a\",\"namespace\":\"ns1\"}],"
			   "\"timestamp\":{\"seconds\":5}}]}]}");
}

static void builtin_seeds(void)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(kubeconfigs); i++)
		seed_str(T_KUBECONFIG, kubeconfigs[i]);
	for (size_t i = 0; i < GV_ARRAY_LEN(schedules); i++)
		seed_str(T_SCHEDULE, schedules[i]);
	for (size_t i = 0; i < GV_ARRAY_LEN(zones); i++) {
		const char *dir = getenv("TZDIR");
		char *p =
		    gv_xasprintf("%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", zones[i]);
		char *buf = NULL;
		size_t len = 0;

		if (gv_read_file(p, &buf, &len, NULL) == GV_OK)
			seed(T_TZIF, buf, len);
		free(buf);
		free(p);
	}
	seed_str(T_WATCH, "\x05{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
			  "\"reason\":\"Expired\",\"message\":\"too old resource version\"}}");
	seed_str(T_WATCH, "\x01{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{"
			  "\"resourceVersion\":\"12\"}}} {\"type\":\"DELETED\",\"object\":{\"s\":"
			  "\"}{\\\"\"}}");
	seed_str(T_ADMISSION,
		 "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":"
		 "\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":"
		 "\"Namespace\",\"version\":\"v1\"},\"operation\":\"CREATE\",\"object\":"
		 "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"gavel\"}}}}");
	message_seeds();
	report_seeds();
	seed_str(T_CEL,
		 "object.spec.containers.all(c, !has(c.securityContext) || "
		 "!has(c.securityContext.privileged) || c.securityContext.privileged == false)");
	seed_str(T_CEL, "object.metadata.labels['app.kubernetes.io/name'].matches('^[a-z]+$')");
}

/* ---- dictionaries ---- */

static void function_name(const char *name, const char *signature, void *ud)
{
	(void)signature;
	fprintf(ud, "\"%s(\"\n", name);
}

static void write_dicts(void)
{
	for (int t = 0; t < T_COUNT; t++) {
		char *path;
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		if (!targets[t].dict)
			continue;
		path = gv_xasprintf("%s/%s.dict", out_dir, targets[t].name);
		f = fopen(path, "w");
		if (!f) {
			perror(path);
			exit(1);
		}
		if (gv_read_file(targets[t].dict, &buf, &len, NULL) == GV_OK)
			fwrite(buf, 1, len, f);
		free(buf);
		if (targets[t].functions)
			jp_list_functions(true, function_name, f);
		fclose(f);
		free(path);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: seeds OUT [DIR...]\n");
		return 2;
	}
	gv_init();
	out_dir = argv[1];
	mkdir(out_dir, 0777);
	for (int t = 0; t < T_COUNT; t++) {
		char *p = gv_xasprintf("%s/%s", out_dir, targets[t].name);

		mkdir(p, 0777);
		free(p);
	}
	builtin_seeds();
	for (int i = 2; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0)
			nftw(argv[i], visit, 16, FTW_PHYS);
	}
	write_dicts();
	for (int t = 0; t < T_COUNT; t++) {
		printf("%s%s %zu", t ? ", " : "seeds: ", targets[t].name, counts[t]);
		free(seen[t]);
	}
	printf("\n");
	return 0;
}
