//! A full disk: the capture fails with one line that says so and what to do,
//! no temporary file is left behind, and the agent exits non-zero instead of
//! panicking. Uses a tiny tmpfs (root needed, as CI has).

mod common;

use std::net::Ipv4Addr;
use std::process::Command;

use common::*;

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_fails_the_capture_clearly_and_cleans_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    let t0 = 1_796_000_000_000_000_000i64;
    write_generated(
        &pcap,
        t0,
        1_000_000,
        20_000,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0x11,
    );
    let small = dir.path().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&small)
        .status()
        .expect("mount runs");
    assert!(ok.success(), "mounting a tmpfs needs root");
    let _m = Mount(small.clone());

    let o = run(tripcap()
        .arg("run")
        .arg("-o")
        .arg(&small)
        .arg("--from-pcap")
        .arg(&pcap)
        .args(["--pre", "30s", "--post", "1s", "--trigger-at", "1796000010"]));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("is full") && stderr.contains("free space there"),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(&small)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}
