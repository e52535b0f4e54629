/*
 * jp_parser.c - JMESPath parser: Pratt parser over the lexer's tokens to
 * a tree compiled once (binding powers of the reference implementation,
 * jmespath.py), and the compiled-expression API of engine/jmespath.h
 * (jp_compile, jp_free, jp_source).
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
/* Tree                                                                 */

static void node_free(struct jp_node *n)
{
	int i;

	if (!n)
		return;
	for (i = 0; i < n->nkids; i++) {
		node_free(n->kids[i]);
		if (n->keys)
			free(n->keys[i]);
	}
	free(n->kids);
	free(n->keys);
	json_decref(n->lit);
	free(n->name);
	if (n->aux && n->aux_free)
		n->aux_free(n->aux);
	free(n);
}

static struct jp_node *node_new(enum jp_node_type type, int pos)
{
	struct jp_node *n = gv_xcalloc(1, sizeof(*n));

	n->type = type;
	n->pos = pos;
	n->height = 1;
	return n;
}

/* Adds kid (taken) to n; fails when the tree grows too tall. */
static int node_add(struct parser *p, struct jp_node *n, struct jp_node *kid)
{
	n->kids = gv_xrealloc(n->kids, ((size_t)n->nkids + 1) * sizeof(*n->kids));
	n->kids[n->nkids++] = kid;
	if (kid && kid->height + 1 > n->height)
		n->height = kid->height + 1;
	if (n->height > JP_MAX_AST_DEPTH)
		return jp_syntax_error(p, JP_ERR_LIMIT, n->pos,
				       "expression nested too deeply (limit %d)", JP_MAX_AST_DEPTH);
	return 0;
}

/* Builds type(a, b[, c]) taking the kids; on error frees everything. */
static int node_make(struct parser *p, enum jp_node_type type, int pos, struct jp_node **out,
		     struct jp_node *a, struct jp_node *b, struct jp_node *c)
{
	struct jp_node *n = node_new(type, pos);
	int rc = 0;

	*out = NULL;
	rc = node_add(p, n, a);
	a = NULL;
	if (!rc && b) {
		rc = node_add(p, n, b);
		b = NULL;
	}
	if (!rc && c) {
		rc = node_add(p, n, c);
		c = NULL;
	}
	node_free(b);
	node_free(c);
	if (rc) {
		node_free(n);
		return rc;
	}
	*out = n;
	return 0;
}

/* left.right where a chain absorbs the new link. */
static int chain_append(struct parser *p, struct jp_node *left, struct jp_node *right,
			struct jp_node **out)
{
	int rc;

	if (left->type == JN_CHAIN) {
		rc = node_add(p, left, right);
		if (rc) {
			node_free(left);
			return rc;
		}
		*out = left;
		return 0;
	}
	return node_make(p, JN_CHAIN, left->pos, out, left, right, NULL);
}

/* ------------------------------------------------------------------ */
/* Parser (Pratt, binding powers of the reference implementation)       */

#define BP_PROJECTION_STOP 10

static int bp_of(enum tok t)
{
	switch (t) {
	case T_PIPE:
		return 1;
	case T_OR:
		return 2;
	case T_AND:
		return 3;
	case T_EQ:
	case T_NE:
	case T_LT:
	case T_LE:
	case T_GT:
	case T_GE:
		return 5;
	case T_FLATTEN:
		return 9;
	case T_STAR:
		return 20;
	case T_FILTER:
		return 21;
	case T_DOT:
		return 40;
	case T_NOT:
		return 45;
	case T_LBRACE:
		return 50;
	case T_LBRACKET:
		return 55;
	case T_LPAREN:
		return 60;
	default:
		return 0;
	}
}

static struct token *cur_tok(struct parser *p)
{
	return &p->toks[p->i];
}

static enum tok cur(struct parser *p)
{
	return p->toks[p->i].t;
}

static enum tok peek(struct parser *p, size_t k)
{
	size_t j = p->i + k;
	return j < p->ntoks ? p->toks[j].t : T_EOF;
}

static void advance(struct parser *p)
{
	if (p->i + 1 < p->ntoks)
		p->i++;
}

static int unexpected(struct parser *p)
{
	struct token *k = cur_tok(p);

	if (k->t == T_EOF)
		return jp_syntax_error(p, JP_ERR_SYNTAX, k->pos, "unexpected end of expression");
	return jp_syntax_error(p, JP_ERR_SYNTAX, k->pos, "unexpected %s", jp_tok_name(k->t));
}

