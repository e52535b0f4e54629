/*
 * leader.c - Lease-based leader election (leader.h): client-go's
 * tryAcquireOrRenew on a thread of its own.
 */
#include "background/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/metrics.h"
#include "common/log.h"
#include "common/banned.h"

struct leader {
	char *ns, *name, *identity; /* owned */
	char *path, *coll;	    /* owned: the Lease and its collection */
	struct kube_client *client; /* owned unless borrowed_client */
	bool borrowed_client;	    /* cfg.client */
	long lease_ms, renew_ms, retry_ms;
	int lease_s;
	void (*on_start)(void *ud);
	void (*on_stop)(void *ud);
	void *ud;
	struct leader_clock clock;
	struct metrics_family *gauge; /* borrowed from the registry */
	atomic_bool leading;

	/* Elector state: the thread's (or leader_step's caller's) alone. */
	json_t *cached;	     /* owned: the Lease as we last wrote it */
	json_t *observed;    /* owned: spec as last seen */
	int64_t observed_ms; /* monotonic time when `observed` last changed */
	int64_t renewed_ms;  /* monotonic start of the last successful acquire/renew */
	bool other_valid;    /* the last attempt saw another holder whose lease runs */
	uint64_t rng;

	pthread_mutex_t mu; /* guards stop */
	pthread_cond_t cv;
	bool stop;
	bool started;
	pthread_t thread;
};

/* ---- clocks and times ---- */

static int64_t sys_monotonic_ms(void *ud)
{
	struct timespec ts;

	(void)ud;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t sys_wall_us(void *ud)
{
	struct timespec ts;

	(void)ud;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono(const struct leader *l)
{
	return l->clock.monotonic_ms(l->clock.ud);
}

static int64_t wall(const struct leader *l)
{
	return l->clock.wall_us(l->clock.ud);
}

const char *leader_format_time(int64_t us, char *buf, size_t n)
{
	time_t t = (time_t)(us / 1000000);
	long frac = (long)(us % 1000000);
	struct tm tm;

	if (frac < 0) {
		frac += 1000000;
		t--;
	}
	gmtime_r(&t, &tm);
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	return buf;
}

static bool digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

bool leader_parse_time(const char *s, int64_t *us)
{
	int Y, M, D, h, m, sec, oh = 0, om = 0;
	long frac = 0;
	const char *p;
	struct tm tm = {0};
	time_t t;

	if (!s || strlen(s) < 20 || !digits(s, 4, &Y) || s[4] != '-' || !digits(s + 5, 2, &M) ||
	    s[7] != '-' || !digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &m) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return false;
	p = s + 19;
	if (*p == '.') {
		int nd = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, nd++)
			if (nd < 6)
				frac = frac * 10 + (*p - '0');
		if (!nd)
			return false;
		for (; nd < 6; nd++)
			frac *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && digits(p + 1, 2, &oh) && p[3] == ':' &&
		   digits(p + 4, 2, &om)) {
		if (*p == '-') {
			oh = -oh;
			om = -om;
		}
		p += 6;
	} else {
		return false;
	}
	if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return false;
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	t = timegm(&tm);
	*us = ((int64_t)t - (int64_t)oh * 3600 - (int64_t)om * 60) * 1000000 + frac;
	return true;
}

/* ---- identity ---- */

static uint64_t random_u64(void)
{
	uint64_t v = 0;
	FILE *f = fopen("/dev/urandom", "rb");

	if (!f || fread(&v, sizeof(v), 1, f) != 1) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
	}
	if (f)
		fclose(f);
	return v;
}

char *leader_default_identity(void)
{
	const char *pod = getenv("POD_NAME");
	char host[256] = "";

	if (!pod || !*pod) {
		if (gethostname(host, sizeof(host) - 1))
			snprintf(host, sizeof(host), "gavel");
		pod = host;
	}
	return gv_xasprintf("%s_%ld_%08x", pod, (long)getpid(), (unsigned)(random_u64() >> 32));
}

/* ---- set-up ---- */

enum gv_code leader_new(const struct leader_config *cfg, struct leader **out, struct gv_err *err)
{
	struct leader *l;
	pthread_condattr_t ca;
	char *ens, *ename;
	long request_ms;

