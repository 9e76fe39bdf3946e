"""Checkfiles written by the real tools, read back as a side of compare.

The tools are the oracle: seeded sets of awkward names (newlines, backslashes, carriage
returns, spaces at either end, `*`, `(x) = `, bytes that are not UTF-8, subdirectories,
`./`) are written by sha256sum, sha512sum, sha1sum, md5sum (plain, -b and --tag), b3sum and
xxh128sum, and zverify must read back exactly the names and digests the tool hashed.  Then
the installed `zverify compare` must agree with the tree, and catch a changed byte.
"""

import gzip
import hashlib
import io
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.manifest.helpers import compare, compare_fails, run
from tests.treebuilder import write
from zverify.manifest import checksums
from zverify.pathnames import display

COREUTILS = ("sha256sum", "sha512sum", "sha1sum", "md5sum")
ALGORITHMS = {"sha256sum": "sha256", "sha512sum": "sha512", "sha1sum": "sha1", "md5sum": "md5",
              "b3sum": "blake3", "xxh128sum": "xxh3-128"}  # fmt: skip
# Name pieces each tool writes so that its own -c reads them back; a piece is used only
# with the tools that can write it (b3sum: UTF-8 without U+FFFD; xxh128sum escapes nothing).
PIECES = [b"new\nline", b"back\\slash", b"cr\rmid", b"trail\r", b" lead", b"trail ", b"*star",
          b"(paren) = x", b"a) = b", b"tab\tx", b"bad\xffname", "caf\u00e9".encode(), b"-dash",
          b"#hash", b"\\lead", b"end\\", b"sp  ace", b"x.sha256"]  # fmt: skip


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not installed (scripts/setup.sh installs it)")
    return path


def _writable(tool: str, name: bytes) -> bool:
    if tool == "b3sum":  # b3sum writes a lossy name for bytes that are not UTF-8
        try:
            return "\ufffd" not in name.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if tool == "xxh128sum":  # no escaping: a newline splits the line, a final CR is dropped
        return b"\n" not in name and not name.endswith(b"\r")
    return True


def _tree(root: Path, tool: str, seed: int) -> dict[bytes, bytes]:
    """name -> content of a seeded tree of awkward names the tool can write."""
    rng = random.Random(seed)
    usable = [p for p in PIECES if _writable(tool, p)]
    names = {b"plain"} | set(rng.sample(usable, 8))
    for _ in range(4):  # joined pieces, some below a directory
        joined = rng.choice(usable) + rng.choice(usable)
        names.add(b"sub/" + joined if rng.random() < 0.5 else joined)
    files = {name: rng.randbytes(rng.randrange(0, 3000)) for name in names}
    for name, data in files.items():
        path = os.path.join(os.fsencode(root), name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return files


def _written(tool: str, root: Path, names: list[bytes], *flags: str) -> bytes:
    done = subprocess.run(
        [_need(tool), *flags, "--", *names], cwd=root, capture_output=True, check=True
    )
    return done.stdout


def _read(path: str, data: bytes) -> dict[bytes, bytes]:
    lines = io.BytesIO(data).readlines()  # at LF only, as zverify reads
    listing = checksums.parse(path, None, lines[0], lines[1:])
    return {e.path: e.digest for e in listing.entries if e.digest is not None}


FORMS = [(tool, flags) for tool in COREUTILS for flags in ((), ("-b",), ("--tag",))]
FORMS += [("b3sum", ()), ("xxh128sum", ()), ("xxh128sum", ("--tag",))]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("tool", "flags"), FORMS, ids=[f"{t}{''.join(f)}" for t, f in FORMS])
def test_the_names_and_digests_the_tool_wrote(
    tmp_path: Path, tool: str, flags: tuple[str, ...], seed: int
) -> None:
    files = _tree(tmp_path, tool, seed)
    rng = random.Random(seed)
    given = [b"./" + n if rng.random() < 0.3 else n for n in sorted(files)]
    read = _read(f"{tool}.txt", _written(tool, tmp_path, given, *flags))
    assert set(read) == set(files)
    if tool in COREUTILS:
        algorithm = tool.removesuffix("sum")
        assert read == {n: hashlib.new(algorithm, d).digest() for n, d in files.items()}


