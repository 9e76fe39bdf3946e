"""Runs SIGKILLed exactly between the ledger's append and its head (adversarial-4 H2), through
the installed `zverify` under `strace -e inject=rename:signal=KILL`: the kill lands on a
rename(2) of the head, the very moment a systemd TimeoutStopSec or the OOM killer could.  Two
or three such kills in a row used to leave the head two appends behind, and every later
scrub, check and prune exited 2 for good ("lines added by hand?").  Now every kill leaves a
ledger that the next scrub, check and prune accept (exit 0 on a good archive), and the
temporary heads the kills left are removed."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import console_script, zverify
from tests.cold.proof.test_check import FULL_S1, INC_S1_S2
from tests.cold.proof.test_scrub import HEAD, LEDGER, _lines, archive


def killed_at_rename(nth: int, *args: str) -> int:
    """`zverify ARGS`, SIGKILLed by strace at its nth rename(2) (it must get that far)."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    inject = f"inject=rename:signal=KILL:when={nth}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"LC_ALL": "C.UTF-8"}
    done = subprocess.run(
        ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=rename", "-e", inject,
         console_script(), *args],
        capture_output=True, text=True, cwd="/", env=env, check=False,
    )  # fmt: skip
    if "ptrace" in done.stderr or "Operation not permitted" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    return done.returncode


def head_lines(root: Path) -> int:
    return int(json.loads((root / HEAD).read_text())["lines"])


def temporary_heads(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(HEAD + "."))


def still_works(root: Path) -> None:
    """The next scrub, check and prune: exit 0, each one line at most on stderr."""
    for command in (["scrub"], ["check"], ["prune"]):
        done = zverify("cold", *command, "-q", str(root))
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    assert temporary_heads(root) == []


def head_counts_every_line(root: Path) -> bool:
    head = json.loads((root / HEAD).read_text())
    return "appending" not in head and head["lines"] == len(_lines(root))


@pytest.mark.parametrize("kills", [2, 3])
def test_kills_after_the_append_before_its_head_in_a_row(tmp_path: Path, kills: int) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    assert zverify("cold", "scrub", "-q", str(root)).returncode == 0
    for i in range(kills):
        # the rename of the head that counts the line just appended and fsynced: the first
        # while the head counts every line (the repro's), else the second (the head is
        # brought up to date first)
        nth = 1 if head_counts_every_line(root) else 2
        code = killed_at_rename(nth, "cold", "scrub", "-q", str(root))
        assert code in (-signal.SIGKILL, 128 + signal.SIGKILL), f"kill {i + 1}: exit {code}"
        assert len(_lines(root)) == 2 + i > head_lines(root), "not killed after the append"
    assert temporary_heads(root) != []  # the last kill's, left for the next append
    still_works(root)


@pytest.mark.parametrize("kills", [2, 3])
def test_the_repro_kills_at_the_first_rename_in_a_row(tmp_path: Path, kills: int) -> None:
    """adversarial-4's h2_ledger_kills.sh: a kill at each run's first rename, whatever it
    is (the head after the append, or the head brought up to date before it)."""
    root = archive(tmp_path / "cold", FULL_S1)
    assert zverify("cold", "scrub", "-q", str(root)).returncode == 0
    for i in range(kills):
        code = killed_at_rename(1, "cold", "scrub", "-q", str(root))
        assert code in (-signal.SIGKILL, 128 + signal.SIGKILL), f"kill {i + 1}: exit {code}"
    after_kills = len(_lines(root))
    still_works(root)  # (before: "line 3: ... lines added by hand?", exit 2, for good)
    # the first kill's line; the next runs died bringing the head up, before appending
    assert after_kills == 2


def test_a_check_killed_after_appending_two_lines_at_once(tmp_path: Path) -> None:
    """A check records every file in one append: its head is then two lines behind."""
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    assert zverify("cold", "scrub", "-q", str(root)).returncode == 0
    for _ in range(2):
        code = killed_at_rename(2, "cold", "check", "-q", str(root))
        assert code in (-signal.SIGKILL, 128 + signal.SIGKILL), f"exit {code}"
    assert len(_lines(root)) == 6 and head_lines(root) == 4
    still_works(root)


def test_lines_beyond_the_append_the_head_names_are_refused(tmp_path: Path) -> None:
    """What the head allows is one append, not any number of lines: one more, added after a
    killed append (a copy of the last line), is refused naming it."""
    root = archive(tmp_path / "cold", FULL_S1)
    assert zverify("cold", "scrub", "-q", str(root)).returncode == 0
    assert killed_at_rename(1, "cold", "scrub", "-q", str(root)) != 0  # after its append
    assert killed_at_rename(2, "cold", "scrub", "-q", str(root)) != 0  # the same, head behind
    last = _lines(root)[-1]
    chained = {**json.loads(last), "prev": hashlib.sha256(last).hexdigest()}
    with open(root / LEDGER, "ab") as f:  # its chain holds: only the head tells
        f.write((json.dumps(chained, separators=(",", ":")) + "\n").encode())
    done = zverify("cold", "scrub", "-q", str(root))
    assert done.returncode == 2 and f"{LEDGER}: line 4" in done.stderr, done.stderr
    assert "an append up to line 3" in done.stderr
    assert len(done.stderr.splitlines()) == 1
