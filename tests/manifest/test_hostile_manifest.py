"""Hostile manifests, through the installed `zverify compare`: names that leave the tree are
bad entries (exit 2 naming the line) and nothing outside the tree is ever opened or stat'ed
because of them (checked with strace); absurd lines, nesting and keywords end with one line
naming the line, in memory that does not grow with the file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import blake3
import pytest

from tests.cli.console import console_script, zverify_peak_rss
from tests.manifest.helpers import compare_fails, write_manifest
from tests.treebuilder import write

MB = 1 << 20
RSS_LIMIT_MB = 60
SECRET = "zv-outside-sentinel"  # a file beside the tree: no syscall may name it
MD5 = "d41d8cd98f00b204e9800998ecf8427e"
SHA = "ab" * 32


def measured(*args: str, tmp: Path) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MB) of the installed console script."""
    code, _, err, peak = zverify_peak_rss(*args, tmp=tmp)
    return code, err.decode(errors="surrogateescape"), peak


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """base/t with a file, a directory and `link -> ..` (the base, where SECRET is)."""
    (tmp_path / SECRET).write_bytes(b"secret\n")
    root = tmp_path / "t"
    write(root / "a", b"a\n")
    write(root / "sub/b", b"b\n")
    os.symlink("..", root / "link")
    return root


def signed(lines: list[bytes]) -> bytes:
    """Header and entry lines, and the trailer a writer would add."""
    body = b"".join(lines)
    end = {"end": {"entries": len(lines) - 1}, "blake3": blake3.blake3(body).hexdigest()}
    return body + json.dumps(end, separators=(",", ":")).encode() + b"\n"


def with_entry(manifest: Path, out: Path, name: str, after: int = 1) -> Path:
    """The manifest with one more file entry, `name`, as its line after+1 (re-signed)."""
    lines = manifest.read_bytes().splitlines(keepends=True)[:-1]
    entry = {"p": name, "t": "file", "mode": "0644", "uid": 0, "gid": 0, "mtime": 1,
             "size": 7, "alloc": 4096, "nlink": 1, "hash": "00" * 16}  # fmt: skip
    lines.insert(after + 1, json.dumps(entry, separators=(",", ":")).encode() + b"\n")
    out.write_bytes(signed(lines))
    return out


def strace(tmp: Path, *args: str) -> tuple[int, str, str]:
    """(exit code, stderr, file syscalls) of the installed zverify under strace -f."""
    log = tmp / f"strace-{time.monotonic_ns()}"
    cmd = ["strace", "-f", "-qq", "-e", "trace=%file", "-o", str(log), console_script(), *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    return done.returncode, done.stderr, log.read_text()


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")


# -- names that leave the tree ----------------------------------------------------------------


@needs_strace
def test_a_name_through_a_symlink_is_compared_never_followed(tree: Path, tmp_path: Path) -> None:
    manifest = write_manifest(tree, tmp_path / "m.zvm")
    edited = with_entry(manifest, tmp_path / "e.zvm", f"link/{SECRET}", after=3)
    code, err, calls = strace(tmp_path, "compare", "--quiet", str(edited), str(tree))
    assert code == 1, err  # "link/...": only in the manifest
    assert SECRET not in calls


@needs_strace
@pytest.mark.parametrize(
    "name", [f"../{SECRET}", f"/{SECRET}", "a//b", "sub/./b", "sub/..", "x\\x00y"]
)
def test_native_names_leaving_the_tree_are_bad_entries(
    tree: Path, tmp_path: Path, name: str
) -> None:
    manifest = write_manifest(tree, tmp_path / "m.zvm")
    edited = with_entry(manifest, tmp_path / "e.zvm", name, after=0)
    code, err, calls = strace(tmp_path, "compare", str(edited), str(tree))
    assert code == 2 and "line 2: the name" in err and len(err.strip().splitlines()) == 1, err
    assert SECRET not in calls


@needs_strace
@pytest.mark.parametrize(
    "name", [f"../{SECRET}", f"/{SECRET}", "a//b", "sub/./b", "sub/..", "x\0y", f"link/{SECRET}"]
)
def test_checkfile_names_leaving_the_tree_are_refused_never_opened(
    tree: Path, tmp_path: Path, name: str
) -> None:
    sums = tmp_path / "SHA256SUMS"
    sums.write_bytes(SHA.encode() + b"  a\n" + SHA.encode() + b"  " + name.encode() + b"\n")
    code, err, calls = strace(tmp_path, "compare", "--profile", "content", str(sums), str(tree))
    if name.startswith("link/"):
        assert code == 1, err  # a name like any other, only in the list: never followed
    else:
        assert code == 2 and "line 2: the name" in err and len(err.strip().splitlines()) == 1, err
    assert SECRET not in calls


def _bag(root: Path, tag_lines: list[str]) -> Path:
    import hashlib

    (root / "data").mkdir(parents=True)
    (root / "data" / "a").write_bytes(b"a\n")
    (root / "bagit.txt").write_text("BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n")
    digest = hashlib.sha256(b"a\n").hexdigest()
    (root / "manifest-sha256.txt").write_text(f"{digest}  data/a\n")
    (root / "tagmanifest-sha256.txt").write_text("".join(f"{'0' * 64}  {n}\n" for n in tag_lines))
    return root / "bagit.txt"


@needs_strace
@pytest.mark.parametrize(
    "name", [f"../{SECRET}", f"link/{SECRET}", "FULL", "link", "fifo", "data/a"]
)
def test_bag_tag_files_are_opened_inside_the_bag_only(tmp_path: Path, name: str) -> None:
    (tmp_path / SECRET).write_bytes(b"secret\n")
    bag = tmp_path / "bag"
    name = str(tmp_path / SECRET) if name == "FULL" else name
    bagit_txt = _bag(bag, [name])
    os.symlink("..", bag / "link")
    os.mkfifo(bag / "fifo")
    code, err, calls = strace(
        tmp_path, "compare", "--profile", "content", str(bagit_txt), str(bag / "data")
    )
    assert code == 2 and "tagmanifest-sha256.txt line 1" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert SECRET not in calls


@needs_strace
def test_a_symlinked_bag_manifest_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / SECRET).write_text("x")
    bag = tmp_path / "bag"
    bagit_txt = _bag(bag, [])
    (bag / "manifest-sha256.txt").unlink()
    os.symlink(f"../{SECRET}", bag / "manifest-sha256.txt")
    code, err, calls = strace(
        tmp_path, "compare", "--profile", "content", str(bagit_txt), str(bag / "data")
    )
    assert code == 2 and "manifest-sha256.txt" in err, err
    assert f'openat(AT_FDCWD, "{tmp_path / SECRET}"' not in calls
    assert not [c for c in calls.splitlines() if SECRET in c and "O_NOFOLLOW" not in c]


