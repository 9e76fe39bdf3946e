"""The premises the S3 archive tests rely on, proven against the real server (versitygw v1.8.0).

Each "v1.8.0:" comment records what this server does where S3 servers differ; the
archive code must not rely on more than these tests show.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cold.store.bucket_fixtures import S3Env, s3_import
from tools.s3server import ServerError, Versitygw

pytestmark = pytest.mark.s3

botocore_exceptions = s3_import("botocore.exceptions")
xxhash = s3_import("xxhash")

MIB = 1 << 20


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def refusal(call: Callable[..., Any], **kwargs: Any) -> tuple[str, int]:
    """(error code, HTTP status) of an S3 call that must fail."""
    with pytest.raises(botocore_exceptions.ClientError) as info:
        call(**kwargs)
    response = info.value.response
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"]


def upload_parts(env: S3Env, key: str, parts: list[bytes], **create: Any) -> tuple[str, list[Any]]:
    """An upload with these parts, not completed: (upload id, parts for the complete call)."""
    c = env.client
    upload = c.create_multipart_upload(Bucket=env.bucket, Key=key, **create)["UploadId"]
    done = []
    for number, body in enumerate(parts, 1):
        extra = {"ChecksumAlgorithm": create["ChecksumAlgorithm"]} if create else {}
        r = c.upload_part(
            Bucket=env.bucket, Key=key, UploadId=upload, PartNumber=number, Body=body, **extra
        )
        done.append({"PartNumber": number, "ETag": r["ETag"]})
        for name in ("ChecksumCRC32", "ChecksumSHA256", "ChecksumXXHASH128"):
            if name in r:
                done[-1][name] = r[name]
    return upload, done


def test_put_get_round_trip(s3env: S3Env) -> None:
    body = os.urandom(300_000)
    s3env.client.put_object(Bucket=s3env.bucket, Key="archive/a", Body=body)
    got = s3env.client.get_object(Bucket=s3env.bucket, Key="archive/a")["Body"].read()
    assert got == body
    assert s3env.server.backend_file(s3env.bucket, "archive/a").read_bytes() == body


def test_env_reaches_the_server_from_a_subprocess(s3env: S3Env) -> None:
    """s3env's variables alone (no config file, no endpoint argument) reach the server, as
    they must for the installed zverify run as a subprocess."""
    s3env.client.put_object(Bucket=s3env.bucket, Key="archive/probe", Body=b"seen")
    code = (
        "import sys, boto3; c = boto3.client('s3'); "
        "sys.stdout.write(c.get_object(Bucket=sys.argv[1], Key='archive/probe')['Body'].read()"
        ".decode())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, s3env.bucket], capture_output=True, text=True, cwd="/"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "seen"


def test_multipart_sha256_composite(s3env: S3Env) -> None:
    """v1.8.0: a SHA256 multipart upload is COMPOSITE: the SHA-256 of the parts' SHA-256s,
    with AWS's "-N" suffix, from complete, HEAD and GetObjectAttributes alike."""
    parts = [os.urandom(5 * MIB), os.urandom(1234)]
    upload, done = upload_parts(s3env, "archive/mp", parts, ChecksumAlgorithm="SHA256")
    for part, body in zip(done, parts, strict=True):
        assert part["ChecksumSHA256"] == b64(hashlib.sha256(body).digest())
    s3env.client.complete_multipart_upload(
        Bucket=s3env.bucket, Key="archive/mp", UploadId=upload, MultipartUpload={"Parts": done}
    )
    inner = b"".join(hashlib.sha256(p).digest() for p in parts)
    expected = f"{b64(hashlib.sha256(inner).digest())}-{len(parts)}"
    head = s3env.client.head_object(Bucket=s3env.bucket, Key="archive/mp", ChecksumMode="ENABLED")
    assert (head["ChecksumSHA256"], head["ChecksumType"]) == (expected, "COMPOSITE")
    assert head["ContentLength"] == sum(map(len, parts))
    attrs = s3env.client.get_object_attributes(
        Bucket=s3env.bucket, Key="archive/mp", ObjectAttributes=["Checksum", "ObjectSize"]
    )
    assert attrs["Checksum"] == {"ChecksumSHA256": expected, "ChecksumType": "COMPOSITE"}
    assert attrs["ObjectSize"] == sum(map(len, parts))


def crc32(data: bytes) -> str:
    """S3's ChecksumCRC32: zlib's CRC-32, big-endian, base64."""
    return b64(zlib.crc32(data).to_bytes(4, "big"))


