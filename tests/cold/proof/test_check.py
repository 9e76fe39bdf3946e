"""`zverify cold check` on archives built from real `zfs send` fixtures: chains by GUID,
restorable snapshots, and every kind of damage an archive directory can hold."""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.cli.console import console_script, zverify
from zverify.cold import names
from zverify.cold.proof.check import check_archive
from zverify.cold.store import LocalStore
from zverify.report.cold.check import routes
from zverify.sendstream.chain import ArchivedFile, Step, chains, plan

STREAMS = Path(__file__).parents[2] / "data" / "streams"
INDEX = json.loads((STREAMS / "index.json").read_text())
FULL_S1 = "zv%2Ffs@s1.zfsfull"
INC_S1_S2 = "zv%2Ffs@s1-@s2.zfsinc"
INC_S2_S3 = "zv%2Ffs@s2-@s3.zfsinc"
PKG_S1_S3 = "zv%2Ffs@s1-@s3.zfsincstream"
FIXTURE = {
    FULL_S1: "full_fs_s1.zstream",
    INC_S1_S2: "incr_fs_s1_s2.zstream",
    INC_S2_S3: "incr_empty_fs_s2_s3.zstream",
    PKG_S1_S3: "package_I_fs_s1_s3.zstream",
}


def guid(snapshot: str) -> str:
    """The GUID `zfs list` printed when the fixtures were made (index.json), for zv/fs."""
    for entry in INDEX["streams"]:
        if entry["dataset"] == "zv/fs" and entry["to"] == f"zv/fs@{snapshot}":
            return str(entry["to_guid"])
    raise KeyError(snapshot)


def archive(tmp_path: Path, *files: str, **renamed: str) -> Path:
    """An archive directory holding fixture files under seed-convention names."""
    root = tmp_path / "cold"
    root.mkdir()
    for name in files:
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    for name, fixture in renamed.items():
        shutil.copy(STREAMS / fixture, root / name)
    return root


