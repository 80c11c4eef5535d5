#!/usr/bin/env bash
# The Python checks (make lint): ruff's rules and its formatter over every Python file of the
# repository (ruff walks the tree and skips only what .gitignore ignores, so no folder escapes by
# its name), then mypy --strict over the files pyproject.toml lists. Each check's exit status
# fails the script; tests/checks feeds each one a broken file and expects this script to fail.
#   VENV=...   the virtual environment whose ruff and mypy run (default .venv)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${VENV:-$root/.venv}/bin
cd "$root"

"$bin/ruff" check .
"$bin/ruff" format --check .
"$bin/mypy"
