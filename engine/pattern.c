#include "engine/pattern.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "engine/value.h"

#include "common/banned.h"

/*
 * Design notes.
 *
 * Compile: every map key is parsed for its anchor once, map keys are put in
 * the order Kyverno processes them (section 3.2), string patterns are split
 * into alternatives / conjuncts / operators with their operands already
 * parsed as durations and quantities (section 3.5), and the conditional and
 * existence keys get a slot in the presence table (section 3.8.7).
 *
 * Match: errors are kinds, not texts (Kyverno recognises skips by text; we
 * carry a flag, as section 3.2 recommends). A first run builds no strings at
 * all: no paths, no messages. Only when it does not pass is the match run a
 * second time in "verbose" mode, which is deterministic and reaches the same
 * outcome, this time keeping the path and building the messages.
 *
 * Recursion follows the pattern tree, whose depth is bounded at compile time.
 *
 * Work: the first run charges the rule's step budget (engine_int.h) a step
 * per resource value visited and per 16 code points compared by wildcards
 * or bytes parsed; a resource handed over by a foreach may be a JMESPath
 * result sharing its parts, and wildcard matching is quadratic. When the
 * steps run out every visit fails at once and the match ends as an error.
 * The verbose run is not charged: it takes the same path as the first.
 */

#define PATTERN_MAX_DEPTH 256

/* Separator of the texts of an aggregated skip (several children skipped). */
#define SKIP_SEP "; "

enum anchor_kind {
	AK_NONE,   /* plain key */
	AK_COND,   /* (k) */
	AK_EQUAL,  /* =(k) */
	AK_EXIST,  /* ^(k) */
	AK_NEG,	   /* X(k) */
	AK_GLOBAL, /* <(k) */
};

enum op {
	OP_EQ,
	OP_NE,
	OP_GT,
	OP_LT,
	OP_GE,
	OP_LE,
};

/* One comparison "<op> <operand>" of the string mini-language. */
struct pcmp {
	enum op op;
	char *operand; /* owned, trimmed */
	bool is_dur;
	long double dur;
	bool is_qty;
	struct value_quantity qty;
};

enum term_kind {
	TERM_SIMPLE,   /* cmp[0] */
	TERM_RANGE,    /* cmp[0] (>=) and cmp[1] (<=) */
	TERM_NOTRANGE, /* cmp[0] (<) or cmp[1] (>) */
};

struct pterm {
	enum term_kind kind;
	struct pcmp cmp[2];
};

/* An alternative of a string pattern: the AND of its conjuncts. */
struct palt {
	struct pterm *terms; /* owned */
	size_t nterms;
};

enum pnode_kind { PN_MAP, PN_ARRAY, PN_SCALAR };

struct pnode;

struct pentry {
	char *key;  /* owned: the key as written (the presence-table spelling) */
	char *name; /* owned: inner key, anchor stripped */
	enum anchor_kind anchor;
	char modifier;	     /* anchor modifier char ('\0' for "(k)" and plain keys) */
	int presence;	     /* presence-table slot for (k) and ^(k), else -1 */
	bool star;	     /* plain key whose value is exactly "*" (section 3.6) */
	bool wild;	     /* in an expanded labels map: name has wildcards (section 3.9) */
	struct pnode *child; /* owned */
	struct pnode *alt;   /* owned: string-only variant of a labels/annotations map */
};

struct pnode {
	enum pnode_kind kind;
	bool has_anchors; /* this subtree holds an anchored key */
	union {
		struct {
			struct pentry *anchors; /* (k) =(k) ^(k) X(k), ascending */
			size_t nanchors;
			struct pentry *plain; /* other keys, in processing order */
			size_t nplain;
			bool expanded; /* string-only labels/annotations variant */
			bool any_wild; /* expanded and some key has a wildcard */
		} map;
		struct {
			struct pnode **elems; /* owned */
			size_t n;
		} arr;
		struct {
			json_type type;
			long long i;
			double d;
			char *str; /* owned (string patterns) */
			size_t len;
			struct palt *alts; /* owned */
			size_t nalts;
		} sc;
	} u;
	char *text; /* owned: Go %v of a scalar pattern, for messages */
};

struct pattern {
	struct pnode *root;
	char **spellings; /* presence-table keys, owned */
	size_t nspellings;
};

/* ------------------------------------------------------------------ */
/* Compilation                                                         */

struct cctx {
	struct pattern *p;
	struct gv_buf ptr; /* JSON pointer of the node being compiled */
	struct gv_err *err;
	bool failed;
};

static void pnode_free(struct pnode *n);

static void pentry_release(struct pentry *e)
{
	free(e->key);
	free(e->name);
	pnode_free(e->child);
	pnode_free(e->alt);
}

static void pcmp_release(struct pcmp *c)
{
	free(c->operand);
}

static void pnode_free(struct pnode *n)
{
	size_t i, j;

	if (!n)
		return;
	switch (n->kind) {
	case PN_MAP:
		for (i = 0; i < n->u.map.nanchors; i++)
			pentry_release(&n->u.map.anchors[i]);
		for (i = 0; i < n->u.map.nplain; i++)
			pentry_release(&n->u.map.plain[i]);
		free(n->u.map.anchors);
		free(n->u.map.plain);
		break;
	case PN_ARRAY:
		for (i = 0; i < n->u.arr.n; i++)
			pnode_free(n->u.arr.elems[i]);
		free(n->u.arr.elems);
		break;
	case PN_SCALAR:
		for (i = 0; i < n->u.sc.nalts; i++) {
			for (j = 0; j < n->u.sc.alts[i].nterms; j++) {
				pcmp_release(&n->u.sc.alts[i].terms[j].cmp[0]);
				pcmp_release(&n->u.sc.alts[i].terms[j].cmp[1]);
			}
			free(n->u.sc.alts[i].terms);
		}
		free(n->u.sc.alts);
		free(n->u.sc.str);
		break;
	}
	free(n->text);
	free(n);
}

