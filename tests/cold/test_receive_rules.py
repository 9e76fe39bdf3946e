"""The findings C1-C4 and M1 of the third hostile review (shared research, adversarial-3), each
through the installed `zverify`: archives that `zfs receive` does not accept as they were
called restorable, and prunes and repairs that lost data because of it.

The streams are the real fixtures (tests/data/streams, made by OpenZFS 2.1) and streams
written by tests/sendstream/streamgen.py with the exact features and GUIDs a case needs (real
checksums: zverify cannot tell them apart from `zfs send`).  That OpenZFS refuses these
pairings is shown on real OpenZFS in tests/cold/test_zfs_receive_differential.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.cli.console import zverify
from tests.cold.standin import GUIDS, STREAMS, plain_env, run
from tests.sendstream.streamgen import StreamBuilder, package
from tests.sendstream.test_synthesize import sender_ordered
from zverify.report.cold.check import routes

LARGE_BLOCKS = 1 << 19
T = 1_795_288_679  # one second: the review's @1 and @2
LATER = 2_000_000_000  # after every fixture stream was made


def synthetic(name: str, guid: int, base: int = 0, created: int = T, features: int = 4) -> bytes:
    """In the sender's order (prune proves content with the chain-state engine)."""
    return sender_ordered(False, guid, base, toname=name, created=created, features=features)


