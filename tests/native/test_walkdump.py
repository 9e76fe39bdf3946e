"""The walker's threads driven from C (tests/native/walkdump.c, public API only).

The driver must print the same records for any number of threads, the same records as
zverify._zvcore.Walker, and must tear down cleanly when the walk is stopped from another
thread or closed early.  Normally the driver is built here without sanitizers (fast); under
scripts/asan.sh (ZVERIFY_SANITIZE=1) it is built with ASan+UBSan and leak checking; under
scripts/tsan.sh the script builds it with ThreadSanitizer and passes the command in
ZVERIFY_WALKDUMP, so that any data race in the walker fails these tests.
"""

import ast
import errno
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.treebuilder import pattern, sparse, write
from zverify import _zvcore

REPO = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).with_name("walkdump.c")
SANITIZE = os.environ.get("ZVERIFY_SANITIZE") == "1"
CFLAGS = ["-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"]
ASAN_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
MIB = 1 << 20
SMALL_FILES = 5200  # more entries than the ring's 4096 slots, so a slow consumer fills it
DEEP = 100  # beyond the 64 directory levels the walker keeps open: fds are reopened
TIMEOUT = 600  # seconds per driver run; TSan is slow, a hang must still end

# The same fields the driver prints, from Walker records (run in a subprocess, so that it can
# drop root's permission bypass exactly like the driver).
WALKER_CODE = """
import os, sys
from zverify import _zvcore
for batch in _zvcore.Walker(os.fsencode(sys.argv[1]), threads=int(sys.argv[2])):
    for r in batch:
        print(repr((r.path, r.kind, r.size, r.data_bytes, r.digest, r.link, r.error, r.changed)))
"""


# -- building and running the driver ---------------------------------------------------------


def _without_preload() -> dict[str, str]:
    """asan.sh preloads the sanitizer runtimes for Python; the compiler needs none of that."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def _have_xxhash_headers() -> bool:
    probe = subprocess.run(
        ["gcc", "-fsyntax-only", "-x", "c", "-"],
        input="#include <xxhash.h>\n",
        capture_output=True,
        text=True,
        env=_without_preload(),
    )
    return probe.returncode == 0


def _blake3_args() -> list[str]:
    """-I, -D and sources of the packaged BLAKE3 C implementation (as setup.py builds it)."""
    script = REPO / "native/blake3_sources.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _build(out: Path) -> None:
    sources = [str(SOURCE), *sorted(str(p) for p in (REPO / "native/src").glob("*.c"))]
    includes = [f"-I{REPO / 'native/include'}", f"-I{REPO / 'native/src'}"]
    flags = CFLAGS + (ASAN_FLAGS if SANITIZE else [])
    cmd = [
        "gcc",
        *flags,
        *includes,
        *sources,
        *_blake3_args(),
        "-lxxhash",
        "-lcrypto",
        "-o",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_without_preload())
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs walkdump: prebuilt by tsan.sh, else built here."""
    prebuilt = os.environ.get("ZVERIFY_WALKDUMP")
    if prebuilt:
        return shlex.split(prebuilt)
    if not shutil.which("gcc"):
        pytest.skip("gcc not found: cannot build tests/native/walkdump.c")
    if not _have_xxhash_headers():
        pytest.skip("xxhash.h not found: install libxxhash-dev to build walkdump.c")
    out = tmp_path_factory.mktemp("walkdump") / "walkdump"
    _build(out)
    return [str(out)]


def _unprivileged() -> list[str]:
    """Root reads mode-000 files; without these capabilities it gets EACCES like anyone."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return []
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


def _driver_env() -> dict[str, str]:
    env = dict(os.environ)
    if SANITIZE:  # the driver is instrumented throughout (no Python): leaks are real leaks
        env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1"
    return env


def dump(driver: list[str], root: Path, *args: str) -> tuple[list[str], str]:
    """Run the driver; (record lines, final line).  Any sanitizer report fails the test."""
    proc = subprocess.run(
        [*_unprivileged(), *driver, *args, str(root)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=TIMEOUT,
        env=_driver_env(),
    )
    *records, end = proc.stdout.splitlines() or [""]
    # the end line names the status the walk ended with; stderr holds any sanitizer report
    assert proc.returncode == 0 and not proc.stderr, (proc.returncode, end, proc.stderr[-8000:])
    return records, end


# -- the same lines from Walker --------------------------------------------------------------


def escape(raw: bytes) -> str:
    """As the driver's put_escaped: \\xNN for bytes outside printable ASCII, space and '\\'."""
    if not raw:
        return '""'
    return "".join(chr(c) if 0x20 < c < 0x7F and c != 0x5C else f"\\x{c:02x}" for c in raw)


