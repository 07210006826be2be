#!/usr/bin/env bash
# Benchmark: `tripcap analyze --json` against `tshark -T fields` of the same BTH fields
# and against `tcpdump -r IN -w /dev/null`, on one generated file, in one run.
#
# Generates a 2,000,000-packet snaplen-96 RoCE v2 pcap (`tripcap generate`: 8 RC queue
# pairs doing RDMA WRITEs with ACKs), then RUNS times each, alternating, times the three
# readers and prints the medians and the ratios. Targets: >= 100x tshark, and no slower
# than tcpdump (ratio tcpdump/tripcap >= 1).
#
#   scripts/bench-analyze.sh [PACKETS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
PACKETS=${1:-2000000}
RUNS=${2:-3}
cargo build --release -q
BIN=target/release/tripcap
W=$(mktemp -d /tmp/tripcap-bench-analyze.XXXXXX)
trap 'rm -rf "$W"' EXIT
$BIN generate -o "$W/in.pcap" --packets "$PACKETS" --snaplen 96 --rate 1000000 --start 1796000000
echo "input: $(du -h "$W/in.pcap" | cut -f1), $PACKETS packets, snaplen 96"
FIELDS=(-e frame.number -e frame.time_epoch -e ip.src -e ip.dst -e infiniband.bth.opcode
        -e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.bth.a -e infiniband.aeth.syndrome)

now() { date +%s.%N; }
t_ours=(); t_tshark=(); t_tcpdump=()
for i in $(seq 1 "$RUNS"); do
  s=$(now); $BIN analyze --json "$W/in.pcap" >"$W/ours.json"; e=$(now)
  t_ours+=("$(python3 -c "print($e-$s)")")
  s=$(now); tshark -r "$W/in.pcap" -T fields "${FIELDS[@]}" >"$W/tshark.tsv" 2>/dev/null; e=$(now)
  t_tshark+=("$(python3 -c "print($e-$s)")")
  s=$(now); tcpdump -r "$W/in.pcap" -w /dev/null 2>/dev/null; e=$(now)
  t_tcpdump+=("$(python3 -c "print($e-$s)")")
  echo "run $i: tripcap ${t_ours[-1]} s, tshark ${t_tshark[-1]} s, tcpdump ${t_tcpdump[-1]} s"
done
rows=$(wc -l <"$W/tshark.tsv")
python3 - "$PACKETS" "$rows" "$W/ours.json" "${t_ours[*]}" "${t_tshark[*]}" "${t_tcpdump[*]}" <<'PY'
import json, statistics, sys
packets, rows = int(sys.argv[1]), int(sys.argv[2])
report = json.load(open(sys.argv[3]))
ours, tsh, tcpd = ([float(x) for x in a.split()] for a in sys.argv[4:7])
mo, ms, mt = statistics.median(ours), statistics.median(tsh), statistics.median(tcpd)
seen = sum(c["packets"] for c in report["connections"])
print(f"RoCE packets analysed: {seen} of {packets}; tshark rows: {rows}")
print(f"tripcap analyze --json: median {mo:.3f} s ({packets/mo/1e6:.2f} Mpps)  runs: {' '.join(f'{x:.3f}' for x in ours)}")
print(f"tshark -T fields:       median {ms:.3f} s ({packets/ms/1e6:.3f} Mpps)  runs: {' '.join(f'{x:.3f}' for x in tsh)}")
print(f"tcpdump -r -w /dev/null: median {mt:.3f} s ({packets/mt/1e6:.2f} Mpps)  runs: {' '.join(f'{x:.3f}' for x in tcpd)}")
print(f"speed-up vs tshark: {ms/mo:.0f}x (target >= 100x)")
print(f"ratio tcpdump/tripcap: {mt/mo:.2f} (target >= 1: no slower than tcpdump)")
PY
