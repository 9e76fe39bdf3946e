"""zverify's filters against rsync itself: over seeded random trees and rule lists, the
paths zverify compares are exactly the paths `rsync -an` would transfer.

rsync is the oracle (real rsync, dry run, into an empty directory: it lists every entry its
rules keep).  Most cases run the C walker in process with the Filter the command line
builds (fast: hundreds of cases); others run the installed `zverify manifest` with the
same options, so the command-line order of --include/--exclude/--exclude-from and
--from0 are held to rsync too.
"""

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import needs_installed_command, zverify
from zverify import _zvcore
from zverify.filters import build
from zverify.pathnames import from_manifest as unescape

RSYNC = shutil.which("rsync")
pytestmark = pytest.mark.skipif(RSYNC is None, reason="rsync is not installed: no oracle")

# Names chosen to meet the patterns below: wildcard characters, backslashes, classes.
NAMES = [
    "a", "b", "ab", "ba", "a.tmp", "b.log", "home", "sub", "deep", "x y",
    "back\\slash", "back\\\\slash", "[a]", "a*", "q?", ".hid", "Zz", "9",
]  # fmt: skip
DIR_NAMES = ["a", "b", "home", "sub", "deep", "ab", "[a]", ".hid"]
COMPONENTS = [
    "a", "b", "ab", "home", "sub", "deep", "*.tmp", "*", "?", "a*", "*b", "[ab]", "[!a]*",
    "[[:alpha:]]b", "[[:digit:]]", "**", "back\\slash", "back\\\\slash", "back\\\\sla?h",
    "\\*", "a\\*", "[a]", "\\[a\\]", "x y", "x?y", "*.log", ".h*", "[]a]", "[a-c]*", "**b",
]  # fmt: skip
ENDINGS = ["", "", "", "/", "/***", "/**", "/*"]
TREES, RULE_LISTS_PER_TREE = 30, 14


def make_tree(root: Path, rng: random.Random) -> None:
    """Directories up to 3 deep holding files, a symlink, an empty directory."""
    root.mkdir()
    dirs = [root]
    for _ in range(rng.randint(4, 9)):
        parent = rng.choice(dirs)
        if len(parent.relative_to(root).parts) < 3:
            new = parent / rng.choice(DIR_NAMES)
            if not new.exists():
                new.mkdir()
                dirs.append(new)
    for _ in range(rng.randint(8, 20)):
        path = rng.choice(dirs) / rng.choice(NAMES)
        if not path.exists():
            path.write_bytes(b"x")
    if not (root / "link").exists():
        (root / "link").symlink_to("a")


def random_rule(rng: random.Random) -> str:
    parts = [rng.choice(COMPONENTS) for _ in range(rng.choice([1, 1, 1, 1, 1, 2, 2, 3]))]
    pattern = "/".join(parts)
    if rng.random() < 0.25:
        pattern = "/" + pattern
    return pattern + rng.choice(ENDINGS)


def random_rules(rng: random.Random) -> list[tuple[str, str]]:
    """(option, pattern) pairs; an --include before an --exclude '*' is rsync's idiom, and
    one pattern given both ways round shows that the first match decides."""
    rules = [
        (rng.choice(["--include", "--exclude"]), random_rule(rng)) for _ in range(rng.randint(1, 5))
    ]
    if rng.random() < 0.3:
        first, pattern = rng.choice(rules)
        rules.append(("--exclude" if first == "--include" else "--include", pattern))
    if rng.random() < 0.4:
        rules.append(("--exclude", rng.choice(["*", "*/", "/*"])))
    if rng.random() < 0.3:
        rng.shuffle(rules)
    return rules


def rsync_keeps(tree: Path, options: list[str], empty: Path) -> set[str]:
    assert RSYNC is not None
    done = subprocess.run(
        [RSYNC, "-an", "--out-format=%n", *options, f"{tree}/", f"{empty}/"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, (options, done.stderr)
    return {line.removesuffix("/") for line in done.stdout.splitlines()} - {"."}


def walker_keeps(tree: Path, rules: list[tuple[str, str]]) -> set[str]:
    compiled = build(rules).compiled()
    walker = _zvcore.Walker(os.fsencode(tree), filter=compiled, threads=1)
    return {os.fsdecode(r.path) for batch in walker for r in batch} - {""}


def manifest_keeps(tree: Path, options: list[str]) -> set[str]:
    done = zverify("manifest", "-q", *options, str(tree), "-o", "-")
    assert done.returncode == 0, (options, done.stderr)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    entries = [r for r in records if "p" in r]  # not the header nor the trailer
    assert len(entries) == len(records) - 2
    return {os.fsdecode(unescape(e["p"])) for e in entries} - {""}


def as_rules_file(rules: list[tuple[str, str]], path: Path, from0: bool) -> list[str]:
    """The same rules as one --exclude-from file ('+ '/'- ' prefixes, a comment)."""
    lines = ["# from the differential test"]
    lines += [("+ " if option == "--include" else "- ") + p for option, p in rules]
    path.write_bytes(("\0" if from0 else "\n").join(lines).encode())
    return ["--from0", f"--exclude-from={path}"] if from0 else [f"--exclude-from={path}"]


def test_zverify_keeps_what_rsync_keeps(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = disagreements = narrowed = 0
    failures = []
    for seed in range(TREES):
        rng = random.Random(seed)
        tree = tmp_path / f"t{seed}"
        make_tree(tree, rng)
        for n in range(RULE_LISTS_PER_TREE):
            rules = random_rules(rng)
            options = [f"{option}={pattern}" for option, pattern in rules]
            expected = rsync_keeps(tree, options, empty)
            got = walker_keeps(tree, rules)
            cases += 1
            narrowed += 0 < len(expected) < len(walker_keeps(tree, []))
            if got != expected:
                disagreements += 1
                failures.append((seed, n, rules, sorted(got ^ expected)))
    assert not failures, f"{disagreements} of {cases} cases differ from rsync: {failures[:5]}"
    assert cases == TREES * RULE_LISTS_PER_TREE
    assert narrowed > cases // 4, "the rules seldom select: the test would prove little"


@needs_installed_command
@pytest.mark.parametrize("via", ["options", "exclude-from", "exclude-from0"])
def test_the_command_keeps_what_rsync_keeps(tmp_path: Path, via: str) -> None:
    """Through `zverify manifest`: the order of the options is rsync's order."""
    empty = tmp_path / "empty"
    empty.mkdir()
    failures = []
    for seed in range(0, TREES, 3):
        rng = random.Random(1000 + seed)
        tree = tmp_path / f"t{seed}"
        make_tree(tree, rng)
        rules = random_rules(rng)
        if via == "options":
            options = [f"{option}={pattern}" for option, pattern in rules]
        else:
            options = as_rules_file(rules, tmp_path / f"r{seed}", via.endswith("0"))
        expected = rsync_keeps(tree, options, empty)
        got = manifest_keeps(tree, options)
        if got != expected:
            failures.append((seed, rules, sorted(got ^ expected)))
    assert not failures, failures
