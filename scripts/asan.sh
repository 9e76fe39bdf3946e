#!/usr/bin/env bash
# Build the C core with AddressSanitizer + UBSan in a scratch copy of the committed tree and run the
# tests that exercise it there (the normal build is left alone): the walker (tests/native, whose
# C driver test_walkdump.py builds with the sanitizers too), the send-stream parser of untrusted
# input with its fuzz test (tests/sendstream), compare end to end (tests/compare), the pure tests of
# boundedjson, hashing, MPI, PAR2 and the ZFS boundary, and the brief fuzz of the manifest
# readers (whose header filters the C filter compiles).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# the committed tree (what CI tests) without large test data, except the send-stream fixtures
# (a few MB) that tests/sendstream needs
git archive HEAD -- . ':!tests/data' | tar -x -C "$scratch"
git archive HEAD -- tests/data/streams | tar -x -C "$scratch"
cd "$scratch"
# ZVERIFY_SANITIZE=1: setup.py builds the instrumented variant; tests that cannot run under the
# sanitizers skip, and say why.
export ZVERIFY_SANITIZE=1
python3 setup.py -q build_ext --inplace >/dev/null
# Python itself is not instrumented: preload the runtime; CPython's own allocations are not ours
# to report, so leak checking is off here (tests/native/test_walkdump.py turns it on for its C
# driver, which has no Python in it: a leak in the walker fails there).
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# --capture=sys: a sanitizer report written to fd 2 must reach the log before the abort
python3 -m pytest -q -p no:cacheprovider --capture=sys -m "not zfs" tests/native tests/sendstream tests/compare \
    tests/test_boundedjson.py tests/test_hashing.py tests/mpi/test_mpi_pure.py tests/par2 \
    tests/zfs/test_boundary_without_zfs.py tests/manifest/test_fuzz_manifest.py "$@"
