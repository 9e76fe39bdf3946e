#!/usr/bin/env bash
# The full differential run of `cold consolidate` against real OpenZFS (issue 44): the test of CI,
# tests/cold/test_consolidate_zfs.py, with many seeded churn scenarios (tests/cold/churn.py) and
# one chain of at least 100 links, comparing @N as well as @N+1.  One VM session (TCG on 2 cores
# takes hours for the defaults: run it on a machine with KVM, or lower the counts).
#
#   scripts/consolidate-differential.sh [SEEDS [LINKS [LONG]]] [-- pytest args]
#     SEEDS  "1-40" or "3,7,9"  (default 1-40)   one scenario of LINKS links per seed
#     LINKS  default 6
#     LONG   links of the one long scenario (default 120; at least 100 for the issue's claim)
#
# Prints one summary line: scenarios, links, passed/failed and the time taken.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-1-40}
links=${2:-6}
long=${3:-120}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
set +e
export ZVERIFY_ZFS_REQUIRED=1 ZVERIFY_CONSOLIDATE_SEEDS=$seeds ZVERIFY_CONSOLIDATE_LINKS=$links \
    ZVERIFY_CONSOLIDATE_LONG=$long ZVERIFY_CONSOLIDATE_COMPARE_BOTH=1
python3 -m pytest -q -rfE -p no:cacheprovider tests/cold/test_consolidate_zfs.py "$@" \
    2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
took=$(( $(date +%s) - start ))
counts=$(grep -Eo '[0-9]+ (passed|failed|error|errors|skipped)' "$log" | tr '\n' ' ')
scenarios=$(python3 -c "import sys; from tests.cold.test_consolidate_zfs import SCENARIOS as s; \
print(len(s), sum(n for _, n in s))")
echo "consolidate-differential: seeds $seeds, ${scenarios% *} scenarios, ${scenarios#* } links" \
    "(longest $long): ${counts:-no result} in ${took}s (exit $rc)"
exit "$rc"
