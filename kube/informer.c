/*
 * informer.c - the watch event splitter and informers (list, then watch,
 * on a thread of their own).
 */
#include "kube/kube.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>

#include "common/log.h"
#include "kube/kube_int.h"
#include "common/banned.h"

#define INFORMER_PAGE	      500
#define INFORMER_HEALTHY_S    2	    /* a watch open this long (or with events) had worked */
#define INFORMER_LIST_MAX_MS  30000 /* backoff cap between failed lists */
#define INFORMER_WATCH_MAX_MS 5000  /* and between failed watches: back soon after an outage */

/* ---- event stream ---- */

static enum gv_code emit(struct kube_stream *s, struct gv_err *err)
{
	json_error_t jerr;
	json_t *ev = json_loadb(s->buf.data, s->buf.len, 0, &jerr);
	const char *type;
	enum gv_code rc = GV_OK;

	if (!ev) {
		rc = gv_err_set(err, GV_EINVAL, "watch stream: bad JSON: %s", jerr.text);
		goto out;
	}
	type = json_string_value(json_object_get(ev, "type"));
	if (!type || !json_is_object(json_object_get(ev, "object"))) {
		rc = gv_err_set(err, GV_EINVAL, "watch stream: not an event (no type or object)");
		goto out;
	}
	s->events++;
	if (s->on_event && !s->on_event(type, json_object_get(ev, "object"), s->ud))
		s->stopped = true;
out:
	json_decref(ev);
	gv_buf_reset(&s->buf);
	return rc;
}

enum gv_code kube_stream_feed(struct kube_stream *s, const char *p, size_t n, struct gv_err *err)
{
	size_t max = s->max ? s->max : KUBE_MAX_EVENT;
	size_t i = 0, start;
	enum gv_code rc;

	while (i < n && !s->stopped) {
		if (s->depth == 0) {
			char ch = p[i];

			if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') {
				i++;
				continue;
			}
			if (ch != '{')
				return gv_err_set(err, GV_EINVAL,
						  "watch stream: expected '{', got 0x%02x",
						  (unsigned char)ch);
		}
		/* Inside (or at the start of) an event: scan to its end or the chunk's. */
		start = i;
		for (; i < n; i++) {
			char ch = p[i];

			if (s->in_str) {
				if (s->esc)
					s->esc = false;
				else if (ch == '\\')
					s->esc = true;
				else if (ch == '"')
					s->in_str = false;
				continue;
			}
			if (ch == '"') {
				s->in_str = true;
			} else if (ch == '{' || ch == '[') {
				s->depth++;
			} else if (ch == '}' || ch == ']') {
				if (--s->depth == 0) {
					i++;
					break;
				}
			}
		}
		if (s->buf.len + (i - start) > max)
			return gv_err_set(err, GV_ELIMIT,
					  "watch stream: event larger than %zu bytes", max);
		gv_buf_add(&s->buf, p + start, i - start);
		if (s->depth == 0 && (rc = emit(s, err)))
			return rc;
	}
	return GV_OK;
}

void kube_stream_release(struct kube_stream *s)
{
	gv_buf_release(&s->buf);
	s->depth = 0;
	s->in_str = s->esc = false;
}

/* ---- informer ---- */

struct kube_informer {
	struct kube_client *c; /* borrowed */
	char *path;	       /* owned: collection path, maybe with a query */
	void (*on_change)(void *ud);
	void *ud;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool synced;
	pthread_mutex_t mu; /* objects */
	json_t *objects;    /* owned: "ns/name" -> object */
	/* informer thread only */
	CURL *watch_curl; /* owned: the watch's own handle, so that on_change may use the client */
	char *rv;	  /* owned: resume point */
	bool changed;
	bool relist;
	bool watch_error;
	bool watch_worked; /* the last watch delivered events or stayed open a while */
	char why[256];
};

/* "namespace/name" or "name"; NULL when the object has no name. Caller frees. */
static char *object_key(const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *name = json_string_value(json_object_get(md, "name"));

	if (!name)
		return NULL;
	return ns && *ns ? gv_xasprintf("%s/%s", ns, name) : gv_xstrdup(name);
}

static void set_rv(struct kube_informer *inf, const json_t *obj)
{
	const char *rv =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

	if (rv && *rv) {
		free(inf->rv);
		inf->rv = gv_xstrdup(rv);
	}
}

static int list_item(const json_t *item, void *ud)
{
	json_t *map = ud;
	char *key = object_key(item);

	if (key)
		json_object_set(map, key, (json_t *)item);
	free(key);
	return 0;
}

/* Lists the collection and replaces the objects. */
static enum gv_code do_list(struct kube_informer *inf)
{
	struct gv_err err = {0};
	json_t *map = json_object(), *old;
	char *rv = NULL;
	enum gv_code rc;

