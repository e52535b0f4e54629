/*
 * Unit tests for engine/variables.c ({{ }} substitution, kyverno-semantics.md
 * sections 6.1, 6.2, 6.3 and 6.6) and engine/images.c (the `images`
 * variable, section 6.5).
 */
#include "engine/tests/testutil.h"

#include "engine/engine_int.h"
#include "common/imageref.h"

#include "common/banned.h"

static const char root_yaml[] =
    "request:\n"
    "  operation: CREATE\n"
    "  object:\n"
    "    metadata:\n"
    "      name: x\n"
    "      labels: {app: web}\n"
    "      annotations: {tpl: '{{ request.object.metadata.name }}', ratio: '0.5'}\n"
    "    spec:\n"
    "      replicas: 3\n"
    "      ratio: 0.25\n"
    "      hostNetwork: false\n"
    "      priority: null\n"
    "      containers: [{name: c, image: nginx}]\n"
    "  oldObject:\n"
    "    metadata: {name: old, labels: {app: api}}\n"
    "cm: {data: {web: big, api: small}}\n"
    "num: {data: {web: 5}}\n";

/* The same request without labels (E20). */
static const char nolabels_yaml[] = "request:\n"
				    "  object:\n"
				    "    metadata: {name: x}\n";

struct env {
	json_t *root;
	struct var_ctx ctx;
};

static void env_init(struct env *e, const char *yaml, bool delete_op)
{
	e->root = Y(yaml);
	e->ctx = (struct var_ctx){.root = e->root, .delete_op = delete_op};
}

static void env_release(struct env *e)
{
	json_decref(e->root);
}

/* tmpl_eval_string(s) must succeed with the JSON value want (J() text). */
static void check_sub(const struct env *e, const char *s, const char *want)
{
	json_t *out = NULL;
	struct gv_err err = {0};
	enum gv_code rc = tmpl_eval_string(s, &e->ctx, &out, &err);

	CHECK(rc == GV_OK, "%s: error %s", s, err.msg);
	if (rc == GV_OK) {
		json_t *w = J(want);
		if (!tu_json_eq(out, w)) {
			char *g = tu_dump(out), *ws = tu_dump(w);
			CHECK(0, "%s\n      got:  %s\n      want: %s", s, g, ws);
			free(g);
			free(ws);
		}
		json_decref(w);
	}
	json_decref(out);
}

/* tmpl_eval_string(s) must return the string want (no J() quoting). */
static void check_sub_str(const struct env *e, const char *s, const char *want)
{
	json_t *out = NULL;
	struct gv_err err = {0};
	enum gv_code rc = tmpl_eval_string(s, &e->ctx, &out, &err);

	CHECK(rc == GV_OK, "%s: error %s", s, err.msg);
	CHECK(json_is_string(out), "%s: result is not a string", s);
	if (json_is_string(out))
		CHECK_STR(json_string_value(out), want);
	json_decref(out);
}

static void check_sub_error(const struct env *e, const char *s, const char *want_msg)
{
	json_t *out = NULL;
	struct gv_err err = {0};
	enum gv_code rc = tmpl_eval_string(s, &e->ctx, &out, &err);

	CHECK(rc == GV_EEVAL, "%s: got rc %d, want GV_EEVAL", s, (int)rc);
	CHECK_STR(err.msg, want_msg);
	if (rc == GV_OK)
		json_decref(out);
}

/* ---- section 6.2: whole string vs embedded ---- */

static void test_whole_string_is_typed(void **state)
{
	struct env e;
	(void)state;

	env_init(&e, root_yaml, false);
	check_sub(&e, "{{ request.object.spec.replicas }}", "3");
	check_sub(&e, "{{request.object.spec.replicas}}", "3");
	check_sub(&e, "{{   request.object.spec.replicas   }}", "3");
	check_sub(&e, "{{ request.object.spec.hostNetwork }}", "false");
	check_sub(&e, "{{ request.object.spec.priority }}", "null");
	check_sub(&e, "{{ request.object.metadata.labels }}", "{'app': 'web'}");
	check_sub(&e, "{{ request.object.spec.containers[].name }}", "['c']");
	check_sub(&e, "{{ request.object.metadata.name }}", "'x'");
	check_sub(&e, "{{ request.object.metadata.annotations.ratio }}", "'0.5'");
	check_sub(&e, "{{ length(request.object.spec.containers) }}", "1");
	/* a string without variables is itself */
	check_sub(&e, "plain text", "'plain text'");
	/* a whole-string variable whose value holds {{ }} is not re-substituted */
	check_sub_str(&e, "{{ request.object.metadata.annotations.tpl }}",
		      "{{ request.object.metadata.name }}");
	env_release(&e);
	CHECK_DONE();
}

