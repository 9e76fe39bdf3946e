"""The static completion files (completions/, from scripts/completions.py): up to date with
the CLI, driven in the real shells, and offering only values the commands accept."""

import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.cli.console import REPO, needs_installed_command, zverify
from zverify.cli import Commands
from zverify.compare.policy import PROFILES

GENERATOR = REPO / "scripts" / "completions.py"
SHELLS = {"bash": "zverify", "zsh": "_zverify", "fish": "zverify.fish"}
# scripts/package.sh tests the files the wheel installed, where each shell looks for them
INSTALLED = {
    "bash": "share/bash-completion/completions/zverify",
    "zsh": "share/zsh/site-functions/_zverify",
    "fish": "share/fish/vendor_completions.d/zverify.fish",
}


def _file(shell: str) -> Path:
    if os.environ.get("ZVERIFY_TEST_INSTALLED") == "1":
        return Path(sys.prefix) / INSTALLED[shell]
    return REPO / "completions" / SHELLS[shell]


@functools.cache
def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zverify_completions", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("shell", SHELLS)
def test_the_files_are_what_the_cli_generates(shell: str) -> None:
    """As `scripts/completions.py --check`: a changed option fails here until regenerated."""
    assert _file(shell).read_text() == _generator().render(shell), "python scripts/completions.py"


