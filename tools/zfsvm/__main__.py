"""Command line of the harness: ``python -m tools.zfsvm build|run|shell-cmd|status|fixtures``."""

from tools.zfsvm.cli import main

raise SystemExit(main())
