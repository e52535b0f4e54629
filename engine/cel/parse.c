/*
 * parse.c - CEL lexer and recursive-descent parser (cel-spec langdef.md
 * "Syntax"), macro expansion into comprehension nodes, and the compile-time
 * checks that need no types: unknown functions, macro shapes, reserved
 * identifiers, depth and size limits.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

enum tok {
	T_EOF,
	T_IDENT,
	T_QIDENT, /* `quoted field name` (after a dot) */
	T_INT,	  /* magnitude in u (sign applied by unary minus) */
	T_UINT,
	T_DOUBLE,
	T_STRING, /* decoded into sbuf */
	T_BYTES,
	T_LPAREN,
	T_RPAREN,
	T_LBRACK,
	T_RBRACK,
	T_LBRACE,
	T_RBRACE,
	T_DOT,
	T_COMMA,
	T_COLON,
	T_QUESTION,
	T_PLUS,
	T_MINUS,
	T_STAR,
	T_SLASH,
	T_PERCENT,
	T_NOT,
	T_EQ,
	T_NE,
	T_LT,
	T_LE,
	T_GT,
	T_GE,
	T_AND,
	T_OR,
	T_IN,
	T_TRUE,
	T_FALSE,
	T_NULL
};

struct parser {
	const char *src;
	size_t len, i;
	/* current token */
	enum tok t;
	size_t tpos, tend;
	uint64_t u;
	double d;
	struct gv_buf sbuf;
	bool failed;
	struct cel_parse_error *err;
	struct cel_program *prog;
	int depth;
	unsigned flags;
};

static const char *const reserved[] = {
    "as",  "break", "const",   "continue",  "else",   "for", "function", "if",	 "import",
    "let", "loop",  "package", "namespace", "return", "var", "void",	 "while"};

static bool is_reserved(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < GV_ARRAY_LEN(reserved); i++)
		if (strlen(reserved[i]) == n && memcmp(reserved[i], s, n) == 0)
			return true;
	return false;
}

static void fail(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct parser *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	size_t ls, le, k;
	int line = 1, col = 1;
	struct gv_buf b = {0};

	if (p->failed)
		return;
	p->failed = true;
	if (!p->err)
		return;
	if (pos > p->len)
		pos = p->len;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	ls = 0;
	for (k = 0; k < pos; k++) {
		if (p->src[k] == '\n') {
			line++;
			col = 1;
			ls = k + 1;
		} else if (((unsigned char)p->src[k] & 0xC0) != 0x80) {
			col++;
		}
	}
	for (le = ls; le < p->len && p->src[le] != '\n'; le++)
		;
	p->err->line = line;
	p->err->col = col;
	gv_buf_adds(&b, " | ");
	gv_buf_add(&b, p->src + ls, le - ls);
	gv_buf_adds(&b, "\n | ");
	for (k = 1; k < (size_t)col; k++)
		gv_buf_addc(&b, '.');
	gv_buf_addc(&b, '^');
	snprintf(p->err->caret, sizeof(p->err->caret), "%s", gv_buf_str(&b));
	gv_buf_release(&b);
}

/* ---- lexer ---- */

static bool is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void put_utf8(struct gv_buf *b, uint32_t c)
{
	char o[4];

	if (c < 0x80) {
		o[0] = (char)c;
		gv_buf_add(b, o, 1);
	} else if (c < 0x800) {
		o[0] = (char)(0xC0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3F));
		gv_buf_add(b, o, 2);
	} else if (c < 0x10000) {
		o[0] = (char)(0xE0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		gv_buf_add(b, o, 3);
	} else {
		o[0] = (char)(0xF0 | (c >> 18));
		o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
		o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
		o[3] = (char)(0x80 | (c & 0x3F));
		gv_buf_add(b, o, 4);
	}
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t c;
	size_t k, l;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xE0) == 0xC0)
		l = 2, c = s[0] & 0x1F;
	else if ((s[0] & 0xF0) == 0xE0)
		l = 3, c = s[0] & 0x0F;
	else if ((s[0] & 0xF8) == 0xF0)
		l = 4, c = s[0] & 0x07;
	else
		return 0;
	if (l > n)
		return 0;
	for (k = 1; k < l; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[k] & 0x3F);
	}
	if ((l == 2 && c < 0x80) || (l == 3 && c < 0x800) || (l == 4 && c < 0x10000) ||
	    c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	return l;
}

