#!/usr/bin/env bash
# e2e/faults.sh: gavel under faults, end to end, against a real
# kube-apiserver v1.20 + etcd on 127.0.0.1 (e2e/local; no kubelet) with
# manifests/crds applied and `gavel serve` (cluster mode, background
# reconciler, leader election, debug log) registered as the validating
# webhook of one namespace.
#
#   bash e2e/faults.sh        (from the top of the tree, after make)
#
# Every case injects one fault and then proves two things:
#
#   admission   a prober runs through the fault: it POSTs AdmissionReviews
#               straight to gavel's /validate and dry-run creates through
#               the API server, of a ConfigMap an Enforce policy admits and
#               one it denies. An answer is right (allowed / denied with the
#               policy's message), wrong (the opposite) or none (no answer:
#               connection refused, timeout, API server or webhook
#               unavailable). No answer may be wrong.
#   reports     the results in gavel's PolicyReports, as (object, uid,
#               policy, rule, result), are exactly what the offline
#               `gavel apply` says about the live objects and policies:
#               none missing, none extra, none duplicated (also across the
#               chunks of a report); every object's summary counts its own
#               results and every report's chunks are 0..n-1.
#
# Cases (in this order; each leaves its data for the next, and deletes its
# policies that rescan on an interval):
#   certificate  tls.crt/tls.key replaced atomically (a Secret volume's
#                ..data symlink swapped) under a loop of admission requests:
#                the new serial is served without a restart, no request fails
#   token        the token file of gavel's kubeconfig (tokenFile, a bound
#                service-account token) rewritten with another account's
#                token and the old token revoked (its bound Secret deleted):
#                the old token gets 401, gavel reads the file again and a
#                policy created afterwards is scanned and reported
#   API server   SIGKILLed in the middle of a scan (after the third of about
#                55 pages of 10 ConfigMaps), restarted with the watch
#                cache off (so that the next case gets 410s from etcd): the
#                scan completes, the reports are exact
#   watch cut    gavel's connections to the API server cut (ss -K; where it
#                cannot, the API server restarts): a policy created meanwhile
#                is enforced (watch resumed, or relisted); etcd compacted and
#                the connections cut again: the watches get 410 Gone and
#                relist, a policy deleted meanwhile stops being enforced and
#                one created meanwhile is scanned
#   etcd         stopped for 20 s right after objects changed: gavel stays
#                ready and answers from its snapshot, scans and report writes
#                fail and are retried, the changes end up reported
#   409 storm    two more gavel replicas without leader election (they always
#                write) and the leader scan one namespace every second while
#                its objects change (the leader also writes the admission
#                results of the changes): writes answered 409 are re-read and
#                merged; the report is exact, and still 3 s later
#   leader       the leader SIGKILLed: the follower holds the Lease within the
#                lease duration (+ retry period) and scans the objects created
#                at the kill
#   SIGKILL      the leader SIGKILLed during a report write (a second policy
#                over 500 objects: every chunk of a 3-chunk report changes;
#                killed after the first write): after a restart every report
#                is whole, its summary matches its results, nothing is lost
#                or duplicated
# Ends with "N passed, N failed"; exit 1 when a case failed, 2 when the
# environment could not be set up (0 with "0 passed, 0 failed" when the API
# server binaries are missing). About three minutes on two cores.
#
# Needs curl, jq, openssl, ss (iproute2; ss -K wants CAP_NET_ADMIN, else the
# watch cuts restart the API server).
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh);
# FAULTS_CASES="token sigkill ..." runs only those cases, in that order.
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

CACHE=${GAVEL_CACHE:-/var/cache/gavel}
SEL=app.kubernetes.io%2Fmanaged-by%3Dgavel
ADM_NS=adm-fault
ADM_MSG="label team is required"
REPORT_WRITE='kube: (PUT|POST) /apis/wgpolicyk8s.io/v1alpha2/namespaces/fd-scan/policyreports.* -> 20'
SCAN_BATCH=10 # g1's list pages in scans
SCAN_PAGE="kube: GET /api/v1/(namespaces/fd-scan/)?configmaps[?]limit=$SCAN_BATCH.* -> 200"

# Lease timings of the replicas: takeover must happen within LEASE_MS + RETRY_MS.
LEASE_MS=4000
RETRY_MS=1000
LEASE_FLAGS=(--leader-elect --leader-elect-lease-duration 4s
	--leader-elect-renew-deadline 3s --leader-elect-retry-period 1s)
ADMIN_TOKEN=
APISERVER_ARGV=()
ETCD_ARGV=()
PROBE_PID=
FLIP_PID=
LEADER=g1      # the replica that holds the Lease
WATCH_CACHE=on # the API server's watch cache (off after the API server case)
declare -A GV_PID=() GV_PORT=()

# ---- the API server, etcd ---------------------------------------------------------

# api METHOD PATH [CURL-ARGS...]: a request with the admin token; body on stdout,
# status 1 unless 2xx.
api() {
	local m=$1 p=$2
	shift 2
	curl -sS --fail --max-time 15 --cacert "$APISERVER_CA" \
		-H "Authorization: Bearer $ADMIN_TOKEN" -X "$m" "$@" "$APISERVER_URL$p"
}

apiserver_ready() { [ "$(api GET /readyz 2>/dev/null)" = ok ]; }

