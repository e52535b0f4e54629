/*
 * variables.c - {{ }} variable substitution (kyverno-semantics.md 6.1, 6.2).
 *
 * Strings are split once, at policy compile time, into literal parts and
 * compiled JMESPath expressions. Evaluation only runs the expressions.
 *
 * One substitution (vtree_eval, tmpl_eval_string, var_query) is bounded as
 * a whole: its variables, those of the policy and those that inserted text
 * brings in on a rescan, share one JMESPath step budget (a variable that
 * runs it out fails with "shared evaluation step budget (N) exceeded"), and
 * the text it builds is capped (MAX_SUBST_BYTES, MAX_SUBST_VARS). Their
 * steps, and a step per 16 bytes of the text built, are also charged to
 * the rule's budget (var_ctx.budget), which all the substitutions of one
 * rule evaluation share.
 */
#include "engine/engine_int.h"

#include <stdint.h>
#include <string.h>

#include "common/yaml.h"
#include "engine/value.h"
#include "common/banned.h"

#define MAX_PASSES 10
/* Variables in one pass over inserted text (MAX_SUBST_BYTES: engine_int.h). */
#define MAX_SUBST_VARS 1024

struct tmpl_part {
	bool is_expr;
	bool shallow;	      /* {{- expr }}: inserted text is not scanned again */
	char *text;	      /* literal text, or the expression as written (trimmed) */
	struct jp_expr *x;    /* compiled expression */
	struct jp_expr *xdel; /* expression with request.object -> request.oldObject, or NULL */
};

struct tmpl {
	char *src;
	bool whole;    /* the string is exactly one variable: typed result */
	bool dynamic;  /* nested variables: re-scan at evaluation */
	bool unescape; /* holds \{{ to turn into {{ */
	struct tmpl_part *parts;
	size_t nparts;
};

enum vt_type { VT_CONST, VT_STRING, VT_OBJECT, VT_ARRAY };

struct vtree {
	enum vt_type type;
	json_t *value;	  /* VT_CONST */
	struct tmpl *str; /* VT_STRING */
	size_t n;
	struct vtree **items; /* VT_ARRAY, VT_OBJECT values */
	char **keys;	      /* VT_OBJECT raw keys */
	struct tmpl **tkeys;  /* VT_OBJECT key templates (NULL when constant) */
};

static const struct jp_options kyverno_opts = {.kyverno = true, .max_steps = 0};

/* One substitution: the variables it evaluates share a step budget. */
struct subst {
	const struct var_ctx *ctx; /* borrowed */
	struct jp_budget budget;   /* JP default size */
};

/*
 * Finds the next variable at or after *pos, as Kyverno's regex
 * (^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\}) does. Returns true with
 * [*start, *end) covering "{{...}}".
 */
static bool next_var(const char *s, size_t len, size_t from, size_t *start, size_t *end)
{
	for (size_t i = from; i + 1 < len; i++) {
		size_t j;

		if (s[i] != '{' || s[i + 1] != '{')
			continue;
		if (i > 0 && s[i - 1] == '\\')
			continue;
		j = i + 2;
		while (j < len) {
			if (s[j] == '{') {
				size_t k = j + 1;
				while (k < len && s[k] != '{' && s[k] != '}')
					k++;
				if (k >= len || s[k] != '}')
					goto nomatch;
				j = k + 1;
			} else if (s[j] == '}') {
				if (j + 1 < len && s[j + 1] == '}') {
					*start = i;
					*end = j + 2;
					return true;
				}
				goto nomatch;
			} else {
				j++;
			}
		}
	nomatch:;
	}
	return false;
}

bool tmpl_has_vars(const char *s)
{
	size_t a, b;
	return strstr(s, "{{") && next_var(s, strlen(s), 0, &a, &b);
}

static char *trim_dup(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	return gv_xstrndup(s, n);
}

/* True for a shallow variable "{{- expr }}". */
static bool var_shallow(const char *s, size_t start)
{
	return s[start + 2] == '-';
}

