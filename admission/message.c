/*
 * message.c - the text of admission answers: the denial message with its
 * go-yaml-style YAML (kyverno-semantics.md section 8.2), warnings within the
 * API server's limits (k8s-wire.md 1.6) and JSON string literals.
 *
 * common/yaml.c's gv_yaml_dump() is a general dumper (keys in document
 * order, YAML 1.1 quoting, multi-line strings double-quoted); the denial
 * message must match Kyverno's bytes, which come from go-yaml's emitter, so
 * the scalar-style decisions of go-yaml v3 (encode.go stringv, emitterc.go
 * yaml_emitter_analyze_scalar and _select_scalar_style, resolve.go) are
 * restated here for the one shape we need: a map of maps of strings.
 */
#include "admission/admission_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/banned.h"

/* ---- go-yaml's character classes (yaml_private.go), on UTF-8 bytes ---- */

/*
 * Length of the well-formed UTF-8 sequence at v (NUL-terminated), 0 when v
 * does not start one (Go's utf8.DecodeRune rules); NUL itself is 1.
 */
static size_t u8_valid(const unsigned char *v)
{
	if (v[0] < 0x80)
		return 1;
	return gv_utf8_valid((const char *)v, strnlen((const char *)v, 4));
}

static bool is_printable(const unsigned char *b)
{
	return b[0] == 0x0A || (b[0] >= 0x20 && b[0] <= 0x7E) || (b[0] == 0xC2 && b[1] >= 0xA0) ||
	       (b[0] > 0xC2 && b[0] < 0xED) || (b[0] == 0xED && b[1] < 0xA0) || b[0] == 0xEE ||
	       (b[0] == 0xEF && !(b[1] == 0xBB && b[2] == 0xBF) &&
		!(b[1] == 0xBF && (b[2] == 0xBE || b[2] == 0xBF)));
}

static bool is_break(const unsigned char *b)
{
	return b[0] == '\r' || b[0] == '\n' || (b[0] == 0xC2 && b[1] == 0x85) ||
	       (b[0] == 0xE2 && b[1] == 0x80 && (b[2] == 0xA8 || b[2] == 0xA9));
}

static bool is_blank(const unsigned char *b)
{
	return b[0] == ' ' || b[0] == '\t';
}

static bool is_blankz(const unsigned char *b)
{
	return is_blank(b) || is_break(b) || b[0] == 0;
}

static bool is_bom(const unsigned char *b)
{
	return b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF;
}

/* ---- resolve.go: would a plain scalar read back as a non-string? ---- */

static bool all_digits(const char *s, const char *e, int base)
{
	if (s >= e)
		return false;
	for (; s < e; s++) {
		int d = isdigit((unsigned char)*s)    ? *s - '0'
			: isxdigit((unsigned char)*s) ? tolower((unsigned char)*s) - 'a' + 10
						      : 99;
		if (d >= base)
			return false;
	}
	return true;
}

/* Value of digits in base, false on overflow of uint64. */
static bool digits_value(const char *s, const char *e, int base, uint64_t *out)
{
	uint64_t v = 0;

	for (; s < e; s++) {
		int d =
		    isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return true;
}

/* strconv.ParseInt(s, 0, 64) or ParseUint(s, 0, 64) succeeds. */
static bool go_int(const char *s)
{
	const char *p = s, *e = s + strlen(s);
	bool sign = false, neg = false;
	int base = 10;
	uint64_t v;

	if (*p == '+' || *p == '-') {
		sign = true;
		neg = *p == '-';
		p++;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
		base = 2;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
		base = 8;
		p += 2;
	} else if (p[0] == '0' && p[1]) {
		base = 8;
		p += 1;
	}
	if (!all_digits(p, e, base) || !digits_value(p, e, base, &v))
		return false;
	if (!sign)
		return true; /* fits uint64 */
	return neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ and ParseFloat does not overflow. */
static bool yaml_style_float(const char *s)
{
	const char *p = s;
	char *end;
	double d;

	if (*p == '+' || *p == '-')
		p++;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	} else {
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		if (*p == '.') {
			p++;
			while (isdigit((unsigned char)*p))
				p++;
		}
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p)
		return false;
	errno = 0;
	d = strtod(s, &end);
	return !isinf(d);
}

/*
 * strconv.ParseFloat(s, 64) succeeds on s, which starts with '.': go-yaml
 * resolves such a plain scalar with ParseFloat itself (not with the YAML
 * float pattern), and ParseFloat takes underscores between digits, so
 * ".9_9" is 0.99 and ".1_5e1_0" is 1.5e9. One that overflows is a string.
 */
static bool go_dot_float(const char *s)
{
	struct gv_buf plain = {0};
	bool r;

	for (const char *p = s; *p; p++)
		if (*p == '_' &&
		    (p == s || !isdigit((unsigned char)p[-1]) || !isdigit((unsigned char)p[1])))
			return false; /* strconv's underscoreOK */
	for (const char *p = s; *p; p++)
		if (*p != '_')
			gv_buf_addc(&plain, *p);
	r = yaml_style_float(gv_buf_str(&plain));
	gv_buf_release(&plain);
	return r;
}

/*
 * resolve.go's last tries on the underscore-free text: "0b"/"0o" followed by
 * what strconv.ParseInt/ParseUint read in base 2/8, which may carry its own
 * sign ("0b-1", "0o+7"), and "-0b"/"-0o" followed by digits.
 */
static bool go_prefixed_int(const char *plain)
{
	const char *p = plain;
	bool neg = false, sign = false;
	int base;
	uint64_t v;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p[0] != '0' || (p[1] != 'b' && p[1] != 'o'))
		return false;
	base = p[1] == 'b' ? 2 : 8;
	p += 2;
	if (!neg && (*p == '+' || *p == '-')) {
		sign = true;
		neg = *p == '-';
		p++;
	}
	if (!all_digits(p, p + strlen(p), base) || !digits_value(p, p + strlen(p), base, &v))
		return false;
	if (!sign && !neg)
		return true; /* ParseUint */
	return neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX;
}

