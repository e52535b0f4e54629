#!/usr/bin/env bash
# make demo: gavel as the validating admission webhook of a real Kubernetes API
# server, narrated. Builds nothing itself (make builds ./gavel first).
#
#   1. a local control plane: kube-apiserver v1.20 + etcd on 127.0.0.1
#      (e2e/local; the first run on a machine builds the API server from
#      Debian's source package, about 7 minutes, cached in /var/cache/gavel)
#   2. a workload that exists before any policy
#   3. gavel serve in cluster mode: its CA in the Secret gavel/gavel-tls,
#      injected into the ValidatingWebhookConfiguration gavel
#   4. the sample policies (manifests/samples/policies) as ClusterPolicies
#   5. the sample workloads (manifests/samples/workloads): admitted and denied,
#      with Kyverno's messages and an audit warning
#   6. reports for workloads that existed before their policy (gavel scan;
#      skipped while this build has no such command)
#   then everything is torn down. Exit status 0 when the demo ran through.
#
# Env: GAVEL, KUBE_APISERVER/ETCD/KUBECTL (see e2e/local/README.md),
# E2E_KEEP=1 leaves the control plane and gavel running at the end.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=SCRIPTDIR/../e2e/lib.sh
. "$ROOT/e2e/lib.sh"

CACHE=${GAVEL_CACHE:-/var/cache/gavel}
STEP=0
STEPS=6

say() { printf '%s\n' "$*"; }
step() {
	STEP=$((STEP + 1))
	printf '\n[%d/%d] %s\n' "$STEP" "$STEPS" "$*"
}
# show CMD...: prints "$ kubectl ..." (or the command), runs it, indents its
# output; never stops the demo (denials are expected).
show() {
	local shown=("$@") out rc=0
	[ "$1" != k ] || shown=(kubectl "${@:2}")
	printf '  $ %s\n' "${shown[*]}"
	out=$("$@" 2>&1) || rc=$?
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/    /'
	return "$rc"
}
# show_apply FILE: prints "$ kubectl apply -f - <<EOF", the manifest, and runs it.
show_apply() {
	local out rc=0
	printf '  $ kubectl apply -f - <<EOF\n'
	sed 's/^/    /' "$1"
	printf '    EOF\n'
	out=$(k apply -f "$1" 2>&1) || rc=$?
	printf '%s\n' "$out" | sed 's/^/    /'
	return "$rc"
}
die() {
	printf '\ndemo: %s\n' "$*" >&2
	exit 1
}

