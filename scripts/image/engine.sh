# shellcheck shell=bash
# Sourced by the image scripts: picks the container engine and, for podman on hosts that need it,
# a containers.conf under .tools/ (never /etc). Sets ENGINE; exports CONTAINERS_CONF when written.
#   CONTAINER_ENGINE=docker|podman   force an engine (default: podman if installed, else docker)

engine_setup() {
    local root=$1
    if [[ -n ${CONTAINER_ENGINE:-} ]]; then
        ENGINE=$CONTAINER_ENGINE
    elif command -v podman >/dev/null; then
        ENGINE=podman
    elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        ENGINE=docker
    else
        echo "no container engine: install podman (apt-get install podman buildah) or run a docker daemon" >&2
        return 1
    fi
    [[ $(basename "$ENGINE") == podman && -z ${CONTAINERS_CONF:-} ]] || return 0

    local containers=() engine=()
    # podman raises RLIMIT_NOFILE to 1048576 in every container; a lower hard limit (sandboxed VMs,
    # some CI runners) makes the runtime refuse to start anything.
    if (($(ulimit -Hn) < 1048576)); then
        containers+=('default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]')
    fi
    # crun refuses a hybrid cgroup v1 + v2 hierarchy ("cgroups in hybrid mode not supported"); runc runs.
    if [[ -d /sys/fs/cgroup/unified && $(stat -fc %T /sys/fs/cgroup) != cgroup2fs ]]; then
        if ! command -v runc >/dev/null; then
            echo "hybrid cgroup hierarchy: podman needs runc here (apt-get install runc)" >&2
            return 1
        fi
        engine+=('runtime = "runc"')
    fi
    ((${#containers[@]} + ${#engine[@]})) || return 0
    local conf=$root/.tools/containers.conf
    mkdir -p "$root/.tools"
    {
        echo "# Written by scripts/image/engine.sh for this host; see the comments there."
        echo "[containers]"
        printf '%s\n' "${containers[@]}"
        echo "[engine]"
        printf '%s\n' "${engine[@]}"
    } >"$conf"
    export CONTAINERS_CONF=$conf
}

# The image tag the chart expects: nfcorpus-retrieval:<appVersion of the chart>.
default_image() {
    local version
    version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$1/helm/nfcorpus-retrieval/Chart.yaml")
    echo "nfcorpus-retrieval:$version"
}

# The indexer's image (the Dockerfile's indexer target) of an image name: <repository>-indexer:<tag>,
# the name the chart's indexing Job expects beside the servers' image.
indexer_image() {
    local name=$1 tag=latest
    if [[ ${name##*/} == *:* ]]; then tag=${name##*:}; name=${name%:*}; fi
    echo "$name-indexer:$tag"
}

# A free loopback port, picked by the tests' own rule (harness.processes.free_port: below
# the kernel's ephemeral range, where no outgoing connection takes it before the container binds).
free_port() {
    PYTHONPATH=$1 "$1/.venv/bin/python" -c 'from harness.processes import free_port; print(free_port())'
}