static int num(const char **p, int min, int max)
{
	int v = 0, n = 0;

	while (isdigit((unsigned char)**p) && n < max) {
		v = v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	return n >= min ? v : -1;
}

static int days_in(int y, int m)
{
	static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100) || y % 400 == 0;

	return m == 2 && leap ? 29 : d[m - 1];
}

/*
 * go-yaml's parseTimestamp: "2006-1-2", "2006-1-2T15:4:5.999999999Z07:00"
 * (also lower-case t) and "2006-1-2 15:4:5.999999999".
 */
static bool go_timestamp(const char *s)
{
	const char *p = s;
	int y, mo, d, h, mi, se;
	char sep;

	for (int i = 0; i < 4; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	if (s[4] != '-')
		return false;
	y = num(&p, 4, 4);
	p++;
	if ((mo = num(&p, 1, 2)) < 1 || mo > 12 || *p++ != '-')
		return false;
	if ((d = num(&p, 1, 2)) < 1 || d > days_in(y, mo))
		return false;
	if (!*p)
		return true;
	sep = *p++;
	if (sep != 'T' && sep != 't' && sep != ' ')
		return false;
	if ((h = num(&p, 1, 2)) < 0 || h > 23 || *p++ != ':')
		return false;
	if ((mi = num(&p, 1, 2)) < 0 || mi > 59 || *p++ != ':')
		return false;
	if ((se = num(&p, 1, 2)) < 0 || se > 59)
		return false;
	if (*p == '.') {
		p++;
		if (num(&p, 1, 9) < 0)
			return false;
	}
	if (sep == ' ')
		return !*p;
	if (*p == 'Z')
		return !p[1];
	if (*p != '+' && *p != '-')
		return false;
	p++;
	if (num(&p, 2, 2) < 0 || *p++ != ':' || num(&p, 2, 2) < 0)
		return false;
	return !*p;
}

/* ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
static bool base60_float(const char *s)
{
	const char *p = s;
	int groups = 0;

	if (*p == '+' || *p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p) || *p == '_')
		p++;
	while (*p == ':') {
		p++;
		if (p[0] >= '0' && p[0] <= '5' && isdigit((unsigned char)p[1]))
			p += 2;
		else if (isdigit((unsigned char)p[0]))
			p += 1;
		else
			return false;
		groups++;
	}
	if (!groups)
		return false;
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p) || *p == '_')
			p++;
	}
	return !*p;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

bool admission_yaml_non_string(const char *s)
{
	static const char *const map[] = {"true",  "True",  "TRUE",  "false", "False", "FALSE",
					  "",	   "~",	    "null",  "Null",  "NULL",  ".nan",
					  ".NaN",  ".NAN",  ".inf",  ".Inf",  ".INF",  "+.inf",
					  "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"};
	static const char *const old_bools[] = {"y", "Y", "yes", "Yes", "YES", "on",  "On",  "ON",
						"n", "N", "no",	 "No",	"NO",  "off", "Off", "OFF"};
	unsigned char c = (unsigned char)s[0];

	if (in_list(s, old_bools, GV_ARRAY_LEN(old_bools)))
		return true;
	if ((c == '+' || c == '-' || isdigit(c)) && strchr(s, ':') && base60_float(s))
		return true;
	if (!c)
		return true; /* null */
	if (!(c == '+' || c == '-' || c == '.' || isdigit(c) || strchr("yYnNtTfFoO~", c)))
		return false;
	if (in_list(s, map, GV_ARRAY_LEN(map)))
		return true;
	if (c == '.')
		return go_dot_float(s);
	if (c == '+' || c == '-' || isdigit(c)) {
		struct gv_buf plain = {0};
		bool r;
		if (go_timestamp(s))
			return true;
		for (const char *p = s; *p; p++)
			if (*p != '_')
				gv_buf_addc(&plain, *p);
		r = go_int(gv_buf_str(&plain)) || yaml_style_float(gv_buf_str(&plain)) ||
		    go_prefixed_int(gv_buf_str(&plain));
		gv_buf_release(&plain);
		return r;
	}
	return false;
}

