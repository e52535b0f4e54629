/*
 * report.c - the PolicyReport model, its rendering into chunked objects,
 * the merge with what the cluster holds, and the writer (report.h).
 *
 * A group keeps two states: `model` (what the reports should say) and,
 * once the model changed since the group was last in sync with the
 * cluster, `synced` (what the cluster held then). The net change is the
 * key-by-key difference synced -> model; after a 409 the group is read
 * again and that difference is applied to what was read. Keys that did
 * not change are not touched, so results written by others survive.
 */
#include "background/report.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "common/hash.h"
#include "view/view.h"
#include "background/vpscan.h"
#include "common/log.h"
#include "common/banned.h"

#define LAYOUT_NAMESPACE "namespace"
#define LAYOUT_SPLIT	 "split"
#define LAYOUT_RESOURCE	 "resource"
#define LIST_PAGE	 50
#define LIST_RESTARTS	 3
#define HASH_CUT	 231 /* characters of a long base name kept before "-<hash>" */
#define LABEL_CUT	 50  /* characters of a long base name kept in the group label */

/* ---- small helpers ---- */

static const char *str_or(const char *s, const char *def)
{
	return s ? s : def;
}

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* A copy of s of at most max bytes: longer text is cut at a UTF-8 boundary and ends in "...". */
static char *bounded_dup(const char *s, size_t max)
{
	size_t n = strlen(s), cut;
	char *out;

	if (n <= max)
		return gv_xstrdup(s);
	cut = max - 3;
	while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
		cut--;
	out = gv_xmalloc(cut + 4);
	memcpy(out, s, cut);
	memcpy(out + cut, "...", 4);
	return out;
}

/* json_string that never returns NULL: bytes that are not valid UTF-8 become '?'. */
static json_t *jstring(const char *s)
{
	json_t *v = json_string(s);
	char *copy;

	if (v)
		return v;
	copy = gv_xstrdup(s);
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(copy);
	free(copy);
	return v;
}

/* ---- the model ---- */

/* One result. Interned strings belong to the set's pool. */
struct rentry {
	const char *policy, *rule; /* interned */
	const char *source;	   /* interned or NULL */
	const char *severity;	   /* interned or NULL */
	const char *category;	   /* interned or NULL */
	const char *process;	   /* interned or NULL */
	char *message;		   /* owned */
	json_t *props;		   /* owned: properties besides process (strings), or NULL */
	enum engine_status result;
	bool scored;
	int64_t seconds;
	int32_t nanos;
};

/* The results of one object in one group. */
struct rnode {
	char *uid;				    /* owned; the map key */
	const char *api_version, *kind, *namespace; /* interned, "" when absent */
	char *name;				    /* owned */
	struct rentry *v;			    /* owned */
	size_t n, cap;
};

struct gstate {
	struct gv_map nodes; /* uid -> struct rnode */
	size_t nresults;
};

/* An object of a group as the cluster holds it. */
struct rchunk {
	char *name;   /* owned */
	char *rv;     /* owned resourceVersion, NULL when unknown */
	char *digest; /* owned REPORT_ANNOTATION_SCAN_DIGEST it carries, NULL = none */
	char *inputs; /* owned REPORT_ANNOTATION_SCAN_INPUTS it carries, NULL = none */
	uint64_t hash;
	char *lo, *hi; /* owned: smallest and largest result key (result_key()); NULL = none */
};

struct rgroup {
	char *key;	       /* owned: ns "\x1f" base; the map key */
	char *ns, *base;       /* owned; ns "" = ClusterPolicyReport */
	struct gstate model;   /* what the reports should say */
	struct gstate *synced; /* owned: the cluster's state when last in sync; NULL = model */
	struct rchunk *chunks; /* owned: the group's objects in the cluster */
	size_t nchunks;
	bool known; /* chunks describe the cluster (read, written, or report_load) */
	bool dirty; /* visit in the next flush */
};

/* One recorded change (report_options.journal), replayed by report_replay(). */
enum jkind { J_REPLACE, J_UPSERT, J_RETAIN, J_DELETE_OBJECT, J_RETAIN_OBJECTS };

struct jrec {
	enum jkind kind;
	char *policy;		    /* owned: J_REPLACE, J_RETAIN */
	struct report_resource res; /* owned strings: J_REPLACE, J_UPSERT */
	struct report_entry *e;	    /* owned, with owned strings */
	size_t n;
	char **uids; /* owned: J_RETAIN */
	size_t nuids;
	char *ns, *uid; /* owned: J_DELETE_OBJECT, J_RETAIN_OBJECTS (ns NULL = every group) */
	/* J_RETAIN_OBJECTS: res.api_version holds the group, res.kind the kind */
	int64_t since; /* J_RETAIN (not part of the digest: it is the scan's start) */
};

struct report_set {
	struct report_options opt;
	struct jrec *journal; /* owned, when opt.journal */
	size_t njournal, capjournal;
	char *digest; /* owned: REPORT_ANNOTATION_SCAN_DIGEST of written objects, NULL = none */
	char *inputs; /* owned: report_set_inputs(), NULL = none */
	struct gv_map groups;  /* key -> struct rgroup */
	struct gv_map strings; /* interned strings (key == val, owned) */
	bool loaded;	       /* report_load ran: groups it did not see do not exist */
	char **obsolete;       /* owned paths of objects to delete after the next full flush */
	/*
	 * During report_flush / report_render_all with an inputs digest:
	 * namespace (interned) -> 1 + its groups with results, counted once
	 * (the resource layout has a group per object: counting them for
	 * every object rendered would cost groups x groups).
	 */
	struct gv_map stamp_groups;
	bool stamp_cached;
	size_t nobsolete;
	size_t nresults;
};

static const char *intern(struct report_set *rs, const char *s)
{
	char *v;

	if (!s)
		return NULL;
	v = gv_map_get(&rs->strings, s);
	if (v)
		return v;
	v = gv_xstrdup(s);
	gv_map_put(&rs->strings, v, v);
	return v;
}

static void rentry_release(struct rentry *e)
{
	free(e->message);
	json_decref(e->props);
}

static void rentry_copy(struct rentry *dst, const struct rentry *src)
{
	*dst = *src;
	dst->message = gv_xstrdup(src->message);
	dst->props = json_incref(src->props); /* never modified once built */
}

/* Equal apart from the timestamp. Interned strings compare by pointer. */
static bool rentry_same(const struct rentry *a, const struct rentry *b)
{
	return a->policy == b->policy && a->rule == b->rule && a->source == b->source &&
	       a->severity == b->severity && a->category == b->category &&
	       a->process == b->process && a->result == b->result && a->scored == b->scored &&
	       !strcmp(a->message, b->message) &&
	       (a->props == b->props || (a->props && b->props && json_equal(a->props, b->props)));
}

static bool rentry_identical(const struct rentry *a, const struct rentry *b)
{
	return rentry_same(a, b) && a->seconds == b->seconds && a->nanos == b->nanos;
}

static bool ts_newer(const struct rentry *a, const struct rentry *b)
{
	return a->seconds > b->seconds || (a->seconds == b->seconds && a->nanos > b->nanos);
}

/* Resource fields of a node, as a change gives them. */
struct rinfo {
	const char *uid;			    /* borrowed */
	const char *api_version, *kind, *namespace; /* interned */
	const char *name;			    /* borrowed */
};

static bool rnode_same_info(const struct rnode *nd, const struct rinfo *ri)
{
	return nd->api_version == ri->api_version && nd->kind == ri->kind &&
	       nd->namespace == ri->namespace && !strcmp(nd->name, ri->name);
}

static void rnode_set_info(struct rnode *nd, const struct rinfo *ri)
{
	nd->api_version = ri->api_version;
	nd->kind = ri->kind;
	nd->namespace = ri->namespace;
	if (strcmp(nd->name, ri->name)) {
		free(nd->name);
		nd->name = gv_xstrdup(ri->name);
	}
}

static void rnode_free(struct rnode *nd)
{
	if (!nd)
		return;
	for (size_t i = 0; i < nd->n; i++)
		rentry_release(&nd->v[i]);
	free(nd->v);
	free(nd->uid);
	free(nd->name);
	free(nd);
}

static struct rentry *rnode_find(const struct rnode *nd, const char *policy, const char *rule)
{
	if (!nd)
		return NULL;
	for (size_t i = 0; i < nd->n; i++)
		if (nd->v[i].policy == policy && nd->v[i].rule == rule)
			return &nd->v[i];
	return NULL;
}

static void gstate_release(struct gstate *s)
{
	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.v[i].key)
			rnode_free(s->nodes.v[i].val);
	gv_map_release(&s->nodes);
	s->nresults = 0;
}

static void gstate_free(struct gstate *s)
{
	if (s) {
		gstate_release(s);
		free(s);
	}
}

static struct gstate *gstate_copy(const struct gstate *s)
{
	struct gstate *c = gv_xcalloc(1, sizeof(*c));

	for (size_t i = 0; i < s->nodes.cap; i++) {
		const struct rnode *nd = s->nodes.v[i].val;
		struct rnode *cn;

		if (!s->nodes.v[i].key)
			continue;
		cn = gv_xcalloc(1, sizeof(*cn));
		*cn = *nd;
		cn->uid = gv_xstrdup(nd->uid);
		cn->name = gv_xstrdup(nd->name);
		cn->cap = nd->n;
		cn->v = gv_xcalloc(nd->n ? nd->n : 1, sizeof(*cn->v));
		for (size_t j = 0; j < nd->n; j++)
			rentry_copy(&cn->v[j], &nd->v[j]);
		gv_map_put(&c->nodes, cn->uid, cn);
	}
	c->nresults = s->nresults;
	return c;
}

static struct rnode *gstate_node(struct gstate *s, const struct rinfo *ri, bool create)
{
	struct rnode *nd = gv_map_get(&s->nodes, ri->uid);

	if (nd || !create)
		return nd;
	nd = gv_xcalloc(1, sizeof(*nd));
	nd->uid = gv_xstrdup(ri->uid);
	nd->name = gv_xstrdup(ri->name);
	nd->api_version = ri->api_version;
	nd->kind = ri->kind;
	nd->namespace = ri->namespace;
	gv_map_put(&s->nodes, nd->uid, nd);
	return nd;
}

static void gstate_drop_if_empty(struct gstate *s, struct rnode *nd)
{
	if (nd && !nd->n)
		rnode_free(gv_map_del(&s->nodes, nd->uid));
}

/* Sets e (ownership moves here) for its key, freeing a result it replaces; ri becomes the node's.
 */
static void gstate_set(struct gstate *s, const struct rinfo *ri, struct rentry *e)
{
	struct rnode *nd = gstate_node(s, ri, true);
	struct rentry *old = rnode_find(nd, e->policy, e->rule);

	rnode_set_info(nd, ri);
	if (old) {
		rentry_release(old);
		*old = *e;
		return;
	}
	if (nd->n == nd->cap) {
		nd->cap = nd->cap ? nd->cap * 2 : 4;
		nd->v = gv_xrealloc(nd->v, nd->cap * sizeof(*nd->v));
	}
	nd->v[nd->n++] = *e;
	s->nresults++;
}

/* Removes entry i of nd (the node may become empty; the caller drops it). */
static void rnode_remove(struct gstate *s, struct rnode *nd, size_t i)
{
	rentry_release(&nd->v[i]);
	memmove(&nd->v[i], &nd->v[i + 1], (nd->n - i - 1) * sizeof(*nd->v));
	nd->n--;
	s->nresults--;
}

static bool gstate_remove(struct gstate *s, const char *uid, const char *policy, const char *rule)
{
	struct rnode *nd = gv_map_get(&s->nodes, uid);

	if (!nd)
		return false;
	for (size_t i = 0; i < nd->n; i++) {
		if (nd->v[i].policy == policy && nd->v[i].rule == rule) {
			rnode_remove(s, nd, i);
			gstate_drop_if_empty(s, nd);
			return true;
		}
	}
	return false;
}

/* The nodes of s, in no particular order (borrowed pointers). */
static struct rnode **gstate_nodes(const struct gstate *s, size_t *n)
{
	struct rnode **v = gv_xcalloc(s->nodes.n ? s->nodes.n : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.v[i].key)
			v[k++] = s->nodes.v[i].val;
	*n = k;
	return v;
}

/* ---- groups ---- */

static char *group_key(const char *ns, const char *base)
{
	return gv_xasprintf("%s\x1f%s", ns ? ns : "", base);
}

static struct rgroup *group_find(const struct report_set *rs, const char *ns, const char *base)
{
	char *key = group_key(ns, base);
	struct rgroup *g = gv_map_get(&rs->groups, key);

	free(key);
	return g;
}

static struct rgroup *group_get(struct report_set *rs, const char *ns, const char *base)
{
	struct rgroup *g = group_find(rs, ns, base);

	if (g)
		return g;
	g = gv_xcalloc(1, sizeof(*g));
	g->key = group_key(ns, base);
	g->ns = gv_xstrdup(ns ? ns : "");
	g->base = gv_xstrdup(base);
	g->known = rs->loaded;
	gv_map_put(&rs->groups, g->key, g);
	return g;
}

static void chunks_free(struct rchunk *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].name);
		free(c[i].rv);
		free(c[i].digest);
		free(c[i].inputs);
		free(c[i].lo);
		free(c[i].hi);
	}
	free(c);
}

/*
 * The sort key of a rendered result (rpair_cmp's order: kind, namespace,
 * name, uid, policy, rule; the separator sorts before any character of a
 * name). Caller frees.
 */
static char *result_key(const json_t *r)
{
	const json_t *res = json_array_get(json_object_get(r, "resources"), 0);

	return gv_xasprintf("%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", str_or(jstr(res, "kind"), ""),
			    str_or(jstr(res, "namespace"), ""), str_or(jstr(res, "name"), ""),
			    str_or(jstr(res, "uid"), ""), str_or(jstr(r, "policy"), ""),
			    str_or(jstr(r, "rule"), ""));
}

/* The smallest and largest result key of a report object (NULL, NULL: no results). */
static void object_range(const json_t *obj, char **lo, char **hi)
{
	const json_t *r;
	size_t i;

	*lo = *hi = NULL;
	json_array_foreach(json_object_get(obj, "results"), i, r)
	{
		char *k = result_key(r);

		if (!*lo || strcmp(k, *lo) < 0) {
			free(*lo);
			*lo = gv_xstrdup(k);
		}
		if (!*hi || strcmp(k, *hi) > 0) {
			free(*hi);
			*hi = gv_xstrdup(k);
		}
		free(k);
	}
}

static void group_free(struct rgroup *g)
{
	if (!g)
		return;
	gstate_release(&g->model);
	gstate_free(g->synced);
	chunks_free(g->chunks, g->nchunks);
	free(g->key);
	free(g->ns);
	free(g->base);
	free(g);
}

