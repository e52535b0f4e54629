#include "common/yaml.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/utf8.h"
#include "common/banned.h"

#define MAX_DEPTH 512
/*
 * Nodes that aliases may add to one document (each alias is a copy of its
 * anchor): without a bound, a few kilobytes of nested aliases ("billion
 * laughs") expand to billions of nodes. go-yaml refuses such documents too.
 */
#define MAX_ALIAS_NODES 100000

/*
 * One node's position. Entries hold their parent's index and their own
 * pointer segment rather than the whole pointer, so a deep document with
 * long keys costs memory in proportion to its size, not to size times
 * depth.
 */
#define SRC_ROOT ((size_t)-1) /* parent of a document's root */

struct srcent {
	size_t parent; /* index of the enclosing node's entry, or SRC_ROOT */
	char *seg;     /* owned: RFC 6901-escaped segment; NULL for the root */
	int line, col;
};

struct gv_srcmap {
	struct srcent *v;
	size_t n, cap;
};

/* Size of a loaded subtree: nodes, and levels (a scalar is 1). */
struct node_size {
	size_t nodes;
	int height;
};

struct anchor {
	char *name;
	json_t *value;
	struct node_size size;
};

struct loader {
	yaml_parser_t parser;
	yaml_event_t ev;
	struct gv_srcmap *map;
	size_t parent;	 /* entry of the node whose children are being loaded */
	const char *seg; /* segment (unescaped) of the next node: key or index */
	struct anchor *anchors;
	size_t nanchors;
	const char *file;
	struct gv_err *err;
	int depth;
	size_t alias_nodes; /* nodes added by aliases in the current document */
	int map_depth;	    /* record positions down to this depth; -1 = all */
	bool reals;	    /* gv_yaml_load_reals(): integer values as json_real */
};

/* Adds an entry (seg unescaped, NULL for a root) and returns its index. */
static size_t map_add(struct gv_srcmap *m, size_t parent, const char *seg, int line, int col)
{
	struct gv_buf b = {0};

	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->v = gv_xrealloc(m->v, m->cap * sizeof(*m->v));
	}
	if (seg) {
		gv_pointer_add(&b, seg);
		m->v[m->n].seg = gv_xstrdup(b.data + 1); /* without the '/' */
		gv_buf_release(&b);
	} else {
		m->v[m->n].seg = NULL;
	}
	m->v[m->n].parent = parent;
	m->v[m->n].line = line;
	m->v[m->n].col = col;
	return m->n++;
}

static void map_free(struct gv_srcmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].seg);
	free(m->v);
	free(m);
}

int gv_srcmap_find(const struct gv_srcmap *map, const char *pointer, int *line, int *col)
{
	size_t best = 0, bestlen = 0;
	size_t *len; /* per entry: length of `pointer` its pointer matches, or SRC_ROOT (none) */
	int found = 0;

	if (!map || !map->n)
		return 0;
	/* parents come before their children, so one pass resolves every entry */
	len = gv_xmalloc(map->n * sizeof(*len));
	for (size_t i = 0; i < map->n; i++) {
		const struct srcent *e = &map->v[i];
		size_t base, l;

		len[i] = SRC_ROOT;
		if (e->parent == SRC_ROOT) {
			len[i] = 0; /* the document root matches every pointer */
		} else if (e->parent < i && (base = len[e->parent]) != SRC_ROOT &&
			   pointer[base] == '/') {
			l = strlen(e->seg);
			if (!strncmp(pointer + base + 1, e->seg, l) &&
			    (pointer[base + 1 + l] == '\0' || pointer[base + 1 + l] == '/'))
				len[i] = base + 1 + l;
		}
		if (len[i] != SRC_ROOT && (!found || len[i] >= bestlen)) {
			best = i;
			bestlen = len[i];
			found = 1;
		}
	}
	free(len);
	if (!found)
		return 0;
	*line = map->v[best].line;
	*col = map->v[best].col;
	return 1;
}

void gv_err_locate(struct gv_err *err, const char *file, const struct gv_srcmap *map)
{
	if (!err || !err->code)
		return;
	if (file && !err->file[0])
		snprintf(err->file, sizeof(err->file), "%s", file);
	if (err->line == 0)
		gv_srcmap_find(map, err->pointer, &err->line, &err->col);
}

