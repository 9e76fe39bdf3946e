"""`zverify manifest` through the installed console script: usage errors, stdout, and no
half-written file ever left where the manifest should be."""

import subprocess
from pathlib import Path

import pytest

from tests.manifest.helpers import run


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "tar"], "unknown --format 'tar'"),
        (["--hash", "sha256"], "native manifests hold xxh3-128 or blake3 digests"),
        (["--format", "b3sum", "--hash", "sha256"], "--format b3sum holds blake3 digests"),
        (["--hash", "md4"], "unknown hash algorithm 'md4'"),
        (["--threads", "0"], "--threads must be between 1 and 256"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    rich_tree: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "m.zvm"
    done = run("manifest", str(rich_tree), "-o", str(out), *args)
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and message in lines[0], lines
    assert not out.exists()


def test_unreadable_root_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "m.zvm"
    done = run("manifest", str(tmp_path / "absent"), "-o", str(out))
    assert done.returncode == 2 and b"cannot read TREE root" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_output_into_a_directory_is_refused(rich_tree: Path, tmp_path: Path) -> None:
    done = run("manifest", str(rich_tree), "-o", str(tmp_path))
    assert done.returncode == 2 and b"is a directory" in done.stderr


def test_stdout_manifest_compares_from_stdin(rich_tree: Path) -> None:
    written = run("manifest", "-q", str(rich_tree), "-o", "-")
    assert written.returncode == 0 and written.stdout.startswith(b'{"zverify_manifest":1,')
    checked = run("compare", "--no-progress", "-", str(rich_tree), stdin=written.stdout)
    assert checked.returncode == 0, checked.stderr.decode()


def test_an_existing_manifest_is_replaced_whole(rich_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.zvm.gz"
    out.write_bytes(b"old")
    assert run("manifest", "-q", str(rich_tree), "-o", str(out)).returncode == 0
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # gzip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.zvm.gz"]
    assert run("compare", "--no-progress", str(out), str(rich_tree)).returncode == 0


def test_one_file_system_carries_over_to_the_live_side(tmp_path: Path) -> None:
    """A manifest written with -x leaves out what is mounted below; the tree it is compared
    with is walked the same way, or every file of the mount would show as extra."""
    tree = tmp_path / "tree"
    (tree / "mnt").mkdir(parents=True)
    (tree / "file").write_bytes(b"x")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "none", str(tree / "mnt")], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (tree / "mnt/inside").write_bytes(b"y")
        out = tmp_path / "x.zvm"
        assert run("manifest", "-q", "-x", str(tree), "-o", str(out)).returncode == 0
        done = run("compare", str(out), str(tree))
        assert done.returncode == 0, done.stdout.decode()
        assert b"--one-file-system: so is the other side walked" in done.stdout
    finally:
        subprocess.run(["umount", str(tree / "mnt")], check=True)
