"""`zverify cold prune` on archives of real `zfs send` fixtures (no ZFS needed: the trial
receive and the bookmarks are in tests/cold/test_zfs_send.py).

Two chains of zv/fs: the old one starts at a full of @s1, the new one at a `zfs send -R`
package of @s2 (a full of @s1 and the step to @s2, so it restores @s1 and @s2 alone).  The
incremental from @s2 can follow either chain's @s2 and stays; the one from @s1 cannot follow
the new chain (a restore of it is already at @s2) and goes with the old full.  Longer chains
are planned in test_prune_plan.py.
"""

import json
import shutil
from pathlib import Path
from typing import Any

from tests.cli.console import zverify
from tests.sendstream.streamgen import resign
from zverify.cold.proof import ledger
from zverify.cold.store import lock

STREAMS = Path(__file__).parents[1] / "data" / "streams"
OLD_FULL = "zv%2Ffs@s1.zfsfull"
OLD_INC = "zv%2Ffs@s1-@s2.zfsinc"
SHARED_INC = "zv%2Ffs@s2-@s3.zfsinc"  # from @s2: reachable from both chains
NEW_FULL = "replicated-s2.zstream"  # not the convention: a -R package ends at the child
LEDGER = ledger.NAME
FIXTURE = {
    OLD_FULL: "full_fs_s1.zstream",
    OLD_INC: "incr_fs_s1_s2.zstream",
    SHARED_INC: "incr_empty_fs_s2_s3.zstream",
    NEW_FULL: "replicate_R_fs_s2.zstream",
}


def archive(tmp_path: Path, *files: str) -> Path:
    root = tmp_path / "cold"
    root.mkdir()
    for name in files:
        shutil.copy(STREAMS / FIXTURE[name], root / name)
        (root / f"{name}.json").write_text("{}\n")  # a sidecar goes with its stream
    return root


