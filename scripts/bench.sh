#!/bin/sh
# make bench: runs the benchmarks and prints their figures (never asserts).
#
#   sh scripts/bench.sh [CORPUS]       (CORPUS default ../shared/conformance)
#
# Sections: JMESPath; CEL beside JMESPath (engine/bench/bench_cel); the
# engine on 10,000 generated Pods; gavel apply on the same Pods; the
# admission webhook driven directly (gavel serve standalone over TLS, at
# fixed offered rates and at saturation, by admission/bench/rate_load); Pod
# creation through a local API server with no webhook, a bare webhook (gavel
# with no policy) and gavel's pod-security webhook; the background scan of
# 10,000 and 20,000 Pods through a local API server
# (background/bench/scan_bench.sh). Every section that lacks something (the
# corpus, the API server binaries) says so and is skipped.
# All traffic stays on 127.0.0.1.
#
# Env: BENCH_OUT=DIR keeps the generated files there; BENCH_SECONDS (default
# 10) is the measured time of each load run; BENCH_ONLY="engine direct
# apiserver scan" (default: all four) picks sections; BENCH_PODS (default
# 10000) the Pods of the scan section's first round.
# The direct section runs the pod-security ClusterPolicies, then (when the
# corpus has them) the same checks as ValidatingPolicies, labelled "cel".
# Admission sections (make bench-admission runs only these two):
# BENCH_RATES (default "1000 2500 5000 10000") the offered rates of the direct
# run, in reviews/s; BENCH_CONNECTIONS (default 64) its keep-alive
# connections; BENCH_ROUNDS (default 1) how many times each section's runs
# are repeated, in turn, so that figures of one round compare runs made side
# by side; BENCH_SERVER_CPUS / BENCH_LOAD_CPUS (taskset lists, e.g. 0 and 1;
# default: not pinned, gavel and the load tool share every core) pin gavel
# serve and the load tool; BENCH_CONCURRENCY (default 16) the concurrent
# creates through the API server.
# BENCH_PRELOAD="/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ..." also runs the
# direct section with gavel serve on each of these allocators (LD_PRELOAD),
# after ./gavel's own in each round. BENCH_BASE=BINARY also runs it with
# another gavel (e.g. one built by make JEMALLOC=0), labelled "base", before
# ./gavel in each round, so that the two are compared in turn.
# BENCH_NICE=N (e.g. -10, as root): the benchmark runs in a scheduling group
# of its own (a new session: Linux's autogroup) of nice N, so that other work
# on a shared machine takes less of the cores from it; the tables say so.
set -u
if [ -n "${BENCH_NICE:-}" ] && [ -z "${BENCH_GROUP:-}" ]; then
	# shellcheck disable=SC2016 # expanded by the inner shell
	BENCH_GROUP=1 exec setsid -w sh -c \
		'echo "$BENCH_NICE" >/proc/self/autogroup 2>/dev/null ||
			renice -n "$BENCH_NICE" -p $$ >/dev/null; exec sh "$@"' sh "$0" "$@"
