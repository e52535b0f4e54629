/*
 * rate_load - latency of the admission webhook at a fixed offered load
 * (`make bench`, `make bench-admission`, scripts/bench.sh).
 *
 *   rate_load --url URL [--resolve HOST:PORT:ADDR] [--cacert F]
 *             [--rate R] [--connections C] [--threads T] [--seconds S]
 *             [--warmup S] [--pid PID] [--label TEXT] REVIEW.json...
 *
 * Open loop (--rate R > 0): request i of a thread is due at t0 + i / (R/T),
 * whether or not the earlier ones were answered; it goes out on the first
 * idle connection of the thread's C/T keep-alive connections (or waits for
 * one), and its latency runs from the time it was due to the end of the
 * answer, so a slow answer counts against every request queued behind it
 * (no coordinated omission). Every connection is opened first, by one
 * request each at the start of the warm-up, so that no TLS handshake falls
 * in the measured window. The schedule is kept by a timerfd (nanosecond
 * deadlines, not a millisecond poll timeout), one epoll loop per thread
 * drives libcurl's multi interface.
 *
 * Closed loop (--rate 0): every connection sends again as soon as it has
 * its answer: the saturation throughput.
 *
 * Requests POST the review files in turn (Content-Type: application/json, no
 * Expect: 100-continue, HTTP/1.1 keep-alive, TCP_NODELAY). --resolve makes
 * the URL's host name resolve to ADDR, so that TLS carries the name as SNI
 * and the certificate is checked against it (--cacert). Warm-up (default
 * 1 s) opens the connections and is not counted. With --pid, the server's
 * CPU time (utime + stime of /proc/PID/stat) over the measured window is
 * divided by the answers of the window. One line is printed:
 *
 *   LABEL: offered R/s, answered N in S s (X/s), p50 A ms, p99 B ms,
 *   p99.9 C ms, max M ms; a allowed, d denied, e errors, w waited for a
 *   connection; sent late by p50 L ms, p99 L' ms; server CPU U us per
 *   review (K cores); server waited for a core Q us per review (W ms in
 *   the window, P% of its running time); load tool waited for a core
 *   W' ms; load tool CPU V us per request
 *
 * "sent late" is how long after its due time a request was handed to
 * libcurl (waiting for a connection, or the load tool itself not being
 * scheduled in time): when it is large the tool, not the server, is the
 * bottleneck. "waited for a core" is the time the threads were runnable
 * but not running (the run-queue delay of /proc/PID/task/TID/schedstat,
 * summed over the threads): on cores shared with other work it is where
 * a tail comes from that no change of the server removes.
 *
 * An error is a transfer that failed or an answer other than HTTP 200 with
 * an AdmissionReview (the first one is printed on stderr). Figures are
 * printed, never asserted.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>

#include "common/gv.h"
#include "common/banned.h"

#define MAX_THREADS	16
#define MAX_CONNECTIONS 4096
#define MAX_FILES	4096
#define ANSWER_MAX	(64u << 10) /* bytes of an answer kept to check it */
#define BACKLOG_MAX	(1u << 20)  /* due requests waiting for a connection */

struct options {
	const char *url, *resolve, *cacert, *label;
	double rate, secs, warmup;
	long conns, threads, pid;
	char **bodies;
	size_t *lens;
	size_t nbodies;
};

struct thread;

/* One keep-alive connection: an easy handle and the request on it. */
struct slot {
	struct thread *t;
	CURL *easy;
	double due;  /* monotonic seconds the request was due */
	double sent; /* monotonic seconds it was handed to libcurl */
	char *answer;
	size_t len;
	bool busy;
};