static int expect(struct parser *p, enum tok t)
{
	if (cur(p) != t) {
		struct token *k = cur_tok(p);
		return jp_syntax_error(p, JP_ERR_SYNTAX, k->pos, "expected %s, got %s",
				       jp_tok_name(t), jp_tok_name(k->t));
	}
	advance(p);
	return 0;
}

static int parse_expr(struct parser *p, int rbp, struct jp_node **out);

static struct jp_node *current_node(int pos)
{
	return node_new(JN_CURRENT, pos);
}

static int parse_multi_list(struct parser *p, int pos, struct jp_node **out)
{
	struct jp_node *n = node_new(JN_MULTI_LIST, pos), *kid;
	int rc;

	for (;;) {
		rc = parse_expr(p, 0, &kid);
		if (rc)
			goto fail;
		rc = node_add(p, n, kid);
		if (rc)
			goto fail;
		if (cur(p) == T_RBRACKET)
			break;
		rc = expect(p, T_COMMA);
		if (rc)
			goto fail;
	}
	advance(p);
	*out = n;
	return 0;
fail:
	node_free(n);
	return rc;
}

static int parse_multi_hash(struct parser *p, int pos, struct jp_node **out)
{
	struct jp_node *n = node_new(JN_MULTI_HASH, pos), *kid;
	struct token *k;
	char *key;
	int rc;

	for (;;) {
		k = cur_tok(p);
		if (k->t != T_UNQUOTED && k->t != T_QUOTED) {
			rc = jp_syntax_error(p, JP_ERR_SYNTAX, k->pos,
					     "expected a key name, got %s", jp_tok_name(k->t));
			goto fail;
		}
		key = k->str;
		k->str = NULL;
		advance(p);
		rc = expect(p, T_COLON);
		if (!rc)
			rc = parse_expr(p, 0, &kid);
		if (rc) {
			free(key);
			goto fail;
		}
		n->keys = gv_xrealloc(n->keys, ((size_t)n->nkids + 1) * sizeof(*n->keys));
		n->keys[n->nkids] = key;
		rc = node_add(p, n, kid);
		if (rc)
			goto fail;
		if (cur(p) == T_COMMA) {
			advance(p);
			continue;
		}
		if (cur(p) == T_RBRACE) {
			advance(p);
			break;
		}
		rc = unexpected(p);
		goto fail;
	}
	*out = n;
	return 0;
fail:
	node_free(n);
	return rc;
}

/* [number], [start:stop:step]; the '[' is consumed. */
static int parse_index(struct parser *p, struct jp_node **out)
{
	struct token *k = cur_tok(p);
	struct jp_node *n;
	int part = 0, pos = k->pos;

	if (!(cur(p) == T_COLON || peek(p, 1) == T_COLON)) {
		n = node_new(JN_INDEX, pos);
		n->idx = k->num;
		advance(p);
		if (expect(p, T_RBRACKET)) {
			node_free(n);
			return JP_ERR_SYNTAX;
		}
		*out = n;
		return 0;
	}
	n = node_new(JN_SLICE, pos);
	while (cur(p) != T_RBRACKET) {
		if (cur(p) == T_COLON) {
			part++;
			if (part > 2) {
				node_free(n);
				return jp_syntax_error(p, JP_ERR_SYNTAX, cur_tok(p)->pos,
						       "too many ':' in slice");
			}
			advance(p);
		} else if (cur(p) == T_NUMBER && !n->has[part]) {
			n->slice[part] = cur_tok(p)->num;
			n->has[part] = true;
			advance(p);
		} else {
			node_free(n);
			return unexpected(p);
		}
	}
	advance(p);
	if (n->has[2] && n->slice[2] == 0) {
		node_free(n);
		return jp_syntax_error(p, JP_ERR_INVALID_VALUE, pos, "slice step cannot be 0");
	}
	*out = n;
	return 0;
}