fi
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
rates=${BENCH_RATES:-1000 2500 5000 10000}
rounds=${BENCH_ROUNDS:-1}
server_cpus=${BENCH_SERVER_CPUS:-}
load_cpus=${BENCH_LOAD_CPUS:-}
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
cache=${GAVEL_CACHE:-/var/cache/gavel}
serve_pid=
serve_pids=
serve_env=
serve_bin=./gavel # what start_serve runs (the direct section varies it)
cp_dir=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	for p in $serve_pids; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "$cp_dir" ]; then
		e2e/local/down.sh "$cp_dir" >/dev/null 2>&1
		rm -rf "$cp_dir"
	fi
	[ -n "${BENCH_OUT:-}" ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

want() {
	case " ${BENCH_ONLY:-engine apply direct apiserver scan} " in
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
	echo "== CEL beside JMESPath: ns per parse and per evaluation ($cores cores online, load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null))"
	build/engine/bench/bench_cel

	if [ -d "$pss" ]; then
		echo "== engine: 10,000 generated Pods x pod-security policies ($(find "$pss" -name '*.yaml' | wc -l) pattern ClusterPolicies)"
		build/engine/bench/bench_engine -n 10000 --emit "$out/pods.yaml" "$pss"
		if [ -n "$pss_subrule" ]; then
			echo "== engine: the same 10,000 Pods x pod-security subrule/ (validate.podSecurity ClusterPolicies)"
			build/engine/bench/bench_engine -n 10000 "$pss_subrule"
		fi
		if [ -d "$corpus/kyverno-policies/pod-security-vpol" ]; then
			# Both sets in one run: their ratio is measured side by side.
			echo "== engine: the same 10,000 Pods x pod-security-vpol (the same checks as ValidatingPolicies, CEL) beside the pattern ClusterPolicies, one run, one core (load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null))"
			build/engine/bench/bench_engine -n 10000 "$pss" "$corpus/kyverno-policies/pod-security-vpol"
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

# ---- gavel apply: whole process, streaming ------------------------------------

# gavel apply on 10,000 and 100,000 generated Pods (one YAML file each; the
# 100,000 are the 10,000 renamed ten times) against the pod-security set,
# for -o table, json and report: wall time, Pods/s, peak RSS. gavel uses
# every core (-j default); the figures are those of this machine as it is
# (say how busy it was when quoting them: the load average is printed).
# BENCH_APPLY_SIZES="10000" skips the large file; BENCH_APPLY_BASE=BINARY
# runs that gavel too, before ./gavel on each input and format, so that
# two builds are compared side by side under the same load.
bench_apply() {
	if [ ! -d "$pss" ]; then
		echo "bench: $pss not found: the apply benchmark needs the conformance corpus; skipped"
		return
	fi
	[ -f "$out/pods.yaml" ] || build/engine/bench/bench_engine -n 10000 --emit "$out/pods.yaml" "$pss" >/dev/null
	echo "== whole process: gavel apply, pod-security set, $cores cores, -j default" \
		"(load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
	for n in ${BENCH_APPLY_SIZES:-10000 100000}; do
		f=$out/pods.yaml
		if [ "$n" != 10000 ]; then
			f=$out/pods-$n.yaml
			i=0
			: >"$f"
			while [ $((i * 10000)) -lt "$n" ]; do
				sed "s/\"name\":\"pod-\([0-9]*\)\"/\"name\":\"pod-\1-$i\"/" "$out/pods.yaml" >>"$f"
				i=$((i + 1))
			done
		fi
		for o in table json report; do
			for bin in ${BENCH_APPLY_BASE:-} ./gavel; do
				/usr/bin/time -f '%e %M %U %S' -o "$out/apply.time" \
					"$bin" apply "$pss" --resource "$f" -o "$o" >/dev/null 2>&1
				# time -o also holds "Command exited with non-zero status 1": the last line
				tail -n 1 "$out/apply.time" | awk -v n="$n" -v o="$o" -v b="$bin" '{
					cpu = $3 + $4
					printf "gavel apply -o %-6s %6d Pods: %7.2f s wall, %7.0f Pods/s, %6.1f MiB peak RSS, %7.2f s CPU (%.0f Pods per CPU-second)%s\n",
					    o, n, $1, ($1 > 0 ? n / $1 : 0), $2 / 1024, cpu, (cpu > 0 ? n / cpu : 0),
					    (b == "./gavel" ? "" : "  [" b "]")
				}'
			done
		done
		[ "$f" = "$out/pods.yaml" ] || rm -f "$f"
	done
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
# kernel; pinned to BENCH_SERVER_CPUS when set) and sets serve_pid and port;
# returns 1 when it does not come up. Several may run at once (stop_serve
# stops them all).
start_serve() {
	log=$1
	shift
	: >"$log"
	# shellcheck disable=SC2086 # serve_env: NAME=VALUE words for env
	if [ -n "$server_cpus" ]; then
		taskset -c "$server_cpus" env $serve_env "$serve_bin" serve --listen 127.0.0.1:0 \
			--metrics-listen "" "$@" >"$log" 2>&1 &
	else
		env $serve_env "$serve_bin" serve --listen 127.0.0.1:0 --metrics-listen "" "$@" \
			>"$log" 2>&1 &
	fi
	serve_pid=$!
	serve_pids="$serve_pids $serve_pid"
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
	for p in $serve_pids; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	serve_pid=
	serve_pids=
}

# on_load_cpus CMD...: runs CMD pinned to BENCH_LOAD_CPUS when set.
on_load_cpus() {
	if [ -n "$load_cpus" ]; then
		taskset -c "$load_cpus" "$@"
	else
		"$@"
	fi
}

# placement: where gavel serve and the load tool run, said beside every table.
placement() {
	if [ -n "$server_cpus" ]; then
		where="gavel serve on cores $server_cpus ($(taskset -c "$server_cpus" nproc) of $cores)"
	else
		where="gavel serve on all $cores cores"
	fi
	if [ -z "$load_cpus" ]; then
		where="$where, the load tool sharing them"
	elif [ "$load_cpus" = "$server_cpus" ]; then
		where="$where, the load tool on the same cores"
	else
		where="$where, the load tool on cores $load_cpus"
	fi
	if [ -n "${BENCH_NICE:-}" ]; then
		where="$where; scheduling group of nice $BENCH_NICE"
	fi
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	# A load average above the cores: other work runs on them too, and the
	# latency tail is mostly the time gavel waits for a core (rate_load's
	# "waited for a core").
	if awk -v l="${load%% *}" -v c="$cores" 'BEGIN { exit !(l > c) }'; then
		load="$load, above the $cores cores: other work shares them"
	fi
	echo "$where; load average $load"
}

# allocator BINARY: the malloc a gavel binary is linked with.
allocator() {
	if ldd "$1" 2>/dev/null | grep -q libjemalloc; then
		echo "jemalloc"
	else
		echo "C library's malloc"
	fi
}

# rss_kib PID FIELD: VmRSS or VmHWM of a process, in KiB.
rss_kib() {
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null
}

# ---- admission, direct --------------------------------------------------------

# direct_run LABEL RATE: one rate_load run against gavel serve ($port,
# $serve_pid); RATE 0 = closed loop (saturation). Appends its line to
# $out/direct.txt.
direct_run() {
	# shellcheck disable=SC2046 # one argument per review file
	on_load_cpus build/admission/bench/rate_load \
		--url "https://gavel.gavel.svc:$port/validate" \
		--resolve "gavel.gavel.svc:$port:127.0.0.1" --cacert "$out/tls/ca.crt" \
		--rate "$2" --connections "$conns" --seconds "$secs" --pid "$serve_pid" \
		--label "$1" $(ls "$out"/reviews/review-*.json) | tee -a "$out/direct.txt"
}

bench_direct() {
	echo "== admission, direct: gavel serve standalone over TLS, offered $rates reviews/s (open loop) and saturation, $conns keep-alive connections, ${secs} s each"
	if [ ! -d "$pss" ]; then
		echo "bench: $pss not found: the admission benchmark needs the pod-security policies; skipped"
		return 0
	fi
	enforce_policies "$out/pss-enforce"
	npol=$(find "$out/pss-enforce" -name '*.yaml' | wc -l)
	echo "policies: $npol pod-security ClusterPolicies (Audit switched to Enforce)"
	build/admission/bench/review_parse -n 64 --emit "$out/reviews" "$out/pss-enforce" |
		tee "$out/parse.txt"
	cel_dir=
	if [ -d "$corpus/kyverno-policies/pod-security-vpol" ]; then
		# The same checks as ValidatingPolicies, Audit switched to Deny, beside them.
		cel_dir="$out/vpol-deny"
		mkdir -p "$cel_dir"
		grep -rl --exclude-dir=.kyverno-test '^kind: ValidatingPolicy' \
			"$corpus/kyverno-policies/pod-security-vpol" | while read -r f; do
			sed 's/^\( *\)- Audit$/\1- Deny/' "$f" >"$cel_dir/$(basename "$f")"
		done
		echo "policies: $(find "$cel_dir" -name '*.yaml' | wc -l) pod-security-vpol ValidatingPolicies (Audit switched to Deny)"
		build/admission/bench/review_parse -n 64 "$cel_dir" | tail -n 1
	fi
	./gavel certs generate --service gavel --namespace gavel --ip 127.0.0.1 \
		--out "$out/tls" >/dev/null || return 0
	echo "placement: $(placement)"
	: >"$out/direct.txt"
	r=1
	while [ "$r" -le "$rounds" ]; do
		# BENCH_BASE, ./gavel, then ./gavel on each allocator of BENCH_PRELOAD.
		for v in ${BENCH_BASE:+base} gavel ${BENCH_PRELOAD:-}; do
			serve_env=''
			serve_bin=./gavel
			name=''
			case $v in
			base)
				serve_bin=$BENCH_BASE
				name='base, '
				;;
			gavel) ;;
			*)
				serve_env="LD_PRELOAD=$v"
				name="$(basename "$v" | sed 's/^lib//; s/\.so.*//'), "
				;;
			esac
			case $v in
			base | gavel) alloc="$name$(allocator "$serve_bin")" ;;
			*) alloc="${name%, } (LD_PRELOAD)" ;;
			esac
			start_serve "$out/serve.log" --policies "$out/pss-enforce" \
				--tls-dir "$out/tls" || return 0
			rss0=$(rss_kib "$serve_pid" VmRSS)
			for rate in $rates; do
				direct_run "round $r, $name$rate/s" "$rate" || break
			done
			direct_run "round $r, ${name}saturation" 0
			echo "server RSS (round $r, $alloc): ${rss0:-?} KiB idle, $(rss_kib "$serve_pid" VmRSS) KiB after the runs, $(rss_kib "$serve_pid" VmHWM) KiB peak"
			stop_serve
			serve_bin=./gavel
			# The CEL set, right after ./gavel's ClusterPolicies.
			if [ -z "$cel_dir" ] || [ "$v" != gavel ]; then
				continue
			fi
			start_serve "$out/serve.log" --policies "$cel_dir" --tls-dir "$out/tls" ||
				return 0
			rss0=$(rss_kib "$serve_pid" VmRSS)
			for rate in $rates; do
				direct_run "round $r, cel, $rate/s" "$rate" || break
			done
			direct_run "round $r, cel, saturation" 0
			echo "server RSS (round $r, ValidatingPolicies): ${rss0:-?} KiB idle, $(rss_kib "$serve_pid" VmRSS) KiB after the runs, $(rss_kib "$serve_pid" VmHWM) KiB peak"
			stop_serve
		done
		r=$((r + 1))
	done
	serve_env=
	echo "-- fixed-rate table ($(placement)); latency from the time each request was due"
	awk '{ line = $0
	  label = line; sub(/:.*/, "", label)
	  if (line ~ /closed loop/) {
		match(line, /\(([0-9]+)\/s\)/); tput = substr(line, RSTART + 1, RLENGTH - 4)
		match(line, /server CPU [0-9]+ us/); cpu = substr(line, RSTART + 11, RLENGTH - 14)
		printf "%-32s saturation %s reviews/s, server CPU %s us per review\n", label, tput, cpu
		next }
	  if (line !~ /offered/) next
	  match(line, /p50 [0-9.]+/); p50 = substr(line, RSTART + 4, RLENGTH - 4)
	  match(line, /p99 [0-9.]+/); p99 = substr(line, RSTART + 4, RLENGTH - 4)
	  match(line, /p99\.9 [0-9.]+/); p999 = substr(line, RSTART + 6, RLENGTH - 6)
	  match(line, /server CPU [0-9]+ us/); cpu = substr(line, RSTART + 11, RLENGTH - 14)
	  match(line, /\(([0-9]+)\/s\)/); got = substr(line, RSTART + 1, RLENGTH - 4)
	  wait = "?"
	  if (match(line, /waited for a core [0-9]+ us/)) wait = substr(line, RSTART + 18, RLENGTH - 21)
	  printf "%-32s answered %6s/s  p50 %7s ms  p99 %8s ms  p99.9 %8s ms  server CPU %4s us/review, waited for a core %4s us/review\n",
		label, got, p50, p99, p999, cpu, wait }' "$out/direct.txt"
}

