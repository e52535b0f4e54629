#!/usr/bin/env bash
# e2e/chainsaw.sh: Kyverno's chainsaw end-to-end tests (../shared/conformance/
# kyverno-chainsaw) against the local control plane with gavel serving in
# cluster mode; the runner is e2e/chainsaw/run.py (see its header).
#
#   bash e2e/chainsaw.sh [FOLDER...]     the tests under the given folders (default all)
#
# The control plane's admin is `kubernetes-admin` in `system:masters`, as in
# the kind clusters Kyverno runs these tests on (several tests exclude or
# match that user). gavel's webhook configuration: one webhook for every
# resource and subresource in every namespace but the control plane's own
# and gavel's, failurePolicy Fail, plus the policy-validation webhook.
#
# Env:
#   CHAINSAW_SUITE   the tests (default ../shared/conformance/kyverno-chainsaw
#                    next to this tree); missing: the suite is skipped with a message
#   CHAINSAW_FLOOR   the floor (default: e2e/chainsaw/floor, today's score):
#                    the last line is then for `make test`, the passed count
#                    and as failed the shortfall below the floor (0 when the
#                    score reaches it), the runner's own summary printed
#                    before as "score: ...". Set and empty (`make chainsaw`):
#                    the runner's "N passed, N failed" is the last line
#   CHAINSAW_ARGS    more options for run.py (e.g. --keep-going --verbose)
#   SANITIZE         set (the sanitizer pass of CI): the suite does not run;
#                    it prints "0 passed, 0 failed" (it judges gavel's
#                    behaviour, which the first pass measured already)
#   E2E_KEEP=1       as e2e/lib.sh
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$HERE/lib.sh"

SUITE=${CHAINSAW_SUITE:-$E2E_ROOT/../shared/conformance/kyverno-chainsaw}
CHAINSAW_FLOOR=${CHAINSAW_FLOOR-$(cat "$HERE/chainsaw/floor")}

if [ -n "${SANITIZE:-}" ]; then
	echo "chainsaw: not run in the sanitizer pass (SANITIZE=$SANITIZE)"
	echo "0 passed, 0 failed"
	exit 0
fi
if [ ! -f "$SUITE/tests.txt" ]; then
	echo "chainsaw: $SUITE missing, suite skipped"
	echo "0 passed, 0 failed"
	exit 0
fi
for m in yaml jmespath; do
	if ! python3 -c "import $m" 2>/dev/null; then
		echo "chainsaw: python3-$m missing (sh scripts/install-deps.sh e2e)"
		echo "0 passed, 1 failed"
		exit 1
	fi
done

# e2e_setup, with the kind-like admin identity in the token file up.sh uses.
chainsaw_setup() {
	E2E_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gavel-chainsaw.XXXXXX")
	E2E_TLS=$E2E_DIR/tls
	trap e2e_cleanup EXIT
	trap 'exit 130' INT TERM
	[ -x "$GAVEL" ] || {
		log "$GAVEL not found (run make first)"
		return 1
	}
	mkdir -p "$E2E_DIR/cp"
	printf '%s,kubernetes-admin,kubernetes-admin,"system:masters"\n' "$(openssl rand -hex 32)" \
		>"$E2E_DIR/cp/tokens.csv"
	chmod 600 "$E2E_DIR/cp/tokens.csv"
	log "starting the local control plane (e2e/local/up.sh)"
	if ! "$E2E_ROOT/e2e/local/up.sh" "$E2E_DIR/cp" >"$E2E_DIR/up.log" 2>&1; then
		tail -n 20 "$E2E_DIR/up.log" >&2
		log "the local control plane did not start"
		return 1
	fi
	# shellcheck disable=SC1091 # written by up.sh
	. "$E2E_DIR/cp/env"
}

# The namespaces the webhook leaves alone: the control plane's and gavel's.
IGNORE_LABEL=chainsaw.gavel.dev/ignore

chainsaw_webhook() {
	local ca ns
	ca=$(base64 -w0 "$E2E_TLS/ca.crt")
	for ns in kube-system kube-public kube-node-lease "$GAVEL_NAMESPACE"; do
		k label namespace "$ns" "$IGNORE_LABEL=true" --overwrite >/dev/null || return 1
	done
	k apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: $GAVEL_WEBHOOK}
webhooks:
  - name: validate.gavel.svc
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    matchPolicy: Equivalent
    timeoutSeconds: 10
    clientConfig:
      url: https://127.0.0.1:$GAVEL_PORT/validate
      caBundle: $ca
    rules:
      - apiGroups: ["*"]
        apiVersions: ["*"]
        resources: ["*/*"]
        operations: [CREATE, UPDATE, DELETE, CONNECT]
        scope: "*"
    namespaceSelector:
      matchExpressions: [{key: $IGNORE_LABEL, operator: DoesNotExist}]
  - name: validate-policy.gavel.svc
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
    clientConfig:
      url: https://127.0.0.1:$GAVEL_PORT/validate-policy
      caBundle: $ca
    rules:
      - apiGroups: [kyverno.io]
        apiVersions: ["*"]
        resources: [clusterpolicies, policies, policyexceptions, globalcontextentries]
        operations: [CREATE, UPDATE]
EOF
}

# webhook_wait_effective, with more time: this suite may start on a busy machine.
chainsaw_wait_effective() {
	local i
	for i in 1 2 3 4; do
		webhook_wait_effective 2>/dev/null && return 0
		log "the webhook is not effective yet ($((i * 20)) s)"
	done
	return 1
}

if ! { chainsaw_setup && e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
	e2e_certs && gavel_start --manage-certs && chainsaw_webhook && chainsaw_wait_effective &&
	k delete clusterpolicy e2e-sentinel --ignore-not-found >/dev/null; }; then
	log "setup failed"
	echo "0 passed, 1 failed"
	exit 1
fi
# What a kind cluster with Kyverno installed has and the tests take for granted:
# the `kyverno` namespace (PolicyExceptions and test objects are created there).
k create namespace kyverno >/dev/null 2>&1 || true

# shellcheck disable=SC2086 # CHAINSAW_ARGS is word-split on purpose
python3 "$HERE/chainsaw/run.py" --kubeconfig "$KUBECONFIG" ${CHAINSAW_ARGS:-} "$SUITE" "$@" \
	>"$E2E_DIR/run.out" 2>&1
rc=$?
gavel_stop
if [ -z "${CHAINSAW_FLOOR:-}" ]; then
	cat "$E2E_DIR/run.out"
	exit "$rc"
fi
sed -E 's/^([0-9]+ passed, [0-9]+ failed)$/score: \1/' "$E2E_DIR/run.out"
passed=$(sed -nE 's/^([0-9]+) passed, [0-9]+ failed$/\1/p' "$E2E_DIR/run.out" | tail -n 1)
passed=${passed:-0}
short=$((CHAINSAW_FLOOR - passed))
[ "$short" -gt 0 ] || short=0
if [ "$short" -gt 0 ]; then
	echo "chainsaw: $passed passed, below the floor of $CHAINSAW_FLOOR (e2e/chainsaw/floor)"
fi
echo "$passed passed, $short failed"
[ "$short" -eq 0 ]