/* Expression text of a variable "{{ expr }}" (leading '-' of {{- }} dropped). */
static char *var_expr(const char *s, size_t start, size_t end)
{
	char *e = trim_dup(s + start + 2, end - start - 4);
	if (e[0] == '-') {
		char *t = trim_dup(e + 1, strlen(e + 1));
		free(e);
		return t;
	}
	return e;
}

static enum gv_code compile_expr(const char *expr, struct jp_expr **x, struct jp_expr **xdel,
				 struct gv_err *err)
{
	struct jp_error je;

	*x = jp_compile(expr, &kyverno_opts, &je);
	if (!*x)
		return gv_err_set(err, GV_EINVAL, "invalid variable {{%s}}: %s: %s", expr,
				  jp_error_kind_name(je.kind), je.msg);
	*xdel = NULL;
	if (strstr(expr, "request.object")) {
		char *d = gv_str_replace_all(expr, "request.object", "request.oldObject");
		*xdel = jp_compile(d, &kyverno_opts, &je);
		free(d);
	}
	return GV_OK;
}

static void tmpl_free(struct tmpl *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nparts; i++) {
		free(t->parts[i].text);
		jp_free(t->parts[i].x);
		jp_free(t->parts[i].xdel);
	}
	free(t->parts);
	free(t->src);
	free(t);
}

static void add_part(struct tmpl *t, bool is_expr, char *text)
{
	t->parts = gv_xrealloc(t->parts, (t->nparts + 1) * sizeof(*t->parts));
	memset(&t->parts[t->nparts], 0, sizeof(t->parts[0]));
	t->parts[t->nparts].is_expr = is_expr;
	t->parts[t->nparts].text = text;
	t->nparts++;
}

/* Returns NULL (no error) when s has no variables and no escapes. */
static struct tmpl *tmpl_compile(const char *s, struct gv_err *err)
{
	size_t len = strlen(s), pos = 0, a, b;
	struct tmpl *t;
	bool any = false;

	if (!strstr(s, "{{"))
		return NULL;
	t = gv_xcalloc(1, sizeof(*t));
	t->src = gv_xstrdup(s);
	t->unescape = strstr(s, "\\{{") != NULL;
	while (next_var(s, len, pos, &a, &b)) {
		char *expr = var_expr(s, a, b);
		struct tmpl_part *p;

		any = true;
		if (a > pos)
			add_part(t, false, gv_xstrndup(s + pos, a - pos));
		add_part(t, true, expr);
		p = &t->parts[t->nparts - 1];
		p->shallow = var_shallow(s, a);
		if (compile_expr(expr, &p->x, &p->xdel, err)) {
			tmpl_free(t);
			return NULL;
		}
		pos = b;
	}
	if (!any && !t->unescape) {
		tmpl_free(t);
		return NULL;
	}
	if (pos < len)
		add_part(t, false, gv_xstrdup(s + pos));
	t->whole = t->nparts == 1 && t->parts[0].is_expr;
	/*
	 * Literal text that still holds an unescaped "{{" may form a variable
	 * once inner ones resolve (nested variables): re-scan at evaluation.
	 */
	for (size_t i = 0; i < t->nparts; i++) {
		const char *txt = t->parts[i].text;
		if (t->parts[i].is_expr)
			continue;
		for (const char *q = strstr(txt, "{{"); q; q = strstr(q + 1, "{{"))
			if (q == txt || q[-1] != '\\')
				t->dynamic = true;
	}
	return t;
}

static void unescape_braces(struct gv_buf *b)
{
	size_t w = 0;

	for (size_t r = 0; r < b->len; r++) {
		if (b->data[r] == '\\' && r + 2 < b->len && b->data[r + 1] == '{' &&
		    b->data[r + 2] == '{')
			continue;
		b->data[w++] = b->data[r];
	}
	b->len = w;
	if (b->data)
		b->data[w] = '\0';
}

