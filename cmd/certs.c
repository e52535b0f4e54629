/*
 * certs.c - `gavel certs`: TLS material for the webhook.
 *
 *   gavel certs generate --service NAME --namespace NS [--ip IP]... [--dns NAME]...
 *                        --out DIR [--days N] [--ca-days N] [--force]
 *       Creates (or renews) an ECDSA P-256 CA and a serving certificate for
 *       the Service NAME in NS (DNS SANs NAME, NAME.NS, NAME.NS.svc,
 *       NAME.NS.svc.cluster.local, plus --dns names and --ip addresses) in
 *       DIR: ca.crt, ca.key, tls.crt, tls.key (keys mode 0600). Material
 *       already in DIR is kept while it is valid, matches the names and has
 *       more than a third of its lifetime left; a renewed CA keeps the old
 *       one in ca.crt (inject it again). --force starts over.
 *
 *   gavel certs inject --webhook NAME [--ca-file FILE | --secret NS/NAME]
 *                      [--kubeconfig F]
 *       Writes the CA bundle (FILE, default ./ca.crt, or ca.crt of the Secret)
 *       into clientConfig.caBundle of every webhook of the
 *       ValidatingWebhookConfiguration NAME.
 *
 *   gavel certs secret --service NAME --namespace NS [--name SECRET]
 *                      [--ip IP]... [--dns NAME]... [--out DIR] [--kubeconfig F]
 *       Keeps the CA and serving pair in the Secret NS/SECRET (default
 *       NAME-tls; created when missing, renewed when due) and writes it to
 *       DIR when given.
 *
 *   gavel certs show DIR
 *       Prints the names and expiry of DIR's certificates; exit 1 when one
 *       is missing or due for renewal.
 *
 * Exit status: 0 on success; 2 on any failure (bad flags, unwritable
 * directory, a kubeconfig that does not parse, an unreachable server, an
 * API error), with one line on stderr.
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certs/certs.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "common/banned.h"

struct certs_opts {
	const char *service, *namespace, *out, *webhook, *ca_file, *secret, *name, *kubeconfig;
	const char *ips[CERTS_MAX_SANS];
	size_t n_ips;
	const char *dns[CERTS_MAX_SANS];
	size_t n_dns;
	int days, ca_days;
	bool force;
	const char *dir; /* positional (show) */
};

static void usage(FILE *f)
{
	fputs("usage: gavel certs generate --service NAME --namespace NS [--ip IP]... "
	      "[--dns NAME]... --out DIR\n"
	      "                            [--days N] [--ca-days N] [--force]\n"
	      "       gavel certs inject --webhook NAME [--ca-file FILE | --secret NS/NAME] "
	      "[--kubeconfig F]\n"
	      "       gavel certs secret --service NAME --namespace NS [--name SECRET] "
	      "[--ip IP]... [--dns NAME]...\n"
	      "                          [--out DIR] [--kubeconfig F]\n"
	      "       gavel certs show DIR\n",
	      f);
}

static int fail(const char *sub, const struct gv_err *err)
{
	char buf[2048];

	fprintf(stderr, "gavel certs %s: %s\n", sub, gv_err_str(err, buf, sizeof(buf)));
	return 2;
}

static int bad(const char *sub, const char *msg, const char *arg)
{
	fprintf(stderr, "gavel certs %s: %s%s%s\n", sub, msg, arg ? " " : "", arg ? arg : "");
	return 2;
}

static bool parse_days(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < 1 || v > 36500)
		return false;
	*out = (int)v;
	return true;
}

/* Parses argv (after the sub-command). Returns 0, or the exit code after printing why. */
static int parse(const char *sub, int argc, char **argv, struct certs_opts *o)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = NULL, *eq;
		char flag[64];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return -1;
		}
		if (strncmp(a, "--", 2)) {
			if (o->dir)
				return bad(sub, "unexpected argument", a);
			o->dir = a;
			continue;
		}
		eq = strchr(a, '=');
		snprintf(flag, sizeof(flag), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		if (!strcmp(flag, "--force")) {
			if (eq)
				return bad(sub, "--force takes no value", NULL);
			o->force = true;
			continue;
		}
		if (eq)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return bad(sub, "missing value for", flag);
		if (!*v)
			return bad(sub, "empty value for", flag);
		if (!strcmp(flag, "--service"))
			o->service = v;
		else if (!strcmp(flag, "--namespace") || !strcmp(flag, "-n"))
			o->namespace = v;
		else if (!strcmp(flag, "--out"))
			o->out = v;
		else if (!strcmp(flag, "--webhook"))
			o->webhook = v;
		else if (!strcmp(flag, "--ca-file"))
			o->ca_file = v;
		else if (!strcmp(flag, "--secret"))
			o->secret = v;
		else if (!strcmp(flag, "--name"))
			o->name = v;
		else if (!strcmp(flag, "--kubeconfig"))
			o->kubeconfig = v;
		else if (!strcmp(flag, "--ip")) {
			if (o->n_ips >= CERTS_MAX_SANS)
				return bad(sub, "too many --ip", NULL);
			o->ips[o->n_ips++] = v;
		} else if (!strcmp(flag, "--dns")) {
			if (o->n_dns >= CERTS_MAX_SANS)
				return bad(sub, "too many --dns", NULL);
			o->dns[o->n_dns++] = v;
		} else if (!strcmp(flag, "--days")) {
			if (!parse_days(v, &o->days))
				return bad(sub, "--days must be 1..36500, got", v);
		} else if (!strcmp(flag, "--ca-days")) {
			if (!parse_days(v, &o->ca_days))
				return bad(sub, "--ca-days must be 1..36500, got", v);
		} else {
			return bad(sub, "unknown flag", flag);
		}
	}
	return 0;
}

