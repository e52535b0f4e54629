/*
 * config.c - kubeconfig and in-cluster configuration.
 */
#include "kube/kube.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/yaml.h"
#include "kube/kube_int.h"
#include "common/banned.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void kube_config_free(struct kube_config *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ca_file);
	free(c->ca_data);
	free(c->token);
	free(c->token_file);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_data);
	free(c->key_data);
	free(c->namespace);
	free(c);
}

/* The object `key` of the entry named `name` in the list `list` ("clusters"...). */
static const json_t *find_named(const json_t *root, const char *list, const char *key,
				const char *name)
{
	const json_t *arr = json_object_get(root, list), *it;
	size_t i;

	if (!json_is_array(arr))
		return NULL;
	json_array_foreach(arr, i, it)
	{
		const char *n = json_string_value(json_object_get(it, "name"));

		if (n && !strcmp(n, name)) {
			const json_t *v = json_object_get(it, key);
			return json_is_object(v) ? v : NULL;
		}
	}
	return NULL;
}

/* A string field: GV_OK with *out (borrowed, NULL when absent), GV_EINVAL when not a string. */
static enum gv_code str_field(const json_t *o, const char *key, const char *what, const char *file,
			      const char **out, struct gv_err *err)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return GV_OK;
	if (!json_is_string(v))
		return gv_err_set(err, GV_EINVAL, "%s: %s: %s must be a string", file, what, key);
	*out = json_string_value(v);
	if (!**out)
		*out = NULL;
	return GV_OK;
}

static char *resolve_path(const char *dir, const char *p)
{
	if (!dir || !*dir || p[0] == '/')
		return gv_xstrdup(p);
	return gv_xasprintf("%s/%s", dir, p);
}

/* Decodes a *-data field into *out (PEM text). */
static enum gv_code data_field(const json_t *o, const char *key, const char *what, const char *file,
			       char **out, struct gv_err *err)
{
	const char *s;
	enum gv_code rc;

	if ((rc = str_field(o, key, what, file, &s, err)) || !s)
		return rc;
	rc = kube_base64_decode(s, out, NULL, err);
	if (rc)
		gv_err_prefix(err, "%s: %s: %s: ", file, what, key);
	return rc;
}

enum gv_code kube_config_parse(const char *buf, size_t len, const char *file, const char *dir,
			       const char *context, struct kube_config **out, struct gv_err *err)
{
	struct gv_docs docs = {0};
	struct kube_config *c = NULL;
	const json_t *root, *ctx, *cluster, *user;
	const char *ctxname, *cname, *uname, *s;
	char what[320];
	enum gv_code rc;

	*out = NULL;
	if (!file)
		file = "<kubeconfig>";
	if ((rc = gv_yaml_load(buf, len, file, &docs, err)))
		goto out;
	if (docs.n != 1 || !json_is_object(docs.v[0].value)) {
		rc = gv_err_set(err, GV_EINVAL, "%s: not a kubeconfig (expected one YAML mapping)",
				file);
		goto out;
	}
	root = docs.v[0].value;
	ctxname = context;
	if (!ctxname &&
	    (rc = str_field(root, "current-context", "kubeconfig", file, &ctxname, err)))
		goto out;
	if (!ctxname) {
		rc = gv_err_set(err, GV_EINVAL, "%s: no current-context", file);
		goto out;
	}
	snprintf(what, sizeof(what), "context \"%s\"", ctxname);
	if (!(ctx = find_named(root, "contexts", "context", ctxname))) {
		rc = gv_err_set(err, GV_EINVAL, "%s: %s not found", file, what);
		goto out;
	}
	if ((rc = str_field(ctx, "cluster", what, file, &cname, err)) ||
	    (rc = str_field(ctx, "user", what, file, &uname, err)))
		goto out;
	if (!cname) {
		rc = gv_err_set(err, GV_EINVAL, "%s: %s names no cluster", file, what);
		goto out;
	}
	if (!(cluster = find_named(root, "clusters", "cluster", cname))) {
		rc = gv_err_set(err, GV_EINVAL, "%s: cluster \"%s\" not found", file, cname);
		goto out;
	}
	user = NULL;
	if (uname && !(user = find_named(root, "users", "user", uname))) {
		rc = gv_err_set(err, GV_EINVAL, "%s: user \"%s\" not found", file, uname);
		goto out;
	}

	c = gv_xcalloc(1, sizeof(*c));
	snprintf(what, sizeof(what), "cluster \"%s\"", cname);
	if ((rc = str_field(cluster, "server", what, file, &s, err)))
		goto out;
	if (!s) {
		rc = gv_err_set(err, GV_EINVAL, "%s: %s has no server", file, what);
		goto out;
	}
	if (strncmp(s, "https://", 8) && strncmp(s, "http://", 7)) {
		rc = gv_err_set(err, GV_EINVAL, "%s: %s: server \"%s\" is not an http(s) URL", file,
				what, s);
		goto out;
	}
	c->server = gv_xstrdup(s);
	/* "https://host:6443/" -> no trailing slash: paths start with one. */
	while (strlen(c->server) > 8 && c->server[strlen(c->server) - 1] == '/')
		c->server[strlen(c->server) - 1] = '\0';
	if ((rc = str_field(cluster, "certificate-authority", what, file, &s, err)))
		goto out;
	if (s)
		c->ca_file = resolve_path(dir, s);
	if ((rc = data_field(cluster, "certificate-authority-data", what, file, &c->ca_data, err)))
		goto out;
	{
		const json_t *v = json_object_get(cluster, "insecure-skip-tls-verify");

		if (v && !json_is_boolean(v) && !json_is_null(v)) {
			rc = gv_err_set(err, GV_EINVAL,
					"%s: %s: insecure-skip-tls-verify must be true or false",
					file, what);
			goto out;
		}
		c->insecure = json_is_true(v);
	}

	if (user) {
		static const char *const unsupported[] = {"exec", "auth-provider", "username",
							  "password"};

		snprintf(what, sizeof(what), "user \"%s\"", uname);
		for (size_t i = 0; i < GV_ARRAY_LEN(unsupported); i++) {
			const json_t *v = json_object_get(user, unsupported[i]);

			if (v && !json_is_null(v)) {
				rc = gv_err_set(err, GV_EINVAL,
						"%s: %s: \"%s\" authentication is not supported "
						"(use a token, tokenFile or a client certificate)",
						file, what, unsupported[i]);
				goto out;
			}
		}
		if ((rc = str_field(user, "token", what, file, &s, err)))
			goto out;
		if (s)
			c->token = gv_xstrdup(s);
		if ((rc = str_field(user, "tokenFile", what, file, &s, err)))
			goto out;
		if (s)
			c->token_file = resolve_path(dir, s);
		if ((rc = str_field(user, "client-certificate", what, file, &s, err)))
			goto out;
		if (s)
			c->cert_file = resolve_path(dir, s);
		if ((rc = str_field(user, "client-key", what, file, &s, err)))
			goto out;
		if (s)
			c->key_file = resolve_path(dir, s);
		if ((rc = data_field(user, "client-certificate-data", what, file, &c->cert_data,
				     err)) ||
		    (rc = data_field(user, "client-key-data", what, file, &c->key_data, err)))
			goto out;
	}
	snprintf(what, sizeof(what), "context \"%s\"", ctxname);
	if ((rc = str_field(ctx, "namespace", what, file, &s, err)))
		goto out;
	if (s)
		c->namespace = gv_xstrdup(s);
	*out = c;
	c = NULL;
out:
	kube_config_free(c);
	gv_docs_release(&docs);
	return rc;
}