# True when the cached API server is the current build of build-apiserver.sh.
apiserver_cached() {
	local script=$ROOT/e2e/local/build-apiserver.sh want_version want_id
	[ -z "${KUBE_APISERVER:-}" ] || return 0
	[ -x "$CACHE/bin/kube-apiserver" ] || return 1
	want_version=$(sed -n 's/^WANT_VERSION=//p' "$script")
	want_id=$(sed -n 's/^BUILD_ID=//p' "$script")
	want_id=${want_id//\$WANT_VERSION/$want_version}
	[ -z "$want_id" ] || [ "$(cat "$CACHE/bin/kube-apiserver.version" 2>/dev/null)" = "$want_id" ]
}

say "gavel demo: Kyverno-compatible policies enforced by a C webhook, on a real"
say "Kubernetes API server running on this machine (127.0.0.1 only)."

[ -x "$GAVEL" ] || die "$GAVEL not found: run make demo (or make first)"

step "Control plane: kube-apiserver v1.20 + etcd, no kubelet (Pods stay Pending)"
if ! apiserver_cached; then
	say "  First run on this machine: building kube-apiserver once from Debian's"
	say "  source package (about 7 minutes; cached in $CACHE)."
	"$ROOT/e2e/local/build-apiserver.sh" || die "building the API server failed (see $CACHE/build.log)"
fi
e2e_setup || die "the local control plane did not start"
say "  API server ready on https://127.0.0.1:$APISERVER_PORT"
e2e_apply_crds || die "the CRDs (manifests/crds) were not established"
say "  CRDs installed: ClusterPolicy, Policy, PolicyException, PolicyReport, ClusterPolicyReport"

step "A workload that exists before any policy"
ns_create legacy
show k -n legacy run legacy-debug --image=busybox:latest --restart=Never || true
say "  No policy yet, so it is admitted. Keep it in mind for step 6."

step "gavel serve in cluster mode"
k create namespace "$GAVEL_NAMESPACE" >/dev/null
e2e_certs || die "gavel certs generate failed"
gavel_start --manage-certs || die "gavel serve did not start (log: $E2E_DIR/gavel.log)"
webhook_register Fail
webhook_wait_effective || die "the API server does not call gavel"
say "  webhook https://127.0.0.1:$GAVEL_PORT/validate (and /validate-policy for policies),"
say "  metrics http://127.0.0.1:$GAVEL_METRICS_PORT/metrics"
say "  TLS: the CA and serving pair are kept in the Secret $GAVEL_NAMESPACE/gavel-tls and the CA"
say "  is injected as caBundle into the ValidatingWebhookConfiguration $GAVEL_WEBHOOK:"
show k -n "$GAVEL_NAMESPACE" get secret gavel-tls || true

step "The sample policies, applied as ClusterPolicies"
show k apply -f manifests/samples/policies || die "the sample policies were refused"
say "  require-team-label, disallow-privileged and limit-replicas are Enforce: violations are"
say "  denied. disallow-latest-tag is Audit with emitWarning: violations pass with a warning."
say "  Pod rules also cover Deployments, CronJobs and other controllers (Kyverno's autogen)."
# gavel sees policies through a watch; wait until the last one is in its snapshot.
probe=$(manifest probe <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: probe, namespace: legacy}
spec:
  replicas: 99
  selector: {matchLabels: {app: probe}}
  template:
    metadata: {labels: {app: probe, team: demo}}
    spec:
      containers: [{name: c, image: "busybox:1.36"}]
EOF
)
for _ in $(seq 1 40); do
	k apply --dry-run=server -f "$probe" 2>&1 | grep -q 'limit-replicas' && break
	sleep 0.25
done

step "The sample workloads (namespace shop)"
ns_create shop
show k apply -f manifests/samples/workloads/pods.yaml || true
say "  web is admitted. debug is denied: it is privileged and has no team label; the"
say "  message lists every failing Enforce rule, as Kyverno words it."
show k apply -f manifests/samples/workloads/deployments.yaml || true
say "  api is admitted. batch is denied by the autogen rules (autogen-...) of the Pod"
say "  policies and by limit-replicas (25 replicas)."
latest=$(manifest latest <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: tools, namespace: shop, labels: {team: platform}}
spec:
  containers: [{name: tools, image: "busybox:latest"}]
EOF
)
show_apply "$latest" || true
say "  Audit policy with emitWarning: admitted, and kubectl prints gavel's warning."
show k -n shop get pods,deployments || true
say "  What was admitted is stored; the Pods stay Pending (no kubelet here)."

step "Reports for workloads that existed before their policy"
if "$GAVEL" scan --help >/dev/null 2>&1; then
	say "  legacy-debug (step 2) was created before the policies. A background scan"
	say "  evaluates existing objects and writes PolicyReports:"
	show "$GAVEL" scan --kubeconfig "$KUBECONFIG" || true
	show k get policyreport -A || true
	show k get clusterpolicyreport || true
else
	say "  Skipped: this build of gavel has no 'gavel scan' (the background reconciler)."
	say "  legacy-debug, created in step 2, violates the policies but stays admitted;"
	say "  admission only judges new requests."
fi

printf '\nDone. Tearing everything down (gavel, API server, etcd, %s).\n' "$E2E_DIR"
