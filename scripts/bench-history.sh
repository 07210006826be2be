#!/usr/bin/env bash
# Benchmark: the compressed ring (issue 15), side by side with the uncompressed
# ring and with tcpdump, in one run.
#
# 1. History per GiB. Realistic RoCE v2 traffic (`tripcap generate --realistic`:
#    WRITE First/Middle/Last at 4096 MTU with ACKs, some READs, CNPs and NAKs,
#    random payload bytes) with 8 and with 64 queue pairs at 2 Mpps, at snaplen
#    `headers` and 128, compressing and not. 1a: bytes per packet of a 1 GiB
#    ring, from the agent's own `ring at stop` figures, as seconds per GiB.
#    1b: the reach of a window through a small ring, measured directly.
# 2. A window dump from compressed blocks against `tcpdump -r IN -w OUT` on the
#    same packets: the whole file replayed into a ring that holds all of it,
#    reports off, RUNS times each, medians. tripcap's time includes the replay
#    and the compression, not only the dump.
# 3. CPU per packet on a loopback flood: `tcpreplay` sends the 8-QP traffic
#    (snaplen 128 frames) on `lo` at FLOOD_PPS while `tcpdump -i lo -w
#    /dev/null` and `tripcap run -i lo --snaplen headers` (compressing, default
#    config) capture it at the same time. CPU is read from /proc per process
#    and per tripcap thread (clock ticks, so keep the flood a few seconds).
# 4. The reference compressor: `zstd -1` on the same records (the window file of
#    2), CPU per packet against tcpdump's and the ring-compress thread's.
#
#   scripts/bench-history.sh [PACKETS] [RUNS] [FLOOD_PPS]
set -euo pipefail
cd "$(dirname "$0")/.."
PACKETS=${1:-3000000}
RUNS=${2:-3}
FLOOD_PPS=${3:-400000}
RATE=2000000
command -v tcpreplay >/dev/null || { echo "needs tcpreplay (apt-get install tcpreplay)"; exit 2; }
command -v zstd >/dev/null || { echo "needs zstd (apt-get install zstd)"; exit 2; }
cargo build --release -q
BIN=$PWD/target/release/tripcap
W=$(mktemp -d /tmp/tripcap-history.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT
START=1796000000
LAST=$(python3 -c "print(f'{$START + $PACKETS / $RATE + 1:.9f}')")
for q in 8 64; do
  $BIN generate --realistic -o "$W/in-$q.pcap" --flows "$q" --snaplen 128 --rate $RATE --packets "$PACKETS" --start $START
done
echo "input: $PACKETS packets at $RATE/s per file, $(du -h "$W/in-8.pcap" | cut -f1) each (snaplen 128)"

ring_cfg() { # memory block compress
  printf '[ring]\nmemory_limit = "%s"\nblock_size = "%s"\ncompress = %s\n[output]\nreports = false\n' "$1" "$2" "$3"
}
held() { # the window's packets
  python3 -c "import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1] + '/*.json')[0]))['packets'])" "$1"
}

echo
echo "== 1. history per GiB at $RATE packets/s"
echo "-- 1a. a 1 GiB ring (256 KiB blocks): raw bytes/packet measured without compression;"
echo "   packed bytes/packet measured on the ring's own packed blocks (whole file replayed,"
echo "   'ring at stop' log line); the ring's raw blocks at 1 GiB (16 kept new, 16 warm,"
echo "   1 decode buffer, 1 open) taken off the memory for history"
printf '%-8s %-8s %10s %10s %10s %10s %7s\n' QPs snaplen "raw B/pkt" "zst B/pkt" "raw s/GiB" "zst s/GiB" ratio
for q in 8 64; do
  for snap in headers 128; do
    ring_cfg 1GiB 256KiB false > "$W/c0.toml"
    ring_cfg 1GiB 256KiB true > "$W/c1.toml"
    rm -rf "$W/out0" "$W/out1"
    NO_COLOR=1 $BIN run -c "$W/c0.toml" --from-pcap "$W/in-$q.pcap" --snaplen $snap -o "$W/out0" >/dev/null 2>"$W/err0" || { cat "$W/err0"; exit 1; }
    NO_COLOR=1 $BIN run -c "$W/c1.toml" --from-pcap "$W/in-$q.pcap" --snaplen $snap -o "$W/out1" >/dev/null 2>"$W/err1" || { cat "$W/err1"; exit 1; }
    python3 - "$q" "$snap" "$W/err0" "$W/err1" "$RATE" <<'PY'
import re, sys
q, snap, e0, e1, rate = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def stop(path):
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(path).read())
    line = [l for l in text.splitlines() if "ring at stop" in l][-1]
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", line)}
raw, zst = stop(e0), stop(e1)
gib = 1 << 30
raw_bpp = raw["held_bytes"] / raw["packets"]
zst_bpp = zst["packed_bytes"] / zst["packed_packets"]
fixed = 34 * 256 * 1024
raw_s = gib / raw_bpp / rate
zst_s = (gib - fixed) / zst_bpp / rate
print(f"{q:<8} {snap:<8} {raw_bpp:>10.1f} {zst_bpp:>10.2f} {raw_s:>10.2f} {zst_s:>10.2f} {zst_s/raw_s:>6.1f}x")
PY
  done
