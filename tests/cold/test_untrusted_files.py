"""Hostile files inside an archive, through the INSTALLED `zverify cold ...`: a sidecar of
JSON nested past any parser's stack (finding H4 of adversarial-3) and parity made of packet
headers that each claim the rest of the file (M2).  Each must be reported like any other
unreadable file, never crash a command or stall it."""

from __future__ import annotations

import json
import struct
import subprocess
import time
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
        line = f"{FULL}.json cannot be read: JSON nested too deeply"
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


# -- M2: parity whose packet headers each claim the rest of the file ------------------------


def hostile_parity(size: int) -> bytes:
    """Packet headers every 64 bytes, each with a length that ends exactly at the end of the
    file and a wrong MD5: a reader that hashes each claimed packet hashes size**2/128 bytes."""
    out = bytearray()
    while len(out) < size:
        length = size - len(out)
        out += struct.pack("<8sQ16s16s16s", b"PAR2\0PKT", length, bytes(16), bytes(16), bytes(16))
    return bytes(out)


def test_hostile_parity_is_read_in_linear_time(tmp_path: Path) -> None:
    """8 MiB of such headers: the quadratic scan hashed 512 GiB (about 20 minutes); a linear
    one reads a few times 8 MiB.  The bound is generous for a shared, slow machine."""
    root = archive(tmp_path, 10)
    (root / f"{FULL}.vol999+1.par2").write_bytes(hostile_parity(8 << 20))
    start = time.monotonic()
    try:
        done = run(
            "cold", "check", "--no-progress", "--json", str(root), env=plain_env(), timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("cold check ran over 60 s on 8 MiB of hostile parity")
    took = time.monotonic() - start
    doc = json.loads(done.stdout)
    parity = file_doc(doc, FULL)["parity"]
    assert done.returncode == 1 and parity["damaged_bytes"] >= 8 << 20, parity
    print(f"cold check: {took:.1f} s on 8 MiB of hostile parity")
