/*
 * jsonparse.c - a JSON parser that builds jansson values directly, for
 * the large documents gavel reads: AdmissionReview bodies and API server
 * responses (list pages).
 *
 * json_loadb() reads its input a character at a time through a stream
 * with per-character UTF-8 decoding and copies every token into a string
 * buffer; on an AdmissionReview that is about half of the handler's time,
 * on a page of 500 Pods a third of a background scan's.
 * This parser scans the buffer in place: strings without escapes become
 * values straight from the input, UTF-8 is checked on the fly, and keys
 * and strings are handed to jansson's _nocheck constructors. The values are
 * the ones json_loadb(buf, len, JSON_ALLOW_NUL) gives (integers as
 * json_integer, other numbers as json_real, duplicate keys: the last one
 * wins); the error texts are our own.
 */
#include "common/json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/banned.h"

struct jp {
	const unsigned char *start, *p, *end;
	int depth;
	/*
	 * Check values without building them: every value parses to the
	 * json_null() singleton (numbers are built and dropped: range checks).
	 */
	bool skip;
	bool reals; /* gv_json_parse_reals(): integers as json_real */
	/* gv_json_parse_list(): the top-level member whose array is left unbuilt */
	const char *lazy_key;
	struct gv_json_span *spans; /* owned until handed over */
	size_t nspans, cap;
	const char *error;	    /* static reason, NULL while all is well */
	const unsigned char *where; /* position of the error */
};

static json_t *fail(struct jp *j, const char *why)
{
	if (!j->error) {
		j->error = why;
		j->where = j->p;
	}
	return NULL;
}

static void skip_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static int hex4(const unsigned char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		int c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static void put_utf8(struct gv_buf *b, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	gv_buf_add(b, u, n);
}

/*
 * Parses the string at j->p (on the opening quote). Without escapes *s
 * points into the input; with escapes the text is decoded into *heap
 * (caller releases) and *s points there. Returns false on error.
 */
/* The bytes a string's fast path passes over: ASCII but controls, '"' and '\\'. */
static const unsigned char plain[256] = {
    [0x20 ... 0x21] = 1,
    [0x23 ... 0x5B] = 1,
    [0x5D ... 0x7F] = 1,
};

/*
 * The first byte from p that is not plain ('"', '\\', a control below 0x20
 * or a byte from 0x80), or end. Eight bytes a step with the tests of "Bit
 * Twiddling Hacks": a byte below the first such byte raises no flag and
 * borrows nothing, so on a little-endian machine the lowest flag is exact.
 */
static inline const unsigned char *skip_plain(const unsigned char *p, const unsigned char *end)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;

	while (end - p >= 8) {
		uint64_t w, q, b, m;
		memcpy(&w, p, sizeof(w));
		q = w ^ (ones * '"');
		b = w ^ (ones * '\\');
		m = (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs;
		if (m)
			return p + __builtin_ctzll(m) / 8;
		p += 8;
	}
#endif
	while (p < end && plain[*p])
		p++;
	return p;
}

static bool parse_string(struct jp *j, const char **s, size_t *n, struct gv_buf *heap)
{
	const unsigned char *p = j->p + 1, *run = p;
	bool escaped = false;

	for (;;) {
		unsigned char c;
		/* Fast path: plain ASCII, eight bytes a step, the tail a byte a step. */
		p = skip_plain(p, j->end);
		if (p >= j->end) {
			j->p = p;
			fail(j, "unterminated string");
			return false;
		}
		c = *p;
		if (c == '"')
			break;
		if (c >= 0x80) {
			size_t k = gv_utf8_valid((const char *)p, (size_t)(j->end - p));
			if (!k) {
				j->p = p;
				fail(j, "invalid UTF-8 in string");
				return false;
			}
			p += k;
			continue;
		}
		if (c < 0x20) {
			j->p = p;
			fail(j, "control character in string");
			return false;
		}
		/* A backslash: from here on the text is decoded into heap. */
		if (!escaped) {
			escaped = true;
			gv_buf_reset(heap);
		}
		gv_buf_add(heap, run, (size_t)(p - run));
		if (p + 1 >= j->end) {
			j->p = p;
			fail(j, "unterminated string");
			return false;
		}
		switch (p[1]) {
		case '"':
			gv_buf_addc(heap, '"');
			p += 2;
			break;
		case '\\':
			gv_buf_addc(heap, '\\');
			p += 2;
			break;
		case '/':
			gv_buf_addc(heap, '/');
			p += 2;
			break;
		case 'b':
			gv_buf_addc(heap, '\b');
			p += 2;
			break;
		case 'f':
			gv_buf_addc(heap, '\f');
			p += 2;
			break;
		case 'n':
			gv_buf_addc(heap, '\n');
			p += 2;
			break;
		case 'r':
			gv_buf_addc(heap, '\r');
			p += 2;
			break;
		case 't':
			gv_buf_addc(heap, '\t');
			p += 2;
			break;
		case 'u': {
			int hi = j->end - p >= 6 ? hex4(p + 2) : -1;
			uint32_t cp;
			if (hi < 0) {
				j->p = p;
				fail(j, "invalid \\u escape");
				return false;
			}
			p += 6;
			cp = (uint32_t)hi;
			if (hi >= 0xDC00 && hi <= 0xDFFF) {
				j->p = p - 6;
				fail(j, "invalid Unicode escape (lone low surrogate)");
				return false;
			}
			if (hi >= 0xD800 && hi <= 0xDBFF) {
				int lo = j->end - p >= 6 && p[0] == '\\' && p[1] == 'u'
					     ? hex4(p + 2)
					     : -1;
				if (lo < 0xDC00 || lo > 0xDFFF) {
					j->p = p - 6;
					fail(j, "invalid Unicode escape (lone high surrogate)");
					return false;
				}
				p += 6;
				cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) +
				     ((uint32_t)lo - 0xDC00);
			}
			put_utf8(heap, cp);
			break;
		}
		default:
			j->p = p;
			fail(j, "invalid escape in string");
			return false;
		}
		run = p;
	}
	if (escaped) {
		gv_buf_add(heap, run, (size_t)(p - run));
		*s = heap->data ? heap->data : "";
		*n = heap->len;
	} else {
		*s = (const char *)(j->p + 1);
		*n = (size_t)(p - (j->p + 1));
	}
	j->p = p + 1;
	return true;
}

