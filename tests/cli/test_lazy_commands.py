"""The root group imports a command's module only when that command runs (cli/lazy.py):
its `--help` list must still say what each command says of itself, every command must
still be reachable, and a typo must still get a suggestion."""

import inspect
import subprocess
import sys

import pytest

from tests.cli.console import console_script
from zverify.cli import Commands
from zverify.cli.lazy import build_command


@pytest.mark.parametrize("name", list(Commands.lazy_commands))
def test_summary_is_the_commands_own_first_paragraph(name: str) -> None:
    command = build_command(name, Commands.lazy_commands[name])
    assert command.name == name
    first_paragraph = inspect.cleandoc(command.help or "").split("\n\n")[0]
    assert " ".join(first_paragraph.split()) == " ".join(
        Commands.lazy_commands[name].summary.split()
    )


def test_root_help_lists_every_command_and_imports_none() -> None:
    probe = (
        "import sys; from zverify.cli import run; code = run(['--help']); "
        "loaded = sorted(m for m in sys.modules if m.startswith('zverify.cli.') "
        "and m != 'zverify.cli.lazy'); print('LOADED', loaded, code)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    commands_section = out.split("Commands:")[1]
    for name in Commands.lazy_commands:
        assert f"\n  {name} " in commands_section
    assert out.rstrip().endswith("LOADED [] 0")


def test_a_typo_gets_the_suggestion_from_the_installed_script() -> None:
    done = subprocess.run(
        [console_script(), "compre", "a", "b"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "No such command 'compre'. Did you mean 'compare'?" in done.stderr


def test_every_subcommand_is_reachable_from_the_installed_script() -> None:
    for name in Commands.lazy_commands:
        done = subprocess.run(
            [console_script(), name, "--help"], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert f"Usage: zverify {name} " in done.stdout
