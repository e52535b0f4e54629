#include "common/gv.h"
#include "common/json.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/banned.h"

static void set_msg(struct gv_err *err, const char *fmt, va_list ap)
{
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

enum gv_code gv_err_set(struct gv_err *err, enum gv_code code, const char *fmt, ...)
{
	va_list ap;

	if (!err || err->code)
		return code;
	err->code = code;
	va_start(ap, fmt);
	set_msg(err, fmt, ap);
	va_end(ap);
	return code;
}

enum gv_code gv_err_setp(struct gv_err *err, enum gv_code code, const char *pointer,
			 const char *fmt, ...)
{
	va_list ap;

	if (!err || err->code)
		return code;
	err->code = code;
	snprintf(err->pointer, sizeof(err->pointer), "%s", pointer ? pointer : "");
	va_start(ap, fmt);
	set_msg(err, fmt, ap);
	va_end(ap);
	return code;
}

void gv_err_prefix(struct gv_err *err, const char *fmt, ...)
{
	char pre[512], old[sizeof(err->msg)];
	va_list ap;

	if (!err || !err->code)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s%s", pre, old);
}

void gv_err_clear(struct gv_err *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

const char *gv_err_str(const struct gv_err *err, char *buf, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	if (err->file[0]) {
		if (err->line > 0)
			off += (size_t)snprintf(buf + off, n - off, "%s:%d:%d: ", err->file,
						err->line, err->col);
		else
			off += (size_t)snprintf(buf + off, n - off, "%s: ", err->file);
	}
	if (off < n && err->pointer[0])
		off += (size_t)snprintf(buf + off, n - off, "%s: ", err->pointer);
	if (off < n)
		snprintf(buf + off, n - off, "%s", err->msg);
	return buf;
}

static void oom(void)
{
	fputs("gavel: out of memory\n", stderr);
	abort();
}

void *gv_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *gv_xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *gv_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom();
	return q;
}

char *gv_xstrdup(const char *s)
{
	return gv_xstrndup(s, strlen(s));
}

char *gv_xstrndup(const char *s, size_t n)
{
	char *p = gv_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *gv_xasprintf(const char *fmt, ...)
{
	struct gv_buf b = {0};
	va_list ap;

	va_start(ap, fmt);
	gv_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	return gv_buf_detach(&b);
}

int gv_strptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void gv_sha256_text(const unsigned char *md, char out[GV_SHA256_TEXT_LEN])
{
	static const char hex[] = "0123456789abcdef";

	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[7 + 2 * i + 1] = hex[md[i] & 15];
	}
	out[7 + 64] = '\0';
}

/* jemalloc's control interface, when the process runs on it (NULL otherwise). */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

void gv_heap_release(void)
{
	if (mallctl) {
		/* "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages */
		mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
		return;
	}
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

void gv_init(void)
{
	json_set_alloc_funcs(gv_json_malloc, gv_json_free); /* common/json.h */
	json_object_seed(0);
}

static void grow(struct gv_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t cap;

	if (need <= b->cap)
		return;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->data = gv_xrealloc(b->data, cap);
	b->cap = cap;
}

/* Whether n more bytes fit under b's cap; sets b->over when not. */
static bool fits(struct gv_buf *b, size_t n)
{
	if (b->max && (n > b->max || b->len > b->max - n)) {
		b->over = true;
		return false;
	}
	return true;
}

void gv_buf_add(struct gv_buf *b, const void *data, size_t n)
{
	if (!fits(b, n))
		return;
	grow(b, n);
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void gv_buf_adds(struct gv_buf *b, const char *s)
{
	gv_buf_add(b, s, strlen(s));
}

void gv_buf_addc(struct gv_buf *b, char c)
{
	gv_buf_add(b, &c, 1);
}

void gv_buf_addu(struct gv_buf *b, size_t v)
{
	char num[24];
	size_t i = sizeof(num);

	do
		num[--i] = (char)('0' + v % 10);
	while ((v /= 10));
	gv_buf_add(b, num + i, sizeof(num) - i);
}

void gv_buf_vaddf(struct gv_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0 || !fits(b, (size_t)n))
		return;
	grow(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void gv_buf_addf(struct gv_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gv_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void gv_buf_reset(struct gv_buf *b)
{
	b->len = 0;
	b->over = false;
	if (b->data)
		b->data[0] = '\0';
}

char *gv_buf_detach(struct gv_buf *b)
{
	char *s = b->data ? b->data : gv_xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	b->over = false;
	return s;
}

void gv_buf_release(struct gv_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->over = false;
}

const char *gv_buf_str(const struct gv_buf *b)
{
	return b->data ? b->data : "";
}

char *gv_str_replace_all(const char *s, const char *from, const char *to)
{
	struct gv_buf b = {0};
	size_t fl = strlen(from);
	const char *p;

	while (fl && (p = strstr(s, from))) {
		gv_buf_add(&b, s, (size_t)(p - s));
		gv_buf_adds(&b, to);
		s = p + fl;
	}
	gv_buf_adds(&b, s);
	return gv_buf_detach(&b);
}

enum gv_code gv_read_file(const char *path, char **out, size_t *len, struct gv_err *err)
{
	struct gv_buf b = {0};
	char chunk[65536];
	FILE *f;
	size_t n;
	bool is_stdin = strcmp(path, "-") == 0;

	f = is_stdin ? stdin : fopen(path, "rb");
	if (!f)
		return gv_err_set(err, errno == ENOENT ? GV_ENOENT : GV_EIO, "%s: %s", path,
				  strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		gv_buf_add(&b, chunk, n);
	if (ferror(f)) {
		if (!is_stdin)
			fclose(f);
		gv_buf_release(&b);
		return gv_err_set(err, GV_EIO, "%s: read error", path);
	}
	if (!is_stdin)
		fclose(f);
	if (len)
		*len = b.len;
	*out = gv_buf_detach(&b);
	return GV_OK;
}
