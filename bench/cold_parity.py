"""Parity of cold archives: what `--parity` costs next to the send itself, in one run, as ratios.

Run by hand from the repository root (never collected by the test suite):

    python bench/cold_parity.py [--size-mib 2048] [--percent 10] [--no-debian]

A valid full stream of --size-mib is synthesized (bench/stream_vs_peers.py's generator), then:

  send      `zverify cold send --parity 0` of it, from a stand-in `zfs` that is `cat FILE`
            (this host has no ZFS; the VM runs under TCG): zverify's whole cost of archiving a
            stream, validation, write, fsync and SHA-256 read-back included, with the fastest
            producer there is.  The archived file must be `cmp`-identical to the stream.  Every
            ratio below is to this time.  (tools/zfsstandin.py's own `zfs` reads its fixture
            into memory, so only its libzfs_core stub is used here, for the bookmark.)
  send+par  `zverify cold send --parity PCT` into a second archive: the send and its parity in
            one command, as users run it.
  parity    `zverify cold parity --parity PCT` (par2cmdline-turbo; the command reads the
            archive completely first), the bare `par2 create` of the same program, and
            Debian's par2cmdline 0.8.1 on the same file (`--no-debian` skips it: ~30 s/GiB).
  check     `zverify cold check` of the intact archive (reference), then of the damaged one
            (stream scan, parity read, par2 verify), which must exit 1 and call it repairable.
  repair    `zverify cold repair` after 3 zeroed 64 KiB ranges and 20 flipped bytes; the
            repaired file must be `cmp`-identical to the stream that was sent, the original be
            kept as NAME.damaged, and `zverify cold check` exit 0 again.

Every time is one run, the page cache hot (a warm-up read first), on an otherwise idle machine;
the space overhead is the parity files' bytes over the stream's.  Results are printed and
written to bench/results/cold-parity.json.  Temporary files (~3x the stream) go under /tmp
and are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stream_vs_peers import synthesize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tools.zfsstandin import ZfsStandIn  # noqa: E402
from zverify.par2 import tool  # noqa: E402

GUID = 0x1234_5678_9ABC_DEF0  # the synthesized stream's toguid
DATASET = "bench/ds"
FAST_ZFS = """#!/bin/sh
case "$1" in
version) echo zfs-bench-standin ;;
list)
    case " $* " in
    *" -t "*) printf '{dataset}@synthetic\\t{guid}\\t10\\n' ;;
    *) echo {dataset} ;;
    esac ;;
send) exec cat '{stream}' ;;
*) echo "bench zfs: unexpected $*" >&2; exit 1 ;;
esac
"""
SEND_MEANS = (
    "send = `zverify cold send --parity 0 DATASET DIR` from a stand-in `zfs send` that is "
    "`cat FILE` (no ZFS on this host): zverify's own cost of archiving the stream "
    "(validation, write, fsync, SHA-256 read-back), not ZFS's cost of producing it"
)


def timed(argv: list[str], env: dict[str, str] | None = None, expect: int = 0) -> float:
    return run_timed(argv, env, expect)[0]


def run_timed(
    argv: list[str], env: dict[str, str] | None = None, expect: int = 0
) -> tuple[float, str]:
    """Seconds the command took and its stdout; exits when its status is not `expect`."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd="/")
    took = time.perf_counter() - start
    if done.returncode != expect:
        sys.exit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return took, done.stdout


