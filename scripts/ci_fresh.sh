#!/usr/bin/env bash
# CI as a new machine runs it: a fresh clone of HEAD beside ../shared, a fresh HOME (so no pip,
# model or tool caches) and no .venv or .tools, then `bash .ci/run`. Usage: ci_fresh.sh [RUNS]
# The machine's package-registry settings (~/.config/pip) are configuration, not cache: copied.
# Each run's log is ../ci-fresh-<n>.log; stops at the first failure.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-1}
for i in $(seq 1 "$runs"); do
    dir="$(dirname "$repo")/ci-fresh-$i"
    rm -rf "$dir" "$dir-home"
    git clone --quiet "$repo" "$dir"
    mkdir -p "$dir-home/.config"
    if [ -d "$HOME/.config/pip" ]; then cp -r "$HOME/.config/pip" "$dir-home/.config/"; fi
    started=$(date +%s)
    if (cd "$dir" && HOME="$dir-home" env -u XDG_CACHE_HOME bash .ci/run) >"$dir.log" 2>&1; then
        echo "run $i passed in $(($(date +%s) - started)) s: $(tail -1 "$dir.log")"
    else
        echo "run $i FAILED after $(($(date +%s) - started)) s: see $dir.log"
        exit 1
    fi
done
