"""A bucket prefix is one level of an archive, as a directory is (adversarial-4 M1): what is
below it in "sub-folders" is reported as a subdirectory and never read nor deleted, unless
--recursive reads every level, exactly as in a directory.  Each case runs on the same layout
as objects and as files, against a real S3 server (versitygw), and the two must agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import needs_installed_command, zverify
from tests.cold.store import test_bucket as bucket
from tests.cold.store.bucket_fixtures import S3Env

pytestmark = [pytest.mark.s3, needs_installed_command]

# a newer chain at the archive's level, an old chain kept aside in a "sub-folder" (M1's layout:
# an offsite copy of last year's chain beside the archive): prune must not take it for part of
# the archive
LAYOUT = {
    **{k: v for k, v in bucket.CHAIN_B.items()},
    **{f"offsite-2025/{k}": v for k, v in bucket.CHAIN_A.items()},
}
ASIDE = {f"offsite-2025/{k}" for k in bucket.CHAIN_A}


def put(env: S3Env, files: dict[str, str], prefix: str) -> None:
    for key, stream in files.items():
        body = (bucket.STREAMS / stream).read_bytes()
        env.client.put_object(Bucket=env.bucket, Key=prefix + key, Body=body)


def write(root: Path, files: dict[str, str]) -> Path:
    for key, stream in files.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((bucket.STREAMS / stream).read_bytes())
    return root


def keys(env: S3Env, prefix: str = "") -> set[str]:
    pages = env.client.get_paginator("list_objects_v2").paginate(Bucket=env.bucket, Prefix=prefix)
    return {o["Key"] for page in pages for o in page.get("Contents", [])}


def run(*args: str) -> tuple[int, dict[str, Any]]:
    r = zverify("cold", *args, "--json")
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, json.loads(r.stdout)


def found(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(file, kind, message) of every problem of a check's or prune's JSON."""
    listed = [p for f in report.get("files", []) for p in f["problems"]] + report["problems"]
    return {(p["file"], p["kind"], p["message"]) for p in listed if p["kind"] != "empty"}


SUBDIRECTORY = ("offsite-2025", "not-a-stream", "a directory: not read, not followed")


def test_prune_of_a_prefix_never_deletes_in_a_sub_folder_and_refuses_as_a_directory(
    s3env: S3Env, tmp_path: Path
) -> None:
    put(s3env, LAYOUT, "r2/")
    directory = write(tmp_path / "r2", LAYOUT)
    in_bucket = run("prune", "--yes", f"s3://{s3env.bucket}/r2")
    in_directory = run("prune", "--yes", str(directory))
    assert in_bucket[0] == in_directory[0] == 1, (in_bucket, in_directory)
    assert SUBDIRECTORY in found(in_bucket[1]) == found(in_directory[1])
    assert keys(s3env) == {"r2/" + k for k in LAYOUT}  # nothing deleted, least of all aside
    assert {str(p.relative_to(directory)) for p in directory.rglob("*.zfs")} == set(LAYOUT)


def test_check_reports_a_sub_folder_as_a_directory_and_reads_none_of_it(
    s3env: S3Env, tmp_path: Path
) -> None:
    put(s3env, LAYOUT, "r2/")
    code, report = run("check", f"s3://{s3env.bucket}/r2")
    dcode, dreport = run("check", str(write(tmp_path / "r2", LAYOUT)))
    assert code == dcode == 1
    assert found(report) == found(dreport) == {SUBDIRECTORY}
    read = {f["file"] for f in report["files"] if f["kind"] != "unknown"}
    assert read == set(bucket.CHAIN_B)  # not one object of the sub-folder


def test_recursive_reads_the_sub_folders_as_it_reads_subdirectories(
    s3env: S3Env, tmp_path: Path
) -> None:
    put(s3env, LAYOUT, "r2/")
    directory = write(tmp_path / "r2", LAYOUT)
    code, report = run("check", "-r", f"s3://{s3env.bucket}/r2")
    assert (code, found(report)) == (0, set())
    assert {f["file"] for f in report["files"]} == set(LAYOUT)
    in_bucket = run("prune", "-r", f"s3://{s3env.bucket}/r2")
    in_directory = run("prune", "-r", str(directory))
    assert in_bucket[0] == in_directory[0] == 0

    def removed(doc: dict[str, Any]) -> set[str]:
        return {n for d in doc["datasets"] for n in d["remove"]}

    assert removed(in_bucket[1]) == removed(in_directory[1]) == ASIDE