static void fmt_time(time_t t, char *buf, size_t n)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Prints one line about a certificate; returns 1 when it is missing or due. */
static int describe(const char *label, const char *pem, time_t now)
{
	struct certs_info info;
	char na[32];

	if (!pem || certs_info(pem, &info, NULL)) {
		printf("%s: missing or unreadable\n", label);
		return 1;
	}
	fmt_time(info.not_after, na, sizeof(na));
	printf("%s: CN %s, %s%d certificate(s), expires %s%s%s%s\n", label, info.subject,
	       info.is_ca ? "CA, " : "", info.n_certs, na,
	       certs_due(&info, now) ? " (due for renewal)" : "", info.sans[0] ? ", " : "",
	       info.sans);
	return certs_due(&info, now) ? 1 : 0;
}

static void fill_request(const struct certs_opts *o, struct certs_request *req)
{
	memset(req, 0, sizeof(*req));
	req->service = o->service;
	req->namespace = o->namespace;
	req->dns = o->dns;
	req->n_dns = o->n_dns;
	req->ips = o->ips;
	req->n_ips = o->n_ips;
	req->days = o->days;
	req->ca_days = o->ca_days;
}

static void print_changes(const char *where, unsigned ch)
{
	if (!ch)
		printf("%s: certificates are current, nothing renewed\n", where);
	else
		printf("%s:%s%s%s\n", where, ch & CERTS_NEW_CA ? " new CA" : "",
		       ch & CERTS_NEW_SERVING ? " new serving certificate" : "",
		       ch & CERTS_PRUNED ? " expired CA dropped" : "");
}

static int cmd_generate(int argc, char **argv)
{
	struct certs_opts o = {0};
	struct certs_request req;
	struct certs_bundle b = {0};
	struct gv_err err = {0};
	time_t now = time(NULL);
	unsigned ch = 0;
	int rc;

	if ((rc = parse("generate", argc, argv, &o)))
		return rc < 0 ? 0 : rc;
	if (!o.service)
		return bad("generate", "missing --service NAME", NULL);
	if (!o.namespace)
		return bad("generate", "missing --namespace NS", NULL);
	if (!o.out)
		return bad("generate", "missing --out DIR", NULL);
	if (o.dir)
		return bad("generate", "unexpected argument", o.dir);
	fill_request(&o, &req);
	if (!o.force && certs_read_dir(o.out, &b, &err))
		return fail("generate", &err);
	if (certs_ensure(&b, &req, now, &ch, &err) || (ch && certs_write_dir(&b, o.out, &err))) {
		certs_bundle_release(&b);
		return fail("generate", &err);
	}
	print_changes(o.out, ch);
	describe("ca.crt", b.ca_crt, now);
	describe("tls.crt", b.tls_crt, now);
	certs_bundle_release(&b);
	return 0;
}

static struct kube_client *connect_api(const char *sub, const char *kubeconfig)
{
	struct kube_config *cfg = NULL;
	struct kube_client *c;
	struct gv_err err = {0};

	if (kube_config_load(kubeconfig, &cfg, &err)) {
		fail(sub, &err);
		return NULL;
	}
	c = kube_client_new(cfg, &err);
	kube_config_free(cfg);
	if (!c) {
		fail(sub, &err);
		return NULL;
	}
	/* A command line: fail fast rather than retry for long. */
	kube_client_set_retries(c, 2, 200, 1000);
	kube_client_set_timeouts(c, 5000, 30000, 0);
	return c;
}

/* Splits "NS/NAME". */
static bool split_ref(const char *ref, char *ns, size_t nn, char *name, size_t n)
{
	const char *slash = strchr(ref, '/');

	if (!slash || slash == ref || !slash[1] || strchr(slash + 1, '/'))
		return false;
	snprintf(ns, nn, "%.*s", (int)(slash - ref), ref);
	snprintf(name, n, "%s", slash + 1);
	return true;
}