	*out = NULL;
	if (!cfg->kube && !cfg->client)
		return gv_err_set(err, GV_EINVAL, "leader election: no API server configured");
	l = gv_xcalloc(1, sizeof(*l));
	l->lease_ms = cfg->lease_duration_ms ? cfg->lease_duration_ms : LEADER_LEASE_DURATION_MS;
	l->renew_ms = cfg->renew_deadline_ms ? cfg->renew_deadline_ms : LEADER_RENEW_DEADLINE_MS;
	l->retry_ms = cfg->retry_period_ms ? cfg->retry_period_ms : LEADER_RETRY_PERIOD_MS;
	if (l->retry_ms <= 0 || l->lease_ms <= l->renew_ms ||
	    (double)l->renew_ms <= LEADER_JITTER * (double)l->retry_ms) {
		free(l);
		return gv_err_set(
		    err, GV_EINVAL,
		    "leader election: want lease duration (%ld ms) > renew deadline "
		    "(%ld ms) > %.1f x retry period (%ld ms)",
		    cfg->lease_duration_ms ? cfg->lease_duration_ms : LEADER_LEASE_DURATION_MS,
		    cfg->renew_deadline_ms ? cfg->renew_deadline_ms : LEADER_RENEW_DEADLINE_MS,
		    LEADER_JITTER,
		    cfg->retry_period_ms ? cfg->retry_period_ms : LEADER_RETRY_PERIOD_MS);
	}
	l->lease_s = (int)((l->lease_ms + 999) / 1000);
	request_ms =
	    l->renew_ms < l->lease_ms - l->renew_ms ? l->renew_ms : l->lease_ms - l->renew_ms;
	request_ms /= 2;
	if (request_ms < 200)
		request_ms = 200;
	if (cfg->client) {
		l->client = cfg->client;
		l->borrowed_client = true;
	} else {
		l->client = kube_client_new(cfg->kube, err);
		if (!l->client) {
			free(l);
			return err && err->code ? err->code : GV_EINVAL;
		}
		kube_client_set_retries(l->client, 0, 100, 100);
		kube_client_set_timeouts(l->client, request_ms, request_ms, 0);
	}
	if (cfg->namespace && *cfg->namespace)
		l->ns = gv_xstrdup(cfg->namespace);
	else if (cfg->kube && cfg->kube->namespace && *cfg->kube->namespace)
		l->ns = gv_xstrdup(cfg->kube->namespace);
	else
		l->ns = gv_xstrdup(LEADER_NAMESPACE);
	l->name = gv_xstrdup(cfg->name && *cfg->name ? cfg->name : LEADER_LEASE_NAME);
	l->identity =
	    cfg->identity && *cfg->identity ? gv_xstrdup(cfg->identity) : leader_default_identity();
	ens = kube_escape(l->ns);
	ename = kube_escape(l->name);
	l->coll = gv_xasprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases", ens);
	l->path = gv_xasprintf("%s/%s", l->coll, ename);
	free(ens);
	free(ename);
	l->on_start = cfg->on_start;
	l->on_stop = cfg->on_stop;
	l->ud = cfg->ud;
	l->clock.ud = cfg->clock ? cfg->clock->ud : NULL;
	l->clock.monotonic_ms =
	    cfg->clock && cfg->clock->monotonic_ms ? cfg->clock->monotonic_ms : sys_monotonic_ms;
	l->clock.wall_us = cfg->clock && cfg->clock->wall_us ? cfg->clock->wall_us : sys_wall_us;
	l->rng = random_u64() | 1;
	atomic_init(&l->leading, false);
	if (cfg->metrics) {
		l->gauge = metrics_gauge_new(cfg->metrics, LEADER_METRIC,
					     "1 when this replica holds the background Lease (it "
					     "scans and writes reports), else 0.",
					     NULL);
		metrics_set(l->gauge, NULL, 0);
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = l;
	return GV_OK;
}

bool leader_is_leader(const struct leader *l)
{
	return atomic_load_explicit(&((struct leader *)l)->leading, memory_order_acquire);
}

int leader_gauge(const struct leader *l)
{
	return leader_is_leader(l) ? 1 : 0;
}

const char *leader_identity(const struct leader *l)
{
	return l->identity;
}

/* ---- one attempt ---- */

static enum gv_code call(struct leader *l, const char *method, const char *path, const json_t *body,
			 json_t **out, struct kube_status *st, struct gv_err *err)
{
	memset(st, 0, sizeof(*st));
	*out = NULL;
	return kube_request(l->client, method, path, body, out, st, err);
}

static void set_leading(struct leader *l, bool on, const char *why)
{
	if (atomic_load(&l->leading) == on)
		return;
	atomic_store_explicit(&l->leading, on, memory_order_release);
	metrics_set(l->gauge, NULL, on ? 1 : 0);
	if (on) {
		gv_info("leader: %s leads (Lease %s/%s)", l->identity, l->ns, l->name);
		if (l->on_start)
			l->on_start(l->ud);
	} else {
		gv_warn("leader: %s stops leading: %s", l->identity, why);
		if (l->on_stop)
			l->on_stop(l->ud);
	}
}

/* Remembers spec; a change restarts the local expiry clock. */
static void observe(struct leader *l, const json_t *spec, int64_t now)
{
	if (l->observed && spec && json_equal(l->observed, spec))
		return;
	json_decref(l->observed);
	l->observed = spec ? json_deep_copy(spec) : NULL;
	l->observed_ms = now;
}

static void accept_written(struct leader *l, json_t *resp, int64_t now)
{
	json_decref(l->cached);
	l->cached = resp;
	observe(l, json_object_get(resp, "spec"), now);
}

static const char *holder_of(const json_t *spec)
{
	const char *h = json_string_value(json_object_get(spec, "holderIdentity"));

	return h ? h : "";
}

static json_t *spec_of(json_t *lease)
{
	json_t *spec = json_object_get(lease, "spec");

	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(lease, "spec", spec);
	}
	return spec;
}

