#!/usr/bin/env bash
# e2e/background.sh: gavel's background reconciler end to end, against a
# real kube-apiserver v1.20 + etcd on 127.0.0.1 (e2e/local; no kubelet, no
# controller-manager) with manifests/crds applied.
#
#   bash e2e/background.sh        (from the top of the tree, after make)
#
# The reconciler runs inside a small driver, background/tests/
# reconciler_driver.c (built here against build/libgavel.a), which starts
# the snapshot and the reconciler the way `gavel serve` does in cluster
# mode; one case also runs `gavel serve` itself when it has the
# reconciler wired in (--background-scan-interval in its --help).
#
# Cases:
#   gavel scan       objects created before their policies show up in the
#                    reports; Enforce + existing object is reported, not
#                    blocked; background: false never appears; a policy with
#                    a userInfo rule is skipped (not loaded, shown invalid);
#                    a second scan writes nothing (with -o yaml it prints the
#                    reports as stored); --dry-run writes nothing;
#                    gavel status
#   schedules        a per-policy scanInterval of 3 s fires on time; a
#                    6-field scanSchedule (every 5 s) too; a bad scanSchedule
#                    is logged and never scanned; a bad ConfigMap interval is
#                    logged and scans go on
#   suspend/resume   backgroundScanSuspend in the ConfigMap and
#                    spec.scanSuspend stop scans (logged, metric) and
#                    resuming restarts them
#   stale results    deleting an object, deleting a policy
#   restart          a restart keeps the schedule base (an hourly policy is
#                    not scanned again)
#   API server down  restarted while the reconciler runs: failures logged
#                    and retried with backoff, scans resume, every report's
#                    summary counts its results
#   leader election  two replicas: only one scans; killed, the other takes
#                    over within the lease duration
#   split reports    gavel scan --split-policy-report: polr-ns-<ns>-<policy>
#   admission        (gavel serve with the reconciler) an Audit result of an
#                    admission request lands in the same report
#   openreports      gavel serve --reports-api openreports writes an
#                    openreports.io/v1alpha1 Report
# Ends with "N passed, N failed"; exit 1 when a case failed, 2 when the
# environment could not be set up. About two minutes.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh);
# LIBGAVEL (default build/libgavel.a), CC (may carry flags: for a
# sanitizer build, LIBGAVEL=... CC="cc -fsanitize=address,undefined").
# E2E_CASES: the cases to run, by name without case_ (default: all, in order).
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

LIBGAVEL=${LIBGAVEL:-$E2E_ROOT/build/libgavel.a}
CC=${CC:-cc}
PKGS="jansson yaml-0.1 libpcre2-8 libcrypto libssl libcurl libmicrohttpd gnutls"
DRIVER=
declare -A DRIVER_PID=()

# ---- helpers ------------------------------------------------------------------------

build_driver() {
	local cc
	DRIVER=$E2E_DIR/reconciler_driver
	read -r -a cc <<<"$CC" # CC may carry flags ("cc -fsanitize=address")
	# shellcheck disable=SC2046,SC2086 # pkg-config and its output are word-split on purpose
	"${cc[@]}" -std=c11 -D_GNU_SOURCE -I"$E2E_ROOT" -O1 -g \
		$(pkg-config --cflags $PKGS) -o "$DRIVER" \
		"$E2E_ROOT/background/tests/reconciler_driver.c" "$LIBGAVEL" \
		$(pkg-config --libs $PKGS) -lm -lpthread
}

# driver_start NAME ARGS...: a reconciler in the background, log in $E2E_DIR/NAME.log,
# metrics in $E2E_DIR/NAME.metrics.
driver_start() {
	local name=$1
	shift
	"$DRIVER" --kubeconfig "$KUBECONFIG" --namespace "$GAVEL_NAMESPACE" \
		--metrics "$E2E_DIR/$name.metrics" "$@" </dev/null >>"$E2E_DIR/$name.log" 2>&1 &
	DRIVER_PID[$name]=$!
}

