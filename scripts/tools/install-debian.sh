#!/usr/bin/env bash
# Install a program from Debian's packages unless it is already there:
#   scripts/tools/install-debian.sh <command> <package>
# HAProxy (the local cluster's load balancer, harness/local_cluster.py) and Prometheus's
# promtool (the rule checks of tests/k8s/test_rules.py), Chromium and jq come this way; see the
# Makefile's tools-*.
set -euo pipefail
command="$1"
package="$2"
if command -v "$command" >/dev/null 2>&1 || [ -x "/usr/sbin/$command" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-tools: $command is missing; run as root (apt-get) or install Debian's $package" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$package" >/dev/null
echo "install-tools: $package installed"