static void test_embedded_is_text(void **state)
{
	struct env e;
	(void)state;

	env_init(&e, root_yaml, false);
	check_sub_str(&e, "n={{ request.object.spec.replicas }}", "n=3");
	check_sub_str(&e, "r={{ request.object.spec.ratio }}", "r=0.25");
	check_sub_str(&e, "h={{ request.object.spec.hostNetwork }}", "h=false");
	check_sub_str(&e, "p={{ request.object.spec.priority }}", "p=null");
	check_sub_str(&e, "l={{ request.object.metadata.labels }}", "l={\"app\":\"web\"}");
	check_sub_str(&e, "c={{ request.object.spec.containers[].name }}", "c=[\"c\"]");
	check_sub_str(&e,
		      "{{ request.object.metadata.name }}-{{ request.object.metadata.labels.app }}",
		      "x-web");
	check_sub_str(&e, "{{ request.object.metadata.name }} ", "x ");
	check_sub_str(&e, " {{request.object.metadata.name}}", " x");
	check_sub_str(&e, "The animal {{ request.object.metadata.labels.app }} is not allowed.",
		      "The animal web is not allowed.");
	env_release(&e);
	CHECK_DONE();
}

static void test_nested_variables(void **state)
{
	struct env e;
	(void)state;

	env_init(&e, root_yaml, false);
	/* inner variables resolve first, then the string is scanned again */
	check_sub(&e, "{{ cm.data.{{ request.object.metadata.labels.app }} }}", "'big'");
	check_sub(&e, "{{cm.data.{{request.object.metadata.labels.app}}}}", "'big'");
	check_sub(&e, "{{ num.data.{{ request.object.metadata.labels.app }} }}", "5");
	check_sub_str(&e, "size={{ cm.data.{{ request.object.metadata.labels.app }} }}",
		      "size=big");
	env_release(&e);
	CHECK_DONE();
}

static void test_inserted_text_rescanned(void **state)
{
	struct env e;
	(void)state;

	env_init(&e, root_yaml, false);
	/* text inserted by an embedded variable is scanned again ... */
	check_sub_str(&e, "n={{ request.object.metadata.annotations.tpl }}", "n=x");
	/* ... unless the variable is shallow: {{- }} */
	check_sub_str(&e, "n={{- request.object.metadata.annotations.tpl }}",
		      "n={{ request.object.metadata.name }}");
	check_sub(&e, "{{- request.object.metadata.name }}", "'x'");
	env_release(&e);
	CHECK_DONE();
}

static void test_escaping(void **state)
{
	struct env e;
	(void)state;

	env_init(&e, root_yaml, false);
	check_sub_str(&e, "\\{{ request.object.metadata.name }}",
		      "{{ request.object.metadata.name }}");
	check_sub_str(&e, "a \\{{ x }} {{ request.object.metadata.name }}", "a {{ x }} x");
	check_sub_str(&e, "{{ request.object.metadata.name }}\\{{ request.object.metadata.name }}",
		      "x{{ request.object.metadata.name }}");
	CHECK(!tmpl_has_vars("\\{{ request.object.metadata.name }}"), "escaped variable");
	CHECK(tmpl_has_vars("a {{ request.object.metadata.name }}"), "variable");
	CHECK(tmpl_has_vars("{{x}}"), "variable without spaces");
	CHECK(!tmpl_has_vars("plain"), "plain");
	CHECK(!tmpl_has_vars("{{ unterminated"), "unterminated");
	CHECK(!tmpl_has_vars("{ {x} }"), "single braces");
	/* single-level {...} groups are allowed inside (multiselect hash) */
	CHECK(tmpl_has_vars("{{ {a: request.object.metadata.name} }}"), "multiselect hash");
	check_sub(&e, "{{ {n: request.object.metadata.name} }}", "{'n': 'x'}");
	env_release(&e);
	CHECK_DONE();
}

