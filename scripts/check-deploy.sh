#!/usr/bin/env bash
# Check the deploy files as far as this machine can: the systemd unit with
# `systemd-analyze verify` (pointed at a built binary; any warning fails, since
# verify itself exits 0 on values it ignores), the Slurm scripts' syntax, and the Kubernetes
# manifest against the container image and the CLI (scripts/deploy-manifest.py).
#
#   scripts/check-deploy.sh [TRIPCAP_BINARY]     (default: target/debug/tripcap)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/debug/tripcap}")
[ -x "$BIN" ] || { echo "check-deploy: no binary at $BIN: build first (cargo build)" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
sed "s#/usr/local/bin/tripcap#$BIN#g" deploy/systemd/tripcap.service > "$W/tripcap.service"
OUT=$(systemd-analyze verify "$W/tripcap.service" 2>&1) || { echo "$OUT"; echo "FAIL: systemd-analyze verify"; exit 1; }
if [ -n "$OUT" ]; then
  echo "$OUT"
  echo "FAIL: systemd-analyze verify warned about deploy/systemd/tripcap.service"
  exit 1
fi
echo "ok: deploy/systemd/tripcap.service verifies"
for s in deploy/slurm/*.sh; do
  bash -n "$s"
  echo "ok: $s parses"
done
# The Kubernetes manifest against the image (Containerfile, build-image.sh) and the CLI.
/usr/bin/python3 scripts/deploy-manifest.py check "$BIN" deploy/kubernetes/*.yaml
