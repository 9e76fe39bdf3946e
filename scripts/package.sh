#!/usr/bin/env bash
# The path a user's install takes: scripts/wheel.sh builds the sdist and, from it alone, the
# repaired wheel in dist/; this script installs that wheel, with the `test` extra only (the
# core install, no mpi/s3 extras), into a fresh venv on a machine without the build packages,
# and runs the CLI tests against the installed console script, from a directory holding the
# tests but not the source (so nothing is imported from the checkout).
#
# "Without the build packages" is a mount namespace (unshare -m, needs root) in which the
# compiler, the C and Python headers and the xxHash/OpenSSL development files are hidden.
# Inside it, a nested namespace also hides the run-time libxxhash.so.0 and libcrypto.so.3 and
# runs the installed command on real trees with every C hasher: the wheel must not need them.
# (The CLI tests run with those two visible: rsync, which they run as the real copier, links
# both.)  Each hidden thing is shown to be hidden before use.
set -euo pipefail
cd "$(dirname "$0")/.."

# Bind an empty thing over each existing path, so it cannot be run or read.  A symbolic link
# cannot be covered, only its target: the libxxhash.so and libcrypto.so of the -dev packages
# point at the run-time libraries, hidden (with the linker) after pip has used TLS.
hide() {
    local path real
    for path in "$@"; do
        [ -e "$path" ] || continue
        real=$(readlink -f "$path")
        if [ -d "$real" ]; then
            mount -t tmpfs -o ro,size=4k none "$real"
        else
            mount --bind /dev/null "$real"
        fi
    done
}

# The installed command without libxxhash.so.0 and libcrypto.so.3 (the wheel's C core has
# both compiled in): its version, and a compare with each C hasher of a copy made by cp -a.
if [ "${1:-}" = "--without-libraries" ]; then
    work=$2 libdir=$3
    hide "$libdir"/libxxhash.so.0 "$libdir"/libcrypto.so.3 "$libdir"/libssl.so.3
    for lib in libxxhash.so.0 libcrypto.so.3; do
        if python3 -c "import ctypes; ctypes.CDLL('$lib')" 2>/dev/null; then
            echo "package: $lib is still loadable" >&2
            exit 1
        fi
    done
    zv="$work/venv/bin/zverify"
    mkdir -p "$work/trees/src/sub" && echo one > "$work/trees/src/a" && echo two > "$work/trees/src/sub/b"
    cp -a "$work/trees/src" "$work/trees/dst"
    for algo in xxh3-128 blake3 sha256 sha512; do
        "$zv" compare --no-progress --hash "$algo" "$work/trees/src" "$work/trees/dst" >/dev/null
    done
    echo three > "$work/trees/dst/a"
    rc=0 && "$zv" compare --no-progress --hash sha256 "$work/trees/src" "$work/trees/dst" >/dev/null || rc=$?
    [ "$rc" = 1 ] || { echo "package: a changed file gave exit $rc, not 1" >&2; exit 1; }
    echo "package: no libxxhash.so.0 or libcrypto.so.3: $("$zv" --version | head -2 | tr '\n' ' ')" \
        "compared a copy with xxh3-128, blake3, sha256 and sha512 (exit 0), a change (exit 1)"
    exit
fi

if [ "${1:-}" = "--in-namespace" ]; then
    work=$2 wheel=$3
    multiarch=$(gcc -print-multiarch)
    libdir=/usr/lib/$multiarch
    pyinclude=$(python3 -c 'import sysconfig; print(sysconfig.get_path("include"))')
    hide /usr/include /usr/local/include /usr/lib/gcc "$pyinclude" \
        /usr/bin/*gcc* /usr/bin/*g++* /usr/bin/cc /usr/bin/c++ /usr/bin/cpp /usr/bin/ld \
        /usr/bin/*-ld /usr/bin/as /usr/bin/*-as /usr/bin/clang* \
        "$libdir"/libxxhash.a "$libdir"/libcrypto.a "$libdir"/libssl.a
    if cc --version >/dev/null 2>&1 || gcc --version >/dev/null 2>&1 || [ -s /usr/include/stdio.h ] \
        || [ -s "$pyinclude/Python.h" ]; then
        echo "package: the compiler or the headers are still visible" >&2
        exit 1
    fi
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" -q --disable-pip-version-check install "$wheel[test]"

    echo "package: no cc, no headers; installed $(basename "$wheel")"
    unshare -m bash "$0" --without-libraries "$work" "$libdir"
    cd "$work/run"
    ZVERIFY_TEST_INSTALLED=1 PATH="$work/venv/bin:$PATH" "$work/venv/bin/python" -m pytest -q \
        -p no:cacheprovider tests/cli
    exit
fi

bash scripts/wheel.sh
sdist=$(ls dist/zverify-*.tar.gz)
wheel=$(ls "$PWD"/dist/zverify-*-"$(python3 -c 'import sys; print(f"cp{sys.version_info.major}{sys.version_info.minor}")')"-*x86_64.whl)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -tzf "$sdist" > "$work/contents"  # (grep -q on a pipe would SIGPIPE tar under pipefail)
for needed in native/include/zvcore.h native/src/zv_traverse.h LICENSE docs/zverify.1 zverify/schemas/compare.schema.json; do
    grep -q "/$needed\$" "$work/contents" || { echo "package: $needed missing from the sdist" >&2; exit 1; }
done
mkdir "$work/run"
cp -r tests docs tools "$work/run/"  # docs: the JSON Schemas and the man page the tests check;
# tools: tests/conftest.py asks tools/zfsvm whether real ZFS is reachable (the header line)
mkdir "$work/run/scripts" && cp scripts/manpage.py scripts/completions.py "$work/run/scripts/"
cp pyproject.toml "$work/run/"  # pytest's configuration (markers), not the package
unshare -m bash "$0" --in-namespace "$work" "$wheel"