static void lex_string(struct parser *p, bool raw, bool bytes)
{
	char q = p->src[p->i];
	bool triple = p->i + 2 < p->len && p->src[p->i + 1] == q && p->src[p->i + 2] == q;
	size_t start = p->tpos;

	gv_buf_reset(&p->sbuf);
	p->i += triple ? 3 : 1;
	for (;;) {
		unsigned char c;

		if (p->i >= p->len) {
			fail(p, start, "Syntax error: unterminated string literal");
			return;
		}
		c = (unsigned char)p->src[p->i];
		if (c == (unsigned char)q) {
			if (!triple) {
				p->i++;
				break;
			}
			if (p->i + 2 < p->len && p->src[p->i + 1] == q && p->src[p->i + 2] == q) {
				p->i += 3;
				break;
			}
		}
		if (!triple && (c == '\n' || c == '\r')) {
			fail(p, p->i, "Syntax error: newline in string literal");
			return;
		}
		if (c == '\\' && !raw) {
			int e;
			uint32_t cp = 0;
			int k, nd;

			if (p->i + 1 >= p->len) {
				fail(p, p->i, "Syntax error: unterminated string literal");
				return;
			}
			e = p->src[p->i + 1];
			p->i += 2;
			switch (e) {
			case 'a':
				gv_buf_addc(&p->sbuf, '\a');
				continue;
			case 'b':
				gv_buf_addc(&p->sbuf, '\b');
				continue;
			case 'f':
				gv_buf_addc(&p->sbuf, '\f');
				continue;
			case 'n':
				gv_buf_addc(&p->sbuf, '\n');
				continue;
			case 'r':
				gv_buf_addc(&p->sbuf, '\r');
				continue;
			case 't':
				gv_buf_addc(&p->sbuf, '\t');
				continue;
			case 'v':
				gv_buf_addc(&p->sbuf, '\v');
				continue;
			case '\\':
			case '\'':
			case '"':
			case '`':
			case '?':
				gv_buf_addc(&p->sbuf, (char)e);
				continue;
			case 'x':
			case 'X':
			case 'u':
			case 'U':
				nd = (e == 'x' || e == 'X') ? 2 : e == 'u' ? 4 : 8;
				if (bytes && (e == 'u' || e == 'U')) {
					fail(p, p->i - 2,
					     "Syntax error: \\%c escape in bytes literal", e);
					return;
				}
				for (k = 0; k < nd; k++) {
					int h = p->i < p->len ? hexval(p->src[p->i]) : -1;

					if (h < 0) {
						fail(p, p->i,
						     "Syntax error: invalid escape sequence");
						return;
					}
					cp = cp * 16 + (uint32_t)h;
					p->i++;
				}
				break;
			case '0':
			case '1':
			case '2':
			case '3':
				cp = (uint32_t)(e - '0');
				for (k = 0; k < 2; k++) {
					if (p->i >= p->len || p->src[p->i] < '0' ||
					    p->src[p->i] > '7') {
						fail(p, p->i, "Syntax error: invalid octal escape");
						return;
					}
					cp = cp * 8 + (uint32_t)(p->src[p->i] - '0');
					p->i++;
				}
				break;
			default:
				fail(p, p->i - 2, "Syntax error: invalid escape sequence '\\%c'",
				     e);
				return;
			}
			if (bytes && cp < 256) {
				gv_buf_addc(&p->sbuf, (char)cp);
			} else {
				if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
					fail(p, p->i, "Syntax error: invalid code point in escape");
					return;
				}
				put_utf8(&p->sbuf, cp);
			}
			continue;
		}
		if (c == '\r' && triple) {
			/* a CR LF or lone CR line end in the source reads as LF */
			gv_buf_addc(&p->sbuf, '\n');
			p->i++;
			if (p->i < p->len && p->src[p->i] == '\n')
				p->i++;
			continue;
		}
		gv_buf_addc(&p->sbuf, (char)c);
		p->i++;
	}
	if (!bytes) {
		size_t k = 0;
		const unsigned char *s = (const unsigned char *)gv_buf_str(&p->sbuf);

		while (k < p->sbuf.len) {
			size_t l = utf8_len(s + k, p->sbuf.len - k);

			if (!l) {
				fail(p, start, "Syntax error: invalid UTF-8 in string literal");
				return;
			}
			k += l;
		}
	}
	p->t = bytes ? T_BYTES : T_STRING;
}

static void lex_number(struct parser *p)
{
	size_t s = p->i;
	bool isdouble = false;

	if (p->src[p->i] == '0' && p->i + 1 < p->len &&
	    (p->src[p->i + 1] == 'x' || p->src[p->i + 1] == 'X')) {
		uint64_t v = 0;
		bool over = false;

		p->i += 2;
		if (p->i >= p->len || hexval(p->src[p->i]) < 0) {
			fail(p, s, "Syntax error: invalid hex literal");
			return;
		}
		while (p->i < p->len && hexval(p->src[p->i]) >= 0) {
			if (v > UINT64_MAX / 16)
				over = true;
			v = v * 16 + (uint64_t)hexval(p->src[p->i]);
			p->i++;
		}
		p->u = v;
		p->t = T_INT;
		if (p->i < p->len && (p->src[p->i] == 'u' || p->src[p->i] == 'U')) {
			p->i++;
			p->t = T_UINT;
		}
		if (over)
			fail(p, s, "invalid %s literal", p->t == T_UINT ? "uint" : "int");
		return;
	}
	while (p->i < p->len && is_digit(p->src[p->i]))
		p->i++;
	if (p->i + 1 < p->len && p->src[p->i] == '.' && is_digit(p->src[p->i + 1])) {
		isdouble = true;
		p->i++;
		while (p->i < p->len && is_digit(p->src[p->i]))
			p->i++;
	}
	if (p->i < p->len && (p->src[p->i] == 'e' || p->src[p->i] == 'E')) {
		size_t k = p->i + 1;

		if (k < p->len && (p->src[k] == '+' || p->src[k] == '-'))
			k++;
		if (k < p->len && is_digit(p->src[k])) {
			isdouble = true;
			p->i = k;
			while (p->i < p->len && is_digit(p->src[p->i]))
				p->i++;
		}
	}
	if (isdouble) {
		char tmp[128];
		size_t n = p->i - s;

		if (n >= sizeof(tmp)) {
			fail(p, s, "Syntax error: double literal too long");
			return;
		}
		memcpy(tmp, p->src + s, n);
		tmp[n] = 0;
		p->d = strtod(tmp, NULL);
		p->t = T_DOUBLE;
		return;
	}
	{
		uint64_t v = 0;
		bool over = false;
		size_t k;

		for (k = s; k < p->i; k++) {
			unsigned d = (unsigned)(p->src[k] - '0');

			if (v > (UINT64_MAX - d) / 10)
				over = true;
			else
				v = v * 10 + d;
		}
		p->u = v;
		p->t = T_INT;
		if (p->i < p->len && (p->src[p->i] == 'u' || p->src[p->i] == 'U')) {
			p->i++;
			p->t = T_UINT;
		}
		if (over)
			fail(p, s, "invalid %s literal", p->t == T_UINT ? "uint" : "int");
	}
}