done

echo "-- 1b. measured: a window reaching back 1 h through a 16 MiB ring (64 KiB blocks): its"
echo "   packets are what the ring held. Small blocks and the raw blocks a small ring keeps"
echo "   in proportion make this lower than 1a."
printf '%-8s %-8s %12s %12s %10s %10s %7s\n' QPs snaplen "raw pkts" "zst pkts" "raw s/GiB" "zst s/GiB" ratio
for q in 8 64; do
  for snap in headers 128; do
    n=()
    for c in false true; do
      ring_cfg 16MiB 64KiB $c > "$W/c.toml"
      rm -rf "$W/out"
      $BIN run -c "$W/c.toml" --from-pcap "$W/in-$q.pcap" --snaplen $snap --trigger-at "$LAST" \
          --pre 1h --post 0s -o "$W/out" >/dev/null 2>"$W/err" || { cat "$W/err"; exit 1; }
      n+=("$(held "$W/out")")
    done
    python3 - "$q" "$snap" "${n[0]}" "${n[1]}" "$RATE" "$PACKETS" <<'PY'
import sys
q, snap, raw, zst, rate, total = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
per_gib = lambda n: n / rate * 1024 / 16
note = "  (the whole file: the ring was not full)" if zst >= total else ""
print(f"{q:<8} {snap:<8} {raw:>12} {zst:>12} {per_gib(raw):>10.2f} {per_gib(zst):>10.2f} {zst/raw:>6.1f}x{note}")
PY
  done
done

echo
echo "== 2. window dump from compressed blocks vs tcpdump -r IN -w OUT (8 QPs, headers, 1 GiB ring)"
echo "   tripcap: the window thread's time (it opens at the last packet, so it only dumps:"
echo "   decode, write, fsync, rename), and the whole run (replay + compress + dump)"
ring_cfg 1GiB 256KiB true > "$W/dump.toml"
t_ours=(); t_whole=(); t_tcpdump=()
for i in $(seq 1 "$RUNS"); do
  rm -rf "$W/out" "$W/tcpdump.pcap"; sync
  s=$(date +%s.%N)
  NO_COLOR=1 RUST_LOG=tripcap::window=debug,info $BIN run -c "$W/dump.toml" --from-pcap "$W/in-8.pcap" --snaplen headers \
      --trigger-at "$LAST" --pre 1h --post 0s -o "$W/out" >/dev/null 2>"$W/err" || { cat "$W/err"; exit 1; }
  e=$(date +%s.%N); t_whole+=("$(python3 -c "print($e-$s)")")
  t_ours+=("$(sed 's/\x1b\[[0-9;]*m//g' "$W/err" | grep 'window thread done' | sed 's/.*seconds=\([0-9.]*\).*/\1/' | tail -1)")
  s=$(date +%s.%N)
  tcpdump -r "$W/in-8.pcap" -w "$W/tcpdump.pcap" 2>/dev/null
  e=$(date +%s.%N); t_tcpdump+=("$(python3 -c "print($e-$s)")")
