#!/usr/bin/env bash
# e2e/vpwebhook.sh: the resource webhooks gavel generates for
# policies.kyverno.io ValidatingPolicy and NamespacedValidatingPolicy, and
# their Events, against a real kube-apiserver v1.20 + etcd on 127.0.0.1
# (e2e/local; no kubelet) with manifests/crds applied and `gavel serve` in
# cluster mode writing its own webhooks (--auto-update-webhooks).
#
#   bash e2e/vpwebhook.sh        (from the top of the tree, after make)
#
# Cases:
#   vpol       no policy, no generated webhook; a Pod ValidatingPolicy gives
#              validate.gavel.svc-fail with pods and the autogen kinds and its
#              timeout; a Pod without a tag is denied through it, a tagged one
#              allowed; a ConfigMap write is untouched (gavel's
#              kyverno_admission_requests_total has no ConfigMap request);
#              a policy with evaluation.admission.enabled false adds no rule
#   events     the blocked Pod gives PolicyViolation Events on the Pod and on
#              the ValidatingPolicy
#   nvpol      a NamespacedValidatingPolicy on ConfigMaps: a Namespaced rule;
#              denies in its namespace only
#   ignore     the policy made failurePolicy Ignore: validate.gavel.svc-ignore
#              alone; gavel stopped: writes succeed
#   crd        a ClusterPolicy on a kind whose CRD is created after it: the
#              rule follows the CRD (no wait for the 30 s resync asserted,
#              only that it comes) and the custom resource is denied
# Ends with "N passed, N failed"; exit 1 when a case failed, 2 when the
# environment could not be set up.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# shellcheck source-path=SCRIPTDIR disable=SC2119 # gavel_start without arguments
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

NS=e2e-vpw
OTHER=e2e-vpw-other

# no_rule_for WORD: no rule of the configuration names WORD (group or resource).
no_rule_for() {
	! hooks '{.webhooks[*].rules[*].apiGroups} {.webhooks[*].rules[*].resources}' | grep -q "$1"
}

# metric_lines PATTERN: gavel's metrics lines matching PATTERN (none: empty).
metric_lines() {
	curl -s --max-time 5 "http://127.0.0.1:$GAVEL_METRICS_PORT/metrics" | grep -E "$1" || true
}