# apiserver_kill SIGNAL
apiserver_kill() {
	local pid
	pid=$(cat "$E2E_DIR/cp/kube-apiserver.pid")
	kill "-$1" "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

# apiserver_start [EXTRA-FLAGS...]: the first command line plus the flags; waits until ready.
apiserver_start() {
	"${APISERVER_ARGV[@]}" "$@" </dev/null >>"$E2E_DIR/cp/kube-apiserver.log" 2>&1 &
	echo $! >"$E2E_DIR/cp/kube-apiserver.pid"
	for _ in $(seq 1 240); do
		apiserver_ready && return 0
		sleep 0.25
	done
	return 1
}

etcd_stop() {
	local pid
	pid=$(cat "$E2E_DIR/cp/etcd.pid")
	kill -TERM "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

etcd_start() {
	"${ETCD_ARGV[@]}" </dev/null >>"$E2E_DIR/cp/etcd.log" 2>&1 &
	echo $! >"$E2E_DIR/cp/etcd.pid"
}

# etcd v3 JSON gateway: etcd_call ENDPOINT JSON
etcd_call() {
	curl -sS --fail --max-time 10 -X POST "http://127.0.0.1:$ETCD_PORT/v3/$1" -d "$2"
}

# Writes a key no one reads and compacts etcd's history up to that revision:
# every watch resumed from an older resourceVersion is then answered 410 Gone.
etcd_compact() {
	local rev
	# Two writes, then compact at the second: a watch resumes at the revision
	# after the last change it saw, which must be below the compaction revision
	# for etcd to refuse it (410). With one write it may be that revision itself
	# (the watched change was the last write before it): no 410.
	etcd_call kv/put '{"key":"L2dhdmVsLWUyZS9idW1w","value":"eA=="}' >/dev/null || return 1
	rev=$(etcd_call kv/put '{"key":"L2dhdmVsLWUyZS9idW1w","value":"eQ=="}' |
		jq -r '.header.revision') || return 1
	etcd_call kv/compaction "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null || return 1
	printf '%s\n' "$rev"
}

# ---- gavel replicas ------------------------------------------------------------------

# gv_start NAME ARGS...: `gavel serve` with gavel's kubeconfig (token file), the
# shared key pair, debug log in $E2E_DIR/NAME.log; the port of NAME is kept across
# restarts. Waits for /readyz. The suite writes its own webhook (webhook_to): the
# replicas generate none (the leader's generated webhooks copy the clientConfig
# they find, and a leader killed before it followed webhook_to left them calling
# a dead replica).
gv_start() {
	local name=$1 log port mport from up=''
	shift
	log=$E2E_DIR/$name.log
	touch "$log"
	port=${GV_PORT[$name]:-}
	if [ -z "$port" ]; then
		port=$(free_port)
		while [[ " ${GV_PORT[*]} " == *" $port "* ]]; do port=$(free_port); done
	fi
	mport=$(free_port)
	while [ "$mport" = "$port" ] || [[ " ${GV_PORT[*]} " == *" $mport "* ]]; do
		mport=$(free_port)
	done
	GV_PORT[$name]=$port
	from=$(($(wc -l <"$log") + 1))
	POD_NAME=$name "$GAVEL" serve --kubeconfig "$E2E_DIR/gavel.kubeconfig" \
		--namespace "$GAVEL_NAMESPACE" --tls-dir "$E2E_TLS" --manage-certs=false \
		--listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$mport" \
		--auto-update-webhooks=false --log-level debug "$@" </dev/null >>"$log" 2>&1 &
	GV_PID[$name]=$!
	for _ in $(seq 1 100); do
		if tail -n "+$from" "$log" | grep -q 'webhook listening on'; then
			up=1
			break
		fi
		kill -0 "${GV_PID[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	if [ -n "$up" ]; then
		for _ in $(seq 1 100); do
			[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
				--cacert "$E2E_TLS/ca.crt" "https://127.0.0.1:$port/readyz")" = 200 ] &&
				return 0
			sleep 0.1
		done
	fi
	tail -n "+$from" "$log" | grep -v ' debug ' | tail -n 20 | sed 's/^/     | /' >&2
	log "gavel serve $name did not start"
	gv_stop "$name" KILL
	return 1
}

gv_stop() { # NAME [SIGNAL]
	local pid=${GV_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill "-${2:-TERM}" "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	unset "GV_PID[$1]"
}

gv_lines() { wc -l <"$E2E_DIR/$1.log"; }

# gv_since NAME LINE: the log of NAME after line LINE.
gv_since() { tail -n "+$(($2 + 1))" "$E2E_DIR/$1.log"; }

# wait_log NAME FROM-LINE ERE COUNT SECONDS [AFTER-ERE]: returns as soon as COUNT
# lines of NAME's log after FROM-LINE (and after a line matching AFTER-ERE) match
# ERE, while the log is being written (status 1 when SECONDS pass first).
wait_log() {
	local fd pid line on='' c=0 rc=1
	exec {fd}< <(exec timeout "$5" tail -n "+$(($2 + 1))" -f "$E2E_DIR/$1.log")
	pid=$!
	[ -n "${6:-}" ] || on=1
	# read, not grep or awk: they read ahead and would wait for more input
	while IFS= read -r line <&"$fd"; do
		if [ -z "$on" ]; then
			[[ "$line" =~ $6 ]] && on=1
			continue
		fi
		if [[ "$line" =~ $3 ]] && [ $((++c)) -ge "$4" ]; then
			rc=0
			break
		fi
	done
	exec {fd}<&-
	kill "$pid" 2>/dev/null || true
	return "$rc"
}

lease_holder() {
	api GET "/apis/coordination.k8s.io/v1/namespaces/$GAVEL_NAMESPACE/leases/gavel" 2>/dev/null |
		jq -r '.spec.holderIdentity // ""'
}

# webhook_to NAME: the webhook (failurePolicy Fail, namespace $ADM_NS only) calls replica NAME.
webhook_to() {
	local ca
	ca=$(base64 -w0 "$E2E_TLS/ca.crt")
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
    timeoutSeconds: 5
    clientConfig:
      url: https://127.0.0.1:${GV_PORT[$1]}/validate
      caBundle: $ca
    rules:
      - apiGroups: ["*"]
        apiVersions: ["*"]
        resources: ["*"]
        operations: [CREATE, UPDATE, DELETE]
        scope: Namespaced
    namespaceSelector:
      matchLabels: {gavel-e2e: "on"}
EOF
}

# ---- admission prober ------------------------------------------------------------------

# The objects the prober asks about: $ADM_NS/probe-good has label team, probe-bad not.
probe_files() {
	local o
	for o in good bad; do
		if [ $o = good ]; then
			printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe-%s","namespace":"%s","labels":{"team":"e2e"}},"data":{"k":"v"}}' \
				$o "$ADM_NS" >"$E2E_DIR/probe-$o.json"
		else
			printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe-%s","namespace":"%s"},"data":{"k":"v"}}' \
				$o "$ADM_NS" >"$E2E_DIR/probe-$o.json"
		fi
		printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"probe-%s","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"requestKind":{"group":"","version":"v1","kind":"ConfigMap"},"namespace":"%s","name":"probe-%s","operation":"CREATE","userInfo":{"username":"admin","groups":["system:masters","system:authenticated"]},"object":%s,"oldObject":null,"dryRun":true}}' \
			$o "$ADM_NS" $o "$(cat "$E2E_DIR/probe-$o.json")" >"$E2E_DIR/review-$o.json"
	done
}

# One answer of gavel itself: right, wrong or none.
probe_direct() { # PORT good|bad
	local resp allowed msg
	resp=$(curl -sS --max-time 5 --cacert "$E2E_TLS/ca.crt" -H 'Content-Type: application/json' \
		--data-binary "@$E2E_DIR/review-$2.json" "https://127.0.0.1:$1/validate" 2>&1) || {
		echo none
		return 0
	}
	allowed=$(jq -r '.response.allowed | if . == null then "none" else tostring end' \
		<<<"$resp" 2>/dev/null) || allowed=none
	msg=$(jq -r '.response.status.message // ""' <<<"$resp" 2>/dev/null) || msg=
	case "$2:$allowed" in
	good:true) echo right ;;
	good:false) echo wrong ;;
	bad:false) if [[ "$msg" == *"$ADM_MSG"* ]]; then echo right; else echo wrong; fi ;;
	bad:true) echo wrong ;;
	*) echo none ;;
	esac
}

