#!/usr/bin/env bash
# Install what zverify needs on a fresh Debian 12 machine and build the C core.
# Idempotent: packages already present are not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
    build-essential libxxhash-dev        # the C core: XXH3 ...
    librust-blake3-dev                   # ... and BLAKE3's official C sources (setup.py)
    libssl-dev                           # ... and SHA-256/SHA-512 (OpenSSL's libcrypto)
    patchelf                             # scripts/wheel.sh: auditwheel repair checks for it
    rsync tar coreutils attr acl         # real copies and metadata tools in tests
    strace                               # tests: which files a walk opens and reads; kills at a syscall
    faketime                             # tests: a scrub run while the clock was years ahead
    e2fsprogs xfsprogs btrfs-progs       # loop-mounted filesystem images in tests
    hashdeep rclone b3sum xxhash time    # peers measured side by side in bench/
    mtree-netbsd libarchive-tools        # mtree specs: exported, read back, benchmarked
    qemu-system-x86 debootstrap          # tools/zfsvm: real OpenZFS in a qemu VM
    libfuse3-dev fuse3                   # tests/faults/faultfs.c: device faults over FUSE
    par2                                 # tests: stock par2cmdline verifies zverify's parity
    openmpi-bin libopenmpi-dev           # compare --mpi: mpirun, and the MPI mpi4py binds
    zsh fish                             # tests: the completion files in their own shells
    systemd                              # tests: systemd-analyze verifies the shipped units
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: need root to apt-get install ${missing[*]}" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# setup.py build_ext (the sanitizer builds) runs the machine's setuptools: it must read
# pyproject.toml's SPDX license string, which needs setuptools 77.
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore 'setuptools>=77,<81'
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test,mpi,s3,parity]'
