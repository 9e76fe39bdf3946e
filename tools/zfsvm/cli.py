"""Argument parsing for ``python -m tools.zfsvm``; each subcommand calls one harness function."""

from __future__ import annotations

import argparse
import json
import sys
import time

from tools.zfsvm import config, image
from tools.zfsvm.errors import HarnessError


def cmd_build(args) -> int:
    start = time.monotonic()
    image.ensure_pydeps()  # first: a VM of the first release can boot while the next builds
    for release in args.release or config.releases_wanted():
        image.build_image(release, force=args.force)
    image.log(f"build: done in {time.monotonic() - start:.0f}s")
    return 0


def cmd_status(args) -> int:
    info: dict = {"cache": str(config.cache_root()), "pydeps": str(config.pydeps_dir())}
    for release in config.RELEASES:
        imgdir = config.image_dir(release)
        entry = {"key": config.image_key(release), "image": str(imgdir)}
        entry["built"] = image.is_built(imgdir)
        if entry["built"]:
            entry["image_info"] = json.loads((imgdir / "image.json").read_text())
        info[f"openzfs-{release}"] = entry
    print(json.dumps(info, indent=1))
    return 0


def cmd_run(args) -> int:
    from tools.zfsvm.vm import ZfsVM

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        raise HarnessError("run: give a command, e.g. `python -m tools.zfsvm run -- zpool version`")
    with ZfsVM.boot(release=args.release) as vm:
        result = vm.run(argv, timeout=args.timeout)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


def cmd_shell_cmd(args) -> int:
    from tools.zfsvm.vm import ZfsVM

    with ZfsVM.boot(release=args.release) as vm:
        result = vm.run(["sh", "-c", args.script], timeout=args.timeout)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


def cmd_fixtures(args) -> int:
    from tools.zfsvm.streams import generate

    generate(args.out)
    return 0


def cmd_corpus(args) -> int:
    from tools.zfsvm.corpus import generate

    generate(args.release, args.out)
    return 0


def _release_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--release",
        default=config.DEFAULT_RELEASE,
        choices=list(config.RELEASES),
        help="which OpenZFS image to boot",
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.zfsvm", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the VM image and guest Python deps (cached)")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    b.add_argument(
        "--release",
        action="append",
        choices=list(config.RELEASES),
        help="the OpenZFS release to build (repeatable; default: $ZVERIFY_VM_RELEASES or all)",
    )
    b.set_defaults(func=cmd_build)
    sub.add_parser("status", help="print cache paths and whether the image is built").set_defaults(
        func=cmd_status
    )
    r = sub.add_parser("run", help="boot the VM, run one command (argv), power off")
    r.add_argument("--timeout", type=float, default=600)
    _release_option(r)
    r.add_argument("argv", nargs=argparse.REMAINDER)
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("shell-cmd", help="boot the VM, run one sh -c script, power off")
    s.add_argument("--timeout", type=float, default=600)
    _release_option(s)
    s.add_argument("script")
    s.set_defaults(func=cmd_shell_cmd)
    f = sub.add_parser("fixtures", help="regenerate tests/data/streams in the VM")
    f.add_argument("--out", default=str(config.REPO_ROOT / "tests" / "data" / "streams"))
    f.set_defaults(func=cmd_fixtures)
    c = sub.add_parser("corpus", help="regenerate tests/data/corpus/<release>.tar.xz in the VM")
    _release_option(c)
    c.add_argument("--out", default=None, help="default: tests/data/corpus/<release>.tar.xz")
    c.set_defaults(func=cmd_corpus)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except HarnessError as exc:
        print(f"zfsvm: error: {exc}", file=sys.stderr)
        return 2
