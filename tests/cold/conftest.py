"""Fixtures of the cold-storage tests: the LD_PRELOAD shim of coldshim.c, built with gcc."""

from pathlib import Path

import pytest

from tests.faults.helpers import build_preload_shim

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def coldshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("coldshim") / "coldshim.so"
    return build_preload_shim(HERE / "coldshim.c", out)
