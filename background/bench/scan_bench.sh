#!/bin/sh
# scan_bench.sh: the background scan benchmark (make bench; figures printed,
# never asserted).
#
#   sh background/bench/scan_bench.sh [CORPUS]     (CORPUS default ../shared/conformance)
#
# On a local control plane (e2e/local: kube-apiserver v1.20 + etcd on
# 127.0.0.1) with the pod-security ClusterPolicies of
# CORPUS/kyverno-policies/pod-security applied: seeds 10,000 Pods across
# 100 namespaces (build/background/bench/seed_pods, parallel POSTs), then
# runs `gavel scan` twice (the second time nothing changed) and once more
# with list pages of 100 objects (what memory is bounded by), then the same
# at 20,000 Pods (reports and scan state deleted first, so the first scan
# is a fresh one again). For each scan: wall time, objects/s, API requests
# (counted by gavel scan), report objects written, peak RSS (/usr/bin/time;
# "?" without it), where the time went (policies, reading reports,
# scan: lists / evaluation / merge, writing; summed over the namespaces
# scanned side by side), the CPU time of gavel, kube-apiserver and etcd
# during the scan, and the load average (the machine may be shared: the
# CPU times say more than the wall time then). Then, at each size, the
# long-running reconciler (background/tests/reconciler_driver.c, built
# here, as `gavel serve` runs it, once on the C library's malloc and once
# on jemalloc, which ./gavel links by default): its first cycle and its
# second, incremental one with nothing changed (state in memory, no reports
# read again). Targets (not asserted): 10,000
# Pods in <= 10 s including report writes; peak RSS < 100 MiB and within
# 20% between 10k and 20k; unchanged second scan < 3 s with zero writes.
#
# Env: BENCH_PODS (default 10000; the second round is twice that),
# BENCH_NAMESPACES (100), BENCH_SEED_CONCURRENCY (16), SCAN_ARGS (extra
# gavel scan flags), BENCH_SCAN_RUNS (default "scan reconciler": the gavel
# scan runs, the reconciler runs; "reconciler" alone measures the
# reconciler only), BENCH_RECONCILER_WAIT (seconds the reconciler gets for
# its two cycles, default 900), BENCH_OUT=DIR keeps the logs. Skips with a message
# when the corpus or the API server binaries are missing.
set -u
corpus=${1:-../shared/conformance}
pss="$corpus/kyverno-policies/pod-security"
cache=${GAVEL_CACHE:-/var/cache/gavel}
pods=${BENCH_PODS:-10000}
nss=${BENCH_NAMESPACES:-100}
conc=${BENCH_SEED_CONCURRENCY:-16}
runs=" ${BENCH_SCAN_RUNS:-scan reconciler} "
out=${BENCH_OUT:-$(mktemp -d)}
mkdir -p "$out"
cp_dir=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ -n "$cp_dir" ]; then
		e2e/local/down.sh "$cp_dir" >/dev/null 2>&1
		rm -rf "$cp_dir"
	fi
	[ -n "${BENCH_OUT:-}" ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== background scan: gavel scan of ${pods} and $((pods * 2)) Pods x pod-security policies"
if [ ! -d "$pss" ]; then
	echo "bench: $pss not found: the scan benchmark needs the pod-security policies; skipped"
	exit 0
fi
for b in "${KUBE_APISERVER:-$cache/bin/kube-apiserver}" "${ETCD:-$cache/bin/etcd}" \
	"${KUBECTL:-$cache/bin/kubectl}"; do
	if [ ! -x "$b" ]; then
		echo "bench: $b not found: run e2e/local/build-apiserver.sh once (about 7 minutes); skipped"
		exit 0
	fi
done
if [ ! -x build/background/bench/seed_pods ] || [ ! -x ./gavel ]; then
	echo "bench: build/background/bench/seed_pods or ./gavel missing (make bench builds them); skipped"
	exit 0
fi

cp_dir=$(mktemp -d)
if ! e2e/local/up.sh "$cp_dir" >"$out/up.log" 2>&1; then
	echo "bench: the local control plane did not start; skipped"
	tail -n 5 "$out/up.log" | sed 's/^/  | /'
	exit 0
fi
# shellcheck disable=SC1091 # written by up.sh
. "$cp_dir/env"
k() { "$KUBECTL" --request-timeout=60s "$@"; }
# Every PolicyReport and ClusterPolicyReport, namespace by namespace: one
# list of 20,000 Pods' reports (hundreds of MB) does not come back within a
# request timeout on a loaded machine, and reports left behind would let a
# scan find them current.
delete_reports() {
	left=0
	for ns in $(k get namespaces -o 'jsonpath={.items[*].metadata.name}'); do
		"$KUBECTL" --request-timeout=300s -n "$ns" delete policyreports --all >/dev/null 2>&1
		n=$(k -n "$ns" get policyreports -o name 2>/dev/null | wc -l)
		left=$((left + n))
	done
	"$KUBECTL" --request-timeout=300s delete clusterpolicyreports --all >/dev/null 2>&1
	[ "$left" -eq 0 ] || echo "bench: $left reports left after deleting them all"
}
if ! { k apply -f manifests/crds >/dev/null &&
	k wait --for condition=established --timeout=60s \
		crd/clusterpolicies.kyverno.io crd/policyreports.wgpolicyk8s.io \
		crd/clusterpolicyreports.wgpolicyk8s.io >/dev/null; }; then
	echo "bench: CRDs not established; skipped"
	exit 0
fi
k create namespace gavel >/dev/null
npol=0
# shellcheck disable=SC2013 # corpus file names have no blanks
for f in $(grep -rl '^kind: ClusterPolicy' "$pss" | sort); do
	if k apply -f "$f" >/dev/null 2>"$out/apply.err"; then
		npol=$((npol + 1))
	else
		echo "bench: $f not applied: $(head -n 1 "$out/apply.err")"
	fi
done
echo "policies: $npol pod-security ClusterPolicies; control plane: kube-apiserver v1.20 + etcd on 127.0.0.1"

have_time=
[ -x /usr/bin/time ] && have_time=1

# cpu_ticks PID: user + system CPU time of a process, in clock ticks (0 when gone).
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
hz=$(getconf CLK_TCK)

# scan LABEL: one gavel scan, its figures on one line.
scan() {
	case $runs in *" scan "*) ;; *) return 0 ;; esac
	label=$1
	load0=$(cut -d' ' -f1 /proc/loadavg)
	api0=$(cpu_ticks "$APISERVER_PID")
	etcd0=$(cpu_ticks "$ETCD_PID")
	if [ -n "$have_time" ]; then
		# shellcheck disable=SC2086 # SCAN_ARGS is a list of flags
		/usr/bin/time -f 'time: %e s wall, %M KiB peak RSS, %U s user, %S s system' -o "$out/time.txt" \
			./gavel scan --kubeconfig "$KUBECONFIG" ${SCAN_ARGS:-} >/dev/null 2>"$out/scan.txt"
		rc=$?
	else
		start=$(date +%s.%N)
		# shellcheck disable=SC2086
		./gavel scan --kubeconfig "$KUBECONFIG" ${SCAN_ARGS:-} >/dev/null 2>"$out/scan.txt"
		rc=$?
		end=$(date +%s.%N)
		echo "time: $(echo "$end - $start" | bc) s wall, ? KiB peak RSS, ? s user, ? s system" >"$out/time.txt"
	fi
	api1=$(cpu_ticks "$APISERVER_PID")
	etcd1=$(cpu_ticks "$ETCD_PID")
	load1=$(cut -d' ' -f1 /proc/loadavg)
	line=$(grep '^gavel scan:' "$out/scan.txt" | tail -n 1)
	if [ $rc -gt 1 ] || [ -z "$line" ]; then
		echo "$label: gavel scan failed (exit $rc):"
		tail -n 5 "$out/scan.txt" | sed 's/^/  | /'
		return 0
	fi
	wall=$(sed -n 's/^time: \([0-9.]*\) s wall.*/\1/p' "$out/time.txt")
	rss=$(sed -n 's/.*, \([0-9?]*\) KiB peak RSS.*/\1/p' "$out/time.txt")
	usr=$(sed -n 's/.*, \([0-9.?]*\) s user.*/\1/p' "$out/time.txt")
	sys=$(sed -n 's/.*, \([0-9.?]*\) s system.*/\1/p' "$out/time.txt")
	objs=$(echo "$line" | sed -n 's/.* policies, \([0-9]*\) objects.*/\1/p')
	evald=$(echo "$line" | sed -n 's/.*objects (\([0-9]*\) evaluated.*/\1/p')
	reqs=$(echo "$line" | sed -n 's/.*; \([0-9]*\) API requests.*/\1/p')
	created=$(echo "$line" | sed -n 's/.*reports: \([0-9]*\) created.*/\1/p')
	updated=$(echo "$line" | sed -n 's/.* \([0-9]*\) updated.*/\1/p')
	deleted=$(echo "$line" | sed -n 's/.* \([0-9]*\) deleted.*/\1/p')
	results=$(echo "$line" | sed -n 's/.*), \([0-9]*\) results.*/\1/p')
	writes=$((${created:-0} + ${updated:-0} + ${deleted:-0}))
	awk -v l="$label" -v w="$wall" -v o="$objs" -v e="$evald" -v q="$reqs" -v wr="$writes" \
		-v c="$created" -v u="$updated" -v d="$deleted" -v r="$rss" -v res="$results" 'BEGIN {
		printf "%s: %.2f s wall, %d objects (%d evaluated), %.0f objects/s, %d API requests, %d report writes (%d created, %d updated, %d deleted), %d results, peak RSS %s\n",
			l, w, o, e, (w > 0 ? o / w : 0), q, wr, c, u, d, res,
			(r == "?" ? "?" : sprintf("%.1f MiB", r / 1024)) }'
	echo "  time: $(echo "$line" | sed -n 's/.* s (\(policies.*\))$/\1/p')"
	awk -v u="$usr" -v s="$sys" -v a="$((api1 - api0))" -v e="$((etcd1 - etcd0))" -v hz="$hz" \
		-v l0="$load0" -v l1="$load1" 'BEGIN {
		printf "  cpu: gavel %s s, kube-apiserver %.1f s, etcd %.1f s; load average %s before, %s after\n",
			(u == "?" ? "?" : sprintf("%.1f", u + s)), a / hz, e / hz, l0, l1 }'
	eval "rss_$2=\${rss:-0}"
}

