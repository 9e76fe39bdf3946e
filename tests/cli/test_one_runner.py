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

# Where the installed script cannot be the one run: the ZFS host (the VM's guest or a
# native host) runs this checkout with its own Python, and has no console script of ours.
ELSEWHERE = {"zfs/fixtures.py"}


def test_no_test_runs_the_cli_around_the_console_runners() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if str(path.relative_to(TESTS)) not in ELSEWHERE and path != Path(__file__)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OTHER_WAYS.search(line)
    ]
    assert not found, "run the CLI through tests/cli/console.py:\n" + "\n".join(found)