done
dumped=$(held "$W/out")
python3 - "$PACKETS" "$dumped" "${t_ours[*]}" "${t_tcpdump[*]}" "${t_whole[*]}" <<'PY'
import statistics, sys
packets, dumped = int(sys.argv[1]), int(sys.argv[2])
ours = [float(x) for x in sys.argv[3].split()]
tcpd = [float(x) for x in sys.argv[4].split()]
whole = [float(x) for x in sys.argv[5].split()]
mo, mt, mw = statistics.median(ours), statistics.median(tcpd), statistics.median(whole)
print(f"packets dumped: {dumped} of {packets}")
print(f"tripcap window dump:          median {mo:.3f} s ({dumped/mo/1e6:.2f} Mpps)  runs: {' '.join(f'{x:.3f}' for x in ours)}")
print(f"tripcap replay+compress+dump: median {mw:.3f} s ({packets/mw/1e6:.2f} Mpps)  runs: {' '.join(f'{x:.3f}' for x in whole)}")
print(f"tcpdump -r -w:                median {mt:.3f} s ({packets/mt/1e6:.2f} Mpps)  runs: {' '.join(f'{x:.3f}' for x in tcpd)}")
print(f"rate ratio dump/tcpdump: {(dumped/mo)/(packets/mt):.2f}x   (target >= 1x); whole run/tcpdump: {mt/mw:.2f}x")
PY