/*
 * Charges the rule for the size of a result evaluated in a foreach element,
 * a step per RESULT_VALUES_STEP values: JMESPath walks every result it
 * hands over (to check it against JP_MAX_RESULT_VALUES) without charging
 * the walk, a result that shares its parts may hold millions of values
 * after a few steps, and a foreach repeats that for every element of an
 * object's list (reading a 100,000-element list for each of its elements
 * walks 10^10 values). Outside foreach the number of evaluations is the
 * policy's, and the second walk is not worth its cost. NULL, with *e
 * filled, when the rule's budget runs out.
 */
#define RESULT_VALUES_STEP 16

static json_t *charge_result(json_t *v, const struct var_ctx *ctx, struct jp_error *e)
{
	struct jp_budget *rule = ctx->budget;
	unsigned long left;
	size_t n;

	if (!ctx->element || (!json_is_array(v) && !json_is_object(v)))
		return v;
	left = budget_left(rule);
	n = value_count(v, left > SIZE_MAX / RESULT_VALUES_STEP ? SIZE_MAX
								: left * RESULT_VALUES_STEP);
	if (budget_charge(rule, n / RESULT_VALUES_STEP))
		return v;
	json_decref(v);
	if (e) {
		e->kind = JP_ERR_LIMIT;
		e->pos = -1;
		snprintf(e->msg, sizeof(e->msg), RULE_BUDGET_MSG, budget_max(rule));
	}
	return NULL;
}

json_t *var_eval(const struct jp_expr *x, const json_t *data, const struct var_ctx *ctx,
		 struct jp_budget *local, struct jp_error *e)
{
	struct jp_budget *rule = ctx->budget;
	unsigned long before, left;
	json_t *v;

	if (!rule)
		return jp_eval_env(x, data, local, ctx->env, e);
	if (local && budget_left(local) <= budget_left(rule)) {
		before = local->used;
		v = jp_eval_env(x, data, local, ctx->env, e);
		/* local had no more steps than the rule: this cannot overrun it */
		budget_charge(rule, local->used - before);
		return v ? charge_result(v, ctx, e) : NULL;
	}
	/* the rule has fewer steps left: evaluate against its budget */
	before = rule->used;
	left = budget_left(rule);
	v = jp_eval_env(x, data, rule, ctx->env, e);
	if (local)
		budget_charge(local, rule->used - before);
	if (v)
		return charge_result(v, ctx, e);
	/* name the rule's budget when it, not the expression's own, ran out */
	if (e && e->kind == JP_ERR_LIMIT && left < JP_STEPS_DEFAULT && budget_spent(rule) &&
	    strstr(e->msg, "step budget ("))
		snprintf(e->msg, sizeof(e->msg), RULE_BUDGET_MSG, budget_max(rule));
	return v;
}

/* Charges a step per 16 bytes of text built by a substitution to the rule's budget. */
static enum gv_code charge_text(struct subst *st, size_t len, const char *pointer,
				struct gv_err *err)
{
	if (budget_charge(st->ctx->budget, len / 16))
		return GV_OK;
	return gv_err_set(err, GV_ELIMIT,
			  "failed to resolve variables at path %s: " RULE_BUDGET_MSG, pointer,
			  budget_max(st->ctx->budget));
}

static enum gv_code run_expr(const struct jp_expr *x, const char *text, struct subst *st,
			     const char *pointer, json_t **out, struct gv_err *err)
{
	struct jp_error je;
	json_t *v;
	struct gv_err le = {0};

	if (deferred_load(st->ctx->deferred, text, &le))
		return gv_err_set(err, le.code, "failed to resolve %s at path %s: %s", text,
				  pointer, le.msg);
	v = var_eval(x, st->ctx->root, st->ctx, &st->budget, &je);
	if (!v)
		return gv_err_set(err, GV_EEVAL,
				  "failed to resolve %s at path %s: JMESPath query failed: %s",
				  text, pointer, je.msg);
	*out = v;
	return GV_OK;
}

/*
 * Embedded non-string results are JSON as Go's encoding/json writes it (3,
 * not 3.0). False, b unchanged, when b would hold more than MAX_SUBST_BYTES:
 * a value sharing parts (`[@,@]` repeated) is not written whole.
 */
