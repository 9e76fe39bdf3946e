"""`zverify cold` on an s3:// archive, against a real S3 server (versitygw): the same proofs
as in a directory.  The streams are real `zfs send` output (tests/data/streams), uploaded as
plain objects the way people upload them; sends and restores through real OpenZFS are in
tests/cold/test_zfs_s3.py."""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import json
import os
import socket
import threading
import zlib
from pathlib import Path

import pytest
import xxhash

from tests.cli.console import needs_installed_command, zverify
from tests.cold.store.bucket_fixtures import S3Env

pytestmark = [pytest.mark.s3, needs_installed_command]

STREAMS = Path(__file__).resolve().parents[2] / "data" / "streams"
# chain A: a full of zv/fs@s1 and an incremental to @s2; chain B: a -R package of @s2 and an
# incremental to @s3.  B restores everything A does and more: A is what prune removes.
CHAIN_A = {"fs@s1.zfs": "full_fs_s1.zstream", "fs@s1-s2.zfs": "incr_fs_s1_s2.zstream"}
CHAIN_B = {
    "fs-R@s2.zfs": "replicate_R_fs_s2.zstream",
    "fs@s2-s3.zfs": "incr_empty_fs_s2_s3.zstream",
}


def upload(env: S3Env, files: dict[str, str], prefix: str = "archive/") -> dict[str, str]:
    """Plain PUTs (as `aws s3 cp` does for small files); key -> ETag."""
    etags = {}
    for key, stream in files.items():
        answer = env.client.put_object(
            Bucket=env.bucket, Key=prefix + key, Body=(STREAMS / stream).read_bytes()
        )
        etags[key] = answer["ETag"]
    return etags


def keys(env: S3Env) -> list[str]:
    listed = env.client.list_objects_v2(Bucket=env.bucket, Prefix="archive/")
    return sorted(o["Key"][len("archive/") :] for o in listed.get("Contents", []))


def problems(report: dict) -> list[dict]:
    """Every problem of a check's JSON: the files' and the archive's."""
    return [p for f in report["files"] for p in f["problems"]] + report["problems"]


def check(env: S3Env, *more: str, expect: int) -> dict:
    r = zverify("cold", "check", "--json", *more, env.url)
    assert r.returncode == expect, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)


def stream_guids(stream: str) -> dict[str, str]:
    """snapshot -> guid as `zverify stream info` reads them from the local file."""
    r = zverify("stream", "info", "--json", str(STREAMS / stream))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    return {s["toname"]: str(s["toguid"]) for s in info["substreams"]}


def test_plain_objects_check_clean_with_the_guids_of_the_streams(s3env: S3Env) -> None:
    upload(s3env, {**CHAIN_A, **CHAIN_B})
    report = check(s3env, expect=0)
    assert report["valid"] is True
    fs = next(d for d in report["datasets"] if d["dataset"] == "zv/fs")
    restorable = {r["snapshot"]: r["guid"] for r in fs["restorable"]}
    want = stream_guids("full_fs_s1.zstream") | stream_guids("incr_empty_fs_s2_s3.zstream")
    for name, guid in want.items():
        assert str(restorable[name.partition("@")[2]]) == guid


def test_a_byte_flipped_at_rest_is_damage_though_the_server_still_lists_the_old_etag(
    s3env: S3Env,
) -> None:
    etags = upload(s3env, CHAIN_A)
    path = s3env.server.backend_file(s3env.bucket, "archive/fs@s1-s2.zfs")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    head = s3env.client.head_object(Bucket=s3env.bucket, Key="archive/fs@s1-s2.zfs")
    assert head["ETag"] == etags["fs@s1-s2.zfs"]  # the listing cannot tell
    report = check(s3env, expect=1)
    assert report["valid"] is False
    damaged = {p["file"] for p in problems(report) if p["kind"] == "damaged"}
    assert damaged == {"fs@s1-s2.zfs"}


def test_an_object_that_is_not_a_stream_is_reported_and_nothing_is_verified_of_it(
    s3env: S3Env,
) -> None:
    upload(s3env, CHAIN_A)
    s3env.client.put_object(Bucket=s3env.bucket, Key="archive/notes.txt", Body=b"hello\n")
    report = check(s3env, expect=1)
    kinds = {p["file"]: p["kind"] for p in problems(report)}
    assert kinds.get("notes.txt") in ("not-a-stream", "damaged"), kinds


