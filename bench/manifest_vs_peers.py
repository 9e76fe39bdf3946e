"""Whole-command timing of `zverify manifest` (record a tree, verify a copy later) against
the tools people already use for that: hashdeep, mtree and b3sum.

Run by hand (never collected by the test suite):

    python bench/manifest_vs_peers.py [--quick] [--corpus small|large|usr] [--runs 3]
                                      [--scratch /var/tmp/zverify-bench] [--snapshot]

The corpora are the ones of compare_vs_peers.py (same parameters, same cache under
the scratch directory, built there when missing): SRC plus DST = `cp -a SRC DST`.
For every corpus:

  record     write a manifest of SRC: zverify (XXH3-128, BLAKE3, and .zst), hashdeep,
             mtree, b3sum;
  verify     check DST against that manifest: `zverify compare MANIFEST DST`,
             hashdeep audit, `mtree -f`, `b3sum -c`;
  reference  `zverify compare SRC DST` (live, both trees), and zverify's fixed cost
             (manifest of an empty tree, compare of two empty trees).

Each tool runs once to warm the page cache, then N rounds run every tool in turn
(record, then verify, then reference; every file of both trees is read again before
each timed run, as compare_vs_peers does).  Every command must end with its expected
exit status (and, for the verifiers, its own "passed" verdict): a tool that fails is
reported as FAILED and gets no ratio.  The report gives medians, the ratio
tool / zverify per group (> 1 means zverify is faster), the "one tree" ratio
manifest / (live compare / 2) (the target is <= 1.10), and the size per entry of
every tool's output, plain and zstd-compressed.  Results go to
bench/results/manifest.json.  --snapshot times a copy of zverify/ taken at the start,
for when the working tree is being edited or rebuilt meanwhile.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import zstandard
from compare_vs_peers import (
    REPO,
    Run,
    Tool,
    ToolResult,
    add_corpus_arguments,
    code_version,
    corpora,
    ensure_corpus,
    environment,
    require_gnu_time,
    run_tool,
    tree_stats,
    warm_page_cache,
)

RESULTS = REPO / "bench" / "results" / "manifest.json"
ZSTD_LEVEL = 3  # what `zverify manifest -o X.zst` uses (zverify/manifest/files.py)
TARGET = 1.10  # manifest write within 10% of compare reading one tree

ZV = f"{shlex.quote(sys.executable)} -m zverify"


def _rc0(rc: int, _out: str) -> bool:
    return rc == 0


def _written(command: str, output: str) -> str:
    """The command, and then its output file must exist and not be empty."""
    return f'{command} && test -s "$WORK/{output}"'


# Outputs, all in $WORK: the record tools write them, the verify tools read them.
ZVM, ZVM_B3, ZVM_ZST = "m.zvm", "m-b3.zvm", "m.zvm.zst"
KNOWN, SPEC, B3SUMS = "known.txt", "spec", "B3SUMS"

# Row i of RECORD and row i of VERIFY are one tool's two halves.
RECORD = [
    Tool(
        "zverify manifest",
        _written(f'{ZV} manifest -q "$SRC" -o "$WORK/{ZVM}"', ZVM),
        _rc0,
        "XXH3-128, native format; all cores",
    ),
    Tool(
        "zverify manifest blake3",
        _written(f'{ZV} manifest -q --hash blake3 "$SRC" -o "$WORK/{ZVM_B3}"', ZVM_B3),
        _rc0,
    ),
    Tool(
        "zverify manifest .zst",
        _written(f'{ZV} manifest -q "$SRC" -o "$WORK/{ZVM_ZST}"', ZVM_ZST),
        _rc0,
        f"XXH3-128, zstd level {ZSTD_LEVEL}",
    ),
    Tool(
        "hashdeep -r -l",
        _written(f'cd "$SRC" && hashdeep -r -l . > "$WORK/{KNOWN}"', KNOWN),
        _rc0,
        "md5+sha256 (its default), a file per thread; regular files, follows symlinks",
    ),
    Tool(
        "mtree -c -K sha256",
        _written(f'mtree -c -K sha256 -p "$SRC" > "$WORK/{SPEC}"', SPEC),
        _rc0,
        "mtree-netbsd; default keywords (type, mode, owner, nlink, size, mtime) + sha256",
    ),
    Tool(
        "b3sum (find|sort|xargs)",
        _written(
            f'set -o pipefail; cd "$SRC" && find . -type f -print0 | sort -z '
            f'| xargs -0 b3sum > "$WORK/{B3SUMS}"',
            B3SUMS,
        ),
        _rc0,
        "regular files only, content and names",
    ),
]


def _mtree_passed(rc: int, out: str) -> bool:
    # mtree -f exits 2 on a mismatch and prints one block per differing entry
    # ("extra: x", "missing: x", "x: size (...)"); a clean pass prints nothing.
    return rc == 0 and not out.strip()


VERIFY = [
    Tool(
        "zverify compare m.zvm DST",
        f'{ZV} compare -q "$WORK/{ZVM}" "$DST"',
        _rc0,
        "profile full: content, type, symlinks, mode, owner, mtime, xattrs, hardlinks",
    ),
    Tool("zverify compare m-b3.zvm DST", f'{ZV} compare -q "$WORK/{ZVM_B3}" "$DST"', _rc0),
    Tool("zverify compare m.zvm.zst DST", f'{ZV} compare -q "$WORK/{ZVM_ZST}" "$DST"', _rc0),
    Tool(
        "hashdeep -a -k (audit)",
        f'cd "$DST" && hashdeep -r -l -a -k "$WORK/{KNOWN}" .',
        lambda rc, out: rc == 0 and "Audit passed" in out,
        "content of regular files (and symlink targets); missing/extra/moved",
    ),
    Tool(
        "mtree -f spec",
        f'mtree -p "$DST" -f "$WORK/{SPEC}"',
        _mtree_passed,
        "content + type, mode, owner, nlink, size, mtime; extra/missing",
    ),
    Tool(
        "b3sum -c",
        f'cd "$DST" && b3sum -c "$WORK/{B3SUMS}"',
        _rc0,
        "content of the listed files; not extra files",
    ),
]

REFERENCE = [
    Tool(
        "zverify compare SRC DST (live)",
        f'{ZV} compare -q "$SRC" "$DST"',
        _rc0,
        "both trees concurrently, threads = cores per tree",
    ),
    Tool(
        "zverify manifest (empty tree)",
        _written(f'{ZV} manifest -q "$WORK/empty1" -o "$WORK/empty.zvm"', "empty.zvm"),
        _rc0,
        "fixed cost: interpreter, imports, header",
    ),
    Tool(
        "zverify compare (empty trees)",
        f'{ZV} compare -q "$WORK/empty1" "$WORK/empty2"',
        _rc0,
        "fixed cost",
    ),
]

GROUPS = {"record": RECORD, "verify": VERIFY, "reference": REFERENCE}
# What each record tool writes: deleted before each of its runs, so that a failed
# record cannot leave the previous round's file for its verifier to pass on.
OUTPUT_OF = {
    tool.name: name
    for tool, name in zip(RECORD, (ZVM, ZVM_B3, ZVM_ZST, KNOWN, SPEC, B3SUMS), strict=True)
}


# --------------------------------------------------------------------------- output sizes


def _count_zvm(text: str) -> int:
    return text.count("\n") - 2  # a header line, one line per entry, an "end" line


def _count_hashdeep(text: str) -> int:
    return sum(1 for ln in text.splitlines() if ln and not ln.startswith(("%%%%", "##")))


def _count_mtree(text: str) -> int:
    """Entries of an mtree spec: not comments, /set, /unset, "..", nor continuation lines."""
    entries, continued = 0, False
    for line in text.splitlines():
        stripped = line.strip()
        if continued:
            continued = stripped.endswith("\\")
            continue
        continued = stripped.endswith("\\")
        if stripped and not stripped.startswith(("#", "/set", "/unset")) and stripped != "..":
            entries += 1
    return entries


def _count_lines(text: str) -> int:
    return text.count("\n")


SIZES: list[tuple[str, str, Callable[[str], int]]] = [
    ("zverify .zvm (xxh3-128)", ZVM, _count_zvm),
    ("zverify .zvm (blake3)", ZVM_B3, _count_zvm),
    ("zverify .zvm.zst (xxh3-128)", ZVM_ZST, _count_zvm),
    ("hashdeep known.txt", KNOWN, _count_hashdeep),
    ("mtree spec", SPEC, _count_mtree),
    ("b3sum B3SUMS", B3SUMS, _count_lines),
]


@dataclass
class OutputSize:
    output: str
    file: str
    bytes: int  # as written (the .zst one: compressed)
    zstd_bytes: int  # compressed at ZSTD_LEVEL (the .zst one: as written)
    records: int  # entries/lines the tool wrote: what it covers
    bytes_per_entry: float  # over the tree's entries (the zverify manifest's count)
    bytes_per_record: float
    zstd_bytes_per_entry: float


def output_sizes(work: Path, good: set[str]) -> list[OutputSize]:
    """Sizes of the outputs in GOOD (written by a record tool that never failed)."""
    raw_zvm = (work / ZVM).read_bytes() if ZVM in good else b""
    entries = max(1, _count_zvm(raw_zvm.decode(errors="replace")))
    sizes = []
    for label, name, count in SIZES:
        path = work / name
        if name not in good or not path.exists():
            continue
        data = path.read_bytes()
        if name.endswith(".zst"):
            written, compressed = len(data), len(data)
            data = zstandard.ZstdDecompressor().stream_reader(data).read()
        else:
            written = len(data)
            compressed = len(zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data))
        records = count(data.decode(errors="replace"))
        sizes.append(
            OutputSize(
                label,
                name,
                written,
                compressed,
                records,
                written / entries,
                written / max(1, records),
                compressed / entries,
            )
        )
    return sizes


# --------------------------------------------------------------------------- running


@dataclass
class Row(ToolResult):
    """A tool's runs, plus its warm-up run: a command that failed once has failed."""

    warmup: Run | None = None

    @property
    def ok(self) -> bool:
        return self.warmup is not None and self.warmup.identical and self.identical

    @property
    def failure(self) -> str:
        every = ([self.warmup] if self.warmup else []) + self.runs
        bad = [r for r in every if not r.identical]
        if not bad:
            return ""
        codes = ",".join(sorted({str(r.exit_code) for r in bad}))
        return f"FAILED {len(bad)} of {len(every)} runs (exit {codes})"


