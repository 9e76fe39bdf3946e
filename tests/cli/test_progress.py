"""The progress line a person watches for hours: on a terminal only, with scaled units, a
rate, SRC's counts, and an ETA when SRC is a filesystem's root (statvfs tells its size).

The installed command runs with stderr on a pseudo-terminal of 160 columns."""

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.console import console_script, needs_installed_command
from tests.treebuilder import sparse
from zverify.fsinfo import estimate_tree

pytestmark = needs_installed_command
FILES = 20_000  # small files in SRC/many


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """SRC and DST each the root of a tmpfs: 64 MiB of data, 20,000 small files (their
    joined batches call the bar past tqdm's first 0.1 s, on a quick machine too), and a
    sparse file whose 8 GiB of holes are read as zeros (seconds of work, no memory)."""
    base = tmp_path_factory.mktemp("progress")
    roots = base / "src", base / "dst"
    for root in roots:
        root.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(root)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount tmpfs here: {done.stderr.strip()}")
    src, dst = roots
    try:
        (src / "data").write_bytes(os.urandom(64 << 20))
        (src / "many").mkdir()
        for i in range(FILES):
            (src / "many" / str(i)).write_text(str(i))
        sparse(src / "holes", 8 << 30, {})
        subprocess.run(["cp", "-a", f"{src}/.", str(dst)], check=True)
        yield src, dst
    finally:
        for root in roots:
            subprocess.run(["umount", "-l", str(root)], check=False)


def _frames(*args: str, columns: int = 160) -> tuple[int, list[str]]:
    """Run `zverify ARGS` with stderr on a terminal; every frame the bar drew on it.  With
    columns=0, stdout too is on that terminal, as in a session on a serial console."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    stdout = follower if columns == 0 else subprocess.DEVNULL
    proc = subprocess.Popen([console_script(), *args], stdout=stdout, stderr=follower, cwd="/")
    os.close(follower)
    drawn = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if not ready and proc.poll() is not None:
            break
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed its end
                break
            drawn += chunk
    os.close(leader)
    frames = [f.decode(errors="replace").strip() for f in drawn.split(b"\r")]
    return proc.wait(), [f for f in frames if f]


def test_on_a_filesystem_root_the_line_has_a_total_and_an_eta(mounted: tuple[Path, Path]) -> None:
    src, dst = mounted
    code, frames = _frames("compare", "--threads", "1", str(src), str(dst))
    assert code == 0, frames
    with_counts = [f for f in frames if "SRC " in f]
    assert with_counts, frames
    line = with_counts[-1]
    assert line.startswith("comparing ") and "%" in line and "ETA " in line, line
    assert "B/" in line and "B/s" in line, line  # e.g. 1.20GB/2.53GB  310MB/s
    assert "entries, DST " in line, line


def test_inside_a_filesystem_the_line_says_what_was_done(mounted: tuple[Path, Path]) -> None:
    src, dst = mounted
    code, frames = _frames("compare", "--threads", "1", str(src / "many"), str(dst / "many"))
    assert code == 0, frames
    assert frames and all("ETA" not in f for f in frames), frames
    assert any(" read " in f and "elapsed" in f for f in frames), frames


def test_a_terminal_of_no_width_still_gets_the_line(mounted: tuple[Path, Path]) -> None:
    """A serial console or a pseudo-terminal nobody sized reports 0 columns; tqdm, asked to
    follow the width (which it reads from stdout), then draws nothing at all.  The line is
    drawn 80 columns wide."""
    src, dst = mounted
    code, frames = _frames("compare", "--threads", "1", str(src), str(dst), columns=0)
    assert code == 0, frames
    drawn = [f for f in frames if f.startswith("comparing ") and "SRC " in f]
    assert drawn, frames
    assert all(len(f) <= 80 for f in drawn), drawn


def test_no_bar_with_no_progress_quiet_or_json(mounted: tuple[Path, Path]) -> None:
    src, dst = mounted
    for flag in ("--no-progress", "-q", "--json"):
        code, frames = _frames("compare", flag, str(src / "many"), str(dst / "many"))
        assert code == 0 and frames == [], (flag, frames)


def test_the_estimate_is_the_filesystems_use(mounted: tuple[Path, Path]) -> None:
    src, _ = mounted
    estimate = estimate_tree(str(src))
    assert estimate is not None and estimate.entries is not None
    assert FILES <= estimate.entries <= FILES + 100  # tmpfs counts the inodes in use
    # the holes take no space: the data, a page per small file, and under 8 MiB besides
    assert 64 << 20 <= estimate.bytes < (72 << 20) + FILES * 4096
    assert estimate_tree(str(src / "many")) is None  # its share of the filesystem is unknown


# -- every other command draws the same line (zverify.progress._line) ----------------------


def test_manifest_draws_compares_line(mounted: tuple[Path, Path], tmp_path: Path) -> None:
    """At a filesystem root: a total, a rate and an ETA, and the entries counted against the
    filesystem's; inside one, what was read and the time spent."""
    src, _ = mounted
    out = str(tmp_path / "m.zvm")
    code, frames = _frames("manifest", "--threads", "1", str(src), "-o", out)
    assert code == 0, frames
    counted = [f for f in frames if f.startswith("recording ") and " entries" in f]
    assert counted, frames
    line = counted[-1]
    assert "%" in line and "ETA " in line and "B/s" in line, line
    total = f"/{FILES / 1000:.1f}k"  # 20,004/20.0k entries: the estimate's count
    assert total in line.split("  ")[-1], line
    code, frames = _frames("manifest", "--threads", "1", str(src / "many"), "-o", out)
    assert code == 0 and any(" read " in f and "elapsed" in f for f in frames), frames
    assert all("ETA" not in f and "[" not in f for f in frames), frames  # not the old format


def test_stream_verify_draws_the_same_line() -> None:
    """A file of known size: its name, percentage, bytes of the total, rate, ETA (tqdm's
    default bar with its '|' and '[elapsed<remaining]' is gone)."""
    stream = Path(__file__).parents[1] / "data" / "streams" / "full_fs_s1.zstream"
    code, frames = _frames("stream", "verify", str(stream))
    assert code == 0, frames
    lines = [f for f in frames if f.startswith(str(stream))]
    assert lines, frames
    assert all("%" in f and "B/" in f and "ETA " in f for f in lines), lines
    assert all("|" not in f and "[" not in f for f in lines), lines
