"""`zverify cold check` on archives that keep some streams compressed, as people do
(`zfs send ... | zstd > f.zst`, gzip): a compressed file is a member of its chain exactly like
a plain one, and damage in its compressed layer makes it damaged, named, never restorable.
The files are compressed by the real zstd and gzip programs."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.cold import fakezfs
from tests.cold.proof.test_check import (
    FIXTURE,
    FULL_S1,
    INC_S1_S2,
    INC_S2_S3,
    STREAMS,
    check,
    guid,
    problems,
    restorable,
)
from tests.cold.standin import ZfsStandIn, plain_env, run, valid
from zverify.cold.plan import SendPlan
from zverify.cold.restore import receive_file
from zverify.cold.send import send_to_archive
from zverify.cold.store import LocalStore
from zverify.errors import ColdError, UnrestorableError
from zverify.zfs.inventory import Snap

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


def test_restore_receives_plain_and_compressed_files_through_the_relay(tmp_path: Path) -> None:
    """The stand-in `zfs receive` records snapshots only when it was fed a fixture stream
    byte for byte: the compressed files reached it decompressed and whole."""
    root = mixed(tmp_path)
    zfs = ZfsStandIn(tmp_path / "standin")
    done = run("cold", "restore", "--no-progress", str(root), "tank/r", env=zfs.env())
    assert done.returncode == 0, done.stdout + done.stderr
    received = (zfs.state / "received").read_text()
    assert {row.split("\t")[0] for row in received.splitlines()} == {
        "tank/r@s1",
        "tank/r@s2",
        "tank/r@s3",
    }


def test_a_checksum_failing_after_the_whole_stream_never_lets_receive_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file changed after it was checked: its zstd checksum (the file's last bytes)
    fails only once every stream byte came out; receive is fed all but the end and killed."""
    root = mixed(tmp_path)
    got = tmp_path / "received"
    fakezfs.install(monkeypatch, tmp_path, f"cat > '{got}'\nexit 0\n")
    data = bytearray((root / ZST).read_bytes())
    data[-1] ^= 1
    (root / ZST).write_bytes(bytes(data))
    with pytest.raises(UnrestorableError, match="compressed with zstd"):
        receive_file(str(root / ZST), "tank/r")
    plain = (STREAMS / FIXTURE[INC_S1_S2]).read_bytes()
    fed = got.read_bytes() if got.exists() else b""  # killed before it even opened it
    assert plain.startswith(fed) and len(fed) <= len(plain) - 312  # never its END record


def test_the_script_tests_then_decompresses_each_compressed_file(tmp_path: Path) -> None:
    """Run with a `zfs` that stores what each receive reads: the plain stream of every file,
    in order; and a decompressor failing inside the pipe fails the script (dash has no
    pipefail)."""
    root = mixed(tmp_path)
    out = tmp_path / "restore.sh"
    done = zverify("cold", "restore", "--script", str(out), str(root), "tank/r")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "zstd -t -q" in text and "gzip -t -q" in text
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fed = tmp_path / "fed"
    fed.mkdir()
    (bindir / "zfs").write_text(f'#!/bin/sh\ncat > "{fed}/$(ls {fed} | wc -l)"\n')
    (bindir / "zfs").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    assert subprocess.run(["sh", str(out)], env=env).returncode == 0
    streams = [FULL_S1, INC_S1_S2, INC_S2_S3]
    assert [(fed / str(i)).read_bytes() for i in range(3)] == [
        (STREAMS / FIXTURE[name]).read_bytes() for name in streams
    ]
    # a zstd that passes its test, then fails while decompressing (a read error, say)
    (bindir / "zstd").write_text('#!/bin/sh\n[ "$1" = -t ] && exit 0\nhead -c 100 "$3"; exit 1\n')
    (bindir / "zstd").chmod(0o755)
    shutil.rmtree(fed)
    fed.mkdir()
    failed = subprocess.run(["sh", str(out)], env=env, capture_output=True, text=True)
    assert failed.returncode != 0
    assert sorted(os.listdir(fed)) == ["0", "1"]  # nothing received after the failure


@pytest.fixture
def source(tmp_path: Path) -> ZfsStandIn:
    standin = ZfsStandIn(tmp_path / "standin")
    standin.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    return standin


def test_send_compress_zstd_writes_a_proven_zst_that_checks_and_restores(
    tmp_path: Path, source: ZfsStandIn
) -> None:
    cold = tmp_path / "cold"
    cold.mkdir()
    env = source.env()
    first = run("cold", "send", "--json", "--compress", "zstd:19", "--snapshot", "s1", "zv/fs",
                str(cold), env=env)  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    doc = json.loads(first.stdout)
    valid("cold-send.schema.json", doc)
    sent = doc["sent"]
    assert sent["file"] == FULL_S1 + ".zst" and sent["compression"] == "zstd"
    plain = (STREAMS / FIXTURE[FULL_S1]).read_bytes()
    packed = (cold / sent["file"]).read_bytes()
    assert (sent["bytes"], sent["file_bytes"]) == (len(plain), len(packed))
    # the real zstd reads it back to the very stream zfs sent
    out = subprocess.run(["zstd", "-dc"], input=packed, capture_output=True, check=True).stdout
    assert out == plain
    side = json.loads((cold / (sent["file"] + ".json")).read_text())
    assert (side["compression"], side["bytes"], side["file_bytes"]) == (
        "zstd",
        len(plain),
        len(packed),
    )
    second = run("cold", "send", "--no-progress", "--no-intermediate", "--compress", "gzip",
                 "zv/fs", str(cold), env=env)  # fmt: skip
    assert second.returncode == 0, second.stdout + second.stderr
    assert sorted(p.name for p in cold.iterdir() if not p.name.startswith(".")) == sorted(
        [sent["file"], sent["file"] + ".json", INC_S1_S2 + ".gz", INC_S1_S2 + ".gz.json"]
    )
    code, checked = check(cold)
    assert code == 0, problems(checked)
    assert restorable(checked)["s2"] == [sent["file"], INC_S1_S2 + ".gz"]


