#!/bin/sh
# live_background.sh - PolicyReport writing (background/report.c) and Lease
# leader election (background/leader.c) against a real kube-apiserver v1.20
# + etcd on loopback (e2e/local/up.sh), with manifests/crds/ applied.
#
#   make && sh background/tests/live_background.sh
#
# Builds a tiny driver (written out below) against build/libgavel.a:
#
#   bg_driver report [--split] [--chunk N] < COMMANDS
#       load                                 report_load (start-up)
#       put NS NAME UID POLICY RULE=RESULT[,RULE=RESULT...]|-
#                                            a scan of Pod NS/NAME for POLICY
#                                            (NS "-": a cluster-scoped Namespace)
#       bulk NS COUNT POLICY RESULT          pods pod-0000.. with one result each
#       delobj NS UID | delpol POLICY        removals
#       flush                                report_flush, prints its counts
#       sh COMMAND...                        runs COMMAND (another writer)
#   bg_driver lease NS NAME IDENTITY         an elector (lease 6 s, renew 4 s,
#       retry 1 s); prints "leading ID MS", "stopped ID MS"; SIGTERM = graceful
#       stop (releases the Lease), then "released ID MS"
#
# then checks with kubectl: names, labels, summaries, chunking, a 409 merge
# with a concurrent kubectl patch, removal of stale results and objects, a
# restart that rewrites nothing, the layout switch both ways; and two
# electors: exactly one leads, SIGKILL of the leader -> the other takes
# over within the lease duration (+ one retry period), SIGTERM -> a third
# takes over within a few seconds.
#
# Environment: LIBGAVEL (default build/libgavel.a), CC, KEEP=1 keeps the
# temporary directory. Ends with "N passed, N failed"; exit 1 on failures.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
LIBGAVEL=${LIBGAVEL:-$ROOT/build/libgavel.a}
CC=${CC:-cc}

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }
summary() { echo "$passed passed, $failed failed"; }

