#!/bin/sh
# Runs libFuzzer targets one after the other (`make fuzz`).
#
#   run.sh BUILD SECONDS CONFORMANCE TARGET...
#
# BUILD is build/fuzz (bin/<target>, the seed maker `seeds`). Seeds are made
# afresh in BUILD/seed-corpus/<target> from the golden cases, the samples and CONFORMANCE
# (when it exists); new inputs go to the corpus BUILD/corpus/<target>, which
# is kept between runs; crashes, leaks, timeouts and out-of-memory inputs to
# BUILD/artifacts/<target>/. Prints one line per target:
#   <target>: <executions> executions, <cpu> CPU seconds, <n> crashes
# and exits 1 when any target found a crash.
set -u
build=$1
seconds=$2
conformance=$3
shift 3

status=0
log=$(mktemp)
tlog=$(mktemp)
trap 'rm -f "$log" "$tlog"' EXIT

rm -rf "$build/seed-corpus"
dirs="engine/testdata manifests/samples"
[ -n "$conformance" ] && [ -d "$conformance" ] && dirs="$dirs $conformance"
# shellcheck disable=SC2086 # dirs is a word list
ASAN_OPTIONS=detect_leaks=0 "$build/seeds" "$build/seed-corpus" $dirs || exit 1

# cpu_now: sets $cpu to the user + system CPU seconds of this shell's
# finished children. `times` must run in this shell, not in a $(...)
# subshell (which has children of its own).
cpu_now() {
	times >"$tlog"
	cpu=$(awk 'NR == 2 {
		n = split($0, f, " "); t = 0
		for (i = 1; i <= n; i++) { split(f[i], p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }
		printf "%.2f\n", t
	}' "$tlog")
}

summary=""
for t in "$@"; do
	bin="$build/bin/$t"
	corpus="$build/corpus/$t"
	art="$build/artifacts/$t"
	mkdir -p "$corpus" "$art"
	dict=""
	[ -f "$build/seed-corpus/$t.dict" ] && dict="-dict=$build/seed-corpus/$t.dict"
	before=$(find "$art" -type f | wc -l)
	cpu_now
	cpu0=$cpu
	echo "== fuzz: $t for ${seconds}s"
	# shellcheck disable=SC2086 # dict is empty or one word
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	"$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$art/" $dict "$corpus" "$build/seed-corpus/$t" >"$log" 2>&1
	rc=$?
	cpu_now
	cpu1=$cpu
	grep -E '^(==[0-9]+==ERROR|SUMMARY|INFO: (Loaded|seed corpus)|#[0-9]+.*(INITED|DONE)|Done [0-9]+ runs|artifact_prefix|Test unit written|    #[0-9]+ )' "$log" | head -n 40
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	[ -n "$execs" ] || execs=$(grep -Eo '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
	after=$(find "$art" -type f | wc -l)
	crashes=$((after - before))
	if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		# libFuzzer failed without writing an input (e.g. a crash while loading the corpus)
		crashes=1
		tail -n 30 "$log"
	fi
	cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }')
	line="$t: ${execs:-0} executions, $cpu CPU seconds, $crashes crashes"
	echo "$line"
	summary="$summary$line
"
	[ "$crashes" -eq 0 ] || status=1
done
echo "== fuzz summary"
printf '%s' "$summary"
exit $status
