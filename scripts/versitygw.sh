#!/usr/bin/env bash
# Build the real S3 server the s3-marked tests run against: versitygw (Apache-2.0) from the
# Go module proxy, once, into ${ZVERIFY_S3_CACHE:-~/.cache/zverify-s3}/VERSION/bin.
# Idempotent: a cached binary that runs is kept. Prints the binary's path on stdout.
# Exit 2, with one line on stderr, when Go is missing or too old, or the build fails.
set -euo pipefail

VERSION=v1.8.0
GO_NEEDED=1.25 # the `go` line of versitygw v1.8.0's go.mod
BIN_DIR="${ZVERIFY_S3_CACHE:-$HOME/.cache/zverify-s3}/$VERSION/bin"
BIN="$BIN_DIR/versitygw"

if "$BIN" --version >/dev/null 2>&1; then
    echo "$BIN"
    exit 0
fi

if ! command -v go >/dev/null; then
    echo "versitygw.sh: no \`go\` on PATH; versitygw $VERSION needs Go >= $GO_NEEDED" >&2
    exit 2
fi
have=$(go env GOVERSION 2>/dev/null || true) # "go1.26.8"
have=${have#go}
if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$GO_NEEDED" "$have" | sort -V | head -n1)" != "$GO_NEEDED" ]; then
    echo "versitygw.sh: go ${have:-of unknown version} is older than $GO_NEEDED, which versitygw $VERSION needs" >&2
    exit 2
fi

# Build into a scratch GOBIN and rename, so that a killed build never leaves a half-written
# binary at $BIN.  GOTOOLCHAIN=local: never download a newer Go behind the user's back.
# GOFLAGS=-p=1: one compile at a time, so the build leaves a core to whatever runs beside it
# (scripts/test.sh builds the ZFS VM at the same time).
mkdir -p "$BIN_DIR"
# One build at a time (CI starts one early in the background, scripts/test.sh another): the
# second waits here and then finds the first one's binary.
exec 9>"$BIN_DIR/.lock"
flock 9
if "$BIN" --version >/dev/null 2>&1; then
    echo "$BIN"
    exit 0
fi
scratch=$(mktemp -d "$BIN_DIR/.build.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
if ! GOBIN="$scratch" GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -p=1" \
    nice -n 10 go install "github.com/versity/versitygw/cmd/versitygw@$VERSION"; then
    echo "versitygw.sh: \`go install github.com/versity/versitygw/cmd/versitygw@$VERSION\` failed" >&2
    exit 2
fi
mv -f "$scratch/versitygw" "$BIN"
echo "$BIN"
