#!/usr/bin/env bash
# Install the container engine the image targets need, from Debian, unless it is already there:
# podman with runc (crun refuses this kind of host's hybrid cgroup hierarchy), catatonit (its
# init), netavark and aardvark-dns (its network stack) and iptables, without which netavark
# cannot set up a network and every RUN of a build stops with "netavark: No such file or
# directory"; mmdebstrap makes the base image locally (scripts/image/base-image.sh).
# --no-install-recommends keeps out what a build does not use (fuse-overlayfs, slirp4netns, ...).
set -euo pipefail
packages=(podman runc catatonit netavark aardvark-dns iptables mmdebstrap)
missing=()
for package in "${packages[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) == "install ok installed" ]] ||
        missing+=("$package")
done
((${#missing[@]})) || exit 0
if [[ $(id -u) -ne 0 ]]; then
    echo "install-engine: missing ${missing[*]}; run as root (apt-get) or install them" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-engine: installed ${missing[*]}"