@pytest.mark.parametrize(("tool", "flags"), FORMS, ids=[f"{t}{''.join(f)}" for t, f in FORMS])
def test_compare_agrees_with_the_tree_and_catches_a_byte(
    tmp_path: Path, tool: str, flags: tuple[str, ...]
) -> None:
    """The digests zverify computes are the tool's (XXH3-128 and BLAKE3 too)."""
    root = tmp_path / "t"
    files = _tree(root, tool, 7)
    sums = tmp_path / f"{tool}.txt"
    sums.write_bytes(_written(tool, root, sorted(files), *flags))
    code, doc = compare(sums, root, "--profile", "content")
    assert code == 0, doc["differences"]
    assert doc["algorithm"] == ALGORITHMS[tool]
    victim = max(files, key=lambda n: len(files[n]))
    data = bytearray(files[victim])
    data[len(data) // 2] ^= 1
    (root / os.fsdecode(victim)).write_bytes(bytes(data))
    code, doc = compare(sums, root, "--profile", "content")
    assert code == 1
    assert [(d["path"], d["kind"]) for d in doc["differences"]] == [(display(victim)[0], "content")]


# ------------------------------------------------------------- as a side, through the CLI


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    for name, data in (("a", b"alpha\n"), ("sub/b", b"b" * 5000), ("sub/c d", b"")):
        write(root / name, data)
    return root


def _sums(tool: str, root: Path, out: Path, *flags: str) -> Path:
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    out.write_bytes(_written(tool, root, [os.fsencode(n) for n in names], *flags))
    return out


@pytest.mark.parametrize(("tool", "sums"), [("sha256sum", "SHA256SUMS"), ("b3sum", "B3SUMS")])
def test_a_real_checkfile_compares_like_a_manifest(
    plain: Path, tmp_path: Path, tool: str, sums: str
) -> None:
    listed = _sums(tool, plain, tmp_path / sums)
    code, doc = compare(listed, plain, "--profile", "content")
    assert code == 0 and doc["identical"] is True, doc
    assert any("a checkfile: 3 files" in note for note in doc["notes"]), doc["notes"]
    assert compare(plain, listed, "--profile", "content")[0] == 0  # as DST too
    (plain / "sub/b").write_bytes(b"b" * 4999 + b"B")  # same size, one byte
    code, doc = compare(listed, plain, "--profile", "content")
    assert code == 1
    assert [(d["path"], d["kind"]) for d in doc["differences"]] == [("sub/b", "content")]
    code, doc = compare(plain, listed, "--profile", "content")
    assert code == 1 and [d["path"] for d in doc["differences"]] == ["sub/b"]


def test_a_file_the_checkfile_does_not_list_is_extra(plain: Path, tmp_path: Path) -> None:
    """As for a hashdeep list: the other side is walked, so an unlisted file is found."""
    listed = _sums("sha256sum", plain, tmp_path / "SHA256SUMS")
    write(plain / "sub/new", b"n")
    code, doc = compare(listed, plain, "--profile", "content")
    assert code == 1 and doc["identical"] is False
    assert [(d["path"], d["kind"]) for d in doc["differences"]] == [("sub/new", "extra")]
    done = run("compare", "--profile", "content", "--one-way", str(listed), str(plain))
    assert done.returncode == 0
    assert b"IDENTICAL under profile content minus extra" in done.stdout  # says what it skipped


def test_a_checkfile_kept_in_the_tree_says_how_to_leave_it_out(plain: Path) -> None:
    """`sha256sum * > SUMS` in the tree: the list is a file of the tree it cannot list."""
    listed = _sums("sha256sum", plain, plain / "SHA256SUMS")
    code, doc = compare(listed, plain, "--profile", "content")
    assert code == 1
    assert [(d["path"], d["kind"]) for d in doc["differences"]] == [("SHA256SUMS", "extra")]
    assert any("--exclude /SHA256SUMS leaves it out" in note for note in doc["notes"])
    code, doc = compare(listed, plain, "--profile", "content", "--exclude", "/SHA256SUMS")
    assert code == 0 and doc["identical"] is True


def test_what_a_checkfile_cannot_tell_is_refused(plain: Path, tmp_path: Path) -> None:
    listed = _sums("sha256sum", plain, tmp_path / "SHA256SUMS")
    said = compare_fails(listed, plain)  # --profile full
    assert "cannot tell hardlink,mode,mtime,owner,xattr" in said and "--profile content" in said
    (plain / "a").write_bytes(b"ALPHA\n")  # --quick compares sizes: a checkfile has none
    said = compare_fails(listed, plain, "--profile", "content", "--quick")
    assert "records no file sizes" in said and "--quick" in said, said


@pytest.mark.parametrize(
    ("cut", "line", "reason"),
    [
        (lambda d: d[: d.index(b"\n") + 20], 2, "no line end"),  # inside a digest
        (lambda d: d.replace(b"\n", b"\ngarbled", 1), 2, "not a checksum line"),
        (lambda d: d[:-3], 3, "no line end"),  # inside the last name
        (lambda d: d[:-1], 3, "no line end"),  # its newline
        (lambda d: d.replace(b"  sub/b", b" sub/b", 1), 2, "one- and two-space"),
        (lambda d: d.replace(b"  sub/b", b"\tsub/b", 1), 2, "one- and two-space"),
        (lambda d: d.replace(b"\n", b"\n\\", 1).replace(b"  sub/b", b"  sub\\tb"), 2, "escape"),
        (lambda d: d + d.splitlines(keepends=True)[0], 4, "listed twice (lines 1 and here)"),
        (lambda d: d + b"SHA384 (x) = " + b"0" * 96 + b"\n", 4, "SHA384 digests"),
        (lambda d: d + b"MD5 (x) = " + b"0" * 32 + b"\n", 4, "a md5 line among sha256"),
        (lambda d: d + b"0" * 64 + b"  ../up\n", 4, "does not stay in the tree"),
    ],
)
def test_a_damaged_checkfile_is_exit_2_naming_the_line(
    plain: Path, tmp_path: Path, cut: object, line: int, reason: str
) -> None:
    listed = _sums("sha256sum", plain, tmp_path / "SHA256SUMS")
    listed.write_bytes(cut(listed.read_bytes()))  # type: ignore[operator]
    said = compare_fails(listed, plain, "--profile", "content")
    assert f"manifest {listed}: line {line}: " in said and reason in said, said


def test_64_hex_digits_need_a_name_or_hash(plain: Path, tmp_path: Path) -> None:
    listed = _sums("b3sum", plain, tmp_path / "list.txt")
    said = compare_fails(listed, plain, "--profile", "content")
    assert "give --hash sha256 or --hash blake3" in said, said
    code, doc = compare(listed, plain, "--profile", "content", "--hash", "blake3")
    assert code == 0 and doc["algorithm"] == "blake3"
    said = compare_fails(tmp_path / "list.txt", plain, "--profile", "content", "--hash", "sha512")
    assert "sha256 or blake3" in said, said
    stdin = run("compare", "--profile", "content", "--hash", "blake3", "-", str(plain),
                stdin=listed.read_bytes())  # fmt: skip
    assert stdin.returncode == 0, stdin.stderr


def test_a_name_b3sum_wrote_lossily_is_exit_2(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write(root / "plain", b"p")
    with open(os.path.join(os.fsencode(root), b"bad\xffname"), "wb") as f:
        f.write(b"x")
    listed = _sums("b3sum", root, tmp_path / "B3SUMS")
    said = compare_fails(listed, root, "--profile", "content")
    assert "U+FFFD" in said and "line 1" in said, said


def test_comments_first_and_absolute_names(plain: Path, tmp_path: Path) -> None:
    """A Fedora-style CHECKSUM file (comments, then --tag lines) of absolute names."""
    names = sorted(os.fsencode(p) for p in plain.rglob("*") if p.is_file())
    tagged = _written("sha256sum", plain, names, "--tag")
    listed = tmp_path / "CHECKSUM"
    listed.write_bytes(b"# image.iso: 3 bytes\n#\n" + tagged)
    code, doc = compare(listed, plain, "--profile", "content")
    assert code == 0, doc
    assert any(f"names relative to {str(plain)!r}" in n for n in doc["notes"]), doc["notes"]


def test_md5sum_is_hashed_too(plain: Path, tmp_path: Path) -> None:
    listed = _sums("md5sum", plain, tmp_path / "list")
    code, doc = compare(listed, plain, "--profile", "content")
    assert code == 0 and doc["algorithm"] == "md5"


def test_b2sum_lists_are_not_read_as_sha512(plain: Path, tmp_path: Path) -> None:
    """b2sum writes 128 hex digits like sha512sum: hashed with SHA-512, every file would be
    reported different; its name (B2SUMS, *.b2) or its tag says BLAKE2."""
    said = compare_fails(_sums("b2sum", plain, tmp_path / "B2SUMS"), plain, "--profile", "content")
    assert "BLAKE2" in said and "line 1" in said, said
    tagged = _sums("b2sum", plain, tmp_path / "list", "--tag")
    said = compare_fails(tagged, plain, "--profile", "content")
    assert "BLAKE2b digests: an algorithm zverify cannot hash" in said, said
    assert compare(_sums("sha512sum", plain, tmp_path / "B2SUMS.sha512"), plain, "--profile",
                   "content")[0] == 0  # fmt: skip


def test_a_lower_case_tag_is_read(plain: Path, tmp_path: Path) -> None:
    tagged = _sums("md5sum", plain, tmp_path / "list", "--tag")
    tagged.write_bytes(tagged.read_bytes().replace(b"MD5 (", b"md5 ("))
    code, doc = compare(tagged, plain, "--profile", "content")
    assert code == 0 and doc["algorithm"] == "md5"


@pytest.mark.parametrize(("tool", "sums"), [("sha256sum", "SHA256SUMS"), ("b3sum", "B3SUMS")])
def test_crlf_text_and_compressed_lists(plain: Path, tmp_path: Path, tool: str, sums: str) -> None:
    """A list saved as CRLF text reads as the tool wrote it (b3sum too, though it keeps a
    lone CR in a name), and .gz is decompressed, its name still telling the algorithm."""
    data = _sums(tool, plain, tmp_path / sums).read_bytes()
    crlf = tmp_path / f"crlf-{sums}"
    crlf.write_bytes(data.replace(b"\n", b"\r\n"))
    assert compare(crlf, plain, "--profile", "content")[0] == 0
    packed = tmp_path / f"{sums}.gz"
    packed.write_bytes(gzip.compress(data))
    assert compare(packed, plain, "--profile", "content")[0] == 0
