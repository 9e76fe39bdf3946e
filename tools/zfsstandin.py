"""A stand-in ZFS for running `zverify cold ...` in subprocesses where no ZFS is: a `zfs` command
and a `libzfs_core` module that replay the real fixture streams (tests/data/streams), slowly or
held at a gate when a test needs a command to stay in the middle of its work.

State lives in one directory (ZfsStandIn.state):

  snapshots      `zfs list` rows (name, guid, createtxg) of the source datasets
  sends.json     {"pool/set@snap": fixture path}: what `zfs send ...@snap` writes
  received       rows of the snapshots `zfs receive` created (only from a complete fixture;
                 `zfs destroy -r` removes a dataset's)
  delay          seconds to sleep per 16 KiB sent or received (absent: none)
  gate-send      present: `zfs send` writes 16 KiB of its stream, then waits for the file go
  gate-receive   present: `zfs receive` reads 16 KiB of its input, then waits for go
  started-send, started-receive   touched when a send or receive begins
  bookmarks      one line per bookmark the stand-in libzfs_core made
  dry-runs       one line per `zfs send -nvP` (answered with the fixture's size)

A receive records snapshots only when what it read is, byte for byte, a fixture stream
(index.json says which snapshots that stream holds): a receive killed midway creates nothing,
as the kernel's would not.

A tool, not a test: the cold tests (tests/cold/standin.py) and bench/cold_parity.py use it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

STREAMS = Path(__file__).resolve().parents[1] / "tests" / "data" / "streams"
INDEX = json.loads((STREAMS / "index.json").read_text())
GUIDS = {e["to"]: e["to_guid"] for e in INDEX["streams"]}

ZFS = r"""#!PYTHON
import hashlib, json, os, sys, time
state = os.environ["ZVCOLD_STATE"]
args = sys.argv[1:]


def path(name):
    return os.path.join(state, name)


def delay():
    try:
        return float(open(path("delay")).read())
    except OSError:
        return 0.0


def gate(op, at):
    if at > 0 and os.path.exists(path("gate-" + op)):
        while not os.path.exists(path("go")):
            time.sleep(0.02)


if args[0] == "version":
    print("zfs-2.1.11-standin")
elif args[0] == "list":
    dataset = args[-1]
    rows = []
    for name in ("snapshots", "received"):
        if os.path.exists(path(name)):
            rows += open(path(name)).read().splitlines()
    mine = [r for r in rows if r.split("\t")[0].replace("#", "@").split("@")[0] == dataset]
    if not mine:
        sys.exit("cannot open '%s': dataset does not exist" % dataset)
    print("\n".join(mine) if "-t" in args else dataset)
elif args[0] == "send" and "-nvP" in args:  # the dry run: an estimate, nothing sent
    fixture = json.load(open(path("sends.json")))[args[-1]]
    size = os.path.getsize(fixture)
    print("full\t%s\t%d\nsize\t%d" % (args[-1], size, size))
    open(path("dry-runs"), "a").write(" ".join(args) + "\n")
elif args[0] == "send":
    fixture = json.load(open(path("sends.json")))[args[-1]]
    data = open(fixture, "rb").read()
    open(path("started-send"), "w").close()
    out, wait, at = sys.stdout.buffer, delay(), 0
    while at < len(data):
        gate("send", at)
        out.write(data[at : at + 16384])
        out.flush()
        at += 16384
        time.sleep(wait)
elif args[0] == "receive":
    target = args[-1]
    open(path("started-receive"), "w").close()
    got, wait = bytearray(), delay()
    while True:
        gate("receive", len(got))
        chunk = sys.stdin.buffer.read(16384)
        if not chunk:
            break
        got += chunk
        time.sleep(wait)
    digest = hashlib.sha256(bytes(got)).hexdigest()
    index = json.load(open(os.environ["ZVCOLD_INDEX"]))
    known = [e for e in index["streams"] if e["sha256"] == digest]
    if not known:
        sys.exit("cannot receive: incomplete or unknown stream (%d bytes)" % len(got))
    with open(path("received"), "a") as f:
        for n, snap in enumerate(known[0]["contains"]):
            if "@" in snap["name"] and snap["name"].split("@")[0] == known[0]["dataset"]:
                f.write("%s@%s\t%d\t%d\n" % (target, snap["name"].split("@")[1], snap["guid"], n))
elif args[0] == "destroy":
    dataset = args[-1]
    got = path("received")
    rows = open(got).read().splitlines(True) if os.path.exists(got) else []
    kept = [r for r in rows if r.split("\t")[0].split("@")[0] != dataset]
    open(path("received"), "w").write("".join(kept))
else:
    sys.exit("stand-in zfs: unexpected " + " ".join(args))
"""

LZC = """import os
_state = os.environ["ZVCOLD_STATE"]
def lzc_exists(name): return False
def lzc_bookmark(bookmarks):
    with open(os.path.join(_state, "bookmarks"), "a") as f:
        for b in bookmarks: f.write(b.decode() + "\\n")
def lzc_get_holds(snapshot): return {}
def lzc_hold(holds): return []
def lzc_release(holds): return []
def lzc_destroy_bookmarks(bookmarks): return None
"""


class ZfsStandIn:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self.state.mkdir(parents=True)
        self.bin = root / "bin"
        self.bin.mkdir()
        (self.bin / "zfs").write_text(ZFS.replace("PYTHON", sys.executable, 1))
        (self.bin / "zfs").chmod(0o755)
        self.lzc = root / "lzc"
        self.lzc.mkdir()
        (self.lzc / "libzfs_core.py").write_text(LZC)

    def source(self, dataset: str, snapshots: dict[str, str]) -> None:
        """dataset has these snapshots, `zfs send ...@snap` replays fixture file snapshots[snap]."""
        rows = [
            f"{dataset}@{snap}\t{GUIDS[f'zv/fs@{snap}']}\t{10 + i}\n"
            for i, snap in enumerate(snapshots)
        ]
        (self.state / "snapshots").write_text("".join(rows))
        sends = {f"{dataset}@{snap}": str(STREAMS / f) for snap, f in snapshots.items()}
        (self.state / "sends.json").write_text(json.dumps(sends))

    def slow(self, seconds_per_16k: float | None) -> None:
        if seconds_per_16k is None:
            (self.state / "delay").unlink(missing_ok=True)
        else:
            (self.state / "delay").write_text(str(seconds_per_16k))

    def hold(self, op: str) -> None:
        """The next `zfs send` or `zfs receive` stops halfway until release()."""
        (self.state / "go").unlink(missing_ok=True)
        (self.state / f"gate-{op}").touch()
        (self.state / f"started-{op}").unlink(missing_ok=True)

    def release(self) -> None:
        (self.state / "go").touch()

    def wait_started(self, op: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not (self.state / f"started-{op}").exists():
            assert time.monotonic() < deadline, f"the stand-in `zfs {op}` never started"
            time.sleep(0.02)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return {
            **env,
            "LC_ALL": "C.UTF-8",
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin:{os.environ['PATH']}",
            "PYTHONPATH": str(self.lzc),
            "ZVCOLD_STATE": str(self.state),
            "ZVCOLD_INDEX": str(STREAMS / "index.json"),
            **extra,
        }