static json_t *parse_number(struct jp *j)
{
	const unsigned char *s = j->p, *p = s;
	bool real = false;
	char small[64], *text;
	size_t n;
	json_t *v;

	if (p < j->end && *p == '-')
		p++;
	if (p < j->end && *p == '0')
		p++;
	else if (p < j->end && *p >= '1' && *p <= '9')
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	else
		return fail(j, "invalid number");
	if (p < j->end && *p == '.') {
		real = true;
		p++;
		if (p >= j->end || *p < '0' || *p > '9') {
			j->p = p;
			return fail(j, "invalid number");
		}
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		real = true;
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9') {
			j->p = p;
			return fail(j, "invalid number");
		}
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	n = (size_t)(p - s);
	text = n < sizeof(small) ? small : gv_xmalloc(n + 1);
	memcpy(text, s, n);
	text[n] = '\0';
	errno = 0;
	if (!real) {
		long long i = strtoll(text, NULL, 10);
		v = errno == ERANGE ? NULL
		    : j->reals	    ? json_real((double)i)
				    : json_integer((json_int_t)i);
		if (!v)
			fail(j, *s == '-' ? "too big negative integer" : "too big integer");
	} else {
		double d = strtod(text, NULL);
		v = errno == ERANGE && isinf(d) ? NULL : json_real(d);
		if (!v)
			fail(j, "real number overflow");
	}
	if (text != small)
		free(text);
	if (v)
		j->p = p;
	return v;
}

static bool literal(struct jp *j, const char *word, size_t n)
{
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n))
		return false;
	j->p += n;
	return true;
}

static json_t *parse_value(struct jp *j, struct gv_buf *heap);

static json_t *parse_lazy_array(struct jp *j, struct gv_buf *heap);