def walker_line(fields: tuple[object, ...]) -> str:
    path, kind, size, data_bytes, digest, link, error, changed = fields
    assert isinstance(path, bytes) and (link is None or isinstance(link, bytes))
    assert digest is None or isinstance(digest, bytes)
    assert error is None or isinstance(error, tuple)
    err = "-" if error is None else ":".join(str(x) for x in error)
    return "\t".join(
        [
            escape(path),
            str(kind),
            str(size),
            str(data_bytes),
            digest.hex() if digest else "-",
            "-" if link is None else escape(link),
            err,
            str(changed or "-"),
        ]
    )


def walker_lines(root: Path, threads: int) -> list[str]:
    proc = subprocess.run(
        [*_unprivileged(), sys.executable, "-c", WALKER_CODE, str(root), str(threads)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr[-8000:]
    return [walker_line(ast.literal_eval(line)) for line in proc.stdout.splitlines()]


# -- the tree --------------------------------------------------------------------------------


def _small_files(root: Path) -> None:
    for i in range(SMALL_FILES):
        write(root / f"small/{i % 8:02d}/{i:05d}", pattern(i * 37 % 5000, i))


def _big_and_sparse(root: Path) -> None:
    for i, size in enumerate((MIB, MIB, MIB + 1)):
        write(root / f"big/{i}", pattern(size, i))
    (root / "sparse").mkdir()
    sparse(root / "sparse/holes", 8 * MIB, {0: b"head", 3 * MIB + 5: b"mid", 8 * MIB - 4: b"t"})
    sparse(root / "sparse/all-hole", 4 * MIB, {})


def _deep(root: Path) -> None:
    deep = root.joinpath("deep", *["d"] * DEEP)
    write(deep / "leaf", b"at the bottom\n")
    write(root / "deep/z-after", b"visited after climbing back up\n")


def _links_and_specials(root: Path) -> None:
    os.symlink("../big/0", root / "small/to-big")
    os.symlink("does/not/exist", root / "dangling")
    os.symlink("deep", root / "dir-link")
    os.mkfifo(root / "fifo")
    (root / "empty-dir").mkdir()
    write(root / "empty-file", b"")
    write(Path(os.fsdecode(bytes(root) + b"/odd/bad-\xff")), b"latin1\n")
    write(root / "odd/new\nline and space\\", b"escaped name\n")


def _unreadable(root: Path) -> None:
    write(root / "locked/secret", b"cannot read me\n").chmod(0o000)
    write(root / "locked/dir/inner", b"cannot list me\n")
    (root / "locked/dir").chmod(0o000)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("walkdump-tree") / "t"
    for part in (_small_files, _big_and_sparse, _deep, _links_and_specials, _unreadable):
        part(root)
    yield root
    (root / "locked/dir").chmod(0o755)  # so that the temporary tree can be removed


@pytest.fixture(scope="module")
def full(driver: list[str], tree: Path) -> list[str]:
    records, end = dump(driver, tree, "-t", "2")
    assert end == f"end EDONE records={len(records)}"
    return records


# -- tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("-t", "1"), ("-t", "8"), ("-t", "8", "-n", "1"), ("-t", "2", "-n", "64", "-d", "5000")],
    ids=["t1", "t8", "t8-batch1", "t2-slow-consumer"],
)
def test_same_records_for_any_thread_count(
    driver: list[str], tree: Path, full: list[str], args: tuple[str, ...]
) -> None:
    records, end = dump(driver, tree, *args)
    assert end == f"end EDONE records={len(records)}"
    assert records == full


def test_sha2_workers_give_the_same_records_at_any_thread_count(
    driver: list[str], tree: Path
) -> None:
    """libcrypto's digest contexts, one per worker, under the sanitizers too."""
    for algo in (_zvcore.ALGO_SHA256, _zvcore.ALGO_SHA512, _zvcore.ALGO_MD5, _zvcore.ALGO_SHA1):
        one, _ = dump(driver, tree, "-t", "1", "-a", str(algo))
        eight, end = dump(driver, tree, "-t", "8", "-a", str(algo))
        assert end == f"end EDONE records={len(eight)}" and eight == one


def test_driver_prints_what_walker_returns(tree: Path, full: list[str]) -> None:
    assert walker_lines(tree, threads=2) == full
    assert len(full) > SMALL_FILES + DEEP


@pytest.mark.parametrize("threads", ["1", "8"])
def test_filter_prunes_in_the_walker_threads(
    driver: list[str], tree: Path, full: list[str], threads: str
) -> None:
    """The filter under the sanitizers: the same records minus the excluded subtrees."""
    records, end = dump(driver, tree, "-t", threads, "-e", "deep/", "-e", "/big/[02]")
    assert end == f"end EDONE records={len(records)}"
    paths = [line.split("\t")[0] for line in full]
    left = [line for line, p in zip(full, paths, strict=True)
            if not (p == "deep" or p.startswith("deep/") or p in ("big/0", "big/2"))]  # fmt: skip
    assert records == left and len(left) < len(full)


def test_tree_has_what_the_walk_must_survive(full: list[str]) -> None:
    """Guards the comparison above against a tree that lost its hard parts."""
    rows = {line.split("\t")[0]: line.split("\t") for line in full}
    assert rows["big/2"][2] == str(MIB + 1) and rows["big/2"][4] != "-"
    assert rows["sparse/holes"][3] != rows["sparse/holes"][2]  # fewer data bytes than size
    assert rows["dangling"][5] == "does/not/exist"
    assert "odd/bad-\\xff" in rows and "odd/new\\x0aline\\x20and\\x20space\\x5c" in rows
    assert "deep/" + "/".join(["d"] * DEEP) + "/leaf" in rows
    if os.geteuid() != 0 or _unprivileged():
        assert rows["locked/secret"][6].startswith("open:13:")  # EACCES
        assert rows["locked/dir"][6].startswith("opendir:13:")


def abandoned_mid_file(got: str, want: str) -> bool:
    """got is want's file given up by a stopping walk: same path, kind and size, no digest,
    read EINTR.  Its data bytes are not compared: a walk stopped inside a hole leaves the
    file's extent map unfinished, so they are the size (all data), as for any file whose
    map is unknown."""
    g, w = got.split("\t"), want.split("\t")
    return g[:3] == w[:3] and g[4] == "-" and g[6].startswith(f"read:{errno.EINTR}:")


@pytest.mark.parametrize("threads", ["1", "8"])
@pytest.mark.parametrize("k", [0, 1, 100, 3000])
def test_stop_from_another_thread(
    driver: list[str], tree: Path, full: list[str], threads: str, k: int
) -> None:
    records, end = dump(driver, tree, "-t", threads, "-s", str(k))
    # records already on their way when the stop lands may still come out, in order; a file
    # being read at that moment is abandoned (no digest, error read EINTR at its offset)
    assert len(records) >= k and len(records) <= len(full)
    for got, want in zip(records, full, strict=False):
        assert got == want or abandoned_mid_file(got, want), (got, want)
    assert end in (f"end ESTOPPED records={len(records)}", f"end EDONE records={len(full)}")


@pytest.mark.parametrize("threads", ["1", "8"])
@pytest.mark.parametrize("k", [0, 1, 100, 3000])
def test_close_after_k_records(
    driver: list[str], tree: Path, full: list[str], threads: str, k: int
) -> None:
    records, end = dump(driver, tree, "-t", threads, "-c", str(k))
    assert records == full[:k]
    assert end == f"end closed records={k}"
