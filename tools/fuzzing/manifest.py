"""Fuzz inputs and the target for the manifest readers: native manifests (with the filter a
header carries, compiled by the C filter), mtree specs, hashdeep lists, checkfiles and BagIt
bags, all opened the way `zverify compare` opens a side (zverify.trees.open.manifest_side)
and read to the end.  Shared by the brief, seeded CI fuzz
(tests/manifest/test_fuzz_manifest.py) and the long harness (bench/fuzz_parsers.py).

The target raises nothing for any input but AssertionError (a broken invariant); a reader
rejecting its input raises ManifestError, the documented error, which the target catches.
Anything else is a crash.

Inputs are valid seeds of each format put through line edits that put hostile values in
(names with `..`, absolute names, NUL, huge or negative numbers, deep nesting, unknown
keywords, long lines) and byte mutations; native manifests are re-signed (trailer digest
and count recomputed) half the time so that the reader gets to the end.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import blake3
from hypothesis import strategies as st

from tools.fuzzing.sendstream import Mutation, apply, mutation
from zverify.errors import ManifestError
from zverify.filters import filtered
from zverify.manifest.bounds import bad_name
from zverify.trees.open import manifest_side

FORMATS = ("native", "mtree", "hashdeep", "checkfile", "bagit")
DIGEST = "5c73e7e3dcbb0395e841f27363849a18"  # 16 bytes: an xxh3-128 digest
SHA = "ab" * 32

HOSTILE: list[Any] = [
    -1, 0, 2**63, 2**64, 2**100, 10**50, 1.5, True, None, "", "../x", "/etc/passwd",
    "a//b", "a/./b", "a/..", "\\x00x", "\\x2e\\x2e/x", "x" * 5000, [], [[[[[]]]]], {"a": 1},
    [1, 2], [[0, 1], [1, 0]], [[0, 5], [5, 3]], [["a", "b"], ["a", "b"]], ["read", 5, -1],
    "dir", "file", "symlink", "char", "0777", "99999", "zz", "\\xzz", DIGEST, DIGEST[:-1],
]  # fmt: skip
ENTRY_KEYS = ["p", "t", "mode", "uid", "gid", "mtime", "size", "alloc", "nlink", "hl", "data",
              "extents", "hash", "link", "rdev", "xattrs", "error", "changed", "user"]  # fmt: skip
HEADER_KEYS = ["zverify_manifest", "algorithm", "root", "filter", "filesystem", "xattrs",
               "unverifiable", "one_file_system", "host"]  # fmt: skip
FILTERS: list[Any] = [
    None, {"rules": [["-", "*.tmp"], ["+", "keep/**"]], "listed": None},
    {"rules": [["-", "["]], "listed": None}, {"rules": [], "listed": ["a", "sub/b"]},
    {"rules": [], "listed": ["../x"]}, {"rules": [], "listed": ["", "/abs", "a//b"]},
    {"rules": [["?", "x"]], "listed": None}, {"rules": "x", "listed": 5},
    {"rules": [["-", "**/**/**/**/[!a-z]*?\\"]], "listed": ["a\\x00b"]},
]  # fmt: skip


def _header(filter_: Any = None) -> dict[str, Any]:
    return {
        "zverify_manifest": 1, "zverify": "0.1.0", "algorithm": "xxh3-128", "root": "/t",
        "host": "h", "created": "2026-01-01T00:00:00Z",
        "filesystem": {"type": "ext4", "source": "/dev/x", "mountpoint": "/", "zfs": None},
        "xattrs": True, "one_file_system": False, "filter": filter_, "unverifiable": [],
    }  # fmt: skip


def _entries() -> list[dict[str, Any]]:
    common = {"mode": "0644", "uid": 0, "gid": 0, "mtime": 1, "alloc": 4096}
    return [
        {"p": "", "t": "dir", **common, "mode": "0755", "size": 4096, "xattrs": []},
        {"p": "a", "t": "file", **common, "size": 3, "nlink": 2, "hl": 1, "hash": DIGEST},
        {"p": "b", "t": "file", **common, "size": 9, "nlink": 1, "data": 4,
         "extents": [[0, 4]], "hash": DIGEST, "xattrs": [["user.x", "v\\x00"]]},
        {"p": "dev", "t": "char", **common, "size": 0, "nlink": 1, "rdev": [1, 3]},
        {"p": "link", "t": "symlink", **common, "size": 1, "nlink": 1, "link": "/"},
        {"p": "sub", "t": "dir", **common, "size": 4096},
        {"p": "sub/e", "t": "file", **common, "size": 5, "nlink": 1, "error": ["read", 5, 0]},
        {"p": "sub/z", "t": "file", **common, "size": 0, "nlink": 2, "hl": 1, "hash": DIGEST},
    ]  # fmt: skip


def native_manifest(lines: list[bytes]) -> bytes:
    """Header and entry lines (with newlines) and the trailer a writer would add."""
    body = b"".join(lines)
    end = {"end": {"entries": len(lines) - 1}, "blake3": blake3.blake3(body).hexdigest()}
    return body + json.dumps(end, separators=(",", ":")).encode() + b"\n"


def _line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


MTREE = b"""#mtree
/set type=file uid=0 gid=0 mode=0644
. type=dir mode=0755
    a size=3 sha256=%s time=1.5
    sub type=dir
        b\\040c size=0 sha256=%s nlink=1 \\
            time=2.000000001
        l type=link link=../a
    ..
