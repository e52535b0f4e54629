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
	/*
	 * The host may release an earlier answer, whose address a new one can
	 * take: the field cache's entries (keyed by the object's address) end here.
	 */
	ev->gen++;
	if (!r)
		return cel_err(ev, n->pos, "%s", msg[0] ? msg : "host call failed");
	return cel_from_json(r);
}

/*
 * parseServiceAccount(username): {Name, Namespace} of
 * "system:serviceaccount:<ns>:<name>", both "" otherwise (Kyverno's user
 * library; the keys are capitalised as Kyverno's struct fields).
 */
static struct cel_value parse_sa(struct cel_eval *ev, const struct cel_node *n,
				 struct cel_value *args, int nargs)
{
	static const char pre[] = "system:serviceaccount:";
	const size_t pl = sizeof(pre) - 1;
	struct cel_value k[2], v[2];
	const char *s;
	size_t len;

	(void)nargs;
	if (args[0].kind != CEL_STRING)
		return cel_err(ev, n->pos, "no such overload");
	s = args[0].v.s.p;
	len = args[0].v.s.n;
	k[0] = cel_str("Name", 4);
	k[1] = cel_str("Namespace", 9);
	v[0] = v[1] = cel_str("", 0);
	if (len > pl && !memcmp(s, pre, pl)) {
		const char *rest = s + pl, *colon = memchr(rest, ':', len - pl);
		if (colon && !memchr(colon + 1, ':', (size_t)(s + len - colon - 1))) {
			v[1] = cel_str(rest, (size_t)(colon - rest));
			v[0] = cel_str(colon + 1, (size_t)(s + len - colon - 1));
		}
	}
	return cel_map_new(ev, k, v, 2);
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
    {"parseServiceAccount", parse_sa, 1, 1, G, false},
    {"user.parseServiceAccount", parse_sa, 1, 1, G, false},
};
#undef G
const size_t cel_host_nfuncs = GV_ARRAY_LEN(cel_host_funcs);