static void cfail(struct cctx *c, enum gv_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cfail(struct cctx *c, enum gv_code code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (c->failed)
		return;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gv_err_setp(c->err, code, gv_buf_str(&c->ptr), "%s", msg);
}

/* Appends "/<seg>" to the JSON pointer with RFC 6901 escaping; returns the old length. */
static size_t ptr_push(struct cctx *c, const char *seg)
{
	size_t old = c->ptr.len;

	gv_buf_addc(&c->ptr, '/');
	for (; *seg; seg++) {
		if (*seg == '~')
			gv_buf_adds(&c->ptr, "~0");
		else if (*seg == '/')
			gv_buf_adds(&c->ptr, "~1");
		else
			gv_buf_addc(&c->ptr, *seg);
	}
	return old;
}

static size_t ptr_push_index(struct cctx *c, size_t i)
{
	size_t old = c->ptr.len;

	gv_buf_addc(&c->ptr, '/');
	gv_buf_addu(&c->ptr, i);
	return old;
}

static void ptr_pop(struct cctx *c, size_t old)
{
	c->ptr.len = old;
	if (c->ptr.data)
		c->ptr.data[old] = '\0';
}

/* Go's strings.TrimSpace: ASCII white space plus U+0085 and U+00A0. */
static void trim_space(const char **s, size_t *n)
{
	const char *p = *s;
	size_t len = *n;

	for (;;) {
		if (len && p[0] && strchr(" \t\n\v\f\r", p[0])) {
			p++;
			len--;
		} else if (len >= 2 && (unsigned char)p[0] == 0xc2 &&
			   ((unsigned char)p[1] == 0x85 || (unsigned char)p[1] == 0xa0)) {
			p += 2;
			len -= 2;
		} else {
			break;
		}
	}
	for (;;) {
		if (len && p[len - 1] && strchr(" \t\n\v\f\r", p[len - 1])) {
			len--;
		} else if (len >= 2 && (unsigned char)p[len - 2] == 0xc2 &&
			   ((unsigned char)p[len - 1] == 0x85 ||
			    (unsigned char)p[len - 1] == 0xa0)) {
			len -= 2;
		} else {
			break;
		}
	}
	*s = p;
	*n = len;
}

/* strings.Trim(s, " ") */
static void trim_blank(const char **s, size_t *n)
{
	while (*n && (*s)[0] == ' ') {
		(*s)++;
		(*n)--;
	}
	while (*n && (*s)[*n - 1] == ' ')
		(*n)--;
}

/*
 * anchor.Parse: after TrimSpace, ^([+<=X^])?\((.+)\)$ ('.' does not match
 * a newline). Returns false for a plain key; else sets *mod ('\0' for
 * "(k)") and the inner key span.
 */
static bool anchor_parse(const char *key, char *mod, const char **inner, size_t *ilen)
{
	const char *s = key;
	size_t n = strlen(key), i;

	trim_space(&s, &n);
	*mod = '\0';
	if (n && s[0] && strchr("+<=X^", s[0])) {
		*mod = s[0];
		s++;
		n--;
	}
	if (n < 3 || s[0] != '(' || s[n - 1] != ')')
		return false;
	for (i = 1; i + 1 < n; i++)
		if (s[i] == '\n')
			return false;
	*inner = s + 1;
	*ilen = n - 2;
	return true;
}

static enum anchor_kind anchor_kind_of(char mod)
{
	switch (mod) {
	case '\0':
		return AK_COND;
	case '=':
		return AK_EQUAL;
	case '^':
		return AK_EXIST;
	case 'X':
		return AK_NEG;
	case '<':
		return AK_GLOBAL;
	default:
		return AK_NONE;
	}
}

static int presence_find(const struct pattern *p, const char *spelling)
{
	size_t i;

	for (i = 0; i < p->nspellings; i++)
		if (strcmp(p->spellings[i], spelling) == 0)
			return (int)i;
	return -1;
}

static int presence_slot(struct pattern *p, const char *spelling)
{
	int i = presence_find(p, spelling);

	if (i >= 0)
		return i;
	p->spellings = gv_xrealloc(p->spellings, (p->nspellings + 1) * sizeof(*p->spellings));
	p->spellings[p->nspellings] = gv_xstrdup(spelling);
	return (int)p->nspellings++;
}

/* ---- string mini-language ---- */

/* Length of a range operand [-|+]?\d+(\.\d+)?[A-Za-z]* at s, 0 when none. */
static size_t range_num(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && (s[i] == '-' || s[i] == '|' || s[i] == '+'))
		i++;
	d = i;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == d)
		return 0;
	if (i + 1 < n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
		i++;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
		i++;
	return i;
}

/*
 * Matches ^(num)-(num)$ (sep "-") or ^(num)!-(num)$ (sep "!-"). The left
 * operand cannot contain the separator, so the split is unique.
 */
static bool range_parse(const char *s, size_t n, const char *sep, size_t *llen, size_t *rstart)
{
	size_t l = range_num(s, n), sl = strlen(sep);

	if (!l || n - l < sl || memcmp(s + l, sep, sl) != 0)
		return false;
	if (range_num(s + l + sl, n - l - sl) != n - l - sl)
		return false;
	*llen = l;
	*rstart = l + sl;
	return true;
}

static void pcmp_init(struct pcmp *c, enum op op, const char *s, size_t n)
{
	trim_space(&s, &n);
	c->op = op;
	c->operand = gv_xstrndup(s, n);
	c->is_dur = value_parse_duration(c->operand, &c->dur);
	c->is_qty = value_parse_quantity(c->operand, &c->qty);
}

/* operator.GetOperatorFromStringPattern and the range split of validateStringPattern. */
static void term_compile(struct pterm *t, const char *s, size_t n)
{
	static const struct {
		const char *prefix;
		enum op op;
	} prefixes[] = {
	    {">=", OP_GE}, {"<=", OP_LE}, {">", OP_GT}, {"<", OP_LT}, {"!", OP_NE},
	};
	size_t i, llen, rstart;

	memset(t, 0, sizeof(*t));
	t->kind = TERM_SIMPLE;
	if (n >= 2) {
		for (i = 0; i < GV_ARRAY_LEN(prefixes); i++) {
			size_t pl = strlen(prefixes[i].prefix);

			if (memcmp(s, prefixes[i].prefix, pl) == 0) {
				pcmp_init(&t->cmp[0], prefixes[i].op, s + pl, n - pl);
				return;
			}
		}
		if (range_parse(s, n, "!-", &llen, &rstart)) {
			t->kind = TERM_NOTRANGE;
			pcmp_init(&t->cmp[0], OP_LT, s, llen);
			pcmp_init(&t->cmp[1], OP_GT, s + rstart, n - rstart);
			return;
		}
		if (range_parse(s, n, "-", &llen, &rstart)) {
			t->kind = TERM_RANGE;
			pcmp_init(&t->cmp[0], OP_GE, s, llen);
			pcmp_init(&t->cmp[1], OP_LE, s + rstart, n - rstart);
			return;
		}
	}
	pcmp_init(&t->cmp[0], OP_EQ, s, n);
}

static size_t count_char(const char *s, size_t n, char ch)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] == ch)
			k++;
	return k;
}

static void string_compile(struct pnode *n)
{
	const char *s = n->u.sc.str, *end = s + n->u.sc.len;
	size_t nalts = count_char(s, n->u.sc.len, '|') + 1, a = 0;

	n->u.sc.alts = gv_xcalloc(nalts, sizeof(*n->u.sc.alts));
	n->u.sc.nalts = nalts;
	while (a < nalts) {
		const char *bar = memchr(s, '|', (size_t)(end - s));
		const char *aend = bar ? bar : end, *c;
		size_t alen = (size_t)(aend - s), nt, t = 0;
		struct palt *alt = &n->u.sc.alts[a++];

		trim_blank(&s, &alen);
		nt = count_char(s, alen, '&') + 1;
		alt->terms = gv_xcalloc(nt, sizeof(*alt->terms));
		alt->nterms = nt;
		c = s;
		while (t < nt) {
			const char *amp = memchr(c, '&', (size_t)(s + alen - c));
			const char *cend = amp ? amp : s + alen;
			size_t clen = (size_t)(cend - c);
			const char *cs = c;

			trim_blank(&cs, &clen);
			term_compile(&alt->terms[t++], cs, clen);
			c = cend + 1;
		}
		s = aend + 1;
	}
}

/* ---- tree ---- */

static struct pnode *node_compile(struct cctx *c, const json_t *j, int depth, bool metadata);
static struct pnode *map_compile(struct cctx *c, const json_t *j, int depth, bool metadata,
				 bool expanded);