WORK=$(mktemp -d /tmp/gavel-live-bg.XXXXXX)
PIDS=
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	if [ -f "$WORK/cp/kube-apiserver.pid" ]; then e2e/local/down.sh "$WORK/cp" >/dev/null 2>&1; fi
	if [ "${KEEP:-}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

abort() {
	bad "$*"
	summary
	exit 1
}

# --- the driver -------------------------------------------------------------
cat >"$WORK/bg_driver.c" <<'EOF'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "background/leader.h"
#include "background/report.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/kube.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int put(struct report_set *rs, char *ns, char *name, char *uid, char *policy, char *list)
{
	struct report_resource r = {"v1", "Pod", ns, name, uid};
	struct report_entry e[32];
	char msg[32][96];
	size_t n = 0;
	struct gv_err err = {0};
	char *save = NULL;

	if (!strcmp(ns, "-"))
		r = (struct report_resource){"v1", "Namespace", NULL, name, uid};
	for (char *t = strcmp(list, "-") ? strtok_r(list, ",", &save) : NULL; t && n < 32;
	     t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		static const char *const st[] = {"pass", "fail", "warn", "error", "skip"};

		if (!eq)
			return 2;
		*eq = '\0';
		memset(&e[n], 0, sizeof(e[n]));
		e[n].rule = t;
		for (int k = 0; k < 5; k++)
			if (!strcmp(eq + 1, st[k]))
				e[n].result = (enum engine_status)k;
		snprintf(msg[n], sizeof(msg[n]), "rule %s: %s", t, eq + 1);
		e[n].message = msg[n];
		e[n].severity = "medium";
		e[n].category = "Live Test";
		e[n].scored = true;
		e[n].seconds = time(NULL);
		e[n].process = REPORT_BACKGROUND_SCAN;
		n++;
	}
	if (report_replace(rs, &r, policy, e, n, &err)) {
		fprintf(stderr, "put: %s\n", err.msg);
		return 1;
	}
	return 0;
}

static int cmd_report(struct kube_client *c, int argc, char **argv)
{
	struct report_options opt = {0};
	struct report_api api = {.client = c};
	struct report_set *rs;
	char line[4096];
	int rc = 0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--split"))
			opt.split = true;
		else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
			opt.chunk_results = strtoul(argv[++i], NULL, 10);
	}
	rs = report_set_new(&opt);
	while (fgets(line, sizeof(line), stdin)) {
		char *f[8] = {0}, *save = NULL;
		int n = 0;
		struct gv_err err = {0};

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "sh ", 3)) {
			fflush(stdout);
			if (system(line + 3))
				printf("sh failed: %s\n", line + 3);
			continue;
		}
		for (char *t = strtok_r(line, " ", &save); t && n < 8; t = strtok_r(NULL, " ", &save))
			f[n++] = t;
		if (!n)
			continue;
		if (!strcmp(f[0], "load")) {
			struct report_stats st = {0};

			if (report_load(rs, &api, &st, &err)) {
				printf("load error: %s\n", err.msg);
				rc = 1;
			} else {
				printf("load read=%zu results=%zu\n", st.read, report_count(rs));
			}
		} else if (!strcmp(f[0], "put") && n == 6) {
			rc |= put(rs, f[1], f[2], f[3], f[4], f[5]);
		} else if (!strcmp(f[0], "bulk") && n == 5) {
			int count = (int)strtol(f[2], NULL, 10);

			for (int i = 0; i < count; i++) {
				char name[32], uid[96], list[32];

				snprintf(name, sizeof(name), "pod-%04d", i);
				snprintf(uid, sizeof(uid), "%s-pod-%04d", f[1], i);
				snprintf(list, sizeof(list), "r=%s", f[4]);
				rc |= put(rs, f[1], name, uid, f[3], list);
			}
		} else if (!strcmp(f[0], "delobj") && n == 3) {
			report_delete_object(rs, strcmp(f[1], "-") ? f[1] : "", f[2]);
		} else if (!strcmp(f[0], "delpol") && n == 2) {
			report_delete_policy(rs, f[1]);
		} else if (!strcmp(f[0], "flush")) {
			struct report_stats st = {0};
			enum gv_code r = report_flush(rs, &api, &st, &err);

			printf("flush created=%zu updated=%zu deleted=%zu unchanged=%zu conflicts=%zu "
			       "failed=%zu rc=%d\n",
			       st.created, st.updated, st.deleted, st.unchanged, st.conflicts, st.failed,
			       (int)r);
			if (r) {
				printf("flush error: %s\n", err.msg);
				rc = 1;
			}
		} else {
			printf("bad command: %s\n", f[0]);
			rc = 2;
		}
		fflush(stdout);
	}
	report_set_free(rs);
	return rc;
}

static const char *ident;

static void on_start(void *ud)
{
	(void)ud;
	printf("leading %s %lld\n", ident, now_ms());
	fflush(stdout);
}

static void on_stop(void *ud)
{
	(void)ud;
	printf("stopped %s %lld\n", ident, now_ms());
	fflush(stdout);
}