	rc = kube_list_abortable(inf->c, inf->path, INFORMER_PAGE, list_item, map, &rv, &inf->stop,
				 &err);
	if (rc) {
		json_decref(map);
		free(rv);
		if (!atomic_load(&inf->stop))
			gv_warn("kube: informer %s: list: %s", inf->path, err.msg);
		return rc;
	}
	pthread_mutex_lock(&inf->mu);
	old = inf->objects;
	inf->objects = map;
	pthread_mutex_unlock(&inf->mu);
	json_decref(old);
	free(inf->rv);
	inf->rv = rv;
	atomic_store(&inf->synced, true);
	gv_debug("kube: informer %s: listed %zu objects at %s", inf->path, json_object_size(map),
		 rv ? rv : "?");
	if (inf->on_change)
		inf->on_change(inf->ud);
	return GV_OK;
}

static bool on_event(const char *type, json_t *obj, void *ud)
{
	struct kube_informer *inf = ud;
	char *key;

	if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
		if (!(key = object_key(obj)))
			return true;
		pthread_mutex_lock(&inf->mu);
		if (type[0] == 'D')
			json_object_del(inf->objects, key);
		else
			json_object_set(inf->objects, key, obj);
		pthread_mutex_unlock(&inf->mu);
		free(key);
		set_rv(inf, obj);
		inf->changed = true;
		return true;
	}
	if (!strcmp(type, "BOOKMARK")) {
		set_rv(inf, obj);
		return true;
	}
	if (!strcmp(type, "ERROR")) {
		json_int_t code = json_integer_value(json_object_get(obj, "code"));
		const char *msg = json_string_value(json_object_get(obj, "message"));

		if (code == 410) {
			inf->relist = true;
		} else {
			inf->watch_error = true;
			snprintf(inf->why, sizeof(inf->why), "ERROR event %lld: %s",
				 (long long)code, msg ? msg : "");
		}
		return false;
	}
	gv_debug("kube: informer %s: ignoring %s event", inf->path, type);
	return true;
}

struct watch_ctx {
	struct kube_informer *inf;
	struct kube_stream stream;
	bool bad;
};

static bool on_watch_data(const char *p, size_t n, void *ud)
{
	struct watch_ctx *w = ud;
	struct kube_informer *inf = w->inf;
	struct gv_err err = {0};

	if (kube_stream_feed(&w->stream, p, n, &err)) {
		w->bad = true;
		snprintf(inf->why, sizeof(inf->why), "%s", err.msg);
		return false;
	}
	if (inf->changed) {
		inf->changed = false;
		if (inf->on_change)
			inf->on_change(inf->ud);
	}
	return !w->stream.stopped && !atomic_load(&inf->stop);
}

enum watch_end { WATCH_CLEAN, WATCH_IDLE, WATCH_GONE, WATCH_FAILED, WATCH_STOPPED };

static enum watch_end do_watch(struct kube_informer *inf)
{
	struct watch_ctx w = {.inf = inf};
	struct kube_status st;
	struct gv_err err = {0};
	struct gv_buf path = {0};
	struct kube_req req = {0};
	struct timespec t0, t1;
	enum gv_code rc;
	int ws = inf->c->watch_s;