static bool append_value(struct gv_buf *b, const json_t *v)
{
	size_t room = b->len < MAX_SUBST_BYTES ? MAX_SUBST_BYTES - b->len : 0;

	if (!json_is_string(v))
		return jp_dump_max(v, b, JP_DUMP_SORT_KEYS | JP_DUMP_HTML_ESCAPE, room);
	if (json_string_length(v) > room)
		return false;
	gv_buf_add(b, json_string_value(v), json_string_length(v));
	return true;
}

static enum gv_code eval_dynamic(const char *s, struct subst *st, const char *pointer, int depth,
				 json_t **out, struct gv_err *err);
static enum gv_code tmpl_eval(const struct tmpl *t, struct subst *st, const char *pointer,
			      json_t **out, struct gv_err *err);

/*
 * Appends inserted text; a shallow variable's "{{" are escaped so they stay
 * literal. False when the text would pass MAX_SUBST_BYTES.
 */
static bool append_inserted(struct gv_buf *b, const json_t *v, bool shallow)
{
	size_t start = b->len;
	struct gv_buf esc = {0};

	if (!append_value(b, v))
		return false;
	if (!shallow || !strstr(b->data + start, "{{"))
		return true;
	for (size_t i = start; i < b->len; i++) {
		if (b->data[i] == '{' && i + 1 < b->len && b->data[i + 1] == '{')
			gv_buf_addc(&esc, '\\');
		gv_buf_addc(&esc, b->data[i]);
	}
	b->len = start;
	gv_buf_add(b, esc.data, esc.len);
	gv_buf_release(&esc);
	return true;
}

/*
 * Evaluates a compiled template. depth counts the passes over text that
 * substitution produced (nested variables, inserted text), bounded by
 * MAX_PASSES.
 */
static enum gv_code tmpl_eval_depth(const struct tmpl *t, struct subst *st, const char *pointer,
				    int depth, json_t **out, struct gv_err *err)
{
	const struct var_ctx *ctx = st->ctx;
	struct gv_buf b = {0};
	enum gv_code rc;
	bool rescan = t->dynamic;

	if (t->whole) {
		const struct tmpl_part *p = &t->parts[0];
		const struct jp_expr *x = ctx->delete_op && p->xdel ? p->xdel : p->x;
		/* a whole-string variable is replaced by its value: no rescan */
		return run_expr(x, p->text, st, pointer, out, err);
	}
	for (size_t i = 0; i < t->nparts; i++) {
		const struct tmpl_part *p = &t->parts[i];
		json_t *v;
		bool ok;

		if (!p->is_expr) {
			gv_buf_adds(&b, p->text);
			continue;
		}
		rc = run_expr(ctx->delete_op && p->xdel ? p->xdel : p->x, p->text, st, pointer, &v,
			      err);
		if (rc) {
			gv_buf_release(&b);
			return rc;
		}
		ok = append_inserted(&b, v, p->shallow);
		json_decref(v);
		if (!ok || b.len > MAX_SUBST_BYTES) {
			gv_buf_release(&b);
			return gv_err_set(err, GV_ELIMIT,
					  "failed to resolve variables at path %s: the result is "
					  "longer than %d bytes",
					  pointer, MAX_SUBST_BYTES);
		}
	}
	rc = charge_text(st, b.len, pointer, err);
	if (rc) {
		gv_buf_release(&b);
		return rc;
	}
	/* inserted text is scanned again (section 6.2) */
	if (!rescan && tmpl_has_vars(gv_buf_str(&b)))
		rescan = true;
	if (rescan) {
		char *s = gv_buf_detach(&b);
		rc = eval_dynamic(s, st, pointer, depth + 1, out, err);
		free(s);
		return rc;
	}
	if (t->unescape || strstr(gv_buf_str(&b), "\\{{"))
		unescape_braces(&b);
	*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return GV_OK;
}

