"""What no installable real S3 server does: lifecycle rules and Glacier thaws.

STAND-IN: versitygw, the real server of the other tests, answers NotImplemented to lifecycle
configuration and to RestoreObject, and ignores storage classes (tests/s3/test_server.py).
moto's server mode (a mock of S3, PyPI `moto`) stores and returns lifecycle rules, refuses a
GET of a DEEP_ARCHIVE object (InvalidObjectState) and completes a RestoreObject at once: the
state machine zverify drives.  Nothing here is a checksum or lock oracle."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.s3.fixtures import s3_import

pytestmark = [pytest.mark.s3, needs_installed_command]

STREAMS = Path(__file__).resolve().parents[1] / "data" / "streams"
KEYS = {"AWS_ACCESS_KEY_ID": "standinaccess0001", "AWS_SECRET_ACCESS_KEY": "standinsecret0001"}


@pytest.fixture(scope="module")
def moto_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    s3_import("moto.server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path_factory.mktemp("moto") / "log", "wb")  # noqa: SIM115
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("moto's server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)
        log.close()


@pytest.fixture
def bucket(moto_url: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    import boto3

    for name, value in {**KEYS, "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client("s3", endpoint_url=moto_url)
    name = f"standin-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=name)
    for key, stream in (
        ("fs@s1.zfs", "full_fs_s1.zstream"),
        ("fs@s1-s2.zfs", "incr_fs_s1_s2.zstream"),
    ):
        body = (STREAMS / stream).read_bytes()
        kind = getattr(request, "param", "STANDARD")
        client.put_object(Bucket=name, Key=f"archive/{key}", Body=body, StorageClass=kind)
    return client, name


def rule(prefix: str, status: str = "Enabled", days: int = 30) -> dict:
    return {
        "ID": f"expire-{prefix or 'all'}",
        "Status": status,
        "Filter": {"Prefix": prefix},
        "Expiration": {"Days": days},
    }


def check(name: str) -> tuple[int, list[dict]]:
    r = zverify("cold", "check", "--json", f"s3://{name}/archive")
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    return r.returncode, doc["problems"]


@pytest.mark.parametrize("prefix", ["archive/", "", "arch"])
def test_a_rule_expiring_the_archive_by_age_is_reported(bucket, prefix: str) -> None:
    client, name = bucket
    client.put_bucket_lifecycle_configuration(
        Bucket=name, LifecycleConfiguration={"Rules": [rule(prefix)]}
    )
    code, problems = check(name)
    assert code == 1
    (problem,) = problems
    assert problem["kind"] == "lifecycle" and rule(prefix)["ID"] in problem["message"]


@pytest.mark.parametrize("other", [rule("logs/"), rule("archive/", status="Disabled")])
def test_a_rule_that_cannot_touch_the_archive_is_not(bucket, other: dict) -> None:
    client, name = bucket
    client.put_bucket_lifecycle_configuration(
        Bucket=name, LifecycleConfiguration={"Rules": [other]}
    )
    assert check(name) == (0, [])


def thawed(client, name: str) -> dict[str, str]:
    """key -> the Restore header of each object (empty: never thawed)."""
    listed = client.list_objects_v2(Bucket=name)["Contents"]
    return {
        o["Key"]: client.head_object(Bucket=name, Key=o["Key"]).get("Restore", "") for o in listed
    }


@pytest.mark.parametrize("bucket", ["DEEP_ARCHIVE"], indirect=True)
def test_a_frozen_archive_is_unreadable_and_restore_thaw_asks_for_it(bucket) -> None:
    client, name = bucket
    url = f"s3://{name}/archive"
    code, _ = check(name)
    assert code == 2  # frozen objects are not read: nothing is proven
    r = zverify("cold", "check", url)
    assert "DEEP_ARCHIVE: thaw it first" in r.stdout
    dry = zverify("cold", "restore", "--thaw", "--dry-run", url, "pool/restored")
    assert dry.returncode == 2 and "would be thawed" in dry.stderr
    assert "within 12 hours" in dry.stderr and "fs@s1.zfs" in dry.stderr
    assert set(thawed(client, name).values()) == {""}  # a dry run asks for nothing
    zverify("cold", "restore", "--thaw", "--tier", "Bulk", "--days", "2", url, "pool/restored")
    states = thawed(client, name)
    assert all('ongoing-request="false"' in s for s in states.values()), states
    assert check(name) == (0, [])  # thawed: read whole, and intact


def test_send_storage_class_applies_to_streams_not_sidecars(bucket) -> None:
    """The class new objects are written as (what `cold send --storage-class` passes)."""
    from zverify.cold.s3 import S3Store

    client, name = bucket
    store = S3Store(f"s3://{name}/archive", storage_class="STANDARD_IA")
    for key in ("fs@s3.zfs", "fs@s3.zfs.json"):
        w = store.writer(key)
        os.write(w.fd, b"{}")
        w.commit()
    head = {
        k: client.head_object(Bucket=name, Key=f"archive/{k}")
        for k in ("fs@s3.zfs", "fs@s3.zfs.json")
    }
    assert head["fs@s3.zfs"].get("StorageClass") == "STANDARD_IA"
    assert head["fs@s3.zfs.json"].get("StorageClass", "STANDARD") == "STANDARD"
