"""Faults injected at the failure points of the C core (LD_PRELOAD shim.c), through the
installed console script: every failure ends in exit 2, never in a verdict.

The shim fails the N-th allocation, or the N-th xattr listing, made by _zvcore itself;
sweeping N over every call of a whole run reaches every allocation site the run passes.
"""

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.treebuilder import write

HERE = Path(__file__).parent

pytestmark = pytest.mark.skipif(
    os.environ.get("ZVERIFY_SANITIZE") == "1",
    reason="sanitizer run: the sanitizer runtime owns malloc, and the installed `zverify` is "
    "the main checkout's normal build",
)


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found: cannot build the fault-injection shim")
    out = tmp_path_factory.mktemp("shim") / "shim.so"
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror"]
    subprocess.run([*cmd, "-o", str(out), str(HERE / "shim.c"), "-ldl"], check=True)
    return out


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("trees")
    src = root / "src"
    for i in range(3):
        write(src / f"f{i}", f"file {i}\n".encode())
        write(src / "d1" / "d2" / f"g{i}", b"x" * (i * 1000))
    os.symlink("f1", src / "link")
    os.mkfifo(src / "fifo")
    os.setxattr(src / "f1", "user.origin", b"here")
    os.setxattr(src / "d1", "user.dir", b"1")
    subprocess.run(["cp", "-a", str(src), str(root / "dst")], check=True)
    return str(src), str(root / "dst")


def faulty(
    shim: Path, tmp_path: Path, fault: dict[str, str], *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, int]]:
    """Run `zverify ARGS` with the shim; also return what fired / was counted."""
    log = tmp_path / f"fault-{len(list(tmp_path.iterdir()))}.log"
    env = {"LD_PRELOAD": str(shim), "ZV_FAULT_LOG": str(log), **fault}
    done = zverify(*args, env=env)
    seen: dict[str, int] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        what, kind, n = line.split()
        seen[f"{what} {kind}"] = int(n)
    return done, seen


def assert_not_a_verdict(done: subprocess.CompletedProcess[str], why: str) -> None:
    assert done.returncode == 2, f"{why}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    assert "IDENTICAL" not in done.stdout and "DIFFERENT" not in done.stdout, why
    assert "Traceback" not in done.stderr, why


def sweep(count: int) -> Iterator[int]:
    """Every call up to 60, then a stride: every site of this small run is passed early."""
    yield from range(1, min(count, 60) + 1)
    yield from range(61, count + 1, 5)


def test_shim_alone_changes_nothing(shim: Path, trees: tuple[str, str], tmp_path: Path) -> None:
    done, seen = faulty(shim, tmp_path, {}, "compare", "-q", "--threads", "1", *trees)
    assert done.returncode == 0 and "IDENTICAL" in done.stdout
    assert seen["count malloc"] > 20  # the shim does see the core's allocations
    assert seen["count listxattr"] >= 2


def test_every_failed_allocation_ends_in_exit_2(
    shim: Path, trees: tuple[str, str], tmp_path: Path
) -> None:
    args = ("compare", "-q", "--threads", "1", *trees)
    _, counted = faulty(shim, tmp_path, {}, *args)
    fired = 0
    for n in sweep(counted["count malloc"]):
        done, seen = faulty(shim, tmp_path, {"ZV_FAULT_MALLOC": str(n)}, *args)
        if "fired malloc" not in seen:
            assert done.returncode == 0, f"allocation {n} did not fire, yet exit {done.returncode}"
            continue
        fired += 1
        assert_not_a_verdict(done, f"allocation {n} failed")
    assert fired >= 20


def test_failed_allocation_with_json_is_exit_2(
    shim: Path, trees: tuple[str, str], tmp_path: Path
) -> None:
    for n in (1, 5, 12, 25):
        done, seen = faulty(
            shim, tmp_path, {"ZV_FAULT_MALLOC": str(n)}, "compare", "--json", "--threads", "1",
            *trees,
        )  # fmt: skip
        assert "fired malloc" in seen and done.returncode == 2
        if done.stdout:  # a per-entry error: a document that says so
            assert json.loads(done.stdout)["exit_code"] == 2
        else:  # the walk could not finish: no document at all, one line why
            assert "could not finish" in done.stderr or "memory" in done.stderr.lower()


@pytest.mark.parametrize("n", [1, 2])
def test_failed_xattr_listing_is_an_error_never_no_xattrs(
    shim: Path, trees: tuple[str, str], tmp_path: Path, n: int
) -> None:
    done, seen = faulty(
        shim, tmp_path, {"ZV_FAULT_LISTXATTR": str(n)}, "compare", "--threads", "1", *trees
    )
    assert seen.get("fired listxattr") == n
    assert_not_a_verdict(done, f"xattr listing {n} failed")
    errors = [line for line in done.stdout.splitlines() if line.startswith("! error")]
    assert len(errors) == 1 and "xattr" in errors[0] and "Input/output error" in errors[0]


STREAMS = Path(__file__).parents[1] / "data" / "streams"


@pytest.mark.parametrize("command", ["verify", "info"])
def test_stream_scanner_allocation_failures_end_in_exit_2(
    shim: Path, tmp_path: Path, command: str
) -> None:
    """A BEGIN payload the scanner could not keep used to verify OK (the package's header
    nvlist, and with it every completeness check, silently skipped)."""
    stream = str(STREAMS / "replicate_R_fs_s2.zstream")
    _, counted = faulty(shim, tmp_path, {}, "stream", command, stream)
    assert counted["count malloc"] >= 3
    for n in range(1, counted["count malloc"] + 1):
        done, seen = faulty(shim, tmp_path, {"ZV_FAULT_MALLOC": str(n)}, "stream", command, stream)
        assert "fired malloc" in seen
        assert done.returncode == 2, f"allocation {n}: exit {done.returncode}\n{done.stdout}"
        assert not done.stdout.startswith("OK") and "Traceback" not in done.stderr