# ---- admission, through the API server ------------------------------------------

# reviews_seen MPORT: reviews answered so far by the gavel whose metrics port is MPORT.
reviews_seen() {
	curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
		awk '/^kyverno_admission_review_duration_seconds_count/ { n += $NF } END { print n + 0 }'
}

# webhook_config NAME PORT SELECTOR: a ValidatingWebhookConfiguration sending
# Pod creates of namespaces labelled gavel-bench=SELECTOR to 127.0.0.1:PORT.
webhook_config() {
	cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: $1}
webhooks:
  - name: validate.gavel.svc
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
    clientConfig:
      url: https://127.0.0.1:$2/validate
      caBundle: $(base64 -w0 "$out/tls-api/ca.crt")
    rules:
      - {operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}
    namespaceSelector:
      matchLabels: {gavel-bench: "$3"}
EOF
}

# webhook_effective NS MPORT: waits (10 s at most) until a server-side dry-run
# create in NS reaches the gavel of metrics port MPORT.
webhook_effective() {
	i=0
	while [ $i -lt 40 ]; do
		n0=$(reviews_seen "$2")
		k -n "$1" run bench-probe --image=busybox --restart=Never --dry-run=server \
			>/dev/null 2>&1
		[ "$(reviews_seen "$2")" -gt "$n0" ] && return 0
		sleep 0.25
		i=$((i + 1))
	done
	echo "bench: the webhook of namespace $1 did not become effective within 10 s"
	return 1
}

