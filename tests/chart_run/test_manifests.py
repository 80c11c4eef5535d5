"""The runner's reading of the rendered chart: references resolved as the cluster resolves them,
and what it cannot honour refused by name (tests/k8s renders with the project's helm)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from harness.chart_run.engine import Placement, cpus, expand, memory_bytes, run_args
from harness.chart_run.manifests import load_release
from harness.chart_run.spec import FieldRef, ManifestError, Release
from tests.k8s.rendering import NAMESPACE, render

EMBEDDED = "ci/embedded-values.yaml"


def _release(*values: str, **sets: object) -> Release:
    return load_release(yaml.safe_dump_all(render(*values, **sets).docs), NAMESPACE)


def test_the_embedded_scenario_as_the_runner_starts_it() -> None:
    release = _release(EMBEDDED)
    replicas = {d.name.removeprefix("nfcorpus-retrieval-"): d.replicas for d in release.deployments}
    # The MCP server's count comes from its HPA's minReplicas (the Deployment has none).
    assert replicas == {"mcp-server": 2, "purple-agent": 2, "load-collector": 1}
    rollout = {
        d.name.removeprefix("nfcorpus-retrieval-"): (d.max_surge, d.max_unavailable)
        for d in release.deployments
    }
    # 25% of 2, rounded as the controller does; the collector goes before its successor starts.
    assert rollout == {"mcp-server": (1, 0), "purple-agent": (1, 0), "load-collector": (0, 1)}
    assert release.not_run == {
        "NetworkPolicy": 5,
        "PodDisruptionBudget": 2,
        "HorizontalPodAutoscaler": 1,
        "ServiceAccount": 1,
        "Secret": 2,  # the auth tokens and the load collector's
    }
    (purple_service,) = [s for s in release.services if s.name.endswith("purple-agent")]
    assert purple_service.names == (
        "nfcorpus-retrieval-purple-agent",
        "nfcorpus-retrieval-purple-agent.nfcorpus-retrieval",
        "nfcorpus-retrieval-purple-agent.nfcorpus-retrieval.svc",
        "nfcorpus-retrieval-purple-agent.nfcorpus-retrieval.svc.cluster.local",
    )
    assert purple_service.ports == {9009: "http"}


def test_secrets_probes_and_lifecycle_are_resolved() -> None:
    release = _release(EMBEDDED)
    rendered = render(EMBEDDED)
    secret = rendered.get("Secret", "nfcorpus-retrieval-auth")
    (mcp,) = [d.template for d in release.deployments if d.name.endswith("mcp-server")]
    assert mcp.command[0] == "gunicorn" and mcp.args == ()
    (token,) = [v for v in mcp.volumes if v.name == "mcp-token"]
    # Only the projected key, under its item path, read-only: as the kubelet mounts it.
    assert token.files == {"token": base64.b64decode(secret["data"]["mcp-token"])}
    assert token.read_only and token.mount_path == "/var/run/secrets/nfcorpus/mcp-token"
    (tmp,) = [v for v in mcp.volumes if v.name == "tmp"]
    assert (tmp.files, tmp.size_limit, tmp.read_only) == (None, "256Mi", False)
    assert mcp.ports == {"http": 8000, "metrics": 9090}  # the probes stay on http
    assert mcp.startup is not None and mcp.readiness is not None and mcp.liveness is not None
    assert (mcp.startup.path, mcp.startup.port, mcp.startup.period_s) == ("/healthz", 8000, 2.0)
    assert mcp.startup.failure_threshold == 90
    assert (mcp.readiness.path, mcp.readiness.port) == ("/readyz", 8000)
    assert mcp.pre_stop == ("sleep", "5") and mcp.grace_s == 50
    s = mcp.security
    assert (s.uid, s.gid, s.fs_group) == (10001, 10001, 10001)
    assert s.read_only_root and s.no_new_privileges and s.drop_all_capabilities
    (test_pod,) = release.test_pods
    assert dict(test_pod.env)["A2A_TOKEN_FILE"] == "/var/run/secrets/nfcorpus/helm-test-token/token"
    assert test_pod.restart_policy == "Never"


def test_run_args_carry_the_pod_spec() -> None:
    release = _release(EMBEDDED)
    (mcp,) = [d.template for d in release.deployments if d.name.endswith("mcp-server")]
    where = Placement(
        pod="mcp-0",
        namespace=NAMESPACE,
        container="run-mcp-0",
        network="run",
        volume_dirs={v.name: Path(f"/host/{v.name}") for v in mcp.volumes},
        labels={"io.nfcorpus.chart-run": "run"},
    )
    args = run_args(mcp, where)
    text = " ".join(args)
    assert args[0] == "run" and args[-1] == mcp.image  # no args: the command alone runs
    for flag in (
        "--user 10001:10001",
        "--group-add 10001",
        # Only the declared volumes are writable: podman's own tmpfs mounts are off.
        "--read-only --read-only-tmpfs=false",
        "--security-opt no-new-privileges",
        "--cap-drop ALL",
        "--cpus 1",
        f"--memory {2**30}",
        "--hostname mcp-0",
        "--network run",
        "--pull never",
        "--volume /host/tmp:/tmp:rw",
        "--volume /host/mcp-token:/var/run/secrets/nfcorpus/mcp-token:ro",
        "--env RETRIEVAL_STORE=embedded",
    ):
        assert flag in text, flag
    assert json.loads(args[args.index("--entrypoint") + 1]) == list(mcp.command)


def test_quantities_and_field_references() -> None:
    assert [cpus(q) for q in ("1", "500m", "0.25", "2")] == ["1", "0.5", "0.25", "2"]
    assert memory_bytes("1Gi") == 2**30 and memory_bytes("512Mi") == 512 * 2**20
    assert memory_bytes("128M") == 128 * 10**6 and memory_bytes("1000") == 1000
    text = _manifest(
        env=[{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    )
    (deployment,) = load_release(text, "ns").deployments
    assert deployment.template.env == (("POD", FieldRef("metadata.name")),)
    where = Placement("web-1", "ns", "c", "net", {}, {})
    assert "POD=web-1" in run_args(deployment.template, where)


def test_the_load_test_job_as_the_runner_runs_it() -> None:
    (job,) = _release(EMBEDDED).jobs
    assert job.name == "nfcorpus-retrieval-load-generator-r1"
    assert (job.completions, job.parallelism, job.indexed) == (3, 3, True)
    assert (job.backoff_limit, job.active_deadline_s) == (0, 900.0)
    index = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert dict(job.template.env)["WORKER_INDEX"] == FieldRef(index)
    where = Placement(
        pod="gen-2",
        namespace=NAMESPACE,
        container="c",
        network="net",
        volume_dirs={v.name: Path(f"/host/{v.name}") for v in job.template.volumes},
        labels={},
        annotations={"batch.kubernetes.io/job-completion-index": "2"},
    )
    args = run_args(job.template, where)
    # The kubelet expands $(WORKER_INDEX) in the args from the pod's annotation.
    assert args[args.index("--worker") + 1] == "2"
    assert "WORKER_INDEX=2" in args
    assert args[args.index("--run") + 1] == "nfcorpus-retrieval-r1"
    collector = "http://nfcorpus-retrieval-load-collector:8080/reports"
    assert args[args.index("--report-to") + 1] == collector
    # The collector's token, mounted as the kubelet mounts it, for the report's hand-in.
    secret = render(EMBEDDED).get("Secret", "nfcorpus-retrieval-load-collector-token")
    (token,) = [v for v in job.template.volumes if v.name == "load-collector-token"]
    assert token.files == {"token": base64.b64decode(secret["data"]["token"])}
    assert (
        token.read_only
        and f"{token.mount_path}/token" == dict(job.template.env)["GREEN_LOAD_COLLECTOR_TOKEN_FILE"]
    )


def test_references_expand_as_the_kubelet_expands_them() -> None:
    env = {"A": "1", "B": "two"}
    assert expand("--x=$(A)-$(B)", env) == "--x=1-two"
    assert expand("$(MISSING) stays", env) == "$(MISSING) stays"
    assert expand("$$(A) is escaped, $$ is a dollar", env) == "$(A) is escaped, $ is a dollar"


def _job(**spec: object) -> str:
    template = {
        "metadata": {"labels": {"app": "gen"}},
        "spec": {
            "restartPolicy": spec.pop("restartPolicy", "Never"),
            "containers": [
                {"name": "gen", "image": "img:1", "securityContext": {"runAsUser": 10001}}
            ],
        },
    }
    annotations = spec.pop("annotations", {})
    job = {"kind": "Job", "metadata": {"name": "gen", "annotations": annotations}}
    return yaml.safe_dump({**job, "spec": {"template": template, **spec}})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_job(restartPolicy="OnFailure"), "only restartPolicy Never"),
        (_job(completionMode="Whatever"), "completionMode 'Whatever'"),
        (_job(podFailurePolicy={"rules": []}), "podFailurePolicy is not run"),
        (_job(annotations={"helm.sh/hook": "post-install"}), "hook Jobs are not run"),
    ],
)
def test_jobs_the_runner_cannot_honour_are_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_release(text, "ns")


def test_a_plain_job_runs_one_pod_to_completion_by_default() -> None:
    (job,) = load_release(_job(), "ns").jobs
    assert (job.completions, job.parallelism, job.indexed) == (1, 1, False)
    assert (job.backoff_limit, job.active_deadline_s) == (6, None)  # Kubernetes' defaults


def _manifest(env: list[dict[str, object]] | None = None, **container: object) -> str:
    """A minimal Deployment (and a Secret) to try one field at a time."""
    secret = {
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": base64.b64encode(b"v").decode()},
    }
    spec = {
        "name": "web",
        "image": "img:1",
        "securityContext": {"runAsUser": 10001},
        "env": env or [],
        **container,
    }
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [spec]}},
        },
    }
    return yaml.safe_dump_all([secret, deployment])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _manifest(
                env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "nope"}}}]
            ),
            "Secret 's' has no key 'nope'",
        ),
        (
            _manifest(
                env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]
            ),
            "Secret 'other' is not in the render",
        ),
        (
            _manifest(
                env=[{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
            ),
            "is not supported",
        ),
        (_manifest(env=[{"name": "X", "value": "$(Y)-z"}]), "references in env values"),
        (_manifest(readinessProbe={"exec": {"command": ["true"]}}), "only HTTP probes"),
        (
            _manifest(readinessProbe={"httpGet": {"path": "/", "port": "web"}}),
            "probe port 'web' names no container port",
        ),
        (
            _manifest(volumeMounts=[{"name": "data", "mountPath": "/data"}]),
            "volumeMount 'data' names no volume",
        ),
        (
            yaml.safe_dump({"kind": "StatefulSet", "metadata": {"name": "db"}}),
            "kinds the runner cannot start: StatefulSet",
        ),
    ],
)
def test_what_the_runner_cannot_honour_is_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_release(text, "ns")


def test_a_root_container_is_refused() -> None:
    text = _manifest(securityContext={})
    with pytest.raises(ManifestError, match="no non-root runAsUser"):
        load_release(text, "ns")
