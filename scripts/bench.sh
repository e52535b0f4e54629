#!/bin/sh
# make bench: runs the benchmarks and prints their figures (never asserts).
#
#   sh scripts/bench.sh [CORPUS]       (CORPUS default ../shared/conformance)
#
# Sections: JMESPath; the engine on 10,000 generated Pods; gavel apply on
# the same Pods; the admission webhook driven directly (gavel serve
# standalone over TLS, loaded by wrk); Pod creation through a local API
# server with and without gavel's webhook; the background scan of 10,000
# and 20,000 Pods through a local API server (background/bench/scan_bench.sh).
# Every section that lacks something (the corpus, wrk, the API server
# binaries) says so and is skipped. All traffic stays on 127.0.0.1.
#
# Env: BENCH_OUT=DIR keeps the generated files there; BENCH_SECONDS (default
# 10) is the measured time of each load run; BENCH_CONNECTIONS (default 64)
# the connections of the direct run; BENCH_CONCURRENCY (default 16) the
# concurrent creates through the API server; BENCH_ONLY="engine direct
# apiserver scan" (default: all four) picks sections; BENCH_PODS (default
# 10000) the Pods of the scan section's first round.
set -u
corpus=${1:-../shared/conformance}
pss="$corpus/kyverno-policies/pod-security"
out=${BENCH_OUT:-$(mktemp -d)}
mkdir -p "$out"
# The pod-security set measured since the start is its 15 pattern
# ClusterPolicies; subrule/ (validate.podSecurity) is measured beside them,
# never mixed in. $pss becomes a folder of the pattern set.
pss_subrule=
if [ -d "$pss" ]; then
	mkdir -p "$out/pod-security-patterns"
	grep -rl --exclude-dir=subrule --include='*.yaml' '^kind: ClusterPolicy' "$pss" |
		while read -r f; do
			cp "$f" "$out/pod-security-patterns/"
		done
	[ -d "$pss/subrule" ] && pss_subrule="$pss/subrule"
	pss="$out/pod-security-patterns"
