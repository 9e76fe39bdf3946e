#!/usr/bin/env bash
# Set up everything and run the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Real OpenZFS runs in a qemu VM built once and cached in ~/.cache/zverify-vm (11-18 min cold,
# instant warm).  If it cannot be built here the zfs tests skip and say why, unless
# ZVERIFY_ZFS_REQUIRED=1 (CI), which makes that a failure.
# The s3 tests run against a real S3 server, versitygw, built once from the Go module proxy
# (1.5 min cold, cached in ~/.cache/zverify-s3; needs Go >= 1.25), beside the VM build, whose
# qemu uses one of the cores.  Same rule: ZVERIFY_S3_REQUIRED=1 makes a failed build fatal.
# The image of each OpenZFS release (2.1, 2.3: tools/zfsvm/config.py) is built once; the
# tests of a second release run last and wait for its image (ZVERIFY_VM_AUTOBUILD), so
# `build_vm DEFAULT` lets the first release's tests start while the next one builds.
build_vm() {
    if ! python3 -m tools.zfsvm build "$@"; then
        [ "${ZVERIFY_ZFS_REQUIRED:-0}" = 1 ] && return 2
        echo "test: no ZFS VM; the zfs-marked tests will skip" >&2
    fi
}
export ZVERIFY_VM_AUTOBUILD=1
wait_s3() {
    if ! wait "$s3_build"; then
        [ "${ZVERIFY_S3_REQUIRED:-0}" = 1 ] && return 2
        echo "test: no versitygw; the s3-marked tests will skip" >&2
    fi
}
bash scripts/versitygw.sh &
s3_build=$!
if [ "$#" -gt 0 ] || [ "${ZVERIFY_TEST_SERIAL:-0}" = 1 ]; then
    build_vm || exit 2
    wait_s3 || exit 2
    exec python3 -m pytest "$@"
fi
# The whole suite in two halves side by side: the zfs-marked tests spend their time waiting on
# the VM's qemu (TCG keeps a core busy), the rest on the host; serial, they took longer than
# CI's 90 minutes.  The VM half builds its image first (cold: while the host half already
# runs); its output goes to a log, printed once both halves are done.
vm_log=$(mktemp "${TMPDIR:-/tmp}/zverify-vm-tests.XXXXXX")
python3 -m tools.zfsvm build >"$vm_log.build" 2>&1 &  # every release, one after the other
# --durations: each half's slowest tests, to keep a cold run inside CI's budget
(build_vm --release 2.1 && python3 -m pytest -m zfs -p no:cacheprovider --durations=30) >"$vm_log" 2>&1 &
vm_half=$!
host_rc=0
if wait_s3; then
    python3 -m pytest -m "not zfs" --durations=30 || host_rc=$?
else
    host_rc=2
fi
vm_rc=0
wait "$vm_half" || vm_rc=$?
echo "=== the zfs-marked tests, run beside the others (exit $vm_rc) ==="
cat "$vm_log"
rm -f "$vm_log" "$vm_log.build"
[ "$host_rc" = 0 ] || exit "$host_rc"
exit "$vm_rc"
