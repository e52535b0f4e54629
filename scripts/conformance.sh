#!/bin/sh
# conformance.sh - scores ./gavel against the conformance corpus.
#
#   sh scripts/conformance.sh [CORPUS_DIR]      (default ../shared/conformance)
#
# Runs `gavel test` on every folder listed in CORPUS_DIR/INDEX.md and prints,
# per tier, the expected outcomes reproduced, those gavel reports as
# unsupported (a rule or policy kind it does not evaluate yet) and the
# folders fully passed:
#
#   TIER1: 890/902 outcomes (90/93 folders)
#   CEL1: 12/400 outcomes, 380 unsupported (2/140 folders)
#
# then the JMESPath compliance score when `gavel jp compliance` exists, the
# cel-spec tests (scripts/cel-spec.sh: passed/relevant per file and the line
# "cel-spec: P/R relevant tests passed"; tests not passed count as skipped,
# the floor below catches a regression), then Kyverno's "Test Summary" of
# one `gavel test` run per tier, checked against the tier's counts
# (scripts/conformance-summary.sh), and last a line
# "N passed, N failed, N skipped" summing outcomes over all tiers: skipped
# are the unsupported outcomes (a feature not built yet), failed the
# outcomes gavel evaluated and got wrong.
# Folders that do not fully pass are listed (all folders with VERBOSE=1).
# Exits 1 when a tier reproduces fewer outcomes than its floor below or its
# Test Summary disagrees with its counts, else 0.
# A missing corpus is not an error: the script says so and exits 0.
# POSIX sh and awk only.

# Floors: minimum outcomes reproduced per tier (raise them as gavel improves).
TIER1_FLOOR=902
TIER2_FLOOR=526
TIER3_FLOOR=39
PSS_FLOOR=11
CEL1_FLOOR=580
CEL2_FLOOR=1784
JMESPATH_FLOOR=892
CELSPEC_FLOOR=1720
TIERS="TIER1 TIER2 TIER3 PSS CEL1 CEL2"

# Seconds allowed per test folder (when timeout(1) is available).
FOLDER_TIMEOUT=${FOLDER_TIMEOUT:-120}

corpus=${1:-../shared/conformance}
gavel=${GAVEL:-./gavel}

if [ ! -d "$corpus" ]; then
	echo "conformance: corpus absent ($corpus does not exist); skipping"
	exit 0
fi
index=$corpus/INDEX.md
if [ ! -f "$index" ]; then
	echo "conformance: $index not found" >&2
	exit 1
fi
if [ ! -x "$gavel" ]; then
	echo "conformance: $gavel not found; run make first" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gavel-conformance.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

# "path tier expected" per test folder of INDEX.md
awk -F'|' -f "$(dirname "$0")/index-rows.awk" "$index" >"$tmp/rows"

if [ ! -s "$tmp/rows" ]; then
	echo "conformance: no test folders listed in $index" >&2
	exit 1
fi

if command -v timeout >/dev/null 2>&1; then
	run_timeout="timeout $FOLDER_TIMEOUT"
else
	run_timeout=
fi

: >"$tmp/scores"
while read -r path tier expected; do
	$run_timeout "$gavel" test "$corpus/$path" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	# RESULT <status> passed=N failed=N skipped=N expected=E reproduced=R unsupported=U file=F
	awk -v tier="$tier" -v want="$expected" -v path="$path" -v rc="$rc" '
	/^RESULT / {
		n++
		status = $2
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "reproduced") r += kv[2]
			if (kv[1] == "unsupported") u += kv[2]
		}
		if (status != "PASS") bad = 1
		if (status == "FAIL") failed = 1
	}
	END {
		if (r > want) r = want
		if (r + u > want) u = want - r
		if (n == 0) { bad = 1; status = (rc >= 124 ? "TIMEOUT/CRASH(rc=" rc ")" : "NO-RESULT(rc=" rc ")") }
		ok = (!bad && r == want) ? 1 : 0
		label = ok ? "PASS" : (!n ? status : (failed || r + u < want ? "FAIL" : "UNSUPPORTED"))
		print tier, want, r + 0, ok, label, path, u + 0
	}' "$tmp/out" >>"$tmp/scores"
done <"$tmp/rows"

