/*
 * Unit tests for background/leader.c with a fake clock and an in-memory
 * Lease store standing in for the API server: MicroTime, configuration
 * checks, acquire, renew, takeover after expiry (observed and by
 * renewTime), the renew deadline, losing to another holder, release on
 * shutdown, a lost race (409), the gavel_leader gauge, and two electors on
 * their own threads with real clocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "background/leader.h"
#include "common/metrics.h"
#include "kube/tests/transport.h"

#include "common/banned.h"

#define PATH "/apis/coordination.k8s.io/v1/namespaces/gavel/leases/gavel"
#define COLL "/apis/coordination.k8s.io/v1/namespaces/gavel/leases"

/* ---- a Lease store ---- */

struct store {
	pthread_mutex_t mu;
	json_t *lease; /* NULL = absent */
	long rv;
	long fail_http; /* non-zero: every request fails with it */
	int gets, posts, puts;
	/* called (without the lock) before a PUT is served */
	void (*before_put)(struct store *s);
	struct fake_api fa;	    /* store_request behind ... */
	struct kube_client *client; /* ... this client's test transport */
};

static enum gv_code status(struct kube_status *st, struct gv_err *err, long http,
			   const char *reason)
{
	st->http = http;
	snprintf(st->reason, sizeof(st->reason), "%s", reason);
	return gv_err_set(err, GV_ENET, "%ld %s", http, reason);
}

static void store_put(struct store *s, const json_t *obj, json_t **out)
{
	char rv[32];

	json_decref(s->lease);
	s->lease = json_deep_copy(obj);
	snprintf(rv, sizeof(rv), "%ld", ++s->rv);
	json_object_set_new(json_object_get(s->lease, "metadata"), "resourceVersion",
			    json_string(rv));
	*out = json_deep_copy(s->lease);
}

static enum gv_code store_request(void *ud, const char *method, const char *path,
				  const json_t *body, json_t **out, struct kube_status *st,
				  struct gv_err *err)
{
	struct store *s = ud;
	enum gv_code rc = GV_OK;

	if (!strcmp(method, "PUT") && s->before_put) {
		void (*hook)(struct store *) = s->before_put;

		s->before_put = NULL;
		hook(s);
	}
	pthread_mutex_lock(&s->mu);
	if (s->fail_http) {
		rc = status(st, err, s->fail_http, "ServiceUnavailable");
	} else if (!strcmp(method, "GET")) {
		s->gets++;
		assert_string_equal(path, PATH);
		if (!s->lease)
			rc = status(st, err, 404, "NotFound");
		else
			*out = json_deep_copy(s->lease);
	} else if (!strcmp(method, "POST")) {
		s->posts++;
		assert_string_equal(path, COLL);
		if (s->lease)
			rc = status(st, err, 409, "AlreadyExists");
		else
			store_put(s, body, out);
	} else if (!strcmp(method, "PUT")) {
		const char *rv = json_string_value(
		    json_object_get(json_object_get(body, "metadata"), "resourceVersion"));

		s->puts++;
		assert_string_equal(path, PATH);
		if (!s->lease)
			rc = status(st, err, 404, "NotFound");
		else if (!rv ||
			 strcmp(rv, json_string_value(json_object_get(
					json_object_get(s->lease, "metadata"), "resourceVersion"))))
			rc = status(st, err, 409, "Conflict");
		else
			store_put(s, body, out);
	} else {
		fail_msg("unexpected %s %s", method, path);
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static const char *spec_str(struct store *s, const char *key)
{
	return json_string_value(json_object_get(json_object_get(s->lease, "spec"), key));
}

static long long spec_int(struct store *s, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(s->lease, "spec"), key));
}

/* ---- a fake clock ---- */

struct fclock {
	int64_t ms;
};

static int64_t fc_mono(void *ud)
{
	return ((struct fclock *)ud)->ms;
}

static int64_t fc_wall(void *ud)
{
	/* 2026-01-01T00:00:00Z + ms */
	return 1767225600LL * 1000000 + ((struct fclock *)ud)->ms * 1000;
}

/* ---- electors ---- */

struct events {
	int starts, stops;
};

static void on_start(void *ud)
{
	((struct events *)ud)->starts++;
}

static void on_stop(void *ud)
{
	((struct events *)ud)->stops++;
}