./sub/d type=file size=1 sha256=%s
..
""" % (SHA.encode(), SHA.encode(), SHA.encode())
HASHDEEP = (
    b"""%%%% HASHDEEP-1.0
%%%% size,md5,sha256,filename
## Invoked from: /srv
3,d41d8cd98f00b204e9800998ecf8427e,"""
    + SHA.encode()
    + b""",/srv/data/a
5,d41d8cd98f00b204e9800998ecf8427e,"""
    + SHA.encode()
    + b""",/srv/data/sub/b,c
"""
)
MTREE_LINES = [b"..", b"/set type=dir", b"./../x type=file", b"/etc/passwd type=file",
               b"\\000 type=file", b"x type=dir", b"x unknown=1", b"x size=99999999999999999999",
               b"x time=1.1234567890", b"x \\", b"x xattr.user.a=1", b"/unset all",
               b"\\M^? type=file", b"x type=wormhole", b"x device=1,2", b"x ignore"]  # fmt: skip
HASHDEEP_LINES = [b"1,x,y,../x", b"1,x,y,/etc/passwd", b"%%%% size,filename", b"1,,,a//b",
                  b"-1,x,y,z", b"1,x,y,a\x00b", b"%%%% md5,filename"]  # fmt: skip


CHECKFILE = (
    b"# made by hand\n"
    + SHA.encode() + b"  a\n"
    + b"\\" + SHA.encode() + b" *sub/new\\nline\\\\x\n"
    + b"SHA256 (sub/(b) = c) = " + SHA.encode() + b"\n"
)  # fmt: skip
CHECK_LINES = [SHA.encode() + b"  ../x", SHA.encode() + b"  /etc/passwd", SHA.encode() + b" a",
               b"\\" + SHA.encode() + b"  a\\tb", b"\\" + SHA.encode() + b"  a\\",
               b"MD5 (a) = " + DIGEST.encode(), b"BLAKE2b (a) = " + SHA.encode(),
               SHA.encode() + b"  a\x00b", SHA.encode() + b"  ./", b"", b"#",
               SHA.encode() + b"  a\r", DIGEST.encode() + b"  z"]  # fmt: skip


def _bag_files() -> dict[str, bytes]:
    import hashlib

    data = b"hello\n"
    manifest = f"{hashlib.sha256(data).hexdigest()}  data/a.txt\n".encode()
    bagit_txt = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
    info = b"Payload-Oxum: 6.1\nBagging-Date: 2026-01-01\n"
    tags = b"".join(
        f"{hashlib.sha256(c).hexdigest()}  {n}\n".encode()
        for n, c in (("bagit.txt", bagit_txt), ("manifest-sha256.txt", manifest))
    )
    return {
        "bagit.txt": bagit_txt,
        "manifest-sha256.txt": manifest,
        "bag-info.txt": info,
        "tagmanifest-sha256.txt": tags,
        "data/a.txt": data,
    }


BAG_LINES = [b"0" * 64 + b"  ../outside", b"0" * 64 + b"  /etc/passwd", b"0" * 64 + b"  link/x",
             b"0" * 64 + b"  data/../../x", b"0" * 64 + b"  data/a%2Fb", b"zz  data/x",
             b"Payload-Oxum: 1.99", b"BagIt-Version: 0.97", b"0" * 64 + b"  fifo"]  # fmt: skip


@cache
def _native_seeds() -> list[list[bytes]]:
    entries = [_line(e) for e in _entries()]
    return [[_line(_header(f)), *entries] for f in FILTERS[:4]]


TEXT_FORMATS = {
    "mtree": (MTREE, MTREE_LINES),
    "hashdeep": (HASHDEEP, HASHDEEP_LINES),
    "checkfile": (CHECKFILE, CHECK_LINES),
}
Edit = tuple[int, int, int]  # (line, key, value) indexes, taken modulo the choices


def _edit_native(lines: list[bytes], edit: Edit) -> list[bytes]:
    index, key, value = edit
    at = index % len(lines)
    try:
        obj = json.loads(lines[at])
    except ValueError:
        return lines
    keys = HEADER_KEYS if at == 0 else ENTRY_KEYS
    name = keys[key % len(keys)]
    if name == "filter":
        obj[name] = FILTERS[value % len(FILTERS)]
    elif value % 11 == 10:
        obj.pop(name, None)
    else:
        obj[name] = HOSTILE[value % len(HOSTILE)]
    return [*lines[:at], _line(obj), *lines[at + 1 :]]


def _edit_text(data: bytes, pool: list[bytes], edit: Edit) -> bytes:
    lines = data.split(b"\n")
    index, kind, value = edit
    at = index % (len(lines) + 1)
    extra = pool[value % len(pool)]
    if kind % 4 == 0:
        lines.insert(at, extra)
    elif kind % 4 == 1 and at < len(lines):
        lines[at] = extra
    elif kind % 4 == 2:
        lines.insert(at, extra * (1 + value % 50))  # deep or long
    else:
        lines[at:at] = [extra] * (1 + value % 200)  # repeated
    return b"\n".join(lines)


Case = tuple[str, int, list[Edit], list[Mutation], bool]


def manifest_inputs(max_edits: int = 4) -> st.SearchStrategy[Case]:
    """(format, which file/seed, line edits, byte mutations, re-sign)."""
    edit = st.tuples(st.integers(0, 1 << 10), st.integers(0, 1 << 10), st.integers(0, 1 << 10))
    return st.tuples(
        st.sampled_from(FORMATS),
        st.integers(0, 1 << 8),
        st.lists(edit, max_size=max_edits),
        st.lists(mutation(1 << 12), max_size=2),
        st.booleans(),
    )


def _mutate(data: bytes, muts: list[Mutation]) -> bytes:
    buf = bytearray(data)
    for m in muts:
        buf = apply(buf, m, 1, data)
    return bytes(buf)


@cache
def _scratch() -> Path:
    path = Path(tempfile.mkdtemp(prefix="zverify-fuzz-manifest-"))
    return path


def materialize(case: Case, where: Path) -> Path:
    """Write the case's manifest (a bag: its directory) under `where`; the path to open."""
    fmt, which, edits, muts, resign = case
    if fmt == "native":
        lines = _native_seeds()[which % len(_native_seeds())]
        for e in edits:
            lines = _edit_native(lines, e)
        data = native_manifest(lines) if resign else b"".join(lines) + b'{"end":{}}\n'
        path = where / "m.zvm"
        path.write_bytes(_mutate(data, muts))
        return path
    if fmt in TEXT_FORMATS:
        data, pool = TEXT_FORMATS[fmt]
        for e in edits:
            data = _edit_text(data, pool, e)
        path = where / f"m.{fmt if fmt != 'checkfile' else 'sha256'}"
        path.write_bytes(_mutate(data, muts))
        return path
    bag = where / "bag"
    if bag.exists():
        shutil.rmtree(bag)
    (bag / "data").mkdir(parents=True)
    files = _bag_files()
    names = sorted(files)
    target = names[which % len(names)]
    for name, content in files.items():
        if name == target:
            for e in edits:
                content = _edit_text(content, BAG_LINES, e)
            content = _mutate(content, muts)
        (bag / name).write_bytes(content)
    if which % 7 == 3:
        os.symlink("/", bag / "link")
    if which % 11 == 5:
        os.mkfifo(bag / "fifo")
    if which % 13 == 6:
        os.replace(bag / "bag-info.txt", bag / "info-real")
        os.symlink("info-real", bag / "bag-info.txt")
    return bag / "bagit.txt"


def run_manifest(case: Case, where: Path | None = None) -> None:
    """Open the case (written under `where`) as compare would and read every entry:
    ManifestError or entries whose names stay inside the tree."""
    path = materialize(case, where or _scratch())
    try:
        side = manifest_side("SRC", str(path), keep_xattrs=True)
        try:
            entries = iter(side.entries)
            if side.filter is not None and (compiled := side.filter.compiled()) is not None:
                entries = filtered(entries, compiled, [0])
            for entry in entries:
                assert entry.path == b"" or bad_name(entry.path) is None, entry.path
        finally:
            side.close()
    except ManifestError as err:
        assert "\n" not in str(err).strip(), err  # one line
