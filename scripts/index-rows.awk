# index-rows.awk - the test folders of the conformance corpus's INDEX.md,
# one line each: "path tier expected", expected being the sum of the row's
# pass/fail/skip/other counts. Run with -F'|'; read by conformance.sh and
# conformance-summary.sh. Rows: "| kyverno-... | tier | p/f/s/o | features |".
/^\| *kyverno-/ {
	path = $2; tier = $3; counts = $4
	gsub(/[ \t]/, "", path); gsub(/[ \t]/, "", tier); gsub(/[ \t]/, "", counts)
	n = split(counts, c, "/")
	e = 0
	for (i = 1; i <= n; i++) e += c[i]
	print path, tier, e
}
