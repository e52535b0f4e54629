/*
 * evaluate.c - evaluating a policy set against one resource or admission
 * request (kyverno-semantics.md sections 8 and 10), and the reporting
 * matrix (DESIGN.md, section 7.3).
 */
#include "engine/engine_int.h"

#include <string.h>

#include "common/clock.h"
#include "common/yaml.h"
#include "engine/value.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

#define MAX_FOREACH_DEPTH 8

const char *engine_status_name(enum engine_status s)
{
	static const char *const names[] = {"pass", "fail", "warn", "error", "skip"};
	return (unsigned)s < GV_ARRAY_LEN(names) ? names[s] : "unknown";
}

/* Everything about one input that does not change from rule to rule. */
struct eval_state {
	const struct engine_policyset *set;
	const struct engine_input *in;
	enum engine_mode mode;
	const json_t *object; /* new object, or the old one for DELETE */
	const char *group, *version, *kind, *sub;
	char *group_buf, *version_buf;
	const char *name, *namespace;
	const char *operation;
	unsigned op;
	json_t *root; /* the variable context document */
	bool delete_op;
	const struct jp_env *env; /* the hooks' clock and random source, or NULL */
	bool force_create;	  /* old-object re-evaluation: request.operation stays CREATE */
	/* what match and exclude read of object, made once (match_request_init) */
	struct match_request mr;
	/* podSecurity checks already run on the object (pss_evaluate); through a pointer */
	struct pss_memo *pss, pss_store;
};

struct engine_memo {
	struct pss_memo pss;
};

/* Outcome of one rule. */
struct outcome {
	bool none; /* no rule response at all */
	enum engine_status status;
	char *message;
	bool exception;
	char *exceptions;   /* owned: names of the exceptions that made it a skip, "a,b" */
	json_t *properties; /* owned: reportProperties substituted, or NULL */
	json_t *pss_props;  /* owned: a podSecurity fail's properties (pss_evaluate), or NULL */
	bool unsupported;   /* an error because gavel does not evaluate something */
};

/* a b c in a new string: the per-rule messages without a format's cost */
static char *concat3(const char *a, const char *b, const char *c)
{
	size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
	char *s = gv_xmalloc(na + nb + nc + 1);

	memcpy(s, a, na);
	memcpy(s + na, b, nb);
	memcpy(s + na + nb, c, nc + 1);
	return s;
}

static void outcome_set(struct outcome *o, enum engine_status s, char *msg)
{
	o->none = false;
	o->status = s;
	free(o->message);
	o->message = msg;
}

static json_t *request_doc(const struct eval_state *st, const json_t *object,
			   const json_t *old_object, const char *operation)
{
	const struct engine_input *in = st->in;
	json_t *req =
	    json_is_object(in->request) ? json_copy((json_t *)in->request) : json_object();

	json_object_del(req, "object");
	json_object_del(req, "oldObject");
	json_object_set_new(req, "operation", json_string(operation));
	json_object_set(req, "object", object ? (json_t *)object : json_null());
	if (st->mode == ENGINE_ADMISSION)
		json_object_set(req, "oldObject", old_object ? (json_t *)old_object : json_null());
	json_object_set_new(req, "namespace", json_string(st->namespace));
	if (in->user_info && st->mode == ENGINE_ADMISSION)
		json_object_set(req, "userInfo", (json_t *)in->user_info);
	if (in->roles && st->mode == ENGINE_ADMISSION)
		json_object_set(req, "roles", (json_t *)in->roles);
	if (in->cluster_roles && st->mode == ENGINE_ADMISSION)
		json_object_set(req, "clusterRoles", (json_t *)in->cluster_roles);
	return req;
}

static json_t *build_root(const struct eval_state *st, const json_t *object,
			  const json_t *old_object, const char *operation)
{
	json_t *root = json_object();
	const json_t *ui = st->in->user_info;
	json_t *images;

	json_object_set_new(root, "request", request_doc(st, object, old_object, operation));
	if (ui && st->mode == ENGINE_ADMISSION) {
		const char *user = json_string_value(json_object_get(ui, "username"));
		const char *pre = "system:serviceaccount:";
		const char *sa = "", *sans = "";
		char *nsbuf = NULL;
		if (user && !strncmp(user, pre, strlen(pre))) {
			const char *rest = user + strlen(pre);
			const char *colon = strchr(rest, ':');
			if (colon) {
				nsbuf = gv_xstrndup(rest, (size_t)(colon - rest));
				sans = nsbuf;
				sa = colon + 1;
			}
		}
		json_object_set_new(root, "serviceAccountName", json_string(sa));
		json_object_set_new(root, "serviceAccountNamespace", json_string(sans));
		free(nsbuf);
	}
	if (st->set->uses_images) {
		images = images_extract(object ? object : old_object);
		if (images)
			json_object_set_new(root, "images", images);
	}
	return root;
}

static const char *str_or(const char *s, const char *def)
{
	return s ? s : def;
}

static void match_request_init(const struct eval_state *st, const json_t *object,
			       struct match_request *mr)
{
	const json_t *meta = json_object_get(object, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));

	memset(mr, 0, sizeof(*mr));
	mr->object = object;
	mr->group = st->group;
	mr->version = st->version;
	mr->kind = st->kind;
	mr->sub = st->sub;
	mr->name = name && *name
		       ? name
		       : str_or(json_string_value(json_object_get(meta, "generateName")), "");
	mr->namespace = st->namespace;
	mr->labels = json_object_get(meta, "labels");
	mr->annotations = json_object_get(meta, "annotations");
	mr->ns_labels = st->in->namespace_labels;
	mr->op = st->op;
	if (st->mode == ENGINE_ADMISSION) {
		mr->user_info = st->in->user_info;
		mr->roles = st->in->roles;
		mr->cluster_roles = st->in->cluster_roles;
	}
}

static enum gv_code state_init(struct eval_state *st, const struct engine_policyset *set,
			       const struct engine_input *in, enum engine_mode mode,
			       struct gv_err *err)
{
	const json_t *meta;
	const char *api;

