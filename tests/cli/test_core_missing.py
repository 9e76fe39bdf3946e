"""A C core that cannot be loaded is one line on stderr and exit 2, from every command.

The installed command runs in a private mount namespace (unshare -m, root only) where the
core's shared library, or a library it needs, is really unreadable or really absent: the
dynamic loader and the import system fail as they do on a broken install, nothing is mocked.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import namespaces
from tests.cli.console import _env, _interpreter, console_script

COMMANDS = [["--version"], ["compare", "/etc", "/etc"], ["stream", "verify", "/dev/null"]]


pytestmark = namespaces.needed("to hide files")


def _core_module() -> Path:
    script = console_script()
    where = subprocess.run(
        [_interpreter(script), "-c", "import zverify._zvcore as c; print(c.__file__)"],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    )
    return Path(where.stdout.strip()).resolve()


def _run_hidden(setup: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`zverify ARGS` after the shell commands SETUP, in a mount namespace of its own."""
    shell = f'{setup} && exec "$0" "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", shell, console_script(), *args],
        capture_output=True,
        text=True,
        env=_env({}),
        cwd="/",
        check=False,
    )


def _assert_one_line(done: subprocess.CompletedProcess[str], naming: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("zverify: cannot load the C core zverify._zvcore: ")
    assert naming in done.stderr and "nothing was verified" in done.stderr


@pytest.mark.parametrize("args", COMMANDS)
def test_an_unloadable_core_names_its_file(args: list[str], tmp_path: Path) -> None:
    module = _core_module()
    empty = tmp_path / "not-elf.so"  # a regular file, as a wheel for another machine is
    empty.write_bytes(b"")
    done = _run_hidden(f"mount --bind '{empty}' '{module}'", args)
    _assert_one_line(done, str(module))


@pytest.mark.parametrize("args", COMMANDS)
def test_a_missing_core_says_no_build_is_installed(args: list[str], tmp_path: Path) -> None:
    package = _core_module().parent
    copy = tmp_path / "zverify"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("_zvcore*"))
    done = _run_hidden(f"mount --bind '{copy}' '{package}'", args)
    _assert_one_line(done, "no build of it for this Python and machine is installed")


def test_a_missing_library_is_named() -> None:
    """A source build links libcrypto.so.3: hidden, the line names it.  A wheel's module
    needs only libc, which cannot be hidden from a running system: nothing to test then."""
    module = _core_module()
    dynamic = subprocess.run(["readelf", "-d", str(module)], capture_output=True, text=True)
    needed = [
        line.split("[")[1].rstrip("]")
        for line in dynamic.stdout.splitlines()
        if "(NEEDED)" in line and not line.split("[")[1].startswith(("libc.", "ld-linux"))
    ]
    if not needed:
        pytest.skip(f"{module.name} needs no library but libc (a wheel): nothing to hide")
    found = subprocess.run(["ldd", str(module)], capture_output=True, text=True, check=True)
    path = next(
        line.split("=>")[1].split("(")[0].strip()
        for line in found.stdout.splitlines()
        if line.strip().startswith(needed[0])
    )
    done = _run_hidden(f"mount --bind /dev/null '{os.path.realpath(path)}'", ["--version"])
    _assert_one_line(done, needed[0].split(".so")[0])