static int cmd_lease(const struct kube_config *cfg, char **argv)
{
	struct leader_config lc = {.kube = cfg,
				   .namespace = argv[0],
				   .name = argv[1],
				   .identity = argv[2],
				   .lease_duration_ms = 6000,
				   .renew_deadline_ms = 4000,
				   .retry_period_ms = 1000,
				   .on_start = on_start,
				   .on_stop = on_stop};
	struct leader *l = NULL;
	struct gv_err err = {0};
	sigset_t set;
	int sig = 0;

	ident = argv[2];
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (leader_new(&lc, &l, &err) || leader_start(l, &err)) {
		fprintf(stderr, "lease: %s\n", err.msg);
		return 1;
	}
	printf("started %s %lld\n", ident, now_ms());
	fflush(stdout);
	sigwait(&set, &sig);
	leader_stop(l, true);
	printf("released %s %lld\n", ident, now_ms());
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct kube_config *cfg = NULL;
	struct kube_client *c = NULL;
	struct gv_err err = {0};
	int rc;

	gv_init();
	gv_log_setup(getenv("BG_DEBUG") ? GV_LOG_DEBUG : GV_LOG_WARN, 0);
	if (argc < 2 || kube_config_load(NULL, &cfg, &err)) {
		fprintf(stderr, "usage: bg_driver report|lease ... (%s)\n", err.msg);
		return 2;
	}
	if (!strcmp(argv[1], "lease") && argc == 5) {
		rc = cmd_lease(cfg, argv + 2);
	} else if (!strcmp(argv[1], "report")) {
		c = kube_client_new(cfg, &err);
		if (!c) {
			fprintf(stderr, "client: %s\n", err.msg);
			return 1;
		}
		rc = cmd_report(c, argc - 2, argv + 2);
		kube_client_free(c);
	} else {
		rc = 2;
	}
	kube_config_free(cfg);
	return rc;
}
EOF

[ -f "$LIBGAVEL" ] || abort "no $LIBGAVEL (run make)"
PKGS=$(sed -n 's/^PKGS *:= *//p' Makefile)
# shellcheck disable=SC2086,SC2046
if ! $CC -std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags $PKGS) -o "$WORK/bg_driver" \
	"$WORK/bg_driver.c" "$LIBGAVEL" $(pkg-config --libs $PKGS) -lm -lpthread \
	>"$WORK/cc.log" 2>&1; then
	cat "$WORK/cc.log"
	abort "building the driver"
fi
DRIVER=$WORK/bg_driver
ok "driver built"

# --- control plane ----------------------------------------------------------
if ! e2e/local/up.sh "$WORK/cp" >"$WORK/up.log" 2>&1; then
	tail -n 20 "$WORK/up.log"
	abort "starting the local control plane"
fi
# shellcheck disable=SC1091
. "$WORK/cp/env"
export KUBECONFIG
K() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
ok "control plane up on port $APISERVER_PORT"
if K apply -f manifests/crds/ >"$WORK/crds.log" 2>&1; then ok "CRDs applied"; else
	sed 's/^/     | /' "$WORK/crds.log"
	abort "kubectl apply -f manifests/crds/"
fi
i=0
while ! K get policyreports -A >/dev/null 2>&1 || ! K get clusterpolicyreports >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || abort "the PolicyReport CRDs are not served"
	sleep 0.1
done
for ns in live-a live-b live-le; do K create namespace "$ns" >/dev/null; done

# expect DESC FILE PATTERN: FILE matches the extended regex
expect() {
	if grep -Eq -- "$3" "$2"; then ok "$1"; else
		bad "$1 (wanted /$3/, got:)"
		sed 's/^/     | /' "$2" | head -n 20
	fi
}
# same DESC GOT WANT
same() {
	if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: got '$2', want '$3'"; fi
}
# report ARGS... < COMMANDS: runs the driver, output in $WORK/out
report() {
	"$DRIVER" report "$@" >"$WORK/out" 2>&1
}
names() { # NAMESPACE|-: the report names, sorted, space-separated
	if [ "$1" = - ]; then
		K get clusterpolicyreports -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{end}'
	else
		K -n "$1" get policyreports -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{end}'
	fi
}
# summary_ok KIND NS NAME: summary equals the counts of results
summary_ok() {
	K ${2:+-n "$2"} get "$1" "$3" -o json >"$WORK/obj.json"
	jq -e '(.summary.pass == ([.results[] | select(.result == "pass")] | length)) and
	       (.summary.fail == ([.results[] | select(.result == "fail")] | length)) and
	       (.summary.warn == ([.results[] | select(.result == "warn")] | length)) and
	       (.summary.error == ([.results[] | select(.result == "error")] | length)) and
	       (.summary.skip == ([.results[] | select(.result == "skip")] | length))' \
		"$WORK/obj.json" >/dev/null
}

