# shellcheck shell=bash
# lib.sh: a small assert library for the kind end-to-end cases (sourced by
# cases.sh and run.sh; bash 4+). Everything goes through kubectl.
#
#   k ARGS...                        kubectl with a request timeout ($KUBECTL, default kubectl)
#   manifest NAME <<EOF ... EOF      writes stdin to $E2E_TMP/NAME.yaml, prints the path
#   is_allowed CMD...                CMD succeeded (status 0)
#   is_denied SUBSTR... -- CMD...    CMD failed, output has "denied the request" and each SUBSTR
#   is_refused SUBSTR... -- CMD...   CMD failed and its output has each SUBSTR
#   has_output SUBSTR... -- CMD...   CMD succeeded and its output has each SUBSTR
#   expect NAME CHECK ARGS...        runs a check once and records it as passed or failed
#   eventually SECS NAME CHECK ARGS...  retries a check every 0.5 s until it holds or SECS elapse
#   skip NAME REASON                 records a case that cannot run here (not counted as passed)
#   summary                          prints the failures and "N passed, N failed"; status 1 if any failed
#
# Checks leave the command's combined stdout+stderr in OUT (shown on failure)
# and a reason in WHY.

E2E_PASSED=0
E2E_FAILED=0
E2E_FAILURES=()
E2E_SKIPPED=0
E2E_TMP=${E2E_TMP:-$(mktemp -d "${TMPDIR:-/tmp}/gavel-e2e.XXXXXX")}
KUBECTL=${KUBECTL:-kubectl}
OUT=
WHY=

log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

k() { "$KUBECTL" --request-timeout=30s "$@"; }

manifest() {
	local f=$E2E_TMP/$1.yaml
	cat >"$f"
	printf '%s\n' "$f"
}

# now_ms: wall clock in milliseconds (EPOCHREALTIME in bash 5, else seconds).
now_ms() {
	if [ -n "${EPOCHREALTIME:-}" ]; then
		local t=${EPOCHREALTIME//[.,]/}
		printf '%s\n' "$((10#$t / 1000))"
	else
		printf '%s\n' "$(($(date +%s) * 1000))"
	fi
}

# run_cmd CMD...: runs CMD with stdin closed; output in OUT, status returned.
run_cmd() {
	local rc=0
	OUT=$("$@" 2>&1 </dev/null) || rc=$?
	return "$rc"
}

# contains_all SUBSTR...: every SUBSTR is in OUT (fixed strings); else sets WHY.
contains_all() {
	local w
	for w in "$@"; do
		if [[ "$OUT" != *"$w"* ]]; then
			WHY="output lacks '$w'"
			return 1
		fi
	done
	return 0
}

# split_args: WANT=(words before --), CMD=(words after --).
split_args() {
	WANT=()
	CMD=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		WANT+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	CMD=("$@")
}

is_allowed() {
	if run_cmd "$@"; then
		return 0
	fi
	WHY="refused, expected it to be allowed"
	return 1
}

is_denied() {
	split_args "$@"
	if run_cmd "${CMD[@]}"; then
		WHY="allowed, expected a denial"
		return 1
	fi
	contains_all "denied the request" ${WANT[@]+"${WANT[@]}"}
}

is_refused() {
	split_args "$@"
	if run_cmd "${CMD[@]}"; then
		WHY="accepted, expected it to be refused"
		return 1
	fi
	contains_all ${WANT[@]+"${WANT[@]}"}
}

has_output() {
	split_args "$@"
	if ! run_cmd "${CMD[@]}"; then
		WHY="command failed"
		return 1
	fi
	contains_all ${WANT[@]+"${WANT[@]}"}
}

pass() {
	E2E_PASSED=$((E2E_PASSED + 1))
	printf 'ok   %s\n' "$1"
}

fail() {
	E2E_FAILED=$((E2E_FAILED + 1))
	E2E_FAILURES+=("$1")
	printf 'FAIL %s: %s\n' "$1" "$WHY"
	printf '%s\n' "$OUT" | sed -e 's/^/     | /' | head -n 40
}

skip() {
	E2E_SKIPPED=$((E2E_SKIPPED + 1))
	printf 'skip %s: %s\n' "$1" "$2"
}

expect() {
	local name=$1
	shift
	WHY=
	if "$@"; then pass "$name"; else fail "$name"; fi
}

eventually() {
	local secs=$1 name=$2 start elapsed
	shift 2
	start=$(now_ms)
	while :; do
		WHY=
		if "$@"; then
			elapsed=$(($(now_ms) - start))
			pass "$name ($((elapsed / 1000)).$(printf '%03d' $((elapsed % 1000)))s)"
			return 0
		fi
		elapsed=$(($(now_ms) - start))
		if [ "$elapsed" -ge $((secs * 1000)) ]; then
			WHY="not within ${secs}s: $WHY"
			fail "$name"
			return 1
		fi
		sleep 0.5
	done
}

summary() {
	local f
	if [ "$E2E_FAILED" -gt 0 ]; then
		printf 'failed:\n'
		for f in "${E2E_FAILURES[@]}"; do
			printf '  %s\n' "$f"
		done
	fi
	[ "$E2E_SKIPPED" -eq 0 ] || printf '%d skipped\n' "$E2E_SKIPPED"
	printf '%d passed, %d failed\n' "$E2E_PASSED" "$E2E_FAILED"
	[ "$E2E_FAILED" -eq 0 ]
}