def test_multipart_crc32_composite(s3env: S3Env) -> None:
    """v1.8.0 (as AWS): a CRC32 multipart upload is COMPOSITE by default: the CRC-32 of the
    parts' CRC-32s (4 bytes each, big-endian), "-N"; each UploadPart answer names the CRC-32
    the server verified, which is the part's.  `cold send` proves its objects by this."""
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(99)]
    upload, done = upload_parts(s3env, "archive/mc", parts, ChecksumAlgorithm="CRC32")
    assert [p["ChecksumCRC32"] for p in done] == [crc32(p) for p in parts]
    s3env.client.complete_multipart_upload(
        Bucket=s3env.bucket, Key="archive/mc", UploadId=upload, MultipartUpload={"Parts": done}
    )
    inner = b"".join(zlib.crc32(p).to_bytes(4, "big") for p in parts)
    head = s3env.client.head_object(Bucket=s3env.bucket, Key="archive/mc", ChecksumMode="ENABLED")
    assert (head["ChecksumCRC32"], head["ChecksumType"]) == (f"{crc32(inner)}-3", "COMPOSITE")
    assert "ChecksumSHA256" not in head


def test_part_with_wrong_crc32_is_refused(s3env: S3Env) -> None:
    """v1.8.0: a part whose bytes do not match the CRC-32 sent with it is BadDigest, HTTP
    400, and is not stored: a part damaged between `cold send` and the disk never counts."""
    c, bucket = s3env.client, s3env.bucket
    upload = c.create_multipart_upload(Bucket=bucket, Key="archive/pc", ChecksumAlgorithm="CRC32")
    body = bytearray(os.urandom(5 * MIB))
    sent = crc32(bytes(body))
    body[12345] ^= 0x10  # one bit flipped on the way
    part = refusal(
        c.upload_part,
        Bucket=bucket,
        Key="archive/pc",
        UploadId=upload["UploadId"],
        PartNumber=1,
        Body=bytes(body),
        ChecksumCRC32=sent,
    )
    assert part == ("BadDigest", 400)
    listed = c.list_parts(Bucket=bucket, Key="archive/pc", UploadId=upload["UploadId"])
    assert listed.get("Parts", []) == []


def test_parts_of_a_completed_upload(s3env: S3Env) -> None:
    """v1.8.0 keeps the part boundaries (HEAD/GET PartNumber=N answers that part's range and
    PartsCount) but returns no part's checksum once the upload is complete: neither with
    PartNumber nor as GetObjectAttributes ObjectParts. SHA256 cannot be FULL_OBJECT
    (InvalidRequest, 400, as on AWS)."""
    c, bucket = s3env.client, s3env.bucket
    parts = [os.urandom(5 * MIB), os.urandom(100)]
    upload, done = upload_parts(s3env, "archive/mp", parts, ChecksumAlgorithm="SHA256")
    c.complete_multipart_upload(
        Bucket=bucket, Key="archive/mp", UploadId=upload, MultipartUpload={"Parts": done}
    )
    second = c.head_object(Bucket=bucket, Key="archive/mp", PartNumber=2, ChecksumMode="ENABLED")
    total = sum(map(len, parts))
    assert second["ContentRange"] == f"bytes {len(parts[0])}-{total - 1}/{total}"
    assert second["PartsCount"] == 2
    assert not [k for k in second if k.startswith("Checksum")]
    attrs = c.get_object_attributes(
        Bucket=bucket, Key="archive/mp", ObjectAttributes=["ObjectParts", "Checksum"]
    )
    assert "ObjectParts" not in attrs and attrs["Checksum"]["ChecksumType"] == "COMPOSITE"
    full = refusal(
        c.create_multipart_upload,
        Bucket=bucket,
        Key="archive/f",
        ChecksumAlgorithm="SHA256",
        ChecksumType="FULL_OBJECT",
    )
    assert full == ("InvalidRequest", 400)


