#!/usr/bin/env bash
# The image as AgentBeats participants receive it (make test-image; part of make test):
#   1. build it (layers cached: a rebuild after an edit of the servers reuses the index); its
#      size on disk and compressed (`save | gzip -c | wc -c`, what a runner pulls) within
#      MAX_IMAGE_MB and MAX_IMAGE_GZ_MB; and its runtime holds what the servers load, nothing
#      else: devtools/runtime_check.py, run inside it against runtime-packages.txt
#   2. run the whole agent from its default entrypoint with the AgentBeats flags
#      (--host 0.0.0.0 --port 9009, the port published), hardened as the chart runs pods (uid
#      10001, read-only root, /tmp only, no capabilities), and time it to ready
#   3. the conformance suite against it (tests/conformance --agent-url)
#   4. all 323 test queries through a real A2A 0.3 client at top_k 100: no failure, NDCG@5 at
#      least MIN_NDCG5 (make test-image sets it: Makefile)
#   The test queries and judgements of steps 3 and 4 are the files the image carries
#   (/data/nfcorpus, copied out of it): nothing here reads ../shared, so a runner with no data
#   set checks the image it built (.github/workflows/image.yml runs make test-image).
#   5. the same rankings computed in-process by the image's own code, index and model
#      (devtools/eval/rankings.py run inside a container of the image) have the same digest,
#      and it is the digest EXPECT_DIGEST names (make test-image: docs/figures.json's, which
#      make rankings records; empty: not compared, for a machine whose CPU encodes otherwise)
#   6. compose.yaml (the AgentBeats scenario: green agent and whole agent, on a compose network)
#      comes up with podman-compose and runs an assessment of 20 queries to a result
# Figures go to reports/image.json, the headline ones to docs/figures.json (devtools/figures.py).
#   IMAGE=...          image to test (default nfcorpus-retrieval:<appVersion>)
#   SKIP_BUILD=1       test the image as it is
#   MIN_NDCG5=x        the quality floor of step 4 (required)
#   MAX_IMAGE_MB=n     the size budget on disk, MB (required)
#   MAX_IMAGE_GZ_MB=n  the size budget compressed, MB (required)
#   EXPECT_DIGEST=...  the rankings digest the image must serve ("recorded": docs/figures.json's
#                      rankings.sha256; empty: not compared)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/image/engine.sh
source "$root/scripts/image/engine.sh"
engine_setup "$root"

image=${IMAGE:-$(default_image "$root")}
min_ndcg5=${MIN_NDCG5:?the quality floor: make test-image sets it (Makefile)}
max_mb=${MAX_IMAGE_MB:?the size budget on disk: make test-image sets it (Makefile)}
max_gz_mb=${MAX_IMAGE_GZ_MB:?the compressed size budget: make test-image sets it (Makefile)}
expect_digest=${EXPECT_DIGEST:-}
python=$root/.venv/bin/python
reports=$root/reports
work=$(mktemp -d)
name=nfc-image-$$
export PYTHONPATH=$root