static struct leader *elector(struct store *s, struct fclock *fc, const char *id, struct events *ev,
			      struct metrics_registry *reg)
{
	static struct leader_clock clocks[8];
	static int nclocks;
	struct leader_clock *clk = &clocks[nclocks++ % 8];
	struct leader_config cfg = {.identity = id,
				    .on_start = on_start,
				    .on_stop = on_stop,
				    .ud = ev,
				    .metrics = reg,
				    .client = s->client};
	struct leader *l = NULL;
	struct gv_err err = {0};

	if (fc) {
		*clk = (struct leader_clock){fc, fc_mono, fc_wall};
		cfg.clock = clk;
	}
	assert_int_equal(leader_new(&cfg, &l, &err), GV_OK);
	return l;
}

static struct store *store_new(void)
{
	struct store *s = gv_xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->mu, NULL);
	s->fa = (struct fake_api){.request = store_request, .ud = s};
	s->client = fake_api_client(&s->fa);
	return s;
}

static void store_free(struct store *s)
{
	kube_client_free(s->client);
	json_decref(s->lease);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* ---- tests ---- */

static void test_times(void **state)
{
	char buf[40];
	int64_t us;

	(void)state;
	assert_string_equal(leader_format_time(0, buf, sizeof(buf)), "1970-01-01T00:00:00.000000Z");
	assert_string_equal(leader_format_time(1767225600LL * 1000000 + 482913, buf, sizeof(buf)),
			    "2026-01-01T00:00:00.482913Z");
	assert_true(leader_parse_time("2026-01-01T10:03:12.482913Z", &us));
	assert_int_equal(us, (1767225600LL + 10 * 3600 + 3 * 60 + 12) * 1000000 + 482913);
	assert_true(leader_parse_time("2026-01-01T10:03:12Z", &us));
	assert_int_equal(us % 1000000, 0);
	assert_true(leader_parse_time("2026-01-01T12:03:12.5+02:00", &us));
	assert_int_equal(us, (1767225600LL + 10 * 3600 + 3 * 60 + 12) * 1000000 + 500000);
	assert_true(leader_parse_time("2026-01-01T10:03:12.1234567Z", &us)); /* extra digits cut */
	assert_int_equal(us % 1000000, 123456);
	assert_false(leader_parse_time("2026-01-01 10:03:12Z", &us));
	assert_false(leader_parse_time("2026-01-01T10:03:12", &us));
	assert_false(leader_parse_time("2026-13-01T10:03:12Z", &us));
	assert_false(leader_parse_time("2026-01-01T10:03:12.Z", &us));
	assert_false(leader_parse_time(NULL, &us));
	leader_format_time(us = 1767225600LL * 1000000 + 7, buf, sizeof(buf));
	{
		int64_t back;

		assert_true(leader_parse_time(buf, &back));
		assert_int_equal(back, us);
	}
}

static void test_config(void **state)
{
	struct store *s = store_new();
	struct leader_config cfg = {.client = s->client};
	struct leader *l = NULL;
	struct gv_err err = {0};
	char *id;

	(void)state;
	cfg.lease_duration_ms = 10000; /* not above the renew deadline */
	assert_int_equal(leader_new(&cfg, &l, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "renew deadline"));
	gv_err_clear(&err);
	cfg = (struct leader_config){.client = s->client,
				     .renew_deadline_ms = 2400}; /* not above 1.2 x 2 s */
	assert_int_equal(leader_new(&cfg, &l, &err), GV_EINVAL);
	gv_err_clear(&err);
	cfg = (struct leader_config){0};
	assert_int_equal(leader_new(&cfg, &l, &err), GV_EINVAL);
	assert_null(l);

	cfg = (struct leader_config){.client = s->client};
	assert_int_equal(leader_new(&cfg, &l, NULL), GV_OK);
	/* default identity: <POD_NAME or hostname>_<pid>_<hex> */
	assert_non_null(strchr(leader_identity(l), '_'));
	assert_false(leader_is_leader(l));
	leader_stop(l, true);
	setenv("POD_NAME", "gavel-7c9d8-abcde", 1);
	id = leader_default_identity();
	assert_true(!strncmp(id, "gavel-7c9d8-abcde_", 18));
	free(id);
	unsetenv("POD_NAME");
	store_free(s);
}

static void test_acquire_renew_takeover(void **state)
{
	struct store *s = store_new();
	struct fclock fc = {1000};
	struct events ea = {0}, eb = {0};
	struct leader *a = elector(s, &fc, "a", &ea, NULL), *b = elector(s, &fc, "b", &eb, NULL);
	long w;
	const char *acquired;
	char *first_acquire;

	(void)state;
	/* no Lease: a creates it */
	w = leader_step(a);
	assert_true(leader_is_leader(a));
	assert_int_equal(ea.starts, 1);
	assert_int_equal(s->posts, 1);
	assert_string_equal(spec_str(s, "holderIdentity"), "a");
	assert_int_equal(spec_int(s, "leaseDurationSeconds"), 15);
	assert_int_equal(spec_int(s, "leaseTransitions"), 0);
	assert_string_equal(spec_str(s, "renewTime"), "2026-01-01T00:00:01.000000Z");
	assert_string_equal(spec_str(s, "acquireTime"), spec_str(s, "renewTime"));
	assert_int_equal(w, 2000);
	first_acquire = gv_xstrdup(spec_str(s, "acquireTime"));

	/* b sees a valid holder */
	w = leader_step(b);
	assert_false(leader_is_leader(b));
	assert_true(w >= 2000 && w < 2400);

	/* a renews every retry period with one PUT (fast path), b keeps out */
	for (int i = 0; i < 10; i++) {
		int puts = s->puts, gets = s->gets;

		fc.ms += 2000;
		leader_step(a);
		assert_int_equal(s->puts, puts + 1);
		assert_int_equal(s->gets, gets);
		leader_step(b);
		assert_false(leader_is_leader(b));
	}
	assert_true(leader_is_leader(a));
	assert_int_equal(ea.starts, 1);
	assert_string_equal(spec_str(s, "acquireTime"), first_acquire);
	assert_string_equal(spec_str(s, "renewTime"), "2026-01-01T00:00:21.000000Z");

	/* a dies (stops stepping): b takes over once the lease has run out, not before */
	for (int i = 0; i < 7; i++) {
		fc.ms += 2000;
		leader_step(b);
		assert_false(leader_is_leader(b)); /* up to 14 s after the last renewal */
	}
	fc.ms += 2000;
	leader_step(b);
	assert_true(leader_is_leader(b));
	assert_int_equal(eb.starts, 1);
	assert_string_equal(spec_str(s, "holderIdentity"), "b");
	assert_int_equal(spec_int(s, "leaseTransitions"), 1);
	acquired = spec_str(s, "acquireTime");
	assert_string_equal(acquired, spec_str(s, "renewTime"));
	assert_string_not_equal(acquired, first_acquire);

	/* a comes back: long past its renew deadline, it stops at once, then stays out */
	fc.ms += 500;
	leader_step(a);
	assert_false(leader_is_leader(a));
	assert_int_equal(ea.stops, 1);
	fc.ms += 2000;
	leader_step(a);
	assert_false(leader_is_leader(a));
	assert_int_equal(ea.starts, 1);
	assert_true(leader_is_leader(b));
	assert_string_equal(spec_str(s, "holderIdentity"), "b");

	leader_stop(a, true); /* not the holder: the Lease stays b's */
	assert_string_equal(spec_str(s, "holderIdentity"), "b");
	assert_int_equal(ea.stops, 1);
	leader_stop(b, false);
	assert_int_equal(eb.stops, 1);
	assert_string_equal(spec_str(s, "holderIdentity"), "b");
	free(first_acquire);
	store_free(s);
}

static void test_renew_deadline(void **state)
{
	struct store *s = store_new();
	struct fclock fc = {0};
	struct events ea = {0};
	struct leader *a = elector(s, &fc, "a", &ea, NULL);
	int64_t last_ok;
	long w;

	(void)state;
	leader_step(a);
	assert_true(leader_is_leader(a));
	fc.ms += 2000;
	leader_step(a);
	last_ok = fc.ms;
	/* the API server goes away */
	s->fail_http = 503;
	for (;;) {
		w = leader_step(a);
		if (!leader_is_leader(a))
			break;
		/* the elector never sleeps past the deadline */
		assert_true(fc.ms + w <= last_ok + LEADER_RENEW_DEADLINE_MS);
		fc.ms += w;
		assert_true(fc.ms <= last_ok + LEADER_RENEW_DEADLINE_MS);
	}
	assert_int_equal(ea.stops, 1);
	assert_int_equal(fc.ms, last_ok + LEADER_RENEW_DEADLINE_MS);
	/* still well inside the lease the others see */
	assert_true(fc.ms < last_ok + LEADER_LEASE_DURATION_MS);

	/* the API server is back and the Lease is still ours: lead again */
	s->fail_http = 0;
	fc.ms += 2000;
	leader_step(a);
	assert_true(leader_is_leader(a));
	assert_int_equal(ea.starts, 2);
	assert_int_equal(spec_int(s, "leaseTransitions"), 0); /* same holder: no transition */
	leader_stop(a, true);
	assert_int_equal(ea.stops, 2);
	store_free(s);
}

static void test_release(void **state)
{
	struct store *s = store_new();
	struct fclock fc = {0};
	struct events ea = {0}, eb = {0};
	struct metrics_registry *reg = metrics_registry_new();
	struct leader *a = elector(s, &fc, "a", &ea, reg), *b = elector(s, &fc, "b", &eb, NULL);
	struct gv_buf out = {0};

	(void)state;
	leader_step(a);
	leader_step(b);
	assert_true(leader_is_leader(a));
	assert_int_equal(leader_gauge(a), 1);
	assert_int_equal(leader_gauge(b), 0);
	metrics_render(reg, &out);
	assert_non_null(strstr(gv_buf_str(&out), "\ngavel_leader 1\n"));
	gv_buf_release(&out);

	fc.ms += 1000;
	leader_stop(a, true);
	assert_int_equal(ea.stops, 1);
	assert_string_equal(spec_str(s, "holderIdentity"), "");
	assert_int_equal(spec_int(s, "leaseDurationSeconds"), 1);
	metrics_render(reg, &out);
	assert_non_null(strstr(gv_buf_str(&out), "\ngavel_leader 0\n"));
	gv_buf_release(&out);

	/* the next attempt of b takes it, no waiting */
	fc.ms += 100;
	leader_step(b);
	assert_true(leader_is_leader(b));
	assert_string_equal(spec_str(s, "holderIdentity"), "b");
	assert_int_equal(spec_int(s, "leaseTransitions"), 1);
	assert_int_equal(spec_int(s, "leaseDurationSeconds"), 15);
	leader_stop(b, true);
	metrics_registry_free(reg);
	store_free(s);
}

/* A Lease left by a holder long gone (renewTime an hour ago) is taken at once. */
static void test_stale_and_own_lease(void **state)
{
	struct store *s = store_new();
	struct fclock fc = {0};
	struct events ea = {0}, eb = {0};
	struct leader *a = elector(s, &fc, "a", &ea, NULL), *b;
	json_t *ghost, *out = NULL;

	(void)state;
	ghost = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}", "apiVersion",
			  "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "gavel",
			  "namespace", "gavel", "spec", "holderIdentity", "ghost",
			  "leaseDurationSeconds", 15, "acquireTime", "2025-12-31T22:00:00.000000Z",
			  "renewTime", "2025-12-31T23:00:00.000000Z", "leaseTransitions", 4);
	store_put(s, ghost, &out);
	json_decref(out);
	json_decref(ghost);
	leader_step(a);
	assert_true(leader_is_leader(a));
	assert_int_equal(spec_int(s, "leaseTransitions"), 5);

	/* a restarted process with the same fixed identity resumes without a transition */
	leader_stop(a, false);
	b = elector(s, &fc, "a", &eb, NULL);
	fc.ms += 3000;
	leader_step(b);
	assert_true(leader_is_leader(b));
	assert_int_equal(spec_int(s, "leaseTransitions"), 5);
	assert_string_equal(spec_str(s, "acquireTime"), "2026-01-01T00:00:00.000000Z");
	leader_stop(b, true);
	store_free(s);
}

