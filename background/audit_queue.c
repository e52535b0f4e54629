/*
 * audit_queue.c - the bounded queue between the admission handler (producer) and
 * the report writer of the background reconciler (consumer): a ring of
 * item pointers under one mutex, with a condition variable for drainers.
 */
#include "background/audit_queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/banned.h"

struct audit_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct view_audit_item **ring; /* owned items */
	size_t cap, head, len;
	enum audit_queue_full when_full;
	bool closed;
	uint64_t pushed, dropped, rejected;
};

struct audit_queue *audit_queue_new(size_t capacity, enum audit_queue_full when_full)
{
	struct audit_queue *q = gv_xcalloc(1, sizeof(*q));
	pthread_condattr_t ca;

	q->cap = capacity ? capacity : 1024;
	q->ring = gv_xcalloc(q->cap, sizeof(*q->ring));
	q->when_full = when_full;
	pthread_mutex_init(&q->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cv, &ca);
	pthread_condattr_destroy(&ca);
	return q;
}

void audit_queue_free(struct audit_queue *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->len; i++)
		view_audit_item_free(q->ring[(q->head + i) % q->cap]);
	free(q->ring);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

bool audit_queue_push(struct audit_queue *q, struct view_audit_item *item)
{
	struct view_audit_item *victim = NULL;
	bool ok = true;

	pthread_mutex_lock(&q->mu);
	if (q->closed || (q->len == q->cap && q->when_full == AUDIT_QUEUE_REJECT)) {
		q->rejected++;
		victim = item;
		ok = false;
	} else {
		if (q->len == q->cap) {
			victim = q->ring[q->head];
			q->head = (q->head + 1) % q->cap;
			q->len--;
			q->dropped++;
		}
		q->ring[(q->head + q->len) % q->cap] = item;
		q->len++;
		q->pushed++;
		pthread_cond_signal(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	view_audit_item_free(victim); /* outside the lock */
	return ok;
}

size_t audit_queue_drain(struct audit_queue *q, struct view_audit_item **out, size_t max,
			 int timeout_ms)
{
	struct timespec deadline;
	size_t n = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (timeout_ms > 0) {
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&q->mu);
	while (!q->len && !q->closed && timeout_ms != 0) {
		int rc = timeout_ms < 0 ? pthread_cond_wait(&q->cv, &q->mu)
					: pthread_cond_timedwait(&q->cv, &q->mu, &deadline);
		if (rc == ETIMEDOUT)
			break;
	}
	while (n < max && q->len) {
		out[n++] = q->ring[q->head];
		q->ring[q->head] = NULL;
		q->head = (q->head + 1) % q->cap;
		q->len--;
	}
	pthread_mutex_unlock(&q->mu);
	return n;
}

void audit_queue_close(struct audit_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->closed = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

void audit_queue_stats(struct audit_queue *q, struct audit_queue_stats *out)
{
	pthread_mutex_lock(&q->mu);
	out->depth = q->len;
	out->capacity = q->cap;
	out->pushed = q->pushed;
	out->dropped = q->dropped;
	out->rejected = q->rejected;
	pthread_mutex_unlock(&q->mu);
}

static void collect(void *ud, struct gv_buf *out)
{
	struct audit_queue_stats st;

	audit_queue_stats(ud, &st);
	gv_buf_addf(out,
		    "# HELP gavel_admission_report_queue_depth Admission results waiting for the "
		    "report writer.\n"
		    "# TYPE gavel_admission_report_queue_depth gauge\n"
		    "gavel_admission_report_queue_depth %zu\n"
		    "# HELP gavel_admission_report_queue_dropped_total Queued admission results "
		    "dropped to make room (queue full).\n"
		    "# TYPE gavel_admission_report_queue_dropped_total counter\n"
		    "gavel_admission_report_queue_dropped_total %llu\n"
		    "# HELP gavel_admission_report_queue_rejected_total Admission results refused "
		    "(queue full or closed).\n"
		    "# TYPE gavel_admission_report_queue_rejected_total counter\n"
		    "gavel_admission_report_queue_rejected_total %llu\n",
		    st.depth, (unsigned long long)st.dropped, (unsigned long long)st.rejected);
}

void audit_queue_register_metrics(struct audit_queue *q, struct metrics_registry *r)
{
	if (q && r)
		metrics_registry_add_collector(r, collect, q);
}
