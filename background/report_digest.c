/*
 * report_digest.c - scan digests: the journal as text and its digest,
 * replay into another set, and whether a namespace's reports already say
 * what a scan would write (its digest or its inputs unchanged).
 */
#include "background/report_int.h"

#include <stdio.h>
#include <openssl/evp.h>
#include "common/banned.h"

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

/* The digest of one record's text: the journal digest sorts these, not the texts. */
struct jsum {
	unsigned char md[32];
};

static int jsum_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct jsum));
}

char *report_journal_digest(const struct report_set *rs, const char *salt)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	struct jsum *sums;
	char *out;
	bool ok = true;

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	/*
	 * 32 bytes a record rather than its text (a scan's journal holds a
	 * record per object and policy): v2, since the digest of v1 was of
	 * the sorted texts, so that no v1 digest compares equal.
	 */
	sums = gv_xcalloc(rs->njournal + 1, sizeof(*sums));
	for (size_t i = 0; i < rs->njournal && ok; i++) {
		char *t = jrec_text(&rs->journal[i]);
		unsigned int n = 0;

		ok = EVP_Digest(t, strlen(t), sums[i].md, &n, EVP_sha256(), NULL) && n == 32;
		free(t);
	}
	/* the order of the records is the order objects were evaluated in: not part of it */
	qsort(sums, rs->njournal, sizeof(*sums), jsum_cmp);
	EVP_DigestUpdate(ctx, "gavel-scan-v2\n", 14);
	EVP_DigestUpdate(ctx, salt ? salt : "", strlen(salt ? salt : ""));
	EVP_DigestUpdate(ctx, "\n", 1);
	EVP_DigestUpdate(ctx, report_layout_name(rs), strlen(report_layout_name(rs)));
	for (size_t i = 0; i < rs->njournal; i++) {
		EVP_DigestUpdate(ctx, "\n", 1);
		EVP_DigestUpdate(ctx, sums[i].md, sizeof(sums[i].md));
	}
	free(sums);
	ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return NULL;
	out = gv_xcalloc(GV_SHA256_TEXT_LEN, 1);
	gv_sha256_text(md, out);
	return out;
}

void report_set_digest(struct report_set *rs, const char *digest)
{
	free(rs->digest);
	rs->digest = dup_or_null(digest);
}

/* Record j of a journal made on dst. */
static void replay_one(struct report_set *dst, const struct jrec *j)
{
	switch (j->kind) {
	case J_REPLACE:
		report_replace(dst, &j->res, j->policy, j->e, j->n, NULL);
		break;
	case J_UPSERT:
		report_upsert(dst, &j->res, j->e, j->n, NULL);
		break;
	case J_RETAIN:
		report_retain_since(dst, j->policy, j->uids, j->nuids, j->since);
		break;
	case J_DELETE_OBJECT:
		report_delete_object(dst, j->ns, j->uid);
		break;
	case J_RETAIN_OBJECTS:
		report_retain_objects(dst, j->res.api_version, j->res.kind, j->ns, j->uids,
				      j->nuids, j->since);
		break;
	}
}

void report_replay(struct report_set *dst, const struct report_set *src)
{
	for (size_t i = 0; i < src->njournal; i++)
		replay_one(dst, &src->journal[i]);
}

void report_replay_spend(struct report_set *dst, struct report_set *src)
{
	/* src's own results first: dst's grow as the records go */
	report_drop_groups(src);
	for (size_t i = 0; i < src->njournal; i++) {
		replay_one(dst, &src->journal[i]);
		report_jrec_release(&src->journal[i]);
	}
	free(src->journal);
	src->journal = NULL;
	src->njournal = src->capjournal = 0;
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
		    !report_layout_owns(scan, ns ? ns : "", base) || idx >= REPORT_MAX_CHUNKS) {
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