# The driver on the C library's malloc, and (driver_je) on jemalloc as ./gavel
# links it by default (Makefile JEMALLOC): the reconciler runs on both, so that
# one run gives the allocator's share of the peak RSS.
driver=
driver_je=
build_driver() {
	# shellcheck disable=SC2046 # pkg-config output is word-split on purpose
	cc -std=c11 -D_GNU_SOURCE -I. -O2 -g \
		$(pkg-config --cflags jansson yaml-0.1 libpcre2-8 libcrypto libssl libcurl libmicrohttpd gnutls) \
		-o "$out/reconciler_driver" background/tests/reconciler_driver.c build/libgavel.a \
		$(pkg-config --libs jansson yaml-0.1 libpcre2-8 libcrypto libssl libcurl libmicrohttpd gnutls) \
		-lm -lpthread 2>"$out/driver.err" || return 1
	driver=$out/reconciler_driver
	if [ "${JEMALLOC:-1}" = 1 ] && pkg-config --exists jemalloc 2>/dev/null; then
		# shellcheck disable=SC2046
		cc -std=c11 -D_GNU_SOURCE -I. -O2 -g \
			$(pkg-config --cflags jansson yaml-0.1 libpcre2-8 libcrypto libssl libcurl libmicrohttpd gnutls) \
			-o "$out/reconciler_driver_je" background/tests/reconciler_driver.c build/libgavel.a \
			$(pkg-config --libs jansson yaml-0.1 libpcre2-8 libcrypto libssl libcurl libmicrohttpd gnutls jemalloc) \
			-lm -lpthread 2>>"$out/driver.err" && driver_je=$out/reconciler_driver_je
	fi
}