static void next(struct parser *p)
{
	const char *s = p->src;
	char c;

	if (p->failed) {
		p->t = T_EOF;
		return;
	}
	for (;;) {
		while (p->i < p->len && (s[p->i] == ' ' || s[p->i] == '\t' || s[p->i] == '\n' ||
					 s[p->i] == '\r' || s[p->i] == '\f'))
			p->i++;
		if (p->i + 1 < p->len && s[p->i] == '/' && s[p->i + 1] == '/') {
			while (p->i < p->len && s[p->i] != '\n')
				p->i++;
			continue;
		}
		break;
	}
	p->tpos = p->i;
	if (p->i >= p->len) {
		p->t = T_EOF;
		p->tend = p->i;
		return;
	}
	c = s[p->i];
	if (is_ident_start(c)) {
		size_t st = p->i, n;
		bool raw = false, bytes = false;

		/* string prefixes: r R b B and the two-letter combinations */
		while (p->i < p->len && p->i - st < 2 &&
		       (s[p->i] == 'r' || s[p->i] == 'R' || s[p->i] == 'b' || s[p->i] == 'B')) {
			if (s[p->i] == 'r' || s[p->i] == 'R') {
				if (raw)
					break;
				raw = true;
			} else {
				if (bytes)
					break;
				bytes = true;
			}
			p->i++;
			if (p->i < p->len && (s[p->i] == '"' || s[p->i] == '\'')) {
				lex_string(p, raw, bytes);
				p->tend = p->i;
				return;
			}
		}
		p->i = st;
		while (p->i < p->len && (is_ident_start(s[p->i]) || is_digit(s[p->i])))
			p->i++;
		n = p->i - st;
		p->tend = p->i;
		p->t = T_IDENT;
		if (n == 2 && memcmp(s + st, "in", 2) == 0)
			p->t = T_IN;
		else if (n == 4 && memcmp(s + st, "true", 4) == 0)
			p->t = T_TRUE;
		else if (n == 5 && memcmp(s + st, "false", 5) == 0)
			p->t = T_FALSE;
		else if (n == 4 && memcmp(s + st, "null", 4) == 0)
			p->t = T_NULL;
		return;
	}
	if (is_digit(c) || (c == '.' && p->i + 1 < p->len && is_digit(s[p->i + 1]))) {
		lex_number(p);
		p->tend = p->i;
		return;
	}
	if (c == '`') {
		size_t k = p->i + 1;

		while (k < p->len && p->src[k] != '`' && p->src[k] != '\n')
			k++;
		if (k >= p->len || p->src[k] != '`' || k == p->i + 1) {
			fail(p, p->i, "Syntax error: unterminated quoted identifier");
			p->t = T_EOF;
			return;
		}
		p->i = k + 1;
		p->tend = p->i;
		p->t = T_QIDENT;
		return;
	}
	if (c == '"' || c == '\'') {
		lex_string(p, false, false);
		p->tend = p->i;
		return;
	}
	p->i++;
	switch (c) {
	case '(':
		p->t = T_LPAREN;
		break;
	case ')':
		p->t = T_RPAREN;
		break;
	case '[':
		p->t = T_LBRACK;
		break;
	case ']':
		p->t = T_RBRACK;
		break;
	case '{':
		p->t = T_LBRACE;
		break;
	case '}':
		p->t = T_RBRACE;
		break;
	case '.':
		p->t = T_DOT;
		break;
	case ',':
		p->t = T_COMMA;
		break;
	case ':':
		p->t = T_COLON;
		break;
	case '?':
		p->t = T_QUESTION;
		break;
	case '+':
		p->t = T_PLUS;
		break;
	case '-':
		p->t = T_MINUS;
		break;
	case '*':
		p->t = T_STAR;
		break;
	case '/':
		p->t = T_SLASH;
		break;
	case '%':
		p->t = T_PERCENT;
		break;
	case '!':
		p->t = T_NOT;
		if (p->i < p->len && s[p->i] == '=') {
			p->i++;
			p->t = T_NE;
		}
		break;
	case '=':
		if (p->i < p->len && s[p->i] == '=') {
			p->i++;
			p->t = T_EQ;
		} else {
			fail(p, p->tpos, "Syntax error: token recognition error at: '='");
		}
		break;
	case '<':
		p->t = T_LT;
		if (p->i < p->len && s[p->i] == '=') {
			p->i++;
			p->t = T_LE;
		}
		break;
	case '>':
		p->t = T_GT;
		if (p->i < p->len && s[p->i] == '=') {
			p->i++;
			p->t = T_GE;
		}
		break;
	case '&':
		if (p->i < p->len && s[p->i] == '&') {
			p->i++;
			p->t = T_AND;
		} else {
			fail(p, p->tpos, "Syntax error: token recognition error at: '&'");
		}
		break;
	case '|':
		if (p->i < p->len && s[p->i] == '|') {
			p->i++;
			p->t = T_OR;
		} else {
			fail(p, p->tpos, "Syntax error: token recognition error at: '|'");
		}
		break;
	default:
		if (c >= 0x20 && c < 0x7f)
			fail(p, p->tpos, "Syntax error: token recognition error at: '%c'", c);
		else
			fail(p, p->tpos, "Syntax error: token recognition error at byte 0x%02x",
			     (unsigned char)c);
		break;
	}
	if (p->failed)
		p->t = T_EOF;
	p->tend = p->i;
}

/* ---- AST construction ---- */

static struct cel_node *mk(struct parser *p, enum cel_node_kind kind, size_t pos, int n, ...)
{
	struct cel_node *x = cel_arena_alloc(&p->prog->arena, sizeof(*x));
	va_list ap;
	int k;

	memset(x, 0, sizeof(*x));
	x->kind = (uint8_t)kind;
	x->pos = (int)pos;
	x->n = n;
	x->depth = 1;
	if (n) {
		x->a = cel_arena_alloc(&p->prog->arena, sizeof(*x->a) * (size_t)n);
		va_start(ap, n);
		for (k = 0; k < n; k++) {
			x->a[k] = va_arg(ap, struct cel_node *);
			if (x->a[k] && x->a[k]->depth + 1 > x->depth)
				x->depth = x->a[k]->depth + 1;
		}
		va_end(ap);
	}
	if (x->depth > CEL_MAX_DEPTH)
		fail(p, pos, "expression recursion limit exceeded: %d", CEL_MAX_DEPTH);
	return x;
}