def bench_corpus(
    name: str, src: Path, dst: Path, runs: int, groups: dict[str, list[Tool]]
) -> tuple[dict[str, list[Row]], list[OutputSize]]:
    results = {g: [Row(t.name, t.note) for t in tools] for g, tools in groups.items()}
    with tempfile.TemporaryDirectory(prefix="zvbench-manifest-") as tmp:
        work = Path(tmp)
        (work / "empty1").mkdir()
        (work / "empty2").mkdir()
        for group, tools in groups.items():  # warm-up: every tool reads everything once
            for tool, row in zip(tools, results[group], strict=True):
                _remove_output(tool, work)
                warm = row.warmup = run_tool(tool, src, dst, work)
                print(
                    f"[{name}] warm  {group:9s} {tool.name:32s} {warm.seconds:8.2f} s",
                    flush=True,
                )
                if not warm.identical:
                    out = (work / "out.txt").read_text(errors="replace")[:2000]
                    print(f"    FAILED (exit {warm.exit_code}); output:\n{out}", flush=True)
        for i in range(runs):
            for group, tools in groups.items():
                for tool, result in zip(tools, results[group], strict=True):
                    warm_page_cache(src, dst)
                    _remove_output(tool, work)
                    run = run_tool(tool, src, dst, work)
                    result.runs.append(run)
                    print(
                        f"[{name}] run {i + 1} {group:9s} {tool.name:32s} {run.seconds:8.2f} s"
                        f"  cpu {run.cpu_seconds:7.2f} s  (load {run.load1:.1f})"
                        f"{'' if run.identical else f'  FAILED (exit {run.exit_code})'}",
                        flush=True,
                    )
        good = {OUTPUT_OF[r.tool] for r in results.get("record", []) if r.ok}
        sizes = output_sizes(work, good)
    return results, sizes