static int parse_dot_rhs(struct parser *p, int rbp, struct jp_node **out)
{
	int pos = cur_tok(p)->pos;

	switch (cur(p)) {
	case T_UNQUOTED:
	case T_QUOTED:
	case T_STAR:
		return parse_expr(p, rbp, out);
	case T_LBRACKET:
		advance(p);
		return parse_multi_list(p, pos, out);
	case T_LBRACE:
		advance(p);
		return parse_multi_hash(p, pos, out);
	default:
		return jp_syntax_error(p, JP_ERR_SYNTAX, pos,
				       "expected an identifier, '*', '[' or '{' after '.', got %s",
				       jp_tok_name(cur(p)));
	}
}

static int parse_projection_rhs(struct parser *p, int rbp, struct jp_node **out)
{
	if (bp_of(cur(p)) < BP_PROJECTION_STOP) {
		*out = current_node(cur_tok(p)->pos);
		return 0;
	}
	switch (cur(p)) {
	case T_LBRACKET:
	case T_FILTER:
		return parse_expr(p, rbp, out);
	case T_DOT:
		advance(p);
		return parse_dot_rhs(p, rbp, out);
	default:
		return unexpected(p);
	}
}

/* left[? cond ] rhs; the '[?' is consumed. */
static int parse_filter(struct parser *p, struct jp_node *left, int pos, struct jp_node **out)
{
	struct jp_node *cond = NULL, *right = NULL;
	int rc;

	rc = parse_expr(p, 0, &cond);
	if (!rc)
		rc = expect(p, T_RBRACKET);
	if (rc)
		goto fail;
	if (cur(p) == T_FLATTEN)
		right = current_node(pos);
	else
		rc = parse_projection_rhs(p, bp_of(T_FILTER), &right);
	if (rc)
		goto fail;
	return node_make(p, JN_FILTER, pos, out, left, right, cond);
fail:
	node_free(left);
	node_free(cond);
	return rc;
}

/* A projection of left over rhs parsed at rbp (left taken). */
static int make_projection(struct parser *p, enum jp_node_type type, struct jp_node *left, int rbp,
			   int pos, struct jp_node **out)
{
	struct jp_node *right;
	int rc;

	rc = parse_projection_rhs(p, rbp, &right);
	if (rc) {
		node_free(left);
		return rc;
	}
	return node_make(p, type, pos, out, left, right, NULL);
}

static int nud(struct parser *p, struct jp_node **out)
{
	struct token *k = cur_tok(p);
	struct jp_node *n, *left, *right;
	int pos = k->pos, rc;

	advance(p);
	switch (k->t) {
	case T_LITERAL:
		n = node_new(JN_LITERAL, pos);
		n->lit = k->lit;
		k->lit = NULL;
		*out = n;
		return 0;
	case T_UNQUOTED:
	case T_QUOTED:
		if (k->t == T_QUOTED && cur(p) == T_LPAREN)
			return jp_syntax_error(p, JP_ERR_SYNTAX, pos,
					       "quoted identifiers cannot name functions");
		n = node_new(JN_FIELD, pos);
		n->name = k->str;
		n->name_len = k->len;
		k->str = NULL;
		*out = n;
		return 0;
	case T_STAR:
		left = current_node(pos);
		if (cur(p) == T_RBRACKET) {
			right = current_node(pos);
			return node_make(p, JN_VALUE_PROJECTION, pos, out, left, right, NULL);
		}
		return make_projection(p, JN_VALUE_PROJECTION, left, bp_of(T_STAR), pos, out);
	case T_FILTER:
		return parse_filter(p, current_node(pos), pos, out);
	case T_LBRACE:
		return parse_multi_hash(p, pos, out);
	case T_LPAREN:
		rc = parse_expr(p, 0, &n);
		if (rc)
			return rc;
		rc = expect(p, T_RPAREN);
		if (rc) {
			node_free(n);
			return rc;
		}
		*out = n;
		return 0;
	case T_FLATTEN:
		rc = node_make(p, JN_FLATTEN, pos, &left, current_node(pos), NULL, NULL);
		if (rc)
			return rc;
		return make_projection(p, JN_PROJECTION, left, bp_of(T_FLATTEN), pos, out);
	case T_NOT:
		rc = parse_expr(p, bp_of(T_NOT), &n);
		if (rc)
			return rc;
		return node_make(p, JN_NOT, pos, out, n, NULL, NULL);
	case T_LBRACKET:
		if (cur(p) == T_NUMBER || cur(p) == T_COLON) {
			rc = parse_index(p, &right);
			if (rc)
				return rc;
			if (right->type == JN_SLICE)
				return make_projection(p, JN_PROJECTION, right, bp_of(T_STAR), pos,
						       out);
			*out = right;
			return 0;
		}
		if (cur(p) == T_STAR && peek(p, 1) == T_RBRACKET) {
			advance(p);
			advance(p);
			return make_projection(p, JN_PROJECTION, current_node(pos), bp_of(T_STAR),
					       pos, out);
		}
		return parse_multi_list(p, pos, out);
	case T_CURRENT:
		*out = current_node(pos);
		return 0;
	case T_EXPREF:
		rc = parse_expr(p, 0, &n);
		if (rc)
			return rc;
		return node_make(p, JN_EXPREF, pos, out, n, NULL, NULL);
	case T_EOF:
		return jp_syntax_error(p, JP_ERR_SYNTAX, pos, "unexpected end of expression");
	default:
		return jp_syntax_error(p, JP_ERR_SYNTAX, pos, "unexpected %s", jp_tok_name(k->t));
	}
}

