"""Generate the static shell completions of zverify from the CLI itself.

    python scripts/completions.py            # rewrite completions/{zverify,_zverify,zverify.fish}
    python scripts/completions.py --check    # exit 1 if any of them is out of date

Static, not typer's dynamic completion: a TAB runs no Python (typer's took 76-183 ms per TAB,
and completed no value of --profile or --hash), and the files are installed with the package
where bash-completion, zsh and fish look (pyproject.toml's data-files).  The commands, options
and arguments come from the click command tree; what an option's value may be comes from the
tables below, whose choices are the library's own constants where it has them.
tests/cli/test_completion.py runs --check and drives each file in its shell.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import typer.main  # noqa: E402

from zverify.cli import app  # noqa: E402
from zverify.compare.policy import IGNORABLE, PROFILES  # noqa: E402
from zverify.hashing import CHOICES as HASHES  # noqa: E402
from zverify.manifest import FORMATS  # noqa: E402
from zverify.sendstream.compressed import LEVELS  # noqa: E402

OUT = REPO / "completions"
FILES = {"bash": OUT / "zverify", "zsh": OUT / "_zverify", "fish": OUT / "zverify.fish"}

FILE, DIR, FREE = "file", "dir", "free"  # a path (file or directory), a directory, any text
# The values an option takes, by its long name: a tuple of choices, a list of choices that
# may be joined by commas, or a kind of path.  tests/cli/test_completion.py checks that the
# command refuses a value outside each tuple and names every choice when it does.
VALUES: dict[str, tuple[str, ...] | list[str] | str] = {
    "--profile": tuple(PROFILES),
    "--ignore": [kind.value for kind in IGNORABLE],
    "--hash": tuple(a.value for a in HASHES),
    "--format": FORMATS,
    "--depth": ("full", "sample", "metadata"),
    "--tier": ("Standard", "Bulk", "Expedited"),
    "--mode": ("GOVERNANCE", "COMPLIANCE"),
    "--snapshots": ("latest", "all"),
    "--compress": tuple(LEVELS),
    # S3's own names (the server may know more): the option passes any name through
    "--storage-class": (
        "STANDARD",
        "STANDARD_IA",
        "ONEZONE_IA",
        "INTELLIGENT_TIERING",
        "GLACIER_IR",
        "GLACIER",
        "DEEP_ARCHIVE",
    ),
    "--output": FILE,
    "--exclude-from": FILE,
    "--files-from": FILE,
    "--ledger": FILE,
    "--prometheus": FILE,
    "--script": FILE,
    "--write-lists": DIR,
    "--also": DIR,
}
# Arguments, by command and name: files unless said otherwise (datasets are not files).
ARGUMENTS = {
    ("cutover", "src"): FREE,
    ("cutover", "dst"): FREE,
    ("manifest", "tree"): DIR,
    ("stream token", "value"): FREE,
    ("cold send", "dataset"): FREE,
    ("cold send", "directory"): DIR,
    ("cold lock", "directory"): FREE,
    ("cold restore", "target"): FREE,
}


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]  # every spelling: --one-file-system, -x
    help: str
    value: tuple[str, ...] | list[str] | str | None  # None: a flag
    repeatable: bool


@dataclass(frozen=True)
class Command:
    path: str  # "" for the root, "cold send"
    help: str
    subcommands: tuple[str, ...]
    options: tuple[Option, ...]
    arguments: tuple[tuple[str, str, bool], ...]  # (name, kind, variadic)


def _short(text: str) -> str:
    """The first sentence of a help text on one line, without its asides in parentheses
    (a shell shows one line per choice)."""
    text = " ".join((text or "").replace("\b", "").split())
    text = re.sub(r"\s*\([^()]*\)", "", text)
    first = re.split(r"(?<=[.:;])\s", text, maxsplit=1)[0].rstrip(".:;,")
    return first if len(first) <= 80 else first[:77].rsplit(" ", 1)[0] + "..."


def _option(param: Any) -> Option:
    names = (*param.opts, *param.secondary_opts)
    value = None
    if not param.is_flag:
        value = VALUES.get(param.opts[0], FREE)
    return Option(names, _short(param.help or ""), value, bool(param.multiple))


def _commands(command: Any, path: str = "") -> Iterator[Command]:
    ctx = command.context_class(command, info_name=path.split(" ")[-1] or "zverify")
    subs = tuple(command.list_commands(ctx)) if hasattr(command, "list_commands") else ()
    options = [_option(p) for p in command.params if p.param_type_name == "option"]
    options.append(Option(("-h", "--help"), "Show the help and exit", None, False))
    arguments = tuple(
        (p.name, ARGUMENTS.get((path, p.name), FILE), p.nargs == -1)
        for p in command.params
        if p.param_type_name == "argument"
    )
    yield Command(path, _short(command.help or ""), subs, tuple(options), arguments)
    for name in subs:
        yield from _commands(command.get_command(ctx, name), f"{path} {name}".strip())


def tree() -> list[Command]:
    return list(_commands(typer.main.get_command(app)))


HEADER = "zverify {shell} completion, generated by scripts/completions.py: do not edit."


# bash: one function, no bash-completion helpers needed (they are used by nothing here).
# The command path is found by walking the words before the cursor, skipping options and
# the values of the options that take one.

BASH_MAIN = r"""
_zverify() {
    local cur=${COMP_WORDS[COMP_CWORD]} path="" word i skip="" positional=0 value
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ -n $skip ]]; then skip=""; continue; fi
        case $word in
        -*=*) ;;
        -*) _zverify_value "$path" "$word" >/dev/null && skip=1 ;;
        *)
            if [[ " $(_zverify_subcommands "$path") " == *" $word "* ]]; then
                path=${path:+$path }$word
            else
                positional=$((positional + 1))
            fi
            ;;
        esac
    done
    # the value of an option: --opt VALUE, or --opt=VALUE (which bash splits at the '=')
    local option=""
    if [[ -n $skip ]]; then
        option=${COMP_WORDS[COMP_CWORD - 1]}
    elif [[ $cur == --*=* ]]; then
        option=${cur%%=*} cur=${cur#*=}
    elif [[ ${COMP_WORDS[COMP_CWORD - 1]} == "=" && COMP_CWORD -gt 1 ]]; then
        option=${COMP_WORDS[COMP_CWORD - 2]}
    fi
    if [[ -n $option ]]; then
        value=$(_zverify_value "$path" "$option") && _zverify_complete "$value" "$cur"
        # a word bash did not split at the '=' (not in COMP_WORDBREAKS) is replaced whole
        [[ ${COMP_WORDS[COMP_CWORD]} == --*=* ]] && COMPREPLY=("${COMPREPLY[@]/#/$option=}")
        return 0
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_zverify_options "$path")" -- "$cur")
    elif [[ -n $(_zverify_subcommands "$path") ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_zverify_subcommands "$path")" -- "$cur")
    else
        _zverify_complete "$(_zverify_argument "$path" "$positional")" "$cur"
    fi
    return 0
}

