"""The upload half of `zverify cold send` into a bucket vs `aws s3 cp -` (boto3's transfer
manager reading stdin), on the same real S3 server (versitygw on 127.0.0.1, built by
scripts/versitygw.sh), on the host: no OpenZFS needed.

Run by hand (never collected by the test suite):

    python bench/cold_s3_send.py [--size-mib 256] [--repeat 3] [--profile]

A valid send stream of SIZE MiB is synthesized once (bench/stream_vs_peers.py) and piped by
`cat` into each side, alternately, REPEAT times; the best time of each is printed, with the
ratio.  The zverify side is what `cold send` does after `zfs send`: the C scanner validates
the stream and relays it into the bucket store's writer (s3io.Upload), which then proves the
stored object and yields the sidecar's digests.  The peer is
`boto3.client('s3').upload_fileobj(sys.stdin.buffer, ...)`, which is what `aws s3 cp -` runs.
Each side's CPU time (user+sys, from wait4) is printed next to its wall time, and the
server's, so where the time goes is visible: client hashing, server hashing, or waiting.

--profile also prints single-thread rates of the hashes in question on this host.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from stream_vs_peers import synthesize  # noqa: E402

from tools.s3server import Versitygw, binary  # noqa: E402

PEER = "import boto3, sys; boto3.client('s3').upload_fileobj(sys.stdin.buffer, *sys.argv[1:])"
# what cold send runs once `zfs send` is started: scanner -> writer -> proofs -> digests
ZVERIFY = """
import sys
from zverify.cold.store.s3 import S3Store
from zverify.sendstream.validate import verify_stream
w = S3Store(sys.argv[1]).writer(sys.argv[2])
report = verify_stream(0, relay_to=w.fd, decompress=False)
assert report.valid and report.relayed == report.size, report.problems
w.sync()
assert w.stored_size() == report.size
w.commit()
w.sidecar_digests()
"""


def timed(argv: list[str], stream: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the uploading process) of `cat STREAM | argv`."""
    with stream.open("rb") as source:
        start = time.monotonic()
        cat = subprocess.Popen(["cat"], stdin=source, stdout=subprocess.PIPE)
        assert cat.stdout is not None
        proc = subprocess.Popen(argv, env=env, stdin=cat.stdout, stderr=subprocess.PIPE)
        cat.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        cat.wait()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:3]} exit {proc.returncode}: {err[-800:]}")
    return wall, usage.ru_utime + usage.ru_stime


def server_cpu(pid: int) -> float:
    """CPU seconds the server process has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rates() -> None:
    """Single-thread hash rates on this host, over 64 MiB."""
    import xxhash

    data = os.urandom(64 << 20)
    for name, fn in [
        ("sha256", lambda: hashlib.sha256(data).digest()),
        ("crc32 (zlib)", lambda: zlib.crc32(data)),
        ("md5", lambda: hashlib.md5(data).digest()),
        ("xxh3-128", lambda: xxhash.xxh3_128(data).digest()),
    ]:
        start = time.perf_counter()
        fn()
        print(f"  {name:<13} {len(data) / (time.perf_counter() - start) / 1e6:7.0f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print hash rates too")
    args = parser.parse_args()
    if args.profile:
        print("hash rates, one thread:")
        rates()
    exe, where = binary()
    if exe is None:
        raise SystemExit(f"versitygw is not built ({where}): bash scripts/versitygw.sh")
    with tempfile.TemporaryDirectory(prefix="zvbench-s3send-") as scratch:
        stream = Path(scratch) / "stream"
        synthesize(stream, args.size_mib << 20)
        with Versitygw(exe, Path(scratch) / "s3") as server:
            run(server, stream, args.repeat)


def run(server: Versitygw, stream: Path, repeat: int) -> None:
    env = {**os.environ, **server.env()}
    client = server.client()
    assert server._proc is not None
    pid = server._proc.pid
    sides = {
        "peer": lambda n: [sys.executable, "-c", PEER, f"bench{n}", "p/stream"],
        "zverify": lambda n: [sys.executable, "-c", ZVERIFY, f"s3://bench{n}/z", "stream"],
    }
    best: dict[str, tuple[float, float, float]] = {}
    for n in range(repeat):
        client.create_bucket(Bucket=f"bench{n}")
        for side, argv in sides.items():
            before = server_cpu(pid)
            wall, cpu = timed(argv(n), stream, env)
            served = server_cpu(pid) - before
            if side not in best or wall < best[side][0]:
                best[side] = (wall, cpu, served)
    size = stream.stat().st_size
    load = os.getloadavg()[0]
    print(f"upload of a {size / 2**20:.0f} MiB stream to versitygw on 127.0.0.1, best of "
          f"{repeat} (load {load:.2f}, {os.cpu_count()} CPUs):")  # fmt: skip
    for side, (wall, cpu, served) in best.items():
        print(f"  {side:<8} {wall:6.2f} s {size / wall / 1e6:6.0f} MB/s  client CPU {cpu:5.2f} s"
              f"  server CPU {served:5.2f} s")  # fmt: skip
    print(f"  zverify / peer rate: {best['peer'][0] / best['zverify'][0]:.2f}x")


if __name__ == "__main__":
    main()
