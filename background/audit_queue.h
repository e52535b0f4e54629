/*
 * audit_queue.h - the bounded queue between the admission handler
 * (producer, through the emit callback of its config that cmd/serve.c
 * wires to audit_queue_push) and the report writer of the background
 * reconciler (consumer): the admission results that the reporting matrix
 * sends to PolicyReports (view/view.h, view_audit_item).
 *
 * Threads: every function may be called from any thread.
 */
#ifndef GV_BACKGROUND_AUDIT_QUEUE_H
#define GV_BACKGROUND_AUDIT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/gv.h"
#include "common/metrics.h"
#include "view/view.h"

/* What push does when the queue is full. */
enum audit_queue_full {
	AUDIT_QUEUE_DROP_OLDEST, /* the oldest item is freed and counted as dropped */
	AUDIT_QUEUE_REJECT,	 /* the new item is freed and counted as rejected */
};

struct audit_queue;

/*
 * A FIFO of at most capacity items (capacity 0 = 1024). Memory stays
 * bounded by capacity times the size of one request's results.
 */
struct audit_queue *audit_queue_new(size_t capacity, enum audit_queue_full when_full);

/* Frees the queue and every item still in it. No thread may use it any more. */
void audit_queue_free(struct audit_queue *q);

/*
 * Adds item (ownership moves to the queue, also when it is rejected: it is
 * then freed). Returns false when the item was rejected (REJECT policy, or
 * the queue is closed). Never blocks beyond the queue's mutex.
 */
bool audit_queue_push(struct audit_queue *q, struct view_audit_item *item);

/*
 * The report writer's side: moves up to max items (oldest first) into
 * out[] and returns how many; ownership of each moves to the caller, who
 * frees it with view_audit_item_free(). Waits up to timeout_ms
 * (0 = do not wait, <0 = until an item arrives or the queue is closed)
 * when the queue is empty. Returns 0 on timeout, and 0 right away once
 * the queue is closed and empty.
 */
size_t audit_queue_drain(struct audit_queue *q, struct view_audit_item **out, size_t max,
			 int timeout_ms);

/* Wakes every drainer; later pushes are rejected. Items already queued can still be drained. */
void audit_queue_close(struct audit_queue *q);

struct audit_queue_stats {
	size_t depth, capacity;
	uint64_t pushed;   /* items accepted */
	uint64_t dropped;  /* oldest items freed to make room (DROP_OLDEST) */
	uint64_t rejected; /* new items refused (REJECT, or closed) */
};
void audit_queue_stats(struct audit_queue *q, struct audit_queue_stats *out);

/*
 * Registers the queue's figures in a metrics registry (rendered at scrape
 * time): gavel_admission_report_queue_depth (gauge),
 * gavel_admission_report_queue_dropped_total and
 * gavel_admission_report_queue_rejected_total (counters). The queue must
 * outlive the registry's use.
 */
void audit_queue_register_metrics(struct audit_queue *q, struct metrics_registry *r);

#endif
