"""Bytes to and from a bucket through pipes, for the C scanner that reads and writes fds.

Feed: a GET relayed into a pipe by a thread, resumed with a ranged GET of the same version
after a dropped connection for as long as each gets further; its error says why it stopped
short, its damaged that the body failed the checksum the server stored at upload.

Upload: a pipe whose bytes a thread cuts into parts of a multipart upload (growing, so that
a stream of unknown length can reach S3's 5 TiB object), each sent with its CRC-32 (a part
damaged on the way is refused); commit() completes it, never over an existing object, and
proves what the server stored; discard() aborts it.
"""

import base64
import contextlib
import fcntl
import os
import queue
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from zverify.cold import names
from zverify.cold.entries import Changed
from zverify.cold.store.s3api import checksum_error, errors, new_xxh3, status, why
from zverify.errors import ColdError

RESUMES = 5  # ranged GETs in a row that read nothing, before a read is given up
FIRST_PART = 8 << 20  # parts grow: 8 MiB x 1000, 16 MiB x 1000, ... reach S3's 5 TiB object
MAX_PART = 5 << 30
CHUNK = 1 << 20
# Parts sent at once, each on its own connection: the server verifies and writes one while
# the next is sent (`aws s3 cp` has 10; 2 is as fast here, 4 no faster).  Memory: the part
# being read, one queued and SENDERS being sent: 4 parts, 32 MiB over the first 7.8 GiB of
# a stream, twice as much after each 1000 parts.
SENDERS = 2
PIPE_BYTES = 1 << 20  # /proc/sys/fs/pipe-max-size by default
# Each part goes with its CRC-32: every S3 server takes it, it costs a fraction of a SHA-256
# (zlib's, which releases the GIL), and the server refuses a part whose bytes do not match it
# (BadDigest).  The object then reports the composite: the CRC-32 of the parts' CRC-32s, "-N".
ALGORITHM = "CRC32"
FIELD = "ChecksumCRC32"  # the parameter, the response's and HEAD's field
SIDECAR_KEY = "s3_checksum_crc32"  # --depth metadata holds the object to it


