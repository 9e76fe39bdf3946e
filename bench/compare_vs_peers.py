"""Whole-command timing of `zverify compare` against the tools people already use.

Run by hand (never collected by the test suite):

    python bench/compare_vs_peers.py [--quick] [--corpus small|large|usr] [--runs 3]
                                     [--scratch /var/tmp/zverify-bench] [--cold]

Three corpora are generated under the scratch directory (reused when present,
keyed by their parameters), each as SRC plus DST = `cp -a SRC DST`:

  small   200,000 files of 0-16 KiB in 2,000 directories, 1% extra hardlinks, 1% symlinks
  large   3 x 1.5 GiB of incompressible data (scaled down, with a warning, if disk is short)
  usr     a copy of /usr (--quick: /usr/share)

For every corpus, each tool runs once to warm the page cache, then N rounds
(every file of both trees is read again before each timed run: rclone drops
what it read from the page cache, which penalised the tool after it),
run every tool in turn (interleaved, so drift hits every tool alike); the
median wall time is reported with the ratio tool/zverify (> 1 means zverify
is faster), the peak RSS of the largest process of the command (wait4
ru_maxrss), and whether the tool's own verdict said "identical".  Results go
to bench/results/latest.json.

--cold (root): instead of warming, write back and drop the page cache, dentries
and inodes (`sync; echo 3 > /proc/sys/vm/drop_caches`) before every timed run and
skip the warm-up round, so every tool reads both trees from the disk, as it does
over a freshly copied pool.  Results go to bench/results/latest-cold.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import installed_zverify, source_digest

REPO = Path(__file__).resolve().parent.parent
ZVERIFY_SCRIPT = Path("zverify")  # set in main()
RESULTS = REPO / "bench" / "results" / "latest.json"
GIB = 1 << 30
MIB = 1 << 20


# --------------------------------------------------------------------------- corpora


@dataclass(frozen=True)
class Corpus:
    name: str
    description: str
    params: dict[str, object]
    build: Callable[[Path, dict[str, object]], None]
    bytes_needed: int  # both trees, for the df check


def _write_small(root: Path, params: dict[str, object]) -> None:
    files, dirs = int(params["files"]), int(params["dirs"])  # type: ignore[call-overload]
    rng = random.Random(20240607)
    pool = os.urandom(64 * MIB)
    top = max(1, int(dirs**0.5))
    dir_paths = [root / f"d{i % top:03d}" / f"s{i // top:03d}" for i in range(dirs)]
    for d in dir_paths:
        d.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    for i in range(files):
        path = dir_paths[i % dirs] / f"f{i:07d}.bin"
        size = rng.randint(0, 16 * 1024)
        start = rng.randrange(0, len(pool) - size)
        with open(path, "wb") as fh:
            fh.write(pool[start : start + size])
        made.append(path)
    extras = files // 100
    for j in range(extras):
        target = made[rng.randrange(len(made))]
        where = dir_paths[rng.randrange(dirs)]
        os.link(target, where / f"h{j:06d}.lnk")
        os.symlink(os.path.relpath(made[rng.randrange(len(made))], where), where / f"l{j:06d}")
    os.symlink("does-not-exist", root / "dangling")


def _write_large(root: Path, params: dict[str, object]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    count, size = int(params["files"]), int(params["size"])  # type: ignore[call-overload]
    chunk = 16 * MIB
    for i in range(count):
        with open(root / f"big{i}.bin", "wb") as fh:
            left = size
            while left > 0:
                n = min(chunk, left)
                fh.write(os.urandom(n))
                left -= n
    (root / "small.txt").write_text("one small file next to the big ones\n")


def _copy_usr(root: Path, params: dict[str, object]) -> None:
    _run_checked(["cp", "-a", str(params["source"]), str(root)])


def _run_checked(argv: list[str]) -> None:
    print("  $", shlex.join(argv), flush=True)
    subprocess.run(argv, check=True)


def _du_bytes(path: str) -> int:
    out = subprocess.run(["du", "-s", "-B1", path], capture_output=True, text=True, check=False)
    return int(out.stdout.split()[0]) if out.stdout else 0


def corpora(quick: bool, scratch: Path) -> dict[str, Corpus]:
    small_files = 20_000 if quick else 200_000
    small = {"files": small_files, "dirs": small_files // 100}
    large_size = (256 * MIB) if quick else (1536 * MIB)
    large = {"files": 3, "size": large_size}
    usr_source = "/usr/share" if quick else "/usr"
    free = shutil.disk_usage(scratch).free
    need_large = 2 * 3 * large_size + GIB
    large_bytes = 3 * large_size
    if not quick and need_large > free:
        size = max(64 * MIB, (free - GIB) // 6 // MIB * MIB)
        print(
            f"WARNING: only {free / GIB:.1f} GiB free under {scratch}; the large corpus is "
            f"scaled down from 3 x {large_size / GIB:.1f} GiB to 3 x {size / GIB:.2f} GiB",
            file=sys.stderr,
        )
        large["size"] = size
        large_bytes = 3 * size
    return {
        "small": Corpus(
            "small",
            f"{small_files:,} files of 0-16 KiB in {small['dirs']:,} dirs, "
            "1% hardlinks + 1% symlinks",
            small,
            _write_small,
            2 * small_files * 12 * 1024,
        ),
        "large": Corpus(
            "large",
            f"3 x {int(large['size']) / GIB:.2f} GiB incompressible files",
            large,
            _write_large,
            2 * large_bytes,
        ),
        "usr": Corpus(
            "usr",
            f"copy of {usr_source}",
            {"source": usr_source},
            _copy_usr,
            2 * _du_bytes(usr_source),
        ),
    }


def ensure_corpus(corpus: Corpus, scratch: Path) -> tuple[Path, Path]:
    """SRC and DST of a corpus, built unless a complete one with the same parameters exists."""
    home = scratch / corpus.name
    src, dst, marker = home / "src", home / "dst", home / "complete.json"
    if marker.exists() and json.loads(marker.read_text()) == corpus.params:
        print(f"[{corpus.name}] reusing {home}", flush=True)
        return src, dst
    if home.exists():
        print(f"[{corpus.name}] removing stale {home}", flush=True)
        shutil.rmtree(home)
    home.mkdir(parents=True)
    free = shutil.disk_usage(home).free
    if corpus.bytes_needed > free:
        raise SystemExit(
            f"[{corpus.name}] needs about {corpus.bytes_needed / GIB:.1f} GiB, "
            f"only {free / GIB:.1f} GiB free under {scratch}"
        )
    print(f"[{corpus.name}] building {corpus.description} in {home}", flush=True)
    t0 = time.monotonic()
    corpus.build(src, corpus.params)
    _run_checked(["cp", "-a", str(src), str(dst)])
    _run_checked(["sync"])
    marker.write_text(json.dumps(corpus.params))
    print(f"[{corpus.name}] built in {time.monotonic() - t0:.0f} s", flush=True)
    return src, dst


# --------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class Tool:
    name: str
    command: str  # run with bash -c; SRC, DST, WORK are exported
    identical: Callable[[int, str], bool]  # (exit code, stdout+stderr) -> verdict
    note: str = ""


def _rsync_identical(rc: int, out: str) -> bool:
    # With -i every file or dir that would change gets an itemized line such as
    # ">fc........ path" or "*deleting path"; -r without -l skips symlinks
    # (it says so), which is rsync's limitation, not a difference.
    changes = [
        line
        for line in out.splitlines()
        if line and not line.startswith("skipping non-regular file")
    ]
    return rc == 0 and not changes


# The console script of a plain `pip install .` of this tree (bench/installed.py): what users
# run, with compiled bytecode, rather than `python -m zverify` from a development checkout.
ZV = '"$ZVERIFY" compare --quiet'
# find|sort|xargs hashers: both trees at once (the tool gets the same two-tree
# parallelism zverify uses), then diff the two sorted lists.
_LIST_HASH = (
    '( cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 {h} > "$WORK/src.sum" ) & a=$!; '
    '( cd "$DST" && find . -type f -print0 | sort -z | xargs -0 {h} > "$WORK/dst.sum" ) & b=$!; '
    "wait $a; ra=$?; wait $b; rb=$?; "
    '[ $ra = 0 ] && [ $rb = 0 ] && diff -q "$WORK/src.sum" "$WORK/dst.sum"'
)

# The floor: read every byte of both trees with zverify's thread count, hash nothing.
_CATS = max(1, min(os.cpu_count() or 1, 64))
_CAT_ALL = f"find . -type f -print0 | xargs -0 -n 1024 -P {_CATS} cat > /dev/null"
_READ_FLOOR = (
    f'( cd "$SRC" && {_CAT_ALL} ) & a=$!; ( cd "$DST" && {_CAT_ALL} ) & b=$!; wait $a && wait $b'
)

# Patterns of the kind a migration leaves out, none of which occurs in the corpora.
_NO_MATCH = [
    "lost+found/",
    "/.zfs",
    "/.snapshot",
    "*.zverify-tmp",
    ".cache/",
    "**/node_modules/",
    "*~",
    ".#*",
    "/tmp/",
    "core.[0-9]*",
]

TOOLS = [
    Tool("zverify", f'{ZV} "$SRC" "$DST"', lambda rc, _: rc == 0, "xxh3-128, profile full"),
    Tool(
        "read floor (cat)",
        _READ_FLOOR,
        lambda rc, _: rc == 0,
        "reads every file of both trees, cores-many cats per tree, no hashing: the limit",
    ),
    Tool("zverify blake3", f'{ZV} --hash blake3 "$SRC" "$DST"', lambda rc, _: rc == 0),
    Tool(
        "zverify sha256",
        f'{ZV} --hash sha256 "$SRC" "$DST"',
        lambda rc, _: rc == 0,
        "SHA-256 in the C workers (OpenSSL's libcrypto), as sha256sum lists check",
    ),
    Tool(
        "zverify + 10 excludes",
        ZV + " " + " ".join(f"--exclude '{p}'" for p in _NO_MATCH) + ' "$SRC" "$DST"',
        lambda rc, _: rc == 0,
        "the cost of filtering: ten rsync patterns matched against every path (none match)",
    ),
    Tool(
        "zverify --profile content",
        f'{ZV} --profile content "$SRC" "$DST"',
        lambda rc, _: rc == 0,
        "content, kinds and symlinks only: the job of the find|xargs hashers",
    ),
    Tool(
        "zverify --quick",
        f'{ZV} --quick "$SRC" "$DST"',
        lambda rc, _: rc == 0,
        "no file data read: size, mtime and metadata (rsync's default check)",
    ),
    Tool(
        "zverify --quick rsync-a",
        f'{ZV} --quick --profile rsync-a "$SRC" "$DST"',
        lambda rc, _: rc == 0,
        "rsync -an's job: size, mtime, mode, owner, symlinks; no xattrs, no data read",
    ),
    Tool(
        "rsync -an",
        'rsync -an -i --delete "$SRC/" "$DST/"',
        _rsync_identical,
        "rsync's quick check (size + mtime) with -a's metadata; no data read",
    ),
    Tool(
        "rclone check --size-only",
        'rclone check --size-only --skip-links "$SRC" "$DST"',
        lambda rc, out: rc == 0 and " 0 differences found" in out,
        "sizes only; skips symlinks",
    ),
    Tool(
        "rsync -rcn",
        'rsync -rcn -i --delete "$SRC/" "$DST/"',
        _rsync_identical,
        "xxh128 both sides (rsync >= 3.2 negotiates it for -c); skips symlinks; no metadata",
    ),
    Tool(
        "b3sum (find|sort|xargs)",
        _LIST_HASH.format(h="b3sum"),
        lambda rc, _: rc == 0,
        "regular files only; both trees concurrently",
    ),
    Tool(
        "xxhsum -H2 (find|sort|xargs)",
        _LIST_HASH.format(h="xxhsum -H2"),
        lambda rc, _: rc == 0,
        "XXH128, same digest as zverify; regular files only",
    ),
    Tool(
        "hashdeep -c md5",
        'cd "$SRC" && hashdeep -c md5 -r -l . > "$WORK/known" && '
        'cd "$DST" && hashdeep -c md5 -r -l -a -k "$WORK/known" .',
        lambda rc, out: rc == 0 and "Audit passed" in out,
        "known list of SRC, then audit DST; MD5 (its fastest)",
    ),
    Tool(
        "rclone check",
        'rclone check --skip-links "$SRC" "$DST"',
        lambda rc, out: rc == 0 and " 0 differences found" in out,
        "local: size + MD5 both sides, 8 checkers (default); skips symlinks",
    ),
]


@dataclass
class Run:
    seconds: float
    max_rss_kib: int
    cpu_seconds: float  # user + system of the command and all its children
    exit_code: int
    identical: bool
    load1: float  # 1-minute load average when the run started: other work on the machine


@dataclass
class ToolResult:
    tool: str
    note: str
    runs: list[Run] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def median_cpu(self) -> float:
        return statistics.median(r.cpu_seconds for r in self.runs)

    @property
    def peak_rss_mb(self) -> float:
        return max(r.max_rss_kib for r in self.runs) / 1024

    @property
    def identical(self) -> bool:
        return all(r.identical for r in self.runs)


def run_tool(tool: Tool, src: Path, dst: Path, work: Path) -> Run:
    """One timed run.  Peak RSS comes from /usr/bin/time (%M: the largest
    process of the command) rather than wait4 here, because a child forked
    from this Python process is charged this process's RSS until it execs."""
    env = dict(os.environ, SRC=str(src), DST=str(dst), WORK=str(work), ZVERIFY=str(ZVERIFY_SCRIPT))
    env["RCLONE_CONFIG"] = str(work / "rclone.conf")  # empty: no remotes, no warning
    out_path, rss_path = work / "out.txt", work / "rss.txt"
    argv = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(rss_path), "bash", "-c", tool.command]
    load1 = os.getloadavg()[0]
    with open(out_path, "wb") as out:
        t0 = time.perf_counter()
        rc = subprocess.run(
            argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        ).returncode
        seconds = time.perf_counter() - t0
    text = out_path.read_text(errors="replace")
    # The last line is "%M %U %S"; a line before it may say the command exited non-zero.
    rss, user, system = rss_path.read_text().splitlines()[-1].split()
    return Run(seconds, int(rss), float(user) + float(system), rc, tool.identical(rc, text), load1)


