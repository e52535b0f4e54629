/*
 * fuzz_kubeconfig.c - kube_config_parse() on arbitrary kubeconfig bytes
 * (YAML or JSON), with the current-context and with a named context, and
 * relative paths resolved against a directory that does not exist (parsing
 * reads no files). A parsed config must have an http(s) server.
 *
 * Input: the kubeconfig. Seeds: a few kubeconfigs written by build/fuzz/seeds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fuzz/fuzz.h"
#include "kube/kube.h"

#include "common/banned.h"

static void parse(const uint8_t *data, size_t size, const char *context)
{
	struct kube_config *c = NULL;
	struct gv_err err = {0};

	if (kube_config_parse((const char *)data, size, "fuzz", "/nonexistent/dir", context, &c,
			      &err) == GV_OK) {
		if (!c || !c->server ||
		    (strncmp(c->server, "https://", 8) && strncmp(c->server, "http://", 7))) {
			fprintf(stderr, "parsed kubeconfig without an http(s) server\n");
			abort();
		}
	} else if (c || !err.msg[0]) {
		fprintf(stderr, "failed parse without a message, or with a config\n");
		abort();
	}
	kube_config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	parse(data, size, NULL);
	parse(data, size, "dev");
	return 0;
}
