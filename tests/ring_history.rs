//! The compressed ring on a live flood: a back-dated window reaches ten times
//! further back with the same `memory_limit` than with `compress = false`, and
//! holds exactly what tcpdump saw. A test binary of its own, so no other test
//! competes with the compressor for the CPU while the flood runs.
//! Needs root (or CAP_NET_RAW), as CI has.

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;

/// One live run for [`a_compressing_ring_backdates_ten_times_further_on_a_live_flood`]:
/// the agent on `lo` with a 2 MiB ring (compressing or not) at `snaplen =
/// "headers"`, a paced flood of RoCE v2 WRITEs with ACKs from 8 queue pairs
/// (40k packets/s for `seconds`: more than the ring holds, and little enough
/// for a debug build's compressor to keep up on two busy cores), then a
/// watchdog line whose collective ran for longer than the flood.
/// Returns the packets the window holds, the ring's `/status` just before
/// the line, and the window's records checked against tcpdump's capture of
/// the same flood.
fn live_flood_window(
    dir: &std::path::Path,
    compress: bool,
    seconds: usize,
) -> (usize, serde_json::Value) {
    use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
    use std::process::Command;
    use tripcap::traffic::{Flow, Generator, ROCE_PORT};
    let dst = Ipv4Addr::new(127, 89, u8::from(compress), 2);
    let filter = format!("udp port {ROCE_PORT} and host {dst}");
    let run = dir.join(format!("compress-{compress}"));
    std::fs::create_dir_all(&run).expect("mkdir");
    let (out, log, cfg, oracle) = (
        run.join("out"),
        run.join("job.log"),
        run.join("agent.toml"),
        run.join("oracle.pcap"),
    );
    std::fs::write(&log, "").expect("log");
    std::fs::write(
        &cfg,
        format!(
            "[ring]\nmemory_limit = \"2MiB\"\nblock_size = \"16KiB\"\ncompress = {compress}\n\
             [output]\nreports = false\n[api]\nlisten = \"127.0.0.1:0\"\n\
             [[trigger]]\nname = \"wd\"\nclass = \"nccl_timeout\"\n\
             pattern = \"Watchdog caught collective operation timeout\"\npre = \"1s\"\npost = \"0s\"\n"
        ),
    )
    .expect("config");
    let (mut tcpdump, _) = spawn_ready(
        Command::new("tcpdump")
            .args([
                "-i",
                "lo",
                "-n",
                "-s",
                "0",
                "--time-stamp-precision=nano",
                "-B",
                "65536",
            ])
            .args(["-U", "-w"])
            .arg(&oracle)
            .arg(&filter),
        "listening on",
        Duration::from_secs(20),
    );
    let (mut agent, agent_log) = spawn_ready(
        tripcap()
            .args([
                "run",
                "-i",
                "lo",
                "-f",
                &filter,
                "--snaplen",
                "headers",
                "-c",
            ])
            .arg(&cfg)
            .arg("-o")
            .arg(&out)
            .arg("--log")
            .arg(&log),
        "api listening on",
        Duration::from_secs(20),
    );
    // The ready line is signalled before it is in the buffer: wait for it there.
    let mut text = String::new();
    wait_until(Duration::from_secs(5), "the API address", || {
        text = agent_log.lock().expect("log").clone();
        text.contains("api listening on http://")
    });
    let at = text.find("api listening on http://").expect("api line") + "api listening on ".len();
    let base: String = text[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();

    let sock = UdpSocket::bind(SocketAddr::from((Ipv4Addr::new(127, 89, 0, 1), 0))).expect("bind");
    let to = SocketAddr::from((dst, ROCE_PORT));
    let flows = (0..8)
        .map(|q| Flow::new(0x40 + q, 0x80 + q, 1000 * q, 4))
        .collect();
    let mut g = Generator::new(flows, 1024);
    let mut buf = Vec::new();
    paced(seconds * 1000, Duration::from_millis(1), |_| {
        for _ in 0..40 {
            g.next_packet(&mut buf).expect("packet");
            let _ = sock.send_to(&buf, to);
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let status: serde_json::Value = {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            reqwest::get(format!("{base}/status"))
                .await
                .expect("status")
                .json()
                .await
                .expect("json")
        })
    };
    let line = "[rank0]: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\n";
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .expect("append");
    wait_until(Duration::from_secs(30), "the sidecar", || {
        sidecars(&out).len() == 1
    });
    let log_text = agent_log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(interrupt(&mut agent).success(), "{log_text}");
    interrupt(&mut tcpdump);

    let side = read_sidecar(&sidecars(&out)[0]);
    assert!(!side.window.complete, "600 s back: the ring cannot reach");
    let ours = read_packets(&out.join(&side.file));
    let full = read_packets(&oracle);
    // The window holds the packets tcpdump saw from its covered start on, in
    // order, each cut exactly where its headers end: compressed or not, the
    // same bytes. Either capture may miss a few under the flood (kernel drops
    // of one socket, not of the other), so the two are matched by timestamp.
    let from_oracle: std::collections::HashMap<i64, (u32, Vec<u8>)> = full
        .iter()
        .filter(|p| p.0 >= side.window.covered_start_ns)
        .map(|(ts, orig, _, data)| {
            let keep = tripcap::wire::headers_len(1, data).min(data.len());
            (*ts, (*orig, data[..keep].to_vec()))
        })
        .collect();
    assert!(!ours.is_empty());
    assert!(ours.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    let mut matched = 0;
    for (ts, orig, _, data) in &ours {
        if let Some((o, d)) = from_oracle.get(ts) {
            assert_eq!(
                (orig, data),
                (o, d),
                "compress = {compress}: packet at {ts}"
            );
            matched += 1;
        }
    }
    assert!(
        matched * 100 >= ours.len().max(from_oracle.len()) * 99,
        "compress = {compress}: {matched} of {} packets in the window are in tcpdump's {}",
        ours.len(),
        from_oracle.len()
    );
    (ours.len(), status)
}

#[test]
fn a_compressing_ring_backdates_ten_times_further_on_a_live_flood() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The raw ring holds about 0.6 s of this flood, the compressing one about 8 s.
    let (plain, plain_status) = live_flood_window(dir.path(), false, 2);
    let (packed, status) = live_flood_window(dir.path(), true, 10);
    let ring = &status["ring"];
    println!(
        "held {plain} packets raw, {packed} compressing ({:.1}x); ring: {ring}",
        packed as f64 / plain as f64
    );
    assert_eq!(plain_status["ring"]["compress"], false);
    assert_eq!(ring["compress"], true);
    let ratio = ring["compression_ratio"].as_f64().expect("ratio");
    let per_packet = ring["bytes_per_packet"].as_f64().expect("bytes per packet");
    let raw_per_packet = plain_status["ring"]["bytes_per_packet"]
        .as_f64()
        .expect("raw");
    assert!(ratio > 5.0, "{ring}");
    assert!(
        per_packet * 5.0 < raw_per_packet,
        "{per_packet} vs {raw_per_packet}"
    );
    assert!(
        ring["history_seconds"].as_f64().expect("history") > 0.5,
        "{ring}"
    );
    assert!(packed >= 10 * plain, "{packed} vs {plain}");
}
