"""What a proof in the ledger stands for (adversarial-4 C2, C3), through the installed
`zverify`: only the very file it was made of, in the archive it was made in, and only when
it is not dated in the future.  An archive copied with its ledger, a ledger shared by two
archives, a file rewritten in place at the same size and mtime, a ledger line written before
records named their file, and a proof made while the clock was years ahead: each is read
again by the next scrub, and the damage under it is found (exit 1), where the scrub used to
read nothing and say PROVEN (exit 0)."""

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.cli.console import console_script, zverify
from tests.cold.proof.test_check import FIXTURE, FULL_S1, INC_S1_S2, INC_S2_S3, STREAMS
from tests.cold.proof.test_scrub import HEAD, LEDGER, _lines, _metrics, archive, read_now, scrub

if TYPE_CHECKING:
    from tests.cold.store.bucket_fixtures import S3Env

FAR_AHEAD = ["2031-01-01 00:00:00"]  # the repro's clock: years ahead (the host is in UTC)


def flip(path: Path, at: int = 100_000) -> None:
    """One byte of a stream changed in place: same inode, same size (a new mtime)."""
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x55]))


def result(doc: dict[str, Any], name: str) -> str:
    return str(next(f["result"] for f in doc["files"] if f["file"] == name))


def test_an_archive_copied_with_its_ledger_by_rsync_is_proven_again(tmp_path: Path) -> None:
    if shutil.which("rsync") is None:
        pytest.skip("rsync is not installed (scripts/setup.sh installs it)")
    a = archive(tmp_path / "A", FULL_S1, INC_S1_S2)
    assert scrub(a)[0] == 0
    b = tmp_path / "B"
    subprocess.run(["rsync", "-a", f"{a}/", f"{b}/"], check=True)  # the ledger goes along
    flip(b / FULL_S1)
    os.utime(b / FULL_S1, ns=(0, (a / FULL_S1).stat().st_mtime_ns))  # touch -r: a bad copy
    assert (b / LEDGER).read_bytes() == (a / LEDGER).read_bytes()
    prom = tmp_path / "B.prom"
    code, doc, err = scrub(b, "--max-bytes", "1", "--prometheus", str(prom))
    # no proof made on A stands for B: neither file is proven before this run reads one
    where = f'archive="{b}"'
    assert int(_metrics(prom)[f"zverify_cold_archive_unproven_bytes{{{where}}}"]) > 0, err
    assert len(read_now(doc)) == 1 and doc["unproven_bytes"] > 0
    code, doc, err = scrub(b, "--max-age", "30")
    assert code == 1, err  # the damaged full is read and found, not PROVEN
    assert result(doc, FULL_S1) == "damaged"
    assert zverify("cold", "check", "-q", str(b)).returncode == 1  # the truth, as before


def test_a_ledger_shared_by_two_archives_lends_no_proof(tmp_path: Path) -> None:
    shared = tmp_path / "proofs.jsonl"
    one = archive(tmp_path / "L1", FULL_S1)
    two = archive(tmp_path / "L2", FULL_S1)  # the same name and size: a damaged copy
    flip(two / FULL_S1)
    code, doc, err = scrub(one, "--ledger", str(shared))
    assert code == 0 and read_now(doc) == [FULL_S1], err
    code, doc, err = scrub(two, "--ledger", str(shared), "--max-age", "30")
    assert code == 1 and read_now(doc) == [FULL_S1], err
    assert result(doc, FULL_S1) == "damaged"
    # and L2's damage is not L1's: L1's proof still stands, nothing of it is read
    code, doc, err = scrub(one, "--ledger", str(shared), "--max-age", "30")
    assert code == 0 and read_now(doc) == [] and doc["unproven_bytes"] == 0, err
    archives = {json.loads(line)["archive"] for line in shared.read_bytes().splitlines()}
    fs = os.statvfs(tmp_path).f_fsid
    assert archives == {f"{os.path.realpath(p)} (filesystem {fs})" for p in (one, two)}


