"""`zverify cold check` on archives that keep some streams compressed, as people do
(`zfs send ... | zstd > f.zst`, gzip): a compressed file is a member of its chain exactly like
a plain one, and damage in its compressed layer makes it damaged, named, never restorable.
The files are compressed by the real zstd and gzip programs."""

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cold.test_check import (
    FIXTURE,
    FULL_S1,
    INC_S1_S2,
    INC_S2_S3,
    STREAMS,
    check,
    problems,
    restorable,
)

ZST = INC_S1_S2 + ".zst"
GZ = INC_S2_S3 + ".gz"


def mixed(tmp_path: Path) -> Path:
    """A plain full, an incremental compressed with zstd, the next one with gzip."""
    for tool in ("zstd", "gzip"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: the archive cannot be made as users make it")
    root = tmp_path / "cold"
    root.mkdir()
    shutil.copy(STREAMS / FIXTURE[FULL_S1], root / FULL_S1)
    for name, argv in ((ZST, ["zstd", "-q", "-c"]), (GZ, ["gzip", "-c"])):
        plain = (STREAMS / FIXTURE[name.rsplit(".", 1)[0]]).read_bytes()
        packed = subprocess.run(argv, input=plain, capture_output=True, check=True).stdout
        (root / name).write_bytes(packed)
    return root


def test_a_chain_of_plain_zstd_and_gzip_files_is_intact(tmp_path: Path) -> None:
    root = mixed(tmp_path)
    code, doc = check(root)
    assert code == 0, problems(doc)
    assert restorable(doc)["s3"] == [FULL_S1, ZST, GZ]
    files = {f["file"]: f for f in doc["files"]}
    assert files[ZST]["compression"] == "zstd" and files[GZ]["compression"] == "gzip"
    assert "compression" not in files[FULL_S1]
    plain = (STREAMS / FIXTURE[INC_S1_S2]).stat().st_size
    assert (files[ZST]["bytes"], files[ZST]["file_bytes"]) == (plain, (root / ZST).stat().st_size)


def test_damage_inside_a_compressed_file_is_found_and_never_restored(tmp_path: Path) -> None:
    root = mixed(tmp_path)
    data = bytearray((root / ZST).read_bytes())
    data[len(data) // 2] ^= 0x10
    (root / ZST).write_bytes(bytes(data))
    code, doc = check(root)
    assert code == 1
    assert (ZST, "damaged") in problems(doc)
    assert set(restorable(doc)) == {"s1"}
    (bad,) = [f for f in doc["files"] if f["file"] == ZST]
    assert "zstd" in bad["problems"][0]["message"]


def test_a_truncated_zst_is_truncated_even_when_its_stream_came_out_whole(
    tmp_path: Path,
) -> None:
    root = mixed(tmp_path)
    data = (root / ZST).read_bytes()
    (root / ZST).write_bytes(data[:-4])  # only the frame's content checksum is cut
    code, doc = check(root)
    assert code == 1
    assert (ZST, "truncated") in problems(doc)
    assert set(restorable(doc)) == {"s1"}