	memset(st, 0, sizeof(*st));
	st->set = set;
	st->in = in;
	st->env = in->hooks ? in->hooks->env : NULL;
	st->mode = mode;
	st->pss = in->memo ? &in->memo->pss : &st->pss_store;
	st->operation = mode == ENGINE_BACKGROUND ? "CREATE" : str_or(in->operation, "CREATE");
	st->op = match_op_bit(st->operation);
	st->delete_op = !strcmp(st->operation, "DELETE");
	st->object = in->object && !json_is_null(in->object) ? in->object : in->old_object;
	if (!json_is_object(st->object))
		return gv_err_set(err, GV_EINVAL, "no object to evaluate");
	meta = json_object_get(st->object, "metadata");
	api = json_string_value(json_object_get(st->object, "apiVersion"));
	if (in->kind) {
		st->group = str_or(in->group, "");
		st->version = str_or(in->version, "");
		st->kind = in->kind;
	} else {
		const char *slash = api ? strchr(api, '/') : NULL;
		if (slash) {
			st->group_buf = gv_xstrndup(api, (size_t)(slash - api));
			st->version_buf = gv_xstrdup(slash + 1);
		} else {
			st->group_buf = gv_xstrdup("");
			st->version_buf = gv_xstrdup(api ? api : "");
		}
		st->group = st->group_buf;
		st->version = st->version_buf;
		st->kind = str_or(json_string_value(json_object_get(st->object, "kind")), "");
	}
	st->sub = str_or(in->subresource, "");
	st->name = json_string_value(json_object_get(meta, "name"));
	if (!st->name || !*st->name)
		st->name = str_or(json_string_value(json_object_get(meta, "generateName")), "");
	st->namespace = in->namespace
			    ? in->namespace
			    : str_or(json_string_value(json_object_get(meta, "namespace")), "");
	match_request_init(st, st->object, &st->mr);
	st->root = build_root(st, in->object && !json_is_null(in->object) ? in->object : NULL,
			      in->old_object, st->operation);
	return GV_OK;
}

struct engine_memo *engine_memo_new(void)
{
	return gv_xcalloc(1, sizeof(struct engine_memo));
}

void engine_memo_clear(struct engine_memo *m)
{
	if (m)
		pss_memo_release(&m->pss);
}

void engine_memo_free(struct engine_memo *m)
{
	engine_memo_clear(m);
	free(m);
}

static void state_release(struct eval_state *st)
{
	pss_memo_release(&st->pss_store);
	json_decref(st->root);
	free(st->group_buf);
	free(st->version_buf);
}

/* Whether r matches st's object (st->mr) and does not exclude it. */
static bool rule_selects(const struct eval_state *st, const struct rule *r)
{
	if (!match_block_eval(&r->match, &st->mr, false))
		return false;
	if (r->exclude.n && match_block_eval(&r->exclude, &st->mr, true))
		return false;
	return true;
}

/* ---- context ---- */

/* variable.default, substituted (section 1.5); NULL when absent. */
static json_t *entry_default(const struct context_entry *e, const struct var_ctx *vc)
{
	json_t *v = NULL;
	struct gv_err de = {0};

	if (!e->def)
		return NULL;
	if (vtree_eval(e->def, vc, &v, &de))
		return json_incref(e->def_raw);
	return v;
}

/* The entry's jmesPath with its own {{ }} variables substituted; caller frees. */
static char *entry_jmespath(const struct context_entry *e, const struct var_ctx *vc,
			    struct gv_err *err)
{
	json_t *s = NULL;
	char *out;

	if (!tmpl_has_vars(e->jmespath))
		return gv_xstrdup(e->jmespath);
	if (tmpl_eval_string(e->jmespath, vc, &s, err)) {
		gv_err_prefix(err,
			      "failed to substitute variables in context entry %s %s: ", e->name,
			      e->jmespath);
		return NULL;
	}
	out = json_is_string(s) ? gv_xstrdup(json_string_value(s)) : NULL;
	if (!out) /* Kyverno's words, its %v of a nil error included */
		gv_err_set(err, GV_EEVAL, "jmespath value must be a string %s %s: <nil>", e->name,
			   e->jmespath);
	json_decref(s);
	return out;
}

/* A `variable` context entry (section 1.5). *out: new reference. */
static enum gv_code variable_entry(const struct context_entry *e, const struct var_ctx *vc,
				   json_t **out, struct gv_err *err)
{
	json_t *v = NULL;
	char *jp = NULL;
	enum gv_code rc;
	struct jp_error je;
	struct gv_err qe = {0};

	*out = NULL;
	if (e->jmespath) {
		jp = entry_jmespath(e, vc, err);
		if (!jp)
			return GV_EEVAL;
	}
	if (e->value) {
		rc = vtree_eval(e->value, vc, &v, err);
		if (rc) {
			free(jp);
			return rc;
		}
		if (jp) {
			json_t *data = v;
			struct jp_expr *x =
			    jp_compile(jp, &(struct jp_options){.kyverno = true}, &je);
			v = x ? var_eval(x, data, vc, NULL, &je) : NULL;
			jp_free(x);
			json_decref(data);
			if (!v) {
				/* a query cut short by the rule's budget has no default */
				v = budget_spent(vc->budget) ? NULL : entry_default(e, vc);
				if (!v) {
					rc = gv_err_set(
					    err, GV_EEVAL,
					    "failed to apply jmespath %s to variable %s: %s", jp,
					    e->name, je.msg);
					free(jp);
					return rc;
				}
			}
		}
	} else if (jp) {
		struct var_ctx plain = *vc;
		rc = var_query(jp, &plain, &v, &je, &qe);
		if (rc || json_is_null(v)) {
			json_t *d = rc && budget_spent(vc->budget) ? NULL : entry_default(e, vc);
			if (!rc)
				json_decref(v);
			v = NULL;
			if (!d) {
				rc =
				    gv_err_set(err, GV_EEVAL,
					       "failed to evaluate jmespath %s for variable %s: %s",
					       jp, e->name, rc ? qe.msg : "evaluated to nil");
				free(jp);
				return rc;
			}
			v = d;
		}
	} else {
		v = entry_default(e, vc);
	}
	free(jp);
	*out = v;
	return GV_OK;
}

/*
 * The context entries of one scope (a rule, or a foreach element with the
 * entries of its rule not loaded before it), loaded when a query names them
 * (section 1.5; Kyverno's deferred loading, on by default): an entry nothing
 * reads is never loaded, so its failure errors nothing. A foreach element
 * copies its rule's list: what it loads stays in its own variables.
 */
struct deferred_entry {
	const struct context_entry *e;
	bool element; /* a foreach element's own entry */
	bool done;    /* loaded or tried */
};

struct deferred {
	const struct eval_state *st;
	json_t *root; /* borrowed: the scope's variables, where entries go */
	struct jp_budget *budget;
	struct deferred_entry *v;
	size_t n;
	int depth; /* loads in progress (one may load those it names) */
};