/* A node with the children of a growable array (copied). */
static struct cel_node *mkv(struct parser *p, enum cel_node_kind kind, size_t pos,
			    struct cel_node **v, int n)
{
	struct cel_node *x = mk(p, kind, pos, 0);
	int k;

	x->n = n;
	if (n) {
		x->a = cel_arena_alloc(&p->prog->arena, sizeof(*x->a) * (size_t)n);
		for (k = 0; k < n; k++) {
			x->a[k] = v[k];
			if (v[k]->depth + 1 > x->depth)
				x->depth = v[k]->depth + 1;
		}
	}
	if (x->depth > CEL_MAX_DEPTH)
		fail(p, pos, "expression recursion limit exceeded: %d", CEL_MAX_DEPTH);
	return x;
}

static const char *tokstr(struct parser *p)
{
	if (p->t == T_QIDENT)
		return cel_arena_strndup(&p->prog->arena, p->src + p->tpos + 1,
					 p->tend - p->tpos - 2);
	return cel_arena_strndup(&p->prog->arena, p->src + p->tpos, p->tend - p->tpos);
}

static bool expect(struct parser *p, enum tok t, const char *what)
{
	if (p->failed)
		return false;
	if (p->t != t) {
		if (p->t == T_EOF)
			fail(p, p->tpos, "Syntax error: mismatched input '<EOF>' expecting %s",
			     what);
		else
			fail(p, p->tpos, "Syntax error: mismatched input '%.*s' expecting %s",
			     (int)(p->tend - p->tpos), p->src + p->tpos, what);
		return false;
	}
	next(p);
	return true;
}

static struct cel_node *parse_expr(struct parser *p);

static struct cel_node *bad(struct parser *p)
{
	static struct cel_node dummy;

	(void)p;
	return &dummy;
}

/* Parses "expr, expr, ..." up to close; optional elements ("?e") allowed when optmask. */
static int parse_list(struct parser *p, enum tok close, struct cel_node ***out, uint64_t *optmask)
{
	struct cel_node **v = NULL;
	int n = 0, cap = 0;

	while (!p->failed && p->t != close) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			v = gv_xrealloc(v, sizeof(*v) * (size_t)cap);
		}
		if (optmask && p->t == T_QUESTION) {
			if (n < 64)
				*optmask |= (uint64_t)1 << n;
			else
				fail(p, p->tpos,
				     "optional elements past the 64th are not supported");
			next(p);
		}
		v[n++] = parse_expr(p);
		if (p->t != T_COMMA)
			break;
		next(p);
	}
	*out = v;
	return n;
}

static bool is_macro_var(const struct cel_node *x)
{
	return x->kind == N_IDENT;
}

/*
 * A literal pattern is compiled with the program, so that a bad one is an
 * error of the compilation (as Kubernetes validates literal regexes) and a
 * good one is compiled once.
 */
static void compile_regex(struct parser *p, struct cel_node *call, const struct cel_node *lit)
{
	char err[512];
	void *re = cel_regex_compile(lit->lit.v.s.p, lit->lit.v.s.n, err, sizeof(err));

	if (!re) {
		fail(p, (size_t)lit->pos, "%s", err);
		return;
	}
	p->prog->regexes =
	    gv_xrealloc(p->prog->regexes, sizeof(*p->prog->regexes) * (p->prog->nregexes + 1));
	p->prog->regexes[p->prog->nregexes++] = re;
	call->aux = re;
}

/*
 * duration('...') and timestamp('...') of a literal are checked when the
 * program is compiled, as Kubernetes' validators do (cel-semantics.md 1.10).
 */
static void check_literal(struct parser *p, const char *fn, const struct cel_node *lit)
{
	int64_t i;
	int32_t ns;

	if (strcmp(fn, "duration") == 0 && !cel_parse_duration(lit->lit.v.s.p, lit->lit.v.s.n, &i))
		fail(p, (size_t)lit->pos, "invalid duration argument: '%.*s'", (int)lit->lit.v.s.n,
		     lit->lit.v.s.p);
	else if (strcmp(fn, "timestamp") == 0 &&
		 !cel_parse_timestamp(lit->lit.v.s.p, lit->lit.v.s.n, &i, &ns))
		fail(p, (size_t)lit->pos, "invalid timestamp argument: '%.*s'", (int)lit->lit.v.s.n,
		     lit->lit.v.s.p);
}

