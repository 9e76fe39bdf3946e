"""`zverify compare --mpi` under mpirun -n 1, 2, 4 against the single-node run, on one machine.

Run by hand (never collected by the test suite):

    python bench/mpi_scaling.py [--quick] [--runs 3] [--ranks 1,2,4]
                                [--scratch /var/tmp/zverify-bench]

Corpora: compare_vs_peers.py's `small` (200,000 files in 2,000 directories; --quick 20,000)
and `large` (3 files of 1.5 GiB; --quick 256 MiB), plus `onedir`: 200,000 empty-or-tiny
files in one directory (--quick 50,000), the skew a distributed walk must split.  Each is
SRC plus DST = `cp -a SRC DST`, so every run must say IDENTICAL (checked).

Every run reads both trees from the page cache (warmed first).  Runs are interleaved
(single, N=1, N=2, ...) and the median wall time is reported, with the ratio to the
single-node run (> 1: slower) and the largest peak RSS of one rank (each rank runs under
/usr/bin/time).  This machine has few cores: the ranks of N > 1 share them with each other
and with each rank's hashing threads, so what is measured here is the overhead of
distributing (start-up, planning, re-listing the directories that lead to each range,
shipping what rank 0 must judge), not a speed-up; docs/design/mpi.md turns these figures
into the model of a cluster.  Results go to bench/results/mpi-latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_vs_peers import (
    Corpus,
    corpora,
    ensure_corpus,
    environment,
    tree_stats,
    warm_page_cache,
)
from installed import installed_zverify

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "mpi-latest.json"
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _write_onedir(root: Path, params: dict[str, object]) -> None:
    where = root / "one"
    where.mkdir(parents=True)
    for i in range(int(params["files"])):  # type: ignore[call-overload]
        (where / f"f{i:07d}").write_bytes(b"%d\n" % i if i % 3 else b"")


def all_corpora(quick: bool, scratch: Path) -> dict[str, Corpus]:
    chosen = {k: v for k, v in corpora(quick, scratch).items() if k in ("small", "large")}
    files = 50_000 if quick else 200_000
    chosen["onedir"] = Corpus(
        "onedir", f"{files:,} tiny files in one directory", {"files": files}, _write_onedir,
        files * 8192,
    )  # fmt: skip
    return chosen


def one_run(zverify: Path, ranks: int | None, src: Path, dst: Path, work: Path) -> dict[str, float]:
    """Wall seconds and the largest per-process peak RSS (MB) of one compare."""
    rss = work / "rss"
    rss.mkdir(exist_ok=True)
    for old in rss.iterdir():
        old.unlink()
    timed = ["/usr/bin/time", "-f", "%M", "-o"]
    command = [str(zverify), "compare", "-q", str(src), str(dst)]
    if ranks is None:
        argv = [*timed, str(rss / "single"), *command]
    else:  # every rank under its own /usr/bin/time: %M is per process
        wrapper = work / "rank.sh"
        wrapper.write_text(
            '#!/bin/sh\nexec /usr/bin/time -f %M -o "$RSS/$OMPI_COMM_WORLD_RANK" "$@"\n'
        )
        wrapper.chmod(0o755)
        argv = ["mpirun", "-n", str(ranks), "--oversubscribe", str(wrapper), *command, "--mpi"]
    env = dict(os.environ, RSS=str(rss), **MPI_ENV)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0 or "IDENTICAL" not in done.stdout:
        raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}")
    peaks = [int(f.read_text().split()[-1]) for f in rss.iterdir()]
    return {"seconds": seconds, "peak_rss_mb": max(peaks) / 1024}


def bench(name: str, src: Path, dst: Path, zverify: Path, ranks: list[int], runs: int) -> dict:
    kinds: list[int | None] = [None, *ranks]
    timings: dict[str, list[dict[str, float]]] = {label(k): [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="zvmpi-") as tmp:
        for _ in range(runs):
            for k in kinds:
                warm_page_cache(src, dst)
                timings[label(k)].append(one_run(zverify, k, src, dst, Path(tmp)))
    single = statistics.median(r["seconds"] for r in timings["single"])
    rows = {}
    for k, runs_of in timings.items():
        median = statistics.median(r["seconds"] for r in runs_of)
        rows[k] = {
            "median_s": round(median, 3),
            "ratio_to_single": round(median / single, 2),
            "peak_rss_mb_per_rank": round(max(r["peak_rss_mb"] for r in runs_of), 1),
        }
    stats = tree_stats(src)
    print(f"\n[{name}] {stats}")
    print(f"{'run':<10} {'median s':>9} {'x single':>9} {'RSS/rank MB':>12}")
    for k, row in rows.items():
        print(
            f"{k:<10} {row['median_s']:>9.2f} {row['ratio_to_single']:>9.2f} "
            f"{row['peak_rss_mb_per_rank']:>12.1f}"
        )
    return {"tree": stats, "runs": rows}


def label(ranks: int | None) -> str:
    return "single" if ranks is None else f"mpi n={ranks}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--corpus", action="append", choices=["small", "large", "onedir"])
    ap.add_argument("--scratch", type=Path, default=Path("/var/tmp/zverify-bench"))
    args = ap.parse_args()
    scratch = args.scratch / ("quick" if args.quick else "full")
    scratch.mkdir(parents=True, exist_ok=True)
    zverify = installed_zverify(args.scratch, extras="mpi")
    ranks = [int(n) for n in args.ranks.split(",")]
    report: dict[str, object] = {"environment": environment(), "corpora": {}}
    for name, corpus in all_corpora(args.quick, scratch).items():
        if args.corpus and name not in args.corpus:
            continue
        src, dst = ensure_corpus(corpus, scratch)
        report["corpora"][name] = bench(name, src, dst, zverify, ranks, args.runs)  # type: ignore[index]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2))
    print(f"\nwritten {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
