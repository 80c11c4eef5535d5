#!/usr/bin/env bash
# Smoke test of the built image (make smoke-image), every container hardened the way the chart runs
# it: non-root uid, read-only root file system, no capabilities, no privilege escalation.
#   1. the indexer builds a small embedded (qdrant-edge) index from the NFCorpus files
#   2. the MCP server runs with its production command (gunicorn); /readyz, POST /search_nfcorpus
#   3. the purple agent runs from the image's default entrypoint with the AgentBeats flags
#      (--host --port --card-url) plus --mcp-url
#   4. the helm test script sends a real A2A query from inside a container of the image
#   5. the green agent evaluates a few test queries over A2A
# Containers share the host network on free ports, so no CNI plugin or DNS set-up is needed.
#   IMAGE=...            image to test (default nfcorpus-retrieval:<appVersion>)
#   SMOKE_DATA=dir       BEIR nfcorpus folder (default ../shared/data/nfcorpus; empty: download)
#   SMOKE_MAX_DOCS=N     documents to index (default 500: seconds instead of minutes)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/k8s/engine.sh
source "$root/scripts/k8s/engine.sh"
engine_setup "$root"

image=${IMAGE:-$(default_image "$root")}
data=${SMOKE_DATA-$root/../shared/data/nfcorpus}
max_docs=${SMOKE_MAX_DOCS:-500}
run_id=nfc-smoke-$$
store=$run_id-store
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mcp_port=$(free_port)
purple_port=$(free_port)
started=$SECONDS

cleanup() {
    local status=$?
    if ((status)); then
        for c in "$run_id-mcp" "$run_id-purple"; do
            echo "--- logs of $c" >&2
            "$ENGINE" logs "$c" 2>&1 | tail -40 >&2 || true
        done
    fi
    "$ENGINE" rm --force "$run_id-mcp" "$run_id-purple" >/dev/null 2>&1 || true
    "$ENGINE" volume rm --force "$store" >/dev/null 2>&1 || true
    exit "$status"
}
trap cleanup EXIT

hardened=(--user 10001:10001 --read-only --tmpfs /tmp --cap-drop ALL
    --security-opt no-new-privileges --network host)
env_retrieval=(-e RETRIEVAL_STORE=edge -e RETRIEVAL_MAX_DOCS="$max_docs" -e LOG_LEVEL=WARNING)
volumes=(-v "$store:/var/lib/nfcorpus")
if [[ -n $data ]]; then
    [[ -d $data ]] || { echo "SMOKE_DATA=$data is not a folder" >&2; exit 1; }
    volumes+=(-v "$(cd "$data" && pwd):/data/nfcorpus:ro")
fi
"$ENGINE" volume create "$store" >/dev/null

wait_http() {  # url, seconds
    local deadline=$((SECONDS + $2))
    until curl -fsS -o /dev/null "$1" 2>/dev/null; do
        ((SECONDS < deadline)) || { echo "FAIL: $1 not ready after $2 s" >&2; return 1; }
        sleep 1
    done
}

echo "== 1. indexer ($max_docs documents, embedded store)"
"$ENGINE" run --rm "${hardened[@]}" "${env_retrieval[@]}" "${volumes[@]}" \
    --entrypoint python "$image" -m services.retrieval.index

echo "== 2. MCP server (gunicorn) on 127.0.0.1:$mcp_port"
"$ENGINE" run -d --name "$run_id-mcp" "${hardened[@]}" "${env_retrieval[@]}" "${volumes[@]}" \
    -e MCP_ALLOWED_HOSTS="127.0.0.1:$mcp_port,localhost:$mcp_port" \
    --entrypoint gunicorn "$image" --config /etc/nfcorpus/gunicorn.conf.py \
    --bind "127.0.0.1:$mcp_port" --workers 1 services.mcp_server.asgi:app >/dev/null
wait_http "http://127.0.0.1:$mcp_port/readyz" 120
echo "readyz: $(curl -fsS "http://127.0.0.1:$mcp_port/readyz")"
curl -fsS "http://127.0.0.1:$mcp_port/search_nfcorpus" -H 'Content-Type: application/json' \
    -d '{"query": "vitamin D and breast cancer risk", "top_k": 3}' |
    python3 -c 'import json, sys; r = json.load(sys.stdin); print("POST /search_nfcorpus:", json.dumps(r)[:400])'
curl -fsS "http://127.0.0.1:$mcp_port/metrics" | grep -m1 '^mcp_' >/dev/null ||
    { echo "FAIL: no mcp_* series on /metrics" >&2; exit 1; }
echo "/metrics: mcp_* series present"

echo "== 3. purple agent (default entrypoint, AgentBeats flags) on 127.0.0.1:$purple_port"
"$ENGINE" run -d --name "$run_id-purple" "${hardened[@]}" "$image" \
    --host 127.0.0.1 --port "$purple_port" --card-url "http://127.0.0.1:$purple_port/" \
    --mcp-url "http://127.0.0.1:$mcp_port/mcp" >/dev/null
wait_http "http://127.0.0.1:$purple_port/readyz" 60
echo "readyz: $(curl -fsS "http://127.0.0.1:$purple_port/readyz")"

echo "== 4. helm test query (files/a2a_query.py) from a container of the image"
"$ENGINE" run --rm "${hardened[@]}" --entrypoint python "$image" \
    -c "$(cat "$root/helm/nfcorpus-retrieval/files/a2a_query.py")" \
    --url "http://127.0.0.1:$purple_port/" --top-k 5 --wait 30

echo "== 5. green agent eval over A2A (5 test queries)"
"$ENGINE" run --rm "${hardened[@]}" "${volumes[@]}" -e LOG_LEVEL=WARNING --entrypoint python "$image" \
    -m services.green_agent eval --agent "http://127.0.0.1:$purple_port/" \
    --num-queries 5 --top-k 5 --seed 42 --out /tmp/report.json

echo
echo "smoke-image: OK ($image, $((SECONDS - started)) s)"