def _remove_output(tool: Tool, work: Path) -> None:
    if tool.name in OUTPUT_OF:
        (work / OUTPUT_OF[tool.name]).unlink(missing_ok=True)


def one_tree(results: dict[str, list[Row]]) -> dict[str, float | None]:
    """manifest / (live compare / 2): the cost of recording one tree against the cost
    compare pays per tree.  Also on CPU time, and net of the fixed cost (interpreter,
    imports: the empty-tree runs), which dominates small corpora."""
    man, live, man0, cmp0 = results["record"][0], *results["reference"][:3]
    if not (man.ok and live.ok and man0.ok and cmp0.ok):
        return {"wall": None, "cpu": None, "wall_net_of_startup": None}
    net_live = (live.median - cmp0.median) / 2
    return {
        "wall": man.median / (live.median / 2),
        "cpu": man.median_cpu / (live.median_cpu / 2),
        "wall_net_of_startup": (man.median - man0.median) / net_live if net_live > 0 else None,
    }


def _ratios(group: str, row: Row, base: Row) -> tuple[float | None, float | None]:
    """tool / zverify (the group's first row), wall and CPU; none for a failed pair."""
    if group == "reference" or not (row.ok and base.ok):
        return None, None
    return row.median / base.median, row.median_cpu / base.median_cpu


