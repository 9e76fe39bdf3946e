"""The `zverify` console script and `python -m zverify`.

This module imports nothing but the standard library before it is inside a handler: if
importing the CLI itself fails (a broken install, an incompatible typer), Python would
print a traceback and exit 1, which scripts read as "differences found".  Here that is
exit 2, like every other failure to verify.
"""

import sys
import traceback

TROUBLE = 2  # zverify.exitcodes.TROUBLE, not imported: this must work when imports fail


def main() -> None:
    try:
        from zverify.cli import main as cli_main
    except KeyboardInterrupt:
        print("zverify: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        print("zverify: cannot start (installation broken?); nothing was verified", file=sys.stderr)
        sys.exit(TROUBLE)
    cli_main()


if __name__ == "__main__":
    main()
