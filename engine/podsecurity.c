/*
 * podsecurity.c - the Pod Security Standards checks of `validate.podSecurity`
 * as Kyverno runs them (pod-security-semantics.md sections 2-6).
 *
 * The checks read the pod as JSON: a field counts as set when it is present
 * and not null (a Go pointer that is not nil). Fields the checks read are
 * type-checked first as Go's encoding/json would decode them into the
 * Kubernetes structs (section 2 step 3), so a mistyped field gives an error
 * result instead of passing unseen.
 */
#include "engine/podsecurity.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "engine/value.h"
#include "common/yaml.h"
#include "common/banned.h"

/* ---- the tables ---- */

enum {
	CHK_ALLOW_PRIVILEGE_ESCALATION,
	CHK_APPARMOR,
	CHK_CAPS_BASELINE,
	CHK_CAPS_RESTRICTED,
	CHK_HOST_NAMESPACES,
	CHK_HOSTPATH_VOLUMES,
	CHK_HOST_PORTS,
	CHK_HOST_PROBES,
	CHK_PRIVILEGED,
	CHK_PROCMOUNT,
	CHK_RESTRICTED_VOLUMES,
	CHK_RUN_AS_NON_ROOT,
	CHK_RUN_AS_USER,
	CHK_SELINUX,
	CHK_SECCOMP_BASELINE,
	CHK_SECCOMP_RESTRICTED,
	CHK_SYSCTLS,
	CHK_WINDOWS_HOST_PROCESS,
};

/* Where an exclusion of a control may point (section 1.1). */
enum ctl_scope { SCOPE_CONTAINER, SCOPE_POD, SCOPE_EITHER };

/* Controls, in the order of `PSS_control_name_to_ids` [K: pkg/pss/utils/mapping.go]. */
enum {
	CTL_NONE = -1,
	CTL_CAPABILITIES,
	CTL_SECCOMP,
	CTL_PRIVILEGED,
	CTL_HOST_PORTS,
	CTL_PROC_MOUNT,
	CTL_HOST_PROCESS,
	CTL_SELINUX,
	CTL_HOST_NAMESPACES,
	CTL_HOSTPATH_VOLUMES,
	CTL_SYSCTLS,
	CTL_APPARMOR,
	CTL_PRIVILEGE_ESCALATION,
	CTL_RUN_AS_NON_ROOT,
	CTL_RUN_AS_NON_ROOT_USER,
	CTL_VOLUME_TYPES,
};

/* The controls an exclusion names (section 1.2); each check names its control. */
static const struct pss_control {
	const char *name;
	enum ctl_scope scope;
	bool baseline_ok; /* may be excluded in a level: baseline rule */
} controls[] = {
    [CTL_CAPABILITIES] = {"Capabilities", SCOPE_CONTAINER, true},
    [CTL_SECCOMP] = {"Seccomp", SCOPE_EITHER, true},
    [CTL_PRIVILEGED] = {"Privileged Containers", SCOPE_CONTAINER, true},
    [CTL_HOST_PORTS] = {"Host Ports", SCOPE_CONTAINER, true},
    [CTL_PROC_MOUNT] = {"/proc Mount Type", SCOPE_CONTAINER, true},
    [CTL_HOST_PROCESS] = {"HostProcess", SCOPE_EITHER, true},
    [CTL_SELINUX] = {"SELinux", SCOPE_EITHER, true},
    [CTL_HOST_NAMESPACES] = {"Host Namespaces", SCOPE_POD, true},
    [CTL_HOSTPATH_VOLUMES] = {"HostPath Volumes", SCOPE_POD, true},
    [CTL_SYSCTLS] = {"Sysctls", SCOPE_POD, true},
    [CTL_APPARMOR] = {"AppArmor", SCOPE_EITHER, true},
    [CTL_PRIVILEGE_ESCALATION] = {"Privilege Escalation", SCOPE_CONTAINER, false},
    [CTL_RUN_AS_NON_ROOT] = {"Running as Non-root", SCOPE_EITHER, false},
    [CTL_RUN_AS_NON_ROOT_USER] = {"Running as Non-root user", SCOPE_EITHER, false},
    [CTL_VOLUME_TYPES] = {"Volume Types", SCOPE_POD, false},
};

/* A field error (section 4.1): Forbidden with an optional bad value, or Required. */
struct ferr {
	char *field;   /* owned, pod form: spec.containers[0]... */
	bool required; /* Required value, else Forbidden */
	json_t *value; /* owned bad value (string, bool, integer, list of strings) or NULL */
};

/* One check's outcome on a pod. */
struct cres {
	bool failed;
	const char *reason; /* borrowed: ForbiddenReason */
	struct ferr *e;
	size_t n, cap;
};

/* The outcome of every check of the table on one pod (index = check). */
struct pss_checks {
	struct cres c[PSS_NCHECKS];
};

/* The pod a check reads. */
struct pod {
	const json_t *spec; /* pod spec object, or NULL */
	const json_t *meta; /* pod metadata object, or NULL */
};

typedef void (*check_fn)(const struct pod *p, unsigned ver, struct cres *r);

static void chk_allow_privilege_escalation(const struct pod *p, unsigned ver, struct cres *r);
static void chk_apparmor(const struct pod *p, unsigned ver, struct cres *r);
static void chk_caps_baseline(const struct pod *p, unsigned ver, struct cres *r);
static void chk_caps_restricted(const struct pod *p, unsigned ver, struct cres *r);
static void chk_host_namespaces(const struct pod *p, unsigned ver, struct cres *r);
static void chk_hostpath_volumes(const struct pod *p, unsigned ver, struct cres *r);
static void chk_host_ports(const struct pod *p, unsigned ver, struct cres *r);
static void chk_host_probes(const struct pod *p, unsigned ver, struct cres *r);
static void chk_privileged(const struct pod *p, unsigned ver, struct cres *r);
static void chk_procmount(const struct pod *p, unsigned ver, struct cres *r);
static void chk_restricted_volumes(const struct pod *p, unsigned ver, struct cres *r);
static void chk_run_as_non_root(const struct pod *p, unsigned ver, struct cres *r);
static void chk_run_as_user(const struct pod *p, unsigned ver, struct cres *r);
static void chk_selinux(const struct pod *p, unsigned ver, struct cres *r);
static void chk_seccomp_baseline(const struct pod *p, unsigned ver, struct cres *r);
static void chk_seccomp_restricted(const struct pod *p, unsigned ver, struct cres *r);
static void chk_sysctls(const struct pod *p, unsigned ver, struct cres *r);
static void chk_windows_host_process(const struct pod *p, unsigned ver, struct cres *r);

enum level { BASELINE, RESTRICTED };

/*
 * The checks of [PSA: policy/check_*.go] in registration order (section 3.1,
 * 3.2). `versions` are the minimum policy versions (minor of v1.x) of the
 * check's versions, ascending (PSA's 1.8 of allowPrivilegeEscalation is
 * older than any version a policy can ask for).
 */
static const struct pss_check {
	const char *id;
	int control; /* CTL_*: the control whose exclusions apply to it */
	enum level level;
	const char *reason; /* ForbiddenReason */
	unsigned versions[4];
	int nversions;
	check_fn fn;
} checks[PSS_NCHECKS] = {
#define CHECK(id, ctl, lvl, reason, fn, ...)                                                       \
	{                                                                                          \
		id, ctl, lvl, reason, {__VA_ARGS__},                                               \
		    (int)GV_ARRAY_LEN(((unsigned[]){__VA_ARGS__})), fn                             \
	}
    CHECK("allowPrivilegeEscalation", CTL_PRIVILEGE_ESCALATION, RESTRICTED,
	  "allowPrivilegeEscalation != false", chk_allow_privilege_escalation, 8, 25),
    CHECK("appArmorProfile", CTL_APPARMOR, BASELINE, "forbidden AppArmor profile", chk_apparmor, 0),
    CHECK("capabilities_baseline", CTL_CAPABILITIES, BASELINE, "non-default capabilities",
	  chk_caps_baseline, 0),
    CHECK("capabilities_restricted", CTL_CAPABILITIES, RESTRICTED, "unrestricted capabilities",
	  chk_caps_restricted, 22, 25),
    CHECK("hostNamespaces", CTL_HOST_NAMESPACES, BASELINE, "host namespaces", chk_host_namespaces,
	  0),
    CHECK("hostPathVolumes", CTL_HOSTPATH_VOLUMES, BASELINE, "hostPath volumes",
	  chk_hostpath_volumes, 0),
    CHECK("hostPorts", CTL_HOST_PORTS, BASELINE, "hostPort", chk_host_ports, 0),
    CHECK("hostProbesAndHostLifecycle", CTL_NONE, BASELINE, "probe or lifecycle host",
	  chk_host_probes, 34),
    CHECK("privileged", CTL_PRIVILEGED, BASELINE, "privileged", chk_privileged, 0),
    CHECK("procMount", CTL_PROC_MOUNT, BASELINE, "procMount", chk_procmount, 0),
    CHECK("restrictedVolumes", CTL_VOLUME_TYPES, RESTRICTED, "restricted volume types",
	  chk_restricted_volumes, 0),
    CHECK("runAsNonRoot", CTL_RUN_AS_NON_ROOT, RESTRICTED, "runAsNonRoot != true",
	  chk_run_as_non_root, 0),
    CHECK("runAsUser", CTL_RUN_AS_NON_ROOT_USER, RESTRICTED, "runAsUser=0", chk_run_as_user, 23),
    CHECK("seLinuxOptions", CTL_SELINUX, BASELINE, "seLinuxOptions", chk_selinux, 0, 31),
    CHECK("seccompProfile_baseline", CTL_SECCOMP, BASELINE, "seccompProfile", chk_seccomp_baseline,
	  0, 19),
    CHECK("seccompProfile_restricted", CTL_SECCOMP, RESTRICTED, "seccompProfile",
	  chk_seccomp_restricted, 19, 25),
    CHECK("sysctls", CTL_SYSCTLS, BASELINE, "forbidden sysctls", chk_sysctls, 0, 27, 29, 32),
    CHECK("windowsHostProcess", CTL_HOST_PROCESS, BASELINE, "hostProcess", chk_windows_host_process,
	  0),
#undef CHECK
};

const char *pss_check_id(int i)
{
	return i >= 0 && i < PSS_NCHECKS ? checks[i].id : NULL;
}

const char *pss_check_control(int i)
{
	if (i < 0 || i >= PSS_NCHECKS || checks[i].control < 0)
		return NULL;
	return controls[checks[i].control].name;
}

