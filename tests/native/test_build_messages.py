"""A source build on a machine without a header stops with one line naming the Debian package
(setup.py), not with the compiler's errors: build-essential alone lacks all three.

The header really is absent: a private mount namespace (unshare -m, root only) puts an empty
tmpfs over the directory holding it, and setup.py runs as pip would run it.
"""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests import namespaces

REPO = Path(__file__).resolve().parents[2]


pytestmark = namespaces.needed("to hide headers")


@pytest.mark.parametrize(
    ("hidden", "header", "package"),
    [
        (sysconfig.get_path("include"), "Python.h", "python3-dev"),
        ("/usr/include", "xxhash.h", "libxxhash-dev"),  # (the first header setup.py looks for)
    ],
)
def test_a_missing_header_names_its_package(
    hidden: str, header: str, package: str, tmp_path: Path
) -> None:
    build = [sys.executable, "setup.py", "-q", "build_ext", "--build-temp", str(tmp_path / "t")]
    build += ["--build-lib", str(tmp_path / "lib")]
    shell = f'mount -t tmpfs none "{hidden}" && exec "$@"'
    # asan.sh preloads the sanitizer runtimes and asks for an instrumented build: a plain one
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ZVERIFY_SANITIZE")}
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", shell, "sh", *build],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    install = f"install {package} (apt-get install {package}) and build again"
    assert last == f"zverify: {header} not found: {install}"
    assert not list((tmp_path / "lib").rglob("*.so"))