void gv_pointer_add(struct gv_buf *buf, const char *segment)
{
	gv_buf_addc(buf, '/');
	for (const char *s = segment; *s; s++) {
		if (*s == '~')
			gv_buf_adds(buf, "~0");
		else if (*s == '/')
			gv_buf_adds(buf, "~1");
		else
			gv_buf_addc(buf, *s);
	}
}

static enum gv_code parse_error(struct loader *ld)
{
	yaml_parser_t *p = &ld->parser;
	size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;

	if (p->error == YAML_MEMORY_ERROR) {
		fputs("gavel: out of memory\n", stderr);
		abort();
	}
	if (ld->err && !ld->err->code) {
		snprintf(ld->err->file, sizeof(ld->err->file), "%s", ld->file);
		ld->err->line = (int)line;
		ld->err->col = (int)col;
	}
	return gv_err_set(ld->err, GV_EINVAL, "YAML: %s%s%s",
			  p->problem ? p->problem : "syntax error", p->context ? " " : "",
			  p->context ? p->context : "");
}

static enum gv_code next(struct loader *ld)
{
	yaml_event_delete(&ld->ev);
	if (!yaml_parser_parse(&ld->parser, &ld->ev))
		return parse_error(ld);
	return GV_OK;
}

static int all_match(const char *s, int (*pred)(int))
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s != '_' && !pred((unsigned char)*s))
			return 0;
	return 1;
}

static int isodigit_(int c)
{
	return c >= '0' && c <= '7';
}

static int isbindigit(int c)
{
	return c == '0' || c == '1';
}

/* Integer forms of YAML 1.1 as go-yaml v2 reads them (strconv base 0, '_' allowed). */
static int resolve_int(const char *s, json_int_t *out)
{
	char clean[72];
	size_t n = 0;
	const char *p = s;
	int neg = 0, base = 10;
	unsigned long long v;
	char *end;

	if (*p == '+' || *p == '-') {
		neg = *p == '-';
		p++;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		if (!all_match(p, isxdigit))
			return 0;
	} else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
		base = 2;
		p += 2;
		if (!all_match(p, isbindigit))
			return 0;
	} else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
		base = 8;
		p += 2;
		if (!all_match(p, isodigit_))
			return 0;
	} else if (p[0] == '0' && p[1]) {
		base = 8;
		p += 1;
		if (!all_match(p, isodigit_))
			return 0;
	} else if (!all_match(p, isdigit)) {
		return 0;
	}
	for (; *p && n + 1 < sizeof(clean); p++)
		if (*p != '_')
			clean[n++] = *p;
	if (*p)
		return 0;
	clean[n] = '\0';
	if (!n)
		return 0;
	errno = 0;
	v = strtoull(clean, &end, base);
	if (errno || *end)
		return 0;
	if (neg) {
		if (v > (unsigned long long)LLONG_MAX + 1)
			return 0;
		*out = (json_int_t)(0 - v);
	} else {
		if (v > (unsigned long long)LLONG_MAX)
			return 0;
		*out = (json_int_t)v;
	}
	return 1;
}

/*
 * Float forms as go-yaml v2 reads them: .inf/.nan spellings; a scalar
 * starting with '.' as strconv.ParseFloat reads it (an underscore only
 * between digits: ".1_5" but not ".15_"); any other one with its
 * underscores removed, then [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
 * of any length. An overflow is no float (ParseFloat fails; "1e999" stays text).
 */
static int resolve_float(const char *s, double *out)
{
	static const char *const pinf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"};
	static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF"};
	static const char *const nan_[] = {".nan", ".NaN", ".NAN"};
	size_t n = 0, len = strlen(s);
	const char *p;
	char *clean, *end;
	int digits = 0, ok = 0;

	for (size_t k = 0; k < GV_ARRAY_LEN(pinf); k++)
		if (!strcmp(s, pinf[k])) {
			*out = INFINITY;
			return 1;
		}
	for (size_t k = 0; k < GV_ARRAY_LEN(ninf); k++)
		if (!strcmp(s, ninf[k])) {
			*out = -INFINITY;
			return 1;
		}
	for (size_t k = 0; k < GV_ARRAY_LEN(nan_); k++)
		if (!strcmp(s, nan_[k])) {
			*out = NAN;
			return 1;
		}
	if (s[0] == '.')
		for (p = s; *p; p++)
			if (*p == '_' && (p == s || !isdigit((unsigned char)p[-1]) ||
					  !isdigit((unsigned char)p[1])))
				return 0;
	clean = gv_xmalloc(len + 1);
	for (p = s; *p; p++)
		if (*p != '_')
			clean[n++] = *p;
	clean[n] = '\0';
	p = clean;
	if (*p == '+' || *p == '-')
		p++;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++)
			digits++;
	} else {
		for (; isdigit((unsigned char)*p); p++)
			digits++;
		if (digits && *p == '.')
			for (p++; isdigit((unsigned char)*p); p++)
				;
	}
	if (digits && (*p == 'e' || *p == 'E')) {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			digits = 0;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (digits && !*p) {
		errno = 0;
		*out = strtod(clean, &end);
		ok = *end == '\0' && !(errno == ERANGE && isinf(*out));
	}
	free(clean);
	return ok;
}

