#!/usr/bin/env bash
# The path a user's install takes, on a clean venv: build the sdist, build a wheel from that
# sdist alone (so a file MANIFEST.in forgot breaks here), install the wheel into a fresh venv
# and run the CLI tests against the installed package, from a directory holding the tests but
# not the source (so nothing is imported from the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
pip=("$work/venv/bin/pip" -q --disable-pip-version-check)
"${pip[@]}" install 'build>=1.2,<2'
"$work/venv/bin/python" -m build --sdist --outdir "$work/dist" . >/dev/null
sdist=$(ls "$work"/dist/zverify-*.tar.gz)
tar -tzf "$sdist" > "$work/contents"  # (grep -q on a pipe would SIGPIPE tar under pipefail)
for needed in native/include/zvcore.h native/src/zv_traverse.h LICENSE docs/zverify.1 zverify/schemas/compare.schema.json; do
    grep -q "/$needed\$" "$work/contents" || { echo "package: $needed missing from the sdist" >&2; exit 1; }
done
"${pip[@]}" wheel --no-deps --wheel-dir "$work/dist" "$sdist"
wheel=$(ls "$work"/dist/zverify-*.whl)
"${pip[@]}" install "$wheel[test]"
mkdir "$work/run"
cp -r tests docs "$work/run/"  # docs: the JSON Schemas and the man page the tests check
mkdir "$work/run/scripts" && cp scripts/manpage.py scripts/completions.py "$work/run/scripts/"
cp pyproject.toml "$work/run/"  # pytest's configuration (markers), not the package
echo "package: $(basename "$sdist") -> $(basename "$wheel"), installed: $("$work/venv/bin/zverify" --version | head -1)"
cd "$work/run"
ZVERIFY_TEST_INSTALLED=1 PATH="$work/venv/bin:$PATH" "$work/venv/bin/python" -m pytest -q \
    -p no:cacheprovider tests/cli
