/*
 * jp_lexer.c - JMESPath lexer: source text to the token array of a
 * struct parser (engine/jp_int.h), with the syntax errors of go-jmespath.
 */
#include "engine/jmespath.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/jp_int.h"
#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* Lexer                                                                */

const char *jp_tok_name(enum tok t)
{
	static const char *names[] = {
	    [T_EOF] = "end of expression",
	    [T_UNQUOTED] = "identifier",
	    [T_QUOTED] = "quoted identifier",
	    [T_LITERAL] = "literal",
	    [T_NUMBER] = "number",
	    [T_DOT] = "'.'",
	    [T_STAR] = "'*'",
	    [T_FLATTEN] = "'[]'",
	    [T_FILTER] = "'[?'",
	    [T_LBRACKET] = "'['",
	    [T_RBRACKET] = "']'",
	    [T_LBRACE] = "'{'",
	    [T_RBRACE] = "'}'",
	    [T_LPAREN] = "'('",
	    [T_RPAREN] = "')'",
	    [T_COMMA] = "','",
	    [T_COLON] = "':'",
	    [T_PIPE] = "'|'",
	    [T_OR] = "'||'",
	    [T_AND] = "'&&'",
	    [T_NOT] = "'!'",
	    [T_EXPREF] = "'&'",
	    [T_CURRENT] = "'@'",
	    [T_EQ] = "'=='",
	    [T_NE] = "'!='",
	    [T_LT] = "'<'",
	    [T_LE] = "'<='",
	    [T_GT] = "'>'",
	    [T_GE] = "'>='",
	};
	return names[t];
}

int jp_syntax_error(struct parser *p, enum jp_error_kind kind, int pos, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->e->kind == JP_ERR_NONE) {
		p->e->kind = kind;
		p->e->pos = pos;
		snprintf(p->e->msg, sizeof(p->e->msg), "%s at position %d", msg, pos);
	}
	return kind;
}

static struct token *tok_push(struct parser *p, enum tok t, int pos)
{
	struct token *k;

	if (p->ntoks == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->toks = gv_xrealloc(p->toks, p->cap * sizeof(*p->toks));
	}
	k = &p->toks[p->ntoks++];
	memset(k, 0, sizeof(*k));
	k->t = t;
	k->pos = pos;
	return k;
}

/* Position just after the closing delimiter `end`, skipping \x escapes; 0 when unterminated. */
static size_t scan_delimited(const char *s, size_t n, size_t i, char end)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n)
			i++;
		else if (s[i] == end)
			return i + 1;
	}
	return 0;
}

static int lex_quoted(struct parser *p, size_t *ip)
{
	size_t i = *ip, end;
	json_t *v;
	json_error_t jerr;
	struct token *k;

	end = scan_delimited(p->src, p->n, i, '"');
	if (!end)
		return jp_syntax_error(p, JP_ERR_SYNTAX, (int)i, "unterminated quoted identifier");
	v = json_loadb(p->src + i, end - i, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!v || !json_is_string(v)) {
		json_decref(v);
		return jp_syntax_error(p, JP_ERR_SYNTAX, (int)i, "invalid quoted identifier");
	}
	k = tok_push(p, T_QUOTED, (int)i);
	k->len = json_string_length(v);
	k->str = gv_xstrndup(json_string_value(v), k->len);
	json_decref(v);
	*ip = end;
	return 0;
}

static int lex_raw_string(struct parser *p, size_t *ip)
{
	size_t i = *ip, end, j;
	struct gv_buf b = {0};
	struct token *k;
	json_t *v;

	end = scan_delimited(p->src, p->n, i, '\'');
	if (!end)
		return jp_syntax_error(p, JP_ERR_SYNTAX, (int)i, "unterminated raw string literal");
	/* Only \' is an escape in a raw string; every other backslash is kept. */
	for (j = i + 1; j < end - 1; j++) {
		if (p->src[j] == '\\' && j + 1 < end - 1 && p->src[j + 1] == '\'') {
			gv_buf_addc(&b, '\'');
			j++;
		} else {
			gv_buf_addc(&b, p->src[j]);
		}
	}
	v = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	if (!v)
		return jp_syntax_error(p, JP_ERR_SYNTAX, (int)i,
				       "invalid UTF-8 in raw string literal");
	k = tok_push(p, T_LITERAL, (int)i);
	k->lit = v;
	*ip = end;
	return 0;
}

