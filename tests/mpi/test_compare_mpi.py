"""`mpirun -n N zverify compare --mpi` prints exactly what `zverify compare` prints.

Every tree and mutation of the single-node suite, for N = 1..4 (text and JSON in turn):
same stdout byte for byte, same exit code.  With N > 1 the plan cuts even the small rich
tree into many key ranges (8 per walking rank), so ranges start inside folded and
hard-linked subtrees, not only at clean boundaries.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.compare.test_mutations import MUTATIONS
from tests.faults.faultfs import FaultFS
from tests.mpi.helpers import Done, assert_same, single, under_mpi
from zverify.mpi.plan import plan

pytestmark = pytest.mark.mpi  # mpirun and mpi4py (tests/mpi/conftest.py)

FORMATS = {1: (), 2: ("--json",), 3: (), 4: ("--json",)}


def same_at_every_size(*args: str) -> Done:
    """The single-node run of ARGS, after checking every N gives the same; returns it."""
    reference = {fmt: single(*fmt, *args) for fmt in set(FORMATS.values())}
    for ranks, fmt in FORMATS.items():
        assert_same(reference[fmt], under_mpi(ranks, *fmt, *args), ranks)
    return reference[("--json",)]


def test_a_faithful_copy(rich_tree: Path, rich_copy: Path) -> None:
    done = same_at_every_size(str(rich_tree), str(rich_copy))
    assert done.returncode == 0 and json.loads(done.stdout)["identical"] is True


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_every_mutation(rich_tree: Path, rich_copy: Path, name: str) -> None:
    mutate, expected = MUTATIONS[name]
    mutate(rich_copy)
    done = same_at_every_size(str(rich_tree), str(rich_copy))
    found = {(d["path"], d["kind"]) for d in json.loads(done.stdout)["differences"]}
    assert done.returncode == 1 and expected <= found


def test_rsync_without_hardlinks_and_options(rich_tree: Path, tmp_path: Path) -> None:
    """rsync -a (no -H) splits every hardlink group; with a filter, --quick and -x."""
    dst = tmp_path / "rsync"
    subprocess.run(["rsync", "-a", f"{rich_tree}/", str(dst)], check=True)
    done = same_at_every_size(str(rich_tree), str(dst))
    kinds = {d["kind"] for d in json.loads(done.stdout)["differences"]}
    assert done.returncode == 1 and "hardlink" in kinds
    for options in (("--exclude", "*.txt", "--exclude", "bin/"), ("--quick",), ("-x",)):
        args = ("--json", *options, str(rich_tree), str(dst))  # one size each: they are slow
        assert_same(single(*args), under_mpi(3, *args), 3)


def test_one_directory_of_200k_entries(big_tree: tuple[Path, Path]) -> None:
    src, dst = big_tree
    ranges = plan(bytes(src), 3)
    inside = [r for r in ranges if r.lo.startswith(b"huge/")]
    assert len(inside) >= 8, f"the big directory was not split: {ranges[:5]}"
    done = same_at_every_size(str(src), str(dst))
    doc = json.loads(done.stdout)
    hardlinks = [d for d in doc["differences"] if d["kind"] == "hardlink"]
    assert done.returncode == 1 and len(hardlinks) == 2, doc["differences"][:5]
    assert doc["sizes"]["src"]["entries"] == 200_000 + 20 + 3 * 2 + 2


def test_faults_in_the_walk_give_the_same_errors(
    faultfs: FaultFS, rich_tree: Path, rich_copy: Path
) -> None:
    """A read failing at a byte and a listing failing part-way, on the copy's side: the
    same error lines and exit 2 whichever rank met them."""
    faults = ("read /docs/deep/a/b/c/leaf.bin 4096 EIO", "readdir /bin 1 EIO")
    with faultfs.mount(rich_copy, *faults) as mnt:
        done = same_at_every_size(str(rich_tree), str(mnt.path))
    assert done.returncode == 2
    errors = [d["path"] for d in json.loads(done.stdout)["differences"] if d["kind"] == "error"]
    assert "docs/deep/a/b/c/leaf.bin" in errors and "bin" in errors


def test_more_ranks_than_directories(tmp_path: Path) -> None:
    src, dst = tmp_path / "s", tmp_path / "d"
    src.mkdir()
    (src / "only").write_text("x\n")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    os.truncate(dst / "only", 0)
    done = same_at_every_size(str(src), str(dst))
    assert done.returncode == 1
