#!/usr/bin/env bash
# Set up, copy /usr/bin with `rsync -a` (no -H) into a temp dir, and verify the copy:
# zverify names each hardlink group rsync broke and reconciles the du totals.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
src=${1:-/usr/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rsync -a "$src/" "$work/copy/"
echo "\$ rsync -a $src/ $work/copy/ && zverify compare $src $work/copy" >&2
status=0
python3 -m zverify compare "$src" "$work/copy" || status=$?
echo "(exit status $status: 0 identical, 1 differences, 2 could not verify everything)" >&2
for opt in "" "--apparent-size"; do
    echo "\$ du -s -B1 $opt $src $work/copy" >&2
    du -s -B1 $opt "$src" "$work/copy" >&2
done
