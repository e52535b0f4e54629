#!/usr/bin/env bash
# e2e/vpscan.sh: policies.kyverno.io ValidatingPolicy and
# NamespacedValidatingPolicy in the background scans and PolicyReports of
# `gavel serve` (and `gavel scan`), end to end against a real kube-apiserver
# v1.20 + etcd on 127.0.0.1 (e2e/local; no kubelet) with manifests/crds
# applied.
#
#   bash e2e/vpscan.sh          (from the top of the tree, after make)
#
# Cases: an Audit ValidatingPolicy reports a failing existing Pod (source
# KyvernoValidatingPolicy, no rule); a policy with
# evaluation.admission.enabled: false is absent from admission and present in
# the report; a NamespacedValidatingPolicy is reported only in its namespace;
# a ClusterPolicy and ValidatingPolicies share one report per namespace and a
# scan of one keeps the others' results; a changed policy is evaluated again,
# a deleted one's results go; spec.scanInterval of a few seconds fires on a
# ValidatingPolicy (an existing object's change reaches the report),
# spec.scanSuspend: true stops it and false resumes it (the BackgroundScan
# condition in status.conditionStatus says so); a cycle with nothing
# changed evaluates nothing; `gavel status` lists the ValidatingPolicies with
# their schedules; `gavel scan --dry-run` reports them too; a
# ValidatingAdmissionPolicy (+ binding) in background when the API server
# serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (not 1.20:
# skipped).
# Outcomes are awaited by polling, never timed. Ends with "N passed, N
# failed"; exit status 1 when a case failed, 2 when the environment could
# not be set up.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

NSA=e2e-vps-a
NSB=e2e-vps-b

# pod NAME NAMESPACE LABELS: a Pod manifest (LABELS a flow map).
pod() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $2, labels: $3}
spec:
  containers:
    - name: main
      image: registry.example.com/web:1.0
EOF
}

# Every result of gavel's reports, one per line:
#   <report> <object ns>/<name> <source> <policy> <rule or -> <result> <message>
all_results() {
	{
		k get policyreports -A -l app.kubernetes.io/managed-by=gavel -o json
		k get clusterpolicyreports -l app.kubernetes.io/managed-by=gavel -o json
	} | jq -r '.items[] | .metadata.name as $r | .results[]? |
		"\($r) \(.resources[0].namespace // "-")/\(.resources[0].name) \(.source) \(.policy) \(.rule // "-") \(.result) \(.message // "")"'
}

# check_results LINE...: every LINE is the start of some line of all_results.
check_results() {
	local want
	OUT=$(all_results 2>&1) || {
		WHY="reports not readable"
		return 1
	}
	for want in "$@"; do
		if ! grep -qF -- "$want" <<<"$OUT"; then
			WHY="no result line starting with: $want"
			return 1
		fi
	done
}

# check_no_result TEXT: no line of all_results contains TEXT.
check_no_result() {
	OUT=$(all_results 2>&1) || {
		WHY="reports not readable"
		return 1
	}
	if grep -qF -- "$1" <<<"$OUT"; then
		WHY="a result line contains: $1"
		return 1
	fi
}

VP=KyvernoValidatingPolicy
HAS_TEAM="has(object.metadata.labels) && 'team' in object.metadata.labels"
HAS_TIER="has(object.metadata.labels) && 'tier' in object.metadata.labels"
NOT_RED="!has(object.metadata.labels) || !('color' in object.metadata.labels) || object.metadata.labels.color != 'red'"

# Objects that exist before any policy: background scans find them.
existing_objects() {
	local f
	ns_create "$NSA" && ns_create "$NSB" || return 1
	for spec in "no-team $NSA {app: x}" "teamed $NSA {team: e2e, tier: web}" \
		"bg-target $NSA {team: e2e, tier: web}" "painted $NSA {team: e2e, tier: web, color: blue}" \
		"no-tier-a $NSA {team: e2e}" "no-tier-b $NSB {team: e2e}"; do
		# shellcheck disable=SC2086 # word splitting wanted: name, namespace, labels
		set -- $spec
		f=$(pod "$1" "$2" "${*:3}" | manifest "pod-$1-$2")
		k create -f "$f" >/dev/null || return 1
	done
}

