"""Help a new user can act on: every command's --help ends with its exit codes and two
examples (compare also with its profiles and codes), a mistyped name gets the nearest valid
one, completion works, and the man page carries every option.  Run through the installed
console script, as a user meets it."""

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.console import REPO, console_script, needs_installed_command, zverify
from zverify.compare.policy import CODES, PROFILES

pytestmark = needs_installed_command

COMMANDS = [
    ["compare"],
    ["manifest"],
    ["cutover"],
    ["stream", "verify"],
    ["stream", "info"],
    ["stream", "token"],
    ["cold", "send"],
    ["cold", "check"],
    ["cold", "restore"],
    ["cold", "prune"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_help_ends_with_exit_codes_and_two_examples(command: list[str]) -> None:
    done = zverify(*command, "--help", env={"COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    tail = done.stdout[done.stdout.index("--help") :]
    assert "Exit codes: 0 " in tail, done.stdout
    # any command can fail to verify, if only by a usage error: its help must say 2
    codes = tail[tail.index("Exit codes: ") : tail.index("Examples")]
    assert ", 2 " in codes, codes
    examples = tail[tail.index("Examples") :].splitlines()[1:]
    runs = [line.strip() for line in examples if line.strip().startswith(("zverify ", "zfs "))]
    assert len(runs) == 2 and all(f"zverify {command[0]}" in "".join(runs) for _ in runs), tail


def test_compare_help_lists_profiles_and_codes() -> None:
    text = zverify("compare", "--help", env={"COLUMNS": "100"}).stdout
    epilog = text[text.index("Profiles (--profile)") :]
    for name in PROFILES:
        assert f"\n    {name} " in epilog, name
    for kind, code in CODES.items():
        assert f"{code} {kind.value}" in epilog, kind
    assert "(default)" in epilog.splitlines()[4]  # full, the last profile


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--profile", "ful"], "did you mean 'full'?"),
        (["--profile", "rsync-ah"], "did you mean 'rsync-aH'?"),
        (["--ignore", "mtim"], "did you mean 'mtime'?"),
        (["--hash", "blak3"], "did you mean 'blake3'?"),
        (["--profil", "full"], "--profile"),
    ],
)
def test_a_mistyped_name_gets_the_nearest(args: list[str], hint: str) -> None:
    done = zverify("compare", *args, "/nonexistent-a", "/nonexistent-b")
    assert done.returncode == 2 and done.stdout == ""
    assert hint in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_shell_completion_completes_commands_and_options() -> None:
    # typer takes the shell from the process tree (shellingham), not from an argument: run it
    # under bash, as a user does, and keep bash the parent (`; true`: bash -c would exec it)
    script = subprocess.run(
        ["bash", "-c", f"{shlex.quote(console_script())} --show-completion; true"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert "_zverify_completion" in script.stdout, script.stderr
    for words, cword, expected in (
        ("zverify comp", "1", "compare"),
        ("zverify compare --pro", "2", "--profile"),
    ):
        done = zverify(
            env={"_ZVERIFY_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}
        )
        assert expected in done.stdout.split(), (words, done.stdout, done.stderr)


def test_the_man_page_carries_every_option_and_renders() -> None:
    page = (REPO / "docs" / "zverify.1").read_text()
    generated = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "manpage.py"), "--check"],
        capture_output=True,
        text=True,
    )
    # byte-equal only with the typer that wrote it; every option must be there with any
    import typer.main

    from zverify.cli import app

    root = typer.main.get_command(app)
    for path in COMMANDS:
        command = root
        for name in path:
            command = command.get_command(None, name)  # type: ignore[attr-defined]
        for param in command.params:
            for flag in param.opts:
                if flag.startswith("-"):
                    assert flag.replace("-", "\\-") in page, (path, flag, generated.stderr)
    if shutil.which("man") is None:
        pytest.skip("man is not installed: the page's rendering is not checked")
    shown = subprocess.run(
        ["man", "--warnings", "-l", str(REPO / "docs" / "zverify.1")],
        capture_output=True,
        text=True,
        env={**os.environ, "MANWIDTH": "100", "MAN_DISABLE_SECCOMP": "1"},
    )
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "zverify compare [OPTIONS] SRC DST" in shown.stdout


SECTIONS = [
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "COMMANDS",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "ARCHIVE NAMING",
    "EXAMPLES",
    "SHELL COMPLETION",
    "SEE ALSO",
]


def _man_sections() -> dict[str, str]:
    page = (REPO / "docs" / "zverify.1").read_text()
    parts = re.split(r"^\.SH (.+)$", page, flags=re.M)
    return {name.strip('"'): body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def _roff(text: str) -> str:
    return text.replace("-", "\\-")


def test_the_man_page_has_the_sections_a_sysadmin_looks_for() -> None:
    assert list(_man_sections()) == SECTIONS


def test_the_man_page_lists_every_exit_code() -> None:
    from zverify import exitcodes

    codes = {v for k, v in vars(exitcodes).items() if k.isupper() and isinstance(v, int)}
    listed = {int(n) for n in re.findall(r"^\.B (\d+)$", _man_sections()["EXIT STATUS"], re.M)}
    assert listed == codes


def test_the_man_page_names_every_variable_zverify_reads() -> None:
    """Each ZVERIFY_ variable the code reads is documented, and, in a source checkout (where
    the build's native/*.py is), each documented one is still read.  The completion hook
    _ZVERIFY_COMPLETE is typer's, not the user's."""
    import zverify

    installed = [*Path(zverify.__file__).parent.rglob("*.py")]
    build = [*(REPO / "native").glob("*.py")]  # absent where package.sh runs the tests

    def read(paths: list[Path]) -> set[str]:
        pattern = r"(?<![A-Z_])ZVERIFY_[A-Z0-9_]+"
        return {name for path in paths for name in re.findall(pattern, path.read_text())}

    section = _man_sections()["ENVIRONMENT"]
    documented = set(re.findall(r"^\.B (ZVERIFY_[A-Z0-9_]+)$", section, re.M))
    assert read(installed) | read(build) <= documented
    if build:
        assert documented == read(installed) | read(build)


def test_the_man_page_names_the_archive_files_cold_keeps() -> None:
    from zverify.cold import names, parity
    from zverify.cold.proof import ledger
    from zverify.cold.store import lock

    files = _man_sections()["FILES"]
    for name in [*lock.FILES, *ledger.FILES, *names.WORK_DIRS]:
        assert _roff(name) in files, name
    for suffix in (names.SIDECAR, names.PARTIAL, names.DAMAGED, parity.SUFFIX):
        assert f"NAME{_roff(suffix)}" in files, suffix
    naming = _man_sections()["ARCHIVE NAMING"]
    for suffix in (names.FULL, names.INCREMENTAL, names.INTERMEDIATE):
        assert f" {suffix}\n" in naming, suffix
    for suffix in names.COMPRESSION_SUFFIXES:
        assert suffix in naming, suffix


def test_the_man_page_is_generated_from_its_template() -> None:
    """The hand-written sections are the template's, byte for byte (the generated COMMANDS
    may differ in layout with another typer: test_the_man_page_carries_every_option)."""
    spec = importlib.util.spec_from_file_location("manpage", REPO / "scripts" / "manpage.py")
    assert spec is not None and spec.loader is not None
    manpage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(manpage)
    rendered = manpage.render()
    page = (REPO / "docs" / "zverify.1").read_text()
    tail = ".SH EXIT STATUS"
    assert page[page.index(tail) :] == rendered[rendered.index(tail) :]
    assert page[: page.index(".SH COMMANDS")] == rendered[: rendered.index(".SH COMMANDS")]


def test_the_man_page_renders_without_a_groff_warning() -> None:
    if shutil.which("groff") is None:
        pytest.skip("groff is not installed: the page's roff is not checked")
    done = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z", str(REPO / "docs" / "zverify.1")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
