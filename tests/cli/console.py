"""Run the INSTALLED `zverify` console script, as migration scripts do.

The in-process app hides what only the real entry point shows: import failures, the
exception classes of the installed typer, what reaches the real stdout and stderr.
"""

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def console_script() -> str:
    """Path of the installed `zverify`, checked to run this checkout (an editable install
    made from another clone would silently test other code)."""
    path = shutil.which("zverify")
    assert path, "no `zverify` on PATH: run scripts/setup.sh (pip install -e '.[test]')"
    probe = subprocess.run(
        [path, "--version"], capture_output=True, text=True, env=_env({}), check=False
    )
    assert probe.returncode == 0, probe.stderr
    where = subprocess.run(
        [_interpreter(path), "-c", "import zverify; print(zverify.__file__)"],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    ).stdout.strip()
    if os.environ.get("ZVERIFY_TEST_INSTALLED") != "1":  # scripts/package.sh: a wheel's
        assert Path(where).resolve().is_relative_to(REPO), f"`zverify` runs {where}, not {REPO}"
    return path


def _interpreter(script: str) -> str:
    """The Python that runs a console script (pyenv shims are shell scripts: ask pyenv)."""
    first = Path(script).read_bytes().split(b"\n", 1)[0]
    if first.startswith(b"#!") and b"python" in first:
        return first[2:].decode().strip().split()[0]
    found = subprocess.run(["pyenv", "which", "zverify"], capture_output=True, text=True)
    return _interpreter(found.stdout.strip()) if found.returncode == 0 else "python3"


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "LC_ALL": "C.UTF-8", **extra}


def zverify(
    *args: str, env: dict[str, str] | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    """Run `zverify ARGS` from outside the checkout (so the checkout is not on sys.path)."""
    options: dict[str, object] = {"text": True, "cwd": "/"}
    options.update(kw)
    options.setdefault("stdout", subprocess.PIPE)
    options.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [console_script(), *args], env=_env(env or {}), check=False, **options
    )


# scripts/asan.sh runs the tests in a scratch copy with an instrumented build, while the
# installed console script runs the main checkout's normal build: tests of the installed
# command skip there (the in-process ones still run under the sanitizers).
needs_installed_command = pytest.mark.skipif(
    os.environ.get("ZVERIFY_SANITIZE") == "1",
    reason="sanitizer run: the installed `zverify` is the main checkout's normal build",
)
