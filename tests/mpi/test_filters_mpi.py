"""Filters under MPI: the ranks walk with the rules in rsync's order, and which
--files-from paths were found is gathered from every rank (a path only one rank's range
met is found; one no rank met is in neither tree, exit 2, as on one node)."""

import json
import subprocess
from pathlib import Path

import pytest

from tests.mpi.helpers import assert_same, single, under_mpi

pytestmark = pytest.mark.mpi  # mpirun and mpi4py (tests/mpi/conftest.py)


def test_files_from_and_rule_order_as_on_one_node(rich_tree: Path, tmp_path: Path) -> None:
    dst = tmp_path / "copy"
    subprocess.run(["rsync", "-a", f"{rich_tree}/", str(dst)], check=True)
    listing = tmp_path / "list"
    listing.write_bytes(b"bin\ndocs/deep/a/b/c/leaf.bin\nno-such-path\n")
    args = ("--json", "--files-from", str(listing), str(rich_tree), str(dst))
    one = single(*args)
    assert_same(one, under_mpi(3, *args), 3)
    assert one.returncode == 2, one.stderr
    assert json.loads(one.stdout)["excluded"]["not_found_paths"] == ["no-such-path"]

    rules = ("--include=bin/***", "--exclude=*")
    args = ("--json", *rules, str(rich_tree), str(dst))
    one = single(*args)
    assert_same(one, under_mpi(3, *args), 3)
    doc = json.loads(one.stdout)
    assert doc["excluded"]["entries"]["src"] > 0 and doc["sizes"]["src"]["entries"] > 2
