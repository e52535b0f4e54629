#!/bin/sh
# Golden cases: engine/testdata/<NNN-name>/ holds policy.yaml, resource.yaml,
# optional `args` (extra `gavel apply` arguments, one line), and the expected
# outputs of `gavel apply policy.yaml --resource resource.yaml -o json`:
#   expected.json   stdout
#   expected.err    stderr (bad-policy cases pin the exact error text)
#   expected.exit   exit code (0 when absent)
#
#   golden.sh check    compare, print one line per case and "N passed, N failed"
#   golden.sh update   rewrite the expected files (review the diff before committing)
set -u
mode=${1:-check}
gavel=${GAVEL:-./gavel}
root=engine/testdata
passed=0
failed=0
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

for dir in "$root"/[0-9]*/; do
	dir=${dir%/}
	[ -f "$dir/policy.yaml" ] || continue
	args=""
	[ -f "$dir/args" ] && args=$(cat "$dir/args")
	# shellcheck disable=SC2086 # args is a word list on purpose
	(cd "$dir" && "$OLDPWD/$gavel" apply policy.yaml --resource resource.yaml -o json $args) >"$out" 2>"$err"
	code=$?
	if [ "$mode" = update ]; then
		cp "$out" "$dir/expected.json"
		if [ -s "$err" ]; then cp "$err" "$dir/expected.err"; else rm -f "$dir/expected.err"; fi
		if [ "$code" -ne 0 ]; then echo "$code" >"$dir/expected.exit"; else rm -f "$dir/expected.exit"; fi
		echo "updated $dir"
		continue
	fi
	want_exit=0
	[ -f "$dir/expected.exit" ] && want_exit=$(cat "$dir/expected.exit")
	ok=1
	if ! diff -u "$dir/expected.json" "$out" >/dev/null 2>&1; then ok=0; fi
	if [ -f "$dir/expected.err" ]; then
		diff -u "$dir/expected.err" "$err" >/dev/null 2>&1 || ok=0
	elif [ -s "$err" ]; then
		ok=0
	fi
	[ "$code" = "$want_exit" ] || ok=0
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
		echo "PASS $dir"
	else
		failed=$((failed + 1))
		echo "FAIL $dir (exit $code, want $want_exit)"
		diff -u "$dir/expected.json" "$out" | head -n 30
		[ -f "$dir/expected.err" ] && diff -u "$dir/expected.err" "$err" | head -n 10
		[ -f "$dir/expected.err" ] || head -n 5 "$err"
	fi
done
[ "$mode" = update ] && exit 0
echo "golden: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