static bool name_is(const char *key, const char *tag)
{
	char mod;
	const char *inner;
	size_t ilen;

	if (anchor_parse(key, &mod, &inner, &ilen))
		return ilen == strlen(tag) && memcmp(inner, tag, ilen) == 0;
	return strcmp(key, tag) == 0;
}

struct keyent {
	const char *key;
	const json_t *val;
};

static int keyent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct keyent *)a)->key, ((const struct keyent *)b)->key);
}

static bool entry_compile(struct cctx *c, struct pentry *e, const char *key, const json_t *val,
			  int depth, bool in_metadata, bool expanded)
{
	const char *inner;
	size_t ilen;
	size_t old = ptr_push(c, key);
	bool ok = false;

	memset(e, 0, sizeof(*e));
	e->presence = -1;
	e->key = gv_xstrdup(key);
	if (anchor_parse(key, &e->modifier, &inner, &ilen)) {
		if (e->modifier == '+') {
			cfail(c, GV_EINVAL, "unsupported anchor %s", key);
			goto out;
		}
		e->anchor = anchor_kind_of(e->modifier);
		e->name = gv_xstrndup(inner, ilen);
	} else {
		e->anchor = AK_NONE;
		e->modifier = '\0';
		e->name = gv_xstrdup(key);
	}
	if (e->anchor == AK_EXIST) {
		if (!json_is_array(val)) {
			cfail(c, GV_EINVAL, "existence anchor should have value of type list");
			goto out;
		}
		if (json_array_size(val) == 0) {
			cfail(c, GV_EINVAL, "existence anchor: should have atleast one value");
			goto out;
		}
	}
	if (e->anchor == AK_COND || e->anchor == AK_EXIST)
		e->presence = presence_slot(c->p, key);
	if (e->anchor == AK_NONE && json_is_string(val) &&
	    strcmp(json_string_value(val), "*") == 0 && json_string_length(val) == 1)
		e->star = true;
	e->wild = expanded && value_has_wildcard(e->name);
	e->child = node_compile(c, val, depth + 1, name_is(key, "metadata") && json_is_object(val));
	if (!e->child)
		goto out;
	/* section 3.9: string-only variant of metadata.labels / metadata.annotations */
	if (in_metadata && json_is_object(val) &&
	    (name_is(key, "labels") || name_is(key, "annotations"))) {
		json_t *filtered = json_object();
		const char *k;
		json_t *v;
		json_t *obj = (json_t *)(uintptr_t)val; /* iteration only */

		json_object_foreach(obj, k, v)
		{
			if (json_is_string(v))
				json_object_set(filtered, k, v);
		}
		e->alt = map_compile(c, filtered, depth + 1, false, true);
		json_decref(filtered);
		if (!e->alt)
			goto out;
	}
	ok = true;
out:
	ptr_pop(c, old);
	return ok;
}

/*
 * Kyverno's processing order of the non-condition keys
 * (getSortedNestedAnchorResource): ascending, with global anchors and keys
 * whose value holds anchors pushed to the front (so they end up first, in
 * descending order).
 */
static void order_plain(struct pentry *plain, size_t n)
{
	struct pentry *tmp;
	size_t i, front = 0, back;

	if (n < 2)
		return;
	tmp = gv_xcalloc(n, sizeof(*tmp));
	for (i = 0; i < n; i++)
		if (plain[i].anchor == AK_GLOBAL || plain[i].child->has_anchors)
			front++;
	back = front;
	for (i = 0; i < n; i++) {
		if (plain[i].anchor == AK_GLOBAL || plain[i].child->has_anchors)
			tmp[--front] = plain[i];
		else
			tmp[back++] = plain[i];
	}
	memcpy(plain, tmp, n * sizeof(*tmp));
	free(tmp);
}

/*
 * metadata: j is the value of a metadata key (its labels and annotations
 * get an expanded variant); expanded: j is such a variant (string values
 * only, wildcard keys renamed at match time).
 */
static struct pnode *map_compile(struct cctx *c, const json_t *j, int depth, bool metadata,
				 bool expanded)
{
	size_t n = json_object_size(j), i = 0, na = 0, np = 0;
	struct keyent *keys = gv_xcalloc(n ? n : 1, sizeof(*keys));
	struct pnode *node = gv_xcalloc(1, sizeof(*node));
	json_t *obj = (json_t *)(uintptr_t)j; /* iteration only */
	const char *k;
	json_t *v;

	node->kind = PN_MAP;
	node->u.map.expanded = expanded;
	json_object_foreach(obj, k, v)
	{
		keys[i].key = k;
		keys[i].val = v;
		i++;
	}
	qsort(keys, n, sizeof(*keys), keyent_cmp);
	node->u.map.anchors = gv_xcalloc(n ? n : 1, sizeof(struct pentry));
	node->u.map.plain = gv_xcalloc(n ? n : 1, sizeof(struct pentry));
	for (i = 0; i < n; i++) {
		struct pentry e;

		if (!entry_compile(c, &e, keys[i].key, keys[i].val, depth, metadata, expanded)) {
			pentry_release(&e);
			goto fail;
		}
		if (e.anchor != AK_NONE)
			node->has_anchors = true;
		if (e.child->has_anchors)
			node->has_anchors = true;
		if (e.wild)
			node->u.map.any_wild = true;
		switch (e.anchor) {
		case AK_COND:
		case AK_EQUAL:
		case AK_EXIST:
		case AK_NEG:
			node->u.map.anchors[na++] = e;
			node->u.map.nanchors = na;
			break;
		default:
			node->u.map.plain[np++] = e;
			node->u.map.nplain = np;
			break;
		}
	}
	order_plain(node->u.map.plain, np);
	free(keys);
	return node;
fail:
	free(keys);
	pnode_free(node);
	return NULL;
}

static struct pnode *node_compile(struct cctx *c, const json_t *j, int depth, bool metadata)
{
	struct pnode *node;

	if (depth > PATTERN_MAX_DEPTH) {
		cfail(c, GV_ELIMIT, "pattern nesting exceeds %d levels", PATTERN_MAX_DEPTH);
		return NULL;
	}
	if (json_is_object(j))
		return map_compile(c, j, depth, metadata, false);
	node = gv_xcalloc(1, sizeof(*node));
	if (json_is_array(j)) {
		size_t i, n = json_array_size(j);

		node->kind = PN_ARRAY;
		node->u.arr.elems = gv_xcalloc(n ? n : 1, sizeof(*node->u.arr.elems));
		for (i = 0; i < n; i++) {
			size_t old = ptr_push_index(c, i);

			node->u.arr.elems[i] =
			    node_compile(c, json_array_get(j, i), depth + 1, false);
			node->u.arr.n = i + 1;
			ptr_pop(c, old);
			if (!node->u.arr.elems[i])
				goto fail;
			if (node->u.arr.elems[i]->has_anchors)
				node->has_anchors = true;
		}
		return node;
	}
	node->kind = PN_SCALAR;
	node->u.sc.type = j ? json_typeof(j) : JSON_NULL;
	node->text = value_go_string(j);
	switch (node->u.sc.type) {
	case JSON_INTEGER:
		node->u.sc.i = json_integer_value(j);
		break;
	case JSON_REAL:
		node->u.sc.d = json_real_value(j);
		break;
	case JSON_STRING:
		node->u.sc.len = json_string_length(j);
		node->u.sc.str = gv_xstrndup(json_string_value(j), node->u.sc.len);
		string_compile(node);
		break;
	default:
		break;
	}
	return node;
fail:
	pnode_free(node);
	return NULL;
}

