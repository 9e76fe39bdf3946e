"""Long-running fuzz of zverify's parsers of untrusted input, reporting cases, crashes and
peak RSS per parser.

Run by hand from the repository root (never collected by the test suite):

    nice -n 19 python bench/fuzz_parsers.py [--minutes 30] [--parsers stream,nvlist,token,manifest]
                                            [--crash-dir /tmp/zverify-fuzz] [--seed N]
                                            [--json bench/results/fuzz.json]

Parsers (targets and inputs in tools/fuzzing/sendstream.py and tools/fuzzing/manifest.py):

* stream   — the C send-stream scanner through verify_stream(), then every renderer of
             its report (text and JSON of verify and info);
* nvlist   — zverify.sendstream.nvlist.unpack, whole and with the validator's Keep specs
             and value limits (XDR and NATIVE, both byte orders);
* token    — zverify.sendstream.token.decode_token (mutated text, and mutated nvlists
             packed with a correct checksum so the decoder is reached);
* manifest — zverify.trees.open.manifest_side on native manifests (with the filter a
             header carries, run through the C filter), mtree specs, hashdeep lists and
             BagIt bags, every entry read.

hypothesis generates the inputs (mutations of valid seeds aimed at length, count and
nesting fields), batch after batch with fresh seeds until the time is up.  Each parser runs
in its own child process, so its peak RSS (getrusage) is its own; --minutes is shared
equally between the parsers.  A crash is any exception other than the parser's documented
error type (NvlistError/NvlistLimitError, TokenError, ManifestError; verify_stream never
raises), a broken invariant (AssertionError) or a case running over 60 s; the first input
of each distinct crash is saved in --crash-dir.  Exit 1 when anything crashed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PARSERS = ("stream", "nvlist", "token", "manifest")
BATCH = 500  # examples per hypothesis run
CASE_TIMEOUT = 60.0


class _TimeUp(BaseException):
    """The child's time is over (raised out of the hypothesis run)."""


class _Hang(BaseException):
    """One case ran over CASE_TIMEOUT."""


def _target(name: str) -> tuple[Callable[..., Any], Callable[[Any], None]]:
    sys.path.insert(0, str(REPO))
    if name == "manifest":
        from tools.fuzzing.manifest import manifest_inputs, run_manifest

        return manifest_inputs, run_manifest
    from tools.fuzzing.sendstream import TARGETS

    return TARGETS[name]


def _crash_key(err: BaseException) -> str:
    """Type and innermost frame of zverify (or of the target): one key per distinct bug."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/zverify/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(err).__name__} at {where}: {str(err)[:160]}"


def child(name: str, seconds: float, crash_dir: Path, seed: int | None) -> dict[str, Any]:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed

    inputs, run = _target(name)
    strategy = inputs()
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    crashes: dict[str, dict[str, Any]] = {}
    cases = 0
    end = time.monotonic() + seconds

    def on_alarm(signum: int, frame: object) -> None:
        raise _Hang()

    signal.signal(signal.SIGALRM, on_alarm)

    def one(value: Any) -> None:
        nonlocal cases
        if time.monotonic() >= end:
            raise _TimeUp()
        cases += 1
        signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT)
        try:
            run(value)
        except _Hang as err:
            _record(crashes, f"hang over {CASE_TIMEOUT:.0f} s", err, value, name, crash_dir)
        except Exception as err:  # a crash: recorded, and the fuzzing goes on
            _record(crashes, _crash_key(err), err, value, name, crash_dir)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    batches = 0
    while time.monotonic() < end:
        test = settings(
            max_examples=BATCH,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )(given(strategy)(one))
        if seed is not None:
            test = fixed_seed(seed + batches)(test)
        batches += 1
        try:
            test()
        except _TimeUp:
            break
    return {
        "parser": name,
        "cases": cases,
        "crashes": sum(c["count"] for c in crashes.values()),
        "distinct": crashes,
        "seconds": round(seconds, 1),
        "baseline_rss_mb": round(baseline_kb / 1024, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _record(
    crashes: dict[str, dict[str, Any]],
    key: str,
    err: BaseException,
    value: Any,
    name: str,
    crash_dir: Path,
) -> None:
    if key in crashes:
        crashes[key]["count"] += 1
        return
    crash_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    saved = crash_dir / f"{name}-{digest}"
    saved.with_suffix(".txt").write_text(
        f"{key}\n\n{''.join(traceback.format_exception(err))}\ninput:\n{value!r}\n"
    )
    if isinstance(value, bytes):
        saved.with_suffix(".bin").write_bytes(value)
    crashes[key] = {"count": 1, "saved": str(saved.with_suffix(".txt"))}
    print(f"[{name}] crash: {key} (input in {saved}.txt)", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="total, shared by the parsers")
    ap.add_argument("--parsers", default=",".join(PARSERS))
    ap.add_argument("--crash-dir", type=Path, default=Path("/tmp/zverify-fuzz"))
    ap.add_argument(
        "--seed", type=int, default=None, help="fixed hypothesis seeds (default random)"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        result = child(args.child, args.seconds, args.crash_dir, args.seed)
        print(json.dumps(result))
        return 0

    names = [n for n in args.parsers.split(",") if n]
    unknown = set(names) - set(PARSERS)
    if unknown:
        ap.error(f"unknown parser(s): {', '.join(sorted(unknown))}")
    each = args.minutes * 60 / len(names)
    results = []
    for name in names:
        cmd = [sys.executable, __file__, "--child", name, "--seconds", str(each)]
        cmd += ["--crash-dir", str(args.crash_dir)]
        if args.seed is not None:
            cmd += ["--seed", str(args.seed)]
        print(f"fuzzing {name} for {each / 60:.1f} min ...", file=sys.stderr, flush=True)
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        sys.stderr.write(done.stderr)
        if done.returncode != 0 or not done.stdout.strip():
            results.append({"parser": name, "error": f"child exited {done.returncode}"})
            continue
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))

    print(
        f"{'parser':<10} {'cases':>10} {'crashes':>8} {'distinct':>8} {'peak RSS':>10} {'time':>8}"
    )
    for r in results:
        if "error" in r:
            print(f"{r['parser']:<10} {r['error']}")
            continue
        print(
            f"{r['parser']:<10} {r['cases']:>10,} {r['crashes']:>8} {len(r['distinct']):>8} "
            f"{r['peak_rss_mb']:>7.1f} MB {r['seconds'] / 60:>6.1f} m"
        )
        for key, info in r["distinct"].items():
            print(f"    {info['count']} x {key}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "when": time.time()}, indent=2))
    crashed = any("error" in r or r["crashes"] for r in results)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
