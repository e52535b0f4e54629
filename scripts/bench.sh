#!/bin/sh
# make bench: runs the benchmarks and prints their figures (never asserts).
set -u
corpus=${1:-../shared/conformance}
pss="$corpus/kyverno-policies/pod-security"
out=${BENCH_OUT:-$(mktemp -d)}
echo "== JMESPath: ns per parse and per evaluation"
if [ -f "$corpus/jmespath/benchmarks.json" ]; then
	build/engine/bench/bench_jmespath "$corpus/jmespath/benchmarks.json"
else
	build/engine/bench/bench_jmespath
fi
if [ ! -d "$pss" ]; then
	echo "bench: $pss not found: the engine benchmark needs the conformance corpus; skipped"
	exit 0
fi
echo "== engine: 10,000 generated Pods x pod-security policies"
build/engine/bench/bench_engine -n 10000 --emit "$out/pods.yaml" "$pss"
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
[ -n "${BENCH_OUT:-}" ] || rm -rf "$out"
