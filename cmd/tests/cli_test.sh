#!/bin/sh
# gavel apply / gavel test as drop-ins for kyverno apply / kyverno test:
# the outputs in Kyverno's formats (golden files in cmd/testdata/cli/*.out)
# and the exit-code matrix. Ends with "N passed, N failed".
#
#   sh cmd/tests/cli_test.sh          check
#   sh cmd/tests/cli_test.sh update   rewrite the .out files (review the diff)
set -u
gavel=${GAVEL:-./gavel}
d=cmd/testdata/cli
mode=${1:-check}
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { passed=$((passed + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1${2:+: $2}"; }

# golden NAME ARGS...: stdout of gavel ARGS against $d/NAME.out
golden() {
	name=$1
	shift
	"$gavel" "$@" >"$tmp/out" 2>"$tmp/err"
	if [ "$mode" = update ]; then
		cp "$tmp/out" "$d/$name.out"
		echo "updated $d/$name.out"
		return
	fi
	if diff -u "$d/$name.out" "$tmp/out" >"$tmp/diff"; then ok "golden $name"; else
		ko "golden $name"
		head -n 20 "$tmp/diff"
	fi
}

# code WANT NAME ARGS...: the exit code of gavel ARGS
code() {
	want=$1 name=$2
	shift 2
	"$gavel" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" = "$want" ]; then ok "exit $want $name"; else
		ko "exit $want $name" "got $got"
		head -n 5 "$tmp/err"
	fi
}

golden apply-default apply $d/policies.yaml -r $d/resources.yaml
golden apply-table apply -r $d/resources.yaml $d/policies.yaml -t
golden apply-detailed apply $d/policies.yaml -r $d/resources.yaml --detailed-results
golden apply-audit-warn apply $d/policies.yaml -r $d/resources.yaml --audit-warn
golden apply-policy-report apply $d/policies.yaml -r $d/resources.yaml --policy-report
golden apply-policy-report-json apply $d/policies.yaml -r $d/resources.yaml --policy-report --output-format json
# Numbers in block YAML (hex, octal, underscores, exponents, anchors) and the
# same Pods as JSON documents: the same results, compared as numbers.
golden apply-numbers apply $d/numbers/policy.yaml -r $d/numbers/block.yaml -o json
"$gavel" apply $d/numbers/policy.yaml -r $d/numbers/json.yaml -o json >"$tmp/out" 2>"$tmp/err"
if cmp -s "$tmp/out" "$d/apply-numbers.out"; then ok "numbers: JSON documents as block YAML"; else
	ko "numbers: JSON documents as block YAML"; fi
golden test-pass test $d/test-pass
golden test-fail test $d/test-fail
golden test-fail-only test $d/test-fail --fail-only --detailed-results
golden test-selector test $d/test-pass --test-case-selector "policy=disallow-*,rule=*,resource=*"
golden test-params test $d/test-params --detailed-results
[ "$mode" = update ] && exit 0

# apply: Kyverno's codes by default, the Enforce-only rule on request.
code 0 "all pass" apply $d/policies.yaml -r $d/good.yaml
code 1 "Audit failure" apply $d/audit.yaml -r $d/nolabel.yaml
code 0 "Audit failure, --fail-on enforce" apply $d/audit.yaml -r $d/nolabel.yaml --fail-on enforce
code 1 "Enforce failure, --fail-on enforce" apply $d/policies.yaml -r $d/resources.yaml --fail-on enforce
code 0 "Audit failure, --audit-warn" apply $d/audit.yaml -r $d/nolabel.yaml --audit-warn
code 3 "Audit failure, --audit-warn --warn-exit-code 3" apply $d/audit.yaml -r $d/nolabel.yaml \
	--audit-warn --warn-exit-code 3
code 1 "Audit failure, -o json" apply $d/audit.yaml -r $d/nolabel.yaml -o json
: >"$tmp/empty.yaml"
code 2 "empty resource file" apply $d/policies.yaml -r "$tmp/empty.yaml"
code 2 "policy file without a policy" apply $d/good.yaml -r $d/good.yaml
code 2 "no resource flag" apply $d/policies.yaml
code 2 "unknown flag" apply $d/policies.yaml -r $d/good.yaml --no-such-flag
code 2 "--cluster refused" apply $d/policies.yaml --cluster
code 2 "-o PATH (mutate output) refused" apply $d/policies.yaml -r $d/good.yaml -o out/
code 2 "duplicate policy names" apply $d/dupdir -r $d/good.yaml
if grep -q "duplicate ClusterPolicy require-team in $d/dupdir/a.yaml and $d/dupdir/b.yaml" "$tmp/err"; then
	ok "duplicate names both files"
else ko "duplicate names both files"; fi
code 0 "non-Kubernetes YAML in a policy folder" apply $d/policydir -r $d/good.yaml
if [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q 'skipped 1 file(s) without Kubernetes documents' "$tmp/err"; then
	ok "non-Kubernetes YAML: one summary line"
else ko "non-Kubernetes YAML: one summary line"; fi
# Resources are de-duplicated by group/kind/namespace/name, the first one
# kept, within a file and across files (good.yaml's Pod comes first).
code 1 "duplicate resources ignored" apply $d/policies.yaml -r $d/good.yaml -r $d/dups.yaml
if [ "$(grep -c 'warning: duplicate' "$tmp/err")" = 2 ] &&
	grep -q "^$d/dups.yaml:1: warning: duplicate Pod shop/good ignored (first loaded from $d/good.yaml:1)$" "$tmp/err" &&
	grep -q "^$d/dups.yaml:23: warning: duplicate Pod shop/good ignored (first loaded from $d/good.yaml:1)$" "$tmp/err"; then
	ok "duplicate resources: warnings name the first"
else ko "duplicate resources: warnings name the first"; fi
"$gavel" apply $d/policies.yaml -r $d/dups.yaml -o json >"$tmp/out" 2>"$tmp/err"
if [ "$(grep -c '"name": "good"' "$tmp/out")" = 6 ] && [ "$(grep -c . "$tmp/err")" = 1 ] &&
	grep -q "^$d/dups.yaml:23: warning: duplicate Pod shop/good ignored (first loaded from $d/dups.yaml:1)$" "$tmp/err"; then
	ok "duplicate resources: within a file"
else ko "duplicate resources: within a file"; fi
# validate.cel params from anywhere in the inputs: the param after 300
# StatefulSets (more than one batch of 256 documents), from a file and
# from stdin (read twice: spooled), and in a second resource file.
i=0
: >"$tmp/sts.yaml"
while [ $i -lt 300 ]; do
	printf 'apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: sts-%d, namespace: test-params}\nspec: {replicas: %d}\n---\n' \
		$i $((2 + 2 * (i % 2))) >>"$tmp/sts.yaml"
	i=$((i + 1))
done
printf 'apiVersion: rules.example.com/v1\nkind: StatefulSetReplicaLimit\nmetadata: {name: replica-limit, namespace: test-params}\nmaxReplicas: 3\n' >"$tmp/param.yaml"
cat "$tmp/sts.yaml" "$tmp/param.yaml" >"$tmp/sts-param.yaml"
params_pol=engine/testdata/340-validate-cel-params-by-name/policy.yaml
params_ok() { # NAME: $tmp/out holds 150 fails, 150 passes and no error
	if [ "$(grep -c '"result": "fail"' "$tmp/out")" = 150 ] &&
		[ "$(grep -c '"result": "pass"' "$tmp/out")" = 150 ] &&
		! grep -q '"result": "error"' "$tmp/out"; then ok "$1"; else
		ko "$1" "$(grep -c '"result": "error"' "$tmp/out") errors"
	fi
}
"$gavel" apply $params_pol -r "$tmp/sts-param.yaml" -o json >"$tmp/out" 2>"$tmp/err"
params_ok "validate.cel param after 300 resources"
"$gavel" apply $params_pol -r - -o json <"$tmp/sts-param.yaml" >"$tmp/out" 2>"$tmp/err"
params_ok "validate.cel param after 300 resources on stdin"
"$gavel" apply $params_pol -r - -r "$tmp/param.yaml" -o json <"$tmp/sts.yaml" >"$tmp/out" 2>"$tmp/err"
params_ok "validate.cel param in a later file"
"$gavel" apply $params_pol -r "$tmp/sts.yaml" -o json >"$tmp/out" 2>"$tmp/err"
if [ "$(grep -c '"result": "error"' "$tmp/out")" = 300 ] &&
	grep -q 'error in parameterized resource' "$tmp/out"; then
	ok "validate.cel param missing: an error per resource"
else ko "validate.cel param missing: an error per resource"; fi
if grep -q 'gavel scan' "$tmp/err" 2>/dev/null || "$gavel" apply --cluster 2>&1 | grep -q 'gavel scan'; then
	ok "--cluster says what to use"
else ko "--cluster says what to use"; fi

# a ValidatingAdmissionPolicy of an older served version (1.26-1.29) reads as v1
cat >"$tmp/vap.yaml" <<'EOF'
apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - {expression: "object.spec.replicas <= 3", message: too many replicas}
EOF
cat >"$tmp/deploy.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: default}
spec: {replicas: 5}
EOF
for v in v1beta1 v1alpha1; do
	sed "s|/v1beta1|/$v|" "$tmp/vap.yaml" >"$tmp/vap-$v.yaml"
	"$gavel" apply "$tmp/vap-$v.yaml" -r "$tmp/deploy.yaml" >"$tmp/out" 2>"$tmp/err"
	if grep -q 'too many replicas' "$tmp/out" && grep -q 'fail: 1, warn: 0, error: 0' "$tmp/out"; then
		ok "ValidatingAdmissionPolicy $v evaluated as v1"
	else ko "ValidatingAdmissionPolicy $v evaluated as v1"; fi
done

# test
code 0 "test passes" test $d/test-pass
code 1 "test fails (wrong result, missing resource)" test $d/test-fail
mkdir "$tmp/none"
code 2 "no test below the folder" test "$tmp/none"
"$gavel" test $d/test-fail >"$tmp/out" 2>&1
if grep -q '^Test Summary: 1 tests passed and 2 tests failed$' "$tmp/out" &&
	grep -q '^1 passed, 2 failed' "$tmp/out"; then ok "test summary lines"; else
	ko "test summary lines"
fi

# jp
code 0 "jp parse" jp parse 'a.b[0]'
code 1 "jp parse syntax error" jp parse 'a['
code 0 "jp function NAME" jp function to_upper
code 0 "--version" --version

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