size_t pss_control_count(void)
{
	return GV_ARRAY_LEN(controls);
}

const char *pss_control_name(size_t i)
{
	return i < GV_ARRAY_LEN(controls) ? controls[i].name : NULL;
}

/*
 * The version of check c used for requested version `want` (section 3.1):
 * the last one whose minimum is <= want, else the first one (Kyverno runs a
 * check even below its first version).
 */
static unsigned check_version(const struct pss_check *c, unsigned want)
{
	unsigned v = c->versions[0];
	for (int i = 1; i < c->nversions; i++)
		if (c->versions[i] <= want)
			v = c->versions[i];
	return v;
}

/* ---- JSON access ---- */

static const json_t *obj(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_object(v) ? v : NULL;
}

/* Present and not null: a Go pointer that is set. */
static bool set(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return v && !json_is_null(v);
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* A JSON string's text, or "" for anything else. */
static const char *sval(const json_t *v)
{
	const char *s = json_string_value(v);
	return s ? s : "";
}

/*
 * A JSON number as the integer Go decodes it into: integers, and reals with
 * no fraction (the CLI loads numbers as float64, which Kyverno marshals
 * back as integers when they have no fraction).
 */
static bool int_value(const json_t *v, json_int_t *out)
{
	double d;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return true;
	}
	if (!json_is_real(v))
		return false;
	d = json_real_value(v);
	if (d != floor(d) || d < -9.2e18 || d > 9.2e18)
		return false;
	*out = (json_int_t)d;
	return true;
}

static bool is_windows(const struct pod *p)
{
	return !strcmp(str(obj(p->spec, "os"), "name"), "windows");
}

/* Containers in visit order: initContainers, containers, ephemeralContainers. */
static const char *const container_lists[] = {"initContainers", "containers",
					      "ephemeralContainers"};

struct citer {
	const json_t *spec;
	size_t list, i;
	const json_t *arr; /* the list being visited, once looked up (i > 0) */
	const json_t *c;   /* the container */
	char path[96];	   /* spec.<list>[i], once citer_path() made it */
	const json_t *sc;  /* its securityContext object, or NULL */
};

static bool citer_next(struct citer *it)
{
	while (it->list < GV_ARRAY_LEN(container_lists)) {
		const json_t *arr;

		if (!it->i)
			it->arr = json_object_get(it->spec, container_lists[it->list]);
		arr = it->arr;
		if (json_is_array(arr) && it->i < json_array_size(arr)) {
			it->c = json_array_get(arr, it->i);
			it->path[0] = '\0';
			it->sc = obj(it->c, "securityContext");
			it->i++;
			return true;
		}
		it->list++;
		it->i = 0;
	}
	return false;
}

/* The path of the current container, "spec.<list>[i]": made when an error names it. */
static const char *citer_path(struct citer *it)
{
	if (!it->path[0])
		snprintf(it->path, sizeof(it->path), "spec.%s[%zu]", container_lists[it->list],
			 it->i - 1);
	return it->path;
}

#define FOR_CONTAINERS(it, p) for (struct citer it = {.spec = (p)->spec}; citer_next(&it);)

static void add_err(struct cres *r, bool required, json_t *value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends a field error (value stolen, may be NULL) and marks the check failed. */
static void add_err(struct cres *r, bool required, json_t *value, const char *fmt, ...)
{
	struct gv_buf b = {0};
	va_list ap;

	va_start(ap, fmt);
	gv_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4;
		r->e = gv_xrealloc(r->e, r->cap * sizeof(*r->e));
	}
	r->e[r->n].field = gv_buf_detach(&b);
	r->e[r->n].required = required;
	r->e[r->n].value = value;
	r->n++;
	r->failed = true;
}

static void cres_release(struct cres *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->e[i].field);
		json_decref(r->e[i].value);
	}
	free(r->e);
	memset(r, 0, sizeof(*r));
}

static bool in_list(const char *const *set_, const char *s)
{
	for (; *set_; set_++)
		if (!strcmp(*set_, s))
			return true;
	return false;
}

static int cmp_json_str(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
		      json_string_value(*(json_t *const *)b));
}

/* Sorts a list of strings in place (Go sort.Strings). */
static json_t *sorted(json_t *list)
{
	size_t n = json_array_size(list);
	json_t **v = gv_xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(list, i));
	qsort(v, n, sizeof(*v), cmp_json_str);
	json_array_clear(list);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, v[i]);
	free(v);
	return list;
}

/* A list's elements as strings (null, the zero value, as ""); new reference. */
static json_t *strings_of(const json_t *list)
{
	json_t *out = json_array(), *c;
	size_t i;
	json_array_foreach(list, i, c) json_array_append_new(out, json_string(sval(c)));
	return out;
}

/* ---- the checks (section 3.2) ---- */

static void chk_allow_privilege_escalation(const struct pod *p, unsigned ver, struct cres *r)
{
	if (ver >= 25 && is_windows(p))
		return;
	FOR_CONTAINERS(it, p)
	{
		const json_t *v = json_object_get(it.sc, "allowPrivilegeEscalation");
		if (!it.sc)
			add_err(r, true, NULL, "%s.securityContext.allowPrivilegeEscalation",
				citer_path(&it));
		else if (!v || json_is_null(v))
			add_err(r, false, json_string("nil"),
				"%s.securityContext.allowPrivilegeEscalation", citer_path(&it));
		else if (json_is_true(v))
			add_err(r, false, json_true(),
				"%s.securityContext.allowPrivilegeEscalation", citer_path(&it));
	}
}

