"""Declares the one C extension, zverify._zvcore; everything else is in pyproject.toml."""

import os
from glob import glob

from setuptools import Extension, setup

# ZVERIFY_SANITIZE=1 builds the test variant with AddressSanitizer and UBSan.
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
sanitize = os.environ.get("ZVERIFY_SANITIZE") == "1"

zvcore = Extension(
    "zverify._zvcore",
    sources=sorted(glob("native/src/*.c") + glob("native/py/*.c")),
    include_dirs=["native/include", "native/src"],
    libraries=["xxhash"],
    extra_compile_args=["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"]
    + (SANITIZE if sanitize else []),
    extra_link_args=["-pthread"] + (SANITIZE if sanitize else []),
)

setup(ext_modules=[zvcore])
