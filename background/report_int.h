/*
 * report_int.h - internals shared by the files of the PolicyReport writer
 * (report.h): report_model.c (the model: results, groups, the journal),
 * report_names.c (object names, the report API in use, layouts),
 * report.c (results into the model and changes to it), report_render.c
 * (rendering into chunked objects, content digests), report_merge.c
 * (reading objects back, write plans), report_digest.c (scan digests)
 * and report_sync.c (the API server: flush, start-up). Not for use
 * outside those files.
 *
 * A group keeps two states: `model` (what the reports should say) and,
 * once the model changed since the group was last in sync with the
 * cluster, `synced` (what the cluster held then). The net change is the
 * key-by-key difference synced -> model; after a 409 the group is read
 * again and that difference is applied to what was read. Keys that did
 * not change are not touched, so results written by others survive.
 */
#ifndef GV_BACKGROUND_REPORT_INT_H
#define GV_BACKGROUND_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/hash.h"
#include "background/report.h"

/* ---- small helpers ---- */

static inline const char *str_or(const char *s, const char *def)
{
	return s ? s : def;
}

static inline const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* A copy of s of at most max bytes: longer text is cut at a UTF-8 boundary and ends in "...". */
static inline char *bounded_dup(const char *s, size_t max)
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
static inline json_t *jstring(const char *s)
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

static inline char *dup_or_null(const char *s)
{
	return s ? gv_xstrdup(s) : NULL;
}

/* ---- the model ---- */

