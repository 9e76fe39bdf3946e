"""The findings of the hostile review of the cold commands (issue 29) that concern repair and
parity, each through the installed console script: a NAME.damaged is removed only with proof
that NAME replaces it, dry runs write nothing, and what could not be read is exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import console_script
from tests.cold.standin import STREAMS, ZfsStandIn, plain_env, run, valid
from tests.cold.test_parity import FIXTURE, FULL, INC, archive, digest, listing

INC_EMPTY = "incr_empty_fs_s2_s3.zstream"


def repair(*args: str) -> tuple[int, str, str]:
    done = run("cold", "repair", "--no-progress", *args, env=plain_env())
    return done.returncode, done.stdout, done.stderr


# -- 1. --remove-damaged removes NAME.damaged only when NAME is proven to replace it ---------


def test_the_only_full_kept_as_damaged_is_never_removed_for_another_stream(tmp_path: Path) -> None:
    # the review's repro: another stream under NAME, the only full of @s1 as NAME.damaged
    root = tmp_path / "a"
    root.mkdir()
    shutil.copy(STREAMS / INC_EMPTY, root / FULL)
    shutil.copy(STREAMS / FIXTURE[FULL], root / f"{FULL}.damaged")
    (root / f"{FULL}.json").write_text('{"to_guid":"4034521428903744376","kind":"full"}\n')
    code, out, err = repair("-n", "--remove-damaged", str(root))
    assert code == 1, out + err
    assert f"kept      {FULL}.damaged: {FULL} is not proven" in out
    assert "would remove" not in out
    code, out, err = repair("--remove-damaged", "--json", str(root))
    doc = json.loads(out)
    valid("cold-repair.schema.json", doc)
    assert code == 1 and doc["exit_code"] == 1 and doc["removed"] == [], out + err
    assert [(d["file"], d["remove"]) for d in doc["damaged_originals"]] == [
        (f"{FULL}.damaged", False)
    ]
    assert (root / f"{FULL}.damaged").read_bytes() == (STREAMS / FIXTURE[FULL]).read_bytes()


def test_a_damaged_original_of_another_stream_is_kept_beside_a_flawless_one(
    tmp_path: Path,
) -> None:
    # NAME intact, with intact parity and no problem at all: NAME.damaged is still not it
    root = archive(tmp_path, 10)
    shutil.copy(STREAMS / FIXTURE[INC], root / f"{FULL}.damaged")
    code, out, err = repair("--remove-damaged", str(root))
    assert code == 1, out + err
    assert f"kept      {FULL}.damaged: its first record is" in out and "another stream" in out
    assert f"{FULL}.damaged" in listing(root)


def test_a_proven_replacement_lets_its_damaged_original_go_and_dry_run_says_so(
    tmp_path: Path,
) -> None:
    root = archive(tmp_path, 10)
    damaged = bytearray((STREAMS / FIXTURE[FULL]).read_bytes())
    damaged[200_000] ^= 0x10
    (root / f"{FULL}.damaged").write_bytes(bytes(damaged))
    code, out, err = repair("-n", "--remove-damaged", str(root))
    assert code == 0, out + err
    assert f"would remove {FULL}.damaged: its stream is intact and proven" in out
    assert f"{FULL}.damaged" in listing(root)  # -n removes nothing
    code, out, err = repair("--remove-damaged", str(root))
    assert code == 0 and f"removed   {FULL}.damaged" in out, out + err
    assert f"{FULL}.damaged" not in listing(root)


# -- 3. parity and repair: what could not be read is exit 2, and said ------------------------

INC2 = "zv%2Ffs@s2-@s3.zfsinc"


def unprivileged(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed zverify as a user mode 0 stops: root without the capabilities that
    read past it (setpriv), anyone else as they are."""
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("root without setpriv: mode 0 would not stop it")
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    command = [*(drop if os.geteuid() == 0 else []), console_script(), "cold", *args]
    return subprocess.run(command, capture_output=True, text=True, env=plain_env(), timeout=120)


