"""Several places: an archive spread over directories (two disks, one directory per dataset),
through the installed console script, on real `zfs send` fixtures (no ZFS needed).

zv/fs has a chain full @s1 -> @s2 -> @s3; zv/enc a raw full @s1 and its step to @s2."""

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import console_script, zverify
from tests.cold.standin import GUIDS, ZfsStandIn, plain_env, run, valid
from zverify.cold.store import lock

STREAMS = Path(__file__).parents[1] / "data" / "streams"
FULL = "zv%2Ffs@s1.zfsfull"
INC = "zv%2Ffs@s1-@s2.zfsinc"
INC2 = "zv%2Ffs@s2-@s3.zfsinc"
ENC_FULL = "zv%2Fenc@s1.zfsfull"
ENC_INC = "zv%2Fenc@s1-@s2.zfsinc"
FIXTURE = {
    FULL: "full_fs_s1.zstream",
    INC: "incr_fs_s1_s2.zstream",
    INC2: "incr_empty_fs_s2_s3.zstream",
    ENC_FULL: "raw_w_enc_s1.zstream",
    ENC_INC: "raw_w_enc_s1_s2.zstream",
}


def put(place: Path, *files: str) -> Path:
    place.mkdir(parents=True, exist_ok=True)
    for name in files:
        shutil.copy(STREAMS / FIXTURE[name], place / name)
    return place


def check(*args: str) -> tuple[int, dict[str, Any], str]:
    done = zverify("cold", "check", "--json", *args)
    doc = json.loads(done.stdout) if done.stdout else {}
    if doc:
        valid("cold-check.schema.json", doc)
    return done.returncode, doc, done.stderr


def kinds(doc: dict[str, Any]) -> list[tuple[str, str]]:
    found = [(p["kind"], p["file"]) for f in doc["files"] for p in f["problems"]]
    return (
        found
        + [(p["kind"], p["file"]) for p in doc["problems"]]
        + [(p["kind"], p["file"]) for d in doc["datasets"] for p in d["problems"]]
    )


def newest(doc: dict[str, Any], dataset: str) -> str:
    (ds,) = [d for d in doc["datasets"] if d["dataset"] == dataset]
    return str(ds["restorable"][-1]["snapshot"])


def test_a_chain_over_two_disks_checks_clean_and_one_disk_alone_has_an_orphan(
    tmp_path: Path,
) -> None:
    one = put(tmp_path / "disk1", FULL, INC)
    two = put(tmp_path / "disk2", INC2)
    code, doc, err = check(str(one), str(two))
    assert code == 0, (err, kinds(doc))
    assert newest(doc, "zv/fs") == "s3"
    assert doc["places"] == [str(one), str(two)]
    # several places: each name is the place joined with the path in it (pasteable)
    assert {(f["file"], f["place"]) for f in doc["files"]} == {
        (str(one / FULL), str(one)),
        (str(one / INC), str(one)),
        (str(two / INC2), str(two)),
    }
    code, doc, err = check(str(two))
    assert code == 1, err
    assert kinds(doc) == [("orphan", INC2)]


def test_text_names_a_file_by_a_path_that_can_be_pasted(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL)
    two = put(tmp_path / "disk2", INC)
    done = zverify("cold", "check", str(one), str(two))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"chain from {one / FULL}: 2 files" in done.stdout
    assert f"archive {one}, {two}:" in done.stdout


ENC_KEYS = [f"zv/enc/{ENC_FULL}", f"zv/enc/{ENC_INC}"]