driver_stop() { # NAME [SIGNAL]
	local pid=${DRIVER_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill "-${2:-TERM}" "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	unset "DRIVER_PID[$1]"
}

drivers_stop_all() {
	local n
	for n in "${!DRIVER_PID[@]}"; do driver_stop "$n" KILL; done
}

# Every result of gavel's reports, one per line:
#   <namespace>/<name> <policy> <rule> <result> <process>   (namespace "-" when cluster-scoped)
all_results() {
	{
		k get policyreports -A -l app.kubernetes.io/managed-by=gavel -o json
		k get clusterpolicyreports -l app.kubernetes.io/managed-by=gavel -o json
	} | jq -r '.items[] | .results[]? |
		"\(.resources[0].namespace // "-")/\(.resources[0].name) \(.policy) \(.rule) \(.result) \(.properties.process)"'
}

# check_result OBJ POLICY RESULT [PROCESS]: a result about OBJ (ns/name) from POLICY is RESULT.
check_result() {
	local want="$1 $2 "
	OUT=$(all_results 2>&1) || {
		WHY="reports not readable"
		return 1
	}
	if ! grep -q "^${want}[^ ]* $3" <<<"$OUT"; then
		WHY="no '$3' result of $2 about $1"
		return 1
	fi
	if [ -n "${4:-}" ] && ! grep -q "^${want}[^ ]* $3 $4" <<<"$OUT"; then
		WHY="the '$3' result of $2 about $1 is not from '$4'"
		return 1
	fi
	return 0
}

# check_no_result OBJ|- POLICY: no result of POLICY (about OBJ; "-" = about anything).
check_no_result() {
	OUT=$(all_results 2>&1) || {
		WHY="reports not readable"
		return 1
	}
	if [ "$1" = - ]; then
		if grep -q "^[^ ]* $2 " <<<"$OUT"; then
			WHY="$2 has results"
			return 1
		fi
	elif grep -q "^$1 $2 " <<<"$OUT"; then
		WHY="$2 has a result about $1"
		return 1
	fi
	return 0
}

# Last scan of a ClusterPolicy in the scan-state ConfigMap (Unix seconds; 0 = none).
last_scan() {
	local t
	t=$(k -n "$GAVEL_NAMESPACE" get configmap gavel-scan-state -o json 2>/dev/null |
		jq -r --arg k "ClusterPolicy.$1" '.data[$k] // "{}" | fromjson | .lastScan // empty')
	if [ -z "$t" ]; then echo 0; else date -u -d "$t" +%s; fi
}

# check_scanned_since POLICY T: its last scan is later than T.
check_scanned_since() {
	local l
	l=$(last_scan "$1")
	OUT="lastScan of $1: $l (since $2)"
	[ "$l" -gt "$2" ] || {
		WHY="not scanned since $2"
		return 1
	}
}

# check_log FILE SUBSTR: the file has the text.
check_log() {
	OUT=$(tail -n 5 "$1" 2>&1)
	grep -qF -- "$2" "$1" || {
		WHY="no '$2' in $(basename "$1")"
		return 1
	}
}

# check_log_re FILE ERE: a line of the file matches the extended regular expression.
check_log_re() {
	OUT=$(tail -n 5 "$1" 2>&1)
	grep -qE -- "$2" "$1" || {
		WHY="no line matching '$2' in $(basename "$1")"
		return 1
	}
}

check_metric() { # FILE LINE-PREFIX
	OUT=$(grep -F -- "${2%% *}" "$1" 2>/dev/null | head -n 5)
	grep -qF -- "$2" "$1" 2>/dev/null || {
		WHY="no '$2' in the metrics"
		return 1
	}
}

# gavel scan, its summary line in OUT (WHY is read by lib.sh's record).
# shellcheck disable=SC2034
check_scan() {
	if ! run_cmd "$GAVEL" scan --kubeconfig "$KUBECONFIG" "$@"; then
		WHY="gavel scan failed"
		return 1
	fi
	return 0
}

# gavel scan --dry-run -o json prints one JSON array (read back by kubectl
# as a List's items) holding the PolicyReport NAME.
# shellcheck disable=SC2034
check_scan_json() {
	local json
	if ! json=$("$GAVEL" scan --kubeconfig "$KUBECONFIG" --dry-run -o json 2>/dev/null); then
		WHY="gavel scan failed"
		return 1
	fi
	OUT=$(printf '{"apiVersion":"v1","kind":"List","items":%s}' "$json" |
		"$KUBECTL" --kubeconfig "$KUBECONFIG" create --dry-run=client -o name -f - 2>&1) || {
		WHY="kubectl cannot read the output as JSON"
		return 1
	}
	contains_all "policyreport.wgpolicyk8s.io/$1"
}

check_scan_says() { # SUBSTR SCAN-ARGS...
	local want=$1
	shift
	check_scan "$@" || return 1
	contains_all "$want"
}

cm() { # NAME NAMESPACE LABELS-FLOW-MAP
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: %s}\ndata: {k: v}\n' \
		"$1" "$2" "$3" | k apply -f - >/dev/null
}

sa() { # NAME NAMESPACE LABELS-FLOW-MAP
	printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: %s, namespace: %s, labels: %s}\n' \
		"$1" "$2" "$3" | k apply -f - >/dev/null
}

gavel_config() { # KEY=VALUE... -> ConfigMap gavel (created when missing)
	local kv args=()
	for kv in "$@"; do args+=("--from-literal=$kv"); done
	k -n "$GAVEL_NAMESPACE" create configmap gavel "${args[@]}" --dry-run=client -o yaml |
		k apply -f - >/dev/null
}

