"""Peak RSS of `zverify compare` reporting a million differences, in every output form.

Run by hand (never collected by the test suite):

    python bench/memory_1m_diffs.py [--files 1000000] [--dir /dev/shm/zverify-diffs] [--keep]

The tree of bench/memory_1m_files.py (1,000 files per directory) is copied with `cp -r`,
which keeps content but not times: every file and directory differs in mtime, as after an
`rsync -r` without -t.  Each output form then runs once with stdout to /dev/null:
text, --json, --jsonl, and text with --write-lists.  Reported: seconds, peak RSS (/usr/bin/time
%M), differences reported.  Target: peak < 150 MB at 1M differences in every form, i.e.
memory that does not grow with the differences.  Results go to bench/results/memory-diffs.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_1m_files import REPO, TARGET_MB, build_tree, code_version, measure

FORMS = {
    "text": [],
    "--json": ["--json"],
    "--jsonl": ["--jsonl"],
    "--write-lists": ["--write-lists", "{lists}"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm/zverify-diffs"))
    ap.add_argument("--keep", action="store_true", help="keep the trees (reused next time)")
    ap.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "memory-diffs.json")
    args = ap.parse_args()
    home = args.dir / f"n{args.files}"
    src, dst, lists = home / "src", home / "dst", home / "lists"
    marker = home / "entries"
    if marker.exists():
        entries = int(marker.read_text())
    else:
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        t0 = time.monotonic()
        entries = build_tree(src, args.files)
        time.sleep(1.1)  # the copy's mtimes fall in a later second than the source's
        subprocess.run(["cp", "-r", str(src), str(dst)], check=True)
        marker.write_text(str(entries))
        print(f"built {entries:,} entries x 2 in {time.monotonic() - t0:.0f} s", flush=True)
    py = sys.executable
    rows = []
    for form, extra in FORMS.items():
        argv = [py, "-m", "zverify", "compare", "--no-progress"]
        argv += [a.format(lists=lists) for a in extra]
        seconds, kib, rc = measure([*argv, str(src), str(dst)])
        reported = _reported(py, src, dst) if form == "--jsonl" else None
        rows.append({"form": form, "seconds": seconds, "peak_rss_mb": kib / 1024, "exit": rc})
        print(
            f"{form:14s} {seconds:7.1f} s  peak RSS {kib / 1024:7.1f} MB  exit {rc}"
            + (f"  differences {reported:,}" if reported is not None else ""),
            flush=True,
        )
        if reported is not None:
            rows[-1]["differences"] = reported
    listed = sum(1 for _ in (lists / "differ").open("rb")) if (lists / "differ").exists() else 0
    print(f"--write-lists: {listed:,} paths in {lists / 'differ'}")
    ok = all(r["peak_rss_mb"] < TARGET_MB and r["exit"] == 1 for r in rows)
    print(f"every form under {TARGET_MB} MB with exit 1: {'yes' if ok else 'NO'}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report = {"zverify": code_version(), "entries": entries, "rows": rows, "listed": listed}
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    if not args.keep:
        shutil.rmtree(home)
    return 0 if ok else 1


def _reported(py: str, src: Path, dst: Path) -> int:
    """Differences the JSON Lines summary counts (a second run, not measured)."""
    done = subprocess.run(
        [py, "-m", "zverify", "compare", "--no-progress", "--jsonl", str(src), str(dst)],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    last = done.stdout.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return int(json.loads(last)["total"])


if __name__ == "__main__":
    sys.exit(main())