static json_t *parse_object(struct jp *j, struct gv_buf *heap)
{
	json_t *o = j->skip ? NULL : json_object();

	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return o ? o : json_null();
	}
	for (;;) {
		const char *k;
		size_t kn;
		char *kcopy = NULL;
		json_t *v;
		if (j->p >= j->end || *j->p != '"') {
			json_decref(o);
			return fail(j, "string or '}' expected");
		}
		bool lazy;
		if (!parse_string(j, &k, &kn, heap)) {
			json_decref(o);
			return NULL;
		}
		if (memchr(k, '\0', kn)) {
			json_decref(o);
			return fail(j, "NUL byte in object key");
		}
		lazy = j->lazy_key && j->depth == 1 && strlen(j->lazy_key) == kn &&
		       !memcmp(k, j->lazy_key, kn);
		if (k == heap->data) /* the value below may reuse heap */
			k = kcopy = gv_xstrndup(k, kn);
		skip_ws(j);
		if (j->p >= j->end || *j->p != ':') {
			free(kcopy);
			json_decref(o);
			return fail(j, "':' expected");
		}
		j->p++;
		skip_ws(j);
		lazy = lazy && j->p < j->end && *j->p == '[';
		v = lazy ? parse_lazy_array(j, heap) : parse_value(j, heap);
		if (!v) {
			free(kcopy);
			json_decref(o);
			return NULL;
		}
		if (o && !lazy)
			json_object_setn_new_nocheck(o, k, kn, v);
		else
			json_decref(v);
		free(kcopy);
		skip_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			skip_ws(j);
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			return o ? o : json_null();
		}
		json_decref(o);
		return fail(j, "',' or '}' expected");
	}
}

/*
 * The array at j->p (on '['). With spans (the lazy member's array, in
 * skip mode), each element's span is recorded in j->spans.
 */
static json_t *parse_array(struct jp *j, struct gv_buf *heap, bool spans)
{
	json_t *a = j->skip ? NULL : json_array();

	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return a ? a : json_null();
	}
	for (;;) {
		const unsigned char *at;
		json_t *v;
		skip_ws(j);
		at = j->p;
		v = parse_value(j, heap);
		if (!v) {
			json_decref(a);
			return NULL;
		}
		if (a)
			json_array_append_new(a, v);
		else
			json_decref(v); /* json_null(), or a number (built for its range check) */
		if (spans) {
			if (j->nspans == j->cap) {
				j->cap = j->cap ? 2 * j->cap : 64;
				j->spans = gv_xrealloc(j->spans, j->cap * sizeof(*j->spans));
			}
			j->spans[j->nspans++] = (struct gv_json_span){
			    .off = (size_t)(at - j->start), .len = (size_t)(j->p - at)};
		}
		skip_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			return a ? a : json_null();
		}
		json_decref(a);
		return fail(j, "',' or ']' expected");
	}
}

/*
 * The lazy member's array (j->p on '['): each element checked in skip
 * mode and its span recorded (a repeated member: the last one counts).
 * Returns json_null() or NULL on error.
 */
static json_t *parse_lazy_array(struct jp *j, struct gv_buf *heap)
{
	json_t *v;

	j->nspans = 0;
	j->skip = true;
	j->depth++; /* as parse_value does for an array */
	v = parse_array(j, heap, true);
	j->depth--;
	j->skip = false;
	return v;
}

static json_t *parse_value(struct jp *j, struct gv_buf *heap)
{
	json_t *v = NULL;

	skip_ws(j);
	if (j->p >= j->end)
		return fail(j, "unexpected end of input");
	switch (*j->p) {
	case '{':
	case '[':
		if (++j->depth > GV_JSON_MAX_DEPTH)
			return fail(j, "nesting too deep");
		v = *j->p == '{' ? parse_object(j, heap) : parse_array(j, heap, false);
		j->depth--;
		return v;
	case '"': {
		const char *s;
		size_t n;
		if (!parse_string(j, &s, &n, heap))
			return NULL;
		return j->skip ? json_null() : json_stringn_nocheck(s, n);
	}
	case 't':
		if (literal(j, "true", 4))
			return json_true();
		break;
	case 'f':
		if (literal(j, "false", 5))
			return json_false();
		break;
	case 'n':
		if (literal(j, "null", 4))
			return json_null();
		break;
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return parse_number(j);
	}
	return fail(j, "invalid token");
}

/*
 * Parses the whole of j's input (one object, or one object or array) and
 * fills err on failure.
 */