/* ---- section 6.2 / 6.3: errors and defaults ---- */

static void test_missing_keys(void **state)
{
	struct env e;
	(void)state;

	env_init(&e, nolabels_yaml, false);
	check_sub_error(&e, "{{ request.object.metadata.labels.team }}",
			"failed to resolve request.object.metadata.labels.team at path : JMESPath "
			"query failed: Unknown key \"labels\" in path");
	check_sub_error(&e, "team {{ request.object.metadata.labels.team }}",
			"failed to resolve request.object.metadata.labels.team at path : JMESPath "
			"query failed: Unknown key \"labels\" in path");
	/* `|| ''` absorbs the error */
	check_sub(&e, "{{ request.object.metadata.labels.team || '' }}", "''");
	check_sub_str(&e, "team={{ request.object.metadata.labels.team || 'none' }}", "team=none");
	env_release(&e);

	env_init(&e, root_yaml, false);
	/* || replaces false too */
	check_sub(&e, "{{ request.object.spec.hostNetwork || `true` }}", "true");
	/* field access on null: null, no error */
	check_sub(&e, "{{ request.object.spec.priority.value }}", "null");
	check_sub(&e, "{{ request.object.metadata.name.first }}", "null");
	env_release(&e);
	CHECK_DONE();
}

static void test_vtree(void **state)
{
	struct env e;
	struct gv_err err = {0};
	json_t *tree, *out = NULL;
	struct vtree *t;
	(void)state;

	env_init(&e, root_yaml, false);

	/* a constant tree */
	tree = Y("{a: [b, 1, {c: null}], d: plain}");
	t = vtree_compile(tree, &err);
	CHECK(t != NULL, "compile: %s", err.msg);
	if (t) {
		CHECK(vtree_is_const(t), "constant tree");
		CHECK(tu_json_eq(vtree_const(t), tree), "constant value");
		CHECK(vtree_eval(t, &e.ctx, &out, &err) == GV_OK, "%s", err.msg);
		CHECK_JSON(out, "{'a': ['b', 1, {'c': null}], 'd': 'plain'}");
		json_decref(out);
		vtree_free(t);
	}
	json_decref(tree);

	/* leaves and map keys are substituted */
	tree = Y(
	    "{'{{ request.object.metadata.name }}': v, count: '{{ request.object.spec.replicas }}',"
	    " l: [a, '{{ request.object.metadata.labels.app }}'], k: 1}");
	t = vtree_compile(tree, &err);
	CHECK(t != NULL, "compile: %s", err.msg);
	if (t) {
		CHECK(!vtree_is_const(t), "tree with variables");
		out = NULL;
		CHECK(vtree_eval(t, &e.ctx, &out, &err) == GV_OK, "%s", err.msg);
		CHECK_JSON(out, "{'x': 'v', 'count': 3, 'l': ['a', 'web'], 'k': 1}");
		json_decref(out);
		vtree_free(t);
	}
	json_decref(tree);
	env_release(&e);

	/* errors carry the JSON pointer of the leaf */
	env_init(&e, nolabels_yaml, false);
	tree = Y("{spec: {x: [ok, 'team {{ request.object.metadata.labels.team }}']}}");
	t = vtree_compile(tree, &err);
	CHECK(t != NULL, "compile: %s", err.msg);
	if (t) {
		out = NULL;
		gv_err_clear(&err);
		CHECK(vtree_eval(t, &e.ctx, &out, &err) == GV_EEVAL, "want an error");
		CHECK_STR(err.msg,
			  "failed to resolve request.object.metadata.labels.team at path "
			  "/spec/x/1: JMESPath query failed: Unknown key \"labels\" in path");
		json_decref(out);
		vtree_free(t);
	}
	json_decref(tree);
	env_release(&e);
	CHECK_DONE();
}

/* ---- section 6.2 / 6.6: DELETE ---- */

