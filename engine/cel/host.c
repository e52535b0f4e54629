/*
 * host.c - Kyverno's CEL library functions answered by the embedder
 * (cel.h struct cel_host; cel-semantics.md section 6): resource, image,
 * globalContext and http. The function table only parses the calls; what
 * they return comes from the host bound to the evaluation, and without a
 * host every call is an error.
 */
#include "engine/cel/cel_int.h"

#include <string.h>

#include "common/banned.h"

void cel_eval_set_host(struct cel_eval *ev, const struct cel_host *h)
{
	ev->host = h;
}

static struct cel_value host_call(struct cel_eval *ev, const struct cel_node *n,
				  struct cel_value *args, int nargs)
{
	json_t *a;
	const json_t *r;
	char msg[512] = "";

	if (!ev->host || !ev->host->call)
		return cel_err(ev, n->pos, "%s: this library is not available here", n->name);
	a = json_array();
	for (int i = 0; i < nargs; i++) {
		json_t *j = cel_value_to_json(&args[i]);
		if (!j) {
			json_decref(a);
			return cel_err(ev, n->pos, "%s: argument %d has no JSON form", n->name,
				       i + 1);
		}
		json_array_append_new(a, j);
	}
	r = ev->host->call(ev->host->ud, n->name, a, msg, sizeof(msg));
	json_decref(a);
	if (!r)
		return cel_err(ev, n->pos, "%s", msg[0] ? msg : "host call failed");
	return cel_from_json(r);
}

#define G CEL_FN_GLOBAL
const struct cel_func cel_host_funcs[] = {
    {"resource.Get", host_call, 3, 4, G, false},
    {"resource.get", host_call, 3, 4, G, false},
    {"resource.List", host_call, 2, 4, G, false},
    {"resource.list", host_call, 2, 4, G, false},
    {"image.GetMetadata", host_call, 1, 1, G, false},
    {"image.getMetadata", host_call, 1, 1, G, false},
    {"globalContext.Get", host_call, 1, 2, G, false},
    {"globalContext.get", host_call, 1, 2, G, false},
    {"http.Get", host_call, 1, 2, G, false},
    {"http.get", host_call, 1, 2, G, false},
    {"http.Post", host_call, 2, 3, G, false},
    {"http.post", host_call, 2, 3, G, false},
};
#undef G
const size_t cel_host_nfuncs = GV_ARRAY_LEN(cel_host_funcs);
