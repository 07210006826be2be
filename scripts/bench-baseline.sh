#!/usr/bin/env bash
# Benchmark: summarising traffic for the baseline (issue 14), against tshark's
# per-second statistics of the same capture.
#
# Generates a PACKETS-packet RoCE v2 capture (snaplen 128), then, RUNS times each,
# alternating:
#   A  tripcap analyze IN --json                 (the report alone)
#   B  tripcap analyze IN --baseline IN --json   (the report, plus IN summarised per
#      second per interface and class as the baseline, plus the window summarised)
#   T  tshark -r IN -q -z io,stat,1,...          (packets, bytes, CNPs and NAKs per second)
# B − A is what summarising costs; it runs the same Summarizer the agent's baseline
# thread runs on the live ring. Prints medians, packets per second summarised, and
# the ratio to tshark.
#
#   scripts/bench-baseline.sh [PACKETS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
PACKETS=${1:-2000000}
RUNS=${2:-5}
BIN=${BIN:-target/release/tripcap}
[ -x "$BIN" ] || cargo build --release -q --bin tripcap
W=$(mktemp -d /tmp/tripcap-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
$BIN generate -o "$W/in.pcap" --packets "$PACKETS" --snaplen 128 --rate 1000000 --start 1796000000
echo "input: $(du -h "$W/in.pcap" | cut -f1), $PACKETS packets, snaplen 128"

now() { date +%s.%N; }
a=(); b=(); t=()
for _ in $(seq 1 "$RUNS"); do
  s=$(now); $BIN analyze "$W/in.pcap" --json > "$W/a.json"; e=$(now)
  a+=("$(python3 -c "print($e-$s)")")
  s=$(now); $BIN analyze "$W/in.pcap" --baseline "$W/in.pcap" --json > "$W/b.json"; e=$(now)
  b+=("$(python3 -c "print($e-$s)")")
  s=$(now)
  tshark -r "$W/in.pcap" -q -z 'io,stat,1,COUNT(frame)frame,SUM(frame.len)frame.len,COUNT(infiniband.bth.opcode)infiniband.bth.opcode==129,COUNT(infiniband.aeth.syndrome)infiniband.aeth.syndrome>=96' > "$W/t.txt"
  e=$(now)
  t+=("$(python3 -c "print($e-$s)")")
done
python3 - "$PACKETS" "$W/b.json" "${a[*]}" "${b[*]}" "${t[*]}" <<'PY'
import json, statistics, sys
packets = int(sys.argv[1])
b = json.load(open(sys.argv[2]))
a_, b_, t_ = ([float(x) for x in s.split()] for s in sys.argv[3:6])
ma, mb, mt = (statistics.median(v) for v in (a_, b_, t_))
cost = max(mb - ma, 1e-9)
print(f"analyze alone: median {ma:.3f} s (runs {', '.join(f'{x:.3f}' for x in a_)})")
print(f"analyze --baseline itself: median {mb:.3f} s (runs {', '.join(f'{x:.3f}' for x in b_)})")
print(f"summarising (B - A): {cost:.3f} s for 2 x {packets} packets: {2 * packets / cost / 1e6:.1f} Mpps")
print(f"tshark -z io,stat,1: median {mt:.3f} s (runs {', '.join(f'{x:.3f}' for x in t_)})")
print(f"ratio: tshark / summarising = {mt / cost:.1f}x; tshark / (analyze --baseline) = {mt / mb:.1f}x")
dev = b.get("baseline", {}).get("deviations", [])
print(f"deviations of the capture against itself: {len(dev)}")
PY
