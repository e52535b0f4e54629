#!/usr/bin/env bash
# e2e/vpolicy.sh: policies.kyverno.io ValidatingPolicy, NamespacedValidatingPolicy
# and CEL PolicyException in `gavel serve`, end to end against a real
# kube-apiserver v1.20 + etcd on 127.0.0.1 (e2e/local; no kubelet) with
# manifests/crds applied and gavel registered through a
# ValidatingWebhookConfiguration.
#
#   bash e2e/vpolicy.sh          (from the top of the tree, after make)
#
# Cases: validationActions Deny blocks with Kyverno's "Policy <name> failed:
# <message>"; Audit admits (no warning); Warn admits with a `Warning:`; a
# NamespacedValidatingPolicy applies only in its namespace; autogen: the Pod
# policy blocks a Deployment; evaluation.admission.enabled: false is absent
# from admission; a CEL PolicyException lets one Pod through; a policy that
# does not compile is refused at `kubectl apply` (validate-policy webhook),
# and one already stored is logged and left out while the others keep
# working; resource.Get answered from the cluster (NotFound is null); an
# Audit ValidatingPolicy with background disabled: the admitted ConfigMaps'
# fail and pass results reach polr-ns-<ns> (source KyvernoValidatingPolicy,
# no rule, process "admission review"), a dry run's do not.
# Ends with "N passed, N failed"; exit status 1 when a case failed, 2 when
# the environment could not be set up.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

NS=e2e-vpol

# pod NAME NAMESPACE LABELS IMAGE HOSTNETWORK: a Pod manifest (LABELS a flow map).
pod() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $2, labels: $3}
spec:
  hostNetwork: $5
  containers:
    - name: main
      image: $4
EOF
}

# deployment NAME NAMESPACE HOSTNETWORK
deployment() {
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $2}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1, team: e2e}}
    spec:
      hostNetwork: $3
      containers:
        - name: main
          image: registry.example.com/shop/api:2.0.0
EOF
}

NO_HOSTNET='!has(object.spec.hostNetwork) || object.spec.hostNetwork == false'
HAS_TEAM="has(object.metadata.labels) && 'team' in object.metadata.labels"

# A ValidatingPolicy stored before gavel starts, that does not compile.
store_bad_policy() {
	local f
	f=$(vpol ValidatingPolicy vpol-broken "" "[Deny]" "object.spec.(" "never" | manifest vpol-broken)
	k apply -f "$f" >/dev/null
}

case_actions() {
	local f
	log "validationActions"
	f=$(vpol ValidatingPolicy vpol-deny-hostnet "" "[Deny]" "$NO_HOSTNET" \
		"hostNetwork is not allowed" | manifest vpol-deny)
	expect_allowed "Deny ValidatingPolicy created" k apply -f "$f"
	f=$(vpol ValidatingPolicy vpol-audit-team "" "[Audit]" "$HAS_TEAM" \
		"label team is required" | manifest vpol-audit)
	expect_allowed "Audit ValidatingPolicy created" k apply -f "$f"
	f=$(vpol ValidatingPolicy vpol-warn-latest "" "[Warn]" \
		"object.spec.containers.all(c, !c.image.endsWith(':latest'))" \
		"the :latest tag is not allowed" | manifest vpol-warn)
	expect_allowed "Warn ValidatingPolicy created" k apply -f "$f"
	f=$(vpol ValidatingPolicy vpol-bg-only "" "[Deny]" \
		"object.metadata.name != 'bg-only-target'" "bg-only-target is not allowed" \
		"  evaluation: {admission: {enabled: false}}" | manifest vpol-bg)
	expect_allowed "background-only ValidatingPolicy created" k apply -f "$f"

	f=$(pod hostnet "$NS" '{team: e2e}' registry.example.com/web:1.0 true | manifest pod-hostnet)
	eventually 10 expect_denied "Deny: hostNetwork Pod blocked with the policy's message" \
		k create -f "$f" -- "Policy vpol-deny-hostnet failed: hostNetwork is not allowed"

	f=$(pod no-team "$NS" '{app: x}' registry.example.com/web:1.0 false | manifest pod-no-team)
	expect_output "Audit: Pod without team label admitted" \
		k create -f "$f" -- "pod/no-team created"
	if grep -q "Warning" <<<"$OUT"; then
		fail "Audit: no warning" "a warning was given"
	else
		ok "Audit: no warning"
	fi

	f=$(pod latest "$NS" '{team: e2e}' busybox:latest false | manifest pod-latest)
	expect_output "Warn: :latest Pod admitted with the policy's warning" \
		k create -f "$f" -- "pod/latest created" \
		"Warning: Policy vpol-warn-latest failed: the :latest tag is not allowed"

	f=$(pod bg-only-target "$NS" '{team: e2e}' registry.example.com/web:1.0 false | manifest pod-bg)
	expect_allowed "evaluation.admission.enabled false: not judged at admission" k create -f "$f"

	f=$(deployment hostnet-deploy "$NS" true | manifest deploy-hostnet)
	expect_denied "autogen: Deployment with hostNetwork in its template blocked" \
		k create -f "$f" -- "Policy vpol-deny-hostnet failed: hostNetwork is not allowed"
	f=$(deployment plain-deploy "$NS" false | manifest deploy-plain)
	expect_allowed "autogen: compliant Deployment admitted" k create -f "$f"
}

