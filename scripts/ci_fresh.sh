#!/usr/bin/env bash
# CI as a new machine runs it: a fresh clone of HEAD beside ../shared, a fresh HOME (so no pip,
# model or tool caches) and no .venv or .tools, then `bash .ci/run`. Usage: ci_fresh.sh [RUNS]
# Each run's log is ../ci-fresh-<n>.log; stops at the first failure.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-1}
for i in $(seq 1 "$runs"); do
    dir="$(dirname "$repo")/ci-fresh-$i"
    rm -rf "$dir" "$dir-home"
    git clone --quiet "$repo" "$dir"
    mkdir "$dir-home"
    started=$(date +%s)
    if (cd "$dir" && env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME="$dir-home" LANG=C.UTF-8 bash .ci/run) >"$dir.log" 2>&1; then
        echo "run $i passed in $(($(date +%s) - started)) s: $(tail -1 "$dir.log")"
    else
        echo "run $i FAILED after $(($(date +%s) - started)) s: see $dir.log"
        exit 1
    fi
done