/* ---- emitterc.go: yaml_emitter_analyze_scalar ---- */

struct scalar_analysis {
	bool multiline;
	bool block_plain_allowed;
	bool single_quoted_allowed;
	bool block_allowed;
};

static void analyze(const char *str, struct scalar_analysis *a)
{
	const unsigned char *v = (const unsigned char *)str;
	size_t len = strlen(str);
	bool block_ind = false, line_breaks = false, special = false, tabs = false;
	bool leading_space = false, leading_break = false, trailing_space = false,
	     trailing_break = false, break_space = false, space_break = false;
	bool preceded_ws = true, followed_ws, prev_space = false, prev_break = false;

	if (!len) {
		a->multiline = false;
		a->block_plain_allowed = true;
		a->single_quoted_allowed = true;
		a->block_allowed = false;
		return;
	}
	if (len >= 3 && ((v[0] == '-' && v[1] == '-' && v[2] == '-') ||
			 (v[0] == '.' && v[1] == '.' && v[2] == '.')))
		block_ind = true;
	for (size_t i = 0, w; i < len; i += w) {
		if (i > 0 && v[i] > 0x20 && v[i] < 0x7F && v[i] != ':' && v[i] != '#') {
			/* printable ASCII of no meaning to YAML here: ends a run of blanks */
			w = 1;
			prev_space = prev_break = preceded_ws = false;
			continue;
		}
		w = gv_utf8_width(v[i]);
		followed_ws = i + w >= len || is_blank(v + i + w);
		if (i == 0) {
			switch (v[i]) {
			case '#':
			case ',':
			case '[':
			case ']':
			case '{':
			case '}':
			case '&':
			case '*':
			case '!':
			case '|':
			case '>':
			case '\'':
			case '"':
			case '%':
			case '@':
			case '`':
				block_ind = true;
				break;
			case '?':
			case ':':
				if (followed_ws)
					block_ind = true;
				break;
			case '-':
				if (followed_ws)
					block_ind = true;
				break;
			}
		} else {
			if (v[i] == ':' && followed_ws)
				block_ind = true;
			if (v[i] == '#' && preceded_ws)
				block_ind = true;
		}
		if (v[i] == '\t')
			tabs = true;
		else if (!is_printable(v + i))
			special = true;
		if (v[i] == ' ') {
			if (i == 0)
				leading_space = true;
			if (i + w == len)
				trailing_space = true;
			if (prev_break)
				break_space = true;
			prev_space = true;
			prev_break = false;
		} else if (is_break(v + i)) {
			line_breaks = true;
			if (i == 0)
				leading_break = true;
			if (i + w == len)
				trailing_break = true;
			if (prev_space)
				space_break = true;
			prev_space = false;
			prev_break = true;
		} else {
			prev_space = false;
			prev_break = false;
		}
		preceded_ws = is_blankz(v + i);
	}
	a->multiline = line_breaks;
	a->block_plain_allowed = true;
	a->single_quoted_allowed = true;
	a->block_allowed = true;
	if (leading_space || leading_break || trailing_space || trailing_break)
		a->block_plain_allowed = false;
	if (trailing_space)
		a->block_allowed = false;
	if (break_space) {
		a->block_plain_allowed = false;
		a->single_quoted_allowed = false;
	}
	if (space_break || tabs || special) {
		a->block_plain_allowed = false;
		a->single_quoted_allowed = false;
	}
	if (space_break || special)
		a->block_allowed = false;
	if (line_breaks)
		a->block_plain_allowed = false;
	if (block_ind)
		a->block_plain_allowed = false;
}

