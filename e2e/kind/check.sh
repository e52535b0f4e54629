#!/bin/sh
# check.sh: runs shellcheck on every shell script under e2e/ (files named *.sh,
# and files whose first line is a sh/bash shebang) and prints one line per
# script, then "N passed, N failed" counting scripts. Exit status 1 if any
# script has a finding (of any severity) or shellcheck is missing.
#
#   e2e/kind/check.sh
set -u

E2E=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v shellcheck >/dev/null 2>&1; then
	echo "check.sh: shellcheck not found (Debian: apt-get install shellcheck)"
	echo "0 passed, 1 failed"
	exit 1
fi

passed=0
failed=0
list=$(mktemp)
out=$(mktemp)
trap 'rm -f "$list" "$out"' EXIT

find "$E2E" -type f ! -path '*/.*' | LC_ALL=C sort >"$list"
while IFS= read -r f; do
	case $f in
	*.sh) ;;
	*)
		first=$(head -n 1 "$f" 2>/dev/null) || continue
		case $first in
		'#!'*sh | '#!'*'sh '*) ;;
		*) continue ;;
		esac
		;;
	esac
	name=${f#"$E2E"/}
	# -x follows `source`d files; each script says where they are (source-path).
	if shellcheck -x "$f" >"$out" 2>&1; then
		passed=$((passed + 1))
		echo "ok   e2e/$name"
	else
		failed=$((failed + 1))
		echo "FAIL e2e/$name"
		sed -e 's/^/     | /' "$out"
	fi
done <"$list"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