def _fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def render(
    name: str,
    description: str,
    tree: dict[str, int],
    results: dict[str, list[Row]],
    sizes: list[OutputSize],
) -> str:
    lines = [
        f"corpus {name}: {description} ({tree['entries']:,} entries, "
        f"{tree['du_bytes'] / (1 << 20):,.0f} MiB)"
    ]
    for group, rows in results.items():
        base = rows[0]
        lines.append(
            f"{group:32s} {'median s':>9s} {'ratio':>7s} {'CPU s':>8s} {'CPU ratio':>9s} "
            f"{'peak RSS MB':>12s}  ok"
        )
        for r in rows:
            if not r.ok:  # no time for a failed command: it would read as fast
                lines.append(
                    f"  {r.tool:30s} {'failed':>9s} {'n/a':>7s} {'failed':>8s} {'n/a':>9s} "
                    f"{r.peak_rss_mb:12.1f}  {r.failure}"
                )
                continue
            ratio, cpu_ratio = _ratios(group, r, base)
            lines.append(
                f"  {r.tool:30s} {r.median:9.2f} "
                f"{'-' if group == 'reference' else _fmt_ratio(ratio):>7s} "
                f"{r.median_cpu:8.2f} "
                f"{'-' if group == 'reference' else _fmt_ratio(cpu_ratio):>9s} "
                f"{r.peak_rss_mb:12.1f}  yes"
            )
    ot = one_tree(results)
    lines.append(
        f"one tree: manifest / (live compare / 2) = {_fmt_ratio(ot['wall'])} wall, "
        f"{_fmt_ratio(ot['cpu'])} CPU; net of start-up (empty-tree runs) "
        f"{_fmt_ratio(ot['wall_net_of_startup'])} wall   [target <= {TARGET:.2f}]"
    )
    lines.append(
        f"{'output':32s} {'bytes':>13s} {'records':>9s} {'B/entry':>8s} {'B/record':>9s} "
        f"{'zstd-' + str(ZSTD_LEVEL) + ' B/entry':>15s}"
    )
    for s in sizes:
        lines.append(
            f"  {s.output:30s} {s.bytes:13,d} {s.records:9,d} {s.bytes_per_entry:8.1f} "
            f"{s.bytes_per_record:9.1f} {s.zstd_bytes_per_entry:15.1f}"
        )
    missing = [r.tool for r in results["record"] if not r.ok]
    lines.append(
        "  (B/entry: over the tree's entries, the zverify manifest's count; records: what "
        "the tool wrote)" + (f"; no size for failed {', '.join(missing)}" if missing else "")
    )
    return "\n".join(lines)


