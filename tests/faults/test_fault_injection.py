"""Faults injected at the C core's own failure points, through the installed `zverify`.

The LD_PRELOAD shim (shim.c) fails the N-th allocation, or the N-th xattr listing or value
read, made by _zvcore itself.  The contract under test is the project's one rule: whatever
could not be read ends in exit 2, never in IDENTICAL (0) or DIFFERENT (1).
"""

import errno
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.helpers import Harness, Run, Trees, not_a_verdict, sanitizer_reason, sweep

_why_not = sanitizer_reason()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=_why_not or "")


@pytest.fixture(scope="module")
def clean_run(harness: Harness, trees: Trees) -> Run:
    """A compare under the shim with no fault: the calls the core makes, counted."""
    return harness.run(None, *trees.compare("--no-progress"))


def test_shim_alone_changes_nothing(clean_run: Run, trees: Trees) -> None:
    assert clean_run.returncode == 0, clean_run.describe()
    assert "IDENTICAL" in clean_run.stdout and not clean_run.fired
    # The shim does see the core's calls: else every sweep below would pass vacuously.
    assert clean_run.counts["malloc"] >= 20, clean_run.counts
    assert clean_run.counts["flistxattr"] >= 4, clean_run.counts  # c/ and f, both sides
    assert clean_run.counts["fgetxattr"] >= 4, clean_run.counts
    if trees.special_xattrs:
        assert clean_run.counts["llistxattr"] >= 4, clean_run.counts  # link and fifo
        assert clean_run.counts["lgetxattr"] >= 4, clean_run.counts


def test_shim_spares_everything_but_the_core(harness: Harness) -> None:
    """Python makes thousands of allocations before it imports the core: had the shim
    counted them, failing the first would stop the interpreter itself."""
    run = harness.run("malloc:1", "--help")
    assert run.returncode == 0 and "compare" in run.stdout, run.describe()
    assert not run.fired


def test_shim_refuses_a_fault_it_cannot_inject(harness: Harness) -> None:
    """A misspelt fault that silently never fired would make every test here pass."""
    run = harness.run("mallocc:3", "--help")
    assert run.returncode == 125 and "bad ZV_FAULT" in run.stderr, run.describe()


def test_a_file_replaced_between_stat_and_open_is_named(harness: Harness, tmp_path: Path) -> None:
    """The walker stats a file, then opens it: whatever is renamed over it in between is
    another file, and its bytes must never stand in for the ones stat'ed."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    for tree in (src, dst):
        tree.mkdir()
        (tree / "victim").write_bytes(b"the bytes that were copied\n")
    (dst / "victim.swap").write_bytes(b"bytes renamed over it\n")
    (src / "victim.swap").write_bytes(b"bytes renamed over it\n")
    run = harness.run(
        None,
        "compare",
        "--no-progress",
        str(src),
        str(dst),
        env_extra={"ZV_SWAP_ON_OPEN": "victim"},
    )
    assert run.fired == ["swap 1"] * 2, run.describe()  # once in each tree
    assert run.returncode == 2, run.describe()
    assert "IDENTICAL" not in run.stdout
    replaced = [line for line in run.stdout.splitlines() if "replaced while being read" in line]
    assert replaced and "victim" in replaced[0], run.describe()


def test_a_file_cut_short_while_read_is_named(harness: Harness, tmp_path: Path) -> None:
    """Another process cuts a file short after its first block was read: the next pread
    meets an early end.  The scan of that file must end as "modified while being read"
    (exit 2), never as a digest of what was left, or "identical".  A read error in the
    middle of a file, the other way a read ends early: tests/faults/test_device_faults.py."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    data = os.urandom(6 << 20)  # many blocks: the cut falls at the second
    for tree in (src, dst):
        tree.mkdir()
        (tree / "victim").write_bytes(data)
        (tree / "bystander").write_bytes(b"unchanged\n")
    run = harness.run(
        None, "compare", "--no-progress", str(src), str(dst), env_extra={"ZV_CUT_ON_READ": "victim"}
    )
    assert run.fired == ["cut 1"] * 2, run.describe()  # once in each tree
    assert run.returncode == 2, run.describe()
    assert "IDENTICAL" not in run.stdout and "DIFFERENT" not in run.stdout, run.describe()
    modified = [line for line in run.stdout.splitlines() if "modified while being read" in line]
    assert modified and "victim" in modified[0], run.describe()
    assert (src / "victim").stat().st_size < len(data)  # the cut happened, under the scan