@contextmanager
def loop_mounted(image: Path, where: Path) -> Iterator[int]:
    """image mounted at where through a new loop device; yields the mount's st_dev."""
    subprocess.run(["mount", "-o", "loop", str(image), str(where)], check=True)
    try:
        yield where.stat().st_dev
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a filesystem needs root")
def test_proofs_stand_when_the_disk_comes_back_under_another_device_number(
    tmp_path: Path,
) -> None:
    """A cold disk plugged into another port (or a ZFS dataset mounted in another order after
    a reboot) has another st_dev; its files are the same files, and their proofs stand.  The
    filesystem's own id (statvfs) is what a proof names, not the device number."""
    image, mnt, spare = tmp_path / "cold.img", tmp_path / "mnt", tmp_path / "spare.img"
    for f, size in ((image, "16M"), (spare, "1M")):
        subprocess.run(["truncate", "-s", size, str(f)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    mnt.mkdir()
    with loop_mounted(image, mnt) as first:
        archive(mnt / "A", FULL_S1, INC_S1_S2)
        code, doc, err = scrub(mnt / "A")
        assert code == 0 and sorted(read_now(doc)) == sorted([FULL_S1, INC_S1_S2]), err
    holder = subprocess.run(
        ["losetup", "-f", "--show", str(spare)], check=True, capture_output=True, text=True
    ).stdout.strip()  # takes the loop device the image had: it comes back on another one
    try:
        with loop_mounted(image, mnt) as second:
            assert second != first
            code, doc, err = scrub(mnt / "A", "--max-age", "3600")
            assert code == 0 and read_now(doc) == [] and doc["unproven_bytes"] == 0, err
            flip(mnt / "A" / FULL_S1)  # and a change is still seen on the same filesystem
            code, doc, err = scrub(mnt / "A", "--max-age", "3600")
            assert code == 1 and read_now(doc) == [FULL_S1], err
    finally:
        subprocess.run(["losetup", "-d", holder], check=False)


@pytest.mark.parametrize("mtime", ["restored", "new"])
def test_a_file_rewritten_in_place_at_the_same_size_is_proven_again(
    tmp_path: Path, mtime: str
) -> None:
    """restored: `touch -r` after the rewrite (only ctime tells); new: `cat damaged > file`."""
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    assert scrub(root)[0] == 0
    before = (root / FULL_S1).stat()
    flip(root / FULL_S1)
    if mtime == "restored":
        os.utime(root / FULL_S1, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = (root / FULL_S1).stat()
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    code, doc, err = scrub(root, "--max-age", "30")
    assert code == 1 and read_now(doc) == [FULL_S1], err
    assert result(doc, FULL_S1) == "damaged"


def test_a_check_records_proofs_a_scrub_trusts(tmp_path: Path) -> None:
    """check's records name the file too: a scrub right after it has nothing due."""
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    assert scrub(root, "--max-bytes", "1")[0] == 0  # the archive has a ledger: check records
    assert zverify("cold", "check", "-q", str(root)).returncode == 0
    code, doc, err = scrub(root, "--max-age", "30")
    assert code == 0 and read_now(doc) == [] and doc["unproven_bytes"] == 0, err


def _strip_identity(root: Path) -> None:
    """The ledger as a zverify that did not record identities wrote it: the same records
    without archive, dev, ino, mtime_ns, ctime_ns, chained again, and its head."""
    prev, out = "0" * 64, b""
    for line in _lines(root):
        doc = json.loads(line)
        for key in ("archive", "dev", "ino", "mtime_ns", "ctime_ns"):
            doc.pop(key, None)
        line = (json.dumps({**doc, "prev": prev}, separators=(",", ":")) + "\n").encode()
        out += line
        prev = hashlib.sha256(line).hexdigest()
    (root / LEDGER).write_bytes(out)
    (root / HEAD).write_text(json.dumps({"lines": out.count(b"\n"), "last": prev}))


def test_old_ledger_lines_without_identity_are_read_again_once(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    assert scrub(root)[0] == 0
    _strip_identity(root)
    before = (root / FULL_S1).stat()
    flip(root / FULL_S1)
    os.utime(root / FULL_S1, ns=(before.st_atime_ns, before.st_mtime_ns))
    code, doc, err = scrub(root, "--max-age", "30")  # accepted, and proves nothing
    assert code == 1 and sorted(read_now(doc)) == sorted([FULL_S1, INC_S1_S2]), err
    code, doc, err = scrub(root, "--max-age", "30")  # the new records stand (the damaged
    assert code == 1 and read_now(doc) == [FULL_S1], err  # one is read first, every time)


# -- proofs dated in the future (C3) ------------------------------------------------------


def at_time(when: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`zverify ARGS` with the clock set by `faketime WHEN...` (libfaketime), as a host whose
    clock was wrong would run it."""
    if shutil.which("faketime") is None:
        pytest.skip("faketime is not installed (scripts/setup.sh installs it)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"LC_ALL": "C.UTF-8"}
    return subprocess.run(
        ["faketime", *when, console_script(), *args],
        capture_output=True, text=True, cwd="/", env=env, check=False,
    )  # fmt: skip


def test_a_proof_dated_in_the_future_is_read_again_first(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    ahead = at_time(FAR_AHEAD, "cold", "scrub", "-q", str(root))  # one night, years ahead
    assert ahead.returncode == 0, ahead.stderr
    proven_at = json.loads(_lines(root)[0])["time"]
    assert proven_at.startswith("2031-01-01T00:00")
    for name in (INC_S1_S2, INC_S2_S3):
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    flip(root / FULL_S1)  # the full rots
    code, doc, err = scrub(root, "--max-bytes", "1")
    assert code == 1 and read_now(doc) == [FULL_S1], err  # first, not last until 2031
    assert doc["future_proofs"] == [{"file": FULL_S1, "proven_at": proven_at}]
    text = zverify("cold", "scrub", "--max-age", "30", str(root))
    assert text.returncode == 1, text.stdout + text.stderr  # still damaged: read first again
    assert "PROVEN" not in text.stdout


def test_an_archive_proven_only_in_the_future_has_no_negative_age(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    assert at_time(FAR_AHEAD, "cold", "scrub", "-q", str(root)).returncode == 0
    prom = tmp_path / "cold.prom"
    done = zverify("cold", "scrub", "--max-bytes", "1", "--prometheus", str(prom), str(root))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    future = [line for line in lines if line.startswith("future proof:")]
    assert len(future) == 2 and all("at 2031-01-01T00:00" in line for line in future), lines
    where = f'archive="{root}"'
    metrics = _metrics(prom)
    assert metrics[f"zverify_cold_archive_oldest_proof_age_seconds{{{where}}}"] == "+Inf"
    assert int(metrics[f"zverify_cold_archive_unproven_bytes{{{where}}}"]) > 0
    code, doc, err = scrub(root, "--max-age", "30")  # the other file, found as it was
    assert code == 0 and len(read_now(doc)) == 1 == len(doc["future_proofs"]), err
    assert read_now(doc) == [f["file"] for f in doc["future_proofs"]]
    code, doc, err = scrub(root, "--max-age", "30")  # every proof stands now
    assert code == 0 and read_now(doc) == [] and doc["future_proofs"] == [], err
    assert 0 <= doc["oldest_proof_age_seconds"] < 600


def test_a_proof_a_little_ahead_is_a_proof_of_age_zero(tmp_path: Path) -> None:
    """Within SKEW (5 minutes) a proof ahead of the clock stands: its age is 0, not < 0."""
    root = archive(tmp_path / "cold", FULL_S1)
    assert at_time(["-f", "+120s"], "cold", "scrub", "-q", str(root)).returncode == 0
    prom = tmp_path / "cold.prom"
    code, doc, err = scrub(root, "--max-age", "1", "--prometheus", str(prom))
    assert code == 0 and read_now(doc) == [] and doc["future_proofs"] == [], err
    assert doc["oldest_proof_age_seconds"] == 0
    assert (
        _metrics(prom)[f'zverify_cold_archive_oldest_proof_age_seconds{{archive="{root}"}}'] == "0"
    )


# -- a bucket's ledger (the real S3 server of tests/cold/store) --------------------------


def _put(env: "S3Env", key: str, data: bytes) -> None:
    env.client.put_object(Bucket=env.bucket, Key=key, Body=data)


@pytest.mark.s3
def test_a_bucket_object_rewritten_at_the_same_size_is_proven_again(
    s3env: "S3Env", tmp_path: Path
) -> None:
    ledger = str(tmp_path / "bucket.jsonl")
    good = (STREAMS / FIXTURE[FULL_S1]).read_bytes()
    _put(s3env, f"archive/{FULL_S1}", good)
    code, doc, err = scrub_url(s3env.url, "--ledger", ledger)
    assert code == 0 and read_now(doc) == [FULL_S1], err
    damaged = bytearray(good)
    damaged[100_000] ^= 0x55
    _put(s3env, f"archive/{FULL_S1}", bytes(damaged))  # a new ETag; the same key and size
    code, doc, err = scrub_url(s3env.url, "--ledger", ledger, "--max-age", "30")
    assert code == 1 and read_now(doc) == [FULL_S1], err
    assert result(doc, FULL_S1) == "damaged"


@pytest.mark.s3
def test_a_ledger_shared_by_two_bucket_prefixes_lends_no_proof(
    s3env: "S3Env", tmp_path: Path
) -> None:
    ledger = str(tmp_path / "bucket.jsonl")
    good = (STREAMS / FIXTURE[FULL_S1]).read_bytes()
    damaged = bytearray(good)
    damaged[100_000] ^= 0x55
    _put(s3env, f"archive/{FULL_S1}", good)
    _put(s3env, f"offsite/{FULL_S1}", bytes(damaged))
    offsite = f"s3://{s3env.bucket}/offsite"
    assert scrub_url(s3env.url, "--ledger", ledger)[0] == 0
    code, doc, err = scrub_url(offsite, "--ledger", ledger, "--max-age", "30")
    assert code == 1 and result(doc, FULL_S1) == "damaged", err
    code, doc, err = scrub_url(s3env.url, "--ledger", ledger, "--max-age", "30")
    assert code == 0 and read_now(doc) == [], err  # its own proof still stands


def scrub_url(url: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    done = zverify("cold", "scrub", "--json", *extra, url)
    return done.returncode, json.loads(done.stdout) if done.stdout else {}, done.stderr
