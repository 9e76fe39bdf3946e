"""Start-up of the installed command: what `zverify --help` and a plain `zverify compare`
import before they do their work, and the garbage collector's pause while they start.

Start-up is most of a small run (bench/startup.py times it against its 60 ms target); each
module below was taken off that path on purpose, and one top-level import can put it back
without a test failing.  No timing here (that would be flaky on a loaded machine): the
installed console script runs with PYTHONPROFILEIMPORTTIME=1 (Python's -X importtime),
which lists every module it loaded, and none of these may be among them unless typer
itself loads it (whatever typer loads is the floor, not zverify's to defer).
"""

import functools
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import _env, _interpreter, console_script, needs_installed_command

# Not needed until a command asks for it: JSON output, --write-lists, manifests, ZFS, MPI,
# cold storage, send streams, schemas, --version, a progress bar (tqdm), rich help.
DEFERRED = (
    "socket",  # provenance's host name comes from os.uname()
    "json",
    "hashlib",
    "ctypes",
    "tempfile",
    "importlib.metadata",
    "tqdm",
    "rich",
    "zstandard",
    "lz4",
    "mpi4py",
    "boto3",
    "zverify.report.compare_json",
    "zverify.report.lists",
    "zverify.manifest",
    "zverify.zfs",
    "zverify.mpi",
    "zverify.cold",
    "zverify.sendstream",
    "zverify.cutover",
    "zverify.par2",
    "zverify.schemas",
    "zverify.version",
)
# What the root group needs to list the commands; any other zverify module is a command's.
HELP_ONLY = {
    "zverify",
    "zverify.__main__",
    "zverify.cli",
    "zverify.cli.lazy",
    "zverify.corefailure",
    "zverify.errors",
    "zverify.exitcodes",
    "zverify.provenance",
}


def _imported(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The run and the names of every module it imported."""
    run = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd="/",
        env=_env({"PYTHONPROFILEIMPORTTIME": "1"}),
        check=False,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in run.stderr.splitlines()
        if line.startswith("import time:") and not line.endswith("imported package")
    }
    return run, names


@functools.cache
def _typer_floor() -> frozenset[str]:
    """What the interpreter of the console script loads for `import typer` alone."""
    run, names = _imported([_interpreter(console_script()), "-c", "import typer"])
    assert run.returncode == 0 and "typer" in names, run.stderr[-500:]
    return frozenset(names)


def _two_empty_trees(root: Path) -> tuple[str, str]:
    """Identical: the same mtime (two mkdirs a clock tick apart would differ)."""
    trees = (root / "src", root / "dst")
    for tree in trees:
        tree.mkdir()
        os.utime(tree, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))
    return str(trees[0]), str(trees[1])


def _stray(names: set[str], deferred: tuple[str, ...] = DEFERRED) -> list[str]:
    """The deferred modules (and their submodules) loaded, but for typer's own."""
    return sorted(
        name
        for name in names - _typer_floor()
        if any(name == d or name.startswith(d + ".") for d in deferred)
    )


@needs_installed_command
def test_help_loads_no_command_and_nothing_deferred() -> None:
    run, names = _imported([console_script(), "--help"])
    assert run.returncode == 0, run.stderr[-500:]
    assert "Usage: zverify" in run.stdout
    assert {"typer", "zverify.cli", "zverify.cli.lazy"} <= names  # the list was read
    assert _stray(names, (*DEFERRED, "dataclasses")) == []  # compare needs dataclasses
    assert sorted(n for n in names if n.startswith("zverify") and n not in HELP_ONLY) == []


@needs_installed_command
def test_compare_of_two_empty_trees_loads_nothing_deferred(tmp_path: Path) -> None:
    run, names = _imported([console_script(), "compare", *_two_empty_trees(tmp_path)])
    assert run.returncode == 0, run.stderr[-500:]
    assert "IDENTICAL" in run.stdout
    # it did compare (the walk and the renderer were loaded), and what was deferred was not
    assert {"zverify.walk", "zverify.trees.compare", "zverify.report.compare_text"} <= names
    assert _stray(names) == []


@needs_installed_command
@pytest.mark.parametrize(
    ("option", "loaded"),
    [("--json", "json"), ("--write-lists", "zverify.report.lists")],
)
def test_what_compare_defers_it_loads_when_asked(tmp_path: Path, option: str, loaded: str) -> None:
    """The probe sees a deferred module when the option that needs it is given (so the
    tests above would see one that came back)."""
    (tmp_path / "lists").mkdir()
    argv = [option, str(tmp_path / "lists")] if option == "--write-lists" else [option]
    run, names = _imported([console_script(), "compare", *argv, *_two_empty_trees(tmp_path)])
    assert run.returncode == 0, run.stderr[-500:]
    assert loaded in names


# The console script's own entry point, run by the installed interpreter, with one spy: the
# collector's state when the command's work starts (compare_trees), or at exit.
_GC_PROBE = """
import atexit, gc, sys
import zverify.trees.compare as trees

seen = []
real = trees.compare_trees


def spy(*args, **kwargs):
    seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
    return real(*args, **kwargs)


trees.compare_trees = spy
atexit.register(lambda: print("GC", seen or [(gc.isenabled(), gc.get_freeze_count() > 0)]))
sys.argv = ["zverify", *sys.argv[1:]]
from zverify.__main__ import main

main()
"""


@needs_installed_command
@pytest.mark.parametrize("command", ["compare", "--help"])
def test_the_collector_is_paused_for_start_up_only(tmp_path: Path, command: str) -> None:
    """zverify/__main__.py turns the garbage collector off while it starts; it must be on
    again, with start-up's objects frozen, once a command runs (a long compare makes cyclic
    garbage), and frozen at exit when none ran (so the last collection skips them)."""
    args = [command, *_two_empty_trees(tmp_path)] if command == "compare" else [command]
    run = subprocess.run(
        [_interpreter(console_script()), "-c", _GC_PROBE, *args],
        capture_output=True,
        text=True,
        cwd="/",
        env=_env({}),
        check=False,
    )
    assert run.returncode == 0, run.stderr[-500:]
    assert run.stdout.splitlines()[-1] == "GC [(True, True)]"  # (collecting, frozen)
