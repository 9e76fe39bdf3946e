"""Text output has no escape flag (JSON has): two different names, targets or xattr names
must never print alike (finding L4/M4 of the adversarial report)."""

import os
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from zverify.pathnames import for_terminal

LOOKALIKES = [
    (b"h\xff", b"h\\xff"),  # the byte 0xFF, and a backslash name
    (b"a\nb", b"a\\nb"),  # a newline, and backslash-n
    (b" lead", b"lead"),  # a space at the start merged into the column gap
    (b"trail ", b"trail"),
    (b"tab\there", b"tab\\x09here"),
]


@pytest.mark.parametrize(("one", "other"), LOOKALIKES)
def test_lookalike_names_print_differently(one: bytes, other: bytes) -> None:
    assert for_terminal(one) != for_terminal(other)
    assert "\n" not in for_terminal(one) + for_terminal(other)


def test_plain_names_print_as_they_are() -> None:
    assert for_terminal("café/x y.txt".encode()) == "café/x y.txt"


@needs_installed_command
def test_symlink_targets_xattrs_and_hardlinks_are_told_apart(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    for root, link, xattr in ((src, b"t\xff", b"user.\xff"), (dst, b"t\\xff", b"user.\\xff")):
        root.mkdir()
        os.symlink(link, bytes(root) + b"/link")
        (root / "xa").write_bytes(b"y")
        os.setxattr(bytes(root) + b"/xa", xattr, b"v")
        (root / "h1").write_bytes(b"x")
    os.link(src / "h1", src / "h2")  # one inode in SRC, two in DST
    (dst / "h2").write_bytes(b"x")
    done = zverify("compare", "--no-progress", "--ignore", "mtime", str(src), str(dst))
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line[1:2] == " "}
    assert done.returncode == 1, done.stdout
    assert lines["symlink"].endswith("-> 't\\xff' vs -> 't\\\\xff'")
    assert lines["xattr"].endswith("+user.\\\\xff -user.\\xff")
    assert lines["hardlink"].endswith(": h1, h2")
