#!/usr/bin/env bash
# cases.sh: gavel's end-to-end cases, written against kubectl only. Runs against
# the current kubectl context, where gavel is installed (manifests/) and the
# sample policies (manifests/samples/policies) are applied; run.sh sets that up
# on kind. Ends with "N passed, N failed"; exit status 1 if any case failed.
#
#   KUBECONFIG=... e2e/kind/cases.sh
#
# Env: KUBECTL (default kubectl), REPORT_TIMEOUT (seconds to wait for background
# reports, default 180), KEEP_OBJECTS=1 (leave the test namespaces and policies).
# The CronJob cases need batch/v1 CronJob (1.21+; Kyverno's autogen rules,
# like gavel's, match batch/v1/CronJob only): skipped where it is not served.
# shellcheck source-path=SCRIPTDIR
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

REPORT_TIMEOUT=${REPORT_TIMEOUT:-180}
# Test namespaces and cluster-scoped policies, deleted at the end.
NAMESPACES=(e2e-workloads e2e-pol-a e2e-pol-b e2e-strict e2e-lax e2e-live e2e-bg)
CLUSTER_POLICIES=(e2e-nssel e2e-live e2e-bg-require-owner)

cleanup() {
	if [ "${KEEP_OBJECTS:-0}" != 1 ]; then
		k delete clusterpolicy "${CLUSTER_POLICIES[@]}" --ignore-not-found --wait=false >/dev/null 2>&1
		k delete namespace "${NAMESPACES[@]}" --ignore-not-found --wait=false >/dev/null 2>&1
	fi
	rm -rf "$E2E_TMP"
}
trap cleanup EXIT

dry() { k apply --dry-run=server -f "$1"; }

# A Pod (or Pod template) body: name, labels (flow map), image, privileged.
pod_spec() {
	cat <<EOF
      containers:
        - name: main
          image: $1
          securityContext:
            privileged: $2
EOF
}

setup() {
	local ns
	HAVE_CRONJOB=1
	if ! k get --raw /apis/batch/v1 2>/dev/null | grep -q '"kind":"CronJob"'; then
		HAVE_CRONJOB=
	fi
	log "creating test namespaces"
	for ns in "${NAMESPACES[@]}"; do
		k create namespace "$ns" >/dev/null 2>&1 || true
	done
	k label namespace e2e-strict gavel-e2e/strict=true --overwrite >/dev/null
}

# --- Pods, Deployments, CronJobs against the sample policies ----------------
case_workloads() {
	local f
	log "workloads vs the sample policies (dry-run=server)"

	f=$(manifest pod-good <<EOF
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: e2e-workloads, labels: {team: e2e}}
spec:
$(pod_spec registry.k8s.io/pause:3.9 false | sed 's/^    //')
EOF
)
	expect "compliant Pod is admitted" is_allowed dry "$f"

	f=$(manifest pod-no-team <<EOF
apiVersion: v1
kind: Pod
metadata: {name: no-team, namespace: e2e-workloads}
spec:
$(pod_spec registry.k8s.io/pause:3.9 false | sed 's/^    //')
EOF
)
	expect "Pod without team label is denied (require-team-label)" is_denied \
		"require-team-label" "check-team" "label team is required" -- dry "$f"

	f=$(manifest pod-privileged <<EOF
apiVersion: v1
kind: Pod
metadata: {name: privileged, namespace: e2e-workloads, labels: {team: e2e}}
spec:
$(pod_spec registry.k8s.io/pause:3.9 true | sed 's/^    //')
EOF
)
	expect "privileged Pod is denied (disallow-privileged)" is_denied \
		"disallow-privileged" "privileged containers are not allowed" -- dry "$f"

	f=$(manifest deploy-good <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: good, namespace: e2e-workloads}
spec:
  replicas: 2
  selector: {matchLabels: {app: good}}
  template:
    metadata: {labels: {app: good, team: e2e}}
    spec:
$(pod_spec registry.k8s.io/pause:3.9 false)
EOF
)
	expect "compliant Deployment is admitted" is_allowed dry "$f"

	f=$(manifest deploy-no-team <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: no-team, namespace: e2e-workloads}
spec:
  replicas: 2
  selector: {matchLabels: {app: no-team}}
  template:
    metadata: {labels: {app: no-team}}
    spec:
