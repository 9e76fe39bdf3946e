"""The `zverify` console script and `python -m zverify`.

This module imports nothing but the standard library before it is inside a handler: if
importing the CLI itself fails (a broken install, an incompatible typer), Python would
print a traceback and exit 1, which scripts read as "differences found".  Here that is
exit 2, like every other failure to verify.
"""

import gc
import sys
import traceback

TROUBLE = 2  # zverify.exitcodes.TROUBLE, not imported: this must work when imports fail


def main() -> None:
    # Start-up makes tens of thousands of objects that live as long as the process (modules,
    # classes, typer's commands); collecting them as they come, and again at exit, was about
    # a tenth of a short run.  zverify.cli.lazy.end_startup resumes collection, with what
    # start-up made frozen, before a command runs.
    gc.disable()
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
