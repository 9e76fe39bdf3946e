"""The root command group, loading each command's module only when that command runs.

Importing every command (and through them the comparison engine, the archive code, the
manifest formats) cost ~20 ms on every run, `zverify --help` included.  The root group
knows each command by name, module and one-line summary; it builds the command with typer
on first use, so a run pays for typer and the one command it invokes.  The summaries are
the commands' own first help paragraphs (tests/cli/test_lazy_commands.py keeps them equal).
"""

import gc
import importlib
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup


class LazyCommand(NamedTuple):  # not a dataclass: `--help` never needs dataclasses (~1 ms)
    module: str
    attribute: str  # a command function, or a typer app of subcommands
    summary: str  # shown in `zverify --help`: the command's first help paragraph


class LazyGroup(TyperGroup):
    """A typer group whose commands are `LazyCommand`s, built when first asked for."""

    lazy_commands: ClassVar[Mapping[str, LazyCommand]] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.lazy_commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.commands[cmd_name] = build_command(cmd_name, self.lazy_commands[cmd_name])
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """An unknown name fails here, with the suggestion typer would make had it built
        every command (it looks only at the commands already built)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in self.lazy_commands:
            import difflib

            matches = difflib.get_close_matches(name, list(self.lazy_commands))
            hint = f" Did you mean {', '.join(map(repr, matches))}?" if matches else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command list of `--help` from the summaries, importing no command."""
        if not self.lazy_commands:
            return
        limit = formatter.width - 6 - max(map(len, self.lazy_commands))
        rows = [
            (name, TyperCommand(name, help=lazy.summary).get_short_help_str(limit))
            for name, lazy in self.lazy_commands.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def build_command(name: str, lazy: LazyCommand) -> Any:
    """Import the command's module and let typer turn it into a click command."""
    from zverify.cli.filtering import remember_order

    target = getattr(importlib.import_module(lazy.module), lazy.attribute)
    if not isinstance(target, typer.Typer):
        from zverify.cli.epilogs import epilog

        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(name=name, epilog=epilog(name))(target)
        target = single
    command = typer.main.get_command(target)
    command.name = name
    remember_order(command)  # --include/--exclude order matters, as in rsync
    _upper_case_arguments(command)
    end_startup()  # the command runs next: however long it runs, with the collector on
    return command


def end_startup() -> None:
    """Resume the garbage collector the console script paused for start-up (zverify/__main__.py),
    first freezing what start-up made: it lives until exit, so no collection, the last one at
    exit included, need look at it again.  Called when a command is built, and at exit when none
    was (--help, --version, a usage error).  A no-op if the collector is on (zverify.cli.run
    called in a process that did not pause it: the tests)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _upper_case_arguments(command: Any) -> None:
    """Usage lines name arguments as their help does (SRC DST), not as typer's {src} {dst}."""
    for sub in getattr(command, "commands", {}).values():
        _upper_case_arguments(sub)
    for param in command.params:
        if param.param_type_name == "argument" and param.metavar is None:
            param.metavar = param.name.upper()