/* d for root, with parent's entries (NULL: none) and c[0..n) after them. */
static void deferred_init(struct deferred *d, const struct eval_state *st, json_t *root,
			  struct jp_budget *rb, const struct deferred *parent,
			  const struct context_entry *c, size_t n, bool element)
{
	size_t np = parent ? parent->n : 0;

	*d = (struct deferred){.st = st, .root = root, .budget = rb};
	if (!np && !n)
		return;
	d->v = gv_xcalloc(np + n, sizeof(*d->v));
	for (size_t i = 0; i < np; i++)
		d->v[d->n++] = parent->v[i];
	for (size_t i = 0; i < n; i++)
		d->v[d->n++] = (struct deferred_entry){.e = &c[i], .element = element};
}

static void deferred_release(struct deferred *d)
{
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

static bool word_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       c == '_';
}

/* Kyverno's matcher: (?:\A|\z|\s|[^.0-9A-Za-z])<name>\b */
static bool names_entry(const char *q, const char *name)
{
	size_t n = strlen(name);

	if (!n)
		return false;
	for (const char *p = strstr(q, name); p; p = strstr(p + 1, name)) {
		if (p > q && (p[-1] == '.' || (word_char(p[-1]) && p[-1] != '_')))
			continue;
		if (word_char(name[n - 1]) != word_char(p[n]))
			return true;
	}
	return false;
}

struct var_names {
	struct deferred *d;
	enum gv_code rc;
	struct gv_err *err;
};

static void load_named(const char *expr, const char *raw, void *ud)
{
	struct var_names *vn = ud;

	(void)raw;
	if (!vn->rc)
		vn->rc = deferred_load(vn->d, expr, vn->err);
}

/* Loads entry de of d into d->root (its variables' entries first). */
static enum gv_code deferred_entry_load(struct deferred *d, const struct deferred_entry *de,
					struct gv_err *err)
{
	const struct eval_state *st = d->st;
	const struct context_entry *e = de->e;
	struct var_ctx vc = {.root = d->root,
			     .delete_op = st->delete_op,
			     .budget = d->budget,
			     .element = de->element,
			     .env = st->env,
			     .deferred = d};
	json_t *v = NULL;
	enum gv_code rc;

	if (!e->is_variable) {
		const struct engine_hooks *h = st->in->hooks;
		json_t *body = json_object_get(e->raw, context_kind_names[e->kind]);
		struct var_names vn = {.d = d, .err = err};
		/* Fail closed: an entry nobody can load is an error, never absent. */
		if (!h || !h->load_context)
			return gv_err_set(err, GV_EEVAL,
					  "gavel does not load %s context entries here (%s)",
					  context_kind_names[e->kind], e->name);
		/* the entries its variables name (its default is not substituted) */
		if (json_is_object(body)) {
			json_t *subst = json_copy(body);
			json_object_del(subst, "default");
			vars_each(subst, load_named, &vn);
			json_decref(subst);
			if (vn.rc)
				return vn.rc;
		}
		rc = h->load_context(h->ud, e->raw, d->root, &v, err);
		if (rc == GV_ENOENT) {
			gv_err_clear(err);
			return GV_OK;
		}
		if (rc)
			return gv_err_set(err, rc, "failed to load context entry %s", e->name);
		json_object_set_new(d->root, e->name, v);
		return GV_OK;
	}
	rc = variable_entry(e, &vc, &v, err);
	if (rc)
		return rc;
	if (!v || json_is_null(v)) {
		json_decref(v);
		return gv_err_set(
		    err, GV_EEVAL,
		    "failed to add context entry for variable %s since it evaluated to nil",
		    e->name);
	}
	json_object_set_new(d->root, e->name, v);
	return GV_OK;
}

enum gv_code deferred_load(struct deferred *d, const char *query, struct gv_err *err)
{
	size_t i;
	enum gv_code rc;

	if (!d || !query)
		return GV_OK;
	for (;;) {
		for (i = 0; i < d->n; i++)
			if (!d->v[i].done && names_entry(query, d->v[i].e->name))
				break;
		if (i == d->n)
			return GV_OK;
		d->v[i].done = true;
		d->depth++;
		rc = deferred_entry_load(d, &d->v[i], err);
		d->depth--;
		if (rc) {
			if (!d->depth)
				gv_err_prefix(err, "failed to load context: ");
			return rc;
		}
	}
}

/* A copy of root that a rule may write to: top level and `request` copied shallowly. */
static json_t *root_copy(const json_t *root)
{
	json_t *c = json_copy((json_t *)root);
	json_t *req = json_object_get(c, "request");
	if (req)
		json_object_set_new(c, "request", json_copy(req));
	return c;
}

static void apply_values(json_t *root, const json_t *values)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)values, k, v) var_set_path(root, k, json_incref(v));
}

/* ---- bodies ---- */

/*
 * validate.message, substituted. A message that is exactly one variable
 * giving a non-string is written as JSON, as an embedded variable is
 * (jp_dump's Go encoding/json form), and within the same bounds: at most
 * MAX_SUBST_BYTES, a step per 16 bytes charged to the rule's budget.
 */
static char *substitute_message(const struct rule *r, const struct var_ctx *vc, bool *failed,
				char **errmsg)
{
	json_t *m = NULL;
	struct gv_err e = {0};
	struct gv_buf b = {0};
	char *s = NULL;

	*failed = false;
	if (!r->message)
		return NULL;
	if (vtree_eval(r->message, vc, &m, &e))
		goto fail;
	if (json_is_string(m)) {
		s = gv_xstrdup(json_string_value(m));
	} else if (!jp_dump_max(m, &b, JP_DUMP_SORT_KEYS | JP_DUMP_HTML_ESCAPE, MAX_SUBST_BYTES)) {
		gv_err_set(
		    &e, GV_ELIMIT,
		    "failed to resolve variables at path : the result is longer than %d bytes",
		    MAX_SUBST_BYTES);
		goto fail;
	} else if (!budget_charge(vc->budget, b.len / 16)) {
		gv_err_set(&e, GV_ELIMIT, "failed to resolve variables at path : " RULE_BUDGET_MSG,
			   budget_max(vc->budget));
		goto fail;
	} else {
		s = gv_buf_detach(&b);
	}
	json_decref(m);
	return s;
fail:
	gv_buf_release(&b);
	json_decref(m);
	*failed = true;
	if (errmsg)
		*errmsg = gv_xstrdup(e.msg);
	return NULL;
}

static enum engine_status from_pattern(enum pattern_status s)
{
	switch (s) {
	case PATTERN_PASS:
		return ENGINE_PASS;
	case PATTERN_FAIL:
		return ENGINE_FAIL;
	case PATTERN_SKIP:
		return ENGINE_SKIP;
	default:
		return ENGINE_ERROR;
	}
}

/*
 * Charges compiling a substituted pattern to the rule's budget: a pattern
 * is as large as the values its variables bring in, which share their
 * parts (pattern_compile copies each part as often as it appears).
 */
