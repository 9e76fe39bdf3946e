"""adversarial-4.md C1 on the host: a "new full" whose checksums are valid but whose records
`zfs receive` refuses (one WRITE moved before its OBJECT, as a buggy sender writes it) is not
restorable, and `cold prune --yes` keeps the old chain, the only one that really restores.
The real receive's refusal of the same bytes is in the VM (tests/cold/test_zfs_*.py)."""

import json
import shutil
import struct
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.sendstream import streamgen as sg

STREAMS = Path(__file__).parents[1] / "data" / "streams"
OLD_FULL = "zv%2Ffs@s1.zfsfull"
OLD_INC = "zv%2Ffs@s1-@s2.zfsinc"
NEW_FULL = "zv%2Ffs@s2.zfsfull"
G2 = 8984490087068245054  # zv/fs@s2's GUID


def with_a_write_moved(full: bytes) -> bytes:
    """full with one WRITE moved before its OBJECT (as a buggy sender writes it), re-signed."""
    recs = sg.walk(full)
    obj = lambda r: struct.unpack_from("<Q", full, r.offset + 8)[0]  # noqa: E731
    parts = [full[r.offset : r.end] for r in recs]
    i = next(k for k, r in enumerate(recs) if r.type == sg.WRITE and obj(r) >= 3)
    j = next(k for k in range(i) if recs[k].type == sg.OBJECT and obj(recs[k]) == obj(recs[i]))
    parts.insert(j, parts.pop(i))
    return sg.resign(b"".join(parts))


def archive(tmp_path: Path, move_write: bool) -> Path:
    """The old chain (full @s1, incremental to @s2) and a new full of @s2 holding what the
    chain restores: consolidated from it, then kept as a plain stream file (no sidecar), as
    if `zfs send` had written it; move_write: the same bytes out of receive's order."""
    root = tmp_path / "c1"
    root.mkdir()
    shutil.copy(STREAMS / "full_fs_s1.zstream", root / OLD_FULL)
    shutil.copy(STREAMS / "incr_fs_s1_s2.zstream", root / OLD_INC)
    made = zverify("cold", "consolidate", str(root))
    assert made.returncode == 0, made.stdout + made.stderr
    (root / (NEW_FULL + ".json")).unlink()
    assert struct.unpack_from("<Q", (root / NEW_FULL).read_bytes(), 40)[0] == G2  # drr_toguid
    if move_write:
        (root / NEW_FULL).write_bytes(with_a_write_moved((root / NEW_FULL).read_bytes()))
    return root


def test_a_full_receive_refuses_is_not_valid_and_prune_keeps_the_old_chain(
    tmp_path: Path,
) -> None:
    root = archive(tmp_path, move_write=True)
    verify = zverify("stream", "verify", "--json", str(root / NEW_FULL))
    problem = json.loads(verify.stdout)["files"][0]["problems"][0]
    assert verify.returncode == 1 and problem["code"] == "receive-rule", problem
    assert "no earlier OBJECT record" in problem["message"] and problem["offset"] > 0
    check = zverify("cold", "check", "-q", str(root))
    assert check.returncode == 1, check.stdout
    prune = zverify("cold", "prune", "--yes", str(root))
    assert prune.returncode != 0 or "0 file(s) deleted" in prune.stdout, prune.stdout
    assert (root / OLD_FULL).exists() and (root / OLD_INC).exists(), prune.stdout


def test_the_control_new_full_still_supersedes_the_old_chain(tmp_path: Path) -> None:
    # the same bytes in receive's order: restorable, and prune may delete the old chain
    root = archive(tmp_path, move_write=False)
    assert zverify("stream", "verify", str(root / NEW_FULL)).returncode == 0
    prune = zverify("cold", "prune", "--yes", str(root))
    assert prune.returncode == 0 and not (root / OLD_FULL).exists(), prune.stdout


def test_check_says_how_each_restorable_claim_was_proven(tmp_path: Path) -> None:
    # "restorable" alone was read as "received": the verdict names the proof, never a receive
    root = archive(tmp_path, move_write=False)
    text = zverify("cold", "check", str(root)).stdout
    assert "2 restorable snapshots (stream and record checks)" in text, text
    doc = json.loads(zverify("cold", "check", "--json", str(root)).stdout)
    claims = [r for d in doc["datasets"] for r in d["restorable"]]
    assert claims and {d["proven_by"] for d in doc["datasets"]} == {"stream and record checks"}


def test_restore_names_the_receives_own_error_not_a_broken_pipe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # adversarial-4 L4: a receive that refuses the stream stops reading; the relay then
    # fails with EPIPE, and "Broken pipe" hid the receive's reason
    from tests.cold import fakezfs
    from zverify.cold.restore import receive_file
    from zverify.errors import ZfsError

    fakezfs.install(
        monkeypatch,
        tmp_path,
        "head -c 1000 >/dev/null\necho 'cannot receive new filesystem stream: invalid backup "
        "stream' >&2\nexit 1\n",
    )
    path = tmp_path / "big.zstream"
    path.write_bytes((STREAMS / "full_fs_s1.zstream").read_bytes())
    with pytest.raises(ZfsError) as err:
        receive_file(str(path), "tank/r")
    assert "invalid backup stream" in str(err.value) and "Broken pipe" not in str(err.value)


def test_a_stream_of_a_newer_openzfs_is_unreceivable_not_damaged(tmp_path: Path) -> None:
    """A LONGNAME full (OpenZFS 2.3) has intact bytes: `cold check` names it unreceivable with
    the feature and the release, never `damaged` (which sends `cold repair` looking for damage
    that is not there) and never restorable."""
    from tests.sendstream.mutations import refused

    longname = next(m for m in refused() if m.name == "feature-longname")
    root = tmp_path / "newer"
    root.mkdir()
    (root / "tank%2Fb@0.zfsfull").write_bytes(longname.data)
    check = zverify("cold", "check", "--json", str(root))
    (found,) = json.loads(check.stdout)["files"]
    problems = found["problems"]
    assert check.returncode == 1 and not found["valid"], check.stdout + check.stderr
    assert [p["kind"] for p in problems] == ["unreceivable"], problems
    assert "OpenZFS 2.3" in problems[0]["message"], problems