/* ---- writers ---- */

static void write_single(struct gv_buf *out, const char *s)
{
	gv_buf_addc(out, '\'');
	/* in runs up to each quote, which is doubled */
	for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
		gv_buf_add(out, s, (size_t)(q - s) + 1);
		gv_buf_addc(out, '\'');
	}
	gv_buf_adds(out, s);
	gv_buf_addc(out, '\'');
}

static void write_double(struct gv_buf *out, const char *str)
{
	const unsigned char *v = (const unsigned char *)str;
	size_t len = strlen(str);

	gv_buf_addc(out, '"');
	for (size_t i = 0; i < len;) {
		size_t w = gv_utf8_width(v[i]), run = i;
		uint32_t r;
		int digits;
		/* a run of printable ASCII, written at once */
		while (run < len && v[run] >= 0x20 && v[run] <= 0x7E && v[run] != '"' &&
		       v[run] != '\\')
			run++;
		if (run > i) {
			gv_buf_add(out, v + i, run - i);
			i = run;
			continue;
		}
		if (i + w > len)
			w = len - i;
		if (is_printable(v + i) && !is_bom(v + i) && !is_break(v + i) && v[i] != '"' &&
		    v[i] != '\\') {
			gv_buf_add(out, v + i, w);
			i += w;
			continue;
		}
		r = w == 1 ? v[i] : w == 2 ? v[i] & 0x1F : w == 3 ? v[i] & 0x0F : v[i] & 0x07;
		for (size_t k = 1; k < w; k++)
			r = (r << 6) | (v[i + k] & 0x3F);
		i += w;
		gv_buf_addc(out, '\\');
		switch (r) {
		case 0x00:
			gv_buf_addc(out, '0');
			continue;
		case 0x07:
			gv_buf_addc(out, 'a');
			continue;
		case 0x08:
			gv_buf_addc(out, 'b');
			continue;
		case 0x09:
			gv_buf_addc(out, 't');
			continue;
		case 0x0A:
			gv_buf_addc(out, 'n');
			continue;
		case 0x0B:
			gv_buf_addc(out, 'v');
			continue;
		case 0x0C:
			gv_buf_addc(out, 'f');
			continue;
		case 0x0D:
			gv_buf_addc(out, 'r');
			continue;
		case 0x1B:
			gv_buf_addc(out, 'e');
			continue;
		case 0x22:
			gv_buf_addc(out, '"');
			continue;
		case 0x5C:
			gv_buf_addc(out, '\\');
			continue;
		case 0x85:
			gv_buf_addc(out, 'N');
			continue;
		case 0xA0:
			gv_buf_addc(out, '_');
			continue;
		case 0x2028:
			gv_buf_addc(out, 'L');
			continue;
		case 0x2029:
			gv_buf_addc(out, 'P');
			continue;
		}
		if (r <= 0xFF) {
			gv_buf_addc(out, 'x');
			digits = 2;
		} else if (r <= 0xFFFF) {
			gv_buf_addc(out, 'u');
			digits = 4;
		} else {
			gv_buf_addc(out, 'U');
			digits = 8;
		}
		for (int k = (digits - 1) * 4; k >= 0; k -= 4)
			gv_buf_addc(out, "0123456789ABCDEF"[(r >> k) & 0xF]);
	}
	gv_buf_addc(out, '"');
}

/* Literal block: header, then the lines at `indent` spaces; returns true for `|+`. */
static bool write_literal(struct gv_buf *out, const char *str, int indent)
{
	const unsigned char *v = (const unsigned char *)str;
	size_t len = strlen(str), last;
	bool breaks = true, keep = false;

	gv_buf_addc(out, '|');
	if (v[0] == ' ' || is_break(v))
		gv_buf_addc(out, '2'); /* best_indent */
	last = len - 1;
	while (last > 0 && (v[last] & 0xC0) == 0x80)
		last--;
	if (!is_break(v + last)) {
		gv_buf_addc(out, '-');
	} else if (last == 0) {
		gv_buf_addc(out, '+');
		keep = true;
	} else {
		size_t prev = last - 1;
		while (prev > 0 && (v[prev] & 0xC0) == 0x80)
			prev--;
		if (is_break(v + prev)) {
			gv_buf_addc(out, '+');
			keep = true;
		}
	}
	gv_buf_addc(out, '\n');
	for (size_t i = 0; i < len;) {
		size_t w = gv_utf8_width(v[i]);
		if (i + w > len)
			w = len - i;
		if (is_break(v + i)) {
			if (v[i] == '\n')
				gv_buf_addc(out, '\n');
			else
				gv_buf_add(out, v + i, w);
			breaks = true;
		} else {
			if (breaks)
				for (int k = 0; k < indent; k++)
					gv_buf_addc(out, ' ');
			gv_buf_add(out, v + i, w);
			breaks = false;
		}
		i += w;
	}
	if (!breaks)
		gv_buf_addc(out, '\n');
	return keep;
}