static bool apparmor_ok(const json_t *profile)
{
	const char *t = str(profile, "type");
	return !strcmp(t, "RuntimeDefault") || !strcmp(t, "Localhost");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void chk_apparmor(const struct pod *p, unsigned ver, struct cres *r)
{
	static const char prefix[] = "container.apparmor.security.beta.kubernetes.io/";
	const json_t *prof = obj(obj(p->spec, "securityContext"), "appArmorProfile");
	const json_t *ann = obj(p->meta, "annotations");
	json_t *bad = json_object();
	const char **keys = gv_xcalloc(json_object_size(ann) + 1, sizeof(*keys));
	size_t nkeys = 0;
	const char *k;
	json_t *v;

	(void)ver;
	if (prof && !apparmor_ok(prof)) {
		add_err(r, false, json_string(str(prof, "type")),
			"spec.securityContext.appArmorProfile.type");
		json_object_set_new(bad, str(prof, "type"), json_true());
	}
	FOR_CONTAINERS(it, p)
	{
		prof = obj(it.sc, "appArmorProfile");
		if (prof && !apparmor_ok(prof)) {
			add_err(r, false, json_string(str(prof, "type")),
				"%s.securityContext.appArmorProfile.type", citer_path(&it));
			json_object_set_new(bad, str(prof, "type"), json_true());
		}
	}
	/* Go iterates the map in random order: gavel sorts the keys. */
	json_object_foreach((json_t *)ann, k, v) keys[nkeys++] = k;
	qsort(keys, nkeys, sizeof(*keys), cmp_str);
	for (size_t i = 0; i < nkeys; i++) {
		const char *val = json_string_value(json_object_get(ann, keys[i]));
		if (strncmp(keys[i], prefix, strlen(prefix)) || !val)
			continue;
		if (!*val || !strcmp(val, "runtime/default") || !strncmp(val, "localhost/", 10))
			continue;
		add_err(r, false, json_string(val), "metadata.annotations[%s]", keys[i]);
		json_object_set_new(bad, val, json_true());
	}
	if (json_object_size(bad) > 1)
		r->reason = "forbidden AppArmor profiles";
	free(keys);
	json_decref(bad);
}

static const char *const caps_baseline_allowed[] = {
    "AUDIT_WRITE",	"CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",	      "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID",	   "SETPCAP", "SETUID", "SYS_CHROOT", NULL};

static void chk_caps_baseline(const struct pod *p, unsigned ver, struct cres *r)
{
	(void)ver;
	FOR_CONTAINERS(it, p)
	{
		const json_t *add = json_object_get(obj(it.sc, "capabilities"), "add");
		json_t *badv = json_array();
		size_t i;
		json_t *c;
		json_array_foreach(add, i, c)
		{
			/* a null element decodes as "" (the zero Capability) */
			if (!in_list(caps_baseline_allowed, sval(c)))
				json_array_append_new(badv, json_string(sval(c)));
		}
		if (json_array_size(badv))
			add_err(r, false, sorted(badv), "%s.securityContext.capabilities.add",
				citer_path(&it));
		else
			json_decref(badv);
	}
}

static void chk_caps_restricted(const struct pod *p, unsigned ver, struct cres *r)
{
	struct cres adds = {0};

	if (ver >= 25 && is_windows(p))
		return;
	FOR_CONTAINERS(it, p)
	{
		const json_t *caps = obj(it.sc, "capabilities");
		const json_t *drop = json_object_get(caps, "drop");
		const json_t *add = json_object_get(caps, "add");
		bool all = false;
		json_t *badv, *c;
		size_t i;

		if (!caps) {
			add_err(r, true, NULL, "%s.securityContext.capabilities.drop",
				citer_path(&it));
			continue;
		}
		json_array_foreach(drop, i, c) all |= !strcmp(sval(c), "ALL");
		if (!all && json_array_size(drop))
			add_err(r, false, sorted(strings_of(drop)),
				"%s.securityContext.capabilities.drop", citer_path(&it));
		else if (!all)
			add_err(r, true, NULL, "%s.securityContext.capabilities.drop",
				citer_path(&it));
		badv = json_array();
		json_array_foreach(add, i, c) if (strcmp(sval(c), "NET_BIND_SERVICE"))
		    json_array_append_new(badv, json_string(sval(c)));
		if (json_array_size(badv))
			add_err(&adds, false, sorted(badv), "%s.securityContext.capabilities.add",
				citer_path(&it));
		else
			json_decref(badv);
	}
	/* All drop errors, then all add errors. */
	for (size_t i = 0; i < adds.n; i++) {
		add_err(r, false, adds.e[i].value, "%s", adds.e[i].field);
		adds.e[i].value = NULL;
	}
	cres_release(&adds);
}

static void chk_host_namespaces(const struct pod *p, unsigned ver, struct cres *r)
{
	static const char *const fields[] = {"hostNetwork", "hostPID", "hostIPC"};
	(void)ver;
	for (size_t i = 0; i < GV_ARRAY_LEN(fields); i++)
		if (json_is_true(json_object_get(p->spec, fields[i])))
			add_err(r, false, json_true(), "spec.%s", fields[i]);
}

static void chk_hostpath_volumes(const struct pod *p, unsigned ver, struct cres *r)
{
	size_t i;
	json_t *v;
	(void)ver;
	json_array_foreach(json_object_get(p->spec, "volumes"), i, v)
	{
		if (set(v, "hostPath"))
			add_err(r, false, json_string(str(obj(v, "hostPath"), "path")),
				"spec.volumes[%zu].hostPath", i);
	}
}

static void chk_host_ports(const struct pod *p, unsigned ver, struct cres *r)
{
	(void)ver;
	FOR_CONTAINERS(it, p)
	{
		size_t j;
		json_t *port;
		json_array_foreach(json_object_get(it.c, "ports"), j, port)
		{
			json_int_t hp = 0;
			if (int_value(json_object_get(port, "hostPort"), &hp) && hp != 0)
				add_err(r, false, json_integer(hp), "%s.ports[%zu].hostPort",
					citer_path(&it), j);
		}
	}
}

/* A probe or lifecycle handler naming a host (httpGet.host, tcpSocket.host). */
static bool handler_has_host(const json_t *h)
{
	return *str(obj(h, "httpGet"), "host") || *str(obj(h, "tcpSocket"), "host");
}

static void chk_host_probes(const struct pod *p, unsigned ver, struct cres *r)
{
	static const char *const probes[] = {"livenessProbe", "readinessProbe", "startupProbe"};
	(void)ver;
	FOR_CONTAINERS(it, p)
	{
		const json_t *lc = obj(it.c, "lifecycle");
		for (size_t i = 0; i < GV_ARRAY_LEN(probes); i++)
			if (handler_has_host(obj(it.c, probes[i])))
				r->failed = true;
		if (handler_has_host(obj(lc, "postStart")) || handler_has_host(obj(lc, "preStop")))
			r->failed = true;
	}
}

static void chk_privileged(const struct pod *p, unsigned ver, struct cres *r)
{
	(void)ver;
	FOR_CONTAINERS(it, p)
	{
		if (json_is_true(json_object_get(it.sc, "privileged")))
			add_err(r, false, json_true(), "%s.securityContext.privileged",
				citer_path(&it));
	}
}

static void chk_procmount(const struct pod *p, unsigned ver, struct cres *r)
{
	(void)ver;
	FOR_CONTAINERS(it, p)
	{
		const json_t *pm = json_object_get(it.sc, "procMount");
		if (json_is_string(pm) && strcmp(json_string_value(pm), "Default"))
			add_err(r, false, json_string(json_string_value(pm)),
				"%s.securityContext.procMount", citer_path(&it));
	}
}

static void chk_restricted_volumes(const struct pod *p, unsigned ver, struct cres *r)
{
	static const char *const allowed[] = {
	    "configMap", "csi",	  "downwardAPI",	   "emptyDir",
	    "ephemeral", "image", "persistentVolumeClaim", "projected",
	    "secret"};
	static const char *const named[] = {"hostPath",
					    "gcePersistentDisk",
					    "awsElasticBlockStore",
					    "gitRepo",
					    "nfs",
					    "iscsi",
					    "glusterfs",
					    "rbd",
					    "flexVolume",
					    "cinder",
					    "cephfs",
					    "flocker",
					    "fc",
					    "azureFile",
					    "vsphereVolume",
					    "quobyte",
					    "azureDisk",
					    "photonPersistentDisk",
					    "portworxVolume",
					    "scaleIO",
					    "storageos"};
	size_t i;
	json_t *v;
	(void)ver;
	json_array_foreach(json_object_get(p->spec, "volumes"), i, v)
	{
		const char *type = "unknown";
		bool ok = false;
		for (size_t k = 0; k < GV_ARRAY_LEN(allowed) && !ok; k++)
			ok = set(v, allowed[k]);
		if (ok)
			continue;
		for (size_t k = 0; k < GV_ARRAY_LEN(named); k++) {
			if (set(v, named[k])) {
				type = named[k];
				break;
			}
		}
		add_err(r, false, NULL, "spec.volumes[%zu].%s", i, type);
	}
}

static void chk_run_as_non_root(const struct pod *p, unsigned ver, struct cres *r)
{
	const json_t *pv = json_object_get(obj(p->spec, "securityContext"), "runAsNonRoot");
	bool pod_ok = json_is_true(pv);
	struct cres req = {0};

	(void)ver;
	if (json_is_false(pv))
		add_err(r, false, json_false(), "spec.securityContext.runAsNonRoot");
	FOR_CONTAINERS(it, p)
	{
		const json_t *cv = json_object_get(it.sc, "runAsNonRoot");
		if (cv && !json_is_null(cv)) {
			if (json_is_false(cv))
				add_err(r, false, json_false(), "%s.securityContext.runAsNonRoot",
					citer_path(&it));
		} else if (!pod_ok) {
			add_err(&req, true, NULL, "%s.securityContext.runAsNonRoot",
				citer_path(&it));
		}
	}
	for (size_t i = 0; i < req.n; i++)
		add_err(r, true, NULL, "%s", req.e[i].field);
	cres_release(&req);
}

/* A runAsUser set to 0 (an integer field; other types were refused by decoding). */
static bool is_root(const json_t *v)
{
	json_int_t i;
	return int_value(v, &i) && i == 0;
}

static void chk_run_as_user(const struct pod *p, unsigned ver, struct cres *r)
{
	(void)ver;
	if (is_root(json_object_get(obj(p->spec, "securityContext"), "runAsUser")))
		add_err(r, false, json_integer(0), "spec.securityContext.runAsUser");
	FOR_CONTAINERS(it, p)
	{
		if (is_root(json_object_get(it.sc, "runAsUser")))
			add_err(r, false, json_integer(0), "%s.securityContext.runAsUser",
				citer_path(&it));
	}
}

static void selinux_one(const json_t *opts, unsigned ver, const char *at, struct cres *r)
{
	static const char *const types[] = {"", "container_t", "container_init_t",
					    "container_kvm_t", NULL};
	const char *t = str(opts, "type");

	if (!opts)
		return;
	if (!in_list(types, t) && !(ver >= 31 && !strcmp(t, "container_engine_t")))
		add_err(r, false, json_string(t), "%s.securityContext.seLinuxOptions.type", at);
	if (*str(opts, "user"))
		add_err(r, false, json_string(str(opts, "user")),
			"%s.securityContext.seLinuxOptions.user", at);
	if (*str(opts, "role"))
		add_err(r, false, json_string(str(opts, "role")),
			"%s.securityContext.seLinuxOptions.role", at);
}

static void chk_selinux(const struct pod *p, unsigned ver, struct cres *r)
{
	selinux_one(obj(obj(p->spec, "securityContext"), "seLinuxOptions"), ver, "spec", r);
	FOR_CONTAINERS(it, p)
	{
		const json_t *opts = obj(it.sc, "seLinuxOptions");
		if (opts)
			selinux_one(opts, ver, citer_path(&it), r);
	}
}

static bool seccomp_type_ok(const json_t *profile)
{
	const char *t = str(profile, "type");
	return !strcmp(t, "RuntimeDefault") || !strcmp(t, "Localhost");
}

/* Annotation values of seccompProfile_baseline 1.0. */
static bool seccomp_annotation_ok(const char *v)
{
	return !strcmp(v, "runtime/default") || !strcmp(v, "docker/default") ||
	       !strncmp(v, "localhost/", 10);
}

static void chk_seccomp_baseline(const struct pod *p, unsigned ver, struct cres *r)
{
	const json_t *prof;

	if (ver < 19) {
		const json_t *ann = obj(p->meta, "annotations");
		static const char pod_key[] = "seccomp.security.alpha.kubernetes.io/pod";
		const char *v = json_string_value(json_object_get(ann, pod_key));
		if (v && !seccomp_annotation_ok(v))
			add_err(r, false, json_string(v), "metadata.annotations[%s]", pod_key);
		FOR_CONTAINERS(it, p)
		{
			char *key = gv_xasprintf(
			    "container.seccomp.security.alpha.kubernetes.io/%s", str(it.c, "name"));
			v = json_string_value(json_object_get(ann, key));
			if (v && !seccomp_annotation_ok(v))
				add_err(r, false, json_string(v), "metadata.annotations[%s]", key);
			free(key);
		}
		return;
	}
	prof = obj(obj(p->spec, "securityContext"), "seccompProfile");
	if (prof && !seccomp_type_ok(prof))
		add_err(r, false, json_string(str(prof, "type")),
			"spec.securityContext.seccompProfile.type");
	FOR_CONTAINERS(it, p)
	{
		prof = obj(it.sc, "seccompProfile");
		if (prof && !seccomp_type_ok(prof))
			add_err(r, false, json_string(str(prof, "type")),
				"%s.securityContext.seccompProfile.type", citer_path(&it));
	}
}

static void chk_seccomp_restricted(const struct pod *p, unsigned ver, struct cres *r)
{
	const json_t *prof = obj(obj(p->spec, "securityContext"), "seccompProfile");
	bool pod_ok = false;
	struct cres req = {0};

	if (ver >= 25 && is_windows(p))
		return;
	if (prof && !seccomp_type_ok(prof))
		add_err(r, false, json_string(str(prof, "type")),
			"spec.securityContext.seccompProfile.type");
	else if (prof)
		pod_ok = true;
	FOR_CONTAINERS(it, p)
	{
		const json_t *cp = obj(it.sc, "seccompProfile");
		if (cp && !seccomp_type_ok(cp))
			add_err(r, false, json_string(str(cp, "type")),
				"%s.securityContext.seccompProfile.type", citer_path(&it));
		else if (!cp && !pod_ok)
			add_err(&req, true, NULL, "%s.securityContext.seccompProfile.type",
				citer_path(&it));
	}
	/* Containers that set nothing are reported only when nothing was set wrong. */
	if (!r->n) {
		for (size_t i = 0; i < req.n; i++)
			add_err(r, true, NULL, "%s", req.e[i].field);
	}
	cres_release(&req);
}

/* Allowed sysctls and the version that added each (section 3.2). */
static const struct {
	const char *name;
	unsigned since;
} sysctls_allowed[] = {
    {"kernel.shm_rmid_forced", 0},
    {"net.ipv4.ip_local_port_range", 0},
    {"net.ipv4.tcp_syncookies", 0},
    {"net.ipv4.ping_group_range", 0},
    {"net.ipv4.ip_unprivileged_port_start", 0},
    {"net.ipv4.ip_local_reserved_ports", 27},
    {"net.ipv4.tcp_keepalive_time", 29},
    {"net.ipv4.tcp_fin_timeout", 29},
    {"net.ipv4.tcp_keepalive_intvl", 29},
    {"net.ipv4.tcp_keepalive_probes", 29},
    {"net.ipv4.tcp_rmem", 32},
    {"net.ipv4.tcp_wmem", 32},
};

static void chk_sysctls(const struct pod *p, unsigned ver, struct cres *r)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(obj(p->spec, "securityContext"), "sysctls"), i, s)
	{
		const char *name = str(s, "name");
		bool ok = false;
		for (size_t k = 0; k < GV_ARRAY_LEN(sysctls_allowed) && !ok; k++)
			ok = sysctls_allowed[k].since <= ver &&
			     !strcmp(sysctls_allowed[k].name, name);
		if (!ok)
			add_err(r, false, json_string(name),
				"spec.securityContext.sysctls[%zu].name", i);
	}
}

