/*
 * fuzz_watch.c - what the client makes of bytes from the API server: the
 * watch stream splitter (kube_stream_feed), Status bodies
 * (kube_status_fill) and base64 (kube_base64_decode/encode).
 *
 * Checks: the stream gives the same events and the same result whether the
 * body arrives in one piece, byte by byte, or in chunks of the size given
 * by the first input byte; base64 that decodes encodes back to the same
 * bytes modulo whitespace and decodes again to the same bytes; the Status
 * reason and message are NUL-terminated within their arrays.
 *
 * Input: the body (first byte: chunk size). Seeds: watch events built by
 * build/fuzz/seeds from the golden resources.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/fuzz/fuzz.h"
#include "kube/kube.h"
#include "kube/kube_int.h"

#include "common/banned.h"

struct seen {
	struct gv_buf log; /* "type:dump\n" per event */
	size_t stop_after; /* 0 = never stop */
	size_t n;
};

static bool on_event(const char *type, json_t *object, void *ud)
{
	struct seen *s = ud;
	char *dump = json_dumps(object, JSON_COMPACT | JSON_SORT_KEYS);

	gv_buf_addf(&s->log, "%s:%s\n", type, dump ? dump : "?");
	free(dump);
	s->n++;
	return !s->stop_after || s->n < s->stop_after;
}

/* Feeds p in chunks of `chunk` bytes (0 = all at once); returns the result and fills s->log. */
static enum gv_code run(const char *p, size_t n, size_t chunk, size_t max, struct seen *s)
{
	struct kube_stream st = {0};
	enum gv_code rc = GV_OK;
	size_t off = 0;

	st.max = max;
	st.on_event = on_event;
	st.ud = s;
	if (!chunk)
		chunk = n ? n : 1;
	while (off < n && rc == GV_OK) {
		size_t k = n - off < chunk ? n - off : chunk;

		rc = kube_stream_feed(&st, p + off, k, NULL);
		off += k;
	}
	gv_buf_addf(&s->log, "rc=%d events=%zu\n", rc, st.events);
	kube_stream_release(&st);
	return rc;
}

static void check_stream(const char *p, size_t n, size_t chunk)
{
	/* A small max makes the size limit reachable; it must trip the same way in every split. */
	const size_t maxes[] = {0, 64};

	for (size_t m = 0; m < GV_ARRAY_LEN(maxes); m++) {
		struct seen a = {0}, b = {0}, c = {0};

		run(p, n, 0, maxes[m], &a);
		run(p, n, 1, maxes[m], &b);
		run(p, n, chunk, maxes[m], &c);
		if (strcmp(gv_buf_str(&a.log), gv_buf_str(&b.log)) ||
		    strcmp(gv_buf_str(&a.log), gv_buf_str(&c.log))) {
			fprintf(stderr,
				"watch stream depends on chunking (max %zu, chunk %zu):\n"
				"whole:\n%s\nbytewise:\n%s\nchunked:\n%s\n",
				maxes[m], chunk, gv_buf_str(&a.log), gv_buf_str(&b.log),
				gv_buf_str(&c.log));
			abort();
		}
		gv_buf_release(&a.log);
		gv_buf_release(&b.log);
		gv_buf_release(&c.log);
	}
}

static void check_base64(const char *s)
{
	char *out = NULL, *enc, *again = NULL;
	size_t len = 0, len2 = 0;

	if (kube_base64_decode(s, &out, &len, NULL) != GV_OK)
		return;
	enc = kube_base64_encode(out, len);
	if (kube_base64_decode(enc, &again, &len2, NULL) != GV_OK || len2 != len ||
	    memcmp(out, again, len)) {
		fprintf(stderr, "base64 does not round-trip: %s -> %s\n", s, enc);
		abort();
	}
	free(again);
	free(enc);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_status st;
	size_t chunk;
	char *s;

	fuzz_init();
	if (size < 1)
		return 0;
	chunk = (size_t)data[0] % 17 + 1;
	check_stream((const char *)data + 1, size - 1, chunk);

	memset(&st, 0x55, sizeof(st));
	kube_status_fill(&st, 400 + (long)(data[0] % 200), (const char *)data + 1, size - 1);
	if (!memchr(st.reason, 0, sizeof(st.reason)) ||
	    !memchr(st.message, 0, sizeof(st.message))) {
		fprintf(stderr, "kube_status_fill left a field unterminated\n");
		abort();
	}
	s = fuzz_str(data + 1, size - 1);
	check_base64(s);
	free(s);
	return 0;
}