def prune(root: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """Exit code and the zv/fs part of the JSON (the -R package holds zv/fs/child too)."""
    done = zverify("cold", "prune", "--json", *extra, str(root))
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    (ds,) = [d for d in doc["datasets"] if d["dataset"] == "zv/fs"]
    return done.returncode, {"dry_run": doc["dry_run"], **ds}


def listing(root: Path) -> list[str]:
    """The archive's entries (zverify's lock files are not)."""
    return sorted(p.name for p in root.iterdir() if p.name not in lock.FILES + ledger.FILES)


def test_dry_run_lists_the_old_full_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    root = archive(tmp_path, OLD_FULL, OLD_INC, SHARED_INC, NEW_FULL)
    before = listing(root)
    code, ds = prune(root)
    assert code == 0 and ds["dry_run"] and ds["refused"] is None
    assert ds["keep"] == [NEW_FULL]
    assert ds["remove"] == [OLD_INC, OLD_FULL]  # furthest from the full first
    assert ds["bytes"] == sum((root / n).stat().st_size for n in (OLD_INC, OLD_FULL))
    assert ds["newest_kept"]["snapshot"] == "s3"
    assert ds["lost"] == []  # the new chain restores @s1 and @s2 as well
    assert listing(root) == before


def test_yes_deletes_exactly_the_old_chain_and_the_rest_still_restores(tmp_path: Path) -> None:
    root = archive(tmp_path, OLD_FULL, OLD_INC, SHARED_INC, NEW_FULL)
    code, ds = prune(root, "--yes")
    assert code == 0 and ds["deleted"] == [OLD_INC, OLD_FULL]
    kept = [NEW_FULL, SHARED_INC]
    assert listing(root) == sorted(kept + [f"{n}.json" for n in kept])
    check = zverify("cold", "check", "--json", "--dataset", "zv/fs", str(root))
    assert check.returncode == 0, check.stdout
    (ds,) = json.loads(check.stdout)["datasets"]
    assert [r["snapshot"] for r in ds["restorable"]] == ["s1", "s2", "s3"]


def test_a_damaged_newer_chain_refuses_and_deletes_nothing(tmp_path: Path) -> None:
    root = archive(tmp_path, OLD_FULL, OLD_INC, SHARED_INC, NEW_FULL)
    data = bytearray((root / NEW_FULL).read_bytes())
    data[len(data) // 2] ^= 0x01
    (root / NEW_FULL).write_bytes(bytes(data))
    before = listing(root)
    done = zverify("cold", "prune", "--yes", str(root))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REFUSED" in done.stdout and f"{NEW_FULL}: damaged" in done.stdout
    assert listing(root) == before


def test_a_partial_send_blocks_pruning(tmp_path: Path) -> None:
    root = archive(tmp_path, OLD_FULL, OLD_INC, NEW_FULL)
    (root / f"{NEW_FULL}.partial").write_bytes(b"half")
    before = listing(root)
    code, ds = prune(root, "--yes")
    assert code == 1 and "partial" in ds["refused"]
    assert listing(root) == before


def test_keeping_two_chains_prunes_nothing(tmp_path: Path) -> None:
    root = archive(tmp_path, OLD_FULL, OLD_INC, NEW_FULL)
    code, ds = prune(root, "--keep-chains", "2", "--yes")
    assert code == 0 and ds["remove"] == []
    assert len(listing(root)) == 6


def test_an_unreadable_archive_is_exit_2(tmp_path: Path) -> None:
    done = zverify("cold", "prune", str(tmp_path / "missing"))
    assert done.returncode == 2 and "cannot read archive" in done.stderr


def test_an_archive_with_only_a_damaged_file_is_refused_not_ok(tmp_path: Path) -> None:
    """No chain at all (the damaged full's dataset cannot be trusted): still a refusal."""
    root = archive(tmp_path, OLD_FULL)
    data = bytearray((root / OLD_FULL).read_bytes())
    data[len(data) // 2] ^= 0x01
    (root / OLD_FULL).write_bytes(bytes(data))
    done = zverify("cold", "prune", "--json", "--yes", str(root))
    assert done.returncode == 1, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert doc["datasets"] == [] and f"{OLD_FULL}: damaged" in doc["refused"]
    text = zverify("cold", "prune", str(root))
    assert text.returncode == 1 and "REFUSED" in text.stdout
    assert (root / OLD_FULL).exists()


def test_a_kept_file_rewritten_since_its_ledger_proof_refuses_until_checked(
    tmp_path: Path,
) -> None:
    """The ledger says what each file was when last proven: a kept file that is intact now
    but not that stream (rewritten behind zverify's back) stops the prune until a check
    has recorded what is there; prune records its own proofs before deleting."""
    root = archive(tmp_path, OLD_FULL, OLD_INC, SHARED_INC, NEW_FULL)
    scrubbed = zverify("cold", "scrub", str(root))  # every file proven, in the ledger
    assert scrubbed.returncode == 0, scrubbed.stdout + scrubbed.stderr
    data = bytearray((root / SHARED_INC).read_bytes())
    data[24] ^= 0x01  # the BEGIN's creation time: the same snapshots, other bytes
    (root / SHARED_INC).write_bytes(resign(data))
    before = listing(root)
    code, ds = prune(root, "--yes")
    assert code == 1 and ds["refused"] and "replaced or rewritten" in ds["refused"]
    assert SHARED_INC in ds["refused"] and listing(root) == before
    code, ds = prune(root, "--yes")  # its own record of the file is no new proof
    assert code == 1 and SHARED_INC in ds["refused"] and listing(root) == before
    checked = zverify("cold", "check", str(root))  # says so once, records the stream there now
    assert checked.returncode == 1 and f"replaced       {SHARED_INC}" in checked.stdout
    code, ds = prune(root, "--yes")
    assert code == 0 and ds["deleted"] == [OLD_INC, OLD_FULL]
    methods = [json.loads(line)["method"] for line in (root / LEDGER).read_text().splitlines()]
    assert methods.count("prune") == 3 * len(FIXTURE)  # each prune read every file whole
    assert methods.count("check") == len(FIXTURE)