case_audit_and_background_only() {
	local f
	log "Audit and background-only ValidatingPolicies"
	f=$(vpol ValidatingPolicy vps-audit-team "" "[Audit]" "$HAS_TEAM" "label team is required" |
		manifest vps-audit)
	expect_allowed "Audit ValidatingPolicy created" k apply -f "$f"
	f=$(vpol ValidatingPolicy vps-bg-only "" "[Deny]" "object.metadata.name != 'bg-target'" \
		"bg-target is not allowed" "  evaluation: {admission: {enabled: false}}" |
		manifest vps-bg)
	expect_allowed "background-only ValidatingPolicy created" k apply -f "$f"
	eventually 90 expect_results "Audit: the failing existing Pod is in the namespace's report" \
		"polr-ns-$NSA $NSA/no-team $VP vps-audit-team - fail label team is required" \
		"polr-ns-$NSA $NSA/teamed $VP vps-audit-team - pass"
	eventually 60 expect_results "admission.enabled false: present in the report" \
		"polr-ns-$NSA $NSA/bg-target $VP vps-bg-only - fail bg-target is not allowed"
	f=$(vpol ValidatingPolicy vps-deny-forbidden "" "[Deny]" \
		"object.metadata.name != 'forbidden'" "forbidden is not allowed" | manifest vps-deny)
	expect_allowed "Deny ValidatingPolicy created" k apply -f "$f"
	f=$(pod forbidden "$NSB" '{team: e2e}' | manifest pod-forbidden)
	eventually 20 expect_denied "admission judges ValidatingPolicies (Deny blocks)" \
		k create -f "$f" -- "Policy vps-deny-forbidden failed: forbidden is not allowed"
	f=$(pod bg-target "$NSB" '{team: e2e}' | manifest pod-bg-target-b)
	expect_allowed "admission.enabled false: absent from admission (Deny policy, Pod admitted)" \
		k create -f "$f"
}

case_namespaced() {
	local f
	log "NamespacedValidatingPolicy"
	f=$(vpol NamespacedValidatingPolicy nvps-tier "$NSB" "[Audit]" "$HAS_TIER" \
		"label tier is required" | manifest nvps)
	expect_allowed "NamespacedValidatingPolicy created" k apply -f "$f"
	eventually 90 expect_results "reported in its namespace as namespace/name" \
		"polr-ns-$NSB $NSB/no-tier-b $VP $NSB/nvps-tier - fail label tier is required"
	expect_no_result "not reported in another namespace" "$NSA/no-tier-a $VP $NSB/nvps-tier"
}

case_mixed() {
	local f
	log "ClusterPolicy and ValidatingPolicies in one report"
	f=$(manifest cpol-team <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: cpol-require-team}
spec:
  validationFailureAction: Audit
  background: true
  rules:
    - name: team
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate:
        message: "legacy: label team is required"
        pattern: {metadata: {labels: {team: "?*"}}}
EOF
)
	expect_allowed "ClusterPolicy created" k apply -f "$f"
	eventually 90 expect_results "one report per namespace holds both kinds" \
		"polr-ns-$NSA $NSA/no-team gavel cpol-require-team team fail" \
		"polr-ns-$NSA $NSA/no-team $VP vps-audit-team - fail"
	expect_results "the ClusterPolicy's scan kept the ValidatingPolicies' results" \
		"polr-ns-$NSA $NSA/bg-target $VP vps-bg-only - fail"
}

case_changed_and_deleted() {
	local f
	log "a changed ValidatingPolicy is evaluated again, a deleted one's results go"
	f=$(vpol ValidatingPolicy vps-audit-team "" "[Audit]" "$HAS_TEAM" "a team label, please" |
		manifest vps-audit-2)
	expect_allowed "Audit ValidatingPolicy changed" k apply -f "$f"
	eventually 90 expect_results "its new message is in the report" \
		"polr-ns-$NSA $NSA/no-team $VP vps-audit-team - fail a team label, please"
	expect_allowed "background-only ValidatingPolicy deleted" \
		k delete validatingpolicy vps-bg-only
	eventually 90 expect_no_result "its results are gone" "$VP vps-bg-only "
	expect_results "the other policies' results stay" \
		"polr-ns-$NSA $NSA/no-team gavel cpol-require-team team fail" \
		"polr-ns-$NSA $NSA/no-team $VP vps-audit-team - fail"
}

# set_suspend BOOL
set_suspend() {
	k patch validatingpolicy vps-interval --type merge -p "{\"spec\":{\"scanSuspend\":$1}}"
}

