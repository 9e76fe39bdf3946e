"""Throughput of `zverify stream verify` against `cat FILE > /dev/null` and peers.

Run by hand (never collected by the test suite):

    python bench/stream_vs_peers.py [--size-gib 2] [--stream FILE] [--runs 7]

Without --stream, a multi-GiB stream of valid records (correct per-record
checksums, 128 KiB WRITE payloads) is synthesized into a temporary file and
the output says so.  Every tool reads the same file after a warm-up read (hot
page cache), in interleaved rounds: each round runs every tool once, in a
rotated order, so that a change in the machine's load hits all of them alike.
The table gives the median and best seconds, GB/s and the ratio of cat's
median to the tool's (the target of issue 48: the installed command >= 0.9x
cat on a 2 GiB stream), with the load average before and after.  Peers:
`b3sum` and `xxhsum -H2` (XXH128) of the same file, `zstream dump` where
installed (not a validator: it exits 0 on checksum errors).  Peak RSS of the
verifier is measured at two stream sizes to show that memory does not grow
with the stream.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run from a checkout: measure this tree's zverify, not an installed copy.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import installed_zverify

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from zverify import _zvcore  # noqa: E402

DRR = 312
MAGIC = 0x2F5BACBAC
FEATURES = (1 << 2) | (1 << 16) | (1 << 17) | (1 << 19)  # SA_SPILL, EMBED_DATA, LZ4, LARGE_BLOCKS


class _Writer:
    """Appends records with the running fletcher-4 the kernel would write."""

    def __init__(self, out: object) -> None:
        self.out = out
        self.state = (0, 0, 0, 0)

    def record(self, head: bytes, payload: bytes = b"", begin: bool = False) -> None:
        head = head.ljust(280 if not begin else DRR, b"\0")
        if begin:
            self.state = _zvcore.fletcher4(head)
            self.out.write(head)  # type: ignore[attr-defined]
        else:
            self.state = _zvcore.fletcher4(head, state=self.state)
            trailer = struct.pack("<4Q", *self.state)
            self.state = _zvcore.fletcher4(trailer, state=self.state)
            self.out.write(head + trailer)  # type: ignore[attr-defined]
        if payload:
            self.state = _zvcore.fletcher4(payload, state=self.state)
            self.out.write(payload)  # type: ignore[attr-defined]


def synthesize(path: Path, size: int, block: int = 128 << 10) -> None:
    """Write a valid full stream of about `size` bytes: one file object of `block`-sized WRITEs."""
    toguid = 0x1234_5678_9ABC_DEF0
    payload = os.urandom(block)
    with open(path, "wb", buffering=8 << 20) as out:
        w = _Writer(out)
        name = b"bench/ds@synthetic"
        begin = (
            struct.pack(
                "<IIQQQIIQQ", 0, 0, MAGIC, 1 | (FEATURES << 2), 1_700_000_000, 2, 0xC, toguid, 0
            )
            + name
        )
        w.record(begin, begin=True)
        # object 1, the master node (a full stream without it is not restorable), then the file
        w.record(struct.pack("<IIQIIIIBBBBIQ", 1, 0, 1, 21, 0, 512, 0, 7, 15, 1, 0, 0, toguid))
        w.record(struct.pack("<IIQIIIIBBBBIQ", 1, 0, 2, 19, 44, block, 0, 7, 15, 1, 0, 0, toguid))
        nblocks = max(1, size // (block + DRR))
        for i in range(nblocks):
            head = struct.pack("<IIQIIQQQBBB5x", 3, 0, 2, 19, 0, i * block, block, toguid, 7, 0, 0)
            w.record(head, payload)
        end_cksum = w.state
        w.record(struct.pack("<II4QQ", 5, 0, *end_cksum, toguid))


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    secs = time.perf_counter() - start
    if done.returncode != 0:  # a number for a run that failed would be a lie
        sys.exit(f"{' '.join(argv)}: exit {done.returncode}")
    return secs


def _in_process(path: Path) -> float:
    """The library call alone: the CLI's interpreter start-up and imports excluded."""
    from zverify.sendstream.validate import verify_stream

    start = time.perf_counter()
    report = verify_stream(path)
    secs = time.perf_counter() - start
    assert report.valid
    return secs