/*
 * Writes s; a value ends with its line break. Returns true when it was a
 * keep-chomped literal (`|+`), which go-yaml closes with "..." at the end
 * of the stream.
 */
static bool write_scalar(struct gv_buf *out, const char *s, int indent, bool key)
{
	struct scalar_analysis a;

	analyze(s, &a);
	if (strchr(s, '\n') && !key && a.block_allowed)
		return write_literal(out, s, indent); /* ends with its own line break */
	if (strchr(s, '\n') || (key && a.multiline) || admission_yaml_non_string(s))
		write_double(out, s);
	else if (a.block_plain_allowed)
		gv_buf_adds(out, s);
	else if (a.single_quoted_allowed)
		write_single(out, s);
	else
		write_double(out, s);
	if (!key)
		gv_buf_addc(out, '\n');
	return false;
}

void admission_yaml_scalar(struct gv_buf *out, const char *s, int indent, bool key)
{
	write_scalar(out, s, indent, key);
}

/* ---- sorter.go: keyList.Less ---- */

static size_t runes(const char *s, uint32_t **out)
{
	const unsigned char *v = (const unsigned char *)s;
	size_t len = strlen(s), n = 0;
	uint32_t *r = gv_xcalloc(len + 1, sizeof(*r));

	for (size_t i = 0; i < len;) {
		size_t w = gv_utf8_width(v[i]);
		uint32_t c;
		if (i + w > len)
			w = len - i;
		c = w == 1 ? v[i] : w == 2 ? v[i] & 0x1F : w == 3 ? v[i] & 0x0F : v[i] & 0x07;
		for (size_t k = 1; k < w; k++)
			c = (c << 6) | (v[i + k] & 0x3F);
		r[n++] = c;
		i += w;
	}
	*out = r;
	return n;
}

static bool r_digit(uint32_t c)
{
	return c >= '0' && c <= '9';
}

static bool r_letter(uint32_t c)
{
	/* unicode.IsLetter: ASCII letters, and (approximately) every non-ASCII rune. */
	return (c < 0x80 && isalpha((int)c)) || c >= 0xAA;
}

#define INT64_SIGN ((uint64_t)1 << 63)

static bool key_less(const uint32_t *ar, size_t an_, const uint32_t *br, size_t bn_)
{
	bool digits = false;

	for (size_t i = 0; i < an_ && i < bn_; i++) {
		bool al, bl;
		size_t ai, bi;
		uint64_t an = 0, bn = 0;
		if (ar[i] == br[i]) {
			digits = r_digit(ar[i]);
			continue;
		}
		al = r_letter(ar[i]);
		bl = r_letter(br[i]);
		if (al && bl)
			return ar[i] < br[i];
		if (al || bl)
			return digits ? al : bl;
		if (ar[i] == '0' || br[i] == '0') {
			for (size_t j = i; j-- > 0 && r_digit(ar[j]);) {
				if (ar[j] != '0') {
					an = 1;
					bn = 1;
					break;
				}
			}
		}
		/*
		 * Go adds a digit run up in int64 and wraps around from 19 digits
		 * on. Unsigned arithmetic wraps the same way (modulo 2^64) without
		 * undefined behaviour, and flipping the top bit turns the unsigned
		 * order into the signed one: Go's answer, no signed overflow.
		 */
		for (ai = i; ai < an_ && r_digit(ar[ai]); ai++)
			an = an * 10 + (ar[ai] - '0');
		for (bi = i; bi < bn_ && r_digit(br[bi]); bi++)
			bn = bn * 10 + (br[bi] - '0');
		if (an != bn)
			return (an ^ INT64_SIGN) < (bn ^ INT64_SIGN);
		if (ai != bi)
			return ai < bi;
		return ar[i] < br[i];
	}
	return an_ < bn_;
}