def test_send_compress_refuses_an_unknown_algorithm_or_level(
    tmp_path: Path, source: ZfsStandIn
) -> None:
    cold = tmp_path / "cold"
    cold.mkdir()
    for bad in ("brotli", "zstd:99", "gzip:x"):
        done = run(
            "cold", "send", "--no-progress", "--compress", bad, "zv/fs", str(cold), env=source.env()
        )
        assert done.returncode == 2, done.stdout
        assert "--compress" in done.stderr and "Traceback" not in done.stderr
    assert list(cold.iterdir()) == [] or all(p.name.startswith(".") for p in cold.iterdir())


def test_send_compress_a_damaged_stream_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = bytearray((STREAMS / FIXTURE[FULL_S1]).read_bytes())
    data[len(data) // 2] ^= 1
    (tmp_path / "bad.zstream").write_bytes(bytes(data))
    fakezfs.install(monkeypatch, tmp_path, f"cat '{tmp_path / 'bad.zstream'}'\n")
    cold = tmp_path / "cold"
    cold.mkdir()
    plan = SendPlan(Snap("s1", int(guid("s1")), 10), None, None, False, "test")
    with pytest.raises(ColdError, match="not valid"):
        send_to_archive("zv/fs", LocalStore([str(cold)]), plan, [], compress=("zstd", None))
    assert list(cold.iterdir()) == []


def test_send_compress_a_full_filesystem_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compressing thread's write fails (ENOSPC: the gzip of the stream, ~10 KB, on a
    4 KiB tmpfs): ColdError naming it, and no file left."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root")
    fakezfs.install(monkeypatch, tmp_path, f"cat '{STREAMS / FIXTURE[FULL_S1]}'\n")
    cold = tmp_path / "cold"
    cold.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(cold)], check=True)
    try:
        plan = SendPlan(Snap("s1", int(guid("s1")), 10), None, None, False, "test")
        with pytest.raises(ColdError, match="No space left"):
            send_to_archive("zv/fs", LocalStore([str(cold)]), plan, [], compress=("gzip", 1))
        assert list(cold.iterdir()) == []
    finally:
        subprocess.run(["umount", str(cold)], check=True)


def test_repair_rebuilds_and_proves_compressed_streams(tmp_path: Path) -> None:
    """par2 works on the file's bytes; the rebuilt file is proven by decompressing and
    validating it as check does, and named by its first record as it decompresses from the
    damaged file (a hand-made archive has no sidecar)."""
    root = tmp_path / "cold"
    root.mkdir()
    packed = {}
    for name, argv in ((FULL_S1 + ".zst", ["zstd", "-q", "-c"]), (GZ, ["gzip", "-c"])):
        if shutil.which(argv[0]) is None:
            pytest.skip(f"{argv[0]} is not installed: the archive cannot be made as users make it")
        plain = (STREAMS / FIXTURE[name.rsplit(".", 1)[0]]).read_bytes()
        packed[name] = subprocess.run(argv, input=plain, capture_output=True, check=True).stdout
    packed[ZST] = subprocess.run(
        ["zstd", "-q", "-c"], input=(STREAMS / FIXTURE[INC_S1_S2]).read_bytes(),
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    for name, data in packed.items():
        (root / name).write_bytes(data)
    done = run("cold", "parity", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    for name, data in packed.items():
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0x10
        (root / name).write_bytes(bytes(bad))
    done = run("cold", "check", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 1 and "3 repairable" in done.stdout, done.stdout
    done = run("cold", "repair", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert {name: (root / name).read_bytes() for name in packed} == packed
    code, doc = check(root)
    assert code == 0, problems(doc)
    assert restorable(doc)["s3"] == [FULL_S1 + ".zst", ZST, GZ]


def test_restore_progress_counts_stream_bytes_of_compressed_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restore bar's total is the plan's stream bytes: a compressed file advances it by
    what it decompresses to, not by its own (much smaller) size."""
    root = mixed(tmp_path)
    fakezfs.install(monkeypatch, tmp_path, "cat > /dev/null\nexit 0\n")
    seen: list[int] = []
    receive_file(str(root / ZST), "tank/r", progress=seen.append)
    plain = (STREAMS / FIXTURE[INC_S1_S2]).stat().st_size
    assert (root / ZST).stat().st_size < plain
    assert seen and max(seen) == plain == seen[-1]
