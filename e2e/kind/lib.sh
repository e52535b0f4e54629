# shellcheck shell=bash
# e2e/kind/lib.sh: the kind run's settings for the one end-to-end harness,
# e2e/lib.sh (its verbs: expect_allowed, expect_denied, eventually SECONDS
# expect_X ..., summary), sourced by cases.sh and run.sh; bash 4+.
# Everything goes through kubectl against the current context, where gavel
# runs as manifests/ installs it:
#
#   E2E_TARGET=kind          no local control plane, no sanitizer check
#   KUBECTL                  default kubectl; E2E_REQUEST_TIMEOUT 30s
#   E2E_RESOURCE_WEBHOOK     validate.gavel.svc-fail: the webhook gavel generates
#                            for the Fail policies, which judges the cases' objects
#   E2E_DIR                  $E2E_TMP (default: a new temporary directory): manifests
# shellcheck source-path=SCRIPTDIR

E2E_TARGET=kind
# shellcheck source=../lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

KUBECTL=${KUBECTL:-kubectl}
E2E_REQUEST_TIMEOUT=${E2E_REQUEST_TIMEOUT:-30s}
E2E_RESOURCE_WEBHOOK=${E2E_RESOURCE_WEBHOOK:-validate.gavel.svc-fail}
E2E_TMP=${E2E_TMP:-$(mktemp -d "${TMPDIR:-/tmp}/gavel-e2e.XXXXXX")}
E2E_DIR=$E2E_TMP