echo
echo "== 3. CPU per packet on a loopback flood at $FLOOD_PPS packets/s (tcpreplay, 8 QPs), medians of $RUNS"
echo "   'agent': the default config (compressing, baseline on); 'alone': compress = false and"
echo "   the baseline off, so the capture thread does not share the 2 cores with them"
FLOOD=$W/flood.pcap
$BIN generate --realistic -o "$FLOOD" --flows 8 --snaplen 128 --rate 1000000 --packets 500000 --start $START
flood() { # name extra-config: one flood, tcpdump and tripcap capturing it; appends a JSON line
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf '[output]\nreports = false\ndir = "%s/live"\n[api]\nlisten = "127.0.0.1:%s"\n%b' "$W" "$PORT" "$2" > "$W/live.toml"
  tcpdump -i lo -n -w /dev/null 2>"$W/tcpdump.err" & TD=$!; PIDS+=("$TD")
  $BIN run -c "$W/live.toml" -i lo --snaplen headers 2>"$W/agent.err" & TC=$!; PIDS+=("$TC")
  for _ in $(seq 1 100); do curl -sf "127.0.0.1:$PORT/status" >/dev/null && break; sleep 0.1; done
  ticks() { for t in /proc/$TC/task/*; do printf '%s\t%s\n' "$(cat "$t/comm")" "$(awk '{print $14+$15}' "$t/stat")"; done; \
            printf 'tcpdump\t%s\n' "$(awk '{print $14+$15}' /proc/$TD/stat)"; }
  ticks > "$W/t1"
  tcpreplay -q -i lo --pps "$FLOOD_PPS" --loop 8 "$FLOOD" >/dev/null 2>&1
  sleep 1
  ticks > "$W/t2"
  curl -sf "127.0.0.1:$PORT/status" > "$W/status.json"
  kill -INT "$TD" "$TC"; wait "$TD" || true; wait "$TC" || true
  python3 - "$1" "$W/t1" "$W/t2" "$W/status.json" "$W/tcpdump.err" "$(getconf CLK_TCK)" >> "$W/floods.jsonl" <<'PY'
import collections, json, re, sys
def read(p):
    d = collections.Counter()
    for line in open(p):
        name, t = line.rstrip("\n").split("\t")
        d[name] += int(t)
    return d
name, a, b = sys.argv[1], read(sys.argv[2]), read(sys.argv[3])
st = json.load(open(sys.argv[4]))
err = open(sys.argv[5]).read()
hz = int(sys.argv[6])
ours = st["interfaces"][0]
td_packets = int(re.search(r"(\d+) packets captured", err).group(1))
td_drops = int(re.search(r"(\d+) packets dropped by kernel", err).group(1))
d = {k: b[k] - a[k] for k in b}
ns = lambda ticks, n: ticks / hz * 1e9 / max(n, 1)
print(json.dumps({
    "run": name,
    "tcpdump_ns": ns(d["tcpdump"], td_packets), "tcpdump_drops": td_drops, "tcpdump_packets": td_packets,
    "packets": ours["packets"], "drops": ours["kernel_drops"],
    "threads": {k: ns(v, ours["packets"]) for k, v in d.items() if k != "tcpdump" and v > 0},
    "agent_ns": ns(sum(v for k, v in d.items() if k != "tcpdump"), ours["packets"]),
    "ring": st["ring"],
}))
PY
}
for i in $(seq 1 "$RUNS"); do
  flood agent ""
  flood alone "[ring]\ncompress = false\n[baseline]\nenabled = false\n"
done
python3 - "$W/floods.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for name in ["agent", "alone"]:
    rs = [r for r in runs if r["run"] == name]
    med = lambda f: statistics.median(f(r) for r in rs)
    td = med(lambda r: r["tcpdump_ns"])
    cap = med(lambda r: r["threads"].get("capture-lo", 0))
    print(f"{name}: tcpdump {td:.0f} ns/packet ({sum(r['tcpdump_drops'] for r in rs)} kernel drops in all runs); "
          f"tripcap {sum(r['drops'] for r in rs)} kernel drops in all runs")
    for t in sorted({t for r in rs for t in r["threads"]}):
        print(f"  thread {t:<16} {med(lambda r: r['threads'].get(t, 0)):6.0f} ns/packet")
    print(f"  capture thread / tcpdump: {statistics.median(r['threads'].get('capture-lo', 0) / r['tcpdump_ns'] for r in rs):.2f}x   (target <= 1x)")
    print(f"  whole agent / tcpdump:    {statistics.median(r['agent_ns'] / r['tcpdump_ns'] for r in rs):.2f}x   (target <= 2x)")
r = [r for r in runs if r["run"] == "agent"][-1]["ring"]
print(f"ring (agent, last run): {r['packets']} packets, {r['bytes_per_packet']:.1f} B/packet, compression {r['compression_ratio'] or 0:.1f}x, history {r['history_seconds']:.1f} s")
PY

echo
echo "== 4. the reference compressor on the same records: zstd -1 (one thread) over the window"
echo "   file of section 2 (the ring's own records, snaplen headers), CPU per packet, medians of $RUNS;"
echo "   set against the flood's tcpdump (section 3) and tripcap's ring-compress thread"
python3 - "$(ls "$W"/out/*.pcapng | head -1)" "$dumped" "$RUNS" "$W/floods.jsonl" <<'PY'
import json, os, resource, statistics, subprocess, sys
path, packets, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
floods = [json.loads(l) for l in open(sys.argv[4])]
cpu, out = [], 0
for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    z = subprocess.run(["zstd", "-1", "-T1", "-q", "-c", path], stdout=subprocess.PIPE, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    out = len(z)
zns = statistics.median(cpu) * 1e9 / packets
agent = [r for r in floods if r["run"] == "agent"]
td = statistics.median(r["tcpdump_ns"] for r in agent)
rc = statistics.median(r["threads"].get("ring-compress", 0) for r in agent)
size = os.path.getsize(path)
print(f"zstd -1: {zns:.0f} ns CPU/packet ({' '.join(f'{c:.3f}' for c in cpu)} s for {packets} packets), "
      f"{size / out:.1f}x smaller ({out / packets:.1f} B/packet)")
print(f"  vs tcpdump's capture ({td:.0f} ns/packet): {zns / td:.2f}x; tripcap's ring-compress thread "
      f"{rc:.0f} ns/packet ({rc / td:.2f}x tcpdump); zstd -1 / ring-compress: {zns / max(rc, 1):.2f}x")
PY