/* Two candidates see the same expired Lease; the second PUT gets 409 and loses. */
static struct leader *racer;

static void race_first(struct store *s)
{
	(void)s;
	leader_step(racer);
}

/* A leader whose Lease someone else took (an operator, a split brain) stops at its next renewal. */
static void steal(struct store *s)
{
	json_t *copy = json_deep_copy(s->lease), *out = NULL;

	json_object_set_new(json_object_get(copy, "spec"), "holderIdentity", json_string("thief"));
	json_object_set_new(json_object_get(copy, "spec"), "renewTime",
			    json_string("2026-01-01T00:00:03.000000Z"));
	store_put(s, copy, &out);
	json_decref(out);
	json_decref(copy);
}

static void test_lose_to_other_holder(void **state)
{
	struct store *s = store_new();
	struct fclock fc = {0};
	struct events ea = {0};
	struct leader *a = elector(s, &fc, "a", &ea, NULL);

	(void)state;
	leader_step(a);
	assert_true(leader_is_leader(a));
	fc.ms += 2000;
	s->before_put = steal;
	leader_step(a); /* the renewal PUT conflicts, the GET shows "thief" */
	assert_false(leader_is_leader(a));
	assert_int_equal(ea.stops, 1);
	leader_stop(a, true); /* not ours: left alone */
	assert_string_equal(spec_str(s, "holderIdentity"), "thief");
	store_free(s);
}

