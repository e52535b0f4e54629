/*
 * kube_driver.c - a tiny command-line driver of the kube client for
 * kube/tests/live_kube.sh (built by that script, not by the Makefile).
 * The configuration comes from $KUBECONFIG (kube_config_load(NULL)).
 *
 *   kube_driver list PATH [LIMIT]         one "namespace/name" per item, then "rv=RV"
 *   kube_driver get PATH                  "ok NAME" or "error http=N reason=R message=M"
 *   kube_driver post|put PATH FILE        body from a JSON file; same output as get
 *   kube_driver discover KIND [GROUP [VERSION]]   "GROUP VERSION RESOURCE namespaced|cluster"
 *   kube_driver watch PATH NAME SECONDS   informer: "synced", "added NAME", "deleted NAME"
 *
 * Exit status 0 on success, 1 on an API error or timeout, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"
#include "kube/kube_int.h"
#include "common/banned.h"

static int print_item(const json_t *item, void *ud)
{
	const json_t *md = json_object_get(item, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace"));

	(*(int *)ud)++;
	printf("%s%s%s\n", ns ? ns : "", ns ? "/" : "",
	       json_string_value(json_object_get(md, "name")));
	return 0;
}

static int report(enum gv_code rc, const json_t *out, const struct kube_status *st,
		  const struct gv_err *err)
{
	if (!rc) {
		const char *name =
		    json_string_value(json_object_get(json_object_get(out, "metadata"), "name"));

		printf("ok %s\n", name ? name : "-");
		return 0;
	}
	printf("error http=%ld reason=%s message=%s\n", st->http, st->reason, st->message);
	fprintf(stderr, "kube_driver: %s\n", err->msg);
	return 1;
}

static int cmd_request(struct kube_client *c, const char *method, int argc, char **argv)
{
	struct kube_status st;
	struct gv_err err = {0};
	json_t *body = NULL, *out = NULL;
	enum gv_code rc;
	int ret;

	if (argc > 3) {
		json_error_t jerr;

		if (!(body = json_load_file(argv[3], 0, &jerr))) {
			fprintf(stderr, "kube_driver: %s: %s\n", argv[3], jerr.text);
			return 2;
		}
	}
	rc = kube_request(c, method, argv[2], body, &out, &st, &err);
	ret = report(rc, out, &st, &err);
	json_decref(body);
	json_decref(out);
	return ret;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool has(struct kube_informer *inf, const char *name)
{
	json_t *all = kube_informer_list(inf), *o;
	size_t i;
	bool found = false;

	json_array_foreach(all, i, o)
	{
		const char *n =
		    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));

		found |= n && !strcmp(n, name);
	}
	json_decref(all);
	return found;
}

static int cmd_watch(struct kube_client *c, const char *path, const char *name, double secs)
{
	struct kube_informer *inf = kube_informer_start(c, path, NULL, NULL);
	double end = now_s() + secs;
	int ret = 1;

	if (!inf)
		return 1;
	if (!kube_informer_wait_synced(inf, (long)(secs * 1000))) {
		printf("timeout waiting for the list\n");
		goto out;
	}
	printf("synced\n");
	fflush(stdout);
	while (!has(inf, name) && now_s() < end)
		kube_sleep(20, NULL);
	if (!has(inf, name)) {
		printf("timeout waiting for %s\n", name);
		goto out;
	}
	printf("added %s\n", name);
	fflush(stdout);
	while (has(inf, name) && now_s() < end)
		kube_sleep(20, NULL);
	if (has(inf, name)) {
		printf("timeout waiting for %s to go\n", name);
		goto out;
	}
	printf("deleted %s\n", name);
	ret = 0;
out:
	fflush(stdout);
	kube_informer_stop(inf);
	return ret;
}

int main(int argc, char **argv)
{
	struct kube_config *cfg = NULL;
	struct kube_client *c = NULL;
	struct gv_err err = {0};
	int ret = 2;

	gv_init();
	if (getenv("KUBE_DRIVER_DEBUG"))
		gv_log_setup(GV_LOG_DEBUG, 0);
	if (argc < 3) {
		fputs("usage: kube_driver list|get|post|put|discover|watch ...\n", stderr);
		return 2;
	}
	if (kube_config_load(NULL, &cfg, &err)) {
		fprintf(stderr, "kube_driver: %s\n", err.msg);
		return 2;
	}
	if (!(c = kube_client_new(cfg, &err))) {
		fprintf(stderr, "kube_driver: %s\n", err.msg);
		goto out;
	}
	kube_client_set_retries(c, 2, 100, 500);
	if (!strcmp(argv[1], "list")) {
		char *rv = NULL;
		int n = 0;

		if (kube_list(c, argv[2], argc > 3 ? (int)strtol(argv[3], NULL, 10) : 0, print_item,
			      &n, &rv, &err)) {
			fprintf(stderr, "kube_driver: %s\n", err.msg);
			ret = 1;
		} else {
			printf("rv=%s\n", rv ? rv : "");
			ret = 0;
		}
		free(rv);
	} else if (!strcmp(argv[1], "get")) {
		ret = cmd_request(c, "GET", argc, argv);
	} else if (!strcmp(argv[1], "post") && argc == 4) {
		ret = cmd_request(c, "POST", argc, argv);
	} else if (!strcmp(argv[1], "put") && argc == 4) {
		ret = cmd_request(c, "PUT", argc, argv);
	} else if (!strcmp(argv[1], "discover")) {
		struct kube_resource r;

		if (kube_discover(c, argc > 3 ? argv[3] : NULL, argc > 4 ? argv[4] : NULL, argv[2],
				  &r, &err)) {
			printf("error %s\n", err.msg);
			ret = 1;
		} else {
			printf("%s %s %s %s\n", *r.group ? r.group : "core", r.version, r.resource,
			       r.namespaced ? "namespaced" : "cluster");
			kube_resource_release(&r);
			ret = 0;
		}
	} else if (!strcmp(argv[1], "watch") && argc == 5) {
		ret = cmd_watch(c, argv[2], argv[3], strtod(argv[4], NULL));
	} else {
		fputs("kube_driver: bad usage\n", stderr);
	}
out:
	kube_client_free(c);
	kube_config_free(cfg);
	return ret;
}
