/*
 * vpimage_driver.c - evaluates ValidatingPolicies against a resource with
 * Kyverno's CEL libraries answered as in gavel serve and background scans:
 * the context loader (background/context.h) behind the cluster CEL host
 * (view/celhost.h), so image.GetMetadata fetches from the image's registry.
 * For e2e/registry.sh (built by that script, not by the Makefile); the API
 * server is not used (127.0.0.1:1), so only registry-backed calls answer.
 *
 *   vpimage_driver POLICY.json RESOURCE.json
 *
 * Prints one line per result: "<status> <message>". Exit status 0 when the
 * policy was evaluated, 1 when it did not compile or could not run, 2 on
 * bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "background/context.h"
#include "engine/vpolicy.h"
#include "kube/kube.h"
#include "view/celhost.h"
#include "common/banned.h"

int main(int argc, char **argv)
{
	struct kube_config cfg = {0};
	struct context_options o = {0};
	struct kube_client *client;
	struct context_loader *l;
	const struct view_context *src;
	const struct engine_hooks *h;
	struct view_cel_host vh;
	struct vpol_policy *p;
	struct vpol_input in = {0};
	struct vpol_report rep = {0};
	struct gv_err err = {0};
	json_error_t je;
	json_t *pol, *res;
	int status = 0;

	gv_init();
	if (argc != 3) {
		fprintf(stderr, "usage: vpimage_driver POLICY.json RESOURCE.json\n");
		return 2;
	}
	pol = json_load_file(argv[1], 0, &je);
	res = pol ? json_load_file(argv[2], 0, &je) : NULL;
	if (!pol || !res) {
		fprintf(stderr, "vpimage_driver: %s\n", je.text);
		return 2;
	}
	p = vpol_compile(pol, &err);
	if (!p) {
		printf("compile error: %s\n", err.msg);
		json_decref(pol);
		json_decref(res);
		return 1;
	}
	cfg.server = (char *)"https://127.0.0.1:1";
	client = kube_client_new(&cfg, NULL);
	o.client = client;
	o.kube = &cfg;
	l = context_loader_new(&o);
	src = context_loader_source(l);
	h = src->open(src->ud, NULL, -1);
	view_cel_host_init(&vh, h, "vpimage_driver");
	in.object = res;
	in.operation = "CREATE";
	in.host = &vh.host;
	in.hooks = h;
	if (vpol_evaluate(p, &in, &rep, &err)) {
		printf("evaluate error: %s\n", err.msg);
		status = 1;
	}
	for (size_t i = 0; i < rep.n; i++)
		for (size_t j = 0; j < rep.v[i].n; j++)
			printf("%s %s\n", engine_status_name(rep.v[i].rules[j].status),
			       rep.v[i].rules[j].message ? rep.v[i].rules[j].message : "");
	vpol_report_release(&rep);
	view_cel_host_release(&vh);
	src->close(src->ud, h);
	context_loader_free(l);
	kube_client_free(client);
	vpol_free(p);
	json_decref(pol);
	json_decref(res);
	return status;
}
