"""`cold scrub` against `cold check` of the same archive of many small streams (issue 49
item 5: a year of hourly snapshots).  A scrub proves each file as check reads it and records
each proof in the ledger, so its goal is check's time plus little: the ratio printed is
scrub / check, medians of --runs, each run on a fresh copy (no ledger yet).

    python bench/scrub_many_files.py [--files 8760] [--runs 3]
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STREAM = Path(__file__).resolve().parents[1] / "tests/data/streams/incr_empty_fs_s2_s3.zstream"


def _archive(root: Path, files: int) -> None:
    root.mkdir()
    for i in range(files):
        shutil.copy(STREAM, root / f"s{i:05d}.zfs")


def _timed(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(["zverify", *args], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # duplicates are a check problem: 1 is expected
        sys.exit(f"zverify {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8760)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    scrubs, checks = [], []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for run in range(args.runs):
            a, b = Path(tmp, f"scrub{run}"), Path(tmp, f"check{run}")
            _archive(a, args.files)
            shutil.copytree(a, b)
            scrubs.append(_timed("cold", "scrub", "-q", str(a)))
            checks.append(_timed("cold", "check", "-q", str(b)))
    scrub, check = statistics.median(scrubs), statistics.median(checks)
    ratio = scrub / check
    print(f"{args.files} files: scrub {scrub:.2f} s, check {check:.2f} s, ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