static int parse_call(struct parser *p, struct jp_node *left, int pos, struct jp_node **out)
{
	struct jp_node *n = NULL, *arg;
	const struct jp_func *fn;
	int rc;

	if (left->type != JN_FIELD || !left->name || strlen(left->name) != left->name_len) {
		rc = jp_syntax_error(p, JP_ERR_SYNTAX, pos, "invalid function name");
		node_free(left);
		return rc;
	}
	n = node_new(JN_FUNCTION, left->pos);
	n->name = left->name;
	n->name_len = left->name_len;
	left->name = NULL;
	node_free(left);
	while (cur(p) != T_RPAREN) {
		rc = parse_expr(p, 0, &arg);
		if (rc)
			goto fail;
		rc = node_add(p, n, arg);
		if (rc)
			goto fail;
		if (cur(p) == T_COMMA) {
			advance(p);
			if (cur(p) == T_RPAREN) {
				rc = unexpected(p);
				goto fail;
			}
		} else if (cur(p) != T_RPAREN) {
			rc = unexpected(p);
			goto fail;
		}
	}
	advance(p);
	fn = jp_func_find(n->name, p->kyverno);
	if (!fn) {
		rc = jp_syntax_error(p, JP_ERR_UNKNOWN_FUNCTION, n->pos, "unknown function: %s()",
				     n->name);
		goto fail;
	}
	if (n->nkids < fn->min_args || (fn->max_args >= 0 && n->nkids > fn->max_args)) {
		if (fn->max_args < 0)
			rc = jp_syntax_error(p, JP_ERR_INVALID_ARITY, n->pos,
					     "%s() takes at least %d argument%s, got %d", fn->name,
					     fn->min_args, fn->min_args == 1 ? "" : "s", n->nkids);
		else if (fn->min_args == fn->max_args)
			rc = jp_syntax_error(p, JP_ERR_INVALID_ARITY, n->pos,
					     "%s() takes %d argument%s, got %d", fn->name,
					     fn->min_args, fn->min_args == 1 ? "" : "s", n->nkids);
		else
			rc = jp_syntax_error(p, JP_ERR_INVALID_ARITY, n->pos,
					     "%s() takes %d to %d arguments, got %d", fn->name,
					     fn->min_args, fn->max_args, n->nkids);
		goto fail;
	}
	n->fn = fn;
	if (fn->prepare)
		fn->prepare(n);
	*out = n;
	return 0;
fail:
	node_free(n);
	return rc;
}

