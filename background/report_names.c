/*
 * report_names.c - report object names (base names, chunks, hashed cuts),
 * the report API in use (wgpolicyk8s or openreports), its paths, and the
 * layouts a report set owns.
 */
#include "background/report_int.h"

#include <ctype.h>
#include <stdio.h>

#include "kube/kube.h"
#include "common/banned.h"

#define LAYOUT_NAMESPACE "namespace"
#define LAYOUT_SPLIT	 "split"
#define LAYOUT_RESOURCE	 "resource"
#define HASH_CUT	 231 /* characters of a long base name kept before "-<hash>" */
#define LABEL_CUT	 50  /* characters of a long base name kept in the group label */

/* ---- names ---- */

static bool ends_in_digits(const char *s)
{
	size_t n = strlen(s), i = n;

	while (i > 0 && isdigit((unsigned char)s[i - 1]))
		i--;
	return i < n && i > 0 && s[i - 1] == '-';
}

/* s cut to at most n characters, without trailing '-' or '.', then "-" and `hex` hex digits of
 * hash. */
static char *cut_hashed(const char *s, size_t n, int hex)
{
	size_t len = strlen(s);

	if (len > n)
		len = n;
	while (len > 0 && (s[len - 1] == '-' || s[len - 1] == '.'))
		len--;
	return gv_xasprintf("%.*s-%0*llx", (int)len, s, hex,
			    (unsigned long long)(gv_hash_str(s) >> (64 - 4 * hex)));
}

char *report_base_name(bool split, const char *ns, const char *policy)
{
	const char *pname = policy ? strrchr(policy, '/') : NULL;
	char *name, *cut;

	pname = pname ? pname + 1 : str_or(policy, "");
	if (!split)
		return ns && *ns ? gv_xasprintf("polr-ns-%s", ns)
				 : gv_xstrdup("clusterpolicyreport");
	if (ns && *ns)
		name = gv_xasprintf("polr-ns-%s-%s", ns, pname);
	else
		name = gv_xasprintf("clusterpolicyreport-%s", pname);
	if (strlen(name) <= REPORT_MAX_BASE)
		return name;
	cut = cut_hashed(name, HASH_CUT, 12);
	free(name);
	return cut;
}

/* Whether s has the shape of a Kubernetes uid: 8-4-4-4-12 hex digits. */
static bool uid_shaped(const char *s)
{
	static const size_t dash[] = {8, 13, 18, 23};
	size_t n = strlen(s), d = 0;

	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (d < GV_ARRAY_LEN(dash) && i == dash[d]) {
			if (s[i] != '-')
				return false;
			d++;
		} else if (!isxdigit((unsigned char)s[i])) {
			return false;
		}
	}
	return true;
}

char *report_chunk_name(const char *base, size_t i)
{
	if (!i && uid_shaped(base))
		return gv_xstrdup(base);
	if (i)
		return gv_xasprintf("%s-%zu", base, i);
	if (ends_in_digits(base))
		return gv_xasprintf("%s-0", base);
	return gv_xstrdup(base);
}

bool report_parse_name(const char *name, char **base, size_t *index)
{
	size_t n = strlen(name), i = n;

	if (uid_shaped(name)) {
		/* the resource layout's chunk 0 */
		*base = gv_xstrdup(name);
		*index = 0;
		return true;
	}
	while (i > 0 && isdigit((unsigned char)name[i - 1]))
		i--;
	if (i == n || i < 2 || name[i - 1] != '-') {
		/* no "-<digits>" at the end: chunk 0 of itself */
		*base = gv_xstrdup(name);
		*index = 0;
		return n > 0;
	}
	if (name[i] == '0') {
		char *prefix;

		if (n - i != 1)
			return false; /* leading zero */
		prefix = gv_xstrndup(name, i - 1);
		if (!ends_in_digits(prefix)) {
			free(prefix);
			return false;
		}
		*base = prefix;
		*index = 0;
		return true;
	}
	if (n - i > 9)
		return false;
	*index = (size_t)strtoul(name + i, NULL, 10);
	*base = gv_xstrndup(name, i - 1);
	return true;
}

char *report_group_label(const char *base)
{
	if (strlen(base) <= 63)
		return gv_xstrdup(base);
	return cut_hashed(base, LABEL_CUT, 12);
}

