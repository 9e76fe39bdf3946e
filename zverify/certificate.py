"""Certificates: one JSON document of everything a cutover check or a restore drill proved,
that anyone can re-check later for integrity (and, when signed, for its signer).

A certificate is the command's own JSON document ("body", as `--json` prints it) wrapped
with what it certifies ("kind", "exit_code", "verdict"), who issued it ("producer") and a
digest: SHA-256 of the canonical form of every other key, json.dumps(sort_keys=True,
separators=(",", ":"), ensure_ascii=True), so that any tool can recompute it.  The digest
shows an edit, not a forger (who can recompute it): `ssh-keygen -Y sign -n
zverify-certificate` over the file is the proof of who issued it.

A certificate is written of every run, a failed one too: its verdict is the command's exit
code, never better.  `verify()` therefore passes (exit 0) only an intact certificate of a
command that passed.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

from zverify import boundedjson, exitcodes, provenance
from zverify.errors import ZverifyError

SCHEMA = "zverify.certificate/1"
NAMESPACE = "zverify-certificate"  # ssh-keygen -Y's namespace: a signature of nothing else
MAX_BYTES = 64 << 20
VERDICTS = {
    "cutover": {0: "READY", 1: "NOT READY", 2: "NOT VERIFIED"},
    "cold-drill": {0: "RESTORES", 1: "DOES NOT RESTORE", 2: "NOT DRILLED"},
}
KEYS = frozenset({"schema", "kind", "producer", "exit_code", "verdict", "body", "digest"})


class CertificateError(ZverifyError):
    """Not a certificate, or it cannot be read (exit 2)."""


def canonical(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _digest(doc: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({k: v for k, v in doc.items() if k != "digest"})).hexdigest()


def issue(kind: str, body: dict[str, Any], exit_code: int) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": kind,
        provenance.KEY: provenance.producer(),
        "exit_code": exit_code,
        "verdict": VERDICTS[kind].get(exit_code, VERDICTS[kind][2]),
        "body": body,
    }
    doc["digest"] = {"algorithm": "sha256", "value": _digest(doc)}
    return doc


def write(path: str, kind: str, body: dict[str, Any], exit_code: int) -> None:
    """The certificate at path, replaced atomically (a temporary file beside it, fsynced,
    renamed: never half written, never written through a symlink).  Raises ZverifyError."""
    text = json.dumps(issue(kind, body, exit_code), indent=2, ensure_ascii=True) + "\n"
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(prefix=".zverify-cert-", dir=directory)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as err:
        raise ZverifyError(f"certificate {path}: not written: {err.strerror}") from None


@dataclass
class Verified:
    path: str
    doc: dict[str, Any]
    intact: bool
    signer: str | None = None  # the identity whose signature verified
    problem: str | None = None  # why it is not intact, or its signature not good

    @property
    def exit_code(self) -> int:
        """0 only for an intact (and, when asked, well signed) certificate of a pass."""
        if self.problem is not None or not self.intact:
            return exitcodes.DIFFERENT
        return exitcodes.IDENTICAL if self.doc["exit_code"] == 0 else exitcodes.DIFFERENT


def verify(path: str, signers: str | None = None, identity: str | None = None) -> Verified:
    """Re-check the certificate at path: its form, its digest and (signers: an
    allowed_signers file) the signature in path.sig.  Raises CertificateError when it
    cannot be read or is not a certificate."""
    data = _read(path)
    doc = _parsed(path, data)
    result = Verified(path, doc, doc["digest"]["value"] == _digest(doc))
    if not result.intact:
        result.problem = "its digest does not match its contents: altered since it was issued"
    elif doc["body"].get("exit_code") != doc["exit_code"]:
        result.problem = "its exit code is not its body's: altered"
    elif signers is not None:
        result.problem = _signature(path, data, signers, identity or "")
        result.signer = identity if result.problem is None else None
    return result


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise CertificateError(f"certificate {path}: {err.strerror}") from None
    if len(data) > MAX_BYTES:
        raise CertificateError(f"certificate {path}: larger than {MAX_BYTES} bytes")
    return data


def _parsed(path: str, data: bytes) -> dict[str, Any]:
    try:
        doc = boundedjson.loads(data)
    except ValueError as err:
        raise CertificateError(f"certificate {path}: not JSON ({err})") from None
    if not isinstance(doc, dict) or set(doc) != KEYS or doc["schema"] != SCHEMA:
        raise CertificateError(f"certificate {path}: not a {SCHEMA} document")
    digest, body, code = doc["digest"], doc["body"], doc["exit_code"]
    well_formed = (
        isinstance(digest, dict)
        and digest.get("algorithm") == "sha256"
        and isinstance(digest.get("value"), str)
        and isinstance(body, dict)
        and doc["kind"] in VERDICTS
        and isinstance(code, int)
        and not isinstance(code, bool)
    )
    if not well_formed:
        raise CertificateError(f"certificate {path}: a field holds what no certificate holds")
    return doc


def _signature(path: str, data: bytes, signers: str, identity: str) -> str | None:
    """None when path.sig is a good signature of data by identity; else why not."""
    sig = path + ".sig"
    if not os.path.isfile(signers):
        raise CertificateError(f"--signers {signers}: no such file")
    if not os.path.exists(sig):
        raise CertificateError(f"certificate {path}: no signature {sig} to verify")
    keygen = shutil.which("ssh-keygen")
    if keygen is None:
        raise CertificateError("ssh-keygen is not installed: the signature cannot be verified")
    argv = [keygen, "-Y", "verify", "-f", signers, "-I", identity, "-n", NAMESPACE, "-s", sig]
    done = subprocess.run(argv, input=data, capture_output=True, check=False)
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
    return f"its signature {sig} does not verify for {identity!r}: {said[-1] if said else ''}"