/* Text produced by substitution: compile it and evaluate it again (bounded). */
static enum gv_code eval_dynamic(const char *s, struct subst *st, const char *pointer, int depth,
				 json_t **out, struct gv_err *err)
{
	struct gv_err local = {0};
	struct tmpl *t;
	enum gv_code rc;

	if (depth > MAX_PASSES)
		return gv_err_set(err, GV_ELIMIT,
				  "failed to resolve variables at path %s: substitution did not "
				  "finish in %d passes",
				  pointer, MAX_PASSES);
	if (strlen(s) > MAX_SUBST_BYTES)
		return gv_err_set(
		    err, GV_ELIMIT,
		    "failed to resolve variables at path %s: the text is longer than %d bytes",
		    pointer, MAX_SUBST_BYTES);
	t = tmpl_compile(s, &local);
	if (!t) {
		if (local.code)
			return gv_err_set(err, GV_EEVAL, "failed to resolve %s at path %s: %s", s,
					  pointer, local.msg);
		*out = json_string(s);
		return GV_OK;
	}
	if (t->nparts > 2 * MAX_SUBST_VARS) {
		tmpl_free(t);
		return gv_err_set(err, GV_ELIMIT,
				  "failed to resolve variables at path %s: more than %d variables",
				  pointer, MAX_SUBST_VARS);
	}
	/* nested: evaluate the inner variables; tmpl_eval_depth re-scans the result */
	t->dynamic = false;
	rc = tmpl_eval_depth(t, st, pointer, depth, out, err);
	tmpl_free(t);
	return rc;
}

static enum gv_code tmpl_eval(const struct tmpl *t, struct subst *st, const char *pointer,
			      json_t **out, struct gv_err *err)
{
	return tmpl_eval_depth(t, st, pointer, 0, out, err);
}

static enum gv_code string_eval(const char *s, struct subst *st, json_t **out, struct gv_err *err)
{
	struct gv_err local = {0};
	struct tmpl *t = tmpl_compile(s, &local);
	enum gv_code rc;

	if (!t) {
		if (local.code)
			return gv_err_set(err, GV_EEVAL, "%s", local.msg);
		*out = json_string(s);
		return GV_OK;
	}
	rc = tmpl_eval(t, st, "", out, err);
	tmpl_free(t);
	return rc;
}

enum gv_code tmpl_eval_string(const char *s, const struct var_ctx *ctx, json_t **out,
			      struct gv_err *err)
{
	struct subst st = {.ctx = ctx};

	return string_eval(s, &st, out, err);
}

struct vtree *vtree_compile(const json_t *tree, struct gv_err *err)
{
	struct vtree *t = gv_xcalloc(1, sizeof(*t));
	bool constant = true;

	if (json_is_string(tree)) {
		t->str = tmpl_compile(json_string_value(tree), err);
		if (err && err->code) {
			free(t);
			return NULL;
		}
		constant = t->str == NULL;
	} else if (json_is_array(tree)) {
		size_t i;
		json_t *c;
		t->n = json_array_size(tree);
		t->items = gv_xcalloc(t->n, sizeof(*t->items));
		json_array_foreach(tree, i, c)
		{
			t->items[i] = vtree_compile(c, err);
			if (!t->items[i]) {
				t->type = VT_ARRAY;
				vtree_free(t);
				return NULL;
			}
			if (t->items[i]->type != VT_CONST)
				constant = false;
		}
		t->type = VT_ARRAY;
	} else if (json_is_object(tree)) {
		const char *k;
		json_t *c;
		size_t i = 0;
		t->n = json_object_size(tree);
		t->items = gv_xcalloc(t->n, sizeof(*t->items));
		t->keys = gv_xcalloc(t->n, sizeof(*t->keys));
		t->tkeys = gv_xcalloc(t->n, sizeof(*t->tkeys));
		t->type = VT_OBJECT;
		json_object_foreach((json_t *)tree, k, c)
		{
			t->keys[i] = gv_xstrdup(k);
			t->tkeys[i] = tmpl_compile(k, err);
			t->items[i] =
			    t->tkeys[i] || !(err && err->code) ? vtree_compile(c, err) : NULL;
			if (!t->items[i]) {
				t->n = i + 1;
				vtree_free(t);
				return NULL;
			}
			if (t->tkeys[i] || t->items[i]->type != VT_CONST)
				constant = false;
			i++;
		}
	}
	if (constant) {
		/* Drop the children: the subtree is a constant. */
		enum vt_type ty = t->type;
		t->type = ty;
		if (t->items) {
			for (size_t i = 0; i < t->n; i++)
				vtree_free(t->items[i]);
			free(t->items);
			t->items = NULL;
		}
		if (t->keys) {
			for (size_t i = 0; i < t->n; i++) {
				free(t->keys[i]);
				tmpl_free(t->tkeys[i]);
			}
			free(t->keys);
			free(t->tkeys);
			t->keys = NULL;
			t->tkeys = NULL;
		}
		t->n = 0;
		t->type = VT_CONST;
		t->value = json_incref((json_t *)tree);
	} else if (json_is_string(tree)) {
		t->type = VT_STRING;
	}
	return t;
}