static bool expired(struct leader *l, const json_t *spec, int64_t now_ms, int64_t now_us)
{
	json_int_t dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
	int64_t renew_us;

	if (dur <= 0)
		dur = l->lease_s;
	if (now_ms - l->observed_ms >= (int64_t)dur * 1000)
		return true;
	return leader_parse_time(json_string_value(json_object_get(spec, "renewTime")),
				 &renew_us) &&
	       renew_us + (int64_t)dur * 1000000 < now_us;
}

static bool try_acquire_or_renew(struct leader *l, int64_t now)
{
	int64_t now_us = wall(l);
	char ts[40];
	struct kube_status st;
	struct gv_err err = {0};
	json_t *resp = NULL, *body = NULL, *spec;
	const json_t *cur;
	const char *holder;
	bool ok = false;

	leader_format_time(now_us, ts, sizeof(ts));
	l->other_valid = false;
	/* fast path: renew what we wrote last */
	if (atomic_load(&l->leading) && l->cached &&
	    !strcmp(holder_of(json_object_get(l->cached, "spec")), l->identity)) {
		body = json_deep_copy(l->cached);
		spec = spec_of(body);
		json_object_set_new(spec, "renewTime", json_string(ts));
		json_object_set_new(spec, "leaseDurationSeconds", json_integer(l->lease_s));
		if (!call(l, "PUT", l->path, body, &resp, &st, &err)) {
			accept_written(l, resp, now);
			json_decref(body);
			return true;
		}
		gv_debug("leader: renew: %s", err.msg);
		gv_err_clear(&err);
		json_decref(body);
		body = NULL;
	}
	if (call(l, "GET", l->path, NULL, &resp, &st, &err)) {
		if (st.http != 404) {
			gv_debug("leader: %s", err.msg);
			return false;
		}
		gv_err_clear(&err);
		body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}",
				 "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
				 "metadata", "name", l->name, "namespace", l->ns, "spec",
				 "holderIdentity", l->identity, "leaseDurationSeconds", l->lease_s,
				 "acquireTime", ts, "renewTime", ts, "leaseTransitions", 0);
		if (!call(l, "POST", l->coll, body, &resp, &st, &err)) {
			accept_written(l, resp, now);
			ok = true;
		} else {
			gv_debug("leader: create: %s", err.msg);
		}
		json_decref(body);
		return ok;
	}
	cur = json_object_get(resp, "spec");
	observe(l, cur, now);
	holder = holder_of(cur);
	if (*holder && strcmp(holder, l->identity) && !expired(l, cur, now, now_us)) {
		l->other_valid = true;
		json_decref(resp);
		return false;
	}
	body = json_deep_copy(resp);
	spec = spec_of(body);
	if (strcmp(holder, l->identity)) {
		json_int_t tr = json_integer_value(json_object_get(cur, "leaseTransitions"));

		json_object_set_new(spec, "acquireTime", json_string(ts));
		json_object_set_new(spec, "leaseTransitions", json_integer(tr + 1));
		if (*holder)
			gv_info("leader: lease of %s expired, taking it over", holder);
	} else if (!json_object_get(spec, "acquireTime")) {
		json_object_set_new(spec, "acquireTime", json_string(ts));
	}
	json_object_set_new(spec, "holderIdentity", json_string(l->identity));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(l->lease_s));
	json_object_set_new(spec, "renewTime", json_string(ts));
	json_decref(resp);
	resp = NULL;
	if (!call(l, "PUT", l->path, body, &resp, &st, &err)) {
		accept_written(l, resp, now);
		ok = true;
	} else {
		gv_debug("leader: update: %s", err.msg);
	}
	json_decref(body);
	return ok;
}

