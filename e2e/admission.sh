#!/usr/bin/env bash
# e2e/admission.sh: gavel's admission webhook end to end, against a real
# kube-apiserver v1.20 + etcd on 127.0.0.1 (e2e/local; no kubelet, so Pods
# stay Pending) with `gavel serve` in cluster mode registered through a
# ValidatingWebhookConfiguration (clientConfig.url https://127.0.0.1:PORT).
#
#   sh e2e/admission.sh          (from the top of the tree, after make)
#
# Cases: those of e2e/cases/admission.sh, which the kind run
# (e2e/kind/cases.sh) shares: the sample policies (manifests/samples/policies,
# applied as ClusterPolicies) admit and deny Pods, Deployments and CronJobs
# with Kyverno's message (autogen rule names); an Audit policy with
# emitWarning admits with a `Warning:`; a namespaced Policy applies only in
# its namespace; namespaceSelector follows namespace labels; a policy
# created, updated and deleted takes effect within 5 s; invalid policies and
# exceptions are refused at `kubectl apply` (CRD schema, validate-policy
# webhook); the gavel ServiceAccount's permissions (manifests/rbac.yaml);
# background reports about objects that existed before the policy. Then,
# here only: certificates: the Secret gavel/gavel-tls and the caBundle
# injected again when removed; gavel stopped -> the API server applies
# failurePolicy (Fail: "failed calling webhook"; Ignore: admitted); gavel
# restarted -> serving again.
# Ends with "N passed, N failed"; exit status 1 when a case failed, 2 when
# the environment could not be set up. About two minutes.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=cases/admission.sh
. "$HERE/cases/admission.sh"

# ---- certificates: Secret and caBundle -------------------------------------------------

case_certificates() {
	local ca cm
	log "certificates"
	ca=$(base64 -w0 "$E2E_TLS/ca.crt")
	secret_ca() { k -n "$GAVEL_NAMESPACE" get secret gavel-tls -o 'jsonpath={.data.ca\.crt}'; }
	expect_output "Secret gavel/gavel-tls holds the CA of --tls-dir (seeded from it)" \
		secret_ca -- "$ca"
	expect_output "the Secret is labelled as managed by gavel" \
		k -n "$GAVEL_NAMESPACE" get secret gavel-tls --show-labels -- \
		"app.kubernetes.io/managed-by=gavel"
	expect_success "remove the caBundle of validate.gavel.svc" \
		k patch validatingwebhookconfiguration "$GAVEL_WEBHOOK" --type=json \
		-p '[{"op":"remove","path":"/webhooks/0/clientConfig/caBundle"}]'
	eventually 5 expect_output "gavel injects the caBundle again" \
		k get validatingwebhookconfiguration "$GAVEL_WEBHOOK" \
		-o 'jsonpath={.webhooks[0].clientConfig.caBundle}' -- "$ca"
	cm=$(pod after-inject e2e-workloads '{app: x}' registry.example.com/shop/web:1.4.2 false |
		manifest pod-after-inject)
	eventually 5 expect_denied "requests are judged again after the injection" \
		k apply --dry-run=server -f "$cm" -- "require-team-label:"
}

# ---- gavel down: failurePolicy; gavel back: serving ----------------------------------------

case_failure_policy() {
	local good bad
	log "gavel stopped and restarted"
	ns_create e2e-down
	good=$(pod good e2e-down '{team: e2e}' registry.example.com/shop/web:1.4.2 false | manifest down-good)
	bad=$(pod bad e2e-down '{app: x}' registry.example.com/shop/web:1.4.2 false | manifest down-bad)
	gavel_stop
	expect_refused "gavel stopped, failurePolicy Fail: the API server refuses the request" \
		create "$good" -- 'failed calling webhook "validate.gavel.svc"' "connection refused"
	expect_success "switch validate.gavel.svc to failurePolicy Ignore" \
		k patch validatingwebhookconfiguration "$GAVEL_WEBHOOK" --type=json \
		-p '[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]'
	eventually 5 expect_allowed "gavel stopped, failurePolicy Ignore: admitted unjudged" \
		k apply --dry-run=server -f "$bad"
	expect_success "back to failurePolicy Fail" \
		k patch validatingwebhookconfiguration "$GAVEL_WEBHOOK" --type=json \
		-p '[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Fail"}]'
	eventually 5 expect_refused "failurePolicy Fail again: refused while gavel is down" \
		k apply --dry-run=server -f "$good" -- "failed calling webhook"
	# Not through expect_*: those run the command in a subshell.
	if gavel_start --manage-certs; then
		ok "gavel restarted on the same port"
	else
		OUT=$(tail -n 20 "$E2E_DIR/gavel.log")
		fail "gavel restarted on the same port" "it did not start"
	fi
	eventually 5 expect_allowed "after the restart: compliant Pod admitted" create "$good"
	expect_denied "after the restart: violating Pod denied" create "$bad" -- \
		"resource Pod/e2e-down/bad was blocked" "require-team-label:"
}

# rbac_apply: the gavel ServiceAccount with manifests/rbac.yaml. No
# kube-controller-manager runs here: the aggregated ClusterRole gavel:scanner
# is given the rules of the ClusterRoles labelled for it, as it would.
rbac_apply() {
	local rules
	k apply -f "$E2E_ROOT/manifests/serviceaccount.yaml" -f "$E2E_ROOT/manifests/rbac.yaml" \
		>/dev/null &&
		rules=$(k get clusterroles -l rbac.gavel.io/aggregate-to-scanner=true -o json |
			jq -c '[.items[].rules[]]') &&
		k patch clusterrole gavel:scanner --type=merge -p "{\"rules\":$rules}" >/dev/null
}

main() {
	if ! { e2e_setup && e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
		rbac_apply &&
		e2e_certs && gavel_start --manage-certs && webhook_register Fail && webhook_wait_effective; }; then
		log "setup failed"
		[ ! -s "$E2E_DIR/gavel.log" ] || tail -n 20 "$E2E_DIR/gavel.log" >&2
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	log "gavel serving on https://127.0.0.1:$GAVEL_PORT (API server on port $APISERVER_PORT)"
	expect_allowed "sample policies applied as ClusterPolicies" \
		k apply -f "$E2E_ROOT/manifests/samples/policies"
	local f
	f=$(pod probe e2e-probe '{app: x}' registry.example.com/shop/web:1.4.2 false | manifest probe)
	ns_create e2e-probe
	eventually 10 expect_denied "sample policies are in gavel's snapshot" \
		k apply --dry-run=server -f "$f" -- "require-team-label:"

	case_workloads
	case_namespaced_policy
	case_namespace_selector
	case_live_policy
	case_invalid_policy
	case_rbac
	case_background_reports
	case_certificates
	case_failure_policy
	summary
}

main "$@"
