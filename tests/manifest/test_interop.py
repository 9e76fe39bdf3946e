"""Exports that the real tools accept, and the real tools' manifests read back.

mtree specs go through `mtree -f` (Debian's mtree-netbsd) and `bsdtar @spec`; checkfiles
through `sha256sum -c` and `b3sum -c`, on the tree of odd names (a newline, invalid UTF-8,
a backslash).  Specs written by `mtree -c` and `bsdtar --format=mtree`, and hashdeep lists,
are read as the SRC side and must agree with the live tree and catch a change in it.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.compare.test_mutations import MUTATIONS
from tests.manifest.helpers import compare, compare_fails, run
from tests.treebuilder import build_rich_tree, write


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not installed (scripts/setup.sh installs it)")
    return path


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rich tree without the 5 GiB sparse file (SHA-256 is hashed in Python), plus a
    name with a backslash."""
    root = build_rich_tree(tmp_path_factory.mktemp("interop") / "src", big_sparse=False)
    write(root / "odd/back\\slash", b"escaped by sha256sum\n")
    return root


@pytest.fixture
def copy(tree: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(tree), str(dst)], check=True)
    return dst


def export(tree: Path, out: Path, fmt: str) -> str:
    done = run("manifest", "-q", "--format", fmt, str(tree), "-o", str(out))
    assert done.returncode == 0, done.stderr.decode()
    return done.stderr.decode()


# ------------------------------------------------------------------------------ mtree


def test_mtree_accepts_the_spec_and_catches_a_change(
    tree: Path, copy: Path, tmp_path: Path
) -> None:
    mtree = _need("mtree")
    spec = tmp_path / "tree.mtree"
    said = export(tree, spec, "mtree")
    assert "cannot express hardlink groups" in said
    ok = subprocess.run([mtree, "-p", str(copy), "-f", str(spec)], capture_output=True)
    assert ok.returncode == 0, ok.stdout.decode() + ok.stderr.decode()
    MUTATIONS["flipped byte"][0](copy)
    bad = subprocess.run([mtree, "-p", str(copy), "-f", str(spec)], capture_output=True)
    assert bad.returncode == 2 and b"leaf.bin" in bad.stdout and b"sha256" in bad.stdout


