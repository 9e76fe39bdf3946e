#!/usr/bin/env bash
# The full corpus run (issue 43 item 2): every restorable claim `cold check` makes over
# every recorded receive chain of the stream corpus (tests/data/corpus/<release>.tar.xz) is
# received by real OpenZFS in the VM; then the host tests over the whole corpus.
#
#   scripts/corpus-full.sh [-- pytest args]
#     ZVERIFY_CORPUS_CASES  chains received per release (default 100000: all of them)
#     ZVERIFY_CORPUS_SEED   the selection's seed when fewer
#
# Prints the time taken.  TCG on 2 cores: expect minutes per chain.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--" ] && shift
start=$(date +%s)
set +e
ZVERIFY_VM_FULL=1 ZVERIFY_ZFS_REQUIRED=1 ZVERIFY_CORPUS_CASES="${ZVERIFY_CORPUS_CASES:-100000}" \
    ZVERIFY_CORPUS_COLD_CASES="${ZVERIFY_CORPUS_CASES:-100000}" \
    python3 -m pytest -q -rfE -s -p no:cacheprovider tests/corpus "$@"
rc=$?
set -e
echo "corpus-full: exit $rc in $(( $(date +%s) - start ))s"
exit $rc
