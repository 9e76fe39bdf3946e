"""Running the INSTALLED `zverify cold ...` in subprocesses against the stand-in ZFS of
tools/zfsstandin.py (re-exported here: STREAMS, GUIDS, ZfsStandIn), and checking its documents."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.console import console_script, zverify
from tools.zfsstandin import GUIDS, STREAMS, ZfsStandIn

__all__ = [
    "GUIDS", "STREAMS", "ZfsStandIn", "end_group", "finish", "plain_env", "run", "start", "valid",
]  # fmt: skip

SCHEMAS = Path(__file__).parents[2] / "zverify" / "schemas"


def valid(schema: str, doc: Any) -> None:
    """doc is valid under zverify/schemas/SCHEMA (the schemas are closed: a key the renderer added
    without describing it fails here too)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    found = json.loads((SCHEMAS / schema).read_text())
    error = best_match(Draft202012Validator(found).iter_errors(doc))
    assert error is None, f"{schema}: at {error.json_path}: {error.message}"


def plain_env(**extra: str) -> dict[str, str]:
    """The environment of a command that needs no ZFS at all."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "LC_ALL": "C.UTF-8", **extra}


def start(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """The installed `zverify ARGS` in the background, in a session of its own (so that what
    it started can be ended with it, by its process group)."""
    return subprocess.Popen(
        [console_script(), *args],
        env=env,
        cwd="/",
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def run(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return zverify(*args, env=env, timeout=timeout)


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def end_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL what is left of the process group this test started (the stand-in zfs a
    killed zverify leaves behind)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
