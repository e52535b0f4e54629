#!/usr/bin/env bash
# e2e/admission.sh: gavel's admission webhook end to end, against a real
# kube-apiserver v1.20 + etcd on 127.0.0.1 (e2e/local; no kubelet, so Pods
# stay Pending) with `gavel serve` in cluster mode registered through a
# ValidatingWebhookConfiguration (clientConfig.url https://127.0.0.1:PORT).
#
#   sh e2e/admission.sh          (from the top of the tree, after make)
#
# Cases: the sample policies (manifests/samples/policies, applied as
# ClusterPolicies) admit and deny Pods, Deployments and CronJobs with
# Kyverno's message (autogen rule names); an Audit policy with emitWarning
# admits with a `Warning:`; a namespaced Policy applies only in its
# namespace; namespaceSelector follows namespace labels; a policy created,
# updated and deleted takes effect within 5 s; an invalid policy is refused
# at `kubectl apply` (validate-policy webhook); certificates: the Secret
# gavel/gavel-tls and the caBundle injected again when removed; gavel
# stopped -> the API server applies failurePolicy (Fail: "failed calling
# webhook"; Ignore: admitted); gavel restarted -> serving again.
# Ends with "N passed, N failed"; exit status 1 when a case failed, 2 when
# the environment could not be set up. About a minute.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

# pod NAME NAMESPACE LABELS IMAGE PRIVILEGED [INDENT]: a Pod manifest (LABELS a flow map).
pod() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $2, labels: $3}
spec:
  containers:
    - name: main
      image: $4
      securityContext: {privileged: $5}
EOF
}

# deployment NAME NAMESPACE REPLICAS TEMPLATE_LABELS PRIVILEGED
deployment() {
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $2}
spec:
  replicas: $3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: $4}
    spec:
      containers:
        - name: main
          image: registry.example.com/shop/api:2.0.0
          securityContext: {privileged: $5}
EOF
}

# cronjob NAME NAMESPACE API_VERSION TEMPLATE_LABELS PRIVILEGED
cronjob() {
	cat <<EOF
apiVersion: $3
kind: CronJob
metadata: {name: $1, namespace: $2}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        metadata: {labels: $4}
        spec:
          restartPolicy: Never
          containers:
            - name: main
              image: registry.example.com/shop/batch:1.0.0
              securityContext: {privileged: $5}
EOF
}

# cronjob_json NAME NAMESPACE TEMPLATE_LABELS_JSON PRIVILEGED: a batch/v1 CronJob as JSON.
cronjob_json() {
	printf '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"%s","namespace":"%s"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"metadata":{"labels":%s},"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"registry.example.com/shop/batch:1.0.0","securityContext":{"privileged":%s}}]}}}}}}' \
		"$1" "$2" "$3" "$4"
}

create() { k create -f "$1"; }

# post_review GROUP VERSION KIND RESOURCE NAMESPACE NAME OBJECT_JSON: a CREATE
# AdmissionReview as the API server sends it, POSTed straight to gavel's /validate.
post_review() {
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"e2e-%s","kind":{"group":"%s","version":"%s","kind":"%s"},"resource":{"group":"%s","version":"%s","resource":"%s"},"requestKind":{"group":"%s","version":"%s","kind":"%s"},"namespace":"%s","name":"%s","operation":"CREATE","userInfo":{"username":"admin","groups":["system:masters","system:authenticated"]},"object":%s,"oldObject":null,"dryRun":true}}' \
		"$6" "$1" "$2" "$3" "$1" "$2" "$4" "$1" "$2" "$3" "$5" "$6" "$7" |
		curl -sS --max-time 10 --cacert "$E2E_TLS/ca.crt" \
			-H 'Content-Type: application/json' --data-binary @- \
			"https://127.0.0.1:$GAVEL_PORT/validate"
}

# ---- workloads against the sample policies ---------------------------------------