case_vpol() {
	local f bad good
	eventually 20 expect_success "vpol: no policy, no generated webhook" no_generated_webhook
	f=$(manifest vpol-pod <<'EOF'
apiVersion: policies.kyverno.io/v1beta1
kind: ValidatingPolicy
metadata: {name: pod-tag}
spec:
  validationActions: [Deny]
  webhookConfiguration: {timeoutSeconds: 7}
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        resources: [pods]
        operations: [CREATE, UPDATE]
  validations:
    - expression: "object.spec.containers.all(c, c.image.contains(':'))"
      message: An image tag is required.
---
apiVersion: policies.kyverno.io/v1beta1
kind: ValidatingPolicy
metadata: {name: background-only}
spec:
  evaluation: {admission: {enabled: false}}
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        resources: [secrets]
        operations: [CREATE]
  validations:
    - expression: "false"
      message: never at admission
EOF
)
	k apply -f "$f" >/dev/null
	eventually 20 expect_output "vpol: a Deny policy gives validate.gavel.svc-fail" \
		hooks '{.webhooks[*].name}' -- "validate.gavel.svc-fail"
	expect_output "vpol: rules from resourceRules and the autogen kinds" \
		hooks '{range .webhooks[?(@.name=="validate.gavel.svc-fail")].rules[*]}{.apiGroups}{.apiVersions}{.resources}{.operations}{.scope}{"\n"}{end}' \
		-- '[""]["v1"]["pods"]["CREATE","UPDATE"]*' \
		'["apps"]["v1"]["daemonsets","deployments","replicasets","statefulsets"]["CREATE","UPDATE"]*' \
		'["batch"]["v1"]["cronjobs","jobs"]["CREATE","UPDATE"]*'
	eventually 20 expect_output "vpol: status.conditionStatus as Kyverno writes it" \
		jp validatingpolicy/pod-tag '{.status.conditionStatus.ready} {range .status.conditionStatus.conditions[*]}{.type}={.status}/{.reason}/{.message};{end}' \
		-- "true " "WebhookConfigured=True/Succeeded/Webhook configured.;" \
		"RBACPermissionsGranted=True/Succeeded/Policy is ready for reporting.;"
	expect_success "vpol: evaluation.admission.enabled false adds no rule" \
		no_rule_for secrets
	expect_output "vpol: path, timeout, failurePolicy, own namespace excluded" \
		hooks '{range .webhooks[?(@.name=="validate.gavel.svc-fail")]}{.clientConfig.url} {.timeoutSeconds} {.failurePolicy} {.namespaceSelector.matchExpressions[0].values}{end}' \
		-- "/validate/fail 7 Fail" '["gavel"]'
	k get validatingwebhookconfiguration "$GAVEL_WEBHOOK" -o yaml >"$E2E_DIR/webhooks-vpol.yaml"
	bad=$(pod_manifest bad nginx)
	good=$(pod_manifest good nginx:1.25)
	eventually 20 expect_denied "vpol: a Pod without a tag is denied through the generated webhook" \
		k create --dry-run=server -f "$bad" -- "Policy pod-tag failed: An image tag is required."
	expect_allowed "vpol: a tagged Pod is allowed" k create --dry-run=server -f "$good"
	expect_allowed "vpol: a ConfigMap write is allowed" \
		k -n "$NS" create configmap untouched --from-literal=a=b
	expect_success "vpol: the ConfigMap write never reached gavel" \
		test -z "$(metric_lines '^kyverno_admission_requests_total\{.*resource_kind="ConfigMap"')"
	expect_success "vpol: the Pod requests did reach gavel" \
		test -n "$(metric_lines '^kyverno_admission_requests_total\{.*resource_kind="Pod"')"
}

case_events() {
	local bad
	bad=$(pod_manifest blocked nginx)
	eventually 20 expect_denied "events: a Pod without a tag is blocked" \
		k create -f "$bad" -- "Policy pod-tag failed"
	eventually 10 expect_output "events: PolicyViolation on the blocked Pod" \
		k -n "$NS" get events --field-selector involvedObject.name=blocked,reason=PolicyViolation \
		-o 'jsonpath={range .items[*]}{.type}|{.involvedObject.kind}|{.reportingComponent}|{.message}{"\n"}{end}' \
		-- "Warning|Pod|kyverno-admission|policy pod-tag/ fail: An image tag is required."
	eventually 10 expect_output "events: PolicyViolation on the ValidatingPolicy" \
		k -n default get events --field-selector involvedObject.name=pod-tag,reason=PolicyViolation \
		-o 'jsonpath={range .items[*]}{.involvedObject.kind}|{.involvedObject.apiVersion}|{.action}|{.message}{"\n"}{end}' \
		-- "ValidatingPolicy|policies.kyverno.io/" "|Resource Blocked|Pod $NS/blocked: [] fail (blocked)"
	k -n "$NS" get events --field-selector involvedObject.name=blocked -o yaml >"$E2E_DIR/events-vpol.yaml"
}

case_nvpol() {
	local f
	f=$(manifest nvpol <<EOF
apiVersion: policies.kyverno.io/v1beta1
kind: NamespacedValidatingPolicy
metadata: {name: cm-label, namespace: $NS}
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        resources: [configmaps]
        operations: [CREATE]
  validations:
    - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
      message: A team label is required.
EOF
)
	k apply -f "$f" >/dev/null
	eventually 20 expect_output "nvpol: a Namespaced rule for configmaps" \
		hooks '{range .webhooks[?(@.name=="validate.gavel.svc-fail")].rules[*]}{.resources}{.operations}{.scope}{"\n"}{end}' \
		-- '["configmaps"]["CREATE"]Namespaced'
	eventually 20 expect_denied "nvpol: an unlabelled ConfigMap is denied in its namespace" \
		k -n "$NS" create configmap nolabel --dry-run=server --from-literal=a=b \
		-- "Policy cm-label failed: A team label is required."
	expect_allowed "nvpol: allowed in another namespace" \
		k -n "$OTHER" create configmap nolabel --dry-run=server --from-literal=a=b
	k delete -f "$f" >/dev/null
	eventually 20 expect_success "nvpol: deleted, its rule goes" \
		no_rule_for configmaps
}