# label_policy NAME POLICY-KIND NAMESPACE SCHEDULE-FIELDS: a ClusterPolicy requiring
# label team on KIND objects in NAMESPACE, with extra spec fields (flow-map entries).
team_policy() {
	k apply -f - >/dev/null <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: $1}
spec:
  validationFailureAction: Audit
  $4
  rules:
    - name: check-team
      match: {any: [{resources: {kinds: [$2], namespaces: [$3]}}]}
      validate:
        message: "label team is required"
        pattern: {metadata: {labels: {team: "?*"}}}
EOF
}

# ---- gavel scan ----------------------------------------------------------------

case_scan() {
	local ns=bg-scan
	log "gavel scan: existing objects, Enforce, background false, userInfo"
	k create namespace "$ns" >/dev/null
	k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: $ns, labels: {team: a}}
spec: {containers: [{name: c, image: registry.example.com/web:1.0}]}
---
apiVersion: v1
kind: Pod
metadata: {name: bad, namespace: $ns}
spec: {containers: [{name: c, image: registry.example.com/web:1.0, securityContext: {privileged: true}}]}
EOF
	# The policies come after the objects.
	k apply -f - >/dev/null <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  validationFailureAction: Audit
  rules:
    - name: check-team
      match: {any: [{resources: {kinds: [Pod], namespaces: [$ns]}}]}
      validate:
        message: "label team is required"
        pattern: {metadata: {labels: {team: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: no-privileged}
spec:
  validationFailureAction: Enforce
  rules:
    - name: privileged
      match: {any: [{resources: {kinds: [Pod], namespaces: [$ns]}}]}
      validate:
        message: "privileged containers are not allowed"
        pattern:
          spec:
            containers:
              - =(securityContext): {=(privileged): "false"}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: audit-no-background}
spec:
  validationFailureAction: Audit
  background: false
  rules:
    - name: check-owner
      match: {any: [{resources: {kinds: [Pod], namespaces: [$ns]}}]}
      validate:
        message: "label owner is required"
        pattern: {metadata: {labels: {owner: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: userinfo-rule}
spec:
  validationFailureAction: Audit
  rules:
    - name: plain
      match: {any: [{resources: {kinds: [Pod], namespaces: [$ns]}}]}
      validate:
        message: "label team is required"
        pattern: {metadata: {labels: {team: "?*"}}}
    - name: who
      match: {any: [{resources: {kinds: [Pod], namespaces: [$ns]}}]}
      validate:
        message: "not you"
        deny:
          conditions:
            any: [{key: "{{ request.userInfo.username }}", operator: Equals, value: nobody}]
EOF
	expect_output "gavel scan --dry-run writes nothing and prints the reports" \
		"$GAVEL" scan --kubeconfig "$KUBECONFIG" --dry-run -- \
		"kind: PolicyReport" "name: polr-ns-$ns" "[dry run: nothing written]"
	record "gavel scan --dry-run -o json prints one JSON array of the reports" \
		check_scan_json "polr-ns-$ns"
	record "--dry-run left no report behind" check_no_result - require-team
	record "gavel scan" check_scan_says "2 objects (2 evaluated" --log-level warn
	record "an object created before its policy is reported (fail)" \
		check_result "$ns/bad" require-team fail "background scan"
	record "and the compliant one (pass)" check_result "$ns/good" require-team pass
	record "Enforce + existing object is reported" check_result "$ns/bad" no-privileged fail
	expect_success "Enforce + existing object is not blocked (still there)" \
		k -n "$ns" get pod bad
	record "background: false never appears in scan results" \
		check_no_result - audit-no-background
	record "a policy with a userInfo rule is not scanned" check_no_result - userinfo-rule
	expect_output "gavel status shows it invalid, with the reason" \
		"$GAVEL" status --kubeconfig "$KUBECONFIG" -o json -- \
		'"policy": "userinfo-rule"' '"state": "invalid"' "only select variables are allowed"
	expect_output "gavel status: last scan, next scan, counts" \
		"$GAVEL" status --kubeconfig "$KUBECONFIG" -- \
		"POLICY" "NEXT SCAN" "require-team" "1h (global)" "waiting"
	expect_output "gavel status -o json: the counts of the reports" \
		sh -c "'$GAVEL' status --kubeconfig '$KUBECONFIG' -o json | jq -c '.[] | select(.policy == \"require-team\") | .results'" -- \
		'{"pass":1,"fail":1,"warn":0,"error":0,"skip":0}'
	record "a second scan writes nothing and reads the reports' metadata only" \
		check_scan_says "reports: 0 created, 0 updated, 0 deleted, 1 unchanged (0 read)"
	record "and evaluates nothing: the objects and policies are those of the reports" \
		check_scan_says "2 objects (0 evaluated, 2 unchanged"
	expect_output "with -o yaml an unchanged scan prints the reports as stored" \
		"$GAVEL" scan --kubeconfig "$KUBECONFIG" -o yaml -- \
		"2 objects (0 evaluated, 2 unchanged" "kind: PolicyReport" "name: polr-ns-$ns" \
		"policy: require-team" "1 unchanged (1 read)"
	# what changes after a scan that found nothing new is found by the next one
	k -n "$ns" label pod good team- >/dev/null
	record "a label removed since: the report is read and updated" \
		check_scan_says "reports: 0 created, 1 updated, 0 deleted, 0 unchanged (1 read)"
	record "and the scan after it has nothing to evaluate again" \
		check_scan_says "2 objects (0 evaluated, 2 unchanged"
	record "the Pod that lost its label now fails" check_result "$ns/good" require-team fail
	k -n "$ns" label pod good team=a >/dev/null
	k -n "$ns" run brief --image=registry.example.com/web:1.0 --restart=Never >/dev/null
	record "a Pod created since is reported" check_scan_says "1 updated"
	record "(its result)" check_result "$ns/brief" require-team fail
	k -n "$ns" delete pod brief --wait=true >/dev/null
	record "a Pod deleted since: the report is updated" check_scan_says "1 updated"
	record "its results are gone" check_no_result "$ns/brief" require-team
	record "and the others stay" check_result "$ns/good" require-team pass
	k -n "$ns" annotate policyreport "polr-ns-$ns" example.com/note=edited >/dev/null
	record "a report another field manager changed is read in full again" \
		check_scan_says "(1 read)"
	record "and then left alone when it says the same" check_scan_says "0 created, 0 updated"
}

# ---- the reconciler: schedules, suspend, stale results -----------------------------

case_schedules() {
	local t0 t1
	log "reconciler: per-policy scanInterval and scanSchedule"
	k create namespace bg-fast >/dev/null
	k create namespace bg-cron >/dev/null
	k create namespace bg-slow >/dev/null
	team_policy fast ConfigMap bg-fast "scanInterval: 3s"
	team_policy cron ServiceAccount bg-cron 'scanSchedule: "*/5 * * * * ?"'
	team_policy slow Secret bg-slow "scanInterval: 1h"
	team_policy bad-cron ConfigMap bg-fast 'scanSchedule: "61 * * * *"'
	cm early bg-fast '{}'
	k -n bg-slow create secret generic s1 --from-literal=a=b >/dev/null
	driver_start r1 --interval 1h
	eventually 10 expect_result "first scans at once (never scanned): fast" \
		bg-fast/early fast fail
	eventually 10 expect_result "first scans at once: slow (hourly)" bg-slow/s1 slow fail
	eventually 5 expect_log "a bad scanSchedule is logged with the policy and reason" \
		"$E2E_DIR/r1.log" 'policy bad-cron: spec.scanSchedule "61 * * * *": minute "61": 61 is out of range 0-59: the policy is not scanned'
	record "a policy with a bad schedule is never scanned" check_no_result - bad-cron

	t0=$(date +%s)
	cm late bg-fast '{}'
	eventually 5 expect_result "scanInterval 3s: an object created later is reported within 5 s" \
		bg-fast/late fast fail
	t1=$(last_scan fast)
	eventually 5 expect_scanned_since "scanInterval 3s: scanned again within 5 s" fast "$t1"

	sa early bg-cron '{}'
	eventually 7 expect_result "scanSchedule */5 s: an object is reported within 7 s" \
		bg-cron/early cron fail
	OUT="lastScan $(last_scan cron)"
	if [ $(($(last_scan cron) % 5)) -le 1 ]; then
		ok "scanSchedule */5 s: the scan ran at a multiple of 5 s"
	else
		fail "scanSchedule */5 s: the scan ran at a multiple of 5 s" "lastScan not on the schedule"
	fi
	: "$t0"
	gavel_config backgroundScanInterval=soon
	eventually 5 expect_log "a bad backgroundScanInterval is logged (the flag's interval is used)" \
		"$E2E_DIR/r1.log" 'backgroundScanInterval "soon": '
	t1=$(date +%s)
	eventually 6 expect_scanned_since "scans go on meanwhile" fast "$t1"
	gavel_config backgroundScanInterval=1h
}

case_suspend() {
	local t
	log "reconciler: suspend and resume"
	gavel_config backgroundScanInterval=1h backgroundScanSuspend=true
	eventually 5 expect_log "ConfigMap suspension is logged" "$E2E_DIR/r1.log" \
		"every scan schedule suspended (ConfigMap backgroundScanSuspend)"
	eventually 3 expect_metric "gavel_background_scan_suspended is 1" "$E2E_DIR/r1.metrics" \
		'gavel_background_scan_suspended{policy="fast"} 1'
	sleep 1
	t=$(last_scan fast)
	cm during-global bg-fast '{}'
	sleep 6
	record "suspended (ConfigMap): no scan for 6 s" check_no_result bg-fast/during-global fast
	OUT="lastScan of fast $(last_scan fast), before $t"
	if [ "$(last_scan fast)" = "$t" ]; then ok "suspended (ConfigMap): lastScan unchanged"; else
		fail "suspended (ConfigMap): lastScan unchanged" "it moved"; fi
	gavel_config backgroundScanInterval=1h backgroundScanSuspend=false
	eventually 6 expect_result "resumed (ConfigMap): scans again" bg-fast/during-global fast fail
	record "resuming is logged" check_log "$E2E_DIR/r1.log" "every scan schedule resumed"

	k patch clusterpolicy fast --type merge -p '{"spec":{"scanSuspend":true}}' >/dev/null
	eventually 5 expect_log "spec.scanSuspend is logged" "$E2E_DIR/r1.log" \
		"policy fast: scans suspended (spec.scanSuspend)"
	sleep 1
	cm during-spec bg-fast '{}'
	sleep 5
	record "suspended (spec.scanSuspend): no scan" check_no_result bg-fast/during-spec fast
	record "the other policies go on (cron)" check_scanned_since cron "$(($(date +%s) - 7))"
	k patch clusterpolicy fast --type merge -p '{"spec":{"scanSuspend":false}}' >/dev/null
	eventually 6 expect_result "resumed (spec.scanSuspend): scans again" \
		bg-fast/during-spec fast fail
	eventually 3 expect_metric "gavel_background_scan_suspended is 0 again" "$E2E_DIR/r1.metrics" \
		'gavel_background_scan_suspended{policy="fast"} 0'
}

case_stale() {
	log "reconciler: deleted objects and policies"
	k -n bg-fast delete configmap late >/dev/null
	eventually 6 expect_no_result "a deleted object's results are removed" bg-fast/late fast
	record "the others stay" check_result bg-fast/early fast fail
	k delete clusterpolicy cron >/dev/null
	eventually 6 expect_no_result "a deleted policy's results are removed" - cron
}

case_metrics() {
	local f=$E2E_DIR/r1.metrics
	record "metric gavel_background_scan_duration_seconds" check_metric "$f" \
		"gavel_background_scan_duration_seconds_count "
	record "metric gavel_background_scan_resources_processed_total" check_metric "$f" \
		"gavel_background_scan_resources_processed_total "
	record "metric kyverno_policy_results_total{rule_execution_cause=background_scan}" \
		check_metric "$f" 'kyverno_policy_results_total{policy_validation_mode="audit",policy_type="cluster",policy_background_mode="true",policy_namespace="-",policy_name="fast",resource_kind="ConfigMap",resource_namespace="bg-fast",resource_request_operation="create",rule_name="check-team",rule_result="fail",rule_type="validate",rule_execution_cause="background_scan",dry_run="false"}'
	# the driver rewrites its metrics file each cycle: the hourly policy's
	# recorded last scan may reach it a cycle after its results did
	eventually 10 expect_metric "metric gavel_background_scan_last_success_timestamp_seconds" \
		"$f" 'gavel_background_scan_last_success_timestamp_seconds{policy="slow"} '
	record "metric gavel_leader (no election: 1)" check_metric "$f" "gavel_leader 1"
}

case_restart() {
	local before
	log "reconciler: a restart keeps the schedule base"
	before=$(last_scan slow)
	driver_stop r1
	k -n bg-slow create secret generic s2 --from-literal=a=b >/dev/null
	driver_start r2 --interval 1h
	eventually 10 expect_log "restarted" "$E2E_DIR/r2.log" "policies with a recorded last scan"
	sleep 4
	OUT="lastScan of slow: $(last_scan slow), before the restart: $before"
	if [ "$(last_scan slow)" = "$before" ] && [ "$before" != 0 ]; then
		ok "hourly policy not scanned again after the restart"
	else
		fail "hourly policy not scanned again after the restart" "its lastScan moved"
	fi
	record "so the object created meanwhile is not reported yet" check_no_result bg-slow/s2 slow
	expect_output "gavel status: next scan of the hourly policy about an hour after the last" \
		sh -c "'$GAVEL' status --kubeconfig '$KUBECONFIG' -o json | jq -r '.[] | select(.policy == \"slow\") | ((.nextScan | fromdate) - (.lastScan | fromdate) >= 3600 and (.nextScan | fromdate) - (.lastScan | fromdate) <= 3660)'" -- \
		true
	eventually 6 expect_result "the 3 s policy is due again at once after the restart" \
		bg-fast/early fast fail
	driver_stop r2
}

# Restarts kube-apiserver (same command line) after OUTAGE seconds down.
apiserver_restart() { # OUTAGE
	local pid args
	pid=$(cat "$E2E_DIR/cp/kube-apiserver.pid")
	mapfile -d '' args <"/proc/$pid/cmdline"
	kill "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	sleep "$1"
	"${args[@]}" </dev/null >>"$E2E_DIR/cp/kube-apiserver.log" 2>&1 &
	echo $! >"$E2E_DIR/cp/kube-apiserver.pid"
	for _ in $(seq 1 240); do
		[ "$(k get --raw=/readyz 2>/dev/null)" = ok ] && return 0
		sleep 0.5
	done
	return 1
}

# Every report's summary counts its own results (no report half-written).
check_summaries() {
	OUT=$({
		k get policyreports -A -l app.kubernetes.io/managed-by=gavel -o json
		k get clusterpolicyreports -l app.kubernetes.io/managed-by=gavel -o json
	} | jq -r '.items[] | select((.summary.pass + .summary.fail + .summary.warn +
		.summary.error + .summary.skip) != (.results | length)) | .metadata.name' 2>&1)
	[ -z "$OUT" ] || {
		WHY="summaries that do not count their results"
		return 1
	}
}

case_apiserver_restart() {
	log "reconciler: the API server restarts"
	driver_start r3 --interval 1h
	eventually 10 expect_log "reconciler up" "$E2E_DIR/r3.log" "background: scanned"
	if ! apiserver_restart 6; then
		fail "the API server comes back" "not ready after 120 s"
		return 0
	fi
	ok "the API server was down 6 s and is back"
	cm after-outage bg-fast '{}'
	eventually 30 expect_result "scans resume after the outage" bg-fast/after-outage fast fail
	record "the failures were logged and retried with backoff" check_log "$E2E_DIR/r3.log" \
		"retrying in"
	record "no report half-written: every summary counts its results" check_summaries
	driver_stop r3
}

case_leader() {
	local a=le-a b=le-b leader other t0 t1 ms
	log "reconciler: leader election (lease 4 s)"
	driver_start "$a" --leader-elect --identity "$a" --lease-ms 4000 --renew-ms 3000 --retry-ms 1000
	driver_start "$b" --leader-elect --identity "$b" --lease-ms 4000 --renew-ms 3000 --retry-ms 1000
	eventually 10 expect_output "a leader is elected" \
		sh -c "grep -l 'this replica now scans' '$E2E_DIR/$a.log' '$E2E_DIR/$b.log' 2>/dev/null" -- "log"
	sleep 2
	leader=
	grep -q 'this replica now scans' "$E2E_DIR/$a.log" && leader=$a
	if grep -q 'this replica now scans' "$E2E_DIR/$b.log"; then
		if [ -n "$leader" ]; then
			OUT=$(grep -h 'now scans' "$E2E_DIR/$a.log" "$E2E_DIR/$b.log")
			fail "only one replica scans" "both do"
			return 0
		fi
		leader=$b
	fi
	other=$a
	[ "$leader" = "$a" ] && other=$b
	ok "only one replica scans ($leader)"
	expect_output "the Lease names it" k -n "$GAVEL_NAMESPACE" get lease gavel \
		-o 'jsonpath={.spec.holderIdentity}' -- "$leader"
	record "the other does not scan" sh -c "! grep -q 'background: scanned' '$E2E_DIR/$other.log'"
	cm le-1 bg-fast '{}'
	eventually 6 expect_result "the leader scans" bg-fast/le-1 fast fail
	record "metric gavel_leader 1 on the leader" check_metric "$E2E_DIR/$leader.metrics" "gavel_leader 1"
	record "metric gavel_leader 0 on the other" check_metric "$E2E_DIR/$other.metrics" "gavel_leader 0"

	t0=$(now_ms)
	driver_stop "$leader" KILL
	cm le-2 bg-fast '{}'
	eventually 8 expect_log "the other takes over after the leader is killed" \
		"$E2E_DIR/$other.log" "this replica now scans"
	t1=$(now_ms)
	ms=$((t1 - t0))
	OUT="took over after ${ms} ms"
	if [ "$ms" -le 6500 ]; then
		ok "takeover within the lease duration (+ retry period): ${ms} ms"
	else
		fail "takeover within the lease duration (+ retry period)" "${ms} ms"
	fi
	eventually 8 expect_result "the new leader scans" bg-fast/le-2 fast fail
	driver_stop "$other"
}

case_split() {
	local ns=bg-scan
	log "gavel scan --split-policy-report"
	record "gavel scan --split-policy-report" check_scan --split-policy-report
	expect_output "split report names: polr-ns-<namespace>-<policy>" \
		k -n "$ns" get policyreports -o name -- \
		"policyreport.wgpolicyk8s.io/polr-ns-$ns-require-team" \
		"policyreport.wgpolicyk8s.io/polr-ns-$ns-no-privileged"
	record "the namespace layout's report is gone" \
		sh -c "! $KUBECTL --request-timeout=20s -n $ns get policyreport polr-ns-$ns >/dev/null 2>&1"
	record "results moved, not lost" check_result "$ns/bad" require-team fail
	record "gavel scan (namespace layout again)" check_scan
	expect_output "and back: polr-ns-<namespace>" k -n "$ns" get policyreports -o name -- \
		"policyreport.wgpolicyk8s.io/polr-ns-$ns"
}

case_admission() {
	local ns=bg-adm f
	if ! "$GAVEL" serve --help 2>&1 | grep -q -- --background-scan-interval; then
		skip "admission results in the same reports" "gavel serve has no reconciler wired in yet"
		return 0
	fi
	log "gavel serve: admission results into the reports"
	if ! { e2e_certs && gavel_start --manage-certs=false --background-scan-interval 1h &&
		webhook_register Ignore && webhook_wait_effective; }; then
		fail "gavel serve with the reconciler starts" "see $E2E_DIR/gavel.log"
		return 0
	fi
	ok "gavel serve with the reconciler starts"
	ns_create "$ns"
	team_policy adm-team Pod "$ns" "scanInterval: 1h"
	# Its own scan, not any (the 3 s policy fast is scanned too): the Pod
	# below must come after it, or that scan reports it before the admission does.
	eventually 10 expect_log_re "the new policy is scanned at once (nothing there yet)" \
		"$E2E_DIR/gavel.log" 'background: scanned [0-9]+ polic(y|ies) \(([^)]*, )?adm-team[,)]'
	f=$(manifest adm-pod <<EOF
apiVersion: v1
kind: Pod
metadata: {name: no-team, namespace: $ns}
spec: {containers: [{name: c, image: registry.example.com/web:1.0}]}
EOF
)
	eventually 10 expect_allowed "Audit: a violating Pod is admitted" k create -f "$f"
	eventually 8 expect_result "its admission result lands in the namespace's report" \
		"$ns/no-team" adm-team fail "admission review"
	gavel_stop
	k delete validatingwebhookconfiguration "$GAVEL_WEBHOOK" --ignore-not-found >/dev/null
}

# check_resource_report NS POD POLICY RESULT [PROCESS]: the PolicyReport named by
# the Pod's uid, in its namespace, names the Pod in scope and ownerReferences, is
# labelled as Kyverno's, and holds a RESULT of POLICY with source kyverno (and
# PROCESS) and no `resources`.
check_resource_report() {
	local uid
	uid=$(k -n "$1" get pod "$2" -o jsonpath='{.metadata.uid}' 2>/dev/null) || uid=
	if [ -z "$uid" ]; then
		WHY="no Pod $1/$2"
		return 1
	fi
	OUT=$(k -n "$1" get policyreport "$uid" -o json 2>&1) || {
		WHY="no PolicyReport $1/$uid"
		return 1
	}
	if ! jq -e --arg uid "$uid" --arg name "$2" --arg p "$3" --arg r "$4" --arg proc "${5:-}" '
		.metadata.ownerReferences[0].uid == $uid and .metadata.ownerReferences[0].kind == "Pod" and
		.scope.kind == "Pod" and .scope.name == $name and .scope.uid == $uid and
		.metadata.labels["app.kubernetes.io/managed-by"] == "kyverno" and
		any(.results[]; .policy == $p and .result == $r and .source == "kyverno" and
			.resources == null and ($proc == "" or .properties.process == $proc))' \
		<<<"$OUT" >/dev/null; then
		WHY="PolicyReport $1/$uid: $(jq -c '{scope, results}' <<<"$OUT" 2>&1)"
		return 1
	fi
}

# check_no_report NS NAME: no PolicyReport NS/NAME (WHY is read by lib.sh's record).
# shellcheck disable=SC2034
check_no_report() {
	if k -n "$1" get policyreport "$2" >/dev/null 2>&1; then
		WHY="PolicyReport $1/$2 still there"
		return 1
	fi
}

case_resource_layout() {
	local ns=bg-res f uid
	log "gavel serve --report-layout resource --report-source kyverno"
	if ! { e2e_certs && gavel_start --manage-certs=false --background-scan-interval 1h \
		--report-layout resource --report-source kyverno &&
		webhook_register Ignore && webhook_wait_effective; }; then
		fail "gavel serve with Kyverno's report layout starts" "see $E2E_DIR/gavel.log"
		return 0
	fi
	ok "gavel serve with Kyverno's report layout starts"
	ns_create "$ns"
	team_policy res-team Pod "$ns" "scanInterval: 3s"
	k apply -f - >/dev/null <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: res-enforce}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: no-latest
      match: {any: [{resources: {kinds: [Pod], namespaces: [$ns]}}]}
      validate:
        message: "the latest tag is not allowed"
        pattern: {spec: {containers: [{image: "!*:latest"}]}}
EOF
	eventually 10 expect_log_re "the new policy is scanned at once" \
		"$E2E_DIR/gavel.log" 'background: scanned [0-9]+ polic(y|ies) \(([^)]*, )?res-team[,)]'
	f=$(manifest res-pod <<EOF
apiVersion: v1
kind: Pod
metadata: {name: no-team, namespace: $ns}
spec: {containers: [{name: c, image: registry.example.com/web:1.0}]}
EOF
)
	# Another Pod stays: deleted last, it is the case of a kind with no object
	# left in the cluster, which a scan does not list (known empty).
	k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: keeper, namespace: $ns, labels: {team: a}}
