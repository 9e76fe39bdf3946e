"""A ledger or head holding what no append writes (adversarial-4 H3), through the installed
`zverify`: JSON nested deeper than the parser follows, numbers like 1e400, counts that are
not integers, fields of the wrong type.  Each used to crash scrub, check and prune with a
traceback (RecursionError, OverflowError); each is now one line naming the ledger file (and
line), exit 2."""

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import zverify
from tests.cold.proof.test_check import FULL_S1
from tests.cold.proof.test_scrub import HEAD, LEDGER, _forge, _lines, archive, scrub

COMMANDS = (["scrub"], ["check"], ["prune"])


def refused(root: Path, named: str) -> None:
    """scrub, check and prune: exit 2, one line on stderr naming `named`, no traceback."""
    for command in COMMANDS:
        done = zverify("cold", *command, "-q", str(root))
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
        assert len(done.stderr.splitlines()) == 1 and named in done.stderr, done.stderr


def test_a_ledger_line_nested_100000_deep(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    (root / LEDGER).write_text("[" * 100_000 + "\n")
    refused(root, f"{LEDGER}: line 1: JSON nested too deeply")


@pytest.mark.parametrize(
    "head",
    [
        "[" * 4000,
        '{"lines": 1e400, "last": "x"}',
        '{"lines": 1.0, "last": "%s"}',
        '{"lines": true, "last": "%s"}',
        '{"lines": "1", "last": "%s"}',
        '{"lines": -1, "last": "%s"}',
        '{"lines": 1, "last": 7}',
        '{"lines": 1, "last": "%s", "appending": [1]}',
        '{"lines": 1, "last": "%s", "appending": {"lines": 1e400, "last": "%s"}}',
        '{"lines": 1, "last": "%s", "appending": {"lines": 0, "last": "%s"}}',
        '{"lines": 1, "last": "%s", "extra": 1}',
        "\xff\xfe",
    ],
)
def test_a_head_that_no_append_writes(tmp_path: Path, head: str) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    assert scrub(root)[0] == 0
    last = hashlib.sha256(_lines(root)[-1]).hexdigest()
    text = head.replace("%s", last)
    (root / HEAD).write_bytes(text.encode("latin-1"))
    refused(root, HEAD)


def _rechain(root: Path, edit: dict[str, Any]) -> None:
    """The first record edited, every prev and the head recomputed: only the record's own
    values can be wrong ("@1e400" stands for the number JSON cannot write from Python)."""
    _forge(root, edit, lambda text: text.replace('"@1e400"', "1e400"))


@pytest.mark.parametrize(
    "edit",
    [
        {"size": "@1e400"},  # a float as big as infinity
        {"size": 1.5},
        {"ino": "@1e400"},
        {"dev": -1},
        {"mtime_ns": True},
        {"ctime_ns": "1"},
        {"archive": ["a"]},
        {"time": "2026-13-45T00:00:00+00:00"},
    ],
)
def test_a_ledger_value_that_no_append_writes(tmp_path: Path, edit: dict[str, Any]) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    assert scrub(root)[0] == 0
    _rechain(root, edit)
    refused(root, f"{LEDGER}: line 1")
