"""`zverify cold send` vs `zfs send | pv > FILE`, and `zverify cold check` vs `cat FILE`,
on the same dataset in the project's OpenZFS VM, in one run, as ratios.

Run by hand from the repository root (never collected by the test suite):

    python bench/cold_vs_peers.py [--size-mib 1024] [--repeat 2] [--s3]

Boots the VM (`python -m tools.zfsvm build` first), fills a dataset of pool `src` with
--size-mib of incompressible data and snapshots it, then alternates the peer and zverify
--repeat times each, keeping the best time of each; the archive lives on a second pool.
`pv` is used when the image has it, else `cat` (the output says which).  Times are taken
inside the guest.  Under TCG (no KVM here) every number is far below real hardware; only the
ratios mean something, and the target is >= 0.9x for both (validation rides along with the
write).

--s3 does the same into a bucket of versitygw run in the guest (tools/s3guest.py): `cold send`
to s3:// vs `zfs send | ` boto3's upload_fileobj from stdin (what `aws s3 cp - s3://...`
runs), and `cold check` of the bucket vs boto3's download_fileobj to /dev/null.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tools import s3guest as guest  # noqa: E402
from tools.zfsvm.vm import ZfsVM  # noqa: E402

# the peers of a bucket send and check: boto3's transfer manager, as `aws s3 cp` runs it
PEER_UPLOAD = (
    "import boto3, sys; boto3.client('s3').upload_fileobj(sys.stdin.buffer, *sys.argv[1:])"
)
PEER_DOWNLOAD = (
    "import boto3, sys; boto3.client('s3').download_fileobj(*sys.argv[1:], open('/dev/null', 'wb'))"
)


def timed(vm: ZfsVM, script: str, env: dict[str, str] | None = None) -> float:
    """Seconds the sh script took inside the guest; fails loudly if it failed."""
    wrapped = (
        f't0=$(date +%s%N); ( {script} ) >/dev/null; rc=$?; t1=$(date +%s%N); echo "$rc $((t1-t0))"'
    )
    out = vm.run(["sh", "-c", wrapped], timeout=3600, check=True, env=env).stdout.split()
    if out[0] != "0":
        raise SystemExit(f"failed (exit {out[0]}): {script}")
    return int(out[1]) / 1e9


def setup(vm: ZfsVM, size_mib: int) -> str:
    vm.run(
        ["zpool", "create", "-f", "-O", "compression=off", "src", vm.scratch_devices[0]], check=True
    )
    vm.run(
        ["zpool", "create", "-f", "-O", "mountpoint=/cold", "cold", vm.scratch_devices[1]],
        check=True,
    )
    vm.run(["zfs", "create", "src/data"], check=True)
    fill = f"head -c {size_mib}M /dev/urandom > /src/data/blob && zfs snapshot src/data@bench"
    vm.run(["sh", "-c", fill], timeout=3600, check=True)
    has_pv = vm.run(["sh", "-c", "command -v pv"]).returncode == 0
    return "pv -q" if has_pv else "cat"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--s3", action="store_true", help="into a bucket (versitygw in the guest)")
    args = ap.parse_args()
    vm = ZfsVM.boot(scratch_gib=max(4, 3 * args.size_mib // 1024 + 2))
    try:
        pipe = setup(vm, args.size_mib)
        zverify = shlex.join([*vm.python, "-m", "zverify"])
        if args.s3:
            return bucket_run(vm, zverify, args.repeat)
        times: dict[str, list[float]] = {
            k: [] for k in ("peer send", "cold send", "cat", "cold check")
        }
        for _ in range(args.repeat):
            vm.run(["sh", "-c", "rm -rf /cold/p /cold/z && mkdir /cold/p /cold/z"], check=True)
            times["peer send"].append(
                timed(vm, f"zfs send src/data@bench | {pipe} > /cold/p/full.zfs && sync")
            )
            times["cold send"].append(timed(vm, f"{zverify} cold send -q src/data /cold/z && sync"))
            stream = "/cold/z/src%2Fdata@bench.zfsfull"
            times["cat"].append(timed(vm, f"cat {shlex.quote(stream)} > /dev/null"))
            times["cold check"].append(timed(vm, f"{zverify} cold check -q /cold/z"))
            vm.run(["zfs", "destroy", "src/data#zverify-bench"])
        size = int(vm.run(["stat", "-c", "%s", stream], check=True).stdout)
        best = {k: min(v) for k, v in times.items()}
        mib, peer = size / 2**20, pipe.split()[0]
        print(f"zverify cold vs peers: {mib:.0f} MiB stream, {vm.accel}, best of {args.repeat}")
        for name, t in best.items():
            print(f"  {name:<11} {t:8.2f} s  {size / t / 1e6:8.1f} MB/s")
        send_ratio = best["peer send"] / best["cold send"]
        check_ratio = best["cat"] / best["cold check"]
        print(f"  cold send / `zfs send | {peer} > FILE`: {send_ratio:.2f}x")
        print(f"  cold check / `cat FILE > /dev/null`: {check_ratio:.2f}x")
    finally:
        vm.shutdown()
    return 0


def bucket_run(vm: ZfsVM, zverify: str, repeat: int) -> int:
    env = guest.start(vm)
    python = shlex.join(vm.python)
    times: dict[str, list[float]] = {
        k: [] for k in ("peer upload", "cold send", "peer get", "cold check")
    }
    for n in range(repeat):
        name = f"bench{n}"
        guest.make_bucket(vm, env, name)
        up = f"{python} -c {shlex.quote(PEER_UPLOAD)} {name} p/full.zfs"
        times["peer upload"].append(timed(vm, f"zfs send src/data@bench | {up}", env))
        times["cold send"].append(timed(vm, f"{zverify} cold send -q src/data s3://{name}/z", env))
        get = f"{python} -c {shlex.quote(PEER_DOWNLOAD)} {name} p/full.zfs"
        times["peer get"].append(timed(vm, get, env))
        times["cold check"].append(timed(vm, f"{zverify} cold check -q s3://{name}/z", env))
        vm.run(["zfs", "destroy", "src/data#zverify-bench"])
        stream = f"{guest.BACKEND}/{name}/z/src%2Fdata@bench.zfsfull"
        size = int(vm.run(["stat", "-c", "%s", stream], check=True).stdout)
        # the guest's root file system holds the backend: two copies per round fill it
        vm.run(["rm", "-rf", f"{guest.BACKEND}/{name}/p", f"{guest.BACKEND}/{name}/z"])
    best = {k: min(v) for k, v in times.items()}
    print(f"zverify cold on a bucket vs boto3: {size / 2**20:.0f} MiB stream, {vm.accel}, "
          f"versitygw in the guest, best of {repeat}")  # fmt: skip
    for name, t in best.items():
        print(f"  {name:<11} {t:8.2f} s  {size / t / 1e6:8.1f} MB/s")
    print(f"  cold send / `zfs send | aws s3 cp -`: {best['peer upload'] / best['cold send']:.2f}x")
    print(f"  cold check / a download: {best['peer get'] / best['cold check']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