# Folders that do not fully pass are listed; those whose only misses are
# unsupported outcomes with VERBOSE=1 (every folder) or VERBOSE=2.
awk -v verbose="${VERBOSE:-0}" -v tiers="$TIERS" '
{
	tier = $1; e[tier] += $2; r[tier] += $3; f[tier]++; p[tier] += $4; u[tier] += $7
	if (verbose == 1 || ($4 == 0 && ($5 != "UNSUPPORTED" || verbose == 2)))
		printf "  %-4s %s %d/%d %s\n", $5, $1, $3, $2, $6
}
END {
	n = split(tiers, t, " ")
	for (i = 1; i <= n; i++)
		if (t[i] in f)
			printf "%s: %d/%d outcomes%s (%d/%d folders)\n", t[i], r[t[i]], e[t[i]],
			    (u[t[i]] ? ", " u[t[i]] " unsupported" : ""), p[t[i]], f[t[i]]
}' "$tmp/scores"

# JMESPath compliance, when this gavel has it.
set -- "$corpus"/jmespath/*.json
if [ -f "$1" ]; then
	"$gavel" jp compliance "$@" >"$tmp/jp" 2>"$tmp/jperr"
	jp=$(awk '/^[0-9]+ passed, [0-9]+ failed$/ { p = $1; f = $3 } END { if (p != "") printf "%d/%d cases", p, p + f }' "$tmp/jp")
	jp_passed=$(awk '/^[0-9]+ passed, [0-9]+ failed$/ { p = $1 } END { print p + 0 }' "$tmp/jp")
	jp_failed=$(awk '/^[0-9]+ passed, [0-9]+ failed$/ { f = $3 } END { print f + 0 }' "$tmp/jp")
	if [ -n "$jp" ]; then
		echo "JMESPATH: $jp"
	else
		echo "JMESPATH: gavel jp compliance not available"
	fi
fi

# cel-spec, when python3 is there to read its textproto files.
cel_passed=0
cel_skipped=0
if [ -d "$corpus/cel-spec" ]; then
	if GAVEL="$gavel" sh "$(dirname "$0")/cel-spec.sh" "$corpus" >"$tmp/cel" 2>"$tmp/celerr"; then
		sed 's/^/  /' "$tmp/cel" | grep -v 'cel-spec:' || true
		grep '^cel-spec:' "$tmp/cel"
		cel_passed=$(sed -n 's|^cel-spec: \([0-9]*\)/\([0-9]*\) .*|\1|p' "$tmp/cel")
		cel_total=$(sed -n 's|^cel-spec: \([0-9]*\)/\([0-9]*\) .*|\2|p' "$tmp/cel")
		cel_passed=${cel_passed:-0}
		cel_skipped=$((${cel_total:-0} - cel_passed))
	else
		echo "cel-spec: not run ($(cat "$tmp/celerr"))"
		cel_passed=
	fi
fi

status=0
if [ -n "$cel_passed" ] && [ "$cel_passed" -lt "$CELSPEC_FLOOR" ]; then
	echo "conformance: cel-spec passed $cel_passed tests, below its floor of $CELSPEC_FLOOR" >&2
	status=1
fi
if [ -n "${jp_passed:-}" ] && [ "$jp_passed" -lt "$JMESPATH_FLOOR" ]; then
	echo "conformance: JMESPath passed $jp_passed cases, below its floor of $JMESPATH_FLOOR" >&2
	status=1
fi
for t in $TIERS; do
	eval floor=\$${t}_FLOOR
	got=$(awk -v t="$t" '$1 == t { r += $3 } END { print r + 0 }' "$tmp/scores")
	if [ "$got" -lt "$floor" ]; then
		echo "conformance: $t reproduced $got outcomes, below its floor of $floor" >&2
		status=1
	fi
done

# The tiers once more as a CI job runs `kyverno test`: Kyverno's summary
# line and exit status against INDEX.md's counts (conformance-summary.sh).
export TIER1_FLOOR TIER2_FLOOR TIER3_FLOOR PSS_FLOOR CEL1_FLOOR CEL2_FLOOR
GAVEL=$gavel sh "$(dirname "$0")/conformance-summary.sh" "$corpus" || status=1

awk -v jp="${jp_passed:-0}" -v jf="${jp_failed:-0}" -v cp="${cel_passed:-0}" -v cs="$cel_skipped" \
	'{ r += $3; e += $2; u += $7 } END { printf "%d passed, %d failed, %d skipped\n", r + jp + cp, e - r - u + jf, u + cs }' "$tmp/scores"
exit $status