/* Builds a macro or call node for target.name(args) / name(args). */
static struct cel_node *make_call(struct parser *p, size_t pos, struct cel_node *target,
				  const char *name, struct cel_node **args, int nargs)
{
	struct cel_node *x;
	static const struct {
		const char *name;
		int nargs;
		enum cel_macro m;
		int vars;
	} macros[] = {
	    {"all", 2, M_ALL, 1},
	    {"all", 3, M_ALL, 2},
	    {"exists", 2, M_EXISTS, 1},
	    {"exists", 3, M_EXISTS, 2},
	    {"exists_one", 2, M_EXISTS_ONE, 1},
	    {"existsOne", 3, M_EXISTS_ONE, 2},
	    {"exists_one", 3, M_EXISTS_ONE, 2},
	    {"map", 2, M_MAP, 1},
	    {"map", 3, M_MAP, 1},
	    {"filter", 2, M_FILTER, 1},
	    {"transformList", 3, M_TRANSFORM_LIST, 2},
	    {"transformList", 4, M_TRANSFORM_LIST, 2},
	    {"transformMap", 3, M_TRANSFORM_MAP, 2},
	    {"transformMap", 4, M_TRANSFORM_MAP, 2},
	    {"transformMapEntry", 3, M_TRANSFORM_ENTRY, 2},
	    {"transformMapEntry", 4, M_TRANSFORM_ENTRY, 2},
	    {"sortBy", 2, M_SORT_BY, 1},
	    {"optMap", 2, M_OPT_MAP, 1},
	    {"optFlatMap", 2, M_OPT_FLAT_MAP, 1},
	};
	size_t k;
	int i;

	if (!target && strcmp(name, "has") == 0 && nargs == 1) {
		if (args[0]->kind != N_SELECT || args[0]->opt) {
			fail(p, args[0]->pos, "invalid argument to has() macro");
			return bad(p);
		}
		x = mk(p, N_HAS, pos, 1, args[0]->a[0]);
		x->name = args[0]->name;
		return x;
	}
	if (target && target->kind == N_IDENT && strcmp(target->name, "cel") == 0 &&
	    strcmp(name, "bind") == 0 && nargs == 3) {
		if (!is_macro_var(args[0])) {
			fail(p, args[0]->pos,
			     "cel.bind() variable name must be a simple identifier");
			return bad(p);
		}
		x = mk(p, N_BIND, pos, 2, args[1], args[2]);
		x->name = args[0]->name;
		return x;
	}
	if (target) {
		for (k = 0; k < GV_ARRAY_LEN(macros); k++) {
			if (strcmp(macros[k].name, name) != 0 || macros[k].nargs != nargs)
				continue;
			for (i = 0; i < macros[k].vars; i++) {
				if (!is_macro_var(args[i])) {
					fail(p, args[i]->pos,
					     "%s() variable name must be a simple identifier",
					     name);
					return bad(p);
				}
			}
			{
				const char *v1 = args[0]->name;
				const char *v2 = macros[k].vars == 2 ? args[1]->name : NULL;
				int first = macros[k].vars - 1;

				if (v2 && strcmp(v1, v2) == 0) {
					fail(p, args[1]->pos,
					     "%s() iteration variables must differ: '%s'", name,
					     v1);
					return bad(p);
				}
				args[first] = target;
				x = mkv(p, N_COMPR, pos, args + first, nargs - first);
				x->op = (uint8_t)macros[k].m;
				x->name = v1;
				x->name2 = v2;
				return x;
			}
		}
	}
	/* namespaced global functions: math.greatest(...), base64.encode(...) */
	if (target && (target->kind == N_IDENT || target->kind == N_SELECT)) {
		struct gv_buf q = {0};
		const struct cel_node *t = target;
		const char *parts[8];
		int np = 0;

		while (t->kind == N_SELECT && np < 7 && !t->opt) {
			parts[np++] = t->name;
			t = t->a[0];
		}
		if (t->kind == N_IDENT) {
			gv_buf_adds(&q, t->name);
			while (np > 0) {
				gv_buf_addc(&q, '.');
				gv_buf_adds(&q, parts[--np]);
			}
			gv_buf_addc(&q, '.');
			gv_buf_adds(&q, name);
			if (cel_func_known(gv_buf_str(&q))) {
				const struct cel_func *f =
				    cel_func_find(gv_buf_str(&q), false, nargs);

				if (!f) {
					fail(
					    p, pos,
					    "found no matching overload for '%s' with %d arguments",
					    gv_buf_str(&q), nargs);
					gv_buf_release(&q);
					return bad(p);
				}
				x = mkv(p, N_CALL, pos, args, nargs);
				x->name = cel_arena_strndup(&p->prog->arena, gv_buf_str(&q), q.len);
				x->fn = f;
				if (strncmp(x->name, "regex.", 6) == 0 && nargs >= 2 &&
				    args[1]->kind == N_LIT && args[1]->lit.kind == CEL_STRING)
					compile_regex(p, x, args[1]);
				gv_buf_release(&q);
				return x;
			}
		}
		gv_buf_release(&q);
	}
	{
		const struct cel_func *f =
		    cel_func_find(name, target != NULL, nargs + (target != NULL));
		struct cel_node **all;

		if (!f && (p->flags & CEL_COMPILE_NO_CHECK)) {
			/* left to the evaluation, which reports it as an error value */
		} else if (!cel_func_known(name)) {
			fail(p, pos, "undeclared reference to '%s' (in container '')", name);
			return bad(p);
		} else if (!f) {
			fail(p, pos,
			     "found no matching overload for '%s' applied to %d argument%s%s", name,
			     nargs, nargs == 1 ? "" : "s", target ? " and a receiver" : "");
			return bad(p);
		}
		all = gv_xmalloc(sizeof(*all) * (size_t)(nargs + 1));
		if (target)
			all[0] = target;
		for (i = 0; i < nargs; i++)
			all[i + (target != NULL)] = args[i];
		x = mkv(p, N_CALL, pos, all, nargs + (target != NULL));
		free(all);
		x->name = name;
		x->fn = f;
		x->target = target != NULL;
		if (f && !target && nargs == 1 && x->a[0]->kind == N_LIT &&
		    x->a[0]->lit.kind == CEL_STRING)
			check_literal(p, name, x->a[0]);
		if (f &&
		    (strcmp(name, "matches") == 0 || strcmp(name, "find") == 0 ||
		     strcmp(name, "findAll") == 0) &&
		    x->n >= 2 && x->a[1]->kind == N_LIT && x->a[1]->lit.kind == CEL_STRING)
			compile_regex(p, x, x->a[1]);
		return x;
	}
}

static struct cel_node *parse_primary(struct parser *p)
{
	struct cel_node *x;
	size_t pos = p->tpos;