static bool charge_pattern(const json_t *sub, const struct var_ctx *vc, struct outcome *o)
{
	size_t left, cost;

	if (!vc->budget)
		return true;
	left = budget_left(vc->budget);
	cost = value_walk_cost(sub, left);
	if (budget_charge(vc->budget, cost))
		return true;
	outcome_set(o, ENGINE_ERROR, gv_xasprintf(RULE_BUDGET_MSG, budget_max(vc->budget)));
	return false;
}

static void eval_pattern(const struct rule *r, const struct body *b, const json_t *resource,
			 const struct var_ctx *vc, struct outcome *o)
{
	struct pattern *tmp = NULL;
	const struct pattern *p = b->pattern;
	struct pattern_outcome po = {0};
	char *msg, *m, *errmsg = NULL;
	bool failed;

	if (!p) {
		json_t *sub = NULL;
		struct gv_err e = {0};
		if (vtree_eval(b->pattern_vars, vc, &sub, &e)) {
			outcome_set(o, ENGINE_ERROR,
				    gv_xasprintf("variable substitution failed: %s", e.msg));
			return;
		}
		if (!charge_pattern(sub, vc, o)) {
			json_decref(sub);
			return;
		}
		tmp = pattern_compile(sub, &e);
		json_decref(sub);
		if (!tmp) {
			outcome_set(o, ENGINE_ERROR, gv_xasprintf("invalid pattern: %s", e.msg));
			return;
		}
		p = tmp;
	}
	pattern_match_budget(p, resource, vc->budget, &po);
	if (po.status == PATTERN_PASS || po.status == PATTERN_SKIP) {
		msg = pattern_message(&po, r->name, NULL);
	} else {
		m = substitute_message(r, vc, &failed, &errmsg);
		if (failed)
			msg = gv_xasprintf("validation error: variables substitution error in rule "
					   "%s execution error: %s",
					   r->name, errmsg);
		else
			msg = pattern_message(&po, r->name, m);
		free(m);
		free(errmsg);
	}
	outcome_set(o, from_pattern(po.status), msg);
	pattern_outcome_release(&po);
	pattern_free(tmp);
}

static void eval_any_pattern(const struct rule *r, const struct body *b, const json_t *resource,
			     const struct var_ctx *vc, struct outcome *o)
{
	struct pattern **pats = b->any;
	size_t n = b->nany;
	struct pattern **tmp = NULL;
	enum pattern_status st;
	char *m, *msg, *errmsg = NULL;
	bool failed;

	if (!json_is_array(b->pattern_raw)) {
		outcome_set(o, ENGINE_ERROR,
			    gv_xstrdup("failed to deserialize anyPattern, expected type array"));
		return;
	}
	if (b->pattern_vars) {
		json_t *sub = NULL;
		struct gv_err e = {0};
		size_t i;
		json_t *c;
		if (vtree_eval(b->pattern_vars, vc, &sub, &e)) {
			outcome_set(o, ENGINE_ERROR,
				    gv_xasprintf("variable substitution failed: %s", e.msg));
			return;
		}
		if (!charge_pattern(sub, vc, o)) {
			json_decref(sub);
			return;
		}
		n = json_array_size(sub);
		tmp = gv_xcalloc(n + 1, sizeof(*tmp));
		json_array_foreach(sub, i, c)
		{
			tmp[i] = pattern_compile(c, &e);
			if (!tmp[i]) {
				for (size_t k = 0; k < i; k++)
					pattern_free(tmp[k]);
				free(tmp);
				json_decref(sub);
				outcome_set(o, ENGINE_ERROR,
					    gv_xasprintf("invalid pattern: %s", e.msg));
				return;
			}
		}
		json_decref(sub);
		pats = tmp;
	}
	m = substitute_message(r, vc, &failed, &errmsg);
	if (failed)
		m = NULL;
	if (n == 0) {
		outcome_set(o, ENGINE_PASS, gv_xstrdup(r->message_raw ? r->message_raw : ""));
	} else {
		msg = pattern_any_budget(pats, n, resource, r->name, m, vc->budget, &st);
		outcome_set(o, from_pattern(st), msg);
	}
	free(m);
	free(errmsg);
	if (tmp) {
		for (size_t i = 0; i < n; i++)
			pattern_free(tmp[i]);
		free(tmp);
	}
}

static void eval_deny(const struct rule *r, const struct body *b, const struct var_ctx *vc,
		      struct outcome *o)
{
	json_t *msgs = json_array();
	struct gv_err e = {0};
	bool denied;
	struct gv_buf text = {0};
	size_t i;
	json_t *c;

	if (conditions_eval(&b->deny, vc, &denied, msgs, &e)) {
		outcome_set(o, ENGINE_ERROR,
			    gv_xasprintf("failed to check deny conditions: %s", e.msg));
		json_decref(msgs);
		return;
	}
	if (!denied) {
		outcome_set(o, ENGINE_PASS, concat3("validation rule '", r->name, "' passed."));
		json_decref(msgs);
		return;
	}
	if (r->message_raw && *r->message_raw)
		gv_buf_adds(&text, r->message_raw);
	json_array_foreach(msgs, i, c)
	{
		if (text.len)
			gv_buf_adds(&text, "; ");
		gv_buf_adds(&text, json_string_value(c));
	}
	if (!text.len) {
		outcome_set(o, ENGINE_FAIL, concat3("validation error: rule ", r->name, " failed"));
	} else {
		json_t *m = NULL;
		struct gv_err me = {0};
		if (tmpl_eval_string(gv_buf_str(&text), vc, &m, &me)) {
			struct gv_buf bare = {0};
			json_array_foreach(msgs, i, c)
			{
				if (bare.len)
					gv_buf_adds(&bare, "; ");
				gv_buf_adds(&bare, json_string_value(c));
			}
			outcome_set(o, ENGINE_FAIL, gv_buf_detach(&bare));
		} else if (!json_is_string(m)) {
			outcome_set(o, ENGINE_FAIL,
				    gv_xstrdup("the produced message didn't resolve to a string, "
					       "check your policy definition."));
		} else {
			outcome_set(o, ENGINE_FAIL, gv_xstrdup(json_string_value(m)));
		}
		json_decref(m);
	}
	gv_buf_release(&text);
	json_decref(msgs);
}

static void eval_body(const struct eval_state *st, const struct engine_policy *p,
		      const struct rule *r, const struct body *b, const json_t *resource,
		      json_t *root, struct deferred *dl, int depth, struct jp_budget *rb,
		      struct outcome *o);

static bool is_unknown_key(const struct jp_error *je)
{
	return je->kind == JP_ERR_UNKNOWN_KEY;
}