static int led(struct parser *p, struct jp_node *left, struct jp_node **out)
{
	struct token *k = cur_tok(p);
	enum tok t = k->t;
	struct jp_node *right;
	int pos = k->pos, rc;
	enum jp_node_type type;

	advance(p);
	switch (t) {
	case T_DOT:
		if (cur(p) == T_STAR) {
			advance(p);
			return make_projection(p, JN_VALUE_PROJECTION, left, bp_of(T_DOT), pos,
					       out);
		}
		rc = parse_dot_rhs(p, bp_of(T_DOT), &right);
		if (rc)
			goto fail;
		return chain_append(p, left, right, out);
	case T_PIPE:
	case T_OR:
	case T_AND:
		type = t == T_PIPE ? JN_PIPE : t == T_OR ? JN_OR : JN_AND;
		rc = parse_expr(p, bp_of(t), &right);
		if (rc)
			goto fail;
		return node_make(p, type, pos, out, left, right, NULL);
	case T_LPAREN:
		return parse_call(p, left, pos, out);
	case T_FILTER:
		return parse_filter(p, left, pos, out);
	case T_EQ:
	case T_NE:
	case T_LT:
	case T_LE:
	case T_GT:
	case T_GE:
		rc = parse_expr(p, bp_of(t), &right);
		if (rc)
			goto fail;
		rc = node_make(p, JN_CMP, pos, out, left, right, NULL);
		if (!rc)
			(*out)->op = t == T_EQ	 ? JC_EQ
				     : t == T_NE ? JC_NE
				     : t == T_LT ? JC_LT
				     : t == T_LE ? JC_LE
				     : t == T_GT ? JC_GT
						 : JC_GE;
		return rc;
	case T_FLATTEN:
		rc = node_make(p, JN_FLATTEN, pos, &right, left, NULL, NULL);
		if (rc)
			return rc;
		return make_projection(p, JN_PROJECTION, right, bp_of(T_FLATTEN), pos, out);
	case T_LBRACKET:
		if (cur(p) == T_NUMBER || cur(p) == T_COLON) {
			rc = parse_index(p, &right);
			if (rc)
				goto fail;
			if (right->type == JN_SLICE) {
				rc = chain_append(p, left, right, &left);
				if (rc)
					return rc;
				return make_projection(p, JN_PROJECTION, left, bp_of(T_STAR), pos,
						       out);
			}
			return chain_append(p, left, right, out);
		}
		rc = expect(p, T_STAR);
		if (!rc)
			rc = expect(p, T_RBRACKET);
		if (rc)
			goto fail;
		return make_projection(p, JN_PROJECTION, left, bp_of(T_STAR), pos, out);
	default:
		p->i--;
		rc = unexpected(p);
		goto fail;
	}
fail:
	node_free(left);
	return rc;
}

static int parse_expr(struct parser *p, int rbp, struct jp_node **out)
{
	struct jp_node *left;
	int rc;

	if (++p->depth > JP_MAX_AST_DEPTH) {
		p->depth--;
		return jp_syntax_error(p, JP_ERR_LIMIT, cur_tok(p)->pos,
				       "expression nested too deeply (limit %d)", JP_MAX_AST_DEPTH);
	}
	rc = nud(p, &left);
	while (!rc && rbp < bp_of(cur(p)))
		rc = led(p, left, &left);
	p->depth--;
	if (rc)
		return rc;
	*out = left;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Compiled expressions                                                 */

struct jp_expr *jp_compile(const char *src, const struct jp_options *opt, struct jp_error *e)
{
	struct jp_error local;
	struct parser p;
	struct jp_node *root = NULL;
	struct jp_expr *x = NULL;
	size_t i;
	int rc;

	if (!e)
		e = &local;
	memset(e, 0, sizeof(*e));
	e->pos = -1;
	memset(&p, 0, sizeof(p));
	p.src = src;
	p.n = strlen(src);
	p.kyverno = opt && opt->kyverno;
	p.e = e;
	if (p.n > JP_MAX_SRC_LEN) {
		jp_syntax_error(&p, JP_ERR_LIMIT, 0, "expression longer than %u bytes",
				JP_MAX_SRC_LEN);
		goto out;
	}
	rc = jp_lex(&p);
	if (rc)
		goto out;
	rc = parse_expr(&p, 0, &root);
	if (rc)
		goto out;
	if (cur(&p) != T_EOF) {
		unexpected(&p);
		node_free(root);
		root = NULL;
		goto out;
	}
	x = gv_xcalloc(1, sizeof(*x));
	x->src = gv_xstrdup(src);
	x->root = root;
	x->kyverno = p.kyverno;
	x->max_steps = opt && opt->max_steps ? opt->max_steps : JP_DEFAULT_MAX_STEPS;
out:
	for (i = 0; i < p.ntoks; i++) {
		free(p.toks[i].str);
		json_decref(p.toks[i].lit);
	}
	free(p.toks);
	return x;
}

void jp_free(struct jp_expr *x)
{
	if (!x)
		return;
	node_free(x->root);
	free(x->src);
	free(x);
}

const char *jp_source(const struct jp_expr *x)
{
	return x->src;
}
