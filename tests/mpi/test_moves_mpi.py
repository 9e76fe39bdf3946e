"""`mpirun -n N zverify compare --mpi --detect-moves` pairs what a single node pairs: the
one-sided files of every rank reach rank 0's engine with their digests, and are paired
there once the walks have ended."""

import json
from pathlib import Path

from tests.cli.test_detect_moves import moved  # noqa: F401  (the fixture, shared)
from tests.mpi.helpers import assert_same, single, under_mpi


def test_moves_under_mpi_are_the_single_node_moves(moved: tuple[Path, Path]) -> None:  # noqa: F811
    args = ("--json", "--detect-moves", *map(str, moved))
    reference = single(*args)
    kinds = [d["kind"] for d in json.loads(reference.stdout)["differences"]]
    assert reference.returncode == 1 and kinds.count("moved") == 2, reference.stderr
    for ranks in (2, 3):
        assert_same(reference, under_mpi(ranks, *args), ranks)