spec: {containers: [{name: c, image: registry.example.com/web:1.0}]}
EOF
	eventually 10 expect_allowed "Audit: a violating Pod is admitted" k create -f "$f"
	eventually 10 expect_resource_report "one PolicyReport named by the Pod's uid, owned by it" \
		"$ns" no-team res-team fail
	eventually 10 expect_resource_report "the passing Enforce rule of its admission is reported" \
		"$ns" no-team res-enforce pass "admission review"
	uid=$(k -n "$ns" get pod no-team -o jsonpath='{.metadata.uid}')
	k -n "$ns" delete pod no-team --grace-period=0 --force >/dev/null 2>&1
	eventually 30 expect_no_report "the Pod deleted: the next scan deletes its report (no GC here)" \
		"$ns" "$uid"
	uid=$(k -n "$ns" get pod keeper -o jsonpath='{.metadata.uid}')
	k -n "$ns" delete pod keeper --grace-period=0 --force >/dev/null 2>&1
	eventually 30 expect_no_report "the last Pod of the cluster deleted: its report goes too" \
		"$ns" "$uid"
	gavel_stop
	k delete validatingwebhookconfiguration "$GAVEL_WEBHOOK" --ignore-not-found >/dev/null
}

# check_openreport NS POD POLICY RESULT: the openreports.io Report polr-ns-NS holds a
# RESULT of POLICY for POD (WHY is read by lib.sh's record).
# shellcheck disable=SC2034
check_openreport() {
	OUT=$(k -n "$1" get reports.openreports.io "polr-ns-$1" -o json 2>&1) || {
		WHY="no Report $1/polr-ns-$1: $OUT"
		return 1
	}
	if ! jq -e --arg pod "$2" --arg p "$3" --arg r "$4" '
		.apiVersion == "openreports.io/v1alpha1" and .kind == "Report" and
		any(.results[]; .policy == $p and .result == $r and .resources[0].name == $pod)' \
		<<<"$OUT" >/dev/null; then
		WHY="Report $1/polr-ns-$1: $(jq -c '{kind, results}' <<<"$OUT" 2>&1)"
		return 1
	fi
}

