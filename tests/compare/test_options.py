"""CompareOptions refuses, when it is made, what the walk would otherwise misread: a library
caller's threads=0 used to become "all cores" without a word."""

from pathlib import Path

import pytest

from zverify.errors import UsageError
from zverify.exitcodes import TROUBLE
from zverify.hashing import Algorithm
from zverify.trees.compare import compare_trees
from zverify.trees.options import CompareOptions
from zverify.walk import MAX_THREADS


@pytest.mark.parametrize("threads", [0, -1, MAX_THREADS + 1])
def test_threads_out_of_range_are_refused(threads: int) -> None:
    with pytest.raises(UsageError, match="--threads must be between 1 and") as err:
        CompareOptions(threads=threads)
    assert err.value.exit_code == TROUBLE


def test_an_algorithm_by_name_is_refused() -> None:
    with pytest.raises(UsageError, match="'sha256' is not an algorithm"):
        CompareOptions(algorithm="sha256")  # type: ignore[arg-type]


def test_valid_options_compare(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    for root, data in ((src, b"a"), (dst, b"b")):
        root.mkdir()
        (root / "f").write_bytes(data)
    options = CompareOptions(algorithm=Algorithm.SHA256, threads=MAX_THREADS)
    result = compare_trees(str(src), str(dst), options)
    assert result.algorithm is Algorithm.SHA256
    assert (b"f", "content") in {(d.path, d.kind.value) for d in result.differences}
    assert result.exit_code == 1