def chain(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, fixture in (*FIXTURE.items(), (INC2, INC_EMPTY)):
        shutil.copy(STREAMS / fixture, root / name)
    return root


@pytest.mark.parametrize("command", ["parity", "repair"])
def test_a_place_that_cannot_be_listed_leaves_parity_and_repair_unverified(
    tmp_path: Path, command: str
) -> None:
    chain(tmp_path / "a" / "ok")
    shut = tmp_path / "a" / "shut"
    shut.mkdir()
    shutil.copy(STREAMS / FIXTURE[FULL], shut / FULL)
    shut.chmod(0)
    try:
        done = unprivileged(command, "--no-progress", "-r", str(tmp_path / "a"))
    finally:
        shut.chmod(0o755)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not read  shut: a directory that cannot be listed" in done.stdout
    assert done.stdout.splitlines()[-1].endswith("1 file(s) not read: not verified")


@pytest.mark.parametrize("command", ["parity", "repair"])
def test_a_stream_that_cannot_be_read_leaves_parity_and_repair_unverified(
    tmp_path: Path, command: str
) -> None:
    root = chain(tmp_path / "a")
    (root / INC2).chmod(0)
    done = unprivileged(command, "--no-progress", "--json", str(root))
    doc = json.loads(done.stdout)
    valid(f"cold-{command}.schema.json", doc)
    assert done.returncode == 2 and doc["exit_code"] == 2, done.stdout + done.stderr
    assert [(n["file"], n["message"]) for n in doc["not_read"]] == [
        (INC2, "cannot open: Permission denied")
    ]
    text = unprivileged(command, "--no-progress", "-n", str(root))
    assert text.returncode == 2, text.stdout + text.stderr
    assert f"not read  {INC2}: cannot open: Permission denied" in text.stdout


# -- 4. repair gives every stream that is not intact an outcome -----------------------------


def test_a_damaged_stream_without_parity_is_never_nothing_to_repair(tmp_path: Path) -> None:
    root = archive(tmp_path, 0)
    data = bytearray((root / FULL).read_bytes())
    data[1000] ^= 0x10
    (root / FULL).write_bytes(bytes(data))
    for dry in ([], ["-n"]):
        code, out, err = repair(*dry, str(root))
        assert code == 1, out + err
        assert f"no-parity {FULL}: has no parity: it cannot be repaired" in out
        assert "nothing to repair" not in out
    assert (root / FULL).read_bytes() == bytes(data)  # nothing replaced


# -- 2. restore -n writes nothing: no repair, no script --------------------------------------


def test_restore_dry_run_with_repair_says_what_it_would_repair_and_writes_nothing(
    tmp_path: Path,
) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")  # stands in for zfs: none runs here
    root = archive(tmp_path, 10)
    data = bytearray((root / FULL).read_bytes())
    data[1000] ^= 0x10
    (root / FULL).write_bytes(bytes(data))
    before = {name: digest(root / name) for name in listing(root)}
    done = run(
        "cold", "restore", "-n", "--repair", "--no-progress", str(root), "zv/r", env=zfs.env()
    )
    assert done.returncode == 1, done.stdout + done.stderr  # planned as the archive is
    assert f"repairable {FULL}: would be repaired" in done.stderr
    assert {name: digest(root / name) for name in listing(root)} == before


def test_restore_dry_run_with_a_script_is_a_usage_error(tmp_path: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    root = archive(tmp_path, 0)
    script = tmp_path / "receive.sh"
    args = ("cold", "restore", "-n", "--script", str(script), str(root), "zv/r")
    done = run(*args, env=zfs.env())
    assert done.returncode == 2 and not script.exists(), done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "--dry-run writes nothing" in done.stderr


# -- 5. repair -n --yes contradicts itself, as in prune and clean ----------------------------


def test_repair_refuses_dry_run_with_yes(tmp_path: Path) -> None:
    root = archive(tmp_path, 0)
    code, out, err = repair("-n", "--yes", str(root))
    assert code == 2 and "contradict" in err and err.count("\n") == 1, out + err
