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
#   webhooks   the resource webhooks generated from the policies: none without
#              a policy; a Pod policy gives validate.gavel.svc-fail with pods
#              and the autogen kinds; a violating Pod is denied through it;
#              gavel stopped: ConfigMap writes still succeed (not matched),
#              Pods are refused (Fail); the policy made failurePolicy Ignore:
#              only validate.gavel.svc-ignore, and with gavel stopped writes
#              succeed; policy deleted: the webhooks go
#   events     a blocked Pod gives a PolicyViolation Event on the ClusterPolicy
#              (none on the Pod, which was not stored), an admitted Audit
#              violation one on the Pod too, with Kyverno's messages and
#              component; no PolicyApplied Event by default
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

NS=e2e-hooks # where pod_manifest puts its Pods

case_status() {
	local f
	f=$(manifest status-policies <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-tag}
spec:
  background: true
  scanInterval: 1h
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
	# No scan schedule of its own: Ready alone, as Kyverno writes it.
	expect_success "status: without a schedule of its own, the Ready condition alone" \
		test "$(jp clusterpolicy/broken '{.status.conditions[*].type}')" = "Ready"
}

case_webhooks() {
	local f good bad rv1 rv2
	k delete clusterpolicy --all >/dev/null
	k delete policy --all -A >/dev/null
	k create namespace e2e-hooks >/dev/null
	k -n e2e-hooks create serviceaccount default >/dev/null
	policy_webhook_register
	good=$(pod_manifest good nginx:1.25)
	bad=$(pod_manifest bad nginx)
	eventually 20 expect_success "webhooks: no policy, no generated webhook" no_generated_webhook
	f=$(manifest pod-only <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pod-tag}
spec:
  background: false
  webhookTimeoutSeconds: 7
  rules:
    - name: image-tag
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate:
        failureAction: Enforce
        message: An image tag is required.
        pattern: {spec: {containers: [{image: "*:*"}]}}
EOF
)
	k apply -f "$f" >/dev/null
	eventually 20 expect_output "webhooks: a Fail policy gives validate.gavel.svc-fail" \
		hooks '{.webhooks[*].name}' -- "validate.gavel.svc-fail"
	expect_output "webhooks: rules from the Pod kind and its autogen kinds" \
		hooks '{range .webhooks[?(@.name=="validate.gavel.svc-fail")].rules[*]}{.apiGroups}{.resources}{.operations}{.scope}{"\n"}{end}' \
		-- '[""]["pods","pods/ephemeralcontainers","replicationcontrollers"]["CONNECT","CREATE","DELETE","UPDATE"]Namespaced' \
		'["apps"]["daemonsets","deployments","replicasets","statefulsets"]' '["batch"]["jobs"'
	# (batch/v1 CronJob, an autogen kind, is served from Kubernetes 1.21: left out on 1.20.)
	expect_output "webhooks: path, timeout, failurePolicy, own namespace excluded" \
		hooks '{range .webhooks[?(@.name=="validate.gavel.svc-fail")]}{.clientConfig.url} {.timeoutSeconds} {.failurePolicy} {.namespaceSelector.matchExpressions[0].values}{end}' \
		-- "/validate/fail 7 Fail" '["gavel"]'
	k get validatingwebhookconfiguration "$GAVEL_WEBHOOK" -o yaml >"$E2E_DIR/webhooks-pod-only.yaml"
	eventually 20 expect_denied "webhooks: a Pod without a tag is denied through /validate/fail" \
		k create --dry-run=server -f "$bad" -- "An image tag is required"
	expect_allowed "webhooks: a tagged Pod is allowed" k create --dry-run=server -f "$good"
	rv1=$(hooks '{.metadata.resourceVersion}')
	sleep 3
	rv2=$(hooks '{.metadata.resourceVersion}')
	expect_success "webhooks: not written again when unchanged" test "$rv1" = "$rv2"

	gavel_stop
	expect_allowed "webhooks: gavel stopped, a Pod-only policy leaves ConfigMap writes untouched" \
		k -n e2e-hooks create configmap untouched --from-literal=a=b
	expect_refused "webhooks: gavel stopped, Pods are refused (failurePolicy Fail)" \
		k create --dry-run=server -f "$good" -- "failed calling webhook"
	gavel_start || return 1

	k patch clusterpolicy pod-tag --type=merge -p '{"spec":{"failurePolicy":"Ignore"}}' >/dev/null
	eventually 20 expect_output "webhooks: only Ignore policies: validate.gavel.svc-ignore alone" \
		hooks '{.webhooks[*].name} {.webhooks[*].failurePolicy}' \
		-- "validate-policy.gavel.svc validate.gavel.svc-ignore Fail Ignore"
	eventually 20 expect_denied "webhooks: the Ignore webhook still judges (/validate/ignore)" \
		k create --dry-run=server -f "$bad" -- "An image tag is required"
	gavel_stop
	eventually 20 expect_allowed "webhooks: gavel stopped with only Ignore policies: writes succeed" \
		k create --dry-run=server -f "$bad"
	gavel_start || return 1

	k delete clusterpolicy pod-tag >/dev/null
	eventually 20 expect_success "webhooks: policy deleted, generated webhooks removed" \
		no_generated_webhook
}

