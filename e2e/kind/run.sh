#!/usr/bin/env bash
# run.sh: gavel's end-to-end run on kind (needs docker, kind, kubectl; bash 4+).
#
#   e2e/kind/run.sh            create the kind cluster gavel-e2e, build and load the
#                              image gavel:dev, install manifests/ and wait for the
#                              Deployment, apply the sample policies, wait until the
#                              webhook denies a violating Pod, run cases.sh, delete
#                              the cluster
#   KEEP=1 e2e/kind/run.sh     keep the cluster (and its kubeconfig) afterwards
#
# Env: CLUSTER (default gavel-e2e), NODE_IMAGE (kindest/node image, default kind's),
# KUBECTL (default kubectl), READY_TIMEOUT (seconds, default 300).
# The kubeconfig is a temporary file: ~/.kube/config is not touched.
# Exit status: 0 when every case passed.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=${CLUSTER:-gavel-e2e}
IMAGE=gavel:dev
KEEP=${KEEP:-0}
READY_TIMEOUT=${READY_TIMEOUT:-300}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gavel-kind.XXXXXX")
export KUBECONFIG=$WORK/kubeconfig
export E2E_TMP=$WORK/cases
mkdir -p "$E2E_TMP"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

die() {
	log "ERROR: $*"
	exit 1
}

for tool in docker kind "$KUBECTL"; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is needed"
done

CREATED=
# Diagnostics on failure, then the cluster goes away unless KEEP=1.
finish() {
	local rc=$?
	set +e
	if [ "$rc" -ne 0 ] && [ -n "$CREATED" ]; then
		log "failed (status $rc); gavel's state:"
		k -n gavel get deployment,pods,endpoints -o wide
		k -n gavel describe pods -l app.kubernetes.io/name=gavel | tail -n 60
		k -n gavel logs -l app.kubernetes.io/name=gavel --all-containers --prefix --tail=200
		k -n gavel get events --sort-by=.lastTimestamp | tail -n 30
		k get validatingwebhookconfiguration gavel \
			-o 'jsonpath={range .webhooks[*]}{.name}{": caBundle "}{.clientConfig.caBundle}{"\n"}{end}' |
			cut -c1-100
	fi
	if [ -n "$CREATED" ]; then
		if [ "$KEEP" = 1 ]; then
			log "KEEP=1: cluster $CLUSTER kept; KUBECONFIG=$KUBECONFIG"
			log "delete it with: kind delete cluster --name $CLUSTER"
		else
			log "deleting cluster $CLUSTER"
			kind delete cluster --name "$CLUSTER" >/dev/null 2>&1
		fi
	fi
	[ "$KEEP" = 1 ] || rm -rf "$WORK"
	exit "$rc"
}
trap finish EXIT

# --- cluster ------------------------------------------------------------------
clusters=$(kind get clusters 2>/dev/null) || clusters=
if grep -qx "$CLUSTER" <<<"$clusters"; then
	log "deleting the existing cluster $CLUSTER"
	kind delete cluster --name "$CLUSTER"
fi
log "creating kind cluster $CLUSTER"
create=(kind create cluster --name "$CLUSTER" --config "$HERE/kind-config.yaml"
	--kubeconfig "$KUBECONFIG" --wait 5m)
[ -z "${NODE_IMAGE:-}" ] || create+=(--image "$NODE_IMAGE")
CREATED=1
"${create[@]}"

# --- image ----------------------------------------------------------------------
log "building $IMAGE"
docker build -t "$IMAGE" "$ROOT"
log "loading $IMAGE into $CLUSTER"
kind load docker-image "$IMAGE" --name "$CLUSTER"

# Kubernetes < 1.21 does not set kubernetes.io/metadata.name, which the webhook's
# namespaceSelector uses to exclude the system namespaces (a no-op on 1.21+).
for ns in kube-system kube-public kube-node-lease; do
	k label namespace "$ns" "kubernetes.io/metadata.name=$ns" --overwrite >/dev/null
done

# --- install ----------------------------------------------------------------------
# `kubectl apply -k manifests/` in two calls so that the webhook configuration
# comes last whatever kustomize's ordering (kubectl 1.20's puts it right after
# the CRDs, where, failing closed, it would refuse the cluster-scoped objects
# that follow). It still exists before a gavel pod starts: gavel injects its
# caBundle at start-up.
log "installing manifests/"
k apply -k "$ROOT/manifests/" -l 'app.kubernetes.io/component!=webhook-configuration'
k apply -k "$ROOT/manifests/"
# No --request-timeout for the watches of wait and rollout status.
"$KUBECTL" wait --for condition=established --timeout=60s \
	crd/clusterpolicies.kyverno.io crd/policies.kyverno.io crd/policyexceptions.kyverno.io \
	crd/policyreports.wgpolicyk8s.io crd/clusterpolicyreports.wgpolicyk8s.io
"$KUBECTL" -n gavel rollout status deployment/gavel --timeout="${READY_TIMEOUT}s"

# The sample policies go through validate-policy.gavel.svc, which answers once
# gavel has injected its caBundle: retry until they are accepted.
log "applying the sample policies"
deadline=$((SECONDS + READY_TIMEOUT))
until run_cmd k apply -f "$ROOT/manifests/samples/policies/"; do
	[ "$SECONDS" -lt "$deadline" ] || die "sample policies not accepted: $OUT"
	sleep 2
done

# The webhook is effective once a violating Pod is denied (server-side dry run:
# nothing is stored).
log "waiting for the webhook to deny a violating Pod"
violating=$(manifest ready-probe-pod <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: gavel-e2e-violating
  namespace: default
spec:
  containers:
    - name: main
      image: registry.k8s.io/pause:3.9
EOF
)
deadline=$((SECONDS + READY_TIMEOUT))
until check_denied k apply --dry-run=server -f "$violating" -- "require-team-label"; do
	[ "$SECONDS" -lt "$deadline" ] || die "the webhook never denied the violating Pod: $WHY: $OUT"
	sleep 2
done
log "webhook effective: ${OUT//$'\n'/ }"

# --- cases ------------------------------------------------------------------------
log "running cases.sh"
bash "$HERE/cases.sh"
