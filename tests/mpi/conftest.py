"""Fixtures of the MPI tests: MPI itself (a skip, or a failure in CI, when it is missing)
and the FUSE fault filesystem of tests/faults."""

from pathlib import Path

import pytest

from tests.faults.conftest import faultfs  # noqa: F401  (the fixture, shared)
from tests.mpi.helpers import require_mpi


@pytest.fixture(autouse=True)
def mpi(request: pytest.FixtureRequest) -> None:
    """MPI for the tests marked `mpi`; the pure ones here (test_mpi_pure.py) need none."""
    if request.node.get_closest_marker("mpi") is not None:
        require_mpi()


@pytest.fixture(scope="session")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One directory of 200,000 entries with hardlink groups spread across it (some of
    them split, one joined, in the copy), a few subdirectories among them, and `cp -a`
    of it: the skew a distributed walk must survive."""
    import os
    import subprocess

    root = tmp_path_factory.mktemp("big")
    src = root / "src"
    huge = src / "huge"
    huge.mkdir(parents=True)
    for i in range(200_000):
        (huge / f"f{i:06d}").write_bytes(b"%d\n" % (i % 97) if i % 7 else b"")
    for i in range(0, 200_000, 20_000):  # a group of three, from one end of the dir to the other
        first = huge / f"f{i:06d}"
        os.link(first, huge / f"link-{i:06d}-a")
        os.link(first, huge / f"zlink-{i:06d}-b")
    for d in ("dir-a", "m-dir", "zz"):
        (huge / d).mkdir()
        (huge / d / "inner").write_bytes(d.encode())
    dst = root / "dst"
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    for i in (40_000, 120_000):  # split: the copy's member is a separate inode
        member = dst / "huge" / f"zlink-{i:06d}-b"
        data, st = member.read_bytes(), member.stat()
        member.unlink()
        member.write_bytes(data)
        os.utime(member, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.utime(member.parent, ns=(st.st_atime_ns, (src / "huge").stat().st_mtime_ns))
    return src, dst
