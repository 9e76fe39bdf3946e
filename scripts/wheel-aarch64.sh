#!/usr/bin/env bash
# An aarch64 (arm64) wheel cross-compiled on x86-64 into dist/, from the sdist wheel.sh made,
# repaired by auditwheel, link-checked, then installed (with its dependencies' aarch64 wheels
# from PyPI) and smoke-tested under qemu-user by Debian's arm64 CPython: its libpython3.11
# (multiarch, beside the x86-64 one) behind a three-line main(), no arm64 root needed.
#
# The cross build runs this machine's CPython 3.11 with Debian's arm64 build description
# (_sysconfigdata of libpython3.11-dev:arm64: compiler, headers, extension suffix) and
# _PYTHON_HOST_PLATFORM for the wheel's tag; blake3_sources.py then picks the NEON kernel.
#
# It installs what it needs from Debian when run as root (the arm64 architecture is added to
# dpkg: a developer's machine is left alone unless it runs this): the cross compiler, arm64's
# Python and OpenSSL development files, qemu-user-static, b3sum.
set -euo pipefail
cd "$(dirname "$0")/.."
TRIPLET=aarch64-linux-gnu
SYSCONFIG=/usr/lib/python3.11/_sysconfigdata__linux_$TRIPLET.py
APT_PACKAGES=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross libpython3.11-dev:arm64 libssl-dev:arm64
    qemu-user-static b3sum)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "wheel-aarch64: need root to apt-get install ${missing[*]}" >&2; exit 2; }
    echo "wheel-aarch64: installing ${missing[*]}" >&2
    dpkg --add-architecture arm64
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$(python3 -c 'import sys; print(sys.version_info[:2] == (3, 11))')" = True ] || {
    echo "wheel-aarch64: needs CPython 3.11 as python3 (Debian 12's arm64 Python is 3.11)" >&2; exit 2; }
sdist=$(ls dist/zverify-*.tar.gz 2>/dev/null) || { echo "wheel-aarch64: no sdist: run scripts/wheel.sh" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/tools"
"$work/tools/bin/pip" -q --disable-pip-version-check install 'build>=1.2,<2' \
    'setuptools>=77,<81' 'wheel>=0.43,<1' 'auditwheel>=6.4,<6.8'
mkdir "$work/sysconfig" "$work/src"
cp "$SYSCONFIG" "$work/sysconfig/"
tar -xzf "$sdist" -C "$work/src"

# Built without isolation: an isolated build would run pip itself under arm64's sysconfig.
(
    cd "$work"/src/zverify-*
    export _PYTHON_HOST_PLATFORM=linux-aarch64 \
        _PYTHON_SYSCONFIGDATA_NAME=_sysconfigdata__linux_$TRIPLET \
        PYTHONPATH="$work/sysconfig" ZVERIFY_STATIC_CRYPTO=1
    "$work/tools/bin/python" -m build --wheel --no-isolation --skip-dependency-check \
        --outdir "$work/raw" . > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
)
raw=$(ls "$work"/raw/zverify-*aarch64.whl)
"$work/tools/bin/auditwheel" repair --wheel-dir "$work/repaired" \
    "$raw" > "$work/repair.log" 2>&1 || { cat "$work/repair.log" >&2; exit 1; }
wheel=$(ls "$work"/repaired/zverify-*aarch64.whl)

# Link check: the module's undefined symbols must all come from libc or libpython (the
# interpreter), never from a library the wheel does not carry (blake3_hash_many_neon was).
(cd "$work" && mkdir check && cd check && python3 -m zipfile -e "$wheel" .)
so=$(ls "$work"/check/zverify/_zvcore*.so)
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in  # glibc's two parts (ld.so has __tls_get_addr), nothing else
    "libc.so.6 " | "libc.so.6 ld-linux-aarch64.so.1 ") ;;
    *) echo "wheel-aarch64: _zvcore needs $needed" >&2; exit 1 ;;