def warm_page_cache(src: Path, dst: Path) -> None:
    """Read every file of both trees before each timed run.

    Needed for fairness, not speed: rclone drops the files it read from the
    page cache (fadvise DONTNEED; `fincore` shows 0 resident pages after
    `rclone check`), so whichever tool ran after it paid for disk reads.
    """
    subprocess.run(
        f"find {shlex.quote(str(src))} {shlex.quote(str(dst))} -type f -print0 "
        "| xargs -0 cat > /dev/null",
        shell=True,
        check=False,
    )


def drop_page_cache() -> None:
    """Cold start for the next run: dirty pages written, then clean pages, dentries and
    inodes dropped (root only; the kernel keeps nothing of either tree)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def bench_corpus(
    name: str, src: Path, dst: Path, runs: int, tools: list[Tool], cold: bool = False
) -> list[ToolResult]:
    results = [ToolResult(t.name, t.note) for t in tools]
    prepare = drop_page_cache if cold else lambda: warm_page_cache(src, dst)
    with tempfile.TemporaryDirectory(prefix="zvbench-") as tmp:
        work = Path(tmp)
        (work / "rclone.conf").write_text("")
        for tool in [] if cold else tools:  # warm-up: every tool reads everything once
            warm = run_tool(tool, src, dst, work)
            print(f"[{name}] warm  {tool.name:30s} {warm.seconds:8.2f} s", flush=True)
            if not warm.identical:
                out = (work / "out.txt").read_text()[:2000]
                print(f"    verdict not identical; output:\n{out}")
        for i in range(runs):
            for tool, result in zip(tools, results, strict=True):
                prepare()
                run = run_tool(tool, src, dst, work)
                result.runs.append(run)
                print(
                    f"[{name}] run {i + 1} {tool.name:30s} {run.seconds:8.2f} s"
                    f"  cpu {run.cpu_seconds:7.2f} s  (load {run.load1:.1f})",
                    flush=True,
                )
                if not run.identical:
                    print(f"    verdict not identical:\n{(work / 'out.txt').read_text()[:2000]}")
    return results


def render(name: str, description: str, results: list[ToolResult]) -> str:
    base = results[0].median
    lines = [
        f"corpus {name}: {description}",
        f"{'tool':30s} {'median s':>9s} {'ratio':>7s} {'CPU s':>8s} {'CPU ratio':>9s} "
        f"{'peak RSS MB':>12s}  identical",
    ]
    base_cpu = results[0].median_cpu
    for r in results:
        lines.append(
            f"{r.tool:30s} {r.median:9.2f} {r.median / base:7.2f} {r.median_cpu:8.2f} "
            f"{r.median_cpu / base_cpu:9.2f} {r.peak_rss_mb:12.1f}  "
            f"{'yes' if r.identical else 'NO'}"
        )
    return "\n".join(lines)


# (zverify row, peer row, target): zverify's median over the peer's must be at most the target
# (hot cache).  Issue 48: the full profile and BLAKE3 at 0.9 of the fastest content-only peer.
TARGETS = [
    ("zverify", "xxhsum -H2 (find|sort|xargs)", 0.9),
    ("zverify --profile content", "xxhsum -H2 (find|sort|xargs)", 0.9),
    ("zverify --quick rsync-a", "rsync -an", 1.0),
    ("zverify blake3", "b3sum (find|sort|xargs)", 0.9),
]


def target_rows(results: list[ToolResult]) -> list[dict[str, object]]:
    """The target pairs both of whose rows ran, as zverify / peer wall-time ratios."""
    by_name = {r.tool: r for r in results}
    rows: list[dict[str, object]] = []
    for ours, theirs, target in TARGETS:
        if ours in by_name and theirs in by_name:
            ratio = by_name[ours].median / by_name[theirs].median
            # rsync -an over three large files spends under the clock's 10 ms of CPU
            peer_cpu = by_name[theirs].median_cpu
            cpu = by_name[ours].median_cpu / peer_cpu if peer_cpu > 0 else None
            rows.append(
                {"zverify": ours, "peer": theirs, "ratio": ratio, "cpu_ratio": cpu,
                 "target": target, "met": ratio <= target}
            )  # fmt: skip
    return rows


def _ratio_text(ratio: object) -> str:
    return f"{ratio:6.2f}" if isinstance(ratio, float) else f"{'n/a':>6s}"


def render_targets(rows: list[dict[str, object]]) -> str:
    lines = [f"{'zverify / peer (wall)':60s} {'ratio':>6s} {'CPU':>6s} {'target':>7s}  met"]
    for row in rows:
        pair = f"{row['zverify']} / {row['peer']}"
        lines.append(
            f"{pair:60s} {row['ratio']:6.2f} {_ratio_text(row['cpu_ratio'])} "
            f"{row['target']:7.2f}  {'yes' if row['met'] else 'NO'}"
        )
    return "\n".join(lines)


def syscalls_per_file(tool: Tool, src: Path, dst: Path, work: Path, files: int) -> dict[str, float]:
    """One run of the tool under `strace -f -c`: system calls per regular file and side, by
    name (start-up included, which is noise on corpora of thousands of files)."""
    env = dict(os.environ, SRC=str(src), DST=str(dst), WORK=str(work), ZVERIFY=str(ZVERIFY_SCRIPT))
    env["RCLONE_CONFIG"] = str(work / "rclone.conf")
    log = work / "strace.txt"
    subprocess.run(
        ["strace", "-f", "-c", "-o", str(log), "bash", "-c", tool.command],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    counts: dict[str, float] = {}
    for line in log.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[3].isdigit() and fields[-1].isidentifier():
            counts[fields[-1]] = int(fields[3]) / (2 * files)
    return counts


def render_syscalls(table: dict[str, dict[str, float]]) -> str:
    names = ["newfstatat", "openat", "read", "pread64", "preadv2", "fadvise64", "flistxattr",
             "llistxattr", "close", "getdents64", "futex"]  # fmt: skip
    head = f"{'calls per file and side':30s} {'total':>6s} " + " ".join(
        f"{n[:10]:>10s}" for n in names
    )
    lines = [head]
    for tool, counts in table.items():
        cells = " ".join(f"{counts.get(n, 0):10.2f}" for n in names)
        lines.append(f"{tool:30s} {counts.get('total', 0):6.2f} {cells}")
    return "\n".join(lines)


def bench_syscalls(src: Path, dst: Path, tools: list[Tool]) -> dict[str, dict[str, float]]:
    files = sum(len(names) for _d, _s, names in os.walk(src))
    with tempfile.TemporaryDirectory(prefix="zvbench-") as tmp:
        work = Path(tmp)
        (work / "rclone.conf").write_text("")
        return {t.name: syscalls_per_file(t, src, dst, work, files) for t in tools}


def tree_stats(src: Path) -> dict[str, int]:
    entries = files = 0
    for _dirpath, dirnames, filenames in os.walk(src):
        entries += len(dirnames) + len(filenames)
        files += len(filenames)
    return {"entries": entries, "du_bytes": _du_bytes(str(src))}


def code_version() -> dict[str, str]:
    """Which zverify was measured: commit, uncommitted changes, and the installed build."""

    def git(*argv: str) -> str:
        out = subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True)
        return out.stdout.strip()

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty_files": str(len(git("status", "--porcelain", "--untracked-files=no").splitlines())),
        "sources_sha256": source_digest(),  # names the venv of bench/installed.py
        "script": str(ZVERIFY_SCRIPT),
    }


def environment() -> dict[str, object]:
    def version(argv: list[str]) -> str:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except OSError:
            return "missing"
        return (out.stdout or out.stderr).strip().splitlines()[0]

    mem = Path("/proc/meminfo").read_text().split("\n")[0]
    return {
        "cpus": os.cpu_count(),
        "memory": mem,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "rsync": version(["rsync", "--version"]),
        "b3sum": version(["b3sum", "--version"]),
        "xxhsum": version(["xxhsum", "--version"]),
        "hashdeep": version(["hashdeep", "-V"]),
        "rclone": version(["rclone", "version"]),
    }


def add_corpus_arguments(ap: argparse.ArgumentParser) -> None:
    """The options every peer benchmark over these corpora takes (manifest_vs_peers too)."""
    ap.add_argument("--quick", action="store_true", help="20k files, 3 x 256 MiB, /usr/share")
    ap.add_argument("--corpus", action="append", choices=["small", "large", "usr"])
    ap.add_argument("--runs", type=int, default=3, help="timed runs per tool (median)")
    ap.add_argument("--scratch", type=Path, default=Path("/var/tmp/zverify-bench"))


def require_gnu_time() -> None:
    """Peak RSS and CPU time of a whole command come from GNU time's %M %U %S."""
    if not Path("/usr/bin/time").exists():
        raise SystemExit("needs GNU time as /usr/bin/time (apt-get install time)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_corpus_arguments(ap)
    ap.add_argument("--tools", help="comma-separated subset of tool names (zverify always runs)")
    ap.add_argument("--cold", action="store_true", help="drop the page cache before every run")
    ap.add_argument("--output", type=Path)
    ap.add_argument("--build-only", action="store_true", help="make the corpora, time nothing")
    ap.add_argument(
        "--syscalls", action="store_true", help="also count system calls per file (strace -c)"
    )
    args = ap.parse_args()
    if args.output is None:
        args.output = RESULTS.with_name("latest-cold.json") if args.cold else RESULTS
    if args.cold and os.geteuid() != 0:
        raise SystemExit("--cold drops the page cache: run as root")

    global ZVERIFY_SCRIPT
    ZVERIFY_SCRIPT = installed_zverify(args.scratch)
    scratch = args.scratch / ("quick" if args.quick else "full")
    scratch.mkdir(parents=True, exist_ok=True)
    specs = corpora(args.quick, scratch)
    tools = TOOLS
    if args.tools:
        wanted = {t.strip() for t in args.tools.split(",")}
        tools = [t for t in TOOLS if t.name == "zverify" or t.name in wanted]
    require_gnu_time()
    for exe in ("rsync", "b3sum", "xxhsum", "hashdeep", "rclone"):
        if shutil.which(exe) is None:
            print(f"WARNING: {exe} not found; its row will say NO", file=sys.stderr)
    report: dict[str, object] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "cache": "cold (dropped before every run)" if args.cold else "hot (read before every run)",
        "runs": args.runs,
        "environment": environment(),
        "zverify": code_version(),
        "corpora": {},
    }
    print(f"zverify under test: {report['zverify']}", flush=True)
    tables = []
    for name in args.corpus or list(specs):
        corpus = specs[name]
        src, dst = ensure_corpus(corpus, scratch)
        if args.build_only:
            continue
        results = bench_corpus(name, src, dst, args.runs, tools, args.cold)
        now = code_version()
        if now != report["zverify"]:
            print(f"WARNING: zverify changed during the run: now {now}", file=sys.stderr)
            report.setdefault("zverify_changed", []).append({"after": name, **now})  # type: ignore[attr-defined]
        targets = target_rows(results)
        table = render(name, corpus.description, results)
        if targets:
            table += "\n\n" + render_targets(targets)
        calls = bench_syscalls(src, dst, tools) if args.syscalls else {}
        if calls:
            table += "\n\n" + render_syscalls(calls)
        print("\n" + table + "\n", flush=True)
        tables.append(table)
        report["corpora"][name] = {  # type: ignore[index]
            "description": corpus.description,
            "params": corpus.params,
            "src": str(src),
            "dst": str(dst),
            "tree": tree_stats(src),
            "targets": targets,
            "syscalls_per_file": calls,
            "results": [
                {
                    "tool": r.tool,
                    "note": r.note,
                    "command": next(t.command for t in tools if t.name == r.tool),
                    "median_s": r.median,
                    "ratio_to_zverify": r.median / results[0].median,
                    "median_cpu_s": r.median_cpu,
                    "cpu_ratio_to_zverify": r.median_cpu / results[0].median_cpu,
                    "peak_rss_mb": r.peak_rss_mb,
                    "identical": r.identical,
                    "runs": [asdict(x) for x in r.runs],
                }
                for r in results
            ],
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n")
    print("\n\n".join(tables))
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