def test_an_empty_prefix_is_no_archive(s3env: S3Env) -> None:
    report = check(s3env, expect=1)
    assert any(p["kind"] == "empty" for p in problems(report))


def test_a_bucket_that_does_not_exist_is_exit_2_in_one_line(s3env: S3Env) -> None:
    r = zverify("cold", "check", f"s3://{s3env.bucket}-missing/archive")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert f"s3://{s3env.bucket}-missing/archive/" in r.stderr.strip().splitlines()[-1]


def test_prune_deletes_only_the_proven_redundant_chain(s3env: S3Env) -> None:
    upload(s3env, {**CHAIN_A, **CHAIN_B})
    dry = zverify("cold", "prune", "--json", s3env.url)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    planned = json.loads(dry.stdout)
    fs = next(d for d in planned["datasets"] if d["dataset"] == "zv/fs")
    assert sorted(fs["remove"]) == sorted(CHAIN_A)
    assert keys(s3env) == sorted({**CHAIN_A, **CHAIN_B})  # a dry run deletes nothing
    done = zverify("cold", "prune", "--yes", s3env.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert keys(s3env) == sorted(CHAIN_B)
    after = check(s3env, expect=0)
    fs = next(d for d in after["datasets"] if d["dataset"] == "zv/fs")
    assert "s3" in {r["snapshot"] for r in fs["restorable"]}


def test_prune_in_a_versioned_bucket_removes_the_proven_versions(
    s3env_versioned: S3Env,
) -> None:
    env = s3env_versioned
    upload(env, {**CHAIN_A, **CHAIN_B})
    done = zverify("cold", "prune", "--yes", "--json", env.url)
    assert done.returncode == 0, done.stdout + done.stderr
    fs = next(d for d in json.loads(done.stdout)["datasets"] if d["dataset"] == "zv/fs")
    assert fs["deletion"] == "version-removed" and sorted(fs["deleted"]) == sorted(CHAIN_A)
    versions = env.client.list_object_versions(Bucket=env.bucket, Prefix="archive/")
    left = {v["Key"][len("archive/") :] for v in versions.get("Versions", [])}
    assert left == set(CHAIN_B)  # removed, not hidden behind delete markers
    assert not versions.get("DeleteMarkers")


def test_prune_never_deletes_a_locked_chain_and_names_the_date(s3env_locked: S3Env) -> None:
    env = s3env_locked
    upload(env, {**CHAIN_A, **CHAIN_B})
    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=2)
    env.client.put_object_retention(
        Bucket=env.bucket,
        Key="archive/fs@s1.zfs",
        Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until},
    )
    r = zverify("cold", "prune", "--yes", env.url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"locked until {until:%Y-%m-%d}" in r.stdout + r.stderr
    assert keys(env) == sorted({**CHAIN_A, **CHAIN_B})  # nothing of the dataset went


def test_an_object_replaced_by_one_of_the_same_size_is_never_deleted(s3env: S3Env) -> None:
    from zverify.cold.store.s3 import S3Store

    upload(s3env, CHAIN_A)
    store = S3Store(s3env.url)
    entry = next(e for e in store.entries() if e.key == "fs@s1.zfs")
    assert entry.st is not None
    from zverify.cold.entries import FileStamp

    proven = FileStamp.of(entry.st)
    data = bytearray((STREAMS / CHAIN_A["fs@s1.zfs"]).read_bytes())
    data[100] ^= 1
    s3env.client.put_object(Bucket=s3env.bucket, Key="archive/fs@s1.zfs", Body=bytes(data))
    from zverify.errors import ColdError

    with pytest.raises(ColdError, match="not the object that was verified"):
        store.delete("fs@s1.zfs", proven)
    assert "fs@s1.zfs" in keys(s3env)


def test_an_abandoned_upload_is_a_leftover_that_clean_aborts(
    s3env: S3Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload(s3env, CHAIN_A)
    started = s3env.client.create_multipart_upload(Bucket=s3env.bucket, Key="archive/fs@s3.zfs")
    s3env.client.upload_part(
        Bucket=s3env.bucket,
        Key="archive/fs@s3.zfs",
        UploadId=started["UploadId"],
        PartNumber=1,
        Body=b"x" * 1000,
    )
    young = check(s3env, expect=0)  # a part just arrived: a send may be running
    assert any("fs@s3.zfs" in f["file"] and f.get("in_progress") for f in young["files"])
    monkeypatch.setenv("ZVERIFY_S3_UPLOAD_IDLE", "0")
    old = check(s3env, expect=1)
    assert [p["kind"] for p in problems(old)] == ["partial"]
    blocked = zverify("cold", "prune", "--yes", s3env.url)
    assert blocked.returncode == 1 and "clean" in blocked.stdout + blocked.stderr
    cleaned = zverify("cold", "clean", "--yes", s3env.url)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert not s3env.client.list_multipart_uploads(Bucket=s3env.bucket).get("Uploads")
    check(s3env, expect=0)


class CuttingProxy:
    """A TCP proxy in front of the server that cuts the response to an object GET after
    `after` bytes (`cuts` times), and with ranged_after every ranged GET after that many: a
    connection that drops mid-body, as a real one does."""

    def __init__(self, port: int, cuts: int, after: int, ranged_after: int | None = None) -> None:
        self.target, self.cuts, self.after, self.ranged_after = port, cuts, after, ranged_after
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            state: dict[str, int | None] = {"left": None}  # bytes until the cut, when armed
            for copy, args in (
                (self._requests, (client, upstream)),
                (self._responses, (upstream, client)),
            ):
                threading.Thread(target=copy, args=(*args, state), daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket, state: dict) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                first = data.split(b"\r\n", 1)[0]
                is_get = first.startswith(b"GET ") and b"/archive/" in first
                ranged = b"\nrange:" in data.lower()
                if is_get and ranged and self.ranged_after is not None:
                    state["left"] = self.ranged_after
                elif is_get and not ranged and self.cuts > 0:
                    self.cuts -= 1
                    state["left"] = self.after
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def _responses(self, src: socket.socket, dst: socket.socket, state: dict) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                left = state["left"]
                if left is not None and len(data) > left:
                    dst.sendall(data[:left])
                    break
                if left is not None:
                    state["left"] = left - len(data)
                dst.sendall(data)
        for end in (dst, src):  # shutdown, not only close: it wakes the other thread's recv
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def close(self) -> None:
        self.sock.close()


def test_a_dropped_connection_is_resumed_with_a_ranged_get(s3env: S3Env) -> None:
    upload(s3env, CHAIN_A)
    proxy = CuttingProxy(s3env.server.port, cuts=2, after=20_000)
    try:
        r = zverify("cold", "check", "--json", "--endpoint-url", f"http://127.0.0.1:{proxy.port}",
                    s3env.url)  # fmt: skip
    finally:
        proxy.close()
    assert proxy.cuts == 0  # the cut happened
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["valid"] is True


def test_a_read_that_keeps_breaking_off_is_not_verified_never_damaged(s3env: S3Env) -> None:
    upload(s3env, CHAIN_A)
    # every read breaks off, and no resumed read gets a byte of the body further
    proxy = CuttingProxy(s3env.server.port, cuts=1000, after=100_000, ranged_after=10)
    try:
        r = zverify("cold", "check", "--json", "--endpoint-url", f"http://127.0.0.1:{proxy.port}",
                    s3env.url)  # fmt: skip
    finally:
        proxy.close()
    assert r.returncode == 2, r.stdout + r.stderr
    report = json.loads(r.stdout)
    kinds = {p["kind"] for p in problems(report)}
    assert "unreadable" in kinds and "damaged" not in kinds


# the checksum a sidecar records of its object, by algorithm: CRC-32 as `cold send` writes
# it now, SHA-256 as it did before (such sidecars are still held to their objects)
DIGESTS = {
    "crc32": lambda data: zlib.crc32(data).to_bytes(4, "big"),
    "sha256": lambda data: hashlib.sha256(data).digest(),
}


def put(env: S3Env, key: str, data: bytes, algorithm: str) -> None:
    env.client.put_object(
        Bucket=env.bucket, Key=f"archive/{key}", Body=data, ChecksumAlgorithm=algorithm.upper()
    )


def with_sidecar(
    env: S3Env, key: str, stream: str, size: int | None = None, algorithm: str = "crc32"
) -> bytes:
    """The stream PUT with its checksum, and a sidecar of the form `cold send` writes into a
    bucket (the size, and the checksum S3 must report) beside it."""
    data = (STREAMS / stream).read_bytes()
    put(env, key, data, algorithm)
    doc = {
        "dataset": "zv/fs",
        "kind": "full",
        "bytes": len(data) if size is None else size,
        f"s3_checksum_{algorithm}": base64.b64encode(DIGESTS[algorithm](data)).decode(),
    }
    env.client.put_object(
        Bucket=env.bucket, Key=f"archive/{key}.json", Body=json.dumps(doc).encode()
    )
    return data


@pytest.mark.parametrize("algorithm", sorted(DIGESTS))
def test_depth_metadata_compares_size_and_stored_checksum_and_says_it_read_nothing(
    s3env: S3Env, algorithm: str
) -> None:
    with_sidecar(s3env, "fs@s1.zfs", "full_fs_s1.zstream", algorithm=algorithm)
    r = zverify("cold", "check", "--depth", "metadata", s3env.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no stream byte read" in r.stdout and "not proven" in r.stdout
    report = check(s3env, "--depth", "metadata", expect=0)
    assert report["depth"] == "metadata" and report["datasets"] == []
    (f,) = report["files"]
    assert f["stored"]["compared"] == ["size", f"checksum_{algorithm}"]
    # a byte rotted at rest: the metadata cannot see it, and does not claim the content
    path = s3env.server.backend_file(s3env.bucket, "archive/fs@s1.zfs")
    data = bytearray(path.read_bytes())
    data[1000] ^= 1
    path.write_bytes(bytes(data))
    assert check(s3env, "--depth", "metadata", expect=0)["depth"] == "metadata"
    assert check(s3env, expect=1)["depth"] == "full"  # only a full read finds it


@pytest.mark.parametrize("algorithm", sorted(DIGESTS))
def test_depth_metadata_finds_an_object_replaced_by_one_of_the_same_size(
    s3env: S3Env, algorithm: str
) -> None:
    data = bytearray(with_sidecar(s3env, "fs@s1.zfs", "full_fs_s1.zstream", algorithm=algorithm))
    data[1000] ^= 1
    put(s3env, "fs@s1.zfs", bytes(data), algorithm)
    report = check(s3env, "--depth", "metadata", expect=1)
    (problem,) = problems(report)
    shown = {"crc32": "CRC-32", "sha256": "SHA-256"}[algorithm]
    assert problem["kind"] == "damaged" and shown in problem["message"]


def test_depth_metadata_of_a_wrong_size_is_damage_and_of_no_sidecar_unproven(
    s3env: S3Env,
) -> None:
    with_sidecar(s3env, "fs@s1.zfs", "full_fs_s1.zstream", size=12345)
    assert [p["kind"] for p in problems(check(s3env, "--depth", "metadata", expect=1))] == [
        "damaged"
    ]
    upload(s3env, {"fs@s1-s2.zfs": "incr_fs_s1_s2.zstream"})  # no sidecar: nothing to hold it to
    kinds = {p["file"]: p["kind"] for p in problems(check(s3env, "--depth", "metadata", expect=2))}
    assert kinds["fs@s1-s2.zfs"] == "unproven"


def test_depth_metadata_is_for_buckets(tmp_path: Path) -> None:
    r = zverify("cold", "check", "--depth", "metadata", str(tmp_path))
    assert r.returncode == 2 and "s3://" in r.stderr


def test_lock_extends_the_kept_chain_and_leaves_the_old_one_to_expire(
    s3env_locked: S3Env,
) -> None:
    env = s3env_locked
    upload(env, {**CHAIN_A, **CHAIN_B})
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=3)
    r = zverify("cold", "lock", "--json", "--days", "3", env.url)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert {f["file"]: f["status"] for f in doc["files"]} == dict.fromkeys(CHAIN_B, "extended")
    for key in CHAIN_B:
        held = env.client.get_object_retention(Bucket=env.bucket, Key=f"archive/{key}")
        assert held["Retention"]["Mode"] == "GOVERNANCE"
        assert held["Retention"]["RetainUntilDate"] >= soon - datetime.timedelta(minutes=5)
    for key in CHAIN_A:  # what prune removes is not extended
        head = env.client.head_object(Bucket=env.bucket, Key=f"archive/{key}")
        assert "ObjectLockRetainUntilDate" not in head
    shorter = json.loads(zverify("cold", "lock", "--json", "--days", "1", env.url).stdout)
    assert {f["status"] for f in shorter["files"]} == {"kept"}  # never shortened
    pruned = zverify("cold", "prune", "--yes", env.url)
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert keys(env) == sorted(CHAIN_B)


def test_lock_in_a_bucket_without_object_lock_is_exit_2_in_one_line(s3env: S3Env) -> None:
    upload(s3env, CHAIN_A)
    r = zverify("cold", "lock", "--days", "3", s3env.url)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "fs@s1" in last and "Object Lock" in last, last


def test_a_store_writer_uploads_growing_parts_and_proves_what_the_server_stored(
    s3env: S3Env,
) -> None:
    """What `cold send` writes through (the send itself runs on OpenZFS in tests/zfs)."""
    from zverify.cold.store.s3 import S3Store
    from zverify.cold.store.s3io import FIRST_PART, part_size

    assert part_size(1) == FIRST_PART and part_size(1001) == 2 * FIRST_PART
    assert sum(part_size(n) for n in range(1, 10_001)) > 5 << 40  # S3's largest object
    data = os.urandom(2 * FIRST_PART + 12345)
    store = S3Store(s3env.url)
    w = store.writer("big.zfsfull")
    view = memoryview(data)
    while view:
        view = view[os.write(w.fd, view[: 1 << 20]) :]
    w.sync()
    assert w.stored_size() == len(data)
    assert w.stored_sha256() is None  # a bucket's sidecar has the digests below instead
    w.commit()
    head = s3env.client.head_object(
        Bucket=s3env.bucket, Key="archive/big.zfsfull", ChecksumMode="ENABLED"
    )
    said = w.sidecar_digests()
    # S3's composite of parts of 8 MiB, 8 MiB and the rest, computed here from the bytes
    parts = [data[:FIRST_PART], data[FIRST_PART : 2 * FIRST_PART], data[2 * FIRST_PART :]]
    inner = b"".join(DIGESTS["crc32"](p) for p in parts)
    composite = base64.b64encode(DIGESTS["crc32"](inner)).decode() + "-3"
    assert head["ChecksumCRC32"] == said["s3_checksum_crc32"] == composite
    assert said["xxh3_128"] == xxhash.xxh3_128(data).hexdigest()
    got = s3env.client.get_object(Bucket=s3env.bucket, Key="archive/big.zfsfull")["Body"].read()
    assert got == data
    from zverify.errors import ColdError

    with pytest.raises(ColdError, match="already exists"):
        store.writer("big.zfsfull")


def test_a_discarded_writer_leaves_no_object_and_no_upload(s3env: S3Env) -> None:
    from zverify.cold.store.s3 import S3Store

    w = S3Store(s3env.url).writer("half.zfsfull")
    os.write(w.fd, b"x" * 100_000)
    assert w.discard() is None
    assert keys(s3env) == []
    assert not s3env.client.list_multipart_uploads(Bucket=s3env.bucket).get("Uploads")


def test_a_server_that_cannot_thaw_says_so_in_one_line(s3env: S3Env) -> None:
    """versitygw answers RestoreObject with NotImplemented (the thaw itself:
    test_bucket_lifecycle_thaw.py)."""
    from zverify.cold.store.s3 import S3Store
    from zverify.errors import ColdError

    upload(s3env, CHAIN_A)
    store = S3Store(s3env.url)
    store.entries()
    assert store.frozen() == []  # versitygw keeps every object STANDARD
    with pytest.raises(ColdError, match=r"thawing fs@s1\.zfs failed: NotImplemented"):
        store.thaw("fs@s1.zfs", 1, "Standard")


def test_a_bucket_is_scrubbed_with_a_local_ledger(s3env: S3Env, tmp_path: Path) -> None:
    upload(s3env, CHAIN_A)
    proofs = tmp_path / "bucket.ledger"
    r = zverify("cold", "scrub", "--json", "--ledger", str(proofs), s3env.url)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert sorted(f["file"] for f in doc["files"] if f["read"]) == sorted(CHAIN_A)
    assert doc["unproven_bytes"] == 0
    path = s3env.server.backend_file(s3env.bucket, "archive/fs@s1-s2.zfs")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    r = zverify("cold", "scrub", "--json", "--ledger", str(proofs), s3env.url)
    assert r.returncode == 1, r.stdout + r.stderr
    results = {f["file"]: f["result"] for f in json.loads(r.stdout)["files"]}
    assert results["fs@s1-s2.zfs"] == "damaged" and results["fs@s1.zfs"] == "proven"
    records = [json.loads(x) for x in proofs.read_text().splitlines()]
    assert [r["result"] for r in records if r["file"] == "fs@s1-s2.zfs"] == ["proven", "damaged"]


def test_a_manifest_beside_a_stream_is_proven_and_found_by_its_snapshot_in_a_bucket(
    s3env: S3Env, tmp_path: Path
) -> None:
    """`cold send --manifest` into a bucket leaves NAME.manifest named by NAME.json: check
    reads it whole and holds it to the sidecar; a drill finds it by the snapshot's GUID and
    copies it out proven (the drill itself needs ZFS: tests/cold/test_drill_zfs.py)."""
    from zverify.cold import contents
    from zverify.cold.store.s3 import S3Store
    from zverify.errors import ColdError

    upload(s3env, CHAIN_A)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_bytes(b"kept\n")
    made = zverify("manifest", "-q", str(tree), "-o", str(tmp_path / "m"))
    assert made.returncode == 0, made.stderr
    data = (tmp_path / "m").read_bytes()
    guid = stream_guids("full_fs_s1.zstream")["zv/fs@s1"]
    entry = {"file": "fs@s1.zfs.manifest", "bytes": len(data), "snapshot": "zv/fs@s1",
             "sha256": hashlib.sha256(data).hexdigest(), "entries": 2}  # fmt: skip
    side = {"dataset": "zv/fs", "to_guid": guid, "manifest": entry}
    put = s3env.client.put_object
    put(Bucket=s3env.bucket, Key="archive/fs@s1.zfs.manifest", Body=data)
    put(Bucket=s3env.bucket, Key="archive/fs@s1.zfs.json", Body=json.dumps(side).encode())
    assert problems(check(s3env, expect=0)) == []
    assert problems(check(s3env, "--depth", "metadata", expect=2)) != []  # unproven streams...
    store = S3Store(s3env.url, None)
    assert contents.archived(store, int(guid), "s2") is None  # another name: not its manifest
    assert contents.archived(store, int(guid), "s1", ["fs@s1-s2.zfs"]) is None  # not beside
    found = contents.archived(store, int(guid), "s1", ["fs@s1.zfs"])
    assert found is not None and found[0] == "fs@s1.zfs.manifest"
    contents.copy_proven(store, *found, str(tmp_path / "copy"))
    assert (tmp_path / "copy").read_bytes() == data
    put(Bucket=s3env.bucket, Key="archive/fs@s1.zfs.manifest", Body=data[:-1] + b"\0")
    report = check(s3env, expect=1)
    assert {(p["file"], p["kind"]) for p in problems(report)} == {
        ("fs@s1.zfs", "manifest-mismatch")
    }
    with pytest.raises(ColdError, match="was replaced since it was listed"):
        contents.copy_proven(store, *found, str(tmp_path / "again"))  # as listed before
    store = S3Store(s3env.url, None)
    found = contents.archived(store, int(guid), "s1")
    assert found is not None
    with pytest.raises(ColdError, match="is not the manifest its sidecar names"):
        contents.copy_proven(store, *found, str(tmp_path / "again"))
    s3env.client.delete_object(Bucket=s3env.bucket, Key="archive/fs@s1.zfs.manifest")
    metadata = check(s3env, "--depth", "metadata", expect=2)  # ...and a finding without a read
    found_kinds = {(p["file"], p["kind"]) for p in problems(metadata)}
    assert ("fs@s1.zfs", "manifest-mismatch") in found_kinds, found_kinds
