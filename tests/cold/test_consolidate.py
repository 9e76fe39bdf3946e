"""`zverify cold consolidate` and `zverify cold digest` on archives of real OpenZFS 2.1.11
streams (tests/data/streams) and of streams built by tests/sendstream/streamgen.py.

What a consolidated full is proven against comes from outside the code under test: the
snapshot GUIDs `zfs list` printed when the fixtures were made (index.json), `zverify cold
check` of the archive afterwards (the chain model and the scanner), and streamgen's
independent walk.  Real receives of consolidated fulls are tests/cold/test_consolidate_zfs.py.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import zverify
from tests.cold.proof.test_check import (
    FIXTURE,
    FULL_S1,
    INC_S1_S2,
    INC_S2_S3,
    PKG_S1_S3,
    STREAMS,
    guid,
)
from tests.sendstream.streamgen import DRR, WRITE, resign, walk
from tests.sendstream.test_synthesize import sender_ordered
from zverify.cold import consolidate
from zverify.cold.proof.check import check_archive
from zverify.cold.store import LocalStore
from zverify.report.cold.check import routes
from zverify.sendstream.records import Refused

NAME_S3 = "zv%2Ffs@s3.zfsfull"
NAME_S2 = "zv%2Ffs@s2.zfsfull"


def archive(tmp_path: Path, *files: str, **renamed: str) -> Path:
    root = tmp_path / "cold"
    root.mkdir(parents=True)
    for name in files:
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    for name, fixture in renamed.items():
        shutil.copy(STREAMS / fixture, root / name)
    return root


def run(*args: str) -> tuple[int, dict[str, Any], str]:
    done = zverify("cold", *args)
    doc = json.loads(done.stdout) if "--json" in args and done.stdout else {}
    return done.returncode, doc, done.stderr


def restorable(root: Path) -> tuple[int, dict[str, list[str]]]:
    done = zverify("cold", "check", "--json", str(root))
    doc = json.loads(done.stdout)
    (ds,) = [d for d in doc["datasets"] if d["dataset"] == "zv/fs"]
    return done.returncode, {r["snapshot"]: routes(ds)[r["guid"]] for r in ds["restorable"]}


# -- routes (no engine needed) ----------------------------------------------------------------


@pytest.mark.parametrize("packed", [False, True])
def test_each_substream_of_a_package_gets_its_own_reader(tmp_path: Path, packed: bool) -> None:
    """A -I package holds @s2 and @s3: the route to @s3 reads the full and both substreams
    of the package, each from its own BEGIN (also through zstd decompression)."""
    root = archive(tmp_path, FULL_S1, PKG_S1_S3)
    if packed:
        subprocess.run(["zstd", "-q", "--rm", str(root / PKG_S1_S3)], check=True)
    report = check_archive(LocalStore([str(root)]))
    route = consolidate.route_of(report, "s3")
    pkg = PKG_S1_S3 + (".zst" if packed else "")
    assert [(link.file, link.index, link.snapshot) for link in route.links] == [
        (FULL_S1, 0, "s1"),
        (pkg, 0, "s2"),
        (pkg, 1, "s3"),
    ]
    with contextlib.ExitStack() as stack:
        readers = consolidate.open_route(stack, report, route)
        begins = [(r.begin.fromguid, r.begin.toguid) for r in readers]
        assert begins == [
            (0, int(guid("s1"))),
            (int(guid("s1")), int(guid("s2"))),
            (int(guid("s2")), int(guid("s3"))),
        ]
        for r in readers:  # each reader reads its own substream to its END
            while r.next() is not None:
                pass
            assert r.end_header is not None


def test_route_to_a_snapshot_inside_a_package_stops_there(tmp_path: Path) -> None:
    report = check_archive(LocalStore([str(archive(tmp_path, FULL_S1, PKG_S1_S3))]))
    route = consolidate.route_of(report, "s2")
    assert [link.snapshot for link in route.links] == ["s1", "s2"]
    assert consolidate.full_name(route) == NAME_S2


def test_dry_run_plans_and_writes_nothing(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2, INC_S2_S3)
    before = sorted(p.name for p in root.iterdir())
    code, doc, err = run("consolidate", "--dataset", "zv/fs", "-n", "--json", str(root))
    assert code == 0, err
    assert doc["dry_run"] is True and doc["written"] is False
    assert doc["file"] == NAME_S3 and doc["snapshot"] == {"name": "s3", "guid": guid("s3")}
    assert doc["route"]["files"] == [FULL_S1, INC_S1_S2, INC_S2_S3]
    assert sorted(p.name for p in root.iterdir()) == before


def test_a_snapshot_a_full_restores_alone_is_refused_in_one_line(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1)
    done = zverify("cold", "consolidate", str(root))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "nothing to consolidate" in lines[0], done.stderr


def test_an_existing_full_of_the_snapshot_is_never_overwritten(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    (root / NAME_S2).write_bytes(b"")  # whatever is there stays
    done = zverify("cold", "consolidate", "-n", str(root))
    assert done.returncode == 2 and "already exists" in done.stderr, done.stderr


def test_an_unknown_snapshot_is_refused(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    done = zverify("cold", "consolidate", "--snapshot", "nope", str(root))
    assert done.returncode == 2 and "@nope" in done.stderr, done.stderr


# -- consolidating (the engine needed) ----------------------------------------------------------


@pytest.mark.parametrize("files", [(INC_S1_S2, INC_S2_S3), (PKG_S1_S3,)])
def test_consolidated_full_is_restorable_alone(tmp_path: Path, files: tuple[str, ...]) -> None:
    """Real 2.1.11 chains: the new NAME@s3.zfsfull is one intact full of @s3's GUID, its
    sidecar says synthetic and agrees with it, and `cold check` restores @s3 from it alone."""
    root = archive(tmp_path, FULL_S1, *files)
    code, doc, err = run("consolidate", "--dataset", "zv/fs", "--json", str(root))
    assert code == 0, err
    assert doc["written"] is True and doc["file"] == NAME_S3
    assert doc["chain_digest"] == doc["full_digest"] and doc["full_digest"]
    new = root / NAME_S3
    assert not (root / (NAME_S3 + ".partial")).exists()
    info = zverify("stream", "info", "--json", str(new))
    assert info.returncode == 0, info.stdout
    (sub,) = json.loads(info.stdout)["substreams"]
    assert (sub["toguid"], sub["fromguid"], sub["kind"]) == (guid("s3"), "0", "full")
    side = json.loads((root / (NAME_S3 + ".json")).read_text())
    assert side["synthetic"]["sources"][0]["file"] == FULL_S1
    assert side["synthetic"]["state_digest"] == doc["full_digest"]
    code, reached = restorable(root)
    assert code == 0
    assert reached["s3"] == [NAME_S3]


def test_digest_is_one_per_route_and_equal_after_consolidating(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    assert run("consolidate", str(root))[0] == 0
    code, doc, err = run("digest", "--dataset", "zv/fs", "--snapshot", "s2", "--json", str(root))
    assert code == 0, err
    assert doc["equal"] is True and len(doc["routes"]) == 2
    assert {tuple(r["files"]) for r in doc["routes"]} == {(NAME_S2,), (FULL_S1, INC_S1_S2)}
    assert len({r["digest"] for r in doc["routes"]}) == 1


def _tamper_first_write(path: Path) -> None:
    """One byte of the first WRITE's payload changed, every checksum re-signed: the stream
    is intact to every checksum, its content is not the snapshot's."""
    data = bytearray(path.read_bytes())
    first = next(r for r in walk(bytes(data)) if r.type == WRITE and r.payload)
    data[first.offset + DRR + 5] ^= 0x40
    path.write_bytes(resign(bytes(data)))


