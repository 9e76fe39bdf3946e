"""The only module that runs the `zfs` and `zpool` commands (and mounts snapshots).

Always with -H -p where the command takes them (tab-separated, exact numbers) and with a
timeout.  Two ways to call, chosen by what the answer is for:

* run() / run_zpool(): the answer decides a verdict (cutover checks, cold-storage chains),
  so every failure raises ZfsError with the command, its exit status and its stderr —
  a failed `zfs list` must end in exit 2, never in "nothing there";
* optional(): the answer is a hint (compression and recordsize beside a size table), so any
  failure is None and nothing else depends on it.
"""

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from typing import IO

from zverify.errors import ZfsError

SIZE_PROPERTIES = ("compression", "compressratio", "recordsize")
TIMEOUT = 120.0


def run(*args: str, timeout: float = TIMEOUT) -> str:
    """stdout of `zfs ARGS`; raises ZfsError on any failure."""
    return _run("zfs", args, timeout)


def run_zpool(*args: str, timeout: float = TIMEOUT) -> str:
    """stdout of `zpool ARGS`; raises ZfsError on any failure."""
    return _run("zpool", args, timeout)


def optional(*args: str, timeout: float = 30.0) -> str | None:
    """stdout of `zfs ARGS`, or None when zfs is absent or fails: for hints only."""
    try:
        return run(*args, timeout=timeout)
    except ZfsError:
        return None


def dataset_properties(dataset: str) -> dict[str, str] | None:
    """{'dataset': ..., 'compression': 'lz4', 'compressratio': '1.83', 'recordsize': '131072'}
    as a hint for the size explanation, or None."""
    out = optional("get", "-Hp", "-o", "property,value", ",".join(SIZE_PROPERTIES), dataset)
    if out is None:
        return None
    props = {"dataset": dataset}
    for line in out.splitlines():
        name, _, value = line.partition("\t")
        props[name] = value
    return props


@contextlib.contextmanager
def mounted_snapshot(snapshot: str) -> Iterator[str]:
    """A read-only mount of snapshot (`pool/ds@name`) on a new temporary directory, for a
    dataset that is not mounted itself (so `.zfs/snapshot` is out of reach); unmounted
    after.  A snapshot cannot change, so mounting it changes nothing on the pool."""
    import tempfile  # here: only the commands that run zfs pay for importing it

    with tempfile.TemporaryDirectory(prefix="zverify-snap-") as where:
        _run("mount", ("-t", "zfs", "-o", "ro", snapshot, where), TIMEOUT)
        try:
            yield where
        finally:
            _run("umount", (where,), TIMEOUT)


def _argv(program: str, args: tuple[str, ...] | list[str]) -> list[str]:
    """The full command line; raises ZfsError when the program is not installed."""
    path = shutil.which(program)
    argv = [path or program, *args]
    if path is None:
        raise ZfsError(argv, None, f"`{program}` not found on PATH (is OpenZFS installed?)")
    return argv


def _run(program: str, args: tuple[str, ...], timeout: float | None) -> str:
    argv = _argv(program, args)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ZfsError(argv, None, f"no answer within {timeout} s") from None
    except OSError as err:
        raise ZfsError(argv, None, err.strerror or str(err)) from None
    stdout, stderr = (b.decode("utf-8", "replace") for b in (done.stdout, done.stderr))
    if done.returncode != 0:
        raise ZfsError(argv, done.returncode, stderr.strip())
    return stdout


def popen(
    args: list[str],
    stdin: int | IO[bytes] = subprocess.DEVNULL,
    stdout: int | IO[bytes] = subprocess.PIPE,
    stderr: int | IO[bytes] = subprocess.PIPE,
) -> "subprocess.Popen[bytes]":
    """`zfs ARGS` started (by default with its stdout as a pipe, for `zfs send`); the caller
    waits and checks its exit status.  Raises ZfsError when zfs cannot be started."""
    argv = _argv("zfs", args)
    try:
        return subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr)
    except OSError as err:
        raise ZfsError(argv, None, err.strerror or str(err)) from None
