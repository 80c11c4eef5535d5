"""indexer.parallelism: the encoding as an Indexed Job of slices beside the indexer's Job, which
finishes the build; one Job as before when it is 1, and a render that fails without a claim."""

from __future__ import annotations

import re

import pytest

from tests.k8s.rendering import (
    Doc,
    Rendered,
    RenderError,
    containers,
    env,
    pod_spec,
    render,
)

PARALLEL = "ci/parallel-indexer-values.yaml"
SLICES = 4
INDEX = "services.retrieval.indexing.index"


def _jobs(r: Rendered) -> tuple[Doc, Doc]:
    (slices,) = r.component("Job", "indexer-slices")
    (finish,) = r.component("Job", "indexer")
    return slices, finish


def test_the_slices_are_an_indexed_job_of_one_pod_per_slice() -> None:
    slices, _ = _jobs(render(PARALLEL))
    spec = slices["spec"]
    assert slices["metadata"]["name"] == "nfcorpus-retrieval-indexer-slices-r1"
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == SLICES
    # Retried per slice (the chart's Kubernetes, 1.29 on, has backoffLimitPerIndex on by
    # default), and the same bound over the whole Job where the API server drops the field.
    assert spec["backoffLimitPerIndex"] == 3 and spec["backoffLimit"] == SLICES * 3
    assert "maxFailedIndexes" not in spec  # the other slices' vectors are kept for the next run
    pod = pod_spec(slices)
    assert pod["restartPolicy"] == "Never"  # what backoffLimitPerIndex needs
    assert "initContainers" not in pod  # no Qdrant to wait for
    (c,) = containers(slices)
    assert c["command"] == ["python", "-m", INDEX] and "args" not in c
    e = env(c)
    # The slice is the pod's completion index, which Kubernetes sets: the chart does not.
    assert e["RETRIEVAL_INDEX_SLICES"] == str(SLICES) and "JOB_COMPLETION_INDEX" not in e
    assert e["RETRIEVAL_ENCODE_THREADS"] == e["OMP_NUM_THREADS"] == "1"
    assert e["OPENBLAS_NUM_THREADS"] == "1"
    # A slice never writes the store: it holds no key.
    assert "RETRIEVAL_QDRANT_API_KEY" not in e and "RETRIEVAL_INDEX_WAIT_SECONDS" not in e
    assert c["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"cpu": "1", "memory": "2Gi"},
    }


def test_the_indexer_s_job_finishes_beside_the_slices_waiting_until_their_deadline() -> None:
    slices, finish = _jobs(render(PARALLEL))
    (c,) = containers(finish, init=False)
    assert c["command"] == ["python", "-m", INDEX, "--finish"]
    e = env(c)
    assert e["RETRIEVAL_INDEX_SLICES"] == str(SLICES)
    # The build's deadline (3600 s) less the finishing step's share (900 s): the slices may run
    # that long, and the finishing step, starting a little after them, waits as long.
    assert slices["spec"]["activeDeadlineSeconds"] == 2700
    assert e["RETRIEVAL_INDEX_WAIT_SECONDS"] == "2700"
    assert finish["spec"]["activeDeadlineSeconds"] == 3600
    # It writes the store: it waits for Qdrant and holds the read-write key, as the single Job.
    assert [i["name"] for i in pod_spec(finish)["initContainers"]] == ["wait-for-qdrant"]
    assert e["RETRIEVAL_QDRANT_API_KEY"]["secretKeyRef"]["key"] == "api-key"
    shorter = render(PARALLEL, indexer__activeDeadlineSeconds=7200, indexer__finishSeconds=1200)
    slices, finish = _jobs(shorter)
    (c,) = containers(finish, init=False)
    assert slices["spec"]["activeDeadlineSeconds"] == 6000
    assert env(c)["RETRIEVAL_INDEX_WAIT_SECONDS"] == "6000"


