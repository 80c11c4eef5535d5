#!/usr/bin/env bash
# HAProxy from Debian: the load balancer of the local cluster (services/common/cluster.py) that
# stands in for Kubernetes Services in `make reliability` and in the test suite.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-tools: haproxy is missing; run as root (apt-get) or install Debian's haproxy" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends haproxy >/dev/null
echo "install-tools: $(/usr/sbin/haproxy -v | head -n 1)"
