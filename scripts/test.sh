#!/usr/bin/env bash
# Set up everything and run the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Real OpenZFS runs in a qemu VM built once and cached in ~/.cache/zverify-vm (11-18 min cold,
# instant warm).  If it cannot be built here the zfs tests skip and say why, unless
# ZVERIFY_ZFS_REQUIRED=1 (CI), which makes that a failure.
if ! python3 -m tests.zfsvm build; then
    [ "${ZVERIFY_ZFS_REQUIRED:-0}" = 1 ] && exit 2
    echo "test: no ZFS VM; the zfs-marked tests will skip" >&2
fi
python3 -m pytest "$@"