static json_t *number_value(double d)
{
	if (isfinite(d) && d == floor(d) && fabs(d) < 9007199254740992.0)
		return json_integer((json_int_t)d);
	return json_real(d);
}

/*
 * Whether a plain scalar is text without looking further: it cannot be a
 * null, bool or number, because it is longer than every null and bool
 * spelling (at most 5 bytes) and cannot start a number, or because its
 * first character starts none of them. Most scalars of a manifest (names,
 * images, labels) end here, before the comparisons of resolve_plain().
 */
static bool plain_is_text(const char *s)
{
	unsigned char c = (unsigned char)s[0];

	if (!c || strchr("0123456789+-.", c))
		return false;
	if (!strchr("~nNtTyYoOfF", c))
		return true;
	return strnlen(s, 6) > 5;
}

static json_t *resolve_plain(const char *s)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
					    "on",   "On",   "ON",   "y",   "Y"};
	static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO",
					     "off",   "Off",   "OFF",	"n",  "N"};
	json_int_t i;
	double d;

	if (plain_is_text(s))
		return json_string(s);
	for (size_t k = 0; k < GV_ARRAY_LEN(nulls); k++)
		if (!strcmp(s, nulls[k]))
			return json_null();
	for (size_t k = 0; k < GV_ARRAY_LEN(trues); k++)
		if (!strcmp(s, trues[k]))
			return json_true();
	for (size_t k = 0; k < GV_ARRAY_LEN(falses); k++)
		if (!strcmp(s, falses[k]))
			return json_false();
	/* go-yaml looks for a number only when the first character may start one ("_1" is text) */
	if (!strchr("0123456789+-.", s[0]))
		return json_string(s);
	if (resolve_int(s, &i))
		return json_integer(i);
	if (resolve_float(s, &d))
		return number_value(d);
	return json_string(s);
}

static json_t *scalar_value(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	const char *tag = (const char *)ev->data.scalar.tag;
	size_t len = ev->data.scalar.length;

	if (tag) {
		if (!strcmp(tag, YAML_STR_TAG) || !strcmp(tag, "!"))
			return json_stringn(s, len);
		if (!strcmp(tag, YAML_NULL_TAG))
			return json_null();
		if (!strcmp(tag, YAML_BOOL_TAG) || !strcmp(tag, YAML_INT_TAG) ||
		    !strcmp(tag, YAML_FLOAT_TAG)) {
			json_t *v = resolve_plain(s);
			if (!json_is_string(v))
				return v;
			json_decref(v);
		}
	}
	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, len);
	if (strlen(s) != len) /* embedded NUL: keep as string */
		return json_stringn(s, len);
	return resolve_plain(s);
}

static void remember_anchor(struct loader *ld, const yaml_char_t *name, json_t *v,
			    const struct node_size *size)
{
	if (!name)
		return;
	ld->anchors = gv_xrealloc(ld->anchors, (ld->nanchors + 1) * sizeof(*ld->anchors));
	ld->anchors[ld->nanchors].name = gv_xstrdup((const char *)name);
	ld->anchors[ld->nanchors].value = json_incref(v);
	ld->anchors[ld->nanchors].size = *size;
	ld->nanchors++;
}

/* Adds a child's size to its parent's. */
static void size_add(struct node_size *parent, const struct node_size *child)
{
	parent->nodes += child->nodes;
	if (child->height + 1 > parent->height)
		parent->height = child->height + 1;
}

