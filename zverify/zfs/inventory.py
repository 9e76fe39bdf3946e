"""What a dataset holds on the live system: its snapshots and bookmarks, by GUID."""

from dataclasses import dataclass

from zverify.zfs import command


@dataclass(frozen=True)
class Snap:
    """A snapshot (`pool/ds@name`) or a bookmark (`pool/ds#name`) of one dataset."""

    name: str  # the part after '@' or '#'
    guid: int
    createtxg: int
    bookmark: bool = False

    def full_name(self, dataset: str) -> str:
        return f"{dataset}{'#' if self.bookmark else '@'}{self.name}"


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
