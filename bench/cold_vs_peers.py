"""`zverify cold send` vs `zfs send | pv > FILE`, and `zverify cold check` vs `cat FILE`,
on the same dataset in the project's OpenZFS VM, in one run, as ratios.

Run by hand from the repository root (never collected by the test suite):

    python bench/cold_vs_peers.py [--size-mib 1024] [--repeat 2]

Boots the VM (`python -m tests.zfsvm build` first), fills a dataset of pool `src` with
--size-mib of incompressible data and snapshots it, then alternates the peer and zverify
--repeat times each, keeping the best time of each; the archive lives on a second pool.
`pv` is used when the image has it, else `cat` (the output says which).  Times are taken
inside the guest.  Under TCG (no KVM here) every number is far below real hardware; only the
ratios mean something, and the target is >= 0.9x for both (validation rides along with the
write).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.zfsvm.vm import ZfsVM  # noqa: E402


def timed(vm: ZfsVM, script: str) -> float:
    """Seconds the sh script took inside the guest; fails loudly if it failed."""
    wrapped = (
        f't0=$(date +%s%N); ( {script} ) >/dev/null; rc=$?; t1=$(date +%s%N); echo "$rc $((t1-t0))"'
    )
    out = vm.run(["sh", "-c", wrapped], timeout=3600, check=True).stdout.split()
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
    args = ap.parse_args()
    vm = ZfsVM.boot(scratch_gib=max(4, 3 * args.size_mib // 1024 + 2))
    try:
        pipe = setup(vm, args.size_mib)
        zverify = shlex.join([*vm.python, "-m", "zverify"])
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


if __name__ == "__main__":
    raise SystemExit(main())