def test_every_failed_allocation_ends_in_exit_2(
    harness: Harness, trees: Trees, clean_run: Run
) -> None:
    total = clean_run.counts["malloc"]
    runs = harness.run_many([f"malloc:{n}" for n in sweep(total)], *trees.compare("--no-progress"))
    wrong = [r.describe() for r in runs if not _allocation_contract_holds(r)]
    assert not wrong, f"{len(wrong)} of {len(runs)} runs broke the contract:\n" + "\n".join(wrong)
    # Every N up to the clean run's count must fire: a missed call would go untested.
    fired = {int(r.fault.split(":")[1]) for r in runs if r.fired and r.fault}
    assert fired == {n for n in sweep(total) if n <= total}


def test_memory_that_stays_exhausted_ends_in_exit_2(
    harness: Harness, trees: Trees, clean_run: Run
) -> None:
    """Every allocation from the N-th on fails: the error paths themselves find no memory."""
    ns = sweep(clean_run.counts["malloc"])[::4]
    runs = harness.run_many([f"malloc:{n}+" for n in ns], *trees.compare("--no-progress"))
    wrong = [r.describe() for r in runs if not _allocation_contract_holds(r)]
    assert not wrong, "\n".join(wrong)


def _allocation_contract_holds(run: Run) -> bool:
    """Fired: exit 2 and no verdict.  Not fired (N past the last call): a clean run."""
    if run.fired:
        return not_a_verdict(run)
    return run.returncode == 0 and "IDENTICAL" in run.stdout


def test_failed_allocation_with_json_is_exit_2(
    harness: Harness, trees: Trees, clean_run: Run
) -> None:
    ns = sweep(clean_run.counts["malloc"])[::3]  # from 1: the first fails the walk itself
    runs = harness.run_many([f"malloc:{n}" for n in ns], *trees.compare("--json"))
    wrong = [r.describe() for r in runs if not _json_contract_holds(r)]
    assert not wrong, "\n".join(wrong)
    assert any(r.fired and not r.stdout for r in runs), "no fatal walk failure was reached"
    assert any(r.fired and r.stdout for r in runs), "no per-entry failure was reached"


def _json_contract_holds(run: Run) -> bool:
    if "Traceback" in run.stderr:
        return False
    if not run.fired:
        return run.returncode == 0 and json.loads(run.stdout)["exit_code"] == 0
    if not run.stdout:  # the walk could not finish: no document, and a line saying why
        return run.returncode == 2 and bool(run.stderr.strip())
    doc = json.loads(run.stdout)
    return run.returncode == 2 and doc["exit_code"] == 2 and doc["identical"] is False


@dataclass(frozen=True)
class XattrFault:
    call: str
    err: str
    paths: frozenset[str]  # the entries where this call reads something

    def __str__(self) -> str:
        return f"{self.call}-{self.err}"

    @property
    def by_name(self) -> bool:
        """Symlinks and FIFOs are read by name (llistxattr/lgetxattr via /proc/self/fd)."""
        return self.call.startswith("l")

    def message(self) -> str:
        return f"xattr: {os.strerror(getattr(errno, self.err))}"


BY_FD = frozenset({"c", "f"})
BY_NAME = frozenset({"fifo", "link"})
XATTR_FAULTS = [
    XattrFault("flistxattr", "EIO", BY_FD),
    XattrFault("fgetxattr", "EIO", BY_FD),
    XattrFault("llistxattr", "EIO", BY_NAME),
    XattrFault("lgetxattr", "EIO", BY_NAME),
    # ENOTSUP from the read, after the size query found names: the filesystem does have
    # xattrs and did not give them, so this is not "a filesystem without xattrs".
    XattrFault("flistxattr", "ENOTSUP", BY_FD),
    XattrFault("llistxattr", "ENOTSUP", BY_NAME),
]


def _xattr_run(
    harness: Harness, trees: Trees, clean_run: Run, fault: XattrFault, which: str, *opts: str
) -> Run:
    if fault.by_name and not trees.special_xattrs:
        pytest.skip("cannot set trusted.* xattrs on a symlink and a FIFO (needs root)")
    n = 1 if which == "first" else clean_run.counts[fault.call]
    run = harness.run(f"{fault.call}:{n}:{fault.err}", *trees.compare(*opts))
    assert run.fired == [f"{fault.call} {n}"], run.describe()
    return run