static void test_lost_race(void **state)
{
	struct store *s = store_new();
	struct fclock fc = {0};
	struct events ea = {0}, eb = {0};
	struct leader *a = elector(s, &fc, "a", &ea, NULL), *b = elector(s, &fc, "b", &eb, NULL);
	json_t *released, *out = NULL;

	(void)state;
	released = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i}}", "apiVersion",
			     "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "gavel",
			     "namespace", "gavel", "spec", "holderIdentity", "",
			     "leaseDurationSeconds", 1);
	store_put(s, released, &out);
	json_decref(out);
	json_decref(released);
	racer = a;
	s->before_put = race_first; /* a acquires between b's GET and b's PUT */
	leader_step(b);
	assert_true(leader_is_leader(a));
	assert_false(leader_is_leader(b));
	assert_int_equal(eb.starts, 0);
	assert_string_equal(spec_str(s, "holderIdentity"), "a");
	leader_stop(a, true);
	leader_stop(b, true);
	store_free(s);
}

/* ---- threads and real clocks ---- */

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static struct leader *threaded(struct store *s, const char *id, struct events *ev)
{
	struct leader_config cfg = {.identity = id,
				    .lease_duration_ms = 1500,
				    .renew_deadline_ms = 1000,
				    .retry_period_ms = 200,
				    .on_start = on_start,
				    .on_stop = on_stop,
				    .ud = ev,
				    .client = s->client};
	struct leader *l = NULL;

	assert_int_equal(leader_new(&cfg, &l, NULL), GV_OK);
	assert_int_equal(leader_start(l, NULL), GV_OK);
	return l;
}