static char *scalar_key_text(const json_t *k)
{
	if (json_is_string(k))
		return gv_xstrdup(json_string_value(k));
	if (json_is_null(k))
		return gv_xstrdup("null");
	return json_dumps(k, JSON_ENCODE_ANY | JSON_COMPACT);
}

/*
 * The key text of a scalar key that resolves to a float JSON cannot hold
 * (.inf, .nan): what sigs.k8s.io/yaml makes of it
 * (strconv.FormatFloat(f, 'g', -1, 64)).
 */
static char *nonfinite_key_text(const yaml_event_t *ev)
{
	double d = 0;

	resolve_float((const char *)ev->data.scalar.value, &d);
	return gv_xstrdup(isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
}

static enum gv_code load_node(struct loader *ld, json_t **out, struct node_size *size);

/*
 * The text of a scalar key that is a string as written (quoted or block,
 * or plain_is_text(), untagged, without an anchor), taken over from the
 * event (libyaml allocates it with malloc(); the event then frees NULL):
 * the same text scalar_key_text() gives, up to a NUL byte, without
 * building a value and copying it twice. NULL for any other key.
 */
static char *key_text_taken(yaml_event_t *ev)
{
	char *s = (char *)ev->data.scalar.value;

	if (ev->data.scalar.tag || ev->data.scalar.anchor)
		return NULL;
	if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    (!plain_is_text(s) || strlen(s) != ev->data.scalar.length))
		return NULL;
	ev->data.scalar.value = NULL;
	ev->data.scalar.length = 0;
	return s;
}

/* Records the current event's position in the error (first error wins). */
static void set_pos(struct loader *ld)
{
	if (!ld->err || ld->err->code)
		return;
	snprintf(ld->err->file, sizeof(ld->err->file), "%s", ld->file);
	ld->err->line = (int)ld->ev.start_mark.line + 1;
	ld->err->col = (int)ld->ev.start_mark.column + 1;
}

/* The key an alias stands for (new reference), or NULL with the error set. */
static json_t *alias_key(struct loader *ld)
{
	const char *name = (const char *)ld->ev.data.alias.anchor;

	for (size_t i = ld->nanchors; i-- > 0;) {
		const json_t *v = ld->anchors[i].value;

		if (strcmp(ld->anchors[i].name, name))
			continue;
		if (json_is_object(v) || json_is_array(v))
			break;
		return json_incref((json_t *)v);
	}
	set_pos(ld);
	gv_err_set(ld->err, GV_EINVAL, "YAML: invalid map key (alias '%s' of no scalar)", name);
	return NULL;
}

static enum gv_code load_mapping(struct loader *ld, json_t **out, struct node_size *size)
{
	json_t *obj = json_object();
	const yaml_char_t *anchor = ld->ev.data.mapping_start.anchor;
	char *anchor_name = anchor ? gv_xstrdup((const char *)anchor) : NULL;
	enum gv_code rc;

	for (;;) {
		json_t *key = NULL, *val = NULL;
		struct node_size vs = {0};
		char *ktext;

		if ((rc = next(ld)))
			goto fail;
		if (ld->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (ld->ev.type == YAML_ALIAS_EVENT) {
			key = alias_key(ld);
			if (!key) {
				rc = GV_EINVAL;
				goto fail;
			}
			ktext = scalar_key_text(key);
		} else if (ld->ev.type != YAML_SCALAR_EVENT) {
			/*
			 * A mapping or sequence as a key: JSON has no such key, and
			 * sigs.k8s.io/yaml refuses it too. (Turning it into text, as
			 * gavel once did, nests escaped JSON in keys of keys and grows
			 * exponentially with the nesting.)
			 */
			set_pos(ld);
			rc = gv_err_set(ld->err, GV_EINVAL,
					"YAML: invalid map key (a mapping or sequence)");
			goto fail;
		} else if ((ktext = key_text_taken(&ld->ev))) {
			/* the common key: its text as written, taken from the event */
		} else {
			static const struct node_size one = {1, 1};

			key = scalar_value(&ld->ev);
			ktext = key ? scalar_key_text(key) : nonfinite_key_text(&ld->ev);
			if (key)
				remember_anchor(ld, ld->ev.data.scalar.anchor, key, &one);
		}
		json_decref(key);
		if ((rc = next(ld))) {
			free(ktext);
			goto fail;
		}
		ld->seg = ktext;
		rc = load_node(ld, &val, &vs);
		if (rc) {
			free(ktext);
			goto fail;
		}
		size_add(size, &vs);
		json_object_set_new(obj, ktext, val);
		free(ktext);
	}
	if (anchor_name)
		remember_anchor(ld, (const yaml_char_t *)anchor_name, obj, size);
	free(anchor_name);
	*out = obj;
	return GV_OK;
fail:
	free(anchor_name);
	json_decref(obj);
	return rc;
}

static enum gv_code load_sequence(struct loader *ld, json_t **out, struct node_size *size)
{
	json_t *arr = json_array();
	const yaml_char_t *anchor = ld->ev.data.sequence_start.anchor;
	char *anchor_name = anchor ? gv_xstrdup((const char *)anchor) : NULL;
	enum gv_code rc;

