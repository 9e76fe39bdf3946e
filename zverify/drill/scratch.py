"""Where a drill receives: a new dataset on a pool given (`--pool`), or a file-backed pool
zverify creates for the drill (`--scratch-file SIZE`).  Either is destroyed when the drill
ends, however it ends; a scratch that could not be destroyed is named (exit 2), never left
behind in silence."""

import contextlib
import errno
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from zverify.errors import UsageError, ZfsError, ZverifyError
from zverify.zfs import ops

# the smallest file vdev `zpool create` takes
MIN_FILE_BYTES = 64 << 20


@dataclass(frozen=True)
class Scratch:
    """pool/dataset the restore creates (it must not exist), and what holds it."""

    target: str
    pool_file: str | None = None  # the file of a pool made for the drill

    @property
    def shown(self) -> str:
        where = f" (a pool on {self.pool_file})" if self.pool_file else ""
        return self.target + where


class ScratchLeft(ZverifyError):
    """The scratch could not be destroyed: named, with the command that removes it."""


@contextlib.contextmanager
def on_pool(pool: str) -> Iterator[Scratch]:
    """A new dataset below pool (`POOL/zverify-drill-XXXX`), destroyed at the end."""
    if not ops.pool_exists(pool.split("/")[0]):
        raise UsageError(f"--pool {pool}: no such pool is imported")
    target = f"{pool}/zverify-drill-{secrets.token_hex(4)}"
    try:
        yield Scratch(target)
    finally:
        _destroy(target, lambda: ops.destroy_tree(target), f"zfs destroy -r {target}")


@contextlib.contextmanager
def on_file(size: int, directory: str) -> Iterator[Scratch]:
    """A pool on a new sparse file of size bytes in directory, destroyed with its file."""
    if size < MIN_FILE_BYTES:
        raise UsageError(f"--scratch-file {size}: a pool needs at least {MIN_FILE_BYTES} bytes")
    token = secrets.token_hex(4)
    pool, path = f"zverify-drill-{token}", os.path.join(directory, f"zverify-drill-{token}.img")
    _sparse_file(path, size)
    try:
        try:
            ops.create_file_pool(pool, path)
        except ZfsError:
            os.unlink(path)
            raise
        try:
            yield Scratch(f"{pool}/drilled", path)
        finally:
            _destroy(pool, lambda: ops.destroy_pool(pool), f"zpool destroy {pool}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            _unlink(path)


def _sparse_file(path: str, size: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as err:
        raise ZverifyError(f"cannot create the scratch file {path}: {err.strerror}") from None
    try:
        os.ftruncate(fd, size)
    except OSError as err:
        os.unlink(path)
        raise ZverifyError(f"cannot size the scratch file {path}: {err.strerror}") from None
    finally:
        os.close(fd)


def _destroy(what: str, destroy: Callable[[], None], command: str) -> None:
    """Destroy it if it exists (a receive refused at once creates nothing)."""
    try:
        if ops.exists(what):
            destroy()
    except ZfsError as err:
        raise ScratchLeft(
            f"the drill's scratch {what} is left: {err}; remove it: {command}"
        ) from None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError as err:
        if err.errno == errno.ENOENT:
            raise
        raise ScratchLeft(f"the drill's scratch file {path} is left: {err.strerror}") from None
