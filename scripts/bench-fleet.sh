#!/usr/bin/env bash
# Fleet: announcement-to-window-opened latency on loopback (BENCHMARKS.md, "fleet").
#
#   scripts/bench-fleet.sh [SAMPLES]      (default 200)
#
# Starts nats-server -js and one agent capturing on lo with --nats, then plays
# another node of the job (examples/fleet_latency.rs) and prints p50/p90/p99/max.
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLES=${1:-200}
WORK=$(mktemp -d /tmp/tripcap-bench-fleet.XXXXXX)
BIN=${BIN:-target/release/tripcap}
[ -x "$BIN" ] || cargo build --release --bin tripcap >&2
cargo build --release --example fleet_latency >&2
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nats-server -js -a 127.0.0.1 -p "$PORT" -sd "$WORK/store" 2>"$WORK/nats.log" &
NATS=$!
AGENT=""
trap 'kill $AGENT $NATS 2>/dev/null || true; wait 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do grep -q "Server is ready" "$WORK/nats.log" && break; sleep 0.1; done
"$BIN" run -i lo -f "udp port 4791" -o "$WORK/out" --nats "nats://127.0.0.1:$PORT" --job bench \
  --host bench-agent >"$WORK/agent.out" 2>"$WORK/agent.log" &
AGENT=$!
for _ in $(seq 200); do grep -q "following the job's announcements" "$WORK/agent.log" && break; sleep 0.1; done
target/release/examples/fleet_latency "nats://127.0.0.1:$PORT" bench "$SAMPLES"
