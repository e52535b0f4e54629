#!/bin/sh
# Every enumerated field of gavel's policy CRDs is checked when a policy is
# compiled: see scripts/enum-check.py. Ends with "N passed, N failed".
command -v python3 >/dev/null 2>&1 || { echo "enum-check: python3 missing"; echo "0 passed, 1 failed"; exit 1; }
exec python3 "$(dirname "$0")/enum-check.py" "${GAVEL:-./gavel}"