def archive(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    """files: name -> bytes, or the name of a fixture stream."""
    root = tmp_path / "cold"
    root.mkdir()
    for name, data in files.items():
        if isinstance(data, str):
            shutil.copy(STREAMS / data, root / name)
        else:
            (root / name).write_bytes(data)
    return root


def check(root: Path) -> tuple[int, dict[str, Any]]:
    done = zverify("cold", "check", "--json", str(root))
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def restorable(doc: dict[str, Any], dataset: str) -> dict[str, list[str]]:
    (ds,) = [d for d in doc["datasets"] if d["dataset"] == dataset]
    return {r["snapshot"]: routes(ds)[r["guid"]] for r in ds["restorable"]}


def kinds(doc: dict[str, Any]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for p in [p for f in doc["files"] for p in f["problems"]] + [
        p for d in doc["datasets"] for p in d["problems"]
    ]:
        found.setdefault(p["file"], set()).add(p["kind"])
    return found


def listing(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(".zverify"))


# -- C1: snapshots made in the same second (or with the clock set back) ----------------------


def same_second(tmp_path: Path) -> Path:
    """full @0; `zfs send -I @0 ds@2` (@1 and @2 in one second); later a full of @1."""
    pkg = package([("tank/data@1", 1001, 1000), ("tank/data@2", 1002, 1001)])
    return archive(
        tmp_path,
        {
            "tank%2Fdata@0.zfsfull": synthetic("tank/data@0", 1000, created=T - 60),
            "tank%2Fdata@0-@2.zfsincstream": pkg,
            "tank%2Fdata@1.zfsfull": synthetic("tank/data@1", 1001),
        },
    )


def test_c1_prune_keeps_the_only_copy_of_a_snapshot_made_in_the_same_second(tmp_path) -> None:
    root = same_second(tmp_path)
    before = listing(root)
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REFUSED" in done.stdout and "@2" in done.stdout
    assert listing(root) == before
    assert "2" in restorable(check(root)[1], "tank/data")


def test_c1_restore_takes_the_newest_by_the_streams_even_with_the_clock_set_back(
    tmp_path,
) -> None:
    root = archive(
        tmp_path,
        {
            "tank%2Fdata@0.zfsfull": synthetic("tank/data@0", 1000, created=T),
            "tank%2Fdata@0-@1.zfsinc": synthetic("tank/data@1", 1001, 1000, created=T + 10),
            "tank%2Fdata@1-@2.zfsinc": synthetic("tank/data@2", 1002, 1001, created=T + 5),
        },
    )
    done = zverify("cold", "restore", "--dry-run", str(root), "tank/back")
    assert done.returncode == 0, done.stderr
    assert "restore tank/data@2 (guid 1002)" in done.stdout


def test_unlinked_fulls_are_both_newest_restore_asks_and_prune_keeps_both(tmp_path) -> None:
    root = archive(
        tmp_path,
        {
            "tank%2Fdata@0.zfsfull": synthetic("tank/data@0", 1000, created=T + 100),
            "tank%2Fdata@5.zfsfull": synthetic("tank/data@5", 1005, created=T),
        },
    )
    done = zverify("cold", "restore", "--dry-run", str(root), "tank/x")
    assert done.returncode == 2 and "--snapshot" in done.stderr, done.stderr
    assert "@0 (guid 1000)" in done.stderr and "@5 (guid 1005)" in done.stderr
    before = listing(root)
    pruned = zverify("cold", "prune", "--yes", str(root))
    assert pruned.returncode == 0 and "nothing to prune" in pruned.stdout, pruned.stdout
    assert listing(root) == before


# -- C2: a -R package is a chain of every dataset it carries ---------------------------------


def test_c2_prune_never_deletes_a_package_that_is_a_childs_only_chain(tmp_path) -> None:
    files: dict[str, bytes | str] = {
        # zv/fs and zv/fs/child (named outside the convention: the issue of names apart)
        "replicated-s2.zstream": "replicate_R_fs_s2.zstream",
        # later a full of the parent alone (`cold send --full zv/fs`)
        "zv%2Ffs@s10.zfsfull": synthetic("zv/fs@s10", 0x1234567890ABCDEF, created=LATER),
    }
    root = archive(tmp_path, files)
    for linked in (False, True):
        done = zverify("cold", "prune", "--yes", str(root))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "replicated-s2.zstream" in listing(root)
        code, doc = check(root)
        assert code == 0, doc
        assert set(restorable(doc, "zv/fs/child")) == {"s1", "s2"}
        if not linked:  # now the parent's chain goes on, and a new full follows it
            shutil.copy(STREAMS / "incr_empty_fs_s2_s3.zstream", root / "zv%2Ffs@s2-@s3.zfsinc")
            (root / "zv%2Ffs@s3.zfsfull").write_bytes(synthetic("zv/fs@s3", GUIDS["zv/fs@s3"]))


def test_c2_with_dataset_a_file_that_carries_another_dataset_is_kept(tmp_path) -> None:
    root = archive(
        tmp_path,
        {
            "replicated-s2.zstream": "replicate_R_fs_s2.zstream",
            "zv%2Ffs@s2-@s3.zfsinc": "incr_empty_fs_s2_s3.zstream",
            "zv%2Ffs@s3.zfsfull": synthetic("zv/fs@s3", GUIDS["zv/fs@s3"], created=LATER),
        },
    )
    done = zverify("cold", "prune", "--yes", "--dataset", "zv/fs", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "replicated-s2.zstream" in listing(root)


# -- C3: send flags decide what can follow what -----------------------------------------------


def test_c3_an_incremental_without_large_blocks_never_follows_a_large_block_full(tmp_path) -> None:
    root = archive(
        tmp_path,
        {
            "tank%2Fbig@0.zfsfull": synthetic("tank/big@0", 2000, features=4 | LARGE_BLOCKS),
            "tank%2Fbig@0-@1.zfsinc": synthetic("tank/big@1", 2001, 2000),
        },
    )
    code, doc = check(root)
    assert code == 1
    assert set(restorable(doc, "tank/big")) == {"0"}
    assert kinds(doc) == {"tank%2Fbig@0-@1.zfsinc": {"unreceivable"}}
    (problem,) = doc["datasets"][0]["problems"]
    assert "-L" in problem["message"]


def test_c3_prune_keeps_the_full_the_incremental_can_follow(tmp_path) -> None:
    plain = synthetic("tank/big@0", 2000)
    large = synthetic("tank/big@0", 2000, features=4 | LARGE_BLOCKS)
    root = archive(
        tmp_path,
        {
            "tank%2Fbig@0.zfsfull": plain,
            "tank%2Fbig@0.zfsfull.L": large,
            "tank%2Fbig@0-@1.zfsinc": synthetic("tank/big@1", 2001, 2000),
        },
    )
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tank%2Fbig@0.zfsfull" in listing(root)
    assert restorable(check(root)[1], "tank/big")["1"] == [
        "tank%2Fbig@0.zfsfull",
        "tank%2Fbig@0-@1.zfsinc",
    ]


def test_c3_a_raw_chain_is_followed_only_by_raw_incrementals(tmp_path) -> None:
    plain_full = synthetic("zv/enc@s1", GUIDS["zv/enc@s1"])  # `zfs send` without -w
    root = archive(
        tmp_path,
        {
            "zv%2Fenc@s1.zfsfull": "raw_w_enc_s1.zstream",
            "zv%2Fenc@s1-@s2.zfsinc": "raw_w_enc_s1_s2.zstream",
            "zv%2Fenc@s1.zfsfull.plain-copy": plain_full,
        },
    )
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "zv%2Fenc@s1.zfsfull" in listing(root)  # the only full the raw incremental follows
    files = restorable(check(root)[1], "zv/enc")["s2"]
    assert files == ["zv%2Fenc@s1.zfsfull", "zv%2Fenc@s1-@s2.zfsinc"]
    # the plain full alone: the raw incremental cannot follow it
    (root / "zv%2Fenc@s1.zfsfull").unlink()
    code, doc = check(root)
    assert code == 1 and "s2" not in restorable(doc, "zv/enc")
    assert kinds(doc)["zv%2Fenc@s1-@s2.zfsinc"] == {"unreceivable"}


# -- C4: a resume stream is not a full ---------------------------------------------------------


def test_c4_a_resume_stream_restores_nothing_and_blocks_prune(tmp_path) -> None:
    root = archive(
        tmp_path,
        {
            "zv%2Ffs@s1.zfsfull": "resumed_fs_s1.zstream",  # `zfs send -t TOKEN > ...`
            "zv%2Ffs@s1-@s2.zfsinc": "incr_fs_s1_s2.zstream",
        },
    )
    code, doc = check(root)
    assert code == 1 and restorable(doc, "zv/fs") == {}
    assert kinds(doc)["zv%2Ffs@s1.zfsfull"] == {"resume"}
    (resume,) = [p for f in doc["files"] for p in f["problems"] if p["kind"] == "resume"]
    assert "zfs receive -s" in resume["message"] and "resume" in resume["message"]
    # beside the complete full: prune deletes nothing, the complete full above all
    shutil.copy(STREAMS / "full_fs_s1.zstream", root / "zv%2Ffs@s1.zfsfull.orig")
    before = listing(root)
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 1 and "resume" in done.stdout, done.stdout
    assert listing(root) == before


# -- M1: a repair must rebuild the very stream it replaces -------------------------------------


def test_m1_parity_of_another_stream_never_replaces_the_original(tmp_path) -> None:
    name = "zv%2Ffs@s1-@s2.zfsinc"
    root = archive(
        tmp_path, {"zv%2Ffs@s1.zfsfull": "full_fs_s1.zstream", name: "incr_fs_s1_s2.zstream"}
    )
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(STREAMS / "package_I_fs_s1_s3.zstream", other / name)  # another valid stream
    made = run("cold", "parity", "--no-progress", "--parity", "100", str(other), env=plain_env())
    assert made.returncode == 1 or made.returncode == 0, made.stdout + made.stderr
    for parity in other.glob(f"{name}*.par2"):
        shutil.copy(parity, root / parity.name)
    original = bytearray((root / name).read_bytes())
    original[30000] ^= 0xFF
    (root / name).write_bytes(bytes(original))
    done = run("cold", "repair", str(root), env=plain_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not the stream it replaces" in done.stdout
    assert (root / name).read_bytes() == bytes(original)
    again = run("cold", "repair", "--remove-damaged", str(root), env=plain_env())
    assert again.returncode == 2 and (root / name).read_bytes() == bytes(original)
    assert not list(root.glob("*.damaged"))


def test_streams_that_order_a_snapshot_before_itself_are_exit_2(tmp_path) -> None:
    root = archive(
        tmp_path,
        {
            "a.zfsfull": synthetic("tank/data@0", 1000),
            "b.zfsinc": synthetic("tank/data@1", 1001, 1000),
            "c.zfsinc": synthetic("tank/data@0", 1000, 1001),  # forged: @1 -> @0
        },
    )
    for command in ("check", "prune"):
        done = zverify("cold", command, str(root))
        assert done.returncode == 2 and "not one dataset's history" in done.stderr, done
    assert len(listing(root)) == 3


def test_m1_without_a_readable_first_record_the_end_record_names_the_stream(tmp_path) -> None:
    """Damage in the first record, no sidecar: the last END record (GUID, checksum of the
    whole substream) tells the stream's own parity (repaired) from parity of another stream
    of the same size (refused)."""
    name = "tank%2Fdata@0-@1.zfsinc"
    real = synthetic("tank/data@1", 1001, 1000)
    for foreign in (False, True):
        (tmp_path / str(foreign)).mkdir()
        root = archive(tmp_path / str(foreign), {name: real})
        source = tmp_path / f"parity-{foreign}"
        source.mkdir()
        other = synthetic("tank/data@1", 2001, 1000)  # as long as the real one
        assert len(other) == len(real)
        (source / name).write_bytes(other if foreign else real)
        made = run(
            "cold", "parity", "--no-progress", "--parity", "100", str(source), env=plain_env()
        )
        assert made.returncode in (0, 1), made.stdout + made.stderr
        for parity in source.glob(f"{name}*.par2"):
            shutil.copy(parity, root / parity.name)
        damaged = bytearray(real)
        damaged[20] ^= 0xFF  # inside the BEGIN record: it names nothing any more
        (root / name).write_bytes(bytes(damaged))
        done = run("cold", "repair", str(root), env=plain_env())
        if foreign:
            assert done.returncode == 2 and "last END record" in done.stdout, done.stdout
            assert (root / name).read_bytes() == bytes(damaged)
        else:
            assert done.returncode == 0, done.stdout + done.stderr
            assert (root / name).read_bytes() == real


# -- adversarial-4 M3 and L2: clones in -R packages, renamed datasets ---------------------------

CLONE = 1  # DRR_FLAG_CLONE


def replication(substreams: list[tuple[str, int, int, int]], top: str) -> bytes:
    """A `zfs send -R`-shaped package: (toname, toguid, fromguid, drr_flags) each."""
    b = StreamBuilder()
    b.package_header({"fromsnap": "0"} if substreams[0][2] else {}, top)
    for name, to, frm, flags in substreams:
        b.substream(name, to, frm, flags=0xC | flags, created=T)
    b.final_end()
    return bytes(b.data)


def test_m3_a_replication_package_of_a_tree_with_a_clone_is_restorable(tmp_path) -> None:
    """`zfs clone tank/r@0 tank/r/cl; zfs snapshot -r tank/r@1; zfs send -R tank/r@1`: the
    clone's substream starts from its origin tank/r@0, which the package sent before it."""
    pkg = replication(
        [("tank/r@0", 1000, 0, 0), ("tank/r@1", 1001, 1000, 0), ("tank/r/cl@1", 3001, 1000, CLONE)],
        "tank/r@1",
    )
    root = archive(tmp_path, {"tank%2Fr@1.zfsfull": pkg})
    code, doc = check(root)
    assert code == 0, kinds(doc)
    assert restorable(doc, "tank/r/cl") == {"1": ["tank%2Fr@1.zfsfull"]}
    assert set(restorable(doc, "tank/r")) == {"0", "1"}
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 0 and "REFUSED" not in done.stdout, done.stdout + done.stderr


def test_m3_a_clone_stream_on_its_own_stays_unreceivable(tmp_path) -> None:
    """Outside a package a clone's origin would be looked for anywhere in the pool: zverify
    plans no such restore, and says why."""
    root = archive(
        tmp_path,
        {
            "tank%2Fr@0.zfsfull": synthetic("tank/r@0", 1000),
            "cl.zstream": _clone_alone(),
        },
    )
    code, doc = check(root)
    assert code == 1 and kinds(doc)["cl.zstream"] == {"unreceivable"}, kinds(doc)
    (p,) = [p for d in doc["datasets"] for p in d["problems"] if p["file"] == "cl.zstream"]
    assert "does not bring before it" in p["message"]


def _clone_alone() -> bytes:
    b = StreamBuilder()
    b.substream("tank/r/cl@1", 3001, 1000, flags=0xC | CLONE, created=T)
    return bytes(b.data)


def renamed(tmp_path: Path, extra: dict[str, bytes | str] | None = None) -> Path:
    """`tank/old@0` full; `zfs rename tank/old tank/new`; `zfs send -i @0 tank/new@1`."""
    return archive(
        tmp_path,
        {
            "tank%2Fold@0.zfsfull": synthetic("tank/old@0", 1000, created=T - 60),
            "tank%2Fnew@0-@1.zfsinc": synthetic("tank/new@1", 1001, 1000),
            **(extra or {}),
        },
    )


def test_m3_an_incremental_of_a_renamed_dataset_continues_its_chain(tmp_path) -> None:
    root = renamed(tmp_path)
    code, doc = check(root)
    assert code == 0, kinds(doc)
    assert [d["dataset"] for d in doc["datasets"]] == ["tank/new"]
    assert restorable(doc, "tank/new") == {
        "0": ["tank%2Fold@0.zfsfull"],
        "1": ["tank%2Fold@0.zfsfull", "tank%2Fnew@0-@1.zfsinc"],
    }
    text = zverify("cold", "check", str(root)).stdout
    assert "tank/new (was tank/old):" in text
    for name in ("tank/old", "tank/new"):  # either name chooses the chain
        done = zverify("cold", "restore", "--dry-run", "--dataset", name, str(root), "rest/n")
        assert done.returncode == 0, done.stderr
        assert "restore tank/new@1 (guid 1001) into rest/n" in done.stdout, done.stdout


def test_m3_prune_deletes_a_renamed_old_chain_only_once_a_newer_one_is_proven(tmp_path) -> None:
    """A new full of tank/new@1 follows the renamed chain (the incremental links them): the
    old chain goes; an unlinked full of tank/new@5 instead keeps everything."""
    root = renamed(tmp_path, {"tank%2Fnew@5.zfsfull": synthetic("tank/new@5", 1005, created=LATER)})
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(listing(root)) == 3  # nothing proves either chain older than the other
    (root / "tank%2Fnew@5.zfsfull").unlink()
    (root / "tank%2Fnew@1.zfsfull").write_bytes(synthetic("tank/new@1", 1001, created=LATER))
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert listing(root) == ["tank%2Fnew@1.zfsfull"]
    assert restorable(check(root)[1], "tank/new") == {"1": ["tank%2Fnew@1.zfsfull"]}


def test_l2_a_child_created_since_an_incremental_package_is_restorable_or_named(tmp_path) -> None:
    """`zfs send -R -I @0 tank/q@1` whose child k3 was made since: k3's substream is a full
    inside the package; without the package's base the message names tank/q@0's GUID as the
    package's, not k3's; with it, k3 restores."""
    pkg = replication([("tank/q@1", 1001, 1000, 0), ("tank/q/k3@1", 4001, 0, 0)], "tank/q@1")
    root = archive(tmp_path, {"tank%2Fq@0-@1.zfsincstream": pkg})
    code, doc = check(root)
    assert code == 1
    (p,) = [p for d in doc["datasets"] if d["dataset"] == "tank/q/k3" for p in d["problems"]]
    assert p["kind"] == "orphan"
    assert "inside a package whose tank/q starts from snapshot GUID 1000" in p["message"]
    (root / "tank%2Fq@0.zfsfull").write_bytes(synthetic("tank/q@0", 1000, created=T - 60))
    code, doc = check(root)
    assert code == 0, kinds(doc)
    assert restorable(doc, "tank/q/k3") == {
        "1": ["tank%2Fq@0.zfsfull", "tank%2Fq@0-@1.zfsincstream"]
    }


def test_l2_restore_of_a_child_made_since_receives_its_parents_full_first(tmp_path) -> None:
    """--dataset chooses the child: the files its route takes that never carried it (the
    parent's full) are read and received all the same, first."""
    pkg = replication([("tank/q@1", 1001, 1000, 0), ("tank/q/k3@1", 4001, 0, 0)], "tank/q@1")
    root = archive(
        tmp_path,
        {
            "tank%2Fq@0-@1.zfsincstream": pkg,
            "tank%2Fq@0.zfsfull": synthetic("tank/q@0", 1000, created=T - 60),
        },
    )
    script = tmp_path / "restore.sh"
    args = ("--script", str(script), "--dataset", "tank/q/k3", str(root), "rest/q")
    done = zverify("cold", "restore", *args)
    assert done.returncode == 0, done.stderr
    receives = [line for line in script.read_text().splitlines() if line.startswith("zfs rec")]
    assert [line.split()[-1].rsplit("/", 1)[-1] for line in receives] == [
        "tank%2Fq@0.zfsfull",
        "tank%2Fq@0-@1.zfsincstream",
    ]
    assert all(" rest/q < " in line for line in receives), receives
