#!/usr/bin/env bash
# make chart-run: the chart's pods started as rendered, under podman, on the real image
# (deploy/chart_run: Services as proxies on their names, probes as the kubelet runs them, the
# helm test pod, 323 queries through the purple Service, a rolling restart of each Deployment
# under load). Figures go to reports/chart-run.json. Extra arguments go to the runner, e.g.
#   bash scripts/k8s/chart-run.sh --values helm/nfcorpus-retrieval/ci/embedded-values.yaml
#   IMAGE=...   the image under test (default nfcorpus-retrieval:<appVersion>, as make image tags it)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/k8s/engine.sh
source "$root/scripts/k8s/engine.sh"
engine_setup "$root"
if [[ $(basename "$ENGINE") != podman ]]; then
    echo "chart-run needs podman (network aliases, runc); found $ENGINE" >&2
    exit 1
fi
image=${IMAGE:-$(default_image "$root")}
PYTHONPATH=$root exec "$root/.venv/bin/python" -m deploy.chart_run --image "$image" \
    --helm "$root/.tools/bin/helm" "$@"