bench_apiserver() {
	echo "== admission, through the API server: Pod creates, $conc concurrent, ${secs} s each: no webhook, a bare webhook (gavel, no policy), gavel with the pod-security policies"
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
	for c in none bare gavel; do
		k create namespace "bench-$c" >/dev/null
	done
	k label namespace bench-bare gavel-bench=bare >/dev/null
	k label namespace bench-gavel gavel-bench=gavel >/dev/null
	if [ -d "$pss" ]; then
		[ -d "$out/pss-enforce" ] || enforce_policies "$out/pss-enforce"
		policies=$out/pss-enforce
	else
		policies=manifests/samples/policies
	fi
	echo "control plane: kube-apiserver + etcd on 127.0.0.1; policies: $policies"
	./gavel certs generate --service gavel --namespace gavel --ip 127.0.0.1 \
		--out "$out/tls-api" >/dev/null || return 0
	# Both gavels in cluster mode, background scans off: they differ by the policies only.
	start_serve "$out/serve-bare.log" --kubeconfig "$KUBECONFIG" --namespace gavel \
		--tls-dir "$out/tls-api" --manage-certs=false --background=false \
		--metrics-listen 127.0.0.1:0 || return 0
	bare_pid=$serve_pid bare_port=$port
	bare_mport=$(sed -n 's/.*metrics on [^(]*(port \([0-9]*\)).*/\1/p' "$out/serve-bare.log")
	start_serve "$out/serve-gavel.log" --kubeconfig "$KUBECONFIG" --namespace gavel \
		--policies "$policies" --tls-dir "$out/tls-api" --manage-certs=false \
		--background=false --metrics-listen 127.0.0.1:0 || {
		stop_serve
		return 0
	}
	gavel_pid=$serve_pid gavel_port=$port
	gavel_mport=$(sed -n 's/.*metrics on [^(]*(port \([0-9]*\)).*/\1/p' "$out/serve-gavel.log")
	echo "placement: $(placement) (and the API server and etcd)"
	webhook_config gavel-bench-bare "$bare_port" bare | k apply -f - >/dev/null
	webhook_config gavel-bench-gavel "$gavel_port" gavel | k apply -f - >/dev/null
	if ! webhook_effective bench-bare "$bare_mport" ||
		! webhook_effective bench-gavel "$gavel_mport"; then
		stop_serve
		return 0
	fi
	if k -n bench-gavel run bench-probe --image=busybox --restart=Never \
		--overrides='{"spec":{"hostNetwork":true}}' --dry-run=server 2>&1 |
		grep -q 'denied the request'; then
		echo "gavel's webhook denies a violating Pod; the bare one allows everything"
	else
		echo "bench: gavel's webhook did not deny a violating Pod"
	fi
	: >"$out/api.txt"
	r=1
	while [ "$r" -le "$rounds" ]; do
		# The API server slows as each case's Pods pile up (none of them is
		# deleted), so a case run later in a round is at a disadvantage:
		# bare and gavel take turns to go first (an even number of rounds
		# gives each the second place as often).
		order="none bare gavel"
		[ $((r % 2)) -eq 0 ] && order="none gavel bare"
		echo "round $r: $order"
		for c in $order; do
			on_load_cpus build/admission/bench/apiserver_load --kubeconfig "$KUBECONFIG" \
				--namespace "bench-$c" --concurrency "$conc" --seconds "$secs" \
				--label "round $r, $c" | tee -a "$out/api.txt"
		done
		r=$((r + 1))
	done
	echo "gavel serve RSS: bare $(rss_kib "$bare_pid" VmRSS) KiB, with the policies $(rss_kib "$gavel_pid" VmRSS) KiB (peak $(rss_kib "$gavel_pid" VmHWM) KiB)"
	: >"$out/handler.txt"
	for m in "bare:$bare_mport" "gavel:$gavel_mport"; do
		curl -s --max-time 5 "http://127.0.0.1:${m#*:}/metrics" |
			awk -v who="${m%%:*}" '/^kyverno_admission_review_duration_seconds_sum/ { s += $NF }
			/^kyverno_admission_review_duration_seconds_count/ { n += $NF }
			END { if (n) printf "%s %.4f %d\n", who, s * 1000 / n, n }' >>"$out/handler.txt"
	done
	stop_serve
	echo "-- three cases ($(placement)); the ratio gavel/bare is gavel's own share"
	awk 'FNR == NR { h[$1] = $2; hn[$1] = $3; next }
	     { label = $0; sub(/:.*/, "", label); r = label; sub(/,.*/, "", r); sub(/.*, /, "", label)
	       if (!match($0, /p50 [0-9.]+/)) next; p50 = substr($0, RSTART + 4, RLENGTH - 4)
	       match($0, /p99 [0-9.]+/); p99 = substr($0, RSTART + 4, RLENGTH - 4)
	       a50[r, label] = p50; a99[r, label] = p99; if (!(r in seen)) { seen[r] = 1; order[++n] = r } }
	function median(v, k,   i, j, t) {
		for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }
	END { printf "%-9s %-19s %-19s %-19s %-14s %s\n", "", "none p50/p99", "bare p50/p99",
		"gavel p50/p99", "bare/none p99", "gavel/bare p99 (p50)"
	      k = 0
	      for (i = 1; i <= n; i++) { r = order[i]
		if (a99[r, "none"] == "" || a99[r, "bare"] == "" || a99[r, "gavel"] == "") continue
		k++; q99[k] = a99[r, "gavel"] / a99[r, "bare"]; q50[k] = a50[r, "gavel"] / a50[r, "bare"]
		b50[k] = a50[r, "bare"]
		printf "%-9s %7.2f/%7.2f ms  %7.2f/%7.2f ms  %7.2f/%7.2f ms  %6.2fx        %5.2fx (%.2fx)\n", r,
			a50[r, "none"], a99[r, "none"], a50[r, "bare"], a99[r, "bare"],
			a50[r, "gavel"], a99[r, "gavel"], a99[r, "bare"] / a99[r, "none"], q99[k], q50[k] }
	      if (!k) exit
	      m99 = median(q99, k); m50 = median(q50, k); mb = median(b50, k)
	      printf "gavel/bare over %d rounds: median p99 ratio %.2fx, median p50 ratio %.2fx\n", k, m99, m50
	      if (h["gavel"] != "" && h["bare"] != "")
		printf "gavel handler %.3f ms vs bare %.3f ms a review (their metrics): gavel adds %.3f ms, %.2f%% of the bare p50 (%.2f ms), a ratio of %.3fx\n",
			h["gavel"], h["bare"], h["gavel"] - h["bare"], (h["gavel"] - h["bare"]) * 100 / mb, mb,
			(mb + h["gavel"] - h["bare"]) / mb }' "$out/handler.txt" "$out/api.txt"
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
if want apply; then bench_apply; fi
if want direct; then bench_direct; fi
if want apiserver; then bench_apiserver; fi
if want scan; then bench_scan; fi
exit 0