static double rand01(struct leader *l)
{
	/* xorshift64 */
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	return (double)(l->rng >> 11) / 9007199254740992.0;
}

long leader_step(struct leader *l)
{
	int64_t start = mono(l);
	long wait;

	if (atomic_load(&l->leading) && start - l->renewed_ms >= l->renew_ms) {
		/* an earlier attempt hung or failed: give up before the lease can expire */
		set_leading(l, false, "no renewal within the renew deadline");
		return l->retry_ms;
	}
	if (try_acquire_or_renew(l, start)) {
		l->renewed_ms = start;
		set_leading(l, true, NULL);
	} else if (atomic_load(&l->leading)) {
		if (l->other_valid)
			set_leading(l, false, "another replica holds the Lease");
		else if (mono(l) - l->renewed_ms >= l->renew_ms)
			set_leading(l, false, "no renewal within the renew deadline");
	}
	if (!atomic_load(&l->leading))
		return (long)((double)l->retry_ms * (1.0 + (LEADER_JITTER - 1.0) * rand01(l)));
	/* leading: retry at the retry period, and wake at the deadline to give up in time */
	wait = l->retry_ms;
	{
		int64_t left = l->renewed_ms + l->renew_ms - mono(l);

		if (left < wait)
			wait = left > 1 ? (long)left : 1;
	}
	return wait;
}

/* ---- thread, release ---- */

static void *elector_thread(void *ud)
{
	struct leader *l = ud;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		long wait;
		struct timespec ts;

		pthread_mutex_unlock(&l->mu);
		wait = leader_step(l);
		pthread_mutex_lock(&l->mu);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += wait / 1000;
		ts.tv_nsec += (wait % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

enum gv_code leader_start(struct leader *l, struct gv_err *err)
{
	if (pthread_create(&l->thread, NULL, elector_thread, l))
		return gv_err_set(err, GV_EINTERNAL, "leader election: cannot start a thread");
	l->started = true;
	return GV_OK;
}

/* Hands the Lease back: holder "", duration 1 s. */
static void release(struct leader *l)
{
	char ts[40];

	leader_format_time(wall(l), ts, sizeof(ts));
	for (int attempt = 0; attempt < 2 && l->cached; attempt++) {
		struct kube_status st;
		struct gv_err err = {0};
		json_t *body, *spec, *resp = NULL;

		if (strcmp(holder_of(json_object_get(l->cached, "spec")), l->identity))
			return;
		body = json_deep_copy(l->cached);
		spec = spec_of(body);
		json_object_set_new(spec, "holderIdentity", json_string(""));
		json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
		json_object_set_new(spec, "renewTime", json_string(ts));
		json_object_set_new(spec, "acquireTime", json_string(ts));
		if (!call(l, "PUT", l->path, body, &resp, &st, &err)) {
			gv_info("leader: %s released the Lease %s/%s", l->identity, l->ns, l->name);
			json_decref(resp);
			json_decref(body);
			return;
		}
		json_decref(body);
		if (st.http != 409) {
			gv_warn("leader: releasing the Lease: %s", err.msg);
			return;
		}
		/* our copy is stale: read it again, release only if it still names us */
		gv_err_clear(&err);
		if (call(l, "GET", l->path, NULL, &resp, &st, &err))
			return;
		json_decref(l->cached);
		l->cached = resp;
	}
}

void leader_stop(struct leader *l, bool rel)
{
	if (!l)
		return;
	if (l->started) {
		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->thread, NULL);
	}
	set_leading(l, false, "shutting down");
	if (rel)
		release(l);
	metrics_set(l->gauge, NULL, 0);
	json_decref(l->cached);
	json_decref(l->observed);
	if (!l->borrowed_client)
		kube_client_free(l->client);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l->ns);
	free(l->name);
	free(l->identity);
	free(l->path);
	free(l->coll);
	free(l);
}
