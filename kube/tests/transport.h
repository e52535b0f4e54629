/*
 * transport.h - for unit tests: a fake API server written as a function of
 * values (method, path, body -> answer, status) behind the kube client's
 * test transport (kube_client_new_transport, kube/kube.h), so that the
 * code under test talks to a struct kube_client as in production, and the
 * wire (Status bodies, views, lists, retries) is the client's own.
 *
 *	struct fake_api fa = {.request = my_fake, .ud = &state};
 *	struct kube_client *c = fake_api_client(&fa);
 *	... code under test with c ...
 *	kube_client_free(c);
 *
 * request() gets the body parsed (NULL when none) and returns GV_OK with
 * *out (a new reference, or NULL for no body) and st->http (0 = 200), or
 * an error with st->http (0 = a connection failure), st->reason and
 * st->message, which the client sees as a Status. Header-only (static).
 */
#ifndef GV_KUBE_TESTS_TRANSPORT_H
#define GV_KUBE_TESTS_TRANSPORT_H

#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/gv.h"
#include "kube/kube.h"

struct fake_api {
	enum gv_code (*request)(void *ud, const char *method, const char *path, const json_t *body,
				json_t **out, struct kube_status *st, struct gv_err *err);
	void *ud;
	const char *last_accept; /* the Accept header of the last request (static strings) */
};

static inline void fake_api_exchange(void *ud, struct kube_exchange *x)
{
	struct fake_api *fa = ud;
	struct kube_status st = {0};
	struct gv_err err = {0};
	json_t *body = x->body ? json_loadb(x->body, x->body_len, JSON_DECODE_ANY, NULL) : NULL;
	json_t *out = NULL;
	enum gv_code rc;

	fa->last_accept = strstr(x->accept, "PartialObjectMetadataList") ? "metadata-list"
			  : strstr(x->accept, "PartialObjectMetadata")	 ? "metadata"
									 : "json";
	rc = fa->request(fa->ud, x->method, x->path, body, &out, &st, &err);
	json_decref(body);
	if (!rc) {
		char *text = out ? json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

		x->http = st.http ? st.http : 200;
		if (text)
			gv_buf_adds(&x->response, text);
		free(text);
	} else if (!st.http) {
		x->http = 0;
		gv_buf_adds(&x->response, st.message[0] ? st.message : err.msg);
	} else {
		json_t *status =
		    json_pack("{s:s, s:s, s:s, s:s, s:I}", "kind", "Status", "apiVersion", "v1",
			      "reason", st.reason, "message", st.message[0] ? st.message : err.msg,
			      "code", (json_int_t)st.http);
		char *text = json_dumps(status, JSON_COMPACT);

		x->http = st.http;
		gv_buf_adds(&x->response, text);
		free(text);
		json_decref(status);
	}
	json_decref(out);
}

/* A client whose requests go to fa->request (fa must outlive it). Free with kube_client_free. */
static inline struct kube_client *fake_api_client(struct fake_api *fa)
{
	return kube_client_new_transport(fake_api_exchange, fa);
}

#endif