static const struct {
	const char *name, *api_version, *kind, *cluster_kind, *resource, *cluster_resource;
} report_apis[] = {
    [REPORT_WGPOLICYK8S] = {"wgpolicyk8s", REPORT_API_VERSION, "PolicyReport",
			    "ClusterPolicyReport", "policyreports", "clusterpolicyreports"},
    [REPORT_OPENREPORTS] = {"openreports", REPORT_API_OPENREPORTS, "Report", "ClusterReport",
			    "reports", "clusterreports"},
};
static enum report_api_kind report_api_in_use = REPORT_WGPOLICYK8S;

enum gv_code report_api_parse(const char *s, enum report_api_kind *kind, struct gv_err *err)
{
	for (size_t i = 0; s && i < GV_ARRAY_LEN(report_apis); i++) {
		if (!strcmp(s, report_apis[i].name)) {
			*kind = (enum report_api_kind)i;
			return GV_OK;
		}
	}
	return gv_err_set(err, GV_EINVAL, "reports API \"%s\": want wgpolicyk8s or openreports",
			  s ? s : "");
}

void report_use_api(enum report_api_kind kind)
{
	report_api_in_use = kind;
}

enum report_api_kind report_api_current(void)
{
	return report_api_in_use;
}

const char *report_api_version(void)
{
	return report_apis[report_api_in_use].api_version;
}

const char *report_kind(bool cluster)
{
	return cluster ? report_apis[report_api_in_use].cluster_kind
		       : report_apis[report_api_in_use].kind;
}

char *report_path_all(void)
{
	return gv_xasprintf("/apis/%s/%s", report_api_version(),
			    report_apis[report_api_in_use].resource);
}

char *report_path(const char *ns, const char *name)
{
	char *ens = ns && *ns ? kube_escape(ns) : NULL;
	char *ename = name ? kube_escape(name) : NULL;
	char *p;

	if (ens)
		p = gv_xasprintf("/apis/%s/namespaces/%s/%s%s%s", report_api_version(), ens,
				 report_apis[report_api_in_use].resource, ename ? "/" : "",
				 ename ? ename : "");
	else
		p = gv_xasprintf("/apis/%s/%s%s%s", report_api_version(),
				 report_apis[report_api_in_use].cluster_resource, ename ? "/" : "",
				 ename ? ename : "");
	free(ens);
	free(ename);
	return p;
}

bool report_layout_owns(const struct report_set *rs, const char *ns, const char *base)
{
	char *prefix;
	bool ok;

	if (rs->opt.resource)
		return uid_shaped(base);
	if (!rs->opt.split) {
		char *want = report_base_name(false, ns, NULL);

		ok = !strcmp(want, base);
		free(want);
		return ok;
	}
	prefix = *ns ? gv_xasprintf("polr-ns-%s-", ns) : gv_xstrdup("clusterpolicyreport-");
	ok = !strncmp(base, prefix, strlen(prefix)) && strlen(base) > strlen(prefix);
	free(prefix);
	return ok;
}

const char *report_layout_name(const struct report_set *rs)
{
	return rs->opt.resource ? LAYOUT_RESOURCE : rs->opt.split ? LAYOUT_SPLIT : LAYOUT_NAMESPACE;
}

const char *report_managed_by(const struct report_set *rs)
{
	return rs->opt.source ? rs->opt.source : REPORT_SOURCE;
}

enum gv_code report_allowed_parse(const char *list, unsigned *bits, struct gv_err *err)
{
	static const enum engine_status all[] = {ENGINE_PASS, ENGINE_FAIL, ENGINE_WARN,
						 ENGINE_ERROR, ENGINE_SKIP};
	const char *p = list ? list : "";
	unsigned out = 0;

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool found = false;

		while (len && isspace((unsigned char)*p)) {
			p++;
			len--;
		}
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		for (size_t i = 0; i < GV_ARRAY_LEN(all); i++) {
			const char *name = engine_status_name(all[i]);

			if (len == strlen(name) && !strncmp(p, name, len)) {
				out |= 1u << all[i];
				found = true;
			}
		}
		if (!found)
			return gv_err_set(err, GV_EINVAL,
					  "unknown result \"%.*s\" (pass, fail, "
					  "warn, error, skip)",
					  (int)len, p);
		if (!end)
			break;
		p = end + 1;
	}
	if (!out)
		return gv_err_set(err, GV_EINVAL, "empty list");
	*bits = out;
	return GV_OK;
}

bool report_allowed(const struct report_set *rs, enum engine_status st)
{
	return rs->opt.allowed == REPORT_ALLOWED_ALL || (rs->opt.allowed & (1u << st));
}