@pytest.mark.parametrize(
    ("fmt", "text", "line"),
    [
        ("mtree", f"#mtree\n. type=dir\n./../{SECRET} type=file\n", 3),
        ("mtree", f"#mtree\n. type=dir\n/etc/{SECRET} type=file\n", 3),
        ("mtree", "#mtree\n. type=dir\n    x\\000y type=file\n", 3),
        ("mtree", "#mtree\n. type=dir\n    \\056\\056 type=dir\n", 3),
        ("hashdeep", f"%%%% HASHDEEP-1.0\n%%%% size,md5,filename\n1,{MD5},../{SECRET}\n", 3),
        ("hashdeep", f"%%%% HASHDEEP-1.0\n%%%% size,md5,filename\n1,{MD5},a//b\n", 3),
    ],
)
def test_foreign_names_leaving_the_tree(
    tree: Path, tmp_path: Path, fmt: str, text: str, line: int
) -> None:
    spec = tmp_path / f"m.{fmt}"
    spec.write_text(text)
    message = compare_fails(spec, tree, "--profile", "content")
    assert f"line {line}:" in message and "name" in message, message


def test_bag_payload_names_leaving_the_tree(tmp_path: Path) -> None:
    bagit_txt = _bag(tmp_path / "bag", [])
    (tmp_path / "bag" / "manifest-sha256.txt").write_text(f"{SHA}  data/../../{SECRET}\n")
    message = compare_fails(bagit_txt, tmp_path / "bag" / "data", "--profile", "content")
    assert "manifest-sha256.txt line 1" in message and "'..'" in message


def test_files_from_list_in_a_header_must_stay_inside(tree: Path, tmp_path: Path) -> None:
    manifest = write_manifest(tree, tmp_path / "m.zvm")
    lines = manifest.read_bytes().splitlines(keepends=True)[:-1]
    header = json.loads(lines[0])
    header["filter"] = {"rules": [], "listed": ["a", f"../{SECRET}"]}
    lines[0] = json.dumps(header, separators=(",", ":")).encode() + b"\n"
    (tmp_path / "f.zvm").write_bytes(signed(lines))
    message = compare_fails(tmp_path / "f.zvm", tree)
    assert "line 1: bad header: its --files-from list: the name" in message


# -- absurd sizes, nesting and keywords --------------------------------------------------------