IN_PROCESS = "verify_stream() in-process"


def rounds(path: Path, runs: int) -> tuple[dict[str, list[float]], list[float]]:
    """{tool: [seconds of each round]} for every tool and the in-process call, interleaved,
    and the 1-minute load average before the first round and after each."""
    tools = _tools(path)
    names = [*tools, IN_PROCESS]
    times: dict[str, list[float]] = {name: [] for name in names}
    load = [os.getloadavg()[0]]
    for r in range(runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            secs = _in_process(path) if name == IN_PROCESS else _timed(tools[name])
            times[name].append(secs)
        load.append(os.getloadavg()[0])
    return times, load


def _peak_rss_kib(argv: list[str]) -> int | None:
    gnu_time = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    if not gnu_time:
        return None
    out = subprocess.run([gnu_time, "-f", "%M", *argv], capture_output=True, text=True, cwd=REPO)
    try:
        return int(out.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


ZVERIFY = Path("zverify")  # set in main()


def _tools(path: Path) -> dict[str, list[str]]:
    tools = {
        CAT: ["sh", "-c", 'cat "$0" > /dev/null', str(path)],
        # the installed console script (bench/installed.py): the whole command, as users run it
        COMMAND: [str(ZVERIFY), "stream", "verify", "-q", str(path)],
    }
    for name, argv in (("b3sum", ["b3sum"]), ("xxhsum -H2", ["xxhsum", "-H2"])):
        if shutil.which(argv[0]):
            tools[name] = [*argv, str(path)]
    zstream = shutil.which("zstream") or (
        "/usr/sbin/zstream" if Path("/usr/sbin/zstream").exists() else None
    )
    if zstream:
        tools["zstream dump"] = [zstream, "dump", str(path)]
    return tools


CAT = "cat > /dev/null"
COMMAND = "zverify stream verify"


def table(times: dict[str, list[float]], size: int) -> str:
    base = statistics.median(times[CAT])
    head = f"{'tool':<28}{'median s':>9}{'best s':>8}{'GB/s':>7}{'vs cat':>8}"
    lines = [head]
    for name, secs in times.items():
        med = statistics.median(secs)
        lines.append(
            f"{name:<28}{med:>9.3f}{min(secs):>8.3f}{size / med / 1e9:>7.2f}{base / med:>7.2f}x"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--stream", type=Path, help="an existing stream file (default: synthesize)")
    ap.add_argument("--size-gib", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=7, help="interleaved rounds (>= 5)")
    args = ap.parse_args()
    if args.runs < 5:
        ap.error("--runs: a median needs at least 5 rounds")
    global ZVERIFY
    ZVERIFY = installed_zverify(Path("/var/tmp/zverify-bench"))
    tmp = None
    path = args.stream
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="zv-bench-")
        path = Path(tmp.name) / "synthetic.zstream"
        print(f"synthesizing a {args.size_gib:g} GiB stream (valid records, 128 KiB WRITEs) ...")
        synthesize(path, int(args.size_gib * (1 << 30)))
        small = Path(tmp.name) / "small.zstream"
        synthesize(small, 256 << 20)
    size = path.stat().st_size
    print(f"stream: {path} ({size / 1e9:.2f} GB){' [synthesized]' if tmp else ''}")
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the cache
    times, load = rounds(path, args.runs)
    print(f"{args.runs} interleaved rounds, hot cache, {os.cpu_count()} CPUs")
    print(table(times, size))
    ratio = statistics.median(times[CAT]) / statistics.median(times[COMMAND])
    verdict = "met" if ratio >= 0.9 else "NOT met"
    print(f"command vs cat (medians): {ratio:.2f}x, target >= 0.90x: {verdict}")
    print("load average (1 min) before and after each round: " + " ".join(f"{x:.2f}" for x in load))
    verify = _tools(path)[COMMAND]
    big_rss = _peak_rss_kib(verify)
    if tmp:
        small_rss = _peak_rss_kib([*verify[:-1], str(small)])
        print(
            f"peak RSS of verify: {small_rss} KiB at 0.27 GB, {big_rss} KiB at {size / 1e9:.2f} GB"
        )
    else:
        print(f"peak RSS of verify: {big_rss} KiB")
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB)")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
