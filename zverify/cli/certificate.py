"""`zverify certificate verify FILE`: re-check a certificate written by `cutover
--certificate` or `cold drill --certificate` (zverify.certificate)."""

import sys
from typing import Annotated

import typer

from zverify.cli.epilogs import epilog
from zverify.errors import UsageError

app = typer.Typer(
    name="certificate",
    help="Re-check a certificate of a cutover check or a restore drill.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,
)


@app.callback()
def certificate() -> None:
    """Re-check a certificate of a cutover check or a restore drill."""
    # a group, not its one command: `zverify certificate verify FILE` leaves room for more


@app.command("verify", epilog=epilog("certificate verify"))
def verify(
    path: Annotated[str, typer.Argument(metavar="FILE", help="The certificate.")],
    signers: Annotated[
        str | None,
        typer.Option(
            "--signers",
            metavar="ALLOWED_SIGNERS",
            help="Also verify FILE.sig (`ssh-keygen -Y sign -n zverify-certificate`) against "
            "this allowed_signers file.",
        ),
    ] = None,
    identity: Annotated[
        str | None, typer.Option(metavar="ID", help="The signer's identity in ALLOWED_SIGNERS.")
    ] = None,
) -> int:
    """Re-check FILE's digest (and signature): exit 0 intact and certifying a pass, 1
    altered, badly signed or certifying a failure, 2 unreadable or not a certificate."""
    from zverify.certificate import verify as check

    if (signers is None) != (identity is None):
        raise UsageError("--signers and --identity go together")
    result = check(path, signers, identity)
    doc = result.doc
    made = doc["producer"]
    lines = [
        f"certificate {path}: {doc['kind']}, issued {made.get('finished', '?')} on "
        f"{made.get('host', '?')} by zverify {made.get('version', '?')}",
        f"digest sha256 {doc['digest']['value']}: "
        + ("matches" if result.intact else "DOES NOT MATCH"),
    ]
    if result.signer is not None:
        lines.append(f"signed by {result.signer}: good signature")
    if result.problem is not None:
        lines.append(f"ALTERED: {result.problem}")
    else:
        lines.append(f"{doc['verdict']}: certified (exit {doc['exit_code']} when issued)")
    sys.stdout.write("".join(line + "\n" for line in lines))
    return result.exit_code