$(pod_spec registry.k8s.io/pause:3.9 false)
EOF
)
	expect "Deployment without team label in its Pod template is denied (autogen)" is_denied \
		"require-team-label" "autogen-check-team" "label team is required" -- dry "$f"

	f=$(manifest deploy-replicas <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: too-many, namespace: e2e-workloads}
spec:
  replicas: 25
  selector: {matchLabels: {app: too-many}}
  template:
    metadata: {labels: {app: too-many, team: e2e}}
    spec:
$(pod_spec registry.k8s.io/pause:3.9 false)
EOF
)
	expect "Deployment with 25 replicas is denied (limit-replicas)" is_denied \
		"limit-replicas" "replicas must be between 1 and 10" -- dry "$f"

	if [ -n "$HAVE_CRONJOB" ]; then
		case_cronjobs
	else
		skip "CronJob cases" "batch/v1 CronJob is not served"
	fi

	# disallow-latest-tag is Audit with emitWarning: allowed, with a warning.
	f=$(manifest pod-latest <<EOF
apiVersion: v1
kind: Pod
metadata: {name: latest, namespace: e2e-workloads, labels: {team: e2e}}
spec:
$(pod_spec busybox:latest false | sed 's/^    //')
EOF
)
	expect "Audit policy: Pod with :latest is admitted with a warning" has_output \
		"Warning:" "the :latest tag is not allowed" -- dry "$f"
}

# CronJobs (batch/v1) against the sample policies: autogen-cronjob-* rules.
case_cronjobs() {
	local f
	f=$(manifest cronjob-good <<EOF
apiVersion: batch/v1
kind: CronJob
metadata: {name: good, namespace: e2e-workloads}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        metadata: {labels: {team: e2e}}
        spec:
          restartPolicy: Never
$(pod_spec registry.k8s.io/pause:3.9 false | sed 's/^/    /')
EOF
)
	expect "compliant CronJob is admitted" is_allowed dry "$f"

	f=$(manifest cronjob-no-team <<EOF
apiVersion: batch/v1
kind: CronJob
metadata: {name: no-team, namespace: e2e-workloads}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
$(pod_spec registry.k8s.io/pause:3.9 false | sed 's/^/    /')
EOF
)
	expect "CronJob without team label in its Pod template is denied (autogen)" is_denied \
		"require-team-label" "autogen-cronjob-check-team" "label team is required" -- dry "$f"

	f=$(manifest cronjob-privileged <<EOF
apiVersion: batch/v1
kind: CronJob
metadata: {name: privileged, namespace: e2e-workloads}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        metadata: {labels: {team: e2e}}
        spec:
          restartPolicy: Never
$(pod_spec registry.k8s.io/pause:3.9 true | sed 's/^/    /')
EOF
)
	expect "privileged CronJob is denied (autogen)" is_denied \
		"disallow-privileged" "autogen-cronjob-no-privileged-containers" -- dry "$f"
}

# --- a namespaced Policy applies only in its namespace -------------------------
case_namespaced_policy() {
	local pol a b
	log "namespaced Policy"
	pol=$(manifest pol-a <<'EOF'
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: require-tier, namespace: e2e-pol-a}
spec:
  background: false
  rules:
    - name: tier-label
      match:
        any:
          - resources: {kinds: [ConfigMap]}
      validate:
        failureAction: Enforce
        message: "label tier is required in e2e-pol-a"
        pattern:
          metadata:
            labels:
              tier: "?*"
EOF
)
	a=$(manifest cm-pol-a <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: untiered, namespace: e2e-pol-a}
data: {k: v}
EOF
)
	b=$(manifest cm-pol-b <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: untiered, namespace: e2e-pol-b}
data: {k: v}
EOF
)
	expect "Policy e2e-pol-a/require-tier is accepted" is_allowed k apply -f "$pol"
	eventually 5 "namespaced Policy denies in its namespace" is_denied \
		"require-tier" "label tier is required in e2e-pol-a" -- dry "$a"
	expect "namespaced Policy does not apply in another namespace" is_allowed dry "$b"
}

# --- namespaceSelector on namespace labels -------------------------------------
case_namespace_selector() {
	local pol strict lax
	log "namespaceSelector"
	pol=$(manifest nssel <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: e2e-nssel}
spec:
  background: false
  rules:
    - name: reviewed-label
      match:
        any:
          - resources:
              kinds: [ConfigMap]
              namespaceSelector:
                matchLabels:
                  gavel-e2e/strict: "true"
      validate:
        failureAction: Enforce
        message: "label reviewed is required in strict namespaces"
        pattern:
          metadata:
            labels:
              reviewed: "?*"
EOF
)
	strict=$(manifest cm-strict <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: unreviewed, namespace: e2e-strict}
