"""Would io_uring speed up zverify's small-file path?  (issue 34, item 3)

Run by hand (never collected by the test suite), as root or the corpus owner:

    apt-get install -y liburing-dev libxxhash-dev strace
    python bench/closed/uring_smallfiles.py [--quick] [--runs 5] [--threads 1,2]
                                            [--batches 32,64,128]
                                            [--variants full,content,quick] [--no-strace]

Builds bench/closed/uring_smallfiles.c (see its header for the modes) and runs it over
compare_vs_peers.py's `small` corpus (200,000 files of 0-16 KiB; --quick 20,000), both
trees at once as `zverify compare` reads them, hot page cache.  Every mode's digests of
every file are checked against the sync mode's (and a sample against `xxhsum -H2`) before
anything is timed.  Then --runs rounds run every configuration once each, interleaved, and
the table gives the median wall and CPU seconds of the timed pass (the listing is not
timed), the ratio to sync at the same thread count and variant, and the syscalls per file
that `strace -c -f` counts over one top-level directory of both trees (the listing's own
calls subtracted; io_uring's io-wq workers make no syscalls of their own).  For scale, the
same rounds time the installed `zverify compare -q` (profile full, content, --quick) of the
two trees: the share of the whole command that the C file path is.  Results:
bench/results/uring-latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the corpora
from compare_vs_peers import corpora, ensure_corpus, environment
from installed import installed_zverify

REPO = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).resolve().parent / "uring_smallfiles.c"
RESULTS = REPO / "bench" / "results" / "uring-latest.json"
# -march=native: the core picks its AVX2 XXH3 at run time; the inline header needs the flag
BUILD = ["cc", "-O2", "-march=native", "-Wall", "-Wextra", "-Werror"]
LIBS = ["-luring", "-lpthread"]


@dataclass(frozen=True)
class Config:
    mode: str  # sync, syncpar, uwalk, uring, uringfs, direct (see uring_smallfiles.c)
    variant: str  # full, content, quick
    threads: int
    batch: int
    fadvise: int = 1

    @property
    def label(self) -> str:
        batch = "" if self.mode == "sync" else f" B={self.batch}"
        hint = "" if self.fadvise else " (no fadvise)"
        return f"{self.mode}{batch}{hint}"

    def argv(self, binary: Path, digests: str, trees: list[Path]) -> list[str]:
        return [
            str(binary),
            self.mode,
            self.variant,
            str(self.threads),
            str(self.batch),
            str(self.fadvise),
            digests,
            *map(str, trees),
        ]


def build(scratch: Path) -> Path:
    """The experiment's binary, rebuilt when the source is newer."""
    if not Path("/usr/include/liburing.h").exists():
        raise SystemExit("needs liburing's headers: apt-get install -y liburing-dev")
    binary = scratch / "uring_smallfiles"
    if not binary.exists() or binary.stat().st_mtime < SOURCE.stat().st_mtime:
        argv = [*BUILD, "-o", str(binary), str(SOURCE), *LIBS]
        print("  $", " ".join(argv), flush=True)
        subprocess.run(argv, check=True)
    return binary