void vtree_free(struct vtree *t)
{
	if (!t)
		return;
	json_decref(t->value);
	tmpl_free(t->str);
	for (size_t i = 0; i < t->n; i++) {
		if (t->items)
			vtree_free(t->items[i]);
		if (t->keys)
			free(t->keys[i]);
		if (t->tkeys)
			tmpl_free(t->tkeys[i]);
	}
	free(t->items);
	free(t->keys);
	free(t->tkeys);
	free(t);
}

bool vtree_is_const(const struct vtree *t)
{
	return t->type == VT_CONST;
}

const json_t *vtree_const(const struct vtree *t)
{
	return t->value;
}

static enum gv_code vtree_eval_at(const struct vtree *t, struct subst *st, struct gv_buf *ptr,
				  json_t **out, struct gv_err *err)
{
	enum gv_code rc = GV_OK;

	switch (t->type) {
	case VT_CONST:
		*out = json_incref(t->value);
		return GV_OK;
	case VT_STRING:
		return tmpl_eval(t->str, st, gv_buf_str(ptr), out, err);
	case VT_ARRAY: {
		json_t *arr = json_array();
		for (size_t i = 0; i < t->n; i++) {
			size_t base = ptr->len;
			json_t *v = NULL;
			char idx[24];
			snprintf(idx, sizeof(idx), "%zu", i);
			gv_pointer_add(ptr, idx);
			rc = vtree_eval_at(t->items[i], st, ptr, &v, err);
			ptr->len = base;
			if (ptr->data)
				ptr->data[base] = '\0';
			if (rc) {
				json_decref(arr);
				return rc;
			}
			json_array_append_new(arr, v);
		}
		*out = arr;
		return GV_OK;
	}
	case VT_OBJECT: {
		json_t *obj = json_object();
		for (size_t i = 0; i < t->n; i++) {
			size_t base = ptr->len;
			json_t *v = NULL, *k = NULL;
			gv_pointer_add(ptr, t->keys[i]);
			if (t->tkeys[i]) {
				rc = tmpl_eval(t->tkeys[i], st, gv_buf_str(ptr), &k, err);
				if (!rc && !json_is_string(k)) {
					struct gv_buf kb = {0};
					if (append_value(&kb, k)) {
						json_decref(k);
						k = json_stringn(gv_buf_str(&kb), kb.len);
						rc = charge_text(st, kb.len, gv_buf_str(ptr), err);
					} else {
						rc = gv_err_set(err, GV_ELIMIT,
								"failed to resolve variables at "
								"path %s: the result is longer "
								"than %d bytes",
								gv_buf_str(ptr), MAX_SUBST_BYTES);
					}
					gv_buf_release(&kb);
				}
			}
			if (!rc)
				rc = vtree_eval_at(t->items[i], st, ptr, &v, err);
			ptr->len = base;
			if (ptr->data)
				ptr->data[base] = '\0';
			if (rc) {
				json_decref(k);
				json_decref(obj);
				return rc;
			}
			json_object_set_new(obj, k ? json_string_value(k) : t->keys[i], v);
			json_decref(k);
		}
		*out = obj;
		return GV_OK;
	}
	}
	return GV_EINTERNAL;
}