# --- reports: names, entries, summary ---------------------------------------
report <<'EOF'
put live-a web uid-web require-team check-team=fail,autogen-check-team=pass
put live-a api uid-api require-team check-team=pass
put live-a api uid-api disallow-latest tag=warn
put live-b db uid-db require-team check-team=error
put - live-a uid-ns-a ns-labels owner=skip
flush
EOF
expect "first flush creates 3 reports" "$WORK/out" '^flush created=3 updated=0 deleted=0 .*conflicts=0 failed=0 rc=0$'
same "PolicyReports in live-a" "$(names live-a)" "polr-ns-live-a "
same "PolicyReports in live-b" "$(names live-b)" "polr-ns-live-b "
same "ClusterPolicyReports" "$(names -)" "clusterpolicyreport "
same "summary of polr-ns-live-a" \
	"$(K -n live-a get polr polr-ns-live-a -o 'jsonpath={.summary.pass}/{.summary.fail}/{.summary.warn}/{.summary.error}/{.summary.skip}')" \
	"2/1/1/0/0"
same "summary of clusterpolicyreport" \
	"$(K get cpolr clusterpolicyreport -o 'jsonpath={.summary.skip} {.results[0].resources[0].kind}')" \
	"1 Namespace"
K -n live-a get polr polr-ns-live-a -o json >"$WORK/a.json"
same "a result as written" \
	"$(jq -c '.results[] | select(.resources[0].name == "web" and .rule == "check-team") |
		[.source, .policy, .result, .severity, .category, .scored, .message,
		 .properties.process, (.timestamp.seconds > 0), .resources[0].uid]' "$WORK/a.json")" \
	'["gavel","require-team","fail","medium","Live Test",true,"rule check-team: fail","background scan",true,"uid-web"]'
same "labels" \
	"$(jq -c '.metadata.labels' "$WORK/a.json")" \
	'{"app.kubernetes.io/managed-by":"gavel","gavel.dev/report-chunk":"0","gavel.dev/report-group":"polr-ns-live-a","gavel.dev/report-layout":"namespace"}'
same "results sorted (kind, name, policy, rule)" \
	"$(jq -r '[.results[] | .resources[0].name + "/" + .policy + "/" + .rule] | join(" ")' "$WORK/a.json")" \
	"api/disallow-latest/tag api/require-team/check-team web/require-team/autogen-check-team web/require-team/check-team"

# --- restart: read in place, nothing rewritten ------------------------------
report <<'EOF'
load
flush
put live-a web uid-web require-team check-team=fail,autogen-check-team=pass
flush
EOF
expect "load reads the 3 reports" "$WORK/out" '^load read=3 results=6$'
if [ "$(grep -c '^flush created=0 updated=0 deleted=0 unchanged=3 conflicts=0 failed=0 rc=0$' "$WORK/out")" -eq 1 ] &&
	grep -q '^flush created=0 updated=0 deleted=0 unchanged=0 conflicts=0 failed=0 rc=0$' "$WORK/out"; then
	ok "a restart and an unchanged rescan write nothing"
else
	bad "restart wrote something:"
	sed 's/^/     | /' "$WORK/out"
fi

# --- 409: another writer changes the report between our read and our write --
cat >"$WORK/patch.json" <<'EOF'
[{"op": "add", "path": "/results/-", "value": {"source": "other", "policy": "foreign", "rule": "x",
  "result": "fail", "scored": true, "timestamp": {"seconds": 1, "nanos": 0},
  "resources": [{"apiVersion": "v1", "kind": "Pod", "namespace": "live-a", "name": "zzz", "uid": "uid-zzz"}]}}]