def test_slices_and_finishing_step_read_the_same_corpus_settings_and_vector_cache() -> None:
    r = render(PARALLEL, retrieval__settings__MODE="zero-shot")
    slices, finish = _jobs(r)
    (s,) = containers(slices)
    (f,) = containers(finish, init=False)
    # Everything but the threads, the trace name, the store's key, the collections' layout on
    # Qdrant and the wait (the slices never open the store): the data, the cache, the chunking
    # and every retrieval setting that shapes a chunk's vectors.
    differ = {
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "RETRIEVAL_ENCODE_THREADS",
        "OTEL_SERVICE_NAME",
        "RETRIEVAL_QDRANT_API_KEY",
        "RETRIEVAL_INDEX_WAIT_SECONDS",
    }
    qdrant = {"RETRIEVAL_QUANTIZATION_ALWAYS_RAM"} | {k for k in env(f) if "_QDRANT_" in k}
    layout = qdrant - {"RETRIEVAL_QDRANT_URL", "RETRIEVAL_QDRANT_API_KEY"}
    assert layout and not layout & set(env(s))
    differ |= layout
    same = {k: v for k, v in env(f).items() if k not in differ}
    assert {k: v for k, v in env(s).items() if k not in differ} == same
    assert same["RETRIEVAL_MODE"] == "zero-shot" and same["RETRIEVAL_CACHE_DIR"] == "/data/cache"
    assert s["volumeMounts"] == f["volumeMounts"]
    assert pod_spec(slices)["volumes"] == pod_spec(finish)["volumes"]
    (claim,) = [v for v in pod_spec(slices)["volumes"] if v["name"] == "data"]
    assert claim["persistentVolumeClaim"] == {"claimName": "nfcorpus-data-rwx"}
    assert s["image"] == f["image"] and s["securityContext"] == f["securityContext"]


def test_parallelism_one_renders_the_single_job_alone() -> None:
    r = render(PARALLEL, indexer__parallelism=1)
    assert r.component("Job", "indexer-slices") == []
    assert r.component("NetworkPolicy", "indexer-slices") == []
    (job,) = r.component("Job", "indexer")
    (c,) = containers(job, init=False)
    assert c["command"] == ["python", "-m", INDEX]
    assert not {"RETRIEVAL_INDEX_SLICES", "RETRIEVAL_INDEX_WAIT_SECONDS"} & set(env(c))
    # The default needs no claim: the single Job downloads into its emptyDir.
    assert render("ci/default-values.yaml").component("Job", "indexer-slices") == []


def test_parallelism_without_a_claim_is_refused_naming_the_values() -> None:
    with pytest.raises(RenderError) as refused:
        render("ci/default-values.yaml", indexer__parallelism=SLICES)
    message = str(refused.value)
    assert f"indexer.parallelism={SLICES} needs indexer.data.existingClaim" in message
    assert "an emptyDir is each pod's own" in message and "ReadWriteMany" in message
    # Embedded, there is no indexer, and nothing to share.
    embedded = render("ci/embedded-values.yaml", indexer__parallelism=SLICES)
    assert embedded.component("Job", "indexer-slices") == []


def test_a_finishing_share_that_leaves_the_slices_no_time_is_refused() -> None:
    with pytest.raises(RenderError, match=re.escape("indexer.finishSeconds (3600) leaves")):
        render(PARALLEL, indexer__finishSeconds=3600)
    with pytest.raises(RenderError, match=r"/indexer/parallelism.*minimum"):
        render(PARALLEL, indexer__parallelism=0)


def test_as_hooks_the_slices_run_before_the_finishing_step() -> None:
    slices, finish = _jobs(render(PARALLEL, indexer__hook=True))
    # Helm runs hooks one at a time, each to completion, lightest first: the finishing step
    # must never run first (it would wait for slices that are not started yet).
    weights = [
        int(job["metadata"]["annotations"]["helm.sh/hook-weight"]) for job in (slices, finish)
    ]
    assert weights[0] < weights[1]
    for job in (slices, finish):
        annotations = job["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation"
    assert slices["metadata"]["name"] == "nfcorpus-retrieval-indexer-slices"
    assert finish["metadata"]["name"] == "nfcorpus-retrieval-indexer"