/* Before the first change of a group in sync: remember the synced state. */
static void group_touch(struct rgroup *g)
{
	if (!g->synced)
		g->synced = gstate_copy(&g->model);
	g->dirty = true;
}

static struct rgroup **groups_sorted(const struct report_set *rs, size_t *n);

/* ---- the public model API ---- */

const char *report_process_name(enum report_process p)
{
	return p == REPORT_ADMISSION_REVIEW ? "admission review" : "background scan";
}

enum gv_code report_resource_from_object(const json_t *obj, struct report_resource *r,
					 struct gv_err *err)
{
	const json_t *md = json_object_get(obj, "metadata");

	memset(r, 0, sizeof(*r));
	r->api_version = jstr(obj, "apiVersion");
	r->kind = jstr(obj, "kind");
	r->namespace = jstr(md, "namespace");
	r->name = jstr(md, "name");
	r->uid = jstr(md, "uid");
	if (!r->uid || !*r->uid)
		return gv_err_set(err, GV_EINVAL, "%s %s%s%s: no metadata.uid",
				  str_or(r->kind, "?"), str_or(r->namespace, ""),
				  r->namespace ? "/" : "", str_or(r->name, "?"));
	return GV_OK;
}

char *report_policy_ref(const struct engine_policy *p)
{
	const char *ns = engine_policy_namespace(p);

	if (ns && *ns)
		return gv_xasprintf("%s/%s", ns, engine_policy_name(p));
	return gv_xstrdup(engine_policy_name(p));
}

bool report_policy_disabled(const struct engine_policy *p)
{
	const json_t *labels =
	    json_object_get(json_object_get(engine_policy_doc(p), "metadata"), "labels");

	return json_object_get(labels, REPORT_LABEL_DISABLED) != NULL;
}

bool report_policy_scored(const struct engine_policy *p)
{
	const char *v = engine_policy_annotation(p, "policies.kyverno.io/scored");

	return !(v && !strcmp(v, "false"));
}

enum engine_status report_status(const struct engine_policy *p, enum engine_status s)
{
	if (s == ENGINE_FAIL && !report_policy_scored(p))
		return ENGINE_WARN;
	return s;
}

/* ---- the journal ---- */

static char *dup_or_null(const char *s)
{
	return s ? gv_xstrdup(s) : NULL;
}

static void resource_copy(struct report_resource *dst, const struct report_resource *src)
{
	dst->api_version = dup_or_null(src->api_version);
	dst->kind = dup_or_null(src->kind);
	dst->namespace = dup_or_null(src->namespace);
	dst->name = dup_or_null(src->name);
	dst->uid = dup_or_null(src->uid);
}

static void resource_release(struct report_resource *r)
{
	free((char *)r->api_version);
	free((char *)r->kind);
	free((char *)r->namespace);
	free((char *)r->name);
	free((char *)r->uid);
}

static struct report_entry *entries_copy(const struct report_entry *e, size_t n)
{
	struct report_entry *v = gv_xcalloc(n ? n : 1, sizeof(*v));

	for (size_t i = 0; i < n; i++) {
		v[i] = e[i];
		v[i].policy = dup_or_null(e[i].policy);
		v[i].rule = dup_or_null(e[i].rule);
		v[i].message = dup_or_null(e[i].message);
		v[i].severity = dup_or_null(e[i].severity);
		v[i].category = dup_or_null(e[i].category);
		v[i].source = dup_or_null(e[i].source);
		v[i].properties = e[i].properties ? json_deep_copy(e[i].properties) : NULL;
	}
	return v;
}

static void jrec_release(struct jrec *j)
{
	free(j->policy);
	resource_release(&j->res);
	for (size_t i = 0; i < j->n; i++) {
		free((char *)j->e[i].policy);
		free((char *)j->e[i].rule);
		free((char *)j->e[i].message);
		free((char *)j->e[i].severity);
		free((char *)j->e[i].category);
		free((char *)j->e[i].source);
		json_decref((json_t *)j->e[i].properties);
	}
	free(j->e);
	for (size_t i = 0; i < j->nuids; i++)
		free(j->uids[i]);
	free(j->uids);
	free(j->ns);
	free(j->uid);
}

/* A new record at the end of the journal (zeroed), or NULL when there is none. */
static struct jrec *journal_add(struct report_set *rs, enum jkind kind)
{
	struct jrec *j;

	if (!rs->opt.journal)
		return NULL;
	if (rs->njournal == rs->capjournal) {
		rs->capjournal = rs->capjournal ? rs->capjournal * 2 : 64;
		rs->journal = gv_xrealloc(rs->journal, rs->capjournal * sizeof(*rs->journal));
	}
	j = &rs->journal[rs->njournal++];
	memset(j, 0, sizeof(*j));
	j->kind = kind;
	return j;
}

struct report_set *report_set_new(const struct report_options *opt)
{
	struct report_set *rs = gv_xcalloc(1, sizeof(*rs));

	if (opt)
		rs->opt = *opt;
	rs->opt.source = rs->opt.source ? intern(rs, rs->opt.source) : NULL;
	if (!rs->opt.chunk_results)
		rs->opt.chunk_results = REPORT_CHUNK_RESULTS;
	if (!rs->opt.chunk_bytes)
		rs->opt.chunk_bytes = REPORT_CHUNK_BYTES;
	if (rs->opt.chunk_bytes > REPORT_MAX_CHUNK_BYTES)
		rs->opt.chunk_bytes = REPORT_MAX_CHUNK_BYTES;
	return rs;
}

void report_set_free(struct report_set *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			group_free(rs->groups.v[i].val);
	gv_map_release(&rs->groups);
	for (size_t i = 0; i < rs->strings.cap; i++)
		if (rs->strings.v[i].key)
			free(rs->strings.v[i].val);
	gv_map_release(&rs->strings);
	gv_map_release(&rs->stamp_groups);
	for (size_t i = 0; i < rs->nobsolete; i++)
		free(rs->obsolete[i]);
	free(rs->obsolete);
	for (size_t i = 0; i < rs->njournal; i++)
		jrec_release(&rs->journal[i]);
	free(rs->journal);
	free(rs->digest);
	free(rs->inputs);
	free(rs);
}

size_t report_count(const struct report_set *rs)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			n += ((const struct rgroup *)rs->groups.v[i].val)->model.nresults;
	return n;
}

size_t report_dirty_count(const struct report_set *rs)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			n += ((const struct rgroup *)rs->groups.v[i].val)->dirty;
	return n;
}

/* ---- names ---- */

static bool ends_in_digits(const char *s)
{
	size_t n = strlen(s), i = n;

	while (i > 0 && isdigit((unsigned char)s[i - 1]))
		i--;
	return i < n && i > 0 && s[i - 1] == '-';
}

/* s cut to at most n characters, without trailing '-' or '.', then "-" and `hex` hex digits of
 * hash. */
static char *cut_hashed(const char *s, size_t n, int hex)
{
	size_t len = strlen(s);

	if (len > n)
		len = n;
	while (len > 0 && (s[len - 1] == '-' || s[len - 1] == '.'))
		len--;
	return gv_xasprintf("%.*s-%0*llx", (int)len, s, hex,
			    (unsigned long long)(gv_hash_str(s) >> (64 - 4 * hex)));
}

char *report_base_name(bool split, const char *ns, const char *policy)
{
	const char *pname = policy ? strrchr(policy, '/') : NULL;
	char *name, *cut;

	pname = pname ? pname + 1 : str_or(policy, "");
	if (!split)
		return ns && *ns ? gv_xasprintf("polr-ns-%s", ns)
				 : gv_xstrdup("clusterpolicyreport");
	if (ns && *ns)
		name = gv_xasprintf("polr-ns-%s-%s", ns, pname);
	else
		name = gv_xasprintf("clusterpolicyreport-%s", pname);
	if (strlen(name) <= REPORT_MAX_BASE)
		return name;
	cut = cut_hashed(name, HASH_CUT, 12);
	free(name);
	return cut;
}

/* Whether s has the shape of a Kubernetes uid: 8-4-4-4-12 hex digits. */
static bool uid_shaped(const char *s)
{
	static const size_t dash[] = {8, 13, 18, 23};
	size_t n = strlen(s), d = 0;

	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (d < GV_ARRAY_LEN(dash) && i == dash[d]) {
			if (s[i] != '-')
				return false;
			d++;
		} else if (!isxdigit((unsigned char)s[i])) {
			return false;
		}
	}
	return true;
}

char *report_chunk_name(const char *base, size_t i)
{
	if (!i && uid_shaped(base))
		return gv_xstrdup(base);
	if (i)
		return gv_xasprintf("%s-%zu", base, i);
	if (ends_in_digits(base))
		return gv_xasprintf("%s-0", base);
	return gv_xstrdup(base);
}

bool report_parse_name(const char *name, char **base, size_t *index)
{
	size_t n = strlen(name), i = n;

	if (uid_shaped(name)) {
		/* the resource layout's chunk 0 */
		*base = gv_xstrdup(name);
		*index = 0;
		return true;
	}
	while (i > 0 && isdigit((unsigned char)name[i - 1]))
		i--;
	if (i == n || i < 2 || name[i - 1] != '-') {
		/* no "-<digits>" at the end: chunk 0 of itself */
		*base = gv_xstrdup(name);
		*index = 0;
		return n > 0;
	}
	if (name[i] == '0') {
		char *prefix;

		if (n - i != 1)
			return false; /* leading zero */
		prefix = gv_xstrndup(name, i - 1);
		if (!ends_in_digits(prefix)) {
			free(prefix);
			return false;
		}
		*base = prefix;
		*index = 0;
		return true;
	}
	if (n - i > 9)
		return false;
	*index = (size_t)strtoul(name + i, NULL, 10);
	*base = gv_xstrndup(name, i - 1);
	return true;
}

char *report_group_label(const char *base)
{
	if (strlen(base) <= 63)
		return gv_xstrdup(base);
	return cut_hashed(base, LABEL_CUT, 12);
}

static const struct {
	const char *name, *api_version, *kind, *cluster_kind, *resource, *cluster_resource;
} report_apis[] = {
    [REPORT_WGPOLICYK8S] = {"wgpolicyk8s", REPORT_API_VERSION, "PolicyReport",
			    "ClusterPolicyReport", "policyreports", "clusterpolicyreports"},
    [REPORT_OPENREPORTS] = {"openreports", REPORT_API_OPENREPORTS, "Report", "ClusterReport",
			    "reports", "clusterreports"},
};
static enum report_api_kind report_api_in_use = REPORT_WGPOLICYK8S;

enum gv_code report_api_parse(const char *s, enum report_api_kind *kind, struct gv_err *err)
{
	for (size_t i = 0; s && i < GV_ARRAY_LEN(report_apis); i++) {
		if (!strcmp(s, report_apis[i].name)) {
			*kind = (enum report_api_kind)i;
			return GV_OK;
		}
	}
	return gv_err_set(err, GV_EINVAL, "reports API \"%s\": want wgpolicyk8s or openreports",
			  s ? s : "");
}

void report_use_api(enum report_api_kind kind)
{
	report_api_in_use = kind;
}

enum report_api_kind report_api_current(void)
{
	return report_api_in_use;
}

const char *report_api_version(void)
{
	return report_apis[report_api_in_use].api_version;
}

const char *report_kind(bool cluster)
{
	return cluster ? report_apis[report_api_in_use].cluster_kind
		       : report_apis[report_api_in_use].kind;
}

char *report_path_all(void)
{
	return gv_xasprintf("/apis/%s/%s", report_api_version(),
			    report_apis[report_api_in_use].resource);
}

char *report_path(const char *ns, const char *name)
{
	char *ens = ns && *ns ? kube_escape(ns) : NULL;
	char *ename = name ? kube_escape(name) : NULL;
	char *p;

	if (ens)
		p = gv_xasprintf("/apis/%s/namespaces/%s/%s%s%s", report_api_version(), ens,
				 report_apis[report_api_in_use].resource, ename ? "/" : "",
				 ename ? ename : "");
	else
		p = gv_xasprintf("/apis/%s/%s%s%s", report_api_version(),
				 report_apis[report_api_in_use].cluster_resource, ename ? "/" : "",
				 ename ? ename : "");
	free(ens);
	free(ename);
	return p;
}

/* Whether base is a base name of the set's layout for namespace ns. */
static bool layout_owns(const struct report_set *rs, const char *ns, const char *base)
{
	char *prefix;
	bool ok;

	if (rs->opt.resource)
		return uid_shaped(base);
	if (!rs->opt.split) {
		char *want = report_base_name(false, ns, NULL);

		ok = !strcmp(want, base);
		free(want);
		return ok;
	}
	prefix = *ns ? gv_xasprintf("polr-ns-%s-", ns) : gv_xstrdup("clusterpolicyreport-");
	ok = !strncmp(base, prefix, strlen(prefix)) && strlen(base) > strlen(prefix);
	free(prefix);
	return ok;
}

static const char *layout_name(const struct report_set *rs)
{
	return rs->opt.resource ? LAYOUT_RESOURCE : rs->opt.split ? LAYOUT_SPLIT : LAYOUT_NAMESPACE;
}

/* The app.kubernetes.io/managed-by value of the set's objects. */
static const char *managed_by(const struct report_set *rs)
{
	return rs->opt.source ? rs->opt.source : REPORT_SOURCE;
}

enum gv_code report_allowed_parse(const char *list, unsigned *bits, struct gv_err *err)
{
	static const enum engine_status all[] = {ENGINE_PASS, ENGINE_FAIL, ENGINE_WARN,
						 ENGINE_ERROR, ENGINE_SKIP};
	const char *p = list ? list : "";
	unsigned out = 0;

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool found = false;

		while (len && isspace((unsigned char)*p)) {
			p++;
			len--;
		}
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		for (size_t i = 0; i < GV_ARRAY_LEN(all); i++) {
			const char *name = engine_status_name(all[i]);

			if (len == strlen(name) && !strncmp(p, name, len)) {
				out |= 1u << all[i];
				found = true;
			}
		}
		if (!found)
			return gv_err_set(err, GV_EINVAL,
					  "unknown result \"%.*s\" (pass, fail, "
					  "warn, error, skip)",
					  (int)len, p);
		if (!end)
			break;
		p = end + 1;
	}
	if (!out)
		return gv_err_set(err, GV_EINVAL, "empty list");
	*bits = out;
	return GV_OK;
}

static bool allowed(const struct report_set *rs, enum engine_status st)
{
	return rs->opt.allowed == REPORT_ALLOWED_ALL || (rs->opt.allowed & (1u << st));
}

/* ---- entries: conversion in, parsing, rendering ---- */