static void chk_windows_host_process(const struct pod *p, unsigned ver, struct cres *r)
{
	const json_t *wo = obj(obj(p->spec, "securityContext"), "windowsOptions");
	(void)ver;
	if (json_is_true(json_object_get(wo, "hostProcess")))
		add_err(r, false, json_true(), "spec.securityContext.windowsOptions.hostProcess");
	FOR_CONTAINERS(it, p)
	{
		wo = obj(it.sc, "windowsOptions");
		if (json_is_true(json_object_get(wo, "hostProcess")))
			add_err(r, false, json_true(),
				"%s.securityContext.windowsOptions.hostProcess", citer_path(&it));
	}
}

/* ---- decoding (section 2 step 3) ---- */

/*
 * The fields the checks read, with the Go types encoding/json decodes them
 * into; a value of another JSON type is the error Go gives (`json: cannot
 * unmarshal <value> into Go struct field <Struct>.<path> of type <type>`).
 * null is always accepted (Go leaves the zero value).
 */
enum jty { J_BOOL, J_STR, J_I32, J_I64, J_OBJ, J_OBJ_LIST, J_STR_LIST, J_STR_MAP };

struct schema;

struct fschema {
	const char *name;
	enum jty ty;
	const char *gotype;   /* the field's type as Go prints it */
	const char *elemtype; /* element type (lists and maps) */
	const struct schema *sub;
};

struct schema {
	const char *gostruct;
	const struct fschema *f;
};

