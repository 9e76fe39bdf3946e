"""What no installable real S3 server does: lifecycle rules and Glacier thaws.

STAND-IN: versitygw, the real server of the other tests, answers NotImplemented to lifecycle
configuration and to RestoreObject, and ignores storage classes (tests/tools/test_s3_server.py).
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
from typing import Any

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.cold.store.bucket_fixtures import s3_import

pytestmark = [pytest.mark.s3, needs_installed_command]

STREAMS = Path(__file__).resolve().parents[2] / "data" / "streams"
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


def new_bucket(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """A fresh bucket in moto, and the AWS variables (of the zverify run) set to reach it."""
    import boto3

    for name, value in {**KEYS, "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client("s3", endpoint_url=moto_url)
    name = f"standin-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=name)
    return client, name


@pytest.fixture
def bucket(moto_url: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    client, name = new_bucket(moto_url, monkeypatch)
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
    from zverify.cold.store.s3 import S3Store

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


# -- restore --thaw of one chain out of several ---------------------------------------------

INDEX = {e["file"]: e for e in json.loads((STREAMS / "index.json").read_text())["streams"]}
# Two datasets in GLACIER, their sidecars in STANDARD (as `cold send --storage-class` leaves
# them).  zv/fs@s3 is reached with the fewest bytes by the full, s1->s2 and s2->s3 (745,128
# bytes); the -I package s1->s3 reaches it too, 936 bytes dearer: not part of the chain.
CHAIN = {
    "zv%2Ffs@s1.zfsfull": "full_fs_s1.zstream",
    "zv%2Ffs@s1-@s2.zfsinc": "incr_fs_s1_s2.zstream",
    "zv%2Ffs@s2-@s3.zfsinc": "incr_empty_fs_s2_s3.zstream",
}
OTHERS = {
    "zv%2Ffs@s1-@s3.zfsincstream": "package_I_fs_s1_s3.zstream",
    "zv%2Fenc@s1.zfsfull": "raw_w_enc_s1.zstream",
    "zv%2Fenc@s1-@s2.zfsinc": "raw_w_enc_s1_s2.zstream",
}


def sidecar_of(stream: str) -> bytes:
    """What `cold send` writes beside a stream, from the fixture's own record of it."""
    e = INDEX[stream]
    doc = {
        "dataset": e["dataset"],
        "from_guid": str(e["from_guid"] or 0),
        "to_guid": str(e["to_guid"]),
        "to_snapshot": e["to"].partition("@")[2],
        "snapshots": [c["name"].partition("@")[2] for c in e["contains"]],
        "bytes": e["size"],
    }
    return json.dumps(doc).encode()


@pytest.fixture
def chains(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    client, name = new_bucket(moto_url, monkeypatch)
    for key, stream in {**CHAIN, **OTHERS}.items():
        body = (STREAMS / stream).read_bytes()
        client.put_object(Bucket=name, Key=f"archive/{key}", Body=body, StorageClass="GLACIER")
        client.put_object(Bucket=name, Key=f"archive/{key}.json", Body=sidecar_of(stream))
    return client, name


def size(stream: str) -> int:
    return int(INDEX[stream]["size"])


def test_restore_thaw_dry_run_lists_exactly_the_chain_with_bytes(chains) -> None:
    client, name = chains
    url = f"s3://{name}/archive"
    r = zverify("cold", "restore", "--thaw", "-n", "--dataset", "zv/fs", url, "tank/r")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    listed = [x for x in r.stderr.splitlines() if x.startswith("zverify: would be thawed ")]
    assert [x.split()[4] for x in listed] == list(CHAIN), r.stderr  # in the chain's order
    for line, stream in zip(listed, CHAIN.values(), strict=True):
        assert f"({size(stream):,} bytes, GLACIER): in the chain of @s3" in line, line
    total = sum(map(size, CHAIN.values()))
    assert f"{len(CHAIN)} archived object(s), {total:,} bytes, would be thawed" in r.stderr
    assert "3-5 hours" in r.stderr  # GLACIER, Standard tier
    left = sum(map(size, OTHERS.values()))
    assert f"{len(OTHERS)} other archived object(s), {left:,} bytes, left frozen" in r.stderr
    assert not any(key in r.stderr for key in OTHERS), r.stderr
    assert set(thawed(client, name).values()) == {""}  # a dry run asks for nothing


def test_restore_thaw_asks_only_for_the_chain_and_reads_only_it(chains, tmp_path: Path) -> None:
    """STAND-IN ZFS as well (tests/cold/standin.py): its `zfs receive` records a snapshot only
    when it was fed a fixture stream byte for byte, so the restore reaches its end here."""
    from tests.cold.standin import ZfsStandIn

    client, name = chains
    url = f"s3://{name}/archive"
    zfs = ZfsStandIn(tmp_path / "zfs")
    r = zverify("cold", "restore", "--thaw", "--no-progress", "--dataset", "zv/fs", url, "tank/r",
                env=zfs.env())  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    states = thawed(client, name)
    for key in CHAIN:
        assert 'ongoing-request="false"' in states[f"archive/{key}"], states
    for key in OTHERS:  # never asked for: no thaw, and no GET (each named, not read)
        assert states[f"archive/{key}"] == "", states
        (line,) = [x for x in r.stderr.splitlines() if f" {key}: " in x]
        assert "unreadable" in line and "left frozen in GLACIER" in line and "not read" in line
    guid = INDEX["incr_empty_fs_s2_s3.zstream"]["to_guid"]
    assert f"restored tank/r@s3 (guid {guid})" in r.stdout
    received = (zfs.state / "received").read_text().splitlines()
    assert {row.split("\t")[0] for row in received} == {"tank/r@s1", "tank/r@s2", "tank/r@s3"}


def test_a_stream_without_a_sidecar_is_thawed_too_and_says_why(chains) -> None:
    client, name = chains
    client.delete_object(Bucket=name, Key="archive/zv%2Fenc@s1-@s2.zfsinc.json")
    url = f"s3://{name}/archive"
    r = zverify("cold", "restore", "--thaw", "-n", "--dataset", "zv/fs", url, "tank/r")
    assert r.returncode == 2, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if "zv%2Fenc@s1-@s2.zfsinc " in x]
    assert "would be thawed" in line and "no sidecar says what it holds" in line
    listed = [x for x in r.stderr.splitlines() if x.startswith("zverify: would be thawed ")]
    assert len(listed) == len(CHAIN) + 1, r.stderr