esac
readelf --dyn-syms -W "$so" | awk '$7 == "UND" && $8 != "" {print $8}' | sort -u > "$work/undefined"
python_api=$(grep -cE '^_?Py' "$work/undefined" || true)
others=$(grep -vE '^_?Py|@GLIBC_|^__gmon_start__$|^_ITM_|^__cxa_finalize' "$work/undefined" || true)
[ -z "$others" ] || { echo "wheel-aarch64: undefined, from no library: $others" >&2; exit 1; }
for notice in xxHash BLAKE3 OpenSSL; do
    [ -s "$work/check/zverify/licenses/$notice.txt" ] || { echo "wheel-aarch64: no $notice licence" >&2; exit 1; }
done
cp "$wheel" dist/
echo "wheel-aarch64: $(basename "$wheel"): NEEDED $needed;" \
    "undefined: $python_api Python API symbols, the rest versioned glibc"

# Smoke test under emulation: what runs is the wheel as pip installs it on an arm64 machine.
arm64=$work/arm64 && mkdir "$arm64"
printf '#include <Python.h>\nint main(int c, char **v) { return Py_BytesMain(c, v); }\n' > "$arm64/main.c"
"$TRIPLET-gcc" -I/usr/include/python3.11 "$arm64/main.c" -o "$arm64/python3" -lpython3.11
"$work/tools/bin/pip" -q --disable-pip-version-check install --target "$arm64/site" \
    --platform manylinux_2_34_aarch64 --platform manylinux_2_17_aarch64 --only-binary=:all: \
    --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none "dist/$(basename "$wheel")"
zv() { PYTHONPATH="$arm64/site" qemu-aarch64-static "$arm64/python3" -P -m zverify "$@"; }  # -P: not the checkout
kernels=$(zv --version | grep -E '^(xxh3-128|blake3):' | tr '\n' ' ')
echo "wheel-aarch64: under qemu: $kernels"
case "$kernels" in *"neon kernel"*"neon kernel"*) ;; *) echo "wheel-aarch64: not NEON" >&2; exit 1 ;; esac

# Sizes around BLAKE3's 1 KiB chunks and XXH3's stripes and blocks, several chunks at once
# (hash_many, the NEON kernel); checked by b3sum and sha256sum on this x86-64 machine, and
# XXH3 by this machine's zverify when it is on PATH (scripts/setup.sh installs it).
tree=$work/tree && mkdir "$tree"
for n in 0 1 63 64 240 241 1023 1024 1025 4096 65543 1048579; do head -c "$n" /dev/urandom > "$tree/f$n"; done
log=$work/smoke.log  # manifest's notes on what a checkfile cannot express, or the error
(cd "$tree" && zv manifest -q --format b3sum --hash blake3 -o "$work/b3" . 2>>"$log" \
    && b3sum --check --quiet "$work/b3") || { cat "$log" >&2; exit 1; }
(cd "$tree" && zv manifest -q --format sha256sum -o "$work/sha" . 2>>"$log" \
    && sha256sum --check --quiet "$work/sha") || { cat "$log" >&2; exit 1; }
zv manifest -q -o "$work/native.zvm" "$tree" 2>>"$log" || { cat "$log" >&2; exit 1; }
host=skipped
if zverify --version >/dev/null 2>&1; then
    zverify compare --no-progress "$tree" "$work/native.zvm" > /dev/null && host="this machine's zverify"
fi
echo changed >> "$tree/f1025"
rc=0 && zv compare --no-progress "$tree" "$work/native.zvm" > /dev/null || rc=$?
[ "$rc" = 1 ] || { echo "wheel-aarch64: a changed file gave exit $rc under qemu, not 1" >&2; exit 1; }
echo "wheel-aarch64: under qemu: BLAKE3 and SHA-256 agree with b3sum and sha256sum," \
    "XXH3 with x86-64 (${host/skipped/skipped: no working zverify on PATH}), a change is exit 1"
