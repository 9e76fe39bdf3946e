"""`zverify schema [NAME]` through the installed console script: the schemas that were
installed with the package, byte for byte; an unknown NAME is one line and exit 2."""

import json
from pathlib import Path

from tests.cli.console import needs_installed_command, zverify
from zverify import schemas

# The schema files of the zverify the tests import: the checkout's, or under scripts/package.sh
# the installed wheel's (the tests then run from a directory without the source).
PACKAGED = Path(schemas.__file__).parent

pytestmark = needs_installed_command


def test_without_a_name_it_lists_every_installed_schema() -> None:
    done = zverify("schema")
    assert done.returncode == 0 and done.stderr == ""
    files = sorted(p.name.removesuffix(".schema.json") for p in PACKAGED.glob("*.schema.json"))
    assert done.stdout.splitlines() == files and len(files) >= 15


def test_a_name_prints_that_schema_as_installed() -> None:
    for name in ("compare", "compare-lines", "cold-scrub"):
        done = zverify("schema", name)
        assert done.returncode == 0 and done.stderr == ""
        assert done.stdout == (PACKAGED / f"{name}.schema.json").read_text()
        assert json.loads(done.stdout)["$id"].endswith(f"/{name}.schema.json")


def test_an_unknown_name_is_one_line_naming_the_valid_ones_and_exit_2() -> None:
    for wrong in ("nope", "compare.schema.json", "../compare"):
        done = zverify("schema", wrong)
        assert done.returncode == 2 and done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert repr(wrong) in line and "compare-lines" in line and "cold-scrub" in line
