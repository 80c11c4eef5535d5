#!/usr/bin/env bash
# Build the project image with podman (or docker): IMAGE=nfcorpus-retrieval:<appVersion> by default.
# Extra engine flags go in BUILD_FLAGS (e.g. BUILD_FLAGS="--platform linux/arm64").
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/k8s/engine.sh
source "$root/scripts/k8s/engine.sh"
engine_setup "$root"

image=${IMAGE:-$(default_image "$root")}
echo "image: building $image with $ENGINE"
# shellcheck disable=SC2086 # BUILD_FLAGS is a list of flags
"$ENGINE" build ${BUILD_FLAGS:-} --tag "$image" --file "$root/Dockerfile" "$root"
"$ENGINE" image inspect "$image" --format 'image: {{.Id}} {{.Size}} bytes' 2>/dev/null ||
    "$ENGINE" image inspect "$image" >/dev/null