/*
 * Steps an element of a foreach costs besides what its body charges: its
 * variable context is copied (a step more per 8 variables) and its
 * preconditions and body set up, about what a few JMESPath steps cost. A
 * list of 4,194,304 elements (JP_MAX_RESULT_VALUES) built in a few steps
 * runs the budget out instead of running that many times.
 */
#define FOREACH_ELEMENT_STEPS 8

/* section 1.7 */
static void eval_foreach(const struct eval_state *st, const struct engine_policy *p,
			 const struct rule *r, const struct foreach *fe, size_t nfe,
			 const json_t *resource, json_t *root, struct deferred *dl, int depth,
			 struct jp_budget *rb, struct outcome *o)
{
	size_t applied = 0;
	char *list_err = NULL;
	json_t *fvalues = NULL;

	if (depth >= MAX_FOREACH_DEPTH) {
		outcome_set(o, ENGINE_ERROR, gv_xstrdup("foreach nested too deeply"));
		return;
	}
	if (depth == 0 && st->in->hooks && st->in->hooks->foreach_values)
		fvalues = st->in->hooks->foreach_values(st->in->hooks->ud, p, r->name, resource);
	for (size_t f = 0; f < nfe; f++) {
		const struct foreach *e = &fe[f];
		struct var_ctx vc = {.root = root,
				     .delete_op = st->delete_op,
				     .budget = rb,
				     .element = depth > 0,
				     .env = st->env,
				     .deferred = dl};
		struct jp_error je;
		struct gv_err ge = {0};
		json_t *list = NULL;
		size_t i;
		json_t *elem;
		char key_element[32], key_index[32]; /* element<depth>, elementIndex<depth> */

		if (e->list_x && !(st->delete_op && strstr(e->list, "request.object"))) {
			list = var_eval(e->list_x, root, &vc, NULL, &je);
			if (!list)
				gv_err_set(&ge, GV_EEVAL, "%s", je.msg);
		} else {
			var_query(e->list, &vc, &list, &je, &ge);
		}
		if (!list && budget_spent(rb)) {
			outcome_set(o, ENGINE_ERROR,
				    gv_xasprintf("failed to evaluate list: %s", ge.msg));
			goto out;
		}
		if (!list) {
			if (!is_unknown_key(&je) && !list_err)
				list_err = gv_xstrdup(ge.msg);
			continue;
		}
		if (!json_is_array(list)) {
			json_t *w = json_array();
			json_array_append_new(w, list);
			list = w;
		}
		snprintf(key_element, sizeof(key_element), "element%d", depth);
		snprintf(key_index, sizeof(key_index), "elementIndex%d", depth);
		json_array_foreach(list, i, elem)
		{
			json_t *eroot;
			struct deferred edl;
			struct outcome eo = {.none = true};
			bool ok;
			struct gv_err pe = {0};
			const json_t *target = resource;

			/* null elements are skipped, for a step */
			if (!budget_charge(rb, json_is_null(elem)
						   ? 1
						   : FOREACH_ELEMENT_STEPS +
							 json_object_size(root) / 8)) {
				outcome_set(o, ENGINE_ERROR,
					    gv_xasprintf(RULE_BUDGET_MSG, budget_max(rb)));
				json_decref(list);
				goto out;
			}
			if (json_is_null(elem))
				continue;
			eroot = e->nctx || fvalues ? root_copy(root) : json_copy(root);
			json_object_set(eroot, "element", elem);
			json_object_set_new(eroot, "elementIndex", json_integer((json_int_t)i));
			json_object_set(eroot, key_element, elem);
			json_object_set_new(eroot, key_index, json_integer((json_int_t)i));
			if (fvalues) {
				const char *k;
				json_t *lv;
				json_object_foreach(fvalues, k, lv)
				{
					json_t *item = json_array_get(lv, i);
					if (item)
						var_set_path(eroot, k, json_incref(item));
				}
			}
			deferred_init(&edl, st, eroot, rb, dl, e->ctx, e->nctx, true);
			{
				struct var_ctx evc = {.root = eroot,
						      .delete_op = st->delete_op,
						      .budget = rb,
						      .element = true,
						      .env = st->env,
						      .deferred = &edl};
				if (conditions_eval(&e->pre, &evc, &ok, NULL, &pe) || !ok) {
					json_decref(eroot);
					deferred_release(&edl);
					/* a precondition cut short does not skip the element */
					if (!budget_spent(rb))
						continue;
					outcome_set(o, ENGINE_ERROR,
						    pe.code ? gv_xasprintf("failed to evaluate "
									   "preconditions: %s",
									   pe.msg)
							    : gv_xasprintf(RULE_BUDGET_MSG,
									   budget_max(rb)));
					json_decref(list);
					goto out;
				}
				if (e->element_scope == 1 && !json_is_object(elem)) {
					outcome_set(
					    &eo, ENGINE_ERROR,
					    gv_xasprintf("cannot use elementScope=true foreach "
							 "rules for elements that are not maps, "
							 "expected type=map got type=%s",
							 json_is_array(elem)	? "array"
							 : json_is_string(elem) ? "string"
										: "scalar"));
					goto element_done;
				}
				if ((e->body.kind == BODY_PATTERN ||
				     e->body.kind == BODY_ANY_PATTERN) &&
				    json_is_object(elem) && e->element_scope != 0)
					target = elem;
				eval_body(st, p, r, &e->body, target, eroot, &edl, depth + 1, rb,
					  &eo);
			}
		element_done:
			json_decref(eroot);
			deferred_release(&edl);
			if (eo.none || eo.status == ENGINE_SKIP) {
				free(eo.message);
				continue;
			}
			if (eo.status == ENGINE_FAIL || eo.status == ENGINE_ERROR) {
				outcome_set(o, eo.status,
					    gv_xasprintf("validation failure: %s",
							 eo.message ? eo.message : ""));
				free(eo.message);
				json_decref(list);
				goto out;
			}
			free(eo.message);
			applied++;
		}
		json_decref(list);
	}
	if (applied) {
		outcome_set(o, ENGINE_PASS, gv_xstrdup("rule passed"));
	} else if (list_err) {
		outcome_set(o, ENGINE_ERROR, gv_xasprintf("failed to evaluate list: %s", list_err));
	} else {
		o->none = true;
	}
out:
	json_decref(fvalues);
	free(list_err);
}

static void eval_body(const struct eval_state *st, const struct engine_policy *p,
		      const struct rule *r, const struct body *b, const json_t *resource,
		      json_t *root, struct deferred *dl, int depth, struct jp_budget *rb,
		      struct outcome *o)
{
	struct var_ctx vc = {.root = root,
			     .delete_op = st->delete_op,
			     .budget = rb,
			     .element = depth > 0,
			     .env = st->env,
			     .deferred = dl};