def check(root: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    done = zverify("cold", "check", "--json", *extra, str(root))
    return done.returncode, json.loads(done.stdout) if done.stdout else {}


def restorable(doc: dict[str, Any], dataset: str = "zv/fs") -> dict[str, list[str]]:
    (ds,) = [d for d in doc["datasets"] if d["dataset"] == dataset]
    return {r["snapshot"]: routes(ds)[r["guid"]] for r in ds["restorable"]}


def problems(doc: dict[str, Any]) -> set[tuple[str, str]]:
    found = {(p["file"], p["kind"]) for f in doc["files"] for p in f["problems"]}
    found |= {(p["file"], p["kind"]) for d in doc["datasets"] for p in d["problems"]}
    return found | {(p["file"], p["kind"]) for p in doc["problems"]}


def test_intact_chain_restores_every_snapshot(tmp_path: Path) -> None:
    code, doc = check(archive(tmp_path, FULL_S1, INC_S1_S2, INC_S2_S3))
    assert code == 0 and doc["valid"] is True and problems(doc) == set()
    assert restorable(doc) == {
        "s1": [FULL_S1],
        "s2": [FULL_S1, INC_S1_S2],
        "s3": [FULL_S1, INC_S1_S2, INC_S2_S3],
    }
    (ds,) = doc["datasets"]
    assert [r["guid"] for r in ds["restorable"]] == [guid("s1"), guid("s2"), guid("s3")]
    files = {f["file"]: f for f in doc["files"]}
    assert files[INC_S1_S2]["from_guid"] == guid("s1") and files[INC_S1_S2]["to_guid"] == guid("s2")
    assert files[FULL_S1]["kind"] == "full" and files[INC_S1_S2]["kind"] == "incremental"
    text = zverify("cold", "check", str(tmp_path / "cold"))
    assert text.returncode == 0 and "INTACT" in text.stdout


def test_package_and_cheapest_path(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2, INC_S2_S3, PKG_S1_S3)
    code, doc = check(root)
    assert code == 0
    via_singles = (root / INC_S1_S2).stat().st_size + (root / INC_S2_S3).stat().st_size
    cheaper = [PKG_S1_S3] if (root / PKG_S1_S3).stat().st_size < via_singles else [
        INC_S1_S2, INC_S2_S3,
    ]  # fmt: skip
    assert restorable(doc)["s3"] == [FULL_S1, *cheaper]
    assert {f["file"]: f["kind"] for f in doc["files"]}[PKG_S1_S3] == "intermediate"


def test_missing_middle_makes_later_files_orphans(tmp_path: Path) -> None:
    code, doc = check(archive(tmp_path, FULL_S1, INC_S2_S3))
    assert code == 1 and doc["valid"] is False
    assert restorable(doc) == {"s1": [FULL_S1]}
    assert problems(doc) == {(INC_S2_S3, "orphan")}
    (orphan,) = doc["datasets"][0]["problems"]
    assert guid("s2") in orphan["message"]


def test_flipped_byte_is_damaged_with_offset_and_never_restorable(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2)
    data = bytearray((root / INC_S1_S2).read_bytes())
    data[len(data) // 2] ^= 0x40
    (root / INC_S1_S2).write_bytes(bytes(data))
    code, doc = check(root)
    assert code == 1 and restorable(doc) == {"s1": [FULL_S1]}
    (bad,) = [f for f in doc["files"] if f["file"] == INC_S1_S2]
    assert bad["valid"] is False and bad["problems"][0]["kind"] == "damaged"
    assert 0 < bad["problems"][0]["offset"] <= len(data)


def test_truncated_partial_duplicate_symlink(tmp_path: Path) -> None:
    root = archive(
        tmp_path,
        FULL_S1,
        **{
            "zv%2Ffs@s1-@s2.zfsinc": "truncated_full_fs_s1.zstream",
            "zv%2Ffs@s2-@s3.zfsinc.partial": "incr_empty_fs_s2_s3.zstream",
            "copy-of-s1": "compressed_c_fs_s1.zstream",
        },
    )
    os.symlink("/etc/passwd", root / "outside")
    code, doc = check(root)
    assert code == 1
    assert problems(doc) == {
        ("zv%2Ffs@s1-@s2.zfsinc", "truncated"),
        ("zv%2Ffs@s2-@s3.zfsinc.partial", "partial"),
        ("outside", "not-a-stream"),
        (FULL_S1, "duplicate"),  # of "copy-of-s1", which sorts first and is kept
    }
    assert set(restorable(doc)) == {"s1"}


def test_a_name_that_lies_is_reported_and_the_stream_still_counts(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, **{"zv%2Ffs@s7-@s9.zfsinc": "incr_fs_s1_s2.zstream"})
    code, doc = check(root)
    assert code == 1 and problems(doc) == {("zv%2Ffs@s7-@s9.zfsinc", "name-mismatch")}
    assert restorable(doc)["s2"] == [FULL_S1, "zv%2Ffs@s7-@s9.zfsinc"]  # by GUID, not name


def test_a_replication_package_is_named_after_its_top_dataset(tmp_path: Path) -> None:
    """Review 3, L1: a -R package named for its top dataset was held against its last
    substream (the child) and reported as a name-mismatch, making check exit 1."""
    package = "replicate_R_fs_s2.zstream"
    root = archive(tmp_path, **{"zv%2Ffs@s2.zfsfull": package})
    code, doc = check(root)
    assert code == 0 and problems(doc) == set()
    assert set(restorable(doc, "zv/fs/child")) == {"s1", "s2"}
    shutil.rmtree(root)
    root = archive(tmp_path, **{"zv%2Fother@s2.zfsfull": package, "zv%2Ffs@s1.zfsfull": package})
    code, doc = check(root)
    lies = {(f, k) for f, k in problems(doc) if k == "name-mismatch"}
    assert code == 1 and lies == {
        ("zv%2Fother@s2.zfsfull", "name-mismatch"),  # carries no zv/other
        ("zv%2Ffs@s1.zfsfull", "name-mismatch"),  # zv/fs ends at @s2
    }


def test_names_typed_by_hand_are_hints_not_problems(tmp_path: Path) -> None:
    """Issue 29: the seed's own commands (`zfs send pool/fs@s1 > fs@s1.zfsfull`, then
    `fs@s1-@s2.zfsinc`) name a stream by the last part of its dataset; a name outside any
    convention is chained by content; a -R package is named by its top dataset."""
    root = archive(
        tmp_path,
        **{"fs@s1.zfsfull": "full_fs_s1.zstream",
           "fs@s1-@s2.zfsinc": "incr_fs_s1_s2.zstream",
           "my backup of tuesday.bin": "incr_empty_fs_s2_s3.zstream"},
    )  # fmt: skip
    code, doc = check(root)
    assert code == 0 and problems(doc) == set()
    chain = ["fs@s1.zfsfull", "fs@s1-@s2.zfsinc", "my backup of tuesday.bin"]
    assert restorable(doc)["s3"] == chain
    shutil.rmtree(root)
    root = archive(tmp_path, **{"fs@s2.zfsfull": "replicate_R_fs_s2.zstream"})
    code, doc = check(root)
    assert code == 0 and problems(doc) == set()


def test_names_that_contradict_the_stream_are_still_reported(tmp_path: Path) -> None:
    root = archive(
        tmp_path,
        **{"fs@s1.zfsfull": "full_fs_s1.zstream",
           "fs@s1-@s9.zfsinc": "incr_fs_s1_s2.zstream",  # other snapshots
           "other@s1.zfsfull": "full_fs_s1.zstream",  # another dataset
           "s@s1.zfsfull": "full_fs_s1.zstream",  # `s` is not a trailing part of zv/fs
           "fs@s0-@s1.zfsinc": "full_fs_s1.zstream",  # a full named incremental
           "zv%2ffs@s1.zfsfull": "full_fs_s1.zstream",  # lower-case escapes: consistent
           "child@s2.zfsfull": "replicate_R_fs_s2.zstream"},  # a -R package of zv/fs
    )  # fmt: skip
    code, doc = check(root)
    lies = {f for f, k in problems(doc) if k == "name-mismatch"}
    assert code == 1
    assert lies == {
        "fs@s1-@s9.zfsinc",
        "other@s1.zfsfull",
        "s@s1.zfsfull",
        "fs@s0-@s1.zfsinc",
        "child@s2.zfsfull",
    }


@pytest.mark.parametrize("suffix", [".zst", ".gz", ".xz", ".lz4", ".zstd"])
def test_a_compression_suffix_is_not_part_of_the_name(suffix: str) -> None:
    parsed = names.parse(f"setname@0-@9.zfsincstream{suffix}")
    assert parsed is not None and (parsed.dataset, parsed.from_snap, parsed.to_snap) == (
        "setname",
        "0",
        "9",
    )
    assert names.names_dataset("setname", "poolname/setname")
    assert not names.names_dataset("name", "poolname/setname")


def test_sidecars_must_agree_with_their_streams(tmp_path: Path) -> None:
    root = archive(tmp_path, FULL_S1, INC_S1_S2, INC_S2_S3)
    size = (root / FULL_S1).stat().st_size
    good = {"dataset": "zv/fs", "to_guid": guid("s1"), "from_guid": "0", "bytes": size}
    (root / f"{FULL_S1}.json").write_text(json.dumps({**good, "kind": "full"}))
    lying = {"bytes": 12, "to_guid": guid("s3"), "snapshots": ["s9"]}
    (root / f"{INC_S1_S2}.json").write_text(json.dumps(lying))
    (root / f"{INC_S2_S3}.json").write_text("{not json")
    (root / "gone.zfsfull.json").write_text("{}")
    code, doc = check(root)
    assert code == 1
    assert problems(doc) == {
        (INC_S1_S2, "sidecar-mismatch"),
        (INC_S2_S3, "sidecar-mismatch"),
        ("gone.zfsfull.json", "sidecar-mismatch"),
    }
    (bad,) = [f for f in doc["files"] if f["file"] == INC_S1_S2]
    message = bad["problems"][0]["message"]
    assert "bytes 12" in message and f"to_guid '{guid('s3')}'" in message and "snapshots" in message
    assert set(restorable(doc)) == {"s1", "s2", "s3"}  # a sidecar is never needed to restore


def test_dataset_filter_and_raw_chain(tmp_path: Path) -> None:
    root = archive(
        tmp_path,
        FULL_S1,
        **{"zv%2Fenc@s1.zfsfull": "raw_w_enc_s1.zstream",
           "zv%2Fenc@s1-@s2.zfsinc": "raw_w_enc_s1_s2.zstream"},
    )  # fmt: skip
    code, doc = check(root, "--dataset", "zv/enc")
    assert code == 0 and [d["dataset"] for d in doc["datasets"]] == ["zv/enc"]
    assert restorable(doc, "zv/enc") == {
        "s1": ["zv%2Fenc@s1.zfsfull"],
        "s2": ["zv%2Fenc@s1.zfsfull", "zv%2Fenc@s1-@s2.zfsinc"],
    }


def check_without_dac(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`zverify cold check ARGS ROOT` as root without CAP_DAC_OVERRIDE, so that a mode-0 file
    cannot be read (the caller skips unless it runs as root)."""
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    command = [*drop, console_script(), "cold", "check", *args, str(root)]
    return subprocess.run(command, capture_output=True, text=True)


def test_unreadable_archive_or_file_is_exit_2(tmp_path: Path) -> None:
    done = zverify("cold", "check", str(tmp_path / "nope"))
    assert done.returncode == 2 and done.stdout == "" and "cannot read archive" in done.stderr
    if os.geteuid() != 0:
        pytest.skip("the unreadable-file half needs root to drop CAP_DAC_OVERRIDE")
    root = archive(tmp_path, FULL_S1)
    os.chmod(root / FULL_S1, 0)
    done = check_without_dac(root)
    assert done.returncode == 2 and "INCOMPLETE" in done.stdout and "unreadable" in done.stdout


def test_an_unreadable_sidecar_is_exit_2_not_a_mismatch(tmp_path: Path) -> None:
    """A sidecar that cannot be read leaves the archive not verified (exit 2), as any file
    that cannot be read does; one read and wrong stays sidecar-mismatch (exit 1)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop CAP_DAC_OVERRIDE (a mode-0 file is readable by root)")
    root = archive(tmp_path, FULL_S1)
    (root / f"{FULL_S1}.json").write_text("{}")
    os.chmod(root / f"{FULL_S1}.json", 0)
    done = check_without_dac(root, "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 2 and problems(doc) == {(FULL_S1, "unreadable")}, done.stdout
    assert set(restorable(doc)) == {"s1"}  # the stream itself was read and is intact
    text = check_without_dac(root, "-q")
    assert text.stdout == "INCOMPLETE: 1 file(s) could not be read\n", text.stdout


def test_an_archive_without_a_stream_proves_nothing(tmp_path: Path) -> None:
    """An empty directory (a disk not mounted) or a --dataset no stream is of is not INTACT."""
    (tmp_path / "empty").mkdir()
    code, doc = check(tmp_path / "empty")
    assert code == 1 and {p["kind"] for p in doc["problems"]} == {"empty"}
    root = archive(tmp_path, FULL_S1)
    code, doc = check(root, "--dataset", "zv/typo")
    assert code == 1 and "no stream of zv/typo" in doc["problems"][0]["message"]
    assert "which holds zv/fs" in doc["problems"][0]["message"]  # what there is instead
    code, doc = check(root, "--dataset", "zv/f")
    assert code == 1 and "(did you mean 'zv/fs'?)" in doc["problems"][0]["message"]
    assert check(root, "--dataset", "zv/fs")[0] == 0
    # its trailing components name it, as the archive's file names do (`fs` for zv/fs)
    code, doc = check(root, "--dataset", "fs")
    assert code == 0 and [d["dataset"] for d in doc["datasets"]] == ["zv/fs"]


def test_only_an_empty_file_with_a_lock_files_name_is_passed_over(tmp_path: Path) -> None:
    """zverify's lock files are empty: a stream under that name, at any depth, is read."""
    root = archive(tmp_path, FULL_S1)
    (root / "sub").mkdir()
    shutil.copy(STREAMS / "truncated_full_fs_s1.zstream", root / "sub" / ".zverify-writers.lock")
    (root / ".zverify-readers.lock").write_bytes(b"")
    code, doc = check(root, "--recursive")
    assert code == 1 and problems(doc) == {("sub/.zverify-writers.lock", "truncated")}, doc


def test_check_needs_no_zfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no zfs, no zpool
    report = check_archive(LocalStore([str(archive(tmp_path, FULL_S1, INC_S1_S2))]))
    assert report.exit_code == 0


@pytest.mark.parametrize("dataset", ["pool/set", "pool/with space/x", "p%ct/a-@b", "tank"])
def test_names_are_reversible(dataset: str) -> None:
    for to, frm, inter in (("b", None, False), ("b", "a", False), ("z-9", "a-1", True)):
        parsed = names.parse(names.file_name(dataset, to, frm, inter))
        assert parsed is not None
        assert (parsed.dataset, parsed.from_snap, parsed.to_snap) == (dataset, frm, to)
    assert names.parse("random.bin") is None
    assert names.parse("pool@a-@b.zfsfull") is None  # a full names one snapshot


def test_planner_prefers_fewer_bytes_and_finds_orphans() -> None:
    def f(name: str, size: int, *steps: tuple[int, int]) -> ArchivedFile:
        return ArchivedFile(name, size, tuple(Step("d", a, b, f"s{b}", b) for a, b in steps))

    files = [
        f("full1", 100, (0, 1)),
        f("big", 500, (1, 2)),
        f("small-a", 10, (1, 3)),
        f("small-b", 10, (3, 2)),
        f("orphan", 5, (9, 10)),
    ]
    (p,) = plan(files).values()
    by_guid = {r.guid: r.files for r in p.restorable}
    assert by_guid[2] == ("full1", "small-a", "small-b")  # 120 bytes beats 600
    assert p.orphans == [("orphan", 9, "d")]
    (chain,) = chains("d", files)
    assert chain.files == ("big", "full1", "small-a", "small-b") and chain.bytes == 620


@given(st.text(alphabet="%@/2540Fa -", min_size=1))
def test_dataset_encoding_round_trips(dataset: str) -> None:
    encoded = names.encode_dataset(dataset)
    assert "/" not in encoded and "@" not in encoded
    assert names.decode_dataset(encoded) == dataset
