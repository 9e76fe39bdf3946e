"""The shipped templated units (systemd/): systemd's own `systemd-analyze verify` accepts
them for an instance, and the command line the service runs, with the example env file's
settings, scrubs a real archive through the installed console script and writes the
instance's Prometheus file.  Stand-in: systemd's expansion of %i, ${VAR} (one word) and $VAR
(split at whitespace) is done here by hand, as systemd.service(5) describes it: there is no
systemd running as PID 1 on this machine to start the unit for real."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.console import REPO, console_script, needs_installed_command

# scripts/package.sh tests the units the wheel installed (pyproject.toml's data files)
UNITS = (
    Path(sys.prefix) / "share" / "zverify" / "systemd"
    if os.environ.get("ZVERIFY_TEST_INSTALLED") == "1"
    else REPO / "systemd"
)
STREAMS = REPO / "tests" / "data" / "streams"


def test_systemd_accepts_the_units_for_an_instance(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("no systemd-analyze here (scripts/setup.sh installs systemd)")
    for name in ("zverify-scrub@.service", "zverify-scrub@.timer"):
        instance = tmp_path / name.replace("@.", "@cold.")
        shutil.copy(UNITS / name, instance)
        done = subprocess.run(
            [analyze, "verify", "--man=no", str(instance)], capture_output=True, text=True
        )
        assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def _settings(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs if not k.lstrip().startswith("#")}


def _exec_start(unit: str, instance: str, env: dict[str, str]) -> list[str]:
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    words = []
    for word in line.removeprefix("ExecStart=").replace("%i", instance).split():
        if re.fullmatch(r"\$[A-Z_]+", word):
            words += env.get(word[1:], "").split()
        else:
            words.append(re.sub(r"\$\{([A-Z_]+)\}", lambda m: env.get(m[1], ""), word))
    return words


@needs_installed_command
def test_the_service_scrubs_the_archive_its_env_file_names(tmp_path: Path) -> None:
    archive, textfiles = tmp_path / "cold", tmp_path / "textfile"
    archive.mkdir()
    textfiles.mkdir()
    shutil.copy(STREAMS / "full_fs_s1.zstream", archive / "zv%2Ffs@s1.zfsfull")
    env = _settings((UNITS / "scrub.env.example").read_text())
    assert {"ARCHIVE", "MAX_BYTES", "MAX_DURATION", "TEXTFILE_DIR", "SCRUB_OPTIONS"} <= set(env)
    env |= {"ARCHIVE": str(archive), "TEXTFILE_DIR": str(textfiles)}
    argv = _exec_start((UNITS / "zverify-scrub@.service").read_text(), "cold", env)
    assert argv[:2] == ["/usr/bin/env", "zverify"], argv
    done = subprocess.run(
        [console_script(), *argv[2:]], capture_output=True, text=True, cwd="/", check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PROVEN: 1 file(s)"), done.stdout  # the journal's one line
    prom = (textfiles / "zverify-cold-cold.prom").read_text()
    assert "zverify_cold_scrub_success" in prom and "zverify_build_info" in prom