@pytest.mark.parametrize("which", ["first", "last"])
@pytest.mark.parametrize("fault", XATTR_FAULTS, ids=str)
def test_failed_xattr_read_is_an_error_never_no_xattrs(
    harness: Harness, trees: Trees, clean_run: Run, fault: XattrFault, which: str
) -> None:
    run = _xattr_run(harness, trees, clean_run, fault, which, "--no-progress")
    assert not_a_verdict(run), run.describe()
    errors = [line.split() for line in run.stdout.splitlines() if line.startswith("! error")]
    assert len(errors) == 1, run.describe()
    assert errors[0][2] in fault.paths and fault.message() in " ".join(errors[0]), errors


@pytest.mark.parametrize("which", ["first", "last"])
@pytest.mark.parametrize("fault", XATTR_FAULTS, ids=str)
def test_failed_xattr_read_with_json_is_exit_2(
    harness: Harness, trees: Trees, clean_run: Run, fault: XattrFault, which: str
) -> None:
    run = _xattr_run(harness, trees, clean_run, fault, which, "--json")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.describe()
    doc = json.loads(run.stdout)
    assert doc["exit_code"] == 2 and doc["identical"] is False
    errors = [d for d in doc["differences"] if d["kind"] == "error"]
    assert len(errors) == 1, errors
    error = errors[0]
    assert error["path"] in fault.paths and fault.message() in error["detail"], error


@pytest.mark.parametrize("err", ["EIO", "ENOTSUP"])
@pytest.mark.parametrize("call", ["flistxattr", "llistxattr"])
def test_listings_that_keep_failing_are_never_ok(
    harness: Harness, trees: Trees, call: str, err: str
) -> None:
    """Every listing read fails, on both sides alike: the sides then agree on "no xattrs",
    which is exactly the IDENTICAL no one may print."""
    if call == "llistxattr" and not trees.special_xattrs:
        pytest.skip("cannot set trusted.* xattrs on a symlink and a FIFO (needs root)")
    run = harness.run(f"{call}:1+:{err}", *trees.compare("--no-progress"))
    assert len(run.fired) >= 2, run.describe()  # both sides were refused
    assert not_a_verdict(run), run.describe()
    errors = [line for line in run.stdout.splitlines() if line.startswith("! error")]
    assert errors and all("xattr" in line for line in errors), run.describe()


STREAM = Path(__file__).parents[1] / "data" / "streams" / "replicate_R_fs_s2.zstream"


@pytest.mark.parametrize("command", ["verify", "info"])
def test_stream_scanner_allocation_failures_end_in_exit_2(harness: Harness, command: str) -> None:
    """A BEGIN payload the scanner could not keep used to verify OK: the package's header
    nvlist, and with it every completeness check, was silently skipped."""
    clean = harness.run(None, "stream", command, str(STREAM))
    assert clean.returncode == 0 and clean.counts["malloc"] >= 3, clean.describe()
    for n in range(1, clean.counts["malloc"] + 1):
        run = harness.run(f"malloc:{n}", "stream", command, str(STREAM))
        assert run.fired == [f"malloc {n}"], run.describe()
        assert run.returncode == 2 and not run.stdout.startswith("OK"), run.describe()
        assert "Traceback" not in run.stderr, run.describe()


def test_filter_allocation_failures_end_in_exit_2(harness: Harness, tmp_path: Path) -> None:
    """With filters the core allocates when the patterns are compiled and when a long path
    is matched (the matcher's row outgrows the stack): every such failure is exit 2."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    deep = Path(*(["d" * 200] * 3))  # a path of 600+ bytes: the matcher allocates its row
    (src / deep).mkdir(parents=True)
    (src / deep / "keep").write_bytes(b"k")
    (src / deep / "drop.tmp").write_bytes(b"d")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    args = ("compare", "--threads", "1", "--no-progress", "--exclude", "d*/**/*.tmp")
    args = (*args, str(src), str(dst))
    clean = harness.run(None, *args)
    assert clean.returncode == 0, clean.describe()
    runs = harness.run_many([f"malloc:{n}" for n in sweep(clean.counts["malloc"])], *args)
    wrong = [r.describe() for r in runs if not _allocation_contract_holds(r)]
    assert not wrong, "\n".join(wrong)
