#!/usr/bin/env bash
# Benchmark: capture ring → window dump, against `tcpdump -r IN -w OUT`.
#
# Generates a 2,000,000-packet snaplen-96 RoCE v2 pcap, then in one run, N times
# each, alternating: replays it through tripcap's ring and dumps it whole into a
# pcapng (`tripcap run --from-pcap IN --trigger-at <last packet> --pre 1h`), and
# copies it with tcpdump, and with `cp` (the kernel copying the file: no
# parsing, no framing). Also times the two halves of any read()/write() tool's
# floor on this machine: `cat IN >/dev/null` (reading the input) and `dd` of as
# many zero bytes as tripcap's pcapng into the same directory (writing the output),
# and the same `dd` with `conv=fsync`: writing the output durably, as tripcap does
# before it renames a capture into place.
# Prints median wall times, rates, their ratio, and tripcap's peak RSS against
# the ring's memory limit.
#
#   scripts/bench-ring.sh [PACKETS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
PACKETS=${1:-2000000}
RUNS=${2:-5}
MEM=256MiB          # the ring: must hold the whole file (2M records × (96 + 32) B = 244 MiB)
MEM_BYTES=$((256 * 1024 * 1024))
cargo build --release -q
BIN=target/release/tripcap
W=$(mktemp -d /tmp/tripcap-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
START=1796000000
$BIN generate -o "$W/in.pcap" --packets "$PACKETS" --snaplen 96 --rate 1000000 --start "$START"
# The dump alone: no analysis report beside the capture (that is benchmarked in bench-analyze.sh).
printf '[output]\nreports = false\n' > "$W/bench.toml"
LAST=$(python3 -c "print(f'{$START + ($PACKETS - 1) / 1e6:.9f}')")
echo "input: $(du -h "$W/in.pcap" | cut -f1), $PACKETS packets, snaplen 96"

t_ours=(); t_tcpdump=(); t_cp=(); t_read=(); t_write=(); t_durable=(); rss=()
for i in $(seq 1 "$RUNS"); do
  rm -rf "$W/out"; rm -f "$W/tcpdump.pcap"; sync
  s=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$W/rss" $BIN run --config "$W/bench.toml" --from-pcap "$W/in.pcap" --memory-limit $MEM \
      --trigger-at "$LAST" --pre 1h --post 0s -o "$W/out" >/dev/null 2>"$W/err" || { cat "$W/err"; exit 1; }
  e=$(date +%s.%N); t_ours+=("$(python3 -c "print($e-$s)")"); rss+=("$(cat "$W/rss")")
  s=$(date +%s.%N)
  tcpdump -r "$W/in.pcap" -w "$W/tcpdump.pcap" 2>/dev/null
  e=$(date +%s.%N); t_tcpdump+=("$(python3 -c "print($e-$s)")")
  rm -f "$W/cp.pcap"; sync
  s=$(date +%s.%N)
  cp "$W/in.pcap" "$W/cp.pcap"
  e=$(date +%s.%N); t_cp+=("$(python3 -c "print($e-$s)")")
  s=$(date +%s.%N)
  cat "$W/in.pcap" >/dev/null
  e=$(date +%s.%N); t_read+=("$(python3 -c "print($e-$s)")")
  OUT_MIB=$(( $(stat -c %s "$W"/out/*.pcapng) >> 20 ))
  rm -f "$W/zero"; sync
  s=$(date +%s.%N)
  dd if=/dev/zero of="$W/zero" bs=1M count="$OUT_MIB" status=none
  e=$(date +%s.%N); t_write+=("$(python3 -c "print($e-$s)")")
  rm -f "$W/zero"; sync
  s=$(date +%s.%N)
  dd if=/dev/zero of="$W/zero" bs=1M count="$OUT_MIB" conv=fsync status=none
  e=$(date +%s.%N); t_durable+=("$(python3 -c "print($e-$s)")")
  rm -f "$W/zero"
done
n=$(tshark -r "$W"/out/*.pcapng -T fields -e frame.number 2>/dev/null | wc -l)
python3 - "$PACKETS" "$n" "$MEM_BYTES" "${t_ours[*]}" "${t_tcpdump[*]}" "${rss[*]}" "${t_cp[*]}" "${t_read[*]}" "${t_write[*]}" "$OUT_MIB" "${t_durable[*]}" <<'PY'
import statistics, sys
packets, written, mem = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ours = [float(x) for x in sys.argv[4].split()]
tcpd = [float(x) for x in sys.argv[5].split()]
rss = [int(x) * 1024 for x in sys.argv[6].split()]
cp = [float(x) for x in sys.argv[7].split()]
rd = statistics.median(float(x) for x in sys.argv[8].split())
wr = statistics.median(float(x) for x in sys.argv[9].split())
out_mib = int(sys.argv[10])
durable = statistics.median(float(x) for x in sys.argv[11].split())
mo, mt, mr, mc = statistics.median(ours), statistics.median(tcpd), statistics.median(rss), statistics.median(cp)
print(f"packets in dump (tshark): {written} of {packets}")
print(f"tripcap ring+dump: median {mo:.3f} s  ({packets/mo/1e6:.2f} Mpps)   runs: {' '.join(f'{x:.3f}' for x in ours)}")
print(f"tcpdump -r -w:     median {mt:.3f} s  ({packets/mt/1e6:.2f} Mpps)   runs: {' '.join(f'{x:.3f}' for x in tcpd)}")
print(f"cp IN OUT:         median {mc:.3f} s                 runs: {' '.join(f'{x:.3f}' for x in cp)}")
print(f"rate ratio tripcap/tcpdump: {mt/mo:.2f}x   (target >= 3x)")
print(f"rate ratio cp/tcpdump: {mt/mc:.2f}x")
print(f"floor of a read()+write() tool: cat IN >/dev/null {rd:.3f} s + dd {out_mib} MiB (the pcapng's size) {wr:.3f} s"
      f" = {rd+wr:.3f} s, i.e. at most {mt/(rd+wr):.2f}x tcpdump with no work per packet")
print(f"writing {out_mib} MiB durably (dd conv=fsync): {durable:.3f} s, i.e. at most {mt/durable:.2f}x tcpdump for a tool that syncs its output")
bound = 1.2 * mem + 30 * 2**20
print(f"peak RSS: median {mr/2**20:.0f} MiB; bound 1.2 x ring ({mem/2**20:.0f} MiB) + 30 MiB = {bound/2**20:.0f} MiB; ratio {mr/bound:.2f} (target <= 1)")
PY