data: {k: v}
EOF
)
	lax=$(manifest cm-lax <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: unreviewed, namespace: e2e-lax}
data: {k: v}
EOF
)
	expect "ClusterPolicy e2e-nssel is accepted" is_allowed k apply -f "$pol"
	eventually 5 "namespaceSelector: denied in a labelled namespace" is_denied \
		"e2e-nssel" "label reviewed is required in strict namespaces" -- dry "$strict"
	expect "namespaceSelector: admitted in an unlabelled namespace" is_allowed dry "$lax"
	expect "label namespace e2e-lax" is_allowed k label namespace e2e-lax gavel-e2e/strict=true --overwrite
	eventually 5 "namespaceSelector follows a namespace label change" is_denied \
		"e2e-nssel" "label reviewed is required in strict namespaces" -- dry "$lax"
}

# --- a policy created, updated, deleted takes effect within 5 seconds -----------
live_policy() {
	cat <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: e2e-live}
spec:
  background: false
  rules:
    - name: color-blue
      match:
        any:
          - resources:
              kinds: [ConfigMap]
              namespaces: [e2e-live]
      validate:
        failureAction: Enforce
        message: "$1"
        pattern:
          metadata:
            labels:
              color: blue
EOF
}

case_live_policy() {
	local v1 v2 cm
	log "policy lifecycle"
	v1=$(live_policy "color must be blue (v1)" | manifest live-v1)
	v2=$(live_policy "color must be blue (v2)" | manifest live-v2)
	cm=$(manifest cm-live <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: red, namespace: e2e-live, labels: {color: red}}
data: {k: v}
EOF
)
	expect "before the policy exists: admitted" is_allowed dry "$cm"
	expect "create ClusterPolicy e2e-live" is_allowed k apply -f "$v1"
	eventually 5 "created policy takes effect" is_denied "e2e-live" "color must be blue (v1)" -- dry "$cm"
	expect "update ClusterPolicy e2e-live" is_allowed k apply -f "$v2"
	eventually 5 "updated policy takes effect" is_denied "e2e-live" "color must be blue (v2)" -- dry "$cm"
	expect "delete ClusterPolicy e2e-live" is_allowed k delete clusterpolicy e2e-live
	eventually 5 "deleted policy stops applying" is_allowed dry "$cm"
}

# --- invalid policies are refused at kubectl apply ------------------------------
case_invalid_policy() {
	local schema semantic
	log "invalid policies"
	# Caught by the CRD schema (enum).
	schema=$(manifest bad-schema <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: e2e-bad-schema}
spec:
  validationFailureAction: Block
  rules:
    - name: r
      match:
        any:
          - resources: {kinds: [ConfigMap]}
      validate:
        message: "m"
        pattern: {metadata: {labels: {a: "?*"}}}
EOF
)
	expect "policy with an invalid validationFailureAction is refused (schema)" is_refused \
		"Unsupported value" "Block" -- k apply -f "$schema"
	# Schema-valid, but does not compile: refused by validate-policy.gavel.svc.
	semantic=$(manifest bad-semantic <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: e2e-bad-operator}
spec:
  rules:
    - name: r
      match:
        any:
          - resources: {kinds: [ConfigMap]}
      validate:
        failureAction: Enforce
        message: "m"
        deny:
          conditions:
            any:
              - key: "{{ request.object.metadata.name }}"
                operator: NoSuchOperator
                value: x
EOF
)
	expect "policy that does not compile is refused (validate-policy webhook)" is_denied \
		"validate-policy.gavel.svc" -- k apply -f "$semantic"
	expect "refused policy was not stored" is_refused "NotFound" -- \
		k get clusterpolicy e2e-bad-operator
	# Schema-valid PolicyException that does not compile (any and all together).
	semantic=$(manifest bad-exception <<'EOF'
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e2e-bad-exception, namespace: e2e-workloads}
spec:
  exceptions:
    - policyName: require-team
      ruleNames: [check-team]
  match:
    any:
      - resources: {kinds: [Pod]}
    all:
      - resources: {kinds: [Pod]}
