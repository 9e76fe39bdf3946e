"""`zverify cold scrub` and the proof ledger, through the installed console script, on
archives of real `zfs send` fixture streams: rotation within a budget, damage found by the
run that reaches it, a tampered ledger refused (naming the line), a read-only archive with
its ledger elsewhere, and a scrub killed with SIGKILL."""

import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import console_script, zverify
from tests.cold.proof.test_check import FIXTURE, FULL_S1, INC_S1_S2, INC_S2_S3, PKG_S1_S3, STREAMS
from zverify import __version__
from zverify.cold.proof.scrub import BATCH_RECORDS

LEDGER = ".zverify-ledger.jsonl"
HEAD = ".zverify-ledger.head"


def archive(root: Path, *names: str) -> Path:
    root.mkdir()
    for name in names:
        shutil.copy(STREAMS / FIXTURE[name], root / name)
    return root


def scrub(root: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    done = zverify("cold", "scrub", "--json", *extra, str(root))
    doc = json.loads(done.stdout) if done.stdout else {}
    return done.returncode, doc, done.stderr


def sizes(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in root.iterdir() if not p.name.startswith(".")}


def read_now(doc: dict[str, Any]) -> list[str]:
    return [f["file"] for f in doc["files"] if f["read"]]


def test_rotation_covers_every_file_within_ceil_total_over_budget_runs(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2, INC_S2_S3, PKG_S1_S3)
    size = sizes(root)
    total, budget = sum(size.values()), 200_000
    runs = math.ceil(total / budget)
    seen: set[str] = set()
    for _ in range(runs):
        code, doc, err = scrub(root, "--max-bytes", str(budget))
        assert code == 0, err
        read = read_now(doc)
        assert doc["read_bytes"] == sum(size[f] for f in read)
        # the budget is looked at before each file: only the last one read (the ledger
        # holds them in the order they were read) may cross it
        last = json.loads(_lines(root)[-1])["file"]
        assert last in read and doc["read_bytes"] - size[last] < budget
        order = [json.loads(line)["file"] for line in _lines(root)[-len(read) :]]
        fresh = [f for f in order if f not in seen]
        assert order[: len(fresh)] == fresh, "a file proven again before a never-proven one"
        seen |= set(read)
    assert seen == set(size)
    assert doc["unproven_bytes"] == 0 and doc["oldest_proof_age_seconds"] is not None
    assert all(f["result"] == "proven" and f["proven_at"] for f in doc["files"])
    # --max-age: every proof is younger than a day, nothing is due
    code, doc, err = scrub(root, "--max-age", "1")
    assert code == 0 and doc["read_bytes"] == 0 and read_now(doc) == [], err
    # without it, the next run starts again from the oldest proof
    code, doc, _ = scrub(root, "--max-bytes", "1")
    assert code == 0 and len(read_now(doc)) == 1


def test_a_byte_flipped_between_runs_is_found_by_the_run_that_reaches_it(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2, INC_S2_S3)
    code, doc, err = scrub(root)
    assert code == 0 and sorted(read_now(doc)) == sorted(sizes(root)), err
    flipped = bytearray((root / INC_S1_S2).read_bytes())
    flipped[5000] ^= 0x40
    (root / INC_S1_S2).write_bytes(bytes(flipped))
    for _ in range(3):  # one file per run, oldest proof first
        code, doc, err = scrub(root, "--max-bytes", "1")
        if read_now(doc) == [INC_S1_S2]:
            break
        assert code == 0, f"{read_now(doc)} read, exit {code}: {err}"
    else:
        pytest.fail("no run reached the damaged file within 3 runs of 1 file each")
    assert code == 1 == doc["exit_code"]
    (damaged,) = [f for f in doc["files"] if f["file"] == INC_S1_S2]
    assert damaged["result"] == "damaged" and damaged["proven_at"] is None
    first = damaged["problems"][0]  # the checksum that covers byte 5000, named
    assert first["damage_from"] <= 5000 < first["offset"] + 312
    # damaged first: the next run reads it again however old the other proofs are
    code, doc, _ = scrub(root, "--max-bytes", "1")
    assert code == 1 and read_now(doc) == [INC_S1_S2]
    assert doc["oldest_proof_age_seconds"] is None and doc["unproven_bytes"] > 0


def test_a_stream_replaced_by_another_is_flagged(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    assert scrub(root)[0] == 0
    shutil.copy(STREAMS / "embed_large_Le_fs_s1.zstream", root / FULL_S1)  # same name
    code, doc, err = scrub(root)
    assert code == 1, err
    kinds = [p["kind"] for f in doc["files"] for p in f["problems"]]
    assert "replaced" in kinds


def _lines(root: Path) -> list[bytes]:
    return (root / LEDGER).read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(
    ("tamper", "line"),
    [
        ("edit", 3),  # line 2 edited: line 3 no longer follows it
        ("remove", 2),  # line 2 removed: the old line 3 is now line 2 and does not follow 1
        ("reorder", 2),
        ("truncate", 4),  # the last line cut off: the head counts it
        ("edit-last", 4),  # nothing follows it: the head's hash tells
    ],
)
def test_a_tampered_ledger_exits_2_naming_the_line(tmp_path: Path, tamper: str, line: int) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2, INC_S2_S3, PKG_S1_S3)
    assert scrub(root)[0] == 0
    lines = _lines(root)
    assert len(lines) == 4
    if tamper == "edit":
        lines[1] = lines[1].replace(b'"result":"proven"', b'"result":"damaged"')
    elif tamper == "remove":
        del lines[1]
    elif tamper == "reorder":
        lines[1], lines[2] = lines[2], lines[1]
    elif tamper == "truncate":
        del lines[3]
    else:
        lines[3] = lines[3].replace(b'"result":"proven"', b'"result":"damaged"')
    (root / LEDGER).write_bytes(b"".join(lines))
    for command in ("scrub", "check"):
        done = zverify("cold", command, str(root))
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert f"line {line}" in done.stderr and len(done.stderr.splitlines()) == 1
        assert "Traceback" not in done.stderr


def test_a_torn_last_line_is_reported_and_cut_by_the_next_append(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    assert scrub(root)[0] == 0
    with open(root / LEDGER, "ab") as f:
        f.write(b'{"file":"zv%2Ffs@s1.zfsfull","si')  # an append killed mid-line
    done = zverify("cold", "check", str(root))  # check reports it, then appends
    assert done.returncode == 0, done.stderr
    assert "torn last line" in done.stdout and "cut off" in done.stdout
    code, doc, err = scrub(root)
    assert code == 0 and not doc["ledger_torn"], err
    assert (root / LEDGER).read_bytes().endswith(b"\n") and len(_lines(root)) == 6


def test_check_records_its_proofs_and_prints_the_ledger_line(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    plain = zverify("cold", "check", str(root))
    assert plain.returncode == 0 and "ledger" not in plain.stdout  # none: none made
    assert not (root / LEDGER).exists()
    assert scrub(root)[0] == 0
    done = zverify("cold", "check", str(root))
    assert done.returncode == 0
    assert f"ledger {root / LEDGER}: 4 proofs of 2 files, chain intact" in done.stdout
    methods = [json.loads(line)["method"] for line in _lines(root)]
    assert methods == ["scrub", "scrub", "check", "check"]


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """The archive as a read-only bind mount (root can write through chmod, not EROFS)."""
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    mount = tmp_path / "ro"
    mount.mkdir()
    bound = subprocess.run(["mount", "--bind", str(root), str(mount)], capture_output=True)
    if bound.returncode:
        pytest.skip(f"a bind mount needs root: {bound.stderr.decode().strip()}")
    subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_read_only_archive_keeps_its_ledger_elsewhere(read_only: Path, tmp_path: Path) -> None:
    done = zverify("cold", "scrub", str(read_only))
    assert done.returncode == 2 and "--ledger" in done.stderr and "Read-only" in done.stderr
    elsewhere = tmp_path / "proofs.jsonl"
    code, doc, err = scrub(read_only, "--ledger", str(elsewhere))
    assert code == 0 and doc["ledger_records"] == 2 and doc["unproven_bytes"] == 0, err
    assert (tmp_path / "proofs.head").exists()
    check = zverify("cold", "check", "--ledger", str(elsewhere), str(read_only))
    assert check.returncode == 0 and "4 proofs of 2 files" in check.stdout


def test_a_bucket_needs_a_local_ledger() -> None:
    done = zverify("cold", "scrub", "s3://no-such-bucket/cold")
    assert done.returncode == 2 and "--ledger" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_proofs_reach_the_ledger_a_batch_at_a_time(tmp_path: Path) -> None:
    """An append costs the ledger's and its head's fsyncs: one per file made a scrub of
    8,760 small files 23 times slower than `cold check` of them.  Within one second a run
    appends its proofs at most BATCH_RECORDS at a time, and whatever it holds at its end."""
    from zverify.cold.proof import scrub as scrubbing
    from zverify.cold.proof.ledger import Ledger
    from zverify.cold.store import LocalStore

    root = tmp_path / "cold"
    root.mkdir()
    files = BATCH_RECORDS + 3
    for i in range(files):
        shutil.copy(STREAMS / FIXTURE[INC_S2_S3], root / f"copy{i:04d}.zfs")
    appends: list[int] = []

    class Counting(Ledger):
        def append(self, records: list[Any]) -> None:
            appends.append(len(records))
            super().append(records)

    ledger = Counting.open(str(root / LEDGER), "this archive")
    report = scrubbing.scrub(LocalStore([str(root)]), ledger, scrubbing.Budget(), clock=lambda: 0.0)
    assert report.exit_code == 0 and len(_lines(root)) == files
    assert appends == [BATCH_RECORDS, 3]


def test_a_scrub_killed_with_sigkill_leaves_a_ledger_that_verifies(tmp_path: Path) -> None:
    """Killed once its first batch of proofs (BATCH_RECORDS) is in the ledger: that batch
    stays, and the next scrub accepts the ledger and proves the rest."""
    root = tmp_path / "cold"
    root.mkdir()
    files = 3 * BATCH_RECORDS  # copies of one small stream: each is proven on its own
    for i in range(files):
        shutil.copy(STREAMS / FIXTURE[INC_S2_S3], root / f"copy{i:04d}.zfs")
    killed = subprocess.Popen(
        [console_script(), "cold", "scrub", "--quiet", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ledger = root / LEDGER
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        not ledger.exists() or ledger.read_bytes().count(b"\n") < BATCH_RECORDS
    ):
        time.sleep(0.001)
    os.kill(killed.pid, signal.SIGKILL)
    assert killed.wait() == -signal.SIGKILL, "the scrub ended before it was killed"
    done = len(_lines(root))
    assert BATCH_RECORDS <= done < files
    code, doc, err = scrub(root)  # proves the ledger, then the files not proven yet first
    assert code == 0, err
    assert doc["unproven_bytes"] == 0 and doc["ledger_records"] >= files


def _metrics(path: Path) -> dict[str, str]:
    """{'name{labels}': value} of a node_exporter textfile."""
    rows = [line.rsplit(" ", 1) for line in path.read_text().splitlines() if line[:1] != "#"]
    return {key: value for key, value in rows}


def test_the_prometheus_file_says_how_old_the_oldest_proof_is(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    prom = tmp_path / "cold.prom"
    code, _, err = scrub(root, "--max-bytes", "1", "--prometheus", str(prom))
    assert code == 0, err
    where = f'archive="{root}"'
    metrics = _metrics(prom)
    assert metrics[f"zverify_cold_archive_oldest_proof_age_seconds{{{where}}}"] == "+Inf"
    assert int(metrics[f"zverify_cold_archive_unproven_bytes{{{where}}}"]) > 0
    assert f"zverify_cold_archive_last_full_pass_timestamp_seconds{{{where}}}" not in metrics
    code, doc, err = scrub(root, "--max-bytes", "1", "--prometheus", str(prom))
    assert code == 0 and doc["unproven_bytes"] == 0, err
    metrics = _metrics(prom)
    assert float(metrics[f"zverify_cold_archive_oldest_proof_age_seconds{{{where}}}"]) < 600
    assert metrics[f'zverify_cold_unproven_bytes{{{where},dataset="zv/fs"}}'] == "0"
    assert metrics[f"zverify_cold_archive_damaged_files{{{where}}}"] == "0"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_the_prometheus_file_is_what_the_textfile_collector_accepts(tmp_path: Path) -> None:
    """Parsed by prometheus_client's own text parser, held to what node_exporter's textfile
    collector refuses (a series twice, or one family with two sets of label names), and
    totals apart from their parts: sum() over the datasets is the archive's series.  One
    file proven (dataset zv/fs), one never (no dataset known yet: never an empty label,
    which Prometheus reads as no label, the archive total's series again)."""
    from prometheus_client.parser import text_string_to_metric_families

    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2)
    prom = tmp_path / "cold.prom"
    code, _, err = scrub(root, "--max-bytes", "1", "--prometheus", str(prom))
    assert code == 0, err
    families = list(text_string_to_metric_families(prom.read_text()))
    assert len({f.name for f in families}) == len(families)  # HELP and TYPE once each
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in families:
        assert len({tuple(sorted(s.labels)) for s in family.samples}) <= 1, family.name
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in values and "" not in s.labels.values(), key
            values[key] = s.value

    def series(name: str) -> dict[str, float]:
        return {
            dict(labels).get("dataset", ""): v for (n, labels), v in values.items() if n == name
        }

    assert set(series("zverify_cold_unproven_bytes")) == {"zv/fs", "(unknown)"}
    for metric in ("unproven_bytes", "damaged_files", "oldest_proof_age_seconds"):
        parts, total = series(f"zverify_cold_{metric}"), series(f"zverify_cold_archive_{metric}")
        assert len(parts) == 2 and len(total) == 1, metric
        if metric == "oldest_proof_age_seconds":
            assert total[""] == max(parts.values()) == math.inf  # one file has no proof
        else:
            assert total[""] == sum(parts.values()), metric
    assert series("zverify_cold_unproven_bytes")["(unknown)"] > 0
    assert series("zverify_cold_scrub_success") == {"": 1.0}
    assert series("zverify_cold_scrub_exit_code") == {"": 0.0}
    assert 0 < series("zverify_cold_scrub_duration_seconds")[""] < 600
    assert abs(series("zverify_cold_scrub_last_run_timestamp_seconds")[""] - time.time()) < 600
    ((_, build),) = [k for k in values if k[0] == "zverify_build_info"]
    assert dict(build)["version"] == __version__


@pytest.mark.parametrize(
    "option",
    [
        ("--max-bytes", "10X"),
        ("--max-bytes", "0"),
        ("--max-duration", "-1"),
        ("--max-duration", "soon"),
        # adversarial-4 L3: no proof would ever be due again, or every one at once
        ("--max-age", "nan"),
        ("--max-age", "inf"),
        ("--max-age", "1e400"),
        ("--max-age", "-1"),
    ],
)
def test_a_budget_that_means_nothing_is_a_usage_error(
    tmp_path: Path, option: tuple[str, str]
) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    done = zverify("cold", "scrub", *option, str(root))
    assert done.returncode == 2 and option[0] in done.stderr
    assert len(done.stderr.splitlines()) == 1 and not (root / LEDGER).exists()


def test_scrubs_and_checks_at_once_keep_one_intact_chain(tmp_path: Path) -> None:
    """Each run reads the ledger under a shared flock and appends under an exclusive one,
    proving first what the others appended: three at once leave one chain and head."""
    root = tmp_path / "cold"
    root.mkdir()
    for i in range(12):
        shutil.copy(STREAMS / FIXTURE[INC_S1_S2], root / f"copy{i:02d}.zfs")
    assert scrub(root, "--max-bytes", "1")[0] == 0  # the ledger exists: check records too
    runs = [
        subprocess.Popen([console_script(), "cold", command, "-q", str(root)], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for command in ("scrub", "scrub", "check")
    ]  # fmt: skip
    for run, expected in zip(runs, (0, 0, 1), strict=True):
        out, err = run.communicate(timeout=120)  # check: copies are duplicates, exit 1
        assert run.returncode == expected, out + err
    code, doc, err = scrub(root, "--max-age", "1")
    assert code == 0 and doc["read_bytes"] == 0, err
    assert doc["ledger_records"] == 1 + 12 + 12 + 12 == len(_lines(root))


def _forge(root: Path, edit: dict[str, Any], literal: Callable[[str], str] = str) -> None:
    """Rewrite the ledger's first record and recompute every prev and the head, as a
    forger who knows the format would: the chain then holds, and the record must not.
    literal: a last edit of each line's text, for what json.dumps cannot write (1e400)."""
    docs = [json.loads(line) for line in _lines(root)]
    docs[0].update(edit)
    prev, out = "0" * 64, b""
    for doc in docs:
        text = json.dumps({**doc, "prev": prev}, separators=(",", ":"))
        line = (literal(text) + "\n").encode()
        out += line
        prev = hashlib.sha256(line).hexdigest()
    (root / LEDGER).write_bytes(out)
    (root / HEAD).write_text(json.dumps({"lines": len(docs), "last": prev}))


@pytest.mark.parametrize(
    "edit",
    [{"time": "2026-01-01T00:00:00"}, {"size": "big"}, {"dataset": 7}, {"method": "hope"}],
)
def test_a_forged_record_of_another_shape_is_refused_not_a_crash(
    tmp_path: Path, edit: dict[str, Any]
) -> None:
    root = archive(tmp_path / "cold", FULL_S1)
    assert scrub(root)[0] == 0
    _forge(root, {})  # the forger's tool reproduces a true ledger exactly
    assert scrub(root)[0] == 0
    _forge(root, edit)
    done = zverify("cold", "scrub", "--prometheus", str(tmp_path / "m.prom"), str(root))
    assert done.returncode == 2 and "line 1" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_max_duration_stops_after_the_file_that_crosses_it(tmp_path: Path) -> None:
    root = archive(tmp_path / "cold", FULL_S1, INC_S1_S2, INC_S2_S3)
    # a microsecond: over before the first file is proven, however fast the machine
    code, doc, err = scrub(root, "--max-duration", "0.000001")
    assert code == 0 and len(read_now(doc)) == 1, err  # the first file is always finished
    assert doc["stopped"].startswith("--max-duration")