def test_xxhash128_full_object_and_composite(s3env: S3Env) -> None:
    """v1.8.0 stores XXHASH128 (= XXH3-128, zverify's default hash) when the client sends the
    value (botocore computes it only with awscrt, absent here), checks it, and combines
    multipart parts COMPOSITE like SHA256: XXH3-128 of the parts' digests, "-N"."""
    c, bucket = s3env.client, s3env.bucket
    body = os.urandom(100_000)
    good = b64(xxhash.xxh3_128_digest(body))
    c.put_object(Bucket=bucket, Key="archive/x", Body=body, ChecksumXXHASH128=good)
    head = c.head_object(Bucket=bucket, Key="archive/x", ChecksumMode="ENABLED")
    assert (head["ChecksumXXHASH128"], head["ChecksumType"]) == (good, "FULL_OBJECT")
    wrong = b64(xxhash.xxh3_128_digest(body + b"!"))
    put = refusal(c.put_object, Bucket=bucket, Key="archive/y", Body=body, ChecksumXXHASH128=wrong)
    assert put == ("BadDigest", 400)

    parts = [os.urandom(5 * MIB), os.urandom(10)]
    upload = c.create_multipart_upload(
        Bucket=bucket, Key="archive/mx", ChecksumAlgorithm="XXHASH128", ChecksumType="COMPOSITE"
    )["UploadId"]
    done = []
    for n, part in enumerate(parts, 1):
        digest = b64(xxhash.xxh3_128_digest(part))
        r = c.upload_part(
            Bucket=bucket,
            Key="archive/mx",
            UploadId=upload,
            PartNumber=n,
            Body=part,
            ChecksumXXHASH128=digest,
        )
        done.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumXXHASH128": digest})
    c.complete_multipart_upload(
        Bucket=bucket, Key="archive/mx", UploadId=upload, MultipartUpload={"Parts": done}
    )
    inner = b"".join(xxhash.xxh3_128_digest(p) for p in parts)
    head = c.head_object(Bucket=bucket, Key="archive/mx", ChecksumMode="ENABLED")
    assert head["ChecksumXXHASH128"] == f"{b64(xxhash.xxh3_128_digest(inner))}-2"


def test_part_with_wrong_sha256_is_refused(s3env: S3Env) -> None:
    """v1.8.0: BadDigest, HTTP 400, and the part is not stored."""
    c, bucket = s3env.client, s3env.bucket
    upload = c.create_multipart_upload(Bucket=bucket, Key="archive/p", ChecksumAlgorithm="SHA256")
    body = os.urandom(1000)
    wrong = b64(hashlib.sha256(body + b"x").digest())
    part = refusal(
        c.upload_part,
        Bucket=bucket,
        Key="archive/p",
        UploadId=upload["UploadId"],
        PartNumber=1,
        Body=body,
        ChecksumSHA256=wrong,
    )
    assert part == ("BadDigest", 400)
    listed = c.list_parts(Bucket=bucket, Key="archive/p", UploadId=upload["UploadId"])
    assert listed.get("Parts", []) == []


def test_flipped_byte_is_served_under_the_old_metadata(s3env: S3Env) -> None:
    """Rot under the server: HEAD keeps the size, ETag and checksum stored at upload, and GET
    serves the damaged bytes. Only reading the data can tell. boto3 1.43's default client
    (response_checksum_validation="when_supported") does notice on a whole-object GET of a
    FULL_OBJECT checksum, and raises FlexibleChecksumError."""
    c, bucket, key = s3env.client, s3env.bucket, "archive/rot"
    body = os.urandom(64 * 1024)
    c.put_object(Bucket=bucket, Key=key, Body=body, ChecksumAlgorithm="SHA256")
    before = c.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")

    path = s3env.server.backend_file(bucket, key)
    with path.open("r+b") as f:
        f.seek(1000)
        f.write(bytes([body[1000] ^ 0x01]))

    after = c.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    for field in ("ContentLength", "ETag", "ChecksumSHA256"):
        assert after[field] == before[field], field
    raw = s3env.server.client(response_checksum_validation="when_required")
    got = raw.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert len(got) == len(body)
    assert got[1000] == body[1000] ^ 0x01
    assert got[:1000] == body[:1000] and got[1001:] == body[1001:]
    with pytest.raises(botocore_exceptions.FlexibleChecksumError):
        c.get_object(Bucket=bucket, Key=key)["Body"].read()


def test_flipped_byte_in_a_multipart_object_passes_the_default_client(s3env: S3Env) -> None:
    """For a COMPOSITE checksum boto3 1.43 validates nothing on GET, even with
    ChecksumMode="ENABLED": the damaged bytes arrive with no error. Only zverify's own
    hash of what it read can tell."""
    c, bucket, key = s3env.client, s3env.bucket, "archive/mprot"
    parts = [os.urandom(5 * MIB), os.urandom(100)]
    upload, done = upload_parts(s3env, key, parts, ChecksumAlgorithm="SHA256")
    c.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": done}
    )
    with s3env.server.backend_file(bucket, key).open("r+b") as f:
        f.seek(10)
        f.write(bytes([parts[0][10] ^ 0x01]))
    for mode in ({}, {"ChecksumMode": "ENABLED"}):
        got = c.get_object(Bucket=bucket, Key=key, **mode)["Body"].read()
        assert got[10] == parts[0][10] ^ 0x01, mode
        assert got[11:] == b"".join(parts)[11:], mode


