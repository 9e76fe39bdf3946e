"""A stand-in `zfs` on PATH for failure injection at the command boundary (the real sends
and receives run in tests/zfs/)."""

import os
from pathlib import Path

import pytest


def install(mp: pytest.MonkeyPatch, tmp_path: Path, script: str) -> None:
    """Put an sh script named `zfs` first on PATH for this test."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "zfs").write_text(f"#!/bin/sh\n{script}")
    (bindir / "zfs").chmod(0o755)
    mp.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
