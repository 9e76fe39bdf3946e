"""A stand-in `zfs` answering the listing commands of `zverify cutover` from a JSON state
file (env ZV_STANDIN_STATE), for the failure and race cases that real ZFS in the VM cannot
make on demand (tests/cutover/test_zfs.py covers the real ones).

State: {"datasets": {name: {prop: [value, source]}}, "snapshots": {dataset: [[name, guid,
txg, userrefs]]}, "written": {"ds@snap": bytes}, "snapshot_later": {dataset: [...]},
"datasets_later": {name: {...}}, "diff": {"ds@snap": [`zfs diff -H` lines]}}:
snapshot_later replaces a dataset's snapshots from the second listing on (a snapshot taken
while zverify was checking); datasets_later adds datasets to the second listing of names
(`zfs list -o name`, a dataset created meanwhile)."""

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    path = os.environ["ZV_STANDIN_STATE"]
    with open(path) as f:
        state = json.load(f)
    root = argv[-1]
    if argv[0] == "get" and argv[-2] == "all":
        return _props(state, root, "-r" in argv)
    if argv[0] == "list" and "snapshot" in argv:
        return _snapshots(state, root, "-r" in argv, _count(path, "list"))
    if argv[0] == "list" and "bookmark" in argv:
        return _bookmarks(state, root)
    if argv[0] == "list" and "filesystem,volume" in argv:
        return _names(state, root, _count(path, "names"))
    if argv[0] == "diff":
        return _diff(state, argv[-2])
    if argv[0] == "get" and argv[-2].startswith("written@"):
        print(state["written"][f"{root}@{argv[-2].partition('@')[2]}"])
        return 0
    print(f"standin zfs: unexpected {argv}", file=sys.stderr)
    return 1


def _diff(state: dict, snapshot: str) -> int:
    lines = state.get("diff", {}).get(snapshot)
    if lines is None:
        print(f"standin zfs: no diff of {snapshot}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def _under(name: str, root: str, recursive: bool) -> bool:
    return name == root or (recursive and name.startswith(root + "/"))


def _props(state: dict, root: str, recursive: bool) -> int:
    if root not in state["datasets"]:
        print(f"cannot open '{root}': dataset does not exist", file=sys.stderr)
        return 1
    for name, props in sorted(state["datasets"].items()):
        if _under(name, root, recursive):
            for prop, (value, source) in props.items():
                print(f"{name}\t{prop}\t{value}\t{source}")
    return 0


def _names(state: dict, root: str, call: int) -> int:
    datasets = dict(state["datasets"])
    if call > 1:  # the re-check's listing
        datasets.update(state.get("datasets_later", {}))
    if root not in datasets:
        print(f"cannot open '{root}': dataset does not exist", file=sys.stderr)
        return 1
    for name in sorted(datasets):
        if _under(name, root, True):
            print(name)
    return 0


def _snapshots(state: dict, root: str, recursive: bool, call: int) -> int:
    snapshots = dict(state["snapshots"])
    if call > 2:  # one listing per side before the re-check
        snapshots.update(state.get("snapshot_later", {}))
    for ds, snaps in sorted(snapshots.items()):
        if _under(ds, root, recursive):
            for name, guid, txg, refs in snaps:
                print(f"{ds}@{name}\t{guid}\t{txg}\t{refs}")
    return 0


def _bookmarks(state: dict, root: str) -> int:
    """ "bookmarks": {dataset: [[name, guid, txg]]}, listed for the whole tree below root."""
    for ds, marks in sorted(state.get("bookmarks", {}).items()):
        if _under(ds, root, True):
            for name, guid, txg in marks:
                print(f"{ds}#{name}\t{guid}\t{txg}")
    return 0


def _count(path: str, what: str) -> int:
    counter = f"{path}.{what}"
    n = int(Path(counter).read_text()) + 1 if os.path.exists(counter) else 1
    Path(counter).write_text(str(n))
    return n


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
