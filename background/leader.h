/*
 * leader.h - leader election with a coordination.k8s.io/v1 Lease, as
 * client-go's leaderelection does it (k8s-wire.md section 5; DESIGN.md
 * "Background: Leader election"). Only the leader scans and writes
 * reports; every replica serves admission.
 *
 * The Lease /apis/coordination.k8s.io/v1/namespaces/<ns>/leases/<name>:
 *
 *   spec.holderIdentity        the leader's identity ("" = released)
 *   spec.leaseDurationSeconds  how long the holder's claim lasts
 *   spec.acquireTime           MicroTime ("2006-01-02T15:04:05.000000Z")
 *   spec.renewTime             MicroTime of the last renewal
 *   spec.leaseTransitions      number of leader changes
 *
 * One attempt (leader_step, client-go's tryAcquireOrRenew):
 *   - leading: PUT the cached Lease with renewTime = now (fast path); on
 *     failure fall through;
 *   - GET the Lease; 404 -> POST one naming us (201: leading; 409: someone
 *     else created it first);
 *   - held by someone else and not expired -> not leading;
 *   - else PUT it with us as holder and the resourceVersion just read;
 *     acquireTime = now and leaseTransitions + 1 when the holder changes.
 *     200: leading; 409: someone else won the race.
 * "Expired" means the holder is "" (released), or the record has not
 * changed for leaseDurationSeconds on our monotonic clock since we first
 * saw it (client-go's rule: safe against clock skew), or renewTime +
 * leaseDurationSeconds lies in the past on our wall clock (so a restarted
 * fleet does not wait a whole lease duration for a long-dead holder; this
 * assumes clocks agree within lease duration - retry period).
 *
 * Timing: an attempt every retry period (not leading: times a random
 * factor in [1, 1.2), as client-go's jitter). A leader that has not
 * renewed successfully for renew deadline stops leading (on_stop) at once,
 * before its lease can expire for the others; one that sees another valid
 * holder stops at once too. Each request times out after
 * min(renew deadline, lease duration - renew deadline) / 2 and is not
 * retried inside (the next attempt is the retry), so a hung API server
 * cannot keep a stale leader scanning past its lease. After losing, the
 * elector keeps campaigning: on_start runs again when it wins again.
 *
 * Shutdown: leader_stop(l, true) stops the thread, calls on_stop when
 * leading, and releases the Lease (holderIdentity "", leaseDurationSeconds
 * 1, renewTime now) so another replica takes over within about a second.
 *
 * RBAC: get, create, update on leases in the namespace (manifests/rbac.yaml).
 */
#ifndef GV_BACKGROUND_LEADER_H
#define GV_BACKGROUND_LEADER_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "common/gv.h"
#include "kube/kube.h"

#define LEADER_LEASE_NAME	 "gavel" /* manifests/rbac.yaml grants the lease "gavel" */
#define LEADER_NAMESPACE	 "gavel"
#define LEADER_LEASE_DURATION_MS 15000
#define LEADER_RENEW_DEADLINE_MS 10000
#define LEADER_RETRY_PERIOD_MS	 2000
#define LEADER_JITTER		 1.2
#define LEADER_METRIC		 "gavel_leader"

struct metrics_registry;

/* A clock for tests; NULL fields use the system clocks. */
struct leader_clock {
	void *ud;
	int64_t (*monotonic_ms)(void *ud); /* CLOCK_MONOTONIC, milliseconds */
	int64_t (*wall_us)(void *ud);	   /* Unix time, microseconds */
};

struct leader_config {
	/*
	 * The API server: a client of its own is made from this (copied),
	 * with the request timeout above and no retries. Required unless
	 * `client` is set.
	 */
	const struct kube_config *kube;
	const char *namespace; /* of the Lease; NULL = kube->namespace, else "gavel" */
	const char *name;      /* of the Lease; NULL = LEADER_LEASE_NAME */
	const char *identity;  /* NULL = leader_default_identity() */
	/* 0 = defaults; must satisfy lease > renew > LEADER_JITTER * retry (client-go). */
	long lease_duration_ms, renew_deadline_ms, retry_period_ms;
	/*
	 * Called on the elector's thread (on_stop also from leader_stop's
	 * caller) when leadership starts and ends; they must not block for
	 * long (signal the scanner and return: renewals wait meanwhile).
	 * Calls alternate: on_start, on_stop, on_start, ...
	 */
	void (*on_start)(void *ud);
	void (*on_stop)(void *ud);
	void *ud;
	/* The gauge LEADER_METRIC (0/1) is registered here; NULL = none. */
	struct metrics_registry *metrics;
	/*
	 * A client to use as it is instead of one made from kube (borrowed,
	 * must outlive the elector; tests: kube_client_new_transport).
	 */
	struct kube_client *client;
	const struct leader_clock *clock; /* tests; NULL = system clocks */
};

struct leader;

/*
 * "<POD_NAME or hostname>_<pid>_<8 random hex digits>": unique per
 * process, so that a restarted pod never takes the old process's lease for
 * its own. Caller frees.
 */
char *leader_default_identity(void);

/*
 * Makes an elector (not running). GV_EINVAL for durations that break
 * lease > renew deadline > 1.2 x retry period, or for neither kube nor
 * client; GV_EINVAL/GV_EIO for bad TLS material in kube.
 */
enum gv_code leader_new(const struct leader_config *cfg, struct leader **out, struct gv_err *err);

/* Starts the elector's thread. GV_EINTERNAL when no thread can be made. */
enum gv_code leader_start(struct leader *l, struct gv_err *err);

/*
 * One attempt and its consequences (on_start / on_stop), for tests and
 * for callers without the thread (do not mix with leader_start). Returns
 * the milliseconds to wait before the next attempt.
 */
long leader_step(struct leader *l);

/*
 * Stops the thread (when started), calls on_stop when leading, releases
 * the Lease when `release` and we hold it, and frees l. release = false
 * leaves the Lease to expire (as a crash would).
 */
void leader_stop(struct leader *l, bool release);

/* Whether this replica leads now. Cheap (an atomic load); any thread. */
bool leader_is_leader(const struct leader *l);

/* The value of the gavel_leader gauge: 1 when leading, else 0. */
int leader_gauge(const struct leader *l);

/* This elector's holderIdentity (owned by l). */
const char *leader_identity(const struct leader *l);

/*
 * MicroTime text of a Unix time in microseconds:
 * "2006-01-02T15:04:05.000000Z" (into buf, at least 32 bytes). Returns buf.
 */
const char *leader_format_time(int64_t us, char *buf, size_t n);

/*
 * Parses RFC 3339 ("...Z" or "...+hh:mm", fraction optional) into Unix
 * microseconds. False when s is not such a time.
 */
bool leader_parse_time(const char *s, int64_t *us);

#endif
