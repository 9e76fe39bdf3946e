"""One parser for sizes and durations (zverify/cli/units.py): what people type, as `zfs`,
`du -h`, `df -H` and systemd print and take it; everything else a one-line usage error."""

import pytest

from tests.cli.console import zverify
from zverify.cli import units
from zverify.errors import UsageError

KIB, GIB, TIB = 1 << 10, 1 << 30, 1 << 40


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4096", 4096),
        ("1K", KIB),
        ("1k", KIB),
        ("200G", 200 * GIB),
        ("200GiB", 200 * GIB),
        ("1.5TiB", int(1.5 * TIB)),
        ("1.5T", int(1.5 * TIB)),
        ("200GB", 200 * 10**9),
        ("200gb", 200 * 10**9),
        ("2 TB", 2 * 10**12),
        ("512B", 512),
        ("1P", 1 << 50),
    ],
)
def test_sizes_in_the_units_people_type(text: str, expected: int) -> None:
    assert units.size(text, "--max-bytes") == expected


@pytest.mark.parametrize(
    "text", ["", "0", "0.0001", "10X", "-1G", "G", "1GG", "1e400", "nan", "inf", "1.5.2G", "1 iB"]
)
def test_a_size_that_means_nothing_is_refused_naming_the_option(text: str) -> None:
    with pytest.raises(UsageError, match="--max-bytes"):
        units.size(text, "--max-bytes")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90", 90.0),
        ("0.5", 0.5),
        ("30m", 1800.0),
        ("12h", 43200.0),
        ("1h30m", 5400.0),
        ("1.5d", 129600.0),
        ("2w", 1209600.0),
        ("1d 12h", 129600.0),
    ],
)
def test_durations_alone_or_summed(text: str, expected: float) -> None:
    assert units.duration(text, "--max-duration") == expected


@pytest.mark.parametrize("text", ["", "0", "-1", "soon", "1h30", "30x", "nan", "inf", "1e400", "h"])
def test_a_duration_that_means_nothing_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--max-duration"):
        units.duration(text, "--max-duration")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0.0), ("30", 30 * 86400.0), ("0.5", 43200.0), ("12h", 43200.0), ("35d", 35 * 86400.0)],
)
def test_an_age_is_days_or_a_duration(text: str, expected: float) -> None:
    assert units.age(text, "--max-age") == expected


@pytest.mark.parametrize("text", ["-1", "nan", "inf", "1e400", "-1d", "old"])
def test_an_age_that_means_nothing_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--max-age"):
        units.age(text, "--max-age")


def test_the_installed_command_takes_them_and_refuses_in_one_line(tmp_path) -> None:
    """Through the console script: accepted units run the scrub; a refusal is exit 2 with
    one line naming the option, and nothing written."""
    root = tmp_path / "cold"
    root.mkdir()
    done = zverify("cold", "scrub", "-q", "--max-bytes", "1.5GiB", "--max-age", "12h", str(root))
    assert done.returncode == 0 and done.stdout.startswith("PROVEN"), done.stderr
    refused = zverify("cold", "scrub", "--max-duration", "1h30", str(root))
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert "--max-duration '1h30'" in refused.stderr