def test_bsdtar_archives_every_entry_of_the_spec(tree: Path, copy: Path, tmp_path: Path) -> None:
    bsdtar = _need("bsdtar")
    (copy / "sock").unlink()  # tar cannot hold a socket
    spec, archive = tmp_path / "copy.mtree", tmp_path / "copy.tar"
    export(copy, spec, "mtree")
    done = subprocess.run(
        [bsdtar, "--format=gnutar", "-cf", str(archive), f"@{spec}"],
        cwd=copy, capture_output=True, env={**os.environ, "LC_ALL": "C.UTF-8"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run([bsdtar, "-xpf", str(archive), "-C", str(out)], check=True)
    code, doc = compare(copy, out, "--profile", "rsync-aH", "--ignore", "mtime")  # gnutar: seconds
    assert code == 0, doc["differences"]


# what an mtree spec can tell: every mutation but those of hardlinks and xattrs
RSYNC_A_MUTATIONS = [
    name
    for name, (_, found) in MUTATIONS.items()
    if all(kind not in ("hardlink", "xattr") for _, kind in found)
]


@pytest.mark.parametrize("name", RSYNC_A_MUTATIONS)
def test_own_spec_gives_the_live_verdict(tree: Path, copy: Path, tmp_path: Path, name: str) -> None:
    spec = tmp_path / "tree.mtree"
    export(tree, spec, "mtree")
    MUTATIONS[name][0](copy)
    live_code, live = compare(tree, copy, "--profile", "rsync-a", "--hash", "sha256")
    code, doc = compare(spec, copy, "--profile", "rsync-a")
    assert (code, doc["differences"]) == (live_code, live["differences"])
    assert code == 1


def test_spec_without_hardlinks_or_xattrs_is_refused_under_full(tree: Path, tmp_path: Path) -> None:
    spec = tmp_path / "tree.mtree"
    export(tree, spec, "mtree")
    message = compare_fails(spec, tree)
    assert "cannot tell hardlink,xattr" in message and "--profile rsync-a" in message


def test_netbsd_mtree_spec_reads_back(tree: Path, copy: Path, tmp_path: Path) -> None:
    """`mtree -c`: relative form, /set defaults, continuation lines, \\M^? and \\n escapes."""
    mtree = _need("mtree")
    spec = tmp_path / "netbsd.mtree"
    made = subprocess.run(
        [mtree, "-c", "-K", "sha256,device", "-p", str(tree)], capture_output=True
    )
    assert made.returncode == 0, made.stderr.decode()
    spec.write_bytes(made.stdout)
    assert b"\\M^?" in made.stdout and b"/set" in made.stdout and b"\\\n" in made.stdout
    assert compare(spec, copy, "--profile", "rsync-a")[0] == 0
    MUTATIONS["truncation"][0](copy)
    code, doc = compare(spec, copy, "--profile", "rsync-a")
    assert code == 1 and [(d["path"], d["kind"]) for d in doc["differences"]] == [
        ("bin/tool", "content")
    ]


def test_a_spec_without_sizes_compares_digests(tree: Path, copy: Path, tmp_path: Path) -> None:
    """`mtree -c -k type,link,sha256digest` writes no size=: files were read as 0 bytes long, so
    every file of an exact copy was a content difference (exit 1).  Its digests decide now;
    --quick, which would compare the sizes it lacks, is refused (exit 2)."""
    mtree = _need("mtree")
    made = subprocess.run(
        [mtree, "-c", "-k", "type,link,sha256digest", "-p", str(tree)], capture_output=True
    )
    assert made.returncode == 0, made.stderr.decode()
    assert b" size=" not in made.stdout and b"sha256" in made.stdout
    spec = tmp_path / "sizeless.mtree"
    spec.write_bytes(made.stdout)
    code, doc = compare(spec, copy, "--profile", "content")
    assert code == 0, doc["differences"][:3]
    assert "--quick" in compare_fails(spec, copy, "--profile", "content", "--quick")
    MUTATIONS["flipped byte"][0](copy)  # same size, other bytes: only a digest tells
    code, doc = compare(spec, copy, "--profile", "content")
    assert code == 1 and [(d["path"], d["kind"]) for d in doc["differences"]] == [
        ("docs/deep/a/b/c/leaf.bin", "content")
    ]


def test_a_spec_without_files_lacks_no_content(tmp_path: Path) -> None:
    """Review 3, L6: a tree of only a symlink and a FIFO has no content to lack; the spec
    was refused under every profile that reads content ("not every file has a digest")."""
    mtree = _need("mtree")
    tree = tmp_path / "t"
    tree.mkdir()
    os.symlink("target", tree / "link")
    os.mkfifo(tree / "fifo")
    spec = tmp_path / "spec"
    made = subprocess.run([mtree, "-c", "-K", "sha256", "-p", str(tree)], capture_output=True)
    spec.write_bytes(made.stdout)
    assert compare(spec, tree, "--profile", "content")[0] == 0
    write(tree / "new", b"x")
    code, doc = compare(spec, tree, "--profile", "content")
    assert code == 1 and [(d["path"], d["kind"]) for d in doc["differences"]] == [("new", "extra")]


def test_libarchive_spec_with_inodes_tells_hardlinks(
    tree: Path, copy: Path, tmp_path: Path
) -> None:
    bsdtar = _need("bsdtar")
    spec = tmp_path / "libarchive.mtree"
    made = subprocess.run(
        [bsdtar, "-cf", "-", "--format=mtree", "--options=mtree:all,sha256", "-C", str(tree), "."],
        capture_output=True,
    )
    spec.write_bytes(made.stdout)
    assert b"inode=" in made.stdout
    assert compare(spec, copy, "--profile", "rsync-aH")[0] == 0
    MUTATIONS["split hardlink"][0](copy)
    code, doc = compare(spec, copy, "--profile", "rsync-aH")
    assert code == 1 and {d["kind"] for d in doc["differences"]} == {"hardlink"}


def test_unpadded_nanoseconds_are_an_integer_count(tmp_path: Path) -> None:
    """mtree-netbsd and libarchive write 1234 ns as `.1234`: that is 1234 ns, not 0.1234 s."""
    tree = tmp_path / "t"
    tree.mkdir()
    write(tree / "f", b"x")
    seconds = 1_577_836_800
    os.utime(tree / "f", ns=(0, seconds * 10**9 + 1234))
    os.utime(tree, ns=(0, seconds * 10**9))
    digest = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    head = f". type=dir mode=0755 uid=0 gid=0 time={seconds}.0\n"
    for fraction, same in (("1234", True), ("000001234", True), ("000001235", False)):
        line = (
            f"./f type=file mode=0644 uid=0 gid=0 time={seconds}.{fraction} size=1 sha256={digest}"
        )
        (tmp_path / "s.mtree").write_text(head + line + "\n")
        os.chown(tree, 0, 0), os.chown(tree / "f", 0, 0), os.chmod(tree, 0o755)
        code, _ = compare(tmp_path / "s.mtree", tree, "--profile", "rsync-a")
        assert code == (0 if same else 1), fraction


# ------------------------------------------------------------------------- checkfiles


def test_sha256sum_checks_the_odd_names(tree: Path, copy: Path, tmp_path: Path) -> None:
    sums = tmp_path / "SHA256SUMS"
    export(tree, sums, "sha256sum")
    assert b"\\" in sums.read_bytes()  # escaped lines for the newline and the backslash
    files = sum(1 for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
    ok = subprocess.run(["sha256sum", "-c", "--strict", str(sums)], cwd=copy, capture_output=True)
    assert ok.returncode == 0, ok.stdout.decode() + ok.stderr.decode()
    assert ok.stdout.count(b": OK\n") == files
    MUTATIONS["flipped byte"][0](copy)
    bad = subprocess.run(["sha256sum", "-c", str(sums)], cwd=copy, capture_output=True)
    assert bad.returncode == 1 and b"leaf.bin: FAILED" in bad.stdout


def test_b3sum_checks_every_utf8_name_and_fails_the_others(
    tree: Path, copy: Path, tmp_path: Path
) -> None:
    b3sum = _need("b3sum")
    sums = tmp_path / "B3SUMS"
    done = run("manifest", "-q", "--format", "b3sum", str(tree), "-o", str(sums))
    said = done.stderr.decode()
    assert done.returncode == 2, said
    assert "1 file names `b3sum -c` cannot check (1 not UTF-8)" in said
    assert "odd/bad-\\xff-utf8" in said
    utf8 = [p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()]
    utf8 = [p for p in utf8 if b"\xff" not in os.fsencode(p)]
    ok = subprocess.run([b3sum, "-c", str(sums)], cwd=copy, capture_output=True)
    assert ok.returncode == 1 and ok.stdout.count(b": OK\n") == len(utf8), ok.stdout.decode()
    assert b"Unicode replacement character" in ok.stderr  # the one it cannot check fails
    MUTATIONS["truncation"][0](copy)
    bad = subprocess.run([b3sum, "-c", str(sums)], cwd=copy, capture_output=True)
    assert bad.returncode == 1 and b"bin/tool: FAILED" in bad.stdout


def _names_tree(root: Path, names: list[bytes]) -> Path:
    root.mkdir()
    for name in names:
        with open(os.path.join(os.fsencode(root), name), "wb") as f:
            f.write(b"good " + name + b"\n")
    return root


def _corrupt_all(root: Path) -> None:
    for entry in os.scandir(os.fsencode(root)):
        with open(entry.path, "ab") as f:
            f.write(b"CORRUPT\n")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (b"bad\xffname", "not UTF-8"),  # adversarial-3 M5: left out, exit 0, -c passed
        (b"cr\rname", "holds a carriage return"),  # b3sum knows only the \\ and \n escapes
        ("u\ufffdname".encode(), "holds U+FFFD"),  # b3sum -c refuses it in any path
    ],
)
def test_a_name_b3sum_cannot_check_is_exit_2_and_fails_its_check(
    tmp_path: Path, name: bytes, why: str
) -> None:
    b3sum = _need("b3sum")
    root = _names_tree(tmp_path / "t", [name, b"plain"])
    sums = tmp_path / "B3SUMS"
    done = run("manifest", "-q", "--format", "b3sum", str(root), "-o", str(sums))
    said = done.stderr.decode()
    assert done.returncode == 2 and f"cannot check (1 {why})" in said, said
    intact = subprocess.run([b3sum, "-c", str(sums)], cwd=root, capture_output=True)
    assert intact.returncode == 1 and b"plain: OK" in intact.stdout
    _corrupt_all(root)
    corrupted = subprocess.run([b3sum, "-c", str(sums)], cwd=root, capture_output=True)
    assert corrupted.returncode == 1 and b"plain: FAILED" in corrupted.stdout


@pytest.mark.parametrize("fmt", ["sha256sum", "b3sum"])
def test_every_file_is_checked_by_the_real_tool(tmp_path: Path, fmt: str) -> None:
    """Names each tool can check, the awkward ones included: every file gets its OK, and a
    change to any one of them fails.  `-` is written `./-`: `-c` reads `-` from stdin, where
    it passed with the file's old content."""
    tool = _need(fmt)
    names = [b"-", b" lead", b"trail ", b"*star", b"back\\slash", b"new\nline", b"tab\tx"]
    names += ["caf\u00e9".encode(), b"-c"]
    if fmt == "sha256sum":
        names += [b"bad\xffname", b"cr\rname", "u\ufffdname".encode()]
    root = _names_tree(tmp_path / "t", names)
    sums = tmp_path / "SUMS"
    done = run("manifest", "-q", "--format", fmt, str(root), "-o", str(sums))
    assert done.returncode == 0, done.stderr.decode()
    old = (root / "-").read_bytes()
    ok = subprocess.run([tool, "-c", str(sums)], cwd=root, capture_output=True, input=old)
    assert ok.returncode == 0 and ok.stdout.count(b": OK\n") == len(names), ok
    for name in names:
        path = os.path.join(os.fsencode(root), name)
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "ab") as f:
            f.write(b"x")
        bad = subprocess.run([tool, "-c", str(sums)], cwd=root, capture_output=True, input=old)
        assert bad.returncode == 1 and bad.stdout.count(b": OK\n") == len(names) - 1, name
        with open(path, "wb") as f:
            f.write(data)


