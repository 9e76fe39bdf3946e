"""What every archive store must do, one suite over each (issue 47): a directory
(LocalStore) and a bucket of a real S3 server (S3Store, versitygw).  Every cold command stands
on these promises, so a third store starts from this file:

* a listed object is read whole, and its identity after the read is the one listed;
* a read pinned to what was listed never passes an object replaced since as the one listed:
  it refuses it (Changed), or the identity after the read is not the listed one;
* a writer's bytes appear under their name only on commit, a discarded one leaves nothing
  (no object, no .partial, no upload), and no writer ever replaces an existing object;
* delete removes the very object proven, and refuses one replaced since;
* a small read honours its limit (a sidecar's bytes, never an unbounded body).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from zverify.cold import entries
from zverify.cold.entries import FileStamp
from zverify.cold.store import LocalStore, Store
from zverify.errors import ColdError


@dataclass
class Place:
    """A store and a way to change its objects behind its back (another host's upload,
    a disk's bit rot, a person's mv)."""

    store_of: Any  # () -> a new Store over the place: one listing per store, as a command has
    put: Any  # (key, bytes): write an object as any other tool would
    listing: Any  # () -> every key there, whatever zverify thinks


def _directory(tmp_path: Path) -> Place:
    root = tmp_path / "archive"
    root.mkdir()
    return Place(
        lambda: LocalStore([str(root)]),
        lambda key, data: (root / key).write_bytes(data),
        lambda: sorted(os.listdir(root)),
    )


def _bucket(env: Any) -> Place:
    from zverify.cold.store.s3 import S3Store

    def put(key: str, data: bytes) -> None:
        env.client.put_object(Bucket=env.bucket, Key=f"archive/{key}", Body=data)

    def keys() -> list[str]:
        listed = env.client.list_objects_v2(Bucket=env.bucket, Prefix="archive/")
        objects = [o["Key"][len("archive/") :] for o in listed.get("Contents", [])]
        uploads = env.client.list_multipart_uploads(Bucket=env.bucket).get("Uploads", [])
        return sorted(objects + [f"upload:{u['Key']}" for u in uploads])

    return Place(lambda: S3Store(env.url, None), put, keys)


@pytest.fixture(params=["directory", pytest.param("bucket", marks=pytest.mark.s3)])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    if request.param == "directory":
        yield _directory(tmp_path)
    else:
        yield _bucket(request.getfixturevalue("s3env"))


def listed(store: Store, key: str) -> FileStamp:
    (entry,) = [e for e in store.entries() if e.key == key]
    assert entry.st is not None and entry.error is None
    return FileStamp.of(entry.st)


def read_whole(store: Store, key: str, stamp: FileStamp) -> tuple[bytes, FileStamp]:
    fd = store.open_read(key, stamp)
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        after = store.finish_read(key, fd)
    return b"".join(chunks), after


def test_a_listed_object_reads_whole_as_listed(place: Place) -> None:
    data = os.urandom(300_000)  # more than one pipe's worth
    place.put("s.zfsfull", data)
    store = place.store_of()
    stamp = listed(store, "s.zfsfull")
    assert read_whole(store, "s.zfsfull", stamp) == (data, stamp)


def test_a_read_pinned_to_the_listing_refuses_a_replaced_object(place: Place) -> None:
    place.put("s.zfsfull", b"old bytes")
    store = place.store_of()
    stamp = listed(store, "s.zfsfull")
    place.put("s.zfsfull", b"new bytes, longer")
    try:
        _, after = read_whole(store, "s.zfsfull", stamp)
    except entries.Changed:
        pass  # a bucket's GET is pinned to the listed ETag
    else:
        assert after != stamp  # a file rewritten in place: the caller sees it changed
    with pytest.raises(entries.Changed):
        store.read_small("s.zfsfull", stamp, 1 << 10)


def test_a_writer_shows_its_bytes_only_once_committed(place: Place) -> None:
    store = place.store_of()
    w = store.writer("new.zfsfull")
    os.write(w.fd, b"proven bytes")
    w.sync()
    assert "new.zfsfull" not in place.listing()
    assert w.stored_size() == len(b"proven bytes")
    w.commit()
    assert "new.zfsfull" in place.listing()
    fresh = place.store_of()
    assert read_whole(fresh, "new.zfsfull", listed(fresh, "new.zfsfull"))[0] == b"proven bytes"


def test_a_discarded_writer_leaves_nothing(place: Place) -> None:
    store = place.store_of()
    w = store.writer("gone.zfsfull")
    os.write(w.fd, b"never kept")
    w.sync()
    assert w.discard() is None
    assert place.listing() == []


def test_no_writer_replaces_an_existing_object(place: Place) -> None:
    place.put("s.zfsfull", b"the archived stream")
    store = place.store_of()
    store.entries()
    with pytest.raises(ColdError, match="already exists"):
        w = store.writer("s.zfsfull")  # a bucket refuses here...
        try:
            os.write(w.fd, b"another")
            w.commit()  # ...a directory at the rename, which never goes over anything
        finally:
            w.discard()
    fresh = place.store_of()
    assert read_whole(fresh, "s.zfsfull", listed(fresh, "s.zfsfull"))[0] == b"the archived stream"
    assert [k for k in place.listing() if "s.zfsfull" in k] == ["s.zfsfull"]


def test_delete_removes_the_object_proven_and_refuses_a_replaced_one(place: Place) -> None:
    place.put("a.zfsfull", b"proven")
    place.put("b.zfsfull", b"proven too")
    store = place.store_of()
    a, b = listed(store, "a.zfsfull"), listed(store, "b.zfsfull")
    place.put("b.zfsfull", b"replaced since it was proven")
    store.delete("a.zfsfull", a)
    with pytest.raises(ColdError, match="not"):
        store.delete("b.zfsfull", b)
    assert place.listing() == ["b.zfsfull"]


def test_a_small_read_honours_its_limit(place: Place) -> None:
    place.put("s.zfsfull.json", b"x" * 5000)
    store = place.store_of()
    stamp = listed(store, "s.zfsfull.json")
    try:
        small = store.read_small("s.zfsfull.json", stamp, 100)
    except OSError:
        return  # refusing what is over the limit is honouring it too (a bucket does)
    assert len(small) <= 100
