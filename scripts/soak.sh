#!/usr/bin/env bash
# make soak: gavel serve under steady load for a long time; prints its RSS and
# open file descriptors along the way (figures printed, never asserted; not
# part of make test).
#
#   bash scripts/soak.sh [CORPUS]          (CORPUS default ../shared/conformance)
#
# A local control plane (e2e/local: kube-apiserver v1.20 + etcd on 127.0.0.1)
# with manifests/crds applied, the pod-security ClusterPolicies of
# CORPUS/kyverno-policies/pod-security (Audit switched to Enforce, as in make
# bench) and SOAK_PODS existing Pods (build/background/bench/seed_pods). gavel
# serve runs in cluster mode on it: policies from its watch, the background
# reconciler scanning every SOAK_SCAN_INTERVAL. Then, for SOAK_WARMUP seconds
# of warm-up and SOAK_SECONDS of soak:
#
#   admission       wrk POSTs the generated Pod AdmissionReviews
#                   (build/admission/bench/review_parse --emit) to gavel's TLS
#                   port at SOAK_RATE reviews/s over SOAK_CONNECTIONS
#                   keep-alive connections (paced by the Lua script: Debian's
#                   wrk has no rate option)
#   policy updates  every SOAK_UPDATE_EVERY seconds, disallow-host-namespaces
#                   switches between Enforce and Audit (kubectl patch), and a
#                   probe review with hostNetwork is sent until gavel's answer
#                   follows (the time is the update's latency through the
#                   watch); another policy's annotation is bumped in turn
#   background      scans on the reconciler's schedule (and of each updated
#                   policy)
#
# Every SOAK_SAMPLE_EVERY seconds (from the end of the warm-up) one row: RSS
# (VmRSS), open descriptors, threads, reviews served and their rate, scans
# completed (gavel's /metrics: kyverno_admission_requests_total,
# gavel_background_scan_duration_seconds_count). At the end: RSS and
# descriptor growth from the first row to the last (targets: RSS under 5%,
# no descriptor growth), their range in each half of the soak (sampled every
# SOAK_UPDATE_EVERY seconds: RSS swings with the scans), reviews served and
# the rate achieved, errors, scans, policy updates and their latency, the
# load average.
#
# Env: SOAK_SECONDS (600), SOAK_WARMUP (60), SOAK_RATE (1000),
# SOAK_CONNECTIONS (16), SOAK_PODS (5000), SOAK_NAMESPACES (50),
# SOAK_UPDATE_EVERY (10), SOAK_SAMPLE_EVERY (60), SOAK_SCAN_INTERVAL (1m),
# SOAK_OUT=DIR keeps the logs there. KUBE_APISERVER / ETCD / KUBECTL as
# e2e/local/up.sh. Skips (exit 0) when the corpus or the API server binaries
# are missing, or wrk is and apt-get cannot install it; exit 1 when the setup
# fails. All traffic stays on 127.0.0.1.
set -u
corpus=${1:-../shared/conformance}
pss="$corpus/kyverno-policies/pod-security"
cache=${GAVEL_CACHE:-/var/cache/gavel}
soak=${SOAK_SECONDS:-600}
warmup=${SOAK_WARMUP:-60}
rate=${SOAK_RATE:-1000}
conns=${SOAK_CONNECTIONS:-16}
pods=${SOAK_PODS:-5000}
nss=${SOAK_NAMESPACES:-50}
update_every=${SOAK_UPDATE_EVERY:-10}
sample_every=${SOAK_SAMPLE_EVERY:-60}
scan_interval=${SOAK_SCAN_INTERVAL:-1m}
out=${SOAK_OUT:-$(mktemp -d)}
mkdir -p "$out"
probe_policy=disallow-host-namespaces
serve_pid=
wrk_pid=
cp_dir=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ -n "$wrk_pid" ]; then
		kill -TERM "$wrk_pid" 2>/dev/null
		wait "$wrk_pid" 2>/dev/null
	fi
	if [ -n "$serve_pid" ]; then
		kill -TERM "$serve_pid" 2>/dev/null
		wait "$serve_pid" 2>/dev/null
	fi
	if [ -n "$cp_dir" ]; then
		e2e/local/down.sh "$cp_dir" >/dev/null 2>&1
		rm -rf "$cp_dir"
	fi
	[ -n "${SOAK_OUT:-}" ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

skip() {
	echo "soak: $*; skipped"
	exit 0
}

fail() {
	echo "soak: $*"
	exit 1
}

now_ms() {
	local t=${EPOCHREALTIME//[.,]/}
	echo "$((10#$t / 1000))"
}

# ---- what the soak needs ------------------------------------------------------

echo "== soak: ${soak} s of admission at ${rate} reviews/s, policy updates every ${update_every} s, background scans every ${scan_interval}"
[ -d "$pss" ] || skip "$pss not found: the soak needs the pod-security policies"
for b in "${KUBE_APISERVER:-$cache/bin/kube-apiserver}" "${ETCD:-$cache/bin/etcd}" \
	"${KUBECTL:-$cache/bin/kubectl}"; do
	[ -x "$b" ] || skip "$b not found: run e2e/local/build-apiserver.sh once (about 7 minutes)"
done
for b in ./gavel build/admission/bench/review_parse build/background/bench/seed_pods; do
	[ -x "$b" ] || skip "$b missing (make soak builds it)"
done
command -v curl >/dev/null 2>&1 || skip "curl is missing"
if ! command -v wrk >/dev/null 2>&1; then
	echo "soak: wrk (the load generator) is missing: installing Debian's wrk with apt-get"
	if ! { apt-get install -y wrk >"$out/apt.log" 2>&1 ||
		{ apt-get update >>"$out/apt.log" 2>&1 &&
			apt-get install -y wrk >>"$out/apt.log" 2>&1; }; }; then
		tail -n 3 "$out/apt.log" | sed 's/^/  | /'
		skip "could not install wrk"
	fi
fi

# ---- control plane, policies, Pods ----------------------------------------------

cp_dir=$(mktemp -d)
if ! e2e/local/up.sh "$cp_dir" >"$out/up.log" 2>&1; then
	tail -n 5 "$out/up.log" | sed 's/^/  | /'
	fail "the local control plane did not start"
fi
# shellcheck disable=SC1091 # written by up.sh
. "$cp_dir/env"
k() { "$KUBECTL" --request-timeout=30s "$@"; }
if ! { k apply -f manifests/crds >/dev/null &&
	k wait --for condition=established --timeout=60s \
		crd/clusterpolicies.kyverno.io crd/policyreports.wgpolicyk8s.io \
		crd/clusterpolicyreports.wgpolicyk8s.io >/dev/null; }; then
	fail "CRDs not established"
fi
k create namespace gavel >/dev/null || fail "namespace gavel not created"

# The pod-security ClusterPolicies, Audit switched to Enforce (denials are
# part of the load).
mkdir -p "$out/policies"
names=()
# the 15 pattern policies, as measured since the start (subrule/ holds the
# validate.podSecurity ones)
mapfile -t files < <(grep -rl --exclude-dir=subrule '^kind: ClusterPolicy' "$pss" | sort)
for f in "${files[@]}"; do
	sed 's/validationFailureAction: Audit/validationFailureAction: Enforce/' "$f" \
		>"$out/policies/$(basename "$f")"
	if ! k apply -f "$out/policies/$(basename "$f")" >/dev/null 2>"$out/apply.err"; then
		fail "$f not applied: $(head -n 1 "$out/apply.err")"
	fi
	names+=("$(basename "$f" .yaml)")
done
k get clusterpolicy "$probe_policy" >/dev/null 2>&1 ||
	fail "ClusterPolicy $probe_policy (the policy the updates switch) not in $pss"

build/background/bench/seed_pods --kubeconfig "$KUBECONFIG" --pods "$pods" \
	--namespaces "$nss" --prefix soak | tee "$out/seed.txt" ||
	fail "Pods not seeded"
echo "cluster: kube-apiserver v1.20 + etcd on 127.0.0.1, ${#names[@]} pod-security ClusterPolicies (Enforce), $pods Pods in $nss namespaces"

# ---- reviews, certificates, gavel serve -------------------------------------------

build/admission/bench/review_parse -n 64 --emit "$out/reviews" >"$out/reviews.txt" ||
	fail "reviews not generated"
./gavel certs generate --service gavel --namespace gavel --ip 127.0.0.1 \
	--out "$out/tls" >/dev/null || fail "certificates not generated"
# The probe: the first (compliant) review with hostNetwork, which only
# disallow-host-namespaces refuses.
sed 's/"spec":{"containers"/"spec":{"hostNetwork":true,"containers"/' \
	"$out/reviews/review-000.json" >"$out/probe.json"
grep -q '"hostNetwork":true' "$out/probe.json" || fail "probe review not made"

./gavel serve --kubeconfig "$KUBECONFIG" --namespace gavel --tls-dir "$out/tls" \
	--manage-certs=false --webhook-config "" --listen 127.0.0.1:0 \
	--metrics-listen 127.0.0.1:0 --background-scan-interval "$scan_interval" \
	</dev/null >"$out/serve.log" 2>&1 &
serve_pid=$!
port=
mport=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*webhook listening on [^(]*(port \([0-9]*\)).*/\1/p' "$out/serve.log")
	mport=$(sed -n 's/.*metrics on [^(]*(port \([0-9]*\)).*/\1/p' "$out/serve.log")
	[ -n "$port" ] && break
	kill -0 "$serve_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$port" ] || [ -z "$mport" ]; then
	sed 's/^/  | /' "$out/serve.log"
	fail "gavel serve did not start"
fi

# probe: gavel's answer to the probe review: denied, allowed or error.
probe() {
	local body
	body=$(curl -s --max-time 5 --cacert "$out/tls/ca.crt" -H 'Content-Type: application/json' \
		--data-binary @"$out/probe.json" "https://127.0.0.1:$port/validate?timeout=10s")
	case $body in
	*'"allowed":false'*) echo denied ;;
	*'"allowed":true'*) echo allowed ;;
	*) echo error ;;
	esac
}

