/*
 * events.c - the Event recorder: a bounded queue drained by one thread,
 * a token bucket between POSTs.
 */
#include "kube/events.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/banned.h"

static const char *const reason_names[KUBE_EVENT_REASON_COUNT] = {"PolicyViolation", "PolicyError",
								  "PolicyApplied", "PolicySkipped"};

const char *kube_event_reason_name(enum kube_event_reason r)
{
	return r < KUBE_EVENT_REASON_COUNT ? reason_names[r] : "?";
}

bool kube_events_parse_omit(const char *list, unsigned *mask, struct gv_err *err)
{
	const char *p = list ? list : "";

	*mask = 0;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		bool found = false;
		for (size_t r = 0; r < KUBE_EVENT_REASON_COUNT; r++)
			if (strlen(reason_names[r]) == n && !strncmp(p, reason_names[r], n)) {
				*mask |= 1u << r;
				found = true;
			}
		if (!found && n) {
			gv_err_set(err, GV_EINVAL,
				   "unknown event \"%.*s\" (want PolicyViolation, PolicyError, "
				   "PolicyApplied, PolicySkipped)",
				   (int)n, p);
			return false;
		}
		p += n + (comma ? 1 : 0);
	}
	return true;
}

struct kube_events {
	struct kube_client *client; /* borrowed */
	char host[128];
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	json_t *queue; /* guarded by mu: Events waiting */
	atomic_uint omit;
	atomic_uint_fast64_t dropped, written;
};

static void now_text(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

bool kube_events_emit(struct kube_events *ev, const struct kube_event_object *about,
		      enum kube_event_reason reason, const char *source, const char *action,
		      const char *message)
{
	const char *ns = about->namespace && *about->namespace ? about->namespace : "default";
	char ts[32], msg[EVENTS_MESSAGE_MAX + 1];
	json_t *e, *inv;
	bool queued = false;

	if (!ev || reason >= KUBE_EVENT_REASON_COUNT || (atomic_load(&ev->omit) & (1u << reason)))
		return false;
	snprintf(msg, sizeof(msg), "%s", message ? message : "");
	now_text(ts, sizeof(ts));
	inv = json_pack("{s:s, s:s, s:s}", "apiVersion",
			about->api_version ? about->api_version : "", "kind",
			about->kind ? about->kind : "", "name", about->name ? about->name : "");
	if (about->namespace && *about->namespace)
		json_object_set_new(inv, "namespace", json_string(about->namespace));
	if (about->uid && *about->uid)
		json_object_set_new(inv, "uid", json_string(about->uid));
	e = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:s, s:s, "
		      "s:i}",
		      "apiVersion", "v1", "kind", "Event", "metadata", "generateName",
		      about->name && *about->name ? about->name : "gavel", "namespace", ns,
		      "involvedObject", inv, "type",
		      reason == KUBE_EVENT_POLICY_VIOLATION || reason == KUBE_EVENT_POLICY_ERROR
			  ? "Warning"
			  : "Normal",
		      "reason", reason_names[reason], "message", msg, "source", "component", source,
		      "reportingComponent", source, "reportingInstance", ev->host, "firstTimestamp",
		      ts, "lastTimestamp", ts, "count", 1);
	{
		/* generateName wants a trailing '.' and the name part within 253. */
		const char *gn = json_string_value(
		    json_object_get(json_object_get(e, "metadata"), "generateName"));
		char *g = gv_xasprintf("%.200s.", gn);
		json_object_set_new(json_object_get(e, "metadata"), "generateName", json_string(g));
		free(g);
	}
	if (action)
		json_object_set_new(e, "action", json_string(action));
	pthread_mutex_lock(&ev->mu);
	if (json_array_size(ev->queue) < EVENTS_QUEUE_MAX) {
		json_array_append(ev->queue, e);
		pthread_cond_signal(&ev->cv);
		queued = true;
	}
	pthread_mutex_unlock(&ev->mu);
	if (!queued)
		atomic_fetch_add(&ev->dropped, 1);
	json_decref(e);
	return queued;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *thread_main(void *ud)
{
	struct kube_events *ev = ud;
	double tokens = EVENTS_BURST, last = mono();

	pthread_mutex_lock(&ev->mu);
	while (!ev->stop) {
		json_t *e;
		char *path;
		struct gv_err err = {0};
		double now;

		if (!json_array_size(ev->queue)) {
			pthread_cond_wait(&ev->cv, &ev->mu);
			continue;
		}
		now = mono();
		tokens += (now - last) * EVENTS_RATE_PER_S;
		if (tokens > EVENTS_BURST)
			tokens = EVENTS_BURST;
		last = now;
		if (tokens < 1) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 1000000000L / EVENTS_RATE_PER_S;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&ev->cv, &ev->mu, &ts);
			continue;
		}
		tokens -= 1;
		e = json_incref(json_array_get(ev->queue, 0));
		json_array_remove(ev->queue, 0);
		pthread_mutex_unlock(&ev->mu);
		{
			char *ns = kube_escape(json_string_value(
			    json_object_get(json_object_get(e, "metadata"), "namespace")));
			path = gv_xasprintf("/api/v1/namespaces/%s/events", ns);
			free(ns);
		}
		if (kube_request(ev->client, "POST", path, e, NULL, NULL, &err))
			gv_debug("events: not written: %s", err.msg);
		else
			atomic_fetch_add(&ev->written, 1);
		free(path);
		json_decref(e);
		pthread_mutex_lock(&ev->mu);
	}
	pthread_mutex_unlock(&ev->mu);
	return NULL;
}

struct kube_events *kube_events_start(struct kube_client *c, unsigned omit)
{
	struct kube_events *ev = gv_xcalloc(1, sizeof(*ev));

	ev->client = c;
	if (gethostname(ev->host, sizeof(ev->host) - 1) || !ev->host[0])
		snprintf(ev->host, sizeof(ev->host), "gavel");
	ev->queue = json_array();
	atomic_init(&ev->omit, omit);
	atomic_init(&ev->dropped, 0);
	atomic_init(&ev->written, 0);
	pthread_mutex_init(&ev->mu, NULL);
	pthread_cond_init(&ev->cv, NULL);
	if (pthread_create(&ev->thread, NULL, thread_main, ev)) {
		pthread_mutex_destroy(&ev->mu);
		pthread_cond_destroy(&ev->cv);
		json_decref(ev->queue);
		free(ev);
		return NULL;
	}
	return ev;
}

void kube_events_stop(struct kube_events *ev)
{
	if (!ev)
		return;
	pthread_mutex_lock(&ev->mu);
	ev->stop = true;
	pthread_cond_signal(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
	pthread_join(ev->thread, NULL);
	pthread_mutex_destroy(&ev->mu);
	pthread_cond_destroy(&ev->cv);
	json_decref(ev->queue);
	free(ev);
}

void kube_events_set_omit(struct kube_events *ev, unsigned omit)
{
	if (ev)
		atomic_store(&ev->omit, omit);
}

uint64_t kube_events_dropped(const struct kube_events *ev)
{
	return ev ? atomic_load(&((struct kube_events *)ev)->dropped) : 0;
}

uint64_t kube_events_written(const struct kube_events *ev)
{
	return ev ? atomic_load(&((struct kube_events *)ev)->written) : 0;
}
