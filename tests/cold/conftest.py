"""Fixtures of the cold-storage tests: the LD_PRELOAD shim of coldshim.c, built with gcc."""

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def coldshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not found: cannot build the LD_PRELOAD shim")
    out = tmp_path_factory.mktemp("coldshim") / "coldshim.so"
    flags = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"]
    built = subprocess.run(
        [gcc, *flags, "-o", str(out), str(HERE / "coldshim.c"), "-ldl"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, f"coldshim.c does not build cleanly:\n{built.stderr}"
    return out
