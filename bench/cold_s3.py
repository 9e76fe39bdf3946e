"""`zverify cold` on an s3:// archive against rclone, on the same real S3 server (versitygw
on 127.0.0.1, built by scripts/versitygw.sh).

Run by hand (never collected by the test suite):

    python bench/cold_s3.py [--size-mib 512] [--objects 10000] [--repeat 3]

1. Full check of one stream object (synthesized: valid records, 128 KiB WRITEs) against
   `rclone cat` of it to /dev/null, the download floor: every byte through the scanner vs
   every byte merely fetched.
2. `cold check --depth sample` of that object at 1% and 10%, against the full check.
3. `cold check --depth metadata` of OBJECTS small streams, each with its sidecar, against
   `rclone lsjson -R --hash` of the same prefix (the listing a peer's "check" starts from).
   Goal: under 60 s for 10,000 objects.

Both run in the same call, best of REPEAT, and are printed as seconds and ratios.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from stream_vs_peers import synthesize  # noqa: E402

from tools.s3server import Versitygw, binary  # noqa: E402


def best(argv: list[str], env: dict[str, str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.monotonic()
        r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.monotonic() - start)
        if r.returncode not in (0, 1):
            raise SystemExit(f"{argv[:4]} exit {r.returncode}: {r.stderr.decode()[-500:]}")
    return min(times)


def rclone_env(env: dict[str, str]) -> dict[str, str]:
    """rclone's remote `s3:` configured from the environment (no config file).  rclone's SDK
    refuses AWS_CA_BUNDLE with its own transport, and plain http needs none."""
    env = {k: v for k, v in env.items() if k != "AWS_CA_BUNDLE"}
    return env | {
        "RCLONE_CONFIG_S3_TYPE": "s3",
        "RCLONE_CONFIG_S3_PROVIDER": "Other",
        "RCLONE_CONFIG_S3_ENDPOINT": env["AWS_ENDPOINT_URL"],
        "RCLONE_CONFIG_S3_ACCESS_KEY_ID": env["AWS_ACCESS_KEY_ID"],
        "RCLONE_CONFIG_S3_SECRET_ACCESS_KEY": env["AWS_SECRET_ACCESS_KEY"],
    }


def small_archive(client, bucket: str, count: int, stream: bytes) -> None:
    """count copies of one small stream, each with the sidecar `cold send` would write."""
    sidecar = json.dumps({"kind": "full", "bytes": len(stream)}).encode()

    def put(i: int) -> None:
        key = f"meta/set{i:05d}@s1.zfsfull"
        client.put_object(Bucket=bucket, Key=key, Body=stream)
        client.put_object(Bucket=bucket, Key=key + ".json", Body=sidecar)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, range(count)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    exe, where = binary()
    if exe is None:
        raise SystemExit(f"versitygw is not built ({where}): bash scripts/versitygw.sh")
    with tempfile.TemporaryDirectory(prefix="zvbench-s3-") as scratch:
        server = Versitygw(exe, Path(scratch) / "s3")
        server.start()
        try:
            run(server, Path(scratch), args)
        finally:
            server.stop()


def run(server: Versitygw, scratch: Path, args: argparse.Namespace) -> None:
    env = {**os.environ, **server.env()}
    client = server.client()
    bucket = "zvbench"
    client.create_bucket(Bucket=bucket)
    big = scratch / "big.zstream"
    synthesize(big, args.size_mib << 20)
    client.upload_file(str(big), bucket, "big/set@s1.zfsfull")
    size = big.stat().st_size
    sidecar = json.dumps({"kind": "full", "bytes": size}).encode()  # sample depth wants one
    client.put_object(Bucket=bucket, Key="big/set@s1.zfsfull.json", Body=sidecar)
    big.unlink()
    zv = [sys.executable, "-m", "zverify", "cold"]
    full = best([*zv, "check", "-q", f"s3://{bucket}/big"], env, args.repeat)
    cat = best(["rclone", "cat", f"s3:{bucket}/big/set@s1.zfsfull"], rclone_env(env), args.repeat)
    print(f"full check of {size / 2**20:.0f} MiB: zverify {full:.2f} s "
          f"({size / full / 1e6:.0f} MB/s), rclone cat {cat:.2f} s ({size / cat / 1e6:.0f} MB/s), "
          f"ratio {full / cat:.2f}")  # fmt: skip
    for pct in ("1", "10"):
        argv = [*zv, "check", "-q", "--depth", "sample", "--sample", pct, f"s3://{bucket}/big"]
        took = best(argv, env, args.repeat)
        print(f"sample {pct}% of it: zverify {took:.2f} s, {took / full:.2f} of the full check")
    stream = tiny_stream()
    start = time.monotonic()
    small_archive(client, bucket, args.objects, stream)
    print(f"uploaded {args.objects} objects and sidecars in {time.monotonic() - start:.0f} s")
    meta = best(
        [*zv, "check", "-q", "--depth", "metadata", f"s3://{bucket}/meta"], env, args.repeat
    )
    ls = best(
        ["rclone", "lsjson", "-R", "--hash", f"s3:{bucket}/meta"], rclone_env(env), args.repeat
    )
    print(f"metadata check of {args.objects} objects: zverify {meta:.1f} s, rclone lsjson --hash "
          f"{ls:.1f} s, ratio {meta / ls:.2f} (goal: < 60 s)")  # fmt: skip


def tiny_stream() -> bytes:
    """1 KiB: at depth metadata no byte of an object is read, so its size is what counts."""
    return hashlib.sha256(b"zverify").digest() * 32


if __name__ == "__main__":
    main()
