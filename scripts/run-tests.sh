#!/bin/sh
# Runs every test suite of `make test` and prints one summary line at the end:
#   N passed, N failed
# Suites: cmocka unit-test binaries (given as arguments), golden cases,
# conformance corpus (when ../shared/conformance exists).
set -u
# Socket and end-to-end suites run after the unit, golden and conformance ones.
SHELL_SUITES=${SHELL_SUITES-"scripts/tests/install_deps_test.sh cmd/tests/cli_test.sh scripts/enum-check.sh scripts/include-check.sh admission/tests/socket_test.sh admission/tests/hostile_test.sh e2e/kind/check.sh e2e/admission.sh e2e/background.sh e2e/faults.sh e2e/registry.sh e2e/roles.sh e2e/context.sh e2e/cluster.sh e2e/chainsaw.sh e2e/vpolicy.sh e2e/vpwebhook.sh e2e/vpscan.sh"}
passed=0
failed=0
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# add_counts FILE: reads the "N passed, N failed" line a suite printed last.
add_counts() {
	line=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	p=$(printf '%s\n' "$line" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ /^passed/) print $i }')
	f=$(printf '%s\n' "$line" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ /^failed/) print $i }')
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
}

for t in "$@"; do
	echo "== unit: $t"
	rc=0
	"$t" >"$log" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || status=1
	cat "$log"
	# cmocka prints "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s), listed below:"
	p=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$log" | sed -E 's/[^0-9]*([0-9]+).*/\1/' | tail -n 1)
	f=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$log" | sed -E 's/[^0-9]*([0-9]+).*/\1/' | tail -n 1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ -z "$p" ] && [ -z "$f" ]; then
		echo "unit: $t printed no cmocka summary (crashed?)"
		failed=$((failed + 1))
		status=1
	elif [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
		# Its tests passed, yet it failed after cmocka's summary: e.g.
		# LeakSanitizer, which reports at exit. One more failure.
		echo "unit: $t exited with status $rc after its tests passed"
		failed=$((failed + 1))
	fi
done

echo "== golden"
if sh scripts/golden.sh check >"$log" 2>&1; then :; else status=1; fi
cat "$log"
add_counts "$log"

for suite in conformance; do
	echo "== $suite"
	if sh "scripts/$suite.sh" "${CONFORMANCE:-../shared/conformance}" >"$log" 2>&1; then :; else status=1; fi
	cat "$log"
	add_counts "$log"
done

# Shell suites: each ends with its own "N passed, N failed" line.
# e2e/chainsaw.sh does not run when SANITIZE is set (the sanitizer pass of CI).
for suite in $SHELL_SUITES; do
	echo "== $suite"
	if sh "$suite" >"$log" 2>&1; then :; else status=1; fi
	cat "$log"
	if grep -Eq '^[0-9]+ passed, [0-9]+ failed' "$log"; then
		add_counts "$log"
	else
		echo "$suite printed no summary"
		failed=$((failed + 1))
		status=1
	fi
done

echo "$passed passed, $failed failed"
exit $status
