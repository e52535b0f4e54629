# shellcheck shell=bash disable=SC2034 # WHY is read by e2e/lib.sh, E2E_CLUSTER_POLICIES by the runners
# e2e/cases/admission.sh: the admission and report cases that the local run
# (e2e/admission.sh: kube-apiserver v1.20 + etcd on 127.0.0.1, gavel serve
# behind a webhook of e2e/lib.sh) and the kind run (e2e/kind/cases.sh:
# gavel installed from manifests/) both run, written with the verbs of
# e2e/lib.sh and kubectl only. Sourced after e2e/lib.sh; bash 4+.
#
# Before the cases run: the sample policies (manifests/samples/policies) are
# applied and in gavel's snapshot; manifests/rbac.yaml is applied (case_rbac).
#
#   case_workloads           Pods, Deployments, CronJobs against the sample policies
#   case_namespaced_policy   a namespaced Policy applies only in its namespace
#   case_namespace_selector  namespaceSelector follows namespace labels
#   case_live_policy         a policy created, updated, deleted takes effect within 5 s
#   case_invalid_policy      invalid policies and exceptions are refused at kubectl apply
#   case_rbac                what the gavel ServiceAccount may do (manifests/rbac.yaml)
#   case_background_reports  reports about objects that existed before the policy
#
# Env: E2E_RESOURCE_WEBHOOK (the webhook that judges resources, in denial
# messages; default validate.gavel.svc), REPORT_TIMEOUT (seconds to wait
# for a background report, default 180). Cluster-scoped objects the cases
# create: the ClusterPolicies in E2E_CLUSTER_POLICIES; namespaces: ns_create
# (E2E_NAMESPACES).

E2E_RESOURCE_WEBHOOK=${E2E_RESOURCE_WEBHOOK:-validate.gavel.svc}
REPORT_TIMEOUT=${REPORT_TIMEOUT:-180}
E2E_CLUSTER_POLICIES=(e2e-nssel e2e-live e2e-bg-require-owner)

# pod NAME NAMESPACE LABELS IMAGE PRIVILEGED: a Pod manifest (LABELS a flow map).
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
dry() { k apply --dry-run=server -f "$1"; }

# post_review GROUP VERSION KIND RESOURCE NAMESPACE NAME OBJECT_JSON: a CREATE
# AdmissionReview as the API server sends it, POSTed straight to gavel's
# /validate (local run only: gavel on 127.0.0.1:$GAVEL_PORT).
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
		"admission webhook \"$E2E_RESOURCE_WEBHOOK\" denied the request" \
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

	# An image no node can pull: the Pod stays Pending with a kubelet too.
	f=$(pod latest "$ns" '{team: e2e}' registry.example.com/shop/web:latest false | manifest pod-latest)
	expect_output "Audit policy with emitWarning: :latest Pod admitted with a Warning" \
		create "$f" -- "pod/latest created" \
		"Warning: policy disallow-latest-tag.no-latest: the :latest tag is not allowed"
	expect_output "the admitted Pods were stored (and stay Pending)" \
		k -n "$ns" get pods good latest \
		-o 'jsonpath={range .items[*]}{.metadata.name} {.status.phase};{end}' -- \
		"good Pending;" "latest Pending;"
}

# batch/v1 CronJob exists from 1.21; Kyverno's autogen-cronjob rules (and
# gavel's) match batch/v1 only. Where it is not served (1.20), the local run
# sends the batch/v1 cases straight to gavel's /validate as the API server
# would, and checks that a batch/v1beta1 CronJob is admitted.
case_cronjobs() {
	local ns=$1 f
	if k get --raw /apis/batch/v1 2>/dev/null | grep -q '"kind":"CronJob"'; then
		f=$(cronjob good "$ns" batch/v1 '{team: e2e}' false | manifest cj-good)
		expect_allowed "compliant CronJob is admitted" create "$f"
		f=$(cronjob no-team "$ns" batch/v1 '{app: x}' false | manifest cj-no-team)
		expect_denied "CronJob without team label is denied (autogen-cronjob)" create "$f" -- \
			"resource CronJob/$ns/no-team was blocked" \
			"autogen-cronjob-check-team: 'validation error: label team is required. rule autogen-cronjob-check-team failed at path /spec/jobTemplate/spec/template/metadata/labels/team/'"
		f=$(cronjob privileged "$ns" batch/v1 '{team: e2e}' true | manifest cj-privileged)
		expect_denied "privileged CronJob is denied (autogen-cronjob)" create "$f" -- \
			"disallow-privileged:" "autogen-cronjob-no-privileged-containers"
		return 0
	fi
	if [ "$E2E_TARGET" != local ]; then
		skip "CronJob cases" "batch/v1 CronJob is not served"
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
		dry "$a" -- "require-tier:" "label tier is required in e2e-pol-a"
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
		dry "$strict" -- "e2e-nssel:" "label reviewed is required in strict namespaces"
	expect_allowed "namespaceSelector: admitted in an unlabelled namespace" dry "$lax"
	expect_allowed "label namespace e2e-lax gavel-e2e/strict=true" \
		k label namespace e2e-lax gavel-e2e/strict=true --overwrite
	eventually 5 expect_denied "namespaceSelector follows a namespace label change" \
		dry "$lax" -- "e2e-nssel:" "label reviewed is required in strict namespaces"
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
	expect_allowed "before the policy exists: admitted" dry "$cm"
	expect_allowed "create ClusterPolicy e2e-live" k apply -f "$v1"
	eventually 5 expect_denied "created policy takes effect within 5 s" \
		dry "$cm" -- "e2e-live:" "color must be blue (v1)"
	expect_allowed "update ClusterPolicy e2e-live" k apply -f "$v2"
	eventually 5 expect_denied "updated policy takes effect within 5 s" \
		dry "$cm" -- "e2e-live:" "color must be blue (v2)"
	expect_allowed "delete ClusterPolicy e2e-live" k delete clusterpolicy e2e-live
	eventually 5 expect_allowed "deleted policy stops applying within 5 s" dry "$cm"
}