cleanup() {
    local status=$?
    if ((status)); then
        echo "--- log of $name" >&2
        "$ENGINE" logs "$name" 2>&1 | tail -60 >&2 || true  # a log for the reader; the status kept above is what exits
    fi
    "$ENGINE" rm --force "$name" >/dev/null 2>&1 || true  # clean-up of what may never have started; exits with $status
    [[ -n ${compose_up:-} ]] && compose down >/dev/null 2>&1
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    bash "$root/scripts/image/base-image.sh"
    IMAGE=$image bash "$root/scripts/image/build-image.sh"
fi
size=$("$ENGINE" image inspect "$image" --format '{{.Size}}')
# What a runner pulls: the image's layers as the engine exports them, compressed.
compressed=$("$ENGINE" save "$image" 2>/dev/null | gzip -c | wc -c)
echo "== 1. $image: $((size / 1000000)) MB on disk, $((compressed / 1000000)) MB compressed"
(( size <= max_mb * 1000000 )) ||
    { echo "FAIL: $((size / 1000000)) MB on disk, over the budget of $max_mb MB" >&2; exit 1; }
(( compressed <= max_gz_mb * 1000000 )) ||
    { echo "FAIL: $((compressed / 1000000)) MB compressed, over the budget of $max_gz_mb MB" >&2; exit 1; }

# The image's own copy of the data set: the test queries and judgements the checks below use.
data_id=$("$ENGINE" create "$image")
"$ENGINE" cp "$data_id:/data/nfcorpus" "$work/nfcorpus"
"$ENGINE" rm "$data_id" >/dev/null
export GREEN_DATA_DIR=$work/nfcorpus

contained=(--user 10001:10001 --read-only --tmpfs /tmp --cap-drop ALL
    --security-opt no-new-privileges)
hardened=("${contained[@]}" --network host)

echo "== 1. the runtime: runtime-packages.txt, and every module the servers load"
"$ENGINE" run --rm "${contained[@]}" --network none \
    -v "$root/devtools/runtime_check.py:/opt/runtime_check.py:ro" \
    -v "$root/runtime-packages.txt:/opt/runtime-packages.txt:ro" -e LOG_LEVEL=WARNING \
    --entrypoint python "$image" /opt/runtime_check.py /opt/runtime-packages.txt >"$work/runtime.txt" ||
    { cat "$work/runtime.txt"; exit 1; }
tail -1 "$work/runtime.txt"
packages=$(sed -n 's/^ *"packages": \([0-9]*\),$/\1/p' "$work/runtime.txt")
port=$(free_port "$root")
url="http://127.0.0.1:$port/"

# Exactly what a participant runs: the image's entrypoint, --host 0.0.0.0 --port 9009, the
# container's port published (on the engine's bridge network, as compose and AgentBeats do).
echo "== 2. the whole agent: $ENGINE run -p $port:9009 $image --host 0.0.0.0 --port 9009"
started=$(date +%s.%N)
"$ENGINE" run -d --name "$name" "${contained[@]}" -p "127.0.0.1:$port:9009" "$image" \
    --host 0.0.0.0 --port 9009 --card-url "$url" >/dev/null
until curl -fsS -o /dev/null "${url}readyz" 2>/dev/null; do
    [[ $("$ENGINE" container inspect --format '{{.State.Running}}' "$name") == true ]] ||
        { echo "FAIL: the container exited before it was ready" >&2; exit 1; }
    (($(date +%s) - ${started%.*} < 180)) || { echo "FAIL: not ready after 180 s" >&2; exit 1; }
    sleep 0.2
done
ready_s=$("$python" -c "print(round($(date +%s.%N) - $started, 1))")
echo "ready in $ready_s s: $(curl -fsS "${url}readyz")"

echo "== 3. conformance suite"
"$python" -m pytest -q -p no:cacheprovider "$root/tests/conformance" --agent-url "$url"

echo "== 4. 323 test queries, A2A 0.3 client, top_k 100"
"$python" -m services.green_agent eval --agent "$url" --protocol 0.3 --num-queries 323 \
    --top-k 100 --seed 42 --concurrency 4 --out "$work/eval.json" >/dev/null

echo "== 5. the same rankings in-process, inside the image"
"$ENGINE" run --rm "${hardened[@]}" -v "$root/devtools/eval/rankings.py:/opt/rankings.py:ro" \
    --entrypoint python "$image" /opt/rankings.py --out /tmp/rankings.json >"$work/in-process.txt"
cat "$work/in-process.txt"

echo "== 6. compose.yaml: green agent and whole agent on one network, one assessment"
compose() {
    local tool=("$ENGINE" compose)  # docker's own plugin
    if [[ $(basename "$ENGINE") == podman ]]; then tool=("$root/.tools/venv/bin/podman-compose"); fi
    NFCORPUS_IMAGE=$image GREEN_PORT=$green_port AGENT_PORT=$agent_port \
        "${tool[@]}" --project-name "$name" -f "$root/agentbeats/compose.yaml" "$@"
}
green_port=$(free_port "$root")
agent_port=$(free_port "$root")
compose_up=1
compose up -d >/dev/null 2>&1
# The assessment comes from inside the scenario's network, as AgentBeats' client sends it: the
# green agent's card names http://green-agent:9009/, which only that network resolves.
"$ENGINE" run --rm --network "${name}_default" "${contained[@]}" \
    --entrypoint python "$image" -c "$(cat <<'PY'
import json, sys, time, uuid
import httpx
green = "http://green-agent:9009/"
agent = "http://retrieval-agent:9009/"
deadline = time.monotonic() + 180
# As the AgentBeats gateway does, the assessment goes out once both agents answer: compose's
# depends_on condition is not honoured by every engine (podman-compose starts the green agent
# at once), so on a slow or busy machine the whole agent may still be starting.
for url in (agent + "readyz", green + "healthz"):
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"the compose scenario did not come up in 180 s: {url} does not answer")
        time.sleep(1)