static void test_delete_rewrites_object(void **state)
{
	struct env e;
	json_t *out = NULL;
	struct jp_error je;
	struct gv_err err = {0};
	(void)state;

	env_init(&e, root_yaml, true);
	check_sub(&e, "{{ request.object.metadata.name }}", "'old'");
	check_sub_str(&e, "n={{ request.object.metadata.name }}", "n=old");
	check_sub(&e, "{{ request.oldObject.metadata.name }}", "'old'");
	check_sub(&e, "{{ request.object.metadata.labels.app }}", "'api'");
	check_sub(&e, "{{ request.operation }}", "'CREATE'");
	CHECK(var_query("request.object.metadata.labels.app", &e.ctx, &out, &je, &err) == GV_OK,
	      "%s", err.msg);
	CHECK_JSON(out, "'api'");
	json_decref(out);
	env_release(&e);

	env_init(&e, root_yaml, false);
	check_sub(&e, "{{ request.object.metadata.name }}", "'x'");
	out = NULL;
	CHECK(var_query("request.object.metadata.labels.app", &e.ctx, &out, &je, &err) == GV_OK,
	      "%s", err.msg);
	CHECK_JSON(out, "'web'");
	json_decref(out);
	/* var_query reports an unknown key as such */
	out = NULL;
	gv_err_clear(&err);
	CHECK(var_query("request.object.spec.initContainers", &e.ctx, &out, &je, &err) == GV_EEVAL,
	      "unknown key");
	CHECK(je.kind == JP_ERR_UNKNOWN_KEY, "error kind %d", (int)je.kind);
	CHECK_STR(je.msg, "Unknown key \"initContainers\" in path");
	json_decref(out);
	/* {{ }} inside a bare expression are substituted first */
	out = NULL;
	CHECK(var_query("cm.data.{{ request.object.metadata.labels.app }}", &e.ctx, &out, &je,
			&err) == GV_OK,
	      "%s", err.msg);
	CHECK_JSON(out, "'big'");
	json_decref(out);
	env_release(&e);
	CHECK_DONE();
}

/* ---- var_set_path, vars_each ---- */

static void test_var_set_path(void **state)
{
	json_t *obj = json_object(), *shared, *holder;
	(void)state;

	var_set_path(obj, "request.operation", json_string("UPDATE"));
	var_set_path(obj, "a.\"b.c\".d", json_integer(1));
	var_set_path(obj, "\"x.y\"", json_string("z"));
	var_set_path(obj, "cm.data.key", json_string("v"));
	var_set_path(obj, "cm.data.other", json_string("w"));
	CHECK_JSON(obj, "{'request': {'operation': 'UPDATE'}, 'a': {'b.c': {'d': 1}},"
			" 'x.y': 'z', 'cm': {'data': {'key': 'v', 'other': 'w'}}}");
	/* siblings stay, a scalar on the way is replaced by an object */
	var_set_path(obj, "request.namespace", json_string("dev"));
	var_set_path(obj, "x.y.z", json_true());
	CHECK_JSON(obj, "{'request': {'operation': 'UPDATE', 'namespace': 'dev'}, 'a': {'b.c': "
			"{'d': 1}}, 'x.y': 'z', 'x': {'y': {'z': true}}, 'cm': {'data': {'key': "
			"'v', 'other': 'w'}}}");
	var_set_path(obj, "cm", json_string("flat"));
	CHECK_JSON(json_object_get(obj, "cm"), "'flat'");
	/* a subtree shared with someone else is not written through */
	shared = J("{'object': {'kind': 'Pod'}}");
	holder = json_object();
	json_object_set(holder, "request", shared);
	json_object_set(obj, "request", shared);
	var_set_path(obj, "request.operation", json_string("DELETE"));
	CHECK_JSON(json_object_get(obj, "request"),
		   "{'object': {'kind': 'Pod'}, 'operation': 'DELETE'}");
	CHECK_JSON(json_object_get(holder, "request"), "{'object': {'kind': 'Pod'}}");
	CHECK_JSON(shared, "{'object': {'kind': 'Pod'}}");
	json_decref(shared);
	json_decref(holder);
	json_decref(obj);
	CHECK_DONE();
}

static void collect(const char *expr, const char *raw, void *ud)
{
	json_t *pair = json_pack("[ss]", expr, raw);
	json_array_append_new(ud, pair);
}