static int cmd_inject(int argc, char **argv)
{
	struct certs_opts o = {0};
	struct kube_client *c = NULL;
	struct gv_err err = {0};
	char *ca = NULL, ns[256], name[256];
	size_t len;
	bool changed = false;
	int rc;

	if ((rc = parse("inject", argc, argv, &o)))
		return rc < 0 ? 0 : rc;
	if (!o.webhook)
		return bad("inject", "missing --webhook NAME", NULL);
	if (o.ca_file && o.secret)
		return bad("inject", "give --ca-file or --secret, not both", NULL);
	if (o.dir)
		return bad("inject", "unexpected argument", o.dir);
	if (o.secret && !split_ref(o.secret, ns, sizeof(ns), name, sizeof(name)))
		return bad("inject", "--secret must be NAMESPACE/NAME, got", o.secret);
	if (!o.secret && gv_read_file(o.ca_file ? o.ca_file : "ca.crt", &ca, &len, &err))
		return fail("inject", &err);
	if (!(c = connect_api("inject", o.kubeconfig))) {
		free(ca);
		return 2;
	}
	if (o.secret) {
		struct certs_bundle b = {0};
		json_t *sec = NULL;
		char *ens = kube_escape(ns), *ename = kube_escape(name);
		char *path = gv_xasprintf("/api/v1/namespaces/%s/secrets/%s", ens, ename);

		free(ens);
		free(ename);
		if (!kube_request(c, "GET", path, NULL, &sec, NULL, &err) &&
		    !certs_from_secret(sec, &b, &err)) {
			if (!b.ca_crt)
				gv_err_set(&err, GV_EINVAL, "Secret %s has no ca.crt", o.secret);
			ca = b.ca_crt;
			b.ca_crt = NULL;
		}
		certs_bundle_release(&b);
		json_decref(sec);
		free(path);
		if (err.code) {
			free(ca);
			kube_client_free(c);
			return fail("inject", &err);
		}
	}
	rc = certs_inject(c, o.webhook, ca, &changed, &err);
	kube_client_free(c);
	free(ca);
	if (rc)
		return fail("inject", &err);
	printf("%s: caBundle %s\n", o.webhook, changed ? "updated" : "already current");
	return 0;
}

static int cmd_secret(int argc, char **argv)
{
	struct certs_opts o = {0};
	struct certs_request req;
	struct certs_bundle b = {0};
	struct kube_client *c;
	struct gv_err err = {0};
	char *name;
	unsigned ch = 0;
	time_t now = time(NULL);
	int rc;

	if ((rc = parse("secret", argc, argv, &o)))
		return rc < 0 ? 0 : rc;
	if (!o.service)
		return bad("secret", "missing --service NAME", NULL);
	if (!o.namespace)
		return bad("secret", "missing --namespace NS", NULL);
	if (o.dir)
		return bad("secret", "unexpected argument", o.dir);
	fill_request(&o, &req);
	if (!(c = connect_api("secret", o.kubeconfig)))
		return 2;
	name = o.name ? gv_xstrdup(o.name) : gv_xasprintf("%s-tls", o.service);
	rc = certs_secret_sync(c, o.namespace, name, &req, now, &b, &ch, &err);
	kube_client_free(c);
	if (!rc && o.out)
		rc = certs_write_dir(&b, o.out, &err);
	if (rc) {
		free(name);
		certs_bundle_release(&b);
		return fail("secret", &err);
	}
	{
		char *where = gv_xasprintf("Secret %s/%s", o.namespace, name);

		print_changes(where, ch);
		free(where);
	}
	describe("ca.crt", b.ca_crt, now);
	describe("tls.crt", b.tls_crt, now);
	free(name);
	certs_bundle_release(&b);
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	struct certs_opts o = {0};
	struct certs_bundle b = {0};
	struct gv_err err = {0};
	time_t now = time(NULL);
	int rc;

	if ((rc = parse("show", argc, argv, &o)))
		return rc < 0 ? 0 : rc;
	if (!o.dir)
		return bad("show", "missing DIR", NULL);
	if (certs_read_dir(o.dir, &b, &err))
		return fail("show", &err);
	rc = describe("ca.crt", b.ca_crt, now);
	rc |= describe("tls.crt", b.tls_crt, now);
	if (!rc && certs_verify(&b, NULL, now, &err)) {
		printf("tls.crt: %s\n", err.msg);
		rc = 1;
	}
	certs_bundle_release(&b);
	return rc;
}

int cmd_certs(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} subs[] = {
	    {"generate", cmd_generate},
	    {"inject", cmd_inject},
	    {"secret", cmd_secret},
	    {"show", cmd_show},
	};

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	/* Progress goes to stdout; the library's info lines would repeat it. */
	gv_log_setup(GV_LOG_WARN, 0);
	for (size_t i = 0; i < GV_ARRAY_LEN(subs); i++)
		if (!strcmp(argv[1], subs[i].name))
			return subs[i].fn(argc - 2, argv + 2);
	fprintf(stderr, "gavel certs: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