_zverify_complete() {  # $1: a kind of value (file, dir, free, choices:..., list:...), $2: typed
    local kind=$1 cur=$2 head=""
    case $kind in
    file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    dir) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
    choices:*) mapfile -t COMPREPLY < <(compgen -W "${kind#choices:}" -- "$cur") ;;
    list:*)  # KIND,KIND,...: complete the last one, keep what is before it
        [[ $cur == *,* ]] && head=${cur%,*},
        mapfile -t COMPREPLY < <(compgen -P "$head" -W "${kind#list:}" -- "${cur##*,}")
        compopt -o nospace 2>/dev/null ;;
    *) COMPREPLY=() ;;
    esac
}

complete -F _zverify zverify
"""


def _kind(value: tuple[str, ...] | list[str] | str) -> str:
    if isinstance(value, tuple):
        return "choices:" + " ".join(value)
    if isinstance(value, list):
        return "list:" + " ".join(value)
    return value


def _bash_case(name: str, doc: str, arms: list[tuple[str, str]], args: str) -> list[str]:
    lines = [f"{name}() {{  # {doc}", f"    case {args} in"]
    lines += [f'    {pattern}) echo "{out}" ;;' for pattern, out in arms if out]
    lines += ["    *) return 1 ;;", "    esac", "}", ""]
    return lines


def render_bash(commands: list[Command]) -> str:
    subs = [(f'"{c.path}"', " ".join(c.subcommands)) for c in commands]
    opts = [(f'"{c.path}"', " ".join(n for o in c.options for n in o.names)) for c in commands]
    values = [
        (f'"{c.path}|{name}"', _kind(o.value))
        for c in commands
        for o in c.options
        if o.value is not None
        for name in o.names
    ]
    arguments = []
    for c in commands:
        for index, (_, kind, variadic) in enumerate(c.arguments):
            # an argument that takes the rest (DIR...) answers for every index from its own
            # on; the case takes the first match, so the ones before it come first
            arguments.append((f'"{c.path}|"*' if variadic else f'"{c.path}|{index}"', kind))
    out = [f"# {HEADER.format(shell='bash')}", ""]
    out += _bash_case("_zverify_subcommands", "$1: command path", subs, '"$1"')
    out += _bash_case("_zverify_options", "$1: command path", opts, '"$1"')
    out += _bash_case("_zverify_value", "$1: path, $2: option; 1: a flag", values, '"$1|$2"')
    out += _bash_case("_zverify_argument", "$1: path, $2: argument index", arguments, '"$1|$2"')
    return "\n".join(out) + BASH_MAIN


# zsh: one function per command with _arguments; a group hands the words after its
# subcommand's name to that subcommand's function (*:: narrows $words to them).


def _zsh_quote(text: str) -> str:
    return text.replace("'", "'\\''")


def _zsh_help(text: str) -> str:
    return _zsh_quote(text.replace("[", "(").replace("]", ")"))


def _zsh_action(value: tuple[str, ...] | list[str] | str, what: str) -> str:
    if isinstance(value, tuple):
        return f"({' '.join(value)})"
    if isinstance(value, list):
        return f"_values -s , {what} {' '.join(value)}"
    return {FILE: "_files", DIR: "_files -/"}.get(value, " ")


def _zsh_option(option: Option) -> str:
    names, star = option.names, "*" if option.repeatable else ""
    if len(names) == 1:
        spec = f"'{star}{names[0]}[{_zsh_help(option.help)}]"
    else:  # the spellings exclude each other, unless the option may be repeated
        exclusive = "" if star else f"({' '.join(names)})"
        spec = f"'{exclusive}{star}'{{{','.join(names)}}}'[{_zsh_help(option.help)}]"
    if option.value is not None:
        what = names[0].lstrip("-")
        spec += f":{what}:{_zsh_quote(_zsh_action(option.value, what))}"
    return spec + "'"


def _zsh_function(path: str) -> str:
    return "_zverify" + "".join(f"__{part.replace('-', '_')}" for part in path.split())


def _zsh_command(command: Command, commands: dict[str, Command]) -> list[str]:
    specs = [_zsh_option(o) for o in command.options]
    if command.subcommands:
        specs += ["'1: :->command'", "'*:: :->argument'"]
    for index, (name, kind, variadic) in enumerate(command.arguments):
        position = "*" if variadic else str(index + 1)
        specs.append(f"'{position}:{name.upper()}:{_zsh_quote(_zsh_action(kind, name))}'")
    lines = [f"{_zsh_function(command.path)}() {{"]
    if command.subcommands:
        lines += ["    local curcontext=$curcontext state line", "    typeset -A opt_args"]
        lines.append("    _arguments -C -s -S \\")
    else:
        lines.append("    _arguments -s -S \\")
    lines += [f"        {spec} \\" for spec in specs[:-1]] + [f"        {specs[-1]}"]
    if command.subcommands:
        described = [
            f"'{name}:{_zsh_quote(commands[f'{command.path} {name}'.strip()].help)}'"
            for name in command.subcommands
        ]
        lines += ["    case $state in", "    command)", "        local -a commands=("]
        lines += [f"            {item}" for item in described]
        lines += [
            "        )",
            f"        _describe -t commands 'zverify {command.path} command' commands ;;".replace(
                "zverify  ", "zverify "
            ),
            "    argument)",
            "        case $line[1] in",
        ]
        for name in command.subcommands:
            child = _zsh_function(f"{command.path} {name}".strip())
            lines.append(f"        {name}) {child} ;;")
        lines += ["        esac ;;", "    esac"]
    return [*lines, "}", ""]


def render_zsh(commands: list[Command]) -> str:
    by_path = {c.path: c for c in commands}
    out = ["#compdef zverify", f"# {HEADER.format(shell='zsh')}", ""]
    for command in reversed(commands):
        out += _zsh_command(command, by_path)
    out += [
        "# autoloaded from $fpath (the file is the function) or sourced by hand",
        'if [ "$funcstack[1]" = "_zverify" ]; then',
        '    _zverify "$@"',
        "else",
        "    compdef _zverify zverify",
        "fi",
    ]
    return "\n".join(out) + "\n"


# fish: one `complete` line per choice, guarded by the command path typed so far.

FISH_MAIN = r"""
function __zverify_path --description 'the zverify command typed so far, without options'
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path ''
    set -l skip 0
    for token in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        switch $token
            case '-*=*'
            case '-*'
                __zverify_takes_value "$path" $token; and set skip 1
            case '*'
                if contains -- $token (__zverify_subcommands "$path")
                    set path (string trim -- "$path $token")
                end
        end
    end
    echo $path