static int lex_json_literal(struct parser *p, size_t *ip)
{
	size_t i = *ip, end, j;
	struct gv_buf b = {0};
	json_error_t jerr;
	struct token *k;
	json_t *v;

	end = scan_delimited(p->src, p->n, i, '`');
	if (!end)
		return jp_syntax_error(p, JP_ERR_SYNTAX, (int)i, "unterminated JSON literal");
	for (j = i + 1; j < end - 1; j++) {
		if (p->src[j] == '\\' && j + 1 < end - 1 && p->src[j + 1] == '`') {
			gv_buf_addc(&b, '`');
			j++;
		} else {
			gv_buf_addc(&b, p->src[j]);
		}
	}
	v = json_loadb(gv_buf_str(&b), b.len, JSON_DECODE_ANY, &jerr);
	if (!v) /* integers beyond int64 */
		v = json_loadb(gv_buf_str(&b), b.len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL,
			       &jerr);
	gv_buf_release(&b);
	if (!v)
		return jp_syntax_error(p, JP_ERR_SYNTAX, (int)i, "invalid JSON literal: %s",
				       jerr.text);
	k = tok_push(p, T_LITERAL, (int)i);
	k->lit = v;
	*ip = end;
	return 0;
}

int jp_lex(struct parser *p)
{
	const char *s = p->src;
	size_t n = p->n, i = 0, j;
	int rc;
	struct token *k;

	while (i < n) {
		char c = s[i];
		char d = i + 1 < n ? s[i + 1] : '\0';
		int pos = (int)i;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			i++;
			continue;
		}
		if (isalpha((unsigned char)c) || c == '_') {
			for (j = i + 1; j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'); j++)
				;
			k = tok_push(p, T_UNQUOTED, pos);
			k->str = gv_xstrndup(s + i, j - i);
			k->len = j - i;
			i = j;
			continue;
		}
		if (isdigit((unsigned char)c) || (c == '-' && isdigit((unsigned char)d))) {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(s + i, &end, 10);
			if (errno)
				return jp_syntax_error(p, JP_ERR_SYNTAX, pos,
						       "number out of range");
			k = tok_push(p, T_NUMBER, pos);
			k->num = v;
			i = (size_t)(end - s);
			continue;
		}
		switch (c) {
		case '"':
			rc = lex_quoted(p, &i);
			if (rc)
				return rc;
			continue;
		case '\'':
			rc = lex_raw_string(p, &i);
			if (rc)
				return rc;
			continue;
		case '`':
			rc = lex_json_literal(p, &i);
			if (rc)
				return rc;
			continue;
		case '.':
			tok_push(p, T_DOT, pos);
			break;
		case '*':
			tok_push(p, T_STAR, pos);
			break;
		case '[':
			if (d == ']') {
				tok_push(p, T_FLATTEN, pos);
				i++;
			} else if (d == '?') {
				tok_push(p, T_FILTER, pos);
				i++;
			} else {
				tok_push(p, T_LBRACKET, pos);
			}
			break;
		case ']':
			tok_push(p, T_RBRACKET, pos);
			break;
		case '{':
			tok_push(p, T_LBRACE, pos);
			break;
		case '}':
			tok_push(p, T_RBRACE, pos);
			break;
		case '(':
			tok_push(p, T_LPAREN, pos);
			break;
		case ')':
			tok_push(p, T_RPAREN, pos);
			break;
		case ',':
			tok_push(p, T_COMMA, pos);
			break;
		case ':':
			tok_push(p, T_COLON, pos);
			break;
		case '@':
			tok_push(p, T_CURRENT, pos);
			break;
		case '|':
			if (d == '|') {
				tok_push(p, T_OR, pos);
				i++;
			} else {
				tok_push(p, T_PIPE, pos);
			}
			break;
		case '&':
			if (d == '&') {
				tok_push(p, T_AND, pos);
				i++;
			} else {
				tok_push(p, T_EXPREF, pos);
			}
			break;
		case '!':
			if (d == '=') {
				tok_push(p, T_NE, pos);
				i++;
			} else {
				tok_push(p, T_NOT, pos);
			}
			break;
		case '=':
			if (d != '=')
				return jp_syntax_error(p, JP_ERR_SYNTAX, pos,
						       "unexpected '=' (did you mean '=='?)");
			tok_push(p, T_EQ, pos);
			i++;
			break;
		case '<':
			if (d == '=') {
				tok_push(p, T_LE, pos);
				i++;
			} else {
				tok_push(p, T_LT, pos);
			}
			break;
		case '>':
			if (d == '=') {
				tok_push(p, T_GE, pos);
				i++;
			} else {
				tok_push(p, T_GT, pos);
			}
			break;
		default:
			if ((unsigned char)c >= 0x80)
				return jp_syntax_error(
				    p, JP_ERR_SYNTAX, pos,
				    "unexpected character (quote non-ASCII names)");
			return jp_syntax_error(p, JP_ERR_SYNTAX, pos, "unexpected character '%c'",
					       c);
		}
		i++;
	}
	tok_push(p, T_EOF, (int)n);
	return 0;
}