	for (size_t i = 0;; i++) {
		json_t *val = NULL;
		struct node_size vs = {0};
		char idx[32];

		if ((rc = next(ld)))
			goto fail;
		if (ld->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		if (ld->map_depth < 0 || ld->depth <= ld->map_depth) /* recorded: load_node() */
			snprintf(idx, sizeof(idx), "%zu", i);
		ld->seg = idx;
		rc = load_node(ld, &val, &vs);
		if (rc)
			goto fail;
		size_add(size, &vs);
		json_array_append_new(arr, val);
	}
	if (anchor_name)
		remember_anchor(ld, (const yaml_char_t *)anchor_name, arr, size);
	free(anchor_name);
	*out = arr;
	return GV_OK;
fail:
	free(anchor_name);
	json_decref(arr);
	return rc;
}

/*
 * Loads the node whose first event is ld->ev; *size receives its size. The
 * depth bound holds for the expanded tree: an alias counts with its
 * anchor's height.
 */
static enum gv_code load_node(struct loader *ld, json_t **out, struct node_size *size)
{
	enum gv_code rc;
	size_t parent;

	size->nodes = 1;
	size->height = 1;
	if (ld->depth >= MAX_DEPTH) {
		set_pos(ld);
		return gv_err_set(ld->err, GV_ELIMIT, "YAML: nesting deeper than %d levels",
				  MAX_DEPTH);
	}
	parent = ld->parent;
	/* Deeper nodes are not recorded: lookups fall back to the nearest recorded ancestor. */
	if (ld->map_depth < 0 || ld->depth <= ld->map_depth)
		ld->parent = map_add(ld->map, parent, ld->seg, (int)ld->ev.start_mark.line + 1,
				     (int)ld->ev.start_mark.column + 1);
	ld->seg = NULL;
	ld->depth++;
	switch (ld->ev.type) {
	case YAML_SCALAR_EVENT:
		*out = scalar_value(&ld->ev);
		if (!*out) {
			/* .inf, .nan: JSON has no such number (Kubernetes refuses them too) */
			set_pos(ld);
			rc = gv_err_set(ld->err, GV_EINVAL,
					"YAML: unsupported value %s (not a JSON number)",
					(const char *)ld->ev.data.scalar.value);
			break;
		}
		remember_anchor(ld, ld->ev.data.scalar.anchor, *out, size);
		/* the anchor keeps the integer: an alias of it may be a key ("1", not "1.0") */
		if (ld->reals && json_is_integer(*out)) {
			json_t *r = json_real((double)json_integer_value(*out));
			json_decref(*out);
			*out = r;
		}
		rc = GV_OK;
		break;
	case YAML_MAPPING_START_EVENT:
		rc = load_mapping(ld, out, size);
		break;
	case YAML_SEQUENCE_START_EVENT:
		rc = load_sequence(ld, out, size);
		break;
	case YAML_ALIAS_EVENT: {
		const char *name = (const char *)ld->ev.data.alias.anchor;
		const struct anchor *a = NULL;

		rc = GV_OK;
		*out = NULL;
		for (size_t i = ld->nanchors; i-- > 0;)
			if (!strcmp(ld->anchors[i].name, name)) {
				a = &ld->anchors[i];
				break;
			}
		if (!a) {
			set_pos(ld);
			rc = gv_err_set(ld->err, GV_EINVAL, "YAML: unknown anchor '%s'", name);
		} else if (ld->depth - 1 + a->size.height > MAX_DEPTH) {
			set_pos(ld);
			rc = gv_err_set(ld->err, GV_ELIMIT, "YAML: nesting deeper than %d levels",
					MAX_DEPTH);
		} else if (a->size.nodes > MAX_ALIAS_NODES - ld->alias_nodes) {
			set_pos(ld);
			rc = gv_err_set(ld->err, GV_ELIMIT,
					"YAML: aliases expand to more than %d nodes",
					MAX_ALIAS_NODES);
		} else {
			ld->alias_nodes += a->size.nodes;
			*size = a->size;
			*out = json_deep_copy(a->value);
			if (ld->reals && json_is_integer(*out)) {
				json_t *r = json_real((double)json_integer_value(*out));
				json_decref(*out);
				*out = r;
			}
		}
		break;
	}
	default:
		rc = gv_err_set(ld->err, GV_EINVAL, "YAML: unexpected event %d", (int)ld->ev.type);
	}
	ld->depth--;
	ld->parent = parent;
	return rc;
}

static void docs_push(struct gv_docs *docs, json_t *v, struct gv_srcmap *map, int line)
{
	docs->v = gv_xrealloc(docs->v, (docs->n + 1) * sizeof(*docs->v));
	docs->v[docs->n].value = v;
	docs->v[docs->n].map = map;
	docs->v[docs->n].line = line;
	docs->n++;
}

static void free_anchors(struct loader *ld)
{
	for (size_t i = 0; i < ld->nanchors; i++) {
		free(ld->anchors[i].name);
		json_decref(ld->anchors[i].value);
	}
	free(ld->anchors);
	ld->anchors = NULL;
	ld->nanchors = 0;
}

enum gv_code gv_yaml_load(const char *buf, size_t len, const char *file, struct gv_docs *docs,
			  struct gv_err *err)
{
	return gv_yaml_load_ex(buf, len, file, -1, docs, err);
}

static enum gv_code load_all(const char *buf, size_t len, const char *file, int map_depth,
			     bool reals, struct gv_docs *docs, struct gv_err *err);

enum gv_code gv_yaml_load_ex(const char *buf, size_t len, const char *file, int map_depth,
			     struct gv_docs *docs, struct gv_err *err)
{
	return load_all(buf, len, file, map_depth, false, docs, err);
}

enum gv_code gv_yaml_load_reals(const char *buf, size_t len, const char *file, int map_depth,
				struct gv_docs *docs, struct gv_err *err)
{
	return load_all(buf, len, file, map_depth, true, docs, err);
}

static enum gv_code load_all(const char *buf, size_t len, const char *file, int map_depth,
			     bool reals, struct gv_docs *docs, struct gv_err *err)
{
	struct loader ld;
	enum gv_code rc = GV_OK;

	memset(&ld, 0, sizeof(ld));
	ld.map_depth = map_depth;
	ld.reals = reals;
	memset(docs, 0, sizeof(*docs));
	docs->file = gv_xstrdup(file);
	docs->reals = reals;
	ld.file = file;
	ld.err = err;
	if (!yaml_parser_initialize(&ld.parser))
		abort();
	yaml_parser_set_input_string(&ld.parser, (const unsigned char *)buf, len);
	ld.ev.type = YAML_NO_EVENT;
	for (;;) {
		json_t *v = NULL;
		struct node_size size;
		int line;

		if ((rc = next(&ld)))
			break;
		if (ld.ev.type == YAML_STREAM_END_EVENT)
			break;
		if (ld.ev.type != YAML_DOCUMENT_START_EVENT)
			continue;
		line = (int)ld.ev.start_mark.line + 1;
		if ((rc = next(&ld)))
			break;
		ld.map = gv_xcalloc(1, sizeof(*ld.map));
		ld.parent = SRC_ROOT;
		ld.seg = NULL;
		ld.alias_nodes = 0;
		rc = load_node(&ld, &v, &size);
		free_anchors(&ld);
		if (!rc)
			rc = next(&ld); /* DOCUMENT_END */
		if (rc) {
			json_decref(v);
			map_free(ld.map);
			break;
		}
		if (json_is_null(v)) {
			json_decref(v);
			map_free(ld.map);
			continue;
		}
		docs_push(docs, v, ld.map, line);
	}
	yaml_event_delete(&ld.ev);
	yaml_parser_delete(&ld.parser);
	free_anchors(&ld);
	return rc;
}

enum gv_code gv_yaml_load_file(const char *path, struct gv_docs *docs, struct gv_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	enum gv_code rc;
	const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;

	memset(docs, 0, sizeof(*docs));
	rc = gv_read_file(path, &buf, &len, err);
	if (rc)
		return rc;
	rc = gv_yaml_load(buf, len, name, docs, err);
	free(buf);
	return rc;
}

void gv_docs_release(struct gv_docs *docs)
{
	for (size_t i = 0; i < docs->n; i++) {
		json_decref(docs->v[i].value);
		map_free(docs->v[i].map);
	}
	free(docs->v);
	free(docs->file);
	memset(docs, 0, sizeof(*docs));
}

/* ---- dumping ---- */

/*
 * Decodes the UTF-8 sequence at s (NUL-terminated; valid: strings come
 * from jansson) into *cp and returns its length.
 */
static size_t utf8_next(const unsigned char *s, unsigned long *cp)
{
	unsigned c;
	size_t n;

	if (s[0] < 0x80) { /* NUL too: strings may hold one */
		*cp = s[0];
		return 1;
	}
	n = gv_utf8_decode((const char *)s, strnlen((const char *)s, 4), &c);
	*cp = c;
	return n;
}

/*
 * True when code point c may appear as itself in a plain or single-quoted
 * scalar on one line: libyaml's reader accepts it (YAML 1.1 c-printable) and
 * it is no line break (NEL, LS, PS fold like \n) and no BOM (skipped at the
 * start of a line). Tab is left out too: plain scalars cannot hold it safely.
 */
static int inline_char(unsigned long c)
{
	return (c >= 0x20 && c <= 0x7E) ||
	       (c >= 0xA0 && c <= 0xD7FF && c != 0x2028 && c != 0x2029) ||
	       (c >= 0xE000 && c <= 0xFFFD && c != 0xFEFF) || (c >= 0x10000 && c <= 0x10FFFF);
}

/* True when every character of s is an inline_char() (tab allowed when `tab`). */
static int all_inline(const char *s, int tab)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned long c;

