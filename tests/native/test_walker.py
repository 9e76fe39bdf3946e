"""The C core's contract: canonical order, digests, errors as data, threads."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import xxhash

from tests.treebuilder import pattern, sparse, write
from zverify import _zvcore

BOUNDARY_LENGTHS = [0, 1, 15, 16, 17, 127, 128, 129, 240, 241, 1023, 1024, 1025]
# around the default read block (128 KiB) and a larger block size users might pick
for block in (128 << 10, 1 << 20):
    BOUNDARY_LENGTHS += [block - 1, block, block + 1, 3 * block + 7]


def walk(root: Path, **kw: object) -> list[_zvcore.Record]:
    return [rec for batch in _zvcore.Walker(bytes(root), **kw) for rec in batch]


def by_path(records: list[_zvcore.Record]) -> dict[bytes, _zvcore.Record]:
    return {r.path: r for r in records}


def expected_order(root: bytes, rel: bytes = b"") -> list[bytes]:
    """Pre-order with bytewise-sorted siblings, computed independently."""
    out = [rel]
    full = os.path.join(root, rel) if rel else root
    if os.path.isdir(full) and not os.path.islink(full):
        for name in sorted(os.listdir(full)):
            out += expected_order(root, os.path.join(rel, name) if rel else name)
    return out


def test_digests_match_python_xxhash_at_boundary_lengths(tmp_path: Path) -> None:
    for n in BOUNDARY_LENGTHS:
        write(tmp_path / f"f{n:08d}", pattern(n, n))
    records = by_path(walk(tmp_path, threads=3))
    for n in BOUNDARY_LENGTHS:
        rec = records[f"f{n:08d}".encode()]
        assert rec.digest == xxhash.xxh3_128(pattern(n, n)).digest(), n
        assert rec.size == n and rec.data_bytes == n and rec.hole_bytes == 0


def test_sparse_file_beyond_4gib_hashes_its_apparent_content(tmp_path: Path) -> None:
    size, offset, data = 5 << 30, (4 << 30) + 12345, b"beyond 4 GiB"
    sparse(tmp_path / "big", size, {offset: data})
    rec = by_path(walk(tmp_path))[b"big"]
    expected = xxhash.xxh3_128()
    zeros = bytes(1 << 24)
    remaining = offset
    while remaining:
        n = min(remaining, len(zeros))
        expected.update(zeros[:n])
        remaining -= n
    expected.update(data)
    remaining = size - offset - len(data)
    while remaining:
        n = min(remaining, len(zeros))
        expected.update(zeros[:n])
        remaining -= n
    assert rec.size == size
    assert rec.digest == expected.digest()
    assert 0 < rec.data_bytes < 1 << 20  # one data extent, the rest is hole
    assert rec.hole_bytes == size - rec.data_bytes
    assert rec.alloc < 1 << 20


def test_canonical_order_and_same_output_for_any_thread_count(rich_tree: Path) -> None:
    one = walk(rich_tree, threads=1)
    assert [r.path for r in one] == expected_order(bytes(rich_tree))
    for threads in (2, 7):
        assert walk(rich_tree, threads=threads) == one


def test_symlinks_are_reported_not_followed(rich_tree: Path) -> None:
    records = by_path(walk(rich_tree))
    link = records[b"dir-link"]
    assert link.kind == _zvcore.KIND_SYMLINK and link.link == b"docs"
    assert not any(p.startswith(b"dir-link/") for p in records)
    assert records[b"loop-a"].link == b"loop-b"
    assert records[b"dangling"].link == b"does/not/exist"
    assert records[b"dangling"].error is None


def test_special_files_are_never_opened(rich_tree: Path) -> None:
    # A FIFO opened for reading would block forever; the walk must finish.
    records = by_path(walk(rich_tree))
    assert records[b"fifo"].kind == _zvcore.KIND_FIFO and records[b"fifo"].digest is None
    assert records[b"sock"].kind == _zvcore.KIND_SOCKET
    dev = records[b"null-dev"]
    assert dev.kind == _zvcore.KIND_CHAR and (os.major(dev.rdev), os.minor(dev.rdev)) == (1, 3)


def test_xattrs_are_read_sorted(rich_tree: Path) -> None:
    records = by_path(walk(rich_tree))
    assert records[b"xattr-file"].xattrs == ((b"user.empty", b""), (b"user.origin", b"tests"))
    assert records[b"docs"].xattrs == ((b"user.dir-tag", b"d"),)
    assert walk(rich_tree, xattrs=False)[0].xattrs is None


def test_odd_names_come_back_as_exact_bytes(rich_tree: Path) -> None:
    paths = {r.path for r in walk(rich_tree)}
    assert b"odd/new\nline" in paths and b"odd/bad-\xff-utf8" in paths


def test_deep_tree_of_10000_levels(tmp_path: Path) -> None:
    depth = 10_000
    fd = os.open(tmp_path, os.O_RDONLY)
    for _ in range(depth):  # PATH_MAX forbids making it with whole paths
        os.mkdir("d", dir_fd=fd)
        nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(fd)
    try:
        records = walk(tmp_path, threads=2)
    finally:  # pytest's recursive cleanup cannot remove 10,000 levels
        subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=True)
    assert len(records) == depth + 1
    assert records[-1].path == b"/".join([b"d"] * depth)
    assert all(r.error is None for r in records)


def test_huge_directory(tmp_path: Path) -> None:
    names = [f"{i:06d}" for i in range(30_000)]
    for name in names:
        (tmp_path / name).touch()
    records = walk(tmp_path)
    assert [r.path.decode() for r in records[1:]] == names


def test_noatime_reading_leaves_atime_alone(tmp_path: Path) -> None:
    f = write(tmp_path / "f", b"data" * 1000)
    os.utime(f, ns=(1_000_000_000, 2_000_000_000))  # atime < mtime: relatime would update
    walk(tmp_path)
    assert f.stat().st_atime_ns == 1_000_000_000
    f.read_bytes()  # proves this filesystem would have updated it
    if f.stat().st_atime_ns == 1_000_000_000:
        pytest.skip("filesystem does not update atime at all (noatime mount)")


def _walk_without_dac_override(root: Path) -> list[tuple[str, object, object]]:
    code = (
        "import sys, zverify._zvcore as z\n"
        "for b in z.Walker(sys.argv[1].encode()):\n"
        "    for r in b: print(repr((r.path, r.error, r.digest)))\n"
    )
    out = subprocess.run(
        # root without the capabilities that bypass file permissions
        [
            "setpriv",
            "--bounding-set",
            "-dac_override,-dac_read_search",
            sys.executable,
            "-c",
            code,
            str(root),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    ).stdout
    return [eval(line) for line in out.splitlines()]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop capabilities")
def test_unreadable_entries_are_errors_not_skips(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write(root / "secret", b"x")
    write(root / "locked/inner", b"y")
    write(root / "ok", b"z")
    (root / "secret").chmod(0o000)
    (root / "locked").chmod(0o000)
    rows = {path: (err, digest) for path, err, digest in _walk_without_dac_override(root)}
    (root / "locked").chmod(0o755)
    assert rows[b"secret"][0][0] == "open" and rows[b"secret"][0][1] == 13  # EACCES
    assert rows[b"secret"][1] is None
    assert rows[b"locked"][0][0] == "opendir"
    assert rows[b"ok"] == (None, xxhash.xxh3_128(b"z").digest())


def test_file_changing_while_hashed_is_flagged(tmp_path: Path) -> None:
    f = write(tmp_path / "growing", os.urandom(1 << 20) * 256)
    stop = threading.Event()

    def writer() -> None:
        with open(f, "ab") as out:
            while not stop.is_set():
                out.write(b"x")
                out.flush()
                time.sleep(0.0005)

    t = threading.Thread(target=writer)
    t.start()
    try:
        rec = by_path(walk(tmp_path, threads=1, block_size=1 << 16))[b"growing"]
    finally:
        stop.set()
        t.join()
    assert rec.changed == "modified" and rec.digest is None


def test_bad_root_raises_oserror_with_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        _zvcore.Walker(bytes(tmp_path / "absent"))
    assert info.value.filename == os.fsencode(tmp_path / "absent") or "absent" in str(info.value)
    write(tmp_path / "file", b"")
    with pytest.raises(NotADirectoryError):
        _zvcore.Walker(bytes(tmp_path / "file"))


def test_abandoned_walk_stops_its_threads(tmp_path: Path) -> None:
    for i in range(3000):
        write(tmp_path / f"{i}", b"x" * 100)
    before = threading.active_count()
    w = _zvcore.Walker(bytes(tmp_path), threads=4, batch=10)
    next(w)
    w.close()
    assert next(w, None) is None
    assert threading.active_count() == before


def test_avx2_and_baseline_xxh3_builds_agree(tmp_path: Path) -> None:
    """The AVX2 build (used when the CPU has it) and Debian's library give one digest."""
    for n in BOUNDARY_LENGTHS:
        write(tmp_path / f"f{n:08d}", pattern(n, n + 1))
    code = (
        "import sys, zverify._zvcore as z\n"
        "for b in z.Walker(sys.argv[1].encode()):\n"
        "    for r in b: print(r.path.decode(), r.digest.hex() if r.digest else '-')\n"
    )
    repo = Path(__file__).parents[2]
    outputs = [
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)],
            check=True,
            capture_output=True,
            text=True,
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(repo), "ZVERIFY_XXH": build},
        ).stdout
        for build in ("baseline", "auto")
    ]
    assert outputs[0] == outputs[1]
    digests = dict(line.split() for line in outputs[0].splitlines()[1:])
    for n in BOUNDARY_LENGTHS:
        assert digests[f"f{n:08d}"] == xxhash.xxh3_128(pattern(n, n + 1)).hexdigest()
