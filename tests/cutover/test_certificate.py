"""Certificates (zverify.certificate) of real runs through the installed console script:
a cutover READY and NOT READY (the stand-in `zfs` of tests/cutover), and a drill that could
not run (no ZFS here; the drills themselves: tests/cold/test_drill_zfs.py).  Each is
re-checked by `zverify certificate verify`: intact, altered in one byte of its body, cut
short, and signed with a real ssh-keygen ed25519 key, good and bad."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.console import zverify
from tests.cutover.test_cli import STATE, standin  # noqa: F401 (a fixture)

DATA = Path(__file__).resolve().parents[1] / "data" / "streams"


def certify_cutover(tmp_path: Path, state: dict, standin) -> tuple[int, Path]:  # noqa: F811
    standin(state)
    cert = tmp_path / "cutover.cert.json"
    done = zverify("cutover", "--certificate", str(cert), "p/a", "q/a")
    return done.returncode, cert


def verify(cert: Path, *extra: str) -> subprocess.CompletedProcess:
    return zverify("certificate", "verify", *extra, str(cert))


def test_a_ready_certificate_verifies_and_any_edit_is_found(tmp_path, standin):  # noqa: F811
    code, cert = certify_cutover(tmp_path, STATE, standin)
    assert code == 0
    doc = json.loads(cert.read_text())
    assert (doc["kind"], doc["verdict"], doc["exit_code"]) == ("cutover", "READY", 0)
    assert doc["body"]["exit_code"] == 0 and doc["body"]["datasets"], doc["body"]
    done = verify(cert)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("READY: certified")
    edited = cert.read_text().replace('"READY"', '"READY "', 1)
    (tmp_path / "edited.json").write_text(edited)
    done = verify(tmp_path / "edited.json")
    assert done.returncode == 1 and "ALTERED" in done.stdout, done.stdout
    (tmp_path / "cut.json").write_bytes(cert.read_bytes()[:200])
    done = verify(tmp_path / "cut.json")
    assert done.returncode == 2 and "not JSON" in done.stderr, done.stderr


def test_a_not_ready_certificate_is_intact_and_never_exit_0(tmp_path, standin):  # noqa: F811
    state = {**STATE, "written": {"p/a@s1": 4096, "q/a@s1": 0}, "diff": {"p/a@s1": ["M\t/p/a/f"]}}
    code, cert = certify_cutover(tmp_path, state, standin)
    assert code == 1 and json.loads(cert.read_text())["verdict"] == "NOT READY"
    done = verify(cert)
    assert done.returncode == 1 and "ALTERED" not in done.stdout, done.stdout
    assert done.stdout.splitlines()[-1].startswith("NOT READY: certified (exit 1")


def test_a_drill_that_could_not_run_is_certified_as_such(tmp_path):
    root = tmp_path / "cold"
    root.mkdir()
    shutil.copy(DATA / "full_fs_s1.zstream", root / "zv%2Ffs@s1.zfsfull")
    cert = tmp_path / "drill.cert.json"
    done = zverify(
        "cold", "drill", "--scratch-file", "64M", "--scratch-dir", str(tmp_path),
        "--certificate", str(cert), str(root),
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    doc = json.loads(cert.read_text())
    assert (doc["kind"], doc["verdict"], doc["body"]["result"]) == (
        "cold-drill",
        "NOT DRILLED",
        "problem",
    )
    assert verify(cert).returncode == 1  # intact, and certifying no pass


@pytest.fixture
def signer(tmp_path):
    if shutil.which("ssh-keygen") is None:
        pytest.skip("no ssh-keygen here (Debian: openssh-client): signatures not tested")
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"ops@example.org {(tmp_path / 'key.pub').read_text()}")
    return key, allowed


def test_a_signed_certificate_verifies_for_its_signer_only(tmp_path, standin, signer):  # noqa: F811
    key, allowed = signer
    _, cert = certify_cutover(tmp_path, STATE, standin)
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", "zverify-certificate", str(cert)],
        check=True,
        capture_output=True,
    )
    good = verify(cert, "--signers", str(allowed), "--identity", "ops@example.org")
    assert good.returncode == 0 and "signed by ops@example.org" in good.stdout, good.stdout
    wrong = verify(cert, "--signers", str(allowed), "--identity", "mallory@example.org")
    assert wrong.returncode == 1 and "does not verify" in wrong.stdout, wrong.stdout
    sig = cert.with_name(cert.name + ".sig")
    moved = tmp_path / "again.json"
    moved.write_text(cert.read_text().replace("  ", "   ", 1))  # same content, other bytes
    shutil.copy(sig, moved.with_name(moved.name + ".sig"))
    other = verify(moved, "--signers", str(allowed), "--identity", "ops@example.org")
    assert other.returncode == 1 and "does not verify" in other.stdout, other.stdout
    sig.unlink()
    missing = verify(cert, "--signers", str(allowed), "--identity", "ops@example.org")
    assert missing.returncode == 2 and "no signature" in missing.stderr