	while (*p) {
		p += utf8_next(p, &c);
		if (!inline_char(c) && !(tab && c == '\t'))
			return 0;
	}
	return 1;
}

static int needs_quotes(const char *s)
{
	json_t *r;
	int reserved;
	size_t n = strlen(s);

	if (!n)
		return 1;
	if (strchr("-?:,[]{}#&*!|>'\"%@`", s[0]) || isspace((unsigned char)s[0]) ||
	    isspace((unsigned char)s[n - 1]))
		return 1;
	if (strstr(s, ": ") || strstr(s, " #") || s[n - 1] == ':')
		return 1;
	/* a document marker at the start of a line */
	if (!strncmp(s, "---", 3) || !strncmp(s, "...", 3))
		return 1;
	if (!all_inline(s, 0))
		return 1;
	/* resolve_plain() finds something else than text only after one of these */
	if (!strchr("~nNtTyYoOfF0123456789+-.", s[0]))
		return 0;
	r = resolve_plain(s);
	reserved = !json_is_string(r);
	json_decref(r);
	return reserved;
}

/*
 * Appends the n bytes of s double-quoted, escaping what YAML's reader would
 * refuse or fold (a NUL byte inside the string included: "\x00").
 */
static void dump_double_quoted(const char *s, size_t n, struct gv_buf *out)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	unsigned long c;

