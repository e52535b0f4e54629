/*
 * gv.h - the few things every gavel module shares: the error type, the
 * aborting allocator, and a growable byte buffer.
 *
 * Errors: a fallible function returns an enum gv_code (GV_OK = 0) and takes a
 * `struct gv_err *err` last, which may be NULL. The first error set wins;
 * callers add context on the way up with gv_err_prefix().
 *
 * Memory: gv_xmalloc and friends abort the process when memory runs out;
 * gv_init() makes jansson use the same allocator.
 */
#ifndef GV_GV_H
#define GV_GV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>

enum gv_code {
	GV_OK = 0,
	GV_EINVAL,   /* malformed input: bad YAML/JSON, bad policy, bad flag */
	GV_ENOENT,   /* a file or object that was asked for does not exist */
	GV_EIO,	     /* read/write failure */
	GV_ELIMIT,   /* a bound tripped: depth, size, step budget */
	GV_EEVAL,    /* evaluation failed (JMESPath, variable substitution) */
	GV_ENET,     /* network or remote server failure */
	GV_EINTERNAL /* a bug: an invariant did not hold */
};

/*
 * Error detail. `msg` is the human text; `pointer` a JSON pointer into the
 * document the error is about ("" when none); `file`, `line`, `col` the
 * source position when the document came from a file (line 0 = unknown).
 */
struct gv_err {
	enum gv_code code;
	char msg[1024];
	char pointer[512];
	char file[512];
	int line;
	int col;
};

/* Sets err (when non-NULL and still empty) and returns code. printf-style. */
enum gv_code gv_err_set(struct gv_err *err, enum gv_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like gv_err_set, and records a JSON pointer too. */
enum gv_code gv_err_setp(struct gv_err *err, enum gv_code code, const char *pointer,
			 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Prepends context ("policy p: ") to an error already set. */
void gv_err_prefix(struct gv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears err to "no error". */
void gv_err_clear(struct gv_err *err);

/*
 * Formats err as one line into buf (size n):
 *   "file:line:col: /pointer: message"   (parts that are unknown are left out)
 * Returns buf.
 */
const char *gv_err_str(const struct gv_err *err, char *buf, size_t n);

/* Allocation that never returns NULL (aborts on exhaustion). */
void *gv_xmalloc(size_t n);
void *gv_xcalloc(size_t nmemb, size_t size);
void *gv_xrealloc(void *p, size_t n);
char *gv_xstrdup(const char *s);
char *gv_xstrndup(const char *s, size_t n);
/* Returns a new string formatted printf-style; caller frees. */
char *gv_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* qsort()/bsearch() comparator of an array of `char *` (or `const char *`): strcmp order. */
int gv_strptr_cmp(const void *a, const void *b);

/*
 * "sha256:" and the 64 lowercase hex digits of a SHA-256 digest (md: 32
 * bytes) into out, NUL-terminated: the form of the digests gavel stamps
 * on its reports.
 */
#define GV_SHA256_TEXT_LEN 72 /* with the NUL */
void gv_sha256_text(const unsigned char *md, char out[GV_SHA256_TEXT_LEN]);

/* Process-wide set-up: jansson allocator and hash seed. Call before threads. */
void gv_init(void);

/*
 * Gives the allocator's free memory back to the system: jemalloc's dirty
 * pages of every arena (when the process runs on jemalloc), the C
 * library's free chunks (malloc_trim). For a long-running process after a
 * burst of work done by threads of their own (a background scan's
 * namespaces): each thread's arena would otherwise keep what the burst
 * freed while others peak, and resident memory add up their peaks.
 * Costs page faults when the memory is used again.
 */
void gv_heap_release(void);

/*
 * Growable buffer. Always NUL-terminated when len > 0 or after any append.
 * Zero-initialise (`struct gv_buf b = {0};`), append, then gv_buf_release()
 * or take ownership of `b.data` with gv_buf_detach().
 *
 * Size cap: with max set (`struct gv_buf b = {.max = N};`) an append that
 * would take len past max bytes is dropped whole and sets `over`, which
 * stays set until gv_buf_reset/_release/_detach; the caller checks it
 * once at the end and reports the bound. max 0: no cap.
 */
struct gv_buf {
	char *data; /* owned */
	size_t len;
	size_t cap;
	size_t max; /* most bytes len may reach; 0 = no cap */
	bool over;  /* an append was dropped for going past max */
};

void gv_buf_add(struct gv_buf *b, const void *data, size_t n);
void gv_buf_adds(struct gv_buf *b, const char *s);
void gv_buf_addc(struct gv_buf *b, char c);
/* Appends v in decimal (as "%zu" would, without printf's cost). */
void gv_buf_addu(struct gv_buf *b, size_t v);
void gv_buf_addf(struct gv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gv_buf_vaddf(struct gv_buf *b, const char *fmt, va_list ap);
void gv_buf_reset(struct gv_buf *b);
/* Returns the string (never NULL, "" when empty); the buffer is emptied and the caller frees. */
char *gv_buf_detach(struct gv_buf *b);
void gv_buf_release(struct gv_buf *b);
/* Returns the content as a C string ("" when empty), still owned by b. */
const char *gv_buf_str(const struct gv_buf *b);

/*
 * Returns a new string: s with every occurrence of `from` (non-empty)
 * replaced by `to`. Caller frees.
 */
char *gv_str_replace_all(const char *s, const char *from, const char *to);

/* Reads a whole file ("-" = stdin). Returns GV_OK and a NUL-terminated *out (caller frees). */
enum gv_code gv_read_file(const char *path, char **out, size_t *len, struct gv_err *err);

#define GV_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