/* The severity the CRD allows (interned), or NULL (engine_report_severity). */
static const char *severity_norm(struct report_set *rs, const char *s)
{
	const char *v = engine_report_severity(s);

	return v ? intern(rs, v) : NULL;
}

static const char *category_norm(struct report_set *rs, const char *s)
{
	char *b;
	const char *v;

	if (!s || !*s)
		return NULL;
	if (strlen(s) <= REPORT_MAX_CATEGORY)
		return intern(rs, s);
	b = bounded_dup(s, REPORT_MAX_CATEGORY);
	v = intern(rs, b);
	free(b);
	return v;
}

/*
 * The message a result's properties give (kyverno-semantics.md 8.6: a
 * kyverno.io rule's reportProperties; cel-semantics.md 7: also a CEL
 * policy's audit annotations): "<result>Message" for the result reported
 * (passMessage, failMessage, warnMessage, errorMessage, skipMessage), else
 * "message"; NULL when neither (the engine's message stays).
 */
static const char *message_override(const struct report_entry *in)
{
	return engine_report_message(in->properties, in->result);
}

static void entry_in(struct report_set *rs, const struct report_entry *in, const char *policy,
		     struct rentry *e)
{
	const char *override = message_override(in);

	memset(e, 0, sizeof(*e));
	e->policy = intern(rs, policy);
	e->rule = intern(rs, in->rule);
	e->source = intern(rs, in->source ? in->source : managed_by(rs));
	e->severity = severity_norm(rs, in->severity);
	e->category = category_norm(rs, in->category);
	e->process = intern(rs, report_process_name(in->process));
	e->message = bounded_dup(override ? override : str_or(in->message, ""), REPORT_MAX_MESSAGE);
	e->result = in->result;
	e->scored = in->scored;
	e->seconds = in->seconds;
	e->nanos = in->nanos;
	if (json_is_object(in->properties)) {
		const char *key;
		json_t *v;

		json_object_foreach((json_t *)in->properties, key, v)
		{
			if (!json_is_string(v) || !strcmp(key, "process"))
				continue;
			if (!e->props)
				e->props = json_object();
			char *t = bounded_dup(json_string_value(v), REPORT_MAX_MESSAGE);

			json_object_set_new(e->props, key, jstring(t));
			free(t);
		}
	}
}

static void rinfo_in(struct report_set *rs, const struct report_resource *res, struct rinfo *ri)
{
	ri->uid = res->uid;
	ri->api_version = intern(rs, str_or(res->api_version, ""));
	ri->kind = intern(rs, str_or(res->kind, ""));
	ri->namespace = intern(rs, str_or(res->namespace, ""));
	ri->name = str_or(res->name, "");
}

static bool status_parse(const char *s, enum engine_status *out)
{
	static const enum engine_status all[] = {ENGINE_PASS, ENGINE_FAIL, ENGINE_WARN,
						 ENGINE_ERROR, ENGINE_SKIP};

	for (size_t i = 0; s && i < GV_ARRAY_LEN(all); i++) {
		if (!strcmp(s, engine_status_name(all[i]))) {
			*out = all[i];
			return true;
		}
	}
	return false;
}

/*
 * One result of a report as read from the cluster. Returns false (nothing
 * filled) when it has no policy or an unknown result. ri's uid and name
 * point into r (or scope: the report's `scope`, for results without
 * `resources`, as the resource layout writes them).
 */
static bool entry_parse(struct report_set *rs, const json_t *r, const json_t *scope,
			struct rentry *e, struct rinfo *ri)
{
	const json_t *res = json_array_get(json_object_get(r, "resources"), 0);
	const json_t *ts = json_object_get(r, "timestamp");
	const json_t *props = json_object_get(r, "properties");
	const json_t *scored = json_object_get(r, "scored");
	const char *policy = jstr(r, "policy"), *key;
	enum engine_status st;
	json_t *v;

	if (!policy || !status_parse(jstr(r, "result"), &st))
		return false;
	memset(e, 0, sizeof(*e));
	e->policy = intern(rs, policy);
	e->rule = intern(rs, str_or(jstr(r, "rule"), ""));
	e->source = intern(rs, jstr(r, "source"));
	e->severity = severity_norm(rs, jstr(r, "severity"));
	e->category = category_norm(rs, jstr(r, "category"));
	e->message = bounded_dup(str_or(jstr(r, "message"), ""), REPORT_MAX_MESSAGE);
	e->result = st;
	e->scored = json_is_boolean(scored) ? json_is_true(scored) : true;
	e->seconds = json_integer_value(json_object_get(ts, "seconds"));
	e->nanos = (int32_t)json_integer_value(json_object_get(ts, "nanos"));
	json_object_foreach((json_t *)props, key, v)
	{
		if (!json_is_string(v))
			continue;
		if (!strcmp(key, "process")) {
			e->process = intern(rs, json_string_value(v));
			continue;
		}
		if (!e->props)
			e->props = json_object();
		json_object_set(e->props, key, v);
	}
	if (!res && json_is_object(scope))
		res = scope;
	ri->uid = str_or(jstr(res, "uid"), "");
	ri->api_version = intern(rs, str_or(jstr(res, "apiVersion"), ""));
	ri->kind = intern(rs, str_or(jstr(res, "kind"), ""));
	ri->namespace = intern(rs, str_or(jstr(res, "namespace"), ""));
	ri->name = str_or(jstr(res, "name"), "");
	return true;
}

/* One result as written; with_resource false: without `resources` (the resource layout). */
static json_t *entry_render(const struct rnode *nd, const struct rentry *e, bool with_resource)
{
	json_t *o = json_object(), *ts = json_object();

	if (e->source)
		json_object_set_new(o, "source", json_string(e->source));
	json_object_set_new(o, "policy", jstring(e->policy));
	if (*e->rule)
		json_object_set_new(o, "rule", jstring(e->rule));
	if (e->category)
		json_object_set_new(o, "category", jstring(e->category));
	if (e->severity)
		json_object_set_new(o, "severity", json_string(e->severity));
	json_object_set_new(ts, "seconds", json_integer(e->seconds));
	json_object_set_new(ts, "nanos", json_integer(e->nanos));
	json_object_set_new(o, "timestamp", ts);
	json_object_set_new(o, "result", json_string(engine_status_name(e->result)));
	json_object_set_new(o, "scored", json_boolean(e->scored));
	if (*e->message)
		json_object_set_new(o, "message", jstring(e->message));
	if (with_resource && (*nd->uid || *nd->kind || *nd->name)) {
		json_t *r = json_object(), *list = json_array();

		json_object_set_new(r, "apiVersion", jstring(nd->api_version));
		json_object_set_new(r, "kind", jstring(nd->kind));
		if (*nd->namespace)
			json_object_set_new(r, "namespace", jstring(nd->namespace));
		json_object_set_new(r, "name", jstring(nd->name));
		json_object_set_new(r, "uid", jstring(nd->uid));
		json_array_append_new(list, r);
		json_object_set_new(o, "resources", list);
	}
	if (e->process || e->props) {
		json_t *p = json_object();

		if (e->props)
			json_object_update(p, e->props);
		if (e->process)
			json_object_set_new(p, "process", jstring(e->process));
		json_object_set_new(o, "properties", p);
	}
	return o;
}

/* ---- changes to the model ---- */

/*
 * The results of (ri, policy) in g become e[0..n) (ownership of the
 * entries moves here). Results equal to the recorded ones keep their
 * timestamps; nothing changes (and g stays in sync) when all are equal.
 */
static void model_replace(struct report_set *rs, struct rgroup *g, const struct rinfo *ri,
			  const char *policy, struct rentry *e, size_t n)
{
	struct rnode *nd = gv_map_get(&g->model.nodes, ri->uid);
	size_t old = 0, same = 0;

	for (size_t i = 0; nd && i < nd->n; i++)
		old += nd->v[i].policy == policy;
	for (size_t i = 0; i < n; i++) {
		struct rentry *o = rnode_find(nd, policy, e[i].rule);
		bool dup = false;

		for (size_t j = i + 1; j < n; j++)
			dup |= e[j].rule == e[i].rule;
		if (dup) {
			/* the last result of a rule counts */
			rentry_release(&e[i]);
			e[i].rule = NULL;
			continue;
		}
		if (o && rentry_same(o, &e[i])) {
			e[i].seconds = o->seconds;
			e[i].nanos = o->nanos;
			same++;
		}
	}
	{
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (e[i].rule)
				e[k++] = e[i];
		n = k;
	}
	if (same == n && old == n && (!n || rnode_same_info(nd, ri))) {
		for (size_t i = 0; i < n; i++)
			rentry_release(&e[i]);
		return;
	}
	group_touch(g);
	if (nd) {
		for (size_t i = nd->n; i-- > 0;)
			if (nd->v[i].policy == policy)
				rnode_remove(&g->model, nd, i);
	}
	for (size_t i = 0; i < n; i++)
		gstate_set(&g->model, ri, &e[i]);
	if (nd && !n)
		gstate_drop_if_empty(&g->model, nd);
}

/*
 * Sets one result (ownership moves here). newer_wins: a recorded result
 * with a later timestamp stays.
 */
static void model_upsert(struct report_set *rs, struct rgroup *g, const struct rinfo *ri,
			 struct rentry *e, bool newer_wins)
{
	struct rnode *nd = gv_map_get(&g->model.nodes, ri->uid);
	struct rentry *o = rnode_find(nd, e->policy, e->rule);

	if (o &&
	    ((rentry_same(o, e) && rnode_same_info(nd, ri)) || (newer_wins && ts_newer(o, e)))) {
		rentry_release(e);
		return;
	}
	group_touch(g);
	gstate_set(&g->model, ri, e);
}

/* The base name of the group of a result of policy about the object uid in namespace ns. */
static char *base_of(const struct report_set *rs, const char *ns, const char *uid,
		     const char *policy)
{
	if (rs->opt.resource)
		return gv_xstrdup(uid);
	return report_base_name(rs->opt.split, ns, policy);
}

static enum gv_code check_entries(const struct report_resource *res, const struct report_entry *e,
				  size_t n, bool need_policy, struct gv_err *err)
{
	if (!res->uid || !*res->uid)
		return gv_err_set(err, GV_EINVAL, "report: %s %s: no uid", str_or(res->kind, "?"),
				  str_or(res->name, "?"));
	for (size_t i = 0; i < n; i++) {
		/* a ValidatingPolicy's result has rule "" (left out of the entry, as Kyverno) */
		if (!e[i].rule || (!*e[i].rule && !e[i].source))
			return gv_err_set(err, GV_EINVAL, "report: result %zu has no rule", i);
		if (need_policy && (!e[i].policy || !*e[i].policy))
			return gv_err_set(err, GV_EINVAL, "report: result %zu has no policy", i);
		if (e[i].result > ENGINE_SKIP)
			return gv_err_set(err, GV_EINVAL, "report: result %zu: bad status", i);
	}
	return GV_OK;
}

enum gv_code report_replace(struct report_set *rs, const struct report_resource *res,
			    const char *policy, const struct report_entry *e, size_t n,
			    struct gv_err *err)
{
	struct rentry *v;
	struct rinfo ri;
	struct rgroup *g;
	struct jrec *j;
	char *base;
	enum gv_code rc;

	rc = check_entries(res, e, n, false, err);
	if (rc)
		return rc;
	if (!policy || !*policy)
		return gv_err_set(err, GV_EINVAL, "report: no policy");
	if ((j = journal_add(rs, J_REPLACE))) {
		j->policy = gv_xstrdup(policy);
		resource_copy(&j->res, res);
		j->e = entries_copy(e, n);
		j->n = n;
	}
	rinfo_in(rs, res, &ri);
	base = base_of(rs, ri.namespace, ri.uid, policy);
	g = group_find(rs, ri.namespace, base);
	if (!g && !n) {
		free(base);
		return GV_OK;
	}
	g = group_get(rs, ri.namespace, base);
	free(base);
	v = gv_xcalloc(n ? n : 1, sizeof(*v));
	{
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (allowed(rs, e[i].result))
				entry_in(rs, &e[i], policy, &v[k++]);
		model_replace(rs, g, &ri, intern(rs, policy), v, k);
	}
	free(v);
	return GV_OK;
}

enum gv_code report_upsert(struct report_set *rs, const struct report_resource *res,
			   const struct report_entry *e, size_t n, struct gv_err *err)
{
	struct rinfo ri;
	struct jrec *j;
	enum gv_code rc;

	rc = check_entries(res, e, n, true, err);
	if (rc)
		return rc;
	if ((j = journal_add(rs, J_UPSERT))) {
		resource_copy(&j->res, res);
		j->e = entries_copy(e, n);
		j->n = n;
	}
	rinfo_in(rs, res, &ri);
	for (size_t i = 0; i < n; i++) {
		char *base = base_of(rs, ri.namespace, ri.uid, e[i].policy);
		struct rgroup *g;
		struct rentry re;

		if (!allowed(rs, e[i].result)) {
			/* left out: it takes the place of the result it replaces */
			const char *pol = intern(rs, e[i].policy), *rule = intern(rs, e[i].rule);
			struct rnode *nd;

			g = group_find(rs, ri.namespace, base);
			free(base);
			nd = g ? gv_map_get(&g->model.nodes, ri.uid) : NULL;
			if (rnode_find(nd, pol, rule)) {
				group_touch(g);
				gstate_remove(&g->model, ri.uid, pol, rule);
			}
			continue;
		}
		g = group_get(rs, ri.namespace, base);
		free(base);
		entry_in(rs, &e[i], e[i].policy, &re);
		model_upsert(rs, g, &ri, &re, false);
	}
	return GV_OK;
}

static void entry_from_engine(const struct engine_policy *p, const char *ref, const char *rule,
			      enum engine_status st, const char *msg, enum report_process proc,
			      int64_t seconds, int32_t nanos, struct report_entry *e)
{
	e->policy = ref;
	e->rule = rule;
	e->result = report_status(p, st);
	e->message = msg;
	e->severity = engine_policy_annotation(p, "policies.kyverno.io/severity");
	e->category = engine_policy_annotation(p, "policies.kyverno.io/category");
	e->scored = report_policy_scored(p);
	e->seconds = seconds;
	e->nanos = nanos;
	e->process = proc;
}

/*
 * A result's own properties: the rule's reportProperties and "exceptions"
 * (the names of the PolicyExceptions that made it a skip, which win over
 * a reportProperty of that name). New reference, or NULL when none.
 */
static json_t *result_props(const json_t *rule_props, const char *exceptions)
{
	json_t *o;

	if (!json_object_size(rule_props) && !exceptions)
		return NULL;
	o = json_is_object(rule_props) ? json_copy((json_t *)rule_props) : json_object();
	if (exceptions)
		json_object_set_new(o, "exceptions", json_string(exceptions));
	return o;
}