struct thread {
	pthread_t id;
	const struct options *o;
	double t0, t_measure, t_end;
	double rate; /* this thread's share; 0 = closed loop */
	int ep, sched_fd;
	double armed;	 /* deadline sched_fd is armed for (0: disarmed) */
	double curl_due; /* when libcurl wants its timeout action; < 0: never */
	CURLM *multi;
	struct slot *slots;
	size_t nslots;
	size_t *idle; /* stack of idle slot indexes */
	size_t nidle;
	double *backlog; /* ring of due times */
	size_t bl_head, bl_n;
	uint64_t sent, next_body;
	uint64_t primed; /* requests sent at once to open every connection */
	double *lat;	 /* seconds from due to answered, answers of the window */
	double *late;	 /* seconds from due to sent, the same answers */
	size_t nlat, cap;
	uint64_t allowed, denied, errors, waited;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Arms t's schedule timer for at (monotonic seconds; 0 disarms). Setting a
 * timer costs the load tool a hypervisor exit on a virtual machine, so an
 * unchanged deadline is not set again.
 */
static void arm(struct thread *t, double at)
{
	struct itimerspec its = {0};

	if (at == t->armed)
		return;
	t->armed = at;
	if (at > 0) {
		its.it_value.tv_sec = (time_t)at;
		its.it_value.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(t->sched_fd, at > 0 ? TFD_TIMER_ABSTIME : 0, &its, NULL);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	struct slot *s = ud;
	size_t n = size * nmemb, room = ANSWER_MAX - s->len;

	if (room) {
		size_t k = n < room ? n : room;
		memcpy(s->answer + s->len, p, k);
		s->len += k;
	}
	return n;
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *ud, void *sp)
{
	struct thread *t = ud;
	struct epoll_event ev = {.data.fd = fd};

	(void)e;
	(void)sp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(t->ep, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
	if (epoll_ctl(t->ep, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT)
		epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

/*
 * libcurl's timer: kept as a deadline that the loop's epoll_wait timeout
 * and curl_timeouts() honour (libcurl asks for it at every request, most
 * often for 0 ms: a timer per request would cost more than the request).
 */
static int on_timer(CURLM *m, long ms, void *ud)
{
	struct thread *t = ud;

	(void)m;
	t->curl_due = ms < 0 ? -1 : now_s() + (double)ms / 1000;
	return 0;
}

/* Runs libcurl's timeout action while its deadline has passed. */
static void curl_timeouts(struct thread *t)
{
	int running;

	while (t->curl_due >= 0 && now_s() >= t->curl_due) {
		t->curl_due = -1;
		curl_multi_socket_action(t->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
}

/* epoll_wait's timeout in ms: libcurl's deadline, at most 100 ms. */
static int wait_ms(const struct thread *t)
{
	double ms;

	if (t->curl_due < 0)
		return 100;
	ms = (t->curl_due - now_s()) * 1000;
	return ms <= 0 ? 0 : ms >= 100 ? 100 : (int)ms + 1;
}

static void start(struct thread *t, double due)
{
	const struct options *o = t->o;
	struct slot *s = &t->slots[t->idle[--t->nidle]];
	size_t b = (size_t)(t->next_body++ % o->nbodies);

	s->busy = true;
	s->due = due;
	s->sent = now_s();
	s->len = 0;
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, o->bodies[b]);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE, (long)o->lens[b]);
	curl_multi_add_handle(t->multi, s->easy);
	t->sent++;
}

static void finish(struct thread *t, struct slot *s, CURLcode cc, double end)
{
	long code = 0;
	bool ok = false, counted = s->due >= t->t_measure && end <= t->t_end;

	curl_multi_remove_handle(t->multi, s->easy);
	s->busy = false;
	t->idle[t->nidle++] = (size_t)(s - t->slots);
	if (cc == CURLE_OK)
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code == 200 && memmem(s->answer, s->len, "\"AdmissionReview\"", 17))
		ok = true;
	if (!counted)
		return;
	if (!ok) {
		static int reported;
		t->errors++;
		if (!__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
			fprintf(stderr, "rate_load: first error: %s (HTTP %ld) %.*s\n",
				curl_easy_strerror(cc), code, (int)(s->len < 200 ? s->len : 200),
				s->answer);
		return;
	}
	if (memmem(s->answer, s->len, "\"allowed\":false", 15))
		t->denied++;
	else
		t->allowed++;
	if (t->nlat == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 65536;
		t->lat = gv_xrealloc(t->lat, t->cap * sizeof(*t->lat));
		t->late = gv_xrealloc(t->late, t->cap * sizeof(*t->late));
	}
	t->late[t->nlat] = s->sent - s->due;
	t->lat[t->nlat++] = end - s->due;
}

/* Sends what is due: open loop from the schedule, closed loop on every idle connection. */
static void feed(struct thread *t, double now)
{
	if (now >= t->t_end)
		return;
	if (t->rate <= 0) {
		while (t->nidle)
			start(t, now);
		return;
	}
	for (;;) {
		double due = t->t0 + (double)(t->sent - t->primed + t->bl_n) / t->rate;
		if (due > now)
			break;
		if (t->nidle && !t->bl_n) {
			start(t, due);
			continue;
		}
		if (t->bl_n == BACKLOG_MAX)
			break; /* hopelessly behind: the latencies say so already */
		t->backlog[(t->bl_head + t->bl_n++) % BACKLOG_MAX] = due;
		t->waited++;
	}
	while (t->nidle && t->bl_n) {
		double due = t->backlog[t->bl_head];
		t->bl_head = (t->bl_head + 1) % BACKLOG_MAX;
		t->bl_n--;
		start(t, due); /* the request's index (sent + bl_n) is unchanged */
	}
}

static void drain(struct thread *t)
{
	CURLMsg *m;
	int left;
	double end = now_s();

	while ((m = curl_multi_info_read(t->multi, &left))) {
		struct slot *s = NULL;
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
		finish(t, s, m->data.result, end);
	}
}

static void *run(void *arg)
{
	struct thread *t = arg;
	const struct options *o = t->o;
	struct curl_slist *hdrs = NULL, *resolve = NULL;
	struct epoll_event evs[64];
	int running = 0;

	t->ep = epoll_create1(EPOLL_CLOEXEC);
	t->sched_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	t->armed = 0;
	t->curl_due = -1;
	epoll_ctl(t->ep, EPOLL_CTL_ADD, t->sched_fd,
		  &(struct epoll_event){.events = EPOLLIN, .data.fd = t->sched_fd});
	t->multi = curl_multi_init();
	curl_multi_setopt(t->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(t->multi, CURLMOPT_SOCKETDATA, t);
	curl_multi_setopt(t->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(t->multi, CURLMOPT_TIMERDATA, t);
	curl_multi_setopt(t->multi, CURLMOPT_MAXCONNECTS, (long)t->nslots);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	if (o->resolve)
		resolve = curl_slist_append(NULL, o->resolve);
	t->slots = gv_xcalloc(t->nslots, sizeof(*t->slots));
	t->idle = gv_xcalloc(t->nslots, sizeof(*t->idle));
	t->backlog = gv_xcalloc(BACKLOG_MAX, sizeof(*t->backlog));
	for (size_t i = 0; i < t->nslots; i++) {
		struct slot *s = &t->slots[i];
		s->t = t;
		s->answer = gv_xmalloc(ANSWER_MAX);
		s->easy = curl_easy_init();
		curl_easy_setopt(s->easy, CURLOPT_URL, o->url);
		curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(s->easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
		curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(s->easy, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(s->easy, CURLOPT_TIMEOUT, 30L);
		curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
		curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
		if (resolve)
			curl_easy_setopt(s->easy, CURLOPT_RESOLVE, resolve);
		if (o->cacert)
			curl_easy_setopt(s->easy, CURLOPT_CAINFO, o->cacert);
		else {
			curl_easy_setopt(s->easy, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(s->easy, CURLOPT_SSL_VERIFYHOST, 0L);
		}
		t->idle[t->nidle++] = i;
	}
	if (t->rate > 0) {
		/* Every connection opened (TLS handshake) in the warm-up, not on demand later. */
		double now = now_s();
		while (t->nidle)
			start(t, now);
		t->primed = t->sent;
		arm(t, t->t0);
	} else {
		arm(t, t->t0 + 1e-6);
	}
	while (now_s() < t->t_end || t->nidle < t->nslots) {
		int n = epoll_wait(t->ep, evs, (int)GV_ARRAY_LEN(evs), wait_ms(t));
		double now;
		if (now_s() > t->t_end + 10)
			break; /* answers overdue by 10 s: left out */
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			uint64_t x;
			if (fd == t->sched_fd) {
				if (read(fd, &x, sizeof(x)) < 0) {
					/* spurious wake-up: nothing to read */
				}
				t->armed = 0; /* fired (a one-shot timer) */
			} else {
				int mask =
				    (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
				    (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
				    (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
				curl_multi_socket_action(t->multi, fd, mask, &running);
			}
		}
		drain(t);
		now = now_s();
		feed(t, now);
		/*
		 * The next due time, unless requests wait for a connection: then the
		 * next answer calls feed(), and a timer set in the past would only spin.
		 */
		if (t->rate > 0 && now < t->t_end && !t->bl_n)
			arm(t, t->t0 + (double)(t->sent - t->primed + t->bl_n) / t->rate);
		else if (t->rate > 0)
			arm(t, 0);
		curl_timeouts(t);
		drain(t);
		if (t->rate <= 0)
			feed(t, now_s());
	}
	for (size_t i = 0; i < t->nslots; i++) {
		if (t->slots[i].busy)
			curl_multi_remove_handle(t->multi, t->slots[i].easy);
		curl_easy_cleanup(t->slots[i].easy);
		free(t->slots[i].answer);
	}
	curl_multi_cleanup(t->multi);
	curl_slist_free_all(hdrs);
	curl_slist_free_all(resolve);
	close(t->ep);
	close(t->sched_fd);
	free(t->slots);
	free(t->idle);
	free(t->backlog);
	return NULL;
}

/* utime + stime of a process, in seconds; negative when unreadable. */
static double cpu_of(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields after the command name (which may hold spaces): state is field 3. */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/*
 * The time the threads of a process ran and the time they were runnable
 * but waited for a core (fields 1 and 2 of /proc/PID/task/TID/schedstat,
 * summed over the threads alive now), in seconds; false when unreadable
 * (no schedstats in this kernel). pid 0: this process.
 */
static bool sched_of(long pid, double *ran, double *waited)
{
	char path[128];
	DIR *d;
	struct dirent *e;
	unsigned long long run = 0, wait = 0, r, w;
	bool ok = false;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/task");
	if (!(d = opendir(path)))
		return false;
	while ((e = readdir(d))) {
		char file[192];
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/schedstat", path, e->d_name);
		if (!(f = fopen(file, "r")))
			continue;
		if (fscanf(f, "%llu %llu", &r, &w) == 2) {
			run += r;
			wait += w;
			ok = true;
		}
		fclose(f);
	}
	closedir(d);
	*ran = (double)run / 1e9;
	*waited = (double)wait / 1e9;
	return ok;
}

static void sleep_until(double at)
{
	struct timespec ts;
	double d = at - now_s();

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

static int usage(void)
{
	fprintf(stderr, "usage: rate_load --url URL [--resolve HOST:PORT:ADDR] [--cacert F] "
			"[--rate R] [--connections C] [--threads T] [--seconds S] [--warmup S] "
			"[--pid PID] [--label TEXT] REVIEW.json...\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct options o = {
	    .label = "rate_load", .secs = 10, .warmup = 1, .conns = 64, .threads = 1};
	struct thread th[MAX_THREADS];
	struct gv_err err = {0};
	double t0, cpu0 = -1, cpu1 = -1, *all, *late;
	double run0 = 0, run1 = 0, wait0 = 0, wait1 = 0, lrun0 = 0, lrun1 = 0, lwait0 = 0,
	       lwait1 = 0;
	bool sched = false, lsched = false;
	size_t n = 0;
	uint64_t allowed = 0, denied = 0, errors = 0, waited = 0, sent = 0;
	struct rusage ru;
	int i, rc = 0;

	gv_init();
	o.bodies = gv_xcalloc(MAX_FILES, sizeof(*o.bodies));
	o.lens = gv_xcalloc(MAX_FILES, sizeof(*o.lens));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a[0] != '-') {
			if (o.nbodies == MAX_FILES)
				return usage();
			if (gv_read_file(a, &o.bodies[o.nbodies], &o.lens[o.nbodies], &err)) {
				fprintf(stderr, "rate_load: %s\n", err.msg);
				return 2;
			}
			o.nbodies++;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--url"))
			o.url = v;
		else if (!strcmp(a, "--resolve"))
			o.resolve = v;
		else if (!strcmp(a, "--cacert"))
			o.cacert = v;
		else if (!strcmp(a, "--label"))
			o.label = v;
		else if (!strcmp(a, "--rate"))
			o.rate = strtod(v, NULL);
		else if (!strcmp(a, "--seconds"))
			o.secs = strtod(v, NULL);
		else if (!strcmp(a, "--warmup"))
			o.warmup = strtod(v, NULL);
		else if (!strcmp(a, "--connections"))
			o.conns = strtol(v, NULL, 10);
		else if (!strcmp(a, "--threads"))
			o.threads = strtol(v, NULL, 10);
		else if (!strcmp(a, "--pid"))
			o.pid = strtol(v, NULL, 10);
		else
			return usage();
	}
	if (!o.url || !o.nbodies || o.rate < 0 || o.secs <= 0 || o.secs > 600 || o.warmup < 0 ||
	    o.threads < 1 || o.threads > MAX_THREADS || o.conns < o.threads ||
	    o.conns > MAX_CONNECTIONS)
		return usage();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	t0 = now_s() + 0.05;
	memset(th, 0, sizeof(th));
	for (i = 0; i < o.threads; i++) {
		struct thread *t = &th[i];
		t->o = &o;
		/* Threads' schedules interleave: thread i starts i/R later. */
		t->t0 = t0 + (o.rate > 0 ? (double)i / o.rate : 0);
		t->t_measure = t0 + o.warmup;
		t->t_end = t->t_measure + o.secs;
		t->rate = o.rate / (double)o.threads;
		t->nslots = (size_t)(o.conns / o.threads + (i < o.conns % o.threads));
		t->next_body = (uint64_t)i * 7;
		if (pthread_create(&t->id, NULL, run, t)) {
			fprintf(stderr, "rate_load: cannot start a thread\n");
			return 2;
		}
	}
	if (o.pid) {
		sleep_until(t0 + o.warmup);
		cpu0 = cpu_of(o.pid);
		sched = sched_of(o.pid, &run0, &wait0);
		lsched = sched_of(0, &lrun0, &lwait0);
		sleep_until(t0 + o.warmup + o.secs);
		cpu1 = cpu_of(o.pid);
		sched = sched && sched_of(o.pid, &run1, &wait1);
		lsched = lsched && sched_of(0, &lrun1, &lwait1);
	}
	for (i = 0; i < o.threads; i++) {
		pthread_join(th[i].id, NULL);
		n += th[i].nlat;
	}
	all = gv_xcalloc(n + 1, sizeof(*all));
	late = gv_xcalloc(n + 1, sizeof(*late));
	n = 0;
	for (i = 0; i < o.threads; i++) {
		memcpy(all + n, th[i].lat, th[i].nlat * sizeof(*all));
		memcpy(late + n, th[i].late, th[i].nlat * sizeof(*late));
		n += th[i].nlat;
		free(th[i].lat);
		free(th[i].late);
		allowed += th[i].allowed;
		denied += th[i].denied;
		errors += th[i].errors;
		waited += th[i].waited;
		sent += th[i].sent;
	}
	if (!n) {
		printf("%s: no answer (%" PRIu64 " errors)\n", o.label, errors);
		rc = 1;
	} else {
		qsort(all, n, sizeof(*all), cmp_double);
		qsort(late, n, sizeof(*late), cmp_double);
		if (o.rate > 0)
			printf("%s: offered %.0f/s, ", o.label, o.rate);
		else
			printf("%s: closed loop, %ld connections, ", o.label, o.conns);
		printf("answered %zu in %.0f s (%.0f/s), p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, "
		       "max %.2f ms; %" PRIu64 " allowed, %" PRIu64 " denied, %" PRIu64
		       " errors, %" PRIu64 " waited for a connection",
		       n, o.secs, (double)n / o.secs, pct(all, n, 0.50) * 1e3,
		       pct(all, n, 0.99) * 1e3, pct(all, n, 0.999) * 1e3, all[n - 1] * 1e3, allowed,
		       denied, errors, waited);
		if (o.rate > 0)
			printf("; sent late by p50 %.3f ms, p99 %.3f ms", pct(late, n, 0.50) * 1e3,
			       pct(late, n, 0.99) * 1e3);
		if (cpu0 >= 0 && cpu1 >= 0)
			printf("; server CPU %.0f us per review (%.2f cores)",
			       (cpu1 - cpu0) * 1e6 / (double)n, (cpu1 - cpu0) / o.secs);
		if (sched && wait1 >= wait0)
			printf(
			    "; server waited for a core %.0f us per review (%.0f ms in the window, "
			    "%.0f%% of its running time)",
			    (wait1 - wait0) * 1e6 / (double)n, (wait1 - wait0) * 1e3,
			    run1 > run0 ? (wait1 - wait0) * 100 / (run1 - run0) : 0.0);
		if (lsched && lwait1 >= lwait0)
			printf("; load tool waited for a core %.0f ms", (lwait1 - lwait0) * 1e3);
		if (!getrusage(RUSAGE_SELF, &ru) && sent)
			printf("; load tool CPU %.0f us per request",
			       ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
				(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6) *
				   1e6 / (double)sent);
		printf("\n");
	}
	free(all);
	free(late);
	for (size_t k = 0; k < o.nbodies; k++)
		free(o.bodies[k]);
	free(o.bodies);
	free(o.lens);
	curl_global_cleanup();
	return rc;
}