def part_size(number: int) -> int:
    """The size of part number (1-based) of a stream of unknown length: doubled every 1000
    parts, so that 10,000 parts hold 7.9 TiB (S3 allows 5 TiB) while a stream of a few GiB
    never holds parts of more than 8 MiB in memory (SENDERS says how many)."""
    return min(MAX_PART, FIRST_PART << ((number - 1) // 1000))


class Feed:
    """A thread copying an object's body into a pipe; a dropped connection resumes with a
    ranged GET of the same version from the byte it stopped at, for as long as each gets
    further (RESUMES in a row that read nothing end it)."""

    def __init__(self, get: Callable[[int], Any], size: int) -> None:
        """get(start): the object's body from byte start (raises OSError, Changed)."""
        self._get, self.size = get, size
        self.error: str | None = None
        self.damaged: str | None = None  # the body failed the checksum stored with it
        r, self._w = os.pipe()
        self.fd = r
        self._thread = threading.Thread(target=self._run, args=(get(0),), daemon=True)
        self._thread.start()

    def join(self) -> None:
        self._thread.join()

    def _run(self, body: Any) -> None:
        done, resumed, at = 0, 0, 0
        try:
            while True:
                try:
                    while chunk := body.read(CHUNK):
                        _write_all(self._w, chunk)
                        done += len(chunk)
                    if done == self.size:
                        return
                    stop = f"the object ended at byte {done} of {self.size}"
                except BrokenPipeError:
                    return  # the reader stopped (a bad record): nothing more is wanted
                except checksum_error() as err:  # read whole, and not what was stored
                    self.damaged = "the bytes served do not match the checksum the server "
                    self.damaged += f"stored at upload ({err}): changed at rest"
                    return
                except errors() as err:
                    stop = f"{why(err)} at byte {done}"
                resumed, at = (0 if done > at else resumed), done
                if resumed == RESUMES:
                    self.error = f"{stop}, after {RESUMES} resumed reads that read nothing"
                    return
                resumed += 1
                time.sleep(min(2**resumed / 4, 4))
                try:
                    body = self._get(done)
                except (OSError, Changed) as err:
                    self.error = f"{stop}; resuming: {err}"
                    return
        except BaseException as err:  # never leave the reader waiting without a reason
            self.error = f"{type(err).__name__}: {err}"
        finally:
            os.close(self._w)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Upload:
    """A new object written as a multipart upload fed through a pipe (fd): parts are sent as
    they fill, each with its CRC-32 (a part corrupted on the way is refused by the server);
    commit() completes the upload (never over an existing object) and proves that the object
    stored is every byte written; discard() aborts it, leaving nothing that counts."""

    def __init__(
        self, client: Any, bucket: str, key: str, prefix: str, kind: dict[str, str]
    ) -> None:
        """key below prefix in bucket; kind: create_multipart_upload's StorageClass, if any.
        Raises ColdError when the upload cannot be started."""
        self.client, self.key = client, key
        self.partial = f"s3://{bucket}/{prefix}{key} (upload)"
        self.final = key
        self._bucket, self._object = bucket, prefix + key
        try:
            self._upload = client.create_multipart_upload(
                Bucket=bucket, Key=self._object, ChecksumAlgorithm=ALGORITHM, **kind
            )["UploadId"]
        except errors() as err:
            raise ColdError(f"cannot start the upload of {names.shown(key)}: {why(err)}") from None
        r, self.fd = os.pipe()
        _widen(r)
        self._parts: list[dict[str, Any]] = []
        self._xxh = new_xxh3()
        self.size = 0
        self.error: str | None = None
        self._queue: queue.Queue[tuple[int, bytearray] | None] = queue.Queue(maxsize=1)
        self._reader = threading.Thread(target=self._read, args=(r,), daemon=True)
        self._senders = [threading.Thread(target=self._send, daemon=True) for _ in range(SENDERS)]
        for thread in (self._reader, *self._senders):
            thread.start()
        self._done = False

    # the reader fills parts from the pipe while the senders upload the previous ones
    def _read(self, r: int) -> None:
        number = 1
        try:
            while True:
                part = _read_part(r, part_size(number))
                if part is None:
                    return
                self._xxh.update(part)
                self.size += len(part)
                self._queue.put((number, part))
                number += 1
                if self.error is not None:
                    return
        except OSError as err:
            self.error = f"reading the stream: {err.strerror}"
        finally:
            os.close(r)  # a writer still writing gets EPIPE: the relay stops and says so
            for _ in self._senders:
                self._queue.put(None)

    def _send(self) -> None:
        """Upload each part the reader queues; after a failure only drain the queue (the
        reader sees the error and stops), so that neither thread ever waits for the other."""
        while (item := self._queue.get()) is not None:
            if self.error is not None:
                continue
            try:
                self._parts.append(self._upload_part(*item))
            except BaseException as err:
                said = why(err) if isinstance(err, errors()) else f"{type(err).__name__}: {err}"
                self.error = self.error or f"uploading part {item[0]}: {said}"

    def _upload_part(self, number: int, part: bytes | bytearray) -> dict[str, Any]:
        """Send the part with its CRC-32, which the server verifies.  botocore computes it
        from the part and puts it where `aws s3 cp` does: in a header, or over https in a
        trailer, which spares the part a SHA-256 of its payload for the signature.  The
        server says what it received; one that does not gets the part's CRC-32 computed
        here (complete_multipart_upload lists each part's)."""
        answer = self.client.upload_part(
            Bucket=self._bucket,
            Key=self._object,
            UploadId=self._upload,
            PartNumber=number,
            Body=part,
            ChecksumAlgorithm=ALGORITHM,
        )
        return {
            "PartNumber": number,
            "ETag": answer["ETag"],
            FIELD: answer.get(FIELD) or _crc32(part),
        }

    def sync(self) -> None:
        """Every byte written is uploaded (the pipe closed, the threads done); raises
        ColdError when an upload failed."""
        if self._done:
            return
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        for thread in (self._reader, *self._senders):
            thread.join()
        self._parts.sort(key=lambda part: int(part["PartNumber"]))  # sent out of order
        self._done = True
        if self.error is not None:
            raise ColdError(f"uploading {names.shown(self.key)} failed: {self.error}")

    def stored_size(self) -> int:
        self.sync()
        return self.size

    def stored_sha256(self) -> None:
        """None: a bucket stream's SHA-256 is not computed.  It took a sixth of the client's
        CPU, and nothing needs it: the server verified every part's CRC-32, commit() proves
        the object's composite of them, and the sidecar keeps that and the XXH3-128."""
        self.sync()

    def sidecar_digests(self) -> dict[str, str]:
        """The composite CRC-32 the bucket reports of the object (--depth metadata holds it
        to the sidecar) and the stream's XXH3-128: S3's XXHASH128 of it, `xxhsum -H2`."""
        return {SIDECAR_KEY: self.composite(), "xxh3_128": self._xxh.hexdigest()}

    def composite(self) -> str:
        """S3's composite CRC-32 of the parts: what the stored object must report."""
        joined = b"".join(base64.b64decode(p[FIELD]) for p in self._parts)
        return _crc32(joined) + f"-{len(self._parts)}"

    def commit(self) -> None:
        """Complete the upload (If-None-Match: never over an object that appeared meanwhile)
        and prove the stored object holds what was written: its size and the composite of
        the part checksums the server verified on receipt."""
        self.sync()
        client = self.client
        try:
            if not self._parts:  # an empty object: S3 wants one part at least
                self._parts.append(self._upload_part(1, b""))
            done = client.complete_multipart_upload(
                Bucket=self._bucket,
                Key=self._object,
                UploadId=self._upload,
                MultipartUpload={"Parts": self._parts},
                IfNoneMatch="*",
            )
        except errors() as err:
            said = why(err)
            raise ColdError(f"completing the upload of {names.shown(self.key)}: {said}") from None
        self._upload = ""
        wrong = self._stored_wrongly(done.get("VersionId"))
        if wrong is not None:
            try:
                version = {"VersionId": done["VersionId"]} if done.get("VersionId") else {}
                version = {} if version.get("VersionId") == "null" else version
                client.delete_object(Bucket=self._bucket, Key=self._object, **version)
            except errors() as err:
                raise ColdError(f"{wrong}, and deleting it failed: {why(err)}") from None
            raise ColdError(f"{wrong}: deleted")

    def _stored_wrongly(self, version: str | None) -> str | None:
        """What is wrong with the object just completed, as HEAD tells: its size, or the
        composite of its part checksums (what the server verified on receipt); None when
        it is what was sent.  One that cannot be asked is not proven: said so."""
        args: dict[str, Any] = {"Bucket": self._bucket, "Key": self._object}
        args |= {"VersionId": version} if version and version != "null" else {}
        try:
            try:
                stored = self.client.head_object(ChecksumMode="ENABLED", **args)
            except errors() as err:
                if status(err) != 400:
                    raise
                # a server that knows no checksum mode: the size, and the part checksums it
                # verified on receipt (a bad part is BadDigest), are what there is
                stored = self.client.head_object(**args)
        except errors() as err:
            return f"{names.shown(self.key)} was uploaded but cannot be asked ({why(err)})"
        said = stored.get(FIELD)
        # AWS writes a composite as DIGEST-PARTS; some servers leave out the -PARTS
        if said and said.partition("-")[0] == self.composite().partition("-")[0]:
            said = self.composite()
        if stored.get("ContentLength") != self.size or (said and said != self.composite()):
            return (
                f"{names.shown(self.key)} as stored ({stored.get('ContentLength')} bytes, "
                f"CRC-32 {said}) is not what was sent ({self.size} bytes, {self.composite()})"
            )
        return None

    def discard(self) -> str | None:
        """Abort the upload unless completed; what is left behind, in words, when it cannot."""
        with contextlib.suppress(ColdError):
            self.sync()
        if not self._upload:
            return None
        try:
            self.client.abort_multipart_upload(
                Bucket=self._bucket, Key=self._object, UploadId=self._upload
            )
        except errors() as err:
            return (
                f"the upload of {names.shown(self.key)} could not be aborted ({why(err)}): "
                "no command counts it as a stream; `zverify cold clean --yes` aborts it"
            )
        self._upload = ""
        return None


def _widen(fd: int) -> None:
    """Give the pipe 1 MiB (Linux' default limit for a user): the stream's writer and the
    reader each wake 16 times less often than with the default 64 KiB.  Best effort."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _crc32(data: bytes | bytearray) -> str:
    """S3's CRC-32 of data: zlib's, big-endian, in base64."""
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def _read_part(fd: int, size: int) -> bytearray | None:
    """size bytes from the pipe, fewer at its end; None at its end.  Read straight into the
    part's buffer: no chunk is copied again (at 8 MiB a part, that was two copies a byte)."""
    buf = bytearray(size)
    with memoryview(buf) as view:
        got = 0
        while got < size and (n := os.readv(fd, [view[got:]])):
            got += n
    del buf[got:]
    return buf if got else None