enum gv_code report_put_response(struct report_set *rs, const struct report_resource *res,
				 const struct engine_response *resp, enum engine_mode mode,
				 int64_t seconds, int32_t nanos, struct gv_err *err)
{
	enum report_process proc =
	    mode == ENGINE_BACKGROUND ? REPORT_BACKGROUND_SCAN : REPORT_ADMISSION_REVIEW;
	struct report_entry *e = gv_xcalloc(resp->nrules ? resp->nrules : 1, sizeof(*e));
	char *ref = report_policy_ref(resp->policy);
	size_t n = 0;
	enum gv_code rc;

	json_t **props = gv_xcalloc(resp->nrules ? resp->nrules : 1, sizeof(*props));

	if ((mode == ENGINE_BACKGROUND && !engine_policy_background(resp->policy)) ||
	    report_policy_disabled(resp->policy)) {
		/* never scanned: its admission results are not the scan's to replace */
		free(ref);
		free(e);
		free(props);
		return GV_OK;
	}
	for (size_t i = 0; i < resp->nrules; i++) {
		const struct engine_rule_result *r = &resp->rules[i];

		if (!engine_decide(resp->policy, r, mode).reported)
			continue;
		entry_from_engine(resp->policy, ref, r->rule, r->status, r->message, proc, seconds,
				  nanos, &e[n]);
		e[n].properties = props[n] = result_props(r->properties, r->exceptions);
		n++;
	}
	if (mode == ENGINE_BACKGROUND)
		rc = report_replace(rs, res, ref, e, n, err);
	else
		rc = report_upsert(rs, res, e, n, err);
	for (size_t i = 0; i < n; i++)
		json_decref(props[i]);
	free(props);
	free(ref);
	free(e);
	return rc;
}

enum gv_code report_put_admission(struct report_set *rs, const struct view_audit_item *it,
				  struct gv_err *err)
{
	struct report_resource res = {it->api_version, it->kind, it->namespace, it->name, it->uid};
	size_t cap = it->nresults ? it->nresults : 1, n = 0;
	struct report_entry *e = gv_xcalloc(cap, sizeof(*e));
	char **refs = gv_xcalloc(cap, sizeof(*refs));
	json_t **props = gv_xcalloc(cap, sizeof(*props));
	enum gv_code rc;

	for (size_t i = 0; i < it->nresults; i++) {
		const struct view_audit_result *r = &it->results[i];

		if (r->vpol) {
			/* a CEL policy's: the fields its background scan writes (vpscan.c) */
			const char *sc = vpol_annotation(r->vpol, "policies.kyverno.io/scored");
			if (json_object_get(
				json_object_get(json_object_get(vpol_doc(r->vpol), "metadata"),
						"labels"),
				REPORT_LABEL_DISABLED))
				continue;
			refs[n] = vpscan_policy_ref(r->vpol);
			e[n] = (struct report_entry){
			    .policy = refs[n],
			    .rule = r->rule,
			    .result = sc && !strcmp(sc, "false") && r->status == ENGINE_FAIL
					  ? ENGINE_WARN
					  : r->status,
			    .message = r->message,
			    .severity = vpol_annotation(r->vpol, "policies.kyverno.io/severity"),
			    .category = vpol_annotation(r->vpol, "policies.kyverno.io/category"),
			    .scored = !(sc && !strcmp(sc, "false")),
			    .seconds = it->timestamp,
			    /* cel-semantics.md 7: by the policy's background setting */
			    .process = vpscan_background(r->vpol) ? REPORT_BACKGROUND_SCAN
								  : REPORT_ADMISSION_REVIEW,
			    .source = vpscan_source(r->vpol),
			    .properties = r->properties};
			n++;
			continue;
		}
		/* Enforce results: the resource layout reports them, as Kyverno */
		if ((r->enforce && !rs->opt.resource) || report_policy_disabled(r->policy))
			continue;
		refs[n] = report_policy_ref(r->policy);
		entry_from_engine(r->policy, refs[n], r->rule, r->status, r->message,
				  REPORT_ADMISSION_REVIEW, it->timestamp, 0, &e[n]);
		e[n].properties = props[n] = result_props(r->properties, r->exceptions);
		n++;
	}
	rc = n ? report_upsert(rs, &res, e, n, err) : GV_OK;
	for (size_t i = 0; i < n; i++) {
		free(refs[i]);
		json_decref(props[i]);
	}
	free(refs);
	free(props);
	free(e);
	return rc;
}

/*
 * Removes, in every group that `applies` accepts, the results `match`
 * selects. Returns the number removed.
 */
struct sweep {
	bool (*applies)(const struct report_set *rs, const struct rgroup *g, const void *arg);
	bool (*match)(const struct rnode *nd, const struct rentry *e, const void *arg);
	const void *arg;
};

static size_t group_sweep(struct report_set *rs, struct rgroup *g, const struct sweep *sw)
{
	struct rnode **nodes;
	size_t nn, hits = 0;

	nodes = gstate_nodes(&g->model, &nn);
	for (size_t i = 0; i < nn; i++)
		for (size_t j = 0; j < nodes[i]->n; j++)
			hits += sw->match(nodes[i], &nodes[i]->v[j], sw->arg);
	if (hits) {
		group_touch(g);
		for (size_t i = 0; i < nn; i++) {
			struct rnode *nd = nodes[i];

			for (size_t j = nd->n; j-- > 0;)
				if (sw->match(nd, &nd->v[j], sw->arg))
					rnode_remove(&g->model, nd, j);
			gstate_drop_if_empty(&g->model, nd);
		}
	}
	free(nodes);
	return hits;
}

static size_t sweep_all(struct report_set *rs, const struct sweep *sw)
{
	size_t hits = 0;

	/* sweeps remove results, never groups: the map can be walked directly */
	for (size_t i = 0; i < rs->groups.cap; i++) {
		struct rgroup *g = rs->groups.v[i].val;

		if (rs->groups.v[i].key && (!sw->applies || sw->applies(rs, g, sw->arg)))
			hits += group_sweep(rs, g, sw);
	}
	return hits;
}

struct sweep_arg {
	const char *policy; /* interned */
	const char *rule;   /* interned */
	const char *process;
	const struct gv_map *keep; /* report_retain: uids */
	int64_t since;		   /* report_retain_since: results this new are kept */
	const char *group, *kind;  /* report_retain_objects */
	const char *ns;		   /* report_retain_objects: NULL = every namespace */
};

/* Split layout: only the groups of that policy can hold its results. */
static bool applies_policy(const struct report_set *rs, const struct rgroup *g, const void *arg)
{
	const struct sweep_arg *a = arg;
	char *base;
	bool ok;

	if (!rs->opt.split || rs->opt.resource)
		return true;
	base = base_of(rs, g->ns, NULL, a->policy);
	ok = !strcmp(base, g->base);
	free(base);
	return ok;
}

static bool match_policy(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct sweep_arg *a = arg;

	(void)nd;
	return e->policy == a->policy && (!a->rule || e->rule == a->rule) &&
	       (!a->process || e->process == a->process);
}

static bool match_not_kept(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct sweep_arg *a = arg;

	return e->policy == a->policy && !gv_map_get(a->keep, nd->uid) &&
	       !(a->since && e->seconds > a->since);
}

void report_delete_object(struct report_set *rs, const char *ns, const char *uid)
{
	struct jrec *j;

	if (!uid)
		return;
	if ((j = journal_add(rs, J_DELETE_OBJECT))) {
		j->ns = dup_or_null(ns);
		j->uid = gv_xstrdup(uid);
	}
	for (size_t i = 0; i < rs->groups.cap; i++) {
		struct rgroup *g = rs->groups.v[i].val;
		struct rnode *nd;

		if (!rs->groups.v[i].key || (ns && strcmp(ns, g->ns)))
			continue;
		if (!(nd = gv_map_get(&g->model.nodes, uid)))
			continue;
		group_touch(g);
		g->model.nresults -= nd->n;
		rnode_free(gv_map_del(&g->model.nodes, uid));
	}
}

void report_delete_policy(struct report_set *rs, const char *policy)
{
	struct sweep_arg a = {.policy = intern(rs, policy)};
	struct sweep sw = {applies_policy, match_policy, &a};

	if (policy)
		sweep_all(rs, &sw);
}

void report_delete_rule(struct report_set *rs, const char *policy, const char *rule)
{
	struct sweep_arg a = {.policy = intern(rs, policy), .rule = intern(rs, rule)};
	struct sweep sw = {applies_policy, match_policy, &a};

	if (policy && rule)
		sweep_all(rs, &sw);
}

void report_delete_background(struct report_set *rs, const char *policy)
{
	struct sweep_arg a = {.policy = intern(rs, policy),
			      .process = intern(rs, report_process_name(REPORT_BACKGROUND_SCAN))};
	struct sweep sw = {applies_policy, match_policy, &a};

	if (policy)
		sweep_all(rs, &sw);
}

void report_retain(struct report_set *rs, const char *policy, const char *const *uids, size_t n)
{
	report_retain_since(rs, policy, uids, n, 0);
}

/* report_retain_objects: groups of the namespace asked. */
static bool applies_ns(const struct report_set *rs, const struct rgroup *g, const void *arg)
{
	const struct sweep_arg *a = arg;

	(void)rs;
	return !a->ns || !strcmp(a->ns, g->ns);
}

/* report_retain_objects: a result, of any policy, about a gone object of the kind. */
static bool match_gone(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct sweep_arg *a = arg;
	const char *slash = strchr(nd->api_version, '/');
	size_t glen = slash ? (size_t)(slash - nd->api_version) : 0;

	return !strcmp(nd->kind, a->kind) && strlen(a->group) == glen &&
	       !strncmp(nd->api_version, a->group, glen) && !gv_map_get(a->keep, nd->uid) &&
	       !(a->since && e->seconds > a->since);
}

/* The journal copy of a retain's uid list (NULL entries left out). */
static void journal_uids(struct jrec *j, const char *const *uids, size_t n)
{
	j->uids = gv_xcalloc(n ? n : 1, sizeof(*j->uids));
	for (size_t i = 0; i < n; i++)
		if (uids[i])
			j->uids[j->nuids++] = gv_xstrdup(uids[i]);
}

/* Sweeps with keep holding uids (the sweep's argument points at keep). */
static void sweep_kept(struct report_set *rs, struct sweep *sw, struct gv_map *keep,
		       const char *const *uids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (uids[i])
			gv_map_put(keep, uids[i], (void *)uids[i]);
	sweep_all(rs, sw);
	gv_map_release(keep);
}

void report_retain_objects(struct report_set *rs, const char *group, const char *kind,
			   const char *ns, const char *const *uids, size_t n, int64_t since)
{
	struct gv_map keep = {0};
	struct sweep_arg a = {
	    .keep = &keep, .since = since, .group = group ? group : "", .kind = kind, .ns = ns};
	struct sweep sw = {applies_ns, match_gone, &a};
	struct jrec *j;

	if (!kind || !*kind)
		return;
	if ((j = journal_add(rs, J_RETAIN_OBJECTS))) {
		j->res.api_version = gv_xstrdup(a.group);
		j->res.kind = gv_xstrdup(kind);
		j->ns = dup_or_null(ns);
		j->since = since;
		journal_uids(j, uids, n);
	}
	sweep_kept(rs, &sw, &keep, uids, n);
}

void report_retain_since(struct report_set *rs, const char *policy, const char *const *uids,
			 size_t n, int64_t since)
{
	struct gv_map keep = {0};
	struct sweep_arg a = {.policy = intern(rs, policy), .keep = &keep, .since = since};
	struct sweep sw = {applies_policy, match_not_kept, &a};
	struct jrec *j;

	if (!policy)
		return;
	if ((j = journal_add(rs, J_RETAIN))) {
		j->policy = gv_xstrdup(policy);
		j->since = since;
		journal_uids(j, uids, n);
	}
	sweep_kept(rs, &sw, &keep, uids, n);
}

struct prune_arg {
	struct gv_map policies; /* interned ref -> const struct engine_policy */
	const char *background;
	const char *src_vpol, *src_vap; /* interned sources of CEL results */
	struct gv_map vpol, vap;	/* interned ref -> const struct report_live */
};

static bool match_pruned(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct prune_arg *a = arg;
	const struct engine_policy *p;
	size_t nr;

	(void)nd;
	if (e->source && (e->source == a->src_vpol || e->source == a->src_vap)) {
		const struct report_live *l =
		    gv_map_get(e->source == a->src_vpol ? &a->vpol : &a->vap, e->policy);
		return !l || (!l->background && e->process == a->background);
	}
	p = gv_map_get(&a->policies, e->policy);
	if (!p)
		return true;
	if (!engine_policy_background(p) && e->process == a->background)
		return true;
	nr = engine_policy_rule_count(p);
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(engine_policy_rule_name(p, i), e->rule))
			return false;
	return true;
}

size_t report_prune(struct report_set *rs, const struct engine_policyset *set)
{
	return report_prune_live(rs, set, NULL, 0);
}

size_t report_prune_live(struct report_set *rs, const struct engine_policyset *set,
			 const struct report_live *live, size_t nlive)
{
	struct prune_arg a = {.background = intern(rs, report_process_name(REPORT_BACKGROUND_SCAN)),
			      .src_vpol = intern(rs, REPORT_SOURCE_VPOL),
			      .src_vap = intern(rs, REPORT_SOURCE_VAP)};
	struct sweep sw = {NULL, match_pruned, &a};
	size_t n = set ? engine_policyset_count(set) : 0, hits;

	for (size_t i = 0; i < nlive; i++) {
		const char *src = intern(rs, live[i].source);

		if (src == a.src_vpol || src == a.src_vap)
			gv_map_put(src == a.src_vpol ? &a.vpol : &a.vap, intern(rs, live[i].ref),
				   (void *)&live[i]);
	}

	for (size_t i = 0; i < n; i++) {
		const struct engine_policy *p = engine_policyset_get(set, i);
		char *ref = report_policy_ref(p);

		gv_map_put(&a.policies, intern(rs, ref), (void *)p);
		free(ref);
	}
	hits = sweep_all(rs, &sw);
	gv_map_release(&a.policies);
	gv_map_release(&a.vpol);
	gv_map_release(&a.vap);
	return hits;
}

/* ---- rendering ---- */

struct rpair {
	const struct rnode *nd;
	const struct rentry *e;
};

static int rpair_cmp(const void *pa, const void *pb)
{
	const struct rpair *a = pa, *b = pb;
	int c;

	if ((c = strcmp(a->nd->kind, b->nd->kind)) ||
	    (c = strcmp(a->nd->namespace, b->nd->namespace)) ||
	    (c = strcmp(a->nd->name, b->nd->name)) || (c = strcmp(a->nd->uid, b->nd->uid)) ||
	    (c = strcmp(a->e->policy, b->e->policy)) || (c = strcmp(a->e->rule, b->e->rule)))
		return c;
	return 0;
}

