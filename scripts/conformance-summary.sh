#!/bin/sh
# conformance-summary.sh - `gavel test` over the conformance corpus as a CI
# job runs `kyverno test`: one run per tier over all of the tier's folders,
# read through Kyverno's output (the table and its line
# "Test Summary: N tests passed and M tests failed") and the exit status,
# then compared with the tier's counts in INDEX.md.
#
#   sh scripts/conformance-summary.sh [CORPUS_DIR]   (default ../shared/conformance)
#
# Prints one line per tier:
#
#   TIER1: Test Summary: 902 tests passed and 0 tests failed, exit 0 (902/902 outcomes, floor 902)
#
# and fails (exit 1, the reason on stderr) when, for a tier:
#   - the run prints no summary line, or more than one;
#   - the summary disagrees with the table above it (passed + failed is not
#     the number of rows, failed not the rows whose result is Fail);
#   - the exit status disagrees with the summary (Kyverno's: 0 when no test
#     failed, 1 when some did; 2, an input gavel could not load, never);
#   - the outcomes scored (the RESULT lines' expected=) are not the ones
#     INDEX.md lists for the tier, or fewer are reproduced than the floor;
#   - some test failed although the floor is every outcome of the tier.
# The summary counts table rows, INDEX.md outcomes (entry x listed
# resource): the two differ where one outcome gives several rows (several
# rule responses, resources of one name in several kinds) or a resource is
# listed twice (one row), which is why passed is compared with the rows and
# the outcomes with INDEX.md, not passed with INDEX.md.
# Floors: TIER1_FLOOR ... CEL2_FLOOR from the environment (conformance.sh
# passes its own), by default every outcome of the tier. A missing corpus
# is not an error. POSIX sh and awk only.

corpus=${1:-../shared/conformance}
gavel=${GAVEL:-./gavel}
TIERS=${TIERS:-"TIER1 TIER2 TIER3 PSS CEL1 CEL2"}

if [ ! -f "$corpus/INDEX.md" ]; then
	echo "conformance-summary: corpus absent ($corpus/INDEX.md does not exist); skipping"
	exit 0
fi
if [ ! -x "$gavel" ]; then
	echo "conformance-summary: $gavel not found; run make first" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gavel-summary.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

# "path tier expected" per test folder of INDEX.md
awk -F'|' -f "$(dirname "$0")/index-rows.awk" "$corpus/INDEX.md" >"$tmp/rows"

status=0
for t in $TIERS; do
	awk -v t="$t" -v c="$corpus" '$2 == t { print c "/" $1 }' "$tmp/rows" >"$tmp/dirs"
	[ -s "$tmp/dirs" ] || continue
	outcomes=$(awk -v t="$t" '$2 == t { e += $3 } END { print e + 0 }' "$tmp/rows")
	eval "floor=\${${t}_FLOOR:-}"
	floor=${floor:-$outcomes}
	# One run over every folder of the tier, as a CI job over its repository.
	# shellcheck disable=SC2046 # one argument per folder (no spaces in corpus paths)
	"$gavel" test $(cat "$tmp/dirs") >"$tmp/out" 2>"$tmp/err"
	rc=$?
	awk -v t="$t" -v rc="$rc" -v outcomes="$outcomes" -v floor="$floor" '
	/^Test Summary: [0-9]+ tests passed and [0-9]+ tests failed$/ { sums++; passed = $3; failed = $7 }
	/^\342\224\202 [0-9]+ / {
		rows++
		n = split($0, cell, "\342\224\202")
		r = cell[6]; gsub(/ /, "", r)
		if (r == "Fail") failrows++
	}
	/^RESULT / {
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "expected") expected += kv[2]
			if (kv[1] == "reproduced") reproduced += kv[2]
		}
	}
	function bad(why) { printf "conformance-summary: %s: %s\n", t, why > "/dev/stderr"; ok = 0 }
	END {
		ok = 1
		if (sums != 1) {
			bad(sums ? "more than one Test Summary line" : "no Test Summary line (exit " rc ")")
			exit 1
		}
		printf "%s: Test Summary: %d tests passed and %d tests failed, exit %d (%d/%d outcomes, floor %d)\n",
		    t, passed, failed, rc, reproduced, outcomes, floor
		if (passed + failed != rows)
			bad("the summary counts " passed + failed " tests, the table has " rows + 0 " rows")
		if (failed != failrows)
			bad("the summary counts " failed " failed tests, the table " failrows + 0 " Fail rows")
		if (rc != (failed ? 1 : 0))
			bad("exit status " rc " with " failed " failed tests (Kyverno: " (failed ? 1 : 0) ")")
		if (expected != outcomes)
			bad("the tests scored " expected + 0 " outcomes, INDEX.md lists " outcomes)
		if (reproduced < floor)
			bad(reproduced + 0 " outcomes reproduced, below the floor of " floor)
		if (floor >= outcomes && failed)
			bad(failed " tests failed; every outcome of the tier is expected to pass")
		exit ok ? 0 : 1
	}' "$tmp/out" || status=1
done
exit $status