case_workloads() {
	local ns=e2e-workloads f
	log "workloads vs the sample policies"
	ns_create "$ns"

	f=$(pod good "$ns" '{team: e2e}' registry.example.com/shop/web:1.4.2 false | manifest pod-good)
	expect_allowed "compliant Pod is admitted" create "$f"

	f=$(pod no-team "$ns" '{app: x}' registry.example.com/shop/web:1.4.2 false | manifest pod-no-team)
	expect_denied "Pod without team label is denied with Kyverno's message" create "$f" -- \
		'admission webhook "validate.gavel.svc" denied the request' \
		"resource Pod/$ns/no-team was blocked due to the following policies" \
		"require-team-label:" \
		"check-team: 'validation error: label team is required. rule check-team failed at path /metadata/labels/team/'"

	f=$(pod privileged "$ns" '{team: e2e}' registry.example.com/shop/web:1.4.2 true | manifest pod-priv)
	expect_denied "privileged Pod is denied (disallow-privileged)" create "$f" -- \
		"disallow-privileged:" "no-privileged-containers:" \
		"privileged containers are not allowed" \
		"/spec/containers/0/securityContext/privileged/"

	f=$(deployment good "$ns" 2 '{app: good, team: e2e}' false | manifest deploy-good)
	expect_allowed "compliant Deployment is admitted" create "$f"

	f=$(deployment no-team "$ns" 2 '{app: no-team}' false | manifest deploy-no-team)
	expect_denied "Deployment without team label in its template is denied (autogen)" \
		create "$f" -- "resource Deployment/$ns/no-team was blocked" \
		"autogen-check-team: 'validation error: label team is required. rule autogen-check-team failed at path /spec/template/metadata/labels/team/'"

	f=$(deployment too-many "$ns" 25 '{app: too-many, team: e2e}' false | manifest deploy-replicas)
	expect_denied "Deployment with 25 replicas is denied (limit-replicas)" create "$f" -- \
		"limit-replicas:" "replicas-1-to-10:" "replicas must be between 1 and 10"

	case_cronjobs "$ns"

	f=$(pod latest "$ns" '{team: e2e}' busybox:latest false | manifest pod-latest)
	expect_output "Audit policy with emitWarning: :latest Pod admitted with a Warning" \
		create "$f" -- "pod/latest created" \
		"Warning: policy disallow-latest-tag.no-latest: the :latest tag is not allowed"
	expect_output "the admitted Pods were stored (and stay Pending: no kubelet)" \
		k -n "$ns" get pods -- good latest Pending
}

# batch/v1 CronJob exists from 1.21; Kyverno's autogen-cronjob rules (and
# gavel's) match batch/v1 only. On 1.20 the batch/v1 cases go straight to
# gavel's /validate as the API server would send them.
case_cronjobs() {
	local ns=$1 f
	if k get --raw /apis/batch/v1 2>/dev/null | grep -q '"kind":"CronJob"'; then
		f=$(cronjob good "$ns" batch/v1 '{team: e2e}' false | manifest cj-good)
		expect_allowed "compliant CronJob is admitted" create "$f"
		f=$(cronjob no-team "$ns" batch/v1 '{app: x}' false | manifest cj-no-team)
		expect_denied "CronJob without team label is denied (autogen-cronjob)" create "$f" -- \
			"resource CronJob/$ns/no-team was blocked" \
			"autogen-cronjob-check-team: 'validation error: label team is required. rule autogen-cronjob-check-team failed at path /spec/jobTemplate/spec/template/metadata/labels/team/'"
		return 0
	fi
	expect_output "compliant batch/v1 CronJob is allowed (review sent to gavel directly)" \
		post_review batch v1 CronJob cronjobs "$ns" good \
		"$(cronjob_json good "$ns" '{"team":"e2e"}' false)" -- '"allowed":true'
	expect_output "violating batch/v1 CronJob is denied (autogen-cronjob, review sent to gavel directly)" \
		post_review batch v1 CronJob cronjobs "$ns" no-team \
		"$(cronjob_json no-team "$ns" '{"app":"x"}' true)" -- '"allowed":false' \
		"resource CronJob/$ns/no-team was blocked" \
		"autogen-cronjob-check-team: 'validation error: label team is required. rule autogen-cronjob-check-team failed at path /spec/jobTemplate/spec/template/metadata/labels/team/'" \
		"autogen-cronjob-no-privileged-containers"
	f=$(cronjob old-api "$ns" batch/v1beta1 '{app: x}' false | manifest cj-v1beta1)
	expect_allowed "batch/v1beta1 CronJob (the only one 1.20 serves) is admitted: autogen matches batch/v1 only, as Kyverno" \
		create "$f"
}