fi
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-64}
conc=${BENCH_CONCURRENCY:-16}
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
cache=${GAVEL_CACHE:-/var/cache/gavel}
serve_pid=
cp_dir=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ -n "$serve_pid" ]; then
		kill -TERM "$serve_pid" 2>/dev/null
		wait "$serve_pid" 2>/dev/null
	fi
	if [ -n "$cp_dir" ]; then
		e2e/local/down.sh "$cp_dir" >/dev/null 2>&1
		rm -rf "$cp_dir"
	fi
	[ -n "${BENCH_OUT:-}" ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

want() {
	case " ${BENCH_ONLY:-engine direct apiserver scan} " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# ---- engine -----------------------------------------------------------------

bench_engine() {
	echo "== JMESPath: ns per parse and per evaluation"
	if [ -f "$corpus/jmespath/benchmarks.json" ]; then
		build/engine/bench/bench_jmespath "$corpus/jmespath/benchmarks.json"
	else
		build/engine/bench/bench_jmespath
	fi

	if [ -d "$pss" ]; then
		echo "== engine: 10,000 generated Pods x pod-security policies ($(find "$pss" -name '*.yaml' | wc -l) pattern ClusterPolicies)"
		build/engine/bench/bench_engine -n 10000 --emit "$out/pods.yaml" "$pss"
		if [ -n "$pss_subrule" ]; then
			echo "== engine: the same 10,000 Pods x pod-security subrule/ (validate.podSecurity ClusterPolicies)"
			build/engine/bench/bench_engine -n 10000 "$pss_subrule"
		fi
		echo "== whole process: gavel apply on the same 10,000 Pods as one YAML file"
		if [ -x /usr/bin/time ]; then
			/usr/bin/time -f 'gavel apply: %e s wall, %M KiB peak RSS' \
				./gavel apply "$pss" --resource "$out/pods.yaml" -o json >/dev/null
		else
			start=$(date +%s.%N)
			./gavel apply "$pss" --resource "$out/pods.yaml" -o json >/dev/null
			end=$(date +%s.%N)
			echo "gavel apply: $(echo "$end - $start" | bc) s wall"
		fi
	else
		echo "bench: $pss not found: the engine benchmarks need the conformance corpus; skipped"
	fi
}

# ---- admission: helpers -------------------------------------------------------

# The pod-security ClusterPolicies, switched from Audit to Enforce so that the
# violating reviews are denied (the denial path is part of what is measured).
enforce_policies() { # DIR
	mkdir -p "$1"
	grep -rl '^kind: ClusterPolicy' "$pss" | while read -r f; do
		sed 's/validationFailureAction: Audit/validationFailureAction: Enforce/' "$f" \
			>"$1/$(basename "$f")"
	done
}

# start_serve LOG ARGS...: starts gavel serve on 127.0.0.1 (ports picked by the
# kernel) and sets serve_pid and port; returns 1 when it does not come up.
start_serve() {
	log=$1
	shift
	: >"$log"
	./gavel serve --listen 127.0.0.1:0 --metrics-listen "" "$@" >"$log" 2>&1 &
	serve_pid=$!
	port=
	i=0
	while [ $i -lt 100 ]; do
		port=$(sed -n 's/.*webhook listening on [^(]*(port \([0-9]*\)).*/\1/p' "$log")
		[ -n "$port" ] && return 0
		kill -0 "$serve_pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	echo "bench: gavel serve did not start:"
	sed 's/^/  | /' "$log"
	stop_serve
	return 1
}

stop_serve() {
	if [ -n "$serve_pid" ]; then
		kill -TERM "$serve_pid" 2>/dev/null
		wait "$serve_pid" 2>/dev/null
	fi
	serve_pid=
}

# cpu_ticks PID: user + system CPU time of a process, in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}

# rss_kib PID FIELD: VmRSS or VmHWM of a process, in KiB.
rss_kib() {
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null
}

# ---- admission, direct --------------------------------------------------------

bench_direct() {
	echo "== admission, direct: gavel serve standalone over TLS, $conns keep-alive connections, ${secs} s"
	if [ ! -d "$pss" ]; then
		echo "bench: $pss not found: the admission benchmark needs the pod-security policies; skipped"
		return 0
	fi
	if ! command -v wrk >/dev/null 2>&1; then
		echo "bench: wrk (the load generator) is missing: installing Debian's wrk with apt-get"
		if ! { apt-get install -y wrk >"$out/apt.log" 2>&1 ||
			{ apt-get update >>"$out/apt.log" 2>&1 &&
				apt-get install -y wrk >>"$out/apt.log" 2>&1; }; }; then
			echo "bench: could not install wrk (see below); direct admission benchmark skipped"
			tail -n 3 "$out/apt.log" | sed 's/^/  | /'
			return 0
		fi
	fi
	enforce_policies "$out/pss-enforce"
	npol=$(find "$out/pss-enforce" -name '*.yaml' | wc -l)
	echo "policies: $npol pod-security ClusterPolicies (Audit switched to Enforce)"
	build/admission/bench/review_parse -n 64 --emit "$out/reviews" "$out/pss-enforce" |
		tee "$out/parse.txt"
	floor=$(sed -n 's/^parse floor: \([0-9.]*\) reviews.*/\1/p' "$out/parse.txt")
	./gavel certs generate --service gavel --namespace gavel --ip 127.0.0.1 \
		--out "$out/tls" >/dev/null || return 0
	cat >"$out/reviews.lua" <<'EOF'
-- POSTs the AdmissionReviews named after "--" in turn; counts the answers.
local threads = {}
function setup(thread) table.insert(threads, thread) end
bodies, next_body, allowed, denied, other = {}, 0, 0, 0, 0
function init(args)
  for _, f in ipairs(args) do
    local h = assert(io.open(f, "rb"))
    bodies[#bodies + 1] = h:read("*a")
    h:close()
  end
  next_body = math.random(#bodies)
end
function request()
  next_body = next_body % #bodies + 1
  return wrk.format("POST", "/validate?timeout=10s",
    {["Content-Type"] = "application/json"}, bodies[next_body])
end
function response(status, headers, body)
  if status ~= 200 then other = other + 1
  elseif body:find('"allowed":false', 1, true) then denied = denied + 1
  else allowed = allowed + 1 end
end
function done(summary, latency, requests)
  local a, d, o = 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("allowed"); d = d + t:get("denied"); o = o + t:get("other")
  end
  io.write(string.format("answers: %d allowed, %d denied, %d not HTTP 200\n", a, d, o))
  io.write(string.format("latency: p50 %.2f ms, p99 %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
EOF
	start_serve "$out/serve.log" --policies "$out/pss-enforce" --tls-dir "$out/tls" ||
		return 0
	rss0=$(rss_kib "$serve_pid" VmRSS)
	cpu0=$(cpu_ticks "$serve_pid")
	# shellcheck disable=SC2046 # one argument per review file
	wrk -t "$cores" -c "$conns" -d "${secs}s" --latency --timeout 10s -s "$out/reviews.lua" \
		"https://127.0.0.1:$port/validate" -- $(ls "$out"/reviews/review-*.json) \
		>"$out/wrk.txt" 2>&1
	rss1=$(rss_kib "$serve_pid" VmRSS)
	cpu1=$(cpu_ticks "$serve_pid")
	hwm=$(rss_kib "$serve_pid" VmHWM)
	stop_serve
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out/wrk.txt")
	if [ -z "$rps" ]; then
		echo "bench: wrk failed:"
		sed 's/^/  | /' "$out/wrk.txt"
		return 0
	fi
	grep -E '^(answers|latency):|Socket errors|Non-2xx' "$out/wrk.txt"
	echo "throughput: $rps reviews/s ($cores cores shared by gavel and wrk)"
	echo "server RSS: ${rss0:-?} KiB idle, ${rss1:-?} KiB after the run, ${hwm:-?} KiB peak"
	total=$(awk '/ requests in / { print $1 }' "$out/wrk.txt")
	if [ -n "$cpu0" ] && [ -n "$cpu1" ] && [ -n "$total" ]; then
		awk -v t="$((cpu1 - cpu0))" -v hz="$(getconf CLK_TCK)" -v n="$total" -v s="$secs" '
			BEGIN { cpu = t / hz; us = cpu * 1e6 / n
				printf "server CPU: %.1f s in %d s (%.2f cores), %.0f us per review, %.0f reviews/s per core\n",
					cpu, s, cpu / s, us, 1e6 / us }'
	fi
	if [ -n "$floor" ]; then
		awk -v r="$rps" -v f="$floor" \
			'BEGIN { printf "reviews/s / JSON-parse floor: %.2f (%.0f / %.0f)\n", r / f, r, f }'
	fi
}

# ---- admission, through the API server ------------------------------------------

bench_apiserver() {
	echo "== admission, through the API server: Pod creates, $conc concurrent, ${secs} s each, without and with gavel's webhook"
	for b in "${KUBE_APISERVER:-$cache/bin/kube-apiserver}" "${ETCD:-$cache/bin/etcd}" \
		"${KUBECTL:-$cache/bin/kubectl}"; do
		if [ ! -x "$b" ]; then
			echo "bench: $b not found: run e2e/local/build-apiserver.sh once (about 7 minutes); skipped"
			return 0
		fi
	done
	cp_dir=$(mktemp -d)
	if ! e2e/local/up.sh "$cp_dir" >"$out/up.log" 2>&1; then
		echo "bench: the local control plane did not start; skipped"
		tail -n 5 "$out/up.log" | sed 's/^/  | /'
		return 0
	fi
	# shellcheck disable=SC1091 # written by up.sh
	. "$cp_dir/env"
	k() { "$KUBECTL" --request-timeout=30s "$@"; }
	k create namespace gavel >/dev/null
	k create namespace bench-pods >/dev/null
	k label namespace bench-pods gavel-bench=on >/dev/null
	if [ -d "$pss" ]; then
		[ -d "$out/pss-enforce" ] || enforce_policies "$out/pss-enforce"
		policies=$out/pss-enforce
	else
		policies=manifests/samples/policies
	fi
	echo "control plane: kube-apiserver v1.20 + etcd on 127.0.0.1; policies: $policies"

	build/admission/bench/apiserver_load --kubeconfig "$KUBECONFIG" --namespace bench-pods \
		--concurrency "$conc" --seconds "$secs" --label "without webhook" | tee "$out/a.txt"

	./gavel certs generate --service gavel --namespace gavel --ip 127.0.0.1 \
		--out "$out/tls-api" >/dev/null || return 0
	start_serve "$out/serve-api.log" --kubeconfig "$KUBECONFIG" --namespace gavel \
		--policies "$policies" --tls-dir "$out/tls-api" --manage-certs=false \
		--metrics-listen 127.0.0.1:0 || return 0
	mport=$(sed -n 's/.*metrics on [^(]*(port \([0-9]*\)).*/\1/p' "$out/serve-api.log")
	k apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: gavel-bench}
webhooks:
  - name: validate.gavel.svc
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
    clientConfig:
      url: https://127.0.0.1:$port/validate
      caBundle: $(base64 -w0 "$out/tls-api/ca.crt")
    rules:
      - {operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}
    namespaceSelector:
      matchLabels: {gavel-bench: "on"}
EOF
	# Effective once a violating Pod is denied (the configuration is read by an informer).
	i=0
	while [ $i -lt 40 ]; do
		if k -n bench-pods run bench-probe --image=busybox --restart=Never \
			--overrides='{"spec":{"hostNetwork":true}}' --dry-run=server 2>&1 |
			grep -q 'denied the request'; then
			break
		fi
		sleep 0.25
		i=$((i + 1))
	done
	[ $i -lt 40 ] || echo "bench: the webhook did not become effective within 10 s"

	build/admission/bench/apiserver_load --kubeconfig "$KUBECONFIG" --namespace bench-pods \
		--concurrency "$conc" --seconds "$secs" --label "with gavel's webhook" | tee "$out/b.txt"
	echo "gavel serve RSS: $(rss_kib "$serve_pid" VmRSS) KiB, peak $(rss_kib "$serve_pid" VmHWM) KiB"
	# gavel's own time per review (read body to answer), from its metrics.
	if [ -n "$mport" ] && curl -s --max-time 5 "http://127.0.0.1:$mport/metrics" >"$out/metrics.txt"; then
		awk '/^kyverno_admission_review_duration_seconds_sum/ { s += $NF }
			/^kyverno_admission_review_duration_seconds_count/ { n += $NF }
			END { if (n) printf "gavel handler time (its metrics): %.2f ms mean over %d reviews\n", s * 1000 / n, n }' \
			"$out/metrics.txt"
	fi
	stop_serve
	a50=$(sed -n 's/.* p50 \([0-9.]*\) ms.*/\1/p' "$out/a.txt")
	a99=$(sed -n 's/.* p99 \([0-9.]*\) ms.*/\1/p' "$out/a.txt")
	b50=$(sed -n 's/.* p50 \([0-9.]*\) ms.*/\1/p' "$out/b.txt")
	b99=$(sed -n 's/.* p99 \([0-9.]*\) ms.*/\1/p' "$out/b.txt")
	if [ -n "$a50" ] && [ -n "$b50" ] && [ -n "$a99" ] && [ -n "$b99" ]; then
		awk -v a50="$a50" -v a99="$a99" -v b50="$b50" -v b99="$b99" 'BEGIN {
			printf "with/without webhook: p50 %.2fx (+%.2f ms), p99 %.2fx (+%.2f ms)\n",
				b50 / a50, b50 - a50, b99 / a99, b99 - a99 }'
	fi
	e2e/local/down.sh "$cp_dir" >/dev/null 2>&1
	rm -rf "$cp_dir"
	cp_dir=
}

# ---- background scan ---------------------------------------------------------------

# Its own control plane (started and stopped by the script), its logs under
# $out/scan when BENCH_OUT is set.
bench_scan() {
	if [ -n "${BENCH_OUT:-}" ]; then
		BENCH_OUT=$out/scan sh background/bench/scan_bench.sh "$corpus"
	else
		sh background/bench/scan_bench.sh "$corpus"
	fi
}

if want engine; then bench_engine; fi
if want direct; then bench_direct; fi
if want apiserver; then bench_apiserver; fi
if want scan; then bench_scan; fi
exit 0