# ---- invalid policies are refused at kubectl apply ------------------------------------

case_invalid_policy() {
	local f
	log "invalid policies"
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
	expect_allowed "the same policy with background: false is accepted" dry "$f"

	# Caught by the CRD schema (enum).
	f=$(manifest bad-schema <<'EOF'
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
	expect_refused "policy with an invalid validationFailureAction is refused (schema)" \
		k apply -f "$f" -- "Unsupported value" "Block"

	# Schema-valid, but does not compile: refused by validate-policy.gavel.svc.
	f=$(manifest bad-operator <<'EOF'
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
	expect_denied "policy that does not compile is refused (validate-policy)" \
		k apply -f "$f" -- "validate-policy.gavel.svc"
	expect_refused "the refused policy was not stored" \
		k get clusterpolicy e2e-bad-operator -- "NotFound"

	# Schema-valid PolicyException that does not compile (any and all together).
	ns_create e2e-workloads
	f=$(manifest bad-exception <<'EOF'
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
	expect_denied "PolicyException that does not compile is refused with its path (validate-policy)" \
		k apply -f "$f" -- "validate-policy.gavel.svc" "spec.match: "
	expect_refused "the refused PolicyException was not stored" \
		k -n e2e-workloads get policyexception e2e-bad-exception -- "NotFound"
}

# ---- what the gavel ServiceAccount may do (manifests/rbac.yaml) ------------------

# check_sa_may ANSWER ARGS...: `kubectl auth can-i ARGS` as the gavel
# ServiceAccount answers ANSWER (yes or no).
check_sa_may() {
	local want=$1 got
	shift
	run_cmd k auth can-i --as=system:serviceaccount:gavel:gavel "$@"
	got=${OUT##*$'\n'}
	if [ "$got" != "$want" ]; then
		WHY="answered '$got', expected '$want'"
		return 1
	fi
}
expect_sa_may() { record "$1" check_sa_may "${@:2}"; }

# check_no_wildcards FILE: no '*' among the apiGroups, resources, verbs or resourceNames of FILE.
check_no_wildcards() {
	OUT=$(grep -nE '^ *-? *(apiGroups|resources|verbs|resourceNames):.*\*' "$1")
	if [ -n "$OUT" ]; then
		WHY="wildcard in $1"
		return 1
	fi
}
expect_no_wildcards() { record "$1" check_no_wildcards "${@:2}"; }

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
	expect_no_wildcards "manifests/rbac.yaml grants no wildcard" "$E2E_ROOT/manifests/rbac.yaml"
	expect_sa_may "ServiceAccount gavel: can-i '*' '*': no" no '*' '*'
	expect_sa_may "ServiceAccount gavel: can-i '*' secrets -n gavel: no" no '*' secrets -n gavel
	while read -r want args; do
		[ -n "$want" ] || continue
		# shellcheck disable=SC2086 # args: the words of one can-i call, no globs
		expect_sa_may "ServiceAccount gavel: can-i $args: $want" "$want" $args
	done <<<"$RBAC_CHECKS"
}

# ---- background reports for objects that existed before the policy -------------

# check_report_has KIND NS POLICY RESULT NAME: a result of POLICY with RESULT
# about the object NAME, in the reports of KIND (policyreport in namespace
# NS, or clusterpolicyreport with NS "-"). The object is named in the
# result's .resources (per-namespace reports) or in the report's .scope
# (per-resource reports); both layouts are accepted.
check_report_has() {
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
	ns_create e2e-bg
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
	expect_allowed "pre-existing ConfigMap e2e-bg/owned is created" k apply -f "$good"
	expect_allowed "pre-existing ConfigMap e2e-bg/unowned is created" k apply -f "$bad"
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
	expect_allowed "Audit ClusterPolicy e2e-bg-require-owner is accepted" k apply -f "$pol"
	eventually "$REPORT_TIMEOUT" expect_report_has "PolicyReport: fail for pre-existing e2e-bg/unowned" \
		policyreport e2e-bg e2e-bg-require-owner fail unowned
	eventually 30 expect_report_has "PolicyReport: pass for pre-existing e2e-bg/owned" \
		policyreport e2e-bg e2e-bg-require-owner pass owned
	eventually 30 expect_report_has "ClusterPolicyReport: fail for Namespace e2e-bg" \
		clusterpolicyreport - e2e-bg-require-owner fail e2e-bg
	expect_output "kubectl get policyreport -A lists the e2e-bg report with counts" \
		k get policyreport -A -- "e2e-bg" "PASS" "FAIL"
	expect_output "report summary counts the failure" \
		k -n e2e-bg get policyreport \
		-o 'jsonpath={range .items[*]}{"fail="}{.summary.fail}{"\n"}{end}' -- "fail=1"
}
