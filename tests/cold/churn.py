"""A seeded churn scenario for `cold consolidate`, built where ZFS is (run in the VM).

    python3 -m tests.cold.churn DATASET OUTDIR --seed S --links N

makes DATASET (it must not exist), then snapshots @0..@N+1 with churn between them that stresses
the chain merge: files created, deleted, rewritten, truncated and extended, holes punched
(fallocate PUNCH_HOLE, and zeros written over data, which compression turns into holes), object
numbers reused (many files deleted, the dataset unmounted and mounted, many created), recordsize
and dnodesize changed between snapshots, xattr=sa with big xattrs (spill blocks) set, replaced
and removed, small files (embedded with -e), directories, renames, hard links, symlinks, modes
and times.  Every choice comes from random.Random(seed), so a seed names one scenario (up to
ZFS's own allocation, which is deterministic for the same commands on a fresh dataset).

It writes, named as cold archives are (zverify/cold/names.py):

    OUTDIR/chain/NAME@0.zfsfull, NAME@A-@B.zfsinc, NAME@A-@B.zfsincstream   up to @N
    OUTDIR/full/NAME@N.zfsfull          a real `zfs send` full of @N
    OUTDIR/next/NAME@N-@N+1.zfsinc      the real incremental after @N
    OUTDIR/scenario.json                the snapshots' GUIDs, each file's command, the churn

Sends mix -c and -e per stream, -i files and -I packages (and -i over skipped snapshots);
-L is the same on every stream of a scenario (a route mixing large-block states is refused).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from zverify.cold.names import file_name

FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]


def zfs(*args: str) -> str:
    done = subprocess.run(["zfs", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"zfs {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def punch_hole(path: Path, offset: int, length: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        if _libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"fallocate punch-hole {path} at {offset}+{length}")
    finally:
        os.close(fd)


def pwrite(path: Path, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


@dataclass
class Churn:
    """The dataset under churn and the rng that decides everything."""

    dataset: str
    rng: random.Random
    large: bool  # -L on every send, and records > 128 KiB may exist
    mnt: Path = Path("/")
    files: list[str] = field(default_factory=list)  # relative paths of regular files
    dirs: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    serial: int = 0

    # -- content ------------------------------------------------------------------------
    def data(self, size: int) -> bytes:
        """Random, compressible or zero-laced bytes: each compresses (or not) differently."""
        kind = self.rng.choice(["random", "random", "text", "zeros-laced"])
        if kind == "random":
            return self.rng.randbytes(size)
        if kind == "text":
            word = self.rng.randbytes(self.rng.randint(1, 40)).hex().encode()
            return (word * (size // len(word) + 1))[:size]
        out = bytearray(size)
        for _ in range(max(1, size // 8192)):
            at = self.rng.randrange(max(1, size))
            chunk = self.rng.randbytes(min(size - at, self.rng.randint(1, 6000)))
            out[at : at + len(chunk)] = chunk
        return bytes(out)

    def size(self) -> int:
        sizes = [0, 1, 60, 100, 700, 3000, 20_000, 70_000, 200_000, 600_000]
        if self.large:
            sizes.append(1_500_000)
        return self.rng.choice(sizes)

    def pick(self) -> str | None:
        return self.rng.choice(self.files) if self.files else None

    def path(self, rel: str) -> Path:
        return self.mnt / rel

    # -- operations ---------------------------------------------------------------------
    def create(self) -> None:
        self.serial += 1
        where = self.rng.choice(["", "", *self.dirs])
        rel = f"{where}/f{self.serial}" if where else f"f{self.serial}"
        self.path(rel).write_bytes(self.data(self.size()))
        self.files.append(rel)
        if self.rng.random() < 0.3:
            self.xattr(rel)
        self.log.append(f"create {rel}")

    def delete(self) -> None:
        rel = self.pick()
        if rel is None:
            return
        self.path(rel).unlink()
        self.files.remove(rel)
        self.log.append(f"delete {rel}")

    def rewrite(self) -> None:
        rel = self.pick()
        if rel is None:
            return
        size = self.path(rel).stat().st_size
        at = self.rng.randrange(size + 1) if self.rng.random() < 0.8 else size + 50_000
        pwrite(self.path(rel), at, self.data(self.rng.choice([1, 500, 4096, 40_000, 150_000])))
        self.log.append(f"rewrite {rel} at {at}")

    def truncate(self) -> None:
        rel = self.pick()
        if rel is None:
            return
        size = self.path(rel).stat().st_size
        new = self.rng.choice(
            [0, size // 3, size // 2 + 1, size + 300_000, self.rng.randrange(size + 1)]
        )
        os.truncate(self.path(rel), new)
        self.log.append(f"truncate {rel} {size} -> {new}")

    def hole(self) -> None:
        rel = self.pick()
        if rel is None or self.path(rel).stat().st_size < 2:
            return
        size = self.path(rel).stat().st_size
        at = self.rng.randrange(size)
        length = self.rng.choice([1, 4096, 131_072, 300_000, size])
        if self.rng.random() < 0.5:
            punch_hole(self.path(rel), at, length)
            self.log.append(f"punch {rel} {at}+{length}")
        else:  # dd conv=notrunc if=/dev/zero: with compression on, whole zero records are holes
            pwrite(self.path(rel), at, bytes(min(length, size - at)))
            self.log.append(f"zeros {rel} {at}+{length}")

    def xattr(self, rel: str | None = None) -> None:
        rel = rel or self.pick()
        if rel is None:
            return
        p = self.path(rel)
        have = os.listxattr(p)
        if have and self.rng.random() < 0.3:
            os.removexattr(p, self.rng.choice(have))
            self.log.append(f"rmxattr {rel}")
            return
        # beyond the bonus buffer of any dnode size: a spill block (xattr=sa)
        size = self.rng.choice([10, 200, 1500, 3000, 6000, 20_000])
        name = f"user.z{self.rng.randrange(4)}"
        os.setxattr(p, name, self.data(size))
        self.log.append(f"setxattr {rel} {name} {size}")

    def meta(self) -> None:
        rel = self.pick()
        if rel is None:
            return
        p = self.path(rel)
        if self.rng.random() < 0.5:
            os.chmod(p, self.rng.choice([0o600, 0o644, 0o755, 0o4711]))
        else:
            t = self.rng.randrange(10**9, 2 * 10**9)
            os.utime(p, ns=(t * 10**9 + 7, t * 10**9 + 123))
        self.log.append(f"meta {rel}")

    def directory(self) -> None:
        roll = self.rng.random()
        if roll < 0.5 or not self.dirs:
            self.serial += 1
            rel = f"d{self.serial}"
            self.path(rel).mkdir()
            self.dirs.append(rel)
            self.log.append(f"mkdir {rel}")
        elif roll < 0.8 and self.files:
            rel, into = self.pick(), self.rng.choice(self.dirs)
            assert rel is not None
            new = f"{into}/{Path(rel).name}r{self.serial}"
            self.serial += 1
            self.path(rel).rename(self.path(new))
            self.files[self.files.index(rel)] = new
            self.log.append(f"rename {rel} {new}")
        else:
            self.serial += 1
            rel = self.pick()
            if rel is not None:
                link = f"l{self.serial}"
                if self.rng.random() < 0.5:
                    os.link(self.path(rel), self.path(link))
                    self.files.append(link)
                else:
                    os.symlink(rel, self.path(link))
                self.log.append(f"link {rel} {link}")

    def reuse_objects(self) -> None:
        """Delete most files, sync and remount, create as many: the freed object numbers are
        taken again (the receiver's reallocation rules)."""
        gone = self.rng.sample(self.files, k=len(self.files) * 3 // 4)
        for rel in gone:
            self.path(rel).unlink()
            self.files.remove(rel)
        subprocess.run(["sync"], check=True)
        zfs("unmount", self.dataset)
        zfs("mount", self.dataset)
        for _ in range(len(gone) + 2):
            self.create()
        self.log.append(f"reuse {len(gone)}")

    def props(self) -> None:
        records = ["4K", "16K", "32K", "128K"] + (["256K", "1M"] if self.large else [])
        zfs("set", f"recordsize={self.rng.choice(records)}", self.dataset)
        zfs("set", f"dnodesize={self.rng.choice(['legacy', 'auto', '2k', '4k'])}", self.dataset)
        zfs("set", f"compression={self.rng.choice(['lz4', 'zstd', 'gzip-1', 'lz4'])}", self.dataset)
        self.log.append("props")

    OPS = ("create", "create", "delete", "rewrite", "rewrite", "truncate", "hole", "hole",
           "xattr", "xattr", "meta", "directory", "props")  # fmt: skip

    def step(self, ops: int) -> None:
        if self.rng.random() < 0.2 and len(self.files) > 6:
            self.reuse_objects()
        for _ in range(ops):
            getattr(self, self.rng.choice(self.OPS))()


# -- sends -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    from_snap: str | None
    to_snap: str
    package: bool  # -I

    def flags(self, rng: random.Random, large: bool) -> list[str]:
        return [
            *(["-L"] if large else []),
            *(["-c"] if rng.random() < 0.5 else []),
            *(["-e"] if rng.random() < 0.5 else []),
        ]


def plan_links(rng: random.Random, last: int) -> list[Link]:
    """From @0 to @last: -i of one step, -I packages of 2..4, -i skipping a snapshot."""
    links, at = [Link(None, "0", False)], 0
    while at < last:
        roll, left = rng.random(), last - at
        step = 1 if roll < 0.55 or left == 1 else rng.randint(2, min(4, left))
        links.append(Link(str(at), str(at + step), package=step > 1 and roll < 0.85))
        at += step
    return links


def send(dataset: str, link: Link, flags: list[str], out: Path) -> str:
    incr = []
    if link.from_snap is not None:
        incr = ["-I" if link.package else "-i", f"@{link.from_snap}"]
    argv = ["zfs", "send", *flags, *incr, f"{dataset}@{link.to_snap}"]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        subprocess.run(argv, stdout=f, check=True)
    return " ".join(argv)


def build(dataset: str, outdir: Path, seed: int, links: int, ops: int = 6) -> dict:
    start = time.monotonic()
    rng = random.Random(seed)
    large = rng.random() < 0.5
    churn = Churn(dataset, rng, large)
    zfs("create", "-o", "xattr=sa", "-o", "dnodesize=auto", "-o", "compression=lz4",
        "-o", f"recordsize={'1M' if large else '128K'}", dataset)  # fmt: skip
    churn.mnt = Path(zfs("get", "-Hp", "-o", "value", "mountpoint", dataset).strip())
    if large:  # large blocks active from @0 on, so every -L stream says so
        churn.path("big").write_bytes(rng.randbytes(1_300_000))
        churn.files.append("big")
    for _ in range(8):
        churn.create()
    snaps = [str(i) for i in range(links + 2)]
    for i, snap in enumerate(snaps):
        if i:
            churn.step(ops)
        zfs("snapshot", f"{dataset}@{snap}")
    guids = {
        line.split("\t")[0].split("@")[1]: line.split("\t")[1]
        for line in zfs("list", "-Hp", "-t", "snapshot", "-o", "name,guid", dataset).splitlines()
    }
    target = str(links)
    files = []
    for link in plan_links(rng, links):
        name = file_name(dataset, link.to_snap, link.from_snap, link.package)
        cmd = send(dataset, link, link.flags(rng, large), outdir / "chain" / name)
        files.append({"file": f"chain/{name}", "command": cmd})
    extra = [
        (Link(None, target, False), "full"),
        (Link(target, snaps[-1], False), "next"),
    ]
    for link, where in extra:
        name = file_name(dataset, link.to_snap, link.from_snap, False)
        cmd = send(dataset, link, link.flags(rng, large), outdir / where / name)
        files.append({"file": f"{where}/{name}", "command": cmd})
    doc = {
        "dataset": dataset,
        "seed": seed,
        "links": links,
        "large": large,
        "target": target,
        "next": snaps[-1],
        "guids": guids,
        "files": files,
        "churn": churn.log,
        "seconds": round(time.monotonic() - start, 1),
    }
    (outdir / "scenario.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--links", type=int, default=4)
    ap.add_argument("--ops", type=int, default=6, help="operations between two snapshots")
    args = ap.parse_args()
    doc = build(args.dataset, args.outdir, args.seed, args.links, args.ops)
    print(json.dumps({k: doc[k] for k in ("dataset", "seed", "links", "large", "seconds")}))


if __name__ == "__main__":
    main()
