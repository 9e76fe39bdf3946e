"""Generate docs/zverify.1 from the CLI itself: every command's help, options and epilog.

    python scripts/manpage.py            # rewrite docs/zverify.1
    python scripts/manpage.py --check    # exit 1 if docs/zverify.1 is out of date

Read it with `man -l docs/zverify.1`.  tests/cli/test_help.py runs --check, so a change of
an option's help that is not carried into the page fails the suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import typer  # noqa: E402

from zverify import __version__  # noqa: E402
from zverify.cli import app  # noqa: E402

PAGE = REPO / "docs" / "zverify.1"


def _roff(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote on any line."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line if line[:1] in ".'" else line) for line in text.split("\n"))


def _paragraphs(text: str) -> list[str]:
    """Help text as roff paragraphs; a click "\\b" block keeps its lines (as .nf/.fi)."""
    out = []
    for block in text.strip().split("\n\n"):
        if block.startswith("\b\n"):
            out.append(".nf\n" + _roff(block[2:]) + "\n.fi")
        else:
            out.append(_roff(" ".join(line.strip() for line in block.split("\n"))))
    return out


def _command(path: str, command: Any, ctx: Any) -> list[str]:
    lines = [f".SS {_roff(path)}"]
    pieces = command.collect_usage_pieces(ctx)  # typer writes arguments as {name}
    usage = " ".join(p.strip("{}").upper() if p.startswith("{") else p for p in pieces)
    lines += [".PP", f".B {_roff(path)}", _roff(usage)]
    for paragraph in _paragraphs(command.help or ""):
        lines += [".PP", paragraph]
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or param.name == "help":
            continue
        names, help_text = record
        lines += [".TP", f".B {_roff(names)}", _roff(help_text)]
    if command.epilog:
        for paragraph in _paragraphs(command.epilog):
            lines += [".PP", paragraph]
    return lines


def _walk(path: str, command: Any, parent: Any) -> list[str]:
    # typer may vendor its own click: use the classes of the command in hand
    ctx = command.context_class(command, info_name=path.split()[-1], parent=parent)
    if hasattr(command, "list_commands"):
        lines = []
        for name in command.list_commands(ctx):
            lines += _walk(f"{path} {name}", command.get_command(ctx, name), ctx)
        return lines
    return _command(path, command, ctx)


def render() -> str:
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="zverify")
    head = [
        f'.TH ZVERIFY 1 "" "zverify {__version__}" "User Commands"',
        ".SH NAME",
        "zverify \\- " + _roff((root.help or "").strip().split(".  ")[0].rstrip(".") + "."),
        ".SH SYNOPSIS",
        ".B zverify",
        "COMMAND [OPTIONS] [ARGS]...",
        ".SH DESCRIPTION",
    ]
    for name in root.list_commands(ctx):
        summary = root.lazy_commands[name].summary  # type: ignore[attr-defined]
        head += [".TP", f".B {name}", _roff(summary)]
    body = [".SH COMMANDS"]
    for name in root.list_commands(ctx):
        body += _walk(f"zverify {name}", root.get_command(ctx, name), ctx)
    tail = [
        ".SH SHELL COMPLETION",
        "\\fBzverify \\-\\-install\\-completion\\fR installs completion for the current "
        "shell (bash, zsh, fish); \\fBzverify \\-\\-show\\-completion\\fR prints it.",
        ".SH EXIT STATUS",
        "0: verified identical (intact, ready); 1: differences found, everything verified; "
        "2: not everything could be verified (never reported as 0 or 1); 130: interrupted.",
        ".SH SEE ALSO",
        ".BR rsync (1),",
        ".BR zfs-send (8),",
        ".BR hashdeep (1)",
    ]
    return "\n".join(head + body + tail) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = ap.parse_args()
    page = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != page:
            print(f"{PAGE} is out of date: run python scripts/manpage.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