def test_abandoned_upload_is_listed_and_abort_removes_it(s3env: S3Env) -> None:
    c, bucket = s3env.client, s3env.bucket
    upload, _ = upload_parts(s3env, "archive/left", [b"half"])
    listed = c.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert [(u["Key"], u["UploadId"]) for u in listed] == [("archive/left", upload)]
    c.abort_multipart_upload(Bucket=bucket, Key="archive/left", UploadId=upload)
    assert c.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_locked_bucket_has_versioning(s3env_locked: S3Env) -> None:
    """v1.8.0: creating a bucket with object lock turns versioning on, with no default rule."""
    c, bucket = s3env_locked.client, s3env_locked.bucket
    assert c.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    lock = c.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"]
    assert lock["ObjectLockEnabled"] == "Enabled"
    assert "DefaultRetention" not in lock.get("Rule", {})


def test_compliance_retention_refuses_version_delete(s3env_locked: S3Env) -> None:
    """v1.8.0: deleting a version under COMPLIANCE retention is AccessDenied (403), also with
    BypassGovernanceRetention, and so is shortening the retention. A delete WITHOUT a version
    id succeeds: it adds a delete marker (GET says NoSuchKey), the locked version stays."""
    c, bucket, key = s3env_locked.client, s3env_locked.bucket, "archive/full"
    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
    put = c.put_object(
        Bucket=bucket,
        Key=key,
        Body=b"stream",
        ObjectLockMode="COMPLIANCE",
        ObjectLockRetainUntilDate=until,
    )
    version = put["VersionId"]
    retention = c.get_object_retention(Bucket=bucket, Key=key, VersionId=version)["Retention"]
    assert retention["Mode"] == "COMPLIANCE"

    delete = functools.partial(c.delete_object, Bucket=bucket, Key=key, VersionId=version)
    assert refusal(delete) == ("AccessDenied", 403)
    assert refusal(delete, BypassGovernanceRetention=True) == ("AccessDenied", 403)
    shorter = {"Mode": "COMPLIANCE", "RetainUntilDate": until - datetime.timedelta(hours=1)}
    shorten = refusal(
        c.put_object_retention, Bucket=bucket, Key=key, VersionId=version, Retention=shorter
    )
    assert shorten == ("AccessDenied", 403)

    marker = c.delete_object(Bucket=bucket, Key=key)
    assert marker["DeleteMarker"] is True and marker["VersionId"] != version
    assert refusal(c.get_object, Bucket=bucket, Key=key) == ("NoSuchKey", 404)
    kept = c.get_object(Bucket=bucket, Key=key, VersionId=version)["Body"].read()
    assert kept == b"stream"
    versions = c.list_object_versions(Bucket=bucket, Prefix=key)
    assert [v["VersionId"] for v in versions["Versions"]] == [version]
    assert [(m["VersionId"], m["IsLatest"]) for m in versions["DeleteMarkers"]] == [
        (marker["VersionId"], True)
    ]
    assert s3env_locked.server.backend_file(bucket, key, version).read_bytes() == b"stream"
    with pytest.raises(FileNotFoundError, match="delete marker"):
        s3env_locked.server.backend_file(bucket, key)


def test_backend_file_of_older_versions(s3env_versioned: S3Env) -> None:
    c, bucket, key = s3env_versioned.client, s3env_versioned.bucket, "archive/v"
    ids = [c.put_object(Bucket=bucket, Key=key, Body=f"v{n}".encode())["VersionId"] for n in (1, 2)]
    server = s3env_versioned.server
    assert server.backend_file(bucket, key, ids[0]).read_bytes() == b"v1"
    assert server.backend_file(bucket, key, ids[1]).read_bytes() == b"v2"
    assert server.backend_file(bucket, key) == server.backend_file(bucket, key, ids[1])
    with pytest.raises(FileNotFoundError, match=r"archive/v"):
        server.backend_file(bucket, key, "no-such-version")


