"""adversarial-4.md C1 against real OpenZFS: every one-field mutation of a real full
(tests/sendstream/mutations.py) is received by `zfs receive -u`; whatever real receive
refuses, `zverify stream verify` refuses too (zverify is never more lenient), and the control
is received.  The mutations OpenZFS receives and then panics or spins on are not received
here (they take the VM down): tests/sendstream/test_record_rules.py holds zverify to refuse
them on the host."""

from __future__ import annotations

import pytest

from tests.sendstream import mutations, streamgen
from zverify.sendstream.validate import verify_stream

pytestmark = pytest.mark.zfs

REFUSED = {m.name for m in mutations.refused()}
CASES = [
    m for m in mutations.refused() + mutations.accepted() if m.name not in mutations.PANIC_OR_SPIN
]


def receive(host, target: str, data: bytes):
    return host.run(["zfs", "receive", "-u", target], input=data, text=False, timeout=300)


def test_what_real_receive_refuses_zverify_refuses(zfs_host, zfs_pool, tmp_path) -> None:
    control = streamgen.resign(mutations.FIXTURE.read_bytes())
    done = receive(zfs_host, f"{zfs_pool.name}/control", control)
    assert done.returncode == 0, done.stderr[-500:]
    lenient = []
    for i, m in enumerate(CASES):
        path = tmp_path / f"{m.name}.zstream"
        path.write_bytes(m.data)
        ours = verify_stream(path)
        theirs = receive(zfs_host, f"{zfs_pool.name}/m{i}", m.data)
        if theirs.returncode != 0 and ours.valid:
            lenient.append((m.name, theirs.stderr[-200:]))
        if m.name in REFUSED:
            assert not ours.valid, m.name  # as on the host, next to what receive did
    assert not lenient, lenient