	if (p->failed)
		return bad(p);
	switch (p->t) {
	case T_INT:
		if (p->u > INT64_MAX) {
			fail(p, pos, "invalid int literal");
			return bad(p);
		}
		x = mk(p, N_LIT, pos, 0);
		x->lit = cel_int((int64_t)p->u);
		next(p);
		return x;
	case T_UINT:
		x = mk(p, N_LIT, pos, 0);
		x->lit = cel_uint(p->u);
		next(p);
		return x;
	case T_DOUBLE:
		x = mk(p, N_LIT, pos, 0);
		x->lit = cel_double(p->d);
		next(p);
		return x;
	case T_STRING:
	case T_BYTES: {
		char *s = cel_arena_strndup(&p->prog->arena, gv_buf_str(&p->sbuf), p->sbuf.len);

		x = mk(p, N_LIT, pos, 0);
		x->lit = p->t == T_STRING ? cel_str(s, p->sbuf.len) : cel_bytes(s, p->sbuf.len);
		next(p);
		return x;
	}
	case T_TRUE:
	case T_FALSE:
		x = mk(p, N_LIT, pos, 0);
		x->lit = cel_bool(p->t == T_TRUE);
		next(p);
		return x;
	case T_NULL:
		x = mk(p, N_LIT, pos, 0);
		x->lit = cel_null();
		next(p);
		return x;
	case T_LPAREN:
		next(p);
		x = parse_expr(p);
		expect(p, T_RPAREN, "')'");
		return x;
	case T_LBRACK: {
		struct cel_node **v;
		uint64_t mask = 0;
		int n;

		next(p);
		n = parse_list(p, T_RBRACK, &v, &mask);
		expect(p, T_RBRACK, "']'");
		x = p->failed ? bad(p) : mkv(p, N_LIST, pos, v, n);
		free(v);
		if (!p->failed)
			x->optmask = mask;
		return x;
	}
	case T_LBRACE: {
		struct cel_node **v = NULL;
		uint64_t mask = 0;
		int n = 0, cap = 0;

		next(p);
		while (!p->failed && p->t != T_RBRACE) {
			if (n + 2 > cap) {
				cap = cap ? cap * 2 : 8;
				v = gv_xrealloc(v, sizeof(*v) * (size_t)cap);
			}
			if (p->t == T_QUESTION) {
				if (n / 2 < 64)
					mask |= (uint64_t)1 << (n / 2);
				else
					fail(p, p->tpos,
					     "optional entries past the 64th are not supported");
				next(p);
			}
			v[n++] = parse_expr(p);
			expect(p, T_COLON, "':'");
			v[n++] = parse_expr(p);
			if (p->t != T_COMMA)
				break;
			next(p);
		}
		expect(p, T_RBRACE, "'}'");
		x = p->failed ? bad(p) : mkv(p, N_MAP, pos, v, n);
		free(v);
		if (!p->failed)
			x->optmask = mask;
		return x;
	}
	case T_DOT:
		next(p);
		if (p->t != T_IDENT) {
			expect(p, T_IDENT, "IDENTIFIER");
			return bad(p);
		}
		/* fall through */
	case T_IDENT: {
		const char *name = tokstr(p);
		size_t npos = p->tpos;

		if (is_reserved(name, strlen(name))) {
			fail(p, npos, "reserved identifier: %s", name);
			return bad(p);
		}
		next(p);
		if (p->t == T_LPAREN) {
			struct cel_node **v;
			int n;

			next(p);
			n = parse_list(p, T_RPAREN, &v, NULL);
			expect(p, T_RPAREN, "')'");
			x = p->failed ? bad(p) : make_call(p, npos, NULL, name, v, n);
			free(v);
			return x;
		}
		x = mk(p, N_IDENT, npos, 0);
		x->name = name;
		return x;
	}
	case T_EOF:
		fail(p, pos, "Syntax error: mismatched input '<EOF>' expecting an expression");
		return bad(p);
	default:
		fail(p, pos, "Syntax error: mismatched input '%.*s'", (int)(p->tend - p->tpos),
		     p->src + p->tpos);
		return bad(p);
	}
}

/* The JSON types of protobuf, whose message literals read as JSON-like values. */
static const char *const json_messages[] = {"google.protobuf.Struct", "google.protobuf.ListValue",
					    "google.protobuf.Value"};

/*
 * Type{field: value, ...} after the type name x. Only the JSON types are
 * known (gavel has no protobuf messages): they become a call of
 * cel_json_message with (field name, value) pairs.
 */
static struct cel_node *parse_message(struct parser *p, size_t pos, struct cel_node *x)
{
	struct gv_buf q = {0};
	const struct cel_node *t = x;
	const char *parts[16];
	struct cel_node **v = NULL;
	int np = 0, n = 0, cap = 0;
	size_t k;

	while (t->kind == N_SELECT && np < 15) {
		parts[np++] = t->name;
		t = t->a[0];
	}
	if (t->kind == N_IDENT) {
		gv_buf_adds(&q, t->name);
		while (np > 0) {
			gv_buf_addc(&q, '.');
			gv_buf_adds(&q, parts[--np]);
		}
	}
	for (k = 0; k < GV_ARRAY_LEN(json_messages); k++)
		if (strcmp(gv_buf_str(&q), json_messages[k]) == 0)
			break;
	gv_buf_release(&q);
	if (k == GV_ARRAY_LEN(json_messages)) {
		fail(p, pos,
		     "message literals are not supported: gavel has no protobuf message types");
		return bad(p);
	}
	next(p);
	while (!p->failed && p->t != T_RBRACE) {
		struct cel_node *name;

		if (p->t != T_IDENT) {
			expect(p, T_IDENT, "a field name");
			break;
		}
		if (n + 2 > cap) {
			cap = cap ? cap * 2 : 8;
			v = gv_xrealloc(v, sizeof(*v) * (size_t)cap);
		}
		name = mk(p, N_LIT, p->tpos, 0);
		name->lit = cel_str(tokstr(p), p->tend - p->tpos);
		next(p);
		expect(p, T_COLON, "':'");
		v[n++] = name;
		v[n++] = parse_expr(p);
		if (p->t != T_COMMA)
			break;
		next(p);
	}
	expect(p, T_RBRACE, "'}'");
	x = p->failed ? bad(p) : mkv(p, N_CALL, pos, v, n);
	free(v);
	if (!p->failed) {
		x->name = json_messages[k];
		x->fn = &cel_json_message;
	}
	return x;
}

