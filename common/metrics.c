/*
 * metrics.c - the metrics registry: families of labelled series in sharded
 * hash tables, rendered in Prometheus' text format.
 */
#include "common/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/banned.h"

#define NSHARDS	 8
#define NBUCKETS 64

enum metrics_type { METRICS_COUNTER, METRICS_GAUGE, METRICS_HISTOGRAM };

struct series {
	struct series *next; /* in its hash chain */
	uint64_t hash;
	char *key; /* owned: the values, each followed by '\0' (metrics_key) */
	size_t keylen;
	char **values; /* owned array of nlabels pointers into key */
	double value;  /* counter, gauge */
	/* histogram: */
	uint64_t *counts; /* owned: per bucket (not cumulative), nbuckets + 1 (+Inf) */
	uint64_t count;
	double sum;
};

struct shard {
	pthread_mutex_t mu;
	struct series *chains[NBUCKETS];
};

struct metrics_family {
	struct metrics_family *next; /* registration order */
	struct metrics_registry *reg;
	enum metrics_type type;
	char *name, *help; /* owned */
	char **labels;	   /* owned */
	size_t nlabels;
	double *buckets; /* owned, histogram bounds */
	size_t nbuckets;
	struct shard shards[NSHARDS];
	atomic_size_t nseries;
};

struct collector {
	void (*fn)(void *ud, struct gv_buf *out);
	void *ud;
};

struct metrics_registry {
	pthread_mutex_t mu; /* families list and collectors */
	struct metrics_family *head, *tail;
	struct collector *collectors;
	size_t ncollectors;
	atomic_uint_fast64_t dropped; /* series refused past METRICS_MAX_SERIES */
};

struct metrics_registry *metrics_registry_new(void)
{
	struct metrics_registry *r = gv_xcalloc(1, sizeof(*r));

	pthread_mutex_init(&r->mu, NULL);
	atomic_init(&r->dropped, 0);
	return r;
}

static void series_free(struct series *s, size_t nlabels)
{
	free(s->key);
	free(s->values);
	free(s->counts);
	free(s);
}

static void family_free(struct metrics_family *f)
{
	for (size_t i = 0; i < NSHARDS; i++) {
		for (size_t b = 0; b < NBUCKETS; b++) {
			struct series *s = f->shards[i].chains[b], *next;
			for (; s; s = next) {
				next = s->next;
				series_free(s, f->nlabels);
			}
		}
		pthread_mutex_destroy(&f->shards[i].mu);
	}
	for (size_t i = 0; i < f->nlabels; i++)
		free(f->labels[i]);
	free(f->labels);
	free(f->buckets);
	free(f->name);
	free(f->help);
	free(f);
}