EOF
report <<EOF
load
put live-a web uid-web require-team check-team=pass,autogen-check-team=pass
sh "$KUBECTL" --kubeconfig "$KUBECONFIG" -n live-a patch polr polr-ns-live-a --type=json -p "\$(cat $WORK/patch.json)" >/dev/null
flush
EOF
expect "a 409 makes the writer read again and merge" "$WORK/out" '^flush created=0 updated=1 deleted=0 unchanged=2 conflicts=1 failed=0 rc=0$'
K -n live-a get polr polr-ns-live-a -o json >"$WORK/a.json"
same "after the merge: ours and theirs, no duplicates" \
	"$(jq -r '[.results[] | .resources[0].name + "/" + .policy + "/" + .rule + "=" + .result] | join(" ")' "$WORK/a.json")" \
	"api/disallow-latest/tag=warn api/require-team/check-team=pass web/require-team/autogen-check-team=pass web/require-team/check-team=pass zzz/foreign/x=fail"
if summary_ok polr live-a polr-ns-live-a; then ok "summary recomputed after the merge"; else
	bad "summary after the merge: $(jq -c .summary "$WORK/obj.json")"
fi

# --- chunking ---------------------------------------------------------------
report --chunk 10 <<'EOF'
load
bulk live-b 25 bulk-policy pass
put live-b pod-0003 live-b-pod-0003 bulk-policy r=fail
flush
EOF
expect "25 + 1 results in chunks of 10" "$WORK/out" '^flush created=2 updated=1 deleted=0 .*failed=0 rc=0$'
same "chunk names" "$(names live-b)" "polr-ns-live-b polr-ns-live-b-1 polr-ns-live-b-2 "
same "chunks by label" \
	"$(K -n live-b get polr -l gavel.dev/report-group=polr-ns-live-b -o 'jsonpath={range .items[*]}{.metadata.labels.gavel\.dev/report-chunk}:{.summary.pass}:{.summary.fail}:{.summary.error}{" "}{end}')" \
	"0:8:1:1 1:10:0:0 2:6:0:0 "
n=0
for r in polr-ns-live-b polr-ns-live-b-1 polr-ns-live-b-2; do
	if summary_ok polr live-b "$r"; then n=$((n + 1)); fi
done
same "every chunk's summary matches its results" "$n" 3
same "26 results, each once" \
	"$(K -n live-b get polr -o json | jq '[.items[].results[] | .resources[0].uid + .policy + .rule] | (length|tostring) + " " + (unique|length|tostring)')" \
	'"26 26"'

# --- stale results and objects ----------------------------------------------
report --chunk 10 <<'EOF'
load
delpol bulk-policy
delobj live-a uid-api
flush
EOF
expect "removals: two chunks deleted, two reports updated" "$WORK/out" '^flush created=0 updated=2 deleted=2 .*failed=0 rc=0$'
same "live-b after removing bulk-policy" "$(names live-b)" "polr-ns-live-b "
same "the deleted object's results are gone" \
	"$(K -n live-a get polr polr-ns-live-a -o json | jq -r '[.results[].resources[0].name] | unique | join(" ")')" \
	"web zzz"

# --- layout switch ----------------------------------------------------------
report --split <<'EOF'
load
flush
EOF
expect "switch to split: new reports created, old ones deleted" "$WORK/out" '^flush created=4 updated=0 deleted=3 .*failed=0 rc=0$'
same "split reports in live-a" "$(names live-a)" "polr-ns-live-a-foreign polr-ns-live-a-require-team "
same "split reports in live-b" "$(names live-b)" "polr-ns-live-b-require-team "
same "split cluster reports" "$(names -)" "clusterpolicyreport-ns-labels "
same "layout label" \
	"$(K -n live-a get polr polr-ns-live-a-require-team -o 'jsonpath={.metadata.labels.gavel\.dev/report-layout} {.summary.pass}')" \
	"split 2"