end

function __zverify_at --description 'is the zverify command typed so far $argv[1]?'
    set -l path (__zverify_path)
    test "$path" = "$argv[1]"
end

function __zverify_list --description 'KIND,KIND,...: the choices after what is typed'
    set -l head (string replace -r -- '[^,]*$' '' (commandline -ct))
    for item in $argv
        echo $head$item
    end
end

complete -c zverify -f
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_value(value: tuple[str, ...] | list[str] | str) -> str:
    if isinstance(value, tuple):
        return "-x -a " + _fish_quote(" ".join(value))
    if isinstance(value, list):
        return "-x -a " + _fish_quote(f"(__zverify_list {' '.join(value)})")
    if value == FILE:
        return "-r -F"
    if value == DIR:
        return "-x -a '(__fish_complete_directories (commandline -ct))'"
    return "-x"


def _fish_switch(name: str, arms: list[tuple[str, str]], argument: str) -> list[str]:
    lines = [f"function {name}", f"    switch {argument}"]
    for pattern, body in arms:
        lines += [f"        case {_fish_quote(pattern)}", f"            {body}"]
    lines += ["        case '*'", "            return 1", "    end", "end", ""]
    return lines


def render_fish(commands: list[Command]) -> str:
    out = [f"# {HEADER.format(shell='fish')}", ""]
    subs = [(c.path, f"string split ' ' -- {' '.join(c.subcommands)}") for c in commands]
    out += _fish_switch(
        "__zverify_subcommands", [a for a in subs if a[1].split("-- ")[1]], '"$argv[1]"'
    )
    takes = sorted(
        {f"{c.path}|{n}" for c in commands for o in c.options if o.value for n in o.names}
    )
    out += _fish_switch(
        "__zverify_takes_value", [(t, "return 0") for t in takes], '"$argv[1]|$argv[2]"'
    )
    out.append(FISH_MAIN.strip("\n"))
    by_path = {c.path: c for c in commands}
    for command in commands:
        guard = f"-n {_fish_quote(f'__zverify_at {_fish_quote(command.path)}')}"
        for name in command.subcommands:
            help_text = by_path[f"{command.path} {name}".strip()].help
            out.append(f"complete -c zverify {guard} -a {name} -d {_fish_quote(help_text)}")
        for option in command.options:
            spelled = " ".join(
                f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}" for n in option.names
            )
            value = "" if option.value is None else " " + _fish_value(option.value)
            out.append(
                f"complete -c zverify {guard} {spelled}{value} -d {_fish_quote(option.help)}"
            )
        kinds = {kind for _, kind, _ in command.arguments}
        if FILE in kinds:
            out.append(f"complete -c zverify {guard} -F")
        elif DIR in kinds:
            out.append(f"complete -c zverify {guard} {_fish_value(DIR)[3:]}")
    return "\n".join(out) + "\n"


def render(shell: str) -> str:
    commands = tree()
    return {"bash": render_bash, "zsh": render_zsh, "fish": render_fish}[shell](commands)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if a file is out of date")
    args = ap.parse_args()
    stale = []
    for shell, path in FILES.items():
        text = render(shell)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
            continue
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    for path in stale:
        print(f"{path} is out of date: run python scripts/completions.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
