"""The exit-code contract of the installed command: 0 identical, 1 different, 2 not verified
(usage errors and crashes included), 130 interrupted.  Every case runs the console script."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.console import console_script, zverify
from tests.treebuilder import sparse, write
from zverify import __version__


@pytest.fixture
def trees(tmp_path: Path) -> tuple[str, str]:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write(src / "a", b"alpha\n")
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return str(src), str(dst)


@pytest.fixture
def stream_file(tmp_path: Path) -> str:
    from tools.streamgen import full_stream

    path = tmp_path / "s.zstream"
    path.write_bytes(full_stream())
    return str(path)


def assert_usage_error(done: subprocess.CompletedProcess[str], needle: str) -> None:
    assert done.returncode == 2, done
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("zverify: "), done.stderr
    assert needle in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nosuch"], "No such command"),
        (["--bogus"], "No such option"),
        (["compare", "--bogus", "SRC", "DST"], "No such option"),
        (["compare", "SRC"], "Missing argument 'DST'"),
        # the variadic DIR... takes what the arguments after it leave: name the one left out
        (["cold", "restore", "-n", "SRC"], "Missing argument 'TARGET'"),
        (["compare", "SRC", "DST", "EXTRA"], "unexpected extra argument"),
        (["compare", "--threads", "abc", "SRC", "DST"], "--threads"),
        (["compare", "--threads", "0", "SRC", "DST"], "--threads"),
        (["compare", "--mtime-window", "nan", "SRC", "DST"], "--mtime-window"),
        (["compare", "--mtime-window", "inf", "SRC", "DST"], "--mtime-window"),
        (["compare", "--mtime-window", "1e300", "SRC", "DST"], "--mtime-window"),
        (["compare", "--mtime-window", "-1", "SRC", "DST"], "--mtime-window"),
        (["compare", "--profile", "everything", "SRC", "DST"], "unknown profile"),
        (["compare", "--hash", "md5", "SRC", "DST"], "unknown hash"),
        (["stream", "nosuch"], "No such command"),
        (["stream", "verify"], "Missing argument"),
        (["stream", "verify", "--bogus", "S"], "No such option"),
        (["stream", "info"], "Missing argument"),
        (["stream", "info", "--bogus", "S"], "No such option"),
        (["stream", "token"], "Missing argument"),
        (["stream", "token", "--bogus", "T"], "No such option"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    trees: tuple[str, str], stream_file: str, args: list[str], needle: str
) -> None:
    names = {"SRC": trees[0], "DST": trees[1], "S": stream_file}
    done = zverify(*(names.get(a, a) for a in args))
    assert_usage_error(done, needle)


@pytest.mark.parametrize("args", [[], ["stream"]])
def test_no_arguments_shows_help_and_exits_2(args: list[str]) -> None:
    done = zverify(*args)
    assert done.returncode == 2
    assert "Usage:" in done.stdout + done.stderr


def test_version_and_help_exit_0() -> None:
    done = zverify("--version")
    assert done.returncode == 0
    first, *facts = done.stdout.splitlines()
    assert first == f"zverify {__version__}"
    kernels = {line.split(":")[0]: line for line in facts}
    assert "xxHash" in kernels["xxh3-128"] and "kernel" in kernels["blake3"]
    assert {"python", "zfs", "pyzfs (libzfs_core)"} <= set(kernels)
    for args in (["--help"], ["compare", "--help"], ["stream", "verify", "--help"]):
        done = zverify(*args)
        assert done.returncode == 0 and "Usage:" in done.stdout, args


def test_verdicts_of_the_installed_command(trees: tuple[str, str], stream_file: str) -> None:
    src, dst = trees
    assert zverify("compare", "--no-progress", src, dst).returncode == 0
    Path(dst, "a").write_bytes(b"ALPHA\n")
    assert zverify("compare", "--no-progress", "--ignore", "mtime", src, dst).returncode == 1
    assert zverify("stream", "verify", stream_file).returncode == 0
    assert zverify("stream", "verify", stream_file + ".missing").returncode == 2


def _crash_hook(tmp_path: Path, body: str) -> dict[str, str]:
    """A sitecustomize that breaks zverify from inside, the way a bug would."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(body)
    return {"PYTHONPATH": str(hook)}


