"""The test S3 server (versitygw v1.8.0) and its harness do what the tests rely on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.s3.fixtures import S3Env
from tests.s3.server import ServerError, Versitygw

pytestmark = pytest.mark.s3


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


def test_backend_file_of_older_versions(s3env_versioned: S3Env) -> None:
    c, bucket, key = s3env_versioned.client, s3env_versioned.bucket, "archive/v"
    ids = [c.put_object(Bucket=bucket, Key=key, Body=f"v{n}".encode())["VersionId"] for n in (1, 2)]
    server = s3env_versioned.server
    assert server.backend_file(bucket, key, ids[0]).read_bytes() == b"v1"
    assert server.backend_file(bucket, key, ids[1]).read_bytes() == b"v2"
    assert server.backend_file(bucket, key) == server.backend_file(bucket, key, ids[1])
    with pytest.raises(FileNotFoundError, match=r"archive/v"):
        server.backend_file(bucket, key, "no-such-version")


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
