"""`zverify stream verify|info|token` through the root handler, plus a real stdin pipe and a
terminal through the installed console script (tests/cli/console.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify, zverify_in_process
from tools.streamgen import full_stream, package, resume_token


def run(args: list[str]) -> tuple[int, str]:
    done = zverify_in_process("stream", *args)
    return done.returncode, done.stdout


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    good = full_stream()
    bad = bytearray(good)
    bad[700] ^= 1
    out = {}
    for name, data in (
        ("good", good),
        ("bad", bytes(bad)),
        ("pkg", package([("p/f@b", 2, 1), ("p/f@c", 3, 2)])),
    ):
        (tmp_path / name).write_bytes(data)
        out[name] = str(tmp_path / name)
    out["missing"] = str(tmp_path / "missing")
    return out


def test_verify_exit_codes(files) -> None:
    assert run(["verify", files["good"], files["pkg"]])[0] == 0
    rc, out = run(["verify", files["good"], files["bad"]])
    assert rc == 1 and "DAMAGED" in out and "offset" in out
    rc, out = run(["verify", files["good"], files["bad"], files["missing"]])
    assert rc == 2 and "UNREADABLE" in out


def test_verify_json(files) -> None:
    rc, out = run(["verify", "--json", files["good"], files["bad"]])
    doc = json.loads(out)
    assert rc == 1 and doc["valid"] is False
    good, bad = doc["files"]
    assert good["valid"] and not good["problems"]
    assert not bad["valid"]
    assert {"offset", "record", "message"} <= set(bad["problems"][0])


def test_info_json_guids_are_decimal_strings(files) -> None:
    rc, out = run(["info", "--json", files["pkg"]])
    doc = json.loads(out)
    assert rc == 0 and doc["kind"] == "incremental package"
    assert [(s["toname"], s["toguid"], s["fromguid"]) for s in doc["substreams"]] == [
        ("p/f@b", "2", "1"),
        ("p/f@c", "3", "2"),
    ]
    rc, out = run(["info", files["good"]])
    assert rc == 0 and "toguid 4369" in out


def test_token_command() -> None:
    tok = resume_token({"toname": "zv/fs@s1", "toguid": 2**64 - 2, "object": 3, "offset": 0})
    rc, out = run(["token", "--json", tok])
    doc = json.loads(out)
    assert rc == 0 and doc["fields"]["toguid"] == str(2**64 - 2)
    rc, out = run(["token", tok[:-4]])
    assert rc == 1 and "DAMAGED" in out


@needs_installed_command
def test_stdin_pipe(files) -> None:
    data = Path(files["pkg"]).read_bytes()
    proc = zverify("stream", "verify", "--json", "-", input=data, text=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"][0]["file"] == "-"
    proc = zverify("stream", "verify", "-", input=data[:-5], text=False, timeout=60)
    assert proc.returncode == 1 and b"DAMAGED" in proc.stdout


@needs_installed_command
def test_stdin_terminal_is_refused() -> None:
    pty = pytest.importorskip("pty")
    import os

    main, sub = pty.openpty()
    try:
        proc = zverify("stream", "verify", "-", stdin=sub, text=False, timeout=60)
    finally:
        os.close(main)
        os.close(sub)
    assert proc.returncode != 0 and b"terminal" in proc.stderr