	w.stream.on_event = on_event;
	w.stream.ud = inf;
	inf->relist = inf->watch_error = false;
	inf->why[0] = '\0';
	gv_buf_addf(&path, "%s%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%d", inf->path,
		    strchr(inf->path, '?') ? "&" : "?", ws);
	if (inf->rv) {
		char *e = kube_escape(inf->rv);

		gv_buf_addf(&path, "&resourceVersion=%s", e);
		free(e);
	}
	req.method = "GET";
	req.path = gv_buf_str(&path);
	req.abort = &inf->stop;
	req.on_data = on_watch_data;
	req.ud = &w;
	req.curl = inf->watch_curl;
	req.timeout_ms = (ws + 30) * 1000L;
	req.retries = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = kube_do(inf->c, &req, NULL, &st, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	inf->watch_worked = w.stream.events > 0 || t1.tv_sec - t0.tv_sec >= INFORMER_HEALTHY_S;
	kube_stream_release(&w.stream);
	gv_buf_release(&path);
	if (atomic_load(&inf->stop))
		return WATCH_STOPPED;
	if (inf->relist || (rc && st.http == 410)) {
		gv_debug("kube: informer %s: resourceVersion too old, relisting", inf->path);
		return WATCH_GONE;
	}
	if (rc) {
		gv_warn("kube: informer %s: watch: %s", inf->path, err.msg);
		return WATCH_FAILED;
	}
	if (w.bad || inf->watch_error) {
		gv_warn("kube: informer %s: watch: %s", inf->path, inf->why);
		return WATCH_FAILED;
	}
	/* A watch the server ends at once with nothing: back off rather than spin. */
	if (!w.stream.events && t1.tv_sec - t0.tv_sec < 1)
		return WATCH_IDLE;
	return WATCH_CLEAN;
}

static void *informer_main(void *arg)
{
	struct kube_informer *inf = arg;
	unsigned failures = 0, watch_failures = 0;
	bool need_list = true;
	enum watch_end end;

	/*
	 * on_change runs inside the watch's write callback; a callback must not
	 * reuse its own transfer's handle, so the watch gets a handle of its own
	 * and on_change may call kube_request (the thread's handle) freely.
	 */
	if (!(inf->watch_curl = curl_easy_init()))
		abort();

	while (!atomic_load(&inf->stop)) {
		if (need_list) {
			if (do_list(inf)) {
				failures++;
				kube_sleep(kube_backoff_ms(failures, inf->c->base_ms,
							   INFORMER_LIST_MAX_MS),
					   &inf->stop);
				continue;
			}
			failures = 0;
			watch_failures = 0;
			need_list = false;
		}
		end = do_watch(inf);
		switch (end) {
		case WATCH_STOPPED:
			break;
		case WATCH_GONE:
			need_list = true;
			break;
		case WATCH_CLEAN:
			watch_failures = 0;
			break;
		case WATCH_IDLE:
		case WATCH_FAILED:
			/*
			 * A watch that had worked and then broke (a cut connection,
			 * an API server restarted) is a first failure: reconnect
			 * soon rather than after the backoff earlier failures built.
			 */
			if (end == WATCH_FAILED && inf->watch_worked)
				watch_failures = 0;
			watch_failures++;
			kube_sleep(
			    kube_backoff_ms(watch_failures, inf->c->base_ms, INFORMER_WATCH_MAX_MS),
			    &inf->stop);
			break;
		}
	}
	curl_easy_cleanup(inf->watch_curl);
	inf->watch_curl = NULL;
	return NULL;
}

struct kube_informer *kube_informer_start(struct kube_client *c, const char *path,
					  void (*on_change)(void *ud), void *ud)
{
	struct kube_informer *inf = gv_xcalloc(1, sizeof(*inf));

	inf->c = c;
	inf->path = gv_xstrdup(path);
	inf->on_change = on_change;
	inf->ud = ud;
	inf->objects = json_object();
	atomic_init(&inf->stop, false);
	atomic_init(&inf->synced, false);
	pthread_mutex_init(&inf->mu, NULL);
	if (pthread_create(&inf->thread, NULL, informer_main, inf)) {
		gv_error("kube: informer %s: cannot create a thread", path);
		pthread_mutex_destroy(&inf->mu);
		json_decref(inf->objects);
		free(inf->path);
		free(inf);
		return NULL;
	}
	return inf;
}

bool kube_informer_synced(const struct kube_informer *inf)
{
	return atomic_load(&inf->synced);
}

bool kube_informer_wait_synced(struct kube_informer *inf, long timeout_ms)
{
	while (!atomic_load(&inf->synced) && timeout_ms > 0) {
		kube_sleep(timeout_ms < 20 ? timeout_ms : 20, NULL);
		timeout_ms -= 20;
	}
	return atomic_load(&inf->synced);
}

json_t *kube_informer_list(struct kube_informer *inf)
{
	json_t *arr = json_array(), *v;
	const char **keys;
	const char *k;
	size_t n = 0, i;

	pthread_mutex_lock(&inf->mu);
	keys = gv_xcalloc(json_object_size(inf->objects) + 1, sizeof(*keys));
	json_object_foreach(inf->objects, k, v) keys[n++] = k;
	qsort(keys, n, sizeof(*keys), gv_strptr_cmp);
	for (i = 0; i < n; i++)
		json_array_append(arr, json_object_get(inf->objects, keys[i]));
	pthread_mutex_unlock(&inf->mu);
	free(keys);
	return arr;
}

json_t *kube_informer_get(struct kube_informer *inf, const char *ns, const char *name)
{
	char *key = ns && *ns ? gv_xasprintf("%s/%s", ns, name) : gv_xstrdup(name);
	json_t *v;

	pthread_mutex_lock(&inf->mu);
	v = json_incref(json_object_get(inf->objects, key));
	pthread_mutex_unlock(&inf->mu);
	free(key);
	return v;
}

void kube_informer_stop(struct kube_informer *inf)
{
	if (!inf)
		return;
	atomic_store(&inf->stop, true);
	pthread_join(inf->thread, NULL);
	pthread_mutex_destroy(&inf->mu);
	json_decref(inf->objects);
	free(inf->rv);
	free(inf->path);
	free(inf);
}
