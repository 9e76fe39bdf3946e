"""Differential: seeded random archives checked in a directory and in a bucket (a real
versitygw) must get the same verdict.  The directory check is the oracle here: its chain
model is proven against real `zfs receive` in tests/cold/test_zfs_receive_differential.py.  Each
case picks real streams (tests/data/streams), names them as people do (some names lie),
damages some (a flipped byte, a cut end), adds junk, and compares exit codes, the kind of
every problem of every file, and what each dataset can restore."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.cold.store.bucket_fixtures import S3Env
from tests.cold.store.test_bucket import STREAMS

pytestmark = [pytest.mark.s3, needs_installed_command]

CASES = 12
# stream -> names people give it (the last of each lies about what it holds)
NAMES = {
    "full_fs_s1.zstream": ["fs@s1.zfs", "zv_fs@s1.full", "fs@s9.zfs"],
    "incr_fs_s1_s2.zstream": ["fs@s1-s2.zfs", "zv_fs@s1-@s2.inc", "fs@s2-s3.zfs"],
    "replicate_R_fs_s2.zstream": ["fs-R@s2.zfs", "zv_fs@s2.full", "fs-R@s1.zfs"],
    "incr_empty_fs_s2_s3.zstream": ["fs@s2-s3.zfs", "zv_fs@s2-@s3.inc", "fs@s1-s3.zfs"],
    "package_I_fs_s1_s3.zstream": ["fs@s1-s3-I.zfs", "zv_fs@s1-@s3.inc"],
    "resumed_fs_s1.zstream": ["fs@s1-resumed.zfs"],
    "compressed_c_fs_s1.zstream": ["fs-c@s1.zfs"],
}


def archive(rng: random.Random) -> dict[str, bytes]:
    """name -> bytes of one random archive."""
    files: dict[str, bytes] = {}
    for stream in rng.sample(sorted(NAMES), rng.randint(1, len(NAMES))):
        name = rng.choice(NAMES[stream])
        if name in files:
            continue
        data = bytearray((STREAMS / stream).read_bytes())
        damage = rng.random()
        if damage < 0.15:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif damage < 0.25:
            del data[rng.randrange(1, len(data)) :]
        files[name] = bytes(data)
    if rng.random() < 0.2:
        files["notes.txt"] = b"not a stream\n"
    return files


def verdict(r) -> tuple[int, set[tuple[str, str]], dict[str, dict[str, str]]]:
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    problems = {(p["file"], p["kind"]) for f in doc["files"] for p in f["problems"]}
    problems |= {(p.get("file", ""), p["kind"]) for p in doc["problems"]}
    for d in doc["datasets"]:
        problems |= {(p.get("file", ""), p["kind"]) for p in d["problems"]}
    restorable = {
        d["dataset"]: {r["snapshot"]: r["guid"] for r in d["restorable"]} for d in doc["datasets"]
    }
    return r.returncode, problems, restorable


@pytest.mark.parametrize("seed", range(CASES))
def test_a_bucket_is_judged_as_the_same_files_in_a_directory(
    s3env: S3Env, tmp_path: Path, seed: int
) -> None:
    files = archive(random.Random(seed))
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        s3env.client.put_object(Bucket=s3env.bucket, Key=f"archive/{name}", Body=data)
    local = verdict(zverify("cold", "check", "--json", str(tmp_path)))
    bucket = verdict(zverify("cold", "check", "--json", s3env.url))
    assert bucket == local, (seed, sorted(files))