def test_recursive_reads_one_directory_per_dataset_at_any_depth(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    put(root / "zv" / "fs", FULL, INC)
    put(root / "deeper" / "still" / "fs", INC2)
    put(root / "zv" / "enc", ENC_FULL, ENC_INC)
    code, doc, err = check("--recursive", str(root))
    assert code == 0, (err, kinds(doc))
    assert (newest(doc, "zv/fs"), newest(doc, "zv/enc")) == ("s3", "s2")
    assert sorted(f["file"] for f in doc["files"]) == sorted(
        [f"zv/fs/{FULL}", f"zv/fs/{INC}", f"deeper/still/fs/{INC2}", *ENC_KEYS]
    )


def test_without_recursive_a_subdirectory_is_reported_not_skipped(tmp_path: Path) -> None:
    root = put(tmp_path / "cold", FULL)
    put(root / "more", INC)
    code, doc, _ = check(str(root))
    assert code == 1
    assert ("not-a-stream", "more") in kinds(doc)


def test_recursive_never_follows_a_symlinked_directory(tmp_path: Path) -> None:
    root = put(tmp_path / "cold" / "fs", FULL)
    elsewhere = put(tmp_path / "elsewhere", INC)
    (root.parent / "link").symlink_to(elsewhere)
    code, doc, _ = check("--recursive", str(root.parent))
    assert code == 1
    problems = kinds(doc)
    assert ("not-a-stream", "link") in problems, problems
    message = next(p["message"] for f in doc["files"] for p in f["problems"] if f["file"] == "link")
    assert "symlink" in message and "not followed" in message
    assert all(INC not in f["file"] for f in doc["files"])


def unprivileged(*args: str) -> subprocess.CompletedProcess[str]:
    """zverify without the power to read what its mode forbids: as root, run with
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped (setpriv), so that mode 0 means it."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root reads any directory, and setpriv is not here to drop that")
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [*prefix, console_script(), *args],
        env={**env, "LC_ALL": "C.UTF-8"},
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )


def test_a_subdirectory_that_cannot_be_listed_is_not_verified(tmp_path: Path) -> None:
    root = put(tmp_path / "cold" / "fs", FULL)
    shut = put(root.parent / "shut", INC)
    shut.chmod(0)
    try:
        done = unprivileged("cold", "check", "--json", "--recursive", str(root.parent))
        cleaned = unprivileged("cold", "clean", "--recursive", str(root.parent))
    finally:
        shut.chmod(0o755)
    assert done.returncode == 2, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert ("unreadable", "shut") in kinds(doc)
    assert "cannot be listed" in doc["files"][-1]["problems"][0]["message"]
    # clean cannot say "nothing to remove" of a directory it could not look into
    assert cleaned.returncode == 2 and "shut" in cleaned.stderr, cleaned.stdout + cleaned.stderr


@pytest.mark.parametrize("bad", ["missing", "a-file"])
def test_a_place_that_cannot_be_read_is_exit_2_named(tmp_path: Path, bad: str) -> None:
    good = put(tmp_path / "disk1", FULL)
    (tmp_path / "a-file").write_text("not a directory\n")
    done = zverify("cold", "check", str(good), str(tmp_path / bad))
    assert done.returncode == 2
    assert str(tmp_path / bad) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_a_place_given_twice_is_refused(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL)
    done = zverify("cold", "check", str(one), str(one) + "/.")
    assert done.returncode == 2
    assert "give each place once" in done.stderr


def test_recursive_refuses_a_place_inside_another(tmp_path: Path) -> None:
    root = put(tmp_path / "cold" / "fs", FULL)
    done = zverify("cold", "check", "--recursive", str(root.parent), str(root))
    assert done.returncode == 2
    assert "inside" in done.stderr


def test_recursive_refuses_a_directory_bound_inside_a_place(tmp_path: Path) -> None:
    """A bind mount of one place inside another shows the same files twice: they would count
    as copies on two disks (and prune could weigh one against itself).  Refused, exit 2."""
    x, y = put(tmp_path / "x", FULL), put(tmp_path / "y", INC)
    (x / "m").mkdir()
    bound = subprocess.run(["mount", "--bind", str(y), str(x / "m")], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.decode().strip()}")
    try:
        for args in (["--recursive", str(x), str(y)], ["--recursive", str(x / "m"), str(y)]):
            code, doc, err = check(*args)
            if args[1] == str(x / "m"):  # the same place twice, by two paths
                assert code == 2 and "again" in err, err
            else:
                assert code == 2 and "bind mount" in err and doc == {}, err
        done = zverify("cold", "prune", "--yes", "--recursive", str(x), str(y))
        assert done.returncode == 2 and sorted(p.name for p in y.iterdir()) == [INC]
    finally:
        subprocess.run(["umount", str(x / "m")], check=True)


def test_a_copy_on_another_disk_is_a_duplicate_said_to_be_a_copy(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL, INC)
    two = put(tmp_path / "disk2", FULL)
    code, doc, _ = check(str(one), str(two))
    assert code == 1
    (dup,) = [p for d in doc["datasets"] for p in d["problems"] if p["kind"] == "duplicate"]
    assert "a copy in another place" in dup["message"]
    assert {dup["file"], dup["message"].split("same snapshots as ")[1].split(" (")[0]} == {
        str(one / FULL),
        str(two / FULL),
    }
    assert newest(doc, "zv/fs") == "s2"  # still restorable, from either copy


def test_every_place_is_locked(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL)
    two = put(tmp_path / "disk2", INC)
    # a deleter's lock on the second place only: a reader of both must refuse at once
    fd = os.open(two / lock.READERS, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = zverify("cold", "check", str(one), str(two))
    finally:
        os.close(fd)
    assert done.returncode == 2
    assert f"archive {two} is busy" in done.stderr
    assert not (one / lock.READERS).exists()  # the first place's lock was let go


# -- restore, prune, clean, parity and repair over several places ---------------------------

OLD_FULL, OLD_INC = FULL, INC  # the old chain of zv/fs: full @s1, then @s2
NEW_FULL = "replicated-s2.zstream"  # a -R package of @s2: the newer chain (restores s1, s2)
FIXTURE[NEW_FULL] = "replicate_R_fs_s2.zstream"


def entries_of(place: Path) -> list[str]:
    """What is in a place, below it too (zverify's lock files are not)."""
    return sorted(
        str(p.relative_to(place))
        for p in place.rglob("*")
        if p.is_file() and p.name not in lock.FILES
    )


def test_restore_reads_a_chain_spread_over_two_places(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL)
    two = put(tmp_path / "disk2", INC)
    zfs = ZfsStandIn(tmp_path / "standin")
    zfs.source("zv/fs", {"s1": FIXTURE[FULL]})
    done = run("cold", "restore", "--no-progress", str(one), str(two), "tank/r", env=zfs.env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "restored tank/r@s2" in done.stdout
    assert f"  {one / FULL}\n  {two / INC}\n" in done.stdout  # the plan, pasteable paths
    received = (zfs.state / "received").read_text().splitlines()
    assert [r.split("\t")[:2] for r in received] == [
        ["tank/r@s1", str(GUIDS["zv/fs@s1"])],
        ["tank/r@s2", str(GUIDS["zv/fs@s2"])],
    ]


def test_restore_of_a_copy_on_two_disks_uses_one_of_them(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL, INC)
    two = put(tmp_path / "disk2", FULL)
    script = tmp_path / "receive.sh"
    done = zverify("cold", "restore", "--script", str(script), str(one), str(two), "tank/r")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a copy in another place" in done.stderr  # the duplicate is said, not fatal
    lines = [line for line in script.read_text().splitlines() if line.startswith("zfs receive")]
    assert len(lines) == 2 and lines[1].endswith(f"< {one / INC}")
    assert lines[0].endswith((f"< {one / FULL}", f"< {two / FULL}"))


def test_prune_over_two_places_deletes_the_old_chain_only_inside_them(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", OLD_FULL, OLD_INC)
    two = put(tmp_path / "disk2", NEW_FULL, INC2)
    (one / f"{OLD_FULL}.json").write_text("{}\n")  # a sidecar goes with its stream
    outside = put(tmp_path / "not-given", OLD_FULL, OLD_INC)  # a copy nobody named
    done = zverify("cold", "prune", "--json", "--yes", str(one), str(two))
    assert done.returncode == 0, done.stdout + done.stderr
    (ds,) = [d for d in json.loads(done.stdout)["datasets"] if d["dataset"] == "zv/fs"]
    assert ds["deleted"] == [str(one / OLD_INC), str(one / OLD_FULL)]
    assert entries_of(one) == []
    assert entries_of(two) == sorted([NEW_FULL, INC2])
    assert entries_of(outside) == sorted([OLD_FULL, OLD_INC])
    # the proof ran over both: what is left restores @s1, @s2 and @s3
    code, doc, _ = check(str(one), str(two))
    assert code == 0 and newest(doc, "zv/fs") == "s3"


def test_prune_of_the_old_disk_alone_deletes_nothing(tmp_path: Path) -> None:
    """The newer chain is on a disk not given: this prune sees one chain and keeps it."""
    one = put(tmp_path / "disk1", OLD_FULL, OLD_INC)
    put(tmp_path / "disk2", NEW_FULL, INC2)
    done = zverify("cold", "prune", "--yes", str(one))
    assert done.returncode == 0, done.stdout + done.stderr
    assert entries_of(one) == sorted([OLD_FULL, OLD_INC])


def test_prune_recursive_deletes_in_subdirectories(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    put(root / "old", OLD_FULL, OLD_INC)
    put(root / "new", NEW_FULL, INC2)
    done = zverify("cold", "prune", "--yes", "--recursive", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert entries_of(root) == sorted([f"new/{NEW_FULL}", f"new/{INC2}"])


def test_clean_over_two_places_removes_leftovers_in_both(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL)
    two = put(tmp_path / "disk2", INC)
    (one / f"{INC2}.partial").write_bytes(b"half a send")
    (two / "sub").mkdir()
    (two / "sub" / f"{INC2}.partial").write_bytes(b"another half")
    dry = zverify("cold", "clean", str(one), str(two))
    assert dry.returncode == 0 and str(one / f"{INC2}.partial") in dry.stdout, dry.stdout
    assert "sub" not in dry.stdout  # not below the places without --recursive
    done = zverify("cold", "clean", "--yes", "--recursive", str(one), str(two))
    assert done.returncode == 0, done.stdout + done.stderr
    assert entries_of(one) == [FULL] and entries_of(two) == [INC]
    assert check("--recursive", str(one), str(two))[0] == 0


def test_a_missing_place_is_exit_2_for_every_command(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL)
    missing = str(tmp_path / "gone")
    for args in (
        ["prune", one.as_posix(), missing],
        ["clean", one.as_posix(), missing],
        ["parity", one.as_posix(), missing],
        ["repair", one.as_posix(), missing],
        ["restore", "--dry-run", one.as_posix(), missing, "tank/r"],
    ):
        done = zverify("cold", *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert missing in done.stderr and "Traceback" not in done.stderr, args
    assert entries_of(one) == [FULL]  # nothing was made in the place that exists


def test_parity_and_repair_work_in_each_streams_own_directory(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    put(root / "fs", FULL, INC)
    put(root / "enc", ENC_FULL)
    done = run(
        "cold",
        "parity",
        "--no-progress",
        "--parity",
        "30",
        "--recursive",
        str(root),
        env=plain_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"fs/{FULL}.par2" in entries_of(root) and f"enc/{ENC_FULL}.par2" in entries_of(root)
    stream = root / "fs" / FULL
    data = bytearray(stream.read_bytes())
    data[100_000] ^= 0x10
    stream.write_bytes(bytes(data))
    code, doc, _ = check("--recursive", str(root))
    assert code == 1
    (damaged,) = [f for f in doc["files"] if f["file"] == f"fs/{FULL}"]
    assert damaged["parity"]["repair"]["status"] == "repairable"
    done = run("cold", "repair", "--no-progress", "--recursive", str(root), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert stream.read_bytes() == (STREAMS / FIXTURE[FULL]).read_bytes()
    assert (root / "fs" / f"{FULL}.damaged").exists()
    code, doc, _ = check("--recursive", str(root))
    assert code == 0, kinds(doc)
    assert doc["kept"] == [f"fs/{FULL}.damaged"]


def test_repair_names_a_stream_by_its_path_among_several_places(tmp_path: Path) -> None:
    one = put(tmp_path / "disk1", FULL)
    two = put(tmp_path / "disk2", INC)
    assert (
        run("cold", "parity", "--no-progress", str(one), str(two), env=plain_env()).returncode == 0
    )
    stream = two / INC
    data = bytearray(stream.read_bytes())
    data[len(data) // 2] ^= 0x10
    stream.write_bytes(bytes(data))
    done = run("cold", "repair", "--no-progress", str(one), str(two), str(stream), env=plain_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"repaired  {stream}" in done.stdout
    assert stream.read_bytes() == (STREAMS / FIXTURE[INC]).read_bytes()


def test_send_also_reads_the_chain_from_another_disk(tmp_path: Path) -> None:
    """The full is on the first disk; the next send goes to a second disk as an incremental
    (without --also it would start a new chain there: the second disk alone has nothing)."""
    one = put(tmp_path / "disk1", FULL)
    two = tmp_path / "disk2"
    two.mkdir()
    zfs = ZfsStandIn(tmp_path / "standin")
    zfs.source("zv/fs", {"s1": FIXTURE[FULL], "s2": FIXTURE[INC]})
    argv = ["cold", "send", "--json", "--no-intermediate", "zv/fs", str(two), "--also", str(one)]
    done = run(*argv, env=zfs.env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["sent"]["file"] == INC
    assert entries_of(two) == sorted([INC, f"{INC}.json"]) and entries_of(one) == [FULL]
    code, doc, _ = check(str(one), str(two))
    assert code == 0 and newest(doc, "zv/fs") == "s2"
    assert not (one / lock.WRITERS).exists()  # the other disk's lock was let go