report <<'EOF'
load
flush
EOF
expect "and back: 3 reports again, 4 deleted" "$WORK/out" '^flush created=3 updated=0 deleted=4 .*failed=0 rc=0$'
same "namespace layout again" "$(names live-a)$(names live-b)$(names -)" "polr-ns-live-a polr-ns-live-b clusterpolicyreport "
same "no result lost" \
	"$(K -n live-a get polr polr-ns-live-a -o json | jq -r '[.results[] | .resources[0].name + "/" + .rule] | join(" ")')" \
	"web/autogen-check-team web/check-team zzz/x"

# --- leader election --------------------------------------------------------
start_elector() { # ID -> pid in $EPID, output in $WORK/ID.out
	"$DRIVER" lease live-le gavel-live "$1" >"$WORK/$1.out" 2>&1 &
	EPID=$!
	PIDS="$PIDS $EPID"
}
wait_line() { # FILE PATTERN SECONDS
	i=0
	while ! grep -Eq -- "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le $(($3 * 20)) ] || return 1
		sleep 0.05
	done
}
holder() { K -n live-le get lease gavel-live -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null; }
ms() { date +%s%3N; }

start_elector a
PID_A=$EPID
start_elector b
PID_B=$EPID
if wait_line "$WORK/a.out" '^leading' 10 || wait_line "$WORK/b.out" '^leading' 1; then :; fi
sleep 3
na=$(grep -c '^leading' "$WORK/a.out")
nb=$(grep -c '^leading' "$WORK/b.out")
if [ $((na + nb)) -eq 1 ]; then ok "exactly one of two electors leads ($(holder))"; else
	bad "leaders: a=$na b=$nb"
fi
if [ "$na" -eq 1 ]; then LEAD=a LPID=$PID_A OTHER=b; else LEAD=b LPID=$PID_B OTHER=a; fi
same "the Lease names the leader" "$(holder)" "$LEAD"
same "leaseDurationSeconds" "$(K -n live-le get lease gavel-live -o 'jsonpath={.spec.leaseDurationSeconds}')" 6

t0=$(ms)
kill -9 "$LPID"
if wait_line "$WORK/$OTHER.out" '^leading' 12; then
	dt=$(($(ms) - t0))
	# the lease runs 6 s after the last renewal (at most 1 s before the kill),
	# plus one retry period (1-1.2 s) and request time
	if [ $dt -le 7500 ] && [ $dt -ge 4000 ]; then ok "after SIGKILL $OTHER took over in $dt ms (lease 6 s)"; else
		bad "after SIGKILL $OTHER took over in $dt ms (lease 6 s)"
	fi
	same "the Lease names the new leader" "$(holder)" "$OTHER"
	same "leaseTransitions" "$(K -n live-le get lease gavel-live -o 'jsonpath={.spec.leaseTransitions}')" 1
else
	bad "$OTHER never took over after SIGKILL"
fi

start_elector c
PID_C=$EPID
wait_line "$WORK/c.out" '^started' 5
sleep 2
if grep -q '^leading' "$WORK/c.out"; then bad "c leads while $OTHER holds the Lease"; else ok "a third elector waits"; fi
if [ "$OTHER" = a ]; then OPID=$PID_A; else OPID=$PID_B; fi
t0=$(ms)
kill -TERM "$OPID"
wait_line "$WORK/$OTHER.out" '^released' 5
expect "graceful stop: on_stop, then the Lease is released" "$WORK/$OTHER.out" '^stopped'
if wait_line "$WORK/c.out" '^leading' 5; then
	dt=$(($(ms) - t0))
	if [ $dt -le 3000 ]; then ok "after SIGTERM c took over in $dt ms (well under the 6 s lease)"; else
		bad "after SIGTERM c took over in $dt ms"
	fi
else
	bad "c never took over after SIGTERM"
fi
same "the Lease names c" "$(holder)" c
kill -TERM "$PID_C"
wait_line "$WORK/c.out" '^released' 5
same "released Lease" "$(K -n live-le get lease gavel-live -o 'jsonpath={.spec.holderIdentity}/{.spec.leaseDurationSeconds}')" "/1"

summary
[ "$failed" -eq 0 ]