def test_put_if_none_match_over_existing_key_is_refused(s3env: S3Env) -> None:
    """v1.8.0 supports If-None-Match: * on PutObject: PreconditionFailed (412) over an
    existing key, which is left as it was; a new key is written."""
    c, bucket = s3env.client, s3env.bucket
    c.put_object(Bucket=bucket, Key="archive/k", Body=b"first")
    put = refusal(c.put_object, Bucket=bucket, Key="archive/k", Body=b"second", IfNoneMatch="*")
    assert put == ("PreconditionFailed", 412)
    assert c.get_object(Bucket=bucket, Key="archive/k")["Body"].read() == b"first"
    c.put_object(Bucket=bucket, Key="archive/new", Body=b"n", IfNoneMatch="*")
    assert c.get_object(Bucket=bucket, Key="archive/new")["Body"].read() == b"n"


def test_complete_if_none_match_over_existing_key_is_refused(s3env: S3Env) -> None:
    """v1.8.0 supports If-None-Match: * on CompleteMultipartUpload: PreconditionFailed (412),
    the object is left as it was, and the upload stays listed (it must be aborted)."""
    c, bucket = s3env.client, s3env.bucket
    c.put_object(Bucket=bucket, Key="archive/k", Body=b"first")
    upload, done = upload_parts(s3env, "archive/k", [b"second"])
    complete = refusal(
        c.complete_multipart_upload,
        Bucket=bucket,
        Key="archive/k",
        UploadId=upload,
        MultipartUpload={"Parts": done},
        IfNoneMatch="*",
    )
    assert complete == ("PreconditionFailed", 412)
    assert c.get_object(Bucket=bucket, Key="archive/k")["Body"].read() == b"first"
    listed = c.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert [u["UploadId"] for u in listed] == [upload]


def test_delete_if_match(s3env: S3Env) -> None:
    """v1.8.0 supports If-Match on DeleteObject: a wrong ETag is PreconditionFailed (412) and
    the object stays; the right one deletes."""
    c, bucket = s3env.client, s3env.bucket
    etag = c.put_object(Bucket=bucket, Key="archive/d", Body=b"keep")["ETag"]
    wrong = '"' + hashlib.md5(b"other").hexdigest() + '"'
    delete = refusal(c.delete_object, Bucket=bucket, Key="archive/d", IfMatch=wrong)
    assert delete == ("PreconditionFailed", 412)
    assert c.head_object(Bucket=bucket, Key="archive/d")["ETag"] == etag
    c.delete_object(Bucket=bucket, Key="archive/d", IfMatch=etag)
    assert refusal(c.head_object, Bucket=bucket, Key="archive/d")[1] == 404


def test_restore_object_is_not_implemented(s3env: S3Env) -> None:
    """v1.8.0 has no archive tiers: RestoreObject is NotImplemented (501); storage class is
    always STANDARD. The restore state machine needs another server (moto)."""
    c, bucket = s3env.client, s3env.bucket
    c.put_object(Bucket=bucket, Key="archive/r", Body=b"r", StorageClass="DEEP_ARCHIVE")
    restore = refusal(c.restore_object, Bucket=bucket, Key="archive/r", RestoreRequest={"Days": 1})
    assert restore == ("NotImplemented", 501)
    assert c.head_object(Bucket=bucket, Key="archive/r").get("StorageClass") == "STANDARD"


def test_lifecycle_configuration_is_not_implemented(s3env: S3Env) -> None:
    """v1.8.0: Get/PutBucketLifecycleConfiguration are NotImplemented (501), so a lifecycle
    rule that would expire a full cannot be staged on this server."""
    c, bucket = s3env.client, s3env.bucket
    assert refusal(c.get_bucket_lifecycle_configuration, Bucket=bucket) == ("NotImplemented", 501)
    rule = {"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}
    put = refusal(
        c.put_bucket_lifecycle_configuration,
        Bucket=bucket,
        LifecycleConfiguration={"Rules": [rule]},
    )
    assert put == ("NotImplemented", 501)


def test_stop_ends_the_server(s3server: Versitygw, tmp_path: Path) -> None:
    with Versitygw(s3server.exe, tmp_path) as server:
        assert server.client().list_buckets()["Buckets"] == []
        proc = server._proc
        assert proc is not None and proc.poll() is None
    assert proc.returncode is not None


def test_a_server_that_cannot_start_names_its_log(tmp_path: Path) -> None:
    fake = tmp_path / "versitygw"
    fake.write_text("#!/bin/sh\necho 'listen tcp: address already in use' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(ServerError, match="address already in use"):
        Versitygw(fake, tmp_path / "w").start()
