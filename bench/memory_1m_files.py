"""Peak RSS of `zverify compare` on a million-file tree, and how it scales.

Run by hand (never collected by the test suite):

    python bench/memory_1m_files.py [--files 1000000] [--points 100000,1000000]
                                    [--dir /dev/shm/zverify-mem] [--keep]

For every point N a tree of N files is built (1,000 files per directory,
directories two levels deep; every file empty except one in ten, which holds
64 bytes so the hashing path runs), copied with `cp -a`, and compared.  The
default directory is on tmpfs (/dev/shm) so that building is fast and the
tree's pages are not charged to the process; pass --dir to use a disk.

Reported per point: wall seconds, peak RSS of the `python -m zverify compare`
process (/usr/bin/time %M), the RSS of the interpreter with zverify.cli
imported and nothing walked (baseline), and bytes of RSS growth per entry
between the points.  Target: peak < 150 MB at 1M files.  Results also go to
bench/results/memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_MB = 150


def build_tree(root: Path, files: int) -> int:
    """N files, 1,000 per directory; returns the entry count a walk yields."""
    per_dir = 1000
    ndirs = (files + per_dir - 1) // per_dir
    tops: set[str] = set()
    payload = b"x" * 64
    made = 0
    for d in range(ndirs):
        top = f"t{d // 100:03d}"
        tops.add(top)
        sub = root / top / f"d{d % 100:02d}"
        sub.mkdir(parents=True)
        fd_dir = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for i in range(min(per_dir, files - made)):
                fd = os.open(
                    f"f{i:04d}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd_dir
                )
                if (made + i) % 10 == 0:
                    os.write(fd, payload)
                os.close(fd)
        finally:
            os.close(fd_dir)
        made += min(per_dir, files - made)
    return made + ndirs + len(tops)


def measure(argv: list[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS KiB, exit code) of one command."""
    rss_file = Path("/tmp") / f"zvmem-{os.getpid()}.rss"
    t0 = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(rss_file), *argv],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - t0
    rss = int(rss_file.read_text().split()[-1])
    rss_file.unlink()
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr.decode(errors="replace")[-2000:])
    return seconds, rss, done.returncode


def code_version() -> dict[str, str]:
    """Commit and extension measured (the one `python -m zverify` loads from REPO)."""
    import hashlib

    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    so = next(REPO.joinpath("zverify").glob("_zvcore.*.so"))
    return {"commit": head, "extension_sha256": hashlib.sha256(so.read_bytes()).hexdigest()[:16]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=1_000_000, help="largest tree (default 1M)")
    ap.add_argument("--points", help="comma-separated tree sizes (default: files/10 and files)")
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm/zverify-mem"))
    ap.add_argument("--keep", action="store_true", help="keep the trees (reused next time)")
    ap.add_argument("--threads", type=int, help="passed to zverify compare --threads")
    ap.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "memory.json")
    args = ap.parse_args()
    points = (
        [int(p) for p in args.points.split(",")]
        if args.points
        else sorted({max(1, args.files // 10), args.files})
    )
    py = sys.executable
    extra = ["--threads", str(args.threads)] if args.threads else []
    _, base_kib, _ = measure([py, "-c", "import zverify.cli, zverify.compare"])
    print(f"baseline (interpreter + zverify imported): {base_kib / 1024:.1f} MB", flush=True)
    rows = []
    for n in points:
        home = args.dir / f"n{n}"
        src, dst = home / "src", home / "dst"
        marker = home / "entries"
        if marker.exists():
            entries = int(marker.read_text())
            print(f"[{n:,}] reusing {home}", flush=True)
        else:
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            t0 = time.monotonic()
            entries = build_tree(src, n)
            subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
            marker.write_text(str(entries))
            print(
                f"[{n:,}] built {entries:,} entries x 2 in {time.monotonic() - t0:.0f} s",
                flush=True,
            )
        row: dict[str, object] = {"files": n, "entries": entries}
        for profile in ("full", "content"):
            argv = [py, "-m", "zverify", "compare", "--quiet", "--profile", profile, *extra]
            seconds, kib, rc = measure([*argv, str(src), str(dst)])
            row[profile] = {"seconds": seconds, "peak_rss_mb": kib / 1024, "exit_code": rc}
            print(
                f"[{n:,}] profile {profile:7s} {seconds:7.1f} s  peak RSS {kib / 1024:7.1f} MB  "
                f"exit {rc}",
                flush=True,
            )
        rows.append(row)
        if not args.keep:
            shutil.rmtree(home)
    print()
    print(
        f"{'files':>10s} {'entries':>10s} {'profile':>8s} {'seconds':>8s} {'entries/s':>10s} "
        f"{'peak RSS MB':>12s} {'over base':>10s} {'< 150 MB':>9s}"
    )
    for row in rows:
        for profile in ("full", "content"):
            r = row[profile]  # type: ignore[index]
            rate = int(row["entries"]) * 2 / r["seconds"]  # type: ignore[call-overload]
            over = r["peak_rss_mb"] - base_kib / 1024
            print(
                f"{row['files']:>10,} {row['entries']:>10,} {profile:>8s} {r['seconds']:8.1f} "
                f"{rate:10,.0f} {r['peak_rss_mb']:12.1f} {over:10.1f} "
                f"{'yes' if r['peak_rss_mb'] < TARGET_MB else 'NO':>9s}"
            )
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        for profile in ("full", "content"):
            grow = (b[profile]["peak_rss_mb"] - a[profile]["peak_rss_mb"]) * 2**20  # type: ignore[index]
            per = grow / (int(b["entries"]) - int(a["entries"]))  # type: ignore[call-overload]
            print(
                f"RSS growth {a['files']:,} -> {b['files']:,} files, profile {profile}: "
                f"{grow / 2**20:+.1f} MB = {per:.1f} bytes per entry (per tree pair)"
            )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "zverify": code_version(),
        "baseline_rss_mb": base_kib / 1024,
        "dir": str(args.dir),
        "rows": rows,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
