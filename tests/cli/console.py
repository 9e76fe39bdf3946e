"""The one way tests run the command line, in one of two modes.

- `zverify(*args)`: the INSTALLED console script in a subprocess, as migration scripts run
  it.  Use it for anything a script acts on (exit codes, what reaches the real stdout and
  stderr, signals, pipes, terminals): only the real entry point shows import failures, the
  exception classes of the installed typer and the flush at exit.
- `zverify_in_process(*args)`: the same root handler (`zverify.cli.run`, which maps every
  error to its exit code), called in the test's own process.  Use it where a subprocess per
  call is too slow (hundreds of documents checked against their schemas), and where the test
  must run the C core of the interpreter running pytest: under scripts/asan.sh the installed
  script is the main checkout's normal build, so subprocess tests skip there, while
  in-process ones run on the instrumented core.

Nothing else runs the CLI: not `python -m zverify` (it may import a different checkout than
the one installed), not a sub-app's typer command (it skips the root handler and so the exit
code rule).
"""

import functools
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def console_script() -> str:
    """Path of the installed `zverify`, checked to run this checkout (an editable install
    made from another clone would silently test other code)."""
    if os.environ.get("ZVERIFY_SANITIZE") == "1":  # so that no test forgets the mark below
        pytest.skip("sanitizer run: the installed `zverify` is the main checkout's normal build")
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


def zverify_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """`zverify ARGS` through the root handler in this process, its output captured: the
    same exit code as the installed script, its stdout and stderr as text (undecodable
    bytes as surrogates, as a UTF-8 locale's stdio does)."""
    from zverify.cli import run  # here: collecting the tests must not import the CLI

    captured = (io.BytesIO(), io.BytesIO())
    streams = [io.TextIOWrapper(b, "utf-8", "surrogateescape") for b in captured]
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = streams
    try:
        code = run(list(args))
        for stream in streams:
            stream.flush()
    finally:
        sys.stdout, sys.stderr = saved
    out, err = (b.getvalue().decode("utf-8", "surrogateescape") for b in captured)
    return subprocess.CompletedProcess(["zverify", *args], code, out, err)


# A process's peak RSS counts the memory of whatever it was forked from until its exec
# (vfork shares it), so zverify is started by a small interpreter, not by pytest, and that
# one reports zverify's own peak (wait4).
_PEAK_RSS = """
import os, sys
for fd, path in ((1, sys.argv[1]), (2, sys.argv[2])):
    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
_, status, usage = os.wait4(pid, 0)
os.write(os.open(sys.argv[1] + ".rss", os.O_WRONLY | os.O_CREAT, 0o600),
         f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}".encode())
"""


def zverify_peak_rss(*args: str, tmp: Path) -> tuple[int, bytes, bytes, float]:
    """(exit code, stdout, stderr, peak RSS in MB) of `zverify ARGS`, with no Traceback."""
    out, err = tmp / f"out-{time.monotonic_ns()}", tmp / f"err-{time.monotonic_ns()}"
    cmd = [sys.executable, "-S", "-c", _PEAK_RSS, str(out), str(err), console_script(), *args]
    subprocess.run(cmd, check=True, env=_env({}), cwd="/")
    code, peak_kb = map(int, Path(f"{out}.rss").read_text().split())
    assert b"Traceback" not in err.read_bytes(), err.read_text(errors="replace")
    return code, out.read_bytes(), err.read_bytes(), peak_kb / 1024


# scripts/asan.sh runs the tests in a scratch copy with an instrumented build, while the
# installed console script runs the main checkout's normal build: tests of the installed
# command skip there (the in-process ones still run under the sanitizers).
needs_installed_command = pytest.mark.skipif(
    os.environ.get("ZVERIFY_SANITIZE") == "1",
    reason="sanitizer run: the installed `zverify` is the main checkout's normal build",
)
