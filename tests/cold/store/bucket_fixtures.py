"""Fixtures for tests against a real S3 server (versitygw), a pytest plugin.

``s3server`` is one server for the whole session; tests skip, naming the reason, when
the binary is not built, unless ``ZVERIFY_S3_REQUIRED=1`` (CI) makes that a failure.
``s3env`` gives each test a fresh bucket and points the AWS variables of this process,
and so of the installed ``zverify`` run as a subprocess, at the server.
"""

from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest

from tools.s3server import VERSION, ServerError, Versitygw, binary

# Variables that would send an SDK elsewhere or override the ones s3env sets.
_FOREIGN_AWS = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CA_BUNDLE",
)


def pytest_report_header(config: pytest.Config) -> str:
    exe, where = binary()
    return f"s3: versitygw {VERSION} {'at ' + str(exe) if exe else 'not built: ' + where}"


def _unavailable(why: str) -> NoReturn:
    if os.environ.get("ZVERIFY_S3_REQUIRED") == "1":
        pytest.fail(f"the S3 server is required (ZVERIFY_S3_REQUIRED=1) but {why}")
    pytest.skip(f"no S3 server: {why}")


def s3_import(module: str) -> Any:
    """``pytest.importorskip``, but a failure when the S3 tests are required."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        _unavailable(f"{module} cannot be imported: {exc}")


@pytest.fixture(scope="session")
def s3server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Versitygw]:
    """The session's versitygw, on 127.0.0.1 and a free port, stopped at the end."""
    exe, where = binary()
    if exe is None:
        _unavailable(f"versitygw {VERSION} is not at {where}")
    s3_import("boto3")
    server = Versitygw(exe, tmp_path_factory.mktemp("s3"))
    try:
        server.start()
    except ServerError as exc:
        pytest.fail(str(exc))
    yield server
    server.stop()


@dataclass
class S3Env:
    server: Versitygw
    bucket: str
    client: Any  # a boto3 S3 client

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/archive"


def _s3env(server: Versitygw, monkeypatch: pytest.MonkeyPatch, **create: Any) -> Iterator[S3Env]:
    for name in _FOREIGN_AWS:
        monkeypatch.delenv(name, raising=False)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    for name in ("NO_PROXY", "no_proxy"):  # the SDK would send 127.0.0.1 to an http_proxy
        monkeypatch.setenv(name, "127.0.0.1")
    bucket = f"zv-{uuid.uuid4().hex[:16]}"  # buckets outlive a test: never reuse a name
    client = server.client()
    client.create_bucket(Bucket=bucket, **create)
    yield S3Env(server, bucket, client)


@pytest.fixture
def s3env(s3server: Versitygw, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Env]:
    """A fresh unversioned bucket, and the AWS_* variables set to reach it."""
    yield from _s3env(s3server, monkeypatch)


@pytest.fixture
def s3env_versioned(s3server: Versitygw, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Env]:
    """A fresh bucket with versioning enabled."""
    for env in _s3env(s3server, monkeypatch):
        env.client.put_bucket_versioning(
            Bucket=env.bucket, VersioningConfiguration={"Status": "Enabled"}
        )
        yield env


@pytest.fixture
def s3env_locked(s3server: Versitygw, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Env]:
    """A fresh bucket created with object lock (which turns versioning on), no default rule."""
    yield from _s3env(s3server, monkeypatch, ObjectLockEnabledForBucket=True)
