#!/usr/bin/env bash
# Prometheus and promtool from Debian: `promtool check rules` / `promtool test rules` over the
# chart's alerting and recording rules (tests/k8s/test_rules.py), and a real Prometheus for the
# dashboard checks.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-tools: promtool is missing; run as root (apt-get) or install Debian's prometheus" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
echo "install-tools: $(promtool --version 2>&1 | head -n 1)"
