"""Start-up time of the installed `zverify` command, against the 45 ms target (issue 48).

Run by hand (never collected by the test suite):

    python bench/startup.py [--runs 15] [--scratch /var/tmp/zverify-bench]

Times, as wall-clock medians of interleaved runs of a plain `pip install .` (bench/installed.py:
what users run, with compiled bytecode): two floors of that venv's interpreter, `python -c pass`
(no Python program can beat it) and `python -c 'import typer'` with the garbage collector paused,
as the console script pauses it (no typer program can beat that), then
`zverify --help`, `zverify compare` of two empty directories, `zverify -V` and `zverify stream
--help`, each against the target and as a ratio to both floors (a loaded machine slows all of
them alike; the ratios travel better than the milliseconds).  Then prints the ten slowest
imports of `zverify compare` (`python -X importtime`), so a regression shows which module
brought it; tests/cli/test_startup.py keeps the deferred ones off that list.  Exit 1
when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import installed_zverify

TARGET_MS = 45.0


# As users run it: unbuffered stdio (PYTHONUNBUFFERED, set on some CI machines) makes every
# print a system call, and PYTHONDONTWRITEBYTECODE is of no use once pip has compiled.
ENV = {
    k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")
}


def wall_ms(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=False)
    return (time.perf_counter() - start) * 1000


def slowest_imports(python: Path, argv: list[str], count: int) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the top-level imports `python -X importtime` reports."""
    run = subprocess.run(
        [str(python), "-X", "importtime", "-m", "zverify", *argv],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )
    rows = []
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if name.startswith("   "):  # nested deeper than one level: counted in its parent
            continue
        rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:count]


FLOORS = ("python -c pass", "python -c 'import typer' (gc paused)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--scratch", type=Path, default=Path("/var/tmp/zverify-bench"))
    args = ap.parse_args()
    script = installed_zverify(args.scratch)
    python = script.parent / "python"
    with tempfile.TemporaryDirectory() as tmp:
        empty_src, empty_dst = Path(tmp, "a"), Path(tmp, "b")
        for empty in (empty_src, empty_dst):
            empty.mkdir()
            os.utime(empty, (0, 0))  # identical, so compare runs to its exit 0
        cases = {
            FLOORS[0]: [str(python), "-c", "pass"],
            FLOORS[1]: [str(python), "-c", "import gc; gc.disable(); import typer"],
            "zverify --help": [str(script), "--help"],
            "zverify compare EMPTY EMPTY": [str(script), "compare", str(empty_src), str(empty_dst)],
            "zverify -V": [str(script), "-V"],
            "zverify stream --help": [str(script), "stream", "--help"],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for argv in cases.values():  # warm-up: page cache, bytecode
            wall_ms(argv)
        for _ in range(args.runs):
            for name, argv in cases.items():
                times[name].append(wall_ms(argv))
        imports = slowest_imports(python, ["compare", str(empty_src), str(empty_dst)], 10)
    medians = {name: statistics.median(samples) for name, samples in times.items()}
    print(f"installed zverify: {script}  (median of {args.runs}, load {os.getloadavg()[0]:.2f})")
    print(f"  {'':38} {'median':>10}  {'/pass':>6}  {'/typer':>6}")
    missed = 0
    for name, median in medians.items():
        gated = name not in FLOORS
        verdict = ("ok" if median <= TARGET_MS else "MISSED") if gated else "(floor)"
        missed += verdict == "MISSED"
        ratios = "  ".join(f"{median / medians[floor]:6.2f}" for floor in FLOORS)
        print(f"  {name:38} {median:7.1f} ms  {ratios}   {verdict}")
    print(f"target: every zverify command <= {TARGET_MS:.0f} ms")
    print("slowest top-level imports of `zverify compare`:")
    for micros, name in imports:
        print(f"  {micros / 1000:7.1f} ms  {name}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