	gv_buf_addc(out, '"');
	while (p < end) {
		size_t k = utf8_next(p, &c);

		if (c == '"' || c == '\\') {
			gv_buf_addc(out, '\\');
			gv_buf_addc(out, (char)c);
		} else if (c == '\n') {
			gv_buf_adds(out, "\\n");
		} else if (c == '\t') {
			gv_buf_adds(out, "\\t");
		} else if (c == '\r') {
			gv_buf_adds(out, "\\r");
		} else if (c == 0x85) {
			gv_buf_adds(out, "\\N");
		} else if (c == 0x2028) {
			gv_buf_adds(out, "\\L");
		} else if (c == 0x2029) {
			gv_buf_adds(out, "\\P");
		} else if (c < 0x100 && !inline_char(c)) {
			gv_buf_addf(out, "\\x%02lX", c);
		} else if (!inline_char(c)) {
			gv_buf_addf(out, "\\u%04lX", c);
		} else {
			gv_buf_add(out, p, k);
		}
		p += k;
	}
	gv_buf_addc(out, '"');
}

/*
 * Appends the n bytes of s as a scalar that gv_yaml_load() reads back as
 * the same string: plain when it would not resolve to something else,
 * single-quoted when it is one line of printable characters, double-quoted
 * with escapes otherwise (always when it holds a NUL byte).
 */
