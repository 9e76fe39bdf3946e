#!/usr/bin/env bash
# The VM tests CI runs as a sample, in full (real OpenZFS in the qemu VM; hours under TCG):
# the receive differential with every generated archive, the tests that run on every OpenZFS
# release (2.1, 2.3) all on each, the slow ones marked vm_full, parity repairs and the S3
# bucket inside the VM, and the consolidate differential over many seeds with a 100-link
# chain.  Arguments: the seeds, scenarios and links of scripts/consolidate-differential.sh (its
# defaults when none).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
rc=0
ZVERIFY_VM_FULL=1 ZVERIFY_DIFF_CASES="${ZVERIFY_DIFF_CASES:-24}" ZVERIFY_ZFS_REQUIRED=1 \
    python3 -m pytest -q -p no:cacheprovider tests/cold/test_zfs_receive_differential.py \
    tests/cold/test_zfs_by_hand.py tests/cold/test_zfs_archive.py tests/cold/test_zfs_parity.py \
    tests/cold/test_drill_zfs.py \
    tests/cold/test_zfs_s3.py || rc=$?
bash scripts/consolidate-differential.sh "$@" || rc=$?
echo "vm-full: exit $rc in $(($(date +%s) - start)) s"
exit "$rc"