case_namespaced() {
	local f
	log "NamespacedValidatingPolicy"
	ns_create e2e-nvpol-a
	ns_create e2e-nvpol-b
	f=$(vpol NamespacedValidatingPolicy nvpol-tier e2e-nvpol-a "[Deny]" \
		"has(object.metadata.labels) && 'tier' in object.metadata.labels" \
		"label tier is required in e2e-nvpol-a" | manifest nvpol)
	expect_allowed "NamespacedValidatingPolicy created" k apply -f "$f"
	f=$(pod no-tier e2e-nvpol-a '{team: e2e}' registry.example.com/web:1.0 false | manifest pod-nv-a)
	eventually 10 expect_denied "its namespace: Pod without tier blocked" \
		k create -f "$f" -- "Policy nvpol-tier failed: label tier is required in e2e-nvpol-a"
	f=$(pod no-tier e2e-nvpol-b '{team: e2e}' registry.example.com/web:1.0 false | manifest pod-nv-b)
	expect_allowed "another namespace: the same Pod admitted" k create -f "$f"
}

case_exception() {
	local f
	log "CEL PolicyException"
	f=$(manifest polex <<EOF
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: allow-hostnet-probe, namespace: $NS}
spec:
  policyRefs:
    - {name: vpol-deny-hostnet, kind: ValidatingPolicy}
  matchConditions:
    - name: probe-only
      expression: "object.metadata.name == 'hostnet-probe'"
EOF
)
	expect_allowed "CEL PolicyException created" k apply -f "$f"
	f=$(pod hostnet-probe "$NS" '{team: e2e}' registry.example.com/web:1.0 true | manifest pod-probe)
	eventually 10 expect_allowed "the excepted Pod is admitted" k create -f "$f"
	f=$(pod hostnet-other "$NS" '{team: e2e}' registry.example.com/web:1.0 true | manifest pod-other)
	expect_denied "another hostNetwork Pod is still blocked" k create -f "$f" -- \
		"Policy vpol-deny-hostnet failed"
}

case_libraries() {
	local f
	log "Kyverno CEL libraries from the cluster"
	f=$(vpol ValidatingPolicy vpol-needs-cm "" "[Deny]" \
		"!has(object.metadata.labels) || !('needs-cm' in object.metadata.labels) || resource.Get('v1', 'configmaps', object.metadata.namespace, 'vpol-allow') != null" \
		"ConfigMap vpol-allow is required" | manifest vpol-needs-cm)
	expect_allowed "resource.Get ValidatingPolicy created" k apply -f "$f"
	f=$(pod needs-cm "$NS" '{team: e2e, needs-cm: "yes"}' registry.example.com/web:1.0 false |
		manifest pod-needs-cm)
	eventually 10 expect_denied "resource.Get of a missing ConfigMap is null: Pod blocked" \
		k create -f "$f" -- "Policy vpol-needs-cm failed: ConfigMap vpol-allow is required"
	expect_allowed "the ConfigMap created" k -n "$NS" create configmap vpol-allow
	expect_allowed "resource.Get finds the ConfigMap: Pod admitted" k create -f "$f"
}

