"""The command line as a script sees it: exit codes, stdout/stderr, JSON, text."""

import json
import os
import subprocess
from pathlib import Path

import blake3
import pytest

from tests.cli.console import _env, console_script, needs_installed_command
from tests.cli.console import zverify as cli
from tests.treebuilder import write
from zverify.pathnames import restore

pytestmark = needs_installed_command


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "a.txt", b"alpha\n")
    write(src / "sub/b.bin", b"\x00\x01" * 5000)
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return src, dst


def test_identical_exit_0_and_nothing_on_stderr(pair: tuple[Path, Path]) -> None:
    done = cli("compare", *map(str, pair))
    assert done.returncode == 0
    assert "IDENTICAL" in done.stdout
    assert done.stderr == ""  # no progress bar when stderr is not a TTY


def test_difference_lines_have_codes_and_sorted_paths(pair: tuple[Path, Path]) -> None:
    src, dst = pair
    (dst / "a.txt").write_bytes(b"ALPHA\n")
    os.chmod(dst / "sub/b.bin", 0o600)
    (src / "z-only").write_bytes(b"")
    os.utime(src, ns=(0, (dst.stat().st_mtime_ns)))
    done = cli("compare", "-v", "--ignore", "mtime", str(src), str(dst))  # every line, as found
    assert done.returncode == 1
    lines = [line for line in done.stdout.splitlines() if line[:2] in ("C ", "p ", "- ")]
    assert [line.split()[:3] for line in lines] == [
        ["C", "content", "a.txt"],
        ["p", "mode", "sub/b.bin"],
        ["-", "missing", "z-only"],
    ]
    # by default what puts data at risk first, each line in the order found
    done = cli("compare", "--ignore", "mtime", str(src), str(dst))
    lines = [line for line in done.stdout.splitlines() if line[:2] in ("C ", "p ", "- ")]
    assert [line.split()[2] for line in lines] == ["a.txt", "z-only", "sub/b.bin"]


def test_json_document_schema(pair: tuple[Path, Path]) -> None:
    src, dst = pair
    (dst / "a.txt").write_bytes(b"changed\n")
    done = cli("compare", "--json", "--ignore", "mtime", str(src), str(dst))
    doc = json.loads(done.stdout)
    assert done.returncode == 1 == doc["exit_code"]
    assert doc["identical"] is False and doc["profile"] == "full"
    assert doc["differences"][0]["path"] == "a.txt"
    assert doc["differences"][0]["kind"] == "content"
    assert doc["counts"] == {"content": 1}
    assert doc["total"] == 1 and doc["complete"] is True
    for side in ("src", "dst"):
        assert isinstance(doc["sizes"][side]["du_bytes"], int)
        assert isinstance(doc["sizes"][side]["du_apparent_bytes"], int)
        assert doc["sizes"][side]["counts"] == {"dir": 2, "file": 2}
    names = [row["component"] for row in doc["sizes"]["explanation"]]
    assert "unexplained" in names and "hardlinks" in names


def test_invalid_utf8_paths_are_escaped_losslessly(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    raw = b"caf\xe9\\x.txt"
    (Path(os.fsdecode(bytes(src) + b"/" + raw))).write_bytes(b"")
    doc = json.loads(cli("compare", "--json", str(src), str(dst)).stdout)
    (diff,) = [d for d in doc["differences"] if d["kind"] == "missing"]
    assert diff["path_escaped"] is True
    assert restore(diff["path"], True) == raw


def test_newline_in_name_stays_on_one_text_line(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "two\nlines", b"")
    dst.mkdir()
    os.utime(dst, ns=(0, src.stat().st_mtime_ns))
    out = cli("compare", str(src), str(dst)).stdout
    assert "- missing  two\\nlines" in out.splitlines()[1]  # after the answer


def test_unreadable_root_exits_2_with_message(tmp_path: Path) -> None:
    done = cli("compare", str(tmp_path), str(tmp_path / "nope"))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "DST root" in done.stderr and "nope" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "everything"], "unknown profile"),
        (["--ignore", "colour"], "unknown attribute"),
        (["--ignore", "error"], "cannot be ignored"),
        (["--hash", "md5"], "unknown hash"),
        (["--mtime-window", "-1"], "--mtime-window must be"),
    ],
)
def test_usage_errors_exit_2(pair: tuple[Path, Path], args: list[str], message: str) -> None:
    done = cli("compare", *args, *map(str, pair))
    assert done.returncode == 2
    assert message in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop capabilities")
def test_unreadable_file_is_an_error_never_identical(pair: tuple[Path, Path]) -> None:
    src, dst = pair
    os.chmod(src / "a.txt", 0)
    os.chmod(dst / "a.txt", 0)
    done = subprocess.run(
        [
            "setpriv",
            "--bounding-set",
            "-dac_override,-dac_read_search",
            console_script(),
            "compare",
            "--json",
            str(src),
            str(dst),
        ],
        capture_output=True,
        text=True,
        cwd="/",
        env=_env({}),
    )
    doc = json.loads(done.stdout)
    assert done.returncode == 2 and doc["identical"] is False
    errors = [d for d in doc["differences"] if d["kind"] == "error"]
    assert [(e["path"], "Permission denied" in e["detail"]) for e in errors] == [("a.txt", True)]


def test_blake3_digests_match_the_blake3_package(pair: tuple[Path, Path]) -> None:
    from zverify.hashing import Algorithm
    from zverify.walk import TreeWalk, WalkOptions

    src, dst = pair
    walk = TreeWalk(str(src), WalkOptions(algorithm=Algorithm.BLAKE3, threads=2))
    digests = {e.path: e.digest for e in walk if e.digest is not None}
    walk.close()
    assert digests == {
        b"a.txt": blake3.blake3(b"alpha\n").digest(),
        b"sub/b.bin": blake3.blake3(b"\x00\x01" * 5000).digest(),
    }
    (dst / "a.txt").write_bytes(b"alphA\n")
    os.utime(
        dst / "a.txt", ns=((src / "a.txt").stat().st_atime_ns, (src / "a.txt").stat().st_mtime_ns)
    )
    done = cli("compare", "--hash", "blake3", "--json", str(src), str(dst))
    assert json.loads(done.stdout)["counts"] == {"content": 1}


def test_progress_bar_only_on_a_terminal(pair: tuple[Path, Path]) -> None:
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    # a new pty is 0 columns wide, and tqdm draws nothing in 0 columns
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    done = cli("compare", *map(str, pair), stderr=follower, text=False)
    os.close(follower)
    shown = os.read(leader, 65536).decode(errors="replace")
    os.close(leader)
    assert done.returncode == 0
    assert "comparing" in shown and "B/s" in shown  # tqdm drew on the terminal
    assert b"comparing" not in done.stdout