request = {"participants": {"retrieval_agent": agent},
           "config": {"num_queries": 20, "top_k": 5, "random_seed": 42}}
message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
           "parts": [{"kind": "text", "text": json.dumps(request)}]}
body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
answer = httpx.post(green, json=body, timeout=300).json()
task = answer.get("result") or {}
data = [p["data"] for a in task.get("artifacts", []) for p in a["parts"] if p["kind"] == "data"]
if len(data) != 1:
    sys.exit(f"FAIL: the assessment gave no result: {json.dumps(answer)[:2000]}")
data = data[0]
print(f"compose: {task['status']['state']}, {data['total_queries']} queries, "
      f"{data['failed']} failed, mean_ndcg_at_k {data['mean_ndcg_at_k']}")
if task["status"]["state"] != "completed" or data["failed"] or data["successful_communications"] != 20:
    sys.exit("FAIL: the compose scenario's assessment did not complete without failures")
PY
)"
compose down >/dev/null 2>&1
compose_up=

"$python" - "$work/eval.json" "$work/in-process.txt" "$min_ndcg5" "$image" "$size" "$ready_s" \
    "$reports/image.json" "$compressed" "$packages" "$expect_digest" <<'PY'
import json, sys
from pathlib import Path
from devtools.eval.rankings import digest  # one definition of the digest
eval_path, in_process, floor, image, size, ready_s, out, compressed, packages, wanted = sys.argv[1:]
if wanted == "recorded":  # what make rankings measured in-process, on this code and data
    from devtools.figures import load
    wanted = load()["rankings"]["sha256"]
report = json.loads(Path(eval_path).read_text())
served = digest({q["query_id"]: q["doc_ids"] or [] for q in report["queries"]})
expected = Path(in_process).read_text().split("sha256 ")[1].split()[0]
figures = {
    "image": image,
    "size_bytes": int(size),
    "compressed_bytes": int(compressed),
    "runtime_packages": int(packages),
    "ready_s": float(ready_s),
    "queries": report["num_queries"],
    "failed": report["failed"],
    "ndcg@5": report["metrics"]["ndcg@5"],
    "ndcg@10": report["metrics"]["ndcg@10"],
    "rankings_sha256_a2a": served,
    "rankings_sha256_in_process": expected,
}
Path(out).parent.mkdir(parents=True, exist_ok=True)
Path(out).write_text(json.dumps(figures, indent=2) + "\n")
print(json.dumps(figures, indent=2))
problems = []
if report["failed"]:
    problems.append(f"{report['failed']} queries failed: {report['failures_by_reason']}")
if report["metrics"]["ndcg@5"] < float(floor):
    problems.append(f"NDCG@5 {report['metrics']['ndcg@5']:.4f} is below {floor}")
if served != expected:
    problems.append(f"served rankings {served[:12]} differ from the image's own {expected[:12]}")
if wanted and served != wanted:
    problems.append(f"served rankings {served[:12]} differ from EXPECT_DIGEST {wanted[:12]}")
if problems:
    sys.exit("test-image: FAILED: " + "; ".join(problems))
print("test-image: OK")
PY
# The headline figures the pages quote (docs/figures.json), from this run.
"$python" -m devtools.figures image "$reports/image.json"
