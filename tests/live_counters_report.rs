//! Beside every capture: the analysis (`summary.json`, `.svg`) and the RDMA
//! counters of the devices behind the captured interface, read at the trigger
//! and at the window's end (from a fake sysfs tree: this machine has no RDMA
//! NIC). Live on `lo`, root needed.

mod common;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::*;
use tripcap::traffic::{Flow, Generator, ROCE_PORT};

#[test]
fn captures_carry_counter_deltas_and_a_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sys = dir.path().join("sys");
    let hw = sys.join("class/infiniband/mlx5_7/ports/1/hw_counters");
    std::fs::create_dir_all(&hw).expect("mkdir");
    std::fs::create_dir_all(sys.join("class/net/lo/device/infiniband/mlx5_7")).expect("mkdir");
    std::fs::write(hw.join("out_of_sequence"), "100\n").expect("counter");
    std::fs::write(hw.join("np_cnp_sent"), "7\n").expect("counter");
    std::fs::write(hw.join("out_of_buffer"), "0\n").expect("counter");
    let port_counters = sys.join("class/infiniband/mlx5_7/ports/1/counters");
    std::fs::create_dir_all(&port_counters).expect("mkdir");
    std::fs::write(port_counters.join("port_rcv_discards"), "10\n").expect("counter");
    let out = dir.path().join("out");
    let log = dir.path().join("job.log");
    std::fs::write(&log, "").expect("log");
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        format!(
            "[capture]\ninterfaces = [\"lo\"]\nfilter = \"udp port 4791 and host 127.90.0.2\"\n[output]\ndir = \"{}\"\nsysfs_root = \"{}\"\n[logs]\npaths = [\"{}\"]\n[[trigger]]\nname = \"wd\"\npattern = \"Watchdog caught collective operation timeout\"\npre = \"1s\"\npost = \"1s\"\n",
            out.display(),
            sys.display(),
            log.display()
        ),
    )
    .expect("config");
    let (mut agent, agent_log) = spawn_ready(
        tripcap().args(["run", "--config"]).arg(&cfg),
        "capturing",
        Duration::from_secs(20),
    );

    let sock = UdpSocket::bind(SocketAddr::from((Ipv4Addr::new(127, 90, 0, 1), 0))).expect("bind");
    let mut g = Generator::new(vec![Flow::new(0x51, 0x61, 1, 4)], 64);
    let mut buf = Vec::new();
    let start = Instant::now();
    for i in 0..2500u32 {
        let at = Duration::from_millis(u64::from(i));
        if let Some(w) = at.checked_sub(start.elapsed()) {
            std::thread::sleep(w);
        }
        if i == 1000 {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .expect("log");
            writeln!(f, "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8)").expect("write");
        }
        if i == 1500 {
            // During the post-window: the NIC counts 42 out-of-sequence packets.
            std::fs::write(hw.join("out_of_sequence"), "142\n").expect("counter");
            // …and discards 3 + 2 packets no capture can see.
            std::fs::write(hw.join("out_of_buffer"), "3\n").expect("counter");
            std::fs::write(port_counters.join("port_rcv_discards"), "12\n").expect("counter");
        }
        g.next_packet(&mut buf).expect("packet");
        sock.send_to(
            &buf,
            SocketAddr::from((Ipv4Addr::new(127, 90, 0, 2), ROCE_PORT)),
        )
        .expect("send");
    }
    let waited = std::panic::catch_unwind(|| {
        wait_until(Duration::from_secs(20), "the sidecar", || {
            sidecars(&out).len() == 1
        })
    });
    if waited.is_err() {
        let _ = interrupt(&mut agent);
        panic!(
            "no capture; agent log:\n{}",
            agent_log.lock().map(|l| l.clone()).unwrap_or_default()
        );
    }
    assert!(
        interrupt(&mut agent).success(),
        "{}",
        agent_log.lock().map(|l| l.clone()).unwrap_or_default()
    );

    let side_path = &sidecars(&out)[0];
    let side = read_sidecar(side_path);
    let rdma = side
        .rdma_counters
        .as_ref()
        .expect("rdma counters in the sidecar");
    assert_eq!(
        rdma.at_trigger.devices["mlx5_7"]["1"]["out_of_sequence"],
        100
    );
    assert_eq!(rdma.at_end.devices["mlx5_7"]["1"]["out_of_sequence"], 142);
    assert_eq!(rdma.delta.devices["mlx5_7"]["1"]["out_of_sequence"], 42);
    assert_eq!(rdma.delta.devices["mlx5_7"]["1"]["np_cnp_sent"], 0);
    // The NIC's discards make the window incomplete, saying which counter rose.
    assert!(!side.window.complete);
    assert!(
        side.window.shortfall.iter().any(|s| s.starts_with(
            "the NIC discarded 5 packets while the window was open (mlx5_7 port 1 out_of_buffer +3, mlx5_7 port 1 port_rcv_discards +2)"
        )),
        "{:?}",
        side.window.shortfall
    );
    // A netdev capture: libpcap's version and software timestamps, no sniffer note.
    assert!(
        side.interfaces[0]
            .libpcap
            .as_deref()
            .is_some_and(|v| v.starts_with("libpcap version")),
        "{:?}",
        side.interfaces[0]
    );
    assert_eq!(side.interfaces[0].timestamps.as_deref(), Some("software"));
    assert!(side.notes.is_empty(), "{:?}", side.notes);

    let stem = side.file.trim_end_matches(".pcapng");
    for name in [format!("{stem}.summary.json"), format!("{stem}.svg")] {
        let p = out.join(&name);
        let meta = std::fs::metadata(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{name}");
        assert!(
            meta.modified().expect("mtime")
                <= std::fs::metadata(side_path)
                    .expect("sidecar")
                    .modified()
                    .expect("mtime"),
            "{name} is written before the sidecar"
        );
    }
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join(format!("{stem}.summary.json"))).expect("summary"),
    )
    .expect("json");
    let text = summary.to_string();
    assert!(
        text.contains("out_of_sequence"),
        "the summary shows the counter delta: {text:.400}"
    );
    assert!(
        text.contains("the NIC discarded 5 packets"),
        "the summary carries the shortfall: {text:.400}"
    );
    let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).expect("svg");
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.100}"
    );
    // The analysis agrees with tshark on the packet count.
    assert_eq!(
        tshark_rows(&out.join(&side.file)).len() as u64,
        side.packets
    );
}
