"""`zverify stream verify|info|token` through the typer app, plus a real stdin pipe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.main import get_command

from tests.stream.streamgen import full_stream, package, resume_token
from zverify.cli.stream import app

RUNNER = (
    "import sys; from typer.main import get_command; from zverify.cli.stream import app; "
    "sys.exit(get_command(app).main(args=sys.argv[1:], prog_name='stream', standalone_mode=False))"
)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = get_command(app).main(args=args, prog_name="stream", standalone_mode=False)
    return rc, capsys.readouterr().out


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


def test_verify_exit_codes(files, capsys) -> None:
    assert run(["verify", files["good"], files["pkg"]], capsys)[0] == 0
    rc, out = run(["verify", files["good"], files["bad"]], capsys)
    assert rc == 1 and "DAMAGED" in out and "offset" in out
    rc, out = run(["verify", files["good"], files["bad"], files["missing"]], capsys)
    assert rc == 2 and "UNREADABLE" in out


def test_verify_json(files, capsys) -> None:
    rc, out = run(["verify", "--json", files["good"], files["bad"]], capsys)
    doc = json.loads(out)
    assert rc == 1 and doc["valid"] is False
    good, bad = doc["files"]
    assert good["valid"] and not good["problems"]
    assert not bad["valid"]
    assert {"offset", "record", "message"} <= set(bad["problems"][0])


def test_info_json_guids_are_decimal_strings(files, capsys) -> None:
    rc, out = run(["info", "--json", files["pkg"]], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["kind"] == "incremental package"
    assert [(s["toname"], s["toguid"], s["fromguid"]) for s in doc["substreams"]] == [
        ("p/f@b", "2", "1"),
        ("p/f@c", "3", "2"),
    ]
    rc, out = run(["info", files["good"]], capsys)
    assert rc == 0 and "toguid 4369" in out


def test_token_command(capsys) -> None:
    tok = resume_token({"toname": "zv/fs@s1", "toguid": 2**64 - 2, "object": 3, "offset": 0})
    rc, out = run(["token", "--json", tok], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["fields"]["toguid"] == str(2**64 - 2)
    rc, out = run(["token", tok[:-4]], capsys)
    assert rc == 1 and "DAMAGED" in out


def test_stdin_pipe(files) -> None:
    data = Path(files["pkg"]).read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, "verify", "--json", "-"],
        input=data,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"][0]["file"] == "-"
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, "verify", "-"],
        input=data[:-5],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1 and b"DAMAGED" in proc.stdout


def test_stdin_terminal_is_refused() -> None:
    pty = pytest.importorskip("pty")
    import os

    main, sub = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, "verify", "-"],
            stdin=sub,
            capture_output=True,
            timeout=60,
        )
    finally:
        os.close(main)
        os.close(sub)
    assert proc.returncode != 0 and b"terminal" in proc.stderr
