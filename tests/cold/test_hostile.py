"""Every `zverify cold` command (the installed one) on a hostile archive directory: symlinks to
files and directories outside and dangling ones, devices, FIFOs, a socket, a subdirectory,
names that are dots, hold a newline or are not UTF-8, files of another user or unreadable,
a hard link to a file outside.

Each command must finish (a FIFO never blocks it), follow nothing out of the directory,
delete nothing but its own proven stream files, and name every such entry on a line of its
own.  Outside the archive, nothing may change.
"""

import json
import os
import socket
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import console_script, needs_installed_command
from tests.cold.standin import STREAMS, ZfsStandIn, plain_env, run, valid
from zverify.cold.store import lock

pytestmark = [
    needs_installed_command,
    pytest.mark.skipif(os.geteuid() != 0, reason="device nodes and chown need root"),
]

FULL_S1 = "zv%2Ffs@s1.zfsfull"
INC_S1_S2 = "zv%2Ffs@s1-@s2.zfsinc"
LURE = "zv%2Ffs@s2-@s3.zfsinc"  # a symlink to the real @s2 -> @s3 outside: never followed
NEWLINE = "a\nb.zfsfull"
NOT_UTF8 = os.fsdecode(b"bad-\xff.zfsinc")
# every entry that is not a plain stream of this archive, and the words its line must hold
HOSTILE = {
    LURE: "a symlink to ",
    "to-dir": "a symlink to ",
    "dangling.zfsfull": "a symlink to ",
    f"{INC_S1_S2}.json": "a FIFO",  # where a sidecar would be
    "fifo.zfsfull": "a FIFO",
    "fifo.partial": "a FIFO",
    "link.partial": "a symlink to ",
    "null.zfsfull": "a character device",
    "zero": "a character device",
    "loop.zfsfull": "a block device",
    "sock": "a socket",
    "subdir": "a directory",
    "...": "not a ZFS send stream",
    "..zfsfull": "not a ZFS send stream",
    NEWLINE: "not a ZFS send stream",
    NOT_UTF8: "not a ZFS send stream",
    "other-user.zfsinc": "owned by uid 4242",
    "unreadable.zfsfull": "owned by uid 4243",
    "hardlink.zfsfull": "has 2 links",
}


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Everything under root: mode, mtime and content (never following a symlink)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            data = b""
            if stat.S_ISREG(st.st_mode):
                data = Path(path).read_bytes()
            elif stat.S_ISLNK(st.st_mode):
                data = os.fsencode(os.readlink(path))
            out[path] = (st.st_mode, st.st_mtime_ns, data)
    return out


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.zfsinc").write_bytes((STREAMS / "incr_empty_fs_s2_s3.zstream").read_bytes())
    (outside / "dir" / "inner.zfsinc").write_bytes(b"not followed")
    (outside / "victim").write_bytes(b"must survive every command")
    (outside / "linked.zfsfull").write_bytes(
        (STREAMS / "truncated_full_fs_s1.zstream").read_bytes()
    )
    cold = tmp_path / "cold"
    cold.mkdir()
    (cold / FULL_S1).write_bytes((STREAMS / "full_fs_s1.zstream").read_bytes())
    (cold / INC_S1_S2).write_bytes((STREAMS / "incr_fs_s1_s2.zstream").read_bytes())
    os.symlink(outside / "secret.zfsinc", cold / LURE)
    os.symlink(outside / "dir", cold / "to-dir")
    os.symlink(tmp_path / "nowhere", cold / "dangling.zfsfull")
    for name in (f"{INC_S1_S2}.json", "fifo.zfsfull", "fifo.partial"):
        os.mkfifo(cold / name)
    os.symlink(outside / "victim", cold / "link.partial")
    os.mknod(cold / "null.zfsfull", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(cold / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    os.mknod(cold / "loop.zfsfull", 0o660 | stat.S_IFBLK, os.makedev(7, 250))
    if len(os.fsencode(cold / "sock")) < 100:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(cold / "sock"))
    else:
        os.mkfifo(cold / "sock")  # (a path too long to bind: the test still has one more FIFO)
    (cold / "subdir").mkdir()
    (cold / "subdir" / LURE).write_bytes((STREAMS / "incr_empty_fs_s2_s3.zstream").read_bytes())
    (cold / "...").write_bytes(b"dots")
    for name in ("..zfsfull", NEWLINE, NOT_UTF8):
        (cold / name).write_bytes(b"junk")
    (cold / "other-user.zfsinc").write_bytes(b"someone else's")
    os.chown(cold / "other-user.zfsinc", 4242, 4242)
    (cold / "unreadable.zfsfull").write_bytes(b"secret")
    os.chown(cold / "unreadable.zfsfull", 4243, 4243)
    os.chmod(cold / "unreadable.zfsfull", 0)
    os.link(outside / "linked.zfsfull", cold / "hardlink.zfsfull")
    return cold, outside


@pytest.fixture
def zfs(tmp_path: Path) -> ZfsStandIn:
    standin = ZfsStandIn(tmp_path / "standin")
    standin.source(
        "zv/fs",
        {
            "s1": "full_fs_s1.zstream",
            "s2": "incr_fs_s1_s2.zstream",
            "s3": "incr_empty_fs_s2_s3.zstream",
        },
    )
    return standin


def shown(name: str) -> str:
    return {NEWLINE: "a\\nb.zfsfull", NOT_UTF8: "bad-\\xff.zfsinc"}.get(name, name)


def problem_lines(text: str) -> dict[str, str]:
    """{entry: its line} of the text problem lines ("  KIND  NAME: MESSAGE")."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        for name in HOSTILE:
            if line.split()[1:2] == [shown(name) + ":"] or f" {shown(name)}: " in line:
                found.setdefault(name, line)
    return found


def entry(problem: dict[str, Any]) -> str:
    """The entry a JSON problem names (the only name that is not UTF-8 is NOT_UTF8)."""
    return NOT_UTF8 if problem.get("file_escaped") else str(problem["file"])


def json_problems(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found = [p for f in doc["files"] for p in f["problems"]] + doc["problems"]
    return found + [p for d in doc["datasets"] for p in d["problems"]]


def assert_untouched(cold: Path, outside: Path, before: dict[str, Any], extra: set[str]) -> None:
    assert snapshot(outside) == before
    for name in HOSTILE:
        os.lstat(cold / name)  # still there
    assert {p.name for p in cold.iterdir()} - set(HOSTILE) - set(lock.FILES) == {
        FULL_S1,
        INC_S1_S2,
        *extra,
    }


def test_check_names_every_entry_and_follows_none(hostile: tuple[Path, Path]) -> None:
    cold, outside = hostile
    before = snapshot(outside)
    done = run("cold", "check", "--json", str(cold), env=plain_env(), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    valid("cold-check.schema.json", doc)
    fs = next(d for d in doc["datasets"] if d["dataset"] == "zv/fs")
    assert [r["snapshot"] for r in fs["restorable"]] == ["s1", "s2"]  # not @s3 of the lure
    problems = json_problems(doc)
    assert all(p["file"] == "bad-\\xff.zfsinc" for p in problems if p.get("file_escaped"))
    for name, words in HOSTILE.items():
        messages = [p["message"] for p in problems if entry(p) == name]
        assert any(words in m for m in messages), (name, messages)
    kinds = {(p["file"], p["kind"]) for p in problems}
    assert ("hardlink.zfsfull", "hard-link") in kinds
    assert ("other-user.zfsinc", "foreign-owner") in kinds
    assert ("fifo.partial", "not-a-stream") in kinds  # not a partial: never opened
    link = next(p for p in problems if p["file"] == LURE)
    assert link["message"] == f"a symlink to {outside}/secret.zfsinc: not read, not followed"

    text = run("cold", "check", str(cold), env=plain_env(), timeout=60)
    assert text.returncode == 1 and "PROBLEMS" in text.stdout
    lines = problem_lines(text.stdout)
    assert set(lines) == set(HOSTILE), set(HOSTILE) - set(lines)
    assert "  " + "\n" not in text.stdout and "\nb.zfsfull" not in text.stdout  # one line each
    assert_untouched(cold, outside, before, set())


def test_check_without_the_right_to_read_is_exit_2_not_ok(hostile: tuple[Path, Path]) -> None:
    cold, _ = hostile
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]
    done = subprocess.run(
        [*drop, console_script(), "cold", "check", str(cold)],
        capture_output=True,
        text=True,
        timeout=60,
        env=plain_env(),
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "INCOMPLETE" in done.stdout
    assert any(
        "unreadable.zfsfull" in line and "unreadable" in line for line in done.stdout.splitlines()
    )


def test_restore_warns_of_each_entry_and_reads_only_real_files(
    hostile: tuple[Path, Path], zfs: ZfsStandIn
) -> None:
    cold, outside = hostile
    before = snapshot(outside)
    done = run(
        "cold", "restore", "--no-progress", "--dataset", "zv/fs", str(cold), "tank/r", env=zfs.env()
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "restored tank/r@s2" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line.startswith("zverify: warning: ")]
    assert len(warnings) == len(done.stderr.splitlines())
    named = {name for name in HOSTILE if any(f" {shown(name)}: " in w for w in warnings)}
    assert named == set(HOSTILE), set(HOSTILE) - named
    received = (zfs.state / "received").read_text()
    assert "tank/r@s2" in received and "tank/r@s3" not in received
    assert_untouched(cold, outside, before, set())


def test_prune_refuses_names_each_entry_and_deletes_nothing(hostile: tuple[Path, Path]) -> None:
    cold, outside = hostile
    (cold / "zv%2Ffs@s2.zfsfull").symlink_to(outside / "victim")  # one more lure
    before = snapshot(outside)
    done = run("cold", "prune", "--yes", str(cold), env=plain_env(), timeout=60)
    assert done.returncode == 1 and "REFUSED" in done.stdout, done.stdout + done.stderr
    lines = problem_lines(done.stdout)
    assert set(lines) == set(HOSTILE), set(HOSTILE) - set(lines)
    as_json = run("cold", "prune", "--json", "--yes", str(cold), env=plain_env(), timeout=60)
    assert as_json.returncode == 1
    doc = json.loads(as_json.stdout)
    valid("cold-prune.schema.json", doc)
    assert doc["refused"] and {entry(p) for p in doc["problems"]} >= set(HOSTILE)
    assert_untouched(cold, outside, before, {"zv%2Ffs@s2.zfsfull"})


def test_send_writes_beside_them_and_never_over_one(
    hostile: tuple[Path, Path], zfs: ZfsStandIn
) -> None:
    cold, outside = hostile
    before = snapshot(outside)
    over = run(
        "cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold), env=zfs.env()
    )
    assert over.returncode == 2
    *warnings, refused = over.stderr.strip().splitlines()
    assert refused == f"zverify: {LURE} already exists in {cold}: refusing to overwrite it"
    named = {name for name in HOSTILE if any(f" {shown(name)}: " in w for w in warnings)}
    assert named == set(HOSTILE)
    assert os.readlink(cold / LURE) == str(outside / "secret.zfsinc")
    done = run("cold", "send", "--no-progress", "zv/fs", str(cold), env=zfs.env())
    assert done.returncode == 0, done.stdout + done.stderr
    new = "zv%2Ffs@s2-@s3.zfsincstream"
    assert done.stdout.startswith(f"archived {new}: ")
    assert_untouched(cold, outside, before, {new, f"{new}.json"})


def test_clean_leaves_every_partial_that_is_not_a_plain_leftover(
    hostile: tuple[Path, Path],
) -> None:
    cold, outside = hostile
    (cold / "leftover.zfsfull.partial").write_bytes(b"left by a killed send")
    os.link(outside / "victim", cold / "linked.zfsfull.partial")
    before = snapshot(outside)
    done = run("cold", "clean", "--yes", str(cold), env=plain_env(), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert "  removed leftover.zfsfull.partial (21 bytes)" in out
    assert "  left alone fifo.partial: a FIFO, not a send's file" in out
    assert f"  left alone link.partial: a symlink to {outside}/victim, not a send's file" in out
    assert any(line.startswith("  left alone linked.zfsfull.partial: has 2 links") for line in out)
    assert not (cold / "leftover.zfsfull.partial").exists()
    assert (cold / "linked.zfsfull.partial").exists()
    assert_untouched(cold, outside, before, {"linked.zfsfull.partial"})
