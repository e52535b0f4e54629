/*
 * metrics.h - a small Prometheus metrics registry: counters, gauges and
 * histograms with labels, rendered in the text exposition format 0.0.4
 * (GET /metrics).
 *
 * Usage: register each family once at start-up (not per request), keep the
 * returned pointer, then update series by label values:
 *
 *   static const char *const labels[] = {"policy_name", "rule_result", NULL};
 *   struct metrics_family *f = metrics_counter_new(reg, "x_total", "Help.", labels);
 *   metrics_inc(f, (const char *const[]){"p", "fail"});
 *
 * Thread-safe: updates take one of a few per-family locks chosen by the
 * hash of the label values, so concurrent requests rarely contend.
 * Bounded: a family holds at most METRICS_MAX_SERIES series; updates to
 * new series past that are dropped and counted in
 * gavel_metrics_series_dropped_total.
 *
 * Other modules (the background reconciler) register their own families in
 * the same registry, or a collector callback for figures they compute at
 * scrape time.
 */
#ifndef GV_COMMON_METRICS_H
#define GV_COMMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/gv.h"

#define METRICS_MAX_SERIES 10000
#define METRICS_MAX_LABELS 16

struct metrics_registry;
struct metrics_family;

struct metrics_registry *metrics_registry_new(void);
/* Frees the registry and every family (their pointers become invalid). */
void metrics_registry_free(struct metrics_registry *r);

/*
 * Registers a family. name and help are copied; labels is a
 * NULL-terminated list of label names (copied; NULL = no labels; at most
 * METRICS_MAX_LABELS). Registering a name that exists returns the existing
 * family when the type and label names agree, NULL otherwise. The family
 * lives as long as the registry.
 */
struct metrics_family *metrics_counter_new(struct metrics_registry *r, const char *name,
					   const char *help, const char *const *labels);
struct metrics_family *metrics_gauge_new(struct metrics_registry *r, const char *name,
					 const char *help, const char *const *labels);
/* buckets: nbuckets ascending upper bounds (copied); +Inf is implicit. */
struct metrics_family *metrics_histogram_new(struct metrics_registry *r, const char *name,
					     const char *help, const char *const *labels,
					     const double *buckets, size_t nbuckets);

/*
 * Updates the series with these label values (one per label name, in
 * order; NULL counts as ""; values are copied when the series is created).
 * f may be NULL (no-op), so optional metrics need no checks at call sites.
 */
void metrics_inc(struct metrics_family *f, const char *const *values); /* counter/gauge += 1 */
void metrics_add(struct metrics_family *f, const char *const *values, double v);     /* += v */
void metrics_set(struct metrics_family *f, const char *const *values, double v);     /* gauge = v */
void metrics_observe(struct metrics_family *f, const char *const *values, double v); /* histogram */

/*
 * The same for a caller that updates several families of the same number
 * of labels with the same values: the values are joined into a key once
 * (metrics_key_make: values as for metrics_add, one per label of f; f NULL
 * makes a key of no values) and the key given to each update. A key holds
 * a copy of the values and their hash; it is the caller's, on its stack
 * (values longer than small are copied to the heap: metrics_key_release
 * frees them, and must be called once per key made). An update with a key
 * made for a family of another number of labels, or with f NULL, changes
 * nothing.
 */
struct metrics_key {
	uint64_t hash;
	size_t len;	/* bytes of text: each value followed by '\0' */
	size_t nvalues; /* the family's number of labels */
	char *text;	/* small, or heap */
	char small[384];
};
void metrics_key_make(const struct metrics_family *f, const char *const *values,
		      struct metrics_key *k);
void metrics_key_release(struct metrics_key *k);
void metrics_add_key(struct metrics_family *f, const struct metrics_key *k, double v);
void metrics_observe_key(struct metrics_family *f, const struct metrics_key *k, double v);

/*
 * Adds a collector: at each render, fn appends complete exposition text
 * (# HELP, # TYPE and samples) to out. For figures read at scrape time
 * (queue depth, scan state). fn runs on the scraping thread.
 */
void metrics_registry_add_collector(struct metrics_registry *r,
				    void (*fn)(void *ud, struct gv_buf *out), void *ud);

/*
 * Appends every family (in registration order, series sorted by label
 * values) and then the collectors' text to out. Label values are escaped
 * (backslash, double quote, newline).
 */
void metrics_render(struct metrics_registry *r, struct gv_buf *out);

/* Formats a sample value as Prometheus does ("+Inf", integers without a fraction). */
void metrics_format_value(struct gv_buf *out, double v);

#endif