static struct rpair *gstate_sorted(const struct gstate *s, size_t *n)
{
	struct rpair *v = gv_xcalloc(s->nresults ? s->nresults : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < s->nodes.cap; i++) {
		const struct rnode *nd = s->nodes.v[i].val;

		if (!s->nodes.v[i].key)
			continue;
		for (size_t j = 0; j < nd->n; j++)
			v[k++] = (struct rpair){nd, &nd->v[j]};
	}
	qsort(v, k, sizeof(*v), rpair_cmp);
	*n = k;
	return v;
}

static json_t *summary_of(const json_t *results)
{
	size_t count[ENGINE_SKIP + 1] = {0};
	const json_t *r;
	size_t i;
	json_t *s = json_object();

	json_array_foreach(results, i, r)
	{
		enum engine_status st;

		if (status_parse(jstr(r, "result"), &st))
			count[st]++;
	}
	json_object_set_new(s, "pass", json_integer((json_int_t)count[ENGINE_PASS]));
	json_object_set_new(s, "fail", json_integer((json_int_t)count[ENGINE_FAIL]));
	json_object_set_new(s, "warn", json_integer((json_int_t)count[ENGINE_WARN]));
	json_object_set_new(s, "error", json_integer((json_int_t)count[ENGINE_ERROR]));
	json_object_set_new(s, "skip", json_integer((json_int_t)count[ENGINE_SKIP]));
	return s;
}

/*
 * The hash that says whether two versions of an object differ in what
 * gavel writes: FNV-1a over each result's compact dump with sorted keys
 * (entry_hash, in order), then over the labels' and the summary's
 * (content_hash_finish), so that results can be hashed one by one as they
 * are rendered.
 */
static uint64_t entry_hash(uint64_t h, const char *dump)
{
	return gv_fnv1a64(dump ? dump : "", strlen(dump ? dump : "") + 1, h);
}

static char *entry_dump(const json_t *r)
{
	return json_dumps(r, JSON_SORT_KEYS | JSON_COMPACT);
}

static uint64_t content_hash_finish(uint64_t h, const json_t *labels, const json_t *summary)
{
	char *l = json_dumps(labels, JSON_SORT_KEYS | JSON_COMPACT);
	char *s = summary ? json_dumps(summary, JSON_SORT_KEYS | JSON_COMPACT) : NULL;

	h = entry_hash(h, l);
	h = entry_hash(h, s ? s : "null");
	free(l);
	free(s);
	return h;
}

static uint64_t content_hash(const json_t *labels, const json_t *summary, const json_t *results)
{
	uint64_t h = GV_FNV1A64_OFFSET;
	const json_t *r;
	size_t i;

	json_array_foreach(results, i, r)
	{
		char *t = entry_dump(r);

		h = entry_hash(h, t);
		free(t);
	}
	return content_hash_finish(h, labels, summary);
}

static const char *const MANAGED_LABELS[] = {REPORT_LABEL_MANAGED_BY, REPORT_LABEL_GROUP,
					     REPORT_LABEL_CHUNK, REPORT_LABEL_LAYOUT};

/* The labels gavel manages, as obj carries them. */
static json_t *managed_labels(const json_t *obj)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
	json_t *out = json_object();

	for (size_t i = 0; i < GV_ARRAY_LEN(MANAGED_LABELS); i++) {
		json_t *v = json_object_get(labels, MANAGED_LABELS[i]);

		if (v)
			json_object_set(out, MANAGED_LABELS[i], v);
	}
	return out;
}

/*
 * Counts the groups with results of each namespace for inputs_stamp(), until
 * stamp_uncache(). A count that a conflict's re-read changes meanwhile only
 * makes the next scan evaluate again (report_inputs_unchanged() is false).
 */
static void stamp_cache(struct report_set *rs)
{
	gv_map_release(&rs->stamp_groups);
	rs->stamp_cached = rs->inputs != NULL;
	if (!rs->stamp_cached)
		return;
	for (size_t i = 0; i < rs->groups.cap; i++) {
		const struct rgroup *g = rs->groups.v[i].val;
		const char *ns;
		uintptr_t v;

		if (!rs->groups.v[i].key || !g->model.nresults)
			continue;
		ns = intern(rs, g->ns);
		v = (uintptr_t)gv_map_get(&rs->stamp_groups, ns);
		gv_map_put(&rs->stamp_groups, ns, (void *)(v ? v + 1 : 2));
	}
}

static void stamp_uncache(struct report_set *rs)
{
	gv_map_release(&rs->stamp_groups);
	rs->stamp_cached = false;
}

/*
 * REPORT_ANNOTATION_SCAN_INPUTS of an object of g with nresults results
 * when g has nchunks objects (caller frees), NULL when rs has no inputs
 * digest.
 */
static char *inputs_stamp(const struct report_set *rs, const struct rgroup *g, size_t nchunks,
			  size_t nresults)
{
	size_t groups = 0;

	if (!rs->inputs)
		return NULL;
	if (rs->stamp_cached) {
		uintptr_t v = (uintptr_t)gv_map_get(&rs->stamp_groups, g->ns);

		groups = v ? (size_t)(v - 1) : 0;
	} else {
		for (size_t i = 0; i < rs->groups.cap; i++) {
			const struct rgroup *o = rs->groups.v[i].val;

			if (rs->groups.v[i].key && o->model.nresults && !strcmp(o->ns, g->ns))
				groups++;
		}
	}
	return gv_xasprintf("%s; groups=%zu; chunks=%zu; results=%zu", rs->inputs, groups, nchunks,
			    nresults);
}

/*
 * The resource layout: metadata.ownerReferences and `scope` name the one
 * object of g (its first node: a group keyed by uid has one), as Kyverno
 * writes them (k8s-wire.md 3.3). Nothing when g has no result.
 */
static void resource_scope(const struct rgroup *g, json_t *md, json_t *o)
{
	const struct rnode *nd = NULL;
	json_t *owner, *scope;

	for (size_t i = 0; !nd && i < g->model.nodes.cap; i++)
		if (g->model.nodes.v[i].key)
			nd = g->model.nodes.v[i].val;
	if (!nd)
		return;
	owner = json_object();
	json_object_set_new(owner, "apiVersion", jstring(nd->api_version));
	json_object_set_new(owner, "kind", jstring(nd->kind));
	json_object_set_new(owner, "name", jstring(nd->name));
	json_object_set_new(owner, "uid", jstring(nd->uid));
	json_object_set_new(md, "ownerReferences", json_pack("[o]", owner));
	scope = json_object();
	json_object_set_new(scope, "apiVersion", jstring(nd->api_version));
	json_object_set_new(scope, "kind", jstring(nd->kind));
	if (*nd->namespace)
		json_object_set_new(scope, "namespace", jstring(nd->namespace));
	json_object_set_new(scope, "name", jstring(nd->name));
	json_object_set_new(scope, "uid", jstring(nd->uid));
	json_object_set_new(o, "scope", scope);
}

static json_t *report_object(const struct report_set *rs, const struct rgroup *g, size_t index,
			     size_t nchunks, json_t *results, uint64_t *hash)
{
	json_t *o = json_object(), *md = json_object(), *labels = json_object(), *sum;
	char *name = report_chunk_name(g->base, index), *label = report_group_label(g->base);
	char idx[24];

	snprintf(idx, sizeof(idx), "%zu", index);
	json_object_set_new(labels, REPORT_LABEL_MANAGED_BY, json_string(managed_by(rs)));
	json_object_set_new(labels, REPORT_LABEL_GROUP, json_string(label));
	json_object_set_new(labels, REPORT_LABEL_CHUNK, json_string(idx));
	json_object_set_new(labels, REPORT_LABEL_LAYOUT, json_string(layout_name(rs)));
	sum = summary_of(results);
	if (hash) /* the hash costs a sorted dump of the whole object: only when asked */
		*hash = content_hash(labels, sum, results);
	json_object_set_new(o, "apiVersion", json_string(report_api_version()));
	json_object_set_new(o, "kind", json_string(report_kind(!*g->ns)));
	json_object_set_new(md, "name", json_string(name));
	if (*g->ns)
		json_object_set_new(md, "namespace", json_string(g->ns));
	json_object_set_new(md, "labels", labels);
	if (rs->digest || rs->inputs) {
		json_t *ann = json_object();
		char *stamp = inputs_stamp(rs, g, nchunks, json_array_size(results));

		if (rs->digest)
			json_object_set_new(ann, REPORT_ANNOTATION_SCAN_DIGEST,
					    json_string(rs->digest));
		if (stamp)
			json_object_set_new(ann, REPORT_ANNOTATION_SCAN_INPUTS, json_string(stamp));
		free(stamp);
		json_object_set_new(md, "annotations", ann);
	}
	if (rs->opt.resource)
		resource_scope(g, md, o);
	json_object_set_new(o, "metadata", md);
	json_object_set_new(o, "summary", sum);
	json_object_set_new(o, "results", results);
	free(name);
	free(label);
	return o;
}

/* One object of a group: the group's sorted results [from, to), its content hash and key range. */
struct cplan {
	size_t from, to;
	uint64_t hash;
	char *lo, *hi; /* owned: smallest and largest result_key() */
};

static void cplans_free(struct cplan *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].lo);
		free(c[i].hi);
	}
	free(c);
}

/* Object `index` of g: the results v[from, to) (new reference; its content hash in *hash unless
 * NULL). */
static json_t *chunk_render(const struct report_set *rs, const struct rgroup *g,
			    const struct rpair *v, size_t from, size_t to, size_t index,
			    size_t nchunks, uint64_t *hash)
{
	json_t *results = json_array();

	for (size_t i = from; i < to; i++)
		json_array_append_new(results, entry_render(v[i].nd, v[i].e, !rs->opt.resource));
	return report_object(rs, g, index, nchunks, results, hash);
}

/*
 * How g's sorted results v[0..n) are cut into objects (at most
 * chunk_results results and chunk_bytes bytes each), with each object's
 * content hash and key range (*out, free with cplans_free). One object's
 * JSON is in memory at a time, so a group of any size costs one object.
 */
static enum gv_code group_cut(const struct report_set *rs, const struct rgroup *g,
			      const struct rpair *v, size_t n, struct cplan **out, size_t *nout,
			      struct gv_err *err)
{
	size_t count = 0, bytes = 0, nchunks = 0, start = 0;
	struct cplan *c =
	    gv_xcalloc(n / (rs->opt.chunk_results ? rs->opt.chunk_results : 1) + n + 1, sizeof(*c));
	json_t *cur = NULL;
	uint64_t eh = GV_FNV1A64_OFFSET; /* entry_hash of the results of cur */

	for (size_t i = 0; i <= n; i++) {
		json_t *r = NULL;
		char *t = NULL;
		size_t sz = 0;

		if (i < n) {
			/* one dump per result: its size (sorted keys do not change it) and hash */
			r = entry_render(v[i].nd, v[i].e, !rs->opt.resource);
			t = entry_dump(r);
			sz = t ? strlen(t) + 1 : 0;
		}
		if (cur && (i == n || count >= rs->opt.chunk_results ||
			    (count && bytes + sz > rs->opt.chunk_bytes))) {
			/* for the hash and range: the annotations are not part of them */
			json_t *obj = report_object(rs, g, nchunks, 0, cur, NULL);
			json_t *labels = managed_labels(obj);

			c[nchunks].hash =
			    content_hash_finish(eh, labels, json_object_get(obj, "summary"));
			json_decref(labels);
			object_range(obj, &c[nchunks].lo, &c[nchunks].hi);
			json_decref(obj);
			c[nchunks].from = start;
			c[nchunks].to = i;
			nchunks++;
			cur = NULL;
		}
		if (i == n)
			break;
		if (!cur) {
			if (nchunks >= REPORT_MAX_CHUNKS) {
				json_decref(r);
				free(t);
				cplans_free(c, nchunks);
				return gv_err_set(
				    err, GV_ELIMIT, "report %s%s%s: more than %d objects needed",
				    g->ns, *g->ns ? "/" : "", g->base, REPORT_MAX_CHUNKS);
			}
			cur = json_array();
			count = 0;
			bytes = 0;
			start = i;
			eh = GV_FNV1A64_OFFSET;
		}
		json_array_append_new(cur, r);
		eh = entry_hash(eh, t);
		free(t);
		count++;
		bytes += sz;
	}
	*out = c;
	*nout = nchunks;
	return GV_OK;
}

/*
 * The objects of g as the model says (new reference, chunk order), and
 * their content hashes (*hashes, caller frees).
 */
static enum gv_code group_render(const struct report_set *rs, const struct rgroup *g, json_t **out,
				 uint64_t **hashes, struct gv_err *err)
{
	size_t n, nc = 0;
	struct rpair *v = gstate_sorted(&g->model, &n);
	struct cplan *c = NULL;
	json_t *objs;
	uint64_t *h;
	enum gv_code rc;

	rc = group_cut(rs, g, v, n, &c, &nc, err);
	if (rc) {
		free(v);
		return rc;
	}
	objs = json_array();
	h = gv_xcalloc(nc + 1, sizeof(*h));
	for (size_t i = 0; i < nc; i++)
		json_array_append_new(objs,
				      chunk_render(rs, g, v, c[i].from, c[i].to, i, nc, &h[i]));
	cplans_free(c, nc);
	free(v);
	*out = objs;
	*hashes = h;
	return GV_OK;
}

static int group_cmp(const void *pa, const void *pb)
{
	const struct rgroup *a = *(struct rgroup *const *)pa, *b = *(struct rgroup *const *)pb;

	return strcmp(a->key, b->key);
}

static struct rgroup **groups_sorted(const struct report_set *rs, size_t *n)
{
	struct rgroup **v = gv_xcalloc(rs->groups.n ? rs->groups.n : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < rs->groups.cap; i++)
		if (rs->groups.v[i].key)
			v[k++] = rs->groups.v[i].val;
	qsort(v, k, sizeof(*v), group_cmp);
	*n = k;
	return v;
}

json_t *report_render_all(struct report_set *rs)
{
	json_t *all = json_array();
	struct rgroup **gs;
	size_t n;

	stamp_cache(rs);
	gs = groups_sorted(rs, &n);
	for (size_t i = 0; i < n; i++) {
		json_t *objs = NULL;
		uint64_t *h = NULL;

		if (group_render(rs, gs[i], &objs, &h, NULL))
			continue;
		json_array_extend(all, objs);
		json_decref(objs);
		free(h);
	}
	free(gs);
	stamp_uncache(rs);
	return all;
}

/* ---- reading objects back ---- */

