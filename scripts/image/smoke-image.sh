#!/usr/bin/env bash
# Smoke test of the image's separate commands (make smoke-image), as the chart runs them, every
# container hardened the same way: non-root uid, read-only root file system, no capabilities, no
# privilege escalation.
#   1. the indexer's image (the Dockerfile's indexer target, make image builds it) builds a small
#      embedded (qdrant-edge) index from its data set into a volume of its own
#   2. the MCP server runs with its production command (gunicorn) on the baked index; /readyz,
#      POST /search_nfcorpus, /metrics
#   3. the purple agent runs from the image's default entrypoint with the AgentBeats flags
#      (--host --port --card-url) plus --mcp-url: the external server, no local one
#   4. the helm test script sends a real A2A query from inside a container of the image
#   5. the green agent of the image evaluates SMOKE_QUERIES test queries over A2A; the run fails
#      if any query fails or NDCG@5 is below SMOKE_MIN_NDCG5
# Containers share the host network on free ports, so no CNI plugin or DNS set-up is needed.
#   IMAGE=...            image to test (default nfcorpus-retrieval:<appVersion>); the indexer's
#                        is <repository>-indexer:<tag> (INDEXER_IMAGE=... overrides it)
#   SMOKE_MAX_DOCS=N     documents the indexer step indexes (default 500: seconds, not minutes)
#   SMOKE_QUERIES=N      test queries the green agent asks (default 100)
#   SMOKE_MIN_NDCG5=x    the quality floor (default 0.45; the full run of 323 scores 0.52)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/image/engine.sh
source "$root/scripts/image/engine.sh"
engine_setup "$root"

image=${IMAGE:-$(default_image "$root")}
indexer=${INDEXER_IMAGE:-$(indexer_image "$image")}
max_docs=${SMOKE_MAX_DOCS:-500}
queries=${SMOKE_QUERIES:-100}
min_ndcg5=${SMOKE_MIN_NDCG5:-0.45}
out=$(mktemp -d)
chmod 0777 "$out"  # the green agent (uid 10001) writes its report here
run_id=nfc-smoke-$$
store=$run_id-store
mcp_port=$(free_port "$root")
purple_port=$(free_port "$root")
started=$SECONDS

cleanup() {
    local status=$?
    if ((status)); then
        for c in "$run_id-mcp" "$run_id-purple"; do
            echo "--- logs of $c" >&2
            "$ENGINE" logs "$c" 2>&1 | tail -40 >&2 || true  # a log for the reader; the status kept above is what exits
        done
    fi
    "$ENGINE" rm --force "$run_id-mcp" "$run_id-purple" >/dev/null 2>&1 || true  # clean-up of what may never have started; exits with $status
    "$ENGINE" volume rm --force "$store" >/dev/null 2>&1 || true  # clean-up of what may never have started; exits with $status
    rm -rf "$out"
    exit "$status"
}
trap cleanup EXIT

hardened=(--user 10001:10001 --read-only --tmpfs /tmp --cap-drop ALL
    --security-opt no-new-privileges --network host)
"$ENGINE" volume create "$store" >/dev/null

wait_http() {  # url, seconds
    local deadline=$((SECONDS + $2))
    until curl -fsS -o /dev/null "$1" 2>/dev/null; do
        ((SECONDS < deadline)) || { echo "FAIL: $1 not ready after $2 s" >&2; return 1; }
        sleep 1
    done
}

echo "== 1. indexer ($indexer: $max_docs documents, embedded store in a volume)"
"$ENGINE" run --rm "${hardened[@]}" -v "$store:/var/lib/smoke" -e LOG_LEVEL=WARNING \
    -e RETRIEVAL_MAX_DOCS="$max_docs" -e RETRIEVAL_EDGE_PATH=/var/lib/smoke/qdrant-edge \
    -e RETRIEVAL_CACHE_DIR=/tmp/cache "$indexer"

echo "== 2. MCP server (gunicorn) on 127.0.0.1:$mcp_port, the baked index"
"$ENGINE" run -d --name "$run_id-mcp" "${hardened[@]}" -e LOG_LEVEL=WARNING \
    -e MCP_ALLOWED_HOSTS="127.0.0.1:$mcp_port,localhost:$mcp_port" \
    --entrypoint gunicorn "$image" --config /etc/nfcorpus/gunicorn.conf.py \
    --bind "127.0.0.1:$mcp_port" --workers 1 services.mcp_server.asgi:app >/dev/null
wait_http "http://127.0.0.1:$mcp_port/readyz" 120
echo "readyz: $(curl -fsS "http://127.0.0.1:$mcp_port/readyz")"
curl -fsS "http://127.0.0.1:$mcp_port/search_nfcorpus" -H 'Content-Type: application/json' \
    -d '{"query": "vitamin D and breast cancer risk", "top_k": 3}' |
    python3 -c 'import json, sys; r = json.load(sys.stdin); print("POST /search_nfcorpus:", json.dumps(r)[:400])'
# Read the page whole before looking into it: grep -m1 on a pipe closes it at the first match,
# and under pipefail curl's failed write (exit 23) would fail the step.
metrics=$(curl -fsS "http://127.0.0.1:$mcp_port/metrics")
[[ $metrics =~ (^|$'\n')mcp_ ]] || { echo "FAIL: no mcp_* series on /metrics" >&2; exit 1; }
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

echo "== 5. green agent eval over A2A ($queries test queries, NDCG@5 at least $min_ndcg5)"
"$ENGINE" run --rm "${hardened[@]}" -v "$out:/out" -e LOG_LEVEL=WARNING --entrypoint python \
    "$image" -m services.green_agent eval --agent "http://127.0.0.1:$purple_port/" \
    --num-queries "$queries" --top-k 10 --seed 42 --out /out/report.json >/dev/null
python3 - "$out/report.json" "$min_ndcg5" <<'PY'
import json, sys
report, floor = json.load(open(sys.argv[1])), float(sys.argv[2])
ndcg5 = report["metrics"]["ndcg@5"]
print(f"{report['num_queries']} queries, {report['failed']} failed, NDCG@5 {ndcg5:.4f}")
if report["failed"] or ndcg5 < floor:
    sys.exit(f"FAIL: failures or NDCG@5 {ndcg5:.4f} below {floor}")
PY

echo
echo "smoke-image: OK ($image, $((SECONDS - started)) s)"
