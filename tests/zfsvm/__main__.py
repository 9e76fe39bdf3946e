"""Command line of the harness: ``python -m tests.zfsvm build|run|shell-cmd|status|fixtures``."""

from tests.zfsvm.cli import main

raise SystemExit(main())