static enum gv_code load_file(const char *path, struct kube_config **out, struct gv_err *err)
{
	char *buf = NULL, *dir = NULL, *slash;
	size_t len = 0;
	enum gv_code rc;

	if ((rc = gv_read_file(path, &buf, &len, err))) {
		gv_err_prefix(err, "kubeconfig: ");
		return rc;
	}
	dir = gv_xstrdup(path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else {
		free(dir);
		dir = NULL;
	}
	rc = kube_config_parse(buf, len, path, dir, NULL, out, err);
	free(buf);
	free(dir);
	return rc;
}

enum gv_code kube_config_incluster(const char *sa_dir, const char *host, const char *port,
				   struct kube_config **out, struct gv_err *err)
{
	struct kube_config *c;
	char *p;

	*out = NULL;
	if (!host || !*host || !port || !*port)
		return gv_err_set(err, GV_ENOENT,
				  "not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset");
	c = gv_xcalloc(1, sizeof(*c));
	if (strchr(host, ':'))
		c->server = gv_xasprintf("https://[%s]:%s", host, port);
	else
		c->server = gv_xasprintf("https://%s:%s", host, port);
	c->token_file = gv_xasprintf("%s/token", sa_dir);
	if (access(c->token_file, R_OK)) {
		gv_err_set(err, GV_ENOENT, "in-cluster: %s: %s", c->token_file, strerror(errno));
		kube_config_free(c);
		return GV_ENOENT;
	}
	p = gv_xasprintf("%s/ca.crt", sa_dir);
	if (access(p, R_OK) == 0)
		c->ca_file = p;
	else
		free(p);
	p = gv_xasprintf("%s/namespace", sa_dir);
	c->namespace = kube_read_trimmed(p);
	free(p);
	*out = c;
	return GV_OK;
}

enum gv_code kube_config_load(const char *path, struct kube_config **out, struct gv_err *err)
{
	const char *env, *home;
	enum gv_code rc;

	*out = NULL;
	if (path && *path)
		return load_file(path, out, err);
	env = getenv("KUBECONFIG");
	if (env && *env) {
		char *list = gv_xstrdup(env), *p = list, *colon;

		for (;;) {
			colon = strchr(p, ':');
			if (colon)
				*colon = '\0';
			if (*p && access(p, F_OK) == 0) {
				rc = load_file(p, out, err);
				free(list);
				return rc;
			}
			if (!colon)
				break;
			p = colon + 1;
		}
		rc = gv_err_set(err, GV_ENOENT, "kubeconfig: $KUBECONFIG (%s): no such file", env);
		free(list);
		return rc;
	}
	if (getenv("KUBERNETES_SERVICE_HOST") && getenv("KUBERNETES_SERVICE_PORT"))
		return kube_config_incluster(SA_DIR, getenv("KUBERNETES_SERVICE_HOST"),
					     getenv("KUBERNETES_SERVICE_PORT"), out, err);
	home = getenv("HOME");
	if (home && *home) {
		char *p = gv_xasprintf("%s/.kube/config", home);

		if (access(p, F_OK) == 0) {
			rc = load_file(p, out, err);
			free(p);
			return rc;
		}
		free(p);
	}
	return gv_err_set(err, GV_ENOENT,
			  "no Kubernetes configuration: no --kubeconfig, $KUBECONFIG, "
			  "in-cluster service account or ~/.kube/config");
}