# One answer through the API server (a dry-run create).
probe_api() { # good|bad
	local code body=$E2E_DIR/probe-api-$1.out
	code=$(curl -sS -o "$body" -w '%{http_code}' --max-time 6 --cacert "$APISERVER_CA" \
		-H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
		--data-binary "@$E2E_DIR/probe-$1.json" \
		"$APISERVER_URL/api/v1/namespaces/$ADM_NS/configmaps?dryRun=All" 2>/dev/null) || code=000
	if [ "$code" = 201 ]; then
		if [ "$1" = good ]; then echo right; else echo wrong; fi
	elif grep -q 'denied the request' "$body" 2>/dev/null; then
		if [ "$1" = bad ] && grep -qF "$ADM_MSG" "$body"; then echo right; else echo wrong; fi
	else
		echo "none($code)"
	fi
}

probe_loop() {
	local out=$1 port o
	while [ ! -e "$E2E_DIR/probe.stop" ]; do
		port=$(cat "$E2E_DIR/probe.port")
		for o in good bad; do
			printf '%s direct %s %s\n' "$(now_ms)" $o "$(probe_direct "$port" $o)" >>"$out"
			printf '%s api %s %s\n' "$(now_ms)" $o "$(probe_api $o)" >>"$out"
		done
		sleep 0.2
	done
}

# probe_start NAME: probes replica NAME until probe_stop; answers in $PROBE_OUT.
probe_start() {
	PROBE_OUT=$E2E_DIR/probe.$(now_ms).txt
	: >"$PROBE_OUT"
	probe_to "$1"
	rm -f "$E2E_DIR/probe.stop"
	probe_loop "$PROBE_OUT" &
	PROBE_PID=$!
}

probe_to() { echo "${GV_PORT[$1]}" >"$E2E_DIR/probe.port"; }

probe_stop() {
	[ -n "$PROBE_PID" ] || return 0
	touch "$E2E_DIR/probe.stop"
	wait "$PROBE_PID" 2>/dev/null || true
	PROBE_PID=
}

# check_probe [strict] [FROM-MS TO-MS]: no wrong answer; strict: no request without
# an answer either; with a window: gavel itself answered right within it.
check_probe() {
	local strict=${1:-} from=${2:-0} to=${3:-0} right wrong none inwin
	right=$(grep -c ' right$' "$PROBE_OUT" || true)
	wrong=$(grep -c ' wrong$' "$PROBE_OUT" || true)
	none=$(grep -c ' none' "$PROBE_OUT" || true)
	OUT="$right right, $wrong wrong, $none without an answer"
	if [ "$wrong" -gt 0 ]; then
		OUT="$OUT"$'\n'$(grep ' wrong$' "$PROBE_OUT" | head -n 10)
		WHY="wrong admission answers"
		return 1
	fi
	if [ "$right" -eq 0 ]; then
		WHY="no answer at all"
		return 1
	fi
	if [ "$strict" = strict ] && [ "$none" -gt 0 ]; then
		OUT="$OUT"$'\n'$(grep ' none' "$PROBE_OUT" | head -n 10)
		WHY="requests without an answer"
		return 1
	fi
	if [ "$to" -gt 0 ]; then
		inwin=$(awk -v a="$from" -v b="$to" '$2 == "direct" && $4 == "right" && $1 >= a && $1 <= b' \
			"$PROBE_OUT" | wc -l)
		OUT="$OUT; $inwin right answers from gavel during the fault"
		if [ "$inwin" -eq 0 ]; then
			WHY="gavel did not answer during the fault"
			return 1
		fi
	fi
	return 0
}

# record_probe NAME [strict] [FROM TO]: stops the prober and records its verdict.
record_probe() {
	local name=$1
	shift
	probe_stop
	WHY=
	OUT=
	if check_probe "$@"; then ok "$name: no admission answer was wrong ($OUT)"; else
		fail "$name: no admission answer was wrong" "$WHY"
	fi
}

# ---- data and policies -------------------------------------------------------------------