def _bash(*words: str) -> list[str]:
    """What TAB offers after `words` (the last one being the word under the cursor), from
    the bash file sourced in a real bash with no bash-completion loaded."""
    script = (
        f"source {shlex.quote(str(_file('bash')))}\n"
        f"COMP_WORDS=({' '.join(map(shlex.quote, words))})\n"
        "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
        "_zverify\n"
        '[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.splitlines()


def test_bash_completes_commands_and_subcommands() -> None:
    assert _bash("zverify", "") == list(Commands.lazy_commands)
    assert "compare" in Commands.lazy_commands
    assert set(_bash("zverify", "cold", "")) >= {"send", "check", "scrub", "restore", "repair"}
    assert _bash("zverify", "stream", "") == ["verify", "info", "token"]


def test_bash_completes_options_and_their_values() -> None:
    from zverify.compare.policy import PROFILES

    assert _bash("zverify", "compare", "--pro") == ["--profile"]
    assert _bash("zverify", "compare", "--profile", "") == list(PROFILES)
    assert _bash("zverify", "compare", "-q", "--profile", "rsync") == ["rsync-a", "rsync-aH"]
    assert _bash("zverify", "cold", "check", "--depth", "") == ["full", "sample", "metadata"]
    # --opt=VALUE: split at the '=' as bash does by default, and as one word
    assert _bash("zverify", "compare", "--profile", "=", "f") == ["full"]
    assert _bash("zverify", "compare", "--profile=f") == ["--profile=full"]
    # KIND,KIND,...: the last kind is completed, those before it kept
    assert _bash("zverify", "compare", "--ignore", "mtime,o") == ["mtime,owner"]
    assert "-h" in _bash("zverify", "cold", "send", "-")


def test_bash_completes_paths_where_paths_go(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree.zvm").write_text("")
    typed = f"{tmp_path}/tr"
    both = sorted([f"{tmp_path}/tree", f"{tmp_path}/tree.zvm"])
    assert sorted(_bash("zverify", "compare", typed)) == both
    assert sorted(_bash("zverify", "manifest", "/x", "-o", typed)) == both
    assert _bash("zverify", "cold", "send", "tank/data", typed) == [f"{tmp_path}/tree"]
    # a dataset is not a file: nothing rather than the files of the working directory
    assert _bash("zverify", "cold", "send", typed) == []
    assert _bash("zverify", "cutover", typed) == []


def test_zsh_file_parses_and_loads() -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed: only its syntax could be checked, and not even that")
    path = str(_file("zsh"))
    done = subprocess.run(["zsh", "-n", path], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    # sourced after compinit, as a user without fpath set up would: it registers itself
    load = f"autoload -Uz compinit && compinit -u -D && source {shlex.quote(path)} && "
    load += "print -r -- $_comps[zverify]"
    done = subprocess.run(["zsh", "-f", "-c", load], capture_output=True, text=True)
    assert done.stdout.strip() == "_zverify" and done.stderr == "", done.stderr


# zsh completes only inside its line editor: a zsh under a pseudo-terminal (zpty) types
# the line and TAB, and what it lists is read back.
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT='>'; RPROMPT=''"
zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; setopt NO_BEEP; print RE''ADY"
zpty -r -m z line '*READY*'
zpty -n -w z "$2"$'\t'
sleep 2
local all="" chunk
while zpty -r -t z chunk; do all+=$chunk; done
print -r -- "$all"
zpty -d z
"""


def _zsh(line: str, cwd: Path) -> set[str]:
    """The words zsh lists after TAB on `line` (typed in directory cwd)."""
    done = subprocess.run(
        ["zsh", "-f", "-c", ZSH_DRIVER, "zsh", str(_file("zsh").parent), line],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", done.stdout)
    listed = shown[shown.index(line.strip()) + len(line.strip()) :]  # after its echo
    return set(re.findall(r"[\w.,-]+", listed))


def test_zsh_completes_commands_values_and_files(tmp_path: Path) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed: its completion file is not checked")
    (tmp_path / "decoy-file").write_text("")
    assert {"send", "check", "scrub"} <= _zsh("zverify cold ", tmp_path)
    offered = _zsh("zverify cold check --depth ", tmp_path)
    assert {"full", "sample", "metadata"} <= offered and "decoy-file" not in offered
    assert "decoy-file" in _zsh("zverify compare ", tmp_path)


def _fish(line: str) -> list[str]:
    """What fish offers for a command line (complete -C), from the fish file alone."""
    script = f"source {shlex.quote(str(_file('fish')))}; complete -C{shlex.quote(line)}"
    done = subprocess.run(
        ["fish", "--no-config", "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": "/nonexistent"},
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return sorted(row.split("\t")[0] for row in done.stdout.splitlines())


def test_fish_file_parses_and_completes() -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed: its completion file is not checked")
    done = subprocess.run(["fish", "--no-execute", str(_file("fish"))])
    assert done.returncode == 0
    assert _fish("zverify ") == sorted(Commands.lazy_commands)
    assert _fish("zverify compare --profile ") == sorted(PROFILES)
    assert _fish("zverify cold -q check --depth m") == ["metadata"]
    assert _fish("zverify compare --ignore mtime,o") == ["mtime,owner"]


# Each option with choices, and a command line that fails at that option alone.
REFUSALS = {
    "--profile": ["compare", "--profile", "BOGUS", "/nonexistent-a", "/nonexistent-b"],
    "--ignore": ["compare", "--ignore", "BOGUS", "/nonexistent-a", "/nonexistent-b"],
    "--hash": ["compare", "--hash", "BOGUS", "/nonexistent-a", "/nonexistent-b"],
    "--format": ["manifest", "--format", "BOGUS", "-o", "-", "/nonexistent"],
    "--depth": ["cold", "check", "--depth", "BOGUS", "/nonexistent"],
    "--tier": ["cold", "restore", "--tier", "BOGUS", "/nonexistent", "tank/x"],
    "--mode": ["cold", "lock", "--mode", "BOGUS", "--days", "1", "s3://b/p"],
    "--snapshots": ["cutover", "--snapshots", "BOGUS", "tank/a", "tank/b"],
    "--compress": ["cold", "send", "--compress", "BOGUS", "tank/x", "/nonexistent"],
}


@needs_installed_command
@pytest.mark.parametrize("option", sorted(REFUSALS))
def test_every_offered_choice_is_one_the_command_names(option: str) -> None:
    """A choice offered is one the command knows: refused a bogus value, the command's one
    line names every choice the completion offers (so neither list drifts silently)."""
    offered = _generator().VALUES[option]
    done = zverify(*REFUSALS[option])
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    for choice in offered:
        assert choice in done.stderr, (option, choice, done.stderr)


def test_every_option_with_choices_is_checked_above() -> None:
    # --storage-class passes S3's names through: S3, not zverify, refuses a bad one
    choosing = {k for k, v in _generator().VALUES.items() if isinstance(v, tuple | list)}
    assert choosing - {"--storage-class"} == set(REFUSALS)
