"""An archive at the scale people keep one: a year of hourly snapshots (a full and 8,759
incrementals, generated streams), one incremental lost in the middle.  `cold check` names
the cause once and folds the 4,758 files that stand behind it into one line (its JSON keeps
a problem per file: the renderer folds, the report does not)."""

from pathlib import Path

from tests.cli.console import zverify
from tools.streamgen import StreamBuilder

HOURS = 8760
LOST = 4000  # the incremental @s3999-@s4000 is gone


def _stream(name: str, to: int, frm: int) -> bytes:
    b = StreamBuilder()
    b.substream(name, to, frm)
    return bytes(b.data)


def _year(root: Path) -> None:
    root.mkdir()
    (root / "zv%2Ffs@s0.zfsfull").write_bytes(_stream("zv/fs@s0", 10**6, 0))
    for i in range(1, HOURS):
        if i != LOST:
            data = _stream(f"zv/fs@s{i}", 10**6 + i, 10**6 + i - 1)
            (root / f"zv%2Ffs@s{i - 1}-@s{i}.zfsinc").write_bytes(data)


def test_a_lost_incremental_is_one_cause_and_one_folded_line(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    _year(root)
    done = zverify("cold", "check", str(root))
    assert done.returncode == 1, done.stderr
    problems = done.stdout.split("problems:\n", 1)[1].splitlines()[:-1]
    root_cause = f"zv%2Ffs@s{LOST}-@s{LOST + 1}.zfsinc"
    assert len(problems) == 2, problems
    assert problems[0].split()[:2] == ["orphan", f"{root_cause}:"]
    assert f"starts from snapshot GUID {10**6 + LOST}" in problems[0]
    behind = HOURS - LOST - 2  # every later incremental
    assert f"({behind:,} files)" in problems[1] and f"follows {root_cause}" in problems[1]
    assert done.stdout.splitlines()[-1] == f"PROBLEMS: {behind + 1} (orphan {behind + 1})"
