"""Declares the one C extension, zverify._zvcore; everything else is in pyproject.toml."""

import os
import sys
import tempfile
from glob import glob

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "native"))
import blake3_sources  # native/, beside this file

# ZVERIFY_SANITIZE=1 builds the test variant with AddressSanitizer and UBSan.
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
sanitize = os.environ.get("ZVERIFY_SANITIZE") == "1"

# ZVERIFY_STATIC_CRYPTO=1 (scripts/wheel.sh) links OpenSSL's libcrypto.a into the module:
# a wheel then needs nothing but libc, and its copy of libcrypto is hidden from the process
# (--exclude-libs), so it can never be mixed up with the libcrypto.so.3 that Python's hashlib
# loads.  A source build links the machine's libcrypto.so.3, which the distribution patches.
static_crypto = os.environ.get("ZVERIFY_STATIC_CRYPTO") == "1"
CRYPTO = [":libcrypto.a"] if static_crypto else ["crypto"]
HIDE_STATIC = ["-Wl,--exclude-libs,ALL"] if static_crypto else []


def require_header(header: str, package: str, compiler: object) -> None:
    """Stop with one line naming the Debian package, not 100 lines of compiler errors."""
    probe = f"#include <{header}>\nint main(void) {{ return 0; }}\n"
    with tempfile.TemporaryDirectory() as scratch:
        source = os.path.join(scratch, "probe.c")
        with open(source, "w") as f:
            f.write(probe)
        saved = os.dup(2)  # the compiler is a child process: silence fd 2 itself
        try:
            with open(os.devnull, "w") as quiet:
                os.dup2(quiet.fileno(), 2)
                compiler.compile([source], output_dir=scratch)  # type: ignore[attr-defined]
        except CompileError:
            os.dup2(saved, 2)
            sys.exit(
                f"zverify: {header} not found: install {package} "
                f"(apt-get install {package}) and build again"
            )
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def notices(blake3_dir: str) -> dict[str, list[str]]:
    """The licence texts of the code compiled into the module, which a binary must carry
    (xxHash: BSD-2-Clause; BLAKE3 and OpenSSL: Apache-2.0), as Debian ships them."""
    found = {
        "xxHash.txt": ["/usr/share/doc/libxxhash-dev/copyright"],
        "BLAKE3.txt": [os.path.join(os.path.dirname(blake3_dir), "LICENSE")],
    }
    if static_crypto:
        debian = ["/usr/share/doc/libssl-dev/copyright", "/usr/share/common-licenses/Apache-2.0"]
        found["OpenSSL.txt"] = debian
    return {name: files for name, files in found.items() if all(map(os.path.isfile, files))}


class BuildWithBlake3(build_ext):
    """Compiles the packaged BLAKE3 C sources into the extension at build time.  They live
    outside the tree, and setuptools refuses absolute paths among an extension's sources
    (it lists those in the sdist), so they are compiled here and linked as objects; their
    x86-64 kernels are .S files, which setuptools does not compile by default."""

    def build_extensions(self) -> None:
        require_header("xxhash.h", "libxxhash-dev", self.compiler)
        require_header("openssl/evp.h", "libssl-dev", self.compiler)
        # Debian's Python keeps its headers apart; build-essential does not bring them
        require_header("Python.h", "python3-dev", self.compiler)
        self.compiler.src_extensions.append(".S")
        where = blake3_sources.source_dir()
        for ext in self.extensions:
            ext.include_dirs.append(where)
            ext.define_macros += [(name, "1") for name in blake3_sources.macros()]
            ext.extra_objects += self.compiler.compile(
                blake3_sources.sources(where),
                output_dir=os.path.join(self.build_temp, "blake3"),
                macros=ext.define_macros,
                include_dirs=ext.include_dirs,
                # upstream's code, warnings and all (an unused function on aarch64)
                extra_postargs=[a for a in ext.extra_compile_args if a != "-Werror"],
            )
        super().build_extensions()
        if not self.inplace:  # a wheel: zverify/licenses/ beside the module
            self.write_notices(notices(where))

    def write_notices(self, texts: dict[str, list[str]]) -> None:
        folder = os.path.join(self.build_lib, "zverify", "licenses")
        os.makedirs(folder, exist_ok=True)
        for name, files in texts.items():
            with open(os.path.join(folder, name), "w") as out:
                for path in files:
                    with open(path) as f:
                        out.write(f"==> {path} <==\n{f.read()}\n")


zvcore = Extension(
    "zverify._zvcore",
    sources=sorted(glob("native/src/*.c") + glob("native/py/*.c")),
    include_dirs=["native/include", "native/src"],
    libraries=CRYPTO,
    extra_compile_args=["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"]
    + (SANITIZE if sanitize else []),
    extra_link_args=["-pthread", *HIDE_STATIC] + (SANITIZE if sanitize else []),
)

setup(ext_modules=[zvcore], cmdclass={"build_ext": BuildWithBlake3})
