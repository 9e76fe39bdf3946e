"""The committed send-stream fixtures match their index (no ZFS needed)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

STREAMS = Path(__file__).resolve().parents[1] / "data" / "streams"
INDEX = STREAMS / "index.json"

pytestmark = pytest.mark.skipif(
    not INDEX.exists(), reason="tests/data/streams/index.json not generated"
)


def entries():
    return json.loads(INDEX.read_text())["streams"] if INDEX.exists() else []


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e["file"])
def test_file_matches_index(entry):
    data = (STREAMS / entry["file"]).read_bytes()
    assert len(data) == entry["size"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]


def test_guids_agree_with_snapshot_table():
    index = json.loads(INDEX.read_text())
    for entry in index["streams"]:
        assert index["snapshots"][entry["to"]] == entry["to_guid"]
        if entry["from"]:
            assert index["snapshots"][entry["from"]] == entry["from_guid"]


def test_every_requested_kind_is_present():
    kinds = {e["kind"] for e in entries()}
    assert {
        "full",
        "incremental",
        "incremental-empty",
        "package-I",
        "replication-R",
        "full-raw",
        "incremental-raw",
        "resumed",
        "truncated",
    } <= kinds
    flags = {tuple(e["flags"]) for e in entries()}
    assert ("-c",) in flags and ("-L", "-e") in flags