case_ignore() {
	local bad
	bad=$(pod_manifest bad nginx)
	k patch validatingpolicy pod-tag --type=merge -p '{"spec":{"failurePolicy":"Ignore"}}' >/dev/null
	eventually 20 expect_output "ignore: only Ignore policies: validate.gavel.svc-ignore alone" \
		hooks '{.webhooks[*].name} {.webhooks[*].failurePolicy}' \
		-- "validate-policy.gavel.svc validate.gavel.svc-ignore Fail Ignore"
	eventually 20 expect_denied "ignore: the Ignore webhook still judges" \
		k create --dry-run=server -f "$bad" -- "Policy pod-tag failed"
	gavel_stop
	eventually 20 expect_allowed "ignore: gavel stopped with only Ignore policies: writes succeed" \
		k create --dry-run=server -f "$bad"
	gavel_start || return 1
	k delete validatingpolicy --all >/dev/null
	eventually 20 expect_success "ignore: policies deleted, generated webhooks removed" \
		no_generated_webhook
}

case_crd() {
	local f crd cr
	f=$(manifest crd-policy <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: widget-size}
spec:
  background: false
  rules:
    - name: size
      match: {any: [{resources: {kinds: [ConfigMap, Widget]}}]}
      validate:
        failureAction: Enforce
        message: size must be positive
        pattern: {spec: {size: ">0"}}
EOF
)
	crd=$(manifest crd <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.e2e.gavel.dev}
spec:
  group: e2e.gavel.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties: {size: {type: integer}}
EOF
)
	cr=$(manifest cr <<EOF
apiVersion: e2e.gavel.dev/v1
kind: Widget
metadata: {name: small, namespace: $NS}
spec: {size: 0}
EOF
)
	k apply -f "$f" >/dev/null
	eventually 20 expect_output "crd: the policy's known kind is registered" \
		hooks '{.webhooks[*].rules[*].resources}' -- configmaps
	expect_success "crd: no rule for a kind not served yet" \
		no_rule_for e2e.gavel.dev
	k apply -f "$crd" >/dev/null
	k wait --for=condition=Established --timeout=30s crd/widgets.e2e.gavel.dev >/dev/null
	eventually 30 expect_output "crd: the CRD created after the policy gets its rule" \
		hooks '{range .webhooks[*].rules[*]}{.apiGroups}{.resources}{"\n"}{end}' \
		-- '["e2e.gavel.dev"]["widgets"]'
	eventually 20 expect_denied "crd: the custom resource is denied" \
		k create -f "$cr" -- "size must be positive"
	k delete crd widgets.e2e.gavel.dev >/dev/null
	eventually 30 expect_success "crd: the CRD deleted, its rule goes" \
		no_rule_for e2e.gavel.dev
	k delete clusterpolicy widget-size >/dev/null
}

main() {
	e2e_setup || exit 2
	e2e_apply_crds || exit 2
	e2e_certs || exit 2
	k create namespace "$GAVEL_NAMESPACE" >/dev/null || exit 2
	for n in "$NS" "$OTHER"; do
		k create namespace "$n" >/dev/null || exit 2
		k -n "$n" create serviceaccount default >/dev/null || exit 2
	done
	GAVEL_AUTO_WEBHOOKS=true
	gavel_start || exit 2
	policy_webhook_register
	log "API server on port $APISERVER_PORT; gavel on $GAVEL_PORT"
	case_vpol
	case_events
	case_nvpol
	case_ignore
	case_crd
	summary
}

main "$@"
