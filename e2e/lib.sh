# shellcheck shell=bash
# e2e/lib.sh: the end-to-end harness: assertions and environment helpers for
# the suites that run against a local control plane (e2e/local:
# kube-apiserver v1.20 + etcd on 127.0.0.1, no kubelet) and for the kind run
# (e2e/kind, gavel installed from manifests/), whose cases are the same data
# (e2e/cases/). Sourced by every suite; bash 4+.
#
# E2E_TARGET (set before sourcing): local (default) or kind. On kind, nothing
# here starts a control plane or gavel: the sanitizer check is left out of
# the summary.
#
# Assertions. Each records one case: "ok   NAME" or "FAIL NAME: why" followed
# by the command's output. NAME comes first, the command follows; SUBSTR
# are fixed strings looked for in the command's combined stdout+stderr.
#
#   expect_allowed NAME CMD...              CMD succeeds
#   expect_denied  NAME CMD... -- SUBSTR... CMD fails with "denied the request" and each SUBSTR
#   expect_refused NAME CMD... -- SUBSTR... CMD fails and its output has each SUBSTR
#   expect_output  NAME CMD... -- SUBSTR... CMD succeeds and its output has each SUBSTR
#   expect_success NAME CMD...              same as expect_allowed, for checks that are not requests
#   eventually SECONDS expect_X NAME ARGS...  retries the check every 0.25 s until it
#                                           holds or SECONDS pass; records it once,
#                                           with the time it took
#   skip NAME REASON                        a case that cannot run here (not counted)
#   sanitizer_check                         stops gavel serve (SIGTERM), then one case:
#                                           no sanitizer report in $E2E_DIR/*.log
#   summary                                 sanitizer_check, then "N passed, N failed"
#                                           (and the failures); status 1 when
#                                           something failed
#
# Environment (all on 127.0.0.1, everything under $E2E_DIR, removed on exit
# unless E2E_KEEP=1):
#
#   e2e_setup                start the control plane (e2e/local/up.sh), source its env
#                            (KUBECONFIG, KUBECTL, APISERVER_PORT...), install the EXIT trap
#   k ARGS...                kubectl with a request timeout (E2E_REQUEST_TIMEOUT, 20s)
#   jp [-n NS] OBJECT JSONPATH  fields of an object: k get -o jsonpath (stderr too)
#   e2e_apply_crds           apply manifests/crds and wait until the policy CRDs (kyverno.io
#                            and policies.kyverno.io) are Established
#   e2e_certs                gavel certs generate ... --ip 127.0.0.1 --out $E2E_TLS
#   gavel_start [ARGS...]    gavel serve in cluster mode on $GAVEL_PORT and
#                            $GAVEL_METRICS_PORT (free ports below the ephemeral range,
#                            picked on the first start and kept on restarts); waits
#                            for /readyz. Call it directly, not through expect_*
#                            (they run commands in a subshell). The resource webhooks
#                            are those of webhook_register unless GAVEL_AUTO_WEBHOOKS=true
#                            (then gavel generates them from the policies)
#   gavel_stop               SIGTERM, wait for the exit
#   webhook_register [FAILURE_POLICY [cel]]
#                            ValidatingWebhookConfiguration $GAVEL_WEBHOOK with
#                            validate.gavel.svc -> https://127.0.0.1:$GAVEL_PORT/validate
#                            (namespaced objects in namespaces labelled gavel-e2e=on) and
#                            validate-policy.gavel.svc -> /validate-policy (kyverno.io
#                            policies and PolicyExceptions; with cel, the policies.kyverno.io
#                            kinds too); caBundle = $E2E_TLS/ca.crt
#   policy_webhook_register  the configuration as an installer leaves it (manifests/):
#                            validate-policy.gavel.svc alone, for the kyverno.io and
#                            policies.kyverno.io policy kinds
#   hooks JSONPATH           jp of the configuration $GAVEL_WEBHOOK
#   no_generated_webhook     the configuration holds validate-policy.gavel.svc alone
#   webhook_wait_effective   until the API server calls gavel (an invalid policy is denied)
#   ns_create NAME [K=V...]  a namespace labelled gavel-e2e=on plus the given labels (an
#                            existing one is labelled); its name is added to E2E_NAMESPACES;
#                            on kind, waits for its default ServiceAccount
#   manifest NAME <<EOF      stdin into $E2E_DIR/NAME.yaml; prints the path
#   pod_manifest NAME IMAGE  a one-container Pod NAME in namespace $NS into $E2E_DIR/pod-NAME.yaml
#   vpol KIND NAME NAMESPACE ACTIONS EXPRESSION MESSAGE [EXTRA_SPEC_YAML]
#                            a policies.kyverno.io/v1 KIND on Pods (CREATE, UPDATE) with one
#                            validation; NAMESPACE empty for a cluster-wide one
#
# Env: GAVEL (default ./gavel of this tree), E2E_KEEP=1 keeps $E2E_DIR and
# leaves the processes running (their pids are printed), KUBE_APISERVER /
# ETCD / KUBECTL as e2e/local/up.sh.

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
E2E_TARGET=${E2E_TARGET:-local}
GAVEL=${GAVEL:-$E2E_ROOT/gavel}
GAVEL_NAMESPACE=gavel
GAVEL_WEBHOOK=${GAVEL_WEBHOOK:-gavel}
GAVEL_PORT=
GAVEL_METRICS_PORT=
GAVEL_PID=
E2E_DIR=
E2E_TLS=
E2E_PASSED=0
E2E_FAILED=0
E2E_SKIPPED=0
E2E_FAILURES=()
E2E_NAMESPACES=()
OUT=
WHY=

