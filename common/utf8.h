/*
 * utf8.h - UTF-8 decoding and encoding with Go's utf8.DecodeRune rules: no
 * overlong forms, no UTF-16 surrogates (U+D800..U+DFFF), nothing past
 * U+10FFFF; an invalid or truncated sequence is U+FFFD over one byte.
 */
#ifndef GV_COMMON_UTF8_H
#define GV_COMMON_UTF8_H

#include <stddef.h>

#include "common/gv.h"

/*
 * Decodes one code point at s (n bytes left) into *cp and returns its
 * length (>= 1). Invalid, truncated or n == 0: *cp = 0xFFFD, returns 1.
 * Reads no further than the first byte that does not fit, so s may be a
 * NUL-terminated string and n a bound such as strnlen(s, 4).
 */
size_t gv_utf8_decode(const char *s, size_t n, unsigned *cp);

/*
 * Length of the well-formed sequence at s (n bytes left), 0 when s does
 * not start one (n == 0 included). An ASCII byte, NUL included, is 1.
 */
size_t gv_utf8_valid(const char *s, size_t n);

/*
 * The length a sequence starting with lead claims (2, 3 or 4 for a lead
 * byte, 1 for ASCII and for a byte that cannot start a sequence), without
 * checking the bytes after it: for stepping over code points of text
 * already known to be valid, or where an invalid byte is stepped over.
 */
size_t gv_utf8_width(unsigned char lead);

/* Appends cp (at most U+10FFFF) as UTF-8. */
void gv_utf8_put(struct gv_buf *b, unsigned cp);

/* Number of code points of n bytes, an invalid byte counting as one. */
size_t gv_utf8_len(const char *s, size_t n);

#endif