EOF
)
	expect "PolicyException that does not compile is refused with its path (validate-policy)" \
		is_denied "validate-policy.gavel.svc" "/spec/match:" -- k apply -f "$semantic"
	expect "refused PolicyException was not stored" is_refused "NotFound" -- \
		k -n e2e-workloads get policyexception e2e-bad-exception
}

# --- what the gavel ServiceAccount may do (manifests/rbac.yaml) ------------------
# sa_may ANSWER ARGS...: `kubectl auth can-i ARGS` as the gavel ServiceAccount
# answers ANSWER (yes or no).
sa_may() {
	local want=$1 got
	shift
	run_cmd k auth can-i --as=system:serviceaccount:gavel:gavel "$@"
	got=${OUT##*$'\n'}
	if [ "$got" != "$want" ]; then
		WHY="answered '$got', expected '$want'"
		return 1
	fi
}

# no_wildcards FILE: no '*' among the apiGroups, resources, verbs or resourceNames of FILE.
no_wildcards() {
	OUT=$(grep -nE '^ *-? *(apiGroups|resources|verbs|resourceNames):.*\*' "$1")
	if [ -n "$OUT" ]; then
		WHY="wildcard in $1"
		return 1
	fi
}

# One check per line: the expected answer, then the arguments of kubectl auth can-i.
# Names and verbs follow what gavel calls (cmd/serve.c, certs/, background/).
RBAC_CHECKS='
yes create configmaps -n gavel
yes get configmaps/gavel -n gavel
yes list configmaps/gavel -n gavel
yes watch configmaps/gavel -n gavel
no  update configmaps/gavel -n gavel
no  patch configmaps/gavel -n gavel
yes get configmaps/gavel-scan-state -n gavel
yes patch configmaps/gavel-scan-state -n gavel
no  delete configmaps/gavel-scan-state -n gavel
yes list configmaps -A
yes watch globalcontextentries.kyverno.io
yes create secrets -n gavel
yes get secrets/gavel-tls -n gavel
yes update secrets/gavel-tls -n gavel
no  delete secrets/gavel-tls -n gavel
no  get secrets/other -n gavel
no  list secrets -n gavel
no  get secrets/gavel-tls -n default
no  list secrets -A
yes create leases.coordination.k8s.io -n gavel
yes get leases.coordination.k8s.io/gavel -n gavel
yes update leases.coordination.k8s.io/gavel -n gavel
no  update leases.coordination.k8s.io/other -n gavel
no  update leases.coordination.k8s.io/gavel -n kube-system
yes watch clusterpolicies.kyverno.io
yes watch policies.kyverno.io -A
yes watch policyexceptions.kyverno.io -A
no  create clusterpolicies.kyverno.io
no  update policyexceptions.kyverno.io -n default
yes watch validatingpolicies.policies.kyverno.io
yes watch namespacedvalidatingpolicies.policies.kyverno.io -A
yes watch policyexceptions.policies.kyverno.io -A
no  update validatingpolicies.policies.kyverno.io
yes watch namespaces
no  update namespaces
yes watch rolebindings.rbac.authorization.k8s.io -A
yes watch clusterrolebindings.rbac.authorization.k8s.io
no  create clusterrolebindings.rbac.authorization.k8s.io
yes create policyreports.wgpolicyk8s.io -n default
yes delete clusterpolicyreports.wgpolicyk8s.io
yes watch validatingwebhookconfigurations.admissionregistration.k8s.io/gavel
yes update validatingwebhookconfigurations.admissionregistration.k8s.io/gavel
no  update validatingwebhookconfigurations.admissionregistration.k8s.io/other
no  list validatingwebhookconfigurations.admissionregistration.k8s.io
no  update mutatingwebhookconfigurations.admissionregistration.k8s.io/gavel
yes list pods -A
yes list deployments.apps -A
no  update pods -n default
no  create pods -n gavel
no  escalate clusterroles.rbac.authorization.k8s.io
no  bind clusterroles.rbac.authorization.k8s.io
no  impersonate users
'

case_rbac() {
	local want args
	log "RBAC of the gavel ServiceAccount"
	expect "manifests/rbac.yaml grants no wildcard" no_wildcards "$HERE/../../manifests/rbac.yaml"
	expect "ServiceAccount gavel: can-i '*' '*': no" sa_may no '*' '*'
	expect "ServiceAccount gavel: can-i '*' secrets -n gavel: no" sa_may no '*' secrets -n gavel
	while read -r want args; do
		[ -n "$want" ] || continue
		# shellcheck disable=SC2086 # args: the words of one can-i call, no globs
		expect "ServiceAccount gavel: can-i $args: $want" sa_may "$want" $args
	done <<<"$RBAC_CHECKS"
}

# --- background reports for objects that existed before the policy -------------
# report_has KIND NS POLICY RESULT NAME: a result of POLICY with RESULT about the
# object NAME, in the reports of KIND (policyreport in namespace NS, or
# clusterpolicyreport with NS "-"). The object is named in the result's
# .resources (per-namespace reports) or in the report's .scope (per-resource
# reports); both layouts are accepted.
report_has() {
	local kind=$1 ns=$2 policy=$3 result=$4 name=$5 where=()
	[ "$ns" = - ] || where=(-n "$ns")
	if ! run_cmd k get "$kind" ${where[@]+"${where[@]}"} -o \
		'jsonpath={range .items[*]}{.scope.name}{"\t"}{range .results[*]}{.policy}{" "}{.result}{" "}{.resources[*].name}{";"}{end}{"\n"}{end}'; then
		WHY="kubectl get $kind failed"
		return 1
	fi
	if printf '%s\n' "$OUT" | awk -F '\t' -v p="$policy" -v r="$result" -v n="$name" '
		{
			m = split($2, res, ";")
			for (i = 1; i <= m; i++) {
				k = split(res[i], w, " ")
				if (k < 2 || w[1] != p || w[2] != r) continue
				if ($1 == n) found = 1
				for (j = 3; j <= k; j++) if (w[j] == n) found = 1
			}
		}
		END { exit !found }'; then
		return 0
	fi
	WHY="no '$result' result of $policy about $name"
	return 1
}

case_background_reports() {
	local good bad pol
	log "background reports (up to ${REPORT_TIMEOUT}s)"
	good=$(manifest bg-good <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: owned, namespace: e2e-bg, labels: {owner: e2e}}
data: {k: v}
EOF
)
	bad=$(manifest bg-bad <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: unowned, namespace: e2e-bg}
data: {k: v}
EOF
)
	# The objects exist before the policy does.
	expect "pre-existing ConfigMap e2e-bg/owned is created" is_allowed k apply -f "$good"
	expect "pre-existing ConfigMap e2e-bg/unowned is created" is_allowed k apply -f "$bad"
	pol=$(manifest bg-policy <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: e2e-bg-require-owner}
