"""`compare` answers "may I delete SRC?" in its first line: the differences that put data at
risk (content, missing, type...) apart from those that leave every byte of SRC in DST
(metadata, entries only in DST), each of the former on its own line, runs of one kind of the
latter folded into one.  -v lists every difference as found; JSON is unchanged.  Run through
the installed console script, on a real copy (`cp -a`) after a chmod of 835 files."""

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.cli.console import console_script, zverify

FILES = 837


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "d").mkdir(parents=True)
    for i in range(FILES):
        (src / "d" / f"f{i:04d}").write_text(f"{i}\n")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return src, dst


def test_data_at_risk_comes_first_and_the_chmod_folds(tmp_path: Path) -> None:
    src, dst = _copy(tmp_path)
    for name in sorted(os.listdir(dst / "d")):
        (dst / "d" / name).chmod(0o600)
    for i in (100, 200):
        (dst / "d" / f"f{i:04d}").write_text("changed\n")
    for i in (300, 301):
        (dst / "d" / f"f{i:04d}").unlink()
    shutil.copystat(src / "d", dst / "d")
    done = zverify("compare", "--no-progress", str(src), str(dst))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("AT RISK: 4 differences (content 2, missing 2): "), lines[0]
    assert "do not delete SRC" in lines[0]
    assert [line.split()[:3] for line in lines[1:5]] == [
        ["C", "content", "d/f0100"],
        ["C", "content", "d/f0200"],
        ["-", "missing", "d/f0300"],
        ["-", "missing", "d/f0301"],
    ]
    mode = [line for line in lines if line.startswith("p mode")]
    assert mode == ["p mode     835 entries from d/f0000 to d/f0836: -rw-r--r-- -> -rw-------"]
    assert len(lines) < 30, done.stdout  # a screenful

    every = zverify("compare", "--no-progress", "-v", str(src), str(dst)).stdout.splitlines()
    assert sum(line.startswith("p mode     d/f") for line in every) == FILES - 2
    assert any(line.startswith("AT RISK: 4 differences") for line in every)
    doc = json.loads(zverify("compare", "--no-progress", "--json", str(src), str(dst)).stdout)
    assert sum(d["kind"] == "mode" for d in doc["differences"]) == FILES - 2


def test_metadata_alone_is_no_data_at_risk_and_still_exit_1(tmp_path: Path) -> None:
    src, dst = _copy(tmp_path)
    for i in range(0, FILES, 2):
        (dst / "d" / f"f{i:04d}").chmod(0o640)
    (dst / "new").write_text("only in DST\n")
    done = zverify("compare", "--no-progress", str(src), str(dst))
    assert done.returncode == 1
    first = done.stdout.splitlines()[0]
    assert first.startswith("NO DATA AT RISK: every entry of SRC is in DST with its content"), first


def test_what_could_not_be_compared_is_at_risk(tmp_path: Path) -> None:
    src, dst = _copy(tmp_path)
    (dst / "d" / "f0005").chmod(0)
    blind = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", console_script()]
    done = subprocess.run(
        [*blind, "compare", "--no-progress", str(src), str(dst)],
        capture_output=True,
        text=True,
        cwd="/",
        check=False,
    )
    assert done.returncode == 2, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("AT RISK: 1 difference (error 1)"), first