/* The state and chunks of a group being read. */
struct fresh {
	struct gstate st;
	struct rchunk *chunks;
	size_t n, cap;
};

static void fresh_release(struct fresh *f)
{
	gstate_release(&f->st);
	chunks_free(f->chunks, f->n);
	memset(f, 0, sizeof(*f));
}

/* A result read that belongs elsewhere (report_load moves it). */
struct stray {
	char *ns; /* owned: namespace of the report it was in */
	struct rentry e;
	char *uid, *name; /* owned */
	const char *api_version, *kind, *namespace;
};

struct strays {
	struct stray *v;
	size_t n, cap;
};

static void strays_release(struct strays *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].ns);
		free(s->v[i].uid);
		free(s->v[i].name);
		rentry_release(&s->v[i].e);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static void strays_add(struct strays *s, const char *ns, const struct rinfo *ri, struct rentry *e)
{
	struct stray *x;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = gv_xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	x = &s->v[s->n++];
	x->ns = gv_xstrdup(ns);
	x->e = *e;
	x->uid = gv_xstrdup(ri->uid);
	x->name = gv_xstrdup(ri->name);
	x->api_version = ri->api_version;
	x->kind = ri->kind;
	x->namespace = ri->namespace;
}

/* The REPORT_ANNOTATION_SCAN_DIGEST of an object (borrowed), NULL when it has none. */
static const char *object_digest(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");

	return jstr(json_object_get(md, "annotations"), REPORT_ANNOTATION_SCAN_DIGEST);
}

/* The REPORT_ANNOTATION_SCAN_INPUTS of an object (borrowed), NULL when it has none. */
static const char *object_inputs(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");

	return jstr(json_object_get(md, "annotations"), REPORT_ANNOTATION_SCAN_INPUTS);
}

/*
 * Adds the results of obj to st: duplicates keep the newer timestamp.
 * Results whose policy belongs to another group of the layout (base of
 * obj's group given) go to strays (or are dropped when strays is NULL).
 * Returns the content hash of obj as gavel would render it.
 */
static uint64_t fold_object(struct report_set *rs, struct gstate *st, const char *ns,
			    const char *base, const json_t *obj, struct strays *strays)
{
	const json_t *results = json_object_get(obj, "results"), *r;
	const json_t *scope = json_object_get(obj, "scope");
	struct gstate own = {0}; /* obj's results alone, for the hash */
	json_t *rendered = json_array(), *labels;
	struct rpair *v;
	size_t i, n;
	uint64_t h;

	json_array_foreach(results, i, r)
	{
		struct rentry e, e2;
		struct rinfo ri;
		struct rentry *o;
		struct rnode *nd;
		bool mine = true;

		if (!entry_parse(rs, r, scope, &e, &ri))
			continue;
		if (base) {
			char *want = base_of(rs, ns, ri.uid, e.policy);

			mine = !strcmp(want, base);
			free(want);
		}
		rentry_copy(&e2, &e);
		nd = gv_map_get(&own.nodes, ri.uid);
		o = rnode_find(nd, e2.policy, e2.rule);
		if (!o || ts_newer(&e2, o))
			gstate_set(&own, &ri, &e2);
		else
			rentry_release(&e2);
		if (!mine) {
			if (strays)
				strays_add(strays, ns, &ri, &e);
			else
				rentry_release(&e);
			continue;
		}
		nd = gv_map_get(&st->nodes, ri.uid);
		o = rnode_find(nd, e.policy, e.rule);
		if (!o || ts_newer(&e, o))
			gstate_set(st, &ri, &e);
		else
			rentry_release(&e);
	}
	v = gstate_sorted(&own, &n);
	for (i = 0; i < n; i++)
		json_array_append_new(rendered, entry_render(v[i].nd, v[i].e, !rs->opt.resource));
	free(v);
	labels = managed_labels(obj);
	h = content_hash(labels, json_object_get(obj, "summary"), rendered);
	json_decref(labels);
	json_decref(rendered);
	gstate_release(&own);
	return h;
}

static void fresh_add(struct report_set *rs, struct fresh *f, const char *ns, const char *base,
		      const json_t *obj, struct strays *strays)
{
	const json_t *md = json_object_get(obj, "metadata");
	struct rchunk *c;

	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 4;
		f->chunks = gv_xrealloc(f->chunks, f->cap * sizeof(*f->chunks));
	}
	c = &f->chunks[f->n++];
	c->name = gv_xstrdup(str_or(jstr(md, "name"), ""));
	c->rv = jstr(md, "resourceVersion") ? gv_xstrdup(jstr(md, "resourceVersion")) : NULL;
	c->digest = dup_or_null(object_digest(obj));
	c->inputs = dup_or_null(object_inputs(obj));
	c->hash = fold_object(rs, &f->st, ns, base, obj, strays);
	object_range(obj, &c->lo, &c->hi);
}

/*
 * The group's known state becomes f (moved); the net changes synced ->
 * model are applied on top of it.
 */
static void group_rebase(struct report_set *rs, struct rgroup *g, struct fresh *f)
{
	struct gstate *cluster = NULL;
	bool changed = false;

	if (g->synced) {
		struct rnode **nodes;
		size_t nn;

		cluster = gstate_copy(&f->st);
		/* results added or changed */
		nodes = gstate_nodes(&g->model, &nn);
		for (size_t i = 0; i < nn; i++) {
			const struct rnode *m = nodes[i];
			const struct rnode *s = gv_map_get(&g->synced->nodes, m->uid);
			struct rinfo ri = {m->uid, m->api_version, m->kind, m->namespace, m->name};

			for (size_t j = 0; j < m->n; j++) {
				const struct rentry *se =
				    rnode_find(s, m->v[j].policy, m->v[j].rule);
				struct rnode *fn;
				struct rentry *fe, e;

				if (se && rentry_identical(se, &m->v[j]) && rnode_same_info(s, &ri))
					continue;
				fn = gv_map_get(&f->st.nodes, m->uid);
				fe = rnode_find(fn, m->v[j].policy, m->v[j].rule);
				if (fe && rentry_same(fe, &m->v[j]) && rnode_same_info(fn, &ri))
					continue;
				rentry_copy(&e, &m->v[j]);
				gstate_set(&f->st, &ri, &e);
				changed = true;
			}
		}
		free(nodes);
		/* results removed */
		nodes = gstate_nodes(g->synced, &nn);
		for (size_t i = 0; i < nn; i++) {
			const struct rnode *s = nodes[i];
			const struct rnode *m = gv_map_get(&g->model.nodes, s->uid);

			for (size_t j = 0; j < s->n; j++)
				if (!rnode_find(m, s->v[j].policy, s->v[j].rule))
					changed |= gstate_remove(&f->st, s->uid, s->v[j].policy,
								 s->v[j].rule);
		}
		free(nodes);
	}
	gstate_release(&g->model);
	g->model = f->st;
	gstate_free(g->synced);
	g->synced = NULL;
	if (changed) {
		g->synced = cluster;
		cluster = NULL;
	}
	gstate_free(cluster);
	chunks_free(g->chunks, g->nchunks);
	g->chunks = f->chunks;
	g->nchunks = f->n;
	memset(f, 0, sizeof(*f));
	g->known = true;
	g->dirty = true;
}

enum gv_code report_merge(struct report_set *rs, const char *ns, const char *base,
			  const json_t *current, json_t **desired, struct gv_err *err)
{
	struct rgroup *g = group_get(rs, ns, base);
	struct fresh f = {0};
	const json_t *obj;
	uint64_t *h = NULL;
	json_t *objs = NULL;
	size_t i;
	enum gv_code rc;

	json_array_foreach(current, i, obj) fresh_add(rs, &f, g->ns, g->base, obj, NULL);
	group_rebase(rs, g, &f);
	rc = group_render(rs, g, &objs, &h, err);
	if (rc)
		return rc;
	json_array_foreach(objs, i, obj)
	{
		const char *name = jstr(json_object_get(obj, "metadata"), "name");

		for (size_t j = 0; j < g->nchunks; j++)
			if (!strcmp(g->chunks[j].name, name) && g->chunks[j].rv)
				json_object_set_new(json_object_get(obj, "metadata"),
						    "resourceVersion",
						    json_string(g->chunks[j].rv));
	}
	free(h);
	*desired = objs;
	return GV_OK;
}

/* ---- plans ---- */

static json_t *delete_options(const char *rv)
{
	json_t *o = json_object();

	json_object_set_new(o, "kind", json_string("DeleteOptions"));
	json_object_set_new(o, "apiVersion", json_string("v1"));
	json_object_set_new(o, "propagationPolicy", json_string("Background"));
	if (rv) {
		json_t *pre = json_object();

		json_object_set_new(pre, "resourceVersion", json_string(rv));
		json_object_set_new(o, "preconditions", pre);
	}
	return o;
}

static void ops_add(struct report_op **ops, size_t *n, size_t *cap, struct report_op op)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		*ops = gv_xrealloc(*ops, *cap * sizeof(**ops));
	}
	(*ops)[(*n)++] = op;
}

/*
 * The writes of g (see report_plan). lazy: creates and updates carry no
 * body but the range [from, to) of the group's sorted results (*v,
 * caller frees) that group_write renders when it sends them, so that one
 * object's JSON is in memory at a time; otherwise *v is NULL and every
 * op has its body.
 */
static enum gv_code group_plan(const struct report_set *rs, const struct rgroup *g, bool lazy,
			       struct report_op **out, size_t *nout, size_t *unchanged,
			       struct rpair **vout, struct gv_err *err)
{
	struct report_op *ops = NULL;
	size_t n = 0, cap = 0, nv, nc = 0;
	struct rpair *v = gstate_sorted(&g->model, &nv);
	struct cplan *c = NULL;
	bool *used = gv_xcalloc(g->nchunks + 1, sizeof(*used));
	char *stamp = NULL;
	enum gv_code rc;

	*unchanged = 0;
	*vout = NULL;
	rc = group_cut(rs, g, v, nv, &c, &nc, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < nc; i++) {
		char *name = report_chunk_name(g->base, i);
		struct rchunk *cur = NULL;
		struct report_op op = {0};

		free(stamp);
		stamp = inputs_stamp(rs, g, nc, c[i].to - c[i].from);

		for (size_t j = 0; j < g->nchunks; j++) {
			if (!used[j] && !strcmp(g->chunks[j].name, name)) {
				cur = &g->chunks[j];
				used[j] = true;
				break;
			}
		}
		/* the digests count only when this set writes them: others leave them be */
		if (cur && cur->hash == c[i].hash &&
		    (!rs->digest || (cur->digest && !strcmp(cur->digest, rs->digest))) &&
		    (!stamp || (cur->inputs && !strcmp(cur->inputs, stamp)))) {
			(*unchanged)++;
			free(name);
			continue;
		}
		op.name = name;
		op.hash = c[i].hash;
		op.lo = c[i].lo;
		op.hi = c[i].hi;
		c[i].lo = c[i].hi = NULL;
		op.from = c[i].from;
		op.to = c[i].to;
		op.index = i;
		op.nchunks = nc;
		op.kind = cur ? REPORT_OP_UPDATE : REPORT_OP_CREATE;
		op.path = report_path(g->ns, cur ? name : NULL);
		if (!lazy) {
			op.body = chunk_render(rs, g, v, op.from, op.to, i, nc, NULL);
			if (cur && cur->rv)
				json_object_set_new(json_object_get(op.body, "metadata"),
						    "resourceVersion", json_string(cur->rv));
		}
		ops_add(&ops, &n, &cap, op);
	}
	for (size_t j = 0; j < g->nchunks; j++) {
		struct report_op op = {0};

		if (used[j])
			continue;
		op.kind = REPORT_OP_DELETE;
		op.name = gv_xstrdup(g->chunks[j].name);
		op.path = report_path(g->ns, g->chunks[j].name);
		op.body = delete_options(g->chunks[j].rv);
		ops_add(&ops, &n, &cap, op);
	}
out:
	cplans_free(c, nc);
	free(used);
	free(stamp);
	if (rc) {
		free(v);
		report_ops_free(ops, n);
		return rc;
	}
	if (lazy)
		*vout = v;
	else
		free(v);
	*out = ops;
	*nout = n;
	return GV_OK;
}

enum gv_code report_plan(struct report_set *rs, const char *ns, const char *base,
			 struct report_op **ops, size_t *n, struct gv_err *err)
{
	struct rgroup *g = group_find(rs, ns, base);
	size_t unchanged;

	struct rpair *v;

	*ops = NULL;
	*n = 0;
	if (!g)
		return GV_OK;
	return group_plan(rs, g, false, ops, n, &unchanged, &v, err);
}

void report_ops_free(struct report_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ops[i].name);
		free(ops[i].path);
		free(ops[i].lo);
		free(ops[i].hi);
		json_decref(ops[i].body);
	}
	free(ops);
}

/* ---- scan digests ---- */

static void buf_field(struct gv_buf *b, const char *s)
{
	gv_buf_adds(b, s ? s : "");
	gv_buf_addc(b, '\x1f');
}

/* One record as text, without timestamps (what the record does, not when). */
static char *jrec_text(const struct jrec *j)
{
	struct gv_buf b = {0};
	char **parts;
	size_t np = 0;

	gv_buf_addc(&b, (char)('0' + (int)j->kind));
	buf_field(&b, j->policy);
	buf_field(&b, j->res.api_version);
	buf_field(&b, j->res.kind);
	buf_field(&b, j->res.namespace);
	buf_field(&b, j->res.name);
	buf_field(&b, j->res.uid);
	buf_field(&b, j->ns);
	buf_field(&b, j->uid);
	parts = gv_xcalloc(j->n + j->nuids + 1, sizeof(*parts));
	for (size_t i = 0; i < j->n; i++) {
		const struct report_entry *e = &j->e[i];
		struct gv_buf eb = {0};

		buf_field(&eb, e->policy);
		buf_field(&eb, e->rule);
		buf_field(&eb, e->message);
		buf_field(&eb, e->severity);
		buf_field(&eb, e->category);
		gv_buf_addc(&eb, (char)('0' + (int)e->result));
		gv_buf_addc(&eb, e->scored ? 's' : 'u');
		gv_buf_addc(&eb, (char)('0' + (int)e->process));
		if (e->source) /* CEL policies' results (none: a legacy digest as it was) */
			buf_field(&eb, e->source);
		if (e->properties) { /* none: a digest as it was */
			char *t = json_dumps(e->properties, JSON_SORT_KEYS | JSON_COMPACT);

			buf_field(&eb, t);
			free(t);
		}
		parts[np++] = gv_buf_detach(&eb);
	}
	for (size_t i = 0; i < j->nuids; i++)
		parts[np++] = gv_xstrdup(j->uids[i]);
	if (np > 1)
		qsort(parts, np, sizeof(*parts), gv_strptr_cmp);
	for (size_t i = 0; i < np; i++) {
		gv_buf_adds(&b, parts[i]);
		gv_buf_addc(&b, '\x1e');
		free(parts[i]);
	}
	free(parts);
	return gv_buf_detach(&b);
}

