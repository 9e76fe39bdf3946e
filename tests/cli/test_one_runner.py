"""The rule of tests/cli/console.py, checked: no test runs the CLI any other way."""

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# `python -m zverify` runs whatever checkout is on sys.path, and a sub-app's click command
# skips the root handler (zverify.cli.run) and with it the exit code rule.
OTHER_WAYS = re.compile(
    r"""["']-m["'],\s*["']zverify["']"""  # python -m zverify
    r"|standalone_mode\s*=|\.main\(args="  # a click command called directly
    r"|from zverify\.cli import run as"  # the in-process handler outside console.py
)
# The bare name on PATH, which may be another install than this checkout's (console.py checks
# that it is): an argv list starting with it, over lines too, or a look-up of it.  Not
# sys.argv of an in-process run, nor a parametrize id.
BARE = re.compile(
    r"""(?<!sys\.argv = )(?<!ids=)\[\s*["']zverify["']\s*[,\]]|which\(\s*["']zverify["']"""
)

# Where the installed script cannot be the one run: the ZFS host (the VM's guest or a
# native host) runs this checkout with its own Python, and has no console script of ours.
ELSEWHERE = {"zfs/fixtures.py"}
RUNNER = Path(__file__).with_name("console.py")  # the one place that looks the script up


def test_no_test_runs_the_cli_around_the_console_runners() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if str(path.relative_to(TESTS)) in ELSEWHERE or path in (Path(__file__), RUNNER):
            continue
        text = path.read_text()
        lines = text.splitlines()
        hits = [n for n, line in enumerate(lines, 1) if OTHER_WAYS.search(line)]
        hits += [text.count("\n", 0, hit.start()) + 1 for hit in BARE.finditer(text)]
        found += [f"{path.relative_to(TESTS)}:{n}: {lines[n - 1].strip()}" for n in sorted(hits)]
    assert not found, "run the CLI through tests/cli/console.py:\n" + "\n".join(found)