def test_a_tampered_incremental_makes_the_routes_disagree(tmp_path: Path) -> None:
    """A full of @s2 consolidated from the good chain, then the incremental tampered (and
    re-signed: `cold check` calls it intact): the two routes to @s2 give two digests, exit 1
    naming the object."""
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    assert run("consolidate", str(root))[0] == 0
    _tamper_first_write(root / INC_S1_S2)
    assert zverify("cold", "check", str(root)).returncode == 0  # intact to every checksum
    code, doc, err = run("digest", "--snapshot", "s2", "--json", str(root))
    assert code == 1, err
    assert doc["equal"] is False and "object" in doc["differs"]
    done = zverify("cold", "digest", "--snapshot", "s2", str(root))
    assert done.returncode == 1 and "DIFFERENT" in done.stdout.splitlines()[-1]


def test_check_digest_names_the_newest_snapshot_and_its_agreeing_routes(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    assert run("consolidate", str(root))[0] == 0
    code, doc, err = run("check", "--digest", "--json", str(root))
    assert code == 0, err
    (ds,) = doc["datasets"]
    digest = run("digest", "--snapshot", "s2", "--json", str(root))[1]["routes"][0]["digest"]
    assert ds["digest"] == {
        "snapshot": "s2",
        "guid": str(guid("s2")),
        "digest": digest,
        "routes": 2,
    }
    assert "digest" not in run("check", "--json", str(root))[1]["datasets"][0]  # asked for only
    text = zverify("cold", "check", "--digest", str(root)).stdout
    assert f"digest of @s2 (guid {guid('s2')}): {digest} (2 routes agree)" in text


def test_check_digest_is_a_problem_when_routes_disagree(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    assert run("consolidate", str(root))[0] == 0
    _tamper_first_write(root / INC_S1_S2)
    assert zverify("cold", "check", str(root)).returncode == 0  # intact to every checksum
    code, doc, err = run("check", "--digest", "--json", str(root))
    assert code == 1, err
    (problem,) = doc["datasets"][0]["problems"]
    assert problem["kind"] == "content-differs" and "object" in problem["message"]


def test_check_digest_that_cannot_be_made_is_not_proven(tmp_path: Path) -> None:
    """A raw chain restores, but no digest can be made of it offline: exit 2, not 0."""
    root = tmp_path / "cold"
    root.mkdir()
    shutil.copy(STREAMS / "raw_w_enc_s1.zstream", root / "zv%2Fenc@s1.zfsfull")
    shutil.copy(STREAMS / "raw_w_enc_s1_s2.zstream", root / "zv%2Fenc@s1-@s2.zfsinc")
    assert zverify("cold", "check", str(root)).returncode == 0
    done = zverify("cold", "check", "--digest", str(root))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unproven" in done.stdout and "no digest of the newest snapshot" in done.stdout
    assert "raw" in done.stdout.lower()


def test_streamgen_seed_archive_consolidates_to_the_last_snapshot(tmp_path: Path) -> None:
    """The issue's seed layout: setname@0.zfsfull, setname@0-@1.zfsinc, setname@1-@2.zfsinc
    -> setname@2.zfsfull, restorable alone."""
    root = tmp_path / "cold"
    root.mkdir()
    guids = [0x1000 + i for i in range(3)]
    for i, g in enumerate(guids):
        data = sender_ordered(
            False, g, guids[i - 1] if i else 0, seed=i, toname=f"pool/setname@{i}"
        )
        name = "setname@0.zfsfull" if i == 0 else f"setname@{i - 1}-@{i}.zfsinc"
        (root / name).write_bytes(data)
    code, doc, err = run("consolidate", "--json", str(root))
    assert code == 0, err
    assert doc["file"] == "setname@2.zfsfull"
    out = (root / "setname@2.zfsfull").read_bytes()
    assert struct.unpack_from("<Q", out, 40)[0] == guids[2]  # drr_toguid
    assert struct.unpack_from("<Q", out, 48)[0] == 0  # drr_fromguid
    # the last snapshot's data: object 2's three 512-byte writes of seed 2
    writes = [out[r.offset + DRR : r.end] for r in walk(out) if r.type == WRITE]
    assert writes == [bytes((2 + i * 7 + j) & 0xFF for j in range(512)) for i in range(3)]
    done = zverify("cold", "check", "--json", str(root))
    assert done.returncode == 0, done.stdout
    (ds,) = json.loads(done.stdout)["datasets"]
    assert {r["snapshot"]: routes(ds)[r["guid"]] for r in ds["restorable"]}["2"] == [
        "setname@2.zfsfull"
    ]


def test_a_raw_chain_is_refused_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    root.mkdir()
    shutil.copy(STREAMS / "raw_w_enc_s1.zstream", root / "zv%2Fenc@s1.zfsfull")
    shutil.copy(STREAMS / "raw_w_enc_s1_s2.zstream", root / "zv%2Fenc@s1-@s2.zfsinc")
    done = zverify("cold", "consolidate", str(root))
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "raw" in done.stderr.lower()
    assert not (root / "zv%2Fenc@s2.zfsfull").exists()
    assert not list(root.glob("*.partial"))


@pytest.mark.s3
def test_a_bucket_archive_consolidates_into_a_directory(tmp_path: Path, s3env: Any) -> None:
    """Sources in a bucket (a real S3 server): each substream of the package streamed from
    the object, the new full written into --into DIR and proven there; `cold digest` of the
    bucket gives the digest the new full's sidecar records."""
    for key, name in ((FULL_S1, FULL_S1), (PKG_S1_S3, PKG_S1_S3)):
        body = (STREAMS / FIXTURE[name]).read_bytes()
        s3env.client.put_object(Bucket=s3env.bucket, Key="archive/" + key, Body=body)
    into = tmp_path / "into"
    into.mkdir()
    code, doc, err = run("consolidate", "--into", str(into), "--json", s3env.url)
    assert code == 0, err
    assert doc["written"] is True and (into / NAME_S3).exists()
    code, digested, err = run("digest", "--json", s3env.url)
    assert code == 0, err
    assert digested["routes"][0]["digest"] == doc["full_digest"]


def test_a_writer_that_changes_content_is_caught_and_nothing_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net itself: a writer broken on purpose (one byte of the first WRITE's
    payload flipped, checksums computed over the flipped bytes, so the scanner passes it)
    must be caught by the digest read back: exit 1, the object named, no file, no partial."""
    from zverify.cold.store import LocalStore
    from zverify.report.consolidate import render
    from zverify.sendstream.chainstate import StateRecord
    from zverify.sendstream.synthesize import FullWriter

    class Flipping(FullWriter):
        flipped = False

        def add(self, rec: StateRecord) -> None:
            if not self.flipped and rec.header[0] == WRITE and rec.payload:
                self.flipped = True
                rec = StateRecord(rec.header, bytes([rec.payload[0] ^ 1]) + rec.payload[1:])
            super().add(rec)

    monkeypatch.setattr(consolidate, "FullWriter", Flipping)
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    store = LocalStore([str(root)])
    result = consolidate.consolidate(store, store, None, None, False, 0, ["test"])
    assert result.exit_code == 1
    assert result.differs is not None and result.differs.startswith("object ")
    assert result.chain_digest != result.full_digest
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [
        INC_S1_S2,
        FULL_S1,
    ]
    assert render(result, False, False).splitlines()[-1].startswith("DIFFERENT")


def test_a_compressed_full_gives_the_digest_of_the_plain_one(tmp_path: Path) -> None:
    """`zfs send -c` of @s1 (compressed WRITEs) and plain `zfs send` of @s1, each followed by
    the same incremental to @s2: one digest (-c is how bytes travel, not what they are), and
    the consolidated full of the -c chain announces COMPRESSED and restores @s2 alone."""
    plain = archive(tmp_path / "a", FULL_S1, INC_S1_S2)
    packed = archive(tmp_path / "b", INC_S1_S2, **{FULL_S1: "compressed_c_fs_s1.zstream"})
    digests = []
    for root in (plain, packed):
        code, doc, err = run("digest", "--snapshot", "s2", "--json", str(root))
        assert code == 0, err
        digests.append(doc["routes"][0]["digest"])
    assert digests[0] == digests[1]
    code, doc, err = run("consolidate", "--json", str(packed))
    assert code == 0, err
    assert "COMPRESSED" in doc["features"] and doc["full_digest"] == digests[0]
    assert restorable(packed)[1]["s2"] == [NAME_S2]


def test_a_writer_that_breaks_the_stream_is_stopped_by_the_scanner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte changed after its checksum was computed: the scanner, which validates the
    full as it is written, stops at the record; consolidate raises (exit 2) naming the byte,
    and leaves neither the full nor its partial."""
    from zverify.cold.store import LocalStore
    from zverify.errors import ColdError
    from zverify.sendstream.synthesize import FullWriter

    class Damaging(FullWriter):
        damaged = False

        def _put(self, data: bytes) -> None:
            if not self.damaged and len(data) > 4096:  # a block's payload
                self.damaged = True
                data = bytes([data[0] ^ 1]) + data[1:]
            super()._put(data)

    monkeypatch.setattr(consolidate, "FullWriter", Damaging)
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    store = LocalStore([str(root)])
    with pytest.raises(ColdError, match=r"is not valid at byte \d+") as caught:
        consolidate.consolidate(store, store, None, None, False, 0, ["test"])
    assert caught.value.exit_code == 2
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [
        INC_S1_S2,
        FULL_S1,
    ]


def test_a_compressed_file_cut_inside_a_payload_is_refused_at_its_end(tmp_path: Path) -> None:
    """A compressed archive file cannot seek, so its reader reads past the payloads it does
    not need; a stream cut inside one (compressed after the cut, so the gzip layer is whole)
    is refused naming the byte where the decompressed bytes end, not a byte past them."""
    data = (STREAMS / FIXTURE[FULL_S1]).read_bytes()
    write = next(r for r in walk(data) if r.type == WRITE and r.payload > 2)
    cut = write.offset + DRR + write.payload // 2
    root = tmp_path / "cold"
    root.mkdir()
    (root / FULL_S1).write_bytes(gzip.compress(data[:cut]))
    with contextlib.ExitStack() as stack:
        src = consolidate._Input(stack, LocalStore([root]), FULL_S1, None)
        assert src.payload_skip is None
        reader = consolidate._reader(src, FULL_S1, 0, None)
        with pytest.raises(Refused, match=rf": byte {cut}: input ends inside a record's payload"):
            while reader.next() is not None:
                pass