# reconciler LABEL: the drivers with a 20 s interval (scan state deleted, so each
# scans at once): their first cycle and the incremental one after it.
reconciler() {
	[ -n "$driver" ] || return 0
	case $runs in *" reconciler "*) ;; *) return 0 ;; esac
	reconciler_run "$1" "$driver" glibc
	[ -z "$driver_je" ] || reconciler_run "$1" "$driver_je" jemalloc
}

# reconciler_run LABEL DRIVER MALLOC: one driver's two cycles; its peak RSS in
# hwm_<MALLOC>_<round> (round: a at the first size, c at the second).
reconciler_run() {
	driver_bin=$2
	# each driver's first cycle writes every report, as a fresh reconciler does
	delete_reports
	k -n gavel delete configmap gavel-scan-state --ignore-not-found >/dev/null 2>&1
	"$driver_bin" --kubeconfig "$KUBECONFIG" --namespace gavel --interval 20s \
		>"$out/driver.log" 2>&1 &
	dpid=$!
	i=0
	while [ $i -lt "${BENCH_RECONCILER_WAIT:-900}" ] &&
		[ "$(grep -c 'background: scanned' "$out/driver.log")" -lt 2 ]; do
		kill -0 "$dpid" 2>/dev/null || break
		sleep 1
		i=$((i + 1))
	done
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$dpid/status" 2>/dev/null)
	kill -TERM "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
	# shellcheck disable=SC2034 # read through eval below
	first=$(grep 'background: scanned' "$out/driver.log" | sed -n 1p)
	second=$(grep 'background: scanned' "$out/driver.log" | sed -n 2p)
	if [ -z "$second" ]; then
		echo "$1: the reconciler did not complete two cycles:"
		tail -n 5 "$out/driver.log" | sed 's/^/  | /'
		return 0
	fi
	loaded=$(sed -n 's/.*leading: \([0-9]*\) report objects read.*/\1/p' "$out/driver.log" | head -n 1)
	for which in first second; do
		eval "line=\$$which"
		echo "$1, reconciler ($3) $which cycle: $(echo "$line" | sed 's/.*): //')"
	done
	writes=$(awk -v s="$second" 'index($0, s) { after = 1; next } after && /reports written/' \
		"$out/driver.log" | wc -l)
	echo "$1, reconciler ($3): ${loaded:-?} report objects read at start; report writes after the second cycle: $writes; peak RSS $(awk -v h="${hwm:-0}" 'BEGIN { printf "%.1f MiB", h / 1024 }')"
	eval "hwm_$3_$round=\${hwm:-0}"
}

