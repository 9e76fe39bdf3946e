"""One grammar with the tools beside it: -h is --help on every command, -V is --version at
the root (b3sum, rclone, zfs take both), and no command's own short option is shadowed.
Run through the installed console script, as a user types them."""

from collections.abc import Iterator
from typing import Any

import pytest
import typer.main

from tests.cli.console import needs_installed_command, zverify
from zverify.cli import app

pytestmark = needs_installed_command


def _paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name in getattr(command, "list_commands", lambda ctx: [])(None):
        yield from _paths(command.get_command(None, name), (*path, name))


ROOT = typer.main.get_command(app)
PATHS = list(_paths(ROOT))


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "zverify")
def test_dash_h_is_help_on_every_command(path: tuple[str, ...]) -> None:
    short = zverify(*path, "-h")
    assert short.returncode == 0 and short.stderr == "", short.stderr
    assert short.stdout.startswith(f"Usage: {' '.join(('zverify', *path))} ")
    assert "-h, --help" in short.stdout


@pytest.mark.parametrize("path", [(), ("cold", "send")], ids=["zverify", "cold send"])
def test_dash_h_prints_what_dash_dash_help_prints(path: tuple[str, ...]) -> None:
    assert zverify(*path, "-h").stdout == zverify(*path, "--help").stdout


def test_dash_h_after_arguments_is_help_too() -> None:
    # as with --help: asked anywhere on the line, it wins over a missing or bad argument
    done = zverify("cold", "send", "tank/data", "-h")
    assert done.returncode == 0 and done.stdout.startswith("Usage: zverify cold send ")


def test_dash_capital_v_is_version() -> None:
    short, long = zverify("-V"), zverify("--version")
    assert short.returncode == 0 and short.stderr == "", short.stderr
    assert short.stdout == long.stdout and short.stdout.startswith("zverify ")


def test_dash_capital_v_is_not_an_option_of_a_command() -> None:
    # only the root has a version; a command given -V is a usage error (2), as --version is
    done = zverify("compare", "-V", "a", "b")
    assert done.returncode == 2 and done.stdout == ""
    assert "No such option: -V" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_no_command_has_its_own_dash_h_or_dash_v() -> None:
    """-h/-V mean help/version everywhere: a command that took either for itself would
    silently change meaning on one command only."""
    for path in PATHS:
        command = ROOT
        for name in path:
            command = command.get_command(None, name)  # type: ignore[attr-defined]
        for param in command.params:
            taken = {"-h", "-V"} & {*param.opts, *param.secondary_opts}
            assert not taken or (path == () and param.name == "version"), (path, param.name)