enum gv_code vtree_eval(const struct vtree *t, const struct var_ctx *ctx, json_t **out,
			struct gv_err *err)
{
	struct gv_buf ptr = {0};
	struct subst st = {.ctx = ctx};
	enum gv_code rc = vtree_eval_at(t, &st, &ptr, out, err);

	gv_buf_release(&ptr);
	return rc;
}

enum gv_code var_query(const char *expr, const struct var_ctx *ctx, json_t **out,
		       struct jp_error *jerr, struct gv_err *err)
{
	json_t *sub = NULL;
	const char *src = expr;
	char *del = NULL;
	struct subst st = {.ctx = ctx};
	struct jp_expr *x;
	enum gv_code rc = GV_OK;

	jerr->kind = JP_ERR_NONE;
	jerr->msg[0] = '\0';
	if (tmpl_has_vars(expr)) {
		rc = string_eval(expr, &st, &sub, err);
		if (rc)
			return rc;
		if (!json_is_string(sub)) {
			*out = sub;
			return GV_OK;
		}
		src = json_string_value(sub);
	}
	rc = deferred_load(ctx->deferred, src, err);
	if (rc) {
		snprintf(jerr->msg, sizeof(jerr->msg), "%s", err->msg);
		json_decref(sub);
		return rc;
	}
	if (ctx->delete_op && strstr(src, "request.object")) {
		del = gv_str_replace_all(src, "request.object", "request.oldObject");
		src = del;
	}
	x = jp_compile(src, &kyverno_opts, jerr);
	*out = x ? var_eval(x, ctx->root, ctx, &st.budget, jerr) : NULL;
	if (!*out)
		rc = gv_err_set(err, GV_EEVAL, "%s", jerr->msg);
	jp_free(x);
	free(del);
	json_decref(sub);
	return rc;
}

static void each_in_string(const char *s, void (*fn)(const char *expr, const char *raw, void *ud),
			   void *ud)
{
	size_t len = strlen(s), pos = 0, a, b;

	while (next_var(s, len, pos, &a, &b)) {
		char *e = var_expr(s, a, b);
		char *raw = gv_xstrndup(s + a, b - a);
		fn(e, raw, ud);
		free(raw);
		free(e);
		pos = b;
	}
}

void vars_each(const json_t *tree, void (*fn)(const char *expr, const char *raw, void *ud),
	       void *ud)
{
	if (json_is_string(tree)) {
		if (strstr(json_string_value(tree), "{{"))
			each_in_string(json_string_value(tree), fn, ud);
	} else if (json_is_array(tree)) {
		size_t i;
		json_t *c;
		json_array_foreach(tree, i, c) vars_each(c, fn, ud);
	} else if (json_is_object(tree)) {
		const char *k;
		json_t *c;
		json_object_foreach((json_t *)tree, k, c)
		{
			if (strstr(k, "{{"))
				each_in_string(k, fn, ud);
			vars_each(c, fn, ud);
		}
	}
}

/* Length of the first segment of a dotted path; '.' inside "..." does not split. */
static size_t segment_len(const char *p)
{
	bool quoted = false;
	size_t i;

	for (i = 0; p[i]; i++) {
		if (p[i] == '"')
			quoted = !quoted;
		else if (p[i] == '.' && !quoted)
			break;
	}
	return i;
}

void var_set_path(json_t *obj, const char *dotted, json_t *value)
{
	size_t n = segment_len(dotted);
	char *head;
	json_t *child;

	if (n >= 2 && dotted[0] == '"' && dotted[n - 1] == '"')
		head = gv_xstrndup(dotted + 1, n - 2);
	else
		head = gv_xstrndup(dotted, n);
	if (!dotted[n]) {
		json_object_set_new(obj, head, value);
		free(head);
		return;
	}
	child = json_object_get(obj, head);
	if (!json_is_object(child)) {
		child = json_object();
		json_object_set_new(obj, head, child);
	} else if (child->refcount > 1) {
		/* shared subtree: copy before writing */
		child = json_copy(child);
		json_object_set_new(obj, head, child);
	}
	free(head);
	var_set_path(child, dotted + n + 1, value);
}