case_compile_errors() {
	local f
	log "policies that do not compile"
	f=$(vpol ValidatingPolicy vpol-syntax "" "[Deny]" "object.spec.(" "never" | manifest vpol-syntax)
	expect_refused "a ValidatingPolicy with a syntax error is refused at apply" \
		k apply -f "$f" -- "denied the request" "failed to compile policy" \
		"/spec/validations/0/expression" "Syntax error"
	f=$(vpol ValidatingPolicy vpol-type "" "[Deny]" "size(1) > 0" "never" | manifest vpol-type)
	expect_refused "a type error is refused at apply" \
		k apply -f "$f" -- "denied the request" "failed to compile policy" \
		"found no matching overload for 'size'"
	expect_output "the stored policy that does not compile is logged with its path" \
		cat "$E2E_DIR/gavel.log" -- "ValidatingPolicy vpol-broken not loaded" \
		"/spec/validations/0/expression"
	f=$(pod hostnet-2 "$NS" '{team: e2e}' registry.example.com/web:1.0 true | manifest pod-hostnet-2)
	expect_denied "the other policies keep working" k create -f "$f" -- \
		"Policy vpol-deny-hostnet failed: hostNetwork is not allowed"
}

# report_lines NS: the results of polr-ns-NS, one per line:
#   <source> <policy> <rule or -> <result> <object name> <process> <message>
report_lines() {
	k -n "$1" get policyreport "polr-ns-$1" -o json | jq -r '.results[]? |
		"\(.source) \(.policy) \(.rule // "-") \(.result) \(.resources[0].name) \(.properties.process) \(.message // "")"'
}

# touch_and_report NAME: an UPDATE of ConfigMap NAME in $NS, then report_lines $NS.
touch_and_report() {
	k -n "$NS" annotate --overwrite configmap "$1" "e2e-touch=$(now_ms)" >/dev/null &&
		report_lines "$NS"
}

case_admission_report() {
	local f
	log "admission results of ValidatingPolicies in the reports"
	# On ConfigMaps: every Pod here is also judged by a Deny policy, and then
	# Kyverno writes no admission report of CEL policies.
	f=$(manifest vpol-audit-owner <<'EOF'
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: vpol-audit-owner}
spec:
  validationActions: [Audit]
  evaluation: {background: {enabled: false}}
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [configmaps]
  validations:
    - expression: "has(object.data) && 'owner' in object.data"
      message: "data.owner is required"
EOF
)
	expect_allowed "Audit ValidatingPolicy without background created" k apply -f "$f"
	expect_output "Audit: a ConfigMap without owner is admitted" \
		k -n "$NS" create configmap no-owner --from-literal=a=b -- "configmap/no-owner created"
	# until gavel has the policy, an UPDATE each time: its result comes from admission
	eventually 20 expect_output "its admission result lands in polr-ns-$NS" \
		touch_and_report no-owner -- \
		"KyvernoValidatingPolicy vpol-audit-owner - fail no-owner admission review data.owner is required"
	expect_allowed "a ConfigMap with owner is admitted" \
		k -n "$NS" create configmap with-owner --from-literal=owner=e2e
	eventually 20 expect_output "its pass result lands there too" \
		report_lines "$NS" -- "KyvernoValidatingPolicy vpol-audit-owner - pass with-owner admission review"
	expect_allowed "a dry-run ConfigMap without owner is admitted" \
		k -n "$NS" create configmap dry-owner --from-literal=a=b --dry-run=server
	expect_allowed "a ConfigMap with owner is admitted after it" \
		k -n "$NS" create configmap late-owner --from-literal=owner=e2e
	# the queue keeps the order of the requests: once the later one is in, the dry run would be
	eventually 20 expect_output "the later ConfigMap's result lands" \
		report_lines "$NS" -- "KyvernoValidatingPolicy vpol-audit-owner - pass late-owner"
	if report_lines "$NS" | grep -q ' dry-owner '; then
		fail "a dry run is not reported" "$(report_lines "$NS" | grep ' dry-owner ')"
	else
		ok "a dry run is not reported"
	fi
}

main() {
	if ! { e2e_setup && e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
		e2e_certs && store_bad_policy && gavel_start --manage-certs &&
		webhook_register Fail cel && webhook_wait_effective &&
		ns_create "$NS"; }; then
		log "setup failed"
		[ -z "$E2E_DIR" ] || [ ! -s "$E2E_DIR/gavel.log" ] || tail -n 20 "$E2E_DIR/gavel.log" >&2
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	log "gavel serving on https://127.0.0.1:$GAVEL_PORT (API server on port $APISERVER_PORT)"
	case_actions
	case_namespaced
	case_exception
	case_libraries
	case_compile_errors
	case_admission_report
	summary
}

main "$@"
