"""adversarial-4.md C1: streams whose checksums are all valid but whose records `zfs receive`
refuses (or receives and then cannot use) are not `valid`.  Each one-field mutation of a real
OpenZFS 2.1.11 full (tests/sendstream/mutations.py) through `zverify stream verify --json`:
exit 1 naming the rule, the record and its offset; the unmutated control and what real
receive takes into a readable dataset (and real senders write) pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.console import zverify_in_process
from tests.sendstream import mutations
from tools import streamgen

REFUSED = mutations.refused()
ACCEPTED = mutations.accepted()


def verify(tmp_path: Path, data: bytes) -> tuple[int, dict]:
    path = tmp_path / "s.zstream"
    path.write_bytes(data)
    done = zverify_in_process("stream", "verify", "--json", str(path))
    return done.returncode, json.loads(done.stdout)["files"][0]


def test_the_control_passes(tmp_path: Path) -> None:
    rc, doc = verify(tmp_path, streamgen.resign(mutations.FIXTURE.read_bytes()))
    assert rc == 0 and doc["valid"] and doc["problems"] == [], doc["problems"]


@pytest.mark.parametrize("m", REFUSED, ids=[m.name for m in REFUSED])
def test_a_record_receive_refuses_is_not_valid(tmp_path: Path, m: mutations.Mutation) -> None:
    rc, doc = verify(tmp_path, m.data)
    # an unknown feature flag is not judged at all (exit 2), never damaged
    assert rc == (2 if m.code == "unknown-feature" else 1), (m.name, doc["problems"])
    assert not doc["valid"], (m.name, doc["problems"])
    problem = doc["problems"][0]
    assert problem["code"] == m.code, (m.name, problem)
    records = [r.offset for r in streamgen.walk(m.data)]
    if m.record >= 0:
        assert problem["record"] == m.record, (m.name, problem)
    # the offset named is the record's own, and the message names its index and the rule
    assert problem["offset"] in records, (m.name, problem)
    assert f"record {problem['record']}" in problem["message"] or "BEGIN" in problem["message"]


@pytest.mark.parametrize("m", ACCEPTED, ids=[m.name for m in ACCEPTED])
def test_what_receive_takes_and_senders_write_passes(tmp_path: Path, m: mutations.Mutation) -> None:
    rc, doc = verify(tmp_path, m.data)
    assert rc == 0 and doc["valid"], (m.name, doc["problems"])


def test_every_class_of_the_27_is_covered() -> None:
    # 16 refused by OpenZFS + 11 received: 27 classes; feature bit 30 is counted once
    names = {m.name for m in REFUSED} | {m.name for m in ACCEPTED}
    assert len(names) == 27 + 0 and len(REFUSED) == 21, sorted(names)