def test_a_bucket_alone_is_its_top_level(s3env: S3Env) -> None:
    put(s3env, bucket.CHAIN_B, "")
    put(s3env, bucket.CHAIN_A, "tank/")
    code, report = run("check", f"s3://{s3env.bucket}")
    assert code == 1
    assert found(report) == {("tank", "not-a-stream", "a directory: not read, not followed")}
    read = {f["file"] for f in report["files"] if f["kind"] != "unknown"}
    assert read == set(bucket.CHAIN_B)
    pruned = run("prune", "--yes", f"s3://{s3env.bucket}")
    assert pruned[0] == 1
    assert keys(s3env) == set(bucket.CHAIN_B) | {"tank/" + k for k in bucket.CHAIN_A}


def test_an_upload_in_a_sub_folder_is_not_the_archive_s_to_abort(s3env: S3Env) -> None:
    put(s3env, bucket.CHAIN_B, "r2/")
    started = s3env.client.create_multipart_upload(Bucket=s3env.bucket, Key="r2/sub/x.zfs")
    code, report = run("check", f"s3://{s3env.bucket}/r2")
    assert code == 1
    assert found(report) == {("sub", "not-a-stream", "a directory: not read, not followed")}
    r = zverify("cold", "clean", "--yes", f"s3://{s3env.bucket}/r2")
    assert "Traceback" not in r.stderr
    uploads = s3env.client.list_multipart_uploads(Bucket=s3env.bucket).get("Uploads", [])
    assert [u["UploadId"] for u in uploads] == [started["UploadId"]]


class _SmallPages:
    """A real client whose listings come two keys a page, so that objects and common
    prefixes arrive over many pages (a server repeating a page's last version too)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def get_paginator(self, operation: str) -> Any:
        paginator = self._client.get_paginator(operation)

        class Small:
            def paginate(self, **args: Any) -> Any:
                return paginator.paginate(PaginationConfig={"PageSize": 2}, **args)

        return Small()


@pytest.mark.parametrize("versioned", [False, True])
def test_subdirectories_and_objects_listed_over_many_pages(s3env: S3Env, versioned: bool) -> None:
    from zverify.cold.store.s3 import S3Store

    if versioned:
        s3env.client.put_bucket_versioning(
            Bucket=s3env.bucket, VersioningConfiguration={"Status": "Enabled"}
        )
    names = [f"f{i}" for i in range(5)] + [f"d{i}/x" for i in range(5)] + ["d0/y", "f0"]
    for name in names:
        s3env.client.put_object(Bucket=s3env.bucket, Key="p/" + name, Body=b"x")
    store = S3Store(f"s3://{s3env.bucket}/p", client=_SmallPages(s3env.client))
    listed = [(e.key, e.st is not None and e.st.st_size == 0) for e in store.entries()]
    assert listed == [(f"d{i}", True) for i in range(5)] + [(f"f{i}", False) for i in range(5)]


@pytest.mark.parametrize("depth", ["metadata", "sample"])
def test_the_shallow_depths_report_a_sub_folder_as_a_full_check_does(
    s3env: S3Env, depth: str
) -> None:
    put(s3env, LAYOUT, "r2/")
    code, report = run("check", "--depth", depth, f"s3://{s3env.bucket}/r2")
    assert code == 2  # streams without a sidecar: unproven at these depths
    assert SUBDIRECTORY in found(report)
    sub = next(f for f in report["files"] if f["file"] == "offsite-2025")
    assert "sample" not in (sub.get("stored") or {})  # nothing was skipped: no stream at all
    assert {f["file"] for f in report["files"]} == set(bucket.CHAIN_B) | {"offsite-2025"}