static void test_vars_each(void **state)
{
	json_t *tree = Y("{message: 'by {{ request.userInfo.username }} and {{x}}',"
			 " '{{ k }}': [plain, '\\{{ escaped }}', '{{- shallow }}']}");
	json_t *got = json_array();
	(void)state;

	vars_each(tree, collect, got);
	CHECK_JSON(got, "[['request.userInfo.username', '{{ request.userInfo.username }}'],"
			" ['x', '{{x}}'], ['k', '{{ k }}'], ['shallow', '{{- shallow }}']]");
	json_decref(got);
	json_decref(tree);
	CHECK_DONE();
}

/* ---- images (section 6.5) ---- */

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void check_image(const char *image, const char *registry, const char *path, const char *name,
			const char *tag, const char *digest, const char *reference)
{
	json_t *o = image_parse(image);
	const char *t = json_string_value(json_object_get(o, "tag"));
	const char *d = json_string_value(json_object_get(o, "digest"));

	CHECK(o != NULL, "%s: no result", image);
	CHECK_STR(json_string_value(json_object_get(o, "registry")), registry);
	CHECK_STR(json_string_value(json_object_get(o, "path")), path);
	CHECK_STR(json_string_value(json_object_get(o, "name")), name);
	if (tag)
		CHECK_STR(t, tag);
	else
		CHECK(!t || !*t, "%s: tag %s, want none", image, t);
	if (digest)
		CHECK_STR(d, digest);
	else
		CHECK(!d || !*d, "%s: digest %s, want none", image, d);
	CHECK_STR(json_string_value(json_object_get(o, "reference")), reference);
	{
		/* the reference alone (podSecurity's controlsJSON) is the same */
		char *ref = image_reference(image);
		CHECK_STR(ref, reference);
		free(ref);
	}
	json_decref(o);
}

static void test_image_parse(void **state)
{
	(void)state;
	check_image("nginx", "docker.io", "nginx", "nginx", "latest", NULL,
		    "docker.io/nginx:latest");
	check_image("nginx:1.25", "docker.io", "nginx", "nginx", "1.25", NULL,
		    "docker.io/nginx:1.25");
	check_image("library/nginx:1.25", "docker.io", "library/nginx", "nginx", "1.25", NULL,
		    "docker.io/library/nginx:1.25");
	check_image("ghcr.io/org/app:1.2", "ghcr.io", "org/app", "app", "1.2", NULL,
		    "ghcr.io/org/app:1.2");
	check_image("reg.io/a/b/c:t", "reg.io", "a/b/c", "c", "t", NULL, "reg.io/a/b/c:t");
	check_image("localhost:5000/app:v1", "localhost:5000", "app", "app", "v1", NULL,
		    "localhost:5000/app:v1");
	check_image("reg.io/app", "reg.io", "app", "app", "latest", NULL, "reg.io/app:latest");
	check_image("nginx@" DIGEST, "docker.io", "nginx", "nginx", NULL, DIGEST,
		    "docker.io/nginx@" DIGEST);
	check_image("reg.io/app:1.0@" DIGEST, "reg.io", "app", "app", "1.0", DIGEST,
		    "reg.io/app@" DIGEST);
	check_image("[::1]:5000/app:v1", "[::1]:5000", "app", "app", "v1", NULL,
		    "[::1]:5000/app:v1");
	/* a first component that is no domain (the grammar has no '_' in domains): all path */
	check_image("my_reg.io/app:1", "", "my_reg.io/app", "app", "1", NULL, "my_reg.io/app:1");
	/*
	 * What the grammar refuses (Kyverno then has no `images` variable) is
	 * still split as gavel always split it.
	 */
	check_image("Nginx:1.0", "docker.io", "Nginx", "Nginx", "1.0", NULL, "docker.io/Nginx:1.0");
	check_image("localhost:5000/App", "localhost:5000", "App", "App", "latest", NULL,
		    "localhost:5000/App:latest");
	check_image("nginx:", "docker.io", "nginx", "nginx", NULL, NULL, "docker.io/nginx:");
	check_image("reg.io/app:1.0@sha256:abc", "reg.io", "app", "app", "1.0", "sha256:abc",
		    "reg.io/app@sha256:abc");
	CHECK_DONE();
}

