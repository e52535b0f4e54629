#!/bin/sh
# valgrind.sh - the offline suites under valgrind (`make test-valgrind`).
#
#   sh scripts/valgrind.sh [CONFORMANCE_DIR]     (default ../shared/conformance)
#
# Runs `valgrind --leak-check=full --error-exitcode=1` on:
#   - `gavel apply` on the sample policies and workloads (manifests/samples),
#     in every output format;
#   - `gavel apply` on every golden case (engine/testdata/<NNN-name>/, with its
#     `args`), whose exit code must also stay the expected one;
#   - `gavel test` on the first folders of each tier of the conformance corpus
#     (when CONFORMANCE_DIR exists; VALGRIND_FOLDERS per tier, default 2);
#   - `gavel jp query` on a few expressions (Kyverno functions, errors, the
#     bounds: regex match limit, step budget).
# A run passes when valgrind reports no error (invalid reads/writes, use of
# uninitialised values, bad frees, definite or possible leaks) and the program
# was not killed by a signal. gavel itself exits 1 for failing policies, so the
# verdict comes from valgrind's "ERROR SUMMARY" line, not from the exit code.
#
# Prints one line per run and ends with "N passed, N failed"; exit status 1
# when something failed. Logs of failed runs are kept in build/valgrind/.
# Runs JOBS (default: number of CPUs) at a time. POSIX sh.
set -u
corpus=${1:-${CONFORMANCE:-../shared/conformance}}
gavel=${GAVEL:-./gavel}
per_tier=${VALGRIND_FOLDERS:-2}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
logs=build/valgrind
VALGRIND="valgrind --leak-check=full --error-exitcode=1 --num-callers=30"

command -v valgrind >/dev/null || { echo "valgrind: valgrind not found (apt-get install valgrind)"; echo "0 passed, 1 failed"; exit 1; }
[ -x "$gavel" ] || { echo "valgrind: $gavel not found (run make first)"; echo "0 passed, 1 failed"; exit 1; }
case $gavel in /*) ;; *) gavel=$PWD/$gavel ;; esac
case $corpus in /*) ;; *) corpus=$PWD/$corpus ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gavel-valgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM
rm -rf "$logs"
mkdir -p "$logs"
# Run a copy: a `make` in the same tree may relink ./gavel during the runs.
cp "$gavel" "$tmp/gavel" || exit 1
gavel=$tmp/gavel

n=0
# add NAME DIR WANT_EXIT ARGS...: one run of gavel ARGS in DIR. WANT_EXIT is
# the exit code the run must end with, or "-" for any (but not a signal).
add() {
	name=$1 dir=$2 want=$3
	shift 3
	n=$((n + 1))
	id=$(printf '%04d' $n)
	printf '%s\n' "$name" >"$tmp/$id.name"
	printf '%s\n' "$want" >"$tmp/$id.want"
	{
		printf 'cd %s || exit 126\n' "$(quote "$dir")"
		printf '%s --log-file=%s %s' "$VALGRIND" "$(quote "$tmp/$id.log")" "$(quote "$gavel")"
		for a in "$@"; do printf ' %s' "$(quote "$a")"; done
		printf ' >/dev/null 2>%s\n' "$(quote "$tmp/$id.err")"
		printf 'echo $? >%s\n' "$(quote "$tmp/$id.exit")"
	} >"$tmp/$id.sh"
}
# quote WORD: WORD as one single-quoted shell word.
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# ---- samples ----
for fmt in table json yaml report; do
	add "apply samples -o $fmt" . - apply manifests/samples/policies \
		--resource manifests/samples/workloads/pods.yaml \
		--resource manifests/samples/workloads/deployments.yaml -o "$fmt"
done

# ---- golden cases ----
for dir in engine/testdata/[0-9]*/; do
	dir=${dir%/}
	[ -f "$dir/policy.yaml" ] || continue
	want=0
	[ -f "$dir/expected.exit" ] && want=$(cat "$dir/expected.exit")
	if [ -f "$dir/args" ]; then
		# shellcheck disable=SC2046 # args is a word list on purpose, as in golden.sh
		add "golden ${dir#engine/testdata/}" "$dir" "$want" apply policy.yaml --resource resource.yaml -o json $(cat "$dir/args")
	else
		add "golden ${dir#engine/testdata/}" "$dir" "$want" apply policy.yaml --resource resource.yaml -o json
	fi
done

