#!/usr/bin/env bash
# The Dockerfile's base image (docker.io/library/python:3.11-slim-bookworm): pulled where a
# registry answers, else a local stand-in built with mmdebstrap, for machines that cannot pull.
# The Dockerfile itself stays the one anybody builds anywhere; this only puts an image with that
# name into the local store.
#
# The stand-in is Debian bookworm (minbase) with Debian's python3 (3.11), venv and CA certificates.
# It also trusts the CA certificates this host added locally (/usr/local/share/ca-certificates, e.g.
# a TLS-intercepting proxy) and points pip at the system bundle, so `pip install` in the build
# reaches PyPI the way this host does. Idempotent: an existing image is kept unless FORCE=1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/image/engine.sh
source "$root/scripts/image/engine.sh"
engine_setup "$root"

base=$(sed -n 's/^FROM \([^ ]*\) AS deps$/\1/p' "$root/Dockerfile")
[[ -n $base ]] || { echo "no 'FROM ... AS deps' line in Dockerfile" >&2; exit 1; }

if [[ ${FORCE:-0} != 1 ]] && "$ENGINE" image inspect "$base" >/dev/null 2>&1; then
    echo "base-image: $base already present (FORCE=1 rebuilds)"
    exit 0
fi
# A machine that reaches the registry takes the real image (a GitHub runner, say): the stand-in is
# only for one that cannot. The pull is bounded; its failure is the answer, not an error.
if [[ ${FORCE:-0} != 1 ]] && timeout 300 "$ENGINE" pull --quiet "$base" >/dev/null 2>&1; then
    echo "base-image: pulled $base"
    exit 0
fi
echo "base-image: $base cannot be pulled here: building the local stand-in"
command -v mmdebstrap >/dev/null || { echo "mmdebstrap missing: apt-get install mmdebstrap" >&2; exit 1; }

mirror=${DEBIAN_MIRROR:-http://deb.debian.org}
# The hooks are single-quoted on purpose: mmdebstrap runs them with the new root file system as $1.
# shellcheck disable=SC2016
hooks=(--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*')
shopt -s nullglob
local_cas=(/usr/local/share/ca-certificates/*.crt)
if ((${#local_cas[@]})); then
    echo "base-image: adding ${#local_cas[@]} local CA certificate(s) of this host"
    # shellcheck disable=SC2016
    hooks+=(--customize-hook="copy-in ${local_cas[*]} /usr/local/share/ca-certificates/"
            --customize-hook='chroot "$1" update-ca-certificates --fresh >/dev/null'
            --customize-hook='printf "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n" >"$1"/etc/pip.conf')
fi

echo "base-image: building $base with mmdebstrap (about a minute)"
mmdebstrap --quiet --variant=minbase \
    --include=ca-certificates,netbase,python3,python3-venv,python-is-python3 \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    "${hooks[@]}" \
    bookworm - \
    "deb $mirror/debian bookworm main" \
    "deb $mirror/debian bookworm-updates main" \
    "deb $mirror/debian-security bookworm-security main" |
    "$ENGINE" import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["python3"]' \
        - "$base" >/dev/null
"$ENGINE" run --rm "$base" python3 -c 'import sys, venv, ssl; print("base-image: ok, python", sys.version.split()[0])'