case_openreports() {
	local ns=bg-orep
	log "gavel serve --reports-api openreports"
	if ! k wait --for condition=established --timeout=60s \
		crd/reports.openreports.io crd/clusterreports.openreports.io >/dev/null; then
		fail "the openreports.io CRDs are established" "kubectl wait failed"
		return 0
	fi
	if ! { e2e_certs && gavel_start --manage-certs=false --background-scan-interval 1h \
		--reports-api openreports; }; then
		fail "gavel serve --reports-api openreports starts" "see $E2E_DIR/gavel.log"
		return 0
	fi
	ok "gavel serve --reports-api openreports starts"
	ns_create "$ns"
	k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: no-team, namespace: $ns}
spec: {containers: [{name: c, image: registry.example.com/web:1.0}]}
EOF
	team_policy orep-team Pod "$ns" "scanInterval: 1h"
	eventually 15 expect_openreport "a failing Pod is reported in an openreports.io Report" \
		"$ns" no-team orep-team fail
	gavel_stop
	record "gavel serve rejects an unknown --reports-api" \
		sh -c "! $GAVEL serve --reports-api policyreports >/dev/null 2>&1"
}

main() {
	local n
	if [ ! -f "$LIBGAVEL" ]; then
		echo "e2e/background.sh: $LIBGAVEL not found (run make first)" >&2
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	if ! { e2e_setup && e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
		build_driver; }; then
		log "setup failed"
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	trap 'drivers_stop_all; e2e_cleanup' EXIT
	log "API server on port $APISERVER_PORT; driver $DRIVER"
	for n in ${E2E_CASES:-scan schedules suspend stale metrics restart apiserver_restart \
		leader split admission resource_layout openreports}; do
		"case_$n"
	done
	# Drivers still running: SIGTERM, so that in a sanitizer build
	# LeakSanitizer runs at their exit, before summary reads their logs.
	for n in "${!DRIVER_PID[@]}"; do driver_stop "$n"; done
	summary
}

main "$@"