static json_t *parse_document(struct jp *j, bool object_only, struct gv_err *err)
{
	struct gv_buf heap = {0};
	json_t *v = NULL;

	skip_ws(j);
	if (j->p >= j->end)
		fail(j, "empty body");
	else if (object_only && *j->p != '{')
		fail(j, "'{' expected");
	else if (*j->p != '{' && *j->p != '[')
		fail(j, "'[' or '{' expected");
	else
		v = parse_value(j, &heap);
	if (v) {
		skip_ws(j);
		if (j->p < j->end) {
			json_decref(v);
			v = NULL;
			fail(j, "end of input expected");
		}
	}
	gv_buf_release(&heap);
	if (!v) {
		int line = 1, col = 1;
		for (const unsigned char *p = j->start; p < j->where; p++) {
			if (*p == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		gv_err_set(err, GV_EINVAL, "%s at line %d column %d", j->error, line, col);
	}
	return v;
}

json_t *gv_json_parse(const char *buf, size_t len, struct gv_err *err)
{
	struct jp j = {.start = (const unsigned char *)buf,
		       .p = (const unsigned char *)buf,
		       .end = (const unsigned char *)buf + len};

	return parse_document(&j, false, err);
}

json_t *gv_json_parse_reals(const char *buf, size_t len, struct gv_err *err)
{
	struct jp j = {.start = (const unsigned char *)buf,
		       .p = (const unsigned char *)buf,
		       .end = (const unsigned char *)buf + len,
		       .reals = true};

	return parse_document(&j, false, err);
}

json_t *gv_json_parse_list(const char *buf, size_t len, const char *key,
			   struct gv_json_span **spans, size_t *nspans, struct gv_err *err)
{
	struct jp j = {.start = (const unsigned char *)buf,
		       .p = (const unsigned char *)buf,
		       .end = (const unsigned char *)buf + len,
		       .lazy_key = key};
	json_t *v;

	*spans = NULL;
	*nspans = 0;
	v = parse_document(&j, true, err);
	if (!v) {
		free(j.spans);
		return NULL;
	}
	*spans = j.spans;
	*nspans = j.nspans;
	return v;
}

/* ---- the per-thread arena of gv_json_parse_arena() ---- */

/*
 * A chunk: this header, then the values, bump-allocated. The first chunk is
 * sized from the body (a parsed review takes about ARENA_RATIO times its
 * text), later ones double, so a document seldom takes more than two.
 */
struct arena_chunk {
	struct arena_chunk *next; /* older chunk, or NULL */
	unsigned char *end;	  /* one past the last usable byte */
};

#define ARENA_HDR   ((sizeof(struct arena_chunk) + 15) & ~(size_t)15)
#define ARENA_RATIO 8
#define ARENA_MIN   16384

static _Thread_local struct {
	struct arena_chunk *chunks; /* newest first; NULL: no arena open */
	unsigned char *next;	    /* next free byte of chunks */
	bool filling;		    /* jansson's allocations go into the arena */
} arena;

static void arena_chunk_add(size_t size)
{
	struct arena_chunk *c = gv_xmalloc(ARENA_HDR + size);

	c->next = arena.chunks;
	c->end = (unsigned char *)c + ARENA_HDR + size;
	arena.chunks = c;
	arena.next = (unsigned char *)c + ARENA_HDR;
}

static bool arena_owns(const void *p)
{
	for (const struct arena_chunk *c = arena.chunks; c; c = c->next)
		if ((const unsigned char *)p > (const unsigned char *)c &&
		    (const unsigned char *)p < c->end)
			return true;
	return false;
}

static void arena_free(void)
{
	while (arena.chunks) {
		struct arena_chunk *c = arena.chunks;
		arena.chunks = c->next;
		free(c);
	}
	arena.next = NULL;
}

void *gv_json_malloc(size_t n)
{
	if (arena.filling) {
		size_t want = (n + 15) & ~(size_t)15;
		void *p;
		if (want > (size_t)(arena.chunks->end - arena.next)) {
			size_t size = (size_t)(arena.chunks->end - (unsigned char *)arena.chunks);
			arena_chunk_add(2 * size > want ? 2 * size : want);
		}
		p = arena.next;
		arena.next += want;
		return p;
	}
	return gv_xmalloc(n);
}

void gv_json_free(void *p)
{
	if (arena.chunks && arena_owns(p))
		return; /* released whole by gv_json_arena_release() */
	free(p);
}

json_t *gv_json_parse_arena(const char *buf, size_t len, struct gv_err *err)
{
	json_malloc_t m;
	json_free_t f;
	json_t *v;

	json_get_alloc_funcs(&m, &f);
	if (arena.chunks || m != gv_json_malloc || f != gv_json_free)
		return gv_json_parse(buf, len, err); /* one arena a thread; gv_init() not called */
	arena_chunk_add(len < ARENA_MIN / ARENA_RATIO ? ARENA_MIN : len * ARENA_RATIO);
	arena.filling = true;
	v = gv_json_parse(buf, len, err);
	arena.filling = false;
	if (!v)
		arena_free();
	return v;
}

void gv_json_arena_release(json_t *root)
{
	if (!root)
		return;
	if (arena.chunks && arena_owns(root))
		arena_free();
	else
		json_decref(root);
}