log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# ---- assertions ---------------------------------------------------------------

# now_ms: wall clock in milliseconds (EPOCHREALTIME in bash 5, else seconds).
now_ms() {
	if [ -n "${EPOCHREALTIME:-}" ]; then
		local t=${EPOCHREALTIME//[.,]/}
		printf '%s\n' "$((10#$t / 1000))"
	else
		printf '%s\n' "$(($(date +%s) * 1000))"
	fi
}

# run_cmd CMD...: runs CMD with stdin closed; combined output in OUT.
run_cmd() {
	local rc=0
	OUT=$("$@" 2>&1 </dev/null) || rc=$?
	return "$rc"
}

# split_args ARGS: CMD=(words before --), WANT=(words after --).
split_args() {
	CMD=()
	WANT=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		CMD+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	WANT=("$@")
}

contains_all() {
	local w
	for w in "$@"; do
		if [[ "$OUT" != *"$w"* ]]; then
			WHY="output lacks '$w'"
			return 1
		fi
	done
	return 0
}

check_allowed() {
	if run_cmd "$@"; then
		return 0
	fi
	WHY="refused, expected it to be allowed"
	return 1
}
check_success() { check_allowed "$@"; }

check_denied() {
	split_args "$@"
	if run_cmd "${CMD[@]}"; then
		WHY="allowed, expected a denial"
		return 1
	fi
	contains_all "denied the request" ${WANT[@]+"${WANT[@]}"}
}

check_refused() {
	split_args "$@"
	if run_cmd "${CMD[@]}"; then
		WHY="accepted, expected it to be refused"
		return 1
	fi
	contains_all ${WANT[@]+"${WANT[@]}"}
}

check_output() {
	split_args "$@"
	if ! run_cmd "${CMD[@]}"; then
		WHY="command failed"
		return 1
	fi
	contains_all ${WANT[@]+"${WANT[@]}"}
}

ok() {
	E2E_PASSED=$((E2E_PASSED + 1))
	printf 'ok   %s\n' "$1"
}

fail() {
	E2E_FAILED=$((E2E_FAILED + 1))
	E2E_FAILURES+=("$1")
	printf 'FAIL %s: %s\n' "$1" "$2"
	[ -z "$OUT" ] || printf '%s\n' "$OUT" | head -n 30 | sed 's/^/     | /'
}

skip() {
	E2E_SKIPPED=$((E2E_SKIPPED + 1))
	printf 'skip %s: %s\n' "$1" "$2"
}

# record NAME CHECK ARGS...
record() {
	local name=$1
	shift
	WHY=
	OUT=
	if "$@"; then ok "$name"; else fail "$name" "$WHY"; fi
}

expect_allowed() { record "$1" check_allowed "${@:2}"; }
expect_success() { record "$1" check_success "${@:2}"; }
expect_denied() { record "$1" check_denied "${@:2}"; }
expect_refused() { record "$1" check_refused "${@:2}"; }
expect_output() { record "$1" check_output "${@:2}"; }

# eventually SECONDS expect_X NAME ARGS...
eventually() {
	local secs=$1 check=check_${2#expect_} name=$3 start elapsed
	shift 3
	start=$(now_ms)
	while :; do
		WHY=
		OUT=
		if "$check" "$@"; then
			elapsed=$(($(now_ms) - start))
			ok "$name ($((elapsed / 1000)).$(printf '%03d' $((elapsed % 1000)))s)"
			return 0
		fi
		elapsed=$(($(now_ms) - start))
		if [ "$elapsed" -ge $((secs * 1000)) ]; then
			fail "$name" "not within ${secs}s: $WHY"
			return 0
		fi
		sleep 0.25
	done
}

# A sanitizer report (make SANITIZE=address,undefined): AddressSanitizer or
# LeakSanitizer ("==PID==ERROR: LeakSanitizer: ..."), UndefinedBehaviorSanitizer
# ("FILE:LINE:COL: runtime error: ...").
SANITIZER_RE='==[0-9]+==ERROR: [A-Za-z]+Sanitizer|: runtime error: '

# sanitizer_check: gavel serve (and the suites' other gavel processes) write
# sanitizer reports to stderr, that is to their logs in $E2E_DIR, and their
# exit statuses after SIGTERM are not looked at: a report in one of those
# logs fails the case. gavel serve is stopped first, with SIGTERM, so that
# LeakSanitizer's exit-time check runs (unless E2E_KEEP=1 keeps it running);
# a suite stops its other gavel processes (SIGTERM) before its summary. Only
# $E2E_DIR/*.log: the control plane's logs (Go: "runtime error: ...") are
# under $E2E_DIR/cp.
sanitizer_check() {
	local f bad=0
	[ "${E2E_KEEP:-0}" = 1 ] || gavel_stop
	[ -n "$E2E_DIR" ] || return 0
	for f in "$E2E_DIR"/*.log; do
		[ -f "$f" ] || continue
		grep -qE -- "$SANITIZER_RE" "$f" || continue
		OUT=$(grep -E -A 12 -- "$SANITIZER_RE" "$f")
		fail "no sanitizer report in $(basename "$f")" \
			"its first lines below (E2E_KEEP=1 keeps the whole log)"
		bad=1
	done
	OUT=
	[ "$bad" = 1 ] || ok "no sanitizer report in the logs of gavel"
}

summary() {
	local f
	[ "$E2E_TARGET" = kind ] || sanitizer_check
	if [ "$E2E_FAILED" -gt 0 ]; then
		printf 'failed:\n'
		for f in "${E2E_FAILURES[@]}"; do
			printf '  %s\n' "$f"
		done
	fi
	[ "$E2E_SKIPPED" -eq 0 ] || printf '%d skipped\n' "$E2E_SKIPPED"
	printf '%d passed, %d failed\n' "$E2E_PASSED" "$E2E_FAILED"
	[ "$E2E_FAILED" -eq 0 ]
}

# ---- environment ----------------------------------------------------------------

k() { "$KUBECTL" --request-timeout="${E2E_REQUEST_TIMEOUT:-20s}" "$@"; }

jp() {
	local nsarg=()
	if [ "$1" = -n ]; then
		nsarg=(-n "$2")
		shift 2
	fi
	k get ${nsarg[@]+"${nsarg[@]}"} "$1" -o "jsonpath=$2" 2>&1
}

manifest() {
	local f=$E2E_DIR/$1.yaml
	cat >"$f"
	printf '%s\n' "$f"
}

e2e_cleanup() {
	local rc=$?
	if [ "${E2E_KEEP:-0}" = 1 ] && [ -n "$E2E_DIR" ]; then
		log "E2E_KEEP=1: kept $E2E_DIR (gavel pid ${GAVEL_PID:-none}; stop with" \
			"e2e/local/down.sh $E2E_DIR/cp)"
		return "$rc"
	fi
	# The webhook configuration first: nothing may be judged by a gavel that is stopping.
	if [ -n "${KUBECONFIG:-}" ] && [ -n "$GAVEL_PORT" ]; then
		k delete validatingwebhookconfiguration "$GAVEL_WEBHOOK" --ignore-not-found \
			>/dev/null 2>&1 || true
	fi
	gavel_stop
	if [ -n "$E2E_DIR" ] && [ -d "$E2E_DIR/cp" ]; then
		"$E2E_ROOT/e2e/local/down.sh" "$E2E_DIR/cp" >/dev/null 2>&1 || true
	fi
	[ -z "$E2E_DIR" ] || rm -rf "$E2E_DIR"
	return "$rc"
}

e2e_setup() {
	E2E_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gavel-e2e.XXXXXX")
	E2E_TLS=$E2E_DIR/tls
	trap e2e_cleanup EXIT
	trap 'exit 130' INT TERM
	[ -x "$GAVEL" ] || {
		log "$GAVEL not found (run make first)"
		return 1
	}
	log "starting the local control plane (e2e/local/up.sh)"
	if ! "$E2E_ROOT/e2e/local/up.sh" "$E2E_DIR/cp" >"$E2E_DIR/up.log" 2>&1; then
		tail -n 20 "$E2E_DIR/up.log" >&2
		log "the local control plane did not start"
		return 1
	fi
	# shellcheck disable=SC1091 # written by up.sh
	. "$E2E_DIR/cp/env"
}

e2e_apply_crds() {
	k apply -f "$E2E_ROOT/manifests/crds" >/dev/null &&
		k wait --for condition=established --timeout=60s \
			crd/clusterpolicies.kyverno.io crd/policies.kyverno.io \
			crd/policyexceptions.kyverno.io \
			crd/validatingpolicies.policies.kyverno.io \
			crd/namespacedvalidatingpolicies.policies.kyverno.io \
			crd/policyexceptions.policies.kyverno.io >/dev/null
}

e2e_certs() {
	"$GAVEL" certs generate --service gavel --namespace "$GAVEL_NAMESPACE" --ip 127.0.0.1 \
		--out "$E2E_TLS" >/dev/null
}

# free_port: a port in 20000-31999 (below the ephemeral range, so that no
# client connection takes it while gavel is stopped) that nothing listens on.
free_port() {
	local used p h
	used=" "
	while read -r h; do
		used+="$((16#$h)) "
	done < <(awk 'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); print a[n] }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null)
	while :; do
		p=$((20000 + RANDOM % 12000))
		case "$used $GAVEL_PORT $GAVEL_METRICS_PORT " in
		*" $p "*) continue ;;
		esac
		printf '%s\n' "$p"
		return 0
	done
}

gavel_start() {
	local log=$E2E_DIR/gavel.log fixed=$GAVEL_PORT from
	touch "$log"
	for _ in 1 2 3; do
		if [ -z "$fixed" ]; then
			GAVEL_PORT=$(free_port)
			GAVEL_METRICS_PORT=$(free_port)
		fi
		from=$(($(wc -l <"$log") + 1))
		gavel_start_once "$log" "$from" "$@" && return 0
		# Another process took a port picked a moment ago: pick others (first start only).
		if [ -n "$fixed" ] || ! tail -n "+$from" "$log" | grep -q 'Address already in use'; then
			break
		fi
	done
	tail -n "+$from" "$log" | sed 's/^/     | /' >&2
	log "gavel serve did not start"
	return 1
}

# gavel_start_once LOG FROM_LINE ARGS...
gavel_start_once() {
	local log=$1 from=$2 up=''
	shift 2
	"$GAVEL" serve --kubeconfig "$KUBECONFIG" --namespace "$GAVEL_NAMESPACE" \
		--tls-dir "$E2E_TLS" --listen "127.0.0.1:$GAVEL_PORT" \
		--metrics-listen "127.0.0.1:$GAVEL_METRICS_PORT" \
		--webhook-config "$GAVEL_WEBHOOK" --auto-update-webhooks="${GAVEL_AUTO_WEBHOOKS:-false}" "$@" </dev/null >>"$log" 2>&1 &
	GAVEL_PID=$!
	for _ in $(seq 1 100); do
		if tail -n "+$from" "$log" | grep -q 'webhook listening on'; then
			up=1
			break
		fi
		kill -0 "$GAVEL_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$up" ]; then
		gavel_stop
		return 1
	fi
	for _ in $(seq 1 100); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$E2E_TLS/ca.crt" \
			"https://127.0.0.1:$GAVEL_PORT/readyz")" = 200 ] && return 0
		sleep 0.1
	done
	echo "gavel serve: not ready after 10 s" >>"$log"
	gavel_stop
	return 1
}

gavel_stop() {
	[ -n "$GAVEL_PID" ] || return 0
	kill -TERM "$GAVEL_PID" 2>/dev/null || true
	wait "$GAVEL_PID" 2>/dev/null || true
	GAVEL_PID=
}

# policy_webhook CA [cel]: the validate-policy.gavel.svc entry of a webhooks list,
# for the kyverno.io policy kinds (and with "cel" the policies.kyverno.io ones).
policy_webhook() {
	cat <<EOF
  - name: validate-policy.gavel.svc
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 5
    clientConfig:
      url: https://127.0.0.1:$GAVEL_PORT/validate-policy
      caBundle: $1
    rules:
      - apiGroups: [kyverno.io]
        apiVersions: ["*"]
        resources: [clusterpolicies, policies, policyexceptions, globalcontextentries]
        operations: [CREATE, UPDATE]
EOF
	[ "${2:-}" != cel ] || cat <<'EOF'
      - apiGroups: [policies.kyverno.io]
        apiVersions: ["*"]
        resources: [validatingpolicies, namespacedvalidatingpolicies, policyexceptions]
        operations: [CREATE, UPDATE]
EOF
}

webhook_register() {
	local policy=${1:-Fail} ca
	ca=$(base64 -w0 "$E2E_TLS/ca.crt")
	k apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: $GAVEL_WEBHOOK}
webhooks:
  - name: validate.gavel.svc
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: $policy
    matchPolicy: Equivalent
    timeoutSeconds: 5
    clientConfig:
      url: https://127.0.0.1:$GAVEL_PORT/validate
      caBundle: $ca
    rules:
      - apiGroups: ["*"]
        apiVersions: ["*"]
        resources: ["*"]
        operations: [CREATE, UPDATE, DELETE]
        scope: Namespaced
    namespaceSelector:
      matchLabels: {gavel-e2e: "on"}
$(policy_webhook "$ca" "${2:-}")
EOF
}

policy_webhook_register() {
	local ca
	ca=$(base64 -w0 "$E2E_TLS/ca.crt")
	k apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: $GAVEL_WEBHOOK}
webhooks:
$(policy_webhook "$ca" cel)
EOF
}

hooks() { jp "validatingwebhookconfiguration/$GAVEL_WEBHOOK" "$1"; }
no_generated_webhook() { test "$(hooks '{.webhooks[*].name}')" = validate-policy.gavel.svc; }

# The configuration is read by an informer: effective a moment after it is written.
webhook_wait_effective() {
	local f
	f=$(manifest sentinel-policy <<'EOF'
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: e2e-sentinel}
spec:
  background: true
  rules:
    - name: r
      match: {any: [{resources: {kinds: [ConfigMap]}}]}
      validate:
        message: "{{ request.userInfo.username }}"
        deny: {}
EOF
)
	for _ in $(seq 1 80); do
		k apply --dry-run=server -f "$f" 2>&1 | grep -q 'denied the request' && return 0
		sleep 0.25
	done
	log "the webhook did not become effective within 20 s"
	return 1
}

ns_create() {
	local ns=$1
	shift
	if ! k create namespace "$ns" >/dev/null 2>&1; then
		k get namespace "$ns" >/dev/null || return 1
	fi
	E2E_NAMESPACES+=("$ns")
	k label namespace "$ns" gavel-e2e=on "$@" --overwrite >/dev/null || return 1
	# With a controller manager (kind), Pods are refused until it made the
	# namespace's default ServiceAccount (the local API server does not ask).
	[ "$E2E_TARGET" = kind ] || return 0
	for _ in $(seq 1 60); do
		k -n "$ns" get serviceaccount default >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	log "namespace $ns: no default ServiceAccount after 30 s"
	return 1
}

# pod_manifest NAME IMAGE: $E2E_DIR/pod-NAME.yaml, a one-container Pod NAME in namespace $NS.
pod_manifest() {
	manifest "pod-$1" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $NS}
spec: {containers: [{name: c, image: "$2"}]}
EOF
}

vpol() {
	local ns_line=""
	[ -z "$3" ] || ns_line=", namespace: $3"
	cat <<EOF
apiVersion: policies.kyverno.io/v1
kind: $1
metadata: {name: $2$ns_line}
spec:
  validationActions: $4
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [pods]
  validations:
    - expression: "$5"
      message: "$6"
${7:-}
EOF
}
