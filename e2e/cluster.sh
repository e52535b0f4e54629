#!/usr/bin/env bash
# e2e/cluster.sh: what a Kyverno user sees of gavel in the cluster, against a
# real kube-apiserver v1.20 + etcd on 127.0.0.1 (e2e/local; no kubelet) with
# manifests/crds applied and `gavel serve` in cluster mode.
#
#   bash e2e/cluster.sh        (from the top of the tree, after make)
#
# Cases:
#   status     `kubectl wait --for=condition=Ready` returns for a ClusterPolicy
#              and a Policy; status.ready, rulecount, autogen.rules as Kyverno
#              writes them; a policy that does not compile is Ready=False,
#              reason Failed, with the compile error; the BackgroundScan
#              condition (Scheduled, Suspended, InvalidSchedule); the READY
#              printer column; a status is not written again when nothing
#              changed
# Ends with "N passed, N failed"; exit 1 when a case failed, 2 when the
# environment could not be set up.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

# jp [-n NS] OBJECT JSONPATH: fields of an object.
jp() {
	local ns=()
	if [ "$1" = -n ]; then
		ns=(-n "$2")
		shift 2
	fi
	k get "${ns[@]}" "$1" -o "jsonpath=$2" 2>&1
}

case_status() {
	local f
	f=$(manifest status-policies <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-tag}
spec:
  background: true
  rules:
    - name: image-tag
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate:
        failureAction: Enforce
        message: An image tag is required.
        pattern: {spec: {containers: [{image: "*:*"}]}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: suspended}
spec:
  scanSuspend: true
  rules:
    - name: r
      match: {any: [{resources: {kinds: [ConfigMap]}}]}
      validate: {message: m, pattern: {metadata: {name: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: bad-schedule}
spec:
  scanSchedule: "every tuesday"
  rules:
    - name: r
      match: {any: [{resources: {kinds: [ConfigMap]}}]}
      validate: {message: m, pattern: {metadata: {name: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: broken}
spec:
  rules:
    - name: r
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate: {message: m, deny: {conditions: {any: [{key: a, operator: Sideways, value: b}]}}}
---
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: team, namespace: e2e-status}
spec:
  background: false
  rules:
    - name: cm
      match: {any: [{resources: {kinds: [ConfigMap]}}]}
      validate: {message: m, pattern: {metadata: {name: "?*"}}}
EOF
)
	k create namespace e2e-status >/dev/null
	k apply -f "$f" >/dev/null
	expect_success "status: kubectl wait --for=condition=Ready clusterpolicy" \
		k wait --for=condition=Ready --timeout=20s clusterpolicy/require-tag
	expect_success "status: kubectl wait --for=condition=Ready policy" \
		k wait --for=condition=Ready --timeout=20s -n e2e-status policy/team
	expect_output "status: Ready condition, reason Succeeded" \
		jp clusterpolicy/require-tag \
		'{range .status.conditions[?(@.type=="Ready")]}{.status}/{.reason}/{.message}{end}' \
		-- "True/Succeeded/Ready"
	expect_output "status: ready and rulecount" \
		jp clusterpolicy/require-tag '{.status.ready} {.status.rulecount.validate}' -- "true 1"
	expect_output "status: autogen rules in Kyverno's order" \
		jp clusterpolicy/require-tag '{.status.autogen.rules[*].name}' \
		-- "autogen-image-tag autogen-cronjob-image-tag"
	expect_output "status: autogen kinds" \
		jp clusterpolicy/require-tag '{.status.autogen.rules[1].match.any[0].resources.kinds}' \
		-- "batch/v1/CronJob"
	eventually 20 expect_output "status: BackgroundScan Scheduled" \
		jp clusterpolicy/require-tag \
		'{range .status.conditions[?(@.type=="BackgroundScan")]}{.status}/{.reason}/{.message}{end}' \
		-- "True/Scheduled/last scan"
	eventually 20 expect_output "status: BackgroundScan Suspended" \
		jp clusterpolicy/suspended \
		'{range .status.conditions[?(@.type=="BackgroundScan")]}{.status}/{.reason}/{.message}{end}' \
		-- "False/Suspended/suspended by spec.scanSuspend"
	eventually 20 expect_output "status: BackgroundScan InvalidSchedule" \
		jp clusterpolicy/bad-schedule \
		'{range .status.conditions[?(@.type=="BackgroundScan")]}{.status}/{.reason}/{.message}{end}' \
		-- "False/InvalidSchedule/spec.scanSchedule"
	expect_output "status: background false has no BackgroundScan condition" \
		jp -n e2e-status policy/team '{.status.conditions[*].type}' -- "Ready"
	eventually 20 expect_output "status: a policy that does not compile is Failed" \
		jp clusterpolicy/broken \
		'{.status.ready} {range .status.conditions[?(@.type=="Ready")]}{.status}/{.reason}/{.message}{end}' \
		-- "false False/Failed/" "Sideways"
	expect_output "status: READY printer column" k get clusterpolicy require-tag broken \
		-- "READY" "True" "False"
	expect_output "status: MESSAGE column in -o wide" k get clusterpolicy broken -o wide \
		-- "MESSAGE" "Sideways"
	# Written only when it changes: once scanned and waiting for its next scan, the
	# resourceVersion stays put over several passes.
	local rv1 rv2
	eventually 20 expect_output "status: BackgroundScan names the next scan" \
		jp clusterpolicy/require-tag \
		'{range .status.conditions[?(@.type=="BackgroundScan")]}{.message}{end}' -- "Z, next scan 2"
	rv1=$(jp clusterpolicy/require-tag '{.metadata.resourceVersion}')
	sleep 4
	rv2=$(jp clusterpolicy/require-tag '{.metadata.resourceVersion}')
	expect_success "status: not written again when unchanged" test "$rv1" = "$rv2"
	# A fix makes it Ready, with a new lastTransitionTime.
	k patch clusterpolicy broken --type=json -p \
		'[{"op":"replace","path":"/spec/rules/0/validate/deny/conditions/any/0/operator","value":"Equals"}]' \
		>/dev/null
	expect_success "status: fixed policy becomes Ready" \
		k wait --for=condition=Ready --timeout=20s clusterpolicy/broken
}

main() {
	e2e_setup || exit 2
	e2e_apply_crds || exit 2
	e2e_certs || exit 2
	k create namespace "$GAVEL_NAMESPACE" >/dev/null || exit 2
	gavel_start || exit 2
	log "API server on port $APISERVER_PORT; gavel on $GAVEL_PORT"
	case_status
	summary
}

main "$@"