def test_unexpected_exception_exits_2_with_traceback(
    trees: tuple[str, str], tmp_path: Path
) -> None:
    env = _crash_hook(
        tmp_path,
        "import zverify.trees.compare as c\n"
        "def boom(*a, **k):\n    raise RuntimeError('injected bug')\n"
        "c.compare_trees = boom\n",
    )
    done = zverify("compare", "--no-progress", *trees, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" in done.stderr and "injected bug" in done.stderr
    assert "nothing was verified" in done.stderr.splitlines()[-1]


def test_broken_installation_exits_2(trees: tuple[str, str], tmp_path: Path) -> None:
    env = _crash_hook(tmp_path, "")
    (tmp_path / "hook" / "typer.py").write_text("raise ImportError('typer is broken')\n")
    done = zverify("compare", "--no-progress", *trees, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert "typer is broken" in done.stderr and "cannot start" in done.stderr


def test_full_disk_for_the_report_exits_2(trees: tuple[str, str]) -> None:
    with open("/dev/full", "w") as full:
        done = zverify("compare", "--no-progress", *trees, stdout=full)
    assert done.returncode == 2
    assert "No space left on device" in done.stderr


@pytest.mark.parametrize("unbuffered", ["", "1"])  # "": PYTHONUNBUFFERED not set
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_closed_pipe_ends_quietly_with_141(
    trees: tuple[str, str], json_flag: list[str], unbuffered: str
) -> None:
    """As `zverify compare ... | head` expects: no message, and 128 + SIGPIPE, which no
    script reads as a verdict; also when the short report waits in stdout's buffer until
    the flush at the end."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: every write fails with EPIPE
    try:
        env = {"PYTHONUNBUFFERED": unbuffered}
        done = zverify("compare", "--no-progress", *json_flag, *trees, stdout=write_end, env=env)
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_head_of_a_long_report_ends_quietly(tmp_path: Path, unbuffered: str) -> None:
    """Also with PYTHONUNBUFFERED, where one write of a long report to a pipe whose reader
    left ended short without an error: the report cut, and the exit code the verdict's."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    for i in range(3000):  # a report larger than a pipe's buffer
        (src / f"only-in-src-{i:05d}").write_bytes(b"")
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f'"$0" compare {src} {dst} | head -n 2', console_script()],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": unbuffered},  # "": not set, for Python
    )
    assert done.returncode == 141, done.stderr
    assert done.stderr == "" and len(done.stdout.splitlines()) == 2


def test_head_of_one_long_document_ends_quietly_unbuffered(tmp_path: Path) -> None:
    """A cold command writes its document in one piece: unbuffered, that one write ended
    short when the reader left, and the exit code was the verdict's (1 here), not 141."""
    from tools.streamgen import StreamBuilder

    root = tmp_path / "cold"
    root.mkdir()
    for i in range(400):  # a document larger than a pipe's buffer
        b = StreamBuilder()
        b.substream(f"zv/fs@s{i}", 10**6 + i, 10**6 + i - 1 if i else 0)
        kind = f"@s{i - 1}-@s{i}.zfsinc" if i else "@s0.zfsfull"
        (root / f"zv%2Ffs{kind}").write_bytes(bytes(b.data))
    (root / "zv%2Ffs@s9-@s10.zfsinc").unlink()  # a verdict of 1, were the pipe ignored
    done = subprocess.run(
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            f'"$0" cold check --json {root} | head -c 10',
            console_script(),
        ],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 141, done.stderr
    assert done.stderr == "" and len(done.stdout) == 10