case_interval() {
	local f
	log "spec.scanInterval, spec.scanSuspend"
	f=$(vpol ValidatingPolicy vps-interval "" "[Audit]" "$NOT_RED" "red is not allowed" \
		"  scanInterval: 3s" | manifest vps-interval)
	expect_allowed "ValidatingPolicy with scanInterval 3s created" k apply -f "$f"
	eventually 90 expect_results "first scan" \
		"polr-ns-$NSA $NSA/painted $VP vps-interval - pass"
	expect_allowed "an existing Pod changed (color: red)" \
		k -n "$NSA" label pod painted color=red --overwrite
	eventually 90 expect_results "the interval fired: the change is in the report" \
		"polr-ns-$NSA $NSA/painted $VP vps-interval - fail red is not allowed"
	eventually 60 expect_success "an unchanged cycle evaluates nothing" \
		grep -qE 'scanned 1 policy \(vps-interval\): [0-9]+ objects, 0 evaluated,' \
		"$E2E_DIR/gavel.log"
	expect_allowed "scanSuspend: true" set_suspend true
	eventually 60 expect_output "suspension logged" cat "$E2E_DIR/gavel.log" -- \
		"policy vps-interval: scans suspended (spec.scanSuspend)"
	eventually 60 expect_output "status: BackgroundScan condition Suspended" \
		k get validatingpolicy vps-interval -o \
		'jsonpath={.status.conditionStatus.conditions[?(@.type=="BackgroundScan")].reason}' -- \
		Suspended
	eventually 60 expect_output "gavel status: suspended by the policy" \
		"$GAVEL" status --kubeconfig "$KUBECONFIG" --namespace "$GAVEL_NAMESPACE" -o json -- \
		'"policy": "vps-interval"' '"suspendedBy": "policy"'
	expect_allowed "the Pod changed again (color: green)" \
		k -n "$NSA" label pod painted color=green --overwrite
	# several intervals go by: a suspended policy is not scanned
	sleep 10
	expect_results "suspended: the report still holds the old result" \
		"polr-ns-$NSA $NSA/painted $VP vps-interval - fail red is not allowed"
	expect_allowed "scanSuspend: false" set_suspend false
	eventually 90 expect_results "resumed: the change reaches the report" \
		"polr-ns-$NSA $NSA/painted $VP vps-interval - pass"
	eventually 60 expect_output "status: BackgroundScan condition Scheduled again" \
		k get validatingpolicy vps-interval -o \
		'jsonpath={.status.conditionStatus.conditions[?(@.type=="BackgroundScan")].reason}' -- \
		Scheduled
}

case_status_and_scan() {
	log "gavel status and gavel scan"
	expect_output "gavel status lists the ValidatingPolicies with their schedules" \
		"$GAVEL" status --kubeconfig "$KUBECONFIG" --namespace "$GAVEL_NAMESPACE" -- \
		"ValidatingPolicy/vps-interval" "3s" "ValidatingPolicy/vps-audit-team" \
		"1h (global)" "NamespacedValidatingPolicy/$NSB/nvps-tier"
	expect_output "gavel status -o json: kind and schedule source" \
		"$GAVEL" status --kubeconfig "$KUBECONFIG" --namespace "$GAVEL_NAMESPACE" -o json -- \
		'"kind": "ValidatingPolicy"' '"source": "spec.scanInterval"'
	expect_output "gavel scan --dry-run reports the ValidatingPolicies" \
		"$GAVEL" scan --kubeconfig "$KUBECONFIG" --namespace "$GAVEL_NAMESPACE" --dry-run \
		-o json -- "\"source\": \"$VP\"" '"policy": "vps-audit-team"' \
		"\"policy\": \"$NSB/nvps-tier\""
}

case_vap() {
	log "ValidatingAdmissionPolicy in background"
	if ! k api-resources --api-group=admissionregistration.k8s.io -o name 2>/dev/null |
		grep -q '^validatingadmissionpolicies'; then
		skip "ValidatingAdmissionPolicy reported in background" \
			"the API server does not serve admissionregistration.k8s.io ValidatingAdmissionPolicy"
		return 0
	fi
	local f v
	# the version the API server serves: v1 from 1.30, v1beta1 or v1alpha1 before
	v=$(k api-resources --api-group=admissionregistration.k8s.io --no-headers 2>/dev/null |
		awk '$1 == "validatingadmissionpolicies" { print $(NF - 2); exit }')
	f=$(sed "s|admissionregistration.k8s.io/v1\$|${v:-admissionregistration.k8s.io/v1}|" <<'EOF' | manifest vap-team
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap-require-team}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [pods]
  validations:
    - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
      message: "vap: label team is required"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vap-require-team-binding}
spec:
  policyName: vap-require-team
  validationActions: [Audit]
EOF
)
	expect_allowed "ValidatingAdmissionPolicy and binding created" k apply -f "$f"
	eventually 120 expect_results "ValidatingAdmissionPolicy reported in background" \
		"polr-ns-$NSA $NSA/no-team ValidatingAdmissionPolicy vap-require-team vap-require-team fail"
}

main() {
	if ! { e2e_setup && e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
		existing_objects && e2e_certs &&
		gavel_start --manage-certs=false --background-scan-interval 1h &&
		webhook_register Fail && webhook_wait_effective; }; then
		log "setup failed"
		[ -z "$E2E_DIR" ] || [ ! -s "$E2E_DIR/gavel.log" ] || tail -n 20 "$E2E_DIR/gavel.log" >&2
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	log "gavel serving on https://127.0.0.1:$GAVEL_PORT (API server on port $APISERVER_PORT)"
	case_audit_and_background_only
	case_namespaced
	case_mixed
	case_changed_and_deleted
	case_interval
	case_status_and_scan
	case_vap
	summary
}

expect_results() { record "$1" check_results "${@:2}"; }
expect_no_result() { record "$1" check_no_result "${@:2}"; }

main "$@"
