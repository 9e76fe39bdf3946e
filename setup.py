"""Declares the one C extension, zverify._zvcore; everything else is in pyproject.toml."""

import os
import sys
from glob import glob

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "native"))
import blake3_sources  # native/, beside this file

# ZVERIFY_SANITIZE=1 builds the test variant with AddressSanitizer and UBSan.
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
sanitize = os.environ.get("ZVERIFY_SANITIZE") == "1"
blake3_dir = blake3_sources.source_dir()


class BuildWithAssembly(build_ext):
    """BLAKE3's x86-64 kernels are .S files, which setuptools does not compile by default."""

    def build_extensions(self) -> None:
        self.compiler.src_extensions.append(".S")
        super().build_extensions()


zvcore = Extension(
    "zverify._zvcore",
    sources=sorted(glob("native/src/*.c") + glob("native/py/*.c"))
    + blake3_sources.sources(blake3_dir),
    include_dirs=["native/include", "native/src", blake3_dir],
    define_macros=[(name, "1") for name in blake3_sources.macros()],
    libraries=["xxhash"],
    extra_compile_args=["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"]
    + (SANITIZE if sanitize else []),
    extra_link_args=["-pthread"] + (SANITIZE if sanitize else []),
)

setup(ext_modules=[zvcore], cmdclass={"build_ext": BuildWithAssembly})
