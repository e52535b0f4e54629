/*
 * scanstate.c - the scan-state ConfigMap: keys, entries, read and write
 * (scanstate.h).
 */
#include "background/scanstate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "background/schedule.h"
#include "common/banned.h"

char *scanstate_key_of(const char *ns, const char *name)
{
	if (ns && *ns)
		return gv_xasprintf("Policy.%s.%s", ns, name ? name : "");
	return gv_xasprintf("ClusterPolicy.%s", name ? name : "");
}

char *scanstate_key(const struct engine_policy *p)
{
	return scanstate_key_of(engine_policy_namespace(p), engine_policy_name(p));
}

char *scanstate_encode(const struct scanstate_entry *e)
{
	json_t *o = json_object();
	char buf[64], fp[32];
	char *text;

	if (e->last_scan > 0)
		json_object_set_new(
		    o, "lastScan",
		    json_string(schedule_time_format(e->last_scan, buf, sizeof(buf))));
	snprintf(fp, sizeof(fp), "%016" PRIx64, e->fingerprint);
	json_object_set_new(o, "fingerprint", json_string(fp));
	if (e->uid[0])
		json_object_set_new(o, "uid", json_string(e->uid));
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return text;
}

enum gv_code scanstate_decode(const char *text, struct scanstate_entry *e, struct gv_err *err)
{
	json_error_t je;
	json_t *o = text ? json_loads(text, 0, &je) : NULL;
	const char *last, *fp, *uid;
	enum gv_code rc = GV_OK;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(o)) {
		rc = gv_err_set(err, GV_EINVAL, "not a JSON object%s%s", o ? "" : ": ",
				o ? "" : (text ? je.text : "empty"));
		goto out;
	}
	last = json_string_value(json_object_get(o, "lastScan"));
	if (!last) {
		rc = gv_err_set(err, GV_EINVAL, "lastScan is missing");
		goto out;
	}
	rc = schedule_time_parse(last, &e->last_scan, err);
	if (rc) {
		gv_err_prefix(err, "lastScan: ");
		goto out;
	}
	fp = json_string_value(json_object_get(o, "fingerprint"));
	if (fp) {
		char *end;
		unsigned long long v = strtoull(fp, &end, 16);
		if (!*end && *fp)
			e->fingerprint = (uint64_t)v;
	}
	uid = json_string_value(json_object_get(o, "uid"));
	if (uid && strlen(uid) < sizeof(e->uid))
		snprintf(e->uid, sizeof(e->uid), "%s", uid);
out:
	json_decref(o);
	return rc;
}

bool scanstate_lookup(const json_t *data, const struct engine_policy *p, struct scanstate_entry *e)
{
	char *key = scanstate_key(p);
	const char *text = json_string_value(json_object_get(data, key));

	free(key);
	memset(e, 0, sizeof(*e));
	return text && !scanstate_decode(text, e, NULL);
}

static enum gv_code call(struct kube_client *client, const char *method, const char *path,
			 const json_t *body, json_t **out, struct kube_status *st,
			 struct gv_err *err)
{
	memset(st, 0, sizeof(*st));
	if (out)
		*out = NULL;
	return kube_request(client, method, path, body, out, st, err);
}

static char *cm_path(const char *ns, const char *name)
{
	char *ens = kube_escape(ns), *ename = name ? kube_escape(name) : NULL;
	char *p = name ? gv_xasprintf("/api/v1/namespaces/%s/configmaps/%s", ens, ename)
		       : gv_xasprintf("/api/v1/namespaces/%s/configmaps", ens);

	free(ens);
	free(ename);
	return p;
}

enum gv_code scanstate_read(struct kube_client *client, const char *ns, const char *name,
			    json_t **data, struct gv_err *err)
{
	char *path = cm_path(ns, name);
	struct kube_status st;
	json_t *cm = NULL;
	enum gv_code rc;

	*data = NULL;
	rc = call(client, "GET", path, NULL, &cm, &st, err);
	if (rc && st.http == 404) {
		if (err)
			gv_err_clear(err);
		rc = GV_OK;
	}
	if (!rc) {
		json_t *d = json_object_get(cm, "data");
		*data = json_is_object(d) ? json_incref(d) : json_object();
	}
	json_decref(cm);
	free(path);
	return rc;
}

enum gv_code scanstate_write(struct kube_client *client, const char *ns, const char *name,
			     const json_t *changes, struct gv_err *err)
{
	char *path = cm_path(ns, name), *coll = NULL;
	struct kube_status st;
	json_t *patch = NULL, *cm = NULL, *data;
	const char *k;
	json_t *v;
	enum gv_code rc;
	struct gv_err e2 = {0};

	if (!json_object_size(changes)) {
		free(path);
		return GV_OK;
	}
	patch = json_pack("{s:O}", "data", changes);
	rc = call(client, "PATCH", path, patch, NULL, &st, &e2);
	if (!rc || st.http != 404) {
		if (rc)
			gv_err_set(err, rc, "%s", e2.msg);
		goto out;
	}
	/* it does not exist yet */
	data = json_object();
	json_object_foreach((json_t *)changes, k, v)
	{
		if (json_is_string(v))
			json_object_set(data, k, v);
	}
	cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:o}", "apiVersion", "v1", "kind",
		       "ConfigMap", "metadata", "name", name, "namespace", ns, "labels",
		       "app.kubernetes.io/managed-by", "gavel", "app.kubernetes.io/part-of",
		       "gavel", "data", data);
	coll = cm_path(ns, NULL);
	memset(&e2, 0, sizeof(e2));
	rc = call(client, "POST", coll, cm, NULL, &st, &e2);
	if (rc && st.http == 409) {
		/* created meanwhile by someone else: patch it after all */
		memset(&e2, 0, sizeof(e2));
		rc = call(client, "PATCH", path, patch, NULL, &st, &e2);
	}
	if (rc)
		gv_err_set(err, rc, "%s", e2.msg);
out:
	json_decref(patch);
	json_decref(cm);
	free(path);
	free(coll);
	return rc;
}