# ---- conformance folders ----
if [ -f "$corpus/INDEX.md" ]; then
	awk -F'|' -v k="$per_tier" '
	/^\| *kyverno-/ {
		path = $2; tier = $3
		gsub(/[ \t]/, "", path); gsub(/[ \t]/, "", tier)
		if (seen[tier]++ < k) print path
	}' "$corpus/INDEX.md" >"$tmp/folders"
	while read -r path; do
		add "test $path" . - test "$corpus/$path"
	done <"$tmp/folders"
else
	echo "valgrind: conformance corpus absent ($corpus); gavel test runs skipped"
fi

# ---- gavel jp query ----
printf '%s\n' '{"metadata":{"name":"web","labels":{"app":"web","team":"a"}},' \
	'"spec":{"containers":[{"name":"a","image":"nginx:1.25"},{"name":"b","image":"busybox:latest"}]},' \
	'"s":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}' >"$tmp/doc.json"
jq_n=0
jp() { # WANT_EXIT EXPRESSION
	jq_n=$((jq_n + 1))
	add "jp query #$jq_n: $2" . "$1" jp query "$2" -i "$tmp/doc.json"
}
jp 0 "spec.containers[?ends_with(image, ':latest')].name"
jp 0 "metadata.labels | keys(@) | sort(@) | join(',', @)"
jp 0 "spec.containers[].image | map(&split(@, ':')[1], @)"
jp 0 "regex_replace_all('[0-9]+', to_string(spec.containers[0].image), 'N')"
jp 0 "to_string(@) | base64_encode(@) | base64_decode(@) | parse_json(@) | metadata.name"
jp 0 "sum([divide(\`10\`, \`4\`), multiply(\`2\`, \`3\`)])"
jp 0 "semver_compare('1.2.3', '>=1.0.0') && time_before('2020-01-01T00:00:00Z', '2021-01-01T00:00:00Z')"
jp 0 "items(metadata.labels, 'key', 'value')[?value == 'web'].key"
jp 0 "parse_yaml('a: [1, 2]').a | sum(@) | to_string(@) | sha256(@)"
jp 1 "regex_match('(a+)+\$', s)"
jp 1 "\`1\`|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[@,@]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|[]|length(@)"
jp 1 "metadata.labels.missing"
jp 1 "spec.containers[?"
jp 1 "no_such_function(@)"
jp 1 "divide(\`1\`, \`0\`)"

# ---- run ----
echo "valgrind: $n runs, $jobs at a time"
ls "$tmp"/*.sh | xargs -P "$jobs" -n 1 sh || echo "valgrind: xargs exited $?"
# Runs xargs never started (it gives up when one of its children dies): one by one.
i=0
while [ $i -lt $n ]; do
	i=$((i + 1))
	id=$(printf '%04d' $i)
	[ -f "$tmp/$id.exit" ] || sh "$tmp/$id.sh"
done

passed=0
failed=0
i=0
while [ $i -lt $n ]; do
	i=$((i + 1))
	id=$(printf '%04d' $i)
	name=$(cat "$tmp/$id.name")
	want=$(cat "$tmp/$id.want")
	code=$(cat "$tmp/$id.exit" 2>/dev/null || echo '?')
	log=$tmp/$id.log
	errors=$(sed -n 's/^==[0-9]*== ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" 2>/dev/null | tail -n 1)
	why=
	if [ -z "$errors" ]; then
		why="no ERROR SUMMARY (valgrind did not finish)"
	elif [ "$errors" != 0 ]; then
		lost=$(sed -n 's/^==[0-9]*== *\(definitely lost\|possibly lost\): \(.*\)/\1 \2/p' "$log" | tr '\n' ';')
		why="$errors errors${lost:+ ($lost)}"
	elif grep -q 'Process terminating with default action of signal' "$log"; then
		why="killed by $(sed -n 's/.*default action of signal \([0-9]* ([A-Z]*)\).*/\1/p' "$log" | head -n 1)"
	elif [ "$want" != - ] && [ "$code" != "$want" ]; then
		why="exit $code, want $want"
	elif [ "$code" = '?' ] || [ "$code" -ge 126 ]; then
		why="exit $code"
	fi
	if [ -z "$why" ]; then
		passed=$((passed + 1))
		echo "PASS $name"
	else
		failed=$((failed + 1))
		cp "$log" "$logs/$id.log"
		cp "$tmp/$id.err" "$logs/$id.stderr" 2>/dev/null
		cp "$tmp/$id.sh" "$logs/$id.sh"
		echo "FAIL $name: $why (see $logs/$id.log)"
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
