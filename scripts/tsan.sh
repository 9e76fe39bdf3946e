#!/usr/bin/env bash
# Build the C walker with ThreadSanitizer into a small C driver (tests/native/walkdump.c, public
# API only) and run tests/native/test_walkdump.py with it: any data race between the walker
# thread, the hashing workers, zv_walk_stop and the consumer fails the run.
# Only the driver is instrumented.  Preloading libtsan into an uninstrumented CPython is fragile
# (address-space checks, reports about Python's own threads), so Python merely runs the tests.
# Like asan.sh this works on a scratch copy of the committed tree, with its own normal build of
# the extension (the tests compare the driver with zverify._zvcore.Walker of the same sources).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git archive HEAD -- . ':!tests/data' | tar -x -C "$scratch"
cd "$scratch"
python3 setup.py -q build_ext --inplace >/dev/null
mkdir .tsan
gcc -std=gnu11 -fsanitize=thread -g -O1 -pthread -Wall -Wextra -Werror \
    -Inative/include -Inative/src tests/native/walkdump.c native/src/*.c $(python3 native/blake3_sources.py) -lxxhash -lcrypto \
    -o .tsan/walkdump
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
driver="$scratch/.tsan/walkdump"
# gcc 12's TSan aborts on address-space layouts it does not expect ("unexpected memory mapping",
# high mmap randomization on recent kernels); without randomization it runs.
mkdir .tsan/empty
if ! "$driver" .tsan/empty >/dev/null 2>.tsan/probe.err; then
    if ! grep -q "unexpected memory mapping" .tsan/probe.err; then
        cat .tsan/probe.err >&2
        exit 1
    fi
    driver="setarch $(uname -m) -R $driver"
    echo "tsan: running the driver with address randomization off (setarch -R)" >&2
fi
ZVERIFY_WALKDUMP="$driver" python3 -m pytest -q -p no:cacheprovider tests/native/test_walkdump.py "$@"