	switch (b->kind) {
	case BODY_POD_SECURITY:
		/* eval_rule runs it (its exceptions are its own); never in a foreach. */
		outcome_set(o, ENGINE_ERROR, gv_xstrdup("podSecurity is not supported here"));
		break;
	case BODY_DENY:
		eval_deny(r, b, &vc, o);
		break;
	case BODY_PATTERN:
		if (st->delete_op && depth == 0) {
			o->none = true;
			break;
		}
		eval_pattern(r, b, resource, &vc, o);
		break;
	case BODY_ANY_PATTERN:
		if (st->delete_op && depth == 0) {
			o->none = true;
			break;
		}
		eval_any_pattern(r, b, resource, &vc, o);
		break;
	case BODY_FOREACH:
		eval_foreach(st, p, r, b->foreach, b->nforeach, resource, root, dl, depth, rb, o);
		break;
	case BODY_CEL:
		if (b->cel_error) {
			outcome_set(o, ENGINE_FAIL, gv_xstrdup(b->cel_error));
		} else {
			enum engine_status s;
			char *msg = NULL;
			vpol_cel_evaluate(b->cel, st->delete_op ? NULL : resource,
					  st->in->old_object, json_object_get(root, "request"),
					  st->namespace, st->in->hooks, &s, &msg);
			outcome_set(o, s, msg);
		}
		break;
	case BODY_UNSUPPORTED:
		outcome_set(o, ENGINE_ERROR,
			    gv_xasprintf("gavel does not evaluate %s rules", b->unsupported));
		o->unsupported = true;
		break;
	case BODY_NONE:
		/* Never compiled; fail closed all the same. */
		outcome_set(o, ENGINE_ERROR, gv_xstrdup("rule body was not compiled"));
		break;
	}
}

/* ---- exceptions ---- */

static bool exception_applies(const struct eval_state *st, const struct engine_exception *e,
			      const struct engine_policy *p, const char *rule, json_t *root,
			      struct deferred *dl, struct jp_budget *rb)
{
	bool named = false;

	for (size_t i = 0; i < e->nentries && !named; i++) {
		const char *pn = e->entries[i].policy;
		const char *slash = strrchr(pn, '/');
		char *want;
		bool ok;
		if (p->namespace[0])
			want = gv_xasprintf("%s/%s", p->namespace, p->name);
		else
			want = gv_xstrdup(p->name);
		ok = value_wildcard(pn, want) ||
		     (!p->namespace[0] && slash == NULL && value_wildcard(pn, p->name));
		free(want);
		if (!ok)
			continue;
		for (size_t j = 0; j < e->entries[i].nrules; j++)
			if (value_wildcard(e->entries[i].rules[j], rule))
				named = true;
	}
	if (!named)
		return false;
	if (!match_block_eval(&e->match, &st->mr, false))
		return false;
	if (e->conditions.present) {
		struct var_ctx vc = {.root = root,
				     .delete_op = st->delete_op,
				     .budget = rb,
				     .env = st->env,
				     .deferred = dl};
		struct gv_err ce = {0};
		bool ok;
		if (conditions_eval(&e->conditions, &vc, &ok, NULL, &ce) || !ok)
			return false;
	}
	return true;
}

/* ---- podSecurity (pod-security-semantics.md section 2) ---- */

static void exception_key(struct gv_buf *b, const struct engine_exception *x)
{
	if (x->namespace[0])
		gv_buf_addf(b, "%s/%s", x->namespace, x->name);
	else
		gv_buf_adds(b, x->name);
}

/*
 * A podSecurity rule after match and preconditions: no result for DELETE;
 * an exception without podSecurity skips the rule (the first one is named);
 * the podSecurity entries of the others are exclusions applied after the
 * rule's own, and a pod they clear is skipped naming them all.
 */
static void eval_pod_security(const struct eval_state *st, const struct engine_policy *p,
			      const struct rule *r, const json_t *resource, json_t *root,
			      struct deferred *dl, struct jp_budget *rb, struct outcome *o)
{
	struct pss_exclusion_list *lists = NULL;
	struct gv_buf keys = {0}, names = {0};
	size_t n = 0;
	char *msg = NULL;

	if (st->delete_op) {
		o->none = true;
		return;
	}
	for (size_t i = 0; i < st->set->nexc; i++) {
		const struct engine_exception *x = st->set->exc[i];
		if (!exception_applies(st, x, p, r->name, root, dl, rb))
			continue;
		if (!x->npss) {
			struct gv_buf one = {0};
			exception_key(&one, x);
			outcome_set(o, ENGINE_SKIP,
				    gv_xasprintf("rule is skipped due to policy exception %s",
						 gv_buf_str(&one)));
			o->exception = true;
			free(o->exceptions);
			o->exceptions = gv_xstrdup(x->name);
			gv_buf_release(&one);
			goto out;
		}
		lists = gv_xrealloc(lists, (n + 1) * sizeof(*lists));
		lists[n].v = x->pss;
		lists[n].n = x->npss;
		n++;
		if (keys.len)
			gv_buf_adds(&keys, ", ");
		exception_key(&keys, x);
		if (names.len)
			gv_buf_addc(&names, ',');
		gv_buf_adds(&names, x->name);
	}
	json_decref(o->pss_props);
	switch (pss_evaluate(&r->body.pss, r->name, resource, lists, n, rb, st->pss, &msg,
			     st->in->no_pss_properties ? NULL : &o->pss_props)) {
	case PSS_PASS:
		outcome_set(o, ENGINE_PASS, msg);
		break;
	case PSS_FAIL:
		outcome_set(o, ENGINE_FAIL, msg);
		break;
	case PSS_EXCEPTED:
		free(msg);
		outcome_set(
		    o, ENGINE_SKIP,
		    gv_xasprintf("rule is skipped due to policy exceptions %s", gv_buf_str(&keys)));
		o->exception = true;
		free(o->exceptions);
		o->exceptions = gv_buf_detach(&names);
		break;
	case PSS_ERROR:
		outcome_set(o, ENGINE_ERROR, msg);
		break;
	}
out:
	free(lists);
	gv_buf_release(&keys);
	gv_buf_release(&names);
}

/* ---- rules ---- */

/*
 * The rule's reportProperties, substituted in the rule's variable context
 * after its body ran (the context entries it loaded are visible). A value
 * that is not a string is written as JSON, as in a message. A failed
 * substitution makes the result an error (a property is never dropped);
 * an error result keeps its own message and has no properties.
 */
