"""A real S3 server for the tests and the benchmarks: versitygw's posix backend on 127.0.0.1.

versitygw keeps each bucket as a directory and each object's current version as a plain
file (``ROOT/BUCKET/KEY``), its metadata (ETag, checksums, retention, version id) in
``user.*`` xattrs, and older versions under the versioning directory. So a test can
damage an object behind the server's back and the server keeps answering with the
metadata it stored at upload: what a silently rotting disk under real storage does.

``scripts/versitygw.sh`` builds the binary; ``$ZVERIFY_VERSITYGW`` names another one.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

VERSION = "v1.8.0"
# versitygw refuses short keys; these are only ever valid for a server on 127.0.0.1.
ACCESS_KEY = "zverify-test-access"
SECRET_KEY = "zverify-test-secret-key-0123456789"
REGION = "us-east-1"
START_TIMEOUT = 30.0  # seconds: it answers in well under 1 s here, even on a loaded box
STOP_TIMEOUT = 10.0
HEALTH = "/zverify-health"
# tests/conftest.py points HOME at a scratch directory for each test; the build cache
# lives in the real one, read when the test session starts.
_CACHE = Path(os.environ.get("ZVERIFY_S3_CACHE") or Path.home() / ".cache/zverify-s3")


# 127.0.0.1 is never reached through the caller's http_proxy.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServerError(Exception):
    """The server could not be found or started; the message says why."""


def binary() -> tuple[Path | None, str]:
    """(the versitygw to run, or None; where it was looked for)."""
    override = os.environ.get("ZVERIFY_VERSITYGW")
    if override:
        path = Path(override)
        where = f"$ZVERIFY_VERSITYGW={override}"
    else:
        path = _CACHE / VERSION / "bin/versitygw"
        where = f"{path} (build it with scripts/versitygw.sh)"
    return (path if os.access(path, os.X_OK) else None), where


def _free_port() -> int:
    # The port is free when asked; a race with another process shows up as a start
    # failure that start() retries on a new port.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Versitygw:
    """One versitygw process over a fresh directory; a context manager."""

    def __init__(self, exe: Path, workdir: Path) -> None:
        self.exe = exe
        self.root = workdir / "buckets"  # the posix backend: one directory per bucket
        self.versions = workdir / "versions"  # older versions of objects in versioned buckets
        self.iam = workdir / "iam"
        self.log = workdir / "versitygw.log"
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Versitygw:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for d in (self.root, self.versions, self.iam):
            d.mkdir(parents=True, exist_ok=True)
        for _attempt in range(3):
            self.port = _free_port()
            if self._start_once():
                return
        raise ServerError(f"versitygw did not start on 127.0.0.1:\n{self._log_tail()}")

    def _start_once(self) -> bool:
        # Only what the command line says: the caller's VGW_* variables would change the server.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VGW_", "ROOT_"))}
        env.update(ROOT_ACCESS_KEY=ACCESS_KEY, ROOT_SECRET_KEY=SECRET_KEY)
        argv = [
            str(self.exe),
            f"--port=127.0.0.1:{self.port}",
            f"--iam-dir={self.iam}",
            f"--region={REGION}",
            f"--health={HEALTH}",
            "--quiet",
            "posix",
            f"--versioning-dir={self.versions}",
            str(self.root),
        ]
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False  # e.g. the port was taken meanwhile: try another
            if self._healthy():
                return True
            time.sleep(0.05)
        self.stop()
        raise ServerError(
            f"versitygw did not answer on {self.endpoint}{HEALTH} within {START_TIMEOUT:.0f} s:\n"
            + self._log_tail()
        )

    def _healthy(self) -> bool:
        try:
            with _DIRECT.open(self.endpoint + HEALTH, timeout=1) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _log_tail(self, size: int = 2000) -> str:
        try:
            return self.log.read_bytes()[-size:].decode(errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def backend_file(self, bucket: str, key: str, version_id: str | None = None) -> Path:
        """The plain file that holds an object's bytes (its latest version by default).

        The latest version is ROOT/BUCKET/KEY, whatever its version id (its
        ``user.version-id`` xattr; none for the "null" version). Older versions are
        VERSIONS/BUCKET/h[0:2]/h[2:4]/h[4:6]/h/VERSION_ID with h = sha256(KEY) in hex
        (backend/posix/posix.go, genObjVersionKey). A delete marker is an empty file with a
        ``user.delete-marker`` xattr, in the same places: FileNotFoundError, as for no file.
        """
        latest = self.root / bucket / key
        if version_id is None or _version_of(latest) == version_id:
            path = latest
        else:
            h = hashlib.sha256(key.encode()).hexdigest()
            path = self.versions / bucket / h[:2] / h[2:4] / h[4:6] / h / version_id
        if not path.is_file():
            raise FileNotFoundError(f"no file for s3://{bucket}/{key} ({version_id}): {path}")
        if "user.delete-marker" in os.listxattr(path):  # an empty file: no object's bytes
            raise FileNotFoundError(f"s3://{bucket}/{key} ({version_id}) is a delete marker")
        return path

    def env(self) -> dict[str, str]:
        """What an AWS SDK (and so the installed zverify) needs to reach this server."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def client(self, **config: Any) -> Any:
        """A boto3 S3 client for this server; ``config`` goes to botocore's Config.

        No retries by default: botocore retries even a BadDigest refusal, with backoff
        (about 10 s per refused request here), and a test wants the first answer.
        """
        import boto3  # the test dependency only s3-marked tests need
        from botocore.config import Config

        config.setdefault("retries", {"total_max_attempts": 1})
        config.setdefault("proxies", {})  # not None: no proxy from the environment either
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
            config=Config(**config),
        )


def _version_of(path: Path) -> str | None:
    """The version id versitygw stored on a file; "null" for an unversioned put."""
    try:
        return os.getxattr(path, "user.version-id").decode()
    except FileNotFoundError:
        return None
    except OSError:  # ENODATA: written while versioning was off
        return "null" if path.is_file() else None
