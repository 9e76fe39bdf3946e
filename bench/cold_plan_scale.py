"""Time and peak memory of the cold chain model (zverify.sendstream.chain) as archives grow.

Run by hand (never collected by the test suite):

    python bench/cold_plan_scale.py [--snapshots 500,2000,8760]

For every point N: one dataset with a full of @0, `-I` packages of 100 snapshots each up to @N
(a year of hourly snapshots is 8,760), a link @N -> @N+1 and a new full of @N+1: what `cold
check` plans (`plan`) and what `cold prune` decides (`plan_prune`, which plans again).  Pure:
no files, no ZFS; each point in a fresh process, so that its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def one(n: int) -> dict[str, float]:
    from zverify.cold.proof.check import ArchiveReport, FileReport
    from zverify.cold.prune import plan_prune
    from zverify.sendstream.chain import ArchivedFile, Step, chains, plan

    ds = "pool/set"

    def step(a: int | None, b: int) -> Step:
        return Step(ds, 0 if a is None else 1000 + a, 1000 + b, str(b), 100 + b)

    files = [ArchivedFile("full0", 100, (step(None, 0),))]
    for k in range(0, n, 100):
        steps = tuple(step(i, i + 1) for i in range(k, min(k + 100, n)))
        files.append(ArchivedFile(f"pkg{k}", 50, steps))
    files += [
        ArchivedFile("link", 10, (step(n, n + 1),)),
        ArchivedFile("new-full", 100, (step(None, n + 1),)),
    ]
    start = time.perf_counter()
    planned = plan(files)
    planned_s = time.perf_counter() - start
    reports = [FileReport(f.name, "full", f.size, archived=f) for f in files]
    report = ArchiveReport("/cold", reports, planned, {ds: chains(ds, files)}, [])
    start = time.perf_counter()
    (decision,) = plan_prune(report, 1)
    pruned_s = time.perf_counter() - start
    assert len(decision.files) == len(files) - 1, decision  # all but the new full
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"snapshots": n, "plan_s": planned_s, "prune_s": pruned_s, "peak_rss_mib": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshots", default="500,2000,8760")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one)))
        return
    print(f"{'snapshots':>10} {'plan s':>8} {'prune s':>8} {'peak RSS MiB':>13}")
    for n in (int(x) for x in args.snapshots.split(",")):
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True
        )
        r = json.loads(out.stdout)
        print(f"{n:>10} {r['plan_s']:>8.2f} {r['prune_s']:>8.2f} {r['peak_rss_mib']:>13.0f}")


if __name__ == "__main__":
    main()