def test_archived_sidecars_are_thawed_first_alone(chains, tmp_path: Path) -> None:
    """moto thaws at once (as Expedited may): the chain is then planned in the same run."""
    from tests.cold.standin import ZfsStandIn

    client, name = chains
    key = "zv%2Ffs@s1.zfsfull.json"
    body = sidecar_of(CHAIN["zv%2Ffs@s1.zfsfull"])
    client.put_object(Bucket=name, Key=f"archive/{key}", Body=body, StorageClass="GLACIER")
    url = f"s3://{name}/archive"
    dry = zverify("cold", "restore", "--thaw", "-n", "--dataset", "zv/fs", url, "tank/r")
    assert dry.returncode == 2, dry.stderr
    (line,) = [x for x in dry.stderr.splitlines() if x.startswith("zverify: would be thawed ")]
    assert f" {key} " in line and "the chain is planned from it once it can be read" in line
    assert "left frozen" not in dry.stderr  # which are needed is not known yet
    zfs = ZfsStandIn(tmp_path / "zfs")
    r = zverify("cold", "restore", "--thaw", "--no-progress", "--dataset", "zv/fs", url, "tank/r",
                env=zfs.env())  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    states = thawed(client, name)
    asked = {k.removeprefix("archive/") for k, v in states.items() if v}
    assert asked == {key, *CHAIN}, states


def test_a_snapshot_only_a_package_carries_is_thawed_with_the_package(
    chains, tmp_path: Path
) -> None:
    """@s2 is inside the -I package s1->s3 once s1->s2 is gone; its sidecar names it, with no
    GUID: the route is the package's base, then the package."""
    from tests.cold.standin import ZfsStandIn

    client, name = chains
    for key in ("zv%2Ffs@s1-@s2.zfsinc", "zv%2Ffs@s1-@s2.zfsinc.json"):
        client.delete_object(Bucket=name, Key=f"archive/{key}")
    url = f"s3://{name}/archive"
    args = ("cold", "restore", "--thaw", "--snapshot", "s2", "--dataset", "zv/fs", url, "tank/r")
    dry = zverify(*args[:3], "-n", *args[3:])
    assert dry.returncode == 2, dry.stderr
    listed = [x for x in dry.stderr.splitlines() if x.startswith("zverify: would be thawed ")]
    assert [x.split()[4] for x in listed] == ["zv%2Ffs@s1.zfsfull", "zv%2Ffs@s1-@s3.zfsincstream"]
    assert all("in the chain of @s2" in x for x in listed), listed
    zfs = ZfsStandIn(tmp_path / "zfs")
    r = zverify(*args, "--no-progress", env=zfs.env())
    assert r.returncode == 0, r.stdout + r.stderr
    guid = INDEX["incr_fs_s1_s2.zstream"]["to_guid"]
    assert f"restored tank/r@s2 (guid {guid})" in r.stdout


def test_a_sidecar_that_lies_refuses_the_restore_as_not_verified(chains, tmp_path: Path) -> None:
    """The sidecars only choose what to thaw: streams that do not restore what they promised,
    while objects were left unread, are exit 2 (not 1: what was not read might have)."""
    from tests.cold.standin import ZfsStandIn

    client, name = chains
    for package in ("zv%2Ffs@s1-@s3.zfsincstream", "zv%2Ffs@s1-@s3.zfsincstream.json"):
        client.delete_object(Bucket=name, Key=f"archive/{package}")  # @s9 alone is the newest
    key = "archive/zv%2Ffs@s2-@s3.zfsinc.json"
    doc = json.loads(sidecar_of(CHAIN["zv%2Ffs@s2-@s3.zfsinc"]))
    doc |= {"to_guid": "12345", "to_snapshot": "s9"}
    client.put_object(Bucket=name, Key=key, Body=json.dumps(doc).encode())
    url = f"s3://{name}/archive"
    zfs = ZfsStandIn(tmp_path / "zfs")
    r = zverify("cold", "restore", "--thaw", "--no-progress", "--dataset", "zv/fs", url, "tank/r",
                env=zfs.env())  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "@12345 cannot be restored" in r.stderr
    assert "not read, left frozen outside the chain the sidecars planned" in r.stderr
    assert not (zfs.state / "received").exists()  # nothing received