int admission_yaml_key_cmp(const char *a, const char *b)
{
	uint32_t *ar, *br;
	size_t an = runes(a, &ar), bn = runes(b, &br);
	int r = key_less(ar, an, br, bn) ? -1 : key_less(br, bn, ar, an) ? 1 : 0;

	free(ar);
	free(br);
	return r;
}

static int cmp_entry(const void *x, const void *y)
{
	const struct admission_msg_entry *a = x, *b = y;
	int c = admission_yaml_key_cmp(a->policy, b->policy);

	if (!c)
		c = strcmp(a->policy, b->policy);
	if (!c)
		c = admission_yaml_key_cmp(a->rule, b->rule);
	if (!c)
		c = strcmp(a->rule, b->rule);
	return c;
}

void admission_yaml_policies(struct gv_buf *out, struct admission_msg_entry *v, size_t n)
{
	struct admission_msg_entry *sorted;
	size_t m = 0;
	bool keep = false;

	if (!n) {
		gv_buf_adds(out, "{}\n");
		return;
	}
	/* Stable order first (later duplicates win), then sort. */
	sorted = gv_xcalloc(n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < m; j++)
			if (!strcmp(sorted[j].policy, v[i].policy) &&
			    !strcmp(sorted[j].rule, v[i].rule))
				break;
		sorted[j] = v[i];
		if (j == m)
			m++;
	}
	qsort(sorted, m, sizeof(*sorted), cmp_entry);
	for (size_t i = 0; i < m; i++) {
		if (i == 0 || strcmp(sorted[i].policy, sorted[i - 1].policy)) {
			write_scalar(out, sorted[i].policy, 0, true);
			gv_buf_adds(out, ":\n");
		}
		gv_buf_adds(out, "  ");
		write_scalar(out, sorted[i].rule, 2, true);
		gv_buf_adds(out, ": ");
		keep = write_scalar(out, sorted[i].message, 4, false);
	}
	if (keep)
		gv_buf_adds(out, "...\n");
	memcpy(v, sorted, m * sizeof(*v));
	free(sorted);
}

char *admission_denial_message(const char *kind, const char *ns, const char *name,
			       struct admission_msg_entry *v, size_t n)
{
	struct gv_buf b = {0};

	gv_buf_addf(&b, "\n\nresource %s/%s/%s was blocked due to the following policies \n\n",
		    kind ? kind : "", ns ? ns : "", name ? name : "");
	admission_yaml_policies(&b, v, n);
	return gv_buf_detach(&b);
}

/* ---- warnings ---- */

void admission_warnings_add(struct admission_warnings *w, const char *text)
{
	const unsigned char *v = (const unsigned char *)text;
	struct gv_buf b = {0};
	size_t nr = 0, cut = 0;
	char *s;

	for (size_t i = 0; v[i];) {
		size_t wd = u8_valid(v + i);
		if (nr == ADMISSION_WARNING_MAX - 3)
			cut = b.len;
		if (!wd) {
			/* what Go's encoding/json writes for each invalid byte */
			gv_buf_adds(&b, "\xEF\xBF\xBD");
			i += 1;
		} else if (v[i] < 0x20 || v[i] == 0x7F) {
			gv_buf_addc(&b, ' ');
			i += 1;
		} else {
			gv_buf_add(&b, v + i, wd);
			i += wd;
		}
		nr++;
	}
	if (nr > ADMISSION_WARNING_MAX) {
		b.len = cut;
		gv_buf_adds(&b, "...");
		nr = ADMISSION_WARNING_MAX;
	}
	s = gv_buf_detach(&b);
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->v[i], s)) {
			free(s);
			return;
		}
	if (w->total + nr > ADMISSION_WARNINGS_TOTAL) {
		w->dropped++;
		free(s);
		return;
	}
	w->v = gv_xrealloc(w->v, (w->n + 1) * sizeof(*w->v));
	w->v[w->n++] = s;
	w->total += nr;
}

void admission_warnings_release(struct admission_warnings *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	memset(w, 0, sizeof(*w));
}

/* ---- JSON ---- */

void admission_json_str(struct gv_buf *out, const char *s)
{
	const char *run = s;

	gv_buf_addc(out, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *esc = NULL;
		char u[8];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		gv_buf_add(out, run, (size_t)(s - run));
		switch (c) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		default:
			snprintf(u, sizeof(u), "\\u%04x", c);
			esc = u;
		}
		gv_buf_adds(out, esc);
		run = s + 1;
	}
	gv_buf_add(out, run, (size_t)(s - run));
	gv_buf_addc(out, '"');
}