case_events() {
	local f bad
	f=$(manifest pod-events <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pod-events}
spec:
  background: false
  rules:
    - name: image-tag
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate:
        failureAction: Enforce
        message: An image tag is required.
        pattern: {spec: {containers: [{image: "*:*"}]}}
EOF
)
	k apply -f "$f" >/dev/null
	bad=$(pod_manifest blocked nginx)
	eventually 20 expect_denied "events: a Pod without a tag is blocked" \
		k create -f "$bad" -- "An image tag is required"
	eventually 10 expect_output "events: PolicyViolation on the ClusterPolicy" \
		k -n default get events --field-selector involvedObject.name=pod-events,reason=PolicyViolation \
		-o 'jsonpath={range .items[*]}{.involvedObject.kind}|{.source.component}|{.action}|{.message}{"\n"}{end}' \
		-- "ClusterPolicy|kyverno-admission|Resource Blocked|Pod e2e-hooks/blocked: [image-tag] fail (blocked)"
	k -n e2e-hooks get events --field-selector involvedObject.name=blocked -o yaml >"$E2E_DIR/events.yaml"
	expect_success "events: none on the blocked Pod (it was not stored)" \
		test -z "$(k -n e2e-hooks get events --field-selector involvedObject.name=blocked -o name)"
	# Audit: the Pod is stored, and its violation is told on it too
	k apply -f - >/dev/null <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pod-events-audit}
spec:
  background: false
  rules:
    - name: team
      match: {any: [{resources: {kinds: [Pod], names: [audited]}}]}
      validate:
        failureAction: Audit
        message: A team label is required.
        pattern: {metadata: {labels: {team: "?*"}}}
EOF
	eventually 20 expect_success "events: an Audit violation is admitted" \
		k create -f "$(pod_manifest audited nginx:1.25)"
	eventually 10 expect_output "events: PolicyViolation on the admitted Pod" \
		k -n e2e-hooks get events --field-selector involvedObject.name=audited,reason=PolicyViolation \
		-o 'jsonpath={range .items[*]}{.type}|{.involvedObject.kind}|{.reportingComponent}|{.message}{"\n"}{end}' \
		-- "Warning|Pod|kyverno-admission|policy pod-events-audit/team fail: validation error: A team label is required."
	k delete clusterpolicy pod-events-audit >/dev/null
	k create -f "$(pod_manifest tagged nginx:1.25)" >/dev/null
	sleep 2
	expect_success "events: no PolicyApplied Event by default" \
		test -z "$(k get events -A --field-selector reason=PolicyApplied -o name)"
	expect_success "events: none at all for the allowed Pod" \
		test -z "$(k -n e2e-hooks get events --field-selector involvedObject.name=tagged -o name)"
	k delete clusterpolicy pod-events >/dev/null
}

main() {
	e2e_setup || exit 2
	e2e_apply_crds || exit 2
	e2e_certs || exit 2
	k create namespace "$GAVEL_NAMESPACE" >/dev/null || exit 2
	GAVEL_AUTO_WEBHOOKS=true
	gavel_start || exit 2
	log "API server on port $APISERVER_PORT; gavel on $GAVEL_PORT"
	case_status
	case_webhooks
	case_events
	summary
}

main "$@"