char *report_journal_digest(const struct report_set *rs, const char *salt)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char **texts, *out;

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	texts = gv_xcalloc(rs->njournal + 1, sizeof(*texts));
	for (size_t i = 0; i < rs->njournal; i++)
		texts[i] = jrec_text(&rs->journal[i]);
	/* the order of the records is the order objects were evaluated in: not part of it */
	qsort(texts, rs->njournal, sizeof(*texts), gv_strptr_cmp);
	EVP_DigestUpdate(ctx, "gavel-scan-v1\n", 14);
	EVP_DigestUpdate(ctx, salt ? salt : "", strlen(salt ? salt : ""));
	EVP_DigestUpdate(ctx, "\n", 1);
	EVP_DigestUpdate(ctx, layout_name(rs), strlen(layout_name(rs)));
	for (size_t i = 0; i < rs->njournal; i++) {
		EVP_DigestUpdate(ctx, "\n", 1);
		EVP_DigestUpdate(ctx, texts[i], strlen(texts[i]));
		free(texts[i]);
	}
	free(texts);
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	out = gv_xcalloc(GV_SHA256_TEXT_LEN, 1);
	gv_sha256_text(md, out);
	return out;
}

void report_set_digest(struct report_set *rs, const char *digest)
{
	free(rs->digest);
	rs->digest = dup_or_null(digest);
}

void report_replay(struct report_set *dst, const struct report_set *src)
{
	for (size_t i = 0; i < src->njournal; i++) {
		const struct jrec *j = &src->journal[i];

		switch (j->kind) {
		case J_REPLACE:
			report_replace(dst, &j->res, j->policy, j->e, j->n, NULL);
			break;
		case J_UPSERT:
			report_upsert(dst, &j->res, j->e, j->n, NULL);
			break;
		case J_RETAIN:
			report_retain_since(dst, j->policy, (const char *const *)j->uids, j->nuids,
					    j->since);
			break;
		case J_DELETE_OBJECT:
			report_delete_object(dst, j->ns, j->uid);
			break;
		case J_RETAIN_OBJECTS:
			report_retain_objects(dst, j->res.api_version, j->res.kind, j->ns,
					      (const char *const *)j->uids, j->nuids, j->since);
			break;
		}
	}
}

/* base -> bit set of the chunk indexes seen (report_scan_unchanged, report_inputs_unchanged) */
struct seen_group {
	size_t n, max;
	size_t want; /* the chunk count its objects' stamps give; 0 = not told */
	unsigned char *bits;
};

/* Whether an object's metadata labels it as gavel's. */
static bool managed_by_gavel(const json_t *md)
{
	return jstr(json_object_get(md, "labels"), REPORT_LABEL_LAYOUT) != NULL;
}

/* Whether gavel alone wrote the object (no kubectl edit, no controller since). */
static bool written_by_gavel_only(const json_t *md)
{
	const json_t *mf;
	size_t k;

	json_array_foreach(json_object_get(md, "managedFields"), k, mf)
	{
		if (strcmp(str_or(jstr(mf, "manager"), ""), REPORT_FIELD_MANAGER))
			return false;
	}
	return true;
}

/*
 * Marks chunk idx of group base seen (the group made on first sight, with
 * max = idx). False when it was seen already: not a list of one moment.
 */
static bool seen_chunk(struct gv_map *seen, const char *base, size_t idx, struct seen_group **out)
{
	struct seen_group *sg = gv_map_get(seen, base);

	if (!sg) {
		sg = gv_xcalloc(1, sizeof(*sg));
		sg->bits = gv_xcalloc(REPORT_MAX_CHUNKS / 8 + 1, 1);
		sg->max = idx;
		gv_map_put(seen, gv_xstrdup(base), sg);
	}
	*out = sg;
	if (sg->bits[idx / 8] & (1u << (idx % 8)))
		return false;
	sg->bits[idx / 8] |= (unsigned char)(1u << (idx % 8));
	sg->n++;
	if (idx > sg->max)
		sg->max = idx;
	return true;
}

/* Whether every group seen has its chunks 0 .. max, none missing (and as many as it wants). */
static bool seen_complete(const struct gv_map *seen)
{
	for (size_t i = 0; i < seen->cap; i++) {
		const struct seen_group *sg = seen->v[i].val;

		if (seen->v[i].key && (sg->n != sg->max + 1 || (sg->want && sg->n != sg->want)))
			return false;
	}
	return true;
}

static void seen_release(struct gv_map *seen)
{
	for (size_t i = 0; i < seen->cap; i++) {
		struct seen_group *sg = seen->v[i].val;

		if (!seen->v[i].key)
			continue;
		free(sg->bits);
		free(sg);
		free((char *)seen->v[i].key);
	}
	gv_map_release(seen);
}

bool report_scan_unchanged(const struct report_set *scan, const char *ns, const json_t *items,
			   const char *digest)
{
	struct gv_map seen = {0};
	const json_t *item;
	bool ok = digest != NULL;
	size_t i;

	json_array_foreach(items, i, item)
	{
		const json_t *md = json_object_get(item, "metadata");
		const char *name = jstr(md, "name"), *d;
		struct seen_group *sg;
		char *base = NULL;
		size_t idx;

		if (!ok)
			break;
		if (!managed_by_gavel(md))
			continue; /* not gavel's */
		d = jstr(json_object_get(md, "annotations"), REPORT_ANNOTATION_SCAN_DIGEST);
		if (!name || !d || strcmp(d, digest) ||
		    strcmp(str_or(jstr(md, "namespace"), ""), ns ? ns : "") ||
		    !report_parse_name(name, &base, &idx) ||
		    !layout_owns(scan, ns ? ns : "", base) || idx >= REPORT_MAX_CHUNKS) {
			free(base);
			ok = false;
			break;
		}
		ok = written_by_gavel_only(md) && seen_chunk(&seen, base, idx, &sg);
		free(base);
	}
	ok = ok && seen_complete(&seen);
	/* every group the scan has results for has objects */
	for (i = 0; ok && i < scan->groups.cap; i++) {
		const struct rgroup *g = scan->groups.v[i].val;

		if (scan->groups.v[i].key && g->model.nresults && !gv_map_get(&seen, g->base))
			ok = false;
	}
	seen_release(&seen);
	return ok;
}

void report_set_inputs(struct report_set *rs, const char *inputs)
{
	free(rs->inputs);
	rs->inputs = dup_or_null(inputs);
}

const char *report_scan_inputs(const json_t *items)
{
	const json_t *item;
	size_t i;

	json_array_foreach(items, i, item)
	{
		const json_t *md = json_object_get(item, "metadata");
		const char *v =
		    jstr(json_object_get(md, "annotations"), REPORT_ANNOTATION_SCAN_INPUTS);
		if (managed_by_gavel(md) && v)
			return v;
	}
	return NULL;
}

/*
 * Parses "<inputs>; groups=<G>; chunks=<C>" against inputs: false when
 * the digest differs or the form is not this one.
 */
static bool parse_stamp(const char *v, const char *inputs, size_t *groups, size_t *chunks,
			size_t *results)
{
	static const char *const keys[] = {"; groups=", "; chunks=", "; results="};
	size_t *out[] = {groups, chunks, results};
	size_t n = strlen(inputs);

	if (!v || strncmp(v, inputs, n))
		return false;
	v += n;
	for (size_t i = 0; i < GV_ARRAY_LEN(keys); i++) {
		char *end;

		if (strncmp(v, keys[i], strlen(keys[i])))
			return false;
		v += strlen(keys[i]);
		if (*v < '0' || *v > '9')
			return false;
		*out[i] = strtoul(v, &end, 10);
		v = end;
	}
	return !*v && *groups > 0 && *chunks > 0 && *chunks <= REPORT_MAX_CHUNKS;
}

bool report_inputs_unchanged(const char *ns, const json_t *items, const char *inputs,
			     size_t *results)
{
	struct gv_map seen = {0};
	const json_t *item;
	size_t i, groups = 0;
	bool ok = inputs != NULL;

	json_array_foreach(items, i, item)
	{
		const json_t *md = json_object_get(item, "metadata");
		const char *name = jstr(md, "name");
		struct seen_group *sg;
		size_t idx, g, c, r;
		char *base = NULL;

		if (!ok)
			break;
		if (!managed_by_gavel(md))
			continue; /* not gavel's */
		if (!name || strcmp(str_or(jstr(md, "namespace"), ""), ns ? ns : "") ||
		    !parse_stamp(
			jstr(json_object_get(md, "annotations"), REPORT_ANNOTATION_SCAN_INPUTS),
			inputs, &g, &c, &r) ||
		    (groups && g != groups) || !report_parse_name(name, &base, &idx) || idx >= c) {
			free(base);
			ok = false;
			break;
		}
		groups = g;
		if (results)
			*results += r;
		/* the stamps of a group agree on its chunk count */
		if (!written_by_gavel_only(md) || !seen_chunk(&seen, base, idx, &sg) ||
		    (sg->want && sg->want != c))
			ok = false;
		else
			sg->want = c;
		free(base);
	}
	/* the groups the stamps count, each with all its chunks */
	ok = ok && seen.n && seen.n == groups && seen_complete(&seen);
	seen_release(&seen);
	return ok;
}

/* ---- the API server ---- */

static enum gv_code api_call(const struct report_api *api, const char *method, const char *path,
			     const json_t *body, json_t **out, struct kube_status *st,
			     struct gv_err *err)
{
	memset(st, 0, sizeof(*st));
	if (out)
		*out = NULL;
	return kube_request(api->client, method, path, body, out, st, err);
}

/* api_call() for answers whose metadata is all that is read (view: an object's or a list's). */
static enum gv_code api_call_meta(const struct report_api *api, const char *method,
				  const char *path, enum kube_view view, const json_t *body,
				  json_t **out, struct kube_status *st, struct gv_err *err)
{
	memset(st, 0, sizeof(*st));
	if (out)
		*out = NULL;
	return kube_request_view(api->client, method, path, view, body, out, st, err);
}

enum gv_code report_list_metadata(const struct report_api *api, const char *ns, json_t **items,
				  struct gv_err *err)
{
	char *sel = kube_escape(REPORT_SELECTOR);
	char *coll = report_path(ns, NULL);
	char *path = gv_xasprintf("%s?labelSelector=%s&resourceVersion=0", coll, sel);
	struct kube_status st;
	json_t *list = NULL;
	enum gv_code rc;

	*items = NULL;
	rc = api_call_meta(api, "GET", path, KUBE_VIEW_METADATA_LIST, NULL, &list, &st, err);
	free(path);
	free(coll);
	free(sel);
	if (rc)
		return rc;
	*items = json_incref(json_object_get(list, "items"));
	json_decref(list);
	if (!json_is_array(*items)) {
		json_decref(*items);
		*items = json_array();
	}
	return GV_OK;
}

static bool proceed(const struct report_api *api)
{
	return !api->proceed || api->proceed(api->ud);
}

/* Reads g's objects from the cluster and rebases onto them. */
static enum gv_code group_reread(struct report_set *rs, const struct report_api *api,
				 struct rgroup *g, struct report_stats *stats, struct gv_err *err)
{
	char *label = report_group_label(g->base);
	char *sel = gv_xasprintf(REPORT_LABEL_GROUP "=%s", label);
	char *esel = kube_escape(sel);
	char *coll = report_path(g->ns, NULL);
	char *path = gv_xasprintf("%s?labelSelector=%s", coll, esel);
	char *first = report_chunk_name(g->base, 0), *fpath = NULL;
	struct kube_status st;
	struct fresh f = {0};
	json_t *list = NULL, *one = NULL;
	const json_t *item;
	bool have_first = false;
	size_t i;
	enum gv_code rc;

	rc = api_call(api, "GET", path, NULL, &list, &st, err);
	if (rc)
		goto out;
	json_array_foreach(json_object_get(list, "items"), i, item)
	{
		const char *name = jstr(json_object_get(item, "metadata"), "name");
		char *b = NULL;
		size_t idx;

		if (!name || !report_parse_name(name, &b, &idx) || strcmp(b, g->base)) {
			free(b);
			continue;
		}
		free(b);
		have_first |= !strcmp(name, first);
		fresh_add(rs, &f, g->ns, g->base, item, NULL);
		if (stats)
			stats->read++;
	}
	if (!have_first) {
		/* chunk 0 written by someone who did not label it */
		struct gv_err e2 = {0};

		fpath = report_path(g->ns, first);
		rc = api_call(api, "GET", fpath, NULL, &one, &st, &e2);
		if (rc && st.http == 404) {
			rc = GV_OK;
		} else if (rc) {
			gv_err_set(err, rc, "%s", e2.msg);
			goto out;
		} else {
			fresh_add(rs, &f, g->ns, g->base, one, NULL);
			if (stats)
				stats->read++;
		}
	}
	group_rebase(rs, g, &f);
out:
	fresh_release(&f);
	json_decref(list);
	json_decref(one);
	free(label);
	free(sel);
	free(esel);
	free(coll);
	free(path);
	free(first);
	free(fpath);
	return rc;
}

/*
 * Object `name` of g now holds what we sent: content hash, digest and
 * inputs annotations (NULL = none) and key range lo..hi; resp is the
 * server's answer.
 */
static void chunk_set(struct rgroup *g, const char *name, const json_t *resp, uint64_t hash,
		      const char *digest, const char *inputs, const char *lo, const char *hi)
{
	const char *rv = jstr(json_object_get(resp, "metadata"), "resourceVersion");
	struct rchunk *c = NULL;

	for (size_t i = 0; i < g->nchunks; i++)
		if (!strcmp(g->chunks[i].name, name))
			c = &g->chunks[i];
	if (!c) {
		g->chunks = gv_xrealloc(g->chunks, (g->nchunks + 1) * sizeof(*g->chunks));
		c = &g->chunks[g->nchunks++];
		memset(c, 0, sizeof(*c));
		c->name = gv_xstrdup(name);
	}
	free(c->rv);
	c->rv = rv ? gv_xstrdup(rv) : NULL;
	free(c->digest);
	c->digest = dup_or_null(digest);
	free(c->inputs);
	c->inputs = dup_or_null(inputs);
	c->hash = hash;
	free(c->lo);
	free(c->hi);
	c->lo = dup_or_null(lo);
	c->hi = dup_or_null(hi);
}