def configs(threads: list[int], batches: list[int], variants: list[str]) -> list[Config]:
    """sync at each thread count, then the io_uring modes; syncpar and uwalk at one batch
    size (their batch only groups work, it saves no syscall)."""
    mid = batches[len(batches) // 2]
    out = []
    for t in threads:
        for v in variants:
            out.append(Config("sync", v, t, mid))
            if v == "full":
                out.append(Config("sync", v, t, mid, fadvise=0))
            out.append(Config("syncpar", v, t, mid))
            out.append(Config("uwalk", v, t, mid))
            out += [Config("uring", v, t, b) for b in batches]
            if v != "quick":  # quick has no post-read stat: uringfs would be uring
                out.append(Config("uringfs", v, t, mid))
            if v == "content":
                out += [Config("direct", v, t, b) for b in batches]
    return out


def run_once(binary: Path, cfg: Config, trees: list[Path], digests: str = "-") -> dict[str, float]:
    out = subprocess.run(
        cfg.argv(binary, digests, trees), capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"{cfg.label} {cfg.variant}: exit {out.returncode}: {out.stderr.strip()}")
    result: dict[str, float] = json.loads(out.stdout)
    result["load1"] = os.getloadavg()[0]
    return result


def check_digests(binary: Path, cfgs: list[Config], trees: list[Path], work: Path) -> None:
    """Every configuration must give every file the digest (or size) that sync gives it."""
    reference: dict[str, bytes] = {}
    for cfg in cfgs:
        path = work / f"{cfg.mode}-{cfg.variant}-{cfg.threads}-{cfg.batch}.txt"
        run_once(binary, cfg, trees, str(path))
        data = path.read_bytes()
        path.unlink()
        ref = reference.setdefault(cfg.variant, data)
        if data != ref:
            raise SystemExit(f"{cfg.label} {cfg.variant}: digests differ from sync's")
        if cfg.mode == "sync" and cfg.variant == "full":
            check_against_xxhsum(data, trees)
    print(f"  digests: all {len(cfgs)} configurations agree on every file", flush=True)


def check_against_xxhsum(listing: bytes, trees: list[Path]) -> None:
    """A sample of sync's digests against xxhsum -H2 (XXH3-128, the same canonical form)."""
    lines = listing.decode().splitlines()
    half = len(lines) // len(trees)  # the listing holds the first tree, then the second
    for line in random.Random(34).sample(lines[:half], min(200, half)):
        rel, _size, digest = line.split("\t")
        out = subprocess.run(
            ["xxhsum", "-H2", rel], cwd=trees[0], capture_output=True, text=True, check=True
        )
        if out.stdout.split()[0] != digest:
            raise SystemExit(f"{rel}: sync says {digest}, xxhsum -H2 says {out.stdout.split()[0]}")


ZVERIFY_ARGS = {"full": [], "content": ["--profile", "content"], "quick": ["--quick"]}


def run_zverify(script: Path, variant: str, trees: list[Path]) -> dict[str, float]:
    """One `zverify compare` of the two trees, wall and CPU (children's rusage)."""
    before = os.times()
    t0 = time.monotonic()
    argv = [str(script), "compare", "-q", *ZVERIFY_ARGS[variant], *map(str, trees)]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    after = os.times()
    if out.returncode != 0:
        raise SystemExit(f"zverify {variant}: exit {out.returncode}: {out.stderr.strip()}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return {"wall": wall, "cpu": cpu, "load1": os.getloadavg()[0]}


def strace_counts(binary: Path, cfg: Config, trees: list[Path]) -> dict[str, int]:
    """Syscalls of the whole program by name, from strace -c -f."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        argv = ["strace", "-c", "-f", "-o", log.name, *cfg.argv(binary, "-", trees)]
        subprocess.run(argv, capture_output=True, check=True)
        counts: dict[str, int] = {}
        for line in log.read().splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[3].isdigit() and parts[-1] != "total":
                counts[parts[-1]] = int(parts[3])
        return counts


def syscalls_per_file(binary: Path, cfgs: list[Config], trees: list[Path]) -> dict[str, object]:
    """Per file, over one top-level directory of each tree, minus the listing's calls."""
    sub = sorted(p.name for p in trees[0].iterdir() if p.is_dir())[0]
    small = [t / sub for t in trees]
    files = sum(1 for t in small for p in t.rglob("*") if p.is_file() and not p.is_symlink())
    base = strace_counts(binary, Config("list", "full", 1, 64), small)
    out: dict[str, object] = {}
    for cfg in cfgs:
        counts = strace_counts(binary, cfg, small)
        extra = {k: n - base.get(k, 0) for k, n in counts.items() if n - base.get(k, 0) > 0}
        per_file = {k: round(n / files, 3) for k, n in sorted(extra.items(), key=lambda x: -x[1])}
        out[key(cfg)] = {"total": round(sum(extra.values()) / files, 2), "by_call": per_file}
    return out


def key(cfg: Config) -> str:
    return f"{cfg.variant} {cfg.label} T={cfg.threads}"


def render(
    cfgs: list[Config], runs: dict[str, list[dict[str, float]]], calls: dict[str, object]
) -> str:
    rows = [
        "| variant | mode | threads | wall s | CPU s | wall / sync | syscalls/file | + futex |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cfg in cfgs:
        wall = statistics.median(r["wall"] for r in runs[key(cfg)])
        cpu = statistics.median(r["cpu"] for r in runs[key(cfg)])
        ref = key(Config("sync", cfg.variant, cfg.threads, cfg.batch))
        sync_wall = statistics.median(r["wall"] for r in runs[ref])
        rows.append(
            f"| {cfg.variant} | {cfg.label} | {cfg.threads} | {wall:.3f} | {cpu:.3f} | "
            f"{wall / sync_wall:.2f} | {syscall_cells(calls.get(key(cfg)))} |"
        )
    return "\n".join(rows)


def render_reference(runs: dict[str, list[dict[str, float]]], variants: list[str]) -> str:
    rows = [f"zverify {v}" for v in variants if f"zverify {v}" in runs]
    lines = ["", "", "| installed `zverify compare -q` (default threads) | wall s | CPU s |"]
    lines.append("|---|---|---|")
    for row in rows:
        wall = statistics.median(r["wall"] for r in runs[row])
        cpu = statistics.median(r["cpu"] for r in runs[row])
        lines.append(f"| {row.split()[1]} | {wall:.3f} | {cpu:.3f} |")
    return "\n".join(lines) if rows else ""


def syscall_cells(sc: object) -> str:
    """Calls per file without futex, then futex apart: strace's stops make the threads
    wait for each other far more often than they do untraced, so futex is an upper bound."""
    if not isinstance(sc, dict):
        return "- | -"
    futex = sc["by_call"].get("futex", 0.0)
    return f"{sc['total'] - futex:.2f} | {futex:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the 20,000-file corpus")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batches", default="32,64,128")
    ap.add_argument("--variants", default="full,content,quick")
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--no-zverify", action="store_true", help="leave out the reference rows")
    ap.add_argument("--scratch", type=Path, default=Path("/var/tmp/zverify-bench"))
    args = ap.parse_args()
    scratch = args.scratch / ("quick" if args.quick else "full")
    scratch.mkdir(parents=True, exist_ok=True)
    binary = build(scratch)
    src, dst = ensure_corpus(corpora(args.quick, scratch)["small"], scratch)
    trees = [src, dst]
    cfgs = configs(
        [int(t) for t in args.threads.split(",")],
        [int(b) for b in args.batches.split(",")],
        args.variants.split(","),
    )
    with tempfile.TemporaryDirectory() as work:
        check_digests(binary, cfgs, trees, Path(work))  # also the page-cache warm-up
    calls = {} if args.no_strace else syscalls_per_file(binary, cfgs, trees)
    runs: dict[str, list[dict[str, float]]] = {key(c): [] for c in cfgs}
    script = None if args.no_zverify else installed_zverify(args.scratch)
    variants = args.variants.split(",")
    for i in range(args.runs):
        for cfg in cfgs:  # interleaved: drift and background load spread over all
            runs[key(cfg)].append(run_once(binary, cfg, trees))
        for variant in variants:
            if script is not None:
                runs.setdefault(f"zverify {variant}", []).append(
                    run_zverify(script, variant, trees)
                )
        print(f"  round {i + 1}/{args.runs} done, load {os.getloadavg()[0]:.2f}", flush=True)
    table = render(cfgs, runs, calls) + render_reference(runs, variants)
    print("\n" + table + "\n")
    RESULTS.parent.mkdir(exist_ok=True)
    report = {
        "environment": environment(),
        "trees": [str(t) for t in trees],
        "runs": runs,
        "syscalls_per_file": calls,
        "table": table,
    }
    RESULTS.write_text(json.dumps(report, indent=2))
    print(f"written {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
