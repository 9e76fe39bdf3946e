"""zverify installed the way a user installs it, for benchmarks that time the whole command.

`pip install -e .` in a development tree (and PYTHONDONTWRITEBYTECODE, set on some CI
machines) makes Python compile every module from source on every run, and an editable
install adds its own import hook: start-up measured there is not what users get.  This
module builds a plain `pip install .` into a venv under the bench scratch directory, keyed
by a digest of the sources, and returns the path of its console script.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "setup.py", "zverify", "native")


def source_digest() -> str:
    """A digest of every file pip would build from, so a stale venv is never reused."""
    digest = hashlib.sha256()
    for top in SOURCES:
        path = REPO / top
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in files:
            if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".so":
                digest.update(str(file.relative_to(REPO)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def installed_zverify(scratch: Path, extras: str = "") -> Path:
    """The `zverify` console script of a venv holding a non-editable install of this tree
    (with the optional dependencies of extras, e.g. "mpi")."""
    venv = scratch / f"venv-{source_digest()}{'-' + extras if extras else ''}"
    script = venv / "bin" / "zverify"
    if script.exists():
        return script
    print(f"installing zverify into {venv} (pip install .) ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, f"{REPO}[{extras}]" if extras else str(REPO)], check=True, env=env)
    return script
