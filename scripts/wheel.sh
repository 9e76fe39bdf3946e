#!/usr/bin/env bash
# Binary wheels into dist/: the sdist, a wheel built from that sdist alone (so a file
# MANIFEST.in forgot breaks here), repaired by auditwheel into a manylinux wheel.
#
# xxHash and BLAKE3 are compiled in from Debian's packages and libcrypto is linked
# statically (ZVERIFY_STATIC_CRYPTO=1), so the module must need nothing but libc: this
# script checks that, and that auditwheel grafted nothing.
#
#   bash scripts/wheel.sh                    # this machine's Python 3 (python3)
#   ZVERIFY_WHEEL_PYTHONS="python3.11 python3.12" bash scripts/wheel.sh
#
# Needs: the build packages of scripts/setup.sh, python3-venv and Debian's patchelf.  auditwheel
# and build come from PyPI: auditwheel 6.4.2 and 6.7.0 were tried (older ones repair to
# manylinux_2_5 unless told the tag, 6.8 wants patchelf 0.14.5 and Debian 12 has 0.14.3).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v patchelf >/dev/null || { echo "wheel: patchelf not found: apt-get install patchelf" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/tools"
pip=("$work/tools/bin/pip" -q --disable-pip-version-check)
"${pip[@]}" install 'build>=1.2,<2' 'auditwheel>=6.4,<6.8'

mkdir -p dist
rm -f dist/zverify-*.tar.gz dist/zverify-*.whl  # no stale wheel of an older build is reported
"$work/tools/bin/python" -m build --sdist --outdir dist . > "$work/sdist.log" 2>&1 \
    || { cat "$work/sdist.log" >&2; exit 1; }
sdist=$(ls dist/zverify-*.tar.gz)

# Libraries any manylinux system has; anything else NEEDED is a library a user must hunt for.
SYSTEM_LIBS=" libc.so.6 libm.so.6 libpthread.so.0 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 "

check_needed() {  # $1: a repaired wheel
    rm -rf "$work/check" && mkdir "$work/check"
    (cd "$work/check" && python3 -m zipfile -e "$1" .)
    if [ -d "$work/check/zverify.libs" ]; then
        echo "wheel: auditwheel grafted libraries into $(basename "$1"): $(ls "$work/check/zverify.libs")" >&2
        exit 1
    fi
    local so needed lib
    so=$(ls "$work"/check/zverify/_zvcore*.so)
    needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    for lib in $needed; do
        case "$SYSTEM_LIBS" in
            *" $lib "*) ;;
            *) echo "wheel: $(basename "$1") needs $lib at run time" >&2; exit 1 ;;
        esac
    done
    for notice in xxHash BLAKE3 OpenSSL; do  # their licences ask a binary to carry them
        [ -s "$work/check/zverify/licenses/$notice.txt" ] \
            || { echo "wheel: $(basename "$1") lacks zverify/licenses/$notice.txt" >&2; exit 1; }
    done
    echo "wheel: $(basename "$1"): _zvcore needs only $(echo $needed); licences of the code inside"
}

for python in ${ZVERIFY_WHEEL_PYTHONS:-python3}; do
    rm -rf "$work/raw"
    # --no-build-isolation would build with whatever setuptools $python has: isolate it.
    ZVERIFY_STATIC_CRYPTO=1 "$python" -m pip -q --disable-pip-version-check wheel --no-deps \
        --wheel-dir "$work/raw" "$sdist"
    raw=$(ls "$work"/raw/zverify-*.whl)
    "$work/tools/bin/auditwheel" -v repair --wheel-dir "$work/repaired" "$raw" > "$work/repair.log" 2>&1 \
        || { cat "$work/repair.log" >&2; exit 1; }
    wheel=$(ls -t "$work"/repaired/zverify-*.whl | head -1)
    check_needed "$wheel"
    mv "$wheel" dist/
done
ls -l dist/zverify-*