/* The variable and image_normalize() read a reference with one parser (common/imageref.h). */
static void test_image_parse_one_parser(void **state)
{
	static const char *const refs[] = {"nginx",
					   "library/nginx:1.25",
					   "ghcr.io/org/app:1.2",
					   "localhost/app",
					   "localhost:5000/a/b/c:t",
					   "127.0.0.1:5000/app",
					   "reg.io/app:1.0@" DIGEST,
					   "my_reg.io/app:1",
					   "a-b.example.com:443/x__y/z-w:v_1.0"};

	(void)state;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		struct gv_imageref r;
		struct gv_err e = {0};
		json_t *o = image_parse(refs[i]);

		CHECK(gv_imageref_parse(refs[i], strlen(refs[i]), &r, &e) == GV_OK, "%s: %s",
		      refs[i], e.msg);
		CHECK_STR(json_string_value(json_object_get(o, "registry")),
			  r.domain ? r.domain : "");
		CHECK_STR(json_string_value(json_object_get(o, "path")), r.path);
		if (r.digest)
			CHECK_STR(json_string_value(json_object_get(o, "digest")), r.digest);
		if (r.tag || !r.digest)
			CHECK_STR(json_string_value(json_object_get(o, "tag")),
				  r.tag ? r.tag : "latest");
		gv_imageref_release(&r);
		json_decref(o);
	}
	CHECK_DONE();
}

static void test_images_extract(void **state)
{
	json_t *pod =
	    Y("kind: Pod\n"
	      "spec:\n"
	      "  initContainers: [{name: init, image: 'busybox:1.36'}]\n"
	      "  containers: [{name: a, image: nginx}, {name: b, image: 'reg.io/x/b:2'}]\n");
	json_t *deploy = Y("kind: Deployment\n"
			   "spec: {template: {spec: {containers: [{name: a, image: nginx}]}}}\n");
	json_t *cron = Y("kind: CronJob\n"
			 "spec: {jobTemplate: {spec: {template: {spec: {containers: "
			 "[{name: a, image: nginx}]}}}}}\n");
	json_t *cm = Y("kind: ConfigMap\ndata: {a: b}\n");
	json_t *im;
	(void)state;

	im = images_extract(pod);
	CHECK(im != NULL, "pod images");
	CHECK_STR(json_string_value(json_object_get(
		      json_object_get(json_object_get(im, "containers"), "b"), "jsonPointer")),
		  "/spec/containers/1/image");
	CHECK_STR(json_string_value(json_object_get(
		      json_object_get(json_object_get(im, "containers"), "b"), "tag")),
		  "2");
	CHECK_STR(json_string_value(json_object_get(
		      json_object_get(json_object_get(im, "containers"), "a"), "registry")),
		  "docker.io");
	CHECK_STR(json_string_value(json_object_get(
		      json_object_get(json_object_get(im, "initContainers"), "init"), "tag")),
		  "1.36");
	CHECK_STR(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(im, "initContainers"), "init"), "jsonPointer")),
	    "/spec/initContainers/0/image");
	json_decref(im);

	im = images_extract(deploy);
	CHECK_STR(json_string_value(json_object_get(
		      json_object_get(json_object_get(im, "containers"), "a"), "jsonPointer")),
		  "/spec/template/spec/containers/0/image");
	json_decref(im);

	im = images_extract(cron);
	CHECK_STR(json_string_value(json_object_get(
		      json_object_get(json_object_get(im, "containers"), "a"), "jsonPointer")),
		  "/spec/jobTemplate/spec/template/spec/containers/0/image");
	json_decref(im);

	im = images_extract(cm);
	CHECK(im == NULL || !json_object_size(im), "a ConfigMap has no images");
	json_decref(im);

	json_decref(pod);
	json_decref(deploy);
	json_decref(cron);
	json_decref(cm);
	CHECK_DONE();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whole_string_is_typed),
	    cmocka_unit_test(test_embedded_is_text),
	    cmocka_unit_test(test_nested_variables),
	    cmocka_unit_test(test_inserted_text_rescanned),
	    cmocka_unit_test(test_escaping),
	    cmocka_unit_test(test_missing_keys),
	    cmocka_unit_test(test_vtree),
	    cmocka_unit_test(test_delete_rewrites_object),
	    cmocka_unit_test(test_var_set_path),
	    cmocka_unit_test(test_vars_each),
	    cmocka_unit_test(test_image_parse),
	    cmocka_unit_test(test_image_parse_one_parser),
	    cmocka_unit_test(test_images_extract),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