struct pattern *pattern_compile(const json_t *tree, struct gv_err *err)
{
	struct cctx c = {0};
	struct pattern *p = gv_xcalloc(1, sizeof(*p));

	c.p = p;
	c.err = err;
	p->root = node_compile(&c, tree, 0, false);
	gv_buf_release(&c.ptr);
	if (!p->root) {
		pattern_free(p);
		return NULL;
	}
	return p;
}

void pattern_free(struct pattern *p)
{
	size_t i;

	if (!p)
		return;
	pnode_free(p->root);
	for (i = 0; i < p->nspellings; i++)
		free(p->spellings[i]);
	free(p->spellings);
	free(p);
}

/* ------------------------------------------------------------------ */
/* Matching                                                            */

enum perr_kind {
	PE_NONE,
	PE_FAIL,   /* ordinary mismatch */
	PE_NEG,	   /* negation anchor matched */
	PE_COND,   /* direct conditional-anchor skip */
	PE_GLOBAL, /* direct global-anchor skip */
	PE_AGG,	   /* aggregate skip: all children skipped */
};

struct perr {
	enum perr_kind kind;
	bool empty_path; /* the error carries path "" (array length mismatch) */
	char *path;	 /* verbose mode only, owned */
	char *text;	 /* verbose mode only, owned */
};

struct mctx {
	const struct pattern *p;
	bool verbose;
	bool metered;	    /* charge the work to `left` (the first run) */
	bool over;	    /* the steps ran out: every visit fails */
	unsigned long left; /* steps left, when metered */
	uint64_t *recorded; /* presence table: slot seen */
	uint64_t *present;  /* presence table: key present at least once */
	struct gv_buf path; /* verbose mode: Kyverno path of the current element */
};

/* Charges n steps; false (and every later visit fails) once they run out. */
static bool mcharge(struct mctx *c, unsigned long n)
{
	if (!c->metered)
		return true;
	if (c->over || n > c->left) {
		c->over = true;
		c->left = 0;
		return false;
	}
	c->left -= n;
	return true;
}

/* value_wildcard(pattern, text), charged a step per 16 code points compared. */
static bool mwild(struct mctx *c, const char *pattern, const char *text)
{
	size_t work = 0, max = SIZE_MAX;
	int r;

	if (c->metered)
		max = c->left > SIZE_MAX / 16 ? SIZE_MAX : (size_t)c->left * 16;
	r = value_wildcard_bounded(pattern, text, max, &work);
	if (r < 0) {
		mcharge(c, c->left + 1);
		return false;
	}
	return mcharge(c, work / 16) && r > 0;
}

static bool is_skip(enum perr_kind k)
{
	return k == PE_COND || k == PE_GLOBAL || k == PE_AGG;
}

static bool is_direct(enum perr_kind k)
{
	return k == PE_COND || k == PE_GLOBAL;
}

static void perr_release(struct perr *e)
{
	free(e->path);
	free(e->text);
	memset(e, 0, sizeof(*e));
}

static const char *cur_path(const struct mctx *c)
{
	return gv_buf_str(&c->path);
}

static void perr_set(struct mctx *c, struct perr *e, enum perr_kind kind, const char *path,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Sets e; path NULL means the empty path. Texts are only built in verbose mode. */
static void perr_set(struct mctx *c, struct perr *e, enum perr_kind kind, const char *path,
		     const char *fmt, ...)
{
	struct gv_buf b = {0};
	va_list ap;

	e->kind = kind;
	e->empty_path = path == NULL;
	if (!c->verbose)
		return;
	e->path = gv_xstrdup(path ? path : "");
	va_start(ap, fmt);
	gv_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	e->text = gv_buf_detach(&b);
}

/* Wraps e in a conditional/global anchor error, keeping its path. */
static void perr_wrap(struct mctx *c, struct perr *e, enum perr_kind kind)
{
	e->kind = kind;
	if (c->verbose) {
		char *t = gv_xasprintf("%s: %s",
				       kind == PE_COND ? "conditional anchor mismatch"
						       : "global anchor mismatch",
				       e->text ? e->text : "");

		free(e->text);
		e->text = t;
	}
}

static size_t path_push(struct mctx *c, const char *name)
{
	size_t old = c->path.len;

	if (c->verbose) {
		gv_buf_adds(&c->path, name);
		gv_buf_addc(&c->path, '/');
	}
	return old;
}

static size_t path_push_index(struct mctx *c, size_t i)
{
	size_t old = c->path.len;

	if (c->verbose) {
		gv_buf_addu(&c->path, i);
		gv_buf_addc(&c->path, '/');
	}
	return old;
}

static void path_pop(struct mctx *c, size_t old)
{
	if (c->verbose && c->path.data) {
		c->path.len = old;
		c->path.data[old] = '\0';
	}
}

static void presence_mark(struct mctx *c, int slot, bool present)
{
	if (slot < 0)
		return;
	c->recorded[slot / 64] |= 1ull << (slot % 64);
	if (present)
		c->present[slot / 64] |= 1ull << (slot % 64);
}

/* Go's %T of a resource value. */
static const char *go_type(const json_t *v)
{
	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_OBJECT:
		return "map[string]interface {}";
	case JSON_ARRAY:
		return "[]interface {}";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "int64";
	case JSON_REAL:
		return "float64";
	case JSON_TRUE:
	case JSON_FALSE:
		return "bool";
	default:
		return "<nil>";
	}
}

/* ---- scalars (section 3.4, 3.5) ---- */

/*
 * Per-value cache for the string mini-language: the value's text for
 * duration/quantity parsing and the parse results, computed on first use.
 */
struct vcache {
	const json_t *v;
	bool num_done, has_num;
	const char *num; /* numeric text: string, int, %f of a float, "0" for null */
	char numbuf[512];
	bool dur_done, is_dur;
	long double dur;
	bool qty_done, is_qty;
	struct value_quantity qty;
};

static const char *vc_num(struct vcache *vc)
{
	const json_t *v = vc->v;

	if (vc->num_done)
		return vc->has_num ? vc->num : NULL;
	vc->num_done = true;
	vc->has_num = true;
	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_STRING:
		vc->num = json_string_value(v);
		break;
	case JSON_INTEGER:
		snprintf(vc->numbuf, sizeof(vc->numbuf), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		vc->num = vc->numbuf;
		break;
	case JSON_REAL:
		snprintf(vc->numbuf, sizeof(vc->numbuf), "%f", json_real_value(v));
		vc->num = vc->numbuf;
		break;
	case JSON_NULL:
		vc->num = "0";
		break;
	default:
		vc->has_num = false;
		return NULL;
	}
	return vc->num;
}

static int cmp_result(enum op op, int r)
{
	switch (op) {
	case OP_EQ:
		return r == 0;
	case OP_NE:
		return r != 0;
	case OP_GT:
		return r > 0;
	case OP_LT:
		return r < 0;
	case OP_GE:
		return r >= 0;
	case OP_LE:
		return r <= 0;
	}
	return 0;
}