static void chunk_drop(struct rgroup *g, const char *name)
{
	for (size_t i = 0; i < g->nchunks; i++) {
		if (!strcmp(g->chunks[i].name, name)) {
			free(g->chunks[i].name);
			free(g->chunks[i].rv);
			free(g->chunks[i].digest);
			free(g->chunks[i].inputs);
			free(g->chunks[i].lo);
			free(g->chunks[i].hi);
			memmove(&g->chunks[i], &g->chunks[i + 1],
				(g->nchunks - i - 1) * sizeof(*g->chunks));
			g->nchunks--;
			return;
		}
	}
}

struct write_order {
	struct report_op *ops; /* the plan's writes (creates and updates) */
	size_t n;
	char **lo, **hi;	   /* key range of each op's new content */
	const struct rchunk **old; /* the object each op overwrites, or NULL */
	unsigned char *state;	   /* 0 not visited, 1 visiting, 2 placed */
	struct report_op *out;
	size_t nout;
};

static bool ranges_meet(const char *alo, const char *ahi, const char *blo, const char *bhi)
{
	return alo && blo && strcmp(alo, bhi) <= 0 && strcmp(blo, ahi) <= 0;
}

/* Places op i after the writes that take over the results its target holds. */
static void order_visit(struct write_order *w, size_t i)
{
	const struct rchunk *old = w->old[i];

	if (w->state[i])
		return; /* placed, or on the current path (no cycle is possible; ignore it) */
	w->state[i] = 1;
	for (size_t j = 0; old && j < w->n; j++)
		if (j != i && ranges_meet(old->lo, old->hi, w->lo[j], w->hi[j]))
			order_visit(w, j);
	w->state[i] = 2;
	w->out[w->nout++] = w->ops[i];
}

/*
 * Orders the writes of a group's plan so that no result is missing from
 * the cluster between two writes: a writer stopped (killed, deposed) in
 * the middle leaves at worst a result in two objects, which the next
 * flush repairs, never a result in none, which nothing could bring back.
 * An object is overwritten only after the objects that take over results
 * it holds were written. Results are cut into objects in sort order, so
 * those are the new objects whose key range meets the old object's; the
 * results of one object all move the same way (up when results were added
 * before them, down when removed), so the order exists (no cycle). The
 * deletions, last in the plan, stay last. Recursion depth is at most the
 * number of objects (REPORT_MAX_CHUNKS).
 */
static void order_writes(const struct rgroup *g, struct report_op *ops, size_t n)
{
	struct write_order w = {.ops = ops};

	while (w.n < n && ops[w.n].kind != REPORT_OP_DELETE)
		w.n++;
	if (w.n < 2)
		return;
	w.lo = gv_xcalloc(w.n, sizeof(*w.lo));
	w.hi = gv_xcalloc(w.n, sizeof(*w.hi));
	w.old = gv_xcalloc(w.n, sizeof(*w.old));
	w.state = gv_xcalloc(w.n, 1);
	w.out = gv_xcalloc(w.n, sizeof(*w.out));
	for (size_t i = 0; i < w.n; i++) {
		w.lo[i] = dup_or_null(ops[i].lo);
		w.hi[i] = dup_or_null(ops[i].hi);
		for (size_t j = 0; ops[i].kind == REPORT_OP_UPDATE && j < g->nchunks; j++)
			if (!strcmp(g->chunks[j].name, ops[i].name))
				w.old[i] = &g->chunks[j];
	}
	for (size_t i = 0; i < w.n; i++)
		order_visit(&w, i);
	memcpy(ops, w.out, w.n * sizeof(*ops));
	for (size_t i = 0; i < w.n; i++) {
		free(w.lo[i]);
		free(w.hi[i]);
	}
	free(w.lo);
	free(w.hi);
	free(w.old);
	free(w.state);
	free(w.out);
}

/* Result of one write: done, conflict (re-read and retry), or failed. */
enum wres { W_OK, W_CONFLICT, W_FAIL, W_STOP };

static enum wres group_write(struct report_set *rs, const struct report_api *api, struct rgroup *g,
			     struct report_stats *stats, struct gv_err *err)
{
	struct report_op *ops = NULL;
	struct rpair *v = NULL;
	size_t n = 0, unchanged = 0;
	enum wres res = W_OK;

	if (group_plan(rs, g, true, &ops, &n, &unchanged, &v, err))
		return W_FAIL;
	order_writes(g, ops, n);
	if (stats)
		stats->unchanged += unchanged;
	for (size_t i = 0; i < n && res == W_OK; i++) {
		struct report_op *op = &ops[i];
		struct kube_status st;
		json_t *resp = NULL;
		struct gv_err e2 = {0};
		enum gv_code rc;
		static const char *const methods[] = {"POST", "PUT", "DELETE"};

		if (!proceed(api)) {
			res = W_STOP;
			break;
		}
		if (!op->body) {
			/* rendered now, and freed once sent: one object in memory at a time */
			op->body =
			    chunk_render(rs, g, v, op->from, op->to, op->index, op->nchunks, NULL);
			for (size_t j = 0; op->kind == REPORT_OP_UPDATE && j < g->nchunks; j++)
				if (!strcmp(g->chunks[j].name, op->name) && g->chunks[j].rv)
					json_object_set_new(json_object_get(op->body, "metadata"),
							    "resourceVersion",
							    json_string(g->chunks[j].rv));
		}
		/* only the answer's resourceVersion is read: no need for the server to send it all
		 */
		if (op->kind == REPORT_OP_DELETE)
			rc = api_call(api, methods[op->kind], op->path, op->body, &resp, &st, &e2);
		else
			rc = api_call_meta(api, methods[op->kind], op->path, KUBE_VIEW_METADATA,
					   op->body, &resp, &st, &e2);
		if (!rc) {
			if (op->kind == REPORT_OP_DELETE) {
				chunk_drop(g, op->name);
				if (stats)
					stats->deleted++;
			} else {
				chunk_set(g, op->name, resp, op->hash, rs->digest,
					  object_inputs(op->body), op->lo, op->hi);
				if (stats && op->kind == REPORT_OP_CREATE)
					stats->created++;
				else if (stats)
					stats->updated++;
			}
		} else if (st.http == 404 && op->kind == REPORT_OP_DELETE) {
			chunk_drop(g, op->name);
		} else if (st.http == 409 || (st.http == 404 && op->kind == REPORT_OP_UPDATE)) {
			gv_debug("report %s%s%s: %s: %ld %s, reading it again", g->ns,
				 *g->ns ? "/" : "", op->name, methods[op->kind], st.http,
				 st.reason);
			res = W_CONFLICT;
		} else {
			gv_err_set(err, rc, "%s", e2.msg);
			res = W_FAIL;
		}
		json_decref(resp);
		if (op->kind != REPORT_OP_DELETE) {
			json_decref(op->body);
			op->body = NULL;
		}
	}
	report_ops_free(ops, n);
	free(v);
	return res;
}

static enum gv_code group_flush(struct report_set *rs, const struct report_api *api,
				struct rgroup *g, struct report_stats *stats, bool *stopped,
				struct gv_err *err)
{
	enum gv_code rc;

	if (!g->known) {
		rc = group_reread(rs, api, g, stats, err);
		if (rc)
			return rc;
	}
	for (int attempt = 0; attempt < REPORT_MAX_ATTEMPTS; attempt++) {
		enum wres w = group_write(rs, api, g, stats, err);

		if (w == W_OK) {
			gstate_free(g->synced);
			g->synced = NULL;
			g->dirty = false;
			return GV_OK;
		}
		if (w == W_STOP) {
			*stopped = true;
			return GV_OK;
		}
		if (w == W_FAIL)
			return err && err->code ? err->code : GV_ENET;
		if (stats)
			stats->conflicts++;
		rc = group_reread(rs, api, g, stats, err);
		if (rc)
			return rc;
	}
	return gv_err_set(err, GV_ENET, "still conflicting after %d attempts", REPORT_MAX_ATTEMPTS);
}

enum gv_code report_flush(struct report_set *rs, const struct report_api *api,
			  struct report_stats *stats, struct gv_err *err)
{
	struct rgroup **gs;
	size_t n, kept = 0;
	enum gv_code first = GV_OK;
	bool stopped = false;

	stamp_cache(rs);
	gs = groups_sorted(rs, &n);
	for (size_t i = 0; i < n && !stopped; i++) {
		struct rgroup *g = gs[i];
		struct gv_err e = {0};
		enum gv_code rc;

		if (!g->dirty)
			continue;
		if (!proceed(api)) {
			stopped = true;
			break;
		}
		rc = group_flush(rs, api, g, stats, &stopped, &e);
		if (rc) {
			gv_warn("report %s%s%s: %s", g->ns, *g->ns ? "/" : "", g->base, e.msg);
			if (stats)
				stats->failed++;
			if (!first) {
				first = rc;
				gv_err_set(err, rc, "report %s%s%s: %s", g->ns, *g->ns ? "/" : "",
					   g->base, e.msg);
			}
		} else if (!g->dirty && !g->model.nresults && !g->nchunks && !g->synced) {
			/* an empty group with no objects: forget it */
			group_free(gv_map_del(&rs->groups, g->key));
		}
	}
	free(gs);
	stamp_uncache(rs);
	if (first || stopped)
		return first;
	/* objects of the other layout, now that their results are written elsewhere */
	for (size_t i = 0; i < rs->nobsolete; i++) {
		struct kube_status st;
		struct gv_err e = {0};
		json_t *opts = delete_options(NULL);
		enum gv_code rc;

		rc = api_call(api, "DELETE", rs->obsolete[i], opts, NULL, &st, &e);
		json_decref(opts);
		if (!rc || st.http == 404) {
			if (!rc && stats)
				stats->deleted++;
			free(rs->obsolete[i]);
			continue;
		}
		if (!first)
			first = gv_err_set(err, rc, "%s", e.msg);
		rs->obsolete[kept++] = rs->obsolete[i];
	}
	rs->nobsolete = kept;
	return first;
}

/* ---- start-up ---- */

static void obsolete_add(struct report_set *rs, const char *ns, const char *name)
{
	char *path = report_path(ns, name);

	for (size_t i = 0; i < rs->nobsolete; i++) {
		if (!strcmp(rs->obsolete[i], path)) {
			free(path);
			return;
		}
	}
	rs->obsolete = gv_xrealloc(rs->obsolete, (rs->nobsolete + 1) * sizeof(*rs->obsolete));
	rs->obsolete[rs->nobsolete++] = path;
}

struct loading {
	struct gv_map groups; /* group key -> struct fresh */
	struct strays strays;
};

static void load_item(struct report_set *rs, struct loading *ld, const json_t *item)
{
	const json_t *md = json_object_get(item, "metadata");
	const char *ns = str_or(jstr(md, "namespace"), ""), *name = jstr(md, "name");
	char *base = NULL, *key;
	struct fresh *f;
	size_t idx;

	if (!name)
		return;
	if (!report_parse_name(name, &base, &idx) || !layout_owns(rs, ns, base)) {
		/* another layout's (or a foreign name): move its results, delete it later */
		struct gstate scratch = {0};

		gv_info("report %s%s%s: not of the %s layout, its results move", ns, *ns ? "/" : "",
			name, layout_name(rs));
		fold_object(rs, &scratch, ns, "", item, &ld->strays);
		gstate_release(&scratch);
		obsolete_add(rs, ns, name);
		free(base);
		return;
	}
	key = group_key(ns, base);
	f = gv_map_get(&ld->groups, key);
	if (!f) {
		f = gv_xcalloc(1, sizeof(*f));
		f->chunks = NULL;
		gv_map_put(&ld->groups, gv_xstrdup(key), f);
	}
	fresh_add(rs, f, ns, base, item, &ld->strays);
	free(key);
	free(base);
}

static enum gv_code load_list(struct report_set *rs, const struct report_api *api,
			      struct loading *ld, const char *coll, int page,
			      struct report_stats *stats, struct gv_err *err)
{
	char *sel = kube_escape(REPORT_SELECTOR);
	char *path = gv_xasprintf("%s?labelSelector=%s", coll, sel);
	/* a restart folds items seen twice into one */
	struct kube_list_options o = {.limit = page, .max_restarts = LIST_RESTARTS};
	struct kube_pager *p = kube_pager_new(api->client, path, &o);
	struct kube_page *pg;
	enum gv_code rc;

	while (!(rc = kube_pager_next(p, &pg, NULL, err)) && pg) {
		const json_t *item;
		size_t i;

		json_array_foreach(json_object_get(pg->list, "items"), i, item)
		{
			load_item(rs, ld, item);
			if (stats)
				stats->read++;
		}
	}
	kube_pager_free(p);
	free(path);
	free(sel);
	return rc;
}

enum gv_code report_load(struct report_set *rs, const struct report_api *api,
			 struct report_stats *stats, struct gv_err *err)
{
	struct loading ld = {0};
	/* scoped: one namespace's (or the cluster's) reports, one object a page */
	const char *scope = api->scope;
	char *pr = scope ? report_path(scope, NULL) : report_path_all();
	char *cpr = report_path(NULL, NULL);
	int page = scope ? 1 : LIST_PAGE;
	enum gv_code rc = GV_OK;

	if (!scope || *scope)
		rc = load_list(rs, api, &ld, pr, page, stats, err);
	if (!rc && (!scope || !*scope))
		rc = load_list(rs, api, &ld, cpr, page, stats, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < ld.groups.cap; i++) {
		const char *key = ld.groups.v[i].key, *sep;
		struct fresh *f = ld.groups.v[i].val;
		char *ns;

		if (!key)
			continue;
		sep = strchr(key, '\x1f');
		ns = gv_xstrndup(key, (size_t)(sep - key));
		group_rebase(rs, group_get(rs, ns, sep + 1), f);
		free(ns);
	}
	rs->loaded = true;
	/* groups not seen do not exist in the cluster */
	for (size_t i = 0; i < rs->groups.cap; i++) {
		struct rgroup *g = rs->groups.v[i].val;

		if (rs->groups.v[i].key && !g->known)
			g->known = true;
	}
	for (size_t i = 0; i < ld.strays.n; i++) {
		struct stray *x = &ld.strays.v[i];
		struct rinfo ri = {x->uid, x->api_version, x->kind, x->namespace, x->name};
		char *base = base_of(rs, x->ns, x->uid, x->e.policy);

		model_upsert(rs, group_get(rs, x->ns, base), &ri, &x->e, true);
		memset(&x->e, 0, sizeof(x->e));
		free(base);
	}
out:
	for (size_t i = 0; i < ld.groups.cap; i++) {
		if (!ld.groups.v[i].key)
			continue;
		fresh_release(ld.groups.v[i].val);
		free(ld.groups.v[i].val);
		free((char *)ld.groups.v[i].key);
	}
	gv_map_release(&ld.groups);
	strays_release(&ld.strays);
	free(pr);
	free(cpr);
	return rc;
}