spec:
  background: true
  scanInterval: 30s
  rules:
    - name: configmap-owner
      match:
        any:
          - resources:
              kinds: [ConfigMap]
              namespaces: [e2e-bg]
      validate:
        failureAction: Audit
        message: "label owner is required"
        pattern:
          metadata:
            labels:
              owner: "?*"
    - name: namespace-owner
      match:
        any:
          - resources:
              kinds: [Namespace]
              names: [e2e-bg]
      validate:
        failureAction: Audit
        message: "namespace label owner is required"
        pattern:
          metadata:
            labels:
              owner: "?*"
EOF
)
	expect "Audit ClusterPolicy e2e-bg-require-owner is accepted" is_allowed k apply -f "$pol"
	eventually "$REPORT_TIMEOUT" "PolicyReport: fail for pre-existing e2e-bg/unowned" \
		report_has policyreport e2e-bg e2e-bg-require-owner fail unowned
	eventually 30 "PolicyReport: pass for pre-existing e2e-bg/owned" \
		report_has policyreport e2e-bg e2e-bg-require-owner pass owned
	eventually 30 "ClusterPolicyReport: fail for Namespace e2e-bg" \
		report_has clusterpolicyreport - e2e-bg-require-owner fail e2e-bg
	expect "kubectl get policyreport -A lists the e2e-bg report with counts" has_output \
		"e2e-bg" "PASS" "FAIL" -- k get policyreport -A
	expect "report summary counts the failure" has_output "fail=1" -- \
		k -n e2e-bg get policyreport -o 'jsonpath={range .items[*]}{"fail="}{.summary.fail}{"\n"}{end}'
}

main() {
	setup
	case_rbac
	case_workloads
	case_namespaced_policy
	case_namespace_selector
	case_live_policy
	case_invalid_policy
	case_background_reports
	summary
}

main "$@"