static void test_threads(void **state)
{
	struct store *s = store_new();
	struct events ea = {0}, eb = {0};
	struct leader *a = threaded(s, "a", &ea), *b = threaded(s, "b", &eb);
	struct leader *lead, *other;
	int i;

	(void)state;
	for (i = 0; i < 50 && !leader_is_leader(a) && !leader_is_leader(b); i++)
		sleep_ms(20);
	sleep_ms(600);
	assert_true(leader_is_leader(a) != leader_is_leader(b));
	lead = leader_is_leader(a) ? a : b;
	other = lead == a ? b : a;
	/* graceful stop: the other takes over within about a retry period */
	leader_stop(lead, true);
	for (i = 0; i < 100 && !leader_is_leader(other); i++)
		sleep_ms(10);
	assert_true(leader_is_leader(other));
	assert_true(i * 10 < 600);
	leader_stop(other, true);
	assert_int_equal(ea.starts + eb.starts, 2);
	assert_int_equal(ea.stops + eb.stops, 2);
	store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_times),
	    cmocka_unit_test(test_config),
	    cmocka_unit_test(test_acquire_renew_takeover),
	    cmocka_unit_test(test_renew_deadline),
	    cmocka_unit_test(test_release),
	    cmocka_unit_test(test_stale_and_own_lease),
	    cmocka_unit_test(test_lose_to_other_holder),
	    cmocka_unit_test(test_lost_race),
	    cmocka_unit_test(test_threads),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