def same_bytes(a: Path, b: Path, what: str) -> None:
    done = subprocess.run(["cmp", str(a), str(b)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{what}: {a} and {b} differ: {done.stdout.strip()} {done.stderr.strip()}")


def parity_size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.par2"))


def damage(path: Path) -> None:
    size = path.stat().st_size
    rng = random.Random(14)
    with open(path, "r+b") as f:
        for at in (size // 5, size // 2, size - size // 7):
            f.seek(at)
            f.write(bytes(64 * 1024))
        for at in sorted(rng.randrange(1000, size) for _ in range(20)):
            f.seek(at)
            byte = f.read(1)[0]
            f.seek(at)
            f.write(bytes([byte ^ 0x20]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=2048)
    parser.add_argument("--percent", type=int, default=10)
    parser.add_argument("--no-debian", action="store_true", help="skip Debian's par2cmdline")
    args = parser.parse_args()
    zverify = shutil.which("zverify")
    if zverify is None:
        sys.exit("no `zverify` on PATH: pip install -e .")
    work = Path(tempfile.mkdtemp(prefix="zv-parity-bench-", dir="/tmp"))
    try:
        results = run(work, zverify, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = REPO / "bench" / "results" / "cold-parity.json"
    out.parent.mkdir(parents=True, exist_ok=True)  # not in a fresh clone: results are ignored
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {out.relative_to(REPO)}")


def run(work: Path, zverify: str, args: argparse.Namespace) -> dict[str, object]:
    load = os.getloadavg()[0]  # before the run: its own work would count otherwise
    stream = work / "stream"
    synthesize(stream, args.size_mib << 20)
    size = stream.stat().st_size
    standin = ZfsStandIn(work / "standin")  # its libzfs_core stub makes the bookmark
    fast = FAST_ZFS.format(dataset=DATASET, guid=GUID, stream=stream)
    (standin.bin / "zfs").write_text(fast)
    env = standin.env()
    times: dict[str, float] = {}
    timed(["sh", "-c", f"cat '{stream}' > /dev/null"])  # warm-up: the page cache hot
    timed([zverify, "--version"])  # and zverify's modules read once
    archive = work / "archive"
    archive.mkdir()
    times["send"] = timed(
        [zverify, "cold", "send", "-q", "--parity", "0", DATASET, str(archive)], env
    )
    (sent,) = [p for p in archive.iterdir() if p.suffix == ".zfsfull"]
    same_bytes(stream, sent, "the archived stream is not the stream that was sent")
    times["cold check (intact)"] = timed([zverify, "cold", "check", "-q", str(archive)])
    pct = str(args.percent)
    both = work / "archive-send-parity"
    both.mkdir()
    times[f"cold send --parity {pct}"] = timed(
        [zverify, "cold", "send", "-q", "--parity", pct, DATASET, str(both)], env
    )
    send_parity_bytes = parity_size(both)
    shutil.rmtree(both)  # its 2nd copy of the stream would only crowd the page cache
    times["cold parity (turbo)"] = timed(
        [zverify, "cold", "parity", "-q", "--parity", pct, str(archive)]
    )
    parity_bytes = parity_size(archive)
    if send_parity_bytes != parity_bytes:
        print(f"note: send --parity made {send_parity_bytes:,} bytes, cold parity {parity_bytes:,}")
    bare = work / "bare"
    bare.mkdir()
    turbo = tool.executable()
    create = ["create", "-q", "-q", "-n1", f"-r{pct}", "-B", str(archive)]
    times["par2 create (turbo)"] = timed([turbo, *create, str(bare / "s.par2"), str(sent)])
    debian_version = ""
    if args.no_debian:
        pass
    elif not os.access("/usr/bin/par2", os.X_OK):
        print("no /usr/bin/par2: `apt-get install -y par2` for Debian's par2cmdline")
    else:
        found = subprocess.run(["/usr/bin/par2", "-V"], capture_output=True, text=True)
        debian_version = (found.stdout.strip().splitlines() or [""])[0]
        debian = work / "debian"
        debian.mkdir()
        argv = ["/usr/bin/par2", *create, str(debian / "s.par2"), str(sent)]
        times[f"par2 create (Debian {debian_version.split()[-1]})"] = timed(argv)
        shutil.rmtree(debian)
    shutil.rmtree(bare)
    damage(sent)
    argv = [zverify, "cold", "check", "--json", str(archive)]
    times["cold check (damaged)"], out = run_timed(argv, expect=1)
    verdict = json.loads(out)["files"][0]["parity"]["repair"]
    if verdict["status"] != "repairable":
        sys.exit(f"`cold check` of the damaged archive: {verdict}, not repairable")
    times["cold repair"] = timed([zverify, "cold", "repair", "-q", str(archive)])
    same_bytes(stream, sent, "the repaired stream is not the stream that was sent")
    if not sent.with_name(sent.name + ".damaged").is_file():
        sys.exit("`cold repair` kept no NAME.damaged")
    times["cold check (repaired)"] = timed([zverify, "cold", "check", "-q", str(archive)])
    result = report(size, parity_bytes, times, turbo, load)
    extra = times[f"cold send --parity {pct}"] - times["send"]
    print(
        f"--parity {pct} adds {extra:.2f} s to the send ({extra / times['send']:.2f}x the send); "
        f"its parity: {send_parity_bytes:,} bytes"
    )
    damaged, blocks = verdict["damaged_blocks"], verdict["blocks"]
    said = (
        f"damage: 3 x 64 KiB zeroed + 20 flipped bytes = {damaged} of {blocks} blocks "
        f"({verdict['recovery_blocks']} recovery blocks); repaired file cmp-identical to the "
        "stream sent, original kept as NAME.damaged, `cold check` exit 0"
    )
    print(textwrap.fill(said, 100))
    result["par2_debian"] = debian_version
    result["damage"] = verdict
    result["send_parity_bytes"] = send_parity_bytes
    return result


def report(
    size: int, parity_bytes: int, times: dict[str, float], turbo: str, load: float
) -> dict[str, object]:
    send = times["send"]
    par2 = tool.version() or turbo
    print(f"stream {size / 2**20:,.0f} MiB; par2: {par2}; load before the run {load:.2f}")
    print(textwrap.fill(SEND_MEANS, 100))
    print(f"{'step':<28} {'seconds':>8} {'MB/s':>8} {'x send':>7}")
    rows = {}
    for step, took in times.items():
        rate = size / took / 1e6
        rows[step] = {
            "seconds": round(took, 2),
            "mb_s": round(rate),
            "ratio_to_send": round(took / send, 2),
        }
        print(f"{step:<28} {took:8.2f} {rate:8.0f} {took / send:6.2f}x")
    overhead = 100 * parity_bytes / size
    print(
        f"space: {parity_bytes:,} bytes of parity for {size:,} bytes of stream = {overhead:.2f} %"
    )
    return {
        "stream_bytes": size,
        "parity_bytes": parity_bytes,
        "overhead_percent": round(overhead, 2),
        "par2": tool.version(),
        "cpus": os.cpu_count(),
        "load_average_1m_before": round(load, 2),
        "send_means": SEND_MEANS,
        "steps": rows,
    }


if __name__ == "__main__":
    main()
