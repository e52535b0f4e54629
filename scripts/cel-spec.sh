#!/bin/sh
# cel-spec.sh - runs the cel-spec conformance tests that apply to an engine
# without protobuf message types (see ../shared/conformance/cel-spec/README.md)
# through `gavel cel conformance`, and prints passed/relevant per file and
#   cel-spec: P/R relevant tests passed
#
#   sh scripts/cel-spec.sh [CONFORMANCE_DIR] [-v]
#
# -v lists every test not passed with what happened. Tests the harness cannot
# express (check_only, typed_result: they need the type checker) count as not
# passed, with their reason. Exits 0 whatever the score (a report, not a gate);
# 2 when the suite or python3 is missing.
set -eu
dir=${1:-../shared/conformance}
verbose=${2:-}
data="$dir/cel-spec/tests/simple/testdata"
gavel=${GAVEL:-./gavel}
if [ ! -d "$data" ]; then
	echo "cel-spec: $data not found, skipped" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "cel-spec: python3 not found" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$(dirname "$0")/cel-spec.py" convert "$data" "$work"
passed=0
total=0
for cases in "$work"/*.jsonl; do
	base=$(basename "$cases" .jsonl)
	skip="$work/$base.skip"
	"$gavel" cel conformance "$cases" >"$work/$base.out" 2>&1 || true
	p=$(sed -n 's/^.*: \([0-9]*\)\/\([0-9]*\)$/\1/p' "$work/$base.out" | tail -1)
	n=$(sed -n 's/^.*: \([0-9]*\)\/\([0-9]*\)$/\2/p' "$work/$base.out" | tail -1)
	s=$(wc -l <"$skip")
	p=${p:-0}
	n=$(( ${n:-0} + s ))
	echo "$base: $p/$n"
	if [ -n "$verbose" ]; then
		grep '^FAIL ' "$work/$base.out" | sed 's/^/  /' || true
		sed 's/^/  SKIP /' "$skip"
	fi
	passed=$((passed + p))
	total=$((total + n))
done
echo "cel-spec: $passed/$total relevant tests passed"
