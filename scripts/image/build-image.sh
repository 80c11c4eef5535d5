#!/usr/bin/env bash
# Build the project image with podman (or docker): IMAGE=nfcorpus-retrieval:<appVersion> by default,
# and the indexer's image beside it (the Dockerfile's indexer target, for the chart's indexing
# Job against a Qdrant server): nfcorpus-retrieval-indexer:<appVersion>, each tag of IMAGE_TAGS
# likewise (engine.sh, indexer_image). INDEXER=0 builds the servers' image only.
# The NFCorpus index is built into the image from the data set in NFCORPUS_DATA (default
# ../shared/data/nfcorpus); NFCORPUS_DATA= (empty) or a missing folder makes the build download
# the BEIR archive instead and check its md5. Extra engine flags go in BUILD_FLAGS
# (e.g. BUILD_FLAGS="--platform linux/arm64"); IMAGE_TAGS adds tags (whitespace-separated: the
# registry names a workflow publishes). Layers are cached: a rebuild after a source change
# reuses the dependency layers (the index is rebuilt, since the sources that build it changed).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/image/engine.sh
source "$root/scripts/image/engine.sh"
engine_setup "$root"

image=${IMAGE:-$(default_image "$root")}
data=${NFCORPUS_DATA-$root/../shared/data/nfcorpus}
if [[ -z $data || ! -d $data ]]; then
    echo "image: no data set folder (NFCORPUS_DATA=${data:-}): the build downloads the BEIR archive"
    data=$(mktemp -d)
    trap 'rm -rf "$data"' EXIT
fi
version=$(default_image "$root")
# The revision only labels the image: a build from a copy of the files, outside git, says unknown.
revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
tags=(--tag "$image")
for tag in ${IMAGE_TAGS:-}; do tags+=(--tag "$tag"); done
echo "image: building $image with $ENGINE (data set from $data)"
started=$SECONDS
# shellcheck disable=SC2086 # BUILD_FLAGS is a list of flags
"$ENGINE" build ${BUILD_FLAGS:-} "${tags[@]}" --file "$root/Dockerfile" \
    --build-context "nfcorpus=$(cd "$data" && pwd)" \
    --build-arg "VERSION=${version#*:}" --build-arg "REVISION=$revision" "$root"
echo "image: built in $((SECONDS - started)) s"
"$ENGINE" image inspect "$image" --format 'image: {{.Id}} {{.Size}} bytes' 2>/dev/null ||
    "$ENGINE" image inspect "$image" >/dev/null
[[ ${INDEXER:-1} == 1 ]] || exit 0

# The indexer's stages are the first ones of the build above: cached, only its own layers are new.
indexer_tags=(--tag "$(indexer_image "$image")")
for tag in ${IMAGE_TAGS:-}; do indexer_tags+=(--tag "$(indexer_image "$tag")"); done
echo "image: building the indexer's image $(indexer_image "$image")"
# shellcheck disable=SC2086 # BUILD_FLAGS is a list of flags
"$ENGINE" build ${BUILD_FLAGS:-} --target indexer "${indexer_tags[@]}" --file "$root/Dockerfile" \
    --build-context "nfcorpus=$(cd "$data" && pwd)" "$root" >/dev/null
echo "image: indexer built, $((SECONDS - started)) s in all"