# --------------------------------------------------------------------------- hashdeep


@pytest.fixture
def plain_tree(tmp_path: Path) -> Path:
    """Files hashdeep can list: it follows symlinks, hangs on FIFOs, splits names at newlines."""
    root = tmp_path / "plain"
    for name, data in (("a,b.txt", b"comma\n"), ("sub/c", b"c" * 5000), ("sub/d d", b"")):
        write(root / name, data)
    return root


def test_hashdeep_list_verifies_content(plain_tree: Path, tmp_path: Path) -> None:
    hashdeep = _need("hashdeep")
    listing = tmp_path / "known.txt"
    made = subprocess.run([hashdeep, "-r", "-l", "."], cwd=plain_tree, capture_output=True)
    listing.write_bytes(made.stdout)
    assert "--profile content" in compare_fails(listing, plain_tree)
    code, doc = compare(listing, plain_tree, "--profile", "content")
    assert code == 0 and doc["algorithm"] == "sha256"
    (plain_tree / "sub/c").write_bytes(b"c" * 4999 + b"C")
    write(plain_tree / "new", b"n")
    code, doc = compare(listing, plain_tree, "--profile", "content")
    assert code == 1
    assert {(d["path"], d["kind"]) for d in doc["differences"]} == {
        ("sub/c", "content"),
        ("new", "extra"),
    }


def test_hashdeep_absolute_names_are_relative_to_their_directory(
    plain_tree: Path, tmp_path: Path
) -> None:
    hashdeep = _need("hashdeep")
    made = subprocess.run([hashdeep, "-r", str(plain_tree)], capture_output=True)
    (tmp_path / "abs.txt").write_bytes(made.stdout)
    code, doc = compare(tmp_path / "abs.txt", plain_tree, "--profile", "content")
    assert code == 0
    assert any(repr(str(plain_tree)) in note for note in doc["notes"])
