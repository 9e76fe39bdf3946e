"""Where the BLAKE3 C sources come from, for setup.py and the sanitizer scripts.

zverify does not carry a copy of BLAKE3: it compiles the official C implementation that
Debian packages in librust-blake3-dev (/usr/share/cargo/registry/blake3-*/c), with its
runtime SIMD dispatch and the assembly kernels for x86-64, or the NEON kernel for aarch64
(where blake3_dispatch.c calls it unconditionally).  ZVERIFY_BLAKE3_SRC may name another
copy of that `c` directory (another distribution, or a checkout of BLAKE3).

The machine is the one the build is for: sysconfig's platform, which a cross build sets
through _PYTHON_HOST_PLATFORM (scripts/wheel-aarch64.sh), else this machine's.

    python3 native/blake3_sources.py    # prints the gcc arguments: -I, -D and source files
"""

import glob
import os
import sys
import sysconfig

PACKAGED = "/usr/share/cargo/registry/blake3-*/c"
# The assembly kernels need no per-file -m flags (the C intrinsics versions would).
X86_64_ASM = ("sse2", "sse41", "avx2", "avx512")
# Elsewhere the dispatcher must not look for the x86 ones; aarch64 adds NEON.
NO_X86 = ("BLAKE3_NO_SSE2", "BLAKE3_NO_SSE41", "BLAKE3_NO_AVX2", "BLAKE3_NO_AVX512")


def _version(path: str) -> tuple[int, ...]:
    name = os.path.basename(os.path.dirname(path)).removeprefix("blake3-")
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def source_dir() -> str:
    packaged = max(glob.glob(PACKAGED), key=_version, default="")
    chosen = os.environ.get("ZVERIFY_BLAKE3_SRC") or packaged
    if not chosen or not os.path.isfile(os.path.join(chosen, "blake3.h")):
        sys.exit(
            "zverify: the BLAKE3 C sources were not found: install Debian's librust-blake3-dev "
            "(apt-get install librust-blake3-dev) or set ZVERIFY_BLAKE3_SRC to the `c` "
            "directory of a BLAKE3 release"
        )
    return chosen


def target_machine() -> str:
    return sysconfig.get_platform().rsplit("-", 1)[-1]  # linux-x86_64, linux-aarch64


def sources(directory: str) -> list[str]:
    portable = ("blake3.c", "blake3_dispatch.c", "blake3_portable.c")
    files = [os.path.join(directory, name) for name in portable]
    machine = target_machine()
    if machine in ("x86_64", "amd64"):
        files += [os.path.join(directory, f"blake3_{k}_x86-64_unix.S") for k in X86_64_ASM]
    elif machine == "aarch64":
        files.append(os.path.join(directory, "blake3_neon.c"))
    return files


def macros() -> list[str]:
    return [] if target_machine() in ("x86_64", "amd64") else list(NO_X86)


if __name__ == "__main__":
    where = source_dir()
    print(" ".join([f"-I{where}", *(f"-D{m}" for m in macros()), *sources(where)]))