/* compareString: only = and ! compare, by wildcard on the value's text. */
static bool cmp_string(struct mctx *c, const struct pcmp *pc, const json_t *v)
{
	struct gv_buf b = {0};
	char ibuf[32];
	const char *text;
	bool m;

	if (pc->op != OP_EQ && pc->op != OP_NE)
		return false;
	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_STRING:
		text = json_string_value(v);
		break;
	case JSON_INTEGER:
		snprintf(ibuf, sizeof(ibuf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		text = ibuf;
		break;
	case JSON_REAL:
		value_format_float(json_real_value(v), 'E', &b);
		text = gv_buf_str(&b);
		break;
	case JSON_TRUE:
		text = "true";
		break;
	case JSON_FALSE:
		text = "false";
		break;
	default:
		return false;
	}
	m = mwild(c, pc->operand, text);
	if (b.data)
		gv_buf_release(&b);
	if (c->over)
		return false;
	return pc->op == OP_EQ ? m : !m;
}

/* Charges parsing the value's text (a step per 16 bytes); false when over. */
static bool charge_parse(struct mctx *c, const char *t)
{
	return !t || mcharge(c, strlen(t) / 16);
}

/* validateString: duration, else quantity, else string (section 3.5 step 4). */
static bool cmp_eval(struct mctx *c, const struct pcmp *pc, struct vcache *vc)
{
	if (pc->is_dur) {
		if (!vc->dur_done) {
			const char *t = vc_num(vc);

			if (!charge_parse(c, t))
				return false;
			vc->dur_done = true;
			vc->is_dur = t && value_parse_duration(t, &vc->dur);
		}
		if (vc->is_dur)
			return cmp_result(pc->op, vc->dur < pc->dur   ? -1
						  : vc->dur > pc->dur ? 1
								      : 0);
	}
	if (pc->is_qty) {
		if (!vc->qty_done) {
			const char *t = vc_num(vc);

			if (!charge_parse(c, t))
				return false;
			vc->qty_done = true;
			vc->is_qty = t && value_parse_quantity(t, &vc->qty);
		}
		if (vc->is_qty)
			return cmp_result(pc->op, value_quantity_cmp(&vc->qty, &pc->qty));
	}
	return cmp_string(c, pc, vc->v);
}

static bool term_eval(struct mctx *c, const struct pterm *t, struct vcache *vc)
{
	switch (t->kind) {
	case TERM_RANGE:
		return cmp_eval(c, &t->cmp[0], vc) && cmp_eval(c, &t->cmp[1], vc);
	case TERM_NOTRANGE:
		return cmp_eval(c, &t->cmp[0], vc) || cmp_eval(c, &t->cmp[1], vc);
	default:
		return cmp_eval(c, &t->cmp[0], vc);
	}
}

static bool string_ok(struct mctx *c, const struct pnode *n, const json_t *v)
{
	struct vcache vc;
	size_t a, t;

	if (json_is_string(v) && json_string_length(v) == n->u.sc.len &&
	    memcmp(json_string_value(v), n->u.sc.str, n->u.sc.len) == 0)
		return true;
	vc.v = v;
	vc.num_done = vc.dur_done = vc.qty_done = false;
	for (a = 0; a < n->u.sc.nalts; a++) {
		const struct palt *alt = &n->u.sc.alts[a];
		bool all = true;

		for (t = 0; t < alt->nterms && all; t++)
			all = term_eval(c, &alt->terms[t], &vc);
		if (c->over)
			return false;
		if (all)
			return true;
	}
	return false;
}

static bool real_is_int(double d, long long *out)
{
	if (d != d || d < -9223372036854775808.0 || d >= 9223372036854775808.0 ||
	    d != (double)(long long)d)
		return false;
	*out = (long long)d;
	return true;
}

/* pattern.Validate for a scalar pattern node (section 3.4). */
static bool scalar_ok(struct mctx *c, const struct pnode *n, const json_t *v)
{
	json_type vt = v ? json_typeof(v) : JSON_NULL;
	long long iv;
	double dv;

	switch (n->u.sc.type) {
	case JSON_TRUE:
		return vt == JSON_TRUE;
	case JSON_FALSE:
		return vt == JSON_FALSE;
	case JSON_INTEGER:
		if (vt == JSON_INTEGER)
			return json_integer_value(v) == n->u.sc.i;
		if (vt == JSON_REAL)
			return real_is_int(json_real_value(v), &iv) && iv == n->u.sc.i;
		if (vt == JSON_STRING)
			return value_parse_go_int(json_string_value(v), &iv) && iv == n->u.sc.i;
		return false;
	case JSON_REAL:
		if (vt == JSON_INTEGER)
			return real_is_int(n->u.sc.d, &iv) && iv == json_integer_value(v);
		if (vt == JSON_REAL)
			return json_real_value(v) == n->u.sc.d;
		if (vt == JSON_STRING)
			return value_parse_go_float(json_string_value(v), &dv) && dv == n->u.sc.d;
		return false;
	case JSON_NULL:
		switch (vt) {
		case JSON_NULL:
		case JSON_FALSE:
			return true;
		case JSON_REAL:
			return json_real_value(v) == 0;
		case JSON_INTEGER:
			return json_integer_value(v) == 0;
		case JSON_STRING:
			return json_string_length(v) == 0;
		default:
			return false;
		}
	case JSON_STRING:
		return string_ok(c, n, v);
	default:
		return false;
	}
}

/* ---- tree ---- */

static bool elem(struct mctx *c, const json_t *res, const struct pnode *n, struct perr *e);

static void scalar_fail(struct mctx *c, struct perr *e, const json_t *res, const struct pnode *n)
{
	struct gv_buf rv = {0};

	/* res may be a list sharing its parts: its text is cut */
	if (c->verbose && !value_go_format_max(res, &rv, MAX_SUBST_BYTES))
		gv_buf_addf(&rv, "(a value longer than %d bytes)", MAX_SUBST_BYTES);
	perr_set(c, e, PE_FAIL, cur_path(c), "resource value '%s' does not match '%s' at path %s",
		 gv_buf_str(&rv), n->text, cur_path(c));
	gv_buf_release(&rv);
}

/*
 * Collects a skip; in verbose mode appends its text to the aggregate. The
 * aggregate stops growing at MAX_SUBST_BYTES (cut on a UTF-8 boundary): a
 * list of a million skipped elements would otherwise make a message of
 * tens of MiB.
 */
static void skip_collect(struct perr *sub, struct gv_buf *texts, size_t *nskips, bool *direct)
{
	if (is_direct(sub->kind))
		*direct = true;
	if (sub->text && texts->len < MAX_SUBST_BYTES) {
		size_t n = strlen(sub->text), room;

		if (*nskips)
			gv_buf_adds(texts, SKIP_SEP);
		room = texts->len < MAX_SUBST_BYTES ? MAX_SUBST_BYTES - texts->len : 0;
		if (n > room) {
			n = room;
			while (n && ((unsigned char)sub->text[n] & 0xc0) == 0x80)
				n--;
		}
		gv_buf_add(texts, sub->text, n);
	}
	(*nskips)++;
	perr_release(sub);
}

static void agg_skip(struct mctx *c, struct perr *e, struct gv_buf *texts)
{
	perr_set(c, e, PE_AGG, cur_path(c), "%s", gv_buf_str(texts));
}

/* validateArrayOfMaps and the positional loop of nested arrays (section 3.3). */
static bool array_elems(struct mctx *c, const json_t *res, const struct pnode *const *pats,
			size_t npats, bool positional, struct perr *e)
{
	struct gv_buf texts = {0};
	size_t i, n = positional ? npats : json_array_size(res), applied = 0, nskips = 0;
	bool direct = false, ok = false;

	for (i = 0; i < n; i++) {
		struct perr sub = {0};
		size_t old;
		bool good;

		if (c->over) {
			perr_set(c, e, PE_FAIL, NULL, "%s", "");
			goto out;
		}
		old = path_push_index(c, i);
		good = elem(c, json_array_get(res, i), positional ? pats[i] : pats[0], &sub);

		path_pop(c, old);
		if (!good) {
			if (is_skip(sub.kind)) {
				skip_collect(&sub, &texts, &nskips, &direct);
				continue;
			}
			*e = sub;
			goto out;
		}
		applied++;
	}
	if (applied == 0 && nskips) {
		agg_skip(c, e, &texts);
		goto out;
	}
	ok = true;
out:
	if (texts.data)
		gv_buf_release(&texts);
	return ok;
}

static bool array_rule(struct mctx *c, const json_t *res, const struct pnode *n, struct perr *e)
{
	const struct pnode *first;

	if (n->u.arr.n == 0) {
		perr_set(c, e, PE_FAIL, cur_path(c), "pattern Array empty");
		return false;
	}
	first = n->u.arr.elems[0];
	switch (first->kind) {
	case PN_MAP:
		return array_elems(c, res, (const struct pnode *const *)n->u.arr.elems, 1, false,
				   e);
	case PN_SCALAR:
		return elem(c, res, first, e);
	default:
		if (json_array_size(res) < n->u.arr.n) {
			perr_set(
			    c, e, PE_FAIL, NULL,
			    "validate Array failed, array length mismatch, resource Array len is "
			    "%zu and pattern Array len is %zu",
			    json_array_size(res), n->u.arr.n);
			return false;
		}
		return array_elems(c, res, (const struct pnode *const *)n->u.arr.elems, n->u.arr.n,
				   true, e);
	}
}

/* existenceHandler (section 3.8.3); path holds <path><k>/. */
static bool existence(struct mctx *c, const json_t *v, const struct pentry *en, struct perr *e)
{
	const struct pnode *pl = en->child;
	size_t p, i;

	if (!json_is_array(v)) {
		perr_set(c, e, PE_FAIL, cur_path(c),
			 "invalid resource type %s: Existence ^ () anchor can be used only on "
			 "list/array type resource",
			 go_type(v));
		return false;
	}
	for (p = 0; p < pl->u.arr.n; p++) {
		const struct pnode *pm = pl->u.arr.elems[p];
		bool found = false;

		if (pm->kind != PN_MAP) {
			perr_set(
			    c, e, PE_FAIL, cur_path(c),
			    "invalid pattern type []interface {}: Pattern has to be of type map "
			    "to compare against items in resource");
			return false;
		}
		for (i = 0; i < json_array_size(v) && !found && !c->over; i++) {
			struct perr sub = {0};
			size_t old = path_push_index(c, i);

			found = elem(c, json_array_get(v, i), pm, &sub);
			perr_release(&sub);
			path_pop(c, old);
		}
		if (!found) {
			perr_set(c, e, PE_FAIL, cur_path(c),
				 "existence anchor validation failed at path %s", cur_path(c));
			return false;
		}
	}
	return true;
}

/* The anchor handlers of section 3.8 and the default handler (3.6). */
static bool handle(struct mctx *c, const json_t *res, const struct pentry *en, const char *name,
		   struct perr *e)
{
	const json_t *v = json_object_get(res, name);
	const struct pnode *child = en->child;
	size_t old;
	bool ok = true;

	/* section 3.9: the resource has this labels/annotations map: use the expanded variant */
	if (en->alt && json_is_object(v))
		child = en->alt;
	switch (en->anchor) {
	case AK_NONE:
		if (en->star) {
			if (v && !json_is_null(v))
				return true;
			perr_set(c, e, PE_FAIL, cur_path(c), "%s/%s not found", cur_path(c), name);
			return false;
		}
		old = path_push(c, name);
		ok = elem(c, v, child, e);
		path_pop(c, old);
		return ok;
	case AK_COND:
		old = path_push(c, name);
		if (!v) {
			perr_set(
			    c, e, PE_COND, cur_path(c),
			    "conditional anchor mismatch: conditional anchor key doesn't exist in "
			    "the resource");
			ok = false;
		} else if (!elem(c, v, child, e)) {
			perr_wrap(c, e, PE_COND);
			ok = false;
		}
		path_pop(c, old);
		return ok;
	case AK_GLOBAL:
		if (!v)
			return true;
		old = path_push(c, name);
		if (!elem(c, v, child, e)) {
			perr_wrap(c, e, PE_GLOBAL);
			ok = false;
		}
		path_pop(c, old);
		return ok;
	case AK_EQUAL:
		if (!v)
			return true;
		old = path_push(c, name);
		ok = elem(c, v, child, e);
		path_pop(c, old);
		return ok;
	case AK_NEG:
		if (!v)
			return true;
		old = path_push(c, name);
		perr_set(c, e, PE_NEG, cur_path(c),
			 "negation anchor matched in resource: %s is not allowed", cur_path(c));
		path_pop(c, old);
		return false;
	case AK_EXIST:
		if (!v)
			return true;
		old = path_push(c, name);
		ok = existence(c, v, en, e);
		path_pop(c, old);
		return ok;
	}
	return ok;
}

/* An entry of a map as processed at run time (names differ after wildcard expansion). */
struct rentry {
	const struct pentry *en;
	const char *name; /* lookup key in the resource */
	char *spelling;	  /* owned: anchored spelling after renaming (expanded maps only) */
};

static int rentry_cmp(const void *a, const void *b)
{
	const struct rentry *x = a, *y = b;

	return strcmp(x->spelling ? x->spelling : x->en->key,
		      y->spelling ? y->spelling : y->en->key);
}

static char *spell(const struct pentry *en, const char *name)
{
	if (en->anchor == AK_NONE)
		return gv_xstrdup(name);
	if (en->modifier)
		return gv_xasprintf("%c(%s)", en->modifier, name);
	return gv_xasprintf("(%s)", name);
}

static bool rentry_front(const struct rentry *r)
{
	return r->en->anchor == AK_GLOBAL || r->en->child->has_anchors;
}

/*
 * Builds the entries of an expanded labels/annotations map whose keys have
 * wildcards: each such key is renamed to the first resource key it matches
 * (section 3.9), and the keys are ordered again under their new spelling.
 */
static void expand_entries(struct mctx *c, const json_t *res, const struct pnode *n,
			   struct rentry **pa, size_t *pna, struct rentry **pp, size_t *pnp)
{
	size_t total = n->u.map.nanchors + n->u.map.nplain, i, j, na = 0, np = 0, k = 0;
	struct rentry *all = gv_xcalloc(total ? total : 1, sizeof(*all));
	struct rentry *a, *p, *tmp;
	json_t *obj = (json_t *)(uintptr_t)res; /* iteration only */

	for (i = 0; i < total; i++) {
		const struct pentry *en = i < n->u.map.nanchors
					      ? &n->u.map.anchors[i]
					      : &n->u.map.plain[i - n->u.map.nanchors];
		struct rentry r = {en, en->name, NULL};
		bool dup = false;

		if (en->wild) {
			const char *rk;
			json_t *rv;

			json_object_foreach(obj, rk, rv)
			{
				if (!mcharge(c, 1))
					break;
				if (json_is_string(rv) && mwild(c, en->name, rk)) {
					r.name = rk;
					r.spelling = spell(en, rk);
					break;
				}
			}
		}
		for (j = 0; j < k && !dup; j++)
			dup = strcmp(all[j].spelling ? all[j].spelling : all[j].en->key,
				     r.spelling ? r.spelling : en->key) == 0;
		if (dup) {
			free(r.spelling);
			continue;
		}
		all[k++] = r;
	}
	a = gv_xcalloc(k ? k : 1, sizeof(*a));
	p = gv_xcalloc(k ? k : 1, sizeof(*p));
	for (i = 0; i < k; i++) {
		switch (all[i].en->anchor) {
		case AK_COND:
		case AK_EQUAL:
		case AK_EXIST:
		case AK_NEG:
			a[na++] = all[i];
			break;
		default:
			p[np++] = all[i];
			break;
		}
	}
	free(all);
	qsort(a, na, sizeof(*a), rentry_cmp);
	qsort(p, np, sizeof(*p), rentry_cmp);
	/* same front/back ordering as order_plain() */
	tmp = gv_xcalloc(np ? np : 1, sizeof(*tmp));
	{
		size_t front = 0, back;

		for (i = 0; i < np; i++)
			if (rentry_front(&p[i]))
				front++;
		back = front;
		for (i = 0; i < np; i++) {
			if (rentry_front(&p[i]))
				tmp[--front] = p[i];
			else
				tmp[back++] = p[i];
		}
	}
	free(p);
	/* presence table: renamed keys are present by construction */
	for (i = 0; i < na; i++) {
		const struct pentry *en = a[i].en;

		if (en->anchor != AK_COND && en->anchor != AK_EXIST)
			continue;
		if (a[i].spelling)
			presence_mark(c, presence_find(c->p, a[i].spelling), true);
		else
			presence_mark(c, en->presence, json_object_get(res, en->name) != NULL);
	}
	*pa = a;
	*pna = na;
	*pp = tmp;
	*pnp = np;
}

static void rentries_free(struct rentry *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(r[i].spelling);
	free(r);
}

/* validateMap (section 3.2) for a map pattern and a map resource. */
static bool map_rule(struct mctx *c, const json_t *res, const struct pnode *n, struct perr *e)
{
	struct rentry *dyn_a = NULL, *dyn_p = NULL;
	size_t na = n->u.map.nanchors, np = n->u.map.nplain, i, applied = 0, nskips = 0;
	struct gv_buf texts = {0};
	bool direct = false, ok = false;

	if (n->u.map.any_wild) {
		expand_entries(c, res, n, &dyn_a, &na, &dyn_p, &np);
	} else {
		/* presence table (section 3.8.7) */
		for (i = 0; i < na; i++) {
			const struct pentry *en = &n->u.map.anchors[i];

			if (en->presence >= 0)
				presence_mark(c, en->presence,
					      json_object_get(res, en->name) != NULL);
		}
	}
	for (i = 0; i < na; i++) {
		const struct pentry *en = dyn_a ? dyn_a[i].en : &n->u.map.anchors[i];
		const char *name = dyn_a ? dyn_a[i].name : en->name;
		struct perr sub = {0};

		if (handle(c, res, en, name, &sub)) {
			applied++;
			continue;
		}
		if (is_skip(sub.kind)) {
			skip_collect(&sub, &texts, &nskips, &direct);
			continue;
		}
		if (direct) {
			/* a failed conditional in this map swallows the failure */
			perr_release(&sub);
			continue;
		}
		*e = sub;
		goto out;
	}
	if (nskips && (applied == 0 || direct)) {
		agg_skip(c, e, &texts);
		goto out;
	}
	for (i = 0; i < np; i++) {
		const struct pentry *en = dyn_p ? dyn_p[i].en : &n->u.map.plain[i];
		const char *name = dyn_p ? dyn_p[i].name : en->name;

		if (!handle(c, res, en, name, e))
			goto out;
	}
	ok = true;
out:
	if (texts.data)
		gv_buf_release(&texts);
	if (dyn_a)
		rentries_free(dyn_a, na);
	if (dyn_p)
		rentries_free(dyn_p, np);
	return ok;
}

/* validateResourceElement (section 3.1). */
static bool elem(struct mctx *c, const json_t *res, const struct pnode *n, struct perr *e)
{
	size_t i;

	if (!mcharge(c, 1)) {
		perr_set(c, e, PE_FAIL, NULL, "%s", "");
		return false;
	}
	switch (n->kind) {
	case PN_MAP:
		if (!json_is_object(res)) {
			perr_set(
			    c, e, PE_FAIL, cur_path(c),
			    "pattern and resource have different structures. Path: %s. Expected "
			    "map[string]interface {}, found %s",
			    cur_path(c), go_type(res));
			return false;
		}
		return map_rule(c, res, n, e);
	case PN_ARRAY:
		if (!json_is_array(res)) {
			perr_set(c, e, PE_FAIL, cur_path(c),
				 "validation rule failed at path %s, resource does not satisfy the "
				 "expected overlay pattern",
				 cur_path(c));
			return false;
		}
		return array_rule(c, res, n, e);
	case PN_SCALAR:
		if (json_is_array(res)) {
			for (i = 0; i < json_array_size(res); i++) {
				if (!mcharge(c, 1) || !scalar_ok(c, n, json_array_get(res, i))) {
					scalar_fail(c, e, res, n);
					return false;
				}
			}
			return true;
		}
		if (!scalar_ok(c, n, res)) {
			scalar_fail(c, e, res, n);
			return false;
		}
		return true;
	}
	return true;
}

#define PRESENCE_STACK_WORDS 4

/*
 * One run of MatchPattern; returns the status and fills e (texts in verbose
 * mode). left (NULL: not charged) holds the steps left, and is updated;
 * *over is set when they ran out (the status is then PATTERN_ERROR).
 */
static enum pattern_status match_run(const struct pattern *p, const json_t *resource, bool verbose,
				     unsigned long *left, bool *over, struct perr *e)
{
	uint64_t stack_rec[PRESENCE_STACK_WORDS], stack_pres[PRESENCE_STACK_WORDS];
	size_t words = (p->nspellings + 63) / 64, i;
	struct mctx c = {0};
	enum pattern_status st;
	bool missing = false;

	c.p = p;
	c.verbose = verbose;
	c.metered = left != NULL;
	c.left = left ? *left : 0;
	if (words <= PRESENCE_STACK_WORDS) {
		c.recorded = stack_rec;
		c.present = stack_pres;
	} else {
		c.recorded = gv_xcalloc(words, sizeof(uint64_t));
		c.present = gv_xcalloc(words, sizeof(uint64_t));
	}
	memset(c.recorded, 0, (words ? words : 1) * sizeof(uint64_t));
	memset(c.present, 0, (words ? words : 1) * sizeof(uint64_t));
	if (verbose)
		gv_buf_addc(&c.path, '/');
	if (elem(&c, resource, p->root, e)) {
		st = PATTERN_PASS;
		goto out;
	}
	if (c.over) {
		st = PATTERN_ERROR;
		goto out;
	}
	if (is_skip(e->kind)) {
		st = PATTERN_SKIP;
		goto out;
	}
	if (e->kind == PE_NEG) {
		st = PATTERN_FAIL;
		goto out;
	}
	for (i = 0; i < words; i++)
		if (c.recorded[i] & ~c.present[i])
			missing = true;
	st = missing || e->empty_path ? PATTERN_ERROR : PATTERN_FAIL;
out:
	if (left)
		*left = c.left;
	*over = c.over;
	if (c.recorded != stack_rec) {
		free(c.recorded);
		free(c.present);
	}
	if (c.path.data)
		gv_buf_release(&c.path);
	return st;
}

/* Shared empty string of outcomes that carry no text (never freed). */
static char outcome_empty[1];

/* pattern_match_budget; *over set when the budget ran out. */
static void match(const struct pattern *p, const json_t *resource, struct jp_budget *b,
		  struct pattern_outcome *out, bool *over)
{
	struct jp_budget local = {.max = RULE_MAX_STEPS};
	struct perr e = {0};
	unsigned long left, start;

	if (!b)
		b = &local;
	left = start = budget_left(b);
	out->status = match_run(p, resource, false, &left, over, &e);
	out->path = outcome_empty;
	out->msg = outcome_empty;
	budget_charge(b, *over ? start + 1 : start - left);
	if (out->status == PATTERN_PASS)
		return;
	perr_release(&e);
	if (*over) {
		out->msg = gv_xasprintf(RULE_BUDGET_MSG, budget_max(b));
		return;
	}
	out->status = match_run(p, resource, true, NULL, over, &e);
	if (out->status == PATTERN_FAIL) {
		out->path = e.path ? e.path : gv_xstrdup("");
		e.path = NULL;
	}
	out->msg = e.text ? e.text : gv_xstrdup("");
	e.text = NULL;
	perr_release(&e);
}

void pattern_match_budget(const struct pattern *p, const json_t *resource, struct jp_budget *b,
			  struct pattern_outcome *out)
{
	bool over;

	match(p, resource, b, out, &over);
}

void pattern_match(const struct pattern *p, const json_t *resource, struct pattern_outcome *out)
{
	pattern_match_budget(p, resource, NULL, out);
}

void pattern_outcome_release(struct pattern_outcome *o)
{
	if (o->path != outcome_empty)
		free(o->path);
	if (o->msg != outcome_empty)
		free(o->msg);
	o->path = outcome_empty;
	o->msg = outcome_empty;
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */

/* "rule <rule>[<i><what><text>": one anyPattern's part of the message. */
static void any_item(struct gv_buf *b, const char *rule, size_t i, const char *what,
		     const char *text)
{
	gv_buf_adds(b, "rule ");
	gv_buf_adds(b, rule);
	gv_buf_addc(b, '[');
	gv_buf_addu(b, i);
	gv_buf_adds(b, what);
	gv_buf_adds(b, text);
}

/* validate.message with a '.' appended when it does not end with one. */
static void add_message(struct gv_buf *b, const char *message)
{
	size_t n = strlen(message);

	gv_buf_adds(b, message);
	if (n == 0 || message[n - 1] != '.')
		gv_buf_addc(b, '.');
	gv_buf_addc(b, ' ');
}

char *pattern_message(const struct pattern_outcome *o, const char *rule, const char *message)
{
	struct gv_buf b = {0};
	bool has_msg = message && *message;

	/* gv_buf_adds, not a format: one message per rule and evaluation */
	switch (o->status) {
	case PATTERN_PASS:
		gv_buf_adds(&b, "validation rule '");
		gv_buf_adds(&b, rule);
		gv_buf_adds(&b, "' passed.");
		break;
	case PATTERN_SKIP:
		gv_buf_adds(&b, o->msg ? o->msg : "");
		break;
	case PATTERN_FAIL:
		gv_buf_adds(&b, "validation error: ");
		if (has_msg)
			add_message(&b, message);
		gv_buf_adds(&b, "rule ");
		gv_buf_adds(&b, rule);
		gv_buf_adds(&b, " failed at path ");
		gv_buf_adds(&b, o->path ? o->path : "");
		break;
	case PATTERN_ERROR:
		gv_buf_adds(&b, "validation error: ");
		if (has_msg)
			add_message(&b, message);
		gv_buf_adds(&b, "rule ");
		gv_buf_adds(&b, rule);
		gv_buf_adds(&b, " execution error: ");
		gv_buf_adds(&b, o->msg ? o->msg : "");
		break;
	}
	return gv_buf_detach(&b);
}

char *pattern_any_budget(struct pattern *const *pats, size_t n, const json_t *resource,
			 const char *rule, const char *message, struct jp_budget *budget,
			 enum pattern_status *status)
{
	struct jp_budget local = {.max = RULE_MAX_STEPS};
	struct gv_buf fails = {0}, skips = {0}, b = {0};
	size_t i;

	if (!budget)
		budget = &local; /* one budget for all the patterns */
	for (i = 0; i < n; i++) {
		struct pattern_outcome o;
		bool over;

		match(pats[i], resource, budget, &o, &over);
		if (over) {
			char *m = pattern_message(&o, rule, message);

			pattern_outcome_release(&o);
			gv_buf_release(&fails);
			gv_buf_release(&skips);
			*status = PATTERN_ERROR;
			return m;
		}
		switch (o.status) {
		case PATTERN_PASS:
			pattern_outcome_release(&o);
			gv_buf_release(&fails);
			gv_buf_release(&skips);
			*status = PATTERN_PASS;
			gv_buf_adds(&b, "validation rule '");
			gv_buf_adds(&b, rule);
			gv_buf_adds(&b, "' anyPattern[");
			gv_buf_addu(&b, i);
			gv_buf_adds(&b, "] passed.");
			return gv_buf_detach(&b);
		case PATTERN_SKIP:
			if (skips.len)
				gv_buf_addc(&skips, ' ');
			any_item(&skips, rule, i, "] skipped: ", o.msg);
			break;
		case PATTERN_FAIL:
		case PATTERN_ERROR:
			if (fails.len)
				gv_buf_addc(&fails, ' ');
			if (o.status == PATTERN_FAIL && o.path[0])
				any_item(&fails, rule, i, "] failed at path ", o.path);
			else
				any_item(&fails, rule, i, "] failed: ", o.msg);
			break;
		}
		pattern_outcome_release(&o);
	}
	if (fails.len) {
		*status = PATTERN_FAIL;
		gv_buf_adds(&b, "validation error: ");
		if (message && *message) {
			gv_buf_adds(&b, message);
			gv_buf_adds(&b, message[strlen(message) - 1] == '.' ? " " : ". ");
		}
		gv_buf_adds(&b, gv_buf_str(&fails));
	} else if (skips.len) {
		*status = PATTERN_SKIP;
		gv_buf_adds(&b, gv_buf_str(&skips));
	} else {
		*status = PATTERN_PASS;
		gv_buf_adds(&b, message ? message : "");
	}
	gv_buf_release(&fails);
	gv_buf_release(&skips);
	return gv_buf_detach(&b);
}

char *pattern_any(struct pattern *const *pats, size_t n, const json_t *resource, const char *rule,
		  const char *message, enum pattern_status *status)
{
	return pattern_any_budget(pats, n, resource, rule, message, NULL, status);
}
