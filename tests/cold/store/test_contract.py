"""What every archive store must do, one suite over each (issue 47): a directory
(LocalStore) and a bucket of a real S3 server (S3Store, versitygw).  Every cold command stands
on these promises, so a third store starts from this file:

* a listed object is read whole, and its identity after the read is the one listed;
* a read pinned to what was listed never passes an object replaced since as the one listed:
  it refuses it (Changed), or the identity after the read is not the listed one;
* a writer's bytes appear under their name only on commit, a discarded one leaves nothing
  (no object, no .partial, no upload), and no writer ever replaces an existing object;
* a read cut short (the object replaced under it, a bucket's connection dropped) is reported
  by finish_read(): it raises OSError or gives another identity than the listed one, never
  passes the bytes read as the object;
* delete removes the very object proven, and refuses one replaced since;
* a small read honours its limit (a sidecar's bytes, never an unbounded body);
* locks exclude where the store has them (uses_local_files: flock in the directory): one
  writer at a time, readers together and beside a writer, no reader beside a deleter, each
  refused at once naming the archive (exit 2), and released on exit leaving no lock file.  A
  bucket has no lock two hosts could share and says so (its lock() excludes nothing): the
  promises above (pinned reads, no overwrite, deletes of the proven object) stand in.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli import console
from zverify.cold import entries
from zverify.cold.entries import FileStamp
from zverify.cold.store import LocalStore, Store
from zverify.cold.store.lock import Busy
from zverify.errors import ColdError


@dataclass
class Place:
    """A store and a way to change its objects behind its back (another host's upload,
    a disk's bit rot, a person's mv)."""

    store_of: Any  # () -> a new Store over the place: one listing per store, as a command has
    put: Any  # (key, bytes): write an object as any other tool would
    listing: Any  # () -> every key there, whatever zverify thinks
    # (key, bytes) -> a Store whose next whole read of key is cut short, key then holding
    # bytes: a directory's file rewritten in place under the read, a bucket's connection
    # dropped mid-body and the object replaced before the read resumes
    cut_store_of: Any


def _directory(tmp_path: Path) -> Place:
    root = tmp_path / "archive"
    root.mkdir()

    class RewrittenUnderTheRead(LocalStore):
        rewrite: dict[str, bytes]  # key -> its bytes once its read is open

        def open_read(self, key: str, expect: FileStamp | None = None) -> int:
            fd = super().open_read(key, expect)
            (root / key).write_bytes(self.rewrite.pop(key))  # O_TRUNC: the same inode
            return fd

    def cut_store_of(key: str, data: bytes) -> Store:
        store = RewrittenUnderTheRead([str(root)])
        store.rewrite = {key: data}
        return store

    return Place(
        lambda: LocalStore([str(root)]),
        lambda key, data: (root / key).write_bytes(data),
        lambda: sorted(os.listdir(root)),
        cut_store_of,
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

    def cut_store_of(key: str, data: bytes) -> Store:
        proxy = CutOnce(env.server.port, f"/archive/{key} ", lambda: put(key, data))
        return S3Store(env.url, f"http://127.0.0.1:{proxy.port}")

    return Place(lambda: S3Store(env.url, None), put, keys, cut_store_of)


class CutOnce:
    """A TCP relay to the server that breaks off the first GET of one object after CUT_AT
    bytes of its answer, as a dropped connection does, having run then() first (another
    host's upload): the read can only resume onto the object that replaced it."""

    CUT_AT = 20_000

    def __init__(self, port: int, target: str, then: Callable[[], None]) -> None:
        self.server_port, self.target, self.then = port, target.encode(), then
        self.armed = True
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with self.sock:
            while True:
                client, _ = self.sock.accept()
                upstream = socket.create_connection(("127.0.0.1", self.server_port))
                left: list[int | None] = [None]  # bytes of the answer until the cut, once armed
                for relay in (self._requests, self._answers):
                    threading.Thread(
                        target=relay, args=(client, upstream, left), daemon=True
                    ).start()

    def _requests(
        self, client: socket.socket, upstream: socket.socket, left: list[int | None]
    ) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(1 << 16):
                line = data.split(b"\r\n", 1)[0]
                if self.armed and line.startswith(b"GET ") and self.target in line:
                    self.armed, left[0] = False, self.CUT_AT
                upstream.sendall(data)

    def _answers(
        self, client: socket.socket, upstream: socket.socket, left: list[int | None]
    ) -> None:
        with contextlib.suppress(OSError):
            while data := upstream.recv(1 << 16):
                if left[0] is not None and len(data) >= left[0]:
                    client.sendall(data[: left[0]])
                    self.then()
                    break
                if left[0] is not None:
                    left[0] -= len(data)
                client.sendall(data)
        for end in (client, upstream):  # shutdown wakes the other relay's recv
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()


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


def test_a_read_cut_short_is_reported_never_passed_as_the_object(place: Place) -> None:
    data = os.urandom(1 << 20)
    place.put("s.zfsfull", data)
    store = place.cut_store_of("s.zfsfull", b"replaced")
    stamp = listed(store, "s.zfsfull")
    fd = store.open_read("s.zfsfull", stamp)  # what was listed is what the read starts on
    got = b""
    while chunk := os.read(fd, 1 << 16):
        got += chunk
    assert len(got) < len(data)  # the read was cut short...
    try:
        after = store.finish_read("s.zfsfull", fd)
    except OSError:
        return  # ...and said so: a bucket's read resumed onto another object
    assert after != stamp  # ...and said so: a file's identity is not the one listed


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


def lock_holder(place: Place) -> Store:
    store: Store = place.store_of()
    if not store.uses_local_files:
        with store.lock("write"), place.store_of().lock("delete"):
            pass  # nothing excludes: what stands in is the promises above
        pytest.skip(
            "a bucket has no lock two hosts could share (zverify/cold/store/s3.py): pinned "
            "reads, uploads that never overwrite and deletes of the proven object stand in"
        )
    return store


def test_one_writer_at_a_time_and_no_reader_beside_a_deleter(place: Place) -> None:
    with lock_holder(place).lock("write"):
        with (
            pytest.raises(Busy, match=r"archive .*archive is busy: .* writing"),
            place.store_of().lock("write"),
        ):
            pass
        with place.store_of().lock("read"):
            pass  # a send only adds (by rename): checks and restores run beside it
    with (
        lock_holder(place).lock("delete"),  # the writer's lock released: a deleter takes it
        pytest.raises(Busy, match=r"archive .*archive is busy: .* deleting"),
        place.store_of().lock("read"),
    ):
        pass
    assert place.listing() == []  # released, and the lock files gone with the last holder


def test_readers_share_and_keep_a_deleter_out(place: Place) -> None:
    with lock_holder(place).lock("read"), place.store_of().lock("read"):
        with (
            pytest.raises(Busy, match=r"archive .*archive is being read by"),
            place.store_of().lock("delete"),
        ):
            pass
        with place.store_of().lock("write"):
            pass
    with place.store_of().lock("delete"):
        pass  # taken once the readers are gone
    assert place.listing() == []


def test_another_zverify_is_refused_while_a_lock_is_held(place: Place) -> None:
    store = lock_holder(place)
    (where,) = store.places
    with store.lock("read"):
        refused = console.zverify("cold", "clean", "--yes", where)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"archive {where} is being read by pid {os.getpid()}" in refused.stderr
    done = console.zverify("cold", "clean", "--yes", where)
    assert done.returncode == 0, done.stdout + done.stderr
    assert place.listing() == []