static void dump_scalar_string(const char *s, size_t n, struct gv_buf *out)
{
	if (memchr(s, '\0', n)) {
		dump_double_quoted(s, n, out);
		return;
	}
	if (!needs_quotes(s)) {
		gv_buf_adds(out, s);
		return;
	}
	if (all_inline(s, 1)) {
		const char *p = s, *q;

		gv_buf_addc(out, '\'');
		/* runs up to and including each quote, which is then doubled */
		while ((q = strchr(p, '\''))) {
			gv_buf_add(out, p, (size_t)(q - p) + 1);
			gv_buf_addc(out, '\'');
			p = q + 1;
		}
		gv_buf_adds(out, p);
		gv_buf_addc(out, '\'');
		return;
	}
	dump_double_quoted(s, n, out);
}

static void indent(struct gv_buf *out, int n)
{
	for (int i = 0; i < n; i++)
		gv_buf_addc(out, ' ');
}

static void dump_value(const json_t *v, struct gv_buf *out, int ind, int inline_start);

static void dump_scalar(const json_t *v, struct gv_buf *out)
{
	if (json_is_string(v)) {
		dump_scalar_string(json_string_value(v), json_string_length(v), out);
	} else {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
		gv_buf_adds(out, s ? s : "null");
		free(s);
	}
}

static int is_empty_container(const json_t *v)
{
	return (json_is_object(v) && json_object_size(v) == 0) ||
	       (json_is_array(v) && json_array_size(v) == 0);
}

/* libyaml's bound on a simple (implicit) key; longer keys are written `? key`. */
#define SIMPLE_KEY_MAX 1024

/* Appends "key:", or "? key\n<indent>:" for a key too long to be a simple key. */
static void dump_key(const char *k, struct gv_buf *out, int ind)
{
	struct gv_buf kb = {0};

	dump_scalar_string(k, strlen(k), &kb);
	if (kb.len < SIMPLE_KEY_MAX - 8) {
		gv_buf_add(out, kb.data, kb.len);
	} else {
		gv_buf_adds(out, "? ");
		gv_buf_add(out, kb.data, kb.len);
		gv_buf_addc(out, '\n');
		indent(out, ind);
	}
	gv_buf_addc(out, ':');
	gv_buf_release(&kb);
}

static void dump_value(const json_t *v, struct gv_buf *out, int ind, int inline_start)
{
	if (json_is_object(v) && json_object_size(v)) {
		const char *k;
		json_t *c;
		int first = 1;
		json_object_foreach((json_t *)v, k, c)
		{
			if (!(first && inline_start))
				indent(out, ind);
			first = 0;
			dump_key(k, out, ind);
			if ((json_is_object(c) || json_is_array(c)) && !is_empty_container(c)) {
				gv_buf_addc(out, '\n');
				dump_value(c, out, json_is_array(c) ? ind : ind + 2, 0);
			} else {
				gv_buf_addc(out, ' ');
				dump_value(c, out, ind + 2, 1);
			}
		}
		return;
	}
	if (json_is_array(v) && json_array_size(v)) {
		size_t i;
		json_t *c;
		int first = 1;
		json_array_foreach(v, i, c)
		{
			if (!(first && inline_start))
				indent(out, ind);
			first = 0;
			gv_buf_adds(out, "- ");
			if ((json_is_object(c) || json_is_array(c)) && !is_empty_container(c))
				dump_value(c, out, ind + 2, 1);
			else
				dump_value(c, out, ind + 2, 1);
		}
		return;
	}
	if (json_is_object(v))
		gv_buf_adds(out, "{}");
	else if (json_is_array(v))
		gv_buf_adds(out, "[]");
	else
		dump_scalar(v, out);
	gv_buf_addc(out, '\n');
}

void gv_yaml_dump_string(const char *s, size_t n, struct gv_buf *out)
{
	dump_scalar_string(s, n, out);
}

void gv_yaml_dump(const json_t *v, struct gv_buf *out)
{
	dump_value(v, out, 0, 0);
}