@pytest.fixture(scope="module")
def huge_sparse_trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Holes are hashed as zeros: minutes of work, no disk space."""
    root = tmp_path_factory.mktemp("huge")
    src, dst = root / "src", root / "dst"
    for tree in (src, dst):
        tree.mkdir()
        for i in range(8):
            sparse(tree / f"big{i}", 64 << 30, {})
    return src, dst


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["SIGINT", "SIGTERM"],
)
@pytest.mark.parametrize("hash_name", ["xxh3", "blake3"])
@pytest.mark.parametrize("output", ["text", "--json"])
def test_signal_stops_within_a_second_without_verdict(
    huge_sparse_trees: tuple[Path, Path],
    signum: int,
    code: int,
    word: str,
    hash_name: str,
    output: str,
) -> None:
    """Inside one 64 GiB file (a stop between files would take minutes): the signal is
    honoured mid-file, no verdict is printed, and a JSON document says it is incomplete."""
    src, dst = huge_sparse_trees
    options = ["--json"] if output == "--json" else []
    command = ["compare", "--no-progress", "--threads", "1", "--hash", hash_name, *options]
    proc = subprocess.Popen(
        [console_script(), *command, str(src), str(dst)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
        # as at a terminal: a harness started in the background (`cmd &` without job
        # control) passes SIGINT on ignored, and Python then never sees Ctrl-C
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(1.5)  # past start-up, inside the first file
    assert proc.poll() is None, "finished before the signal: the files are too small"
    proc.send_signal(signum)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    assert proc.returncode == code, err
    assert took < 1.0 or os.environ.get("ZVERIFY_SANITIZE"), f"took {took:.2f}s to stop"
    assert err.strip().endswith(f"zverify: {word}")
    assert not any(w in out for w in ("IDENTICAL", "DIFFERENT", "INCOMPLETE")), out
    if output == "--json" and out:  # nothing differed before the signal: nothing started
        doc = json.loads(out)
        assert doc["complete"] is False and "exit_code" not in doc


@pytest.mark.parametrize("command", ["compare", "manifest"])
def test_mpi_as_the_value_of_another_option_does_not_hold_signals(
    huge_sparse_trees: tuple[Path, Path], tmp_path: Path, command: str
) -> None:
    """'--mpi' on a compare command line makes the CLI hold SIGTERM until MPI starts; as
    the value of --exclude it never starts, and the signal was swallowed for the whole run
    (review of this change), in manifest too.  Now the run still ends at once, 143, no
    verdict."""
    src, dst = huge_sparse_trees
    args = [str(src), str(dst)] if command == "compare" else [str(src), "-o", str(tmp_path / "m")]
    options = ["--no-progress", "--threads", "1", "--exclude", "--mpi"]
    proc = subprocess.Popen(
        [console_script(), command, *options, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    time.sleep(1.5)
    assert proc.poll() is None, "finished before the signal: the files are too small"
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 143 and err.strip().endswith("zverify: terminated"), err
    assert not any(w in out for w in ("IDENTICAL", "DIFFERENT", "INCOMPLETE")), out


def test_json_verdict_matches_exit_code(trees: tuple[str, str]) -> None:
    src, dst = trees
    Path(dst, "extra").write_bytes(b"")
    done = zverify("compare", "--json", src, dst)
    assert json.loads(done.stdout)["exit_code"] == done.returncode == 1


def test_quiet_prints_only_the_verdict_line(trees: tuple[str, str]) -> None:
    """-q as in diff -q: one line a log or a human can read; the exit code says the rest."""
    src, dst = trees
    Path(dst, "a").write_bytes(b"changed\n")
    quiet = zverify("compare", "-q", "--ignore", "mtime", src, dst)
    full = zverify("compare", "--no-progress", "--ignore", "mtime", src, dst)
    assert quiet.returncode == full.returncode == 1
    (line,) = quiet.stdout.splitlines()
    assert line.startswith("DIFFERENT: 1 difference (content 1)")
    assert line in full.stdout.splitlines() and len(full.stdout.splitlines()) > 5


@pytest.mark.parametrize("value", ["baseine", "avx2", "AUTO"])
def test_an_unknown_xxh_build_is_refused(trees: tuple[str, str], value: str) -> None:
    """ZVERIFY_XXH demands an XXH3 build; a value naming none is refused before anything is
    hashed, never ignored (a typo would then test or measure the other build unnoticed)."""
    done = zverify("compare", *trees, env={"ZVERIFY_XXH": value})
    assert_usage_error(done, f"ZVERIFY_XXH='{value}'")
    assert "auto or baseline" in done.stderr


@pytest.mark.parametrize("value", ["auto", "baseline", ""])
def test_a_known_xxh_build_is_accepted(trees: tuple[str, str], value: str) -> None:
    done = zverify("compare", *trees, env={"ZVERIFY_XXH": value})
    assert done.returncode == 0, done.stderr


def test_the_baseline_xxh_build_is_the_one_that_runs() -> None:
    """The demand is met, not only accepted: --version names the kernel that hashes."""
    done = zverify("--version", env={"ZVERIFY_XXH": "baseline"})
    assert done.returncode == 0, done.stderr
    xxh = [line for line in done.stdout.splitlines() if line.startswith("xxh3-128:")]
    assert len(xxh) == 1 and "avx2 kernel" not in xxh[0], done.stdout
