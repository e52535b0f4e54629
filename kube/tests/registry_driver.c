/*
 * registry_driver.c - a tiny command-line driver of the registry client
 * (kube/registry.h) for e2e/registry.sh (built by that script, not by the
 * Makefile).
 *
 *   registry_driver [--insecure] [--docker-config FILE]... [--timeout-ms N] REF...
 *
 * Fetches each REF with one client (so a repeated REF is answered from its
 * cache) and prints its ImageData as one line of JSON (sorted keys), or
 * "error <code>: <message>" for a failure. Exit status 0 when every REF
 * was fetched, 1 when one failed, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/gv.h"
#include "kube/registry.h"
#include "common/banned.h"

int main(int argc, char **argv)
{
	struct kube_registry_limits lim = {0};
	struct kube_registry_opts opts = {0};
	json_t *configs = json_array();
	struct kube_registry *r;
	int i = 1, status = 0;

	gv_init();
	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--insecure")) {
			opts.allow_insecure = true;
		} else if (!strcmp(argv[i], "--docker-config") && i + 1 < argc) {
			json_error_t je;
			json_t *c = json_load_file(argv[++i], 0, &je);

			if (!c) {
				fprintf(stderr, "%s: %s\n", argv[i], je.text);
				return 2;
			}
			json_array_append_new(configs, c);
		} else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) {
			lim.timeout_ms = strtol(argv[++i], NULL, 10);
		} else {
			fprintf(stderr,
				"usage: registry_driver [--insecure] [--docker-config FILE]... "
				"[--timeout-ms N] REF...\n");
			return 2;
		}
	}
	if (i == argc) {
		fprintf(stderr, "registry_driver: no reference\n");
		return 2;
	}
	if (json_array_size(configs))
		opts.docker_configs = configs;
	r = kube_registry_new(&lim);
	for (; i < argc; i++) {
		struct gv_err err = {0};
		json_t *d = NULL;
		enum gv_code rc = kube_registry_image_data(r, argv[i], &opts, &d, &err);

		if (rc) {
			printf("error %d: %s\n", (int)rc, err.msg);
			status = 1;
			continue;
		}
		{
			char *s = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);

			printf("%s\n", s);
			free(s);
		}
		json_decref(d);
	}
	kube_registry_free(r);
	json_decref(configs);
	return status;
}