# wait_probe WANT SECONDS: until the probe's answer is WANT; sets waited (ms).
wait_probe() {
	local t0 deadline
	t0=$(now_ms)
	deadline=$((t0 + $2 * 1000))
	while :; do
		if [ "$(probe)" = "$1" ]; then
			waited=$(($(now_ms) - t0))
			return 0
		fi
		[ "$(now_ms)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# gavel is ready when its watch has the policies: the probe is denied.
wait_probe denied 60 || fail "gavel serve did not deny the probe review within 60 s (policies not loaded?)"
echo "gavel serve: cluster mode, pid $serve_pid, webhook 127.0.0.1:$port, metrics 127.0.0.1:$mport"

# ---- load ------------------------------------------------------------------------

cat >"$out/soak.lua" <<'EOF'
-- POSTs the AdmissionReviews named after "--" (after the rate) in turn, at
-- RATE requests/s in all: delay() gives each request the next slot of a
-- fixed schedule (a request never waits for one already late; after a stall
-- of more than a second the schedule restarts from now). Counts the answers.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } soak_timespec;
int clock_gettime(int clk, soak_timespec *ts);
]]
local ts = ffi.new("soak_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
bodies, next_body, allowed, denied, other = {}, 0, 0, 0, 0
function init(args)
  interval = 1000 / tonumber(args[1])
  for i = 2, #args do
    local h = assert(io.open(args[i], "rb"))
    bodies[#bodies + 1] = h:read("*a")
    h:close()
  end
  next_body = math.random(#bodies)
  slot = now_ms()
end
function delay()
  local t = now_ms()
  if slot < t - 1000 then slot = t end
  slot = slot + interval
  if slot <= t then return 0 end
  return math.floor(slot - t)
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
  io.write(string.format("latency: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
EOF

# One wrk thread paces all connections; the run outlasts the soak and is
# interrupted (SIGINT: wrk prints its figures) after the last sample.
# shellcheck disable=SC2046 # one argument per review file
wrk -t 1 -c "$conns" -d "$((warmup + soak + 600))s" --latency --timeout 10s -s "$out/soak.lua" \
	"https://127.0.0.1:$port/validate" -- "$rate" $(ls "$out"/reviews/review-*.json) \
	>"$out/wrk.txt" 2>&1 &
wrk_pid=$!
echo "load: wrk, $conns keep-alive connections, ${rate} reviews/s; warm-up ${warmup} s"
sleep "$warmup"
kill -0 "$wrk_pid" 2>/dev/null || {
	sed 's/^/  | /' "$out/wrk.txt"
	fail "wrk stopped during the warm-up"
}
kill -0 "$serve_pid" 2>/dev/null || fail "gavel serve exited during the warm-up (see $out/serve.log)"

# ---- soak ------------------------------------------------------------------------

metric_sum() { # NAME: the sum of a metric's series in $out/metrics.txt
	awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $NF } END { printf "%.0f\n", s }' \
		"$out/metrics.txt"
}

# mem T: gavel's RSS (KiB), open descriptors and threads at T s; sets rss,
# fds, threads and appends them to $out/mem.txt (every update period).
mem() {
	rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$serve_pid/status" 2>/dev/null)
	threads=$(awk '$1 == "Threads:" { print $2 }' "/proc/$serve_pid/status" 2>/dev/null)
	fds=$(find "/proc/$serve_pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	echo "$1 ${rss:-0} $fds ${threads:-0}" >>"$out/mem.txt"
}

# sample T: mem, and one row of the table; sets reqs, scans.
sample() {
	mem "$1"
	if curl -s --max-time 10 "http://127.0.0.1:$mport/metrics" >"$out/metrics.txt"; then
		reqs=$(metric_sum kyverno_admission_requests_total)
		scans=$(metric_sum gavel_background_scan_duration_seconds_count)
	else
		reqs=-
		scans=-
	fi
	local t=$1 now rps=-
	now=$(now_ms)
	if [ -n "${last_reqs:-}" ] && [ "$reqs" != - ] && [ "$last_reqs" != - ]; then
		rps=$(awk -v n="$((reqs - last_reqs))" -v ms="$((now - last_ms))" \
			'BEGIN { printf "%.0f", n * 1000 / ms }')
	fi
	last_reqs=$reqs
	last_ms=$now
	printf '%6s %10s %5s %7s %10s %9s %6s %7s %6s\n' "$t" "${rss:-?}" "$fds" "${threads:-?}" \
		"$reqs" "$rps" "$scans" "$updates" "$(cut -d' ' -f1 /proc/loadavg)"
}

# update N: the Nth policy update: the probe policy switched (its latency
# measured through the probe), another policy's annotation bumped.
update() {
	local n=$1 action want other
	if [ $((n % 2)) -eq 1 ]; then
		action=Audit
		want=allowed
	else
		action=Enforce
		want=denied
	fi
	if k patch clusterpolicy "$probe_policy" --type merge -p \
		"{\"metadata\":{\"annotations\":{\"gavel.soak/update\":\"$n\"}},\"spec\":{\"validationFailureAction\":\"$action\"}}" \
		>/dev/null 2>>"$out/update.err"; then
		updates=$((updates + 1))
		switches=$((switches + 1))
		if wait_probe "$want" $((update_every - 2)); then
			seen=$((seen + 1))
			echo "$waited" >>"$out/latency.txt"
		fi
	else
		update_errors=$((update_errors + 1))
	fi
	other=${names[$((n % ${#names[@]}))]}
	[ "$other" != "$probe_policy" ] || other=${names[$(((n + 1) % ${#names[@]}))]}
	if k annotate clusterpolicy "$other" --overwrite "gavel.soak/update=$n" \
		>/dev/null 2>>"$out/update.err"; then
		updates=$((updates + 1))
	else
		update_errors=$((update_errors + 1))
	fi
}

updates=0
switches=0
update_errors=0
seen=0
: >"$out/latency.txt"
: >"$out/mem.txt"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
cpu0=$(awk '{ print $14 + $15 }' "/proc/$serve_pid/stat")
echo "== soak: one row every ${sample_every} s (RSS in KiB; reviews and scans: gavel's counters since its start)"
printf '%6s %10s %5s %7s %10s %9s %6s %7s %6s\n' t/s RSS fds threads reviews reviews/s scans updates load
sample 0
rss0=$rss fds0=$fds reqs0=$reqs scans0=$scans ms0=$last_ms
start=$(date +%s)
tick=0
while :; do
	tick=$((tick + 1))
	at=$((tick * update_every))
	[ "$at" -le "$soak" ] || break
	now=$(date +%s)
	[ $((start + at - now)) -le 0 ] || sleep $((start + at - now))
	if ! kill -0 "$serve_pid" 2>/dev/null; then
		echo "soak: gavel serve exited at ${at} s (see $out/serve.log)"
		break
	fi
	if [ $((at % sample_every)) -eq 0 ] || [ "$at" -eq "$soak" ]; then
		sample "$at"
	else
		mem "$at"
	fi
	[ "$at" -lt "$soak" ] && update "$tick"
done
# the end, when SOAK_SECONDS is not a multiple of the update period
if [ $((soak % update_every)) -ne 0 ]; then
	now=$(date +%s)
	[ $((start + soak - now)) -le 0 ] || sleep $((start + soak - now))
	sample "$soak"
fi
rss1=$rss fds1=$fds reqs1=$reqs scans1=$scans ms1=$last_ms
cpu1=$(awk '{ print $14 + $15 }' "/proc/$serve_pid/stat" 2>/dev/null)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$serve_pid/status" 2>/dev/null)
kill -INT "$wrk_pid" 2>/dev/null
wait "$wrk_pid" 2>/dev/null
wrk_pid=

# ---- figures ----------------------------------------------------------------------

echo "== soak figures"
awk -v a="$rss0" -v b="$rss1" 'BEGIN {
	printf "RSS: %.1f MiB at the start, %.1f MiB at the end: %+.1f%% (target: under 5%%)\n",
		a / 1024, b / 1024, (b - a) * 100 / a }'
echo "open descriptors: $fds0 at the start, $fds1 at the end: $(printf '%+d' $((fds1 - fds0))) (target: no growth)"
# RSS swings with the scans (objects listed and evaluated, then freed): the
# lowest value of each half of the soak shows growth better than two samples.
awk -v half=$((soak / 2)) -v every="$update_every" -v h="${hwm:-0}" '
	{ i = $1 < half ? 1 : 2
	  if (!(i in lo) || $2 < lo[i]) lo[i] = $2; if ($2 > hi[i]) hi[i] = $2
	  if (!(i in flo) || $3 < flo[i]) flo[i] = $3; if ($3 > fhi[i]) fhi[i] = $3
	  if ($2 > h) h = $2 }
	END { if (!(1 in lo) || !(2 in lo)) exit
	  printf "RSS every %d s: %.1f to %.1f MiB in the first half, %.1f to %.1f MiB in the second: lowest %+.1f%%; peak %.1f MiB\n",
		every, lo[1] / 1024, hi[1] / 1024, lo[2] / 1024, hi[2] / 1024, (lo[2] - lo[1]) * 100 / lo[1], h / 1024
	  printf "open descriptors every %d s: %d to %d in the first half, %d to %d in the second\n",
		every, flo[1], fhi[1], flo[2], fhi[2] }' "$out/mem.txt"
if [ "$reqs0" != - ] && [ "$reqs1" != - ]; then
	awk -v n="$((reqs1 - reqs0))" -v ms="$((ms1 - ms0))" -v r="$rate" 'BEGIN {
		printf "reviews: %d served in %.0f s: %.0f reviews/s (target %d/s)\n", n, ms / 1000, n * 1000 / ms, r }'
fi
grep -E '^(answers|latency):|Socket errors|Non-2xx|requests in' "$out/wrk.txt" | sed 's/^ */wrk, warm-up included: /'
if ! grep -q 'Socket errors' "$out/wrk.txt"; then
	echo "wrk, warm-up included: no socket errors (connect, read, write, timeout)"
fi
if [ -n "$cpu0" ] && [ -n "$cpu1" ]; then
	awk -v t="$((cpu1 - cpu0))" -v hz="$(getconf CLK_TCK)" -v ms="$((ms1 - ms0))" 'BEGIN {
		printf "gavel CPU: %.0f s in %.0f s (%.2f cores)\n", t / hz, ms / 1000, t / hz * 1000 / ms }'
fi
if [ "$scans0" != - ] && [ "$scans1" != - ]; then
	echo "background scans: $((scans1 - scans0)) cycles completed during the soak ($scans1 since gavel started)"
fi
sort -n "$out/latency.txt" >"$out/latency.sorted"
lat=$(awk '{ v[NR] = $1 } END { if (NR) printf ", latency through the watch: p50 %d ms, max %d ms", v[int((NR + 1) / 2)], v[NR] }' \
	"$out/latency.sorted")
echo "policy updates: $updates applied ($update_errors failed); $probe_policy switched $switches times, gavel's answer followed $seen times within $((update_every - 2)) s$lat"
warn=$(grep -c -E ' (warn|error) ' "$out/serve.log")
echo "gavel log: $warn warnings or errors$([ "$warn" -gt 0 ] && printf ', last: %s' "$(grep -E ' (warn|error) ' "$out/serve.log" | tail -n 1)")"
echo "load average: $load0 at the start, $load1 at the end ($(getconf _NPROCESSORS_ONLN) cores)"
exit 0