seed() { # START COUNT
	build/background/bench/seed_pods --kubeconfig "$KUBECONFIG" --pods "$2" --start "$1" \
		--namespaces "$nss" --concurrency "$conc"
}

# paged LABEL KEY: scan with list pages of 100 objects (fewer than a namespace
# holds at either size), to show what memory is bounded by.
paged() {
	saved=${SCAN_ARGS:-}
	SCAN_ARGS="$saved --background-scan-batch-size 100"
	scan "$1" "$2"
	SCAN_ARGS=$saved
}

rss_a=0
rss_c=0
rss_e=0
rss_f=0
build_driver || echo "bench: the reconciler driver did not build; its figures are skipped"
seed 0 "$pods" || echo "bench: some Pods were not created"
scan "$pods Pods, first scan" a
scan "$pods Pods, nothing changed" b
paged "$pods Pods, nothing changed, pages of 100" e
round=a
reconciler "$pods Pods"

seed "$pods" "$pods" || echo "bench: some Pods were not created"
# gone before the scan starts, so that it neither reads them nor races their deletion
start=$(date +%s)
delete_reports
k -n gavel delete configmap gavel-scan-state --ignore-not-found >/dev/null 2>&1
echo "reports of the first round deleted in $(($(date +%s) - start)) s"
scan "$((pods * 2)) Pods, first scan (reports deleted before)" c
scan "$((pods * 2)) Pods, nothing changed" d
paged "$((pods * 2)) Pods, nothing changed, pages of 100" f
round=c
reconciler "$((pods * 2)) Pods"
if [ "${rss_a:-0}" -gt 0 ] && [ "${rss_c:-0}" -gt 0 ]; then
	awk -v a="$rss_a" -v c="$rss_c" -v n="$pods" 'BEGIN {
		printf "peak RSS of the first scans: %.1f MiB at %d Pods, %.1f MiB at %d Pods (%+.0f%%)\n",
			a / 1024, n, c / 1024, 2 * n, (c - a) * 100 / a }'
fi
if [ "${rss_e:-0}" -gt 0 ] && [ "${rss_f:-0}" -gt 0 ]; then
	awk -v a="$rss_e" -v c="$rss_f" -v n="$pods" -v ns="$nss" 'BEGIN {
		printf "peak RSS with pages of 100 (memory is bounded by the list page: with the default 500 a page holds a whole namespace, %d then %d Pods): %.1f MiB at %d Pods, %.1f MiB at %d Pods (%+.0f%%)\n",
			n / ns, 2 * n / ns, a / 1024, n, c / 1024, 2 * n, (c - a) * 100 / a }'
fi
for m in glibc jemalloc; do
	a=0
	c=0
	eval "a=\${hwm_${m}_a:-0} c=\${hwm_${m}_c:-0}"
	if [ "$a" -gt 0 ] && [ "$c" -gt 0 ]; then
		awk -v a="$a" -v c="$c" -v n="$pods" -v m="$m" 'BEGIN {
			printf "peak RSS of the reconciler (%s): %.1f MiB at %d Pods, %.1f MiB at %d Pods (%+.0f%%)\n",
				m, a / 1024, n, c / 1024, 2 * n, (c - a) * 100 / a }'
	fi
done
exit 0
