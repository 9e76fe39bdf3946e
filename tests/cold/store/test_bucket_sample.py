"""`cold check --depth sample` against a real S3 server (versitygw): ranged GETs of the
objects, records proven by the streams' own checksums, bytes flipped at rest in the server's
backend (its stored ETag and checksum stay the old ones, so only a read can tell)."""

from __future__ import annotations

import base64
import hashlib
import json
import random
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.cold.store.bucket_fixtures import S3Env
from tests.cold.store.test_bucket import STREAMS, problems
from tests.sendstream.streamgen import StreamBuilder, walk

pytestmark = [pytest.mark.s3, needs_installed_command]

MIB = 1 << 20
SLOT = 4 * MIB  # zverify.cold.proof.sample.SLOT: a sample picks slots of this size


def put(env: S3Env, key: str, data: bytes) -> Path:
    """The stream and the sidecar `cold send` would write beside it; the backend file."""
    env.client.put_object(
        Bucket=env.bucket, Key=f"archive/{key}", Body=data, ChecksumAlgorithm="SHA256"
    )
    doc = {
        "dataset": "zv/fs",
        "kind": "full",
        "bytes": len(data),
        "s3_checksum_sha256": base64.b64encode(hashlib.sha256(data).digest()).decode(),
    }
    env.client.put_object(
        Bucket=env.bucket, Key=f"archive/{key}.json", Body=json.dumps(doc).encode()
    )
    return env.server.backend_file(env.bucket, f"archive/{key}")


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def sample(env: S3Env, *more: str, expect: int) -> dict:
    r = zverify("cold", "check", "--json", "--depth", "sample", *more, env.url)
    assert r.returncode == expect, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    report = json.loads(r.stdout)
    assert report["depth"] == "sample" and report["datasets"] == []
    return report


def big_stream(mib: int) -> bytes:
    """A full stream of about mib MiB: 128 KiB WRITEs (checksums by the tests' own fletcher-4;
    one payload repeated, so only the headers differ)."""
    b = StreamBuilder()
    b.begin("zv/fs@big", 0x5EED, 0)
    b.object(2)
    block = random.Random(1).randbytes(128 << 10)
    for i in range(mib * 8 - 1):
        b.write(2, i << 17, block)
    b.end()
    return bytes(b.data)


def test_a_small_intact_stream_is_proven_whole_and_the_verdict_says_what_was_not(
    s3env: S3Env,
) -> None:
    data = (STREAMS / "full_fs_s1.zstream").read_bytes()
    put(s3env, "fs@s1.zfs", data)
    r = zverify("cold", "check", "--depth", "sample", s3env.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SAMPLE AGREES" in r.stdout and "chains not proven" in r.stdout
    (f,) = sample(s3env, expect=0)["files"]
    # one slot: the run starts at the BEGIN and proves every byte
    assert f["stored"]["sample"]["ranges"] == [[0, len(data)]]
    assert f["stored"]["sample"]["records"] == sum(r.type != 0 for r in walk(data))


def test_a_byte_rotted_at_rest_is_found_by_the_sample_not_by_the_metadata(
    s3env: S3Env,
) -> None:
    data = (STREAMS / "full_fs_s1.zstream").read_bytes()
    backend = put(s3env, "fs@s1.zfs", data)
    at = next(r for r in walk(data) if r.type == 3).offset + 400  # inside a WRITE's data
    flip(backend, at)
    r = zverify("cold", "check", "--json", "--depth", "metadata", s3env.url)
    assert r.returncode == 0, r.stdout + r.stderr  # the server's checksum is the old one
    (problem,) = problems(sample(s3env, expect=1))
    assert problem["kind"] == "damaged" and problem["file"] == "fs@s1.zfs"
    # one range is the whole object: the server's checksum of it fails before any walk
    assert "checksum" in problem["message"]


def test_a_share_of_a_large_stream_is_read_by_range_and_never_claims_a_rotted_byte(
    s3env: S3Env,
) -> None:
    data = big_stream(24)  # 6 slots
    backend = put(s3env, "fs@big.zfs", data)
    (f,) = sample(s3env, "--sample", "20", expect=0)["files"]
    got = f["stored"]["sample"]
    proven = got["proven_bytes"]
    assert SLOT // 2 < proven < len(data) // 2, got  # two slots of six, about
    assert proven == sum(b - a for a, b in got["ranges"])
    at = len(data) // 2 + 1000
    flip(backend, at)
    for _ in range(3):  # where the runs fall is random: the flipped byte is never proven
        r = zverify("cold", "check", "--json", "--depth", "sample", "--sample", "30", s3env.url)
        report = json.loads(r.stdout)
        ranges = report["files"][0]["stored"]["sample"]["ranges"]
        assert not any(a <= at < b for a, b in ranges)
        found = [p for p in problems(report) if p["kind"] == "damaged"]
        assert r.returncode == (1 if found else 0), r.stdout + r.stderr
    whole = sample(s3env, "--sample", "100", expect=1)
    (problem,) = problems(whole)
    assert problem["damage_from"] <= at < problem["offset"] + 312


def test_sample_is_for_buckets_and_a_percentage(s3env: S3Env, tmp_path: Path) -> None:
    r = zverify("cold", "check", "--depth", "sample", str(tmp_path))
    assert r.returncode == 2 and "s3://" in r.stderr
    for pct in ("0", "101", "-5"):
        r = zverify("cold", "check", "--depth", "sample", "--sample", pct, s3env.url)
        assert r.returncode == 2 and "--sample" in r.stderr, (pct, r.stderr)
