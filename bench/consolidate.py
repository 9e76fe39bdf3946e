"""`zverify cold consolidate` and `cold digest` against `cat` and `cold check` (issue 44 item 6).

Run by hand from the repository root (never collected by the test suite), on a quiet machine
or at least under `nice`:

    nice -n 19 python3 bench/consolidate.py [--full-mib 128] [--runs 3] [--profile]

Two seeded archives of one synthetic dataset (no ZFS needed; the streams are written here in
OpenZFS's sender order with valid trailers and END checksums, like tools/streamgen.py
but streamed to disk): thousands of small single-block files plus files of 1-8 128 KiB blocks,
a full of @0 and then incrementals that rewrite, append to, truncate, delete and create objects,
each re-sending every dnode block it touches.  `chain10` has 10 incrementals, `chain100` 100.

Per archive, interleaved rounds (one warm-up round first, so the page cache is hot; medians):

* `consolidate`: `python -m zverify cold consolidate --into OUT ARCHIVE` (the check of the
  whole archive, the merge, the write + scan + fsync of the new full and its read-back digest);
* `cat`: the bytes consolidate must move, `cat ROUTE > /dev/null`, then the new full's size
  written to OUT and fsynced (`head -c SIZE /dev/zero > F; sync F`);
* `check`, `digest`: `cold check ARCHIVE` and `cold digest ARCHIVE`.

The table: median seconds, MB/s of the route + new full, peak RSS (`/usr/bin/time -f %M`, the
largest process), and the ratios the issue sets goals for: consolidate's throughput over cat's
(goal >= 0.8), consolidate's peak RSS on the 100-link chain (goal <= 64 MiB), digest / check.
`--profile` adds `python -m cProfile` of one consolidate of chain10: the top functions by
cumulative and by own time.  Scratch under --scratch (default /var/tmp/zverify-bench/consolidate),
reused while the parameters are unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DRR = 312
MAGIC = 0x2F5BACBAC
M64 = (1 << 64) - 1
BEGIN, OBJECT, FREEOBJECTS, WRITE, FREE, END = 0, 1, 2, 3, 4, 5
DNODES_PER_BLOCK = 32  # 16 KiB dnode block / 512-byte dnodes
BIG = 131072
DATASET = "pool/bench"
GUID0 = 0x5EED_0000_0000
PYCACHE = Path("/var/tmp/zverify-bench/pycache")


# -- the streams ---------------------------------------------------------------------------


class StreamFile:
    """Appends records to a file with the running fletcher-4 a sender writes."""

    def __init__(self, path: Path, toname: str, toguid: int, fromguid: int) -> None:
        from zverify import _zvcore

        self.f4 = _zvcore.fletcher4
        self.f = open(path, "wb")  # noqa: SIM115 - closed by end()
        self.toguid = toguid
        head = struct.pack(
            "<IIQQQIIQQ", BEGIN, 0, MAGIC, 1 | (4 << 2), 1_700_000_000, 2, 0xC, toguid, fromguid
        )
        head = (head + toname.encode()).ljust(DRR, b"\0")
        self.state = self.f4(head)
        self.f.write(head)

    def emit(self, head: bytes, payload: bytes = b"") -> None:
        head = head.ljust(280, b"\0")
        self.state = self.f4(head, state=self.state)
        trailer = struct.pack("<4Q", *self.state)
        self.state = self.f4(trailer, state=self.state)
        self.f.write(head + trailer)
        if payload:
            self.state = self.f4(payload, state=self.state)
            self.f.write(payload)

    def obj(self, o: int, blksz: int, maxblkid: int, bonus: bytes) -> None:
        head = struct.pack(
            "<IIQIIIIBBBBIQ", OBJECT, 0, o, 19 if o > 1 else 21, 44, blksz, len(bonus),
            7, 15, 1, 0, 0, self.toguid,
        )  # fmt: skip
        self.emit(head.ljust(56, b"\0") + struct.pack("<Q", maxblkid), bonus)
        self.free(o, (maxblkid + 1) * blksz, M64)  # the sender's truncation after OBJECT

    def free(self, o: int, offset: int, length: int) -> None:
        self.emit(struct.pack("<IIQQQQ", FREE, 0, o, offset, length, self.toguid))

    def freeobjects(self, first: int, num: int) -> None:
        self.emit(struct.pack("<IIQQQ", FREEOBJECTS, 0, first, num, self.toguid))

    def write(self, o: int, offset: int, data: bytes) -> None:
        head = struct.pack(
            "<IIQIIQQQBBB5x", WRITE, 0, o, 19, 0, offset, len(data), self.toguid, 2, 0, 0
        )
        self.emit(head, data)

    def end(self) -> None:
        self.emit(struct.pack("<II4QQ", END, 0, *self.state, self.toguid))
        self.f.close()


@dataclass
class Obj:
    blksz: int
    nblocks: int
    gen: int = 0  # bumped on every change: the bonus differs


@dataclass
class Dataset:
    """The live objects of the synthetic dataset and what one snapshot changed."""

    rng: random.Random
    objs: dict[int, Obj] = field(default_factory=lambda: {1: Obj(512, 1)})  # master node
    next_obj: int = 2

    def block(self, o: int, blkid: int, snap: int) -> bytes:
        size = self.objs[o].blksz
        return random.Random(o * 1_000_003 + blkid * 7919 + snap).randbytes(size)

    def bonus(self, o: int) -> bytes:
        return struct.pack("<QQ", o, self.objs[o].gen).ljust(168, b"\x5a")

    def create(self, big: bool) -> int:
        o, self.next_obj = self.next_obj, self.next_obj + 1
        if big:
            self.objs[o] = Obj(BIG, self.rng.randint(1, 8))
        else:
            self.objs[o] = Obj(512 * self.rng.randint(1, 32), 1)
        return o


def write_snapshot(ds: Dataset, path: Path, snap: int, changed: dict[int, set[int]]) -> None:
    """One substream: every dnode block holding a changed (or freed) object, in object
    order; per live object OBJECT, its truncation FREE, its changed blocks; free slots as
    FREEOBJECTS runs.  changed: object -> block ids rewritten (a deleted object: absent from
    ds.objs)."""
    s = StreamFile(path, f"{DATASET}@{snap}", GUID0 + snap, GUID0 + snap - 1 if snap else 0)
    # the master node's dnode block goes in every substream, as the sender's ZPL updates do
    for dblock in sorted({0} | {o // DNODES_PER_BLOCK for o in changed}):
        first = max(1, dblock * DNODES_PER_BLOCK)
        free_from = None
        for o in range(first, (dblock + 1) * DNODES_PER_BLOCK):
            if o not in ds.objs:
                free_from = o if free_from is None else free_from
                continue
            if free_from is not None:
                s.freeobjects(free_from, o - free_from)
                free_from = None
            ob = ds.objs[o]
            s.obj(o, ob.blksz, ob.nblocks - 1, ds.bonus(o))
            for blkid in sorted(changed.get(o, ())):
                s.write(o, blkid * ob.blksz, ds.block(o, blkid, snap))
        if free_from is not None:
            s.freeobjects(free_from, (dblock + 1) * DNODES_PER_BLOCK - free_from)
    s.end()


def churn(ds: Dataset, snap: int, fraction: float) -> dict[int, set[int]]:
    """What snapshot `snap` changes: rewrites, appends, truncations, deletes, creates."""
    rng, changed = ds.rng, dict[int, set[int]]()
    live = sorted(set(ds.objs) - {1})
    for o in rng.sample(live, max(1, int(len(live) * fraction))):
        ob, kind = ds.objs[o], rng.random()
        ob.gen += 1
        if kind < 0.05:  # deleted
            del ds.objs[o]
            changed[o] = set()
        elif kind < 0.15 and ob.blksz == BIG and ob.nblocks > 1:  # truncated
            ob.nblocks = rng.randint(1, ob.nblocks - 1)
            changed[o] = set()
        elif kind < 0.25 and ob.blksz == BIG and ob.nblocks < 16:  # appended to
            grown = rng.randint(ob.nblocks + 1, 16)
            changed[o] = set(range(ob.nblocks, grown))
            ob.nblocks = grown
        else:  # some blocks rewritten
            n = rng.randint(1, ob.nblocks)
            changed[o] = set(rng.sample(range(ob.nblocks), n))
    for _ in range(max(1, int(len(live) * fraction / 4))):  # created
        o = ds.create(rng.random() < 0.05)
        changed[o] = set(range(ds.objs[o].nblocks))
    return changed


def build(root: Path, full_mib: int, links: int, seed: int) -> None:
    root.mkdir(parents=True)
    ds = Dataset(random.Random(seed))
    size = 0
    while size < full_mib << 20:  # one big file in 20: most bytes big, most records small
        o = ds.create(ds.rng.random() < 0.05)
        size += ds.objs[o].blksz * ds.objs[o].nblocks
    name = DATASET.split("/")[-1]
    everything = {o: set(range(ob.nblocks)) for o, ob in ds.objs.items()}
    write_snapshot(ds, root / f"{name}@0.zfsfull", 0, everything)
    for snap in range(1, links + 1):
        changed = churn(ds, snap, 0.01)
        write_snapshot(ds, root / f"{name}@{snap - 1}-@{snap}.zfsinc", snap, changed)


def archive(scratch: Path, full_mib: int, links: int, seed: int) -> Path:
    """The archive of a full and `links` incrementals, built once per parameter set."""
    root = scratch / f"chain{links}-{full_mib}m-s{seed}"
    if not (root / "complete.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        build(root / "cold", full_mib, links, seed)
        (root / "complete.json").write_text(json.dumps({"full_mib": full_mib, "links": links}))
    return root


# -- the measurements ----------------------------------------------------------------------


def zverify(*args: str) -> list[str]:
    return [sys.executable, "-m", "zverify", *args]


def child_env() -> dict[str, str]:
    """This checkout's code, with its bytecode cached outside the tree: a user's installed
    zverify does not recompile its modules on every run (PYTHONDONTWRITEBYTECODE would)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(PYCACHE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(cmd: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS (KiB) of the largest process,
    stdout; exit 0 required."""
    rss_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"zv-bench-rss-{os.getpid()}"
    full = ["/usr/bin/time", "-o", str(rss_file), "-f", "%U %S %M", *cmd]
    env = child_env()
    start = time.perf_counter()
    done = subprocess.run(full, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    user, system, rss = rss_file.read_text().split()[-3:]
    rss_file.unlink()
    return wall, float(user) + float(system), int(rss), done.stdout


def count_records(path: Path) -> int:
    """Records in one of this script's streams (their payload rules only)."""
    n = 0
    with open(path, "rb") as f:
        while head := f.read(DRR):
            kind = struct.unpack_from("<I", head)[0]
            if kind == OBJECT:
                f.seek((struct.unpack_from("<I", head, 28)[0] + 7) // 8 * 8, 1)
            elif kind == WRITE:
                f.seek(struct.unpack_from("<Q", head, 32)[0], 1)
            n += 1
    return n


def route_files(cold: Path) -> list[Path]:
    """The route consolidate reads: every file of the single chain."""
    return sorted(p for p in cold.iterdir() if p.suffix in (".zfsfull", ".zfsinc"))


def commands(root: Path) -> dict[str, tuple[list[str], Path | None]]:
    cold, out = root / "cold", root / "out"
    name = DATASET.split("/")[-1]
    last = max(int(p.name.split("@")[-1].split(".")[0]) for p in route_files(cold))
    made = out / f"{name}@{last}.zfsfull"
    size = full_size(root)
    files = " ".join(shlex.quote(str(p)) for p in route_files(cold))
    q = shlex.quote(str(made))
    cat = f"cat {files} > /dev/null && head -c {size} /dev/zero > {q} && sync {q}"
    return {
        "consolidate": (zverify("cold", "consolidate", "-q", "--into", str(out), str(cold)), made),
        "cat": (["sh", "-c", cat], made),
        "check": (zverify("cold", "check", "-q", str(cold)), None),
        "digest": (zverify("cold", "digest", "-q", str(cold)), None),
    }


def full_size(root: Path) -> int:
    """The new full's size: from a first consolidate, kept in sizes.json."""
    known = root / "sizes.json"
    if known.exists():
        size: int = json.loads(known.read_text())["full"]
        return size
    out = root / "out"
    out.mkdir(exist_ok=True)
    cmd = zverify("cold", "consolidate", "--json", "--into", str(out), str(root / "cold"))
    stdout = timed(cmd)[-1]
    made = out / json.loads(stdout)["file"]
    size = made.stat().st_size
    clean(out)
    known.write_text(json.dumps({"full": size}))
    return size


def clean(out: Path) -> None:
    for p in out.iterdir():
        p.unlink()


def measure(root: Path, runs: int) -> dict[str, list[tuple[float, float, int]]]:
    cmds = commands(root)
    got: dict[str, list[tuple[float, float, int]]] = {k: [] for k in cmds}
    for rnd in range(runs + 1):  # round 0 warms the page cache
        for what, (cmd, made) in cmds.items():
            wall, cpu, rss, _ = timed(cmd)
            if made is not None:
                assert made.exists(), f"{what} did not write {made}"
                clean(made.parent)
            if rnd:
                got[what].append((wall, cpu, rss))
    return got


def profile(root: Path, top: int) -> str:
    """cProfile of one consolidate: the top functions by cumulative and by own time."""
    import io
    import pstats

    out, stats = root / "out", root / "consolidate.prof"
    cmd = [sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "zverify"]
    cmd += ["cold", "consolidate", "-q", "--into", str(out), str(root / "cold")]
    env = child_env()
    subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=True)
    clean(out)
    text = io.StringIO()
    for key in ("cumulative", "tottime"):
        pstats.Stats(str(stats), stream=text).strip_dirs().sort_stats(key).print_stats(top)
    return "\n".join(line for line in text.getvalue().splitlines() if line.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full-mib", type=int, default=128, help="size of the full of @0")
    ap.add_argument("--links", default="10,100", help="chains to build: incrementals after @0")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--scratch", type=Path, default=Path("/var/tmp/zverify-bench/consolidate"))
    ap.add_argument("--profile", action="store_true", help="cProfile one consolidate (first chain)")
    args = ap.parse_args()
    print("reproduce:", shlex.join(["nice", "-n", "19", "python3", *sys.argv]))
    rows = []
    for links in (int(x) for x in args.links.split(",")):
        root = archive(args.scratch, args.full_mib, links, args.seed)
        files = route_files(root / "cold")
        read, records = sum(p.stat().st_size for p in files), sum(map(count_records, files))
        moved = read + full_size(root)
        got = measure(root, args.runs)
        med = {k: statistics.median(w for w, _, _ in v) for k, v in got.items()}
        cpu = {k: statistics.median(c for _, c, _ in v) for k, v in got.items()}
        rss = {k: max(r for _, _, r in v) / 1024 for k, v in got.items()}
        rows.append((links, read, records, moved, med, cpu, rss))
    print(
        f"\n{'chain':>6} {'route MB':>9} {'records':>8} {'new full MB':>12} {'step':>12} "
        f"{'wall s':>7} {'CPU s':>7} {'MB/s':>6} {'peak RSS MiB':>13}"
    )
    for links, read, records, moved, med, cpu, rss in rows:
        for k in med:
            mbs = f"{moved / med[k] / 1e6:6.0f}" if k in ("consolidate", "cat") else f"{'':>6}"
            print(
                f"{links:>6} {read / 1e6:>9.1f} {records:>8} {(moved - read) / 1e6:>12.1f} "
                f"{k:>12} {med[k]:>7.2f} {cpu[k]:>7.2f} {mbs} {rss[k]:>13.1f}"
            )
    print(
        f"\n{'chain':>6} {'consolidate/cat throughput':>27} {'(CPU)':>6} {'µs/record':>10} "
        f"{'consolidate RSS MiB':>20} {'digest/check':>13} {'(CPU)':>6}"
    )
    for links, _, records, _, med, cpu, rss in rows:
        print(
            f"{links:>6} {med['cat'] / med['consolidate']:>27.2f} "
            f"{cpu['cat'] / cpu['consolidate']:>6.2f} "
            f"{med['consolidate'] / records * 1e6:>10.0f} {rss['consolidate']:>20.1f} "
            f"{med['digest'] / med['check']:>13.2f} {cpu['digest'] / cpu['check']:>6.2f}"
        )
    print("goals: throughput ratio >= 0.8; RSS <= 64 MiB on the 100-link chain")
    if args.profile:
        first = int(args.links.split(",")[0])
        print(f"\ncProfile of one consolidate of chain{first}:")
        print(profile(archive(args.scratch, args.full_mib, first, args.seed), 25))


if __name__ == "__main__":
    main()
