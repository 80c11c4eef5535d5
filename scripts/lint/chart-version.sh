#!/usr/bin/env bash
# The chart's version goes up with every change of the chart (chart-testing's check-version-increment),
# checked offline: the chart as it is now (work tree, uncommitted and untracked files included)
# must be what it was in the commit that set its current version in Chart.yaml, unless the work
# tree raises that version itself (a higher one than HEAD's). ct on a pull request compares with
# the target branch instead; on a trunk this is the same rule. A shallow clone cannot be checked
# and says so.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
chart=helm/nfcorpus-retrieval
cd "$root"
version_of() { sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p'; }

# Outside a git checkout (a copy of the files) there is no history to compare with either.
if [[ $(git rev-parse --is-shallow-repository 2>/dev/null || echo true) == true ]]; then
    echo "chart-version: a shallow or missing history, the increment is not checked here"
    exit 0
fi
now=$(version_of <"$chart/Chart.yaml")
committed=$(git show "HEAD:$chart/Chart.yaml" | version_of)
if [[ $now != "$committed" ]]; then
    highest=$(printf '%s\n%s\n' "$now" "$committed" | sort -V | tail -1)
    if [[ $highest != "$now" ]]; then
        echo "chart-version: Chart.yaml goes from $committed down to $now" >&2
        exit 1
    fi
    echo "chart-version: $committed -> $now"
    exit 0
fi
# Along the first parents, a merge compared with its first parent: a merge that sets the
# version (two branches bumped to the same one) counts as the commit that set it.
set_in=$(git log -1 --first-parent -m --format=%H -G '^version:' -- "$chart/Chart.yaml")
mapfile -t changed < <( (git diff --name-only "$set_in" -- "$chart"
    git ls-files --others --exclude-standard -- "$chart") | sort -u)
if ((${#changed[@]})); then
    echo "chart-version: the chart changed since ${set_in:0:12} set version $now; bump version in $chart/Chart.yaml:" >&2
    printf '  %s\n' "${changed[@]}" >&2
    exit 1
fi
echo "chart-version: $now, unchanged since ${set_in:0:12}"
