#!/usr/bin/env bash
# make chart-run: the chart's pods started as rendered, under podman, on the real image
# (harness/chart_run: Services as proxies on their names, probes as the kubelet runs them, the
# helm test pod, 323 queries through the purple Service, a rolling restart of each Deployment
# under load). Figures go to reports/chart-run.json, and for the default scenario the headline
# ones to docs/figures.json (devtools/figures.py). Extra arguments go to the runner, e.g.
#   bash scripts/chart/chart-run.sh --values helm/nfcorpus-retrieval/ci/embedded-values.yaml
#   IMAGE=...   the image under test (default nfcorpus-retrieval:<appVersion>, as make image tags it)
#   MIN_NDCG5=x the quality floor of the 323 queries through the purple Service (required: make
#               chart-run sets it, Makefile)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/image/engine.sh
source "$root/scripts/image/engine.sh"
engine_setup "$root"
if [[ $(basename "$ENGINE") != podman ]]; then
    echo "chart-run needs podman (network aliases, runc); found $ENGINE" >&2
    exit 1
fi
image=${IMAGE:-$(default_image "$root")}
PYTHONPATH=$root "$root/.venv/bin/python" -m harness.chart_run --image "$image" \
    --helm "$root/.tools/bin/helm" --min-ndcg5 "${MIN_NDCG5:?the quality floor: make chart-run sets it}" "$@"
# The run of the default scenario is the one the pages quote (docs/figures.json).
if (($# == 0)); then
    PYTHONPATH=$root "$root/.venv/bin/python" -m devtools.figures chart "$root/reports/chart-run.json"
fi
