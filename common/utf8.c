/*
 * utf8.c - UTF-8 decoding and encoding (common/utf8.h).
 */
#include "common/utf8.h"

#include "common/banned.h"

size_t gv_utf8_decode(const char *s, size_t n, unsigned *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned c, need, min;
	size_t i;

	if (n == 0) {
		*cp = 0xFFFD;
		return 1;
	}
	c = u[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
		c &= 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		c &= 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		c &= 0x07;
		min = 0x10000;
	} else {
		*cp = 0xFFFD;
		return 1;
	}
	for (i = 1; i <= need; i++) {
		if (i >= n || (u[i] & 0xC0) != 0x80) {
			*cp = 0xFFFD;
			return 1;
		}
		c = (c << 6) | (u[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
		*cp = 0xFFFD;
		return 1;
	}
	*cp = c;
	return need + 1;
}

size_t gv_utf8_valid(const char *s, size_t n)
{
	unsigned cp;
	size_t k;

	if (n == 0)
		return 0;
	if ((unsigned char)s[0] < 0x80)
		return 1;
	k = gv_utf8_decode(s, n, &cp);
	return k > 1 ? k : 0;
}

void gv_utf8_put(struct gv_buf *b, unsigned cp)
{
	char t[4];

	if (cp < 0x80) {
		gv_buf_addc(b, (char)cp);
	} else if (cp < 0x800) {
		t[0] = (char)(0xC0 | (cp >> 6));
		t[1] = (char)(0x80 | (cp & 0x3F));
		gv_buf_add(b, t, 2);
	} else if (cp < 0x10000) {
		t[0] = (char)(0xE0 | (cp >> 12));
		t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		t[2] = (char)(0x80 | (cp & 0x3F));
		gv_buf_add(b, t, 3);
	} else {
		t[0] = (char)(0xF0 | (cp >> 18));
		t[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		t[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		t[3] = (char)(0x80 | (cp & 0x3F));
		gv_buf_add(b, t, 4);
	}
}

size_t gv_utf8_len(const char *s, size_t n)
{
	size_t count = 0, i = 0;
	unsigned cp;

	while (i < n) {
		i += gv_utf8_decode(s + i, n - i, &cp);
		count++;
	}
	return count;
}

size_t gv_utf8_width(unsigned char lead)
{
	return lead < 0x80	       ? 1
	       : (lead & 0xE0) == 0xC0 ? 2
	       : (lead & 0xF0) == 0xE0 ? 3
	       : (lead & 0xF8) == 0xF0 ? 4
				       : 1;
}