static void substitute_props(const struct rule *r, const struct var_ctx *vc, struct outcome *o)
{
	json_t *v = NULL, *out = NULL, *x;
	struct gv_err e = {0};
	const char *key;

	if (!r->props || o->none)
		return;
	if (vtree_eval(r->props, vc, &v, &e))
		goto fail;
	if (!json_is_object(v)) {
		gv_err_set(&e, GV_EEVAL, "reportProperties is not a map");
		goto fail;
	}
	out = json_object();
	json_object_foreach(v, key, x)
	{
		struct gv_buf b = {0};

		if (json_is_string(x)) {
			json_object_set(out, key, x);
			continue;
		}
		if (!jp_dump_max(x, &b, JP_DUMP_SORT_KEYS | JP_DUMP_HTML_ESCAPE, MAX_SUBST_BYTES)) {
			gv_buf_release(&b);
			gv_err_set(&e, GV_ELIMIT,
				   "failed to resolve variables at path /%s: the result is longer "
				   "than %d bytes",
				   key, MAX_SUBST_BYTES);
			goto fail;
		}
		if (!budget_charge(vc->budget, b.len / 16)) {
			gv_buf_release(&b);
			gv_err_set(&e, GV_ELIMIT,
				   "failed to resolve variables at path /%s: " RULE_BUDGET_MSG, key,
				   budget_max(vc->budget));
			goto fail;
		}
		json_object_set_new(out, key, json_string(gv_buf_str(&b)));
		gv_buf_release(&b);
	}
	json_decref(v);
	json_decref(o->properties);
	o->properties = out;
	return;
fail:
	json_decref(v);
	json_decref(out);
	if (o->status == ENGINE_ERROR)
		return;
	outcome_set(o, ENGINE_ERROR,
		    gv_xasprintf("failed to substitute variables in reportProperties: %s", e.msg));
	o->exception = false;
	free(o->exceptions);
	o->exceptions = NULL;
}

/* Evaluates rule r, charging its steps to rb (section 10; engine_int.h RULE_MAX_STEPS). */
static void eval_rule(const struct eval_state *st, const struct engine_policy *p,
		      const struct rule *r, const json_t *base_root, const json_t *resource,
		      struct jp_budget *rb, struct outcome *o)
{
	const struct engine_hooks *h = st->in->hooks;
	json_t *values = h && h->rule_values ? h->rule_values(h->ud, p, r->name, resource) : NULL;
	/* The shared root is read-only: copy it only when this rule writes variables. */
	json_t *root = values || r->nctx ? root_copy(base_root) : json_incref((json_t *)base_root);
	struct deferred dl;
	struct var_ctx vc = {.root = root,
			     .delete_op = st->delete_op,
			     .budget = rb,
			     .env = st->env,
			     .deferred = &dl};
	struct gv_err e = {0};
	json_t *msgs;
	bool ok;
	struct gv_buf exc = {0}, names = {0};

	deferred_init(&dl, st, root, rb, NULL, r->ctx, r->nctx, false);
	o->none = true;
	if (r->unsupported && r->body.kind != BODY_UNSUPPORTED) {
		outcome_set(o, ENGINE_ERROR,
			    gv_xasprintf("gavel does not evaluate %s", r->unsupported));
		o->unsupported = true;
		goto out;
	}
	if (values) {
		apply_values(root, values);
		json_decref(values);
		if (st->force_create)
			var_set_path(root, "request.operation", json_string("CREATE"));
	}
	msgs = json_array();
	if (conditions_eval(&r->pre, &vc, &ok, msgs, &e)) {
		outcome_set(o, ENGINE_ERROR,
			    gv_xasprintf("failed to evaluate preconditions: %s", e.msg));
		json_decref(msgs);
		goto out;
	}
	if (!ok) {
		struct gv_buf m = {0};
		size_t i;
		json_t *c;
		gv_buf_adds(&m, "preconditions not met");
		json_array_foreach(msgs, i, c)
		{
			gv_buf_adds(&m, "; ");
			gv_buf_adds(&m, json_string_value(c));
		}
		outcome_set(o, ENGINE_SKIP, gv_buf_detach(&m));
		json_decref(msgs);
		goto out;
	}
	json_decref(msgs);
	if (r->body.kind == BODY_POD_SECURITY) {
		/* Its exceptions can exclude controls instead of the whole rule. */
		eval_pod_security(st, p, r, resource, root, &dl, rb, o);
		goto out;
	}
	for (size_t i = 0; i < st->set->nexc; i++) {
		const struct engine_exception *x = st->set->exc[i];
		if (!exception_applies(st, x, p, r->name, root, &dl, rb))
			continue;
		if (exc.len)
			gv_buf_addc(&exc, ',');
		if (x->namespace[0])
			gv_buf_addf(&exc, "%s/%s", x->namespace, x->name);
		else
			gv_buf_adds(&exc, x->name);
		if (names.len)
			gv_buf_addc(&names, ',');
		gv_buf_adds(&names, x->name);
	}
	if (exc.len) {
		outcome_set(
		    o, ENGINE_SKIP,
		    gv_xasprintf("rule is skipped due to policy exceptions%s", gv_buf_str(&exc)));
		o->exception = true;
		free(o->exceptions);
		o->exceptions = gv_buf_detach(&names);
		goto out;
	}
	eval_body(st, p, r, &r->body, resource, root, &dl, 0, rb, o);
out:
	substitute_props(r, &vc, o);
	gv_buf_release(&exc);
	gv_buf_release(&names);
	deferred_release(&dl);
	json_decref(root);
}

/*
 * Re-evaluates an UPDATE's rule against the old object as a CREATE (section
 * 8.5), within what is left of the rule's budget rb. Not for validate.cel
 * rules: Kyverno's CEL handler has no such check (an always-false
 * expression blocks a label update of an object created before the policy).
 */
static bool old_object_fails(const struct eval_state *st, const struct engine_policy *p,
			     const struct rule *r, struct jp_budget *rb)
{
	struct eval_state old = *st;
	struct outcome o = {.none = true};
	bool fails;
	char *group = NULL;

	if (!json_is_object(st->in->old_object))
		return false;
	old.operation = "CREATE";
	old.op = OP_CREATE;
	old.force_create = true;
	old.object = st->in->old_object;
	if (*st->sub) {
		/*
		 * The old object is matched by its own kind, without the
		 * subresource (Kyverno's validateOldObject): the old Scale of a
		 * deployments/scale request never matches Deployment/scale.
		 */
		const char *api = json_string_value(json_object_get(old.object, "apiVersion"));
		const char *kind = json_string_value(json_object_get(old.object, "kind"));
		const char *slash = api ? strchr(api, '/') : NULL;
		group = slash ? gv_xstrndup(api, (size_t)(slash - api)) : gv_xstrdup("");
		old.group = group;
		old.version = slash ? slash + 1 : api ? api : "";
		old.kind = kind ? kind : "";
		old.sub = "";
	}
	match_request_init(&old, old.object, &old.mr);
	if (!rule_selects(&old, r)) {
		free(group);
		return false;
	}
	old.root = build_root(st, st->in->old_object, NULL, "CREATE");
	eval_rule(&old, p, r, old.root, old.object, rb, &o);
	fails = !o.none && o.status == ENGINE_FAIL;
	free(o.message);
	free(o.exceptions);
	json_decref(o.properties);
	json_decref(o.pss_props);
	json_decref(old.root);
	free(group);
	return fails;
}

