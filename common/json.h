/*
 * json.h - gavel's JSON parser (jsonparse.c): jansson values from a
 * buffer, about twice as fast as json_loadb() on large documents.
 */
#ifndef GV_COMMON_JSON_H
#define GV_COMMON_JSON_H

#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"

#define GV_JSON_MAX_DEPTH 512 /* nested objects and arrays */

/*
 * Parses buf (len bytes; need not be NUL-terminated) holding one JSON
 * object or array and nothing else but whitespace. Returns a new
 * reference with the same values json_loadb(buf, len, JSON_ALLOW_NUL)
 * gives, or NULL with err (may be NULL) set to GV_EINVAL and "<reason> at
 * line L column C" (bad syntax, invalid UTF-8, numbers out of range,
 * nesting deeper than GV_JSON_MAX_DEPTH).
 */
json_t *gv_json_parse(const char *buf, size_t len, struct gv_err *err);

/*
 * gv_json_parse() with every number a json_real: an integer i becomes
 * json_real((double)i), as resources are prepared for evaluation (Kyverno
 * reads manifests through JSON into float64), without a second pass.
 */
json_t *gv_json_parse_reals(const char *buf, size_t len, struct gv_err *err);

/* Where a value lies in a buffer: bytes [off, off + len). */
struct gv_json_span {
	size_t off, len;
};

/*
 * Parses buf (len bytes) holding one JSON object, such as a list page
 * ({"kind":"PodList","metadata":{...},"items":[...]}), without building
 * the array of its top-level member `key`: every element of that array is
 * checked as gv_json_parse() would check it (so gv_json_parse() of a span
 * that starts with '{' or '[' cannot fail) and its span recorded in
 * *spans[0..*nspans) (malloc'd, caller frees; NULL when none), in order;
 * the member itself is left out of the returned object. When `key` is
 * missing or not an array, it is built like any other member and *nspans
 * is 0; repeated, the last one counts. Memory: the object without the
 * array plus 16 bytes an element, instead of the whole parsed array.
 * Returns a new reference, or NULL with err set as gv_json_parse() does
 * ("'{' expected" when the document is not an object).
 */
json_t *gv_json_parse_list(const char *buf, size_t len, const char *key,
			   struct gv_json_span **spans, size_t *nspans, struct gv_err *err);

/*
 * gv_json_parse() into an arena of the calling thread, for a document that
 * lives no longer than one request (an AdmissionReview): its values are
 * bump-allocated in a few large blocks instead of one malloc each, and
 * gv_json_arena_release() drops them all at once instead of walking the
 * tree. Returns a new reference as gv_json_parse() does; release it with
 * gv_json_arena_release(), on the same thread. Until then the tree reads
 * and references like any other (json_decref of its values frees nothing);
 * after it, every pointer into it is dangling: a value that must outlive
 * the request is copied (json_deep_copy, strdup), never json_incref'd.
 * Values made while the tree lives (evaluation, the answer) are ordinary
 * heap values. A thread whose arena is in use, or a program that did not
 * call gv_init(), gets gv_json_parse()'s heap tree (which the release
 * json_decref's).
 */
json_t *gv_json_parse_arena(const char *buf, size_t len, struct gv_err *err);

/* Releases root (from gv_json_parse_arena(); NULL: nothing) and its arena. */
void gv_json_arena_release(json_t *root);

/*
 * jansson's allocator (gv_init() installs them): gv_xmalloc, or the
 * thread's arena while gv_json_parse_arena() fills it; free, except for
 * memory of the thread's arena.
 */
void *gv_json_malloc(size_t n);
void gv_json_free(void *p);

#endif
