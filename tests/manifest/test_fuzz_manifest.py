"""A brief, seeded fuzz of every manifest reader (native with its header's C filter, mtree,
hashdeep, checkfiles, BagIt): any input ends in entries inside the tree or one ManifestError,
never a crash.  The long fuzz is bench/fuzz_parsers.py; scripts/asan.sh runs this under ASan/UBSan
(the C filter compiles the patterns a manifest header carries)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tools.fuzzing.manifest import Case, manifest_inputs, run_manifest


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(manifest_inputs())
def test_manifest_readers_fuzz(scratch: Path, case: Case) -> None:
    run_manifest(case, scratch)