/* Seconds on the evaluation's clock (the hooks' jp_env, else common/clock.h's). */
static double eval_clock(const struct eval_state *st)
{
	struct timespec ts = {0};

	if (st->env && st->env->now)
		st->env->now(st->env->ud, &ts);
	else
		gv_clock_now(NULL, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void push_result(struct engine_response *resp, const char *rule, struct outcome *o,
			enum engine_action action)
{
	struct engine_rule_result *rr;

	resp->rules = gv_xrealloc(resp->rules, (resp->nrules + 1) * sizeof(*resp->rules));
	rr = &resp->rules[resp->nrules++];
	rr->rule = gv_xstrdup(rule);
	rr->status = o->status;
	rr->message = o->message ? o->message : gv_xstrdup("");
	rr->action = action;
	rr->exception = o->exception;
	rr->exceptions = NULL;
	if (o->exception && o->status == ENGINE_SKIP)
		rr->exceptions = o->exceptions;
	else
		free(o->exceptions);
	o->exceptions = NULL;
	/*
	 * A podSecurity fail's properties win over reportProperties of the
	 * same name (Kyverno's ToPolicyReportResult adds them after the rule's
	 * properties); a fail turned into a skip or error carries none.
	 */
	if (o->pss_props && o->status == ENGINE_FAIL) {
		if (!o->properties)
			o->properties = json_object();
		json_object_update(o->properties, o->pss_props);
	}
	json_decref(o->pss_props);
	o->pss_props = NULL;
	rr->properties = o->properties;
	o->properties = NULL;
	rr->unsupported = o->unsupported;
	rr->seconds = 0;
	o->message = NULL;
}

static void eval_policy(const struct eval_state *st, const struct engine_policy *p,
			struct engine_response *resp)
{
	resp->policy = p;
	if (p->namespace[0] && strcmp(p->namespace, st->namespace))
		return;
	for (size_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		struct outcome o = {.none = true};
		struct jp_budget rb = {.max = RULE_MAX_STEPS};
		enum engine_action action;
		double start;

		if (!r->has_validate)
			continue;
		if (st->mode == ENGINE_BACKGROUND && !r->background_safe)
			continue;
		if (!rule_selects(st, r))
			continue;
		start = eval_clock(st);
		eval_rule(st, p, r, st->root, st->object, &rb, &o);
		if (o.none && !budget_spent(&rb)) {
			free(o.message);
			free(o.exceptions);
			json_decref(o.properties);
			json_decref(o.pss_props);
			continue;
		}
		action = rule_effective_action(p, r, st->namespace, st->in->namespace_labels);
		if (st->mode == ENGINE_ADMISSION && !strcmp(st->operation, "UPDATE") && !o.none &&
		    o.status == ENGINE_FAIL && action == ENGINE_ENFORCE && r->allow_existing &&
		    r->body.kind != BODY_CEL && old_object_fails(st, p, r, &rb))
			outcome_set(&o, ENGINE_SKIP,
				    gv_xstrdup("skipping the rule evaluation as pre-existing "
					       "violations are allowed"));
		/*
		 * Some steps swallow errors by design (a failed exception does not
		 * apply, a failed default is used as written): a rule whose budget
		 * ran out cannot pass or be skipped. A failure stands (only its
		 * message, or the old-object check of section 8.5, was cut short).
		 */
		if (budget_spent(&rb) &&
		    (o.none || o.status == ENGINE_PASS || o.status == ENGINE_SKIP))
			outcome_set(&o, ENGINE_ERROR,
				    gv_xasprintf(RULE_BUDGET_MSG, RULE_MAX_STEPS));
		push_result(resp, r->name, &o, action);
		{
			double took = eval_clock(st) - start;
			resp->rules[resp->nrules - 1].seconds = took > 0 ? took : 0;
		}
		if (p->apply_one && (resp->rules[resp->nrules - 1].status == ENGINE_PASS ||
				     resp->rules[resp->nrules - 1].status == ENGINE_FAIL))
			break;
	}
}

enum gv_code engine_evaluate(const struct engine_policyset *set, const struct engine_input *in,
			     enum engine_mode mode, struct engine_report *out, struct gv_err *err)
{
	struct eval_state st;
	enum gv_code rc;

	memset(out, 0, sizeof(*out));
	rc = state_init(&st, set, in, mode, err);
	if (rc) {
		state_release(&st);
		return rc;
	}
	out->v = gv_xcalloc(set->n + 1, sizeof(*out->v));
	for (size_t i = 0; i < set->n; i++) {
		const struct engine_policy *p = set->v[i];
		if (mode == ENGINE_BACKGROUND && !p->background)
			continue;
		if (mode == ENGINE_ADMISSION && !p->admission)
			continue;
		eval_policy(&st, p, &out->v[out->n++]);
	}
	state_release(&st);
	return GV_OK;
}

void engine_report_release(struct engine_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		for (size_t j = 0; j < r->v[i].nrules; j++) {
			free(r->v[i].rules[j].rule);
			free(r->v[i].rules[j].message);
			free(r->v[i].rules[j].exceptions);
			json_decref(r->v[i].rules[j].properties);
		}
		free(r->v[i].rules);
	}
	free(r->v);
	memset(r, 0, sizeof(*r));
}

struct engine_decision engine_decide(const struct engine_policy *p,
				     const struct engine_rule_result *r, enum engine_mode mode)
{
	struct engine_decision d = {0};
	bool bad =
	    r->status == ENGINE_FAIL || r->status == ENGINE_ERROR || r->status == ENGINE_WARN;

	if (mode == ENGINE_BACKGROUND) {
		d.reported = p->background;
		return d;
	}
	if (r->action == ENGINE_ENFORCE) {
		d.blocks = r->status == ENGINE_FAIL ||
			   (r->status == ENGINE_ERROR && p->failure_policy == ENGINE_FAILURE_FAIL);
		d.reported = false;
		d.warns = bad && !d.blocks;
	} else {
		d.reported = true;
		d.warns = bad && p->emit_warning;
	}
	return d;
}