static struct cel_node *parse_member(struct parser *p)
{
	struct cel_node *x = parse_primary(p);

	while (!p->failed) {
		size_t pos = p->tpos;

		if (p->t == T_DOT) {
			bool opt = false, quoted;
			const char *name;

			next(p);
			if (p->t == T_QUESTION) {
				opt = true;
				next(p);
			}
			/*
			 * after a dot a reserved word is a field name; the keywords
			 * true, false, null and in are not (m['in'] reads those)
			 */
			if (p->t != T_IDENT && p->t != T_QIDENT) {
				fail(p, p->tpos,
				     "Syntax error: mismatched input '%.*s' expecting IDENTIFIER",
				     (int)(p->tend - p->tpos), p->src + p->tpos);
				return bad(p);
			}
			name = tokstr(p);
			pos = p->tpos;
			quoted = p->t == T_QIDENT;
			next(p);
			if (p->t == T_LPAREN && !opt && !quoted) {
				struct cel_node **v;
				int n;

				next(p);
				n = parse_list(p, T_RPAREN, &v, NULL);
				expect(p, T_RPAREN, "')'");
				x = p->failed ? bad(p) : make_call(p, pos, x, name, v, n);
				free(v);
				continue;
			}
			{
				/* the top of a chain of names a.b.c is marked (target) */
				bool chain = !opt && (x->kind == N_IDENT ||
						      (x->kind == N_SELECT && x->target));

				if (x->kind == N_SELECT)
					x->target = false;
				x = mk(p, N_SELECT, pos, 1, x);
				x->target = chain;
			}
			x->name = name;
			x->opt = opt;
		} else if (p->t == T_LBRACK) {
			bool opt = false;
			struct cel_node *i;

			next(p);
			if (p->t == T_QUESTION) {
				opt = true;
				next(p);
			}
			i = parse_expr(p);
			expect(p, T_RBRACK, "']'");
			if (p->failed)
				return bad(p);
			x = mk(p, N_INDEX, pos, 2, x, i);
			x->opt = opt;
		} else if (p->t == T_LBRACE && (x->kind == N_IDENT || x->kind == N_SELECT)) {
			x = parse_message(p, pos, x);
		} else {
			break;
		}
	}
	return x;
}

static struct cel_node *parse_unary(struct parser *p)
{
	size_t pos = p->tpos;
	struct cel_node *x;

	if (p->failed)
		return bad(p);
	if (p->t == T_NOT) {
		next(p);
		x = parse_unary(p);
		if (p->failed)
			return bad(p);
		x = mk(p, N_UNARY, pos, 1, x);
		x->op = OP_NOT;
		return x;
	}
	if (p->t == T_MINUS) {
		next(p);
		if ((p->t == T_INT || p->t == T_DOUBLE) && !p->failed) {
			/* a negative literal: -9223372036854775808 is an int */
			size_t lpos = p->tpos;
			enum tok t = p->t;
			uint64_t u = p->u;
			double d = p->d;

			next(p);
			if (p->t != T_DOT && p->t != T_LBRACK && p->t != T_LBRACE) {
				x = mk(p, N_LIT, pos, 0);
				if (t == T_DOUBLE) {
					x->lit = cel_double(-d);
				} else if (u > (uint64_t)INT64_MAX + 1) {
					fail(p, lpos, "invalid int literal");
					return bad(p);
				} else {
					x->lit = cel_int(
					    u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u);
				}
				return x;
			}
			/* -1.foo(): back up and parse the member expression */
			p->i = lpos;
			next(p);
		}
		x = parse_unary(p);
		if (p->failed)
			return bad(p);
		x = mk(p, N_UNARY, pos, 1, x);
		x->op = OP_NEG;
		return x;
	}
	return parse_member(p);
}

static struct cel_node *binary(struct parser *p, size_t pos, enum cel_op op, struct cel_node *l,
			       struct cel_node *r)
{
	struct cel_node *x;

	if (p->failed)
		return bad(p);
	x = mk(p, N_BINARY, pos, 2, l, r);
	x->op = (uint8_t)op;
	return x;
}

static struct cel_node *parse_mul(struct parser *p)
{
	struct cel_node *x = parse_unary(p);

	while (!p->failed && (p->t == T_STAR || p->t == T_SLASH || p->t == T_PERCENT)) {
		enum cel_op op = p->t == T_STAR ? OP_MUL : p->t == T_SLASH ? OP_DIV : OP_MOD;
		size_t pos = p->tpos;

		next(p);
		x = binary(p, pos, op, x, parse_unary(p));
	}
	return x;
}

static struct cel_node *parse_add(struct parser *p)
{
	struct cel_node *x = parse_mul(p);

	while (!p->failed && (p->t == T_PLUS || p->t == T_MINUS)) {
		enum cel_op op = p->t == T_PLUS ? OP_ADD : OP_SUB;
		size_t pos = p->tpos;

		next(p);
		x = binary(p, pos, op, x, parse_mul(p));
	}
	return x;
}

static struct cel_node *parse_relation(struct parser *p)
{
	struct cel_node *x = parse_add(p);

	while (!p->failed) {
		enum cel_op op;
		size_t pos = p->tpos;

		switch (p->t) {
		case T_EQ:
			op = OP_EQ;
			break;
		case T_NE:
			op = OP_NE;
			break;
		case T_LT:
			op = OP_LT;
			break;
		case T_LE:
			op = OP_LE;
			break;
		case T_GT:
			op = OP_GT;
			break;
		case T_GE:
			op = OP_GE;
			break;
		case T_IN:
			op = OP_IN;
			break;
		default:
			return x;
		}
		next(p);
		x = binary(p, pos, op, x, parse_add(p));
	}
	return x;
}

