#!/usr/bin/env bash
# Every offline check of the deployment artefacts (make lint-k8s):
#   1. helm lint --strict and helm template for each helm/nfcorpus-retrieval/ci/*-values.yaml
#   2. k8s/base is what the chart renders now (render.sh --check); the kustomize overlays build
#   3. kubernetes-validate --strict, against the oldest and the newest supported Kubernetes, on
#      every rendered scenario, k8s/base and the built overlays
#   4. checkov on all of those and on the Dockerfile (skips justified in scripts/k8s/checkov.yaml)
#   5. hadolint on the Dockerfile, shellcheck on scripts/k8s
#   6. compose.yaml against the compose specification's schema, and the image workflow
#      (.github/workflows): GitHub's workflow schema (check-jsonschema's
#      vendored copy) and zizmor offline (pinned actions, permissions, injection). actionlint
#      would be the usual tool, but its PyPI package fetches its binary from GitHub at install,
#      which offline hosts cannot reach.
# Rendered files are kept under build/k8s/ for inspection.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=${TOOLS_DIR:-$root/.tools}
chart=$root/helm/nfcorpus-retrieval
out=$root/build/k8s
# Oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest schema bundled.
kube_versions=(1.29.0 1.37.0)
for tool in "$tools/bin/helm" "$tools/bin/kubectl" "$tools/venv/bin/kubernetes-validate" \
    "$tools/venv/bin/checkov" "$tools/venv/bin/hadolint" "$tools/venv/bin/shellcheck" \
    "$tools/venv/bin/check-jsonschema" "$tools/venv/bin/zizmor"; do
    [[ -x $tool ]] || { echo "missing $tool: run 'make tools-k8s'" >&2; exit 1; }
done
step() { printf '\n== %s\n' "$*"; }

rm -rf "$out" && mkdir -p "$out/rendered"

step "helm lint --strict + helm template, per scenario"
for values in "$chart"/ci/*-values.yaml; do
    name=$(basename "$values" -values.yaml)
    "$tools/bin/helm" lint --strict --quiet "$chart" --namespace nfcorpus-retrieval --values "$values" |
        grep -v '^\[INFO\]' || true
    "$tools/bin/helm" template nfcorpus-retrieval "$chart" --namespace nfcorpus-retrieval \
        --values "$values" >"$out/rendered/helm-$name.yaml"
    echo "ok  $name"
done

step "k8s/: generated base up to date, overlays build"
HELM=$tools/bin/helm "$root/scripts/k8s/render.sh" --check
cp "$root/k8s/base/nfcorpus-retrieval.yaml" "$out/rendered/k8s-base.yaml"
cp "$root/k8s/base/namespace.yaml" "$out/rendered/k8s-base-namespace.yaml"
for overlay in "$root"/k8s/overlays/*/; do
    name=$(basename "$overlay")
    "$tools/bin/kubectl" kustomize "$overlay" >"$out/rendered/kustomize-$name.yaml"
    echo "ok  overlay $name"
done

step "kubernetes-validate --strict (${kube_versions[*]})"
rendered=("$out"/rendered/*.yaml)
for version in "${kube_versions[@]}"; do
    log=$out/kubernetes-validate-$version.log
    status=0
    "$tools/venv/bin/kubernetes-validate" --strict --quiet -k "$version" "${rendered[@]}" >"$log" 2>&1 ||
        status=$?
    # ServiceMonitor is a CRD with no bundled schema (tests/k8s checks it); any other warning fails.
    unexpected=$(grep -v "Couldn't find schema for kind ServiceMonitor with api version monitoring.coreos.com/v1" "$log" || true)
    if ((status)) || [[ -n $unexpected ]]; then
        cat "$log" >&2
        exit 1
    fi
    echo "ok  ${#rendered[@]} files against Kubernetes $version"
done

step "checkov (kubernetes: rendered scenarios and k8s/; dockerfile)"
"$tools/venv/bin/checkov" --config-file "$root/scripts/k8s/checkov.yaml" --framework kubernetes \
    --directory "$out/rendered"
"$tools/venv/bin/checkov" --config-file "$root/scripts/k8s/checkov.yaml" --framework dockerfile \
    --file "$root/Dockerfile"

step "hadolint, shellcheck"
# Each on a line of its own: a command before && does not stop the script under set -e.
"$tools/venv/bin/hadolint" "$root/Dockerfile"
echo "ok  Dockerfile"
(cd "$root" && "$tools/venv/bin/shellcheck" -x scripts/k8s/*.sh scripts/*.sh)
echo "ok  scripts/k8s/*.sh scripts/*.sh"

step "image workflow and compose scenario: their schemas, zizmor"
"$tools/venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows "$root"/.github/workflows/*.yml
"$tools/venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$root/compose.yaml"
"$tools/venv/bin/zizmor" --offline --no-progress "$root/.github/workflows"
echo
echo "lint-k8s: all checks passed"
