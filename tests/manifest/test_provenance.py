"""A native manifest says which zverify wrote it, where and when, with the same "producer"
object as every JSON document: started in the header, finished in the trailer (as
compare --jsonl's header and summary line), and a manifest that has it still compares."""

import json
from pathlib import Path

from tests.cli.console import needs_installed_command, zverify
from tests.cli.producer import check_producer
from tests.treebuilder import write


@needs_installed_command
def test_header_and_trailer_carry_the_producer(tmp_path: Path) -> None:
    tree, manifest = tmp_path / "tree", tmp_path / "m.zvm"
    write(tree / "a", b"one")
    made = zverify("manifest", "-q", "-o", str(manifest), str(tree))
    assert made.returncode == 0, made.stderr
    lines = manifest.read_text().splitlines()
    header, trailer = json.loads(lines[0]), json.loads(lines[-1])
    check_producer(header["producer"], finished=False)  # the end is not known yet
    check_producer(trailer["producer"])
    assert header["producer"]["started"] == trailer["producer"]["started"]
    again = zverify("compare", "--no-progress", "-q", str(manifest), str(tree))
    assert again.returncode == 0, again.stdout + again.stderr
