"""Typed ZFS verbs: one function per operation the rest of zverify performs on a pool.

Each takes names as str (`pool/ds`, `pool/ds@snap`, `pool/ds#mark`), spells the command line
or the libzfs_core arguments itself (bytes, dicts of holds) and raises ZfsError for every
failure, so that no caller writes an argv, encodes a name for pyzfs or reads an exit status.
command.py and lzc.py stay the two ways in; this is the vocabulary on top of them.
"""

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from zverify.errors import ZfsError
from zverify.zfs import command, lzc

# what `zfs list` says of a name that is not there (libzfs: "dataset does not exist")
_NOT_THERE = "dataset does not exist"


def exists(name: str) -> bool:
    """Whether the dataset (or snapshot) exists.  Only a clear "does not exist" is False:
    when zfs cannot be asked, ZfsError is raised, never "nothing there"."""
    try:
        command.run("list", "-H", "-o", "name", name)
    except ZfsError as err:
        if err.returncode == 1 and _NOT_THERE in err.stderr:
            return False
        raise
    return True


def version() -> list[str]:
    """`zfs version`'s lines (userland, kernel module), or [] when it cannot be asked: a
    note for people, never a verdict."""
    return (command.optional("version") or "").strip().splitlines()


def destroy_tree(name: str) -> None:
    """`zfs destroy -r NAME`: the dataset with its snapshots and children."""
    command.run("destroy", "-r", name)


def bookmark(mark: str, snapshot: str) -> None:
    """Bookmark mark (`pool/ds#name`) of snapshot (`pool/ds@name`).  ZfsError with errno
    EEXIST when the bookmark exists already."""
    lzc.call("lzc_bookmark", {mark.encode(): snapshot.encode()})


def destroy_bookmarks(marks: list[str]) -> None:
    if marks:
        lzc.call("lzc_destroy_bookmarks", [m.encode() for m in marks])


def holds(snapshot: str) -> list[str]:
    """The user-hold tags on snapshot, sorted (libzfs_core when pyzfs is there)."""
    if lzc.available():
        tags = lzc.call("lzc_get_holds", snapshot.encode())
        return sorted(t.decode() if isinstance(t, bytes) else str(t) for t in tags)
    out = command.run("holds", "-H", snapshot)
    return sorted(line.split("\t")[1] for line in out.splitlines() if line.strip())


def hold(snapshot: str, tag: str) -> None:
    """A user hold tag on snapshot, unless it is held with that tag already."""
    if tag not in holds(snapshot):
        lzc.call("lzc_hold", {snapshot.encode(): tag.encode()})


def release(snapshots: list[str], tag: str) -> None:
    """Release the hold tag on each snapshot (each must hold it)."""
    if snapshots:
        lzc.call("lzc_release", {s.encode(): [tag.encode()] for s in snapshots})


@dataclass(frozen=True)
class SendArgs:
    """What `zfs send` is asked for: snapshot, an optional base (`@snap` or `#mark`, full
    names) sent incrementally (-i) or with every snapshot between (-I), and flags."""

    snapshot: str
    base: str | None = None
    intermediate: bool = False
    flags: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        argv = ["send", *self.flags]
        if self.base is not None:
            argv += ["-I" if self.intermediate else "-i", self.base]
        return [*argv, self.snapshot]


class Sending:
    """A running `zfs send` whose stream is read from .stdout (a pipe); finish() closes the
    pipe (zfs gets SIGPIPE if the reader stopped early), waits, and raises ZfsError unless
    it exited 0."""

    def __init__(self, args: SendArgs) -> None:
        self.argv = args.argv()
        self._proc = command.popen(self.argv)
        assert self._proc.stdout is not None
        self.stdout = self._proc.stdout

    def finish(self) -> None:
        self.stdout.close()
        stderr = self._proc.communicate()[1].decode("utf-8", "replace")
        if self._proc.returncode != 0:
            raise ZfsError(["zfs", *self.argv], self._proc.returncode, stderr)

    def kill(self) -> None:
        """Stop it (a send nobody will read to the end), then finish() as usual."""
        self._proc.kill()


def send(args: SendArgs) -> Sending:
    """`zfs send` started, its stream on .stdout.  Raises ZfsError when it cannot start."""
    return Sending(args)


def send_size(args: SendArgs) -> int:
    """The bytes `zfs send -nvP` estimates for the stream (nothing is sent)."""
    dry = SendArgs(args.snapshot, args.base, args.intermediate, ("-nvP", *args.flags))
    out = command.run(*dry.argv())
    for line in out.splitlines():
        key, _, value = line.partition("\t")
        if key == "size" and value.strip().isdigit():
            return int(value)
    raise ZfsError(["zfs", *dry.argv()], 0, f"no size line in its answer: {out.strip()[:200]}")


@contextlib.contextmanager
def receiving(target: str) -> Iterator[int]:
    """`zfs receive -u TARGET` (not mounted: nothing may touch TARGET between the receives of
    one chain), reading from the pipe whose write end (an fd) is yielded.

    On a normal exit the pipe is closed and the receive's exit status checked (ZfsError on
    failure).  On an exception the receive is killed *before* its input ends, so that it can
    never take what it got for a complete stream; a receive killed midway applies nothing.
    """
    args = ["receive", "-u", target]
    with tempfile.TemporaryFile() as errors:
        proc = command.popen(args, stdin=subprocess.PIPE, stdout=errors, stderr=errors)
        assert proc.stdin is not None
        try:
            yield proc.stdin.fileno()
        except BaseException:
            proc.kill()
            proc.wait()
            proc.stdin.close()
            raise
        proc.stdin.close()
        code = proc.wait()
        if code != 0:
            errors.seek(0)
            stderr = errors.read().decode("utf-8", "replace").strip()
            raise ZfsError(["zfs", *args], code, stderr)


def create_file_pool(pool: str, vdev: str) -> None:
    """`zpool create` of a throw-away pool on one file (a drill's scratch): nothing of it
    is mounted (mountpoint=none), and no cache file remembers it for the next boot."""
    command.run_zpool(
        "create", "-o", "cachefile=none", "-O", "mountpoint=none", "-O", "canmount=off", pool, vdev
    )


def destroy_pool(pool: str) -> None:
    """`zpool destroy -f POOL` (a drill's scratch pool, with whatever it holds)."""
    command.run_zpool("destroy", "-f", pool)


def pool_exists(pool: str) -> bool:
    """Whether a pool of that name is imported; ZfsError when zpool cannot be asked."""
    try:
        command.run_zpool("list", "-H", "-o", "name", pool)
    except ZfsError as err:
        if err.returncode == 1 and "no such pool" in err.stderr:
            return False
        raise
    return True


def key_unavailable(dataset: str) -> bool:
    """Whether dataset is encrypted with its key not loaded (as a raw receive leaves it):
    nothing of it can be mounted or read."""
    return command.run("get", "-H", "-o", "value", "keystatus", dataset).strip() == "unavailable"


def dataset_type(dataset: str) -> str:
    """`filesystem`, `volume`, `snapshot`, ... of dataset."""
    return command.run("get", "-H", "-o", "value", "type", dataset).strip()