/*
 * Chains of && and || are built balanced (as cel-go does), so a long chain
 * of conditions does not count as deep nesting.
 */
static struct cel_node *balance(struct parser *p, enum cel_node_kind kind, struct cel_node **v,
				size_t *pos, int lo, int hi)
{
	int mid;

	if (lo == hi)
		return v[lo];
	mid = (lo + hi + 1) / 2;
	return mk(p, kind, pos[mid], 2, balance(p, kind, v, pos, lo, mid - 1),
		  balance(p, kind, v, pos, mid, hi));
}

static struct cel_node *parse_chain(struct parser *p, enum tok t, enum cel_node_kind kind,
				    struct cel_node *(*sub)(struct parser *))
{
	struct cel_node *first = sub(p), **v = NULL, *x;
	size_t *pos = NULL;
	int n = 1, cap = 0;

	if (p->t != t || p->failed)
		return first;
	while (!p->failed && p->t == t) {
		if (n + 1 > cap) {
			cap = cap ? cap * 2 : 8;
			v = gv_xrealloc(v, sizeof(*v) * (size_t)cap);
			pos = gv_xrealloc(pos, sizeof(*pos) * (size_t)cap);
		}
		v[0] = first;
		pos[0] = 0;
		pos[n] = p->tpos;
		next(p);
		v[n++] = sub(p);
	}
	x = p->failed ? bad(p) : balance(p, kind, v, pos, 0, n - 1);
	free(v);
	free(pos);
	return x;
}

static struct cel_node *parse_and(struct parser *p)
{
	return parse_chain(p, T_AND, N_AND, parse_relation);
}

static struct cel_node *parse_or(struct parser *p)
{
	return parse_chain(p, T_OR, N_OR, parse_and);
}

static struct cel_node *parse_expr(struct parser *p)
{
	struct cel_node *c, *a, *b;
	size_t pos;

	if (++p->depth > CEL_MAX_DEPTH) {
		fail(p, p->tpos, "expression recursion limit exceeded: %d", CEL_MAX_DEPTH);
		p->depth--;
		return bad(p);
	}
	c = parse_or(p);
	if (p->t == T_QUESTION && !p->failed) {
		pos = p->tpos;
		next(p);
		a = parse_or(p);
		expect(p, T_COLON, "':'");
		b = parse_expr(p);
		c = p->failed ? bad(p) : mk(p, N_COND, pos, 3, c, a, b);
	}
	p->depth--;
	return c;
}

struct cel_program *cel_compile(const char *src, size_t len, unsigned flags,
				struct cel_parse_error *err)
{
	return cel_compile_decls(src, len, flags, NULL, err);
}

struct cel_program *cel_compile_decls(const char *src, size_t len, unsigned flags,
				      const struct cel_decls *d, struct cel_parse_error *err)
{
	struct parser p = {0};
	struct cel_program *prog = gv_xcalloc(1, sizeof(*prog));

	if (err)
		memset(err, 0, sizeof(*err));
	prog->src = gv_xmalloc(len + 1);
	if (len)
		memcpy(prog->src, src, len);
	prog->src[len] = 0;
	prog->len = len;
	p.src = prog->src;
	p.len = len;
	p.err = err;
	p.prog = prog;
	p.flags = flags;
	if (len > CEL_MAX_EXPR_BYTES) {
		fail(&p, 0, "expression size %zu exceeds the limit of %d bytes", len,
		     CEL_MAX_EXPR_BYTES);
		goto out;
	}
	next(&p);
	prog->root = parse_expr(&p);
	if (!p.failed && p.t != T_EOF)
		fail(&p, p.tpos, "Syntax error: extraneous input '%.*s' expecting <EOF>",
		     (int)(p.tend - p.tpos), p.src + p.tpos);
	if (!p.failed)
		cel_resolve(prog);
	snprintf(prog->type, sizeof(prog->type), "dyn");
	if (!p.failed && !(flags & (CEL_COMPILE_NO_CHECK | CEL_COMPILE_NO_TYPES))) {
		char msg[256];
		int pos = 0;

		if (cel_check(prog, flags, d, prog->type, sizeof(prog->type), &prog->type_known,
			      &pos, msg, sizeof(msg)))
			fail(&p, pos < 0 ? 0 : (size_t)pos, "%s", msg);
	}
	if (!p.failed && !(flags & (CEL_COMPILE_NO_CHECK | CEL_COMPILE_NO_COST))) {
		uint64_t cmin, cmax;

		cel_program_cost(prog, &cmin, &cmax);
		if (cmin > CEL_DEFAULT_COST_LIMIT)
			fail(&p, 0,
			     "estimated cost exceeds budget: at least %llu, the limit is %d "
			     "(every evaluation would be cancelled)",
			     (unsigned long long)cmin, CEL_DEFAULT_COST_LIMIT);
	}
out:
	gv_buf_release(&p.sbuf);
	if (p.failed) {
		cel_program_free(prog);
		return NULL;
	}
	return prog;
}

void cel_program_free(struct cel_program *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nregexes; i++)
		cel_regex_free(p->regexes[i]);
	free(p->regexes);
	cel_arena_release(&p->arena);
	free(p->src);
	free(p);
}

const char *cel_program_type(const struct cel_program *p)
{
	return p->type;
}

bool cel_program_type_known(const struct cel_program *p)
{
	return p->type_known;
}

const char *cel_program_source(const struct cel_program *p)
{
	return p->src;
}

void cel_program_position(const struct cel_program *p, int pos, int *line, int *col)
{
	int k;

	*line = 0;
	*col = 0;
	if (pos < 0 || (size_t)pos > p->len)
		return;
	*line = 1;
	*col = 1;
	for (k = 0; k < pos; k++) {
		if (p->src[k] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)p->src[k] & 0xC0) != 0x80) {
			(*col)++;
		}
	}
}