# cms NS FROM TO: ConfigMaps cm-FROM..cm-(TO-1) labelled fault-data=on and lK=y for
# each bit K (0..4) set in the index; created by 4 kubectl processes when many.
cms() {
	local ns=$1 a=$2 b=$3 step p pids=() rc=0
	step=$(((b - a + 3) / 4))
	[ $((b - a)) -ge 100 ] || step=$((b - a))
	for ((p = a; p < b; p += step)); do
		jq -n --arg ns "$ns" --argjson a "$p" --argjson b "$((p + step < b ? p + step : b))" \
			'{apiVersion: "v1", kind: "List", items: [range($a; $b) as $i | {apiVersion: "v1",
			kind: "ConfigMap", metadata: {name: "cm-\($i)", namespace: $ns, labels:
			({"fault-data": "on"} + ([range(0; 5) as $k | select((($i / pow(2; $k)) | floor) % 2 == 1)
			| {("l\($k)"): "y"}] | add // {}))}, data: {k: "v"}}]}' |
			k create -f - >/dev/null &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return "$rc"
}

# data_policy NAME NAMESPACE RULES [SPEC-LINE]: an Audit ClusterPolicy with rules
# l0..l(RULES-1), rule lK requiring label lK on the ConfigMaps of NAMESPACE.
data_policy() {
	local k
	{
		printf 'apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: %s}\nspec:\n' "$1"
		printf '  validationFailureAction: Audit\n'
		[ -z "${4:-}" ] || printf '  %s\n' "$4"
		printf '  rules:\n'
		for ((k = 0; k < $3; k++)); do
			printf '    - name: l%d\n      match: {any: [{resources: {kinds: [ConfigMap], namespaces: [%s]}}]}\n' "$k" "$2"
			printf '      validate: {message: "label l%d is required", pattern: {metadata: {labels: {l%d: "?*"}}}}\n' "$k" "$k"
		done
	} | k apply -f - >/dev/null
}

# ---- reports versus the offline engine --------------------------------------------------

# Writes $E2E_DIR/expected: "ns/name uid policy rule result", what `gavel apply` says
# of the fd-* ClusterPolicies over the ConfigMaps labelled fault-data=on, as they are now.
oracle_update() {
	local d=$E2E_DIR/oracle p name
	rm -rf "$d"
	mkdir -p "$d/policies"
	api GET /apis/kyverno.io/v1/clusterpolicies >"$d/cpol.json" || return 1
	while IFS= read -r p; do
		name=$(jq -r '.metadata.name' <<<"$p")
		printf '%s\n' "$p" >"$d/policies/$name.json"
	done < <(jq -c '.items[] | select(.metadata.name | startswith("fd-"))' "$d/cpol.json")
	api GET "/api/v1/configmaps?labelSelector=fault-data%3Don" |
		jq '{apiVersion: "v1", kind: "List",
			items: [.items[] | . + {apiVersion: "v1", kind: "ConfigMap"}]}' >"$d/objects.json" ||
		return 1
	jq -r '.items[] | "\(.metadata.namespace)/\(.metadata.name) \(.metadata.uid)"' \
		"$d/objects.json" | sort >"$d/uids"
	if [ -z "$(ls "$d/policies")" ] || [ ! -s "$d/uids" ]; then
		: >"$E2E_DIR/expected"
		return 0
	fi
	"$GAVEL" apply "$d/policies" -r "$d/objects.json" -o json >"$d/apply.json" || [ $? = 1 ] ||
		return 1
	jq -r '.[] | "\(.resource.namespace)/\(.resource.name) \(.policy) \(.rule) \(.result)"' \
		"$d/apply.json" | sort >"$d/results"
	join "$d/uids" "$d/results" >"$E2E_DIR/expected"
}

# Every gavel report, both kinds, as one JSON stream.
reports_get() {
	api GET "/apis/wgpolicyk8s.io/v1alpha2/policyreports?labelSelector=$SEL" &&
		api GET "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports?labelSelector=$SEL"
}

# The reports equal $E2E_DIR/expected: nothing lost, nothing extra, nothing
# duplicated; summaries count their results; chunks 0..n-1 (see the header).
check_reports() {
	local r=$E2E_DIR/reports.json a=$E2E_DIR/actual e=$E2E_DIR/expected dup miss extra bad
	reports_get >"$r" 2>&1 || {
		OUT=$(head -c 300 "$r")
		WHY="reports not readable"
		return 1
	}
	# One pass: R <result>, S <object whose summary is off>, C <group with a chunk missing>.
	jq -rs '[.[].items[]] as $objs | {pass: 0, fail: 0, warn: 0, error: 0, skip: 0} as $zero |
		($objs[] | .results[]? | .resources[0] as $o |
			"R \($o.namespace // "-")/\($o.name) \($o.uid) \(.policy) \(.rule) \(.result)"),
		($objs[] | select((reduce .results[]?.result as $x ($zero; .[$x] += 1)) !=
			($zero + (.summary // {}))) | "S summary of \(.metadata.namespace // "")/\(.metadata.name)"),
		($objs | map({g: "\(.metadata.namespace // "")/\(.metadata.labels["gavel.dev/report-group"])",
			c: (.metadata.labels["gavel.dev/report-chunk"] | tonumber? // -1)}) | group_by(.g)[] |
			select(([.[].c] | sort) != [range(0; length)]) | "C chunks of \(.[0].g)")' \
		"$r" >"$E2E_DIR/report-lines" || {
		WHY="reports not parsable"
		return 1
	}
	sed -n 's/^R //p' "$E2E_DIR/report-lines" | sort >"$a"
	bad=$(grep -v '^R ' "$E2E_DIR/report-lines" | cut -c3- | head -n 5)
	dup=$(cut -d' ' -f1-4 "$a" | uniq -d | head -n 5)
	miss=$(comm -23 "$e" "$a")
	extra=$(comm -13 "$e" "$a")
	OUT="$(wc -l <"$a") results in the reports, $(wc -l <"$e") expected"
	if [ -n "$dup" ]; then
		OUT="$OUT"$'\nduplicated:\n'"$dup"
		WHY="duplicated results"
		return 1
	fi
	if [ -n "$miss" ] || [ -n "$extra" ]; then
		OUT="$OUT; $(grep -c . <<<"$miss") missing, $(grep -c . <<<"$extra") extra"$'\n'
		OUT+="missing: $(head -n 3 <<<"$miss")"$'\n'"extra: $(head -n 3 <<<"$extra")"
		WHY="the reports differ from gavel apply"
		return 1
	fi
	if [ -n "$bad" ]; then
		OUT="$OUT"$'\n'"$bad"
		WHY="reports whose summary does not count their results, or a chunk missing"
		return 1
	fi
	return 0
}

# reports_exact NAME SECONDS: the oracle as the cluster is now, then the reports
# converge to it within SECONDS.
reports_exact() {
	if ! oracle_update; then
		fail "$1: no result lost or duplicated" "gavel apply (the oracle) failed"
		return 0
	fi
	eventually "$2" expect_reports "$1: no result lost or duplicated ($(wc -l <"$E2E_DIR/expected") results)"
}

# check_serial PORT SERIAL: the certificate served on PORT has serial SERIAL (hex).
check_serial() {
	OUT=$(openssl s_client -connect "127.0.0.1:$1" -servername gavel </dev/null 2>/dev/null |
		openssl x509 -noout -serial 2>/dev/null)
	[ "${OUT#serial=}" = "$(tr a-f A-F <<<"$2")" ] || {
		WHY="serves serial ${OUT#serial=}, not $2"
		return 1
	}
}

# The old token (token-a) is refused.
check_revoked() {
	OUT=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$APISERVER_CA" \
		-H "Authorization: Bearer $(cat "$E2E_DIR/token-a")" \
		"$APISERVER_URL/api/v1/namespaces/$GAVEL_NAMESPACE/configmaps")
	[ "$OUT" = 401 ] || {
		WHY="the old token still gets $OUT"
		return 1
	}
}

check_took_over() {
	OUT=$(lease_holder)
	[[ "$OUT" == g3_* ]] || {
		WHY="the Lease names '$OUT'"
		return 1
	}
}

check_log() { # NAME FROM-LINE ERE
	OUT=$(gv_since "$1" "$2" | grep -E -- "$3" | head -n 3)
	[ -n "$OUT" ] || {
		WHY="no /$3/ in $1.log"
		return 1
	}
}

# ---- cases -----------------------------------------------------------------------------

case_certificate() {
	local t=$E2E_TLS v2 serial n mark
	log "certificate: key pair replaced under load"
	mark=$(gv_lines g1)
	probe_start g1
	sleep 1
	v2=$t/..v2
	mkdir "$v2"
	# 8 bytes, the first in 10..7f: printed back as is (no sign byte, no leading zero)
	serial=$(printf '%02x' $((16 + RANDOM % 112)))$(openssl rand -hex 7)
	openssl ecparam -name prime256v1 -genkey -noout -out "$v2/tls.key" 2>/dev/null
	openssl req -new -key "$v2/tls.key" -subj "/CN=gavel.$GAVEL_NAMESPACE.svc" \
		-out "$E2E_DIR/v2.csr" 2>/dev/null
	printf 'subjectAltName=DNS:gavel.%s.svc,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' \
		"$GAVEL_NAMESPACE" >"$E2E_DIR/v2.ext"
	openssl x509 -req -in "$E2E_DIR/v2.csr" -CA "$t/..v1/ca.crt" -CAkey "$t/..v1/ca.key" \
		-set_serial "0x$serial" -days 2 -extfile "$E2E_DIR/v2.ext" -out "$v2/tls.crt" 2>/dev/null
	cp "$t/..v1/ca.crt" "$v2/ca.crt"
	# As the kubelet updates a Secret volume: one rename swaps both files.
	ln -s ..v2 "$t/..data_tmp"
	mv -T "$t/..data_tmp" "$t/..data"
	eventually 15 expect_serial "certificate: the new certificate is served without a restart" \
		"${GV_PORT[g1]}" "$serial"
	sleep 1
	n=$(grep -c . "$PROBE_OUT")
	record_probe "certificate ($n requests)" strict
	record "certificate: gavel logged the reload" check_log g1 "$mark" 'tls: key pair reloaded'
	reports_exact certificate 10
}

case_token() {
	local mark
	log "token: service-account token file rewritten, old token revoked"
	k create namespace fd-token >/dev/null
	cms fd-token 0 20
	data_policy fd-token fd-token 3
	reports_exact "token (before)" 20
	probe_start g1
	mark=$(gv_lines g1)
	cp "$E2E_DIR/token-b" "$E2E_DIR/sa-token.tmp"
	mv -f "$E2E_DIR/sa-token.tmp" "$E2E_DIR/sa-token"
	k -n "$GAVEL_NAMESPACE" delete secret fault-a-bind >/dev/null
	# The API server caches a token's authentication for 10 s.
	eventually 30 expect_revoked "token: the old token is revoked (401)"
	# A new policy is scanned at once: gavel lists and writes with the new token.
	data_policy fd-token2 fd-token 2
	reports_exact "token: a policy created after the revocation is scanned and reported" 30
	record "token: a request refused with the old token was retried with the file's new token" \
		check_log g1 "$mark" 'kube: .* -> 401 '
	record_probe token strict
}

case_apiserver() {
	local mark start pages total t0 t1
	log "API server: killed in the middle of a scan"
	k create namespace fd-scan >/dev/null
	cms fd-scan 0 500
	total=$(api GET /api/v1/configmaps | jq '.items | length')
	total=$(((total + SCAN_BATCH - 1) / SCAN_BATCH))
	probe_start g1
	mark=$(gv_lines g1)
	data_policy fd-scan fd-scan 4
	# The scan lists every ConfigMap, SCAN_BATCH at a time: kill after its third page.
	wait_log g1 "$mark" "$SCAN_PAGE" 3 30 'background: scanning .*fd-scan' || true
	t0=$(now_ms)
	apiserver_kill KILL
	start=$(gv_since g1 "$mark" | grep -nE 'background: scanning .*fd-scan' | head -n 1 |
		cut -d: -f1)
	start=$((mark + ${start:-1}))
	pages=$(gv_since g1 "$start" | grep -cE "$SCAN_PAGE" || true)
	OUT="$pages of $total pages listed when the API server was killed"
	if [ "$pages" -ge 1 ] && [ "$pages" -lt "$total" ] &&
		! gv_since g1 "$start" | grep -qE 'background: scanned .*fd-scan'; then
		ok "API server: SIGKILLed in the middle of a scan ($OUT)"
	else
		fail "API server: SIGKILLed in the middle of a scan" "the scan was not in progress"
	fi
	sleep 1
	if apiserver_start --watch-cache=false; then
		WATCH_CACHE=off
		ok "API server: restarted, the watch cache off ($((($(now_ms) - t0) / 1000)) s down)"
	else
		fail "API server: restarted" "not ready after 60 s"
		return 0
	fi
	t1=$(now_ms)
	reports_exact "API server: the interrupted scan" 60
	# the reports can be exact before the retried scan ends (the interrupted
	# one had written them): its completion is waited for, after its backoff
	eventually 60 expect_log "API server: the scan was completed after the restart" \
		g1 "$mark" 'background: scanned .*fd-scan'
	record_probe "API server" "" "$t0" "$t1"
}

# Kills gavel's (g1's) TCP connections to the API server; false when ss -K cannot.
cut_watches() {
	local ports p f=
	ports=$(ss -tnpH state established "( dport = :$APISERVER_PORT )" 2>/dev/null |
		grep "pid=${GV_PID[g1]}," | awk '{ n = split($3, a, ":"); print a[n] }')
	[ -n "$ports" ] || return 1
	for p in $ports; do f+="${f:+ or }sport = :$p"; done
	ss -K -tn state established "( $f )" >/dev/null 2>&1 || return 1
	# gavel reconnects at once (from other ports): none of these may be left.
	[ -z "$(ss -tnH state established "( $f )")" ]
}

# cut_or_restart NAME: cut_watches, else (no ss -K here) a restart of the API server.
cut_or_restart() {
	if cut_watches; then
		ok "$1: gavel's connections to the API server cut (ss -K)"
	else
		log "ss -K cannot cut connections here: restarting the API server instead"
		apiserver_kill TERM
		if apiserver_start --watch-cache=false; then
			WATCH_CACHE=off
			ok "$1: gavel's connections cut by an API server restart"
		else
			fail "$1: gavel's connections cut by an API server restart" "not ready"
		fi
	fi
}

case_watch() {
	local mark f t0 rev
	log "watch cut: resume, then relist after 410"
	f=$(manifest forbidden <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: forbidden, namespace: $ADM_NS, labels: {team: e2e, forbidden: "yes"}}
EOF
)
	if [ "$WATCH_CACHE" = on ]; then
		# Watches served from etcd: a compaction makes them 410.
		apiserver_kill TERM
		apiserver_start --watch-cache=false || true
		WATCH_CACHE=off
	fi
	probe_start g1
	t0=$(now_ms)
	mark=$(gv_lines g1)
	cut_or_restart "watch cut"
	k apply -f - >/dev/null <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: adm-extra}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: no-forbidden
      match: {any: [{resources: {kinds: [ConfigMap], namespaces: [$ADM_NS]}}]}
      validate:
        message: "label forbidden is forbidden"
        pattern: {metadata: {labels: {X(forbidden): "null"}}}
EOF
	eventually 30 expect_denied "watch cut: a policy created while the watches were cut is enforced" \
		k create --dry-run=server -f "$f" -- "label forbidden is forbidden"
	if gv_since g1 "$mark" | grep -q 'resourceVersion too old, relisting'; then
		ok "watch cut: the watches relisted (410)"
	else
		ok "watch cut: the watches resumed from their resourceVersion"
	fi

	# The precondition of a 410: the clusterpolicies watch resumes below the
	# compaction revision. A ClusterPolicy write landing between the compaction
	# and the cut (the leader's status of a scheduled policy carries its last
	# scan time) moves the watch past it, and the resume is legitimately fine;
	# so compact and cut again, at most three times, until the watch is refused.
	local try gone=''
	mark=$(gv_lines g1)
	for try in 1 2 3; do
		if rev=$(etcd_compact); then
			[ "$try" = 1 ] && ok "watch cut: etcd compacted at revision $rev"
		else
			fail "watch cut: etcd compacted" "the etcd gateway refused"
			break
		fi
		if [ "$try" = 1 ]; then
			cut_or_restart "watch cut again"
			k delete clusterpolicy adm-extra >/dev/null
			data_policy fd-watch fd-token 2
		else
			cut_or_restart "watch cut, compaction $try"
		fi
		WHY=
		for _ in $(seq 60); do
			if check_log g1 "$mark" 'clusterpolicies: resourceVersion too old, relisting'; then
				gone=yes
				break
			fi
			sleep 0.25
		done
		[ -n "$gone" ] && break
		log "watch cut: no 410 after compaction $try (a write moved the watch past it): again"
	done
	if [ -n "$gone" ]; then
		ok "watch cut: resumed from a compacted resourceVersion: 410 Gone, relisted"
	else
		fail "watch cut: resumed from a compacted resourceVersion: 410 Gone, relisted" "${WHY:-cut failed}"
	fi
	eventually 20 expect_allowed "watch cut: the policy deleted meanwhile is gone after the relist" \
		k create --dry-run=server -f "$f"
	reports_exact "watch cut: the policy created meanwhile is scanned" 30
	record_probe "watch cut" "" "$t0" "$(now_ms)"
}

case_etcd() {
	local t0 t1 ready
	log "etcd: stopped for 20 s"
	k create namespace fd-etcd >/dev/null
	cms fd-etcd 0 30
	data_policy fd-etcd fd-etcd 2 "scanInterval: 3s"
	reports_exact "etcd (before)" 20
	probe_start g1
	t0=$(now_ms)
	# Changed just before: the next scan and report write fall in the outage.
	k -n fd-etcd delete configmap cm-1 cm-2 cm-3 >/dev/null
	cms fd-etcd 30 40
	etcd_stop
	sleep 10
	ready=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 --cacert "$E2E_TLS/ca.crt" \
		"https://127.0.0.1:${GV_PORT[g1]}/readyz")
	OUT="/readyz: $ready"
	if [ "$ready" = 200 ]; then ok "etcd: gavel stays ready while etcd is down"; else
		fail "etcd: gavel stays ready while etcd is down" "/readyz $ready"
	fi
	sleep 10
	etcd_start
	t1=$(now_ms)
	eventually 60 expect_success "etcd: back after 20 s, the API server ready again" apiserver_ready
	reports_exact "etcd: the changes made at the outage are reported" 60
	record_probe etcd "" "$t0" "$t1"
	k delete clusterpolicy fd-etcd >/dev/null
}

flip_loop() {
	local i n v
	while [ ! -e "$E2E_DIR/flip.stop" ]; do
		i=$((RANDOM % 40))
		n=$((RANDOM % 5))
		v='"y"'
		[ $((RANDOM % 2)) = 0 ] && v=null
		api PATCH "/api/v1/namespaces/fd-storm/configmaps/cm-$i" \
			-H 'Content-Type: application/merge-patch+json' \
			-d "{\"metadata\":{\"labels\":{\"l$n\":$v}}}" >/dev/null 2>&1 || true
		sleep 0.05
	done
}

case_storm() {
	local m1 m2 m4 n waited=0
	log "409 storm: three writers on one report"
	# Labelled for the webhook: g1 also writes the admission results of the changes.
	ns_create fd-storm
	cms fd-storm 0 40
	data_policy fd-storm fd-storm 5 "scanInterval: 1s"
	reports_exact "409 storm (before)" 20
	m1=$(gv_lines g1)
	if gv_start g2 --background-scan-interval 1h && gv_start g4 --background-scan-interval 1h; then
		ok "409 storm: two more writers started (no leader election: they always write)"
	else
		OUT=
		fail "409 storm: two more writers started" "see $E2E_DIR/g2.log, g4.log"
		return 0
	fi
	m2=$(gv_lines g2)
	m4=$(gv_lines g4)
	probe_start g1
	rm -f "$E2E_DIR/flip.stop"
	flip_loop &
	FLIP_PID=$!
	# Each writer reads the report just before it writes (one scan path,
	# background/nsscan.c), so conflicts are rarer than when the
	# reconciler wrote from a cached copy: a longer storm, and one 409
	# re-read and merged is what this case needs to see. Slower writers (a
	# sanitizer build, a loaded machine) conflict later: the storm goes on,
	# at most 36 s, until one has.
	while :; do
		sleep 6
		waited=$((waited + 6))
		n=$({
			gv_since g1 "$m1"
			gv_since g2 "$m2"
			gv_since g4 "$m4"
		} | grep -c 'report fd-storm/polr-ns-fd-storm: .*409 Conflict, reading it again' || true)
		[ "$waited" -ge 12 ] && { [ "$n" -ge 1 ] || [ "$waited" -ge 36 ]; } && break
	done
	touch "$E2E_DIR/flip.stop"
	wait "$FLIP_PID" || true
	FLIP_PID=
	n=$({
		gv_since g1 "$m1"
		gv_since g2 "$m2"
		gv_since g4 "$m4"
	} | grep -c 'report fd-storm/polr-ns-fd-storm: .*409 Conflict, reading it again' || true)
	OUT="$n conflicts"
	if [ "$n" -ge 1 ]; then ok "409 storm: $n writes answered 409, each re-read and merged"; else
		fail "409 storm: the writers conflicted" "$n 409s"
	fi
	reports_exact "409 storm" 30
	sleep 3
	record "409 storm: still exact 3 s later" check_reports
	gv_stop g2 KILL
	gv_stop g4 KILL
	record_probe "409 storm"
	k delete clusterpolicy fd-storm >/dev/null
}

case_leader() {
	local t0 ms holder
	log "leader: killed"
	if gv_start g3 "${LEASE_FLAGS[@]}" --background-scan-interval 1h; then
		ok "leader: a second replica started"
	else
		OUT=
		fail "leader: a second replica started" "see $E2E_DIR/g3.log"
		return 0
	fi
	holder=$(lease_holder)
	OUT="holder $holder"
	if [[ "$holder" == g1_* ]]; then ok "leader: g1 holds the Lease, g3 follows"; else
		fail "leader: g1 holds the Lease, g3 follows" "the holder is '$holder'"
	fi
	k create namespace fd-leader >/dev/null
	cms fd-leader 0 60
	data_policy fd-leader fd-leader 3 "scanInterval: 2s"
	webhook_to g3
	probe_start g3
	reports_exact "leader (before)" 20
	t0=$(now_ms)
	gv_stop g1 KILL
	cms fd-leader 60 80
	for _ in $(seq 1 80); do
		check_took_over && break
		sleep 0.1
	done
	ms=$(($(now_ms) - t0))
	OUT="the Lease names $(lease_holder) after $ms ms"
	if check_took_over && [ "$ms" -le $((LEASE_MS + RETRY_MS * 2 + 500)) ]; then
		LEADER=g3
		ok "leader: g3 took over ${ms} ms after the kill (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)"
	else
		fail "leader: takeover within the lease duration (+ retry period)" "$OUT"
	fi
	eventually 10 expect_log "leader: g3 scans" g3 0 'this replica now scans'
	reports_exact "leader: objects created at the kill are reported by the new leader" 30
	record_probe leader
	k delete clusterpolicy fd-leader >/dev/null
}

case_sigkill() {
	local mark writes before m1 l=$LEADER
	log "SIGKILL during a report write"
	if ! k get namespace fd-scan >/dev/null 2>&1; then
		k create namespace fd-scan >/dev/null
		cms fd-scan 0 500
		data_policy fd-scan fd-scan 4
		reports_exact "SIGKILL (before)" 40
	fi
	probe_start "$l"
	mark=$(gv_lines "$l")
	# A second policy on the 500 objects: polr-ns-fd-scan grows from 2 chunks to 3 and
	# every chunk changes (results sorted by object, then policy).
	data_policy fd-kill fd-scan 2
	wait_log "$l" "$mark" "$REPORT_WRITE" 1 60 || true
	gv_stop "$l" KILL
	writes=$(gv_since "$l" "$mark" | grep -cE "$REPORT_WRITE" || true)
	OUT="killed after $writes report writes"
	oracle_update || true
	before=ok
	check_reports || before=$WHY
	if [ "$writes" -ge 1 ] && [ "$before" != ok ]; then
		ok "SIGKILL: killed in the middle of a report write ($writes written; then: $before)"
	else
		fail "SIGKILL: killed in the middle of a report write" "$writes writes, reports: $before"
	fi
	m1=$(gv_lines "$l")
	if gv_start "$l" "${LEASE_FLAGS[@]}" --background-scan-interval 1h; then
		ok "SIGKILL: gavel restarted"
	else
		OUT=
		fail "SIGKILL: gavel restarted" "see $E2E_DIR/$l.log"
		return 0
	fi
	eventually 15 expect_log "SIGKILL: the restarted replica leads" "$l" "$m1" \
		'this replica now scans'
	reports_exact "SIGKILL: after the restart every report is whole" 60
	record_probe SIGKILL
}

# ---- set-up ------------------------------------------------------------------------------

# A TokenRequest for ServiceAccount gavel/NAME bound to Secret gavel/NAME-bind
# (deleting the Secret revokes the token); token on stdout.
sa_token() {
	local uid
	k -n "$GAVEL_NAMESPACE" create serviceaccount "$1" >/dev/null &&
		k -n "$GAVEL_NAMESPACE" create secret generic "$1-bind" --from-literal=k=v >/dev/null &&
		k create clusterrolebinding "$1" --clusterrole cluster-admin \
			--serviceaccount "$GAVEL_NAMESPACE:$1" >/dev/null || return 1
	uid=$(k -n "$GAVEL_NAMESPACE" get secret "$1-bind" -o jsonpath='{.metadata.uid}') || return 1
	api POST "/api/v1/namespaces/$GAVEL_NAMESPACE/serviceaccounts/$1/token" \
		-H 'Content-Type: application/json' -d "{\"apiVersion\":\"authentication.k8s.io/v1\",
		\"kind\":\"TokenRequest\",\"spec\":{\"audiences\":[\"https://kubernetes.default.svc\"],
		\"expirationSeconds\":3600,\"boundObjectRef\":{\"kind\":\"Secret\",\"apiVersion\":\"v1\",
		\"name\":\"$1-bind\",\"uid\":\"$uid\"}}}" | jq -re '.status.token'
}

setup() {
	local pid
	e2e_setup || return 1
	trap cleanup EXIT
	ADMIN_TOKEN=$(cut -d, -f1 "$E2E_DIR/cp/tokens.csv" | head -n 1)
	pid=$(cat "$E2E_DIR/cp/kube-apiserver.pid")
	mapfile -d '' APISERVER_ARGV <"/proc/$pid/cmdline"
	pid=$(cat "$E2E_DIR/cp/etcd.pid")
	mapfile -d '' ETCD_ARGV <"/proc/$pid/cmdline"
	if ! { e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
		sa_token fault-a >"$E2E_DIR/token-a" && sa_token fault-b >"$E2E_DIR/token-b"; }; then
		return 1
	fi
	cp "$E2E_DIR/token-a" "$E2E_DIR/sa-token"
	cat >"$E2E_DIR/gavel.kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: gavel
clusters: [{name: local, cluster: {server: "$APISERVER_URL", certificate-authority: "$APISERVER_CA"}}]
contexts: [{name: gavel, context: {cluster: local, user: gavel}}]
users: [{name: gavel, user: {tokenFile: "$E2E_DIR/sa-token"}}]
EOF
	# The key pair as a Secret volume lays it out: files -> ..data/ -> ..v1/.
	mkdir -p "$E2E_TLS"
	"$GAVEL" certs generate --service gavel --namespace "$GAVEL_NAMESPACE" --ip 127.0.0.1 \
		--out "$E2E_TLS/..v1" >/dev/null || return 1
	ln -s ..v1 "$E2E_TLS/..data"
	for f in ca.crt tls.crt tls.key; do ln -s "..data/$f" "$E2E_TLS/$f"; done
	if ! { ns_create "$ADM_NS" && probe_files; }; then return 1; fi
	k apply -f - >/dev/null <<EOF || return 1
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: adm-team}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: check-team
      match: {any: [{resources: {kinds: [ConfigMap], namespaces: [$ADM_NS]}}]}
      validate:
        message: "$ADM_MSG"
        pattern: {metadata: {labels: {team: "?*"}}}
EOF
	gv_start g1 "${LEASE_FLAGS[@]}" --background-scan-batch-size "$SCAN_BATCH" \
		--background-scan-interval 1h || return 1
	GAVEL_PORT=${GV_PORT[g1]} # e2e_cleanup deletes the webhook configuration
	webhook_to g1 || return 1
	for _ in $(seq 1 80); do
		[ "$(probe_api bad)" = right ] && [ "$(lease_holder)" != "" ] && return 0
		sleep 0.25
	done
	log "the webhook did not become effective or g1 did not lead within 20 s"
	return 1
}

cleanup() {
	local n
	touch "$E2E_DIR/probe.stop" "$E2E_DIR/flip.stop" 2>/dev/null || true
	[ -z "$PROBE_PID" ] || wait "$PROBE_PID" 2>/dev/null || true
	[ -z "$FLIP_PID" ] || wait "$FLIP_PID" 2>/dev/null || true
	for n in "${!GV_PID[@]}"; do gv_stop "$n" KILL; done
	e2e_cleanup
}

main() {
	local t0 c
	if [ ! -x "${KUBE_APISERVER:-$CACHE/bin/kube-apiserver}" ] ||
		[ ! -x "${ETCD:-$CACHE/bin/etcd}" ] || [ ! -x "${KUBECTL:-$CACHE/bin/kubectl}" ]; then
		echo "e2e/faults.sh: kube-apiserver, etcd or kubectl missing (KUBE_APISERVER, ETCD," \
			"KUBECTL or $CACHE/bin; e2e/local/build-apiserver.sh builds them): skipped"
		printf '0 passed, 0 failed\n'
		exit 0
	fi
	t0=$(now_ms)
	if ! setup; then
		log "setup failed"
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	log "set up in $((($(now_ms) - t0) / 1000)) s; gavel g1 on port ${GV_PORT[g1]}," \
		"API server on $APISERVER_PORT"
	for c in ${FAULTS_CASES:-certificate token apiserver watch etcd storm leader sigkill}; do
		t0=$(now_ms)
		"case_$c"
		probe_stop
		log "case $c: $((($(now_ms) - t0) / 1000)) s"
	done
	# The replicas still running: SIGTERM, not the cleanup's SIGKILL (which
	# stops them even with E2E_KEEP=1). In a sanitizer build LeakSanitizer
	# runs at their exit and writes to their logs, which summary
	# (sanitizer_check) then reads.
	for c in "${!GV_PID[@]}"; do gv_stop "$c"; done
	summary
}

main "$@"