# ---- a namespaced Policy applies only in its namespace -------------------------------

case_namespaced_policy() {
	local pol a b
	log "namespaced Policy"
	ns_create e2e-pol-a
	ns_create e2e-pol-b
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
	expect_allowed "Policy e2e-pol-a/require-tier is accepted" k apply -f "$pol"
	eventually 5 expect_denied "namespaced Policy denies in its namespace" \
		k apply --dry-run=server -f "$a" -- "require-tier:" "label tier is required in e2e-pol-a"
	expect_allowed "namespaced Policy does not apply in another namespace" create "$b"
}

# ---- namespaceSelector on namespace labels ----------------------------------------

case_namespace_selector() {
	local pol strict lax
	log "namespaceSelector"
	# 1.20 sets no kubernetes.io/metadata.name label: the test labels its namespaces.
	ns_create e2e-strict gavel-e2e/strict=true
	ns_create e2e-lax
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
	expect_allowed "ClusterPolicy e2e-nssel is accepted" k apply -f "$pol"
	eventually 5 expect_denied "namespaceSelector: denied in a labelled namespace" \
		k apply --dry-run=server -f "$strict" -- "e2e-nssel:" \
		"label reviewed is required in strict namespaces"
	expect_allowed "namespaceSelector: admitted in an unlabelled namespace" \
		k apply --dry-run=server -f "$lax"
	expect_allowed "label namespace e2e-lax gavel-e2e/strict=true" \
		k label namespace e2e-lax gavel-e2e/strict=true
	eventually 5 expect_denied "namespaceSelector follows a namespace label change" \
		k apply --dry-run=server -f "$lax" -- "e2e-nssel:"
}

# ---- a policy created, updated, deleted takes effect within 5 seconds ------------------

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
	ns_create e2e-live
	v1=$(live_policy "color must be blue (v1)" | manifest live-v1)
	v2=$(live_policy "color must be blue (v2)" | manifest live-v2)
	cm=$(manifest cm-live <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: red, namespace: e2e-live, labels: {color: red}}
data: {k: v}
EOF
)
	expect_allowed "before the policy exists: admitted" k apply --dry-run=server -f "$cm"
	expect_allowed "create ClusterPolicy e2e-live" k apply -f "$v1"
	eventually 5 expect_denied "created policy takes effect within 5 s" \
		k apply --dry-run=server -f "$cm" -- "e2e-live:" "color must be blue (v1)"
	expect_allowed "update ClusterPolicy e2e-live" k apply -f "$v2"
	eventually 5 expect_denied "updated policy takes effect within 5 s" \
		k apply --dry-run=server -f "$cm" -- "color must be blue (v2)"
	expect_allowed "delete ClusterPolicy e2e-live" k delete clusterpolicy e2e-live
	eventually 5 expect_allowed "deleted policy stops applying within 5 s" \
		k apply --dry-run=server -f "$cm"
}

# ---- invalid policies are refused at kubectl apply ------------------------------------

case_invalid_policy() {
	local f
	log "invalid policy"
	f=$(manifest bad-userinfo <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: e2e-bad-userinfo}
spec:
  background: true
  rules:
    - name: owner-is-requester
      match:
        any:
          - resources: {kinds: [ConfigMap]}
      validate:
        failureAction: Enforce
        message: "owner must be {{ request.userInfo.username }}"
        pattern:
          metadata:
            labels:
              owner: "{{ request.userInfo.username }}"
EOF
)
	expect_denied "background policy using request.userInfo is refused (validate-policy)" \
		k apply -f "$f" -- 'admission webhook "validate-policy.gavel.svc" denied the request' \
		"only select variables are allowed in background mode"
	expect_refused "the refused policy was not stored" \
		k get clusterpolicy e2e-bad-userinfo -- "NotFound"
	f=$(sed 's/background: true/background: false/' "$f" | manifest good-userinfo)
	expect_allowed "the same policy with background: false is accepted" \
		k apply --dry-run=server -f "$f"
}

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

main() {
	if ! { e2e_setup && e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
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
	case_certificates
	case_failure_policy
	summary
}

main "$@"
