#!/usr/bin/env bash
# cases.sh: gavel's end-to-end cases on a cluster where gavel is installed
# (manifests/) and the sample policies (manifests/samples/policies) are
# applied; run.sh sets that up on kind. The cases are those of the local run
# (e2e/cases/admission.sh, also run by e2e/admission.sh), with the verbs of
# e2e/lib.sh. Ends with "N passed, N failed"; exit status 1 if any case failed.
#
#   KUBECONFIG=... e2e/kind/cases.sh
#
# Env: KUBECTL (default kubectl), REPORT_TIMEOUT (seconds to wait for background
# reports, default 180), KEEP_OBJECTS=1 (leave the test namespaces and policies).
# The CronJob cases need batch/v1 CronJob (1.21+; Kyverno's autogen rules,
# like gavel's, match batch/v1/CronJob only): skipped where it is not served.
# shellcheck source-path=SCRIPTDIR
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../cases/admission.sh
. "$HERE/../cases/admission.sh"

cleanup() {
	if [ "${KEEP_OBJECTS:-0}" != 1 ]; then
		k delete clusterpolicy "${E2E_CLUSTER_POLICIES[@]}" --ignore-not-found --wait=false \
			>/dev/null 2>&1
		[ "${#E2E_NAMESPACES[@]}" -eq 0 ] ||
			k delete namespace "${E2E_NAMESPACES[@]}" --ignore-not-found --wait=false >/dev/null 2>&1
	fi
	rm -rf "$E2E_TMP"
}
trap cleanup EXIT

main() {
	case_rbac
	case_workloads
	case_namespaced_policy
	case_namespace_selector
	case_live_policy
	case_invalid_policy
	case_background_reports
	summary
}

main "$@"