def package_digest() -> str:
    """Digest of what `python -m zverify` runs: every file of zverify/ (sources and the
    built extension), whatever git says.  Commits or edits elsewhere leave it alone."""
    h = hashlib.sha256()
    for path in sorted((REPO / "zverify").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def code_state() -> dict[str, str]:
    """code_version() (commit, dirty files, extension), plus the package digest."""
    return {**code_version(), "package_sha256": package_digest()}


def snapshot_zverify(dest: Path) -> dict[str, str]:
    """Copy the zverify package (with its built extension) to DEST and make every
    `python -m zverify` of this run import that copy: edits and rebuilds in the
    working tree during a long run then change nothing (and break nothing)."""
    before = code_state()
    shutil.copytree(
        REPO / "zverify", dest / "zverify", ignore=shutil.ignore_patterns("__pycache__")
    )
    if package_digest() != before["package_sha256"]:
        raise SystemExit("zverify changed while it was being copied; run again")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(dest) + (os.pathsep + old if old else "")
    # The tools run from REPO, and `python -m` would put the working directory (REPO,
    # with its zverify/) before PYTHONPATH; PYTHONSAFEPATH (-P, 3.11+) leaves it out.
    os.environ["PYTHONSAFEPATH"] = "1"
    where = subprocess.run(
        [sys.executable, "-c", "import zverify._zvcore as c; print(c.__file__)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not where.startswith(str(dest)):
        raise SystemExit(f"the snapshot is not what python imports: {where}")
    return {**before, "snapshot": str(dest)}


def tool_versions() -> dict[str, object]:
    env = environment()
    for pkg in ("mtree-netbsd", "hashdeep", "b3sum"):
        out = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", pkg],
            capture_output=True,
            text=True,
            check=False,
        )
        env[f"deb:{pkg}"] = out.stdout.strip() or "missing"
    return env


def has_fifo(root: Path) -> bool:
    out = subprocess.run(
        ["find", str(root), "-type", "p", "-print", "-quit"],
        capture_output=True,
        text=True,
        check=False,
    )
    return bool(out.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_corpus_arguments(ap)
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument(
        "--snapshot",
        action="store_true",
        help="time a copy of zverify/ taken at the start (the working tree may change meanwhile)",
    )
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    scratch = args.scratch / ("quick" if args.quick else "full")
    scratch.mkdir(parents=True, exist_ok=True)
    specs = corpora(args.quick, scratch)
    require_gnu_time()
    for exe, pkg in (("hashdeep", "hashdeep"), ("mtree", "mtree-netbsd"), ("b3sum", "b3sum")):
        if shutil.which(exe) is None:
            print(f"WARNING: {exe} not found (apt-get install {pkg}); its rows will FAIL")
    snapshot = tempfile.TemporaryDirectory(prefix="zvbench-zverify-") if args.snapshot else None
    started = snapshot_zverify(Path(snapshot.name)) if snapshot else code_state()
    report: dict[str, object] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "runs": args.runs,
        "environment": tool_versions(),
        "zverify": started,
        "corpora": {},
    }
    print(f"zverify under test: {report['zverify']}", flush=True)
    corpora_report: dict[str, object] = {}
    report["corpora"] = corpora_report
    changed: list[dict[str, str]] = []
    tables = []
    for name in args.corpus or list(specs):
        corpus = specs[name]
        src, dst = ensure_corpus(corpus, scratch)
        groups = dict(GROUPS)
        if has_fifo(src) or has_fifo(dst):  # hashdeep blocks opening a FIFO forever
            print(f"WARNING: [{name}] has FIFOs; hashdeep rows skipped", file=sys.stderr)
            groups = {g: [t for t in ts if "hashdeep" not in t.name] for g, ts in groups.items()}
        results, sizes = bench_corpus(name, src, dst, args.runs, groups)
        now = code_state()
        if snapshot is None and now["package_sha256"] != started["package_sha256"]:
            print(f"WARNING: zverify changed during the run: now {now}", file=sys.stderr)
            changed.append({"after": name, **now})
            report["zverify_changed"] = changed
        tree = tree_stats(src)
        table = render(name, corpus.description, tree, results, sizes)
        print("\n" + table + "\n", flush=True)
        tables.append(table)
        corpora_report[name] = {
            "description": corpus.description,
            "params": corpus.params,
            "src": str(src),
            "dst": str(dst),
            "tree": tree,
            "one_tree": one_tree(results),
            "target": TARGET,
            "groups": {
                group: [
                    {
                        "tool": r.tool,
                        "note": r.note,
                        "command": next(t.command for t in groups[group] if t.name == r.tool),
                        "median_s": r.median if r.ok else None,
                        "median_cpu_s": r.median_cpu if r.ok else None,
                        "ratio_to_zverify": _ratios(group, r, rows[0])[0],
                        "cpu_ratio_to_zverify": _ratios(group, r, rows[0])[1],
                        "peak_rss_mb": r.peak_rss_mb,
                        "ok": r.ok,
                        "failure": r.failure,
                        "warmup": asdict(r.warmup) if r.warmup else None,
                        "runs": [asdict(x) for x in r.runs],
                    }
                    for r in rows
                ]
                for group, rows in results.items()
            },
            "output_sizes": [asdict(s) for s in sizes],
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n")
    if snapshot is not None:
        snapshot.cleanup()
    print("\n\n".join(tables))
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
