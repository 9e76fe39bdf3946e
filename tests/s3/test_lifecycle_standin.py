"""A bucket lifecycle rule that expires the archive's objects by age, reported by `cold check`.

STAND-IN: versitygw, the real server of the other tests, answers NotImplemented to lifecycle
configuration (tests/s3/test_server.py), and no installable server implements lifecycle rules
faithfully; moto's server mode (a mock of S3, PyPI `moto`) stores and returns them, which is
all this needs: zverify only reads the rules.  Nothing here is a checksum or lock oracle."""

from __future__ import annotations

import json
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
def bucket(moto_url: str, monkeypatch: pytest.MonkeyPatch):
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
        client.put_object(Bucket=name, Key=f"archive/{key}", Body=(STREAMS / stream).read_bytes())
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
