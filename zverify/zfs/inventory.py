"""What datasets hold on the live system: their snapshots and bookmarks by GUID, their
properties with the source of each value, and what was written since a snapshot.

Every reader raises ZfsError when zfs fails: an answer that decides a verdict is never
replaced by "nothing there".
"""

from dataclasses import dataclass, field

from zverify.errors import ZfsError
from zverify.zfs import command, ops


@dataclass(frozen=True)
class Snap:
    """A snapshot (`pool/ds@name`) or a bookmark (`pool/ds#name`) of one dataset."""

    name: str  # the part after '@' or '#'
    guid: int
    createtxg: int
    bookmark: bool = False
    userrefs: int = 0  # user holds (snapshots only)

    def full_name(self, dataset: str) -> str:
        return f"{dataset}{'#' if self.bookmark else '@'}{self.name}"


@dataclass(frozen=True)
class Prop:
    """One property value and where it comes from, as `zfs get` says it: `local`,
    `received`, `default`, `inherited from POOL/DS`, `temporary` or `-` (none)."""

    value: str
    source: str

    @property
    def inherited_from(self) -> str | None:
        head, _, origin = self.source.partition("inherited from ")
        return origin if not head and origin else None


@dataclass
class Dataset:
    """A filesystem or volume with every property `zfs get all` shows for it."""

    name: str
    props: dict[str, Prop] = field(default_factory=dict)

    def value(self, prop: str) -> str:
        p = self.props.get(prop)
        return p.value if p is not None else "-"

    @property
    def type(self) -> str:
        return self.value("type")


def snapshots(dataset: str) -> list[Snap]:
    """Snapshots and bookmarks of dataset itself (not its children), oldest first.
    Raises ZfsError when the dataset cannot be listed."""
    out = command.run(
        "list", "-Hp", "-t", "snapshot,bookmark", "-o", "name,guid,createtxg",
        "-s", "createtxg", "-d", "1", dataset,
    )  # fmt: skip
    found = []
    for line in out.splitlines():
        full, guid, txg = line.split("\t")
        for sep in ("@", "#"):
            owner, found_sep, name = full.partition(sep)
            if found_sep and owner == dataset:
                found.append(Snap(name, int(guid), int(txg), bookmark=sep == "#"))
                break
    return found


def datasets(root: str, recursive: bool) -> list[Dataset]:
    """root (and with recursive, every filesystem and volume below it), each with all its
    properties, in `zfs get` order (parents before children)."""
    depth = ["-r"] if recursive else ["-d", "0"]
    out = command.run(
        "get", "-Hp", *depth, "-t", "filesystem,volume",
        "-o", "name,property,value,source", "all", root,
    )  # fmt: skip
    found: dict[str, Dataset] = {}
    for line in out.splitlines():
        name, prop, value, source = line.split("\t", 3)
        found.setdefault(name, Dataset(name)).props[prop] = Prop(value, source)
    return list(found.values())


def descendants(root: str) -> list[str]:
    """The names of every filesystem and volume below root (not root itself), parents
    before children.  Raises ZfsError when root cannot be listed."""
    out = command.run("list", "-H", "-r", "-t", "filesystem,volume", "-o", "name", root)
    return [name for name in out.splitlines() if name and name != root]


def snapshots_below(root: str, recursive: bool) -> dict[str, list[Snap]]:
    """{dataset: its snapshots oldest first (by createtxg), with their user hold counts} for
    root (and with recursive, every dataset below it).  One `zfs list` for the whole tree."""
    depth = ["-r"] if recursive else ["-d", "1"]
    out = command.run(
        "list", "-Hp", *depth, "-t", "snapshot", "-s", "createtxg",
        "-o", "name,guid,createtxg,userrefs", root,
    )  # fmt: skip
    found: dict[str, list[Snap]] = {}
    for line in out.splitlines():
        full, guid, txg, refs = line.split("\t")
        owner, _, name = full.partition("@")
        found.setdefault(owner, []).append(Snap(name, int(guid), int(txg), userrefs=int(refs)))
    return found


def bookmarks_below(root: str, recursive: bool) -> dict[str, list[Snap]]:
    """{dataset: its bookmarks oldest first (by createtxg), with their GUIDs} for root (and
    with recursive, every dataset below it).  One `zfs list` for the whole tree."""
    depth = ["-r"] if recursive else ["-d", "1"]
    out = command.run(
        "list", "-Hp", *depth, "-t", "bookmark", "-s", "createtxg",
        "-o", "name,guid,createtxg", root,
    )  # fmt: skip
    found: dict[str, list[Snap]] = {}
    for line in out.splitlines():
        full, guid, txg = line.split("\t")
        owner, _, name = full.partition("#")
        found.setdefault(owner, []).append(Snap(name, int(guid), int(txg), bookmark=True))
    return found


def read_only(pool: str) -> bool:
    """The pool was imported with `-o readonly=on` (a migration's old pool, kept for
    reading): nothing can be written on it, so nothing is pending either."""
    return command.run_zpool("get", "-H", "-o", "value", "readonly", pool).strip() == "on"


def flush(pool: str) -> None:
    """`zpool sync`: written@ and the space properties count synced data only, so a write
    made a moment ago is invisible until its transaction group is on disk (up to ~5 s)."""
    command.run_zpool("sync", pool)


def written_since(dataset: str, snapshot: str) -> int:
    """Bytes written to dataset since its snapshot (`written@SNAPSHOT`): 0 means the live
    dataset still holds exactly that snapshot's blocks."""
    out = command.run("get", "-Hp", "-o", "value", f"written@{snapshot}", dataset)
    return int(out.strip())


def holds(dataset: str, snapshot: str) -> list[str]:
    """The user-hold tags on dataset@snapshot."""
    return ops.holds(f"{dataset}@{snapshot}")


def changes_since(dataset: str, snapshot: str) -> list[str]:
    """What `zfs diff -H SNAPSHOT DATASET` lists (one change per line, e.g. "M\t/path")."""
    out = command.run("diff", "-H", f"{dataset}@{snapshot}", dataset)
    return [line for line in out.splitlines() if line.strip()]


def key_not_proven(dataset: str) -> str | None:
    """None when `zfs load-key -n` proves the key at keylocation opens dataset (without
    loading it); else why not: the key must be typed at a prompt, or the command failed."""
    try:
        if command.run("get", "-H", "-o", "value", "keylocation", dataset).strip() == "prompt":
            return "keylocation=prompt: the key can only be typed in"
        command.run("load-key", "-n", dataset)
    except ZfsError as err:
        return str(err)
    return None
