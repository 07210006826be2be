//! The small commands, through the binary: `interfaces`, `generate`, `demo`.

mod common;

use common::*;

#[test]
fn interfaces_lists_loopback_and_the_rdma_section() {
    let o = run(tripcap().arg("interfaces"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("lo ")),
        "{text}"
    );
    assert!(
        text.contains("RDMA devices")
            || text.contains("No RDMA devices under /sys/class/infiniband"),
        "{text}"
    );
}

#[test]
fn generate_writes_what_tshark_decodes_as_roce() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("g.pcap");
    let o = run(tripcap()
        .args([
            "generate",
            "--packets",
            "1000",
            "--snaplen",
            "96",
            "--rate",
            "1000",
            "--flows",
            "2",
            "--start",
            "1796000000",
            "-o",
        ])
        .arg(&f));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = tshark_rows(&f);
    assert_eq!(rows.len(), 1000);
    assert_eq!(rows[0].ts, 1_796_000_000_000_000_000);
    assert_eq!(rows[999].ts, 1_796_000_000_999_000_000, "1 ms apart");
    // Per QP, the requests' PSNs advance by one (ACKs repeat the PSN they acknowledge).
    for qp in ["0x000100", "0x000101"] {
        let psns: Vec<u32> = rows.iter().filter(|r| r.qp == qp).map(|r| r.psn).collect();
        assert!(psns.len() > 100, "{qp}: {}", psns.len());
        assert!(psns.windows(2).all(|w| w[1] == w[0] + 1), "{qp}: {psns:?}");
    }
}

#[test]
fn demo_captures_live_and_says_where() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("demo");
    let o = run(tripcap().arg("demo").arg("-o").arg(&out));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("captured live on lo"), "{stdout}");
    // The analysis printed with it finds what the demo traffic was made to show.
    // (At least the 5 PSNs the generator skipped; a loaded machine may drop more on `lo`.)
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("0x0000c1: ") && l.contains(" PSN gaps (packets missing")),
        "{stdout}"
    );
    assert!(
        stdout.contains("0x0000c2: stalled with requests outstanding"),
        "{stdout}"
    );
    // Its longest silence is the one the stall finding names: open to the end of the
    // capture, placed relative to the trigger; no raw epoch seconds anywhere.
    let c2 = stdout
        .lines()
        .find(|l| l.contains("0x0000c2: ") && l.contains(" packets, "))
        .unwrap_or_else(|| panic!("no line for QP c2 in\n{stdout}"));
    let silence_ms: f64 = c2
        .split("longest silence ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no longest silence in {c2}"));
    assert!(silence_ms > 1000.0, "{c2}");
    assert!(c2.contains(" ms from T-"), "{c2}");
    assert!(c2.contains(" to the end of the capture; "), "{c2}");
    let time = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("time: "))
        .unwrap_or_else(|| panic!("no time line in\n{stdout}"));
    assert!(time.contains("Z .. ") && time.contains('T'), "{time}");
    let side = read_sidecar(&sidecars(&out)[0]);
    assert!(stdout.contains(&side.file), "{stdout}");
    assert!(side.window.complete, "{:?}", side.window.shortfall);
    let t = &side.triggers[0];
    assert_eq!(
        t.onset_ns,
        Some(t.at_ns - 1_500_000_000),
        "placed from `ran for 1500 milliseconds`"
    );
    let rows = tshark_rows(&out.join(&side.file));
    assert_eq!(rows.len() as u64, side.packets);
    // QP 0xc2 stalls 2 s into the traffic, 1.5 s before the line: silent to the end.
    let last_c2 = rows
        .iter()
        .filter(|r| r.qp == "0x0000c2")
        .map(|r| r.ts)
        .max()
        .expect("QP c2 before its stall");
    assert!(
        t.at_ns - last_c2 > 1_400_000_000,
        "c2 silent for {} ns before the line",
        t.at_ns - last_c2
    );
}

#[test]
fn check_notes_an_interface_this_machine_lacks() {
    let o = run(tripcap().args(["check", "-i", "lo", "-i", "nosuch0"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("note: interface `nosuch0` is not on this machine"),
        "{text}"
    );
    assert!(!text.contains("interface `lo` is not"), "{text}");
}

#[test]
fn check_notes_a_ring_larger_than_the_memory_available() {
    let o = run(tripcap().args(["check", "-i", "lo", "--memory-limit", "64TiB"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("note: ring.memory_limit (67108864 MiB) and the kernel capture buffers (1 × 64 MiB) need 67108928 MiB, but this machine has "),
        "{text}"
    );
    assert!(
        text.contains("available: lower ring.memory_limit"),
        "{text}"
    );
    let o = run(tripcap().args(["check", "-i", "lo", "--memory-limit", "64MiB"]));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("ring.memory_limit"), "{text}");
}