@pytest.mark.parametrize("what", ["zeros", "gzip bomb", "native line"])
def test_huge_lines_use_bounded_memory(tree: Path, tmp_path: Path, what: str) -> None:
    seen = []
    for size in (64 * MB, 512 * MB):
        if what == "zeros":
            path = tmp_path / f"z{size}.zvm"
            path.write_bytes(b"")
            os.truncate(path, size)
            expect = "line 1: not a manifest: a first line longer than 1048576 bytes"
        elif what == "gzip bomb":
            path = tmp_path / f"b{size}.zvm.gz"
            with gzip.open(path, "wb", compresslevel=1) as f:
                chunk = bytes(8 * MB)
                for _ in range(size // len(chunk) // 4):  # 16 and 128 MB inflated
                    f.write(chunk)
            expect = "line 1: not a manifest: a first line longer than"
        else:
            manifest = write_manifest(tree, tmp_path / f"m{size}.zvm")
            lines = manifest.read_bytes().splitlines(keepends=True)
            path = tmp_path / f"n{size}.zvm"
            path.write_bytes(b"".join(lines[:3]) + b'{"p":"')
            os.truncate(path, size)
            expect = "line 4: a line longer than 16777216 bytes"
        code, err, rss = measured("compare", str(path), str(tree), tmp=tmp_path)
        assert code == 2 and expect in err and len(err.strip().splitlines()) == 1, err
        seen.append(rss)
    limit = RSS_LIMIT_MB + (20 if what == "native line" else 0)  # one 16 MiB line is read
    assert max(seen) < limit and abs(seen[1] - seen[0]) < 6, seen


def test_deep_json_is_a_bad_line(tree: Path, tmp_path: Path) -> None:
    manifest = write_manifest(tree, tmp_path / "m.zvm")
    lines = manifest.read_bytes().splitlines(keepends=True)
    (tmp_path / "d.zvm").write_bytes(lines[0] + b"[" * 200_000 + b"\n")
    assert "line 2: JSON nested too deeply" in compare_fails(tmp_path / "d.zvm", tree)
    (tmp_path / "h.zvm").write_bytes(b'{"zverify_manifest":' + b"[" * 200_000 + b"\n")
    assert "line 1: not a zverify manifest" in compare_fails(tmp_path / "h.zvm", tree)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("#mtree\n. type=dir\n" + "    x type=dir\n" * 40_000, "deeper or longer"),
        ("#mtree\n/set " + " ".join(f"k{i}=1" for i in range(100_000)) + "\n", "unknown keyword"),
        ("#mtree\n. type=dir\n" + ("x=" + "y" * 999 + " \\\n") * 1100 + "y\n", "continued past"),
        ("#mtree\n. type=dir\n    x size=" + "9" * 5000 + "\n", "bad value"),
    ],
)
def test_absurd_mtree(tree: Path, tmp_path: Path, text: str, expect: str) -> None:
    spec = tmp_path / "s.mtree"
    spec.write_text(text)
    code, err, rss = measured("compare", "--profile", "content", str(spec), str(tree), tmp=tmp_path)
    assert code == 2 and expect in err and "line " in err, err
    assert len(err.strip().splitlines()) == 1 and rss < RSS_LIMIT_MB + 40, (err, rss)


@pytest.mark.parametrize(
    ("row", "expect"),
    [
        ("9" * 5000 + f",{MD5},a", "line 3: not size,digests...,filename"),
        (f"1,{MD5}\xff,a", "line 3: a size or digest that is not ASCII"),
        ("%%%% size,sha256,filename", "line 3: a second %%%% column line"),
    ],
)
def test_absurd_hashdeep(tree: Path, tmp_path: Path, row: str, expect: str) -> None:
    spec = tmp_path / "l.hashdeep"
    spec.write_bytes(f"%%%% HASHDEEP-1.0\n%%%% size,md5,filename\n{row}\n".encode("latin-1"))
    assert expect in compare_fails(spec, tree, "--profile", "content")


# Crashes the fuzzers found (tools/fuzzing/manifest.py): each is now one bad line, exit 2.
@pytest.mark.parametrize(
    ("line", "change", "expect"),
    [
        (2, {"t": "file", "nlink": 1, "data": None}, "line 3: missing or null value for 'data'"),
        (2, {"mode": [1]}, "line 3: 'mode' must be octal permission bits"),
        (0, {"root": [[]]}, "line 1: bad header"),
        (0, {"filter": {"rules": [], "listed": [""]}}, "line 1: bad header: its --files-from"),
    ],
)
def test_values_of_the_wrong_type(
    tree: Path, tmp_path: Path, line: int, change: dict, expect: str
) -> None:
    manifest = write_manifest(tree, tmp_path / "m.zvm")
    lines = manifest.read_bytes().splitlines(keepends=True)[:-1]
    obj = json.loads(lines[line]) | change
    lines[line] = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    (tmp_path / "w.zvm").write_bytes(signed(lines))
    assert expect in compare_fails(tmp_path / "w.zvm", tree)
