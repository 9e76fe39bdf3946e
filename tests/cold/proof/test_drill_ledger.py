"""A drill's ledger line (zverify.cold.proof.ledger.DrillFacts) and what scrub makes of it, without
ZFS: the drills themselves run on real OpenZFS in tests/cold/test_drill_zfs.py.  A drill's
line is read back as written, never stands for a stream's proof, and a line whose drill
facts were edited into what no append writes is refused (exit 2, naming the line)."""

from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.cold.proof.test_check import FULL_S1
from tests.cold.proof.test_scrub import LEDGER, _forge, archive, scrub
from zverify.cold.proof.ledger import DrillFacts, Ledger, LedgerRecord, now
from zverify.drill.rotation import most_overdue

FACTS = DrillFacts(("a@1.zfsfull", "a@1-@2.zfsinc"), "zfs-2.1.11-1 / zfs-kmod-2.1.11-1", "x", 3)


def drilled(result: str, dataset: str = "zv/fs") -> LedgerRecord:
    return LedgerRecord(
        f"drill:{dataset}@s1", 10, dataset, None, "1", None, "drill", result, now(), drill=FACTS
    )


def test_a_drill_line_reads_back_and_is_no_files_proof(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    code, doc, _ = scrub(root)  # a proof of the stream first
    assert code == 0 and doc["drill_age_seconds"] == {"zv/fs": None}
    ledger = Ledger.open(str(root / LEDGER))
    ledger.append([drilled("proven")])
    again = Ledger.open(str(root / LEDGER))
    assert again.records[-1].drill == FACTS and again.drills()["zv/fs"].result == "proven"
    assert set(again.last_proven()) == {FULL_S1, "drill:zv/fs@s1"}
    code, doc, _ = scrub(root)
    assert code == 0 and doc["drill_age_seconds"]["zv/fs"] is not None
    prom = tmp_path / "cold.prom"
    assert zverify("cold", "scrub", "--prometheus", str(prom), str(root)).returncode == 0
    drill = ("zverify_cold_drill", "zverify_cold_archive_drill")
    rows = [line for line in prom.read_text().splitlines() if line.startswith(drill)]
    assert len(rows) == 2 and not any("+Inf" in row for row in rows), rows
    Ledger.open(str(root / LEDGER)).append([drilled("damaged")])  # the last drill failed
    code, doc, _ = scrub(root)
    assert doc["drill_age_seconds"] == {"zv/fs": None}
    assert zverify("cold", "scrub", "--prometheus", str(prom), str(root)).returncode == 0
    assert 'zverify_cold_drill_age_seconds{archive="' in prom.read_text()
    assert prom.read_text().count("+Inf") >= 2  # the archive's row and the dataset's


@pytest.mark.parametrize(
    "edit",
    [
        {"drill": {"route": "a", "openzfs": "z", "against": "x", "entries": 1}},
        {"drill": {"route": [], "openzfs": "z", "against": "x", "entries": -1}},
        {"drill": {"route": [], "openzfs": "z", "against": "x"}},
        {"drill": {"route": [], "openzfs": "z", "against": "x", "entries": 1}, "method": "scrub"},
    ],
)
def test_edited_drill_facts_are_refused(tmp_path: Path, edit: dict) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    Ledger.open(str(root / LEDGER)).append([drilled("proven")])
    _forge(root, edit)
    done = zverify("cold", "scrub", "-q", str(root))
    assert done.returncode == 2 and f"{LEDGER}: line 1" in done.stderr, done.stderr


def test_a_scrub_that_found_damage_drills_nothing(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    flipped = bytearray((root / FULL_S1).read_bytes())
    flipped[1000] ^= 1
    (root / FULL_S1).write_bytes(bytes(flipped))
    code, doc, _ = scrub(root, "--drill-scratch-file", "64M")
    assert code == 1 and doc["drill"] is None, doc
    assert doc["drill_skipped"] == "no drill: the scrub found problems"
    done = zverify(
        "cold", "scrub", "-q", "--drill-pool", "p", "--drill-scratch-file", "1G", str(root)
    )
    assert done.returncode == 2 and "one of --drill-pool" in done.stderr


def test_the_most_overdue_drill_goes_first() -> None:
    assert most_overdue({}) is None
    assert most_overdue({"a": 10.0, "b": 500.0, "c": 20.0}) == "b"
    assert most_overdue({"a": 10.0, "b": None, "c": 99999.0}) == "b"
