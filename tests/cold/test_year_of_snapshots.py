"""An archive at the scale people keep one: a year of hourly snapshots (a full and 8,759
incrementals, generated streams), one incremental lost in the middle.  `cold check` says it
in a screenful: per dataset how many snapshots restore, the oldest and newest with their
dates, and what is lost behind which file, once; the orphans behind the loss fold into one
line.  Its JSON keeps a problem per file but lists each route once (linear in the archive)."""

import datetime
import json
from pathlib import Path

from tests.cli.console import zverify, zverify_peak_rss
from tools.streamgen import StreamBuilder
from zverify.report.cold.check import routes

HOURS = 8760
LOST = 4000  # the incremental @s3999-@s4000 is gone
START = int(datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC).timestamp())


def _stream(name: str, to: int, frm: int, hour: int) -> bytes:
    b = StreamBuilder()
    b.substream(name, to, frm, created=START + 3600 * hour)
    return bytes(b.data)


def _year(root: Path, hours: int = HOURS, lost: int | None = LOST) -> None:
    root.mkdir()
    (root / "zv%2Ffs@s0.zfsfull").write_bytes(_stream("zv/fs@s0", 10**6, 0, 0))
    for i in range(1, hours):
        if i != lost:
            data = _stream(f"zv/fs@s{i}", 10**6 + i, 10**6 + i - 1, i)
            (root / f"zv%2Ffs@s{i - 1}-@s{i}.zfsinc").write_bytes(data)


def test_a_lost_incremental_is_one_cause_in_a_screenful(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    _year(root)
    done = zverify("cold", "check", str(root))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) <= 24, done.stdout  # a screenful
    assert lines[1] == f"zv/fs: {LOST:,} restorable snapshots (stream and record checks)"
    assert lines[2].startswith("  oldest @s0, made 2025-01-01 00:00 UTC (")
    newest = datetime.datetime.fromtimestamp(START + 3600 * (LOST - 1), datetime.UTC)
    assert lines[3].startswith(f"  newest @s{LOST - 1}, made {newest:%Y-%m-%d %H:%M} UTC (")
    root_cause = f"zv%2Ffs@s{LOST}-@s{LOST + 1}.zfsinc"
    behind = HOURS - LOST - 1  # every file from the first orphan on
    [lost] = [line for line in lines if line.startswith("  lost: ")]
    assert lost.startswith(
        f"  lost: {behind:,} snapshots (@s{LOST + 1} .. @s{HOURS - 1}) in {behind:,} files from"
        f" {root_cause} on; no intact file ends at its base @s{LOST} (guid {10**6 + LOST})"
    ), lost
    problems = done.stdout.split("problems:\n", 1)[1].splitlines()[:-1]
    assert len(problems) == 2, problems
    assert problems[0].split()[:2] == ["orphan", f"{root_cause}:"]
    assert f"({behind - 1:,} files)" in problems[1] and f"follows {root_cause}" in problems[1]
    assert lines[-1] == f"PROBLEMS: {behind} in chains (orphan {behind})"

    verbose = zverify("cold", "check", "-v", str(root)).stdout.splitlines()
    assert len(verbose) == len(lines) + LOST  # and a line per restorable snapshot
    assert f"  @s{LOST - 1} (guid {10**6 + LOST - 1}): restorable from {LOST} files" in verbose


def test_the_json_grows_with_the_archive_not_its_square(tmp_path: Path) -> None:
    sizes = {}
    for hours in (876, HOURS):
        root = tmp_path / f"cold-{hours}"
        _year(root, hours, lost=None)
        code, out, err, peak_mb = zverify_peak_rss(
            "cold", "check", "--json", str(root), tmp=tmp_path
        )
        assert code == 0, err
        sizes[hours] = len(out)
    # and so does the memory: each route a whole list took 447 MB here; linked routes 93 MB
    assert peak_mb < 200, peak_mb
    doc = json.loads(out)
    assert sizes[HOURS] < 12 * sizes[876], sizes  # tenfold the archive: about tenfold the JSON
    [dataset] = doc["datasets"]
    route = routes(dataset)[str(10**6 + HOURS - 1)]  # the newest: the whole chain, in order
    assert route == ["zv%2Ffs@s0.zfsfull"] + [
        f"zv%2Ffs@s{i - 1}-@s{i}.zfsinc" for i in range(1, HOURS)
    ]


def test_check_and_scrub_count_the_files_problems_alike(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    _year(root, hours=100, lost=None)
    damaged = root / "zv%2Ffs@s49-@s50.zfsinc"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    text = zverify("cold", "check", str(root)).stdout
    # the lost line names the damaged file as where the first orphan's base went
    assert f"its base @s50 (guid {10**6 + 50}) is in {damaged.name}, which is not intact" in text
    check = text.splitlines()[-1]
    scrub = zverify("cold", "scrub", str(root)).stdout.splitlines()[-1]
    assert check == "PROBLEMS: 1 in files (damaged 1), 49 in chains (orphan 49)", check
    assert scrub.startswith("PROBLEMS: 1 in files (damaged 1); "), scrub