static const struct fschema f_selinux[] = {{"type", J_STR, "string", NULL, NULL},
					   {"user", J_STR, "string", NULL, NULL},
					   {"role", J_STR, "string", NULL, NULL},
					   {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_selinux = {"SELinuxOptions", f_selinux};
static const struct fschema f_seccomp[] = {{"type", J_STR, "v1.SeccompProfileType", NULL, NULL},
					   {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_seccomp = {"SeccompProfile", f_seccomp};
static const struct fschema f_apparmor[] = {{"type", J_STR, "v1.AppArmorProfileType", NULL, NULL},
					    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_apparmor = {"AppArmorProfile", f_apparmor};
static const struct fschema f_windows[] = {{"hostProcess", J_BOOL, "bool", NULL, NULL},
					   {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_windows = {"WindowsSecurityContextOptions", f_windows};
static const struct fschema f_sysctl[] = {{"name", J_STR, "string", NULL, NULL},
					  {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_sysctl = {"Sysctl", f_sysctl};
static const struct fschema f_caps[] = {
    {"add", J_STR_LIST, "[]v1.Capability", "v1.Capability", NULL},
    {"drop", J_STR_LIST, "[]v1.Capability", "v1.Capability", NULL},
    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_caps = {"Capabilities", f_caps};
static const struct fschema f_podsc[] = {
    {"runAsNonRoot", J_BOOL, "bool", NULL, NULL},
    {"runAsUser", J_I64, "int64", NULL, NULL},
    {"seLinuxOptions", J_OBJ, "v1.SELinuxOptions", NULL, &s_selinux},
    {"seccompProfile", J_OBJ, "v1.SeccompProfile", NULL, &s_seccomp},
    {"appArmorProfile", J_OBJ, "v1.AppArmorProfile", NULL, &s_apparmor},
    {"windowsOptions", J_OBJ, "v1.WindowsSecurityContextOptions", NULL, &s_windows},
    {"sysctls", J_OBJ_LIST, "[]v1.Sysctl", "v1.Sysctl", &s_sysctl},
    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_podsc = {"PodSecurityContext", f_podsc};
static const struct fschema f_sc[] = {
    {"capabilities", J_OBJ, "v1.Capabilities", NULL, &s_caps},
    {"privileged", J_BOOL, "bool", NULL, NULL},
    {"seLinuxOptions", J_OBJ, "v1.SELinuxOptions", NULL, &s_selinux},
    {"windowsOptions", J_OBJ, "v1.WindowsSecurityContextOptions", NULL, &s_windows},
    {"runAsUser", J_I64, "int64", NULL, NULL},
    {"runAsNonRoot", J_BOOL, "bool", NULL, NULL},
    {"allowPrivilegeEscalation", J_BOOL, "bool", NULL, NULL},
    {"procMount", J_STR, "v1.ProcMountType", NULL, NULL},
    {"seccompProfile", J_OBJ, "v1.SeccompProfile", NULL, &s_seccomp},
    {"appArmorProfile", J_OBJ, "v1.AppArmorProfile", NULL, &s_apparmor},
    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_sc = {"SecurityContext", f_sc};
static const struct fschema f_port[] = {{"hostPort", J_I32, "int32", NULL, NULL},
					{NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_port = {"ContainerPort", f_port};
static const struct fschema f_http[] = {{"host", J_STR, "string", NULL, NULL},
					{NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_http = {"HTTPGetAction", f_http};
static const struct schema s_tcp = {"TCPSocketAction", f_http};
static const struct fschema f_probe[] = {{"httpGet", J_OBJ, "v1.HTTPGetAction", NULL, &s_http},
					 {"tcpSocket", J_OBJ, "v1.TCPSocketAction", NULL, &s_tcp},
					 {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_probe = {"Probe", f_probe};
static const struct schema s_handler = {"LifecycleHandler", f_probe};
static const struct fschema f_lifecycle[] = {
    {"postStart", J_OBJ, "v1.LifecycleHandler", NULL, &s_handler},
    {"preStop", J_OBJ, "v1.LifecycleHandler", NULL, &s_handler},
    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_lifecycle = {"Lifecycle", f_lifecycle};
#define CONTAINER_FIELDS                                                                           \
	{"name", J_STR, "string", NULL, NULL}, {"image", J_STR, "string", NULL, NULL},             \
	    {"ports", J_OBJ_LIST, "[]v1.ContainerPort", "v1.ContainerPort", &s_port},              \
	    {"livenessProbe", J_OBJ, "v1.Probe", NULL, &s_probe},                                  \
	    {"readinessProbe", J_OBJ, "v1.Probe", NULL, &s_probe},                                 \
	    {"startupProbe", J_OBJ, "v1.Probe", NULL, &s_probe},                                   \
	    {"lifecycle", J_OBJ, "v1.Lifecycle", NULL, &s_lifecycle},                              \
	    {"securityContext", J_OBJ, "v1.SecurityContext", NULL, &s_sc},                         \
	{                                                                                          \
		NULL, J_BOOL, NULL, NULL, NULL                                                     \
	}
static const struct fschema f_container[] = {CONTAINER_FIELDS};
static const struct schema s_container = {"Container", f_container};
static const struct schema s_ephemeral = {"EphemeralContainer", f_container};
static const struct fschema f_hostpath[] = {{"path", J_STR, "string", NULL, NULL},
					    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_hostpath = {"HostPathVolumeSource", f_hostpath};
static const struct fschema f_volume[] = {
    {"hostPath", J_OBJ, "v1.HostPathVolumeSource", NULL, &s_hostpath},
    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_volume = {"Volume", f_volume};
static const struct fschema f_os[] = {{"name", J_STR, "v1.OSName", NULL, NULL},
				      {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_os = {"PodOS", f_os};
static const struct fschema f_podspec[] = {
    {"volumes", J_OBJ_LIST, "[]v1.Volume", "v1.Volume", &s_volume},
    {"initContainers", J_OBJ_LIST, "[]v1.Container", "v1.Container", &s_container},
    {"containers", J_OBJ_LIST, "[]v1.Container", "v1.Container", &s_container},
    {"ephemeralContainers", J_OBJ_LIST, "[]v1.EphemeralContainer", "v1.EphemeralContainer",
     &s_ephemeral},
    {"hostNetwork", J_BOOL, "bool", NULL, NULL},
    {"hostPID", J_BOOL, "bool", NULL, NULL},
    {"hostIPC", J_BOOL, "bool", NULL, NULL},
    {"securityContext", J_OBJ, "v1.PodSecurityContext", NULL, &s_podsc},
    {"os", J_OBJ, "v1.PodOS", NULL, &s_os},
    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_podspec = {"PodSpec", f_podspec};
static const struct fschema f_meta[] = {
    {"annotations", J_STR_MAP, "map[string]string", "string", NULL},
    {NULL, J_BOOL, NULL, NULL, NULL}};
static const struct schema s_meta = {"ObjectMeta", f_meta};

/* Go's name for a JSON value it cannot decode into `want`. */
static char *go_value(const json_t *v, enum jty want)
{
	if (json_is_string(v))
		return gv_xstrdup("string");
	if (json_is_boolean(v))
		return gv_xstrdup("bool");
	if (json_is_array(v))
		return gv_xstrdup("array");
	if (json_is_object(v))
		return gv_xstrdup("object");
	if ((want == J_I32 || want == J_I64) && json_is_integer(v))
		return gv_xasprintf("number %" JSON_INTEGER_FORMAT, json_integer_value(v));
	if ((want == J_I32 || want == J_I64) && json_is_real(v)) {
		/* The shortest text that reads back as the same float64, as Go prints it. */
		char buf[40];
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, json_real_value(v));
			if (strtod(buf, NULL) == json_real_value(v))
				break;
		}
		return gv_xasprintf("number %s", buf);
	}
	return gv_xstrdup("number");
}

static bool scalar_ok(const json_t *v, enum jty t)
{
	json_int_t i;

	switch (t) {
	case J_BOOL:
		return json_is_boolean(v);
	case J_STR:
		return json_is_string(v);
	case J_I32:
		return int_value(v, &i) && i >= INT32_MIN && i <= INT32_MAX;
	case J_I64:
		return int_value(v, &i);
	default:
		return false;
	}
}

/* A field's path, from the root down: formatted only when an error names it. */
struct fpath {
	const struct fpath *up; /* NULL: the root, whose name is the path so far */
	const char *name;
};

static void fpath_put(struct gv_buf *b, const struct fpath *fp)
{
	if (fp->up) {
		fpath_put(b, fp->up);
		gv_buf_addc(b, '.');
	}
	gv_buf_adds(b, fp->name);
}

static void type_error(struct gv_buf *msg, const json_t *v, enum jty want, const char *st,
		       const struct fpath *path, const char *type)
{
	char *val = go_value(v, want);
	gv_buf_addf(msg, "json: cannot unmarshal %s into Go struct field %s.", val, st);
	fpath_put(msg, path);
	gv_buf_addf(msg, " of type %s", type);
	free(val);
}

/* Checks o (an object) against sc; the first mismatch goes to msg. False when one was found. */
static bool decode_check(const json_t *o, const struct schema *sc, const struct fpath *path,
			 struct gv_buf *msg)
{
	for (const struct fschema *f = sc->f; f->name; f++) {
		const json_t *v = json_object_get(o, f->name);
		struct fpath at = {path, f->name}, *fp = &at;
		bool ok = true;
		size_t i;
		json_t *e;
		const char *k;

		if (!v || json_is_null(v))
			continue;
		switch (f->ty) {
		case J_BOOL:
		case J_STR:
		case J_I32:
		case J_I64:
			if (!scalar_ok(v, f->ty)) {
				type_error(msg, v, f->ty, sc->gostruct, fp, f->gotype);
				ok = false;
			}
			break;
		case J_OBJ:
			if (!json_is_object(v)) {
				type_error(msg, v, f->ty, sc->gostruct, fp, f->gotype);
				ok = false;
			} else {
				ok = decode_check(v, f->sub, fp, msg);
			}
			break;
		case J_OBJ_LIST:
		case J_STR_LIST:
			if (!json_is_array(v)) {
				type_error(msg, v, f->ty, sc->gostruct, fp, f->gotype);
				ok = false;
				break;
			}
			json_array_foreach(v, i, e)
			{
				if (json_is_null(e))
					continue;
				if (f->ty == J_STR_LIST ? !json_is_string(e) : !json_is_object(e)) {
					type_error(msg, e, J_OBJ, sc->gostruct, fp, f->elemtype);
					ok = false;
				} else if (f->ty == J_OBJ_LIST) {
					ok = decode_check(e, f->sub, fp, msg);
				}
				if (!ok)
					break;
			}
			break;
		case J_STR_MAP:
			if (!json_is_object(v)) {
				type_error(msg, v, f->ty, sc->gostruct, fp, f->gotype);
				ok = false;
				break;
			}
			json_object_foreach((json_t *)v, k, e)
			{
				if (!json_is_null(e) && !json_is_string(e)) {
					type_error(msg, e, J_STR, sc->gostruct, fp, f->elemtype);
					ok = false;
					break;
				}
			}
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* ---- pod extraction (section 2 step 3) ---- */

static const char *const pod_controllers[] = {
    "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "ReplicationController", NULL};

/* One step into an object; a non-object, non-null value is a decoding error. */
static const json_t *step(const json_t *o, const char *k, const char *st, const char *path,
			  const char *type, struct gv_buf *msg)
{
	const json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v) || !o)
		return NULL;
	if (!json_is_object(v)) {
		type_error(msg, v, J_OBJ, st, &(struct fpath){NULL, path}, type);
		return NULL;
	}
	return v;
}

/*
 * Finds the pod of object by kind. Returns false with msg set when the kind
 * has no pod or a field is mistyped; *spec_path and *meta_path name the
 * fields for decoding errors.
 */
static bool extract_pod(const json_t *object, const char *kind, struct pod *p, bool decoded,
			struct gv_buf *msg)
{
	const json_t *spec, *tmpl, *jt, *jspec;
	const char *sp, *mp;

	memset(p, 0, sizeof(*p));
	if (!strcmp(kind, "Pod")) {
		p->spec = step(object, "spec", "Pod", "spec", "v1.PodSpec", msg);
		p->meta = step(object, "metadata", "Pod", "metadata", "v1.ObjectMeta", msg);
		sp = "spec";
		mp = "metadata";
	} else if (in_list(pod_controllers, kind)) {
		char *spec_type = gv_xasprintf("v1.%sSpec", kind);
		spec = step(object, "spec", kind, "spec", spec_type, msg);
		tmpl = step(spec, "template", spec_type + 3, "spec.template", "v1.PodTemplateSpec",
			    msg);
		free(spec_type);
		p->spec =
		    step(tmpl, "spec", "PodTemplateSpec", "spec.template.spec", "v1.PodSpec", msg);
		p->meta = step(tmpl, "metadata", "PodTemplateSpec", "spec.template.metadata",
			       "v1.ObjectMeta", msg);
		sp = "spec.template.spec";
		mp = "spec.template.metadata";
	} else if (!strcmp(kind, "CronJob")) {
		spec = step(object, "spec", "CronJob", "spec", "v1.CronJobSpec", msg);
		jt = step(spec, "jobTemplate", "CronJobSpec", "spec.jobTemplate",
			  "v1.JobTemplateSpec", msg);
		jspec =
		    step(jt, "spec", "JobTemplateSpec", "spec.jobTemplate.spec", "v1.JobSpec", msg);
		tmpl = step(jspec, "template", "JobSpec", "spec.jobTemplate.spec.template",
			    "v1.PodTemplateSpec", msg);
		p->spec = step(tmpl, "spec", "PodTemplateSpec",
			       "spec.jobTemplate.spec.template.spec", "v1.PodSpec", msg);
		/* The job template's metadata, not the pod template's (section 2). */
		p->meta = step(jt, "metadata", "JobTemplateSpec", "spec.jobTemplate.metadata",
			       "v1.ObjectMeta", msg);
		sp = "spec.jobTemplate.spec.template.spec";
		mp = "spec.jobTemplate.metadata";
	} else {
		gv_buf_adds(msg, "could not find correct resource type");
		return false;
	}
	if (msg->len)
		return false;
	if (decoded)
		return true;
	if (p->spec && !decode_check(p->spec, &s_podspec, &(struct fpath){NULL, sp}, msg))
		return false;
	if (p->meta && !decode_check(p->meta, &s_meta, &(struct fpath){NULL, mp}, msg))
		return false;
	return true;
}

/* ---- running the checks (section 3.1) ---- */

static void checks_release(struct pss_checks *c)
{
	for (int i = 0; i < PSS_NCHECKS; i++)
		cres_release(&c->c[i]);
}

/* dst = a deep copy of the checks of src that the level runs (baseline: the baseline ones). */
static void checks_copy(struct pss_checks *dst, const struct pss_checks *src, bool baseline)
{
	memset(dst, 0, sizeof(*dst));
	for (int i = 0; i < PSS_NCHECKS; i++) {
		const struct cres *a = &src->c[i];
		struct cres *b = &dst->c[i];

		if (baseline && checks[i].level == RESTRICTED)
			continue;
		b->failed = a->failed;
		b->reason = a->reason;
		if (!a->n)
			continue;
		b->e = gv_xcalloc(a->n, sizeof(*b->e));
		b->n = b->cap = a->n;
		for (size_t k = 0; k < a->n; k++) {
			b->e[k].field = gv_xstrdup(a->e[k].field);
			b->e[k].required = a->e[k].required;
			b->e[k].value = json_incref(a->e[k].value);
		}
	}
}

/* What one run of the checks over p costs: a step per container, volume, annotation. */
static unsigned long pod_cost(const struct pod *p)
{
	unsigned long n =
	    1 + json_array_size(json_object_get(p->spec, "volumes")) +
	    json_object_size(obj(p->meta, "annotations")) +
	    json_array_size(json_object_get(obj(p->spec, "securityContext"), "sysctls"));
	for (size_t l = 0; l < GV_ARRAY_LEN(container_lists); l++)
		n += json_array_size(json_object_get(p->spec, container_lists[l]));
	return n;
}

/*
 * Runs the checks of the level (baseline: the baseline ones; any other
 * level: all) on p, only those of control `control` when it is >= 0.
 * False when the budget ran out.
 */
static bool run_checks(const struct pod *p, bool baseline, unsigned minor, int control,
		       struct pss_checks *out, struct jp_budget *b)
{
	unsigned long cost = pod_cost(p);

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < PSS_NCHECKS; i++) {
		const struct pss_check *c = &checks[i];
		if (baseline && c->level == RESTRICTED)
			continue;
		if (control >= 0 && c->control != control)
			continue;
		if (!budget_charge(b, cost))
			return false;
		out->c[i].reason = c->reason;
		c->fn(p, check_version(c, minor), &out->c[i]);
	}
	return true;
}

/*
 * run_checks(p, baseline, minor, -1, out, b) through memo (may be NULL):
 * the checks of a level ran on the object once are copied, and the budget
 * is charged as if they ran again. A restricted run serves a baseline one
 * of the same version.
 */
static bool run_checks_memo(struct pss_memo *memo, const struct pod *p, bool baseline,
			    unsigned minor, struct pss_checks *out, struct jp_budget *b)
{
	struct pss_memo_entry *hit = NULL;

	for (size_t i = 0; memo && i < memo->n && !hit; i++)
		if (memo->v[i].minor == minor && (baseline || !memo->v[i].baseline))
			hit = &memo->v[i];
	if (hit) {
		unsigned long cost = pod_cost(p);

		for (int i = 0; i < PSS_NCHECKS; i++)
			if (!(baseline && checks[i].level == RESTRICTED) && !budget_charge(b, cost))
				return false;
		checks_copy(out, hit->d, baseline);
		return true;
	}
	if (!run_checks(p, baseline, minor, -1, out, b))
		return false;
	if (memo && memo->n < GV_ARRAY_LEN(memo->v)) {
		struct pss_memo_entry *e = &memo->v[memo->n++];

		e->baseline = baseline;
		e->minor = minor;
		e->d = gv_xmalloc(sizeof(*e->d));
		checks_copy(e->d, out, false);
	}
	return true;
}

void pss_memo_release(struct pss_memo *memo)
{
	for (size_t i = 0; i < memo->n; i++) {
		checks_release(memo->v[i].d);
		free(memo->v[i].d);
	}
	memset(memo, 0, sizeof(*memo));
}

/* ---- exclusions (section 5) ---- */

/* wild(f): every run of digits becomes '*'. */
static char *wild(const char *f)
{
	struct gv_buf b = {0};
	for (const char *s = f; *s; s++) {
		if (isdigit((unsigned char)*s)) {
			while (isdigit((unsigned char)s[1]))
				s++;
			gv_buf_addc(&b, '*');
		} else {
			gv_buf_addc(&b, *s);
		}
	}
	return gv_buf_detach(&b);
}

/*
 * The container a field path points at in pod p: its second alphabetic token
 * must be a container list; the index is the first number in the path.
 * Returns the container's name ("" when it has none), or NULL when the path
 * is not a container's.
 */
static const char *field_container(const struct pod *p, const char *field, bool *is_container)
{
	const char *s = field, *list = NULL;
	size_t list_len = 0, idx = 0;
	int token = 0;

	*is_container = false;
	while (*s) {
		if (isalpha((unsigned char)*s)) {
			const char *t = s;
			while (isalpha((unsigned char)*s))
				s++;
			if (++token == 2) {
				list = t;
				list_len = (size_t)(s - t);
				break;
			}
		} else {
			s++;
		}
	}
	if (!list)
		return NULL;
	for (size_t l = 0; l < GV_ARRAY_LEN(container_lists); l++) {
		if (strlen(container_lists[l]) != list_len ||
		    strncmp(container_lists[l], list, list_len))
			continue;
		*is_container = true;
		for (s = field; *s && !isdigit((unsigned char)*s); s++)
			;
		if (!*s)
			return NULL;
		while (isdigit((unsigned char)*s) && idx < ((size_t)1 << 40))
			idx = idx * 10 + (size_t)(*s++ - '0');
		/* a container without a name has the name "" */
		return str(json_array_get(json_object_get(p->spec, container_lists[l]), idx),
			   "name");
	}
	return NULL;
}

/* Whether every bad value of e matches some pattern of x->values (section 5 step 2). */
static bool values_match(const struct pss_exclusion *x, const struct ferr *e)
{
	json_t *vals = json_array();
	bool ok = true;
	size_t i;
	json_t *v;

	if (json_is_string(e->value) && *json_string_value(e->value))
		json_array_append(vals, e->value);
	else if (json_is_boolean(e->value))
		json_array_append_new(vals, json_string(json_is_true(e->value) ? "true" : "false"));
	else if (json_is_integer(e->value))
		json_array_append_new(
		    vals, json_sprintf("%" JSON_INTEGER_FORMAT, json_integer_value(e->value)));
	else if (json_is_array(e->value))
		json_array_foreach(e->value, i, v) if (json_is_string(v))
		    json_array_append(vals, v);
	json_array_foreach(vals, i, v)
	{
		bool any = false;
		for (size_t k = 0; k < x->nvalues && !any; k++)
			any = value_wildcard(x->values[k], json_string_value(v));
		if (!any) {
			ok = false;
			break;
		}
	}
	json_decref(vals);
	return ok;
}

static bool image_matches(const struct pss_exclusion *x, const json_t *c)
{
	const char *image = str(c, "image");
	for (size_t i = 0; i < x->nimages; i++)
		if (value_wildcard(x->images[i], image))
			return true;
	return false;
}

/*
 * The probe pod of an exclusion entry (section 5 step 1): pod-level, a copy
 * of the pod with one container {name: fake}; container-level, the
 * containers whose image matches, nothing else. *spec and *meta are new
 * references (meta may be NULL).
 */
static void probe_pod(const struct pss_exclusion *x, const struct pod *real, json_t **spec,
		      json_t **meta)
{
	if (!x->nimages) {
		*spec =
		    json_is_object(real->spec) ? json_copy((json_t *)real->spec) : json_object();
		json_object_set_new(*spec, "containers", json_pack("[{s:s}]", "name", "fake"));
		json_object_del(*spec, "initContainers");
		json_object_del(*spec, "ephemeralContainers");
		*meta = real->meta ? json_incref((json_t *)real->meta) : NULL;
		return;
	}
	*spec = json_object();
	*meta = NULL;
	for (size_t l = 0; l < GV_ARRAY_LEN(container_lists); l++) {
		const json_t *arr = json_object_get(real->spec, container_lists[l]);
		json_t *keep = json_array();
		size_t i;
		json_t *c;
		json_array_foreach(arr, i, c) if (image_matches(x, c)) json_array_append(keep, c);
		if (json_array_size(keep))
			json_object_set_new(*spec, container_lists[l], keep);
		else
			json_decref(keep);
	}
}

/* Removes error i of r the way Go's swap-delete does (the last error takes its slot). */
static void remove_err(struct cres *r, size_t i)
{
	free(r->e[i].field);
	json_decref(r->e[i].value);
	r->e[i] = r->e[r->n - 1];
	r->n--;
	if (!r->n)
		r->failed = false;
}

/* Applies one exclusion entry to the failing checks d of the real pod. False: budget out. */
static bool apply_exclusion(const struct pss_exclusion *x, const struct pod *real, bool baseline,
			    unsigned minor, struct pss_checks *d, struct jp_budget *b)
{
	struct pss_checks probe;
	struct pod pp;
	json_t *spec, *meta;
	bool ok;

	probe_pod(x, real, &spec, &meta);
	pp.spec = spec;
	pp.meta = meta;
	ok = run_checks(&pp, baseline, minor, x->control, &probe, b);
	for (int ci = 0; ok && ci < PSS_NCHECKS; ci++) {
		struct cres *dc = &d->c[ci];
		for (size_t k = 0; ok && k < probe.c[ci].n && dc->failed; k++) {
			const struct ferr *e = &probe.c[ci].e[k];
			char *xf = wild(e->field);
			bool in_container = false;
			const char *name = NULL;

			if (x->nimages)
				name = field_container(&pp, e->field, &in_container);
			if ((x->restricted_field && strcmp(x->restricted_field, xf)) ||
			    (x->nvalues && !values_match(x, e))) {
				free(xf);
				continue;
			}
			if (!budget_charge(b, dc->n + 1))
				ok = false;
			for (size_t j = 0; ok && j < dc->n; j++) {
				char *df = wild(dc->e[j].field);
				bool same = !strcmp(df, xf);
				free(df);
				if (same && in_container) {
					bool dummy;
					const char *dn =
					    field_container(real, dc->e[j].field, &dummy);
					same = dn && name && !strcmp(dn, name);
				}
				if (same) {
					remove_err(dc, j);
					break;
				}
			}
			free(xf);
		}
	}
	checks_release(&probe);
	json_decref(spec);
	json_decref(meta);
	return ok;
}

static bool any_failed(const struct pss_checks *d)
{
	for (int i = 0; i < PSS_NCHECKS; i++)
		if (d->c[i].failed)
			return true;
	return false;
}

/* ---- the message (section 4.1) ---- */

/* Go's %+v of a bad value. */
static void add_value(struct gv_buf *b, const json_t *v)
{
	size_t i;
	json_t *e;

	if (json_is_string(v)) {
		gv_buf_adds(b, json_string_value(v));
	} else if (json_is_boolean(v)) {
		gv_buf_adds(b, json_is_true(v) ? "true" : "false");
	} else if (json_is_integer(v)) {
		gv_buf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_array(v)) {
		gv_buf_addc(b, '[');
		json_array_foreach(v, i, e)
		{
			if (i)
				gv_buf_addc(b, ' ');
			gv_buf_adds(b, sval(e));
		}
		gv_buf_addc(b, ']');
	}
}

/* A field path as reported for kind (section 4.1: plain substring rewrites). */
static char *report_field(const char *field, const char *kind)
{
	char *a, *r;

	if (in_list(pod_controllers, kind))
		a = gv_str_replace_all(field, "spec", "spec.template.spec");
	else if (!strcmp(kind, "CronJob"))
		a = gv_str_replace_all(field, "spec", "spec.jobTemplate.spec.template.spec");
	else
		a = gv_xstrdup(field);
	r = gv_str_replace_all(a, "metadata", "spec.template.metadata");
	free(a);
	return r;
}

static char *fail_message(const struct pss_spec *s, const char *rule, const char *kind,
			  const struct pss_checks *d)
{
	struct gv_buf b = {0};

	gv_buf_adds(&b, "Validation rule '");
	gv_buf_adds(&b, rule);
	gv_buf_adds(&b, "' failed. It violates PodSecurity \"");
	gv_buf_adds(&b, s->level);
	gv_buf_addc(&b, ':');
	gv_buf_adds(&b, s->version);
	gv_buf_adds(&b, "\": ");
	for (int i = 0; i < PSS_NCHECKS; i++) {
		const struct cres *c = &d->c[i];
		if (!c->failed)
			continue;
		gv_buf_adds(&b, "(Forbidden reason: ");
		gv_buf_adds(&b, c->reason);
		gv_buf_adds(&b, ", field error list: [");
		for (size_t k = 0; k < c->n; k++) {
			const struct ferr *e = &c->e[k];
			char *f = report_field(e->field, kind);
			if (k)
				gv_buf_adds(&b, ", ");
			gv_buf_adds(&b, f);
			if (e->required)
				gv_buf_adds(&b, ": Required value");
			else if (!e->value ||
				 (json_is_string(e->value) && !*json_string_value(e->value)))
				gv_buf_adds(&b, ": Forbidden");
			else {
				gv_buf_adds(&b, " is forbidden, forbidden values found: ");
				add_value(&b, e->value);
			}
			free(f);
		}
		gv_buf_adds(&b, "])");
	}
	return gv_buf_detach(&b);
}

/* ---- report properties (section 4.2) ---- */

/* The container a pod-form field path starts with (spec.<list>[i]), if any. */
static bool err_container(const char *field, size_t *list, size_t *idx)
{
	if (strncmp(field, "spec.", 5))
		return false;
	for (size_t l = 0; l < GV_ARRAY_LEN(container_lists); l++) {
		size_t n = strlen(container_lists[l]);
		const char *s = field + 5 + n;
		if (strncmp(field + 5, container_lists[l], n) || *s != '[' ||
		    !isdigit((unsigned char)s[1]))
			continue;
		*list = l;
		*idx = 0;
		for (s++; isdigit((unsigned char)*s) && *idx < ((size_t)1 << 40); s++)
			*idx = *idx * 10 + (size_t)(*s - '0');
		return true;
	}
	return false;
}

/* Upstream's `container "a"` / `containers "a", "b"` (pluralize + joinQuote). */
struct names {
	struct gv_buf q; /* "a", "b" */
	size_t n;
	size_t list, idx; /* the last container added */
};

static void names_add(struct names *s, const struct pod *p, size_t list, size_t idx)
{
	if (s->n && s->list == list && s->idx == idx)
		return;
	if (s->n)
		gv_buf_adds(&s->q, ", ");
	gv_buf_addc(&s->q, '"');
	gv_buf_adds(&s->q, str(json_array_get(json_object_get(p->spec, container_lists[list]), idx),
			       "name"));
	gv_buf_addc(&s->q, '"');
	s->n++;
	s->list = list;
	s->idx = idx;
}

static void names_put(struct gv_buf *b, const struct names *s)
{
	gv_buf_adds(b, s->n == 1 ? "container " : "containers ");
	gv_buf_adds(b, gv_buf_str(&s->q));
}

/* `pod and containers "a"`: the setters of upstream's "<setters> must not set ...". */
static void setters_put(struct gv_buf *b, bool pod, const struct names *s, bool annotations)
{
	const char *sep = "";
	if (pod) {
		gv_buf_adds(b, "pod");
		sep = " and ";
	}
	if (s->n) {
		gv_buf_adds(b, sep);
		names_put(b, s);
		sep = " and ";
	}
	if (annotations) {
		gv_buf_adds(b, sep);
		gv_buf_adds(b, "annotations");
	}
}

/*
 * The part of check ci's ForbiddenDetail [PSA: policy/check_*.go] that the
 * Images regex can reach (its setters up to "must"), rebuilt from the
 * check's field errors on the real pod c; NULL for checks whose detail
 * names no containers (section 3.3).
 */
static char *forbidden_detail(int ci, const struct pod *p, const struct cres *c)
{
	struct names all = {0}, f = {0}, r = {0};
	struct gv_buf b = {0};
	bool pod = false, ann = false;

	for (size_t k = 0; k < c->n; k++) {
		const char *field = c->e[k].field;
		size_t l, i;
		if (!strncmp(field, "metadata.", 9)) {
			ann = true;
		} else if (err_container(field, &l, &i)) {
			/* capabilities_restricted: drop (f), then add (r) */
			bool second = ci == CHK_CAPS_RESTRICTED
					  ? strstr(field, ".capabilities.add") != NULL
					  : c->e[k].required;
			names_add(&all, p, l, i);
			names_add(second ? &r : &f, p, l, i);
		} else {
			pod = true;
		}
	}
	switch (ci) {
	case CHK_ALLOW_PRIVILEGE_ESCALATION:
	case CHK_CAPS_BASELINE:
	case CHK_PRIVILEGED:
	case CHK_PROCMOUNT:
		if (all.n) {
			names_put(&b, &all);
			gv_buf_adds(&b, " must");
		}
		break;
	case CHK_HOST_PORTS:
		if (all.n) {
			names_put(&b, &all);
			gv_buf_adds(&b, all.n == 1 ? " uses hostPort" : " use hostPort");
		}
		break;
	case CHK_APPARMOR:
	case CHK_RUN_AS_USER:
	case CHK_WINDOWS_HOST_PROCESS:
	case CHK_SECCOMP_BASELINE:
	case CHK_SELINUX:
		/* seccompProfile_baseline before 1.19 names annotations only */
		setters_put(&b, pod, &all, ci == CHK_APPARMOR && ann);
		if (b.len)
			gv_buf_adds(&b, ci == CHK_SELINUX ? " set forbidden" : " must not set");
		break;
	case CHK_CAPS_RESTRICTED:
		if (f.n) {
			names_put(&b, &f);
			gv_buf_adds(&b, " must set securityContext.capabilities.drop");
		}
		if (r.n) {
			gv_buf_adds(&b, b.len ? "; " : "");
			names_put(&b, &r);
			gv_buf_adds(&b, " must not include");
		}
		break;
	case CHK_RUN_AS_NON_ROOT:
	case CHK_SECCOMP_RESTRICTED:
		/* explicit bad values first; else the containers that set nothing */
		if (pod || f.n) {
			setters_put(&b, pod, &f, false);
			gv_buf_adds(&b, " must not set");
		} else if (r.n) {
			gv_buf_adds(&b, "pod or ");
			names_put(&b, &r);
			gv_buf_adds(&b, " must set");
		}
		break;
	default:
		break;
	}
	gv_buf_release(&all.q);
	gv_buf_release(&f.q);
	gv_buf_release(&r.q);
	return b.len ? gv_buf_detach(&b) : NULL;
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\f' || ch == '\r' || ch == '\v';
}

/*
 * Go's regexp `container(?:s)?\s*(.*?)\s*must` on d: the capture of the
 * leftmost match (new string), or NULL. `.` does not cross a newline.
 */
static char *container_capture(const char *d)
{
	for (const char *at = strstr(d, "container"); at; at = strstr(at + 1, "container")) {
		const char *k = at + 9;
		if (*k == 's')
			k++;
		while (is_space(*k))
			k++;
		for (const char *m = k; *m; m++) {
			const char *w = m;
			while (is_space(*w))
				w++;
			if (!strncmp(w, "must", 4))
				return gv_xstrndup(k, (size_t)(m - k));
			if (*m == '\n')
				break;
		}
	}
	return NULL;
}

/*
 * The normalised image reference of container `name` (new string), as the
 * `images` variable's "reference" (images_extract: containers, then
 * initContainers, then ephemeralContainers; in a list the last container
 * of that name with an image), or NULL when none has one.
 */
static char *container_image_uncached(const struct pod *p, const char *name)
{
	static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
	for (size_t l = 0; l < GV_ARRAY_LEN(lists); l++) {
		const json_t *arr = json_object_get(p->spec, lists[l]), *c;
		const char *image = NULL;
		size_t i;

		json_array_foreach(arr, i, c)
		{
			const char *n = json_string_value(json_object_get(c, "name"));
			const char *im = json_string_value(json_object_get(c, "image"));
			if (n && im && !strcmp(n, name))
				image = im;
		}
		if (image)
			return image_reference(image);
	}
	return NULL;
}

/* The references found so far by one fail_properties() call: name -> reference. */
struct refs {
	char **names, **refs; /* owned; refs[i] NULL when the container has no image */
	size_t n;
};

static void refs_release(struct refs *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->names[i]);
		free(c->refs[i]);
	}
	free(c->names);
	free(c->refs);
}

/* container_image_uncached(p, name) through c (borrowed result, or NULL). */
static const char *container_image(const struct pod *p, const char *name, struct refs *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], name))
			return c->refs[i];
	c->names = gv_xrealloc(c->names, (c->n + 1) * sizeof(*c->names));
	c->refs = gv_xrealloc(c->refs, (c->n + 1) * sizeof(*c->refs));
	c->names[c->n] = gv_xstrdup(name);
	c->refs[c->n] = container_image_uncached(p, name);
	return c->refs[c->n++];
}

/* Appends s as a JSON string, escaped as Go's encoding/json. */
static void json_str(struct gv_buf *b, const char *s)
{
	const char *c = s;
	json_t *j;

	/* printable ASCII that needs no escape (Go's HTML escapes included): as it is */
	while (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\' && *c != '<' && *c != '>' &&
	       *c != '&')
		c++;
	if (!*c) {
		gv_buf_addc(b, '"');
		gv_buf_add(b, s, (size_t)(c - s));
		gv_buf_addc(b, '"');
		return;
	}
	j = json_string(s);
	if (!j) /* cannot happen: s comes from parsed JSON, only ASCII was cut out */
		j = json_string("\xef\xbf\xbd");
	jp_dump(j, b, JP_DUMP_HTML_ESCAPE);
	json_decref(j);
}

/* Appends Kyverno's Images of one check (addImages): a JSON list, or null. */
static void images_put(struct gv_buf *b, const char *detail, const struct pod *p, struct refs *refs)
{
	char *cap = detail ? container_capture(detail) : NULL;
	char *names, *w;
	const char *s;

	if (!cap) {
		gv_buf_adds(b, "null");
		return;
	}
	names = gv_xmalloc(strlen(cap) + 1);
	w = names;
	for (s = cap; *s; s++)
		if (*s != '"' && *s != ' ')
			*w++ = *s;
	*w = '\0';
	gv_buf_addc(b, '[');
	for (s = names;;) {
		const char *comma = strchr(s, ',');
		char *name = comma ? gv_xstrndup(s, (size_t)(comma - s)) : gv_xstrdup(s);
		const char *ref = container_image(p, name, refs);
		if (s != names)
			gv_buf_addc(b, ',');
		json_str(b, ref ? ref : name);
		free(name);
		if (!comma)
			break;
		s = comma + 1;
	}
	gv_buf_addc(b, ']');
	free(names);
	free(cap);
}

/* The podSecurity properties of a fail (section 4.2); new reference. */
static json_t *fail_properties(const struct pss_spec *s, const struct pod *p,
			       const struct pss_checks *d, char *const *details)
{
	json_t *props = json_object();
	struct gv_buf ids = {0}, js = {0};
	struct refs refs = {0};

	gv_buf_addc(&js, '[');
	for (int i = 0; i < PSS_NCHECKS; i++) {
		const char *ctl = pss_check_control(i);
		if (!d->c[i].failed)
			continue;
		if (ids.len) {
			gv_buf_addc(&ids, ',');
			gv_buf_addc(&js, ',');
		}
		gv_buf_adds(&ids, pss_check_id(i));
		gv_buf_adds(&js, "{\"ID\":");
		json_str(&js, pss_check_id(i));
		gv_buf_adds(&js, ",\"Name\":");
		json_str(&js, ctl ? ctl : "");
		gv_buf_adds(&js, ",\"Images\":");
		images_put(&js, details[i], p, &refs);
		gv_buf_addc(&js, '}');
	}
	gv_buf_addc(&js, ']');
	json_object_set_new(props, "standard", json_string(s->level));
	json_object_set_new(props, "version", json_string(s->version));
	json_object_set_new(props, "controls", json_string(gv_buf_str(&ids)));
	json_object_set_new(props, "controlsJSON", json_string(gv_buf_str(&js)));
	gv_buf_release(&ids);
	gv_buf_release(&js);
	refs_release(&refs);
	return props;
}

/* ---- evaluation (section 2) ---- */

enum pss_outcome pss_evaluate(const struct pss_spec *s, const char *rule, const json_t *object,
			      const struct pss_exclusion_list *exc, size_t nexc,
			      struct jp_budget *budget, struct pss_memo *memo, char **message,
			      json_t **properties)
{
	const char *kind = str(object, "kind");
	struct gv_buf msg = {0};
	struct pss_checks d;
	struct pod p;
	enum pss_outcome out;
	char *details[PSS_NCHECKS] = {0};

	*message = NULL;
	if (properties)
		*properties = NULL;
	if (memo && memo->object != object) {
		pss_memo_release(memo);
		memo->object = object;
	}
	if (!extract_pod(object, kind, &p, memo && memo->decoded, &msg)) {
		*message = gv_xasprintf("Error while getting new resource: %s", gv_buf_str(&msg));
		gv_buf_release(&msg);
		return PSS_ERROR;
	}
	gv_buf_release(&msg);
	if (memo)
		memo->decoded = true;
	if (!run_checks_memo(memo, &p, s->baseline, s->minor, &d, budget))
		goto budget;
	/* Images come from the details of the checks before exclusions (section 4.2). */
	for (int i = 0; properties && i < PSS_NCHECKS; i++)
		if (d.c[i].failed)
			details[i] = forbidden_detail(i, &p, &d.c[i]);
	for (size_t i = 0; i < s->nexclude; i++)
		if (!apply_exclusion(&s->exclude[i], &p, s->baseline, s->minor, &d, budget))
			goto budget;
	if (!any_failed(&d)) {
		*message = gv_xasprintf("Validation rule '%s' passed.", rule);
		out = PSS_PASS;
		goto done;
	}
	if (nexc) {
		for (size_t i = 0; i < nexc; i++)
			for (size_t k = 0; k < exc[i].n; k++)
				if (!apply_exclusion(&exc[i].v[k], &p, s->baseline, s->minor, &d,
						     budget))
					goto budget;
		if (!any_failed(&d)) {
			out = PSS_EXCEPTED;
			goto done;
		}
	}
	*message = fail_message(s, rule, kind, &d);
	if (properties)
		*properties = fail_properties(s, &p, &d, details);
	out = PSS_FAIL;
	goto done;
budget:
	*message = gv_xasprintf(RULE_BUDGET_MSG, RULE_MAX_STEPS);
	out = PSS_ERROR;
done:
	checks_release(&d);
	for (int i = 0; i < PSS_NCHECKS; i++)
		free(details[i]);
	return out;
}

/* ---- compiling (sections 1, 1.1, 6) ---- */

void pss_exclusions_free(struct pss_exclusion *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < x[i].nimages; k++)
			free(x[i].images[k]);
		free(x[i].images);
		for (size_t k = 0; k < x[i].nvalues; k++)
			free(x[i].values[k]);
		free(x[i].values);
		free(x[i].restricted_field);
	}
	free(x);
}

/* A list of strings at o[k] (absent: none). */
static enum gv_code string_list(const json_t *o, const char *k, char ***out, size_t *n,
				struct gv_buf *ptr, struct gv_err *err)
{
	const json_t *arr = json_object_get(o, k);
	size_t base = ptr->len, i;
	json_t *v;

	*out = NULL;
	*n = 0;
	if (!arr || json_is_null(arr))
		return GV_OK;
	gv_pointer_add(ptr, k);
	if (!json_is_array(arr)) {
		gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "%s must be a list of strings", k);
		ptr->len = base;
		ptr->data[base] = '\0';
		return GV_EINVAL;
	}
	*out = gv_xcalloc(json_array_size(arr) + 1, sizeof(**out));
	json_array_foreach(arr, i, v)
	{
		if (!json_is_string(v)) {
			char idx[24];
			snprintf(idx, sizeof(idx), "%zu", i);
			gv_pointer_add(ptr, idx);
			gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "%s must be a list of strings",
				    k);
			ptr->len = base;
			ptr->data[base] = '\0';
			return GV_EINVAL;
		}
		(*out)[(*n)++] = gv_xstrdup(json_string_value(v));
	}
	ptr->len = base;
	ptr->data[base] = '\0';
	return GV_OK;
}

static enum gv_code entry_error(struct gv_buf *ptr, const char *field, struct gv_err *err,
				const char *msg)
{
	size_t base = ptr->len;
	gv_pointer_add(ptr, field);
	gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "%s", msg);
	ptr->len = base;
	ptr->data[base] = '\0';
	return GV_EINVAL;
}

static enum gv_code exclusion_compile(const json_t *e, bool level_baseline, struct pss_exclusion *x,
				      struct gv_buf *ptr, struct gv_err *err)
{
	const char *name = json_string_value(json_object_get(e, "controlName"));
	const json_t *rf = json_object_get(e, "restrictedField");
	const struct pss_control *c = NULL;
	enum gv_code rc;

	x->control = -1;
	if (!json_is_object(e))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "exclude entry must be an object");
	if (!name || !*name)
		return entry_error(ptr, "controlName", err, "controlName is required");
	for (size_t i = 0; i < GV_ARRAY_LEN(controls); i++)
		if (!strcmp(controls[i].name, name))
			x->control = (int)i;
	if (x->control < 0) {
		struct gv_buf m = {0};
		gv_buf_addf(&m, "Unsupported value: \"%s\": supported values: ", name);
		for (size_t i = 0; i < GV_ARRAY_LEN(controls); i++)
			gv_buf_addf(&m, "%s\"%s\"", i ? ", " : "", controls[i].name);
		rc = entry_error(ptr, "controlName", err, gv_buf_str(&m));
		gv_buf_release(&m);
		return rc;
	}
	c = &controls[x->control];
	if (rf && !json_is_null(rf) && !json_is_string(rf))
		return entry_error(ptr, "restrictedField", err, "restrictedField must be a string");
	if (json_is_string(rf) && *json_string_value(rf))
		x->restricted_field = gv_xstrdup(json_string_value(rf));
	rc = string_list(e, "images", &x->images, &x->nimages, ptr, err);
	if (!rc)
		rc = string_list(e, "values", &x->values, &x->nvalues, ptr, err);
	if (rc)
		return rc;
	if (c->scope == SCOPE_CONTAINER && !x->nimages)
		return entry_error(
		    ptr, "images", err,
		    "exclude.images must be specified for the container level control");
	if (c->scope == SCOPE_POD && x->nimages)
		return entry_error(
		    ptr, "images", err,
		    "exclude.images must not be specified for the pod level control");
	if (x->restricted_field && !x->nvalues)
		return entry_error(ptr, "values", err, "values is required");
	if (!x->restricted_field && x->nvalues)
		return entry_error(ptr, "restrictedField", err, "restrictedField is required");
	if (level_baseline && !c->baseline_ok)
		return entry_error(ptr, "controlName", err,
				   "Invalid control name defined at the given level");
	return GV_OK;
}

enum gv_code pss_exclusions_compile(const json_t *arr, bool level_baseline,
				    struct pss_exclusion **out, size_t *n, struct gv_buf *ptr,
				    struct gv_err *err)
{
	size_t i, base = ptr->len;
	json_t *e;
	enum gv_code rc = GV_OK;

	*out = NULL;
	*n = 0;
	if (!arr || json_is_null(arr))
		return GV_OK;
	if (!json_is_array(arr))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "must be a list");
	*out = gv_xcalloc(json_array_size(arr) + 1, sizeof(**out));
	json_array_foreach(arr, i, e)
	{
		char idx[24];
		snprintf(idx, sizeof(idx), "%zu", i);
		gv_pointer_add(ptr, idx);
		(*n)++;
		rc = exclusion_compile(e, level_baseline, &(*out)[i], ptr, err);
		ptr->len = base;
		ptr->data[base] = '\0';
		if (rc)
			break;
	}
	if (rc) {
		pss_exclusions_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void pss_spec_release(struct pss_spec *s)
{
	free(s->level);
	free(s->version);
	pss_exclusions_free(s->exclude, s->nexclude);
	memset(s, 0, sizeof(*s));
}

/* Parses v1.<minor> within the CRD enum (v1.19 .. v1.32). */
static bool parse_version(const char *v, unsigned *minor)
{
	unsigned m = 0;
	const char *s;

	if (strncmp(v, "v1.", 3) || !v[3] || (v[3] == '0' && v[4]))
		return false;
	for (s = v + 3; *s; s++) {
		if (!isdigit((unsigned char)*s) || m > 1000)
			return false;
		m = m * 10 + (unsigned)(*s - '0');
	}
	if (m < PSS_MIN_MINOR || m > PSS_MAX_MINOR)
		return false;
	*minor = m;
	return true;
}

static enum gv_code unsupported(struct gv_buf *ptr, const char *field, const json_t *v,
				const char *supported, struct gv_err *err)
{
	char *shown = json_is_string(v) ? gv_xasprintf("\"%s\"", json_string_value(v))
					: json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	char *m = gv_xasprintf("Unsupported value: %s: supported values: %s",
			       shown ? shown : "null", supported);
	enum gv_code rc = entry_error(ptr, field, err, m);
	free(shown);
	free(m);
	return rc;
}

enum gv_code pss_spec_compile(const json_t *ps, struct pss_spec *s, struct gv_buf *ptr,
			      struct gv_err *err)
{
	static const char *const levels[] = {"privileged", "baseline", "restricted", NULL};
	const json_t *level = json_object_get(ps, "level");
	const json_t *version = json_object_get(ps, "version");
	size_t base = ptr->len;
	enum gv_code rc;

	memset(s, 0, sizeof(*s));
	if (!json_is_object(ps))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "podSecurity must be an object");
	if (!level)
		return entry_error(ptr, "level", err, "podSecurity level is required");
	if (!json_is_string(level) || !in_list(levels, json_string_value(level)))
		return unsupported(ptr, "level", level,
				   "\"privileged\", \"baseline\", \"restricted\"", err);
	s->level = gv_xstrdup(json_string_value(level));
	s->baseline = !strcmp(s->level, "baseline");
	s->minor = PSS_LATEST;
	if (version && !json_is_null(version)) {
		const char *v = json_string_value(version);
		if (!v || (strcmp(v, "latest") && !parse_version(v, &s->minor))) {
			struct gv_buf sup = {0};
			for (unsigned m = PSS_MIN_MINOR; m <= PSS_MAX_MINOR; m++)
				gv_buf_addf(&sup, "\"v1.%u\", ", m);
			gv_buf_adds(&sup, "\"latest\"");
			rc = unsupported(ptr, "version", version, gv_buf_str(&sup), err);
			gv_buf_release(&sup);
			pss_spec_release(s);
			return rc;
		}
	}
	s->version = gv_xstrdup(json_string_value(version) ? json_string_value(version) : "");
	gv_pointer_add(ptr, "exclude");
	rc = pss_exclusions_compile(json_object_get(ps, "exclude"), s->baseline, &s->exclude,
				    &s->nexclude, ptr, err);
	ptr->len = base;
	if (ptr->data)
		ptr->data[base] = '\0';
	if (rc)
		pss_spec_release(s);
	return rc;
}
