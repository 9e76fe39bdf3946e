"""Hostile files inside an archive, through the INSTALLED `zverify cold ...`: a sidecar of
JSON nested past any parser's stack (finding H4 of adversarial-3) and parity made of packet
headers that each claim the rest of the file (M2).  Each must be reported like any other
unreadable file, never crash a command or stall it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cold.standin import plain_env, run
from tests.cold.test_parity import FULL, archive, check, file_doc, flip

NESTED = "[" * 200_000  # deeper than Python's recursion limit: json.loads raises RecursionError


def _outcome(root: Path, command: str) -> tuple[int, str, str]:
    done = run("cold", command, str(root), env=plain_env())
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("command", ["check", "prune", "parity", "repair"])
def test_a_deeply_nested_sidecar_is_an_unreadable_sidecar(tmp_path: Path, command: str) -> None:
    """The same outcome as a sidecar that is not JSON at all, which every command handles."""
    results = {}
    for label, text in (("nested", NESTED), ("garbage", "{not json")):
        (tmp_path / label).mkdir()
        root = archive(tmp_path / label, 30)
        if command == "repair":  # so that repair reads the sidecar to prove its rebuild
            flip(root / FULL, 5000)
        (root / f"{FULL}.json").write_text(text)
        results[label] = _outcome(root, command)
    code, out, _err = results["nested"]
    assert code == results["garbage"][0], (results, command)
    if command == "check":
        assert code == 1
        line = f"{FULL}.json cannot be read: JSON nested too deeply (over 32 levels)"
        assert line in out, out
    if command == "repair":
        assert code == 0 and f"repaired  {FULL}" in out, out


def test_the_json_report_names_the_sidecar(tmp_path: Path) -> None:
    root = archive(tmp_path, 10)
    (root / f"{FULL}.json").write_text(NESTED)
    code, doc = check(root)
    (problem,) = file_doc(doc, FULL)["problems"]
    assert code == 1 and problem["kind"] == "sidecar-mismatch"
    assert problem["message"].startswith(f"{FULL}.json cannot be read"), problem