/* One result. Interned strings belong to the set's pool. */
struct rentry {
	const char *policy, *rule; /* interned */
	const char *source;	   /* interned or NULL */
	const char *severity;	   /* interned or NULL */
	const char *category;	   /* interned or NULL */
	const char *process;	   /* interned or NULL */
	char *message;		   /* owned, or interned when pooled */
	json_t *props;		   /* owned: properties besides process (strings), or NULL */
	enum engine_status result;
	bool scored;
	bool pooled; /* message interned (report_options.intern_messages): not owned */
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
	/* owned: smallest and largest result key (report_result_key()); NULL = none */
	char *lo, *hi;
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

enum jkind { J_REPLACE, J_UPSERT, J_RETAIN, J_DELETE_OBJECT, J_RETAIN_OBJECTS };

/*
 * One recorded change (report_options.journal), replayed by report_replay().
 * Its strings are interned in the set's pool: a scan records the same
 * policies, rules, messages and objects over and over.
 */
struct jrec {
	enum jkind kind;
	const char *policy;	    /* interned: J_REPLACE, J_RETAIN */
	struct report_resource res; /* interned strings: J_REPLACE, J_UPSERT */
	struct report_entry *e;	    /* owned, with interned strings and owned properties */
	size_t n;
	const char **uids; /* owned array of interned uids: J_RETAIN */
	size_t nuids;
	/* interned: J_DELETE_OBJECT, J_RETAIN_OBJECTS (ns NULL = every group) */
	const char *ns, *uid;
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

/* Resource fields of a node, as a change gives them. */
struct rinfo {
	const char *uid;			    /* borrowed */
	const char *api_version, *kind, *namespace; /* interned */
	const char *name;			    /* borrowed */
};

struct rpair {
	const struct rnode *nd;
	const struct rentry *e;
};

/* One object of a group: the group's sorted results [from, to), its content hash and key range. */
struct cplan {
	size_t from, to;
	uint64_t hash;
	char *lo, *hi; /* owned: smallest and largest report_result_key() */
};

/* The state and chunks of a group being read. */
struct fresh {
	struct gstate st;
	struct rchunk *chunks;
	size_t n, cap;
};

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

/* ---- report_model.c ---- */

/* s interned in the set's pool (NULL for NULL): equal strings, one pointer. */
const char *report_intern(struct report_set *rs, const char *s);

void report_rentry_release(struct rentry *e);

void report_rentry_copy(struct rentry *dst, const struct rentry *src);

/* Equal apart from the timestamp. Interned strings compare by pointer. */
bool report_rentry_same(const struct rentry *a, const struct rentry *b);

bool report_rentry_identical(const struct rentry *a, const struct rentry *b);

bool report_ts_newer(const struct rentry *a, const struct rentry *b);

bool report_rnode_same_info(const struct rnode *nd, const struct rinfo *ri);

void report_rnode_free(struct rnode *nd);

struct rentry *report_rnode_find(const struct rnode *nd, const char *policy, const char *rule);

void report_gstate_release(struct gstate *s);

void report_gstate_free(struct gstate *s);

struct gstate *report_gstate_copy(const struct gstate *s);

void report_gstate_drop_if_empty(struct gstate *s, struct rnode *nd);

/*
 * Sets e (ownership moves here) for its key, freeing a result it
 * replaces; ri becomes the node's.
 */
void report_gstate_set(struct gstate *s, const struct rinfo *ri, struct rentry *e);

/* Removes entry i of nd (the node may become empty; the caller drops it). */
void report_rnode_remove(struct gstate *s, struct rnode *nd, size_t i);

bool report_gstate_remove(struct gstate *s, const char *uid, const char *policy, const char *rule);

/* The nodes of s, in no particular order (borrowed pointers). */
struct rnode **report_gstate_nodes(const struct gstate *s, size_t *n);

char *report_group_key(const char *ns, const char *base);

struct rgroup *report_group_find(const struct report_set *rs, const char *ns, const char *base);

struct rgroup *report_group_get(struct report_set *rs, const char *ns, const char *base);

void report_chunks_free(struct rchunk *c, size_t n);

/*
 * The sort key of a rendered result (report_rpair_cmp's order: kind, namespace,
 * name, uid, policy, rule; the separator sorts before any character of a
 * name). Caller frees.
 */
char *report_result_key(const json_t *r);

/* The smallest and largest result key of a report object (NULL, NULL: no results). */
void report_object_range(const json_t *obj, char **lo, char **hi);

void report_group_free(struct rgroup *g);

/* Before the first change of a group in sync: remember the synced state. */
void report_group_touch(struct rgroup *g);

/* The journal's copy of src: its strings interned in rs's pool. */
void report_resource_copy(struct report_set *rs, struct report_resource *dst,
			  const struct report_resource *src);

/* The journal's copy of e[0..n): strings interned in rs's pool, properties deep copies. */
struct report_entry *report_entries_copy(struct report_set *rs, const struct report_entry *e,
					 size_t n);

/* A record's own memory (its strings are the pool's). */
void report_jrec_release(struct jrec *j);

/* Frees every group of rs (its model and what it knows of the cluster's objects). */
void report_drop_groups(struct report_set *rs);

/* A new record at the end of the journal (zeroed), or NULL when there is none. */
struct jrec *report_journal_add(struct report_set *rs, enum jkind kind);

/* ---- report_names.c ---- */

/* Whether base is a base name of the set's layout for namespace ns. */
bool report_layout_owns(const struct report_set *rs, const char *ns, const char *base);

const char *report_layout_name(const struct report_set *rs);

/* The app.kubernetes.io/managed-by value of the set's objects. */
const char *report_managed_by(const struct report_set *rs);

bool report_allowed(const struct report_set *rs, enum engine_status st);

/* ---- report.c ---- */

bool report_status_parse(const char *s, enum engine_status *out);

/*
 * One result of a report as read from the cluster. Returns false (nothing
 * filled) when it has no policy or an unknown result. ri's uid and name
 * point into r (or scope: the report's `scope`, for results without
 * `resources`, as the resource layout writes them).
 */
bool report_entry_parse(struct report_set *rs, const json_t *r, const json_t *scope,
			struct rentry *e, struct rinfo *ri);

/* One result as written; with_resource false: without `resources` (the resource layout). */
json_t *report_entry_render(const struct rnode *nd, const struct rentry *e, bool with_resource);

/*
 * Sets one result (ownership moves here). newer_wins: a recorded result
 * with a later timestamp stays.
 */
void report_model_upsert(struct report_set *rs, struct rgroup *g, const struct rinfo *ri,
			 struct rentry *e, bool newer_wins);

/* The base name of the group of a result of policy about the object uid in namespace ns. */
char *report_base_of(const struct report_set *rs, const char *ns, const char *uid,
		     const char *policy);

/* ---- report_render.c ---- */

int report_rpair_cmp(const void *pa, const void *pb);

struct rpair *report_gstate_sorted(const struct gstate *s, size_t *n);

uint64_t report_content_hash(const json_t *labels, const json_t *summary, const json_t *results);

/* The labels gavel manages, as obj carries them. */
json_t *report_managed_labels(const json_t *obj);

/*
 * Counts the groups with results of each namespace for report_inputs_stamp(), until
 * report_stamp_uncache(). A count that a conflict's re-read changes meanwhile only
 * makes the next scan evaluate again (report_inputs_unchanged() is false).
 */
void report_stamp_cache(struct report_set *rs);

void report_stamp_uncache(struct report_set *rs);

/*
 * REPORT_ANNOTATION_SCAN_INPUTS of an object of g with nresults results
 * when g has nchunks objects (caller frees), NULL when rs has no inputs
 * digest.
 */
char *report_inputs_stamp(const struct report_set *rs, const struct rgroup *g, size_t nchunks,
			  size_t nresults);

void report_cplans_free(struct cplan *c, size_t n);

/*
 * Object `index` of g: the results v[from, to) (new reference; its
 * content hash in *hash unless NULL).
 */
json_t *report_chunk_render(const struct report_set *rs, const struct rgroup *g,
			    const struct rpair *v, size_t from, size_t to, size_t index,
			    size_t nchunks, uint64_t *hash);

/*
 * How g's sorted results v[0..n) are cut into objects (at most
 * chunk_results results and chunk_bytes bytes each), with each object's
 * content hash and key range (*out, free with report_cplans_free). One object's
 * JSON is in memory at a time, so a group of any size costs one object.
 */
enum gv_code report_group_cut(const struct report_set *rs, const struct rgroup *g,
			      const struct rpair *v, size_t n, struct cplan **out, size_t *nout,
			      struct gv_err *err);

/*
 * The objects of g as the model says (new reference, chunk order), and
 * their content hashes (*hashes, caller frees).
 */
enum gv_code report_group_render(const struct report_set *rs, const struct rgroup *g, json_t **out,
				 uint64_t **hashes, struct gv_err *err);

struct rgroup **report_groups_sorted(const struct report_set *rs, size_t *n);

/* ---- report_merge.c ---- */

void report_fresh_release(struct fresh *f);

void report_strays_release(struct strays *s);

/* The REPORT_ANNOTATION_SCAN_INPUTS of an object (borrowed), NULL when it has none. */
const char *report_object_inputs(const json_t *obj);

/*
 * Adds the results of obj to st: duplicates keep the newer timestamp.
 * Results whose policy belongs to another group of the layout (base of
 * obj's group given) go to strays (or are dropped when strays is NULL).
 * Returns the content hash of obj as gavel would render it.
 */
uint64_t report_fold_object(struct report_set *rs, struct gstate *st, const char *ns,
			    const char *base, const json_t *obj, struct strays *strays);

void report_fresh_add(struct report_set *rs, struct fresh *f, const char *ns, const char *base,
		      const json_t *obj, struct strays *strays);

/*
 * The group's known state becomes f (moved); the net changes synced ->
 * model are applied on top of it.
 */
void report_group_rebase(struct report_set *rs, struct rgroup *g, struct fresh *f);

json_t *report_delete_options(const char *rv);

/*
 * The writes of g (see report_plan). lazy: creates and updates carry no
 * body but the range [from, to) of the group's sorted results (*v,
 * caller frees) that group_write renders when it sends them, so that one
 * object's JSON is in memory at a time; otherwise *v is NULL and every
 * op has its body.
 */
enum gv_code report_group_plan(const struct report_set *rs, const struct rgroup *g, bool lazy,
			       struct report_op **out, size_t *nout, size_t *unchanged,
			       struct rpair **vout, struct gv_err *err);

#endif