void metrics_registry_free(struct metrics_registry *r)
{
	struct metrics_family *f, *next;

	if (!r)
		return;
	for (f = r->head; f; f = next) {
		next = f->next;
		family_free(f);
	}
	free(r->collectors);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static size_t count_labels(const char *const *labels)
{
	size_t n = 0;

	while (labels && labels[n])
		n++;
	return n;
}

static bool same_shape(const struct metrics_family *f, enum metrics_type type,
		       const char *const *labels)
{
	size_t n = count_labels(labels);

	if (f->type != type || f->nlabels != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(f->labels[i], labels[i]))
			return false;
	return true;
}

static struct metrics_family *family_new(struct metrics_registry *r, enum metrics_type type,
					 const char *name, const char *help,
					 const char *const *labels, const double *buckets,
					 size_t nbuckets)
{
	struct metrics_family *f;
	size_t n = count_labels(labels);

	if (!r || !name || n > METRICS_MAX_LABELS)
		return NULL;
	pthread_mutex_lock(&r->mu);
	for (f = r->head; f; f = f->next) {
		if (strcmp(f->name, name))
			continue;
		pthread_mutex_unlock(&r->mu);
		return same_shape(f, type, labels) ? f : NULL;
	}
	f = gv_xcalloc(1, sizeof(*f));
	f->reg = r;
	f->type = type;
	f->name = gv_xstrdup(name);
	f->help = gv_xstrdup(help ? help : "");
	f->nlabels = n;
	f->labels = gv_xcalloc(n ? n : 1, sizeof(*f->labels));
	for (size_t i = 0; i < n; i++)
		f->labels[i] = gv_xstrdup(labels[i]);
	if (type == METRICS_HISTOGRAM) {
		f->nbuckets = nbuckets;
		f->buckets = gv_xcalloc(nbuckets ? nbuckets : 1, sizeof(*f->buckets));
		if (nbuckets)
			memcpy(f->buckets, buckets, nbuckets * sizeof(*buckets));
	}
	for (size_t i = 0; i < NSHARDS; i++)
		pthread_mutex_init(&f->shards[i].mu, NULL);
	atomic_init(&f->nseries, 0);
	if (r->tail)
		r->tail->next = f;
	else
		r->head = f;
	r->tail = f;
	pthread_mutex_unlock(&r->mu);
	return f;
}

struct metrics_family *metrics_counter_new(struct metrics_registry *r, const char *name,
					   const char *help, const char *const *labels)
{
	return family_new(r, METRICS_COUNTER, name, help, labels, NULL, 0);
}

struct metrics_family *metrics_gauge_new(struct metrics_registry *r, const char *name,
					 const char *help, const char *const *labels)
{
	return family_new(r, METRICS_GAUGE, name, help, labels, NULL, 0);
}

struct metrics_family *metrics_histogram_new(struct metrics_registry *r, const char *name,
					     const char *help, const char *const *labels,
					     const double *buckets, size_t nbuckets)
{
	return family_new(r, METRICS_HISTOGRAM, name, help, labels, buckets, nbuckets);
}

static const char *val(const char *const *values, size_t i)
{
	return values && values[i] ? values[i] : "";
}

void metrics_key_make(const struct metrics_family *f, const char *const *values,
		      struct metrics_key *k)
{
	size_t n = f ? f->nlabels : 0, len = 0, vn[METRICS_MAX_LABELS];
	char *d;

	for (size_t i = 0; i < n; i++) {
		vn[i] = strlen(val(values, i)) + 1;
		len += vn[i];
	}
	k->nvalues = n;
	k->len = len;
	k->text = len <= sizeof(k->small) ? k->small : gv_xmalloc(len);
	d = k->text;
	for (size_t i = 0; i < n; i++) {
		memcpy(d, val(values, i), vn[i]);
		d += vn[i];
	}
	/* a value holds no '\0', so ("a","") and ("","a") differ */
	k->hash = gv_hash_words(k->text, len, GV_FNV1A64_OFFSET);
	k->hash ^= k->hash >> 32; /* the shard and bucket come from the low bits */
}

void metrics_key_release(struct metrics_key *k)
{
	if (k->text != k->small)
		free(k->text);
	k->text = k->small;
	k->len = 0;
}

/*
 * Finds or creates the series of k in its shard, with the shard locked on
 * return (NULL, unlocked, when the family is full or k is of another
 * number of labels).
 */
static struct series *series_lock(struct metrics_family *f, const struct metrics_key *k,
				  struct shard **shp)
{
	struct shard *sh = &f->shards[k->hash % NSHARDS];
	struct series **chain = &sh->chains[(k->hash / NSHARDS) % NBUCKETS];
	struct series *s;
	char *p;

	if (k->nvalues != f->nlabels)
		return NULL;
	pthread_mutex_lock(&sh->mu);
	for (s = *chain; s; s = s->next)
		if (s->hash == k->hash && s->keylen == k->len && !memcmp(s->key, k->text, k->len)) {
			*shp = sh;
			return s;
		}
	if (atomic_fetch_add(&f->nseries, 1) >= METRICS_MAX_SERIES) {
		atomic_fetch_sub(&f->nseries, 1);
		pthread_mutex_unlock(&sh->mu);
		atomic_fetch_add(&f->reg->dropped, 1);
		return NULL;
	}
	s = gv_xcalloc(1, sizeof(*s));
	s->hash = k->hash;
	s->key = gv_xmalloc(k->len ? k->len : 1);
	memcpy(s->key, k->text, k->len);
	s->keylen = k->len;
	s->values = gv_xcalloc(f->nlabels ? f->nlabels : 1, sizeof(*s->values));
	p = s->key;
	for (size_t i = 0; i < f->nlabels; i++) {
		s->values[i] = p;
		p += strlen(p) + 1;
	}
	if (f->type == METRICS_HISTOGRAM)
		s->counts = gv_xcalloc(f->nbuckets + 1, sizeof(*s->counts));
	s->next = *chain;
	*chain = s;
	*shp = sh;
	return s;
}

void metrics_add_key(struct metrics_family *f, const struct metrics_key *k, double v)
{
	struct shard *sh;
	struct series *s;

	if (!f || f->type == METRICS_HISTOGRAM)
		return;
	s = series_lock(f, k, &sh);
	if (!s)
		return;
	s->value += v;
	pthread_mutex_unlock(&sh->mu);
}

void metrics_add(struct metrics_family *f, const char *const *values, double v)
{
	struct metrics_key k;

	if (!f)
		return;
	metrics_key_make(f, values, &k);
	metrics_add_key(f, &k, v);
	metrics_key_release(&k);
}

void metrics_inc(struct metrics_family *f, const char *const *values)
{
	metrics_add(f, values, 1);
}

void metrics_set(struct metrics_family *f, const char *const *values, double v)
{
	struct metrics_key k;
	struct shard *sh;
	struct series *s;

	if (!f || f->type != METRICS_GAUGE)
		return;
	metrics_key_make(f, values, &k);
	s = series_lock(f, &k, &sh);
	metrics_key_release(&k);
	if (!s)
		return;
	s->value = v;
	pthread_mutex_unlock(&sh->mu);
}

void metrics_observe_key(struct metrics_family *f, const struct metrics_key *k, double v)
{
	struct shard *sh;
	struct series *s;
	size_t b;

	if (!f || f->type != METRICS_HISTOGRAM)
		return;
	for (b = 0; b < f->nbuckets && v > f->buckets[b]; b++)
		;
	s = series_lock(f, k, &sh);
	if (!s)
		return;
	s->counts[b]++;
	s->count++;
	s->sum += v;
	pthread_mutex_unlock(&sh->mu);
}

void metrics_observe(struct metrics_family *f, const char *const *values, double v)
{
	struct metrics_key k;

	if (!f)
		return;
	metrics_key_make(f, values, &k);
	metrics_observe_key(f, &k, v);
	metrics_key_release(&k);
}

void metrics_registry_add_collector(struct metrics_registry *r,
				    void (*fn)(void *ud, struct gv_buf *out), void *ud)
{
	pthread_mutex_lock(&r->mu);
	r->collectors = gv_xrealloc(r->collectors, (r->ncollectors + 1) * sizeof(*r->collectors));
	r->collectors[r->ncollectors].fn = fn;
	r->collectors[r->ncollectors].ud = ud;
	r->ncollectors++;
	pthread_mutex_unlock(&r->mu);
}

void metrics_format_value(struct gv_buf *out, double v)
{
	char buf[64];

	if (isnan(v)) {
		gv_buf_adds(out, "NaN");
		return;
	}
	if (isinf(v)) {
		gv_buf_adds(out, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == floor(v) && fabs(v) < 1e15) {
		gv_buf_addf(out, "%.0f", v);
		return;
	}
	/* Shortest of %.15g / %.17g that reads back as the same double. */
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	gv_buf_adds(out, buf);
}

static void add_escaped(struct gv_buf *out, const char *s, bool label)
{
	for (; *s; s++) {
		if (*s == '\\')
			gv_buf_adds(out, "\\\\");
		else if (*s == '\n')
			gv_buf_adds(out, "\\n");
		else if (*s == '"' && label)
			gv_buf_adds(out, "\\\"");
		else
			gv_buf_addc(out, *s);
	}
}

/* Writes {l1="v1",...[,extra_name="extra"]}; nothing when there are no labels. */
static void add_labels(struct gv_buf *out, const struct metrics_family *f, const struct series *s,
		       const char *extra_name, const char *extra)
{
	bool first = true;

	if (!f->nlabels && !extra_name)
		return;
	gv_buf_addc(out, '{');
	for (size_t i = 0; i < f->nlabels; i++) {
		if (!first)
			gv_buf_addc(out, ',');
		first = false;
		gv_buf_adds(out, f->labels[i]);
		gv_buf_adds(out, "=\"");
		add_escaped(out, s->values[i], true);
		gv_buf_addc(out, '"');
	}
	if (extra_name) {
		if (!first)
			gv_buf_addc(out, ',');
		gv_buf_addf(out, "%s=\"%s\"", extra_name, extra);
	}
	gv_buf_addc(out, '}');
}

static int cmp_series(const void *a, const void *b, void *ud)
{
	const struct series *x = *(const struct series *const *)a;
	const struct series *y = *(const struct series *const *)b;
	size_t nlabels = *(const size_t *)ud;

	for (size_t i = 0; i < nlabels; i++) {
		int c = strcmp(x->values[i], y->values[i]);
		if (c)
			return c;
	}
	return 0;
}

static void render_family(struct metrics_family *f, struct gv_buf *out)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};
	struct series **all = NULL;
	size_t n = 0, cap = 0;

	gv_buf_addf(out, "# HELP %s ", f->name);
	add_escaped(out, f->help, false);
	gv_buf_addf(out, "\n# TYPE %s %s\n", f->name, types[f->type]);
	for (size_t i = 0; i < NSHARDS; i++)
		pthread_mutex_lock(&f->shards[i].mu);
	for (size_t i = 0; i < NSHARDS; i++)
		for (size_t b = 0; b < NBUCKETS; b++)
			for (struct series *s = f->shards[i].chains[b]; s; s = s->next) {
				if (n == cap) {
					cap = cap ? cap * 2 : 64;
					all = gv_xrealloc(all, cap * sizeof(*all));
				}
				all[n++] = s;
			}
	if (n > 1)
		qsort_r(all, n, sizeof(*all), cmp_series, &f->nlabels);
	for (size_t k = 0; k < n; k++) {
		const struct series *s = all[k];
		if (f->type != METRICS_HISTOGRAM) {
			gv_buf_adds(out, f->name);
			add_labels(out, f, s, NULL, NULL);
			gv_buf_addc(out, ' ');
			metrics_format_value(out, s->value);
			gv_buf_addc(out, '\n');
			continue;
		}
		uint64_t cum = 0;
		for (size_t b = 0; b <= f->nbuckets; b++) {
			struct gv_buf le = {0};
			cum += s->counts[b];
			if (b < f->nbuckets)
				metrics_format_value(&le, f->buckets[b]);
			else
				gv_buf_adds(&le, "+Inf");
			gv_buf_addf(out, "%s_bucket", f->name);
			add_labels(out, f, s, "le", gv_buf_str(&le));
			gv_buf_addf(out, " %llu\n", (unsigned long long)cum);
			gv_buf_release(&le);
		}
		gv_buf_addf(out, "%s_sum", f->name);
		add_labels(out, f, s, NULL, NULL);
		gv_buf_addc(out, ' ');
		metrics_format_value(out, s->sum);
		gv_buf_addf(out, "\n%s_count", f->name);
		add_labels(out, f, s, NULL, NULL);
		gv_buf_addf(out, " %llu\n", (unsigned long long)s->count);
	}
	for (size_t i = NSHARDS; i-- > 0;)
		pthread_mutex_unlock(&f->shards[i].mu);
	free(all);
}

void metrics_render(struct metrics_registry *r, struct gv_buf *out)
{
	struct collector *cs;
	size_t ncs;

	pthread_mutex_lock(&r->mu);
	for (struct metrics_family *f = r->head; f; f = f->next)
		render_family(f, out);
	ncs = r->ncollectors;
	cs = gv_xcalloc(ncs ? ncs : 1, sizeof(*cs));
	if (ncs)
		memcpy(cs, r->collectors, ncs * sizeof(*cs));
	pthread_mutex_unlock(&r->mu);
	gv_buf_adds(out,
		    "# HELP gavel_metrics_series_dropped_total Metric updates dropped because a "
		    "family reached its series limit.\n"
		    "# TYPE gavel_metrics_series_dropped_total counter\n"
		    "gavel_metrics_series_dropped_total ");
	gv_buf_addf(out, "%llu\n", (unsigned long long)atomic_load(&r->dropped));
	for (size_t i = 0; i < ncs; i++)
		cs[i].fn(cs[i].ud, out);
	free(cs);
}
