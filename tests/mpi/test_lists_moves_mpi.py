"""`mpirun -n N zverify compare --mpi` with --detect-moves and --write-lists: the pairs and the
lists of a single node.  The one-sided files of every rank reach rank 0's engine with their
digests, and are paired there once the walks have ended."""

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_detect_moves import moved  # noqa: F401  (the fixture, shared)
from tests.mpi.helpers import assert_same, single, under_mpi

pytestmark = pytest.mark.mpi  # mpirun and mpi4py (tests/mpi/conftest.py)


def test_moves_under_mpi_are_the_single_node_moves(moved: tuple[Path, Path]) -> None:  # noqa: F811
    args = ("--json", "--detect-moves", *map(str, moved))
    reference = single(*args)
    kinds = [d["kind"] for d in json.loads(reference.stdout)["differences"]]
    assert reference.returncode == 1 and kinds.count("moved") == 2, reference.stderr
    for ranks in (2, 3):
        assert_same(reference, under_mpi(ranks, *args), ranks)


def test_lists_under_mpi_are_the_single_node_lists(
    moved: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """--write-lists with moves, a folded directory and directory mtimes (differ-dirs):
    every list byte for byte as on one node."""
    src, dst = moved
    os.utime(dst / "a", (2, 2))  # a directory's own mtime: differ-dirs
    written = {}
    for ranks in (1, 3):
        lists = tmp_path / f"lists-{ranks}"
        args = ("-q", "--detect-moves", "--write-lists", str(lists), str(src), str(dst))
        done = single(*args) if ranks == 1 else under_mpi(ranks, *args)
        assert done.returncode == 1, done.stderr[-2000:]
        written[ranks] = {p.name: p.read_bytes() for p in lists.iterdir()}
    assert written[1]["differ-dirs"] == b"a\n" and written[1]["moved"]
    assert written[3] == written[1]
