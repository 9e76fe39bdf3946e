"""The parts of compare --mpi that need no MPI: the root agreement between ranks, and the
node-independent device numbers of hard-linked entries."""

import os
from pathlib import Path

import pytest

from zverify.mpi.coordinator import RankFailed, same_roots
from zverify.mpi.devices import global_device, globalized, root_identity
from zverify.walk import TreeWalk, WalkOptions


def test_a_rank_that_sees_another_tree_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    mine = [
        ("SRC", "/x", root_identity(str(tmp_path / "a"))),
        ("DST", "/y", root_identity(str(tmp_path))),
    ]
    same_roots(mine, [root_identity(str(tmp_path / "a")), root_identity(str(tmp_path))], 1)
    with pytest.raises(RankFailed, match="MPI rank 3 sees another DST '/y'"):
        same_roots(
            mine, [root_identity(str(tmp_path / "a")), root_identity(str(tmp_path / "b"))], 3
        )
    with pytest.raises(RankFailed, match="MPI rank 2 cannot open a root: /y: No such file"):
        same_roots(mine, "/y: No such file or directory", 2)


def test_only_hard_linked_entries_get_a_global_device(tmp_path: Path) -> None:
    (tmp_path / "one").write_bytes(b"1")
    (tmp_path / "two").write_bytes(b"2")
    os.link(tmp_path / "two", tmp_path / "two-again")
    walk = TreeWalk(tmp_path, WalkOptions(threads=1))
    entries = {e.path: e for e in walk}
    walk.close()
    assert globalized(entries[b"one"]) is entries[b"one"]
    linked = globalized(entries[b"two"])
    assert linked.dev == global_device(entries[b"two"].dev) != entries[b"two"].dev
    assert linked[:6] == entries[b"two"][:6] and linked.ino == entries[b"two"].ino
    # the same device gets the same name every time, and a different one another
    assert global_device(os.stat("/").st_dev) == global_device(os.stat("/").st_dev)
    assert global_device(os.stat("/proc").st_dev) != global_device(os.stat("/").st_dev)
